/* SetParams against the live state (rs_robot_t.admissible, docs/physics-edges.md): a change
 * that would leave a body inside another, past a stop, unassemblable, or a compliant layer
 * holding more energy than before is refused with RS_EPRECOND naming the body and the depth or
 * angle, and changes nothing; one that fits is taken, and the steps after it create no energy.
 * The cases are worked examples with their closed-form depths and energies; the random
 * mid-run changes are test_physics_invariants --set-params. */
#include "rs_robot.h"
#include "rs_test.h"
#include "world_with.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const formulation[3] = {"hybrid", "time_stepping", "compliant"};

/* SetParams of one scalar `name` = v on entity e's name `ent`; rc, the message in st. */
static int set1(rs_world_t *w, const char *ent, const char *name, double v, rs_status_t *st)
{
    rs_param_t p = {ent, name, &v, 1};
    return rs_world_set_params(w, &p, 1, st);
}

/* A refusal that changes nothing: RS_EPRECOND, the message naming `who` and `what`, the world's
 * model and state as before. */
static void check_refused(rs_world_t *w, int rc, const rs_status_t *st, const rs_model_t *m0,
                          const double *x0, const char *who, const char *what, const char *label)
{
    CHECK(rc == RS_EPRECOND, "%s: refused with RS_EPRECOND, got %d (%s)", label, rc, st->message);
    CHECK(strstr(st->message, who) && strstr(st->message, what), "%s: the message names '%s' "
          "and '%s': %s", label, who, what, st->message);
    CHECK(strstr(st->message, "Reset") && strstr(st->message, "SetState"),
          "%s: the message says what to do: %s", label, st->message);
    CHECK(w->model == m0 && !memcmp(w->data->x, x0, sizeof(double) * (size_t)m0->nx),
          "%s: the world unchanged", label);
}

/* The number after `key` in a message (NAN when absent). */
static double number_after(const char *msg, const char *key)
{
    const char *p = strstr(msg, key);
    return p ? strtod(p + strlen(key), NULL) : NAN;
}

/* ---- brick -------------------------------------------------------------------------------- */

/* The brick's mechanical energy: kinetic, gravity's, and (compliant) the layer's springs,
 * sum over the corners of 1/2 k d^2, k the harmonic mean of the two stiffnesses. */
static double brick_energy(const rs_world_t *w)
{
    const rs_model_t *m = w->model;
    const double *x = w->data->x;
    double M = rs_model_param(m, 0, "mass", 0), W = rs_model_param(m, 0, "width", 0);
    double H = rs_model_param(m, 0, "height", 0), g = rs_model_param(m, 0, "gravity", 0);
    double E = 0.5 * M * (x[3] * x[3] + x[4] * x[4]) + 0.5 * M * (W * W + H * H) / 12 * x[5] * x[5] +
               M * g * x[1];
    if (rs_model_param(m, 0, "contact_model", 0) == 2) {
        double k1 = rs_model_param(m, 0, "stiffness", 0), k2 = rs_model_param(m, 0, "ground_stiffness", 0);
        double k = 2 * k1 * k2 / (k1 + k2);
        double pad = rs_model_param(m, 0, "padding", 0) + rs_model_param(m, 0, "ground_padding", 0);
        static const double sx[4] = {-0.5, 0.5, 0.5, -0.5}, sy[4] = {-0.5, -0.5, 0.5, 0.5};
        for (int i = 0; i < 4; i++) {
            double ry = sin(x[2]) * sx[i] * W + cos(x[2]) * sy[i] * H;
            double d = pad - (x[1] + ry);
            if (d > 0)
                E += 0.5 * k * d * d;
        }
    }
    return E;
}

