/* The transport: a ROUTER socket served by one poll loop. Every frame that arrives gets exactly
 * one reply frame, routed back to its sender (so any number of clients, REQ or DEALER, share the
 * socket and each sees only its own replies). */
#include "rs_log.h"
#include "rs_wire.h"
#include "server_internal.h"
#include "declared.h"
#include "worlds.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zmq.h>

#define MAX_ENVELOPE 8 /* routing frames kept before the payload */
#define STEPPER_POLL_MS 1 /* the loop's longest wait while the stepper has its requests' work */
#define STEPPER_NICE 5    /* the stepper's threads' niceness above the loop's */

void rs_server_config_defaults(rs_server_config_t *cfg)
{
    cfg->bind = "tcp://127.0.0.1:5555";
    cfg->max_worlds = 256;
    cfg->max_message_size = 4u << 20;
    cfg->max_steps_per_request = 1000000;
    cfg->default_preset = "workshop";
    cfg->lease_seconds = 30.0;
    cfg->controller_token = NULL;
    cfg->max_batch = 4096;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->threads = ncpu > 0 ? (int)ncpu : 1;
    cfg->stream_endpoint = "tcp://127.0.0.1:5556";
    cfg->stream_explicit = 0;
    cfg->stream_max_hz = 60.0;
    cfg->history_frames = 3600; /* a minute at the default 60 states per second */
    cfg->history_seconds = 60.0;
    cfg->history_bytes_per_world = (size_t)4 << 20;
    cfg->history_bytes = (size_t)256 << 20;
    cfg->snapshot_key_file = NULL;
    cfg->snapshot_key_set = 0;
    cfg->curve_secret_key = NULL;
    cfg->authorized_keys = NULL;
    cfg->insecure = 0;
    cfg->max_request_seconds = 5.0;
    cfg->slice_seconds = 0.005;
    cfg->spin_seconds = 200e-6;
    cfg->max_worlds_per_client = 64;
    cfg->max_worlds_share = 0.5;
    cfg->max_inflight_per_client = 4;
    cfg->max_tasks_per_client = 8;
    cfg->max_queued_bytes_per_peer = (size_t)64 << 20;
    cfg->world_ttl = 3600.0;
    cfg->state_dir = NULL;
    cfg->checkpoint_interval = 10.0;
    cfg->shards = 1;
    cfg->shard_ports = 0;
}

/* ---- the watchdog: interrupts a request at its budget deadline, and everything on stop ----
 * A thread that looks every WATCHDOG_MS at the armed deadlines (s->abort_at: the loop's
 * request's budget, or a slice's fuse; s->off_abort_at: the stepper's) and the stop flag, and
 * sets the matching abort flag; the core then stops within one right-hand-side evaluation.
 * Nothing is added to the step path but a few atomic stores per request. While a deadline is
 * armed it looks every WATCHDOG_MS (which bounds how long past its fuse a control step holds
 * the loop), else every WATCHDOG_IDLE_MS. */
#define WATCHDOG_MS 2
#define WATCHDOG_IDLE_MS 10

typedef struct watchdog {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int quit;
} watchdog_t;

/* Wake the loop blocked in its receive (wake_ready: the DEALER is ours to use) when its
 * wake_at has come, and once on stop: an empty message from wake_id, which the loop drops.
 * wake_at goes back to none only if the loop has not set another meanwhile. A wake_at the loop
 * sets while the watchdog sleeps is seen at its next tick (2-10 ms): only an idle loop needs
 * it, a busy one does its duties between requests anyway. */
static void wake_loop(rs_server_t *s, int stopping, int *stop_sent)
{
    if (!atomic_load_explicit(&s->wake_ready, memory_order_acquire))
        return;
    double at = atomic_load_explicit(&s->wake_at, memory_order_relaxed);
    int due = rs_clock() >= at &&
              atomic_compare_exchange_strong_explicit(&s->wake_at, &at, INFINITY,
                                                      memory_order_relaxed, memory_order_relaxed);
    if (due || (stopping && !*stop_sent))
        zmq_send(s->wake_tx, "", 0, ZMQ_DONTWAIT); /* one queued is enough: EAGAIN is fine */
    *stop_sent = stopping; /* once per stop (a later rs_server_run may stop again) */
}

