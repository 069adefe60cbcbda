/* The serial two-link arm against closed forms and conservation laws (the Example Robotic Systems
 * chapter, Klamp't). */
#include "rs_core.h"
#include "rs_robot.h"
#include "rs_test.h"
#include "arm_handle.h"
#include "seeded_rng.h"
#include "robots/arm_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------------------- */

typedef arm_handle_t arm_t; /* sensors: x, y, vx, vy, tau1, tau2, stick1, stick2, limit1,
                              limit2 */

static arm_t make_arm(const rs_param_t *p, size_t n)
{
    return arm_handle("serial_arm", "arm", p, n);
}

/* events of kind `name` in the last rs_step, the last one's time and value in *t, *v */
static int count_events(const arm_t *a, const char *name, double *t, double *v)
{
    int n = 0;
    for (int i = 0; i < a->w->data->nevents; i++) {
        const rs_event_t *ev = &a->w->data->events[i];
        if (ev->entity == a->e && strcmp(rs_event_kind_name(a->w->model, ev), name) == 0) {
            n++;
            if (t)
                *t = ev->t;
            if (v)
                *v = ev->value;
        }
    }
    return n;
}

/* Closed forms for uniform rods (the defaults): lc = a/2, I = m a^2 / 12. */
typedef struct rods {
    double a1, a2, m1, m2, g;
} rods_t;

static const rods_t preset_rods = {0.15, 0.10, 0.2, 0.1, 9.81};

static void mass_matrix(const rods_t *r, double q2, double M[2][2])
{
    double lc1 = r->a1 / 2, lc2 = r->a2 / 2, I1 = r->m1 * r->a1 * r->a1 / 12,
           I2 = r->m2 * r->a2 * r->a2 / 12;
    M[0][0] = I1 + I2 + r->m1 * lc1 * lc1 +
              r->m2 * (r->a1 * r->a1 + lc2 * lc2 + 2 * r->a1 * lc2 * cos(q2));
    M[0][1] = M[1][0] = I2 + r->m2 * (lc2 * lc2 + r->a1 * lc2 * cos(q2));
    M[1][1] = I2 + r->m2 * lc2 * lc2;
}

/* T + V with V = g (m1 yc1 + m2 yc2), the centres of mass' heights */
static double energy(const rods_t *r, const double *x)
{
    double M[2][2];
    mass_matrix(r, x[1], M);
    double T = 0.5 * (M[0][0] * x[2] * x[2] + 2 * M[0][1] * x[2] * x[3] + M[1][1] * x[3] * x[3]);
    double yc1 = r->a1 / 2 * sin(x[0]), yc2 = r->a1 * sin(x[0]) + r->a2 / 2 * sin(x[0] + x[1]);
    return T + r->g * (r->m1 * yc1 + r->m2 * yc2);
}

/* the gravity vector G(q) = dV/dq */
static void gravity_torques(const rods_t *r, const double q[2], double G[2])
{
    double g12 = r->m2 * r->a2 / 2 * r->g * cos(q[0] + q[1]);
    G[0] = (r->m1 * r->a1 / 2 + r->m2 * r->a1) * r->g * cos(q[0]) + g12;
    G[1] = g12;
}

static double tight_rtol[] = {1e-12}, tight_atol[] = {1e-14};

/* ---- kinematics -------------------------------------------------------------------------- */

/* The Example Robotic Systems chapter's worked example: a1 = 15, a2 = 10, (x, y) = (10, 8). */
static void ik_seed_example(void)
{
    double q[2], p[2];
    int rc = serial_ik(15.0, 10.0, 10.0, 8.0, +1, q);
    CHECK(rc == 0, "(10, 8) is reachable");
    /* the printed digits, and the Python session's longer ones */
    CHECK(fabs(q[0] - 1.394087) < 5e-7, "theta1 = %.9f, seed 1.394087", q[0]);
    CHECK(fabs(q[1] - -2.137278) < 5e-7, "theta2 = %.9f, seed -2.137278", q[1]);
    CHECK(fabs(q[0] - 1.39408671883) < 5e-12, "theta1 = %.12f, seed 1.39408671883", q[0]);
    CHECK(fabs(q[1] - -2.13727804092) < 5e-12, "theta2 = %.12f, seed -2.13727804092", q[1]);
    double D = (10.0 * 10 + 8 * 8 - 15 * 15 - 10 * 10) / (2.0 * 15 * 10);
    CHECK(fabs(D - -0.53667) < 5e-6, "D = %.6f, seed -0.53667", D);
    serial_fk(15.0, 10.0, q, p);
    CHECK(fabs(p[0] - 10.0) <= 1e-12 && fabs(p[1] - 8.0) <= 1e-12, "FK(IK) = (%.17g, %.17g)",
          p[0], p[1]);

    /* elbow +1 is "up": the elbow lies counter-clockwise of the base-target line (above it
     * here); elbow -1 is the mirror image, theta2 of the other sign */
    double qd[2];
    serial_ik(15.0, 10.0, 10.0, 8.0, -1, qd);
    CHECK(fabs(qd[1] + q[1]) < 1e-14, "elbow down theta2 = %.17g = -(%.17g)", qd[1], q[1]);
    double up = 10.0 * 15 * sin(q[0]) - 8.0 * 15 * cos(q[0]);
    double down = 10.0 * 15 * sin(qd[0]) - 8.0 * 15 * cos(qd[0]);
    CHECK(up > 0 && down < 0, "elbow up cross %g > 0, elbow down cross %g < 0", up, down);
    serial_fk(15.0, 10.0, qd, p);
    CHECK(fabs(p[0] - 10.0) <= 1e-12 && fabs(p[1] - 8.0) <= 1e-12, "elbow down FK (%g, %g)", p[0],
          p[1]);

    /* the same through the world: SetTarget gives the chapter's angles as PID setpoints */
    double a1[] = {15}, a2[] = {10};
    rs_param_t pp[] = {{"arm", "a1", a1, 1}, {"arm", "a2", a2, 1}};
    arm_t a = make_arm(pp, 2);
    if (!a.w)
        return;
    rs_status_t st;
    double target[3] = {10, 8, 1};
    rc = rs_set_target(a.w->model, a.w->data, a.e, target, 3, &st);
    CHECK_OK(rc, st);
    const double *u = a.w->data->u + a.w->model->ent[a.e].u_off;
    CHECK(u[0] == q[0] && u[1] == q[1], "setpoints (%.12f, %.12f)", u[0], u[1]);
    target[2] = -1;
    rc = rs_set_target(a.w->model, a.w->data, a.e, target, 3, &st);
    CHECK(rc == 0 && u[0] == qd[0] && u[1] == qd[1], "elbow down setpoints (%.12f, %.12f)", u[0],
          u[1]);
    /* (x, y) alone means elbow up */
    rc = rs_set_target(a.w->model, a.w->data, a.e, target, 2, &st);
    CHECK(rc == 0 && u[0] == q[0] && u[1] == q[1], "default elbow: (%.12f, %.12f)", u[0], u[1]);
    rs_world_destroy(&a.w);
}

