/* A small unmodified process for `nrt-sim driver -- driver_probe MODE`: it
 * speaks the Neuron driver's ioctl ABI to /dev/neuron0 and prints what it got,
 * one `key: value` per line, for tests/driver.rs to check.
 *
 *   probe RING_BYTES  DRIVER_INFO_GET, DEVICE_INFO, COMPATIBLE_VERSION, a copy
 *                     start before DMA_QUEUE_INIT (EPERM), a slot past the
 *                     block (EINVAL), NOTIFICATIONS_INIT_V2 + mmap of core 0's
 *                     ring 4, the host trigger and kickoff, then the first
 *                     ring slot the device writes;
 *   bug               rings allocated and DMA_QUEUE_INIT, then
 *                     DMA_QUEUE_COPY_START with rx_desc_count 0 (a kernel BUG:
 *                     the supervisor kills this process in --strict mode);
 *   copy              a TX ring, an RX ring and a 3-page buffer allocated and
 *                     mapped, two BDs each way staged (4096 bytes from page 0
 *                     to page 1 in 3000 + 1096), DMA_QUEUE_COPY_START, the
 *                     bytes checked; then a BD pair whose destination is no
 *                     chunk (a DMA error: nothing written), and the queue's
 *                     state (DMA_QUEUE_GET_STATE);
 *   window            the simulator's hint query (arch, cores, ring entries);
 *   bar               BAR reads and writes on sunda: outside every window of
 *                     the device map, into a TPB's and a top-SP's semaphore
 *                     resource, a HEAD register, and the simulator's INTC
 *                     cause and host trigger;
 *   own               the ownership sequence a runtime uses: range mark,
 *                     writer enter, downgrade, reader enter/exit, unmark, and
 *                     the refusals around it (uuid 0, reader count 0,
 *                     EALREADY);
 *   twoproc           a child marks core 0 and waits; the parent's mark of
 *                     core 0 gets EBUSY while the child holds it;
 *   free              a write-only ("free access") descriptor: misc requests
 *                     served, the rest EINVAL; DEVICE_GET_ALL_APPS_INFO on
 *                     each descriptor; argument structs that cannot be
 *                     copied in (a positive count, EACCES); a child's marks
 *                     taken through its own write-only descriptor are given
 *                     back at its exit, a child's through the inherited
 *                     O_RDWR descriptor are not;
 *   fops              mmap of a whole chunk, of part of one, from its
 *                     middle, across two, at offset 0; read, write,
 *                     pwrite, ftruncate, fallocate on the node and on dups
 *                     of it (the chunk's bytes checked unchanged after);
 *                     read-only and write-only descriptors; another file
 *                     moved into the supervisor's reserved numbers.
 *
 * Layouts and codes: nrt-abi (abi/src/ioctl/), checked there against the
 * public driver's header. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct device_info {
    uint32_t architecture, revision, connected_device_count, connected_devices[8], pad;
    uint64_t bar_address[2], bar_size[2];
};
struct driver_info { uint32_t architecture, revision, version, size; uint64_t feature_flags1; };
struct compat { uint32_t max, min; };
struct nq_init {
    uint32_t nq_dev_id, nq_dev_type, nq_type, engine_index, size, on_host_memory, dram_channel, dram_region;
    uint64_t mmap_offset, mem_handle;
};
struct bar_rw { uint32_t bar, pad0; uint64_t address, data; uint32_t count, pad1; };
struct sema { uint32_t nc_id, index, value; };
struct copy_start { uint32_t eng_id, qid, tx, rx; };
struct mem_alloc {
    uint64_t size, align;
    uint32_t host_memory, dram_channel, dram_region, nc_id, mem_type, pad;
    uint64_t mem_handle_ptr;
};
struct mem_info { uint64_t mem_handle; uint32_t version, host_memory; uint64_t mmap_offset, pa, pid, size; };
struct queue_state {
    uint32_t hw_status, sw_status;
    uint64_t base_addr;
    uint32_t length, head_pointer, tail_pointer, pad0;
    uint64_t completion_base_addr;
    uint32_t completion_head, pad1;
};
struct queue_get_state { uint32_t eng_id, qid; uint64_t tx, rx; };
struct crwl { uint32_t nc_id; uint8_t uuid[32]; };
struct nc_map { uint32_t nc_count, start, end, max_available; uint64_t bitmap; };
struct pid_dump { uint32_t size, nc_id, filter_log_owner, log_dump_limit; };
struct sim_hints {
    uint32_t magic, version, size, model_cores, ring_entries, device_cores;
    uint64_t clock_origin_ns, heartbeat_ns;
    uint32_t lines[8][5];
    uint64_t host_trigger;
};
struct queue_init {
    uint32_t eng_id, qid, tx_desc_count, rx_desc_count;
    uint64_t tx_handle, rx_handle, rxc_handle;
    uint32_t axi_port, pad;
};

#define DEVICE_INFO 0x80084E03u
#define DRIVER_INFO_GET 0x80184E6Eu
#define COMPATIBLE_VERSION 0x40084E5Du
#define NOTIFICATIONS_INIT_V2 0x80084E35u
#define BAR_WRITE 0x40084E0Cu
#define BAR_READ 0x80084E0Bu
#define SEMAPHORE_INCREMENT 0x80084E29u
#define DMA_QUEUE_COPY_START 0x80084E23u
#define MEM_ALLOC_V2MT 0x80304E66u
#define DMA_QUEUE_INIT 0x80084E21u
#define MEM_GET_EXTENDED_INFO 0x80084E1Du
#define DMA_QUEUE_GET_STATE 0xC0084E25u
#define CRWL_READER_ENTER 0x40084E51u
#define CRWL_READER_EXIT 0x40084E52u
#define CRWL_WRITER_ENTER 0x40084E53u
#define CRWL_WRITER_DOWNGRADE 0x40084E54u
#define CRWL_NC_RANGE_MARK 0x40084E55u
#define CRWL_NC_RANGE_UNMARK 0x40084E56u
#define NC_PID_STATE_DUMP 0xC0104E75u
#define DEVICE_GET_ALL_APPS_INFO 0x80084E07u
struct app_info {
    int32_t pid; uint8_t nc_lock_map; uint8_t uuid[4][32]; uint8_t pad[3];
    uint64_t host_mem_size, device_mem_size;
};
struct apps_info { uint16_t flags, pad0; uint32_t capacity, size, pad1; struct app_info e[4]; };
/* The simulator-only hint query (nrt-abi sim.rs: SIM_HINTS; a real driver refuses it). */
#define SIM_HINTS 0xC0D04EE0u
#define SIM_HINTS_MAGIC 0x4D49534Eu

