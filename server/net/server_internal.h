/* The server's state, shared by its modules: the loop (loop.c), the request path (dispatch.c),
 * the handlers (handlers.h), the world table (worlds.h) and the rest. */
#ifndef RS_SERVER_INTERNAL_H
#define RS_SERVER_INTERNAL_H

#include <stdatomic.h>

#include "arena.h"
#include "history.h"
#include "persist.h"
#include "pool.h"
#include "robosim/v1/robosim.pb-c.h"
#include "rs_server.h"
#include "sendq.h"
#include "world_sched.h"
#include "stream.h"
#include "shard_group.h"

#include <zmq.h>

#define RS_TOKEN_LEN 32 /* hex digits of a controller token (128 random bits) */
#define RS_SNAPSHOT_KEY_BYTES 32 /* snapshot MAC key (snapmac.c) */
#define RS_SNAPSHOT_MAC_BYTES 32 /* the MAC a snapshot on the wire ends with */

/* The server's record of a world: the core world plus its id, controller and lease, and each
 * module's state of it in that module's sub-struct (stream.h, world_sched.h, persist.h;
 * history.h's opaque history). worlds.c adds and removes them. */
typedef struct world_slot {
    uint64_t id;
    rs_world_t *world;
    char token[RS_TOKEN_LEN + 1];      /* the controller's token */
    char prev_token[RS_TOKEN_LEN + 1]; /* the token a Claim replaced ("" if none): refused as
                                          expired rather than wrong */
    double lease_until;                /* rs_monotonic() time the controller's lease lapses */
    rs_stream_slot_t stream;           /* the observer stream's (stream.c) */
    rs_history_t *history;             /* the frames it published lately (history.c), or NULL */
    uint64_t batch_mark;               /* the StepBatch that last named this world ... */
    size_t batch_item;                 /* ... as its item number (handlers_batch.c) */
    rs_sched_slot_t sched;             /* scheduling: slices, rollback, --world-ttl */
    char owner[sizeof(((rs_caller_t *)0)->key)]; /* the quota key (rs_caller_t.key) of the
                                          client that created, forked or claimed it ("" for
                                          none); kept in its checkpoint (worlds.c counts it) */
    rs_persist_slot_t ckpt;            /* --state-dir's checkpoint of it (persist.c) */
} world_slot_t;

typedef struct rs_curve rs_curve_t;
typedef struct rs_watchdog rs_watchdog_t;
typedef struct rs_stepper rs_stepper_t;
typedef struct rs_sched rs_sched_t;
typedef struct rs_spin rs_spin_t;
/* One StepBatch item's (or BatchArrays world's) progress across slices. */
typedef struct rs_item_progress {
    uint64_t asked, done; /* control steps asked (known once begun) and done */
    int phase;            /* RS_ITEM_NEW, _RUNNING (begun, not over), _DONE, _FAILED */
    int code;             /* _FAILED: its error code ... */
    char *message;        /* ... and message (malloc'd; NULL when out of memory) */
} rs_item_progress_t;

enum { RS_ITEM_NEW, RS_ITEM_RUNNING, RS_ITEM_DONE, RS_ITEM_FAILED };

/* The progress of a request the loop runs in slices: a Step or StepBatch not done within one
 * slice is parked (the loop keeps its frames and this) and resumed between other requests. */
typedef struct rs_cont {
    int can_park;      /* the caller can hold the request between slices (the loop); else the
                          handler runs it to its end or its budget */
    int resuming;      /* 0 on the request's first slice */
    int park;          /* set by the handler: not finished, resume it later */
    double used;       /* compute seconds spent on it so far (budget: --max-request-seconds) */
    uint64_t asked, done; /* a Step: control steps asked and done */
    rs_item_progress_t *items; /* a StepBatch: per item (malloc'd, nitems) */
    size_t nitems;
    uint64_t *held;    /* the worlds it holds while parked (malloc'd, nheld) */
    size_t nheld;
    /* work handed to the stepper thread (stepper.c): run there with the stepper's abort flag,
     * then the request is resumed on the loop, which takes the result */
    void (*off_run)(rs_server_t *s, struct rs_cont *c); /* runs on the stepper */
    void (*off_free)(void *job);                         /* frees off_job (NULL-safe) */
    void *off_job;
    int off_done;      /* the stepper has run it */
} rs_cont_t;

