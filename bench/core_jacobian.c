/* The cost of a step's Jacobian (rs_sensitivity.h): one Step of N control steps with the full
 * Jacobian (state, commands) against the plain Step and against finite differences, which take
 * n + m + 1 plain Steps (one-sided; central ones twice that). The Jacobian twice: with the
 * robots' own right-hand-side Jacobians (rs_robot_t.jacobian) and with central differences of
 * their derivs instead (rs_sens_use_differences). The world's own tolerances (defaults). Rounds
 * interleaved (plain, Jacobian, differenced, plain, ...), CPU time beside wall time.
 *
 *   bench_core_jacobian [rounds, default 5] */
#include "bench_world.h"
#include "rs_core.h"
#include "rs_sensitivity.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clock_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct scenario {
    const char *name, *preset;
    rs_param_t p[4];
    size_t np;
    double u[2];
    uint64_t steps;
} scenario_t;

static const double GAP[] = {0.004}, V1[] = {1.0}, Y0[] = {0.6}, VY0[] = {-1.0}, TH0[] = {0.3};

/* reps Steps from the same start, without the Jacobian (jac 0), with it (1), with it by
 * differences of derivs (2): seconds (wall, CPU) per Step */
static void run(const rs_model_t *m, const rs_data_t *start, rs_data_t *d, const double *u,
                uint64_t steps, int jac, int reps, double *wall, double *cpu)
{
    rs_status_t st;
    double w0 = clock_of(CLOCK_MONOTONIC), c0 = clock_of(CLOCK_PROCESS_CPUTIME_ID);
    for (int r = 0; r < reps; r++) {
        if (rs_data_copy(m, d, start, &st) < 0 || rs_set_all_commands(m, d, u, &st) < 0) {
            fprintf(stderr, "%s\n", st.message);
            exit(1);
        }
        rs_sens_t *s = NULL;
        if (jac && !(s = rs_sens_new(m, d, NULL, 0, &st))) {
            fprintf(stderr, "%s\n", st.message);
            exit(1);
        }
        if (s)
            rs_sens_use_differences(s, jac == 2);
        d->hooks = s ? rs_sens_hooks(s) : NULL;
        if (rs_step(m, d, steps, &st) < 0) {
            fprintf(stderr, "%s\n", st.message);
            exit(1);
        }
        d->hooks = NULL;
        rs_sens_destroy(&s);
    }
    *wall += (clock_of(CLOCK_MONOTONIC) - w0) / reps;
    *cpu += (clock_of(CLOCK_PROCESS_CPUTIME_ID) - c0) / reps;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    char ratio[32];
    scenario_t sc[] = {
        {"finger: touch and bounce", "finger",
         {{"finger", "object_x0", GAP, 1}, {"finger", "finger_v0", V1, 1}}, 2, {0.2}, 10},
        {"finger: free push", "finger", {{"finger", "finger_v0", V1, 1}}, 1, {0.5}, 10},
        {"serial arm: torques", "serial_arm", {{0}}, 0, {0.4, -0.2}, 10},
        {"brick: tilted drop (2 impacts)", "brick_drop",
         {{"brick", "y0", Y0, 1}, {"brick", "vy0", VY0, 1}, {"brick", "theta0", TH0, 1}}, 3,
         {0.0}, 30},
    };
    printf("%-32s %3s %3s %4s %10s %12s %10s  %-26s %s\n", "scenario (Step of N steps)", "n",
           "m", "N", "plain (us)", "Jacobian(us)", "FD n+m+1", "Jacobian / FD (wall, CPU)",
           "differenced RHS Jacobians / FD (CPU)");
    for (size_t k = 0; k < sizeof sc / sizeof sc[0]; k++) {
        rs_status_t st;
        rs_world_t *w = world_or_exit(sc[k].preset, sc[k].p, sc[k].np, 1);
        const rs_model_t *m = w->model;
        rs_data_t *d = rs_data_new(m, 1, &st);
        double pw = 0, pc = 0, jw = 0, jc = 0, dw = 0, dc = 0;
        int reps = 20;
        for (int r = 0; r < rounds; r++) { /* interleaved */
            run(m, w->data, d, sc[k].u, sc[k].steps, 0, reps, &pw, &pc);
            run(m, w->data, d, sc[k].u, sc[k].steps, 1, reps, &jw, &jc);
            run(m, w->data, d, sc[k].u, sc[k].steps, 2, reps, &dw, &dc);
        }
        pw /= rounds, pc /= rounds, jw /= rounds, jc /= rounds, dw /= rounds, dc /= rounds;
        int n = m->nx, nu = m->nu;
        double fdw = (n + nu + 1) * pw, fdc = (n + nu + 1) * pc;
        printf("%-32s %3d %3d %4llu %10.1f %12.1f %10.1f  %-26s %.2f\n", sc[k].name, n, nu,
               (unsigned long long)sc[k].steps, 1e6 * pw, 1e6 * jw, 1e6 * fdw,
               (snprintf(ratio, sizeof ratio, "%.2f, %.2f", jw / fdw, jc / fdc), ratio), dc / fdc);
        rs_data_destroy(&d);
        rs_world_destroy(&w);
    }
    return 0;
}
