/* What one environment step costs in-process: a registered task's world (FingerPush-v1 by
 * default) stepped with uniform random actions in [-1, 1], reset at each episode's end, as a
 * vector environment's worker steps it (rs_world_task_step: one control step, the reward, the
 * observation, the digest). The figure EnvPool's own step is held against (docs/performance.md).
 *
 *   bench_core_env_step [TASK [STEPS [ROUNDS]]]   (FingerPush-v1, 20000, 5) */
#include "rs_task.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clock_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    const char *task = argc > 1 ? argv[1] : "FingerPush-v1";
    long steps = argc > 2 ? atol(argv[2]) : 20000;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    rs_status_t st;
    rs_world_t *w = rs_world_new_task(task, NULL, NULL, 0, 1, &st);
    if (!w || steps < 1 || rounds < 1) {
        fprintf(stderr, "bench_core_env_step: %s\n", w ? "STEPS and ROUNDS must be >= 1" : st.message);
        return 2;
    }
    size_t na = (size_t)w->task->nact;
    double action[16] = {0};
    uint64_t r = 88172645463325252ULL, seed = 1;
    long episodes = 0;
    double best = 1e300, sum_cpu = 0;
    rs_stats_t s0, s1, sum = {0};
    for (int round = 0; round < rounds; round++) {
        double w0 = clock_of(CLOCK_MONOTONIC), c0 = clock_of(CLOCK_PROCESS_CPUTIME_ID);
        for (long i = 0; i < steps; i++) {
            for (size_t a = 0; a < na && a < 16; a++) {
                r ^= r << 13, r ^= r >> 7, r ^= r << 17;
                action[a] = -1.0 + 2.0 * (double)(r >> 11) * 0x1.0p-53;
            }
            rs_get_stats(w->data, &s0);
            int failed = rs_world_task_step(w, action, na, 1, &st) < 0;
            rs_get_stats(w->data, &s1);
            sum.internal_steps += s1.internal_steps - s0.internal_steps;
            sum.rhs_evals += s1.rhs_evals - s0.rhs_evals;
            sum.root_evals += s1.root_evals - s0.root_evals;
            sum.events += s1.events - s0.events;
            if (failed || w->data->task[RS_TASK_TERMINATED] != 0.0 ||
                w->data->task[RS_TASK_TRUNCATED] != 0.0) {
                if (rs_world_reset(w, ++seed, &st) < 0) {
                    fprintf(stderr, "bench_core_env_step: reset: %s\n", st.message);
                    return 1;
                }
                episodes++;
            }
        }
        double wall = clock_of(CLOCK_MONOTONIC) - w0, cpu = clock_of(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (wall < best)
            best = wall;
        sum_cpu += cpu;
    }
    printf("%s: %ld steps x %d rounds, %ld episodes: %.3f us per step (best round, wall), "
           "%.3f us (mean CPU)\n",
           task, steps, rounds, episodes, 1e6 * best / (double)steps,
           1e6 * sum_cpu / ((double)steps * rounds));
    double n = (double)steps * rounds;
    printf("  per step: %.1f integrator steps, %.1f right-hand sides, %.1f guard evaluations, "
           "%.2f events\n",
           (double)sum.internal_steps / n, (double)sum.rhs_evals / n, (double)sum.root_evals / n,
           (double)sum.events / n);
    rs_world_destroy(&w);
    return 0;
}
