/* Shared pieces of the two planar arms (serial_arm.c, parallel_arm.c; defined in arm_common.c,
 * declared here so the arms, the tasks, the mobile manipulator and the tests call the same
 * closed forms):
 *
 *   - the actuator law of Klamp't's "Actuator simulation": torque mode (the command is the
 *     torque) or PID mode tau = kP (qD - q) + kD (qD_dot - q_dot) + kI I with qD_dot = 0 and
 *     I = integral of (qD - q) dt a state variable; the torque is capped to [-tau_max, tau_max]
 *     in both modes. Entering and leaving the cap are events too (a saturation state per joint
 *     in aux, two guards per joint): a clamp inside the right-hand side would be a kink that an
 *     explicit method under tight tolerances can only cross with tiny steps, and fails on;
 *   - the two-joint hybrid solver: joint friction with Klamp't's stick-slip law (a joint sticks
 *     while the torque needed to hold it stays within mu_D; sliding, the friction torque is
 *     -sgn(q_dot) (mu_D + mu_V |q_dot|)) and hard joint stops (inelastic, by an impulse along the
 *     stopped joint), for any 2x2 mass matrix;
 *   - the kinematics of the "Example Robotic Systems" chapter: the serial two-link arm
 *     (forward kinematics, the atan2 inverse
 *     with both elbows, the Jacobian) and the dual two-link parallel arm (forward kinematics with
 *     the (a, b), (c, d), u, v formulas, inverse kinematics with G, H, alpha, beta, gamma, eta).
 *
 * Both arms share the state layout (theta1, theta2, theta1_dot, theta2_dot, I1, I2), the first
 * eleven rows of their parameter tables (ARM_P_* slots), the joint-status encoding of the hybrid
 * mode (mode = s1 + 4 s2, s in ARM_SLIP / ARM_STICK / ARM_MIN / ARM_MAX) and the first four event
 * kinds. */
#ifndef RS_ARM_COMMON_H
#define RS_ARM_COMMON_H

#include "../rs_robot.h"

/* ---- layout shared by both arms ------------------------------------------------------------ */

enum { ARM_Q1, ARM_Q2, ARM_QD1, ARM_QD2, ARM_I1, ARM_I2, ARM_NX };
enum { ARM_TORQUE = 0, ARM_PID = 1 };                 /* values of the actuator_mode parameter */
enum { ARM_SLIP, ARM_STICK, ARM_MIN, ARM_MAX };       /* joint status; mode = s1 + 4 s2 */
enum { ARM_EV_STICK, ARM_EV_SLIP, ARM_EV_STOP, ARM_EV_RELEASE };
/* aux: slip directions (+-1, 0 without dry friction); the actuator mode the integrals belong to;
 * the torque saturation state (+1 at +tau_max, -1 at -tau_max, 0 within the cap) */
enum { ARM_AUX_DIR1, ARM_AUX_DIR2, ARM_AUX_ACT1, ARM_AUX_ACT2, ARM_AUX_SAT1, ARM_AUX_SAT2, ARM_NAUX };

/* the private run variables, as a snapshot restore validates them */
extern const rs_aux_desc_t arm_aux_vars[ARM_NAUX];
#define ARM_JOINT_MODES 16
#define ARM_NGUARDS 14 /* five per joint for friction and stops, then two per joint for the cap */
#define ARM_G_SAT 10
#define ARM_NSAT_GUARDS 4 /* the cap's guards alone (arm_joint_events) */

/* parameter slots (two values each) and table rows common to both arms */
enum {
    ARM_P_MODE = 0, ARM_P_KP = 2, ARM_P_KI = 4, ARM_P_KD = 6, ARM_P_TAU_MAX = 8, ARM_P_MU_D = 10,
    ARM_P_MU_V = 12, ARM_P_THETA_MIN = 14, ARM_P_THETA_MAX = 16, ARM_P_THETA0 = 18,
    ARM_P_THETA_DOT0 = 20, ARM_P_END = 22
};
enum {
    ARM_PI_MODE, ARM_PI_KP, ARM_PI_KI, ARM_PI_KD, ARM_PI_TAU_MAX, ARM_PI_MU_D, ARM_PI_MU_V,
    ARM_PI_THETA_MIN, ARM_PI_THETA_MAX, ARM_PI_THETA0, ARM_PI_THETA_DOT0, ARM_PI_END
};