static int xioctl(int fd, unsigned long code, void *arg) {
    int rc = ioctl(fd, code, arg);
    return rc < 0 ? -errno : rc;
}

static int bar_write(int fd, uint64_t addr, uint32_t v) {
    struct bar_rw b = { .bar = 0, .address = (uint64_t)(uintptr_t)&addr, .data = (uint64_t)(uintptr_t)&v, .count = 1 };
    return xioctl(fd, BAR_WRITE, &b);
}

static int probe(int fd, uint32_t ring_bytes) {
    /* Each call before its print: argument evaluation order is unspecified. */
    struct driver_info di = {0};
    int rc = xioctl(fd, DRIVER_INFO_GET, &di);
    printf("driver_info: %d arch %u size %u features 0x%llx\n", rc, di.architecture, di.size,
           (unsigned long long)di.feature_flags1);
    struct device_info dev = {0};
    rc = xioctl(fd, DEVICE_INFO, &dev);
    printf("device_info: %d arch %u bar0 0x%llx size 0x%llx\n", rc, dev.architecture,
           (unsigned long long)dev.bar_address[0], (unsigned long long)dev.bar_size[0]);
    struct compat cv = {0};
    rc = xioctl(fd, COMPATIBLE_VERSION, &cv);
    printf("compatible_version: %d max %u min %u\n", rc, cv.max, cv.min);
    struct copy_start cs = { 0, 0, 1, 1 };
    printf("copy_start_before_init: %d\n", xioctl(fd, DMA_QUEUE_COPY_START, &cs));
    struct nq_init bad = { .nq_dev_id = 0, .nq_type = 1, .engine_index = 80, .size = ring_bytes, .on_host_memory = 1 };
    printf("slot_past_block: %d\n", xioctl(fd, NOTIFICATIONS_INIT_V2, &bad));
    struct sema s256 = { 0, 256, 1 };
    printf("semaphore_256: %d\n", xioctl(fd, SEMAPHORE_INCREMENT, &s256));
    struct nq_init nq = { .nq_dev_id = 0, .nq_type = 1, .engine_index = 4, .size = ring_bytes, .on_host_memory = 1 };
    rc = xioctl(fd, NOTIFICATIONS_INIT_V2, &nq);
    printf("nq_init: %d offset 0x%llx handle %llu\n", rc, (unsigned long long)nq.mmap_offset,
           (unsigned long long)nq.mem_handle);
    if (rc != 0) return 1;
    volatile uint64_t *ring = mmap(NULL, ring_bytes, PROT_READ, MAP_SHARED, fd, (off_t)nq.mmap_offset);
    if (ring == MAP_FAILED) { printf("mmap: %s\n", strerror(errno)); return 1; }
    /* The host trigger is where the simulator's hint query says (a real driver names none). */
    struct sim_hints th = { .size = sizeof th };
    rc = xioctl(fd, SIM_HINTS, &th);
    printf("host_trigger: %d\n", rc ? rc : bar_write(fd, dev.bar_address[0] + th.host_trigger, 1));
    struct sema kick = { 0, 0, 1 };
    printf("kickoff: %d\n", xioctl(fd, SEMAPHORE_INCREMENT, &kick));
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t w = 0;
    do {
        w = ring[0];
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (w == 0 && (t.tv_sec - t0.tv_sec) < 3);
    printf("ring_slot0: 0x%016llx\n", (unsigned long long)w);
    /* The heartbeat and core 1's barrier-proxy status (Line 1) from the simulator's hint query. */
    struct sim_hints h = { .size = sizeof h };
    rc = xioctl(fd, SIM_HINTS, &h);
    printf("heartbeat: %d nonzero %d magic %d\n", rc, h.heartbeat_ns != 0, h.magic == SIM_HINTS_MAGIC);
    printf("barrier_fail_core1: %d %u\n", rc, h.lines[1][1]);
    /* A tail-increment register of engine 0 queue 0 (M2S bank +0x1000, +0x38): refused. */
    printf("tail_inc_write: %d\n", bar_write(fd, dev.bar_address[0] + 0x30000000u + 0x1000u + 0x38u, 1));
    /* A Neuron request on another descriptor runs natively: the kernel's ENOTTY. */
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct device_info scratch;
    rc = xioctl(null, DEVICE_INFO, &scratch);
    printf("other_fd_ioctl: %d\n", rc);
    close(null);
    munmap((void *)ring, ring_bytes);
    return 0;
}

static int bug(int fd) {
    uint64_t tx = 0, rx = 0;
    struct mem_alloc a = { .size = 4096, .host_memory = 1, .mem_handle_ptr = (uint64_t)(uintptr_t)&tx };
    int rc = xioctl(fd, MEM_ALLOC_V2MT, &a);
    printf("alloc_tx: %d handle %llu\n", rc, (unsigned long long)tx);
    a.mem_handle_ptr = (uint64_t)(uintptr_t)&rx;
    rc = xioctl(fd, MEM_ALLOC_V2MT, &a);
    printf("alloc_rx: %d handle %llu\n", rc, (unsigned long long)rx);
    struct queue_init qi = { 0, 0, 64, 64, tx, rx, 0, 0, 0 };
    printf("queue_init: %d\n", xioctl(fd, DMA_QUEUE_INIT, &qi));
    fflush(stdout);
    struct copy_start cs = { 0, 0, 1, 0 };
    printf("copy_start_rx0: %d\n", xioctl(fd, DMA_QUEUE_COPY_START, &cs));
    return 0;
}

/* A host chunk of `size` bytes, allocated, described and mapped. */
static volatile uint8_t *chunk(int fd, uint64_t size, uint64_t *handle, uint64_t *pa) {
    struct mem_alloc a = { .size = size, .align = 0, .host_memory = 1, .mem_type = 17,
                           .mem_handle_ptr = (uint64_t)(uintptr_t)handle };
    if (xioctl(fd, MEM_ALLOC_V2MT, &a) != 0) return NULL;
    struct mem_info mi = { .mem_handle = *handle, .version = 1 };
    if (xioctl(fd, MEM_GET_EXTENDED_INFO, &mi) != 0) return NULL;
    *pa = mi.pa;
    void *p = mmap(NULL, mi.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)mi.mmap_offset);
    return p == MAP_FAILED ? NULL : (volatile uint8_t *)p;
}

