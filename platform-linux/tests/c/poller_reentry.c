/* A lane's callback that calls its own poller: a wait on its ticket is
 * refused at once (-1, the reason on the poller thread's last error), a poll
 * answers "in flight", a submission is taken, and a free returns (deferred:
 * the thread ends by itself after the callback). The caller's thread waits on
 * both tickets, which are answered. Exits 0 only if all of that held; a
 * deadlock would be ended by the alarm, an abort would end the program. */
#define _DEFAULT_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "nrt.h"
#include "nrt_poller.h"

#define RING 1024u
#include "fake_rings.h"
#define NQ_ERROR 2
static const uint8_t INFER[5] = {4, 5, 6, 7, 8};
#define ALARM_S 60

static struct fake_dev dev;
static nrt_poller *_Atomic armed_poller;   /* set by the caller once its ticket is out */
static nrt_ticket *_Atomic armed_ticket;
/* What the callback saw, read by the caller after its ticket is answered. */
static int wait_rc = 99, poll_rc = 99, freed;
static char wait_error[512];
static nrt_ticket *submitted;

static uint64_t now_ns(void *c) {
    struct fake_dev *d = c;
    nrt_poller *pl = atomic_exchange(&armed_poller, NULL);
    if (pl) {
        nrt_ticket *t = atomic_load(&armed_ticket);
        uint32_t st = 77;
        wait_rc = nrt_ticket_wait(t, &st);
        const char *e = nrt_poller_last_error();
        snprintf(wait_error, sizeof wait_error, "%s (status %u)", e ? e : "(none)", st);
        poll_rc = nrt_ticket_poll(t, NULL);
        submitted = nrt_poller_submit(pl, 0, 2, 1, 30);
        nrt_poller_free(pl);
        freed = 1;
        /* The request in flight ends: START and END of the five engines. */
        for (int e2 = 0; e2 < 5; e2++) { fake_dev_push(d, INFER[e2], 2, 100 + e2); fake_dev_push(d, INFER[e2], 3, 200 + e2); }
    }
    return fake_dev_now_ns(c);
}

int main(void) {
    alarm(ALARM_S);
    int failures = 0;
    dev.tick_ns = 1000;
    nrt_platform p = fake_dev_platform(&dev);
    p.now_ns = now_ns;
    nrt_rings *r = nrt_rings_new();
    if (nrt_rings_bind(r, 0, NQ_ERROR, RING)) failures++;
    for (int e = 0; e < 5; e++) if (nrt_rings_bind(r, 0, INFER[e], RING)) failures++;
    const nrt_rings *rr[1] = { r };
    nrt_poller *pl = nrt_poller_new(&p, rr, 1, -1);
    if (!pl) { printf("nrt_poller_new: %s\n", nrt_poller_last_error()); return 1; }
    nrt_ticket *t = nrt_poller_submit(pl, 0, 2, 1, 30);   /* in flight until the callback */
    if (!t) { printf("nrt_poller_submit: %s\n", nrt_poller_last_error()); return 1; }
    atomic_store(&armed_ticket, t);
    atomic_store(&armed_poller, pl);                      /* pl is the callback's to free */

    uint32_t st = 99;
    int rc = nrt_ticket_wait(t, &st);
    printf("caller's wait: %d status %u\n", rc, st);
    if (rc != 0 || st != 0) failures++;
    printf("callback: free returned %d, wait %d: %s\n", freed, wait_rc, wait_error);
    if (!freed) failures++;
    if (wait_rc != -1 || strstr(wait_error, "would wait on itself") == NULL || strstr(wait_error, "status 77") == NULL) failures++;
    printf("callback: poll %d\n", poll_rc);
    if (poll_rc != 1) failures++;
    /* The submission from the callback came before the free, which closed
     * the poller before the thread took it: answered NRT_CLOSED. */
    if (!submitted) { printf("the callback's submission was refused\n"); failures++; }
    else {
        uint32_t s2 = 99;
        int rc2 = nrt_ticket_wait(submitted, &s2);
        printf("callback's submission: %d status %u %s\n", rc2, s2, nrt_status_name(s2));
        if (rc2 != 2 || s2 != 14) failures++;
        nrt_ticket_free(submitted);
    }
    nrt_ticket_free(t);
    nrt_rings_free(r);
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "ok", failures);
    return failures ? 1 : 0;
}
