/* Writes the fuzzers' seed corpora from valid requests, so nothing binary is committed:
 *   make_corpus REQUEST_DIR SNAPSHOT_DIR
 * REQUEST_DIR gets one file per seed for fuzz_request (a sequence of requests, fuzz_server.h):
 * Hello, ListWorlds, CreateWorld for every preset and task, Step with commands and with task
 * actions, SetForce, SetParams, SetSchedule, SetTarget, GetWorkspace, Reset, GetState{snapshot},
 * SetState and ForkWorld with a snapshot the harness's own server made (so it verifies whatever
 * that server's snapshot key), StepBatch items and arrays, Claim, DestroyWorld; and every other
 * op of the dispatch table from its row and the proto's descriptors (table_seeds). SNAPSHOT_DIR
 * gets, for fuzz_snapshot, each preset's and task's snapshot (fresh and after some steps)
 * behind its world selector byte. */
#include "fuzz_server.h"
#include "rs_log.h"
#include "rs_snapshot.h"
#include "rs_task.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static rs_server_t *srv; /* answers the generator's questions (specs, snapshots) */
static const char *req_dir;
static int nseeds;

/* one seed being built: its requests, packed */
static uint8_t seed_buf[1 << 16];
static size_t seed_len;

static void die(const char *what)
{
    fprintf(stderr, "make_corpus: %s\n", what);
    exit(1);
}

/* Append `rq` to the seed being built (with world_id and the fuzz token). */
static void add(Robosim__V1__Request *rq, uint64_t world_id)
{
    rq->id = (uint64_t)nseeds * 100 + seed_len % 97 + 1;
    rq->world_id = world_id;
    rq->token = FUZZ_TOKEN;
    size_t n = robosim__v1__request__get_packed_size(rq);
    if (n > 0xffff || seed_len + 2 + n > sizeof seed_buf)
        die("seed too large");
    seed_buf[seed_len] = (uint8_t)n;
    seed_buf[seed_len + 1] = (uint8_t)(n >> 8);
    robosim__v1__request__pack(rq, seed_buf + seed_len + 2);
    seed_len += 2 + n;
}

static void write_file(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        die(path);
}

/* Replay a seed on a fresh server as the harness does: every request must succeed, so the
 * seeds reach past the checks into the operations. */
static void check_seed(const char *name)
{
    rs_server_t *s = fuzz_server_new();
    size_t at = 0;
    for (int k = 0; at + 2 <= seed_len; k++) {
        size_t n = (size_t)seed_buf[at] | (size_t)seed_buf[at + 1] << 8;
        const uint8_t *out;
        size_t outlen;
        rs_server_handle(s, seed_buf + at + 2, n, &out, &outlen);
        fuzz_fix_tokens(s);
        Robosim__V1__Response *rp = robosim__v1__response__unpack(NULL, outlen, out);
        if (!rp || rp->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR) {
            fprintf(stderr, "make_corpus: seed %s, request %d: %s\n", name, k,
                    rp ? rp->error->message : "unreadable reply");
            exit(1);
        }
        robosim__v1__response__free_unpacked(rp, NULL);
        at += 2 + n;
    }
    rs_server_destroy(&s);
}

/* The ops (Request field numbers) the seeds written so far hold: every op in the dispatch
 * table gets at least a seed from its row (table_seeds). */
static int seeded[64];

/* Note the ops of the seed built so far. */
static void note_ops(void)
{
    for (size_t at = 0; at + 2 <= seed_len;) {
        size_t n = (size_t)seed_buf[at] | (size_t)seed_buf[at + 1] << 8;
        Robosim__V1__Request *rq = robosim__v1__request__unpack(NULL, n, seed_buf + at + 2);
        if (rq && (unsigned)rq->op_case < 64)
            seeded[rq->op_case] = 1;
        robosim__v1__request__free_unpacked(rq, NULL);
        at += 2 + n;
    }
}

