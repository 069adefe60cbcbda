/* The StepBatch worker pool (pool.c) under stress: many runs of a few items each, where the
 * hand-off between runs is most delicate. A helper may wake for a run after its items are all
 * taken (it must find the run closed and not touch the next one's items), and rs_pool_run must
 * not return while a helper that joined is still in an item. Checked over thousands of runs of
 * 1 to 40 items on pools of 2 to 8 workers, with some items slow (a sleep) so helpers join
 * late:
 *   - every item runs exactly once, on a worker in range, and only while its run is open
 *     (an item run after rs_pool_run returned, or twice, is counted);
 *   - what an item writes into its worker's arena is intact when the run ends (each worker's
 *     arena is its own);
 *   - a pool made and destroyed at once, and one destroyed right after a run, stop cleanly;
 *   - the same with four threads running at once, each on a pool of its own on one shared crew
 *     of helpers (as the shards' loops do), whose helpers join their runs; and a run started
 *     inside an item of another pool's run on the same crew ends (no deadlock);
 *   - a run takes no helper while other runs already hold the crew's cores' worth of workers
 *     (its width): loops whose batches fill the cores step them alone.
 * Build with -DROBOSIM_TSAN=ON to have ThreadSanitizer watch the same runs. */
#include "pool.h"
#include "rs_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ITEMS 40

typedef struct run_ctx {
    atomic_int open;                 /* 1 while rs_pool_run runs this run */
    atomic_int count[MAX_ITEMS];     /* times each item ran */
    atomic_int late;                 /* items run while the run was not open */
    atomic_int inside;               /* items running now */
    atomic_int bad_worker;           /* items given a worker out of range */
    atomic_int helped;               /* items run by a helper (worker > 0) */
    int nworkers;
    uint32_t slow_mask;              /* items that sleep (helpers join late) */
    uint64_t *stamp[MAX_ITEMS];      /* per item: its value in its worker's arena */
    rs_pool_t *pool;
} run_ctx_t;

static void item(void *ctx, size_t i, int worker)
{
    run_ctx_t *r = ctx;
    atomic_fetch_add(&r->inside, 1);
    if (!atomic_load(&r->open))
        atomic_fetch_add(&r->late, 1);
    if (worker < 0 || worker >= r->nworkers) {
        atomic_fetch_add(&r->bad_worker, 1);
        atomic_fetch_sub(&r->inside, 1);
        return;
    }
    if (worker > 0)
        atomic_fetch_add(&r->helped, 1);
    if (i < 32 && (r->slow_mask >> i) & 1) {
        struct timespec ts = {0, 20000 + (long)(i * 1000)};
        nanosleep(&ts, NULL);
    }
    uint64_t *v = rs_arena_alloc(rs_pool_arena(r->pool, worker), sizeof *v);
    if (v)
        *v = 0x9e3779b97f4a7c15ull * (i + 1);
    r->stamp[i] = v;
    atomic_fetch_add(&r->count[i], 1);
    atomic_fetch_sub(&r->inside, 1);
}

/* A small deterministic generator (the runs are reproducible from the seed printed). */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

typedef struct tally {
    int twice, missed, late, bad, torn, busy, helped;
} tally_t;

/* nruns runs on `pool` (nworkers wide) of sizes drawn from seed, counted into t. */
static void run_many(rs_pool_t *pool, int nworkers, int nruns, uint64_t seed, int big,
                     run_ctx_t *r, tally_t *t)
{
    uint64_t s = seed;
    for (int k = 0; k < nruns; k++) {
        uint64_t x = next_rand(&s);
        /* mostly 1-3 items (helpers woken for almost nothing), sometimes up to MAX_ITEMS;
         * `big`: always more than one chunk, so helpers are asked */
        size_t n = big ? RS_POOL_CHUNK + 1 + (size_t)((x >> 2) % (MAX_ITEMS - RS_POOL_CHUNK))
                 : (x & 3) ? 1 + (size_t)((x >> 2) % 3)
                           : 1 + (size_t)((x >> 2) % MAX_ITEMS);
        memset(r, 0, sizeof *r);
        r->nworkers = nworkers;
        r->pool = pool;
        r->slow_mask = (x >> 16) % 5 == 0 ? (uint32_t)(x >> 32) : 0;
        atomic_store(&r->open, 1);
        rs_pool_run(pool, n, item, r);
        t->busy += atomic_load(&r->inside) != 0; /* returned while a helper was in an item */
        for (size_t i = 0; i < n; i++) {
            int c = atomic_load(&r->count[i]);
            t->missed += c == 0;
            t->twice += c > 1;
            t->torn += r->stamp[i] && *r->stamp[i] != 0x9e3779b97f4a7c15ull * (i + 1);
        }
        atomic_store(&r->open, 0);
        /* a helper still in this run's items after the return would count as late here */
        t->late += atomic_load(&r->late);
        t->bad += atomic_load(&r->bad_worker);
        t->helped += atomic_load(&r->helped) > 0;
    }
}

