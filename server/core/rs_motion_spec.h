/* Declarative motion specifications (the dual-arm alignment tutorial): a JSON-LD document of
 * quantities,
 * constraints, error evaluators, controllers, monitors, guarded motions, constraint handlers,
 * operators, motion drivers in prioritization levels and a solver, bound to a world's robot
 * frames, validated before anything runs, then evaluated once per control step to give actuator
 * commands (added to an agent's, or alone).
 *
 * The vocabulary, by local name (a compact name is resolved through the document's @context
 * to an IRI whose local name, after the last '#', '/' or ':', is what counts):
 *   Quantity           quantity-kind, unit, optional value; with "view-of" + "coordinate" a
 *                      View: one coordinate (0, 1, 2) of a Pose / VelocityTwist / Wrench /
 *                      Direction quantity
 *   Frame              "world-frame": a robot frame name (left_ee, ...) or "world";
 *                      optional "entity": the world entity (default: the first with the frame)
 *   Pose, VelocityTwist  of, with-respect-to, as-seen-by (Frames): (x, y, angle) and
 *                      (vx, vy, angular rate) of `of` relative to `with-respect-to`, in
 *                      as-seen-by's axes (default: with-respect-to's)
 *   ContactForce       "of": a Frame; the contact force on it (fx, fy, 0) in as-seen-by's axes
 *   PoseToLinearDistance (pose -> distance), PoseToDirection (pose -> direction),
 *   AngleBetweenDirections (direction-a, direction-b -> angle, signed, b relative to a),
 *   PureForceFromDirectionAndMagnitude (magnitude, direction -> wrench),
 *   PureTorqueFromMagnitude (magnitude, a Torque -> wrench (0, 0, torque))
 *   Direction          produced by PoseToDirection, or constant: "value": [x, y] (normalised)
 *                      in as-seen-by's axes (default: world)
 *   Constraint         + EqualityConstraint (quantity, reference-value) or BilateralConstraint
 *                      (quantity, lower-threshold, upper-threshold), + a typed form
 *                      (LinearVelocityConstraint, LinearDistanceConstraint, ForceConstraint,
 *                      AngleConstraint, AngularVelocityConstraint) that fixes the quantity kind
 *   ErrorEvaluator / ConstraintEvaluator  constraint, error (a quantity): e = ref - value
 *                      (equality); the tube's e = d - d_min below, 0 inside, d - d_max above
 *   Controller + ProportionalIntegralDerivative [+ DecayingIntegralTerm]: error-signal,
 *                      control-signal, proportional-gain, integral-gain, derivative-gain,
 *                      decay-rate: f = Kp e + Ki int exp(lambda (tau - t)) e dtau + Kd de/dt
 *   Monitor            constraint, optional tolerance: "satisfied" while |e| <= tolerance
 *   ConstraintHandler  constraint and a controller or a monitor
 *   GuardedMotion      when / while / until (constraint lists); motions run in document order
 *   MotionDriver       wrench (a Wrench quantity), attached-to (a Frame)
 *   PrioritizationLevel  motion-drivers
 *   Solver / SolverWithInputAndOutput  motion-drivers (levels, highest priority first),
 *                      solver: "JacobianTranspose" or "AccelerationConstrainedHybridDynamics-
 *                      Algorithm" (both map the drivers' Cartesian forces through J^T; see
 *                      motion_spec.c), optional combine: "add" (default) or "replace".
 */
#ifndef RS_MOTION_SPEC_H
#define RS_MOTION_SPEC_H

#include "rs_core.h"

#include <stddef.h>

typedef struct rs_motion_spec rs_motion_spec_t;

/* What a step of a specification reports. */
typedef enum rs_spec_event_kind {
    RS_SPEC_EV_MONITOR_SATISFIED, /* a monitor's constraint became satisfied (value: monitor) */
    RS_SPEC_EV_MONITOR_VIOLATED,  /* ... stopped being satisfied */
    RS_SPEC_EV_MOTION_SWITCH,     /* the active guarded motion changed (value: new index, -1
                                     when the last one finished) */
} rs_spec_event_kind_t;

/* In a world's event log, these are logged on entity 0 with kinds after its robot's own
 * (robot event kinds + the rs_spec_event_kind_t value), named rs_spec_event_names[]; the
 * event's value is the monitor's index (in document order) or the new motion's index. A
 * monitor changing within a control step is a guard of the integrator (rs_motion_spec_guards):
 * its event carries the exact time of the crossing, and a motion switch it causes happens at
 * that time (the new motion's controllers act from the next control step, when commands are
 * computed). Changes across a control-step boundary (new commands) are found at its start. */
#define RS_SPEC_EVENT_KINDS 3
extern const char *const rs_spec_event_names[RS_SPEC_EVENT_KINDS];

