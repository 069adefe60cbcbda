/* Many clients on one server, two figures:
 *
 *  (a) observers: a controller's Step round trips per second (diff-drive world, new commands
 *      every step, full state back) with 0 and with 16 subscribers connected to the observer
 *      stream and reading every frame. The subscribers run in a separate process, 16 threads
 *      with a SUB socket each. Blocks with and without them alternate so drift hits both. Run at
 *      the default rate limit (60 states per second per world) and with the limit lifted
 *      (every step published to all 16). Goal: less than 10% apart.
 *  (b) batches: world-steps per second of finger worlds with StepBatch of 1, 16, 256 and 1024
 *      worlds (one 10 ms control step each, a new force per world per request), on servers with
 *      --threads 1 and --threads 2, in both forms: items (a BatchItem and a full State per
 *      world) and arrays (StepBatch.arrays: one array of forces in, arrays of states out).
 *      Goal: 1e6 world-steps per second at 1024.
 *
 * usage: bench_net_many [a|b|ab [SECONDS_PER_FIGURE [PATH/TO/robosim-server]]]
 *        (default ab, 2 s, the server next to this binary)
 * environment, for (b) only: BENCH_BATCH_SIZES=1024 (a comma-separated list, default
 *        1,16,256,1024), BENCH_BATCH_THREADS=2 (one server thread count, default 1 then 2),
 *        BENCH_BATCH_FORM=arrays (or items; default both), BENCH_BATCH_BASELINE=PATH/TO/another
 *        robosim-server (an older build: its blocks and this server's alternate, four each per
 *        figure, and the ratios are printed). Every figure has the server's CPU time per
 *        world-step beside it. */
#include "server_proc.h"
#include "bench_util.h"
#include "rs_core.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#define NSUBS 16

/* ---- the subscriber process: commands on a pipe -------------------------------------------
 * "connect ENDPOINT\n": 16 SUB threads subscribe to everything and read; answers "ok\n" once
 *                       connected. "close\n": they stop; answers "frames N\n". "quit\n". */

typedef struct sub_thread {
    pthread_t tid;
    void *ctx;
    char endpoint[256];
    atomic_int *stop;
    long frames;
} sub_thread_t;

static void *sub_main(void *arg)
{
    sub_thread_t *t = arg;
    void *s = zmq_socket(t->ctx, ZMQ_SUB);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
    zmq_connect(s, t->endpoint);
    zmq_msg_t m;
    while (!atomic_load(t->stop)) {
        zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, 200) <= 0)
            continue;
        int more = 1;
        while (more) {
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, s, 0) < 0) {
                zmq_msg_close(&m);
                break;
            }
            more = zmq_msg_more(&m);
            zmq_msg_close(&m);
        }
        t->frames++;
    }
    zmq_close(s);
    return NULL;
}

static void subscriber_process(int in, int out)
{
    FILE *cmd = fdopen(in, "r"), *rep = fdopen(out, "w");
    void *ctx = zmq_ctx_new();
    sub_thread_t threads[NSUBS];
    atomic_int stop;
    char line[512];
    while (fgets(line, sizeof line, cmd)) {
        if (!strncmp(line, "connect ", 8)) {
            atomic_store(&stop, 0);
            line[strcspn(line, "\n")] = '\0';
            for (int i = 0; i < NSUBS; i++) {
                threads[i] = (sub_thread_t){0, ctx, "", &stop, 0};
                snprintf(threads[i].endpoint, sizeof threads[i].endpoint, "%.255s", line + 8);
                pthread_create(&threads[i].tid, NULL, sub_main, &threads[i]);
            }
            struct timespec ts = {0, 300 * 1000 * 1000}; /* let the subscriptions arrive */
            nanosleep(&ts, NULL);
            fprintf(rep, "ok\n");
            fflush(rep);
        } else if (!strncmp(line, "close", 5)) {
            atomic_store(&stop, 1);
            long frames = 0;
            for (int i = 0; i < NSUBS; i++) {
                pthread_join(threads[i].tid, NULL);
                frames += threads[i].frames;
            }
            fprintf(rep, "frames %ld\n", frames);
            fflush(rep);
        } else {
            break;
        }
    }
    zmq_ctx_term(ctx);
    _exit(0);
}

typedef struct subs {
    pid_t pid;
    FILE *cmd, *rep;
} subs_t;

