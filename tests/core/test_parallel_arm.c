/* The dual two-link parallel arm against closed forms (the Example Robotic Systems chapter,
 * Klamp't). */
#include "rs_core.h"
#include "rs_robot.h"
#include "rs_test.h"
#include "arm_handle.h"
#include "robots/arm_common.h"

#include <string.h>

typedef arm_handle_t delta_t; /* sensors: x, y, vx, vy, tau1, tau2, stick1, stick2, limit1,
                                limit2, stretched, stretch */

static delta_t make_delta(const rs_param_t *p, size_t n)
{
    return arm_handle("parallel_arm", "delta", p, n);
}

static void all_finite(const delta_t *a, const char *when)
{
    int ok = 1;
    for (int i = 0; i < 6; i++)
        ok &= isfinite(a->x[i]);
    for (int i = 0; i < 12; i++)
        ok &= isfinite(a->s[i]);
    CHECK(ok, "state and sensors finite %s", when);
}

static double tight_rtol[] = {1e-12}, tight_atol[] = {1e-14};

/* ---- kinematics -------------------------------------------------------------------------- */

/* The chapter's example: L0 = 8, L1 = 5, L2 = 10, x = 0.2, y = 0.1 x + 10. */
static void seed_example(void)
{
    double x = 0.2, y = 0.1 * x + 10, q[2], p[2];
    int rc = parallel_ik(8, 5, 10, x, y, q);
    CHECK(rc == 0, "the chapter's point is reachable");
    parallel_fk(8, 5, 10, q, NULL, p, NULL);
    CHECK(fabs(p[0] - x) <= 1e-12 && fabs(p[1] - y) <= 1e-12, "FK(IK) = (%.17g, %.17g)", p[0],
          p[1]);
    /* the angles lie in the chapter's configuration square */
    CHECK(q[0] > 0 && q[0] < M_PI / 2 && q[1] > 0 && q[1] < M_PI / 2, "theta = (%.9f, %.9f)",
          q[0], q[1]);

    /* the chapter's numpy line: x from -3 to 3 step 0.2, y = 0.1 x + 10 */
    double worst = 0;
    for (int i = 0; i < 30; i++) {
        double xi = -3 + 0.2 * i, yi = 0.1 * xi + 10;
        CHECK(parallel_ik(8, 5, 10, xi, yi, q) == 0, "x = %g reachable", xi);
        parallel_fk(8, 5, 10, q, NULL, p, NULL);
        worst = fmax(worst, fmax(fabs(p[0] - xi), fabs(p[1] - yi)));
    }
    CHECK(worst <= 1e-12, "FK(IK) along the chapter's line: %.3g", worst);

    /* through the world: SetTarget gives the same setpoints */
    double L0[] = {8}, L1[] = {5}, L2[] = {10};
    rs_param_t pp[] = {{"delta", "L0", L0, 1}, {"delta", "L1", L1, 1}, {"delta", "L2", L2, 1}};
    delta_t a = make_delta(pp, 3);
    if (!a.w)
        return;
    rs_status_t st;
    double target[2] = {x, y};
    parallel_ik(8, 5, 10, x, y, q);
    rc = rs_set_target(a.w->model, a.w->data, a.e, target, 2, &st);
    const double *u = a.w->data->u + a.w->model->ent[a.e].u_off;
    CHECK(rc == 0 && u[0] == q[0] && u[1] == q[1], "setpoints (%g, %g): %s", u[0], u[1],
          st.message);
    rs_world_destroy(&a.w);
}

/* IK(FK(q)) = q over the configuration square; FK(IK(p)) = p over the reachable part of a grid;
 * the rest refused by SetTarget with OUT_OF_RANGE, changing nothing. */
