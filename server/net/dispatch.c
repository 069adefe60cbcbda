/* The dispatch table (one row per request type) and the handlers. A handler validates
 * everything before it changes anything, so a refused request leaves the world as it was. */
#include "rs_codec.h"
#include "rs_log.h"
#include "server_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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
    int e = rs_model_entity(&w->model, name ? name : "");
    if (e >= 0)
        return e;
    char names[200];
    size_t used = 0;
    names[0] = '\0';
    for (int i = 0; i < w->model.nentities && used < sizeof names; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s'%s'", i ? ", " : "",
                                 w->model.ent[i].name);
    return rs_fail(st, RS_ENOTFOUND, "no entity '%s' in world (entities: %s)", name ? name : "",
                   names);
}

/* ---- handlers -------------------------------------------------------------------------- */

static int op_hello(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                    Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__Hello *h = rq->hello;
    if (h->major != RS_PROTOCOL_MAJOR)
        return rs_fail(st, RS_EVERSION,
                       "client speaks protocol %u.%u, this server speaks %d.%d; use a client "
                       "built for protocol major %d",
                       h->major, h->minor, RS_PROTOCOL_MAJOR, RS_PROTOCOL_MINOR, RS_PROTOCOL_MAJOR);
    Robosim__V1__HelloReply *r = arena_alloc(&s->arena, sizeof *r);
    size_t nops;
    const rs_op_t *ops = rs_ops(&nops);
    char **caps = arena_alloc(&s->arena, nops * sizeof(char *));
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
    r->n_capabilities = nops;
    r->capabilities = caps;
    r->n_presets = npresets;
    r->presets = (char **)presets;
    if (h->client_name && h->client_name[0])
        rs_log(RS_LOG_DEBUG, "hello from '%s' (protocol %u.%u)", h->client_name, h->major, h->minor);
    REPLY(rp, hello, HELLO, r);
    return 0;
}

static int op_list_worlds(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                          Robosim__V1__Response *rp, rs_status_t *st)
{
    Robosim__V1__ListWorldsReply *r = arena_alloc(&s->arena, sizeof *r);
    Robosim__V1__WorldInfo **infos = arena_alloc(&s->arena, (size_t)s->nworlds * sizeof(void *) + 1);
    if (!r || !infos)
        return OOM(st);
    robosim__v1__list_worlds_reply__init(r);
    for (int i = 0; i < s->nworlds; i++)
        if (!(infos[i] = codec_world_info(&s->arena, s->worlds[i].id, s->worlds[i].world)))
            return OOM(st);
    r->n_worlds = (size_t)s->nworlds;
    r->worlds = infos;
    REPLY(rp, list_worlds, LIST_WORLDS, r);
    return 0;
}

static int op_create_world(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                           Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__CreateWorld *c = rq->create_world;
    if (s->nworlds >= s->cfg.max_worlds)
        return rs_fail(st, RS_EEXHAUSTED,
                       "this server holds at most %d worlds (--max-worlds); destroy one first",
                       s->cfg.max_worlds);
    rs_param_t *params = codec_params(&s->arena, c->params, c->n_params);
    if (!params)
        return OOM(st);
    rs_world_t *world = rs_world_new(c->preset, params, c->n_params, c->seed, st);
    if (!world)
        return st->code;
    world_entry_t *we = &s->worlds[s->nworlds++];
    we->id = s->next_world_id++;
    we->world = world;
    rs_log(RS_LOG_INFO, "world %llu created from preset '%s'", (unsigned long long)we->id,
           world->model.preset);
    Robosim__V1__CreateWorldReply *cr = arena_alloc(&s->arena, sizeof *cr);
    if (!cr)
        return OOM(st);
    robosim__v1__create_world_reply__init(cr);
    if (!(cr->world = codec_world_info(&s->arena, we->id, world)))
        return OOM(st);
    cr->token = "";
    REPLY(rp, create_world, CREATE_WORLD, cr);
    return 0;
}

