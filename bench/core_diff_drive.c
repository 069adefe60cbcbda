/* In-process control steps per second for the diff-drive world (10 ms steps, one core), with
 * new wheel speeds every step as an agent sends them, and with speeds held. */
#include "bench_util.h"
#include "bench_world.h"
#include "rs_core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double run(rs_world_t *w, long steps, int vary)
{
    rs_status_t st;
    double u[2] = {3.0, 2.5};
    rs_set_commands(w->model, w->data, 0, u, 2, &st);
    double t0 = now();
    for (long k = 0; k < steps; k++) {
        if (vary) {
            u[0] = 3.0 + 0.5 * sin(0.01 * (double)k);
            rs_set_commands(w->model, w->data, 0, u, 2, &st);
        }
        if (rs_step(w->model, w->data, 1, &st) < 0) {
            fprintf(stderr, "step failed: %s\n", st.message);
            exit(1);
        }
    }
    return (double)steps / (now() - t0);
}

int main(int argc, char **argv)
{
    long steps = argc > 1 ? atol(argv[1]) : 200000;
    rs_world_t *w = world_or_exit("diff_drive", NULL, 0, 0);
    run(w, steps / 10, 1); /* warm up */
    double agent = run(w, steps, 1), held = run(w, steps, 0);
    rs_stats_t s;
    rs_get_stats(w->data, &s);
    printf("diff_drive in-process, 10 ms control steps, %ld steps each:\n", steps);
    printf("  new wheel speeds every step: %10.0f steps/s\n", agent);
    printf("  wheel speeds held:           %10.0f steps/s\n", held);
    printf("  integrator: %.2f internal steps, %.2f rhs evaluations per control step\n",
           (double)s.internal_steps / (double)w->data->step_count,
           (double)s.rhs_evals / (double)w->data->step_count);
    rs_world_destroy(&w);
    return 0;
}
