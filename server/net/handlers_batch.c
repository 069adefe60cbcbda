/* StepBatch, both forms: items (one Step per world) and arrays (the columnar batch), run on
 * the worker pool a slice at a time. */

#include "handlers.h"
#include "rs_wire.h"
#include "worlds.h"
#include "rs_randomize.h"
#include "rs_sensitivity.h"
#include "rs_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- StepBatch ---- */

/* A StepBatch slice: the items (or BatchArrays worlds) that go on, run on the worker pool.
 * On the loop each runs one slice (the batch is parked between slices and resumed like a
 * Step, its worlds held); in-process each runs to its end or the budget. */
typedef struct batch_run {
    rs_server_t *s;
    const Robosim__V1__StepBatch *b;
    world_slot_t **where;               /* per item */
    rs_item_progress_t *items;           /* per item, across slices (s->cont) */
    Robosim__V1__BatchResult **results;  /* per item, this slice's */
    size_t *jobs;                        /* the items to run */
    size_t njobs;
    double deadline;                     /* the request's budget */
    int one_slice;
    atomic_int off;                      /* the loop's fuse blew: the batch goes off the loop */
} batch_run_t;

/* An Error result built in arena a. */
static int batch_error(rs_arena_t *a, Robosim__V1__BatchResult *r, int code, const char *message)
{
    Robosim__V1__Error *e = rs_arena_alloc(a, sizeof *e);
    char *msg = rs_arena_strdup(a, message);
    if (!e || !msg)
        return -1;
    robosim__v1__error__init(e);
    e->code = (Robosim__V1__ErrorCode)(-code);
    e->message = msg;
    r->result_case = ROBOSIM__V1__BATCH_RESULT__RESULT_ERROR;
    r->error = e;
    return 0;
}

/* Item `it` failed: its code and message (malloc'd: it may have to outlive this slice). */
static void item_fail(rs_item_progress_t *it, int code, const char *message)
{
    it->phase = RS_ITEM_FAILED;
    it->code = code;
    free(it->message);
    it->message = strdup(message && message[0] ? message : rs_strerror(code));
}

/* One slice of an item's Step (commands in place; `action` is applied until its first control
 * step is done): it stays RS_ITEM_RUNNING when it goes on in the next slice, else it is over:
 * DONE, or FAILED (an error, the budget run out, the server stopping). On the loop (`off`
 * given) the slice runs under the fuse the loop armed: when it blows, the item is rolled back
 * to its slice's start, stays RUNNING and *off is set. `abort` is the flag w's data is wired
 * to. */
static void item_slice(rs_server_t *s, world_slot_t *w, rs_rollback_t *rb, rs_item_progress_t *it,
                       const double *action, size_t naction, int one_slice, double deadline,
                       atomic_int *abort, atomic_int *off)
{
    rs_status_t st;
    rs_status_clear(&st);
    int resume = it->phase == RS_ITEM_RUNNING && it->done > 0;
    it->phase = RS_ITEM_RUNNING;
    int rc = rs_run_control_steps(s, w, rb, action, naction, it->asked, resume, one_slice,
                                  deadline, off ? RS_FUSE_ARMED : RS_FUSE_NONE, abort, &it->done,
                                  &st);
    if (rc == RUN_OFF_LOOP) {
        atomic_store_explicit(off, 1, memory_order_relaxed);
        return;
    }
    if (rc == 0 && it->done < it->asked && !rs_episode_over(w->world)) {
        if (one_slice && rs_clock() < deadline && !rs_server_stopping(s))
            return; /* goes on */
        rc = rs_stopped_short(s, w, it->done, it->asked, &st);
    }
    if (rc < 0)
        item_fail(it, rc, st.message);
    else
        it->phase = RS_ITEM_DONE;
}

/* The result of an item whose Step is over, in arena a: its State or its Error; NOT_SET when
 * out of memory. */
static void item_result(world_slot_t *w, const rs_item_progress_t *it,
                        Robosim__V1__BatchResult *r, rs_arena_t *a)
{
    rs_status_t st;
    Robosim__V1__State *state = NULL;
    r->result_case = ROBOSIM__V1__BATCH_RESULT__RESULT__NOT_SET;
    if (it->phase == RS_ITEM_DONE && rs_step_state(w, a, &state, &st) == 0) {
        r->result_case = ROBOSIM__V1__BATCH_RESULT__RESULT_STATE;
        r->state = state;
    } else if (it->phase == RS_ITEM_FAILED && it->message) {
        batch_error(a, r, it->code, it->message);
    }
}

/* While a worker runs job j, the jobs ahead of it on this worker are loaded link by link: the
 * world's slot, then the stages of rs_world_prefetch_stage, each from lines an earlier job's
 * call loaded (at a chunk's start the first calls wait on memory, as one full prefetch would). */
static void prefetch_ahead(world_slot_t *const *where, const size_t *jobs, size_t j, size_t n)
{
    if (rs_pool_ahead_is_mine(j, RS_WORLD_PREFETCH_STAGES + 1, n))
        __builtin_prefetch(where[jobs[j + RS_WORLD_PREFETCH_STAGES + 1]]);
    for (int k = RS_WORLD_PREFETCH_STAGES; k >= 1; k--)
        if (rs_pool_ahead_is_mine(j, (size_t)k, n))
            rs_world_prefetch_stage(where[jobs[j + (size_t)k]]->world, k);
}

