/* The robot module interface: one file per robot kind exports one rs_robot_t table, and the
 * registry (registry.c) lists them. Adding a robot is one file plus one line in RS_ROBOTS.
 *
 * The world concatenates the entities' state, command, sensor and guard vectors. Each callback
 * sees only its own entity's slices (x, xdot, g point at the entity's part).
 *
 * Hybrid dynamics, the contact-dynamics lecture's hybrid formulation:
 *   - flow:   derivs(x, u) in the current mode;
 *   - guards: g_i(x) > 0 while nothing happens; an event fires when g_i crosses from positive
 *             to <= 0 (ARKODE root finding, direction -1, exact time). A guard not armed in the
 *             current mode returns a positive constant (1.0);
 *   - jump:   at the root, jump() applies the jump map (impact law, mode switch) and logs events;
 *   - settle: after any discontinuity the world does not find by root finding (new commands or a
 *             new schedule, applied at a control-step boundary; a reset; new parameters), settle()
 *             picks the mode consistent with the state and the new inputs (e.g. stuck or sliding),
 *             logging the switch if it changes. A schedule is continuous at its knots, so a
 *             threshold crossed there is found by the guards, not by settle(). */
#ifndef RS_ROBOT_H
#define RS_ROBOT_H

#include "rs_core.h"

#include <math.h>

/* Contact feedback for one pair of bodies over the last control step (Klamp't's inContact,
 * hadContact, hadSeparation, hadPenetration, getContacts, meanContactForce), in the world's
 * plane: `other` names the other body ("ground", "object", ...). */
typedef struct rs_contact_info {
    const char *other;
    int in_contact, had_contact, had_separation, had_penetration;
    double point[2], normal[2]; /* a contact point and the normal into the entity's body */
    double mean_force[2];       /* mean contact force on the entity over the last step, N */
} rs_contact_info_t;

/* A state variable, actuator or sensor. */
typedef struct rs_var_desc {
    const char *name;
    const char *unit;
    double lower, upper; /* bounds; -INFINITY/INFINITY when unbounded */
    const char *doc;
} rs_var_desc_t;

/* A parameter: `len_max` values stored from `offset` in rs_entity_model_t.p. */
typedef struct rs_param_desc {
    const char *name;
    const char *unit;
    double lower, upper;  /* each value must lie in [lower, upper] */
    int offset;           /* first slot in p[] */
    int len_min, len_max; /* allowed number of values (1, 1 for scalars) */
    double def;           /* default for scalars (vectors default to len 0 unless the preset
                             sets them) */
    const char *doc;
} rs_param_desc_t;

/* A body an external wrench can act on (ApplyWrench): its name and its n values, in the
 * order `doc` gives (e.g. "fx fy tau_z: N N N*m"). The robot reads them in ed->wrench, its
 * bodies' values one after another in table order, during the next control step. */
typedef struct rs_wrench_desc {
    const char *body;
    int n;
    const char *doc;
} rs_wrench_desc_t;

/* How a robot's private run variable (a slot of rs_entity_data_t.aux) is validated when a
 * snapshot restores it. Every robot declares its slots (rs_robot_t.aux_vars, beside the enum
 * that names them); slots it does not declare must hold 0. A robot without a declaration
 * cannot be registered (rs_robot_check). */
typedef enum rs_aux_kind {
    RS_AUX_REAL,    /* a finite real in [lower, upper] */
    RS_AUX_INTEGER, /* an integer in [lower, upper] */
    RS_AUX_SIGN,    /* -1 or +1 */
    RS_AUX_INDEX,   /* -1 (none) or an element of a vector parameter: an integer below the
                       parameter's value count / per (an obstacle of `obstacles`, ...) */
} rs_aux_kind_t;

typedef struct rs_aux_desc {
    const char *name;
    rs_aux_kind_t kind;
    double lower, upper; /* REAL, INTEGER */
    int param, per;      /* INDEX: row of the parameter in the robot's table, values per element */
    unsigned needed_in;  /* INDEX: bit m set: in mode m the index may not be -1 */
    const char *doc;
} rs_aux_desc_t;

struct rs_robot {
    const char *kind; /* "diff_drive" */
    const char *doc;  /* one line */

