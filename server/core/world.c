/* Data, reset, commands, schedules and the control-step loop over the integrator
 * (rs_integrator.h: ARKODE's ERKStep, behind integrator.c).
 *
 * Every interval the integrator runs over (a control step, or the part of one up to a schedule
 * knot or an event) starts from a restart with the step size the previous interval ended
 * with. The integrator so carries no hidden history across intervals: the data alone (state,
 * modes, commands, h_next) decide the future, which makes resets and snapshots exact. */
#include "rs_data.h"
#include "rs_motion_spec.h"
#include "rs_randomize.h"
#include "rs_integrator.h"
#include "rs_robot.h"
#include "rs_task.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_EVENTS_PER_CONTROL_STEP 1000

/* ---- rng: xoshiro256** seeded by splitmix64 (deterministic for a seed) ------------------ */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(uint64_t s[4])
{
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rs_rand_uniform(rs_entity_data_t *ed)
{
    return rs_data_uniform(ed->data);
}

double rs_data_uniform(rs_data_t *d)
{
    return (double)(rng_next(d->rng) >> 11) * 0x1.0p-53;
}

/* ---- events -------------------------------------------------------------------------- */

void rs_emit_event(rs_entity_data_t *ed, int kind, double t, double value, const double *before,
                   const double *after, int n)
{
    rs_data_t *d = ed->data;
    d->events_total++;
    d->step_events++;
    if (d->nevents >= RS_EVENT_LOG || rs_data_reserve_events(d, d->nevents + 1) < 0) {
        d->events_dropped++; /* the step's count stays exact (step_events, events_total) */
        return;
    }
    rs_event_t *ev = &d->events[d->nevents++];
    if (n > RS_EVENT_VALUES)
        n = RS_EVENT_VALUES;
    ev->entity = ed->index;
    ev->kind = kind;
    ev->t = t;
    ev->value = value;
    ev->nvalues = n;
    for (int i = 0; i < n; i++) {
        ev->before[i] = before ? before[i] : NAN;
        ev->after[i] = after ? after[i] : NAN;
    }
}

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

static void schedule_clear(rs_schedule_t *s)
{
    free(s->t);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* ---- the integrator's callbacks (rs_integrator.h) ----------------------------------- */

static int world_rhs(double t, const double *x, double *xd, void *user)
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

static void world_guards(double t, const double *x, double *g, void *user)
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

/* Ask the caches for the memory a control step of w reads: the data's block (head, entities,
 * vectors, schedules), the model's head and entities, the integrator's block with its vectors.
 * ARKODE's memory is opaque and not guessed at. */
void rs_world_prefetch(const rs_world_t *w)
{
    const rs_data_t *d = w->data;
    const char *p, *end = (const char *)d + d->block_bytes;
    for (p = (const char *)d; p < end; p += 64)
        __builtin_prefetch(p);
    /* one line in four of the entities' models: their parameter storage is large and a robot
     * reads a few values of it */
    for (p = (const char *)w->model; p < (const char *)&w->model->ent[w->model->nentities]; p += 256)
        __builtin_prefetch(p);
    rs_integrator_prefetch(d->integ);
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

/* ---- data ---------------------------------------------------------------------------- */

void rs_data_destroy(rs_data_t **pd)
{
    rs_data_t *d = *pd;
    if (!d)
        return;
    rs_integrator_destroy(&d->integ);
    rs_motion_spec_destroy(&d->spec);
    if (d->sched && d->m)
        for (int i = 0; i < d->m->nu; i++)
            schedule_clear(&d->sched[i]);
    free(d->events);
    free(d); /* with its entities, vectors and schedules */
    *pd = NULL;
}

/* Bytes from p rounded up to a multiple of 8 (the vectors' and schedules' alignment). */
static size_t align8(size_t p)
{
    return (p + 7) & ~(size_t)7;
}

/* One block per data: the head, the model's entities, each vector field, the schedules (a
 * world's control step reads them all: one block keeps them in consecutive cache lines and
 * costs one allocation). The event log, grown on demand, stays apart. With d non-NULL, sets
 * each vector field of d and its schedules to their places in the block; returns the block's
 * bytes. */
static size_t data_layout(const rs_model_t *m, rs_data_t *d)
{
    int nf;
    const rs_field_t *f = rs_data_fields(&nf);
    size_t at = align8(offsetof(rs_data_t, ent) + (size_t)m->nentities * sizeof(rs_entity_data_t));
    for (int i = 0; i < nf; i++)
        if (f[i].shape == RS_SHAPE_VECTOR) {
            if (d)
                *(void **)((char *)d + f[i].offset) = (char *)d + at;
            at += align8(rs_field_count(&f[i], m, NULL) * rs_field_type_size(f[i].type));
        }
    if (d)
        d->sched = (rs_schedule_t *)((char *)d + at);
    return at + (size_t)m->nu * sizeof(rs_schedule_t);
}

rs_data_t *rs_data_scratch(const rs_model_t *m)
{
    size_t bytes = data_layout(m, NULL);
    rs_data_t *d = calloc(1, bytes);
    if (!d)
        return NULL;
    d->m = m;
    d->block_bytes = bytes;
    data_layout(m, d);
    for (int e = 0; e < m->nentities; e++) {
        d->ent[e].index = e;
        d->ent[e].data = d;
        d->ent[e].u = d->u + m->ent[e].u_off;
        d->ent[e].s = d->sensors + m->ent[e].s_off;
    }
    return d;
}

int rs_data_reserve_events(rs_data_t *d, int n)
{
    if (n <= d->events_cap)
        return 0;
    if (n > RS_EVENT_LOG)
        return RS_EEXHAUSTED;
    int cap = d->events_cap ? d->events_cap : 4;
    while (cap < n)
        cap *= 2;
    if (cap > RS_EVENT_LOG)
        cap = RS_EVENT_LOG;
    rs_event_t *grown = realloc(d->events, (size_t)cap * sizeof *grown);
    if (!grown)
        return RS_EEXHAUSTED;
    d->events = grown;
    d->events_cap = cap;
    return 0;
}

rs_data_t *rs_data_new(const rs_model_t *m, uint64_t seed, rs_status_t *st)
{
    rs_data_t *d = rs_data_scratch(m);
    if (!d) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for world data");
        return NULL;
    }
    if (!(d->integ = rs_integrator_new(m->nx, d->x, world_rhs, world_guards, d, st)) ||
        rs_reset(m, d, seed, st) < 0) {
        rs_data_destroy(&d);
        return NULL;
    }
    return d;
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

int rs_reset(const rs_model_t *m, rs_data_t *d, uint64_t seed, rs_status_t *st)
{
    d->m = m;
    /* every field to its declared reset value (time 0, h_next 0: ARKODE estimates the first
     * step; commands 0, schedules and events cleared, dirty 1), then the INIT fields */
    int nf;
    const rs_field_t *f = rs_data_fields(&nf);
    for (int i = 0; i < nf; i++) {
        if (f[i].reset == RS_RESET_KEEP)
            continue;
        if (f[i].shape == RS_SHAPE_SCHEDULES) {
            for (int a = 0; a < m->nu; a++)
                schedule_clear(&d->sched[a]);
            memset(d->nsched, 0, sizeof d->nsched);
            continue;
        }
        if (f[i].shape == RS_SHAPE_EVENTS) {
            d->nevents = 0;
            continue;
        }
        for (int e = 0; e < (f[i].shape == RS_SHAPE_ENTITY ? m->nentities : 1); e++) {
            void *v = rs_field_values(&f[i], d, e);
            size_t n = rs_field_count(&f[i], m, d), size = rs_field_type_size(f[i].type);
            memset(v, 0, n * size);
            for (size_t k = 0; f[i].reset == RS_RESET_ONE && k < n; k++) {
                if (f[i].type == RS_TYPE_F64)
                    ((double *)v)[k] = 1.0;
                else if (f[i].type == RS_TYPE_U64)
                    ((uint64_t *)v)[k] = 1;
                else
                    ((int *)v)[k] = 1; /* I32, U32: the same bits */
            }
        }
    }
    if (d->spec)
        rs_motion_spec_reset(d->spec); /* the specification stays; its run state restarts */
    d->seed = seed;
    uint64_t sm = seed;
    for (int i = 0; i < 4; i++)
        d->rng[i] = splitmix64(&sm);
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        em->robot->init(em, &d->ent[e], d->x + em->x_off);
    }
    int rc = integrator_configure(m, d, st);
    if (rc < 0)
        return rc;
    read_sensors(m, d, 0.0);
    rs_digest_start(m, d);
    return 0;
}

int rs_reset_initial(const rs_model_t *m, rs_data_t *d, const rs_param_t *init, size_t n,
                     rs_status_t *st)
{
    rs_model_t tmp = *m; /* validated as SetParams would, then used for init only */
    int rc = rs_model_set_params(&tmp, init, n, st);
    if (rc < 0)
        return rc;
    for (int e = 0; e < m->nentities; e++) {
        int named = 0;
        for (size_t i = 0; i < n; i++)
            named |= init[i].entity && strcmp(init[i].entity, m->ent[e].name) == 0;
        if (!named)
            continue;
        rs_entity_data_t *ed = &d->ent[e];
        ed->mode = 0;
        memset(ed->aux, 0, sizeof ed->aux);
        tmp.ent[e].robot->init(&tmp.ent[e], ed, d->x + m->ent[e].x_off);
    }
    d->dirty = 1;
    read_sensors(m, d, 0.0);
    rs_digest_start(m, d);
    return 0;
}

int rs_data_restored(const rs_model_t *m, rs_data_t *d, const rs_stats_t *stats,
                     rs_status_t *st)
{
    d->m = m;
    int rc = integrator_configure(m, d, st);
    if (rc < 0)
        return rc;
    (void)rs_integrator_take_steps(d->integ); /* steps of the data before: not counted */
    if (stats) {
        d->internal_steps = stats->internal_steps;
        d->rhs_evals = stats->rhs_evals;
        d->root_evals = stats->root_evals;
    }
    return 0;
}

int rs_data_model_changed(const rs_model_t *m, rs_data_t *d, rs_status_t *st)
{
    d->m = m;
    /* a new control step restarts the grid from now */
    d->grid_t0 = d->t;
    d->grid_k = 0;
    d->dirty = 1;
    if (d->h_next > m->control_dt)
        d->h_next = m->control_dt; /* as remember_step_size keeps it */
    return integrator_configure(m, d, st);
}

int rs_check_commands(const rs_model_t *m, int e, const double *u, size_t n, rs_status_t *st)
{
    if (e < 0 || e >= m->nentities)
        return rs_fail(st, RS_ENOTFOUND, "no entity %d", e);
    const rs_entity_model_t *em = &m->ent[e];
    const rs_robot_t *r = em->robot;
    if ((int)n != em->nu)
        return rs_fail(st, RS_EINVAL, "entity '%s' (%s) takes %d actuator value%s, got %zu",
                       em->name, r->kind, em->nu, em->nu == 1 ? "" : "s", n);
    for (size_t a = 0; a < n; a++) {
        if (!isfinite(u[a]))
            return rs_fail(st, RS_EINVAL, "actuator '%s.%s' command is not finite", em->name,
                           r->actuators[a].name);
        if (u[a] < r->actuators[a].lower || u[a] > r->actuators[a].upper)
            return rs_fail(st, RS_ERANGE, "actuator '%s.%s' command %g is outside [%g, %g] %s",
                           em->name, r->actuators[a].name, u[a], r->actuators[a].lower,
                           r->actuators[a].upper, r->actuators[a].unit);
    }
    return 0;
}

/* Entity e's held commands become u (checked), its schedules go. */
static void apply_commands(const rs_model_t *m, rs_data_t *d, int e, const double *u)
{
    const rs_entity_model_t *em = &m->ent[e];
    memcpy(d->u + em->u_off, u, (size_t)em->nu * sizeof(double));
    for (int a = 0; a < em->nu; a++)
        schedule_clear(&d->sched[em->u_off + a]);
    d->nsched[e] = 0;
    d->dirty = 1;
}

int rs_set_commands(const rs_model_t *m, rs_data_t *d, int e, const double *u, size_t n,
                    rs_status_t *st)
{
    int rc = rs_check_commands(m, e, u, n, st);
    if (rc < 0)
        return rc;
    apply_commands(m, d, e, u);
    return 0;
}

int rs_set_all_commands(const rs_model_t *m, rs_data_t *d, const double *u, rs_status_t *st)
{
    for (int e = 0; e < m->nentities; e++) {
        int rc = rs_check_commands(m, e, u + m->ent[e].u_off, (size_t)m->ent[e].nu, st);
        if (rc < 0)
            return rc;
    }
    for (int e = 0; e < m->nentities; e++)
        apply_commands(m, d, e, u + m->ent[e].u_off);
    return 0;
}

int rs_check_actuator(const rs_model_t *m, int e, long long a, rs_status_t *st)
{
    if (e < 0 || e >= m->nentities)
        return rs_fail(st, RS_ENOTFOUND, "no entity %d", e);
    const rs_entity_model_t *em = &m->ent[e];
    if (a >= 0 && a < em->nu)
        return 0;
    char names[200] = "";
    for (int i = 0; i < em->nu; i++)
        rs_join(names, sizeof names, "%d: %s", i, em->robot->actuators[i].name);
    return rs_fail(st, RS_ENOTFOUND,
                   "entity '%s' (%s) has %d actuator%s (%s); there is no actuator %lld", em->name,
                   em->robot->kind, em->nu, em->nu == 1 ? "" : "s", names, a);
}

int rs_set_schedule(const rs_model_t *m, rs_data_t *d, int e, int a, const double *t,
                    const double *v, size_t n, rs_status_t *st)
{
    int rc = rs_check_actuator(m, e, a, st);
    if (rc < 0)
        return rc;
    const rs_entity_model_t *em = &m->ent[e];
    const rs_robot_t *r = em->robot;
    if (n > RS_MAX_SCHEDULE)
        return rs_fail(st, RS_EEXHAUSTED, "a schedule holds at most %d knots, got %zu",
                       RS_MAX_SCHEDULE, n);
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(t[k]) || !isfinite(v[k]))
            return rs_fail(st, RS_EINVAL, "schedule knot %zu is not finite", k);
        if (k > 0 && !(t[k] > t[k - 1]))
            return rs_fail(st, RS_EINVAL,
                           "schedule times must increase strictly; knot %zu (t = %g) follows t = %g",
                           k, t[k], t[k - 1]);
        if (v[k] < r->actuators[a].lower || v[k] > r->actuators[a].upper)
            return rs_fail(st, RS_ERANGE, "schedule value %g at knot %zu is outside [%g, %g] %s",
                           v[k], k, r->actuators[a].lower, r->actuators[a].upper,
                           r->actuators[a].unit);
    }
    rs_schedule_t fresh = {0};
    if (n) {
        fresh.t = malloc(n * sizeof(double));
        fresh.v = malloc(n * sizeof(double));
        if (!fresh.t || !fresh.v) {
            schedule_clear(&fresh);
            return rs_fail(st, RS_EEXHAUSTED, "out of memory for a schedule of %zu knots", n);
        }
        memcpy(fresh.t, t, n * sizeof(double));
        memcpy(fresh.v, v, n * sizeof(double));
        fresh.n = (int)n;
    }
    rs_schedule_t *s = &d->sched[em->u_off + a];
    int had = s->n > 0;
    schedule_clear(s);
    *s = fresh;
    d->nsched[e] += (n > 0) - had;
    d->dirty = 1;
    return 0;
}

