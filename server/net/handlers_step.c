/* The handlers that run or set one world: Step (and the step engine StepBatch shares: control
 * steps in slices, the rollback boundary, the stepper hand-off), Reset, GetState, SetState and
 * the set_* commands. */

#include "handlers.h"
#include "worlds.h"
#include "rs_randomize.h"
#include "rs_sensitivity.h"
#include "rs_snapshot.h"
#include "rs_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static Robosim__V1__Ack ack = ROBOSIM__V1__ACK__INIT;

/* Entity index by name, or RS_ENOTFOUND naming the entities there are. */
int rs_find_entity(const rs_world_t *w, const char *name, rs_status_t *st)
{
    int e = rs_model_entity(w->model, name ? name : "");
    if (e >= 0)
        return e;
    char names[200] = "";
    for (int i = 0; i < w->model->nentities; i++)
        rs_join(names, sizeof names, "'%s'", w->model->ent[i].name);
    return rs_fail(st, RS_ENOTFOUND, "no entity '%s' in world (entities: %s)", name ? name : "",
                   names);
}


static int reply_state(rs_server_t *s, world_slot_t *w, Robosim__V1__Response *rp,
                       Robosim__V1__Response__ResultCase which, rs_status_t *st)
{
    Robosim__V1__State *state = rs_codec_state(&s->arena, w->id, w->world);
    if (!state)
        return OOM(st);
    state->seq = w->stream.seq;
    /* a Reset or SetState jumps the world: watchers see it like a Step */
    if (which == ROBOSIM__V1__RESPONSE__RESULT_RESET || which == ROBOSIM__V1__RESPONSE__RESULT_SET_STATE)
        rs_stream_offer(s, w, state);
    rp->result_case = which;
    switch (which) {
    case ROBOSIM__V1__RESPONSE__RESULT_RESET: rp->reset = state; break;
    case ROBOSIM__V1__RESPONSE__RESULT_STEP: rp->step = state; break;
    case ROBOSIM__V1__RESPONSE__RESULT_SET_STATE: rp->set_state = state; break;
    default: rp->get_state = state; break;
    }
    return 0;
}

int op_reset(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
             Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__Reset *r = rq->reset;
    rs_world_t *world = w->world;
    uint64_t seed = r->seed_given_case == ROBOSIM__V1__RESET__SEED_GIVEN_SEED ? r->seed
                                                                             : world->data->seed;
    if (r->n_randomize && r->randomize_clear)
        return rs_fail(st, RS_EINVAL, "Reset sets both randomize and randomize_clear; set one");
    if (r->n_randomize || r->randomize_clear) {
        rs_randomize_item_t *items = rs_codec_randomize_items(&s->arena, r->randomize,
                                                              r->n_randomize);
        if (!items)
            return OOM(st);
        if (rs_world_set_randomize(world, items, r->n_randomize, st) < 0)
            return st->code;
    }
    int rc = rs_world_reset(world, seed, st); /* a task world starts a new episode */
    if (rc < 0)
        return rc;
    return reply_state(s, w, rp, ROBOSIM__V1__RESPONSE__RESULT_RESET, st);
}

/* The number of control steps a Step asks for, validated. */
int rs_step_count(const rs_server_t *s, const Robosim__V1__Step *sp, double dt,
                      uint64_t *n, rs_status_t *st)
{
    uint64_t max = s->cfg.max_steps_per_request;
    if (sp->length_case == ROBOSIM__V1__STEP__LENGTH__NOT_SET)
        return rs_fail(st, RS_EINVAL,
                       "the Step sets neither steps nor duration; set one of them (a Step of "
                       "one control step: steps = 1)");
    if (sp->length_case == ROBOSIM__V1__STEP__LENGTH_STEPS) {
        if (!sp->steps)
            return rs_fail(st, RS_EINVAL, "steps is 0; a Step takes at least one control step");
        if (sp->steps > max)
            return rs_fail(st, RS_ERANGE,
                           "%u steps exceed this server's limit of %llu per request "
                           "(--max-steps-per-request); split the request",
                           sp->steps, (unsigned long long)max);
        *n = sp->steps;
        return 0;
    }
    if (!isfinite(sp->duration))
        return rs_fail(st, RS_EINVAL, "duration is not finite");
    if (sp->duration <= 0.0)
        return rs_fail(st, RS_EINVAL,
                       "duration must be positive (got %g s); set duration in seconds or steps",
                       sp->duration);
    double k = sp->duration / dt;
    if (k > (double)max)
        return rs_fail(st, RS_ERANGE,
                       "duration %g s is %.3g control steps of %g s, over this server's limit of "
                       "%llu per request (--max-steps-per-request)",
                       sp->duration, k, dt, (unsigned long long)max);
    double kr = nearbyint(k);
    if (kr < 1.0 || fabs(k - kr) > 1e-9 * fmax(1.0, kr))
        return rs_fail(st, RS_EINVAL,
                       "duration %g s is not a whole number of control steps of %g s; use a "
                       "multiple of control_dt or set steps",
                       sp->duration, dt);
    *n = (uint64_t)kr;
    return 0;
}