static void grids(void)
{
    const double L0 = 0.08, L1 = 0.05, L2 = 0.10;
    double worst_q = 0;
    for (int i = 1; i < 40; i++)
        for (int k = 1; k < 40; k++) {
            double q[2] = {M_PI / 2 * i / 40, M_PI / 2 * k / 40}, p[2], b[2] = {NAN, NAN};
            parallel_fk(L0, L1, L2, q, NULL, p, NULL);
            CHECK(parallel_ik(L0, L1, L2, p[0], p[1], b) == 0, "IK at (%g, %g)", p[0], p[1]);
            worst_q = fmax(worst_q, fmax(fabs(b[0] - q[0]), fabs(b[1] - q[1])));
        }
    CHECK(worst_q <= 1e-10, "IK(FK(q)) - q up to %.3g", worst_q);

    delta_t a = make_delta(NULL, 0);
    if (!a.w)
        return;
    rs_status_t st;
    const double *u = a.w->data->u + a.w->model->ent[a.e].u_off;
    int in = 0, out = 0;
    double worst = 0;
    for (int i = 0; i <= 60; i++)
        for (int k = 0; k <= 50; k++) {
            double x = -0.15 + 0.3 * i / 60, y = -0.05 + 0.25 * k / 50;
            double target[2] = {x, y}, before[2] = {u[0], u[1]};
            int r = rs_reachable(a.w->model, a.e, x, y);
            int rc = rs_set_target(a.w->model, a.w->data, a.e, target, 2, &st);
            if (r == 1) {
                in++;
                double p[2];
                CHECK(rc == 0, "reachable (%g, %g) accepted: %s", x, y, st.message);
                parallel_fk(L0, L1, L2, u, NULL, p, NULL);
                worst = fmax(worst, fmax(fabs(p[0] - x), fabs(p[1] - y)));
                CHECK(u[0] >= 0 && u[0] <= M_PI / 2 && u[1] >= 0 && u[1] <= M_PI / 2,
                      "setpoints in the stops (%g, %g)", u[0], u[1]);
            } else {
                out++;
                CHECK(r == 0 && rc == RS_ERANGE && st.message[0] && u[0] == before[0] &&
                          u[1] == before[1],
                      "unreachable (%g, %g): rc %d '%s'", x, y, rc, st.message);
            }
        }
    CHECK(in > 200 && out > 200, "%d reachable and %d unreachable grid points", in, out);
    CHECK(worst <= 1e-12, "FK(IK(p)) - p up to %.3g over the grid", worst);

    /* the reasons */
    double far[2] = {0.0, 0.3}, above[2] = {0.0, -0.02}, side[2] = {0.06, 0.1};
    int rc = rs_set_target(a.w->model, a.w->data, a.e, far, 2, &st);
    CHECK(rc == RS_ERANGE && strstr(st.message, "L1 + L2"), "too far: %s", st.message);
    rc = rs_set_target(a.w->model, a.w->data, a.e, above, 2, &st);
    CHECK(rc == RS_ERANGE, "above the base: %s", st.message);
    rc = rs_set_target(a.w->model, a.w->data, a.e, side, 2, &st);
    CHECK(rc == RS_ERANGE && strstr(st.message, "stops"), "outside the stops: %s", st.message);
    double three[3] = {0.0, 0.1, 1};
    rc = rs_set_target(a.w->model, a.w->data, a.e, three, 3, &st);
    CHECK(rc == RS_EINVAL, "three values: %s", st.message);
    rs_world_destroy(&a.w);
}

/* The end-effector velocity against central differences of FK. */
static void jacobian(void)
{
    const double L0 = 0.08, L1 = 0.05, L2 = 0.10, h = 1e-6;
    double worst = 0;
    for (int i = 1; i < 15; i++)
        for (int k = 1; k < 15; k++) {
            double q[2] = {M_PI / 2 * i / 15, M_PI / 2 * k / 15}, p[2];
            for (int j = 0; j < 2; j++) {
                double qd[2] = {j == 0, j == 1}, v[2], qp[2] = {q[0], q[1]},
                       qm[2] = {q[0], q[1]}, pp[2], pm[2];
                parallel_fk(L0, L1, L2, q, qd, p, v);
                qp[j] += h;
                qm[j] -= h;
                parallel_fk(L0, L1, L2, qp, NULL, pp, NULL);
                parallel_fk(L0, L1, L2, qm, NULL, pm, NULL);
                for (int r = 0; r < 2; r++)
                    worst = fmax(worst, fabs((pp[r] - pm[r]) / (2 * h) - v[r]));
            }
        }
    CHECK(worst <= 1e-9, "velocity vs central differences: %.3g", worst);
}

/* ---- dynamics ---------------------------------------------------------------------------- */