static void check_tally(const tally_t *t, const char *what, int nthreads, uint64_t seed)
{
    CHECK(t->missed == 0 && t->twice == 0,
          "%s, %d workers, seed %llu: %d items never ran, %d ran more than once", what,
          nthreads, (unsigned long long)seed, t->missed, t->twice);
    CHECK(t->late == 0, "%s, %d workers, seed %llu: %d items ran after rs_pool_run returned",
          what, nthreads, (unsigned long long)seed, t->late);
    CHECK(t->busy == 0, "%s, %d workers, seed %llu: rs_pool_run returned %d times with an item "
          "still running", what, nthreads, (unsigned long long)seed, t->busy);
    CHECK(t->bad == 0, "%s, %d workers: %d items given a worker out of range", what, nthreads,
          t->bad);
    CHECK(t->torn == 0, "%s, %d workers: %d arena values overwritten before the run ended",
          what, nthreads, t->torn);
}

static void stress(int nthreads, int nruns, uint64_t seed)
{
    rs_status_t st;
    rs_status_clear(&st);
    rs_pool_t *pool = rs_pool_new(nthreads, 4096, &st);
    CHECK(pool != NULL, "rs_pool_new(%d): %s", nthreads, st.message);
    if (!pool)
        return;
    static run_ctx_t r;
    tally_t t = {0};
    run_many(pool, nthreads, nruns, seed, 0, &r, &t);
    rs_pool_destroy(&pool);
    CHECK(pool == NULL, "rs_pool_destroy clears the pointer");
    check_tally(&t, "own crew", nthreads, seed);
    printf("%d workers: %d runs, seed %llu\n", nthreads, nruns, (unsigned long long)seed);
}

/* Several threads, each with a pool of its own on one shared crew, running at once (as the
 * shards' loops do): the same checks per pool, and the crew's helpers do join runs. */
#define SHARED_CALLERS 4

typedef struct caller {
    pthread_t thread;
    rs_pool_t *pool;
    int width;
    int nruns;
    uint64_t seed;
    run_ctx_t r;
    tally_t t;
} caller_t;

static void *caller_main(void *arg)
{
    caller_t *c = arg;
    run_many(c->pool, c->width, c->nruns, c->seed, 1, &c->r, &c->t);
    return NULL;
}