/* A worker runs item jobs[j] for a slice and, once it is over, builds its result in its own
 * arena. */
static void batch_step(void *ctx, size_t j, int worker)
{
    batch_run_t *run = ctx;
    size_t i = run->jobs[j];
    rs_item_progress_t *it = &run->items[i];
    world_slot_t *w = run->where[i];
    prefetch_ahead(run->where, run->jobs, j, run->njobs);
    const Robosim__V1__Step *sp = run->b->items->items[i]->step;
    if (it->phase == RS_ITEM_NEW) {
        rs_status_t st;
        rs_status_clear(&st);
        int rc = sp->jacobian || sp->n_jacobian_params
                     ? rs_fail(&st, RS_EUNIMPL,
                               "Step.jacobian is not served in a StepBatch; send the Step on "
                               "its own")
                     : rs_apply_step_commands(run->s, w, sp, &it->asked, &st);
        if (rc < 0)
            item_fail(it, rc, st.message);
    }
    if (it->phase == RS_ITEM_NEW || it->phase == RS_ITEM_RUNNING)
        item_slice(run->s, w, rs_pool_rollback(run->s->pool, worker), it, sp->action,
                   sp->n_action, run->one_slice, run->deadline, &run->s->abort,
                   run->one_slice ? &run->off : NULL);
    if (it->phase != RS_ITEM_RUNNING)
        item_result(w, it, run->results[i], rs_pool_arena(run->s->pool, worker));
}

/* After a slice: whether any of the run's items goes on; if so the request parks, holding
 * every world the batch names (so its results, built when all are over, are theirs alone). */
static int batch_park(rs_server_t *s, const batch_run_t *run, size_t n, rs_status_t *st)
{
    int going = 0;
    for (size_t j = 0; j < run->njobs && !going; j++)
        going = run->items[run->jobs[j]].phase == RS_ITEM_RUNNING;
    if (!going)
        return 0;
    rs_cont_t *c = s->cont;
    free(c->held);
    c->nheld = 0;
    if (!(c->held = malloc(n * sizeof *c->held)))
        return OOM(st);
    for (size_t i = 0; i < n; i++)
        if (run->where[i])
            c->held[c->nheld++] = run->where[i]->id;
    c->park = 1;
    return RS_PARKED;
}

/* ---- a batch off the loop ----
 * A slice that outlasts the loop's fuse (FUSE_SECONDS: a slow world, or many items each
 * running its slice) moves the batch to the stepper thread: the worlds that go on are copied
 * (the loop may read the worlds meanwhile: ListWorlds, checkpoints), stepped there to their end
 * or the budget on the stepper's pool, and copied back when the loop resumes the request,
 * which then answers as for a batch whose items all ended in earlier slices. */

/* The loop's fuse for a batch slice: the watchdog interrupts every item at once when it blows
 * (rs_disarm_budget disarms it). */
static void arm_fuse(rs_server_t *s, double deadline)
{
    atomic_store_explicit(&s->abort_at, fmin(deadline, rs_clock() + FUSE_SECONDS),
                          memory_order_relaxed);
}

typedef struct off_item {
    size_t i;                /* its place in the batch (c->items) */
    world_slot_t slot;       /* the world's slot, its world the copy below */
    rs_world_t world;        /* the world with its data replaced by a copy */
    const rs_model_t *model; /* retained while the job lives */
    double *action;          /* the item's action (malloc'd), or NULL */
    size_t naction;
} off_item_t;

typedef struct batch_job {
    rs_item_progress_t *items; /* the request's (c->items) */
    off_item_t *off;
    size_t n;
    double deadline;           /* rs_clock() time: the budget's end */
    rs_rollback_t *rb;         /* without the stepper's pool: one world after another */
    rs_server_t *s;
} batch_job_t;

/* The loop keeps the copies of batches it took back (with their models retained), up to
 * --max-worlds, for the next batch it moves: making and freeing a world's data (its integrator)
 * cost several times its control step, and a batch moved every request paid it per world. A
 * spare serves a world of the same model; only the last few are looked at. */
#define SPARE_LOOK 8

static rs_data_t *spare_take(rs_server_t *s, const rs_model_t *m, rs_status_t *st)
{
    for (size_t k = 0; k < SPARE_LOOK && k < s->nspare; k++) {
        rs_spare_t *sp = &s->spare[s->nspare - 1 - k];
        if (sp->model != m)
            continue;
        rs_data_t *d = sp->data;
        rs_model_release(&sp->model);
        *sp = s->spare[--s->nspare];
        return d;
    }
    return rs_data_new(m, 0, st);
}

/* Keep data d of model *m (its reference moves to the spares: *m and *d cleared), or free it. */
static void spare_put(rs_server_t *s, const rs_model_t **m, rs_data_t **d)
{
    size_t cap = s->cfg.max_worlds > 0 ? (size_t)s->cfg.max_worlds : 0;
    if (*d && *m && s->nspare < cap) {
        if (s->nspare == s->spare_cap) {
            size_t want = s->spare_cap ? 2 * s->spare_cap : 64;
            rs_spare_t *grown = realloc(s->spare, want * sizeof *grown);
            if (grown) {
                s->spare = grown;
                s->spare_cap = want;
            }
        }
        if (s->nspare < s->spare_cap) {
            s->spare[s->nspare++] = (rs_spare_t){*m, *d};
            *m = NULL;
            *d = NULL;
            return;
        }
    }
    rs_data_destroy(d); /* reads its model: released after */
    rs_model_release(m);
}