/* A coasting servo with viscous damping: J wd = -mu_V w, w = w0 e^{-mu_V t / J}. */
static void damped_servo(void)
{
    double torque[] = {0, 0}, qd0[] = {2.0, -1.0};
    rs_param_t p[] = {{"delta", "actuator_mode", torque, 2}, {"delta", "theta_dot0", qd0, 2},
                      {"", "rtol", tight_rtol, 1}, {"", "atol", tight_atol, 1}};
    delta_t a = make_delta(p, 4);
    if (!a.w)
        return;
    step(&a, 50);
    double J = 1e-4, b = 1e-3, t = a.w->data->t;
    for (int j = 0; j < 2; j++) {
        CHECK_REL(a.x[2 + j], qd0[j] * exp(-b * t / J), 1e-9, 1e-3);
        CHECK_REL(a.x[j], M_PI / 4 + qd0[j] * J / b * (1 - exp(-b * t / J)), 1e-10, 1.0);
    }
    rs_world_destroy(&a.w);
}

/* Driving a servo into its hard stop: an event at the closed-form time, exactly at the stop, at
 * rest, no NaN; pulling back releases it. */
static void hard_stop(void)
{
    double torque[] = {0, 0}, b0[] = {0, 0};
    rs_param_t p[] = {{"delta", "actuator_mode", torque, 2}, {"delta", "mu_V", b0, 2},
                      {"", "rtol", tight_rtol, 1}, {"", "atol", tight_atol, 1}};
    delta_t a = make_delta(p, 4);
    if (!a.w)
        return;
    double tau = 0.01, J = 1e-4;
    command(&a, tau, 0);
    double t_star = sqrt(2 * (M_PI / 4) * J / tau), t_ev = NAN;
    int stops = 0;
    for (int k = 0; k < 30; k++) {
        step(&a, 1);
        all_finite(&a, "driving into the stop");
        const rs_event_t *ev = find_event(&a, "stop");
        if (ev) {
            stops++;
            t_ev = ev->t;
            CHECK(ev->value == 1, "servo %g", ev->value);
            CHECK_REL(ev->before[2], tau / J * t_star, 1e-8, 1.0);
        }
    }
    CHECK(stops == 1, "%d stop events", stops);
    CHECK(fabs(t_ev - t_star) < 1e-9, "stop at %.12g s, closed form %.12g", t_ev, t_star);
    CHECK(a.x[0] == M_PI / 2 && a.x[2] == 0, "at theta_max, at rest: %.17g, %g", a.x[0], a.x[2]);
    /* servo 2 has no torque: its rate stays exactly 0. Its angle is exact up to one rounding:
     * at a root ARKODE returns the state from its dense-output interpolant, whose weights sum
     * to 1 only up to rounding (Dormand-Prince's moves a constant pi/4 by one ulp) */
    CHECK(fabs(a.x[1] - M_PI / 4) <= nextafter(M_PI / 4, 1.0) - M_PI / 4 && a.x[3] == 0,
          "servo 2 untouched: %.3g rad off, rate %g", a.x[1] - M_PI / 4, a.x[3]);
    CHECK(strcmp(mode(&a), "max,slip") == 0 && a.s[8] == 1, "mode %s, limit1 %g", mode(&a),
          a.s[8]);
    step(&a, 100);
    CHECK(a.x[0] == M_PI / 2, "held at the stop");
    command(&a, -tau, 0);
    step(&a, 1);
    CHECK(find_event(&a, "release") != NULL, "release event");
    step(&a, 5);
    CHECK(a.x[0] < M_PI / 2 && strcmp(mode(&a), "slip,slip") == 0, "moves off: %g %s", a.x[0],
          mode(&a));
    rs_world_destroy(&a.w);
}

/* Driving both servos outward into the stretched linkage (L2 shortened so that u = 2 L2 lies
 * inside the stops): the symmetric motion t(t) = pi/4 - tau/(2J) t^2 reaches u = L0 + 2 L1 cos t
 * = 2 L2 at cos t* = (2 L2 - L0) / (2 L1); there the linkage stops them with an event, no NaN. */
