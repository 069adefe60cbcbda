/* The field table of rs_data_t (rs_data.h) and snapshot validation.
 *
 * 1. Every declared field round-trips: each is set to a valid value unlike its reset value
 *    (chosen by its check kind, so a new field of a known kind is covered without touching
 *    this test), then it must survive rs_data_copy, rs_data_save + rs_data_rollback (after
 *    steps changed it) and a snapshot write + read, and rs_reset
 *    must leave it as a fresh data has it (or untouched, for KEEP fields).
 * 2. Attacks on forged (well checksummed) snapshots are refused and change
 *    nothing: a diff-drive robot "blocked" by obstacle 1e8 (an out-of-bounds read in
 *    dd_settle before), grid_k = 2^40 (time jumping to 1e10 s), an aux value NaN, and a
 *    SerialArmReach snapshot whose time lags its control-step grid (one step then integrated
 *    seconds of motion).
 * 3. A robot that does not declare its private variables cannot be registered. */
#include "rs_data.h"
#include "rs_motion_spec.h"
#include "rs_robot.h"
#include "rs_snapshot.h"
#include "rs_task.h"
#include "rs_test.h"
#include "snapshot_bytes.h"

#include <stdlib.h>
#include <string.h>

/* ---- each field's encoding, to compare fields one by one ----------------------------------- */

static uint8_t *encode_field(const rs_field_t *f, const rs_model_t *m, const rs_data_t *d,
                             size_t *n)
{
    rs_writer_t w = {NULL, 0, 0};
    rs_field_write(&w, f, m, d);
    uint8_t *b = malloc(w.len);
    rs_writer_t w2 = {b, 0, w.len};
    rs_field_write(&w2, f, m, d);
    *n = w.len;
    return b;
}

static int field_equal(const rs_field_t *f, const rs_model_t *m, const rs_data_t *a,
                       const rs_data_t *b)
{
    size_t na, nb;
    uint8_t *ea = encode_field(f, m, a, &na), *eb = encode_field(f, m, b, &nb);
    int same = na == nb && memcmp(ea, eb, na) == 0;
    free(ea);
    free(eb);
    return same;
}

/* ---- a valid value unlike the reset one, by check kind ------------------------------------- */