void rs_batch_spares_free(rs_server_t *s)
{
    for (size_t k = 0; k < s->nspare; k++) {
        rs_data_destroy(&s->spare[k].data);
        rs_model_release(&s->spare[k].model);
    }
    free(s->spare);
    s->spare = NULL;
    s->nspare = s->spare_cap = 0;
}

static void batch_job_free(void *p)
{
    batch_job_t *b = p;
    if (!b)
        return;
    for (size_t j = 0; b->off && j < b->n; j++) {
        spare_put(b->s, &b->off[j].model, &b->off[j].world.data);
        free(b->off[j].action);
    }
    free(b->off);
    rs_rollback_destroy(&b->rb);
    free(b);
}

/* One slice of world j's Step, if it goes on (a slice, as on the loop: a worker takes items
 * 8 at a time, so an item run to its end would hold the items after it in its chunk until the
 * budget ran out) */
static void batch_job_item(void *ctx, size_t j, int worker)
{
    batch_job_t *b = ctx;
    off_item_t *o = &b->off[j];
    if (b->items[o->i].phase != RS_ITEM_RUNNING)
        return;
    rs_rollback_t *rb = b->s->off_pool ? rs_pool_rollback(b->s->off_pool, worker) : b->rb;
    item_slice(b->s, &o->slot, rb, &b->items[o->i], o->action, o->naction, 1, b->deadline,
               &b->s->off_abort, NULL);
}

/* On the stepper: every world to its end, the budget or a stop, a slice each per round. */
static void batch_job_run(rs_server_t *s, rs_cont_t *c)
{
    batch_job_t *b = c->off_job;
    atomic_store_explicit(&s->off_abort_at, b->deadline, memory_order_relaxed);
    if (!rs_server_stopping(s))
        atomic_store_explicit(&s->off_abort, 0, memory_order_relaxed);
    for (;;) {
        size_t going = 0;
        for (size_t j = 0; j < b->n; j++)
            going += b->items[b->off[j].i].phase == RS_ITEM_RUNNING;
        if (!going)
            break;
        if (s->off_pool)
            rs_pool_run(s->off_pool, b->n, batch_job_item, b);
        else
            for (size_t j = 0; j < b->n; j++)
                batch_job_item(b, j, 0);
    }
    atomic_store_explicit(&s->off_abort_at, INFINITY, memory_order_relaxed);
}

/* Hand the batch's worlds that go on (items RUNNING; where[i] their slots, actions[i] and
 * nactions[i] their actions) to the stepper: RS_PARKED (the request parked by batch_park), or
 * an error with nothing handed over (the batch then goes on on the loop). */
static int batch_offload(rs_server_t *s, world_slot_t *const *where, size_t n,
                         const double *const *actions, const size_t *nactions, rs_status_t *st)
{
    rs_cont_t *c = s->cont;
    batch_job_t *b = calloc(1, sizeof *b);
    size_t going = 0;
    for (size_t i = 0; i < n; i++)
        going += c->items[i].phase == RS_ITEM_RUNNING;
    /* b->rb serves when the stepper has no pool: whether it has is the stepper's to read */
    if (!b || !(b->off = calloc(going ? going : 1, sizeof *b->off)) ||
        !(b->rb = rs_rollback_new())) {
        batch_job_free(b);
        return OOM(st);
    }
    b->s = s;
    b->items = c->items;
    for (size_t i = 0; i < n; i++) {
        if (c->items[i].phase != RS_ITEM_RUNNING)
            continue;
        world_slot_t *w = where[i];
        const rs_model_t *m = w->world->model;
        off_item_t *o = &b->off[b->n++];
        o->i = i;
        o->model = rs_model_retain(m);
        o->slot = *w;
        o->slot.history = NULL;
        o->world = *w->world;
        o->slot.world = &o->world;
        if (!(o->world.data = spare_take(s, m, st)) ||
            rs_data_copy(m, o->world.data, w->world->data, st) < 0 ||
            (nactions[i] && !(o->action = malloc(nactions[i] * sizeof *o->action)))) {
            batch_job_free(b);
            return st->code < 0 ? st->code : OOM(st);
        }
        rs_data_set_abort(o->world.data, &s->off_abort);
        if (nactions[i])
            memcpy(o->action, actions[i], nactions[i] * sizeof *o->action);
        o->naction = nactions[i];
    }
    b->deadline = rs_clock() + fmax(0.0, s->cfg.max_request_seconds - c->used);
    c->off_run = batch_job_run;
    c->off_free = batch_job_free;
    c->off_job = b;
    c->off_done = 0;
    return RS_PARKED;
}

/* Back from the stepper: its copies become the worlds' data (where[i], as found again). */
static int batch_take_back(rs_server_t *s, world_slot_t *const *where, rs_status_t *st)
{
    rs_cont_t *c = s->cont;
    batch_job_t *b = c->off_job;
    int rc = 0;
    for (size_t j = 0; j < b->n && rc == 0; j++) {
        world_slot_t *w = where[b->off[j].i];
        if (!w)
            continue;
        rc = rs_data_copy(w->world->model, w->world->data, b->off[j].world.data, st);
        w->ckpt.clean = 0;
    }
    c->off_free(b);
    c->off_job = NULL;
    c->off_run = NULL;
    c->off_free = NULL;
    return rc;
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Item i's place in the batch the client sent (a part of a batch split over shards carries
 * them; else i). */
