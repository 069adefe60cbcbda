/* A stage whose derivative is not finite is a step too long, not a failed simulation: the
 * integrator starts the interval again with a shorter first step. The case: a serial arm in
 * torque mode without gravity, quiet for three control steps (the step size grows to the
 * control step), then 1 N m on joint 1 over control steps of 0.2 s and more. Each run must
 * succeed and (no friction, stops out of reach) its kinetic energy must equal the work of the
 * torque, tau (theta1 - theta1(0)); the state must match the same run on a 10 ms grid. */
#include "rs_test.h"
#include "world_with.h"

/* Kinetic energy of the preset's uniform rods (a1 0.15, a2 0.10, m1 0.2, m2 0.1). */
static double kinetic(const double *x)
{
    const double a1 = 0.15, a2 = 0.10, m1 = 0.2, m2 = 0.1;
    double lc1 = a1 / 2, lc2 = a2 / 2, I1 = m1 * a1 * a1 / 12, I2 = m2 * a2 * a2 / 12;
    double M00 = I1 + I2 + m1 * lc1 * lc1 + m2 * (a1 * a1 + lc2 * lc2 + 2 * a1 * lc2 * cos(x[1]));
    double M01 = I2 + m2 * (lc2 * lc2 + a1 * lc2 * cos(x[1])), M11 = I2 + m2 * lc2 * lc2;
    return 0.5 * (M00 * x[2] * x[2] + 2 * M01 * x[2] * x[3] + M11 * x[3] * x[3]);
}

/* The arm after `quiet` control steps of dt without torque and `pushed` with 1 N m on joint 1;
 * 0, or the failing step's code (message in st). */
static int run(double dt, int quiet, int pushed, double x[4], rs_status_t *st)
{
    double torque_mode[2] = {0, 0}, g = 0, lo[2] = {-1e3, -1e3}, hi[2] = {1e3, 1e3};
    rs_param_t p[] = {{"arm", "actuator_mode", torque_mode, 2},
                      {"arm", "gravity", &g, 1},
                      {"arm", "theta_min", lo, 2},
                      {"arm", "theta_max", hi, 2},
                      {"", "control_dt", &dt, 1}};
    rs_world_t *w = rs_world_new("serial_arm", p, sizeof p / sizeof p[0], 1, st);
    if (!w)
        return -1;
    int rc = rs_step(w->model, w->data, (uint64_t)quiet, st);
    double u[2] = {1.0, 0.0};
    if (rc == 0)
        rc = rs_set_commands(w->model, w->data, 0, u, 2, st);
    if (rc == 0)
        rc = rs_step(w->model, w->data, (uint64_t)pushed, st);
    memcpy(x, w->data->x, 4 * sizeof(double));
    rs_world_destroy(&w);
    return rc;
}

int main(void)
{
    static const double dts[] = {0.2, 0.3, 0.5, 1.0};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        double dt = dts[i], x[4], fine[4];
        rs_status_t st;
        int rc = run(dt, 3, 1, x, &st);
        CHECK(rc == 0, "control_dt %g: a 1 N m step after quiet ones: rc %d %s", dt, rc,
              rc ? st.message : "");
        if (rc)
            continue;
        double work = 1.0 * x[0]; /* theta1(0) = 0 and the arm at rest until the torque */
        CHECK_REL(kinetic(x), work, 1e-6, 1e-9);
        int k = (int)lround(dt / 0.01);
        rc = run(0.01, 3 * k, k, fine, &st);
        CHECK(rc == 0, "the same on a 10 ms grid: %s", rc ? st.message : "");
        for (int j = 0; rc == 0 && j < 4; j++)
            CHECK_REL(x[j], fine[j], 1e-5, 1e-6);
    }
    return rs_test_done("test_integrator_recovery");
}
