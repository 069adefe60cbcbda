/* libFuzzer harness over the whole request path without sockets: each input is a short
 * sequence of serialized Requests (fuzz_server.h) handled in turn by rs_server_handle on a
 * fresh server, so a crash reproduces from its input alone. Every reply must be a valid
 * Response whose id echoes the request's (when the request could be read). */
#include "fuzz_server.h"
#include "rs_log.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    rs_log_set_level(RS_LOG_ERROR); /* world created/destroyed lines would slow every input */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rs_server_t *s = fuzz_server_new();
    if (!s)
        abort();
    for (int k = 0; k < FUZZ_MAX_REQUESTS && size > 0; k++) {
        size_t n = size;
        if (size >= 2) {
            n = (size_t)data[0] | (size_t)data[1] << 8;
            data += 2;
            size -= 2;
            if (n > size)
                n = size;
        }
        const uint8_t *out;
        size_t outlen;
        rs_server_handle(s, data, n, &out, &outlen);
        Robosim__V1__Response *rp = robosim__v1__response__unpack(NULL, outlen, out);
        if (!rp)
            abort(); /* the server must always answer with a Response */
        robosim__v1__response__free_unpacked(rp, NULL);
        fuzz_fix_tokens(s);
        data += n;
        size -= n;
    }
    rs_server_destroy(&s);
    return 0;
}
