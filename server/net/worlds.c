/* The world table and the world counts (worlds.h). */
#include "worlds.h"
#include "declared.h"
#include "rs_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table ------------------------------------------------------------------------------ */

world_slot_t *rs_worlds_find(rs_server_t *s, uint64_t id)
{
    /* the table is sorted by id */
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

static void census_set_shape(struct rs_census *c, uint64_t id, const rs_world_t *world);

world_slot_t *rs_worlds_insert(rs_server_t *s, uint64_t id, rs_world_t *world,
                               const char *owner)
{
    /* new ids only grow: a new world goes at the end; restored ones come in any order */
    int at = s->nworlds;
    while (at > 0 && s->worlds[at - 1].id > id)
        at--;
    memmove(&s->worlds[at + 1], &s->worlds[at], (size_t)(s->nworlds - at) * sizeof *s->worlds);
    world_slot_t *slot = &s->worlds[at];
    memset(slot, 0, sizeof *slot);
    slot->id = id;
    slot->world = world;
    snprintf(slot->owner, sizeof slot->owner, "%s", owner);
    slot->sched.last_active = rs_monotonic();
    s->nworlds++;
    rs_worlds_count(s, slot->owner, 1, 1);
    rs_declared_world(world->task, 1); /* a declared task stays while a world runs it */
    if (s->census)
        census_set_shape(s->census, id, world);
    /* its steps interruptible by the request budget and a stop, like any */
    rs_data_set_abort(world->data, &s->abort);
    return slot;
}

/* Free what the server keeps beside world w (its history) and the world. */
static void forget(world_slot_t *w)
{
    rs_declared_world(w->world->task, -1);
    rs_history_destroy(&w->history);
    rs_world_destroy(&w->world);
}

void rs_worlds_remove(rs_server_t *s, world_slot_t *w)
{
    rs_worlds_count(s, w->owner, -1, -1);
    if (s->census)
        census_set_shape(s->census, w->id, NULL);
    forget(w);
    /* keep the table dense and sorted by id */
    size_t at = (size_t)(w - s->worlds);
    memmove(w, w + 1, ((size_t)s->nworlds - at - 1) * sizeof *w);
    s->nworlds--;
}

int rs_worlds_open(rs_server_t *s, rs_status_t *st)
{
    int n = s->cfg.max_worlds > 0 ? s->cfg.max_worlds : 1;
    if (!(s->worlds = calloc((size_t)n, sizeof *s->worlds)))
        return rs_fail(st, RS_EEXHAUSTED, "out of memory for %d worlds", s->cfg.max_worlds);
    return 0;
}

void rs_worlds_close(rs_server_t *s)
{
    for (int i = 0; i < s->nworlds; i++)
        forget(&s->worlds[i]);
    s->nworlds = 0;
    free(s->worlds);
    s->worlds = NULL;
}

/* ---- the counts ------------------------------------------------------------------------------ */

void rs_census_init(struct rs_census *c)
{
    pthread_mutex_init(&c->lock, NULL);
    atomic_init(&c->next_id, 1);
}

void rs_census_free(struct rs_census *c)
{
    free(c->keys);
    for (int i = 0; i < ID_CHUNKS; i++) {
        free(c->owner[i]);
        free(c->kind[i]);
    }
    pthread_mutex_destroy(&c->lock);
}

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

/* The owner byte of id v in the census's table (its chunk made on first use), or NULL when v
 * is past the table or out of memory. */
static _Atomic uint8_t *owner_byte(struct rs_census *c, uint64_t v)
{
    uint64_t chunk = v >> ID_CHUNK_BITS;
    if (chunk >= ID_CHUNKS)
        return NULL;
    uint8_t *table = atomic_load_explicit(&c->owner[chunk], memory_order_acquire);
    if (!table) {
        uint8_t *fresh = calloc((size_t)1 << ID_CHUNK_BITS, 1);
        if (!fresh)
            return NULL;
        if (atomic_compare_exchange_strong(&c->owner[chunk], &table, fresh))
            table = fresh;
        else
            free(fresh); /* another shard made it first: `table` is theirs */
    }
    return (_Atomic uint8_t *)&table[v & ((1u << ID_CHUNK_BITS) - 1)];
}

int rs_worlds_take_id(rs_server_t *s, uint64_t *id, rs_status_t *st)
{
    struct rs_census *c = s->census;
    uint64_t v = atomic_fetch_add(&c->next_id, 1);
    if (v >> ID_CHUNK_BITS >= ID_CHUNKS)
        return rs_fail(st, RS_EEXHAUSTED, "this server has handed out every world id (up to "
                       "%llu)", (unsigned long long)ID_CHUNKS << ID_CHUNK_BITS);
    _Atomic uint8_t *owner = owner_byte(c, v);
    if (!owner)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory for the world id table");
    /* a byte per id, written once by its shard, read by the front: relaxed suffices because the
     * reply naming the world leaves through a ZeroMQ queue (a full barrier) after this */
    atomic_store_explicit(owner, (uint8_t)(s->shard_index + 1), memory_order_release);
    *id = v;
    return 0;
}

int rs_census_place(struct rs_census *c, uint64_t id, int k)
{
    _Atomic uint8_t *owner = owner_byte(c, id);
    if (!owner)
        return -1;
    atomic_store_explicit(owner, (uint8_t)(k + 1), memory_order_release);
    return 0;
}

void rs_census_reserve_ids(struct rs_census *c, uint64_t next)
{
    uint_fast64_t now = atomic_load(&c->next_id);
    while (now < next && !atomic_compare_exchange_weak(&c->next_id, &now, next))
        ;
}

/* The kind slot of id v (its chunk made on first use), or NULL (past the table, no memory). */
static _Atomic uint16_t *kind_slot(struct rs_census *c, uint64_t v, int make)
{
    uint64_t chunk = v >> ID_CHUNK_BITS;
    if (chunk >= ID_CHUNKS)
        return NULL;
    uint16_t *table = atomic_load_explicit(&c->kind[chunk], memory_order_acquire);
    if (!table && make) {
        uint16_t *fresh = calloc((size_t)1 << ID_CHUNK_BITS, sizeof *fresh);
        if (!fresh)
            return NULL;
        if (atomic_compare_exchange_strong(&c->kind[chunk], &table, fresh))
            table = fresh;
        else
            free(fresh);
    }
    return table ? (_Atomic uint16_t *)&table[v & ((1u << ID_CHUNK_BITS) - 1)] : NULL;
}

/* Record world id's shape (NULL: the world is gone). A shape past RS_SHAPES_MAX, or no memory,
 * leaves it unrecorded: a batch over several shards then passes the world to its shard
 * unchecked, which compares it with its part's first world. */
static void census_set_shape(struct rs_census *c, uint64_t id, const rs_world_t *world)
{
    _Atomic uint16_t *slot = kind_slot(c, id, world != NULL);
    if (!slot)
        return;
    int k = 0;
    if (world) {
        const char *task = world->task ? world->task->name : "";
        pthread_mutex_lock(&c->lock);
        int n = atomic_load(&c->nshapes);
        while (k < n && (strcmp(c->shapes[k].preset, world->model->preset) != 0 ||
                         strcmp(c->shapes[k].task, task) != 0))
            k++;
        if (k == n && n < RS_SHAPES_MAX) {
            rs_shape_t *sh = &c->shapes[n];
            snprintf(sh->preset, sizeof sh->preset, "%s", world->model->preset);
            snprintf(sh->task, sizeof sh->task, "%s", task);
            sh->nu = (uint32_t)world->model->nu;
            sh->na = world->task ? (uint32_t)world->task->nact : 0;
            atomic_store_explicit(&c->nshapes, n + 1, memory_order_release);
        }
        pthread_mutex_unlock(&c->lock);
        k = k < RS_SHAPES_MAX ? k + 1 : 0;
    }
    atomic_store_explicit(slot, (uint16_t)k, memory_order_release);
}

const rs_shape_t *rs_census_shape(struct rs_census *c, uint64_t id)
{
    _Atomic uint16_t *slot = kind_slot(c, id, 0);
    int k = slot ? atomic_load_explicit(slot, memory_order_acquire) : 0;
    return k > 0 && k <= atomic_load_explicit(&c->nshapes, memory_order_acquire)
               ? &c->shapes[k - 1]
               : NULL;
}

int rs_census_shard_of(struct rs_census *c, uint64_t id)
{
    uint64_t chunk = id >> ID_CHUNK_BITS;
    if (chunk >= ID_CHUNKS)
        return -1;
    uint8_t *table = atomic_load_explicit(&c->owner[chunk], memory_order_acquire);
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
    int k = rs_census_shard_of(s->census, id); /* the front's, which its shards share */
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
                   "%sworld %llu is served by another of this server's %d shards (--shards); "
                   "send the batch to the server's endpoint, which passes each shard its part",
                   head, (unsigned long long)id, s->front->cfg.shards);
}

