/* The mobile manipulator (the planar form of the dual-arm alignment tutorial's robot): a
 * differential-drive base carrying two planar serial two-link arms, torque controlled, in a
 * horizontal plane, and a table: the solid table_x_min <= x <= table_x_max, y >= table_y, with
 * three faces, its edge y = table_y and its sides x = table_x_min and x = table_x_max, each of
 * which an end effector may touch. SI units throughout (metres, radians, seconds).
 *
 * Base, two modes (parameter base_mode):
 *   0, wheels (scenario 1): the "Example Robotic Systems" chapter's boxed kinematics
 *      (ddkinematicsmodel) with phi1_dot, phi2_dot the right and left wheel speeds, r the wheel radius, L half the axle:
 *          v = r/2 (phi1_dot + phi2_dot),  w = r/(2L) (phi1_dot - phi2_dot),
 *          xdot = v cos(theta), ydot = v sin(theta), thetadot = w;
 *      the wheels' servos hold those speeds whatever the arms do (the wheel commands' forces are
 *      whatever it takes: constraint forces).
 *   1, passive (scenario 2): the wheels are unactuated; the base is a planar rigid body (mass
 *      base_mass at the axle centre, yaw inertia base_inertia about it) on two wheels that
 *      roll without skidding: the nonholonomic constraint "no velocity across the axle", so the
 *      base's velocity is v (cos th, sin th) with v and w = thetadot its two generalised speeds
 *      (state base_v, base_w). Wheel losses: rolling resistance as Coulomb friction on each
 *      generalised speed (a force up to roll_force along the heading, a torque up to
 *      roll_torque about the axle centre, independent of each other: a box, stated
 *      simplification) holding it at rest (stuck) or opposing its sign (rolling), plus
 *      viscous damping roll_damping v and turn_damping w. Stuck / rolling are exact events (aux
 *      base_v_dir, base_w_dir: 0 stuck, +-1 rolling that way).
 *
 * Dynamics of the whole: Kane's equations in the generalised speeds nu = (v, w, left qd1, qd2,
 * right qd1, qd2) (valid with the nonholonomic constraint built in). Each body (the base; per
 * arm two uniform rods, centres of mass at half length, I = m a^2 / 12) has a centre-of-mass
 * velocity J_c nu and an angular rate J_phi nu (J_phi constant: w, w + qd1, w + qd1 + qd2), so
 *     M = sum m J_c^T J_c + I J_phi^T J_phi,   h = sum m J_c^T (dJ_c/dt nu),
 *     M nudot + h = Q + sum_contacts J_e^T f,
 * with Q the joint torques on the q rows and, in the passive mode, the wheel losses on v, w.
 * A point r(q) of an arm (base frame) moves in the world at
 *     p_dot = v (cos th, sin th) + w R S r + R J_r qd,      S = [[0, -1], [1, 0]],
 * and accelerates at J nudot + a0 with a0 = v w (-sin th, cos th) - w^2 R r + 2 w R S J_r qd
 * + R (dJ_r/dt qd). With the base fixed (at rest), the q block of M is the serial arm's mass
 * matrix with g = 0 (checked in test_mobile_manipulator) and h the arm's Coriolis terms; with
 * the base moving, h carries the base's fictitious forces on the arms. In the wheels mode the rows of v and w are replaced by vdot = wdot = 0
 * (servoed speeds held constant between control steps).
 *
 * Contact (the contact-dynamics lecture's hybrid formulation, the finger's pattern of exact
 * events): per arm a mode free / slide / stick at the end effector p, on a face with outward normal n and tangent
 * t (edge: n = (0, -1), t = (1, 0); sides: n = (-+1, 0), t = (0, 1)):
 *   - free: no force. Guard: the signed distance of p to the solid (continuous over the edge,
 *     the sides and the corners) plus a 1e-12 relative touching tolerance. Touch, on the face
 *     it crossed: an inelastic impulse along n so that the normal velocity becomes 0 (event
 *     "touch"), then stick or slide as below.
 *   - slide: n . p'' = 0 with the force f = lambda (n - mu dir t) (Coulomb: friction mu lambda
 *     against the slip direction dir = sgn(t . p')). Guards: lambda (release when it falls
 *     through 0), dir t . p' (the slip stops), the face's extent (it slides off a corner:
 *     release), and the margin b / W_nn - 1e-6 from the dynamic jam (slide_margin, jam_impulse:
 *     b = n . W (n - mu dir t), W = J M_c^-1 J^T, the normal acceleration per unit lambda; as it
 *     falls to 0 while pressing, lambda = -a_n0 / b has no bound but a finite impulse, which is
 *     taken at once).
 *   - stick: p'' = 0 (both components), force f free. Guards: lambda = n . f, mu lambda - t . f,
 *     mu lambda + t . f (the cone's edges: slip); with servoed wheels |sin q2| - 1e-3, where the
 *     arm may lock (lock_check: the wheels drive the shoulder out of the arm's reach while the
 *     force along the arm lies inside the cone: the step stops with an error).
 *   At rest on a face (after a touch's impulse, a slip that stops, the jam's impulse) the mode is
 *   the one consistent at the acceleration level, tried in turn (rest_mode): stick in the cone,
 *   free if the free motion leaves the face, a slide that presses and accelerates its own way.
 *   Where no mode is consistent while it slides (Painleve: a sliding contact whose force falls
 *   to 0 while the free motion would enter the face, or a touch after which neither sliding on
 *   nor leaving is), a tangential impact (impact without collision, Genot and Brogliato 1999:
 *   tangential_impact) stops the slip and the mode at rest follows; where none is consistent at
 *   rest either, the step stops with an error (mm_failure) at that state.
 * All constraints of a mode (stuck wheel speeds or servoed ones, the contacts) are solved
 * together: [M, -G; A, 0] (nudot, lambda) = (Q - h, -a0), G the constraint forces' directions
 * in nu, A the constrained rows (a dense LU solve, at most 12 unknowns: rs_dense_solve);
 * impulses solve the same matrix with (0, -A nu). Impacts treat stuck wheels as rigid (stated).
 * Commands change the base velocity at control-step boundaries; settle() then re-resolves each
 * arm's contact (an impulse if the end effector now moves into the table, release if away) and
 * the passive base's stuck / rolling state.
 * Limitation: in the wheels mode, a wheel-speed schedule (a ramp) changes v, w within a step
 * but the contact constraint takes their rates as 0, so a stuck end effector drifts by that much
 * while a ramp runs (settle() puts it back on the edge at the next step). */
#include "arm_common.h"
#include "diff_drive_common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { BX, BY, BTH, Q0 }; /* then per arm k: q1, q2, qd1, qd2 at Q0 + 4 k; then v, w */
enum { BV = Q0 + 8, BW };
#define NX (3 + 8 + 2)
enum { U_PHI1, U_PHI2, U_TAU }; /* then left tau1, tau2, right tau1, tau2 */
#define NU 6
enum { S_EEX, S_EEY, S_FN, S_FT, S_CONTACT, S_Q1, S_Q2, S_DIST, NS_ARM };
#define NS (2 * NS_ARM)
enum { C_FREE, C_SLIDE, C_STICK };
enum { EV_TOUCH, EV_RELEASE, EV_STICK, EV_SLIP, EV_BASE_ROLL, EV_BASE_STOP };
enum { AUX_DIR_L, AUX_DIR_R, AUX_BASE_V, AUX_BASE_W, AUX_FACE_L, AUX_FACE_R, AUX_JAM, NAUX };
enum { FACE_EDGE, FACE_MIN, FACE_MAX }; /* y = table_y, x = table_x_min, x = table_x_max */
enum { BASE_WHEELS = 0, BASE_PASSIVE = 1 };
#define G_PER_ARM 7
#define G_BASE (2 * G_PER_ARM) /* then two per base speed */
#define NG (G_BASE + 4)
#define NV 6 /* generalised speeds: v, w, left qd1, qd2, right qd1, qd2 */
#define NC_MAX (NV + 6) /* unknowns of a constrained solve: nudot and at most 6 multipliers */
_Static_assert(NC_MAX <= RS_DENSE_MAX, "the constrained solve fits rs_dense_solve");

enum {
    P_R, P_L, P_X0, P_Y0, P_TH0, P_SHOULDER, P_LINK = P_SHOULDER + 2, P_MASS = P_LINK + 2,
    P_TABLE = P_MASS + 2, P_MU = P_TABLE + 3, P_Q0 = P_MU + 1, P_ADM = P_Q0 + 4,
    P_BASE_MODE = P_ADM + 2, P_MB, P_IB, P_ROLL_F, P_ROLL_T, P_DAMP_V, P_DAMP_W, P_END
};

static const rs_var_desc_t mm_state[NX] = {
    {"x", "m", -INFINITY, INFINITY, "base: centre of the axle, world x"},
    {"y", "m", -INFINITY, INFINITY, "base: centre of the axle, world y"},
    {"theta", "rad", -INFINITY, INFINITY, "base heading from the world x axis (not wrapped)"},
    {"left_theta1", "rad", -INFINITY, INFINITY, "left arm joint 1, from the base x axis"},
    {"left_theta2", "rad", -INFINITY, INFINITY, "left arm joint 2, from link 1"},
    {"left_theta1_dot", "rad/s", -INFINITY, INFINITY, "left arm joint 1 rate"},
    {"left_theta2_dot", "rad/s", -INFINITY, INFINITY, "left arm joint 2 rate"},
    {"right_theta1", "rad", -INFINITY, INFINITY, "right arm joint 1, from the base x axis"},
    {"right_theta2", "rad", -INFINITY, INFINITY, "right arm joint 2, from link 1"},
    {"right_theta1_dot", "rad/s", -INFINITY, INFINITY, "right arm joint 1 rate"},
    {"right_theta2_dot", "rad/s", -INFINITY, INFINITY, "right arm joint 2 rate"},
    {"base_v", "m/s", -INFINITY, INFINITY,
     "base forward speed (passive base: a state; wheels mode: the commanded speed, set at each "
     "control step)"},
    {"base_w", "rad/s", -INFINITY, INFINITY, "base turn rate (as base_v)"},
};

static const rs_var_desc_t mm_actuators[NU] = {
    {"phi1_dot", "rad/s", -100.0, 100.0, "right wheel speed (ignored when base_mode is 1)"},
    {"phi2_dot", "rad/s", -100.0, 100.0, "left wheel speed (ignored when base_mode is 1)"},
    {"left_tau1", "N*m", -1e3, 1e3, "left arm joint 1 torque"},
    {"left_tau2", "N*m", -1e3, 1e3, "left arm joint 2 torque"},
    {"right_tau1", "N*m", -1e3, 1e3, "right arm joint 1 torque"},
    {"right_tau2", "N*m", -1e3, 1e3, "right arm joint 2 torque"},
};

#define ARM_SENSORS(side)                                                                     \
    {side "_ee_x", "m", -INFINITY, INFINITY, side " end effector, world x"},                  \
        {side "_ee_y", "m", -INFINITY, INFINITY, side " end effector, world y"},              \
        {side "_force_normal", "N", 0.0, INFINITY,                                            \
         side " end effector: the table's normal force (along the touched face's outward "   \
              "normal: -y on the edge, -x / +x on the sides), 0 when free"},                  \
        {side "_force_tangential", "N", -INFINITY, INFINITY,                                  \
         side " end effector: the table's friction force along the face (+x on the edge, "    \
              "+y on the sides)"},                                                            \
        {side "_contact", "1", 0.0, 2.0, side " end effector: 0 free, 1 sliding, 2 stuck"},   \
        {side "_theta1", "rad", -INFINITY, INFINITY, side " arm joint 1 angle"},              \
        {side "_theta2", "rad", -INFINITY, INFINITY, side " arm joint 2 angle"},              \
    {                                                                                         \
        side "_distance", "m", 0.0, INFINITY, side " shoulder to end effector distance"       \
    }

static const rs_var_desc_t mm_sensors[NS] = {ARM_SENSORS("left"), ARM_SENSORS("right")};