/* A brick dropped onto the ground under formulation f, stepped until it rests (3 s). */
static rs_world_t *resting_brick(int f)
{
    rs_world_t *w = world_with("brick_drop", "brick",
                               (kv_t[]){{"contact_model", f}, {"restitution", 0.2},
                                        {"ground_restitution", 0.2}, {NULL, 0}});
    rs_status_t st;
    CHECK_OK(rs_step(w->model, w->data, 300, &st), st);
    CHECK(fabs(w->data->x[4]) < 1e-3, "%s: the brick rests (vy %g)", formulation[f], w->data->x[4]);
    return w;
}

static void brick_cases(void)
{
    for (int f = 0; f < 3; f++) {
        rs_world_t *w = resting_brick(f);
        rs_status_t st;
        const rs_model_t *m0 = w->model;
        double x0[6], y = w->data->x[1];
        memcpy(x0, w->data->x, sizeof x0);
        /* height 0.10 -> 0.30: the lowest corner 0.1 m below the ground (y = h/2 at rest, less
         * the compliant layer's compression) */
        int rc = set1(w, "brick", "height", 0.30, &st);
        char label[80];
        snprintf(label, sizeof label, "%s, height 0.30", formulation[f]);
        check_refused(w, rc, &st, m0, x0, "brick 'brick'", "below the ground", label);
        double depth = number_after(st.message, "would be ");
        CHECK(fabs(depth - (0.15 - y)) < 1e-5 * depth, "%s: depth %.9g m, expected 0.15 - y = %.9g m",
              label, depth, 0.15 - y);
        /* height 0.10 -> 0.12: 0.01 m below */
        rc = set1(w, "brick", "height", 0.12, &st);
        snprintf(label, sizeof label, "%s, height 0.12", formulation[f]);
        check_refused(w, rc, &st, m0, x0, "brick 'brick'", "below the ground", label);
        /* a lower brick is taken: it falls the 0.01 m, creating no energy */
        double E0 = brick_energy(w);
        rc = set1(w, "brick", "height", 0.08, &st);
        CHECK_OK(rc, st);
        double E1 = brick_energy(w), Emax = E0;
        for (int k = 0; k < 100 && rc == 0; k++) {
            rc = rs_step(w->model, w->data, 1, &st);
            Emax = fmax(Emax, brick_energy(w));
        }
        CHECK_OK(rc, st);
        CHECK(E1 <= E0 + 1e-12 && Emax <= E0 + 1e-6 * (1 + fabs(E0)),
              "%s: a lower brick creates no energy: %.12g -> %.12g J, at most %.12g J",
              formulation[f], E0, E1, Emax);
        rs_world_destroy(&w);
    }
    /* a resting brick switched to compliant: its two lower corners at the ground would be the
     * padding (0.0025 m) deep in the layer, 2 x 1/2 1e6 0.0025^2 = 6.25 J */
    for (int f = 0; f < 2; f++) {
        rs_world_t *w = resting_brick(f);
        rs_status_t st;
        double x0[6];
        memcpy(x0, w->data->x, sizeof x0);
        int rc = set1(w, "brick", "contact_model", 2, &st);
        char label[80];
        snprintf(label, sizeof label, "%s -> compliant at rest", formulation[f]);
        check_refused(w, rc, &st, w->model, x0, "brick 'brick'", "compliant layer", label);
        double E = number_after(st.message, "would hold ");
        CHECK(fabs(E - 6.25) < 1e-3, "%s: the layer would hold %.9g J, expected 6.25", label, E);
        rs_world_destroy(&w);
    }
    /* compliant at rest: padding 0.0025 -> 0.05 refused (the springs 0.0475 m deeper, about
     * 2 x 1/2 1e6 0.05^2 = 2,500 J); a thinner padding taken, and no energy created after it */
    rs_world_t *w = resting_brick(2);
    rs_status_t st;
    double x0[6];
    memcpy(x0, w->data->x, sizeof x0);
    int rc = set1(w, "brick", "padding", 0.05, &st);
    check_refused(w, rc, &st, w->model, x0, "brick 'brick'", "compliant layer", "padding 0.05");
    double E = number_after(st.message, "would hold ");
    CHECK(E > 2000 && E < 2600, "padding 0.05: %.6g J", E);
    rc = set1(w, "brick", "stiffness", 1e8, &st);
    check_refused(w, rc, &st, w->model, x0, "brick 'brick'", "compliant layer", "stiffness 1e8");
    double E0 = brick_energy(w);
    rc = set1(w, "brick", "padding", 0.002, &st);
    CHECK_OK(rc, st);
    double Emax = brick_energy(w);
    for (int k = 0; k < 100 && rc == 0; k++) {
        rc = rs_step(w->model, w->data, 1, &st);
        Emax = fmax(Emax, brick_energy(w));
    }
    CHECK_OK(rc, st);
    CHECK(Emax <= E0 + 1e-6 * (1 + fabs(E0)), "a thinner padding creates no energy: %.12g -> "
          "at most %.12g J", E0, Emax);
    rs_world_destroy(&w);
}

