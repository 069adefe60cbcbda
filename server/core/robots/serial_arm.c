/* The serial two-link arm (the "Example Robotic Systems" chapter, "Serial Two Link
 * Manipulator"), driven by Klamp't's actuators with joint friction. SI units.
 *
 * Dynamics, Lagrange's equations for two links of lengths a1, a2, masses m1, m2, centres of mass
 * lc1, lc2 from their joints and inertias I1, I2 about them (uniform rods by default), gravity g
 * along -y, angles t1 from the x axis and t2 from link 1, counter-clockwise:
 *
 *     M(q) qdd + C(q, qd) qd + G(q) = tau + tau_friction
 *     M11 = I1 + I2 + m1 lc1^2 + m2 (a1^2 + lc2^2 + 2 a1 lc2 cos t2)
 *     M12 = M21 = I2 + m2 (lc2^2 + a1 lc2 cos t2),   M22 = I2 + m2 lc2^2
 *     C qd = (-h t2d (2 t1d + t2d), h t1d^2),        h = m2 a1 lc2 sin t2
 *     G = ((m1 lc1 + m2 a1) g cos t1 + m2 lc2 g cos(t1 + t2), m2 lc2 g cos(t1 + t2))
 *
 * The energy T + V = 1/2 qd^T M qd + g (m1 lc1 sin t1 + m2 (a1 sin t1 + lc2 sin(t1 + t2))) is
 * conserved without actuation and friction. Actuators, stick-slip friction and the optional
 * joint stops are arm_common.h's. Joints turn fully unless theta_min/theta_max are given. */
#include "arm_common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { S_X, S_Y, S_VX, S_VY, S_TAU1, S_TAU2, S_STICK1, S_STICK2, S_LIMIT1, S_LIMIT2, NS };

/* parameter slots after the common ones, and their table rows */
enum {
    P_A1 = ARM_P_END, P_A2, P_M1, P_M2, P_LC1, P_LC2, P_I1, P_I2, P_GRAVITY, P_END
};
enum { PI_A1 = ARM_PI_END, PI_A2, PI_M1, PI_M2, PI_LC1, PI_LC2, PI_I1, PI_I2, PI_GRAVITY };

static const rs_var_desc_t sa_state[ARM_NX] = {
    {"theta1", "rad", -INFINITY, INFINITY, "joint 1: link 1 from the x axis, counter-clockwise "
                                           "(not wrapped)"},
    {"theta2", "rad", -INFINITY, INFINITY, "joint 2: link 2 from link 1 (not wrapped)"},
    {"theta1_dot", "rad/s", -INFINITY, INFINITY, "joint 1 rate"},
    {"theta2_dot", "rad/s", -INFINITY, INFINITY, "joint 2 rate"},
    {"integral1", "rad*s", -INFINITY, INFINITY,
     "joint 1 PID integral of the error qD - theta1 (0 and frozen in torque mode)"},
    {"integral2", "rad*s", -INFINITY, INFINITY, "joint 2 PID integral of the error"},
};

static const rs_var_desc_t sa_actuators[2] = {
    {"joint1", "N*m | rad", -1e6, 1e6,
     "joint 1: the torque (actuator_mode 0) or the PID setpoint angle qD (actuator_mode 1, "
     "qD_dot = 0); torques beyond tau_max are capped, not refused"},
    {"joint2", "N*m | rad", -1e6, 1e6, "joint 2: torque or PID setpoint, as joint1"},
};

static const rs_var_desc_t sa_sensors[NS] = {
    {"x", "m", -INFINITY, INFINITY, "end effector x (forward kinematics)"},
    {"y", "m", -INFINITY, INFINITY, "end effector y (up; gravity acts along -y)"},
    {"vx", "m/s", -INFINITY, INFINITY, "end effector velocity x (Jacobian times joint rates)"},
    {"vy", "m/s", -INFINITY, INFINITY, "end effector velocity y"},
    {"tau1", "N*m", -INFINITY, INFINITY,
     "torque applied by actuator 1 at the end of the step, after the cap (|tau1| <= tau_max)"},
    {"tau2", "N*m", -INFINITY, INFINITY, "torque applied by actuator 2, after the cap"},
    {"stick1", "1", 0.0, 1.0, "1 while joint 1 is stuck by friction, else 0"},
    {"stick2", "1", 0.0, 1.0, "1 while joint 2 is stuck by friction, else 0"},
    {"limit1", "1", -1.0, 1.0, "joint 1 held at its lower (-1) or upper (+1) stop, else 0"},
    {"limit2", "1", -1.0, 1.0, "joint 2 held at its lower (-1) or upper (+1) stop, else 0"},
};

