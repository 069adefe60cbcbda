/* The dispatch table (one row per request type, its columns the policy), the policy check
 * (rs_op_allowed), Hello, and the request path: decode a request, find its row and world,
 * check the row's policy once, run the handler (handlers_*.c, montecarlo_job.c), encode the
 * reply. A handler validates everything before it changes anything, so a refused request
 * leaves the world as it was. */
#include "handlers.h"
#include "worlds.h"
#include "rs_build_info.h"
#include "rs_task.h"
#include "rs_wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif

#define ARENA_KEEP (8u << 20) /* reply/request arena bytes kept between requests */
/* A request may decode to at most DECODE_FACTOR times its size plus DECODE_SLACK bytes (the
 * unpacked messages in the arena): a 4 MiB request of 2M empty Params decoded to 272 MiB
 * before; 1 MiB of slack covers a StepBatch of 4096 small items. */
#define DECODE_FACTOR 16
#define DECODE_SLACK (1u << 20)

/* Task worlds are evaluation worlds: only Step.action, held to the task's action bounds,
 * moves their robots. Commands, schedules, targets and parameters set from outside would
 * bypass those bounds (a policy under evaluation pushing the finger with any force) or change
 * the task being evaluated, so the operations that set them are refused (not clamped: a
 * clamped command would silently do something else than asked). */
static int refuse_on_task(const world_slot_t *w, const char *op, rs_status_t *st)
{
    const rs_task_t *t = w->world->task;
    if (!t)
        return 0;
    return rs_fail(st, RS_EPRECOND,
                   "world %llu runs task '%s', an evaluation world: %s is refused there; drive "
                   "it with Step.action (TaskSpec.action gives its bounds), or create a world "
                   "without a task to %s freely",
                   (unsigned long long)w->id, t->name, op,
                   !strcmp(op, "set_params") ? "change its parameters" : "command its robots");
}


/* ---- Hello (it reads the table for its capabilities) ------------------------------------- */

/* What this server's bits depend on besides the requests (Hello's BuildInfo). */
static Robosim__V1__BuildInfo *build_info(rs_server_t *s)
{
    Robosim__V1__BuildInfo *b = rs_arena_alloc(&s->arena, sizeof *b);
    char *libm = rs_arena_alloc(&s->arena, 64);
    if (!b || !libm)
        return NULL;
    robosim__v1__build_info__init(b);
    b->version = RS_VERSION;
    b->commit = RS_BUILD_COMMIT;
    b->compiler = RS_BUILD_COMPILER;
    b->fp_flags = RS_BUILD_FP_FLAGS;
    b->build_type = RS_BUILD_TYPE;
    b->sundials = (char *)rs_sundials_version();
#if defined(__x86_64__)
    b->arch = "x86_64";
#elif defined(__aarch64__)
    b->arch = "aarch64";
#elif defined(__i386__)
    b->arch = "i386";
#elif defined(__arm__)
    b->arch = "arm";
#else
    b->arch = "unknown";
#endif
#ifdef __GLIBC__
    snprintf(libm, 64, "glibc %s", gnu_get_libc_version()); /* libm is glibc's */
#else
    snprintf(libm, 64, "unknown C library");
#endif
    b->libm = libm;
    return b;
}

