/* The falling brick (the contact-dynamics lecture) under its three contact formulations, against
 * closed forms: free-fall impact time sqrt(2 H / g), Newton restitution (second impact 2 e v / g
 * later, rebound apex e^2 H), Coulomb sliding (stops after v / (mu g) at v^2 / (2 mu g)), the
 * undamped boundary layer's contact time and energy, Klamp't's blending; and bit-exact
 * snapshots and forks under every formulation. */
#include "contact.h"
#include "rs_robot.h"
#include "rs_snapshot.h"
#include "rs_test.h"
#include "world_with.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { X, Y, TH, VX, VY, W };
enum { S_FX, S_FY, S_IN, S_HAD, S_SEP, S_PEN, S_CX, S_DEPTH };

#define G 9.81
#define H_BRICK 0.1

static rs_world_t *brick_with(const kv_t *kv) { return world_with("brick_drop", "brick", kv); }

/* events seen over a run */
#define LOG_MAX 4096
static rs_event_t evlog[LOG_MAX];
static int nlog;

static void step(rs_world_t *w, int n)
{
    rs_status_t st;
    for (int i = 0; i < n; i++) {
        int rc = rs_step(w->model, w->data, 1, &st);
        CHECK_OK(rc, st);
        if (rc)
            return;
        for (int k = 0; k < w->data->nevents && nlog < LOG_MAX; k++)
            evlog[nlog++] = w->data->events[k];
    }
}

static const rs_event_t *nth_event(const rs_world_t *w, const char *name, int nth)
{
    for (int i = 0; i < nlog; i++)
        if (!strcmp(rs_event_kind_name(w->model, &evlog[i]), name) && nth-- == 0)
            return &evlog[i];
    return NULL;
}

static const double *state(const rs_world_t *w) { return w->data->x; }
static const double *sensors(const rs_world_t *w) { return w->data->sensors; }

/* ---- blending ---------------------------------------------------------------------------- */

static void test_blending(void)
{
    CHECK(rs_blend_arithmetic(0.4, 0.8) == 0.6000000000000001 || rs_blend_arithmetic(0.4, 0.8) == 0.6,
          "arithmetic mean of 0.4, 0.8 is %g", rs_blend_arithmetic(0.4, 0.8));
    CHECK_REL(rs_blend_harmonic(0.5, 1.0), 2.0 / 3.0, 1e-15, 0);
    CHECK(rs_blend_harmonic(0.0, 1.0) == 0.0, "a frictionless body makes a frictionless pair");
    CHECK(rs_blend_harmonic(3.0, INFINITY) == 6.0, "harmonic mean with a rigid body: 2a");
}

/* ---- hybrid ------------------------------------------------------------------------------ */

