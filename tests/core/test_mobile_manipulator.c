/* The mobile manipulator against closed forms: the base follows the Example Robotic Systems
 * chapter's worked example (in metres); a step of the wheel speeds keeps the free arms' angular
 * momenta about their shoulders (the base's motion in the arms' equations); a free arm's kinetic
 * energy is conserved without torque; an arm pushed into the table touches it at y = table_y
 * exactly, never penetrates, and held at rest by friction carries the static force f = -J_w^-T tau
 * inside the cone. */
#include "rs_core.h"
#include "rs_test.h"
#include "seeded_rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rs_world_t *world(rs_param_t *p, size_t n)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new("mobile_manipulator", p, n, 1, &st);
    CHECK(w != NULL, "%s", st.message);
    return w;
}

static void run(rs_world_t *w, const double *u, double seconds)
{
    rs_status_t st;
    int rc = rs_set_commands(w->model, w->data, 0, u, 6, &st);
    CHECK_OK(rc, st);
    uint64_t n = (uint64_t)llround(seconds / w->model->control_dt);
    rc = rs_step(w->model, w->data, n, &st);
    CHECK_OK(rc, st);
}

/* The Example Robotic Systems chapter's five phases (wheels 18 cm, L = 12 cm), ending at (277.6,
 * 107.7, 0) cm */
static void worked_example(void)
{
    double r[] = {0.09}, L[] = {0.12}, th[] = {0.0}, far[] = {100.0}, tol[] = {1e-12};
    rs_param_t p[] = {{"mm", "wheel_radius", r, 1}, {"mm", "half_axle", L, 1},
                      {"mm", "theta0", th, 1},      {"mm", "table_y", far, 1},
                      {"", "rtol", tol, 1},           {"", "atol", tol, 1}};
    rs_world_t *w = world(p, 6);
    if (!w)
        return;
    struct { double w1, w2, T; } ph[] = {{3, 3, 5}, {2, -2, 1}, {3, 3, 4}, {-2, 2, 1}, {3, 3, 5}};
    double e[3] = {0, 0, 0};
    for (int i = 0; i < 5; i++) {
        double u[6] = {ph[i].w1, ph[i].w2, 0, 0, 0, 0};
        run(w, u, ph[i].T);
        double v = 0.5 * 0.09 * (ph[i].w1 + ph[i].w2), om = 0.09 * (ph[i].w1 - ph[i].w2) / 0.24;
        if (om == 0) {
            e[0] += v * ph[i].T * cos(e[2]);
            e[1] += v * ph[i].T * sin(e[2]);
        } else {
            e[2] += om * ph[i].T;
        }
    }
    const double *x = w->data->x;
    for (int i = 0; i < 3; i++)
        CHECK(fabs(x[i] - e[i]) <= 1e-8, "base %d: %.15g, closed form %.15g", i, x[i], e[i]);
    CHECK(fabs(x[0] - 2.776) < 5e-4 && fabs(x[1] - 1.077) < 5e-4, "pose (%g, %g) m, seed "
          "(277.6, 107.7) cm", x[0], x[1]);
    rs_world_destroy(&w);
}

/* Angular momentum of arm k about its shoulder, relative to the shoulder (base frame; the base
 * translating without turning): sum over the rods m (c - s) x (J_c qd) + I omega. */
static double shoulder_momentum(const double *xa, double a1, double a2, double m1, double m2)
{
    double q1 = xa[0], q12 = xa[0] + xa[1], w1 = xa[2], w12 = xa[2] + xa[3];
    double c1[2] = {a1 / 2 * cos(q1), a1 / 2 * sin(q1)};
    double v1[2] = {-a1 / 2 * sin(q1) * w1, a1 / 2 * cos(q1) * w1};
    double c2[2] = {a1 * cos(q1) + a2 / 2 * cos(q12), a1 * sin(q1) + a2 / 2 * sin(q12)};
    double v2[2] = {-a1 * sin(q1) * w1 - a2 / 2 * sin(q12) * w12,
                    a1 * cos(q1) * w1 + a2 / 2 * cos(q12) * w12};
    return m1 * (c1[0] * v1[1] - c1[1] * v1[0]) + m1 * a1 * a1 / 12 * w1 +
           m2 * (c2[0] * v2[1] - c2[1] * v2[0]) + m2 * a2 * a2 / 12 * w12;
}

