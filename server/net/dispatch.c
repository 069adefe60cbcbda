/* The dispatch table (one row per request type) and the handlers. A handler validates
 * everything before it changes anything, so a refused request leaves the world as it was. */
#include "rs_build_info.h"
#include "rs_codec.h"
#include "rs_randomize.h"
#include "rs_sensitivity.h"
#include "rs_log.h"
#include "rs_montecarlo.h"
#include "rs_motion_spec.h"
#include "rs_snapshot.h"
#include "rs_task.h"
#include "rs_task_doc.h"
#include "server_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif
#include <time.h>

#define REPLY(rp, field, CASE, value)                                                          \
    do {                                                                                       \
        (rp)->result_case = ROBOSIM__V1__RESPONSE__RESULT_##CASE;                              \
        (rp)->field = (value);                                                                 \
    } while (0)

#define OOM(st) rs_fail((st), RS_EEXHAUSTED, "server out of memory building the reply")

static Robosim__V1__Ack ack = ROBOSIM__V1__ACK__INIT;

/* Entity index by name, or RS_ENOTFOUND naming the entities there are. */
static int find_entity(const rs_world_t *w, const char *name, rs_status_t *st)
{
    int e = rs_model_entity(w->model, name ? name : "");
    if (e >= 0)
        return e;
    char names[200] = "";
    for (int i = 0; i < w->model->nentities; i++)
        rs_join(names, sizeof names, "'%s'", w->model->ent[i].name);
    return rs_fail(st, RS_ENOTFOUND, "no entity '%s' in world (entities: %s)", name ? name : "",
                   names);
}

/* WorldInfo of a world slot, with its lease. */
static Robosim__V1__WorldInfo *world_info(rs_server_t *s, const world_slot_t *slot)
{
    Robosim__V1__WorldInfo *wi = rs_codec_world_info(&s->arena, slot->id, slot->world);
    if (wi)
        wi->lease_remaining = rs_lease_remaining(s, slot);
    return wi;
}

/* A CreateWorldReply (CreateWorld, ForkWorld, Claim): the world and its controller token. */
static Robosim__V1__CreateWorldReply *controller_reply(rs_server_t *s, const world_slot_t *slot)
{
    Robosim__V1__CreateWorldReply *cr = rs_arena_alloc(&s->arena, sizeof *cr);
    if (!cr)
        return NULL;
    robosim__v1__create_world_reply__init(cr);
    if (!(cr->world = world_info(s, slot)) ||
        !(cr->token = rs_arena_strdup(&s->arena, slot->token)))
        return NULL;
    return cr;
}

/* Add `world` to the server's table with a fresh controller token (the caller checked the
 * world limit). On failure the world is destroyed and NULL returned (reason in st). */
static world_slot_t *add_world(rs_server_t *s, rs_world_t *world, rs_status_t *st)
{
    world_slot_t *slot = &s->worlds[s->nworlds];
    memset(slot, 0, sizeof *slot);
    if (rs_auth_grant(s, slot, st) < 0 || rs_server_take_id(s, &slot->id, st) < 0) {
        rs_world_destroy(&world);
        return NULL;
    }
    s->nworlds++;
    slot->world = world;
    snprintf(slot->owner, sizeof slot->owner, "%s", s->caller->key);
    rs_worlds_count(s, slot->owner, 1, 1);
    rs_server_adopt(s, slot);
    return slot;
}

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

/* What a quota key names, for a refusal's message. */
static const char *key_kind(const char *key)
{
    if (!strncmp(key, "curve:", 6))
        return "CURVE key";
    if (!strcmp(key, "ip:loopback"))
        return "address (every client on this machine's loopback shares it)";
    if (!strncmp(key, "ip:", 3))
        return "address";
    if (!strncmp(key, "uid:", 4))
        return "user id";
    return "connection";
}

/* Whether the calling client may take one more world (create, fork or claim `what`): the
 * worlds its key (rs_caller_t.key) holds are under --max-worlds-per-client and under
 * --max-worlds-share of --max-worlds. In-process callers have no quota. */
static int world_quota_ok(const rs_server_t *s, const char *what, rs_status_t *st)
{
    const char *who = s->caller->key;
    int max = s->cfg.max_worlds_per_client, n = 0;
    double share = s->cfg.max_worlds_share > 0 ? s->cfg.max_worlds_share : 1.0;
    int cap = (int)floor(share * s->cfg.max_worlds + 1e-9);
    if (cap < 1)
        cap = 1;
    if (!who[0])
        return 0;
    n = rs_worlds_owned(s, who);
    if (max > 0 && n >= max && max <= cap)
        return rs_fail(st, RS_EEXHAUSTED,
                       "this client's %s already holds %d worlds, its quota "
                       "(--max-worlds-per-client %d; worlds it created, forked or claimed count, "
                       "from every connection it has); destroy one of them (DestroyWorld) before "
                       "it can %s another",
                       key_kind(who), n, max, what);
    if (n >= cap)
        return rs_fail(st, RS_EEXHAUSTED,
                       "this client's %s already holds %d worlds, the most one client may "
                       "(--max-worlds-share %g of --max-worlds %d: the rest is kept for other "
                       "clients); destroy one of them (DestroyWorld) before it can %s another",
                       key_kind(who), n, share, s->cfg.max_worlds, what);
    return 0;
}

/* ---- handlers -------------------------------------------------------------------------- */

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
    r->n_presets = npresets;
    r->presets = (char **)presets;
    const char *const *tasks = rs_task_names();
    while (tasks[r->n_tasks])
        r->n_tasks++;
    r->tasks = (char **)tasks;
    r->stream_endpoint = s->stream_endpoint;
    if (!(r->build = build_info(s)))
        return OOM(st);
    r->history_frames = s->xpub && s->cfg.history_frames > 0 ? (uint32_t)s->cfg.history_frames : 0;
    r->history_seconds = r->history_frames ? s->cfg.history_seconds : 0.0;
    r->history_bytes_per_world = r->history_frames ? s->cfg.history_bytes_per_world : 0;
    r->history_bytes = r->history_frames ? s->cfg.history_bytes : 0;
    if (h->client_name && h->client_name[0])
        rs_log(RS_LOG_DEBUG, "hello from '%s' (protocol %u.%u)", h->client_name, h->major, h->minor);
    REPLY(rp, hello, HELLO, r);
    return 0;
}

static int op_list_worlds(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                          Robosim__V1__Response *rp, rs_status_t *st)
{
    Robosim__V1__ListWorldsReply *r = rs_arena_alloc(&s->arena, sizeof *r);
    Robosim__V1__WorldInfo **infos =
        rs_arena_alloc(&s->arena, (size_t)s->nworlds * sizeof(void *) + 1);
    if (!r || !infos)
        return OOM(st);
    robosim__v1__list_worlds_reply__init(r);
    for (int i = 0; i < s->nworlds; i++)
        if (!(infos[i] = world_info(s, &s->worlds[i])))
            return OOM(st);
    r->n_worlds = (size_t)s->nworlds;
    r->worlds = infos;
    REPLY(rp, list_worlds, LIST_WORLDS, r);
    return 0;
}

/* Register the task document `doc` (rs_task_doc_register); *name the registered task's name.
 * `want`, when not empty, must be that name. */
static int register_task(const char *doc, const char *want, const char **name, rs_status_t *st)
{
    const rs_task_t *t;
    int rc = rs_task_doc_register(doc, strlen(doc), &t, st);
    if (rc < 0)
        return rc;
    if (want && want[0] && strcmp(want, t->name) != 0)
        return rs_fail(st, RS_EINVAL, "CreateWorld.task '%s' differs from the task document's "
                       "name '%s'; leave task empty or name the document's task", want, t->name);
    *name = t->name;
    return 0;
}

static int op_register_task(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                            Robosim__V1__Response *rp, rs_status_t *st)
{
    const char *doc = rq->register_task->document ? rq->register_task->document : "";
    const char *name;
    int rc = register_task(doc, NULL, &name, st);
    if (rc < 0)
        return rc;
    Robosim__V1__RegisterTaskReply *r = rs_arena_alloc(&s->arena, sizeof *r);
    if (!r)
        return OOM(st);
    robosim__v1__register_task_reply__init(r);
    r->name = (char *)name;
    rs_log(RS_LOG_INFO, "task '%s' registered", name);
    REPLY(rp, register_task, REGISTER_TASK, r);
    return 0;
}

static int op_create_world(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                           Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__CreateWorld *c = rq->create_world;
    if (rs_worlds_total(s) >= s->cfg.max_worlds)
        return rs_fail(st, RS_EEXHAUSTED,
                       "this server holds at most %d worlds (--max-worlds); destroy one first",
                       s->cfg.max_worlds);
    int rc = world_quota_ok(s, "create", st);
    if (rc < 0)
        return rc;
    rs_param_t *params = rs_codec_params(&s->arena, c->params, c->n_params);
    if (!params)
        return OOM(st);
    if (rs_stream_check_params(s, params, c->n_params, st) < 0)
        return st->code;
    const char *task = c->task;
    if (c->task_document && c->task_document[0] &&
        (rc = register_task(c->task_document, c->task, &task, st)) < 0)
        return rc;
    rs_world_t *world =
        task && task[0]
            ? rs_world_new_task(task, c->preset, params, c->n_params, c->seed, st)
            : rs_world_new(c->preset, params, c->n_params, c->seed, st);
    if (!world)
        return st->code;
    if (c->n_randomize) { /* the first episode draws them too */
        rs_randomize_item_t *items = rs_codec_randomize_items(&s->arena, c->randomize,
                                                              c->n_randomize);
        if (!items || rs_world_set_randomize(world, items, c->n_randomize, st) < 0 ||
            rs_world_reset(world, c->seed, st) < 0) {
            rs_world_destroy(&world);
            return items ? st->code : OOM(st);
        }
    }
    world_slot_t *slot = add_world(s, world, st);
    if (!slot)
        return st->code;
    rs_log(RS_LOG_INFO, "world %llu created from preset '%s'", (unsigned long long)slot->id,
           world->model->preset);
    Robosim__V1__CreateWorldReply *cr = controller_reply(s, slot);
    if (!cr)
        return OOM(st);
    REPLY(rp, create_world, CREATE_WORLD, cr);
    return 0;
}