static const rs_param_desc_t sa_params[] = {
    {"actuator_mode", "1", 0.0, 1.0, ARM_P_MODE, 2, 2, ARM_PID,
     "per joint: 0 = torque mode (SetForce values are torques), 1 = PID mode (SetForce values "
     "are setpoints qD; SetTarget needs it); changing it zeroes that joint's PID integral"},
    {"kP", "N*m/rad", 0.0, 1e9, ARM_P_KP, 2, 2, 1.0, "per joint: PID proportional gain"},
    {"kI", "N*m/(rad*s)", 0.0, 1e9, ARM_P_KI, 2, 2, 0.5, "per joint: PID integral gain"},
    {"kD", "N*m*s/rad", 0.0, 1e9, ARM_P_KD, 2, 2, 0.05, "per joint: PID derivative gain"},
    {"tau_max", "N*m", 0.0, 1e9, ARM_P_TAU_MAX, 2, 2, 1.0,
     "per joint: torque limit; the applied torque is capped to [-tau_max, tau_max] in both modes"},
    {"mu_D", "N*m", 0.0, 1e9, ARM_P_MU_D, 2, 2, 0.0,
     "per joint: dry friction: stuck while the torque needed to hold the joint is "
     "within mu_D, sliding friction -sgn(qd) (mu_D + mu_V |qd|)"},
    {"mu_V", "N*m*s/rad", 0.0, 1e9, ARM_P_MU_V, 2, 2, 0.0,
     "per joint: viscous friction"},
    {"theta_min", "rad", -1e3, 1e3, ARM_P_THETA_MIN, 0, 2, -M_PI,
     "per joint: lower hard stop (inelastic); none given = joints turn fully (with theta_max)"},
    {"theta_max", "rad", -1e3, 1e3, ARM_P_THETA_MAX, 0, 2, M_PI,
     "per joint: upper hard stop; give theta_min and theta_max together, theta_min < theta_max"},
    {"theta0", "rad", -1e3, 1e3, ARM_P_THETA0, 2, 2, 0.0, "per joint: initial angle"},
    {"theta_dot0", "rad/s", -1e6, 1e6, ARM_P_THETA_DOT0, 2, 2, 0.0, "per joint: initial rate"},
    {"a1", "m", 1e-6, 1e6, P_A1, 1, 1, 0.15, "length of link 1 (15 cm)"},
    {"a2", "m", 1e-6, 1e6, P_A2, 1, 1, 0.10, "length of link 2"},
    {"m1", "kg", 1e-9, 1e9, P_M1, 1, 1, 0.2, "mass of link 1"},
    {"m2", "kg", 1e-9, 1e9, P_M2, 1, 1, 0.1, "mass of link 2"},
    {"lc1", "m", 0.0, 1e6, P_LC1, 0, 1, 0.0,
     "joint 1 to the centre of mass of link 1 (unset: a1/2, a uniform rod)"},
    {"lc2", "m", 0.0, 1e6, P_LC2, 0, 1, 0.0, "joint 2 to the centre of mass of link 2 (unset: a2/2)"},
    {"I1", "kg*m^2", 0.0, 1e9, P_I1, 0, 1, 0.0,
     "inertia of link 1 about its centre of mass (unset: m1 a1^2 / 12, a uniform rod)"},
    {"I2", "kg*m^2", 0.0, 1e9, P_I2, 0, 1, 0.0, "inertia of link 2 about its centre of mass"},
    {"gravity", "m/s^2", -1e3, 1e3, P_GRAVITY, 1, 1, 9.81,
     "gravity along -y (a vertical arm); 0 for a table-top arm in a horizontal plane"},
};

static const char *const sa_modes[ARM_JOINT_MODES] = {ARM_MODE_NAMES("slip")};
static const char *const sa_events[] = {"stick", "slip", "stop", "release"};

/* link data with the uniform-rod defaults applied */
typedef struct links {
    double a1, a2, m1, m2, lc1, lc2, I1, I2, g;
} links_t;

static void links_of(const rs_entity_model_t *em, links_t *L)
{
    const double *p = em->p;
    L->a1 = p[P_A1];
    L->a2 = p[P_A2];
    L->m1 = p[P_M1];
    L->m2 = p[P_M2];
    L->lc1 = em->plen[PI_LC1] ? p[P_LC1] : 0.5 * L->a1;
    L->lc2 = em->plen[PI_LC2] ? p[P_LC2] : 0.5 * L->a2;
    L->I1 = em->plen[PI_I1] ? p[P_I1] : L->m1 * L->a1 * L->a1 / 12.0;
    L->I2 = em->plen[PI_I2] ? p[P_I2] : L->m2 * L->a2 * L->a2 / 12.0;
    L->g = p[P_GRAVITY];
}

