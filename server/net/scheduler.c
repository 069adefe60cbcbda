/* The scheduler: no client stalls the others. One thread serves every request, so a long Step
 * runs in slices (cfg.slice_seconds, checked at control-step boundaries: one clock read per
 * control step), a StepBatch in rounds of a slice per world: one not done after a slice is
 * parked (its frames and progress kept here) and resumed in turn with the other parked ones,
 * while everything else that arrives is served in between. Work a slice cannot hold goes to the
 * stepper (stepper.c) and its request waits on the offloaded list. A parked request holds its
 * worlds: requests that name one of them wait, in arrival order, until it is answered, so a
 * world's requests stay in order. Each client may have cfg.max_inflight_per_client requests
 * parked, offloaded or waiting. */
#include "scheduler.h"
#include "rs_log.h"
#include "server_internal.h"
#include "stepper.h"
#include "worlds.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Mark the worlds a parked request holds (held 1) or release them (0). */
static void hold(rs_server_t *s, const rs_cont_t *c, int held)
{
    for (size_t i = 0; i < c->nheld; i++) {
        world_slot_t *w = rs_worlds_find(s, c->held[i]);
        if (w)
            w->sched.held = held;
    }
}

typedef struct pending {
    struct pending *next;
    zmq_msg_t frames[MAX_ENVELOPE + 1]; /* envelope, then the request */
    int nframes;
    rs_caller_t caller;
    void *sock;  /* the socket it came on, which its reply goes out of */
    rs_cont_t cont;
    uint64_t *ids; /* the worlds a waiting request names */
    size_t nids;
} pending_t;

struct rs_sched {
    pending_t *parked;    /* sliced requests between their slices (FIFO) */
    pending_t *offloaded; /* requests whose work the stepper has or has run */
    pending_t *waiting;   /* requests waiting for a world a parked one holds (FIFO) */
};


/* The ids of the worlds request `rq` names (its world, or a StepBatch's), in *ids (malloc'd,
 * NULL when none); their count. -1 when out of memory. */
static long named_worlds(const Robosim__V1__Request *rq, uint64_t **ids)
{
    *ids = NULL;
    const rs_op_t *op = rq ? rs_op_find(rq->op_case) : NULL;
    size_t n = 0;
    if (!op)
        return 0;
    const Robosim__V1__StepBatch *b =
        rq->op_case == ROBOSIM__V1__REQUEST__OP_STEP_BATCH ? rq->step_batch : NULL;
    int arrays = b && b->form_case == ROBOSIM__V1__STEP_BATCH__FORM_ARRAYS;
    int items = b && b->form_case == ROBOSIM__V1__STEP_BATCH__FORM_ITEMS;
    if (op->needs_world)
        n = 1;
    else if (arrays || items)
        n = arrays ? b->arrays->n_world_ids : b->items->n_items;
    if (!n)
        return 0;
    if (!(*ids = malloc(n * sizeof **ids)))
        return -1;
    for (size_t i = 0; i < n; i++)
        (*ids)[i] = op->needs_world ? rq->world_id
                    : arrays        ? b->arrays->world_ids[i]
                                    : b->items->items[i]->world_id;
    return (long)n;
}

/* Whether any of ids is held by a parked Step or named by a waiting request before `upto`. */
static int must_wait(rs_server_t *s, const uint64_t *ids, size_t n, const pending_t *upto)
{
    rs_sched_t *sq = s->sched;
    for (size_t i = 0; i < n; i++) {
        const world_slot_t *w = rs_worlds_find(s, ids[i]);
        if (w && w->sched.held)
            return 1;
        for (const pending_t *q = sq->waiting; q && q != upto; q = q->next)
            for (size_t j = 0; j < q->nids; j++)
                if (q->ids[j] == ids[i])
                    return 1;
    }
    return 0;
}

/* Requests of `caller` held unanswered (parked or waiting). */
static int inflight(const rs_server_t *s, const rs_caller_t *caller)
{
    const rs_sched_t *sq = s->sched;
    int n = 0;
    for (const pending_t *p = sq->parked; p; p = p->next)
        n += strcmp(p->caller.id, caller->id) == 0;
    for (const pending_t *p = sq->waiting; p; p = p->next)
        n += strcmp(p->caller.id, caller->id) == 0;
    for (const pending_t *p = sq->offloaded; p; p = p->next)
        n += strcmp(p->caller.id, caller->id) == 0;
    return n;
}

static void append(pending_t **list, pending_t *p)
{
    p->next = NULL;
    while (*list)
        list = &(*list)->next;
    *list = p;
}

static void pending_free(pending_t *p)
{
    for (int i = 0; i < p->nframes; i++)
        zmq_msg_close(&p->frames[i]);
    free(p->ids);
    rs_cont_release(&p->cont);
    free(p);
}

