/* One request loop: the single server, or one shard of a front (front.c). A ROUTER socket
 * served by one thread: every frame that arrives gets exactly one reply frame, routed back to
 * its sender (so any number of clients, REQ or DEALER, share the socket and each sees only its
 * own replies). rs_loop_run is written as its phases, in the order each turn runs them (as
 * libuv's uv_run): take back the stepper's finished work, the timed duties (checkpoint,
 * held-back stream states, the replies' queue, the stream's subscribers, --world-ttl), the wait
 * for a request, and the request's arrival; then, stopping, the requests held are answered
 * and those still unread refused (the drain). */
#include "rs_log.h"
#include "rs_wire.h"
#include "declared.h"
#include "handlers.h"
#include "loop.h"
#include "scheduler.h"
#include "server_internal.h"
#include "stepper.h"
#include "watchdog.h"
#include "worlds.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define BATCH_GRAIN_CHUNKS 8 /* chunks of RS_POOL_CHUNK items per helper a batch needs */
#define STEPPER_POLL_MS 1 /* the loop's longest wait while the stepper has its requests' work */
#define IDLE_MS 200       /* the loop's longest wait when the watchdog cannot wake it */

/* ---- making and ending a loop ------------------------------------------------------------ */

/* The default world (cfg.default_preset) as world 1, its controller the token given on the
 * command line, its lease running from now; or a random token (logged) with the lease already
 * lapsed, so the first client to Claim the world controls it. */
static int default_world(rs_server_t *s, rs_status_t *st)
{
    const rs_server_config_t *cfg = &s->cfg;
    rs_world_t *w = rs_world_new(cfg->default_preset, NULL, 0, 0, st);
    uint64_t id;
    if (!w || rs_server_take_id(s, &id, st) < 0) {
        rs_world_destroy(&w);
        return st->code ? st->code : RS_EINTERNAL;
    }
    world_slot_t *slot = rs_worlds_insert(s, id, w, "");
    if (cfg->controller_token) {
        snprintf(slot->token, sizeof slot->token, "%s", cfg->controller_token);
        slot->lease_until = rs_monotonic() + cfg->lease_seconds;
        return 0;
    }
    if (rs_token_generate(slot->token, st) < 0)
        return st->code;
    slot->lease_until = rs_monotonic();
    rs_log(RS_LOG_INFO,
           "world 1 (%s): controller token %s (claimable now: Claim it, or present this token)",
           cfg->default_preset, slot->token);
    return 0;
}

/* The request socket: bound to cfg.bind (a shard: on the listening sockets its front made,
 * and its own port's), with its limits. 0 or RS_EPRECOND. */
