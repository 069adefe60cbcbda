/* StepBatch through the real server, and determinism: a batch gives bit-identical states to
 * stepping the same worlds one by one, for batch sizes 1, 16 and 256, on servers with 1 and 2
 * worker threads, in both forms (items, and the columnar arrays, for plain and task worlds);
 * and the same world (preset, seed, commands) follows the same trajectory across batch sizes,
 * thread counts and server processes. Errors stay with their item or world; bad batches
 * (empty, too large, a world twice, inputs of the wrong length) are refused as a whole. */
#include "rs_test.h"
#include "server_proc.h"

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name
#define ROUNDS 6
#define MAX_B 256

/* The fingerprint of world i (by creation order within a set) after ROUNDS rounds, per run:
 * [server][batch size index] */
static unsigned char *finals[2][3][MAX_B];
static size_t final_len[2][3][MAX_B];

static void state_bytes(Robosim__V1__State *s, unsigned char **out, size_t *n)
{
    uint64_t id = s->world_id, seq = s->seq;
    s->world_id = 0;
    s->seq = 0;
    *n = robosim__v1__state__get_packed_size(s);
    *out = malloc(*n);
    robosim__v1__state__pack(s, *out);
    s->world_id = id;
    s->seq = seq;
}

static int same_state(Robosim__V1__State *a, Robosim__V1__State *b)
{
    unsigned char *x, *y;
    size_t nx, ny;
    state_bytes(a, &x, &nx);
    state_bytes(b, &y, &ny);
    int same = nx == ny && memcmp(x, y, nx) == 0;
    free(x);
    free(y);
    return same;
}

/* The finger's force for world i in round r: pushes of varied strength, some pulls. */
static double force(int i, int r)
{
    return (r + i) % 5 == 4 ? -8.0 : 15.0 + 3.0 * (double)((i * 7 + r * 3) % 11);
}

/* nb pairs of finger worlds, a[i] and b[i] both seeded seed0 + i: one of each pair stepped in a
 * batch, the other one by one. */
static void create_twins(rsc_client_t *c, int nb, uint64_t seed0, uint64_t **a, uint64_t **b)
{
    rsc_error_t err;
    *a = calloc((size_t)nb, sizeof **a);
    *b = calloc((size_t)nb, sizeof **b);
    for (int i = 0; i < nb; i++) {
        int rc = rsc_create_world(c, "finger", NULL, 0, seed0 + (uint64_t)i, &(*a)[i], &err);
        rc |= rsc_create_world(c, "finger", NULL, 0, seed0 + (uint64_t)i, &(*b)[i], &err);
        CHECK(rc == 0, "create pair %d: %s", i, err.message);
    }
}

/* Destroy and free create_twins' worlds. */
static void destroy_twins(rsc_client_t *c, int nb, uint64_t *a, uint64_t *b)
{
    rsc_error_t err;
    for (int i = 0; i < nb; i++) {
        rsc_destroy_world(c, a[i], &err);
        rsc_destroy_world(c, b[i], &err);
    }
    free(a);
    free(b);
}

static void batch_equals_one_by_one(const char *endpoint, int server, int bi, int nb)
{
    rsc_error_t err;
    rsc_client_t *c = client_of(endpoint, 20000);
    uint64_t *a, *b;
    create_twins(c, nb, 1000, &a, &b);
    rsc_batch_item_t *items = calloc((size_t)nb, sizeof *items);
    rsc_command_t *cmds = calloc((size_t)nb, sizeof *cmds);
    double *f = calloc((size_t)nb, sizeof *f);
    int mismatches = 0, item_errors = 0;
    Robosim__V1__State **last = calloc((size_t)nb, sizeof *last);
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < nb; i++) {
            f[i] = force(i, r);
            cmds[i] = (rsc_command_t){"finger", &f[i], 1};
            items[i] = (rsc_batch_item_t){.world_id = a[i], .steps = (uint32_t)(1 + (i + r) % 4),
                                          .cmds = &cmds[i], .ncmds = 1};
        }
        Robosim__V1__StepBatchReply *br = NULL;
        int rc = rsc_step_batch(c, items, (size_t)nb, &br, &err);
        CHECK(rc == 0 && br && br->n_results == (size_t)nb, "batch of %d: %d %s", nb, rc,
              err.message);
        if (!br)
            break;
        for (int i = 0; i < nb; i++) {
            Robosim__V1__BatchResult *res = br->results[i];
            if (res->world_id != a[i] || res->result_case != ROBOSIM__V1__BATCH_RESULT__RESULT_STATE) {
                item_errors++;
                continue;
            }
            Robosim__V1__State *one = NULL;
            rc = rsc_step(c, b[i], items[i].steps, 0, &cmds[i], 1, &one, &err);
            if (rc != 0 || !same_state(res->state, one))
                mismatches++;
            rsc_free(one);
        }
        if (r == ROUNDS - 1)
            for (int i = 0; i < nb; i++)
                if (br->results[i]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_STATE)
                    state_bytes(br->results[i]->state, &finals[server][bi][i],
                                &final_len[server][bi][i]);
        rsc_free(br);
    }
    CHECK(item_errors == 0 && mismatches == 0,
          "server %d, batch %d: %d item errors, %d states differ from one-by-one stepping", server,
          nb, item_errors, mismatches);
    destroy_twins(c, nb, a, b);
    free(items);
    free(cmds);
    free(f);
    free(last);
    rsc_close(&c);
}