/* The joint names of the 16 joint-status combinations, "joint1,joint2", in mode order. */
#define ARM_MODE_NAMES(slip)                                                                  \
    slip "," slip, "stick," slip, "min," slip, "max," slip, slip ",stick", "stick,stick",     \
        "min,stick", "max,stick", slip ",min", "stick,min", "min,min", "max,min", slip ",max", \
        "stick,max", "min,max", "max,max"

/* ---- actuators ------------------------------------------------------------------------------- */

/* The torque joint j's actuator asks for before the cap: the command (torque mode) or the PID
 * law on the setpoint u (PID mode). Inline here, as the two below: every right-hand side
 * evaluation calls them, per joint. */
static inline double arm_raw_torque(const rs_entity_model_t *em, int j, double u, const double *x)
{
    const double *p = em->p;
    if (p[ARM_P_MODE + j] != ARM_PID)
        return u;
    return p[ARM_P_KP + j] * (u - x[ARM_Q1 + j]) - p[ARM_P_KD + j] * x[ARM_QD1 + j] +
           p[ARM_P_KI + j] * x[ARM_I1 + j];
}

/* The torque the actuator applies in the current saturation state: +-tau_max when saturated,
 * else the raw torque (exactly within the cap up to the root finder's tolerance). */
static inline double arm_actuator_torque(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                                         int j, double u, const double *x)
{
    double sat = ed->aux[ARM_AUX_SAT1 + j], cap = em->p[ARM_P_TAU_MAX + j];
    if (!(cap > 0))
        return 0.0; /* an actuator switched off */
    return sat > 0 ? cap : sat < 0 ? -cap : arm_raw_torque(em, j, u, x);
}

/* The applied torque as sensors report it: the same, clamped to the cap for good measure. */
double arm_applied_torque(const rs_entity_model_t *em, const rs_entity_data_t *ed, int j, double u,
                          const double *x);

/* Saturation states from the raw torques' values (after a discontinuity). */
void arm_saturation_from_values(const rs_entity_model_t *em, rs_entity_data_t *ed, const double *x,
                                const double *u);

/* Saturation guards g[2j], g[2j + 1]: within the cap, cap - raw and raw + cap (it saturates);
 * saturated, the raw torque's distance back inside (it leaves the cap). */
void arm_saturation_guards(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                           const double *u, double *g);

/* The saturation jump: switch the states whose guards fired (by the direction of crossing, so
 * that a root found exactly at the cap still switches). Returns whether any switched. */
int arm_saturation_jump(rs_entity_data_t *ed, const int *fired);

/* d/dt of the PID integrals: the error qD - q in PID mode, 0 in torque mode. */
static inline void arm_integral_rates(const rs_entity_model_t *em, const double *x,
                                      const double *u, double *xdot)
{
    for (int j = 0; j < 2; j++)
        xdot[ARM_I1 + j] = em->p[ARM_P_MODE + j] == ARM_PID ? u[j] - x[ARM_Q1 + j] : 0.0;
}

/* ---- joints: friction and stops -------------------------------------------------------------- */

typedef struct arm_joints {
    double mu_D[2], mu_V[2];
    int limited; /* joint stops at [q_min, q_max] */
    double q_min[2], q_max[2];
} arm_joints_t;

/* The joints' friction coefficients and stops from the entity's parameters. */
void arm_joints_from(const rs_entity_model_t *em, arm_joints_t *jc);

/* Whether the joints can have events of their own: dry friction (mu_D > 0) or stops. Without
 * them every joint always slides (arm_resolve has no other candidate) and the ten friction and
 * stop guards stay at 1 for ever, so an arm may register only the ARM_NSAT_GUARDS saturation
 * guards (its nguards is a function of the model: SetParams and a restore re-count them). */
int arm_joint_events(const rs_entity_model_t *em);

/* Whether joint status s holds the joint (stuck or at a stop) rather than letting it slide. */
int arm_held(int s);

/* rs_robot_t.holds for both arms: a joint's rate, while the joint is stuck by dry friction or
 * held at a stop. */
int arm_holds(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x, int i);

/* The torques a held joint's friction or stop can give: stuck [-mu_D, mu_D]; at the lower stop
 * the stop adds any positive torque, at the upper stop any negative one. */
void arm_held_range(const arm_joints_t *jc, int j, int s, double *lo, double *hi);