/* Free a list of requests never answered (a server destroyed without rs_server_run's end). */
static void pending_drop(pending_t **list)
{
    while (*list) {
        pending_t *p = *list;
        *list = p->next;
        pending_free(p);
    }
}

/* A pending record that takes over frames[0..n-1]. NULL when out of memory. */
static pending_t *pending_new(zmq_msg_t *frames, int n, const rs_caller_t *caller, void *sock)
{
    pending_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    for (int i = 0; i < n; i++) {
        zmq_msg_init(&p->frames[i]);
        zmq_msg_move(&p->frames[i], &frames[i]);
    }
    p->nframes = n;
    p->caller = *caller;
    p->sock = sock;
    return p;
}

/* Serve a request (frames[0..n-1]) with progress `c`: reply, or, when the handler parks it,
 * keep it on the parked list, or on the offloaded one with its work queued on the stepper
 * (taking over the frames, into `p` or a new record). Returns whether it was kept. */
static int serve(rs_server_t *s, void *sock, zmq_msg_t *frames, int n, const rs_caller_t *caller,
                 rs_cont_t *c, pending_t *p)
{
    rs_sched_t *sq = s->sched;
    const uint8_t *out;
    size_t outlen;
    zmq_msg_t *payload = &frames[n - 1];
    c->can_park = 1;
    c->park = 0;
    s->cont = c;
    rs_server_handle_from(s, caller, zmq_msg_data(payload), zmq_msg_size(payload), &out,
                          &outlen);
    if (c->park) {
        int off = c->off_job && !c->off_done, given = p != NULL;
        if (!p && !(p = pending_new(frames, n, caller, sock)) && off) {
            /* cannot keep it while the stepper runs it: refused */
            rs_cont_release(c);
            rs_refuse(s, sock, frames, n, RS_EEXHAUSTED, "server out of memory keeping the request");
            return 0;
        }
        if (!p) {
            /* cannot keep it: run it to its end or its budget here instead */
            c->can_park = 0;
            c->resuming = 1;
            s->cont = c;
            rs_server_handle_from(s, caller, zmq_msg_data(payload), zmq_msg_size(payload), &out,
                                  &outlen);
            rs_send_reply(s, sock, frames, n, out, outlen);
            return 0;
        }
        if (c != &p->cont)
            p->cont = *c; /* a new record takes over the progress (and what it holds) */
        p->cont.resuming = 1;
        if (off && rs_stepper_submit(s->stepper, &p->cont) < 0) {
            /* no room in the stepper's queue: refused (the record goes with its caller) */
            rs_refuse(s, p->sock, p->frames, p->nframes, RS_EEXHAUSTED,
                   "server out of memory queueing the request");
            p->nframes = 0;
            if (!given)
                pending_free(p);
            return 0;
        }
        hold(s, &p->cont, 1);
        if (off) {
            append(&sq->offloaded, p);
        } else {
            append(&sq->parked, p);
        }
        return 1;
    }
    rs_send_reply(s, sock, frames, n, out, outlen);
    return 0;
}

/* Serve the waiting requests that no longer wait (their worlds free), in arrival order. */
void rs_sched_serve_waiting(rs_server_t *s)
{
    rs_sched_t *sq = s->sched;
    pending_t **link = &sq->waiting;
    while (*link) {
        pending_t *q = *link;
        if (must_wait(s, q->ids, q->nids, q)) {
            link = &q->next;
            continue;
        }
        *link = q->next;
        rs_cont_t c = {0};
        serve(s, q->sock, q->frames, q->nframes, &q->caller, &c, NULL);
        q->nframes = 0; /* consumed by the reply, or moved into a parked record */
        pending_free(q);
        link = &sq->waiting; /* a request served may have freed or held others' worlds */
    }
}

/* Resume the parked request at the head of the list for one slice. */
void rs_sched_resume_next(rs_server_t *s)
{
    rs_sched_t *sq = s->sched;
    pending_t *p = sq->parked;
    if (!p)
        return;
    sq->parked = p->next;
    hold(s, &p->cont, 0); /* its own request may touch them; held again if it parks again */
    if (serve(s, p->sock, p->frames, p->nframes, &p->caller, &p->cont, p))
        return;
    p->nframes = 0; /* consumed by the reply */
    pending_free(p);
    rs_sched_serve_waiting(s);
}

/* Resume the requests whose work the stepper has run (each takes its result and answers, or
 * parks again). Returns how many. */
int rs_sched_resume_offloaded(rs_server_t *s)
{
    rs_sched_t *sq = s->sched;
    if (!sq->offloaded || !rs_stepper_finished(s->stepper))
        return 0;
    int n = 0;
    pending_t **link = &sq->offloaded;
    while (*link) {
        pending_t *p = *link;
        if (!rs_stepper_done(s->stepper, &p->cont)) {
            link = &p->next;
            continue;
        }
        *link = p->next;
        n++;
        hold(s, &p->cont, 0);
        if (!serve(s, p->sock, p->frames, p->nframes, &p->caller, &p->cont, p)) {
            p->nframes = 0; /* consumed by the reply */
            pending_free(p);
        }
        link = &sq->offloaded; /* serve may have appended to it */
    }
    rs_sched_serve_waiting(s);
    return n;
}

