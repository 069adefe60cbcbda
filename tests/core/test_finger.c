/* The 1D finger and object (the 1D Robot article) against closed forms and conservation laws. */
#include "rs_robot.h"
#include "rs_test.h"
#include "world_with.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { XF, VF, XO, VO, IMP, WORK };
enum { S_TIP, S_N, S_J };

/* ---- helpers ---------------------------------------------------------------------------- */

/* Events seen over a run, copied out of each Step's log. */
#define LOG_MAX 20000
static rs_event_t evlog[LOG_MAX];
static int nlog;

/* A finger world with the parameters kv (NULL-terminated), the event log emptied for it. */
static rs_world_t *finger_with(const kv_t *kv)
{
    nlog = 0;
    return world_with("finger", "finger", kv);
}

static const char *kind(const rs_world_t *w, const rs_event_t *ev)
{
    return rs_event_kind_name(w->model, ev);
}

static int count_events(const rs_world_t *w, const char *name)
{
    int n = 0;
    for (int i = 0; i < nlog; i++)
        n += !strcmp(kind(w, &evlog[i]), name);
    return n;
}

/* The first logged event of kind `name`, or NULL. */
static const rs_event_t *first_event(const rs_world_t *w, const char *name)
{
    for (int i = 0; i < nlog; i++)
        if (!strcmp(kind(w, &evlog[i]), name))
            return &evlog[i];
    return NULL;
}

static void set_force(rs_world_t *w, double f)
{
    rs_status_t st;
    int rc = rs_set_commands(w->model, w->data, 0, &f, 1, &st);
    CHECK_OK(rc, st);
}

/* Step n control steps one at a time, logging events and checking the invariants that hold at
 * every step: finite state, gap >= -1e-9, contact modes keep gap and relative velocity exactly
 * 0. Returns the rs_step code of the first failure, or 0. */
static int run(rs_world_t *w, int n)
{
    rs_status_t st;
    for (int k = 0; k < n; k++) {
        int rc = rs_step(w->model, w->data, 1, &st);
        CHECK_OK(rc, st);
        if (rc)
            return rc;
        for (int i = 0; i < w->data->nevents && nlog < LOG_MAX; i++)
            evlog[nlog++] = w->data->events[i];
        const double *x = w->data->x;
        const char *mode = rs_mode_name(w->model, w->data, 0);
        for (int i = 0; i < 6; i++)
            CHECK(isfinite(x[i]), "state %d is %g at t = %g", i, x[i], w->data->t);
        CHECK(x[XO] - x[XF] >= -1e-9, "gap %.3g at t = %g", x[XO] - x[XF], w->data->t);
        if (!strncmp(mode, "contact", 7))
            CHECK(x[XO] == x[XF] && x[VO] == x[VF], "mode %s with gap %.3g, dv %.3g at t = %g",
                  mode, x[XO] - x[XF], x[VO] - x[VF], w->data->t);
        if (!strcmp(mode, "contact_stuck"))
            CHECK(x[VF] == 0 && x[VO] == 0, "stuck but v = %g at t = %g", x[VF], w->data->t);
        if (!strcmp(mode, "separated_stuck"))
            CHECK(x[VO] == 0, "object stuck but v_o = %g at t = %g", x[VO], w->data->t);
    }
    return 0;
}

static void run_to(rs_world_t *w, double t)
{
    run(w, (int)llround((t - w->data->t) / w->model->control_dt));
}

/* Contact force of the sliding-together formula for the default drag laws. */
static double n_slide_default(double fa, double v)
{
    double mf = 1, mo = 1, fk = 0.5;
    double df = v * fabs(v), dobj = 0.02 * v;
    return (mo * (fa - df) + mf * (fk * (v >= 0 ? 1 : -1) + dobj)) / (mf + mo);
}

/* ---- pushing from rest against quadratic drag --------------------------------------------- */

/* v = sqrt(F/c) tanh(sqrt(F c) t / m), x = (m/c) ln cosh(sqrt(F c) t / m); touch at x = x_o. */
static void push_quadratic(double m, double c, double fa, int use_schedule)
{
    kv_t kv[] = {{"finger_mass", m}, {"finger_drag", c}, {"rtol", 1e-12}, {"atol", 1e-14},
                 {NULL, 0}};
    rs_world_t *w = finger_with(kv);
    if (!w)
        return;
    if (use_schedule) {
        double t[] = {0, 100}, v[] = {fa, fa};
        rs_status_t st;
        int rc = rs_set_schedule(w->model, w->data, 0, 0, t, v, 2, &st);
        CHECK_OK(rc, st);
    } else {
        set_force(w, fa);
    }
    double k = sqrt(fa * c) / m, vt = sqrt(fa / c);
    double t_touch = acosh(exp(1.5 * c / m)) / k;
    double worst = 0;
    while (w->data->t + w->model->control_dt < t_touch) {
        run(w, 1);
        double t = w->data->t;
        double xe = (m / c) * log(cosh(k * t)), ve = vt * tanh(k * t);
        worst = fmax(worst, fabs(w->data->x[XF] - xe) / fmax(xe, 1e-3));
        CHECK_REL(w->data->x[VF], ve, 1e-9, 1e-6);
    }
    CHECK(worst < 1e-9, "x_f against ln cosh: worst relative error %.3g", worst);
    CHECK(nlog == 0, "%d events before the touch", nlog);
    run(w, 2);
    const rs_event_t *touch = first_event(w, "touch");
    CHECK(touch != NULL, "no touch");
    if (touch) {
        CHECK_REL(touch->t, t_touch, 1e-8, 1e-8);
        CHECK(fabs(touch->t - t_touch) < 1e-11, "touch at %.17g, closed form %.17g (err %.3g)",
              touch->t, t_touch, touch->t - t_touch);
        double v_touch = vt * tanh(k * t_touch);
        CHECK_REL(touch->before[VF], v_touch, 1e-9, 1e-9);
        CHECK_REL(touch->value, v_touch, 1e-9, 1e-9); /* the closing speed, object at rest */
        CHECK(touch->after[XF] == touch->after[XO], "positions set equal at the touch");
    }
    rs_world_destroy(&w);
}

/* With the default tolerances (what an agent gets) the first touch is still within 1e-8. */
static void touch_time_default_tolerances(void)
{
    rs_world_t *w = finger_with(NULL);
    if (!w)
        return;
    set_force(w, 0.7);
    run_to(w, 3.0);
    double t_touch = acosh(exp(1.5)) / sqrt(0.7);
    const rs_event_t *touch = first_event(w, "touch");
    CHECK(touch && fabs(touch->t - t_touch) <= 1e-8 * t_touch, "touch at %.17g, expected %.17g",
          touch ? touch->t : NAN, t_touch);
    rs_world_destroy(&w);
}

/* ---- a coasting object ------------------------------------------------------------------ */

/* Linear drag, no friction: v = v0 exp(-c t / m), x = x0 + (m v0 / c)(1 - exp(-c t / m)). */
static void coast_linear(double m, double c, double v0)
{
    kv_t kv[] = {{"object_mass", m}, {"object_drag", c}, {"object_v0", v0},
                 {"static_friction", 0}, {"kinetic_friction", 0}, {"rtol", 1e-12},
                 {"atol", 1e-14}, {NULL, 0}};
    rs_world_t *w = finger_with(kv);
    if (!w)
        return;
    for (int s = 1; s <= 5; s++) {
        run_to(w, s);
        double t = w->data->t, ve = v0 * exp(-c * t / m);
        CHECK_REL(w->data->x[VO], ve, 1e-10, 1e-12);
        CHECK_REL(w->data->x[XO], 1.5 + m * v0 / c * (1 - exp(-c * t / m)), 1e-11, 1.0);
        CHECK(w->data->x[XF] == 0 && w->data->x[VF] == 0, "the finger stayed put");
    }
    CHECK(nlog == 0, "%d events while coasting", nlog);
    CHECK(!strcmp(rs_mode_name(w->model, w->data, 0), "separated"), "mode %s",
          rs_mode_name(w->model, w->data, 0));
    rs_world_destroy(&w);
}