static const rs_param_desc_t mm_params[] = {
    {"wheel_radius", "m", 1e-6, 1e3, P_R, 1, 1, 0.1, "r: wheel radius"},
    {"half_axle", "m", 1e-6, 1e3, P_L, 1, 1, 0.25, "L: half the distance between the wheels"},
    {"x0", "m", -1e6, 1e6, P_X0, 1, 1, 0.0, "initial base x"},
    {"y0", "m", -1e6, 1e6, P_Y0, 1, 1, 0.0, "initial base y"},
    {"theta0", "rad", -1e3, 1e3, P_TH0, 1, 1, M_PI / 2, "initial base heading (pi/2: facing +y)"},
    {"shoulder_x", "m", -1e3, 1e3, P_SHOULDER, 1, 1, 0.2, "shoulders, forward of the axle"},
    {"shoulder_y", "m", 0.0, 1e3, P_SHOULDER + 1, 1, 1, 0.3,
     "shoulders, lateral offset (left at +shoulder_y, right at -shoulder_y)"},
    {"a1", "m", 1e-3, 1e3, P_LINK, 1, 1, 0.45, "link 1 length (both arms)"},
    {"a2", "m", 1e-3, 1e3, P_LINK + 1, 1, 1, 0.40, "link 2 length (both arms)"},
    {"m1", "kg", 1e-2, 1e6, P_MASS, 1, 1, 2.0, "link 1 mass (uniform rod)"},
    {"m2", "kg", 1e-2, 1e6, P_MASS + 1, 1, 1, 1.5, "link 2 mass (uniform rod)"},
    {"table_y", "m", -1e6, 1e6, P_TABLE, 1, 1, 0.9,
     "the table edge's y (the table is the solid y >= this between its sides)"},
    {"table_x_min", "m", -1e6, 1e6, P_TABLE + 1, 1, 1, -2.0, "the table's left side x"},
    {"table_x_max", "m", -1e6, 1e6, P_TABLE + 2, 1, 1, 2.0, "the table's right side x"},
    {"mu", "1", 0.0, 10.0, P_MU, 1, 1, 0.5,
     "Coulomb friction coefficient end effector/table (a sliding end effector can meet "
     "Painleve's paradox, no consistent contact mode, in some poses at any mu: it goes on by a "
     "tangential impact that stops the slip; only one at rest with no consistent mode fails "
     "the step with an error naming it, the world kept at that state)"},
    /* 0.002, not 0.01: with the base's motion in the arms' equations, a base driven at up to
     * 0.01 * 80 N = 0.8 m/s jerks the arms (their momentum about the shoulders) past what the
     * alignment spec's end-effector controllers hold; at 0.002 scenario 1 aligns from 0.3 rad
     * (test_mobile_align) */
    {"base_admittance", "m/(N*s)", 0.0, 1e3, P_ADM, 1, 1, 0.002,
     "a wrench applied to the base frame (motion specifications) drives it at v = this * F "
     "forward (wheels mode: the base is velocity controlled)"},
    {"base_admittance_turn", "rad/(N*m*s)", 0.0, 1e3, P_ADM + 1, 1, 1, 0.05,
     "and turns it at w = this * torque"},
    {"left_theta1_0", "rad", -1e3, 1e3, P_Q0, 1, 1, 0.8, "initial left joint 1 angle"},
    {"left_theta2_0", "rad", -1e3, 1e3, P_Q0 + 1, 1, 1, -1.6, "initial left joint 2 angle"},
    {"right_theta1_0", "rad", -1e3, 1e3, P_Q0 + 2, 1, 1, -0.8, "initial right joint 1 angle"},
    {"right_theta2_0", "rad", -1e3, 1e3, P_Q0 + 3, 1, 1, 1.6, "initial right joint 2 angle"},
    {"base_mode", "1", 0.0, 1.0, P_BASE_MODE, 1, 1, 0.0,
     "0: wheels servo the commanded speeds; 1: passive base, moved only by the arms' "
     "reactions"},
    {"base_mass", "kg", 1e-3, 1e6, P_MB, 1, 1, 40.0, "passive base: mass, at the axle centre"},
    {"base_inertia", "kg*m^2", 1e-6, 1e6, P_IB, 1, 1, 2.0,
     "passive base: yaw moment of inertia about the axle centre"},
    {"roll_force", "N", 0.0, 1e6, P_ROLL_F, 1, 1, 7.0,
     "passive base: rolling resistance, Coulomb, along the heading (holds it at rest up to this)"},
    {"roll_torque", "N*m", 0.0, 1e6, P_ROLL_T, 1, 1, 1.0,
     "passive base: turning resistance, Coulomb, about the axle centre"},
    {"roll_damping", "N*s/m", 0.0, 1e6, P_DAMP_V, 1, 1, 40.0,
     "passive base: viscous rolling loss, force -this * v"},
    {"turn_damping", "N*m*s", 0.0, 1e6, P_DAMP_W, 1, 1, 5.0,
     "passive base: viscous turning loss, torque -this * w"},
};

static const rs_aux_desc_t mm_aux[NAUX] = {
    {"left_dir", RS_AUX_INTEGER, -1.0, 1.0, 0, 0, 0, "left end effector slip direction"},
    {"right_dir", RS_AUX_INTEGER, -1.0, 1.0, 0, 0, 0, "right end effector slip direction"},
    {"base_v_dir", RS_AUX_INTEGER, -1.0, 1.0, 0, 0, 0,
     "passive base: 0 stuck (v = 0), +-1 rolling forward / backward"},
    {"base_w_dir", RS_AUX_INTEGER, -1.0, 1.0, 0, 0, 0,
     "passive base: 0 stuck (w = 0), +-1 turning left / right"},
    {"left_face", RS_AUX_INTEGER, 0.0, 2.0, 0, 0, 0,
     "the table face the left end effector touches: 0 edge, 1 side x = table_x_min, 2 side "
     "x = table_x_max"},
    {"right_face", RS_AUX_INTEGER, 0.0, 2.0, 0, 0, 0, "the right end effector's face, as left"},
    {"jammed", RS_AUX_INTEGER, 0.0, 4.0, 0, 0, 0,
     "0, or 1 + the arm whose sliding contact has no consistent continuation (Painleve), or "
     "3 + the stuck arm that the wheels' commanded motion drives past its reach (self-locking)"},
};

static const char *const mm_modes[9] = {"free,free",  "slide,free",  "stick,free",
                                        "free,slide", "slide,slide", "stick,slide",
                                        "free,stick", "slide,stick", "stick,stick"};
static const char *const mm_events[] = {"touch", "release", "stick", "slip", "base_roll",
                                        "base_stop"};

/* ---- kinematics and dynamics of the whole ------------------------------------------------- */

static int contact_of(int mode, int k) { return k == 0 ? mode % 3 : mode / 3; }
static int mode_with(int mode, int k, int c)
{
    int l = mode % 3, r = mode / 3;
    if (k == 0)
        l = c;
    else
        r = c;
    return l + 3 * r;
}

static int passive(const rs_entity_model_t *em) { return em->p[P_BASE_MODE] != 0.0; }

/* The base's generalised speeds: the state (passive) or the wheel commands. */
static void base_speeds(const rs_entity_model_t *em, const double *x, const double *u, double *v,
                        double *w)
{
    if (passive(em)) {
        *v = x[BV], *w = x[BW];
        return;
    }
    *v = wheels_forward_speed(em->p[P_R], u[U_PHI1], u[U_PHI2]);
    *w = wheels_turn_rate(em->p[P_R], em->p[P_L], u[U_PHI1], u[U_PHI2]);
}

/* A point of arm k's chain, r = shoulder + l1 (c1, s1) + l2 (c12, s12) in the base frame, its
 * base-frame Jacobian d r / d q and dJ/dt qd (serial_fk differentiated). */
static void arm_point(const rs_entity_model_t *em, const double *xa, int k, double l1, double l2,
                      double r[2], double J[2][2], double jd[2])
{
    double side = k == 0 ? 1.0 : -1.0, fk[2];
    serial_fk(l1, l2, xa, fk); /* arm_common's kinematics with lengths l1, l2 */
    serial_jacobian(l1, l2, xa, J);
    r[0] = em->p[P_SHOULDER] + fk[0];
    r[1] = side * em->p[P_SHOULDER + 1] + fk[1];
    /* dJ/dt qd = -l1 w1^2 (c1, s1) - l2 w12^2 (c12, s12) */
    double q1 = xa[0], q12 = xa[0] + xa[1], w1 = xa[2], w12 = xa[2] + xa[3];
    jd[0] = -l1 * w1 * w1 * cos(q1) - l2 * w12 * w12 * cos(q12);
    jd[1] = -l1 * w1 * w1 * sin(q1) - l2 * w12 * w12 * sin(q12);
}

/* A moving point in nu: its world position, Jacobian (2 x NV), velocity and a0. */
typedef struct point_terms {
    double p[2], J[2][NV], v[2], a0[2];
} point_terms_t;

static void point_of(const double *x, const double nu[NV], int k, const double r[2],
                     const double Jr[2][2], const double jd[2], point_terms_t *pt)
{
    double th = x[BTH], c = cos(th), s = sin(th), v = nu[0], w = nu[1];
    const double *qd = x + Q0 + 4 * k + 2;
    memset(pt->J, 0, sizeof pt->J);
    pt->p[0] = x[BX] + c * r[0] - s * r[1];
    pt->p[1] = x[BY] + s * r[0] + c * r[1];
    pt->J[0][0] = c, pt->J[1][0] = s;                                    /* d/dv */
    pt->J[0][1] = -s * r[0] - c * r[1], pt->J[1][1] = c * r[0] - s * r[1]; /* R S r */
    for (int i = 0; i < 2; i++) {
        pt->J[0][2 + 2 * k + i] = c * Jr[0][i] - s * Jr[1][i];
        pt->J[1][2 + 2 * k + i] = s * Jr[0][i] + c * Jr[1][i];
    }
    for (int i = 0; i < 2; i++) {
        pt->v[i] = 0.0;
        for (int j = 0; j < NV; j++)
            pt->v[i] += pt->J[i][j] * nu[j];
    }
    double Jq[2] = {Jr[0][0] * qd[0] + Jr[0][1] * qd[1], Jr[1][0] * qd[0] + Jr[1][1] * qd[1]};
    /* base frame: -w^2 r + 2 w S J qd + Jdot qd; rotated; plus v w (-s, c) */
    double ab[2] = {-w * w * r[0] - 2.0 * w * Jq[1] + jd[0], -w * w * r[1] + 2.0 * w * Jq[0] + jd[1]};
    pt->a0[0] = -v * w * s + c * ab[0] - s * ab[1];
    pt->a0[1] = v * w * c + s * ab[0] + c * ab[1];
}

/* Everything the flow, guards and jumps need at state x. */
typedef struct mm_sys {
    double nu[NV];
    double nub_target[2]; /* impulses: the fixed base speeds after it (wheels mode) */
    double M[NV][NV], rhs[NV]; /* M nudot = rhs + constraint forces; rhs = Q - h */
    point_terms_t ee[2];
    double q[2][2], dist[2];
} mm_sys_t;

/* The system at state x under commands u; nub, when given, overrides the base's speeds. */
static void sys_build_at(const rs_entity_model_t *em, const double *x, const double *u,
                         const double *nub, mm_sys_t *S)
{
    double a1 = em->p[P_LINK], a2 = em->p[P_LINK + 1];
    memset(S, 0, sizeof *S);
    base_speeds(em, x, u, &S->nu[0], &S->nu[1]);
    S->nub_target[0] = S->nu[0], S->nub_target[1] = S->nu[1];
    if (nub)
        S->nu[0] = nub[0], S->nu[1] = nub[1];
    for (int k = 0; k < 2; k++)
        S->nu[2 + 2 * k] = x[Q0 + 4 * k + 2], S->nu[3 + 2 * k] = x[Q0 + 4 * k + 3];
    S->M[0][0] = em->p[P_MB];
    S->M[1][1] = em->p[P_IB];
    for (int k = 0; k < 2; k++) {
        const double *xa = x + Q0 + 4 * k;
        for (int l = 0; l < 2; l++) { /* the links: uniform rods */
            double m = em->p[P_MASS + l], len = em->p[P_LINK + l], I = m * len * len / 12.0;
            double r[2], Jr[2][2], jd[2];
            arm_point(em, xa, k, l == 0 ? 0.5 * a1 : a1, l == 0 ? 0.0 : 0.5 * a2, r, Jr, jd);
            point_terms_t c;
            point_of(x, S->nu, k, r, Jr, jd, &c);
            int phi[3] = {1, 2 + 2 * k, l == 1 ? 3 + 2 * k : -1}; /* J_phi's unit entries */
            for (int i = 0; i < NV; i++) {
                for (int j = 0; j < NV; j++)
                    S->M[i][j] += m * (c.J[0][i] * c.J[0][j] + c.J[1][i] * c.J[1][j]);
                S->rhs[i] -= m * (c.J[0][i] * c.a0[0] + c.J[1][i] * c.a0[1]);
            }
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    if (phi[i] >= 0 && phi[j] >= 0)
                        S->M[phi[i]][phi[j]] += I;
        }
        double r[2], Jr[2][2], jd[2];
        arm_point(em, xa, k, a1, a2, r, Jr, jd);
        point_of(x, S->nu, k, r, Jr, jd, &S->ee[k]);
        S->q[k][0] = xa[0], S->q[k][1] = xa[1];
        double fk[2];
        serial_fk(a1, a2, xa, fk);
        S->dist[k] = rs_hypot(fk[0], fk[1]);
        S->rhs[2 + 2 * k] += u[U_TAU + 2 * k];
        S->rhs[3 + 2 * k] += u[U_TAU + 2 * k + 1];
    }
    if (passive(em)) { /* the wheels' viscous losses */
        S->rhs[0] -= em->p[P_DAMP_V] * S->nu[0];
        S->rhs[1] -= em->p[P_DAMP_W] * S->nu[1];
    }
}

static void sys_build(const rs_entity_model_t *em, const double *x, const double *u, mm_sys_t *S)
{
    sys_build_at(em, x, u, NULL, S);
}

/* Which constraints hold: each arm's contact (and slip direction), each base speed fixed (the
 * wheels mode, or a stuck passive base) or rolling the way dir says. */
typedef struct mm_cfg {
    int c[2];
    double dir[2];
    double n[2][2], t[2][2]; /* each arm's face: outward normal and tangent (world) */
    int fixed[2];
    double base_dir[2];
} mm_cfg_t;

/* A face's outward normal n and tangent t: the edge (0, -1), (1, 0); the sides x = table_x_min
 * (-1, 0), (0, 1) and x = table_x_max (1, 0), (0, 1). */
static void face_frame(int face, double n[2], double t[2])
{
    n[0] = face == FACE_EDGE ? 0.0 : face == FACE_MIN ? -1.0 : 1.0;
    n[1] = face == FACE_EDGE ? -1.0 : 0.0;
    t[0] = face == FACE_EDGE ? 1.0 : 0.0;
    t[1] = face == FACE_EDGE ? 0.0 : 1.0;
}

static mm_cfg_t cfg_of(const rs_entity_model_t *em, const rs_entity_data_t *ed)
{
    mm_cfg_t cf;
    for (int k = 0; k < 2; k++) {
        cf.c[k] = contact_of(ed->mode, k);
        cf.dir[k] = ed->aux[AUX_DIR_L + k];
        face_frame((int)ed->aux[AUX_FACE_L + k], cf.n[k], cf.t[k]);
        cf.base_dir[k] = passive(em) ? ed->aux[AUX_BASE_V + k] : 0.0;
        cf.fixed[k] = !passive(em) || cf.base_dir[k] == 0.0;
    }
    return cf;
}

/* The constrained solve of configuration cf: accelerations (impulse = 0: out = nudot, forces
 * f[k] on each end effector (world), the base's holding force / torque lam_b) or an impulse
 * (impulse = 1: out = the velocity change that makes every constrained row's velocity 0; the
 * wheels mode keeps v, w). */