    int nx;
    const rs_var_desc_t *state;
    int nu;
    const rs_var_desc_t *actuators;
    int ns;
    const rs_var_desc_t *sensors;
    int np;
    const rs_param_desc_t *params;
    const char *const *choices;     /* the parameters that choose among whole numbers (a
                                       formulation, a law, a mode), NULL-terminated, or NULL:
                                       other values are refused, and a range cannot draw them */
    int nmodes;
    const char *const *mode_names;
    int nevent_kinds;
    const char *const *event_names;
    int naux;                       /* private run variables (aux slots 0 .. naux-1) */
    const rs_aux_desc_t *aux_vars;  /* their declaration; required, even when naux is 0 */
    int nwrench;                    /* bodies an external wrench can act on (0: none) */
    const rs_wrench_desc_t *wrench; /* their table; values at most RS_WRENCH_MAX in all */
    int erk_order;                  /* the integrator method this robot runs best with (the
                                       world parameter erk_order's orders; 0: 4, the default);
                                       a world whose erk_order is 0 takes its robots' highest */

    /* Number of guard functions for this entity (may depend on parameters, e.g. obstacles). */
    int (*nguards)(const rs_entity_model_t *em);

    /* Cross-parameter checks after values are in bounds (F_kinetic <= F_static, ...).
     * Return 0 or a negative code with the reason in st. Optional. */
    int (*validate)(const rs_entity_model_t *em, rs_status_t *st);

    /* Optional: fill em->c (RS_MAX_DERIVED values) with constants derived from the validated
     * parameters, which the right-hand side would otherwise recompute at every evaluation
     * (the arm's mass-matrix coefficients). Called whenever a model is built or its
     * parameters change, after validate; the model is const afterwards. */
    void (*compile)(rs_entity_model_t *em);

    /* Initial state from the parameters (and the rng, through rs_rand_uniform). Sets ed->mode
     * and ed->aux as well. */
    void (*init)(const rs_entity_model_t *em, rs_entity_data_t *ed, double *x);

    /* xdot = f(t, x, u) in mode ed->mode. u are the commands in force at t. Must not allocate,
     * must not log. */
    void (*derivs)(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                   const double *x, const double *u, double *xdot);

    /* Optional: the Jacobian of derivs in mode ed->mode at (t, x, u), for a step's derivatives
     * (rs_sensitivity.h; without it they take central differences of derivs). Row i of J
     * (nx rows, leading dimension ld) gets d xdot_i / dx (nx columns), then d xdot_i / du (nu
     * columns), then, for k < nq, d xdot_i / dp at the parameter slot slot[k] of em->p in
     * column nx + nu + k where the robot knows it, setting known[k] = 1 (columns it leaves
     * unknown are differenced). Returns 0, or -1 where it gives no Jacobian in this mode
     * (derivs is then differenced). f gets xdot itself (derivs' values up to rounding). Must
     * not allocate; agrees with derivs' central differences to 1e-8 relative
     * (tests/core/test_sensitivity.c checks every mode). */
    int (*jacobian)(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                    const double *x, const double *u, int nq, const int *slot, double *f,
                    double *J, int ld, unsigned char *known);

    /* Guard values (ng of them) in mode ed->mode. Optional when nguards returns 0. */
    void (*guards)(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                   const double *x, const double *u, double *g);

    /* The jump map at an event: fired[i] != 0 for the guards that crossed. May change x and
     * ed->mode and log events with rs_emit_event. */
    void (*jump)(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                 const double *u, const int *fired);

    /* Pick the mode consistent with x and u after a discontinuity; may change x (e.g. clamp a
     * velocity) and log events. Optional. */
    void (*settle)(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                   const double *u);

    /* Called at the start of each control step (dt long), before integrating. Optional. */
    void (*step_begin)(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                       const double *x, double dt);

    /* Optional: a fixed-step path beside the integrator (the lecture's time-stepping contact).
     * Called at the start of each control step, after step_begin, to advance the entity's own
     * state x from t to t + dt by the robot's own steps. In the modes where it does so, derivs
     * must return 0 and the guards a positive constant, so that the integrator carries the
     * advanced state unchanged to t + dt. Only for entities that do not couple to others
     * (the world's entities are independent today). In other modes it may only put x back on
     * the constraints of the current mode (drift of a constrained flow). */
    void (*advance)(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                    const double *u, double dt);

