/* A C runtime's use of the poller thread: four lanes (each a device with its
 * rings and clock, played here), one poller harvesting all four, each request
 * waited on through its ticket. Every callback checks which thread calls it:
 * none may run on this (the caller's) thread, where a refused call reports
 * through nrt_poller_last_error instead. Exits 0 only if every status is the
 * seed's and no callback ran here. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "nrt.h"
#include "nrt_poller.h"

#define RING 1024u
#include "fake_rings.h"
#define NQ_ERROR 2
#define LANES 4
static const uint8_t INFER[5] = {4, 5, 6, 7, 8};

struct dev {
    uint8_t mem[9][RING];
    uint32_t wr[9];
    uint64_t now;
    int events;
    int heads;
    int late_end;             /* the ENDs arrive at the 5th clock read, in a later sweep */
};

/* The caller's thread: a lane's table is the poller thread's alone (one call at a time). */
static pthread_t caller;
static int on_caller;
#define ON_CALLER() (on_caller += pthread_equal(pthread_self(), caller) != 0)

static int read_slot(void *c, uint8_t core, uint8_t nq, uint32_t off, uint8_t *out) {
    struct dev *d = c;
    ON_CALLER();
    return fake_read_slot(d->mem, core, nq, off, out);
}
static int write_head(void *c, uint8_t core, uint8_t nq, uint32_t head) { struct dev *d = c; ON_CALLER(); (void)core; (void)nq; (void)head; d->heads++; return 0; }
static int read_cause(void *c, uint8_t core, uint32_t block, uint32_t line, uint32_t *out) { ON_CALLER(); (void)c; (void)core; (void)block; (void)line; *out = 0; return 0; }
static void push(struct dev *d, uint8_t nq, uint16_t subtype, uint64_t ts);
static uint64_t now_ns(void *c) { /* 1 ms per read; plays the late ENDs */
    struct dev *d = c;
    ON_CALLER();
    d->now += 1000000;
    if (d->late_end && d->now >= 5000000) {
        for (int e = 0; e < 5; e++) push(d, INFER[e], 3, 200 + e);
        d->late_end = 0;
    }
    return d->now;
}
static int barrier(void *c, uint8_t core, uint32_t *st) { ON_CALLER(); (void)c; (void)core; (void)st; return 1; }
static void on_event(void *c, const char *kind, const char *msg) { struct dev *d = c; ON_CALLER(); d->events++; printf("  event %s: %s\n", kind, msg); }

static void push(struct dev *d, uint8_t nq, uint16_t subtype, uint64_t ts) { fake_push(d->mem, d->wr, nq, subtype, ts); }

static int failures;
static void expect(const char *what, uint32_t got, uint32_t want) {
    printf("%-30s %u %s (want %u %s)\n", what, got, nrt_status_name(got), want, nrt_status_name(want));
    if (got != want) failures++;
}

static void said(const char *what) {
    const char *e = nrt_poller_last_error();
    printf("%s: %s\n", what, e ? e : "(no last error)");
}

