/* The dual two-link parallel arm, a two-dimensional "delta" (the "Example Robotic
 * Systems" chapter, "Dual Two Link Parallel Manipulator"), each driven link on a servo
 * (Klamp't's actuators). SI units.
 *
 * Geometry as in the example-systems chapter: a fixed base of length L0 centred on the origin,
 * x right and y down; driven links of length L1 at its ends, angles t1 (left) and t2 (right) from the horizontal (0,
 * pointing outward) to straight down (pi/2); passive links of length L2 joined at the end
 * effector. Kinematics are arm_common.h's parallel_fk / parallel_ik (the chapter's formulas).
 *
 * Dynamics: the passive links are massless and the driven links' inertia is lumped into the
 * rotor inertia J of their servo, so each servo is J tdd = tau - mu_V td (+ Klamp't's dry
 * friction mu_D, default 0), tau from arm_actuator_torque (torque or PID mode, capped). The
 * joints stay in [theta_min, theta_max] by inelastic hard stops (events).
 *
 * The linkage can only be assembled while the elbows are at most u = 2 L2 apart. When the servos
 * drive it to the stretched position (guard 2 L2 - u falls through 0) the taut linkage takes
 * their velocity across the set u = 2 L2 by a plastic impact (qd+ = qd- - M^-1 grad u
 * (grad u . qd-) / (grad u . M^-1 grad u); both rates to 0 where a servo is on a stop that qd+
 * would move it into, since the set has one degree of freedom) and the arm stays "stretched", moving along the set with the
 * linkage's tension T >= 0 as a constraint force (the taut-linkage section below), while the
 * torques would pull the elbows further apart; it is released when that pull falls through 0.
 * At rest on the set it is held by the servos' dry friction or a stop, as the chapter model's
 * stretched state was. (The chapter model stopped both servos at every stretch; a linkage that
 * the servos pull taut while sliding along it then went taut and slack without end, a Zeno
 * sequence whose limit is this motion along the set.) */
#include "arm_common.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum {
    S_X, S_Y, S_VX, S_VY, S_TAU1, S_TAU2, S_STICK1, S_STICK2, S_LIMIT1, S_LIMIT2, S_STRETCHED,
    S_STRETCH, NS
};
enum { P_L0 = ARM_P_END, P_L1, P_L2, P_J, P_END = P_J + 2 };
enum { PI_L0 = ARM_PI_END, PI_L1, PI_L2, PI_J };
enum { EV_STRETCHED = ARM_EV_RELEASE + 1, EV_UNSTRETCHED };
#define MODE_STRETCHED ARM_JOINT_MODES
#define G_STRETCH ARM_NGUARDS
#define G_APEX (ARM_NGUARDS + 1) /* while slack: the elbows' separation rate, du/dt (below) */
#define STRETCH_SLACK 1e-12 /* relative: the guard is 2 L2 (1 + slack) - u, so that a linkage
                               placed exactly at u = 2 L2 starts with a positive guard */

static const rs_var_desc_t pa_state[ARM_NX] = {
    {"theta1", "rad", -M_PI / 2, M_PI / 2, "left servo: driven link from the horizontal (0) "
                                           "to straight down (pi/2)"},
    {"theta2", "rad", -M_PI / 2, M_PI / 2, "right servo angle, measured the same way"},
    {"theta1_dot", "rad/s", -INFINITY, INFINITY, "left servo rate"},
    {"theta2_dot", "rad/s", -INFINITY, INFINITY, "right servo rate"},
    {"integral1", "rad*s", -INFINITY, INFINITY,
     "left servo PID integral of the error qD - theta1 (0 and frozen in torque mode)"},
    {"integral2", "rad*s", -INFINITY, INFINITY, "right servo PID integral of the error"},
};

static const rs_var_desc_t pa_actuators[2] = {
    {"servo1", "N*m | rad", -1e6, 1e6,
     "left servo: the torque (actuator_mode 0) or the PID setpoint angle qD (actuator_mode 1, "
     "qD_dot = 0); torques beyond tau_max are capped, not refused"},
    {"servo2", "N*m | rad", -1e6, 1e6, "right servo: torque or PID setpoint, as servo1"},
};

static const rs_var_desc_t pa_sensors[NS] = {
    {"x", "m", -INFINITY, INFINITY, "end effector x (forward kinematics)"},
    {"y", "m", -INFINITY, INFINITY, "end effector y, positive down"},
    {"vx", "m/s", -INFINITY, INFINITY, "end effector velocity x"},
    {"vy", "m/s", -INFINITY, INFINITY, "end effector velocity y"},
    {"tau1", "N*m", -INFINITY, INFINITY,
     "torque applied by servo 1 at the end of the step, after the cap (|tau1| <= tau_max)"},
    {"tau2", "N*m", -INFINITY, INFINITY, "torque applied by servo 2, after the cap"},
    {"stick1", "1", 0.0, 1.0, "1 while servo 1 is stuck by dry friction, else 0"},
    {"stick2", "1", 0.0, 1.0, "1 while servo 2 is stuck by dry friction, else 0"},
    {"limit1", "1", -1.0, 1.0, "servo 1 held at theta_min (-1) or theta_max (+1), else 0"},
    {"limit2", "1", -1.0, 1.0, "servo 2 held at theta_min (-1) or theta_max (+1), else 0"},
    {"stretched", "1", 0.0, 1.0, "1 while the taut linkage (u = 2 L2) holds the servos"},
    {"stretch", "1", 0.0, 1.0, "u / (2 L2): elbow distance over its largest assemblable value"},
};

static const rs_param_desc_t pa_params[] = {
    {"actuator_mode", "1", 0.0, 1.0, ARM_P_MODE, 2, 2, ARM_PID,
     "per servo: 0 = torque mode (SetForce values are torques), 1 = PID mode (SetForce values "
     "are setpoints qD; SetTarget needs it); changing it zeroes that servo's PID integral"},
    {"kP", "N*m/rad", 0.0, 1e9, ARM_P_KP, 2, 2, 0.5, "per servo: PID proportional gain"},
    {"kI", "N*m/(rad*s)", 0.0, 1e9, ARM_P_KI, 2, 2, 0.1, "per servo: PID integral gain"},
    {"kD", "N*m*s/rad", 0.0, 1e9, ARM_P_KD, 2, 2, 0.01, "per servo: PID derivative gain"},
    {"tau_max", "N*m", 0.0, 1e9, ARM_P_TAU_MAX, 2, 2, 0.5,
     "per servo: torque limit; the applied torque is capped to [-tau_max, tau_max] in both modes"},
    {"mu_D", "N*m", 0.0, 1e9, ARM_P_MU_D, 2, 2, 0.0,
     "per servo: dry friction (stick-slip), default none"},
    {"mu_V", "N*m*s/rad", 0.0, 1e9, ARM_P_MU_V, 2, 2, 1e-3,
     "per servo: viscous damping mu_V"},
    {"theta_min", "rad", -M_PI / 2, M_PI / 2, ARM_P_THETA_MIN, 2, 2, 0.0,
     "per servo: lower hard stop (the chapter's configuration square [0, pi/2]^2 by default)"},
    {"theta_max", "rad", -M_PI / 2, M_PI / 2, ARM_P_THETA_MAX, 2, 2, M_PI / 2,
     "per servo: upper hard stop; theta_min < theta_max"},
    {"theta0", "rad", -M_PI / 2, M_PI / 2, ARM_P_THETA0, 2, 2, M_PI / 4,
     "per servo: initial angle, inside the stops and with the linkage assemblable"},
    {"theta_dot0", "rad/s", -1e6, 1e6, ARM_P_THETA_DOT0, 2, 2, 0.0, "per servo: initial rate"},
    {"L0", "m", 1e-6, 1e6, P_L0, 1, 1, 0.08, "base length (8 cm)"},
    {"L1", "m", 1e-6, 1e6, P_L1, 1, 1, 0.05, "driven link length"},
    {"L2", "m", 1e-6, 1e6, P_L2, 1, 1, 0.10, "passive link length"},
    {"J", "kg*m^2", 1e-12, 1e6, P_J, 2, 2, 1e-4,
     "per servo: rotor inertia, the driven link's included"},
};