/* Step.parts: every part named is one of StatePart's (checked before the Step changes
 * anything). */
static int parts_ok(const Robosim__V1__Step *sp, rs_status_t *st)
{
    for (size_t i = 0; i < sp->n_parts; i++)
        if (sp->parts[i] < ROBOSIM__V1__STATE_PART__STATE_PART_STATE ||
            sp->parts[i] > ROBOSIM__V1__STATE_PART__STATE_PART_STATS)
            return rs_fail(st, RS_EINVAL,
                           "Step.parts[%zu] is %d, not a part of State; name STATE (1), SENSORS "
                           "(2), EVENTS (3), TASK (4) or STATS (5), or leave parts empty for all",
                           i, (int)sp->parts[i]);
    return 0;
}

/* Cut a Step's reply state down to the parts the Step asks for (all when it names none). Done
 * after the state was offered to the observer stream, whose watchers get the whole state. */
void rs_keep_parts(Robosim__V1__State *state, const Robosim__V1__Step *sp)
{
    if (!state || !sp->n_parts)
        return;
    unsigned want = 0;
    for (size_t i = 0; i < sp->n_parts; i++)
        want |= 1u << sp->parts[i];
    int has_state = want & (1u << ROBOSIM__V1__STATE_PART__STATE_PART_STATE);
    int has_sensors = want & (1u << ROBOSIM__V1__STATE_PART__STATE_PART_SENSORS);
    if (!has_state && !has_sensors)
        state->n_entities = 0;
    for (size_t e = 0; e < state->n_entities; e++) {
        Robosim__V1__EntityState *es = state->entities[e];
        if (!has_state) {
            es->n_state = es->n_commands = 0;
            es->mode = (char *)protobuf_c_empty_string;
        }
        if (!has_sensors)
            es->n_sensors = 0;
    }
    if (!(want & (1u << ROBOSIM__V1__STATE_PART__STATE_PART_EVENTS))) {
        state->n_events = 0;
        state->events_dropped = 0;
    }
    if (!(want & (1u << ROBOSIM__V1__STATE_PART__STATE_PART_TASK)))
        state->task = NULL;
    if (!(want & (1u << ROBOSIM__V1__STATE_PART__STATE_PART_STATS)))
        state->stats = NULL;
}

/* The State of w after a Step, in arena a; its seq is the stream's so far (rs_stream_offer
 * moves it on when the state is published). */
int rs_step_state(world_slot_t *w, rs_arena_t *a, Robosim__V1__State **out, rs_status_t *st)
{
    if (!(*out = rs_codec_state(a, w->id, w->world)))
        return OOM(st);
    (*out)->seq = w->stream.seq;
    return 0;
}

/* How a Step may drive world w: a task world by its action vector only, other worlds by
 * commands (or an action, refused by the task step as "runs no task"); never both. */
int rs_drive_rule(const world_slot_t *w, size_t ncommands, size_t naction, rs_status_t *st)
{
    if (naction && ncommands)
        return rs_fail(st, RS_EINVAL, "set either action or commands in a Step, not both");
    if (w->world->task && ncommands)
        return rs_fail(st, RS_EINVAL,
                       "world %llu runs task '%s': drive it with Step.action (TaskSpec.action), "
                       "not commands",
                       (unsigned long long)w->id, w->world->task->name);
    return 0;
}

/* Bring world w back to the boundary saved in rb (a control step was interrupted). */
static void restore_boundary(world_slot_t *w, const rs_rollback_t *rb)
{
    rs_status_t rst;
    if (rs_data_rollback(rb, w->world->model, w->world->data, &rst) < 0)
        rs_log(RS_LOG_ERROR, "world %llu: cannot roll back an interrupted control step: %s",
               (unsigned long long)w->id, rst.message); /* out of memory for schedules only */
}

/* Whether a task world's episode ended (a task Step stops there). */
int rs_episode_over(const rs_world_t *world)
{
    return world->task && (world->data->task[RS_TASK_TERMINATED] != 0.0 ||
                           world->data->task[RS_TASK_TRUNCATED] != 0.0);
}

/* The loop runs a control step for at most FUSE_SECONDS (the watchdog's abort ends it then, and
 * it is rolled back): a longer one goes to the stepper thread, so other clients are served
 * meanwhile. A world whose control steps there took more than SLOW_STEP_SECONDS of CPU time
 * each (not wall time: a busy machine does not make a world slow) goes there from its next
 * Step's start. */
