/* Bad inputs for every operation in the dispatch table, through the real server. Each row
 * changes one thing in a valid request of its operation and names the error code it must get:
 * a specific one, never INTERNAL. Every operation gets rows from its row in the table
 * (table_cases: a sub-message that does not decode; an unknown world where the row needs one;
 * a missing and a wrong token where it changes the world); `cases` adds the operation's own
 * (NaN / inf / huge numbers, wrong counts, empty and overlong names, unknown entities and
 * parameters, bad enums and sizes). After every row the worlds are exactly as before
 * (GetState{snapshot} and ListWorlds compared byte for byte) and the server still answers
 * Hello. Every operation in ops[] must have rows; the number of inputs is printed. A request is
 * built from the proto's descriptors (build) unless its op needs content of its own. */
#include "rs_test.h"
#include "server_internal.h"
#include "server_proc.h"

#include <ctype.h>

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name
#define TOKEN "00112233445566778899aabbccddeeff" /* world 1's, from --controller-token */
#define MAX_MESSAGE 65536
#define MAX_BATCH 4
#define MAX_STEPS 1000

/* the worlds: 1 workshop, 2 finger, 3 FingerPush-v0 */
enum { W_SHOP = 1, W_FINGER = 2, W_TASK = 3, NWORLDS = 3 };

typedef struct bad_case {
    const char *op;   /* the ops[] name */
    const char *edit; /* changes to the op's valid request: "key=value ..." (see build) */
    int code;         /* the error code it must get */
    int alt;          /* another code accepted (0: none): snapshots refused for their contents
                         today become UNAUTHENTICATED once they carry a MAC */
} bad_case_t;

/* Keys every operation understands: world=ID, token=none|wrong, corrupt (the op's sub-message
 * replaced by bytes that do not decode), item (the code is the first batch item's / world's),
 * says=TEXT (the error message must contain TEXT, '_' standing for a space).
 * Values: numbers separated by commas, with nan, inf, -inf, huge (1e308); "@N" is a name of N
 * letters; an empty value is the empty string or no values. */
