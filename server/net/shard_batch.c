/* A StepBatch over several shards (--shards): split where it arrives, merged from its parts'
 * replies (shards.h). */
#include "handlers.h"
#include "rs_wire.h"
#include "worlds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a StepBatch over several shards (--shards) ----
 * The shard a client's batch reaches checks it as a whole as one server would (from the
 * census: which worlds exist, their shards and shapes), splits it by the worlds' shards into
 * parts that keep the batch's order and each world's place (StepBatch places), passes each
 * shard its part as it passes single requests (shards.c), and merges the parts' replies in
 * the request's order. Each part is a request on its shard: sliced, budgeted and rolled back
 * there as any batch. */

struct rs_batch_plan {
    Robosim__V1__Request *rq; /* the client's request (owned) */
    int arrays;
    size_t n;
    int *part;       /* per world: its shard, or -1 when refused here (code, message) */
    uint32_t *at;    /* per world: its index in its part */
    int *code;
    char **message;  /* malloc'd */
    int nshards;
};

void rs_batch_plan_free(rs_batch_plan_t **pp)
{
    rs_batch_plan_t *p = *pp;
    if (!p)
        return;
    if (p->rq)
        robosim__v1__request__free_unpacked(p->rq, NULL);
    for (size_t i = 0; p->message && i < p->n; i++)
        free(p->message[i]);
    free(p->message);
    free(p->part);
    free(p->at);
    free(p->code);
    free(p);
    *pp = NULL;
}

typedef struct id_at {
    uint64_t id;
    size_t at;
} id_at_t;

static int by_id_then_at(const void *a, const void *b)
{
    const id_at_t *x = a, *y = b;
    if (x->id != y->id)
        return (x->id > y->id) - (x->id < y->id);
    return (x->at > y->at) - (x->at < y->at);
}

/* A world twice in ids: refused as batch_worlds refuses it (a world that exists: the one whose
 * second place comes first; else the least unknown id). */
static int split_twice(struct rs_census *c, const uint64_t *ids, size_t n, rs_status_t *st)
{
    id_at_t *v = malloc(n * sizeof *v);
    if (!v)
        return OOM(st);
    for (size_t i = 0; i < n; i++)
        v[i] = (id_at_t){ids[i], i};
    qsort(v, n, sizeof *v, by_id_then_at);
    size_t first = 0, second = SIZE_MAX;
    uint64_t known = 0, unknown = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].id != v[i - 1].id || (i >= 2 && v[i - 2].id == v[i].id))
            continue;
        if (rs_census_shape(c, v[i].id)) {
            if (v[i].at < second)
                second = v[i].at, first = v[i - 1].at, known = v[i].id;
        } else if (!unknown) {
            unknown = v[i].id;
        }
    }
    free(v);
    if (known)
        return rs_fail(st, RS_EINVAL,
                       "world %llu appears twice in the batch (at %zu and %zu); a batch "
                       "steps each world at most once",
                       (unsigned long long)known, first, second);
    if (unknown)
        return rs_fail(st, RS_EINVAL,
                       "world %llu appears twice in the batch; a batch steps each world at "
                       "most once (and there is no world %llu on this server)",
                       (unsigned long long)unknown, (unsigned long long)unknown);
    return 0;
}

/* Pack rq with step_batch `b` into a malloc'd buffer (*len bytes); NULL when out of memory. */
static uint8_t *pack_part(const Robosim__V1__Request *rq, Robosim__V1__StepBatch *b, size_t *len)
{
    Robosim__V1__Request part = *rq;
    part.step_batch = b;
    *len = robosim__v1__request__get_packed_size(&part);
    uint8_t *buf = malloc(*len ? *len : 1);
    if (buf)
        robosim__v1__request__pack(&part, buf);
    return buf;
}