#define SLOW_STEP_SECONDS 0.005


/* Run world w (commands in place) toward n control steps in all, *done of them already
 * made (*done > 0 or `resume`: the same Step goes on: events kept, no action applied again),
 * through its task when it runs one or an action was given. Returns when the Step is over
 * (*done == n, or the episode ended), after one slice when `one_slice`, once rs_clock() passes
 * `deadline` (the request's budget), or on stop: 0, or an error. `abort` is the flag w's data
 * is wired to. With `fuse` RS_FUSE_OWN (the loop only) a control step still running
 * FUSE_SECONDS after its slice began is interrupted and rolled back: RUN_OFF_LOOP. With
 * RS_FUSE_ARMED the caller armed the watchdog's fuse for a whole StepBatch slice: any
 * interruption before the deadline rolls back and returns RUN_OFF_LOOP, the flag left set. Runs on StepBatch's workers and on
 * the stepper too: touches world w only (and reads s->cfg, s->stop).
 *
 * Every slice runs from a boundary saved in rb (rs_data_save: the thread's own, reused from
 * world to world), so a control step the abort flag interrupts is rolled back to the slice's
 * start (the world then is at a control-step boundary: *done says which). */
int rs_run_control_steps(rs_server_t *s, world_slot_t *w, rs_rollback_t *rb,
                         const double *action, size_t naction, uint64_t n, int resume,
                         int one_slice, double deadline, int fuse, atomic_int *abort,
                         uint64_t *done, rs_status_t *st)
{
    rs_world_t *world = w->world;
    int task = world->task || naction;
    for (;;) {
        int going_on = resume || *done > 0, rc = 0;
        if ((rc = rs_data_save(rb, world->model, world->data, st)) < 0)
            return rc;
        /* The clock is read where it decides something: the end of a slice of several control
         * steps, a fuse of its own (a batch's, armed once for its slice, needs none), an
         * interruption, a Step that goes on. One control step that ends reads none (a batch's
         * world-step is about 2 us, a clock read here 50 ns): the watchdog holds the budget
         * through the abort flag either way. */
        uint64_t k = 0, want = n - *done;
        double t0 = want > 1 || fuse == RS_FUSE_OWN ? rs_clock() : NAN, now = NAN;
        double yield_at = want > 1 ? fmin(t0 + s->cfg.slice_seconds, deadline) : deadline;
        if (fuse == RS_FUSE_OWN)
            atomic_store_explicit(&s->abort_at, fmin(deadline, t0 + FUSE_SECONDS),
                                  memory_order_relaxed);
        if (task) {
            rc = rs_world_task_step_until(world, going_on ? NULL : action, going_on ? 0 : naction,
                                          want, yield_at, going_on, &k, st);
        } else {
            if (!going_on) {
                world->data->nevents = 0;
                world->data->events_dropped = 0;
            }
            rc = rs_step_until(world->model, world->data, want, yield_at, &k, st);
        }
        if (fuse == RS_FUSE_OWN)
            atomic_store_explicit(&s->abort_at, deadline, memory_order_relaxed);
        if (rc == RS_EDEADLINE || k == 0)
            now = rs_clock();
        if (rc == RS_EDEADLINE) {
            /* interrupted partway through a control step: back to the slice's start. The
             * watchdog may set the flag a moment after a slice ended in time, so an interrupt
             * before the deadline (and not a stop, nor the fuse) only costs a retry */
            restore_boundary(w, rb);
            rs_status_clear(st);
            if (now < deadline && !rs_server_stopping(s)) {
                if (fuse == RS_FUSE_ARMED)
                    return RUN_OFF_LOOP; /* the flag is the batch's: left set for the others */
                atomic_store_explicit(abort, 0, memory_order_relaxed);
                if (fuse && now >= t0 + FUSE_SECONDS)
                    return RUN_OFF_LOOP;
                continue;
            }
            return 0;
        }
        if (rc == 0 && k == 0 && now < deadline && !rs_server_stopping(s)) {
            /* the control step's start (settle, its events) may have run: back to the
             * boundary, so the step runs whole when it runs */
            restore_boundary(w, rb);
            if (fuse == RS_FUSE_ARMED)
                return RUN_OFF_LOOP;
            /* stopped at the first boundary by a flag the watchdog set late (see above) */
            atomic_store_explicit(abort, 0, memory_order_relaxed);
            continue;
        }
        *done += k;
        if (rc < 0) {
            rs_log(RS_LOG_WARN, "world %llu: %s", (unsigned long long)w->id, st->message);
            return rc;
        }
        if (*done >= n || (task && rs_episode_over(world)) || one_slice ||
            rs_server_stopping(s))
            return 0;
        if (isnan(now))
            now = rs_clock();
        if (now >= deadline)
            return 0;
    }
}