/* Per-item errors: each bad item gets its own error, the good ones are stepped. */
static void errors_per_item(const char *endpoint)
{
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(endpoint, 5000, &err), *other = rsc_connect(endpoint, 5000, &err);
    uint64_t good1, good2, foreign, badcmd, baddur;
    rsc_create_world(c, "finger", NULL, 0, 1, &good1, &err);
    rsc_create_world(c, "diff_drive", NULL, 0, 1, &good2, &err);
    rsc_create_world(other, "finger", NULL, 0, 1, &foreign, &err); /* c has no token for it */
    rsc_create_world(c, "finger", NULL, 0, 1, &badcmd, &err);
    rsc_create_world(c, "finger", NULL, 0, 1, &baddur, &err);
    double nan1[] = {NAN}, ok1[] = {5}, wheels[] = {2, 2};
    rsc_command_t cnan = {"finger", nan1, 1}, cok = {"finger", ok1, 1}, cw = {"robot", wheels, 2};
    rsc_batch_item_t items[] = {
        {.world_id = good1, .steps = 2, .cmds = &cok, .ncmds = 1},
        {.world_id = 987654, .steps = 1},
        {.world_id = foreign, .steps = 1},
        {.world_id = badcmd, .steps = 1, .cmds = &cnan, .ncmds = 1},
        {.world_id = good2, .duration = 0.05, .cmds = &cw, .ncmds = 1},
        {.world_id = baddur, .duration = 0.015},
    };
    int want[] = {0, CODE(NOT_FOUND), CODE(PERMISSION_DENIED), CODE(INVALID_ARGUMENT), 0,
                  CODE(INVALID_ARGUMENT)};
    const char *word[] = {"", "987654", "missing", "not finite", "", "whole number"};
    Robosim__V1__StepBatchReply *br = NULL;
    int rc = rsc_step_batch(c, items, 6, &br, &err);
    CHECK(rc == 0 && br && br->n_results == 6, "mixed batch accepted: %d %s", rc, err.message);
    for (size_t i = 0; br && i < 6; i++) {
        Robosim__V1__BatchResult *r = br->results[i];
        CHECK(r->world_id == items[i].world_id, "result %zu names its world", i);
        if (want[i] == 0) {
            CHECK(r->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_STATE && r->state &&
                      r->state->world_id == items[i].world_id && r->state->step_count > 0,
                  "item %zu stepped", i);
        } else {
            CHECK(r->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_ERROR && r->error &&
                      (int)r->error->code == want[i] && strstr(r->error->message, word[i]),
                  "item %zu: want error %d with '%s', got %s", i, want[i], word[i],
                  r->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_ERROR ? r->error->message
                                                                            : "a state");
        }
    }
    rsc_free(br);
    /* the refused items' worlds did not move */
    uint64_t unmoved[] = {foreign, badcmd, baddur};
    for (int i = 0; i < 3; i++) {
        Robosim__V1__State *s = NULL;
        rsc_get_state(c, unmoved[i], &s, &err);
        CHECK(s && s->step_count == 0, "world %llu unchanged", (unsigned long long)unmoved[i]);
        rsc_free(s);
    }

    /* refused as a whole */
    rc = rsc_step_batch(c, items, 0, &br, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "no items"), "empty batch: %d %s", rc,
          err.message);
    rsc_batch_item_t twice[] = {{.world_id = good1, .steps = 1},
                                {.world_id = good2, .steps = 1},
                                {.world_id = good1, .steps = 1}};
    rc = rsc_step_batch(c, twice, 3, &br, &err);
    char idw[64];
    snprintf(idw, sizeof idw, "world %llu appears twice", (unsigned long long)good1);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, idw), "a world twice: %d %s", rc,
          err.message);
    rsc_batch_item_t many[9];
    for (int i = 0; i < 9; i++)
        many[i] = (rsc_batch_item_t){.world_id = (uint64_t)(100 + i), .steps = 1};
    rc = rsc_step_batch(c, many, 9, &br, &err);
    CHECK(rc == CODE(RESOURCE_EXHAUSTED) && strstr(err.message, "limit of 8") &&
              strstr(err.message, "--max-batch"),
          "9 items over --max-batch 8: %d %s", rc, err.message);
    rsc_batch_item_t long_run[] = {{.world_id = good1, .steps = 600000},
                                   {.world_id = badcmd, .steps = 600000}};
    rc = rsc_step_batch(c, long_run, 2, &br, &err);
    CHECK(rc == CODE(RESOURCE_EXHAUSTED) && strstr(err.message, "1200000") &&
              strstr(err.message, "--max-steps-per-request"),
          "a batch asking for more control steps in all than one request may: %d %s", rc,
          err.message);
    Robosim__V1__State *s = NULL;
    rsc_get_state(c, good1, &s, &err);
    CHECK(s && s->step_count == 2, "refused batches step nothing: %llu",
          s ? (unsigned long long)s->step_count : 0ULL);
    rsc_free(s);

    /* a batch step is a mutation: it renews the lease, and the old token is refused after a
     * claim (covered in test_roles); a reader may not batch-step a world */
    rsc_batch_item_t foreign_only = {.world_id = good1, .steps = 1};
    rc = rsc_step_batch(other, &foreign_only, 1, &br, &err);
    CHECK(rc == 0 && br && br->results[0]->error &&
              br->results[0]->error->code == CODE(PERMISSION_DENIED),
          "another client's batch item is refused: %d", rc);
    rsc_free(br);
    rsc_close(&c);
    rsc_close(&other);
}