/* The constants of M(q), C and G (em->c, sa_compile): with K_H = m2 a1 lc2,
 * M11 = K_M11 + 2 K_H cos t2, M12 = K_M22 + K_H cos t2, M22 = K_M22 = I2 + m2 lc2^2,
 * h = K_H sin t2, G2 = K_G2 cos(t1 + t2), G1 = K_G1 cos t1 + G2; a, l, m, I, g as at the top
 * of the file. */
enum { K_M11, K_M22, K_H, K_G1, K_G2, K_N };
_Static_assert(K_N <= RS_MAX_DERIVED, "the serial arm's constants fit rs_entity_model_t.c");

static void sa_compile(rs_entity_model_t *em)
{
    links_t L;
    links_of(em, &L);
    double *k = em->c;
    k[K_M11] = L.I1 + L.I2 + L.m1 * L.lc1 * L.lc1 + L.m2 * (L.a1 * L.a1 + L.lc2 * L.lc2);
    k[K_M22] = L.I2 + L.m2 * L.lc2 * L.lc2;
    k[K_H] = L.m2 * L.a1 * L.lc2;
    k[K_G1] = (L.m1 * L.lc1 + L.m2 * L.a1) * L.g;
    k[K_G2] = L.m2 * L.lc2 * L.g;
}

/* M(q) and b = tau - C qd - G (see the top of the file), from the constants compiled once per
 * model (sa_compile), since this runs at every right-hand-side evaluation. */
static void sa_dynamics(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                        const double *x, const double *u, double M[2][2], double b[2])
{
    /* the sines and cosines first, so that nothing is live across the calls into libm.
     * cos(t1 + t2) is libm's, not c1 c2 - s1 s2: a user's gravity compensation computed with
     * cos(t1 + t2) must cancel G exactly (test_serial_arm's gravity_compensation), since an
     * upright pose is unstable and a last-bit difference grows (docs/rationale.md) */
    double c2 = cos(x[ARM_Q2]), s2 = sin(x[ARM_Q2]);
    double c12 = cos(x[ARM_Q1] + x[ARM_Q2]), c1 = cos(x[ARM_Q1]);
    const double *k = em->c;
    double t1d = x[ARM_QD1], t2d = x[ARM_QD2];
    M[0][0] = k[K_M11] + 2.0 * k[K_H] * c2;
    M[0][1] = M[1][0] = k[K_M22] + k[K_H] * c2;
    M[1][1] = k[K_M22];
    double h = k[K_H] * s2;
    double g12 = k[K_G2] * c12;
    double G1 = k[K_G1] * c1 + g12;
    b[0] = arm_actuator_torque(em, ed, 0, u[0], x) + h * t2d * (2.0 * t1d + t2d) - G1;
    b[1] = arm_actuator_torque(em, ed, 1, u[1], x) - h * t1d * t1d - g12;
    /* external wrench of this control step (ApplyWrench): the generalized forces J^T f of a
     * force (fx, fy) at the end effector, tau_z on link 2 (Q = (tau, tau): link 2's angle is
     * t1 + t2), a couple tau on link 1 (Q = (tau, 0)) */
    const double *w = ed->wrench;
    if (w[0] == 0.0 && w[1] == 0.0 && w[2] == 0.0 && w[3] == 0.0 && w[4] == 0.0)
        return; /* the common case: no sin, cos */
    double s1 = sin(x[ARM_Q1]);
    double s12 = sin(x[ARM_Q1] + x[ARM_Q2]);
    double a1 = em->p[P_A1], a2 = em->p[P_A2];
    double q2 = -a2 * s12 * w[0] + a2 * c12 * w[1] + w[2] + w[4];
    b[0] += q2 - a1 * s1 * w[0] + a1 * c1 * w[1] + w[3];
    b[1] += q2;
}

/* bodies an external wrench can act on (ApplyWrench), their values in this order in wrench[] */
static const rs_wrench_desc_t sa_wrench[] = {
    {"end_effector", 3, "fx fy tau_z: N N N*m, force at the tip and a couple on link 2"},
    {"link1", 1, "tau_z: N*m, a couple on link 1"},
    {"link2", 1, "tau_z: N*m, a couple on link 2"},
};

