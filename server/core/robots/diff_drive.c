/* The differential-drive disk robot (the "Example Robotic Systems" chapter, "Mobile Disk
 * Robot", boxed equations
 * ddkinematicsmodel):
 *
 *     xdot     = r/2 (phi1_dot + phi2_dot) cos(theta)
 *     ydot     = r/2 (phi1_dot + phi2_dot) sin(theta)
 *     thetadot = r/(2L) (phi1_dot - phi2_dot)
 *
 * phi1_dot, phi2_dot are the right and left wheel speeds, r the wheel radius, L half the axle.
 *
 * Units are SI (m, rad, s) as everywhere on the wire since protocol 1.2; the seed works in
 * centimetres (18 cm wheels, L = 12 cm), so the defaults are the chapter's figures divided by 100
 * and its worked example ends at (2.776, 1.077) m instead of (277.6, 107.7) cm
 * (tests/core/test_diff_drive.c). x, y are in the entity's base frame (EntitySpec.base_pose).
 *
 * Obstacles are disks; as in the chapter's configuration-space inflation the robot is a point whose
 * centre may not come closer than R_robot + R_obstacle to an obstacle's centre. Reaching that
 * circle while heading into it is an event (guard: clearance falls through 0); the robot is then
 * "blocked": it may turn in place but not translate while its heading points into the obstacle.
 * A second guard, armed while blocked, fires when the heading turns away (the forward velocity's
 * component along the outward normal becomes positive) and frees it, unless the heading then
 * points into another obstacle it touches: every obstacle in contact constrains it at once
 * (wedged between two, it stays until the heading points away from both).
 *
 * That is the hybrid formulation (contact_model 0). Two more:
 *   time_stepping (1), the contact-dynamics lecture's velocity-level step with backward Euler
 *     positions, per internal
 *     step h (ts_step): the forward speed v+ = v_cmd + sum_i lambda_i (n_i . heading) with
 *     lambda_i >= 0, clearance_i + h (n_i . heading) v+ >= 0, complementary (rs_contact_solve on
 *     one velocity: the robot is kinematic, so its "mass" is 1 and the impulses are speeds);
 *   compliant (2), Klamp't's boundary layer on a kinematic robot: within the padding
 *     (padding + obstacle_padding) of obstacle i, at depth d_i, the layer is a massless
 *     spring-damper in series with the commanded motion: it pushes the centre back along the
 *     contact normal n_i at the speed (k / c) d_i (k, c the harmonic means of the robot's and
 *     the obstacles' stiffness and damping; only their ratio matters without a mass). Then
 *     d_i' = v_cmd |n_i . heading| - (k / c) d_i, so the depth never exceeds c v_cmd / k, the
 *     steady depth of a head-on approach (reached with the time constant c / k), at any
 *     incidence; at a graze the robot slides along the layer. Under the layer the obstacle is
 *     rigid: where the depth reaches the padding (clearance 0) the robot is held at that
 *     surface (an event) and its motion, the command plus the layers' pushes, is projected on
 *     the velocities that do not go into any obstacle it is held at (it slides along one, stops
 *     where two close the way: a gap narrower than the robot); it is freed (an event) when the
 *     motion without that contact leaves its surface. Several layers push at once (a wedge, a
 *     gap): their pushes along nearly opposite normals cancel, so the depths are not bounded by
 *     c v / k there, only by the padding. */
#include "../contact.h"
#include "../rs_robot.h"
#include "diff_drive_common.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

enum { X, Y, THETA, NX };
enum { PHI1_DOT, PHI2_DOT, NU };
enum { S_BUMPER, S_OBSTACLE, NS };
enum { MODE_FREE, MODE_BLOCKED, MODE_TS, MODE_COMPLIANT };
enum { EV_CONTACT, EV_RELEASE, EV_HELD, EV_FREED };
enum { AUX_OBSTACLE, AUX_INSIDE, NAUX }; /* index of the obstacle the robot is blocked by;
                                            compliant: bit i set while inside obstacle i's layer,
                                            bit HELD + i while held at obstacle i's surface */

#define MAX_OBSTACLES 16
#define HELD MAX_OBSTACLES /* the first bit of AUX_INSIDE that says "held" */
/* compliant: the largest layer rate k / c served (at 1e12 1/s: "more than 20000 guard crossings"
 * or ARK_TOO_MUCH_WORK driving into an obstacle; at 1e6 about 2,000 integrator steps per 10 ms
 * control step in the layer) */
#define DD_LAYER_RATE_MAX 1e6

/* parameter slots in rs_entity_model_t.p */
enum { P_R, P_L, P_RADIUS, P_X0, P_Y0, P_THETA0, P_OBSTACLES, P_END = P_OBSTACLES + 3 * MAX_OBSTACLES,
       P_MODEL = P_END, P_TS_STEP, P_PAD, P_K, P_C, P_OPAD, P_OK, P_OC, P_FEEDBACK };
enum { PI_R, PI_L, PI_RADIUS, PI_X0, PI_Y0, PI_THETA0, PI_OBSTACLES };

static const rs_var_desc_t dd_state[NX] = {
    {"x", "m", -INFINITY, INFINITY, "centre of the axle, x in the base frame"},
    {"y", "m", -INFINITY, INFINITY, "centre of the axle, y in the base frame"},
    {"theta", "rad", -INFINITY, INFINITY, "heading from the base frame's x axis (not wrapped)"},
};

