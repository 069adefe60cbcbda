/* The worked example of docs/design.md ("How to add a robot"): a small robot module written
 * against rs_robot.h, a ball bouncing on the ground under a vertical force, checked against
 * its closed forms. The module is complete (the registry would accept it: rs_robot_check);
 * this test builds its model the way rs_model_build does for a preset, without registering it.
 *
 * Physics: y' = v, v' = f/m - g in flight; at the ground (guard y, falling through 0) the
 * bounce law v+ = -e v-; a bounce slower than rest_speed lands the ball (mode rest: y = v = 0),
 * which ends the Zeno sequence of ever shorter bounces; a push above the weight (guard
 * m g - f) lifts it off again. Dropped from rest at y0: first impact at t1 = sqrt(2 y0 / g)
 * with speed v1 = g t1; bounce k leaves at e^k v1 and lasts 2 e^k v1 / g. */
#include "rs_core.h"
#include "rs_model.h"
#include "rs_robot.h"
#include "rs_test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- the module: tables ------------------------------------------------------------------ */

enum { Y, V, NX };
enum { F, NU };
enum { S_HEIGHT, NS };
enum { P_MASS, P_GRAVITY, P_E, P_Y0, P_REST_SPEED, NP };
enum { MODE_FLIGHT, MODE_REST, NMODES };
enum { EV_BOUNCE, EV_LAND, EV_LIFTOFF, NEVENTS };

static const rs_var_desc_t ball_state[NX] = {
    {"y", "m", 0.0, INFINITY, "height above the ground"},
    {"v", "m/s", -INFINITY, INFINITY, "vertical velocity, up positive"},
};
static const rs_var_desc_t ball_actuators[NU] = {
    {"f", "N", -100.0, 100.0, "vertical force on the ball, up positive"},
};
static const rs_var_desc_t ball_sensors[NS] = {
    {"height", "m", 0.0, INFINITY, "y at the end of the control step"},
};
static const rs_param_desc_t ball_params[NP] = {
    {"mass", "kg", 1e-3, 1e3, P_MASS, 1, 1, 1.0, "the ball's mass"},
    {"gravity", "m/s^2", 0.0, 100.0, P_GRAVITY, 1, 1, 9.81, "gravity, along -y"},
    {"restitution", "1", 0.0, 1.0, P_E, 1, 1, 0.5, "bounce law v+ = -e v-"},
    {"y0", "m", 0.0, 100.0, P_Y0, 1, 1, 1.0, "initial height, at rest"},
    {"rest_speed", "m/s", 1e-9, 1.0, P_REST_SPEED, 1, 1, 1e-3,
     "a bounce leaving slower than this lands the ball instead"},
};
static const char *const ball_modes[NMODES] = {"flight", "rest"};
static const char *const ball_events[NEVENTS] = {"bounce", "land", "liftoff"};
static const rs_aux_desc_t ball_aux[1] = {{0}}; /* no private run variables (naux 0) */

/* ---- the module: callbacks --------------------------------------------------------------- */

static double weight(const rs_entity_model_t *em) { return em->p[P_MASS] * em->p[P_GRAVITY]; }

static int ball_nguards(const rs_entity_model_t *em) { return (void)em, 1; }

static void ball_init(const rs_entity_model_t *em, rs_entity_data_t *ed, double *x)
{
    x[Y] = em->p[P_Y0];
    x[V] = 0.0;
    ed->mode = x[Y] > 0.0 ? MODE_FLIGHT : MODE_REST;
}

static void ball_derivs(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                        const double *x, const double *u, double *xdot)
{
    (void)t;
    int flying = ed->mode == MODE_FLIGHT;
    xdot[Y] = flying ? x[V] : 0.0;
    xdot[V] = flying ? u[F] / em->p[P_MASS] - em->p[P_GRAVITY] : 0.0;
}

/* flight: the height (falls through 0 at impact); rest: weight - push (at liftoff) */
static void ball_guards(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                        const double *x, const double *u, double *g)
{
    (void)t;
    g[0] = ed->mode == MODE_FLIGHT ? x[Y] : weight(em) - u[F];
}

