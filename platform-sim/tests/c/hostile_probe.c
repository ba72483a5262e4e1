/* A hostile COMMAND for `nrt-sim driver -- hostile_probe MODE ...`: each mode
 * does one thing a careless or hostile process may do to the supervisor, and
 * prints `key: value` lines for tests/hostile.rs to check.
 *
 *   uffd              a page registered with userfaultfd that nobody serves:
 *                     one thread opens a path that lies in it (and waits on
 *                     it for ever), then the main thread opens /dev/neuron0,
 *                     makes a DRIVER_INFO_GET, one whose argument lies in
 *                     the page, a BAR_READ whose address array lies in it and
 *                     a MEM_ALLOC_V2MT whose handle pointer does; exits 0;
 *   uffd-hold         the same page: the main thread opens a path in it and
 *                     never comes back (for --limit-s);
 *   orphans FILE END  a child and a grandchild, each after setsid(), write
 *                     "pid starttime" to FILE and sleep for ever; then END:
 *                     `exit` (exit 0), `sleep` (for ever), `bug` (a kernel
 *                     BUG: BAR_READ of an address outside BAR0);
 *   pid FILE          writes its pid to FILE and sleeps for ever;
 *   bug               prints a healthy status, then a kernel BUG (BAR_READ of
 *                     an address outside BAR0);
 *   flood N           N requests the model does not serve (each refused EINVAL);
 *   attach N          N children open /dev/neuron0 and hold it; once all have
 *                     answered they exit, and then this process opens it;
 *   reuse             a thread makes a call and exits; a child is forked with
 *                     that thread's id (clone3 set_tid) and makes a call that
 *                     needs the opener (DMA_QUEUE_RELEASE: EACCES for it) and
 *                     then a kernel BUG (BAR_READ outside BAR0);
 *   reuse-pid         a child opens /dev/neuron0 and exits; another child,
 *                     forked with its pid, makes that call on this process's
 *                     descriptor (EACCES: the opener is gone).
 *
 * A mode the kernel refuses (userfaultfd, clone3 set_tid) prints
 * `SKIPPED: <call>: <errno name>` and exits 77. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct driver_info { uint32_t architecture, revision, version, size; uint64_t feature_flags1; };
struct bar_rw { uint32_t bar, pad0; uint64_t address, data; uint32_t count, pad1; };
struct queue_release { uint32_t eng_id, qid; };
struct mem_alloc {
    uint64_t size, align;
    uint32_t host_memory, dram_channel, dram_region, nc_id, mem_type, pad;
    uint64_t mem_handle_ptr;
};

#define DRIVER_INFO_GET 0x80184E6Eu
#define BAR_READ 0x80084E0Bu
#define DMA_QUEUE_RELEASE 0x80084E22u
#define MEM_ALLOC_V2MT 0x80304E66u
/* _IOR('N', 250, uint64_t): no such request (the model refuses it, EINVAL). */
#define NO_SUCH_REQUEST 0x80084EFAu

static int xioctl(int fd, unsigned long code, void *arg) {
    int rc = ioctl(fd, code, arg);
    return rc < 0 ? -errno : rc;
}

static void forever(void) {
    for (;;) pause();
}

static int open_device(void) {
    int fd = open("/dev/neuron0", O_RDWR | O_CLOEXEC);
    printf("open: %s\n", fd >= 0 ? "ok" : strerror(errno));
    fflush(stdout);
    return fd;
}

/* A kernel BUG: BAR_READ of an address below BAR0 (the read is unchecked). */
static int bar_read_outside(int fd) {
    uint64_t addr = 0x10;
    uint32_t v = 0;
    struct bar_rw b = { .bar = 0, .address = (uint64_t)(uintptr_t)&addr, .data = (uint64_t)(uintptr_t)&v, .count = 1 };
    return xioctl(fd, BAR_READ, &b);
}

/* A page registered with userfaultfd (missing faults) that nobody serves. */
static char *unserved_page(void) {
    int u = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (u < 0) {
        printf("SKIPPED: userfaultfd: %s (errno %d)\n", strerrorname_np(errno), errno);
        exit(77);
    }
    struct uffdio_api api = { .api = UFFD_API };
    if (ioctl(u, UFFDIO_API, &api) != 0) {
        printf("SKIPPED: UFFDIO_API: %s (errno %d)\n", strerrorname_np(errno), errno);
        exit(77);
    }
    char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { printf("mmap: %s\n", strerror(errno)); exit(1); }
    struct uffdio_register r = { .range = { .start = (uintptr_t)p, .len = 4096 }, .mode = UFFDIO_REGISTER_MODE_MISSING };
    if (ioctl(u, UFFDIO_REGISTER, &r) != 0) {
        printf("SKIPPED: UFFDIO_REGISTER: %s (errno %d)\n", strerrorname_np(errno), errno);
        exit(77);
    }
    return p;
}

static void *open_in_page(void *page) {
    printf("thread_open: started\n");
    fflush(stdout);
    int fd = open((const char *)page, O_RDONLY);
    printf("thread_open: returned %d\n", fd); /* never: the page never comes */
    return NULL;
}

