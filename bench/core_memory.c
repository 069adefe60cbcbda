/* Memory and CPU time of finger worlds, in-process:
 *   - RSS per world: 10,000 finger worlds created and stepped once, resident set growth divided
 *     by 10,000
 *     (and the bytes malloc hands out per world, mallinfo2, which counts untouched pages too);
 *   - memory returned on destroy: the resident set after destroying them all (and after
 *     malloc_trim, which hands glibc's free pages back) against the one before creating them;
 *   - CPU time of one finger control step, hot (one world stepped again and again) and with
 *     1024 worlds stepped in turn (each world's step starts cold), a new force every step.
 * CPU time is the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID), printed beside wall time.
 *
 *   bench_core_memory [seconds per timing, default 1] [worlds, default 10000] */
#include "bench_world.h"
#include "rs_core.h"

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Resident set size in bytes (/proc/self/statm, second field, in pages). */
static double rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2) {
        fprintf(stderr, "bench_core_memory: cannot read /proc/self/statm\n");
        exit(1);
    }
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

static rs_world_t *finger(uint64_t seed)
{
    rs_world_t *w = world_or_exit("finger", NULL, 0, seed);
    return w;
}

/* Step n worlds in turn for about `seconds`; prints and returns CPU us per world-step. */
static double step_worlds(rs_world_t **w, int n, double seconds, const char *label)
{
    rs_status_t st;
    long steps = 0, round = 0;
    double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC), t;
    do {
        for (int i = 0; i < n; i++) {
            double f = 0.5 + 0.5 * sin(0.1 * (double)round + i);
            if (rs_set_commands(w[i]->model, w[i]->data, 0, &f, 1, &st) != 0 ||
                rs_step(w[i]->model, w[i]->data, 1, &st) != 0) {
                fprintf(stderr, "bench_core_memory: %s\n", st.message);
                exit(1);
            }
        }
        steps += n;
        round++;
        t = clock_s(CLOCK_MONOTONIC) - t0;
    } while (t < seconds);
    double cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    double us = 1e6 * cpu / (double)steps;
    printf("finger control step, %-22s %.3f us CPU (%.3f us wall) per world-step, %ld steps\n",
           label, us, 1e6 * t / (double)steps, steps);
    return us;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    int nworlds = argc > 2 ? atoi(argv[2]) : 10000;
    if (nworlds < 1024)
        nworlds = 1024;
    rs_world_t **w = calloc((size_t)nworlds, sizeof *w);
    rs_world_t *warm = finger(1); /* the allocator's and the library's first-use costs */
    rs_world_destroy(&warm);
    malloc_trim(0);
    double rss0 = rss_bytes(), heap0 = (double)mallinfo2().uordblks;
    /* worlds in use: each has made one control step (ARKODE makes some of its tables at the
     * first step, which a world created and never stepped has not paid yet) */
    for (int i = 0; i < nworlds; i++) {
        rs_status_t st;
        w[i] = finger((uint64_t)i);
        if (rs_step(w[i]->model, w[i]->data, 1, &st) != 0) {
            fprintf(stderr, "bench_core_memory: %s\n", st.message);
            exit(1);
        }
    }
    double rss1 = rss_bytes(), heap1 = (double)mallinfo2().uordblks;
    printf("finger world: %.0f bytes allocated per world (malloc'd bytes in use)\n",
           (heap1 - heap0) / nworlds);
    printf("finger world: %.0f bytes RSS per world (%d worlds, RSS %.1f MB -> %.1f MB), "
           "goal <= 8192: %s\n",
           (rss1 - rss0) / nworlds, nworlds, rss0 / 1e6, rss1 / 1e6,
           (rss1 - rss0) / nworlds <= 8192 ? "met" : "NOT met");

    double hot = step_worlds(w, 1, seconds, "hot (1 world):");
    double cold = step_worlds(w, 1024, seconds, "1024 worlds in turn:");
    printf("goals: hot <= 0.7 us %s, 1024 in turn <= 1.0 us %s\n", hot <= 0.7 ? "met" : "NOT met",
           cold <= 1.0 ? "met" : "NOT met");

    double rss2 = rss_bytes();
    for (int i = 0; i < nworlds; i++)
        rs_world_destroy(&w[i]);
    free(w);
    double rss3 = rss_bytes();
    malloc_trim(0);
    double rss4 = rss_bytes();
    printf("after destroying all: RSS %.1f MB -> %.1f MB (%.1f MB after malloc_trim; "
           "%.1f MB before creating them): %s\n",
           rss2 / 1e6, rss3 / 1e6, rss4 / 1e6, rss0 / 1e6,
           rss4 - rss0 < 0.05 * (rss1 - rss0) ? "returned" : "NOT returned");
    return 0;
}
