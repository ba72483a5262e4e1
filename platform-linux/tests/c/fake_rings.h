/* The notification rings of the C test programs' fake device: core 0's nine
 * runtime NQs (index = NQ id), RING bytes each, with a free-running write
 * cursor per ring. The entry layout is the completion-engine seed's 16-byte
 * record: NQ id in bits 4:0 of byte 3 and the lap's phase in bit 7, the
 * subtype in bytes 6-7, the device timestamp in bytes 8-15. Include after
 * defining RING. */
#ifndef NRT_TEST_FAKE_RINGS_H
#define NRT_TEST_FAKE_RINGS_H

#include <stdint.h>
#include <string.h>

#define FAKE_NQS 9u

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

#endif
