/* One server on several cores: --shards N runs N shards, each a whole server loop (its
 * worlds, scheduler, watchdog and stepper) on its own thread, behind a front that only moves
 * frames. Shared nothing on the request path: each world belongs to exactly one shard, so a
 * world's requests stay in order with no lock. Ids stay one sequence (an atomic counter), and
 * each id's shard is written once, before the reply that names the world leaves, into a table
 * read without a lock (world id -> shard). The front reads a request's world id (Request field 2,
 * or a StepBatch's first world) without decoding it, and a request naming no world goes to
 * the shard its connection was given (round-robin on first sight), so a client's new worlds
 * and the batches over them share a shard. ListWorlds is asked of every shard and the lists
 * merged. The world counts behind --max-worlds and the per-client quotas are the one shared
 * thing (a census under a mutex, taken when a world is added, removed or claimed, never by a
 * Step). The observer stream: each shard publishes on an inproc XPUB; the front forwards
 * frames to the public XPUB and subscriptions back (XSUB), so each shard sees who watches. */
#include "rs_log.h"
#include "server_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define FRONT_MAX_FRAMES 12   /* envelope frames a request may carry through the front */
#define CONN_SLOTS 8192       /* connections remembered with their shard (then: by hash) */
#define CONN_ID_MAX 32
#define ID_CHUNK_BITS 16      /* the id -> shard table: chunks of 65536 ids ... */
#define ID_CHUNKS 65536       /* ... made on first use, 2^32 ids in all */

/* The census: worlds in all shards, and per quota key. */
typedef struct census_key {
    char key[sizeof(((rs_caller_t *)0)->key)];
    int n;
} census_key_t;

struct rs_census {
    pthread_mutex_t lock;
    int total;
    census_key_t *keys;
    int nkeys, cap;
    atomic_uint_fast64_t next_id;           /* the next world id, of all shards */
    _Atomic(uint8_t *) owner[ID_CHUNKS];    /* world id -> 1 + its shard (0: none yet) */
};

typedef struct conn_slot {
    uint8_t id[CONN_ID_MAX];
    uint8_t len; /* 0: free */
    int shard;
} conn_slot_t;

/* A ListWorlds asked of every shard: the envelope to answer and the replies so far. */
typedef struct gather {
    struct gather *next;
    uint64_t id;
    zmq_msg_t env[FRONT_MAX_FRAMES];
    int nenv;
    int got;
    uint8_t **parts;
    size_t *lens;
} gather_t;

struct rs_shards {
    int n;
    rs_server_t **shard;
    pthread_t *thread;
    int *started;
    void **dealer;  /* the front's DEALER to each shard's inproc ROUTER */
    char (*endpoints)[2][96]; /* each shard's inproc bind and stream endpoints */
    void *xsub;     /* the front's XSUB to every shard's stream, or NULL */
    volatile sig_atomic_t *stop;
    atomic_int running;
    struct rs_census census;
    conn_slot_t *conns;
    int nconns;
    unsigned next_shard;
    gather_t *gathers;
    uint64_t next_gather;
};

/* What the front hands a shard beside each request (a frame before the payload; a shard's
 * reply echoes it): who sent it, and the ListWorlds gather it belongs to (0: none). */
typedef struct front_meta {
    rs_caller_t caller;
    uint64_t gather;
} front_meta_t;

/* ---- the census ---------------------------------------------------------------------------- */

int rs_worlds_total(const rs_server_t *s)
{
    if (!s->census)
        return s->nworlds;
    pthread_mutex_lock(&s->census->lock);
    int n = s->census->total;
    pthread_mutex_unlock(&s->census->lock);
    return n;
}

int rs_worlds_owned(const rs_server_t *s, const char *key)
{
    int n = 0;
    if (!s->census) {
        for (int i = 0; i < s->nworlds; i++)
            n += strcmp(s->worlds[i].owner, key) == 0;
        return n;
    }
    pthread_mutex_lock(&s->census->lock);
    for (int i = 0; i < s->census->nkeys; i++)
        if (strcmp(s->census->keys[i].key, key) == 0) {
            n = s->census->keys[i].n;
            break;
        }
    pthread_mutex_unlock(&s->census->lock);
    return n;
}

