/* Every call of the memory and execution C ABI with arguments it must refuse
 * (NULL, freed and doubly freed objects, ranges past an object's end, another
 * session's memory, a closed session, an execution in flight), and the
 * lifetimes it must keep (memory freed while an execution copies it, an
 * execution freed in flight). Each check prints one line:
 *   LABEL = VALUE | LAST_STATUS | LAST_ERROR
 * (the last two from nrt_session_last_status and nrt_session_last_error).
 * Usage: exec_args MODE, under nrt-sim driver:
 *   args  two sessions, on core 0 and core 1 of /dev/neuron0, and a third
 *         open on core 0 (refused: NRT_EXEC_NC_BUSY);
 *   end   one execution on every core, timeout 1 s, waited: its status
 *         and each core's pending engines (the hang and nan scenarios).
 * Exits 0 when it ran to its end, 1 when a call needed to go on failed. */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nrt.h"

static void show(const char *label, long long value) {
    const char *why = nrt_session_last_error();
    printf("%s = %lld | %u | %s\n", label, value, nrt_session_last_status(), why ? why : "");
    fflush(stdout);
}

#define PTR(p) ((p) != NULL)

static int gate[2];
static atomic_int counted;
static atomic_int blocking;

/* Holds the worker until the main thread writes to the gate. */
static void block(void *ctx, uint32_t status) {
    (void)ctx;
    (void)status;
    atomic_store(&blocking, 1);
    char c;
    while (read(gate[0], &c, 1) < 0) {
    }
}

static void count(void *ctx, uint32_t status) {
    atomic_fetch_add((atomic_int *)ctx, 1);
    printf("callback status %u\n", status);
}

static nrt_session *open_on(const char *cores) {
    setenv("NEURON_RT_VISIBLE_CORES", cores, 1);
    nrt_session *s = nrt_session_open("/dev/neuron0", 0, 0, 5);
    if (!s) {
        fprintf(stderr, "open on core %s: %s\n", cores, nrt_session_last_error());
    }
    return s;
}

static void nulls(void) {
    uint32_t st = 0;
    uint64_t a = 0, b = 0;
    show("alloc NULL session", PTR(nrt_mem_alloc(NULL, NRT_MEM_HOST, 64)));
    show("host_ptr NULL", PTR(nrt_mem_host_ptr(NULL)));
    show("mem_free NULL", nrt_mem_free(NULL));
    show("copy NULL session", nrt_copy(NULL, NULL, 0, NULL, 0, 16));
    show("exec_new NULL", PTR(nrt_exec_new(NULL)));
    show("add_copy NULL", nrt_exec_add_copy(NULL, NULL, 0, NULL, 0, 16));
    show("set_callback NULL", nrt_exec_set_callback(NULL, count, NULL));
    show("submit NULL", nrt_exec_submit(NULL));
    show("fd NULL", nrt_exec_fd(NULL));
    show("wait NULL", nrt_exec_wait(NULL));
    show("status NULL", nrt_exec_status(NULL, &st));
    show("times NULL", nrt_exec_engine_times(NULL, 0, 0, &a, &b));
    show("pending NULL", nrt_exec_pending_engines(NULL, 0));
    nrt_exec_free(NULL);
    show("exec_free NULL", 0);
}

