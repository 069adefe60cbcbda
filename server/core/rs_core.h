/* robosim core: the simulation, usable without the network.
 *
 * Model versus data (MuJoCo's split):
 *   rs_model_t  everything that does not change while a world runs: entities, their robot
 *               modules, parameters, control step, tolerances. Built once by rs_model_build(),
 *               then const; SetParams edits a copy and swaps it in with rs_data_model_changed().
 *   rs_data_t   everything that does: time, state vector, commands, schedules, modes, sensors,
 *               the event log, the integrator and its statistics. One model can back many data.
 *
 * A world is stepped in control steps of model->control_dt; commands are held constant over a
 * control step (zero-order hold) and the integrator stops exactly at every boundary. Discrete
 * events (contact, stick/slip, ...) are guards found by ARKODE root finding; the robot module's
 * jump map is applied at the exact root time and the integrator restarted there.
 *
 * This header never includes SUNDIALS: the integrator lives behind an opaque pointer. */
#ifndef RS_CORE_H
#define RS_CORE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "rs_errors.h"

/* RS_VERSION, the release ("0.1.0"), is defined by the build from CMakeLists.txt's project()
 * VERSION, the one place it is written */
#ifndef RS_VERSION
#error "RS_VERSION is defined by the build (CMakeLists.txt's project VERSION)"
#endif

/* The version of SUNDIALS the integrator was built with, e.g. "6.4.1". */
const char *rs_sundials_version(void);

#define RS_NAME_MAX 32           /* entity, preset and parameter names, with the NUL */
#define RS_MAX_ENTITIES 8
#define RS_MAX_PARAM_VALUES 160  /* parameter storage per entity, in doubles */
#define RS_MAX_PARAMS 48         /* parameters per robot kind */
#define RS_MAX_DERIVED 16        /* derived model constants per entity (rs_entity_model_t.c) */
#define RS_MAX_ACTUATORS 16      /* actuators per robot kind (rs_robot_check enforces it) */
#define RS_AUX_MAX 16            /* per-entity private run variables of a robot module */
#define RS_EVENT_VALUES 12       /* state values an event records (before and after) */
#define RS_EVENT_LOG 256         /* events kept per Step request (more: events_dropped) */
#define RS_MAX_SCHEDULE 4096     /* knots of one actuator schedule */
#define RS_TASK_STATE 32         /* doubles of episode state a task keeps in rs_data_t */
#define RS_WRENCH_MAX 8          /* external wrench values per entity (all its bodies) */

typedef struct rs_robot rs_robot_t;
typedef struct rs_task rs_task_t; /* rs_task.h */

/* ---- model ---------------------------------------------------------------------------- */

typedef struct rs_entity_model {
    char name[RS_NAME_MAX];
    const rs_robot_t *robot;       /* the entity's robot module (finger, diff_drive, ...) */
    int x_off, nx;                 /* slice of the world state vector */
    int u_off, nu;                 /* slice of the world command vector */
    int s_off, ns;                 /* slice of the world sensor vector */
    int g_off, ng;                 /* slice of the world guard (root function) vector */
    double p[RS_MAX_PARAM_VALUES]; /* parameter values, laid out by the robot's param table */
    int plen[RS_MAX_PARAMS];       /* number of values set for each parameter */
    double c[RS_MAX_DERIVED];      /* constants derived from p by the robot's compile hook
                                      (rs_robot.h), as MuJoCo's mj_setConst; 0 without one */
} rs_entity_model_t;

typedef struct rs_model {
    char preset[RS_NAME_MAX];
    double control_dt;         /* s, the zero-order-hold period */
    double rtol, atol;         /* integrator tolerances */
    double max_internal_steps; /* per control step, before the step is declared failed */
    double sim_step;           /* s, largest internal step (ARKODE's hmax); 0: no limit */
    double stream_max_hz;      /* most states per second the server publishes for this world
                                  on its observer stream, at most the server's
                                  --stream-max-hz; 0: the server's */
    double max_episode_steps;  /* a task episode's truncation limit; 0: the task's own */
    double erk_order;          /* the integrator's method order, 4 5 8; 0: the robots' choice */
    int nentities;
    rs_entity_model_t ent[RS_MAX_ENTITIES];
    int nx, nu, ns, ng;        /* totals over entities */
} rs_model_t;