/* The request's budget deadline from now (what its earlier slices left), armed on the
 * watchdog: the abort flag is set when it passes. The loop's thread only. */
double rs_arm_budget(rs_server_t *s)
{
    double deadline = rs_clock() + fmax(0.0, s->cfg.max_request_seconds - s->cont->used);
    atomic_store_explicit(&s->abort_at, deadline, memory_order_relaxed);
    if (!rs_server_stopping(s))
        atomic_store_explicit(&s->abort, 0, memory_order_relaxed);
    return deadline;
}

/* The request's slice is over: the watchdog disarmed, the time spent counted. */
void rs_disarm_budget(rs_server_t *s, double deadline)
{
    atomic_store_explicit(&s->abort_at, INFINITY, memory_order_relaxed);
    /* a flag the budget or a StepBatch's fuse set stops nothing after the request (a task
     * world's next Reset draws under it): only a stop's stays */
    if (!rs_server_stopping(s))
        atomic_store_explicit(&s->abort, 0, memory_order_relaxed);
    s->cont->used = s->cfg.max_request_seconds - (deadline - rs_clock());
}

/* Why a Step stopped short of what it asked: the server is stopping (UNAVAILABLE) or its
 * compute budget ran out (DEADLINE_EXCEEDED). The world is at a control-step boundary. */
int rs_stopped_short(rs_server_t *s, const world_slot_t *w, uint64_t done, uint64_t asked,
                         rs_status_t *st)
{
    const rs_data_t *d = w->world->data;
    if (rs_server_stopping(s))
        return rs_fail(st, RS_EUNAVAIL,
                       "the server is stopping: world %llu stopped after %llu of the %llu control "
                       "steps asked (t = %.9g s, step_count %llu); reconnect when it is back",
                       (unsigned long long)w->id, (unsigned long long)done,
                       (unsigned long long)asked, d->t, (unsigned long long)d->step_count);
    return rs_fail(st, RS_EDEADLINE,
                   "world %llu stopped after %llu of the %llu control steps asked (t = %.9g s, "
                   "step_count %llu): over this server's compute budget of %g s per request "
                   "(--max-request-seconds); the world can be stepped on from there; ask for "
                   "fewer steps per request",
                   (unsigned long long)w->id, (unsigned long long)done, (unsigned long long)asked,
                   d->t, (unsigned long long)d->step_count, s->cfg.max_request_seconds);
}

/* Check a Step's count and commands for world w and apply the commands: *n is the control
 * steps it asks for. Nothing changes on error. */
int rs_apply_step_commands(rs_server_t *s, world_slot_t *w, const Robosim__V1__Step *sp,
                               uint64_t *n, rs_status_t *st)
{
    rs_world_t *world = w->world;
    int rc = rs_step_count(s, sp, world->model->control_dt, n, st);
    if (rc < 0 || (rc = parts_ok(sp, st)) < 0 || (rc = rs_drive_rule(w, sp->n_commands, sp->n_action, st)) < 0)
        return rc;
    if (!world->task && !sp->n_action) {
        /* check every command before applying any */
        int ents[RS_MAX_ENTITIES * 4];
        if (sp->n_commands > sizeof ents / sizeof ents[0])
            return rs_fail(st, RS_EINVAL, "%zu commands in one Step; at most one per entity",
                           sp->n_commands);
        for (size_t i = 0; i < sp->n_commands; i++) {
            const Robosim__V1__ActuatorCommand *c = sp->commands[i];
            if ((ents[i] = rs_find_entity(world, c->entity, st)) < 0)
                return ents[i];
            for (size_t j = 0; j < i; j++)
                if (ents[j] == ents[i])
                    return rs_fail(st, RS_EINVAL, "entity '%s' is commanded twice in one Step",
                                   c->entity);
            if ((rc = rs_check_commands(world->model, ents[i], c->values, c->n_values, st)) < 0)
                return rc;
        }
        for (size_t i = 0; i < sp->n_commands; i++)
            rs_set_commands(world->model, world->data, ents[i], sp->commands[i]->values,
                            sp->commands[i]->n_values, NULL);
    }
    return 0;
}

/* A Step's control steps run on the stepper thread: it steps a copy of the world's data (the
 * world itself stays at the hand-off boundary, which the loop may read meanwhile), and the loop
 * copies the result back when it resumes the request. */