int rs_set_target(const rs_model_t *m, rs_data_t *d, int e, const double *target, size_t n,
                  rs_status_t *st)
{
    if (e < 0 || e >= m->nentities)
        return rs_fail(st, RS_ENOTFOUND, "no entity %d", e);
    const rs_entity_model_t *em = &m->ent[e];
    if (!em->robot->target_to_commands)
        return rs_fail(st, RS_EUNIMPL, "entity '%s' (%s) takes no task-space target", em->name,
                       em->robot->kind);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(target[i]))
            return rs_fail(st, RS_EINVAL, "target value %zu is not finite", i);
    double u[RS_MAX_ACTUATORS]; /* em->nu <= RS_MAX_ACTUATORS: rs_robot_check */
    int rc = em->robot->target_to_commands(em, &d->ent[e], target, (int)n, u, st);
    if (rc < 0)
        return rc;
    return rs_set_commands(m, d, e, u, (size_t)em->nu, st);
}

int rs_reachable(const rs_model_t *m, int e, double x, double y)
{
    const rs_robot_t *r = e >= 0 && e < m->nentities ? m->ent[e].robot : NULL;
    if (!r || !r->reachable)
        return RS_EUNIMPL;
    return r->reachable(&m->ent[e], x, y) ? 1 : 0;
}