void rs_worlds_count(rs_server_t *s, const char *key, int worlds, int delta)
{
    struct rs_census *c = s->census;
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->total += worlds;
    if (key && key[0] && delta) {
        int i = 0;
        while (i < c->nkeys && strcmp(c->keys[i].key, key) != 0)
            i++;
        if (i == c->nkeys && delta > 0) {
            if (c->nkeys == c->cap) {
                int cap = c->cap ? 2 * c->cap : 16;
                census_key_t *k = realloc(c->keys, (size_t)cap * sizeof *k);
                if (!k) {
                    pthread_mutex_unlock(&c->lock);
                    return; /* uncounted: the quota errs on the client's side */
                }
                c->keys = k;
                c->cap = cap;
            }
            snprintf(c->keys[i].key, sizeof c->keys[i].key, "%s", key);
            c->keys[i].n = 0;
            c->nkeys++;
        }
        if (i < c->nkeys) {
            c->keys[i].n += delta;
            if (c->keys[i].n <= 0)
                c->keys[i] = c->keys[--c->nkeys]; /* a key holding none is forgotten */
        }
    }
    pthread_mutex_unlock(&c->lock);
}

int rs_worlds_take_id(rs_server_t *s, uint64_t *id, rs_status_t *st)
{
    struct rs_census *c = s->census;
    uint64_t v = atomic_fetch_add(&c->next_id, 1);
    uint64_t chunk = v >> ID_CHUNK_BITS;
    if (chunk >= ID_CHUNKS)
        return rs_fail(st, RS_EEXHAUSTED, "this server has handed out every world id (up to "
                       "%llu)", (unsigned long long)ID_CHUNKS << ID_CHUNK_BITS);
    uint8_t *table = atomic_load_explicit(&c->owner[chunk], memory_order_acquire);
    if (!table) {
        uint8_t *fresh = calloc((size_t)1 << ID_CHUNK_BITS, 1);
        if (!fresh)
            return rs_fail(st, RS_EEXHAUSTED, "out of memory for the world id table");
        if (atomic_compare_exchange_strong(&c->owner[chunk], &table, fresh))
            table = fresh;
        else
            free(fresh); /* another shard made it first: `table` is theirs */
    }
    /* a byte per id, written once by its shard, read by the front: relaxed suffices because the
     * reply naming the world leaves through a ZeroMQ queue (a full barrier) after this */
    atomic_store_explicit((_Atomic uint8_t *)&table[v & ((1u << ID_CHUNK_BITS) - 1)],
                          (uint8_t)(s->shard_index + 1), memory_order_release);
    *id = v;
    return 0;
}

/* The shard of world `id`, or -1 (never handed out). */
static int shard_of(struct rs_shards *f, uint64_t id)
{
    uint64_t chunk = id >> ID_CHUNK_BITS;
    if (chunk >= ID_CHUNKS)
        return -1;
    uint8_t *table = atomic_load_explicit(&f->census.owner[chunk], memory_order_acquire);
    if (!table)
        return -1;
    int k = atomic_load_explicit((_Atomic uint8_t *)&table[id & ((1u << ID_CHUNK_BITS) - 1)],
                                 memory_order_acquire);
    return k - 1;
}

int rs_worlds_elsewhere(const rs_server_t *s, uint64_t id)
{
    if (!s->census || !s->front)
        return -1;
    int k = shard_of(s->front->shards, id);
    return k == s->shard_index ? -1 : k;
}

int rs_no_world(const rs_server_t *s, rs_status_t *st, const char *what, size_t i, uint64_t id)
{
    int k = rs_worlds_elsewhere(s, id);
    const char *fmt = !strcmp(what, "item") ? "item %zu: " : "%s[%zu]: ";
    char head[64];
    if (!strcmp(what, "item"))
        snprintf(head, sizeof head, fmt, i);
    else
        snprintf(head, sizeof head, fmt, what, i);
    if (k < 0)
        return rs_fail(st, RS_ENOTFOUND, "%sno world %llu on this server", head,
                       (unsigned long long)id);
    return rs_fail(st, RS_ENOTFOUND,
                   "%sworld %llu is served by another of this server's %d shards (--shards) "
                   "than the batch's first world: one StepBatch steps the worlds of one shard, "
                   "which are the worlds created over one connection; split the batch, or run "
                   "the server with --shards 1",
                   head, (unsigned long long)id, s->front->cfg.shards);
}

