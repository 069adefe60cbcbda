/* Stepping: the control-step loop over the integrator (rs_integrator.h: ARKODE's ERKStep,
 * behind integrator.c), with schedules, events and the robots' jump maps.
 *
 * Every interval the integrator runs over (a control step, or the part of one up to a schedule
 * knot or an event) starts from a restart with the step size the previous interval ended
 * with. The integrator so carries no hidden history across intervals: the data alone (state,
 * modes, commands, h_next) decide the future, which makes resets and snapshots exact. */
#include "rs_step.h"

#include "rs_data.h"
#include "rs_integrator.h"
#include "rs_motion_spec.h"
#include "rs_robot.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_EVENTS_PER_CONTROL_STEP 1000
/* Guard crossings handled in one control step, logged as events or not (a saturation switch, a
 * mode decision that changes nothing): past this many the step fails instead of spinning at one
 * instant until a budget or the watchdog stops it */
#define MAX_JUMPS_PER_CONTROL_STEP 20000

const char *rs_mode_name(const rs_model_t *m, const rs_data_t *d, int e)
{
    const rs_robot_t *r = m->ent[e].robot;
    int mode = d->ent[e].mode;
    return mode >= 0 && mode < r->nmodes ? r->mode_names[mode] : "unknown";
}

const char *rs_event_kind_name(const rs_model_t *m, const rs_event_t *ev)
{
    const rs_robot_t *r = m->ent[ev->entity].robot;
    if (ev->kind >= r->nevent_kinds && ev->kind < r->nevent_kinds + RS_SPEC_EVENT_KINDS)
        return rs_spec_event_names[ev->kind - r->nevent_kinds]; /* a motion specification's */
    return ev->kind >= 0 && ev->kind < r->nevent_kinds ? r->event_names[ev->kind] : "unknown";
}

/* ---- schedules ----------------------------------------------------------------------- */

/* Piecewise-linear value at t; the first/last value holds outside the knots. */
static double schedule_value(rs_schedule_t *s, double t)
{
    if (t <= s->t[0])
        return s->v[0];
    if (t >= s->t[s->n - 1])
        return s->v[s->n - 1];
    int i = s->cursor;
    if (i < 0 || i >= s->n - 1 || t < s->t[i])
        i = 0;
    while (i < s->n - 2 && t >= s->t[i + 1])
        i++;
    s->cursor = i;
    double w = (t - s->t[i]) / (s->t[i + 1] - s->t[i]);
    return s->v[i] + w * (s->v[i + 1] - s->v[i]);
}

/* Commands of entity e at time t under its schedules and the motion specification. */
static const double *commands_effective(const rs_model_t *m, rs_data_t *d, int e, double t)
{
    const rs_entity_model_t *em = &m->ent[e];
    double *ue = d->u_eff + em->u_off;
    for (int a = 0; a < em->nu; a++) {
        rs_schedule_t *s = &d->sched[em->u_off + a];
        ue[a] = s->n ? schedule_value(s, t) : d->u[em->u_off + a];
    }
    if (d->spec) {
        /* the motion specification's commands, added to the agent's (or alone), held for the
         * control step and kept within the actuators' bounds */
        int alone = rs_motion_spec_replaces(d->spec);
        for (int a = 0; a < em->nu; a++) {
            const rs_var_desc_t *ad = &em->robot->actuators[a];
            double v = (alone ? 0.0 : ue[a]) + d->u_spec[em->u_off + a];
            ue[a] = v < ad->lower ? ad->lower : v > ad->upper ? ad->upper : v;
        }
    }
    return ue;
}

/* Commands of entity e in force at time t: as set, without a call, when no schedule or
 * specification changes them (every right-hand side and guard evaluation asks). */
static inline const double *commands_at(const rs_model_t *m, rs_data_t *d, int e, double t)
{
    if (!d->nsched[e] && !d->spec)
        return d->u + m->ent[e].u_off;
    return commands_effective(m, d, e, t);
}

void rs_current_commands(const rs_model_t *m, const rs_data_t *d, int e, double *u_out)
{
    const rs_entity_model_t *em = &m->ent[e];
    for (int a = 0; a < em->nu; a++) {
        rs_schedule_t s = d->sched[em->u_off + a]; /* a copy: the cursor is only a hint */
        u_out[a] = s.n ? schedule_value(&s, d->t) : d->u[em->u_off + a];
    }
}