/* ---- StepBatch.arrays ---------------------------------------------------------------------- */

/* Whether n doubles are the same bits. */
static int same_bits(const double *a, const double *b, size_t n)
{
    return memcmp(a, b, n * sizeof(double)) == 0;
}

/* The rows of world i of an arrays reply equal State s bit for bit: time, step count, every
 * entity's state and sensors in spec order. */
static int row_is_state(const Robosim__V1__BatchArraysReply *a, size_t i,
                        const Robosim__V1__State *s)
{
    if (!s || a->time[i] != s->time || a->step_count[i] != s->step_count ||
        a->events[i] != s->n_events + s->events_dropped)
        return 0;
    size_t xo = 0, so = 0;
    for (size_t e = 0; e < s->n_entities; e++) {
        const Robosim__V1__EntityState *es = s->entities[e];
        if (xo + es->n_state > a->state_size || so + es->n_sensors > a->sensor_size ||
            !same_bits(a->state + i * a->state_size + xo, es->state, es->n_state) ||
            !same_bits(a->sensors + i * a->sensor_size + so, es->sensors, es->n_sensors))
            return 0;
        xo += es->n_state;
        so += es->n_sensors;
    }
    return xo == a->state_size && so == a->sensor_size;
}

/* The columnar batch gives, bit for bit, the states of stepping the same worlds one by one
 * (with contacts: the forces push and pull the object). */