static const bad_case_t cases[] = {
    /* any request */
    {"", "raw=garbage", CODE(MALFORMED), 0},
    {"", "raw=truncated", CODE(MALFORMED), 0},
    {"", "raw=no-op", CODE(UNIMPLEMENTED), 0},
    {"", "raw=unknown-op", CODE(UNIMPLEMENTED), 0},
    {"", "raw=oversize", CODE(RESOURCE_EXHAUSTED), 0},
    {"hello", "major=2", CODE(VERSION_MISMATCH), 0},
    {"hello", "major=0", CODE(VERSION_MISMATCH), 0},
    {"hello", "major=4294967295", CODE(VERSION_MISMATCH), 0},
    {"list_worlds", "raw=list-worlds-bad-wire-type", CODE(MALFORMED), 0},
    {"create_world", "preset=nosuch", CODE(NOT_FOUND), 0},
    {"create_world", "preset=", CODE(NOT_FOUND), 0},
    {"create_world", "preset=@300", CODE(NOT_FOUND), 0},
    {"create_world", "task=NoSuchTask-v0", CODE(NOT_FOUND), 0},
    {"create_world", "task=@300", CODE(NOT_FOUND), 0},
    {"create_world", "task=FingerPush-v0 preset=workshop", CODE(INVALID_ARGUMENT), 0},
    {"create_world", "param=nosuch values=1", CODE(NOT_FOUND), 0},
    {"create_world", "param=control_dt param_entity=nosuch values=1", CODE(NOT_FOUND), 0},
    {"create_world", "param=control_dt values=nan", CODE(INVALID_ARGUMENT), 0},
    {"create_world", "param=control_dt values=inf", CODE(INVALID_ARGUMENT), 0},
    {"create_world", "param=control_dt values=-1", CODE(OUT_OF_RANGE), 0},
    {"create_world", "param=control_dt values=huge", CODE(OUT_OF_RANGE), 0},
    {"create_world", "param=control_dt values=0.01,0.02", CODE(INVALID_ARGUMENT), 0},
    {"create_world", "param=control_dt values=", CODE(INVALID_ARGUMENT), 0},
    {"create_world", "param=@300 values=1", CODE(NOT_FOUND), 0},
    {"destroy_world", "world=0", CODE(NOT_FOUND), 0},
    {"get_spec", "world=0", CODE(NOT_FOUND), 0},
    {"get_spec", "world=18446744073709551615", CODE(NOT_FOUND), 0},
    {"step", "steps=0", CODE(INVALID_ARGUMENT), 0},
    {"step", "steps=1001", CODE(OUT_OF_RANGE), 0},
    {"step", "steps=4294967295", CODE(OUT_OF_RANGE), 0},
    {"step", "length=none", CODE(INVALID_ARGUMENT), 0},
    {"step", "part=0", CODE(INVALID_ARGUMENT), 0},
    {"step", "part=6", CODE(INVALID_ARGUMENT), 0},
    {"step", "steps=0 duration=nan", CODE(INVALID_ARGUMENT), 0},
    {"step", "steps=0 duration=inf", CODE(INVALID_ARGUMENT), 0},
    {"step", "steps=0 duration=-0.01", CODE(INVALID_ARGUMENT), 0},
    {"step", "steps=0 duration=huge", CODE(OUT_OF_RANGE), 0},
    {"step", "steps=0 duration=0.0123", CODE(INVALID_ARGUMENT), 0},
    {"step", "entity=nosuch", CODE(NOT_FOUND), 0},
    {"step", "entity=", CODE(NOT_FOUND), 0},
    {"step", "entity=@300", CODE(NOT_FOUND), 0},
    {"step", "values=nan", CODE(INVALID_ARGUMENT), 0},
    {"step", "values=inf", CODE(INVALID_ARGUMENT), 0},
    {"step", "values=huge", CODE(OUT_OF_RANGE), 0},
    {"step", "values=1,2", CODE(INVALID_ARGUMENT), 0},
    {"step", "values=", CODE(INVALID_ARGUMENT), 0},
    {"step", "twice", CODE(INVALID_ARGUMENT), 0},
    {"step", "action=0.5", CODE(FAILED_PRECONDITION), 0}, /* the world runs no task */
    {"step", "world=3 action=nan", CODE(INVALID_ARGUMENT), 0},
    {"step", "world=3 action=0.1,0.2", CODE(INVALID_ARGUMENT), 0},
    {"step", "world=3 action=huge", CODE(OUT_OF_RANGE), 0},
    {"step", "world=3 values=1", CODE(INVALID_ARGUMENT), 0},
    {"get_state", "world=0", CODE(NOT_FOUND), 0},
    {"set_force", "entity=nosuch", CODE(NOT_FOUND), 0},
    {"set_force", "entity=", CODE(NOT_FOUND), 0},
    {"set_force", "entity=@300", CODE(NOT_FOUND), 0},
    {"set_force", "values=nan", CODE(INVALID_ARGUMENT), 0},
    {"set_force", "values=-inf", CODE(INVALID_ARGUMENT), 0},
    {"set_force", "values=huge", CODE(OUT_OF_RANGE), 0},
    {"set_force", "values=1,2", CODE(INVALID_ARGUMENT), 0},
    {"set_force", "values=", CODE(INVALID_ARGUMENT), 0},
    {"set_params", "param=", CODE(NOT_FOUND), 0},
    {"set_params", "no-params", CODE(INVALID_ARGUMENT), 0},
    {"set_params", "param=nosuch", CODE(NOT_FOUND), 0},
    {"set_params", "param=@300", CODE(NOT_FOUND), 0},
    {"set_params", "param_entity=nosuch", CODE(NOT_FOUND), 0},
    {"set_params", "values=nan", CODE(INVALID_ARGUMENT), 0},
    {"set_params", "values=inf", CODE(INVALID_ARGUMENT), 0},
    {"set_params", "values=-1", CODE(OUT_OF_RANGE), 0},
    {"set_params", "values=huge", CODE(OUT_OF_RANGE), 0},
    {"set_params", "values=0.01,0.02", CODE(INVALID_ARGUMENT), 0},
    {"set_params", "values=", CODE(INVALID_ARGUMENT), 0},
    {"set_schedule", "entity=nosuch", CODE(NOT_FOUND), 0},
    {"set_schedule", "entity=@300", CODE(NOT_FOUND), 0},
    {"set_schedule", "actuator=1", CODE(NOT_FOUND), 0},
    {"set_schedule", "actuator=4294967295", CODE(NOT_FOUND), 0},
    /* indices the old RS_MAX_PARAMS (48) bound let through, refused by the entity's own count
     * with a message naming its actuators */
    {"set_schedule", "actuator=47 says=(0:_force)", CODE(NOT_FOUND), 0},
    {"set_schedule", "actuator=48 says=no_actuator_48", CODE(NOT_FOUND), 0},
    {"set_schedule", "world=1 entity=arm actuator=2 says=(0:_joint1,_1:_joint2)", CODE(NOT_FOUND),
     0},
    {"set_schedule", "times=0.1,0.2 values=1", CODE(INVALID_ARGUMENT), 0},
    {"set_schedule", "times=0.2,0.1", CODE(INVALID_ARGUMENT), 0},
    {"set_schedule", "times=0.1,0.1", CODE(INVALID_ARGUMENT), 0},
    {"set_schedule", "times=nan,0.2", CODE(INVALID_ARGUMENT), 0},
    {"set_schedule", "times=0.1,inf", CODE(INVALID_ARGUMENT), 0},
    {"set_schedule", "values=nan,1", CODE(INVALID_ARGUMENT), 0},
    {"set_schedule", "values=huge,1", CODE(OUT_OF_RANGE), 0},
    {"set_target", "entity=nosuch", CODE(NOT_FOUND), 0},
    {"set_target", "entity=", CODE(NOT_FOUND), 0},
    {"set_target", "entity=finger", CODE(UNIMPLEMENTED), 0},
    {"set_target", "target=nan,0.1", CODE(INVALID_ARGUMENT), 0},
    {"set_target", "target=0.1,inf", CODE(INVALID_ARGUMENT), 0},
    {"set_target", "target=0.1", CODE(INVALID_ARGUMENT), 0},
    {"set_target", "target=0.1,0.1,0.1", CODE(INVALID_ARGUMENT), 0},
    {"set_target", "target=huge,huge", CODE(OUT_OF_RANGE), 0},
    {"get_workspace", "entity=nosuch", CODE(NOT_FOUND), 0},
    {"get_workspace", "entity=@300", CODE(NOT_FOUND), 0},
    {"get_workspace", "entity=finger", CODE(UNIMPLEMENTED), 0},
    {"get_workspace", "samples=4097", CODE(OUT_OF_RANGE), 0},
    {"get_workspace", "samples=4294967295", CODE(OUT_OF_RANGE), 0},
    {"get_workspace", "query=0.1,0.2,0.3", CODE(INVALID_ARGUMENT), 0},
    {"get_workspace", "query=nan,0.2", CODE(INVALID_ARGUMENT), 0},
    {"get_workspace", "query=0.1,-inf", CODE(INVALID_ARGUMENT), 0},
    {"claim", "token=none", CODE(FAILED_PRECONDITION), 0},
    {"claim", "token=wrong", CODE(FAILED_PRECONDITION), 0},
    {"set_state", "snapshot=empty", CODE(INVALID_ARGUMENT), 0},
    {"set_state", "snapshot=garbage", CODE(INVALID_ARGUMENT), CODE(UNAUTHENTICATED)},
    {"set_state", "snapshot=truncated", CODE(INVALID_ARGUMENT), CODE(UNAUTHENTICATED)},
    {"set_state", "snapshot=flipped", CODE(INVALID_ARGUMENT), CODE(UNAUTHENTICATED)},
    {"set_state", "snapshot=other", CODE(FAILED_PRECONDITION), 0},
    {"set_state", "world=3 snapshot=own", CODE(FAILED_PRECONDITION), 0},
    {"fork_world", "snapshot=garbage", CODE(INVALID_ARGUMENT), CODE(UNAUTHENTICATED)},
    {"fork_world", "snapshot=truncated", CODE(INVALID_ARGUMENT), CODE(UNAUTHENTICATED)},
    {"fork_world", "snapshot=flipped", CODE(INVALID_ARGUMENT), CODE(UNAUTHENTICATED)},
    {"fork_world", "snapshot=other", CODE(FAILED_PRECONDITION), 0},
    {"get_history", "from=1000000", CODE(OUT_OF_RANGE), 0},
    {"get_history", "from=18446744073709551615", CODE(OUT_OF_RANGE), 0},
    {"step_batch", "no-items", CODE(INVALID_ARGUMENT), 0},
    {"step_batch", "items=5", CODE(RESOURCE_EXHAUSTED), 0},
    {"step_batch", "items=2 same-world", CODE(INVALID_ARGUMENT), 0},
    {"step_batch", "items=2 steps=600", CODE(RESOURCE_EXHAUSTED), 0}, /* 1200 in all */
    {"step_batch", "item steps=1001", CODE(OUT_OF_RANGE), 0},
    {"step_batch", "item world=999", CODE(NOT_FOUND), 0},
    {"step_batch", "item token=wrong", CODE(PERMISSION_DENIED), 0},
    {"step_batch", "item token=none", CODE(PERMISSION_DENIED), 0},
    {"step_batch", "item values=nan", CODE(INVALID_ARGUMENT), 0},
    {"step_batch", "item entity=nosuch", CODE(NOT_FOUND), 0},
    {"step_batch", "item steps=0 duration=inf", CODE(INVALID_ARGUMENT), 0},
    {"step_batch", "form=none", CODE(INVALID_ARGUMENT), 0},
    {"step_batch", "arrays tokens=2", CODE(INVALID_ARGUMENT), 0},
    {"step_batch", "arrays values=1,2", CODE(INVALID_ARGUMENT), 0},
    {"step_batch", "arrays values=1 action=1", CODE(INVALID_ARGUMENT), 0},
    {"step_batch", "arrays steps=1001", CODE(RESOURCE_EXHAUSTED), 0},
    {"step_batch", "arrays items=5", CODE(RESOURCE_EXHAUSTED), 0},
    {"step_batch", "arrays item world=999", CODE(NOT_FOUND), 0},
    {"step_batch", "arrays item token=wrong", CODE(PERMISSION_DENIED), 0},
    {"step_batch", "arrays item values=nan", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "runs=0", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "runs=5", CODE(RESOURCE_EXHAUSTED), 0}, /* --max-batch 4 */
    {"monte_carlo", "runs=4 duration=5", CODE(RESOURCE_EXHAUSTED), 0}, /* 2000 steps in all */
    {"monte_carlo", "duration=nan", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "duration=-1", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "duration=0.0123", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "duration=huge", CODE(OUT_OF_RANGE), 0},
    {"monte_carlo", "no-samplers", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "no-returns", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "sampler=nodot", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "sampler=@300", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "sampler=nosuch.finger_x0", CODE(NOT_FOUND), 0},
    {"monte_carlo", "sampler=finger.nosuch", CODE(NOT_FOUND), 0},
    {"monte_carlo", "sampler=finger.finger_x0[1]", CODE(OUT_OF_RANGE), 0},
    {"monte_carlo", "sampler=finger.finger_x0[x]", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "dist=cauchy", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "dist=", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "a=1 b=0", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "a=nan", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "b=inf", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "dist=normal b=-1", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "a=huge b=huge", CODE(OUT_OF_RANGE), 0},  /* over finger_x0's bound */
    {"monte_carlo", "a=2 b=3", CODE(INVALID_ARGUMENT), 0},    /* the finger past the object */
    {"monte_carlo", "return=finger.nosuch", CODE(NOT_FOUND), 0},
    {"monte_carlo", "return=finger.x_f[0]", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "return=", CODE(INVALID_ARGUMENT), 0},
    {"monte_carlo", "return=task.return", CODE(FAILED_PRECONDITION), 0}, /* no task here */
    {"apply_wrench", "entity=nosuch", CODE(NOT_FOUND), 0},
    {"apply_wrench", "entity=@300", CODE(NOT_FOUND), 0},
    {"apply_wrench", "body=surface", CODE(NOT_FOUND), 0},
    {"apply_wrench", "body=", CODE(NOT_FOUND), 0},
    {"apply_wrench", "body=@300", CODE(NOT_FOUND), 0},
    {"apply_wrench", "world=1 entity=robot body=chassis", CODE(NOT_FOUND), 0}, /* none */
    {"apply_wrench", "values=nan", CODE(INVALID_ARGUMENT), 0},
    {"apply_wrench", "values=-inf", CODE(INVALID_ARGUMENT), 0},
    {"apply_wrench", "values=huge", CODE(OUT_OF_RANGE), 0},
    {"apply_wrench", "values=1,2", CODE(INVALID_ARGUMENT), 0},
    {"apply_wrench", "values=", CODE(INVALID_ARGUMENT), 0},
    {"apply_wrench", "world=1 entity=arm body=end_effector values=1,2", CODE(INVALID_ARGUMENT), 0},
    {"load_motion_spec", "doc=empty", CODE(INVALID_ARGUMENT), 0},
    {"load_motion_spec", "doc=garbage", CODE(MALFORMED), 0},
    {"load_motion_spec", "doc=dangling", CODE(INVALID_ARGUMENT), 0},
    {"load_motion_spec", "doc=frame", CODE(NOT_FOUND), 0},
    {"load_motion_spec", "doc=deep", CODE(INVALID_ARGUMENT), 0}, /* nested past the limit */
    {"register_task", "doc=empty", CODE(INVALID_ARGUMENT), 0},
    {"register_task", "doc=garbage", CODE(MALFORMED), 0},
    {"register_task", "doc=entity", CODE(NOT_FOUND), 0},
    {"register_task", "doc=builtin", CODE(INVALID_ARGUMENT), 0},
    {"register_task", "doc=deep", CODE(INVALID_ARGUMENT), 0}, /* nested past the limit */
};

