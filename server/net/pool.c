/* A fixed pool of worker threads for StepBatch: a parallel for-loop over the items of one
 * request at a time. The calling thread (the server loop) works as worker 0 and returns when
 * every item is done; items are handed out RS_POOL_CHUNK at a time from an atomic counter, so
 * a slow world does not hold up the others and a worker knows its next item (to prefetch it).
 * Each worker has its own arena for what it builds and its own rollback for the worlds it steps. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

struct rs_pool {
    int nthreads;           /* workers, the caller included */
    int nrollbacks;         /* workers asked for (nthreads once all started) */
    pthread_t *threads;     /* nthreads - 1 */
    rs_arena_t *arenas;        /* nthreads */
    rs_rollback_t **rollbacks; /* nthreads */
    pthread_mutex_t lock;
    pthread_cond_t work;    /* a new run (generation) or stop */
    pthread_cond_t done;    /* the last helper in the run finished its share */
    uint64_t generation;
    int stop;
    int open;               /* the current run takes helpers (until the caller's share ends) */
    int active;             /* helpers in the current run */
    /* the current run */
    size_t n;
    atomic_size_t next;
    rs_pool_fn fn;
    void *ctx;
};

typedef struct helper_arg {
    rs_pool_t *pool;
    int worker;
} helper_arg_t;

static void work_share(rs_pool_t *p, int worker)
{
    for (;;) {
        size_t i = atomic_fetch_add_explicit(&p->next, RS_POOL_CHUNK, memory_order_relaxed);
        if (i >= p->n)
            return;
        for (size_t end = i + RS_POOL_CHUNK < p->n ? i + RS_POOL_CHUNK : p->n; i < end; i++)
            p->fn(p->ctx, i, worker);
    }
}

static void *helper_main(void *arg)
{
    helper_arg_t *ha = arg;
    rs_pool_t *p = ha->pool;
    int worker = ha->worker;
    free(ha);
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->work, &p->lock);
        if (p->stop)
            break;
        seen = p->generation;
        if (!p->open)
            continue; /* woke after the run's items were all taken: nothing of it to do */
        p->active++;
        pthread_mutex_unlock(&p->lock);
        work_share(p, worker);
        pthread_mutex_lock(&p->lock);
        if (--p->active == 0 && !p->open)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

rs_pool_t *rs_pool_new(int nthreads, size_t rs_arena_chunk, rs_status_t *st)
{
    if (nthreads < 1)
        nthreads = 1;
    rs_pool_t *p = calloc(1, sizeof *p);
    if (!p) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for the worker pool");
        return NULL;
    }
    p->nthreads = 1; /* the caller; helpers counted as they start */
    p->nrollbacks = nthreads;
    p->arenas = calloc((size_t)nthreads, sizeof *p->arenas);
    p->threads = calloc((size_t)nthreads, sizeof *p->threads);
    p->rollbacks = calloc((size_t)nthreads, sizeof *p->rollbacks);
    int ok = p->arenas && p->threads && p->rollbacks;
    for (int i = 0; ok && i < nthreads; i++)
        ok = (p->rollbacks[i] = rs_rollback_new()) != NULL;
    if (!ok) {
        for (int i = 0; p->rollbacks && i < nthreads; i++)
            rs_rollback_destroy(&p->rollbacks[i]);
        free(p->rollbacks);
        free(p->arenas);
        free(p->threads);
        free(p);
        rs_fail(st, RS_EEXHAUSTED, "out of memory for the worker pool");
        return NULL;
    }
    for (int i = 0; i < nthreads; i++)
        rs_arena_init(&p->arenas[i], rs_arena_chunk);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->next, 0);
    for (int i = 1; i < nthreads; i++) {
        helper_arg_t *ha = malloc(sizeof *ha);
        if (ha) {
            ha->pool = p;
            ha->worker = i;
        }
        if (!ha || pthread_create(&p->threads[i - 1], NULL, helper_main, ha) != 0) {
            free(ha);
            rs_pool_destroy(&p);
            rs_fail(st, RS_EEXHAUSTED, "cannot start worker thread %d of %d", i + 1, nthreads);
            return NULL;
        }
        p->nthreads = i + 1;
    }
    return p;
}

void rs_pool_destroy(rs_pool_t **pp)
{
    rs_pool_t *p = *pp;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int i = 1; i < p->nthreads; i++)
        pthread_join(p->threads[i - 1], NULL);
    for (int i = 0; i < p->nthreads; i++)
        rs_arena_free(&p->arenas[i]);
    for (int i = 0; i < p->nrollbacks; i++)
        rs_rollback_destroy(&p->rollbacks[i]);
    free(p->rollbacks);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p->arenas);
    free(p->threads);
    free(p);
    *pp = NULL;
}


rs_arena_t *rs_pool_arena(rs_pool_t *p, int worker) { return &p->arenas[worker]; }

rs_rollback_t *rs_pool_rollback(rs_pool_t *p, int worker) { return p->rollbacks[worker]; }

void rs_pool_run(rs_pool_t *p, size_t n, rs_pool_fn fn, void *ctx)
{
    for (int i = 0; i < p->nthreads; i++)
        rs_arena_reset(&p->arenas[i]);
    if (n == 0)
        return;
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    atomic_store(&p->next, 0);
    /* helpers only when there is more than one item for them to share */
    int helpers = p->nthreads - 1;
    if ((size_t)helpers > n - 1)
        helpers = (int)(n - 1);
    if (helpers > 0) {
        pthread_mutex_lock(&p->lock);
        p->open = 1;
        p->generation++;
        pthread_cond_broadcast(&p->work);
        pthread_mutex_unlock(&p->lock);
    }
    work_share(p, 0);
    if (helpers > 0) {
        /* every item is taken: wait for the helpers that joined to finish theirs, not for
         * those still waking up (a helper's wake-up can take longer than a small batch's
         * items; one that wakes now finds the run closed) */
        pthread_mutex_lock(&p->lock);
        p->open = 0;
        while (p->active > 0)
            pthread_cond_wait(&p->done, &p->lock);
        pthread_mutex_unlock(&p->lock);
    }
}
