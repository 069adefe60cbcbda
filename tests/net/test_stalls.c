/* Whatever one client sends, the server goes on answering the others: through the real server,
 * another client's Hello and GetState (one due every 5 ms, each timed from when it was due, so
 * a stall counts for every probe it holds up) are answered within 50 ms p99, and SIGTERM ends
 * the server within 1 s, while
 *   a. a world restored from --state-dir runs a control step longer than the budget;
 *   b. a world whose control steps were fast reaches a schedule knot that makes its next
 *      control step take seconds (and again after a Reset and a new schedule);
 *   c. a world's control step takes longer than the budget (it gets DEADLINE_EXCEEDED at its
 *      budget, rolled back to its boundary), and one that takes longer than the loop's fuse
 *      ends exactly as stepped in-process;
 *   d. a MonteCarlo of 4096 long runs (DEADLINE_EXCEEDED at its budget, counted by the
 *      in-flight quota while it runs);
 *   e. 24 worlds with 1 MB motion specifications are checkpointed every 0.2 s (a changed
 *      world's file is written again, an unchanged one's is not);
 *   f. requests that clients sent before the SIGTERM still wait unread in the server: each is
 *      answered (run, or UNAVAILABLE), none left to its client's timeout;
 *   g. 64 worlds hold a 1 MB motion specification each and --state-dir checkpoints them all at
 *      the stop (and the same without specifications).
 * test_sched.c has the loop's other latency tests (long Steps and batches, budgets, quotas). */
#include "motion_spec_fixture.h"
#include "rs_core.h"
#include "rs_test.h"
#include "server_proc.h"
#define PROBE_TEST_NAME "test_stalls"
#include "probe.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name
#define GOAL_P99 0.050     /* s */
#define GOAL_STOP 1.0      /* s from SIGTERM to exit */

static const char *binary;





/* SIGTERM must end the server within GOAL_STOP, cleanly. */
static void check_stop(server_proc_t *sp, const char *during)
{
    int status = 0;
    double slow = slowdown(0.02);
    double took = stop_timed(sp, &status);
    slow = slowdown_since(slow);
    printf("SIGTERM during %s: exited after %.3f s (slowdown %.2f)\n", during, took, slow);
    CHECK(took < wall_bound(GOAL_STOP, slow),
          "%s: exited within %.1f s x slowdown %.2f of SIGTERM (%.3f s)", during, GOAL_STOP, slow,
          took);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: clean exit (status %d)", during,
          status);
}

/* The goal holds in the better of the attempts at a scenario: a machine busy with other jobs
 * can stall one of them, while a server that stalls does so at every attempt. */
#define ATTEMPTS 3

static void check_probe(const probe_t *best, const char *during)
{
    CHECK(!best->failed && probe_enough(best, 50, 0.5, GOAL_P99),
          "%s: every probe answered (%d, slowdown %.2f)", during, best->n, best->slow);
    CHECK(probe_within(best, GOAL_P99),
          "%s: p99 %.1f ms <= %.0f ms x slowdown %.2f (the better of %d attempts)", during,
          best->p99 * 1e3, GOAL_P99 * 1e3, best->slow, ATTEMPTS);
}

/* Keep the better attempt's probes: the lower p99 against its own slowdown's bound. */
static void keep_better(probe_t *best, const probe_t *r, int attempt)
{
    if (attempt == 0 ||
        (!r->failed && (best->failed || r->p99 / wall_bound(1, r->slow) <
                                            best->p99 / wall_bound(1, best->slow))))
        *best = *r;
}

/* ---- a request on another thread, its own client -------------------------------------- */

typedef struct job {
    const char *endpoint, *token;
    uint64_t world;
    uint32_t steps;       /* a Step of this many control steps, or ... */
    uint32_t mc_runs;     /* ... a MonteCarlo of this many runs of mc_duration s */
    double mc_duration;
    atomic_int started, busy;
    double took;
    int rc;
    char message[600];
    uint64_t step_count;
} job_t;

static void *job_main(void *arg)
{
    job_t *j = arg;
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(j->endpoint, 60000, &err);
    if (!c) {
        j->rc = -1;
        snprintf(j->message, sizeof j->message, "connect: %s", err.message);
        atomic_store(&j->started, 1);
        atomic_store(&j->busy, 0);
        return NULL;
    }
    if (j->token)
        rsc_set_world_token(c, j->world, j->token);
    double t0 = now();
    atomic_store(&j->started, 1);
    if (j->mc_runs) {
        rsc_sampler_t smp = {"finger.finger_v0", "uniform", 0.1, 0.9};
        const char *ret = "finger.x_f";
        Robosim__V1__MonteCarloReply *r = NULL;
        j->rc = rsc_monte_carlo(c, j->world, j->mc_runs, 7, 0, j->mc_duration, &smp, 1, &ret, 1,
                                &r, &err);
        rsc_free(r);
    } else {
        Robosim__V1__State *out = NULL;
        j->rc = rsc_step(c, j->world, j->steps, 0.0, NULL, 0, &out, &err);
        j->step_count = out ? out->step_count : 0;
        rsc_free(out);
    }
    j->took = now() - t0;
    snprintf(j->message, sizeof j->message, "%s", err.message);
    rsc_close(&c);
    atomic_store(&j->busy, 0);
    return NULL;
}