/* FK(IK(p)) = p over a polar grid of the annulus, both elbows; IK(FK(q)) = q. */
static void ik_grid(void)
{
    const double a1 = 15.0, a2 = 10.0;
    double worst = 0, worst_q = 0;
    int n = 0;
    for (int i = 0; i <= 40; i++) {
        double r = 5.0 + 20.0 * (0.0005 + 0.999 * i / 40.0);
        for (int k = 0; k < 72; k++) {
            double phi = -M_PI + 2 * M_PI * k / 72.0 + 0.01;
            double x = r * cos(phi), y = r * sin(phi);
            for (int elbow = -1; elbow <= 1; elbow += 2) {
                double q[2], p[2];
                if (serial_ik(a1, a2, x, y, elbow, q) != 0) {
                    CHECK(0, "IK refused (%g, %g) at r = %g", x, y, r);
                    continue;
                }
                serial_fk(a1, a2, q, p);
                worst = fmax(worst, fmax(fabs(p[0] - x), fabs(p[1] - y)));
                CHECK(elbow * q[1] <= 0, "elbow %+d gives theta2 = %g", elbow, q[1]);
                n++;
            }
        }
    }
    CHECK(worst <= 1e-12, "FK(IK(p)) - p up to %.3g over %d points", worst, n);

    for (int i = 0; i < 30; i++)
        for (int k = 1; k < 30; k++) {
            double q[2] = {-M_PI + 2 * M_PI * (i + 0.5) / 30, -M_PI + 2 * M_PI * k / 30}, p[2],
                   b[2] = {NAN, NAN};
            if (fabs(q[1]) < 1e-9)
                continue;
            serial_fk(a1, a2, q, p);
            serial_ik(a1, a2, p[0], p[1], q[1] < 0 ? 1 : -1, b);
            double d0 = remainder(b[0] - q[0], 2 * M_PI), d1 = remainder(b[1] - q[1], 2 * M_PI);
            worst_q = fmax(worst_q, fmax(fabs(d0), fabs(d1)));
        }
    CHECK(worst_q <= 1e-10, "IK(FK(q)) - q up to %.3g", worst_q);

    /* outside the annulus: refused */
    double q[2];
    CHECK(serial_ik(a1, a2, 25.001, 0, 1, q) < 0, "beyond a1 + a2");
    CHECK(serial_ik(a1, a2, 0, 4.999, 1, q) < 0, "inside |a1 - a2|");
    CHECK(serial_ik(a1, a2, 25.0, 0, 1, q) == 0 && fabs(q[0]) < 1e-15 && q[1] == 0,
          "the outer rim: stretched (%g, %g)", q[0], q[1]);
}

/* The Jacobian against central differences of FK, and the velocity sensors against it. */
static void jacobian(void)
{
    const double a1 = 0.15, a2 = 0.10, h = 1e-6;
    double worst = 0;
    for (int i = 0; i < 12; i++)
        for (int k = 0; k < 12; k++) {
            double q[2] = {-3.0 + 0.5 * i, -3.0 + 0.52 * k}, Jm[2][2];
            serial_jacobian(a1, a2, q, Jm);
            for (int j = 0; j < 2; j++) {
                double qp[2] = {q[0], q[1]}, qm[2] = {q[0], q[1]}, pp[2], pm[2];
                qp[j] += h;
                qm[j] -= h;
                serial_fk(a1, a2, qp, pp);
                serial_fk(a1, a2, qm, pm);
                for (int r = 0; r < 2; r++)
                    worst = fmax(worst, fabs((pp[r] - pm[r]) / (2 * h) - Jm[r][j]));
            }
        }
    CHECK(worst <= 1e-9, "Jacobian vs central differences: %.3g", worst);

    double q0[] = {0.4, -1.2}, qd0[] = {1.5, -0.7};
    rs_param_t p[] = {{"arm", "theta0", q0, 2}, {"arm", "theta_dot0", qd0, 2}};
    arm_t a = make_arm(p, 2);
    if (!a.w)
        return;
    double Jm[2][2], pos[2];
    serial_jacobian(a1, a2, q0, Jm);
    serial_fk(a1, a2, q0, pos);
    CHECK(a.s[0] == pos[0] && a.s[1] == pos[1], "x, y sensors at reset (%g, %g)", a.s[0], a.s[1]);
    CHECK_REL(a.s[2], Jm[0][0] * qd0[0] + Jm[0][1] * qd0[1], 1e-15, 1e-3);
    CHECK_REL(a.s[3], Jm[1][0] * qd0[0] + Jm[1][1] * qd0[1], 1e-15, 1e-3);
    rs_world_destroy(&a.w);
}

/* ---- dynamics ---------------------------------------------------------------------------- */

/* No torque, friction or damping: T + V conserved to 1e-8 over 10 s, with and without gravity. */
static void energy_conserved(void)
{
    double gravities[2] = {0.0, 9.81};
    for (int gi = 0; gi < 2; gi++) {
        double torque[] = {0, 0}, q0[] = {0.3, 0.8}, qd0[] = {4.0, -6.0};
        double g[] = {gravities[gi]};
        rs_param_t p[] = {{"arm", "actuator_mode", torque, 2}, {"arm", "theta0", q0, 2},
                          {"arm", "theta_dot0", qd0, 2},      {"arm", "gravity", g, 1},
                          {"", "rtol", tight_rtol, 1},        {"", "atol", tight_atol, 1}};
        arm_t a = make_arm(p, 6);
        if (!a.w)
            continue;
        rods_t r = preset_rods;
        r.g = g[0];
        double E0 = energy(&r, a.x), worst = 0;
        double travelled = 0;
        for (int k = 0; k < 1000; k++) {
            double q1 = a.x[0];
            step(&a, 1);
            travelled += fabs(a.x[0] - q1);
            worst = fmax(worst, fabs(energy(&r, a.x) - E0) / fabs(E0));
        }
        CHECK(worst <= 1e-8, "g = %g: energy drift %.3g relative over 10 s (E0 = %g J)", g[0],
              worst, E0);
        CHECK(travelled > 10.0, "g = %g: the arm moved (joint 1 travelled %g rad)", g[0],
              travelled);
        CHECK(a.w->data->nevents == 0 && strcmp(mode(&a), "slip,slip") == 0,
              "no events without friction or stops (mode %s)", mode(&a));
        rs_world_destroy(&a.w);
    }

    /* without gravity the angular momentum about the base, (M qd)_1, is conserved as well */
    double torque[] = {0, 0}, q0[] = {0.3, 0.8}, qd0[] = {4.0, -6.0}, g0[] = {0};
    rs_param_t p[] = {{"arm", "actuator_mode", torque, 2}, {"arm", "theta0", q0, 2},
                      {"arm", "theta_dot0", qd0, 2},      {"arm", "gravity", g0, 1},
                      {"", "rtol", tight_rtol, 1},        {"", "atol", tight_atol, 1}};
    arm_t a = make_arm(p, 6);
    if (!a.w)
        return;
    double M[2][2];
    mass_matrix(&preset_rods, a.x[1], M);
    double p0 = M[0][0] * a.x[2] + M[0][1] * a.x[3];
    step(&a, 1000);
    mass_matrix(&preset_rods, a.x[1], M);
    CHECK_REL(M[0][0] * a.x[2] + M[0][1] * a.x[3], p0, 1e-8, 1e-3);
    rs_world_destroy(&a.w);
}

