/* Snapshots in the core: for every preset, a world driven with varied commands, schedules,
 * parameter changes and events is snapshotted; stepping on from a restore (into the same
 * world, into a fresh world of the preset, and as a fork) gives bit-identical states, sensors,
 * modes, events and statistics to stepping on without it. Every kind of bad snapshot is
 * refused with its own code and leaves the world unchanged. */
#include "rs_snapshot.h"
#include "rs_robot.h"
#include "rs_task.h"
#include "rs_test.h"
#include "snapshot_bytes.h"

#include <stdlib.h>
#include <string.h>

/* ---- a trajectory fingerprint: every observable value, appended as raw bytes ------------- */

typedef struct trace {
    unsigned char *b;
    size_t n, cap;
} trace_t;

static void put(trace_t *tr, const void *p, size_t n)
{
    if (tr->n + n > tr->cap) {
        tr->cap = 2 * (tr->n + n) + 4096;
        tr->b = realloc(tr->b, tr->cap);
    }
    memcpy(tr->b + tr->n, p, n);
    tr->n += n;
}

#define PUT(tr, v) put((tr), &(v), sizeof(v))

static void record(trace_t *tr, const rs_world_t *w)
{
    const rs_model_t *m = w->model;
    const rs_data_t *d = w->data;
    PUT(tr, d->t);
    PUT(tr, d->step_count);
    put(tr, d->x, (size_t)m->nx * sizeof(double));
    put(tr, d->sensors, (size_t)m->ns * sizeof(double));
    put(tr, d->rng, sizeof d->rng);
    PUT(tr, d->h_next);
    for (int e = 0; e < m->nentities; e++) {
        double u[RS_MAX_ACTUATORS];
        rs_current_commands(m, d, e, u);
        put(tr, u, (size_t)m->ent[e].nu * sizeof(double));
        PUT(tr, d->ent[e].mode);
        put(tr, d->ent[e].aux, sizeof d->ent[e].aux);
    }
    PUT(tr, d->nevents);
    PUT(tr, d->events_dropped);
    PUT(tr, d->events_total);
    for (int i = 0; i < d->nevents; i++) {
        const rs_event_t *ev = &d->events[i];
        PUT(tr, ev->entity);
        PUT(tr, ev->kind);
        PUT(tr, ev->t);
        PUT(tr, ev->value);
        put(tr, ev->before, (size_t)ev->nvalues * sizeof(double));
        put(tr, ev->after, (size_t)ev->nvalues * sizeof(double));
    }
    rs_stats_t s;
    rs_get_stats(d, &s);
    PUT(tr, s);
    put(tr, d->task, sizeof d->task);
    PUT(tr, d->episode_steps);
}

/* ---- driving a world: commands chosen per robot kind, varied with k ---------------------- */

static void commands_for(const rs_entity_model_t *em, const rs_data_t *d, int k, double *u)
{
    const char *kind = em->robot->kind;
    const double *x = d->x + em->x_off;
    if (!strcmp(kind, "diff_drive")) {
        u[0] = 3.0 + (k % 3);
        u[1] = 3.0 - (k % 2);
    } else if (!strcmp(kind, "mobile_manipulator")) {
        /* the base drives at the table, the arms reach for it: touches, slips, sticks */
        u[0] = 1.0 + (k % 3);
        u[1] = 1.0 - 0.5 * (k % 2);
        for (int j = 2; j < 6; j++)
            u[j] = 2.0 * sin(0.9 * k + j);
    } else if (!strcmp(kind, "finger")) {
        u[0] = k % 4 < 3 ? 40.0 : -10.0; /* pushes into the object, with pauses */
    } else {
        /* the arms run PID setpoints near where they are */
        u[0] = x[0] + 0.3 * sin(0.7 * k);
        u[1] = x[1] - 0.25 * cos(0.5 * k);
    }
}

