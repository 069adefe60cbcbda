/* libFuzzer harness over the whole request path without sockets: each input is a short
 * sequence of serialized Requests (fuzz_server.h) handled in turn by rs_server_handle on a
 * fresh server, so a crash reproduces from its input alone. Snapshots in SetState and ForkWorld
 * get their checksums and MACs fixed up (fix_snapshots), or the fuzzer would never get past them. Every
 * reply must decode as a Response. */
#include "fuzz_server.h"
#include "rs_log.h"

#include <stdint.h>
#include <stdlib.h>

/* A request carrying a snapshot (SetState, ForkWorld) re-packed with the snapshot's length,
 * checksum and MAC fixed up (fuzz_fix_wire_snapshot), so mutated snapshots reach the reader's checks of
 * their contents; its new length in *n. NULL (use the bytes as they are) for other requests,
 * ones that do not decode, and ones whose request id is odd, which keep their checksums. */
static uint8_t *fix_snapshots(const rs_server_t *s, const uint8_t *req, size_t *n)
{
    Robosim__V1__Request *rq = robosim__v1__request__unpack(NULL, *n, req);
    ProtobufCBinaryData *b = !rq                           ? NULL
                             : rq->id % 2                  ? NULL
                             : rq->op_case == ROBOSIM__V1__REQUEST__OP_SET_STATE  ? &rq->set_state->snapshot
                             : rq->op_case == ROBOSIM__V1__REQUEST__OP_FORK_WORLD ? &rq->fork_world->snapshot
                                                                                    : NULL;
    uint8_t *out = NULL;
    if (b && b->len >= 32) {
        fuzz_fix_wire_snapshot(s, b->data, b->len);
        *n = robosim__v1__request__get_packed_size(rq);
        if ((out = malloc(*n + 1)))
            robosim__v1__request__pack(rq, out);
    }
    if (rq)
        robosim__v1__request__free_unpacked(rq, NULL);
    return out;
}

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
        size_t m = n;
        /* the shards' router reads the same bytes without decoding them: it must stay in them */
        uint64_t world = 0;
        int route = rs_route_of(data, n, &world);
        if (route < ROUTE_HERE || route > ROUTE_CREATE || (route == ROUTE_WORLD && world == 0))
            abort();
        uint8_t *fixed = fix_snapshots(s, data, &m);
        rs_server_handle(s, fixed ? fixed : data, fixed ? m : n, &out, &outlen);
        free(fixed);
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
