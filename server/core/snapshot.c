/* Snapshots of a world (rs_snapshot.h). The data section is the field table's (rs_data.h):
 * every field as its name, a count and its values, so nothing here lists the fields.
 *
 * The reader decodes into a staging area (a model built from the snapshot's parameters and a
 * scratch rs_data_t), validates every value against that model (rs_data_check, the robots'
 * aux declarations, the task's episode bounds), and only then copies it into the world
 * (rs_data_copy) and restarts its integrator. */
#include "rs_snapshot.h"

#include "rs_data.h"
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

static const char *task_name(const rs_world_t *w)
{
    return w->task ? w->task->name : "";
}

/* Everything after the header, in the order `parse` reads it. */
static void write_body(rs_writer_t *wr, const rs_world_t *w)
{
    const rs_model_t *m = w->model;
    const rs_data_t *d = w->data;
    rs_put_str(wr, m->preset);
    rs_put_str(wr, task_name(w));

    /* model: world parameters and every entity's parameters, by name */
    int nwp = rs_world_param_count();
    rs_put_u32(wr, (uint32_t)nwp);
    for (int i = 0; i < nwp; i++) {
        const char *name, *unit, *doc;
        double lo, hi;
        rs_world_param_info(i, &name, &unit, &lo, &hi, &doc);
        rs_put_str(wr, name);
        rs_put_f64(wr, rs_world_param_value(m, i));
    }
    rs_put_u32(wr, (uint32_t)m->nentities);
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        const rs_robot_t *r = em->robot;
        rs_put_str(wr, em->name);
        rs_put_str(wr, r->kind);
        rs_put_u32(wr, (uint32_t)r->np);
        for (int i = 0; i < r->np; i++) {
            rs_put_str(wr, r->params[i].name);
            rs_put_u32(wr, (uint32_t)em->plen[i]);
            for (int k = 0; k < em->plen[i]; k++)
                rs_put_f64(wr, em->p[r->params[i].offset + k]);
        }
    }

    /* data: every field of the table */
    rs_data_write(wr, m, d);
}