static void stretched(void)
{
    double torque[] = {0, 0}, b0[] = {0, 0}, L2v[] = {0.08};
    rs_param_t p[] = {{"delta", "actuator_mode", torque, 2}, {"delta", "mu_V", b0, 2},
                      {"delta", "L2", L2v, 1}, {"", "rtol", tight_rtol, 1},
                      {"", "atol", tight_atol, 1}};
    delta_t a = make_delta(p, 5);
    if (!a.w)
        return;
    const double L0 = 0.08, L1 = 0.05, L2 = 0.08, J = 1e-4, tau = 0.01;
    double th_star = acos((2 * L2 - L0) / (2 * L1));
    double t_star = sqrt((M_PI / 4 - th_star) * 2 * J / tau), t_ev = NAN;
    command(&a, -tau, -tau);
    int n = 0;
    for (int k = 0; k < 30; k++) {
        step(&a, 1);
        all_finite(&a, "stretching");
        const rs_event_t *ev = find_event(&a, "stretched");
        if (ev) {
            n++;
            t_ev = ev->t;
        }
    }
    CHECK(n == 1, "%d stretched events", n);
    CHECK(fabs(t_ev - t_star) < 1e-9, "stretched at %.12g s, closed form %.12g", t_ev, t_star);
    CHECK(fabs(a.x[0] - th_star) < 1e-12 && fabs(a.x[1] - th_star) < 1e-12,
          "stopped at theta* = %.15g: (%.15g, %.15g)", th_star, a.x[0], a.x[1]);
    CHECK(a.x[2] == 0 && a.x[3] == 0, "servos at rest");
    CHECK(strcmp(mode(&a), "stretched") == 0 && a.s[10] == 1 && fabs(a.s[11] - 1) < 1e-12,
          "mode %s, stretched %g, stretch %.15g", mode(&a), a.s[10], a.s[11]);
    /* the end effector is at the middle up to the forward kinematics' sensitivity at the
     * stretched linkage: v = sqrt(L2^2 - u^2/4) ~ sqrt(L2 (2 L2 - u)), so u one rounding
     * (3e-17 m) short of 2 L2 puts it 1.5e-9 m below; within 1e-15 m of 2 L2, at most
     * sqrt(L2 1e-15) = 9e-9 m */
    double gap = L0 + L1 * cos(a.x[0]) + L1 * cos(a.x[1]) - 2 * L2;
    CHECK(fabs(gap) < 1e-15, "u - 2 L2 = %.3g m", gap);
    CHECK(fabs(a.s[0]) < 1e-12 && fabs(a.s[1] - L1 * sin(th_star)) < 1e-12 + sqrt(L2 * 1e-15),
          "end effector at (%.3g, %.15g), the straight linkage's middle", a.s[0], a.s[1]);
    double held[2] = {a.x[0], a.x[1]};
    step(&a, 100);
    CHECK(a.x[0] == held[0] && a.x[1] == held[1], "held while pushed");
    CHECK(a.w->data->nevents == 0, "no events while held");

    /* pulling back lets go */
    command(&a, tau, tau);
    step(&a, 1);
    CHECK(find_event(&a, "unstretched") != NULL, "unstretched event");
    step(&a, 5);
    CHECK(a.x[0] > th_star && strcmp(mode(&a), "slip,slip") == 0 && a.s[11] < 1,
          "moves back: %g %s", a.x[0], mode(&a));
    rs_world_destroy(&a.w);

    /* one servo alone: it goes taut at its angle at u = 2 L2 with the other at pi/4 (by
     * bisection); the plastic impact takes only the velocity across the set, qd+ = qd- -
     * M^-1 g (g . qd-) / (g . M^-1 g) with g = grad u (equal J: qd- less its part along g), and
     * the taut linkage drags the torque-free servo 2 along the set (u = 2 L2 held) */
    a = make_delta(p, 5);
    if (!a.w)
        return;
    command(&a, -tau, 0);
    double lo = 0, hi = M_PI / 4;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi), q[2] = {mid, M_PI / 4};
        if (parallel_u(L0, L1, q, NULL) > 2 * L2)
            lo = mid;
        else
            hi = mid;
    }
    const rs_event_t *taut = NULL;
    int taut_steps = 0;
    for (int k = 0; k < 60 && !taut; k++) {
        step(&a, 1);
        taut = find_event(&a, "stretched");
    }
    CHECK(taut != NULL, "stretched event");
    if (taut) {
        const double *q = taut->after, *qm = taut->before + 2, *qp = taut->after + 2;
        double g[2];
        parallel_u(L0, L1, q, g);
        double gq = g[0] * qm[0] + g[1] * qm[1], gg = g[0] * g[0] + g[1] * g[1];
        CHECK(fabs(q[0] - lo) < 1e-10 && fabs(q[1] - M_PI / 4) < 1e-10,
              "taut at (%.12g, %.12g), bisection %.12g", q[0], q[1], lo);
        for (int j = 0; j < 2; j++)
            CHECK(fabs(qp[j] - (qm[j] - g[j] * gq / gg)) < 1e-12 * (fabs(qm[0]) + fabs(qm[1])),
                  "rate %d after the impact %.15g, closed form %.15g", j + 1, qp[j],
                  qm[j] - g[j] * gq / gg);
        CHECK(fabs(g[0] * qp[0] + g[1] * qp[1]) < 1e-12 * sqrt(gg) * (fabs(qm[0]) + fabs(qm[1])),
              "no velocity across the set after the impact");
        CHECK(qp[1] != 0, "servo 2 dragged along");
    }
    while (strcmp(mode(&a), "stretched") == 0 && taut_steps++ < 200) {
        CHECK(fabs(parallel_u(L0, L1, a.x, NULL) - 2 * L2) < 1e-9 * L2, "u = 2 L2 while taut: %.3g",
              parallel_u(L0, L1, a.x, NULL) - 2 * L2);
        step(&a, 1);
    }
    all_finite(&a, "stretching one servo");
    CHECK(a.x[1] > M_PI / 4, "servo 2 dragged outward-down: %g", a.x[1]);
    rs_world_destroy(&a.w);
}