/* ---- reading a request's route without decoding it ------------------------------------- */

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* Walk a message's top-level fields: `field`'s first varint value (wire type 0) or packed
 * first element, or the bytes of a length-delimited one. 1 found, 0 not, -1 malformed. */
static int find_field(const uint8_t *p, const uint8_t *end, uint32_t field, uint64_t *value,
                      const uint8_t **sub, const uint8_t **subend)
{
    while (p < end) {
        uint64_t tag, v;
        if (varint(&p, end, &tag) < 0)
            return -1;
        uint32_t num = (uint32_t)(tag >> 3), type = (uint32_t)(tag & 7);
        if (type == 0) {
            if (varint(&p, end, &v) < 0)
                return -1;
            if (num == field) {
                *value = v;
                return 1;
            }
        } else if (type == 2) {
            if (varint(&p, end, &v) < 0 || v > (uint64_t)(end - p))
                return -1;
            if (num == field) {
                *sub = p;
                *subend = p + v;
                return 1;
            }
            p += v;
        } else if (type == 1 || type == 5) {
            size_t skip = type == 1 ? 8 : 4;
            if ((size_t)(end - p) < skip)
                return -1;
            p += skip;
        } else {
            return -1;
        }
    }
    return 0;
}

enum { ROUTE_CONN, ROUTE_WORLD, ROUTE_ALL };

/* Where a request goes: to the shard of *world (ROUTE_WORLD), of its connection (ROUTE_CONN:
 * names no world, or cannot be read; the shard answers), or to all (ListWorlds). */
static int route_of(const uint8_t *req, size_t len, uint64_t *world)
{
    const uint8_t *p = req, *end = req + len, *sub = NULL, *subend = NULL;
    uint64_t v = 0;
    /* the op: the oneof's fields are 10 and up; a ListWorlds is field 11 */
    if (find_field(p, end, ROBOSIM__V1__REQUEST__OP_LIST_WORLDS, &v, &sub, &subend) == 1)
        return ROUTE_ALL;
    if (find_field(p, end, ROBOSIM__V1__REQUEST__OP_STEP_BATCH, &v, &sub, &subend) == 1) {
        const uint8_t *form, *formend, *item, *itemend;
        /* StepBatch.arrays (2) world_ids (1: packed or not); StepBatch.items (3) items (1)
         * world_id (1) */
        if (find_field(sub, subend, 2, &v, &form, &formend) == 1) {
            const uint8_t *ids, *idsend;
            int r = find_field(form, formend, 1, &v, &ids, &idsend);
            if (r == 1 && ids && varint(&ids, idsend, &v) == 0 && v) {
                *world = v;
                return ROUTE_WORLD;
            }
            if (r == 1 && !ids && v) {
                *world = v;
                return ROUTE_WORLD;
            }
        } else if (find_field(sub, subend, 3, &v, &form, &formend) == 1 &&
                   find_field(form, formend, 1, &v, &item, &itemend) == 1 && item &&
                   (v = 0, find_field(item, itemend, 1, &v, &sub, &subend)) == 1 && v) {
            *world = v;
            return ROUTE_WORLD;
        }
        return ROUTE_CONN;
    }
    if (find_field(p, end, ROBOSIM__V1__REQUEST__OP_CREATE_WORLD, &v, &sub, &subend) == 1 ||
        find_field(p, end, ROBOSIM__V1__REQUEST__OP_HELLO, &v, &sub, &subend) == 1)
        return ROUTE_CONN;
    v = 0;
    sub = NULL;
    if (find_field(p, end, 2, &v, &sub, &subend) == 1 && !sub && v) {
        *world = v;
        return ROUTE_WORLD;
    }
    return ROUTE_CONN;
}

/* The shard a connection's world-less requests go to: given round-robin on first sight. */
static int conn_shard(struct rs_shards *f, const zmq_msg_t *routing)
{
    const uint8_t *id = zmq_msg_data((zmq_msg_t *)routing);
    size_t len = zmq_msg_size((zmq_msg_t *)routing);
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ id[i]) * 1099511628211ull;
    if (len == 0 || len > CONN_ID_MAX)
        return (int)(h % (uint64_t)f->n);
    for (size_t probe = 0; probe < CONN_SLOTS; probe++) {
        conn_slot_t *c = &f->conns[(h + probe) % CONN_SLOTS];
        if (c->len == len && memcmp(c->id, id, len) == 0)
            return c->shard;
        if (c->len == 0) {
            if (f->nconns >= CONN_SLOTS * 3 / 4)
                break; /* full enough: by hash from here on */
            memcpy(c->id, id, len);
            c->len = (uint8_t)len;
            c->shard = (int)(f->next_shard++ % (unsigned)f->n);
            f->nconns++;
            return c->shard;
        }
    }
    return (int)(h % (uint64_t)f->n);
}