static const char *const pa_modes[ARM_JOINT_MODES + 1] = {ARM_MODE_NAMES("slip"), "stretched"};
static const char *const pa_events[] = {"stick", "slip", "stop", "release", "stretched",
                                        "unstretched"};

static void pa_dynamics(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                        const double *x, const double *u, double M[2][2], double b[2])
{
    M[0][0] = em->p[P_J];
    M[1][1] = em->p[P_J + 1];
    M[0][1] = M[1][0] = 0.0;
    b[0] = arm_actuator_torque(em, ed, 0, u[0], x) + ed->wrench[0]; /* external couples on */
    b[1] = arm_actuator_torque(em, ed, 1, u[1], x) + ed->wrench[1]; /* the servo links */
}

/* bodies an external wrench can act on (ApplyWrench): the two driven links */
static const rs_wrench_desc_t pa_wrench[] = {
    {"link1", 1, "tau_z: N*m, a couple on servo 1's link"},
    {"link2", 1, "tau_z: N*m, a couple on servo 2's link"},
};

static double elbow_gap(const rs_entity_model_t *em, const double *x, double grad[2])
{
    return parallel_u(em->p[P_L0], em->p[P_L1], x + ARM_Q1, grad);
}

/* The stretch guard: > 0 while the linkage is slack. */
static double stretch_guard(const rs_entity_model_t *em, const double *x)
{
    return 2.0 * em->p[P_L2] * (1.0 + STRETCH_SLACK) - elbow_gap(em, x, NULL);
}

/* From rest (the stretched arm): the joint statuses the servos would take if the linkage let go,
 * and d2u/dt2 they would give. >= 0: the servos pull the linkage taut. */
static double stretch_pull(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                           const double *x, const double *u, int st[2], double dir[2])
{
    double M[2][2], b[2], qdd[2], lam[2], grad[2];
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    pa_dynamics(em, ed, x, u, M, b);
    arm_resolve(M, b, &jc, x, st, dir);
    const double qd[2] = {x[ARM_QD1], x[ARM_QD2]};
    arm_accel(M, b, &jc, st, dir, qd, qdd, lam);
    elbow_gap(em, x, grad);
    return grad[0] * qdd[0] + grad[1] * qdd[1];
}

static double taut_motion(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                          const double *u, double qdd[2]);

/* Let go of a stretched linkage if the servos pull back; returns 1 if released. */
static int try_release(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                       const double *x, const double *u, int force)
{
    int st[2];
    double dir[2];
    double pull = stretch_pull(em, ed, x, u, st, dir);
    if (ed->mode == MODE_STRETCHED && ed->aux[ARM_AUX_DIR1] != 0.0) {
        double qdd[2];
        pull = taut_motion(em, ed, x, u, qdd); /* moving along the set: with its curvature */
    }
    if (!force && pull >= 0.0)
        return 0;
    ed->mode = st[0] + 4 * st[1];
    ed->aux[ARM_AUX_DIR1] = dir[0];
    ed->aux[ARM_AUX_DIR2] = dir[1];
    rs_emit_event(ed, EV_UNSTRETCHED, t, pull, x, x, ARM_NX);
    return 1;
}

/* ---- the taut linkage: motion along the stretched set u(q) = 2 L2 -------------------------
 * While taut the servos move along the set (one degree of freedom): M qdd = r - T grad u, r the
 * servos' torques less their friction (dir_j = sgn qd_j), T >= 0 the linkage's tension, with
 * grad u . qdd + qd^T H_u qd = 0 (H_u the Hessian of u); so T = c / (grad u . M^-1 grad u) with
 * c = grad u . M^-1 r + qd^T H_u qd, the elbows' separation acceleration were the linkage
 * slack. It goes slack when c falls through 0. Aux dir1 carries the motion along the set:
 * s = +-1 moving along tau = (-du/dt2, du/dt1) / |grad u| that way, 0 held at rest (by the
 * servos' dry friction, or a stop the motion would enter: the stretched state the chapter
 * model had, with both rates 0). A stop reached while moving stops both servos (the set has
 * one degree of freedom). Drift off the set (the integrator's error) is damped by Baumgarte's
 * stabilisation, c_stab = c + 2 w (grad u . qd) + w^2 (u - 2 L2), w = TAUT_OMEGA, which is the
 * exact law on the set. */
#define TAUT_OMEGA 2000.0 /* 1/s */

/* qd^T H_u qd: d2u/dt2 at qdd = 0, u = |B - A| (arm_common's elbows). */
static double taut_curvature(const rs_entity_model_t *em, const double *x)
{
    double L0 = em->p[P_L0], L1 = em->p[P_L1], A[2], B[2];
    const double *q = x + ARM_Q1, *qd = x + ARM_QD1;
    parallel_elbows(L0, L1, q, A, B);
    double w[2] = {B[0] - A[0], B[1] - A[1]}, un = rs_hypot(w[0], w[1]);
    double e[2] = {w[0] / un, w[1] / un};
    double wd[2] = {-L1 * sin(q[1]) * qd[1] - L1 * sin(q[0]) * qd[0],
                    L1 * cos(q[1]) * qd[1] - L1 * cos(q[0]) * qd[0]};
    double wdd[2] = {-L1 * cos(q[1]) * qd[1] * qd[1] - L1 * cos(q[0]) * qd[0] * qd[0],
                     -L1 * sin(q[1]) * qd[1] * qd[1] + L1 * sin(q[0]) * qd[0] * qd[0]};
    double ew = e[0] * wd[0] + e[1] * wd[1];
    return (wd[0] * wd[0] + wd[1] * wd[1] - ew * ew) / un + e[0] * wdd[0] + e[1] * wdd[1];
}

/* Moving along the set its way s (+-1): the accelerations qdd and c (the slack separation
 * acceleration, stabilised; >= 0 while taut). */
static double taut_motion_along(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                                const double *x, const double *u, double s, double qdd[2])
{
    double M[2][2], b[2], grad[2], a[2], mg = 0.0, ga = 0.0;
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    pa_dynamics(em, ed, x, u, M, b);
    double un = elbow_gap(em, x, grad), gqd = grad[0] * x[ARM_QD1] + grad[1] * x[ARM_QD2];
    double tau[2] = {-grad[1], grad[0]};
    for (int j = 0; j < 2; j++) {
        /* friction against the motion along the set, s tau_j (the sign of qd_j on the set, and
         * defined from rest on, where qd_j = 0 would leave it out at the first stage) */
        double qd = x[ARM_QD1 + j], dir = s * tau[j] > 0 ? 1.0 : s * tau[j] < 0 ? -1.0 : 0.0;
        a[j] = (b[j] - dir * jc.mu_D[j] - jc.mu_V[j] * qd) / M[j][j];
        mg += grad[j] * grad[j] / M[j][j];
        ga += grad[j] * a[j];
    }
    double c = ga + taut_curvature(em, x);
    double stab = c + 2.0 * TAUT_OMEGA * gqd + TAUT_OMEGA * TAUT_OMEGA * (un - 2.0 * em->p[P_L2]);
    double T = mg > 0 ? stab / mg : 0.0;
    for (int j = 0; j < 2; j++)
        qdd[j] = a[j] - T * grad[j] / M[j][j];
    return c;
}

static double taut_motion(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                          const double *u, double qdd[2])
{
    return taut_motion_along(em, ed, x, u, ed->aux[ARM_AUX_DIR1], qdd);
}