/* Free what a request's progress holds (items, their messages, held ids); zero it
 * (dispatch.c). */
void rs_cont_release(rs_cont_t *c);

/* A handler's return value for "parked, no reply yet" (only when cont.can_park). */
#define RS_PARKED 1

/* A handler hands work to the stepper thread by setting c->off_run, off_job, off_free, the
 * worlds it holds (c->held) and c->park, and returning RS_PARKED (the loop only); it is called
 * again, resuming, once the stepper has run it, and takes the result from c->off_job. */

/* A world's data kept for reuse, with the model it was made for (retained). */
typedef struct rs_spare {
    const rs_model_t *model;
    rs_data_t *data;
} rs_spare_t;

/* A server: the single server, a shard of a front, or a front (front.c). Its fields grouped by
 * the module that owns them; the others read them. */
struct rs_server {
    rs_server_config_t cfg;
    /* the transport (loop.c): the context, the request socket, the replies */
    void *zctx;
    void *router;
    int shared_zctx;           /* a shard: the context is the front's (not terminated here) */
    rs_curve_t *curve;         /* CURVE keys and the ZAP handler (curve.c), or NULL: plaintext */
    struct rs_sendq *sendq;    /* the replies each peer of the router has not taken (sendq.c) */
    uint64_t backlog_refused;  /* requests refused unrun: their peer's replies past
                                  cfg.max_queued_bytes_per_peer */
    uint64_t backlog_dropped;  /* replies dropped for a short error, their client's past it (a
                                  shard: requests passed on before it was seen) */
    double backlog_logged_at;  /* rs_clock() when such a refusal was last logged */
    /* the worlds (worlds.c) */
    world_slot_t *worlds;      /* cfg.max_worlds slots, the first nworlds used, sorted by id */
    int nworlds;
    uint64_t next_world_id;
    double next_expiry_check;  /* --world-ttl: when idle worlds are next looked for (loop.c) */
    /* the request path (dispatch.c, the handlers) */
    rs_arena_t arena;          /* the reply being built */
    uint8_t *out;              /* packed reply */
    size_t out_cap;
    uint64_t requests, errors;
    const rs_caller_t *caller; /* the request being handled: who sent it (never NULL inside
                                  a handler; an in-process caller has id "") */
    rs_cont_t *cont;           /* the request's progress (never NULL inside a handler) */
    double request_time;       /* rs_clock() when the request being handled began: leases
                                  and --world-ttl count from it (one clock read a request, not
                                  one per world of a batch) */
    uint64_t batches;          /* StepBatch requests seen, for world_slot_t.batch_mark */
    rs_spare_t *spare;         /* data the batches moved to the stepper used, kept for the next
                                  (handlers_batch.c; the loop's thread only) */
    size_t nspare, spare_cap;
    rs_pool_t *pool;           /* StepBatch workers, each with its arena for the States it builds
                                  (helpers from `crew`) */
    rs_crew_t *crew;           /* the helper threads of the loops' pools (a front's, shared by
                                  its shards; else own_crew) */
    rs_crew_t *off_crew;       /* ... of the steppers' pools, niced as the stepper is */
    rs_crew_t *own_crew, *own_off_crew; /* made by this loop (not a shard's): freed with it */
    unsigned char snapshot_key[RS_SNAPSHOT_KEY_BYTES]; /* snapmac.c */
    /* the compute budget: deadlines the handlers arm, flags the watchdog sets at them and on
     * stop (every world's abort flag is `abort`: rs_data_set_abort) */
    atomic_int abort;          /* the loop's request's ... */
    _Atomic double abort_at;   /* ... at rs_clock() time (INFINITY: none) */
    atomic_int off_abort;      /* the same for the work the stepper runs ... */
    _Atomic double off_abort_at; /* ... and its deadline */
    rs_stop_flag_t *_Atomic stop; /* rs_server_run's stop flag (NULL outside it; atomic: the
                                  watchdog reads it) */
    /* the loop's helpers, each with its own private state */
    rs_watchdog_t *watchdog;   /* deadlines, stop and the loop's wake-up (watchdog.c) */
    rs_stepper_t *stepper;     /* long control steps and MonteCarlo off the loop (stepper.c) */
    rs_pool_t *off_pool;       /* the stepper's workers for MonteCarlo runs (made on its
                                  thread on off_crew, freed with it; NULL: none) */
    rs_sched_t *sched;         /* requests parked, offloaded or waiting (scheduler.c) */
    rs_spin_t *spin;           /* the wait's polling (spin.c) */
    int draining;              /* stopping: requests still arriving are refused, not run, and
                                  a shard passes none on (loop.c's drain) */
    /* the observer stream (stream.c) and its history (history.c) */
    rs_stream_t stream;
    char stream_endpoint[256]; /* ... as bound ("" when off) */
    double stream_idle_at;     /* rs_clock() when rs_stream_idle is next due */
    rs_histories_t histories;  /* every world's history, counted together */
    /* --state-dir (persist.c) */
    struct rs_persist *persist; /* or NULL */
    /* --shards: a front holds its shards (front.c); a shard, its place among them (shards.c) */
    struct rs_front *shards;   /* the front: its shards (NULL: this server serves itself) */
    rs_server_t *front;        /* a shard: its front */
    int shard_index;           /* a shard: its place among the front's shards */
    rs_shard_group_t *group;   /* a shard: what the front's shards share */
    struct rs_census *census;  /* a shard: the world counts all shards share (NULL: one
                                  server, its own table counts) */
    struct rs_peers *peers;    /* a shard: its sockets to and from the other shards */
    const uint32_t *shard_ports; /* a shard: every shard's own port, for Hello (the front's) */
    size_t nshard_ports;       /* ... how many (0: none, --shard-ports off) */
};