static size_t place(const uint32_t *places, size_t nplaces, size_t i)
{
    return nplaces ? places[i] : i;
}

/* Find the worlds of a batch: where[i] is the slot of ids[i], NULL when there is none. The
 * same world twice refuses the whole batch, before anything changes: each world found is
 * marked with this batch's number; unknown ids are sorted to compare them. */
static int batch_worlds(rs_server_t *s, const uint64_t *ids, size_t n, const uint32_t *places,
                        size_t nplaces, world_slot_t **where, rs_status_t *st)
{
    uint64_t *unknown = rs_arena_alloc(&s->arena, n * sizeof *unknown);
    if (!unknown)
        return OOM(st);
    uint64_t mark = ++s->batches;
    size_t nunknown = 0;
    world_slot_t *end = s->worlds + s->nworlds, *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        /* a batch's worlds are mostly in the table's order (ids ascending, as created): the
         * slot after the last one found is tried first, then the table is searched */
        world_slot_t *w = prev && prev + 1 < end && prev[1].id == ids[i] ? prev + 1
                                                                          : rs_worlds_find(s, ids[i]);
        where[i] = prev = w;
        if (!w) {
            unknown[nunknown++] = ids[i];
            continue;
        }
        if (w->batch_mark == mark)
            return rs_fail(st, RS_EINVAL,
                           "world %llu appears twice in the batch (at %zu and %zu); a batch "
                           "steps each world at most once",
                           (unsigned long long)ids[i], place(places, nplaces, w->batch_item),
                           place(places, nplaces, i));
        w->batch_mark = mark;
        w->batch_item = i;
    }
    qsort(unknown, nunknown, sizeof *unknown, by_id);
    for (size_t i = 1; i < nunknown; i++)
        if (unknown[i] == unknown[i - 1])
            return rs_fail(st, RS_EINVAL,
                           "world %llu appears twice in the batch; a batch steps each world at "
                           "most once (and there is no world %llu on this server)",
                           (unsigned long long)unknown[i], (unsigned long long)unknown[i]);
    return 0;
}

static int step_arrays(rs_server_t *s, const Robosim__V1__BatchArrays *in,
                       Robosim__V1__Response *rp, rs_status_t *st);

/* Step many worlds in one request: the batch is checked as a whole (empty, too large, a world
 * twice), each item on its own (its world exists, its token is the controller's), then the
 * items run on the worker pool, a slice each per round (batch_run_t); every item gets its
 * State or its Error, in item order. The columnar form (StepBatch.arrays) is step_arrays. */
int op_step_batch(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *unused,
                  Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__StepBatch *b = rq->step_batch;
    if (b->form_case == ROBOSIM__V1__STEP_BATCH__FORM_ARRAYS)
        return step_arrays(s, b->arrays, rp, st);
    if (b->form_case != ROBOSIM__V1__STEP_BATCH__FORM_ITEMS)
        return rs_fail(st, RS_EINVAL,
                       "StepBatch sets neither items nor arrays; set one (protocol 1.2 moved the "
                       "per-item form from field 1 to StepBatch.items, a BatchItems: update a "
                       "protocol 1.1 client)");
    Robosim__V1__BatchItem *const *bitems = b->items->items;
    size_t n = b->items->n_items;
    rs_cont_t *c = s->cont;
    const uint32_t *places = b->items->places;
    size_t nplaces = b->items->n_places;
    int rc = rs_batch_size_ok(s, n, "items", st);
    if (rc < 0 || (rc = rs_batch_places_ok(nplaces, n, st)) < 0)
        return rc;
    size_t *jobs = rs_arena_alloc(&s->arena, n * sizeof *jobs);
    world_slot_t **where = rs_arena_alloc(&s->arena, n * sizeof *where);
    uint64_t *ids = rs_arena_alloc(&s->arena, n * sizeof *ids);
    Robosim__V1__BatchResult **results = rs_arena_alloc(&s->arena, n * sizeof *results);
    Robosim__V1__StepBatchReply *reply = rs_arena_alloc(&s->arena, sizeof *reply);
    if (!jobs || !where || !ids || !results || !reply)
        return OOM(st);
    for (size_t i = 0; i < n; i++)
        ids[i] = bitems[i]->world_id;
    if ((rc = batch_worlds(s, ids, n, places, nplaces, where, st)) < 0)
        return rc;
    if (c->off_job && (rc = batch_take_back(s, where, st)) < 0)
        return rc;
    if (!c->resuming) {
        uint64_t total = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t k = 0; /* a bad count is the item's error, later */
            if (where[i] && bitems[i]->step &&
                rs_step_count(s, bitems[i]->step, where[i]->world->model->control_dt, &k, NULL) == 0)
                total += k;
        }
        if ((rc = rs_batch_total_ok(s, total, st)) < 0)
            return rc;
        /* per item: its world and its token; refused items are over with their error */
        if (!(c->items = calloc(n, sizeof *c->items)))
            return OOM(st);
        c->nitems = n;
        for (size_t i = 0; i < n; i++) {
            const Robosim__V1__BatchItem *it = bitems[i];
            rs_status_t ist;
            rs_status_clear(&ist);
            world_slot_t *w = where[i];
            if (!w)
                rc = rs_no_world(s, &ist, "item", place(places, nplaces, i), it->world_id);
            else if (!it->step)
                rc = rs_fail(&ist, RS_EINVAL, "item %zu (world %llu) has no step",
                             place(places, nplaces, i), (unsigned long long)it->world_id);
            else
                rc = rs_auth_check(s, w, it->token, "step", &ist);
            if (rc < 0)
                item_fail(&c->items[i], rc, ist.message);
        }
    }
    size_t nrun = 0;
    for (size_t i = 0; i < n; i++) {
        Robosim__V1__BatchResult *r = rs_arena_alloc(&s->arena, sizeof *r);
        if (!r)
            return OOM(st);
        robosim__v1__batch_result__init(r);
        r->world_id = bitems[i]->world_id;
        results[i] = r;
        if (c->items[i].phase == RS_ITEM_NEW || c->items[i].phase == RS_ITEM_RUNNING)
            jobs[nrun++] = i;
    }

    /* the batch's budget is the request's: an item still stepping when it runs out stops at
     * a control-step boundary with its own DEADLINE_EXCEEDED */
    batch_run_t run = {s, b, where, c->items, results, jobs, nrun, rs_arm_budget(s), c->can_park, 0};
    atomic_init(&run.off, 0);
    if (c->can_park)
        arm_fuse(s, run.deadline);
    rs_pool_run(s->pool, nrun, batch_step, &run);
    rs_disarm_budget(s, run.deadline);
    if ((rc = batch_park(s, &run, n, st)) != 0) {
        if (rc == RS_PARKED && atomic_load_explicit(&run.off, memory_order_relaxed)) {
            const double **acts = rs_arena_alloc(&s->arena, n * sizeof *acts);
            size_t *nacts = rs_arena_alloc(&s->arena, n * sizeof *nacts);
            for (size_t i = 0; acts && nacts && i < n; i++) {
                const Robosim__V1__Step *sp = bitems[i]->step;
                acts[i] = sp ? sp->action : NULL;
                nacts[i] = sp ? sp->n_action : 0;
            }
            rs_status_t ost;
            rs_status_clear(&ost);
            if (acts && nacts)
                batch_offload(s, where, n, acts, nacts, &ost); /* else: on, on the loop */
        }
        return rc;
    }

    /* all over: the results no worker built in this slice (refused at the start, or over in
     * an earlier slice), then the states offered to the stream */
    for (size_t i = 0; i < n; i++) {
        if (results[i]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT__NOT_SET)
            item_result(where[i], &c->items[i], results[i], &s->arena);
        if (results[i]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT__NOT_SET)
            return OOM(st);
        if (results[i]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_STATE) {
            rs_stream_offer(s, where[i], results[i]->state); /* the loop's thread only */
            rs_keep_parts(results[i]->state, bitems[i]->step);
        }
    }

    robosim__v1__step_batch_reply__init(reply);
    reply->n_results = n;
    reply->results = results;
    REPLY(rp, step_batch, STEP_BATCH, reply);
    return 0;
}