static void shared_stress(int nhelpers, int width, int nruns, uint64_t seed)
{
    rs_status_t st;
    rs_status_clear(&st);
    rs_crew_t *crew = rs_crew_new(nhelpers, 0, &st);
    CHECK(crew != NULL, "rs_crew_new(%d): %s", nhelpers, st.message);
    if (!crew)
        return;
    CHECK(rs_crew_started(crew) == 0, "a crew starts its threads at the first run");
    static caller_t callers[SHARED_CALLERS];
    int ok = 1;
    for (int k = 0; k < SHARED_CALLERS; k++) {
        caller_t *c = &callers[k];
        memset(c, 0, sizeof *c);
        c->pool = rs_pool_new_on(crew, width, 4096, &st);
        CHECK(c->pool != NULL, "rs_pool_new_on: %s", st.message);
        ok &= c->pool != NULL;
        c->width = c->pool ? rs_pool_width(c->pool) : 0;
        CHECK(c->width == (width < nhelpers + 1 ? width : nhelpers + 1),
              "a pool on a crew of %d is at most %d wide (asked %d, got %d)", nhelpers,
              nhelpers + 1, width, c->width);
        c->nruns = nruns;
        c->seed = seed + (uint64_t)k * 7919;
    }
    for (int k = 0; ok && k < SHARED_CALLERS; k++)
        ok &= pthread_create(&callers[k].thread, NULL, caller_main, &callers[k]) == 0;
    CHECK(ok, "callers started");
    tally_t all = {0};
    for (int k = 0; ok && k < SHARED_CALLERS; k++) {
        pthread_join(callers[k].thread, NULL);
        check_tally(&callers[k].t, "shared crew", callers[k].width, callers[k].seed);
        all.helped += callers[k].t.helped;
    }
    CHECK(rs_crew_started(crew) == nhelpers, "the crew started its %d threads (%d)", nhelpers,
          rs_crew_started(crew));
    /* how often helpers join here depends on how many callers are in a run at once (a run
     * takes helpers only for the crew's cores no run holds): busy_cores checks both sides */
    for (int k = 0; k < SHARED_CALLERS; k++)
        rs_pool_destroy(&callers[k].pool);
    rs_crew_destroy(&crew);
    CHECK(crew == NULL, "rs_crew_destroy clears the pointer");
    printf("shared crew of %d, %d pools %d wide: %d runs each, %d helped, seed %llu\n",
           nhelpers, SHARED_CALLERS, width, nruns, all.helped, (unsigned long long)seed);
}

/* A run started inside an item of another pool's run on the same crew (its helpers may all
 * be in the outer run) ends: a run never waits for a helper to come. */
typedef struct nested {
    rs_pool_t *inner;
    run_ctx_t r;
    atomic_int done;
} nested_t;

static void outer_item(void *ctx, size_t i, int worker)
{
    (void)worker;
    nested_t *x = ctx;
    if (i != 0) /* one inner run at a time (its pool is not reentrant) */
        return;
    run_ctx_t *r = &x->r;
    memset(r, 0, sizeof *r);
    r->nworkers = rs_pool_width(x->inner);
    r->pool = x->inner;
    atomic_store(&r->open, 1);
    rs_pool_run(x->inner, MAX_ITEMS, item, r);
    atomic_store(&r->open, 0);
    int all = 1;
    for (int k = 0; k < MAX_ITEMS; k++)
        all &= atomic_load(&r->count[k]) == 1;
    atomic_fetch_add(&x->done, all);
}

static void nested_runs(void)
{
    rs_status_t st;
    rs_status_clear(&st);
    rs_crew_t *crew = rs_crew_new(2, 0, &st);
    rs_pool_t *outer = rs_pool_new_on(crew, 3, 1024, &st);
    static nested_t x;
    memset(&x, 0, sizeof x);
    x.inner = rs_pool_new_on(crew, 3, 1024, &st);
    CHECK(crew && outer && x.inner, "a crew and two pools on it: %s", st.message);
    if (crew && outer && x.inner) {
        for (int k = 0; k < 200; k++)
            rs_pool_run(outer, 3 * RS_POOL_CHUNK, outer_item, &x);
        CHECK(atomic_load(&x.done) == 200, "inner runs inside an outer run's items: %d of 200 "
              "ran every item once", atomic_load(&x.done));
    }
    rs_pool_destroy(&x.inner);
    rs_pool_destroy(&outer);
    rs_crew_destroy(&crew);
}

/* A run takes no helper while the crew's width is already busy: on a crew of one helper
 * (width 2), pool A's run is held open by its one item (its caller busy) while pool B runs
 * slow items on another thread; none of B's may go to the helper. Then, longer than
 * RS_POOL_CONTENDED_HOLD_S after, B's items do reach it when slow enough for it to wake (the
 * crew is not simply switched off). */
typedef struct holder {
    rs_pool_t *pool;
    atomic_int started, release;
} holder_t;

static void hold_item(void *ctx, size_t i, int worker)
{
    (void)i, (void)worker;
    holder_t *h = ctx;
    atomic_store(&h->started, 1);
    for (int k = 0; k < 20000 && !atomic_load(&h->release); k++) {
        struct timespec ts = {0, 250000};
        nanosleep(&ts, NULL);
    }
}

static void *holder_main(void *arg)
{
    holder_t *h = arg;
    rs_pool_run(h->pool, 1, hold_item, h);
    return NULL;
}