/* Write the seed built so far and start another. */
static void emit(const char *name)
{
    char file[128];
    check_seed(name);
    note_ops();
    snprintf(file, sizeof file, "%03d-%s", nseeds++, name);
    write_file(req_dir, file, seed_buf, seed_len);
    seed_len = 0;
    /* the next seed is replayed on a fresh server too: ids from 2 again */
    rs_server_destroy(&srv);
    if (!(srv = fuzz_server_new()))
        die("cannot make the fuzz server");
}

/* Ask the generator's server; the reply stays valid for the next 63 asks. */
static Robosim__V1__Response *ask_maybe(Robosim__V1__Request *rq, uint64_t world_id, int must)
{
    static Robosim__V1__Response *ring[64];
    static unsigned next;
    Robosim__V1__Response **slot = &ring[next++ % 64], *last;
    if (*slot)
        robosim__v1__response__free_unpacked(*slot, NULL);
    rq->world_id = world_id;
    rq->token = FUZZ_TOKEN;
    size_t n = robosim__v1__request__get_packed_size(rq);
    uint8_t *buf = malloc(n + 1);
    const uint8_t *out;
    size_t outlen;
    robosim__v1__request__pack(rq, buf);
    rs_server_handle(srv, buf, n, &out, &outlen);
    free(buf);
    fuzz_fix_tokens(srv);
    last = *slot = robosim__v1__response__unpack(NULL, outlen, out);
    if (!last || last->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR) {
        if (must)
            die(last ? last->error->message : "unreadable reply");
        return NULL;
    }
    return last;
}

static Robosim__V1__Response *ask(Robosim__V1__Request *rq, uint64_t world_id)
{
    return ask_maybe(rq, world_id, 1);
}

#define REQ(var, field, CASE, Type, init)                                                      \
    Robosim__V1__Request var = ROBOSIM__V1__REQUEST__INIT;                                     \
    Robosim__V1__##Type var##_op = init;                                                       \
    var.op_case = ROBOSIM__V1__REQUEST__OP_##CASE;                                             \
    var.field = &var##_op

/* A Param setting entity's (NULL: the world's) parameter name to values[n]. */
static Robosim__V1__Param param_of(char *entity, char *name, size_t n, double *values)
{
    Robosim__V1__Param prm = ROBOSIM__V1__PARAM__INIT;
    if (entity)
        prm.entity = entity;
    prm.name = name;
    prm.n_values = n;
    prm.values = values;
    return prm;
}

/* A SetParams request on world 1 carrying the one Param *pp. */
static void add_set_params(Robosim__V1__Param **pp)
{
    REQ(rq, set_params, SET_PARAMS, SetParams, ROBOSIM__V1__SET_PARAMS__INIT);
    rq_op.n_params = 1;
    rq_op.params = pp;
    add(&rq, 1);
}

/* A Step on world 1 of `steps` control steps, or (steps 0) of `duration` seconds. */
static void add_step(uint32_t steps, double duration)
{
    REQ(rq, step, STEP, Step, ROBOSIM__V1__STEP__INIT);
    if (steps) { /* steps and duration share the length oneof's storage: set one */
        rq_op.length_case = ROBOSIM__V1__STEP__LENGTH_STEPS;
        rq_op.steps = steps;
    } else {
        rq_op.length_case = ROBOSIM__V1__STEP__LENGTH_DURATION;
        rq_op.duration = duration;
    }
    add(&rq, 1);
}

/* A world's snapshot from the generator's server (a copy the caller frees). */
static ProtobufCBinaryData snapshot_of(uint64_t id)
{
    REQ(rq, get_state, GET_STATE, GetState, ROBOSIM__V1__GET_STATE__INIT);
    rq_op.snapshot = 1;
    Robosim__V1__Response *rp = ask(&rq, id);
    ProtobufCBinaryData b = {rp->get_state->snapshot.len, malloc(rp->get_state->snapshot.len + 1)};
    memcpy(b.data, rp->get_state->snapshot.data, b.len);
    return b;
}

