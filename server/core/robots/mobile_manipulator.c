/* The mobile manipulator (issue 11, the planar form of seed 001's robot): a differential-drive
 * base (seed 002) carrying two planar serial two-link arms, torque controlled, in a horizontal
 * plane, and a table whose edge is the segment y = table_y, table_x0 <= x <= table_x1 (the
 * table lies at y > table_y). SI units throughout (metres, radians, seconds).
 *
 * Base: seed 002's boxed kinematics (ddkinematicsmodel) with phi1_dot, phi2_dot the right and
 * left wheel speeds, r the wheel radius, L half the axle:
 *     xdot = r/2 (phi1_dot + phi2_dot) cos(theta),  ydot = ... sin(theta),
 *     thetadot = r/(2L) (phi1_dot - phi2_dot).
 * The base is velocity controlled (the wheels' servos hold their speeds whatever the arms do).
 *
 * Arms: shoulders at (shoulder_x, +shoulder_y) (left) and (shoulder_x, -shoulder_y) (right) in
 * the base frame (x forward). Joint angles are measured in the base frame as serial_arm.c's
 * (theta1 from the base x axis, theta2 from link 1), forward kinematics and Jacobian are
 * arm_common.h's serial_fk / serial_jacobian (seed 002). Each arm's joint dynamics is the
 * serial arm's Lagrangian with gravity 0 (a horizontal plane), uniform rods:
 *     M(q) qdd + C(q, qd) qd = tau + J_w^T f
 * with f the table's force on the end effector (world frame) and J_w = R(theta) J the Jacobian
 * of the world end-effector position. Simplification, stated: the arms' equations are written
 * in the base frame and omit the fictitious forces of the base's motion (exact while the base is
 * at rest or translates at constant velocity; the kinematic contact constraint below does
 * include the base's motion exactly).
 *
 * Contact (seed 004's hybrid formulation, the finger's pattern of exact events): per arm a
 * mode free / slide / stick. World end-effector position p = b + R (s + fk(q)); velocity
 *     p_dot = v (cos th, sin th) + w R S (s + fk) + R J qd,      S = [[0, -1], [1, 0]],
 * and acceleration p_ddot = R J qdd + a0 with (qdd = 0 part, v and w constant between steps)
 *     a0 = v w (-sin th, cos th) - w^2 R (s + fk) + 2 w R S J qd + R (Jdot qd).
 *   - free: qdd = M^-1 (tau - C qd). Guard: the gap table_y - p_y (only while p_x lies on the
 *     segment). Touch: an inelastic impulse along the normal, qd += M^-1 J_w^T n P with P such
 *     that the normal velocity becomes 0 (event "touch"), then stick or slide as below.
 *   - slide: p_y'' = 0 with the force f = lambda (-mu dir, -1) (Coulomb: friction mu lambda
 *     against the slip direction dir = sgn(p_x')), lambda from the 1x1 constraint equation.
 *     Guards: lambda (release when it falls through 0), dir p_x' (the slip stops: stick).
 *   - stick: p'' = 0 (both components), qdd = -J_w^-1 a0, f = J_w^-T (M qdd - tau + C qd).
 *     Guards: lambda = -f_y, mu lambda - f_x, mu lambda + f_x (the cone's edges: slip).
 * Commands change the base velocity at control-step boundaries; settle() then re-resolves each
 * arm's contact (an impulse if the end effector now moves into the table, release if away).
 * Limitation: a0 takes the wheel speeds as constant; under a wheel-speed schedule (a ramp) the
 * contact constraint omits the base's acceleration dv/dt, dw/dt, so a stuck end effector drifts
 * by that much while a ramp runs. */
#include "arm_common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { BX, BY, BTH, Q0 }; /* then per arm k: q1, q2, qd1, qd2 at Q0 + 4 k */
#define NX (3 + 8)
enum { U_PHI1, U_PHI2, U_TAU }; /* then left tau1, tau2, right tau1, tau2 */
#define NU 6
enum { S_EEX, S_EEY, S_FN, S_FT, S_CONTACT, S_Q1, S_Q2, S_DIST, NS_ARM };
#define NS (2 * NS_ARM)
enum { C_FREE, C_SLIDE, C_STICK };
enum { EV_TOUCH, EV_RELEASE, EV_STICK, EV_SLIP };
enum { AUX_DIR_L, AUX_DIR_R, NAUX };
#define G_PER_ARM 5