static size_t encode(const rs_world_t *w, uint8_t *buf, size_t cap)
{
    rs_writer_t wr = {buf, 0, cap};
    rs_put_bytes(&wr, magic, sizeof magic);
    rs_put_u32(&wr, RS_SNAPSHOT_VERSION);
    rs_put_u32(&wr, 0);
    size_t len_at = wr.len;
    rs_put_u64(&wr, 0); /* total length, patched below */
    write_body(&wr, w);
    size_t total = wr.len + CHECKSUM_SIZE;
    if (buf && total <= cap) {
        rs_writer_t lw = {buf + len_at, 0, 8};
        rs_put_u64(&lw, total);
        rs_put_u64(&wr, rs_snapshot_checksum(buf, wr.len));
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

/* Value i of an array of doubles that starts at `at` (checked to be inside the blob). */
static double f64_at(const uint8_t *at, size_t i)
{
    rs_reader_t r = {at + 8 * i, at + 8 * i + 8, NULL, 0};
    return rs_get_f64(&r);
}

/* The position of n doubles, skipped over. */
static const uint8_t *get_f64s(rs_reader_t *r, size_t n)
{
    if (n > (size_t)(r->end - r->p) / 8) {
        r->overrun = 1;
        return NULL;
    }
    return rs_take(r, 8 * n);
}

#define MAX_SNAPSHOT_PARAMS (8 + RS_MAX_ENTITIES * RS_MAX_PARAMS)

/* The staging area: the model a snapshot describes, and its parameters as read. */
typedef struct stage {
    rs_model_t model;
    char names[MAX_SNAPSHOT_PARAMS][2][RS_NAME_MAX]; /* entity, parameter */
    rs_param_t params[MAX_SNAPSHOT_PARAMS];
    const uint8_t *values[MAX_SNAPSHOT_PARAMS];
} stage_t;

#define FIELD(r, name) ((r)->field = (name))
#define BAD(st, ...) rs_fail((st), RS_EINVAL, "snapshot does not fit this world: " __VA_ARGS__)

/* The model a snapshot describes: the preset's, with every parameter the snapshot records
 * applied through the same validation SetParams uses. */
static int parse_model(rs_reader_t *r, const rs_world_t *w, stage_t *sg, rs_status_t *st)
{
    enum { MAXP = MAX_SNAPSHOT_PARAMS };
    char(*names)[2][RS_NAME_MAX] = sg->names;
    rs_param_t *params = sg->params;
    const uint8_t **values = sg->values;
    rs_model_t *m = &sg->model;
    size_t np = 0;

    FIELD(r, "world parameters");
    uint32_t nwp = rs_get_u32(r);
    if (nwp > 8)
        return BAD(st, "%u world parameters", nwp);
    for (uint32_t i = 0; i < nwp && !r->overrun; i++) {
        if (rs_get_str(r, names[np][1], RS_NAME_MAX) < 0)
            return BAD(st, "world parameter %u has no valid name", i);
        names[np][0][0] = '\0';
        values[np] = get_f64s(r, 1);
        params[np].nvalues = 1;
        np++;
    }
    FIELD(r, "entities");
    uint32_t ne = rs_get_u32(r);
    if (!r->overrun && (int)ne != w->model->nentities)
        return BAD(st, "%u entities, the world has %d", ne, w->model->nentities);
    for (uint32_t e = 0; e < ne && !r->overrun; e++) {
        const rs_entity_model_t *em = &w->model->ent[e];
        char name[RS_NAME_MAX], kind[RS_NAME_MAX];
        if (rs_get_str(r, name, sizeof name) < 0 || rs_get_str(r, kind, sizeof kind) < 0)
            break;
        if (strcmp(name, em->name) != 0 || strcmp(kind, em->robot->kind) != 0)
            return BAD(st, "entity %u is '%s' (%s), the world's is '%s' (%s)", e, name, kind,
                       em->name, em->robot->kind);
        uint32_t n = rs_get_u32(r);
        if (n > RS_MAX_PARAMS)
            return BAD(st, "entity '%s' has %u parameters", name, n);
        for (uint32_t i = 0; i < n && !r->overrun; i++) {
            if (np >= MAXP)
                return BAD(st, "too many parameters");
            snprintf(names[np][0], RS_NAME_MAX, "%s", em->name);
            if (rs_get_str(r, names[np][1], RS_NAME_MAX) < 0)
                return BAD(st, "a parameter of entity '%s' has no valid name", name);
            uint32_t k = rs_get_u32(r);
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
    int rc = rs_model_build(m, w->model->preset, params, np, &why);
    free(vals);
    if (rc < 0)
        return rs_fail(st, RS_EINVAL, "snapshot parameters refused: %s", why.message);
    if (m->nx != w->model->nx || m->nu != w->model->nu || m->ns != w->model->ns)
        return BAD(st, "its parameters give another state layout");
    return 0;
}

/* The episode state of a task world must be one the task can be in. */
static int check_task(const rs_world_t *w, const rs_data_t *d, rs_status_t *st)
{
    const rs_task_t *t = w->task;
    if (!t)
        return 0;
    for (int i = RS_TASK_TERMINATED; i <= RS_TASK_TRUNCATED; i++)
        if (d->task[i] != 0.0 && d->task[i] != 1.0)
            return BAD(st, "task flag %d is %g; it must be 0 or 1", i, d->task[i]);
    if (d->episode_steps > t->max_episode_steps || d->episode_steps > d->step_count)
        return BAD(st, "episode_steps %llu (task '%s' ends at %u, step_count %llu)",
                   (unsigned long long)d->episode_steps, t->name, t->max_episode_steps,
                   (unsigned long long)d->step_count);
    return 0;
}

/* Decode the body into the staging model and the scratch data *out; nothing in `w` changes. */
static int parse(rs_reader_t *r, const rs_world_t *w, stage_t *sg, rs_data_t **out,
                 rs_status_t *st)
{
    char preset[MAX_STRING + 1], task[MAX_STRING + 1];
    FIELD(r, "preset name");
    rs_get_str(r, preset, sizeof preset);
    FIELD(r, "task name");
    rs_get_str(r, task, sizeof task);
    if (r->overrun)
        return rs_fail(st, RS_EINVAL, "snapshot is malformed: the %s runs past its end", r->field);
    if (strcmp(preset, w->model->preset) != 0)
        return rs_fail(st, RS_EPRECOND,
                       "the snapshot is of a '%s' world, this world is '%s': restore it into a "
                       "world of the same preset (or ForkWorld the world it came from)",
                       preset, w->model->preset);
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
    rs_data_t *d = rs_data_scratch(m);
    if (!d)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory reading a snapshot");
    *out = d;
    if ((rc = rs_data_read(r, m, d, st)) < 0)
        return rc;
    if (r->p != r->end)
        return rs_fail(st, RS_EINVAL, "snapshot is malformed: %zu unread bytes before the checksum",
                       (size_t)(r->end - r->p));
    rs_status_t why;
    rs_status_clear(&why);
    if (rs_data_check(m, d, &why) < 0 || check_task(w, d, &why) < 0)
        return BAD(st, "%s", why.message);
    return 0;
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
    rs_reader_t hr = {buf + sizeof magic, buf + HEADER_SIZE, "header", 0};
    uint32_t version = rs_get_u32(&hr);
    rs_get_u32(&hr);
    uint64_t total = rs_get_u64(&hr);
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
    rs_reader_t cr = {buf + len - CHECKSUM_SIZE, buf + len, "checksum", 0};
    uint64_t stored = rs_get_u64(&cr), computed = rs_snapshot_checksum(buf, len - CHECKSUM_SIZE);
    if (stored != computed)
        return rs_fail(st, RS_EINVAL,
                       "snapshot checksum mismatch (stored %016llx, computed %016llx): the bytes "
                       "were changed after the snapshot was taken",
                       (unsigned long long)stored, (unsigned long long)computed);

    stage_t *sg = calloc(1, sizeof *sg);
    if (!sg)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory reading a snapshot");
    rs_reader_t r = {buf + HEADER_SIZE, buf + len - CHECKSUM_SIZE, "body", 0};
    rs_data_t *staged = NULL;
    int rc = parse(&r, w, sg, &staged, st);
    if (rc == 0) {
        /* into the world's data under the staged model, which then becomes the world's */
        const rs_model_t *shared = rs_model_share(&sg->model, st);
        rc = shared ? rs_data_copy(shared, w->data, staged, st) : RS_EEXHAUSTED;
        if (rc == 0) {
            rs_model_release(&w->model);
            w->model = shared;
            w->data->m = shared;
        } else {
            rs_model_release(&shared);
        }
    }
    rs_data_destroy(&staged);
    free(sg);
    return rc;
}

rs_world_t *rs_world_fork(const rs_world_t *src, const uint8_t *snap, size_t len,
                          rs_status_t *st)
{
    rs_world_t *w = calloc(1, sizeof *w);
    if (!w) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for a world");
        return NULL;
    }
    w->model = rs_model_retain(src->model);
    w->task = src->task;
    w->task_bind = src->task_bind;
    if (!(w->data = rs_data_new(w->model, src->data->seed, st)) ||
        (snap ? rs_snapshot_read(w, snap, len, st)
              : rs_data_copy(w->model, w->data, src->data, st)) < 0)
        rs_world_destroy(&w);
    return w;
}
