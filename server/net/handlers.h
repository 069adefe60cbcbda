/* The request handlers, grouped by family (handlers_world.c, handlers_step.c, handlers_batch.c,
 * handlers_spec.c, montecarlo_job.c), and what those files share. dispatch.c's table lists
 * them; each has the rs_handler_fn signature. */
#ifndef RS_HANDLERS_H
#define RS_HANDLERS_H

#include "rs_codec.h"
#include "rs_log.h"
#include "server_internal.h"

/* Set the Response's result case CASE to field = value. */
#define REPLY(rp, field, CASE, value)                                                          \
    do {                                                                                       \
        (rp)->result_case = ROBOSIM__V1__RESPONSE__RESULT_##CASE;                              \
        (rp)->field = (value);                                                                 \
    } while (0)

/* The reply could not be built: the server ran out of memory (a negative code). */
#define OOM(st) rs_fail((st), RS_EEXHAUSTED, "server out of memory building the reply")

/* Declares handler `name` (an rs_handler_fn). */
#define RS_HANDLER(name)                                                                       \
    int name(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,                  \
             Robosim__V1__Response *rp, rs_status_t *st)

/* handlers_world.c */
RS_HANDLER(op_list_worlds);
RS_HANDLER(op_create_world);
RS_HANDLER(op_destroy_world);
RS_HANDLER(op_fork_world);
RS_HANDLER(op_claim);

/* handlers_step.c */
RS_HANDLER(op_reset);
RS_HANDLER(op_step);
RS_HANDLER(op_get_state);
RS_HANDLER(op_set_state);
RS_HANDLER(op_set_force);
RS_HANDLER(op_apply_wrench);
RS_HANDLER(op_set_params);
RS_HANDLER(op_set_schedule);
RS_HANDLER(op_set_target);

/* handlers_batch.c */
RS_HANDLER(op_step_batch);

/* handlers_spec.c */
RS_HANDLER(op_register_task);
RS_HANDLER(op_get_spec);
RS_HANDLER(op_get_workspace);
RS_HANDLER(op_load_motion_spec);
RS_HANDLER(op_get_motion_spec);
RS_HANDLER(op_clear_motion_spec);
RS_HANDLER(rs_op_get_history);

/* montecarlo_job.c */
RS_HANDLER(op_monte_carlo);

/* ---- shared by the handlers ---- */

/* handlers_step.c: the step engine (StepBatch and MonteCarlo run it too) */

/* Entity index by name, or RS_ENOTFOUND naming the entities there are. */
int rs_find_entity(const rs_world_t *w, const char *name, rs_status_t *st);

/* The number of control steps a Step asks for, validated. */
int rs_step_count(const rs_server_t *s, const Robosim__V1__Step *sp, double dt, uint64_t *n,
               rs_status_t *st);

/* Cut a Step's reply state down to the parts the Step asks for (all when it names none). */
void rs_keep_parts(Robosim__V1__State *state, const Robosim__V1__Step *sp);

/* The State of w after a Step, in arena a; its seq is the stream's so far. */
int rs_step_state(world_slot_t *w, rs_arena_t *a, Robosim__V1__State **out, rs_status_t *st);

/* How a Step may drive world w: a task world by its action vector only, other worlds by
 * commands; never both. 0 or RS_EINVAL. */
int rs_drive_rule(const world_slot_t *w, size_t ncommands, size_t naction, rs_status_t *st);

/* Whether a task world's episode ended (a task Step stops there). */
int rs_episode_over(const rs_world_t *world);

/* Free the data kept for batches moved to the stepper (rs_server_t.spare). */
void rs_batch_spares_free(rs_server_t *s);

/* The loop runs a control step (or a StepBatch's slice) for at most FUSE_SECONDS (the
 * watchdog's abort ends it then, and it is rolled back): longer work goes to the stepper
 * thread, so other clients are served meanwhile. */
#define FUSE_SECONDS 0.010

/* rs_run_control_steps's fuse: none, its own (a Step on the loop), or armed by the caller (a
 * StepBatch slice on the loop: every item of the slice stops when it blows). */
enum { RS_FUSE_NONE = 0, RS_FUSE_OWN = 1, RS_FUSE_ARMED = 2 };

/* rs_run_control_steps's return value: the fuse ended a control step (rolled back): run it off
 * the loop. */
#define RUN_OFF_LOOP 2

/* Run up to n control steps of world w, one slice (one_slice) or to the end, within
 * `deadline`, interruptible by `abort`, rolled back to a control-step boundary (saved in rb,
 * the calling thread's) when interrupted (handlers_step.c says how); *done the steps done. 0,
 * RUN_OFF_LOOP (fuse), or an error. */
int rs_run_control_steps(rs_server_t *s, world_slot_t *w, rs_rollback_t *rb,
                         const double *action, size_t naction, uint64_t n, int resume,
                         int one_slice, double deadline, int fuse, atomic_int *abort,
                         uint64_t *done, rs_status_t *st);

/* Arm the watchdog at the request's remaining budget; returns that deadline (rs_clock()). */
double rs_arm_budget(rs_server_t *s);

/* The request's slice is over: the watchdog disarmed, the time spent counted. */
void rs_disarm_budget(rs_server_t *s, double deadline);

/* Why a Step stopped short of what it asked: UNAVAILABLE (stopping) or DEADLINE_EXCEEDED. */
int rs_stopped_short(rs_server_t *s, const world_slot_t *w, uint64_t done, uint64_t asked,
                  rs_status_t *st);

/* Check a Step's count and commands for world w and apply the commands: *n is the control
 * steps it asks for. Nothing changes on error. */
int rs_apply_step_commands(rs_server_t *s, world_slot_t *w, const Robosim__V1__Step *sp,
                        uint64_t *n, rs_status_t *st);


/* ---- batch_checks.c: a StepBatch checked as a whole (the handler, a shard's split) ---- */

/* A part's places: none, or one per world. */
int rs_batch_places_ok(size_t nplaces, size_t n, rs_status_t *st);

/* The batch's size within limits: not empty, not over --max-batch. `what` names the part. */
int rs_batch_size_ok(const rs_server_t *s, size_t n, const char *what, rs_status_t *st);

/* The whole batch may ask for as many control steps as one Step may: a request must not hold
 * the server for hours. */
int rs_batch_total_ok(const rs_server_t *s, uint64_t total, rs_status_t *st);

/* The request's lengths against the number of worlds n, before anything is looked up. */
int rs_batch_arrays_check(rs_server_t *s, const Robosim__V1__BatchArrays *in, size_t n,
                          rs_status_t *st);

/* The commands or actions of n worlds of `preset` and `task` (NULL: none) with nu actuators
 * and na action values each: n times as many, or none. */
int rs_batch_arrays_fit(const Robosim__V1__BatchArrays *in, size_t n, const char *preset,
                        const char *task, size_t nu, size_t na, rs_status_t *st);

/* World `id` at place `at`, of preset and task (NULL: none), is not like the batch's first
 * world like_id: its INVALID_ARGUMENT. */
int rs_batch_not_like(rs_status_t *st, size_t at, uint64_t id, const char *preset, const char *task,
                      uint64_t like_id, const char *like_preset, const char *like_task);

/* The reply's sizes and counts for n worlds of nx state, ns sensor, nobs observation and
 * ninfo info values (the info keys, nkeys of them, when nobs). */
void rs_batch_arrays_sizes(Robosim__V1__BatchArraysReply *out, size_t n, size_t nx, size_t ns,
                           size_t nobs, size_t ninfo, char **keys, size_t nkeys);

#endif
