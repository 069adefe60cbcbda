/* In-process control steps per second of the two planar arms, one core, 10 ms steps,
 * default tolerances (rtol 1e-8, atol 1e-10) and method (erk_order 0: the serial arm's Verner
 * 8(7), the parallel arm's Dormand-Prince 5(4); earlier, ERKStep's 4(3) table for both),
 * episodes of 500 steps with a reset between them:
 *
 *   serial_arm   "targets"   the preset (vertical, PID): a new random Cartesian target (random
 *                            elbow) through SetTarget every 100 steps;
 *                "friction"  the same with joint friction mu_D = 0.02 N m, mu_V = 0.01 N m s
 *                            (stick-slip events);
 *                "torques"   torque mode, a new random torque within the caps (1 N m) every
 *                            step, as an RL agent sends them: the light arm spins at up to
 *                            hundreds of rad/s, which costs the integrator many small steps;
 *                "torques/10" the same within a tenth of the caps;
 *   parallel_arm "targets"   the preset (PID servos): a random reachable target every 100 steps;
 *                "torques"   torque mode, random torques every step (servos hit their stops).
 *
 *   bench_core_arms [seconds per scenario, default 2] */
#include "bench_util.h"
#include "bench_world.h"
#include "rs_core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EPISODE 500

enum { TARGETS, TORQUES, TORQUES_TENTH };

/* A random reachable target for entity e: (x, y[, elbow]). */
static int random_target(const rs_world_t *w, int e, int serial, double *target)
{
    for (;;) {
        if (serial) {
            double r = 0.06 + 0.18 * uniform01(), phi = 2 * M_PI * uniform01();
            target[0] = r * cos(phi);
            target[1] = r * sin(phi);
            target[2] = uniform01() < 0.5 ? 1.0 : -1.0;
            return 3;
        }
        target[0] = -0.1 + 0.2 * uniform01();
        target[1] = 0.07 + 0.08 * uniform01();
        if (rs_reachable(w->model, e, target[0], target[1]) == 1)
            return 2;
    }
}

static double scenario(const char *preset, const char *entity, const char *name, int kind,
                       const rs_param_t *params, size_t nparams, double seconds)
{
    rs_status_t st;
    rs_world_t *w = world_or_exit(preset, params, nparams, 1);
    int e = rs_model_entity(w->model, entity), serial = !strcmp(preset, "serial_arm");
    const double *s = w->data->sensors + w->model->ent[e].s_off;
    double cap[2] = {rs_model_param(w->model, e, "tau_max", 0),
                     rs_model_param(w->model, e, "tau_max", 1)};
    uint64_t steps = 0, events = 0;
    double top_rate = 0; /* the fastest joint rate seen at a step's end */
    rs_stats_t s0, s1;
    rs_get_stats(w->data, &s0);
    double sink = 0, t0 = now(), t1 = t0;
    while (t1 - t0 < seconds) {
        rs_reset(w->model, w->data, steps, &st);
        for (int k = 0; k < EPISODE; k++) {
            if (kind == TARGETS && k % 100 == 0) {
                double target[3];
                int n = random_target(w, e, serial, target);
                if (rs_set_target(w->model, w->data, e, target, (size_t)n, &st) != 0) {
                    fprintf(stderr, "%s %s: target refused: %s\n", preset, name, st.message);
                    exit(1);
                }
            } else if (kind != TARGETS) {
                double f = kind == TORQUES ? 1.0 : 0.1;
                double u[2] = {f * cap[0] * (2 * uniform01() - 1),
                               f * cap[1] * (2 * uniform01() - 1)};
                rs_set_commands(w->model, w->data, e, u, 2, &st);
            }
            if (rs_step(w->model, w->data, 1, &st) != 0) {
                fprintf(stderr, "%s %s: step failed: %s\n", preset, name, st.message);
                exit(1);
            }
            events += (uint64_t)w->data->nevents;
            const double *x = w->data->x + w->model->ent[e].x_off;
            top_rate = fmax(top_rate, fmax(fabs(x[2]), fabs(x[3])));
            sink += s[0] + s[1]; /* read the observation, as an agent would */
        }
        steps += EPISODE;
        t1 = now();
    }
    rs_get_stats(w->data, &s1);
    double rate = (double)steps / (t1 - t0);
    printf("%-12s %-10s %8.0f steps/s  (%llu steps in %.2f s, %.2f us/step, %llu events; "
           "%.2f internal steps, %.1f rhs evals, %.1f guard evals per control step; joint "
           "rates up to %.0f rad/s)%s\n",
           preset, name, rate, (unsigned long long)steps, t1 - t0, 1e6 / rate,
           (unsigned long long)events,
           (double)(s1.internal_steps - s0.internal_steps) / (double)steps,
           (double)(s1.rhs_evals - s0.rhs_evals) / (double)steps,
           (double)(s1.root_evals - s0.root_evals) / (double)steps, top_rate,
           sink == 42 ? " " : "");
    rs_world_destroy(&w);
    return rate;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    printf("planar arms, control_dt 10 ms, default tolerances (rtol 1e-8, atol 1e-10), one "
           "core, episodes of %d steps\n",
           EPISODE);
    double muD[] = {0.02, 0.02}, muV[] = {0.01, 0.01}, torque[] = {0, 0};
    rs_param_t friction[] = {{"arm", "mu_D", muD, 2}, {"arm", "mu_V", muV, 2}};
    rs_param_t serial_torque[] = {{"arm", "actuator_mode", torque, 2}};
    rs_param_t parallel_torque[] = {{"delta", "actuator_mode", torque, 2}};
    scenario("serial_arm", "arm", "targets", TARGETS, NULL, 0, seconds);
    scenario("serial_arm", "arm", "friction", TARGETS, friction, 2, seconds);
    scenario("serial_arm", "arm", "torques", TORQUES, serial_torque, 1, seconds);
    scenario("serial_arm", "arm", "torques/10", TORQUES_TENTH, serial_torque, 1, seconds);
    scenario("parallel_arm", "delta", "targets", TARGETS, NULL, 0, seconds);
    scenario("parallel_arm", "delta", "torques", TORQUES, parallel_torque, 1, seconds);
    scenario("parallel_arm", "delta", "torques/10", TORQUES_TENTH, parallel_torque, 1, seconds);
    return 0;
}