/* PID reaches a setpoint against gravity and holds it; the integral settles at G(qD) / kI. */
static void pid_setpoint(void)
{
    double kP[] = {4, 4}, kI[] = {4, 4}, kD[] = {0.2, 0.1};
    rs_param_t p[] = {{"arm", "kP", kP, 2}, {"arm", "kI", kI, 2}, {"arm", "kD", kD, 2}};
    arm_t a = make_arm(p, 3);
    if (!a.w)
        return;
    double qD[2] = {0.5, -0.3};
    command(&a, qD[0], qD[1]);
    step(&a, 4000);
    CHECK(fabs(a.x[0] - qD[0]) < 1e-7 && fabs(a.x[1] - qD[1]) < 1e-7, "reached (%.9f, %.9f)",
          a.x[0], a.x[1]);
    double G[2];
    gravity_torques(&preset_rods, qD, G);
    CHECK_REL(a.x[4], G[0] / kI[0], 1e-6, 1e-3);
    CHECK_REL(a.x[5], G[1] / kI[1], 1e-6, 1e-3);
    CHECK_REL(a.s[4], G[0], 1e-6, 1e-3);
    CHECK_REL(a.s[5], G[1], 1e-6, 1e-3);
    double worst = 0;
    for (int k = 0; k < 500; k++) {
        step(&a, 1);
        worst = fmax(worst, fmax(fabs(a.x[0] - qD[0]), fabs(a.x[1] - qD[1])));
    }
    CHECK(worst < 1e-7, "held within %.3g rad for 5 s", worst);
    rs_world_destroy(&a.w);
}

/* Torque mode: the closed-form gravity torques hold a pose. */
static void gravity_compensation(void)
{
    double torque[] = {0, 0}, q0[] = {0.7, -1.1};
    rs_param_t p[] = {{"arm", "actuator_mode", torque, 2}, {"arm", "theta0", q0, 2}};
    arm_t a = make_arm(p, 2);
    if (!a.w)
        return;
    double G[2];
    gravity_torques(&preset_rods, q0, G);
    command(&a, G[0], G[1]);
    step(&a, 1000);
    CHECK(fabs(a.x[0] - q0[0]) < 1e-9 && fabs(a.x[1] - q0[1]) < 1e-9,
          "pose held: drift (%.3g, %.3g) rad after 10 s", a.x[0] - q0[0], a.x[1] - q0[1]);
    CHECK(a.s[4] == G[0] && a.s[5] == G[1], "applied torques are the commands");

    /* and without them the arm falls */
    command(&a, 0, 0);
    step(&a, 20);
    CHECK(a.x[0] < q0[0] - 0.01, "uncompensated, joint 1 falls: %g", a.x[0]);
    rs_world_destroy(&a.w);
}

/* New link data by SetParams (a new model, copy on write) take effect in the dynamics: the
 * constants the arm derives from them (rs_robot_t.compile) are derived again. The closed-form
 * gravity torques of the new links hold the pose; those of the preset's links do not. */
static void params_recompiled(void)
{
    double torque[] = {0, 0}, q0[] = {0.7, -1.1};
    rs_param_t p[] = {{"arm", "actuator_mode", torque, 2}, {"arm", "theta0", q0, 2}};
    arm_t a = make_arm(p, 2);
    if (!a.w)
        return;
    const rods_t heavy = {0.2, 0.12, 0.5, 0.3, 9.81};
    double a1 = heavy.a1, a2 = heavy.a2, m1 = heavy.m1, m2 = heavy.m2;
    rs_param_t np[] = {{"arm", "a1", &a1, 1}, {"arm", "a2", &a2, 1},
                       {"arm", "m1", &m1, 1}, {"arm", "m2", &m2, 1}};
    rs_status_t st;
    const rs_model_t *before = a.w->model;
    CHECK(rs_world_set_params(a.w, np, 4, &st) == 0, "%s", st.message);
    CHECK(a.w->model != before, "new parameters: a new model");
    double G[2], G_old[2];
    gravity_torques(&heavy, q0, G);
    gravity_torques(&preset_rods, q0, G_old);
    command(&a, G[0], G[1]);
    step(&a, 100);
    CHECK(fabs(a.x[0] - q0[0]) < 1e-9 && fabs(a.x[1] - q0[1]) < 1e-9,
          "the new links' gravity torques hold the pose: drift (%.3g, %.3g) rad", a.x[0] - q0[0],
          a.x[1] - q0[1]);
    command(&a, G_old[0], G_old[1]);
    step(&a, 10);
    CHECK(a.x[0] < q0[0] - 1e-3, "the preset's (lighter) torques do not: theta1 %.6f", a.x[0]);
    rs_world_destroy(&a.w);
}

/* Friction, Klamp't's simulation documentation: joint 1 slides to rest against mu_D + mu_V |qd|
 * (joint 2 stuck by a large mu_D, so the arm turns as one rigid body of inertia M11(t2)), sticks
 * with a stick event and no drift, holds a sub-threshold torque, and slips when the torque exceeds
 * mu_D. */
static void friction(void)
{
    double torque[] = {0, 0}, muD[] = {0.02, 10.0}, muV[] = {0.01, 0}, g0[] = {0};
    double q0[] = {0.0, 0.5}, qd0[] = {3.0, 0.0};
    rs_param_t p[] = {{"arm", "actuator_mode", torque, 2}, {"arm", "mu_D", muD, 2},
                      {"arm", "mu_V", muV, 2},            {"arm", "gravity", g0, 1},
                      {"arm", "theta0", q0, 2},           {"arm", "theta_dot0", qd0, 2},
                      {"", "rtol", tight_rtol, 1},        {"", "atol", tight_atol, 1}};
    arm_t a = make_arm(p, 8);
    if (!a.w)
        return;
    double M[2][2];
    mass_matrix(&preset_rods, q0[1], M);
    double I = M[0][0], c = muV[0], F = muD[0], w0 = qd0[0];
    /* I qdd = -F - c qd: qd = (w0 + F/c) e^{-c t / I} - F/c, at rest at t* */
    double tstar = I / c * log(1 + c * w0 / F);
    double qstar = q0[0] + (w0 + F / c) * I / c * (1 - exp(-c * tstar / I)) - F / c * tstar;

    step(&a, 1);
    double t_ev = NAN, v_ev = NAN;
    CHECK(count_events(&a, "stick", &t_ev, &v_ev) == 1 && t_ev == 0 && v_ev == 2,
          "joint 2 sticks at t = 0 (t %g, joint %g)", t_ev, v_ev);
    CHECK(strcmp(mode(&a), "slip,stick") == 0, "mode %s", mode(&a));
    int sticks = 0;
    double t_stick = NAN, q_at = NAN;
    for (int k = 0; k < 300 && sticks == 0; k++) {
        step(&a, 1);
        sticks = count_events(&a, "stick", &t_stick, &v_ev);
    }
    CHECK(sticks == 1 && v_ev == 1, "joint 1 stick event (%d, joint %g)", sticks, v_ev);
    CHECK(fabs(t_stick - tstar) < 1e-8, "at rest at t = %.12g, closed form %.12g", t_stick, tstar);
    CHECK(fabs(a.x[0] - qstar) < 1e-8, "at theta1 = %.12g, closed form %.12g", a.x[0], qstar);
    CHECK(a.x[2] == 0 && a.s[6] == 1 && a.s[7] == 1, "stuck: rate %g, sensors %g %g", a.x[2],
          a.s[6], a.s[7]);
    CHECK(strcmp(mode(&a), "stick,stick") == 0, "mode %s", mode(&a));
    q_at = a.x[0];

    /* no drift, then a sub-threshold torque: still exactly where it stuck */
    step(&a, 200);
    command(&a, 0.9 * F, 0);
    step(&a, 200);
    CHECK(a.x[0] == q_at && a.x[1] == q0[1] && a.x[2] == 0, "no drift: %.17g vs %.17g", a.x[0],
          q_at);
    CHECK(a.w->data->nevents == 0, "no events while stuck (%d)", a.w->data->nevents);

    /* above mu_D: slips at once, I qdd = (tau - F) - c qd */
    double t0 = a.w->data->t, tau = 1.1 * F;
    command(&a, tau, 0);
    step(&a, 1);
    CHECK(count_events(&a, "slip", &t_ev, &v_ev) == 1 && t_ev == t0 && v_ev == 1,
          "slip event at the command (t %g, joint %g)", t_ev, v_ev);
    step(&a, 99);
    double T = a.w->data->t - t0, Fn = tau - F;
    double expect = q_at + Fn / c * (T - I / c * (1 - exp(-c * T / I)));
    CHECK(fabs(a.x[0] - expect) < 1e-9, "sliding: theta1 %.12g, closed form %.12g", a.x[0],
          expect);
    rs_world_destroy(&a.w);
}