/* ---- StepBatch.arrays: the columnar batch ---- */

typedef struct arrays_run {
    rs_server_t *s;
    const Robosim__V1__BatchArrays *in;
    Robosim__V1__BatchArraysReply *out;
    world_slot_t **where;  /* per world */
    size_t *jobs;           /* the worlds to step (indices into world_ids) */
    size_t njobs;
    char **messages;        /* per world: why it failed (in a worker's arena) */
    uint64_t steps;         /* control steps for each world */
    size_t nu, na;          /* commands and actions per world */
    double deadline;        /* the request's budget */
    rs_item_progress_t *items; /* per world, across slices (s->cont) */
    uint8_t *built;         /* per world: its rows written in this slice */
    rs_stream_built_t *frames; /* per world: its stream frame, built with its rows */
    uint8_t *framed;        /* per world: frames[i] was built in this slice */
    const world_slot_t *like; /* the batch's shape (arrays_shape) */
    int one_slice;
    const rs_stream_clock_t *at; /* the slice's clocks for its frames (NULL: each reads them) */
    atomic_int off;         /* the loop's fuse blew: the batch goes off the loop */
} arrays_run_t;

/* World i's rows are NaN (it was not stepped, or its step failed). */
static void arrays_nan_rows(Robosim__V1__BatchArraysReply *out, size_t i)
{
    out->time[i] = NAN;
    out->reward[i] = NAN;
    memset(out->digests.data + i * RS_DIGEST_BYTES, 0, RS_DIGEST_BYTES); /* no state: zeros */
    for (size_t k = 0; k < out->info_size; k++)
        out->info[i * out->info_size + k] = NAN;
    for (size_t k = 0; k < out->state_size; k++)
        out->state[i * out->state_size + k] = NAN;
    for (size_t k = 0; k < out->sensor_size; k++)
        out->sensors[i * out->sensor_size + k] = NAN;
    for (size_t k = 0; k < out->observation_size; k++)
        out->observation[i * out->observation_size + k] = NAN;
}

/* World i's rows once its Step is over (each world its own rows: no sharing): its state, or
 * its code and message (in arena a) and NaN rows. */
