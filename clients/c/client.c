/* robosim_client: blocking request/reply over a ZeroMQ DEALER socket, one frame per message.
 *
 * Each call packs a Request with the next id, waits (zmq_poll, bounded by the call's timeout)
 * until the socket can take it, sends it, and reads replies until the one with that id arrives
 * or the deadline passes. Replies with other ids are late answers to calls that timed out
 * earlier: they are dropped, which is what keeps the socket usable after a timeout. */
#include "robosim_client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

#define ABANDONED_MAX 64 /* ids of timed-out calls remembered, to drop their late replies */

/* A connection to one shard's own port (HelloReply.shard_ports), opened when a request for
 * one of its worlds is first sent. */
struct shard_link {
    void *sock;
    int state; /* 0 not tried, 1 answers, -1 unreachable (requests go by the first connection) */
};

struct rsc_client {
    void *ctx;
    void *sock;                        /* the connection to the endpoint */
    rsc_options_t opts;                /* what connected it (keys for the shards' ports) */
    struct shard_link *links;          /* each shard's own port (nshards of them), or NULL */
    uint32_t *ports;
    size_t nshards;
    uint8_t route[64];                 /* Request op case -> its Route (HelloReply.routes; 0:
                                          not said, a 1.2 server) */
    char *endpoint;
    int timeout_ms;
    int curve;                         /* connected with CURVE keys */
    uint64_t next_id;
    uint64_t abandoned[ABANDONED_MAX]; /* ring of ids whose reply may still come */
    unsigned nabandoned;               /* total ever recorded; the ring holds the last 64 */
    unsigned raw_pending;              /* rsc_send_raw calls that timed out (reply id unknown) */
    struct world_token *tokens;        /* controller tokens of the worlds this client controls */
    size_t ntokens, captokens;
    struct batch_queue *batches;       /* pipelined StepBatch requests in flight, or NULL */
};

static void batch_queue_free(struct batch_queue **q);
static int batch_keep(rsc_client_t *c, Robosim__V1__Response *r);

struct world_token {
    uint64_t world_id;
    int shard; /* the shard serving it (WorldInfo.shard), -1 unknown */
    char token[RSC_TOKEN_MAX];
};

/* ---- errors ------------------------------------------------------------------------------- */

static int set_err(rsc_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_err(rsc_error_t *err, int code, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

static void clear_err(rsc_error_t *err)
{
    if (err) {
        err->code = 0;
        err->message[0] = '\0';
    }
}

const char *rsc_error_name(int code)
{
    switch (code) {
    case 0: return "OK";
    case RSC_ETIMEOUT: return "TIMEOUT";
    case RSC_EUNREACHABLE: return "UNREACHABLE";
    case RSC_EVERSION: return "VERSION";
    case RSC_EPROTOCOL: return "PROTOCOL";
    case RSC_ENOMEM: return "NO_MEMORY";
    case RSC_EARG: return "BAD_ARGUMENT";
    default: break;
    }
    if (code > 0) {
        const ProtobufCEnumValue *v =
            protobuf_c_enum_descriptor_get_value(&robosim__v1__error_code__descriptor, code);
        if (v)
            return v->name;
    }
    return "UNKNOWN";
}

/* ---- time ----------------------------------------------------------------------------------- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until the socket has `events` ready or `deadline` (monotonic ms) passes. Returns 1 when
 * ready, 0 on timeout, -1 on a ZeroMQ error (errno set). Retries after EINTR. */
static int wait_socket(void *sock, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left < 0)
            left = 0;
        zmq_pollitem_t item = {sock, 0, events, 0};
        int rc = zmq_poll(&item, 1, (long)left);
        if (rc > 0)
            return 1;
        if (rc == 0) {
            if (left == 0)
                return 0;
            continue; /* woke up early: poll again with what is left */
        }
        if (errno != EINTR)
            return -1;
    }
}

/* ---- connection ----------------------------------------------------------------------------- */

static int clamp_timeout(int timeout_ms)
{
    return timeout_ms > 0 ? timeout_ms : RSC_DEFAULT_TIMEOUT_MS;
}

rsc_client_t *rsc_connect_raw(const char *endpoint, int timeout_ms, rsc_error_t *err)
{
    rsc_options_t o = {.timeout_ms = timeout_ms};
    return rsc_connect_raw_with(endpoint, &o, err);
}

rsc_client_t *rsc_connect_raw_with(const char *endpoint, const rsc_options_t *o,
                                   rsc_error_t *err)
{
    clear_err(err);
    int timeout_ms = o ? o->timeout_ms : 0;
    if (!endpoint || !*endpoint) {
        set_err(err, RSC_EARG, "no endpoint given (expected e.g. tcp://127.0.0.1:5555)");
        return NULL;
    }
    rsc_client_t *c = calloc(1, sizeof *c);
    if (!c || !(c->endpoint = strdup(endpoint))) {
        free(c);
        set_err(err, RSC_ENOMEM, "out of memory creating a client");
        return NULL;
    }
    c->timeout_ms = clamp_timeout(timeout_ms);
    c->next_id = 0;
    if (o)
        c->opts = *o;

    c->ctx = zmq_ctx_new();
    if (!c->ctx) {
        set_err(err, RSC_ENOMEM, "cannot create a ZeroMQ context: %s", zmq_strerror(errno));
        goto fail;
    }
    c->sock = zmq_socket(c->ctx, ZMQ_DEALER);
    if (!c->sock) {
        set_err(err, RSC_ENOMEM, "cannot create a ZeroMQ DEALER socket: %s",
                zmq_strerror(errno));
        goto fail;
    }
    int linger = 0;
    zmq_setsockopt(c->sock, ZMQ_LINGER, &linger, sizeof linger);
    if (rsc_apply_curve(c->sock, o, err) != 0)
        goto fail;
    c->curve = o && o->server_key[0];
    if (zmq_connect(c->sock, endpoint) != 0) {
        int e = errno;
        set_err(err, RSC_EARG,
                "cannot connect to '%s': %s (an endpoint looks like tcp://127.0.0.1:5555)",
                endpoint, zmq_strerror(e));
        goto fail;
    }
    return c;

fail:
    rsc_close(&c);
    return NULL;
}

rsc_client_t *rsc_connect(const char *endpoint, int timeout_ms, rsc_error_t *err)
{
    rsc_options_t o = {.timeout_ms = timeout_ms};
    return rsc_connect_with(endpoint, &o, err);
}