/* Step world `id` with one command per entity of its spec (values from the actuator bounds). */
static void add_step_commands(uint64_t id, uint32_t steps)
{
    REQ(sq, get_spec, GET_SPEC, GetSpec, ROBOSIM__V1__GET_SPEC__INIT);
    Robosim__V1__Spec *spec = ask(&sq, id)->get_spec;
    Robosim__V1__ActuatorCommand cmds[8], *pcmds[8];
    double vals[8][8];
    size_t nc = 0;
    for (size_t e = 0; e < spec->n_entities && nc < 8; e++, nc++) {
        Robosim__V1__EntitySpec *es = spec->entities[e];
        robosim__v1__actuator_command__init(&cmds[nc]);
        cmds[nc].entity = es->name;
        for (size_t a = 0; a < es->n_actuators && a < 8; a++) {
            double lo = es->actuators[a]->lower, hi = es->actuators[a]->upper;
            vals[nc][a] = isfinite(lo) && isfinite(hi) ? lo + 0.6 * (hi - lo) : 0.5;
        }
        cmds[nc].n_values = es->n_actuators < 8 ? es->n_actuators : 8;
        cmds[nc].values = vals[nc];
        pcmds[nc] = &cmds[nc];
    }
    REQ(rq, step, STEP, Step, ROBOSIM__V1__STEP__INIT);
    rq_op.steps = steps;
    rq_op.length_case = ROBOSIM__V1__STEP__LENGTH_STEPS;
    rq_op.n_commands = nc;
    rq_op.commands = pcmds;
    add(&rq, id);
}

/* Step task world `id` with a mid-range action. */
static void add_step_action(uint64_t id, uint32_t steps)
{
    REQ(sq, get_spec, GET_SPEC, GetSpec, ROBOSIM__V1__GET_SPEC__INIT);
    Robosim__V1__Spec *spec = ask(&sq, id)->get_spec;
    double action[16];
    size_t n = 0;
    for (size_t i = 0; spec->task && i < spec->task->n_action; i++)
        for (uint32_t k = 0; k < spec->task->action[i]->size && n < 16; k++) {
            double lo = spec->task->action[i]->lower, hi = spec->task->action[i]->upper;
            action[n++] = isfinite(lo) && isfinite(hi) ? lo + 0.7 * (hi - lo) : 0.1;
        }
    REQ(rq, step, STEP, Step, ROBOSIM__V1__STEP__INIT);
    rq_op.steps = steps;
    rq_op.length_case = ROBOSIM__V1__STEP__LENGTH_STEPS;
    rq_op.n_action = n;
    rq_op.action = action;
    add(&rq, id);
}

static uint64_t create(const char *preset, const char *task)
{
    REQ(rq, create_world, CREATE_WORLD, CreateWorld, ROBOSIM__V1__CREATE_WORLD__INIT);
    rq_op.preset = (char *)(preset ? preset : "");
    rq_op.task = (char *)(task ? task : "");
    rq_op.seed = 7;
    add(&rq, 0);
    return ask(&rq, 0)->create_world->world->world_id;
}