/* A request handler: fills `rp` (its result) or returns a negative code with the reason in
 * st. `w` is the target world for rows that need one, else NULL. */
typedef int (*rs_handler_fn)(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                             Robosim__V1__Response *rp, rs_status_t *st);

/* What one request of an op may cost the loop's thread (its row's envelope):
 *   RS_COST_BOUNDED     its work is bounded by its size limits alone: well under the loop's
 *                       fuse (FUSE_SECONDS), whatever the input;
 *   RS_COST_SLICED      it runs under the compute budget (--max-request-seconds) in slices
 *                       between other requests, or on the stepper thread once a slice outlasts
 *                       the fuse; a stop interrupts it;
 *   RS_COST_BACKGROUND  its work runs on the stepper thread under the compute budget; a stop
 *                       interrupts it. */
typedef enum rs_cost { RS_COST_BOUNDED, RS_COST_SLICED, RS_COST_BACKGROUND } rs_cost_t;

typedef struct rs_op {
    Robosim__V1__Request__OpCase op;
    const char *name;   /* as in capabilities and logs */
    rs_handler_fn fn;
    int needs_world;    /* the request's world_id must name an existing world */
    int mutates;        /* changes a world: with needs_world, Request.token must be the world's
                           controller token (auth.c) */
    int creates;        /* makes a world or a controller (create, fork, claim): refused to
                           observer-only clients, counted by per-client quotas */
    int computes;       /* spends compute time on the server (MonteCarlo): refused to
                           observer-only clients */
    int not_on_task;    /* sets what a task world's evaluation fixes (commands, schedules,
                           targets, parameters): refused on task worlds */
    rs_cost_t cost;     /* what one request may cost the loop (above) */
    size_t max_bytes;   /* the largest request of this op, or 0: --max-message-size */
    Robosim__V1__Route route; /* how a server of several shards routes it (shards.c's
                           rs_route_of; published in HelloReply.routes) */
} rs_op_t;

/* The policy of op's row for a request naming world w (NULL for rows without one) with
 * `token`, from the caller s->caller: observer-only clients, the controller token (renewing
 * the lease), task worlds. 0, or the negative code with the reason in st. */
int rs_op_allowed(rs_server_t *s, const rs_op_t *op, world_slot_t *w, const char *token,
                  rs_status_t *st);

/* The dispatch table row for a request type, or NULL. */
const rs_op_t *rs_op_find(Robosim__V1__Request__OpCase op);