int main(void) {
    caller = pthread_self();
    if (nrt_poller_last_error() != NULL) { printf("a last error before any call\n"); failures++; }
    static struct dev d[LANES];
    nrt_platform p[LANES];
    const nrt_rings *r[LANES];
    for (int i = 0; i < LANES; i++) {
        memset(&p[i], 0, sizeof p[i]);
        p[i].ctx = &d[i]; p[i].read_slot = read_slot; p[i].write_head = write_head; p[i].read_cause = read_cause;
        p[i].now_ns = now_ns; p[i].barrier_status = barrier; p[i].event = on_event;
        nrt_rings *ri = nrt_rings_new();
        if (nrt_rings_bind(ri, 0, NQ_ERROR, RING)) failures++;
        for (int e = 0; e < 5; e++) if (nrt_rings_bind(ri, 0, INFER[e], RING)) failures++;
        if (i % 2 && nrt_rings_set_head_batching(ri, 1)) failures++;   /* odd lanes batch HEAD */
        r[i] = ri;
    }
    /* lanes 0 and 1 healthy, lane 2 hangs (no END on DVE), lane 3 healthy with a NaN */
    for (int i = 0; i < LANES; i++)
        for (int e = 0; e < 5; e++) { push(&d[i], INFER[e], 2, 100 + e); if (i > 1 && !(i == 2 && e == 3)) push(&d[i], INFER[e], 3, 200 + e); }
    d[0].late_end = d[1].late_end = 1;
    push(&d[3], NQ_ERROR, 1, 150);

    /* careless callers: refused with a message, never a crash */
    if (nrt_poller_new(NULL, r, LANES, -1) != NULL) { printf("null platforms accepted\n"); failures++; }
    said("null platforms");
    nrt_platform no_clock[LANES];
    memcpy(no_clock, p, sizeof p);
    no_clock[1].now_ns = NULL;
    if (nrt_poller_new(no_clock, r, LANES, -1) != NULL) { printf("a lane without a clock accepted\n"); failures++; }
    said("no clock");

    nrt_poller *pl = nrt_poller_new(p, r, LANES, -1);
    if (!pl) { printf("nrt_poller_new failed\n"); return 1; }
    if (nrt_poller_submit(pl, 0, 9, 1, 5) != NULL) { printf("arch 9 accepted\n"); failures++; }
    said("arch 9");
    if (nrt_poller_submit(NULL, 3, 2, 1, 5) != NULL) { printf("a null poller accepted\n"); failures++; }
    said("null poller");
    nrt_ticket *t[LANES];
    for (int i = 0; i < LANES; i++) t[i] = nrt_poller_submit(pl, (uint16_t)i, 2, 1, 1);
    uint32_t st[LANES];
    int rc[LANES];
    for (int i = 0; i < LANES; i++) rc[i] = nrt_ticket_wait(t[i], &st[i]);
    expect("lane 0 healthy", st[0], 0);
    expect("lane 1 healthy", st[1], 0);
    expect("lane 2 hang", st[2], 5);
    expect("lane 3 NaN", st[3], 1003);
    if (rc[0] != 0 || rc[1] != 0 || rc[2] != 2 || rc[3] != 0) { printf("return codes %d %d %d %d\n", rc[0], rc[1], rc[2], rc[3]); failures++; }
    /* STARTs in one sweep, ENDs in a later one: lane 0 drains HEAD after each
     * sweep (10 writes), lane 1 batches (one per ring, at its engine's END: 5) */
    printf("HEAD writes: lane 0 %d, lane 1 %d\n", d[0].heads, d[1].heads);
    if (d[0].heads != 10 || d[1].heads != 5) failures++;
    if (nrt_rings_set_head_batching(NULL, 1) != -1) { printf("null rings\n"); failures++; }
    uint32_t again = 0;
    if (nrt_ticket_poll(t[2], &again) != 2 || again != 5) { printf("poll after done\n"); failures++; }
    if (nrt_ticket_wait(NULL, NULL) != -1 || nrt_ticket_poll(NULL, NULL) != -1) { printf("null ticket\n"); failures++; }
    for (int i = 0; i < LANES; i++) nrt_ticket_free(t[i]);
    nrt_poller_free(pl);
    nrt_poller_free(NULL);

    /* each wait policy answers a request (on a lane that does not exist:
     * NRT_INVALID_HANDLE from the poller's pass); an unknown policy is refused */
    if (nrt_poller_new_with_policy(p, r, LANES, -1, 3) != NULL) { printf("policy 3 accepted\n"); failures++; }
    said("policy 3");
    uint32_t policies[3] = { NRT_POLLER_SPIN, NRT_POLLER_HYBRID, NRT_POLLER_SLEEP };
    for (int k = 0; k < 3; k++) {
        nrt_poller *q = nrt_poller_new_with_policy(p, r, LANES, -1, policies[k]);
        if (!q) { printf("policy %u refused: %s\n", policies[k], nrt_poller_last_error()); failures++; continue; }
        nrt_ticket *tk = nrt_poller_submit(q, 99, 2, 1, 1);
        uint32_t s99 = 0;
        int r99 = nrt_ticket_wait(tk, &s99);
        expect("missing lane, each policy", s99, 3);
        if (r99 != 2) { printf("policy %u: rc %d\n", policies[k], r99); failures++; }
        nrt_ticket_free(tk);
        nrt_poller_free(q);
    }
    /* a hybrid poller's slice: 20 to 1000 us or 0 (the default); others refused */
    if (nrt_poller_new_with_slice(p, r, LANES, -1, NRT_POLLER_HYBRID, 5) != NULL) { printf("slice 5 accepted\n"); failures++; }
    said("slice_us 5");
    if (nrt_poller_new_with_slice(p, r, LANES, -1, NRT_POLLER_HYBRID, 1001) != NULL) { printf("slice 1001 accepted\n"); failures++; }
    said("slice_us 1001");
    uint32_t slices[2] = { 0, 200 };
    for (int k = 0; k < 2; k++) {
        nrt_poller *q = nrt_poller_new_with_slice(p, r, LANES, -1, NRT_POLLER_HYBRID, slices[k]);
        if (!q) { printf("slice %u refused: %s\n", slices[k], nrt_poller_last_error()); failures++; continue; }
        nrt_ticket *tk = nrt_poller_submit(q, 99, 2, 1, 1);
        uint32_t s99 = 0;
        int r99 = nrt_ticket_wait(tk, &s99);
        expect("missing lane, each slice", s99, 3);
        if (r99 != 2) { printf("slice %u: rc %d\n", slices[k], r99); failures++; }
        nrt_ticket_free(tk);
        nrt_poller_free(q);
    }
    printf("capacity %u\n", nrt_poller_capacity());
    printf("callbacks on the caller's thread: %d\n", on_caller);
    if (on_caller != 0) failures++;
    for (int i = 0; i < LANES; i++) nrt_rings_free((nrt_rings *)r[i]);
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "ok", failures);
    return failures ? 1 : 0;
}