/* A named parameter value, as CreateWorld and SetParams carry it. entity "" is the world. */
typedef struct rs_param {
    const char *entity;
    const char *name;
    const double *values;
    size_t nvalues;
} rs_param_t;

/* Build `m` from a preset name and parameter overrides. Returns 0, RS_ENOTFOUND (unknown
 * preset, entity or parameter), RS_EINVAL or RS_ERANGE (a value), with the reason in `st`. */
int rs_model_build(rs_model_t *m, const char *preset, const rs_param_t *params, size_t nparams,
                   rs_status_t *st);

/* Apply parameter overrides to `m` after validating all of them; on error `m` is unchanged. */
int rs_model_set_params(rs_model_t *m, const rs_param_t *params, size_t nparams, rs_status_t *st);

/* ---- shared models: worlds of the same preset and parameters share one const model --------
 * rs_model_share returns the one shared copy of a model equal to `m` (byte for byte), with its
 * reference count raised, making it if there is none; NULL when out of memory (reason in st).
 * rs_model_retain raises the count of a shared model; rs_model_release lowers it (NULL-safe,
 * clears *pm) and frees the model with its last reference. Thread-safe. A shared model is
 * never written: changing a parameter builds a new model and shares that (copy on write). */
const rs_model_t *rs_model_share(const rs_model_t *m, rs_status_t *st);
const rs_model_t *rs_model_retain(const rs_model_t *m);
void rs_model_release(const rs_model_t **pm);

/* How many distinct shared models exist now (for tests and benchmarks). */
int rs_model_shared_count(void);

/* Index of the entity called `name`, or RS_ENOTFOUND. */
int rs_model_entity(const rs_model_t *m, const char *name);

/* Value i of parameter `name` of entity e (reads the robot's table); NAN if unknown. */
double rs_model_param(const rs_model_t *m, int e, const char *name, int i);

/* World-level parameters (entity ""): count, description of parameter i, its value in m. */
int rs_world_param_count(void);
int rs_world_param_info(int i, const char **name, const char **unit, double *lower, double *upper,
                        const char **doc);
double rs_world_param_value(const rs_model_t *m, int i);

/* Names of the presets, NULL-terminated. */
const char *const *rs_preset_names(void);

/* ---- data ----------------------------------------------------------------------------- */

typedef struct rs_event {
    int entity;
    int kind;                         /* index in the robot's event_names */
    double t;                         /* exact time, s */
    double value;                     /* kind-specific (impulse, obstacle index, ...) */
    int nvalues;                      /* state values recorded, <= RS_EVENT_VALUES */
    double before[RS_EVENT_VALUES];
    double after[RS_EVENT_VALUES];
} rs_event_t;

/* A piecewise-linear schedule for one actuator. */
typedef struct rs_schedule {
    int n;            /* knots; 0 = no schedule */
    double *t, *v;    /* n knots, t strictly increasing */
    int cursor;       /* the last segment used, a search hint */
} rs_schedule_t;

