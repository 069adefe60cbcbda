/* In-process control steps per second of the 1D finger, one core, 10 ms steps,
 * default tolerances:
 *   - "agent":  a new force every step, as an RL agent sets it (episodes of 500 steps, reset
 *               between them, as a Gymnasium loop would);
 *   - "held":   the same episodes with one force held through each;
 * and the first touch's event-time error against the closed form
 *   t = m / sqrt(F c) acosh(exp(x_o c / m))   (quadratic drag, pushing from rest).
 *
 *   bench_core_finger [seconds per scenario, default 2] [agent|held]   (one scenario only) */
#include "bench_util.h"
#include "bench_world.h"
#include "rs_core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EPISODE 500

/* Step episodes for about `seconds`; returns control steps per second. */
static double scenario(const char *name, int agent, double seconds)
{
    rs_status_t st;
    rs_world_t *w = world_or_exit("finger", NULL, 0, 1);
    uint64_t steps = 0, events = 0;
    rs_stats_t s0, s1;
    rs_get_stats(w->data, &s0);
    double sink = 0, t0 = now(), t1 = t0;
    while (t1 - t0 < seconds) {
        rs_reset(w->model, w->data, steps, &st);
        double f = 0.5 + 2.5 * uniform01();
        for (int k = 0; k < EPISODE; k++) {
            if (agent || k == 0) {
                if (agent)
                    f = 3.0 * uniform01(); /* between pressing and pushing hard */
                rs_set_commands(w->model, w->data, 0, &f, 1, &st);
            }
            if (rs_step(w->model, w->data, 1, &st) != 0) {
                fprintf(stderr, "%s: step failed: %s\n", name, st.message);
                exit(1);
            }
            events += (uint64_t)w->data->nevents;
            sink += w->data->sensors[0]; /* read the observation, as an agent would */
        }
        steps += EPISODE;
        t1 = now();
    }
    rs_get_stats(w->data, &s1);
    double rate = (double)steps / (t1 - t0);
    printf("%-6s %9.0f steps/s  (%llu steps in %.2f s, %.2f us/step, %llu events; "
           "%.2f internal steps, %.1f rhs evals, %.1f guard evals per control step)%s\n",
           name, rate, (unsigned long long)steps, t1 - t0, 1e6 / rate,
           (unsigned long long)events,
           (double)(s1.internal_steps - s0.internal_steps) / (double)steps,
           (double)(s1.rhs_evals - s0.rhs_evals) / (double)steps,
           (double)(s1.root_evals - s0.root_evals) / (double)steps, sink == 42 ? " " : "");
    rs_world_destroy(&w);
    return rate;
}

/* First touch time at default and tight tolerances against the closed form. */
static void touch_error(double rtol, double atol)
{
    rs_status_t st;
    double r[] = {rtol}, a[] = {atol};
    rs_param_t p[] = {{"", "rtol", r, 1}, {"", "atol", a, 1}};
    rs_world_t *w = world_or_exit("finger", p, 2, 1);
    double m = 1.0, c = 1.0, f = 0.7, xo = 1.5;
    double t_closed = m / sqrt(f * c) * acosh(exp(xo * c / m));
    rs_set_commands(w->model, w->data, 0, &f, 1, &st);
    double t_event = NAN;
    for (int k = 0; k < 1000 && isnan(t_event); k++) {
        rs_step(w->model, w->data, 1, &st);
        for (int i = 0; i < w->data->nevents; i++)
            if (!strcmp(rs_event_kind_name(w->model, &w->data->events[i]), "touch")) {
                t_event = w->data->events[i].t;
                break;
            }
    }
    printf("first touch (F = 0.7 N, rtol %g, atol %g): t = %.15f s, closed form %.15f s, "
           "error %.2e s (relative %.2e)\n",
           rtol, atol, t_event, t_closed, t_event - t_closed, fabs(t_event - t_closed) / t_closed);
    rs_world_destroy(&w);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    const char *only = argc > 2 ? argv[2] : ""; /* "agent" or "held": that scenario only */
    printf("finger, control_dt 10 ms, default tolerances (rtol 1e-8, atol 1e-10), one core\n");
    double agent = strcmp(only, "held") ? scenario("agent", 1, seconds) : 0;
    double held = strcmp(only, "agent") ? scenario("held", 0, seconds) : 0;
    if (!only[0]) {
        touch_error(1e-8, 1e-10);
        touch_error(1e-12, 1e-14);
    }
    printf("goal 200000 steps/s: agent %s, held %s\n", agent >= 2e5 ? "met" : "NOT met",
           held >= 2e5 ? "met" : "NOT met");
    return 0;
}