/* ---- finger ------------------------------------------------------------------------------- */

static void finger_cases(void)
{
    /* compliant, the finger pushing the object (held by static friction 1 N) with 0.5 N: at
     * rest 0.5 / k = 5e-5 m into the 0.0025 m layer (k = 1e4 N/m); padding -> 0.2 m would put
     * it 0.19755 m deep: 1/2 1e4 0.19755^2 = 195 J */
    rs_world_t *w = world_with("finger", "finger",
                               (kv_t[]){{"contact_model", 2}, {"finger_x0", 0.0},
                                        {"object_x0", 0.0025}, {NULL, 0}});
    rs_status_t st;
    double u = 0.5;
    CHECK_OK(rs_set_commands(w->model, w->data, 0, &u, 1, &st), st);
    CHECK_OK(rs_step(w->model, w->data, 500, &st), st);
    double x0[6];
    memcpy(x0, w->data->x, sizeof x0);
    double gap = x0[2] - x0[0];
    CHECK(gap < 0.0025 && gap > 0.002, "pressed into the layer: gap %.9g m", gap);
    int rc = set1(w, "finger", "finger_padding", 0.2, &st);
    check_refused(w, rc, &st, w->model, x0, "'finger'", "compliant layer", "finger padding 0.2");
    double E = number_after(st.message, "would hold ");
    CHECK(fabs(E - 0.5e4 * (0.2 - gap) * (0.2 - gap)) < 1e-6 * E, "%.9g J, 1/2 k d^2 = %.9g J",
          E, 0.5e4 * (0.2 - gap) * (0.2 - gap));
    /* to a rigid formulation: the gap is positive, so that is taken */
    CHECK_OK(set1(w, "finger", "contact_model", 0, &st), st);
    /* and back to compliant, pressed into the layer by 0.0025 - gap: refused (0 J before) */
    memcpy(x0, w->data->x, sizeof x0);
    rc = set1(w, "finger", "contact_model", 2, &st);
    check_refused(w, rc, &st, w->model, x0, "'finger'", "compliant layer", "hybrid -> compliant");
    rs_world_destroy(&w);
}

/* ---- differential drive ------------------------------------------------------------------- */

