/* The worker pool that runs a StepBatch's items in parallel (pool.c). */
#ifndef RS_POOL_H
#define RS_POOL_H

#include <stddef.h>

#include "arena.h"
#include "rs_core.h"
#include "rs_errors.h"

typedef struct rs_pool rs_pool_t;

/* Items a worker takes at a time: within a run of them, item + 1 comes next on this worker
 * (rs_pool_next_is_mine), which fn may prefetch while it works on item. */
#define RS_POOL_CHUNK 8

/* Whether item + 1 of n will run on the worker now running item (the same chunk). */
static inline int rs_pool_next_is_mine(size_t item, size_t n)
{
    return item + 1 < n && (item + 1) % RS_POOL_CHUNK != 0;
}

/* fn(ctx, item, worker): run item `item` on worker `worker` (0 .. threads-1). */
typedef void (*rs_pool_fn)(void *ctx, size_t item, int worker);

/* A pool of `nthreads` workers: the calling thread and nthreads - 1 helper threads, each with
 * an arena of `rs_arena_chunk`-byte chunks. NULL on failure (reason in st). */
rs_pool_t *rs_pool_new(int nthreads, size_t rs_arena_chunk, rs_status_t *st);

/* Stop and join the helpers, free the arenas and `*p` (NULL-safe); set `*p` to NULL. */
void rs_pool_destroy(rs_pool_t **p);

/* Worker w's arena: reset at the start of each rs_pool_run, so what fn builds there lives
 * until the next run. */
rs_arena_t *rs_pool_arena(rs_pool_t *p, int worker);

/* Worker w's rollback (rs_data_save): the boundary of the world it is stepping. Worker 0 is
 * the thread that calls rs_pool_run, whose other work may use it between runs. */
rs_rollback_t *rs_pool_rollback(rs_pool_t *p, int worker);

/* Run fn on items 0 .. n-1 across the workers and return when all are done. Items run in no
 * particular order and concurrently: fn must touch only what its item owns (and its worker's
 * arena). Not reentrant: one run at a time, from one thread. */
void rs_pool_run(rs_pool_t *p, size_t n, rs_pool_fn fn, void *ctx);

#endif
