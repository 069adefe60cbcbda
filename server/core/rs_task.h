/* Tasks: a world run as a Gym-style episode. The built-in tasks are task documents
 * (rs_task_doc.h), one family per file tasks/FAMILY.json, which the build compiles in and lists
 * (cmake/embed_documents.cmake); a program may also run a task written as a C row (rs_task_t
 * with its callbacks) with rs_world_new_with_task. One row per task says which entity the agent drives, which variables form the
 * observation, which actuators form the action (with bounds), the reward (documented in the
 * row's `reward` string, the one place it is written down), when the episode terminates
 * (success) and when it is truncated (max_episode_steps control steps), and how a reset samples
 * the initial state and the targets from the world's rng (so a seed fixes the episode).
 *
 * Rewards and ends are computed in the server after every control step, so agents in any
 * language see the same numbers. A Step of n control steps holds the action over them, returns
 * the sum of their rewards, and stops early at the end of the episode (the reply's step_count
 * shows where). The episode's state (targets, flags, last reward, info figures) lives in
 * rs_data_t.task[] and episode_steps, so a snapshot of the data holds it too. */
#ifndef RS_TASK_H
#define RS_TASK_H

#include "rs_robot.h"

#define RS_TASK_MAX_OBS 16
#define RS_TASK_MAX_ACT 4
#define RS_TASK_MAX_INFO 8

/* The layout of rs_data_t.task[]. */
enum {
    RS_TASK_REWARD,     /* reward of the last Step (the sum over its control steps); 0 after reset */
    RS_TASK_TERMINATED, /* 1 once the task reached a terminal state (success) */
    RS_TASK_TRUNCATED,  /* 1 once episode_steps reached max_episode_steps without terminating */
    RS_TASK_RETURN,     /* the sum of the rewards since reset */
    RS_TASK_INFO,       /* RS_TASK_MAX_INFO info figures of the last control step */
    RS_TASK_PRIVATE = RS_TASK_INFO + RS_TASK_MAX_INFO /* the task's own: targets, counters */
};

/* A parameter default a task sets on its preset before the client's overrides. */
typedef struct rs_task_param {
    const char *entity, *name; /* entity "" is the world (control_dt, ...) */
    int n;
    const double *values;
} rs_task_param_t;

/* What a name in a task's table is: looked up in the robot's state, sensor, parameter or
 * event kind table of the task's entity. */
typedef enum rs_task_name_kind {
    RS_TASK_NAME_STATE,  /* index into rs_data_t.x */
    RS_TASK_NAME_SENSOR, /* index into rs_data_t.sensors */
    RS_TASK_NAME_PARAM,  /* row in the robot's parameter table */
    RS_TASK_NAME_EVENT,  /* event kind (rs_event_t.kind) */
} rs_task_name_kind_t;

typedef struct rs_task_name {
    rs_task_name_kind_t kind;
    const char *name;
} rs_task_name_t;

struct rs_task {
    const char *name;   /* "FingerPush-v0" */
    const char *preset; /* the preset the world is built from */
    const char *entity; /* the entity the action drives */
    const char *doc;    /* the goal, in a sentence or two */
    const char *reward; /* the reward formula, terms and success condition, in words */
    int nobs;
    const rs_var_desc_t *obs; /* observation vector, with bounds (-inf/inf when unbounded) */
    int nact;
    const rs_var_desc_t *act; /* action i is the command of actuator i of `entity` */
    int ninfo;
    const char *const *info;  /* names of the info figures */
    uint32_t max_episode_steps;
    int nparams;
    const rs_task_param_t *params;

    /* Optional, for normalized task versions (-v1). cmd: the action is normalized, action i in
     * act[i]'s bounds ([-1, 1]) commands cmd[i].lower ... cmd[i].upper linearly. obs_scale:
     * observation i is observe()'s value divided by obs_scale[i], clipped to obs[i]'s bounds.
     * reward_scale: evaluate()'s reward times this (0: 1). */
    const rs_var_desc_t *cmd;
    const double *obs_scale;
    double reward_scale;

    /* The names the callbacks below read (at most RS_TASK_MAX_NAMES), resolved once per world
     * into its rs_task_bind_t (b->index[i] for names[i]); a name the robot lacks refuses the
     * world (RS_EINTERNAL). */
    int nnames;
    const rs_task_name_t *names;

    /* Optional: refuse a model the task cannot run on (a parameter override that breaks it). */
    int (*validate)(const rs_model_t *m, int e, rs_status_t *st);

    /* Sample the episode's start and targets from the rng (rs_data_uniform) after rs_reset:
     * initial state through rs_reset_initial, targets into task[RS_TASK_PRIVATE...]. The
     * task's entity is b->entity. */
    int (*reset)(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b, rs_status_t *st);

    /* The observation (nobs values) from the data: 0, or RS_ESIMFAIL naming the task and the
     * entry when a value is not finite (NaN, +-inf; obs holds it as it is, unclipped). */
    int (*observe)(const rs_model_t *m, const rs_data_t *d, const rs_task_bind_t *b,
                   double *obs, rs_status_t *st);