static void diff_drive_cases(void)
{
    for (int f = 0; f < 3; f++) {
        rs_world_t *w = world_with("diff_drive", "robot", (kv_t[]){{"contact_model", f}, {NULL, 0}});
        rs_status_t st;
        double wheels[2] = {5, 5};
        CHECK_OK(rs_set_commands(w->model, w->data, 0, wheels, 2, &st), st);
        CHECK_OK(rs_step(w->model, w->data, 200, &st), st); /* 0.9 m from its start */
        const double *x = w->data->x;
        double R = rs_model_param(w->model, 0, "robot_radius", 0), x0[3];
        memcpy(x0, x, sizeof x0);
        /* an obstacle of radius 0.2 placed 0.25 m deep onto the robot, ahead of it */
        double ob[3] = {x[0] + (R + 0.2 - 0.25) * cos(x[2]), x[1] + (R + 0.2 - 0.25) * sin(x[2]), 0.2};
        rs_param_t p = {"robot", "obstacles", ob, 3};
        int rc = rs_world_set_params(w, &p, 1, &st);
        char label[80];
        snprintf(label, sizeof label, "%s, an obstacle 0.25 m deep", formulation[f]);
        check_refused(w, rc, &st, w->model, x0, "'robot'", "inside obstacle 0", label);
        double depth = number_after(st.message, "would be ");
        CHECK(fabs(depth - 0.25) < 1e-6, "%s: depth %.12g", label, depth);
        /* the same obstacle clear of the robot and its layer is taken; driving into it then
         * stops at its boundary (hybrid, time_stepping) or in its layer (compliant) */
        double pad = rs_model_param(w->model, 0, "padding", 0) +
                     rs_model_param(w->model, 0, "obstacle_padding", 0);
        ob[0] = x[0] + (R + 0.2 + pad + 0.1) * cos(x[2]);
        ob[1] = x[1] + (R + 0.2 + pad + 0.1) * sin(x[2]);
        CHECK_OK(rs_world_set_params(w, &p, 1, &st), st);
        double worst = INFINITY;
        for (int k = 0; k < 200; k++) {
            int r = rs_step(w->model, w->data, 1, &st);
            CHECK_OK(r, st);
            if (r)
                break;
            worst = fmin(worst, hypot(x[0] - ob[0], x[1] - ob[1]) - R - 0.2);
        }
        CHECK(worst > (f == 2 ? -pad : -1e-8), "%s: clearance down to %.3g m", formulation[f], worst);
        rs_world_destroy(&w);
    }
}

/* ---- the arms ----------------------------------------------------------------------------- */

static void parallel_arm_cases(void)
{
    /* from a folded start (u = 0.087 m) the servos open the elbows to u = 0.18 m */
    double q0[2] = {1.5, 1.5};
    rs_param_t start = {"delta", "theta0", q0, 2};
    rs_status_t st;
    rs_world_t *w = rs_world_new("parallel_arm", &start, 1, 1, &st);
    CHECK(w != NULL, "%s", st.message);
    if (!w)
        return;
    double set[2] = {0.05, 0.05};
    CHECK_OK(rs_set_commands(w->model, w->data, 0, set, 2, &st), st);
    CHECK_OK(rs_step(w->model, w->data, 100, &st), st);
    const double *x = w->data->x;
    double x0[8];
    memcpy(x0, x, sizeof(double) * (size_t)w->model->nx);
    /* the elbows' distance u, from the servo angles (base along x, y down) */
    double L0 = 0.08, L1 = 0.05;
    double ax = -0.5 * L0 - L1 * cos(x[0]), ay = L1 * sin(x[0]);
    double bx = 0.5 * L0 + L1 * cos(x[1]), by = L1 * sin(x[1]);
    double u = hypot(bx - ax, by - ay), L2 = 0.5 * u / 1.4; /* u / 2 L2 = 1.4 */
    int rc = set1(w, "delta", "L2", L2, &st);
    check_refused(w, rc, &st, w->model, x0, "'delta'", "cannot be assembled", "L2 short");
    CHECK(fabs(number_after(st.message, "(u / 2 L2 = ") - 1.4) < 1e-5, "u / 2 L2 in: %s",
          st.message);
    /* a stop raised past a live angle */
    double lo[2] = {x[0] + 0.1, -M_PI / 2}, hi[2] = {M_PI / 2, M_PI / 2};
    rs_param_t p[2] = {{"delta", "theta_min", lo, 2}, {"delta", "theta_max", hi, 2}};
    rc = rs_world_set_params(w, p, 2, &st);
    check_refused(w, rc, &st, w->model, x0, "joint 1 of 'delta'", "past its stop", "theta_min");
    CHECK(fabs(number_after(st.message, "would be ") - 0.1) < 1e-6, "0.1 rad: %s", st.message);
    /* a longer L2 and stops around the angles are taken */
    CHECK_OK(set1(w, "delta", "L2", 0.12, &st), st);
    lo[0] = x[0] - 0.1;
    CHECK_OK(rs_world_set_params(w, p, 2, &st), st);
    CHECK_OK(rs_step(w->model, w->data, 10, &st), st);
    rs_world_destroy(&w);
}