/* A vertical arm at rest with friction above its gravity torques stays put (stick events at
 * the start, nothing moves at all). */
static void friction_holds_against_gravity(void)
{
    double torque[] = {0, 0}, muD[] = {0.5, 0.1}, q0[] = {0.3, 0.2};
    rs_param_t p[] = {{"arm", "actuator_mode", torque, 2},
                      {"arm", "mu_D", muD, 2},
                      {"arm", "theta0", q0, 2}};
    arm_t a = make_arm(p, 3);
    if (!a.w)
        return;
    double G[2];
    gravity_torques(&preset_rods, q0, G);
    CHECK(fabs(G[0]) < muD[0] && fabs(G[1]) < muD[1], "sub-threshold: G = (%g, %g)", G[0], G[1]);
    step(&a, 1);
    CHECK(count_events(&a, "stick", NULL, NULL) == 2, "two stick events at t = 0");
    step(&a, 500);
    CHECK(a.x[0] == q0[0] && a.x[1] == q0[1], "no drift: (%.17g, %.17g)", a.x[0], a.x[1]);
    /* a push above the threshold on joint 2 (which breaks, and joint 1 with it or not) moves */
    command(&a, 0, G[1] + 0.15);
    step(&a, 10);
    CHECK(a.x[1] > q0[1], "joint 2 slips up: %g", a.x[1]);
    rs_world_destroy(&a.w);
}

/* Coupling: joint 2 stuck while joint 1 spins up under a constant torque (g = 0, joint 1
 * frictionless): the arm turns as one body, qd1 = tau1 t / M11, and the friction torque holding
 * joint 2 is lam2 = M21 qdd1 + h qd1^2 (reaction to joint 1's acceleration plus the centrifugal
 * term, h = m2 a1 lc2 sin t2). Joint 2 slips when lam2 reaches mu_D2:
 * t = (M11 / tau1) sqrt((mu_D2 - M21 tau1 / M11) / h). */
static void coupled_breakaway(void)
{
    double torque[] = {0, 0}, muD[] = {0, 0.02}, g0[] = {0}, q0[] = {0.0, 1.0};
    rs_param_t p[] = {{"arm", "actuator_mode", torque, 2}, {"arm", "mu_D", muD, 2},
                      {"arm", "gravity", g0, 1},          {"arm", "theta0", q0, 2},
                      {"", "rtol", tight_rtol, 1},        {"", "atol", tight_atol, 1}};
    arm_t a = make_arm(p, 6);
    if (!a.w)
        return;
    double M[2][2], tau1 = 0.05;
    mass_matrix(&preset_rods, q0[1], M);
    double h = 0.1 * 0.15 * 0.05 * sin(q0[1]);
    double t_break = M[0][0] / tau1 * sqrt((muD[1] - M[1][0] * tau1 / M[0][0]) / h);
    command(&a, tau1, 0);
    step(&a, 1);
    CHECK(strcmp(mode(&a), "slip,stick") == 0, "joint 2 stuck: %s", mode(&a));
    double t_ev = NAN, v_ev = NAN;
    int n = 0;
    for (int k = 0; k < 100 && n == 0; k++) {
        step(&a, 1);
        n = count_events(&a, "slip", &t_ev, &v_ev);
    }
    CHECK(n == 1 && v_ev == 2, "joint 2 slips (%d events, joint %g)", n, v_ev);
    CHECK(fabs(t_ev - t_break) < 1e-8, "breaks away at %.12g s, closed form %.12g", t_ev,
          t_break);
    CHECK(strcmp(mode(&a), "slip,slip") == 0 && a.x[3] < 0, "mode %s, joint 2 straightens (%g)",
          mode(&a), a.x[3]);
    rs_world_destroy(&a.w);
}

/* Torque limits: the applied torque never exceeds tau_max, in PID and torque mode. */
static void torque_limits(void)
{
    double cap[] = {0.2, 0.05};
    rs_param_t p[] = {{"arm", "tau_max", cap, 2}};
    arm_t a = make_arm(p, 1);
    if (!a.w)
        return;
    command(&a, 2.0, -2.5);
    double worst[2] = {0, 0};
    int saturated = 0;
    for (int k = 0; k < 1000; k++) {
        step(&a, 1);
        for (int j = 0; j < 2; j++) {
            worst[j] = fmax(worst[j], fabs(a.s[4 + j]));
            saturated += fabs(a.s[4 + j]) == cap[j];
        }
    }
    CHECK(worst[0] <= cap[0] && worst[1] <= cap[1], "applied torques up to (%.17g, %.17g)",
          worst[0], worst[1]);
    CHECK(saturated > 10, "the cap was reached (%d samples)", saturated);
    rs_world_destroy(&a.w);

    double torque[] = {0, 0};
    rs_param_t pt[] = {{"arm", "tau_max", cap, 2}, {"arm", "actuator_mode", torque, 2}};
    a = make_arm(pt, 2);
    if (!a.w)
        return;
    command(&a, 5.0, -5.0);
    step(&a, 3);
    CHECK(a.s[4] == cap[0] && a.s[5] == -cap[1], "torque mode capped: (%g, %g)", a.s[4], a.s[5]);
    /* the dynamics see the capped torque: with g = 0 it is compared with a fresh arm */
    rs_world_destroy(&a.w);
}

/* A joint stop: joint 2 driven into theta_max stops with a stop event, exactly at the stop, no
 * NaN; the impulse is internal, so (M qd)_1 stays 0 (g = 0, no torque on joint 1) and the
 * kinetic energy before the stop equals the work tau2 * (theta_max - theta2(0)). */
