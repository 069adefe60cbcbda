/* What the scheduler (slices, budget, quotas) costs and buys, over tcp loopback:
 *   1. another client's latency (Hello and GetState of another world, in turn; p50 / p99 /
 *      max) while a 1e6-step Step on workshop is in flight;
 *   2. the per-Step round trip on the fast path (gym-style: one control step, a new command
 *      each) of server A against server B, interleaved: ROUNDS rounds, each PER_ROUND Steps
 *      on A then on B (order alternating), on finger and on workshop; the median round of
 *      each. Give the server before the change as A to see what the change costs.
 * usage: bench_net_sched [ROUNDS [PER_ROUND [PATH/TO/server-B [PATH/TO/server-A]]]]
 *   defaults: 20 rounds of 2000 Steps; B the robosim-server next to this binary; without A
 *   only B is measured. BENCH_SCHED_ONLY=latency or =steps runs one part. Wall times on a
 *   machine busy with other work move by tens of percent between runs; the server CPU figure
 *   moves less, and instruction counts (valgrind --tool=callgrind on the server) not at all. */
#include "server_proc.h"
#include "bench_util.h"

#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

typedef struct long_step {
    const char *endpoint, *token;
    uint64_t world;
    atomic_int started, finished;
    int rc;
} long_step_t;

static void *long_step_main(void *arg)
{
    long_step_t *ls = arg;
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(ls->endpoint, 600000, &err);
    if (c) {
        rsc_set_world_token(c, ls->world, ls->token);
        atomic_store(&ls->started, 1);
        ls->rc = rsc_step(c, ls->world, 1000000, 0.0, NULL, 0, NULL, &err);
        rsc_close(&c);
    }
    atomic_store(&ls->started, 1);
    atomic_store(&ls->finished, 1);
    return NULL;
}

/* 1: n round trips of another client during a 1e6-step Step. */
static void latency(const char *server, int n)
{
    server_proc_t sp;
    const char *extra[] = {"--max-request-seconds", "600", NULL};
    if (server_start(&sp, server, extra) != 0) {
        fprintf(stderr, "bench_net_sched: %s did not come up\n", server);
        exit(1);
    }
    rsc_error_t err;
    rsc_client_t *a = rsc_connect(sp.endpoint, 5000, &err), *b = rsc_connect(sp.endpoint, 5000, &err);
    uint64_t busy = 0, other = 0;
    if (!a || !b || rsc_create_world(a, "workshop", NULL, 0, 1, &busy, &err) != 0 ||
        rsc_create_world(b, "finger", NULL, 0, 1, &other, &err) != 0) {
        fprintf(stderr, "bench_net_sched: %s\n", err.message);
        exit(1);
    }
    long_step_t ls = {.endpoint = sp.endpoint, .token = rsc_world_token(a, busy), .world = busy};
    pthread_t th;
    pthread_create(&th, NULL, long_step_main, &ls);
    while (!atomic_load(&ls.started))
        usleep(1000);
    usleep(100000);
    double *lat = malloc((size_t)n * sizeof *lat), t_start = now();
    int done = 0;
    for (; done < n && !atomic_load(&ls.finished); done++) {
        double t0 = now();
        if (done % 2) {
            Robosim__V1__State *st = NULL;
            rsc_get_state(b, other, &st, &err);
            rsc_free(st);
        } else {
            rsc_hello(b, 1, 1, NULL, &err);
        }
        lat[done] = now() - t0;
    }
    double span = now() - t_start;
    int still = !atomic_load(&ls.finished);
    qsort(lat, (size_t)done, sizeof *lat, by_value);
    printf("another client during a 1e6-step Step on workshop (%s):\n", server);
    printf("  %d Hello/GetState round trips in %.2f s, the Step %s: p50 %.3f ms, p99 %.3f ms, "
           "max %.3f ms\n",
           done, span, still ? "still running" : "FINISHED before the end",
           lat[done / 2] * 1e3, lat[done * 99 / 100] * 1e3, lat[done - 1] * 1e3);
    server_stop(&sp); /* answers the Step UNAVAILABLE */
    pthread_join(th, NULL);
    free(lat);
    rsc_close(&a);
    rsc_close(&b);
}

typedef struct target {
    const char *path;
    server_proc_t sp;
    rsc_client_t *c;
    uint64_t world;
    const char *entity;
    int nu;
} target_t;

static void target_open(target_t *t, const char *preset, const char *entity, int nu)
{
    rsc_error_t err;
    if (server_start(&t->sp, t->path, NULL) != 0 || !(t->c = rsc_connect(t->sp.endpoint, 5000, &err)) ||
        rsc_create_world(t->c, preset, NULL, 0, 1, &t->world, &err) != 0) {
        fprintf(stderr, "bench_net_sched: %s did not come up\n", t->path);
        exit(1);
    }
    t->entity = entity;
    t->nu = nu;
}