static void arrays_equal_one_by_one(const char *endpoint, int nb)
{
    rsc_error_t err;
    rsc_client_t *c = client_of(endpoint, 20000);
    uint64_t *a, *b;
    create_twins(c, nb, 7000, &a, &b);
    double *f = calloc((size_t)nb, sizeof *f);
    int mismatches = 0, failed = 0, events = 0;
    for (int r = 0; r < ROUNDS; r++) {
        uint32_t steps = (uint32_t)(10 * (1 + r % 3)); /* long enough to touch */
        for (int i = 0; i < nb; i++)
            f[i] = force(i, r);
        Robosim__V1__BatchArraysReply *ar = NULL;
        int rc = rsc_step_arrays(c, a, (size_t)nb, steps, f, (size_t)nb, NULL, 0, &ar, &err);
        CHECK(rc == 0 && ar && ar->n_codes == (size_t)nb && ar->n_errors == 0 &&
                  ar->n_state == (size_t)nb * ar->state_size && ar->state_size > 0 &&
                  ar->n_sensors == (size_t)nb * ar->sensor_size && ar->observation_size == 0,
              "arrays batch of %d: %d %s", nb, rc, err.message);
        if (!ar)
            break;
        for (int i = 0; i < nb; i++) {
            if (ar->codes[i] != ROBOSIM__V1__ERROR_CODE__OK) {
                failed++;
                continue;
            }
            rsc_command_t cmd = {"finger", &f[i], 1};
            Robosim__V1__State *one = NULL;
            rc = rsc_step(c, b[i], steps, 0, &cmd, 1, &one, &err);
            if (rc != 0 || !row_is_state(ar, (size_t)i, one))
                mismatches++;
            events += ar->events[i] > 0;
            rsc_free(one);
        }
        rsc_free(ar);
    }
    CHECK(failed == 0 && mismatches == 0,
          "arrays batch of %d: %d worlds failed, %d rows differ from one-by-one stepping", nb,
          failed, mismatches);
    if (nb >= 16)
        CHECK(events > 0, "the arrays batch of %d saw contact events (%d)", nb, events);
    destroy_twins(c, nb, a, b);
    free(f);
    rsc_close(&c);
}

/* Task worlds through arrays: observation, reward and episode flags as a one-item batch with
 * the same action gives them. */
static void arrays_tasks(const char *endpoint)
{
    enum { NT = 6 };
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(endpoint, 20000, &err);
    uint64_t a[NT], b[NT];
    for (int i = 0; i < NT; i++) {
        int rc = rsc_create_task_world(c, "FingerPush-v0", NULL, NULL, 0, (uint64_t)(40 + i),
                                       &a[i], &err);
        rc |= rsc_create_task_world(c, "FingerPush-v0", "", NULL, 0, (uint64_t)(40 + i), &b[i],
                                    &err);
        CHECK(rc == 0, "create FingerPush-v0 pair %d: %s", i, err.message);
    }
    int mismatches = 0, failed = 0, rewarded = 0;
    for (int r = 0; r < 12; r++) {
        double act[NT];
        for (int i = 0; i < NT; i++)
            act[i] = 2.0 + 0.5 * (double)((i + r) % 4);
        Robosim__V1__BatchArraysReply *ar = NULL;
        int rc = rsc_step_arrays(c, a, NT, 2, NULL, 0, act, NT, &ar, &err);
        CHECK(rc == 0 && ar && ar->observation_size > 0 && ar->n_reward == NT &&
                  ar->n_observation == NT * ar->observation_size && ar->n_terminated == NT,
              "task arrays batch: %d %s (obs %u x %zu, %zu rewards, %zu flags)", rc, err.message,
              ar ? ar->observation_size : 0, ar ? ar->n_observation : 0, ar ? ar->n_reward : 0,
              ar ? ar->n_terminated : 0);
        if (!ar)
            break;
        for (int i = 0; i < NT; i++) {
            if (ar->codes[i] != ROBOSIM__V1__ERROR_CODE__OK) {
                failed++;
                continue;
            }
            rsc_batch_item_t it = {.world_id = b[i], .steps = 2, .action = &act[i], .naction = 1};
            Robosim__V1__StepBatchReply *br = NULL;
            rc = rsc_step_batch(c, &it, 1, &br, &err);
            const Robosim__V1__State *s =
                rc == 0 && br->results[0]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_STATE
                    ? br->results[0]->state
                    : NULL;
            const Robosim__V1__TaskStep *ts = s ? s->task : NULL;
            if (!ts || !row_is_state(ar, (size_t)i, s) ||
                ts->n_observation != ar->observation_size ||
                !same_bits(ar->observation + (size_t)i * ar->observation_size, ts->observation,
                           ts->n_observation) ||
                !same_bits(&ar->reward[i], &ts->reward, 1) ||
                ar->terminated[i] != ts->terminated || ar->truncated[i] != ts->truncated)
                mismatches++;
            rewarded += ar->reward[i] != 0.0;
            rsc_free(br);
        }
        rsc_free(ar);
    }
    CHECK(failed == 0 && mismatches == 0 && rewarded > 0,
          "task worlds by arrays = one by one: %d failed, %d differ, %d nonzero rewards", failed,
          mismatches, rewarded);
    /* commands for task worlds are that world's error; actions for plain worlds refuse the
     * batch */
    double f[NT] = {1, 1, 1, 1, 1, 1};
    Robosim__V1__BatchArraysReply *ar = NULL;
    int rc = rsc_step_arrays(c, a, NT, 1, f, NT, NULL, 0, &ar, &err);
    CHECK(rc == 0 && ar && ar->n_errors == NT && ar->codes[0] == ROBOSIM__V1__ERROR_CODE__INVALID_ARGUMENT &&
              strstr(ar->errors[0]->error->message, "Step.action"),
          "commands for a task world: that world's INVALID_ARGUMENT: %d", rc);
    rsc_free(ar);
    uint64_t plain;
    rsc_create_world(c, "finger", NULL, 0, 1, &plain, &err);
    rc = rsc_step_arrays(c, &plain, 1, 1, NULL, 0, f, 1, &ar, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "no task"),
          "actions for plain worlds refused: %d %s", rc, err.message);
    rsc_close(&c);
}

