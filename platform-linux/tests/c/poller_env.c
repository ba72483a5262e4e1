/* The poller's C ABI and the runtime's variables: one lane whose device hangs
 * (every engine STARTs, none ENDs) on a played clock of 1 ms per read, one
 * request submitted with TIMEOUT_S (`env`: NRT_TIMEOUT_FROM_ENV). Prints the
 * status and how far the played clock ran before the request timed out.
 * Usage: poller_env TIMEOUT_S [poll]: with `poll`, the end is looked for with
 * nrt_ticket_poll (every millisecond, at most 120000 times), then looked at
 * again with nrt_ticket_poll and nrt_ticket_wait. Exits 0 when the request ended, 3 when
 * nrt_poller_new refused (its last error printed), 1 on another failure. */
#define _POSIX_C_SOURCE 199309L /* nanosleep under -std=c11 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "nrt.h"
#include "nrt_poller.h"

/* The sentinel is unsigned in C (a u32's all-ones), so it wraps to 0. */
_Static_assert(NRT_TIMEOUT_FROM_ENV + 1 == 0, "NRT_TIMEOUT_FROM_ENV is an unsigned 32-bit all-ones");

#define RING 1024u
#include "fake_rings.h"
static const uint8_t INFER[5] = {4, 5, 6, 7, 8};

int main(int argc, char **argv) {
    if (argc != 2 && !(argc == 3 && strcmp(argv[2], "poll") == 0)) {
        fprintf(stderr, "usage: %s TIMEOUT_S|env [poll]\n", argv[0]);
        return 2;
    }
    uint32_t timeout_s = strcmp(argv[1], "env") == 0 ? NRT_TIMEOUT_FROM_ENV : (uint32_t)strtoul(argv[1], NULL, 10);
    static struct fake_dev d = { .tick_ns = 1000000 };
    nrt_platform p = fake_dev_platform(&d);
    nrt_rings *ri = nrt_rings_new();
    if (nrt_rings_bind(ri, 0, 2, RING)) return 1;
    for (int e = 0; e < 5; e++) { if (nrt_rings_bind(ri, 0, INFER[e], RING)) return 1; fake_dev_push(&d, INFER[e], 2, 100 + e); }
    const nrt_rings *r[1] = { ri };
    nrt_poller *pl = nrt_poller_new(&p, r, 1, -1);
    if (!pl) {
        const char *why = nrt_poller_last_error();
        printf("refused: %s\n", why ? why : "(no last error)");
        nrt_rings_free(ri);
        return 3;
    }
    nrt_ticket *t = nrt_poller_submit(pl, 0, 2, 1, timeout_s);
    if (!t) { printf("submit: %s\n", nrt_poller_last_error()); return 1; }
    uint32_t st = 0;
    int rc;
    if (argc == 3) {
        const struct timespec ms = {0, 1000000};
        int i = 0;
        while ((rc = nrt_ticket_poll(t, &st)) == 1 && i++ < 120000) nanosleep(&ms, NULL);
        if (rc == 1) { printf("still in flight after 120000 polls\n"); return 1; }
        uint32_t again = 0;
        if (nrt_ticket_poll(t, &again) != rc || again != st) { printf("a second poll differs\n"); return 1; }
        if (nrt_ticket_wait(t, &again) != rc || again != st) { printf("the wait after the poll differs\n"); return 1; }
    } else {
        rc = nrt_ticket_wait(t, &st);
    }
    nrt_ticket_free(t);
    nrt_poller_free(pl);
    printf("status: %u %s, rc %d, played clock at the end: %llu ms\n", st, nrt_status_name(st), rc,
           (unsigned long long)(d.now / 1000000));
    nrt_rings_free(ri);
    return 0;
}
