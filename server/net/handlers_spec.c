/* The handlers that read or declare what a world is: GetSpec, GetWorkspace, RegisterTask, the
 * motion specification (load, get, clear), and GetHistory (the frames the observer stream
 * published lately, which history.c keeps). */

#include "declared.h"
#include "handlers.h"
#include "rs_motion_spec.h"
#include "rs_task.h"
#include "rs_task_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Robosim__V1__Ack ack = ROBOSIM__V1__ACK__INIT;


int op_register_task(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                     Robosim__V1__Response *rp, rs_status_t *st)
{
    const char *doc = rq->register_task->document ? rq->register_task->document : "";
    const char *name;
    int rc = rs_declared_register(s, doc, NULL, &name, st);
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

int op_get_spec(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                Robosim__V1__Response *rp, rs_status_t *st)
{
    Robosim__V1__Spec *spec = rs_codec_spec(&s->arena, w->id, w->world);
    if (!spec)
        return OOM(st);
    spec->world->lease_remaining = rs_lease_remaining(s, w);
    REPLY(rp, get_spec, GET_SPEC, spec);
    return 0;
}

int op_get_workspace(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                     Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__GetWorkspace *g = rq->get_workspace;
    int e = rs_find_entity(w->world, g->entity, st);
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

/* ---- motion specifications ---------------------------------------------------------------- */

/* Load (replacing any) a motion specification; validated first, a bad one changes nothing. */
int op_load_motion_spec(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
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

int op_get_motion_spec(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                       Robosim__V1__Response *rp, rs_status_t *st)
{
    (void)rq;
    Robosim__V1__MotionSpecReply *r = rs_codec_motion_spec(&s->arena, w->world);
    if (!r)
        return OOM(st);
    REPLY(rp, get_motion_spec, GET_MOTION_SPEC, r);
    return 0;
}

int op_clear_motion_spec(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                         Robosim__V1__Response *rp, rs_status_t *st)
{
    (void)s, (void)rq;
    int rc = rs_set_motion_spec(w->world->model, w->world->data, NULL, 0, st);
    if (rc < 0)
        return rc;
    REPLY(rp, clear_motion_spec, CLEAR_MOTION_SPEC, &ack);
    return 0;
}

/* ---- the observer stream's recent past (history.c keeps it) ---------------------------------- */

#define HISTORY_REPLY_BYTES (4u << 20) /* frames per GetHistory reply: at most this many bytes */

int rs_op_get_history(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                      Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__GetHistory *g = rq->get_history;
    if (!s->stream.xpub || s->cfg.history_frames <= 0)
        return rs_fail(st, RS_EPRECOND,
                       "this server keeps no stream history (%s); start it with the observer "
                       "stream on and --history-frames N",
                       s->stream.xpub ? "--history-frames 0" : "the observer stream is off");
    uint64_t last = w->stream.seq, from = g->from_seq ? g->from_seq : 1;
    if (from > last + 1)
        return rs_fail(st, RS_ERANGE,
                       "from_seq %llu is past world %llu's last published frame (seq %llu); "
                       "ask from %llu at most",
                       (unsigned long long)from, (unsigned long long)w->id,
                       (unsigned long long)last, (unsigned long long)last + 1);
    int count = rs_history_held(s, w, rs_monotonic());
    uint64_t first = last + 1, newest = 0;
    size_t len;
    if (count) {
        rs_history_frame(w, 0, &len, &first);
        rs_history_frame(w, count - 1, &len, &newest);
    }
    Robosim__V1__GetHistoryReply *r = rs_arena_alloc(&s->arena, sizeof *r);
    if (!r)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    robosim__v1__get_history_reply__init(r);
    r->first_seq = first;
    r->last_seq = last;
    r->dropped = from < first ? first - from : 0;
    uint64_t start = from < first ? first : from;
    size_t want = count ? (size_t)(last - start + 1) : 0; /* held seqs end at last */
    if (count && newest != last)
        want = 0; /* the last frame was never held (out of memory): nothing consecutive */
    if (g->max_frames && want > g->max_frames)
        want = g->max_frames;
    ProtobufCBinaryData *frames = want ? rs_arena_alloc(&s->arena, want * sizeof *frames) : NULL;
    if (want && !frames)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    size_t n = 0, bytes = 0;
    for (; n < want; n++) {
        const uint8_t *buf = rs_history_frame(w, (int)(start - first) + (int)n, &len, NULL);
        if (n > 0 && bytes + len > HISTORY_REPLY_BYTES)
            break;
        frames[n].data = (uint8_t *)buf; /* packed before anything can change the ring */
        frames[n].len = len;
        bytes += len;
    }
    r->n_frames = n;
    r->frames = frames;
    r->more = start + n <= last;
    r->bytes = rs_history_bytes(w, NULL, NULL);
    r->server_bytes = s->histories.bytes;
    REPLY(rp, get_history, GET_HISTORY, r);
    return 0;
}