static void joint_stop(void)
{
    double torque[] = {0, 0}, g0[] = {0}, lo[] = {-100, -1}, hi[] = {100, 1};
    rs_param_t p[] = {{"arm", "actuator_mode", torque, 2}, {"arm", "gravity", g0, 1},
                      {"arm", "theta_min", lo, 2},        {"arm", "theta_max", hi, 2},
                      {"", "rtol", tight_rtol, 1},        {"", "atol", tight_atol, 1}};
    arm_t a = make_arm(p, 6);
    if (!a.w)
        return;
    double tau2 = 0.05;
    command(&a, 0, tau2);
    int stops = 0;
    double worst_p = 0, M[2][2];
    const rs_event_t *ev = NULL;
    rs_event_t stop_ev;
    for (int k = 0; k < 200; k++) {
        step(&a, 1);
        mass_matrix(&preset_rods, a.x[1], M);
        worst_p = fmax(worst_p, fabs(M[0][0] * a.x[2] + M[0][1] * a.x[3]));
        for (int i = 0; i < 6; i++)
            CHECK(isfinite(a.x[i]), "state %d finite", i);
        if ((ev = find_event(&a, "stop")) != NULL) {
            stops++;
            stop_ev = *ev;
        }
    }
    CHECK(stops == 1, "%d stop events", stops);
    CHECK(worst_p < 1e-10, "(M qd)_1 stays 0: up to %.3g", worst_p);
    if (stops == 1) {
        CHECK(stop_ev.value == 2, "joint %g stopped", stop_ev.value);
        CHECK(fabs(stop_ev.before[1] - 1.0) < 1e-9 && stop_ev.after[1] == 1.0 &&
                  stop_ev.after[3] == 0.0,
              "stopped at theta2 = %.17g with rate %g", stop_ev.after[1], stop_ev.after[3]);
        double T = energy(&(rods_t){0.15, 0.10, 0.2, 0.1, 0.0}, stop_ev.before);
        CHECK_REL(T, tau2 * 1.0, 1e-8, 1e-3);
        /* with p1 = 0 joint 1 follows dq1/dq2 = -M12/M11 (Simpson's rule from 0 to 1) */
        double sum = 0;
        int N = 2000;
        for (int i = 0; i <= N; i++) {
            double q2 = (double)i / N, w = (i == 0 || i == N) ? 1 : (i % 2 ? 4 : 2);
            mass_matrix(&preset_rods, q2, M);
            sum += w * -M[0][1] / M[0][0];
        }
        CHECK(fabs(stop_ev.after[0] - sum / (3.0 * N)) < 1e-9, "theta1 at the stop %.12g, "
              "quadrature %.12g", stop_ev.after[0], sum / (3.0 * N));
    }
    /* joint 1's rate after the stop is p1 / M11 at theta2 = 1 (the impulse conserves p1, and
     * with joint 2 held nothing acts on joint 1): as small as the integrator's error in the
     * conserved p1, bounded above. (A fixed 1e-12 here held for order 4 by luck: Dormand-Prince
     * at the same rtol left p1 at 6e-15 and the rate at 1.3e-12; both are p1 / M11.) */
    mass_matrix(&preset_rods, 1.0, M);
    CHECK(a.x[1] == 1.0 && a.x[3] == 0 && fabs(a.x[2]) <= worst_p / M[0][0] * (1 + 1e-12),
          "held at the stop, at rest: theta2 %.17g, rates (%.3g, %g), p1 / M11 up to %.3g",
          a.x[1], a.x[2], a.x[3], worst_p / M[0][0]);
    CHECK(strcmp(mode(&a), "slip,max") == 0 && a.s[9] == 1.0, "mode %s, limit2 %g", mode(&a),
          a.s[9]);

    /* pulling away releases it */
    command(&a, 0, -tau2);
    step(&a, 1);
    CHECK(count_events(&a, "release", NULL, NULL) == 1, "release event");
    step(&a, 10);
    CHECK(a.x[1] < 1.0 && strcmp(mode(&a), "slip,slip") == 0, "moves away: %g, %s", a.x[1],
          mode(&a));
    rs_world_destroy(&a.w);
}

/* SetTarget: IK to PID setpoints, refusals with specific codes, the arm gets there. */
static void target(void)
{
    arm_t a = make_arm(NULL, 0);
    if (!a.w)
        return;
    rs_status_t st;
    const double *u = a.w->data->u + a.w->model->ent[a.e].u_off;
    double goal[3] = {0.12, 0.15, -1};
    int rc = rs_set_target(a.w->model, a.w->data, a.e, goal, 3, &st);
    CHECK_OK(rc, st);
    double q[2] = {NAN, NAN};
    serial_ik(0.15, 0.10, goal[0], goal[1], -1, q);
    CHECK(u[0] == q[0] && u[1] == q[1], "setpoints are the elbow-down IK");
    double kept[2] = {u[0], u[1]};

    double far[3] = {0.3, 0.1, 1}, near[3] = {0.01, 0.02, 1}, bad_elbow[3] = {0.1, 0.1, 0};
    rc = rs_set_target(a.w->model, a.w->data, a.e, far, 3, &st);
    CHECK(rc == RS_ERANGE && strstr(st.message, "r = ") && strstr(st.message, "annulus"),
          "too far: %d %s", rc, st.message);
    rc = rs_set_target(a.w->model, a.w->data, a.e, near, 3, &st);
    CHECK(rc == RS_ERANGE && strstr(st.message, "annulus"), "too near: %d %s", rc, st.message);
    rc = rs_set_target(a.w->model, a.w->data, a.e, bad_elbow, 3, &st);
    CHECK(rc == RS_EINVAL && strstr(st.message, "elbow"), "elbow 0: %d %s", rc, st.message);
    rc = rs_set_target(a.w->model, a.w->data, a.e, far, 1, &st);
    CHECK(rc == RS_EINVAL, "one value: %d %s", rc, st.message);
    double nan_goal[3] = {NAN, 0.1, 1};
    rc = rs_set_target(a.w->model, a.w->data, a.e, nan_goal, 3, &st);
    CHECK(rc == RS_EINVAL, "NaN target: %d %s", rc, st.message);
    CHECK(u[0] == kept[0] && u[1] == kept[1], "refused targets change nothing");

    /* the PID brings the end effector there (gravity, default gains, integral action) */
    step(&a, 3000);
    CHECK(fabs(a.s[0] - goal[0]) < 1e-6 && fabs(a.s[1] - goal[1]) < 1e-6,
          "end effector at (%.9f, %.9f)", a.s[0], a.s[1]);

    /* torque mode: a target needs PID mode first */
    double mode1[] = {1, 0};
    rs_param_t pm = {"arm", "actuator_mode", mode1, 2};
    rc = rs_world_set_params(a.w, &pm, 1, &st);
    CHECK_OK(rc, st);
    rc = rs_set_target(a.w->model, a.w->data, a.e, goal, 3, &st);
    CHECK(rc == RS_EPRECOND && strstr(st.message, "actuator_mode"), "torque mode: %d %s", rc,
          st.message);
    rs_world_destroy(&a.w);

    /* with stops, the setpoint is the 2 pi turn inside them; none inside -> refused */
    double lo[] = {-0.5, -3.0}, hi[] = {2.0, 0.0};
    rs_param_t pl[] = {{"arm", "theta_min", lo, 2}, {"arm", "theta_max", hi, 2}};
    a = make_arm(pl, 2);
    if (!a.w)
        return;
    u = a.w->data->u + a.w->model->ent[a.e].u_off;
    double up[3] = {0.12, 0.15, 1}, down[3] = {0.12, 0.15, -1};
    rc = rs_set_target(a.w->model, a.w->data, a.e, up, 3, &st);
    CHECK_OK(rc, st);
    rc = rs_set_target(a.w->model, a.w->data, a.e, down, 3, &st);
    CHECK(rc == RS_ERANGE && strstr(st.message, "stops"), "elbow down outside the stops: %s",
          st.message);
    CHECK(rs_reachable(a.w->model, a.e, 0.12, 0.15) == 1, "reachable with elbow up");
    rs_world_destroy(&a.w);
}

/* reachable() and workspace(): the annulus and its two circles. */
static void workspace(void)
{
    arm_t a = make_arm(NULL, 0);
    if (!a.w)
        return;
    rs_status_t st;
    CHECK(rs_reachable(a.w->model, a.e, 0.2, 0.0) == 1, "r = 0.2 inside");
    CHECK(rs_reachable(a.w->model, a.e, 0.0, -0.24) == 1, "r = 0.24 inside");
    CHECK(rs_reachable(a.w->model, a.e, 0.2, 0.2) == 0, "r = 0.28 outside");
    CHECK(rs_reachable(a.w->model, a.e, 0.03, 0.0) == 0, "r = 0.03 inside the hole");
    double xy[2 * 100];
    int n = rs_workspace(a.w->model, a.e, xy, 100, &st);
    CHECK(n == 100, "%d boundary points", n);
    int outer = 0, inner = 0;
    for (int i = 0; i < n; i++) {
        double r = hypot(xy[2 * i], xy[2 * i + 1]);
        outer += fabs(r - 0.25) < 1e-12;
        inner += fabs(r - 0.05) < 1e-12;
    }
    CHECK(outer + inner == n && outer > 0 && inner > 0, "on the circles: %d outer, %d inner",
          outer, inner);
    rs_world_destroy(&a.w);
}