static void job_start(job_t *j, pthread_t *th)
{
    atomic_store(&j->started, 0);
    atomic_store(&j->busy, 1);
    pthread_create(th, NULL, job_main, j);
    while (!atomic_load(&j->started))
        sleep_s(0.001);
}


/* The wild schedule: workshop's arm targets jump between -20 and 20 rad every 2.4 us for 4096
 * knots (nknots) from time `from`: the control step that holds them takes 0.3-0.4 s in the
 * release build, seconds with sanitizers; the control steps before it well under 1 ms. */
#define WILD_SPACING 2.4e-6
static void wild_knots(double from, int nknots, double *t, double *v)
{
    for (int i = 0; i < nknots; i++) {
        t[i] = from + WILD_SPACING * i;
        v[i] = i % 2 ? 20.0 : -20.0;
    }
}

static void set_wild(rsc_client_t *c, uint64_t id, double from, int nknots)
{
    static double t[4096], v[4096];
    rsc_error_t err;
    wild_knots(from, nknots, t, v);
    for (uint32_t a = 0; a < 2; a++)
        CHECK(rsc_set_schedule(c, id, "arm", a, t, v, (size_t)nknots, &err) == 0, "%s",
              err.message);
}

static uint64_t wild_world(rsc_client_t *c, double from, int nknots)
{
    rsc_error_t err;
    uint64_t id = 0;
    CHECK(rsc_create_world(c, "workshop", NULL, 0, 1, &id, &err) == 0, "%s", err.message);
    set_wild(c, id, from, nknots);
    return id;
}

static uint64_t state_steps(rsc_client_t *c, uint64_t id)
{
    Robosim__V1__State *st = NULL;
    rsc_error_t err;
    int rc = rsc_get_state(c, id, &st, &err);
    uint64_t k = rc == 0 && st ? st->step_count : UINT64_MAX;
    rsc_free(st);
    return k;
}

/* A Step of world `id` on another thread, timed, while the prober runs: it must end at its
 * budget with DEADLINE_EXCEEDED, none of its control steps done. The probes' figures. */
static probe_t slow_step_probed(server_proc_t *sp, rsc_client_t *other_c, uint64_t other,
                                uint64_t id, const char *token, double budget, const char *what)
{
    job_t j = {.endpoint = sp->endpoint, .token = token, .world = id, .steps = 2};
    pthread_t th;
    job_start(&j, &th);
    probe_t r = probe(other_c, other, &j.busy, 0.5, 20.0);
    pthread_join(th, NULL);
    print_probe(&r, what);
    printf("%s: %d after %.3f s: %s\n", what, j.rc, j.took, j.message);
    CHECK(j.rc == CODE(DEADLINE_EXCEEDED) && steps_done(j.message, 2) == 0,
          "%s: DEADLINE_EXCEEDED, none of the 2 control steps done: %d %s", what, j.rc,
          j.message);
    CHECK(j.took < budget + wall_bound(0.5, r.slow),
          "%s: answered at its budget of %g s (%.3f s, slowdown %.2f)", what, budget, j.took,
          r.slow);
    return r;
}

/* Start a Step of 2 control steps of world `id` and SIGTERM the server inside it: once the
 * server is stepping it (its CPU time grows by 50 ms: the slow control step takes seconds),
 * not after a fixed wait, which a loaded machine can outlast before the Step even arrives (a
 * request that arrives after the stop is never read, so it would get no reply). */
static void stop_inside_step(server_proc_t *sp, uint64_t id, const char *token, const char *what)
{
    job_t j = {.endpoint = sp->endpoint, .token = token, .world = id, .steps = 2};
    pthread_t th;
    double cpu0 = cpu_seconds(sp->pid), t0 = now(), cap = wall_bound(5.0, slowdown(0.02));
    job_start(&j, &th);
    while (cpu_seconds(sp->pid) < cpu0 + 0.05 && now() - t0 < cap)
        sleep_s(0.005);
    check_stop(sp, what);
    pthread_join(th, NULL);
    CHECK(j.rc == CODE(UNAVAILABLE) || j.rc == CODE(DEADLINE_EXCEEDED),
          "%s: the Step in flight answered, stopped short: %d %s", what, j.rc, j.message);
}

/* ---- a. a world restored from --state-dir ----------------------------------------------- */