static int bind_router(rs_server_t *s, const rs_shard_place_t *place, rs_status_t *st)
{
    const rs_server_config_t *cfg = &s->cfg;
    s->router = zmq_socket(s->zctx, ZMQ_ROUTER);
    const char *own_ep = place ? place->own_endpoint : NULL;
    int linger = 0, fd = -1, own_fd = -1;
    if (place) { /* the shard's ROUTER owns them from here */
        fd = *place->fd;
        *place->fd = -1;
        own_fd = *place->own_fd;
        *place->own_fd = -1;
    }
    /* a guard well above the reply-with-error limit, so a huge frame cannot exhaust memory */
    int64_t maxmsg = (int64_t)cfg->max_message_size * 4 + 4096;
    /* a shard's connections are moved by its own ZeroMQ I/O thread (the front made one per
     * shard), never by another shard's */
    uint64_t io_thread = place ? (uint64_t)1 << (place->k % 64) : 0;
    if (!s->router || zmq_setsockopt(s->router, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(s->router, ZMQ_AFFINITY, &io_thread, sizeof io_thread) != 0 ||
        zmq_setsockopt(s->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) != 0 ||
        rs_curve_secure(place ? place->front : s, s->router) != 0 ||
        (fd >= 0 && zmq_setsockopt(s->router, ZMQ_USE_FD, &fd, sizeof fd) != 0) ||
        zmq_bind(s->router, cfg->bind) != 0 ||
        (own_fd >= 0 && (zmq_setsockopt(s->router, ZMQ_USE_FD, &own_fd, sizeof own_fd) != 0 ||
                         zmq_bind(s->router, own_ep) != 0)))
        return rs_fail(st, RS_EPRECOND, "cannot bind %s: %s", cfg->bind,
                       zmq_strerror(zmq_errno()));
    return 0;
}

rs_server_t *rs_loop_new(const rs_server_config_t *cfg, const rs_shard_place_t *place,
                         rs_status_t *st)
{
    rs_server_t *s = calloc(1, sizeof *s);
    if (!s) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    s->next_world_id = 1;
    if (place) {
        s->group = place->group;
        s->census = place->group->census;
        s->front = place->front;
        s->shard_index = place->k;
        s->zctx = place->front->zctx;
        s->shared_zctx = 1;
    }
    atomic_init(&s->abort, 0);
    atomic_init(&s->abort_at, INFINITY);
    atomic_init(&s->off_abort, 0);
    atomic_init(&s->off_abort_at, INFINITY);
    if (rs_snapmac_init(s, st) < 0) {
        free(s);
        return NULL;
    }
    int restored = 0;
    if (rs_curve_check_bind(cfg, st) < 0)
        goto fail;
    rs_arena_init(&s->arena, 64 << 10);
    if (!(s->sendq = rs_sendq_new()) || !(s->sched = rs_sched_new()) ||
        !(s->spin = rs_spin_new())) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory");
        goto fail;
    }
    /* the helper threads: a shard's are its front's (one crew for every shard's pool), else
     * this loop's own, so a process has cfg->threads - 1 of each kind however many loops */
    if (place) {
        s->crew = place->group->crew;
        s->off_crew = place->group->off_crew;
    } else if (cfg->threads > 1 &&
               (!(s->crew = s->own_crew = rs_crew_new(cfg->threads - 1, 0, st)) ||
                !(s->off_crew = s->own_off_crew =
                      rs_crew_new(cfg->threads - 1, RS_STEPPER_NICE, st)))) {
        goto fail;
    }
    if (!(s->pool = rs_pool_new_on(s->crew, cfg->threads, 64 << 10, st)) ||
        rs_worlds_open(s, st) < 0)
        goto fail;
    /* a helper for every 64 worlds of a batch at most: on batches of 64 finger worlds from
     * two clients a helper cost the server more CPU than it saved (docs/performance.md, "A
     * default server against N servers") */
    rs_pool_set_grain(s->pool, BATCH_GRAIN_CHUNKS);
    /* a state dir that held a server's worlds replaces the default world */
    if ((restored = cfg->state_dir ? rs_persist_open(s, st) : 0) < 0)
        goto fail;
    if (!restored && cfg->default_preset && cfg->default_preset[0] && default_world(s, st) < 0)
        goto fail;
    if (!(s->watchdog = rs_watchdog_new(s, st)) || !(s->stepper = rs_stepper_new(s, st)))
        goto fail;
    if (cfg->bind) {
        if (!s->zctx && (s->zctx = zmq_ctx_new()) && cfg->shards > 1)
            /* a front: as many ZeroMQ I/O threads as shards, so the connections' bytes are
             * not all moved by one thread (each connection is given one of them) */
            zmq_ctx_set(s->zctx, ZMQ_IO_THREADS, cfg->shards);
        if (!s->zctx || (!place && rs_curve_open(s, st) < 0)) {
            if (!s->zctx)
                rs_fail(st, RS_EINTERNAL, "cannot create a ZeroMQ context");
            goto fail;
        }
        if (cfg->shards > 1 && !place) /* a front: its shards bind the request socket */
            return rs_stream_open(s, st) < 0 ? (rs_loop_destroy(&s), NULL) : s;
        if (bind_router(s, place, st) < 0 || rs_stream_open(s, st) < 0 ||
            (place && rs_shard_open_peers(s, st) < 0))
            goto fail;
        rs_watchdog_wake_open(s->watchdog, s->zctx, s->router);
    }
    return s;
fail:
    rs_loop_destroy(&s);
    return NULL;
}