/* BD `i` of a ring: len_ctrl (length [15:0], ring id 1 at [25:24]), meta_ctrl, buf_ptr (core's bd.rs). */
static void put_bd(volatile uint8_t *ring, unsigned i, uint32_t len, uint64_t addr) {
    volatile uint32_t *w = (volatile uint32_t *)(ring + 16u * i);
    w[0] = (len & 0xFFFFu) | (1u << 24);
    w[1] = 0;
    *(volatile uint64_t *)(ring + 16u * i + 8) = addr;
}

static int copy(int fd) {
    uint64_t th = 0, rh = 0, bh = 0, tpa = 0, rpa = 0, bpa = 0;
    volatile uint8_t *tx = chunk(fd, 4096, &th, &tpa), *rx = chunk(fd, 4096, &rh, &rpa);
    volatile uint8_t *buf = chunk(fd, 3 * 4096, &bh, &bpa);
    printf("chunks: %s\n", tx && rx && buf ? "ok" : strerror(errno));
    if (!tx || !rx || !buf) return 1;
    struct queue_init qi = { 0, 0, 64, 64, th, rh, 0, 0, 0 };
    printf("queue_init: %d\n", xioctl(fd, DMA_QUEUE_INIT, &qi));
    for (unsigned i = 0; i < 4096; i++) {
        buf[i] = (uint8_t)(i * 131 % 251);
        buf[4096 + i] = 0;
        buf[8192 + i] = 0xEE;
    }
    put_bd(tx, 0, 3000, bpa);
    put_bd(tx, 1, 1096, bpa + 3000);
    put_bd(rx, 0, 3000, bpa + 4096);
    put_bd(rx, 1, 1096, bpa + 4096 + 3000);
    struct copy_start cs = { 0, 0, 2, 2 };
    printf("copy_start: %d\n", xioctl(fd, DMA_QUEUE_COPY_START, &cs));
    int same = 1, guard = 1;
    for (unsigned i = 0; i < 4096; i++) {
        same &= buf[4096 + i] == buf[i];
        guard &= buf[8192 + i] == 0xEE;
    }
    printf("copied: %s guard %s\n", same ? "verified" : "MISMATCH", guard ? "intact" : "written");
    /* A destination that is no chunk (below the pool): the device's DMA error, nothing written. */
    put_bd(tx, 2, 16, bpa + 8192);
    put_bd(rx, 2, 16, 0x1000);
    struct copy_start bad = { 0, 0, 1, 1 };
    printf("copy_start_outside: %d\n", xioctl(fd, DMA_QUEUE_COPY_START, &bad));
    struct queue_state ts = {0}, rs = {0};
    struct queue_get_state gs = { 0, 0, (uint64_t)(uintptr_t)&ts, (uint64_t)(uintptr_t)&rs };
    int rc = xioctl(fd, DMA_QUEUE_GET_STATE, &gs);
    printf("queue_state: %d tx head %u rx head %u length %u\n", rc, ts.head_pointer, rs.head_pointer, rs.length);
    return 0;
}

