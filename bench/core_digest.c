/* What the state digest (digest.c) costs a finger control step: the same agent loop (a new
 * force every step, episodes of 500 steps) with the digest folded in after every control step
 * (A) and without it (B: the data's digest_later flag set, so control_step leaves it out),
 * in ABAB blocks so drift in the machine's speed falls on both alike, timed in process CPU
 * time. Also times rs_digest_step by itself.
 *
 *   bench_core_digest [blocks, default 10] [steps per block, default 20000] [with|without]
 * (with or without: every block so, to profile one side alone, e.g. under cachegrind) */
#include "bench_util.h"
#include "bench_world.h"
#include "rs_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EPISODE 500

/* Step `steps` control steps of the finger agent loop; returns CPU seconds. */
static double block(rs_world_t *w, int with_digest, long steps)
{
    rs_status_t st;
    rs_data_t *d = w->data;
    double t0 = cpu_now();
    for (long k = 0; k < steps; k++) {
        if (k % EPISODE == 0)
            rs_reset(w->model, d, (uint64_t)k, &st);
        double f = 3.0 * uniform01();
        rs_set_commands(w->model, d, 0, &f, 1, &st);
        d->digest_later = !with_digest;
        if (rs_step(w->model, d, 1, &st) != 0) {
            fprintf(stderr, "step failed: %s\n", st.message);
            exit(1);
        }
    }
    d->digest_later = 0;
    return cpu_now() - t0;
}

int main(int argc, char **argv)
{
    int blocks = argc > 1 ? atoi(argv[1]) : 10;
    long steps = argc > 2 ? atol(argv[2]) : 20000;
    const char *only = argc > 3 ? argv[3] : NULL;
    rs_world_t *w = world_or_exit("finger", NULL, 0, 1);
    if (only) {
        int with = strcmp(only, "with") == 0;
        double t = 0;
        for (int b = 0; b < blocks; b++)
            t += block(w, with, steps);
        printf("finger control step %s the digest: %.3f us/step\n", with ? "with" : "without",
               t / ((double)blocks * (double)steps) * 1e6);
        rs_world_destroy(&w);
        return 0;
    }
    block(w, 1, steps / 4); /* warm up */
    double ta = 0, tb = 0;
    for (int b = 0; b < blocks; b++) {
        ta += block(w, 1, steps);
        tb += block(w, 0, steps);
    }
    double n = (double)blocks * (double)steps;
    double with = ta / n * 1e6, without = tb / n * 1e6;
    /* rs_digest_step alone, on the finger's data after a step */
    long reps = 200000;
    double t0 = cpu_now();
    for (long k = 0; k < reps; k++)
        rs_digest_step(w->model, w->data);
    double alone = (cpu_now() - t0) / (double)reps * 1e6;
    char hex[2 * RS_DIGEST_BYTES + 1];
    rs_digest_hex(w->data, hex);
    printf("finger control step, %d ABAB blocks of %ld steps, process CPU time:\n", blocks, steps);
    printf("  with the digest    %.3f us/step\n", with);
    printf("  without            %.3f us/step\n", without);
    printf("  difference         %+.3f us/step (%+.2f%% of a step without)\n", with - without,
           100.0 * (with - without) / without);
    printf("  rs_digest_step     %.3f us/call alone (%.2f%% of a step without)\n", alone,
           100.0 * alone / without);
    printf("  (digest now %.16s...)\n", hex);
    rs_world_destroy(&w);
    return 0;
}