static int op_hello(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                    Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__Hello *h = rq->hello;
    if (h->major != RS_PROTOCOL_MAJOR)
        return rs_fail(st, RS_EVERSION,
                       "client speaks protocol %u.%u, this server speaks %d.%d; use a client "
                       "built for protocol major %d",
                       h->major, h->minor, RS_PROTOCOL_MAJOR, RS_PROTOCOL_MINOR, RS_PROTOCOL_MAJOR);
    Robosim__V1__HelloReply *r = rs_arena_alloc(&s->arena, sizeof *r);
    size_t nops;
    const rs_op_t *ops = rs_ops(&nops);
    static const char *const features[] = {"step_batch.arrays", "step_batch.arrays.reset",
                                           "step_batch.arrays.info", "step.parts",
                                           "spec.base_pose"}; /* parts of operations */
    size_t nfeatures = sizeof features / sizeof features[0];
    char **caps = rs_arena_alloc(&s->arena, (nops + nfeatures) * sizeof(char *));
    const char *const *presets = rs_preset_names();
    size_t npresets = 0;
    while (presets[npresets])
        npresets++;
    if (!r || !caps)
        return OOM(st);
    robosim__v1__hello_reply__init(r);
    r->major = RS_PROTOCOL_MAJOR;
    r->minor = RS_PROTOCOL_MINOR;
    r->server_version = RS_VERSION;
    for (size_t i = 0; i < nops; i++)
        caps[i] = (char *)ops[i].name;
    for (size_t i = 0; i < nfeatures; i++)
        caps[nops + i] = (char *)features[i];
    r->n_capabilities = nops + nfeatures;
    r->capabilities = caps;
    Robosim__V1__OpRoute *routes = rs_arena_alloc(&s->arena, nops * sizeof *routes);
    Robosim__V1__OpRoute **route_ptrs = rs_arena_alloc(&s->arena, nops * sizeof *route_ptrs);
    if (!routes || !route_ptrs)
        return OOM(st);
    for (size_t i = 0; i < nops; i++) {
        robosim__v1__op_route__init(&routes[i]);
        routes[i].op = (char *)ops[i].name;
        routes[i].route = ops[i].route;
        route_ptrs[i] = &routes[i];
    }
    r->n_routes = nops;
    r->routes = route_ptrs;
    r->n_presets = npresets;
    r->presets = (char **)presets;
    const char *const *tasks = rs_task_names();
    while (tasks[r->n_tasks])
        r->n_tasks++;
    r->tasks = (char **)tasks;
    r->stream_endpoint = s->stream_endpoint;
    r->n_shard_ports = s->nshard_ports;
    r->shard_ports = (uint32_t *)s->shard_ports;
    if (!(r->build = build_info(s)))
        return OOM(st);
    r->history_frames =
        s->stream.xpub && s->cfg.history_frames > 0 ? (uint32_t)s->cfg.history_frames : 0;
    r->history_seconds = r->history_frames ? s->cfg.history_seconds : 0.0;
    r->history_bytes_per_world = r->history_frames ? s->cfg.history_bytes_per_world : 0;
    r->history_bytes = r->history_frames ? s->cfg.history_bytes : 0;
    if (h->client_name && h->client_name[0])
        rs_log(RS_LOG_DEBUG, "hello from '%s' (protocol %u.%u)", h->client_name, h->major, h->minor);
    REPLY(rp, hello, HELLO, r);
    return 0;
}

/* ---- the table --------------------------------------------------------------------------- */

/* columns: request case, name, handler, needs a world, changes it (token), makes a world or a
 * controller (refused to observer-only clients; counted by quotas), spends compute time
 * (refused to observer-only clients), and its envelope: its cost to the loop (rs_cost_t), its
 * largest request (SMALL, or 0: --max-message-size) and how a server of several shards routes
 * it (Route in the proto: ANY, WORLD, WORLDS, ALL_SHARDS, PLACEMENT; shards.c reads it, Hello
 * publishes it for the clients). The request path (handle, below) enforces the size, and
 * test_envelope.c sends every row its worst legal input. */