static void test_restored(void)
{
    char dir[] = "/tmp/robosim_stalls_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    const double budget = 0.25;
    server_proc_t sp;
    const char *first[] = {"--state-dir", dir, "--no-world", NULL};
    CHECK(server_start(&sp, binary, first) == 0, "server start");
    rsc_client_t *c = connect_to(&sp, 10000);
    uint64_t id = wild_world(c, 1e-4, 4096);
    char token[RSC_TOKEN_MAX];
    snprintf(token, sizeof token, "%s", rsc_world_token(c, id));
    rsc_close(&c);
    CHECK(server_stop(&sp) == 0, "the first server stops, its world in %s", dir);

    char budget_s[32];
    snprintf(budget_s, sizeof budget_s, "%g", budget);
    const char *second[] = {"--state-dir", dir, "--max-request-seconds", budget_s, NULL};
    CHECK(server_start(&sp, binary, second) == 0, "server restart");
    rsc_client_t *b = connect_to(&sp, 20000);
    rsc_error_t err;
    uint64_t other = 0;
    CHECK(rsc_create_world(b, "finger", NULL, 0, 1, &other, &err) == 0, "%s", err.message);
    CHECK(state_steps(b, id) == 0, "world %llu restored", (unsigned long long)id);
    const char *what = "a restored world's slow control step";
    probe_t best = {0};
    for (int attempt = 0; attempt < ATTEMPTS && (attempt == 0 || !probe_within(&best, GOAL_P99));
         attempt++) {
        probe_t r = slow_step_probed(&sp, b, other, id, token, budget, what);
        keep_better(&best, &r, attempt);
        CHECK(state_steps(b, id) == 0, "the restored world rolled back to its boundary");
    }
    check_probe(&best, what);
    rsc_close(&b);
    stop_inside_step(&sp, id, token, "a restored world's slow control step");

    /* the state dir goes */
    remove_dir(dir);
}

/* ---- b. a world fast until a knot makes its next control step slow ---------------------- */

static void test_fast_made_slow(void)
{
    const double budget = 0.25;
    server_proc_t sp;
    const char *extra[] = {"--max-request-seconds", "0.25", NULL};
    CHECK(server_start(&sp, binary, extra) == 0, "server start");
    rsc_client_t *c = connect_to(&sp, 20000), *b = connect_to(&sp, 20000);
    rsc_error_t err;
    uint64_t other = 0;
    CHECK(rsc_create_world(b, "finger", NULL, 0, 1, &other, &err) == 0, "%s", err.message);
    const char *what = "a fast world's first slow control step";
    probe_t best = {0};
    for (int attempt = 0; attempt < ATTEMPTS && (attempt == 0 || !probe_within(&best, GOAL_P99));
         attempt++) {
        uint64_t id = wild_world(c, 0.05 + 1e-4, 4096);
        /* five quiet control steps, one Step each (gym-style): the world is known fast */
        for (int i = 0; i < 5; i++) {
            Robosim__V1__State *out = NULL;
            CHECK(rsc_step(c, id, 1, 0.0, NULL, 0, &out, &err) == 0, "quiet step: %s",
                  err.message);
            rsc_free(out);
        }
        probe_t r = slow_step_probed(&sp, b, other, id, rsc_world_token(c, id), budget, what);
        keep_better(&best, &r, attempt);
        CHECK(state_steps(b, id) == 5, "the world rolled back to its boundary after 5 steps");
        CHECK(rsc_destroy_world(c, id, &err) == 0, "%s", err.message);
    }
    check_probe(&best, what);
    uint64_t id = wild_world(c, 0.05 + 1e-4, 4096);
    for (int i = 0; i < 5; i++) {
        Robosim__V1__State *out = NULL;
        CHECK(rsc_step(c, id, 1, 0.0, NULL, 0, &out, &err) == 0, "quiet step: %s", err.message);
        rsc_free(out);
    }

    /* a Reset and the schedule again: fast steps, then the slow one, and a stop inside it */
    Robosim__V1__State *out = NULL;
    CHECK(rsc_reset(c, id, 0, 0, &out, &err) == 0, "reset: %s", err.message);
    rsc_free(out);
    set_wild(c, id, 0.05 + 1e-4, 4096);
    for (int i = 0; i < 5; i++) {
        out = NULL;
        CHECK(rsc_step(c, id, 1, 0.0, NULL, 0, &out, &err) == 0, "quiet step: %s", err.message);
        rsc_free(out);
    }
    char token[RSC_TOKEN_MAX];
    snprintf(token, sizeof token, "%s", rsc_world_token(c, id));
    rsc_close(&b);
    stop_inside_step(&sp, id, token, "a fast world's first slow control step after a Reset");
    rsc_close(&c);
}

/* ---- c. control steps longer than the budget, and longer than the loop's fuse ----------- */