/* All rows, for Hello's capabilities. */
const rs_op_t *rs_ops(size_t *n);

/* An Error reply (request `id`, code, message) packed into s->out: *out and *outlen point at
 * it until the next reply (dispatch.c; the loop refuses requests it does not run with it). */
void rs_error_reply(rs_server_t *s, uint64_t id, int code, const char *message,
                    const uint8_t **out, size_t *outlen);

/* Send a reply (out, outlen) to the sender of request frames[0..n-1] on sock (the frames
 * consumed), its bytes counted against that peer until its connection takes them (sendq.c). */
void rs_send_reply(rs_server_t *s, void *sock, zmq_msg_t *frames, int n, const uint8_t *out,
                   size_t outlen);

/* A client's request (frames[0..n-1], its routing id first) that arrived while the replies
 * its connection has not taken are past cfg.max_queued_bytes_per_peer: refused unrun with a
 * short RESOURCE_EXHAUSTED (the frames consumed), counted in s->backlog_refused; returns 1.
 * Else 0 and the frames untouched (sendq.c). */
int rs_refuse_backlogged(rs_server_t *s, void *sock, zmq_msg_t *frames, int n);

/* Whether the server is stopping (SIGTERM while rs_server_run runs). */
static inline int rs_server_stopping(const rs_server_t *s)
{
    rs_stop_flag_t *stop = s->stop;
    return stop && atomic_load_explicit(stop, memory_order_relaxed);
}

#include "shards.h"
#include "spin.h"

/* Who sent a request (auth.c): from its routing frame and its payload's metadata. */
void rs_caller_of(zmq_msg_t *routing, zmq_msg_t *payload, rs_caller_t *c);

/* ---- auth.c: controller tokens and leases ---- */

/* Seconds on a monotonic clock. */
double rs_monotonic(void);

/* Unix time, s (wall clock: for people and recordings, never for intervals). */
double rs_wall_clock(void);

/* A fresh random token (RS_TOKEN_LEN hex digits and a NUL). 0 or RS_EINTERNAL. */
int rs_token_generate(char out[RS_TOKEN_LEN + 1], rs_status_t *st);

/* Make the caller w's controller: a new token (the old one is kept as prev_token, refused as
 * expired), the lease running from now. 0 or RS_EINTERNAL. */
int rs_auth_grant(rs_server_t *s, world_slot_t *w, rs_status_t *st);

/* Whether `token` is w's controller token: 0 (and the lease renewed), else RS_EPERM with a
 * message naming the world and saying whether the token is missing, wrong or expired. */
int rs_auth_check(rs_server_t *s, world_slot_t *w, const char *token, const char *opname,
                  rs_status_t *st);

/* Seconds until w's lease lapses (negative: lapsed, the world can be claimed). */
double rs_lease_remaining(const rs_server_t *s, const world_slot_t *w);

/* ---- snapmac.c: snapshot authentication ---- */

/* The snapshot key: cfg.snapshot_key if set, else read from cfg.snapshot_key_file, else
 * random. 0, or RS_EPRECOND (a key file that cannot be used, and why). */
int rs_snapmac_init(rs_server_t *s, rs_status_t *st);

/* Append the MAC of buf's first len bytes at buf + len (RS_SNAPSHOT_MAC_BYTES more). */
void rs_snapmac_sign(const rs_server_t *s, uint8_t *buf, size_t len);

/* Check the MAC a snapshot of len bytes ends with: 0 and the core's bytes' length in
 * *core_len, or RS_EUNAUTH saying what to do. */
int rs_snapmac_verify(const rs_server_t *s, const uint8_t *buf, size_t len, size_t *core_len,
                      rs_status_t *st);
/* ---- curve.c: CurveZMQ and the ZAP handler ---- */

/* Check the configuration's endpoints and keys before anything is bound: both or neither of
 * curve_secret_key and authorized_keys (RS_EINVAL), and no non-loopback endpoint in plaintext
 * unless cfg->insecure (RS_EPRECOND, saying how to make keys). */
int rs_curve_check_bind(const rs_server_config_t *cfg, rs_status_t *st);