static int perturb(const rs_field_t *f, const rs_model_t *m, rs_data_t *d)
{
    double dt = m->control_dt;
    switch (f->check) {
    case RS_CHECK_ANY:
        for (int e = 0; e < (f->shape == RS_SHAPE_ENTITY ? m->nentities : 1); e++) {
            void *v = rs_field_values(f, d, e);
            for (size_t k = 0; k < rs_field_count(f, m, d); k++) {
                if (f->type == RS_TYPE_U64)
                    ((uint64_t *)v)[k] = 1000 + k;
                else if (f->type == RS_TYPE_F64)
                    ((double *)v)[k] = 0.375 + (double)k;
                else
                    ((uint32_t *)v)[k] = 7 + (uint32_t)k;
            }
        }
        return 1;
    case RS_CHECK_FINITE: {
        double *v = rs_field_values(f, d, 0);
        for (size_t k = 0; k < rs_field_count(f, m, d); k++)
            v[k] = 0.25 + 0.5 * (double)k;
        return 1;
    }
    case RS_CHECK_TIME:
    case RS_CHECK_GRID:
    case RS_CHECK_STEPS:
        /* the grid and time move together: grid_t0 0.5 s, 3 steps on, 10 since reset */
        d->grid_t0 = 0.5;
        d->grid_k = 3;
        d->step_count = 10;
        d->t = d->grid_t0 + 3.0 * dt;
        return 1;
    case RS_CHECK_STEP_SIZE: *(double *)rs_field_values(f, d, 0) = dt / 4; return 1;
    case RS_CHECK_RNG: {
        uint64_t *s = rs_field_values(f, d, 0);
        for (int i = 0; i < f->count; i++)
            s[i] = 11 + (uint64_t)i;
        return 1;
    }
    case RS_CHECK_COMMAND: {
        double *u = rs_field_values(f, d, 0);
        for (int a = 0; a < m->nu; a++)
            u[a] = 0.125 * (a + 1);
        return 1;
    }
    case RS_CHECK_MODE:
        for (int e = 0; e < m->nentities; e++)
            d->ent[e].mode = m->ent[e].robot->nmodes - 1;
        return 1;
    case RS_CHECK_AUX:
        for (int e = 0; e < m->nentities; e++) {
            const rs_robot_t *r = m->ent[e].robot;
            for (int i = 0; i < r->naux; i++) {
                const rs_aux_desc_t *a = &r->aux_vars[i];
                double *v = &d->ent[e].aux[i];
                switch (a->kind) {
                case RS_AUX_REAL: *v = isfinite(a->lower) ? a->lower + 0.5 : 0.5; break;
                case RS_AUX_INTEGER: *v = a->upper; break;
                case RS_AUX_SIGN: *v = -1.0; break;
                case RS_AUX_INDEX: *v = 0.0; break; /* the test world has an obstacle */
                }
            }
        }
        return 1;
    case RS_CHECK_BOOL: *(int *)rs_field_values(f, d, 0) = 0; return 1;
    case RS_CHECK_COUNT: *(int *)rs_field_values(f, d, 0) = 2; return 1;
    case RS_CHECK_SCHEDULES:
        for (int e = 0; e < m->nentities; e++) {
            rs_schedule_t *s = &d->sched[m->ent[e].u_off];
            s->t = malloc(2 * sizeof(double));
            s->v = malloc(2 * sizeof(double));
            s->t[0] = 0.6, s->t[1] = 0.9;
            s->v[0] = 0.0, s->v[1] = 0.5;
            s->n = 2;
            s->cursor = 1;
            d->nsched[e] = 1;
        }
        return 1;
    case RS_CHECK_SPEC: {
        /* a specification without frames: a monitored constant */
        static const char doc[] =
            "[{\"@id\": \"q\", \"@type\": [\"Quantity\", \"Force\"], \"unit\": \"N\", "
            "\"value\": 2}, {\"@id\": \"c\", \"@type\": [\"Constraint\", "
            "\"EqualityConstraint\"], \"quantity\": \"q\", \"reference-value\": \"q\"}, "
            "{\"@id\": \"m\", \"@type\": \"Monitor\", \"constraint\": \"c\"}, "
            "{\"@id\": \"h\", \"@type\": \"ConstraintHandler\", \"constraint\": \"c\", "
            "\"monitor\": \"m\"}]";
        rs_status_t st;
        return rs_set_motion_spec(m, d, doc, sizeof doc - 1, &st) == 0;
    }
    case RS_CHECK_EVENTS:
        if (rs_data_reserve_events(d, 2) < 0)
            return 0; /* the log is allocated on demand */
        d->nevents = 2;
        for (int i = 0; i < 2; i++) {
            rs_event_t *ev = &d->events[i];
            memset(ev, 0, sizeof *ev);
            ev->entity = m->nentities - 1;
            ev->kind = 1;
            ev->t = 0.1 * (i + 1);
            ev->value = 3.5;
            ev->nvalues = 2;
            ev->before[0] = ev->after[1] = 1.25;
        }
        return 1;
    }
    return 0;
}

/* A workshop (every robot kind) whose diff-drive robot has an obstacle, its data perturbed in
 * every field. */
static rs_world_t *perturbed_world(rs_status_t *st)
{
    double obst[] = {1.00, 0, 0.10}; /* m */
    rs_param_t p = {"robot", "obstacles", obst, 3};
    rs_world_t *w = rs_world_new("workshop", &p, 1, 3, st);
    if (!w)
        return NULL;
    int nf;
    const rs_field_t *f = rs_data_fields(&nf);
    for (int i = 0; i < nf; i++)
        CHECK(perturb(&f[i], w->model, w->data), "field '%s' has a check kind this test knows",
              f[i].name);
    return w;
}