static void test_slow_steps(void)
{
    const double budget = 0.25;
    server_proc_t sp;
    const char *extra[] = {"--max-request-seconds", "0.25", NULL};
    CHECK(server_start(&sp, binary, extra) == 0, "server start");
    rsc_client_t *c = connect_to(&sp, 60000), *b = connect_to(&sp, 20000);
    rsc_error_t err;
    uint64_t other = 0;
    CHECK(rsc_create_world(b, "finger", NULL, 0, 1, &other, &err) == 0, "%s", err.message);
    uint64_t id = 0;
    const char *what = "a control step longer than the budget";
    probe_t best = {0};
    for (int attempt = 0; attempt < ATTEMPTS && (attempt == 0 || !probe_within(&best, GOAL_P99));
         attempt++) {
        if (id)
            CHECK(rsc_destroy_world(c, id, &err) == 0, "%s", err.message);
        id = wild_world(c, 1e-4, 4096); /* a new world: none known slow before its Step */
        probe_t r = slow_step_probed(&sp, b, other, id, rsc_world_token(c, id), budget, what);
        keep_better(&best, &r, attempt);
        CHECK(state_steps(b, id) == 0, "the world rolled back to its boundary");
    }
    check_probe(&best, what);

    char token[RSC_TOKEN_MAX];
    snprintf(token, sizeof token, "%s", rsc_world_token(c, id));
    rsc_close(&b);
    stop_inside_step(&sp, id, token, "a control step longer than the budget");
    rsc_close(&c);

    /* a tenth of the knots: a control step past the loop's fuse (40 ms in release) runs off the
     * loop and ends bit-identical to the same control steps in-process (a roomy budget) */
    const char *roomy[] = {"--max-request-seconds", "60", NULL};
    CHECK(server_start(&sp, binary, roomy) == 0, "server start");
    c = connect_to(&sp, 120000);
    uint64_t mid = 0;
    CHECK(rsc_create_world(c, "workshop", NULL, 0, 3, &mid, &err) == 0, "%s", err.message);
    set_wild(c, mid, 0.01 + 1e-4, 410);
    Robosim__V1__State *out = NULL;
    double t0 = now();
    int rc = rsc_step(c, mid, 3, 0.0, NULL, 0, &out, &err);
    double took = now() - t0;
    printf("3 control steps, the second past the fuse: %.3f s\n", took);
    CHECK(rc == 0 && out && out->step_count == 3, "the Step is done: %s", err.message);
    rs_status_t st;
    rs_world_t *w = rs_world_new("workshop", NULL, 0, 3, &st);
    CHECK(w != NULL, "%s", st.message);
    if (w && out) {
        static double t[4096], v[4096];
        wild_knots(0.01 + 1e-4, 410, t, v);
        int arm = rs_model_entity(w->model, "arm");
        for (int a = 0; a < 2; a++)
            CHECK_OK(rs_set_schedule(w->model, w->data, arm, a, t, v, 410, &st), st);
        CHECK_OK(rs_step(w->model, w->data, 3, &st), st);
        int same = out->time == w->data->t && out->n_entities == (size_t)w->model->nentities;
        for (size_t e = 0; same && e < out->n_entities; e++) {
            const Robosim__V1__EntityState *es = out->entities[e];
            const rs_entity_model_t *em = &w->model->ent[e];
            same = es->n_state == (size_t)em->nx &&
                   memcmp(es->state, w->data->x + em->x_off, es->n_state * sizeof(double)) == 0;
        }
        CHECK(same, "the state is bit-identical to stepping in-process");
        CHECK(out->n_events == (size_t)w->data->nevents,
              "the reply carries every event of the Step: %zu, in-process %d", out->n_events,
              w->data->nevents);
    }
    rs_world_destroy(&w);
    rsc_free(out);
    rsc_close(&c);
    server_stop(&sp);
}

/* ---- d. MonteCarlo of many long runs ---------------------------------------------------- */

/* A MonteCarlo Request packed for a raw DEALER (pipelined: the client library never sends a
 * second request before the first one's reply). */
static void send_monte_carlo(void *sock, uint64_t rid, uint64_t world, uint32_t runs,
                             double duration)
{
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__MonteCarlo mc = ROBOSIM__V1__MONTE_CARLO__INIT;
    Robosim__V1__Sampler smp = ROBOSIM__V1__SAMPLER__INIT;
    Robosim__V1__Sampler *samplers[1] = {&smp};
    char *returns[1] = {"finger.x_f"};
    smp.item = "finger.finger_v0";
    smp.dist = "uniform";
    smp.a = 0.1;
    smp.b = 0.9;
    mc.runs = runs;
    mc.seed = 1;
    mc.duration = duration;
    mc.n_samplers = 1;
    mc.samplers = samplers;
    mc.n_returns = 1;
    mc.returns = returns;
    rq.op_case = ROBOSIM__V1__REQUEST__OP_MONTE_CARLO;
    rq.monte_carlo = &mc;
    send_request(sock, &rq, rid, world);
}

static void send_hello(void *sock, uint64_t rid)
{
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__Hello h = ROBOSIM__V1__HELLO__INIT;
    h.major = 1;
    h.minor = 1;
    rq.op_case = ROBOSIM__V1__REQUEST__OP_HELLO;
    rq.hello = &h;
    send_request(sock, &rq, rid, 0);
}