#define OP(CASE, name, fn, needs_world, mutates, creates, computes, cost, max_bytes, route)   \
    {ROBOSIM__V1__REQUEST__OP_##CASE, name, fn, needs_world, mutates, creates, computes, 0, \
     RS_COST_##cost, max_bytes, ROBOSIM__V1__ROUTE__ROUTE_##route}
/* ... and refused on task worlds (refuse_on_task) */
#define OP_NOT_ON_TASK(CASE, name, fn, needs_world, mutates, creates, computes, cost, max_bytes, \
                       route)                                                                 \
    {ROBOSIM__V1__REQUEST__OP_##CASE, name, fn, needs_world, mutates, creates, computes, 1,  \
     RS_COST_##cost, max_bytes, ROBOSIM__V1__ROUTE__ROUTE_##route}
/* the requests that carry no list or document: ids, a few names and values */
#define SMALL (64u << 10)

static const rs_op_t ops[] = {
    OP(HELLO, "hello", op_hello, 0, 0, 0, 0, BOUNDED, SMALL, ANY),
    OP(LIST_WORLDS, "list_worlds", op_list_worlds, 0, 0, 0, 0, BOUNDED, SMALL, ALL_SHARDS),
    /* a task document: its size, nesting and rejection sampling bounded (rs_task_doc.h) */
    OP(CREATE_WORLD, "create_world", op_create_world, 0, 1, 1, 0, BOUNDED, 0, PLACEMENT),
    OP(DESTROY_WORLD, "destroy_world", op_destroy_world, 1, 1, 0, 0, BOUNDED, SMALL, WORLD),
    OP(GET_SPEC, "get_spec", op_get_spec, 1, 0, 0, 0, BOUNDED, SMALL, WORLD),
    OP(RESET, "reset", op_reset, 1, 1, 0, 0, BOUNDED, 0, WORLD),
    /* with its Jacobian: the stepper */
    OP(STEP, "step", op_step, 1, 1, 0, 0, SLICED, SMALL, WORLD),
    OP(GET_STATE, "get_state", op_get_state, 1, 0, 0, 0, BOUNDED, SMALL, WORLD),
    OP_NOT_ON_TASK(SET_FORCE, "set_force", op_set_force, 1, 1, 0, 0, BOUNDED, SMALL, WORLD),
    OP_NOT_ON_TASK(SET_PARAMS, "set_params", op_set_params, 1, 1, 0, 0, BOUNDED, 0, WORLD),
    OP_NOT_ON_TASK(SET_SCHEDULE, "set_schedule", op_set_schedule, 1, 1, 0, 0, BOUNDED, 0, WORLD),
    OP_NOT_ON_TASK(SET_TARGET, "set_target", op_set_target, 1, 1, 0, 0, BOUNDED, SMALL, WORLD),
    OP(GET_WORKSPACE, "get_workspace", op_get_workspace, 1, 0, 0, 0, BOUNDED, 0, WORLD),
    OP(CLAIM, "claim", op_claim, 1, 0, 1, 0, BOUNDED, SMALL, WORLD),
    OP(SET_STATE, "set_state", op_set_state, 1, 1, 0, 0, BOUNDED, 0, WORLD),
    OP(FORK_WORLD, "fork_world", op_fork_world, 1, 0, 1, 0, BOUNDED, 0, WORLD),
    /* tokens per item */
    OP(STEP_BATCH, "step_batch", op_step_batch, 0, 1, 0, 0, SLICED, 0, WORLDS),
    OP(GET_HISTORY, "get_history", rs_op_get_history, 1, 0, 0, 0, BOUNDED, SMALL, WORLD),
    OP(MONTE_CARLO, "monte_carlo", op_monte_carlo, 1, 0, 0, 1, BACKGROUND, SMALL, WORLD),
    OP(APPLY_WRENCH, "apply_wrench", op_apply_wrench, 1, 1, 0, 0, BOUNDED, SMALL, WORLD),
    OP(LOAD_MOTION_SPEC, "load_motion_spec", op_load_motion_spec, 1, 1, 0, 0, BOUNDED, 0, WORLD),
    OP(GET_MOTION_SPEC, "get_motion_spec", op_get_motion_spec, 1, 0, 0, 0, BOUNDED, SMALL, WORLD),
    OP(CLEAR_MOTION_SPEC, "clear_motion_spec", op_clear_motion_spec, 1, 1, 0, 0, BOUNDED, SMALL,
       WORLD),
    /* the tasks are the process's, not a world's */
    OP(REGISTER_TASK, "register_task", op_register_task, 0, 0, 1, 0, BOUNDED, 0, ANY),
};

int rs_op_allowed(rs_server_t *s, const rs_op_t *op, world_slot_t *w, const char *token,
                  rs_status_t *st)
{
    if (s->caller->observer_only && (op->mutates || op->creates || op->computes))
        return rs_fail(st, RS_EPERM,
                       "%s needs a controller: this client's key is listed as observer-only "
                       "in the server's --authorized-keys",
                       op->name);
    int rc = 0;
    if (w && op->mutates && (rc = rs_auth_check(s, w, token, op->name, st)) < 0)
        return rc;
    if (w && op->not_on_task)
        return refuse_on_task(w, op->name, st);
    return 0;
}

const rs_op_t *rs_op_find(Robosim__V1__Request__OpCase op)
{
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i].op == op)
            return &ops[i];
    return NULL;
}

const rs_op_t *rs_ops(size_t *n)
{
    *n = sizeof ops / sizeof ops[0];
    return ops;
}

/* ---- the request path ------------------------------------------------------------------------ */

void rs_cont_release(rs_cont_t *c)
{
    for (size_t i = 0; c->items && i < c->nitems; i++)
        free(c->items[i].message);
    free(c->items);
    free(c->held);
    if (c->off_free)
        c->off_free(c->off_job);
    c->items = NULL;
    c->held = NULL;
    c->nitems = c->nheld = 0;
    c->off_job = NULL;
    c->off_run = NULL;
    c->off_free = NULL;
    c->off_done = 0;
}

