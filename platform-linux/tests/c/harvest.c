/* A C runtime's use of the nrt-core C ABI: it plays a device (rings in memory,
 * an INTC cause register, a clock) through the callback table and harvests
 * inferences with the one-step machine and the sync wait. Exits 0 only if every
 * status is the seed's. */
#include <stdio.h>
#include <string.h>
#include "nrt.h"

#define RING 1024u            /* bytes per ring: 64 entries */
#include "fake_rings.h"
/* nrt.h has no ring ids: these are nrt_core::nq::ERROR_NQ and the first of
 * INFER_STATUS_NQS, one ring per engine from there on. */
#define NQ_ERROR 2
#define NQ_INFER_FIRST 4
#define INFER(e) ((uint8_t)(NQ_INFER_FIRST + (e)))
#define ENGINES NRT_ENGINES_PER_CORE

struct dev {
    uint8_t mem[FAKE_NQS][RING]; /* one core's runtime NQs */
    uint32_t wr[FAKE_NQS];       /* device write cursor per ring, bytes, free-running */
    uint32_t intc_cause;
    uint32_t intc_reads;
    uint64_t now;
    int events;
};

static int read_slot(void *c, uint8_t core, uint8_t nq, uint32_t off, uint8_t *out) {
    struct dev *d = c;
    return fake_read_slot(d->mem, core, nq, off, out);
}
static int write_head(void *c, uint8_t core, uint8_t nq, uint32_t head) { (void)c; (void)core; (void)nq; (void)head; return 0; }
static int read_cause(void *c, uint8_t core, uint32_t block, uint32_t line, uint32_t *out) {
    struct dev *d = c; (void)core; (void)block;
    d->intc_reads++;
    *out = line == 61 ? d->intc_cause : 0;
    return 0;
}
static uint64_t now_ns(void *c) { struct dev *d = c; d->now += 1000000; return d->now; } /* 1 ms per read */
static uint64_t stuck_clock(void *c) { (void)c; return 7; } /* a careless clock that never moves */
static int barrier(void *c, uint8_t core, uint32_t *st) { (void)c; (void)core; (void)st; return 1; }
static void on_event(void *c, const char *kind, const char *msg) { struct dev *d = c; d->events++; printf("  event %s: %s\n", kind, msg); }

/* The device writes an entry: the lap's phase in bit 7 of byte 3. */
static void push(struct dev *d, uint8_t nq, uint16_t subtype, uint64_t ts) { fake_push(d->mem, d->wr, nq, subtype, ts); }

static int failures;
static void expect(const char *what, uint32_t got, uint32_t want) {
    printf("%-34s %u %s (want %u %s)\n", what, got, nrt_status_name(got), want, nrt_status_name(want));
    if (got != want) failures++;
}

static nrt_platform platform(struct dev *d) {
    nrt_platform p = {0};
    p.ctx = d; p.read_slot = read_slot; p.write_head = write_head; p.read_cause = read_cause;
    p.now_ns = now_ns; p.barrier_status = barrier; p.event = on_event;
    return p;
}

static nrt_rings *rings(void) {
    nrt_rings *r = nrt_rings_new();
    if (nrt_rings_bind(r, 0, NQ_ERROR, RING)) failures++;
    for (int e = 0; e < ENGINES; e++) if (nrt_rings_bind(r, 0, INFER(e), RING)) failures++;
    return r;
}