    /* After each control step: the reward of that step (*reward), *terminated, the info
     * figures. Events of this control step are d->events[first_event ... d->nevents - 1].
     * Returns 0, or RS_ESIMFAIL naming the task and the expression when the reward, success,
     * termination or an info figure is not finite (a NaN flag is no answer, not "true"). */
    int (*evaluate)(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                    int first_event, double *reward, int *terminated, double *info,
                    rs_status_t *st);
};

/* A built-in task family: tasks/NAME.json, a JSON array of task documents (rs_task_doc.h). The
 * build generates the table of them, one row per file (rs_registry.h's rs_task_families). */
typedef struct rs_task_family {
    const char *name;      /* the file's name without .json */
    const char *documents; /* its text */
} rs_task_family_t;

/* The task called `name` (a built-in family's or a registered one), or NULL. */
const rs_task_t *rs_task_find(const char *name);

/* Names of the tasks, NULL-terminated. */
const char *const *rs_task_names(void);

/* Create a world that runs task `task`: its preset (preset NULL or "" means the task's own; any
 * other preset is refused with RS_EINVAL), the task's parameter defaults, then `params` on top,
 * reset and the episode started with `seed`. NULL on failure: RS_ENOTFOUND for an unknown task
 * (the message lists the tasks), RS_EINVAL / RS_ERANGE for bad parameters. Free with
 * rs_world_destroy. */
rs_world_t *rs_world_new_task(const char *task, const char *preset, const rs_param_t *params,
                              size_t nparams, uint64_t seed, rs_status_t *st);

/* rs_world_new_task for task t itself, registered or not (a parsed document: the fuzzer's);
 * t must outlive the world. */
rs_world_t *rs_world_new_with_task(const rs_task_t *t, const char *preset,
                                   const rs_param_t *params, size_t nparams, uint64_t seed,
                                   rs_status_t *st);

/* Whether task t can run on model m (its entity is there, its validate accepts it): 0, or the
 * reason (SetParams on a task world is refused with it). */
int rs_task_check_model(const rs_task_t *t, const rs_model_t *m, rs_status_t *st);

/* Resolve task t's names (t->names) in model m into *b: 0, or RS_EINTERNAL when m lacks
 * the task's entity or its robot lacks one of the names (the message says which). */
int rs_task_bind(const rs_task_t *t, const rs_model_t *m, rs_task_bind_t *b, rs_status_t *st);

/* The control steps after which task t's episodes on model m are truncated: the world
 * parameter max_episode_steps when set (> 0), else the task's own limit. */
uint64_t rs_task_episode_limit(const rs_task_t *t, const rs_model_t *m);

/* Reset a world with `seed`: rs_reset, and for a task world a new episode (start and targets
 * sampled, reward 0, flags cleared, episode_steps 0). */
int rs_world_reset(rs_world_t *w, uint64_t seed, rs_status_t *st);

/* Start a new episode of task world w from its data as it is (just reset): the task's start
 * and targets sampled, reward 0, flags cleared, episode_steps 0. */
int rs_world_start_episode(rs_world_t *w, rs_status_t *st);

/* Check an action for task t: n values (else RS_EINVAL), each finite (RS_EINVAL) and within
 * its bounds (RS_ERANGE); the message names the action variable. */
int rs_task_check_action(const rs_task_t *t, const double *action, size_t n, rs_status_t *st);

/* One agent step of a task world: apply `action` (n values; n = 0 holds the commands in force)
 * and advance up to `nsteps` control steps, evaluating the reward after each and stopping at
 * the end of the episode. The event log holds the whole call's events. Refused with
 * RS_EPRECOND when the world runs no task or its episode has ended (Reset first); nothing
 * changes on a refused action. */
int rs_world_task_step(rs_world_t *w, const double *action, size_t n, uint64_t nsteps,
                       rs_status_t *st);

/* rs_world_task_step in slices (rs_step_until): stops after at least one control step at the
 * first boundary where rs_clock() >= yield_at, at the end of the episode, or when the abort
 * flag is set; *done is the control steps completed. resume = 0 starts a Step (action applied,
 * event log and reward cleared); resume = 1 goes on with the same Step (no action: the one
 * applied holds), keeping its events and summing its reward on, so a Step in any number of
 * slices is bit-identical to one call. The Step is over when *done reaches what was asked or
 * the episode ended (task[RS_TASK_TERMINATED] or [RS_TASK_TRUNCATED]); only then is its reward
 * added to the return. Returns 0, an error as rs_world_task_step, or RS_EDEADLINE when the
 * abort flag interrupted a control step partway (restore the data, as rs_step_until says). */
int rs_world_task_step_until(rs_world_t *w, const double *action, size_t n, uint64_t nsteps,
                             double yield_at, int resume, uint64_t *done, rs_status_t *st);

/* What an agent sees of a task world now. */
typedef struct rs_task_view {
    int nobs;
    double obs[RS_TASK_MAX_OBS];
    double reward; /* of the last Step; 0 after reset */
    int terminated, truncated;
    double episode_return;
    int ninfo;
    const char *const *info_names;
    double info[RS_TASK_MAX_INFO];
} rs_task_view_t;

/* Fill `out` for a task world; RS_EPRECOND when it runs no task. */
int rs_world_task_view(const rs_world_t *w, rs_task_view_t *out, rs_status_t *st);

#endif