static void sys_solve(const rs_entity_model_t *em, const mm_sys_t *S, const mm_cfg_t *cf,
                      int impulse, double out[NV], double f[2][2], double lam_b[2])
{
    double G[NC_MAX - NV][NV], A[NC_MAX - NV][NV], b[NC_MAX - NV];
    int m = 0, owner[NC_MAX - NV];
    memset(G, 0, sizeof G);
    memset(A, 0, sizeof A);
    for (int i = 0; i < 2; i++)
        if (cf->fixed[i]) {
            G[m][i] = A[m][i] = 1.0;
            b[m] = impulse ? (passive(em) ? 0.0 : S->nub_target[i]) - S->nu[i] : 0.0;
            owner[m++] = -1 - i;
        }
    for (int k = 0; k < 2; k++) {
        const point_terms_t *e = &S->ee[k];
        if (cf->c[k] == C_STICK) {
            for (int d = 0; d < 2; d++) {
                for (int j = 0; j < NV; j++)
                    G[m][j] = A[m][j] = e->J[d][j];
                b[m] = impulse ? -e->v[d] : -e->a0[d];
                owner[m++] = k;
            }
        } else if (cf->c[k] == C_SLIDE) {
            /* the force lambda (n - mu dir t) on the face's normal row */
            const double *n = cf->n[k], *t = cf->t[k];
            double dv[2] = {n[0] - em->p[P_MU] * cf->dir[k] * t[0],
                            n[1] - em->p[P_MU] * cf->dir[k] * t[1]};
            for (int j = 0; j < NV; j++) {
                G[m][j] = e->J[0][j] * dv[0] + e->J[1][j] * dv[1];
                A[m][j] = e->J[0][j] * n[0] + e->J[1][j] * n[1];
            }
            double vn = n[0] * e->v[0] + n[1] * e->v[1], an = n[0] * e->a0[0] + n[1] * e->a0[1];
            b[m] = impulse ? -vn : -an;
            owner[m++] = k;
        }
    }
    int n = NV + m;
    double K[NC_MAX * NC_MAX], z[NC_MAX];
    memset(K, 0, sizeof(double) * (size_t)(n * n));
    for (int i = 0; i < NV; i++) {
        for (int j = 0; j < NV; j++)
            K[i * n + j] = S->M[i][j];
        for (int c = 0; c < m; c++)
            K[i * n + NV + c] = -G[c][i];
        z[i] = impulse ? 0.0 : S->rhs[i];
    }
    if (!impulse && passive(em)) /* rolling resistance against the rolling direction */
        for (int i = 0; i < 2; i++)
            if (!cf->fixed[i])
                z[i] -= em->p[i == 0 ? P_ROLL_F : P_ROLL_T] * cf->base_dir[i];
    for (int c = 0; c < m; c++) {
        for (int j = 0; j < NV; j++)
            K[(NV + c) * n + j] = A[c][j];
        z[NV + c] = b[c];
    }
    if (rs_dense_solve(n, K, z) < 0)
        memset(z, 0, sizeof z); /* a singular configuration (a stretched arm): no motion */
    memcpy(out, z, sizeof(double) * NV);
    if (f)
        f[0][0] = f[0][1] = f[1][0] = f[1][1] = 0.0;
    if (lam_b)
        lam_b[0] = lam_b[1] = 0.0;
    for (int c = 0; c < m; c++) {
        double lam = z[NV + c];
        if (owner[c] < 0) {
            if (lam_b)
                lam_b[-1 - owner[c]] = lam;
            continue;
        }
        int k = owner[c];
        if (!f)
            continue;
        if (cf->c[k] == C_STICK) {
            int d = c > 0 && owner[c - 1] == k; /* the second row of a stuck arm is its y */
            f[k][d] = lam;
        } else {
            for (int d = 0; d < 2; d++)
                f[k][d] = lam * (cf->n[k][d] - em->p[P_MU] * cf->dir[k] * cf->t[k][d]);
        }
    }
}

/* Apply the impulse of configuration cf to x (the arms' rates and a passive base's speeds). */
static void apply_impulse(const rs_entity_model_t *em, const mm_sys_t *S, const mm_cfg_t *cf,
                          double *x)
{
    double dnu[NV];
    sys_solve(em, S, cf, 1, dnu, NULL, NULL);
    for (int k = 0; k < 2; k++)
        x[Q0 + 4 * k + 2] += dnu[2 + 2 * k], x[Q0 + 4 * k + 3] += dnu[3 + 2 * k];
    if (passive(em)) {
        x[BV] += dnu[0], x[BW] += dnu[1];
        for (int i = 0; i < 2; i++)
            if (cf->fixed[i])
                x[BV + i] = 0.0; /* stuck: exactly at rest */
    }
}

/* The table is the solid x_min <= x <= x_max, y >= table_y (its edge and two sides). The
 * signed distance of p to it: the Euclidean distance outside, minus the depth (the distance to
 * the nearest face, *face) inside; continuous, 0 on the faces. */
static double table_distance(const rs_entity_model_t *em, const double p[2], int *face)
{
    double ty = em->p[P_TABLE], x0 = em->p[P_TABLE + 1], x1 = em->p[P_TABLE + 2];
    double d[3] = {p[1] - ty, p[0] - x0, x1 - p[0]};
    int f = FACE_EDGE;
    for (int i = 1; i < 3; i++)
        if (d[i] < d[f])
            f = i;
    if (face)
        *face = f;
    if (d[f] >= 0.0)
        return -d[f]; /* inside (or on a face) */
    double dx = fmax(0.0, fmax(-d[1], -d[2])), dy = fmax(0.0, -d[0]);
    return hypot(dx, dy);
}

/* The tolerance of touching the table: a free end effector within it of a face (or past it)
 * touches; its guard is the distance plus this, so that one leaving from the face (where
 * rounding may leave it inside by less) starts with its guard above 0, armed. */
static double touch_tolerance(const rs_entity_model_t *em)
{
    return 1e-12 * (1.0 + fabs(em->p[P_TABLE]) + fabs(em->p[P_TABLE + 1]) +
                    fabs(em->p[P_TABLE + 2]));
}

/* Where on face `face` p lies: > 0 within its extent (the edge between the sides, a side
 * beyond the edge), < 0 past its end (the end effector slid off the corner). */
static double face_extent(const rs_entity_model_t *em, const double p[2], int face)
{
    double ty = em->p[P_TABLE], x0 = em->p[P_TABLE + 1], x1 = em->p[P_TABLE + 2];
    return face == FACE_EDGE ? fmin(p[0] - x0, x1 - p[0]) : p[1] - ty;
}

/* ---- the contact problem of one arm at the acceleration level ----------------------------- */

/* Arm k's end-effector acceleration (world) under the accelerations nud: J nud + a0. */
static void ee_accel(const mm_sys_t *S, int k, const double nud[NV], double a[2])
{
    for (int d = 0; d < 2; d++) {
        a[d] = S->ee[k].a0[d];
        for (int j = 0; j < NV; j++)
            a[d] += S->ee[k].J[d][j] * nud[j];
    }
}

/* Arm k with its contact force removed (free, the other constraints of cf held): the
 * accelerations nud0, and those per unit of a force along the world direction dirv at the end
 * effector (nud1 - nud0: the constrained response M_c^-1 J^T dirv). */
static void force_response(const rs_entity_model_t *em, const mm_sys_t *S, const mm_cfg_t *cf,
                           int k, const double dirv[2], double nud0[NV], double dnud[NV])
{
    mm_cfg_t fr = *cf;
    mm_sys_t S1 = *S;
    fr.c[k] = C_FREE, fr.dir[k] = 0.0;
    sys_solve(em, S, &fr, 0, nud0, NULL, NULL);
    for (int j = 0; j < NV; j++)
        S1.rhs[j] += S->ee[k].J[0][j] * dirv[0] + S->ee[k].J[1][j] * dirv[1];
    sys_solve(em, &S1, &fr, 0, dnud, NULL, NULL);
    for (int j = 0; j < NV; j++)
        dnud[j] -= nud0[j];
}

/* The smallest relative normal compliance b / W_nn a sliding contact may have (see
 * slide_margin): below it the contact force lambda = -a_n0 / b needed to keep sliding is more
 * than 1e6 times what the free acceleration a_n0 needs at the contact's own compliance W_nn. */
#define JAM_MARGIN 1e-6

/* |sin q2| at which a stuck arm of a servoed base is checked for self-locking (lock_check). */
#define LOCK_SIN 1e-3

/* A sliding contact's margin from the dynamic jam: b / W_nn - JAM_MARGIN, with b = n . W (n -
 * mu s t) the normal acceleration per unit of its force lambda (n - mu s t), sliding to s t, and
 * W_nn = n . W n > 0 (W = J M_c^-1 J^T, the other constraints held). As b falls to 0 while the
 * contact presses (lambda = -a_n0 / b > 0), lambda grows without bound while its impulse stays
 * finite (Genot and Brogliato, "New results on Painleve paradoxes", Eur. J. Mech. A/Solids 18,
 * 1999: the dynamic jam); the guard on this margin stops the flow there and jam_impulse takes
 * the impulse at once. */
static double slide_margin(const rs_entity_model_t *em, const mm_sys_t *S, const mm_cfg_t *cf,
                           int k, double s)
{
    const double *n = cf->n[k], *t = cf->t[k];
    double dv[2] = {n[0] - em->p[P_MU] * s * t[0], n[1] - em->p[P_MU] * s * t[1]};
    double nud0[NV], db[NV], dn[NV], ab[2], an[2];
    force_response(em, S, cf, k, dv, nud0, db);
    force_response(em, S, cf, k, n, nud0, dn);
    mm_sys_t S0 = *S; /* accelerations alone: the velocity terms a0 cancel in the difference */
    memset(S0.ee[k].a0, 0, sizeof S0.ee[k].a0);
    ee_accel(&S0, k, db, ab);
    ee_accel(&S0, k, dn, an);
    double b = n[0] * ab[0] + n[1] * ab[1], wnn = n[0] * an[0] + n[1] * an[1];
    return wnn > 0 ? b / wnn - JAM_MARGIN : 1.0; /* W_nn = 0: a singular pose, no motion */
}

/* Arm k at rest on its face (normal and tangential velocity 0), the other constraints of cf
 * held: the contact mode consistent with Coulomb's law at the acceleration level (seed 004's
 * complementarity conditions for one contact), tried in turn: stick (f_n > 0, |f_t| <= mu f_n;
 * only if allow_stick), free (a_n >= 0: the free motion leaves or grazes the face), slide to
 * s t (lambda > 0, accelerating its own way: s a_t > 0, and away from the dynamic jam), s first
 * against the friction the stick would need. Returns the mode and *dir, or -1 where none is
 * consistent (Painleve), *dir then the preferred slide. Sliding and free exclude each other
 * where b > 0 (lambda = -a_n0 / b); with b <= 0 both may be, and free is taken. */
static int rest_mode(const rs_entity_model_t *em, const mm_sys_t *S, const mm_cfg_t *cf, int k,
                     int allow_stick, double *dir)
{
    const double *n = cf->n[k], *t = cf->t[k];
    double mu = em->p[P_MU], nud[NV], f[2][2], a[2];
    mm_cfg_t tr = *cf;
    tr.c[k] = C_STICK, tr.dir[k] = 0.0;
    sys_solve(em, S, &tr, 0, nud, f, NULL);
    double fn = n[0] * f[k][0] + n[1] * f[k][1], ft = t[0] * f[k][0] + t[1] * f[k][1];
    *dir = 0.0;
    if (allow_stick && fn > 0 && fabs(ft) <= mu * fn)
        return C_STICK;
    double pref = ft > 0 ? -1.0 : 1.0;
    tr.c[k] = C_FREE;
    sys_solve(em, S, &tr, 0, nud, NULL, NULL);
    ee_accel(S, k, nud, a);
    if (n[0] * a[0] + n[1] * a[1] >= 0)
        return C_FREE;
    for (int i = 0; i < 2; i++) {
        double sd = i ? -pref : pref;
        tr.c[k] = C_SLIDE, tr.dir[k] = sd;
        sys_solve(em, S, &tr, 0, nud, f, NULL);
        ee_accel(S, k, nud, a);
        double lam = n[0] * f[k][0] + n[1] * f[k][1], at = t[0] * a[0] + t[1] * a[1];
        if (lam > 0 && sd * at > 0 && slide_margin(em, S, cf, k, sd) > 0) {
            *dir = sd;
            return C_SLIDE;
        }
    }
    *dir = pref;
    return -1;
}

/* Arm k on its face without normal velocity (after an impulse), the other constraints of cf
 * held: its mode and slip direction. At rest (|v_t| <= vscale): rest_mode. Sliding to
 * s = sgn(v_t): slide if it presses (lambda > 0) away from the jam, else free if the free motion
 * leaves the face. Else -2 where the slide presses at the jam (0 <= b / W_nn <= JAM_MARGIN:
 * jam_impulse), -1 where no mode is consistent (Painleve). */
static int contact_after_impulse(const rs_entity_model_t *em, const mm_sys_t *S,
                                 const mm_cfg_t *cf, int k, double vscale, double *dir)
{
    const double *n = cf->n[k], *t = cf->t[k];
    const point_terms_t *e = &S->ee[k];
    double vt = t[0] * e->v[0] + t[1] * e->v[1], nud[NV], f[2][2], a[2];
    if (fabs(vt) <= vscale)
        return rest_mode(em, S, cf, k, 1, dir);
    mm_cfg_t tr = *cf;
    *dir = vt > 0 ? 1.0 : -1.0;
    tr.c[k] = C_SLIDE, tr.dir[k] = *dir;
    sys_solve(em, S, &tr, 0, nud, f, NULL);
    double lam = n[0] * f[k][0] + n[1] * f[k][1], margin = slide_margin(em, S, cf, k, *dir);
    if (lam > 0 && margin > 0)
        return C_SLIDE;
    tr.c[k] = C_FREE, tr.dir[k] = 0.0;
    sys_solve(em, S, &tr, 0, nud, NULL, NULL);
    ee_accel(S, k, nud, a);
    if (n[0] * a[0] + n[1] * a[1] >= 0)
        return C_FREE;
    return lam > 0 && margin >= -JAM_MARGIN ? -2 : -1;
}