static void test_monte_carlo(void)
{
    const double budget = 1.0;
    server_proc_t sp;
    const char *extra[] = {"--max-request-seconds", "1", "--max-inflight-per-client", "1",
                           NULL};
    CHECK(server_start(&sp, binary, extra) == 0, "server start");
    rsc_client_t *c = connect_to(&sp, 20000), *b = connect_to(&sp, 20000);
    rsc_error_t err;
    uint64_t id = 0, other = 0;
    CHECK(rsc_create_world(c, "workshop", NULL, 0, 1, &id, &err) == 0, "%s", err.message);
    CHECK(rsc_create_world(b, "finger", NULL, 0, 1, &other, &err) == 0, "%s", err.message);

    /* 4096 runs of 244 control steps: a million workshop control steps, seconds in any build */
    const char *what = "a MonteCarlo of 4096 runs";
    probe_t best = {0};
    pthread_t th;
    for (int attempt = 0; attempt < ATTEMPTS && (attempt == 0 || !probe_within(&best, GOAL_P99));
         attempt++) {
        job_t j = {.endpoint = sp.endpoint, .world = id, .mc_runs = 4096, .mc_duration = 2.44};
        job_start(&j, &th);
        probe_t r = probe(b, other, &j.busy, 0.5, 20.0);
        pthread_join(th, NULL);
        print_probe(&r, what);
        keep_better(&best, &r, attempt);
        printf("MonteCarlo of 4096 runs: %d after %.3f s: %s\n", j.rc, j.took, j.message);
        CHECK(j.rc == CODE(DEADLINE_EXCEEDED) && strstr(j.message, "--max-request-seconds"),
              "DEADLINE_EXCEEDED naming the budget: %d %s", j.rc, j.message);
        CHECK(j.took < budget + 0.5, "answered at its budget of %g s (%.3f s)", budget, j.took);
    }
    check_probe(&best, what);

    /* in flight: a second request of the same client while the MonteCarlo runs is refused */
    void *ctx = zmq_ctx_new(), *d = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0, tmo = 20000;
    zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(d, ZMQ_RCVTIMEO, &tmo, sizeof tmo);
    zmq_connect(d, sp.endpoint);
    send_monte_carlo(d, 1, id, 4096, 2.44);
    sleep_s(0.1);
    send_hello(d, 2);
    Robosim__V1__Response *r1 = recv_reply(d), *r2 = r1 ? recv_reply(d) : NULL;
    CHECK(r1 && r1->id == 2 && r1->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR &&
              r1->error->code == CODE(RESOURCE_EXHAUSTED) &&
              strstr(r1->error->message, "--max-inflight-per-client 1"),
          "the MonteCarlo counts as in flight: the second request is refused first (%s)",
          r1 && r1->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR ? r1->error->message
          : r1                                                         ? "a reply that is not an error"
                                                                       : "no reply");
    CHECK(r2 && r2->id == 1 && r2->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR &&
              r2->error->code == CODE(DEADLINE_EXCEEDED),
          "then the MonteCarlo ends at its budget (%s)",
          r2 && r2->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR ? r2->error->message
          : r2                                                         ? "a reply that is not an error"
                                                                       : "no reply");
    robosim__v1__response__free_unpacked(r1, NULL);
    robosim__v1__response__free_unpacked(r2, NULL);
    zmq_close(d);
    zmq_ctx_term(ctx);

    /* SIGTERM inside one */
    job_t k = {.endpoint = sp.endpoint, .world = id, .mc_runs = 4096, .mc_duration = 2.44};
    job_start(&k, &th);
    sleep_s(0.1);
    rsc_close(&b);
    check_stop(&sp, "a MonteCarlo of 4096 runs");
    pthread_join(th, NULL);
    CHECK(k.rc == CODE(UNAVAILABLE) || k.rc == CODE(DEADLINE_EXCEEDED),
          "the MonteCarlo in flight answered: %d %s", k.rc, k.message);
    rsc_close(&c);
}

/* ---- e. checkpoints of many worlds with large motion specifications --------------------- */

/* The tests' small valid specification for mobile_manipulator (motion_spec_fixture.h),
 * padded with blanks to about 1 MB. Malloc'd. */
/* The modification time of dir/world-<id>.rsw in ns, or -1. */
static long long file_mtime(const char *dir, uint64_t id)
{
    char path[512];
    struct stat sb;
    snprintf(path, sizeof path, "%s/world-%llu.rsw", dir, (unsigned long long)id);
    if (stat(path, &sb) != 0)
        return -1;
    return (long long)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
}