static int uffd(void) {
    char *page = unserved_page();
    pthread_t t;
    if (pthread_create(&t, NULL, open_in_page, page) != 0) return 1;
    struct timespec ms = { 0, 100 * 1000 * 1000 };
    nanosleep(&ms, NULL);
    int fd = open_device();
    if (fd < 0) return 1;
    struct driver_info di = { 0 };
    int rc = xioctl(fd, DRIVER_INFO_GET, &di);
    printf("driver_info: %d arch %u\n", rc, di.architecture);
    fflush(stdout);
    rc = xioctl(fd, DRIVER_INFO_GET, page + 64);
    printf("ioctl_arg_in_page: %d\n", rc);
    fflush(stdout);
    /* Pointers inside the argument: an array the model reads, a handle it writes. */
    uint32_t v = 0;
    struct bar_rw b = { .bar = 0, .address = (uint64_t)(uintptr_t)(page + 256), .data = (uint64_t)(uintptr_t)&v, .count = 1 };
    printf("bar_read_addresses_in_page: %d\n", xioctl(fd, BAR_READ, &b));
    fflush(stdout);
    struct mem_alloc a = { .size = 4096, .host_memory = 1, .mem_handle_ptr = (uint64_t)(uintptr_t)(page + 512) };
    printf("mem_alloc_handle_in_page: %d\n", xioctl(fd, MEM_ALLOC_V2MT, &a));
    rc = xioctl(fd, DRIVER_INFO_GET, &di);
    printf("driver_info_after: %d arch %u\n", rc, di.architecture);
    fflush(stdout);
    return 0;
}

static int uffd_hold(void) {
    char *page = unserved_page();
    printf("open_in_page: calling\n");
    fflush(stdout);
    int fd = open(page, O_RDONLY);
    printf("open_in_page: returned %d\n", fd);
    return 0;
}

static void record(const char *file) {
    char stat[1024];
    int s = open("/proc/self/stat", O_RDONLY);
    ssize_t n = s >= 0 ? read(s, stat, sizeof stat - 1) : -1;
    if (n <= 0) _exit(1);
    stat[n] = 0;
    char *p = strrchr(stat, ')');
    unsigned long long start = 0;
    /* Field 22 (starttime) is the 20th after the command name. */
    for (int f = 0; p && f < 20; f++) p = strchr(p + 1, ' ');
    if (p) start = strtoull(p + 1, NULL, 10);
    char line[64];
    int len = snprintf(line, sizeof line, "%d %llu\n", getpid(), start);
    int o = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (o < 0 || write(o, line, (size_t)len) != len) _exit(1);
    close(o);
}