/* ---- the front -------------------------------------------------------------------------- */

static int recv_frames(void *sock, zmq_msg_t *frames, int *nframes)
{
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t *f = &frames[n < FRONT_MAX_FRAMES ? n : FRONT_MAX_FRAMES - 1];
        if (n >= FRONT_MAX_FRAMES)
            zmq_msg_close(f); /* too many frames: keep overwriting the last slot */
        zmq_msg_init(f);
        if (zmq_msg_recv(f, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(f);
            for (int i = 0; i < (n < FRONT_MAX_FRAMES ? n : FRONT_MAX_FRAMES - 1); i++)
                zmq_msg_close(&frames[i]);
            return -1;
        }
        more = zmq_msg_more(f);
        if (n < FRONT_MAX_FRAMES)
            n++;
    }
    *nframes = n;
    return 0;
}

static void close_frames(zmq_msg_t *frames, int n)
{
    for (int i = 0; i < n; i++)
        zmq_msg_close(&frames[i]);
}

/* Send frames[0..n-1] on sock, the last without SNDMORE; the frames are consumed. */
static void send_frames(void *sock, zmq_msg_t *frames, int n)
{
    for (int i = 0; i < n; i++)
        if (zmq_msg_send(&frames[i], sock, i + 1 < n ? ZMQ_SNDMORE : 0) < 0)
            zmq_msg_close(&frames[i]);
}

/* Hand request frames[0..n-1] (envelope, payload) to shard k with meta before the payload. */
static void to_shard(struct rs_shards *f, int k, zmq_msg_t *frames, int n,
                     const front_meta_t *meta)
{
    zmq_msg_t m;
    zmq_msg_init_size(&m, sizeof *meta);
    memcpy(zmq_msg_data(&m), meta, sizeof *meta);
    for (int i = 0; i < n - 1; i++)
        if (zmq_msg_send(&frames[i], f->dealer[k], ZMQ_SNDMORE) < 0)
            zmq_msg_close(&frames[i]);
    if (zmq_msg_send(&m, f->dealer[k], ZMQ_SNDMORE) < 0)
        zmq_msg_close(&m);
    if (zmq_msg_send(&frames[n - 1], f->dealer[k], 0) < 0)
        zmq_msg_close(&frames[n - 1]);
}

static void gather_free(struct rs_shards *f, gather_t *g)
{
    close_frames(g->env, g->nenv);
    for (int i = 0; i < f->n; i++)
        free(g->parts[i]);
    free(g->parts);
    free(g->lens);
    free(g);
}

static int by_world_id(const void *a, const void *b)
{
    const Robosim__V1__WorldInfo *x = *(Robosim__V1__WorldInfo *const *)a,
                                 *y = *(Robosim__V1__WorldInfo *const *)b;
    return x->world_id < y->world_id ? -1 : x->world_id > y->world_id;
}