enum {
    P_R, P_L, P_X0, P_Y0, P_TH0, P_SHOULDER, P_LINK = P_SHOULDER + 2, P_MASS = P_LINK + 2,
    P_TABLE = P_MASS + 2, P_MU = P_TABLE + 3, P_Q0 = P_MU + 1, P_ADM = P_Q0 + 4, P_END = P_ADM + 2
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
};

static const rs_var_desc_t mm_actuators[NU] = {
    {"phi1_dot", "rad/s", -100.0, 100.0, "right wheel speed"},
    {"phi2_dot", "rad/s", -100.0, 100.0, "left wheel speed"},
    {"left_tau1", "N*m", -1e3, 1e3, "left arm joint 1 torque"},
    {"left_tau2", "N*m", -1e3, 1e3, "left arm joint 2 torque"},
    {"right_tau1", "N*m", -1e3, 1e3, "right arm joint 1 torque"},
    {"right_tau2", "N*m", -1e3, 1e3, "right arm joint 2 torque"},
};

#define ARM_SENSORS(side)                                                                     \
    {side "_ee_x", "m", -INFINITY, INFINITY, side " end effector, world x"},                  \
        {side "_ee_y", "m", -INFINITY, INFINITY, side " end effector, world y"},              \
        {side "_force_normal", "N", 0.0, INFINITY,                                            \
         side " end effector: the table's normal force (pushing towards -y), 0 when free"},   \
        {side "_force_tangential", "N", -INFINITY, INFINITY,                                  \
         side " end effector: the table's friction force along +x"},                          \
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
    {"m1", "kg", 1e-6, 1e6, P_MASS, 1, 1, 2.0, "link 1 mass (uniform rod)"},
    {"m2", "kg", 1e-6, 1e6, P_MASS + 1, 1, 1, 1.5, "link 2 mass (uniform rod)"},
    {"table_y", "m", -1e6, 1e6, P_TABLE, 1, 1, 0.9, "the table edge's y (the table is at y > it)"},
    {"table_x_min", "m", -1e6, 1e6, P_TABLE + 1, 1, 1, -2.0, "the table edge's left end"},
    {"table_x_max", "m", -1e6, 1e6, P_TABLE + 2, 1, 1, 2.0, "the table edge's right end"},
    {"mu", "1", 0.0, 10.0, P_MU, 1, 1, 0.5, "Coulomb friction coefficient end effector/table"},
    {"base_admittance", "m/(N*s)", 0.0, 1e3, P_ADM, 1, 1, 0.01,
     "a wrench applied to the base frame (motion specifications) drives it at v = this * F "
     "forward (the base is velocity controlled)"},
    {"base_admittance_turn", "rad/(N*m*s)", 0.0, 1e3, P_ADM + 1, 1, 1, 0.05,
     "and turns it at w = this * torque"},
    {"left_theta1_0", "rad", -1e3, 1e3, P_Q0, 1, 1, 0.8, "initial left joint 1 angle"},
    {"left_theta2_0", "rad", -1e3, 1e3, P_Q0 + 1, 1, 1, -1.6, "initial left joint 2 angle"},
    {"right_theta1_0", "rad", -1e3, 1e3, P_Q0 + 2, 1, 1, -0.8, "initial right joint 1 angle"},
    {"right_theta2_0", "rad", -1e3, 1e3, P_Q0 + 3, 1, 1, 1.6, "initial right joint 2 angle"},
};

static const rs_aux_desc_t mm_aux[NAUX] = {
    {"left_dir", RS_AUX_INTEGER, -1.0, 1.0, 0, 0, 0, "left end effector slip direction"},
    {"right_dir", RS_AUX_INTEGER, -1.0, 1.0, 0, 0, 0, "right end effector slip direction"},
};

static const char *const mm_modes[9] = {"free,free",  "slide,free",  "stick,free",
                                        "free,slide", "slide,slide", "stick,slide",
                                        "free,stick", "slide,stick", "stick,stick"};
static const char *const mm_events[] = {"touch", "release", "stick", "slip"};

/* ---- kinematics and dynamics of one arm ---------------------------------------------------- */

/* Everything about arm k at state x that the flow, guards and jumps need. */
typedef struct arm_view {
    double q[2], qd[2], tau[2];
    double rb[2];      /* end effector in the base frame, from the base origin */
    double p[2], v[2]; /* world end-effector position and velocity */
    double Jw[2][2];   /* world Jacobian R J */
    double a0[2];      /* world end-effector acceleration at qdd = 0 */
    double M[2][2], b[2]; /* mass matrix, tau - C qd */
} arm_view_t;

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

