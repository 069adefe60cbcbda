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
 *   - a pool made and destroyed at once, and one destroyed right after a run, stop cleanly.
 * Build with -DROBOSIM_TSAN=ON to have ThreadSanitizer watch the same runs. */
#include "pool.h"
#include "rs_test.h"

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

static void stress(int nthreads, int nruns, uint64_t seed)
{
    rs_status_t st;
    rs_status_clear(&st);
    rs_pool_t *pool = rs_pool_new(nthreads, 4096, &st);
    CHECK(pool != NULL, "rs_pool_new(%d): %s", nthreads, st.message);
    if (!pool)
        return;
    int twice = 0, missed = 0, late = 0, bad = 0, torn = 0, busy = 0;
    uint64_t s = seed;
    static run_ctx_t r;
    for (int k = 0; k < nruns; k++) {
        uint64_t x = next_rand(&s);
        /* mostly 1-3 items (helpers woken for almost nothing), sometimes up to MAX_ITEMS */
        size_t n = (x & 3) ? 1 + (size_t)((x >> 2) % 3) : 1 + (size_t)((x >> 2) % MAX_ITEMS);
        memset(&r, 0, sizeof r);
        r.nworkers = nthreads;
        r.pool = pool;
        r.slow_mask = (x >> 16) % 5 == 0 ? (uint32_t)(x >> 32) : 0;
        atomic_store(&r.open, 1);
        rs_pool_run(pool, n, item, &r);
        busy += atomic_load(&r.inside) != 0; /* returned while a helper was in an item */
        for (size_t i = 0; i < n; i++) {
            int c = atomic_load(&r.count[i]);
            missed += c == 0;
            twice += c > 1;
            torn += r.stamp[i] && *r.stamp[i] != 0x9e3779b97f4a7c15ull * (i + 1);
        }
        atomic_store(&r.open, 0);
        /* a helper still in this run's items after the return would count as late here */
        late += atomic_load(&r.late);
        bad += atomic_load(&r.bad_worker);
    }
    rs_pool_destroy(&pool);
    CHECK(pool == NULL, "rs_pool_destroy clears the pointer");
    CHECK(missed == 0 && twice == 0,
          "%d workers, seed %llu: %d items never ran, %d ran more than once", nthreads,
          (unsigned long long)seed, missed, twice);
    CHECK(late == 0, "%d workers, seed %llu: %d items ran after rs_pool_run returned", nthreads,
          (unsigned long long)seed, late);
    CHECK(busy == 0, "%d workers, seed %llu: rs_pool_run returned %d times with an item still "
          "running", nthreads, (unsigned long long)seed, busy);
    CHECK(bad == 0, "%d workers: %d items given a worker out of range", nthreads, bad);
    CHECK(torn == 0, "%d workers: %d arena values overwritten before the run ended", nthreads,
          torn);
    printf("%d workers: %d runs, seed %llu\n", nthreads, nruns, (unsigned long long)seed);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    uint64_t seed = (uint64_t)time(NULL) | 1;
    for (int t = 2; t <= 8; t *= 2)
        stress(t, 6000, seed + (uint64_t)t);
    stress(3, 6000, seed + 3);

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