static const rs_var_desc_t dd_actuators[NU] = {
    {"phi1_dot", "rad/s", -100.0, 100.0, "right wheel speed"},
    {"phi2_dot", "rad/s", -100.0, 100.0, "left wheel speed"},
};

static const rs_var_desc_t dd_sensor_vars[NS] = {
    {"bumper", "1", 0.0, 1.0, "1 while the robot is held at an obstacle's boundary, else 0"},
    {"obstacle", "1", -1.0, MAX_OBSTACLES - 1, "index of the obstacle touched, -1 when free"},
};

static const rs_param_desc_t dd_params[] = {
    {"wheel_radius", "m", 1e-8, 1e4, P_R, 1, 1, 0.09,
     "r: wheel radius (the example-systems chapter's robot has 18 cm wheels)"},
    {"half_axle", "m", 1e-8, 1e4, P_L, 1, 1, 0.12, "L: half the distance between the wheels"},
    {"robot_radius", "m", 0.0, 1e4, P_RADIUS, 1, 1, 0.15, "radius of the disk robot"},
    {"x0", "m", -1e7, 1e7, P_X0, 1, 1, 0.0, "initial x"},
    {"y0", "m", -1e7, 1e7, P_Y0, 1, 1, 0.0, "initial y"},
    {"theta0", "rad", -1e3, 1e3, P_THETA0, 1, 1, 0.0, "initial heading"},
    {"obstacles", "m", -1e7, 1e7, P_OBSTACLES, 0, 3 * MAX_OBSTACLES, 0.0,
     "disk obstacles as x, y, radius triples (radius >= 0), at most 16"},
    {"contact_model", "1", 0, 2, P_MODEL, 1, 1, 0,
     "contact formulation: 0 hybrid (guards, exact contact time), 1 time_stepping "
     "(velocity-level LCP), 2 compliant (boundary layer)"},
    {"ts_step", "s", 1e-7, 1.0, P_TS_STEP, 1, 1, 1e-3, "time_stepping: largest internal step"},
    {"padding", "m", 0, 10.0, P_PAD, 1, 1, 0.0025, "the robot's boundary layer (compliant)"},
    {"stiffness", "N/m", 1e-7, 1e8, P_K, 1, 1, 1e4,
     "the robot's surface stiffness (compliant; the layer's rate k / c, harmonic means, at most "
     "1e6 1/s: its time constant c / k at least 1 us, which the integrator resolves)"},
    {"damping", "N s/m", 1e-2, 1e14, P_C, 1, 1, 100.0,
     "the robot's surface damping (compliant; see stiffness for the rate k / c)"},
    {"obstacle_padding", "m", 0, 10.0, P_OPAD, 1, 1, 0.0, "the obstacles' boundary layer"},
    {"obstacle_stiffness", "N/m", 1e-7, 1e8, P_OK, 1, 1, 1e4,
     "the obstacles' stiffness (see stiffness for the rate k / c)"},
    {"obstacle_damping", "N s/m", 1e-2, 1e14, P_OC, 1, 1, 100.0,
     "the obstacles' damping (see stiffness for the rate k / c)"},
    {"contact_feedback", "1", 0, 1, P_FEEDBACK, 1, 1, 0,
     "1: report (robot, obstacle i) pairs with contact in the last step in State.contacts"},
};

/* the private run variables, as a snapshot restore validates them */
static const rs_aux_desc_t dd_aux[NAUX] = {
    {"obstacle", RS_AUX_INDEX, 0, 0, PI_OBSTACLES, 3, 1u << MODE_BLOCKED,
     "the obstacle the robot is blocked by (a triple of 'obstacles'); -1 when free"},
    {"inside", RS_AUX_INTEGER, 0, 4294967295.0, 0, 0, 0,
     "compliant: bit i set while the robot is inside obstacle i's boundary layer, bit 16 + i "
     "while it is held at obstacle i's rigid surface under the layer"},
};

static const char *const dd_modes[] = {"free", "blocked", "time_stepping", "compliant"};
static const char *const dd_events[] = {"contact", "release", "held", "freed"};

static int n_obstacles(const rs_entity_model_t *em) { return em->plen[PI_OBSTACLES] / 3; }

static const double *obstacle(const rs_entity_model_t *em, int i)
{
    return &em->p[P_OBSTACLES + 3 * i];
}

/* Clearance of the robot centre to obstacle i's inflated boundary, and the outward normal. */
static double clearance(const rs_entity_model_t *em, const double *x, int i, double *nx, double *ny)
{
    const double *o = obstacle(em, i);
    double dx = x[X] - o[0], dy = x[Y] - o[1];
    double dist = rs_hypot(dx, dy);
    if (nx) {
        *nx = dist > 0 ? dx / dist : 1.0;
        *ny = dist > 0 ? dy / dist : 0.0;
    }
    return dist - (em->p[P_RADIUS] + o[2]);
}

static double forward_speed(const rs_entity_model_t *em, const double *u)
{
    return wheels_forward_speed(em->p[P_R], u[PHI1_DOT], u[PHI2_DOT]);
}

/* Forward velocity along the outward normal of obstacle i: > 0 moves away from it. */
static double outward_speed(const rs_entity_model_t *em, const double *x, const double *u, int i)
{
    double nx, ny;
    clearance(em, x, i, &nx, &ny);
    double v = forward_speed(em, u);
    return v * (cos(x[THETA]) * nx + sin(x[THETA]) * ny);
}

/* guards: obstacle i's contact (hybrid) or layer surface (compliant), the release while blocked
 * (hybrid), then obstacle i's rigid surface under its layer (compliant) */