/* Joint accelerations for joint statuses st and slip directions dir, from M qdd = b + f + lam:
 * b holds every generalized torque but the joints' friction and stops (actuators, Coriolis,
 * gravity); sliding joints get f = -dir mu_D - mu_V q_dot (Klamp't); held joints have qdd = 0
 * and lam[j] is the friction/stop torque that holds them (0 for sliding joints). */
void arm_accel(const double M[2][2], const double b[2], const arm_joints_t *jc, const int st[2],
               const double dir[2], const double qd[2], double qdd[2], double lam[2]);

/* qdd = M^-1 r for a 2x2 M, Cramer's rule (arm_accel with both joints sliding). */
static inline void arm_solve2(const double M[2][2], const double r[2], double qdd[2])
{
    double det = M[0][0] * M[1][1] - M[0][1] * M[1][0];
    qdd[0] = (M[1][1] * r[0] - M[0][1] * r[1]) / det;
    qdd[1] = (M[0][0] * r[1] - M[1][0] * r[0]) / det;
}

/* The right-hand side while both joints slide (joint mode slip,slip; an arm without friction
 * and stops is never in another), from the module's M and b: r = b - dir mu_D - mu_V q_dot,
 * qdd = M^-1 r, the same arithmetic as arm_accel, so the result is bit for bit arm_derivs'.
 * Inline, for a robot's derivs to call beside its own dynamics (also inlined there): the hybrid
 * solver's copies, mode decoding and the call through arm_dynamics_fn are skipped. */
static inline void arm_slide_derivs(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                                    const double M[2][2], const double b[2], const double *x,
                                    const double *u, double *xdot)
{
    const double *p = em->p;
    double r[2];
    for (int j = 0; j < 2; j++)
        r[j] = b[j] - ed->aux[ARM_AUX_DIR1 + j] * p[ARM_P_MU_D + j] -
               p[ARM_P_MU_V + j] * x[ARM_QD1 + j];
    xdot[ARM_Q1] = x[ARM_QD1];
    xdot[ARM_Q2] = x[ARM_QD2];
    arm_solve2(M, r, xdot + ARM_QD1);
    arm_integral_rates(em, x, u, xdot);
}

/* Guards, five per joint j at g[5j..5j+4], each > 0 while nothing happens:
 *   0, 1  held: lam - lo and hi - lam (the hold breaks: stick -> slip, leaving a stop)
 *   2     sliding with mu_D > 0: dir * q_dot (the joint comes to rest: stick or reverse)
 *   3, 4  sliding with stops: q - q_min and q_max - q (it reaches a stop)
 * then the saturation guards at g[ARM_G_SAT..ARM_G_SAT + 3] (arm_saturation_guards). */
void arm_guards(const rs_entity_model_t *em, const rs_entity_data_t *ed, const arm_joints_t *jc,
                const int st[2], const double dir[2], const double *x, const double *u,
                const double lam[2], double *g);

/* Statuses for the joints at rest (q_dot exactly 0) consistent with the stick-slip law and the
 * stops; moving joints slide in their direction of motion. The candidates are tried with holding
 * first, so a tie (|lam| == mu_D exactly) holds. For a 2x2 positive definite M the consistent
 * choice is unique away from ties (it is the minimiser of a strictly convex function of qdd).
 * Returns 1, or 0 when no candidate fitted: at a load within rounding of the friction (a hold
 * guard's root) the hold can fail by an ulp of torque while sliding the way the load pushes
 * accelerates by rounding the other way; the joints are then held, but for a joint whose hold
 * the load exceeds, which slides the way it pushes. */
int arm_resolve(const double M[2][2], const double b[2], const arm_joints_t *jc, const double *x,
                int st[2], double dir[2]);

/* Inelastic stop of the joints in mask `hit` (bit j: joint j): an impulse P along those joints,
 * q_dot+ = q_dot- + M^-1 E P, that brings their rates to zero. With one joint j stopped, the
 * generalized momentum of the other joint k, (M q_dot)_k, is unchanged. */
void arm_impact(const double M[2][2], int hit, double *x);

/* The dynamics a module supplies: mass matrix and b (see arm_accel) at state x, commands u, in
 * the entity's current saturation state. */
typedef void (*arm_dynamics_fn)(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                                const double *x, const double *u, double M[2][2], double b[2]);

/* The two joint statuses of a hybrid mode (mode = s1 + 4 s2). */
void arm_status_of(int mode, int st[2]);

