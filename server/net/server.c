/* The transport: a ROUTER socket served by one poll loop. Every frame that arrives gets exactly
 * one reply frame, routed back to its sender (so any number of clients, REQ or DEALER, share the
 * socket and each sees only its own replies). */
#include "rs_log.h"
#include "server_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define MAX_ENVELOPE 8 /* routing frames kept before the payload */
#define ARENA_KEEP (32u << 20) /* reply/request arena bytes kept between requests */

void rs_server_config_defaults(rs_server_config_t *cfg)
{
    cfg->bind = "tcp://127.0.0.1:5555";
    cfg->max_worlds = 64;
    cfg->max_message_size = 4u << 20;
    cfg->max_steps_per_request = 1000000;
    cfg->default_preset = "workshop";
    cfg->lease_seconds = 30.0;
    cfg->controller_token = NULL;
    cfg->max_batch = 4096;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->threads = ncpu > 0 ? (int)ncpu : 1;
    cfg->stream_endpoint = "tcp://127.0.0.1:5556";
    cfg->stream_explicit = 0;
    cfg->stream_max_hz = 60.0;
    cfg->state_dir = NULL;
    cfg->checkpoint_interval = 10.0;
}

world_entry_t *rs_server_world(rs_server_t *s, uint64_t id)
{
    /* the table is sorted by id: ids only grow and new worlds go at the end */
    int lo = 0, hi = s->nworlds;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (s->worlds[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nworlds && s->worlds[lo].id == id ? &s->worlds[lo] : NULL;
}

/* Wire code of a core code: the same number, positive. */
static Robosim__V1__ErrorCode wire_code(int rc)
{
    return rc < 0 ? (Robosim__V1__ErrorCode)(-rc) : ROBOSIM__V1__ERROR_CODE__INTERNAL;
}

/* Serialize `rp` into s->out. */
static void pack(rs_server_t *s, const Robosim__V1__Response *rp, const uint8_t **out,
                 size_t *outlen)
{
    size_t n = robosim__v1__response__get_packed_size(rp);
    if (n > s->out_cap) {
        size_t cap = n * 2;
        uint8_t *grown = realloc(s->out, cap);
        if (!grown) {
            /* cannot even reply in full: say so in a reply that fits */
            static uint8_t none[1];
            *out = none;
            *outlen = 0;
            return;
        }
        s->out = grown;
        s->out_cap = cap;
    }
    *outlen = robosim__v1__response__pack(rp, s->out);
    *out = s->out;
}

static void error_reply(rs_server_t *s, uint64_t id, int code, const char *message,
                        const uint8_t **out, size_t *outlen)
{
    Robosim__V1__Response rp = ROBOSIM__V1__RESPONSE__INIT;
    Robosim__V1__Error err = ROBOSIM__V1__ERROR__INIT;
    err.code = wire_code(code);
    err.message = (char *)message;
    rp.id = id;
    rp.result_case = ROBOSIM__V1__RESPONSE__RESULT_ERROR;
    rp.error = &err;
    s->errors++;
    pack(s, &rp, out, outlen);
}

/* Field numbers of the unknown fields a request carried, for the UNIMPLEMENTED message. */
static void unknown_ops(const Robosim__V1__Request *rq, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < rq->base.n_unknown_fields && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%u", i ? ", " : "",
                                 rq->base.unknown_fields[i].tag);
}

/* protobuf-c allocates the unpacked request in the reply arena: no malloc per field (a batch
 * of 1024 items is thousands of them), and everything goes at the next arena_reset. */
static void *arena_pb_alloc(void *arena, size_t size) { return arena_alloc(arena, size); }
static void arena_pb_free(void *arena, void *p) {} /* everything goes at arena_reset */

void rs_server_handle(rs_server_t *s, const uint8_t *req, size_t len, const uint8_t **out,
                      size_t *outlen)
{
    rs_server_handle_from(s, NULL, req, len, out, outlen);
}

void rs_server_handle_from(rs_server_t *s, const rs_caller_t *caller, const uint8_t *req,
                           size_t len, const uint8_t **out, size_t *outlen)
{
    static const rs_caller_t in_process = {"", 0};
    s->caller = caller ? caller : &in_process;
    ProtobufCAllocator in_arena = {arena_pb_alloc, arena_pb_free, &s->arena};
    rs_status_t st;
    rs_status_clear(&st);
    /* keep chunks between requests, but give back what one huge request grew */
    if (s->requests % 64 == 0 && arena_capacity(&s->arena) > ARENA_KEEP) {
        arena_free(&s->arena);
        arena_init(&s->arena, 64 << 10);
    }
    arena_reset(&s->arena);
    s->requests++;

    if (len > s->cfg.max_message_size) {
        snprintf(st.message, sizeof st.message,
                 "request of %zu bytes is over this server's limit of %zu bytes (--max-message-size)",
                 len, s->cfg.max_message_size);
        error_reply(s, 0, RS_EEXHAUSTED, st.message, out, outlen);
        return;
    }
    Robosim__V1__Request *rq = robosim__v1__request__unpack(&in_arena, len, req);
    if (!rq) {
        snprintf(st.message, sizeof st.message,
                 "the %zu bytes received are not a valid robosim.v1.Request; serialize a Request "
                 "message from proto/robosim/v1/robosim.proto",
                 len);
        error_reply(s, 0, RS_EMALFORMED, st.message, out, outlen);
        return;
    }

    Robosim__V1__Response rp = ROBOSIM__V1__RESPONSE__INIT;
    rp.id = rq->id;
    const rs_op_t *op = rs_op_find(rq->op_case);
    int rc = 0;
    if (!op) {
        char tags[64];
        unknown_ops(rq, tags, sizeof tags);
        rc = rs_fail(&st, RS_EUNIMPL,
                     rq->op_case == ROBOSIM__V1__REQUEST__OP__NOT_SET && !tags[0]
                         ? "the request carries no operation; set one of the Request.op fields"
                         : "unknown operation (field %s); this server speaks protocol %d.%d, see "
                           "Hello.capabilities",
                     tags[0] ? tags : "?", RS_PROTOCOL_MAJOR, RS_PROTOCOL_MINOR);
    } else {
        world_entry_t *w = NULL;
        if (op->needs_world && !(w = rs_server_world(s, rq->world_id)))
            rc = rs_fail(&st, RS_ENOTFOUND, "no world %llu on this server (ListWorlds shows the %d there are)",
                         (unsigned long long)rq->world_id, s->nworlds);
        else if (s->caller->observer_only && (op->mutates || op->creates))
            rc = rs_fail(&st, RS_EPERM,
                         "%s needs a controller: this client's key is listed as observer-only "
                         "in the server's --authorized-keys",
                         op->name);
        else if (op->needs_world && op->mutates)
            rc = rs_auth_check(s, w, rq->token, op->name, &st);
        if (rc == 0)
            rc = op->fn(s, rq, w, &rp, &st);
        if (rs_log_enabled(RS_LOG_DEBUG))
            rs_log(RS_LOG_DEBUG, "request %llu %s world %llu -> %s", (unsigned long long)rq->id,
                   op->name, (unsigned long long)rq->world_id, rc < 0 ? rs_errname(rc) : "ok");
    }
    if (rc < 0)
        error_reply(s, rq->id, rc, st.message[0] ? st.message : rs_strerror(rc), out, outlen);
    else
        pack(s, &rp, out, outlen);
    /* no robosim__v1__request__free_unpacked: the request lives in the arena (in_arena), which
     * the next request resets; walking it only to call a no-op free costs a batch's time */
}

rs_server_t *rs_server_new(const rs_server_config_t *cfg, rs_status_t *st)
{
    rs_server_t *s = calloc(1, sizeof *s);
    if (!s) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    s->next_world_id = 1;
    arena_init(&s->arena, 64 << 10);
    if (!(s->pool = rs_pool_new(cfg->threads, 64 << 10, st))) {
        rs_server_destroy(&s);
        return NULL;
    }
    s->worlds = calloc((size_t)(cfg->max_worlds > 0 ? cfg->max_worlds : 1), sizeof *s->worlds);
    if (!s->worlds) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for %d worlds", cfg->max_worlds);
        rs_server_destroy(&s);
        return NULL;
    }
    /* a state dir that held a server's worlds replaces the default world */
    int restored = cfg->state_dir ? rs_persist_open(s, st) : 0;
    if (restored < 0) {
        rs_server_destroy(&s);
        return NULL;
    }
    if (!restored && cfg->default_preset && cfg->default_preset[0]) {
        rs_world_t *w = rs_world_new(cfg->default_preset, NULL, 0, 0, st);
        world_entry_t *we = &s->worlds[0];
        if (!w || rs_server_take_id(s, &we->id, st) < 0) {
            rs_world_destroy(&w);
            rs_server_destroy(&s);
            return NULL;
        }
        we->world = w;
        s->nworlds = 1;
        /* world 1's controller: the token given on the command line, its lease running from
         * now; or a random token (logged) with the lease already lapsed, so the first client
         * to Claim the world controls it */
        if (cfg->controller_token) {
            snprintf(we->token, sizeof we->token, "%s", cfg->controller_token);
            we->lease_until = rs_monotonic() + cfg->lease_seconds;
        } else {
            if (rs_token_generate(we->token, st) < 0) {
                rs_server_destroy(&s);
                return NULL;
            }
            we->lease_until = rs_monotonic();
            rs_log(RS_LOG_INFO,
                   "world 1 (%s): controller token %s (claimable now: Claim it, or present this "
                   "token)",
                   cfg->default_preset, we->token);
        }
    }
    if (cfg->bind) {
        s->zctx = zmq_ctx_new();
        s->router = s->zctx ? zmq_socket(s->zctx, ZMQ_ROUTER) : NULL;
        int linger = 0;
        /* a guard well above the reply-with-error limit, so a huge frame cannot exhaust memory */
        int64_t maxmsg = (int64_t)cfg->max_message_size * 4 + 4096;
        if (!s->router || zmq_setsockopt(s->router, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
            zmq_setsockopt(s->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) != 0 ||
            zmq_bind(s->router, cfg->bind) != 0) {
            rs_fail(st, RS_EPRECOND, "cannot bind %s: %s", cfg->bind, zmq_strerror(zmq_errno()));
            rs_server_destroy(&s);
            return NULL;
        }
        if (rs_stream_open(s, st) < 0) {
            rs_server_destroy(&s);
            return NULL;
        }
    }
    return s;
}

void rs_server_destroy(rs_server_t **ps)
{
    rs_server_t *s = *ps;
    if (!s)
        return;
    if (s->router)
        zmq_close(s->router);
    rs_stream_close(s);
    if (s->zctx)
        zmq_ctx_term(s->zctx);
    for (int i = 0; i < s->nworlds; i++)
        rs_world_destroy(&s->worlds[i].world);
    rs_persist_close(s);
    free(s->worlds);
    free(s->out);
    arena_free(&s->arena);
    rs_pool_destroy(&s->pool);
    free(s);
    *ps = NULL;
}

/* Who sent a request: the ZAP handler's User-Id ("<role>:<Z85 key>") when the socket runs
 * CURVE, else the connection's routing id (the envelope's first frame). */
static void caller_of(zmq_msg_t *routing, zmq_msg_t *payload, rs_caller_t *c)
{
    const char *uid = zmq_msg_gets(payload, "User-Id");
    const char *colon = uid ? strchr(uid, ':') : NULL;
    c->observer_only = 0;
    if (colon) {
        c->observer_only = strncmp(uid, "observer:", 9) == 0;
        snprintf(c->id, sizeof c->id, "curve:%s", colon + 1);
        return;
    }
    const uint8_t *r = zmq_msg_data(routing);
    size_t n = zmq_msg_size(routing), used = (size_t)snprintf(c->id, sizeof c->id, "conn:");
    for (size_t i = 0; i < n && used + 2 < sizeof c->id; i++)
        used += (size_t)snprintf(c->id + used, sizeof c->id - used, "%02x", r[i]);
}

/* Receive one multipart message: envelope frames, then the payload (the last frame). */
static int recv_request(void *sock, zmq_msg_t *frames, int *nframes)
{
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t *f = &frames[n < MAX_ENVELOPE + 1 ? n : MAX_ENVELOPE];
        if (n >= MAX_ENVELOPE + 1)
            zmq_msg_close(f); /* too many frames: keep overwriting the last slot */
        zmq_msg_init(f);
        if (zmq_msg_recv(f, sock, 0) < 0) {
            zmq_msg_close(f);
            for (int i = 0; i < (n < MAX_ENVELOPE + 1 ? n : MAX_ENVELOPE); i++)
                zmq_msg_close(&frames[i]);
            return -1;
        }
        more = zmq_msg_more(f);
        if (n < MAX_ENVELOPE + 1)
            n++;
    }
    *nframes = n;
    return 0;
}

