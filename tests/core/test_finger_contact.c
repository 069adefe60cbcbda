/* The finger and object (the 1D Robot article) under time_stepping and compliant contact, against
 * closed forms: the impact of a finger at v0 on a free object of equal mass (no drag, no
 * friction) leaves v_f = (1 - e) v0 / 2, v_o = (1 + e) v0 / 2 and passes m (1 + e) v0 / 2
 * through the tip; an undamped layer is elastic (e = 1: the velocities exchange) and lasts
 * pi sqrt(mu / k), mu = m / 2; an object sliding at v against F_kinetic stops after
 * m v^2 / (2 F_kinetic). Forks step on bit-identically. */
#include "rs_robot.h"
#include "rs_snapshot.h"
#include "rs_test.h"
#include "seeded_rng.h"
#include "world_with.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { X_F, V_F, X_O, V_O, IMPULSE, WORK };

static rs_world_t *finger_with(const kv_t *kv) { return world_with("finger", "finger", kv); }

static double first_event(rs_world_t *w, int steps, const char *kind, double *t2,
                          const char *kind2)
{
    rs_status_t st;
    double t = NAN;
    *t2 = NAN;
    for (int k = 0; k < steps; k++) {
        CHECK_OK(rs_step(w->model, w->data, 1, &st), st);
        for (int i = 0; i < w->data->nevents; i++) {
            const char *name = rs_event_kind_name(w->model, &w->data->events[i]);
            if (isnan(t) && !strcmp(name, kind))
                t = w->data->events[i].t;
            else if (!isnan(t) && isnan(*t2) && !strcmp(name, kind2))
                *t2 = w->data->events[i].t;
        }
    }
    return t;
}

#define FREE_PAIR                                                                              \
    {"finger_drag", 0}, {"object_drag", 0}, {"static_friction", 0}, {"kinetic_friction", 0},   \
        {"finger_v0", 1.0}, {"control_dt", 0.01}

/* events of kind `name` in the last rs_step */
static int events_of(const rs_world_t *w, const char *name)
{
    int n = 0;
    for (int i = 0; i < w->data->nevents; i++)
        n += !strcmp(rs_event_kind_name(w->model, &w->data->events[i]), name);
    return n;
}

/* Time stepping, the finger pushing the object (F_a = 2 N > F_static = 1 N, default pair), at
 * ts_step 1e-3 and 1e-5. With restitution 0: one touch, then one contact for as long as it
 * pushes (no touch/separate pairs). With e = 0.5, Newton's law bounces it back until the
 * rebound e v is below resting_speed (1e-3 m/s): after the first touch at closing speed v1 at
 * most 1 + log(1e-3 / v1) / log(e) touches, and none in the last second. The gap never goes
 * below -4 nm (the README's bound). */
static void ts_pushing(void)
{
    double steps_of[2] = {1e-3, 1e-5};
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < 2; i++) {
            rs_world_t *w = finger_with((kv_t[]){{"contact_model", 1}, {"ts_step", steps_of[i]},
                                                 {"control_dt", 0.01}, {"object_x0", 0.3},
                                                 {"restitution", 0.5 * e}, {NULL, 0}});
            rs_status_t st;
            double f = 2.0, worst = 0, v1 = NAN;
            CHECK_OK(rs_set_commands(w->model, w->data, 0, &f, 1, &st), st);
            int touches = 0, separations = 0, late = 0, n = 300;
            for (int k = 0; k < n; k++) {
                CHECK_OK(rs_step(w->model, w->data, 1, &st), st);
                for (int j = 0; j < w->data->nevents; j++)
                    if (isnan(v1) && !strcmp(rs_event_kind_name(w->model, &w->data->events[j]),
                                             "touch"))
                        v1 = w->data->events[j].value;
                touches += events_of(w, "touch");
                separations += events_of(w, "separate");
                late += k >= n - 100 ? w->data->nevents : 0;
                worst = fmax(worst, w->data->x[X_F] - w->data->x[X_O]);
            }
            if (e == 0)
                CHECK(touches == 1 && separations == 0,
                      "ts_step %g, e = 0: %d touches, %d separations while pushing",
                      steps_of[i], touches, separations);
            else
                CHECK(touches >= 2 && touches <= 1 + log(1e-3 / v1) / log(0.5) + 1e-9 &&
                          separations == touches - 1 && late == 0,
                      "ts_step %g, e = 0.5 from %g m/s: %d touches, %d separations, %d late",
                      steps_of[i], v1, touches, separations, late);
            CHECK(worst <= 4e-9, "ts_step %g: the tip passed the face by %.3g m", steps_of[i],
                  worst);
            CHECK(w->data->sensors[1] > 0, "pushing: contact force %g N", w->data->sensors[1]);
            rs_world_destroy(&w);
        }
}