static int op_destroy_world(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                            Robosim__V1__Response *rp, rs_status_t *st)
{
    uint64_t id = w->id;
    rs_server_drop_world(s, w);
    rs_log(RS_LOG_INFO, "world %llu destroyed", (unsigned long long)id);
    REPLY(rp, destroy_world, DESTROY_WORLD, &ack);
    return 0;
}

static int op_get_spec(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                       Robosim__V1__Response *rp, rs_status_t *st)
{
    Robosim__V1__Spec *spec = rs_codec_spec(&s->arena, w->id, w->world);
    if (!spec)
        return OOM(st);
    spec->world->lease_remaining = rs_lease_remaining(s, w);
    REPLY(rp, get_spec, GET_SPEC, spec);
    return 0;
}

static int reply_state(rs_server_t *s, world_slot_t *w, Robosim__V1__Response *rp,
                       Robosim__V1__Response__ResultCase which, rs_status_t *st)
{
    Robosim__V1__State *state = rs_codec_state(&s->arena, w->id, w->world);
    if (!state)
        return OOM(st);
    state->seq = w->stream_seq;
    /* a Reset or SetState jumps the world: watchers see it like a Step */
    if (which == ROBOSIM__V1__RESPONSE__RESULT_RESET || which == ROBOSIM__V1__RESPONSE__RESULT_SET_STATE)
        rs_stream_offer(s, w, state);
    rp->result_case = which;
    switch (which) {
    case ROBOSIM__V1__RESPONSE__RESULT_RESET: rp->reset = state; break;
    case ROBOSIM__V1__RESPONSE__RESULT_STEP: rp->step = state; break;
    case ROBOSIM__V1__RESPONSE__RESULT_SET_STATE: rp->set_state = state; break;
    default: rp->get_state = state; break;
    }
    return 0;
}

static int op_reset(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                    Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__Reset *r = rq->reset;
    rs_world_t *world = w->world;
    uint64_t seed = r->seed_given_case == ROBOSIM__V1__RESET__SEED_GIVEN_SEED ? r->seed
                                                                             : world->data->seed;
    if (r->n_randomize && r->randomize_clear)
        return rs_fail(st, RS_EINVAL, "Reset sets both randomize and randomize_clear; set one");
    if (r->n_randomize || r->randomize_clear) {
        rs_randomize_item_t *items = rs_codec_randomize_items(&s->arena, r->randomize,
                                                              r->n_randomize);
        if (!items)
            return OOM(st);
        if (rs_world_set_randomize(world, items, r->n_randomize, st) < 0)
            return st->code;
    }
    int rc = rs_world_reset(world, seed, st); /* a task world starts a new episode */
    if (rc < 0)
        return rc;
    return reply_state(s, w, rp, ROBOSIM__V1__RESPONSE__RESULT_RESET, st);
}

/* The number of control steps a Step asks for, validated. */
static int step_count(const rs_server_t *s, const Robosim__V1__Step *sp, double dt,
                      uint64_t *n, rs_status_t *st)
{
    uint64_t max = s->cfg.max_steps_per_request;
    if (sp->length_case == ROBOSIM__V1__STEP__LENGTH__NOT_SET)
        return rs_fail(st, RS_EINVAL,
                       "the Step sets neither steps nor duration; set one of them (a Step of "
                       "one control step: steps = 1)");
    if (sp->length_case == ROBOSIM__V1__STEP__LENGTH_STEPS) {
        if (!sp->steps)
            return rs_fail(st, RS_EINVAL, "steps is 0; a Step takes at least one control step");
        if (sp->steps > max)
            return rs_fail(st, RS_ERANGE,
                           "%u steps exceed this server's limit of %llu per request "
                           "(--max-steps-per-request); split the request",
                           sp->steps, (unsigned long long)max);
        *n = sp->steps;
        return 0;
    }
    if (!isfinite(sp->duration))
        return rs_fail(st, RS_EINVAL, "duration is not finite");
    if (sp->duration <= 0.0)
        return rs_fail(st, RS_EINVAL,
                       "duration must be positive (got %g s); set duration in seconds or steps",
                       sp->duration);
    double k = sp->duration / dt;
    if (k > (double)max)
        return rs_fail(st, RS_ERANGE,
                       "duration %g s is %.3g control steps of %g s, over this server's limit of "
                       "%llu per request (--max-steps-per-request)",
                       sp->duration, k, dt, (unsigned long long)max);
    double kr = nearbyint(k);
    if (kr < 1.0 || fabs(k - kr) > 1e-9 * fmax(1.0, kr))
        return rs_fail(st, RS_EINVAL,
                       "duration %g s is not a whole number of control steps of %g s; use a "
                       "multiple of control_dt or set steps",
                       sp->duration, dt);
    *n = (uint64_t)kr;
    return 0;
}

/* Step.parts: every part named is one of StatePart's (checked before the Step changes
 * anything). */
static int parts_ok(const Robosim__V1__Step *sp, rs_status_t *st)
{
    for (size_t i = 0; i < sp->n_parts; i++)
        if (sp->parts[i] < ROBOSIM__V1__STATE_PART__STATE_PART_STATE ||
            sp->parts[i] > ROBOSIM__V1__STATE_PART__STATE_PART_STATS)
            return rs_fail(st, RS_EINVAL,
                           "Step.parts[%zu] is %d, not a part of State; name STATE (1), SENSORS "
                           "(2), EVENTS (3), TASK (4) or STATS (5), or leave parts empty for all",
                           i, (int)sp->parts[i]);
    return 0;
}

/* Cut a Step's reply state down to the parts the Step asks for (all when it names none). Done
 * after the state was offered to the observer stream, whose watchers get the whole state. */
static void keep_parts(Robosim__V1__State *state, const Robosim__V1__Step *sp)
{
    if (!state || !sp->n_parts)
        return;
    unsigned want = 0;
    for (size_t i = 0; i < sp->n_parts; i++)
        want |= 1u << sp->parts[i];
    int has_state = want & (1u << ROBOSIM__V1__STATE_PART__STATE_PART_STATE);
    int has_sensors = want & (1u << ROBOSIM__V1__STATE_PART__STATE_PART_SENSORS);
    if (!has_state && !has_sensors)
        state->n_entities = 0;
    for (size_t e = 0; e < state->n_entities; e++) {
        Robosim__V1__EntityState *es = state->entities[e];
        if (!has_state) {
            es->n_state = es->n_commands = 0;
            es->mode = (char *)protobuf_c_empty_string;
        }
        if (!has_sensors)
            es->n_sensors = 0;
    }
    if (!(want & (1u << ROBOSIM__V1__STATE_PART__STATE_PART_EVENTS))) {
        state->n_events = 0;
        state->events_dropped = 0;
    }
    if (!(want & (1u << ROBOSIM__V1__STATE_PART__STATE_PART_TASK)))
        state->task = NULL;
    if (!(want & (1u << ROBOSIM__V1__STATE_PART__STATE_PART_STATS)))
        state->stats = NULL;
}

/* The State of w after a Step, in arena a; its seq is the stream's so far (rs_stream_offer
 * moves it on when the state is published). */
static int step_state(world_slot_t *w, rs_arena_t *a, Robosim__V1__State **out, rs_status_t *st)
{
    if (!(*out = rs_codec_state(a, w->id, w->world)))
        return OOM(st);
    (*out)->seq = w->stream_seq;
    return 0;
}

/* How a Step may drive world w: a task world by its action vector only, other worlds by
 * commands (or an action, refused by the task step as "runs no task"); never both. */
static int drive_rule(const world_slot_t *w, size_t ncommands, size_t naction, rs_status_t *st)
{
    if (naction && ncommands)
        return rs_fail(st, RS_EINVAL, "set either action or commands in a Step, not both");
    if (w->world->task && ncommands)
        return rs_fail(st, RS_EINVAL,
                       "world %llu runs task '%s': drive it with Step.action (TaskSpec.action), "
                       "not commands",
                       (unsigned long long)w->id, w->world->task->name);
    return 0;
}

/* Save world w as it is now (a control-step boundary) into w->boundary, for rollback: a
 * copy of its data (rs_data_copy), made into data allocated on the first save. */
static int save_boundary(world_slot_t *w, rs_status_t *st)
{
    const rs_model_t *m = w->world->model;
    if (w->boundary && w->boundary_model != m)
        rs_server_drop_boundary(w); /* made for a model the world no longer runs */
    if (!w->boundary) {
        if (!(w->boundary = rs_data_new(m, 0, st)))
            return st ? st->code : RS_EEXHAUSTED;
        w->boundary_model = rs_model_retain(m);
    }
    return rs_data_copy(m, w->boundary, w->world->data, st);
}