/* Raw StepBatch.arrays requests the C wrapper would not send. */
static int raw_arrays(rsc_client_t *c, Robosim__V1__BatchArrays *arr, int no_form,
                      rsc_error_t *err)
{
    Robosim__V1__StepBatch op = ROBOSIM__V1__STEP_BATCH__INIT;
    op.form_case = ROBOSIM__V1__STEP_BATCH__FORM_ARRAYS;
    op.arrays = arr;
    if (no_form) /* what a protocol 1.1 per-item batch (field 1, no longer read) looks like */
        op.form_case = ROBOSIM__V1__STEP_BATCH__FORM__NOT_SET;
    Robosim__V1__Request req = ROBOSIM__V1__REQUEST__INIT;
    req.op_case = ROBOSIM__V1__REQUEST__OP_STEP_BATCH;
    req.step_batch = &op;
    Robosim__V1__Response *r = NULL;
    int rc = rsc_call(c, &req, &r, err);
    if (rc == 0 && r->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR)
        rc = -1;
    rsc_free(r);
    return rc;
}

static void arrays_errors(const char *endpoint)
{
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(endpoint, 5000, &err), *other = rsc_connect(endpoint, 5000, &err);
    uint64_t good1, good2, foreign, badcmd, drive;
    rsc_create_world(c, "finger", NULL, 0, 1, &good1, &err);
    rsc_create_world(c, "finger", NULL, 0, 2, &good2, &err);
    rsc_create_world(other, "finger", NULL, 0, 1, &foreign, &err);
    rsc_create_world(c, "finger", NULL, 0, 1, &badcmd, &err);
    rsc_create_world(c, "diff_drive", NULL, 0, 1, &drive, &err);
    uint64_t ids[] = {good1, 987654, foreign, badcmd, drive, good2};
    double f[] = {5, 5, 5, NAN, 5, 1e9};
    int want[] = {0, CODE(NOT_FOUND), CODE(PERMISSION_DENIED), CODE(INVALID_ARGUMENT),
                  CODE(INVALID_ARGUMENT), CODE(OUT_OF_RANGE)};
    const char *word[] = {"", "987654", "missing", "not finite", "not like", "outside"};
    Robosim__V1__BatchArraysReply *ar = NULL;
    int rc = rsc_step_arrays(c, ids, 6, 1, f, 6, NULL, 0, &ar, &err);
    CHECK(rc == 0 && ar && ar->n_codes == 6 && ar->n_errors == 5, "mixed arrays batch: %d %s",
          rc, err.message);
    for (size_t i = 0, k = 0; ar && i < 6; i++) {
        CHECK((int)ar->codes[i] == want[i], "world_ids[%zu]: code %d, want %d", i,
              (int)ar->codes[i], want[i]);
        if (want[i] == 0) {
            CHECK(ar->step_count[i] == 1 && !isnan(ar->state[i * ar->state_size]),
                  "world_ids[%zu] stepped", i);
            continue;
        }
        CHECK(isnan(ar->time[i]) && isnan(ar->state[i * ar->state_size]) &&
                  isnan(ar->sensors[i * ar->sensor_size]),
              "world_ids[%zu]: NaN rows", i);
        const Robosim__V1__BatchError *be = k < ar->n_errors ? ar->errors[k++] : NULL;
        CHECK(be && be->index == i && be->world_id == ids[i] && be->error &&
                  (int)be->error->code == want[i] && strstr(be->error->message, word[i]),
              "world_ids[%zu]: error '%s' with '%s'", i,
              be && be->error ? be->error->message : "none", word[i]);
    }
    rsc_free(ar);
    uint64_t unmoved[] = {foreign, badcmd, drive, good2};
    for (int i = 0; i < 4; i++) {
        Robosim__V1__State *s = NULL;
        rsc_get_state(c, unmoved[i], &s, &err);
        CHECK(s && s->step_count == 0, "world %llu unchanged", (unsigned long long)unmoved[i]);
        rsc_free(s);
    }

    /* refused as a whole, nothing stepped */
    rc = rsc_step_arrays(c, ids, 0, 1, NULL, 0, NULL, 0, &ar, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "no world_ids"),
          "empty arrays batch: %d %s", rc, err.message);
    uint64_t twice[] = {good1, good2, good1};
    rc = rsc_step_arrays(c, twice, 3, 1, NULL, 0, NULL, 0, &ar, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "appears twice"),
          "a world twice: %d %s", rc, err.message);
    uint64_t pair[] = {good1, good2};
    rc = rsc_step_arrays(c, pair, 2, 1, f, 3, NULL, 0, &ar, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "holds 3 values") &&
              strstr(err.message, "take 2"),
          "commands of the wrong length: %d %s", rc, err.message);
    rc = rsc_step_arrays(c, pair, 2, 1, f, 2, f, 2, &ar, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "both"),
          "commands and actions: %d %s", rc, err.message);
    rc = rsc_step_arrays(c, pair, 2, 600000, NULL, 0, NULL, 0, &ar, &err);
    CHECK(rc == CODE(RESOURCE_EXHAUSTED) && strstr(err.message, "1200000"),
          "more control steps in all than a request may: %d %s", rc, err.message);
    uint64_t many[9];
    for (int i = 0; i < 9; i++)
        many[i] = (uint64_t)(100 + i);
    rc = rsc_step_arrays(c, many, 9, 1, NULL, 0, NULL, 0, &ar, &err);
    CHECK(rc == CODE(RESOURCE_EXHAUSTED) && strstr(err.message, "--max-batch"),
          "9 worlds over --max-batch 8: %d %s", rc, err.message);
    char *tok[] = {(char *)rsc_world_token(c, good1)};
    Robosim__V1__BatchArrays arr = ROBOSIM__V1__BATCH_ARRAYS__INIT;
    arr.n_world_ids = 2;
    arr.world_ids = pair;
    arr.n_tokens = 1;
    arr.tokens = tok;
    rc = raw_arrays(c, &arr, 0, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "1 tokens for 2 worlds"), "tokens not one per world: %s",
          err.message);
    arr.n_tokens = 0;
    rc = raw_arrays(c, &arr, 1, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "neither items nor arrays"),
          "a batch with neither form: %s", err.message);
    Robosim__V1__State *s = NULL;
    rsc_get_state(c, good1, &s, &err);
    CHECK(s && s->step_count == 1, "refused arrays batches step nothing: %llu",
          s ? (unsigned long long)s->step_count : 0ULL);
    rsc_free(s);
    /* the server goes on serving */
    rc = rsc_step_arrays(c, pair, 2, 1, NULL, 0, NULL, 0, &ar, &err);
    CHECK(rc == 0 && ar && ar->n_errors == 0 && ar->step_count[0] == 2,
          "after the refusals the server steps the batch: %d %s", rc, err.message);
    rsc_free(ar);
    rsc_close(&c);
    rsc_close(&other);
}