/* The unit tangent of the set at q. */
static void taut_tangent(const rs_entity_model_t *em, const double *x, double tau[2])
{
    double grad[2];
    elbow_gap(em, x, grad);
    double n = rs_hypot(grad[0], grad[1]);
    tau[0] = n > 0 ? -grad[1] / n : 0.0;
    tau[1] = n > 0 ? grad[0] / n : 0.0;
}

/* At rest on the set (qd = 0), the acceleration along it, s tau . qdd, were it moving its way s
 * (+-1) against the servos' dry friction: the motion's own law, stabilisation included. It
 * starts moving that way where this is positive. In exact arithmetic its sign is that of
 * F - s cap (F = tau . b the servos' force along the set, cap = sum mu_D_j |tau_j| their dry
 * friction's reach: tau^T M qdd = tau . r, the tension's force being normal to the
 * set); deciding with the force balance while the motion's law, with its rounding and drift
 * terms, decelerated (F - cap of 1e-19 N m against a stabilisation of 1e-11) reversed the
 * start at once, stopped and started it again without end. */
static double taut_start(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                         const double *x, const double *u, double s)
{
    double qdd[2], tau[2];
    taut_motion_along(em, ed, x, u, s, qdd);
    taut_tangent(em, x, tau);
    return s * (tau[0] * qdd[0] + tau[1] * qdd[1]);
}

/* At rest on the set: may it move its way s = +1 / -1 (allowed[0] / [1]: no stop in the way)? */
static void taut_allowed(const rs_entity_model_t *em, const double *x, int allowed[2])
{
    double tau[2];
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    taut_tangent(em, x, tau);
    for (int i = 0; i < 2; i++) {
        double s = i == 0 ? 1.0 : -1.0;
        allowed[i] = 1;
        for (int j = 0; j < 2 && jc.limited; j++)
            if ((x[ARM_Q1 + j] <= jc.q_min[j] && s * tau[j] < 0) ||
                (x[ARM_Q1 + j] >= jc.q_max[j] && s * tau[j] > 0))
                allowed[i] = 0;
    }
}

/* The motion along the set from x: moving its way if it moves, else from rest as the force
 * and friction decide. Sets aux dir1 (s), dir2 0. */
static void taut_resolve(const rs_entity_model_t *em, rs_entity_data_t *ed, const double *x,
                         const double *u)
{
    double tau[2], sigma;
    int allowed[2];
    taut_tangent(em, x, tau);
    sigma = tau[0] * x[ARM_QD1] + tau[1] * x[ARM_QD2];
    double s = 0.0;
    if (x[ARM_QD1] != 0.0 || x[ARM_QD2] != 0.0) {
        s = sigma > 0 ? 1.0 : -1.0;
    } else {
        taut_allowed(em, x, allowed);
        s = allowed[0] && taut_start(em, ed, x, u, 1.0) > 0.0    ? 1.0
            : allowed[1] && taut_start(em, ed, x, u, -1.0) > 0.0 ? -1.0
                                                                 : 0.0;
    }
    ed->aux[ARM_AUX_DIR1] = s;
    ed->aux[ARM_AUX_DIR2] = 0.0;
}

/* Place the linkage exactly at u = 2 L2: a few Newton steps along grad u, inside the stops,
 * moving only the joints not in `fixed` (bit j: joint j held at a stop stays on it). A joint
 * that a step would take past its stop stays on it and the other one places the linkage
 * (clipped and moved again, it left the pose off the set by a part of the change). */
static void place_taut(const rs_entity_model_t *em, double *x, int fixed)
{
    double grad[2], target = 2.0 * em->p[P_L2];
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    for (int it = 0; it < 6; it++) {
        double err = elbow_gap(em, x, grad) - target;
        for (int j = 0; j < 2; j++)
            if (fixed >> j & 1)
                grad[j] = 0.0;
        double n2 = grad[0] * grad[0] + grad[1] * grad[1];
        if (err == 0.0 || !(n2 > 0))
            break;
        for (int j = 0; j < 2; j++) {
            double q = x[ARM_Q1 + j] - err * grad[j] / n2;
            if (q < jc.q_min[j] || q > jc.q_max[j])
                fixed |= 1 << j;
            x[ARM_Q1 + j] = fmin(fmax(q, jc.q_min[j]), jc.q_max[j]);
        }
    }
}

/* The linkage goes taut: place it exactly at u = 2 L2 (a few Newton steps along grad u, inside
 * the stops), stop both servos, log, and let go at once if the servos already pull back. */
static void stretch(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                    const double *u)
{
    double before[ARM_NX], grad[2];
    memcpy(before, x, sizeof before);
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    int st[2], fixed = 0;
    arm_status_of(ed->mode, st);
    for (int j = 0; j < 2 && ed->mode != MODE_STRETCHED; j++)
        fixed |= (st[j] == ARM_MIN || st[j] == ARM_MAX) << j;
    place_taut(em, x, fixed);
    /* the impact takes only the velocity across the set, grad u . qd (inelastic; M-weighted):
     * qd+ = qd - M^-1 grad u (grad u . qd) / (grad u . M^-1 grad u); a servo on its stop that
     * qd+ moves into it (or that its mode holds there) stops both */
    double M[2][2], b[2], mg = 0.0, gqd = 0.0;
    pa_dynamics(em, ed, x, u, M, b);
    elbow_gap(em, x, grad);
    for (int j = 0; j < 2; j++)
        mg += grad[j] * grad[j] / M[j][j], gqd += grad[j] * x[ARM_QD1 + j];
    /* a servo on its stop that the impact leaves moving off it is not held there (the set
     * has one degree of freedom: moving along it away from the stop, nothing stops it); one
     * that it moves into the stop is, and the other with it */
    double qd1[2];
    for (int j = 0; j < 2; j++)
        qd1[j] = !(mg > 0) ? 0.0 : x[ARM_QD1 + j] - grad[j] / M[j][j] * gqd / mg;
    int at_stop = fixed != 0;
    for (int j = 0; j < 2 && jc.limited; j++)
        at_stop |= (x[ARM_Q1 + j] <= jc.q_min[j] && !(qd1[j] > 0)) ||
                   (x[ARM_Q1 + j] >= jc.q_max[j] && !(qd1[j] < 0));
    double before_norm = fabs(x[ARM_QD1]) + fabs(x[ARM_QD2]);
    for (int j = 0; j < 2; j++)
        x[ARM_QD1 + j] = at_stop ? 0.0 : qd1[j];
    if (fabs(x[ARM_QD1]) + fabs(x[ARM_QD2]) <= 64 * DBL_EPSILON * before_norm)
        x[ARM_QD1] = x[ARM_QD2] = 0.0; /* all across the set (a head-on stretch): rounding */
    arm_saturation_from_values(em, ed, x, u); /* the rates jumped, and the PID's D term */
    ed->mode = MODE_STRETCHED;
    taut_resolve(em, ed, x, u);
    if (at_stop && ed->aux[ARM_AUX_DIR1] != 0.0) { /* moving along the set into a stop: held */
        double tau[2];
        taut_tangent(em, x, tau);
        for (int j = 0; j < 2; j++)
            if ((x[ARM_Q1 + j] <= jc.q_min[j] && ed->aux[ARM_AUX_DIR1] * tau[j] < 0) ||
                (x[ARM_Q1 + j] >= jc.q_max[j] && ed->aux[ARM_AUX_DIR1] * tau[j] > 0))
                ed->aux[ARM_AUX_DIR1] = 0.0;
    }
    rs_emit_event(ed, EV_STRETCHED, t, elbow_gap(em, x, NULL), before, x, ARM_NX);
    try_release(em, ed, t, x, u, 0);
}

static int pa_nguards(const rs_entity_model_t *em)
{
    (void)em;
    return ARM_NGUARDS + 2;
}