/* The torque cap switches by events: a PD step response (kI = 0, mu_V = 0) starts saturated,
 * theta = theta0 + (tau_max / J) t^2 / 2 exactly, leaves the cap when the raw PD torque falls to
 * tau_max (a quadratic in t), then follows the damped oscillator J e'' + kD e' + kP e = 0 from
 * there until it saturates the other way (after t = 0.044 s for these numbers). */
static void saturation(void)
{
    double kP[] = {0.5, 0.5}, kI[] = {0, 0}, kD[] = {0.005, 0.005}, cap[] = {0.05, 0.05},
           b0[] = {0, 0};
    rs_param_t p[] = {{"delta", "kP", kP, 2},      {"delta", "kI", kI, 2},
                      {"delta", "kD", kD, 2},      {"delta", "tau_max", cap, 2},
                      {"delta", "mu_V", b0, 2},    {"", "rtol", tight_rtol, 1},
                      {"", "atol", tight_atol, 1}};
    delta_t a = make_delta(p, 7);
    if (!a.w)
        return;
    const double J = 1e-4, th0 = M_PI / 4, thD = M_PI / 4 + 0.5, acc = cap[0] / J;
    command(&a, thD, th0);
    step(&a, 3);
    double t = a.w->data->t;
    CHECK(fabs(a.x[0] - (th0 + 0.5 * acc * t * t)) < 1e-12, "saturated: %.15g vs %.15g", a.x[0],
          th0 + 0.5 * acc * t * t);
    CHECK(a.s[4] == cap[0] && a.s[5] == 0, "applied torques (%g, %g)", a.s[4], a.s[5]);
    /* -kP e - kD e' = tau_max with e = th0 + acc t^2 / 2 - thD, e' = acc t */
    double te = (-kD[0] * acc + sqrt(kD[0] * kD[0] * acc * acc +
                                     2 * kP[0] * acc * (kP[0] * (thD - th0) - cap[0]))) /
                (kP[0] * acc);
    double e0 = th0 + 0.5 * acc * te * te - thD, ed0 = acc * te;
    double zw = kD[0] / (2 * J), wd = sqrt(kP[0] / J - zw * zw);
    step(&a, 1);
    t = a.w->data->t - te;
    CHECK(t > 0 && t < 0.0127, "checked between the switches (%g s after leaving the cap)", t);
    double C = (ed0 + zw * e0) / wd;
    double e = exp(-zw * t) * (e0 * cos(wd * t) + C * sin(wd * t));
    double ed = exp(-zw * t) * (-zw * (e0 * cos(wd * t) + C * sin(wd * t)) +
                                (-e0 * wd * sin(wd * t) + C * wd * cos(wd * t)));
    CHECK(fabs(a.x[0] - (thD + e)) < 1e-10, "after the cap: theta1 %.15g, closed form %.15g",
          a.x[0], thD + e);
    CHECK(fabs(a.x[2] - ed) < 1e-8, "after the cap: rate %.15g, closed form %.15g", a.x[2], ed);
    CHECK(fabs(a.s[4] - (-kP[0] * e - kD[0] * ed)) < 1e-8 && fabs(a.s[4]) < cap[0],
          "unsaturated torque %.12g", a.s[4]);
    step(&a, 1);
    CHECK(a.s[4] == -cap[0], "saturated the other way: %g", a.s[4]);
    rs_world_destroy(&a.w);
}