static int dd_nguards(const rs_entity_model_t *em) { return 2 * n_obstacles(em) + 1; }

static int model_of(const rs_entity_model_t *em) { return (int)em->p[P_MODEL]; }
static double pad_of(const rs_entity_model_t *em) { return em->p[P_PAD] + em->p[P_OPAD]; }
static uint32_t bits_of(const rs_entity_data_t *ed) { return (uint32_t)ed->aux[AUX_INSIDE]; }
static int inside(const rs_entity_data_t *ed, int i) { return (int)(bits_of(ed) >> i & 1u); }
static int held(const rs_entity_data_t *ed, int i) { return (int)(bits_of(ed) >> (HELD + i) & 1u); }
static void flip(rs_entity_data_t *ed, int bit) { ed->aux[AUX_INSIDE] = bits_of(ed) ^ (1u << bit); }
/* compliant with no padding has no layer: the obstacles are rigid at once */
static int has_layer(const rs_entity_model_t *em) { return pad_of(em) > 0.0; }

/* the mode contact_model and the state call for (reset, new parameters) */
static void pick_mode(const rs_entity_model_t *em, rs_entity_data_t *ed, const double *x)
{
    int model = model_of(em);
    uint32_t bits = 0;
    ed->aux[AUX_OBSTACLE] = -1;
    if (model == RS_CONTACT_COMPLIANT)
        for (int i = 0; i < n_obstacles(em); i++)
            bits |= (uint32_t)(clearance(em, x, i, NULL, NULL) < pad_of(em)) << i;
    ed->aux[AUX_INSIDE] = bits;
    ed->mode = model == RS_CONTACT_TIME_STEPPING ? MODE_TS
               : model == RS_CONTACT_COMPLIANT   ? MODE_COMPLIANT
                                                 : MODE_FREE;
}

static int dd_validate(const rs_entity_model_t *em, rs_status_t *st)
{
    if (em->p[P_MODEL] != model_of(em))
        return rs_fail(st, RS_EINVAL,
                       "'%s.contact_model' = %g: it is 0 (hybrid), 1 (time_stepping) or 2 "
                       "(compliant)",
                       em->name, em->p[P_MODEL]);
    if (em->plen[PI_OBSTACLES] % 3 != 0)
        return rs_fail(st, RS_EINVAL,
                       "'%s.obstacles' takes x, y, radius triples; got %d values", em->name,
                       em->plen[PI_OBSTACLES]);
    double rate = rs_blend_harmonic(em->p[P_K], em->p[P_OK]) /
                  rs_blend_harmonic(em->p[P_C], em->p[P_OC]);
    if (model_of(em) == RS_CONTACT_COMPLIANT && rate > DD_LAYER_RATE_MAX)
        return rs_fail(st, RS_EINVAL,
                       "'%s': the compliant layer's rate k / c (harmonic means of the stiffnesses "
                       "and the dampings) is %g 1/s, above %g (a time constant the integrator "
                       "cannot resolve in a control step); lower the stiffness or raise the "
                       "damping",
                       em->name, rate, DD_LAYER_RATE_MAX);
    double start[NX] = {em->p[P_X0], em->p[P_Y0], em->p[P_THETA0]};
    for (int i = 0; i < n_obstacles(em); i++) {
        if (obstacle(em, i)[2] < 0)
            return rs_fail(st, RS_ERANGE, "obstacle %d of '%s' has a negative radius %g", i,
                           em->name, obstacle(em, i)[2]);
        double c = clearance(em, start, i, NULL, NULL);
        if (c < 0)
            return rs_fail(st, RS_EINVAL,
                           "the initial pose (%g, %g) of '%s' overlaps obstacle %d by %g m; move "
                           "x0/y0 or the obstacle",
                           start[X], start[Y], em->name, i, -c);
    }
    return 0;
}

static void dd_init(const rs_entity_model_t *em, rs_entity_data_t *ed, double *x)
{
    x[X] = em->p[P_X0];
    x[Y] = em->p[P_Y0];
    x[THETA] = em->p[P_THETA0];
    pick_mode(em, ed, x);
}

/* compliant: the centre's velocity before the rigid surfaces, the command plus the layers'
 * pushes (k / c) d_i n_i */
static void layer_motion(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                         const double *u, double *w)
{
    double v = forward_speed(em, u);
    double rate = rs_blend_harmonic(em->p[P_K], em->p[P_OK]) /
                  rs_blend_harmonic(em->p[P_C], em->p[P_OC]);
    w[X] = v * cos(x[THETA]);
    w[Y] = v * sin(x[THETA]);
    for (int i = 0; i < n_obstacles(em); i++) {
        if (!inside(ed, i))
            continue;
        double nx, ny, depth = pad_of(em) - clearance(em, x, i, &nx, &ny);
        w[X] += rate * fmax(0.0, depth) * nx;
        w[Y] += rate * fmax(0.0, depth) * ny;
    }
}

/* The velocity w projected on the cone of velocities that go into none of the obstacles the
 * robot is held at (n_i . z >= 0; obstacle `skip` left out): the nearest of w, its projections
 * on the cone's edges (the lines n_i . z = 0) and 0 that lies in the cone. */