static void test_hybrid_drop(void)
{
    /* dropped flat from y0 = 0.5: falls H = 0.45 to the ground; e blended (0.4 + 0.8) / 2 */
    nlog = 0;
    rs_world_t *w = brick_with((kv_t[]){{"restitution", 0.4}, {"ground_restitution", 0.8},
                                        {"control_dt", 0.01}, {NULL, 0}});
    double H = 0.5 - 0.5 * H_BRICK, e = 0.6, t1 = sqrt(2 * H / G), v = G * t1;
    step(w, 100);
    const rs_event_t *i1 = nth_event(w, "impact", 0), *i2 = nth_event(w, "impact", 1);
    CHECK(i1 && i2, "two impacts in 1 s");
    if (i1 && i2) {
        CHECK_REL(i1->t, t1, 1e-9, 0);
        CHECK_REL(i1->after[VY], e * v, 1e-9, 0);                  /* Newton restitution */
        CHECK_REL(i2->t - i1->t, 2 * e * v / G, 1e-9, 0);          /* apex e^2 H, back down */
        CHECK_REL(i1->after[Y], 0.5 * H_BRICK, 1e-12, 0);
        CHECK(fabs(i1->after[W]) < 1e-12, "a flat impact does not spin: omega %g", i1->after[W]);
        double ke_ratio = (i1->after[VY] * i1->after[VY]) / (i1->before[VY] * i1->before[VY]);
        CHECK_REL(ke_ratio, e * e, 1e-9, 0);
    }
    /* the bounces shrink geometrically; the brick comes to rest and the sensor reads m g */
    step(w, 200);
    CHECK(!strcmp(rs_mode_name(w->model, w->data, 0), "stuck"), "mode %s",
          rs_mode_name(w->model, w->data, 0));
    CHECK_REL(sensors(w)[S_FY], 1.0 * G, 1e-12, 0);
    CHECK(sensors(w)[S_IN] == 1.0 && sensors(w)[S_PEN] == 0.0, "in contact, no penetration");
    rs_world_destroy(&w);

    /* the control step that holds the first impact: its mean contact force times dt is the
     * impulse m (1 + e) v */
    w = brick_with((kv_t[]){{"control_dt", 0.01}, {NULL, 0}});
    int k = (int)floor(t1 / 0.01);
    step(w, k);
    CHECK(sensors(w)[S_HAD] == 0.0, "no contact before the impact");
    step(w, 1);
    CHECK_REL(sensors(w)[S_FY] * 0.01, 1.0 * (1 + 0.5) * v, 1e-9, 0);
    CHECK(sensors(w)[S_HAD] == 1.0 && sensors(w)[S_SEP] == 1.0 && sensors(w)[S_IN] == 0.0,
          "an impact: had contact and separation, not in contact after");
    rs_world_destroy(&w);
}

static void test_hybrid_slide(void)
{
    /* resting on the ground with vx = 1: mu blended from 0.5 and 1.0 = 2/3 */
    nlog = 0;
    double mu = 2.0 / 3.0, v = 1.0;
    rs_world_t *w = brick_with((kv_t[]){{"y0", 0.05}, {"vx0", v}, {"ground_friction", 1.0},
                                        {"control_dt", 0.01}, {NULL, 0}});
    CHECK(!strcmp(rs_mode_name(w->model, w->data, 0), "sliding"), "starts sliding");
    step(w, 30);
    const rs_event_t *stop = nth_event(w, "stop", 0);
    CHECK(stop != NULL, "the brick stops");
    if (stop) {
        CHECK_REL(stop->t, v / (mu * G), 1e-9, 0);
        CHECK_REL(stop->after[X], v * v / (2 * mu * G), 1e-9, 0);
    }
    CHECK_REL(state(w)[X], v * v / (2 * mu * G), 1e-9, 0);
    rs_world_destroy(&w);
}

static void test_hybrid_push(void)
{
    /* at rest (mu = 0.5, m g = 9.81 N): a 4 N push is held; a 9 N push slides it with
     * a = (F - mu m g) / m, x = a t^2 / 2 after t */
    rs_world_t *w = brick_with((kv_t[]){{"y0", 0.05}, {"control_dt", 0.01}, {NULL, 0}});
    rs_status_t st;
    double f = 4.0;
    CHECK_OK(rs_set_commands(w->model, w->data, 0, &f, 1, &st), st);
    step(w, 50);
    CHECK(state(w)[X] == 0.0 && !strcmp(rs_mode_name(w->model, w->data, 0), "stuck"),
          "held by static friction: x %g", state(w)[X]);
    CHECK_REL(sensors(w)[S_FX], -4.0, 1e-12, 0);
    f = 9.0;
    CHECK_OK(rs_set_commands(w->model, w->data, 0, &f, 1, &st), st);
    step(w, 50);
    double a = 9.0 - 0.5 * G;
    CHECK_REL(state(w)[X], 0.5 * a * 0.25, 1e-9, 0);
    CHECK_REL(sensors(w)[S_FX], -0.5 * G, 1e-9, 0);
    rs_world_destroy(&w);
}

/* ---- time stepping ---------------------------------------------------------------------- */

