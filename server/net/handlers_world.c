/* The handlers of the world table: CreateWorld, DestroyWorld, ListWorlds, ClaimWorld,
 * ForkWorld, and the per-client world quotas they check. */

#include "declared.h"
#include "handlers.h"
#include "worlds.h"
#include "rs_randomize.h"
#include "rs_snapshot.h"
#include "rs_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Robosim__V1__Ack ack = ROBOSIM__V1__ACK__INIT;

/* WorldInfo of a world slot, with its lease. */
static Robosim__V1__WorldInfo *world_info(rs_server_t *s, const world_slot_t *slot)
{
    Robosim__V1__WorldInfo *wi = rs_codec_world_info(&s->arena, slot->id, slot->world);
    if (wi) {
        wi->lease_remaining = rs_lease_remaining(s, slot);
        wi->shard = s->front ? (uint32_t)s->shard_index : 0;
    }
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
    world_slot_t granted = {0};
    uint64_t id;
    if (rs_auth_grant(s, &granted, st) < 0 || rs_server_take_id(s, &id, st) < 0) {
        rs_world_destroy(&world);
        return NULL;
    }
    world_slot_t *slot = rs_worlds_insert(s, id, world, s->caller->key);
    memcpy(slot->token, granted.token, sizeof slot->token);
    memcpy(slot->prev_token, granted.prev_token, sizeof slot->prev_token);
    slot->lease_until = granted.lease_until;
    slot->sched.last_active = granted.sched.last_active;
    return slot;
}

int op_list_worlds(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
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

int op_create_world(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                    Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__CreateWorld *c = rq->create_world;
    if (rs_worlds_total(s) >= s->cfg.max_worlds)
        return rs_fail(st, RS_EEXHAUSTED,
                       "this server holds at most %d worlds (--max-worlds); destroy one first",
                       s->cfg.max_worlds);
    int rc = rs_worlds_quota_ok(s, "create", st);
    if (rc < 0)
        return rc;
    rs_param_t *params = rs_codec_params(&s->arena, c->params, c->n_params);
    if (!params)
        return OOM(st);
    if (rs_stream_check_params(s, params, c->n_params, st) < 0)
        return st->code;
    const char *task = c->task;
    if (c->task_document && c->task_document[0] &&
        (rc = rs_declared_register(s, c->task_document, c->task, &task, st)) < 0)
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

int op_destroy_world(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                     Robosim__V1__Response *rp, rs_status_t *st)
{
    uint64_t id = w->id;
    rs_worlds_remove(s, w);
    rs_log(RS_LOG_INFO, "world %llu destroyed", (unsigned long long)id);
    REPLY(rp, destroy_world, DESTROY_WORLD, &ack);
    return 0;
}

/* A new world from a snapshot of world w (its state now, or ForkWorld.snapshot); anyone who
 * may read w may fork it, and becomes the fork's controller. */
int op_fork_world(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                  Robosim__V1__Response *rp, rs_status_t *st)
{
    const ProtobufCBinaryData *b = &rq->fork_world->snapshot;
    if (rs_worlds_total(s) >= s->cfg.max_worlds)
        return rs_fail(st, RS_EEXHAUSTED,
                       "this server holds at most %d worlds (--max-worlds); destroy one first",
                       s->cfg.max_worlds);
    int rc = rs_worlds_quota_ok(s, "fork", st);
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

/* Take control of a world whose controller's lease has lapsed. Presenting the current token
 * renews the lease and returns the same token (a controller checking in after a reconnect). */
int op_claim(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
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
        if (strcmp(w->owner, s->caller->key) != 0 && (rc = rs_worlds_quota_ok(s, "claim", st)) < 0)
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