/* A step of the wheel speeds from rest (pure translation at v): the arms, free and without
 * torque, are hinged at shoulders that jump to velocity v. The impulse acts at the hinge, so
 * the angular momentum about the shoulder is kept through it: relative to the shoulder (an
 * inertial frame after the step) it is L' = -sum m (c - s) x v_s (c at the start), and then
 * stays so while the base translates (no torque about a hinge moving at constant velocity).
 * The arms' equations must carry the base's motion for this (the fictitious forces
 * the first version left out). */
static void velocity_step(void)
{
    double far[] = {100.0}, th[] = {0.0}, tol[] = {1e-11};
    rs_param_t p[] = {{"mm", "table_y", far, 1}, {"mm", "theta0", th, 1},
                      {"", "rtol", tol, 1}, {"", "atol", tol, 1}};
    rs_world_t *w = world(p, 4);
    if (!w)
        return;
    double a1 = 0.45, a2 = 0.40, m1 = 2.0, m2 = 1.5, v = 0.5 * 0.1 * (4.0 + 4.0);
    double q0[2][2] = {{0.8, -1.6}, {-0.8, 1.6}}, L0[2];
    for (int k = 0; k < 2; k++) { /* -sum m (c - s) x (v, 0) = sum m c_y v */
        double c1y = a1 / 2 * sin(q0[k][0]), c2y = a1 * sin(q0[k][0]) + a2 / 2 * sin(q0[k][0] + q0[k][1]);
        L0[k] = (m1 * c1y + m2 * c2y) * v;
    }
    double u[6] = {4.0, 4.0, 0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        run(w, u, 0.5);
        const double *x = w->data->x;
        for (int k = 0; k < 2; k++) {
            double L = shoulder_momentum(x + 3 + 4 * k, a1, a2, m1, m2);
            CHECK(fabs(L - L0[k]) <= 1e-7 * fabs(L0[k]), "t = %g s, arm %d: L = %.12g, closed "
                  "form %.12g", w->data->t, k, L, L0[k]);
        }
    }
    CHECK(fabs(w->data->x[5]) > 1e-3, "the left arm swings: qd1 = %g", w->data->x[5]);
    CHECK(fabs(w->data->x[0] - v * 2.0) <= 1e-9, "base x %.12g, closed form %g", w->data->x[0],
          v * 2.0);
    rs_world_destroy(&w);
}

/* T = 1/2 qd^T M qd of a horizontal two-link arm of uniform rods (the Example Robotic Systems
 * chapter's arm, g = 0) */
static double kinetic(const double *xa, double a1, double a2, double m1, double m2)
{
    double lc1 = a1 / 2, lc2 = a2 / 2, I1 = m1 * a1 * a1 / 12, I2 = m2 * a2 * a2 / 12;
    double c2 = cos(xa[1]);
    double M11 = I1 + I2 + m1 * lc1 * lc1 + m2 * (a1 * a1 + lc2 * lc2 + 2 * a1 * lc2 * c2);
    double M12 = I2 + m2 * (lc2 * lc2 + a1 * lc2 * c2), M22 = I2 + m2 * lc2 * lc2;
    return 0.5 * (M11 * xa[2] * xa[2] + 2 * M12 * xa[2] * xa[3] + M22 * xa[3] * xa[3]);
}

static void energy(void)
{
    double far[] = {100.0}, tol[] = {1e-11};
    rs_param_t p[] = {{"mm", "table_y", far, 1}, {"", "rtol", tol, 1}, {"", "atol", tol, 1}};
    rs_world_t *w = world(p, 3);
    if (!w)
        return;
    double kick[6] = {0, 0, 3.0, -2.0, -1.0, 4.0}, none[6] = {0};
    run(w, kick, 0.2);
    run(w, none, 0.01);
    double T0 = kinetic(w->data->x + 3, 0.45, 0.40, 2.0, 1.5);
    double T1 = kinetic(w->data->x + 7, 0.45, 0.40, 2.0, 1.5);
    CHECK(T0 > 0.1 && T1 > 0.1, "the arms move: T = %g, %g J", T0, T1);
    double worst = 0;
    for (int i = 0; i < 300; i++) {
        run(w, none, 0.01);
        double a = kinetic(w->data->x + 3, 0.45, 0.40, 2.0, 1.5);
        double b = kinetic(w->data->x + 7, 0.45, 0.40, 2.0, 1.5);
        worst = fmax(worst, fmax(fabs(a - T0) / T0, fabs(b - T1) / T1));
    }
    CHECK(worst < 1e-7, "kinetic energy drifts by %.3g (relative) over 3 s", worst);
    rs_world_destroy(&w);
}