int rs_server_run(rs_server_t *s, volatile sig_atomic_t *stop)
{
    /* A blocking receive with a timeout rather than zmq_poll: one socket to read, and one wait
     * per request fewer (measured by bench/robosim_bench.c). The timeout bounds how long a stop
     * request waits when signals are not delivered to this thread. */
    int timeout_ms = 200, idle_ms = 200;
    zmq_setsockopt(s->router, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    rs_log(RS_LOG_INFO, "serving protocol %d.%d on %s (%d world%s)", RS_PROTOCOL_MAJOR,
           RS_PROTOCOL_MINOR, s->cfg.bind, s->nworlds, s->nworlds == 1 ? "" : "s");
    while (!*stop) {
        rs_persist_tick(s);
        /* wake up in time for a state the stream's rate limit held back */
        int due = rs_stream_flush(s), want = due < 0 || due > idle_ms ? idle_ms : due;
        if (want != timeout_ms) {
            timeout_ms = want;
            zmq_setsockopt(s->router, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
        }
        zmq_msg_t frames[MAX_ENVELOPE + 1];
        int n = 0;
        if (recv_request(s->router, frames, &n) < 0) {
            int e = zmq_errno();
            if (e == EAGAIN || e == EINTR)
                continue;
            if (e == ETERM)
                break;
            rs_log(RS_LOG_WARN, "receive failed: %s", zmq_strerror(e));
            continue;
        }
        const uint8_t *out;
        size_t outlen;
        if (n < 2) {
            /* ROUTER always prefixes the sender identity; a lone frame cannot be answered */
            for (int i = 0; i < n; i++)
                zmq_msg_close(&frames[i]);
            continue;
        }
        zmq_msg_t *payload = &frames[n - 1];
        rs_caller_t caller;
        caller_of(&frames[0], payload, &caller);
        rs_server_handle_from(s, &caller, zmq_msg_data(payload), zmq_msg_size(payload), &out,
                              &outlen);
        /* route back: the envelope as received, then the reply */
        for (int i = 0; i < n - 1; i++)
            if (zmq_msg_send(&frames[i], s->router, ZMQ_SNDMORE) < 0)
                zmq_msg_close(&frames[i]);
        if (zmq_send(s->router, out, outlen, 0) < 0)
            rs_log(RS_LOG_DEBUG, "reply not sent: %s", zmq_strerror(zmq_errno()));
        zmq_msg_close(payload);
    }
    rs_log(RS_LOG_INFO, "stopping after %llu requests (%llu errors); %llu stream frames sent, %llu "
           "not sent",
           (unsigned long long)s->requests, (unsigned long long)s->errors,
           (unsigned long long)s->frames_sent, (unsigned long long)s->frames_dropped);
    return 0;
}