/* MonteCarlo (Klamp't's monteCarloSim) through the C client against a closed form: a finger
 * coasting from v0 ~ uniform(0.1, 0.9) m/s against quadratic drag (m = c = 1) from x0 ~
 * normal(0, 0.05) m is at x0 + ln(1 + v0 t) with v = v0 / (1 + v0 t). Each server's answers
 * are kept in mc_final[server] to compare across thread counts. */
#define MC_RUNS 64
static double mc_final[2][MC_RUNS * 2];

static void monte_carlo_closed_form(const char *endpoint, int server)
{
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(endpoint, 10000, &err);
    CHECK(c != NULL, "connect: %s", err.message);
    if (!c)
        return;
    double far = 100.0;
    rsc_param_t p = {"finger", "object_x0", &far, 1};
    uint64_t wid = 0;
    CHECK(rsc_create_world(c, "finger", &p, 1, 0, &wid, &err) == 0, "create: %s", err.message);
    rsc_sampler_t smp[2] = {{"finger.finger_v0", "uniform", 0.1, 0.9},
                            {"finger.finger_x0", "normal", 0.0, 0.05}};
    const char *ret[2] = {"finger.x_f", "finger.v_f"};
    Robosim__V1__MonteCarloReply *r = NULL;
    int rc = rsc_monte_carlo(c, wid, MC_RUNS, 42, 0, 2.0, smp, 2, ret, 2, &r, &err);
    CHECK(rc == 0 && r && r->runs == MC_RUNS && r->n_initial == 2 * MC_RUNS &&
              r->n_final == 2 * MC_RUNS,
          "monte carlo: %s", err.message);
    if (rc == 0) {
        double t = 2.0;
        CHECK(r->time == t, "runs end at %.17g s", r->time);
        for (int i = 0; i < MC_RUNS; i++) {
            double v0 = r->initial[2 * i], x0 = r->initial[2 * i + 1];
            CHECK(v0 >= 0.1 && v0 < 0.9, "run %d: v0 %g", i, v0);
            CHECK_REL(r->final[2 * i], x0 + log(1 + v0 * t), 1e-6, 1e-8);
            CHECK_REL(r->final[2 * i + 1], v0 / (1 + v0 * t), 1e-6, 1e-8);
        }
        memcpy(mc_final[server], r->final, sizeof mc_final[server]);
    }
    rsc_free(r);
    /* a bad request is refused whole, with a message */
    smp[0].dist = "cauchy";
    rc = rsc_monte_carlo(c, wid, 4, 42, 0, 1.0, smp, 2, ret, 2, &r, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "cauchy"), "cauchy: %d %s", rc,
          err.message);
    rsc_close(&c);
}