static int lines_in(const char *file) {
    FILE *f = fopen(file, "r");
    if (!f) return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

static int orphans(const char *file, const char *end) {
    pid_t c = fork();
    if (c < 0) return 1;
    if (c == 0) {
        setsid();
        pid_t g = fork();
        if (g == 0) {
            setsid();
            record(file);
            forever();
        }
        record(file);
        forever();
    }
    /* Wait for both lines (bounded: 10 s of 10 ms naps). */
    for (int i = 0; i < 1000 && lines_in(file) < 2; i++) {
        struct timespec t = { 0, 10 * 1000 * 1000 };
        nanosleep(&t, NULL);
    }
    printf("orphans: %d\n", lines_in(file));
    fflush(stdout);
    if (strcmp(end, "sleep") == 0) forever();
    if (strcmp(end, "bug") == 0) {
        int fd = open_device();
        printf("bar_read_outside: %d\n", bar_read_outside(fd)); /* never, under --strict */
    }
    return 0;
}

static int pid_file(const char *file) {
    FILE *f = fopen(file, "w");
    if (!f) return 1;
    fprintf(f, "%d\n", getpid());
    fclose(f);
    forever();
    return 0;
}

static int flood(long n) {
    int fd = open_device();
    if (fd < 0) return 1;
    long refused = 0;
    uint64_t arg = 0;
    for (long i = 0; i < n; i++) refused += xioctl(fd, NO_SUCH_REQUEST, &arg) == -EINVAL;
    printf("flood: %ld refused %ld\n", n, refused);
    return 0;
}

static int attach(int n) {
    int answers[2], go[2];
    if (pipe(answers) != 0 || pipe(go) != 0) return 1;
    for (int i = 0; i < n; i++) {
        pid_t c = fork();
        if (c < 0) return 1;
        if (c == 0) {
            close(go[1]);
            int fd = open("/dev/neuron0", O_RDWR | O_CLOEXEC);
            char r = fd >= 0 ? 'o' : errno == EBUSY ? 'b' : 'e';
            if (write(answers[1], &r, 1) != 1) _exit(1);
            char x;
            while (read(go[0], &x, 1) > 0) {} /* until the parent closes it */
            _exit(0);
        }
    }
    close(go[0]);
    int ok = 0, busy = 0, other = 0;
    for (int i = 0; i < n; i++) {
        char r = 0;
        if (read(answers[0], &r, 1) != 1) break;
        ok += r == 'o';
        busy += r == 'b';
        other += r == 'e';
    }
    printf("attach: ok %d busy %d other %d\n", ok, busy, other);
    close(go[1]);
    for (int i = 0; i < n; i++) wait(NULL);
    int fd = open("/dev/neuron0", O_RDWR | O_CLOEXEC);
    printf("open_after: %s\n", fd >= 0 ? "ok" : strerror(errno));
    return 0;
}

static pid_t thread_tid;
static int device_fd;

static void *call_and_exit(void *unused) {
    (void)unused;
    struct driver_info di = { 0 };
    thread_tid = (pid_t)syscall(SYS_gettid);
    printf("thread_call: %d\n", xioctl(device_fd, DRIVER_INFO_GET, &di));
    fflush(stdout);
    return NULL;
}

/* struct clone_args up to set_tid_size (CLONE_ARGS_SIZE_VER1, linux/sched.h). */
struct clone_args_v1 {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size;
};

/* fork() with the child's pid chosen: `want` (clone3 set_tid). An id just
 * freed is free once the kernel has released it: retried a bounded number of
 * times. Exits 77 (SKIPPED) when the kernel refuses. */
static long fork_as(pid_t want) {
    struct clone_args_v1 ca = { 0 };
    ca.exit_signal = SIGCHLD;
    ca.set_tid = (uint64_t)(uintptr_t)&want;
    ca.set_tid_size = 1;
    long pid = -1;
    for (int i = 0; i < 2000; i++) {
        pid = syscall(SYS_clone3, &ca, sizeof ca);
        if (pid >= 0 || errno != EEXIST) break;
        struct timespec ms = { 0, 1000 * 1000 };
        nanosleep(&ms, NULL);
    }
    if (pid < 0) {
        printf("SKIPPED: clone3 set_tid %d: %s (errno %d)\n", want, strerrorname_np(errno), errno);
        exit(77);
    }
    return pid;
}

/* An opener exits; a child of this process (which opened too, for the
 * descriptor the child inherits) gets the opener's pid and makes a call that
 * needs the opener. */
static int reuse_pid(void) {
    int fd = open_device();
    if (fd < 0) return 1;
    pid_t a = fork();
    if (a < 0) return 1;
    if (a == 0) {
        int own = open("/dev/neuron0", O_RDWR | O_CLOEXEC);
        _exit(own >= 0 ? 0 : 1);
    }
    int st = 0;
    waitpid(a, &st, 0);
    printf("opener_exit: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    fflush(stdout);
    long b = fork_as(a);
    if (b == 0) {
        struct queue_release r = { 0, 0 };
        printf("same_pid_release: %d\n", xioctl(fd, DMA_QUEUE_RELEASE, &r));
        fflush(stdout);
        _exit(0);
    }
    waitpid((pid_t)b, &st, 0);
    printf("pids: %d %ld\n", a, b);
    return 0;
}

static int reuse(void) {
    device_fd = open_device();
    if (device_fd < 0) return 1;
    pthread_t t;
    if (pthread_create(&t, NULL, call_and_exit, NULL) != 0) return 1;
    pthread_join(t, NULL);
    pid_t want = thread_tid;
    long pid = fork_as(want);
    if (pid == 0) {
        struct queue_release r = { 0, 0 };
        printf("child_release: %d\n", xioctl(device_fd, DMA_QUEUE_RELEASE, &r));
        fflush(stdout);
        printf("child_bar_read_outside: %d\n", bar_read_outside(device_fd)); /* never, under --strict */
        fflush(stdout);
        _exit(0);
    }
    printf("opener: %d child: %ld thread: %d\n", getpid(), pid, want);
    fflush(stdout);
    int st = 0;
    waitpid((pid_t)pid, &st, 0);
    printf("child_status: %s %d\n", WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "uffd") == 0) return uffd();
    if (argc >= 2 && strcmp(argv[1], "uffd-hold") == 0) return uffd_hold();
    if (argc >= 4 && strcmp(argv[1], "orphans") == 0) return orphans(argv[2], argv[3]);
    if (argc >= 3 && strcmp(argv[1], "pid") == 0) return pid_file(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "flood") == 0) return flood(atol(argv[2]));
    if (argc >= 2 && strcmp(argv[1], "reuse") == 0) return reuse();
    if (argc >= 2 && strcmp(argv[1], "bug") == 0) {
        printf("status: 0 NRT_SUCCESS (ok)\none-step return: 0 (ok) after 1 steps\n");
        int fd = open_device();
        printf("bar_read_outside: %d\n", bar_read_outside(fd)); /* never, under --strict */
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "reuse-pid") == 0) return reuse_pid();
    if (argc >= 3 && strcmp(argv[1], "attach") == 0) return attach(atoi(argv[2]));
    fprintf(stderr, "usage: hostile_probe uffd | uffd-hold | orphans FILE exit|sleep|bug | pid FILE | flood N | reuse | reuse-pid | attach N | bug\n");
    return 2;
}