void rs_loop_destroy(rs_server_t **ps)
{
    rs_server_t *s = *ps;
    if (!s)
        return;
    rs_shard_close_peers(s);
    rs_stepper_destroy(&s->stepper);
    rs_watchdog_destroy(&s->watchdog);
    rs_sched_destroy(&s->sched);
    if (s->router)
        zmq_close(s->router);
    rs_stream_close(s);
    if (s->zctx && !s->shared_zctx)
        zmq_ctx_term(s->zctx);
    rs_curve_close(s); /* its handler thread ends with the context */
    rs_sendq_destroy(&s->sendq); /* (a shard's replies still queued free their peers' counts) */
    rs_worlds_close(s);
    rs_history_close(s);
    rs_persist_close(s);
    free(s->out);
    rs_arena_free(&s->arena);
    rs_batch_spares_free(s); /* after the requests (a batch's copies come back as spares) */
    rs_pool_destroy(&s->pool);
    rs_crew_destroy(&s->own_crew); /* after the pools on them (the stepper's went with it) */
    rs_crew_destroy(&s->own_off_crew);
    rs_spin_destroy(&s->spin);
    free(s);
    *ps = NULL;
}

/* Receive one multipart message: envelope frames, then the payload (the last frame). `flags`
 * ZMQ_DONTWAIT: return -1 (EAGAIN) at once when none is there. */
static int recv_request(void *sock, zmq_msg_t *frames, int *nframes, int flags)
{
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t *f = &frames[n < MAX_ENVELOPE + 1 ? n : MAX_ENVELOPE];
        if (n >= MAX_ENVELOPE + 1)
            zmq_msg_close(f); /* too many frames: keep overwriting the last slot */
        zmq_msg_init(f);
        if (zmq_msg_recv(f, sock, n ? 0 : flags) < 0) {
            zmq_msg_close(f);
            for (int i = 0; i < (n < MAX_ENVELOPE + 1 ? n : MAX_ENVELOPE); i++)
                zmq_msg_close(&frames[i]);
            return -1;
        }
        more = zmq_msg_more(f);
        if (n < MAX_ENVELOPE + 1)
            n++;
    }
    *nframes = n;
    return 0;
}
/* Stopping, once the loop's own requests are answered: the requests clients sent before the
 * stop that still wait unread (in the kernel's socket buffers, in the socket, or on their way
 * through another shard) are refused with UNAVAILABLE rather than left to the client's timeout.
 * Until the socket has been quiet for DRAIN_QUIET_S, no connection holds unread bytes, every
 * shard drains (none passes anything on) and none waits for the reply to one it passed; at
 * most DRAIN_MAX_S. The replies are then given DRAIN_LINGER_MS to leave when the socket
 * closes. */
#define DRAIN_QUIET_S 0.05
#define DRAIN_MAX_S 0.5
#define DRAIN_LINGER_MS 200
static void drain(rs_server_t *s)
{
    const int poll_ms = 10;
    double start = rs_clock(), quiet_from = start;
    int refused = 0;
    s->draining = 1;
    rs_shard_drain_begin(s);
    if (!s->front)
        zmq_setsockopt(s->router, ZMQ_RCVTIMEO, &poll_ms, sizeof poll_ms);
    for (;;) {
        double now = rs_clock();
        if (now - start >= DRAIN_MAX_S ||
            (now - quiet_from >= DRAIN_QUIET_S && rs_shard_settled(s) && !rs_tcp_input_unread()))
            break;
        zmq_msg_t frames[MAX_ENVELOPE + 1];
        int n = 0;
        void *sock = s->router;
        rs_caller_t caller;
        int got = s->front ? rs_shard_next(s, frames, MAX_ENVELOPE + 1, &n, &caller, &sock,
                                           poll_ms)
                           : recv_request(s->router, frames, &n, 0);
        if (got < 0) {
            if (zmq_errno() == ETERM)
                break;
            continue;
        }
        if (rs_watchdog_is_wake(s->watchdog, frames, n) || n < 2) {
            for (int i = 0; i < n; i++)
                zmq_msg_close(&frames[i]);
            continue;
        }
        rs_refuse(s, sock, frames, n, RS_EUNAVAIL,
               "the server is stopping (SIGTERM or SIGINT): this request was not run; send it "
               "again once the server is back");
        refused++;
        quiet_from = rs_clock();
    }
    s->draining = 0;
    int linger = DRAIN_LINGER_MS;
    zmq_setsockopt(s->router, ZMQ_LINGER, &linger, sizeof linger);
    if (refused)
        rs_log(RS_LOG_INFO, "stopping: refused %d request%s sent before the stop", refused,
               refused == 1 ? "" : "s");
}