/* StepBatch items through the C client, each asking for its own parts of State (protocol
 * 1.2's Step.parts): an item's reply carries only those; an item without parts gets all; an
 * unknown part is that item's INVALID_ARGUMENT; a parts count without the array is refused by
 * the client before anything is sent. */
static void items_with_parts(const char *endpoint)
{
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(endpoint, 20000, &err);
    uint64_t plain = 0, task = 0, all = 0, bad = 0;
    int rc = rsc_create_world(c, "finger", NULL, 0, 1, &plain, &err);
    rc |= rsc_create_task_world(c, "FingerPush-v0", NULL, NULL, 0, 7, &task, &err);
    rc |= rsc_create_world(c, "finger", NULL, 0, 1, &all, &err);
    rc |= rsc_create_world(c, "finger", NULL, 0, 1, &bad, &err);
    CHECK(rc == 0, "worlds for the parts batch: %s", err.message);
    const Robosim__V1__StatePart sensors[] = {ROBOSIM__V1__STATE_PART__STATE_PART_SENSORS};
    const Robosim__V1__StatePart task_only[] = {ROBOSIM__V1__STATE_PART__STATE_PART_TASK};
    const Robosim__V1__StatePart unknown[] = {(Robosim__V1__StatePart)99};
    double act = 2.0;
    rsc_batch_item_t items[] = {
        {.world_id = plain, .steps = 3, .parts = sensors, .nparts = 1},
        {.world_id = task, .steps = 3, .action = &act, .naction = 1, .parts = task_only,
         .nparts = 1},
        {.world_id = all, .steps = 3},
        {.world_id = bad, .steps = 3, .parts = unknown, .nparts = 1},
    };
    Robosim__V1__StepBatchReply *br = NULL;
    rc = rsc_step_batch(c, items, 4, &br, &err);
    CHECK(rc == 0 && br && br->n_results == 4, "parts batch: %d %s", rc, err.message);
    const Robosim__V1__State *s[4] = {NULL};
    for (size_t i = 0; rc == 0 && br && i < br->n_results && i < 4; i++)
        if (br->results[i]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_STATE)
            s[i] = br->results[i]->state;
    CHECK(s[0] && s[0]->step_count == 3 && s[0]->n_entities == 1 && s[0]->entities[0] &&
              s[0]->entities[0]->n_state == 0 && s[0]->entities[0]->n_sensors > 0 &&
              !s[0]->stats && !s[0]->task,
          "sensors only (%zu entities)", s[0] ? s[0]->n_entities : 0);
    CHECK(s[1] && s[1]->step_count == 3 && s[1]->task && s[1]->task->n_observation > 0 &&
              s[1]->n_entities == 0 && !s[1]->stats,
          "task row only (no entities without STATE or SENSORS)");
    CHECK(s[2] && s[2]->n_entities == 1 && s[2]->entities[0]->n_state > 0 && s[2]->entities[0]->n_sensors > 0 &&
              s[2]->stats,
          "no parts: the whole state");
    CHECK(!s[3] && rc == 0 && br && br->n_results == 4 && br->results[3]->error &&
              br->results[3]->error->code == ROBOSIM__V1__ERROR_CODE__INVALID_ARGUMENT,
          "an unknown part is the item's INVALID_ARGUMENT: %s",
          rc == 0 && br && br->n_results == 4 && br->results[3]->error
              ? br->results[3]->error->message
              : "");
    rsc_free(br);
    br = NULL;
    rsc_batch_item_t no_array = {.world_id = plain, .steps = 1, .nparts = 2};
    CHECK(rsc_step_batch(c, &no_array, 1, &br, &err) == RSC_EARG && !br,
          "parts announced without the array: %s", err.message);
    rsc_close(&c);
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    static const int sizes[] = {1, 16, MAX_B};
    for (int server = 0; server < 2; server++) {
        const char *threads = server ? "2" : "1";
        const char *extra[] = {"--threads", threads, "--max-worlds", "600",
                               "--max-worlds-per-client", "0", "--max-worlds-share", "1",
                               "--no-world", NULL};
        server_proc_t sp;
        CHECK(server_start(&sp, binary, extra) == 0, "server with --threads %s", threads);
        if (sp.pid <= 0)
            return rs_test_done("test_batch");
        for (int bi = 0; bi < 3; bi++) {
            batch_equals_one_by_one(sp.endpoint, server, bi, sizes[bi]);
            arrays_equal_one_by_one(sp.endpoint, sizes[bi]);
        }
        if (server == 1)
            arrays_tasks(sp.endpoint);
        monte_carlo_closed_form(sp.endpoint, server);
        CHECK(server_stop(&sp) == 0, "server exits 0");
    }
    /* determinism: world i ends in the same state whatever the batch size, thread count and
     * server process */
    int differ = 0, compared = 0;
    for (int server = 0; server < 2; server++)
        for (int bi = 0; bi < 3; bi++)
            for (int i = 0; i < sizes[bi]; i++) {
                compared++;
                const unsigned char *ref = finals[0][2][i];
                if (!ref || !finals[server][bi][i] || final_len[server][bi][i] != final_len[0][2][i] ||
                    memcmp(ref, finals[server][bi][i], final_len[0][2][i]) != 0)
                    differ++;
            }
    CHECK(differ == 0 && compared == 2 * (1 + 16 + MAX_B),
          "the same world is bit-identical across batch sizes, thread counts and processes "
          "(%d of %d differ)",
          differ, compared);
    for (int server = 0; server < 2; server++)
        for (int bi = 0; bi < 3; bi++)
            for (int i = 0; i < MAX_B; i++)
                free(finals[server][bi][i]);
    CHECK(memcmp(mc_final[0], mc_final[1], sizeof mc_final[0]) == 0,
          "MonteCarlo gives the same numbers with 1 and 2 worker threads");

    const char *extra[] = {"--max-batch", "8", NULL};
    server_proc_t sp;
    CHECK(server_start(&sp, binary, extra) == 0, "server with --max-batch 8");
    if (sp.pid > 0) {
        errors_per_item(sp.endpoint);
        arrays_errors(sp.endpoint);
        items_with_parts(sp.endpoint);
        CHECK(server_stop(&sp) == 0, "server exits 0");
    }
    return rs_test_done("test_batch");
}
