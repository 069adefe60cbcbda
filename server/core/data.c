/* Data: allocation, reset, validation, serialization and copy, each walking the field table
 * (fields.c), so that adding a field to RS_DATA_FIELDS needs no code here. */
#include "rs_data.h"
#include "rs_integrator.h"
#include "rs_motion_spec.h"
#include "rs_step.h"
#include "rs_robot.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const void *values_of(const rs_field_t *f, const rs_data_t *d, int e)
{
    return rs_field_values(f, (rs_data_t *)d, e);
}

/* Places a field's values are in: one, or one per entity. */
static int places(const rs_field_t *f, const rs_model_t *m)
{
    return f->shape == RS_SHAPE_ENTITY ? m->nentities : 1;
}

/* ---- validation ------------------------------------------------------------------------ */

#define BAD(st, ...) rs_fail((st), RS_EINVAL, __VA_ARGS__)

/* Entity owning value k of a VECTOR of the given length, and the variable's name. */
static const char *vector_var(const rs_model_t *m, rs_field_length_t len, size_t k, int *ent)
{
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        int off = len == RS_LEN_NX ? em->x_off : len == RS_LEN_NU ? em->u_off : em->s_off;
        int n = len == RS_LEN_NX ? em->nx : len == RS_LEN_NU ? em->nu : em->ns;
        const rs_var_desc_t *v = len == RS_LEN_NX   ? em->robot->state
                                 : len == RS_LEN_NU ? em->robot->actuators
                                                    : em->robot->sensors;
        if ((int)k >= off && (int)k < off + n) {
            *ent = e;
            return v[k - (size_t)off].name;
        }
    }
    *ent = -1;
    return "?";
}

static int check_finite(const rs_field_t *f, const rs_model_t *m, const rs_data_t *d,
                        rs_status_t *st)
{
    for (int e = 0; e < places(f, m); e++) {
        const double *v = values_of(f, d, e);
        size_t n = rs_field_count(f, m, d);
        for (size_t k = 0; k < n; k++) {
            if (isfinite(v[k]))
                continue;
            if (f->shape == RS_SHAPE_VECTOR) {
                int ent;
                const char *var = vector_var(m, f->length, k, &ent);
                return BAD(st, "%s[%zu] (%s.%s) is %g; it must be finite", f->name, k,
                           ent >= 0 ? m->ent[ent].name : "?", var, v[k]);
            }
            return BAD(st, "%s[%zu] is %g; it must be finite", f->name, k, v[k]);
        }
    }
    return 0;
}

static int check_schedules(const rs_model_t *m, const rs_data_t *d, rs_status_t *st)
{
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        for (int a = 0; a < em->nu; a++) {
            const rs_schedule_t *s = &d->sched[em->u_off + a];
            const rs_var_desc_t *ad = &em->robot->actuators[a];
            if (s->n < 0 || s->n > RS_MAX_SCHEDULE)
                return BAD(st, "the schedule of '%s.%s' has %d knots (at most %d)", em->name,
                           ad->name, s->n, RS_MAX_SCHEDULE);
            if (s->cursor < 0 || (s->n && s->cursor >= s->n) || (!s->n && s->cursor))
                return BAD(st, "the schedule of '%s.%s' has its cursor at %d of %d knots",
                           em->name, ad->name, s->cursor, s->n);
            for (int k = 0; k < s->n; k++)
                if (!isfinite(s->t[k]) || !isfinite(s->v[k]) || (k && !(s->t[k] > s->t[k - 1])) ||
                    s->v[k] < ad->lower || s->v[k] > ad->upper)
                    return BAD(st,
                               "schedule knot %d of '%s.%s' (t = %g s, value %g): knots are "
                               "finite, their times strictly increasing, their values within "
                               "[%g, %g]",
                               k, em->name, ad->name, s->t[k], s->v[k], ad->lower, ad->upper);
        }
    }
    return 0;
}