/* Whether arm k, in contact cf->c[k] on its face without normal velocity (|v_n| <= vscale, after
 * an impulse), leaves it as resolve_arm decides: its force does not keep the contact as it is
 * (stuck in the cone, or sliding its way) and contact_after_impulse frees it. */
static int leaves_after_impulse(const rs_entity_model_t *em, const mm_sys_t *S,
                                const mm_cfg_t *cf, int k, double vscale)
{
    const double *n = cf->n[k], *t = cf->t[k];
    const point_terms_t *e = &S->ee[k];
    double nud[NV], f[2][2], dir, mu = em->p[P_MU];
    double vn = n[0] * e->v[0] + n[1] * e->v[1], vt = t[0] * e->v[0] + t[1] * e->v[1];
    if (fabs(vn) > vscale)
        return 0;
    sys_solve(em, S, cf, 0, nud, f, NULL);
    double fn = n[0] * f[k][0] + n[1] * f[k][1], ft = t[0] * f[k][0] + t[1] * f[k][1];
    int kept = fn > 0 && (cf->c[k] == C_STICK ? fabs(vt) <= vscale && fabs(ft) <= mu * fn
                                              : cf->dir[k] * vt > 0);
    return !kept && contact_after_impulse(em, S, cf, k, vscale, &dir) == C_FREE;
}

/* ---- frames for motion specifications ------------------------------------------------------ */

enum { F_BASE, F_LSHOULDER, F_LELBOW, F_LEE, F_RSHOULDER, F_RELBOW, F_REE, F_TABLE, NFRAMES };
static const char *const mm_frames[NFRAMES] = {"base",           "left_shoulder", "left_elbow",
                                               "left_ee",        "right_shoulder", "right_elbow",
                                               "right_ee",       "table_edge"};

/* A point r (base frame) of arm k's chain: shoulder (n = 0), elbow (1), end effector (2), its
 * base-frame Jacobian d r / d q and link angle. */
static void chain_point(const rs_entity_model_t *em, const double *xa, int k, int n, double r[2],
                        double J[2][2], double *angle)
{
    double jd[2];
    arm_point(em, xa, k, n >= 1 ? em->p[P_LINK] : 0.0, n == 2 ? em->p[P_LINK + 1] : 0.0, r, J, jd);
    *angle = n == 0 ? 0.0 : n == 1 ? xa[0] : xa[0] + xa[1];
}

static void mm_frame(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                     const double *u, int i, double pose[3], double twist[3], double force[2])
{
    double v, w, th = x[BTH], c = cos(th), s = sin(th);
    base_speeds(em, x, u, &v, &w);
    force[0] = force[1] = 0.0;
    if (i == F_TABLE) {
        pose[0] = em->p[P_TABLE + 1], pose[1] = em->p[P_TABLE], pose[2] = 0.0;
        twist[0] = twist[1] = twist[2] = 0.0;
        return;
    }
    double r[2] = {0, 0}, J[2][2] = {{0, 0}, {0, 0}}, ang = 0.0, qd[2] = {0, 0}, rel = 0.0;
    if (i != F_BASE) {
        int k = i < F_RSHOULDER ? 0 : 1, n = i - (k == 0 ? F_LSHOULDER : F_RSHOULDER);
        const double *xa = x + Q0 + 4 * k;
        chain_point(em, xa, k, n, r, J, &ang);
        qd[0] = xa[2], qd[1] = xa[3];
        rel = n == 0 ? 0.0 : n == 1 ? qd[0] : qd[0] + qd[1];
        if (n == 2 && contact_of(ed->mode, k) != C_FREE) {
            mm_sys_t S;
            mm_cfg_t cf = cfg_of(em, ed);
            double nud[NV], f[2][2];
            sys_build(em, x, u, &S);
            sys_solve(em, &S, &cf, 0, nud, f, NULL);
            force[0] = f[k][0], force[1] = f[k][1];
        }
    }
    /* base-frame velocity w S r + J qd, then rotated; plus the base's own */
    double vb[2] = {-w * r[1] + J[0][0] * qd[0] + J[0][1] * qd[1],
                    w * r[0] + J[1][0] * qd[0] + J[1][1] * qd[1]};
    pose[0] = x[BX] + c * r[0] - s * r[1];
    pose[1] = x[BY] + s * r[0] + c * r[1];
    pose[2] = th + ang;
    twist[0] = v * c + c * vb[0] - s * vb[1];
    twist[1] = v * s + s * vb[0] + c * vb[1];
    twist[2] = w + rel;
}

/* tau = J_w^T F + (torque on every joint up to the frame) for an arm's frame; the admittance
 * v = k F . heading, w = k_turn torque (wheel speeds from the kinematics inverted) for the
 * base in the wheels mode. The table and a passive base cannot take a wrench. */
static int mm_apply_wrench(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                           const double *x, int i, const double w[3], double *du,
                           rs_status_t *st)
{
    (void)ed;
    double th = x[BTH], c = cos(th), s = sin(th);
    if (i == F_TABLE)
        return rs_fail(st, RS_EINVAL, "the table edge of '%s' is fixed: it takes no wrench",
                       em->name);
    if (i == F_BASE) {
        if (passive(em))
            return rs_fail(st, RS_EINVAL,
                           "the base of '%s' is passive (base_mode 1): it takes no wrench; "
                           "attach the motion driver to an end effector, or set base_mode 0",
                           em->name);
        double v = em->p[P_ADM] * (w[0] * c + w[1] * s), om = em->p[P_ADM + 1] * w[2];
        double r = em->p[P_R], L = em->p[P_L];
        du[U_PHI1] += (v + om * L) / r;
        du[U_PHI2] += (v - om * L) / r;
        return 0;
    }
    int k = i < F_RSHOULDER ? 0 : 1, n = i - (k == 0 ? F_LSHOULDER : F_RSHOULDER);
    double r[2], J[2][2], ang;
    chain_point(em, x + Q0 + 4 * k, k, n, r, J, &ang);
    /* F in the base frame, then tau = J^T F */
    double fb[2] = {c * w[0] + s * w[1], -s * w[0] + c * w[1]};
    for (int j = 0; j < 2; j++)
        du[U_TAU + 2 * k + j] += J[0][j] * fb[0] + J[1][j] * fb[1] + (j < n ? w[2] : 0.0);
    return 0;
}

/* ---- the robot table ----------------------------------------------------------------------- */

static int mm_nguards(const rs_entity_model_t *em)
{
    (void)em;
    return NG;
}

static void ee_position(const rs_entity_model_t *em, const double *x, int k, double p[2])
{
    double r[2], J[2][2], ang, th = x[BTH];
    chain_point(em, x + Q0 + 4 * k, k, 2, r, J, &ang);
    p[0] = x[BX] + cos(th) * r[0] - sin(th) * r[1];
    p[1] = x[BY] + sin(th) * r[0] + cos(th) * r[1];
}

static int mm_validate(const rs_entity_model_t *em, rs_status_t *st)
{
    if (!(em->p[P_TABLE + 1] < em->p[P_TABLE + 2]))
        return rs_fail(st, RS_EINVAL, "'%s.table_x_min' = %g must be below table_x_max = %g", em->name,
                       em->p[P_TABLE + 1], em->p[P_TABLE + 2]);
    if (em->p[P_BASE_MODE] != 0.0 && em->p[P_BASE_MODE] != 1.0)
        return rs_fail(st, RS_EINVAL, "'%s.base_mode' = %g: 0 (wheels) or 1 (passive base)",
                       em->name, em->p[P_BASE_MODE]);
    double x[NX] = {em->p[P_X0], em->p[P_Y0], em->p[P_TH0]};
    for (int k = 0; k < 2; k++) {
        x[Q0 + 4 * k] = em->p[P_Q0 + 2 * k];
        x[Q0 + 4 * k + 1] = em->p[P_Q0 + 2 * k + 1];
    }
    for (int k = 0; k < 2; k++) {
        double p[2];
        ee_position(em, x, k, p);
        double dist = table_distance(em, p, NULL);
        if (dist < 0)
            return rs_fail(st, RS_EINVAL,
                           "the %s end effector of '%s' starts %g m inside the table (at (%g, %g); "
                           "the table is x in [%g, %g], y >= %g); move the base or change the "
                           "initial joint angles",
                           k == 0 ? "left" : "right", em->name, -dist, p[0], p[1],
                           em->p[P_TABLE + 1], em->p[P_TABLE + 2], em->p[P_TABLE]);
    }
    return 0;
}

/* rs_robot_t.admissible (docs/physics-edges.md): under the new parameters (the table, the
 * links, the shoulders) neither end effector inside the table beyond rounding; the contact
 * modes cannot start from inside it, and the next step would push it out at once. */
static int mm_admissible(const rs_entity_model_t *em, const rs_entity_model_t *was,
                         const rs_entity_data_t *ed, const double *x, rs_status_t *st)
{
    /* an end effector on the table keeps its arm's geometry: new links or shoulders would move
     * the contact point under the contact's own impulses and modes (the soak found energy
     * created after such a change, 0.02 to 0.35 J in a control step) */
    int geometry = em->p[P_LINK] != was->p[P_LINK] || em->p[P_LINK + 1] != was->p[P_LINK + 1] ||
                   em->p[P_SHOULDER] != was->p[P_SHOULDER] ||
                   em->p[P_SHOULDER + 1] != was->p[P_SHOULDER + 1];
    for (int k = 0; k < 2 && geometry; k++)
        if (contact_of(ed->mode, k) != C_FREE)
            return rs_fail(st, RS_EPRECOND,
                           "the %s end effector of '%s' is on the table: its arm's links and "
                           "shoulders (a1, a2, shoulder_x, shoulder_y) cannot change under the "
                           "contact; Reset or SetState the arm off the table first",
                           k == 0 ? "left" : "right", em->name);
    for (int k = 0; k < 2; k++) {
        double p[2];
        ee_position(em, x, k, p);
        double depth = -table_distance(em, p, NULL);
        if (depth > 1e-9 * (1.0 + fabs(p[0]) + fabs(p[1])))
            return rs_fail(st, RS_EPRECOND,
                           "the %s end effector of '%s' would be %.6g m inside the table under "
                           "the new parameters (at (%.9g, %.9g); the table x in [%g, %g], y >= "
                           "%g); Reset or SetState the arm clear of the table first, or place "
                           "the table clear of it",
                           k == 0 ? "left" : "right", em->name, depth, p[0], p[1],
                           em->p[P_TABLE + 1], em->p[P_TABLE + 2], em->p[P_TABLE]);
    }
    return 0;
}

static void mm_init(const rs_entity_model_t *em, rs_entity_data_t *ed, double *x)
{
    x[BX] = em->p[P_X0];
    x[BY] = em->p[P_Y0];
    x[BTH] = em->p[P_TH0];
    for (int k = 0; k < 2; k++) {
        x[Q0 + 4 * k] = em->p[P_Q0 + 2 * k];
        x[Q0 + 4 * k + 1] = em->p[P_Q0 + 2 * k + 1];
        x[Q0 + 4 * k + 2] = x[Q0 + 4 * k + 3] = 0.0;
    }
    x[BV] = x[BW] = 0.0;
    ed->mode = 0;
    for (int i = 0; i < NAUX; i++)
        ed->aux[i] = 0.0;
}

/* The flow of configuration cf (mm_derivs; rejoin's excursions through other modes). */
static void derivs_cfg(const rs_entity_model_t *em, const mm_cfg_t *cf, const double *x,
                       const double *u, double *xdot)
{
    mm_sys_t S;
    double nud[NV];
    sys_build(em, x, u, &S);
    sys_solve(em, &S, cf, 0, nud, NULL, NULL);
    xdot[BX] = S.nu[0] * cos(x[BTH]);
    xdot[BY] = S.nu[0] * sin(x[BTH]);
    xdot[BTH] = S.nu[1];
    for (int k = 0; k < 2; k++) {
        xdot[Q0 + 4 * k] = x[Q0 + 4 * k + 2];
        xdot[Q0 + 4 * k + 1] = x[Q0 + 4 * k + 3];
        xdot[Q0 + 4 * k + 2] = nud[2 + 2 * k];
        xdot[Q0 + 4 * k + 3] = nud[3 + 2 * k];
    }
    /* held speeds (wheels mode, or a stuck passive base) exactly constant, not to round-off */
    xdot[BV] = cf->fixed[0] ? 0.0 : nud[0];
    xdot[BW] = cf->fixed[1] ? 0.0 : nud[1];
}

static void mm_derivs(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                      const double *x, const double *u, double *xdot)
{
    (void)t;
    mm_cfg_t cf = cfg_of(em, ed);
    derivs_cfg(em, &cf, x, u, xdot);
}

/* rs_robot_t.holds: a stuck end effector's joint rates while the base cannot move under its
 * impulse (servoed wheels, or a passive base stuck both ways): moved into the face the contact's
 * impulse takes the change back, moved away the end effector leaves at the change's speed and
 * its pressing brings it back within a time of that order, so that the arm's state moves by the
 * change's square (a stuck contact's two constraints fix both rates). A stuck passive base's
 * speeds are not said held: a change of them keeps the mode's number (the arms' contacts), so
 * the Step's start is differenced within it. */
static int mm_holds(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                    int i)
{
    (void)x;
    int base_stuck = !passive(em) || (ed->aux[AUX_BASE_V] == 0.0 && ed->aux[AUX_BASE_W] == 0.0);
    if (i < Q0 || i >= Q0 + 8 || (i - Q0) % 4 < 2)
        return 0; /* the base, the joint angles */
    return base_stuck && contact_of(ed->mode, (i - Q0) / 4) == C_STICK;
}