/* Bring world w back to the boundary save_boundary saved (a control step was interrupted). */
static void restore_boundary(world_slot_t *w)
{
    rs_status_t rst;
    if (rs_data_copy(w->world->model, w->world->data, w->boundary, &rst) < 0)
        rs_log(RS_LOG_ERROR, "world %llu: cannot roll back an interrupted control step: %s",
               (unsigned long long)w->id, rst.message); /* out of memory for schedules only */
}

/* Whether a task world's episode ended (a task Step stops there). */
static int episode_over(const rs_world_t *world)
{
    return world->task && (world->data->task[RS_TASK_TERMINATED] != 0.0 ||
                           world->data->task[RS_TASK_TRUNCATED] != 0.0);
}

/* The loop runs a control step for at most FUSE_SECONDS (the watchdog's abort ends it then, and
 * it is rolled back): a longer one goes to the stepper thread, so other clients are served
 * meanwhile. A world whose control steps there took more than SLOW_STEP_SECONDS of CPU time
 * each (not wall time: a busy machine does not make a world slow) goes there from its next
 * Step's start. */
#define FUSE_SECONDS 0.010
#define SLOW_STEP_SECONDS 0.005

/* run_control_steps's return value: the fuse ended a control step (rolled back): run it off the
 * loop. */
#define RUN_OFF_LOOP 2

/* Run world w (commands in place) toward n control steps in all, *done of them already
 * made (*done > 0 or `resume`: the same Step goes on: events kept, no action applied again),
 * through its task when it runs one or an action was given. Returns when the Step is over
 * (*done == n, or the episode ended), after one slice when `one_slice`, once rs_clock() passes
 * `deadline` (the request's budget), or on stop: 0, or an error. `abort` is the flag w's data
 * is wired to. With `fuse` (the loop only) a control step still running FUSE_SECONDS after its
 * slice began is interrupted and rolled back: RUN_OFF_LOOP. Runs on StepBatch's workers and on
 * the stepper too: touches world w only (and reads s->cfg, s->stop).
 *
 * Every slice runs from a saved boundary (a copy of the data), so a control step the abort flag
 * interrupts is rolled back to the slice's start (the world then is at a control-step
 * boundary: *done says which). */
static int run_control_steps(rs_server_t *s, world_slot_t *w, const double *action,
                             size_t naction, uint64_t n, int resume, int one_slice,
                             double deadline, int fuse, atomic_int *abort, uint64_t *done,
                             rs_status_t *st)
{
    rs_world_t *world = w->world;
    int task = world->task || naction;
    for (;;) {
        int going_on = resume || *done > 0, rc = 0;
        if ((rc = save_boundary(w, st)) < 0)
            return rc;
        double t0 = rs_clock(), yield_at = fmin(t0 + s->cfg.slice_seconds, deadline);
        if (fuse)
            atomic_store_explicit(&s->abort_at, fmin(deadline, t0 + FUSE_SECONDS),
                                  memory_order_relaxed);
        uint64_t k = 0, want = n - *done;
        if (task) {
            rc = rs_world_task_step_until(world, going_on ? NULL : action, going_on ? 0 : naction,
                                          want, yield_at, going_on, &k, st);
        } else {
            if (!going_on) {
                world->data->nevents = 0;
                world->data->events_dropped = 0;
            }
            rc = rs_step_until(world->model, world->data, want, yield_at, &k, st);
        }
        if (fuse)
            atomic_store_explicit(&s->abort_at, deadline, memory_order_relaxed);
        double now = rs_clock();
        if (rc == RS_EDEADLINE) {
            /* interrupted partway through a control step: back to the slice's start. The
             * watchdog may set the flag a moment after a slice ended in time, so an interrupt
             * before the deadline (and not a stop, nor the fuse) only costs a retry */
            restore_boundary(w);
            rs_status_clear(st);
            if (now < deadline && !rs_server_stopping(s)) {
                atomic_store_explicit(abort, 0, memory_order_relaxed);
                if (fuse && now >= t0 + FUSE_SECONDS)
                    return RUN_OFF_LOOP;
                continue;
            }
            return 0;
        }
        if (rc == 0 && k == 0 && now < deadline && !rs_server_stopping(s)) {
            /* stopped at the first boundary by a flag the watchdog set late (see above) */
            atomic_store_explicit(abort, 0, memory_order_relaxed);
            continue;
        }
        *done += k;
        if (rc < 0) {
            rs_log(RS_LOG_WARN, "world %llu: %s", (unsigned long long)w->id, st->message);
            return rc;
        }
        if (*done >= n || (task && episode_over(world)) || one_slice || now >= deadline ||
            rs_server_stopping(s))
            return 0;
    }
}

/* The request's budget deadline from now (what its earlier slices left), armed on the
 * watchdog: the abort flag is set when it passes. The loop's thread only. */
static double arm_budget(rs_server_t *s)
{
    double deadline = rs_clock() + fmax(0.0, s->cfg.max_request_seconds - s->cont->used);
    atomic_store_explicit(&s->abort_at, deadline, memory_order_relaxed);
    if (!rs_server_stopping(s))
        atomic_store_explicit(&s->abort, 0, memory_order_relaxed);
    return deadline;
}

/* The request's slice is over: the watchdog disarmed, the time spent counted. */
static void disarm_budget(rs_server_t *s, double deadline)
{
    atomic_store_explicit(&s->abort_at, INFINITY, memory_order_relaxed);
    s->cont->used = s->cfg.max_request_seconds - (deadline - rs_clock());
}

/* Why a Step stopped short of what it asked: the server is stopping (UNAVAILABLE) or its
 * compute budget ran out (DEADLINE_EXCEEDED). The world is at a control-step boundary. */
static int stopped_short(rs_server_t *s, const world_slot_t *w, uint64_t done, uint64_t asked,
                         rs_status_t *st)
{
    const rs_data_t *d = w->world->data;
    if (rs_server_stopping(s))
        return rs_fail(st, RS_EUNAVAIL,
                       "the server is stopping: world %llu stopped after %llu of the %llu control "
                       "steps asked (t = %.9g s, step_count %llu); reconnect when it is back",
                       (unsigned long long)w->id, (unsigned long long)done,
                       (unsigned long long)asked, d->t, (unsigned long long)d->step_count);
    return rs_fail(st, RS_EDEADLINE,
                   "world %llu stopped after %llu of the %llu control steps asked (t = %.9g s, "
                   "step_count %llu): over this server's compute budget of %g s per request "
                   "(--max-request-seconds); the world can be stepped on from there; ask for "
                   "fewer steps per request",
                   (unsigned long long)w->id, (unsigned long long)done, (unsigned long long)asked,
                   d->t, (unsigned long long)d->step_count, s->cfg.max_request_seconds);
}

/* Check a Step's count and commands for world w and apply the commands: *n is the control
 * steps it asks for. Nothing changes on error. */
static int apply_step_commands(rs_server_t *s, world_slot_t *w, const Robosim__V1__Step *sp,
                               uint64_t *n, rs_status_t *st)
{
    rs_world_t *world = w->world;
    int rc = step_count(s, sp, world->model->control_dt, n, st);
    if (rc < 0 || (rc = parts_ok(sp, st)) < 0 || (rc = drive_rule(w, sp->n_commands, sp->n_action, st)) < 0)
        return rc;
    if (!world->task && !sp->n_action) {
        /* check every command before applying any */
        int ents[RS_MAX_ENTITIES * 4];
        if (sp->n_commands > sizeof ents / sizeof ents[0])
            return rs_fail(st, RS_EINVAL, "%zu commands in one Step; at most one per entity",
                           sp->n_commands);
        for (size_t i = 0; i < sp->n_commands; i++) {
            const Robosim__V1__ActuatorCommand *c = sp->commands[i];
            if ((ents[i] = find_entity(world, c->entity, st)) < 0)
                return ents[i];
            for (size_t j = 0; j < i; j++)
                if (ents[j] == ents[i])
                    return rs_fail(st, RS_EINVAL, "entity '%s' is commanded twice in one Step",
                                   c->entity);
            if ((rc = rs_check_commands(world->model, ents[i], c->values, c->n_values, st)) < 0)
                return rc;
        }
        for (size_t i = 0; i < sp->n_commands; i++)
            rs_set_commands(world->model, world->data, ents[i], sp->commands[i]->values,
                            sp->commands[i]->n_values, NULL);
    }
    return 0;
}

/* A Step's control steps run on the stepper thread: it steps a copy of the world's data (the
 * world itself stays at the hand-off boundary, which the loop may read meanwhile), and the loop
 * copies the result back when it resumes the request. */
typedef struct step_job {
    world_slot_t slot;  /* the world's slot at the hand-off: its world is `world`, its
                           boundary the job's own */
    rs_world_t world;    /* the world with its data replaced by the copy */
    double *action;      /* Step.action (malloc'd; the request is unpacked anew on resume) */
    size_t naction;
    uint64_t asked, done;
    int resume;
    double deadline, ended; /* rs_clock() times: the budget's end, the run's end */
    int rc;
    rs_status_t st;
    int slow;            /* its control steps took over SLOW_STEP_SECONDS of CPU time each */
    const rs_model_t *model; /* the model its data was made for, retained while the job lives
                                (the world may go before a parked job is freed) */
} step_job_t;

static void step_job_free(void *p)
{
    step_job_t *j = p;
    if (!j)
        return;
    rs_server_drop_boundary(&j->slot);
    rs_data_destroy(&j->world.data); /* reads its model: released after */
    rs_model_release(&j->model);
    free(j->action);
    free(j);
}