/* Regression: with the cap a clamp inside the right-hand side, this setpoint jump (one servo
 * leaving the cap right at the restart) made ERKStep fail its error test at t = 5 s. Now the
 * cap switches by events and the run goes on, into the stretched linkage. */
static void setpoint_jump_regression(void)
{
    double L2v[] = {0.08};
    rs_param_t p[] = {{"delta", "L2", L2v, 1}};
    delta_t a = make_delta(p, 1);
    if (!a.w)
        return;
    rs_status_t st;
    command(&a, 0.1, 1.2);
    int rc = rs_step(a.w->model, a.w->data, 500, &st);
    CHECK_OK(rc, st);
    command(&a, 1.0, 0.2);
    rc = rs_step(a.w->model, a.w->data, 200, &st);
    CHECK_OK(rc, st);
    all_finite(&a, "after the setpoint jump");
    CHECK(parallel_u(0.08, 0.05, a.x, NULL) <= 2 * 0.08 * (1 + 1e-9), "closure: mode %s, u %.12g",
          mode(&a), parallel_u(0.08, 0.05, a.x, NULL));
    rs_world_destroy(&a.w);
}

/* PID to a Cartesian target; the torque cap holds throughout. */
static void pid_target(void)
{
    double kP[] = {0.5, 0.5}, kI[] = {0.5, 0.5}, kD[] = {0.02, 0.02}, cap[] = {0.02, 0.03};
    rs_param_t p[] = {{"delta", "kP", kP, 2}, {"delta", "kI", kI, 2}, {"delta", "kD", kD, 2},
                      {"delta", "tau_max", cap, 2}};
    delta_t a = make_delta(p, 4);
    if (!a.w)
        return;
    rs_status_t st;
    double goal[2] = {0.02, 0.12};
    CHECK(rs_reachable(a.w->model, a.e, goal[0], goal[1]) == 1, "goal reachable");
    int rc = rs_set_target(a.w->model, a.w->data, a.e, goal, 2, &st);
    CHECK_OK(rc, st);
    double worst[2] = {0, 0};
    int saturated = 0;
    for (int k = 0; k < 3000; k++) {
        step(&a, 1);
        for (int j = 0; j < 2; j++) {
            worst[j] = fmax(worst[j], fabs(a.s[4 + j]));
            saturated += fabs(a.s[4 + j]) == cap[j];
        }
    }
    CHECK(fabs(a.s[0] - goal[0]) < 1e-6 && fabs(a.s[1] - goal[1]) < 1e-6,
          "end effector at (%.9f, %.9f)", a.s[0], a.s[1]);
    CHECK(worst[0] <= cap[0] && worst[1] <= cap[1], "applied torques up to (%g, %g)", worst[0],
          worst[1]);
    CHECK(saturated > 0, "the cap was reached (%d samples)", saturated);

    /* torque mode refuses a target */
    double torque[] = {0, 1};
    rs_param_t pm = {"delta", "actuator_mode", torque, 2};
    rc = rs_world_set_params(a.w, &pm, 1, &st);
    CHECK_OK(rc, st);
    rc = rs_set_target(a.w->model, a.w->data, a.e, goal, 2, &st);
    CHECK(rc == RS_EPRECOND && strstr(st.message, "PID"), "torque mode: %d %s", rc, st.message);
    rs_world_destroy(&a.w);
}