static void arrays_rows(arrays_run_t *run, size_t i, rs_arena_t *a)
{
    Robosim__V1__BatchArraysReply *out = run->out;
    const rs_item_progress_t *it = &run->items[i];
    run->built[i] = 1;
    if (it->phase == RS_ITEM_FAILED) {
        out->codes[i] = (Robosim__V1__ErrorCode)(-it->code);
        run->messages[i] = it->message ? rs_arena_strdup(a, it->message) : NULL;
        arrays_nan_rows(out, i);
        return;
    }
    const rs_world_t *world = run->where[i]->world;
    const rs_data_t *d = world->data;
    out->time[i] = d->t;
    out->step_count[i] = d->step_count;
    rs_digest_bytes(d, out->digests.data + i * RS_DIGEST_BYTES);
    out->events[i] = (uint32_t)(d->nevents + d->events_dropped);
    memcpy(out->state + i * out->state_size, d->x, out->state_size * sizeof(double));
    memcpy(out->sensors + i * out->sensor_size, d->sensors, out->sensor_size * sizeof(double));
    rs_task_view_t view;
    if (out->observation_size && rs_world_task_view(world, &view, NULL) == 0) {
        memcpy(out->observation + i * out->observation_size, view.obs,
               out->observation_size * sizeof(double));
        out->reward[i] = view.reward;
        out->terminated[i] = view.terminated;
        out->truncated[i] = view.truncated;
        memcpy(out->info + i * out->info_size, view.info, out->info_size * sizeof(double));
    }
    rs_codec_arrays_randomized_row(out, i, world);
}

static int arrays_admit(const arrays_run_t *run, size_t i, rs_status_t *st);

/* A worker runs world jobs[j] for a slice (at the first, after admitting it: arrays_admit) and,
 * once its Step is over, writes its rows and builds its stream frame. */
static void arrays_step(void *ctx, size_t j, int worker)
{
    arrays_run_t *run = ctx;
    const Robosim__V1__BatchArrays *in = run->in;
    size_t i = run->jobs[j];
    world_slot_t *w = run->where[i];
    rs_item_progress_t *it = &run->items[i];
    prefetch_ahead(run->where, run->jobs, j, run->njobs);
    const double *u = in->n_commands ? in->commands + i * run->nu : NULL;
    const double *act = in->n_actions ? in->actions + i * run->na : NULL;
    if (it->phase == RS_ITEM_NEW) {
        rs_status_t st;
        rs_status_clear(&st);
        int rc = arrays_admit(run, i, &st);
        if (rc < 0)
            item_fail(it, rc, st.message);
    }
    if (it->phase == RS_ITEM_NEW && in->n_reset && in->reset[i]) {
        /* autoreset: a new episode instead of a step */
        rs_status_t st;
        rs_status_clear(&st);
        rs_world_t *world = w->world;
        int rc = rs_world_reset(world, in->n_reset_seeds ? in->reset_seeds[i] : world->data->seed,
                                &st);
        if (rc < 0)
            item_fail(it, rc, st.message);
        else
            it->phase = RS_ITEM_DONE;
    }
    if (it->phase == RS_ITEM_NEW) {
        rs_status_t st;
        rs_status_clear(&st);
        int rc = rs_drive_rule(w, u ? run->nu : 0, act ? run->na : 0, &st);
        if (rc == 0 && u)
            rc = rs_set_all_commands(w->world->model, w->world->data, u, &st);
        it->asked = run->steps;
        if (rc < 0)
            item_fail(it, rc, st.message);
    }
    if (it->phase == RS_ITEM_NEW || it->phase == RS_ITEM_RUNNING)
        item_slice(run->s, w, rs_pool_rollback(run->s->pool, worker), it, act,
                   act ? run->na : 0, run->one_slice, run->deadline, &run->s->abort,
                   run->one_slice ? &run->off : NULL);
    if (it->phase != RS_ITEM_RUNNING) {
        rs_arena_t *a = rs_pool_arena(run->s->pool, worker);
        arrays_rows(run, i, a);
        if (it->phase == RS_ITEM_DONE) {
            rs_stream_build(run->s, w, a, run->at, &run->frames[i]);
            run->framed[i] = 1;
        }
    }
}

/* Whether world w is of the batch's shape, that of world `like`: the same preset (SetParams
 * never changes a model's state, actuator or sensor counts) and the same task. */
static int same_shape(const world_slot_t *w, const world_slot_t *like)
{
    return w->world->task == like->world->task &&
           strcmp(w->world->model->preset, like->world->model->preset) == 0;
}

/* The batch's shape is its first existing world's (*like; NULL when none exists): its sizes go
 * into run and *sz (state, sensors, observation, info per world); the commands or actions
 * must fit it. */
static int arrays_shape(arrays_run_t *run, size_t n, const world_slot_t **like, size_t sz[4],
                        rs_status_t *st)
{
    const Robosim__V1__BatchArrays *in = run->in;
    *like = NULL;
    for (size_t i = 0; i < n && !*like; i++)
        *like = run->where[i];
    sz[0] = sz[1] = sz[2] = sz[3] = 0;
    if (!*like)
        return 0;
    const rs_world_t *lw = (*like)->world;
    sz[0] = (size_t)lw->model->nx;
    sz[1] = (size_t)lw->model->ns;
    sz[2] = lw->task ? (size_t)lw->task->nobs : 0;
    sz[3] = lw->task ? (size_t)lw->task->ninfo : 0;
    run->nu = (size_t)lw->model->nu;
    run->na = lw->task ? (size_t)lw->task->nact : 0;
    return rs_batch_arrays_fit(in, n, lw->model->preset, lw->task ? lw->task->name : NULL, run->nu,
                      run->na, st);
}

