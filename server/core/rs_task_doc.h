/* Declared tasks: a task (rs_task.h) written as a JSON document instead of C. The document names
 * quantities of the world, the observation, the action, the reward, success, termination and
 * truncation, and the episode's start distributions; it is validated once against the preset's
 * model (each error names its item), its expressions compiled once (TinyExpr), and each control
 * step evaluates the compiled forms in the server.
 *
 *   {
 *     "name": "MyReach-v0",                   task name (letters, digits, "-_."), required
 *     "preset": "serial_arm",                 the world it runs on, required
 *     "entity": "arm",                        the entity the action drives, required
 *     "doc": "...", "reward_doc": "...",      text for GetSpec (optional)
 *     "params": [{"entity": "arm", "name": "actuator_mode", "values": [1, 1]}],  defaults
 *     "quantities": {                         named values, in order (later ones may use earlier)
 *       "x":    "arm.x",                      a state variable or sensor, "entity.name"
 *       "u1":   {"command": "arm.joint1"},    an actuator's held command
 *       "hits": {"events": "arm.contact"},    events of that kind in the control step
 *       "tx":   {"dist": "uniform", "a": -0.2, "b": 0.2},   a target drawn at each reset
 *                                             (the Monte Carlo samplers' syntax; "normal": a
 *                                             mean, b deviation)
 *       "d":    {"expr": "hypot(x - tx, y - ty)"},         an expression
 *       "a1":   {"param": "arm.a1"},          a parameter of the world ("entity.name[i]")
 *       "q":    {"at_reset": "uniform(-pi, pi)", "held": false},   computed at the start only
 *       "c":    {"argmin": "hypot(x - ox, y - oy) - r", "over": "robot.obstacles", "group": 3,
 *                "as": ["ox", "oy", "r"], "value": "ox", "none": 0}
 *                                             expr minimized over the list parameter's groups
 *                                             of 3 values (named by "as"), value (default the
 *                                             minimum) at the first minimizing group, none
 *                                             for an empty list
 *     },
 *     "observation": [{"expr": "x - tx", "scale": 0.5, "low": -1, "high": 1, "name": "dx"}],
 *                                             value = expr / scale, clipped to [low, high]
 *     "action": [{"actuator": "joint1", "low": -1, "high": 1, "command": [-3.14, 3.14]}],
 *                                             action i drives actuator i of the entity; with
 *                                             "command", [low, high] maps linearly onto it
 *     "reward": "-d",                         per control step
 *     "reward_scale": 1,                      optional factor on the reward
 *     "success": "lt(d, 0.01)",               nonzero: terminated (optional)
 *     "termination": "gt(abs(x), 1)",         nonzero: terminated as a failure (optional)
 *     "max_steps": 200,                       truncation after this many control steps
 *     "reset": [{"item": "arm.theta0[0]", "dist": "uniform", "a": -3.14, "b": 3.14}],
 *                                             initial-condition parameters drawn at each reset
 *                                             (the Monte Carlo samplers' syntax)
 *     "info": ["d"],                          quantities reported as info figures
 *     "require": [{"expr": "eq(mode, 1)", "error": "..."}]   conditions on param quantities
 *                                             a world must meet (else RS_EINVAL, the error)
 *   }
 *
 * Expressions: numbers, quantity names, t (time, s), steps (control steps this episode),
 * + - * / ^ %, and the functions abs acos asin atan atan2 ceil cos cosh exp floor ln log10 pow
 * sin sinh sqrt tan tanh pi e, plus hypot(a, b), min(a, b), max(a, b), clip(x, lo, hi),
 * wrap(angle) (to [-pi, pi]), lt le gt ge eq (1 or 0), and(a, b), or(a, b), not(a),
 * if(c, a, b); in a quantity's "at_reset" expression also uniform(a, b) and normal(mean,
 * deviation), drawn from the world's rng. More quantity kinds: {"at_reset": expr} (computed
 * once at the episode's start, after the resets, and held), {"update": expr, "init": v} (held,
 * computed after each control step from its own last value under its own name: a counter). A
 * reset entry may give "value" or "quantity" (a quantity's value) instead of a distribution;
 * the quantities up to the last one a reset entry takes are computed before the start state
 * exists (parameters, draws, expressions and argmins only). Rejection sampling: an at_reset
 * quantity, or a start-only ("held": false) argmin, may carry "until": expr, "redraw": an
 * earlier at_reset quantity (or itself), "tries": n and "error": the start computes the quantities
 * from redraw through it again until `until` holds, and the reset fails with RS_EINVAL (the
 * error, else a message naming the quantity) after n draws. Start-only quantities are
 * nameable only in at_reset, until and start-only argmin expressions. Functions also:
 * isnan(a), and the parallel arm's closed forms parallel_x(L0, L1, L2, q1, q2), parallel_y
 * (NAN where the linkage does not assemble) and parallel_stretch (elbow distance / 2 L2),
 * those its robot uses. Observation and action entries may
 * give "name", "unit" and "doc" for GetSpec. The info figure "success" (the success flag) goes
 * where "info" lists it, else last. "extends": "Name-v0" takes that declared task's document
 * (a registered one's or a built-in family's, itself resolved, at most 4 levels) with this
 * document's items in place of its own: a -v1 from its -v0, a user's variant of a built-in. A
 * document that sets its own "reward" takes "reward_scale" and "reward_doc" from itself alone
 * (1 and the expression when it gives none), not the base's.
 *
 * Limits (rs_limits.h, docs/limits.md): a document of at most 64 KiB and 16 JSON levels; an
 * expression of at most 1024 characters, 32 levels of parentheses and calls, 512 nodes and a
 * tree 128 deep; the worst case of an episode's start (every until failing all its tries) and
 * of a control step bounded in expression-node evaluations. The reward, success, termination
 * and info figures of each control step and the observation a Step or a start returns must be
 * finite: one that is not fails it with RS_ESIMFAIL naming the task and the expression. */