/* The part of shard k (the worlds whose plan->part is k), packed. */
static uint8_t *split_part(const rs_batch_plan_t *plan, int k, size_t *len)
{
    const Robosim__V1__StepBatch *b = plan->rq->step_batch;
    size_t m = 0;
    for (size_t i = 0; i < plan->n; i++)
        m += plan->part[i] == k;
    uint32_t *places = malloc(m * sizeof *places);
    uint8_t *out = NULL;
    Robosim__V1__StepBatch sb = ROBOSIM__V1__STEP_BATCH__INIT;
    sb.form_case = b->form_case;
    if (!plan->arrays) {
        Robosim__V1__BatchItems items = ROBOSIM__V1__BATCH_ITEMS__INIT;
        Robosim__V1__BatchItem **its = malloc(m * sizeof *its);
        if (places && its) {
            for (size_t i = 0, j = 0; i < plan->n; i++)
                if (plan->part[i] == k) {
                    its[j] = b->items->items[i];
                    places[j++] = (uint32_t)i;
                }
            items.n_items = items.n_places = m;
            items.items = its;
            items.places = places;
            sb.items = &items;
            out = pack_part(plan->rq, &sb, len);
        }
        free(its);
        free(places);
        return out;
    }
    const Robosim__V1__BatchArrays *in = b->arrays;
    size_t nu = plan->n ? in->n_commands / plan->n : 0, na = plan->n ? in->n_actions / plan->n : 0;
    Robosim__V1__BatchArrays a = *in;
    a.n_world_ids = a.n_places = m;
    a.n_tokens = in->n_tokens ? m : 0;
    a.n_commands = in->n_commands ? m * nu : 0;
    a.n_actions = in->n_actions ? m * na : 0;
    a.n_reset = in->n_reset ? m : 0;
    a.n_reset_seeds = in->n_reset_seeds ? m : 0;
    a.world_ids = malloc(m * sizeof *a.world_ids);
    a.tokens = malloc(m * sizeof *a.tokens);
    a.commands = malloc((a.n_commands + 1) * sizeof *a.commands);
    a.actions = malloc((a.n_actions + 1) * sizeof *a.actions);
    a.reset = malloc(m * sizeof *a.reset);
    a.reset_seeds = malloc(m * sizeof *a.reset_seeds);
    a.places = places;
    if (places && a.world_ids && a.tokens && a.commands && a.actions && a.reset &&
        a.reset_seeds) {
        for (size_t i = 0, j = 0; i < plan->n; i++) {
            if (plan->part[i] != k)
                continue;
            a.world_ids[j] = in->world_ids[i];
            if (in->n_tokens)
                a.tokens[j] = in->tokens[i];
            if (in->n_commands)
                memcpy(a.commands + j * nu, in->commands + i * nu, nu * sizeof *a.commands);
            if (in->n_actions)
                memcpy(a.actions + j * na, in->actions + i * na, na * sizeof *a.actions);
            if (in->n_reset)
                a.reset[j] = in->reset[i];
            if (in->n_reset_seeds)
                a.reset_seeds[j] = in->reset_seeds[i];
            places[j++] = (uint32_t)i;
        }
        sb.arrays = &a;
        out = pack_part(plan->rq, &sb, len);
    }
    free(a.world_ids);
    free(a.tokens);
    free(a.commands);
    free(a.actions);
    free(a.reset);
    free(a.reset_seeds);
    free(places);
    return out;
}

/* The whole-batch checks one server makes before it steps anything, from the census. */
static int split_check(rs_server_t *s, const Robosim__V1__StepBatch *b, const uint64_t *ids,
                       size_t n, rs_status_t *st)
{
    struct rs_census *c = s->census;
    int rc;
    if (b->form_case == ROBOSIM__V1__STEP_BATCH__FORM_ITEMS) {
        if ((rc = rs_batch_size_ok(s, n, "items", st)) < 0 ||
            (rc = rs_batch_places_ok(b->items->n_places, n, st)) < 0 ||
            (rc = split_twice(c, ids, n, st)) < 0)
            return rc;
        /* the control steps asked in all; a duration's count needs its world's control step,
         * which its shard counts in its part */
        uint64_t total = 0;
        for (size_t i = 0; i < n; i++) {
            const Robosim__V1__Step *sp = b->items->items[i]->step;
            if (sp && sp->length_case == ROBOSIM__V1__STEP__LENGTH_STEPS &&
                sp->steps <= s->cfg.max_steps_per_request && rs_census_shape(c, ids[i]))
                total += sp->steps;
        }
        return rs_batch_total_ok(s, total, st);
    }
    const Robosim__V1__BatchArrays *in = b->arrays;
    if ((rc = rs_batch_arrays_check(s, in, n, st)) < 0 || (rc = split_twice(c, ids, n, st)) < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        const rs_shape_t *like = rs_census_shape(c, ids[i]);
        if (like)
            return rs_batch_arrays_fit(in, n, like->preset, like->task[0] ? like->task : NULL, like->nu,
                              like->na, st);
    }
    return 0;
}