/* The reply's arrays for n worlds of sizes sz (arrays_shape) in the request's arena. */
static Robosim__V1__BatchArraysReply *arrays_reply_new(rs_arena_t *a, size_t n, const size_t sz[4],
                                                       const world_slot_t *like)
{
    size_t nx = sz[0], ns = sz[1], nobs = sz[2], ninfo = sz[3];
    Robosim__V1__BatchArraysReply *out = rs_arena_alloc(a, sizeof *out);
    if (!out)
        return NULL;
    robosim__v1__batch_arrays_reply__init(out);
    rs_batch_arrays_sizes(out, n, nx, ns, nobs, ninfo, nobs ? (char **)like->world->task->info : NULL,
                 ninfo);
    out->codes = rs_arena_alloc(a, n * sizeof *out->codes);
    out->time = rs_arena_alloc(a, n * sizeof *out->time);
    out->step_count = rs_arena_alloc(a, n * sizeof *out->step_count);
    out->events = rs_arena_alloc(a, n * sizeof *out->events);
    out->state = rs_arena_alloc(a, (n * nx + 1) * sizeof *out->state);
    out->sensors = rs_arena_alloc(a, (n * ns + 1) * sizeof *out->sensors);
    out->observation = rs_arena_alloc(a, (n * nobs + 1) * sizeof *out->observation);
    out->reward = rs_arena_alloc(a, n * sizeof *out->reward);
    out->terminated = rs_arena_alloc(a, n * sizeof *out->terminated);
    out->truncated = rs_arena_alloc(a, n * sizeof *out->truncated);
    out->info = rs_arena_alloc(a, (n * ninfo + 1) * sizeof *out->info);
    out->digests.len = n * RS_DIGEST_BYTES;
    out->digests.data = rs_arena_alloc(a, n * RS_DIGEST_BYTES + 1);
    if (!out->digests.data || !out->info || !out->codes || !out->time || !out->step_count || !out->events || !out->state ||
        !out->sensors || !out->observation || !out->reward || !out->terminated ||
        !out->truncated ||
        rs_codec_arrays_randomized_new(a, out, like ? like->world : NULL, n) < 0)
        return NULL;
    return out;
}

/* At the first slice, on the loop: each world exists (else it is over with its error); the
 * worlds found are admitted by the workers that step them (arrays_admit). */
static int arrays_check_worlds(arrays_run_t *run, size_t n, rs_status_t *st)
{
    rs_server_t *s = run->s;
    const Robosim__V1__BatchArrays *in = run->in;
    rs_cont_t *c = s->cont;
    if (!(c->items = calloc(n, sizeof *c->items)))
        return OOM(st);
    c->nitems = n;
    for (size_t i = 0; i < n; i++) {
        if (run->where[i])
            continue;
        rs_status_t ist;
        rs_status_clear(&ist);
        int rc = rs_no_world(s, &ist, "world_ids", place(in->places, in->n_places, i),
                             in->world_ids[i]);
        item_fail(&c->items[i], rc, ist.message);
    }
    return 0;
}

/* World i (it exists) at its first slice, on the worker that steps it: of the batch's shape
 * (that of run->like), its token the controller's (its lease renewed). Touches world i only. */
static int arrays_admit(const arrays_run_t *run, size_t i, rs_status_t *st)
{
    const Robosim__V1__BatchArrays *in = run->in;
    world_slot_t *w = run->where[i];
    const world_slot_t *like = run->like;
    if (!same_shape(w, like))
        return rs_batch_not_like(st, place(in->places, in->n_places, i), w->id, w->world->model->preset,
                        w->world->task ? w->world->task->name : NULL, like->id,
                        like->world->model->preset,
                        like->world->task ? like->world->task->name : NULL);
    return rs_auth_check(run->s, w, in->n_tokens ? in->tokens[i] : "", "step", st);
}

/* This slice's jobs: the worlds not yet over; every row's flags cleared. */
static void arrays_jobs(arrays_run_t *run, size_t n)
{
    Robosim__V1__BatchArraysReply *out = run->out;
    run->njobs = 0;
    for (size_t i = 0; i < n; i++) {
        out->codes[i] = ROBOSIM__V1__ERROR_CODE__OK;
        out->step_count[i] = 0;
        out->events[i] = 0;
        out->terminated[i] = out->truncated[i] = 0;
        run->messages[i] = NULL;
        run->built[i] = 0;
        run->framed[i] = 0;
        if (run->items[i].phase == RS_ITEM_NEW || run->items[i].phase == RS_ITEM_RUNNING)
            run->jobs[run->njobs++] = i;
    }
}

/* All over: the rows no worker wrote in this slice (refused at the start, or over in an
 * earlier slice), the errors listed, the stepped worlds offered to the observer stream (their
 * frames as the workers built them, or built here for the worlds over in an earlier slice). */
