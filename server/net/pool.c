/* Worker pools for StepBatch: a parallel for-loop over the items of one request at a time. The
 * calling thread (a server loop, a stepper) works as worker 0 and returns when every item is
 * done; items are handed out RS_POOL_CHUNK at a time from an atomic counter, so a slow world
 * does not hold up the others and a worker knows its next item (to prefetch it). Each pool has,
 * per worker, its own arena for what it builds and its own rollback for the worlds it steps.
 *
 * The helper threads are a crew's, shared by every pool made on it: a pool's open run is
 * listed with the crew, and an idle helper joins the open run it finds first (taking the next
 * worker number of that pool, up to the pool's width) and moves that run to the list's end,
 * so concurrent runs of several loops share the helpers. A process with one crew has its
 * number of helpers whatever its number of loops (a pool each had its own: loops x width
 * threads). The caller takes items until none is left and then waits only for the helpers
 * that joined, never for one to come: a run ends even when every helper is busy elsewhere.
 *
 * The crew counts its busy workers (callers inside a run and helpers in one) against its
 * width (helpers + 1, the CPUs by default): a run takes helpers only for CPUs no run holds,
 * and a helper leaves a run, between chunks, when more workers are busy than the width; and
 * for RS_POOL_CONTENDED_HOLD_S after a run began beside another busy worker, no run takes
 * helpers. So one loop's batch uses every core, while loops whose batches overlap step their
 * worlds alone: a helper among them would take turns on a core, step worlds whose memory then
 * moves between the cores' caches, and make the caller wait at its run's end for the chunk it
 * holds (docs/performance.md, "A default server against N servers"). */
#include "pool.h"
#include "rs_log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

struct rs_crew {
    int nhelpers;        /* threads asked for */
    int nstarted;        /* threads started (at the first run that wants them) */
    int start_tried;
    int nice;            /* the helpers' niceness (set as each starts) */
    int npools;          /* pools made on it and not yet destroyed */
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t work; /* a run opened, or stop */
    int width;           /* workers that may be busy at once: nhelpers + 1 */
    atomic_int busy;     /* workers busy now: callers inside a run, helpers in one */
    _Atomic double contended_at; /* rs_clock() when a run last began beside another busy one */
    rs_pool_t *head, *tail; /* the open runs that can take another helper */
    int stop;
};

struct rs_pool {
    rs_crew_t *crew;        /* NULL: no helpers */
    rs_crew_t *own_crew;    /* made by rs_pool_new, freed with the pool */
    int nthreads;           /* workers, the caller included */
    rs_arena_t *arenas;        /* nthreads */
    rs_rollback_t **rollbacks; /* nthreads */
    pthread_cond_t done;    /* the last helper in the run finished its share */
    /* the current run (written by the caller before it is listed, under the crew's lock) */
    size_t n;
    atomic_size_t next;
    rs_pool_fn fn;
    void *ctx;
    int max_join;           /* helpers that can have a share of it */
    int grain;              /* chunks per helper a run needs (rs_pool_set_grain) */
    /* under the crew's lock */
    int open;               /* takes helpers (until the caller's share ends) */
    int listed;             /* on the crew's list of open runs */
    int joined;             /* helpers that came (the next one is worker joined + 1) */
    int active;             /* helpers in it now */
    rs_pool_t *prev, *next_open;
};

static void work_share(rs_pool_t *p, int worker)
{
    rs_crew_t *c = p->crew;
    for (;;) {
        /* a helper leaves when the crew's busy workers outnumber its cores' worth */
        if (worker > 0 && atomic_load_explicit(&c->busy, memory_order_relaxed) > c->width)
            return;
        size_t i = atomic_fetch_add_explicit(&p->next, RS_POOL_CHUNK, memory_order_relaxed);
        if (i >= p->n)
            return;
        for (size_t end = i + RS_POOL_CHUNK < p->n ? i + RS_POOL_CHUNK : p->n; i < end; i++)
            p->fn(p->ctx, i, worker);
    }
}

/* ---- the crew's list of open runs (under its lock) ------------------------------------------ */

static void list_add(rs_crew_t *c, rs_pool_t *p)
{
    p->prev = c->tail;
    p->next_open = NULL;
    if (c->tail)
        c->tail->next_open = p;
    else
        c->head = p;
    c->tail = p;
    p->listed = 1;
}