static void ball_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                      const double *u, const int *fired)
{
    (void)u;
    if (!fired[0])
        return;
    double before[NX] = {x[Y], x[V]};
    if (ed->mode == MODE_REST) {
        ed->mode = MODE_FLIGHT;
        rs_emit_event(ed, EV_LIFTOFF, t, u[F], before, x, NX);
        return;
    }
    double v_out = -em->p[P_E] * x[V];
    x[Y] = 0.0;
    if (v_out < em->p[P_REST_SPEED]) {
        x[V] = 0.0;
        ed->mode = MODE_REST;
        rs_emit_event(ed, EV_LAND, t, em->p[P_MASS] * -before[V], before, x, NX);
        return;
    }
    x[V] = v_out;
    rs_emit_event(ed, EV_BOUNCE, t, em->p[P_MASS] * (v_out - before[V]), before, x, NX);
}

/* new commands at a control-step boundary: a resting ball pushed harder than its weight flies */
static void ball_settle(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                        const double *u)
{
    if (ed->mode == MODE_REST && u[F] > weight(em)) {
        ed->mode = MODE_FLIGHT;
        rs_emit_event(ed, EV_LIFTOFF, t, u[F], x, x, NX);
    }
}

static void ball_sense(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                       const double *x, const double *u, double dt)
{
    (void)em, (void)t, (void)u, (void)dt;
    ed->s[S_HEIGHT] = x[Y];
}

static const rs_robot_t ball_robot = {
    .kind = "ball",
    .doc = "a ball bouncing on the ground under a vertical force",
    .nx = NX,
    .state = ball_state,
    .nu = NU,
    .actuators = ball_actuators,
    .ns = NS,
    .sensors = ball_sensors,
    .np = NP,
    .params = ball_params,
    .nmodes = NMODES,
    .mode_names = ball_modes,
    .nevent_kinds = NEVENTS,
    .event_names = ball_events,
    .naux = 0,
    .aux_vars = ball_aux,
    .nguards = ball_nguards,
    .init = ball_init,
    .derivs = ball_derivs,
    .guards = ball_guards,
    .jump = ball_jump,
    .settle = ball_settle,
    .sense = ball_sense,
};

/* ---- the test ----------------------------------------------------------------------------- */

/* A one-entity model of the ball with scalar overrides, built as rs_model_build builds a
 * preset's (defaults, overrides through the parameter table, then layout and checks). */
static int ball_model(rs_model_t *m, const char *const *names, const double *values, int n,
                      rs_status_t *st)
{
    memset(m, 0, sizeof *m);
    snprintf(m->preset, sizeof m->preset, "ball");
    rs_model_world_defaults(m);
    m->nentities = 1;
    m->ent[0].robot = &ball_robot;
    snprintf(m->ent[0].name, sizeof m->ent[0].name, "ball");
    for (int i = 0; i < NP; i++) {
        m->ent[0].p[ball_params[i].offset] = ball_params[i].def;
        m->ent[0].plen[i] = 1;
    }
    for (int i = 0; i < n; i++) {
        rs_param_t p = {"ball", names[i], &values[i], 1};
        int rc = rs_model_apply_param(m, &p, st);
        if (rc < 0)
            return rc;
    }
    return rs_model_finish(m, st);
}

/* Dropped from y0 = 1 m with e = 0.5: the bounce times, speeds and impulses of the closed form,
 * landing before the geometric series' sum, then at rest exactly on the ground. */
static void test_bounces(void)
{
    rs_status_t st;
    rs_model_t m;
    const double e = 0.5, y0 = 1.0, g = 9.81, mass = 2.0;
    int rc = ball_model(&m, (const char *[]){"restitution", "y0", "mass"},
                        (double[]){e, y0, mass}, 3, &st);
    CHECK_OK(rc, st);
    rs_data_t *d = rs_data_new(&m, 1, &st);
    CHECK(d != NULL, "data: %s", st.message);
    if (!d)
        return;
    double t1 = sqrt(2.0 * y0 / g), v1 = g * t1, t_bounce = t1, speed = v1;
    double t_land = t1 + 2.0 * e * v1 / (g * (1.0 - e)); /* the series' sum: an upper bound */
    int bounces = 0, landed = 0;
    while (d->t < t_land + 0.5) {
        CHECK_OK((rc = rs_step(&m, d, 1, &st)), st);
        if (rc < 0)
            break;
        for (int i = 0; i < d->nevents; i++) {
            const rs_event_t *ev = &d->events[i];
            if (ev->kind == EV_BOUNCE) {
                CHECK(fabs(ev->t - t_bounce) < 1e-9, "bounce %d at %.12g s, closed form %.12g",
                      bounces + 1, ev->t, t_bounce);
                CHECK_REL(ev->after[V], e * speed, 1e-8, 1e-9);
                CHECK_REL(ev->value, mass * (1.0 + e) * speed, 1e-8, 1e-9);
                speed *= e;
                t_bounce += 2.0 * speed / g;
                bounces++;
            } else if (ev->kind == EV_LAND) {
                CHECK(e * speed < 1e-3, "landed leaving at %g m/s", e * speed);
                CHECK(ev->t <= t_land, "landed at %g s, after the series' sum %g s", ev->t,
                      t_land);
                landed++;
            }
        }
    }
    /* speeds e^k v1 >= 1e-3 m/s: k <= log(1e-3 / v1) / log(e) */
    int expected = (int)floor(log(1e-3 / v1) / log(e));
    CHECK(bounces == expected, "%d bounces, closed form %d", bounces, expected);
    CHECK(landed == 1, "landed %d times", landed);
    CHECK(d->ent[0].mode == MODE_REST && d->x[Y] == 0.0 && d->x[V] == 0.0,
          "at rest on the ground: mode %d, y %g, v %g", d->ent[0].mode, d->x[Y], d->x[V]);
    CHECK(d->sensors[S_HEIGHT] == 0.0, "height sensor %g", d->sensors[S_HEIGHT]);
    rs_data_destroy(&d);
}