/* Kinetic energy of the whole (passive base): base 1/2 mb v^2 + 1/2 Ib w^2, and each rod
 * 1/2 m |v_c|^2 + 1/2 I omega^2 with v_c = v (cos th, sin th) + w x (c - b) + (rod's own). */
static double total_kinetic(const double *x, double mb, double Ib)
{
    double a1 = 0.45, a2 = 0.40, m[2] = {2.0, 1.5}, th = x[2], v = x[11], w = x[12];
    double T = 0.5 * mb * v * v + 0.5 * Ib * w * w;
    for (int k = 0; k < 2; k++) {
        const double *xa = x + 3 + 4 * k;
        double sy = k == 0 ? 0.3 : -0.3, q1 = xa[0], q12 = xa[0] + xa[1];
        double w1 = xa[2], w12 = xa[2] + xa[3];
        for (int l = 0; l < 2; l++) {
            double l1 = l == 0 ? a1 / 2 : a1, l2 = l == 0 ? 0.0 : a2 / 2;
            double r[2] = {0.2 + l1 * cos(q1) + l2 * cos(q12), sy + l1 * sin(q1) + l2 * sin(q12)};
            double rd[2] = {-l1 * sin(q1) * w1 - l2 * sin(q12) * w12,
                            l1 * cos(q1) * w1 + l2 * cos(q12) * w12};
            /* base frame: (v, 0) + w (-r_y, r_x) + rd; |.| is frame invariant */
            double vc[2] = {v - w * r[1] + rd[0], w * r[0] + rd[1]};
            double len = l == 0 ? a1 : a2, om = w + (l == 0 ? w1 : w12);
            T += 0.5 * m[l] * (vc[0] * vc[0] + vc[1] * vc[1]) + 0.5 * m[l] * len * len / 12 * om * om;
        }
    }
    (void)th;
    return T;
}

/* The passive base without losses: the arms, kicked by torques and then free, move the base
 * through their reactions; the wheels' rolling constraint does no work, so the whole's kinetic
 * energy is conserved (Kane's M and h consistent), and the base has moved. */
static void passive_energy(void)
{
    double far[] = {100.0}, one[] = {1.0}, zero[] = {0.0}, tol[] = {1e-11};
    rs_param_t p[] = {{"mm", "table_y", far, 1},     {"mm", "base_mode", one, 1},
                      {"mm", "roll_force", zero, 1}, {"mm", "roll_torque", zero, 1},
                      {"mm", "roll_damping", zero, 1}, {"mm", "turn_damping", zero, 1},
                      {"", "rtol", tol, 1},           {"", "atol", tol, 1}};
    rs_world_t *w = world(p, 8);
    if (!w)
        return;
    double kick[6] = {0, 0, 3.0, -2.0, -1.0, 4.0}, none[6] = {0};
    run(w, kick, 0.2);
    run(w, none, 0.01);
    double T0 = total_kinetic(w->data->x, 40.0, 2.0), worst = 0;
    CHECK(T0 > 0.1, "it moves: T = %g J", T0);
    for (int i = 0; i < 300; i++) {
        run(w, none, 0.01);
        worst = fmax(worst, fabs(total_kinetic(w->data->x, 40.0, 2.0) - T0) / T0);
    }
    CHECK(worst < 1e-7, "kinetic energy drifts by %.3g (relative) over 3 s", worst);
    const double *x = w->data->x;
    CHECK(fabs(x[11]) > 1e-4 || fabs(x[12]) > 1e-4, "the base moves: v %g w %g", x[11], x[12]);
    CHECK(fabs(x[0]) > 1e-4 || fabs(x[1]) > 1e-4 || fabs(x[2] - M_PI / 2) > 1e-4,
          "the base moved: (%g, %g, %g)", x[0], x[1], x[2]);
    rs_world_destroy(&w);
}