static int helped_runs(rs_pool_t *b, int runs)
{
    int helped = 0;
    static run_ctx_t r;
    for (int k = 0; k < runs; k++) {
        memset(&r, 0, sizeof r);
        r.nworkers = rs_pool_width(b);
        r.pool = b;
        r.slow_mask = 0xffffffffu; /* every item sleeps: time for the helper to wake */
        atomic_store(&r.open, 1);
        rs_pool_run(b, MAX_ITEMS, item, &r);
        atomic_store(&r.open, 0);
        helped += atomic_load(&r.helped) > 0;
    }
    return helped;
}

static void busy_cores(void)
{
    rs_status_t st;
    rs_status_clear(&st);
    rs_crew_t *crew = rs_crew_new(1, 0, &st);
    static holder_t h;
    memset(&h, 0, sizeof h);
    h.pool = rs_pool_new_on(crew, 2, 1024, &st);
    rs_pool_t *b = rs_pool_new_on(crew, 2, 1024, &st);
    CHECK(crew && h.pool && b, "a crew of one helper and two pools on it: %s", st.message);
    pthread_t t;
    if (crew && h.pool && b && pthread_create(&t, NULL, holder_main, &h) == 0) {
        while (!atomic_load(&h.started)) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        int helped = helped_runs(b, 20);
        CHECK(helped == 0, "another loop's run holds one of the crew's 2 cores: %d of 20 runs "
              "took the helper anyway", helped);
        atomic_store(&h.release, 1);
        pthread_join(t, NULL);
        /* B's runs began beside A's caller: the crew takes no helper for a while after (not
         * checked: on a loaded machine the join alone may outlast the hold) */
        struct timespec hold = {0, (long)(RS_POOL_CONTENDED_HOLD_S * 1e9) + 5000000};
        nanosleep(&hold, NULL);
        helped = helped_runs(b, 20);
        CHECK(helped > 0, "alone on the crew: none of 20 runs of slow items reached its helper");
    }
    rs_pool_destroy(&b);
    rs_pool_destroy(&h.pool);
    rs_crew_destroy(&crew);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    uint64_t seed = (uint64_t)time(NULL) | 1;
    for (int t = 2; t <= 8; t *= 2)
        stress(t, 6000, seed + (uint64_t)t);
    stress(3, 6000, seed + 3);
    shared_stress(3, 4, 1500, seed + 5);
    shared_stress(1, 8, 1500, seed + 6); /* more callers than helpers, pools wider than it */
    nested_runs();
    busy_cores();

    /* made and destroyed with no run; destroyed right after a one-item run (no helper woken)
     * and after a many-item one (helpers may still be going back to sleep) */
    for (int k = 0; k < 50; k++) {
        rs_status_t st;
        rs_status_clear(&st);
        rs_pool_t *p = rs_pool_new(1 + k % 8, 1024, &st);
        CHECK(p != NULL, "rs_pool_new: %s", st.message);
        if (!p)
            continue;
        static run_ctx_t r;
        memset(&r, 0, sizeof r);
        r.nworkers = 1 + k % 8;
        r.pool = p;
        atomic_store(&r.open, 1);
        if (k % 3)
            rs_pool_run(p, k % 3 == 1 ? 1 : MAX_ITEMS, item, &r);
        atomic_store(&r.open, 0);
        rs_pool_destroy(&p);
        CHECK(atomic_load(&r.late) == 0, "an item ran after its run (pool %d)", k);
    }
    /* rs_pool_new clamps a thread count below one to the caller alone */
    rs_status_t st;
    rs_status_clear(&st);
    rs_pool_t *p = rs_pool_new(0, 1024, &st);
    CHECK(p != NULL, "rs_pool_new(0): %s", st.message);
    static run_ctx_t r;
    memset(&r, 0, sizeof r);
    r.nworkers = 1;
    r.pool = p;
    atomic_store(&r.open, 1);
    if (p)
        rs_pool_run(p, 7, item, &r);
    int all = 1;
    for (int i = 0; i < 7; i++)
        all &= atomic_load(&r.count[i]) == 1;
    CHECK(p && all && atomic_load(&r.bad_worker) == 0,
          "a pool of 0 threads runs every item on the caller (worker 0)");
    rs_pool_destroy(&p);
    return rs_test_done("test_pool");
}