static void test_checkpoints(void)
{
    enum { NWORLDS = 24 };
    char dir[] = "/tmp/robosim_stalls_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    server_proc_t sp;
    const char *extra[] = {"--state-dir", dir, "--checkpoint-interval", "0.2", "--no-world",
                           NULL};
    CHECK(server_start(&sp, binary, extra) == 0, "server start");
    rsc_client_t *c = connect_to(&sp, 30000), *b = connect_to(&sp, 20000);
    rsc_error_t err;
    char *doc = rs_test_big_spec();
    uint64_t ids[NWORLDS] = {0}, other = 0;
    int loaded = 0;
    for (int i = 0; i < NWORLDS && doc; i++) {
        CHECK(rsc_create_world(c, "mobile_manipulator", NULL, 0, 1, &ids[i], &err) == 0, "%s",
              err.message);
        loaded += rsc_load_motion_spec(c, ids[i], doc, &err) == 0;
    }
    free(doc);
    CHECK(loaded == NWORLDS, "%d worlds with a 1 MB motion specification: %s", loaded,
          err.message);
    CHECK(rsc_create_world(b, "finger", NULL, 0, 1, &other, &err) == 0, "%s", err.message);
    const char *what = "checkpoints of 24 worlds with 1 MB motion specifications";
    probe_t best = {0};
    for (int attempt = 0; attempt < ATTEMPTS && (attempt == 0 || !probe_within(&best, GOAL_P99));
         attempt++) {
        probe_t r = probe(b, other, NULL, 2.0, 2.0);
        print_probe(&r, what);
        keep_better(&best, &r, attempt);
    }
    check_probe(&best, what);

    /* every world is on disk; a changed one is written again, an unchanged one is not */
    int files = 0;
    for (int i = 0; i < NWORLDS; i++)
        files += file_mtime(dir, ids[i]) >= 0;
    CHECK(files == NWORLDS, "every world checkpointed (%d files)", files);
    long long changed = file_mtime(dir, ids[0]), kept = file_mtime(dir, ids[1]);
    Robosim__V1__State *out = NULL;
    CHECK(rsc_step(c, ids[0], 1, 0.0, NULL, 0, &out, &err) == 0, "step: %s", err.message);
    rsc_free(out);
    sleep_s(0.8);
    CHECK(file_mtime(dir, ids[0]) > changed, "the stepped world's file is written again");
    CHECK(file_mtime(dir, ids[1]) == kept, "an unchanged world's file is not");
    rsc_close(&b);
    rsc_close(&c);
    check_stop(&sp, "checkpoints of 24 worlds with 1 MB motion specifications");

    remove_dir(dir);
}

/* ---- f. requests sent before the stop, not yet read ------------------------------------- */

/* The server is paused (SIGSTOP) while NCLIENTS clients each send a Step of their own world,
 * so the requests wait in its sockets; then SIGTERM and SIGCONT. Whichever the loop sees
 * first, the stop or a request, every request gets a reply: run, or refused as the server
 * stops. With shards, the clients' connections land on either shard and the worlds are all on
 * one, so some requests are passed between shards when the stop comes. */
#define NCLIENTS 8

typedef struct queued {
    rsc_client_t *c; /* connected (Hello answered) before the pause */
    uint64_t world;
    int rc;
    uint64_t step_count;
    double took;
    char message[600];
} queued_t;

static void *queued_main(void *arg)
{
    queued_t *q = arg;
    rsc_error_t err;
    Robosim__V1__State *out = NULL;
    double t0 = now();
    q->rc = rsc_step(q->c, q->world, 1, 0.0, NULL, 0, &out, &err);
    q->took = now() - t0;
    q->step_count = out ? out->step_count : 0;
    rsc_free(out);
    snprintf(q->message, sizeof q->message, "%s", err.message);
    return NULL;
}

/* The server's end of its established TCP connections on `port` that hold bytes it has not
 * read (the rx_queue of /proc/net/tcp), or -1 when that cannot be read. */
static int unread_connections(int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f)
        return -1;
    char line[512];
    int n = 0;
    if (!fgets(line, sizeof line, f)) { /* the header */
        fclose(f);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        unsigned local_port = 0, state = 0;
        unsigned long tx = 0, rx = 0;
        if (sscanf(line, " %*d: %*x:%x %*x:%*x %x %lx:%lx", &local_port, &state, &tx, &rx) == 4 &&
            (int)local_port == port && state == 1 /* ESTABLISHED */ && rx > 0)
            n++;
    }
    fclose(f);
    return n;
}