static void *watchdog_main(void *arg)
{
    rs_server_t *s = arg;
    watchdog_t *wd = s->watchdog;
    int stop_sent = 0;
    pthread_mutex_lock(&wd->lock);
    while (!wd->quit) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int armed = isfinite(atomic_load_explicit(&s->abort_at, memory_order_relaxed)) ||
                    isfinite(atomic_load_explicit(&s->off_abort_at, memory_order_relaxed));
        long ns = (armed ? WATCHDOG_MS : WATCHDOG_IDLE_MS) * 1000000L;
        /* the loop's wake-up on time, not up to a tick late */
        double until = atomic_load_explicit(&s->wake_at, memory_order_relaxed) - rs_clock();
        if (until * 1e9 < (double)ns)
            ns = until > 0 ? (long)(until * 1e9) + 1 : 0;
        ts.tv_nsec += ns;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&wd->wake, &wd->lock, &ts);
        int stopping = rs_server_stopping(s);
        double now = rs_clock();
        if (stopping || now >= atomic_load_explicit(&s->abort_at, memory_order_relaxed))
            atomic_store_explicit(&s->abort, 1, memory_order_relaxed);
        if (stopping || now >= atomic_load_explicit(&s->off_abort_at, memory_order_relaxed))
            atomic_store_explicit(&s->off_abort, 1, memory_order_relaxed);
        wake_loop(s, stopping, &stop_sent);
    }
    pthread_mutex_unlock(&wd->lock);
    return NULL;
}

/* A server's or shard's loop: the watchdog's DEALER to its ROUTER (inproc, a random routing id),
 * handed to the watchdog (wake_ready, release). Without it (an error) the loop's receive
 * times out as before: nothing but a little CPU per request is lost. */