/* The passive base coasting to rest: arms of little mass, the base set rolling at v0 and
 * turning at w0; rolling resistance F and damping c: m v' = -F - c v, so
 *     v(t) = (v0 + F/c) exp(-c t / m) - F/c,  at rest at t* = (m/c) ln(1 + c v0 / F),
 *     having rolled s* = (m/c) v0 - F t* / c,
 * and the same for the turn with I, T, c_w. Each stop is a base_stop event at t*, exactly
 * (root finding), and the base then stays (F holds it: nothing pushes). */
static void passive_coast(void)
{
    /* the lightest links the range serves: 4 x 1e-2 kg, 1e-3 of the base's 40 kg, swing freely
     * as the base slows; the base follows the closed form to about that fraction (rolling),
     * and the turn, whose inertia the arms' 1e-2 kg at up to 0.9 m change by about 1 %, to 2e-2 */
    double one[] = {1.0}, light[] = {1e-2}, far[] = {100.0}, th[] = {0.0}, tol[] = {1e-11};
    rs_param_t p[] = {{"mm", "table_y", far, 1}, {"mm", "base_mode", one, 1},
                      {"mm", "m1", light, 1},    {"mm", "m2", light, 1},
                      {"mm", "theta0", th, 1},   {"", "rtol", tol, 1}, {"", "atol", tol, 1}};
    rs_world_t *w = world(p, 7);
    if (!w)
        return;
    double v0 = 0.5, w0 = 1.0, m = 40.0 + 4 * 1e-2, F = 7.0, c = 40.0, T = 1.0, cw = 5.0;
    double rel = 4 * 1e-2 / 40.0 * 2; /* the arms' share of the mass, twice */
    /* the turn's inertia: the base's 2 kg m^2 and, to about 1 %, the arms' (left out: checked to
     * 2e-2 relative below) */
    double I = 2.0;
    double tv = m / c * log(1 + c * v0 / F), sv = m / c * v0 - F * tv / c;
    double tw = I / cw * log(1 + cw * w0 / T), aw = I / cw * w0 - T * tw / cw;
    w->data->x[11] = v0, w->data->x[12] = w0; /* set rolling; settle() picks it up */
    double none[6] = {0};
    rs_status_t st;
    CHECK_OK(rs_set_commands(w->model, w->data, 0, none, 6, &st), st);
    double t_stop[2] = {-1, -1}, s = 0;
    for (int k = 0; k < 200; k++) {
        double x0 = w->data->x[0], y0 = w->data->x[1];
        CHECK_OK(rs_step(w->model, w->data, 1, &st), st);
        s += hypot(w->data->x[0] - x0, w->data->x[1] - y0);
        for (int i = 0; i < w->data->nevents; i++)
            if (strcmp(rs_event_kind_name(w->model, &w->data->events[i]), "base_stop") == 0)
                t_stop[(int)w->data->events[i].value] = w->data->events[i].t;
    }
    CHECK(fabs(t_stop[0] - tv) < rel * tv, "rolling stops at t = %.12g s, closed form %.12g",
          t_stop[0], tv);
    CHECK(fabs(t_stop[1] - tw) < 2e-2 * tw, "turning stops at t = %.12g s, closed form %.12g",
          t_stop[1], tw);
    CHECK(fabs(s - sv) < rel * sv, "rolled %.12g m, closed form %.12g", s, sv);
    CHECK(fabs(w->data->x[2] - aw) < 2e-2 * aw, "turned %.12g rad, closed form %.12g",
          w->data->x[2], aw);
    CHECK(w->data->x[11] == 0.0 && w->data->x[12] == 0.0, "at rest: v %g w %g", w->data->x[11],
          w->data->x[12]);
    rs_world_destroy(&w);
}

