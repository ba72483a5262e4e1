/* Two sessions of one process on the same cores, through the C ABI: the first
 * opens core 0 of DEVICE, the second asks for it again and is refused; its
 * reason (nrt_session_last_error) is printed on standard output after this
 * process's pid, then the first is closed.
 * Usage: two_sessions DEVICE. Exits 0 when the second was refused, 1 when a
 * call went otherwise, 2 for a usage error. */
#include <stdio.h>
#include <unistd.h>
#include "nrt.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DEVICE\n", argv[0]);
        return 2;
    }
    nrt_session *first = nrt_session_open(argv[1], 1, 0, 5);
    if (!first) {
        const char *why = nrt_session_last_error();
        fprintf(stderr, "first session: %s\n", why ? why : "(no reason recorded)");
        return 1;
    }
    nrt_session *second = nrt_session_open(argv[1], 1, 0, 5);
    int rc = 0;
    if (second) {
        fprintf(stderr, "the second session on the same core was opened\n");
        nrt_session_close(second);
        rc = 1;
    } else {
        const char *why = nrt_session_last_error();
        printf("pid %d\nsecond session: %s\n", (int)getpid(), why ? why : "(no reason recorded)");
    }
    if (nrt_session_close(first) != 0) {
        const char *why = nrt_session_last_error();
        fprintf(stderr, "first session: teardown: %s\n", why ? why : "(no reason recorded)");
        return 1;
    }
    return rc;
}