rsc_client_t *rsc_connect_with(const char *endpoint, const rsc_options_t *o, rsc_error_t *err)
{
    rsc_client_t *c = rsc_connect_raw_with(endpoint, o, err);
    if (!c)
        return NULL;

    Robosim__V1__HelloReply *hello = NULL;
    int rc = rsc_hello(c, RSC_PROTOCOL_MAJOR, RSC_PROTOCOL_MINOR, &hello, err);
    if (rc == RSC_ETIMEOUT) {
        /* a CURVE server answers nothing to a client it does not admit: say what to check */
        set_err(err, RSC_EUNREACHABLE,
                "no answer from %s within %d ms: is robosim-server running there? (start one "
                "with: robosim-server --bind %s)%s",
                c->endpoint, c->timeout_ms, c->endpoint,
                c->curve ? "; with CURVE, check that the server key is the server's public key "
                           "and that the server's --authorized-keys lists this client's key"
                         : "; a server run with CURVE answers only clients with keys "
                           "(--server-key and --client-key-file)");
    } else if (rc == 0 && (!hello || hello->major != RSC_PROTOCOL_MAJOR)) {
        rc = set_err(err, RSC_EVERSION,
                     "the server at %s speaks protocol %u.%u, this client %d.%d: use a client "
                     "of the server's major version",
                     c->endpoint, hello ? hello->major : 0, hello ? hello->minor : 0,
                     RSC_PROTOCOL_MAJOR, RSC_PROTOCOL_MINOR);
    } else if (rc == 0 && hello->n_shard_ports > 1 && !(o && o->one_connection) &&
               !strncmp(c->endpoint, "tcp://", 6)) {
        c->links = calloc(hello->n_shard_ports, sizeof *c->links);
        c->ports = malloc(hello->n_shard_ports * sizeof *c->ports);
        if (c->links && c->ports) {
            memcpy(c->ports, hello->shard_ports, hello->n_shard_ports * sizeof *c->ports);
            c->nshards = hello->n_shard_ports;
        } /* else: every request by the one connection, which serves them all */
        for (size_t i = 0; i < hello->n_routes; i++) { /* each op's route, by its field */
            const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(
                &robosim__v1__request__descriptor, hello->routes[i]->op);
            if (f && f->id < 64 && (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
                c->route[f->id] = (uint8_t)hello->routes[i]->route;
        }
    }
    rsc_free(hello);
    if (rc != 0) {
        rsc_close(&c);
        return NULL;
    }
    return c;
}

void rsc_close(rsc_client_t **c)
{
    if (!c || !*c)
        return;
    rsc_client_t *p = *c;
    if (p->sock)
        zmq_close(p->sock);
    for (size_t k = 0; k < p->nshards; k++)
        if (p->links[k].sock)
            zmq_close(p->links[k].sock);
    free(p->links);
    free(p->ports);
    if (p->ctx)
        zmq_ctx_term(p->ctx);
    free(p->endpoint);
    free(p->tokens);
    batch_queue_free(&p->batches);
    free(p);
    *c = NULL;
}

/* ---- controller tokens ---------------------------------------------------------------------- */

/* The tokens are kept sorted by world id: a batch of a thousand worlds looks each one up. */
static size_t token_slot(const rsc_client_t *c, uint64_t world_id)
{
    size_t lo = 0, hi = c->ntokens;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->tokens[mid].world_id < world_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct world_token *find_token(const rsc_client_t *c, uint64_t world_id)
{
    if (!c)
        return NULL;
    size_t i = token_slot(c, world_id);
    return i < c->ntokens && c->tokens[i].world_id == world_id ? &c->tokens[i] : NULL;
}

const char *rsc_world_token(rsc_client_t *c, uint64_t world_id)
{
    struct world_token *t = find_token(c, world_id);
    return t ? t->token : NULL;
}

int rsc_set_world_token(rsc_client_t *c, uint64_t world_id, const char *token)
{
    if (!c)
        return RSC_EARG;
    size_t i = token_slot(c, world_id);
    int have = i < c->ntokens && c->tokens[i].world_id == world_id;
    if (!token || !*token) {
        if (have) {
            memmove(&c->tokens[i], &c->tokens[i + 1], (c->ntokens - i - 1) * sizeof *c->tokens);
            c->ntokens--;
        }
        return 0;
    }
    size_t len = strlen(token);
    if (len >= RSC_TOKEN_MAX)
        return RSC_EARG;
    /* a copy first: `token` may be this client's own (rsc_world_token), which the table's
     * growth below can move and the copy into the slot would overlap */
    char copy[RSC_TOKEN_MAX];
    memcpy(copy, token, len + 1);
    if (!have) {
        if (c->ntokens == c->captokens) {
            size_t cap = c->captokens ? 2 * c->captokens : 8;
            struct world_token *grown = realloc(c->tokens, cap * sizeof *grown);
            if (!grown)
                return RSC_ENOMEM;
            c->tokens = grown;
            c->captokens = cap;
        }
        memmove(&c->tokens[i + 1], &c->tokens[i], (c->ntokens - i) * sizeof *c->tokens);
        c->ntokens++;
        c->tokens[i].world_id = world_id;
        c->tokens[i].shard = -1;
    }
    memcpy(c->tokens[i].token, copy, len + 1);
    return 0;
}

/* The token to send with a request on world_id ("" when the client holds none). */
static char *token_for(rsc_client_t *c, uint64_t world_id)
{
    struct world_token *t = find_token(c, world_id);
    return t ? t->token : (char *)"";
}

void rsc_set_timeout(rsc_client_t *c, int timeout_ms)
{
    if (c)
        c->timeout_ms = clamp_timeout(timeout_ms);
}

const char *rsc_endpoint(const rsc_client_t *c)
{
    return c ? c->endpoint : NULL;
}

void rsc_free(void *protobuf_message)
{
    if (protobuf_message)
        protobuf_c_message_free_unpacked((ProtobufCMessage *)protobuf_message, NULL);
}

/* ---- transport ------------------------------------------------------------------------------ */

static void abandon_id(rsc_client_t *c, uint64_t id)
{
    c->abandoned[c->nabandoned % ABANDONED_MAX] = id;
    c->nabandoned++;
}

/* If `id` is a timed-out call's, forget it and return 1. */
static int take_abandoned(rsc_client_t *c, uint64_t id)
{
    unsigned n = c->nabandoned < ABANDONED_MAX ? c->nabandoned : ABANDONED_MAX;
    for (unsigned i = 0; i < n; i++) {
        if (c->abandoned[i] == id && id != 0) {
            c->abandoned[i] = 0;
            return 1;
        }
    }
    return 0;
}

/* Send one frame on sock, waiting at most until `deadline` (timeout_ms from now) for room in
 * the queue. */
static int send_frame(rsc_client_t *c, void *sock, const void *bytes, size_t len,
                      int64_t deadline, int timeout_ms, rsc_error_t *err)
{
    for (;;) {
        if (zmq_send(sock, bytes, len, ZMQ_DONTWAIT) >= 0)
            return 0;
        if (errno != EAGAIN && errno != EINTR)
            return set_err(err, RSC_EPROTOCOL, "cannot send to %s: %s", c->endpoint,
                           zmq_strerror(errno));
        int w = wait_socket(sock, ZMQ_POLLOUT, deadline);
        if (w == 0)
            return set_err(err, RSC_ETIMEOUT,
                           "could not send to %s within %d ms: the send queue is full (is the "
                           "server running?)",
                           c->endpoint, timeout_ms);
        if (w < 0)
            return set_err(err, RSC_EPROTOCOL, "cannot send to %s: %s", c->endpoint,
                           zmq_strerror(errno));
    }
}

/* Receive one message (waiting until `deadline`) and unpack it as a Response. A server sends
 * one frame; leading empty frames (a REQ-style delimiter) are tolerated. Returns 0 with *out
 * set, RSC_ETIMEOUT, or RSC_EPROTOCOL (not a Response; *out NULL). */
static int recv_response(rsc_client_t *c, void *sock, int64_t deadline,
                         Robosim__V1__Response **out, rsc_error_t *err)
{
    *out = NULL;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    int nframes = 0, bad_framing = 0;
    for (;;) {
        zmq_msg_close(&msg);
        zmq_msg_init(&msg);
        /* Block in the receive itself, bounded by ZMQ_RCVTIMEO, rather than zmq_poll and then
         * receive: one wait per reply fewer (bench/robosim_bench.c measures the difference). */
        int64_t left = deadline - now_ms();
        int rcvtimeo = nframes ? 0 : (int)(left > 0 ? left : 0);
        zmq_setsockopt(sock, ZMQ_RCVTIMEO, &rcvtimeo, sizeof rcvtimeo);
        if (zmq_msg_recv(&msg, sock, 0) < 0) {
            int e = errno;
            zmq_msg_close(&msg);
            if (e == EINTR && !nframes && now_ms() < deadline)
                continue;
            if (e == EAGAIN && !nframes)
                return RSC_ETIMEOUT; /* the caller words the message */
            return set_err(err, RSC_EPROTOCOL, "cannot receive from %s: %s", c->endpoint,
                           zmq_strerror(e));
        }
        nframes++;
        if (!zmq_msg_more(&msg))
            break;
        if (zmq_msg_size(&msg) != 0)
            bad_framing = 1; /* a non-empty frame before the last: not our protocol */
    }
    if (bad_framing) {
        zmq_msg_close(&msg);
        return set_err(err, RSC_EPROTOCOL,
                       "%s sent a %d-frame message; a robosim server sends one frame per reply "
                       "(is this a robosim server?)",
                       c->endpoint, nframes);
    }
    size_t len = zmq_msg_size(&msg);
    *out = robosim__v1__response__unpack(NULL, len, zmq_msg_data(&msg));
    zmq_msg_close(&msg);
    if (!*out)
        return set_err(err, RSC_EPROTOCOL,
                       "%s sent %zu bytes that are not a robosim.v1.Response (is this a robosim "
                       "server of protocol %d?)",
                       c->endpoint, len, RSC_PROTOCOL_MAJOR);
    return 0;
}

/* The result of a Response: 0, or its Error's code with err filled. */
static int response_code(const Robosim__V1__Response *r, rsc_error_t *err)
{
    if (r->result_case != ROBOSIM__V1__RESPONSE__RESULT_ERROR) {
        clear_err(err);
        return 0;
    }
    const Robosim__V1__Error *e = r->error;
    int code = e ? (int)e->code : 0;
    if (code <= 0)
        code = ROBOSIM__V1__ERROR_CODE__INTERNAL; /* an Error without a code is still an error */
    return set_err(err, code, "%s", e && e->message ? e->message : "");
}

/* Wait on sock for a reply accepted by `want_id` (0 = any id not abandoned) until
 * `deadline`. */
static int await_reply(rsc_client_t *c, void *sock, uint64_t want_id, int64_t deadline,
                       Robosim__V1__Response **resp, rsc_error_t *err)
{
    for (;;) {
        Robosim__V1__Response *r = NULL;
        int rc = recv_response(c, sock, deadline, &r, err);
        if (rc != 0)
            return rc;
        if (r->id != want_id && batch_keep(c, r))
            continue; /* a pipelined batch's answer: kept for rsc_batch_recv */
        int accept;
        if (want_id == 0) {
            accept = !take_abandoned(c, r->id);
        } else if (r->id == want_id) {
            accept = 1;
        } else if (r->id == 0 && r->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR) {
            /* the server could not read a request: ours, unless a raw send is still pending */
            if (c->raw_pending > 0) {
                c->raw_pending--;
                accept = 0;
            } else {
                accept = 1;
            }
        } else {
            take_abandoned(c, r->id);
            accept = 0;
        }
        if (accept) {
            *resp = r;
            return 0;
        }
        rsc_free(r); /* a stale reply */
    }
}

/* One request's bytes on sock and its reply, within timeout_ms. */
static int call_bytes(rsc_client_t *c, void *sock, int timeout_ms, const void *bytes,
                      size_t len, uint64_t id, Robosim__V1__Response **resp, rsc_error_t *err)
{
    int64_t deadline = now_ms() + timeout_ms;
    int rc = send_frame(c, sock, bytes, len, deadline, timeout_ms, err);
    if (rc == 0)
        rc = await_reply(c, sock, id, deadline, resp, err);
    if (rc == RSC_ETIMEOUT) {
        if (id)
            abandon_id(c, id);
        else
            c->raw_pending++;
        set_err(err, RSC_ETIMEOUT,
                "no reply from %s within %d ms (server busy, stopped or unreachable; a longer "
                "timeout may help)",
                c->endpoint, timeout_ms);
    }
    return rc;
}

/* Request req (its id assigned here) packed and sent on sock; its reply in *r. */
static int call_packed(rsc_client_t *c, void *sock, int timeout_ms, Robosim__V1__Request *req,
                       Robosim__V1__Response **r, rsc_error_t *err)
{
    req->id = ++c->next_id;
    size_t len = protobuf_c_message_get_packed_size(&req->base);
    uint8_t stackbuf[1024];
    uint8_t *buf = len <= sizeof stackbuf ? stackbuf : malloc(len);
    if (!buf)
        return set_err(err, RSC_ENOMEM, "out of memory packing a %zu-byte request", len);
    protobuf_c_message_pack(&req->base, buf);
    int rc = call_bytes(c, sock, timeout_ms, buf, len, req->id, r, err);
    if (buf != stackbuf)
        free(buf);
    return rc;
}

/* Reply r's code (its error in *err), r handed to *resp (NULL: freed). */
static int hand_reply(Robosim__V1__Response *r, Robosim__V1__Response **resp, rsc_error_t *err)
{
    int rc = response_code(r, err);
    if (resp)
        *resp = r;
    else
        rsc_free(r);
    return rc;
}

/* ---- straight to a world's shard ----------------------------------------------------------
 * A server of several shards (--shards) serves any world on any connection, passing a request
 * for another shard's world between its threads; it lists each shard's own port in Hello, so
 * requests for the worlds this client controls go straight to their shard's port instead. */

/* The shard every world a request names lives on, by its op's route in the server's Hello, or
 * -1 (unknown, none, several, or an op no world routes). A 1.2 server's Hello has no routes:
 * its StepBatch went by its worlds and every other op by Request.world_id. */
static int request_shard(const rsc_client_t *c, const Robosim__V1__Request *req)
{
    int k = -1, route = req->op_case < 64 ? c->route[req->op_case] : 0;
    if (!route)
        route = req->op_case == ROBOSIM__V1__REQUEST__OP_STEP_BATCH
                    ? ROBOSIM__V1__ROUTE__ROUTE_WORLDS
                    : ROBOSIM__V1__ROUTE__ROUTE_WORLD;
    if (route == ROBOSIM__V1__ROUTE__ROUTE_WORLDS &&
        req->op_case == ROBOSIM__V1__REQUEST__OP_STEP_BATCH && req->step_batch) {
        const Robosim__V1__StepBatch *b = req->step_batch;
        const Robosim__V1__BatchArrays *a =
            b->form_case == ROBOSIM__V1__STEP_BATCH__FORM_ARRAYS ? b->arrays : NULL;
        const Robosim__V1__BatchItems *it =
            b->form_case == ROBOSIM__V1__STEP_BATCH__FORM_ITEMS ? b->items : NULL;
        size_t n = a ? a->n_world_ids : it ? it->n_items : 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t id = a ? a->world_ids[i] : it->items[i] ? it->items[i]->world_id : 0;
            const struct world_token *t = find_token(c, id);
            if (!t || t->shard < 0 || (i > 0 && t->shard != k))
                return -1;
            k = t->shard;
        }
        return k;
    }
    if (route != ROBOSIM__V1__ROUTE__ROUTE_WORLD)
        return -1;
    const struct world_token *t = req->world_id ? find_token(c, req->world_id) : NULL;
    return t ? t->shard : -1;
}

/* The socket for shard k's port: opened on first use and asked Hello (at most 2 s); a port
 * that does not answer (not published, a firewall) is not tried again. NULL: use c->sock. */
static void *shard_socket(rsc_client_t *c, int k)
{
    if (k < 0 || (size_t)k >= c->nshards || c->links[k].state < 0)
        return NULL;
    struct shard_link *l = &c->links[k];
    if (l->state == 1)
        return l->sock;
    l->state = -1;
    const char *host = c->endpoint + 6, *colon = strrchr(host, ':');
    char ep[300];
    if (!colon || snprintf(ep, sizeof ep, "tcp://%.*s:%u", (int)(colon - host), host,
                           c->ports[k]) >= (int)sizeof ep)
        return NULL;
    int linger = 0;
    rsc_error_t ignored;
    if (!(l->sock = zmq_socket(c->ctx, ZMQ_DEALER)) ||
        zmq_setsockopt(l->sock, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        rsc_apply_curve(l->sock, &c->opts, &ignored) != 0 || zmq_connect(l->sock, ep) != 0)
        goto unreachable;
    Robosim__V1__Hello op = ROBOSIM__V1__HELLO__INIT;
    op.major = RSC_PROTOCOL_MAJOR;
    op.minor = RSC_PROTOCOL_MINOR;
    Robosim__V1__Request req = ROBOSIM__V1__REQUEST__INIT;
    req.op_case = ROBOSIM__V1__REQUEST__OP_HELLO;
    req.hello = &op;
    Robosim__V1__Response *r = NULL;
    int rc = call_packed(c, l->sock, c->timeout_ms < 2000 ? c->timeout_ms : 2000, &req, &r,
                         &ignored);
    int ok = rc == 0 && r->result_case == ROBOSIM__V1__RESPONSE__RESULT_HELLO;
    rsc_free(r);
    if (!ok)
        goto unreachable;
    l->state = 1;
    return l->sock;
unreachable:
    if (l->sock)
        zmq_close(l->sock);
    l->sock = NULL;
    return NULL;
}

int rsc_world_shard(const rsc_client_t *c, uint64_t world_id)
{
    const struct world_token *t = find_token(c, world_id);
    return t ? t->shard : -1;
}

int rsc_call(rsc_client_t *c, Robosim__V1__Request *req, Robosim__V1__Response **resp,
             rsc_error_t *err)
{
    Robosim__V1__Response *r = NULL;
    if (resp)
        *resp = NULL;
    clear_err(err);
    if (!c || !req)
        return set_err(err, RSC_EARG, "rsc_call: %s is NULL", c ? "the request" : "the client");

    void *direct = c->nshards ? shard_socket(c, request_shard(c, req)) : NULL;
    int rc = call_packed(c, direct ? direct : c->sock, c->timeout_ms, req, &r, err);
    return rc != 0 ? rc : hand_reply(r, resp, err);
}

int rsc_send_raw(rsc_client_t *c, const void *bytes, size_t len, Robosim__V1__Response **resp,
                 rsc_error_t *err)
{
    Robosim__V1__Response *r = NULL;
    if (resp)
        *resp = NULL;
    clear_err(err);
    if (!c || (!bytes && len > 0))
        return set_err(err, RSC_EARG, "rsc_send_raw: %s is NULL", c ? "bytes" : "the client");
    int rc = call_bytes(c, c->sock, c->timeout_ms, bytes ? bytes : "", len, 0, &r, err);
    return rc != 0 ? rc : hand_reply(r, resp, err);
}

/* ---- operations ----------------------------------------------------------------------------- */

static const char *result_name(int result_case)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(&robosim__v1__response__descriptor,
                                                (unsigned)result_case);
    return f ? f->name : "nothing";
}

/* Send `req` and check that the answer is `want` (a Response result case). On success returns
 * 0 and the Response in *resp (caller frees). */
static int call_expect(rsc_client_t *c, Robosim__V1__Request *req, int want,
                       Robosim__V1__Response **resp, rsc_error_t *err)
{
    Robosim__V1__Response *r = NULL;
    *resp = NULL;
    int rc = rsc_call(c, req, &r, err);
    if (rc != 0) {
        rsc_free(r);
        return rc;
    }
    if ((int)r->result_case != want) {
        int got = (int)r->result_case;
        rsc_free(r);
        return set_err(err, RSC_EPROTOCOL, "%s answered a %s request with %s",
                       c->endpoint, result_name(want), result_name(got));
    }
    *resp = r;
    return 0;
}

static char *str(const char *s)
{
    return (char *)(s ? s : "");
}

/* Build protobuf Params from rsc_params; *msgs and *ptrs are freed by the caller. */
static int build_params(const rsc_param_t *params, size_t n, Robosim__V1__Param **msgs,
                        Robosim__V1__Param ***ptrs, rsc_error_t *err)
{
    *msgs = NULL;
    *ptrs = NULL;
    if (n == 0)
        return 0;
    if (!params)
        return set_err(err, RSC_EARG, "%zu parameters announced but the array is NULL", n);
    *msgs = calloc(n, sizeof **msgs);
    *ptrs = calloc(n, sizeof **ptrs);
    if (!*msgs || !*ptrs)
        return set_err(err, RSC_ENOMEM, "out of memory building %zu parameters", n);
    for (size_t i = 0; i < n; i++) {
        if (!params[i].name || !*params[i].name)
            return set_err(err, RSC_EARG, "parameter %zu has no name", i);
        if (params[i].nvalues > 0 && !params[i].values)
            return set_err(err, RSC_EARG, "parameter '%s' announces %zu values but has none",
                           params[i].name, params[i].nvalues);
        Robosim__V1__Param p = ROBOSIM__V1__PARAM__INIT;
        p.entity = str(params[i].entity);
        p.name = str(params[i].name);
        p.n_values = params[i].nvalues;
        p.values = (double *)params[i].values;
        (*msgs)[i] = p;
        (*ptrs)[i] = &(*msgs)[i];
    }
    return 0;
}

static int check_values(const char *what, const void *values, size_t n, rsc_error_t *err)
{
    if (n > 0 && !values)
        return set_err(err, RSC_EARG, "%s: %zu values announced but the array is NULL", what, n);
    return 0;
}

/* Keep the token of a CreateWorldReply (CreateWorld, ForkWorld, Claim); its world id in *id. */
static int remember_controller(rsc_client_t *c, const Robosim__V1__CreateWorldReply *cr,
                               uint64_t *id, rsc_error_t *err)
{
    if (!cr || !cr->world)
        return set_err(err, RSC_EPROTOCOL, "%s sent a reply without the world", c->endpoint);
    if (id)
        *id = cr->world->world_id;
    if (cr->token && cr->token[0]) {
        int rc = rsc_set_world_token(c, cr->world->world_id, cr->token);
        if (rc != 0)
            return set_err(err, rc, "cannot keep the controller token of world %llu",
                           (unsigned long long)cr->world->world_id);
        struct world_token *t = find_token(c, cr->world->world_id);
        if (t && (size_t)cr->world->shard < c->nshards)
            t->shard = (int)cr->world->shard;
    }
    return 0;
}

/* ---- operations by name: the Request's `op` oneof, read from its descriptor ------------------ */

/* Whether `name` names op field f: its proto name (get_state), that name with dashes
 * (get-state), or its message's name (GetState). */
static int op_named(const ProtobufCFieldDescriptor *f, const char *name)
{
    const ProtobufCMessageDescriptor *md = f->descriptor;
    if (strcmp(f->name, name) == 0 || (md && strcmp(md->short_name, name) == 0))
        return 1;
    size_t i = 0;
    for (; f->name[i] && name[i]; i++)
        if (f->name[i] != (name[i] == '-' ? '_' : name[i]))
            return 0;
    return !f->name[i] && !name[i];
}

static int is_op(const ProtobufCFieldDescriptor *f)
{
    return (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) && f->type == PROTOBUF_C_TYPE_MESSAGE &&
           f->quantifier_offset == offsetof(Robosim__V1__Request, op_case);
}

size_t rsc_op_count(void)
{
    size_t n = 0;
    for (unsigned i = 0; i < robosim__v1__request__descriptor.n_fields; i++)
        n += is_op(&robosim__v1__request__descriptor.fields[i]);
    return n;
}

const ProtobufCFieldDescriptor *rsc_op_at(size_t i)
{
    for (unsigned k = 0; k < robosim__v1__request__descriptor.n_fields; k++) {
        const ProtobufCFieldDescriptor *f = &robosim__v1__request__descriptor.fields[k];
        if (is_op(f) && i-- == 0)
            return f;
    }
    return NULL;
}

const ProtobufCFieldDescriptor *rsc_op_find(const char *name)
{
    const ProtobufCFieldDescriptor *f;
    for (size_t i = 0; name && (f = rsc_op_at(i)); i++)
        if (op_named(f, name))
            return f;
    return NULL;
}

/* Send op field `f` carrying `msg` on world_id (with the token held for it) and hand the
 * reply's message (the Response field of the same name) to *out, or free it when out is NULL.
 * Tokens follow the reply: a CreateWorldReply's is kept, a destroyed world's forgotten. */
static int call_op(rsc_client_t *c, uint64_t world_id, const ProtobufCFieldDescriptor *f,
                   const ProtobufCMessage *msg, ProtobufCMessage **out, rsc_error_t *err)
{
    if (out)
        *out = NULL;
    const ProtobufCFieldDescriptor *rf =
        protobuf_c_message_descriptor_get_field_by_name(&robosim__v1__response__descriptor,
                                                        f->name);
    if (!rf)
        return set_err(err, RSC_EARG, "operation %s has no reply in this client's protocol",
                       f->name);
    Robosim__V1__Request req = ROBOSIM__V1__REQUEST__INIT;
    req.world_id = world_id;
    req.token = world_id ? token_for(c, world_id) : (char *)"";
    req.op_case = (Robosim__V1__Request__OpCase)f->id;
    *(const ProtobufCMessage **)((char *)&req + f->offset) = msg;
    Robosim__V1__Response *r;
    int rc = call_expect(c, &req, (int)rf->id, &r, err);
    if (rc != 0)
        return rc;
    ProtobufCMessage **slot = (ProtobufCMessage **)((char *)r + rf->offset);
    ProtobufCMessage *sub = *slot;
    *slot = NULL;
    r->result_case = ROBOSIM__V1__RESPONSE__RESULT__NOT_SET;
    rsc_free(r);
    if (sub && sub->descriptor == &robosim__v1__create_world_reply__descriptor)
        rc = remember_controller(c, (const Robosim__V1__CreateWorldReply *)sub, NULL, err);
    else if (f->id == ROBOSIM__V1__REQUEST__OP_DESTROY_WORLD)
        rsc_set_world_token(c, world_id, NULL);
    if (rc == 0 && out)
        *out = sub;
    else
        rsc_free(sub);
    return rc;
}

/* Operation FIELD (its REQUEST__OP_ case) carrying *opval on wid, the reply handed to *out
 * (NULL: freed): rsc_call_op's path with the operation known when compiled. */
#define CALL_OP(c, wid, FIELD, opval, out, err)                                                \
    call_op((c), (wid),                                                                        \
            protobuf_c_message_descriptor_get_field(&robosim__v1__request__descriptor,         \
                                                    ROBOSIM__V1__REQUEST__OP_##FIELD),         \
            &(opval)->base, (ProtobufCMessage **)(out), (err))

/* CALL_OP once check_values accepts the n values of what (an error, and nothing sent, if not). */
#define CALL_OP_CHECKED(what, values, n, c, wid, FIELD, opval, out, err)                       \
    (check_values((what), (values), (n), (err)) != 0 ? RSC_EARG                                \
                                                      : CALL_OP(c, wid, FIELD, opval, out, err))

int rsc_call_op(rsc_client_t *c, uint64_t world_id, const char *op, const ProtobufCMessage *msg,
                ProtobufCMessage **out, rsc_error_t *err)
{
    if (out)
        *out = NULL;
    if (!c)
        return set_err(err, RSC_EARG, "rsc_call_op: no client");
    const ProtobufCFieldDescriptor *f = rsc_op_find(op);
    if (!f) {
        char names[1024] = "";
        size_t used = 0;
        for (size_t i = 0; (f = rsc_op_at(i)) && used < sizeof names; i++)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                                     f->name);
        return set_err(err, RSC_EARG, "no operation '%s'; the operations: %s", op ? op : "",
                       names);
    }
    const ProtobufCMessageDescriptor *want = f->descriptor;
    if (msg && msg->descriptor != want)
        return set_err(err, RSC_EARG, "operation %s carries a %s message, not a %s", f->name,
                       want->name, msg->descriptor->name);
    ProtobufCMessage *empty = NULL;
    if (!msg) { /* an operation without fields: its message with every field at its default */
        if (!(empty = malloc(want->sizeof_message)))
            return set_err(err, RSC_ENOMEM, "out of memory for a %s message", want->name);
        protobuf_c_message_init(want, empty);
        msg = empty;
    }
    int rc = call_op(c, world_id, f, msg, out, err);
    free(empty);
    return rc;
}

int rsc_hello(rsc_client_t *c, uint32_t major, uint32_t minor, Robosim__V1__HelloReply **out,
              rsc_error_t *err)
{
    Robosim__V1__Hello op = ROBOSIM__V1__HELLO__INIT;
    op.major = major;
    op.minor = minor;
    op.client_name = (char *)"robosim_client (C)";
    return CALL_OP(c, 0, HELLO, &op, out, err);
}

int rsc_list_worlds(rsc_client_t *c, Robosim__V1__ListWorldsReply **out, rsc_error_t *err)
{
    Robosim__V1__ListWorlds op = ROBOSIM__V1__LIST_WORLDS__INIT;
    return CALL_OP(c, 0, LIST_WORLDS, &op, out, err);
}

int rsc_create_world(rsc_client_t *c, const char *preset, const rsc_param_t *params,
                     size_t nparams, uint64_t seed, uint64_t *world_id, rsc_error_t *err)
{
    return rsc_create_task_world(c, NULL, preset, params, nparams, seed, world_id, err);
}

int rsc_create_task_world(rsc_client_t *c, const char *task, const char *preset,
                          const rsc_param_t *params, size_t nparams, uint64_t seed,
                          uint64_t *world_id, rsc_error_t *err)
{
    if (world_id)
        *world_id = 0;
    Robosim__V1__Param *msgs, **ptrs;
    int rc = build_params(params, nparams, &msgs, &ptrs, err);
    if (rc == 0) {
        Robosim__V1__CreateWorld op = ROBOSIM__V1__CREATE_WORLD__INIT;
        op.preset = str(preset);
        op.task = str(task);
        op.n_params = nparams;
        op.params = ptrs;
        op.seed = seed;
        Robosim__V1__CreateWorldReply *r;
        rc = CALL_OP(c, 0, CREATE_WORLD, &op, &r, err); /* keeps the token */
        if (rc == 0 && world_id)
            *world_id = r->world->world_id;
        rsc_free(r);
    }
    free(msgs);
    free(ptrs);
    return rc;
}

int rsc_destroy_world(rsc_client_t *c, uint64_t world_id, rsc_error_t *err)
{
    Robosim__V1__DestroyWorld op = ROBOSIM__V1__DESTROY_WORLD__INIT;
    return CALL_OP(c, world_id, DESTROY_WORLD, &op, NULL, err); /* forgets the token */
}

int rsc_get_spec(rsc_client_t *c, uint64_t world_id, Robosim__V1__Spec **out, rsc_error_t *err)
{
    Robosim__V1__GetSpec op = ROBOSIM__V1__GET_SPEC__INIT;
    return CALL_OP(c, world_id, GET_SPEC, &op, out, err);
}

int rsc_reset(rsc_client_t *c, uint64_t world_id, int use_seed, uint64_t seed,
              Robosim__V1__State **out, rsc_error_t *err)
{
    if (out)
        *out = NULL;
    Robosim__V1__Reset op = ROBOSIM__V1__RESET__INIT;
    if (use_seed) {
        op.seed_given_case = ROBOSIM__V1__RESET__SEED_GIVEN_SEED;
        op.seed = seed;
    }
    return CALL_OP(c, world_id, RESET, &op, out, err);
}

/* Step.length from a (steps, duration) pair: steps when set, else duration (the server refuses
 * a Step with neither). */
static void set_length(Robosim__V1__Step *sp, uint32_t steps, double duration)
{
    if (steps) {
        sp->length_case = ROBOSIM__V1__STEP__LENGTH_STEPS;
        sp->steps = steps;
    } else if (duration != 0.0) {
        sp->length_case = ROBOSIM__V1__STEP__LENGTH_DURATION;
        sp->duration = duration;
    }
}

int rsc_step(rsc_client_t *c, uint64_t world_id, uint32_t steps, double duration,
             const rsc_command_t *cmds, size_t ncmds, Robosim__V1__State **out,
             rsc_error_t *err)
{
    rsc_step_opts_t o = {.steps = steps, .duration = duration, .cmds = cmds, .ncmds = ncmds};
    return rsc_step_with(c, world_id, &o, out, err);
}

int rsc_step_action(rsc_client_t *c, uint64_t world_id, uint32_t steps, const double *action,
                    size_t naction, Robosim__V1__State **out, rsc_error_t *err)
{
    rsc_step_opts_t o = {.steps = steps, .action = action, .naction = naction};
    return rsc_step_with(c, world_id, &o, out, err);
}

int rsc_step_with(rsc_client_t *c, uint64_t world_id, const rsc_step_opts_t *o,
                  Robosim__V1__State **out, rsc_error_t *err)
{
    if (out)
        *out = NULL;
    if (!o)
        return set_err(err, RSC_EARG, "rsc_step_with: no options");
    const rsc_command_t *cmds = o->cmds;
    size_t ncmds = o->ncmds;
    if (o->steps && o->duration != 0.0)
        return set_err(err, RSC_EARG, "rsc_step: set steps or duration, not both");
    if ((ncmds > 0 && !cmds) || (o->naction && !o->action) || (o->nparts && !o->parts))
        return set_err(err, RSC_EARG, "rsc_step: values announced but the array is NULL");
    Robosim__V1__ActuatorCommand *msgs = NULL, **ptrs = NULL;
    if (ncmds > 0) {
        msgs = calloc(ncmds, sizeof *msgs);
        ptrs = calloc(ncmds, sizeof *ptrs);
        if (!msgs || !ptrs) {
            free(msgs);
            free(ptrs);
            return set_err(err, RSC_ENOMEM, "out of memory building %zu commands", ncmds);
        }
    }
    int rc = 0;
    for (size_t i = 0; i < ncmds && rc == 0; i++) {
        rc = check_values("rsc_step command", cmds[i].values, cmds[i].nvalues, err);
        Robosim__V1__ActuatorCommand a = ROBOSIM__V1__ACTUATOR_COMMAND__INIT;
        a.entity = str(cmds[i].entity);
        a.n_values = cmds[i].nvalues;
        a.values = (double *)cmds[i].values;
        msgs[i] = a;
        ptrs[i] = &msgs[i];
    }
    if (rc == 0 && o->naction)
        rc = check_values("rsc_step action", o->action, o->naction, err);
    if (rc == 0) {
        Robosim__V1__Step op = ROBOSIM__V1__STEP__INIT;
        set_length(&op, o->steps, o->duration);
        op.n_commands = ncmds;
        op.commands = ptrs;
        op.n_action = o->naction;
        op.action = (double *)o->action;
        op.n_parts = o->nparts;
        op.parts = (Robosim__V1__StatePart *)o->parts;
        op.jacobian = o->jacobian != 0 || o->njacobian_params > 0;
        op.n_jacobian_params = o->njacobian_params;
        op.jacobian_params = (char **)o->jacobian_params;
        rc = CALL_OP(c, world_id, STEP, &op, out, err);
    }
    free(msgs);
    free(ptrs);
    return rc;
}

int rsc_get_state(rsc_client_t *c, uint64_t world_id, Robosim__V1__State **out,
                  rsc_error_t *err)
{
    Robosim__V1__GetState op = ROBOSIM__V1__GET_STATE__INIT;
    return CALL_OP(c, world_id, GET_STATE, &op, out, err);
}

int rsc_set_force(rsc_client_t *c, uint64_t world_id, const char *entity, const double *values,
                  size_t n, rsc_error_t *err)
{
    Robosim__V1__SetForce op = ROBOSIM__V1__SET_FORCE__INIT;
    op.entity = str(entity);
    op.n_values = n;
    op.values = (double *)values;
    return CALL_OP_CHECKED("rsc_set_force", values, n, c, world_id, SET_FORCE, &op, NULL, err);
}

int rsc_set_params(rsc_client_t *c, uint64_t world_id, const rsc_param_t *params, size_t n,
                   rsc_error_t *err)
{
    Robosim__V1__Param *msgs, **ptrs;
    int rc = build_params(params, n, &msgs, &ptrs, err);
    if (rc == 0) {
        Robosim__V1__SetParams op = ROBOSIM__V1__SET_PARAMS__INIT;
        op.n_params = n;
        op.params = ptrs;
        rc = CALL_OP(c, world_id, SET_PARAMS, &op, NULL, err);
    }
    free(msgs);
    free(ptrs);
    return rc;
}

int rsc_set_schedule(rsc_client_t *c, uint64_t world_id, const char *entity, uint32_t actuator,
                     const double *times, const double *values, size_t n, rsc_error_t *err)
{
    int rc = check_values("rsc_set_schedule times", times, n, err);
    if (rc != 0)
        return rc;
    Robosim__V1__SetSchedule op = ROBOSIM__V1__SET_SCHEDULE__INIT;
    op.entity = str(entity);
    op.actuator = actuator;
    op.n_times = n;
    op.times = (double *)times;
    op.n_values = n;
    op.values = (double *)values;
    return CALL_OP_CHECKED("rsc_set_schedule values", values, n, c, world_id, SET_SCHEDULE, &op,
                           NULL, err);
}

int rsc_set_target(rsc_client_t *c, uint64_t world_id, const char *entity, const double *target,
                   size_t n, rsc_error_t *err)
{
    Robosim__V1__SetTarget op = ROBOSIM__V1__SET_TARGET__INIT;
    op.entity = str(entity);
    op.n_target = n;
    op.target = (double *)target;
    return CALL_OP_CHECKED("rsc_set_target", target, n, c, world_id, SET_TARGET, &op, NULL, err);
}

int rsc_get_workspace(rsc_client_t *c, uint64_t world_id, const char *entity, uint32_t samples,
                      const double *query_xy, size_t nquery, Robosim__V1__WorkspaceReply **out,
                      rsc_error_t *err)
{
    if (out)
        *out = NULL;
    Robosim__V1__GetWorkspace op = ROBOSIM__V1__GET_WORKSPACE__INIT;
    op.entity = str(entity);
    op.samples = samples;
    op.n_query = 2 * nquery;
    op.query = (double *)query_xy;
    return CALL_OP_CHECKED("rsc_get_workspace query", query_xy, nquery, c, world_id,
                           GET_WORKSPACE, &op, out, err);
}

int rsc_claim(rsc_client_t *c, uint64_t world_id, Robosim__V1__CreateWorldReply **out,
              rsc_error_t *err)
{
    if (out)
        *out = NULL;
    Robosim__V1__Claim op = ROBOSIM__V1__CLAIM__INIT;
    return CALL_OP(c, world_id, CLAIM, &op, out, err); /* keeps the new token */
}

int rsc_get_snapshot(rsc_client_t *c, uint64_t world_id, Robosim__V1__State **out,
                     rsc_error_t *err)
{
    Robosim__V1__GetState op = ROBOSIM__V1__GET_STATE__INIT;
    op.snapshot = 1;
    return CALL_OP(c, world_id, GET_STATE, &op, out, err);
}

int rsc_load_motion_spec(rsc_client_t *c, uint64_t world_id, const char *document,
                         rsc_error_t *err)
{
    Robosim__V1__LoadMotionSpec op = ROBOSIM__V1__LOAD_MOTION_SPEC__INIT;
    op.document = (char *)(document ? document : "");
    return CALL_OP(c, world_id, LOAD_MOTION_SPEC, &op, NULL, err);
}

int rsc_register_task(rsc_client_t *c, const char *document, char *name, size_t name_len,
                      rsc_error_t *err)
{
    Robosim__V1__Request req = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__RegisterTask op = ROBOSIM__V1__REGISTER_TASK__INIT;
    op.document = (char *)(document ? document : "");
    req.op_case = ROBOSIM__V1__REQUEST__OP_REGISTER_TASK;
    req.register_task = &op;
    Robosim__V1__Response *r;
    int rc = call_expect(c, &req, ROBOSIM__V1__RESPONSE__RESULT_REGISTER_TASK, &r, err);
    if (rc == 0) {
        if (name && name_len)
            snprintf(name, name_len, "%s", r->register_task->name ? r->register_task->name : "");
        rsc_free(r);
    }
    return rc;
}

int rsc_get_motion_spec(rsc_client_t *c, uint64_t world_id, Robosim__V1__MotionSpecReply **out,
                        rsc_error_t *err)
{
    Robosim__V1__GetMotionSpec op = ROBOSIM__V1__GET_MOTION_SPEC__INIT;
    return CALL_OP(c, world_id, GET_MOTION_SPEC, &op, out, err);
}

int rsc_clear_motion_spec(rsc_client_t *c, uint64_t world_id, rsc_error_t *err)
{
    Robosim__V1__ClearMotionSpec op = ROBOSIM__V1__CLEAR_MOTION_SPEC__INIT;
    return CALL_OP(c, world_id, CLEAR_MOTION_SPEC, &op, NULL, err);
}

int rsc_set_state(rsc_client_t *c, uint64_t world_id, const void *snapshot, size_t len,
                  Robosim__V1__State **out, rsc_error_t *err)
{
    if (out)
        *out = NULL;
    Robosim__V1__SetState op = ROBOSIM__V1__SET_STATE__INIT;
    op.snapshot.data = (uint8_t *)snapshot;
    op.snapshot.len = len;
    return CALL_OP_CHECKED("rsc_set_state snapshot", snapshot, len, c, world_id, SET_STATE, &op,
                           out, err);
}

int rsc_fork_world(rsc_client_t *c, uint64_t world_id, const void *snapshot, size_t len,
                   uint64_t *new_world_id, rsc_error_t *err)
{
    if (new_world_id)
        *new_world_id = 0;
    int rc = check_values("rsc_fork_world snapshot", snapshot, len, err);
    if (rc != 0)
        return rc;
    Robosim__V1__ForkWorld op = ROBOSIM__V1__FORK_WORLD__INIT;
    op.snapshot.data = (uint8_t *)snapshot;
    op.snapshot.len = snapshot ? len : 0;
    Robosim__V1__CreateWorldReply *r;
    rc = CALL_OP(c, world_id, FORK_WORLD, &op, &r, err); /* keeps the new world's token */
    if (rc == 0 && new_world_id)
        *new_world_id = r->world->world_id;
    rsc_free(r);
    return rc;
}

int rsc_step_batch(rsc_client_t *c, const rsc_batch_item_t *items, size_t n,
                   Robosim__V1__StepBatchReply **out, rsc_error_t *err)
{
    if (out)
        *out = NULL;
    if (n > 0 && !items)
        return set_err(err, RSC_EARG, "rsc_step_batch: %zu items announced but the array is NULL",
                       n);
    size_t ncmds = 0;
    for (size_t i = 0; i < n; i++) {
        if ((items[i].ncmds && !items[i].cmds) || (items[i].naction && !items[i].action) ||
            (items[i].nparts && !items[i].parts))
            return set_err(err, RSC_EARG, "rsc_step_batch: item %zu announces values it lacks", i);
        ncmds += items[i].ncmds;
    }
    Robosim__V1__BatchItem *bi = calloc(n ? n : 1, sizeof *bi);
    Robosim__V1__BatchItem **bp = calloc(n ? n : 1, sizeof *bp);
    Robosim__V1__Step *steps = calloc(n ? n : 1, sizeof *steps);
    Robosim__V1__ActuatorCommand *ac = calloc(ncmds ? ncmds : 1, sizeof *ac);
    Robosim__V1__ActuatorCommand **ap = calloc(ncmds ? ncmds : 1, sizeof *ap);
    int rc = 0;
    if (!bi || !bp || !steps || !ac || !ap) {
        rc = set_err(err, RSC_ENOMEM, "out of memory building a batch of %zu items", n);
    } else {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            Robosim__V1__Step sp = ROBOSIM__V1__STEP__INIT;
            set_length(&sp, items[i].steps, items[i].duration);
            sp.n_action = items[i].naction;
            sp.action = (double *)items[i].action;
            sp.n_parts = items[i].nparts;
            sp.parts = (Robosim__V1__StatePart *)items[i].parts;
            sp.n_commands = items[i].ncmds;
            sp.commands = ap + k;
            for (size_t j = 0; j < items[i].ncmds; j++, k++) {
                Robosim__V1__ActuatorCommand a = ROBOSIM__V1__ACTUATOR_COMMAND__INIT;
                a.entity = str(items[i].cmds[j].entity);
                a.n_values = items[i].cmds[j].nvalues;
                a.values = (double *)items[i].cmds[j].values;
                ac[k] = a;
                ap[k] = &ac[k];
            }
            steps[i] = sp;
            Robosim__V1__BatchItem it = ROBOSIM__V1__BATCH_ITEM__INIT;
            it.world_id = items[i].world_id;
            it.token = token_for(c, items[i].world_id);
            it.step = &steps[i];
            bi[i] = it;
            bp[i] = &bi[i];
        }
        Robosim__V1__BatchItems list = ROBOSIM__V1__BATCH_ITEMS__INIT;
        list.n_items = n;
        list.items = bp;
        Robosim__V1__StepBatch op = ROBOSIM__V1__STEP_BATCH__INIT;
        op.form_case = ROBOSIM__V1__STEP_BATCH__FORM_ITEMS;
        op.items = &list;
        rc = CALL_OP(c, 0, STEP_BATCH, &op, out, err);
    }
    free(bi);
    free(bp);
    free(steps);
    free(ac);
    free(ap);
    return rc;
}

/* The columnar StepBatch of in's worlds, in *arr, *op and *req (which point at each other and
 * at in's arrays): tokens[n] and, with in->reset, reset[n] are the caller's room for each
 * world's token and flag. */
static void arrays_request(rsc_client_t *c, const rsc_batch_in_t *in, char **tokens,
                           protobuf_c_boolean *reset, Robosim__V1__BatchArrays *arr,
                           Robosim__V1__StepBatch *op, Robosim__V1__Request *req)
{
    size_t n = in->n;
    for (size_t i = 0; i < n; i++)
        tokens[i] = token_for(c, in->world_ids[i]);
    robosim__v1__batch_arrays__init(arr);
    arr->n_world_ids = n;
    arr->world_ids = (uint64_t *)in->world_ids;
    arr->n_tokens = n;
    arr->tokens = tokens;
    arr->steps = in->steps;
    arr->n_commands = in->ncommands;
    arr->commands = (double *)in->commands;
    arr->n_actions = in->nactions;
    arr->actions = (double *)in->actions;
    if (in->reset) {
        for (size_t i = 0; i < n; i++)
            reset[i] = in->reset[i] != 0;
        arr->n_reset = n;
        arr->reset = reset;
    }
    if (in->reset_seeds) {
        arr->n_reset_seeds = n;
        arr->reset_seeds = (uint64_t *)in->reset_seeds;
    }
    robosim__v1__step_batch__init(op);
    op->form_case = ROBOSIM__V1__STEP_BATCH__FORM_ARRAYS;
    op->arrays = arr;
    robosim__v1__request__init(req);
    req->op_case = ROBOSIM__V1__REQUEST__OP_STEP_BATCH;
    req->step_batch = op;
}

int rsc_step_arrays(rsc_client_t *c, const uint64_t *world_ids, size_t n, uint32_t steps,
                    const double *commands, size_t ncommands, const double *actions,
                    size_t nactions, Robosim__V1__BatchArraysReply **out, rsc_error_t *err)
{
    if (out)
        *out = NULL;
    if ((n && !world_ids) || (ncommands && !commands) || (nactions && !actions))
        return set_err(err, RSC_EARG, "rsc_step_arrays: values announced but the array is NULL");
    char **tokens = calloc(n ? n : 1, sizeof *tokens);
    if (!tokens)
        return set_err(err, RSC_ENOMEM, "out of memory building a batch of %zu worlds", n);
    rsc_batch_in_t in = {.world_ids = world_ids, .n = n, .steps = steps, .commands = commands,
                         .ncommands = ncommands, .actions = actions, .nactions = nactions};
    Robosim__V1__BatchArrays arr;
    Robosim__V1__StepBatch op;
    Robosim__V1__Request req;
    arrays_request(c, &in, tokens, NULL, &arr, &op, &req);
    Robosim__V1__Response *r;
    int rc = call_expect(c, &req, ROBOSIM__V1__RESPONSE__RESULT_STEP_BATCH, &r, err);
    free(tokens);
    if (rc != 0)
        return rc;
    Robosim__V1__StepBatchReply *b = r->step_batch;
    if (!b || !b->arrays) {
        rsc_free(r);
        return set_err(err, RSC_EPROTOCOL, "%s answered StepBatch.arrays without arrays",
                       c->endpoint);
    }
    Robosim__V1__BatchArraysReply *a = b->arrays;
    b->arrays = NULL;
    rsc_free(r);
    if (out)
        *out = a;
    else
        rsc_free(a);
    return 0;
}

int rsc_monte_carlo(rsc_client_t *c, uint64_t world_id, uint32_t runs, uint64_t seed,
                    uint64_t first_run, double duration, const rsc_sampler_t *samplers, size_t nsamplers,
                    const char *const *returns, size_t nreturns,
                    Robosim__V1__MonteCarloReply **out, rsc_error_t *err)
{
    if (out)
        *out = NULL;
    if ((nsamplers && !samplers) || (nreturns && !returns))
        return set_err(err, RSC_EARG, "rsc_monte_carlo: samplers or returns announced but NULL");
    Robosim__V1__Sampler *sm = calloc(nsamplers ? nsamplers : 1, sizeof *sm);
    Robosim__V1__Sampler **sp = calloc(nsamplers ? nsamplers : 1, sizeof *sp);
    if (!sm || !sp) {
        free(sm);
        free(sp);
        return set_err(err, RSC_ENOMEM, "out of memory for %zu samplers", nsamplers);
    }
    for (size_t j = 0; j < nsamplers; j++) {
        Robosim__V1__Sampler one = ROBOSIM__V1__SAMPLER__INIT;
        one.item = str(samplers[j].item);
        one.dist = str(samplers[j].dist);
        one.a = samplers[j].a;
        one.b = samplers[j].b;
        sm[j] = one;
        sp[j] = &sm[j];
    }
    Robosim__V1__MonteCarlo op = ROBOSIM__V1__MONTE_CARLO__INIT;
    op.runs = runs;
    op.seed = seed;
    op.first_run = first_run;
    op.duration = duration;
    op.n_samplers = nsamplers;
    op.samplers = sp;
    op.n_returns = nreturns;
    op.returns = (char **)returns;
    int rc = CALL_OP(c, world_id, MONTE_CARLO, &op, out, err);
    free(sm);
    free(sp);
    return rc;
}

int rsc_apply_wrench(rsc_client_t *c, uint64_t world_id, const char *entity, const char *body,
                     const double *values, size_t n, rsc_error_t *err)
{
    Robosim__V1__ApplyWrench op = ROBOSIM__V1__APPLY_WRENCH__INIT;
    op.entity = str(entity);
    op.body = str(body);
    op.n_values = n;
    op.values = (double *)values;
    return CALL_OP_CHECKED("rsc_apply_wrench values", values, n, c, world_id, APPLY_WRENCH, &op,
                           NULL, err);
}

/* ---- pipelined batches ----------------------------------------------------------------------
 * Each request in flight is a slot: its Request.id, its worlds' count and the caller's arrays.
 * Its answer is found by id, whichever order the server answers in. The buffers that build a
 * request (tokens, reset flags, the packed bytes) are the queue's and grow to the largest batch
 * sent, so the send path allocates nothing once warm, and the receive path only what unpacking
 * the reply takes (one array per column, none per world). */

struct batch_slot {
    uint64_t id;
    size_t n;
    rsc_batch_out_t out;
    Robosim__V1__Response *kept; /* its answer, read by a synchronous call meanwhile */
};

struct batch_queue {
    struct batch_slot *slots; /* nslots in flight, in no particular order */
    size_t nslots, capslots;
    char **tokens;
    size_t captokens;
    protobuf_c_boolean *reset;
    size_t capreset;
    uint8_t *buf;
    size_t capbuf;
};

static void batch_queue_free(struct batch_queue **q)
{
    if (!*q)
        return;
    for (size_t i = 0; i < (*q)->nslots; i++)
        rsc_free((*q)->slots[i].kept);
    free((*q)->slots);
    free((*q)->tokens);
    free((*q)->reset);
    free((*q)->buf);
    free(*q);
    *q = NULL;
}

/* Make room for `want` elements of `size` bytes in *p (capacity *cap). 0, or -1. */
static int grow(void *p, size_t *cap, size_t want, size_t size)
{
    if (want <= *cap)
        return 0;
    size_t n = *cap ? *cap : 4;
    while (n < want)
        n *= 2;
    void *grown = realloc(*(void **)p, n * size);
    if (!grown)
        return -1;
    *(void **)p = grown;
    *cap = n;
    return 0;
}

static struct batch_slot *batch_slot_of(const rsc_client_t *c, uint64_t id)
{
    struct batch_queue *q = c->batches;
    for (size_t i = 0; q && id && i < q->nslots; i++)
        if (q->slots[i].id == id)
            return &q->slots[i];
    return NULL;
}

/* If r answers a batch in flight, keep it for rsc_batch_recv and return 1. */
static int batch_keep(rsc_client_t *c, Robosim__V1__Response *r)
{
    struct batch_slot *s = batch_slot_of(c, r->id);
    if (!s || s->kept)
        return 0;
    s->kept = r;
    return 1;
}

size_t rsc_batch_pending(const rsc_client_t *c)
{
    return c && c->batches ? c->batches->nslots : 0;
}

size_t rsc_batch_forget(rsc_client_t *c)
{
    struct batch_queue *q = c ? c->batches : NULL;
    if (!q)
        return 0;
    size_t n = q->nslots;
    for (size_t i = 0; i < n; i++) {
        if (!q->slots[i].kept)
            abandon_id(c, q->slots[i].id);
        rsc_free(q->slots[i].kept);
    }
    q->nslots = 0;
    return n;
}

int rsc_batch_send(rsc_client_t *c, const rsc_batch_in_t *in, const rsc_batch_out_t *out,
                   uint64_t *ticket, rsc_error_t *err)
{
    if (ticket)
        *ticket = 0;
    clear_err(err);
    if (!c || !in || !out)
        return set_err(err, RSC_EARG, "rsc_batch_send: %s is NULL",
                       !c ? "the client" : !in ? "the batch" : "the output arrays");
    size_t n = in->n;
    if (n == 0 || !in->world_ids)
        return set_err(err, RSC_EARG, "rsc_batch_send: no worlds (world_ids %s, n %zu)",
                       in->world_ids ? "given" : "NULL", n);
    if ((in->ncommands && !in->commands) || (in->nactions && !in->actions))
        return set_err(err, RSC_EARG,
                       "rsc_batch_send: %s values announced but the array is NULL",
                       in->ncommands && !in->commands ? "command" : "action");
    if (!c->batches && !(c->batches = calloc(1, sizeof *c->batches)))
        return set_err(err, RSC_ENOMEM, "out of memory for the batches in flight");
    struct batch_queue *q = c->batches;
    if (grow(&q->slots, &q->capslots, q->nslots + 1, sizeof *q->slots) != 0 ||
        grow(&q->tokens, &q->captokens, n, sizeof *q->tokens) != 0 ||
        (in->reset && grow(&q->reset, &q->capreset, n, sizeof *q->reset) != 0))
        return set_err(err, RSC_ENOMEM, "out of memory building a batch of %zu worlds", n);
    Robosim__V1__BatchArrays arr;
    Robosim__V1__StepBatch op;
    Robosim__V1__Request req;
    arrays_request(c, in, q->tokens, q->reset, &arr, &op, &req);
    req.id = ++c->next_id;
    size_t len = protobuf_c_message_get_packed_size(&req.base);
    if (grow(&q->buf, &q->capbuf, len, 1) != 0)
        return set_err(err, RSC_ENOMEM, "out of memory packing a %zu-byte request", len);
    protobuf_c_message_pack(&req.base, q->buf);
    int rc = send_frame(c, c->sock, q->buf, len, now_ms() + c->timeout_ms, c->timeout_ms, err);
    if (rc != 0)
        return rc;
    q->slots[q->nslots++] = (struct batch_slot){.id = req.id, .n = n, .out = *out};
    if (ticket)
        *ticket = req.id;
    return 0;
}

/* Column `name` of a: `have` values, `width` per world, into dst (NULL: not wanted) whose
 * rows are `want` wide. 0; RSC_EARG when the widths differ or the reply lacks the column. */
static int column_check(const rsc_client_t *c, const char *name, const void *dst, size_t want,
                        size_t width, size_t have, size_t n, rsc_error_t *err)
{
    if (!dst)
        return 0;
    if (want != width)
        return set_err(err, RSC_EARG,
                       "the reply's rows hold %zu %s values per world; the arrays given to "
                       "rsc_batch_send are %zu wide (rsc_batch_out_t.%s_size)",
                       width, name, want, name);
    if (have != n * width)
        return set_err(err, width && !have ? RSC_EARG : RSC_EPROTOCOL,
                       "%s answered %zu %s values for %zu worlds of %zu (%s)", c->endpoint, have,
                       name, n, width,
                       have ? "not one row per world" : "these worlds have none: a task's");
    return 0;
}

/* Write the answer r to the request of slot s into its arrays. */
static int batch_write(rsc_client_t *c, const struct batch_slot *s,
                       const Robosim__V1__Response *r, rsc_batch_done_t *done, rsc_error_t *err)
{
    if (r->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR)
        return response_code(r, err);
    const Robosim__V1__BatchArraysReply *a =
        r->result_case == ROBOSIM__V1__RESPONSE__RESULT_STEP_BATCH && r->step_batch
            ? r->step_batch->arrays
            : NULL;
    if (!a)
        return set_err(err, RSC_EPROTOCOL, "%s answered a StepBatch.arrays request with %s",
                       c->endpoint,
                       r->result_case == ROBOSIM__V1__RESPONSE__RESULT_STEP_BATCH
                           ? "StepBatch items"
                           : result_name((int)r->result_case));
    const rsc_batch_out_t *o = &s->out;
    size_t n = s->n;
    if (a->n_codes != n || a->n_time != n || a->n_step_count != n)
        return set_err(err, RSC_EPROTOCOL, "%s answered %zu worlds for a batch of %zu",
                       c->endpoint, a->n_codes, n);
    size_t nfailed = 0;
    for (size_t i = 0; i < n; i++) {
        nfailed += a->codes[i] != 0;
        if (o->codes)
            o->codes[i] = (int32_t)a->codes[i];
    }
    int rc = column_check(c, "state", o->state, o->state_size, a->state_size, a->n_state, n,
                          err);
    if (rc == 0)
        rc = column_check(c, "sensor", o->sensors, o->sensor_size, a->sensor_size,
                          a->n_sensors, n, err);
    if (rc == 0)
        rc = column_check(c, "observation", o->observation, o->observation_size,
                          a->observation_size, a->n_observation, n, err);
    if (rc == 0)
        rc = column_check(c, "info", o->info, o->info_size, a->info_size, a->n_info, n, err);
    if (rc == 0)
        rc = column_check(c, "reward", o->reward, 1, 1, a->n_reward, n, err);
    if (rc == 0)
        rc = column_check(c, "terminated", o->terminated, 1, 1, a->n_terminated, n, err);
    if (rc == 0)
        rc = column_check(c, "truncated", o->truncated, 1, 1, a->n_truncated, n, err);
    if (rc == 0)
        rc = column_check(c, "digest", o->digests, 32, 32, a->digests.len, n, err);
    if (rc != 0)
        return rc;
    if (o->state)
        memcpy(o->state, a->state, a->n_state * sizeof *a->state);
    if (o->sensors)
        memcpy(o->sensors, a->sensors, a->n_sensors * sizeof *a->sensors);
    if (o->observation)
        memcpy(o->observation, a->observation, a->n_observation * sizeof *a->observation);
    if (o->info)
        memcpy(o->info, a->info, a->n_info * sizeof *a->info);
    if (o->reward)
        memcpy(o->reward, a->reward, n * sizeof *a->reward);
    if (o->time)
        memcpy(o->time, a->time, n * sizeof *a->time);
    if (o->step_count)
        memcpy(o->step_count, a->step_count, n * sizeof *a->step_count);
    if (o->digests)
        memcpy(o->digests, a->digests.data, a->digests.len);
    for (size_t i = 0; i < n; i++) {
        if (o->terminated)
            o->terminated[i] = a->terminated[i] != 0;
        if (o->truncated)
            o->truncated[i] = a->truncated[i] != 0;
    }
    if (done) {
        done->nfailed = nfailed;
        if (nfailed && a->n_errors && a->errors[0]->error && a->errors[0]->error->message)
            snprintf(done->message, sizeof done->message, "world %llu: %s",
                     (unsigned long long)a->errors[0]->world_id, a->errors[0]->error->message);
    }
    return 0;
}

int rsc_batch_recv(rsc_client_t *c, int timeout_ms, rsc_batch_done_t *done, rsc_error_t *err)
{
    if (done)
        memset(done, 0, sizeof *done);
    clear_err(err);
    struct batch_queue *q = c ? c->batches : NULL;
    if (!q || !q->nslots)
        return set_err(err, RSC_EARG, "rsc_batch_recv: %s",
                       c ? "no batch in flight (send one with rsc_batch_send)" : "no client");
    /* an answer a synchronous call has read already, the oldest first */
    struct batch_slot *s = NULL;
    for (size_t i = 0; i < q->nslots; i++)
        if (q->slots[i].kept && (!s || q->slots[i].id < s->id))
            s = &q->slots[i];
    Robosim__V1__Response *r = s ? s->kept : NULL;
    int wait_ms = timeout_ms > 0 ? timeout_ms : c->timeout_ms;
    int64_t deadline = now_ms() + wait_ms;
    while (!r) {
        int rc = recv_response(c, c->sock, deadline, &r, err);
        if (rc == RSC_ETIMEOUT)
            return set_err(err, RSC_ETIMEOUT,
                           "no batch answered by %s within %d ms (%zu in flight, still awaited)",
                           c->endpoint, wait_ms, q->nslots);
        if (rc != 0)
            return rc;
        if ((s = batch_slot_of(c, r->id)))
            break;
        if (r->id == 0 && r->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR) {
            /* the server could not read a request, so cannot say which: none is ended */
            rc = response_code(r, err);
            rsc_free(r);
            return rc;
        }
        take_abandoned(c, r->id);
        rsc_free(r); /* a late answer to a call that timed out, or a forgotten batch's */
        r = NULL;
    }
    struct batch_slot mine = *s;
    *s = q->slots[--q->nslots]; /* the request is over, whatever its answer */
    if (done) {
        done->ticket = mine.id;
        done->n = mine.n;
    }
    int rc = batch_write(c, &mine, r, done, err);
    rsc_free(r);
    return rc;
}