/* An error reply to a request not run (frames consumed). */
void rs_refuse(rs_server_t *s, void *sock, zmq_msg_t *frames, int n, int code,
               const char *message)
{
    const uint8_t *out;
    size_t outlen;
    zmq_msg_t *payload = &frames[n - 1];
    rs_arena_reset(&s->arena);
    Robosim__V1__Request *rq =
        zmq_msg_size(payload) <= s->cfg.max_message_size
            ? robosim__v1__request__unpack(NULL, zmq_msg_size(payload), zmq_msg_data(payload))
            : NULL;
    rs_error_reply(s, rq ? rq->id : 0, code, message, &out, &outlen);
    if (rq)
        robosim__v1__request__free_unpacked(rq, NULL);
    rs_send_reply(s, sock, frames, n, out, outlen);
}

/* A request arrived: served now, or (its world held) queued behind the parked Step. */
void rs_sched_arrive(rs_server_t *s, void *sock, zmq_msg_t *frames, int n,
                   const rs_caller_t *caller)
{
    rs_sched_t *sq = s->sched;
    if (sq->parked || sq->waiting || sq->offloaded) {
        int max = s->cfg.max_inflight_per_client, have = inflight(s, caller);
        if (max > 0 && have >= max) {
            char msg[256];
            snprintf(msg, sizeof msg,
                     "this client already has %d requests in flight, its quota "
                     "(--max-inflight-per-client %d); wait for their replies before sending more",
                     have, max);
            rs_refuse(s, sock, frames, n, RS_EEXHAUSTED, msg);
            return;
        }
        zmq_msg_t *payload = &frames[n - 1];
        Robosim__V1__Request *rq =
            zmq_msg_size(payload) <= s->cfg.max_message_size
                ? robosim__v1__request__unpack(NULL, zmq_msg_size(payload), zmq_msg_data(payload))
                : NULL;
        uint64_t *ids = NULL;
        long nids = named_worlds(rq, &ids);
        if (rq)
            robosim__v1__request__free_unpacked(rq, NULL);
        if (nids > 0 && must_wait(s, ids, (size_t)nids, NULL)) {
            pending_t *p = pending_new(frames, n, caller, sock);
            if (!p) {
                free(ids);
                rs_refuse(s, sock, frames, n, RS_EEXHAUSTED,
                          "server out of memory queueing the request");
                return;
            }
            p->ids = ids;
            p->nids = (size_t)nids;
            append(&sq->waiting, p);
            return;
        }
        free(ids);
    }
    rs_cont_t c = {0};
    serve(s, sock, frames, n, caller, &c, NULL);
}

/* --world-ttl: destroy the worlds whose controller has sent nothing for that long (the lease
 * is renewed by each of its requests, so its start is the controller's last one). Worlds a
 * request holds or waits for are kept, and so are worlds no client owns (the start-up world
 * until a client claims it, worlds made in-process). */
void rs_sched_expire_idle(rs_server_t *s, double now)
{
    for (int i = 0; i < s->nworlds;) {
        world_slot_t *w = &s->worlds[i];
        double idle = now - w->sched.last_active;
        if (idle < s->cfg.world_ttl || !w->owner[0] || w->sched.held ||
            must_wait(s, &w->id, 1, NULL)) {
            i++;
            continue;
        }
        rs_log(RS_LOG_INFO, "world %llu destroyed: no request from its controller for %.0f s "
               "(--world-ttl %g)", (unsigned long long)w->id, idle, s->cfg.world_ttl);
        rs_worlds_remove(s, w);
    }
}
rs_sched_t *rs_sched_new(void)
{
    return calloc(1, sizeof(rs_sched_t));
}

void rs_sched_destroy(rs_sched_t **p)
{
    rs_sched_t *sq = *p;
    if (!sq)
        return;
    pending_drop(&sq->parked);
    pending_drop(&sq->waiting);
    pending_drop(&sq->offloaded);
    free(sq);
    *p = NULL;
}

int rs_sched_parked(const rs_sched_t *sq)
{
    return sq->parked != NULL;
}

int rs_sched_offloaded(const rs_sched_t *sq)
{
    return sq->offloaded != NULL;
}

void rs_sched_finish(rs_server_t *s)
{
    rs_sched_t *sq = s->sched;
    atomic_store_explicit(&s->abort, 1, memory_order_relaxed);
    atomic_store_explicit(&s->off_abort, 1, memory_order_relaxed);
    while (sq->offloaded) {
        if (!rs_sched_resume_offloaded(s)) {
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    while (sq->parked)
        rs_sched_resume_next(s);
    rs_sched_serve_waiting(s);
}