static void request_seeds(void)
{
    {
        REQ(rq, hello, HELLO, Hello, ROBOSIM__V1__HELLO__INIT);
        rq_op.major = RS_PROTOCOL_MAJOR;
        rq_op.minor = RS_PROTOCOL_MINOR;
        rq_op.client_name = "fuzz";
        add(&rq, 0);
        REQ(lq, list_worlds, LIST_WORLDS, ListWorlds, ROBOSIM__V1__LIST_WORLDS__INIT);
        add(&lq, 0);
        emit("hello-list");
    }
    /* every preset and task: create, spec, step, state */
    for (const char *const *p = rs_preset_names(); *p; p++) {
        uint64_t id = create(*p, NULL);
        REQ(sq, get_spec, GET_SPEC, GetSpec, ROBOSIM__V1__GET_SPEC__INIT);
        add(&sq, id);
        add_step_commands(id, 3);
        REQ(gq, get_state, GET_STATE, GetState, ROBOSIM__V1__GET_STATE__INIT);
        add(&gq, id);
        emit(*p);
    }
    for (const char *const *t = rs_task_names(); *t; t++) {
        uint64_t id = create(NULL, *t);
        add_step_action(id, 2);
        REQ(xq, reset, RESET, Reset, ROBOSIM__V1__RESET__INIT);
        xq_op.seed = 11;
        xq_op.seed_given_case = ROBOSIM__V1__RESET__SEED_GIVEN_SEED;
        add(&xq, id);
        add_step_action(id, 1);
        emit(*t);
    }
    /* world 1 (workshop): each command operation */
    add_step_commands(1, 4);
    emit("step-commands");
    {
        double v[] = {40.0};
        REQ(rq, set_force, SET_FORCE, SetForce, ROBOSIM__V1__SET_FORCE__INIT);
        rq_op.entity = "finger";
        rq_op.n_values = 1;
        rq_op.values = v;
        add(&rq, 1);
        add_step(2, 0);
        emit("set-force-step");
    }
    {
        REQ(spq, get_spec, GET_SPEC, GetSpec, ROBOSIM__V1__GET_SPEC__INIT);
        Robosim__V1__Spec *spec = ask(&spq, 1)->get_spec;
        for (size_t i = 0; i < spec->n_world_params; i++) {
            Robosim__V1__Param prm = param_of(NULL, spec->world_params[i]->name,
                                              spec->world_params[i]->n_values,
                                              spec->world_params[i]->values),
                               *pp = &prm;
            add_set_params(&pp);
            char name[64];
            snprintf(name, sizeof name, "set-params-%s", prm.name);
            emit(name);
        }
        /* an entity parameter, and parameters at creation */
        Robosim__V1__EntitySpec *es = spec->entities[0];
        if (es->n_params) {
            Robosim__V1__Param prm = param_of(es->name, es->params[0]->name,
                                              es->params[0]->n_values, es->params[0]->values),
                               *pp = &prm;
            add_set_params(&pp);
            REQ(cq, create_world, CREATE_WORLD, CreateWorld, ROBOSIM__V1__CREATE_WORLD__INIT);
            cq_op.preset = "finger";
            cq_op.n_params = 1;
            cq_op.params = &pp;
            add(&cq, 0);
            emit("params-entity");
        }
    }
    {
        double t[] = {0.01, 0.05, 0.2}, v[] = {20.0, -5.0, 0.0};
        REQ(rq, set_schedule, SET_SCHEDULE, SetSchedule, ROBOSIM__V1__SET_SCHEDULE__INIT);
        rq_op.entity = "finger";
        rq_op.actuator = 0;
        rq_op.n_times = rq_op.n_values = 3;
        rq_op.times = t;
        rq_op.values = v;
        add(&rq, 1);
        add_step(0, 0.05);
        emit("set-schedule-step");
    }
    REQ(spq, get_spec, GET_SPEC, GetSpec, ROBOSIM__V1__GET_SPEC__INIT);
    Robosim__V1__Spec *spec = ask(&spq, 1)->get_spec;
    for (size_t e = 0; e < spec->n_entities; e++) {
        char *name = spec->entities[e]->name;
        /* a target the entity reaches: the first of a grid its workspace says it does */
        double grid[2 * 81], target[2];
        size_t ng = 0;
        for (int gx = -4; gx <= 4; gx++)
            for (int gy = -4; gy <= 4; gy++)
                grid[ng++] = 0.05 * gx, grid[ng++] = 0.05 * gy;
        REQ(gq, get_workspace, GET_WORKSPACE, GetWorkspace, ROBOSIM__V1__GET_WORKSPACE__INIT);
        gq_op.entity = name;
        gq_op.n_query = ng;
        gq_op.query = grid;
        Robosim__V1__Response *ws = ask_maybe(&gq, 1, 0);
        size_t k = 0;
        while (ws && k < ws->get_workspace->n_reachable && !ws->get_workspace->reachable[k])
            k++;
        if (!ws || k >= ws->get_workspace->n_reachable)
            continue; /* an entity without a task space */
        target[0] = grid[2 * k];
        target[1] = grid[2 * k + 1];
        REQ(rq, set_target, SET_TARGET, SetTarget, ROBOSIM__V1__SET_TARGET__INIT);
        rq_op.entity = name;
        rq_op.n_target = 2;
        rq_op.target = target;
        if (!ask_maybe(&rq, 1, 0))
            continue;
        add(&rq, 1);
        double q[] = {0.1, 0.1, 2.0, 0.0};
        REQ(wq, get_workspace, GET_WORKSPACE, GetWorkspace, ROBOSIM__V1__GET_WORKSPACE__INIT);
        wq_op.entity = name;
        wq_op.samples = 8;
        wq_op.n_query = 4;
        wq_op.query = q;
        add(&wq, 1);
        add_step(3, 0);
        char file[64];
        snprintf(file, sizeof file, "target-workspace-%s", name);
        emit(file);
    }
    /* snapshots: the server's own, after some steps */
    {
        REQ(sq, step, STEP, Step, ROBOSIM__V1__STEP__INIT);
        sq_op.steps = 5;
        sq_op.length_case = ROBOSIM__V1__STEP__LENGTH_STEPS;
        ask(&sq, 1);
        ProtobufCBinaryData snap = snapshot_of(1);
        REQ(gq, get_state, GET_STATE, GetState, ROBOSIM__V1__GET_STATE__INIT);
        gq_op.snapshot = 1;
        add(&gq, 1);
        emit("get-state-snapshot");
        REQ(rq, set_state, SET_STATE, SetState, ROBOSIM__V1__SET_STATE__INIT);
        rq_op.snapshot = snap;
        add(&rq, 1);
        add(&sq, 1);
        emit("set-state-step");
        REQ(fq, fork_world, FORK_WORLD, ForkWorld, ROBOSIM__V1__FORK_WORLD__INIT);
        fq_op.snapshot = snap;
        add(&fq, 1);
        add(&sq, 2);
        emit("fork-snapshot-step");
        REQ(f0, fork_world, FORK_WORLD, ForkWorld, ROBOSIM__V1__FORK_WORLD__INIT);
        add(&f0, 1);
        add(&sq, 2);
        emit("fork-step");
        free(snap.data);
        /* a task world's snapshot */
        uint64_t id = create(NULL, rs_task_names()[0]);
        add_step_action(id, 3);
        ask(&sq, id);
        seed_len = 0; /* only the requests below go into this seed */
        snap = snapshot_of(id);
        REQ(tc, create_world, CREATE_WORLD, CreateWorld, ROBOSIM__V1__CREATE_WORLD__INIT);
        tc_op.task = (char *)rs_task_names()[0];
        add(&tc, 0);
        REQ(ts, set_state, SET_STATE, SetState, ROBOSIM__V1__SET_STATE__INIT);
        ts_op.snapshot = snap;
        add(&ts, 2);
        add_step_action(id, 1);
        emit("task-set-state");
        free(snap.data);
    }
    /* Monte Carlo runs of world 1 (the workshop): the arm's joint 1 drawn, uniform and normal */
    {
        Robosim__V1__Sampler smp[2] = {ROBOSIM__V1__SAMPLER__INIT, ROBOSIM__V1__SAMPLER__INIT};
        Robosim__V1__Sampler *psmp[2] = {&smp[0], &smp[1]};
        char *returns[2] = {"arm.theta1", "finger.tip_force"};
        smp[0].item = "arm.theta0[0]";
        smp[0].dist = "uniform";
        smp[0].a = -1.0;
        smp[0].b = 1.0;
        smp[1].item = "finger.finger_x0";
        smp[1].dist = "normal";
        smp[1].a = 0.0;
        smp[1].b = 0.1;
        REQ(mq, monte_carlo, MONTE_CARLO, MonteCarlo, ROBOSIM__V1__MONTE_CARLO__INIT);
        mq_op.runs = 2;
        mq_op.seed = 5;
        mq_op.duration = 0.03;
        mq_op.n_samplers = 2;
        mq_op.samplers = psmp;
        mq_op.n_returns = 2;
        mq_op.returns = returns;
        add(&mq, 1);
        emit("monte-carlo");
        double w[3] = {0.5, -0.2, 0.01};
        REQ(wq, apply_wrench, APPLY_WRENCH, ApplyWrench, ROBOSIM__V1__APPLY_WRENCH__INIT);
        wq_op.entity = "arm";
        wq_op.body = "end_effector";
        wq_op.n_values = 3;
        wq_op.values = w;
        add(&wq, 1);
        add_step(2, 0);
        emit("wrench-step");
    }
    /* batches: items and arrays, over world 1 and a fork */
    {
        REQ(fq, fork_world, FORK_WORLD, ForkWorld, ROBOSIM__V1__FORK_WORLD__INIT);
        add(&fq, 1);
        Robosim__V1__Step steps[2] = {ROBOSIM__V1__STEP__INIT, ROBOSIM__V1__STEP__INIT};
        Robosim__V1__BatchItem items[2] = {ROBOSIM__V1__BATCH_ITEM__INIT,
                                           ROBOSIM__V1__BATCH_ITEM__INIT};
        Robosim__V1__BatchItem *pitems[2] = {&items[0], &items[1]};
        for (int i = 0; i < 2; i++) {
            steps[i].steps = (uint32_t)(1 + i);
            steps[i].length_case = ROBOSIM__V1__STEP__LENGTH_STEPS;
            items[i].world_id = (uint64_t)(1 + i);
            items[i].token = FUZZ_TOKEN;
            items[i].step = &steps[i];
        }
        REQ(bq, step_batch, STEP_BATCH, StepBatch, ROBOSIM__V1__STEP_BATCH__INIT);
        Robosim__V1__BatchItems list = ROBOSIM__V1__BATCH_ITEMS__INIT;
        list.n_items = 2;
        list.items = pitems;
        bq_op.form_case = ROBOSIM__V1__STEP_BATCH__FORM_ITEMS;
        bq_op.items = &list;
        add(&bq, 0);
        emit("batch-items");
        add(&fq, 1);
        uint64_t ids[2] = {1, 2};
        char *tokens[2] = {FUZZ_TOKEN, FUZZ_TOKEN};
        REQ(aq, step_batch, STEP_BATCH, StepBatch, ROBOSIM__V1__STEP_BATCH__INIT);
        Robosim__V1__BatchArrays arrays = ROBOSIM__V1__BATCH_ARRAYS__INIT;
        arrays.n_world_ids = 2;
        arrays.world_ids = ids;
        arrays.n_tokens = 2;
        arrays.tokens = tokens;
        arrays.steps = 2;
        aq_op.form_case = ROBOSIM__V1__STEP_BATCH__FORM_ARRAYS;
        aq_op.arrays = &arrays;
        add(&aq, 0);
        emit("batch-arrays");
        /* arrays with commands: all actuators of each world, in spec order */
        double cmds[64];
        size_t nc = 0;
        for (int w = 0; w < 2; w++)
            for (size_t e = 0; e < spec->n_entities; e++)
                for (size_t a = 0; a < spec->entities[e]->n_actuators && nc < 64; a++)
                    cmds[nc++] = 0.5;
        add(&fq, 1);
        arrays.n_commands = nc;
        arrays.commands = cmds;
        add(&aq, 0);
        emit("batch-arrays-commands");
    }
    {
        REQ(cq, claim, CLAIM, Claim, ROBOSIM__V1__CLAIM__INIT);
        add(&cq, 1);
        REQ(dq, destroy_world, DESTROY_WORLD, DestroyWorld, ROBOSIM__V1__DESTROY_WORLD__INIT);
        add(&dq, 1);
        REQ(lq, list_worlds, LIST_WORLDS, ListWorlds, ROBOSIM__V1__LIST_WORLDS__INIT);
        add(&lq, 0);
        emit("claim-destroy");
    }
}