/* Parse, bind to model m's frames and validate the JSON-LD document `json` (len bytes). Returns
 * the specification (the caller owns it; rs_motion_spec_destroy), or NULL with a specific error
 * naming the entity in st: RS_EMALFORMED for JSON that does not parse, RS_EINVAL for a dangling
 * reference, a type or quantity-kind or unit mismatch, a constraint neither controlled nor
 * monitored, a cycle; RS_ENOTFOUND for an unknown frame; RS_EUNIMPL for a construct this
 * implementation does not run (acceleration constraint specifications). */
rs_motion_spec_t *rs_motion_spec_parse(const rs_model_t *m, const char *json, size_t len,
                                       rs_status_t *st);

void rs_motion_spec_destroy(rs_motion_spec_t **p);

/* The document the specification was parsed from (NUL-terminated) and its length. */
const char *rs_motion_spec_source(const rs_motion_spec_t *s, size_t *len);

/* Reset the run state (controller integrals, monitor states, the active motion). */
void rs_motion_spec_reset(rs_motion_spec_t *s);

/* One control step of length dt at d's current state: evaluate quantities, errors, controllers,
 * monitors, switch motions, and write the solver's commands to u (m->nu values; zero where no
 * driver acts). *replace is set to 1 when the solver's combine is "replace". Events (kind,
 * index) are written to ev_kind/ev_index, at most max_events; their number is returned in
 * *nev. Does not allocate. Returns 0, or a negative code (a robot refused a wrench). */
int rs_motion_spec_step(rs_motion_spec_t *s, const rs_model_t *m, const rs_data_t *d, double dt,
                        double *u, int *replace, int *ev_kind, int *ev_index, int max_events,
                        int *nev, rs_status_t *st);

/* The number of guard functions the specification adds to the integrator's (one per monitor),
 * and their values at the world's trial state x (all m->nx values) into g: the monitor's
 * margin (how far its constraint is inside the tolerance: >= 0 satisfied), negated while it is
 * not satisfied, so that a guard falls through 0 when the monitor changes. Leaves the run state
 * and the readouts alone. */
int rs_motion_spec_nguards(const rs_motion_spec_t *s);
void rs_motion_spec_guards(rs_motion_spec_t *s, const rs_model_t *m, const rs_data_t *d,
                           const double *x, double *g);

/* At a root of the specification's guards (fired[j] != 0: monitor j changed): flip those
 * monitors, switch motions whose `until` now holds, and write the events (kind, index) as
 * rs_motion_spec_step does. */
void rs_motion_spec_fired(rs_motion_spec_t *s, const int *fired, int *ev_kind, int *ev_index,
                          int max_events, int *nev);

/* Whether the specification's commands replace the agent's (a solver's combine "replace"). */
int rs_motion_spec_replaces(const rs_motion_spec_t *s);

/* Load the specification `json` on data d of model m, replacing any (json NULL or len 0:
 * clear it). Validates first: a bad document changes nothing. 0, or the parse's error. */
int rs_set_motion_spec(const rs_model_t *m, rs_data_t *d, const char *json, size_t len,
                       rs_status_t *st);

/* The control-step hook (step.c): evaluate d->spec at d's state into d->u_spec, logging its
 * events (monitors, motion switches) in d's event log. */
int rs_motion_spec_control(const rs_model_t *m, rs_data_t *d, double dt, rs_status_t *st);

/* The root hook (step.c): monitors of d->spec whose guards fired (fired: its guards' flags)
 * changed at d->t; log their events and any motion switch at d->t in d's event log. */
void rs_motion_spec_roots(const rs_model_t *m, rs_data_t *d, const int *fired);

/* Readouts for the state and the observers: the evaluators (their errors) and controllers (their
 * outputs), by index, with their @id. */
int rs_motion_spec_nevaluators(const rs_motion_spec_t *s);
int rs_motion_spec_ncontrollers(const rs_motion_spec_t *s);
const char *rs_motion_spec_evaluator(const rs_motion_spec_t *s, int i, double *error);
const char *rs_motion_spec_controller(const rs_motion_spec_t *s, int i, double *output);
/* The value (first coordinate) of the quantity with @id `id`; 0, or RS_ENOTFOUND. */
int rs_motion_spec_quantity(const rs_motion_spec_t *s, const char *id, double v[3], int *dim);
/* The active guarded motion's index (-1: none / all done) and @id (NULL then). */
int rs_motion_spec_active_motion(const rs_motion_spec_t *s, const char **id);

/* The run state as doubles (for snapshots): its length, a copy out, and a validated copy in. */
size_t rs_motion_spec_state_len(const rs_motion_spec_t *s);
void rs_motion_spec_state_get(const rs_motion_spec_t *s, double *out);
int rs_motion_spec_state_set(rs_motion_spec_t *s, const double *in, size_t n, rs_status_t *st);

#endif