/* Time stepping's energy balance: the kinetic energy never rises by more than the actuator's
 * work F h v+ summed over the substeps, step by step. (a) A finger pushed (F = 5 N) into an
 * object a thousand times heavier held by static friction, restitution 0.97: each impact is
 * between the two bodies (ground friction is a force, with no impulse), the heavy object takes
 * a thousandth of the finger's momentum change and friction stops it within the step, and the
 * finger leaves with about e times the closing speed; the push decelerates it from there (a
 * rebound at e v with the step's push cancelled by the contact gained about e v h F per
 * bounce). (b) A coasting finger whose drag is stiff for the
 * step (h c / m = 5): the drag, implicit, only slows it (explicit, v+ = (1 - h c / m) v
 * reversed and grew it fourfold a step). */
static void ts_energy_balance(void)
{
    rs_status_t st;
    rs_world_t *w = finger_with((kv_t[]){{"contact_model", 1}, {"ts_step", 1e-3},
                                         {"control_dt", 0.01}, {"object_x0", 0.001},
                                         {"finger_v0", 0.05}, {"finger_drag", 0},
                                         {"object_mass", 1e3},
                                         {"static_friction", 1e3}, {"kinetic_friction", 1e3},
                                         {"restitution", 0.97}, {NULL, 0}});
    double f = 5.0, m = 1.0; /* the preset's finger mass */
    CHECK_OK(rs_set_commands(w->model, w->data, 0, &f, 1, &st), st);
    const double *x = w->data->x;
    double ke0 = 0.5 * m * x[V_F] * x[V_F], w0 = x[WORK];
    int bounces = 0;
    for (int k = 0; k < 100; k++) {
        CHECK_OK(rs_step(w->model, w->data, 1, &st), st);
        bounces += events_of(w, "touch");
        double ke = 0.5 * m * x[V_F] * x[V_F];
        CHECK(ke - ke0 <= x[WORK] - w0 + 1e-12, "step %d: kinetic energy %.9g -> %.9g J with "
              "work %.9g J", k, ke0, ke, x[WORK] - w0);
        ke0 = ke, w0 = x[WORK];
        CHECK(x[V_O] == 0.0, "the object held: v_o %g", x[V_O]);
    }
    CHECK(bounces >= 2, "the finger bounced (%d touches)", bounces);
    rs_world_destroy(&w);

    w = finger_with((kv_t[]){{"contact_model", 1}, {"ts_step", 1e-3}, {"control_dt", 0.01},
                             {"object_x0", 100.0}, {"finger_v0", 1.0}, {"finger_mass", 0.01},
                             {"finger_drag_law", 0}, {"finger_drag", 50.0}, {NULL, 0}});
    x = w->data->x;
    for (int k = 0; k < 20; k++) {
        double v = x[V_F];
        CHECK_OK(rs_step(w->model, w->data, 1, &st), st);
        CHECK(x[V_F] >= 0.0 && x[V_F] <= v, "step %d: drag took v_f %g to %g", k, v, x[V_F]);
    }
    rs_world_destroy(&w);
}