/* On the stepper: the Step to its end, its budget or a stop. */
static void step_job_run(rs_server_t *s, rs_cont_t *c)
{
    step_job_t *j = c->off_job;
    rs_status_clear(&j->st);
    atomic_store_explicit(&s->off_abort_at, j->deadline, memory_order_relaxed);
    if (!rs_server_stopping(s))
        atomic_store_explicit(&s->off_abort, 0, memory_order_relaxed);
    struct timespec c0, c1;
    uint64_t before = j->done;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    j->rc = run_control_steps(s, &j->slot, j->action, j->naction, j->asked, j->resume, 0,
                              j->deadline, 0, &s->off_abort, &j->done, &j->st);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    atomic_store_explicit(&s->off_abort_at, INFINITY, memory_order_relaxed);
    j->ended = rs_clock();
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    j->slow = j->done == before || cpu / (double)(j->done - before) > SLOW_STEP_SECONDS;
}

/* Hand the rest of Step `sp` on world w to the stepper (the loop only): RS_PARKED, or an error
 * (out of memory) with nothing changed. */
static int step_offload(rs_server_t *s, world_slot_t *w, const Robosim__V1__Step *sp,
                        rs_status_t *st)
{
    rs_cont_t *c = s->cont;
    const rs_model_t *m = w->world->model;
    step_job_t *j = calloc(1, sizeof *j);
    if (!j)
        return OOM(st);
    j->slot = *w;
    j->slot.boundary = NULL; /* the job's own, made by its first save */
    j->slot.boundary_model = NULL;
    j->slot.history = NULL;
    j->model = rs_model_retain(m);
    j->world = *w->world;
    j->slot.world = &j->world;
    j->world.data = rs_data_new(m, 0, st);
    if (!j->world.data || rs_data_copy(m, j->world.data, w->world->data, st) < 0 ||
        (sp->n_action && !(j->action = malloc(sp->n_action * sizeof *j->action))) ||
        (!c->held && !(c->held = malloc(sizeof *c->held)))) {
        step_job_free(j);
        return st->code < 0 ? st->code : OOM(st);
    }
    rs_data_set_abort(j->world.data, &s->off_abort);
    if (sp->n_action)
        memcpy(j->action, sp->action, sp->n_action * sizeof *j->action);
    j->naction = sp->n_action;
    j->asked = c->asked;
    j->done = c->done;
    j->resume = c->resuming || c->done > 0;
    j->deadline = rs_clock() + fmax(0.0, s->cfg.max_request_seconds - c->used);
    c->held[0] = w->id;
    c->nheld = 1;
    c->off_run = step_job_run;
    c->off_free = step_job_free;
    c->off_job = j;
    c->off_done = 0;
    c->park = 1;
    return RS_PARKED;
}

/* The stepper ran the Step: its data becomes world w's, its progress the request's. Returns
 * the run's result (0 or its error, reason in st). */
static int step_take_back(rs_server_t *s, world_slot_t *w, rs_status_t *st)
{
    rs_cont_t *c = s->cont;
    step_job_t *j = c->off_job;
    int rc = rs_data_copy(w->world->model, w->world->data, j->world.data, st);
    if (rc == 0) {
        c->done = j->done;
        w->slow_steps = j->slow;
        if ((rc = j->rc) < 0)
            *st = j->st;
    }
    w->ckpt_clean = 0;
    c->used = s->cfg.max_request_seconds - (j->deadline - j->ended);
    c->off_free(j);
    c->off_job = NULL;
    c->off_run = NULL;
    c->off_free = NULL;
    return rc;
}

/* Step: on the loop (s->cont->can_park) a Step not done within one slice is parked and resumed
 * between other requests (server.c) until it is done, its budget runs out or the server stops;
 * the reply then carries every event of the whole Step. A control step too long for the loop
 * (the fuse, see run_control_steps) sends the rest of the Step to the stepper thread, and so
 * does a world known slow; the world's other requests wait for it. In-process it runs to its end
 * (or its budget). */
/* A Step with its Jacobian (Step.jacobian): in one piece, the sensitivity attached to the
 * world's data for its duration (rs_sensitivity.h). */
static int step_with_jacobian(rs_server_t *s, world_slot_t *w, const Robosim__V1__Step *sp,
                              Robosim__V1__Response *rp, rs_status_t *st)
{
    rs_world_t *world = w->world;
    uint64_t n;
    rs_sens_t *sens = rs_sens_new(world->model, world->data,
                                  (const char *const *)sp->jacobian_params,
                                  sp->n_jacobian_params, st);
    if (!sens)
        return st->code;
    int rc = apply_step_commands(s, w, sp, &n, st);
    if (rc == 0) {
        world->data->hooks = rs_sens_hooks(sens);
        rc = world->task || sp->n_action
                 ? rs_world_task_step(world, sp->action, sp->n_action, n, st)
                 : rs_step(world->model, world->data, n, st);
        world->data->hooks = NULL;
    }
    Robosim__V1__State *state = NULL;
    Robosim__V1__Jacobian *jac = NULL;
    if (rc == 0 && (rc = step_state(w, &s->arena, &state, st)) == 0 &&
        !(jac = rs_codec_jacobian(&s->arena, sens, sp->jacobian_params, st)))
        rc = st->code;
    rs_sens_destroy(&sens);
    if (rc < 0)
        return rc;
    rs_stream_offer(s, w, state); /* watchers see the state, not the Jacobian */
    state->jacobian = jac;
    keep_parts(state, sp);
    REPLY(rp, step, STEP, state);
    return 0;
}

static int op_step(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                   Robosim__V1__Response *rp, rs_status_t *st)
{
    rs_cont_t *c = s->cont;
    const Robosim__V1__Step *sp = rq->step;
    int rc;
    if (sp->jacobian || sp->n_jacobian_params)
        return step_with_jacobian(s, w, sp, rp, st);
    if (c->off_job) {
        if ((rc = step_take_back(s, w, st)) < 0)
            return rc;
    } else {
        if (!c->resuming) {
            if ((rc = apply_step_commands(s, w, sp, &c->asked, st)) < 0)
                return rc;
            c->done = 0;
        }
        int offload = c->can_park && !rs_server_stopping(s);
        if (offload && w->slow_steps)
            return step_offload(s, w, sp, st);
        double deadline = arm_budget(s);
        rc = run_control_steps(s, w, sp->action, sp->n_action, c->asked, c->resuming,
                               c->can_park, deadline, offload, &s->abort, &c->done, st);
        disarm_budget(s, deadline);
        if (rc == RUN_OFF_LOOP) {
            w->slow_steps = 1;
            return step_offload(s, w, sp, st);
        }
        if (rc < 0)
            return rc;
    }
    if (c->done < c->asked && !episode_over(w->world)) {
        if (c->can_park && !rs_server_stopping(s) && c->used < s->cfg.max_request_seconds) {
            if (!c->held && !(c->held = malloc(sizeof *c->held)))
                return OOM(st);
            c->held[0] = w->id;
            c->nheld = 1;
            c->park = 1;
            return RS_PARKED;
        }
        return stopped_short(s, w, c->done, c->asked, st);
    }
    Robosim__V1__State *state = NULL;
    if ((rc = step_state(w, &s->arena, &state, st)) < 0)
        return rc;
    rs_stream_offer(s, w, state);
    keep_parts(state, sp);
    REPLY(rp, step, STEP, state);
    return 0;
}

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

/* One slice of an item's Step (commands in place; `action` is applied on its first slice):
 * it stays RS_ITEM_RUNNING when it goes on in the next slice, else it is over: DONE, or
 * FAILED (an error, the budget run out, the server stopping). */