int rs_batch_split(rs_server_t *s, const uint8_t *req, size_t len, uint8_t **parts,
                   size_t *lens, rs_batch_plan_t **out, uint64_t *id, rs_status_t *refusal)
{
    *out = NULL;
    *id = 0;
    int nshards = s->front ? s->front->cfg.shards : 1;
    Robosim__V1__Request *rq = len <= s->cfg.max_message_size
                                   ? robosim__v1__request__unpack(NULL, len, req)
                                   : NULL;
    const Robosim__V1__StepBatch *b =
        rq && rq->op_case == ROBOSIM__V1__REQUEST__OP_STEP_BATCH ? rq->step_batch : NULL;
    int arrays = b && b->form_case == ROBOSIM__V1__STEP_BATCH__FORM_ARRAYS;
    if (!b || !s->census || nshards < 2 ||
        (!arrays && b->form_case != ROBOSIM__V1__STEP_BATCH__FORM_ITEMS)) {
        if (rq)
            robosim__v1__request__free_unpacked(rq, NULL);
        return 1; /* not a batch to split: its shard answers it */
    }
    size_t n = arrays ? b->arrays->n_world_ids : b->items->n_items;
    *id = rq->id;
    rs_batch_plan_t *plan = calloc(1, sizeof *plan);
    uint64_t *ids = malloc((n + 1) * sizeof *ids);
    rs_status_t st;
    rs_status_clear(&st);
    int rc = 0;
    if (!plan || !ids || !(plan->part = calloc(n + 1, sizeof *plan->part)) ||
        !(plan->at = calloc(n + 1, sizeof *plan->at)) ||
        !(plan->code = calloc(n + 1, sizeof *plan->code)) ||
        !(plan->message = calloc(n + 1, sizeof *plan->message)))
        rc = OOM(&st);
    if (plan) {
        plan->rq = rq;
        plan->arrays = arrays;
        plan->n = n;
        plan->nshards = nshards;
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        ids[i] = arrays ? b->arrays->world_ids[i] : b->items->items[i]->world_id;
    if (rc == 0)
        rc = split_check(s, b, ids, n, &st);
    /* each world to its shard (an unknown one here, which says there is none); in the
     * columnar form one of another shape than the first existing world is refused here */
    const rs_shape_t *like = NULL;
    uint64_t like_id = 0;
    size_t count[256] = {0};
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int k = rs_census_shard_of(s->census, ids[i]);
        const rs_shape_t *sh = rs_census_shape(s->census, ids[i]);
        plan->part[i] = k >= 0 && k < nshards ? k : s->shard_index;
        if (arrays && sh && !like) {
            like = sh;
            like_id = ids[i];
        } else if (arrays && sh && sh != like) {
            rs_status_t ist;
            rs_status_clear(&ist);
            plan->code[i] = rs_batch_not_like(&ist, i, ids[i], sh->preset, sh->task[0] ? sh->task : NULL,
                                     like_id, like->preset, like->task[0] ? like->task : NULL);
            plan->message[i] = strdup(ist.message);
            plan->part[i] = -1;
            continue;
        }
        plan->at[i] = (uint32_t)count[plan->part[i]]++;
    }
    free(ids);
    for (int k = 0; k < nshards; k++)
        parts[k] = NULL, lens[k] = 0;
    for (int k = 0; rc == 0 && k < nshards; k++)
        if (count[k] && !(parts[k] = split_part(plan, k, &lens[k])))
            rc = OOM(&st);
    if (rc < 0) {
        for (int k = 0; k < nshards; k++)
            free(parts[k]), parts[k] = NULL;
        rs_fail(refusal, rc, "%s", st.message);
        if (plan)
            rs_batch_plan_free(&plan); /* and rq, which it holds */
        else
            robosim__v1__request__free_unpacked(rq, NULL);
        return -1;
    }
    *out = plan;
    return 0;
}