typedef struct step_job {
    world_slot_t slot;  /* the world's slot at the hand-off: its world is `world` */
    rs_rollback_t *rb;  /* the boundary of its slices */
    rs_world_t world;    /* the world with its data replaced by the copy */
    double *action;      /* Step.action (malloc'd; the request is unpacked anew on resume) */
    size_t naction;
    uint64_t asked, done;
    int resume;
    double deadline, ended; /* rs_clock() times: the budget's end, the run's end */
    int rc;
    rs_status_t st;
    int slow;            /* its control steps took over SLOW_STEP_SECONDS of CPU time each */
    const rs_model_t *model; /* the model its data was made for, retained while the job lives
                                (the world may go before a parked job is freed) */
} step_job_t;

static void step_job_free(void *p)
{
    step_job_t *j = p;
    if (!j)
        return;
    rs_rollback_destroy(&j->rb);
    rs_data_destroy(&j->world.data); /* reads its model: released after */
    rs_model_release(&j->model);
    free(j->action);
    free(j);
}

/* On the stepper: the Step to its end, its budget or a stop. */
static void step_job_run(rs_server_t *s, rs_cont_t *c)
{
    step_job_t *j = c->off_job;
    rs_status_clear(&j->st);
    atomic_store_explicit(&s->off_abort_at, j->deadline, memory_order_relaxed);
    if (!rs_server_stopping(s))
        atomic_store_explicit(&s->off_abort, 0, memory_order_relaxed);
    struct timespec c0, c1;
    uint64_t before = j->done;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    j->rc = rs_run_control_steps(s, &j->slot, j->rb, j->action, j->naction, j->asked, j->resume, 0,
                              j->deadline, 0, &s->off_abort, &j->done, &j->st);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    atomic_store_explicit(&s->off_abort_at, INFINITY, memory_order_relaxed);
    j->ended = rs_clock();
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    j->slow = j->done == before || cpu / (double)(j->done - before) > SLOW_STEP_SECONDS;
}

/* Hand the rest of Step `sp` on world w to the stepper (the loop only): RS_PARKED, or an error
 * (out of memory) with nothing changed. */
static int step_offload(rs_server_t *s, world_slot_t *w, const Robosim__V1__Step *sp,
                        rs_status_t *st)
{
    rs_cont_t *c = s->cont;
    const rs_model_t *m = w->world->model;
    step_job_t *j = calloc(1, sizeof *j);
    if (!j)
        return OOM(st);
    j->slot = *w;
    j->slot.history = NULL;
    j->model = rs_model_retain(m);
    j->world = *w->world;
    j->slot.world = &j->world;
    j->world.data = rs_data_new(m, 0, st);
    if (!j->world.data || !(j->rb = rs_rollback_new()) || rs_data_copy(m, j->world.data, w->world->data, st) < 0 ||
        (sp->n_action && !(j->action = malloc(sp->n_action * sizeof *j->action))) ||
        (!c->held && !(c->held = malloc(sizeof *c->held)))) {
        step_job_free(j);
        return st->code < 0 ? st->code : OOM(st);
    }
    rs_data_set_abort(j->world.data, &s->off_abort);
    if (sp->n_action)
        memcpy(j->action, sp->action, sp->n_action * sizeof *j->action);
    j->naction = sp->n_action;
    j->asked = c->asked;
    j->done = c->done;
    j->resume = c->resuming || c->done > 0;
    j->deadline = rs_clock() + fmax(0.0, s->cfg.max_request_seconds - c->used);
    c->held[0] = w->id;
    c->nheld = 1;
    c->off_run = step_job_run;
    c->off_free = step_job_free;
    c->off_job = j;
    c->off_done = 0;
    c->park = 1;
    return RS_PARKED;
}

/* The stepper ran the Step: its data becomes world w's, its progress the request's. Returns
 * the run's result (0 or its error, reason in st). */
static int step_take_back(rs_server_t *s, world_slot_t *w, rs_status_t *st)
{
    rs_cont_t *c = s->cont;
    step_job_t *j = c->off_job;
    int rc = rs_data_copy(w->world->model, w->world->data, j->world.data, st);
    if (rc == 0) {
        c->done = j->done;
        w->sched.slow_steps = j->slow;
        if ((rc = j->rc) < 0)
            *st = j->st;
    }
    w->ckpt.clean = 0;
    c->used = s->cfg.max_request_seconds - (j->deadline - j->ended);
    c->off_free(j);
    c->off_job = NULL;
    c->off_run = NULL;
    c->off_free = NULL;
    return rc;
}

/* A Step with its Jacobian (Step.jacobian) runs whole on a copy of the world's data with the
 * sensitivity attached (rs_sensitivity.h): from the loop on the stepper thread, so the loop
 * answers everyone else meanwhile; in-process inline. The copy becomes the world's data only
 * when the Step completes: a Step stopped by the compute budget or a stop leaves the world as
 * it was before the Step. */