static int args(void) {
    nulls();
    nrt_session *a = open_on("0");
    nrt_session *b = open_on("1");
    if (!a || !b) {
        return 1;
    }
    unsetenv("NEURON_RT_VISIBLE_CORES");
    nrt_session *c = nrt_session_open("/dev/neuron0", 1, 0, 5);
    show("open held cores", PTR(c));

    show("alloc where 7", PTR(nrt_mem_alloc(a, 7, 64)));
    show("alloc 0 bytes", PTR(nrt_mem_alloc(a, NRT_MEM_HOST, 0)));
    nrt_mem *host = nrt_mem_alloc(a, NRT_MEM_HOST, 4096);
    nrt_mem *src2 = nrt_mem_alloc(a, NRT_MEM_HOST, 4096);
    nrt_mem *dev = nrt_mem_alloc(a, NRT_MEM_DEVICE, 4096);
    nrt_mem *other = nrt_mem_alloc(b, NRT_MEM_HOST, 4096);
    if (!host || !src2 || !dev || !other) {
        fprintf(stderr, "alloc: %s\n", nrt_session_last_error());
        return 1;
    }
    show("host_ptr device", PTR(nrt_mem_host_ptr(dev)));
    show("copy NULL source", nrt_copy(a, dev, 0, NULL, 0, 16));
    show("copy past end", nrt_copy(a, dev, 4000, host, 0, 200));
    show("copy offset overflow", nrt_copy(a, dev, 0, host, UINT64_MAX, 2));
    show("copy 0 bytes", nrt_copy(a, dev, 0, host, 0, 0));
    show("copy other session", nrt_copy(a, dev, 0, other, 0, 16));
    show("copy exec handle as memory", nrt_copy(a, (nrt_mem *)nrt_exec_new(b), 0, host, 0, 16));
    show("copy ok", nrt_copy(a, dev, 0, host, 0, 4096));

    nrt_exec *e = nrt_exec_new(a);
    uint32_t st = 0;
    uint64_t t0 = 0, t1 = 0;
    show("fd unsubmitted", nrt_exec_fd(e) >= 0);
    show("wait unsubmitted", nrt_exec_wait(e));
    show("status unsubmitted", nrt_exec_status(e, &st));
    show("times unsubmitted", nrt_exec_engine_times(e, 0, 0, &t0, &t1));
    show("pending unsubmitted", nrt_exec_pending_engines(e, 0));
    show("add_copy other session", nrt_exec_add_copy(e, host, 0, other, 0, 16));
    show("add_copy past end", nrt_exec_add_copy(e, host, 0, dev, 4095, 2));
    show("add_copy NULL destination", nrt_exec_add_copy(e, NULL, 0, dev, 0, 2));
    show("status NULL out", nrt_exec_status(e, NULL));
    show("times NULL out", nrt_exec_engine_times(e, 0, 0, NULL, &t1));

    /* Memory freed and an execution freed while in flight: e0's callback
     * holds the worker, so e2 and e stay queued until the gate opens. */
    unsigned char *p2 = nrt_mem_host_ptr(src2);
    for (int i = 0; i < 4096; i++) {
        p2[i] = (unsigned char)(i * 13 + 5);
    }
    unsigned char want[4096];
    memcpy(want, p2, sizeof want);
    memset(nrt_mem_host_ptr(host), 0, 4096);
    if (pipe(gate) != 0) {
        return 1;
    }
    nrt_exec *e0 = nrt_exec_new(a);
    nrt_exec *e2 = nrt_exec_new(a);
    show("set_callback block", nrt_exec_set_callback(e0, block, NULL));
    show("set_callback count", nrt_exec_set_callback(e2, count, &counted));
    show("add_copy ok", nrt_exec_add_copy(e, host, 0, src2, 0, 4096));
    show("submit e0", nrt_exec_submit(e0));
    show("submit e2", nrt_exec_submit(e2));
    show("submit e", nrt_exec_submit(e));
    show("submit in flight", nrt_exec_submit(e));
    /* With e0's callback holding the worker, e2 and e are the stream's: it
     * takes NRT_STREAM_DEPTH - 2 more, then answers NRT_QUEUE_FULL at once. */
    for (int i = 0; i < 30000 && !atomic_load(&blocking); i++) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    nrt_exec *fill[NRT_STREAM_DEPTH];
    int filled = 0;
    uint32_t full = 0;
    for (int i = 0; i < NRT_STREAM_DEPTH && full == 0; i++) {
        fill[i] = nrt_exec_new(a);
        full = nrt_exec_submit(fill[i]);
        filled += full == 0;
    }
    show("submits until full", filled);
    show("submit past the depth", full);
    show("status in flight", nrt_exec_status(e, &st));
    struct pollfd pq = { .fd = nrt_exec_fd(e), .events = POLLIN, .revents = 0 };
    show("fd not readable in flight", poll(&pq, 1, 0));
    show("add_copy in flight", nrt_exec_add_copy(e, host, 0, src2, 0, 16));
    show("set_callback in flight", nrt_exec_set_callback(e, count, NULL));
    show("times in flight", nrt_exec_engine_times(e, 0, 0, &t0, &t1));
    show("pending in flight", nrt_exec_pending_engines(e, 0));
    nrt_exec_free(e2);
    show("wait freed exec", nrt_exec_wait(e2));
    nrt_exec_free(e2);
    show("exec double free", 0);
    show("mem_free in flight", nrt_mem_free(src2));
    show("mem double free", nrt_mem_free(src2));
    show("host_ptr freed", PTR(nrt_mem_host_ptr(src2)));
    show("copy freed source", nrt_copy(a, host, 0, src2, 0, 16));
    show("add_copy freed source", nrt_exec_add_copy(nrt_exec_new(a), host, 0, src2, 0, 16));
    if (write(gate[1], "go", 2) != 2) {
        return 1;
    }
    show("wait e", nrt_exec_wait(e));
    show("status done", nrt_exec_status(e, &st));
    show("status done value", st);
    show("callback of the freed exec ran", atomic_load(&counted));
    show("bytes of the freed memory", memcmp(nrt_mem_host_ptr(host), want, sizeof want) == 0);
    struct pollfd pf = { .fd = nrt_exec_fd(e), .events = POLLIN, .revents = 0 };
    show("fd readable when done", poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN));
    show("status done NULL out", nrt_exec_status(e, NULL));
    int fd1 = nrt_exec_fd(e);
    show("resubmit done exec", nrt_exec_submit(e));
    show("fd the same after resubmit", nrt_exec_fd(e) == fd1);
    show("wait resubmitted", nrt_exec_wait(e));
    struct pollfd pf2 = { .fd = fd1, .events = POLLIN, .revents = 0 };
    show("fd readable after the resubmit", poll(&pf2, 1, 0) == 1 && (pf2.revents & POLLIN));
    show("times done", nrt_exec_engine_times(e, 0, NRT_ENGINE_PE, &t0, &t1));
    show("times done ordered", t0 <= t1 && t1 != NRT_TIME_NONE);
    show("times core out of range", nrt_exec_engine_times(e, 1, 0, &t0, &t1));
    show("times engine out of range", nrt_exec_engine_times(e, 0, 9, &t0, &t1));
    show("pending done", nrt_exec_pending_engines(e, 0));
    show("pending core out of range", nrt_exec_pending_engines(e, 1));
    show("wait e0", nrt_exec_wait(e0));
    for (int i = 0; i < filled + (full != 0); i++) {
        nrt_exec_wait(fill[i]);
        nrt_exec_free(fill[i]);
    }
    nrt_exec_free(e);
    nrt_exec_free(e0);
    show("submit freed", nrt_exec_submit(e));
    nrt_exec_free(e);
    show("exec_free freed", 0);

    /* A closed session: its objects and itself. */
    nrt_exec *eb = nrt_exec_new(b);
    show("close b", nrt_session_close(b));
    show("submit closed session", nrt_exec_submit(eb));
    show("alloc closed session", PTR(nrt_mem_alloc(b, NRT_MEM_HOST, 64)));
    show("exec_new closed session", PTR(nrt_exec_new(b)));
    show("copy closed session", nrt_copy(b, other, 0, other, 16, 16));
    show("close b again", nrt_session_close(b));
    show("mem_free of closed session", nrt_mem_free(other));
    nrt_exec_free(eb);
    nrt_mem_free(host);
    nrt_mem_free(dev);
    show("close a", nrt_session_close(a));
    if (c) {
        nrt_session_close(c);
    }
    return 0;
}