static int bar_read(int fd, uint64_t addr, uint32_t *word) {
    struct bar_rw b = { .bar = 0, .address = (uint64_t)(uintptr_t)&addr, .data = (uint64_t)(uintptr_t)word, .count = 1 };
    return xioctl(fd, BAR_READ, &b);
}

/* BAR accesses on sunda the driver performs unchecked, inside and outside
 * the device map's windows (tests/driver.rs checks which the model records
 * as conformance violations). */
static int bars(int fd) {
    struct device_info dev = {0};
    int rc = xioctl(fd, DEVICE_INFO, &dev);
    if (rc != 0 || dev.architecture != 2) return 1;
    uint64_t bar = dev.bar_address[0];
    uint32_t word = 0xFFFFFFFFu;
    /* The simulator's old status window (0x3060_0000 - 0x1000, +0x48): no window of the map. */
    rc = bar_read(fd, bar + 0x30600000u - 0x1000u + 0x48u, &word);
    printf("old_window_word: %d %u\n", rc, word);
    /* NC0's NOTIFIC block, HEAD of slot 4 (0x3053_5000 + 0x10C + 4 * 0x28): named. */
    printf("head_write: %d\n", bar_write(fd, bar + 0x30535000u + 0x10Cu + 4u * 0x28u, 0));
    /* NC0's TPB semaphore block (0x270_0000), SET of semaphore 0 (+0x1400). */
    printf("tpb_sema_write: %d\n", bar_write(fd, bar + 0x2700000u + 0x1400u, 1));
    /* Top-SP 0's SEMAPHORE resource (0x1000_0000), +0x15A0: SET of its semaphore 104. */
    printf("top_sp_sema_write: %d\n", bar_write(fd, bar + 0x10000000u + 0x15A0u, 1));
    /* The simulator's INTC cause (NOTIFIC + 0x2_0000, line 61 * 0x40) and host trigger (top-SP 0 + 0x2000 + 0x15A0). */
    printf("intc_read: %d\n", bar_read(fd, bar + 0x30535000u + 0x20000u + 61u * 0x40u, &word));
    printf("trigger_write: %d\n", bar_write(fd, bar + 0x10000000u + 0x2000u + 0x15A0u, 1));
    return 0;
}