/* The left arm pushed into the table edge with the base at rest. */
static void contact(void)
{
    double tol[] = {1e-10};
    rs_param_t p[] = {{"", "rtol", tol, 1}, {"", "atol", tol, 1}};
    rs_world_t *w = world(p, 2);
    if (!w)
        return;
    /* each control step: tau = J_w^T F - D qd, F = 5 N along +y (towards the edge), D = 2 N m s:
     * the left end effector heads for the edge and comes to rest against it */
    double a1 = 0.45, a2 = 0.40, tau[6] = {0};
    int touches = 0, left = rs_model_entity(w->model, "mm");
    CHECK(left == 0, "entity %d", left);
    double ymax = -INFINITY, table = 0.9;
    rs_status_t st;
    for (int i = 0; i < 600; i++) {
        const double *xs = w->data->x;
        double th = xs[2], q1 = xs[3], q2 = xs[4];
        double J0[2] = {-a1 * sin(q1) - a2 * sin(q1 + q2), -a2 * sin(q1 + q2)};
        double J1[2] = {a1 * cos(q1) + a2 * cos(q1 + q2), a2 * cos(q1 + q2)};
        for (int j = 0; j < 2; j++)
            tau[2 + j] = 5.0 * (sin(th) * J0[j] + cos(th) * J1[j]) - 2.0 * xs[5 + j];
        rs_set_commands(w->model, w->data, 0, tau, 6, &st);
        int rc = rs_step(w->model, w->data, 1, &st);
        CHECK_OK(rc, st);
        for (int e = 0; e < w->data->nevents; e++)
            if (strcmp(rs_event_kind_name(w->model, &w->data->events[e]), "touch") == 0)
                touches++;
        ymax = fmax(ymax, w->data->sensors[1]);
    }
    const double *s = w->data->sensors;
    CHECK(touches >= 1, "%d touch events", touches);
    CHECK(ymax <= table + 1e-9, "the end effector reached y = %.15g past the edge %g", ymax, table);
    CHECK(s[4] == 2.0, "left contact state %g (2: stuck), mode %s", s[4],
          rs_mode_name(w->model, w->data, 0));
    CHECK(fabs(s[1] - table) <= 1e-9, "on the edge: y = %.15g", s[1]);
    /* at rest: M qdd + C qd = 0, so tau + J_w^T f = 0, f = -J_w^-T tau (world), f_n = -f_y */
    const double *x = w->data->x;
    double th = x[2], q1 = x[3], q2 = x[4];
    double sum_tau = fabs(tau[2]) + fabs(tau[3]);
    CHECK(sum_tau > 0.1, "torques %g %g", tau[2], tau[3]);
    CHECK(fabs(x[5]) < 1e-6 && fabs(x[6]) < 1e-6, "at rest: rates %g %g", x[5], x[6]);
    double J[2][2] = {{-a1 * sin(q1) - a2 * sin(q1 + q2), -a2 * sin(q1 + q2)},
                      {a1 * cos(q1) + a2 * cos(q1 + q2), a2 * cos(q1 + q2)}};
    double Jw[2][2];
    for (int i = 0; i < 2; i++) {
        Jw[0][i] = cos(th) * J[0][i] - sin(th) * J[1][i];
        Jw[1][i] = sin(th) * J[0][i] + cos(th) * J[1][i];
    }
    /* Jw^T f = -tau: [Jw00 Jw10; Jw01 Jw11] f = -tau */
    double det = Jw[0][0] * Jw[1][1] - Jw[1][0] * Jw[0][1];
    double fx = (-tau[2] * Jw[1][1] + tau[3] * Jw[1][0]) / det;
    double fy = (-tau[3] * Jw[0][0] + tau[2] * Jw[0][1]) / det;
    CHECK(fabs(s[2] - (-fy)) <= 1e-6 * fabs(fy) + 1e-9, "normal force %.12g, statics %.12g", s[2],
          -fy);
    CHECK(fabs(s[3] - fx) <= 1e-6 * fabs(fy) + 1e-9, "friction %.12g, statics %.12g", s[3], fx);
    CHECK(s[2] > 0 && fabs(s[3]) <= 0.5 * s[2] + 1e-12, "inside the cone: fn %g ft %g", s[2],
          s[3]);
    /* the right arm never moved */
    CHECK(fabs(x[7] + 0.8) < 1e-12 && fabs(x[8] - 1.6) < 1e-12 && s[8 + 4] == 0.0,
          "right arm %.17g %.17g contact %g", x[7], x[8],
          s[12]);
    rs_world_destroy(&w);
}

/* Signed distance of p to the table solid x0 <= x <= x1, y >= ty: Euclidean outside, minus the
 * depth inside. */
static double table_distance(const double p[2], double ty, double x0, double x1)
{
    double d = fmin(p[1] - ty, fmin(p[0] - x0, x1 - p[0]));
    if (d >= 0)
        return -d;
    double dx = fmax(0.0, fmax(x0 - p[0], p[0] - x1)), dy = fmax(0.0, ty - p[1]);
    return hypot(dx, dy);
}

