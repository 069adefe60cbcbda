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
 * drive it to the stretched position (guard 2 L2 - u falls through 0) the taut linkage stops
 * them there, like the diff-drive robot's contact: both rates are set to 0 (an inelastic stop)
 * and the arm stays "stretched" while the torques would pull the elbows further apart
 * (d2u/dt2 from rest >= 0); it is released when that pull falls through 0. Motion along the
 * stretched set (the taut chain swinging sideways) is not modelled. */
#include "arm_common.h"

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

/* Let go of a stretched linkage if the servos pull back; returns 1 if released. */
static int try_release(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                       const double *x, const double *u, int force)
{
    int st[2];
    double dir[2];
    double pull = stretch_pull(em, ed, x, u, st, dir);
    if (!force && pull >= 0.0)
        return 0;
    ed->mode = st[0] + 4 * st[1];
    ed->aux[ARM_AUX_DIR1] = dir[0];
    ed->aux[ARM_AUX_DIR2] = dir[1];
    rs_emit_event(ed, EV_UNSTRETCHED, t, pull, x, x, ARM_NX);
    return 1;
}

/* The linkage goes taut: place it exactly at u = 2 L2 (a few Newton steps along grad u, inside
 * the stops), stop both servos, log, and let go at once if the servos already pull back. */
static void stretch(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                    const double *u)
{
    double before[ARM_NX], grad[2], target = 2.0 * em->p[P_L2];
    memcpy(before, x, sizeof before);
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    for (int it = 0; it < 4; it++) {
        double err = elbow_gap(em, x, grad) - target, n2 = grad[0] * grad[0] + grad[1] * grad[1];
        if (err == 0.0 || !(n2 > 0))
            break;
        for (int j = 0; j < 2; j++) {
            double q = x[ARM_Q1 + j] - err * grad[j] / n2;
            x[ARM_Q1 + j] = fmin(fmax(q, jc.q_min[j]), jc.q_max[j]);
        }
    }
    x[ARM_QD1] = x[ARM_QD2] = 0.0;
    arm_saturation_from_values(em, ed, x, u); /* the rates jumped, and the PID's D term */
    ed->mode = MODE_STRETCHED;
    ed->aux[ARM_AUX_DIR1] = ed->aux[ARM_AUX_DIR2] = 0.0;
    rs_emit_event(ed, EV_STRETCHED, t, elbow_gap(em, x, NULL), before, x, ARM_NX);
    try_release(em, ed, t, x, u, 0);
}

static int pa_nguards(const rs_entity_model_t *em)
{
    (void)em;
    return ARM_NGUARDS + 1;
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
    xdot[ARM_Q1] = x[ARM_QD1]; /* the taut linkage holds the servos: qdd = 0 */
    xdot[ARM_Q2] = x[ARM_QD2];
    xdot[ARM_QD1] = 0.0;
    xdot[ARM_QD2] = 0.0;
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
        arm_saturation_guards(em, ed, x, u, g + ARM_G_SAT);
        g[G_STRETCH] = stretch_pull(em, ed, x, u, st, dir);
        return;
    }
    arm_guard_values(em, ed, x, u, pa_dynamics, g);
    g[G_STRETCH] = stretch_guard(em, x);
}

static void pa_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                    const double *u, const int *fired)
{
    if (ed->mode == MODE_STRETCHED) {
        arm_saturation_jump(ed, fired + ARM_G_SAT);
        if (fired[G_STRETCH])
            try_release(em, ed, t, x, u, 0);
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
        else /* let go if pulled back, or if new parameters slackened the linkage */
            try_release(em, ed, t, x, u, gap > 1e-9 * em->p[P_L2]);
        return;
    }
    if (stretch_guard(em, x) <= 0.0) {
        arm_settle_integrals(em, ed, x);
        stretch(em, ed, t, x, u); /* settles the saturation states too */
        return;
    }
    arm_settle(em, ed, t, x, u, pa_dynamics);
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
    .nevent_kinds = 6,
    .event_names = pa_events,
    .naux = ARM_NAUX,
    .aux_vars = arm_aux_vars,
    .erk_order = 5, /* Dormand-Prince 5(4): see bench_mujoco_serial_arm */
    .nwrench = 2,
    .wrench = pa_wrench,
    .nguards = pa_nguards,
    .validate = pa_validate,
    .init = pa_init,
    .derivs = pa_derivs,
    .guards = pa_guards,
    .jump = pa_jump,
    .settle = pa_settle,
    .sense = pa_sense,
    .target_to_commands = pa_target,
    .reachable = pa_reachable,
    .joints_to_point = pa_joints_to_point,
    .workspace = pa_workspace,
};