static int drive(rs_world_t *w, int k, rs_status_t *st)
{
    const rs_model_t *m = w->model;
    for (int e = 0; e < m->nentities; e++) {
        double u[RS_MAX_ACTUATORS];
        commands_for(&m->ent[e], w->data, k, u);
        int rc = rs_set_commands(m, w->data, e, u, (size_t)m->ent[e].nu, st);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* A schedule on actuator 0 of entity e from time t0: a ramp through three knots. */
static int schedule(rs_world_t *w, int e, double t0, rs_status_t *st)
{
    const rs_entity_model_t *em = &w->model->ent[e];
    double u[RS_MAX_ACTUATORS];
    commands_for(em, w->data, 1, u);
    double t[3] = {t0 + 0.013, t0 + 0.05, t0 + 0.111};
    double v[3] = {u[0], 0.5 * u[0], u[0]};
    return rs_set_schedule(w->model, w->data, e, 0, t, v, 3, st);
}

/* The program run after the snapshot: command changes, a schedule, steps of several sizes. */
static int program(rs_world_t *w, trace_t *tr, rs_status_t *st)
{
    static const int chunk[] = {1, 3, 7, 2, 11, 1, 5};
    for (int k = 0; k < 14; k++) {
        int rc = 0;
        if (k % 3 == 0)
            rc = drive(w, 10 + k, st);
        if (rc == 0 && k == 5)
            rc = schedule(w, 0, w->data->t, st);
        if (rc == 0)
            rc = rs_step(w->model, w->data, (uint64_t)chunk[k % 7], st);
        if (rc < 0)
            return rc;
        record(tr, w);
    }
    return 0;
}

static void preset_roundtrip(const char *preset)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new(preset, NULL, 0, 7, &st);
    CHECK(w != NULL, "%s: %s", preset, st.message);
    if (!w)
        return;
    const rs_model_t *m = w->model;

    /* a history: varied commands, a schedule still running at the snapshot, a parameter
     * change (the diff-drive gets an obstacle in its path; others a longer control step) */
    int rc = 0;
    for (int k = 0; k < 9 && rc == 0; k++) {
        rc = drive(w, k, &st);
        if (rc == 0 && k == 4) {
            int ed = rs_model_entity(m, "robot");
            if (ed >= 0) {
                double obst[] = {0.60, 0.10, 0.15, 2.00, -0.40, 0.05}; /* m */
                rs_param_t p = {"robot", "obstacles", obst, 6};
                rc = rs_world_set_params(w, &p, 1, &st);
            } else {
                double dt[] = {0.02};
                rs_param_t p = {"", "control_dt", dt, 1};
                rc = rs_world_set_params(w, &p, 1, &st);
            }
        }
        if (rc == 0)
            rc = rs_step(w->model, w->data, (uint64_t)(1 + k * 3), &st);
    }
    if (rc == 0)
        rc = schedule(w, w->model->nentities - 1, w->data->t - 0.03, &st); /* SetParams gave w a new model */
    if (rc == 0)
        rc = rs_step(w->model, w->data, 2, &st);
    CHECK(rc == 0, "%s: history: %s", preset, st.message);

    size_t slen;
    uint8_t *snap = snapshot(w, &slen);

    /* the reference: step on without any restore */
    trace_t ref = {0}, again = {0}, fresh = {0}, forked = {0};
    rc = program(w, &ref, &st);
    CHECK(rc == 0, "%s: program: %s", preset, st.message);
    size_t end_len;
    uint8_t *end_snap = snapshot(w, &end_len);
    CHECK(w->data->events_total > 0 || strstr(preset, "arm"),
          "%s: the run had events (%llu), so the test covers them", preset,
          (unsigned long long)w->data->events_total);

    /* 1. restore into the same world */
    rc = rs_snapshot_read(w, snap, slen, &st);
    CHECK(rc == 0, "%s: restore: %s", preset, st.message);
    size_t back_len;
    uint8_t *back = snapshot(w, &back_len);
    CHECK(same_bytes(snap, slen, back, back_len), "%s: a restored world snapshots to the same bytes",
          preset);
    free(back);
    rc = program(w, &again, &st);
    CHECK(rc == 0 && same_bytes(ref.b, ref.n, again.b, again.n),
          "%s: stepping on after a restore is bit-identical (%zu vs %zu bytes)", preset, ref.n,
          again.n);
    size_t end2_len;
    uint8_t *end2 = snapshot(w, &end2_len);
    CHECK(same_bytes(end_snap, end_len, end2, end2_len), "%s: and ends in the same snapshot", preset);
    free(end2);

    /* 2. restore into a fresh world of the preset, which ran something else before */
    rs_world_t *b = rs_world_new(preset, NULL, 0, 99, &st);
    rs_step(b->model, b->data, 5, &st);
    rc = rs_snapshot_read(b, snap, slen, &st);
    CHECK(rc == 0, "%s: restore into another world: %s", preset, st.message);
    CHECK(b->model->control_dt == w->model->control_dt &&
              memcmp(b->model->ent, w->model->ent, sizeof b->model->ent) == 0,
          "%s: the model parameters (SetParams) are restored", preset);
    rc = program(b, &fresh, &st);
    CHECK(rc == 0 && same_bytes(ref.b, ref.n, fresh.b, fresh.n),
          "%s: a fresh world restored from the snapshot steps on bit-identically", preset);
    rs_world_destroy(&b);

    /* 3. a fork from the snapshot */
    rs_world_t *f = rs_world_fork(w, snap, slen, &st);
    CHECK(f != NULL, "%s: fork: %s", preset, st.message);
    if (f) {
        rc = program(f, &forked, &st);
        CHECK(rc == 0 && same_bytes(ref.b, ref.n, forked.b, forked.n),
              "%s: a fork steps on bit-identically", preset);
        rs_world_destroy(&f);
    }
    /* a fork of the world as it is now */
    f = rs_world_fork(w, NULL, 0, &st);
    CHECK(f != NULL, "%s: fork now: %s", preset, st.message);
    if (f) {
        size_t a_len, b_len;
        uint8_t *a = snapshot(w, &a_len), *c = snapshot(f, &b_len);
        CHECK(same_bytes(a, a_len, c, b_len), "%s: a fork of the world now has its snapshot", preset);
        free(a);
        free(c);
        rs_world_destroy(&f);
    }

    free(ref.b);
    free(again.b);
    free(fresh.b);
    free(forked.b);
    free(end_snap);
    free(snap);
    rs_world_destroy(&w);
}

/* ---- bad snapshots ------------------------------------------------------------------------- */

/* Where field `name`'s count sits in snapshot b (after its name), or 0. */
static size_t field_at(const uint8_t *b, size_t n, const char *name)
{
    size_t k = strlen(name);
    for (size_t i = 24; i + 4 + k + 4 <= n; i++)
        if (b[i] == k && !b[i + 1] && !b[i + 2] && !b[i + 3] && memcmp(b + i + 4, name, k) == 0)
            return i + 4 + k;
    return 0;
}

static void bad_snapshots(void)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new("finger", NULL, 0, 1, &st);
    double f = 40;
    rs_set_commands(w->model, w->data, 0, &f, 1, &st);
    rs_step(w->model, w->data, 30, &st);
    size_t n;
    uint8_t *good = snapshot(w, &n);
    uint8_t *b = malloc(n + 16);

    rs_step(w->model, w->data, 3, &st); /* the world moves on: a refusal must not rewind it */

    expect_refused(w, good, 0, RS_EINVAL, "too short", "empty");
    expect_refused(w, good, 10, RS_EINVAL, "too short", "10 bytes");
    expect_refused(w, good, n / 2, RS_EINVAL, "truncated", "half");
    expect_refused(w, good, n - 1, RS_EINVAL, "truncated", "one byte short");
    memcpy(b, good, n);
    memset(b + n, 0, 16);
    expect_refused(w, b, n + 16, RS_EINVAL, "after its end", "trailing bytes");
    b[n / 2] ^= 0x10;
    expect_refused(w, b, n, RS_EINVAL, "checksum", "a flipped bit");
    memcpy(b, good, n);
    b[n - 1] ^= 1;
    expect_refused(w, b, n, RS_EINVAL, "checksum", "a flipped checksum bit");
    memcpy(b, good, n);
    b[0] = 'X';
    expect_refused(w, b, n, RS_EINVAL, "not a robosim snapshot", "bad magic");
    memcpy(b, good, n);
    b[8] = RS_SNAPSHOT_VERSION + 1; /* another format version */
    expect_refused(w, b, n, RS_EPRECOND, "format version", "another format version");

    /* well sealed (a valid checksum) but with contents that do not fit: the state vector
     * "x" is a field like every other, its name, a count, then its values */
    memcpy(b, good, n);
    size_t nx_at = field_at(b, n, "x");
    CHECK(nx_at > 0, "found the state vector in the snapshot");
    if (nx_at) {
        CHECK(b[nx_at] == (uint8_t)w->model->nx, "the state count is where the layout says");
        b[nx_at] = 5;
        reseal(b, n);
        expect_refused(w, b, n, RS_EINVAL, "holds 5 values", "a state count that is not the world's");
        memcpy(b, good, n);
        /* x_f = NaN */
        memset(b + nx_at + 4, 0xff, 8);
        reseal(b, n);
        expect_refused(w, b, n, RS_EINVAL, "finite", "a NaN in the state");
    }

    /* another preset */
    rs_world_t *dd = rs_world_new("diff_drive", NULL, 0, 1, &st);
    expect_refused(dd, good, n, RS_EPRECOND, "'finger' world", "a snapshot of another preset");
    rs_world_destroy(&dd);

    /* another task: a FingerPush-v0 episode into a plain finger world, and back */
    rs_world_t *tw = rs_world_new_task("FingerPush-v0", NULL, NULL, 0, 5, &st);
    CHECK(tw != NULL, "task world: %s", st.message);
    if (tw) {
        size_t tn;
        uint8_t *ts = snapshot(tw, &tn);
        expect_refused(w, ts, tn, RS_EPRECOND, "FingerPush-v0", "a task snapshot into a plain world");
        expect_refused(tw, good, n, RS_EPRECOND, "task", "a plain snapshot into a task world");

        /* the episode state round-trips: step with actions, restore, step again */
        trace_t r1 = {0}, r2 = {0};
        double act[RS_TASK_MAX_ACT] = {0};
        for (int pass = 0; pass < 2; pass++) {
            trace_t *tr = pass ? &r2 : &r1;
            if (pass) {
                int rc = rs_snapshot_read(tw, ts, tn, &st);
                CHECK(rc == 0, "task restore: %s", st.message);
            }
            for (int k = 0; k < 20; k++) {
                act[0] = k % 3 ? 0.8 : -0.3;
                if (rs_world_task_step(tw, act, (size_t)tw->task->nact, 2, &st) < 0)
                    break;
                record(tr, tw);
            }
        }
        CHECK(r1.n > 0 && same_bytes(r1.b, r1.n, r2.b, r2.n),
              "a task episode steps on bit-identically after a restore (%zu bytes)", r1.n);
        free(r1.b);
        free(r2.b);
        free(ts);
        rs_world_destroy(&tw);
    }

    /* the world still works after all that */
    CHECK(rs_snapshot_read(w, good, n, &st) == 0, "the good snapshot restores: %s", st.message);
    CHECK(rs_step(w->model, w->data, 3, &st) == 0, "and steps: %s", st.message);
    free(b);
    free(good);
    rs_world_destroy(&w);
}

int main(void)
{
    for (const char *const *p = rs_preset_names(); *p; p++)
        preset_roundtrip(*p);
    bad_snapshots();
    return rs_test_done("test_snapshot");
}
