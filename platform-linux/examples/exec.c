/* A runtime's own work through the C ABI: host and device memory, a pattern
 * copied host -> device -> host by one execution of three copies, the
 * execution's descriptor waited with poll, the bytes checked, each engine's
 * times. The C twin of examples/exec.rs.
 *
 * Build and run it under the simulated driver (from the workspace root):
 *   cargo build --release -p nrt-linux -p nrt-sim
 *   cc -std=c99 platform-linux/examples/exec.c \
 *      $(PKG_CONFIG_PATH=target/release pkg-config --cflags --libs nrt-linux) -o exec
 *   target/release/nrt-sim driver -- ./exec
 * The device is the one of NEURON_RT_VISIBLE_CORES (else /dev/neuron0), the
 * cores and timeout the NEURON_RT_* variables' or the defaults.
 * Exits 0 when the execution's status is NRT_SUCCESS and the bytes match, 1
 * when a call failed, 2 when the status or the bytes are wrong. */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include "nrt.h"

#define BYTES (96u * 1024u)

static int failed(const char *what) {
    const char *why = nrt_session_last_error();
    fprintf(stderr, "exec: %s: status %u: %s\n", what, nrt_session_last_status(), why ? why : "(no reason recorded)");
    return 1;
}

static int run(nrt_session *s) {
    static unsigned char pattern[BYTES];
    nrt_mem *src = nrt_mem_alloc(s, NRT_MEM_HOST, BYTES);
    nrt_mem *dev = nrt_mem_alloc(s, NRT_MEM_DEVICE, BYTES);
    nrt_mem *back = nrt_mem_alloc(s, NRT_MEM_HOST, BYTES);
    nrt_exec *e = NULL;
    int rc = 1;
    if (!src || !dev || !back) {
        rc = failed("nrt_mem_alloc");
        goto out;
    }
    for (uint32_t i = 0; i < BYTES; i++) {
        pattern[i] = (unsigned char)(i * 7 + i / 251);
    }
    memcpy(nrt_mem_host_ptr(src), pattern, BYTES);
    memset(nrt_mem_host_ptr(back), 0, BYTES);
    e = nrt_exec_new(s);
    if (!e || nrt_exec_add_copy(e, dev, 0, src, 0, BYTES) != 0
        || nrt_exec_add_copy(e, back, 0, dev, 0, BYTES / 2) != 0
        || nrt_exec_add_copy(e, back, BYTES / 2, dev, BYTES / 2, BYTES / 2) != 0) {
        rc = failed("building the execution");
        goto out;
    }
    if (nrt_exec_submit(e) != NRT_SUCCESS) {
        rc = failed("nrt_exec_submit");
        goto out;
    }
    /* Bounded: the execution ends within its copies' budgets and the session's timeout. */
    int timeout_ms = 1000 * ((int)nrt_session_timeout_s(s) + 30);
    struct pollfd p = { .fd = nrt_exec_fd(e), .events = POLLIN, .revents = 0 };
    if (poll(&p, 1, timeout_ms) != 1) {
        fprintf(stderr, "exec: the execution's descriptor was not readable within %d ms\n", timeout_ms);
        goto out;
    }
    uint32_t status = nrt_exec_wait(e);
    if (status != NRT_SUCCESS) {
        failed("the execution");
    }
    int same = memcmp(nrt_mem_host_ptr(back), pattern, BYTES) == 0;
    printf("status %u %s\n", status, nrt_status_name(status));
    printf("copies %u bytes host -> device -> host: %s\n", BYTES, same ? "match" : "DIFFER");
    for (uint8_t core = 0; core < nrt_session_cores(s); core++) {
        for (uint8_t eng = 0; eng < NRT_ENGINES_PER_CORE; eng++) {
            uint64_t start = NRT_TIME_NONE, end = NRT_TIME_NONE;
            if (nrt_exec_engine_times(e, core, eng, &start, &end) == 0) {
                printf("core %u engine %u: start %llu us, end %llu us\n", core, eng, (unsigned long long)start,
                       (unsigned long long)end);
            } else {
                printf("core %u engine %u: %s\n", core, eng, nrt_session_last_error());
            }
        }
    }
    rc = (same && status == NRT_SUCCESS) ? 0 : 2;
out:
    nrt_exec_free(e);
    nrt_mem_free(src);
    nrt_mem_free(dev);
    nrt_mem_free(back);
    return rc;
}

int main(void) {
    nrt_session *s = nrt_session_open(NULL, 0, 0, NRT_TIMEOUT_FROM_ENV);
    if (!s) {
        return failed("nrt_session_open");
    }
    int rc = run(s);
    if (nrt_session_close(s) != 0) {
        return failed("nrt_session_close");
    }
    return rc;
}