/* ---- the loop's phases ---------------------------------------------------------------------
 * A single server's loop blocks in its receive with no timeout (see docs/design.md for why
 * not zmq_poll; a shard's receive is shards.c's rs_shard_next): the watchdog wakes it for its
 * next duty and on stop. Without a wake-up socket, or while the stepper has work of the loop's
 * requests, the receive has a timeout instead. While requests are parked the receive does not
 * wait, and a slice of the next one runs whenever no request is there or a slice's time has
 * passed since the last. */
typedef struct loop {
    rs_server_t *s;
    int timeout_ms;    /* the receive's timeout as set on the socket (-1: none) */
    double last_slice; /* rs_clock() when a parked request last had its slice */
} loop_t;

/* The earlier of two waits in ms (-1: none). */
static int sooner(int a, int b)
{
    return a < 0 || (b >= 0 && b < a) ? b : a;
}

/* The timed duties that are due: the checkpoint's next part, the held-back stream states, the
 * replies' queue, the stream's subscribers that left, --world-ttl. Returns the ms until the
 * next is due (-1: none). */
static int run_duties(rs_server_t *s)
{
    int want = rs_persist_tick(s);
    want = sooner(want, rs_stream_flush(s)); /* a state the rate limit held back */
    double now = rs_clock();
    /* the replies queued for peers: forget those taken, give the heap back once gone */
    want = sooner(want, rs_sendq_tick(s->sendq, now));
    if (now >= s->stream_idle_at) { /* the stream's subscribers that left: let go */
        rs_stream_idle(s);
        s->stream_idle_at = now + 1.0;
    }
    if (s->cfg.world_ttl > 0) {
        if (now >= s->next_expiry_check) {
            rs_sched_expire_idle(s, now);
            rs_declared_sweep(s, rs_worlds_owned);
            s->next_expiry_check = now + fmin(1.0, s->cfg.world_ttl / 4);
        }
        want = sooner(want, (int)ceil((s->next_expiry_check - now) * 1000.0));
    }
    return want;
}

/* Be woken in `want` ms for the next duty (and on stop): by the watchdog, or by the receive's
 * timeout, often while the stepper has work of the loop's requests. */
static void arm_wake(loop_t *l, int want)
{
    rs_server_t *s = l->s;
    int offloaded = rs_sched_offloaded(s->sched);
    if (!offloaded && rs_watchdog_can_wake(s->watchdog)) {
        rs_watchdog_wake_at(s->watchdog, want < 0 ? INFINITY : rs_clock() + want * 1e-3);
        want = -1;
    } else {
        if (want < 0 || want > IDLE_MS)
            want = IDLE_MS; /* and for the stop flag */
        if (offloaded && want > STEPPER_POLL_MS)
            want = STEPPER_POLL_MS;
    }
    if (want != l->timeout_ms) {
        l->timeout_ms = want;
        zmq_setsockopt(s->router, ZMQ_RCVTIMEO, &l->timeout_ms, sizeof l->timeout_ms);
    }
}

/* Wait for the next request (without waiting when `busy`: requests are parked): 0 and its
 * frames, caller and socket; -1 with zmq_errno() (EAGAIN: none; ETERM: the context ends). A
 * shard: its clients' requests, and those other shards pass it (shards.c). */
