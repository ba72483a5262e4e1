/* nrt_request_new and the runtime's variables: one request of one sunda core
 * with TIMEOUT_S (`env`: NRT_TIMEOUT_FROM_ENV). Exits 0 when it was made, 3
 * when nrt_request_new refused (its reason printed), 2 on a usage error.
 * With `wait`, the request is then harvested by nrt_wait on a device that
 * hangs (every engine STARTs, none ENDs) on a played clock of 1 ms per read,
 * and its status printed.
 * Usage: request_env TIMEOUT_S|env [wait] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nrt.h"

#define RING 1024u
#include "fake_rings.h"
static const uint8_t INFER[5] = {4, 5, 6, 7, 8};

int main(int argc, char **argv) {
    if (argc != 2 && !(argc == 3 && strcmp(argv[2], "wait") == 0)) {
        fprintf(stderr, "usage: %s TIMEOUT_S|env [wait]\n", argv[0]);
        return 2;
    }
    uint32_t timeout_s = strcmp(argv[1], "env") == 0 ? NRT_TIMEOUT_FROM_ENV : (uint32_t)strtoul(argv[1], NULL, 10);
    nrt_request *q = nrt_request_new(2, 1, timeout_s);
    if (!q) {
        const char *why = nrt_session_last_error();
        printf("refused: %s\n", why ? why : "(no last error)");
        return 3;
    }
    printf("made\n");
    if (argc == 3) {
        static struct fake_dev d = { .tick_ns = 1000000 };
        nrt_platform p = fake_dev_platform(&d);
        nrt_rings *r = nrt_rings_new();
        if (nrt_rings_bind(r, 0, 2, RING)) return 1;
        for (int e = 0; e < 5; e++) {
            if (nrt_rings_bind(r, 0, INFER[e], RING)) return 1;
            fake_dev_push(&d, INFER[e], 2, 100 + e);
        }
        uint64_t steps = 0;
        uint32_t st = nrt_wait(q, &p, r, 1, &steps);
        printf("status: %u %s\n", st, nrt_status_name(st));
        nrt_rings_free(r);
    }
    nrt_request_free(q);
    return 0;
}