static void test_queued_at_stop(void)
{
    for (int round = 0; round < 6; round++) {
        server_proc_t sp;
        CHECK(server_start(&sp, binary, NULL) == 0, "server start");
        queued_t qs[NCLIENTS];
        pthread_t th[NCLIENTS];
        /* the waits below are their idle machine's figures times the slowdown now (beside
         * CPU hogs 5 s once saw only 7 of the 8 Steps in the paused server's buffers) */
        double slow = slowdown(0.02);
        /* every world made through the first connection, so on its shard: the others'
         * connections on another shard pass their Steps to it */
        for (int i = 0; i < NCLIENTS; i++) {
            rsc_error_t err;
            qs[i] = (queued_t){.c = connect_to(&sp, (int)(1000 * wall_bound(10.0, slow)))};
            CHECK(rsc_create_world(qs[0].c, "finger", NULL, 0, 1, &qs[i].world, &err) == 0,
                  "%s", err.message);
            rsc_set_world_token(qs[i].c, qs[i].world, rsc_world_token(qs[0].c, qs[i].world));
        }
        /* paused: kill() only queues SIGSTOP, and a busy machine once let the server's I/O
         * thread read a Step after it; waitpid(WUNTRACED) returns once every thread stopped */
        kill(sp.pid, SIGSTOP);
        int stopped = 0;
        CHECK(waitpid(sp.pid, &stopped, WUNTRACED) == sp.pid && WIFSTOPPED(stopped),
              "round %d: the server stopped (status %d)", round, stopped);
        for (int i = 0; i < NCLIENTS; i++)
            pthread_create(&th[i], NULL, queued_main, &qs[i]);
        /* sent: each Step waits in the paused server's socket buffer (not only in a client
         * thread that has yet to run: a fixed 0.2 s wait here once let a Step leave after the
         * stop) */
        const char *colon = strrchr(sp.endpoint, ':');
        int port = colon ? atoi(colon + 1) : 0, unread = 0;
        double wait = wall_bound(5.0, slow); /* the clients wait twice that */
        for (double t = now(); now() - t < wait; sleep_s(0.005))
            if ((unread = unread_connections(port)) >= NCLIENTS || unread < 0)
                break;
        /* at least the 8 clients' connections (a shard's own connection to the port may hold
         * bytes as well) */
        CHECK(unread >= NCLIENTS, "round %d: the %d Steps wait in the paused server's socket "
              "buffers (%d connections hold unread bytes after %.1f s at most)", round, NCLIENTS,
              unread, wait);
        slow = slowdown_since(slow);
        double t0 = now();
        kill(sp.pid, SIGTERM);
        kill(sp.pid, SIGCONT);
        int status = 0;
        while (sp.pid > 0 && now() - t0 < 60.0) {
            if (waitpid(sp.pid, &status, WNOHANG) == sp.pid)
                sp.pid = -1;
            else
                sleep_s(0.002);
        }
        double took = now() - t0;
        if (sp.pid > 0) {
            kill(sp.pid, SIGKILL);
            waitpid(sp.pid, &status, 0);
            sp.pid = -1;
        }
        slow = slowdown_since(slow);
        CHECK(took < wall_bound(GOAL_STOP, slow) && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "round %d: the server exited cleanly within %.1f s x slowdown %.2f of SIGTERM "
              "(%.3f s, status %d)",
              round, GOAL_STOP, slow, took, status);
        int ran = 0, refused = 0;
        for (int i = 0; i < NCLIENTS; i++) {
            pthread_join(th[i], NULL);
            ran += qs[i].rc == 0 && qs[i].step_count == 1;
            refused += qs[i].rc == CODE(UNAVAILABLE);
            CHECK(qs[i].rc == 0 || qs[i].rc == CODE(UNAVAILABLE),
                  "round %d: a Step sent before the stop was answered: run or UNAVAILABLE (%d "
                  "after %.3f s: %s)", round, qs[i].rc, qs[i].took, qs[i].message);
            rsc_close(&qs[i].c);
        }
        printf("requests queued at the stop, round %d: %d run, %d refused, exit after %.3f s\n",
               round, ran, refused, took);
    }
}

/* A server of the default shards, worlds made through connections until two land on different
 * shards, a StepBatch over those two (when `batch` and they did: *split set), the connections
 * closed: the seconds SIGTERM then took to end it. */
static double stop_after(int batch, int *split)
{
    server_proc_t sp;
    CHECK(server_start(&sp, binary, NULL) == 0, "server start");
    rsc_client_t *cs[NCLIENTS] = {0};
    uint64_t ids[2] = {0, 0};
    int shard0 = -1, found = 0;
    rsc_error_t err;
    /* connections until two land on different shards, one world made through each */
    for (int i = 0; i < NCLIENTS && found < 2; i++) {
        cs[i] = connect_to(&sp, 10000);
        uint64_t id = 0;
        CHECK(rsc_create_world(cs[i], "finger", NULL, 0, 1, &id, &err) == 0, "%s", err.message);
        int k = rsc_world_shard(cs[i], id);
        if (k < 0)
            break; /* one loop: nothing to split */
        if (found == 0 || k != shard0) {
            if (found == 0)
                shard0 = k;
            else
                rsc_set_world_token(cs[0], id, rsc_world_token(cs[i], id));
            ids[found++] = id;
        }
    }
    if (found == 2 && batch) {
        *split = 1;
        double u[2] = {0.5, -0.5};
        Robosim__V1__BatchArraysReply *r = NULL;
        CHECK(rsc_step_arrays(cs[0], ids, 2, 1, u, 2, NULL, 0, &r, &err) == 0 && r &&
                  r->n_errors == 0,
              "a StepBatch over two shards' worlds: %s", err.message);
        rsc_free(r);
    }
    for (int i = 0; i < NCLIENTS; i++)
        if (cs[i])
            rsc_close(&cs[i]);
    int status = 0;
    double took = stop_timed(&sp, &status);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "clean exit (status %d)", status);
    return took;
}

/* With shards: a StepBatch split between two shards and answered leaves no pass in flight, so
 * SIGTERM after it does not wait out the drain's cap (0.5 s) for replies that will never come.
 * Against a baseline in the same run: the same server without the batch, stopped in turn with
 * it; the better of three attempts each (a loaded machine can slow one stop, a miscount slows
 * every stop after a batch by the cap, a wall-clock wait the load does not stretch). */