int rs_workspace(const rs_model_t *m, int e, double *xy, int max_points, rs_status_t *st)
{
    const rs_robot_t *r = e >= 0 && e < m->nentities ? m->ent[e].robot : NULL;
    if (!r || !r->workspace || !r->reachable)
        return rs_fail(st, RS_EUNIMPL, "entity '%s' (%s) has no task-space workspace",
                       r ? m->ent[e].name : "?", r ? r->kind : "?");
    return max_points > 0 ? r->workspace(&m->ent[e], xy, max_points) : 0;
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

/* Integrate from d->t to t_end, stopping at schedule knots and handling events. */
static int integrate_to(const rs_model_t *m, rs_data_t *d, double t_end, rs_status_t *st)
{
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
                apply_jumps(m, d);
                if ((rc = entities_failure(m, d, st)) < 0)
                    return rc;
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

/* ---- world --------------------------------------------------------------------------- */

rs_world_t *rs_world_new(const char *preset, const rs_param_t *params, size_t nparams,
                         uint64_t seed, rs_status_t *st)
{
    rs_world_t *w = calloc(1, sizeof *w);
    if (!w) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for a world");
        return NULL;
    }
    rs_model_t *built = malloc(sizeof *built);
    if (!built) {
        free(w);
        rs_fail(st, RS_EEXHAUSTED, "out of memory for a model");
        return NULL;
    }
    int rc = rs_model_build(built, preset, params, nparams, st);
    if (rc == 0)
        w->model = rs_model_share(built, st);
    free(built);
    if (rc < 0 || !w->model || !(w->data = rs_data_new(w->model, seed, st)))
        rs_world_destroy(&w);
    return w;
}

void rs_world_destroy(rs_world_t **pw)
{
    rs_world_t *w = *pw;
    if (!w)
        return;
    rs_data_destroy(&w->data);
    rs_model_release(&w->model);
    rs_randomize_free(&w->randomize);
    free(w);
    *pw = NULL;
}

static int set_params_checked(const rs_world_t *w, rs_model_t *next, const rs_param_t *params,
                              size_t nparams, rs_status_t *st);

int rs_world_set_params(rs_world_t *w, const rs_param_t *params, size_t nparams, rs_status_t *st)
{
    /* copy on write: the new parameters make a new model, shared with any world that has the
     * same; the old one stays with the worlds that still use it */
    rs_model_t *next = malloc(sizeof *next);
    if (!next)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory for a model");
    *next = *w->model;
    int rc = set_params_checked(w, next, params, nparams, st);
    const rs_model_t *shared = rc == 0 ? rs_model_share(next, st) : NULL;
    free(next);
    if (rc == 0 && !shared)
        rc = RS_EEXHAUSTED;
    if (rc == 0 && (rc = rs_data_model_changed(shared, w->data, st)) == 0) {
        rs_model_release(&w->model);
        w->model = shared;
        return 0;
    }
    rs_model_release(&shared);
    return rc;
}

/* rs_model_set_params on `next`, then the checks the world's task and state make of it. */
static int set_params_checked(const rs_world_t *w, rs_model_t *next, const rs_param_t *params,
                              size_t nparams, rs_status_t *st)
{
    int rc = rs_model_set_params(next, params, nparams, st);
    if (rc < 0)
        return rc;
    if (w->task && (rc = rs_task_check_model(w->task, next, st)) < 0)
        return rc; /* e.g. the reach tasks' PID mode */
    /* the robots' run variables must still fit the new parameters (a diff-drive robot blocked
     * by obstacle 3 keeps it), or the world's state would be one no snapshot may hold */
    for (int e = 0; e < next->nentities; e++) {
        rs_status_t why;
        rs_status_clear(&why);
        if (rs_robot_check_data(&next->ent[e], &w->data->ent[e], &why) < 0)
            return rs_fail(st, RS_EPRECOND, "the new parameters do not fit the world's state: %s",
                           why.message);
    }
    return 0;
}