/* The two slip directions kept in aux. */
void arm_dirs_of(const rs_entity_data_t *ed, double dir[2]);

/* Accelerations in the entity's current joint mode (for derivs and guards). */
void arm_flow(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
              const double *u, arm_dynamics_fn dyn, double qdd[2], double lam[2], arm_joints_t *jc,
              int st[2], double dir[2]);

/* The right-hand side of both arms in the entity's current joint mode: xdot = (q_dot, qdd from
 * arm_flow, the PID integrals' rates). One call from a robot's derivs, so that the compiler
 * inlines arm_flow, arm_accel and the rest within arm_common.c. */
void arm_derivs(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                const double *u, arm_dynamics_fn dyn, double *xdot);

/* All ARM_NGUARDS guards in the entity's current joint mode (arm_guards). The holding torques
 * lam, which need the mass matrix and so the full dynamics, are computed only when a joint is
 * held: the guards of sliding joints read the state alone (for an arm without friction and
 * stops, every root evaluation then skips dyn and its sines and cosines). */
void arm_guard_values(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                      const double *u, arm_dynamics_fn dyn, double *g);

/* The jump map and the settle map of the joints, shared by both arms. `hit` has bit j set for a
 * joint that reached a stop (its guard 3 or 4 fired, or settle found it at or beyond a stop
 * moving into it); `rest` for a joint whose rate is to be zeroed (guard 2: it came to rest).
 * Positions are clamped to the stops, impacts applied (a held joint at a stop that the impulse
 * would push into its stop is stopped with it; a stuck joint cannot hold an impulse and moves),
 * the joints at rest resolved, the new mode stored and the switches logged (value: joint 1 or 2).
 */
void arm_update(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                const double *u, arm_dynamics_fn dyn, int hit, int rest);

/* The jump map of both arms at a root: saturation switches, then (if a friction or stop guard
 * fired) impacts, rates at rest and the joints' resolution. */
void arm_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
              const double *u, arm_dynamics_fn dyn, const int *fired);

/* rs_robot_t.excursion for both arms (joint modes; -1 in others), from the module's dyn:
 *   - a joint's rate at rest under dry friction (stuck, or breaking away the other way), moved
 *     to side sigma: it slides in mode M_sigma and comes back to rest at tau = -sigma / a_sigma
 *     (a_sigma its acceleration there), the others having moved by (f_sigma - f) tau: the
 *     saltation I + (f - f_sigma) e^T / a_sigma, f the flow of the mode it is back in;
 *   - the rate of a joint held at its stop, moved off it: it flies off to rest and, unless its
 *     dry friction holds the stop's load, back onto the stop, whose impact takes only its own
 *     rate and kicks the other joint by -M_kj / M_kk of it (unless that stops the other joint
 *     on its own stop), the other joint meanwhile accelerating as in the flight's modes: where
 *     it slides throughout, M_kj / M_kk per unit (its momentum (M q_dot)_k kept), as the
 *     impact of a change into the stop gives; 0 where the other joint is held in the mode;
 *   - a joint's angle moved off its stop: it sticks there (dry friction holding it: the angle
 *     kept), or falls back onto the stop, the other joint moving along with the momentum
 *     (M q_dot)_k kept but for the forces F_k = (dM/dt q_dot)_k + r_k that the flight's rate
 *     changes: per unit of angle, q_k by M_kj / M_kk and q_dot_k by -dF_k/dq_dot w / M_kk,
 *     w = e_j - (M_kj / M_kk) e_k the flight's direction of rates (the momentum kept). Where
 *     the stop's load past the friction, falling, slides it back no farther than the angle's
 *     difference step (6e-6 rad) before the friction holds it, it sticks: a change farther
 *     sticks short of the stop, and the boundary below which it falls back is on the point. */
int arm_excursion(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                  const double *u, arm_dynamics_fn dyn, int i, int sign, double *col);

/* Zero the PID integral of a joint whose actuator mode changed (the integral belongs to the
 * PID that built it up). */
void arm_settle_integrals(const rs_entity_model_t *em, rs_entity_data_t *ed, double *x);

/* Settle the joints after a discontinuity the root finder does not see (reset, commands,
 * parameters): integrals as above, saturation states from the new values, clamp joints outside
 * new stops, stop joints at a stop moving into it, and resolve the joints at rest. */