/* Time stepping on random pairs (seeded; RS_RUNS sets the count): masses, drags, frictions,
 * restitution, starts, ts_step and a push. (a) From random starts and velocities the gap never
 * goes below -4 nm. (b) Started touching at rest and pushed with F_a > F_static, the pair moves
 * together from the start: the contact force N = (m_o (F_a - D_f) + m_f (F_kinetic + D_o)) /
 * (m_f + m_o) stays positive up to the common terminal speed (F_a - D_f >= F_kinetic + D_o
 * there), so one touch and no separation. */
static void ts_random(void)
{
    int runs = getenv("RS_RUNS") ? atoi(getenv("RS_RUNS")) : 100, violations = 0;
    double worst = 0;
    for (int r = 0; r < runs; r++) {
        rng_state = 5000 + r;
        int pushing = r % 2;
        double fs = urand(0.0, 2.0), x0 = pushing ? 1.5 : urand(0.0, 1.4);
        kv_t kv[] = {{"contact_model", 1},
                     {"control_dt", 0.01},
                     {"ts_step", urand(0, 1) < 0.5 ? 1e-3 : 2.5e-4},
                     {"finger_mass", urand(0.2, 5.0)},
                     {"object_mass", urand(0.2, 5.0)},
                     {"finger_drag", urand(0.0, 1.0)},
                     {"object_drag", urand(0.0, 0.5)},
                     {"static_friction", fs},
                     {"kinetic_friction", fs * urand(0.0, 1.0)},
                     {"restitution", urand(0.0, 0.9)},
                     {"finger_x0", x0},
                     {"finger_v0", pushing ? 0.0 : urand(-1.0, 2.0)},
                     {"object_v0", pushing ? 0.0 : urand(-0.5, 0.5)},
                     {NULL, 0}};
        rs_world_t *w = finger_with(kv);
        rs_status_t st;
        double f = pushing ? fs + urand(0.1, 3.0) : urand(-1.0, 4.0);
        CHECK_OK(rs_set_commands(w->model, w->data, 0, &f, 1, &st), st);
        int touches = 0, separations = 0;
        double most = 0;
        for (int k = 0; k < 200; k++) {
            int rc = rs_step(w->model, w->data, 1, &st);
            CHECK_OK(rc, st);
            if (rc < 0)
                break;
            most = fmax(most, w->data->x[X_F] - w->data->x[X_O]);
            touches += events_of(w, "touch");
            separations += events_of(w, "separate");
        }
        worst = fmax(worst, most);
        int bad = most > 4e-9 || (pushing && (touches != 1 || separations != 0));
        if (bad) {
            fprintf(stderr, "seed %d%s: tip past the face by %.3g m, %d touches, %d separations\n",
                    5000 + r, pushing ? " (pushing)" : "", most, touches, separations);
            violations++;
        }
        rs_world_destroy(&w);
    }
    CHECK(violations == 0, "%d of %d random time-stepping runs broke the contact (worst %.3g m "
          "past)", violations, runs, worst);
}

/* Never silent: under time_stepping (and hybrid) a tip past the face beyond rounding is refused
 * by the finger's failure check with a specific error; under compliant the layer may be
 * entered. */
static void past_face_is_an_error(void)
{
    for (int model = 0; model < 3; model++) {
        rs_world_t *w = finger_with((kv_t[]){{"contact_model", model}, {NULL, 0}});
        const rs_entity_model_t *em = &w->model->ent[0];
        rs_status_t st;
        double x[6] = {1.5 + 1e-6, 0, 1.5, 0, 0, 0};
        int rc = em->robot->failure ? em->robot->failure(em, &w->data->ent[0], x, &st) : 0;
        if (model == 2)
            CHECK(rc == 0, "compliant: inside the layer is allowed (%d)", rc);
        else
            CHECK(rc == RS_ESIMFAIL && strstr(st.message, "past the object's face"),
                  "model %d: %d %s", model, rc, rc ? st.message : "");
        rs_world_destroy(&w);
    }
}

