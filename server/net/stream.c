/* The observer stream: every world publishes its state after each Step, Reset and SetState on
 * one XPUB socket, rate-limited per world (docs/design.md, "Rationale and measurements"). */
#include "rs_codec.h"
#include "rs_log.h"
#include "server_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

/* Frames queued per subscriber before XPUB drops them for it: one that does not read holds
 * this many frames' queue entries (two messages of 64 bytes each) and keeps the frames alive
 * (0.1 to 40 kB each, shared with the other subscribers); a shard's stream to its front (its
 * one subscriber, inproc, read at once) keeps more, for bursts. */
#define STREAM_SNDHWM 256
#define STREAM_SNDHWM_INPROC 1000
#define MAX_PREFIXES 4096   /* subscriptions tracked; beyond, every world counts as watched */
#define MAX_PREFIX_LEN 64

int rs_stream_open(rs_server_t *s, rs_status_t *st)
{
    s->stream.next_due = INFINITY;
    s->stream.sub_gen = 1; /* a new world's watched_gen (0) is stale from the start */
    s->stream.subs_read_at = UINT64_MAX;
    s->stream_endpoint[0] = '\0';
    const char *ep = s->cfg.stream_endpoint;
    if (!ep || !ep[0])
        return 0;
    s->stream.xpub = zmq_socket(s->zctx, ZMQ_XPUB);
    int linger = 0, hwm = strncmp(ep, "inproc://", 9) == 0 ? STREAM_SNDHWM_INPROC : STREAM_SNDHWM;
    char bound[sizeof s->stream_endpoint];
    size_t blen = sizeof bound;
    void *pub = s->stream.xpub;
    if (!pub || zmq_setsockopt(pub, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(pub, ZMQ_SNDHWM, &hwm, sizeof hwm) != 0 ||
        rs_curve_secure(s, pub) != 0 || zmq_bind(pub, ep) != 0 ||
        zmq_getsockopt(pub, ZMQ_LAST_ENDPOINT, bound, &blen) != 0) {
        const char *why = zmq_strerror(zmq_errno());
        if (s->stream.xpub)
            zmq_close(s->stream.xpub);
        s->stream.xpub = NULL;
        if (s->cfg.stream_explicit)
            return rs_fail(st, RS_EPRECOND, "cannot bind the observer stream on %s: %s", ep, why);
        rs_log(RS_LOG_WARN,
               "observer stream off: cannot bind %s: %s (choose one with --stream ENDPOINT)", ep,
               why);
        return 0;
    }
    snprintf(s->stream_endpoint, sizeof s->stream_endpoint, "%s", bound);
    rs_log(RS_LOG_INFO, "observer stream on %s (at most %g states per second per world)",
           s->stream_endpoint, s->cfg.stream_max_hz);
    return 0;
}

void rs_stream_close(rs_server_t *s)
{
    if (s->stream.xpub)
        zmq_close(s->stream.xpub);
    s->stream.xpub = NULL;
    for (int i = 0; i < s->stream.nsubs; i++)
        free(s->stream.subs[i]);
    free(s->stream.subs);
    s->stream.subs = NULL;
    s->stream.nsubs = s->stream.capsubs = 0;
}

/* Track one (un)subscription message: byte 1 subscribe, 0 unsubscribe, then the prefix. The
 * XPUB passes on only the first subscription to a prefix and the last unsubscription, so a
 * set is enough. */
static void track_subscription(rs_server_t *s, const unsigned char *m, size_t n)
{
    if (n < 1 || (m[0] != 0 && m[0] != 1))
        return; /* not a subscription message */
    size_t plen = n - 1;
    if (plen > MAX_PREFIX_LEN) {
        s->stream.subs_overflow |= m[0] == 1; /* cannot match a topic prefix-wise anyway: be safe */
        s->stream.sub_gen++;
        return;
    }
    int found = -1;
    for (int i = 0; i < s->stream.nsubs && found < 0; i++)
        if (strlen(s->stream.subs[i]) == plen && memcmp(s->stream.subs[i], m + 1, plen) == 0)
            found = i;
    if (m[0] == 1 && found < 0) {
        if (s->stream.nsubs >= MAX_PREFIXES) {
            s->stream.subs_overflow = 1;
        } else {
            if (s->stream.nsubs == s->stream.capsubs) {
                int cap = s->stream.capsubs ? 2 * s->stream.capsubs : 16;
                char **grown = realloc(s->stream.subs, (size_t)cap * sizeof *grown);
                if (!grown) {
                    s->stream.subs_overflow = 1;
                    s->stream.sub_gen++;
                    return;
                }
                s->stream.subs = grown;
                s->stream.capsubs = cap;
            }
            char *p = malloc(plen + 1);
            if (!p) {
                s->stream.subs_overflow = 1;
                s->stream.sub_gen++;
                return;
            }
            memcpy(p, m + 1, plen);
            p[plen] = '\0';
            s->stream.subs[s->stream.nsubs++] = p;
        }
    } else if (m[0] == 0 && found >= 0) {
        free(s->stream.subs[found]);
        s->stream.subs[found] = s->stream.subs[--s->stream.nsubs];
    }
    s->stream.sub_gen++;
}

/* Read the subscription messages waiting on the socket. */
static void poll_subscriptions(rs_server_t *s)
{
    for (;;) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s->stream.xpub, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            return;
        }
        track_subscription(s, zmq_msg_data(&m), zmq_msg_size(&m));
        zmq_msg_close(&m);
    }
}