/* ---- rs_data_t's run variables, declared once -----------------------------------------
 * Each line below is one member of rs_data_t (or, ENTITY, of every rs_entity_data_t) and one
 * row of the field table (fields.c, rs_data.h) through which reset, rs_data_copy (ForkWorld),
 * snapshot write and read, snapshot validation and the digest all go: adding a run variable is adding
 * its line here (and, only for a new kind of check, teaching rs_data.h's check to it).
 *
 *   X(shape, type, name, dims, length, reset, check, digest)
 *     shape   VALUE   `type name dims` in rs_data_t (dims empty, or [N] for N values);
 *             VECTOR  `type *name` in rs_data_t: `length` values owned by the data;
 *             ENTITY  `type name dims` in each entity's rs_entity_data_t;
 *     type    F64 (double), U64 (uint64_t), I32 (int), U32 (unsigned);
 *     length  VECTOR: NX, NU or NS (the model's sizes); FIXED for the others;
 *     reset   what rs_reset leaves: ZERO, ONE, INIT (zeroed, then set by rs_reset from the
 *             seed or the robots' init), KEEP (untouched: counts since creation, and the
 *             task's episode state, which rs_world_reset starts);
 *     check   what a restored value must satisfy (rs_field_check_t in rs_data.h);
 *     digest  what the state digest (digest.c) takes of it after each control step: HASH (all
 *             its values), USED (an entity's used slots: its robot's naux, its wrench
 *             values), SCHED / SPECU (only while a schedule / a motion specification is in
 *             force; else they are u / 0), EPISODE (the task's state less the Step's reward
 *             and the return, which depend on how the steps were split into requests), SKIP
 *             (statistics, per-request logs, the chain itself, values that follow from the
 *             others: the sensors from the state, the seed from the chain's start).
 * The schedules and the event log, structured, are declared by hand below with their own
 * rows in the table. The run variables: t (s), step_count (control steps since reset), the
 * grid (control steps end at grid_t0 + k control_dt), h_next (the integrator's next step),
 * the seed of the last reset, rng (xoshiro256**), the digest chain, x (state), u (held
 * commands), u_eff (in force), u_spec (the motion specification's), sensors, each entity's
 * mode, private run variables (aux) and next step's wrench, dirty (settle the modes first),
 * step_events (the Zeno guard's count), the event counts, the task's episode state and the
 * integrator statistics. */
#define RS_DATA_FIELDS(X)                                                                          \
    X(VALUE,  F64, t,              ,                FIXED, ZERO, TIME,      HASH)    /* s */       \
    X(VALUE,  U64, step_count,     ,                FIXED, ZERO, STEPS,     HASH)                  \
    X(VALUE,  F64, grid_t0,        ,                FIXED, ZERO, TIME,      HASH)                  \
    X(VALUE,  U64, grid_k,         ,                FIXED, ZERO, GRID,      HASH)                  \
    X(VALUE,  F64, h_next,         ,                FIXED, ZERO, STEP_SIZE, HASH)                  \
    X(VALUE,  U64, seed,           ,                FIXED, INIT, ANY,       SKIP)                  \
    X(VALUE,  U64, rng,            [4],             FIXED, INIT, RNG,       HASH)                  \
    X(VALUE,  U64, digest,         [4],             FIXED, INIT, ANY,       SKIP)    /* chain */   \
    X(VECTOR, F64, x,              ,                NX,    INIT, FINITE,    HASH)    /* state */   \
    X(VECTOR, F64, u,              ,                NU,    ZERO, COMMAND,   HASH)    /* held */    \
    X(VECTOR, F64, u_eff,          ,                NU,    ZERO, COMMAND,   SCHED)   /* in force */\
    X(VECTOR, F64, u_spec,         ,                NU,    ZERO, FINITE,    SPECU)   /* spec's */  \
    X(VECTOR, F64, sensors,        ,                NS,    INIT, FINITE,    SKIP)                  \
    X(ENTITY, I32, mode,           ,                FIXED, INIT, MODE,      HASH)    /* mode */    \
    X(ENTITY, F64, aux,            [RS_AUX_MAX],    FIXED, INIT, AUX,       USED)                  \
    X(ENTITY, F64, wrench,         [RS_WRENCH_MAX], FIXED, ZERO, FINITE,    USED)                  \
    X(VALUE,  I32, dirty,          ,                FIXED, ONE,  BOOL,      HASH)                  \
    X(VALUE,  I32, step_events,    ,                FIXED, ZERO, COUNT,     SKIP)                  \
    X(VALUE,  U32, events_dropped, ,                FIXED, ZERO, ANY,       SKIP)                  \
    X(VALUE,  U64, events_total,   ,                FIXED, KEEP, ANY,       SKIP)                  \
    X(VALUE,  F64, task,           [RS_TASK_STATE], FIXED, KEEP, FINITE,    EPISODE) /* episode */ \
    X(VALUE,  U64, episode_steps,  ,                FIXED, KEEP, ANY,       HASH)                  \
    X(VALUE,  U64, internal_steps, ,                FIXED, KEEP, ANY,       SKIP)                  \
    X(VALUE,  U64, rhs_evals,      ,                FIXED, KEEP, ANY,       SKIP)                  \
    X(VALUE,  U64, root_evals,     ,                FIXED, KEEP, ANY,       SKIP)

