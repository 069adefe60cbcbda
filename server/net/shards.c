/* A shard of a front (front.c makes and runs them): its routing. Each world belongs to exactly
 * one shard, so its requests stay in order with no lock: a world is created on the shard its
 * connection was placed on (placement(), below), and a request for a world of another shard
 * (its op and world id are read without decoding, as protobuf-c would decode them:
 * rs_route_of) is passed to that shard over inproc and its reply relayed back. A StepBatch goes
 * by every world it names: whole to their shard when the existing ones are on one, else split
 * where it arrives (shard_batch.c checks it whole and makes the parts), each part passed to
 * its shard and the replies merged. Ids stay one sequence (an atomic counter); each id's shard
 * is written once, before the reply naming the world leaves, into a table read without a
 * lock. ListWorlds is asked of every shard and the lists merged. The world counts behind
 * --max-worlds and the per-client quotas are the one shared thing (a census under a mutex,
 * taken when a world is added, removed or claimed, never by a Step). */
#include "rs_tsan.h"
#include "rs_log.h"
#include "rs_wire.h"
#include "server_internal.h"
#include "worlds.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#define PEER_MAX_FRAMES 12    /* frames a passed request may carry */
#define LISTEN_BACKLOG 128
#define CONN_SLOTS 4096       /* a shard's connections remembered with the shard they create on */
#define CONN_ID_MAX 32

/* A ListWorlds asked of every shard, or a StepBatch split over shards: the envelope to
 * answer and the replies so far (a ListWorlds' in arrival order, a batch's by shard). */
typedef struct gather {
    struct gather *next;
    uint64_t id;
    zmq_msg_t env[PEER_MAX_FRAMES];
    int nenv;
    int got;
    int need;               /* replies to wait for */
    rs_batch_plan_t *plan;  /* a batch: how to merge its parts' replies (NULL: a ListWorlds) */
    uint8_t **parts;
    size_t *lens;
} gather_t;

/* A shard's sockets to the others: one DEALER to each shard (itself included) to pass them
 * requests, which arrive on that shard's ROUTER (bound on inproc beside its TCP endpoints) and
 * are answered back to the DEALER; the ListWorlds and batches it gathers. */
typedef struct conn_slot {
    uint8_t id[CONN_ID_MAX];
    uint8_t len; /* 0: free */
    int shard;
} conn_slot_t;

struct rs_peers {
    void **out;
    int n;
    atomic_int *outstanding; /* requests passed to shards whose replies have not come back
                                (the group's count for this shard: written by its thread only;
                                the others read it when stopping: rs_shard_settled) */
    const char *key; /* the group's peer_key */
    conn_slot_t *conns; /* this shard's connections and where their worlds are created */
    int nconns;
    gather_t *gathers;
    uint64_t next_gather;
};

/* A shard's own count of its passes in flight: changed by its thread alone, read by the
 * others only while stopping (rs_shard_settled), so a relaxed load and store suffice. */
static int outstanding(const struct rs_peers *p)
{
    return atomic_load_explicit(p->outstanding, memory_order_relaxed);
}

static void outstanding_add(struct rs_peers *p, int d)
{
    atomic_store_explicit(p->outstanding, outstanding(p) + d, memory_order_relaxed);
}

/* What a shard passes another beside a request (a frame before the payload; the reply echoes
 * it): who sent it, and the ListWorlds gather it belongs to (0: none). */
typedef struct peer_meta {
    rs_caller_t caller;
    uint64_t gather;
    int part; /* a batch's part: the shard it is for */
} peer_meta_t;


/* ---- reading a request's route without decoding it ------------------------------------- */

/* A message's first top-level field numbered `field`: a varint's value in *value (wire type 0;
 * *sub NULL), or a length-delimited field's bytes [*sub, *subend). 1 found, 0 not, -1
 * malformed. */
static int find_field(const uint8_t *p, const uint8_t *end, uint32_t field, uint64_t *value,
                      const uint8_t **sub, const uint8_t **subend)
{
    uint32_t num, type;
    uint64_t v;
    const uint8_t *b, *bend;
    int r;
    *sub = *subend = NULL;
    while ((r = rs_wire_next(&p, end, &num, &type, &v, &b, &bend)) == 1) {
        if (num != field || (type != 0 && type != 2))
            continue;
        if (type == 0)
            *value = v;
        *sub = b;
        *subend = bend;
        return 1;
    }
    return r;
}

/* Where a request goes, read as protobuf-c decodes it: the op is the last field of the
 * Request's oneof that occurs (an earlier one is replaced), the world the last world_id.
 * ROUTE_WORLD: a world's op, to the shard of *world; ROUTE_BATCH: a StepBatch (*world its
 * first world id, if any), routed by all its worlds (batch_target); ROUTE_ALL: ListWorlds;
 * ROUTE_CREATE: CreateWorld, to its connection's placement; ROUTE_HERE: the rest (names no
 * world, or cannot be read: the shard that received it answers). */