/* The right arm, straight along the base's x axis (world +y), swung clockwise by a torque on
 * joint 1 towards a table whose side x = 0.6 it meets above the edge (table_y = 0): a touch on
 * the side, at x = 0.6 exactly, joint angles continuous through it (no snap onto the edge), and
 * it never enters the table. */
static void side_touch(void)
{
    double ty[] = {0.0}, x0[] = {0.6}, x1[] = {3.0}, z[] = {0.0}, tol[] = {1e-10};
    double th[] = {M_PI / 2};
    rs_param_t p[] = {{"mm", "table_y", ty, 1},      {"mm", "table_x_min", x0, 1},
                      {"mm", "table_x_max", x1, 1},  {"mm", "right_theta1_0", z, 1},
                      {"mm", "right_theta2_0", z, 1}, {"mm", "theta0", th, 1},
                      {"", "rtol", tol, 1},           {"", "atol", tol, 1}};
    rs_world_t *w = world(p, 8);
    if (!w)
        return;
    rs_status_t st;
    double u[6] = {0, 0, 0, 0, -2.0, 0};
    CHECK_OK(rs_set_commands(w->model, w->data, 0, u, 6, &st), st);
    const double *s = w->data->sensors + 8;
    int touches = 0;
    double worst_in = -INFINITY;
    for (int k = 0; k < 150; k++) {
        CHECK_OK(rs_step(w->model, w->data, 1, &st), st);
        for (int i = 0; i < w->data->nevents; i++) {
            const rs_event_t *ev = &w->data->events[i];
            if (strcmp(rs_event_kind_name(w->model, ev), "touch") || ev->value != 1)
                continue;
            touches++;
            /* the right end effector at the touch, from the event's state (world frame; the
             * base at rest at the origin facing +y: base x is world +y, base y is world -x) */
            const double *a = ev->after + 7;
            double bx = 0.2 + 0.45 * cos(a[0]) + 0.40 * cos(a[0] + a[1]);
            double by = -0.3 + 0.45 * sin(a[0]) + 0.40 * sin(a[0] + a[1]);
            CHECK(fabs(-by - 0.6) <= 1e-9 && bx > 0.0, "touch at (%.12g, %.12g), not on the side",
                  -by, bx);
            for (int j = 0; j < 2; j++)
                CHECK(fabs(ev->after[7 + j] - ev->before[7 + j]) <= 1e-9,
                      "joint %d jumps %.9g -> %.9g at the touch", j + 1, ev->before[7 + j],
                      ev->after[7 + j]);
        }
        worst_in = fmax(worst_in, -table_distance(s, 0.0, 0.6, 3.0));
    }
    CHECK(touches == 1, "%d touches of the side", touches);
    CHECK(worst_in <= 1e-9, "the end effector entered the table by %.3g m", worst_in);
    rs_world_destroy(&w);
}

/* Random tables and arm torques (seeded; RS_RUNS sets the count), the base at rest: tables of
 * random width and place that the arms reach from the front or the sides, random start angles,
 * torques redrawn every 40 control steps. At every control step neither end effector is inside
 * the table (to 1e-9 m), and the arms' kinetic energy (closed form, base fixed) grows by no more
 * than the torques' work tau . dq (contact and friction only take energy; a snap of the joints
 * would break it; so would a tangential impact that added energy). A contact left with no
 * consistent mode (Painleve at rest) must stop the run with that error, outside the table.
 * mu_hi > 0: mu drawn in [mu_lo, mu_hi) (else the preset's 0.5); at most max_jammed runs may
 * stop so (0: before the tangential impact, seed 4035 at mu 0.5 and 9110 at mu 0.99 stopped). */