static int pa_validate(const rs_entity_model_t *em, rs_status_t *st)
{
    int rc = arm_validate_joints(em, st);
    if (rc < 0)
        return rc;
    double u0 = elbow_gap(em, em->p + ARM_P_THETA0, NULL), L2 = em->p[P_L2];
    if (u0 > 2.0 * L2)
        return rs_fail(st, RS_EINVAL,
                       "the linkage of '%s' cannot be assembled at theta0 = (%g, %g) rad: the "
                       "elbows are u = %g m apart, more than 2 L2 = %g m",
                       em->name, em->p[ARM_P_THETA0], em->p[ARM_P_THETA0 + 1], u0, 2.0 * L2);
    return 0;
}

/* rs_robot_t.admissible (docs/physics-edges.md): the servos within the new stops, and the
 * linkage assemblable, the elbows at most 2 L2 apart (to rounding): a shorter L2 or L1 that
 * the pose cannot assemble would have the stretch map pull the servos to u = 2 L2 at once. */
static int pa_admissible(const rs_entity_model_t *em, const rs_entity_model_t *was,
                         const rs_entity_data_t *ed, const double *x, rs_status_t *st)
{
    (void)was, (void)ed;
    int rc = arm_admissible_stops(em, x, st);
    if (rc < 0)
        return rc;
    double u = elbow_gap(em, x, NULL), L2 = em->p[P_L2];
    if (u > 2.0 * L2 * (1.0 + 1e-9))
        return rs_fail(st, RS_EPRECOND,
                       "the linkage of '%s' cannot be assembled under the new parameters at the "
                       "servos' angles (%.9g, %.9g) rad: the elbows are u = %.9g m apart, %.6g "
                       "m more than 2 L2 = %.9g m (u / 2 L2 = %.6g); Reset or SetState the "
                       "servos to an assemblable pose first, or keep L2 at least %.9g m",
                       em->name, x[ARM_Q1], x[ARM_Q1 + 1], u, u - 2.0 * L2, 2.0 * L2,
                       u / (2.0 * L2), 0.5 * u);
    return 0;
}

static void pa_init(const rs_entity_model_t *em, rs_entity_data_t *ed, double *x)
{
    arm_init(em, ed, x);
}

static void pa_derivs(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                      const double *x, const double *u, double *xdot)
{
    (void)t;
    if (ed->mode == ARM_SLIP + 4 * ARM_SLIP) { /* both servos slide: the closed form */
        double M[2][2], b[2];
        pa_dynamics(em, ed, x, u, M, b);
        arm_slide_derivs(em, ed, M, b, x, u, xdot);
        return;
    }
    if (ed->mode != MODE_STRETCHED) {
        arm_derivs(em, ed, x, u, pa_dynamics, xdot);
        return;
    }
    double qdd[2] = {0.0, 0.0}; /* held at rest by the taut linkage: qdd = 0 */
    if (ed->aux[ARM_AUX_DIR1] != 0.0)
        taut_motion(em, ed, x, u, qdd); /* moving along the set */
    xdot[ARM_Q1] = x[ARM_QD1];
    xdot[ARM_Q2] = x[ARM_QD2];
    xdot[ARM_QD1] = qdd[0];
    xdot[ARM_QD2] = qdd[1];
    arm_integral_rates(em, x, u, xdot);
}

static void pa_guards(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                      const double *x, const double *u, double *g)
{
    (void)t;
    if (ed->mode == MODE_STRETCHED) {
        int st[2];
        double dir[2];
        for (int i = 0; i < ARM_G_SAT; i++)
            g[i] = 1.0;
        g[G_APEX] = 1.0;
        arm_saturation_guards(em, ed, x, u, g + ARM_G_SAT);
        if (ed->aux[ARM_AUX_DIR1] == 0.0) { /* held: slack, or the servos start it moving */
            int allowed[2];
            g[G_STRETCH] = stretch_pull(em, ed, x, u, st, dir);
            taut_allowed(em, x, allowed);
            g[0] = allowed[0] ? -taut_start(em, ed, x, u, 1.0) : 1.0;
            g[1] = allowed[1] ? -taut_start(em, ed, x, u, -1.0) : 1.0;
            return;
        }
        /* moving along the set: slack, at rest along it, or a stop reached */
        double qdd[2], tau[2], s = ed->aux[ARM_AUX_DIR1];
        arm_joints_t jc;
        arm_joints_from(em, &jc);
        g[G_STRETCH] = taut_motion(em, ed, x, u, qdd);
        taut_tangent(em, x, tau);
        g[2] = s * (tau[0] * x[ARM_QD1] + tau[1] * x[ARM_QD2]);
        for (int j = 0; j < 2 && jc.limited; j++) {
            g[5 * j + 3] = x[ARM_Q1 + j] - jc.q_min[j];
            g[5 * j + 4] = jc.q_max[j] - x[ARM_Q1 + j];
        }
        return;
    }
    arm_guard_values(em, ed, x, u, pa_dynamics, g);
    g[G_STRETCH] = stretch_guard(em, x);
    /* within 5 % of 2 L2 of the stretch, the elbows' separation rate du/dt falling through a
     * small margin (1e-6 of its terms' reach, and 1e-12 L1 per second: below 0 at rest and on
     * the set, where the linkage let go recedes from u = 2 L2 at du/dt of the order of the
     * drift): just before u's peak, where the stretch guard is all but its least. A linkage
     * stretched and slack again within one integration step is found there (the root finder
     * sees the stretch guard below 0 and searches back for its crossing); elsewhere the event
     * changes nothing. Entered only approaching (du/dt > 0) and left only receding, the band's
     * edge is no crossing; farther, u's peaks are of no concern (and a symmetric pose's, the
     * elbows' farthest at both servos' stops at 0, would coincide with those stops) */
    g[G_APEX] = 1.0;
    if (g[G_STRETCH] < 0.1 * em->p[P_L2]) {
        double grad[2];
        elbow_gap(em, x, grad);
        double gq1 = grad[0] * x[ARM_QD1], gq2 = grad[1] * x[ARM_QD2];
        g[G_APEX] = gq1 + gq2 - (1e-6 * (fabs(gq1) + fabs(gq2)) + 1e-12 * em->p[P_L1]);
    }
}

/* The jump map while taut: slack (release), at rest along the set, a stop reached, or the
 * servos starting it moving from rest. */
static void taut_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                      const double *u, const int *fired)
{
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    double before[ARM_NX];
    memcpy(before, x, sizeof before);
    if (ed->aux[ARM_AUX_DIR1] != 0.0) {
        if (fired[G_STRETCH]) { /* slack: from the set itself, so its guard starts armed */
            if (stretch_guard(em, x) < 0.0)
                place_taut(em, x, 0);
            try_release(em, ed, t, x, u, 1);
            return;
        }
        int hit = 0;
        for (int j = 0; j < 2; j++)
            if (jc.limited && (fired[5 * j + 3] || fired[5 * j + 4])) {
                x[ARM_Q1 + j] = fired[5 * j + 3] ? jc.q_min[j] : jc.q_max[j];
                hit |= 1 << j;
                rs_emit_event(ed, ARM_EV_STOP, t, j + 1, before, x, ARM_NX);
            }
        if (!hit && !fired[2])
            return;
        /* the stopped servo put on its stop moved the elbows off u = 2 L2 by the root's
         * tolerance: back on the set with it held, else the set's stabilisation drove the
         * pair back into the stop from rest, a stop every 2 us without end */
        if (hit)
            place_taut(em, x, hit);
        x[ARM_QD1] = x[ARM_QD2] = 0.0; /* a stop holds the set's one freedom; or at rest */
        arm_saturation_from_values(em, ed, x, u);
        taut_resolve(em, ed, x, u);
    } else if (fired[0] || fired[1]) {
        taut_resolve(em, ed, x, u); /* the servos overcome the friction: it moves */
    } else if (fired[G_STRETCH]) {
        try_release(em, ed, t, x, u, 0);
        return;
    } else {
        return;
    }
    try_release(em, ed, t, x, u, 0);
}