static void test_split_then_stop(void)
{
    double best = INFINITY, plain = INFINITY;
    int split = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        double took = stop_after(1, &split);
        if (!split)
            break;
        best = fmin(best, took);
        plain = fmin(plain, stop_after(0, &split));
    }
    if (!split) {
        printf("one loop (or every connection on one shard): no batch to split\n");
        return;
    }
    printf("SIGTERM after a StepBatch split between shards: exited after %.3f s, %.3f s without "
           "the batch (best of 3 each)\n",
           best, plain);
    CHECK(best < plain + 0.25,
          "after a split StepBatch, SIGTERM is not held by passes counted in flight: exit after "
          "%.3f s, %.3f s without the batch (the drain's cap is 0.5 s)",
          best, plain);
}

/* ---- g. the checkpoint at the stop: 64 worlds with 1 MB motion specifications ------------ */

/* A server with --state-dir (no periodic checkpoint) and 64 worlds, each given a 1 MB motion
 * specification (loaded: true) or none: SIGTERM, timed, ends it with every world written; the
 * next server restores them, specifications included. The seconds the stop took over
 * the slowdown beside it (the seconds it would have taken on an idle machine). */
static double stop_with_big_worlds(int loaded)
{
    enum { NWORLDS = 64 };
    char dir[] = "/tmp/robosim_stalls_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    server_proc_t sp;
    const char *extra[] = {"--state-dir", dir, "--checkpoint-interval", "1000", "--no-world",
                           "--max-worlds-per-client", "0", "--max-worlds-share", "1", NULL};
    CHECK(server_start(&sp, binary, extra) == 0, "server start");
    rsc_client_t *c = connect_to(&sp, 30000);
    rsc_error_t err;
    char *doc = loaded ? rs_test_big_spec() : NULL;
    uint64_t ids[NWORLDS] = {0};
    int made = 0;
    for (int i = 0; i < NWORLDS; i++) {
        int ok = rsc_create_world(c, "mobile_manipulator", NULL, 0, 1, &ids[i], &err) == 0;
        if (ok && doc)
            ok = rsc_load_motion_spec(c, ids[i], doc, &err) == 0;
        made += ok;
    }
    free(doc);
    CHECK(made == NWORLDS, "%d worlds%s: %s", made,
          loaded ? " with a 1 MB motion specification" : "", err.message);
    rsc_close(&c);
    int status = 0;
    double slow = slowdown(0.02);
    double took = stop_timed(&sp, &status);
    slow = slowdown_since(slow);
    printf("SIGTERM during the checkpoint of 64 worlds %s at the stop: exited after %.3f s "
           "(slowdown %.2f)\n",
           loaded ? "with 1 MB motion specifications" : "without motion specifications", took,
           slow);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "clean exit (status %d)", status);

    /* all of them written: the next server has them, specifications included */
    const char *again[] = {"--state-dir", dir, "--no-world", NULL};
    CHECK(server_start(&sp, binary, again) == 0, "server restart");
    c = connect_to(&sp, 30000);
    Robosim__V1__ListWorldsReply *lw = NULL;
    CHECK(rsc_list_worlds(c, &lw, &err) == 0 && lw && lw->n_worlds == NWORLDS,
          "%d worlds restored (%zu)", NWORLDS, lw ? lw->n_worlds : 0);
    rsc_free(lw);
    Robosim__V1__MotionSpecReply *ms = NULL;
    CHECK(rsc_get_motion_spec(c, ids[NWORLDS - 1], &ms, &err) == 0 && ms &&
              (loaded ? ms->loaded && ms->document && strlen(ms->document) >= 1000000
                      : !ms->loaded),
          "the last world's motion specification restored as it was: %s", err.message);
    rsc_free(ms);
    rsc_close(&c);
    server_stop(&sp);
    remove_dir(dir);
    return took / wall_bound(1.0, slow);
}

/* The stop's checkpoint within GOAL_STOP times the slowdown beside it, in the better of
 * ATTEMPTS (its fsyncs wait for a disk other jobs may be writing to); without specifications
 * as a reference. */
static void test_stop_checkpoint(void)
{
    stop_with_big_worlds(0); /* for reference: printed */
    double best = 1e9;
    for (int attempt = 0; attempt < ATTEMPTS && best >= GOAL_STOP; attempt++) {
        double took = stop_with_big_worlds(1);
        best = took < best ? took : best;
    }
    CHECK(best < GOAL_STOP,
          "the checkpoint of 64 worlds with 1 MB motion specifications at the stop: exited "
          "within %.1f s x the slowdown of SIGTERM (%.3f s / slowdown, the better of up to %d "
          "attempts)",
          GOAL_STOP, best, ATTEMPTS);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_stalls PATH/robosim-server [a|b|c|d|e|f|g]\n");
        return 2;
    }
    binary = argv[1];
    const char *only = argc > 2 ? argv[2] : "abcdefg";
    if (strchr(only, 'a'))
        test_restored();
    if (strchr(only, 'b'))
        test_fast_made_slow();
    if (strchr(only, 'c'))
        test_slow_steps();
    if (strchr(only, 'd'))
        test_monte_carlo();
    if (strchr(only, 'e'))
        test_checkpoints();
    if (strchr(only, 'f')) {
        test_queued_at_stop();
        test_split_then_stop();
    }
    if (strchr(only, 'g'))
        test_stop_checkpoint();
    return rs_test_done("test_stalls");
}