static void base_rates(const rs_entity_model_t *em, const double *u, double *v, double *w)
{
    double r = em->p[P_R];
    *v = 0.5 * r * (u[U_PHI1] + u[U_PHI2]);
    *w = r / (2.0 * em->p[P_L]) * (u[U_PHI1] - u[U_PHI2]);
}

/* M(q) and C qd of a horizontal two-link arm of uniform rods (serial_arm.c's with g = 0). */
static void arm_mass(const rs_entity_model_t *em, const double q[2], const double qd[2],
                     double M[2][2], double cqd[2])
{
    double a1 = em->p[P_LINK], a2 = em->p[P_LINK + 1], m1 = em->p[P_MASS], m2 = em->p[P_MASS + 1];
    double lc1 = 0.5 * a1, lc2 = 0.5 * a2, I1 = m1 * a1 * a1 / 12.0, I2 = m2 * a2 * a2 / 12.0;
    double c2 = cos(q[1]), h = m2 * a1 * lc2 * sin(q[1]);
    M[0][0] = I1 + I2 + m1 * lc1 * lc1 + m2 * (a1 * a1 + lc2 * lc2 + 2.0 * a1 * lc2 * c2);
    M[0][1] = M[1][0] = I2 + m2 * (lc2 * lc2 + a1 * lc2 * c2);
    M[1][1] = I2 + m2 * lc2 * lc2;
    cqd[0] = -h * qd[1] * (2.0 * qd[0] + qd[1]);
    cqd[1] = h * qd[0] * qd[0];
}

static void arm_view(const rs_entity_model_t *em, const double *x, const double *u, int k,
                     arm_view_t *a)
{
    double a1 = em->p[P_LINK], a2 = em->p[P_LINK + 1];
    const double *xa = x + Q0 + 4 * k;
    a->q[0] = xa[0], a->q[1] = xa[1], a->qd[0] = xa[2], a->qd[1] = xa[3];
    a->tau[0] = u[U_TAU + 2 * k], a->tau[1] = u[U_TAU + 2 * k + 1];
    double f[2], J[2][2];
    serial_fk(a1, a2, a->q, f);
    serial_jacobian(a1, a2, a->q, J);
    double side = k == 0 ? 1.0 : -1.0;
    a->rb[0] = em->p[P_SHOULDER] + f[0];
    a->rb[1] = side * em->p[P_SHOULDER + 1] + f[1];
    double th = x[BTH], c = cos(th), s = sin(th), v, w;
    base_rates(em, u, &v, &w);
    a->p[0] = x[BX] + c * a->rb[0] - s * a->rb[1];
    a->p[1] = x[BY] + s * a->rb[0] + c * a->rb[1];
    for (int i = 0; i < 2; i++) {
        a->Jw[0][i] = c * J[0][i] - s * J[1][i];
        a->Jw[1][i] = s * J[0][i] + c * J[1][i];
    }
    double Jqd[2] = {J[0][0] * a->qd[0] + J[0][1] * a->qd[1], J[1][0] * a->qd[0] + J[1][1] * a->qd[1]};
    /* Jdot qd of serial_fk: -a1 qd1^2 (c1, s1) - a2 (qd1 + qd2)^2 (c12, s12) */
    double w1 = a->qd[0], w12 = a->qd[0] + a->qd[1];
    double jd[2] = {-a1 * w1 * w1 * cos(a->q[0]) - a2 * w12 * w12 * cos(a->q[0] + a->q[1]),
                    -a1 * w1 * w1 * sin(a->q[0]) - a2 * w12 * w12 * sin(a->q[0] + a->q[1])};
    /* base frame: w S rb + J qd (velocity), -w^2 rb + 2 w S J qd + Jdot qd (acceleration) */
    double vb[2] = {-w * a->rb[1] + Jqd[0], w * a->rb[0] + Jqd[1]};
    double ab[2] = {-w * w * a->rb[0] - 2.0 * w * Jqd[1] + jd[0],
                    -w * w * a->rb[1] + 2.0 * w * Jqd[0] + jd[1]};
    a->v[0] = v * c + c * vb[0] - s * vb[1];
    a->v[1] = v * s + s * vb[0] + c * vb[1];
    a->a0[0] = -v * w * s + c * ab[0] - s * ab[1];
    a->a0[1] = v * w * c + s * ab[0] + c * ab[1];
    double cqd[2];
    arm_mass(em, a->q, a->qd, a->M, cqd);
    a->b[0] = a->tau[0] - cqd[0];
    a->b[1] = a->tau[1] - cqd[1];
}

