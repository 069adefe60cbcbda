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


#endif