#define RS_CTYPE_F64 double
#define RS_CTYPE_U64 uint64_t
#define RS_CTYPE_I32 int
#define RS_CTYPE_U32 unsigned
#define RS_MEMBER_VALUE(type, name, dims) RS_CTYPE_##type name dims;
#define RS_MEMBER_VECTOR(type, name, dims) RS_CTYPE_##type *name;
#define RS_MEMBER_ENTITY(type, name, dims)
#define RS_DATA_MEMBER(shape, type, name, dims, length, reset, check, digest)                  \
    RS_MEMBER_##shape(type, name, dims)
#define RS_ENTITY_MEMBER_VALUE(type, name, dims)
#define RS_ENTITY_MEMBER_VECTOR(type, name, dims)
#define RS_ENTITY_MEMBER_ENTITY(type, name, dims) RS_CTYPE_##type name dims;
#define RS_ENTITY_MEMBER(shape, type, name, dims, length, reset, check, digest)                \
    RS_ENTITY_MEMBER_##shape(type, name, dims)

/* What a robot module sees of one entity while it runs: its mode and private run variables
 * (aux, declared by the robot's aux table, rs_robot.h), from RS_DATA_FIELDS. */
typedef struct rs_entity_data {
    int index;                   /* entity index in the model */
    double *u;                   /* held commands (nu), points into rs_data_t.u */
    double *s;                   /* sensors (ns), points into rs_data_t.sensors */
    struct rs_data *data;        /* back pointer, for rs_emit_event */
    RS_DATA_FIELDS(RS_ENTITY_MEMBER)
} rs_entity_data_t;

typedef struct rs_integrator rs_integrator_t; /* opaque: ARKODE memory lives in integrator.c */

/* What a step tells an observer of its hybrid structure (the Jacobian of a Step,
 * rs_sensitivity.h): before and after each discrete map (RS_STEP_MAP_BEGIN: a control step's
 * start, settle, step_begin and advance; RS_STEP_MAP_JUMP: the jump maps of the guards `fired`
 * at an event), and the flow up to d->t. Function pointers, so the stepping code calls no
 * observer's code by name. */
enum { RS_STEP_MAP_BEGIN, RS_STEP_MAP_JUMP };
typedef struct rs_step_hooks {
    void (*map_begin)(void *ctx, const struct rs_model *m, const struct rs_data *d);
    void (*map_end)(void *ctx, const struct rs_model *m, const struct rs_data *d, int kind,
                    const int *fired, double dt);
    void (*flow)(void *ctx, const struct rs_model *m, const struct rs_data *d);
    void *ctx;
} rs_step_hooks_t;