/* All fourteen guards with friction or stops; the four of the torque cap alone without them
 * (arm_joint_events): no guard is watched that cannot fire */
static int sa_nguards(const rs_entity_model_t *em)
{
    return arm_joint_events(em) ? ARM_NGUARDS : ARM_NSAT_GUARDS;
}

static int sa_validate(const rs_entity_model_t *em, rs_status_t *st)
{
    int rc = arm_validate_joints(em, st);
    if (rc < 0)
        return rc;
    /* M is positive definite for every t2 iff M22 > 0 and I1 + m1 lc1^2 > 0 or I2 > 0 */
    links_t L;
    links_of(em, &L);
    double m22 = L.I2 + L.m2 * L.lc2 * L.lc2, own1 = L.I1 + L.m1 * L.lc1 * L.lc1;
    if (!(m22 > 0) || !(own1 > 0 || L.I2 > 0))
        return rs_fail(st, RS_EINVAL,
                       "the mass matrix of '%s' is singular (link 2 needs I2 + m2 lc2^2 > 0 and "
                       "link 1 I1 + m1 lc1^2 > 0); give the links inertia",
                       em->name);
    return 0;
}

static void sa_init(const rs_entity_model_t *em, rs_entity_data_t *ed, double *x)
{
    arm_init(em, ed, x);
}

static void sa_derivs(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                      const double *x, const double *u, double *xdot)
{
    (void)t;
    if (ed->mode != ARM_SLIP + 4 * ARM_SLIP) { /* a joint held: the hybrid solver */
        arm_derivs(em, ed, x, u, sa_dynamics, xdot);
        return;
    }
    double M[2][2], b[2];
    sa_dynamics(em, ed, x, u, M, b);
    arm_slide_derivs(em, ed, M, b, x, u, xdot);
}

static void sa_guards(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                      const double *x, const double *u, double *g)
{
    (void)t;
    if (em->ng == ARM_NSAT_GUARDS)
        arm_saturation_guards(em, ed, x, u, g);
    else
        arm_guard_values(em, ed, x, u, sa_dynamics, g);
}

static void sa_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                    const double *u, const int *fired)
{
    if (em->ng == ARM_NSAT_GUARDS)
        arm_saturation_jump(ed, fired);
    else
        arm_jump(em, ed, t, x, u, sa_dynamics, fired);
}

static void sa_settle(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                      const double *u)
{
    arm_settle(em, ed, t, x, u, sa_dynamics);
}

/* rs_robot_t.excursion: arm_excursion with this arm's dynamics */
static int sa_excursion(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                        const double *u, int i, int sign, double *col)
{
    return arm_excursion(em, ed, x, u, sa_dynamics, i, sign, col);
}

static void sa_sense(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                     const double *x, const double *u, double dt)
{
    (void)t, (void)dt;
    double a1 = em->p[P_A1], a2 = em->p[P_A2], Jm[2][2];
    const double *q = x + ARM_Q1, *qd = x + ARM_QD1;
    serial_fk(a1, a2, q, ed->s + S_X);
    serial_jacobian(a1, a2, q, Jm);
    ed->s[S_VX] = Jm[0][0] * qd[0] + Jm[0][1] * qd[1];
    ed->s[S_VY] = Jm[1][0] * qd[0] + Jm[1][1] * qd[1];
    ed->s[S_TAU1] = arm_applied_torque(em, ed, 0, u[0], x);
    ed->s[S_TAU2] = arm_applied_torque(em, ed, 1, u[1], x);
    double stick[2], limit[2];
    arm_joint_sensors(ed->mode, stick, limit);
    ed->s[S_STICK1] = stick[0];
    ed->s[S_STICK2] = stick[1];
    ed->s[S_LIMIT1] = limit[0];
    ed->s[S_LIMIT2] = limit[1];
}

/* The 2 pi-equivalent of angle q nearest `near`, kept inside [lo, hi] if there is one there
 * (then returns 0); -1 when no equivalent lies in [lo, hi]. */
static int nearest_turn(double q, double near, int limited, double lo, double hi, double *out)
{
    double k = nearbyint((near - q) / (2.0 * M_PI));
    double best = q + 2.0 * M_PI * k;
    if (!limited) {
        *out = best;
        return 0;
    }
    /* among the equivalents inside [lo, hi], the one nearest `near` */
    double first = q + 2.0 * M_PI * ceil((lo - q) / (2.0 * M_PI));
    if (first > hi)
        return -1;
    double last = q + 2.0 * M_PI * floor((hi - q) / (2.0 * M_PI));
    *out = best < first ? first : best > last ? last : best;
    return 0;
}