/* Kinetic friction only: stops at t = m v0 / F_k after m v0^2 / (2 F_k) and stays stopped. */
static void coast_kinetic(double m, double fk, double v0)
{
    kv_t kv[] = {{"object_mass", m}, {"object_drag", 0}, {"object_v0", v0},
                 {"static_friction", fk * 1.5}, {"kinetic_friction", fk}, {"rtol", 1e-12},
                 {"atol", 1e-14}, {NULL, 0}};
    rs_world_t *w = finger_with(kv);
    if (!w)
        return;
    double t_stop = m * fabs(v0) / fk, dist = m * v0 * v0 / (2 * fk) * (v0 > 0 ? 1 : -1);
    run_to(w, floor(t_stop * 100) / 100 - 0.5);
    double t = w->data->t;
    CHECK_REL(w->data->x[VO], v0 - (v0 > 0 ? 1 : -1) * fk / m * t, 1e-11, 1e-9);
    run_to(w, t_stop + 3.0);
    CHECK(count_events(w, "stick") == 1, "%d stick events", count_events(w, "stick"));
    CHECK(nlog == 1, "%d events (expected the stick only)", nlog);
    const rs_event_t *stick = first_event(w, "stick");
    if (stick) {
        CHECK(fabs(stick->t - t_stop) < 1e-10, "stick at %.17g, closed form %.17g (err %.3g)",
              stick->t, t_stop, stick->t - t_stop);
        CHECK(stick->after[VO] == 0.0, "v_o after stick %g", stick->after[VO]);
    }
    CHECK(w->data->x[VO] == 0.0, "v_o %g after stopping", w->data->x[VO]);
    CHECK_REL(w->data->x[XO], 1.5 + dist, 1e-11, 1.0);
    double x_stopped = w->data->x[XO];
    run(w, 200);
    CHECK(w->data->x[XO] == x_stopped && w->data->x[VO] == 0, "stayed stopped");
    CHECK(!strcmp(rs_mode_name(w->model, w->data, 0), "separated_stuck"), "mode %s",
          rs_mode_name(w->model, w->data, 0));
    rs_world_destroy(&w);
}

/* ---- impacts ------------------------------------------------------------------------------ */

/* Free bodies (no drag, no friction) collide: momentum kept to rounding, energy lost
 * (1 - e^2) 0.5 mu dv^2; the tip sensor sees J / dt in that control step. */
static void impact(double e, double mf, double mo, double vf0, double vo0)
{
    kv_t kv[] = {{"finger_mass", mf}, {"object_mass", mo}, {"finger_drag", 0},
                 {"object_drag", 0}, {"static_friction", 0}, {"kinetic_friction", 0},
                 {"restitution", e}, {"finger_v0", vf0}, {"object_v0", vo0},
                 {"rtol", 1e-12}, {"atol", 1e-14}, {NULL, 0}};
    rs_world_t *w = finger_with(kv);
    if (!w)
        return;
    double dv = vf0 - vo0, t_touch = 1.5 / dv;
    double J_step = NAN, tip_step = NAN;
    while (w->data->t < t_touch + 0.5) {
        run(w, 1);
        if (w->data->sensors[S_J] > 0) {
            J_step = w->data->sensors[S_J];
            tip_step = w->data->sensors[S_TIP];
        }
    }
    const rs_event_t *touch = first_event(w, "touch");
    const rs_event_t *hit = first_event(w, e * dv >= 1e-3 ? "bounce" : "merge");
    CHECK(touch && hit, "e = %g: touch %p, bounce/merge %p", e, (void *)touch, (void *)hit);
    if (!touch || !hit)
        return;
    CHECK(fabs(touch->t - t_touch) < 1e-12, "touch at %.17g, expected %.17g", touch->t, t_touch);
    const double *b = hit->before, *a = hit->after;
    double p0 = mf * b[VF] + mo * b[VO], p1 = mf * a[VF] + mo * a[VO];
    CHECK(fabs(p1 - p0) <= 4 * DBL_EPSILON * (mf * fabs(b[VF]) + mo * fabs(b[VO])),
          "momentum %.17g -> %.17g", p0, p1);
    double mu = mf * mo / (mf + mo);
    double k0 = 0.5 * (mf * b[VF] * b[VF] + mo * b[VO] * b[VO]);
    double k1 = 0.5 * (mf * a[VF] * a[VF] + mo * a[VO] * a[VO]);
    double rel = b[VF] - b[VO];
    CHECK_REL(rel, dv, 1e-12, 1e-12);
    double e_eff = e * dv >= 1e-3 ? e : 0.0; /* a merge is plastic */
    CHECK(fabs((k0 - k1) - (1 - e_eff * e_eff) * 0.5 * mu * rel * rel) <= 1e-13 * k0,
          "e = %g: energy lost %.17g, expected %.17g", e, k0 - k1,
          (1 - e_eff * e_eff) * 0.5 * mu * rel * rel);
    if (e == 1.0)
        CHECK(fabs(k1 - k0) <= 1e-14 * k0, "elastic impact lost %.3g J", k0 - k1);
    CHECK_REL(a[VO] - a[VF], e_eff * rel, 1e-12, 1e-12);
    double vcm = p0 / (mf + mo);
    CHECK_REL(hit->value, (1 + e_eff) * mf * fabs(b[VF] - vcm), 1e-13, 1e-13);
    CHECK(a[XF] == a[XO], "positions equal at the impact");
    /* the sensor in the step of the impact: no contact force, only the impulse */
    CHECK_REL(J_step, hit->value, 1e-14, 1e-14);
    CHECK_REL(tip_step, hit->value / w->model->control_dt, 1e-9, 1e-9);
    rs_world_destroy(&w);
}

/* ---- static friction threshold ------------------------------------------------------------ */

