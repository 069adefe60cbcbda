/* One client process stepping many finger worlds (4,096 by default) on one server, EnvPool's
 * async mode against the synchronous client and against the machine's cores stepping the same
 * worlds in-process:
 *
 *  sync      one rsc_step_arrays of all the worlds per round (the synchronous client, one
 *            request in flight, the client idle while the server steps and the server idle
 *            while the client packs, waits and unpacks); and "sync kmax": the largest k's
 *            groups, one rsc_step_arrays after another (smaller requests, no pipelining);
 *  async k   the worlds in k groups, all k sent with rsc_batch_send; then, over and over,
 *            rsc_batch_recv whichever group is answered (its rows land in the group's rows of
 *            the caller's arrays), new forces for that group, rsc_batch_send it again: k
 *            requests in flight, k - 1 while the client works on one;
 *  in-process the same number of worlds stepped in turn on one thread (bench_core_many_worlds'
 *            loop: what a StepBatch worker does without the network), times the online CPUs:
 *            "N x in-process", what N cores could do with no server at all.
 *
 * Each world takes one 10 ms control step per request with a new force. Blocks of every mode
 * alternate (each round starts with another mode) so drift hits all; each figure is world-steps
 * per second of wall time, its ratio to sync and to N x in-process, and the CPU per world-step
 * of this process (the client) and of the server.
 *
 * usage: bench_net_async [SECONDS_PER_FIGURE [WORLDS [PATH/TO/robosim-server]]]
 *        (default 4 s, 4096 worlds, the server next to this binary)
 * environment: BENCH_ASYNC_K=2,4,8 (the in-flight counts, default 2,4,8),
 *        BENCH_ASYNC_SERVER_ARGS="--shards 2" (more server flags; by default only the capacity
 *        flags the worlds need, so the server runs with its defaults otherwise) */
#include "server_proc.h"
#include "bench_util.h"
#include "rs_core.h"

#include <math.h>

#define ROUNDS 4
#define MAX_K 16
#define MAX_ROW 64 /* state or sensor values per world, at most */

typedef struct rig {
    rsc_client_t *c;
    uint64_t *ids;
    size_t n, state_size, sensor_size;
    double *u;          /* a force per world */
    int32_t *codes;     /* the rows the answers land in */
    double *state, *sensors, *time;
} rig_t;

typedef struct figure {
    long steps, failures;
    double wall, client_cpu, server_cpu;
} figure_t;

static server_proc_t sp; /* the server this benchmark started */

/* A failure the figures cannot go on after: the server stopped with the benchmark. */
static void die(void)
{
    server_stop(&sp);
    exit(1);
}

static void new_forces(double *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        u[i] = 20.0 * uniform01() - 5.0;
}

/* One synchronous request of group g of k (all the worlds when k is 1); the worlds that failed. */
static long sync_once(rig_t *r, size_t k, size_t g)
{
    rsc_error_t err;
    size_t per = r->n / k, lo = g * per, n = g + 1 == k ? r->n - lo : per;
    new_forces(r->u + lo, n);
    Robosim__V1__BatchArraysReply *a = NULL;
    if (rsc_step_arrays(r->c, r->ids + lo, n, 1, r->u + lo, n, NULL, 0, &a, &err) != 0) {
        fprintf(stderr, "bench_net_async: sync: %s\n", err.message);
        die();
    }
    long failed = (long)a->n_errors;
    rsc_free(a);
    return failed;
}

static void send_group(rig_t *r, size_t k, size_t g, uint64_t *ticket)
{
    size_t per = r->n / k, lo = g * per, n = g + 1 == k ? r->n - lo : per;
    new_forces(r->u + lo, n);
    rsc_batch_in_t in = {.world_ids = r->ids + lo, .n = n, .steps = 1, .commands = r->u + lo,
                         .ncommands = n};
    rsc_batch_out_t out = {.codes = r->codes + lo, .state = r->state + lo * r->state_size,
                           .state_size = r->state_size,
                           .sensors = r->sensors + lo * r->sensor_size,
                           .sensor_size = r->sensor_size, .time = r->time + lo};
    rsc_error_t err;
    if (rsc_batch_send(r->c, &in, &out, ticket, &err) != 0) {
        fprintf(stderr, "bench_net_async: send: %s\n", err.message);
        die();
    }
}

/* Receive one answer; its group (by ticket) in *g, the worlds that failed in *failed. */
static void recv_group(rig_t *r, const uint64_t *tickets, size_t k, size_t *g, long *failed)
{
    rsc_batch_done_t done;
    rsc_error_t err;
    int rc = rsc_batch_recv(r->c, 0, &done, &err);
    if (rc != 0 && done.ticket == 0) {
        fprintf(stderr, "bench_net_async: recv: %s\n", err.message);
        die();
    }
    *failed = rc != 0 ? (long)done.n : (long)done.nfailed;
    if (rc != 0)
        fprintf(stderr, "bench_net_async: a request refused: %s\n", err.message);
    for (*g = 0; *g < k && tickets[*g] != done.ticket; (*g)++)
        ;
}

