/* Snapshots of a world (rs_snapshot.h): a writer and a reader over the same field order.
 *
 * The reader runs in two passes over a blob whose header and checksum are already checked:
 * `parse` decodes and validates every field into a staging area (a new model, the counts and
 * the positions of the arrays), touching nothing; only then `commit` copies the values into
 * the world and restarts its integrator. */
#include "rs_snapshot.h"

#include "rs_robot.h"
#include "rs_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char magic[8] = {'R', 'S', 'I', 'M', 'S', 'N', 'A', 'P'};
#define HEADER_SIZE 24 /* magic, version, reserved, total length */
#define CHECKSUM_SIZE 8
#define MAX_STRING 256

/* ---- checksum: 64-bit FNV-1a ----------------------------------------------------------- */

uint64_t rs_snapshot_checksum(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* ---- writer: counts the bytes when buf is NULL ----------------------------------------- */

typedef struct writer {
    uint8_t *buf;
    size_t len, cap;
} writer_t;

static void put_bytes(writer_t *w, const void *p, size_t n)
{
    if (w->buf && w->len + n <= w->cap)
        memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static void put_u64(writer_t *w, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put_bytes(w, b, 8);
}

static void put_u32(writer_t *w, uint32_t v)
{
    uint8_t b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put_bytes(w, b, 4);
}

static void put_i32(writer_t *w, int v) { put_u32(w, (uint32_t)v); }

static void put_f64(writer_t *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    put_u64(w, bits);
}

static void put_f64s(writer_t *w, const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put_f64(w, v[i]);
}

static void put_str(writer_t *w, const char *s)
{
    size_t n = strlen(s);
    put_u32(w, (uint32_t)n);
    put_bytes(w, s, n);
}

static const char *task_name(const rs_world_t *w)
{
    return w->task ? w->task->name : "";
}

/* Everything after the header, in the order `parse` reads it. */
static void write_body(writer_t *wr, const rs_world_t *w)
{
    const rs_model_t *m = &w->model;
    const rs_data_t *d = w->data;
    put_str(wr, m->preset);
    put_str(wr, task_name(w));

    /* model: world parameters and every entity's parameters, by name */
    int nwp = rs_world_param_count();
    put_u32(wr, (uint32_t)nwp);
    for (int i = 0; i < nwp; i++) {
        const char *name, *unit, *doc;
        double lo, hi;
        rs_world_param_info(i, &name, &unit, &lo, &hi, &doc);
        put_str(wr, name);
        put_f64(wr, rs_world_param_value(m, i));
    }
    put_u32(wr, (uint32_t)m->nentities);
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        const rs_robot_t *r = em->robot;
        put_str(wr, em->name);
        put_str(wr, r->kind);
        put_u32(wr, (uint32_t)r->np);
        for (int i = 0; i < r->np; i++) {
            put_str(wr, r->params[i].name);
            put_u32(wr, (uint32_t)em->plen[i]);
            put_f64s(wr, &em->p[r->params[i].offset], (size_t)em->plen[i]);
        }
    }

    /* data: time, grid, integrator step, rng */
    put_f64(wr, d->t);
    put_u64(wr, d->step_count);
    put_f64(wr, d->grid_t0);
    put_u64(wr, d->grid_k);
    put_f64(wr, d->h_next);
    put_u64(wr, d->seed);
    for (int i = 0; i < 4; i++)
        put_u64(wr, d->rng[i]);
    put_i32(wr, d->dirty);
    put_i32(wr, d->step_events);

    /* vectors */
    put_u32(wr, (uint32_t)m->nx);
    put_f64s(wr, d->x, (size_t)m->nx);
    put_u32(wr, (uint32_t)m->nu);
    put_f64s(wr, d->u, (size_t)m->nu);
    put_f64s(wr, d->u_eff, (size_t)m->nu);
    put_u32(wr, (uint32_t)m->ns);
    put_f64s(wr, d->sensors, (size_t)m->ns);

    /* per entity: hybrid mode and the robot's private run variables */
    put_u32(wr, RS_AUX_MAX);
    for (int e = 0; e < m->nentities; e++) {
        put_i32(wr, d->ent[e].mode);
        put_f64s(wr, d->ent[e].aux, RS_AUX_MAX);
    }

    /* schedules, one per actuator */
    for (int a = 0; a < m->nu; a++) {
        const rs_schedule_t *s = &d->sched[a];
        put_u32(wr, (uint32_t)s->n);
        put_i32(wr, s->cursor);
        put_f64s(wr, s->t, (size_t)s->n);
        put_f64s(wr, s->v, (size_t)s->n);
    }

    /* the event log of the last Step */
    put_u32(wr, (uint32_t)d->nevents);
    put_u32(wr, d->events_dropped);
    put_u64(wr, d->events_total);
    for (int i = 0; i < d->nevents; i++) {
        const rs_event_t *ev = &d->events[i];
        put_i32(wr, ev->entity);
        put_i32(wr, ev->kind);
        put_f64(wr, ev->t);
        put_f64(wr, ev->value);
        put_u32(wr, (uint32_t)ev->nvalues);
        put_f64s(wr, ev->before, (size_t)ev->nvalues);
        put_f64s(wr, ev->after, (size_t)ev->nvalues);
    }

    /* the task's episode state */
    put_u32(wr, RS_TASK_STATE);
    put_f64s(wr, d->task, RS_TASK_STATE);
    put_u64(wr, d->episode_steps);

    /* integrator statistics, so replies after a restore match the original's */
    rs_stats_t stats;
    rs_get_stats(d, &stats);
    put_u64(wr, stats.internal_steps);
    put_u64(wr, stats.rhs_evals);
    put_u64(wr, stats.root_evals);
}

static size_t encode(const rs_world_t *w, uint8_t *buf, size_t cap)
{
    writer_t wr = {buf, 0, cap};
    put_bytes(&wr, magic, sizeof magic);
    put_u32(&wr, RS_SNAPSHOT_VERSION);
    put_u32(&wr, 0);
    size_t len_at = wr.len;
    put_u64(&wr, 0); /* total length, patched below */
    write_body(&wr, w);
    size_t total = wr.len + CHECKSUM_SIZE;
    if (buf && total <= cap) {
        writer_t lw = {buf + len_at, 0, 8};
        put_u64(&lw, total);
        put_u64(&wr, rs_snapshot_checksum(buf, wr.len));
    } else {
        wr.len += CHECKSUM_SIZE;
    }
    return wr.len;
}

int rs_snapshot_size(const rs_world_t *w, size_t *size)
{
    *size = encode(w, NULL, 0);
    return 0;
}

int rs_snapshot_write(const rs_world_t *w, uint8_t *buf, size_t cap, size_t *len,
                      rs_status_t *st)
{
    size_t need = encode(w, NULL, 0);
    if (!buf || cap < need)
        return rs_fail(st, RS_EEXHAUSTED, "a snapshot of this world needs %zu bytes, got %zu",
                       need, buf ? cap : 0);
    *len = encode(w, buf, cap);
    return 0;
}

/* ---- reader -------------------------------------------------------------------------- */

typedef struct reader {
    const uint8_t *p, *end;
    const char *field; /* what was being read, for the message when it runs past the end */
    int overrun;
} reader_t;

static const uint8_t *take(reader_t *r, size_t n)
{
    if (r->overrun || (size_t)(r->end - r->p) < n) {
        r->overrun = 1;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n;
    return at;
}

static uint64_t get_u64(reader_t *r)
{
    const uint8_t *b = take(r, 8);
    uint64_t v = 0;
    for (int i = 0; b && i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

static uint32_t get_u32(reader_t *r)
{
    const uint8_t *b = take(r, 4);
    uint32_t v = 0;
    for (int i = 0; b && i < 4; i++)
        v |= (uint32_t)b[i] << (8 * i);
    return v;
}

static int get_i32(reader_t *r) { return (int)(int32_t)get_u32(r); }

static double get_f64(reader_t *r)
{
    uint64_t bits = get_u64(r);
    double v;
    memcpy(&v, &bits, 8);
    return v;
}

/* Value i of an array of doubles that starts at `at` (checked to be inside the blob). */
static double f64_at(const uint8_t *at, size_t i)
{
    reader_t r = {at + 8 * i, at + 8 * i + 8, NULL, 0};
    return get_f64(&r);
}

/* The position of n doubles, skipped over. */
static const uint8_t *get_f64s(reader_t *r, size_t n)
{
    if (n > (size_t)(r->end - r->p) / 8) {
        r->overrun = 1;
        return NULL;
    }
    return take(r, 8 * n);
}

/* A string into buf (cap bytes with the NUL). Returns 0, or -1 when it is too long. */
static int get_str(reader_t *r, char *buf, size_t cap)
{
    uint32_t n = get_u32(r);
    if (n >= cap || n > MAX_STRING) {
        r->overrun |= n > (size_t)(r->end - r->p);
        buf[0] = '\0';
        return -1;
    }
    const uint8_t *b = take(r, n);
    if (!b) {
        buf[0] = '\0';
        return -1;
    }
    memcpy(buf, b, n);
    buf[n] = '\0';
    return 0;
}

#define MAX_SNAPSHOT_PARAMS (8 + RS_MAX_ENTITIES * RS_MAX_PARAMS)

/* The staging area: what a snapshot would put into a world. */
typedef struct stage {
    rs_model_t model;
    char names[MAX_SNAPSHOT_PARAMS][2][RS_NAME_MAX]; /* entity, parameter */
    rs_param_t params[MAX_SNAPSHOT_PARAMS];
    const uint8_t *values[MAX_SNAPSHOT_PARAMS];
    double t, grid_t0, h_next;
    uint64_t step_count, grid_k, seed, rng[4];
    int dirty, step_events;
    const uint8_t *x, *u, *u_eff, *sensors;
    int mode[RS_MAX_ENTITIES];
    const uint8_t *aux[RS_MAX_ENTITIES];
    struct {
        int n, cursor;
        const uint8_t *t, *v;
    } sched[RS_MAX_ENTITIES * RS_MAX_PARAMS];
    int nevents;
    unsigned events_dropped;
    uint64_t events_total;
    struct {
        int entity, kind, nvalues;
        double t, value;
        const uint8_t *before, *after;
    } events[RS_EVENT_LOG];
    const uint8_t *task;
    uint64_t episode_steps;
    rs_stats_t stats;
} stage_t;

#define FIELD(r, name) ((r)->field = (name))
#define BAD(st, ...) rs_fail((st), RS_EINVAL, "snapshot does not fit this world: " __VA_ARGS__)

/* The model a snapshot describes: the preset's, with every parameter the snapshot records
 * applied through the same validation SetParams uses. */
static int parse_model(reader_t *r, const rs_world_t *w, stage_t *sg, rs_status_t *st)
{
    enum { MAXP = MAX_SNAPSHOT_PARAMS };
    char(*names)[2][RS_NAME_MAX] = sg->names;
    rs_param_t *params = sg->params;
    const uint8_t **values = sg->values;
    rs_model_t *m = &sg->model;
    size_t np = 0;

    FIELD(r, "world parameters");
    uint32_t nwp = get_u32(r);
    if (nwp > 8)
        return BAD(st, "%u world parameters", nwp);
    for (uint32_t i = 0; i < nwp && !r->overrun; i++) {
        if (get_str(r, names[np][1], RS_NAME_MAX) < 0)
            return BAD(st, "world parameter %u has no valid name", i);
        names[np][0][0] = '\0';
        values[np] = get_f64s(r, 1);
        params[np].nvalues = 1;
        np++;
    }
    FIELD(r, "entities");
    uint32_t ne = get_u32(r);
    if (!r->overrun && (int)ne != w->model.nentities)
        return BAD(st, "%u entities, the world has %d", ne, w->model.nentities);
    for (uint32_t e = 0; e < ne && !r->overrun; e++) {
        const rs_entity_model_t *em = &w->model.ent[e];
        char name[RS_NAME_MAX], kind[RS_NAME_MAX];
        if (get_str(r, name, sizeof name) < 0 || get_str(r, kind, sizeof kind) < 0)
            break;
        if (strcmp(name, em->name) != 0 || strcmp(kind, em->robot->kind) != 0)
            return BAD(st, "entity %u is '%s' (%s), the world's is '%s' (%s)", e, name, kind,
                       em->name, em->robot->kind);
        uint32_t n = get_u32(r);
        if (n > RS_MAX_PARAMS)
            return BAD(st, "entity '%s' has %u parameters", name, n);
        for (uint32_t i = 0; i < n && !r->overrun; i++) {
            if (np >= MAXP)
                return BAD(st, "too many parameters");
            snprintf(names[np][0], RS_NAME_MAX, "%s", em->name);
            if (get_str(r, names[np][1], RS_NAME_MAX) < 0)
                return BAD(st, "a parameter of entity '%s' has no valid name", name);
            uint32_t k = get_u32(r);
            if (k > RS_MAX_PARAM_VALUES)
                return BAD(st, "parameter '%s.%s' has %u values", name, names[np][1], k);
            values[np] = get_f64s(r, k);
            params[np].nvalues = k;
            np++;
        }
    }
    if (r->overrun)
        return 0; /* reported by the caller */

    /* decode the values into one array and apply them */
    size_t total = 0;
    for (size_t i = 0; i < np; i++)
        total += params[i].nvalues;
    double *vals = malloc((total ? total : 1) * sizeof(double));
    if (!vals)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory reading a snapshot");
    size_t at = 0;
    for (size_t i = 0; i < np; i++) {
        params[i].entity = names[i][0];
        params[i].name = names[i][1];
        params[i].values = vals + at;
        for (size_t k = 0; k < params[i].nvalues; k++)
            vals[at++] = f64_at(values[i], k);
    }
    rs_status_t why;
    rs_status_clear(&why);
    int rc = rs_model_build(m, w->model.preset, params, np, &why);
    free(vals);
    if (rc < 0)
        return rs_fail(st, RS_EINVAL, "snapshot parameters refused: %s", why.message);
    if (m->nx != w->model.nx || m->nu != w->model.nu || m->ns != w->model.ns)
        return BAD(st, "its parameters give another state layout");
    return 0;
}

static int finite_all(const uint8_t *at, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(f64_at(at, i)))
            return 0;
    return 1;
}

/* Decode and validate the body into `sg`; nothing in `w` changes. */
static int parse(reader_t *r, const rs_world_t *w, stage_t *sg, rs_status_t *st)
{
    char preset[MAX_STRING + 1], task[MAX_STRING + 1];
    FIELD(r, "preset name");
    get_str(r, preset, sizeof preset);
    FIELD(r, "task name");
    get_str(r, task, sizeof task);
    if (r->overrun)
        return rs_fail(st, RS_EINVAL, "snapshot is malformed: the %s runs past its end", r->field);
    if (strcmp(preset, w->model.preset) != 0)
        return rs_fail(st, RS_EPRECOND,
                       "the snapshot is of a '%s' world, this world is '%s': restore it into a "
                       "world of the same preset (or ForkWorld the world it came from)",
                       preset, w->model.preset);
    if (strcmp(task, task_name(w)) != 0)
        return rs_fail(st, RS_EPRECOND,
                       "the snapshot is of a world running task '%s', this world runs %s%s%s: "
                       "restore it into a world of the same task",
                       task[0] ? task : "(none)", w->task ? "'" : "",
                       w->task ? task_name(w) : "no task", w->task ? "'" : "");

    int rc = parse_model(r, w, sg, st);
    if (rc < 0)
        return rc;
    if (r->overrun)
        return rs_fail(st, RS_EINVAL, "snapshot is malformed: the %s runs past its end", r->field);
    const rs_model_t *m = &sg->model;

    FIELD(r, "time and integrator state");
    sg->t = get_f64(r);
    sg->step_count = get_u64(r);
    sg->grid_t0 = get_f64(r);
    sg->grid_k = get_u64(r);
    sg->h_next = get_f64(r);
    sg->seed = get_u64(r);
    for (int i = 0; i < 4; i++)
        sg->rng[i] = get_u64(r);
    sg->dirty = get_i32(r);
    sg->step_events = get_i32(r);
    if (!r->overrun) {
        if (!isfinite(sg->t) || !isfinite(sg->grid_t0) || sg->grid_t0 > sg->t)
            return BAD(st, "time %g s (grid from %g s)", sg->t, sg->grid_t0);
        /* the world stands in its current control step, from grid point grid_k (where
         * rs_step_continue leaves it) to the next (a step that failed stops in between): a
         * forged grid_k would make the next step end ages away (fuzz_snapshot found one of
         * 1.6e16 steps, a control step that never finished) */
        double lo = sg->grid_t0 + (double)sg->grid_k * m->control_dt, hi = lo + m->control_dt;
        double eps = 1e-9 * fmax(1.0, fabs(sg->t));
        if (!(sg->t >= lo - eps && sg->t <= hi + eps))
            return BAD(st, "time %g s is not within control step %llu of the grid from %g s "
                       "(%g to %g s)", sg->t, (unsigned long long)sg->grid_k, sg->grid_t0, lo, hi);
        if (!isfinite(sg->h_next) || sg->h_next < 0)
            return BAD(st, "integrator step %g s", sg->h_next);
        if (!(sg->rng[0] | sg->rng[1] | sg->rng[2] | sg->rng[3]))
            return BAD(st, "the random generator state is all zero");
    }

    FIELD(r, "state vector");
    uint32_t nx = get_u32(r);
    if (!r->overrun && (int)nx != m->nx)
        return BAD(st, "%u state values, the world has %d", nx, m->nx);
    sg->x = get_f64s(r, nx);
    FIELD(r, "commands");
    uint32_t nu = get_u32(r);
    if (!r->overrun && (int)nu != m->nu)
        return BAD(st, "%u commands, the world has %d actuators", nu, m->nu);
    sg->u = get_f64s(r, nu);
    sg->u_eff = get_f64s(r, nu);
    FIELD(r, "sensors");
    uint32_t ns = get_u32(r);
    if (!r->overrun && (int)ns != m->ns)
        return BAD(st, "%u sensor values, the world has %d", ns, m->ns);
    sg->sensors = get_f64s(r, ns);
    if (r->overrun)
        return rs_fail(st, RS_EINVAL, "snapshot is malformed: the %s runs past its end", r->field);
    if (!finite_all(sg->x, nx) || !finite_all(sg->u_eff, nu))
        return BAD(st, "a state value or command is not finite");
    for (int e = 0; e < m->nentities; e++) {
        double u[RS_MAX_PARAMS];
        const rs_entity_model_t *em = &m->ent[e];
        for (int a = 0; a < em->nu; a++)
            u[a] = f64_at(sg->u, (size_t)(em->u_off + a));
        rc = rs_check_commands(m, e, u, (size_t)em->nu, st);
        if (rc < 0)
            return rc;
    }

    FIELD(r, "modes");
    uint32_t naux = get_u32(r);
    if (!r->overrun && naux != RS_AUX_MAX)
        return BAD(st, "%u private variables per entity, this server keeps %d", naux, RS_AUX_MAX);
    for (int e = 0; e < m->nentities && !r->overrun; e++) {
        sg->mode[e] = get_i32(r);
        sg->aux[e] = get_f64s(r, RS_AUX_MAX);
        const rs_robot_t *rb = m->ent[e].robot;
        if (!r->overrun && (sg->mode[e] < 0 || sg->mode[e] >= rb->nmodes))
            return BAD(st, "entity '%s' in mode %d; it has %d", m->ent[e].name, sg->mode[e],
                       rb->nmodes);
    }

    FIELD(r, "schedules");
    for (int a = 0; a < m->nu && !r->overrun; a++) {
        uint32_t n = get_u32(r);
        sg->sched[a].cursor = get_i32(r);
        if (n > RS_MAX_SCHEDULE)
            return BAD(st, "a schedule of %u knots (at most %d)", n, RS_MAX_SCHEDULE);
        sg->sched[a].n = (int)n;
        sg->sched[a].t = get_f64s(r, n);
        sg->sched[a].v = get_f64s(r, n);
        if (r->overrun)
            break;
        if (sg->sched[a].cursor < 0 || (n && sg->sched[a].cursor >= (int)n))
            return BAD(st, "schedule %d's cursor %d", a, sg->sched[a].cursor);
        /* the checks SetSchedule makes, on the entity this actuator belongs to */
        int e = 0;
        while (e + 1 < m->nentities && a >= m->ent[e + 1].u_off)
            e++;
        const rs_var_desc_t *ad = &m->ent[e].robot->actuators[a - m->ent[e].u_off];
        for (uint32_t k = 0; k < n; k++) {
            double tk = f64_at(sg->sched[a].t, k), vk = f64_at(sg->sched[a].v, k);
            if (!isfinite(tk) || !isfinite(vk) || (k && !(tk > f64_at(sg->sched[a].t, k - 1))) ||
                vk < ad->lower || vk > ad->upper)
                return BAD(st, "schedule knot %u of actuator '%s.%s' (t = %g, value %g)", k,
                           m->ent[e].name, ad->name, tk, vk);
        }
    }

    FIELD(r, "event log");
    uint32_t nev = get_u32(r);
    sg->events_dropped = get_u32(r);
    sg->events_total = get_u64(r);
    if (!r->overrun && nev > RS_EVENT_LOG)
        return BAD(st, "%u events in the log (at most %d)", nev, RS_EVENT_LOG);
    sg->nevents = (int)nev;
    for (uint32_t i = 0; i < nev && !r->overrun; i++) {
        sg->events[i].entity = get_i32(r);
        sg->events[i].kind = get_i32(r);
        sg->events[i].t = get_f64(r);
        sg->events[i].value = get_f64(r);
        uint32_t nv = get_u32(r);
        if (r->overrun)
            break;
        int ent = sg->events[i].entity;
        if (ent < 0 || ent >= m->nentities || sg->events[i].kind < 0 ||
            sg->events[i].kind >= m->ent[ent].robot->nevent_kinds || nv > RS_EVENT_VALUES)
            return BAD(st, "event %u (entity %d, kind %d, %u values)", i, ent,
                       sg->events[i].kind, nv);
        sg->events[i].nvalues = (int)nv;
        sg->events[i].before = get_f64s(r, nv);
        sg->events[i].after = get_f64s(r, nv);
    }

    FIELD(r, "task state");
    uint32_t ntask = get_u32(r);
    if (!r->overrun && ntask != RS_TASK_STATE)
        return BAD(st, "%u task state values, this server keeps %d", ntask, RS_TASK_STATE);
    sg->task = get_f64s(r, RS_TASK_STATE);
    sg->episode_steps = get_u64(r);
    FIELD(r, "integrator statistics");
    sg->stats.internal_steps = get_u64(r);
    sg->stats.rhs_evals = get_u64(r);
    sg->stats.root_evals = get_u64(r);
    sg->stats.events = sg->events_total;
    if (r->overrun)
        return rs_fail(st, RS_EINVAL, "snapshot is malformed: the %s runs past its end", r->field);
    if (r->p != r->end)
        return rs_fail(st, RS_EINVAL, "snapshot is malformed: %zu unread bytes before the checksum",
                       (size_t)(r->end - r->p));
    return 0;
}

static void decode_f64s(double *out, const uint8_t *at, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = f64_at(at, i);
}

/* Copy the staged values into the world. The schedules' knots were allocated by the caller. */
static int commit(rs_world_t *w, const stage_t *sg, rs_schedule_t *fresh, rs_status_t *st)
{
    rs_data_t *d = w->data;
    int nu = w->model.nu;
    for (int a = 0; a < nu; a++) {
        free(d->sched[a].t);
        free(d->sched[a].v);
    }
    w->model = sg->model;
    const rs_model_t *m = &w->model;
    d->m = m;
    d->t = sg->t;
    d->step_count = sg->step_count;
    d->grid_t0 = sg->grid_t0;
    d->grid_k = sg->grid_k;
    d->h_next = sg->h_next;
    d->seed = sg->seed;
    memcpy(d->rng, sg->rng, sizeof d->rng);
    d->dirty = sg->dirty;
    d->step_events = sg->step_events;
    decode_f64s(d->x, sg->x, (size_t)m->nx);
    decode_f64s(d->u, sg->u, (size_t)m->nu);
    decode_f64s(d->u_eff, sg->u_eff, (size_t)m->nu);
    decode_f64s(d->sensors, sg->sensors, (size_t)m->ns);
    for (int e = 0; e < m->nentities; e++) {
        d->ent[e].mode = sg->mode[e];
        decode_f64s(d->ent[e].aux, sg->aux[e], RS_AUX_MAX);
        d->nsched[e] = 0;
    }
    for (int a = 0; a < m->nu; a++) {
        d->sched[a] = fresh[a];
        if (fresh[a].n) {
            int e = 0;
            while (e + 1 < m->nentities && a >= m->ent[e + 1].u_off)
                e++;
            d->nsched[e]++;
        }
    }
    d->nevents = sg->nevents;
    d->events_dropped = sg->events_dropped;
    d->events_total = sg->events_total;
    for (int i = 0; i < sg->nevents; i++) {
        rs_event_t *ev = &d->events[i];
        memset(ev, 0, sizeof *ev);
        ev->entity = sg->events[i].entity;
        ev->kind = sg->events[i].kind;
        ev->t = sg->events[i].t;
        ev->value = sg->events[i].value;
        ev->nvalues = sg->events[i].nvalues;
        decode_f64s(ev->before, sg->events[i].before, (size_t)ev->nvalues);
        decode_f64s(ev->after, sg->events[i].after, (size_t)ev->nvalues);
    }
    decode_f64s(d->task, sg->task, RS_TASK_STATE);
    d->episode_steps = sg->episode_steps;
    return rs_data_restored(m, d, &sg->stats, st);
}

int rs_snapshot_read(rs_world_t *w, const uint8_t *buf, size_t len, rs_status_t *st)
{
    if (!buf || len < HEADER_SIZE + CHECKSUM_SIZE)
        return rs_fail(st, RS_EINVAL,
                       "a snapshot of %zu bytes is too short to be one (truncated?); pass "
                       "State.snapshot from GetState{snapshot: true} unchanged",
                       buf ? len : 0);
    if (memcmp(buf, magic, sizeof magic) != 0)
        return rs_fail(st, RS_EINVAL,
                       "these bytes are not a robosim snapshot (no RSIMSNAP magic); pass "
                       "State.snapshot from GetState{snapshot: true} unchanged");
    reader_t hr = {buf + sizeof magic, buf + HEADER_SIZE, "header", 0};
    uint32_t version = get_u32(&hr);
    get_u32(&hr);
    uint64_t total = get_u64(&hr);
    if (version != RS_SNAPSHOT_VERSION)
        return rs_fail(st, RS_EPRECOND,
                       "snapshot format version %u; this server (robosim %s) reads version %d: "
                       "take the snapshot with a server of the same version",
                       version, RS_VERSION, RS_SNAPSHOT_VERSION);
    if (total > len)
        return rs_fail(st, RS_EINVAL, "snapshot truncated: %zu of its %llu bytes", len,
                       (unsigned long long)total);
    if (total < len)
        return rs_fail(st, RS_EINVAL, "snapshot has %llu bytes after its end (it is %llu bytes)",
                       (unsigned long long)(len - total), (unsigned long long)total);
    reader_t cr = {buf + len - CHECKSUM_SIZE, buf + len, "checksum", 0};
    uint64_t stored = get_u64(&cr), computed = rs_snapshot_checksum(buf, len - CHECKSUM_SIZE);
    if (stored != computed)
        return rs_fail(st, RS_EINVAL,
                       "snapshot checksum mismatch (stored %016llx, computed %016llx): the bytes "
                       "were changed after the snapshot was taken",
                       (unsigned long long)stored, (unsigned long long)computed);

    stage_t *sg = calloc(1, sizeof *sg);
    if (!sg)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory reading a snapshot");
    reader_t r = {buf + HEADER_SIZE, buf + len - CHECKSUM_SIZE, "body", 0};
    int rc = parse(&r, w, sg, st);
    rs_schedule_t *fresh = NULL;
    if (rc == 0) {
        fresh = calloc((size_t)(sg->model.nu ? sg->model.nu : 1), sizeof *fresh);
        if (!fresh)
            rc = rs_fail(st, RS_EEXHAUSTED, "out of memory reading a snapshot");
    }
    for (int a = 0; rc == 0 && a < sg->model.nu; a++) {
        int n = sg->sched[a].n;
        if (!n)
            continue;
        fresh[a].t = malloc((size_t)n * sizeof(double));
        fresh[a].v = malloc((size_t)n * sizeof(double));
        if (!fresh[a].t || !fresh[a].v) {
            rc = rs_fail(st, RS_EEXHAUSTED, "out of memory for a schedule of %d knots", n);
            break;
        }
        fresh[a].n = n;
        fresh[a].cursor = sg->sched[a].cursor;
        decode_f64s(fresh[a].t, sg->sched[a].t, (size_t)n);
        decode_f64s(fresh[a].v, sg->sched[a].v, (size_t)n);
    }
    if (rc == 0) {
        rc = commit(w, sg, fresh, st);
    } else if (fresh) {
        for (int a = 0; a < sg->model.nu; a++) {
            free(fresh[a].t);
            free(fresh[a].v);
        }
    }
    free(fresh);
    free(sg);
    return rc;
}

rs_world_t *rs_world_fork(const rs_world_t *src, const uint8_t *snap, size_t len,
                          rs_status_t *st)
{
    uint8_t *own = NULL;
    if (!snap) {
        rs_snapshot_size(src, &len);
        if (!(own = malloc(len)) || rs_snapshot_write(src, own, len, &len, st) < 0) {
            if (!own)
                rs_fail(st, RS_EEXHAUSTED, "out of memory for a snapshot of %zu bytes", len);
            free(own);
            return NULL;
        }
        snap = own;
    }
    rs_world_t *w = calloc(1, sizeof *w);
    if (!w) {
        free(own);
        rs_fail(st, RS_EEXHAUSTED, "out of memory for a world");
        return NULL;
    }
    w->model = src->model;
    w->task = src->task;
    if (!(w->data = rs_data_new(&w->model, src->data->seed, st)) ||
        rs_snapshot_read(w, snap, len, st) < 0)
        rs_world_destroy(&w);
    free(own);
    return w;
}