#ifndef RS_TASK_DOC_H
#define RS_TASK_DOC_H

#include "rs_task.h"

#include <stddef.h>

#define RS_TASK_DOC_MAX_QUANTITIES 64
#define RS_TASK_DOC_MAX_REGISTERED 64

/* Parse and validate the task document `json` (len bytes) against its preset's model. Returns
 * the task (the caller owns it: rs_task_doc_destroy), or NULL with st: RS_EMALFORMED (not JSON),
 * RS_ENOTFOUND (an unknown preset, entity, item or actuator), RS_EINVAL (a missing or wrong
 * item, an expression that does not compile or passes a limit, JSON nested too deep),
 * RS_ERANGE (bounds, the work bounds), RS_EEXHAUSTED (too many items); the message names the
 * item ("observation[1].expr", "quantities.d", ...) and the limit passed. */
rs_task_t *rs_task_doc_parse(const char *json, size_t len, rs_status_t *st);

void rs_task_doc_destroy(rs_task_t **p);

/* Task t's "require" conditions on model m's parameters: 0, or RS_EINVAL with the document's
 * error for the first that fails; 0 for a task not declared as a document. */
int rs_task_doc_validate(const rs_task_t *t, const rs_model_t *m, rs_status_t *st);

/* The document a declared task was parsed from (NUL-terminated); NULL for a built-in task. */
const char *rs_task_doc_source(const rs_task_t *t);

/* Register the task document `json` in this process under its name, so rs_task_find and
 * rs_world_new_task know it. Registering the same document again is accepted; another
 * document under a registered name (or a built-in task's name) is refused with RS_EINVAL.
 * *out (when not NULL) is the registered task, which lives as long as the process. 0, the
 * parse's error, or RS_EEXHAUSTED past RS_TASK_DOC_MAX_REGISTERED tasks. Thread-safe. */
int rs_task_doc_register(const char *json, size_t len, const rs_task_t **out, rs_status_t *st);

/* Take registered task t out of the registry (its name free for another document, its slot
 * for another task) and hand it to the caller, who frees it (rs_task_doc_destroy) once nothing
 * can still use it: worlds of it, and names rs_task_names handed out. NULL when t is not
 * registered. Thread-safe. */
rs_task_t *rs_task_doc_unregister(const rs_task_t *t);

/* The tasks of built-in family f (a row of rs_task_families: f->documents, a JSON array of
 * task documents, each of which may extend an earlier one with "extends": its name, replacing
 * the items it gives), parsed once per process; *n their number (0 for a family that does not
 * parse, with a line on stderr; NULL for an f not in the table). */
const rs_task_t *const *rs_task_doc_family(const rs_task_family_t *f, int *n);

/* The registered task called `name`, or NULL (rs_task_find asks it after the built-in ones). */
const rs_task_t *rs_task_doc_find(const char *name);

/* Write the names of the registered tasks into names[0 ... max - 1]; returns how many. */
int rs_task_doc_names(const char **names, int max);

#endif