static void solve2(const double A[2][2], const double r[2], double x[2])
{
    double det = A[0][0] * A[1][1] - A[0][1] * A[1][0];
    x[0] = (A[1][1] * r[0] - A[0][1] * r[1]) / det;
    x[1] = (A[0][0] * r[1] - A[1][0] * r[0]) / det;
}

/* An impulse at the end effector, qd += M^-1 J_w^T P, that brings its world velocity to zero
 * (both components: a stuck contact; P = -(J_w M^-1 J_w^T)^-1 v). */
static void stop_end_effector(const arm_view_t *a, double *qd)
{
    double MiJt[2][2], c0[2], c1[2]; /* columns of M^-1 J_w^T */
    double r0[2] = {a->Jw[0][0], a->Jw[0][1]}, r1[2] = {a->Jw[1][0], a->Jw[1][1]};
    solve2(a->M, r0, c0);
    solve2(a->M, r1, c1);
    MiJt[0][0] = c0[0], MiJt[1][0] = c0[1], MiJt[0][1] = c1[0], MiJt[1][1] = c1[1];
    double K[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            K[i][j] = a->Jw[i][0] * MiJt[0][j] + a->Jw[i][1] * MiJt[1][j];
    double mv[2] = {-a->v[0], -a->v[1]}, P[2];
    solve2(K, mv, P);
    qd[0] += MiJt[0][0] * P[0] + MiJt[0][1] * P[1];
    qd[1] += MiJt[1][0] * P[0] + MiJt[1][1] * P[1];
}

/* Joint accelerations and the table's force f (world) on arm a in contact state c; dir is the
 * slip direction when sliding. */
static void arm_solve(const rs_entity_model_t *em, const arm_view_t *a, int c, double dir,
                      double qdd[2], double f[2])
{
    f[0] = f[1] = 0.0;
    if (c == C_FREE) {
        solve2(a->M, a->b, qdd);
        return;
    }
    if (c == C_SLIDE) {
        double d[2] = {-em->p[P_MU] * dir, -1.0};
        double g[2] = {a->Jw[0][0] * d[0] + a->Jw[1][0] * d[1], a->Jw[0][1] * d[0] + a->Jw[1][1] * d[1]};
        double q0[2], qg[2];
        solve2(a->M, a->b, q0);
        solve2(a->M, g, qg);
        double A0 = a->Jw[1][0] * q0[0] + a->Jw[1][1] * q0[1];
        double Ag = a->Jw[1][0] * qg[0] + a->Jw[1][1] * qg[1];
        double lam = -(a->a0[1] + A0) / Ag;
        qdd[0] = q0[0] + lam * qg[0];
        qdd[1] = q0[1] + lam * qg[1];
        f[0] = lam * d[0];
        f[1] = lam * d[1];
        return;
    }
    double r[2] = {-a->a0[0], -a->a0[1]};
    solve2(a->Jw, r, qdd);
    double gen[2] = {a->M[0][0] * qdd[0] + a->M[0][1] * qdd[1] - a->b[0],
                     a->M[1][0] * qdd[0] + a->M[1][1] * qdd[1] - a->b[1]};
    double JT[2][2] = {{a->Jw[0][0], a->Jw[1][0]}, {a->Jw[0][1], a->Jw[1][1]}};
    solve2(JT, gen, f);
}

static int on_segment(const rs_entity_model_t *em, const double p[2])
{
    return p[0] >= em->p[P_TABLE + 1] && p[0] <= em->p[P_TABLE + 2];
}


/* ---- frames for motion specifications ------------------------------------------------------ */

enum { F_BASE, F_LSHOULDER, F_LELBOW, F_LEE, F_RSHOULDER, F_RELBOW, F_REE, F_TABLE, NFRAMES };
static const char *const mm_frames[NFRAMES] = {"base",           "left_shoulder", "left_elbow",
                                               "left_ee",        "right_shoulder", "right_elbow",
                                               "right_ee",       "table_edge"};

/* A point r (base frame) of arm k's chain: shoulder (n = 0), elbow (1), end effector (2), its
 * base-frame Jacobian d r / d q and link angle. */
static void chain_point(const rs_entity_model_t *em, const double *q, int k, int n, double r[2],
                        double J[2][2], double *angle)
{
    double a1 = em->p[P_LINK], a2 = n == 2 ? em->p[P_LINK + 1] : 0.0;
    double l1 = n >= 1 ? a1 : 0.0, side = k == 0 ? 1.0 : -1.0;
    double s1 = sin(q[0]), c1 = cos(q[0]), s12 = sin(q[0] + q[1]), c12 = cos(q[0] + q[1]);
    r[0] = em->p[P_SHOULDER] + l1 * c1 + a2 * c12;
    r[1] = side * em->p[P_SHOULDER + 1] + l1 * s1 + a2 * s12;
    J[0][0] = -l1 * s1 - a2 * s12, J[0][1] = -a2 * s12;
    J[1][0] = l1 * c1 + a2 * c12, J[1][1] = a2 * c12;
    *angle = n == 0 ? 0.0 : n == 1 ? q[0] : q[0] + q[1];
}

static void mm_frame(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                     const double *u, int i, double pose[3], double twist[3], double force[2])
{
    double v, w, th = x[BTH], c = cos(th), s = sin(th);
    base_rates(em, u, &v, &w);
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
            arm_view_t a;
            double qdd[2];
            arm_view(em, x, u, k, &a);
            arm_solve(em, &a, contact_of(ed->mode, k), ed->aux[AUX_DIR_L + k], qdd, force);
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
 * v = k F . heading, w = k_turn torque (wheel speeds from seed 002's equations inverted) for the
 * base. The table cannot take a wrench. */
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
    return 2 * G_PER_ARM;
}

static int mm_validate(const rs_entity_model_t *em, rs_status_t *st)
{
    if (!(em->p[P_TABLE + 1] < em->p[P_TABLE + 2]))
        return rs_fail(st, RS_EINVAL, "'%s.table_x_min' = %g must be below table_x_max = %g", em->name,
                       em->p[P_TABLE + 1], em->p[P_TABLE + 2]);
    double x[NX] = {em->p[P_X0], em->p[P_Y0], em->p[P_TH0]}, u[NU] = {0};
    for (int k = 0; k < 2; k++) {
        x[Q0 + 4 * k] = em->p[P_Q0 + 2 * k];
        x[Q0 + 4 * k + 1] = em->p[P_Q0 + 2 * k + 1];
    }
    for (int k = 0; k < 2; k++) {
        arm_view_t a;
        arm_view(em, x, u, k, &a);
        if (on_segment(em, a.p) && a.p[1] > em->p[P_TABLE])
            return rs_fail(st, RS_EINVAL,
                           "the %s end effector of '%s' starts %g m inside the table (y = %g > "
                           "table y %g); move the base or change theta0_arms",
                           k == 0 ? "left" : "right", em->name, a.p[1] - em->p[P_TABLE], a.p[1],
                           em->p[P_TABLE]);
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
    ed->mode = 0;
    ed->aux[AUX_DIR_L] = ed->aux[AUX_DIR_R] = 0.0;
}

static void mm_derivs(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                      const double *x, const double *u, double *xdot)
{
    (void)t;
    double v, w;
    base_rates(em, u, &v, &w);
    xdot[BX] = v * cos(x[BTH]);
    xdot[BY] = v * sin(x[BTH]);
    xdot[BTH] = w;
    for (int k = 0; k < 2; k++) {
        arm_view_t a;
        double qdd[2], f[2];
        arm_view(em, x, u, k, &a);
        arm_solve(em, &a, contact_of(ed->mode, k), ed->aux[AUX_DIR_L + k], qdd, f);
        xdot[Q0 + 4 * k] = a.qd[0];
        xdot[Q0 + 4 * k + 1] = a.qd[1];
        xdot[Q0 + 4 * k + 2] = qdd[0];
        xdot[Q0 + 4 * k + 3] = qdd[1];
    }
}

static void mm_guards(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                      const double *x, const double *u, double *g)
{
    (void)t;
    for (int k = 0; k < 2; k++) {
        double *gk = g + G_PER_ARM * k;
        int c = contact_of(ed->mode, k);
        double dir = ed->aux[AUX_DIR_L + k], mu = em->p[P_MU];
        arm_view_t a;
        double qdd[2], f[2];
        arm_view(em, x, u, k, &a);
        arm_solve(em, &a, c, dir, qdd, f);
        for (int i = 0; i < G_PER_ARM; i++)
            gk[i] = 1.0;
        if (c == C_FREE && on_segment(em, a.p))
            gk[0] = em->p[P_TABLE] - a.p[1];
        if (c != C_FREE)
            gk[1] = -f[1];
        if (c == C_SLIDE)
            gk[2] = dir * a.v[0];
        if (c == C_STICK) {
            gk[3] = mu * -f[1] - f[0];
            gk[4] = mu * -f[1] + f[0];
        }
    }
}

/* Put arm k's end effector back on the edge (y = table_y) by the least joint motion
 * dq = n J_w^T dy / |n J_w|^2: the contact is kept at the acceleration level, so the position
 * drifts by the integrator's error; settle() removes that drift at each control step. */
static void onto_edge(const rs_entity_model_t *em, double *x, const double *u, int k)
{
    for (int it = 0; it < 3; it++) {
        arm_view_t a;
        arm_view(em, x, u, k, &a);
        double dy = em->p[P_TABLE] - a.p[1], g0 = a.Jw[1][0], g1 = a.Jw[1][1];
        double nn = g0 * g0 + g1 * g1;
        if (dy == 0 || !(nn > 0))
            return;
        x[Q0 + 4 * k] += g0 * dy / nn;
        x[Q0 + 4 * k + 1] += g1 * dy / nn;
    }
}

/* Pick arm k's contact state at a touch or after a discontinuity: an inelastic normal impulse if
 * it moves into the table, then stick if the cone holds it at rest, else slide, else free. */
static void resolve_arm(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                        const double *u, int k)
{
    int old = contact_of(ed->mode, k);
    double before[NX];
    memcpy(before, x, sizeof before);
    arm_view_t a;
    arm_view(em, x, u, k, &a);
    double *qd = x + Q0 + 4 * k + 2;
    double vscale = 1e-9 * (1.0 + fabs(a.qd[0]) + fabs(a.qd[1]));
    if (old != C_FREE && fabs(a.v[1]) <= vscale) {
        /* a state already consistent with its contact (a restore, unchanged commands): kept as
         * it is, so that settling twice changes nothing */
        double qdd[2], f[2], dir = ed->aux[AUX_DIR_L + k];
        arm_solve(em, &a, old, dir, qdd, f);
        int ok = -f[1] > 0;
        if (old == C_STICK)
            ok = ok && fabs(a.v[0]) <= vscale && fabs(f[0]) <= em->p[P_MU] * -f[1];
        else
            ok = ok && dir * a.v[0] > 0;
        if (ok) {
            onto_edge(em, x, u, k);
            if (old == C_STICK) {
                arm_view(em, x, u, k, &a);
                stop_end_effector(&a, qd);
            }
            return;
        }
    }
    if (old != C_FREE && a.v[1] < -vscale) {
        /* moving away from the table (the base backs off): it lets go */
        ed->mode = mode_with(ed->mode, k, C_FREE);
        rs_emit_event(ed, EV_RELEASE, t, k, before, x, NX);
        return;
    }
    if (a.v[1] > vscale) {
        /* impulse P along n = +y: qd += M^-1 Jw^T n P with the normal velocity brought to 0 */
        double An[2] = {a.Jw[1][0], a.Jw[1][1]}, y[2];
        solve2(a.M, An, y);
        double P = -a.v[1] / (An[0] * y[0] + An[1] * y[1]);
        qd[0] += P * y[0];
        qd[1] += P * y[1];
        arm_view(em, x, u, k, &a);
    }
    double qdd[2], f[2], mu = em->p[P_MU];
    int c = C_FREE;
    double dir = 0.0;
    if (fabs(a.v[0]) <= vscale) {
        arm_solve(em, &a, C_STICK, 0.0, qdd, f);
        if (-f[1] > 0 && fabs(f[0]) <= mu * -f[1]) {
            c = C_STICK;
            stop_end_effector(&a, qd); /* at rest on the table, both components exactly 0 */
        } else {
            dir = f[0] > 0 ? -1.0 : 1.0; /* the friction needed was missing: slips against it */
        }
    } else {
        dir = a.v[0] > 0 ? 1.0 : -1.0;
    }
    if (c != C_STICK) {
        arm_solve(em, &a, C_SLIDE, dir, qdd, f);
        c = -f[1] > 0 ? C_SLIDE : C_FREE;
    }
    if (c != C_FREE)
        onto_edge(em, x, u, k);
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
}

static void mm_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                    const double *u, const int *fired)
{
    for (int k = 0; k < 2; k++) {
        const int *fk = fired + G_PER_ARM * k;
        int c = contact_of(ed->mode, k);
        if (c == C_FREE && fk[0]) {
            resolve_arm(em, ed, t, x, u, k);
        } else if (c != C_FREE && fk[1]) {
            ed->mode = mode_with(ed->mode, k, C_FREE);
            ed->aux[AUX_DIR_L + k] = 0.0;
            rs_emit_event(ed, EV_RELEASE, t, k, x, x, NX);
        } else if (c == C_SLIDE && fk[2]) {
            /* the slip stopped: stick if the cone holds, else slide the other way */
            arm_view_t a;
            double qdd[2], f[2];
            arm_view(em, x, u, k, &a);
            arm_solve(em, &a, C_STICK, 0.0, qdd, f);
            double before[NX];
            memcpy(before, x, sizeof before);
            if (fabs(f[0]) <= em->p[P_MU] * -f[1]) {
                stop_end_effector(&a, x + Q0 + 4 * k + 2);
                ed->mode = mode_with(ed->mode, k, C_STICK);
                ed->aux[AUX_DIR_L + k] = 0.0;
                rs_emit_event(ed, EV_STICK, t, k, before, x, NX);
            } else {
                ed->aux[AUX_DIR_L + k] = -ed->aux[AUX_DIR_L + k];
            }
        } else if (c == C_STICK && (fk[3] || fk[4])) {
            ed->mode = mode_with(ed->mode, k, C_SLIDE);
            ed->aux[AUX_DIR_L + k] = fk[3] ? -1.0 : 1.0; /* f_x reached +mu lambda: slips to -x */
            rs_emit_event(ed, EV_SLIP, t, k, x, x, NX);
        }
    }
}

static void mm_settle(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                      const double *u)
{
    for (int k = 0; k < 2; k++) {
        int c = contact_of(ed->mode, k);
        arm_view_t a;
        arm_view(em, x, u, k, &a);
        double gap = em->p[P_TABLE] - a.p[1];
        /* free: at or (by the integrator's tolerance) past the edge, and not leaving it */
        if (c != C_FREE || (on_segment(em, a.p) && gap <= 1e-12 * (1.0 + fabs(em->p[P_TABLE])) &&
                            a.v[1] >= 0))
            resolve_arm(em, ed, t, x, u, k);
    }
}

static void mm_sense(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, const double *x,
                     const double *u, double dt)
{
    (void)t, (void)dt;
    for (int k = 0; k < 2; k++) {
        double *s = ed->s + NS_ARM * k;
        int c = contact_of(ed->mode, k);
        arm_view_t a;
        double qdd[2], f[2];
        arm_view(em, x, u, k, &a);
        arm_solve(em, &a, c, ed->aux[AUX_DIR_L + k], qdd, f);
        double fk[2];
        serial_fk(em->p[P_LINK], em->p[P_LINK + 1], a.q, fk);
        s[S_EEX] = a.p[0];
        s[S_EEY] = a.p[1];
        s[S_FN] = c == C_FREE ? 0.0 : fmax(0.0, -f[1]);
        s[S_FT] = f[0];
        s[S_CONTACT] = c;
        s[S_Q1] = a.q[0];
        s[S_Q2] = a.q[1];
        s[S_DIST] = hypot(fk[0], fk[1]);
    }
}

const rs_robot_t rs_robot_mobile_manipulator = {
    .kind = "mobile_manipulator",
    .doc = "differential-drive base with two torque-controlled planar two-link arms and a table "
           "edge with unilateral contact and Coulomb friction (issue 11, seeds 001/002; SI)",
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
    .nevent_kinds = 4,
    .event_names = mm_events,
    .naux = NAUX,
    .aux_vars = mm_aux,
    .nguards = mm_nguards,
    .validate = mm_validate,
    .init = mm_init,
    .derivs = mm_derivs,
    .guards = mm_guards,
    .jump = mm_jump,
    .settle = mm_settle,
    .sense = mm_sense,
    .nframes = NFRAMES,
    .frame_names = mm_frames,
    .frame = mm_frame,
    .apply_wrench = mm_apply_wrench,
};