/* All shards answered a ListWorlds: one reply with every world, by id (or the first error). */
static void gather_answer(rs_server_t *s, gather_t *g)
{
    struct rs_shards *f = s->shards;
    Robosim__V1__Response **rps = calloc((size_t)f->n, sizeof *rps);
    size_t total = 0;
    int bad = -1;
    for (int i = 0; rps && i < f->n; i++) {
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
        for (int i = 0; i < f->n; i++)
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
    zmq_msg_t reply;
    if (out) {
        zmq_msg_init_size(&reply, outlen);
        memcpy(zmq_msg_data(&reply), out, outlen);
    } else {
        /* a shard's error (or no memory to merge): that shard's reply as it is */
        int i = bad < 0 ? 0 : bad;
        zmq_msg_init_size(&reply, g->lens[i]);
        memcpy(zmq_msg_data(&reply), g->parts[i], g->lens[i]);
    }
    for (int i = 0; i < g->nenv; i++)
        if (zmq_msg_send(&g->env[i], s->router, ZMQ_SNDMORE) < 0)
            zmq_msg_close(&g->env[i]);
    g->nenv = 0;
    if (zmq_msg_send(&reply, s->router, 0) < 0)
        zmq_msg_close(&reply);
    free(out);
    free(all);
    for (int i = 0; rps && i < f->n; i++)
        if (rps[i])
            robosim__v1__response__free_unpacked(rps[i], NULL);
    free(rps);
}

/* A ListWorlds: asked of every shard; answered once all have (gather_answer). */
static void scatter(rs_server_t *s, zmq_msg_t *frames, int n, const rs_caller_t *caller)
{
    struct rs_shards *f = s->shards;
    gather_t *g = calloc(1, sizeof *g);
    if (g && (!(g->parts = calloc((size_t)f->n, sizeof *g->parts)) ||
              !(g->lens = calloc((size_t)f->n, sizeof *g->lens)))) {
        free(g->parts);
        free(g);
        g = NULL;
    }
    if (!g) {
        /* no memory to gather: one shard's list is better than none */
        front_meta_t meta = {*caller, 0};
        to_shard(f, 0, frames, n, &meta);
        return;
    }
    g->id = ++f->next_gather;
    front_meta_t meta = {*caller, g->id};
    for (int k = 0; k < f->n; k++) {
        zmq_msg_t copy[FRONT_MAX_FRAMES];
        for (int i = 0; i < n; i++) {
            zmq_msg_init(&copy[i]);
            zmq_msg_copy(&copy[i], &frames[i]);
        }
        to_shard(f, k, copy, n, &meta);
    }
    for (int i = 0; i < n - 1; i++) {
        zmq_msg_init(&g->env[i]);
        zmq_msg_move(&g->env[i], &frames[i]);
    }
    g->nenv = n - 1;
    zmq_msg_close(&frames[n - 1]);
    g->next = f->gathers;
    f->gathers = g;
}

/* A reply from a shard: to its client (the meta frame taken out), or into its gather. */
static void from_shard(rs_server_t *s, zmq_msg_t *frames, int n)
{
    struct rs_shards *f = s->shards;
    if (n < 3 || zmq_msg_size(&frames[n - 2]) != sizeof(front_meta_t)) {
        close_frames(frames, n);
        return;
    }
    front_meta_t meta;
    memcpy(&meta, zmq_msg_data(&frames[n - 2]), sizeof meta);
    if (meta.gather) {
        gather_t **link = &f->gathers;
        while (*link && (*link)->id != meta.gather)
            link = &(*link)->next;
        gather_t *g = *link;
        if (g && g->got < f->n) {
            size_t len = zmq_msg_size(&frames[n - 1]);
            uint8_t *copy = malloc(len ? len : 1);
            if (copy)
                memcpy(copy, zmq_msg_data(&frames[n - 1]), len);
            g->parts[g->got] = copy;
            g->lens[g->got] = copy ? len : 0;
            g->got++;
            if (g->got == f->n) {
                *link = g->next;
                gather_answer(s, g);
                gather_free(f, g);
            }
        }
        close_frames(frames, n);
        return;
    }
    zmq_msg_close(&frames[n - 2]);
    frames[n - 2] = frames[n - 1];
    send_frames(s->router, frames, n - 1);
}

/* A request from a client: to its shard. */
static void from_client(rs_server_t *s, zmq_msg_t *frames, int n)
{
    struct rs_shards *f = s->shards;
    if (n < 2 || n >= FRONT_MAX_FRAMES) {
        close_frames(frames, n); /* no routing id, or more frames than a client sends */
        return;
    }
    front_meta_t meta;
    memset(&meta, 0, sizeof meta);
    rs_caller_of(&frames[0], &frames[n - 1], &meta.caller);
    uint64_t world = 0;
    int route = route_of(zmq_msg_data(&frames[n - 1]), zmq_msg_size(&frames[n - 1]), &world);
    if (route == ROUTE_ALL) {
        scatter(s, frames, n, &meta.caller);
        return;
    }
    int k = route == ROUTE_WORLD ? shard_of(f, world) : -1;
    if (k < 0)
        k = conn_shard(f, &frames[0]); /* no such world: its shard says so */
    to_shard(f, k, frames, n, &meta);
}

/* Move whatever one socket has (up to a bound, so the others get their turn). */
static void pump(rs_server_t *s, void *sock, int what)
{
    struct rs_shards *f = s->shards;
    for (int i = 0; i < 256; i++) {
        zmq_msg_t frames[FRONT_MAX_FRAMES];
        int n = 0;
        if (recv_frames(sock, frames, &n) < 0)
            return;
        if (what == 0)
            from_client(s, frames, n);
        else if (what == 1)
            from_shard(s, frames, n);
        else if (what == 2)
            send_frames(s->xpub, frames, n); /* a shard's stream frame to the observers */
        else
            send_frames(f->xsub, frames, n); /* (un)subscriptions to every shard */
    }
}

typedef struct shard_arg {
    rs_server_t *front;
    int k;
} shard_arg_t;

static void *shard_main(void *arg)
{
    shard_arg_t *a = arg;
    struct rs_shards *f = a->front->shards;
    rs_server_run(f->shard[a->k], f->stop);
    atomic_fetch_sub(&f->running, 1);
    free(a);
    return NULL;
}

int rs_shards_run(rs_server_t *s, volatile sig_atomic_t *stop)
{
    struct rs_shards *f = s->shards;
    f->stop = stop;
    atomic_store(&f->running, f->n);
    for (int k = 0; k < f->n; k++) {
        shard_arg_t *a = malloc(sizeof *a);
        if (a)
            *a = (shard_arg_t){s, k};
        if (!a || pthread_create(&f->thread[k], NULL, shard_main, a) != 0) {
            free(a);
            atomic_fetch_sub(&f->running, f->n - k);
            rs_log(RS_LOG_ERROR, "cannot start shard %d's thread", k);
            *stop = 1; /* the others stop too */
            break;
        }
        f->started[k] = 1;
    }
    rs_log(RS_LOG_INFO, "serving protocol %d.%d on %s with %d shards", RS_PROTOCOL_MAJOR,
           RS_PROTOCOL_MINOR, s->cfg.bind, f->n);
    int nitems = 1 + f->n + (f->xsub ? 2 : 0);
    zmq_pollitem_t *items = calloc((size_t)nitems, sizeof *items);
    if (!items) {
        *stop = 1;
    } else {
        items[0].socket = s->router;
        for (int k = 0; k < f->n; k++)
            items[1 + k].socket = f->dealer[k];
        if (f->xsub) {
            items[1 + f->n].socket = f->xsub;
            items[2 + f->n].socket = s->xpub;
        }
        for (int i = 0; i < nitems; i++)
            items[i].events = ZMQ_POLLIN;
    }
    /* after a stop the shards answer what they hold (their parked Steps), then end: the
     * front goes on moving their replies until the last has */
    while (items && (!*stop || atomic_load(&f->running) > 0)) {
        int stopping = *stop;
        if (zmq_poll(items, nitems, stopping ? 5 : 100) < 0 && zmq_errno() != EINTR)
            break;
        if (!stopping && (items[0].revents & ZMQ_POLLIN))
            pump(s, s->router, 0);
        for (int k = 0; k < f->n; k++)
            if (items[1 + k].revents & ZMQ_POLLIN)
                pump(s, f->dealer[k], 1);
        if (f->xsub && (items[1 + f->n].revents & ZMQ_POLLIN))
            pump(s, f->xsub, 2);
        if (f->xsub && (items[2 + f->n].revents & ZMQ_POLLIN))
            pump(s, s->xpub, 3);
    }
    for (int k = 0; k < f->n; k++) {
        if (f->started[k])
            pthread_join(f->thread[k], NULL);
        f->started[k] = 0;
        pump(s, f->dealer[k], 1); /* the last replies */
    }
    free(items);
    f->stop = NULL;
    return 0;
}

/* ---- making and ending them ------------------------------------------------------------- */

int rs_shards_open(rs_server_t *s, rs_status_t *st)
{
    int n = s->cfg.shards;
    struct rs_shards *f = calloc(1, sizeof *f);
    if (!f)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    s->shards = f;
    f->n = n;
    if (n > 255)
        return rs_fail(st, RS_EINVAL, "--shards %d: at most 255", n);
    pthread_mutex_init(&f->census.lock, NULL);
    atomic_init(&f->census.next_id, 1);
    if (!(f->shard = calloc((size_t)n, sizeof *f->shard)) ||
        !(f->thread = calloc((size_t)n, sizeof *f->thread)) ||
        !(f->started = calloc((size_t)n, sizeof *f->started)) ||
        !(f->dealer = calloc((size_t)n, sizeof *f->dealer)) ||
        !(f->endpoints = calloc((size_t)n, sizeof *f->endpoints)) ||
        !(f->conns = calloc(CONN_SLOTS, sizeof *f->conns)))
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    if (s->xpub) {
        f->xsub = zmq_socket(s->zctx, ZMQ_XSUB);
        int linger = 0;
        if (!f->xsub || zmq_setsockopt(f->xsub, ZMQ_LINGER, &linger, sizeof linger) != 0)
            return rs_fail(st, RS_EINTERNAL, "cannot make the stream's forwarding socket");
    }
    for (int k = 0; k < n; k++) {
        char *bind = f->endpoints[k][0], *stream = f->endpoints[k][1];
        snprintf(bind, 96, "inproc://robosim-shard-%p-%d", (void *)s, k);
        snprintf(stream, 96, "inproc://robosim-stream-%p-%d", (void *)s, k);
        rs_server_config_t cfg = s->cfg;
        cfg.bind = bind;
        cfg.shards = 1;
        cfg.default_preset = k == 0 ? s->cfg.default_preset : NULL;
        cfg.stream_endpoint = s->xpub ? stream : NULL;
        cfg.stream_explicit = 1;
        cfg.curve_secret_key = NULL; /* the front authenticates; shards are in-process */
        cfg.authorized_keys = NULL;
        cfg.insecure = 1;
        cfg.history_bytes = s->cfg.history_bytes / (size_t)n; /* the server's bound, shared */
        memcpy(cfg.snapshot_key, s->snapshot_key, sizeof cfg.snapshot_key); /* one key: a
                                           snapshot of one shard's world forks on another */
        cfg.snapshot_key_set = 1;
        cfg.snapshot_key_file = NULL;
        if (!(f->shard[k] = rs_server_new_shard(&cfg, s, k, st)))
            return st->code ? st->code : RS_EINTERNAL;
        snprintf(f->shard[k]->stream_endpoint, sizeof f->shard[k]->stream_endpoint, "%s",
                 s->stream_endpoint); /* what Hello tells clients: the public one */
        f->dealer[k] = zmq_socket(s->zctx, ZMQ_DEALER);
        int linger = 0, hwm = 0;
        if (!f->dealer[k] || zmq_setsockopt(f->dealer[k], ZMQ_LINGER, &linger, sizeof linger) ||
            zmq_setsockopt(f->dealer[k], ZMQ_SNDHWM, &hwm, sizeof hwm) ||
            zmq_setsockopt(f->dealer[k], ZMQ_RCVHWM, &hwm, sizeof hwm) ||
            zmq_connect(f->dealer[k], bind) != 0 ||
            (f->xsub && zmq_connect(f->xsub, stream) != 0))
            return rs_fail(st, RS_EINTERNAL, "cannot connect the front to shard %d: %s", k,
                           zmq_strerror(zmq_errno()));
    }
    return 0;
}

void rs_shards_close(rs_server_t *s)
{
    struct rs_shards *f = s->shards;
    if (!f)
        return;
    for (int k = 0; k < f->n && f->dealer; k++)
        if (f->dealer[k])
            zmq_close(f->dealer[k]);
    if (f->xsub)
        zmq_close(f->xsub);
    while (f->gathers) {
        gather_t *g = f->gathers;
        f->gathers = g->next;
        gather_free(f, g);
    }
    for (int k = 0; k < f->n && f->shard; k++)
        rs_server_destroy(&f->shard[k]); /* its sockets close; the context is the front's */
    free(f->shard);
    free(f->thread);
    free(f->started);
    free(f->dealer);
    free(f->endpoints);
    free(f->conns);
    free(f->census.keys);
    for (int i = 0; i < ID_CHUNKS; i++)
        free(f->census.owner[i]);
    pthread_mutex_destroy(&f->census.lock);
    free(f);
    s->shards = NULL;
}

struct rs_census *rs_shards_census(rs_server_t *front)
{
    return front->shards ? &front->shards->census : NULL;
}

int rs_shard_meta(const zmq_msg_t *frame, rs_caller_t *caller)
{
    if (zmq_msg_size((zmq_msg_t *)frame) != sizeof(front_meta_t))
        return -1;
    front_meta_t meta;
    memcpy(&meta, zmq_msg_data((zmq_msg_t *)frame), sizeof meta);
    *caller = meta.caller;
    return 0;
}