int rs_route_of(const uint8_t *req, size_t len, uint64_t *world)
{
    const uint8_t *p = req, *end = req + len, *sub, *subend, *batch = NULL, *batchend = NULL;
    const uint8_t *first[64] = {0}, *firstend[64] = {0}; /* each op field's first occurrence */
    uint32_t num, type, op = 0;
    uint64_t v, world_id = 0;
    int r;
    while ((r = rs_wire_next(&p, end, &num, &type, &v, &sub, &subend)) == 1) {
        if (num == 2 && type == 0) {
            world_id = v;
            continue;
        }
        const ProtobufCFieldDescriptor *f =
            num >= 10 ? protobuf_c_message_descriptor_get_field(&robosim__v1__request__descriptor,
                                                                 num)
                      : NULL;
        if (f && (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) && type == 2) {
            op = num;
            if (num < 64 && !first[num])
                first[num] = sub, firstend[num] = subend;
        }
    }
    if (op < 64) /* a ROUTE_WORLDS op's message: the StepBatch its worlds are read from */
        batch = first[op], batchend = firstend[op];
    const rs_op_t *row = op && r == 0 ? rs_op_find((Robosim__V1__Request__OpCase)op) : NULL;
    switch (row ? row->route : ROBOSIM__V1__ROUTE__ROUTE_ANY) {
    case ROBOSIM__V1__ROUTE__ROUTE_ALL_SHARDS: return ROUTE_ALL;
    case ROBOSIM__V1__ROUTE__ROUTE_PLACEMENT: return ROUTE_CREATE;
    case ROBOSIM__V1__ROUTE__ROUTE_WORLDS: {
        /* its first world: StepBatch.arrays (2) world_ids (1: packed or not), or
         * StepBatch.items (3) items (1) world_id (1) */
        const uint8_t *form = NULL, *formend = NULL, *item = NULL, *itemend = NULL;
        *world = 0;
        if (find_field(batch, batchend, 2, &v, &form, &formend) == 1) {
            const uint8_t *ids = NULL, *idsend = NULL;
            int rr = find_field(form, formend, 1, &v, &ids, &idsend);
            if (rr == 1 && ids && rs_wire_varint(&ids, idsend, &v) == 0)
                *world = v;
            else if (rr == 1 && !ids)
                *world = v;
        } else if (find_field(batch, batchend, 3, &v, &form, &formend) == 1 &&
                   find_field(form, formend, 1, &v, &item, &itemend) == 1 && item &&
                   (v = 0, find_field(item, itemend, 1, &v, &sub, &subend)) == 1) {
            *world = v;
        }
        return ROUTE_BATCH;
    }
    case ROBOSIM__V1__ROUTE__ROUTE_WORLD:
        if (!world_id)
            return ROUTE_HERE;
        *world = world_id;
        return ROUTE_WORLD;
    default: return ROUTE_HERE;
    }
}


/* ---- placing a connection's worlds --------------------------------------------------------
 * The kernel spreads connections over the shards at random, so two clients may reach one
 * shard while another has none. A connection's first CreateWorld places it: on the shard it
 * reached unless another has fewer connections placed, and all its later worlds follow (so a
 * batch over them stays on one shard); its requests for them are passed there. */
static int placement(rs_server_t *s, const zmq_msg_t *routing)
{
    struct rs_peers *p = s->peers;
    struct rs_census *c = s->census;
    const uint8_t *id = zmq_msg_data((zmq_msg_t *)routing);
    size_t len = zmq_msg_size((zmq_msg_t *)routing);
    if (len == 0 || len > CONN_ID_MAX || !p->conns)
        return s->shard_index;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ id[i]) * 1099511628211ull;
    for (size_t probe = 0; probe < CONN_SLOTS; probe++) {
        conn_slot_t *slot = &p->conns[(h + probe) % CONN_SLOTS];
        if (slot->len == len && memcmp(slot->id, id, len) == 0)
            return slot->shard;
        if (slot->len != 0)
            continue;
        if (p->nconns >= CONN_SLOTS * 3 / 4)
            break; /* full enough: here from now on */
        int best = s->shard_index;
        for (int k = 0; k < p->n; k++)
            if (atomic_load(&c->placed[k]) < atomic_load(&c->placed[best]))
                best = k;
        atomic_fetch_add(&c->placed[best], 1);
        memcpy(slot->id, id, len);
        slot->len = (uint8_t)len;
        slot->shard = best;
        p->nconns++;
        return best;
    }
    return s->shard_index;
}

/* ---- passing requests between shards ------------------------------------------------------ */

/* The frames of one message into frames[0..*nframes-1] (more than cap: the last slot keeps
 * being overwritten), the first `have` (0 or 1) already received; without waiting. 0, or -1
 * (none there, nothing kept). */