void arm_settle(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                const double *u, arm_dynamics_fn dyn);

/* Joint sensors: stuck (0/1) and at a stop (-1 lower, +1 upper, 0 none) for both joints. */
void arm_joint_sensors(int mode, double *stick, double *limit);

/* Validation shared by both arms: integer actuator modes, ordered stops, the start inside. */
int arm_validate_joints(const rs_entity_model_t *em, rs_status_t *st);

/* Whether the live state x has each limited joint within its stops under the parameters em (to
 * rounding, 1e-9 (1 + |q|) rad): 0, or RS_EPRECOND naming the joint and the angle past the
 * stop (rs_robot_t.admissible: a SetParams may not leave a joint past a stop). */
int arm_admissible_stops(const rs_entity_model_t *em, const double *x, rs_status_t *st);

/* Initial state shared by both arms: angles and rates from theta0, theta_dot0; integrals 0;
 * every joint sliding until the first settle resolves it. */
void arm_init(const rs_entity_model_t *em, rs_entity_data_t *ed, double *x);

/* ---- serial two-link arm kinematics ------------------------------------------------------- */

/* x = a2 cos(t1 + t2) + a1 cos t1, y = a2 sin(t1 + t2) + a1 sin t1 */
void serial_fk(double a1, double a2, const double q[2], double p[2]);

/* The Jacobian d(x, y)/d(t1, t2), row major. */
void serial_jacobian(double a1, double a2, const double q[2], double Jm[2][2]);

/* Inverse kinematics, the chapter's atan2 form:
 *   D = (x^2 + y^2 - a1^2 - a2^2) / (2 a1 a2),  t2 = atan2(-elbow sqrt(1 - D^2), D),
 *   t1 = atan2(y, x) - atan2(a2 sin t2, a1 + a2 cos t2).
 * elbow = +1 is the chapter's choice (t2 = atan2(-sqrt(1 - D^2), D), so t2 <= 0): "elbow up", the
 * elbow on the counter-clockwise side of the line from the base to (x, y) (above it when x > 0);
 * elbow = -1 is the mirror solution, "elbow down". Returns 0, or -1 when (x, y) is outside the
 * annulus |a1 - a2| <= r <= a1 + a2 (|D| > 1); D within 1e-12 of +-1 is rounded onto it. */
int serial_ik(double a1, double a2, double x, double y, int elbow, double q[2]);

/* ---- dual two-link parallel arm kinematics ------------------------------------------------ */

/* x right, y down, origin at the middle of the base; angles from the horizontal (0) to straight
 * down (pi/2), each measured outward from its own side. Elbows:
 *   A = (a, b) = (-L1 cos t1 - L0/2, L1 sin t1),  B = (c, d) = (L1 cos t2 + L0/2, L1 sin t2). */
void parallel_elbows(double L0, double L1, const double q[2], double A[2], double B[2]);

/* u = |B - A|, the distance between the elbows, and its gradient d u / d(t1, t2). */
double parallel_u(double L0, double L1, const double q[2], double grad[2]);

/* Forward kinematics, the chapter's formula:
 *   (x, y) = ((a + c)/2 + v (b - d)/u, (b + d)/2 + v (c - a)/u),  v = sqrt(L2^2 - u^2/4),
 * the end effector below the line through the elbows. Optionally its velocity for joint rates
 * qd (the derivative of the same formula). Returns 0, or -1 when the linkage cannot be assembled
 * (u > 2 L2; v is then taken as 0, the stretched position). */
int parallel_fk(double L0, double L1, double L2, const double q[2], const double qd[2], double p[2],
                double pdot[2]);

/* Inverse kinematics, the chapter's formulas:
 *   G = sqrt((x - L0/2)^2 + y^2), H = sqrt((x + L0/2)^2 + y^2),
 *   alpha = acos((G^2 + L0^2 - H^2)/(2 G L0)), beta = acos((H^2 + L0^2 - G^2)/(2 H L0)),
 *   gamma = acos((G^2 + L1^2 - L2^2)/(2 G L1)), eta = acos((H^2 + L1^2 - L2^2)/(2 H L1)),
 *   t1 = pi - beta - eta, t2 = pi - alpha - gamma.
 * Returns 0, or -1 when an acos argument leaves [-1, 1] (no elbow reaches the point). */
int parallel_ik(double L0, double L1, double L2, double x, double y, double q[2]);

#endif