/* What world i's part answered: its StepBatchReply (NULL: an Error, in *e, or refused here). */
typedef struct part_reply {
    Robosim__V1__Response *rp;
    size_t next_error; /* merge_arrays: the first of its errors not yet matched to a world */
} part_reply_t;

/* World i's error when its part gave it none of its own: refused here, or its part refused
 * as a whole (its Error), or no reply at all. */
static void world_error(const rs_batch_plan_t *plan, part_reply_t *pr, size_t i, int *code,
                        const char **message)
{
    int k = plan->part[i];
    if (k < 0) {
        *code = plan->code[i];
        *message = plan->message[i] ? plan->message[i] : rs_strerror(plan->code[i]);
        return;
    }
    const Robosim__V1__Response *rp = pr[k].rp;
    if (rp && rp->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR && rp->error) {
        *code = -(int)rp->error->code;
        *message = rp->error->message;
        return;
    }
    *code = RS_EINTERNAL;
    *message = "the shard serving this world gave no answer to its part of the batch";
}

/* The serialized BatchResults of a part's reply (a StepBatchReply's results, in order):
 * res[j], rlen[j] for j < *n (at most cap). 0, or -1 when the reply is no StepBatchReply (an
 * Error) or cannot be read. */
static int part_results(const uint8_t *buf, size_t len, const uint8_t **res, size_t *rlen,
                        size_t cap, size_t *n)
{
    const uint8_t *p = buf, *end = buf + len, *sub, *subend, *sb = NULL, *sbend = NULL;
    uint32_t num, type;
    uint64_t v;
    int r;
    *n = 0;
    while ((r = rs_wire_next(&p, end, &num, &type, &v, &sub, &subend)) == 1)
        if (num == ROBOSIM__V1__RESPONSE__RESULT_STEP_BATCH && type == 2)
            sb = sub, sbend = subend;
    if (r < 0 || !sb)
        return -1;
    p = sb;
    while ((r = rs_wire_next(&p, sbend, &num, &type, &v, &sub, &subend)) == 1)
        if (num == 1 && type == 2 && *n < cap) {
            res[*n] = sub;
            rlen[*n] = (size_t)(subend - sub);
            (*n)++;
        }
    return r < 0 ? -1 : 0;
}

/* The items form merged without decoding the parts' States: each item's serialized
 * BatchResult from its part's reply, in the request's order, or its error packed here. */
