/* A C program harvesting inferences from the simulator: `nrt-sim serve --shm
 * PATH` plays the device in another process; this program links the nrt-linux
 * static library (built with the `sim` feature) and harvests through the C ABI.
 * Usage: shm_harvest PATH N. Exits 0 only if every inference returns 0 with
 * NRT_SUCCESS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nrt.h"
#include "nrt_shm.h"

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) { fprintf(stderr, "usage: %s PATH N [TIMEOUT_S|env]\n", argv[0]); return 2; }
    int n = atoi(argv[2]), failures = 0;
    uint32_t timeout_s = 5;
    if (argc == 4) timeout_s = strcmp(argv[3], "env") == 0 ? NRT_TIMEOUT_FROM_ENV : (uint32_t)strtoul(argv[3], NULL, 10);
    nrt_shm *shm = nrt_shm_attach(argv[1], 20000);
    if (!shm) {
        const char *why = nrt_shm_last_error();
        fprintf(stderr, "could not attach to %s: %s\n", argv[1], why ? why : "(no reason recorded)");
        return 1;
    }
    for (int i = 1; i <= n; i++) {
        uint32_t status = 0xFFFF;
        int rc = nrt_shm_harvest(shm, timeout_s, 1, &status);
        printf("inference %d: return %d, status %u %s (%s)\n", i, rc, status, nrt_status_name(status),
               nrt_status_description(status));
        if (rc != 0 || status != 0) failures++;
    }
    nrt_shm_close(shm, 1);
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