static void stick_slip_threshold(void)
{
    /* just below F_static: nothing moves, the sensor reads F_a - D_f (D_f = 0 at rest) */
    kv_t kv[] = {{"finger_x0", 1.5}, {"rtol", 1e-12}, {"atol", 1e-14}, {NULL, 0}};
    rs_world_t *w = finger_with(kv);
    if (!w)
        return;
    double below = 1.0 * (1 - 1e-9);
    set_force(w, below);
    run(w, 100);
    CHECK(w->data->x[XF] == 1.5 && w->data->x[XO] == 1.5 && w->data->x[VF] == 0 &&
              w->data->x[VO] == 0,
          "moved below F_static: x_f %.17g x_o %.17g", w->data->x[XF], w->data->x[XO]);
    CHECK(!strcmp(rs_mode_name(w->model, w->data, 0), "contact_stuck"), "mode %s",
          rs_mode_name(w->model, w->data, 0));
    CHECK_REL(w->data->sensors[S_TIP], below, 1e-12, 1e-12);
    CHECK(w->data->sensors[S_N] == below, "contact_force %.17g", w->data->sensors[S_N]);
    CHECK(count_events(w, "slip") == 0, "slipped below F_static");
    CHECK(count_events(w, "touch") == 1 && count_events(w, "merge") == 1,
          "touch %d merge %d when pressing from rest", count_events(w, "touch"),
          count_events(w, "merge"));
    rs_world_destroy(&w);

    /* just above: both accelerate; the sensor reads the sliding formula */
    w = finger_with(kv);
    if (!w)
        return;
    double above = 1.0 * (1 + 1e-9);
    set_force(w, above);
    double n_prev = n_slide_default(above, 0.0), worst_mean = 0;
    for (int k = 0; k < 100; k++) {
        run(w, 1);
        double n_now = n_slide_default(above, w->data->x[VF]);
        CHECK_REL(w->data->sensors[S_N], n_now, 1e-14, 1e-14);
        /* mean over the step ~ trapezoid of the formula: off by dt^2/12 N'' ~ 5e-7 here, while
         * an end-of-step (not mean) reading would be off by dt/2 N' ~ 1e-4 */
        worst_mean = fmax(worst_mean, fabs(w->data->sensors[S_TIP] - 0.5 * (n_prev + n_now)));
        n_prev = n_now;
    }
    CHECK(worst_mean < 2e-6, "mean tip force off the N formula by %.3g", worst_mean);
    const rs_event_t *slip = first_event(w, "slip");
    CHECK(slip && slip->t == 0.0, "slip at t = %g", slip ? slip->t : NAN);
    CHECK(w->data->x[VF] > 0 && w->data->x[XO] > 1.5, "both accelerate: v %g", w->data->x[VF]);
    /* common acceleration (F_a - F_k)/(m_f + m_o) at the start: x ~ a t^2 / 2 early on */
    CHECK(!strcmp(rs_mode_name(w->model, w->data, 0), "contact_sliding"), "mode %s",
          rs_mode_name(w->model, w->data, 0));
    rs_world_destroy(&w);

    /* a ramp F_a = t N (schedule) while pressing: slips exactly when F_a reaches F_static */
    w = finger_with(kv);
    if (!w)
        return;
    double tt[] = {0, 3}, vv[] = {0, 3};
    rs_status_t st;
    int rc = rs_set_schedule(w->model, w->data, 0, 0, tt, vv, 2, &st);
    CHECK_OK(rc, st);
    run_to(w, 2.0);
    slip = first_event(w, "slip");
    CHECK(slip && fabs(slip->t - 1.0) < 1e-9, "ramp: slip at %.17g, expected 1",
          slip ? slip->t : NAN);
    CHECK(first_event(w, "touch") && first_event(w, "touch")->t == 0, "pressing from t = 0");
    rs_world_destroy(&w);
}

/* Exact ties with round numbers (an integrator interval starting with a guard at exactly 0 is
 * where ARKODE sees no crossing): pressing with 0 N then pulling must separate; a force resting
 * exactly at F_static must stay stuck and slip as soon as it rises above it. */
static void ties(void)
{
    kv_t kv[] = {{"finger_x0", 1.5}, {"rtol", 1e-12}, {"atol", 1e-14}, {NULL, 0}};
    rs_status_t st;
    rs_world_t *w = finger_with(kv);
    if (!w)
        return;
    double t1[] = {0, 1, 2}, v1[] = {0, 0, -1};
    int rc = rs_set_schedule(w->model, w->data, 0, 0, t1, v1, 3, &st);
    CHECK_OK(rc, st);
    run_to(w, 1.0);
    CHECK(!strcmp(rs_mode_name(w->model, w->data, 0), "contact_stuck"), "mode %s at 0 N",
          rs_mode_name(w->model, w->data, 0));
    run_to(w, 2.0);
    const rs_event_t *sep = first_event(w, "separate");
    CHECK(sep && fabs(sep->t - 1.0) < 1e-9, "pulled: separate at %.17g, expected 1",
          sep ? sep->t : NAN);
    CHECK(w->data->x[XF] < 1.5 - 0.01, "the finger pulled away: x_f %g", w->data->x[XF]);
    CHECK(nlog == 3, "%d events (touch, merge, separate)", nlog);
    rs_world_destroy(&w);

    w = finger_with(kv);
    if (!w)
        return;
    double t2[] = {0, 1, 2, 3}, v2[] = {0, 1, 1, 2}; /* F_static = 1 from t = 1 to 2 */
    rc = rs_set_schedule(w->model, w->data, 0, 0, t2, v2, 4, &st);
    CHECK_OK(rc, st);
    run_to(w, 2.0);
    CHECK(count_events(w, "slip") == 0 && w->data->x[XO] == 1.5, "slipped at F_a = F_static");
    CHECK_REL(w->data->sensors[S_TIP], 1.0, 1e-12, 1e-12);
    run_to(w, 3.0);
    const rs_event_t *slip = first_event(w, "slip");
    CHECK(slip && fabs(slip->t - 2.0) < 1e-9, "slip at %.17g, expected 2", slip ? slip->t : NAN);
    CHECK(w->data->x[XO] > 1.5 && w->data->x[XO] == w->data->x[XF], "pushed together: x_o %g",
          w->data->x[XO]);
    rs_world_destroy(&w);

    /* F_kinetic = F_static: pushed exactly at that force the pair keeps its speed but for drag,
     * and stops (a stick event, exactly v = 0) once the force drops below it; 0 N then holds it
     * pressed, not pulled */
    kv_t eq[] = {{"finger_x0", 1.5}, {"kinetic_friction", 1.0}, {"finger_drag", 0},
                 {"object_drag", 0}, {"rtol", 1e-12}, {"atol", 1e-14}, {NULL, 0}};
    w = finger_with(eq);
    if (!w)
        return;
    double t3[] = {0, 1, 2, 3}, v3[] = {1, 1.5, 1, 0};
    rc = rs_set_schedule(w->model, w->data, 0, 0, t3, v3, 4, &st);
    CHECK_OK(rc, st);
    run_to(w, 4.0);
    /* a = (F_a - 1)/2: v(2) = 0.5 * 0.25 * 2 = 0.25; then a = -(t - 2)/2: v = 0.25 - (t-2)^2/4
     * reaches 0 at t = 3 (F_a = 0 there; from t = 3, a = -1/2 until the stop) */
    slip = first_event(w, "slip");
    const rs_event_t *stick = first_event(w, "stick");
    CHECK(slip && fabs(slip->t) < 1e-9, "slip at %g", slip ? slip->t : NAN);
    CHECK(stick && fabs(stick->t - 3.0) < 1e-9, "stick at %.17g, expected 3",
          stick ? stick->t : NAN);
    CHECK(w->data->x[VO] == 0 && w->data->x[VF] == 0, "stopped: v_f %g", w->data->x[VF]);
    CHECK(!strcmp(rs_mode_name(w->model, w->data, 0), "contact_stuck"), "mode %s at 0 N",
          rs_mode_name(w->model, w->data, 0));
    CHECK_REL(w->data->x[XO], 1.5 + 5.0 / 12.0, 1e-10, 1.0); /* 1/24 + 5/24 + 1/6 by phases */
    rs_world_destroy(&w);
}

/* ---- the article's stories ----------------------------------------------------------------- */

/* (a) too little force: nothing moves; more force: both move; force off: the finger, with more
 * drag, falls behind (a separation event). */