/* The device's core count and ring entries from the simulator's hint query. */
static int window(int fd) {
    struct device_info dev = {0};
    int rc = xioctl(fd, DEVICE_INFO, &dev);
    struct sim_hints h = { .size = sizeof h };
    if (rc == 0) rc = xioctl(fd, SIM_HINTS, &h);
    printf("window: %d arch %u cores %u ring_entries %u\n", rc, dev.architecture, h.model_cores, h.ring_entries);
    return rc != 0;
}

/* The ownership sequence of a runtime on core 0 (the driver's rules: neuron_crwl.c). */
static int own(int fd) {
    struct crwl zero = { 0 }, m = { .nc_id = 0 };
    memset(m.uuid, 0x5A, sizeof m.uuid);
    printf("reader_enter_uuid0: %d\n", xioctl(fd, CRWL_READER_ENTER, &zero));
    struct nc_map r = { .nc_count = 1, .start = 0, .end = 1 };
    int rc = xioctl(fd, CRWL_NC_RANGE_MARK, &r);
    printf("range_mark: %d bitmap %llu\n", rc, (unsigned long long)r.bitmap);
    printf("writer_enter: %d\n", xioctl(fd, CRWL_WRITER_ENTER, &m));
    printf("writer_downgrade: %d\n", xioctl(fd, CRWL_WRITER_DOWNGRADE, &m));
    printf("reader_enter: %d\n", xioctl(fd, CRWL_READER_ENTER, &m));
    printf("reader_exit: %d\n", xioctl(fd, CRWL_READER_EXIT, &m));
    printf("reader_exit_downgraded: %d\n", xioctl(fd, CRWL_READER_EXIT, &m));
    printf("reader_exit_at_zero: %d\n", xioctl(fd, CRWL_READER_EXIT, &m));
    printf("writer_enter_again: %d\n", xioctl(fd, CRWL_WRITER_ENTER, &m));
    printf("writer_downgrade_again: %d\n", xioctl(fd, CRWL_WRITER_DOWNGRADE, &m));
    printf("reader_exit_last: %d\n", xioctl(fd, CRWL_READER_EXIT, &m));
    struct nc_map u = { .bitmap = r.bitmap };
    printf("range_unmark: %d\n", xioctl(fd, CRWL_NC_RANGE_UNMARK, &u));
    return 0;
}