typedef struct jac_job {
    world_slot_t slot;        /* the world's slot with `world` in place of the world */
    rs_world_t world;         /* the world with its data replaced by the copy */
    const rs_model_t *model;  /* retained while the job lives (the world may go first) */
    rs_sens_t *sens;
    double *action;           /* Step.action (malloc'd: the request is unpacked anew on resume) */
    size_t naction;
    uint64_t asked, done;
    double deadline;          /* rs_clock() time: the budget's end */
    int rc;
    rs_status_t st;
} jac_job_t;

static void jac_job_free(void *p)
{
    jac_job_t *j = p;
    if (!j)
        return;
    rs_sens_destroy(&j->sens);
    rs_data_destroy(&j->world.data); /* reads its model: released after */
    rs_model_release(&j->model);
    free(j->action);
    free(j);
}

/* The job for world w's Step sp: the data copied, the Step's commands applied to the copy and
 * the sensitivity made for it. NULL with st on error (the world unchanged). */
static jac_job_t *jac_job_new(rs_server_t *s, world_slot_t *w, const Robosim__V1__Step *sp,
                              rs_status_t *st)
{
    const rs_model_t *m = w->world->model;
    jac_job_t *j = calloc(1, sizeof *j);
    if (!j) {
        OOM(st);
        return NULL;
    }
    j->model = rs_model_retain(m);
    j->slot = *w;
    j->slot.history = NULL;
    j->world = *w->world;
    j->slot.world = &j->world;
    if (!(j->world.data = rs_data_new(m, 0, st)) ||
        rs_data_copy(m, j->world.data, w->world->data, st) < 0 ||
        (sp->n_action && !(j->action = malloc(sp->n_action * sizeof *j->action))) ||
        !(j->sens = rs_sens_new(m, j->world.data, (const char *const *)sp->jacobian_params,
                                sp->n_jacobian_params, st)) ||
        rs_apply_step_commands(s, &j->slot, sp, &j->asked, st) < 0) {
        if (st->code == 0)
            OOM(st);
        jac_job_free(j);
        return NULL;
    }
    if (sp->n_action)
        memcpy(j->action, sp->action, sp->n_action * sizeof *j->action);
    j->naction = sp->n_action;
    return j;
}

/* Run job j to the end of its Step, or until its data's abort flag is set (the budget, a stop)
 * or rs_clock() passes yield_at: j->rc (0 when every control step ran or the episode ended). */
static void jac_job_step(rs_server_t *s, jac_job_t *j, double yield_at)
{
    rs_world_t *world = &j->world;
    rs_data_t *d = world->data;
    rs_status_clear(&j->st);
    d->hooks = rs_sens_hooks(j->sens);
    if (world->task || j->naction) {
        j->rc = rs_world_task_step_until(world, j->action, j->naction, j->asked, yield_at, 0,
                                         &j->done, &j->st);
    } else {
        d->nevents = 0;
        d->events_dropped = 0;
        j->rc = rs_step_until(world->model, d, j->asked, yield_at, &j->done, &j->st);
    }
    d->hooks = NULL;
    if (j->rc == RS_EDEADLINE || (j->rc == 0 && j->done < j->asked && !rs_episode_over(world))) {
        rs_status_clear(&j->st);
        j->rc = rs_server_stopping(s)
                    ? rs_fail(&j->st, RS_EUNAVAIL,
                              "the server is stopping: a Step with its Jacobian on world %llu "
                              "was interrupted after %llu of its %llu control steps; the world "
                              "is as it was before the Step; reconnect when it is back",
                              (unsigned long long)j->slot.id, (unsigned long long)j->done,
                              (unsigned long long)j->asked)
                    : rs_fail(&j->st, RS_EDEADLINE,
                              "a Step with its Jacobian on world %llu did %llu of its %llu "
                              "control steps within this server's compute budget of %g s per "
                              "request (--max-request-seconds); the world is as it was before "
                              "the Step; ask for fewer steps per request",
                              (unsigned long long)j->slot.id, (unsigned long long)j->done,
                              (unsigned long long)j->asked, s->cfg.max_request_seconds);
    }
}

/* On the stepper: the job under the stepper's abort flag, armed at its deadline. */
static void jac_job_run(rs_server_t *s, rs_cont_t *c)
{
    jac_job_t *j = c->off_job;
    atomic_store_explicit(&s->off_abort_at, j->deadline, memory_order_relaxed);
    if (!rs_server_stopping(s))
        atomic_store_explicit(&s->off_abort, 0, memory_order_relaxed);
    rs_data_set_abort(j->world.data, &s->off_abort);
    jac_job_step(s, j, INFINITY);
    atomic_store_explicit(&s->off_abort_at, INFINITY, memory_order_relaxed);
}