/* With cfg.curve_secret_key: read the allow-list and start the ZAP handler in s->zctx (call
 * before binding any socket). Without: nothing (a warning when --insecure serves the network).
 * 0 or a negative code. rs_curve_close undoes it after zmq_ctx_term. */
int rs_curve_open(rs_server_t *s, rs_status_t *st);

/* Make `sock` a CURVE server authenticated by the ZAP handler (before its bind); nothing
 * without CURVE. 0 or -1 (zmq_errno). */
int rs_curve_secure(rs_server_t *s, void *sock);

/* Join the ZAP handler (it ends when zmq_ctx_term runs), wipe the keys. NULL-safe. */
void rs_curve_close(rs_server_t *s);

/* ---- history.c: the observer stream's recent past, per world ---- */

/* Keep a copy of world w's published frame `seq` (serialized StreamFrame, len bytes,
 * published at rs_monotonic() time `now`) in the world's byte ring; the oldest go past
 * cfg.history_frames, history_seconds, and when the ring is full and may not grow: it grows
 * within history_bytes_per_world and history_bytes, taking bytes from the histories above
 * their share of history_bytes while it is below its own. A frame too large for a bound, or
 * out of memory, is not kept and GetHistory reports it dropped. */
void rs_history_push(rs_server_t *s, world_slot_t *w, uint64_t seq, const uint8_t *frame,
                     size_t len, double now);

/* Free a world's history (NULL-safe); clears *h. */
void rs_history_destroy(rs_history_t **h);

/* Start loading what pushing a frame into world w's history reads and writes: its record
 * (stage 0), then, some pushes later when that is in, the ring's oldest and newest slots (stage
 * 1), then the bytes the next frame will most likely be written to (stage 2). Pushes for many
 * worlds in a row (a batch's frames) otherwise wait on memory for each. */
void rs_history_prefetch(const world_slot_t *w, int stage);

/* Free what the server keeps of the histories (after every world's went). */
void rs_history_close(rs_server_t *s);

/* Bytes a world's history holds, what cfg.history_bytes_per_world bounds (its byte ring and
 * its slot ring); *frames and *ring (if not NULL): the frames it holds and the slot ring's
 * bytes. */
size_t rs_history_bytes(const world_slot_t *w, int *frames, size_t *ring);

/* Age out what world w's history holds past its bounds at `now` (rs_monotonic()); the frames
 * it holds then, oldest first, consecutive seqs. */
int rs_history_held(rs_server_t *s, world_slot_t *w, double now);

/* Frame i (0: the oldest; i < rs_history_held's count) of world w's history: its serialized
 * StreamFrame (owned by the history, valid until it next changes), len bytes, its seq. */
const uint8_t *rs_history_frame(const world_slot_t *w, int i, size_t *len, uint64_t *seq);

/* ---- stream.c: the observer stream ---- */

/* Bind the stream socket (cfg.stream_endpoint; nothing when NULL). 0, or RS_EPRECOND when it
 * cannot be bound and the endpoint was asked for explicitly; the default endpoint failing only
 * logs a warning and leaves the stream off. */
int rs_stream_open(rs_server_t *s, rs_status_t *st);

/* Close the stream socket and free the subscription list. */
void rs_stream_close(rs_server_t *s);

/* Offer world w's new `state` (after a Step, Reset, SetState) to the stream: published now
 * (state->seq set to the new sequence number) unless the world's rate limit holds it back,
 * in which case the world's state is published when the limit allows (rs_stream_flush).
 * `state` NULL (StepBatch.arrays builds none): the state is built in the server's arena only
 * when it is published and someone watches the world. */
void rs_stream_offer(rs_server_t *s, world_slot_t *w, Robosim__V1__State *state);

/* A batch's frames, built by the workers that step its worlds (rs_stream_build) and published
 * by the loop in the batch's order (rs_stream_offer_built): what rs_stream_offer(s, w, NULL)
 * does, with the work per world off the loop. */
typedef struct rs_stream_built {
    int due;        /* the rate limit let it out at `now` (else it is held back) */
    int failed;     /* out of memory building it: counted as dropped */
    double now;     /* rs_monotonic() when it was built */
    uint8_t *frame; /* the StreamFrame's bytes (in the arena it was built in), or NULL: nobody
                       watches, no history */
    size_t len;
} rs_stream_built_t;

