/* A C program doing a runtime's bring-up through the C ABI: open a session on
 * a Neuron device node (the driver, or `nrt-sim driver` playing it), run one
 * inference, print its status as `nrt-sim run` prints its status line, close.
 * Usage: session DEVICE [CORES [RING_ENTRIES [TIMEOUT_S]]] (DEVICE `-`: NULL,
 * the device of NEURON_RT_VISIBLE_CORES's cores; 0: the model's;
 * CORES 0 and TIMEOUT_S `env`: the NEURON_RT_* variables' or the default).
 * Exits 0 when the inference ran (whatever its status), 1 when a call failed
 * (the reason from nrt_session_last_error), 2 for a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nrt.h"

int main(int argc, char **argv) {
    if (argc < 2 || argc > 5) {
        fprintf(stderr, "usage: %s DEVICE [CORES [RING_ENTRIES [TIMEOUT_S]]]\n", argv[0]);
        return 2;
    }
    uint8_t cores = argc > 2 ? (uint8_t)atoi(argv[2]) : 0;
    uint32_t entries = argc > 3 ? (uint32_t)atoi(argv[3]) : 0;
    uint32_t timeout_s = argc > 4 ? (strcmp(argv[4], "env") == 0 ? NRT_TIMEOUT_FROM_ENV : (uint32_t)strtoul(argv[4], NULL, 10)) : 5;
    if (nrt_session_status(NULL) != 2 || nrt_session_run(NULL, NULL) != -1 || nrt_session_close(NULL) != 0
        || nrt_session_cores(NULL) != 0 || nrt_session_timeout_s(NULL) != 0) {
        fprintf(stderr, "the NULL checks failed\n");
        return 1;
    }
    const char *device = strcmp(argv[1], "-") == 0 ? NULL : argv[1];
    nrt_session *s = nrt_session_open(device, cores, entries, timeout_s);
    if (!s) {
        const char *why = nrt_session_last_error();
        fprintf(stderr, "session: %s\n", why ? why : "(no reason recorded)");
        return 1;
    }
    printf("cores: %u, timeout: %u s\n", nrt_session_cores(s), nrt_session_timeout_s(s));
    uint32_t status = 0xFFFF;
    int rc = nrt_session_run(s, &status);
    if (rc < 0) {
        const char *why = nrt_session_last_error();
        fprintf(stderr, "session: %s\n", why ? why : "(no reason recorded)");
        nrt_session_close(s);
        return 1;
    }
    printf("status: %u %s (%s)\n", status, nrt_status_name(status), nrt_status_description(status));
    printf("one-step return: %d\n", rc);
    if (nrt_session_status(s) != status) {
        fprintf(stderr, "nrt_session_status disagrees\n");
        nrt_session_close(s);
        return 1;
    }
    if (nrt_session_close(s) != 0) {
        const char *why = nrt_session_last_error();
        fprintf(stderr, "session: teardown: %s\n", why ? why : "(no reason recorded)");
        return 1;
    }
    return 0;
}