static void story_press_push_release(void)
{
    kv_t kv[] = {{"finger_x0", 1.5}, {NULL, 0}};
    rs_world_t *w = finger_with(kv);
    if (!w)
        return;
    set_force(w, 0.5);
    run_to(w, 1.0);
    CHECK(w->data->x[XF] == 1.5 && w->data->x[XO] == 1.5, "0.5 N moved something");
    CHECK_REL(w->data->sensors[S_TIP], 0.5, 1e-12, 1e-12);
    set_force(w, 2.0);
    run_to(w, 3.0);
    const rs_event_t *slip = first_event(w, "slip");
    CHECK(slip && slip->t == 1.0, "slip at %g", slip ? slip->t : NAN);
    CHECK(w->data->x[XO] > 2.0 && w->data->x[VF] > 1.0, "pushed along: x_o %g v %g",
          w->data->x[XO], w->data->x[VF]);
    CHECK_REL(w->data->sensors[S_N], n_slide_default(2.0, w->data->x[VF]), 1e-14, 1e-14);
    CHECK(count_events(w, "separate") == 0, "separated while pushing");
    set_force(w, 0.0);
    int before = nlog;
    run_to(w, 4.0);
    const rs_event_t *sep = first_event(w, "separate");
    CHECK(sep && sep->t == 3.0 && sep - evlog >= before, "separate at %g", sep ? sep->t : NAN);
    if (sep)
        CHECK(sep->value < 0 && fabs(sep->value - n_slide_default(0.0, sep->before[VF])) < 1e-14,
              "separation contact force %g", sep->value);
    CHECK(w->data->x[XO] - w->data->x[XF] > 0.05, "the finger fell behind: gap %g",
          w->data->x[XO] - w->data->x[XF]);
    CHECK(w->data->x[VF] < w->data->x[VO], "v_f %g < v_o %g", w->data->x[VF], w->data->x[VO]);
    CHECK(w->data->sensors[S_TIP] == 0 && w->data->sensors[S_N] == 0, "no tip force apart");
    CHECK(count_events(w, "touch") == 1, "%d touches (only the initial press)",
          count_events(w, "touch"));
    rs_world_destroy(&w);

    /* and from a distance: pushed by 0.4 N (< F_kinetic) the finger hits the object, bounces
     * until it merges, and ends pressing on it with nothing moving */
    w = finger_with(NULL);
    if (!w)
        return;
    set_force(w, 0.4);
    run_to(w, 10.0);
    CHECK(!strcmp(rs_mode_name(w->model, w->data, 0), "contact_stuck"), "mode %s after 10 s",
          rs_mode_name(w->model, w->data, 0));
    CHECK(count_events(w, "bounce") >= 1 && count_events(w, "merge") == 1,
          "bounces %d, merges %d", count_events(w, "bounce"), count_events(w, "merge"));
    double x_rest = w->data->x[XO];
    run(w, 100);
    CHECK(w->data->x[XO] == x_rest && w->data->x[XF] == x_rest, "still once pressing");
    CHECK_REL(w->data->sensors[S_TIP], 0.4, 1e-12, 1e-12);
    rs_world_destroy(&w);
}

/* (b) the finger coasts (quadratic drag: x = (m/c) ln(1 + c v0 t / m)) into the object at rest
 * and bounces off it. */
static void story_coast_and_bounce(void)
{
    double v0 = 2.0;
    kv_t kv[] = {{"finger_v0", v0}, {"rtol", 1e-12}, {"atol", 1e-14}, {NULL, 0}};
    rs_world_t *w = finger_with(kv);
    if (!w)
        return;
    run_to(w, 3.0);
    double t_touch = (exp(1.5) - 1) / v0, v_touch = v0 * exp(-1.5);
    const rs_event_t *touch = first_event(w, "touch"), *bounce = first_event(w, "bounce");
    CHECK(touch && bounce && evlog[0].kind == touch->kind && bounce == touch + 1,
          "touch then bounce");
    if (!touch || !bounce)
        return;
    CHECK_REL(touch->t, t_touch, 1e-10, 1e-10);
    CHECK_REL(touch->before[VF], v_touch, 1e-9, 1e-9);
    double vcm = v_touch / 2, e = 0.5;
    CHECK_REL(bounce->after[VF], (1 + e) * vcm - e * bounce->before[VF], 1e-12, 1e-12);
    CHECK_REL(bounce->after[VO], (1 + e) * vcm, 1e-9, 1e-9);
    CHECK_REL(bounce->value, (1 + e) * 1.0 * (bounce->before[VF] - vcm), 1e-12, 1e-12);
    CHECK(first_event(w, "slip") == bounce + 1, "the object slips when hit");
    CHECK(bounce->after[VF] < bounce->before[VF], "the finger is slowed by the bounce");
    /* apart right after: the object leaves at e times the closing speed faster */
    CHECK(first_event(w, "stick") && first_event(w, "stick")->t > bounce->t,
          "the object sticks again");
    rs_world_destroy(&w);

    /* a heavier object: the finger bounces back */
    kv_t heavy[] = {{"finger_v0", v0}, {"object_mass", 5.0}, {NULL, 0}};
    w = finger_with(heavy);
    if (!w)
        return;
    run_to(w, 2.0);
    bounce = first_event(w, "bounce");
    CHECK(bounce && bounce->after[VF] < 0, "bounced back at %g", bounce ? bounce->after[VF] : NAN);
    rs_world_destroy(&w);
}

/* ---- property test: random force schedules ---------------------------------------------- */

static uint64_t prng_state = 0x2545F4914F6CDD1DULL;
static double prng(void) /* xorshift64*, uniform in [0, 1) */
{
    prng_state ^= prng_state >> 12;
    prng_state ^= prng_state << 25;
    prng_state ^= prng_state >> 27;
    return (double)((prng_state * 0x2545F4914F6CDD1DULL) >> 11) * 0x1.0p-53;
}
static double uniform(double a, double b) { return a + (b - a) * prng(); }

static void random_schedules(int nruns)
{
    int failures = 0, held_runs = 0, kinds[6] = {0};
    for (int r = 0; r < nruns && failures < 5; r++) {
        double fs = uniform(0, 2);
        kv_t kv[] = {{"finger_mass", uniform(0.2, 5)},
                     {"object_mass", uniform(0.2, 5)},
                     {"finger_drag_law", prng() < 0.5},
                     {"finger_drag", uniform(0, 2)},
                     {"object_drag_law", prng() < 0.5},
                     {"object_drag", uniform(0, 1)},
                     {"static_friction", fs},
                     {"kinetic_friction", fs * (prng() < 0.2 ? 1.0 : prng())},
                     {"restitution", prng() < 0.1 ? 1.0 : prng()},
                     {"object_x0", prng() < 0.1 ? 0.0 : uniform(0, 2)},
                     {"finger_v0", uniform(-1, 2)},
                     {"object_v0", prng() < 0.5 ? 0.0 : uniform(-1, 1)},
                     {NULL, 0}};
        rs_world_t *w = finger_with(kv);
        if (!w)
            return;
        const rs_model_t *m = w->model;
        double mf = kv[0].value, mo = kv[1].value;
        /* half the runs: a schedule of 2..12 knots over 3 s; half: a new held force each step */
        int held = r % 2;
        held_runs += held;
        rs_status_t st;
        if (!held) {
            double t[12], v[12];
            int n = 2 + (int)(prng() * 11);
            for (int k = 0; k < n; k++) {
                t[k] = k == 0 ? 0 : t[k - 1] + uniform(0.01, 0.6);
                v[k] = prng() < 0.15 ? 1.0 : uniform(-3, 4); /* sometimes exactly F_static */
            }
            int rc = rs_set_schedule(m, w->data, 0, 0, t, v, (size_t)n, &st);
            CHECK_OK(rc, st);
        }
        const double *x = w->data->x;
        double ke0 = 0.5 * (mf * x[VF] * x[VF] + mo * x[VO] * x[VO]);
        double last_t = 0, impulse_sum = 0;
        int bad = 0;
        nlog = 0;
        for (int k = 0; k < 300 && !bad; k++) {
            if (held)
                set_force(w, prng() < 0.1 ? 0.0 : uniform(-3, 4));
            int before = nlog;
            double t0 = w->data->t;
            if (run(w, 1)) {
                bad = 1;
                break;
            }
            for (int i = before; i < nlog; i++) {
                const rs_event_t *ev = &evlog[i];
                if (!(ev->t >= last_t && ev->t >= t0 && ev->t <= w->data->t)) {
                    CHECK(0, "run %d: event %s at %.17g after one at %.17g (step %g..%g)", r,
                          kind(w, ev), ev->t, last_t, t0, w->data->t);
                    bad = 1;
                }
                if (!(ev->after[XO] - ev->after[XF] >= -1e-9 &&
                      ev->before[XO] - ev->before[XF] >= -1e-9)) {
                    CHECK(0, "run %d: event %s with gap %.3g -> %.3g", r, kind(w, ev),
                          ev->before[XO] - ev->before[XF], ev->after[XO] - ev->after[XF]);
                    bad = 1;
                }
                if (!strcmp(kind(w, ev), "bounce") || !strcmp(kind(w, ev), "merge")) {
                    double p0 = mf * ev->before[VF] + mo * ev->before[VO];
                    double p1 = mf * ev->after[VF] + mo * ev->after[VO];
                    double scale = mf * fabs(ev->before[VF]) + mo * fabs(ev->before[VO]);
                    if (!(fabs(p1 - p0) <= 8 * DBL_EPSILON * scale)) {
                        CHECK(0, "run %d: momentum %.17g -> %.17g at %s", r, p0, p1,
                              kind(w, ev));
                        bad = 1;
                    }
                }
                kinds[ev->kind]++;
                last_t = ev->t;
            }
            impulse_sum += w->data->sensors[S_TIP] * (w->data->t - t0);
            double ke = 0.5 * (mf * x[VF] * x[VF] + mo * x[VO] * x[VO]);
            double tol = 1e-6 * (1 + ke0 + ke + fabs(x[WORK]));
            if (!(ke - ke0 <= x[WORK] + tol)) {
                CHECK(0, "run %d at t = %g: kinetic energy grew by %.9g, work of F_a %.9g", r,
                      w->data->t, ke - ke0, x[WORK]);
                bad = 1;
            }
            for (int i = 0; i < 3; i++)
                if (!isfinite(w->data->sensors[i])) {
                    CHECK(0, "run %d: sensor %d is %g", r, i, w->data->sensors[i]);
                    bad = 1;
                }
        }
        /* the tip sensor's readings add up to the impulse passed through the tip */
        if (!bad && !(fabs(impulse_sum - x[IMP]) <= 1e-9 * (1 + x[IMP]))) {
            CHECK(0, "run %d: sum of tip_force dt %.17g, contact_impulse %.17g", r, impulse_sum,
                  x[IMP]);
            bad = 1;
        }
        failures += bad;
        rs_world_destroy(&w);
    }
    CHECK(failures == 0, "%d of %d random runs failed", failures, nruns);
    for (int k = 0; k < 6; k++)
        CHECK(kinds[k] > 0, "no event of kind %d in the random runs", k);
    printf("random schedules: %d runs (%d with held forces), %d failed; events: %d touch, "
           "%d bounce, %d merge, %d separate, %d stick, %d slip\n",
           nruns, held_runs, failures, kinds[0], kinds[1], kinds[2], kinds[3], kinds[4],
           kinds[5]);
}

