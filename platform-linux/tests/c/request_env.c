/* nrt_request_new and the runtime's variables: one request of one sunda core
 * with TIMEOUT_S (`env`: NRT_TIMEOUT_FROM_ENV). Exits 0 when it was made, 3
 * when nrt_request_new refused (its reason printed), 2 on a usage error.
 * Usage: request_env TIMEOUT_S|env */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nrt.h"

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s TIMEOUT_S|env\n", argv[0]); return 2; }
    uint32_t timeout_s = strcmp(argv[1], "env") == 0 ? NRT_TIMEOUT_FROM_ENV : (uint32_t)strtoul(argv[1], NULL, 10);
    nrt_request *q = nrt_request_new(2, 1, timeout_s);
    if (!q) {
        const char *why = nrt_session_last_error();
        printf("refused: %s\n", why ? why : "(no last error)");
        return 3;
    }
    nrt_request_free(q);
    printf("made\n");
    return 0;
}