int main(void) {
    static struct dev d;
    nrt_platform p = platform(&d);

    /* 1. healthy: START and END on every engine -> 0 in three steps */
    for (int e = 0; e < ENGINES; e++) { push(&d, INFER(e), 2, 100 + e); push(&d, INFER(e), 3, 200 + e); }
    nrt_rings *r = rings();
    nrt_request *q = nrt_request_new(2, 1, 5);
    uint64_t steps = 0;
    expect("healthy (nrt_wait)", nrt_wait(q, &p, r, 1, &steps), 0);
    if (steps != 3) { printf("steps %llu, want 3\n", (unsigned long long)steps); failures++; }
    if (d.intc_reads != 0) { printf("INTC read on the happy path\n"); failures++; }
    nrt_request_free(q); nrt_rings_free(r);

    /* 2. hang: nothing arrives; the one-step machine returns 1 until the timeout, then 2 with 5 */
    memset(&d, 0, sizeof d);
    r = rings(); q = nrt_request_new(2, 1, 1);
    uint32_t st = 0xFFFF; int rc, n = 0;
    while ((rc = nrt_progress_one_step(q, &p, r, &st)) == 1) n++;
    printf("hang: %d in-flight steps, then return %d\n", n, rc);
    if (rc != 2) failures++;
    expect("hang (one-step)", st, 5);
    if (nrt_progress_one_step(q, &p, r, &st) != 2) { printf("DONE is not terminal\n"); failures++; }
    nrt_request_free(q); nrt_rings_free(r);

    /* 3. the END was dropped and INTC cause bit 29 is set -> 1204 */
    memset(&d, 0, sizeof d);
    for (int e = 0; e < ENGINES; e++) push(&d, INFER(e), 2, 100 + e);
    for (int e = 0; e < ENGINES - 1; e++) push(&d, INFER(e), 3, 200 + e);
    d.intc_cause = 1u << 29;
    r = rings(); q = nrt_request_new(2, 1, 1);
    expect("dropped END + bit 29 (nrt_wait)", nrt_wait(q, &p, r, 1, NULL), 1204);
    nrt_request_free(q); nrt_rings_free(r);

    /* 4. NaN on the error ring of a clean run -> 1003 */
    memset(&d, 0, sizeof d);
    for (int e = 0; e < ENGINES; e++) { push(&d, INFER(e), 2, 100 + e); push(&d, INFER(e), 3, 200 + e); }
    push(&d, NQ_ERROR, 1, 150);
    r = rings(); q = nrt_request_new(2, 1, 5);
    expect("NaN on the error ring", nrt_wait(q, &p, r, 0, NULL), 1003);
    nrt_request_free(q); nrt_rings_free(r);

    /* 5. a careless clock: none is refused before any step; one that never moves
     *    stops the wait within about a second, the request still in flight */
    memset(&d, 0, sizeof d);
    r = rings(); q = nrt_request_new(2, 1, 1);
    nrt_platform careless = p;
    careless.now_ns = NULL;
    steps = 99;
    expect("no clock (nrt_wait)", nrt_wait(q, &careless, r, 1, &steps), 2);
    if (steps != 0 || nrt_progress_one_step(q, &careless, r, &st) != -1) { printf("a null clock was not refused\n"); failures++; }
    careless.now_ns = stuck_clock;
    expect("stuck clock (nrt_wait)", nrt_wait(q, &careless, r, 1, &steps), 2);
    if (d.events != 1 || nrt_progress_one_step(q, &careless, r, &st) != 1) { printf("stuck clock: %d events, or not in flight\n", d.events); failures++; }
    nrt_request_free(q); nrt_rings_free(r);

    /* 6. decode and names */
    uint8_t raw[16] = {0x34, 0x12, 0xA5, 0xE4, 7, 0, 3, 0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
    nrt_entry ent;
    if (nrt_decode_entry(raw, &ent) != 0 || ent.debug_hint != 0xA || ent.nq_tag != 4 || ent.phase != 1 ||
        ent.custom_sub_id != 7 || ent.subtype != 3 || ent.device_ts != 0x1122334455667788ull) {
        printf("decode mismatch\n"); failures++;
    }
    if (nrt_decode_entry(NULL, &ent) != -1 || nrt_request_new(9, 1, 5) != NULL) { printf("null handling\n"); failures++; }
    if (strcmp(nrt_status_name(1204), "NRT_EXEC_SW_NQ_OVERFLOW") || strcmp(nrt_status_name(8), "UNKNOWN")) failures++;
    if (nrt_status_priority(1202) != 3 || nrt_status_priority(0) != 0) failures++;
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "ok", failures);
    return failures ? 1 : 0;
}