/* ---- bad input ---------------------------------------------------------------------------- */

static void bad_params(void)
{
    rs_status_t st;
    double neg[] = {-1}, nan[] = {NAN}, big[] = {1.5}, half[] = {0.5}, two[] = {2};
    struct {
        rs_param_t p;
        int code;
    } cases[] = {
        {{"finger", "finger_mass", neg, 1}, RS_ERANGE},
        {{"finger", "object_mass", neg, 1}, RS_ERANGE},
        {{"finger", "static_friction", neg, 1}, RS_ERANGE},
        {{"finger", "kinetic_friction", neg, 1}, RS_ERANGE},
        {{"finger", "kinetic_friction", two, 1}, RS_EINVAL}, /* > static_friction 1.0 */
        {{"finger", "restitution", big, 1}, RS_ERANGE},
        {{"finger", "restitution", neg, 1}, RS_ERANGE},
        {{"finger", "restitution", nan, 1}, RS_EINVAL},
        {{"finger", "finger_drag", nan, 1}, RS_EINVAL},
        {{"finger", "finger_drag_law", half, 1}, RS_EINVAL},
        {{"finger", "friction_law", half, 1}, RS_EINVAL},  /* 0 coulomb or 1 article */
        {{"finger", "friction_law", two, 1}, RS_ERANGE},
        {{"finger", "finger_drag", neg, 1}, RS_ERANGE},
        {{"finger", "object_x0", neg, 1}, RS_EINVAL}, /* behind the finger */
        {{"finger", "no_such", neg, 1}, RS_ENOTFOUND},
    };
    rs_world_t *w = rs_world_new("finger", NULL, 0, 3, &st);
    CHECK(w != NULL, "%s", st.message);
    if (!w)
        return;
    set_force(w, 0.7);
    run(w, 50);
    rs_model_t model_before = *w->model;
    double x_before[6];
    memcpy(x_before, w->data->x, sizeof x_before);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rs_world_t *bad = rs_world_new("finger", &cases[i].p, 1, 0, &st);
        CHECK(bad == NULL && st.code == cases[i].code && st.message[0],
              "new, case %zu (%s): code %d (%s) '%s'", i, cases[i].p.name, st.code,
              rs_errname(st.code), st.message);
        rs_world_destroy(&bad);
        int rc = rs_world_set_params(w, &cases[i].p, 1, &st);
        CHECK(rc == cases[i].code, "set_params, case %zu (%s): code %d (%s) '%s'", i,
              cases[i].p.name, rc, rs_errname(rc), st.message);
        CHECK(memcmp(&model_before, w->model, sizeof model_before) == 0,
              "case %zu changed the model", i);
    }
    rs_world_set_params(w, &cases[4].p, 1, &st);
    CHECK(strstr(st.message, "kinetic_friction") && strstr(st.message, "static_friction"),
          "reason: %s", st.message);
    CHECK(memcmp(x_before, w->data->x, sizeof x_before) == 0, "state changed by bad params");

    /* commands: NaN force, a schedule with decreasing times or NaN; nothing changes */
    double f_nan = NAN, huge = 1e12;
    CHECK(rs_set_commands(w->model, w->data, 0, &f_nan, 1, &st) == RS_EINVAL, "NaN force");
    CHECK(rs_set_commands(w->model, w->data, 0, &huge, 1, &st) == RS_ERANGE, "huge force");
    double t_dec[] = {0, 2, 1}, v_ok[] = {1, 1, 1}, t_ok[] = {0, 1, 2}, v_nan[] = {1, NAN, 1};
    CHECK(rs_set_schedule(w->model, w->data, 0, 0, t_dec, v_ok, 3, &st) == RS_EINVAL,
          "decreasing schedule times");
    CHECK(rs_set_schedule(w->model, w->data, 0, 0, t_ok, v_nan, 3, &st) == RS_EINVAL,
          "NaN in a schedule");
    CHECK(w->data->u[0] == 0.7 && w->data->sched[0].n == 0, "commands unchanged");

    /* a valid change goes through and keeps the state */
    double fs[] = {2.0};
    rs_param_t ok = {"finger", "static_friction", fs, 1};
    CHECK(rs_world_set_params(w, &ok, 1, &st) == 0, "%s", st.message);
    CHECK(rs_model_param(w->model, 0, "static_friction", 0) == 2.0, "static_friction set");
    run(w, 10);
    rs_world_destroy(&w);
}