    /* Optional: contact feedback of the entity's pairs (at most max) after the last control
     * step, into out; returns how many were written (0 when the entity's feedback is off). */
    int (*contacts)(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                    rs_contact_info_t *out, int max);

    /* Optional: 0 while the entity's formulation can go on from state x; else a negative
     * RS_E* code with the reason in st (a contact no mode of which is consistent, a state that
     * breaks the robot's invariants). The world asks after every jump and at every control
     * step's start and end, and stops the step with that error: the world then holds the
     * state at which the entity could not go on, and a further step fails the same way until
     * a reset or new state or parameters. */
    int (*failure)(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                   rs_status_t *st);

    /* Optional: whether the entity's mode in ed holds state variable i at x: a change of it to
     * either side leaves the mode, and the mode's friction or stop takes it back within a time
     * of the order of the change (a body stuck under kinetic friction > 0: its velocity; a
     * joint held at its stop or by dry friction: its rate). A Step's derivative along a held
     * variable is 0 (rs_sensitivity.h); without this, a change that leaves the mode at an
     * event has no derivative. */
    int (*holds)(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                 int i);

    /* Optional: whether in mode ed a change of state variable i at x to either side, though
     * it leaves the mode (both sides into the same other one), lets the state go on as the
     * mode's own flow does at the changed state: derivs there is that motion's (a body at rest
     * that nothing holds, moved, glides on as the mode's flow moves it). A map's column along
     * it is then differenced as if the mode were kept (rs_sensitivity.h). */
    int (*glides)(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                  int i);

    /* Optional: at a control step's start where a change of state variable i to side `side`
     * (+1, -1) lifts the body off a contact of the mode the start ends in (ed, x after the
     * start, commands u) and the body falls back into that mode within a time that vanishes
     * with the change, the change of state within the mode the lift amounts to once it is
     * back, per unit of the change of x_i (dx, nx values; a row left NaN: that variable moves
     * as the start's map moves it on that side, the excursion leaving it alone): 1 where
     * given, 0 where the robot cannot say, -1 where that side has no first-order effect (the
     * body lands with a change of the order of the root of the lift: the Step has no
     * derivative along x_i, its column undefined). The Step's first start serves the mean of
     * that side and the side that stays on the contact (a corner of the Step,
     * docs/derivatives.md). */
    int (*rejoin)(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                  const double *u, int i, int side, double *dx);

    /* Optional: where moving state variable i of the entity (in mode ed at x, commands u) to
     * side `sign` (+1 or -1) by a small amount leaves the mode only for a time that vanishes
     * with the change (a joint at rest under dry friction slides and comes back to rest, a
     * joint moved off its stop falls back onto it), the first-order effect of that excursion:
     * col (nx values) gets the change of the state, per unit change of variable i, that the
     * mode's own flow carries on from once the excursion is over (the limit as the change goes
     * to 0). Returns 0, or -1 where moving i that way is no such excursion (the mode is kept,
     * or left for good). A Step's derivative at its start is then the mean of the two sides'
     * (rs_sensitivity.h), the true derivative where they agree, a corner's mean where not. */
    int (*excursion)(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                     const double *u, int i, int sign, double *col);

    /* Optional: whether the live state x of the entity (its mode and run variables in ed,
     * reached under the parameters `was`) fits the new parameters em of a SetParams: 0, or
     * RS_EPRECOND naming the body and the depth or angle by which it would be inside another
     * body, past a stop or unassemblable under em, or the energy a compliant layer would hold
     * beyond what it held under `was` (a change may not store energy the next step would
     * release as motion). The rules: docs/physics-edges.md. */
    int (*admissible)(const rs_entity_model_t *em, const rs_entity_model_t *was,
                      const rs_entity_data_t *ed, const double *x, rs_status_t *st);

    /* Fill ed->s at the end of a control step of length dt. Optional. */
    void (*sense)(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, const double *x,
                  const double *u, double dt);