/* Bad parameters are refused with specific codes and change nothing. */
static void bad_params(void)
{
    rs_status_t st;
    double lo[] = {0.5, 0}, hi[] = {0.2, 1}, nan2[] = {NAN, 1}, three[] = {1, 2, 3},
           half[] = {0.5, 1}, two[] = {2, 1}, neg[] = {-1}, zero[] = {0}, out0[] = {2, 0},
           okhi[] = {1, 1};
    struct {
        rs_param_t p[3];
        size_t n;
        int code;
        const char *says;
    } cases[] = {
        {{{"arm", "theta_min", lo, 2}, {"arm", "theta_max", hi, 2}}, 2, RS_EINVAL, "theta_min"},
        {{{"arm", "theta_min", lo, 2}}, 1, RS_EINVAL, "neither"},
        {{{"arm", "kP", nan2, 2}}, 1, RS_EINVAL, "not finite"},
        {{{"arm", "kP", three, 3}}, 1, RS_EINVAL, "2 values"},
        {{{"arm", "kP", three, 1}}, 1, RS_EINVAL, "2 values"},
        {{{"arm", "actuator_mode", half, 2}}, 1, RS_EINVAL, "0 (torque) or 1 (PID)"},
        {{{"arm", "actuator_mode", two, 2}}, 1, RS_ERANGE, "outside"},
        {{{"arm", "m1", neg, 1}}, 1, RS_ERANGE, "outside"},
        {{{"arm", "tau_max", neg, 1}}, 1, RS_EINVAL, "2 values"},
        {{{"arm", "theta_min", zero, 1}}, 1, RS_EINVAL, "neither"},
        {{{"arm", "theta0", out0, 2}, {"arm", "theta_min", lo + 1, 1}, {"arm", "theta_max", okhi, 1}},
         3, RS_EINVAL, "neither"},
        {{{"arm", "lc1", zero, 1}, {"arm", "I1", zero, 1}, {"arm", "I2", zero, 1}}, 3, RS_EINVAL,
         "singular"},
        {{{"arm", "nope", zero, 1}}, 1, RS_ENOTFOUND, "parameters:"},
        {{{"ghost", "a1", zero, 1}}, 1, RS_ENOTFOUND, "no entity"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rs_world_t *w = rs_world_new("serial_arm", cases[i].p, cases[i].n, 0, &st);
        CHECK(w == NULL && st.code == cases[i].code && strstr(st.message, cases[i].says),
              "case %zu: code %d (%s) message '%s'", i, st.code, rs_errname(st.code), st.message);
        rs_world_destroy(&w);
    }
    /* theta0 outside the stops */
    double lo2[] = {-1, -1}, hi2[] = {1, 1}, q0[] = {0, 1.5};
    rs_param_t pq[] = {{"arm", "theta_min", lo2, 2}, {"arm", "theta_max", hi2, 2},
                       {"arm", "theta0", q0, 2}};
    rs_world_t *w = rs_world_new("serial_arm", pq, 3, 0, &st);
    CHECK(w == NULL && st.code == RS_EINVAL && strstr(st.message, "theta0"), "theta0 outside: %s",
          st.message);

    /* SetParams with min > max leaves the running world as it was */
    arm_t a = make_arm(NULL, 0);
    if (!a.w)
        return;
    rs_param_t pb[] = {{"arm", "theta_min", lo, 2}, {"arm", "theta_max", hi, 2}};
    int rc = rs_world_set_params(a.w, pb, 2, &st);
    CHECK(rc == RS_EINVAL && a.w->model->ent[a.e].plen[ARM_PI_THETA_MIN] == 0,
          "refused, no stops set (%d %s)", rc, st.message);
    /* commands: wrong count, NaN, out of bounds; unchanged */
    double u3[3] = {0.1, 0.2, 0.3}, un[2] = {NAN, 0}, ub[2] = {1e7, 0};
    const double *u = a.w->data->u + a.w->model->ent[a.e].u_off;
    CHECK(rs_set_commands(a.w->model, a.w->data, a.e, u3, 3, &st) == RS_EINVAL, "3 commands");
    CHECK(rs_set_commands(a.w->model, a.w->data, a.e, un, 2, &st) == RS_EINVAL, "NaN command");
    CHECK(rs_set_commands(a.w->model, a.w->data, a.e, ub, 2, &st) == RS_ERANGE, "huge command");
    CHECK(u[0] == 0 && u[1] == 0, "commands unchanged");
    rs_world_destroy(&a.w);
}

/* New stops under a running arm: stops the live angles lie outside are refused (the state
 * unchanged), stops around them are taken and the joints then reach them with stop events; a
 * switch of actuator mode zeroes that joint's integral. */
static void params_while_running(void)
{
    arm_t a = make_arm(NULL, 0);
    if (!a.w)
        return;
    rs_status_t st;
    command(&a, 1.0, 0.5);
    step(&a, 100);
    CHECK(a.x[4] != 0 && a.x[5] != 0, "integrals build up");
    /* without friction and stops only the cap's guards are registered; stops bring the joints'
     * guards with them (the count follows the model) */
    CHECK(a.w->model->ent[a.e].ng == ARM_NSAT_GUARDS, "%d guards without friction and stops",
          a.w->model->ent[a.e].ng);
    double lo[] = {-0.2, -0.2}, hi[] = {0.2, 0.2}, q[2] = {a.x[0], a.x[1]};
    const rs_model_t *before = a.w->model;
    rs_param_t p[] = {{"arm", "theta_min", lo, 2}, {"arm", "theta_max", hi, 2}};
    int rc = rs_world_set_params(a.w, p, 2, &st);
    CHECK(rc == RS_EPRECOND && strstr(st.message, "joint 1 of 'arm'") &&
              strstr(st.message, "past its stop"),
          "stops below the live angle %.6g refused: %d %s", q[0], rc, st.message);
    CHECK(a.w->model == before && a.x[0] == q[0] && a.x[1] == q[1], "the world unchanged");
    hi[0] = q[0] + 0.05, hi[1] = q[1] + 0.05;
    rc = rs_world_set_params(a.w, p, 2, &st);
    CHECK_OK(rc, st);
    CHECK(a.w->model->ent[a.e].ng == ARM_NGUARDS, "%d guards with stops", a.w->model->ent[a.e].ng);
    CHECK(a.x[0] == q[0] && a.x[1] == q[1], "the state unchanged by the new stops");
    int stops = 0;
    command(&a, q[0] + 1, q[1] + 1); /* setpoints past the stops */
    for (int k = 0; k < 200 && strcmp(mode(&a), "max,max"); k++) {
        step(&a, 1);
        stops += count_events(&a, "stop", NULL, NULL);
    }
    CHECK(stops >= 2, "stop events (%d)", stops);
    CHECK(a.x[0] == hi[0] && a.x[1] == hi[1], "at the stops (%.17g, %.17g)", a.x[0], a.x[1]);
    CHECK(strcmp(mode(&a), "max,max") == 0, "mode %s", mode(&a));
    double torque[] = {0, 1};
    rs_param_t pm = {"arm", "actuator_mode", torque, 2};
    double i2 = a.x[5];
    rc = rs_world_set_params(a.w, &pm, 1, &st);
    CHECK_OK(rc, st);
    step(&a, 1);
    CHECK(a.x[4] == 0 && a.x[5] != 0 && fabs(a.x[5] - i2) < 0.1,
          "integral 1 zeroed, 2 kept: (%g, %g)", a.x[4], a.x[5]);
    rs_world_destroy(&a.w);
}

/* A free arm (the cap's four guards alone) given dry friction while it spins: the friction
 * guards come with the new model and both joints come to rest with stick events; friction taken
 * away again, the count drops back and a torque turns the arm. */
static void friction_while_running(void)
{
    double torque[] = {0, 0}, g0[] = {0}, qd0[] = {2.0, 0.0};
    rs_param_t p[] = {{"arm", "actuator_mode", torque, 2}, {"arm", "gravity", g0, 1},
                      {"arm", "theta_dot0", qd0, 2}};
    arm_t a = make_arm(p, 3);
    if (!a.w)
        return;
    rs_status_t st;
    step(&a, 10);
    CHECK(a.w->model->ent[a.e].ng == ARM_NSAT_GUARDS && a.x[2] != 0,
          "free spin with %d guards, rate %g", a.w->model->ent[a.e].ng, a.x[2]);
    double muD[] = {0.02, 0.02};
    rs_param_t pf = {"arm", "mu_D", muD, 2};
    int rc = rs_world_set_params(a.w, &pf, 1, &st);
    CHECK_OK(rc, st);
    CHECK(a.w->model->ent[a.e].ng == ARM_NGUARDS, "%d guards with friction",
          a.w->model->ent[a.e].ng);
    int sticks[2] = {0, 0};
    for (int k = 0; k < 500 && !(sticks[0] && sticks[1]); k++) {
        step(&a, 1);
        for (int i = 0; i < a.w->data->nevents; i++) {
            const rs_event_t *ev = &a.w->data->events[i];
            if (strcmp(rs_event_kind_name(a.w->model, ev), "stick") == 0)
                sticks[(int)ev->value - 1] = 1;
        }
    }
    CHECK(sticks[0] && sticks[1], "both joints stick (%d, %d)", sticks[0], sticks[1]);
    CHECK(a.x[2] == 0 && a.x[3] == 0 && strcmp(mode(&a), "stick,stick") == 0,
          "at rest: rates %g %g, mode %s", a.x[2], a.x[3], mode(&a));
    double none[] = {0, 0};
    pf.values = none;
    rc = rs_world_set_params(a.w, &pf, 1, &st);
    CHECK_OK(rc, st);
    CHECK(a.w->model->ent[a.e].ng == ARM_NSAT_GUARDS, "%d guards without friction",
          a.w->model->ent[a.e].ng);
    command(&a, 0.01, 0);
    step(&a, 10);
    CHECK(a.x[2] > 0 && strcmp(mode(&a), "slip,slip") == 0, "turns again: rate %g, mode %s",
          a.x[2], mode(&a));
    rs_world_destroy(&a.w);
}

/* Reset repeats a trajectory with friction events bit for bit. */
static void reset_repeats(void)
{
    double muD[] = {0.05, 0.02}, muV[] = {0.01, 0.01};
    rs_param_t p[] = {{"arm", "mu_D", muD, 2}, {"arm", "mu_V", muV, 2}};
    arm_t a = make_arm(p, 2);
    if (!a.w)
        return;
    rs_status_t st;
    double first[6];
    command(&a, 1.0, -0.5);
    step(&a, 300);
    uint64_t events = a.w->data->events_total;
    memcpy(first, a.x, sizeof first);
    rs_reset(a.w->model, a.w->data, 1, &st);
    command(&a, 1.0, -0.5);
    step(&a, 300);
    CHECK(memcmp(first, a.x, sizeof first) == 0, "same state after reset");
    CHECK(events > 0, "the run had friction events (%llu)", (unsigned long long)events);
    rs_world_destroy(&a.w);
}

static void presets(void)
{
    rs_status_t st;
    const char *names[] = {"serial_arm", "parallel_arm", "workshop"};
    for (size_t i = 0; i < 3; i++) {
        rs_world_t *w = rs_world_new(names[i], NULL, 0, 0, &st);
        CHECK(w != NULL, "preset %s: %s", names[i], st.message);
        if (!w)
            continue;
        int rc = rs_step(w->model, w->data, 100, &st);
        CHECK_OK(rc, st);
        for (int k = 0; k < w->model->nx; k++)
            CHECK(isfinite(w->data->x[k]), "%s state %d finite", names[i], k);
        if (strcmp(names[i], "workshop") == 0) {
            const char *ents[] = {"finger", "arm", "delta", "robot"};
            CHECK(w->model->nentities == 4, "workshop has %d entities", w->model->nentities);
            for (int k = 0; k < 4; k++)
                CHECK(rs_model_entity(w->model, ents[k]) >= 0, "workshop has '%s'", ents[k]);
        }
        rs_world_destroy(&w);
    }
}

/* ---- external wrenches (ApplyWrench) -------------------------------- */

/* Two arms in torque mode without gravity, from rest at q = (0, 0): arm A gets an external
 * wrench for one control step, arm B the joint torques that wrench amounts to (generalized
 * forces Q) for that step; then both run on with no torque. A couple tau on link 1 is Q = (tau,
 * 0), on link 2 Q = (tau, tau) (link 2's angle is t1 + t2); a force (0, fy) at the tip of the
 * straight arm is J^T f = (fy (a1 + a2), fy a2), J changing with q only at second order in the
 * step. Also: the wrench is gone after its step; bad wrenches are refused. */
static void wrench_case(const char *body, const double *w, size_t n, double q1, double q2,
                        double rel)
{
    double zero = 0.0, modes[2] = {0, 0}, cap[2] = {10, 10};
    rs_param_t p[] = {{"arm", "gravity", &zero, 1}, {"arm", "actuator_mode", modes, 2},
                      {"arm", "tau_max", cap, 2}};
    arm_t a = make_arm(p, 3), b = make_arm(p, 3);
    if (!a.w || !b.w)
        return;
    rs_status_t st;
    int rc = rs_apply_wrench(a.w->model, a.w->data, a.e, body, w, n, &st);
    CHECK_OK(rc, st);
    command(&b, q1, q2);
    step(&a, 1);
    step(&b, 1);
    for (int i = 0; i < RS_WRENCH_MAX; i++)
        CHECK(a.w->data->ent[a.e].wrench[i] == 0.0, "%s: wrench %d left after its step", body, i);
    CHECK(a.x[2] != 0.0 && a.x[3] != 0.0, "%s moved the arm", body);
    for (int i = 0; i < 4; i++)
        CHECK_REL(a.x[i], b.x[i], rel, 1e-15);
    command(&b, 0, 0);
    step(&a, 20);
    step(&b, 20);
    for (int i = 0; i < 4; i++)
        CHECK_REL(a.x[i], b.x[i], rel, 1e-15);
    rs_world_destroy(&a.w);
    rs_world_destroy(&b.w);
}

static void wrench(void)
{
    double tau = 0.3, f[3] = {0.0, 0.7, 0.0}, a1 = 0.15, a2 = 0.10;
    wrench_case("link1", &tau, 1, tau, 0.0, 1e-12);
    wrench_case("link2", &tau, 1, tau, tau, 1e-12);
    wrench_case("end_effector", f, 3, f[1] * (a1 + a2), f[1] * a2, 2e-3);
    /* refused, and nothing changes */
    arm_t a = make_arm(NULL, 0);
    if (!a.w)
        return;
    rs_status_t st;
    double bad[3] = {NAN, 0, 0}, huge[3] = {1e10, 0, 0};
    CHECK(rs_apply_wrench(a.w->model, a.w->data, a.e, "hand", f, 3, &st) == RS_ENOTFOUND &&
              strstr(st.message, "end_effector"),
          "unknown body: %s", st.message);
    CHECK(rs_apply_wrench(a.w->model, a.w->data, a.e, "end_effector", f, 2, &st) == RS_EINVAL,
          "2 values for 3: %s", st.message);
    CHECK(rs_apply_wrench(a.w->model, a.w->data, a.e, "end_effector", bad, 3, &st) == RS_EINVAL,
          "NaN: %s", st.message);
    CHECK(rs_apply_wrench(a.w->model, a.w->data, a.e, "end_effector", huge, 3, &st) == RS_ERANGE,
          "1e10: %s", st.message);
    for (int i = 0; i < RS_WRENCH_MAX; i++)
        CHECK(a.w->data->ent[a.e].wrench[i] == 0.0, "a refused wrench was kept");
    rs_world_destroy(&a.w);
}

/* The serial arm's default method is Verner 8(7) (erk_order 0: the robot's choice, 8): the
 * default world steps bit-identically to one asking for 8, in fewer internal steps than with
 * Dormand-Prince 5(4), and both stay within the tolerance of each other. */
static void default_method(void)
{
    double o5[] = {5}, o8[] = {8}, qD[2] = {0.8, -0.5};
    rs_param_t p5[] = {{"", "erk_order", o5, 1}}, p8[] = {{"", "erk_order", o8, 1}};
    arm_t a[3] = {make_arm(NULL, 0), make_arm(p8, 1), make_arm(p5, 1)};
    if (!a[0].w || !a[1].w || !a[2].w)
        return;
    rs_stats_t s[3];
    for (int i = 0; i < 3; i++) {
        command(&a[i], qD[0], qD[1]);
        step(&a[i], 200);
        rs_get_stats(a[i].w->data, &s[i]);
    }
    CHECK(memcmp(a[0].x, a[1].x, 6 * sizeof(double)) == 0 &&
              s[0].internal_steps == s[1].internal_steps,
          "default = erk_order 8: %llu and %llu steps",
          (unsigned long long)s[0].internal_steps, (unsigned long long)s[1].internal_steps);
    /* (2.2x fewer on SUNDIALS 6.4, 1.8x on 7.5, whose default step controller differs) */
    CHECK(s[0].internal_steps * 3 < s[2].internal_steps * 2,
          "Verner 8(7) takes fewer steps: %llu vs %llu with order 5",
          (unsigned long long)s[0].internal_steps, (unsigned long long)s[2].internal_steps);
    CHECK(fabs(a[0].x[0] - a[2].x[0]) < 1e-6 && fabs(a[0].x[1] - a[2].x[1]) < 1e-6,
          "both methods agree: (%.9f, %.9f) vs (%.9f, %.9f)", a[0].x[0], a[0].x[1], a[2].x[0],
          a[2].x[1]);
    for (int i = 0; i < 3; i++)
        rs_world_destroy(&a[i].w);
}

/* Joint stops hold on random scenarios (seeded; RS_RUNS sets the count): random stops, start
 * inside them, rates, gravity on or off, dry friction on some joints, torque or PID commands
 * redrawn every 25 control steps, among them stops hit while the other joint is released or
 * kicked off its own stop by the impact. At every control step both angles lie within their
 * stops (to 1e-12 rad: a stop is found where its guard has crossed, then clamped). */
static void stops_random(void)
{
    int violations = 0, runs = getenv("RS_RUNS") ? atoi(getenv("RS_RUNS")) : 100;
    double worst = 0;
    for (int r = 0; r < runs; r++) {
        rng_state = 1000 + r;
        double mode_v[2] = {urand(0, 1) < 0.5 ? 0 : 1, urand(0, 1) < 0.5 ? 0 : 1};
        double lo[2], hi[2], q0[2], qd0[2], mu[2] = {0, 0}, tm[2] = {2, 2};
        double g[1] = {urand(0, 1) < 0.5 ? 0 : 9.81};
        for (int j = 0; j < 2; j++) {
            lo[j] = urand(-2.5, 0.5);
            hi[j] = lo[j] + urand(0.05, 2.0);
            q0[j] = urand(lo[j], hi[j]);
            qd0[j] = urand(-3, 3);
            if (urand(0, 1) < 0.3)
                mu[j] = urand(0, 0.05);
        }
        rs_param_t p[] = {{"arm", "actuator_mode", mode_v, 2}, {"arm", "gravity", g, 1},
                          {"arm", "theta_min", lo, 2},        {"arm", "theta_max", hi, 2},
                          {"arm", "theta0", q0, 2},           {"arm", "theta_dot0", qd0, 2},
                          {"arm", "mu_D", mu, 2},             {"arm", "tau_max", tm, 2}};
        arm_t a = make_arm(p, 8);
        if (!a.w)
            return;
        int bad = 0;
        for (int k = 0; k < 300 && !bad; k++) {
            if (k % 25 == 0)
                command(&a, mode_v[0] ? urand(lo[0] - 0.5, hi[0] + 0.5) : urand(-0.3, 0.3),
                        mode_v[1] ? urand(lo[1] - 0.5, hi[1] + 0.5) : urand(-0.3, 0.3));
            step(&a, 1);
            for (int j = 0; j < 2; j++) {
                double past = fmax(lo[j] - a.x[j], a.x[j] - hi[j]);
                worst = fmax(worst, past);
                if (past > 1e-12 && !bad)
                    fprintf(stderr, "seed %d, control step %d: joint %d %.3g rad past its stop "
                            "(mode %s)\n", 1000 + r, k, j + 1, past, mode(&a));
                bad |= past > 1e-12;
            }
        }
        violations += bad;
        rs_world_destroy(&a.w);
    }
    CHECK(violations == 0, "%d of %d random runs past a stop (worst %.3g rad)", violations, runs,
          worst);
}

/* Never silent: a joint past its stop (beyond rounding) is refused by the arm's failure check
 * with a specific error; a joint on its stop is not. */
static void past_stop_is_an_error(void)
{
    double lo[] = {-1, -1}, hi[] = {1, 1};
    rs_param_t p[] = {{"arm", "theta_min", lo, 2}, {"arm", "theta_max", hi, 2}};
    arm_t a = make_arm(p, 2);
    if (!a.w)
        return;
    const rs_entity_model_t *em = &a.w->model->ent[a.e];
    const rs_entity_data_t *ed = &a.w->data->ent[a.e];
    rs_status_t st;
    double x[6] = {1.0, -1.0, 0, 0, 0, 0};
    CHECK(em->robot->failure && em->robot->failure(em, ed, x, &st) == 0, "on the stops: fine");
    x[1] = -1.0 - 1e-6;
    int rc = em->robot->failure ? em->robot->failure(em, ed, x, &st) : 0;
    CHECK(rc == RS_ESIMFAIL && strstr(st.message, "joint 2"), "past: %d %s", rc,
          rc ? st.message : "");
    rs_world_destroy(&a.w);
}

int main(void)
{
    past_stop_is_an_error();
    stops_random();
    wrench();
    ik_seed_example();
    ik_grid();
    jacobian();
    energy_conserved();
    pid_setpoint();
    gravity_compensation();
    params_recompiled();
    friction();
    friction_holds_against_gravity();
    coupled_breakaway();
    torque_limits();
    joint_stop();
    target();
    workspace();
    bad_params();
    params_while_running();
    friction_while_running();
    reset_repeats();
    presets();
    default_method();
    return rs_test_done("test_serial_arm");
}