static void table_random(int seed0, double mu_lo, double mu_hi, int max_jammed)
{
    int runs = getenv("RS_RUNS") ? atoi(getenv("RS_RUNS")) : 100, done = 0, violations = 0;
    int jammed = 0;
    double worst_in = -INFINITY, worst_gain = -INFINITY;
    for (int r = 0; r < runs; r++) {
        rng_state = (uint64_t)(seed0 + r);
        double ty[] = {urand(-0.7, 1.1)}, x0[] = {urand(-1.3, 1.1)};
        double x1[] = {x0[0] + urand(0.1, 2.0)};
        double q0[4] = {urand(-3, 3), urand(-2.5, 2.5), urand(-3, 3), urand(-2.5, 2.5)};
        double mu[] = {mu_hi > 0 ? urand(mu_lo, mu_hi) : 0.5};
        rs_param_t p[] = {{"mm", "table_y", ty, 1},          {"mm", "table_x_min", x0, 1},
                          {"mm", "table_x_max", x1, 1},      {"mm", "left_theta1_0", q0, 1},
                          {"mm", "left_theta2_0", q0 + 1, 1}, {"mm", "right_theta1_0", q0 + 2, 1},
                          {"mm", "right_theta2_0", q0 + 3, 1}, {"mm", "mu", mu, 1}};
        rs_status_t st;
        rs_world_t *w = rs_world_new("mobile_manipulator", p, 8, 1, &st);
        if (!w)
            continue; /* an arm starts inside the table */
        done++;
        const double *x = w->data->x, *sn = w->data->sensors;
        double u[6] = {0};
        int bad = 0;
        for (int k = 0; k < 200 && !bad; k++) {
            if (k % 40 == 0) {
                for (int j = 2; j < 6; j++)
                    u[j] = urand(-1.5, 1.5);
                CHECK_OK(rs_set_commands(w->model, w->data, 0, u, 6, &st), st);
            }
            double before[8], T0 = kinetic(x + 3, 0.45, 0.40, 2.0, 1.5) +
                                   kinetic(x + 7, 0.45, 0.40, 2.0, 1.5);
            memcpy(before, x + 3, sizeof before);
            int rc = rs_step(w->model, w->data, 1, &st);
            if (rc == RS_ESIMFAIL && strstr(st.message, "Painleve")) {
                /* reported, not silent: the world holds the state where it stopped, outside
                 * the table, and the next step refuses the same way */
                jammed++;
                fprintf(stderr, "seed %d (mu %g), control step %d: %s\n", seed0 + r, mu[0], k,
                        st.message);
                for (int a = 0; a < 2; a++)
                    CHECK(table_distance(sn + 8 * a, ty[0], x0[0], x1[0]) >= -1e-9,
                          "seed %d: stopped inside the table", seed0 + r);
                rc = rs_step(w->model, w->data, 1, &st);
                CHECK(rc == RS_ESIMFAIL && strstr(st.message, "Painleve"),
                      "seed %d: the next step goes on (%d)", seed0 + r, rc);
                break;
            }
            CHECK_OK(rc, st);
            if (rc < 0)
                break;
            double T1 = kinetic(x + 3, 0.45, 0.40, 2.0, 1.5) + kinetic(x + 7, 0.45, 0.40, 2.0, 1.5);
            double work = 0;
            for (int a = 0; a < 2; a++)
                for (int j = 0; j < 2; j++)
                    work += u[2 + 2 * a + j] * (x[3 + 4 * a + j] - before[4 * a + j]);
            double gain = T1 - T0 - work, in = -INFINITY;
            for (int a = 0; a < 2; a++)
                in = fmax(in, -table_distance(sn + 8 * a, ty[0], x0[0], x1[0]));
            worst_in = fmax(worst_in, in);
            worst_gain = fmax(worst_gain, gain);
            if (in > 1e-9 || gain > 1e-6 * (1 + T0)) {
                fprintf(stderr, "seed %d, control step %d: %.3g m inside the table, energy "
                        "gain beyond the work %.3g J\n", seed0 + r, k, in, gain);
                bad = 1;
            }
        }
        violations += bad;
        rs_world_destroy(&w);
    }
    CHECK(done >= runs / 3, "only %d of %d random scenarios could start", done, runs);
    printf("table_random (mu %s): %d scenarios, %d stopped with a reported Painleve jam\n",
           mu_hi > 0 ? "random" : "0.5", done, jammed);
    CHECK(violations == 0, "%d of %d random scenarios broke the table or energy (worst %.3g m "
          "inside, %.3g J gained)", violations, done, worst_in, worst_gain);
    CHECK(jammed <= max_jammed, "%d of %d random scenarios stopped with Painleve (at most %d)",
          jammed, done, max_jammed);
}

int main(void)
{
    side_touch();
    table_random(4000, 0, 0, 0);
    table_random(9100, 0.3, 0.99, 0);
    worked_example();
    velocity_step();
    energy();
    passive_energy();
    passive_coast();
    contact();
    return rs_test_done("test_mobile_manipulator");
}