/* Compliant static friction (seeded; RS_RUNS sets the count): a finger at rest on the layer's
 * surface pushes with F_a on an object at rest; random masses, drags, frictions, layer
 * stiffness and damping. The layer is a spring-damper under a step force, so N = F_a - m_f d''
 * never exceeds 2 F_a. With F_a < F_static / 2 the object never moves (x_o exactly its start)
 * and the finger comes to rest in the layer at the depth F_a / k (k the harmonic mean of the
 * stiffnesses); with F_a > F_static the object slips exactly when the layer's force reaches
 * F_static (event slip, value F_static) and then moves. */
static void compliant_static_friction(void)
{
    int runs = getenv("RS_RUNS") ? atoi(getenv("RS_RUNS")) : 60, violations = 0;
    for (int r = 0; r < runs; r++) {
        rng_state = 6000 + r;
        int holds = r % 2 == 0;
        double fs = urand(0.2, 3.0), fk = fs * urand(0.0, 0.9), kf = urand(1e3, 1e5),
               ko = urand(1e3, 1e5), k = 2.0 * kf * ko / (kf + ko);
        double fa = holds ? urand(0.05, 0.49) * fs : fs * urand(1.05, 2.0);
        kv_t kv[] = {{"contact_model", 2},
                     {"control_dt", 0.01},
                     {"finger_mass", urand(0.2, 5.0)},
                     {"object_mass", urand(0.2, 5.0)},
                     {"finger_drag", urand(0.1, 2.0)},
                     {"object_drag", urand(0.0, 0.5)},
                     {"static_friction", fs},
                     {"kinetic_friction", fk},
                     {"finger_stiffness", kf},
                     {"object_stiffness", ko},
                     {"finger_damping", urand(5.0, 50.0)},
                     {"object_damping", urand(5.0, 50.0)},
                     {"object_x0", 0.2},
                     {"finger_x0", 0.2 - 0.0025},
                     {NULL, 0}};
        rs_world_t *w = finger_with(kv);
        rs_status_t st;
        CHECK_OK(rs_set_commands(w->model, w->data, 0, &fa, 1, &st), st);
        double slip_n = NAN;
        int bad = 0;
        for (int k2 = 0; k2 < 1000; k2++) {
            int rc = rs_step(w->model, w->data, 1, &st);
            CHECK_OK(rc, st);
            if (rc < 0)
                break;
            for (int i = 0; i < w->data->nevents; i++)
                if (isnan(slip_n) &&
                    !strcmp(rs_event_kind_name(w->model, &w->data->events[i]), "slip"))
                    slip_n = w->data->events[i].value;
            if (holds && w->data->x[X_O] != 0.2)
                bad = 1;
        }
        const double *x = w->data->x;
        double depth = 0.0025 - (x[X_O] - x[X_F]);
        if (holds)
            bad |= !isnan(slip_n) || fabs(depth - fa / k) > 1e-6 * (fa / k) + 1e-9 ||
                   fabs(x[V_F]) > 1e-6;
        else
            bad |= !(fabs(slip_n - fs) <= 1e-6 * fs) || !(x[X_O] > 0.2);
        if (bad) {
            fprintf(stderr, "seed %d (%s): x_o %.17g, depth %.9g (F_a / k %.9g), slip at %g N "
                    "(F_static %g)\n", 6000 + r, holds ? "holds" : "slips", x[X_O], depth,
                    fa / k, slip_n, fs);
            violations++;
        }
        rs_world_destroy(&w);
    }
    CHECK(violations == 0, "%d of %d compliant pushes broke static friction", violations, runs);
}