typedef struct rs_data {
    RS_DATA_FIELDS(RS_DATA_MEMBER)    /* time, grid, rng, x, u, u_eff, sensors, ... (above) */
    rs_schedule_t *sched;             /* model->nu schedules (field "schedules") */
    struct rs_motion_spec *spec;      /* the motion specification in force, or NULL (field
                                         "motion_spec"; rs_motion_spec.h) */
    const struct rs_step_hooks *hooks; /* called at a step's maps and flows while a Step's
                                          Jacobian is computed (rs_sensitivity.h), or NULL */
    int nsched[RS_MAX_ENTITIES];      /* scheduled actuators per entity (derived) */
    rs_integrator_t *integ;
    int digest_later;                 /* a task's step: its caller folds the state into the
                                         digest chain after the task's evaluation */
    const rs_model_t *m;              /* the model of the last call, for the callbacks */
    int nevents;                      /* entries in events[] (field "events", with it) */
    /* The events of the current Step request: allocated on the first event and grown on
     * demand up to RS_EVENT_LOG entries (a world that has no events carries no log) */
    rs_event_t *events;
    int events_cap;                   /* entries allocated in events[] */
    size_t block_bytes;               /* of this block (rs_data_scratch), for prefetching */
    /* The model's entities (nentities of them, at most RS_MAX_ENTITIES): the data is one block
     * sized for its model (rs_data_scratch), these, then the vectors and the schedules */
    rs_entity_data_t ent[];
} rs_data_t;

/* sqrt(x^2 + y^2) from IEEE operations only (fpmath.c), so its bits are the same on every
 * platform (glibc's hypot differs between x86-64 and arm64); within 2 ulp of the exact value
 * (tests/core/test_fpmath.c), finite wherever the result is representable. */
double rs_hypot(double x, double y);

/* Solve A z = b for n <= RS_DENSE_MAX unknowns (A row-major, n x n, left unchanged; z replaces
 * b) by LU with partial pivoting (dense.c: SUNDIALS' dense routines). Returns 0, or -1 where a
 * pivot is exactly 0 (singular) or n is out of range, b then undefined. */
#define RS_DENSE_MAX 16
int rs_dense_solve(int n, const double *A, double *b);

/* ---- the state digest (digest.c) --------------------------------------------------------
 * A chain of XXH3-128 links over the bits of the fields that determine the future (the
 * `digest` column of RS_DATA_FIELDS): after every control step link = H(link before, state), and
 * a reset starts the chain from a zero link. The 32 bytes are the last link and the one before
 * it; one value therefore certifies the whole history since the reset, however the steps were
 * split into requests. rs_data_t.digest holds them as four little-endian 64-bit words. */
#define RS_DIGEST_BYTES 32

/* Start d's chain from its current state (after a reset or a new episode). */
void rs_digest_start(const rs_model_t *m, rs_data_t *d);

/* Fold d's state after a control step into its chain. */
void rs_digest_step(const rs_model_t *m, rs_data_t *d);

/* d's digest as 32 bytes, and as 64 lowercase hex digits and a NUL. */
void rs_digest_bytes(const rs_data_t *d, uint8_t out[RS_DIGEST_BYTES]);
void rs_digest_hex(const rs_data_t *d, char out[2 * RS_DIGEST_BYTES + 1]);

/* Allocate data for `m` and reset it with `seed`. NULL on failure (reason in `st`).
 * Free with rs_data_destroy. */
rs_data_t *rs_data_new(const rs_model_t *m, uint64_t seed, rs_status_t *st);

/* Free `*d` (NULL-safe) and set it to NULL. */
void rs_data_destroy(rs_data_t **d);

/* Make dst (allocated for the same model m) an exact copy of src: every field of the table
 * (rs_data.h), schedules and event log included; the integrator is restarted from the copied
 * state, so stepping dst is bit-identical to stepping src. Returns 0, or RS_EEXHAUSTED (out
 * of memory for the schedules) with dst unchanged. */
int rs_data_copy(const rs_model_t *m, rs_data_t *dst, const rs_data_t *src, rs_status_t *st);