/* A passive base's speed i at rest and rolling from there the way its load pushes it (past
 * the wheels' friction), moved against that way: it rolls back against the load and its
 * friction (the flow f_a, the speed's rate a = f_a[i]), is at rest again at tau = -z / a and
 * rolls on as it would have, late by tau: per unit of the change, e_i - (f_a - f) / a (the
 * saltation at that rest; f the flow it rolls in). Along its way no excursion (-1): the map. */
static int base_excursion(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                          const double *x, const double *u, int i, int sign, double *col)
{
    int b = i - BV;
    double dir = ed->aux[AUX_BASE_V + b], f[NX], fa[NX];
    if (x[i] != 0.0 || dir == 0.0 || sign == dir)
        return -1;
    mm_cfg_t cf = cfg_of(em, ed), against = cf;
    against.base_dir[b] = -dir;
    derivs_cfg(em, &cf, x, u, f);
    derivs_cfg(em, &against, x, u, fa);
    if (!(dir * fa[i] > 0.0))
        return -1; /* it would not come back */
    for (int r = 0; r < NX; r++)
        col[r] = (r == i) - (fa[r] - f[r]) / fa[i];
    return 0;
}

/* rs_robot_t.excursion: a stuck end effector's joint rate beside a rolling passive base (where
 * mm_holds does not hold it), or that base's rolling speed beside a stuck end effector. Moved
 * either way the end effector slips or lifts off and is stuck again within a time of the order
 * of the change; meanwhile the forces differ from the stuck mode's by contact forces alone
 * (along the constraints' rows G^T), and stuck again G nu = 0, so the speeds come out as the
 * change's M-weighted projection onto G nu = 0, nu + (I - M^-1 G^T (G M^-1 G^T)^-1 G) e_i: the
 * stuck configuration's impulse (apply_impulse, linear in the speeds) applied to a unit
 * change, the rolling base taking its part. */
static int mm_excursion(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                        const double *u, int i, int sign, double *col)
{
    if (passive(em) && (i == BV || i == BW)) {
        if (base_excursion(em, ed, x, u, i, sign, col) == 0)
            return 0;
        if (ed->aux[AUX_BASE_V + (i - BV)] == 0.0 || x[i] == 0.0 ||
            (contact_of(ed->mode, 0) != C_STICK && contact_of(ed->mode, 1) != C_STICK))
            return -1;
    } else if (!passive(em) || i < Q0 || i >= Q0 + 8 || (i - Q0) % 4 < 2 ||
               contact_of(ed->mode, (i - Q0) / 4) != C_STICK || mm_holds(em, ed, x, i)) {
        return -1;
    }
    double y0[NX], y1[NX];
    mm_sys_t S;
    mm_cfg_t cf = cfg_of(em, ed);
    memcpy(y0, x, sizeof y0);
    memcpy(y1, x, sizeof y1);
    y1[i] += 1.0;
    sys_build(em, y0, u, &S);
    apply_impulse(em, &S, &cf, y0);
    sys_build(em, y1, u, &S);
    apply_impulse(em, &S, &cf, y1);
    for (int r = 0; r < NX; r++)
        col[r] = y1[r] - y0[r];
    return 0;
}

static void mm_guards(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                      const double *x, const double *u, double *g)
{
    (void)t;
    mm_sys_t S;
    mm_cfg_t cf = cfg_of(em, ed);
    double nud[NV], f[2][2], lam_b[2];
    sys_build(em, x, u, &S);
    sys_solve(em, &S, &cf, 0, nud, f, lam_b);
    for (int i = 0; i < NG; i++)
        g[i] = 1.0;
    for (int k = 0; k < 2; k++) {
        double *gk = g + G_PER_ARM * k, mu = em->p[P_MU];
        const point_terms_t *e = &S.ee[k];
        const double *n = cf.n[k], *tg = cf.t[k];
        double lam = n[0] * f[k][0] + n[1] * f[k][1], ft = tg[0] * f[k][0] + tg[1] * f[k][1];
        if (cf.c[k] == C_FREE)
            gk[0] = table_distance(em, e->p, NULL) + touch_tolerance(em);
        if (cf.c[k] != C_FREE)
            gk[1] = lam;
        if (cf.c[k] == C_SLIDE) {
            gk[2] = cf.dir[k] * (tg[0] * e->v[0] + tg[1] * e->v[1]);
            gk[5] = face_extent(em, e->p, (int)ed->aux[AUX_FACE_L + k]);
            gk[6] = slide_margin(em, &S, &cf, k, cf.dir[k]);
        }
        if (cf.c[k] == C_STICK) {
            gk[3] = mu * lam - ft;
            gk[4] = mu * lam + ft;
            if (!passive(em)) /* near the arm's stretched or folded pose: lock_check */
                gk[6] = fabs(sin(x[Q0 + 4 * k + 1])) - LOCK_SIN;
        }
    }
    if (!passive(em))
        return;
    for (int i = 0; i < 2; i++) {
        double *gb = g + G_BASE + 2 * i, lim = em->p[i == 0 ? P_ROLL_F : P_ROLL_T];
        if (cf.fixed[i]) { /* stuck: the wheels' friction holds while |lam| <= its limit */
            gb[0] = lim - lam_b[i];
            gb[1] = lim + lam_b[i];
        } else { /* rolling: until the speed passes through 0 */
            gb[0] = cf.base_dir[i] * S.nu[i];
        }
    }
}

/* Put arm k's end effector back on its face (normal n: n . p = n . p_face) by the least joint
 * motion dq = (n J_w)^T dn / |n J_w|^2: the contact is kept at the acceleration level, so the
 * position drifts by the integrator's error; settle() removes that drift at each control step. */
static void onto_face(const rs_entity_model_t *em, const rs_entity_data_t *ed, double *x, int k)
{
    double n[2], t[2];
    int face = (int)ed->aux[AUX_FACE_L + k];
    face_frame(face, n, t);
    double at = face == FACE_EDGE  ? -em->p[P_TABLE]
                : face == FACE_MIN ? -em->p[P_TABLE + 1]
                                   : em->p[P_TABLE + 2]; /* n . p on the face */
    for (int it = 0; it < 3; it++) {
        double r[2], J[2][2], ang, p[2], th = x[BTH], c = cos(th), s = sin(th);
        chain_point(em, x + Q0 + 4 * k, k, 2, r, J, &ang);
        ee_position(em, x, k, p);
        double dn = at - (n[0] * p[0] + n[1] * p[1]), g[2];
        for (int j = 0; j < 2; j++) /* n . R J_j */
            g[j] = n[0] * (c * J[0][j] - s * J[1][j]) + n[1] * (s * J[0][j] + c * J[1][j]);
        double nn = g[0] * g[0] + g[1] * g[1];
        if (dn == 0 || !(nn > 0))
            return;
        x[Q0 + 4 * k] += g[0] * dn / nn;
        x[Q0 + 4 * k + 1] += g[1] * dn / nn;
    }
}

/* Arm k's free normal acceleration n . p'' (its contact force removed, the other constraints of
 * cf held) with the generalised speeds changed by P D (the arms' rates; a rolling passive base's
 * speeds). */
static double free_normal_accel(const rs_entity_model_t *em, const mm_cfg_t *cf, const double *x,
                                const double *u, int k, const double D[NV], double P)
{
    double y[NX], nud[NV], a[2];
    memcpy(y, x, sizeof y);
    for (int j = 2; j < NV; j++)
        y[Q0 + 4 * ((j - 2) / 2) + 2 + (j - 2) % 2] += P * D[j];
    for (int i = 0; i < 2; i++)
        if (passive(em) && !cf->fixed[i])
            y[BV + i] += P * D[i];
    mm_sys_t S;
    mm_cfg_t fr = *cf;
    fr.c[k] = C_FREE, fr.dir[k] = 0.0;
    sys_build(em, y, u, &S);
    sys_solve(em, &S, &fr, 0, nud, NULL, NULL);
    ee_accel(&S, k, nud, a);
    return cf->n[k][0] * a[0] + cf->n[k][1] * a[1];
}

static double first_root(double g0, double g1, double g2);