static void project(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                    int skip, const double *w, double *z)
{
    double n[MAX_OBSTACLES][2];
    int k = 0;
    for (int i = 0; i < n_obstacles(em); i++)
        if (i != skip && held(ed, i))
            clearance(em, x, i, &n[k][0], &n[k][1]), k++;
    double tol = 1e-12 * rs_hypot(w[X], w[Y]), best = INFINITY;
    z[X] = w[X], z[Y] = w[Y];
    int in_cone = 1;
    for (int j = 0; j < k; j++)
        in_cone &= n[j][0] * w[X] + n[j][1] * w[Y] >= 0.0;
    if (in_cone)
        return;
    z[X] = z[Y] = 0.0;
    for (int e = 0; e < k; e++) {
        double into = n[e][0] * w[X] + n[e][1] * w[Y];
        if (!(into < 0.0) || -into >= best)
            continue;
        double cx = w[X] - into * n[e][0], cy = w[Y] - into * n[e][1];
        int ok = 1;
        for (int j = 0; j < k && ok; j++)
            ok = j == e || n[j][0] * cx + n[j][1] * cy >= -tol;
        if (ok)
            z[X] = cx, z[Y] = cy, best = -into;
    }
}

/* Held at obstacle i: how fast the motion would go into it without that contact (> 0 while the
 * contact is needed; its guard frees the robot where this falls through 0). */
static double hold_need(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                        const double *u, int i)
{
    double w[2], z[2], nx, ny;
    layer_motion(em, ed, x, u, w);
    project(em, ed, x, i, w, z);
    clearance(em, x, i, &nx, &ny);
    return -(nx * z[X] + ny * z[Y]);
}

static void dd_derivs(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                      const double *x, const double *u, double *xdot)
{
    (void)t;
    double r = em->p[P_R], L = em->p[P_L];
    double v = ed->mode == MODE_BLOCKED ? 0.0 : wheels_forward_speed(r, u[PHI1_DOT], u[PHI2_DOT]);
    if (ed->mode == MODE_TS) { /* advanced by dd_advance */
        xdot[X] = xdot[Y] = xdot[THETA] = 0.0;
        return;
    }
    if (ed->mode == MODE_COMPLIANT) { /* the layers push back, the rigid surfaces hold */
        double w[2];
        layer_motion(em, ed, x, u, w);
        project(em, ed, x, -1, w, xdot);
    } else {
        xdot[X] = v * cos(x[THETA]);
        xdot[Y] = v * sin(x[THETA]);
    }
    xdot[THETA] = wheels_turn_rate(r, L, u[PHI1_DOT], u[PHI2_DOT]);
}

/* rs_robot_t.jacobian, free and blocked: x' = v cos theta, y' = v sin theta, theta' = w with
 * v = r (phi1' + phi2') / 2 (0 blocked), w = r (phi1' - phi2') / (2 L); the wheel radius and
 * track among the parameters. Compliant and time_stepping: none (differenced). */
static int dd_jacobian(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                       const double *x, const double *u, int nq, const int *slot, double *f,
                       double *J, int ld, unsigned char *known)
{
    if (ed->mode != MODE_FREE && ed->mode != MODE_BLOCKED)
        return -1;
    dd_derivs(em, ed, t, x, u, f);
    double r = em->p[P_R], L = em->p[P_L], c = cos(x[THETA]), s = sin(x[THETA]);
    double dv = ed->mode == MODE_BLOCKED ? 0.0 : 0.5 * r; /* dv / dphi_dot, either wheel */
    double v = dv * (u[PHI1_DOT] + u[PHI2_DOT]), dw = r / (2.0 * L);
    for (int i = 0; i < NX; i++)
        for (int k = 0; k < NX + NU + nq; k++)
            J[i * ld + k] = 0.0;
    J[X * ld + THETA] = -v * s;
    J[Y * ld + THETA] = v * c;
    J[X * ld + NX + PHI1_DOT] = J[X * ld + NX + PHI2_DOT] = dv * c;
    J[Y * ld + NX + PHI1_DOT] = J[Y * ld + NX + PHI2_DOT] = dv * s;
    J[THETA * ld + NX + PHI1_DOT] = dw;
    J[THETA * ld + NX + PHI2_DOT] = -dw;
    double sum = u[PHI1_DOT] + u[PHI2_DOT], diff = u[PHI1_DOT] - u[PHI2_DOT];
    for (int k = 0; k < nq; k++) {
        double *col = J + NX + NU + k;
        if (slot[k] == P_R) {
            double dvr = ed->mode == MODE_BLOCKED ? 0.0 : 0.5 * sum;
            col[X * ld] = dvr * c, col[Y * ld] = dvr * s, col[THETA * ld] = diff / (2.0 * L);
            known[k] = 1;
        } else if (slot[k] == P_L) {
            col[THETA * ld] = -r * diff / (2.0 * L * L);
            known[k] = 1;
        }
    }
    return 0;
}

/* rs_robot_t.time_scale: inside a compliant layer the depth relaxes as d' = ... - (k / c) d,
 * with the time constant c / k (an explicit step much longer is unstable); none elsewhere. */
static double dd_time_scale(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                            const double *x)
{
    (void)x;
    if (ed->mode != MODE_COMPLIANT || (bits_of(ed) & ((1u << HELD) - 1u)) == 0)
        return 0.0;
    return rs_blend_harmonic(em->p[P_C], em->p[P_OC]) / rs_blend_harmonic(em->p[P_K], em->p[P_OK]);
}