/* Wire code of a core code: the same number, positive. */
static Robosim__V1__ErrorCode wire_code(int rc)
{
    return rc < 0 ? (Robosim__V1__ErrorCode)(-rc) : ROBOSIM__V1__ERROR_CODE__INTERNAL;
}

/* Serialize `rp` into s->out. */
static void pack(rs_server_t *s, const Robosim__V1__Response *rp, const uint8_t **out,
                 size_t *outlen)
{
    size_t n = robosim__v1__response__get_packed_size(rp);
    if (n > s->out_cap) {
        size_t cap = n * 2;
        uint8_t *grown = realloc(s->out, cap);
        if (!grown) {
            /* cannot even reply in full: say so in a reply that fits */
            static uint8_t none[1];
            *out = none;
            *outlen = 0;
            return;
        }
        s->out = grown;
        s->out_cap = cap;
    }
    *outlen = robosim__v1__response__pack(rp, s->out);
    *out = s->out;
}

void rs_error_reply(rs_server_t *s, uint64_t id, int code, const char *message,
                    const uint8_t **out, size_t *outlen)
{
    Robosim__V1__Response rp = ROBOSIM__V1__RESPONSE__INIT;
    Robosim__V1__Error err = ROBOSIM__V1__ERROR__INIT;
    err.code = wire_code(code);
    err.message = (char *)message;
    rp.id = id;
    rp.result_case = ROBOSIM__V1__RESPONSE__RESULT_ERROR;
    rp.error = &err;
    s->errors++;
    pack(s, &rp, out, outlen);
}

/* Field numbers of the unknown fields a request carried, for the UNIMPLEMENTED message. */
static void unknown_ops(const Robosim__V1__Request *rq, char *buf, size_t len)
{
    buf[0] = '\0';
    for (unsigned i = 0; i < rq->base.n_unknown_fields; i++)
        rs_join(buf, len, "%u", rq->base.unknown_fields[i].tag);
}

/* protobuf-c allocates the unpacked request in the reply arena: no malloc per field (a batch
 * of 1024 items is thousands of them), and everything goes at the next rs_arena_reset. What one
 * request may take is budgeted: past it the allocation fails, and so does the unpack. */
typedef struct decode_budget {
    rs_arena_t *arena;
    size_t left;
    int over;
} decode_budget_t;

static void *arena_pb_alloc(void *ctx, size_t size)
{
    decode_budget_t *b = ctx;
    if (size > b->left) {
        b->over = 1;
        return NULL;
    }
    b->left -= size;
    return rs_arena_alloc(b->arena, size);
}
static void arena_pb_free(void *arena, void *p) {} /* everything goes at rs_arena_reset */

void rs_server_handle(rs_server_t *s, const uint8_t *req, size_t len, const uint8_t **out,
                      size_t *outlen)
{
    rs_server_handle_from(s, NULL, req, len, out, outlen);
}

static void handle(rs_server_t *s, const rs_caller_t *caller, const uint8_t *req, size_t len,
                   const uint8_t **out, size_t *outlen);

void rs_server_handle_from(rs_server_t *s, const rs_caller_t *caller, const uint8_t *req,
                           size_t len, const uint8_t **out, size_t *outlen)
{
    /* the reply buffer of an earlier huge reply goes once that reply was sent */
    if (s->out_cap > ARENA_KEEP) {
        free(s->out);
        s->out = NULL;
        s->out_cap = 0;
    }
    /* the loop hands its request's progress in s->cont (it can park); in-process callers get
     * a fresh one that cannot */
    rs_cont_t own = {0};
    if (!s->cont)
        s->cont = &own;
    handle(s, caller, req, len, out, outlen);
    s->cont = NULL;
    /* keep the arena's chunks between requests, but give back at once what one huge request
     * grew (its large chunks are mapped: unmapping returns them to the system) */
    if (rs_arena_capacity(&s->arena) > ARENA_KEEP) {
        rs_arena_free(&s->arena);
        rs_arena_init(&s->arena, 64 << 10);
    }
}