static void wake_open(rs_server_t *s)
{
    char ep[64];
    rs_status_t st;
    rs_status_clear(&st);
    int linger = 0;
    snprintf(ep, sizeof ep, "inproc://robosim-wake-%p", (void *)s);
    if (!s->watchdog || rs_token_generate(s->wake_id, &st) < 0 || zmq_bind(s->router, ep) != 0 ||
        !(s->wake_tx = zmq_socket(s->zctx, ZMQ_DEALER)) ||
        zmq_setsockopt(s->wake_tx, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(s->wake_tx, ZMQ_ROUTING_ID, s->wake_id, strlen(s->wake_id)) != 0 ||
        zmq_connect(s->wake_tx, ep) != 0) {
        rs_log(RS_LOG_WARN, "the loop waits with a timeout: no wake-up socket (%s)",
               zmq_strerror(zmq_errno()));
        if (s->wake_tx)
            zmq_close(s->wake_tx);
        s->wake_tx = NULL;
        return;
    }
    atomic_store_explicit(&s->wake_ready, 1, memory_order_release);
}

/* Whether the message received (its frames) is the watchdog's wake-up. */
static int is_wake(const rs_server_t *s, zmq_msg_t *frames, int n)
{
    size_t len = strlen(s->wake_id);
    return s->wake_tx && n == 2 && len && zmq_msg_size(&frames[0]) == len &&
           memcmp(zmq_msg_data(&frames[0]), s->wake_id, len) == 0;
}

static int watchdog_start(rs_server_t *s, rs_status_t *st)
{
    watchdog_t *wd = calloc(1, sizeof *wd);
    if (!wd)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    pthread_mutex_init(&wd->lock, NULL);
    pthread_cond_init(&wd->wake, NULL);
    s->watchdog = wd;
    if (pthread_create(&wd->thread, NULL, watchdog_main, s) != 0) {
        s->watchdog = NULL;
        free(wd);
        return rs_fail(st, RS_EINTERNAL, "cannot start the watchdog thread");
    }
    return 0;
}

static void watchdog_stop(rs_server_t *s)
{
    watchdog_t *wd = s->watchdog;
    if (!wd)
        return;
    pthread_mutex_lock(&wd->lock);
    wd->quit = 1;
    pthread_cond_signal(&wd->wake);
    pthread_mutex_unlock(&wd->lock);
    pthread_join(wd->thread, NULL);
    if (s->wake_tx)
        zmq_close(s->wake_tx); /* before the context ends (rs_server_destroy) */
    s->wake_tx = NULL;
    atomic_store(&s->wake_ready, 0);
    pthread_mutex_destroy(&wd->lock);
    pthread_cond_destroy(&wd->wake);
    free(wd);
    s->watchdog = NULL;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the stepper: work too long for the loop's thread ----------------------------------------
 * One thread runs, in arrival order, what handlers hand it (a Step's control steps that
 * outlast the loop's fuse, MonteCarlo runs): the request stays parked on s->offloaded, its
 * worlds held, and the loop resumes it once the stepper is done with it, so the loop goes on
 * answering everyone else. Work there is interrupted by its own flag (s->off_abort). */
typedef struct stepper {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    rs_cont_t **queue; /* work not yet run (FIFO ring of cap) */
    size_t head, count, cap;
    atomic_int finished; /* runs done since the loop last looked */
    int quit;
} stepper_t;

static void *stepper_main(void *arg)
{
    rs_server_t *s = arg;
    stepper_t *sp = s->stepper;
    /* the loop comes first: this thread, and the workers it starts (they inherit it), run at a
     * lower priority, so the loop's thread is not kept waiting for a core by them */
    errno = 0;
    int nice_now = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    if (errno == 0)
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice_now + STEPPER_NICE);
    rs_status_t st;
    if (!(s->off_pool = rs_pool_new(s->cfg.threads, 64 << 10, &st)))
        rs_log(RS_LOG_WARN, "stepper: %s; MonteCarlo runs one at a time", st.message);
    pthread_mutex_lock(&sp->lock);
    for (;;) {
        while (!sp->count && !sp->quit)
            pthread_cond_wait(&sp->wake, &sp->lock);
        if (!sp->count)
            break;
        rs_cont_t *c = sp->queue[sp->head];
        sp->head = (sp->head + 1) % sp->cap;
        sp->count--;
        pthread_mutex_unlock(&sp->lock);
        c->off_run(s, c);
        pthread_mutex_lock(&sp->lock);
        c->off_done = 1;
        atomic_fetch_add(&sp->finished, 1);
    }
    pthread_mutex_unlock(&sp->lock);
    return NULL;
}

static int stepper_start(rs_server_t *s, rs_status_t *st)
{
    stepper_t *sp = calloc(1, sizeof *sp);
    if (!sp)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    pthread_mutex_init(&sp->lock, NULL);
    pthread_cond_init(&sp->wake, NULL);
    atomic_init(&sp->finished, 0);
    s->stepper = sp;
    if (pthread_create(&sp->thread, NULL, stepper_main, s) != 0) {
        s->stepper = NULL;
        free(sp);
        return rs_fail(st, RS_EINTERNAL, "cannot start the stepper thread");
    }
    return 0;
}

/* Join the stepper after the work it has (stopping: interrupted at once). */
static void stepper_stop(rs_server_t *s)
{
    stepper_t *sp = s->stepper;
    if (!sp)
        return;
    atomic_store_explicit(&s->off_abort, 1, memory_order_relaxed);
    pthread_mutex_lock(&sp->lock);
    sp->quit = 1;
    pthread_cond_signal(&sp->wake);
    pthread_mutex_unlock(&sp->lock);
    pthread_join(sp->thread, NULL);
    pthread_mutex_destroy(&sp->lock);
    pthread_cond_destroy(&sp->wake);
    free(sp->queue);
    free(sp);
    s->stepper = NULL;
}

/* Queue c's work on the stepper. 0, or -1 when out of memory. */
static int stepper_submit(rs_server_t *s, rs_cont_t *c)
{
    stepper_t *sp = s->stepper;
    int rc = 0;
    pthread_mutex_lock(&sp->lock);
    if (sp->count == sp->cap) {
        size_t cap = sp->cap ? 2 * sp->cap : 16;
        rs_cont_t **q = malloc(cap * sizeof *q);
        if (q) {
            for (size_t i = 0; i < sp->count; i++)
                q[i] = sp->queue[(sp->head + i) % sp->cap];
            free(sp->queue);
            sp->queue = q;
            sp->head = 0;
            sp->cap = cap;
        } else {
            rc = -1;
        }
    }
    if (rc == 0) {
        sp->queue[(sp->head + sp->count) % sp->cap] = c;
        sp->count++;
        pthread_cond_signal(&sp->wake);
    }
    pthread_mutex_unlock(&sp->lock);
    return rc;
}

/* Whether the stepper has run c's work (then the loop owns c again). */
static int stepper_done(rs_server_t *s, const rs_cont_t *c)
{
    stepper_t *sp = s->stepper;
    pthread_mutex_lock(&sp->lock);
    int done = c->off_done;
    pthread_mutex_unlock(&sp->lock);
    return done;
}

/* Mark the worlds a parked request holds (held 1) or release them (0). */
static void hold(rs_server_t *s, const rs_cont_t *c, int held)
{
    for (size_t i = 0; i < c->nheld; i++) {
        world_slot_t *w = rs_worlds_find(s, c->held[i]);
        if (w)
            w->sched.held = held;
    }
}

static rs_server_t *server_new(const rs_server_config_t *cfg, rs_server_t *front, int k,
                               rs_status_t *st);

rs_server_t *rs_server_new(const rs_server_config_t *cfg, rs_status_t *st)
{
    if (cfg->shards <= 1)
        return server_new(cfg, NULL, 0, st);
    /* the front: the socket, the stream, CURVE and the state dir's lock and id record; its
     * shards hold (restore, checkpoint) the worlds */
    rs_server_config_t fc = *cfg;
    fc.default_preset = NULL;
    fc.threads = 1;
    static const rs_shard_ops_t shard_ops = {rs_server_new_shard, rs_server_run,
                                             rs_server_destroy};
    rs_server_t *s = server_new(&fc, NULL, 0, st);
    if (s && rs_shards_open(s, cfg, &shard_ops, st) < 0)
        rs_server_destroy(&s);
    return s;
}

rs_server_t *rs_server_new_shard(const rs_server_config_t *cfg, rs_server_t *front, int k,
                                 rs_status_t *st)
{
    return server_new(cfg, front, k, st);
}

static rs_server_t *server_new(const rs_server_config_t *cfg, rs_server_t *front, int k,
                               rs_status_t *st)
{
    rs_server_t *s = calloc(1, sizeof *s);
    if (!s) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    s->next_world_id = 1;
    if (front) {
        s->census = rs_shards_census(front);
        s->front = front;
        s->shard_index = k;
        s->zctx = front->zctx;
        s->shared_zctx = 1;
    }
    atomic_init(&s->abort, 0);
    atomic_init(&s->abort_at, INFINITY);
    atomic_init(&s->wake_at, INFINITY);
    atomic_init(&s->wake_ready, 0);
    atomic_init(&s->off_abort, 0);
    atomic_init(&s->off_abort_at, INFINITY);
    if (rs_snapmac_init(s, st) < 0) {
        free(s);
        return NULL;
    }
    if (rs_curve_check_bind(cfg, st) < 0) {
        rs_server_destroy(&s);
        return NULL;
    }
    rs_arena_init(&s->arena, 64 << 10);
    if (!(s->sendq = rs_sendq_new())) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory");
        rs_server_destroy(&s);
        return NULL;
    }
    if (!(s->pool = rs_pool_new(cfg->threads, 64 << 10, st))) {
        rs_server_destroy(&s);
        return NULL;
    }
    if (rs_worlds_open(s, st) < 0) {
        rs_server_destroy(&s);
        return NULL;
    }
    /* a state dir that held a server's worlds replaces the default world */
    int restored = cfg->state_dir ? rs_persist_open(s, st) : 0;
    if (restored < 0) {
        rs_server_destroy(&s);
        return NULL;
    }
    if (!restored && cfg->default_preset && cfg->default_preset[0]) {
        rs_world_t *w = rs_world_new(cfg->default_preset, NULL, 0, 0, st);
        uint64_t id;
        if (!w || rs_server_take_id(s, &id, st) < 0) {
            rs_world_destroy(&w);
            rs_server_destroy(&s);
            return NULL;
        }
        world_slot_t *slot = rs_worlds_insert(s, id, w, "");
        /* world 1's controller: the token given on the command line, its lease running from
         * now; or a random token (logged) with the lease already lapsed, so the first client
         * to Claim the world controls it */
        if (cfg->controller_token) {
            snprintf(slot->token, sizeof slot->token, "%s", cfg->controller_token);
            slot->lease_until = rs_monotonic() + cfg->lease_seconds;
        } else {
            if (rs_token_generate(slot->token, st) < 0) {
                rs_server_destroy(&s);
                return NULL;
            }
            slot->lease_until = rs_monotonic();
            rs_log(RS_LOG_INFO,
                   "world 1 (%s): controller token %s (claimable now: Claim it, or present this "
                   "token)",
                   cfg->default_preset, slot->token);
        }
    }
    if (watchdog_start(s, st) < 0 || stepper_start(s, st) < 0) {
        rs_server_destroy(&s);
        return NULL;
    }
    if (cfg->bind) {
        if (!s->zctx && (s->zctx = zmq_ctx_new()) && cfg->shards > 1)
            /* a front: as many ZeroMQ I/O threads as shards, so the connections' bytes are
             * not all moved by one thread (each connection is given one of them) */
            zmq_ctx_set(s->zctx, ZMQ_IO_THREADS, cfg->shards);
        if (!s->zctx || (!front && rs_curve_open(s, st) < 0)) {
            if (!s->zctx)
                rs_fail(st, RS_EINTERNAL, "cannot create a ZeroMQ context");
            rs_server_destroy(&s);
            return NULL;
        }
        if (cfg->shards > 1 && !front)
            return rs_stream_open(s, st) < 0 ? (rs_server_destroy(&s), NULL) : s; /* a front:
                                           its shards bind the request socket */
        s->router = zmq_socket(s->zctx, ZMQ_ROUTER);
        const char *own_ep = NULL;
        int linger = 0, fd = front ? rs_shards_listen_fd(front, k, 0, NULL) : -1;
        int own_fd = front ? rs_shards_listen_fd(front, k, 1, &own_ep) : -1;
        /* a guard well above the reply-with-error limit, so a huge frame cannot exhaust memory */
        int64_t maxmsg = (int64_t)cfg->max_message_size * 4 + 4096;
        /* a shard's connections are moved by its own ZeroMQ I/O thread (the front made one
         * per shard), never by another shard's */
        uint64_t io_thread = front ? (uint64_t)1 << (k % 64) : 0;
        if (!s->router || zmq_setsockopt(s->router, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
            zmq_setsockopt(s->router, ZMQ_AFFINITY, &io_thread, sizeof io_thread) != 0 ||
            zmq_setsockopt(s->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) != 0 ||
            rs_curve_secure(front ? front : s, s->router) != 0 ||
            (fd >= 0 && zmq_setsockopt(s->router, ZMQ_USE_FD, &fd, sizeof fd) != 0) ||
            zmq_bind(s->router, cfg->bind) != 0 ||
            (own_fd >= 0 && (zmq_setsockopt(s->router, ZMQ_USE_FD, &own_fd, sizeof own_fd) != 0 ||
                             zmq_bind(s->router, own_ep) != 0))) {
            rs_fail(st, RS_EPRECOND, "cannot bind %s: %s", cfg->bind, zmq_strerror(zmq_errno()));
            rs_server_destroy(&s);
            return NULL;
        }
        if (rs_stream_open(s, st) < 0 || (front && rs_shard_open_peers(s, st) < 0)) {
            rs_server_destroy(&s);
            return NULL;
        }
        wake_open(s);
    }
    return s;
}

static void pending_drop(struct pending **list);

void rs_server_destroy(rs_server_t **ps)
{
    rs_server_t *s = *ps;
    if (!s)
        return;
    rs_shards_close(s); /* a front's shards first: their sockets are in its context */
    rs_shard_close_peers(s);
    stepper_stop(s);
    watchdog_stop(s);
    pending_drop(&s->parked);
    pending_drop(&s->waiting);
    pending_drop(&s->offloaded);
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
    rs_pool_destroy(&s->pool);
    rs_pool_destroy(&s->off_pool);
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

/* ---- scheduling: no client stalls the others ----------------------------------------------
 * One thread serves every request, so a long Step runs in slices (cfg.slice_seconds, checked
 * at control-step boundaries: one clock read per control step), a StepBatch in rounds of a
 * slice per world: one not done after a slice is parked (its frames and progress kept here)
 * and resumed in turn with the other parked ones, while everything else that arrives is served
 * in between. A parked request holds its worlds: requests that name one of them wait, in
 * arrival order, until it is answered, so a world's requests stay in order. Each client may have
 * cfg.max_inflight_per_client requests parked or waiting. */
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
    for (size_t i = 0; i < n; i++) {
        const world_slot_t *w = rs_worlds_find(s, ids[i]);
        if (w && w->sched.held)
            return 1;
        for (const pending_t *q = s->waiting; q && q != upto; q = q->next)
            for (size_t j = 0; j < q->nids; j++)
                if (q->ids[j] == ids[i])
                    return 1;
    }
    return 0;
}

/* Requests of `caller` held unanswered (parked or waiting). */
static int inflight(const rs_server_t *s, const rs_caller_t *caller)
{
    int n = 0;
    for (const pending_t *p = s->parked; p; p = p->next)
        n += strcmp(p->caller.id, caller->id) == 0;
    for (const pending_t *p = s->waiting; p; p = p->next)
        n += strcmp(p->caller.id, caller->id) == 0;
    for (const pending_t *p = s->offloaded; p; p = p->next)
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

static void refuse(rs_server_t *s, void *sock, zmq_msg_t *frames, int n, int code,
                   const char *message);

/* Serve a request (frames[0..n-1]) with progress `c`: reply, or, when the handler parks it,
 * keep it on the parked list, or on the offloaded one with its work queued on the stepper
 * (taking over the frames, into `p` or a new record). Returns whether it was kept. */
static int serve(rs_server_t *s, void *sock, zmq_msg_t *frames, int n, const rs_caller_t *caller,
                 rs_cont_t *c, pending_t *p)
{
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
            refuse(s, sock, frames, n, RS_EEXHAUSTED, "server out of memory keeping the request");
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
        if (off && stepper_submit(s, &p->cont) < 0) {
            /* no room in the stepper's queue: refused (the record goes with its caller) */
            refuse(s, p->sock, p->frames, p->nframes, RS_EEXHAUSTED,
                   "server out of memory queueing the request");
            p->nframes = 0;
            if (!given)
                pending_free(p);
            return 0;
        }
        hold(s, &p->cont, 1);
        if (off) {
            append(&s->offloaded, p);
            s->noffloaded++;
        } else {
            append(&s->parked, p);
            s->nparked++;
        }
        return 1;
    }
    rs_send_reply(s, sock, frames, n, out, outlen);
    return 0;
}

/* Serve the waiting requests that no longer wait (their worlds free), in arrival order. */
static void serve_waiting(rs_server_t *s)
{
    pending_t **link = &s->waiting;
    while (*link) {
        pending_t *q = *link;
        if (must_wait(s, q->ids, q->nids, q)) {
            link = &q->next;
            continue;
        }
        *link = q->next;
        s->nwaiting--;
        rs_cont_t c = {0};
        serve(s, q->sock, q->frames, q->nframes, &q->caller, &c, NULL);
        q->nframes = 0; /* consumed by the reply, or moved into a parked record */
        pending_free(q);
        link = &s->waiting; /* a request served may have freed or held others' worlds */
    }
}

/* Resume the parked request at the head of the list for one slice. */
static void resume_next(rs_server_t *s)
{
    pending_t *p = s->parked;
    if (!p)
        return;
    s->parked = p->next;
    s->nparked--;
    hold(s, &p->cont, 0); /* its own request may touch them; held again if it parks again */
    if (serve(s, p->sock, p->frames, p->nframes, &p->caller, &p->cont, p))
        return;
    p->nframes = 0; /* consumed by the reply */
    pending_free(p);
    serve_waiting(s);
}

/* Resume the requests whose work the stepper has run (each takes its result and answers, or
 * parks again). Returns how many. */
static int resume_offloaded(rs_server_t *s)
{
    stepper_t *sp = s->stepper;
    if (!s->offloaded || !atomic_exchange(&sp->finished, 0))
        return 0;
    int n = 0;
    pending_t **link = &s->offloaded;
    while (*link) {
        pending_t *p = *link;
        if (!stepper_done(s, &p->cont)) {
            link = &p->next;
            continue;
        }
        *link = p->next;
        s->noffloaded--;
        n++;
        hold(s, &p->cont, 0);
        if (!serve(s, p->sock, p->frames, p->nframes, &p->caller, &p->cont, p)) {
            p->nframes = 0; /* consumed by the reply */
            pending_free(p);
        }
        link = &s->offloaded; /* serve may have appended to it */
    }
    serve_waiting(s);
    return n;
}

/* An error reply to a request not run (frames consumed). */
static void refuse(rs_server_t *s, void *sock, zmq_msg_t *frames, int n, int code,
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
static void arrive(rs_server_t *s, void *sock, zmq_msg_t *frames, int n,
                   const rs_caller_t *caller)
{
    if (s->parked || s->waiting || s->offloaded) {
        int max = s->cfg.max_inflight_per_client, have = inflight(s, caller);
        if (max > 0 && have >= max) {
            char msg[256];
            snprintf(msg, sizeof msg,
                     "this client already has %d requests in flight, its quota "
                     "(--max-inflight-per-client %d); wait for their replies before sending more",
                     have, max);
            refuse(s, sock, frames, n, RS_EEXHAUSTED, msg);
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
                refuse(s, sock, frames, n, RS_EEXHAUSTED,
                       "server out of memory queueing the request");
                return;
            }
            p->ids = ids;
            p->nids = (size_t)nids;
            append(&s->waiting, p);
            s->nwaiting++;
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
static void expire_idle(rs_server_t *s, double now)
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

static int cmp_ulong(const void *a, const void *b)
{
    unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
    return (x > y) - (x < y);
}

/* Whether a TCP connection of this process holds bytes that ZeroMQ's I/O threads have not read
 * yet: a request a client sent before the stop, which a busy machine has not yet let an I/O
 * thread take in. The process's sockets by inode (the links in /proc/self/fd), then the
 * receive queues of /proc/net/tcp and tcp6: paths only, no call on another thread's fd. Only
 * ever asked while stopping. Linux; elsewhere 0, and the drain's quiet time alone covers it. */
static int input_unread(void)
{
#ifdef __linux__
    unsigned long *ino = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        char path[64], link[64];
        unsigned long i;
        snprintf(path, sizeof path, "/proc/self/fd/%.32s", e->d_name);
        ssize_t len = readlink(path, link, sizeof link - 1);
        if (len <= 0)
            continue;
        link[len] = 0;
        if (sscanf(link, "socket:[%lu]", &i) != 1)
            continue;
        if (n == cap) {
            unsigned long *grown = realloc(ino, (cap ? 2 * cap : 64) * sizeof *ino);
            if (!grown)
                break;
            ino = grown;
            cap = cap ? 2 * cap : 64;
        }
        ino[n++] = i;
    }
    closedir(d);
    qsort(ino, n, sizeof *ino, cmp_ulong);
    int found = 0;
    static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (int k = 0; k < 2 && n && !found; k++) {
        FILE *f = fopen(tables[k], "r");
        char line[512];
        if (!f)
            continue;
        if (fgets(line, sizeof line, f)) /* the header */
            while (!found && fgets(line, sizeof line, f)) {
                unsigned state = 0;
                unsigned long tx = 0, rx = 0, i = 0;
                /* sl local remote st tx_queue:rx_queue tr:when retrnsmt uid timeout inode */
                found = sscanf(line, " %*d: %*s %*s %x %lx:%lx %*s %*s %*u %*d %lu", &state, &tx,
                               &rx, &i) == 4 &&
                        state == 1 /* ESTABLISHED */ && rx > 0 &&
                        bsearch(&i, ino, n, sizeof *ino, cmp_ulong);
            }
        fclose(f);
    }
    free(ino);
    return found;
#else
    return 0;
#endif
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
            (now - quiet_from >= DRAIN_QUIET_S && rs_shard_settled(s) && !input_unread()))
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
        if (is_wake(s, frames, n) || n < 2) {
            for (int i = 0; i < n; i++)
                zmq_msg_close(&frames[i]);
            continue;
        }
        refuse(s, sock, frames, n, RS_EUNAVAIL,
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

int rs_server_run(rs_server_t *s, rs_stop_flag_t *stop)
{
    if (s->shards)
        return rs_shards_run(s, stop);
    /* A blocking receive (see docs/design.md for why not zmq_poll; a shard's is shards.c's):
     * with no timeout where the watchdog wakes the loop (wake_ready; the loop's next duty in
     * wake_at), else with one (no wake-up socket, or while the stepper has work of the loop's
     * requests). While Steps
     * are parked the receive does not wait, and a slice of the next one runs whenever no request
     * is there or a slice's time has passed since the last. */
    int timeout_ms = 200, idle_ms = 200;
    double last_slice = rs_clock();
    s->stop = stop;
    zmq_setsockopt(s->router, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    rs_log(RS_LOG_INFO, "serving protocol %d.%d on %s (%d world%s)", RS_PROTOCOL_MAJOR,
           RS_PROTOCOL_MINOR, s->cfg.bind, s->nworlds, s->nworlds == 1 ? "" : "s");
    while (!atomic_load_explicit(stop, memory_order_relaxed)) {
        resume_offloaded(s);
        int ckpt = rs_persist_tick(s);
        /* wake up in time for a state the stream's rate limit held back, for the next part of
         * a checkpoint, and often while the stepper has work of the loop's requests */
        int due = rs_stream_flush(s), want = due; /* ms; -1: no duty */
        if (ckpt >= 0 && (want < 0 || ckpt < want))
            want = ckpt;
        double now = rs_clock();
        /* the replies queued for peers: forget those taken, give the heap back once gone */
        int sweep_q = rs_sendq_tick(s->sendq, now);
        if (want < 0 || sweep_q < want)
            want = sweep_q;
        if (now >= s->stream_idle_at) { /* the stream's subscribers that left: let go */
            rs_stream_idle(s);
            s->stream_idle_at = now + 1.0;
        }
        if (s->cfg.world_ttl > 0) {
            if (now >= s->next_expiry_check) {
                expire_idle(s, now);
                rs_declared_sweep(s, rs_worlds_owned);
                s->next_expiry_check = now + fmin(1.0, s->cfg.world_ttl / 4);
            }
            int sweep = (int)ceil((s->next_expiry_check - now) * 1000.0);
            if (want < 0 || sweep < want)
                want = sweep;
        }
        if (!s->offloaded && atomic_load_explicit(&s->wake_ready, memory_order_relaxed)) {
            /* the watchdog wakes the loop for its next duty, and on stop */
            atomic_store_explicit(&s->wake_at, want < 0 ? INFINITY : now + want * 1e-3,
                                  memory_order_relaxed);
            want = -1;
        } else {
            if (want < 0 || want > idle_ms)
                want = idle_ms; /* and for the stop flag */
            if (s->offloaded && want > STEPPER_POLL_MS)
                want = STEPPER_POLL_MS;
        }
        if (want != timeout_ms) {
            timeout_ms = want;
            zmq_setsockopt(s->router, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
        }
        zmq_msg_t frames[MAX_ENVELOPE + 1];
        int n = 0, busy = s->parked != NULL;
        void *sock = s->router;
        rs_caller_t caller;
        /* a shard: its clients' requests, and those other shards pass it (shards.c) */
        if (!s->front && !busy)
            rs_spin(s, s->router);
        int got = s->front ? rs_shard_next(s, frames, MAX_ENVELOPE + 1, &n, &caller, &sock,
                                           busy ? 0 : timeout_ms)
                           : recv_request(s->router, frames, &n, busy ? ZMQ_DONTWAIT : 0);
        if (!s->front && !busy && got == 0)
            rs_spin_arrived(s);
        if (got < 0) {
            int e = zmq_errno();
            if (e == ETERM)
                break;
            if (e != EAGAIN && e != EINTR)
                rs_log(RS_LOG_WARN, "receive failed: %s", zmq_strerror(e));
            if (busy) {
                resume_next(s);
                last_slice = rs_clock();
            }
            continue;
        }
        if (is_wake(s, frames, n)) {
            for (int i = 0; i < n; i++)
                zmq_msg_close(&frames[i]);
            continue; /* the watchdog's: the loop's duties (above) or the stop flag */
        }
        if (n < 2) {
            /* ROUTER always prefixes the sender identity; a lone frame cannot be answered */
            for (int i = 0; i < n; i++)
                zmq_msg_close(&frames[i]);
            continue;
        }
        if (!s->front)
            rs_caller_of(&frames[0], &frames[n - 1], &caller);
        /* a client that does not read its replies: refused unrun (a shard's are in
         * rs_shard_next, where they arrive) */
        if (!s->front && rs_refuse_backlogged(s, sock, frames, n))
            continue;
        arrive(s, sock, frames, n, &caller);
        if (busy && rs_clock() - last_slice >= s->cfg.slice_seconds) {
            resume_next(s); /* requests keep coming: the parked ones still get their turn */
            last_slice = rs_clock();
        }
    }
    /* stopping: the parked Steps and the requests waiting behind them get their replies (a
     * Step: UNAVAILABLE with how far it got); every world is then at a control-step boundary.
     * The stepper's work is interrupted by its flag, then its requests are answered too */
    atomic_store_explicit(&s->abort, 1, memory_order_relaxed);
    atomic_store_explicit(&s->off_abort, 1, memory_order_relaxed);
    while (s->offloaded) {
        if (!resume_offloaded(s))
            sleep_ms(1);
    }
    while (s->parked)
        resume_next(s);
    serve_waiting(s);
    drain(s);
    s->stop = NULL;
    rs_log(RS_LOG_INFO, "stopping after %llu requests (%llu errors; %llu refused unrun and %llu "
           "replies dropped, their connection's replies unread past --max-queued-bytes-per-peer); "
           "%llu stream frames sent, %llu not sent",
           (unsigned long long)s->requests, (unsigned long long)s->errors,
           (unsigned long long)s->backlog_refused, (unsigned long long)s->backlog_dropped,
           (unsigned long long)s->stream.frames_sent,
           (unsigned long long)s->stream.frames_dropped);
    return 0;
}
