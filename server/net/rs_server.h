/* The robosim server: a ZeroMQ ROUTER socket, a single-threaded poll loop, a dispatch table
 * from request type to handler, and the worlds it owns; with cfg.shards > 1, that many such
 * loops on their own threads, each with its own listening socket and worlds (shards.c). */
#ifndef RS_SERVER_H
#define RS_SERVER_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "rs_core.h"

#define RS_PROTOCOL_MAJOR 1
#define RS_PROTOCOL_MINOR 3 /* 1.1: StepBatch.arrays; 1.2: oneofs, Step.parts, SI, base_pose;
                              1.3: HelloReply.routes */

/* The configuration's fields, one line each: type, name, default (rs_server_config_defaults),
 * what it is. The struct and its defaults are made from this list; robosim-server's flags
 * (server/main.c's RS_SERVER_FLAGS) set them. */
#define RS_SERVER_CONFIG(X)                                                                      \
    X(const char *, bind, "tcp://127.0.0.1:5555") /* ROUTER endpoint */                         \
    X(int, max_worlds, 256)                 /* CreateWorld beyond this is RESOURCE_EXHAUSTED */  \
    X(size_t, max_message_size, 4u << 20)   /* larger requests get RESOURCE_EXHAUSTED */         \
    X(uint64_t, max_steps_per_request, 1000000) /* control steps one Step may ask for */         \
    X(const char *, default_preset, "workshop") /* world created at start-up (id 1), or NULL */  \
    X(double, lease_seconds, 30.0) /* a controller silent this long can be replaced (Claim) */   \
    /* world 1's token (32 hex digits), or NULL: a random one, logged, with the lease already    \
     * lapsed (claimable) */                                                                     \
    X(const char *, controller_token, NULL)                                                      \
    X(int, max_batch, 4096) /* StepBatch items at most (more: RESOURCE_EXHAUSTED) */             \
    /* workers stepping a batch (the loop's thread included); 0: auto (rs_server_config_resolve) */ \
    X(int, threads, 0)                                                                           \
    X(const char *, stream_endpoint, "tcp://127.0.0.1:5556") /* observer stream PUB endpoint, or \
                                                                NULL for none */                 \
    X(int, stream_explicit, 0) /* the endpoint was asked for: failing to bind it is fatal */     \
    X(double, stream_max_hz, 60.0) /* states per second a world publishes at most (default) */   \
    /* frames of stream history a world keeps for GetHistory at most (0: none): a minute at the  \
     * default 60 states per second ... */                                                       \
    X(int, history_frames, 3600)                                                                 \
    X(double, history_seconds, 60.0) /* ... and how long, s of wall-clock time (0: no limit) */  \
    /* bytes one world's history holds at most (frames and ring); past it its oldest frames go */ \
    X(size_t, history_bytes_per_world, (size_t)4 << 20)                                          \
    /* bytes all worlds' histories hold at most; past it the largest history's oldest frames go */ \
    X(size_t, history_bytes, (size_t)256 << 20)                                                  \
    /* key that authenticates snapshots (32 bytes or 64 hex digits, mode 600), shared by servers \
     * that restore each other's snapshots; NULL: a random key per process */                   \
    X(const char *, snapshot_key_file, NULL)                                                     \
    X(int, snapshot_key_set, 0) /* snapshot_key (below) is the key (tests, fuzzers) */           \
    /* the server's CURVE secret key (40 Z85 characters), or NULL: plaintext. With it both       \
     * sockets run CURVE, admitting the client keys authorized_keys lists, each with its role    \
     * (curve.c); set both or neither */                                                         \
    X(const char *, curve_secret_key, NULL)                                                      \
    X(const char *, authorized_keys, NULL)                                                       \
    X(int, insecure, 0) /* serve a non-loopback endpoint without CURVE anyway */                 \
    /* compute budget of one request: past it a Step stops at a control-step boundary with     \
     * DEADLINE_EXCEEDED */                                                                      \
    X(double, max_request_seconds, 5.0)                                                          \
    X(double, slice_seconds, 0.005) /* a long Step runs in slices this long, others between */   \
    /* after serving, a loop polls its socket without sleeping up to this long for the next     \
     * request, while its requests lately came back within it (0: never; --spin-us) */           \
    X(double, spin_seconds, 200e-6)                                                              \
    /* worlds one client (rs_caller_t.key) may create, fork or claim (0: no limit) ... */        \
    X(int, max_worlds_per_client, 64)                                                            \
    /* ... and at most this share of max_worlds (0 < x <= 1), so one key never takes the whole   \
     * server */                                                                                 \
    X(double, max_worlds_share, 0.5)                                                             \
    /* requests of one client held unanswered at a time (parked or waiting); more get           \
     * RESOURCE_EXHAUSTED */                                                                     \
    X(int, max_inflight_per_client, 4)                                                           \
    /* tasks one client (rs_caller_t.key) may declare (RegisterTask, CreateWorld.task_document)  \
     * and hold, at most max_worlds_share of the process's registry */                           \
    X(int, max_tasks_per_client, 8)                                                              \
    /* replies a connection has not taken, bytes, past which its requests are refused unrun     \
     * (RESOURCE_EXHAUSTED) */                                                                   \
    X(size_t, max_queued_bytes_per_peer, (size_t)64 << 20)                                       \
    /* a world whose controller sent nothing for this long is destroyed (0: never) */            \
    X(double, world_ttl, 3600.0)                                                                 \
    /* --state-dir: worlds checkpointed and restored there, or NULL for none */                  \
    X(const char *, state_dir, NULL)                                                             \
    X(double, checkpoint_interval, 10.0) /* seconds between checkpoints into state_dir */        \
    /* request loops, each on its core with its own worlds, behind one socket (1: the loop      \
     * serves the socket; 0: auto, rs_server_config_resolve) */                                  \
    X(int, shards, 0)                                                                            \
    /* with shards > 1, each shard's own port as well (clients send a world's requests straight \
     * to its shard): 0 a free port each, B > 0 ports B, B+1, ..., -1 none */                    \
    X(int, shard_ports, 0)