/* target = (x, y) or (x, y, elbow), elbow +1 (up, the chapter's solution) or -1 (down); gives the
 * PID setpoints through serial_ik, each the 2 pi-turn of the solution nearest the current angle
 * (inside the stops when there are stops). */
static int sa_target(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                     const double *target, int n, double *u, rs_status_t *st)
{
    if (n != 2 && n != 3)
        return rs_fail(st, RS_EINVAL,
                       "'%s' (serial_arm) takes a target (x, y) or (x, y, elbow), got %d values",
                       em->name, n);
    int elbow = 1;
    if (n == 3) {
        if (target[2] != 1.0 && target[2] != -1.0)
            return rs_fail(st, RS_EINVAL,
                           "elbow must be +1 (elbow up) or -1 (elbow down), got %g", target[2]);
        elbow = (int)target[2];
    }
    for (int j = 0; j < 2; j++)
        if (em->p[ARM_P_MODE + j] != ARM_PID)
            return rs_fail(st, RS_EPRECOND,
                           "joint %d of '%s' is in torque mode; a Cartesian target becomes PID "
                           "setpoints, so set '%s.actuator_mode' to 1, 1 (PID) first",
                           j + 1, em->name, em->name);
    double a1 = em->p[P_A1], a2 = em->p[P_A2], q[2];
    double r = rs_hypot(target[0], target[1]);
    if (serial_ik(a1, a2, target[0], target[1], elbow, q) < 0)
        return rs_fail(st, RS_ERANGE,
                       "target (%g, %g) is at r = %g m from the base, outside the reachable "
                       "annulus |a1 - a2| = %g <= r <= a1 + a2 = %g m",
                       target[0], target[1], r, fabs(a1 - a2), a1 + a2);
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    const double *x = ed->data->x + em->x_off;
    for (int j = 0; j < 2; j++)
        if (nearest_turn(q[j], x[ARM_Q1 + j], jc.limited, jc.q_min[j], jc.q_max[j], &u[j]) < 0)
            return rs_fail(st, RS_ERANGE,
                           "target (%g, %g) with elbow %+d needs theta%d = %g rad (mod 2 pi), "
                           "outside the joint's stops [%g, %g] rad; try the other elbow",
                           target[0], target[1], elbow, j + 1, q[j], jc.q_min[j], jc.q_max[j]);
    return 0;
}

static int sa_reachable(const rs_entity_model_t *em, double x, double y)
{
    double a1 = em->p[P_A1], a2 = em->p[P_A2], q[2], out;
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    for (int elbow = 1; elbow >= -1; elbow -= 2) {
        if (serial_ik(a1, a2, x, y, elbow, q) < 0)
            return 0;
        if (!jc.limited)
            return 1;
        if (nearest_turn(q[0], 0.0, 1, jc.q_min[0], jc.q_max[0], &out) == 0 &&
            nearest_turn(q[1], 0.0, 1, jc.q_min[1], jc.q_max[1], &out) == 0)
            return 1;
    }
    return 0;
}

/* Forward kinematics (serial_fk); stretch r / (a1 + a2), 1 with the arm straight. */
static int sa_joints_to_point(const rs_entity_model_t *em, const double *q, double p[2],
                              double *stretch)
{
    double a1 = em->p[P_A1], a2 = em->p[P_A2];
    serial_fk(a1, a2, q, p);
    if (stretch)
        *stretch = rs_hypot(p[0], p[1]) / (a1 + a2);
    return 0;
}

/* Boundary samples: the workspace boundary lies on the images of the stretched (t2 = 0) and
 * folded (t2 = pi) configurations (the circles r = a1 + a2 and r = |a1 - a2|) and, with stops,
 * of the edges of the joint box. Points are spread over those curves in order. */
