/* fork() after init, through the C ABI, under `nrt-sim driver`: a session on
 * /dev/neuron0 that has run, a poller over one played lane with a request in
 * flight, its ticket and the lane's rings; then fork. The child calls each
 * inherited object: every call is refused at once naming the fork, the frees
 * release nothing, nothing hangs (an alarm is the backstop) or aborts; it
 * _exits with its count of failures. The parent then finishes its request,
 * runs and closes its session as before. Exits 0 only if all of that held. */
#define _DEFAULT_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "nrt.h"
#include "nrt_poller.h"

#define RING 1024u
#include "fake_rings.h"
#define NQ_ERROR 2
static const uint8_t INFER[5] = {4, 5, 6, 7, 8};
#define CHILD_ALARM_S 60
#define CHILD_BOUND_MS 60000

static struct fake_dev dev;
static atomic_int finish;  /* the parent lets the played request end */

/* The played clock; once `finish` is set, the five engines' START and END. */
static uint64_t now_ns(void *c) {
    struct fake_dev *d = c;
    if (atomic_exchange(&finish, 0))
        for (int e = 0; e < 5; e++) { fake_dev_push(d, INFER[e], 2, 100 + e); fake_dev_push(d, INFER[e], 3, 200 + e); }
    return fake_dev_now_ns(c);
}

static int failures;
static void check(int ok, const char *what, const char *said) {
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, said ? ": " : "", said ? said : "");
    fflush(stdout);
    if (!ok) failures++;
}
/* The reason names the fork: the maker's pid and this one. */
static int names_fork(const char *e, pid_t parent) {
    char want[96];
    snprintf(want, sizeof want, "made by pid %d, and this is pid %d, a child forked", (int)parent, (int)getpid());
    return e && strstr(e, want) != NULL;
}

/* `ok` (the call's own verdict), then its reason, read after the call: it names the fork. */
#define REFUSED(ok, last_error, what) do { \
        int ok_ = (ok); const char *e_ = last_error(); \
        check(ok_ && names_fork(e_, parent), what, e_); \
    } while (0)

static int child(nrt_session *s, nrt_poller *pl, nrt_ticket *t, nrt_rings *r, pid_t parent) {
    alarm(CHILD_ALARM_S);
    uint32_t st = 77;
    REFUSED(nrt_session_run(s, &st) == -1, nrt_session_last_error, "child: nrt_session_run refused");
    REFUSED(nrt_poller_submit(pl, 0, 2, 1, 5) == NULL, nrt_poller_last_error, "child: nrt_poller_submit refused");
    REFUSED(nrt_ticket_wait(t, &st) == -1 && st == 77, nrt_poller_last_error, "child: nrt_ticket_wait refused at once");
    REFUSED(nrt_ticket_poll(t, &st) == -1, nrt_poller_last_error, "child: nrt_ticket_poll refused");
    REFUSED(nrt_rings_bind(r, 0, 3, RING) == -1, nrt_session_last_error, "child: nrt_rings_bind refused");
    REFUSED(nrt_rings_set_head_batching(r, 1) == -1, nrt_poller_last_error, "child: nrt_rings_set_head_batching refused");
    nrt_platform p = fake_dev_platform(&dev);
    const nrt_rings *rr[1] = { r };
    REFUSED(nrt_poller_new(&p, rr, 1, -1) == NULL, nrt_poller_last_error, "child: nrt_poller_new on inherited rings refused");
    nrt_ticket_free(t);
    nrt_poller_free(pl);
    REFUSED(nrt_session_close(s) == -1, nrt_session_last_error, "child: nrt_session_close releases nothing");
    nrt_rings_free(r);
    return failures;
}

int main(void) {
    nrt_session *s = nrt_session_open("/dev/neuron0", 0, 0, 5);
    if (!s) { printf("nrt_session_open: %s\n", nrt_session_last_error()); return 1; }
    uint32_t st = 99;
    check(nrt_session_run(s, &st) == 0 && st == 0, "parent: first inference", NULL);

    dev.tick_ns = 1000;
    nrt_platform p = fake_dev_platform(&dev);
    p.now_ns = now_ns;
    nrt_rings *r = nrt_rings_new();
    if (nrt_rings_bind(r, 0, NQ_ERROR, RING)) failures++;
    for (int e = 0; e < 5; e++) if (nrt_rings_bind(r, 0, INFER[e], RING)) failures++;
    const nrt_rings *rr[1] = { r };
    nrt_poller *pl = nrt_poller_new(&p, rr, 1, -1);
    if (!pl) { printf("nrt_poller_new: %s\n", nrt_poller_last_error()); return 1; }
    nrt_ticket *t = nrt_poller_submit(pl, 0, 2, 1, 30);  /* in flight until `finish` */
    check(t != NULL, "parent: submit", NULL);
    check(nrt_ticket_poll(t, &st) == 1, "parent: in flight at the fork", NULL);

    pid_t parent = getpid();
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 1; }
    if (pid == 0) _exit(child(s, pl, t, r, parent));

    int status = 0, waited_ms = 0;
    while (waitpid(pid, &status, WNOHANG) != pid) {
        if (waited_ms >= CHILD_BOUND_MS) { kill(pid, SIGKILL); printf("the child did not end\n"); return 1; }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        waited_ms++;
    }
    if (WIFEXITED(status)) printf("child exit %d\n", WEXITSTATUS(status));
    else printf("child killed by signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : -1);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "parent: the child ended cleanly", NULL);

    atomic_store(&finish, 1);
    int rc = nrt_ticket_wait(t, &st);
    check(rc == 0 && st == 0, "parent: its request completes", NULL);
    rc = nrt_session_run(s, &st);
    check(rc == 0 && st == 0, "parent: an inference after the child", rc ? nrt_session_last_error() : NULL);
    nrt_ticket_free(t);
    nrt_poller_free(pl);
    nrt_rings_free(r);
    int closed = nrt_session_close(s);
    printf("parent: session closed %d%s%s\n", closed, closed ? ": " : "", closed ? nrt_session_last_error() : "");
    if (closed) failures++;
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "ok", failures);
    return failures ? 1 : 0;
}