/* A force on the object (ApplyWrench body "object", for one control step, re-applied before each
 * step where it is held), under each formulation, against closed forms:
 *  - free object, no drag, no friction: one step of F accelerates it by F / m_o: v_o = F dt / m_o,
 *    x_o = x0 + F dt^2 / (2 m_o) (time_stepping's backward-Euler positions: x0 + F dt (dt + h)
 *    / (2 m_o)); after it the object coasts at that speed;
 *  - static friction (the compliant finger's static level included): held at F < F_static the
 *    object stays exactly put; held at F > F_static it slips and accelerates by the kinetic law
 *    a = (F - F_kinetic) / m_o (x_o = x0 + a t^2 / 2; time stepping's discrete forms below);
 *  - in contact, finger pushing F_a, object held back by F_o < 0, no friction or drag: they slide
 *    together at a = (F_a + F_o) / (m_f + m_o) and the contact force (the sensor) reads
 *    N = (m_o F_a - m_f F_o) / (m_f + m_o) instead of m_o F_a / (m_f + m_o). */
static void object_wrench(void)
{
    rs_status_t st;
    for (int model = 0; model < 3; model++) {
        double dt = 0.01, mo = 2.0, h = 1e-3, F = 3.0, x0 = 1.5;
        double tol = model == 1 ? 1e-12 : 1e-9;
        /* one step on a free object */
        rs_world_t *w = finger_with((kv_t[]){FREE_PAIR, {"finger_v0", 0.0}, {"object_mass", mo},
                                             {"contact_model", model}, {NULL, 0}});
        CHECK_OK(rs_apply_wrench(w->model, w->data, 0, "object", &F, 1, &st), st);
        CHECK_OK(rs_step(w->model, w->data, 1, &st), st);
        const double *x = w->data->x;
        CHECK_REL(x[V_O], F * dt / mo, tol, 0);
        CHECK_REL(x[X_O] - x0, model == 1 ? F * dt * (dt + h) / (2 * mo) : F * dt * dt / (2 * mo),
                  1e-9, 0);
        CHECK(x[X_F] == 0.0 && x[V_F] == 0.0, "model %d: the finger felt the object's force", model);
        CHECK_OK(rs_step(w->model, w->data, 1, &st), st); /* the wrench is over: it coasts */
        CHECK_REL(x[V_O], F * dt / mo, tol, 0);
        /* held forces below and above F_static */
        double fs = 1.0, fk = 0.4;
        for (int above = 0; above < 2; above++) {
            rs_world_t *f = finger_with((kv_t[]){FREE_PAIR, {"finger_v0", 0.0},
                                                 {"object_mass", mo}, {"static_friction", fs},
                                                 {"kinetic_friction", fk},
                                                 {"contact_model", model}, {NULL, 0}});
            double force = above ? 2.5 : -0.9, a = above ? (force - fk) / mo : 0.0;
            int slips = 0;
            for (int k = 0; k < 50; k++) {
                CHECK_OK(rs_apply_wrench(f->model, f->data, 0, "object", &force, 1, &st), st);
                CHECK_OK(rs_step(f->model, f->data, 1, &st), st);
                slips += events_of(f, "slip");
            }
            const double *y = f->data->x;
            double t = 50 * dt;
            if (above) {
                /* time stepping: its first internal step starts at rest, so the static level
                 * holds then, d = (F_static - F_kinetic) h / m_o less speed; and the
                 * backward-Euler positions lead by a t h / 2 */
                double d = model == 1 ? (fs - fk) * h / mo : 0.0;
                CHECK_REL(y[V_O], a * t - d, model == 1 ? 1e-9 : 1e-8, 0);
                CHECK_REL(y[X_O] - x0, a * t * t / 2 + (model == 1 ? a * t * h / 2 - t * d : 0.0),
                          model == 1 ? 1e-9 : 1e-8, 0);
                CHECK(model == 1 || slips == 1, "model %d: %d slip events", model, slips);
            } else {
                CHECK(y[X_O] == x0 && y[V_O] == 0.0, "model %d: held below F_static, x_o moved "
                      "to %.17g (v_o %g)", model, y[X_O], y[V_O]);
                CHECK(slips == 0, "model %d: %d slip events below F_static", model, slips);
            }
            rs_world_destroy(&f);
        }
        rs_world_destroy(&w);

        /* compliant stick-slip under a wrench that comes and goes: the finger rests in the
         * layer at the depth where N = F_a = 1.5 N > F_static; a held wrench of -1 N on the
         * object leaves a push of 0.5 N, which static friction holds (x_o exactly put); when
         * the wrench ends the push is N again and the object slips at once (event slip, value
         * N), the pair's momentum growing at F_a - F_kinetic */
        if (model == 2) {
            double k = 1e4, fa2 = 1.5, back = -1.0;
            rs_world_t *g = finger_with((kv_t[]){{"finger_drag", 0}, {"object_drag", 0},
                                                 {"static_friction", fs},
                                                 {"kinetic_friction", fk}, {"control_dt", dt},
                                                 {"object_x0", 1.0},
                                                 {"finger_x0", 1.0 - 0.0025 + fa2 / k},
                                                 {"contact_model", 2}, {NULL, 0}});
            CHECK_OK(rs_set_commands(g->model, g->data, 0, &fa2, 1, &st), st);
            for (int k2 = 0; k2 < 20; k2++) {
                CHECK_OK(rs_apply_wrench(g->model, g->data, 0, "object", &back, 1, &st), st);
                CHECK_OK(rs_step(g->model, g->data, 1, &st), st);
                CHECK(g->data->x[X_O] == 1.0 && events_of(g, "slip") == 0,
                      "compliant: a push of 0.5 N moved the object (x_o %.17g)", g->data->x[X_O]);
            }
            CHECK_OK(rs_step(g->model, g->data, 1, &st), st);
            CHECK(events_of(g, "slip") == 1, "compliant: the object slips when the wrench ends");
            CHECK(g->data->events[0].t == 20 * dt && fabs(g->data->events[0].value - fa2) < 1e-6,
                  "compliant: slip at t %.17g with push %g", g->data->events[0].t,
                  g->data->events[0].value);
            /* the layer's force is internal: the pair's momentum (m_f = m_o = 1 kg) gains
             * (F_a - F_kinetic) dt over the step while the object slides on */
            CHECK(g->data->x[V_O] > 0.0, "compliant: the object slides after the slip");
            CHECK_REL(g->data->x[V_F] + g->data->x[V_O], (fa2 - fk) * dt, 1e-8, 0);
            rs_world_destroy(&g);
        }

        /* in contact: the sensor sees the force on the object (compliant: the layer settles at
         * that force, its oscillation decaying within 2 s) */
        double fa = 2.0, fo = -1.0, pad = model == 2 ? 0.0025 : 0.0;
        rs_world_t *c = finger_with((kv_t[]){{"finger_drag", 0}, {"object_drag", 0},
                                             {"static_friction", 0}, {"kinetic_friction", 0},
                                             {"control_dt", dt}, {"object_x0", 1.0},
                                             {"finger_x0", 1.0 - pad}, {"contact_model", model},
                                             {NULL, 0}});
        CHECK_OK(rs_set_commands(c->model, c->data, 0, &fa, 1, &st), st);
        int steps = model == 2 ? 300 : 20;
        double v_start = NAN;
        for (int k = 0; k < steps; k++) {
            if (k == steps - 1)
                v_start = c->data->x[V_O];
            CHECK_OK(rs_apply_wrench(c->model, c->data, 0, "object", &fo, 1, &st), st);
            CHECK_OK(rs_step(c->model, c->data, 1, &st), st);
        }
        double n = (fa - fo) / 2.0, a = (fa + fo) / 2.0; /* m_f = m_o = 1 kg */
        double stol = model == 2 ? 1e-5 : 1e-9;
        CHECK_REL(c->data->sensors[1], n, stol, 0); /* contact_force */
        CHECK_REL(c->data->sensors[0], n, stol, 0); /* tip_force over the last step */
        CHECK_REL((c->data->x[V_O] - v_start) / dt, a, stol, 0);
        rs_world_destroy(&c);
    }
}