static void dd_guards(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                      const double *x, const double *u, double *g)
{
    (void)t;
    int n = n_obstacles(em), layer = ed->mode == MODE_COMPLIANT && has_layer(em);
    for (int i = 0; i < n; i++)
        g[i] = ed->mode == MODE_FREE ? clearance(em, x, i, NULL, NULL)
               : layer
                   ? (inside(ed, i) ? -1.0 : 1.0) * (clearance(em, x, i, NULL, NULL) - pad_of(em))
                   : 1.0;
    /* release: while blocked, fires when the heading turns away from the obstacle */
    g[n] = ed->mode == MODE_BLOCKED ? -outward_speed(em, x, u, (int)ed->aux[AUX_OBSTACLE]) : 1.0;
    /* compliant: reaching the rigid surface under a layer; held there, no longer pressed on it */
    for (int i = 0; i < n; i++)
        g[n + 1 + i] = ed->mode != MODE_COMPLIANT ? 1.0
                       : held(ed, i)             ? hold_need(em, ed, x, u, i)
                                                 : clearance(em, x, i, NULL, NULL);
}

/* Move the centre along obstacle i's normal until side * (clearance - target) > 0 (side +1:
 * out to the boundary at clearance target, -1: in to it): an event's state, located to the root
 * finder's tolerance or placed to rounding, may lie a little on the wrong side, where the new
 * mode's guard (watched for + to - crossings only) would start below 0 and never fire. Strictly
 * past it: a guard exactly 0 at a restart is set aside by the root finder until it moves off 0
 * (SUNDIALS' rootfinding), and one that moves off to the negative side is then never seen to
 * cross (a robot released at a wedge's corner turned into the other obstacle unseen). */
static void place_at(const rs_entity_model_t *em, double *x, int i, double target, int side)
{
    const double *o = obstacle(em, i);
    double ulp = DBL_EPSILON * (fabs(x[X]) + fabs(x[Y]) + fabs(o[0]) + fabs(o[1]) + o[2] +
                                em->p[P_RADIUS]);
    for (int it = 0; it < 60; it++) {
        double nx, ny, g = side * (clearance(em, x, i, &nx, &ny) - target);
        if (g > 0)
            return;
        double step = side * (-g + ulp * (double)(1 << (it < 30 ? it : 30)));
        x[X] += step * nx;
        x[Y] += step * ny;
    }
}

static void block(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x, int i)
{
    double before[NX] = {x[X], x[Y], x[THETA]};
    /* place the centre exactly on the inflated boundary: no penetration, not even rounding */
    double nx, ny;
    double c = clearance(em, x, i, &nx, &ny);
    x[X] -= c * nx;
    x[Y] -= c * ny;
    place_at(em, x, i, 0.0, 1); /* not inside by rounding: its guard watches for the next touch */
    ed->mode = MODE_BLOCKED;
    ed->aux[AUX_OBSTACLE] = i;
    rs_emit_event(ed, EV_CONTACT, t, i, before, x, NX);
}

static void release(rs_entity_data_t *ed, double t, const double *x)
{
    if (ed->aux[AUX_OBSTACLE] < 0)
        return;
    double i = ed->aux[AUX_OBSTACLE];
    ed->mode = MODE_FREE;
    ed->aux[AUX_OBSTACLE] = -1;
    rs_emit_event(ed, EV_RELEASE, t, i, x, x, NX);
}

/* Block on an obstacle (other than `skip`) the robot touches, to the rounding of its placement
 * on another's boundary, while heading into it; returns whether it did. */
static int block_touching(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                          const double *u, int skip)
{
    for (int i = 0; i < n_obstacles(em); i++) {
        double scale = em->p[P_RADIUS] + obstacle(em, i)[2] + 0.01; /* m */
        if (i != skip && clearance(em, x, i, NULL, NULL) <= 1e-12 * scale &&
            outward_speed(em, x, u, i) < 0) {
            block(em, ed, t, x, i);
            return 1;
        }
    }
    return 0;
}

/* Released from obstacle `held`: blocked again by another it touches while heading into it, or
 * free, out of every obstacle it touches to rounding (a centre placed on one boundary may lie
 * an ulp inside another's, or exactly on it: that guard then starts below or at 0 and never
 * fires, and the robot, heading out at release, curved back into the obstacle 0.7 mm deep with
 * no event) */
static void release_from(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                         const double *u, int held)
{
    release(ed, t, x);
    if (block_touching(em, ed, t, x, u, held))
        return;
    /* out of all it touches at once (those within rounding of their boundaries, either side),
     * along the sum of their outward normals, which takes each one's clearance up
     * (1 + n_i . n_j > 0): placed out of one at a time, a robot wedged between two (normals
     * nearly opposite) went back an ulp into the other, and turned into it unseen */
    double ulp = DBL_EPSILON * (fabs(x[X]) + fabs(x[Y]) + em->p[P_RADIUS]);
    for (int it = 0; it < 60; it++) {
        double sx = 0.0, sy = 0.0, need[MAX_OBSTACLES], n[MAX_OBSTACLES][2];
        int touching[MAX_OBSTACLES], inside_any = 0;
        for (int i = 0; i < n_obstacles(em); i++) {
            double scale = em->p[P_RADIUS] + obstacle(em, i)[2] + 0.01; /* m */
            double c = clearance(em, x, i, &n[i][0], &n[i][1]);
            touching[i] = fabs(c) <= 1e-12 * scale; /* on its boundary, either side */
            need[i] = -c;
            inside_any |= touching[i] && c <= 0.0;
            if (touching[i])
                sx += n[i][0], sy += n[i][1];
        }
        double norm = rs_hypot(sx, sy);
        if (!inside_any || !(norm > 0.0))
            return;
        sx /= norm, sy /= norm;
        double step = 0.0;
        for (int i = 0; i < n_obstacles(em); i++) {
            double along = n[i][0] * sx + n[i][1] * sy;
            if (touching[i] && along > 0.0)
                step = fmax(step, need[i] / along);
        }
        step += ulp * (double)(1 << (it < 30 ? it : 30));
        x[X] += step * sx;
        x[Y] += step * sy;
    }
}

