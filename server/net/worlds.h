/* The world table: the one place worlds are added to and removed from a server (CreateWorld,
 * ForkWorld, the start-up world, worlds restored from --state-dir, DestroyWorld, --world-ttl),
 * and the world counts that --max-worlds, the per-client quotas and --shards read (the census
 * the shards share, or the table itself without shards). No other file writes s->worlds or
 * s->nworlds. */
#ifndef RS_WORLDS_H
#define RS_WORLDS_H

#include <pthread.h>
#include <stdatomic.h>

#include "server_internal.h"

#define ID_CHUNK_BITS 16 /* the id -> shard table: chunks of 65536 ids ... */
#define ID_CHUNKS 65536  /* ... made on first use, 2^32 ids in all */

#define RS_SHAPES_MAX 1024 /* the kinds of world (preset and task) the census tells apart */

/* A kind of world, as a batch over several shards compares them (handlers_batch.c): its
 * preset and task ("" for none), actuators and task actions. Never changes once recorded. */
typedef struct rs_shape {
    char preset[32], task[32];
    uint32_t nu, na;
} rs_shape_t;

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
    atomic_int placed[256];                 /* connections placed on each shard */
    _Atomic(uint8_t *) owner[ID_CHUNKS];    /* world id -> 1 + its shard (0: none yet) */
    _Atomic(uint16_t *) kind[ID_CHUNKS];    /* world id -> 1 + its shape (0: no such world) */
    rs_shape_t shapes[RS_SHAPES_MAX];       /* written under the lock before nshapes grows */
    atomic_int nshapes;
};

/* Initialise (ids from 1) and free a census. */
void rs_census_init(struct rs_census *c);
void rs_census_free(struct rs_census *c);

/* Record world `id` (restored from a state dir) as shard k's. 0, or -1 when the id is past
 * the table or out of memory. */
int rs_census_place(struct rs_census *c, uint64_t id, int k);

/* Hand out no id below `next` (the state dir's record of the ids given before a restart). */
void rs_census_reserve_ids(struct rs_census *c, uint64_t next);

/* The shape of world `id` (of any shard) while it exists, or NULL. */
const rs_shape_t *rs_census_shape(struct rs_census *c, uint64_t id);

/* The shard of world `id`, or -1 (never handed out). */
int rs_census_shard_of(struct rs_census *c, uint64_t id);

/* ---- the table ---- */

/* The slot of world `id` (the server's record of it), or NULL. */
world_slot_t *rs_worlds_find(rs_server_t *s, uint64_t id);

/* Add `world` (now the table's) as world `id` (not in the table), in id order, held by quota
 * key `owner` ("" for none) and counted; its data made interruptible by the server's abort
 * flag; its other fields zero but last_active (now). The caller checked --max-worlds. Returns
 * its slot, valid until the table next changes. */
world_slot_t *rs_worlds_insert(rs_server_t *s, uint64_t id, rs_world_t *world,
                               const char *owner);

/* Destroy world w, with what the server keeps beside it, and remove it from the table and the
 * counts (DestroyWorld, --world-ttl). */
void rs_worlds_remove(rs_server_t *s, world_slot_t *w);

/* Make the empty table of cfg.max_worlds slots. 0 or RS_EEXHAUSTED. */
int rs_worlds_open(rs_server_t *s, rs_status_t *st);

/* Destroy every world, uncounted, and free the table (the server going; NULL-safe on the
 * table). */
void rs_worlds_close(rs_server_t *s);

/* ---- the counts ---- */

/* Worlds the server holds (all shards'), what --max-worlds bounds. */
int rs_worlds_total(const rs_server_t *s);

/* Worlds the quota key `key` holds (all shards'). */
int rs_worlds_owned(const rs_server_t *s, const char *key);

/* Record `worlds` more (or fewer: negative) worlds, and `delta` more held by `key`, in the
 * census the shards share (nothing for a server without shards: its table is the count). */
void rs_worlds_count(rs_server_t *s, const char *key, int worlds, int delta);

/* Whether the calling client may take one more world (create, fork or claim `what`): the
 * worlds its key (rs_caller_t.key) holds are under --max-worlds-per-client and under
 * --max-worlds-share of --max-worlds. 0 or RS_EEXHAUSTED. In-process callers have no quota. */
int rs_worlds_quota_ok(const rs_server_t *s, const char *what, rs_status_t *st);

/* A shard: the id for a new world, from the sequence all shards share, recorded as this
 * shard's. 0 or RS_EEXHAUSTED. */
int rs_worlds_take_id(rs_server_t *s, uint64_t *id, rs_status_t *st);

/* A shard: the other shard holding world `id`, or -1 (this one, or none). */
int rs_worlds_elsewhere(const rs_server_t *s, uint64_t id);

/* RS_ENOTFOUND for a batch's `what`[i] naming world `id`, saying whether it is on another
 * shard (a part of a batch passed to the wrong shard) or nowhere. */
int rs_no_world(const rs_server_t *s, rs_status_t *st, const char *what, size_t i, uint64_t id);

#endif