/* One block of k groups, pipelined (`async`) or one request at a time, for `seconds`: its
 * world-steps into f. */
static void net_block(rig_t *r, size_t k, int async, double seconds, pid_t server, figure_t *f)
{
    double t0 = now(), me0 = cpu_seconds(getpid()), s0 = cpu_seconds(server);
    long steps = 0, failed = 0;
    if (!async) {
        do {
            for (size_t g = 0; g < k; g++)
                failed += sync_once(r, k, g);
            steps += (long)r->n;
        } while (now() - t0 < seconds);
    } else {
        uint64_t tickets[MAX_K];
        for (size_t g = 0; g < k; g++)
            send_group(r, k, g, &tickets[g]);
        size_t per = r->n / k;
        int draining = 0;
        while (rsc_batch_pending(r->c) > 0) {
            size_t g;
            long bad;
            recv_group(r, tickets, k, &g, &bad);
            failed += bad;
            steps += (long)(g + 1 == k ? r->n - g * per : per);
            draining |= now() - t0 >= seconds;
            if (!draining && g < k) /* the agent's turn: new forces for that group, sent */
                send_group(r, k, g, &tickets[g]);
        }
    }
    f->wall += now() - t0;
    f->client_cpu += cpu_seconds(getpid()) - me0;
    f->server_cpu += cpu_seconds(server) - s0;
    f->steps += steps;
    f->failures += failed;
}