/* The job's result as world w's Step reply: its data becomes the world's when it ran whole. */
static int jac_job_reply(rs_server_t *s, world_slot_t *w, jac_job_t *j, const Robosim__V1__Step *sp,
                         Robosim__V1__Response *rp, rs_status_t *st)
{
    if (j->rc < 0) {
        *st = j->st;
        return j->rc;
    }
    int rc = rs_data_copy(w->world->model, w->world->data, j->world.data, st);
    if (rc < 0)
        return rc;
    w->ckpt.clean = 0;
    Robosim__V1__State *state = NULL;
    Robosim__V1__Jacobian *jac = NULL;
    if ((rc = rs_step_state(w, &s->arena, &state, st)) < 0)
        return rc;
    if (!(jac = rs_codec_jacobian(&s->arena, j->sens, sp->jacobian_params, st)))
        return st->code;
    rs_stream_offer(s, w, state); /* watchers see the state, not the Jacobian */
    state->jacobian = jac;
    rs_keep_parts(state, sp);
    REPLY(rp, step, STEP, state);
    return 0;
}

static int step_with_jacobian(rs_server_t *s, world_slot_t *w, const Robosim__V1__Step *sp,
                              Robosim__V1__Response *rp, rs_status_t *st)
{
    rs_cont_t *c = s->cont;
    if (c->off_job) { /* back from the stepper */
        jac_job_t *j = c->off_job;
        int rc = jac_job_reply(s, w, j, sp, rp, st);
        c->off_free(j);
        c->off_job = NULL;
        c->off_run = NULL;
        c->off_free = NULL;
        return rc;
    }
    jac_job_t *j = jac_job_new(s, w, sp, st);
    if (!j)
        return st->code;
    double budget = fmax(0.0, s->cfg.max_request_seconds - c->used);
    if (c->can_park && !rs_server_stopping(s)) {
        if (!c->held && !(c->held = malloc(sizeof *c->held))) {
            jac_job_free(j);
            return OOM(st);
        }
        j->deadline = rs_clock() + budget;
        c->held[0] = w->id;
        c->nheld = 1;
        c->off_run = jac_job_run;
        c->off_free = jac_job_free;
        c->off_job = j;
        c->off_done = 0;
        c->park = 1;
        return RS_PARKED;
    }
    /* in-process (or a loop that cannot park): inline, under the loop's budget */
    rs_data_set_abort(j->world.data, &s->abort);
    double deadline = rs_arm_budget(s);
    jac_job_step(s, j, deadline);
    rs_disarm_budget(s, deadline);
    int rc = jac_job_reply(s, w, j, sp, rp, st);
    jac_job_free(j);
    return rc;
}

/* Step: on the loop (s->cont->can_park) a Step not done within one slice is parked and resumed
 * between other requests (scheduler.c) until it is done, its budget runs out or the server stops;
 * the reply then carries every event of the whole Step. A control step too long for the loop
 * (the fuse, see run_control_steps) sends the rest of the Step to the stepper thread, and so
 * does a world known slow; the world's other requests wait for it. In-process it runs to its end
 * (or its budget). */
int op_step(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
            Robosim__V1__Response *rp, rs_status_t *st)
{
    rs_cont_t *c = s->cont;
    const Robosim__V1__Step *sp = rq->step;
    int rc;
    if (sp->jacobian || sp->n_jacobian_params)
        return step_with_jacobian(s, w, sp, rp, st);
    if (c->off_job) {
        if ((rc = step_take_back(s, w, st)) < 0)
            return rc;
    } else {
        if (!c->resuming) {
            if ((rc = rs_apply_step_commands(s, w, sp, &c->asked, st)) < 0)
                return rc;
            c->done = 0;
        }
        int offload = c->can_park && !rs_server_stopping(s);
        if (offload && w->sched.slow_steps)
            return step_offload(s, w, sp, st);
        double deadline = rs_arm_budget(s);
        rc = rs_run_control_steps(s, w, rs_pool_rollback(s->pool, 0), sp->action, sp->n_action, c->asked, c->resuming,
                               c->can_park, deadline, offload, &s->abort, &c->done, st);
        rs_disarm_budget(s, deadline);
        if (rc == RUN_OFF_LOOP) {
            w->sched.slow_steps = 1;
            return step_offload(s, w, sp, st);
        }
        if (rc < 0)
            return rc;
    }
    if (c->done < c->asked && !rs_episode_over(w->world)) {
        if (c->can_park && !rs_server_stopping(s) && c->used < s->cfg.max_request_seconds) {
            if (!c->held && !(c->held = malloc(sizeof *c->held)))
                return OOM(st);
            c->held[0] = w->id;
            c->nheld = 1;
            c->park = 1;
            return RS_PARKED;
        }
        return rs_stopped_short(s, w, c->done, c->asked, st);
    }
    Robosim__V1__State *state = NULL;
    if ((rc = rs_step_state(w, &s->arena, &state, st)) < 0)
        return rc;
    rs_stream_offer(s, w, state);
    rs_keep_parts(state, sp);
    REPLY(rp, step, STEP, state);
    return 0;
}