static void test_time_stepping(void)
{
    double H = 0.45, t1 = sqrt(2 * H / G), v = G * t1, h = 1e-3;
    /* plastic drop (e = 0): lands within a step of the exact time, then rests: no penetration,
     * the contact force carries the weight (m g), the brick stays at rest height */
    nlog = 0;
    rs_world_t *w = brick_with((kv_t[]){{"contact_model", 1}, {"restitution", 0},
                                        {"ground_restitution", 0}, {"ts_step", h},
                                        {"control_dt", 0.01}, {NULL, 0}});
    CHECK(!strcmp(rs_mode_name(w->model, w->data, 0), "time_stepping"), "mode");
    step(w, 100);
    const rs_event_t *touch = nth_event(w, "touch", 0);
    CHECK(touch && fabs(touch->t - t1) <= 2 * h, "touch at %g, exact %g",
          touch ? touch->t : -1.0, t1);
    CHECK(fabs(state(w)[Y] - 0.05) < 1e-12, "rests at y %.17g", state(w)[Y]);
    CHECK_REL(sensors(w)[S_FY], 1.0 * G, 1e-9, 0);
    CHECK(sensors(w)[S_IN] == 1.0 && sensors(w)[S_PEN] == 0.0, "in contact without penetration");
    CHECK(nth_event(w, "separate", 0) == NULL, "a plastic impact does not bounce");
    rs_world_destroy(&w);

    /* a tiny ts_step under a long control step is coarsened to dt / 1e5 (contact.h): the
     * step completes, and the plastic drop has landed */
    w = brick_with((kv_t[]){{"contact_model", 1}, {"restitution", 0}, {"ground_restitution", 0},
                            {"ts_step", 1e-7}, {"control_dt", 1.0}, {NULL, 0}});
    step(w, 1);
    CHECK(fabs(state(w)[Y] - 0.05) < 1e-12, "landed: y %.17g", state(w)[Y]);
    rs_world_destroy(&w);

    /* with restitution e = 0.5: the rebound apex is e^2 H within O(h) */
    w = brick_with((kv_t[]){{"contact_model", 1}, {"ts_step", h}, {"control_dt", 0.001},
                            {NULL, 0}});
    double apex = 0.0;
    int n1 = (int)ceil(t1 / 0.001) + 2;
    step(w, n1);
    for (int i = 0; i < 400; i++) {
        step(w, 1);
        apex = fmax(apex, state(w)[Y] - 0.05);
    }
    CHECK(fabs(apex - 0.25 * H) < 0.25 * H * 0.02, "apex %g, e^2 H %g", apex, 0.25 * H);
    CHECK(fabs(v) > 0, "v");
    rs_world_destroy(&w);

    /* sliding: stops at v^2 / (2 mu g) within O(h v) */
    w = brick_with((kv_t[]){{"contact_model", 1}, {"y0", 0.05}, {"vx0", 1.0}, {"ts_step", h},
                            {"control_dt", 0.01}, {NULL, 0}});
    step(w, 40);
    double d = 1.0 / (2 * 0.5 * G);
    CHECK(fabs(state(w)[X] - d) < 2 * h * 1.0, "slid %g, closed form %g", state(w)[X], d);
    CHECK(fabs(state(w)[VX]) < 1e-12, "stopped (static friction holds it): vx %g", state(w)[VX]);
    rs_world_destroy(&w);
}

/* ---- compliant --------------------------------------------------------------------------- */