typedef struct rs_server_config {
#define RS_CONFIG_FIELD(type, name, dflt) type name;
    RS_SERVER_CONFIG(RS_CONFIG_FIELD)
#undef RS_CONFIG_FIELD
    unsigned char snapshot_key[32]; /* the snapshot key itself, used when snapshot_key_set */
} rs_server_config_t;

/* The CPUs this process may run on (its affinity mask: a container's or taskset's share;
 * at least 1). */
int rs_cpus_online(void);

#define RS_MAX_SHARDS 255

/* Fill in what the configuration leaves to the server (rs_server_new does): shards 0 (auto)
 * becomes one per CPU when the server binds tcp:// (a front spreads connections over
 * shards only on TCP), else 1; threads 0 (auto) becomes the CPUs, for each shard: a
 * connection's worlds all live on the shard it was placed on, so one client's StepBatch runs on
 * one shard's pool, and only a pool as wide as the machine lets it use every core (the pools
 * take items in small chunks as they go, so shards busy at once share the cores without one
 * waiting on another's straggler). */
void rs_server_config_resolve(rs_server_config_t *cfg);

/* The defaults every flag starts from. */
void rs_server_config_defaults(rs_server_config_t *cfg);

typedef struct rs_server rs_server_t;

/* Create the server: bind the socket, create the default world. NULL on failure (reason in
 * st). Free with rs_server_destroy. A non-loopback endpoint (rs_endpoint_is_loopback) without
 * curve_secret_key is refused (FAILED_PRECONDITION, saying how to make keys) unless insecure. */
rs_server_t *rs_server_new(const rs_server_config_t *cfg, rs_status_t *st);

/* The flag rs_server_run stops at. Its threads (the loop, the workers, the watchdog, the
 * shards) all read it, so it is an atomic, not a volatile sig_atomic_t (which is safe between a
 * signal handler and its own thread only); a lock-free atomic may be set from a signal handler
 * (atomic_store). */
typedef atomic_int rs_stop_flag_t;

/* Serve until *stop becomes non-zero (set it from a signal handler, with atomic_store). Returns
 * 0 on a clean stop, a negative code if the socket failed. */
int rs_server_run(rs_server_t *s, rs_stop_flag_t *stop);

/* Write every world changed since its last checkpoint (snapshot, tokens, lease) to the state
 * dir, and remove destroyed worlds' files; each file atomically (temp file, fsync, rename,
 * directory fsync). 0 (also without a state dir), or RS_EUNAVAIL / RS_EEXHAUSTED when a world
 * could not be written (the others are; reason in st and the log). Run by the loop every
 * cfg.checkpoint_interval; call it once more after rs_server_run returns. */
int rs_server_checkpoint(rs_server_t *s, rs_status_t *st);

/* Close sockets, destroy worlds, free `*s` (NULL-safe), set it to NULL. After rs_server_run
 * returns every world is at a control-step boundary and no request is in flight: the place to
 * checkpoint worlds (--state-dir) is between the two calls. */
void rs_server_destroy(rs_server_t **s);

/* Whether a ZeroMQ endpoint is reachable from this machine only: tcp:// on 127.x.x.x,
 * localhost or [::1], and every ipc:// and inproc:// endpoint. */
int rs_endpoint_is_loopback(const char *endpoint);

/* Who sent a request, as the transport knows it: its connection, the key its worlds are
 * counted under, and the role the ZAP handler gave the client's CURVE key. */
typedef struct rs_caller {
    char id[80];       /* "curve:<Z85 public key>" when the socket runs CURVE, else
                          "conn:<hex ZeroMQ routing id>"; "" for an in-process caller
                          (--max-inflight-per-client counts under it) */
    char key[80];      /* the world quota's key, something a client cannot multiply for free:
                          its CURVE key ("curve:..."), else its address: "ip:<IPv4>",
                          "ip:<IPv6 /64 prefix>::/64", "ip:loopback" for every loopback address,
                          "uid:<n>" over ipc://; the connection's id when the transport gives no
                          address (inproc); "" in-process */
    int observer_only; /* the client's key is listed as an observer: it may read and watch but
                          not create, fork, claim or change a world */
} rs_caller_t;

/* Handle one serialized Request and produce the serialized Response in a buffer owned by the
 * server (valid until the next call). Never fails: errors become Error responses. This is the
 * whole protocol without the transport, for the loop and for tests. The caller is in-process:
 * no quota key, every role. */
void rs_server_handle(rs_server_t *s, const uint8_t *req, size_t len, const uint8_t **out,
                      size_t *outlen);

/* rs_server_handle for a request from `caller` (NULL: in-process). */
void rs_server_handle_from(rs_server_t *s, const rs_caller_t *caller, const uint8_t *req,
                           size_t len, const uint8_t **out, size_t *outlen);

#endif