static void roundtrip_every_field(void)
{
    rs_status_t st;
    rs_status_clear(&st);
    rs_world_t *w = perturbed_world(&st);
    CHECK(w != NULL, "workshop: %s", st.message);
    if (!w)
        return;
    const rs_model_t *m = w->model;
    int nf;
    const rs_field_t *f = rs_data_fields(&nf);
    CHECK(rs_data_check(m, w->data, &st) == 0, "the perturbed data is valid: %s", st.message);

    rs_data_t *fresh = rs_data_new(m, 3, &st);
    for (int i = 0; i < nf; i++)
        CHECK(!field_equal(&f[i], m, w->data, fresh), "field '%s' was perturbed", f[i].name);

    /* copy */
    rs_data_t *copy = rs_data_new(m, 9, &st);
    CHECK(rs_data_copy(m, copy, w->data, &st) == 0, "copy: %s", st.message);
    for (int i = 0; i < nf; i++)
        CHECK(field_equal(&f[i], m, w->data, copy), "field '%s' survives rs_data_copy", f[i].name);

    /* snapshot, read into another world of the preset */
    size_t n = 0;
    rs_snapshot_size(w, &n);
    uint8_t *b = malloc(n);
    CHECK(rs_snapshot_write(w, b, n, &n, &st) == 0, "write: %s", st.message);
    rs_world_t *other = rs_world_new("workshop", NULL, 0, 4, &st);
    CHECK(rs_snapshot_read(other, b, n, &st) == 0, "read: %s", st.message);
    for (int i = 0; i < nf; i++)
        CHECK(field_equal(&f[i], m, w->data, other->data), "field '%s' survives a snapshot",
              f[i].name);
    rs_world_t *fork = rs_world_fork(w, NULL, 0, &st);
    CHECK(fork != NULL, "fork: %s", st.message);
    for (int i = 0; fork && i < nf; i++)
        CHECK(field_equal(&f[i], m, w->data, fork->data), "field '%s' survives ForkWorld",
              f[i].name);

    /* save, then change the data as Steps do (new commands drop the schedules, control steps
     * move every run variable and log events), roll back: every field as saved; stepping on
     * from there is stepping on from the save (the fork of the same data) */
    rs_rollback_t *rb = rs_rollback_new();
    rs_world_t *later = fork ? rs_world_fork(w, NULL, 0, &st) : NULL;
    CHECK(rb && later, "a rollback and a second fork: %s", st.message);
    if (rb && later) {
        CHECK(rs_data_save(rb, m, later->data, &st) == 0, "save: %s", st.message);
        double *u = calloc((size_t)m->nu + 1, sizeof *u);
        rs_status_t ignored; /* a perturbed world may refuse or fail a step: changed all the same */
        rs_set_all_commands(m, later->data, u, &ignored);
        rs_step(m, later->data, 40, &ignored);
        free(u);
        CHECK(!field_equal(&f[0], m, w->data, later->data), "the steps changed the data");
        CHECK(rs_data_rollback(rb, m, later->data, &st) == 0, "rollback: %s", st.message);
        for (int i = 0; i < nf; i++)
            CHECK(field_equal(&f[i], m, w->data, later->data),
                  "field '%s' survives rs_data_save and rs_data_rollback", f[i].name);
        rs_status_t st1, st2;
        int rc1 = rs_step(m, later->data, 25, &st1), rc2 = rs_step(m, fork->data, 25, &st2);
        CHECK(rc1 == rc2, "stepping on after the rollback: %d, from the save: %d", rc1, rc2);
        for (int i = 0; i < nf; i++)
            CHECK(field_equal(&f[i], m, fork->data, later->data),
                  "field '%s' after 25 steps on from the rollback as from the save", f[i].name);
        /* the same rollback serves a world of other sizes next, and this one again */
        rs_world_t *finger = rs_world_new("finger", NULL, 0, 5, &st);
        CHECK(finger && rs_data_save(rb, finger->model, finger->data, &st) == 0,
              "save a finger world: %s", st.message);
        uint64_t before[4];
        memcpy(before, finger->data->digest, sizeof before);
        CHECK(finger && rs_step(finger->model, finger->data, 3, &st) == 0, "%s", st.message);
        CHECK(finger && rs_data_rollback(rb, finger->model, finger->data, &st) == 0 &&
                  memcmp(before, finger->data->digest, sizeof before) == 0,
              "a finger world rolled back by the same rollback: %s", st.message);
        CHECK(rs_data_save(rb, m, w->data, &st) == 0, "the workshop again: %s", st.message);
        rs_world_destroy(&finger);
    }
    rs_world_destroy(&later);
    rs_rollback_destroy(&rb);
    rs_rollback_destroy(&rb); /* NULL-safe */

    /* reset: every field as a fresh data has it, KEEP fields untouched */
    CHECK(rs_reset(m, copy, 3, &st) == 0, "reset: %s", st.message);
    for (int i = 0; i < nf; i++) {
        if (strcmp(f[i].name, "digest") == 0) { /* the chain restarts from the reset state */
            uint64_t kept[4];
            memcpy(kept, copy->digest, sizeof kept);
            rs_digest_start(m, copy);
            CHECK(memcmp(kept, copy->digest, sizeof kept) == 0 && memcmp(kept, w->data->digest,
                                                                         sizeof kept) != 0,
                  "reset restarts the digest chain from the state it leaves");
        } else if (f[i].reset == RS_RESET_KEEP)
            CHECK(field_equal(&f[i], m, w->data, copy), "reset keeps field '%s'", f[i].name);
        else
            CHECK(field_equal(&f[i], m, fresh, copy), "reset restores field '%s'", f[i].name);
    }
    free(b);
    rs_world_destroy(&fork);
    rs_world_destroy(&other);
    rs_data_destroy(&copy);
    rs_data_destroy(&fresh);
    rs_world_destroy(&w);
}