static int op_destroy_world(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                            Robosim__V1__Response *rp, rs_status_t *st)
{
    uint64_t id = w->id;
    rs_world_destroy(&w->world);
    /* keep the table dense: move the last entry into the hole */
    *w = s->worlds[--s->nworlds];
    rs_log(RS_LOG_INFO, "world %llu destroyed", (unsigned long long)id);
    REPLY(rp, destroy_world, DESTROY_WORLD, &ack);
    return 0;
}

static int op_get_spec(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                       Robosim__V1__Response *rp, rs_status_t *st)
{
    Robosim__V1__Spec *spec = codec_spec(&s->arena, w->id, w->world);
    if (!spec)
        return OOM(st);
    REPLY(rp, get_spec, GET_SPEC, spec);
    return 0;
}

static int reply_state(rs_server_t *s, world_entry_t *w, Robosim__V1__Response *rp,
                       Robosim__V1__Response__ResultCase which, rs_status_t *st)
{
    Robosim__V1__State *state = codec_state(&s->arena, w->id, w->world);
    if (!state)
        return OOM(st);
    rp->result_case = which;
    switch (which) {
    case ROBOSIM__V1__RESPONSE__RESULT_RESET: rp->reset = state; break;
    case ROBOSIM__V1__RESPONSE__RESULT_STEP: rp->step = state; break;
    default: rp->get_state = state; break;
    }
    return 0;
}

static int op_reset(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                    Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__Reset *r = rq->reset;
    rs_world_t *world = w->world;
    uint64_t seed = r->use_seed ? r->seed : world->data->seed;
    int rc = rs_reset(&world->model, world->data, seed, st);
    if (rc < 0)
        return rc;
    return reply_state(s, w, rp, ROBOSIM__V1__RESPONSE__RESULT_RESET, st);
}