static int sa_workspace(const rs_entity_model_t *em, double *xy, int max_points)
{
    double a1 = em->p[P_A1], a2 = em->p[P_A2];
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    double lo1 = jc.limited ? jc.q_min[0] : -M_PI, hi1 = jc.limited ? jc.q_max[0] : M_PI;
    double lo2 = jc.limited ? jc.q_min[1] : -M_PI, hi2 = jc.limited ? jc.q_max[1] : M_PI;
    /* curves: segments (q1, q2) -> (q1', q2') in the joint box */
    double seg[8][4];
    int nseg = 0;
    for (double k = ceil(lo2 / M_PI); k * M_PI <= hi2 && nseg < 4; k += 1.0) {
        if (!jc.limited && k < 0)
            continue; /* turning fully, t2 = -pi and pi are the same circle */
        seg[nseg][0] = lo1, seg[nseg][1] = k * M_PI;
        seg[nseg][2] = hi1, seg[nseg][3] = k * M_PI;
        nseg++;
    }
    if (jc.limited) {
        double box[4][4] = {{lo1, lo2, hi1, lo2}, {hi1, lo2, hi1, hi2}, {hi1, hi2, lo1, hi2},
                            {lo1, hi2, lo1, lo2}};
        for (int i = 0; i < 4; i++)
            memcpy(seg[nseg++], box[i], sizeof box[i]);
    }
    int n = 0;
    for (int s = 0; s < nseg && n < max_points; s++) {
        int share = (max_points - n) / (nseg - s);
        for (int i = 0; i < share && n < max_points; i++) {
            double w = share > 1 ? (double)i / (share - 1) : 0.0;
            double q[2] = {seg[s][0] + w * (seg[s][2] - seg[s][0]),
                           seg[s][1] + w * (seg[s][3] - seg[s][1])};
            serial_fk(a1, a2, q, xy + 2 * n);
            n++;
        }
    }
    return n;
}

/* Joints past their stops (beyond rounding) break the stops' hybrid model: the step stops with
 * this error instead of reporting the state as normal. */
static int sa_failure(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                      rs_status_t *st)
{
    (void)ed;
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    for (int j = 0; j < 2 && jc.limited; j++) {
        double q = x[ARM_Q1 + j], past = fmax(jc.q_min[j] - q, q - jc.q_max[j]);
        if (past > 1e-9 * (1.0 + fabs(q)))
            return rs_fail(st, RS_ESIMFAIL,
                           "joint %d of '%s' is %g rad past its stop (theta%d = %.9g, stops [%g, "
                           "%g]); the joint model cannot go on from this state",
                           j + 1, em->name, past, j + 1, q, jc.q_min[j], jc.q_max[j]);
    }
    return 0;
}

/* rs_robot_t.admissible: the joints within the new stops (docs/physics-edges.md). */
static int sa_admissible(const rs_entity_model_t *em, const rs_entity_model_t *was,
                         const rs_entity_data_t *ed, const double *x, rs_status_t *st)
{
    (void)was, (void)ed;
    return arm_admissible_stops(em, x, st);
}

/* ---- the right-hand side's Jacobian (rs_robot_t.jacobian) ------------------------------------ */

/* Columns of the partials below: the state (ARM_NX), the commands (2), then the link masses m1,
 * m2 and gravity g, which enter through the compiled constants (sa_compile). */
enum { JC_U1 = ARM_NX, JC_M1 = ARM_NX + 2, JC_M2, JC_G, JC_N };

/* d xdot / d(x, u, m1, m2, g) of sa_derivs in closed form: with M(q) and b from sa_dynamics,
 *   db0/dq1 = K_G1 s1 + K_G2 s12,  db0/dq2 = K_H c2 t2d (2 t1d + t2d) + K_G2 s12,
 *   db0/dt1d = 2 h t2d,            db0/dt2d = 2 h (t1d + t2d),
 *   db1/dq1 = K_G2 s12,            db1/dq2 = -K_H c2 t1d^2 + K_G2 s12,  db1/dt1d = -2 h t1d,
 *   dM11/dq2 = -2 K_H s2, dM12/dq2 = -K_H s2, the actuators' PID or torque partials, and for
 * the joints sliding qdd = M^-1 r (r = b - dir mu_D - mu_V qd): dqdd = M^-1 (dr - dM qdd);
 * one joint k sliding beside a held one: dqdd_k = (dr_k - dM_kk qdd_k) / M_kk. */