/* A place to save a world's data at a control-step boundary and roll back to it (a step the
 * compute budget interrupts): cheaper than rs_data_copy, as nothing is restarted until a
 * rollback, and it can serve any number of worlds in turn (one save at a time); it grows to
 * the largest data saved and keeps that room. rs_rollback_new: NULL when out of memory.
 * rs_rollback_destroy: NULL-safe, clears *rb. */
typedef struct rs_rollback rs_rollback_t;
rs_rollback_t *rs_rollback_new(void);
void rs_rollback_destroy(rs_rollback_t **rb);

/* Save d (data for model m) into rb, replacing what rb held: every field of the table,
 * schedules, event log and the motion specification's run state. 0, or RS_EEXHAUSTED with
 * nothing saved. */
int rs_data_save(rs_rollback_t *rb, const rs_model_t *m, const rs_data_t *d, rs_status_t *st);

/* Bring d back to what rs_data_save saved from it (model m, d's motion specification the one
 * it had then): as rs_data_copy from a copy taken then, the integrator restarted, so stepping
 * on is bit-identical to stepping from the save. 0, or RS_EEXHAUSTED with d unchanged. */
int rs_data_rollback(const rs_rollback_t *rb, const rs_model_t *m, rs_data_t *d, rs_status_t *st);

/* Initial state from the model's parameters, time 0, commands 0, schedules cleared, events
 * cleared, rng seeded from `seed`. Re-initialises the integrator. */
int rs_reset(const rs_model_t *m, rs_data_t *d, uint64_t seed, rs_status_t *st);

/* Set the held commands of entity e (n must equal its actuator count; values finite and within
 * the actuator bounds). Clears schedules on that entity. On error nothing changes. */
int rs_set_commands(const rs_model_t *m, rs_data_t *d, int e, const double *u, size_t n,
                    rs_status_t *st);

/* Set the held commands of every entity from u (model->nu values, entity by entity in spec
 * order): all checked as rs_set_commands checks them before any is applied. */
int rs_set_all_commands(const rs_model_t *m, rs_data_t *d, const double *u, rs_status_t *st);

/* The checks rs_set_commands makes, without applying anything. */
int rs_check_commands(const rs_model_t *m, int e, const double *u, size_t n, rs_status_t *st);

/* Whether entity e has an actuator with index a (0 <= a < its nu): 0, or RS_ENOTFOUND naming
 * its actuators (index and name), so a client's wire index is checked against the robot's
 * real actuator count before it is used. */
int rs_check_actuator(const rs_model_t *m, int e, long long a, rs_status_t *st);

/* Set (n > 0) or clear (n == 0) the schedule of actuator `a` of entity e. Validated first. */
int rs_set_schedule(const rs_model_t *m, rs_data_t *d, int e, int a, const double *t,
                    const double *v, size_t n, rs_status_t *st);

/* Set the commands of entity e from a task-space target through its robot's
 * target_to_commands (inverse kinematics). RS_EUNIMPL if the robot has none. */
int rs_set_target(const rs_model_t *m, rs_data_t *d, int e, const double *target, size_t n,
                  rs_status_t *st);

/* Whether (x, y) is in entity e's task-space workspace: 1 or 0; RS_EUNIMPL if it has none. */
int rs_reachable(const rs_model_t *m, int e, double x, double y);

/* Up to max_points (x, y) pairs on entity e's workspace boundary written to xy; returns how
 * many, or RS_EUNIMPL (with a reason in st) if it has no task space. */
int rs_workspace(const rs_model_t *m, int e, double *xy, int max_points, rs_status_t *st);

/* Advance `nsteps` control steps. The event log is cleared first and then holds this call's
 * events. On an integrator failure returns RS_ESIMFAIL with the state at the last good point. */
int rs_step(const rs_model_t *m, rs_data_t *d, uint64_t nsteps, rs_status_t *st);

/* rs_step without clearing the event log first: more control steps within the same request (a
 * task evaluates its reward after each control step and keeps the whole request's events).
 * RS_EDEADLINE when the abort flag (rs_data_set_abort) stopped it: the data may then be
 * partway through a control step (see rs_step_until). */