static int merge_items(const rs_batch_plan_t *plan, uint8_t *const *replies, const size_t *lens,
                       part_reply_t *pr, uint8_t **out, size_t *outlen)
{
    size_t n = plan->n, nk = (size_t)plan->nshards;
    const uint8_t **res = calloc(n + 1, sizeof *res);
    size_t *rlen = calloc(n + 1, sizeof *rlen), *first = calloc(nk + 1, sizeof *first),
           *got = calloc(nk + 1, sizeof *got);
    uint8_t **mine = calloc(n + 1, sizeof *mine);
    int rc = res && rlen && first && got && mine ? 0 : -1;
    /* the parts' results laid out by part: part k's from first[k] */
    for (size_t i = 0, at = 0; rc == 0 && i < nk; i++) {
        size_t m = 0;
        for (size_t j = 0; j < n; j++)
            m += plan->part[j] == (int)i;
        first[i] = at;
        if (replies[i] && part_results(replies[i], lens[i], res + at, rlen + at, m, &got[i]) < 0) {
            got[i] = 0;
            pr[i].rp = robosim__v1__response__unpack(NULL, lens[i], replies[i]); /* its Error */
        }
        at += m;
    }
    const uint8_t **item = calloc(n + 1, sizeof *item);
    size_t *ilen = calloc(n + 1, sizeof *ilen), body = 0;
    rc = rc == 0 && item && ilen ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int k = plan->part[i];
        if (k >= 0 && plan->at[i] < got[k]) {
            item[i] = res[first[k] + plan->at[i]];
            ilen[i] = rlen[first[k] + plan->at[i]];
        } else {
            int code;
            const char *message;
            world_error(plan, pr, i, &code, &message);
            Robosim__V1__Error e = ROBOSIM__V1__ERROR__INIT;
            e.code = (Robosim__V1__ErrorCode)(-code);
            e.message = (char *)message;
            Robosim__V1__BatchResult r = ROBOSIM__V1__BATCH_RESULT__INIT;
            r.world_id = plan->rq->step_batch->items->items[i]->world_id;
            r.result_case = ROBOSIM__V1__BATCH_RESULT__RESULT_ERROR;
            r.error = &e;
            ilen[i] = robosim__v1__batch_result__get_packed_size(&r);
            if (!(mine[i] = malloc(ilen[i] ? ilen[i] : 1))) {
                rc = -1;
                break;
            }
            robosim__v1__batch_result__pack(&r, mine[i]);
            item[i] = mine[i];
        }
        body += 1 + rs_wire_put_varint(NULL, ilen[i]) + ilen[i];
    }
    /* Response { id = 1; step_batch { results = 1 ... } } */
    uint64_t id = plan->rq->id, sbtag = (uint64_t)ROBOSIM__V1__RESPONSE__RESULT_STEP_BATCH << 3 | 2;
    size_t total = (id ? 1 + rs_wire_put_varint(NULL, id) : 0) + rs_wire_put_varint(NULL, sbtag) +
                   rs_wire_put_varint(NULL, body) + body;
    uint8_t *o = rc == 0 ? malloc(total ? total : 1) : NULL;
    if (o) {
        size_t w = 0;
        if (id) {
            o[w++] = 1 << 3;
            w += rs_wire_put_varint(o + w, id);
        }
        w += rs_wire_put_varint(o + w, sbtag);
        w += rs_wire_put_varint(o + w, body);
        for (size_t i = 0; i < n; i++) {
            o[w++] = 1 << 3 | 2;
            w += rs_wire_put_varint(o + w, ilen[i]);
            memcpy(o + w, item[i], ilen[i]);
            w += ilen[i];
        }
        *out = o;
        *outlen = w;
    } else {
        rc = -1;
    }
    for (size_t i = 0; mine && i < n; i++)
        free(mine[i]);
    free(mine);
    free(item);
    free(ilen);
    free(res);
    free(rlen);
    free(first);
    free(got);
    return rc;
}

/* Copy `count` values of `size` bytes from src's row j to dst's row i (sizes equal), or fill
 * it with NaN doubles (src NULL). */
static void copy_row(void *dst, size_t i, const void *src, size_t j, size_t count, size_t size)
{
    if (!count)
        return;
    if (src) {
        memcpy((char *)dst + i * count * size, (const char *)src + j * count * size, count * size);
        return;
    }
    for (size_t k = 0; k < count; k++)
        ((double *)dst)[i * count + k] = NAN;
}

/* The columnar form merged: each world's rows from its part's reply, its error from the part's
 * errors (its index made the batch's), NaN rows for a world refused. */