/* One classical Runge-Kutta step of length h of configuration cf's flow. */
static void rk4_cfg(const rs_entity_model_t *em, const mm_cfg_t *cf, double *x, const double *u,
                    double h)
{
    double k1[NX], k2[NX], k3[NX], k4[NX], y[NX];
    derivs_cfg(em, cf, x, u, k1);
    for (int i = 0; i < NX; i++)
        y[i] = x[i] + 0.5 * h * k1[i];
    derivs_cfg(em, cf, y, u, k2);
    for (int i = 0; i < NX; i++)
        y[i] = x[i] + 0.5 * h * k2[i];
    derivs_cfg(em, cf, y, u, k3);
    for (int i = 0; i < NX; i++)
        y[i] = x[i] + h * k3[i];
    derivs_cfg(em, cf, y, u, k4);
    for (int i = 0; i < NX; i++)
        x[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
}

/* Arm k's end effector against its face (n . p = at on it) under configuration cf: the gap,
 * its rate and acceleration (g), the tangential speed and acceleration (vt). */
static void ee_on_face(const rs_entity_model_t *em, const mm_cfg_t *cf, const double *x,
                       const double *u, int k, double at, double g[3], double vt[2])
{
    mm_sys_t S;
    double nud[NV], a[2];
    const double *n = cf->n[k], *t = cf->t[k];
    sys_build(em, x, u, &S);
    sys_solve(em, &S, cf, 0, nud, NULL, NULL);
    ee_accel(&S, k, nud, a);
    const point_terms_t *e = &S.ee[k];
    g[0] = n[0] * e->p[0] + n[1] * e->p[1] - at;
    g[1] = n[0] * e->v[0] + n[1] * e->v[1];
    g[2] = n[0] * a[0] + n[1] * a[1];
    vt[0] = t[0] * e->v[0] + t[1] * e->v[1];
    vt[1] = t[0] * a[0] + t[1] * a[1];
}

/* Advance xp under configuration cp and the reference xr under cr by the same steps until arm
 * k's gap (what 0) or its tangential speed times s (what 1) falls to 0: 32 steps of the time
 * its quadratic model gives, then three of Newton's steps onto the root (machine precision:
 * the model is good there). -1 where it does not fall. */
static int advance_until(const rs_entity_model_t *em, const double *u, int k, double at,
                         const mm_cfg_t *cp, double *xp, const mm_cfg_t *cr, double *xr, int what,
                         double s)
{
    double h0 = 0.0;
    for (int it = 0, newton = 0; it < 256; it++) {
        double g[3], vt[2];
        ee_on_face(em, cp, xp, u, k, at, g, vt);
        double q = what ? s * vt[0] : g[0], dq = what ? s * vt[1] : g[1];
        double ddq = what ? 0.0 : g[2], tau = q > 0.0 ? first_root(-q, -dq, -0.5 * ddq) : 0.0;
        if (it == 0) {
            if (!(tau > 0.0) || !isfinite(tau))
                return -1;
            h0 = tau / 32.0;
        }
        if (tau < 0.25 * h0) { /* near the root (or just past it): Newton's steps */
            if (newton++ == 3)
                return 0;
            tau = -q / dq;
        }
        if (!isfinite(tau))
            return -1;
        double h = tau > 1.5 * h0 ? h0 : tau;
        rk4_cfg(em, cp, xp, u, h);
        rk4_cfg(em, cr, xr, u, h);
    }
    return -1;
}

/* A stuck end effector (arm k) lifted off its face by eps of state variable i: it falls back
 * (the free flow), touches with the frictionless normal impulse (resolve_arm), slides and
 * sticks again when its slip stops; D gets the state's change against the stuck flow over the
 * same time, per unit of the change. -1 where it does not come back. */
static int stuck_lift(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                      const double *u, int i, double eps, int k, double at, double D[NX])
{
    mm_cfg_t cf = cfg_of(em, ed), fr = cf, sl = cf;
    double xp[NX], xr[NX], g[3], vt[2];
    mm_sys_t S;
    fr.c[k] = C_FREE, fr.dir[k] = 0.0;
    memcpy(xp, x, sizeof xp);
    memcpy(xr, x, sizeof xr);
    xp[i] += eps;
    if (advance_until(em, u, k, at, &fr, xp, &cf, xr, 0, 1.0) < 0)
        return -1;
    sl.c[k] = C_SLIDE, sl.dir[k] = 0.0;
    sys_build(em, xp, u, &S);
    apply_impulse(em, &S, &sl, xp);
    ee_on_face(em, &cf, xp, u, k, at, g, vt);
    sl.dir[k] = vt[0] > 0.0 ? 1.0 : -1.0;
    ee_on_face(em, &sl, xp, u, k, at, g, vt);
    if (!(sl.dir[k] * vt[1] < 0.0) ||
        advance_until(em, u, k, at, &sl, xp, &cf, xr, 1, sl.dir[k]) < 0)
        return -1; /* the slip does not stop */
    sys_build(em, xp, u, &S);
    apply_impulse(em, &S, &cf, xp); /* stuck: what the stop left of the slip removed */
    for (int r = 0; r < NX; r++)
        D[r] = (xp[r] - xr[r]) / eps;
    return 0;
}

/* rs_robot_t.rejoin: a change of the base's pose or an arm's angles at a control step's start
 * that lifts an end effector sliding on the table (pressing: its free normal acceleration goes
 * into the face) off its face. It falls back after a time T of the order of the root of the
 * lift, missing the contact's force lambda over T; the touch's impulse is frictionless (along n
 * alone), so it returns the missed normal impulse but not the missed friction, mu lambda T:
 * the slip's speed changes by the order of the root of the lift, and the Step has no
 * first-order derivative on that side (mobile_manipulator --variants 777041931: the left arm's
 * rows 36, 115 at steps of 1e-5, 1e-6 along the base's y). -1 there. A stuck one (pressing)
 * misses both parts of its force, the touch returns the normal one, and the slip that the
 * missed friction leaves stops under friction within a time of that order, so the speeds come
 * back to what the contact allows and the pose moves by the order of the lift: first order,
 * given by stuck_lift (1, the other end effector free or not moved by x_i; 0 where it cannot
 * say: both moved, or a slip that does not stop). 0 for a lift that does not press (it flies
 * off). */
static int mm_rejoin(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                     const double *u, int i, int side, double *dx)
{
    if (i >= Q0 + 8 || (i >= Q0 && (i - Q0) % 4 >= 2) || !(em->p[P_MU] > 0.0))
        return 0; /* the rates and the base's speeds move no end effector */
    mm_cfg_t cf = cfg_of(em, ed);
    int stuck = -1, moved = 0;
    for (int k = 0; k < 2; k++) {
        if (cf.c[k] == C_FREE)
            continue;
        double y[NX], p0[2], p1[2], hs = 1e-7 * fmax(1.0, fabs(x[i]));
        memcpy(y, x, sizeof y);
        y[i] += side * hs;
        ee_position(em, x, k, p0);
        ee_position(em, y, k, p1);
        double out = cf.n[k][0] * (p1[0] - p0[0]) + cf.n[k][1] * (p1[1] - p0[1]);
        double D[NV] = {0};
        moved += out != 0.0;
        if (!(out > 0.0 && free_normal_accel(em, &cf, x, u, k, D, 0.0) < 0.0))
            continue;
        if (cf.c[k] == C_SLIDE)
            return -1;
        stuck = k;
    }
    /* a stuck one lifted, the other end effector free or not moved: its fall, touch and slip
     * to a stop simulated at two lifts, the root's term removed (Richardson's: the fall's
     * time is the root of the lift) */
    if (stuck < 0 || moved > 1)
        return 0;
    int face = (int)ed->aux[AUX_FACE_L + stuck];
    double at = face == FACE_EDGE  ? -em->p[P_TABLE]
                : face == FACE_MIN ? -em->p[P_TABLE + 1]
                                   : em->p[P_TABLE + 2];
    double eps = side * 1e-8 * (i == BX || i == BY ? fmax(1.0, fabs(x[i])) : 1.0), d1[NX], d2[NX];
    if (stuck_lift(em, ed, x, u, i, eps, stuck, at, d1) < 0 ||
        stuck_lift(em, ed, x, u, i, 0.25 * eps, stuck, at, d2) < 0)
        return 0;
    for (int r = 0; r < NX; r++)
        dx[r] = 2.0 * d2[r] - d1[r];
    /* under the wheels the base's speeds are the commands' and the arms move apart: the other
     * arm goes on as the start's map moved it (its rates jump with the new speeds' impulse,
     * which depends on the pose: the base's heading moved the right arm's rates by 51.4 per
     * rad, 20261190560428927), where stuck_lift starts from the point moved along x_i alone.
     * The lifted arm's own rates the impulse moves come back to what the contact allows */
    if (!passive(em))
        for (int r = Q0 + 4 * (1 - stuck); r < Q0 + 4 * (2 - stuck); r++)
            dx[r] = NAN;
    return 1;
}

/* The least P > 0 with g0 + g1 P + g2 P^2 = 0 (g0 < 0), or infinity. */
static double first_root(double g0, double g1, double g2)
{
    if (g0 >= 0)
        return 0.0;
    double disc = g1 * g1 - 4.0 * g2 * g0;
    if (disc < 0)
        return INFINITY;
    double q = -0.5 * (g1 + copysign(sqrt(disc), g1)), r[2] = {INFINITY, INFINITY}, best = INFINITY;
    if (q != 0)
        r[0] = g0 / q;
    if (g2 != 0)
        r[1] = q / g2;
    for (int i = 0; i < 2; i++)
        if (r[i] > 0 && r[i] < best)
            best = r[i];
    return best;
}

static void jam_impulse(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                        const double *u, int k);
static int tangential_impact(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                             double *x, const double *u, int k);

/* Put arm k, on its face, into the mode chosen for it (rest_mode, contact_after_impulse) with
 * slip direction dir, logging the events from the state before: stick with the impulse that
 * leaves it at rest; free, leaving from the face; a slide (-2: at the jam, its impulse follows;
 * -1: no mode is consistent, mm_failure stops the step). */
static void set_arm_mode(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                         const double *u, int k, const mm_sys_t *S, const mm_cfg_t *cf, int mode,
                         double dir, const double *before)
{
    int old = contact_of(ed->mode, k);
    double old_dir = ed->aux[AUX_DIR_L + k];
    if (mode == C_STICK || mode == C_FREE) {
        if (mode == C_STICK) {
            mm_cfg_t trial = *cf;
            trial.c[k] = C_STICK, trial.dir[k] = 0.0;
            apply_impulse(em, S, &trial, x);
        } else
            onto_face(em, ed, x, k);
        ed->mode = mode_with(ed->mode, k, mode);
        ed->aux[AUX_DIR_L + k] = 0.0;
        if (old != mode)
            rs_emit_event(ed, mode == C_STICK ? EV_STICK : EV_RELEASE, t, k, before, x, NX);
        return;
    }
    ed->mode = mode_with(ed->mode, k, C_SLIDE);
    ed->aux[AUX_DIR_L + k] = dir;
    if (old == C_STICK)
        rs_emit_event(ed, EV_SLIP, t, k, before, x, NX);
    else if (old == C_SLIDE && dir != old_dir) { /* a reversal through rest */
        rs_emit_event(ed, EV_STICK, t, k, before, x, NX);
        rs_emit_event(ed, EV_SLIP, t, k, x, x, NX);
    }
    if (mode == -2)
        jam_impulse(em, ed, t, x, u, k);
    else if (mode < 0 && tangential_impact(em, ed, t, x, u, k) < 0)
        ed->aux[AUX_JAM] = 1 + k;
}

/* The generalised speeds changed by P D: the arms' rates, a rolling passive base's speeds. */
static void add_impulse(const rs_entity_model_t *em, const mm_cfg_t *cf, double *x, double P,
                        const double D[NV])
{
    for (int j = 2; j < NV; j++)
        x[Q0 + 4 * ((j - 2) / 2) + 2 + (j - 2) % 2] += P * D[j];
    for (int i = 0; i < 2; i++)
        if (passive(em) && !cf->fixed[i])
            x[BV + i] += P * D[i];
}

/* Arm k's end-effector velocity change (normal, tangential) per unit impulse along the world
 * direction dirv at it, the other constraints of cf held (W dirv, W = J M_c^-1 J^T); the
 * generalised speeds' change in D. */
static void impulse_response(const rs_entity_model_t *em, const mm_sys_t *S, const mm_cfg_t *cf,
                             int k, const double dirv[2], double D[NV], double *wn, double *wt)
{
    double nud0[NV], dp[2];
    mm_sys_t S0 = *S;
    force_response(em, S, cf, k, dirv, nud0, D);
    memset(S0.ee[k].a0, 0, sizeof S0.ee[k].a0);
    ee_accel(&S0, k, D, dp);
    *wn = cf->n[k][0] * dp[0] + cf->n[k][1] * dp[1];
    *wt = cf->t[k][0] * dp[0] + cf->t[k][1] * dp[1];
}

/* Painleve's inconsistent slide (arm k slides to s t with b = n . W (n - mu s t) < 0 and its free
 * motion entering the face: neither sliding on, which needs a pulling force, nor leaving is
 * consistent) continued by a tangential impact, an impact without collision (Genot and
 * Brogliato, "New results on Painleve paradoxes", Eur. J. Mech. A/Solids 18, 1999; Darboux-
 * Keller's impulse process at v_n = 0), taken at the fixed configuration:
 *   1. the normal impulse P with its sliding friction, along n - mu s t, until the slip stops:
 *      v_n = b P <= 0, v_t = v_t0 + c P, P = -v_t0 / c. The kinetic energy's rate in P is
 *      v_n - mu s v_t < 0 while it slips, and it is convex in P ((n - mu s t)^T W (n - mu s t)
 *      = b - mu s c >= 0), so the slip stops at a finite P (s c < 0);
 *   2. then at v_t = 0, v_n <= 0, the impact goes on to v_n = 0 (inelastic, as the touches): stuck
 *      (both components to 0, the impulse inside the cone) where |W_tn| <= mu W_tt; else slipping
 *      to s' = sgn(W_tn) with b' = W_nn - mu |W_tn| > 0 until v_n = 0. The energy falls in both.
 * Afterwards the mode is chosen as after any impulse (at rest: stick, free or a slide its own
 * way). Returns 0, or -1 where it does not apply (no slip to take, or the state is not that
 * case) or leaves no consistent mode (mm_failure then stops the step, at the state reached). */
static int tangential_impact(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                             double *x, const double *u, int k)
{
    double before[NX], mu = em->p[P_MU], D[NV], b, c;
    memcpy(before, x, sizeof before);
    mm_sys_t S;
    mm_cfg_t cf = cfg_of(em, ed);
    sys_build(em, x, u, &S);
    const double *n = cf.n[k], *tg = cf.t[k];
    double vt = tg[0] * S.ee[k].v[0] + tg[1] * S.ee[k].v[1];
    double vscale = 1e-9 * (1.0 + fabs(S.nu[2 + 2 * k]) + fabs(S.nu[3 + 2 * k]));
    if (!(fabs(vt) > vscale))
        return -1;
    double sd = vt > 0 ? 1.0 : -1.0, dv[2] = {n[0] - mu * sd * tg[0], n[1] - mu * sd * tg[1]};
    impulse_response(em, &S, &cf, k, dv, D, &b, &c);
    if (!(b < 0) || !(sd * c < 0))
        return -1;
    add_impulse(em, &cf, x, -vt / c, D); /* 1: the slip stops */
    sys_build(em, x, u, &S);
    double Dn[NV], Dt[NV], wnn, wtn, wnt, wtt;
    impulse_response(em, &S, &cf, k, n, Dn, &wnn, &wtn);
    impulse_response(em, &S, &cf, k, tg, Dt, &wnt, &wtt);
    mm_cfg_t trial = cf;
    if (fabs(wtn) <= mu * wtt) { /* 2: stuck, to rest on the face */
        trial.c[k] = C_STICK, trial.dir[k] = 0.0;
        apply_impulse(em, &S, &trial, x);
    } else { /* 2: slipping the way the normal impulse drives it, until v_n = 0 */
        double s2 = wtn > 0 ? 1.0 : -1.0, dv2[2] = {n[0] - mu * s2 * tg[0], n[1] - mu * s2 * tg[1]};
        double b2, c2, vn = n[0] * S.ee[k].v[0] + n[1] * S.ee[k].v[1];
        impulse_response(em, &S, &cf, k, dv2, D, &b2, &c2);
        if (b2 > 0 && vn < 0)
            add_impulse(em, &cf, x, -vn / b2, D);
    }
    onto_face(em, ed, x, k);
    sys_build(em, x, u, &S);
    vscale = 1e-9 * (1.0 + fabs(S.nu[2 + 2 * k]) + fabs(S.nu[3 + 2 * k]));
    if (fabs(n[0] * S.ee[k].v[0] + n[1] * S.ee[k].v[1]) > vscale) {
        trial = cf; /* the normal velocity's rounding: the contact's own impulse */
        trial.c[k] = C_SLIDE, trial.dir[k] = 0.0;
        apply_impulse(em, &S, &trial, x);
        sys_build(em, x, u, &S);
    }
    double dir;
    int mode = contact_after_impulse(em, &S, &cf, k, vscale, &dir);
    if (mode < 0) { /* at rest with no consistent mode: stops here (mm_failure) */
        ed->mode = mode_with(ed->mode, k, C_SLIDE);
        ed->aux[AUX_DIR_L + k] = dir;
        return -1;
    }
    set_arm_mode(em, ed, t, x, u, k, &S, &cf, mode, dir, before);
    return 0;
}

/* The dynamic jam's impulse: arm k slides to s t with its compliance b = n . W (n - mu s t) at
 * or below the jam (slide_margin <= 0) while it presses: the force lambda (n - mu s t) that keeps
 * it on the face grows without bound while its impulse P stays finite (Genot and Brogliato 1999).
 * Taken at once, at the fixed configuration (the rigid limit): the generalised speeds jump by
 * M_c^-1 J^T (n - mu s t - (b / W_nn) n) P, the normal term the velocity b P that the flow's own
 * terms (a_n0 = -b lambda) make up over the jam, so the end effector stays on the face (v_n = 0;
 * the friction ratio exceeds mu by the factor 1 / (1 - b / W_nn) <= 1 + 1e-6). P is the least of
 *   - the slip stops (v_t = 0; the impulse decelerates it where s t . (the velocity change) < 0);
 *   - the free normal acceleration a_n0 (quadratic in P) rises to 0: the force needed is finite
 *     again, lambda = -a_n0 / b falls to 0 and the contact leaves (as at any lambda = 0; at once
 *     if a_n0 >= 0 already).
 * It adds no energy: v_n = 0 throughout, and the friction opposes the slip. Afterwards the mode
 * is chosen as after any impulse. Where no finite P ends it, or b < 0 with a_n0 < 0 (a slide
 * left past the jam by a jump: Painleve's inconsistent case), no mode is: mm_failure. */
static void jam_impulse(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                        const double *u, int k)
{
    double before[NX], mu = em->p[P_MU];
    memcpy(before, x, sizeof before);
    mm_sys_t S, S0;
    mm_cfg_t cf = cfg_of(em, ed);
    sys_build(em, x, u, &S);
    const double *n = cf.n[k], *tg = cf.t[k];
    double sd = cf.dir[k], dv[2] = {n[0] - mu * sd * tg[0], n[1] - mu * sd * tg[1]};
    double nud0[NV], D[NV], Dn[NV], dp[2], dpn[2];
    force_response(em, &S, &cf, k, dv, nud0, D); /* per unit impulse: the same M_c */
    force_response(em, &S, &cf, k, n, nud0, Dn);
    S0 = S;
    memset(S0.ee[k].a0, 0, sizeof S0.ee[k].a0);
    ee_accel(&S0, k, D, dp); /* the end effector's velocity change per unit impulse */
    ee_accel(&S0, k, Dn, dpn);
    double b = n[0] * dp[0] + n[1] * dp[1], wnn = n[0] * dpn[0] + n[1] * dpn[1];
    double a_free = free_normal_accel(em, &cf, x, u, k, D, 0.0), P = INFINITY;
    if (a_free >= 0)
        P = 0.0; /* no force needed: it leaves */
    else if (b >= 0 && wnn > 0) {
        for (int j = 0; j < NV; j++)
            D[j] -= b / wnn * Dn[j];
        ee_accel(&S0, k, D, dp);
        double c = tg[0] * dp[0] + tg[1] * dp[1];
        double vt0 = tg[0] * S.ee[k].v[0] + tg[1] * S.ee[k].v[1];
        double p_stop = sd * c < 0 ? fmax(0.0, -vt0 / c) : INFINITY;
        double h = isfinite(p_stop) && p_stop > 0 ? p_stop : 1.0;
        double f1 = free_normal_accel(em, &cf, x, u, k, D, h);
        double f2 = free_normal_accel(em, &cf, x, u, k, D, 2.0 * h);
        double g2 = (f2 - 2.0 * f1 + a_free) / (2.0 * h * h), g1 = (f1 - a_free) / h - g2 * h;
        double p_a = first_root(a_free, g1, g2);
        P = fmin(p_stop, p_a);
        if (p_a < p_stop)
            a_free = 0.0; /* it ends where the force needed falls to 0: it leaves */
    }
    if (!isfinite(P)) {
        if (tangential_impact(em, ed, t, x, u, k) < 0)
            ed->aux[AUX_JAM] = 1 + k;
        return;
    }
    add_impulse(em, &cf, x, P, D);
    if (a_free >= 0) { /* leaves, from the face (not the integrator's drift inside it) */
        set_arm_mode(em, ed, t, x, u, k, &S, &cf, C_FREE, 0.0, before);
        return;
    }
    /* the slip stopped: the mode at rest */
    sys_build(em, x, u, &S);
    double dir, vscale = 1e-9 * (1.0 + fabs(S.nu[2 + 2 * k]) + fabs(S.nu[3 + 2 * k]));
    int mode = contact_after_impulse(em, &S, &cf, k, vscale, &dir);
    set_arm_mode(em, ed, t, x, u, k, &S, &cf, mode == -2 ? -1 : mode, dir, before);
}

/* Pick arm k's contact state at a touch or after a discontinuity: an inelastic normal impulse if
 * it moves into the table, then stick if the cone holds it at rest, else slide, else free. */
static void resolve_arm(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                        const double *u, int k)
{
    int old = contact_of(ed->mode, k);
    double before[NX];
    memcpy(before, x, sizeof before);
    mm_sys_t S;
    mm_cfg_t cf = cfg_of(em, ed);
    double nud[NV], f[2][2], mu = em->p[P_MU];
    sys_build(em, x, u, &S);
    const point_terms_t *e = &S.ee[k];
    const double *n = cf.n[k], *tg = cf.t[k];
    /* velocities into the face and along it; the force's normal and tangential parts */
#define V_IN (-(n[0] * e->v[0] + n[1] * e->v[1]))
#define V_T (tg[0] * e->v[0] + tg[1] * e->v[1])
#define F_N (n[0] * f[k][0] + n[1] * f[k][1])
#define F_T (tg[0] * f[k][0] + tg[1] * f[k][1])
    double vscale = 1e-9 * (1.0 + fabs(S.nu[2 + 2 * k]) + fabs(S.nu[3 + 2 * k]));
    int own = fabs(V_IN) > vscale && fabs(V_IN) <= 1e3 * vscale;
    if (old == C_SLIDE && V_IN > 1e3 * vscale) {
        /* a sliding end effector driven into its face: the impact's impulse along the sliding
         * contact's own force direction n - mu dir t (Coulomb's friction over the impact), as
         * in the band below, where the slip goes on its way after it; else frictionless, below.
         * So the map is the same on both sides of the band's edge */
        double y[NX];
        memcpy(y, x, sizeof y);
        apply_impulse(em, &S, &cf, y);
        mm_sys_t Sy;
        sys_build(em, y, u, &Sy);
        own = cf.dir[k] * (tg[0] * Sy.ee[k].v[0] + tg[1] * Sy.ee[k].v[1]) > vscale;
    }
    if (old != C_FREE && own) {
        /* the normal velocity the integrator's error left on a contact kept at the acceleration
         * level (1e-6 relative at most; a contact leaves only where its force falls to 0):
         * removed by the contact's own impulse, not read as a release. Moving away from a face
         * that it would leave after that impulse too (the new commands let it go), it leaves
         * without it, as it does beyond the band and at rest on the face: a change of the
         * state moves v_n by its own first-order amount, which the impulse would take away
         * within the band only, so the map would differ across the band's edge */
        double y[NX];
        memcpy(y, x, sizeof y);
        apply_impulse(em, &S, &cf, y);
        mm_sys_t Sy;
        sys_build(em, y, u, &Sy);
        if (V_IN < 0.0 && leaves_after_impulse(em, &Sy, &cf, k, vscale))
            own = 0;
        else {
            memcpy(x, y, sizeof y);
            S = Sy;
        }
    }
    if (old != C_FREE && fabs(V_IN) <= vscale) {
        /* a state already consistent with its contact (a restore, unchanged commands): kept as
         * it is, so that settling twice changes nothing */
        sys_solve(em, &S, &cf, 0, nud, f, NULL);
        int ok = F_N > 0;
        if (old == C_STICK)
            ok = ok && fabs(V_T) <= vscale && fabs(F_T) <= mu * F_N;
        else
            ok = ok && cf.dir[k] * V_T > 0;
        if (ok) {
            onto_face(em, ed, x, k);
            if (old == C_STICK) {
                sys_build(em, x, u, &S);
                apply_impulse(em, &S, &cf, x);
            }
            return;
        }
    }
    if (old != C_FREE && V_IN < -vscale) {
        /* moving away from the table (the base backs off): it lets go, from the face */
        onto_face(em, ed, x, k);
        ed->mode = mode_with(ed->mode, k, C_FREE);
        ed->aux[AUX_DIR_L + k] = 0.0;
        rs_emit_event(ed, EV_RELEASE, t, k, before, x, NX);
        return;
    }
    mm_cfg_t trial = cf;
    if (V_IN > vscale) {
        /* the inelastic normal impulse: the other constraints held, this arm's normal velocity
         * brought to 0 (a frictionless row: dir 0) */
        trial.c[k] = C_SLIDE, trial.dir[k] = 0.0;
        apply_impulse(em, &S, &trial, x);
        sys_build(em, x, u, &S);
    }
    /* at rest: the consistent mode of rest_mode; sliding: on, or free if it leaves */
    double dir = 0.0;
    int c = contact_after_impulse(em, &S, &trial, k, vscale, &dir), jam = c == -2;
    int inconsistent = c == -1;
    if (c == C_STICK) {
        trial.c[k] = C_STICK, trial.dir[k] = 0.0;
        apply_impulse(em, &S, &trial, x); /* at rest on the table, both components exactly 0 */
    } else if (c < 0)
        c = C_SLIDE; /* -1: no mode is consistent, the tangential impact below */
#undef V_IN
#undef V_T
#undef F_N
#undef F_T
    /* on the face, or leaving from it: a touch that leaves at once too, so that its guard
     * (distance + touch_tolerance) starts above 0, armed, not at the root's tolerance inside */
    onto_face(em, ed, x, k);
    ed->mode = mode_with(ed->mode, k, c);
    ed->aux[AUX_DIR_L + k] = c == C_SLIDE ? dir : 0.0;
    int kind = -1;
    if (old == C_FREE && c != C_FREE)
        kind = EV_TOUCH;
    else if (old != C_FREE && c == C_FREE)
        kind = EV_RELEASE;
    else if (old == C_SLIDE && c == C_STICK)
        kind = EV_STICK;
    else if (old == C_STICK && c == C_SLIDE)
        kind = EV_SLIP;
    if (kind >= 0)
        rs_emit_event(ed, kind, t, k, before, x, NX);
    if (jam) /* it slides pressing at the jam: the jam's impulse at once */
        jam_impulse(em, ed, t, x, u, k);
    else if (inconsistent && tangential_impact(em, ed, t, x, u, k) < 0)
        ed->aux[AUX_JAM] = 1 + k; /* no mode is consistent: mm_failure stops the step here */
}

/* A passive base's speed i (0: v, 1: w): moving, it rolls (friction against its sign); at rest
 * or reaching rest (the rolling guard's root, where the speed is 0 to the root's tolerance),
 * stuck if the wheels' friction can hold it (|holding force| <= the limit), else rolling
 * against the net load. Speed exactly 0 when stuck. */
static void resolve_base(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                         const double *u, int i, int at_root)
{
    double before[NX];
    memcpy(before, x, sizeof before);
    int old = ed->aux[AUX_BASE_V + i] == 0.0;
    mm_sys_t S;
    mm_cfg_t cf = cfg_of(em, ed);
    double nud[NV], lam_b[2], lim = em->p[i == 0 ? P_ROLL_F : P_ROLL_T];
    sys_build(em, x, u, &S);
    if (!at_root && S.nu[i] != 0.0) {
        /* moving (a restored or set state): rolling its way, the friction against it */
        ed->aux[AUX_BASE_V + i] = S.nu[i] > 0 ? 1.0 : -1.0;
        if (old)
            rs_emit_event(ed, EV_BASE_ROLL, t, i, before, x, NX);
        return;
    }
    cf.fixed[i] = 1, cf.base_dir[i] = 0.0;
    sys_solve(em, &S, &cf, 0, nud, NULL, lam_b);
    if (fabs(lam_b[i]) <= lim) {
        ed->aux[AUX_BASE_V + i] = 0.0;
        apply_impulse(em, &S, &cf, x);
        if (!old)
            rs_emit_event(ed, EV_BASE_STOP, t, i, before, x, NX);
    } else {
        /* the holding force needed exceeds the friction: it rolls the way the load pushes */
        ed->aux[AUX_BASE_V + i] = lam_b[i] > 0 ? -1.0 : 1.0;
        if (old)
            rs_emit_event(ed, EV_BASE_ROLL, t, i, before, x, NX);
    }
}

/* A sliding end effector's normal acceleration per unit of its contact force lambda, the force
 * along n - mu dir t (the other constraints held): w = n . J M_c^-1 G^T. With w > 0 the contact
 * leaves where lambda falls to 0; with w <= 0 (Painleve's paradox, friction too high for the
 * pose: P. Painleve 1895; D. Stewart, SIAM Review 42(1), 2000) the free motion would enter the
 * face and sliding on would need lambda < 0: no consistent continuation. */
static double slide_compliance(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                               const double *x, const double *u, int k)
{
    mm_sys_t S, S1;
    mm_cfg_t cf = cfg_of(em, ed);
    double nud[NV], an[2];
    sys_build(em, x, u, &S);
    const double *n = cf.n[k], *t = cf.t[k];
    double dv[2] = {n[0] - em->p[P_MU] * cf.dir[k] * t[0], n[1] - em->p[P_MU] * cf.dir[k] * t[1]};
    cf.c[k] = C_FREE;
    S1 = S;
    for (int j = 0; j < NV; j++) /* a unit lambda's generalised force, G^T 1 */
        S1.rhs[j] += S.ee[k].J[0][j] * dv[0] + S.ee[k].J[1][j] * dv[1];
    for (int i = 0; i < 2; i++) {
        sys_solve(em, i ? &S1 : &S, &cf, 0, nud, NULL, NULL);
        an[i] = 0.0;
        for (int j = 0; j < NV; j++)
            an[i] += (n[0] * S.ee[k].J[0][j] + n[1] * S.ee[k].J[1][j]) * nud[j];
    }
    return an[1] - an[0];
}

/* The face a free end effector meets: the nearest to it (it has just crossed it). */
static void touch_face(const rs_entity_model_t *em, rs_entity_data_t *ed, const double *x, int k)
{
    double p[2];
    int face;
    ee_position(em, x, k, p);
    table_distance(em, p, &face);
    ed->aux[AUX_FACE_L + k] = face;
}

/* A passive base whose rolling direction an arm's impulse (a touch: the impulse moves the base
 * too) left against its speed: the rolling friction would push it along its motion and add
 * energy, and the rolling guard (direction times speed) would start below 0, never to fire.
 * Resolved again from the new speed (at rest: stuck if the wheels' friction holds it). */
static void base_after_impulse(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                               double *x, const double *u)
{
    if (!passive(em))
        return;
    for (int i = 0; i < 2; i++) {
        double dir = ed->aux[AUX_BASE_V + i];
        if (dir != 0.0 && !(dir * x[BV + i] > 0))
            resolve_base(em, ed, t, x, u, i, x[BV + i] == 0.0);
    }
}

/* A stuck end effector held by servoed wheels (the wheels mode) with its arm at the stretched
 * or folded pose: the shoulder's distance r from the fixed end effector follows the base's
 * commanded motion alone, and the joint rates needed, r_dot / (dr/dq2) with dr/dq2 =
 * -a1 a2 sin q2 / r, grow without bound as the arm reaches the pose while r_dot drives it further
 * (q2 ~ sqrt(t* - t): unbounded kinetic energy from the servos). The contact cannot let go where
 * the force that holds the end effector, along the arm (d = (p - s) / r when stretched, -d when
 * folded), lies inside the friction cone (self-locking). Checked where |sin q2| falls to LOCK_SIN
 * (the guard), a few microseconds before: no finite motion continues, and mm_failure stops the
 * step there. Else (the base's motion lets the arm through, or the force would slip) nothing. */
static void lock_check(const rs_entity_model_t *em, rs_entity_data_t *ed, const double *x,
                       const double *u, int k)
{
    double th = x[BTH], c = cos(th), s = sin(th), v, w, p[2], n[2], tg[2];
    double sb[2] = {em->p[P_SHOULDER], (k == 0 ? 1.0 : -1.0) * em->p[P_SHOULDER + 1]};
    double sw[2] = {x[BX] + c * sb[0] - s * sb[1], x[BY] + s * sb[0] + c * sb[1]};
    base_speeds(em, x, u, &v, &w);
    double sdot[2] = {v * c - w * (s * sb[0] + c * sb[1]), v * s + w * (c * sb[0] - s * sb[1])};
    ee_position(em, x, k, p);
    double d[2] = {p[0] - sw[0], p[1] - sw[1]}, r = hypot(d[0], d[1]);
    if (!(r > 0))
        return;
    d[0] /= r, d[1] /= r;
    double rdot = -(d[0] * sdot[0] + d[1] * sdot[1]), sg = cos(x[Q0 + 4 * k + 1]) > 0 ? 1.0 : -1.0;
    face_frame((int)ed->aux[AUX_FACE_L + k], n, tg);
    double fn = sg * (n[0] * d[0] + n[1] * d[1]), ft = sg * (tg[0] * d[0] + tg[1] * d[1]);
    if (sg * rdot > 0 && fn > 0 && fabs(ft) < em->p[P_MU] * fn)
        ed->aux[AUX_JAM] = 3 + k;
}

/* After a jump, each part's mode consistent with the others' new ones: an arm's mode changes
 * the base's load and the base's the arms' forces, and a force left past its guard's root never
 * fires it (a slide pulling at lambda < 0 once a base rolled the other way: its friction then
 * drove the slip, +1.2 J in a step; a slip reversed by the other arm's touch impulse). An arm
 * sliding without pressing, or against its slip direction, takes the mode consistent after an
 * impulse (it leaves where the free motion does), one stuck outside its cone the mode
 * consistent at rest, a stuck passive base whose holding force exceeds the wheels' friction
 * rolls, a slide at the jam takes its impulse; again while any changes (at most 4 rounds). A
 * stuck arm of a servoed base within its lock guard's threshold (stuck there, or new commands)
 * is checked for self-locking too. */
static void recheck(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                    const double *u)
{
    for (int round = 0; round < 4 && ed->aux[AUX_JAM] == 0.0; round++) {
        int changed = 0;
        base_after_impulse(em, ed, t, x, u);
        for (int k = 0; k < 2 && !passive(em); k++) /* stuck with its lock guard already past 0 */
            if (contact_of(ed->mode, k) == C_STICK && fabs(sin(x[Q0 + 4 * k + 1])) <= LOCK_SIN)
                lock_check(em, ed, x, u, k);
        if (ed->aux[AUX_JAM] != 0.0)
            break;
        mm_sys_t S;
        mm_cfg_t cf = cfg_of(em, ed);
        double nud[NV], f[2][2], lam_b[2], mu = em->p[P_MU];
        sys_build(em, x, u, &S);
        sys_solve(em, &S, &cf, 0, nud, f, lam_b);
        for (int k = 0; k < 2 && !changed; k++) {
            int c = cf.c[k];
            const double *n = cf.n[k], *tg = cf.t[k];
            double fn = n[0] * f[k][0] + n[1] * f[k][1], ft = tg[0] * f[k][0] + tg[1] * f[k][1];
            double vt = tg[0] * S.ee[k].v[0] + tg[1] * S.ee[k].v[1];
            double vscale = 1e-9 * (1.0 + fabs(S.nu[2 + 2 * k]) + fabs(S.nu[3 + 2 * k]));
            if (!(c == C_SLIDE && (!(fn > 0) || cf.dir[k] * vt < -vscale)) &&
                !(c == C_STICK && !(fn > 0 && fabs(ft) <= mu * fn)))
                continue;
            double before[NX], dir;
            memcpy(before, x, sizeof before);
            int mode = c == C_STICK ? rest_mode(em, &S, &cf, k, 1, &dir)
                                    : contact_after_impulse(em, &S, &cf, k, vscale, &dir);
            changed = 1;
            set_arm_mode(em, ed, t, x, u, k, &S, &cf, mode, dir, before);
        }
        for (int i = 0; i < 2 && !changed && passive(em); i++)
            if (cf.fixed[i] && fabs(lam_b[i]) > em->p[i == 0 ? P_ROLL_F : P_ROLL_T]) {
                resolve_base(em, ed, t, x, u, i, 1);
                changed = 1;
            }
        for (int k = 0; k < 2 && !changed; k++)
            if (cf.c[k] == C_SLIDE && !(slide_margin(em, &S, &cf, k, cf.dir[k]) > 0)) {
                jam_impulse(em, ed, t, x, u, k);
                changed = 1;
            }
        if (!changed)
            break;
    }
    base_after_impulse(em, ed, t, x, u);
}

static void mm_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                    const double *u, const int *fired)
{
    for (int k = 0; k < 2; k++) {
        const int *fk = fired + G_PER_ARM * k;
        int c = contact_of(ed->mode, k);
        if (c == C_FREE && fk[0]) {
            touch_face(em, ed, x, k);
            resolve_arm(em, ed, t, x, u, k);
        } else if (c != C_FREE && (fk[1] || fk[5])) { /* no push left, or slid off the face */
            if (c == C_SLIDE && fk[1] && !(slide_compliance(em, ed, x, u, k) > 0)) {
                /* neither sliding on nor leaving: the tangential impact, else mm_failure */
                if (tangential_impact(em, ed, t, x, u, k) < 0)
                    ed->aux[AUX_JAM] = 1 + k;
                continue;
            }
            if (fk[1]) /* leaves from the face itself, not from the integrator's drift inside */
                onto_face(em, ed, x, k);
            ed->mode = mode_with(ed->mode, k, C_FREE);
            ed->aux[AUX_DIR_L + k] = 0.0;
            rs_emit_event(ed, EV_RELEASE, t, k, x, x, NX);
        } else if (c == C_SLIDE && fk[2]) {
            /* the slip stopped: the mode consistent at rest (stick, free, or a slide its own
             * way), else no mode is (Painleve) and mm_failure stops the step */
            mm_sys_t S;
            mm_cfg_t cf = cfg_of(em, ed);
            double dir, before[NX];
            sys_build(em, x, u, &S);
            memcpy(before, x, sizeof before);
            int mode = rest_mode(em, &S, &cf, k, 1, &dir);
            set_arm_mode(em, ed, t, x, u, k, &S, &cf, mode, dir, before);
        } else if (c == C_STICK && (fk[3] || fk[4])) {
            ed->mode = mode_with(ed->mode, k, C_SLIDE);
            ed->aux[AUX_DIR_L + k] = fk[3] ? -1.0 : 1.0; /* f_t reached +mu lambda: slips to -t */
            rs_emit_event(ed, EV_SLIP, t, k, x, x, NX);
        } else if (c == C_SLIDE && fk[6]) {
            jam_impulse(em, ed, t, x, u, k); /* pressing at the dynamic jam */
        } else if (c == C_STICK && fk[6]) {
            lock_check(em, ed, x, u, k);
        }
    }
    base_after_impulse(em, ed, t, x, u);
    for (int i = 0; i < 2 && passive(em); i++) {
        const int *fb = fired + G_BASE + 2 * i;
        if (ed->aux[AUX_BASE_V + i] == 0.0 && (fb[0] || fb[1])) {
            double before[NX];
            memcpy(before, x, sizeof before);
            ed->aux[AUX_BASE_V + i] = fb[0] ? -1.0 : 1.0; /* lam reached +limit: the load is - */
            rs_emit_event(ed, EV_BASE_ROLL, t, i, before, x, NX);
        } else if (ed->aux[AUX_BASE_V + i] != 0.0 && fb[0]) {
            resolve_base(em, ed, t, x, u, i, 1);
        }
    }
    recheck(em, ed, t, x, u);
}