static int sa_jacobian(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                       const double *x, const double *u, int nq, const int *slot, double *f,
                       double *J, int ld, unsigned char *known)
{
    (void)t;
    const double *p = em->p, *k = em->c;
    double q1 = x[ARM_Q1], q2 = x[ARM_Q2], t1d = x[ARM_QD1], t2d = x[ARM_QD2];
    double s1 = sin(q1), c1 = cos(q1), s2 = sin(q2), c2 = cos(q2);
    double s12 = sin(q1 + q2), c12 = cos(q1 + q2), h = k[K_H] * s2;
    /* M and b as sa_dynamics computes them (its wrench terms below) */
    double M[2][2] = {{k[K_M11] + 2.0 * k[K_H] * c2, k[K_M22] + k[K_H] * c2},
                      {k[K_M22] + k[K_H] * c2, k[K_M22]}};
    double b[2] = {arm_actuator_torque(em, ed, 0, u[0], x) + h * t2d * (2.0 * t1d + t2d) -
                       k[K_G1] * c1 - k[K_G2] * c12,
                   arm_actuator_torque(em, ed, 1, u[1], x) - h * t1d * t1d - k[K_G2] * c12};
    double dM[3][JC_N] = {{0}}, db[2][JC_N] = {{0}}; /* dM: M11, M12, M22 */
    dM[0][ARM_Q2] = -2.0 * k[K_H] * s2;
    dM[1][ARM_Q2] = -k[K_H] * s2;
    db[0][ARM_Q1] = k[K_G1] * s1 + k[K_G2] * s12;
    db[0][ARM_Q2] = k[K_H] * c2 * t2d * (2.0 * t1d + t2d) + k[K_G2] * s12;
    db[0][ARM_QD1] = 2.0 * h * t2d;
    db[0][ARM_QD2] = 2.0 * h * (t1d + t2d);
    db[1][ARM_Q1] = k[K_G2] * s12;
    db[1][ARM_Q2] = -k[K_H] * c2 * t1d * t1d + k[K_G2] * s12;
    db[1][ARM_QD1] = -2.0 * h * t1d;
    for (int j = 0; j < 2; j++) { /* arm_actuator_torque: within the cap */
        if (!(p[ARM_P_TAU_MAX + j] > 0) || ed->aux[ARM_AUX_SAT1 + j] != 0)
            continue;
        if (p[ARM_P_MODE + j] != ARM_PID) {
            db[j][JC_U1 + j] += 1.0;
            continue;
        }
        db[j][ARM_Q1 + j] -= p[ARM_P_KP + j];
        db[j][ARM_QD1 + j] -= p[ARM_P_KD + j];
        db[j][ARM_I1 + j] += p[ARM_P_KI + j];
        db[j][JC_U1 + j] += p[ARM_P_KP + j];
    }
    const double *w = ed->wrench;
    if (w[0] != 0.0 || w[1] != 0.0 || w[2] != 0.0 || w[3] != 0.0 || w[4] != 0.0) {
        double a1 = p[P_A1], a2 = p[P_A2], dq = -a2 * c12 * w[0] - a2 * s12 * w[1];
        double q2w = -a2 * s12 * w[0] + a2 * c12 * w[1] + w[2] + w[4];
        b[0] += q2w - a1 * s1 * w[0] + a1 * c1 * w[1] + w[3];
        b[1] += q2w;
        db[0][ARM_Q1] += dq - a1 * c1 * w[0] - a1 * s1 * w[1];
        db[0][ARM_Q2] += dq;
        db[1][ARM_Q1] += dq;
        db[1][ARM_Q2] += dq;
    }
    /* the constants along m1, m2, g (uniform-rod inertias by default scale with the masses),
     * where any of them is asked for */
    static const int pslot[3] = {P_M1, P_M2, P_GRAVITY};
    int nc = ARM_NX + 2;
    for (int kq = 0; kq < nq; kq++)
        for (int m = 0; m < 3; m++)
            if (slot[kq] == pslot[m])
                nc = JC_N;
    links_t L;
    if (nc == JC_N)
        links_of(em, &L);
    else
        L = (links_t){0};
    double dI1 = em->plen[PI_I1] ? 0.0 : L.a1 * L.a1 / 12.0;
    double dI2 = em->plen[PI_I2] ? 0.0 : L.a2 * L.a2 / 12.0;
    double dK[K_N][3] = {
        [K_M11] = {dI1 + L.lc1 * L.lc1, dI2 + L.a1 * L.a1 + L.lc2 * L.lc2, 0.0},
        [K_M22] = {0.0, dI2 + L.lc2 * L.lc2, 0.0},
        [K_H] = {0.0, L.a1 * L.lc2, 0.0},
        [K_G1] = {L.lc1 * L.g, L.a1 * L.g, L.m1 * L.lc1 + L.m2 * L.a1},
        [K_G2] = {0.0, L.lc2 * L.g, L.m2 * L.lc2},
    };
    for (int m = 0; m < 3 && nc == JC_N; m++) {
        int c = JC_M1 + m;
        dM[0][c] = dK[K_M11][m] + 2.0 * c2 * dK[K_H][m];
        dM[1][c] = dK[K_M22][m] + c2 * dK[K_H][m];
        dM[2][c] = dK[K_M22][m];
        db[0][c] = s2 * t2d * (2.0 * t1d + t2d) * dK[K_H][m] - c1 * dK[K_G1][m] -
                   c12 * dK[K_G2][m];
        db[1][c] = -s2 * t1d * t1d * dK[K_H][m] - c12 * dK[K_G2][m];
    }
    /* arm_accel */
    int st[2];
    double dir[2], r[2], qdd[2] = {0.0, 0.0}, dq[2][JC_N] = {{0}};
    arm_status_of(ed->mode, st);
    arm_dirs_of(ed, dir);
    for (int j = 0; j < 2; j++) {
        r[j] = b[j] - dir[j] * p[ARM_P_MU_D + j] - p[ARM_P_MU_V + j] * x[ARM_QD1 + j];
        db[j][ARM_QD1 + j] -= p[ARM_P_MU_V + j]; /* now dr */
    }
    int h0 = arm_held(st[0]), h1 = arm_held(st[1]);
    if (!h0 && !h1) {
        arm_solve2(M, r, qdd);
        double det = M[0][0] * M[1][1] - M[0][1] * M[1][0];
        double i00 = M[1][1] / det, i01 = -M[0][1] / det, i11 = M[0][0] / det;
        for (int c = 0; c < nc; c++) {
            double r0 = db[0][c] - dM[0][c] * qdd[0] - dM[1][c] * qdd[1];
            double r1 = db[1][c] - dM[1][c] * qdd[0] - dM[2][c] * qdd[1];
            dq[0][c] = i00 * r0 + i01 * r1;
            dq[1][c] = i01 * r0 + i11 * r1;
        }
    } else if (!h0 || !h1) {
        int j = h0 ? 1 : 0, d = j ? 2 : 0; /* the sliding joint; its diagonal of M */
        qdd[j] = r[j] / M[j][j];
        for (int c = 0; c < nc; c++)
            dq[j][c] = (db[j][c] - dM[d][c] * qdd[j]) / M[j][j];
    }
    f[ARM_Q1] = t1d;
    f[ARM_Q2] = t2d;
    f[ARM_QD1] = qdd[0];
    f[ARM_QD2] = qdd[1];
    arm_integral_rates(em, x, u, f);
    for (int i = 0; i < ARM_NX; i++) {
        double *row = J + (size_t)i * ld;
        for (int c = 0; c < ARM_NX + 2; c++)
            row[c] = 0.0;
        if (i < 2)
            row[ARM_QD1 + i] = 1.0;
        else if (i < 4)
            for (int c = 0; c < ARM_NX + 2; c++)
                row[c] = dq[i - 2][c];
        else if (p[ARM_P_MODE + i - 4] == ARM_PID) /* arm_integral_rates */
            row[JC_U1 + i - 4] = 1.0, row[ARM_Q1 + i - 4] = -1.0;
        for (int kq = 0; kq < nq; kq++)
            for (int m = 0; m < 3; m++)
                if (slot[kq] == pslot[m]) {
                    row[ARM_NX + 2 + kq] = i >= 2 && i < 4 ? dq[i - 2][JC_M1 + m] : 0.0;
                    known[kq] = 1;
                }
    }
    return 0;
}