/* Two processes, one driver: the second's range mark of a held core is EBUSY. */
static int twoproc(int fd) {
    int ready[2], done[2];
    if (pipe(ready) != 0 || pipe(done) != 0) return 1;
    pid_t child = fork();
    if (child < 0) return 1;
    char c = 0;
    if (child == 0) {
        struct nc_map r = { .nc_count = 1, .start = 0, .end = 0 };
        c = (char)(xioctl(fd, CRWL_NC_RANGE_MARK, &r) == 0 ? 'y' : 'n');
        if (write(ready[1], &c, 1) != 1) _exit(1);
        if (read(done[0], &c, 1) != 1) _exit(1);
        _exit(0);
    }
    if (read(ready[0], &c, 1) != 1) return 1;
    printf("child_marked: %c\n", c);
    struct nc_map r = { .nc_count = 1, .start = 0, .end = 0 };
    printf("parent_mark: %d max %u\n", xioctl(fd, CRWL_NC_RANGE_MARK, &r), r.max_available);
    struct pid_dump d = { .size = sizeof d, .nc_id = 0 };
    printf("pid_state_dump: %d\n", xioctl(fd, NC_PID_STATE_DUMP, &d));
    printf("child_pid: %d\n", (int)child);
    if (write(done[1], &c, 1) != 1) return 1;
    int st = 0;
    waitpid(child, &st, 0);
    return 0;
}

/* Marks core `nc` from a forked child through `fd` (or, with fd < 0, through
 * the child's own write-only descriptor); the child exits without unmarking. */
static char child_marks(int fd, uint32_t nc) {
    pid_t child = fork();
    if (child < 0) return 'f';
    if (child == 0) {
        int cfd = fd >= 0 ? fd : open("/dev/neuron0", O_WRONLY | O_CLOEXEC);
        struct nc_map r = { .nc_count = 1, .start = nc, .end = nc };
        _exit(cfd >= 0 && xioctl(cfd, CRWL_NC_RANGE_MARK, &r) == 0 ? 0 : 1);
    }
    int st = 0;
    if (waitpid(child, &st, 0) != child) return 'w';
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 'y' : 'n';
}