/* Defaults of the preset, the spec and the sensors after a reset. */
static void preset_and_reset(void)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new("finger", NULL, 0, 5, &st);
    CHECK(w != NULL, "%s", st.message);
    if (!w)
        return;
    const rs_model_t *m = w->model;
    CHECK(rs_model_entity(m, "finger") == 0, "entity 'finger'");
    CHECK(!strcmp(m->ent[0].robot->kind, "finger"), "kind %s", m->ent[0].robot->kind);
    struct { const char *name; double v; } defs[] = {
        {"finger_mass", 1}, {"object_mass", 1}, {"finger_drag_law", 1}, {"finger_drag", 1},
        {"object_drag_law", 0}, {"object_drag", 0.02}, {"static_friction", 1.0},
        {"kinetic_friction", 0.5}, {"restitution", 0.5}, {"resting_speed", 1e-3},
        {"finger_x0", 0}, {"object_x0", 1.5}, {"finger_v0", 0}, {"object_v0", 0}};
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
        CHECK(rs_model_param(m, 0, defs[i].name, 0) == defs[i].v, "%s = %g, expected %g",
              defs[i].name, rs_model_param(m, 0, defs[i].name, 0), defs[i].v);
    CHECK(m->nx == 6 && m->nu == 1 && m->ns == 3, "nx %d nu %d ns %d", m->nx, m->nu, m->ns);
    CHECK(!strcmp(rs_mode_name(m, w->data, 0), "separated_stuck"), "initial mode %s",
          rs_mode_name(m, w->data, 0));

    /* press from rest; after a reset the same run repeats bit for bit, sensors start at 0 */
    double first[6];
    set_force(w, 1.7);
    run(w, 250);
    memcpy(first, w->data->x, sizeof first);
    rs_reset(m, w->data, 5, &st);
    CHECK(w->data->x[XF] == 0 && w->data->x[XO] == 1.5 && w->data->x[IMP] == 0, "reset state");
    CHECK(w->data->sensors[S_TIP] == 0 && w->data->sensors[S_N] == 0, "sensors after reset");
    set_force(w, 1.7);
    run(w, 250);
    CHECK(memcmp(first, w->data->x, sizeof first) == 0, "same trajectory after reset");
    rs_world_destroy(&w);
}


/* ---- the 1D Robot article's own law (friction_law = 1) ---------------------------------- */

static void print_events(const rs_world_t *w)
{
    if (!getenv("RS_TEST_VERBOSE"))
        return;
    for (int i = 0; i < nlog; i++)
        fprintf(stderr, "  %.6f %-8s %.6g  x_f %.6g v_f %.6g x_o %.6g v_o %.6g -> v_f %.6g v_o %.6g\n",
                evlog[i].t, kind(w, &evlog[i]), evlog[i].value, evlog[i].before[XF],
                evlog[i].before[VF], evlog[i].before[XO], evlog[i].before[VO], evlog[i].after[VF],
                evlog[i].after[VO]);
}

/* A finger pushed by fa from rest at 0 against quadratic drag (m = c = 1): x after t seconds
 * is ln cosh(sqrt(fa) t) and v = sqrt(fa) tanh(sqrt(fa) t); coasting from v1 (F_a = 0),
 * x = ln(1 + v1 t). The object is free under the 1D Robot article's law: linear drag only,
 * v_o = v0 exp(-c_o t / m_o), x_o = x0 + v0 m_o / c_o (1 - exp(-c_o t / m_o)). */
static double coast_object_x(double x0, double v0, double t)
{
    return x0 + v0 / 0.02 * (1 - exp(-0.02 * t));
}

/* Count the events of kind `name` with time in [t0, t1). */
static int count_between(const rs_world_t *w, const char *name, double t0, double t1)
{
    int n = 0;
    for (int i = 0; i < nlog; i++)
        n += !strcmp(kind(w, &evlog[i]), name) && evlog[i].t >= t0 && evlog[i].t < t1;
    return n;
}

/* Run to t1 checking that tip_force reads F_kinetic (0.5 N) at every control step spent
 * entirely in contact_sliding while the push F_i = F_a - v^2 stays above F_static (the 1D Robot
 * article: the sensor feels the object's kinetic friction), and f_kinetic F_i (f_kinetic = 0.5)
 * between the push at the step's ends once it drops below. Returns the steps checked. */
static int run_pushing(rs_world_t *w, double t1)
{
    int nsliding = 0;
    while (w->data->t < t1 - 1e-9) {
        int before = !strcmp(rs_mode_name(w->model, w->data, 0), "contact_sliding");
        double fa = w->data->u[0], v0 = w->data->x[VF];
        int n0 = nlog;
        run(w, 1);
        if (before && nlog == n0 &&
            !strcmp(rs_mode_name(w->model, w->data, 0), "contact_sliding")) {
            double v1 = w->data->x[VF], tip = w->data->sensors[S_TIP];
            nsliding++;
            if (fa - v1 * v1 >= 1.0) {
                CHECK_REL(tip, 0.5, 1e-8, 1e-8);
            } else {
                double lo = 0.5 * fmin(fa - v1 * v1, 1.0), hi = 0.5 * fmin(fa - v0 * v0, 1.0);
                CHECK(tip >= lo - 1e-9 && tip <= hi + 1e-9, "tip %g not in [%g, %g]", tip, lo,
                      hi);
            }
        }
    }
    return nsliding;
}

/* Example 1's first 2.8 s: pushed by 0.6 N (< F_static) until 1 s, then let go. */
static void push_then_release(rs_world_t *w)
{
    set_force(w, 0.6);
    run_to(w, 1.0);
    set_force(w, 0.0);
    run_to(w, 2.8);
}

/* The article's Example 1 (its Figure 1, the story `robosim plot --article-law` draws): 0.6 N for 1
 * s towards the object at 0.7 m, coast into it and bounce off it as off a wall (the object does
 * not move), push with 2.5 N (> F_static) from 2.8 s to 4.3 s moving the object, let go: the
 * finger, with the larger drag, falls behind and the object coasts on without friction. */
static void article_example1(void)
{
    kv_t kv[] = {{"friction_law", 1}, {"object_x0", 0.7}, {"rtol", 1e-12}, {"atol", 1e-14},
                 {NULL, 0}};
    rs_world_t *w = finger_with(kv);
    if (!w)
        return;
    push_then_release(w);
    print_events(w);
    /* the coast's closed form: touch when 0.7 = ln cosh(a) + ln(1 + v1 (t - 1)) */
    double a = sqrt(0.6), v1 = a * tanh(a);
    double t_touch = 1.0 + (exp(0.7 - log(cosh(a))) - 1.0) / v1;
    double v_touch = v1 / (1.0 + v1 * (t_touch - 1.0));
    const rs_event_t *touch = first_event(w, "touch"), *bounce = first_event(w, "bounce");
    CHECK(touch && bounce && touch == evlog && bounce == touch + 1, "touch then bounce first");
    if (!touch || !bounce)
        return;
    CHECK_REL(touch->t, t_touch, 1e-9, 1e-9);
    CHECK_REL(touch->before[VF], v_touch, 1e-9, 1e-9);
    /* the wall: the finger alone rebounds with -e v, J = (1 + e) m_f v, the object stays put */
    CHECK(bounce->after[VF] == -0.5 * bounce->before[VF], "v_f after %g", bounce->after[VF]);
    CHECK_REL(bounce->value, 1.5 * bounce->before[VF], 1e-15, 1e-15);
    CHECK(bounce->after[XO] == 0.7 && bounce->after[VO] == 0.0, "the wall moved");
    CHECK(count_events(w, "slip") == 0, "the object slipped while held like a wall");
    CHECK(w->data->x[XO] == 0.7 && w->data->x[VO] == 0.0 && w->data->x[XF] < 0.7,
          "at 2.8 s: x_o %g (0.7: not moved), x_f %g", w->data->x[XO], w->data->x[XF]);
    /* push hard: the object moves; the sensor reads F_kinetic while pushing */
    set_force(w, 2.5);
    int nsliding = run_pushing(w, 4.3);
    CHECK(count_between(w, "slip", 2.8, 4.3) == 1, "one slip while pushing");
    CHECK(nsliding > 40, "only %d control steps pushing", nsliding);
    CHECK(w->data->x[XO] > 0.8, "pushed to %g", w->data->x[XO]);
    set_force(w, 0.0);
    int n0 = nlog;
    run_to(w, 7.0);
    print_events(w);
    /* let go: they separate at once (N < 0), then nothing touches again */
    CHECK(nlog == n0 + 1 && !strcmp(kind(w, &evlog[n0]), "separate") && evlog[n0].t == 4.3,
          "after letting go: %d events, the first %s", nlog - n0,
          nlog > n0 ? kind(w, &evlog[n0]) : "none");
    if (nlog == n0 + 1) {
        const rs_event_t *sep = &evlog[n0];
        double dt = 7.0 - sep->t;
        CHECK_REL(w->data->x[VO], sep->after[VO] * exp(-0.02 * dt), 1e-9, 1e-12);
        CHECK_REL(w->data->x[XO], coast_object_x(sep->after[XO], sep->after[VO], dt), 1e-9,
                  1e-12);
        /* and the finger: x = x0 + ln(1 + v0 t) */
        CHECK_REL(w->data->x[XF], sep->after[XF] + log(1 + sep->after[VF] * dt), 1e-9, 1e-12);
    }
    CHECK(w->data->x[XO] - w->data->x[XF] > 0.3, "the finger fell behind: gap %g",
          w->data->x[XO] - w->data->x[XF]);
    rs_world_destroy(&w);

    /* the same under Coulomb's law (the default): the first impact moves the free object */
    kv_t coulomb[] = {{"object_x0", 0.7}, {NULL, 0}};
    w = finger_with(coulomb);
    if (!w)
        return;
    push_then_release(w);
    CHECK(count_events(w, "slip") == 1 && w->data->x[XO] > 0.75,
          "coulomb: the impact kicks the object to %g", w->data->x[XO]);
    rs_world_destroy(&w);
}