int main(void)
{
    double t2, h = 1e-3;
    compliant_static_friction();
    object_wrench();
    past_face_is_an_error();
    ts_pushing();
    ts_random();
    ts_energy_balance();
    /* time stepping, e = 0.5: touch within a step of t = 1.5 s; Newton's impact law */
    rs_world_t *w = finger_with((kv_t[]){FREE_PAIR, {"contact_model", 1}, {NULL, 0}});
    double t = first_event(w, 300, "touch", &t2, "separate");
    CHECK(fabs(t - 1.5) <= h + 1e-12, "touch at %.9g", t);
    CHECK_REL(w->data->x[V_F], 0.25, 1e-12, 0);
    CHECK_REL(w->data->x[V_O], 0.75, 1e-12, 0);
    CHECK_REL(w->data->x[IMPULSE], 0.75, 1e-12, 0);
    CHECK(w->data->x[X_O] - w->data->x[X_F] >= 0.0, "no penetration");
    rs_world_destroy(&w);

    /* compliant, undamped: elastic exchange, contact time pi sqrt(mu / k) */
    w = finger_with((kv_t[]){FREE_PAIR, {"contact_model", 2}, {"finger_damping", 0},
                             {"object_damping", 0}, {NULL, 0}});
    t = first_event(w, 300, "touch", &t2, "separate");
    CHECK_REL(t, 1.5 - 0.0025, 1e-9, 0);
    CHECK_REL(t2 - t, M_PI * sqrt(0.5 / 1e4), 1e-6, 0);
    CHECK(fabs(w->data->x[V_F]) < 1e-6 && fabs(w->data->x[V_O] - 1.0) < 1e-6,
          "velocities exchanged: v_f %g, v_o %g", w->data->x[V_F], w->data->x[V_O]);
    CHECK_REL(w->data->x[IMPULSE], 1.0, 1e-6, 0);
    rs_world_destroy(&w);

    /* time stepping: a sliding object stops after m v^2 / (2 F_kinetic) = 1 m, within h v */
    w = finger_with((kv_t[]){{"object_v0", 1.0}, {"object_drag", 0}, {"contact_model", 1},
                             {"control_dt", 0.01}, {NULL, 0}});
    first_event(w, 300, "touch", &t2, "separate");
    CHECK(fabs(w->data->x[X_O] - 1.5 - 1.0) <= h * 1.0, "slid %.9g m", w->data->x[X_O] - 1.5);
    CHECK(fabs(w->data->x[V_O]) <= 1e-12, "stopped: %g", w->data->x[V_O]);
    rs_world_destroy(&w);

    /* forks under both, with the finger pushing (2 N) through the impact */
    for (int model = 1; model <= 2; model++) {
        w = finger_with((kv_t[]){{"contact_model", model}, {"control_dt", 0.01}, {NULL, 0}});
        rs_status_t st;
        double f = 2.0;
        CHECK_OK(rs_set_commands(w->model, w->data, 0, &f, 1, &st), st);
        first_event(w, 100, "touch", &t2, "separate");
        rs_world_t *c = rs_world_fork(w, NULL, 0, &st);
        CHECK(c != NULL, "fork: %s", st.message);
        first_event(w, 150, "touch", &t2, "separate");
        if (c) {
            first_event(c, 150, "touch", &t2, "separate");
            CHECK(same_state(c, w), "model %d: the fork differs", model);
            rs_world_destroy(&c);
        }
        rs_world_destroy(&w);
    }
    return rs_test_done("test_finger_contact");
}