static void item_slice(rs_server_t *s, world_slot_t *w, rs_item_progress_t *it,
                       const double *action, size_t naction, int one_slice, double deadline)
{
    rs_status_t st;
    rs_status_clear(&st);
    int resume = it->phase == RS_ITEM_RUNNING;
    it->phase = RS_ITEM_RUNNING;
    int rc = run_control_steps(s, w, action, naction, it->asked, resume, one_slice, deadline, 0,
                               &s->abort, &it->done, &st);
    if (rc == 0 && it->done < it->asked && !episode_over(w->world)) {
        if (one_slice && rs_clock() < deadline && !rs_server_stopping(s))
            return; /* goes on */
        rc = stopped_short(s, w, it->done, it->asked, &st);
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
    if (it->phase == RS_ITEM_DONE && step_state(w, a, &state, &st) == 0) {
        r->result_case = ROBOSIM__V1__BATCH_RESULT__RESULT_STATE;
        r->state = state;
    } else if (it->phase == RS_ITEM_FAILED && it->message) {
        batch_error(a, r, it->code, it->message);
    }
}

/* A worker runs item jobs[j] for a slice and, once it is over, builds its result in its own
 * arena. */
static void batch_step(void *ctx, size_t j, int worker)
{
    batch_run_t *run = ctx;
    size_t i = run->jobs[j];
    rs_item_progress_t *it = &run->items[i];
    world_slot_t *w = run->where[i];
    if (rs_pool_next_is_mine(j, run->njobs))
        rs_world_prefetch(run->where[run->jobs[j + 1]]->world);
    const Robosim__V1__Step *sp = run->b->items->items[i]->step;
    if (it->phase == RS_ITEM_NEW) {
        rs_status_t st;
        rs_status_clear(&st);
        int rc = sp->jacobian || sp->n_jacobian_params
                     ? rs_fail(&st, RS_EUNIMPL,
                               "Step.jacobian is not served in a StepBatch; send the Step on "
                               "its own")
                     : apply_step_commands(run->s, w, sp, &it->asked, &st);
        if (rc < 0)
            item_fail(it, rc, st.message);
    }
    if (it->phase == RS_ITEM_NEW || it->phase == RS_ITEM_RUNNING)
        item_slice(run->s, w, it, sp->action, sp->n_action, run->one_slice, run->deadline);
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

static int by_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The batch's size within limits: not empty, not over --max-batch. `what` names the part. */
static int batch_size_ok(const rs_server_t *s, size_t n, const char *what, rs_status_t *st)
{
    if (n == 0)
        return rs_fail(st, RS_EINVAL, "StepBatch carries no %s; add one per world", what);
    if (n > (size_t)s->cfg.max_batch)
        return rs_fail(st, RS_EEXHAUSTED,
                       "StepBatch of %zu %s is over this server's limit of %d (--max-batch); "
                       "split it",
                       n, what, s->cfg.max_batch);
    return 0;
}

/* Find the worlds of a batch: where[i] is the slot of ids[i], NULL when there is none. The
 * same world twice refuses the whole batch, before anything changes: each world found is
 * marked with this batch's number; unknown ids are sorted to compare them. */
static int batch_worlds(rs_server_t *s, const uint64_t *ids, size_t n, world_slot_t **where,
                        rs_status_t *st)
{
    uint64_t *unknown = rs_arena_alloc(&s->arena, n * sizeof *unknown);
    if (!unknown)
        return OOM(st);
    uint64_t mark = ++s->batches;
    size_t nunknown = 0;
    for (size_t i = 0; i < n; i++) {
        world_slot_t *w = where[i] = rs_server_world(s, ids[i]);
        if (!w) {
            unknown[nunknown++] = ids[i];
            continue;
        }
        if (w->batch_mark == mark)
            return rs_fail(st, RS_EINVAL,
                           "world %llu appears twice in the batch (at %zu and %zu); a batch "
                           "steps each world at most once",
                           (unsigned long long)ids[i], w->batch_item, i);
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

/* The whole batch may ask for as many control steps as one Step may: a request must not hold
 * the server for hours. */
static int batch_total_ok(const rs_server_t *s, uint64_t total, rs_status_t *st)
{
    if (total <= s->cfg.max_steps_per_request)
        return 0;
    return rs_fail(st, RS_EEXHAUSTED,
                   "the batch asks for %llu control steps in all, over this server's limit of "
                   "%llu per request (--max-steps-per-request); split it",
                   (unsigned long long)total, (unsigned long long)s->cfg.max_steps_per_request);
}

static int step_arrays(rs_server_t *s, const Robosim__V1__BatchArrays *in,
                       Robosim__V1__Response *rp, rs_status_t *st);

/* Step many worlds in one request: the batch is checked as a whole (empty, too large, a world
 * twice), each item on its own (its world exists, its token is the controller's), then the
 * items run on the worker pool, a slice each per round (batch_run_t); every item gets its
 * State or its Error, in item order. The columnar form (StepBatch.arrays) is step_arrays. */
static int op_step_batch(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *unused,
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
    int rc = batch_size_ok(s, n, "items", st);
    if (rc < 0)
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
    if ((rc = batch_worlds(s, ids, n, where, st)) < 0)
        return rc;
    if (!c->resuming) {
        uint64_t total = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t k = 0; /* a bad count is the item's error, later */
            if (where[i] && bitems[i]->step &&
                step_count(s, bitems[i]->step, where[i]->world->model->control_dt, &k, NULL) == 0)
                total += k;
        }
        if ((rc = batch_total_ok(s, total, st)) < 0)
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
                rc = rs_no_world(s, &ist, "item", i, it->world_id);
            else if (!it->step)
                rc = rs_fail(&ist, RS_EINVAL, "item %zu (world %llu) has no step", i,
                             (unsigned long long)it->world_id);
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
    batch_run_t run = {s, b, where, c->items, results, jobs, nrun, arm_budget(s), c->can_park};
    rs_pool_run(s->pool, nrun, batch_step, &run);
    disarm_budget(s, run.deadline);
    if ((rc = batch_park(s, &run, n, st)) != 0)
        return rc;

    /* all over: the results no worker built in this slice (refused at the start, or over in
     * an earlier slice), then the states offered to the stream */
    for (size_t i = 0; i < n; i++) {
        if (results[i]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT__NOT_SET)
            item_result(where[i], &c->items[i], results[i], &s->arena);
        if (results[i]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT__NOT_SET)
            return OOM(st);
        if (results[i]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_STATE) {
            rs_stream_offer(s, where[i], results[i]->state); /* the loop's thread only */
            keep_parts(results[i]->state, bitems[i]->step);
        }
    }

    robosim__v1__step_batch_reply__init(reply);
    reply->n_results = n;
    reply->results = results;
    REPLY(rp, step_batch, STEP_BATCH, reply);
    return 0;
}

/* ---- MonteCarlo (Klamp't's monteCarloSim) ---- */

#define MC_MAX_ITEMS 64 /* samplers, and return items, per request */

typedef struct mc_run {
    const rs_mc_source_t *src; /* the world's commands, schedules and task */
    const rs_mc_sampler_t *samplers;
    size_t ns;
    const rs_mc_item_t *items;
    size_t nr;
    uint64_t seed, nsteps;
    const atomic_int *abort;
    double *initial, *final, *t_end; /* per run */
    rs_status_t *status;             /* per run */
} mc_run_t;

/* A worker runs Monte Carlo run i: its own data, freed at its end. */
static void mc_step(void *ctx, size_t i, int worker)
{
    (void)worker;
    mc_run_t *r = ctx;
    rs_status_clear(&r->status[i]);
    if (atomic_load_explicit(r->abort, memory_order_relaxed)) {
        /* the budget ran out or the server stops: the runs not begun are not begun */
        r->status[i].code = RS_EDEADLINE;
        return;
    }
    rs_mc_run_from(r->src, r->samplers, r->ns, r->initial + i * r->ns, r->seed + i, r->nsteps,
                   r->abort, r->items, r->nr, r->final + i * r->nr, &r->t_end[i], &r->status[i]);
}

/* A MonteCarlo request's runs and results (malloc'd: on the loop they run on the stepper
 * thread while other requests come and go). */
typedef struct mc_job {
    mc_run_t run;
    rs_mc_source_t src;
    rs_mc_sampler_t samplers[MC_MAX_ITEMS];
    rs_mc_item_t items[MC_MAX_ITEMS];
    double *initial, *final, *t_end;
    rs_status_t *status;
    size_t n;
    double deadline; /* on the stepper: rs_clock() time its budget runs out */
} mc_job_t;

static void mc_job_free(void *p)
{
    mc_job_t *j = p;
    if (!j)
        return;
    rs_mc_source_release(&j->src);
    free(j->initial);
    free(j->final);
    free(j->t_end);
    free(j->status);
    free(j);
}

/* A job of n runs of world w (its commands, schedules and task), its results unset. NULL when
 * out of memory. */
static mc_job_t *mc_job_new(const rs_world_t *w, const rs_mc_sampler_t *samplers, size_t ns,
                            const rs_mc_item_t *items, size_t nr, size_t n, rs_status_t *st)
{
    mc_job_t *j = calloc(1, sizeof *j);
    if (!j) {
        OOM(st);
        return NULL;
    }
    j->n = n;
    j->initial = malloc(n * ns * sizeof *j->initial);
    j->final = malloc(n * nr * sizeof *j->final);
    j->t_end = malloc(n * sizeof *j->t_end);
    j->status = calloc(n, sizeof *j->status);
    if (!j->initial || !j->final || !j->t_end || !j->status) {
        mc_job_free(j);
        OOM(st);
        return NULL;
    }
    if (rs_mc_source_init(&j->src, w, st) < 0) {
        mc_job_free(j);
        return NULL;
    }
    memcpy(j->samplers, samplers, ns * sizeof *samplers);
    memcpy(j->items, items, nr * sizeof *items);
    j->run = (mc_run_t){.src = &j->src, .samplers = j->samplers, .ns = ns, .items = j->items,
                        .nr = nr, .initial = j->initial, .final = j->final, .t_end = j->t_end,
                        .status = j->status};
    return j;
}

/* On the stepper: the runs on its own workers, within the request's budget. */
static void mc_job_run(rs_server_t *s, rs_cont_t *c)
{
    mc_job_t *j = c->off_job;
    j->run.abort = &s->off_abort;
    atomic_store_explicit(&s->off_abort_at, j->deadline, memory_order_relaxed);
    if (!rs_server_stopping(s))
        atomic_store_explicit(&s->off_abort, 0, memory_order_relaxed);
    if (s->off_pool)
        rs_pool_run(s->off_pool, j->n, mc_step, &j->run);
    else
        for (size_t i = 0; i < j->n; i++)
            mc_step(&j->run, i, 0);
    atomic_store_explicit(&s->off_abort_at, INFINITY, memory_order_relaxed);
}

/* N runs of world w from drawn initial conditions (rs_montecarlo.h). The request is checked
 * whole first (counts, items, duration, the server's limits); the runs share the request's
 * compute budget, and any run's error is the request's, naming the run. On the loop they run
 * on the stepper thread, the request parked (counted as in flight) and world w held, so its
 * model stays; in-process on the worker pool. World w is read only. */
static int op_monte_carlo(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                          Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__MonteCarlo *mc = rq->monte_carlo;
    const rs_model_t *m = w->world->model;
    size_t n = mc->runs, ns = mc->n_samplers, nr = mc->n_returns;
    if (n == 0)
        return rs_fail(st, RS_EINVAL, "MonteCarlo asks for 0 runs; set runs >= 1");
    if (n > (size_t)s->cfg.max_batch)
        return rs_fail(st, RS_EEXHAUSTED,
                       "MonteCarlo of %zu runs is over this server's limit of %d (--max-batch); "
                       "split it over requests with first_run",
                       n, s->cfg.max_batch);
    if (ns == 0 || ns > MC_MAX_ITEMS)
        return rs_fail(st, ns ? RS_ERANGE : RS_EINVAL,
                       "MonteCarlo carries %zu samplers; give 1 to %d (e.g. item 'arm.theta0[0]', "
                       "dist 'uniform', a -3.14, b 3.14)",
                       ns, MC_MAX_ITEMS);
    if (nr == 0 || nr > MC_MAX_ITEMS)
        return rs_fail(st, nr ? RS_ERANGE : RS_EINVAL,
                       "MonteCarlo carries %zu return items; give 1 to %d (e.g. 'arm.theta1')",
                       nr, MC_MAX_ITEMS);
    Robosim__V1__Step dur = ROBOSIM__V1__STEP__INIT;
    dur.length_case = ROBOSIM__V1__STEP__LENGTH_DURATION;
    dur.duration = mc->duration;
    uint64_t nsteps = 0;
    int rc = step_count(s, &dur, m->control_dt, &nsteps, st);
    if (rc < 0)
        return rc;
    if (nsteps > s->cfg.max_steps_per_request / n)
        return rs_fail(st, RS_EEXHAUSTED,
                       "MonteCarlo of %zu runs of %llu control steps asks for %.3g control steps "
                       "in all, over this server's limit of %llu per request "
                       "(--max-steps-per-request); ask for fewer runs or a shorter duration",
                       n, (unsigned long long)nsteps, (double)n * (double)nsteps,
                       (unsigned long long)s->cfg.max_steps_per_request);
    rs_mc_sampler_t samplers[MC_MAX_ITEMS];
    rs_mc_item_t items[MC_MAX_ITEMS];
    for (size_t j = 0; j < ns; j++) {
        const Robosim__V1__Sampler *sp = mc->samplers[j];
        if ((rc = rs_mc_parse_sampler(m, sp->item, sp->dist, sp->a, sp->b, &samplers[j], st)) < 0)
            return rc;
    }
    for (size_t k = 0; k < nr; k++)
        if ((rc = rs_mc_parse_item(m, mc->returns[k], &items[k], st)) < 0)
            return rc;
    uint64_t first = mc->first_run;
    if (first > UINT64_MAX - n)
        return rs_fail(st, RS_ERANGE, "first_run %llu + %zu runs overflows",
                       (unsigned long long)first, n);
    Robosim__V1__MonteCarloReply *reply = rs_arena_alloc(&s->arena, sizeof *reply);
    if (!reply)
        return OOM(st);
    rs_cont_t *c = s->cont;
    mc_job_t *job = c->off_job;
    if (!job) {
        if (!(job = mc_job_new(w->world, samplers, ns, items, nr, n, st)))
            return st->code;
        for (size_t i = 0; i < n; i++)
            rs_mc_draw(samplers, ns, mc->seed, first + i, job->initial + i * ns);
        job->run.seed = mc->seed + first;
        job->run.nsteps = nsteps;
        if (c->can_park && !rs_server_stopping(s)) {
            /* off the loop: the stepper runs it while its world is held (its model stays) */
            if (!(c->held = malloc(sizeof *c->held))) {
                mc_job_free(job);
                return OOM(st);
            }
            c->held[0] = w->id;
            c->nheld = 1;
            job->deadline = rs_clock() + fmax(0.0, s->cfg.max_request_seconds - c->used);
            c->off_run = mc_job_run;
            c->off_free = mc_job_free;
            c->off_job = job;
            c->off_done = 0;
            c->park = 1;
            return RS_PARKED;
        }
        job->run.abort = &s->abort;
        double deadline = arm_budget(s);
        rs_pool_run(s->pool, n, mc_step, &job->run);
        disarm_budget(s, deadline);
        c->off_job = job; /* the reply points into it: freed with the request's progress */
        c->off_free = mc_job_free;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (job->status[i].code == RS_EDEADLINE)
            rc = rs_fail(st, rs_server_stopping(s) ? RS_EUNAVAIL : RS_EDEADLINE,
                         "MonteCarlo of %zu runs of %llu control steps is over this server's "
                         "compute budget of %g s per request (--max-request-seconds)%s; split "
                         "the runs over requests with first_run",
                         n, (unsigned long long)nsteps, s->cfg.max_request_seconds,
                         rs_server_stopping(s) ? ", or the server is stopping" : "");
        else if (job->status[i].code < 0)
            rc = rs_fail(st, job->status[i].code, "run %llu: %s",
                         (unsigned long long)(first + i), job->status[i].message);
    }
    if (rc < 0)
        return rc;
    double *initial = job->initial, *final = job->final, *t_end = job->t_end;
    robosim__v1__monte_carlo_reply__init(reply);
    reply->runs = (uint32_t)n;
    reply->n_samplers = ns;
    reply->n_returns = nr;
    reply->samplers = rs_arena_alloc(&s->arena, ns * sizeof(char *));
    reply->returns = rs_arena_alloc(&s->arena, nr * sizeof(char *));
    if (!reply->samplers || !reply->returns)
        return OOM(st);
    for (size_t j = 0; j < ns; j++)
        if (!(reply->samplers[j] = rs_arena_strdup(&s->arena, mc->samplers[j]->item)))
            return OOM(st);
    for (size_t k = 0; k < nr; k++)
        if (!(reply->returns[k] = rs_arena_strdup(&s->arena, mc->returns[k])))
            return OOM(st);
    reply->n_initial = n * ns;
    reply->initial = initial;
    reply->n_final = n * nr;
    reply->final = final;
    reply->time = t_end[0];
    REPLY(rp, monte_carlo, MONTE_CARLO, reply);
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
    int one_slice;
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

/* A worker runs world jobs[j] for a slice and, once its Step is over, writes its rows. */
static void arrays_step(void *ctx, size_t j, int worker)
{
    arrays_run_t *run = ctx;
    const Robosim__V1__BatchArrays *in = run->in;
    size_t i = run->jobs[j];
    world_slot_t *w = run->where[i];
    rs_item_progress_t *it = &run->items[i];
    if (rs_pool_next_is_mine(j, run->njobs))
        rs_world_prefetch(run->where[run->jobs[j + 1]]->world);
    const double *u = in->n_commands ? in->commands + i * run->nu : NULL;
    const double *act = in->n_actions ? in->actions + i * run->na : NULL;
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
        int rc = drive_rule(w, u ? run->nu : 0, act ? run->na : 0, &st);
        if (rc == 0 && u)
            rc = rs_set_all_commands(w->world->model, w->world->data, u, &st);
        it->asked = run->steps;
        if (rc < 0)
            item_fail(it, rc, st.message);
    }
    if (it->phase == RS_ITEM_NEW || it->phase == RS_ITEM_RUNNING)
        item_slice(run->s, w, it, act, act ? run->na : 0, run->one_slice, run->deadline);
    if (it->phase != RS_ITEM_RUNNING)
        arrays_rows(run, i, rs_pool_arena(run->s->pool, worker));
}

/* Whether world w is of the batch's shape, that of world `like`: the same preset (SetParams
 * never changes a model's state, actuator or sensor counts) and the same task. */
static int same_shape(const world_slot_t *w, const world_slot_t *like)
{
    return w->world->task == like->world->task &&
           strcmp(w->world->model->preset, like->world->model->preset) == 0;
}

/* The request's lengths against the number of worlds n, before anything is looked up. */
static int arrays_check_request(rs_server_t *s, const Robosim__V1__BatchArrays *in, size_t n,
                                rs_status_t *st)
{
    int rc = batch_size_ok(s, n, "world_ids", st);
    if (rc < 0)
        return rc;
    if (in->n_tokens != n && in->n_tokens != 0)
        return rs_fail(st, RS_EINVAL,
                       "BatchArrays has %zu tokens for %zu worlds; give one per world, in "
                       "world_ids order",
                       in->n_tokens, n);
    if (in->n_commands && in->n_actions)
        return rs_fail(st, RS_EINVAL,
                       "BatchArrays sets both commands and actions; set commands for plain "
                       "worlds or actions for task worlds");
    if ((in->n_reset && in->n_reset != n) || (in->n_reset_seeds && in->n_reset_seeds != n))
        return rs_fail(st, RS_EINVAL,
                       "BatchArrays has %zu reset flags and %zu reset seeds for %zu worlds; give "
                       "one per world, in world_ids order, or none",
                       in->n_reset, in->n_reset_seeds, n);
    return batch_total_ok(s, (in->steps ? in->steps : 1) * n, st);
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
    if (in->n_commands && in->n_commands != n * run->nu)
        return rs_fail(st, RS_EINVAL,
                       "BatchArrays.commands holds %zu values; %zu worlds of preset '%s' with "
                       "%zu actuators each take %zu (or none, to hold the commands)",
                       in->n_commands, n, lw->model->preset, run->nu, n * run->nu);
    if (in->n_actions && !lw->task)
        return rs_fail(st, RS_EINVAL,
                       "BatchArrays.actions is set, but the batch's worlds (preset '%s') run "
                       "no task; drive them with commands",
                       lw->model->preset);
    if (in->n_actions && in->n_actions != n * run->na)
        return rs_fail(st, RS_EINVAL,
                       "BatchArrays.actions holds %zu values; %zu worlds of task '%s' with "
                       "%zu action values each take %zu (or none, to hold the commands)",
                       in->n_actions, n, lw->task->name, run->na, n * run->na);
    return 0;
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
    out->state_size = (uint32_t)nx;
    out->sensor_size = (uint32_t)ns;
    out->observation_size = (uint32_t)nobs;
    out->n_codes = out->n_time = out->n_step_count = out->n_events = n;
    out->n_state = n * nx;
    out->n_sensors = n * ns;
    if (nobs) {
        out->n_observation = n * nobs;
        out->n_reward = out->n_terminated = out->n_truncated = n;
        out->info_size = (uint32_t)ninfo;
        out->n_info_keys = ninfo;
        out->info_keys = (char **)like->world->task->info;
        out->n_info = n * ninfo;
    }
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

/* World by world, at the first slice: it exists, its token, its shape (that of `like`); a
 * refused world is over with its error. */
static int arrays_check_worlds(arrays_run_t *run, size_t n, const world_slot_t *like,
                               rs_status_t *st)
{
    rs_server_t *s = run->s;
    const Robosim__V1__BatchArrays *in = run->in;
    rs_cont_t *c = s->cont;
    if (!(c->items = calloc(n, sizeof *c->items)))
        return OOM(st);
    c->nitems = n;
    for (size_t i = 0; i < n; i++) {
        world_slot_t *w = run->where[i];
        rs_status_t ist;
        rs_status_clear(&ist);
        int rc;
        if (!w)
            rc = rs_no_world(s, &ist, "world_ids", i, in->world_ids[i]);
        else if (!same_shape(w, like))
            rc = rs_fail(&ist, RS_EINVAL,
                         "world_ids[%zu]: world %llu (preset '%s'%s%s) is not like the "
                         "batch's first world %llu (preset '%s'%s%s); one BatchArrays takes "
                         "worlds of one shape",
                         i, (unsigned long long)w->id, w->world->model->preset,
                         w->world->task ? ", task " : "",
                         w->world->task ? w->world->task->name : "",
                         (unsigned long long)like->id, like->world->model->preset,
                         like->world->task ? ", task " : "",
                         like->world->task ? like->world->task->name : "");
        else
            rc = rs_auth_check(s, w, in->n_tokens ? in->tokens[i] : "", "step", &ist);
        if (rc < 0)
            item_fail(&c->items[i], rc, ist.message);
    }
    return 0;
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
        if (run->items[i].phase == RS_ITEM_NEW || run->items[i].phase == RS_ITEM_RUNNING)
            run->jobs[run->njobs++] = i;
    }
}

/* All over: the rows no worker wrote in this slice (refused at the start, or over in an
 * earlier slice), the errors listed, the stepped worlds offered to the observer stream. */
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
        if (out->codes[i] == ROBOSIM__V1__ERROR_CODE__OK) {
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
    int rc = arrays_check_request(s, in, n, st);
    if (rc < 0)
        return rc;
    arrays_run_t run = {.s = s, .in = in, .steps = in->steps ? in->steps : 1};
    run.where = rs_arena_alloc(&s->arena, n * sizeof *run.where);
    run.jobs = rs_arena_alloc(&s->arena, n * sizeof *run.jobs);
    run.messages = rs_arena_alloc(&s->arena, n * sizeof *run.messages);
    run.built = rs_arena_alloc(&s->arena, n);
    if (!run.where || !run.jobs || !run.messages || !run.built)
        return OOM(st);
    const world_slot_t *like;
    if ((rc = batch_worlds(s, in->world_ids, n, run.where, st)) < 0 ||
        (rc = arrays_shape(&run, n, &like, sz, st)) < 0)
        return rc;
    Robosim__V1__StepBatchReply *reply = rs_arena_alloc(&s->arena, sizeof *reply);
    if (!reply || !(run.out = arrays_reply_new(&s->arena, n, sz, like)))
        return OOM(st);
    if (!s->cont->resuming && (rc = arrays_check_worlds(&run, n, like, st)) < 0)
        return rc;
    run.items = s->cont->items;
    arrays_jobs(&run, n);

    run.one_slice = s->cont->can_park;
    run.deadline = arm_budget(s); /* as for items (op_step_batch) */
    rs_pool_run(s->pool, run.njobs, arrays_step, &run);
    disarm_budget(s, run.deadline);
    batch_run_t park = {.where = run.where, .items = run.items, .jobs = run.jobs,
                        .njobs = run.njobs};
    if ((rc = batch_park(s, &park, n, st)) != 0 || (rc = arrays_finish(&run, n, st)) < 0)
        return rc;
    robosim__v1__step_batch_reply__init(reply);
    reply->arrays = run.out;
    REPLY(rp, step_batch, STEP_BATCH, reply);
    return 0;
}

static int op_get_state(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                        Robosim__V1__Response *rp, rs_status_t *st)
{
    int rc = reply_state(s, w, rp, ROBOSIM__V1__RESPONSE__RESULT_GET_STATE, st);
    if (rc < 0 || !rq->get_state->snapshot)
        return rc;
    size_t n = 0;
    rs_snapshot_size(w->world, &n);
    uint8_t *buf = rs_arena_alloc(&s->arena, n + RS_SNAPSHOT_MAC_BYTES);
    if (!buf)
        return OOM(st);
    if ((rc = rs_snapshot_write(w->world, buf, n, &n, st)) < 0)
        return rc;
    rs_snapmac_sign(s, buf, n); /* the core's bytes, then their MAC */
    rp->get_state->snapshot.data = buf;
    rp->get_state->snapshot.len = n + RS_SNAPSHOT_MAC_BYTES;
    return 0;
}

/* Restore a world from a snapshot (GetState.snapshot); the world is unchanged on error. */
static int op_set_state(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                        Robosim__V1__Response *rp, rs_status_t *st)
{
    const ProtobufCBinaryData *b = &rq->set_state->snapshot;
    if (!b->len)
        return rs_fail(st, RS_EINVAL,
                       "SetState carries no snapshot; send State.snapshot from "
                       "GetState{snapshot: true}");
    size_t n = 0;
    int rc = rs_snapmac_verify(s, b->data, b->len, &n, st);
    if (rc < 0 || (rc = rs_snapshot_read(w->world, b->data, n, st)) < 0)
        return rc;
    return reply_state(s, w, rp, ROBOSIM__V1__RESPONSE__RESULT_SET_STATE, st);
}

/* A new world from a snapshot of world w (its state now, or ForkWorld.snapshot); anyone who
 * may read w may fork it, and becomes the fork's controller. */
static int op_fork_world(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                         Robosim__V1__Response *rp, rs_status_t *st)
{
    const ProtobufCBinaryData *b = &rq->fork_world->snapshot;
    if (rs_worlds_total(s) >= s->cfg.max_worlds)
        return rs_fail(st, RS_EEXHAUSTED,
                       "this server holds at most %d worlds (--max-worlds); destroy one first",
                       s->cfg.max_worlds);
    int rc = world_quota_ok(s, "fork", st);
    if (rc < 0)
        return rc;
    uint64_t from = w->id;
    size_t n = 0;
    if (b->len && rs_snapmac_verify(s, b->data, b->len, &n, st) < 0)
        return st->code;
    rs_world_t *world = rs_world_fork(w->world, b->len ? b->data : NULL, n, st);
    if (!world)
        return st->code;
    world_slot_t *slot = add_world(s, world, st);
    if (!slot)
        return st->code;
    rs_log(RS_LOG_INFO, "world %llu forked from world %llu%s", (unsigned long long)slot->id,
           (unsigned long long)from, b->len ? " (from a snapshot)" : "");
    Robosim__V1__CreateWorldReply *cr = controller_reply(s, slot);
    if (!cr)
        return OOM(st);
    REPLY(rp, fork_world, FORK_WORLD, cr);
    return 0;
}

static int op_set_force(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                        Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__SetForce *f = rq->set_force;
    int e = find_entity(w->world, f->entity, st);
    if (e < 0)
        return e;
    int rc = rs_set_commands(w->world->model, w->world->data, e, f->values, f->n_values, st);
    if (rc < 0)
        return rc;
    REPLY(rp, set_force, SET_FORCE, &ack);
    return 0;
}

/* An external wrench on one body for the next control step (rs_apply_wrench). */
static int op_apply_wrench(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                           Robosim__V1__Response *rp, rs_status_t *st)
{
    (void)s;
    const Robosim__V1__ApplyWrench *a = rq->apply_wrench;
    int e = find_entity(w->world, a->entity, st);
    if (e < 0)
        return e;
    int rc = rs_apply_wrench(w->world->model, w->world->data, e, a->body, a->values,
                             a->n_values, st);
    if (rc < 0)
        return rc;
    REPLY(rp, apply_wrench, APPLY_WRENCH, &ack);
    return 0;
}

static int op_set_params(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                         Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__SetParams *p = rq->set_params;
    if (!p->n_params)
        return rs_fail(st, RS_EINVAL, "SetParams carries no parameters");
    rs_param_t *params = rs_codec_params(&s->arena, p->params, p->n_params);
    if (!params)
        return OOM(st);
    if (rs_stream_check_params(s, params, p->n_params, st) < 0)
        return st->code;
    int rc = rs_world_set_params(w->world, params, p->n_params, st);
    if (rc < 0)
        return rc;
    REPLY(rp, set_params, SET_PARAMS, &ack);
    return 0;
}

static int op_set_schedule(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                           Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__SetSchedule *sc = rq->set_schedule;
    int e = find_entity(w->world, sc->entity, st);
    if (e < 0)
        return e;
    if (sc->n_times != sc->n_values)
        return rs_fail(st, RS_EINVAL, "a schedule needs as many values as times (%zu times, %zu values)",
                       sc->n_times, sc->n_values);
    /* the wire's index against the entity's real actuator count, before it becomes an int */
    int rc = rs_check_actuator(w->world->model, e, sc->actuator, st);
    if (rc < 0)
        return rc;
    rc = rs_set_schedule(w->world->model, w->world->data, e, (int)sc->actuator, sc->times,
                             sc->values, sc->n_times, st);
    if (rc < 0)
        return rc;
    REPLY(rp, set_schedule, SET_SCHEDULE, &ack);
    return 0;
}

static int op_set_target(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                         Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__SetTarget *t = rq->set_target;
    int e = find_entity(w->world, t->entity, st);
    if (e < 0)
        return e;
    int rc = rs_set_target(w->world->model, w->world->data, e, t->target, t->n_target, st);
    if (rc < 0)
        return rc;
    REPLY(rp, set_target, SET_TARGET, &ack);
    return 0;
}

static int op_get_workspace(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                            Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__GetWorkspace *g = rq->get_workspace;
    int e = find_entity(w->world, g->entity, st);
    if (e < 0)
        return e;
    int rc = rs_workspace(w->world->model, e, NULL, 0, st);
    if (rc < 0)
        return rc;
    if (g->samples > 4096)
        return rs_fail(st, RS_ERANGE, "at most 4096 boundary samples, asked for %u", g->samples);
    if (g->n_query % 2)
        return rs_fail(st, RS_EINVAL, "query holds x, y pairs; got %zu values", g->n_query);
    if (g->n_query > 2 * 65536)
        return rs_fail(st, RS_ERANGE, "at most 65536 query points, got %zu", g->n_query / 2);
    for (size_t i = 0; i < g->n_query; i++)
        if (!isfinite(g->query[i]))
            return rs_fail(st, RS_EINVAL, "query value %zu is not finite", i);
    Robosim__V1__WorkspaceReply *wr = rs_arena_alloc(&s->arena, sizeof *wr);
    double *xy = rs_arena_alloc(&s->arena, 2 * (size_t)g->samples * sizeof(double) + 1);
    protobuf_c_boolean *reach =
        rs_arena_alloc(&s->arena, g->n_query / 2 * sizeof(protobuf_c_boolean) + 1);
    if (!wr || !xy || !reach)
        return OOM(st);
    robosim__v1__workspace_reply__init(wr);
    int nb = rs_workspace(w->world->model, e, xy, (int)g->samples, st);
    wr->n_boundary = 2 * (size_t)(nb > 0 ? nb : 0);
    wr->boundary = xy;
    for (size_t i = 0; i < g->n_query / 2; i++)
        reach[i] = rs_reachable(w->world->model, e, g->query[2 * i], g->query[2 * i + 1]) == 1;
    wr->n_reachable = g->n_query / 2;
    wr->reachable = reach;
    REPLY(rp, get_workspace, GET_WORKSPACE, wr);
    return 0;
}

/* Take control of a world whose controller's lease has lapsed. Presenting the current token
 * renews the lease and returns the same token (a controller checking in after a reconnect). */
static int op_claim(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                    Robosim__V1__Response *rp, rs_status_t *st)
{
    int rc = 0;
    if (rq->token && rq->token[0] && rs_auth_check(s, w, rq->token, "claim", NULL) == 0) {
        /* already the controller: the lease was renewed by the check */
    } else {
        double left = rs_lease_remaining(s, w);
        if (left > 0)
            return rs_fail(st, RS_EPRECOND,
                           "world %llu has a controller whose lease runs for another %.1f s; "
                           "Claim again after it lapses (the lease is %g s, renewed by every "
                           "change the controller makes)",
                           (unsigned long long)w->id, left, s->cfg.lease_seconds);
        if (strcmp(w->owner, s->caller->key) != 0 && (rc = world_quota_ok(s, "claim", st)) < 0)
            return rc;
        if ((rc = rs_auth_grant(s, w, st)) < 0)
            return rc;
        rs_worlds_count(s, w->owner, 0, -1);
        snprintf(w->owner, sizeof w->owner, "%s", s->caller->key);
        rs_worlds_count(s, w->owner, 0, 1);
        rs_log(RS_LOG_INFO, "world %llu claimed: new controller token", (unsigned long long)w->id);
    }
    Robosim__V1__CreateWorldReply *cr = controller_reply(s, w);
    if (!cr)
        return OOM(st);
    REPLY(rp, claim, CLAIM, cr);
    return 0;
}

/* ---- motion specifications ---------------------------------------------------------------- */

/* Load (replacing any) a motion specification; validated first, a bad one changes nothing. */
static int op_load_motion_spec(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                               Robosim__V1__Response *rp, rs_status_t *st)
{
    (void)s;
    const char *doc = rq->load_motion_spec->document ? rq->load_motion_spec->document : "";
    if (!doc[0])
        return rs_fail(st, RS_EINVAL,
                       "LoadMotionSpec carries no document; send the JSON-LD text (ClearMotionSpec "
                       "removes a specification)");
    int rc = rs_set_motion_spec(w->world->model, w->world->data, doc, strlen(doc), st);
    if (rc < 0)
        return rc;
    REPLY(rp, load_motion_spec, LOAD_MOTION_SPEC, &ack);
    return 0;
}

static int op_get_motion_spec(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                              Robosim__V1__Response *rp, rs_status_t *st)
{
    (void)rq;
    Robosim__V1__MotionSpecReply *r = rs_codec_motion_spec(&s->arena, w->world);
    if (!r)
        return OOM(st);
    REPLY(rp, get_motion_spec, GET_MOTION_SPEC, r);
    return 0;
}

static int op_clear_motion_spec(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                                Robosim__V1__Response *rp, rs_status_t *st)
{
    (void)s, (void)rq;
    int rc = rs_set_motion_spec(w->world->model, w->world->data, NULL, 0, st);
    if (rc < 0)
        return rc;
    REPLY(rp, clear_motion_spec, CLEAR_MOTION_SPEC, &ack);
    return 0;
}

/* ---- the table --------------------------------------------------------------------------- */

/* columns: request case, name, handler, needs a world, changes it (token), makes a world or a
 * controller (refused to observer-only clients; counted by quotas), spends compute time
 * (refused to observer-only clients) */
#define OP(CASE, name, fn, needs_world, mutates, creates, computes)                            \
    {ROBOSIM__V1__REQUEST__OP_##CASE, name, fn, needs_world, mutates, creates, computes, 0}
/* ... and refused on task worlds (refuse_on_task) */
#define OP_NOT_ON_TASK(CASE, name, fn, needs_world, mutates, creates, computes)                \
    {ROBOSIM__V1__REQUEST__OP_##CASE, name, fn, needs_world, mutates, creates, computes, 1}

static const rs_op_t ops[] = {
    OP(HELLO, "hello", op_hello, 0, 0, 0, 0),
    OP(LIST_WORLDS, "list_worlds", op_list_worlds, 0, 0, 0, 0),
    OP(CREATE_WORLD, "create_world", op_create_world, 0, 1, 1, 0),
    OP(DESTROY_WORLD, "destroy_world", op_destroy_world, 1, 1, 0, 0),
    OP(GET_SPEC, "get_spec", op_get_spec, 1, 0, 0, 0),
    OP(RESET, "reset", op_reset, 1, 1, 0, 0),
    OP(STEP, "step", op_step, 1, 1, 0, 0),
    OP(GET_STATE, "get_state", op_get_state, 1, 0, 0, 0),
    OP_NOT_ON_TASK(SET_FORCE, "set_force", op_set_force, 1, 1, 0, 0),
    OP_NOT_ON_TASK(SET_PARAMS, "set_params", op_set_params, 1, 1, 0, 0),
    OP_NOT_ON_TASK(SET_SCHEDULE, "set_schedule", op_set_schedule, 1, 1, 0, 0),
    OP_NOT_ON_TASK(SET_TARGET, "set_target", op_set_target, 1, 1, 0, 0),
    OP(GET_WORKSPACE, "get_workspace", op_get_workspace, 1, 0, 0, 0),
    OP(CLAIM, "claim", op_claim, 1, 0, 1, 0),
    OP(SET_STATE, "set_state", op_set_state, 1, 1, 0, 0),
    OP(FORK_WORLD, "fork_world", op_fork_world, 1, 0, 1, 0),
    OP(STEP_BATCH, "step_batch", op_step_batch, 0, 1, 0, 0), /* tokens per item */
    OP(GET_HISTORY, "get_history", rs_op_get_history, 1, 0, 0, 0),
    OP(MONTE_CARLO, "monte_carlo", op_monte_carlo, 1, 0, 0, 1), /* reads the world only */
    OP(APPLY_WRENCH, "apply_wrench", op_apply_wrench, 1, 1, 0, 0),
    OP(LOAD_MOTION_SPEC, "load_motion_spec", op_load_motion_spec, 1, 1, 0, 0),
    OP(GET_MOTION_SPEC, "get_motion_spec", op_get_motion_spec, 1, 0, 0, 0),
    OP(CLEAR_MOTION_SPEC, "clear_motion_spec", op_clear_motion_spec, 1, 1, 0, 0),
    OP(REGISTER_TASK, "register_task", op_register_task, 0, 0, 1, 0), /* no world */
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
