/* The finger and object (seed 000) under time_stepping and compliant contact (issue 10), against
 * closed forms: the impact of a finger at v0 on a free object of equal mass (no drag, no
 * friction) leaves v_f = (1 - e) v0 / 2, v_o = (1 + e) v0 / 2 and passes m (1 + e) v0 / 2
 * through the tip; an undamped layer is elastic (e = 1: the velocities exchange) and lasts
 * pi sqrt(mu / k), mu = m / 2; an object sliding at v against F_kinetic stops after
 * m v^2 / (2 F_kinetic). Forks step on bit-identically. */
#include "rs_robot.h"
#include "rs_snapshot.h"
#include "rs_test.h"
#include "world_with.h"

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

int main(void)
{
    double t2, h = 1e-3;
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
