/* Many clients, one server: K client processes, each stepping its own finger worlds as fast as
 * round trips allow, against one server of N shards (--shards N --threads 1) and against N
 * independent servers (--threads 1 each, the clients spread over them round-robin), for K = N
 * and K = 4N, in three workloads: single-world Step round trips (one control step, a new force
 * each), and StepBatch.arrays of 64 and of 1024 worlds per client. Prints world-steps per
 * second, the servers' CPU seconds per million world-steps, and the ratio one server / N
 * servers (goal: >= 0.9). Runs alternate one server, N servers, one server, N servers (ABAB), so
 * drift from other load hits both.
 *
 * Then the serial fraction: the Step workload with K = 4N clients on one server of 1 and of 2
 * shards; Amdahl's law S(n) = 1 / (f + (1 - f) / n) fitted to S(2) gives f = 2 / S(2) - 1 and
 * predicts S(16) and S(64).
 *
 * usage: bench_net_multi [SECONDS_PER_RUN [PATH/TO/robosim-server]]  (default 2 s, the server
 *        next to this binary)
 * environment: BENCH_MULTI_N=N (default 2), BENCH_MULTI_WORKLOADS=step,arrays64,arrays1024
 *        (a subset), BENCH_MULTI_K=2,8 (client counts; default N and 4N), BENCH_MULTI_AMDAHL=0
 *        (skip the serial fraction), BENCH_MULTI_ONE=default (the one server started with no
 *        --shards or --threads at all: what a user gets without tuning) or
 *        BENCH_MULTI_ONE="--shards 2 --threads 2" (the one server's own flags) */
#include "server_proc.h"
#include "bench_util.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>

#define MAX_SERVERS 64
#define MAX_CLIENTS 256

/* One client process: create its worlds on `endpoint`, say "ready" on `up`, wait for a byte on
 * `go`, step for `seconds`, and write the world-steps it made (a long) on `up`. */
static void client_main(const char *endpoint, int worlds, double seconds, int up, int go)
{
    rsc_error_t err;
    long done = -1;
    rsc_client_t *c = rsc_connect(endpoint, 60000, &err);
    uint64_t *ids = calloc((size_t)worlds, sizeof *ids);
    double *f = calloc((size_t)worlds, sizeof *f);
    int ok = c && ids && f;
    for (int i = 0; ok && i < worlds; i++)
        ok = rsc_create_world(c, "finger", NULL, 0, (uint64_t)i + 1, &ids[i], &err) == 0;
    if (!ok)
        fprintf(stderr, "bench_net_multi: client: %s\n", c ? err.message : "cannot connect");
    char byte = ok ? 'r' : 'x';
    if (write(up, &byte, 1) != 1 || read(go, &byte, 1) != 1)
        _exit(1);
    if (ok) {
        done = 0;
        double t0 = now();
        for (long r = 0; now() - t0 < seconds; r++) {
            if (worlds == 1) {
                double force = 0.5 * sin(0.01 * (double)r);
                rsc_command_t cmd = {"finger", &force, 1};
                Robosim__V1__State *st = NULL;
                if (rsc_step(c, ids[0], 1, 0, &cmd, 1, &st, &err) != 0) {
                    fprintf(stderr, "bench_net_multi: step: %s\n", err.message);
                    done = -1;
                    break;
                }
                rsc_free(st);
                done++;
            } else {
                for (int i = 0; i < worlds; i++)
                    f[i] = 0.5 * sin(0.01 * (double)(r + i));
                Robosim__V1__BatchArraysReply *out = NULL;
                if (rsc_step_arrays(c, ids, (size_t)worlds, 1, f, (size_t)worlds, NULL, 0, &out,
                                    &err) != 0) {
                    fprintf(stderr, "bench_net_multi: step_arrays: %s\n", err.message);
                    done = -1;
                    break;
                }
                rsc_free(out);
                done += worlds;
            }
        }
    }
    if (write(up, &done, sizeof done) != sizeof done)
        _exit(1);
    rsc_close(&c);
    _exit(0);
}

typedef struct result {
    double rate;      /* world-steps per second, all clients */
    double cpu_per_m; /* the servers' CPU seconds per million world-steps */
    double front;     /* one server: the share of its CPU time on its main thread (the front) */
    double io;        /* ... and on ZeroMQ's I/O threads */
} result_t;

/* K clients with `worlds` worlds each against `nservers` servers started with `args` (the
 * clients round-robin over them). */