/* Bad parameters: specific codes, nothing changed. */
static void bad_params(void)
{
    rs_status_t st;
    double lo[] = {1.0, 0}, hi[] = {0.5, 1.5}, wide[] = {-2, 0}, q00[] = {0, 0}, short_L2[] = {0.05},
           three[] = {1, 2, 3}, nan1[] = {NAN}, mode_bad[] = {1, 0.3};
    struct {
        rs_param_t p[2];
        size_t n;
        int code;
        const char *says;
    } cases[] = {
        {{{"delta", "theta_min", lo, 2}, {"delta", "theta_max", hi, 2}}, 2, RS_EINVAL,
         "below theta_max"},
        {{{"delta", "theta_min", lo, 2}}, 1, RS_EINVAL, "theta0"},
        {{{"delta", "theta_min", wide, 2}}, 1, RS_ERANGE, "outside"},
        {{{"delta", "L2", short_L2, 1}, {"delta", "theta0", q00, 2}}, 2, RS_EINVAL,
         "cannot be assembled"},
        {{{"delta", "J", three, 3}}, 1, RS_EINVAL, "2 values"},
        {{{"delta", "theta_min", three, 1}}, 1, RS_EINVAL, "2 values"},
        {{{"delta", "L1", nan1, 1}}, 1, RS_EINVAL, "not finite"},
        {{{"delta", "actuator_mode", mode_bad, 2}}, 1, RS_EINVAL, "0 (torque) or 1 (PID)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rs_world_t *w = rs_world_new("parallel_arm", cases[i].p, cases[i].n, 0, &st);
        CHECK(w == NULL && st.code == cases[i].code && strstr(st.message, cases[i].says),
              "case %zu: code %d (%s) message '%s'", i, st.code, rs_errname(st.code), st.message);
        rs_world_destroy(&w);
    }
    delta_t a = make_delta(NULL, 0);
    if (!a.w)
        return;
    rs_param_t pb[] = {{"delta", "theta_min", lo, 2}, {"delta", "theta_max", hi, 2}};
    int rc = rs_world_set_params(a.w, pb, 2, &st);
    CHECK(rc == RS_EINVAL && a.w->model->ent[a.e].p[ARM_P_THETA_MIN] == 0 &&
              a.w->model->ent[a.e].p[ARM_P_THETA_MAX] == M_PI / 2,
          "SetParams refused, stops unchanged (%d %s)", rc, st.message);
    rs_world_destroy(&a.w);
}

/* The workspace boundary: the image of the configuration square's edges. */
static void workspace(void)
{
    delta_t a = make_delta(NULL, 0);
    if (!a.w)
        return;
    rs_status_t st;
    double xy[2 * 200];
    int n = rs_workspace(a.w->model, a.e, xy, 200, &st);
    CHECK(n == 200, "%d boundary points", n);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double q[2] = {NAN, NAN};
        CHECK(parallel_ik(0.08, 0.05, 0.10, xy[2 * i], xy[2 * i + 1], q) == 0, "IK of point %d", i);
        double edge = fmin(fmin(fabs(q[0]), fabs(q[0] - M_PI / 2)),
                           fmin(fabs(q[1]), fabs(q[1] - M_PI / 2)));
        worst = fmax(worst, edge);
    }
    CHECK(worst < 1e-9, "boundary points map to the square's edges (off by %.3g)", worst);
    /* the centre of the square maps inside */
    double q[2] = {M_PI / 4, M_PI / 4}, p[2];
    parallel_fk(0.08, 0.05, 0.10, q, NULL, p, NULL);
    CHECK(rs_reachable(a.w->model, a.e, p[0], p[1]) == 1, "centre reachable");
    CHECK(rs_reachable(a.w->model, a.e, 0.0, 0.0) == 0, "the base is not");
    rs_world_destroy(&a.w);
}

/* ApplyWrench: a couple on a servo's link for one control step is that servo's torque for the
 * step (torque mode, within the cap): the same trajectory, then and after. */
static void wrench(void)
{
    double modes[2] = {0, 0};
    rs_param_t p[] = {{"delta", "actuator_mode", modes, 2}};
    delta_t a = make_delta(p, 1), b = make_delta(p, 1);
    if (!a.w || !b.w)
        return;
    rs_status_t st;
    double tau = 0.05;
    int rc = rs_apply_wrench(a.w->model, a.w->data, a.e, "link2", &tau, 1, &st);
    CHECK_OK(rc, st);
    command(&b, 0.0, tau);
    step(&a, 1);
    step(&b, 1);
    CHECK(a.x[3] != 0.0, "the couple turned servo 2");
    for (int i = 0; i < 4; i++)
        CHECK_REL(a.x[i], b.x[i], 1e-14, 1e-15);
    command(&b, 0.0, 0.0);
    step(&a, 30);
    step(&b, 30);
    for (int i = 0; i < 4; i++)
        CHECK_REL(a.x[i], b.x[i], 1e-14, 1e-15);
    CHECK(rs_apply_wrench(a.w->model, a.w->data, a.e, "end_effector", &tau, 1, &st) ==
              RS_ENOTFOUND,
          "no end-effector wrench on the delta yet: %s", st.message);
    rs_world_destroy(&a.w);
    rs_world_destroy(&b.w);
}