/* The first schedule knot strictly inside (t, t1), or t1. */
static double next_knot(const rs_model_t *m, const rs_data_t *d, double t, double t1)
{
    double next = t1;
    for (int e = 0; e < m->nentities; e++) {
        if (!d->nsched[e])
            continue;
        const rs_entity_model_t *em = &m->ent[e];
        for (int a = 0; a < em->nu; a++) {
            const rs_schedule_t *s = &d->sched[em->u_off + a];
            for (int k = 0; k < s->n; k++)
                if (s->t[k] > t) {
                    if (s->t[k] < next)
                        next = s->t[k];
                    break;
                }
        }
    }
    return next;
}

/* ---- the integrator's callbacks (rs_integrator.h) ----------------------------------- */

int rs_step_rhs(double t, const double *x, double *xd, void *user)
{
    rs_data_t *d = user;
    const rs_model_t *m = d->m;
    d->rhs_evals++;
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        em->robot->derivs(em, &d->ent[e], t, x + em->x_off, commands_at(m, d, e, t),
                          xd + em->x_off);
    }
    /* 0 * v is NaN for an infinite or NaN v: one test for all of them */
    double z = 0.0;
    for (int i = 0; i < m->nx; i++)
        z += 0.0 * xd[i];
    return z == 0.0 ? 0 : 1; /* recoverable: the integrator retries with a shorter step */
}

void rs_step_guards(double t, const double *x, double *g, void *user)
{
    rs_data_t *d = user;
    const rs_model_t *m = d->m;
    d->root_evals++;
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        if (em->ng)
            em->robot->guards(em, &d->ent[e], t, x + em->x_off, commands_at(m, d, e, t),
                              g + em->g_off);
    }
    /* a motion specification's monitors, after the robots' guards (once the integrator has
     * room for them: control_step configures it) */
    if (d->spec && rs_integrator_nguards(d->integ) == m->ng + rs_motion_spec_nguards(d->spec))
        rs_motion_spec_guards(d->spec, m, d, x, g + m->ng);
}

/* The guards a motion specification adds (its monitors; 0 without one). */
static int spec_nguards(const rs_data_t *d)
{
    return d->spec ? rs_motion_spec_nguards(d->spec) : 0;
}

/* Apply the model's integrator options (tolerances, step limit, guards). Called whenever the
 * model may have changed; a restart keeps all of it. */
static int integrator_configure(const rs_model_t *m, rs_data_t *d, rs_status_t *st)
{
    int order = (int)m->erk_order; /* 0: the highest order the world's robots ask for, or 4 */
    for (int e = 0; e < m->nentities && m->erk_order < 1; e++)
        if (m->ent[e].robot->erk_order > order)
            order = m->ent[e].robot->erk_order;
    /* each entity held to the tolerances alone, not averaged with the others' errors */
    int len[RS_MAX_ENTITIES];
    for (int e = 0; e < m->nentities; e++)
        len[e] = m->ent[e].nx;
    int rc = rs_integrator_set_groups(d->integ, m->nentities, len, st);
    if (rc < 0)
        return rc;
    return rs_integrator_configure(d->integ, order, m->rtol, m->atol,
                                   (long)m->max_internal_steps, m->sim_step,
                                   m->ng + spec_nguards(d), st);
}

/* Add the integrator's steps not yet counted to d->internal_steps, so that the data alone
 * holds the statistics (a snapshot or a copy carries them). */
static void fold_steps(rs_data_t *d)
{
    d->internal_steps += (uint64_t)rs_integrator_take_steps(d->integ);
}

/* Start a fresh integration interval at (d->t, d->x) ending at tstop. */
static int integrator_restart(rs_data_t *d, double tstop, rs_status_t *st)
{
    fold_steps(d);
    return rs_integrator_restart(d->integ, d->t, d->h_next, tstop, st);
}

void rs_get_stats(const rs_data_t *d, rs_stats_t *out)
{
    out->internal_steps = d->internal_steps;
    out->rhs_evals = d->rhs_evals;
    out->root_evals = d->root_evals;
    out->events = d->events_total;
}

/* Fill every entity's sensors for an interval of length dt (0: instantaneous readings). */
static void read_sensors(const rs_model_t *m, rs_data_t *d, double dt)
{
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        if (em->robot->sense)
            em->robot->sense(em, &d->ent[e], d->t, d->x + em->x_off,
                               commands_at(m, d, e, d->t), dt);
    }
}

/* ---- stepping ------------------------------------------------------------------------ */