static int run(const char *server, int nservers, const char *const *args, int k, int worlds,
               double seconds, result_t *res)
{
    server_proc_t sp[MAX_SERVERS];
    int up[MAX_CLIENTS][2], go[MAX_CLIENTS][2];
    pid_t kids[MAX_CLIENTS];
    int started = 0, rc = -1;
    for (; started < nservers; started++)
        if (server_start(&sp[started], server, args) != 0) {
            fprintf(stderr, "bench_net_multi: cannot start %s\n", server);
            goto out;
        }
    for (int i = 0; i < k; i++) {
        if (pipe(up[i]) != 0 || pipe(go[i]) != 0)
            goto out;
        kids[i] = fork();
        if (kids[i] == 0)
            client_main(sp[i % nservers].endpoint, worlds, seconds, up[i][1], go[i][0]);
    }
    int ready = 1;
    for (int i = 0; i < k; i++) {
        char b = 0;
        ready &= read(up[i][0], &b, 1) == 1 && b == 'r';
    }
    double cpu0 = 0, cpu1 = 0, t0 = now(), m0 = 0, m1 = 0, io0 = 0, io1 = 0, all0 = 0, all1 = 0;
    for (int s = 0; s < nservers; s++)
        cpu0 += cpu_seconds(sp[s].pid);
    if (nservers == 1)
        all0 = cpu_threads(sp[0].pid, &m0, &io0);
    for (int i = 0; i < k; i++)
        if (write(go[i][1], "g", 1) != 1)
            ready = 0;
    long total = 0;
    for (int i = 0; i < k; i++) {
        long d = -1;
        if (read(up[i][0], &d, sizeof d) != sizeof d || d < 0)
            ready = 0;
        total += d;
    }
    double t = now() - t0;
    for (int s = 0; s < nservers; s++)
        cpu1 += cpu_seconds(sp[s].pid);
    if (nservers == 1) {
        all1 = cpu_threads(sp[0].pid, &m1, &io1);
        res->front = (m1 - m0) / (all1 - all0);
        res->io = (io1 - io0) / (all1 - all0);
    }
    for (int i = 0; i < k; i++) {
        waitpid(kids[i], NULL, 0);
        close(up[i][0]), close(up[i][1]), close(go[i][0]), close(go[i][1]);
    }
    if (ready) {
        res->rate = (double)total / t;
        res->cpu_per_m = (cpu1 - cpu0) / ((double)total / 1e6);
        rc = 0;
    }
out:
    for (int s = 0; s < started; s++)
        server_stop(&sp[s]);
    return rc;
}