static int free_access(int fd) {
    int w = open("/dev/neuron0", O_WRONLY | O_CLOEXEC);
    printf("wronly_open: %s\n", w < 0 ? strerror(errno) : "ok");
    if (w < 0) return 1;
    struct driver_info di = {0};
    printf("wronly_driver_info: %d\n", xioctl(w, DRIVER_INFO_GET, &di));
    struct compat cv = {0};
    printf("wronly_compatible_version: %d\n", xioctl(w, COMPATIBLE_VERSION, &cv));
    struct device_info dev = {0};
    printf("wronly_device_info: %d\n", xioctl(w, DEVICE_INFO, &dev));
    struct crwl m = { .nc_id = 0 };
    memset(m.uuid, 0x5A, sizeof m.uuid);
    printf("wronly_writer_enter: %d\n", xioctl(w, CRWL_WRITER_ENTER, &m));
    struct nc_map r = { .nc_count = 1, .start = 0, .end = 0 };
    int rc = xioctl(w, CRWL_NC_RANGE_MARK, &r);
    printf("wronly_range_mark: %d bitmap %llu\n", rc, (unsigned long long)r.bitmap);
    printf("rdwr_writer_enter: %d\n", xioctl(fd, CRWL_WRITER_ENTER, &m));
    struct apps_info a = { .flags = 1, .capacity = 4 };
    rc = xioctl(fd, DEVICE_GET_ALL_APPS_INFO, &a);
    printf("apps_info: %d size %u self %d lock_map %u uuid %u\n", rc, a.size,
           a.size >= 1 && a.e[0].pid == getpid(), a.e[0].nc_lock_map, a.e[0].uuid[0][0]);
    struct apps_info b = { .flags = 1, .capacity = 4 };
    printf("wronly_apps_info: %d\n", xioctl(w, DEVICE_GET_ALL_APPS_INFO, &b));
    /* Two pages, the second inaccessible: a struct that starts 16 bytes
     * before it is copied in part; one at its start not at all. */
    char *pg = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pg == MAP_FAILED || mprotect(pg + 4096, 4096, PROT_NONE) != 0) return 1;
    printf("mem_alloc_straddling: %d\n", xioctl(fd, MEM_ALLOC_V2MT, pg + 4096 - 16));
    printf("queue_init_unreadable: %d\n", xioctl(fd, DMA_QUEUE_INIT, pg + 4096));
    printf("wronly_queue_init_unreadable: %d\n", xioctl(w, DMA_QUEUE_INIT, pg + 4096));
    struct nc_map u = { .bitmap = 1 };
    printf("wronly_range_unmark: %d\n", xioctl(w, CRWL_NC_RANGE_UNMARK, &u));
    printf("child_wronly_marks: %c\n", child_marks(-1, 1));
    struct nc_map r1 = { .nc_count = 1, .start = 1, .end = 1 };
    printf("mark_after_wronly_child: %d\n", xioctl(fd, CRWL_NC_RANGE_MARK, &r1));
    printf("child_rdwr_marks: %c\n", child_marks(fd, 0));
    struct nc_map r0 = { .nc_count = 1, .start = 0, .end = 0 };
    printf("mark_after_rdwr_child: %d\n", xioctl(fd, CRWL_NC_RANGE_MARK, &r0));
    close(w);
    return 0;
}

/* "ok" or the errno's name, of a call that returned `rc` (-1: failed). */
static const char *res(long rc) {
    if (rc != -1) return "ok";
    switch (errno) {
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    case EACCES: return "EACCES";
    case EBADF: return "EBADF";
    case ENODEV: return "ENODEV";
    default: return strerror(errno);
    }
}

static const char *map_res(int fd, uint64_t off, uint64_t len, int prot) {
    void *p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)off);
    if (p == MAP_FAILED) return res(-1);
    munmap(p, len);
    return "ok";
}