/* The article's Example 2 (its Figure 2): pushed by 0.6 N (< F_static) the finger hits the object
 * and ends pressing on it, nothing moving (it bounces off the wall until it merges); 2.5 N
 * breaks static friction and both accelerate, the sensor reading F_kinetic; let go, the finger
 * falls behind. */
static void article_example2(void)
{
    kv_t kv[] = {{"friction_law", 1}, {"rtol", 1e-12}, {"atol", 1e-14}, {NULL, 0}};
    rs_world_t *w = finger_with(kv);
    if (!w)
        return;
    set_force(w, 0.6);
    run_to(w, 6.0);
    print_events(w);
    double a = sqrt(0.6);
    const rs_event_t *touch = first_event(w, "touch");
    CHECK(touch && touch == evlog, "a touch first");
    if (touch) /* ln cosh(a t) = 1.5 */
        CHECK_REL(touch->t, acosh(exp(1.5)) / a, 1e-9, 1e-9);
    CHECK(count_events(w, "merge") == 1 && count_events(w, "slip") == 0 &&
              count_events(w, "bounce") >= 1,
          "wall bounces %d, merges %d, slips %d", count_events(w, "bounce"),
          count_events(w, "merge"), count_events(w, "slip"));
    for (int i = 0; i < nlog; i++)
        CHECK(fabs(evlog[i].after[XO] - 1.5) < 1e-12 && evlog[i].after[VO] == 0.0,
              "the object moved at %s, t %g: x_o - 1.5 = %.3g", kind(w, &evlog[i]), evlog[i].t,
              evlog[i].after[XO] - 1.5);
    CHECK(!strcmp(rs_mode_name(w->model, w->data, 0), "contact_stuck"), "mode %s at 6 s",
          rs_mode_name(w->model, w->data, 0));
    CHECK(fabs(w->data->x[XO] - 1.5) < 1e-12 && w->data->x[XF] == w->data->x[XO] &&
              w->data->x[VF] == 0.0 && w->data->x[VO] == 0.0,
          "nothing moves: x_f %.17g x_o %.17g", w->data->x[XF], w->data->x[XO]);
    CHECK_REL(w->data->sensors[S_TIP], 0.6, 1e-12, 1e-12); /* F_applied - F_drag(0) */
    /* 2.5 N: slip at once, then 2 v' = 2.5 - v^2 - 0.02 v - F_kinetic with F_kinetic = 0.5:
     * v' = -(v - r1)(v - r2) / 2, from rest: q = (v - r1) / (v - r2) = (r1 / r2) exp(-(r1 -
     * r2) t / 2), v = (r1 - q r2) / (1 - q) */
    set_force(w, 2.5);
    int n0 = nlog;
    int nsliding = run_pushing(w, 7.2);
    CHECK(nlog == n0 + 1 && !strcmp(kind(w, &evlog[n0]), "slip") && evlog[n0].t == 6.0 &&
              evlog[n0].value == 2.5,
          "%d events after 2.5 N", nlog - n0);
    CHECK(nsliding == 119, "%d control steps pushing", nsliding);
    double r1 = (-0.02 + sqrt(0.0004 + 8.0)) / 2, r2 = (-0.02 - sqrt(0.0004 + 8.0)) / 2;
    double q = r1 / r2 * exp(-(r1 - r2) * 1.2 / 2); /* v < sqrt(1.5): F_i > F_static */
    CHECK_REL(w->data->x[VF], (r1 - q * r2) / (1 - q), 1e-9, 1e-9);
    set_force(w, 0.0);
    n0 = nlog;
    run_to(w, 8.2);
    print_events(w);
    CHECK(nlog == n0 + 1 && !strcmp(kind(w, &evlog[n0]), "separate") && evlog[n0].t == 7.2,
          "let go: %d events", nlog - n0);
    if (nlog == n0 + 1) {
        const rs_event_t *sep = &evlog[n0];
        CHECK_REL(w->data->x[XO], coast_object_x(sep->after[XO], sep->after[VO], 1.0), 1e-9,
                  1e-12);
    }
    CHECK(w->data->x[XO] - w->data->x[XF] > 0.1 && w->data->x[VF] < w->data->x[VO],
          "the finger falls behind");
    rs_world_destroy(&w);
}

/* sim_step (Klamp't's setSimStep): the integrator takes internal steps no
 * longer than sim_step, so a control step of 10 ms holds at least 10 ms / sim_step of them, and
 * the answer still matches the closed form (the push from rest against quadratic drag). */
static void sim_step_substeps(void)
{
    for (int k = 0; k < 3; k++) {
        double h = k == 0 ? 0.0 : k == 1 ? 1e-3 : 2.5e-4;
        kv_t kv[] = {{"sim_step", h}, {"rtol", 1e-6}, {"atol", 1e-9}, {NULL, 0}};
        rs_world_t *w = finger_with(kv);
        if (!w)
            return;
        set_force(w, 0.7);
        run(w, 100); /* 1 s, before the touch at 1.5 m */
        double per_step = (double)w->data->internal_steps / 100.0;
        double a = sqrt(0.7);
        if (h > 0)
            CHECK(per_step >= 0.01 / h - 1e-9, "sim_step %g: %.2f internal steps per control step",
                  h, per_step);
        else
            CHECK(per_step < 5, "no limit: %.2f internal steps per control step", per_step);
        CHECK_REL(w->data->x[XF], log(cosh(a)), 1e-5, 1e-9);
        CHECK_REL(w->data->x[VF], a * tanh(a), 1e-5, 1e-9);
        rs_world_destroy(&w);
    }
    /* out of bounds */
    rs_status_t st;
    double neg = -1e-3;
    rs_param_t p = {"", "sim_step", &neg, 1};
    rs_world_t *bad = rs_world_new("finger", &p, 1, 0, &st);
    CHECK(bad == NULL && st.code == RS_ERANGE, "sim_step < 0: code %d", st.code);
    rs_world_destroy(&bad);
}

/* ApplyWrench on body "finger" adds to F_a for one control step: bit-identical to commanding
 * that force for the step (0 + f == f), then back to the command. */