/* ---- energy at order 8 ------------------------------------------------------------------- */

static double unit_random(uint64_t *s) /* splitmix64, in [0, 1) */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/* Torque-mode servos between close stops, integrated with Verner 8(7) (the method of a world
 * the serial arm shares), over random seeded scenarios: the kinetic energy 1/2 J qd^2 never
 * gains more over a control step than the work tau (q1 - q0) of the capped torques, held
 * constant through it. Each stop and release restarts the integration on a guard at 0, where
 * an event's state must still be the trajectory's own. */
static void order8_energy(void)
{
    /* control step, steps a command is held, stop gap min + span, scenarios */
    static const struct {
        double control_dt;
        int hold;
        double gap, span;
        int n;
    } sets[] = {{0.03, 1, 0.01, 0.1, 100}, {0.05, 2, 0.02, 0.3, 100}};
    uint64_t rng = 20240611;
    int worlds = 0, events = 0, excess = 0;
    for (size_t set = 0; set < sizeof sets / sizeof sets[0]; set++)
        for (int sc = 0; sc < sets[set].n; sc++) {
            double order[] = {8}, cdt[] = {sets[set].control_dt}, torque[] = {0, 0};
            double lo[2], hi[2], q0[2], qd0[2], muV[2], cap[2];
            for (int j = 0; j < 2; j++) {
                lo[j] = 1.2 * unit_random(&rng) - 0.4;
                hi[j] = lo[j] + sets[set].gap + sets[set].span * unit_random(&rng);
                q0[j] = lo[j] + (hi[j] - lo[j]) * unit_random(&rng);
                qd0[j] = 8.0 * unit_random(&rng) - 4.0;
                muV[j] = unit_random(&rng) < 0.5 ? 0.0 : 0.003 * unit_random(&rng);
                cap[j] = 0.05 + 0.5 * unit_random(&rng);
            }
            rs_param_t p[] = {{"", "control_dt", cdt, 1},    {"", "erk_order", order, 1},
                              {"delta", "actuator_mode", torque, 2},
                              {"delta", "theta_min", lo, 2}, {"delta", "theta_max", hi, 2},
                              {"delta", "theta0", q0, 2},    {"delta", "theta_dot0", qd0, 2},
                              {"delta", "mu_V", muV, 2},     {"delta", "tau_max", cap, 2}};
            delta_t a = make_delta(p, sizeof p / sizeof p[0]);
            if (!a.w)
                return;
            worlds++;
            const rs_model_t *m = a.w->model;
            double J[2] = {rs_model_param(m, a.e, "J", 0), rs_model_param(m, a.e, "J", 1)};
            double tau[2] = {0, 0};
            for (int k = 0; k < 120 && !excess; k++) {
                if (k % sets[set].hold == 0) {
                    for (int j = 0; j < 2; j++)
                        tau[j] = cap[j] * (3.0 * unit_random(&rng) - 1.5);
                    command(&a, tau[0], tau[1]);
                }
                double x0[4], W = 0, E0 = 0, E1 = 0;
                memcpy(x0, a.x, sizeof x0);
                step(&a, 1);
                events += a.w->data->nevents;
                for (int j = 0; j < 2; j++) {
                    double applied = fmin(fmax(tau[j], -cap[j]), cap[j]);
                    W += applied * (a.x[j] - x0[j]);
                    E0 += 0.5 * J[j] * x0[2 + j] * x0[2 + j];
                    E1 += 0.5 * J[j] * a.x[2 + j] * a.x[2 + j];
                }
                double tol = 1e-6 * (fabs(E0) + fabs(E1) + fabs(W)) + 1e-12;
                if (E1 - E0 > W + tol) {
                    excess++;
                    CHECK(0, "set %zu scenario %d step %d: energy %.9g -> %.9g J over work "
                          "%.9g J (%.3g J more)", set, sc, k, E0, E1, W, E1 - E0 - W);
                }
            }
            rs_world_destroy(&a.w);
        }
    CHECK(worlds == 200 && events > 1000, "%d worlds, %d events (stops and releases)", worlds,
          events);
}

int main(void)
{
    wrench();
    seed_example();
    grids();
    jacobian();
    damped_servo();
    hard_stop();
    saturation();
    setpoint_jump_regression();
    stretched();
    pid_target();
    bad_params();
    workspace();
    order8_energy();
    return rs_test_done("test_parallel_arm");
}