int rs_step_continue(const rs_model_t *m, rs_data_t *d, uint64_t nsteps, rs_status_t *st);

/* ---- interrupting a step: time slices and an abort flag ----------------------------------
 * A server stepping many clients' worlds on one thread runs a long Step in slices (it stops
 * at a control-step boundary once a slice's time is up, serves others, and goes on), and
 * bounds each request's compute time, which a single control step with extreme but in-range
 * parameters can exceed on its own (control_dt = 10, rtol = 1e-14: seconds per step). */

/* rs_step_continue that stops early at a control-step boundary: after at least one control
 * step, at the first boundary where rs_clock() >= yield_at (INFINITY: no clock is read), or at
 * any boundary once d's abort flag is set. *done is the control steps completed. Returns:
 *   0            the data is at a control-step boundary after *done steps (all nsteps, or
 *                fewer when the time was up or the flag was set at a boundary);
 *   RS_EDEADLINE the abort flag interrupted control step *done + 1 partway: the data is NOT
 *                at a boundary and must be restored (rs_snapshot_read of a snapshot written
 *                before the call) before it is used again;
 *   RS_ESIMFAIL  as rs_step.
 * Slicing changes nothing in the result: stepping n control steps in any number of calls is
 * bit-identical to one call (the data alone decides the future, see step.c). */
int rs_step_until(const rs_model_t *m, rs_data_t *d, uint64_t nsteps, double yield_at,
                  uint64_t *done, rs_status_t *st);

/* The flag that interrupts d's stepping, or NULL for none (the default). Any thread or a
 * signal handler may set *flag non-zero; it is read (relaxed) at every right-hand-side
 * evaluation and every control-step boundary, so a set flag stops a step within one
 * evaluation. The flag must outlive d or be replaced. Costs one load per evaluation. */
void rs_data_set_abort(rs_data_t *d, const atomic_int *flag);

/* Seconds on the monotonic clock (the time base of rs_step_until's yield_at). */
double rs_clock(void);

/* Apply an external wrench to body `body` of entity e during the next control step only (the
 * robot's wrench table, rs_robot.h, names its bodies and their n values; it replaces an earlier
 * wrench on that body not yet used). Returns 0, RS_ENOTFOUND (no such body: the message lists
 * them), RS_EINVAL (the count, a non-finite value) or RS_ERANGE (|value| > 1e9). */
int rs_apply_wrench(const rs_model_t *m, rs_data_t *d, int e, const char *body, const double *w,
                    size_t n, rs_status_t *st);

/* The control step is over: clear the wrenches it applied (step.c, at each step's end). */
void rs_wrench_step_over(const rs_model_t *m, rs_data_t *d);

/* A uniform double in [0, 1) from the world's rng (deterministic given the reset seed). */
double rs_data_uniform(rs_data_t *d);

/* Re-initialise the state of a just-reset world as if some initial-condition parameters of the
 * model (finger_x0, theta0, x0, ...) had the values in `init`; the model itself is unchanged.
 * A task samples its episode's start this way and the robots' own init and validation apply
 * (an initial pose inside an obstacle is refused as the parameter would be). Each entity named
 * in `init` is re-initialised; sensors are read again. The rng is not reseeded. Returns 0 or
 * the parameter's error (the data is then as rs_reset left it). */
int rs_reset_initial(const rs_model_t *m, rs_data_t *d, const rs_param_t *init, size_t n,
                     rs_status_t *st);

/* Tell `d` that its model changed (SetParams): modes are settled and the integrator restarted
 * at the current state. */
int rs_data_model_changed(const rs_model_t *m, rs_data_t *d, rs_status_t *st);

struct rs_stats;
/* Tell `d` that all its fields were just restored (a snapshot, a copy): guards registered
 * for `m`, the integrator restarted at (t, x) with step h_next, statistics set to `stats`
 * (NULL: those the data's fields hold). */