static void mm_settle(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                      const double *u)
{
    ed->aux[AUX_JAM] = 0.0; /* resolved again below, with the new inputs */
    if (!passive(em)) {
        /* new wheel speeds: a step in the base's velocity is an impulse through the shoulders;
         * the arms' rates jump with it (M dnu = impulse on the v, w rows only, the contacts
         * held), so that e.g. a free arm's angular momentum about its shoulder is kept */
        double nub[2];
        base_speeds(em, x, u, &nub[0], &nub[1]);
        if (nub[0] != x[BV] || nub[1] != x[BW]) {
            mm_sys_t S;
            mm_cfg_t cf = cfg_of(em, ed);
            sys_build_at(em, x, u, x + BV, &S);
            apply_impulse(em, &S, &cf, x);
            x[BV] = nub[0], x[BW] = nub[1];
        }
    } else {
        for (int i = 0; i < 2; i++) {
            double dir = ed->aux[AUX_BASE_V + i];
            /* stuck (is it moving?), or rolling but no longer that way (reached rest) */
            if (dir == 0.0 || !(dir * x[BV + i] > 0))
                resolve_base(em, ed, t, x, u, i, dir != 0.0);
        }
    }
    for (int k = 0; k < 2; k++) {
        int c = contact_of(ed->mode, k);
        double p[2];
        ee_position(em, x, k, p);
        double tol = touch_tolerance(em);
        if (c != C_FREE && table_distance(em, p, NULL) > tol) {
            /* on a table that new parameters moved away from it (or shorter links): it lets
             * go where it is; held, the contact would pin the end effector in the air and
             * its force would work on the arm */
            ed->mode = mode_with(ed->mode, k, C_FREE);
            ed->aux[AUX_DIR_L + k] = 0.0;
            rs_emit_event(ed, EV_RELEASE, t, k, x, x, NX);
            c = C_FREE;
        }
        if (c == C_FREE && table_distance(em, p, NULL) <= tol)
            touch_face(em, ed, x, k);
        if (c != C_FREE || table_distance(em, p, NULL) <= tol) {
            /* free: at or (by the integrator's tolerance) past a face, and not leaving it */
            mm_sys_t S;
            mm_cfg_t cf = cfg_of(em, ed);
            sys_build(em, x, u, &S);
            if (c != C_FREE || cf.n[k][0] * S.ee[k].v[0] + cf.n[k][1] * S.ee[k].v[1] <= 0)
                resolve_arm(em, ed, t, x, u, k);
        }
    }
    recheck(em, ed, t, x, u);
}