static void pa_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                    const double *u, const int *fired)
{
    if (ed->mode == MODE_STRETCHED) {
        arm_saturation_jump(ed, fired + ARM_G_SAT);
        taut_jump(em, ed, t, x, u, fired);
        return;
    }
    if (fired[G_STRETCH]) {
        stretch(em, ed, t, x, u);
        return;
    }
    arm_jump(em, ed, t, x, u, pa_dynamics, fired);
}

static void pa_settle(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                      const double *u)
{
    if (ed->mode == MODE_STRETCHED) {
        arm_settle_integrals(em, ed, x);
        arm_saturation_from_values(em, ed, x, u);
        double gap = stretch_guard(em, x);
        if (gap < 0.0) /* new parameters: the linkage is shorter than the arm's pose */
            stretch(em, ed, t, x, u);
        else { /* let go if pulled back, or if new parameters slackened the linkage */
            taut_resolve(em, ed, x, u);
            if (try_release(em, ed, t, x, u, gap > 1e-9 * em->p[P_L2])) {
                /* let go with a servo on its stop moving into it: stopped there at once, as
                 * arm_settle stops it, not by its guard a moment later */
                arm_joints_t jc;
                arm_joints_from(em, &jc);
                int hit = 0;
                for (int j = 0; j < 2; j++) {
                    double q = x[ARM_Q1 + j], qd = x[ARM_QD1 + j];
                    hit |= ((q <= jc.q_min[j] && qd < 0) || (q >= jc.q_max[j] && qd > 0)) << j;
                }
                if (hit)
                    arm_update(em, ed, t, x, u, pa_dynamics, hit, 0);
            }
        }
        return;
    }
    if (stretch_guard(em, x) <= 0.0) {
        arm_settle_integrals(em, ed, x);
        stretch(em, ed, t, x, u); /* settles the saturation states too */
        return;
    }
    arm_settle(em, ed, t, x, u, pa_dynamics);
}

/* Starting to move along the stretched set from rest its way s0: a change of a rate whose
 * tangential part goes against s0 slides the other way and comes back to rest along the set
 * (its rates zeroed there) at tau = -sigma_t / a_t, a_t the tangential acceleration of that
 * motion, and starts again: the motion delayed by tau, the rates' change -qdd tau. A servo on
 * its stop moved into it is stopped with the other at once: no change. */
/* The servos' free accelerations at x with the rates' signs of qd (0: at rest, resolved) */
static void free_accel(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                       const double *u, const double qd[2], double a[2])
{
    double y[ARM_NX], M[2][2], b[2], dir[2], lam[2];
    int st[2];
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    memcpy(y, x, sizeof y);
    for (int c = 0; c < 2; c++)
        y[ARM_QD1 + c] = qd[c] > 0 ? DBL_MIN : qd[c] < 0 ? -DBL_MIN : 0.0;
    pa_dynamics(em, ed, y, u, M, b);
    arm_resolve(M, b, &jc, y, st, dir);
    const double q0[2] = {y[ARM_QD1], y[ARM_QD2]};
    arm_accel(M, b, &jc, st, dir, q0, a, lam);
}

/* Starting to move along the stretched set from rest its way s0 (taut accelerations qb), a
 * change sigma of rate j against it whose motion lets the linkage go and stretches it
 * (g_j sigma > 0, g = grad u): the stretch guard has the slack S = 2 L2 STRETCH_SLACK, and the
 * linkage stretched by the flight's first part, of the order of sigma^2, stays within it as
 * sigma -> 0 (parallel_arm 5150031496: below about 2e-4 rad/s), so no impact takes
 * the part across the set at once: the servos fly free from qd = sigma e_j, each coming to
 * rest as its friction and load take its rate and resolving there, until every rate goes the
 * way of their common acceleration a: qd = a t + dv from then on (dv of the order of sigma).
 * The linkage pulled by a is taut (u = 2 L2 + S) at tau* = sqrt(2 S / g.a) - g.dv / g.a, far
 * later than that first part, where the impact takes P of the rates (P: their part along
 * M^-1 g, P a the taut accelerations), and it goes on along s0: the rates' change
 * P dv + (P a - qb) dtau*, dtau* = -g.dv / g.a; the angles' change is of the order of
 * tau* (0.1 us) per unit sigma. Per unit sigma. (Applying the impact at once, the limit
 * of the other order, S -> 0 first, is what the map does only where sigma^2 stretches it
 * beyond S: parallel_arm 5150031496's rate 2, 0.220 at sigma of 3e-4 rad/s and above,
 * 0.1416 from 1e-4 down to 1e-8.) g = grad u, mi the servos' inverse inertias and gmg = g M^-1 g
 * are the caller's (taut_release_excursion). */
static int taut_stretch_excursion(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                                  const double *x, const double *u, int j, double sg, double s0,
                                  const double *qb, const double g[2], const double mi[2],
                                  double gmg, double *col)
{
    double a[2], v[2] = {0.0, 0.0}, tau[2], t = 0.0;
    v[j] = sg;
    int settled = 0;
    for (int it = 0; it < 6 && !settled; it++) {
        free_accel(em, ed, x, u, v, a);
        double tr = INFINITY;
        int rest = -1;
        for (int c = 0; c < 2; c++)
            if (v[c] != 0.0 && a[c] * v[c] < 0 && -v[c] / a[c] < tr)
                tr = -v[c] / a[c], rest = c;
        if (!isfinite(tr)) {
            settled = 1;
            break;
        }
        for (int c = 0; c < 2; c++)
            v[c] += a[c] * tr;
        t += tr;
        v[rest] = 0.0;
    }
    if (!settled)
        return -1;
    double dv[2], ga = 0.0, gdv = 0.0, pa[2], pdv[2], vt = 0.0;
    for (int c = 0; c < 2; c++) {
        dv[c] = v[c] - a[c] * t;
        ga += g[c] * a[c];
        gdv += g[c] * dv[c];
    }
    if (!(ga > 0))
        return -1; /* not pulled taut again by the flight */
    taut_tangent(em, x, tau);
    for (int c = 0; c < 2; c++) {
        pa[c] = a[c] - mi[c] * g[c] * ga / gmg;
        pdv[c] = dv[c] - mi[c] * g[c] * gdv / gmg;
        vt += tau[c] * pa[c];
    }
    if (!(vt * s0 > 0))
        return -1; /* taut again moving against s0 */
    for (int r = 0; r < ARM_NX; r++)
        col[r] = 0.0;
    for (int c = 0; c < 2; c++)
        col[ARM_QD1 + c] = (pdv[c] - (pa[c] - qb[c]) * gdv / ga) / sg;
    return 0;
}

/* Starting to move along the stretched set from rest its way s0 (taut accelerations qb), a
 * change sigma of rate j against it whose motion lets the linkage go and slackens it
 * (stretching it: taut_stretch_excursion; P: the part along M^-1 g, g = grad u): the
 * servos fly free, each coming to rest as its friction and load take its rate, and resolving
 * there, until the linkage is taut again at tau (the gap u - 2 L2 = g . dq, dq of the order of
 * sigma^2); that impact takes P of the rates v(tau), and it goes on along s0: the rates' change
 * P v(tau) - qb tau. Per unit sigma (the flight's times and rates scale with it). */