/* compliant: onto obstacle i's rigid surface (exactly, then out by rounding, as block does) */
static void hold(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x, int i)
{
    double before[NX] = {x[X], x[Y], x[THETA]}, nx, ny;
    double c = clearance(em, x, i, &nx, &ny);
    x[X] -= c * nx;
    x[Y] -= c * ny;
    place_at(em, x, i, 0.0, 1);
    flip(ed, HELD + i);
    rs_emit_event(ed, EV_HELD, t, i, before, x, NX);
}

static void unhold(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x, int i)
{
    double before[NX] = {x[X], x[Y], x[THETA]};
    place_at(em, x, i, 0.0, 1); /* out by rounding: its surface's guard armed */
    flip(ed, HELD + i);
    rs_emit_event(ed, EV_FREED, t, i, before, x, NX);
}

/* compliant, after the held set changed or the command did: each held contact still needed (its
 * guard armed: a contact no longer pressed would start its guard below 0 and hold the robot
 * from a surface it drives away from), each contact touched and driven into held, the held ones
 * on their surfaces (the integrator's error on a slide along one moves the centre off it) */
static void settle_holds(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                         const double *u)
{
    int n = n_obstacles(em);
    for (int it = 0; it < 2 * n + 2; it++) {
        int worst = -1, touch = -1;
        double least = 0.0;
        for (int i = 0; i < n; i++) {
            double scale = em->p[P_RADIUS] + obstacle(em, i)[2] + 0.01; /* m */
            double nx, ny, c = clearance(em, x, i, &nx, &ny);
            if (held(ed, i)) {
                if (c < 0.0) {
                    x[X] -= c * nx;
                    x[Y] -= c * ny;
                    place_at(em, x, i, 0.0, 1);
                }
                double need = hold_need(em, ed, x, u, i);
                if (need <= least)
                    least = need, worst = i;
            } else if (touch < 0 && c <= 1e-12 * scale) {
                double w[2], z[2];
                layer_motion(em, ed, x, u, w);
                project(em, ed, x, -1, w, z);
                if (nx * z[X] + ny * z[Y] < 0.0)
                    touch = i;
            }
        }
        if (worst >= 0)
            unhold(em, ed, t, x, worst);
        else if (touch >= 0)
            hold(em, ed, t, x, touch);
        else
            return;
    }
}

static void dd_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                    const double *u, const int *fired)
{
    int n = n_obstacles(em);
    if (ed->mode == MODE_COMPLIANT) { /* into or out of a boundary layer */
        for (int i = 0; i < n; i++) {
            if (!fired[i] || !has_layer(em))
                continue;
            int was = inside(ed, i);
            double before[NX] = {x[X], x[Y], x[THETA]}, xdot[NX], nx, ny;
            dd_derivs(em, ed, t, x, u, xdot); /* the command and the other layers' pushes */
            clearance(em, x, i, &nx, &ny);
            double out = xdot[X] * nx + xdot[Y] * ny;
            if ((was && out < 0) || (!was && out > 0)) {
                /* at the surface (where this layer pushes with 0) the motion takes it back the
                 * way it came: the depth crossed 0 by the integrator's error about a steady
                 * depth within rounding of the surface (e.g. held there by another layer's
                 * push), not by the motion; it stays, on its side of the surface (this was the
                 * contact / release chattering) */
                place_at(em, x, i, pad_of(em), was ? -1 : 1);
                continue;
            }
            /* on the layer's boundary, on the side of the new state: its guard armed */
            place_at(em, x, i, pad_of(em), was ? 1 : -1);
            flip(ed, i);
            rs_emit_event(ed, was ? EV_RELEASE : EV_CONTACT, t, i, before, x, NX);
        }
        /* the rigid surfaces: freed where no longer pressed, then held where driven into */
        for (int i = 0; i < n; i++)
            if (fired[n + 1 + i] && held(ed, i))
                unhold(em, ed, t, x, i);
        for (int i = 0; i < n; i++) {
            if (!fired[n + 1 + i] || held(ed, i))
                continue;
            double w[2], z[2], nx, ny;
            layer_motion(em, ed, x, u, w);
            project(em, ed, x, -1, w, z);
            clearance(em, x, i, &nx, &ny);
            if (nx * z[X] + ny * z[Y] < 0.0)
                hold(em, ed, t, x, i);
            else
                place_at(em, x, i, 0.0, 1); /* leaving: out by rounding, its guard armed */
        }
        settle_holds(em, ed, t, x, u);
    } else if (ed->mode == MODE_FREE) { /* (time_stepping arms no guard) */
        for (int i = 0; i < n; i++)
            if (fired[i] && outward_speed(em, x, u, i) < 0) {
                block(em, ed, t, x, i);
                return;
            }
    } else if (fired[n]) {
        /* free of this obstacle; another one it touches may still hold it */
        release_from(em, ed, t, x, u, (int)ed->aux[AUX_OBSTACLE]);
    }
}