/* One block of in-process stepping of the worlds w: world-steps into f. */
static void inproc_block(rs_world_t **w, size_t n, double seconds, figure_t *f)
{
    static long round;
    double t0 = now(), me0 = cpu_seconds(getpid());
    long steps = 0;
    rs_status_t st;
    do {
        for (size_t i = 0; i < n; i++) {
            if (i + 1 < n)
                rs_world_prefetch(w[i + 1]);
            double u = 0.5 + 0.5 * sin(0.1 * (double)round + (double)i);
            if (rs_set_commands(w[i]->model, w[i]->data, 0, &u, 1, &st) != 0 ||
                rs_step(w[i]->model, w[i]->data, 1, &st) != 0) {
                fprintf(stderr, "bench_net_async: in-process: %s\n", st.message);
                die();
            }
        }
        steps += (long)n;
        round++;
    } while (now() - t0 < seconds);
    f->wall += now() - t0;
    f->client_cpu += cpu_seconds(getpid()) - me0;
    f->steps += steps;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 4.0;
    long nworlds = argc > 2 ? atol(argv[2]) : 4096;
    char server[PATH_MAX];
    find_server(server, sizeof server, argc > 3 ? argv[3] : NULL);
    if (seconds <= 0 || nworlds < 2 || nworlds > 100000) {
        fprintf(stderr, "usage: bench_net_async [SECONDS_PER_FIGURE [WORLDS [SERVER]]]\n");
        return 2;
    }
    size_t ks[MAX_K] = {1, 2, 4, 8}, nk = 4;
    const char *kenv = getenv("BENCH_ASYNC_K");
    if (kenv && *kenv) {
        nk = 1;
        for (char *end; nk < MAX_K && *kenv; kenv = *end ? end + 1 : end) {
            long v = strtol(kenv, &end, 10);
            if (end == kenv)
                break;
            if (v >= 2 && v <= MAX_K)
                ks[nk++] = (size_t)v;
        }
    }
    char maxw[32];
    snprintf(maxw, sizeof maxw, "%ld", nworlds + 16);
    const char *extra[24] = {"--no-world", "--max-worlds", maxw, "--max-worlds-per-client", "0",
                             "--max-worlds-share", "1", "--max-batch", maxw,
                             "--max-inflight-per-client", "16"};
    int nextra = 11;
    static char args[512];
    const char *more = getenv("BENCH_ASYNC_SERVER_ARGS");
    snprintf(args, sizeof args, "%s", more ? more : "");
    for (char *tok = strtok(args, " "); tok && nextra < 22; tok = strtok(NULL, " "))
        extra[nextra++] = tok;
    extra[nextra] = NULL;
    setenv("ROBOSIM_TEST_SHARDS", "default", 1); /* the server's own --shards, not the tests' 1 */
    if (server_start(&sp, server, extra) != 0) {
        fprintf(stderr, "bench_net_async: %s did not start\n", server);
        return 1;
    }
    rig_t r = {.n = (size_t)nworlds};
    rsc_error_t err;
    r.c = rsc_connect(sp.endpoint, 60000, &err);
    r.ids = calloc(r.n, sizeof *r.ids);
    r.u = calloc(r.n, sizeof *r.u);
    r.codes = calloc(r.n, sizeof *r.codes);
    r.state = calloc(r.n * MAX_ROW, sizeof *r.state);
    r.sensors = calloc(r.n * MAX_ROW, sizeof *r.sensors);
    r.time = calloc(r.n, sizeof *r.time);
    rs_world_t **local = calloc(r.n, sizeof *local);
    for (size_t i = 0; i < r.n; i++) {
        rs_status_t st;
        if (!r.c || rsc_create_world(r.c, "finger", NULL, 0, i, &r.ids[i], &err) != 0 ||
            !(local[i] = rs_world_new("finger", NULL, 0, i, &st))) {
            fprintf(stderr, "bench_net_async: create world %zu: %s\n", i,
                    r.c ? err.message : "no client");
            server_stop(&sp);
            return 1;
        }
    }
    Robosim__V1__BatchArraysReply *probe = NULL;
    if (rsc_step_arrays(r.c, r.ids, 1, 1, NULL, 0, NULL, 0, &probe, &err) != 0 ||
        probe->state_size > MAX_ROW || probe->sensor_size > MAX_ROW) {
        fprintf(stderr, "bench_net_async: probe: %s\n", err.message);
        server_stop(&sp);
        return 1;
    }
    r.state_size = probe->state_size;
    r.sensor_size = probe->sensor_size;
    rsc_free(probe);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench_net_async: %zu finger worlds, one client process, one robosim-server (%s%s%s), "
           "%ld online CPUs; one 10 ms control step per world per request, a new force each; "
           "%d rounds of %.2f s per mode, the modes alternating\n",
           r.n, "capacity flags only", more && *more ? ", plus " : "", more ? more : "", ncpu,
           ROUNDS, seconds / ROUNDS);
    fflush(stdout);
    /* the modes: sync 1 x n; sync kmax x n / kmax (the largest k's requests, one at a time:
     * what pipelining adds beside what smaller requests do); async k for each k */
    size_t groups[MAX_K + 2], nm = 0, kmax = 1;
    int async[MAX_K + 2];
    for (size_t j = 1; j < nk; j++)
        kmax = ks[j] > kmax ? ks[j] : kmax;
    groups[nm] = 1, async[nm++] = 0;
    if (kmax > 1)
        groups[nm] = kmax, async[nm++] = 0;
    for (size_t j = 1; j < nk; j++)
        groups[nm] = ks[j], async[nm++] = 1;
    figure_t fig[MAX_K + 2], local_fig = {0};
    memset(fig, 0, sizeof fig);
    size_t nmodes = nm + 1; /* then in-process */
    for (int round = 0; round < ROUNDS; round++)
        for (size_t j = 0; j < nmodes; j++) {
            size_t m = (j + (size_t)round) % nmodes;
            if (m == nm)
                inproc_block(local, r.n, seconds / ROUNDS, &local_fig);
            else
                net_block(&r, groups[m], async[m], seconds / ROUNDS, sp.pid, &fig[m]);
        }
    double inproc = (double)local_fig.steps / local_fig.wall;
    double sync = (double)fig[0].steps / fig[0].wall;
    printf("  in-process, one thread      %9.0f world-steps/s  (%.3f us per world-step); %ld x "
           "in-process: %.0f\n",
           inproc, 1e6 / inproc, ncpu, (double)ncpu * inproc);
    int failures = 0;
    for (size_t m = 0; m < nm; m++) {
        double rate = (double)fig[m].steps / fig[m].wall;
        char label[64];
        if (async[m])
            snprintf(label, sizeof label, "async k=%zu, %zu x %zu", groups[m], groups[m],
                     r.n / groups[m]);
        else
            snprintf(label, sizeof label, "sync, %zu x %zu", groups[m], r.n / groups[m]);
        printf("  %-27s %9.0f world-steps/s  x sync %.2f  x (%ld x in-process) %.2f  client CPU "
               "%.3f us, server CPU %.3f us per world-step%s\n",
               label, rate, rate / sync, ncpu, rate / ((double)ncpu * inproc),
               1e6 * fig[m].client_cpu / (double)fig[m].steps,
               1e6 * fig[m].server_cpu / (double)fig[m].steps,
               fig[m].failures ? "  FAILURES" : "");
        failures |= fig[m].failures != 0;
    }
    for (size_t i = 0; i < r.n; i++)
        rs_world_destroy(&local[i]);
    free(local);
    rsc_close(&r.c);
    server_stop(&sp);
    free(r.ids);
    free(r.u);
    free(r.codes);
    free(r.state);
    free(r.sensors);
    free(r.time);
    return failures;
}
