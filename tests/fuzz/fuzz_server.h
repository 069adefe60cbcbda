/* The server the request fuzzer drives, shared by the harness and the seed-corpus generator so
 * the seeds (and the snapshots in them, which GetState{snapshot} made) fit it exactly. */
#ifndef RS_FUZZ_SERVER_H
#define RS_FUZZ_SERVER_H

#include "rs_snapshot.h"
#include "server_internal.h"

#include <string.h>

/* The controller token of every world in a fuzzed server: the harness gives each new world
 * this token after every request, so inputs get past the token check. */
#define FUZZ_TOKEN "0123456789abcdef0123456789abcdef"

/* An input is up to FUZZ_MAX_REQUESTS requests, each a 2-byte little-endian length then that
 * many bytes of a serialized Request (the last one may run to the end of the input). */
#define FUZZ_MAX_REQUESTS 8

/* A server without sockets (cfg.bind NULL: no ROUTER, no stream), small limits so one input
 * does bounded work: fuzz_server_with a default world of `preset` (NULL: none) and a request
 * size limit; fuzz_server_new the request fuzzer's (world 1 a workshop). NULL on failure. */
static inline rs_server_t *fuzz_server_with(const char *preset, size_t max_message_size)
{
    rs_server_config_t cfg;
    rs_server_config_defaults(&cfg);
    cfg.bind = NULL;
    cfg.stream_endpoint = NULL;
    cfg.default_preset = preset;
    cfg.controller_token = FUZZ_TOKEN;
    cfg.max_worlds = 6;
    cfg.max_steps_per_request = 8;
    cfg.max_batch = 8;
    cfg.threads = 1;
    cfg.max_message_size = max_message_size;
    /* a fixed snapshot key: the seed corpus's snapshots (made by make_corpus's own server)
     * verify on every harness server, and fuzz_fix_wire_snapshot can sign mutated ones */
    memset(cfg.snapshot_key, 0x5a, sizeof cfg.snapshot_key);
    cfg.snapshot_key_set = 1;
    rs_status_t st;
    rs_status_clear(&st);
    return rs_server_new(&cfg, &st);
}

static inline rs_server_t *fuzz_server_new(void)
{
    return fuzz_server_with("workshop", 1u << 16);
}

/* Make a (mutated) snapshot pass the integrity checks, so the fuzzer reaches the reader's
 * validation of the contents: the total length field (bytes 16-23) set to the length and the
 * FNV-1a checksum (the last 8 bytes) recomputed. Too short to hold both: left as it is. (The
 * core's bytes; on the wire they carry a MAC too: fuzz_fix_wire_snapshot.) */
static inline void fuzz_fix_snapshot(uint8_t *p, size_t len)
{
    if (len < 32)
        return;
    uint64_t sum;
    for (int i = 0; i < 8; i++)
        p[16 + i] = (uint8_t)((uint64_t)len >> (8 * i));
    sum = rs_snapshot_checksum(p, len - 8);
    for (int i = 0; i < 8; i++)
        p[len - 8 + i] = (uint8_t)(sum >> (8 * i));
}

/* A snapshot as it travels on the wire (the core's bytes, then the server's MAC), fixed up
 * as fuzz_fix_snapshot does and signed again with server s's key, so a mutated snapshot gets
 * past the MAC and reaches the reader's content checks. Too short: left as it is. */
static inline void fuzz_fix_wire_snapshot(const rs_server_t *s, uint8_t *p, size_t len)
{
    if (len < 32 + RS_SNAPSHOT_MAC_BYTES)
        return;
    fuzz_fix_snapshot(p, len - RS_SNAPSHOT_MAC_BYTES);
    rs_snapmac_sign(s, p, len - RS_SNAPSHOT_MAC_BYTES);
}

/* Every world's controller is the fuzzer, with a lease that does not lapse. */
static inline void fuzz_fix_tokens(rs_server_t *s)
{
    for (int i = 0; i < s->nworlds; i++) {
        memcpy(s->worlds[i].token, FUZZ_TOKEN, RS_TOKEN_LEN + 1);
        s->worlds[i].lease_until = rs_monotonic() + 1e6;
    }
}

#endif
