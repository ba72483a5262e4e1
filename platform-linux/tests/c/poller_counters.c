/* A C runtime's own lanes counted where its session's inferences are: under
 * `nrt-sim driver`, a session on the device's core 0 (which acquires the
 * process's datastore) and two lanes played here whose rings count into the
 * session's (nrt_rings_count_into); one request harvested by a poller thread,
 * one by nrt_wait (a NaN). `nrtctl stats` (argv[1]), a second process, reads
 * this process's datastore as a monitor does: into argv[2] while the session
 * is open, into argv[3] after the session closed (the rings still hold the
 * datastore), and into argv[4] after the rings are freed too (the datastore
 * released: the monitor is refused). Exits 0 only if every call did what it
 * says. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nrt.h"
#include "nrt_poller.h"

#define RING 1024u
#include "fake_rings.h"
#define NQ_ERROR 2
static const uint8_t INFER[5] = {4, 5, 6, 7, 8};

static int failures;
static void check(const char *what, int ok) {
    printf("%-58s %s\n", what, ok ? "ok" : "FAILED");
    if (!ok) failures++;
}

/* Core 0's error ring and five INFER_STATUS rings, each engine's START and
 * END written, on a clock of 1 us per read. */
static nrt_rings *played(struct fake_dev *d, nrt_platform *p) {
    d->tick_ns = 1000;
    *p = fake_dev_platform(d);
    nrt_rings *r = nrt_rings_new();
    if (nrt_rings_bind(r, 0, NQ_ERROR, RING)) failures++;
    for (int e = 0; e < 5; e++) {
        if (nrt_rings_bind(r, 0, INFER[e], RING)) failures++;
        fake_dev_push(d, INFER[e], 2, 100000 + 1000 * (uint64_t)e);
        fake_dev_push(d, INFER[e], 3, 300000 + 1000 * (uint64_t)e);
    }
    return r;
}

static int stats(const char *nrtctl, const char *out) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' stats --device /dev/neuron0 --pid %d --json >'%s' 2>&1", nrtctl, (int)getpid(), out);
    return system(cmd);
}

int main(int argc, char **argv) {
    if (argc != 5) { printf("usage: %s NRTCTL OPEN.json CLOSED.json FREED.txt\n", argv[0]); return 2; }
    nrt_session *s = nrt_session_open("/dev/neuron0", 1, 0, 5);
    if (!s) { printf("nrt_session_open: %s\n", nrt_session_last_error()); return 1; }
    static struct fake_dev polled, waited;
    nrt_platform pp, pw;
    nrt_rings *rp = played(&polled, &pp), *rw = played(&waited, &pw);
    fake_dev_push(&waited, NQ_ERROR, 1, 150000); /* a NUMERICAL error record */

    check("nrt_rings_count_into(rings, NULL) refused", nrt_rings_count_into(rp, NULL) == -1);
    const char *why = nrt_session_last_error();
    printf("  %s\n", why ? why : "(no reason)");
    check("  ... naming the call", why && strstr(why, "nrt_rings_count_into") != NULL);
    check("nrt_rings_count_into both rings", nrt_rings_count_into(rp, s) == 0 && nrt_rings_count_into(rw, s) == 0);

    const nrt_rings *lanes[1] = { rp };
    nrt_poller *pl = nrt_poller_new(&pp, lanes, 1, -1);
    if (!pl) { printf("nrt_poller_new: %s\n", nrt_poller_last_error()); return 1; }
    nrt_ticket *t = nrt_poller_submit(pl, 0, 2, 1, 5);
    uint32_t st = 99;
    int rc = t ? nrt_ticket_wait(t, &st) : -1;
    printf("poller: rc %d status %u %s\n", rc, st, nrt_status_name(st));
    check("the poller's request: 0 NRT_SUCCESS", rc == 0 && st == 0);
    nrt_ticket_free(t);
    nrt_poller_free(pl);

    nrt_request *q = nrt_request_new(2, 1, 5);
    uint64_t steps = 0;
    uint32_t sw = nrt_wait(q, &pw, rw, 1, &steps);
    printf("nrt_wait: status %u %s after %llu steps\n", sw, nrt_status_name(sw), (unsigned long long)steps);
    check("nrt_wait's request: 1003 (the NaN)", sw == 1003);
    nrt_request_free(q);

    check("nrtctl stats with the session open", stats(argv[1], argv[2]) == 0);
    check("nrt_session_close", nrt_session_close(s) == 0);
    check("nrtctl stats after the close (the rings hold it)", stats(argv[1], argv[3]) == 0);
    nrt_rings_free(rp);
    nrt_rings_free(rw);
    check("nrtctl stats after the rings are freed refused", stats(argv[1], argv[4]) != 0);
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "ok", failures);
    return failures ? 1 : 0;
}