/* On the loop, before a batch's workers run: read the subscriptions they will go by. */
void rs_stream_prepare(rs_server_t *s);

/* On a worker, once world w's Step in the batch is over: *b for it, its State and frame built
 * in arena a, at the times `at` (read once for a batch slice; NULL: read here). Reads the
 * server's stream settings, touches world w only. */
void rs_stream_build(rs_server_t *s, world_slot_t *w, rs_arena_t *a, const rs_stream_clock_t *at,
                     rs_stream_built_t *b);

/* On the loop, before the arena b->frame lies in is reset: publish *b (its frame copied to
 * history and subscribers) or, held back, mark w pending. */
void rs_stream_offer_built(rs_server_t *s, world_slot_t *w, rs_stream_built_t *b);

/* Let go of a frame built and never offered (its batch went on into another slice). */
void rs_stream_built_free(rs_stream_built_t *b);

/* Publish the held-back states that are due (uses s->arena: call between requests). Returns
 * the milliseconds until the next one is due, or -1 when none waits. */
int rs_stream_flush(rs_server_t *s);

/* Between requests, now and then: read the subscriptions that came, which also lets the
 * socket take in its subscribers' comings and goings; a subscriber gone while no frame is
 * published would otherwise keep the frames queued for it (and its connection's buffers). */
void rs_stream_idle(rs_server_t *s);

/* Refuse (RS_ERANGE, saying the most allowed) a world parameter stream_max_hz above the
 * server's --stream-max-hz among a CreateWorld's or SetParams' n params; 0 when none is. */
int rs_stream_check_params(const rs_server_t *s, const rs_param_t *params, size_t n,
                           rs_status_t *st);

/* ---- persist.c: --state-dir ---- */

/* Open cfg.state_dir (created 0700 if missing; locked against a second server) and restore the
 * worlds saved there, with their ids, tokens and leases; files that cannot be restored are
 * logged and renamed *.bad. With --shards the front opens, locks and scans the dir and keeps
 * the id record (server.state); each shard, opened after it, restores its share of the worlds
 * (every n-th by id) and checkpoints the worlds it holds. Returns 1 when the dir held a
 * server's state (then no default world is created), 0 when it was empty, or a negative code
 * (the dir cannot be used, or it holds more worlds than --max-worlds). */
int rs_persist_open(rs_server_t *s, rs_status_t *st);

/* A checkpoint when --checkpoint-interval has passed since the last one, built a part at a
 * time (call from the loop; failures are logged and retried at the next interval). Returns
 * the milliseconds until it has more to do, or -1 without a state dir. */
int rs_persist_tick(rs_server_t *s);

/* Release the state dir (its lock) and the buffers. NULL-safe on s->persist. */
void rs_persist_close(rs_server_t *s);

/* The id for a new world: s->next_world_id, recorded in the state dir first when it reaches
 * the ids reserved there, so no id is handed out twice across restarts. 0, or RS_EUNAVAIL when
 * the state dir cannot be written (no world may be created then). */
int rs_server_take_id(rs_server_t *s, uint64_t *id, rs_status_t *st);

/* A world file (persist.c's header comment gives the layout), parsed. */
typedef struct rs_persisted_world {
    uint64_t id;
    char token[RS_TOKEN_LEN + 1], prev_token[RS_TOKEN_LEN + 1];
    double lease_remaining; /* s left at the checkpoint (negative: lapsed) */
    char preset[32], task[32];
    char owner[80];          /* the quota key of the client holding it ("" for none) */
    const uint8_t *snapshot; /* the core snapshot, pointing into the parsed buffer */
    size_t snapshot_len;
} rs_persisted_world_t;

/* Parse and check (magic, version, checksum, lengths, token syntax) a world file's `len` bytes.
 * 0, or RS_EINVAL / RS_EPRECOND with the reason in st. The snapshot itself is checked by
 * rs_snapshot_read when it is restored. */
int rs_persist_parse_world(const uint8_t *buf, size_t len, rs_persisted_world_t *out,
                           rs_status_t *st);

#endif