static void list_remove(rs_crew_t *c, rs_pool_t *p)
{
    if (!p->listed)
        return;
    if (p->prev)
        p->prev->next_open = p->next_open;
    else
        c->head = p->next_open;
    if (p->next_open)
        p->next_open->prev = p->prev;
    else
        c->tail = p->prev;
    p->prev = p->next_open = NULL;
    p->listed = 0;
}

/* The first open run with items left for a helper (runs whose items are all taken leave). */
static rs_pool_t *open_run(rs_crew_t *c)
{
    rs_pool_t *p = c->head;
    while (p && atomic_load_explicit(&p->next, memory_order_relaxed) >= p->n) {
        rs_pool_t *after = p->next_open;
        list_remove(c, p);
        p = after;
    }
    return p;
}

static void *helper_main(void *arg)
{
    rs_crew_t *c = arg;
    if (c->nice > 0) {
        errno = 0;
        int now = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
        if (errno == 0 && now < c->nice)
            setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), c->nice);
    }
    pthread_mutex_lock(&c->lock);
    for (;;) {
        rs_pool_t *p = NULL;
        while (!c->stop && (atomic_load(&c->busy) >= c->width || !(p = open_run(c))))
            pthread_cond_wait(&c->work, &c->lock);
        if (c->stop)
            break;
        atomic_fetch_add(&c->busy, 1);
        int worker = ++p->joined;
        p->active++;
        list_remove(c, p);
        if (p->joined < p->max_join)
            list_add(c, p); /* at the end: the next helper tries another loop's run first */
        pthread_mutex_unlock(&c->lock);
        work_share(p, worker);
        pthread_mutex_lock(&c->lock);
        atomic_fetch_sub(&c->busy, 1);
        if (--p->active == 0 && !p->open)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* Start the crew's threads (under its lock, once); those that fail to start are done without. */
static void crew_start(rs_crew_t *c)
{
    c->start_tried = 1;
    for (int i = 0; i < c->nhelpers; i++) {
        if (pthread_create(&c->threads[i], NULL, helper_main, c) != 0) {
            rs_log(RS_LOG_WARN, "worker pool: started %d of %d helper threads", i, c->nhelpers);
            break;
        }
        c->nstarted = i + 1;
    }
}

rs_crew_t *rs_crew_new(int nhelpers, int nice_delta, rs_status_t *st)
{
    if (nhelpers < 1)
        return NULL;
    rs_crew_t *c = calloc(1, sizeof *c);
    if (!c || !(c->threads = calloc((size_t)nhelpers, sizeof *c->threads))) {
        free(c);
        rs_fail(st, RS_EEXHAUSTED, "out of memory for the worker pool");
        return NULL;
    }
    c->nhelpers = nhelpers;
    c->width = nhelpers + 1;
    atomic_init(&c->busy, 0);
    atomic_init(&c->contended_at, -1e300);
    errno = 0;
    int now = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    c->nice = nice_delta > 0 && errno == 0 ? now + nice_delta : 0;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->work, NULL);
    return c;
}

void rs_crew_destroy(rs_crew_t **pc)
{
    rs_crew_t *c = *pc;
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    if (c->npools)
        rs_log(RS_LOG_ERROR, "worker pool: crew destroyed with %d pools on it", c->npools);
    c->stop = 1;
    pthread_cond_broadcast(&c->work);
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < c->nstarted; i++)
        pthread_join(c->threads[i], NULL);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->work);
    free(c->threads);
    free(c);
    *pc = NULL;
}

int rs_crew_started(const rs_crew_t *c)
{
    if (!c)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&c->lock);
    int n = c->nstarted;
    pthread_mutex_unlock((pthread_mutex_t *)&c->lock);
    return n;
}

/* ---- pools ----------------------------------------------------------------------------------- */