/* One execution (a copy, then the kickoff of every core), timeout 1 s. */
static int end(void) {
    nrt_session *s = nrt_session_open("/dev/neuron0", 0, 0, 1);
    if (!s) {
        fprintf(stderr, "open: %s\n", nrt_session_last_error());
        return 1;
    }
    nrt_mem *h = nrt_mem_alloc(s, NRT_MEM_HOST, 256);
    nrt_mem *d = nrt_mem_alloc(s, NRT_MEM_DEVICE, 256);
    nrt_exec *e = nrt_exec_new(s);
    if (!h || !d || !e || nrt_exec_add_copy(e, d, 0, h, 0, 256) != 0) {
        fprintf(stderr, "setup: %s\n", nrt_session_last_error());
        return 1;
    }
    show("submit", nrt_exec_submit(e));
    show("wait", nrt_exec_wait(e));
    uint32_t st = 0;
    show("status", nrt_exec_status(e, &st));
    show("status value", st);
    char label[64];
    for (uint8_t core = 0; core < nrt_session_cores(s); core++) {
        snprintf(label, sizeof label, "pending core %u", core);
        show(label, nrt_exec_pending_engines(e, core));
        uint32_t cs = 0;
        snprintf(label, sizeof label, "core %u status", core);
        show(label, nrt_exec_core_status(e, core, &cs));
        snprintf(label, sizeof label, "core %u status value", core);
        show(label, cs);
        uint64_t t0 = 0, t1 = 0;
        snprintf(label, sizeof label, "times core %u DVE", core);
        show(label, nrt_exec_engine_times(e, core, NRT_ENGINE_DVE, &t0, &t1));
        snprintf(label, sizeof label, "times core %u DVE end seen", core);
        show(label, t1 != NRT_TIME_NONE);
    }
    nrt_exec_free(e);
    nrt_mem_free(h);
    nrt_mem_free(d);
    /* Closed with three queued: the one running ends, the rest end unrun. */
    nrt_exec *q[3];
    for (int i = 0; i < 3; i++) {
        q[i] = nrt_exec_new(s);
        nrt_exec_set_callback(q[i], count, &counted);
        nrt_exec_submit(q[i]);
    }
    show("close", nrt_session_close(s));
    int unrun = 0;
    for (int i = 0; i < 3; i++) {
        uint32_t qs = 0;
        unrun += nrt_exec_status(q[i], &qs) == 2 && qs == NRT_CLOSED;
        nrt_exec_free(q[i]);
    }
    show("ended unrun, NRT_CLOSED", unrun >= 2);
    show("their callbacks ran", atomic_load(&counted));
    show("cores of a closed session", nrt_session_cores(s));
    show("timeout of a closed session", nrt_session_timeout_s(s));
    show("status of a closed session", nrt_session_status(s));
    show("run on a closed session", nrt_session_run(s, NULL));
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s args|end\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "args") == 0) {
        return args();
    }
    if (strcmp(argv[1], "end") == 0) {
        return end();
    }
    fprintf(stderr, "usage: %s args|end\n", argv[0]);
    return 2;
}