static void serial_arm_cases(void)
{
    /* an arm driven onto its stop theta_max = 1 (joint 1), then the stop lowered to 0.5 */
    double lo[2] = {-1, -1}, hi[2] = {1, 1};
    rs_param_t stops[2] = {{"arm", "theta_min", lo, 2}, {"arm", "theta_max", hi, 2}};
    rs_status_t st;
    rs_world_t *w = rs_world_new("serial_arm", stops, 2, 1, &st);
    CHECK(w != NULL, "%s", st.message);
    if (!w)
        return;
    double set[2] = {2, 0};
    CHECK_OK(rs_set_commands(w->model, w->data, 0, set, 2, &st), st);
    CHECK_OK(rs_step(w->model, w->data, 300, &st), st);
    CHECK(w->data->x[0] == 1.0, "at the stop: %.17g", w->data->x[0]);
    double x0[6];
    memcpy(x0, w->data->x, sizeof x0);
    hi[0] = 0.5;
    int rc = rs_world_set_params(w, stops, 2, &st);
    check_refused(w, rc, &st, w->model, x0, "joint 1 of 'arm'", "past its stop", "theta_max 0.5");
    CHECK(fabs(number_after(st.message, "would be ") - 0.5) < 1e-6, "0.5 rad: %s", st.message);
    rs_world_destroy(&w);
}

/* ---- mobile manipulator ------------------------------------------------------------------- */

static void mobile_manipulator_cases(void)
{
    rs_world_t *w = world_with("mobile_manipulator", "mm", NULL);
    rs_status_t st;
    double u[6] = {-10, -10, 0, 0, 0, 0}; /* the base rolls 1 m on (wheels of 0.1 m), to +y */
    CHECK_OK(rs_set_commands(w->model, w->data, 0, u, 6, &st), st);
    CHECK_OK(rs_step(w->model, w->data, 100, &st), st);
    double x0[16];
    memcpy(x0, w->data->x, sizeof(double) * (size_t)w->model->nx);
    /* the left end effector's live position (its frame), then a table whose edge lies 0.05 m
     * below it, 0.2 m wide around it: clear of the start, 0.05 m deep at the live pose */
    const rs_entity_model_t *em = &w->model->ent[0];
    int f = 0;
    while (f < em->robot->nframes && strcmp(em->robot->frame_names[f], "left_ee"))
        f++;
    double pose[3], twist[3], force[2];
    em->robot->frame(em, &w->data->ent[0], w->data->x, w->data->u, f, pose, twist, force);
    double edge = pose[1] - 0.05, xmin = pose[0] - 0.1, xmax = pose[0] + 0.1;
    rs_param_t p[3] = {{"mm", "table_y", &edge, 1}, {"mm", "table_x_min", &xmin, 1},
                       {"mm", "table_x_max", &xmax, 1}};
    int rc = rs_world_set_params(w, p, 3, &st);
    check_refused(w, rc, &st, w->model, x0, "left end effector of 'mm'", "inside the table",
                  "table");
    CHECK(fabs(number_after(st.message, "would be ") - 0.05) < 1e-6, "0.05 m: %s", st.message);
    edge = pose[1] + 0.05; /* above it: taken */
    CHECK_OK(rs_world_set_params(w, p, 3, &st), st);
    rs_world_destroy(&w);
}

int main(void)
{
    brick_cases();
    finger_cases();
    diff_drive_cases();
    parallel_arm_cases();
    serial_arm_cases();
    mobile_manipulator_cases();
    return rs_test_done("test_set_params_live");
}