static void handle(rs_server_t *s, const rs_caller_t *caller, const uint8_t *req, size_t len,
                   const uint8_t **out, size_t *outlen)
{
    static const rs_caller_t in_process = {"", "", 0};
    s->caller = caller ? caller : &in_process;
    decode_budget_t budget = {&s->arena, DECODE_FACTOR * len + DECODE_SLACK, 0};
    ProtobufCAllocator in_arena = {arena_pb_alloc, arena_pb_free, &budget};
    rs_status_t st;
    rs_status_clear(&st);
    rs_arena_reset(&s->arena);
    s->requests++;
    s->request_time = rs_clock();

    if (len > s->cfg.max_message_size) {
        snprintf(st.message, sizeof st.message,
                 "request of %zu bytes is over this server's limit of %zu bytes (--max-message-size)",
                 len, s->cfg.max_message_size);
        rs_error_reply(s, 0, RS_EEXHAUSTED, st.message, out, outlen);
        return;
    }
    Robosim__V1__Request *rq = robosim__v1__request__unpack(&in_arena, len, req);
    if (!rq && budget.over) {
        snprintf(st.message, sizeof st.message,
                 "the request of %zu bytes decodes to more than this server allows one request "
                 "(%d times its size plus %u KiB): send fewer repeated fields per request, e.g. "
                 "split the batch",
                 len, DECODE_FACTOR, DECODE_SLACK >> 10);
        rs_error_reply(s, 0, RS_EEXHAUSTED, st.message, out, outlen);
        return;
    }
    if (!rq) {
        snprintf(st.message, sizeof st.message,
                 "the %zu bytes received are not a valid robosim.v1.Request; serialize a Request "
                 "message from proto/robosim/v1/robosim.proto",
                 len);
        rs_error_reply(s, 0, RS_EMALFORMED, st.message, out, outlen);
        return;
    }

    if (rs_wire_check_strings(&robosim__v1__request__descriptor, req, len, &st) < 0) {
        rs_error_reply(s, rq->id, st.code, st.message, out, outlen);
        return;
    }

    Robosim__V1__Response rp = ROBOSIM__V1__RESPONSE__INIT;
    rp.id = rq->id;
    const rs_op_t *op = rs_op_find(rq->op_case);
    int rc = 0;
    if (!op) {
        char tags[64];
        unknown_ops(rq, tags, sizeof tags);
        rc = rs_fail(&st, RS_EUNIMPL,
                     rq->op_case == ROBOSIM__V1__REQUEST__OP__NOT_SET && !tags[0]
                         ? "the request carries no operation; set one of the Request.op fields"
                         : "unknown operation (field %s); this server speaks protocol %d.%d, see "
                           "Hello.capabilities",
                     tags[0] ? tags : "?", RS_PROTOCOL_MAJOR, RS_PROTOCOL_MINOR);
    } else if (op->max_bytes && len > op->max_bytes) {
        rc = rs_fail(&st, RS_EEXHAUSTED,
                     "a %s request of %zu bytes is over its limit of %zu bytes; it carries no "
                     "list or document, so send only the fields it needs",
                     op->name, len, op->max_bytes);
    } else {
        world_slot_t *w = NULL;
        if (op->needs_world && !(w = rs_worlds_find(s, rq->world_id)))
            rc = rs_fail(&st, RS_ENOTFOUND, "no world %llu on this server (ListWorlds shows the %d there are)",
                         (unsigned long long)rq->world_id, rs_worlds_total(s));
        else
            rc = rs_op_allowed(s, op, w, rq->token, &st); /* the row's policy, checked once */
        if (rc == 0)
            rc = op->fn(s, rq, w, &rp, &st);
        if (rs_log_enabled(RS_LOG_DEBUG))
            rs_log(RS_LOG_DEBUG, "request %llu %s world %llu -> %s", (unsigned long long)rq->id,
                   op->name, (unsigned long long)rq->world_id, rc < 0 ? rs_errname(rc) : "ok");
    }
    if (rc < 0)
        rs_error_reply(s, rq->id, rc, st.message[0] ? st.message : rs_strerror(rc), out, outlen);
    else if (rc == RS_PARKED)
        *out = NULL, *outlen = 0; /* no reply yet: the loop holds the request */
    else
        pack(s, &rp, out, outlen);
    if (rc != RS_PARKED)
        rs_cont_release(s->cont); /* answered: its progress goes */
    /* no robosim__v1__request__free_unpacked: the request lives in the arena (in_arena), which
     * the next request resets; walking it only to call a no-op free costs a batch's time */
}