static int subs_start(subs_t *s)
{
    int to[2], from[2];
    if (pipe(to) || pipe(from))
        return -1;
    s->pid = fork();
    if (s->pid == 0) {
        close(to[1]);
        close(from[0]);
        subscriber_process(to[0], from[1]);
    }
    close(to[0]);
    close(from[1]);
    s->cmd = fdopen(to[1], "w");
    s->rep = fdopen(from[0], "r");
    return 0;
}

static long subs_say(subs_t *s, const char *what, const char *arg)
{
    char line[128];
    fprintf(s->cmd, "%s%s%s\n", what, arg ? " " : "", arg ? arg : "");
    fflush(s->cmd);
    if (!fgets(line, sizeof line, s->rep))
        return -1;
    long n = 0;
    sscanf(line, "frames %ld", &n);
    return n;
}

/* ---- (a) observers ------------------------------------------------------------------------- */

static double step_block(rsc_client_t *c, uint64_t world, int n, long *failures)
{
    double u[2] = {3.0, 2.5};
    rsc_command_t cmd = {"robot", u, 2};
    rsc_error_t err;
    double t0 = now();
    for (int i = 0; i < n; i++) {
        u[0] = 3.0 + 0.001 * (i % 7);
        Robosim__V1__State *s = NULL;
        if (rsc_step(c, world, 1, 0, &cmd, 1, &s, &err) != 0)
            (*failures)++;
        rsc_free(s);
    }
    return now() - t0;
}

static void figure_observers(const char *server, subs_t *subs, double seconds, const char *hz)
{
    const char *extra[] = {"--stream-max-hz", hz, NULL};
    server_proc_t sp;
    if (server_start(&sp, server, extra) != 0) {
        fprintf(stderr, "bench_net_many: cannot start %s\n", server);
        return;
    }
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(sp.endpoint, 5000, &err);
    Robosim__V1__HelloReply *h = NULL;
    uint64_t world = 0;
    if (!c || rsc_hello(c, 1, 0, &h, &err) != 0 || !h->stream_endpoint[0] ||
        rsc_create_world(c, "diff_drive", NULL, 0, 0, &world, &err) != 0) {
        fprintf(stderr, "bench_net_many: %s\n", err.message);
        server_stop(&sp);
        return;
    }
    char ep[256];
    snprintf(ep, sizeof ep, "%s", h->stream_endpoint);
    rsc_free(h);
    long failures = 0;
    double warm = step_block(c, world, 500, &failures);
    const int rounds = 16;
    int per_block = (int)fmax(200.0, seconds / (2.0 * rounds) / (warm / 500.0));
    double ratio[16];
    double t0 = 0, t16 = 0, cpu0 = 0, cpu16 = 0;
    long frames = 0;
    for (int r = 0; r < rounds; r++) {
        /* alternate which comes first */
        double tr[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            int with = (r + k) % 2;
            if (with)
                subs_say(subs, "connect", ep);
            double c0 = cpu_seconds(sp.pid);
            double t = step_block(c, world, per_block, &failures);
            double cpu = cpu_seconds(sp.pid) - c0;
            tr[with] = t;
            if (with) {
                cpu16 += cpu;
                t16 += t;
                frames += subs_say(subs, "close", NULL);
            } else {
                cpu0 += cpu;
                t0 += t;
            }
        }
        ratio[r] = tr[0] / tr[1]; /* steps/s with 16 over steps/s with 0 */
    }
    qsort(ratio, rounds, sizeof ratio[0], by_value);
    long n = (long)rounds * per_block;
    double r0 = (double)n / t0, r16 = (double)n / t16;
    printf("  stream-max-hz %-8s  0 subscribers: %8.0f steps/s (%6.1f us)   16 subscribers: %8.0f "
           "steps/s (%6.1f us)   %+5.1f%%   frames read: %ld (%.1f per step per subscriber)%s\n",
           hz, r0, 1e6 / r0, r16, 1e6 / r16, 100.0 * (r16 - r0) / r0, frames,
           (double)frames / (double)n / NSUBS, failures ? "  FAILURES" : "");
    printf("  %22s median of %d rounds: %+5.1f%%; server CPU per step: %.1f us with 0, %.1f us "
           "with 16 subscribers\n",
           "", rounds, 100.0 * (ratio[rounds / 2] - 1.0), 1e6 * cpu0 / (double)n,
           1e6 * cpu16 / (double)n);
    rsc_close(&c);
    server_stop(&sp);
}

/* ---- (b) batches --------------------------------------------------------------------------- */