/* the parameters that choose (rs_robot_t.choices) */
static const char *const sa_choices[] = {"actuator_mode", NULL};

const rs_robot_t rs_robot_serial_arm = {
    .kind = "serial_arm",
    .doc = "serial two-link arm with torque/PID actuators, joint friction and stops",
    .nx = ARM_NX,
    .state = sa_state,
    .nu = 2,
    .actuators = sa_actuators,
    .ns = NS,
    .sensors = sa_sensors,
    .np = sizeof sa_params / sizeof sa_params[0],
    .params = sa_params,
    .nmodes = ARM_JOINT_MODES,
    .mode_names = sa_modes,
    .choices = sa_choices,
    .nevent_kinds = 4,
    .event_names = sa_events,
    .naux = ARM_NAUX,
    .aux_vars = arm_aux_vars,
    .erk_order = 8, /* Verner 8(7): see bench_mujoco_serial_arm */
    .nwrench = 3,
    .wrench = sa_wrench,
    .nguards = sa_nguards,
    .validate = sa_validate,
    .compile = sa_compile,
    .init = sa_init,
    .derivs = sa_derivs,
    .jacobian = sa_jacobian,
    .guards = sa_guards,
    .jump = sa_jump,
    .settle = sa_settle,
    .holds = arm_holds,
    .excursion = sa_excursion,
    .failure = sa_failure,
    .admissible = sa_admissible,
    .sense = sa_sense,
    .target_to_commands = sa_target,
    .reachable = sa_reachable,
    .joints_to_point = sa_joints_to_point,
    .workspace = sa_workspace,
};