/* ---- forged snapshots -------------------------------------------------------------------- */

/* Where the values of field `name` start in snapshot b (after its name and count), or 0. */
static size_t values_at(const uint8_t *b, size_t n, const char *name)
{
    size_t k = strlen(name);
    for (size_t i = 24; i + 4 + k + 4 <= n; i++)
        if (b[i] == k && !b[i + 1] && !b[i + 2] && !b[i + 3] && memcmp(b + i + 4, name, k) == 0)
            return i + 4 + k + 4;
    return 0;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void putf(uint8_t *p, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    put64(p, bits);
}

/* The forged snapshot is refused (RS_EINVAL, a message holding `word`), the world and a fork
 * from it are unchanged / not made. */
static void expect_forged_refused(rs_world_t *w, const uint8_t *b, size_t n, const char *word,
                                  const char *what)
{
    expect_refused(w, b, n, RS_EINVAL, word, what);
    rs_status_t st;
    rs_world_t *f = rs_world_fork(w, b, n, &st);
    CHECK(f == NULL, "%s: no fork from it", what);
    rs_world_destroy(&f);
}

static void forged_snapshots(void)
{
    rs_status_t st;
    rs_status_clear(&st);

    /* diff-drive "blocked" by obstacle 1e8 */
    double obst[] = {1.00, 0, 0.10}; /* m */
    rs_param_t p = {"robot", "obstacles", obst, 3};
    rs_world_t *dd = rs_world_new("diff_drive", &p, 1, 1, &st);
    double wheels[] = {3, 3};
    rs_set_commands(dd->model, dd->data, 0, wheels, 2, &st);
    rs_step(dd->model, dd->data, 5, &st);
    size_t n;
    uint8_t *good = snapshot(dd, &n), *b = malloc(n);
    size_t mode_at = values_at(good, n, "mode"), aux_at = values_at(good, n, "aux");
    CHECK(mode_at && aux_at, "mode and aux fields found");
    memcpy(b, good, n);
    b[mode_at] = 1; /* blocked */
    putf(b + aux_at, 1e8);
    reseal(b, n);
    expect_forged_refused(dd, b, n, "obstacle", "diff-drive blocked by obstacle 1e8");
    /* blocked with no obstacle at all (-1) is refused too; by obstacle 0 it is a valid state */
    putf(b + aux_at, -1.0);
    reseal(b, n);
    expect_forged_refused(dd, b, n, "obstacle", "diff-drive blocked by no obstacle");
    putf(b + aux_at, 0.0);
    reseal(b, n);
    CHECK(rs_snapshot_read(dd, b, n, &st) == 0, "blocked by obstacle 0 is accepted: %s",
          st.message);
    CHECK(rs_step(dd->model, dd->data, 3, &st) == 0, "and steps: %s", st.message);
    free(b);
    free(good);

    /* grid_k = 2^40, and time moved with it but the step count not */
    rs_step(dd->model, dd->data, 5, &st);
    good = snapshot(dd, &n);
    b = malloc(n);
    memcpy(b, good, n);
    size_t k_at = values_at(b, n, "grid_k");
    CHECK(k_at > 0, "grid_k found");
    put64(b + k_at, 1ULL << 40);
    reseal(b, n);
    expect_forged_refused(dd, b, n, "grid_k", "grid_k 2^40");
    putf(b + values_at(b, n, "t"), 0.01 * (double)(1ULL << 40));
    reseal(b, n);
    expect_forged_refused(dd, b, n, "grid_k", "grid_k 2^40 with its time");
    free(b);
    free(good);
    rs_world_destroy(&dd);

    /* aux NaN (the finger's impulse0), and a robot's unused slot */
    rs_world_t *fw = rs_world_new("finger", NULL, 0, 1, &st);
    rs_step(fw->model, fw->data, 3, &st);
    good = snapshot(fw, &n);
    b = malloc(n);
    memcpy(b, good, n);
    aux_at = values_at(b, n, "aux");
    memset(b + aux_at + 8, 0xff, 8);
    reseal(b, n);
    expect_forged_refused(fw, b, n, "impulse0", "finger aux NaN");
    memcpy(b, good, n);
    putf(b + aux_at + 8 * (RS_AUX_MAX - 1), 5.0);
    reseal(b, n);
    expect_forged_refused(fw, b, n, "must be 0", "a value in an unused aux slot");
    memcpy(b, good, n);
    putf(b + aux_at, 0.0); /* the slide direction is a sign */
    reseal(b, n);
    expect_forged_refused(fw, b, n, "-1 or +1", "finger direction 0");
    memcpy(b, good, n);
    putf(b + values_at(b, n, "h_next"), 1.0); /* above control_dt */
    reseal(b, n);
    expect_forged_refused(fw, b, n, "h_next", "h_next above control_dt");
    memcpy(b, good, n);
    putf(b + values_at(b, n, "sensors"), -INFINITY);
    reseal(b, n);
    expect_forged_refused(fw, b, n, "finite", "an infinite sensor");
    free(b);
    free(good);
    rs_world_destroy(&fw);

    /* SerialArmReach: time left far behind the grid, so one control step would integrate the
     * whole gap (0.44 s of CPU for one step before); and the episode past its end */
    rs_world_t *tw = rs_world_new_task("SerialArmReach-v0", NULL, NULL, 0, 2, &st);
    CHECK(tw != NULL, "task world: %s", st.message);
    double act[2] = {0.5, -0.5};
    rs_world_task_step(tw, act, 2, 40, &st);
    good = snapshot(tw, &n);
    b = malloc(n);
    memcpy(b, good, n);
    putf(b + values_at(b, n, "t"), 0.0);
    reseal(b, n);
    expect_forged_refused(tw, b, n, "control step the grid says", "SerialArmReach time behind its grid");
    memcpy(b, good, n);
    put64(b + values_at(b, n, "episode_steps"), 100000);
    reseal(b, n);
    expect_forged_refused(tw, b, n, "episode_steps", "an episode past its end");
    memcpy(b, good, n);
    putf(b + values_at(b, n, "task") + 8 * RS_TASK_PRIVATE, NAN);
    reseal(b, n);
    expect_forged_refused(tw, b, n, "finite", "a NaN target");
    CHECK(rs_snapshot_read(tw, good, n, &st) == 0, "the genuine snapshot restores: %s", st.message);
    CHECK(rs_world_task_step(tw, act, 2, 1, &st) == 0, "and steps: %s", st.message);
    free(b);
    free(good);
    rs_world_destroy(&tw);
}

/* ---- every byte mutated ------------------------------------------------------------------- */

/* Each byte of a workshop snapshot (every robot kind, with events, a schedule, a blocked
 * diff-drive robot) XORed with two masks, the checksum recomputed: each read is refused with
 * RS_EINVAL / RS_EPRECOND, or is accepted, and then the world steps on (or reports a
 * simulation failure) without a crash under ASan/UBSan. The world allows 200 integrator steps
 * per control step (max_internal_steps), so that accepted states with huge values (a
 * velocity's exponent flipped) fail fast instead of integrating for long. */
static void every_byte_mutated(void)
{
    rs_status_t st;
    rs_status_clear(&st);
    double obst[] = {2.00, 0.80, 0.05, 0.60, 0, 0.10}, cap = 200; /* m */
    rs_param_t p[] = {{"robot", "obstacles", obst, 6}, {"", "max_internal_steps", &cap, 1}};
    rs_world_t *w = rs_world_new("workshop", p, 2, 5, &st);
    const rs_model_t *m = w->model;
    for (int e = 0; e < m->nentities; e++) {
        double u[2] = {3, 3};
        if (!strcmp(m->ent[e].robot->kind, "finger"))
            u[0] = 30;
        rs_set_commands(m, w->data, e, u, (size_t)m->ent[e].nu, &st);
    }
    double kt[] = {0.9, 1.2}, kv[] = {2, 4};
    rs_set_schedule(m, w->data, 0, 0, kt, kv, 2, &st);
    rs_step(m, w->data, 150, &st);
    CHECK(w->data->nevents > 0 && w->data->ent[3].mode == 1, "the world has events (%d) and a "
          "blocked robot", w->data->nevents);
    size_t n;
    uint8_t *good = snapshot(w, &n), *b = malloc(n);
    static const uint8_t masks[] = {0x01, 0x80};
    int accepted = 0, refused = 0, other = 0, stepped = 0;
    for (size_t i = 24; i + 8 < n; i++)
        for (int k = 0; k < 2; k++) {
            memcpy(b, good, n);
            b[i] ^= masks[k];
            reseal(b, n);
            int rc = rs_snapshot_read(w, b, n, &st);
            if (rc == RS_EINVAL || rc == RS_EPRECOND) {
                refused++;
                continue;
            }
            if (rc != 0) {
                other++;
                continue;
            }
            accepted++;
            rc = rs_step(w->model, w->data, 1, &st);
            stepped += rc == 0 || rc == RS_ESIMFAIL;
            rs_snapshot_read(w, good, n, &st);
        }
    printf("%zu bytes x 2 masks: %d refused, %d accepted (%d of them stepped on or reported a "
           "simulation failure), %d other\n",
           n - 32, refused, accepted, stepped, other);
    CHECK(other == 0 && stepped == accepted && refused > 0,
          "every mutation is refused or restores and steps (%d other codes)", other);
    size_t l2;
    uint8_t *back = snapshot(w, &l2);
    CHECK(l2 == n && memcmp(back, good, n) == 0, "the world is the good snapshot's at the end");
    free(back);
    free(b);
    free(good);
    rs_world_destroy(&w);
}

/* ---- states a world reaches by itself always restore ---------------------------------------- */

static int restores(rs_world_t *w, const char *what)
{
    size_t n;
    uint8_t *b = snapshot(w, &n);
    rs_status_t st;
    rs_status_clear(&st);
    int rc = rs_snapshot_read(w, b, n, &st);
    CHECK(rc == 0, "%s: the world's own snapshot restores: %s", what, st.message);
    free(b);
    return rc == 0;
}

static void reachable_states_restore(void)
{
    rs_status_t st;
    rs_status_clear(&st);
    /* a diff-drive robot blocked by obstacle 1; SetParams leaving only one obstacle would strand
     * its index: refused, nothing changes; a list that keeps obstacle 1 is taken */
    double two[] = {2.00, 0.80, 0.05, 1.00, 0, 0.10}; /* m */
    rs_param_t p = {"robot", "obstacles", two, 6};
    rs_world_t *dd = rs_world_new("diff_drive", &p, 1, 1, &st);
    double wheels[] = {3, 3};
    rs_set_commands(dd->model, dd->data, 0, wheels, 2, &st);
    rs_step(dd->model, dd->data, 400, &st);
    CHECK(dd->data->ent[0].mode == 1 && dd->data->ent[0].aux[0] == 1.0,
          "the robot is blocked by obstacle 1 (mode %d, obstacle %g)", dd->data->ent[0].mode,
          dd->data->ent[0].aux[0]);
    restores(dd, "blocked");
    double one[] = {1.00, 0, 0.10};
    rs_param_t q = {"robot", "obstacles", one, 3};
    CHECK(rs_world_set_params(dd, &q, 1, &st) == RS_EPRECOND && strstr(st.message, "obstacle"),
          "SetParams stranding the blocking obstacle is refused: %s", st.message);
    CHECK(dd->model->ent[0].plen[6] == 6, "and changes nothing");
    double moved[] = {2.10, 0.80, 0.05, 1.00, 0, 0.10};
    rs_param_t r = {"robot", "obstacles", moved, 6};
    CHECK(rs_world_set_params(dd, &r, 1, &st) == 0, "keeping it is fine: %s", st.message);
    rs_step(dd->model, dd->data, 3, &st);
    restores(dd, "after SetParams");
    rs_world_destroy(&dd);

    /* a shorter control step after long integrator steps: h_next follows it */
    rs_world_t *fw = rs_world_new("finger", NULL, 0, 1, &st);
    rs_step(fw->model, fw->data, 20, &st);
    double dt = 1e-4;
    rs_param_t cd = {"", "control_dt", &dt, 1};
    CHECK(rs_world_set_params(fw, &cd, 1, &st) == 0, "control_dt 1e-4: %s", st.message);
    CHECK(fw->data->h_next <= dt, "h_next %g is within the new control step", fw->data->h_next);
    restores(fw, "shorter control step");
    rs_step(fw->model, fw->data, 3, &st);
    restores(fw, "shorter control step, stepped");
    rs_world_destroy(&fw);
}

/* ---- registration ------------------------------------------------------------------------ */

static void registration(void)
{
    rs_status_t st;
    rs_status_clear(&st);
    const rs_robot_t *kinds[] = {&rs_robot_finger, &rs_robot_serial_arm, &rs_robot_parallel_arm,
                                 &rs_robot_diff_drive};
    for (int i = 0; i < 4; i++)
        CHECK(rs_robot_check(kinds[i], &st) == 0, "robot %s may be registered: %s",
              kinds[i]->kind, st.message);

    rs_robot_t forgot = rs_robot_finger;
    forgot.aux_vars = NULL;
    forgot.naux = 0;
    CHECK(rs_robot_check(&forgot, &st) == RS_EINTERNAL && strstr(st.message, "aux_vars"),
          "a robot that does not declare its private variables is refused: '%s'", st.message);

    rs_robot_t many = rs_robot_finger; /* commands.c sizes its buffers by RS_MAX_ACTUATORS */
    many.nu = RS_MAX_ACTUATORS + 1;
    CHECK(rs_robot_check(&many, &st) == RS_EINTERNAL && strstr(st.message, "RS_MAX_ACTUATORS"),
          "a robot with more actuators than RS_MAX_ACTUATORS is refused: '%s'", st.message);

    rs_robot_t bad = rs_robot_diff_drive;
    rs_aux_desc_t index_of_nothing = {"obstacle", RS_AUX_INDEX, 0, 0, 99, 3, 0, ""};
    bad.aux_vars = &index_of_nothing;
    bad.naux = 1;
    CHECK(rs_robot_check(&bad, &st) == RS_EINTERNAL && strstr(st.message, "inconsistently"),
          "an index into a parameter the robot lacks is refused: '%s'", st.message);
}

int main(void)
{
    roundtrip_every_field();
    forged_snapshots();
    reachable_states_restore();
    every_byte_mutated();
    registration();
    return rs_test_done("test_data_fields");
}