int rs_data_restored(const rs_model_t *m, rs_data_t *d, const struct rs_stats *stats,
                     rs_status_t *st);

/* Effective commands of entity e at the current time (held values, or schedules evaluated). */
void rs_current_commands(const rs_model_t *m, const rs_data_t *d, int e, double *u_out);

/* Integrator statistics since the data was created. */
typedef struct rs_stats {
    uint64_t internal_steps, rhs_evals, root_evals, events;
} rs_stats_t;
void rs_get_stats(const rs_data_t *d, rs_stats_t *out);

/* Mode name of entity e, event kind name for an event. */
const char *rs_mode_name(const rs_model_t *m, const rs_data_t *d, int e);
const char *rs_event_kind_name(const rs_model_t *m, const rs_event_t *ev);

/* ---- world: a model and its data, as the server keeps them ---------------------------- */

#define RS_TASK_MAX_NAMES 16 /* state variables, sensors, parameters, event kinds a task reads */

/* A task's names resolved against its world's model (rs_task_bind, episode.c): the entity it
 * drives and, for each name of its table (rs_task_t.names), an index: into rs_data_t.x (a
 * state variable), rs_data_t.sensors (a sensor), the robot's parameter table (a parameter) or
 * its event kinds. Resolved when the task is attached and at every reset, so a control step
 * reads by index and never compares names. */
typedef struct rs_task_bind {
    const rs_robot_t *robot; /* the robot the indices were resolved for; NULL: not resolved */
    const rs_task_t *task;   /* the task resolved (a declared task's callbacks read it) */
    int entity;
    int index[RS_TASK_MAX_NAMES];
} rs_task_bind_t;

typedef struct rs_world {
    const rs_model_t *model; /* shared (rs_model_share): never written through a world */
    rs_data_t *data;
    const rs_task_t *task; /* the task the world runs as an episode (rs_task.h), or NULL */
    rs_task_bind_t task_bind; /* the task's names resolved in `model` (with task) */
    struct rs_randomize *randomize; /* parameters drawn at each reset (rs_randomize.h), or NULL */
} rs_world_t;

/* Create a world from a preset with overrides, reset with `seed`. NULL on failure. */
rs_world_t *rs_world_new(const char *preset, const rs_param_t *params, size_t nparams,
                         uint64_t seed, rs_status_t *st);

/* Free `*w` (NULL-safe) and set it to NULL. */
void rs_world_destroy(rs_world_t **w);

/* A hint, changing nothing: start loading the memory a control step of w will read, so that
 * stepping many worlds in turn can fetch the next world's while stepping this one. */
void rs_world_prefetch(const rs_world_t *w);

/* The same hint in RS_WORLD_PREFETCH_STAGES stages, for a loop over many worlds: a world's
 * memory is a chain of pointers (the world, its data, its integrator, ARKODE's memory), and each
 * stage loads the next link of it. Calling stage k for the world k places ahead (k =
 * RS_WORLD_PREFETCH_STAGES .. 1) at every step of the loop, each stage reads only lines the one
 * before loaded a step earlier, so no load waits on memory; rs_world_prefetch is all the stages
 * at once. */
#define RS_WORLD_PREFETCH_STAGES 4
void rs_world_prefetch_stage(const rs_world_t *w, int stage);

/* Validate and apply parameter changes, then restart the integrator; unchanged on error. Beside
 * the model's own checks (RS_EINVAL, RS_ERANGE, RS_ENOTFOUND), the live state must fit the new
 * parameters: RS_EPRECOND names a body the change would leave inside another, past a stop,
 * unassemblable, or in a compliant layer holding more energy than before (rs_robot_t.admissible;
 * docs/physics-edges.md). */
int rs_world_set_params(rs_world_t *w, const rs_param_t *params, size_t nparams, rs_status_t *st);

#endif