rs_pool_t *rs_pool_new_on(rs_crew_t *crew, int nthreads, size_t rs_arena_chunk,
                          rs_status_t *st)
{
    if (nthreads < 1 || !crew)
        nthreads = 1;
    if (crew && nthreads > crew->nhelpers + 1)
        nthreads = crew->nhelpers + 1;
    rs_pool_t *p = calloc(1, sizeof *p);
    if (!p) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for the worker pool");
        return NULL;
    }
    p->crew = crew;
    p->nthreads = nthreads;
    p->grain = 1;
    p->arenas = calloc((size_t)nthreads, sizeof *p->arenas);
    p->rollbacks = calloc((size_t)nthreads, sizeof *p->rollbacks);
    int ok = p->arenas && p->rollbacks;
    for (int i = 0; ok && i < nthreads; i++)
        ok = (p->rollbacks[i] = rs_rollback_new()) != NULL;
    if (!ok) {
        for (int i = 0; p->rollbacks && i < nthreads; i++)
            rs_rollback_destroy(&p->rollbacks[i]);
        free(p->rollbacks);
        free(p->arenas);
        free(p);
        rs_fail(st, RS_EEXHAUSTED, "out of memory for the worker pool");
        return NULL;
    }
    for (int i = 0; i < nthreads; i++)
        rs_arena_init(&p->arenas[i], rs_arena_chunk);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->next, 0);
    if (crew) {
        pthread_mutex_lock(&crew->lock);
        crew->npools++;
        pthread_mutex_unlock(&crew->lock);
    }
    return p;
}

rs_pool_t *rs_pool_new(int nthreads, size_t rs_arena_chunk, rs_status_t *st)
{
    rs_crew_t *crew = NULL;
    if (nthreads > 1 && !(crew = rs_crew_new(nthreads - 1, 0, st)))
        return NULL;
    rs_pool_t *p = rs_pool_new_on(crew, nthreads, rs_arena_chunk, st);
    if (!p) {
        rs_crew_destroy(&crew);
        return NULL;
    }
    p->own_crew = crew;
    return p;
}

void rs_pool_destroy(rs_pool_t **pp)
{
    rs_pool_t *p = *pp;
    if (!p)
        return;
    if (p->crew) {
        pthread_mutex_lock(&p->crew->lock);
        p->crew->npools--;
        pthread_mutex_unlock(&p->crew->lock);
    }
    rs_crew_destroy(&p->own_crew);
    for (int i = 0; i < p->nthreads; i++) {
        rs_arena_free(&p->arenas[i]);
        rs_rollback_destroy(&p->rollbacks[i]);
    }
    pthread_cond_destroy(&p->done);
    free(p->rollbacks);
    free(p->arenas);
    free(p);
    *pp = NULL;
}

int rs_pool_width(const rs_pool_t *p) { return p->nthreads; }

void rs_pool_set_grain(rs_pool_t *p, int grain) { p->grain = grain > 1 ? grain : 1; }

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
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    /* helpers only when there is more than one chunk (the caller takes the first), and one
     * per `grain` chunks beyond it */
    size_t chunks = (n + RS_POOL_CHUNK - 1) / RS_POOL_CHUNK;
    int helpers = p->nthreads - 1;
    if ((size_t)helpers > (chunks - 1) / (size_t)p->grain)
        helpers = (int)((chunks - 1) / (size_t)p->grain);
    rs_crew_t *c = p->crew;
    if (c) { /* this caller is busy; helpers only for the cores no other run holds, and not
                while the crew's workers keep overlapping */
        int others = atomic_fetch_add(&c->busy, 1);
        int free_cores = c->width - others - 1;
        if (helpers > 0) {
            double now = rs_clock();
            if (others > 0)
                atomic_store_explicit(&c->contended_at, now, memory_order_relaxed);
            else if (now - atomic_load_explicit(&c->contended_at, memory_order_relaxed) <
                     RS_POOL_CONTENDED_HOLD_S)
                free_cores = 0;
        }
        if (helpers > free_cores)
            helpers = free_cores;
    }
    if (helpers > 0) {
        pthread_mutex_lock(&c->lock);
        if (!c->start_tried)
            crew_start(c);
        p->max_join = helpers;
        p->joined = 0;
        p->open = 1;
        list_add(c, p);
        pthread_cond_broadcast(&c->work);
        pthread_mutex_unlock(&c->lock);
    }
    work_share(p, 0);
    if (helpers > 0) {
        /* every item is taken: wait for the helpers that joined to finish theirs, not for
         * those still waking up (a helper's wake-up can take longer than a small batch's
         * items; one that wakes now finds the run gone from the list) */
        pthread_mutex_lock(&c->lock);
        p->open = 0;
        list_remove(c, p);
        while (p->active > 0)
            pthread_cond_wait(&p->done, &c->lock);
        pthread_mutex_unlock(&c->lock);
    }
    if (c)
        atomic_fetch_sub(&c->busy, 1);
}