/* A seed for each op of the dispatch table that no seed above holds: its request made from the
 * proto's descriptors alone (the op's message with every field at its default; world 1 when
 * the row needs a world), so a new op reaches the fuzzer without a hand-made seed. Not replayed
 * to success: an empty message may well be refused, which still takes the fuzzer to the op's
 * checks. */
static void table_seeds(void)
{
    size_t nops;
    const rs_op_t *ops = rs_ops(&nops);
    for (size_t i = 0; i < nops; i++) {
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(
            &robosim__v1__request__descriptor, (unsigned)ops[i].op);
        if (!f || (unsigned)ops[i].op >= 64 || seeded[ops[i].op])
            continue;
        const ProtobufCMessageDescriptor *d = f->descriptor;
        ProtobufCMessage *m = calloc(1, d->sizeof_message);
        if (!m)
            die("out of memory");
        protobuf_c_message_init(d, m);
        Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
        rq.op_case = ops[i].op;
        *(ProtobufCMessage **)((char *)&rq + f->offset) = m;
        add(&rq, ops[i].needs_world ? 1 : 0);
        free(m);
        char file[128];
        snprintf(file, sizeof file, "%03d-op-%s", nseeds++, ops[i].name);
        write_file(req_dir, file, seed_buf, seed_len);
        seed_len = 0;
    }
}