static int taut_release_excursion(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                                  const double *x, const double *u, int j, int sign, double s0,
                                  const double *qb, double *col)
{
    double g[2], a[2], v[2] = {0.0, 0.0}, tau[2], mi[2], gmg = 0.0, gv = 0.0, gap = 0.0, t = 0.0;
    double sg = sign; /* sigma per unit: its sign */
    elbow_gap(em, x, g);
    for (int c = 0; c < 2; c++) {
        mi[c] = 1.0 / em->p[P_J + c];
        gmg += g[c] * g[c] * mi[c];
    }
    if (!(gmg > 0))
        return -1;
    if (g[j] * sg > 0)
        return taut_stretch_excursion(em, ed, x, u, j, sg, s0, qb, g, mi, gmg, col);
    v[j] = sg;
    int done = 0;
    for (int it = 0; it < 6 && !done; it++) {
        free_accel(em, ed, x, u, v, a);
        double gva = g[0] * v[0] + g[1] * v[1], gaa = g[0] * a[0] + g[1] * a[1];
        double A = 0.5 * gaa, tg = INFINITY, tr = INFINITY;
        int rest = -1;
        /* the next time the gap closes from slack: gap + gva t + A t^2 = 0, t > 0 */
        if (A != 0.0) {
            double disc = gva * gva - 4.0 * A * gap;
            if (disc >= 0) {
                double r1 = (-gva - sqrt(disc)) / (2.0 * A), r2 = (-gva + sqrt(disc)) / (2.0 * A);
                double lo = fmin(r1, r2), hi = fmax(r1, r2);
                double slope_lo = gva + 2.0 * A * lo, slope_hi = gva + 2.0 * A * hi;
                if (lo > 1e-300 * fabs(sg) && slope_lo > 0)
                    tg = lo;
                else if (hi > 0 && slope_hi > 0)
                    tg = hi;
            }
        } else if (gva > 0 && gap <= 0) {
            tg = -gap / gva;
        }
        if (gap == 0.0 && gva <= 0 && !(gaa > 0) && tg == 0.0)
            tg = INFINITY;
        for (int c = 0; c < 2; c++)
            if (v[c] != 0.0 && a[c] * v[c] < 0 && -v[c] / a[c] < tr)
                tr = -v[c] / a[c], rest = c;
        if (!isfinite(tg) && !isfinite(tr))
            return -1; /* neither taut again nor at rest: it leaves */
        double dt = fmin(tg, tr);
        gap += gva * dt + A * dt * dt;
        for (int c = 0; c < 2; c++)
            v[c] += a[c] * dt;
        t += dt;
        if (tg <= tr)
            done = 1;
        else
            v[rest] = 0.0;
    }
    if (!done)
        return -1;
    gv = g[0] * v[0] + g[1] * v[1];
    taut_tangent(em, x, tau);
    double vt = 0.0;
    for (int r = 0; r < ARM_NX; r++)
        col[r] = 0.0;
    for (int c = 0; c < 2; c++) {
        double pv = v[c] - mi[c] * g[c] * gv / gmg;
        vt += tau[c] * pv;
        col[ARM_QD1 + c] = (pv - qb[c] * t) / sg;
    }
    if (!(vt * s0 > 0))
        return -1; /* taut again moving against s0 */
    return 0;
}

/* H d, H the Hessian of the elbows' distance u(q), by central differences of its gradient */
static void gap_hessian_times(const rs_entity_model_t *em, const double *x, const double d[2],
                              double hd[2])
{
    double y[ARM_NX], gp[2], gm[2], e = 1e-6 / fmax(1.0, fmax(fabs(d[0]), fabs(d[1])));
    memcpy(y, x, sizeof y);
    for (int c = 0; c < 2; c++)
        y[ARM_Q1 + c] = x[ARM_Q1 + c] + e * d[c];
    elbow_gap(em, y, gp);
    for (int c = 0; c < 2; c++)
        y[ARM_Q1 + c] = x[ARM_Q1 + c] - e * d[c];
    elbow_gap(em, y, gm);
    for (int c = 0; c < 2; c++)
        hd[c] = (gp[c] - gm[c]) / (2.0 * e);
}

static int taut_excursion(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                          const double *x, const double *u, int i, int sign, double *col)
{
    double s0 = ed->aux[ARM_AUX_DIR1], tau[2], qb[2], qs[2];
    int j = i < ARM_QD1 ? i - ARM_Q1 : i - ARM_QD1;
    int moving = x[ARM_QD1] != 0.0 || x[ARM_QD2] != 0.0;
    arm_joints_t jc;
    if (moving && i >= ARM_QD1)
        return -1;
    arm_joints_from(em, &jc);
    for (int r = 0; r < ARM_NX; r++)
        col[r] = 0.0;
    if (i < ARM_QD1) {
        /* an angle moved so as to slacken the linkage: the servos, free, pull it taut again
         * after a flight of tau ~ sqrt(change), whose impact takes the velocity along M^-1 g
         * (g = grad u) by which the free flight differs from the taut motion: the angles end
         * moved by the M-weighted projection of the change onto the set, e_j - g_j M^-1 g /
         * (g M^-1 g); the rates by what the servos' damping took over the flight and, moving,
         * by the normal turning with the set over the flight (the impact takes the part along
         * M^-1 g at its end, not at its start: g_j M^-1 H v / (g M^-1 g), H the Hessian of u),
         * less their part along M^-1 g, and by the set's normal at the pose moved to
         * (-M^-1 g (v H dq) / (g M^-1 g)) */
        double g[2], mi[2], gmg = 0.0, w[2], gw = 0.0, hv[2] = {0.0, 0.0}, hd[2], vhd = 0.0;
        const double v[2] = {x[ARM_QD1], x[ARM_QD2]};
        elbow_gap(em, x, g);
        if (!(sign * g[j] < 0))
            return -1; /* stretching it: put back on the set by the map */
        if (moving && !(taut_motion_along(em, ed, x, u, s0, qb) > 0.0))
            return -1; /* not pulled taut again */
        for (int c = 0; c < 2; c++) {
            mi[c] = 1.0 / em->p[P_J + c];
            gmg += g[c] * g[c] * mi[c];
        }
        if (!(gmg > 0))
            return -1;
        if (moving)
            gap_hessian_times(em, x, v, hv);
        for (int c = 0; c < 2; c++) {
            double damp = em->p[ARM_P_MU_V + c];
            if (em->p[ARM_P_MODE + c] == ARM_PID && ed->aux[ARM_AUX_SAT1 + c] == 0.0 &&
                em->p[ARM_P_TAU_MAX + c] > 0)
                damp += em->p[ARM_P_KD + c];
            col[ARM_Q1 + c] = (c == j) - g[j] * g[c] * mi[c] / gmg;
            w[c] = (damp * mi[c] * g[c] + hv[c]) * mi[c] * g[j] / gmg;
            gw += g[c] * w[c];
        }
        if (moving) {
            const double dq[2] = {col[ARM_Q1], col[ARM_Q1 + 1]};
            gap_hessian_times(em, x, dq, hd);
            vhd = v[0] * hd[0] + v[1] * hd[1];
        }
        for (int c = 0; c < 2; c++)
            col[ARM_QD1 + c] = w[c] - mi[c] * g[c] * (gw + vhd) / gmg;
        return 0;
    }
    if (jc.limited && ((x[i - 2] <= jc.q_min[j] && sign < 0) || (x[i - 2] >= jc.q_max[j] && sign > 0)))
        return 0;
    taut_tangent(em, x, tau);
    if (!(sign * tau[j] * s0 < 0))
        return -1; /* along the motion: it goes on */
    taut_motion_along(em, ed, x, u, s0, qb);
    if (taut_motion_along(em, ed, x, u, -s0, qs) < 0.0)
        return taut_release_excursion(em, ed, x, u, j, sign, s0, qb, col);
    double a = tau[0] * qs[0] + tau[1] * qs[1];
    if (!(a * s0 > 0))
        return -1; /* it does not come back */
    for (int c = 0; c < 2; c++)
        col[ARM_QD1 + c] = qb[c] * tau[j] / a;
    return 0;
}