/* The number of control steps a Step asks for, validated. */
static int step_count(const rs_server_t *s, const Robosim__V1__Step *sp, double dt,
                      uint64_t *n, rs_status_t *st)
{
    uint64_t max = s->cfg.max_steps_per_request;
    if (sp->steps && sp->duration != 0.0)
        return rs_fail(st, RS_EINVAL, "set either steps or duration, not both");
    if (sp->steps) {
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

static int op_step(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                   Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__Step *sp = rq->step;
    rs_world_t *world = w->world;
    uint64_t n = 0;
    int rc = step_count(s, sp, world->model.control_dt, &n, st);
    if (rc < 0)
        return rc;
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
        if ((rc = rs_check_commands(&world->model, ents[i], c->values, c->n_values, st)) < 0)
            return rc;
    }
    for (size_t i = 0; i < sp->n_commands; i++)
        rs_set_commands(&world->model, world->data, ents[i], sp->commands[i]->values,
                        sp->commands[i]->n_values, NULL);
    if ((rc = rs_step(&world->model, world->data, n, st)) < 0) {
        rs_log(RS_LOG_WARN, "world %llu: %s", (unsigned long long)w->id, st->message);
        return rc;
    }
    return reply_state(s, w, rp, ROBOSIM__V1__RESPONSE__RESULT_STEP, st);
}

static int op_get_state(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                        Robosim__V1__Response *rp, rs_status_t *st)
{
    return reply_state(s, w, rp, ROBOSIM__V1__RESPONSE__RESULT_GET_STATE, st);
}

static int op_set_force(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                        Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__SetForce *f = rq->set_force;
    int e = find_entity(w->world, f->entity, st);
    if (e < 0)
        return e;
    int rc = rs_set_commands(&w->world->model, w->world->data, e, f->values, f->n_values, st);
    if (rc < 0)
        return rc;
    REPLY(rp, set_force, SET_FORCE, &ack);
    return 0;
}

static int op_set_params(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                         Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__SetParams *p = rq->set_params;
    if (!p->n_params)
        return rs_fail(st, RS_EINVAL, "SetParams carries no parameters");
    rs_param_t *params = codec_params(&s->arena, p->params, p->n_params);
    if (!params)
        return OOM(st);
    int rc = rs_world_set_params(w->world, params, p->n_params, st);
    if (rc < 0)
        return rc;
    REPLY(rp, set_params, SET_PARAMS, &ack);
    return 0;
}

static int op_set_schedule(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                           Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__SetSchedule *sc = rq->set_schedule;
    int e = find_entity(w->world, sc->entity, st);
    if (e < 0)
        return e;
    if (sc->n_times != sc->n_values)
        return rs_fail(st, RS_EINVAL, "a schedule needs as many values as times (%zu times, %zu values)",
                       sc->n_times, sc->n_values);
    if (sc->actuator > (uint32_t)RS_MAX_PARAMS)
        return rs_fail(st, RS_ENOTFOUND, "entity '%s' has no actuator %u", sc->entity, sc->actuator);
    int rc = rs_set_schedule(&w->world->model, w->world->data, e, (int)sc->actuator, sc->times,
                             sc->values, sc->n_times, st);
    if (rc < 0)
        return rc;
    REPLY(rp, set_schedule, SET_SCHEDULE, &ack);
    return 0;
}

static int op_set_target(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                         Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__SetTarget *t = rq->set_target;
    int e = find_entity(w->world, t->entity, st);
    if (e < 0)
        return e;
    int rc = rs_set_target(&w->world->model, w->world->data, e, t->target, t->n_target, st);
    if (rc < 0)
        return rc;
    REPLY(rp, set_target, SET_TARGET, &ack);
    return 0;
}

static int op_get_workspace(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                            Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__GetWorkspace *g = rq->get_workspace;
    int e = find_entity(w->world, g->entity, st);
    if (e < 0)
        return e;
    int rc = rs_workspace(&w->world->model, e, NULL, 0, st);
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
    Robosim__V1__WorkspaceReply *wr = arena_alloc(&s->arena, sizeof *wr);
    double *xy = arena_alloc(&s->arena, 2 * (size_t)g->samples * sizeof(double) + 1);
    protobuf_c_boolean *reach = arena_alloc(&s->arena, g->n_query / 2 * sizeof(protobuf_c_boolean) + 1);
    if (!wr || !xy || !reach)
        return OOM(st);
    robosim__v1__workspace_reply__init(wr);
    int nb = rs_workspace(&w->world->model, e, xy, (int)g->samples, st);
    wr->n_boundary = 2 * (size_t)(nb > 0 ? nb : 0);
    wr->boundary = xy;
    for (size_t i = 0; i < g->n_query / 2; i++)
        reach[i] = rs_reachable(&w->world->model, e, g->query[2 * i], g->query[2 * i + 1]) == 1;
    wr->n_reachable = g->n_query / 2;
    wr->reachable = reach;
    REPLY(rp, get_workspace, GET_WORKSPACE, wr);
    return 0;
}

/* ---- the table --------------------------------------------------------------------------- */

#define OP(CASE, name, fn, needs_world, mutates) {ROBOSIM__V1__REQUEST__OP_##CASE, name, fn, needs_world, mutates}

static const rs_op_t ops[] = {
    OP(HELLO, "hello", op_hello, 0, 0),
    OP(LIST_WORLDS, "list_worlds", op_list_worlds, 0, 0),
    OP(CREATE_WORLD, "create_world", op_create_world, 0, 1),
    OP(DESTROY_WORLD, "destroy_world", op_destroy_world, 1, 1),
    OP(GET_SPEC, "get_spec", op_get_spec, 1, 0),
    OP(RESET, "reset", op_reset, 1, 1),
    OP(STEP, "step", op_step, 1, 1),
    OP(GET_STATE, "get_state", op_get_state, 1, 0),
    OP(SET_FORCE, "set_force", op_set_force, 1, 1),
    OP(SET_PARAMS, "set_params", op_set_params, 1, 1),
    OP(SET_SCHEDULE, "set_schedule", op_set_schedule, 1, 1),
    OP(SET_TARGET, "set_target", op_set_target, 1, 1),
    OP(GET_WORKSPACE, "get_workspace", op_get_workspace, 1, 0),
};

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