static int in_list(const char *list, const char *name)
{
    if (!list || !*list)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    char server[PATH_MAX];
    find_server(server, sizeof server, argc > 2 ? argv[2] : NULL);
    if (seconds <= 0) {
        fprintf(stderr, "usage: bench_net_multi [SECONDS_PER_RUN [PATH/TO/robosim-server]]\n");
        return 2;
    }
    const char *env_n = getenv("BENCH_MULTI_N"), *env_w = getenv("BENCH_MULTI_WORKLOADS"),
               *env_k = getenv("BENCH_MULTI_K"), *env_a = getenv("BENCH_MULTI_AMDAHL"),
               *env_one = getenv("BENCH_MULTI_ONE");
    int untuned = env_one && *env_one;
    /* every server here names its --shards but the untuned one, which must get the server's
     * own default, not the one loop server_start gives the tests */
    setenv("ROBOSIM_TEST_SHARDS", "default", 1);
    int n = env_n && atoi(env_n) > 0 ? atoi(env_n) : 2;
    if (n > MAX_SERVERS)
        n = MAX_SERVERS;
    int ks[8] = {n, 4 * n}, nks = 2;
    if (env_k && *env_k) {
        nks = 0;
        for (char *end; nks < 8 && *env_k; env_k = *end ? end + 1 : end) {
            long v = strtol(env_k, &end, 10);
            if (end == env_k)
                break;
            if (v >= 1 && v <= MAX_CLIENTS)
                ks[nks++] = (int)v;
        }
    }
    char shards[16], maxw[16];
    snprintf(shards, sizeof shards, "%d", n);
    snprintf(maxw, sizeof maxw, "%d", 1024 * MAX_CLIENTS + 16);
    /* no per-client quota (every client shares the loopback key), no start-up world */
    const char *one[] = {"--shards", shards, "--threads", "1", "--max-worlds", maxw,
                         "--no-world", "--max-worlds-per-client", "0", "--max-worlds-share", "1",
                         NULL};
    const char *one_default[32] = {"--max-worlds", maxw, "--no-world", "--max-worlds-per-client",
                                   "0", "--max-worlds-share", "1", NULL};
    char one_flags[256];
    snprintf(one_flags, sizeof one_flags, "%s", untuned ? env_one : "");
    if (untuned && strcmp(one_flags, "default")) {
        int na = 7;
        for (char *save = NULL, *tok = strtok_r(one_flags, " ", &save); tok && na < 31;
             tok = strtok_r(NULL, " ", &save))
            one_default[na++] = tok;
        one_default[na] = NULL;
    }
    const char **first = untuned ? one_default : one;
    const char *indep[] = {"--shards", "1", "--threads", "1", "--max-worlds", maxw, "--no-world",
                           "--max-worlds-per-client", "0", "--max-worlds-share", "1", NULL};
    struct {
        const char *name;
        int worlds;
    } loads[] = {{"step", 1}, {"arrays64", 64}, {"arrays1024", 1024}};
    char first_flags[64];
    if (untuned)
        snprintf(first_flags, sizeof first_flags, "%s", strcmp(env_one, "default") ? env_one
                                                                                  : "default flags");
    else
        snprintf(first_flags, sizeof first_flags, "--shards %d --threads 1", n);
    printf("bench_net_multi: K client processes vs one server (%s) and vs %d servers "
           "(--shards 1 --threads 1); %g s per run, ABAB; %ld online CPUs\n",
           first_flags, n, seconds, sysconf(_SC_NPROCESSORS_ONLN));
    printf("%-11s %4s %16s %16s %8s %14s %14s %7s %7s\n", "workload", "K", "one server",
           "N servers", "ratio", "CPU/Mstep one", "CPU/Mstep N", "front", "zmq io");
    for (size_t l = 0; l < sizeof loads / sizeof loads[0]; l++) {
        if (!in_list(env_w, loads[l].name))
            continue;
        for (int ki = 0; ki < nks; ki++) {
            int k = ks[ki];
            result_t a[2] = {{0}}, b[2] = {{0}};
            int ok = 1;
            for (int round = 0; round < 2 && ok; round++)
                ok = run(server, 1, first, k, loads[l].worlds, seconds, &a[round]) == 0 &&
                     run(server, n, indep, k, loads[l].worlds, seconds, &b[round]) == 0;
            if (!ok) {
                printf("%-11s %4d   (failed: see above)\n", loads[l].name, k);
                continue;
            }
            double ra = 0.5 * (a[0].rate + a[1].rate), rb = 0.5 * (b[0].rate + b[1].rate);
            printf("%-11s %4d %16.0f %16.0f %8.3f %14.2f %14.2f %6.1f%% %6.1f%%   (runs %.0f %.0f "
                   "| %.0f %.0f)\n",
                   loads[l].name, k, ra, rb, ra / rb, 0.5 * (a[0].cpu_per_m + a[1].cpu_per_m),
                   0.5 * (b[0].cpu_per_m + b[1].cpu_per_m), 50 * (a[0].front + a[1].front),
                   50 * (a[0].io + a[1].io), a[0].rate, a[1].rate, b[0].rate, b[1].rate);
            fflush(stdout);
        }
    }
    if (env_a && !strcmp(env_a, "0"))
        return 0;
    /* the serial fraction: one server of 1 and of 2 shards, the Step workload, 4N clients */
    const char *s1[] = {"--shards", "1", "--threads", "1", "--max-worlds", maxw, "--no-world",
                        "--max-worlds-per-client", "0", "--max-worlds-share", "1", NULL};
    const char *s2[] = {"--shards", "2", "--threads", "1", "--max-worlds", maxw, "--no-world",
                        "--max-worlds-per-client", "0", "--max-worlds-share", "1", NULL};
    result_t r1[2] = {{0}}, r2[2] = {{0}};
    int ok = 1;
    for (int round = 0; round < 2 && ok; round++)
        ok = run(server, 1, s1, 4 * n, 1, seconds, &r1[round]) == 0 &&
             run(server, 1, s2, 4 * n, 1, seconds, &r2[round]) == 0;
    if (!ok) {
        printf("serial fraction: a run failed (see above)\n");
        return 1;
    }
    double x1 = 0.5 * (r1[0].rate + r1[1].rate), x2 = 0.5 * (r2[0].rate + r2[1].rate);
    double s = x2 / x1, f = 2.0 / s - 1.0;
    double f_used = f < 0 ? 0 : f > 1 ? 1 : f;
    printf("serial fraction (Step, %d clients): --shards 1 %.0f, --shards 2 %.0f steps/s: "
           "S(2) = %.3f, Amdahl f = 2/S(2) - 1 = %.3f; predicts S(16) = %.1f, S(64) = %.1f\n",
           4 * n, x1, x2, s, f, 1.0 / (f_used + (1 - f_used) / 16), 1.0 / (f_used + (1 - f_used) / 64));
    /* the same from where the CPU time goes: the front thread is the one part that does not
     * grow with the shards (ZeroMQ's I/O threads do: one per shard) */
    double ff = 0.5 * (r2[0].front + r2[1].front);
    printf("serial fraction by CPU time (--shards 2): the front thread's share f = %.3f (ZeroMQ "
           "I/O threads %.3f); predicts S(16) = %.1f, S(64) = %.1f, at most %.1f\n",
           ff, 0.5 * (r2[0].io + r2[1].io), 1.0 / (ff + (1 - ff) / 16), 1.0 / (ff + (1 - ff) / 64),
           ff > 0 ? 1.0 / ff : INFINITY);
    return 0;
}