/* Settle every entity's mode after a discontinuity in its inputs. */
static void settle_all(const rs_model_t *m, rs_data_t *d)
{
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        if (em->robot->settle)
            em->robot->settle(em, &d->ent[e], d->t, d->x + em->x_off,
                              commands_at(m, d, e, d->t));
    }
    d->dirty = 0;
}

/* The first entity that cannot go on from its state (rs_robot_t.failure): its error, or 0. */
static int entities_failure(const rs_model_t *m, rs_data_t *d, rs_status_t *st)
{
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        int rc = em->robot->failure ? em->robot->failure(em, &d->ent[e], d->x + em->x_off, st)
                                    : 0;
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Apply the jump maps of the entities whose guards fired at d->t. */
static void apply_jumps(const rs_model_t *m, rs_data_t *d)
{
    const int *fired = rs_integrator_fired(d->integ);
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        int any = 0;
        for (int i = 0; i < em->ng; i++)
            any |= fired[em->g_off + i] != 0;
        if (any)
            em->robot->jump(em, &d->ent[e], d->t, d->x + em->x_off, commands_at(m, d, e, d->t),
                            fired + em->g_off);
    }
    int ns = spec_nguards(d), any = 0;
    for (int j = 0; j < ns; j++)
        any |= fired[m->ng + j] != 0;
    if (any) /* monitors changed at d->t: their events (and a motion switch) at that time */
        rs_motion_spec_roots(m, d, fired + m->ng);
}

static void remember_step_size(const rs_model_t *m, rs_data_t *d)
{
    d->h_next = fmin(rs_integrator_next_step(d->integ), m->control_dt);
}

/* After the jumps at an event: the restart's first step no longer than the shortest time
 * constant (rs_robot_t.time_scale) of an entity whose guards fired, in its new mode. */
static void bound_step_after_jumps(const rs_model_t *m, rs_data_t *d)
{
    const int *fired = rs_integrator_fired(d->integ);
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        if (!em->robot->time_scale)
            continue;
        int any = 0;
        for (int i = 0; i < em->ng; i++)
            any |= fired[em->g_off + i] != 0;
        double tau = any ? em->robot->time_scale(em, &d->ent[e], d->x + em->x_off) : 0.0;
        if (tau > 0.0 && (d->h_next <= 0.0 || tau < d->h_next))
            d->h_next = tau;
    }
}

/* Integrate from d->t to t_end, stopping at schedule knots and handling events. */
static int integrate_to(const rs_model_t *m, rs_data_t *d, double t_end, rs_status_t *st)
{
    long jumps = 0;
    while (d->t < t_end) {
        double tstop = next_knot(m, d, d->t, t_end);
        int rc = integrator_restart(d, tstop, st);
        if (rc < 0)
            return rc;
        for (;;) {
            double t = d->t;
            rc = rs_integrator_evolve(d->integ, &t, st);
            fold_steps(d);
            if (rc == 1) { /* guards fired at t */
                d->t = t;
                remember_step_size(m, d);
                if (d->hooks) { /* a Jacobian: the flow up to the event, then the jump's */
                    d->hooks->flow(d->hooks->ctx, m, d);
                    d->hooks->map_begin(d->hooks->ctx, m, d);
                }
                apply_jumps(m, d);
                bound_step_after_jumps(m, d);
                if (d->hooks)
                    d->hooks->map_end(d->hooks->ctx, m, d, RS_STEP_MAP_JUMP,
                                      rs_integrator_fired(d->integ), 0.0);
                if ((rc = entities_failure(m, d, st)) < 0)
                    return rc;
                if (++jumps > MAX_JUMPS_PER_CONTROL_STEP)
                    return rs_fail(st, RS_ESIMFAIL,
                                   "more than %d guard crossings in one control step at "
                                   "t = %.9g s (a mode switch its own motion undoes at once, or "
                                   "a motion so fast that a guard crosses thousands of times in "
                                   "a control step: check the commands, forces and parameters)",
                                   MAX_JUMPS_PER_CONTROL_STEP, d->t);
                if (d->step_events > MAX_EVENTS_PER_CONTROL_STEP)
                    return rs_fail(st, RS_ESIMFAIL,
                                   "more than %d events in one control step at t = %.9g s "
                                   "(chattering contact?)",
                                   MAX_EVENTS_PER_CONTROL_STEP, d->t);
                if (d->t >= tstop)
                    break; /* a guard exactly 0 at the stop time: this interval is done (a
                              restart with tstop == t is refused by ARKODE) */
                if ((rc = integrator_restart(d, tstop, st)) < 0)
                    return rc;
                continue;
            }
            if (rc == RS_EDEADLINE)
                return rs_fail(st, RS_EDEADLINE,
                               "interrupted at t = %.9g s, partway through control step %llu",
                               t, (unsigned long long)d->step_count + 1);
            if (rc < 0)
                return rc;
            d->t = tstop;
            remember_step_size(m, d);
            if (d->hooks)
                d->hooks->flow(d->hooks->ctx, m, d);
            break;
        }
    }
    return 0;
}