static int arrays_finish(arrays_run_t *run, size_t n, rs_status_t *st)
{
    rs_server_t *s = run->s;
    Robosim__V1__BatchArraysReply *out = run->out;
    for (size_t i = 0; i < n; i++)
        if (!run->built[i])
            arrays_rows(run, i, &s->arena);
    size_t nerr = 0;
    for (size_t i = 0; i < n; i++)
        nerr += out->codes[i] != ROBOSIM__V1__ERROR_CODE__OK;
    out->n_errors = nerr;
    out->errors = rs_arena_alloc(&s->arena, (nerr + 1) * sizeof *out->errors);
    if (!out->errors)
        return OOM(st);
    for (size_t i = 0, k = 0; i < n; i++) {
        if (i + 16 < n && run->where[i + 16])
            rs_history_prefetch(run->where[i + 16], 0);
        if (i + 8 < n && run->where[i + 8])
            rs_history_prefetch(run->where[i + 8], 1);
        if (i + 4 < n && run->where[i + 4])
            rs_history_prefetch(run->where[i + 4], 2);
        if (out->codes[i] == ROBOSIM__V1__ERROR_CODE__OK) {
            if (run->framed[i])
                rs_stream_offer_built(s, run->where[i], &run->frames[i]);
            else
                rs_stream_offer(s, run->where[i], NULL); /* the loop's thread only */
            continue;
        }
        Robosim__V1__BatchError *be = rs_arena_alloc(&s->arena, sizeof *be);
        Robosim__V1__Error *e = rs_arena_alloc(&s->arena, sizeof *e);
        if (!be || !e || !run->messages[i])
            return OOM(st);
        robosim__v1__batch_error__init(be);
        robosim__v1__error__init(e);
        e->code = out->codes[i];
        e->message = run->messages[i];
        be->index = (uint32_t)i;
        be->world_id = run->in->world_ids[i];
        be->error = e;
        out->errors[k++] = be;
    }
    return 0;
}

/* StepBatch.arrays (see the proto): checked as a whole, then world by world; the worlds that
 * pass run on the worker pool, each writing its own rows of the reply's arrays. A request
 * that outlasts its slice parks (batch_park) and resumes here with s->cont. */
static int step_arrays(rs_server_t *s, const Robosim__V1__BatchArrays *in,
                       Robosim__V1__Response *rp, rs_status_t *st)
{
    size_t n = in->n_world_ids, sz[4];
    int rc = rs_batch_arrays_check(s, in, n, st);
    if (rc < 0)
        return rc;
    arrays_run_t run = {.s = s, .in = in, .steps = in->steps ? in->steps : 1};
    run.where = rs_arena_alloc(&s->arena, n * sizeof *run.where);
    run.jobs = rs_arena_alloc(&s->arena, n * sizeof *run.jobs);
    run.messages = rs_arena_alloc(&s->arena, n * sizeof *run.messages);
    run.built = rs_arena_alloc(&s->arena, n);
    run.framed = rs_arena_alloc(&s->arena, n);
    run.frames = rs_arena_alloc(&s->arena, n * sizeof *run.frames);
    if (!run.where || !run.jobs || !run.messages || !run.built || !run.framed || !run.frames)
        return OOM(st);
    const world_slot_t *like;
    if ((rc = batch_worlds(s, in->world_ids, n, in->places, in->n_places, run.where, st)) < 0 ||
        (rc = arrays_shape(&run, n, &like, sz, st)) < 0)
        return rc;
    run.like = like;
    if (s->cont->off_job && (rc = batch_take_back(s, run.where, st)) < 0)
        return rc;
    Robosim__V1__StepBatchReply *reply = rs_arena_alloc(&s->arena, sizeof *reply);
    if (!reply || !(run.out = arrays_reply_new(&s->arena, n, sz, like)))
        return OOM(st);
    if (!s->cont->resuming && (rc = arrays_check_worlds(&run, n, st)) < 0)
        return rc;
    run.items = s->cont->items;
    arrays_jobs(&run, n);

    run.one_slice = s->cont->can_park;
    atomic_init(&run.off, 0);
    rs_stream_prepare(s);
    /* a slice on the loop lasts at most the fuse: its frames carry the time it started (two
     * clock reads per slice, not per frame); a run to the end of the budget reads them anew */
    rs_stream_clock_t at = {rs_monotonic(), rs_wall_clock()};
    run.at = run.one_slice ? &at : NULL;
    run.deadline = rs_arm_budget(s); /* as for items (op_step_batch) */
    if (run.one_slice)
        arm_fuse(s, run.deadline);
    rs_pool_run(s->pool, run.njobs, arrays_step, &run);
    rs_disarm_budget(s, run.deadline);
    batch_run_t park = {.where = run.where, .items = run.items, .jobs = run.jobs,
                        .njobs = run.njobs};
    if ((rc = batch_park(s, &park, n, st)) != 0) {
        /* goes on: the frames of the worlds over in this slice are built anew at its end */
        for (size_t j = 0; j < run.njobs; j++)
            if (run.framed[run.jobs[j]])
                rs_stream_built_free(&run.frames[run.jobs[j]]);
        if (rc == RS_PARKED && atomic_load_explicit(&run.off, memory_order_relaxed)) {
            const double **acts = rs_arena_alloc(&s->arena, n * sizeof *acts);
            size_t *nacts = rs_arena_alloc(&s->arena, n * sizeof *nacts);
            for (size_t i = 0; acts && nacts && i < n; i++) {
                acts[i] = in->n_actions ? in->actions + i * run.na : NULL;
                nacts[i] = in->n_actions ? run.na : 0;
            }
            rs_status_t ost;
            rs_status_clear(&ost);
            if (acts && nacts)
                batch_offload(s, run.where, n, acts, nacts, &ost); /* else: on, on the loop */
        }
        return rc;
    }
    if ((rc = arrays_finish(&run, n, st)) < 0) {
        for (size_t i = 0; i < n; i++)
            if (run.framed[i])
                rs_stream_built_free(&run.frames[i]);
        return rc;
    }
    robosim__v1__step_batch_reply__init(reply);
    reply->arrays = run.out;
    REPLY(rp, step_batch, STEP_BATCH, reply);
    return 0;
}
