/* The worker pools that run a StepBatch's items in parallel, and the crews of helper threads
 * they share (pool.c). */
#ifndef RS_POOL_H
#define RS_POOL_H

#include <stddef.h>

#include "arena.h"
#include "rs_core.h"
#include "rs_errors.h"

typedef struct rs_pool rs_pool_t;
typedef struct rs_crew rs_crew_t;

/* Items a worker takes at a time: within a run of them, the items after item come next on this
 * worker (rs_pool_ahead_is_mine), which fn may prefetch while it works on item. */
#define RS_POOL_CHUNK 8

/* Whether item + k of n will run on the worker now running item (the same chunk). */
static inline int rs_pool_ahead_is_mine(size_t item, size_t k, size_t n)
{
    return item + k < n && item % RS_POOL_CHUNK + k < RS_POOL_CHUNK;
}

/* fn(ctx, item, worker): run item `item` on worker `worker` (0 .. threads-1). */
typedef void (*rs_pool_fn)(void *ctx, size_t item, int worker);

/* A crew of `nhelpers` helper threads that any number of pools share: each helps whichever
 * pool has a run open, so one process needs one crew however many loops run batches. The
 * threads start at the first run that wants them, `nice_delta` above the niceness of the
 * thread calling rs_crew_new. NULL on failure (reason in st); nhelpers < 1 gives NULL with
 * no failure (a pool on a NULL crew has no helpers). */
rs_crew_t *rs_crew_new(int nhelpers, int nice_delta, rs_status_t *st);

/* Stop and join the crew's threads, free it (NULL-safe); set `*p` to NULL. Every pool on it
 * must be destroyed first. */
void rs_crew_destroy(rs_crew_t **p);

/* Threads the crew has started (0 until a run wanted them). */
int rs_crew_started(const rs_crew_t *c);

/* A pool of `nthreads` workers on crew `crew` (borrowed; NULL: none): the calling thread as
 * worker 0 and up to nthreads - 1 of the crew's helpers (as many as it has), each with an
 * arena of `rs_arena_chunk`-byte chunks. A run never waits for a helper to come: the caller
 * takes items until none is left, so runs of pools sharing a crew (or a run started inside
 * another's item) cannot deadlock. NULL on failure (reason in st). */
rs_pool_t *rs_pool_new_on(rs_crew_t *crew, int nthreads, size_t rs_arena_chunk,
                          rs_status_t *st);

/* After two workers of a crew were last busy at once, its runs take no helper for this long:
 * loops that keep overlapping (several clients' batches) keep each its own core, and their
 * worlds in its cache; a loop alone for longer has every core again. */
#define RS_POOL_CONTENDED_HOLD_S 0.02

/* Chunks of a run per helper it may take (default 1): a run of c chunks takes at most
 * (c - 1) / grain helpers, so a run too short to repay waking a helper runs on its caller
 * alone. */
void rs_pool_set_grain(rs_pool_t *p, int grain);

/* rs_pool_new_on with a crew of its own of nthreads - 1 helpers (freed with it). */
rs_pool_t *rs_pool_new(int nthreads, size_t rs_arena_chunk, rs_status_t *st);

/* Free the pool's arenas, rollbacks and own crew, and `*p` (NULL-safe); set `*p` to NULL. */
void rs_pool_destroy(rs_pool_t **p);

/* The pool's workers (the caller included): items see worker 0 .. this - 1. */
int rs_pool_width(const rs_pool_t *p);

/* Worker w's arena: reset at the start of each rs_pool_run, so what fn builds there lives
 * until the next run. */
rs_arena_t *rs_pool_arena(rs_pool_t *p, int worker);

/* Worker w's rollback (rs_data_save): the boundary of the world it is stepping. Worker 0 is
 * the thread that calls rs_pool_run, whose other work may use it between runs. */
rs_rollback_t *rs_pool_rollback(rs_pool_t *p, int worker);

/* Run fn on items 0 .. n-1 across the workers and return when all are done. Items run in no
 * particular order and concurrently: fn must touch only what its item owns (and its worker's
 * arena). Not reentrant on one pool: one run at a time, from one thread (pools on one crew
 * run at the same time from their threads). */
void rs_pool_run(rs_pool_t *p, size_t n, rs_pool_fn fn, void *ctx);

#endif