static int check_events(const rs_model_t *m, const rs_data_t *d, rs_status_t *st)
{
    if (d->nevents < 0 || d->nevents > RS_EVENT_LOG)
        return BAD(st, "%d events in the log (at most %d)", d->nevents, RS_EVENT_LOG);
    if ((uint64_t)d->nevents + d->events_dropped > d->events_total)
        return BAD(st, "%d events logged and %u dropped, but %llu in all", d->nevents,
                   d->events_dropped, (unsigned long long)d->events_total);
    for (int i = 0; i < d->nevents; i++) {
        const rs_event_t *ev = &d->events[i];
        if (ev->entity < 0 || ev->entity >= m->nentities || ev->kind < 0 ||
            ev->kind >= m->ent[ev->entity].robot->nevent_kinds + RS_SPEC_EVENT_KINDS ||
            ev->nvalues < 0 ||
            ev->nvalues > RS_EVENT_VALUES || !isfinite(ev->t))
            return BAD(st, "event %d (entity %d, kind %d, %d values, t = %g s) is not one this "
                           "world can log",
                       i, ev->entity, ev->kind, ev->nvalues, ev->t);
    }
    return 0;
}

#define MAX_EXACT_STEPS 9007199254740992.0 /* 2^53: counts a double holds exactly */

static int check_field(const rs_field_t *f, const rs_model_t *m, const rs_data_t *d,
                       rs_status_t *st)
{
    const void *v = values_of(f, d, 0);
    switch (f->check) {
    case RS_CHECK_ANY: return 0;
    case RS_CHECK_FINITE: return check_finite(f, m, d, st);
    case RS_CHECK_TIME: {
        double t = *(const double *)v;
        if (!isfinite(t) || t < 0 || t > MAX_EXACT_STEPS * m->control_dt)
            return BAD(st, "%s is %g s; it must be finite, >= 0 and below 2^53 control steps",
                       f->name, t);
        return 0;
    }
    case RS_CHECK_STEPS:
        if ((double)*(const uint64_t *)v > MAX_EXACT_STEPS)
            return BAD(st, "%s is %llu; at most 2^53", f->name,
                       (unsigned long long)*(const uint64_t *)v);
        return 0;
    case RS_CHECK_GRID: {
        /* the control step the world is in: control steps end at grid_t0 + k control_dt, and
         * t lies in [grid_t0 + k dt, grid_t0 + (k + 1) dt) (at its start between Steps, inside
         * it only after an integrator failure); k counts steps since reset at most */
        double dt = m->control_dt, tk = d->grid_t0 + (double)d->grid_k * dt;
        if (d->grid_k > d->step_count)
            return BAD(st, "grid_k %llu exceeds step_count %llu", (unsigned long long)d->grid_k,
                       (unsigned long long)d->step_count);
        if (!(d->t >= tk && d->t < tk + dt))
            return BAD(st,
                       "time %.17g s is not in the control step the grid says (grid_t0 %.17g s, "
                       "grid_k %llu, control_dt %g s: [%.17g, %.17g))",
                       d->t, d->grid_t0, (unsigned long long)d->grid_k, dt, tk, tk + dt);
        return 0;
    }
    case RS_CHECK_STEP_SIZE: {
        double h = *(const double *)v;
        if (!isfinite(h) || h < 0 || h > m->control_dt)
            return BAD(st, "%s is %g s; it must lie in [0, control_dt = %g s]", f->name, h,
                       m->control_dt);
        return 0;
    }
    case RS_CHECK_RNG: {
        const uint64_t *s = v;
        uint64_t any = 0;
        for (int i = 0; i < f->count; i++)
            any |= s[i];
        return any ? 0 : BAD(st, "the random generator state %s is all zero", f->name);
    }
    case RS_CHECK_COMMAND: {
        const double *u = v;
        for (int e = 0; e < m->nentities; e++) {
            rs_status_t why;
            rs_status_clear(&why);
            if (rs_check_commands(m, e, u + m->ent[e].u_off, (size_t)m->ent[e].nu, &why) < 0)
                return BAD(st, "%s: %s", f->name, why.message);
        }
        return 0;
    }
    case RS_CHECK_MODE:
    case RS_CHECK_AUX:
        for (int e = 0; e < m->nentities; e++) {
            int rc = rs_robot_check_data(&m->ent[e], &d->ent[e], st);
            if (rc < 0)
                return rc;
        }
        return 0;
    case RS_CHECK_BOOL:
        if (*(const int *)v != 0 && *(const int *)v != 1)
            return BAD(st, "%s is %d; it must be 0 or 1", f->name, *(const int *)v);
        return 0;
    case RS_CHECK_COUNT:
        if (*(const int *)v < 0)
            return BAD(st, "%s is %d; it must be >= 0", f->name, *(const int *)v);
        return 0;
    case RS_CHECK_SCHEDULES: return check_schedules(m, d, st);
    case RS_CHECK_EVENTS: return check_events(m, d, st);
    case RS_CHECK_SPEC: return 0; /* parsed, bound and validated as it was read */
    }
    return BAD(st, "field %s has no check", f->name);
}