static void target_close(target_t *t)
{
    rsc_close(&t->c);
    server_stop(&t->sp);
}

/* Seconds per Step over n gym-style Steps. */
static double steps(target_t *t, int n, long *k)
{
    rsc_error_t err;
    double u[2];
    rsc_command_t cmd = {t->entity, u, (size_t)t->nu};
    double t0 = now();
    for (int i = 0; i < n; i++, (*k)++) {
        u[0] = 1.5 + 0.5 * sin(0.01 * (double)*k);
        u[1] = 0.5 * cos(0.01 * (double)*k);
        Robosim__V1__State *s = NULL;
        if (rsc_step(t->c, t->world, 1, 0, &cmd, 1, &s, &err) != 0) {
            fprintf(stderr, "bench_net_sched: step: %s\n", err.message);
            exit(1);
        }
        rsc_free(s);
        if (*k % 400 == 399)
            rsc_reset(t->c, t->world, 1, 1, NULL, &err); /* episodes, as a gym loop */
    }
    return (now() - t0) / n;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* 2: interleaved A/B on one preset. */
static void fast_path(const char *a, const char *b, int rounds, int per_round,
                      const char *preset, const char *entity, int nu)
{
    target_t ta = {.path = a}, tb = {.path = b};
    if (a)
        target_open(&ta, preset, entity, nu);
    target_open(&tb, preset, entity, nu);
    double *ra = calloc((size_t)rounds, sizeof *ra), *rb = calloc((size_t)rounds, sizeof *rb);
    long ka = 0, kb = 0;
    steps(&tb, per_round / 4 + 1, &kb); /* warm-up */
    if (a)
        steps(&ta, per_round / 4 + 1, &ka);
    double cpu_a = 0, cpu_b = 0, c0;
    for (int r = 0; r < rounds; r++) {
        if (a && r % 2 == 0) {
            c0 = cpu_seconds(ta.sp.pid);
            ra[r] = steps(&ta, per_round, &ka);
            cpu_a += cpu_seconds(ta.sp.pid) - c0;
        }
        c0 = cpu_seconds(tb.sp.pid);
        rb[r] = steps(&tb, per_round, &kb);
        cpu_b += cpu_seconds(tb.sp.pid) - c0;
        if (a && r % 2 == 1) {
            c0 = cpu_seconds(ta.sp.pid);
            ra[r] = steps(&ta, per_round, &ka);
            cpu_a += cpu_seconds(ta.sp.pid) - c0;
        }
    }
    double per = (double)rounds * per_round;
    printf("gym-style Step round trip on %s (%d rounds of %d, interleaved; median round):\n",
           preset, rounds, per_round);
    double mb = median(rb, rounds);
    if (a) {
        double ma = median(ra, rounds);
        printf("  A %s: %.2f us (server CPU %.2f us per Step)\n"
               "  B %s: %.2f us (server CPU %.2f us per Step)\n"
               "  B - A: %+.2f us (%+.1f%%) round trip, %+.2f us (%+.1f%%) server CPU\n",
               a, ma * 1e6, cpu_a / per * 1e6, b, mb * 1e6, cpu_b / per * 1e6, (mb - ma) * 1e6,
               100.0 * (mb - ma) / ma, (cpu_b - cpu_a) / per * 1e6,
               100.0 * (cpu_b - cpu_a) / cpu_a);
        target_close(&ta);
    } else {
        printf("  %s: %.2f us (server CPU %.2f us per Step)\n", b, mb * 1e6, cpu_b / per * 1e6);
    }
    target_close(&tb);
    free(ra);
    free(rb);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20, per_round = argc > 2 ? atoi(argv[2]) : 2000;
    char b[PATH_MAX];
    find_server(b, sizeof b, argc > 3 ? argv[3] : NULL);
    const char *a = argc > 4 ? argv[4] : NULL;
    if (rounds < 1 || per_round < 1) {
        fprintf(stderr, "usage: bench_net_sched [ROUNDS [PER_ROUND [SERVER_B [SERVER_A]]]]\n");
        return 2;
    }
    const char *only = getenv("BENCH_SCHED_ONLY");
    if (!only || strcmp(only, "steps") != 0)
        latency(b, 1000);
    if (!only || strcmp(only, "latency") != 0) {
        fast_path(a, b, rounds, per_round, "finger", "finger", 1);
        fast_path(a, b, rounds, per_round, "workshop", "robot", 2);
    }
    return 0;
}
