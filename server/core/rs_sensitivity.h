/* Derivatives of a step (forward sensitivity analysis through a hybrid system's events).
 *
 * Over one Step the sensitivity matrix Phi = dx(t) / d(x0, u, p) is carried along: x0 the world
 * state before the Step, u its commands (all actuators, spec order: held over the Step), p named
 * model parameters. Between events Phi follows the variational equations
 *     Phi' = f_x Phi + [0 | f_u | f_p]
 * integrated with the state on a second integrator (rs_integrator.h; the world's tolerances
 * rtol and atol, no tighter than 1e-10 and 1e-12; Verner 8(7) where the world integrates with
 * order 8, by its erk_order or its robots' choice, and every robot gives its right-hand-side
 * Jacobian, else Dormand-Prince 5(4)), the right-hand side's Jacobians f_x, f_u, f_p from the
 * robots' jacobian callbacks where they have one (rs_robot_t.jacobian: the finger, the serial
 * arm, the brick and the differential drive in their hybrid modes), else, and for the parameters a callback does not
 * cover, by central differences of the robots' own derivs (step 6e-6 max(1, |z|): truncation
 * and rounding errors near 1e-10 relative). At an
 * event at time tau with guard g (falling through 0), jump map R, vector fields f- before and
 * f+ after, the saltation matrix (Aizerman & Gantmacher 1958; Hiskens & Pai 2000, eq. 11)
 *     Phi+ = R_x Phi- + R_z - (R_x f- - f+) (g_x Phi- + g_z) / (g_x f- + g_t)
 * (z = (u, p): the map's and the guard's own dependence on the commands and parameters), with
 * R_x, R_z, g_x, g_z, g_t by central differences of the robot's jump and guards. The maps at a
 * control step's start (settle after new commands, step_begin, advance: the hybrid bodies'
 * projection onto their constraints) are differentiated the same way, without a guard term.
 * A jump map is differentiated along its guard's surface (the inputs moved together with the
 * event-time shift they cause, x - f- dtau), where it is defined: R_x enters the saltation
 * matrix only there. Maps are differentiated within the mode they end in: at a mode's boundary
 * (a body on a contact constraint, a change off it leaving the mode) the one-sided difference
 * that stays in the mode is taken.
 *
 * Where the map is not differentiable the result says so instead of a number: a grazing event
 * (g_x f- + g_t ~ 0: the event time depends on the state like a square root), or guards of one
 * entity firing together whose event times depend differently on (x0, u, p) (a flat brick's two
 * corners: a tilt separates the impacts).
 *
 * The stepping code (step.c) calls its hooks (rs_step_hooks_t, rs_sens_hooks) while a world's
 * data carries them; nothing else changes in a step. */
#ifndef RS_SENSITIVITY_H
#define RS_SENSITIVITY_H

#include "rs_core.h"

typedef struct rs_sens rs_sens_t;

/* A sensitivity for model m and its data d with q named parameters ("finger.static_friction",
 * "arm.link_mass[1]"). Refused: a formulation other than the hybrid one (contact_model != 0,
 * RS_EUNIMPL naming the entity and formulation), schedules or a motion specification in force
 * (RS_EPRECOND: they change the commands within the Step), an unknown parameter (RS_ENOTFOUND /
 * RS_EINVAL naming it). NULL on failure. Attach it with d->hooks = rs_sens_hooks(s) for the
 * Step's duration. */
rs_sens_t *rs_sens_new(const rs_model_t *m, const rs_data_t *d, const char *const *params,
                       size_t q, rs_status_t *st);
void rs_sens_destroy(rs_sens_t **s);

/* The result after the Step: n (state), ncmd (commands), q (parameters); the n x (n + ncmd + q)
 * matrix, row-major, columns x0 then u then p. Returns 0, or a negative code when the
 * propagation failed (st says why; *differentiable is then 0 as well). *differentiable: 0 when
 * the map is not differentiable at this point, *why the reason; after simultaneous events the
 * columns of the inputs that would separate them are NaN and the others hold their
 * derivatives. */
int rs_sens_result(rs_sens_t *s, int *n, int *ncmd, int *q, const double **phi,
                   int *differentiable, const char **why, rs_status_t *st);

/* With on != 0, the flow's Jacobians by central differences of derivs even for robots that
 * give their own (rs_robot_t.jacobian): for tests and benches comparing the two. Before the
 * Step. */
void rs_sens_use_differences(rs_sens_t *s, int on);

/* The step hooks (rs_core.h) that carry s along: set d->hooks to them for the Step's duration
 * (and back to NULL after), once its commands are set. Owned by s. */
const rs_step_hooks_t *rs_sens_hooks(rs_sens_t *s);

#endif