int rs_data_check(const rs_model_t *m, const rs_data_t *d, rs_status_t *st)
{
    int nfields;
    const rs_field_t *fields = rs_data_fields(&nfields);
    for (int i = 0; i < nfields; i++) {
        int rc = check_field(&fields[i], m, d, st);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- serialization ---------------------------------------------------------------------- */

static void put_value(rs_writer_t *w, rs_field_type_t t, const void *p, size_t k)
{
    switch (t) {
    case RS_TYPE_F64: rs_put_f64(w, ((const double *)p)[k]); break;
    case RS_TYPE_U64: rs_put_u64(w, ((const uint64_t *)p)[k]); break;
    case RS_TYPE_I32:
    case RS_TYPE_U32: rs_put_u32(w, ((const uint32_t *)p)[k]); break;
    }
}

static void get_value(rs_reader_t *r, rs_field_type_t t, void *p, size_t k)
{
    switch (t) {
    case RS_TYPE_F64: ((double *)p)[k] = rs_get_f64(r); break;
    case RS_TYPE_U64: ((uint64_t *)p)[k] = rs_get_u64(r); break;
    case RS_TYPE_I32:
    case RS_TYPE_U32: ((uint32_t *)p)[k] = rs_get_u32(r); break;
    }
}

void rs_field_write(rs_writer_t *w, const rs_field_t *f, const rs_model_t *m, const rs_data_t *d)
{
    rs_put_str(w, f->name);
    if (f->shape == RS_SHAPE_SCHEDULES) {
        rs_put_u32(w, (uint32_t)m->nu);
        for (int a = 0; a < m->nu; a++) {
            const rs_schedule_t *s = &d->sched[a];
            rs_put_u32(w, (uint32_t)s->n);
            rs_put_u32(w, (uint32_t)s->cursor);
            for (int k = 0; k < s->n; k++)
                rs_put_f64(w, s->t[k]);
            for (int k = 0; k < s->n; k++)
                rs_put_f64(w, s->v[k]);
        }
        return;
    }
    if (f->shape == RS_SHAPE_SPEC) {
        /* the source's length and bytes (0: none), then the run state */
        size_t len = 0;
        const char *src = d->spec ? rs_motion_spec_source(d->spec, &len) : NULL;
        rs_put_u32(w, (uint32_t)len);
        if (!src)
            return;
        rs_put_bytes(w, src, len);
        size_t n = rs_motion_spec_state_len(d->spec);
        rs_put_u32(w, (uint32_t)n);
        double state[2 + 6 * 256];
        rs_motion_spec_state_get(d->spec, state);
        for (size_t k = 0; k < n && k < sizeof state / sizeof state[0]; k++)
            rs_put_f64(w, state[k]);
        return;
    }
    if (f->shape == RS_SHAPE_EVENTS) {
        rs_put_u32(w, (uint32_t)d->nevents);
        for (int i = 0; i < d->nevents; i++) {
            const rs_event_t *ev = &d->events[i];
            rs_put_u32(w, (uint32_t)ev->entity);
            rs_put_u32(w, (uint32_t)ev->kind);
            rs_put_f64(w, ev->t);
            rs_put_f64(w, ev->value);
            rs_put_u32(w, (uint32_t)ev->nvalues);
            for (int k = 0; k < ev->nvalues; k++)
                rs_put_f64(w, ev->before[k]);
            for (int k = 0; k < ev->nvalues; k++)
                rs_put_f64(w, ev->after[k]);
        }
        return;
    }
    size_t n = rs_field_count(f, m, d);
    rs_put_u32(w, (uint32_t)(n * (size_t)places(f, m)));
    for (int e = 0; e < places(f, m); e++) {
        const void *v = values_of(f, d, e);
        for (size_t k = 0; k < n; k++)
            put_value(w, f->type, v, k);
    }
}

void rs_data_write(rs_writer_t *w, const rs_model_t *m, const rs_data_t *d)
{
    int nfields;
    const rs_field_t *fields = rs_data_fields(&nfields);
    for (int i = 0; i < nfields; i++)
        rs_field_write(w, &fields[i], m, d);
}

#define MALFORMED(st, f)                                                                       \
    rs_fail((st), RS_EINVAL, "snapshot is malformed: its field '%s' runs past its end", (f)->name)

/* The schedules: counts first, then fresh knots for each (freed with d). */
static int read_schedules(rs_reader_t *r, const rs_field_t *f, const rs_model_t *m, rs_data_t *d,
                          rs_status_t *st)
{
    for (int a = 0; a < m->nu; a++) {
        uint32_t n = rs_get_u32(r);
        int cursor = (int)rs_get_u32(r);
        if (r->overrun)
            return MALFORMED(st, f);
        if (n > RS_MAX_SCHEDULE)
            return BAD(st, "a schedule of %u knots (at most %d)", n, RS_MAX_SCHEDULE);
        if ((size_t)(r->end - r->p) / 16 < n)
            return MALFORMED(st, f);
        rs_schedule_t *s = &d->sched[a];
        s->cursor = cursor;
        if (!n)
            continue;
        s->t = malloc(n * sizeof(double));
        s->v = malloc(n * sizeof(double));
        if (!s->t || !s->v)
            return rs_fail(st, RS_EEXHAUSTED, "out of memory for a schedule of %u knots", n);
        s->n = (int)n;
        for (uint32_t k = 0; k < n; k++)
            s->t[k] = rs_get_f64(r);
        for (uint32_t k = 0; k < n; k++)
            s->v[k] = rs_get_f64(r);
    }
    return 0;
}

static int read_events(rs_reader_t *r, const rs_field_t *f, rs_data_t *d, rs_status_t *st)
{
    uint32_t n = rs_get_u32(r);
    if (r->overrun)
        return MALFORMED(st, f);
    if (n > RS_EVENT_LOG)
        return BAD(st, "%u events in the log (at most %d)", n, RS_EVENT_LOG);
    if (rs_data_reserve_events(d, (int)n) < 0)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory for an event log of %u events", n);
    d->nevents = (int)n;
    for (uint32_t i = 0; i < n; i++) {
        rs_event_t *ev = &d->events[i];
        memset(ev, 0, sizeof *ev);
        ev->entity = (int)rs_get_u32(r);
        ev->kind = (int)rs_get_u32(r);
        ev->t = rs_get_f64(r);
        ev->value = rs_get_f64(r);
        uint32_t nv = rs_get_u32(r);
        if (r->overrun)
            return MALFORMED(st, f);
        if (nv > RS_EVENT_VALUES)
            return BAD(st, "event %u records %u values (at most %d)", i, nv, RS_EVENT_VALUES);
        ev->nvalues = (int)nv;
        for (uint32_t k = 0; k < nv; k++)
            ev->before[k] = rs_get_f64(r);
        for (uint32_t k = 0; k < nv; k++)
            ev->after[k] = rs_get_f64(r);
    }
    return r->overrun ? MALFORMED(st, f) : 0;
}

/* The motion specification: parsed and validated under the snapshot's model like a
 * LoadMotionSpec, then its run state checked (rs_motion_spec_state_set). */
static int read_spec(rs_reader_t *r, const rs_field_t *f, const rs_model_t *m, rs_data_t *d,
                     rs_status_t *st)
{
    uint32_t len = rs_get_u32(r);
    if (r->overrun)
        return MALFORMED(st, f);
    if (len == 0)
        return 0;
    const uint8_t *src = rs_take(r, len);
    if (!src)
        return MALFORMED(st, f);
    rs_status_t why;
    rs_status_clear(&why);
    rs_motion_spec_t *s = rs_motion_spec_parse(m, (const char *)src, len, &why);
    if (!s)
        return BAD(st, "its motion specification: %s", why.message);
    uint32_t n = rs_get_u32(r);
    if (r->overrun || n != rs_motion_spec_state_len(s) || (size_t)(r->end - r->p) / 8 < n) {
        rs_motion_spec_destroy(&s);
        return r->overrun ? MALFORMED(st, f)
                          : BAD(st, "its motion specification's state: %u values, expected %zu", n,
                                rs_motion_spec_state_len(s));
    }
    double state[2 + 6 * 256];
    for (uint32_t k = 0; k < n; k++)
        state[k] = rs_get_f64(r);
    if (rs_motion_spec_state_set(s, state, n, &why) < 0) {
        rs_motion_spec_destroy(&s);
        return BAD(st, "%s", why.message);
    }
    rs_motion_spec_destroy(&d->spec);
    d->spec = s;
    return 0;
}

int rs_data_read(rs_reader_t *r, const rs_model_t *m, rs_data_t *d, rs_status_t *st)
{
    int nfields;
    const rs_field_t *fields = rs_data_fields(&nfields);
    for (int i = 0; i < nfields; i++) {
        const rs_field_t *f = &fields[i];
        char name[RS_NAME_MAX];
        r->field = f->name;
        if (rs_get_str(r, name, sizeof name) < 0 || strcmp(name, f->name) != 0) {
            if (r->overrun)
                return MALFORMED(st, f);
            return BAD(st,
                       "snapshot field %d is '%s' where this server (robosim %s) keeps '%s': "
                       "take the snapshot with a server of the same version",
                       i, name, RS_VERSION, f->name);
        }
        int rc = 0;
        if (f->shape == RS_SHAPE_SCHEDULES) {
            uint32_t n = rs_get_u32(r);
            if (!r->overrun && (int)n != m->nu)
                return BAD(st, "%u schedules, the world has %d actuators", n, m->nu);
            rc = read_schedules(r, f, m, d, st);
        } else if (f->shape == RS_SHAPE_EVENTS) {
            rc = read_events(r, f, d, st);
        } else if (f->shape == RS_SHAPE_SPEC) {
            rc = read_spec(r, f, m, d, st);
        } else {
            size_t n = rs_field_count(f, m, d), want = n * (size_t)places(f, m);
            uint32_t got = rs_get_u32(r);
            if (r->overrun)
                return MALFORMED(st, f);
            if (got != want)
                return BAD(st, "field '%s' holds %u values, this world keeps %zu", f->name, got,
                           want);
            if ((size_t)(r->end - r->p) / rs_field_type_size(f->type) < want)
                return MALFORMED(st, f);
            for (int e = 0; e < places(f, m); e++) {
                void *v = rs_field_values(f, d, e);
                for (size_t k = 0; k < n; k++)
                    get_value(r, f->type, v, k);
            }
        }
        if (rc < 0)
            return rc;
        if (r->overrun)
            return MALFORMED(st, f);
    }
    return 0;
}

/* ---- copy ------------------------------------------------------------------------------ */

/* A saved boundary (rs_data_save): the values, in a block laid out for the model, and the
 * motion specification's run state beside them (the data's own specification object is the
 * one restored: a control step changes its run state, never its source). */
struct rs_rollback {
    rs_data_t *d;               /* rs_data_scratch: no integrator; its knots are rb's */
    int nentities, nx, nu, ns;  /* the sizes d is laid out for */
    int *knots_cap;             /* per actuator: room in d->sched[a].t and .v */
    struct span {
        size_t at, bytes;
    } *spans;                   /* the value fields' bytes, from the data's start, adjacent
                                   ones merged: the same in every data of these sizes */
    int nspans;
    const rs_motion_spec_t *spec; /* the saved data's specification, or NULL */
    double *spec_state;
    size_t spec_len, spec_cap;
};

/* dst becomes src (rb NULL) or the boundary rb saved (src = rb->d; dst's specification object
 * gets its saved run state back). */
static int copy_data(const rs_model_t *m, rs_data_t *dst, const rs_data_t *src,
                     const rs_rollback_t *rb, rs_status_t *st)
{
    /* the schedules' knots first: the only allocation, so a failure changes nothing */
    rs_schedule_t *fresh = calloc((size_t)(m->nu ? m->nu : 1), sizeof *fresh);
    int ok = fresh != NULL;
    for (int a = 0; ok && a < m->nu; a++) {
        const rs_schedule_t *s = &src->sched[a];
        fresh[a].cursor = s->cursor;
        if (!s->n)
            continue;
        fresh[a].t = malloc((size_t)s->n * sizeof(double));
        fresh[a].v = malloc((size_t)s->n * sizeof(double));
        if (!(ok = fresh[a].t && fresh[a].v))
            break;
        fresh[a].n = s->n;
        memcpy(fresh[a].t, s->t, (size_t)s->n * sizeof(double));
        memcpy(fresh[a].v, s->v, (size_t)s->n * sizeof(double));
    }
    /* the motion specification: its state copied into dst's own when that was parsed from the
     * same source (a parse costs several control steps), else into a fresh copy */
    rs_motion_spec_t *spec = NULL;
    double state[2 + 6 * 256];
    int same_spec = 0;
    if (ok && src->spec) {
        size_t len, dlen = 0;
        const char *text = rs_motion_spec_source(src->spec, &len);
        const char *dtext = dst->spec ? rs_motion_spec_source(dst->spec, &dlen) : NULL;
        rs_motion_spec_state_get(src->spec, state);
        same_spec = dtext && dtext != text && dlen == len && memcmp(dtext, text, len) == 0;
        if (!same_spec) {
            spec = rs_motion_spec_parse(m, text, len, st);
            if (!spec ||
                rs_motion_spec_state_set(spec, state, rs_motion_spec_state_len(src->spec), st) < 0)
                ok = 0;
        }
    }
    /* and room for the event log (it only grows, so a failure here changes nothing either) */
    ok = ok && rs_data_reserve_events(dst, src->nevents) == 0;
    if (!ok) {
        rs_motion_spec_destroy(&spec);
        for (int a = 0; fresh && a < m->nu; a++) {
            free(fresh[a].t);
            free(fresh[a].v);
        }
        free(fresh);
        return rs_fail(st, RS_EEXHAUSTED, "out of memory copying a world's schedules and event log");
    }
    int nfields;
    const rs_field_t *fields = rs_data_fields(&nfields);
    for (int i = 0; i < nfields; i++) {
        const rs_field_t *f = &fields[i];
        if (f->shape == RS_SHAPE_SCHEDULES) {
            memset(dst->nsched, 0, sizeof dst->nsched);
            for (int e = 0; e < m->nentities; e++)
                for (int a = m->ent[e].u_off; a < m->ent[e].u_off + m->ent[e].nu; a++) {
                    free(dst->sched[a].t);
                    free(dst->sched[a].v);
                    dst->sched[a] = fresh[a];
                    dst->nsched[e] += fresh[a].n > 0;
                }
        } else if (f->shape == RS_SHAPE_SPEC && rb && rb->spec) {
            /* the object saved: only its run state moved since */
            assert(dst->spec == rb->spec);
            rs_motion_spec_state_set(dst->spec, rb->spec_state, rb->spec_len, NULL);
        } else if (f->shape == RS_SHAPE_SPEC && same_spec) {
            /* the same source gives the same state length: this cannot fail */
            rs_motion_spec_state_set(dst->spec, state, rs_motion_spec_state_len(src->spec), NULL);
        } else if (f->shape == RS_SHAPE_SPEC) {
            rs_motion_spec_destroy(&dst->spec);
            dst->spec = spec;
        } else if (f->shape == RS_SHAPE_EVENTS) {
            dst->nevents = src->nevents;
            if (src->nevents) /* an empty log may be unallocated (NULL) */
                memcpy(dst->events, src->events, (size_t)src->nevents * sizeof src->events[0]);
        } else {
            size_t bytes = rs_field_count(f, m, src) * rs_field_type_size(f->type);
            for (int e = 0; e < places(f, m); e++)
                memcpy(rs_field_values(f, dst, e), values_of(f, src, e), bytes);
        }
    }
    free(fresh);
    return rs_data_restored(m, dst, NULL, st);
}

int rs_data_copy(const rs_model_t *m, rs_data_t *dst, const rs_data_t *src, rs_status_t *st)
{
    return copy_data(m, dst, src, NULL, st);
}

/* ---- rollback: a control-step boundary saved to go back to ------------------------------- */

rs_rollback_t *rs_rollback_new(void)
{
    return calloc(1, sizeof(rs_rollback_t));
}

/* Free rb's block and buffers (it saves nothing then). */
static void rollback_clear(rs_rollback_t *rb)
{
    if (rb->d) {
        for (int a = 0; a < rb->nu; a++) {
            free(rb->d->sched[a].t);
            free(rb->d->sched[a].v);
        }
        rb->d->m = NULL; /* its knots are freed above; its model may be gone */
        rs_data_destroy(&rb->d);
    }
    free(rb->knots_cap);
    free(rb->spans);
    free(rb->spec_state);
    *rb = (rs_rollback_t){0};
}

void rs_rollback_destroy(rs_rollback_t **prb)
{
    if (!*prb)
        return;
    rollback_clear(*prb);
    free(*prb);
    *prb = NULL;
}

static int is_value(const rs_field_t *f)
{
    return f->shape == RS_SHAPE_VALUE || f->shape == RS_SHAPE_VECTOR ||
           f->shape == RS_SHAPE_ENTITY;
}

static int by_at(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

/* rb->spans from the field table and rb's block (laid out for m). 0, or -1 out of memory. */
static int plan_spans(rs_rollback_t *rb, const rs_model_t *m)
{
    int nf, n = 0;
    const rs_field_t *f = rs_data_fields(&nf);
    if (!(rb->spans = malloc((size_t)(nf * (m->nentities + 1)) * sizeof *rb->spans)))
        return -1;
    for (int i = 0; i < nf; i++)
        for (int e = 0; is_value(&f[i]) && e < places(&f[i], m); e++) {
            size_t bytes = rs_field_count(&f[i], m, rb->d) * rs_field_type_size(f[i].type);
            if (bytes)
                rb->spans[n++] = (struct span){
                    (size_t)((char *)rs_field_values(&f[i], rb->d, e) - (char *)rb->d), bytes};
        }
    qsort(rb->spans, (size_t)n, sizeof *rb->spans, by_at);
    rb->nspans = 0;
    for (int k = 0; k < n; k++) {
        struct span *last = rb->nspans ? &rb->spans[rb->nspans - 1] : NULL;
        if (last && last->at + last->bytes == rb->spans[k].at)
            last->bytes += rb->spans[k].bytes;
        else
            rb->spans[rb->nspans++] = rb->spans[k];
    }
    return 0;
}

/* Whether data src is laid out as rb's block (every data of the same sizes is: one
 * rs_data_scratch layout), so rb's spans fit it. */
static int same_layout(const rs_rollback_t *rb, const rs_data_t *src)
{
    return src->block_bytes == rb->d->block_bytes &&
           (const char *)src->x - (const char *)src == (const char *)rb->d->x - (const char *)rb->d &&
           (const char *)src->sched - (const char *)src ==
               (const char *)rb->d->sched - (const char *)rb->d;
}

/* Room for n knots in schedule a of rb's block. */
static int knots_room(rs_rollback_t *rb, int a, int n)
{
    if (n <= rb->knots_cap[a])
        return 0;
    rs_schedule_t *s = &rb->d->sched[a];
    double *t = realloc(s->t, (size_t)n * sizeof *t);
    if (t)
        s->t = t;
    double *v = t ? realloc(s->v, (size_t)n * sizeof *v) : NULL;
    if (v)
        s->v = v;
    if (!t || !v)
        return -1;
    rb->knots_cap[a] = n;
    return 0;
}

int rs_data_save(rs_rollback_t *rb, const rs_model_t *m, const rs_data_t *src, rs_status_t *st)
{
    if (!rb->d || rb->nentities != m->nentities || rb->nx != m->nx || rb->nu != m->nu ||
        rb->ns != m->ns) {
        rollback_clear(rb); /* laid out for other sizes */
        rb->d = rs_data_scratch(m);
        rb->knots_cap = calloc((size_t)(m->nu ? m->nu : 1), sizeof *rb->knots_cap);
        if (!rb->d || !rb->knots_cap || plan_spans(rb, m) < 0) {
            rollback_clear(rb);
            return rs_fail(st, RS_EEXHAUSTED, "out of memory saving a world's data");
        }
        rb->nentities = m->nentities, rb->nx = m->nx, rb->nu = m->nu, rb->ns = m->ns;
    }
    rs_data_t *d = rb->d;
    /* room first (it only grows: kept from one save to the next, no allocation after the
     * first saves) */
    int ok = rs_data_reserve_events(d, src->nevents) == 0;
    for (int a = 0; ok && a < m->nu; a++)
        ok = knots_room(rb, a, src->sched[a].n) == 0;
    size_t len = src->spec ? rs_motion_spec_state_len(src->spec) : 0;
    if (ok && len > rb->spec_cap) {
        double *grown = realloc(rb->spec_state, len * sizeof *grown);
        if ((ok = grown != NULL))
            rb->spec_state = grown, rb->spec_cap = len;
    }
    if (!ok)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory saving a world's data");
    /* the value fields by spans (a few memcpy for a whole robot), else one by one */
    int spans = same_layout(rb, src);
    for (int k = 0; spans && k < rb->nspans; k++)
        memcpy((char *)d + rb->spans[k].at, (const char *)src + rb->spans[k].at,
               rb->spans[k].bytes);
    int nfields;
    const rs_field_t *fields = rs_data_fields(&nfields);
    for (int i = 0; i < nfields; i++) {
        const rs_field_t *f = &fields[i];
        if (is_value(f) && spans)
            continue;
        if (f->shape == RS_SHAPE_SCHEDULES) {
            for (int a = 0; a < m->nu; a++) {
                const rs_schedule_t *s = &src->sched[a];
                d->sched[a].n = s->n;
                d->sched[a].cursor = s->cursor;
                if (s->n) {
                    memcpy(d->sched[a].t, s->t, (size_t)s->n * sizeof(double));
                    memcpy(d->sched[a].v, s->v, (size_t)s->n * sizeof(double));
                }
            }
            memcpy(d->nsched, src->nsched, sizeof d->nsched);
        } else if (f->shape == RS_SHAPE_SPEC) {
            rb->spec = src->spec;
            rb->spec_len = len;
            if (len)
                rs_motion_spec_state_get(src->spec, rb->spec_state);
        } else if (f->shape == RS_SHAPE_EVENTS) {
            d->nevents = src->nevents;
            if (src->nevents)
                memcpy(d->events, src->events, (size_t)src->nevents * sizeof src->events[0]);
        } else {
            size_t bytes = rs_field_count(f, m, src) * rs_field_type_size(f->type);
            for (int e = 0; e < places(f, m); e++)
                memcpy(rs_field_values(f, d, e), values_of(f, src, e), bytes);
        }
    }
    return 0;
}

int rs_data_rollback(const rs_rollback_t *rb, const rs_model_t *m, rs_data_t *d, rs_status_t *st)
{
    if (!rb->d || rb->nentities != m->nentities || rb->nx != m->nx || rb->nu != m->nu ||
        rb->ns != m->ns)
        return rs_fail(st, RS_EINVAL, "rollback boundary saved for a model of other sizes "
                                      "(%d entities, %d states): not this world's", rb->nentities,
                       rb->nx);
    return copy_data(m, d, rb->d, rb, st);
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
            rs_schedule_clear(&d->sched[i]);
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

rs_data_t *rs_data_new(const rs_model_t *m, uint64_t seed, rs_status_t *st)
{
    rs_data_t *d = rs_data_scratch(m);
    if (!d) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for world data");
        return NULL;
    }
    if (!(d->integ = rs_integrator_new(m->nx, d->x, rs_step_rhs, rs_step_guards, d, st)) ||
        rs_reset(m, d, seed, st) < 0) {
        rs_data_destroy(&d);
        return NULL;
    }
    return d;
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
                rs_schedule_clear(&d->sched[a]);
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
    rs_rng_seed(d->rng, seed);
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        em->robot->init(em, &d->ent[e], d->x + em->x_off);
    }
    int rc = rs_step_configure(m, d, st);
    if (rc < 0)
        return rc;
    rs_step_read_sensors(m, d, 0.0);
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
    rs_step_read_sensors(m, d, 0.0);
    rs_digest_start(m, d);
    return 0;
}

int rs_data_restored(const rs_model_t *m, rs_data_t *d, const rs_stats_t *stats,
                     rs_status_t *st)
{
    d->m = m;
    int rc = rs_step_configure(m, d, st);
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
    return rs_step_configure(m, d, st);
}