int op_get_state(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                 Robosim__V1__Response *rp, rs_status_t *st)
{
    int rc = reply_state(s, w, rp, ROBOSIM__V1__RESPONSE__RESULT_GET_STATE, st);
    if (rc < 0 || !rq->get_state->snapshot)
        return rc;
    size_t n = 0;
    rs_snapshot_size(w->world, &n);
    uint8_t *buf = rs_arena_alloc(&s->arena, n + RS_SNAPSHOT_MAC_BYTES);
    if (!buf)
        return OOM(st);
    if ((rc = rs_snapshot_write(w->world, buf, n, &n, st)) < 0)
        return rc;
    rs_snapmac_sign(s, buf, n); /* the core's bytes, then their MAC */
    rp->get_state->snapshot.data = buf;
    rp->get_state->snapshot.len = n + RS_SNAPSHOT_MAC_BYTES;
    return 0;
}

/* Restore a world from a snapshot (GetState.snapshot); the world is unchanged on error. */
int op_set_state(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                 Robosim__V1__Response *rp, rs_status_t *st)
{
    const ProtobufCBinaryData *b = &rq->set_state->snapshot;
    if (!b->len)
        return rs_fail(st, RS_EINVAL,
                       "SetState carries no snapshot; send State.snapshot from "
                       "GetState{snapshot: true}");
    size_t n = 0;
    int rc = rs_snapmac_verify(s, b->data, b->len, &n, st);
    if (rc < 0 || (rc = rs_snapshot_read(w->world, b->data, n, st)) < 0)
        return rc;
    return reply_state(s, w, rp, ROBOSIM__V1__RESPONSE__RESULT_SET_STATE, st);
}

int op_set_force(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                 Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__SetForce *f = rq->set_force;
    int e = rs_find_entity(w->world, f->entity, st);
    if (e < 0)
        return e;
    int rc = rs_set_commands(w->world->model, w->world->data, e, f->values, f->n_values, st);
    if (rc < 0)
        return rc;
    REPLY(rp, set_force, SET_FORCE, &ack);
    return 0;
}

/* An external wrench on one body for the next control step (rs_apply_wrench). */
int op_apply_wrench(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                    Robosim__V1__Response *rp, rs_status_t *st)
{
    (void)s;
    const Robosim__V1__ApplyWrench *a = rq->apply_wrench;
    int e = rs_find_entity(w->world, a->entity, st);
    if (e < 0)
        return e;
    int rc = rs_apply_wrench(w->world->model, w->world->data, e, a->body, a->values,
                             a->n_values, st);
    if (rc < 0)
        return rc;
    REPLY(rp, apply_wrench, APPLY_WRENCH, &ack);
    return 0;
}

int op_set_params(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                  Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__SetParams *p = rq->set_params;
    if (!p->n_params)
        return rs_fail(st, RS_EINVAL, "SetParams carries no parameters");
    rs_param_t *params = rs_codec_params(&s->arena, p->params, p->n_params);
    if (!params)
        return OOM(st);
    if (rs_stream_check_params(s, params, p->n_params, st) < 0)
        return st->code;
    int rc = rs_world_set_params(w->world, params, p->n_params, st);
    if (rc < 0)
        return rc;
    REPLY(rp, set_params, SET_PARAMS, &ack);
    return 0;
}

int op_set_schedule(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                    Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__SetSchedule *sc = rq->set_schedule;
    int e = rs_find_entity(w->world, sc->entity, st);
    if (e < 0)
        return e;
    if (sc->n_times != sc->n_values)
        return rs_fail(st, RS_EINVAL, "a schedule needs as many values as times (%zu times, %zu values)",
                       sc->n_times, sc->n_values);
    /* the wire's index against the entity's real actuator count, before it becomes an int */
    int rc = rs_check_actuator(w->world->model, e, sc->actuator, st);
    if (rc < 0)
        return rc;
    rc = rs_set_schedule(w->world->model, w->world->data, e, (int)sc->actuator, sc->times,
                             sc->values, sc->n_times, st);
    if (rc < 0)
        return rc;
    REPLY(rp, set_schedule, SET_SCHEDULE, &ack);
    return 0;
}

int op_set_target(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                  Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__SetTarget *t = rq->set_target;
    int e = rs_find_entity(w->world, t->entity, st);
    if (e < 0)
        return e;
    int rc = rs_set_target(w->world->model, w->world->data, e, t->target, t->n_target, st);
    if (rc < 0)
        return rc;
    REPLY(rp, set_target, SET_TARGET, &ack);
    return 0;
}