static int recv_more(void *sock, zmq_msg_t *frames, int cap, int have, int *nframes)
{
    int n = have, more = have ? zmq_msg_more(&frames[0]) : 1;
    while (more) {
        zmq_msg_t *f = &frames[n < cap ? n : cap - 1];
        if (n >= cap)
            zmq_msg_close(f); /* too many frames: keep overwriting the last slot */
        zmq_msg_init(f);
        if (zmq_msg_recv(f, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(f);
            for (int i = 0; i < (n < cap ? n : cap - 1); i++)
                zmq_msg_close(&frames[i]);
            return -1;
        }
        more = zmq_msg_more(f);
        if (n < cap)
            n++;
    }
    *nframes = n;
    return 0;
}

static int recv_frames(void *sock, zmq_msg_t *frames, int cap, int *nframes)
{
    return recv_more(sock, frames, cap, 0, nframes);
}

static void close_frames(zmq_msg_t *frames, int n)
{
    for (int i = 0; i < n; i++)
        zmq_msg_close(&frames[i]);
}

/* Pass request frames[0..n-1] (envelope, payload) to shard k, meta before the payload. */
static void pass(struct rs_peers *p, int k, zmq_msg_t *frames, int n, const peer_meta_t *meta)
{
    zmq_msg_t m;
    zmq_msg_init_size(&m, sizeof *meta);
    memcpy(zmq_msg_data(&m), meta, sizeof *meta);
    /* the payload may be bytes this thread wrote (a split batch's part): shard k reads them on
     * its thread (rs_shard_next acquires them) */
    RS_TSAN_RELEASE(zmq_msg_data(&frames[n - 1]));
    RS_TSAN_RELEASE(zmq_msg_data(&m));
    for (int i = 0; i < n - 1; i++)
        if (zmq_msg_send(&frames[i], p->out[k], ZMQ_SNDMORE) < 0)
            zmq_msg_close(&frames[i]);
    if (zmq_msg_send(&m, p->out[k], ZMQ_SNDMORE) < 0)
        zmq_msg_close(&m);
    if (zmq_msg_send(&frames[n - 1], p->out[k], 0) < 0)
        zmq_msg_close(&frames[n - 1]);
    outstanding_add(p, 1);
}

static void gather_free(int n, gather_t *g)
{
    close_frames(g->env, g->nenv);
    for (int i = 0; i < n; i++)
        free(g->parts[i]);
    free(g->parts);
    free(g->lens);
    rs_batch_plan_free(&g->plan);
    free(g);
}

/* A gather of n parts (NULL when out of memory). */
static gather_t *gather_new(int n)
{
    gather_t *g = calloc(1, sizeof *g);
    if (g && (!(g->parts = calloc((size_t)n, sizeof *g->parts)) ||
              !(g->lens = calloc((size_t)n, sizeof *g->lens)))) {
        free(g->parts);
        free(g);
        g = NULL;
    }
    return g;
}

/* Gather g takes over the envelope of request frames[0..n-1]; the payload is closed. */
static void gather_take(gather_t *g, zmq_msg_t *frames, int n)
{
    for (int i = 0; i < n - 1; i++) {
        zmq_msg_init(&g->env[i]);
        zmq_msg_move(&g->env[i], &frames[i]);
    }
    g->nenv = n - 1;
    zmq_msg_close(&frames[n - 1]);
}

/* A reply to a client whose connection holds cfg.max_queued_bytes_per_peer of replies it
 * has not read: its request was passed on before that was seen here and has run, so its reply
 * (`len` bytes) is dropped for a short RESOURCE_EXHAUSTED saying so (in *out, *outlen: the
 * server's reply buffer), counted in s->backlog_dropped. Whether it was. */
static int backlog_drop(rs_server_t *s, zmq_msg_t *routing, const uint8_t *reply, size_t len,
                        const uint8_t **out, size_t *outlen)
{
    size_t max = s->cfg.max_queued_bytes_per_peer, queued;
    if (!max || (queued = rs_sendq_queued(s->sendq, routing)) < max)
        return 0;
    s->backlog_dropped++;
    char msg[400];
    snprintf(msg, sizeof msg,
             "this request ran, but its reply of %zu bytes was dropped: this connection has %zu "
             "bytes of replies it has not read, past the server's limit of %zu "
             "(--max-queued-bytes-per-peer); read the replies (GetState tells where a world is)",
             len, queued, max);
    rs_arena_reset(&s->arena);
    rs_error_reply(s, rs_wire_last_varint(reply, len, 1), RS_EEXHAUSTED, msg, out, outlen);
    return 1;
}

/* Send `reply` (len bytes) to the client of gather g's envelope (consumed), counted against
 * it (sendq.c). */
static void gather_send(rs_server_t *s, gather_t *g, const uint8_t *reply, size_t len)
{
    if (g->nenv > 0)
        backlog_drop(s, &g->env[0], reply, len, &reply, &len);
    rs_sendq_send(s->sendq, s->router, g->env, g->nenv + 1, reply, len);
    g->nenv = 0;
}

/* Every part of a split StepBatch answered (or it had none): the merged reply. */
static void batch_answer(rs_server_t *s, gather_t *g)
{
    uint8_t *out = NULL;
    size_t outlen = 0;
    if (rs_batch_merge(g->plan, g->parts, g->lens, &out, &outlen) == 0) {
        gather_send(s, g, out, outlen);
    } else {
        const uint8_t *err;
        size_t errlen;
        rs_arena_reset(&s->arena);
        rs_error_reply(s, 0, RS_EEXHAUSTED, "server out of memory merging the batch's parts",
                       &err, &errlen);
        gather_send(s, g, err, errlen);
    }
    free(out);
}

/* The shard a StepBatch request goes to, read without decoding it: that of its worlds when the
 * worlds it names that exist are all on one shard (an unknown one is answered NOT_FOUND there
 * as anywhere), this one when none exists, or BATCH_SPLIT when they are on several. Every id
 * of every occurrence of the batch and of both its forms is looked at (a superset of what
 * protobuf-c keeps), so a batch sent whole holds no world of another shard; a split decodes
 * it. */
#define BATCH_SPLIT (-2)
static int batch_target(const rs_server_t *s, const uint8_t *req, size_t len)
{
    struct rs_census *c = s->census;
    const uint8_t *p = req, *end = req + len, *sub, *subend;
    uint32_t num, type;
    uint64_t v;
    int first = -1, r;
    while ((r = rs_wire_next(&p, end, &num, &type, &v, &sub, &subend)) == 1) {
        if (num != ROBOSIM__V1__REQUEST__OP_STEP_BATCH || type != 2)
            continue;
        /* StepBatch.arrays (2) world_ids (1, packed or not); StepBatch.items (3) items (1),
         * each's world_id (1) */
        const uint8_t *f = sub, *fend = subend, *form, *formend;
        uint32_t fnum, ftype;
        int fr;
        while ((fr = rs_wire_next(&f, fend, &fnum, &ftype, &v, &form, &formend)) == 1) {
            if ((fnum != 2 && fnum != 3) || ftype != 2)
                continue;
            const uint8_t *e, *eend, *w = NULL, *wend = NULL;
            uint64_t x;
            int er;
            while ((er = rs_wire_next(&form, formend, &num, &type, &x, &e, &eend)) == 1) {
                if (num != 1 || (type != 0 && type != 2))
                    continue;
                int k = -1, many = 0;
                if (type == 0 && fnum == 2) {
                    k = rs_census_shard_of(c, x);
                    many = k >= 0 && first >= 0 && k != first;
                } else if (type == 2 && fnum == 2) {
                    while (e < eend && !many) { /* packed ids */
                        if (rs_wire_varint(&e, eend, &x) < 0)
                            return s->shard_index; /* malformed: answered here */
                        k = rs_census_shard_of(c, x);
                        many = k >= 0 && first >= 0 && k != first;
                        if (k >= 0 && first < 0)
                            first = k;
                    }
                } else if (type == 2 && (x = 0, find_field(e, eend, 1, &x, &w, &wend)) == 1 &&
                           !w) {
                    k = rs_census_shard_of(c, x);
                    many = k >= 0 && first >= 0 && k != first;
                }
                if (many)
                    return BATCH_SPLIT;
                if (k >= 0 && first < 0)
                    first = k;
            }
            if (er < 0)
                return s->shard_index;
        }
        if (fr < 0)
            return s->shard_index;
    }
    return first >= 0 ? first : s->shard_index;
}

/* The routing id of shard k's socket to the others (ZMQ_ROUTING_ID), in buf: the front's
 * random key, then k; its length. */
#define PEER_ID_LEN (RS_TOKEN_LEN + 1)
static size_t peer_id(const struct rs_peers *p, int k, char buf[PEER_ID_LEN])
{
    memcpy(buf, p->key, RS_TOKEN_LEN);
    buf[RS_TOKEN_LEN] = (char)k;
    return PEER_ID_LEN;
}

/* Whether a message that came in on a shard's ROUTER was passed by a shard (its routing id is
 * a shard's) rather than sent by a client. */
static int from_peer(const struct rs_peers *p, zmq_msg_t *routing)
{
    return zmq_msg_size(routing) == PEER_ID_LEN &&
           memcmp(zmq_msg_data(routing), p->key, RS_TOKEN_LEN) == 0 &&
           ((const uint8_t *)zmq_msg_data(routing))[RS_TOKEN_LEN] < p->n;
}

/* A StepBatch over several shards' worlds (frames[0..n-1], from a client): split by the
 * worlds' shards and each part passed to its shard, the replies gathered and merged; or
 * refused as a whole here. This shard's own part is not queued behind the client's later
 * requests: it comes back in frames[0..*own-1] (as if passed by this shard to itself) to be
 * served at once, so a world's requests stay in order. Returns 0 when it is dealt with (*own
 * 0: nothing to serve now), 1 when it is not a batch to split (this shard answers it). */
static int split_batch(rs_server_t *s, zmq_msg_t *frames, int n, int cap, int *own,
                       const rs_caller_t *caller)
{
    *own = 0;
    struct rs_peers *p = s->peers;
    uint8_t *parts[256];
    size_t lens[256];
    rs_batch_plan_t *plan = NULL;
    uint64_t id = 0;
    rs_status_t st;
    rs_status_clear(&st);
    int rc = rs_batch_split(s, zmq_msg_data(&frames[n - 1]), zmq_msg_size(&frames[n - 1]), parts,
                            lens, &plan, &id, &st);
    if (rc > 0)
        return 1;
    gather_t *g = rc == 0 ? gather_new(p->n) : NULL;
    if (!g) {
        const uint8_t *err;
        size_t errlen;
        rs_arena_reset(&s->arena);
        if (rc == 0)
            rs_fail(&st, RS_EEXHAUSTED, "server out of memory splitting the batch");
        rs_error_reply(s, id, st.code, st.message, &err, &errlen);
        rs_send_reply(s, s->router, frames, n, err, errlen);
        for (int k = 0; rc == 0 && k < p->n; k++)
            free(parts[k]);
        rs_batch_plan_free(&plan);
        return 0;
    }
    g->plan = plan;
    g->id = ++p->next_gather;
    int here = s->shard_index;
    zmq_msg_t mine[PEER_MAX_FRAMES];
    int nmine = 0;
    for (int k = 0; k < p->n; k++) {
        if (!parts[k])
            continue;
        zmq_msg_t copy[PEER_MAX_FRAMES];
        for (int i = 0; i < n - 1; i++) {
            zmq_msg_init(&copy[i]);
            zmq_msg_copy(&copy[i], &frames[i]);
        }
        zmq_msg_init_size(&copy[n - 1], lens[k]);
        memcpy(zmq_msg_data(&copy[n - 1]), parts[k], lens[k]);
        free(parts[k]);
        peer_meta_t meta = {*caller, g->id, k};
        g->need++;
        if (k == here && n + 2 <= cap) {
            /* as this shard's socket to itself would deliver it: its id, the envelope, the
             * meta, the part */
            char rid[PEER_ID_LEN];
            size_t idlen = peer_id(p, here, rid);
            zmq_msg_init_size(&mine[0], idlen);
            memcpy(zmq_msg_data(&mine[0]), rid, idlen);
            for (int i = 0; i < n; i++)
                mine[i + 1] = copy[i]; /* moved */
            zmq_msg_init_size(&mine[n + 1], sizeof meta);
            memcpy(zmq_msg_data(&mine[n + 1]), &meta, sizeof meta);
            zmq_msg_t payload = mine[n];
            mine[n] = mine[n + 1];
            mine[n + 1] = payload;
            nmine = n + 2;
            outstanding_add(p, 1); /* its reply comes back as another shard's would */
            continue;
        }
        pass(p, k, copy, n, &meta);
    }
    gather_take(g, frames, n);
    for (int i = 0; i < nmine; i++) {
        zmq_msg_init(&frames[i]);
        zmq_msg_move(&frames[i], &mine[i]);
    }
    *own = nmine;
    if (g->need == 0) { /* every world refused here */
        batch_answer(s, g);
        gather_free(p->n, g);
        return 0;
    }
    g->next = p->gathers;
    p->gathers = g;
    return 0;
}

static int by_world_id(const void *a, const void *b)
{
    const Robosim__V1__WorldInfo *x = *(Robosim__V1__WorldInfo *const *)a,
                                 *y = *(Robosim__V1__WorldInfo *const *)b;
    return x->world_id < y->world_id ? -1 : x->world_id > y->world_id;
}

/* Every shard answered a ListWorlds: one reply with every world, by id (or the first error). */
static void gather_answer(rs_server_t *s, gather_t *g)
{
    int nshards = s->peers->n;
    Robosim__V1__Response **rps = calloc((size_t)nshards, sizeof *rps);
    size_t total = 0;
    int bad = -1;
    for (int i = 0; rps && i < nshards; i++) {
        rps[i] = robosim__v1__response__unpack(NULL, g->lens[i], g->parts[i]);
        if (!rps[i] || rps[i]->result_case != ROBOSIM__V1__RESPONSE__RESULT_LIST_WORLDS) {
            bad = i;
            break;
        }
        total += rps[i]->list_worlds->n_worlds;
    }
    uint8_t *out = NULL;
    size_t outlen = 0;
    Robosim__V1__WorldInfo **all = bad < 0 && rps ? malloc((total + 1) * sizeof *all) : NULL;
    if (all) {
        size_t at = 0;
        for (int i = 0; i < nshards; i++)
            for (size_t j = 0; j < rps[i]->list_worlds->n_worlds; j++)
                all[at++] = rps[i]->list_worlds->worlds[j];
        qsort(all, total, sizeof *all, by_world_id);
        Robosim__V1__ListWorldsReply lw = ROBOSIM__V1__LIST_WORLDS_REPLY__INIT;
        lw.n_worlds = total;
        lw.worlds = all;
        Robosim__V1__Response rp = *rps[0];
        rp.list_worlds = &lw;
        outlen = robosim__v1__response__get_packed_size(&rp);
        if ((out = malloc(outlen ? outlen : 1)))
            robosim__v1__response__pack(&rp, out);
    }
    if (out) {
        gather_send(s, g, out, outlen);
    } else {
        /* a shard's error (or no memory to merge): that shard's reply as it is */
        int i = bad < 0 ? 0 : bad;
        gather_send(s, g, g->parts[i], g->lens[i]);
    }
    free(out);
    free(all);
    for (int i = 0; rps && i < nshards; i++)
        if (rps[i])
            robosim__v1__response__free_unpacked(rps[i], NULL);
    free(rps);
}

/* A ListWorlds: asked of every shard (this one too); answered once all have. */
static void scatter(rs_server_t *s, zmq_msg_t *frames, int n, const rs_caller_t *caller)
{
    struct rs_peers *p = s->peers;
    gather_t *g = gather_new(p->n);
    peer_meta_t meta = {*caller, 0, -1};
    if (!g) {
        pass(p, s->shard_index, frames, n, &meta); /* no memory to gather: this shard's list */
        return;
    }
    g->id = meta.gather = ++p->next_gather;
    g->need = p->n;
    for (int k = 0; k < p->n; k++) {
        zmq_msg_t copy[PEER_MAX_FRAMES];
        for (int i = 0; i < n; i++) {
            zmq_msg_init(&copy[i]);
            zmq_msg_copy(&copy[i], &frames[i]);
        }
        pass(p, k, copy, n, &meta);
    }
    gather_take(g, frames, n);
    g->next = p->gathers;
    p->gathers = g;
}

/* A reply from another shard: to the client (the meta frame taken out), or into its gather. */
static void relay(rs_server_t *s, zmq_msg_t *frames, int n)
{
    struct rs_peers *p = s->peers;
    if (n < 3 || zmq_msg_size(&frames[n - 2]) != sizeof(peer_meta_t)) {
        close_frames(frames, n);
        return;
    }
    peer_meta_t meta;
    RS_TSAN_ACQUIRE(zmq_msg_data(&frames[n - 1])); /* a reply another shard wrote (sendq.c) */
    memcpy(&meta, zmq_msg_data(&frames[n - 2]), sizeof meta);
    if (meta.gather) {
        gather_t **link = &p->gathers;
        while (*link && (*link)->id != meta.gather)
            link = &(*link)->next;
        gather_t *g = *link;
        /* a ListWorlds' replies in arrival order, a batch's in its part's shard's place */
        int at = !g ? -1 : g->plan ? meta.part : g->got;
        if (g && g->got < g->need && at >= 0 && at < p->n && !g->parts[at]) {
            size_t len = zmq_msg_size(&frames[n - 1]);
            uint8_t *copy = malloc(len ? len : 1);
            if (copy)
                memcpy(copy, zmq_msg_data(&frames[n - 1]), len);
            g->parts[at] = copy;
            g->lens[at] = copy ? len : 0;
            g->got++;
            if (g->got == g->need) {
                *link = g->next;
                if (g->plan)
                    batch_answer(s, g);
                else
                    gather_answer(s, g);
                gather_free(p->n, g);
            }
        }
        close_frames(frames, n);
        return;
    }
    zmq_msg_close(&frames[n - 2]);
    frames[n - 2] = frames[n - 1];
    /* the client's reply, counted against its connection (sendq.c) */
    const uint8_t *reply = zmq_msg_data(&frames[n - 2]);
    size_t len = zmq_msg_size(&frames[n - 2]);
    backlog_drop(s, &frames[0], reply, len, &reply, &len);
    rs_sendq_send(s->sendq, s->router, frames, n - 1, reply, len);
    zmq_msg_close(&frames[n - 2]);
}

int rs_shard_next(rs_server_t *s, zmq_msg_t *frames, int cap, int *n, rs_caller_t *caller,
                  void **sock, int timeout_ms)
{
    struct rs_peers *p = s->peers;
    int nitems = 1 + p->n;
    zmq_pollitem_t items[1 + 256];
    items[0] = (zmq_pollitem_t){s->router, 0, ZMQ_POLLIN, 0};
    for (int k = 0; k < p->n; k++)
        items[1 + k] = (zmq_pollitem_t){p->out[k], 0, ZMQ_POLLIN, 0};
    double deadline = timeout_ms < 0 ? INFINITY : rs_clock() + 1e-3 * timeout_ms; /* -1: none */
    /* Every socket is read without waiting first. Then, while replies to requests this shard
     * passed are due, zmq_poll waits on all of them; else (the usual case: clients that send
     * a world's requests to its shard's own port) a blocking receive on the ROUTER alone, as
     * one loop's server waits: one wait per request, not a poll(2) over every socket. */
    for (int round = 0;; round++) {
        double left = deadline - rs_clock();
        long wait_ms = isinf(left) ? -1 : left > 0 ? (long)(left * 1e3 + 0.999) : 0;
        int blocking = 0;
        if (round == 0) {
            /* the sockets to the other shards carry only replies to what this one passed */
            for (int i = 0; i < nitems; i++)
                items[i].revents = i == 0 || outstanding(p) > 0 ? ZMQ_POLLIN : 0;
        } else if (outstanding(p) > 0 || wait_ms == 0) {
            if (zmq_poll(items, nitems, wait_ms) < 0)
                return -1; /* EINTR, ETERM: errno says */
        } else {
            for (int i = 0; i < nitems; i++)
                items[i].revents = 0;
            int rcvtimeo = (int)(wait_ms < INT32_MAX ? wait_ms : INT32_MAX);
            zmq_setsockopt(s->router, ZMQ_RCVTIMEO, &rcvtimeo, sizeof rcvtimeo);
            zmq_msg_t *f = &frames[0];
            zmq_msg_init(f);
            if (!s->draining)
                rs_spin(s, s->router);
            int got = zmq_msg_recv(f, s->router, 0);
            if (got >= 0 && !s->draining)
                rs_spin_arrived(s);
            if (got < 0) {
                int e = zmq_errno();
                zmq_msg_close(f);
                errno = e;
                if (e == EAGAIN && rs_clock() < deadline)
                    continue;
                return -1; /* EAGAIN (none), EINTR, ETERM */
            }
            blocking = 1; /* the first frame is in; the rest are read below */
            items[0].revents = ZMQ_POLLIN;
        }
        for (int k = 0; k < p->n; k++)
            if (items[1 + k].revents & ZMQ_POLLIN)
                for (int m = 0; m < 256; m++) {
                    zmq_msg_t r[PEER_MAX_FRAMES];
                    int nr = 0;
                    if (recv_frames(p->out[k], r, PEER_MAX_FRAMES, &nr) < 0)
                        break;
                    if (outstanding(p) > 0)
                        outstanding_add(p, -1);
                    relay(s, r, nr);
                }
        while ((items[0].revents & ZMQ_POLLIN) &&
               recv_more(s->router, frames, cap, blocking, n) == 0) {
            blocking = 0;
            if (*n < 2) {
                close_frames(frames, *n);
                continue;
            }
            /* a request another shard passed this one: served here, the reply goes back to it */
            if (from_peer(p, &frames[0])) {
                if (*n >= 3 && zmq_msg_size(&frames[*n - 2]) == sizeof(peer_meta_t)) {
                    RS_TSAN_ACQUIRE(zmq_msg_data(&frames[*n - 2])); /* as pass() released them */
                    RS_TSAN_ACQUIRE(zmq_msg_data(&frames[*n - 1]));
                    peer_meta_t meta;
                    memcpy(&meta, zmq_msg_data(&frames[*n - 2]), sizeof meta);
                    *caller = meta.caller;
                    *sock = s->router;
                    return 0;
                }
                close_frames(frames, *n);
                continue;
            }
            /* a client's: served here when its world is this shard's (or it names none), else
             * passed to the world's shard; while stopping, refused here (nothing is passed) */
            rs_caller_of(&frames[0], &frames[*n - 1], caller);
            /* a client that does not read its replies: refused unrun */
            if (!s->draining && rs_refuse_backlogged(s, s->router, frames, *n))
                continue;
            if (s->draining) {
                *sock = s->router;
                return 0;
            }
            uint64_t world = 0;
            const uint8_t *req = zmq_msg_data(&frames[*n - 1]);
            size_t reqlen = zmq_msg_size(&frames[*n - 1]);
            int route = rs_route_of(req, reqlen, &world);
            int k = route == ROUTE_WORLD    ? rs_census_shard_of(s->census, world)
                    : route == ROUTE_CREATE ? placement(s, &frames[0])
                    : route == ROUTE_BATCH  ? batch_target(s, req, reqlen)
                                            : -1;
            if (route == ROUTE_ALL && *n < PEER_MAX_FRAMES) {
                scatter(s, frames, *n, caller);
                continue;
            }
            /* a StepBatch over several shards' worlds: split here, the parts passed on, this
             * shard's served now */
            int own = 0;
            if (k == BATCH_SPLIT && *n < PEER_MAX_FRAMES &&
                split_batch(s, frames, *n, cap, &own, caller) == 0) {
                if (!own)
                    continue;
                *n = own;
                *sock = s->router;
                return 0;
            }
            if (k >= 0 && k != s->shard_index && *n < PEER_MAX_FRAMES) {
                peer_meta_t meta = {*caller, 0, -1};
                pass(p, k, frames, *n, &meta);
                continue;
            }
            *sock = s->router;
            return 0;
        }
        if (rs_clock() >= deadline) {
            errno = EAGAIN;
            return -1;
        }
    }
}

void rs_shard_drain_begin(rs_server_t *s)
{
    if (s->group) /* release: the passes this shard made before are seen with the count */
        atomic_fetch_add_explicit(&s->group->draining, 1, memory_order_release);
}

int rs_shard_settled(const rs_server_t *s)
{
    const rs_shard_group_t *g = s->group;
    if (!g)
        return 1;
    if (atomic_load_explicit(&g->draining, memory_order_acquire) < g->n)
        return 0; /* a shard still in its loop may yet pass a request to this one */
    for (int k = 0; k < g->n; k++)
        if (atomic_load_explicit(&g->outstanding[k], memory_order_relaxed) > 0)
            return 0;
    return 1;
}

int rs_shard_open_peers(rs_server_t *s, rs_status_t *st)
{
    rs_shard_group_t *g = s->group;
    struct rs_peers *p = calloc(1, sizeof *p);
    if (!p || !(p->out = calloc((size_t)g->n, sizeof *p->out)) ||
        !(p->conns = calloc(CONN_SLOTS, sizeof *p->conns))) {
        if (p)
            free(p->out);
        free(p);
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    }
    s->peers = p;
    p->n = g->n;
    p->key = g->peer_key;
    p->outstanding = &g->outstanding[s->shard_index];
    /* the shards pass requests to this shard's ROUTER over inproc, with no limit on the queue
     * (an inproc endpoint keeps the options of its bind; TCP connections accepted later get
     * the usual limits back) */
    int linger = 0, hwm = 0, sndhwm = 0, rcvhwm = 0;
    size_t optlen = sizeof sndhwm;
    if (zmq_getsockopt(s->router, ZMQ_SNDHWM, &sndhwm, &optlen) != 0 ||
        zmq_getsockopt(s->router, ZMQ_RCVHWM, &rcvhwm, &optlen) != 0 ||
        zmq_setsockopt(s->router, ZMQ_SNDHWM, &hwm, sizeof hwm) != 0 ||
        zmq_setsockopt(s->router, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 ||
        zmq_bind(s->router, g->peer_endpoints[s->shard_index]) != 0 ||
        zmq_setsockopt(s->router, ZMQ_SNDHWM, &sndhwm, sizeof sndhwm) != 0 ||
        zmq_setsockopt(s->router, ZMQ_RCVHWM, &rcvhwm, sizeof rcvhwm) != 0)
        return rs_fail(st, RS_EINTERNAL, "shard %d: cannot bind %s: %s", s->shard_index,
                       g->peer_endpoints[s->shard_index], zmq_strerror(zmq_errno()));
    for (int k = 0; k < g->n; k++) {
        /* inproc: a connect before the other shard binds is kept until it does */
        p->out[k] = zmq_socket(s->zctx, ZMQ_DEALER);
        char id[PEER_ID_LEN];
        size_t idlen = peer_id(p, s->shard_index, id);
        if (!p->out[k] || zmq_setsockopt(p->out[k], ZMQ_LINGER, &linger, sizeof linger) != 0 ||
            zmq_setsockopt(p->out[k], ZMQ_ROUTING_ID, id, idlen) != 0 ||
            zmq_setsockopt(p->out[k], ZMQ_SNDHWM, &hwm, sizeof hwm) != 0 ||
            zmq_setsockopt(p->out[k], ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 ||
            zmq_connect(p->out[k], g->peer_endpoints[k]) != 0)
            return rs_fail(st, RS_EINTERNAL, "shard %d: cannot connect to shard %d: %s",
                           s->shard_index, k, zmq_strerror(zmq_errno()));
    }
    return 0;
}

void rs_shard_close_peers(rs_server_t *s)
{
    struct rs_peers *p = s->peers;
    if (!p)
        return;
    for (int k = 0; k < p->n && p->out; k++)
        if (p->out[k])
            zmq_close(p->out[k]);
    while (p->gathers) {
        gather_t *g = p->gathers;
        p->gathers = g->next;
        gather_free(p->n, g);
    }
    free(p->out);
    free(p->conns);
    free(p);
    s->peers = NULL;
}