/* At a discontinuity in the commands: block if touching and heading in, free if heading out. */
static void dd_settle(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                      const double *u)
{
    int family = ed->mode == MODE_TS ? RS_CONTACT_TIME_STEPPING
                 : ed->mode == MODE_COMPLIANT ? RS_CONTACT_COMPLIANT
                                              : RS_CONTACT_HYBRID;
    if (family != model_of(em))
        pick_mode(em, ed, x);
    if (ed->mode == MODE_COMPLIANT) {
        /* new obstacles or padding may put the centre on the other side of a layer's surface
         * than its bit (beyond the root finder's tolerance, which an event leaves the bits
         * within): the bit follows, so that its guard starts armed */
        uint32_t bits = bits_of(ed);
        for (int i = 0; i < n_obstacles(em); i++) {
            double scale = em->p[P_RADIUS] + obstacle(em, i)[2] + 0.01; /* m */
            double c = clearance(em, x, i, NULL, NULL), off = c - pad_of(em);
            if (!has_layer(em))
                bits &= ~(1u << i);
            else if (fabs(off) > 1e-9 * scale && (off < 0.0) != inside(ed, i))
                bits ^= 1u << i;
            if (c > 1e-9 * scale)
                bits &= ~(1u << (HELD + i)); /* a surface moved off the robot (SetParams) */
        }
        for (int i = n_obstacles(em); i < MAX_OBSTACLES; i++)
            bits &= ~(1u << i | 1u << (HELD + i)); /* obstacles taken away */
        ed->aux[AUX_INSIDE] = bits;
        settle_holds(em, ed, t, x, u);
    }
    if (ed->mode == MODE_TS || ed->mode == MODE_COMPLIANT)
        return;
    if (ed->mode == MODE_BLOCKED) {
        int held = (int)ed->aux[AUX_OBSTACLE];
        if (outward_speed(em, x, u, held) > 0)
            release_from(em, ed, t, x, u, held);
        return;
    }
    block_touching(em, ed, t, x, u, -1);
}

/* time_stepping: the contact-dynamics lecture's velocity-level step over the control step (see
 * the header) */
static void dd_advance(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                       const double *u, double dt)
{
    if (ed->mode != MODE_TS || !(dt > 0.0))
        return;
    double h, steps = rs_ts_substeps(dt, em->p[P_TS_STEP], &h), one = 1.0;
    double v_cmd = forward_speed(em, u);
    double w = wheels_turn_rate(em->p[P_R], em->p[P_L], u[PHI1_DOT], u[PHI2_DOT]);
    for (double k = 0.0; k < steps; k += 1.0) {
        rs_contact_point_t pts[MAX_OBSTACLES];
        int which[MAX_OBSTACLES], nc = 0, touching = -1;
        double c = cos(x[THETA]), s = sin(x[THETA]), v = v_cmd, pn[MAX_OBSTACLES],
               pt[MAX_OBSTACLES];
        for (int i = 0; i < n_obstacles(em); i++) {
            double nx, ny, phi = clearance(em, x, i, &nx, &ny), jn = nx * c + ny * s;
            if (phi + h * jn * v_cmd > 0.0)
                continue;
            pts[nc] = (rs_contact_point_t){.jn = {jn}, .jt = {0.0}, .vn_min = -phi / h};
            which[nc++] = i;
        }
        if (nc)
            rs_contact_solve(1, &one, nc, pts, &v, pn, pt, 200);
        for (int j = 0; j < nc && touching < 0; j++)
            if (pn[j] > 0.0)
                touching = which[j];
        x[X] += h * v * c, x[Y] += h * v * s; /* backward Euler: positions from v+ */
        x[THETA] += h * w;
        if (touching != (int)ed->aux[AUX_OBSTACLE])
            rs_emit_event(ed, touching >= 0 ? EV_CONTACT : EV_RELEASE, t + (k + 1.0) * h,
                          touching >= 0 ? touching : ed->aux[AUX_OBSTACLE], x, x, NX);
        ed->aux[AUX_OBSTACLE] = touching;
    }
}

/* State.contacts: the obstacles touched (or left) in the last control step. The robot is
 * kinematic, so it has no contact force: mean_force reads 0. had_penetration: the centre is
 * inside the inflated obstacle at the step's end (compliant, through the padding). */
static int dd_contacts(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                       rs_contact_info_t *out, int max)
{
    static const char *const names[MAX_OBSTACLES] = {
        "obstacle0", "obstacle1", "obstacle2",  "obstacle3",  "obstacle4",  "obstacle5",
        "obstacle6", "obstacle7", "obstacle8",  "obstacle9",  "obstacle10", "obstacle11",
        "obstacle12", "obstacle13", "obstacle14", "obstacle15"};
    if (em->p[P_FEEDBACK] == 0.0)
        return 0;
    const rs_data_t *d = ed->data;
    double t0 = d->t - (d->m ? d->m->control_dt : 0.0);
    int k = 0;
    for (int i = 0; i < n_obstacles(em) && k < max; i++) {
        int in = ed->mode == MODE_COMPLIANT ? inside(ed, i) || held(ed, i)
                                            : ed->mode != MODE_FREE && ed->aux[AUX_OBSTACLE] == i;
        int had = in, sep = 0;
        for (int j = 0; j < d->nevents; j++) {
            const rs_event_t *ev = &d->events[j];
            if (ev->entity != ed->index || !(ev->t > t0) || ev->value != i)
                continue;
            had = 1;
            sep |= ev->kind == EV_RELEASE;
        }
        if (!had)
            continue;
        double nx, ny, c = clearance(em, x, i, &nx, &ny), r = em->p[P_RADIUS];
        out[k++] = (rs_contact_info_t){
            .other = names[i],
            .in_contact = in,
            .had_contact = 1,
            .had_separation = sep,
            .had_penetration = c < 0.0,
            .point = {x[X] - r * nx, x[Y] - r * ny},
            .normal = {nx, ny},
        };
    }
    return k;
}