/* At rest on the stretched set held by the servos' dry friction (no stop): an angle moved so
 * as to slacken the linkage lets the servos fly free at a (their accelerations let go) until
 * it is taut again, tau^2 / 2 = -g_j change / (g . a) later (g = grad u), moved by
 * change e_j - g_j a / (g . a); the impact leaves the velocity along the set,
 * v_t = tau t . (a - M^-1 g (g . a) / (g M^-1 g)) (t the set's unit tangent), which friction
 * takes at the deceleration a_t over v_t^2 / (2 |a_t|) along the set. Per unit change. */
static int rest_slack_excursion(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                                const double *x, const double *u, int i, int sign, double *col)
{
    int j = i - ARM_Q1, st[2];
    double g[2], a[2], dir[2], lam[2], M[2][2], b[2], tau[2], qs[2], mi[2], gmg = 0.0, ga = 0.0;
    const double qd[2] = {0.0, 0.0};
    arm_joints_t jc;
    if (i > ARM_Q2 || x[ARM_QD1] != 0.0 || x[ARM_QD2] != 0.0)
        return -1;
    elbow_gap(em, x, g);
    if (!(sign * g[j] < 0))
        return -1; /* stretching it: put back on the set by the map */
    arm_joints_from(em, &jc);
    pa_dynamics(em, ed, x, u, M, b);
    arm_resolve(M, b, &jc, x, st, dir);
    arm_accel(M, b, &jc, st, dir, qd, a, lam);
    for (int c = 0; c < 2; c++) {
        mi[c] = 1.0 / M[c][c];
        gmg += g[c] * g[c] * mi[c];
        ga += g[c] * a[c];
    }
    if (!(ga > 0) || !(gmg > 0))
        return -1; /* not pulled taut again */
    taut_tangent(em, x, tau);
    double wt = 0.0, slide = 0.0;
    for (int c = 0; c < 2; c++)
        wt += tau[c] * (a[c] - mi[c] * g[c] * ga / gmg);
    if (wt != 0.0) {
        double s = wt > 0 ? 1.0 : -1.0;
        taut_motion_along(em, ed, x, u, s, qs);
        double at = tau[0] * qs[0] + tau[1] * qs[1];
        if (!(s * at < 0))
            return -1; /* it slides on */
        slide = s * wt * wt * -g[j] / (ga * fabs(at));
    }
    for (int r = 0; r < ARM_NX; r++)
        col[r] = 0.0;
    for (int c = 0; c < 2; c++)
        col[ARM_Q1 + c] = (c == j) - g[j] * a[c] / ga + tau[c] * slide;
    return 0;
}

/* rs_robot_t.excursion: arm_excursion with this arm's dynamics */
static int pa_excursion(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                        const double *u, int i, int sign, double *col)
{
    if (ed->mode == MODE_STRETCHED) {
        /* at rest on the stretched set, held by the servos' dry friction or a stop: a change of
         * the rates leaves it across the set (the taut linkage's impact takes that part) and
         * along it (friction or the stop brings it back to rest), within a time of the order
         * of the change, the angles moved by its square */
        if (i > ARM_QD2)
            return -1;
        if (ed->aux[ARM_AUX_DIR1] != 0.0)
            return taut_excursion(em, ed, x, u, i, sign, col);
        if (i < ARM_QD1) {
            /* an angle, with a servo on its stop: moved so as to stretch the linkage, the pose
             * is put back on the set with that servo kept on its stop (the set and the stop
             * meet in one pose); moved so as to slacken it, the servos pull it taut again
             * and the stop takes the motion along the set: back where it was */
            arm_joints_t jc;
            int stopped = 0;
            arm_joints_from(em, &jc);
            for (int j = 0; j < 2; j++)
                stopped |= x[ARM_Q1 + j] <= jc.q_min[j] || x[ARM_Q1 + j] >= jc.q_max[j];
            if (!stopped)
                return rest_slack_excursion(em, ed, x, u, i, sign, col);
        }
        for (int r = 0; r < ARM_NX; r++)
            col[r] = 0.0;
        return 0;
    }
    double grad[2];
    int j = i - ARM_Q1;
    if (i < ARM_QD1 && ed->mode < ARM_JOINT_MODES && x[ARM_QD1] == 0.0 && x[ARM_QD2] == 0.0 &&
        stretch_guard(em, x) <= 4e-12 * em->p[P_L2] &&
        (elbow_gap(em, x, grad), sign * grad[j] > 0)) {
        /* at rest on the stretched set, just let go: an angle moved so as to stretch the
         * linkage is put back on the set along grad u (both servos), and let go again; a
         * servo that moves off its stop so falls back onto it (or sticks there), one that
         * would move into it keeps the pose where it was */
        arm_joints_t jc;
        int st[2], at[2];
        double dir[2], M[2][2], b[2], qdd[2], lam[2], n2 = grad[0] * grad[0] + grad[1] * grad[1];
        const double qd[2] = {0.0, 0.0};
        arm_joints_from(em, &jc);
        for (int c = 0; c < 2; c++) /* on a stop: -1 lower, +1 upper, 0 none */
            at[c] = !jc.limited                        ? 0
                    : x[ARM_Q1 + c] <= jc.q_min[c] ? -1
                    : x[ARM_Q1 + c] >= jc.q_max[c] ? 1
                                                   : 0;
        if (at[j] == sign)
            return -1; /* into its own stop: the map keeps it there */
        arm_status_of(ed->mode, st);
        arm_dirs_of(ed, dir);
        pa_dynamics(em, ed, x, u, M, b);
        arm_accel(M, b, &jc, st, dir, qd, qdd, lam);
        for (int r = 0; r < ARM_NX; r++)
            col[r] = 0.0;
        for (int c = 0; c < 2; c++)
            col[ARM_Q1 + c] = (c == j) - grad[c] * grad[j] / n2;
        for (int c = 0; c < 2; c++) {
            if (!at[c])
                continue;
            if (sign * col[ARM_Q1 + c] * at[c] > 0) { /* into the stop: kept there, the pose
                                                         put back */
                col[ARM_Q1] = col[ARM_Q1 + 1] = 0.0;
                return 0;
            }
            if ((st[c] == ARM_MIN || st[c] == ARM_MAX) &&
                !(jc.mu_D[c] > 0 && fabs(lam[c]) <= jc.mu_D[c]))
                col[ARM_Q1 + c] = 0.0; /* held there: falls back onto its stop */
        }
        return 0;
    }
    if (i >= ARM_QD1 && i <= ARM_QD2 && ed->mode < ARM_JOINT_MODES && x[ARM_QD1] == 0.0 &&
        x[ARM_QD2] == 0.0 && stretch_guard(em, x) <= 4e-12 * em->p[P_L2]) {
        /* at rest on the stretched set, just let go: a rate whose tangential part moves the
         * linkage along the set its way s keeps it taut where that motion's pull c_s >= 0;
         * friction brings it to rest (the rates zeroed) at tau = -sigma_t / a_t and it is let
         * go then: the release delayed by tau, the rates' change -qdd tau */
        double tau[2], qs[2], M[2][2], b[2], qdd[2], lam[2], dir[2];
        int st[2];
        const double qd[2] = {0.0, 0.0};
        arm_joints_t jc;
        j = i - ARM_QD1;
        taut_tangent(em, x, tau);
        if (tau[j] == 0.0)
            return arm_excursion(em, ed, x, u, pa_dynamics, i, sign, col);
        double sd = sign * tau[j] > 0 ? 1.0 : -1.0;
        if (!(taut_motion_along(em, ed, x, u, sd, qs) >= 0.0))
            return arm_excursion(em, ed, x, u, pa_dynamics, i, sign, col); /* let go at once */
        double at = tau[0] * qs[0] + tau[1] * qs[1];
        if (!(sd * at < 0))
            return -1; /* it moves on along the set */
        arm_joints_from(em, &jc);
        arm_status_of(ed->mode, st);
        arm_dirs_of(ed, dir);
        pa_dynamics(em, ed, x, u, M, b);
        arm_accel(M, b, &jc, st, dir, qd, qdd, lam);
        for (int r = 0; r < ARM_NX; r++)
            col[r] = 0.0;
        for (int c = 0; c < 2; c++)
            col[ARM_QD1 + c] = qdd[c] * tau[j] / at;
        return 0;
    }
    return arm_excursion(em, ed, x, u, pa_dynamics, i, sign, col);
}