/* What a quota key names, for a refusal's message. */
static const char *key_kind(const char *key)
{
    if (!strncmp(key, "curve:", 6))
        return "CURVE key";
    if (!strcmp(key, "ip:loopback"))
        return "address (every client on this machine's loopback shares it)";
    if (!strncmp(key, "ip:", 3))
        return "address";
    if (!strncmp(key, "uid:", 4))
        return "user id";
    return "connection";
}

int rs_worlds_quota_ok(const rs_server_t *s, const char *what, rs_status_t *st)
{
    const char *who = s->caller->key;
    int max = s->cfg.max_worlds_per_client, n = 0;
    double share = s->cfg.max_worlds_share > 0 ? s->cfg.max_worlds_share : 1.0;
    int cap = (int)floor(share * s->cfg.max_worlds + 1e-9);
    if (cap < 1)
        cap = 1;
    if (!who[0])
        return 0;
    n = rs_worlds_owned(s, who);
    if (max > 0 && n >= max && max <= cap)
        return rs_fail(st, RS_EEXHAUSTED,
                       "this client's %s already holds %d worlds, its quota "
                       "(--max-worlds-per-client %d; worlds it created, forked or claimed count, "
                       "from every connection it has); destroy one of them (DestroyWorld) before "
                       "it can %s another",
                       key_kind(who), n, max, what);
    if (n >= cap)
        return rs_fail(st, RS_EEXHAUSTED,
                       "this client's %s already holds %d worlds, the most one client may "
                       "(--max-worlds-share %g of --max-worlds %d: the rest is kept for other "
                       "clients); destroy one of them (DestroyWorld) before it can %s another",
                       key_kind(who), n, share, s->cfg.max_worlds, what);
    return 0;
}
