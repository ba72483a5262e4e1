/* The notification rings of the C test programs' fake device: core 0's nine
 * runtime NQs (index = NQ id), RING bytes each, with a free-running write
 * cursor per ring. The entry layout is the completion-engine seed's 16-byte
 * record: NQ id in bits 4:0 of byte 3 and the lap's phase in bit 7, the
 * subtype in bytes 6-7, the device timestamp in bytes 8-15. Also the plain
 * fake device of the programs that need nothing more (struct fake_dev and
 * its callback table). Include after defining RING. */
#ifndef NRT_TEST_FAKE_RINGS_H
#define NRT_TEST_FAKE_RINGS_H

#include <stdint.h>
#include <string.h>
#include "nrt.h"

/* Ring ids through the last INFER_STATUS ring, which start at 4 (nrt_core::nq). */
#define FAKE_NQS (4u + NRT_ENGINES_PER_CORE)

/* read_slot's answer: the 16 bytes at `off` of ring `nq`, or -1 for a slot
 * no ring of core 0 has. */
static inline int fake_read_slot(uint8_t (*mem)[RING], uint8_t core, uint8_t nq, uint32_t off, uint8_t *out) {
    if (core != 0 || nq >= FAKE_NQS || off >= RING || off % 16) return -1;
    memcpy(out, mem[nq] + off, 16);
    return 0;
}

/* The device writes one record to ring `nq`, with the phase of its lap. */
static inline void fake_push(uint8_t (*mem)[RING], uint32_t *wr, uint8_t nq, uint16_t subtype, uint64_t ts) {
    uint8_t e[16] = {0};
    uint32_t off = wr[nq] % RING, lap = wr[nq] / RING;
    e[3] = (uint8_t)((nq & 0x1F) | ((lap & 1) ? 0 : 0x80));
    e[6] = (uint8_t)subtype; e[7] = (uint8_t)(subtype >> 8);
    memcpy(e + 8, &ts, 8);
    memcpy(mem[nq] + off, e, 16);
    wr[nq] += 16;
}

/* A device with core 0's rings, nothing to say about its barrier, HEAD
 * writes or INTC cause, and a played clock: each read moves it tick_ns. */
struct fake_dev {
    uint8_t mem[FAKE_NQS][RING];
    uint32_t wr[FAKE_NQS];
    uint64_t now;
    uint64_t tick_ns;
};

static inline int fake_dev_read_slot(void *c, uint8_t core, uint8_t nq, uint32_t off, uint8_t *out) {
    struct fake_dev *d = c;
    return fake_read_slot(d->mem, core, nq, off, out);
}
static inline int fake_dev_write_head(void *c, uint8_t core, uint8_t nq, uint32_t head) { (void)c; (void)core; (void)nq; (void)head; return 0; }
static inline int fake_dev_read_cause(void *c, uint8_t core, uint32_t block, uint32_t line, uint32_t *out) { (void)c; (void)core; (void)block; (void)line; *out = 0; return 0; }
static inline uint64_t fake_dev_now_ns(void *c) { struct fake_dev *d = c; d->now += d->tick_ns; return d->now; }
static inline int fake_dev_barrier(void *c, uint8_t core, uint32_t *st) { (void)c; (void)core; (void)st; return 1; }

/* The callback table of `d`. */
static inline nrt_platform fake_dev_platform(struct fake_dev *d) {
    nrt_platform p;
    memset(&p, 0, sizeof p);
    p.ctx = d; p.read_slot = fake_dev_read_slot; p.write_head = fake_dev_write_head;
    p.read_cause = fake_dev_read_cause; p.now_ns = fake_dev_now_ns; p.barrier_status = fake_dev_barrier;
    return p;
}

/* The device writes one record to ring `nq` of `d`. */
static inline void fake_dev_push(struct fake_dev *d, uint8_t nq, uint16_t subtype, uint64_t ts) {
    fake_push(d->mem, d->wr, nq, subtype, ts);
}

#endif