/* A jammed contact (no consistent mode: Painleve; or a stuck arm self-locking, lock_check): the
 * step stops there with this error; new commands or a new state settle it again. */
static int mm_failure(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                      rs_status_t *st)
{
    int k = (int)ed->aux[AUX_JAM] - 1;
    if (k < 0)
        return 0;
    static const char *const faces[3] = {"edge", "side x = table_x_min", "side x = table_x_max"};
    if (k >= 2) /* the stuck arm k - 2 at its stretched (cos q2 > 0) or folded pose */
        return rs_fail(st, RS_ESIMFAIL,
                       "'%s': self-locking at t = %.9g s: the %s end effector is stuck on the "
                       "table's %s with its arm %s, and the wheel speeds take the shoulder out of "
                       "its reach; the arm's pull lies inside the friction cone (mu %g): change "
                       "the wheel speeds",
                       em->name, ed->data->t, k == 2 ? "left" : "right",
                       faces[(int)ed->aux[AUX_FACE_L + k - 2]],
                       cos(x[Q0 + 4 * (k - 2) + 1]) > 0 ? "stretched" : "folded", em->p[P_MU]);
    return rs_fail(st, RS_ESIMFAIL,
                   "'%s': the %s end effector sliding on the table's %s has no consistent "
                   "continuation at t = %.9g s (Painleve: with mu = %g in this pose it can neither "
                   "stick nor slide on, which needs a pulling normal force or accelerates against "
                   "the slip, nor leave, which enters the table); lower mu or change the torques",
                   em->name, k == 0 ? "left" : "right", faces[(int)ed->aux[AUX_FACE_L + k]],
                   ed->data->t, em->p[P_MU]);
}

static void mm_sense(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, const double *x,
                     const double *u, double dt)
{
    (void)t, (void)dt;
    mm_sys_t S;
    mm_cfg_t cf = cfg_of(em, ed);
    double nud[NV], f[2][2];
    sys_build(em, x, u, &S);
    sys_solve(em, &S, &cf, 0, nud, f, NULL);
    for (int k = 0; k < 2; k++) {
        double *s = ed->s + NS_ARM * k;
        int c = cf.c[k];
        s[S_EEX] = S.ee[k].p[0];
        s[S_EEY] = S.ee[k].p[1];
        s[S_FN] = c == C_FREE ? 0.0 : fmax(0.0, cf.n[k][0] * f[k][0] + cf.n[k][1] * f[k][1]);
        s[S_FT] = cf.t[k][0] * f[k][0] + cf.t[k][1] * f[k][1];
        s[S_CONTACT] = c;
        s[S_Q1] = S.q[k][0];
        s[S_Q2] = S.q[k][1];
        s[S_DIST] = S.dist[k];
    }
}

/* the parameters that choose (rs_robot_t.choices) */
static const char *const mm_choices[] = {"base_mode", NULL};

const rs_robot_t rs_robot_mobile_manipulator = {
    .kind = "mobile_manipulator",
    .doc = "differential-drive base (wheel-speed servos, or passive on rolling wheels) with two "
           "torque-controlled planar two-link arms and a table edge with unilateral contact and "
           "Coulomb friction (SI)",
    .nx = NX,
    .state = mm_state,
    .nu = NU,
    .actuators = mm_actuators,
    .ns = NS,
    .sensors = mm_sensors,
    .np = sizeof mm_params / sizeof mm_params[0],
    .params = mm_params,
    .nmodes = 9,
    .mode_names = mm_modes,
    .choices = mm_choices,
    .nevent_kinds = 6,
    .event_names = mm_events,
    .naux = NAUX,
    .aux_vars = mm_aux,
    .nguards = mm_nguards,
    .validate = mm_validate,
    .admissible = mm_admissible,
    .init = mm_init,
    .derivs = mm_derivs,
    .guards = mm_guards,
    .jump = mm_jump,
    .settle = mm_settle,
    .holds = mm_holds,
    .excursion = mm_excursion,
    .rejoin = mm_rejoin,
    .failure = mm_failure,
    .sense = mm_sense,
    .nframes = NFRAMES,
    .frame_names = mm_frames,
    .frame = mm_frame,
    .apply_wrench = mm_apply_wrench,
};