/* fuzz_snapshot's seeds: byte 0 is the world (presets, then tasks, as the harness lists them) */
static void snapshot_seeds(const char *dir)
{
    int k = 0;
    const char *const *presets = rs_preset_names(), *const *tasks = rs_task_names();
    size_t np = 0, nt = 0;
    while (presets[np])
        np++;
    while (tasks[nt])
        nt++;
    for (size_t i = 0; i < np + nt; i++) {
        rs_status_t st;
        rs_world_t *w = i < np ? rs_world_new(presets[i], NULL, 0, 3, &st)
                               : rs_world_new_task(tasks[i - np], NULL, NULL, 0, 3, &st);
        if (!w)
            die(st.message);
        for (int steps = 0; steps <= 6; steps += 6) {
            if (steps && rs_step(w->model, w->data, (uint64_t)steps, &st) < 0)
                die(st.message);
            size_t n;
            rs_snapshot_size(w, &n);
            uint8_t *buf = malloc(n + 1);
            buf[0] = (uint8_t)i;
            if (rs_snapshot_write(w, buf + 1, n, &n, &st) < 0)
                die(st.message);
            char file[64];
            snprintf(file, sizeof file, "%02d-%s-%d", k++, i < np ? presets[i] : tasks[i - np], steps);
            write_file(dir, file, buf, n + 1);
            free(buf);
        }
        rs_world_destroy(&w);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3)
        die("usage: make_corpus REQUEST_DIR SNAPSHOT_DIR");
    for (int i = 1; i < 3; i++)
        if (mkdir(argv[i], 0755) != 0 && errno != EEXIST)
            die(argv[i]);
    req_dir = argv[1];
    rs_log_set_level(RS_LOG_WARN);
    if (!(srv = fuzz_server_new()))
        die("cannot make the fuzz server");
    request_seeds();
    table_seeds();
    snapshot_seeds(argv[2]);
    rs_server_destroy(&srv);
    printf("make_corpus: %d request seeds in %s\n", nseeds, argv[1]);
    return 0;
}