static void test_compliant(void)
{
    /* undamped boundary layer: two corners, each k (blended k = k), total 2k. Touch when the
     * corners reach the padding; in contact the centre moves as a spring with gravity:
     *   depth(t) = ds + A sin(wt - a), ds = m g / (2k), w = sqrt(2k / m), A = sqrt(ds^2 + (v/w)^2),
     * sin(a) = ds / A; it leaves after (pi + 2 a) / w at the speed it came in (energy). */
    nlog = 0;
    double k = 1e5, m = 1.0, pad = 0.0025, H = 0.45;
    rs_world_t *w = brick_with((kv_t[]){{"contact_model", 2}, {"damping", 0},
                                        {"ground_damping", 0}, {"control_dt", 0.01},
                                        {NULL, 0}});
    double tt = sqrt(2 * (H - pad) / G), v = G * tt;
    double om = sqrt(2 * k / m), ds = m * G / (2 * k), A = sqrt(ds * ds + v * v / (om * om));
    double dur = (M_PI + 2 * asin(ds / A)) / om;
    step(w, 40);
    const rs_event_t *in = nth_event(w, "touch", 0), *out = nth_event(w, "separate", 0);
    CHECK(in && out, "touch and separation");
    if (in && out) {
        CHECK_REL(in->t, tt, 1e-9, 0);
        CHECK_REL(out->t - in->t, dur, 1e-5, 0);
        CHECK_REL(out->after[VY], v, 1e-5, 0);
    }
    rs_world_destroy(&w);

    /* sliding at equilibrium depth: stops near v^2 / (2 mu g) (regularised below slip_speed) */
    w = brick_with((kv_t[]){{"contact_model", 2}, {"y0", 0.05 + pad - G / (2 * k)},
                            {"vx0", 1.0}, {"control_dt", 0.01}, {NULL, 0}});
    step(w, 40);
    double d = 1.0 / (2 * 0.5 * G);
    CHECK(fabs(state(w)[X] - d) < 0.005 * d, "slid %g, closed form %g", state(w)[X], d);
    CHECK_REL(sensors(w)[S_FY], 1.0 * G, 1e-3, 0);
    rs_world_destroy(&w);
}

/* ---- determinism: snapshot, continue; fork, continue: bit-exact ---------------------------- */

static void test_snapshots(void)
{
    for (int model = 0; model < 3; model++) {
        rs_world_t *w = brick_with((kv_t[]){{"contact_model", model}, {"vx0", 0.7},
                                            {"theta0", 0.3}, {"omega0", 2.0},
                                            {"control_dt", 0.01}, {NULL, 0}});
        rs_status_t st;
        step(w, 25);
        size_t cap = 0, len = 0;
        rs_snapshot_size(w, &cap);
        uint8_t *buf = malloc(cap);
        CHECK_OK(rs_snapshot_write(w, buf, cap, &len, &st), st);
        step(w, 30);
        rs_world_t *f = rs_world_fork(w, buf, len, &st);
        CHECK(f != NULL, "fork: %s", st.message);
        if (f) {
            step(f, 30);
            CHECK(same_state(f, w), "model %d: fork differs from the original", model);
            rs_world_destroy(&f);
        }
        free(buf);
        rs_world_destroy(&w);
    }
}

static void test_switch_model(void)
{
    rs_world_t *w = brick_with((kv_t[]){{"control_dt", 0.01}, {NULL, 0}});
    step(w, 10);
    double one = 1;
    rs_param_t p = {"brick", "contact_model", &one, 1};
    rs_status_t st;
    CHECK_OK(rs_world_set_params(w, &p, 1, &st), st);
    step(w, 1);
    CHECK(!strcmp(rs_mode_name(w->model, w->data, 0), "time_stepping"), "mode %s",
          rs_mode_name(w->model, w->data, 0));
    double bad = 1.5;
    p.values = &bad;
    CHECK(rs_world_set_params(w, &p, 1, &st) == RS_EINVAL, "contact_model 1.5 refused");
    double low = 0.01;
    rs_param_t q = {"brick", "y0", &low, 1};
    CHECK(rs_world_set_params(w, &q, 1, &st) == RS_EINVAL, "a brick starting underground: %s",
          st.message);
    rs_world_destroy(&w);
}

int main(void)
{
    test_blending();
    test_hybrid_drop();
    test_hybrid_slide();
    test_hybrid_push();
    test_time_stepping();
    test_compliant();
    test_snapshots();
    test_switch_model();
    return rs_test_done("test_brick");
}