static server_proc_t server;
static rsc_client_t *cli;
static char tokens[NWORLDS + 1][RS_TOKEN_LEN + 1];
static ProtobufCBinaryData snap_shop, snap_finger;

/* ---- the edit string ----------------------------------------------------------------------- */

/* The value of `key` in `edit` (a static copy), "" for a bare key, NULL when absent. */
static const char *kv(const char *edit, const char *key)
{
    static char out[4][400];
    static int which;
    size_t kl = strlen(key);
    for (const char *p = edit; p && *p;) {
        while (*p == ' ')
            p++;
        const char *end = strchr(p, ' ');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (!strncmp(p, key, kl) && (n == kl || p[kl] == '=')) {
            char *o = out[which++ % 4];
            const char *v = n == kl ? "" : p + kl + 1;
            size_t vn = n == kl ? 0 : n - kl - 1;
            if (vn && v[0] == '@') { /* a name of N letters */
                int len = atoi(v + 1);
                memset(o, 'x', (size_t)len);
                o[len] = '\0';
            } else {
                memcpy(o, v, vn);
                o[vn] = '\0';
            }
            return o;
        }
        p = end;
    }
    return NULL;
}

/* Numbers "1,nan,-inf,huge" into out (at most 8); how many. */
static size_t nums(const char *v, double *out)
{
    size_t n = 0;
    for (const char *p = v; p && *p && n < 8; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        out[n++] = !strncmp(p, "huge", 4) ? 1e308 : strtod(p, NULL);
    return n;
}

static uint64_t num_or(const char *edit, const char *key, uint64_t dflt)
{
    const char *v = kv(edit, key);
    return v ? strtoull(v, NULL, 10) : dflt;
}

/* ---- building a request -------------------------------------------------------------------- */

/* Storage for one request's parts (the request points into it). */
typedef struct parts {
    Robosim__V1__Request rq;
    union {
        Robosim__V1__Hello hello;
        Robosim__V1__CreateWorld create;
        Robosim__V1__Step step;
        Robosim__V1__SetForce force;
        Robosim__V1__SetParams params;
        Robosim__V1__SetSchedule sched;
        Robosim__V1__SetTarget target;
        Robosim__V1__GetWorkspace ws;
        Robosim__V1__GetHistory history;
        Robosim__V1__SetState set;
        Robosim__V1__ForkWorld fork;
        Robosim__V1__StepBatch batch;
        Robosim__V1__MonteCarlo mc;
        Robosim__V1__ApplyWrench wrench;
        Robosim__V1__LoadMotionSpec load;
        Robosim__V1__RegisterTask regtask;
    } op;
    _Alignas(16) uint8_t any[256]; /* an op's message made from its descriptor (build) */
    Robosim__V1__Sampler sampler, *psampler;
    char *returns[1];
    char doc[512];
    Robosim__V1__Param param, *pparam;
    Robosim__V1__ActuatorCommand cmd[2], *pcmd[2];
    Robosim__V1__Step item_step[MAX_BATCH + 1];
    Robosim__V1__BatchItem item[MAX_BATCH + 1], *pitem[MAX_BATCH + 1];
    Robosim__V1__BatchArrays arrays;
    Robosim__V1__BatchItems items;
    Robosim__V1__StatePart part;
    uint64_t ids[MAX_BATCH + 1];
    char *toks[MAX_BATCH + 1];
    double values[8], values2[8], times[8], action[8], cmds[64];
    uint8_t snap[1 << 16];
} parts_t;

static const char *token_for(const char *edit, uint64_t world)
{
    const char *t = kv(edit, "token");
    if (t && !strcmp(t, "none"))
        return "";
    if (t && !strcmp(t, "wrong"))
        return "ffffffffffffffffffffffffffffffff";
    return world >= 1 && world <= NWORLDS ? tokens[world] : TOKEN;
}

/* A Step on world `world` from the edit: one command for the finger (or the task's action). */
static void fill_step(parts_t *p, Robosim__V1__Step *sp, const char *edit, uint64_t world)
{
    robosim__v1__step__init(sp);
    sp->steps = (uint32_t)num_or(edit, "steps", 1);
    sp->length_case = ROBOSIM__V1__STEP__LENGTH_STEPS;
    const char *d = kv(edit, "duration");
    if (d) {
        sp->length_case = ROBOSIM__V1__STEP__LENGTH_DURATION;
        sp->duration = nums(d, p->times) ? p->times[0] : 0;
    }
    if (kv(edit, "length")) /* length=none: neither steps nor duration */
        sp->length_case = ROBOSIM__V1__STEP__LENGTH__NOT_SET;
    const char *part = kv(edit, "part");
    if (part) {
        p->part = (Robosim__V1__StatePart)num_or(edit, "part", 0);
        sp->parts = &p->part;
        sp->n_parts = 1;
    }
    const char *a = kv(edit, "action"), *v = kv(edit, "values");
    if (world == W_TASK || a) {
        sp->action = p->action;
        sp->n_action = a ? nums(a, p->action) : 1;
        if (!a)
            p->action[0] = 0.2;
        if (!v)
            return;
    }
    const char *ent = kv(edit, "entity");
    robosim__v1__actuator_command__init(&p->cmd[0]);
    p->cmd[0].entity = (char *)(ent ? ent : "finger");
    p->cmd[0].values = p->values;
    p->cmd[0].n_values = v ? nums(v, p->values) : 1;
    if (!v)
        p->values[0] = 5.0;
    p->cmd[1] = p->cmd[0];
    p->pcmd[0] = &p->cmd[0];
    p->pcmd[1] = &p->cmd[1];
    sp->commands = p->pcmd;
    sp->n_commands = kv(edit, "twice") ? 2 : 1;
}

static void snapshot_from(parts_t *p, const char *edit, ProtobufCBinaryData *b)
{
    const char *kind = kv(edit, "snapshot");
    *b = snap_finger;
    if (!kind)
        return;
    if (!strcmp(kind, "empty")) {
        b->len = 0;
    } else if (!strcmp(kind, "garbage")) {
        b->data = (uint8_t *)"not a snapshot at all";
        b->len = 21;
    } else if (!strcmp(kind, "truncated")) {
        b->len = snap_finger.len / 2;
    } else if (!strcmp(kind, "flipped")) {
        memcpy(p->snap, snap_finger.data, snap_finger.len);
        p->snap[snap_finger.len / 2] ^= 0x10;
        b->data = p->snap;
    } else if (!strcmp(kind, "other")) {
        *b = snap_shop;
    }
}

/* The valid request of operation `op` with the edit applied. */
static void build(parts_t *p, const char *op, const char *edit)
{
    memset(p, 0, sizeof *p);
    Robosim__V1__Request *rq = &p->rq;
    robosim__v1__request__init(rq);
    uint64_t world = num_or(edit, "world", W_FINGER);
    rq->world_id = world;
    rq->token = (char *)token_for(edit, world);
    if (!strcmp(op, "hello")) {
        robosim__v1__hello__init(&p->op.hello);
        p->op.hello.major = (uint32_t)num_or(edit, "major", RS_PROTOCOL_MAJOR);
        rq->op_case = ROBOSIM__V1__REQUEST__OP_HELLO;
        rq->hello = &p->op.hello;
    } else if (!strcmp(op, "create_world") || !strcmp(op, "set_params")) {
        const char *name = kv(edit, "param"), *v = kv(edit, "values");
        robosim__v1__param__init(&p->param);
        p->param.entity = (char *)(kv(edit, "param_entity") ? kv(edit, "param_entity") : "");
        p->param.name = (char *)(name ? name : "control_dt");
        p->param.values = p->values;
        p->param.n_values = v ? nums(v, p->values) : 1;
        if (!v)
            p->values[0] = 0.01;
        p->pparam = &p->param;
        if (op[0] == 'c') {
            robosim__v1__create_world__init(&p->op.create);
            const char *preset = kv(edit, "preset"), *task = kv(edit, "task");
            p->op.create.preset = (char *)(preset ? preset : task ? "" : "finger");
            p->op.create.task = (char *)(task ? task : "");
            p->op.create.n_params = name ? 1 : 0;
            p->op.create.params = &p->pparam;
            rq->op_case = ROBOSIM__V1__REQUEST__OP_CREATE_WORLD;
            rq->create_world = &p->op.create;
        } else {
            robosim__v1__set_params__init(&p->op.params);
            p->op.params.n_params = kv(edit, "no-params") ? 0 : 1;
            p->op.params.params = &p->pparam;
            rq->op_case = ROBOSIM__V1__REQUEST__OP_SET_PARAMS;
            rq->set_params = &p->op.params;
        }
    } else if (!strcmp(op, "step")) {
        fill_step(p, &p->op.step, edit, world);
        rq->op_case = ROBOSIM__V1__REQUEST__OP_STEP;
        rq->step = &p->op.step;
    } else if (!strcmp(op, "set_force")) {
        const char *ent = kv(edit, "entity"), *v = kv(edit, "values");
        robosim__v1__set_force__init(&p->op.force);
        p->op.force.entity = (char *)(ent ? ent : "finger");
        p->op.force.values = p->values;
        p->op.force.n_values = v ? nums(v, p->values) : 1;
        if (!v)
            p->values[0] = 3.0;
        rq->op_case = ROBOSIM__V1__REQUEST__OP_SET_FORCE;
        rq->set_force = &p->op.force;
    } else if (!strcmp(op, "set_schedule")) {
        const char *ent = kv(edit, "entity"), *t = kv(edit, "times"), *v = kv(edit, "values");
        robosim__v1__set_schedule__init(&p->op.sched);
        p->op.sched.entity = (char *)(ent ? ent : "finger");
        p->op.sched.actuator = (uint32_t)num_or(edit, "actuator", 0);
        p->op.sched.times = p->times;
        p->op.sched.n_times = t ? nums(t, p->times) : 2;
        p->op.sched.values = p->values2;
        p->op.sched.n_values = v ? nums(v, p->values2) : 2;
        if (!t)
            p->times[0] = 0.1, p->times[1] = 0.2;
        if (!v)
            p->values2[0] = 1.0, p->values2[1] = 2.0;
        rq->op_case = ROBOSIM__V1__REQUEST__OP_SET_SCHEDULE;
        rq->set_schedule = &p->op.sched;
    } else if (!strcmp(op, "set_target") || !strcmp(op, "get_workspace")) {
        const char *ent = kv(edit, "entity");
        if (!kv(edit, "world"))
            rq->world_id = W_SHOP, rq->token = (char *)token_for(edit, W_SHOP);
        if (op[4] == 't') {
            const char *t = kv(edit, "target");
            robosim__v1__set_target__init(&p->op.target);
            p->op.target.entity = (char *)(ent ? ent : "arm");
            p->op.target.target = p->values;
            p->op.target.n_target = t ? nums(t, p->values) : 2;
            if (!t)
                p->values[0] = 0.3, p->values[1] = 0.2;
            rq->op_case = ROBOSIM__V1__REQUEST__OP_SET_TARGET;
            rq->set_target = &p->op.target;
        } else {
            const char *q = kv(edit, "query");
            robosim__v1__get_workspace__init(&p->op.ws);
            p->op.ws.entity = (char *)(ent ? ent : "arm");
            p->op.ws.samples = (uint32_t)num_or(edit, "samples", 8);
            p->op.ws.query = p->values;
            p->op.ws.n_query = q ? nums(q, p->values) : 0;
            rq->op_case = ROBOSIM__V1__REQUEST__OP_GET_WORKSPACE;
            rq->get_workspace = &p->op.ws;
        }
    } else if (!strcmp(op, "get_history")) {
        robosim__v1__get_history__init(&p->op.history);
        p->op.history.from_seq = num_or(edit, "from", 1);
        p->op.history.max_frames = (uint32_t)num_or(edit, "max", 0);
        rq->op_case = ROBOSIM__V1__REQUEST__OP_GET_HISTORY;
        rq->get_history = &p->op.history;
    } else if (!strcmp(op, "set_state")) {
        robosim__v1__set_state__init(&p->op.set);
        snapshot_from(p, edit, &p->op.set.snapshot);
        if (kv(edit, "snapshot") && !strcmp(kv(edit, "snapshot"), "own"))
            p->op.set.snapshot = snap_finger; /* a finger snapshot into the FingerPush world */
        rq->op_case = ROBOSIM__V1__REQUEST__OP_SET_STATE;
        rq->set_state = &p->op.set;
    } else if (!strcmp(op, "fork_world")) {
        robosim__v1__fork_world__init(&p->op.fork);
        snapshot_from(p, edit, &p->op.fork.snapshot);
        rq->op_case = ROBOSIM__V1__REQUEST__OP_FORK_WORLD;
        rq->fork_world = &p->op.fork;
    } else if (!strcmp(op, "step_batch")) {
        /* items (or arrays): world 2 first, then the workshop, then unknown worlds; "item" edits apply to the
         * first item only; "items=N" makes N, "same-world" names world 2 twice */
        robosim__v1__step_batch__init(&p->op.batch);
        size_t n = kv(edit, "no-items") ? 0 : num_or(edit, "items", 1);
        int arrays = kv(edit, "arrays") != NULL;
        for (size_t i = 0; i < n; i++) {
            uint64_t wid = i == 0                   ? world
                           : kv(edit, "same-world") ? W_FINGER
                           : i == 1                 ? W_SHOP
                                                    : 100 + i;
            p->ids[i] = wid;
            p->toks[i] = (char *)(i == 0 ? token_for(edit, wid) : TOKEN);
            robosim__v1__batch_item__init(&p->item[i]);
            p->item[i].world_id = wid;
            p->item[i].token = p->toks[i];
            fill_step(p, &p->item_step[i], i == 0 ? edit : "", W_FINGER);
            p->item[i].step = &p->item_step[i];
            p->pitem[i] = &p->item[i];
        }
        for (size_t i = n; i <= MAX_BATCH; i++)
            p->toks[i] = TOKEN; /* tokens=N beyond the worlds */
        rq->world_id = 0;
        rq->token = "";
        if (arrays) {
            robosim__v1__batch_arrays__init(&p->arrays);
            p->arrays.world_ids = p->ids;
            p->arrays.n_world_ids = n;
            p->arrays.tokens = p->toks;
            p->arrays.n_tokens = num_or(edit, "tokens", n);
            p->arrays.steps = (uint32_t)num_or(edit, "steps", 1);
            const char *v = kv(edit, "values"), *a = kv(edit, "action");
            p->arrays.commands = p->cmds;
            p->arrays.n_commands = v ? nums(v, p->cmds) : 0;
            p->arrays.actions = p->action;
            p->arrays.n_actions = a ? nums(a, p->action) : 0;
            p->op.batch.form_case = ROBOSIM__V1__STEP_BATCH__FORM_ARRAYS;
            p->op.batch.arrays = &p->arrays;
        } else {
            robosim__v1__batch_items__init(&p->items);
            p->items.items = p->pitem;
            p->items.n_items = n;
            p->op.batch.form_case = ROBOSIM__V1__STEP_BATCH__FORM_ITEMS;
            p->op.batch.items = &p->items;
            if (kv(edit, "steps") && !kv(edit, "item"))
                for (size_t i = 0; i < n; i++)
                    p->item_step[i].steps = (uint32_t)num_or(edit, "steps", 1);
        }
        if (kv(edit, "form")) /* form=none: neither items nor arrays (a protocol 1.1 batch) */
            p->op.batch.form_case = ROBOSIM__V1__STEP_BATCH__FORM__NOT_SET;
        rq->op_case = ROBOSIM__V1__REQUEST__OP_STEP_BATCH;
        rq->step_batch = &p->op.batch;
    } else if (!strcmp(op, "apply_wrench")) {
        /* valid: 1 N on the finger world's finger */
        const char *ent = kv(edit, "entity"), *body = kv(edit, "body"), *v = kv(edit, "values");
        robosim__v1__apply_wrench__init(&p->op.wrench);
        p->op.wrench.entity = (char *)(ent ? ent : "finger");
        p->op.wrench.body = (char *)(body ? body : "finger");
        p->op.wrench.values = p->values;
        p->op.wrench.n_values = v ? nums(v, p->values) : 1;
        if (!v)
            p->values[0] = 1.0;
        rq->op_case = ROBOSIM__V1__REQUEST__OP_APPLY_WRENCH;
        rq->apply_wrench = &p->op.wrench;
    } else if (!strcmp(op, "monte_carlo")) {
        /* valid: 2 runs of 20 ms of the finger world, finger_x0 ~ uniform(0, 0.1), x_f back */
        robosim__v1__monte_carlo__init(&p->op.mc);
        robosim__v1__sampler__init(&p->sampler);
        const char *item = kv(edit, "sampler"), *dist = kv(edit, "dist"), *a = kv(edit, "a"),
                   *b = kv(edit, "b"), *ret = kv(edit, "return"), *d = kv(edit, "duration");
        p->op.mc.runs = (uint32_t)num_or(edit, "runs", 2);
        p->op.mc.seed = 7;
        p->op.mc.duration = d && nums(d, p->times) ? p->times[0] : 0.02;
        p->sampler.item = (char *)(item ? item : "finger.finger_x0");
        p->sampler.dist = (char *)(dist ? dist : "uniform");
        p->sampler.a = a && nums(a, p->values) ? p->values[0] : 0.0;
        p->sampler.b = b && nums(b, p->values2) ? p->values2[0] : 0.1;
        p->psampler = &p->sampler;
        p->op.mc.samplers = &p->psampler;
        p->op.mc.n_samplers = kv(edit, "no-samplers") ? 0 : 1;
        p->returns[0] = (char *)(ret ? ret : "finger.x_f");
        p->op.mc.returns = p->returns;
        p->op.mc.n_returns = kv(edit, "no-returns") ? 0 : 1;
        rq->op_case = ROBOSIM__V1__REQUEST__OP_MONTE_CARLO;
        rq->monte_carlo = &p->op.mc;
    } else if (!strcmp(op, "load_motion_spec")) {
        /* a valid document (a monitored constant, no frames), or a bad one */
        const char *d = kv(edit, "doc");
        const char *text =
            "[{\"@id\": \"q\", \"@type\": [\"Quantity\", \"Force\"], \"unit\": \"N\", "
            "\"value\": 2}, {\"@id\": \"c\", \"@type\": [\"Constraint\", "
            "\"EqualityConstraint\"], \"quantity\": \"q\", \"reference-value\": \"%s\"}, "
            "{\"@id\": \"m\", \"@type\": \"Monitor\", \"constraint\": \"c\"}, "
            "{\"@id\": \"h\", \"@type\": \"ConstraintHandler\", \"constraint\": \"c\", "
            "\"monitor\": \"m\"}]";
        if (d && !strcmp(d, "empty"))
            p->doc[0] = 0;
        else if (d && !strcmp(d, "garbage"))
            snprintf(p->doc, sizeof p->doc, "{\"@graph\": [ nope");
        else if (d && !strcmp(d, "frame"))
            snprintf(p->doc, sizeof p->doc,
                     "[{\"@id\": \"f\", \"@type\": \"Frame\", \"world-frame\": \"left_ee\"}]");
        else if (d && !strcmp(d, "deep")) {
            memset(p->doc, '[', 200);
            p->doc[200] = 0;
        } else
            snprintf(p->doc, sizeof p->doc, text, d && !strcmp(d, "dangling") ? "nowhere" : "q");
        robosim__v1__load_motion_spec__init(&p->op.load);
        p->op.load.document = p->doc;
        rq->op_case = ROBOSIM__V1__REQUEST__OP_LOAD_MOTION_SPEC;
        rq->load_motion_spec = &p->op.load;
    } else if (!strcmp(op, "register_task")) {
        /* a task document, good but for the item the edit names */
        const char *text =
            "{\"name\": \"%s\", \"preset\": \"serial_arm\", \"entity\": \"%s\", "
            "\"quantities\": {\"x\": \"arm.x\"}, \"observation\": [\"x\"], "
            "\"action\": [{\"actuator\": \"joint1\", \"low\": -1, \"high\": 1}], "
            "\"reward\": \"-abs(x)\", \"max_steps\": 10}";
        const char *d = kv(edit, "doc");
        p->doc[0] = 0;
        if (d && !strcmp(d, "garbage"))
            snprintf(p->doc, sizeof p->doc, "{\"name\": [ nope");
        else if (d && !strcmp(d, "deep")) {
            memset(p->doc, '[', 200);
            p->doc[200] = 0;
        } else if (d && strcmp(d, "empty") != 0)
            snprintf(p->doc, sizeof p->doc, text,
                     !strcmp(d, "builtin") ? "SerialArmReach-v0" : "BadInputs-v0",
                     !strcmp(d, "entity") ? "leg" : "arm");
        robosim__v1__register_task__init(&p->op.regtask);
        p->op.regtask.document = p->doc;
        rq->op_case = ROBOSIM__V1__REQUEST__OP_REGISTER_TASK;
        rq->register_task = &p->op.regtask;
    } else {
        /* any other op (a valid request of it is its message with no field set): the message
         * made from its descriptor, so a new op needs no branch here */
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(
            &robosim__v1__request__descriptor, op);
        const ProtobufCMessageDescriptor *d = f ? f->descriptor : NULL;
        if (f && (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) && f->type == PROTOBUF_C_TYPE_MESSAGE &&
            d->sizeof_message <= sizeof p->any) {
            protobuf_c_message_init(d, p->any);
            rq->op_case = (Robosim__V1__Request__OpCase)f->id;
            *(void **)((char *)rq + f->offset) = p->any;
        }
    }
}

/* The rows every op gets from its row in the dispatch table (into out, at most cap; how many):
 * a sub-message that does not decode; an unknown world (needs_world); no token and a wrong one
 * (needs_world and mutates: the world's controller token). */
static size_t table_cases(bad_case_t *out, size_t cap)
{
    size_t nops, n = 0;
    const rs_op_t *ops = rs_ops(&nops);
    for (size_t i = 0; i < nops && n + 4 <= cap; i++) {
        out[n++] = (bad_case_t){ops[i].name, "corrupt", CODE(MALFORMED), 0};
        if (ops[i].needs_world)
            out[n++] = (bad_case_t){ops[i].name, "world=999", CODE(NOT_FOUND), 0};
        if (ops[i].needs_world && ops[i].mutates) {
            out[n++] = (bad_case_t){ops[i].name, "token=none", CODE(PERMISSION_DENIED), 0};
            out[n++] = (bad_case_t){ops[i].name, "token=wrong", CODE(PERMISSION_DENIED), 0};
        }
    }
    return n;
}

/* Pack the request, or a raw kind of bytes, into buf; the length. */
static size_t pack(parts_t *p, const char *edit, uint8_t *buf, size_t cap)
{
    const char *raw = kv(edit, "raw");
    if (raw) {
        Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
        Robosim__V1__ListWorlds lw = ROBOSIM__V1__LIST_WORLDS__INIT;
        rq.op_case = ROBOSIM__V1__REQUEST__OP_LIST_WORLDS;
        rq.list_worlds = &lw;
        rq.id = 7;
        if (!strcmp(raw, "garbage")) {
            memcpy(buf, "\xff\xff\xff\xff\x0f\x12", 6);
            return 6;
        }
        if (!strcmp(raw, "truncated")) { /* a length-delimited token cut short */
            rq.token = TOKEN;
            size_t n = robosim__v1__request__pack(&rq, buf);
            return n - 10;
        }
        if (!strcmp(raw, "no-op")) {
            rq.op_case = ROBOSIM__V1__REQUEST__OP__NOT_SET;
            return robosim__v1__request__pack(&rq, buf);
        }
        if (!strcmp(raw, "unknown-op")) { /* field 39 (reserved for operations to come) */
            rq.op_case = ROBOSIM__V1__REQUEST__OP__NOT_SET;
            size_t n = robosim__v1__request__pack(&rq, buf);
            memcpy(buf + n, "\xba\x02\x00", 3);
            return n + 3;
        }
        if (!strcmp(raw, "oversize")) {
            memset(buf, 0, cap);
            return MAX_MESSAGE + 1;
        }
        if (!strcmp(raw, "list-worlds-bad-wire-type")) { /* field 11 as a varint */
            memcpy(buf, "\x58\x01", 2);
            return 2;
        }
        return 0;
    }
    if (kv(edit, "corrupt")) { /* the op's field, length 2, bytes that are no message */
        unsigned field = (unsigned)p->rq.op_case;
        p->rq.op_case = ROBOSIM__V1__REQUEST__OP__NOT_SET;
        size_t n = robosim__v1__request__pack(&p->rq, buf);
        unsigned key = field << 3 | 2;
        buf[n++] = (uint8_t)(key | 0x80);
        buf[n++] = (uint8_t)(key >> 7);
        memcpy(buf + n, "\x02\xff\xff", 3);
        return n + 3;
    }
    return robosim__v1__request__pack(&p->rq, buf);
}

/* ---- the worlds, before and after ----------------------------------------------------------- */

/* Every world's State with its snapshot, and the world list, as bytes (into buf; the
 * length). */
static size_t everything(uint8_t *buf, size_t cap)
{
    size_t n = 0;
    rsc_error_t err;
    Robosim__V1__ListWorldsReply *l = NULL;
    if (rsc_list_worlds(cli, &l, &err) != 0)
        return 0;
    for (size_t i = 0; i < l->n_worlds; i++) {
        l->worlds[i]->lease_remaining = 0; /* runs down with the clock */
        Robosim__V1__State *s = NULL;
        /* with the snapshot: parameters, schedules, everything a world holds */
        if (rsc_get_snapshot(cli, l->worlds[i]->world_id, &s, &err) != 0)
            return 0;
        s->seq = 0;
        size_t k = robosim__v1__state__get_packed_size(s);
        if (n + k < cap)
            n += robosim__v1__state__pack(s, buf + n);
        rsc_free(s);
    }
    size_t k = robosim__v1__list_worlds_reply__get_packed_size(l);
    if (n + k < cap)
        n += robosim__v1__list_worlds_reply__pack(l, buf + n);
    rsc_free(l);
    return n;
}

static ProtobufCBinaryData snapshot(uint64_t id)
{
    Robosim__V1__State *s = NULL;
    rsc_error_t err;
    ProtobufCBinaryData b = {0, NULL};
    if (rsc_get_snapshot(cli, id, &s, &err) == 0) {
        b.len = s->snapshot.len;
        b.data = malloc(b.len);
        memcpy(b.data, s->snapshot.data, b.len);
    }
    rsc_free(s);
    return b;
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    char maxmsg[32], maxbatch[32], maxsteps[32];
    snprintf(maxmsg, sizeof maxmsg, "%d", MAX_MESSAGE);
    snprintf(maxbatch, sizeof maxbatch, "%d", MAX_BATCH);
    snprintf(maxsteps, sizeof maxsteps, "%d", MAX_STEPS);
    const char *extra[] = {"--controller-token", TOKEN, "--max-message-size", maxmsg,
                           "--max-batch", maxbatch, "--max-steps-per-request", maxsteps,
                           "--max-worlds", "8", NULL};
    if (server_start(&server, binary, extra) != 0) {
        fprintf(stderr, "server did not start\n");
        return 1;
    }
    rsc_error_t err;
    cli = rsc_connect(server.endpoint, 10000, &err);
    CHECK(cli != NULL, "connect: %s", err.message);
    if (!cli)
        return 1;
    uint64_t id = 0;
    snprintf(tokens[W_SHOP], sizeof tokens[W_SHOP], "%s", TOKEN);
    CHECK(rsc_create_world(cli, "finger", NULL, 0, 1, &id, &err) == 0 && id == W_FINGER, "finger world");
    snprintf(tokens[W_FINGER], sizeof tokens[W_FINGER], "%s", rsc_world_token(cli, id));
    CHECK(rsc_create_task_world(cli, "FingerPush-v0", NULL, NULL, 0, 1, &id, &err) == 0 && id == W_TASK,
          "task world");
    snprintf(tokens[W_TASK], sizeof tokens[W_TASK], "%s", rsc_world_token(cli, id));
    /* move the worlds off their initial state, so "unchanged" means something */
    double f = 20.0;
    rsc_command_t cmd = {"finger", &f, 1};
    Robosim__V1__State *s = NULL;
    rsc_set_world_token(cli, W_SHOP, TOKEN);
    CHECK(rsc_step(cli, W_FINGER, 3, 0, &cmd, 1, &s, &err) == 0, "step: %s", err.message);
    rsc_free(s);
    CHECK(rsc_step(cli, W_SHOP, 2, 0, NULL, 0, &s, &err) == 0, "step: %s", err.message);
    rsc_free(s);
    snap_shop = snapshot(W_SHOP);
    snap_finger = snapshot(W_FINGER);

    /* the rows: the table's for every operation, then each operation's own */
    size_t nops;
    const rs_op_t *ops = rs_ops(&nops);
    size_t nown = sizeof cases / sizeof cases[0], cap = 4 * nops + nown;
    bad_case_t *all = calloc(cap, sizeof *all);
    CHECK(all != NULL, "out of memory");
    if (!all)
        return 1;
    size_t ncases = table_cases(all, cap);
    memcpy(all + ncases, cases, sizeof cases);
    ncases += nown;
    for (size_t i = 0; i < nops; i++) {
        int rows = 0;
        for (size_t k = 0; k < ncases; k++)
            rows += !strcmp(all[k].op, ops[i].name);
        CHECK(rows >= 2, "operation %s has %d bad-input rows (want several)", ops[i].name, rows);
    }
    /* Hello publishes each row's route (HelloReply.routes, what the clients route by), and a
     * row routes by its world exactly when it needs one */
    Robosim__V1__HelloReply *hr = NULL;
    CHECK(rsc_hello(cli, RS_PROTOCOL_MAJOR, RS_PROTOCOL_MINOR, &hr, &err) == 0 && hr &&
              hr->n_routes == nops && hr->minor == RS_PROTOCOL_MINOR,
          "Hello: %zu routes for %zu operations", hr ? hr->n_routes : 0, nops);
    for (size_t i = 0; hr && i < nops && i < hr->n_routes; i++) {
        CHECK(!strcmp(hr->routes[i]->op, ops[i].name) && hr->routes[i]->route == ops[i].route &&
                  ops[i].route != ROBOSIM__V1__ROUTE__ROUTE_UNSPECIFIED,
              "Hello's route %zu: %s %d, the table's %s %d", i, hr->routes[i]->op,
              (int)hr->routes[i]->route, ops[i].name, (int)ops[i].route);
        CHECK(ops[i].needs_world == (ops[i].route == ROBOSIM__V1__ROUTE__ROUTE_WORLD),
              "%s: needs a world (%d) but routes %d", ops[i].name, ops[i].needs_world,
              (int)ops[i].route);
    }
    rsc_free(hr);

    static uint8_t before[1 << 20], after[1 << 20], buf[MAX_MESSAGE + 4096];
    static parts_t p;
    int internal = 0;
    for (size_t k = 0; k < ncases; k++) {
        const bad_case_t *c = &all[k];
        size_t nb = everything(before, sizeof before);
        build(&p, c->op, c->edit);
        size_t len = pack(&p, c->edit, buf, sizeof buf);
        Robosim__V1__Response *rp = NULL;
        int rc = rsc_send_raw(cli, buf, len, &rp, &err);
        int code = rc;
        if (rc == 0 && kv(c->edit, "item") && rp->result_case == ROBOSIM__V1__RESPONSE__RESULT_STEP_BATCH) {
            Robosim__V1__StepBatchReply *r = rp->step_batch;
            if (r->arrays)
                code = r->arrays->n_codes ? (int)r->arrays->codes[0] : 0;
            else
                code = r->n_results && r->results[0]->error ? (int)r->results[0]->error->code : 0;
        }
        internal += code == CODE(INTERNAL);
        CHECK(code == c->code || (c->alt && code == c->alt), "%s {%s}: got %s (%d) '%s', want %s",
              c->op[0] ? c->op : "(any)", c->edit, rsc_error_name(code), code,
              rc > 0 && rp && rp->error ? rp->error->message : "", rsc_error_name(c->code));
        if (rc > 0 && rp && rp->error)
            CHECK(rp->error->message && strlen(rp->error->message) > 10,
                  "%s {%s}: no message a person can act on", c->op, c->edit);
        const char *says = kv(c->edit, "says"); /* '_' stands for a space */
        if (says) {
            char want[400];
            snprintf(want, sizeof want, "%s", says);
            for (char *q = want; *q; q++)
                *q = *q == '_' ? ' ' : *q;
            CHECK(rc > 0 && rp && rp->error && rp->error->message &&
                      strstr(rp->error->message, want),
                  "%s {%s}: the message '%s' does not say '%s'", c->op, c->edit,
                  rc > 0 && rp && rp->error ? rp->error->message : "", want);
        }
        rsc_free(rp);
        size_t na = everything(after, sizeof after);
        CHECK(nb > 0 && na == nb && !memcmp(before, after, nb),
              "%s {%s}: the worlds changed although the request was refused", c->op, c->edit);
        Robosim__V1__HelloReply *h = NULL;
        CHECK(rsc_hello(cli, RS_PROTOCOL_MAJOR, RS_PROTOCOL_MINOR, &h, &err) == 0,
              "%s {%s}: the server stopped answering: %s", c->op, c->edit, err.message);
        rsc_free(h);
    }
    CHECK(internal == 0, "%d inputs got INTERNAL", internal);
    printf("test_bad_inputs: %zu bad inputs over %zu operations, %d INTERNAL\n", ncases, nops,
           internal);
    free(all);
    free(snap_shop.data);
    free(snap_finger.data);
    rsc_close(&cli);
    CHECK(server_stop(&server) == 0, "the server did not stop cleanly");
    return rs_test_done("test_bad_inputs");
}