void rs_stream_idle(rs_server_t *s)
{
    if (s->stream.xpub)
        poll_subscriptions(s);
}

static int topic(char *buf, size_t n, uint64_t id)
{
    return snprintf(buf, n, "world/%llu/", (unsigned long long)id);
}

/* Read the subscription messages once per request: a batch publishes many worlds. */
static void poll_subscriptions_once(rs_server_t *s)
{
    if (s->stream.subs_read_at == s->requests)
        return;
    poll_subscriptions(s);
    s->stream.subs_read_at = s->requests;
}

/* Whether anyone subscribes to a prefix of w's topic. */
static int watched(rs_server_t *s, world_slot_t *w)
{
    if (w->stream.watched_gen == s->stream.sub_gen)
        return w->stream.watched;
    char t[48];
    size_t tl = (size_t)topic(t, sizeof t, w->id);
    int yes = s->stream.subs_overflow;
    for (int i = 0; i < s->stream.nsubs && !yes; i++) {
        size_t pl = strlen(s->stream.subs[i]);
        yes = pl <= tl && memcmp(s->stream.subs[i], t, pl) == 0;
    }
    w->stream.watched = yes;
    w->stream.watched_gen = s->stream.sub_gen;
    return yes;
}

/* A world's stream_max_hz may lower the server's --stream-max-hz, never raise it (a snapshot
 * or a restored world may carry a larger one). */
static double min_interval(const rs_server_t *s, const world_slot_t *w)
{
    double hz = s->cfg.stream_max_hz, mine = w->world->model->stream_max_hz;
    if (mine > 0 && mine < hz)
        hz = mine;
    return hz > 0 ? 1.0 / hz : 0.0;
}

int rs_stream_check_params(const rs_server_t *s, const rs_param_t *params, size_t n,
                           rs_status_t *st)
{
    for (size_t i = 0; i < n; i++) {
        const rs_param_t *p = &params[i];
        if ((p->entity && p->entity[0]) || !p->name || strcmp(p->name, "stream_max_hz") != 0)
            continue;
        for (size_t k = 0; k < p->nvalues; k++)
            if (p->values[k] > s->cfg.stream_max_hz)
                return rs_fail(st, RS_ERANGE,
                               "world parameter 'stream_max_hz' = %g is above this server's "
                               "--stream-max-hz %g; ask for at most %g (0: the server's rate)",
                               p->values[k], s->cfg.stream_max_hz, s->cfg.stream_max_hz);
    }
    return 0;
}

/* World w's next frame into *b, built in arena a (its bytes too): `state`, or (NULL) the
 * world's state; none when nobody watches and no history is kept. `wall`: the wall-clock time
 * it carries. Touches world w only. */
static void build_frame(rs_server_t *s, world_slot_t *w, Robosim__V1__State *state, rs_arena_t *a,
                        double wall, rs_stream_built_t *b)
{
    if (!watched(s, w) && s->cfg.history_frames <= 0)
        return;
    if (!state && !(state = rs_codec_state(a, w->id, w->world))) {
        b->failed = 1; /* out of memory: the next state goes out as usual */
        return;
    }
    state->seq = w->stream.seq + 1; /* as rs_stream_offer_built numbers it */
    Robosim__V1__StreamFrame f = ROBOSIM__V1__STREAM_FRAME__INIT;
    f.world_id = w->id;
    f.seq = state->seq;
    f.state = state;
    f.wall_time = wall;
    b->len = robosim__v1__stream_frame__get_packed_size(&f);
    if (!(b->frame = rs_arena_alloc(a, b->len ? b->len : 1))) {
        b->failed = 1;
        return;
    }
    robosim__v1__stream_frame__pack(&f, b->frame);
}

/* Publish w's state as its next frame at `now`: `state`, or (NULL) the world's state built
 * here, and only if anyone watches (or history keeps it). */
static void publish(rs_server_t *s, world_slot_t *w, Robosim__V1__State *state, double now)
{
    rs_stream_built_t b = {.due = 1, .now = now};
    if (state)
        state->seq = w->stream.seq + 1; /* the caller's reply carries it, watched or not */
    poll_subscriptions_once(s);
    build_frame(s, w, state, &s->arena, rs_wall_clock(), &b);
    rs_stream_offer_built(s, w, &b);
}

void rs_stream_prepare(rs_server_t *s)
{
    if (s->stream.xpub)
        poll_subscriptions_once(s);
}

void rs_stream_build(rs_server_t *s, world_slot_t *w, rs_arena_t *a, const rs_stream_clock_t *at,
                     rs_stream_built_t *b)
{
    *b = (rs_stream_built_t){0};
    if (!s->stream.xpub)
        return;
    b->now = at ? at->now : rs_monotonic();
    if (w->stream.seq != 0 && b->now < w->stream.last + min_interval(s, w))
        return; /* held back: the loop marks it pending */
    b->due = 1;
    build_frame(s, w, NULL, a, at ? at->wall : rs_wall_clock(), b);
}