static int merge_arrays(const rs_batch_plan_t *plan, part_reply_t *pr,
                        Robosim__V1__BatchArraysReply *out, void ***owned, size_t *nowned)
{
    size_t n = plan->n;
    const Robosim__V1__BatchArrays *in = plan->rq->step_batch->arrays;
    /* the sizes: the replies that have rows have the batch's shape's (0 for a part of worlds
     * none of which exists); the randomized items: those of the first part in order that has
     * them */
    const Robosim__V1__BatchArraysReply *shape = NULL, *rnd = NULL;
    for (size_t i = 0; i < n; i++) {
        int k = plan->part[i];
        const Robosim__V1__Response *rp = k >= 0 ? pr[k].rp : NULL;
        const Robosim__V1__BatchArraysReply *r =
            rp && rp->result_case == ROBOSIM__V1__RESPONSE__RESULT_STEP_BATCH ? rp->step_batch->arrays
                                                                              : NULL;
        if (!r)
            continue;
        if (!shape || r->state_size + r->sensor_size + r->observation_size >
                          shape->state_size + shape->sensor_size + shape->observation_size)
            shape = r;
        if (!rnd && r->n_randomized_items)
            rnd = r;
    }
    size_t nx = shape ? shape->state_size : 0, ns = shape ? shape->sensor_size : 0,
           nobs = shape ? shape->observation_size : 0, ninfo = shape ? shape->info_size : 0,
           nrnd = rnd ? rnd->n_randomized_items : 0;
    rs_batch_arrays_sizes(out, n, nx, ns, nobs, ninfo, nobs ? shape->info_keys : NULL,
                 nobs ? shape->n_info_keys : 0);
    if (nrnd) {
        out->n_randomized_items = nrnd;
        out->randomized_items = rnd->randomized_items;
        out->n_randomized = n * nrnd;
    }
    void *cols[] = {
        out->codes = calloc(n + 1, sizeof *out->codes),
        out->time = calloc(n + 1, sizeof *out->time),
        out->step_count = calloc(n + 1, sizeof *out->step_count),
        out->events = calloc(n + 1, sizeof *out->events),
        out->state = calloc(n * nx + 1, sizeof *out->state),
        out->sensors = calloc(n * ns + 1, sizeof *out->sensors),
        out->observation = calloc(n * nobs + 1, sizeof *out->observation),
        out->reward = calloc(n + 1, sizeof *out->reward),
        out->terminated = calloc(n + 1, sizeof *out->terminated),
        out->truncated = calloc(n + 1, sizeof *out->truncated),
        out->info = calloc(n * ninfo + 1, sizeof *out->info),
        out->randomized = calloc(n * nrnd + 1, sizeof *out->randomized),
        out->digests.data = calloc(n * RS_DIGEST_BYTES + 1, 1),
        out->errors = calloc(n + 1, sizeof *out->errors),
    };
    Robosim__V1__BatchError *bes = calloc(n + 1, sizeof *bes);
    Robosim__V1__Error *errs = calloc(n + 1, sizeof *errs);
    int ok = bes && errs;
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
        (*owned)[(*nowned)++] = cols[c];
        ok &= cols[c] != NULL;
    }
    (*owned)[(*nowned)++] = bes;
    (*owned)[(*nowned)++] = errs;
    if (!ok)
        return -1;
    out->digests.len = n * RS_DIGEST_BYTES;
    for (size_t i = 0; i < n; i++) {
        int k = plan->part[i];
        size_t j = plan->at[i];
        const Robosim__V1__Response *rp = k >= 0 ? pr[k].rp : NULL;
        const Robosim__V1__BatchArraysReply *r =
            rp && rp->result_case == ROBOSIM__V1__RESPONSE__RESULT_STEP_BATCH ? rp->step_batch->arrays
                                                                              : NULL;
        if (r && j >= r->n_codes)
            r = NULL;
        int code = 0;
        const char *message = NULL;
        if (!r) {
            world_error(plan, pr, i, &code, &message);
        } else if (r->codes[j] != ROBOSIM__V1__ERROR_CODE__OK) {
            code = -(int)r->codes[j];
            message = rs_strerror(code);
            /* a part lists its errors in its rows' order, which is the order its worlds come
             * in here: one pass over them for the whole batch (a search for each failed world
             * was quadratic in a batch of failures) */
            size_t *e = &pr[k].next_error;
            while (*e < r->n_errors && r->errors[*e]->index < j)
                (*e)++;
            if (*e < r->n_errors && r->errors[*e]->index == j && r->errors[*e]->error)
                message = r->errors[*e]->error->message;
        } else if (r->state_size != nx || r->sensor_size != ns || r->observation_size != nobs ||
                   r->info_size != ninfo) {
            code = RS_EINTERNAL;
            message = "its shard answered rows of another shape than the batch's";
        }
        if (code) {
            out->codes[i] = (Robosim__V1__ErrorCode)(-code);
            out->time[i] = NAN;
            copy_row(out->state, i, NULL, 0, nx, sizeof(double));
            copy_row(out->sensors, i, NULL, 0, ns, sizeof(double));
            copy_row(out->observation, i, NULL, 0, nobs, sizeof(double));
            copy_row(out->info, i, NULL, 0, ninfo, sizeof(double));
            copy_row(out->randomized, i, NULL, 0, nrnd, sizeof(double));
            if (nobs)
                out->reward[i] = NAN;
            robosim__v1__error__init(&errs[i]);
            errs[i].code = (Robosim__V1__ErrorCode)(-code);
            errs[i].message = (char *)message;
            robosim__v1__batch_error__init(&bes[i]);
            bes[i].index = (uint32_t)i;
            bes[i].world_id = in->world_ids[i];
            bes[i].error = &errs[i];
            out->errors[out->n_errors++] = &bes[i];
            continue;
        }
        out->codes[i] = ROBOSIM__V1__ERROR_CODE__OK;
        out->time[i] = r->time[j];
        out->step_count[i] = r->step_count[j];
        out->events[i] = r->events[j];
        copy_row(out->state, i, r->state, j, nx, sizeof(double));
        copy_row(out->sensors, i, r->sensors, j, ns, sizeof(double));
        copy_row(out->observation, i, r->observation, j, nobs, sizeof(double));
        copy_row(out->info, i, r->info, j, ninfo, sizeof(double));
        copy_row(out->digests.data, i, r->digests.data, j, RS_DIGEST_BYTES, 1);
        if (nobs) {
            out->reward[i] = r->reward[j];
            out->terminated[i] = r->terminated[j];
            out->truncated[i] = r->truncated[j];
        }
        /* randomized values by item name: NaN where its part's worlds draw no such item */
        for (size_t q = 0; q < nrnd; q++) {
            double v = NAN;
            for (size_t t = 0; t < r->n_randomized_items; t++)
                if (!strcmp(r->randomized_items[t], rnd->randomized_items[q]))
                    v = r->randomized[j * r->n_randomized_items + t];
            out->randomized[i * nrnd + q] = v;
        }
    }
    return 0;
}