int rs_step(const rs_model_t *m, rs_data_t *d, uint64_t nsteps, rs_status_t *st)
{
    d->nevents = 0;
    d->events_dropped = 0;
    return rs_step_continue(m, d, nsteps, st);
}

/* One control step: from d->t to the next grid point, sensors read at its end. */
static int control_step(const rs_model_t *m, rs_data_t *d, rs_status_t *st)
{
    double t1 = d->grid_t0 + (double)(d->grid_k + 1) * m->control_dt;
    double dt = t1 - d->t;
    d->step_events = 0;
    if (d->spec) {
        int rc = rs_motion_spec_control(m, d, dt, st);
        if (rc < 0)
            return rc;
        d->dirty = 1; /* new commands: settle the robots' modes with them */
    }
    if (rs_integrator_nguards(d->integ) != m->ng + spec_nguards(d)) {
        /* a specification was loaded, cleared or restored: its monitors' guards */
        int rc = integrator_configure(m, d, st);
        if (rc < 0)
            return rc;
    }
    if (d->hooks) /* a Jacobian: the maps at the step's start */
        d->hooks->map_begin(d->hooks->ctx, m, d);
    if (d->dirty)
        settle_all(m, d);
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        if (em->robot->step_begin)
            em->robot->step_begin(em, &d->ent[e], d->t, d->x + em->x_off, dt);
        if (em->robot->advance) /* fixed-step contact (rs_robot.h); the integrator then holds x */
            em->robot->advance(em, &d->ent[e], d->t, d->x + em->x_off,
                               commands_at(m, d, e, d->t), dt);
    }
    if (d->hooks)
        d->hooks->map_end(d->hooks->ctx, m, d, RS_STEP_MAP_BEGIN, NULL, dt);
    int rc = entities_failure(m, d, st);
    if (rc < 0 || (rc = integrate_to(m, d, t1, st)) < 0 || (rc = entities_failure(m, d, st)) < 0)
        return rc;
    d->t = t1;
    d->grid_k++;
    d->step_count++;
    read_sensors(m, d, dt);
    rs_wrench_step_over(m, d); /* an external wrench lasts one control step */
    if (!d->digest_later)
        rs_digest_step(m, d);
    return 0;
}

int rs_step_continue(const rs_model_t *m, rs_data_t *d, uint64_t nsteps, rs_status_t *st)
{
    uint64_t done = 0;
    int rc = rs_step_until(m, d, nsteps, INFINITY, &done, st);
    if (rc == 0 && done < nsteps)
        rc = rs_fail(st, RS_EDEADLINE, "interrupted at t = %.9g s after %llu of %llu control steps",
                     d->t, (unsigned long long)done, (unsigned long long)nsteps);
    return rc;
}

int rs_step_until(const rs_model_t *m, rs_data_t *d, uint64_t nsteps, double yield_at,
                  uint64_t *done, rs_status_t *st)
{
    d->m = m;
    int timed = yield_at < INFINITY; /* else no clock read at all */
    uint64_t k = 0;
    int rc = 0;
    for (; k < nsteps; k++) {
        /* a boundary: stop here when interrupted, or when the time is up (after one step) */
        if (rs_integrator_aborted(d->integ) ||
            (timed && k && rs_clock() >= yield_at))
            break;
        if ((rc = control_step(m, d, st)) < 0)
            break;
    }
    *done = k;
    return rc;
}

void rs_data_set_abort(rs_data_t *d, const atomic_int *flag)
{
    rs_integrator_set_abort(d->integ, flag);
}

double rs_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- for data.c's allocation and reset (rs_step.h) ------------------------------------- */

int rs_step_configure(const rs_model_t *m, rs_data_t *d, rs_status_t *st)
{
    return integrator_configure(m, d, st);
}

void rs_step_read_sensors(const rs_model_t *m, rs_data_t *d, double dt)
{
    read_sensors(m, d, dt);
}