/* One StepBatch of the first b worlds, a new force for each: as items (a State per world) or
 * in the columnar form (arrays). Returns the failed worlds (or the whole batch's failure). */
static long batch_once(rsc_client_t *c, const uint64_t *ids, int b, int arrays, long request,
                       rsc_batch_item_t *items, rsc_command_t *cmds, double *f)
{
    rsc_error_t err;
    long failures = 0;
    for (int i = 0; i < b; i++)
        f[i] = 0.5 + 0.5 * sin(0.1 * (double)request + i); /* a new force each step */
    if (arrays) {
        Robosim__V1__BatchArraysReply *r = NULL;
        if (rsc_step_arrays(c, ids, (size_t)b, 1, f, (size_t)b, NULL, 0, &r, &err) != 0)
            return b;
        failures += (long)r->n_errors;
        rsc_free(r);
        return failures;
    }
    for (int i = 0; i < b; i++) {
        cmds[i] = (rsc_command_t){"finger", &f[i], 1};
        items[i] = (rsc_batch_item_t){.world_id = ids[i], .steps = 1, .cmds = &cmds[i], .ncmds = 1};
    }
    Robosim__V1__StepBatchReply *r = NULL;
    if (rsc_step_batch(c, items, (size_t)b, &r, &err) != 0)
        return b;
    for (size_t i = 0; i < r->n_results; i++)
        failures += r->results[i]->result_case != ROBOSIM__V1__BATCH_RESULT__RESULT_STATE;
    rsc_free(r);
    return failures;
}

/* One server of (b) and its client, holding max_b finger worlds. */
typedef struct batch_server {
    server_proc_t sp;
    rsc_client_t *c;
    uint64_t *ids;
} batch_server_t;

static int batch_server_start(batch_server_t *b, const char *server, const char *threads, int max_b)
{
    /* one client holds all the worlds: no per-client quota, no share cap */
    const char *extra[] = {"--threads", threads, "--max-worlds", "1100", "--no-world",
                           "--max-worlds-per-client", "0", "--max-worlds-share", "1", NULL};
    if (server_start(&b->sp, server, extra) != 0) {
        fprintf(stderr, "bench_net_many: cannot start %s\n", server);
        return -1;
    }
    rsc_error_t err;
    memset(&err, 0, sizeof err);
    b->c = rsc_connect(b->sp.endpoint, 30000, &err);
    b->ids = calloc((size_t)max_b, sizeof *b->ids);
    for (int i = 0; i < max_b; i++)
        if (!b->c || rsc_create_world(b->c, "finger", NULL, 0, (uint64_t)i, &b->ids[i], &err) != 0) {
            fprintf(stderr, "bench_net_many: create: %s\n", err.message);
            return -1;
        }
    return 0;
}

static void batch_server_stop(batch_server_t *b)
{
    free(b->ids);
    rsc_close(&b->c);
    server_stop(&b->sp);
}

/* One block of in-process stepping: the first b of the worlds w, one control step each with a
 * new force, in turn in this thread, the next prefetched (bench_core_many_worlds' loop: what a
 * StepBatch's worker does without the network). Returns the world-steps made in `seconds`. */
static long inproc_block(rs_world_t **w, int b, double seconds, long *round, double *wall)
{
    long steps = 0;
    double t0 = now(), t = 0;
    rs_status_t st;
    do {
        for (int i = 0; i < b; i++) {
            if (i + 1 < b)
                rs_world_prefetch(w[i + 1]);
            double f = 0.5 + 0.5 * sin(0.1 * (double)*round + i);
            if (rs_set_commands(w[i]->model, w[i]->data, 0, &f, 1, &st) != 0 ||
                rs_step(w[i]->model, w[i]->data, 1, &st) != 0) {
                fprintf(stderr, "bench_net_many: in-process: %s\n", st.message);
                exit(1);
            }
        }
        steps += b;
        (*round)++;
        t = now() - t0;
    } while (t < seconds);
    *wall += t;
    return steps;
}

/* (b) at one --threads count: each size and form timed in blocks; with a second server binary
 * (`baseline`), blocks on it and on `server` alternate (ABAB), each figure beside the server's
 * CPU time per world-step, and the ratio new / baseline. For the arrays form, blocks of the
 * same worlds stepped in-process on one thread alternate with them too: the rate per core the
 * server's is compared with (at --threads N: N x that). */