static int fops(int fd) {
    printf("fd_in_range: %d\n", fd >= 960 && fd < 1024);
    uint64_t ha = 0, hb = 0;
    struct mem_alloc a = { .size = 3 * 4096, .host_memory = 1, .mem_type = 17,
                           .mem_handle_ptr = (uint64_t)(uintptr_t)&ha };
    struct mem_alloc b = { .size = 4096, .host_memory = 1, .mem_type = 17,
                           .mem_handle_ptr = (uint64_t)(uintptr_t)&hb };
    if (xioctl(fd, MEM_ALLOC_V2MT, &a) != 0 || xioctl(fd, MEM_ALLOC_V2MT, &b) != 0) return 1;
    struct mem_info ia = { .mem_handle = ha, .version = 1 }, ib = { .mem_handle = hb, .version = 1 };
    if (xioctl(fd, MEM_GET_EXTENDED_INFO, &ia) != 0 || xioctl(fd, MEM_GET_EXTENDED_INFO, &ib) != 0) return 1;
    uint64_t A = ia.mmap_offset;
    printf("adjacent: %d\n", ib.mmap_offset == A + 3 * 4096);
    int rw = PROT_READ | PROT_WRITE;
    printf("map_whole: %s\n", map_res(fd, A, 3 * 4096, rw));
    printf("map_part: %s\n", map_res(fd, A, 4096, rw));
    printf("map_middle: %s\n", map_res(fd, A + 4096, 4096, rw));
    printf("map_middle_whole_length: %s\n", map_res(fd, A + 4096, 3 * 4096, rw));
    printf("map_across_two: %s\n", map_res(fd, A, 4 * 4096, rw));
    printf("map_offset_0: %s\n", map_res(fd, 0, 4096, rw));
    volatile uint8_t *m = mmap(NULL, 3 * 4096, rw, MAP_SHARED, fd, (off_t)A);
    if (m == MAP_FAILED) return 1;
    m[0] = 0x5A;
    m[1] = 0x5A;
    char buf[4] = { 'X', 'X', 'X', 'X' };
    lseek(fd, (off_t)A, SEEK_SET);
    printf("write: %s\n", res(write(fd, buf, sizeof buf)));
    printf("read: %s\n", res(read(fd, buf, sizeof buf)));
    printf("pwrite: %s\n", res(pwrite(fd, buf, sizeof buf, (off_t)A)));
    printf("ftruncate: %s\n", res(ftruncate(fd, 0)));
    printf("fallocate: %s\n", res(fallocate(fd, 0, 0, 4096)));
    int d = dup(fd);
    printf("dup_in_range: %d\n", d >= 960 && d < 1024);
    printf("dup_write: %s\n", res(write(d, buf, sizeof buf)));
    int c = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    printf("dupfd_in_range: %d cloexec %d\n", c >= 960 && c < 1024, (fcntl(c, F_GETFD) & FD_CLOEXEC) != 0);
    printf("dupfd_write: %s\n", res(write(c, buf, sizeof buf)));
    printf("dup_map_part: %s\n", map_res(c, A, 4096, rw));
    printf("unchanged: %d\n", m[0] == 0x5A && m[1] == 0x5A && buf[0] == 'X');
    int ro = open("/dev/neuron0", O_RDONLY | O_CLOEXEC);
    printf("ro_map_write: %s\n", map_res(ro, A, 3 * 4096, rw));
    printf("ro_map_read: %s\n", map_res(ro, A, 3 * 4096, PROT_READ));
    printf("ro_write: %s\n", res(write(ro, buf, 1)));
    int wo = open("/dev/neuron0", O_WRONLY | O_CLOEXEC);
    printf("wo_map: %s\n", map_res(wo, A, 3 * 4096, PROT_READ));
    printf("wo_read: %s\n", res(read(wo, buf, 1)));
    printf("wo_write: %s\n", res(write(wo, buf, 1)));
    /* Another file moved into the reserved numbers is served natively. */
    int pfd[2];
    if (pipe(pfd) != 0 || dup2(pfd[1], 1000) != 1000) return 1;
    char got = 0;
    const char *w = res(write(1000, "y", 1));
    const char *r = res(read(pfd[0], &got, 1));
    printf("other_in_range: %s %s %c\n", w, r, got);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int fd = open("/dev/neuron0", O_RDWR | O_CLOEXEC);
    printf("open: %s\n", fd < 0 ? strerror(errno) : "ok");
    if (fd < 0) return 3;
    int other = open("/dev/neuron1", O_RDWR);
    printf("open_neuron1: %s\n", other < 0 ? strerror(errno) : "ok");
    int rc = 2;
    if (argc >= 3 && strcmp(argv[1], "probe") == 0) rc = probe(fd, (uint32_t)strtoul(argv[2], NULL, 0));
    else if (argc >= 2 && strcmp(argv[1], "bug") == 0) rc = bug(fd);
    else if (argc >= 2 && strcmp(argv[1], "window") == 0) rc = window(fd);
    else if (argc >= 2 && strcmp(argv[1], "bar") == 0) rc = bars(fd);
    else if (argc >= 2 && strcmp(argv[1], "copy") == 0) rc = copy(fd);
    else if (argc >= 2 && strcmp(argv[1], "own") == 0) rc = own(fd);
    else if (argc >= 2 && strcmp(argv[1], "twoproc") == 0) rc = twoproc(fd);
    else if (argc >= 2 && strcmp(argv[1], "free") == 0) rc = free_access(fd);
    else if (argc >= 2 && strcmp(argv[1], "fops") == 0) rc = fops(fd);
    close(fd);
    return rc;
}