static void dd_sensors(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                       const double *x, const double *u, double dt)
{
    (void)em, (void)t, (void)x, (void)u, (void)dt;
    uint32_t bits = bits_of(ed);
    int first = -1;
    for (int i = 0; i < MAX_OBSTACLES && first < 0; i++)
        if ((bits >> i | bits >> (HELD + i)) & 1u)
            first = i;
    ed->s[S_BUMPER] = ed->mode == MODE_BLOCKED || (ed->mode == MODE_TS && ed->aux[AUX_OBSTACLE] >= 0) ||
                      bits != 0;
    ed->s[S_OBSTACLE] = ed->mode == MODE_COMPLIANT ? first : ed->aux[AUX_OBSTACLE];
}

/* Hybrid never leaves the robot's centre inside an inflated obstacle (it is blocked on the
 * boundary, placed exactly): a state that is (beyond rounding) breaks the formulation, and the
 * step stops with this error instead of reporting it as normal. */
static int dd_failure(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                      rs_status_t *st)
{
    if (ed->mode != MODE_FREE && ed->mode != MODE_BLOCKED)
        return 0;
    for (int i = 0; i < n_obstacles(em); i++) {
        double scale = em->p[P_RADIUS] + obstacle(em, i)[2] + 0.01; /* m */
        double c = clearance(em, x, i, NULL, NULL);
        if (c < -1e-9 * scale)
            return rs_fail(st, RS_ESIMFAIL,
                           "'%s' (hybrid contact) is %g m inside obstacle %d at (%g, %g); the "
                           "contact formulation cannot go on from this state",
                           em->name, -c, i, x[X], x[Y]);
    }
    return 0;
}

/* Whether the live state fits new parameters (rs_robot_t.admissible; docs/physics-edges.md):
 * the centre no deeper inside an inflated obstacle than rounding (hybrid, time_stepping; or
 * than it already was under the same formulation and obstacle), and, compliant, no deeper in
 * an obstacle's boundary layer than it was in that layer before: a layer the robot did not
 * enter through its surface has no event to start its push, and a deeper one would push the
 * robot out at once (a jump the layer's law does not allow). */
static int dd_admissible(const rs_entity_model_t *em, const rs_entity_model_t *was,
                         const rs_entity_data_t *ed, const double *x, rs_status_t *st)
{
    int model = model_of(em), same = model_of(was) == model;
    for (int i = 0; i < n_obstacles(em); i++) {
        double scale = em->p[P_RADIUS] + obstacle(em, i)[2] + 0.01; /* m */
        double c = clearance(em, x, i, NULL, NULL), before = 0.0, layer_before = 0.0;
        if (same && i < n_obstacles(was)) {
            double c_was = clearance(was, x, i, NULL, NULL);
            before = fmax(0.0, -c_was);
            if (model == RS_CONTACT_COMPLIANT && inside(ed, i))
                layer_before = fmax(0.0, pad_of(was) - c_was);
        }
        if (-c > before + 1e-9 * scale)
            return rs_fail(st, RS_EPRECOND,
                           "'%s': under the new parameters the robot's centre (%.9g, %.9g) would "
                           "be %.6g m inside obstacle %d (robot_radius + its radius); Reset or "
                           "SetState the robot clear of it first, or place the obstacle clear "
                           "of the robot",
                           em->name, x[X], x[Y], -c, i);
        double layer = pad_of(em) - c;
        if (model == RS_CONTACT_COMPLIANT && layer > layer_before + 1e-9 * scale)
            return rs_fail(st, RS_EPRECOND,
                           "'%s': under the new parameters the robot would be %.6g m deep in "
                           "obstacle %d's %.6g m compliant layer (%.6g m before), which it did "
                           "not enter by moving; Reset or SetState the robot clear of the layer "
                           "first, or place the obstacle or choose the padding clear of it",
                           em->name, layer, i, pad_of(em), layer_before);
    }
    return 0;
}

/* the parameters that choose (rs_robot_t.choices) */
static const char *const dd_choices[] = {"contact_model", "contact_feedback", NULL};

const rs_robot_t rs_robot_diff_drive = {
    .kind = "diff_drive",
    .doc = "differential-drive disk robot among disk obstacles",
    .nx = NX,
    .state = dd_state,
    .nu = NU,
    .actuators = dd_actuators,
    .ns = NS,
    .sensors = dd_sensor_vars,
    .np = sizeof dd_params / sizeof dd_params[0],
    .params = dd_params,
    .nmodes = 4,
    .mode_names = dd_modes,
    .choices = dd_choices,
    .nevent_kinds = 4,
    .event_names = dd_events,
    .naux = NAUX,
    .aux_vars = dd_aux,
    .nguards = dd_nguards,
    .validate = dd_validate,
    .init = dd_init,
    .derivs = dd_derivs,
    .jacobian = dd_jacobian,
    .guards = dd_guards,
    .jump = dd_jump,
    .settle = dd_settle,
    .advance = dd_advance,
    .failure = dd_failure,
    .admissible = dd_admissible,
    .time_scale = dd_time_scale,
    .contacts = dd_contacts,
    .sense = dd_sensors,
};