/* A resting ball pushed with twice its weight lifts off at the step boundary (settle) and rises
 * as y = (f/m - g) t^2 / 2; with the push below its weight it stays. */
static void test_liftoff(void)
{
    rs_status_t st;
    rs_model_t m;
    int rc = ball_model(&m, (const char *[]){"y0"}, (double[]){0.0}, 1, &st);
    CHECK_OK(rc, st);
    rs_data_t *d = rs_data_new(&m, 1, &st);
    CHECK(d != NULL, "data: %s", st.message);
    if (!d)
        return;
    double f = 0.9 * 9.81;
    CHECK_OK(rs_set_commands(&m, d, 0, &f, 1, &st), st);
    CHECK_OK(rs_step(&m, d, 50, &st), st);
    CHECK(d->ent[0].mode == MODE_REST && d->x[Y] == 0.0, "a push below the weight: y %g",
          d->x[Y]);
    double t0 = d->t;
    f = 2.0 * 9.81;
    CHECK_OK(rs_set_commands(&m, d, 0, &f, 1, &st), st);
    CHECK_OK(rs_step(&m, d, 100, &st), st);
    double dt = d->t - t0;
    CHECK(d->ent[0].mode == MODE_FLIGHT, "flying after the push");
    CHECK_REL(d->x[Y], 0.5 * 9.81 * dt * dt, 1e-8, 1e-9);
    CHECK_REL(d->x[V], 9.81 * dt, 1e-8, 1e-9);
    rs_data_destroy(&d);
}

/* A broken module: its jump puts the ball back on the ground, still falling, and logs
 * nothing, so the guard crosses again within the next step, at the same instant to rounding.
 * The step fails with a specific error after its cap of guard crossings per control step
 * instead of spinning until a compute budget or a watchdog stops it. */
static void sticky_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                        const double *u, const int *fired)
{
    (void)em, (void)ed, (void)t, (void)u;
    if (fired[0])
        x[Y] = 0.0;
}

static void test_jump_loop(void)
{
    rs_status_t st;
    rs_model_t m;
    int rc = ball_model(&m, (const char *[]){"y0"}, (double[]){0.01}, 1, &st);
    CHECK_OK(rc, st);
    rs_robot_t sticky = ball_robot;
    sticky.jump = sticky_jump;
    m.ent[0].robot = &sticky;
    rs_data_t *d = rs_data_new(&m, 1, &st);
    CHECK(d != NULL, "data: %s", st.message);
    if (!d)
        return;
    rc = rs_step(&m, d, 10, &st);
    CHECK(rc == RS_ESIMFAIL && strstr(st.message, "guard crossings in one control step"),
          "a jump its motion undoes at once: rc %d '%s'", rc, st.message);
    CHECK(d->t < 0.1, "stopped at t = %g s, in the step where the ball reached the ground", d->t);
    rs_data_destroy(&d);
}

int main(void)
{
    rs_status_t st;
    int rc = rs_robot_check(&ball_robot, &st);
    CHECK_OK(rc, st); /* the registry would accept the module */
    test_bounces();
    test_liftoff();
    test_jump_loop();
    return rs_test_done("test_example_robot");
}