static void pa_sense(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                     const double *x, const double *u, double dt)
{
    (void)t, (void)dt;
    parallel_fk(em->p[P_L0], em->p[P_L1], em->p[P_L2], x + ARM_Q1, x + ARM_QD1, ed->s + S_X,
                ed->s + S_VX);
    ed->s[S_TAU1] = arm_applied_torque(em, ed, 0, u[0], x);
    ed->s[S_TAU2] = arm_applied_torque(em, ed, 1, u[1], x);
    double stick[2] = {0, 0}, limit[2] = {0, 0};
    if (ed->mode != MODE_STRETCHED)
        arm_joint_sensors(ed->mode, stick, limit);
    ed->s[S_STICK1] = stick[0];
    ed->s[S_STICK2] = stick[1];
    ed->s[S_LIMIT1] = limit[0];
    ed->s[S_LIMIT2] = limit[1];
    ed->s[S_STRETCHED] = ed->mode == MODE_STRETCHED;
    ed->s[S_STRETCH] = fmin(elbow_gap(em, x, NULL) / (2.0 * em->p[P_L2]), 1.0);
}

/* Inverse kinematics with the reasons a point is out of reach: 0, or RS_ERANGE with st set. */
static int pa_solve(const rs_entity_model_t *em, double x, double y, double q[2],
                    rs_status_t *st)
{
    double L0 = em->p[P_L0], L1 = em->p[P_L1], L2 = em->p[P_L2];
    if (parallel_ik(L0, L1, L2, x, y, q) < 0) {
        double G = rs_hypot(x - 0.5 * L0, y), H = rs_hypot(x + 0.5 * L0, y);
        return rs_fail(st, RS_ERANGE,
                       "target (%g, %g) is out of reach: its distances to the servos, H = %g m "
                       "(left) and G = %g m (right), must both lie in [|L1 - L2|, L1 + L2] = "
                       "[%g, %g] m",
                       x, y, H, G, fabs(L1 - L2), L1 + L2);
    }
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    for (int j = 0; j < 2; j++)
        if (q[j] < jc.q_min[j] || q[j] > jc.q_max[j])
            return rs_fail(st, RS_ERANGE,
                           "target (%g, %g) needs theta%d = %g rad, outside the stops [%g, %g] "
                           "rad",
                           x, y, j + 1, q[j], jc.q_min[j], jc.q_max[j]);
    double p[2];
    parallel_fk(L0, L1, L2, q, NULL, p, NULL);
    double tol = 1e-9 * (L0 + L1 + L2);
    if (fabs(p[0] - x) > tol || fabs(p[1] - y) > tol)
        return rs_fail(st, RS_ERANGE,
                       "target (%g, %g) lies above the line through the elbows the chapter's "
                       "inverse kinematics gives; the linkage cannot fold through to it",
                       x, y);
    return 0;
}

/* target = (x, y), y down: PID setpoints through the chapter's inverse kinematics. */
static int pa_target(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                     const double *target, int n, double *u, rs_status_t *st)
{
    (void)ed;
    if (n != 2)
        return rs_fail(st, RS_EINVAL,
                       "'%s' (parallel_arm) takes a target (x, y) (y down; the chapter's inverse "
                       "kinematics has a single solution, no elbow choice), got %d values",
                       em->name, n);
    for (int j = 0; j < 2; j++)
        if (em->p[ARM_P_MODE + j] != ARM_PID)
            return rs_fail(st, RS_EPRECOND,
                           "servo %d of '%s' is in torque mode; a Cartesian target becomes PID "
                           "setpoints, so set '%s.actuator_mode' to 1, 1 (PID) first",
                           j + 1, em->name, em->name);
    return pa_solve(em, target[0], target[1], u, st);
}

static int pa_reachable(const rs_entity_model_t *em, double x, double y)
{
    double q[2];
    return pa_solve(em, x, y, q, NULL) == 0;
}

/* Forward kinematics (parallel_fk); stretch u / (2 L2), the distance between the
 * elbows over its largest value, 1 with the distal links in line. RS_EINVAL when the linkage
 * does not assemble (u > 2 L2). */
static int pa_joints_to_point(const rs_entity_model_t *em, const double *q, double p[2],
                              double *stretch)
{
    double L0 = em->p[P_L0], L1 = em->p[P_L1], L2 = em->p[P_L2];
    if (parallel_fk(L0, L1, L2, q, NULL, p, NULL) < 0)
        return RS_EINVAL;
    if (stretch)
        *stretch = parallel_u(L0, L1, q, NULL) / (2.0 * L2);
    return 0;
}

/* Boundary samples: the chapter's sampled workspace is the image of the configuration square
 * [theta_min, theta_max]^2; its boundary is traced here as the image of the square's edges
 * (counter-clockwise in (t1, t2)), leaving out configurations the linkage cannot assemble. */
static int pa_workspace(const rs_entity_model_t *em, double *xy, int max_points)
{
    double L0 = em->p[P_L0], L1 = em->p[P_L1], L2 = em->p[P_L2];
    const double *lo = em->p + ARM_P_THETA_MIN, *hi = em->p + ARM_P_THETA_MAX;
    double corners[5][2] = {{lo[0], lo[1]}, {hi[0], lo[1]}, {hi[0], hi[1]}, {lo[0], hi[1]},
                            {lo[0], lo[1]}};
    int n = 0;
    for (int i = 0; i < max_points; i++) {
        double s = 4.0 * i / max_points;
        int e = (int)s;
        double w = s - e;
        double q[2] = {corners[e][0] + w * (corners[e + 1][0] - corners[e][0]),
                       corners[e][1] + w * (corners[e + 1][1] - corners[e][1])};
        if (parallel_fk(L0, L1, L2, q, NULL, xy + 2 * n, NULL) == 0)
            n++;
    }
    return n;
}

/* the parameters that choose (rs_robot_t.choices) */
static const char *const pa_choices[] = {"actuator_mode", NULL};

const rs_robot_t rs_robot_parallel_arm = {
    .kind = "parallel_arm",
    .doc = "dual two-link parallel (2D delta) arm on PID/torque servos with stops",
    .nx = ARM_NX,
    .state = pa_state,
    .nu = 2,
    .actuators = pa_actuators,
    .ns = NS,
    .sensors = pa_sensors,
    .np = sizeof pa_params / sizeof pa_params[0],
    .params = pa_params,
    .nmodes = ARM_JOINT_MODES + 1,
    .mode_names = pa_modes,
    .choices = pa_choices,
    .nevent_kinds = 6,
    .event_names = pa_events,
    .naux = ARM_NAUX,
    .aux_vars = arm_aux_vars,
    .erk_order = 5, /* Dormand-Prince 5(4): see bench_mujoco_serial_arm */
    .nwrench = 2,
    .wrench = pa_wrench,
    .nguards = pa_nguards,
    .validate = pa_validate,
    .admissible = pa_admissible,
    .init = pa_init,
    .derivs = pa_derivs,
    .guards = pa_guards,
    .jump = pa_jump,
    .settle = pa_settle,
    .holds = arm_holds,
    .excursion = pa_excursion,
    .sense = pa_sense,
    .target_to_commands = pa_target,
    .reachable = pa_reachable,
    .joints_to_point = pa_joints_to_point,
    .workspace = pa_workspace,
};