static void wrench_on_finger(void)
{
    rs_world_t *a = finger_with(NULL), *b = finger_with(NULL);
    if (!a || !b)
        return;
    rs_status_t st;
    double f = 0.7;
    int rc = rs_apply_wrench(a->model, a->data, 0, "finger", &f, 1, &st);
    CHECK_OK(rc, st);
    set_force(b, f);
    rs_step(a->model, a->data, 1, &st);
    rs_step(b->model, b->data, 1, &st);
    CHECK(memcmp(a->data->x, b->data->x, 6 * sizeof(double)) == 0, "one step of the wrench");
    CHECK(a->data->ent[0].wrench[0] == 0.0, "the wrench is gone after its step");
    set_force(b, 0.0);
    rs_step(a->model, a->data, 100, &st);
    rs_step(b->model, b->data, 100, &st);
    CHECK(memcmp(a->data->x, b->data->x, 6 * sizeof(double)) == 0 && a->data->x[VF] > 0,
          "the finger coasts on as after a one-step push");
    CHECK(rs_apply_wrench(a->model, a->data, 0, "surface", &f, 1, &st) == RS_ENOTFOUND &&
              strstr(st.message, "'finger'") && strstr(st.message, "'object'"),
          "an unknown body is refused, naming the finger's: %s", st.message);
    rs_world_destroy(&a);
    rs_world_destroy(&b);
}

/* The article's law with the object sliding back onto the finger (both moving towards -x, the
 * object faster): with its friction the contact would open (N < 0), apart and without it the gap
 * closes (the finger's drag is the larger), so no plain mode is consistent. The bodies ride
 * together with N = 0 (Filippov's motion on the switching surface): the finger coasts as if free,
 * |v| = |v0| / (1 + c |v0| t / m_f) under its quadratic drag, the object beside it, contact force
 * 0, and a control step takes a handful of events, not a touch and a separation per instant. */
static void article_object_overtakes(void)
{
    kv_t kv[] = {{"friction_law", 1},    {"object_mass", 0.5},  {"static_friction", 3.0},
                 {"kinetic_friction", 2.4}, {"restitution", 0.3}, {"finger_x0", 0.0},
                 {"object_x0", 0.0},     {"finger_v0", -1.2},   {"object_v0", -2.0},
                 {NULL, 0}};
    rs_world_t *w = finger_with(kv);
    const double *x = w->data->x;
    int riding = 0;
    for (int k = 0; k < 100; k++) {
        int n0 = nlog, before = !strcmp(rs_mode_name(w->model, w->data, 0), "contact_sliding");
        double v0 = x[VF], dt = w->model->control_dt;
        if (run(w, 1))
            break;
        CHECK(nlog - n0 < 10, "%d events in the control step to t = %g", nlog - n0, w->data->t);
        if (before && nlog == n0 && !strcmp(rs_mode_name(w->model, w->data, 0), "contact_sliding")) {
            riding++;
            CHECK(fabs(w->data->sensors[S_N]) <= 1e-12, "contact force %g riding together",
                  w->data->sensors[S_N]);
            CHECK_REL(x[VF], v0 / (1 + fabs(v0) * dt), 1e-8, 1e-12);
        }
    }
    CHECK(riding > 50, "the bodies rode together %d steps of 100", riding);
    rs_world_destroy(&w);
}

/* Property test of the 1D Robot article's law: random parameters and a new held force every control
 * step; besides run()'s invariants (no overlap, contact modes exact), the kinetic energy never
 * exceeds the start's plus the applied work (the wall, drag and friction only take energy
 * out), a bounce off a resting object leaves it at rest where it was with the finger at -e v_f,
 * and the sensor reads at most F_kinetic while pushing over a whole step without events. */
static void article_law_random(int nruns)
{
    int walls = 0, pushes = 0;
    for (int r = 0; r < nruns; r++) {
        double fs = uniform(0.1, 2), e = prng() < 0.1 ? 1.0 : prng();
        kv_t kv[] = {{"friction_law", 1},
                     {"finger_mass", uniform(0.2, 5)},
                     {"object_mass", uniform(0.2, 5)},
                     {"finger_drag", uniform(0, 2)},
                     {"object_drag", uniform(0, 1)},
                     {"static_friction", fs},
                     {"kinetic_friction", fs * prng()},
                     {"restitution", e},
                     {"object_x0", uniform(0, 2)},
                     {"finger_v0", uniform(-1, 2)},
                     {NULL, 0}};
        rs_world_t *w = finger_with(kv);
        if (!w)
            return;
        double mf = kv[1].value, mo = kv[2].value, fk = kv[6].value;
        const double *x = w->data->x;
        double ke0 = 0.5 * (mf * x[VF] * x[VF] + mo * x[VO] * x[VO]);
        nlog = 0;
        for (int k = 0; k < 300; k++) {
            set_force(w, prng() < 0.1 ? 0.0 : uniform(-1, 4));
            int before = nlog, sliding0 = !strcmp(rs_mode_name(w->model, w->data, 0),
                                                  "contact_sliding");
            if (run(w, 1))
                break;
            for (int i = before; i < nlog; i++) {
                const rs_event_t *ev = &evlog[i];
                if (strcmp(kind(w, ev), "bounce") || ev->before[VO] != 0.0 || ev->after[VO] != 0.0)
                    continue;
                walls++;
                CHECK(ev->after[XO] == ev->before[XO] && ev->after[VF] == -e * ev->before[VF],
                      "run %d: wall bounce v_f %g -> %g (e %g)", r, ev->before[VF],
                      ev->after[VF], e);
            }
            if (sliding0 && nlog == before &&
                !strcmp(rs_mode_name(w->model, w->data, 0), "contact_sliding")) {
                pushes++;
                CHECK(w->data->sensors[S_TIP] >= -1e-12 &&
                          w->data->sensors[S_TIP] <= fk * (1 + 1e-9) + 1e-12,
                      "run %d: sensor %g while pushing, F_kinetic %g", r, w->data->sensors[S_TIP],
                      fk);
            }
            double ke = 0.5 * (mf * x[VF] * x[VF] + mo * x[VO] * x[VO]);
            CHECK(ke <= ke0 + x[WORK] + 1e-6 * (1 + ke0 + fabs(x[WORK])),
                  "run %d: kinetic energy %g > %g + work %g at t %g", r, ke, ke0, x[WORK],
                  w->data->t);
        }
        rs_world_destroy(&w);
    }
    CHECK(walls > 10 && pushes > 100, "the runs hit walls (%d) and pushed (%d steps)", walls,
          pushes);
    printf("article law random: %d runs, %d wall bounces, %d control steps pushing\n", nruns, walls,
           pushes);
}

int main(int argc, char **argv)
{
    int nruns = argc > 1 ? atoi(argv[1]) : 200;
    preset_and_reset();
    push_quadratic(1.0, 1.0, 0.7, 0);
    push_quadratic(2.0, 0.5, 1.3, 0);
    push_quadratic(1.0, 1.0, 0.7, 1);
    touch_time_default_tolerances();
    coast_linear(1.0, 0.02, 1.0);
    coast_linear(2.0, 0.3, -0.2);
    coast_kinetic(1.0, 0.5, 1.0);
    coast_kinetic(1.5, 0.5, 1.2);
    impact(0.5, 1.0, 3.0, 2.0, 0.5);
    impact(1.0, 1.0, 3.0, 2.0, 0.5);
    impact(0.0, 2.0, 1.0, 1.0, -0.5);
    impact(0.7, 0.3, 2.0, 0.0, -1.0); /* the object runs into the finger at rest */
    stick_slip_threshold();
    ties();
    story_press_push_release();
    story_coast_and_bounce();
    sim_step_substeps();
    wrench_on_finger();
    article_example1();
    article_example2();
    article_object_overtakes();
    article_law_random(nruns / 2);
    bad_params();
    random_schedules(nruns);
    return rs_test_done("test_finger");
}