static void figure_batches(const char *server, const char *baseline, double seconds,
                           const char *threads)
{
    const int max_b = 1024;
    batch_server_t bs[2];
    memset(bs, 0, sizeof bs);
    int nservers = baseline ? 2 : 1;
    for (int k = 0; k < nservers; k++)
        if (batch_server_start(&bs[k], k ? baseline : server, threads, max_b) != 0) {
            for (int j = 0; j <= k; j++)
                batch_server_stop(&bs[j]);
            return;
        }
    rsc_batch_item_t *items = calloc(max_b, sizeof *items);
    rsc_command_t *cmds = calloc(max_b, sizeof *cmds);
    double *f = calloc(max_b, sizeof *f);
    int sizes[8] = {1, 16, 256, 1024}, nsizes = 4;
    const char *only = getenv("BENCH_BATCH_SIZES"); /* e.g. "1024" or "16,256" */
    if (only && *only) {
        nsizes = 0;
        for (char *end; nsizes < 8 && *only; only = *end ? end + 1 : end) {
            long v = strtol(only, &end, 10);
            if (end == only)
                break;
            if (v >= 1 && v <= max_b)
                sizes[nsizes++] = (int)v;
        }
    }
    const char *form = getenv("BENCH_BATCH_FORM"); /* "items" or "arrays": that form only */
    const int rounds = 4;
    rs_world_t **local = calloc(max_b, sizeof *local);
    for (int i = 0; i < max_b; i++) {
        rs_status_t st;
        if (!(local[i] = rs_world_new("finger", NULL, 0, (uint64_t)i, &st))) {
            fprintf(stderr, "bench_net_many: in-process world: %s\n", st.message);
            exit(1);
        }
    }
    long local_round = 0;
    for (int arrays = 0; arrays < 2; arrays++) {
        if (form && *form && strcmp(form, arrays ? "arrays" : "items"))
            continue;
        for (int si = 0; si < nsizes; si++) {
            int b = sizes[si];
            long requests[2] = {0, 0}, failures[2] = {0, 0}, local_steps = 0;
            double wall[2] = {0, 0}, cpu[2] = {0, 0}, local_wall = 0;
            double loop[2] = {0, 0}, io[2] = {0, 0}; /* CPU of the loop thread, ZeroMQ's */
            double client[2] = {0, 0}; /* this process's (the client's) CPU in the blocks */
            for (int r = 0; r < rounds; r++)
                for (int kk = 0; kk < nservers + arrays; kk++) {
                    int k = (r + kk) % (nservers + arrays); /* each goes first in turn */
                    if (k == nservers) {
                        local_steps += inproc_block(local, b, seconds / rounds, &local_round,
                                                    &local_wall);
                        continue;
                    }
                    long n = 0;
                    double m0, io0, all0 = cpu_threads(bs[k].sp.pid, &m0, &io0);
                    double t0 = now(), c0 = cpu_seconds(bs[k].sp.pid), t = 0;
                    double me0 = cpu_seconds(getpid());
                    do {
                        failures[k] += batch_once(bs[k].c, bs[k].ids, b, arrays, requests[k] + n,
                                                  items, cmds, f);
                        n++;
                        t = now() - t0;
                    } while (t < seconds / rounds || n < 3);
                    cpu[k] += cpu_seconds(bs[k].sp.pid) - c0;
                    client[k] += cpu_seconds(getpid()) - me0;
                    double m1, io1;
                    (void)all0;
                    cpu_threads(bs[k].sp.pid, &m1, &io1);
                    loop[k] += m1 - m0;
                    io[k] += io1 - io0;
                    wall[k] += t;
                    requests[k] += n;
                }
            for (int k = 0; k < nservers; k++) {
                double ws = (double)requests[k] * b / wall[k];
                printf("  --threads %s  %-6s batch %5d: %9.0f world-steps/s  (%7.0f requests/s, "
                       "%6.2f us per world-step; server CPU %6.2f us per world-step)%s%s\n",
                       threads, arrays ? "arrays" : "items", b, ws, (double)requests[k] / wall[k],
                       1e6 / ws, 1e6 * cpu[k] / ((double)requests[k] * b),
                       baseline ? (k ? "  baseline" : "  this") : "",
                       failures[k] ? "  FAILURES" : "");
            }
            if (baseline)
                printf("  %22s this / baseline: %.2f in world-steps/s, %.2f in server CPU per "
                       "world-step (%d blocks each, alternating)\n",
                       "", (requests[0] / wall[0]) / (requests[1] / wall[1]),
                       (cpu[0] / requests[0]) / (cpu[1] / requests[1]), rounds);
            if (arrays) {
                double local_rate = (double)local_steps / local_wall;
                int nt = atoi(threads);
                printf("  %22s in-process, one thread, the same %d worlds: %9.0f world-steps/s "
                       "(%.2f us); this server / (%d x that): %.2f\n",
                       "", b, local_rate, 1e6 / local_rate, nt,
                       ((double)requests[0] * b / wall[0]) / (nt * local_rate));
                if (baseline)
                    printf("  %22s baseline / (%d x that): %.2f\n", "", nt,
                           ((double)requests[1] * b / wall[1]) / (nt * local_rate));
                /* Where the server's CPU goes, per world-step: the loop thread (which also
                 * steps its share: worker 0), the other workers, ZeroMQ's I/O thread. What the
                 * loop spends beyond an average worker is the serial part s; the workers'
                 * stepping is the parallel part p. On n cores the model predicts
                 * 1 / (s + p / n) world-steps/s (I/O on its own core) */
                double ws = (double)requests[0] * b;
                double l = 1e6 * loop[0] / ws, o = 1e6 * io[0] / ws, all = 1e6 * cpu[0] / ws;
                double workers = all - l - o, per = nt > 1 ? workers / (nt - 1) : l;
                double serial = fmax(0.0, l - per), par = all - o - serial;
                printf("  %22s server CPU per world-step %.2f us: loop thread %.2f, other "
                       "workers %.2f, ZeroMQ I/O %.2f; serial part %.2f us, parallel %.2f us "
                       "(in-process %.2f us: parallel / in-process %.2f); predicted on 16 "
                       "cores %.2f x 16 x in-process, on 64 %.2f\n",
                       "", all, l, workers, o, serial, par, 1e6 / local_rate,
                       par * local_rate / 1e6,
                       1e6 / (serial + par / 16) / (16 * local_rate),
                       1e6 / (serial + par / 64) / (64 * local_rate));
                /* the client's own work (packing the request, unpacking the reply, its ZeroMQ
                 * thread) is serial too: one client waiting for each reply gets at most
                 * 1 / (its CPU per world-step), whatever the server's cores */
                double me = 1e6 * client[0] / ws;
                printf("  %22s this client's CPU per world-step %.2f us: one synchronous client "
                       "reaches at most %.0f world-steps/s, %.2f x 16 x in-process\n",
                       "", me, 1e6 / me, 1e6 / me / (16 * local_rate));
            }
            fflush(stdout);
        }
    }
    free(items);
    free(cmds);
    free(f);
    for (int i = 0; i < max_b; i++)
        rs_world_destroy(&local[i]);
    free(local);
    for (int k = 0; k < nservers; k++)
        batch_server_stop(&bs[k]);
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "ab";
    double seconds = argc > 2 ? atof(argv[2]) : 2.0;
    char path[PATH_MAX];
    find_server(path, sizeof path, argc > 3 ? argv[3] : NULL);
    if (!strcmp(which, "--help") || seconds <= 0) {
        printf("usage: bench_net_many [a|b|ab [SECONDS_PER_FIGURE [PATH/TO/robosim-server]]]\n");
        return 0;
    }
    subs_t subs = {0};
    if (strchr(which, 'a') && subs_start(&subs) != 0) /* before this process starts ZeroMQ */
        return 1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench_net_many: %ld online CPUs, server %s\n", ncpu, path);
    if (strchr(which, 'a')) {
        printf("(a) controller Step round trips (diff_drive, commands + full state) with 0 and %d "
               "stream subscribers reading:\n",
               NSUBS);
        figure_observers(path, &subs, seconds, "60");
        figure_observers(path, &subs, seconds, "1000000");
        fprintf(subs.cmd, "quit\n");
        fflush(subs.cmd);
        waitpid(subs.pid, NULL, 0);
    }
    if (strchr(which, 'b')) {
        printf("(b) StepBatch of finger worlds, one 10 ms control step each (goal 1e6 "
               "world-steps/s at 1024):\n");
        const char *threads = getenv("BENCH_BATCH_THREADS"); /* e.g. "2": that count only */
        const char *baseline = getenv("BENCH_BATCH_BASELINE"); /* another robosim-server */
        if (baseline && !*baseline)
            baseline = NULL;
        if (!threads || !*threads || !strcmp(threads, "1"))
            figure_batches(path, baseline, seconds, "1");
        if (!threads || !*threads || strcmp(threads, "1"))
            figure_batches(path, baseline, seconds, threads && *threads ? threads : "2");
    }
    return 0;
}