int rs_batch_merge(const rs_batch_plan_t *plan, uint8_t *const *replies, const size_t *lens,
                   uint8_t **out, size_t *outlen)
{
    part_reply_t *pr = calloc((size_t)plan->nshards, sizeof *pr);
    void **owned = calloc(32, sizeof *owned);
    size_t nowned = 0;
    int rc = pr && owned ? 0 : -1;
    *out = NULL;
    for (int k = 0; rc == 0 && plan->arrays && k < plan->nshards; k++)
        if (replies[k])
            pr[k].rp = robosim__v1__response__unpack(NULL, lens[k], replies[k]);
    Robosim__V1__StepBatchReply reply = ROBOSIM__V1__STEP_BATCH_REPLY__INIT;
    Robosim__V1__BatchArraysReply arrays = ROBOSIM__V1__BATCH_ARRAYS_REPLY__INIT;
    if (rc == 0 && plan->arrays) {
        reply.arrays = &arrays;
        rc = merge_arrays(plan, pr, &arrays, &owned, &nowned);
    } else if (rc == 0) {
        rc = merge_items(plan, replies, lens, pr, out, outlen);
    }
    if (rc == 0 && plan->arrays) {
        Robosim__V1__Response rp = ROBOSIM__V1__RESPONSE__INIT;
        rp.id = plan->rq->id;
        rp.result_case = ROBOSIM__V1__RESPONSE__RESULT_STEP_BATCH;
        rp.step_batch = &reply;
        *outlen = robosim__v1__response__get_packed_size(&rp);
        if ((*out = malloc(*outlen ? *outlen : 1)))
            robosim__v1__response__pack(&rp, *out);
        else
            rc = -1;
    }
    for (size_t i = 0; owned && i < nowned; i++)
        free(owned[i]);
    free(owned);
    for (int k = 0; pr && k < plan->nshards; k++)
        if (pr[k].rp)
            robosim__v1__response__free_unpacked(pr[k].rp, NULL);
    free(pr);
    return rc;
}