void rs_stream_offer_built(rs_server_t *s, world_slot_t *w, rs_stream_built_t *b)
{
    if (!s->stream.xpub)
        return;
    if (!b->due) {
        w->stream.pending = 1;
        double due = w->stream.last + min_interval(s, w);
        if (due < s->stream.next_due)
            s->stream.next_due = due;
        return;
    }
    w->stream.seq++;
    w->stream.last = b->now;
    w->stream.pending = 0;
    if (b->failed)
        s->stream.frames_dropped++;
    if (!b->frame)
        return; /* nobody watches, no history kept (or out of memory, counted) */
    if (s->cfg.history_frames > 0)
        rs_history_push(s, w, w->stream.seq, b->frame, b->len, b->now);
    const uint8_t *frame = b->frame;
    b->frame = NULL; /* the arena's */
    if (!watched(s, w))
        return;
    zmq_msg_t body;
    if (zmq_msg_init_size(&body, b->len) != 0) {
        s->stream.frames_dropped++;
        return;
    }
    memcpy(zmq_msg_data(&body), frame, b->len);
    char t[48];
    int tl = topic(t, sizeof t, w->id);
    /* PUB never blocks: a subscriber at its high-water mark simply misses the frame */
    if (zmq_send(s->stream.xpub, t, (size_t)tl, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_msg_send(&body, s->stream.xpub, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&body);
        s->stream.frames_dropped++;
        return;
    }
    s->stream.frames_sent++;
}

void rs_stream_built_free(rs_stream_built_t *b)
{
    b->frame = NULL; /* its bytes are its arena's */
}

void rs_stream_offer(rs_server_t *s, world_slot_t *w, Robosim__V1__State *state)
{
    if (state)
        state->seq = w->stream.seq;
    if (!s->stream.xpub)
        return;
    double now = rs_monotonic(), due = w->stream.last + min_interval(s, w);
    if (w->stream.seq == 0 || now >= due) {
        publish(s, w, state, now);
        return;
    }
    w->stream.pending = 1;
    if (due < s->stream.next_due)
        s->stream.next_due = due;
}

typedef struct flush_run {
    rs_server_t *s;
    rs_stream_clock_t at;     /* the clocks, read once for every frame of the flush */
    int *due;                 /* the worlds whose held-back state is due */
    rs_stream_built_t *built; /* their frames */
} flush_run_t;

static void flush_build(void *ctx, size_t j, int worker)
{
    flush_run_t *run = ctx;
    rs_stream_build(run->s, &run->s->worlds[run->due[j]], rs_pool_arena(run->s->pool, worker),
                    &run->at, &run->built[j]);
}

int rs_stream_flush(rs_server_t *s)
{
    if (!s->stream.xpub || s->stream.next_due == INFINITY)
        return -1;
    double now = rs_monotonic();
    if (now < s->stream.next_due)
        return (int)ceil((s->stream.next_due - now) * 1000.0);
    poll_subscriptions(s); /* between requests: whoever subscribed since */
    s->stream.subs_read_at = s->requests;
    /* the worlds due now, in one scan: their frames built on the workers (many after a batch),
     * published here in the worlds' order; out of memory for the list, each published as the
     * scan finds it */
    rs_arena_reset(&s->arena);
    size_t n = 0;
    int *due = rs_arena_alloc(&s->arena, (size_t)s->nworlds * sizeof *due + 1);
    double next = INFINITY; /* the earliest of the states held back further */
    for (int i = 0; i < s->nworlds; i++) {
        world_slot_t *w = &s->worlds[i];
        if (!w->stream.pending)
            continue;
        double at = w->stream.last + min_interval(s, w);
        if (now < at) {
            next = fmin(next, at);
        } else if (due) {
            due[n++] = i;
        } else {
            rs_arena_reset(&s->arena);
            publish(s, w, NULL, now);
        }
    }
    flush_run_t run = {s, {now, rs_wall_clock()}, due, NULL};
    if (n > 1 && (run.built = rs_arena_alloc(&s->arena, n * sizeof *run.built))) {
        rs_pool_run(s->pool, n, flush_build, &run);
        for (size_t j = 0; j < n; j++) {
            if (j + 16 < n)
                rs_history_prefetch(&s->worlds[due[j + 16]], 0);
            if (j + 8 < n)
                rs_history_prefetch(&s->worlds[due[j + 8]], 1);
            if (j + 4 < n)
                rs_history_prefetch(&s->worlds[due[j + 4]], 2);
            rs_stream_offer_built(s, &s->worlds[due[j]], &run.built[j]);
        }
    } else {
        for (size_t j = 0; j < n; j++) /* one, or no memory to build them apart */
            publish(s, &s->worlds[due[j]], NULL, now);
    }
    s->stream.next_due = next;
    return next == INFINITY ? -1 : (int)ceil((next - now) * 1000.0);
}