    /* Optional, for robots with a task space (the arms): turn a target (e.g. x, y, elbow) into
     * actuator commands (e.g. PID setpoints through inverse kinematics). Return 0, or a negative
     * code with a reason a person can act on (unreachable: say why). */
    int (*target_to_commands)(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                              const double *target, int n, double *u, rs_status_t *st);

    /* Optional: whether the task-space point (x, y) is reachable. */
    int (*reachable)(const rs_entity_model_t *em, double x, double y);

    /* Optional, with a task space: forward kinematics. The task-space point p = (x, y) of the
     * joints at angles q (nu values) and, in *stretch (may be NULL), how stretched the linkage
     * is there, in [0, 1]: 1 at a stretched (singular) configuration. Returns 0, or RS_EINVAL
     * when no configuration has the angles q (a closed linkage that does not assemble). The
     * tasks sample reach targets through it. */
    int (*joints_to_point)(const rs_entity_model_t *em, const double *q, double p[2],
                           double *stretch);

    /* Optional, for motion specifications (motion_spec.c): named frames a
     * specification binds its quantities to. frame() writes frame i's world pose (x, y, angle),
     * its velocity (vx, vy, angular rate) and the contact force on it (fx, fy, world; 0 without
     * contact) at state x under commands u. */
    int nframes;
    const char *const *frame_names;
    void (*frame)(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                  const double *u, int i, double pose[3], double twist[3], double force[2]);

    /* Optional, with frames: add to du (nu values) the commands that exert the planar wrench
     * w = (fx, fy world, torque) at frame i (the Jacobian transpose for a torque-controlled
     * chain; an admittance for a velocity-controlled base). 0, or RS_EINVAL when frame i cannot
     * take a wrench (say why in st). */
    int (*apply_wrench)(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                        int i, const double w[3], double *du, rs_status_t *st);

    /* Optional: up to max_points (x, y) pairs sampled on the workspace boundary, written to xy
     * (2 * max_points doubles); returns the number written. */
    int (*workspace)(const rs_entity_model_t *em, double *xy, int max_points);

    /* Optional: the shortest time constant (s) of the entity's flow in mode ed->mode at x, where
     * it has one an explicit step must resolve (a compliant layer's c / k); 0 for none. After
     * an event of this entity (whose jump may have changed its flow: a layer entered) the
     * integrator restarts with a first step no longer than it, not the step length the flow
     * before the event allowed, which an error test need not reject where the new flow acts
     * only past the event's surface (the stages of a long step leave the layer again). */
    double (*time_scale)(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                         const double *x);
};

/* Log an event of entity ed at time t. `before`/`after` hold n state values (n is clamped to
 * RS_EVENT_VALUES; either may be NULL). Counts a dropped event when the log is full. */
void rs_emit_event(rs_entity_data_t *ed, int kind, double t, double value, const double *before,
                   const double *after, int n);

/* A uniform double in [0, 1) from the world's rng (deterministic given the reset seed). */
double rs_rand_uniform(rs_entity_data_t *ed);

/* The registry. */
const rs_robot_t *rs_robot_find(const char *kind);

/* Whether robot r may be registered: its tables and callbacks are there and consistent, and it
 * declares its private run variables (aux_vars). 0, or RS_EINTERNAL saying what is missing. */
int rs_robot_check(const rs_robot_t *r, rs_status_t *st);

/* Whether parameter `param` (a row of r->params) is one of r's choices. */
int rs_robot_param_is_choice(const rs_robot_t *r, int param);

/* Validate entity ed's mode and private run variables against its robot's declarations and
 * model em: 0, or RS_EINVAL naming the variable and its value. */
int rs_robot_check_data(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                        rs_status_t *st);

/* The robot modules, one line each: X(NAME) for robots/NAME.c's `rs_robot_NAME` table. The
 * declarations below and the registry's list (registry.c) are made from it. */
#define RS_ROBOTS(X)                                                                             \
    X(diff_drive)                                                                                \
    X(serial_arm)                                                                                \
    X(parallel_arm)                                                                              \
    X(finger)                                                                                    \
    X(brick)                                                                                     \
    X(mobile_manipulator)

#define RS_ROBOT_DECLARE(name) extern const rs_robot_t rs_robot_##name;
RS_ROBOTS(RS_ROBOT_DECLARE)
#undef RS_ROBOT_DECLARE

#endif