static int wait_request(loop_t *l, int busy, zmq_msg_t *frames, int *n, rs_caller_t *caller,
                        void **sock)
{
    rs_server_t *s = l->s;
    *sock = s->router;
    if (s->front)
        return rs_shard_next(s, frames, MAX_ENVELOPE + 1, n, caller, sock,
                             busy ? 0 : l->timeout_ms);
    if (!busy)
        rs_spin(s, s->router);
    int got = recv_request(s->router, frames, n, busy ? ZMQ_DONTWAIT : 0);
    if (!busy && got == 0)
        rs_spin_arrived(s);
    return got;
}

/* A message received: the watchdog's wake-up and lone frames are dropped (0); a request whose
 * connection does not read its replies is refused unrun (a shard's in rs_shard_next, where they
 * arrive); the rest go to the scheduler. 1 for a request it takes. */
static int take_request(loop_t *l, zmq_msg_t *frames, int n, rs_caller_t *caller, void *sock)
{
    rs_server_t *s = l->s;
    /* ROUTER always prefixes the sender identity; a lone frame cannot be answered */
    if (rs_watchdog_is_wake(s->watchdog, frames, n) || n < 2) {
        for (int i = 0; i < n; i++)
            zmq_msg_close(&frames[i]);
        return 0;
    }
    if (!s->front) {
        rs_caller_of(&frames[0], &frames[n - 1], caller);
        if (rs_refuse_backlogged(s, sock, frames, n))
            return 0;
    }
    rs_sched_arrive(s, sock, frames, n, caller);
    return 1;
}

/* The next parked request's slice: when no request was there (`idle`), or when requests keep
 * coming and a slice's time has passed since the last, so the parked ones still get their
 * turn. */
static void next_slice(loop_t *l, int idle)
{
    if (idle || rs_clock() - l->last_slice >= l->s->cfg.slice_seconds) {
        rs_sched_resume_next(l->s);
        l->last_slice = rs_clock();
    }
}

/* Stopping: the parked Steps and the requests waiting behind them get their replies (a Step:
 * UNAVAILABLE with how far it got), every world then at a control-step boundary; the stepper's
 * work is interrupted by its flag, then its requests are answered too; then the drain. */
static void finish(rs_server_t *s)
{
    rs_sched_finish(s);
    drain(s);
    s->stop = NULL;
    rs_log(RS_LOG_INFO, "stopping after %llu requests (%llu errors; %llu refused unrun and %llu "
           "replies dropped, their connection's replies unread past --max-queued-bytes-per-peer); "
           "%llu stream frames sent, %llu not sent",
           (unsigned long long)s->requests, (unsigned long long)s->errors,
           (unsigned long long)s->backlog_refused, (unsigned long long)s->backlog_dropped,
           (unsigned long long)s->stream.frames_sent,
           (unsigned long long)s->stream.frames_dropped);
}

int rs_loop_run(rs_server_t *s, rs_stop_flag_t *stop)
{
    loop_t l = {s, IDLE_MS, rs_clock()};
    s->stop = stop;
    zmq_setsockopt(s->router, ZMQ_RCVTIMEO, &l.timeout_ms, sizeof l.timeout_ms);
    rs_log(RS_LOG_INFO, "serving protocol %d.%d on %s (%d world%s)", RS_PROTOCOL_MAJOR,
           RS_PROTOCOL_MINOR, s->cfg.bind, s->nworlds, s->nworlds == 1 ? "" : "s");
    while (!atomic_load_explicit(stop, memory_order_relaxed)) {
        rs_sched_resume_offloaded(s);
        arm_wake(&l, run_duties(s));
        zmq_msg_t frames[MAX_ENVELOPE + 1];
        int n = 0, busy = rs_sched_parked(s->sched);
        void *sock;
        rs_caller_t caller;
        if (wait_request(&l, busy, frames, &n, &caller, &sock) < 0) {
            int e = zmq_errno();
            if (e == ETERM)
                break;
            if (e != EAGAIN && e != EINTR)
                rs_log(RS_LOG_WARN, "receive failed: %s", zmq_strerror(e));
            if (busy)
                next_slice(&l, 1);
            continue;
        }
        if (take_request(&l, frames, n, &caller, sock) && busy)
            next_slice(&l, 0);
    }
    finish(s);
    return 0;
}
