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

typedef struct rs_server_config {
    const char *bind;               /* ROUTER endpoint, e.g. tcp://127.0.0.1:5555 */
    int max_worlds;                 /* CreateWorld beyond this is RESOURCE_EXHAUSTED */
    size_t max_message_size;        /* larger requests get RESOURCE_EXHAUSTED */
    uint64_t max_steps_per_request; /* control steps one Step may ask for */
    const char *default_preset;     /* world created at start-up (id 1), or NULL */
    double lease_seconds;           /* a controller silent this long can be replaced (Claim) */
    const char *controller_token;   /* world 1's token (32 hex digits), or NULL: a random one,
                                       logged, with the lease already lapsed (claimable) */
    int max_batch;                  /* StepBatch items at most (more: RESOURCE_EXHAUSTED) */
    int threads;                    /* workers stepping a batch (the loop's thread included) */
    const char *stream_endpoint;    /* observer stream PUB endpoint, or NULL for none */
    int stream_explicit;            /* the endpoint was asked for: failing to bind it is fatal */
    double stream_max_hz;           /* states per second a world publishes at most (default) */
    int history_frames;             /* frames of stream history a world keeps for GetHistory
                                       at most (0: none) ... */
    double history_seconds;         /* ... and how long, s of wall-clock time (0: no limit) */
    size_t history_bytes_per_world; /* bytes one world's history holds at most (frames and
                                       ring); past it its oldest frames go */
    size_t history_bytes;           /* bytes all worlds' histories hold at most; past it the
                                       largest history's oldest frames go */
    const char *snapshot_key_file;  /* key that authenticates snapshots (32 bytes or 64 hex
                                       digits, mode 600), shared by servers that restore each
                                       other's snapshots; NULL: a random key per process */
    unsigned char snapshot_key[32]; /* the key itself, used when snapshot_key_set (tests,
                                       fuzzers: a fixed key) */
    int snapshot_key_set;
    const char *curve_secret_key;   /* the server's CURVE secret key (40 Z85 characters), or
                                       NULL: plaintext. With it both sockets run CURVE ... */
    const char *authorized_keys;    /* ... admitting the client keys this file lists, each with
                                       its role (curve.c); set both or neither */
    int insecure;                   /* serve a non-loopback endpoint without CURVE anyway */
    double max_request_seconds;     /* compute budget of one request: past it a Step stops at a
                                       control-step boundary with DEADLINE_EXCEEDED */
    double slice_seconds;           /* a long Step runs in slices this long, other requests
                                       served in between */
    double spin_seconds;            /* after serving, a loop polls its socket without sleeping
                                       up to this long for the next request, while its requests
                                       lately came back within it (0: never; --spin-us) */
    int max_worlds_per_client;      /* worlds one client (rs_caller_t.key) may create, fork or
                                       claim (0: no limit) ... */
    double max_worlds_share;        /* ... and at most this share of max_worlds (0 < x <= 1),
                                       so one key never takes the whole server */
    int max_tasks_per_client;       /* tasks one client (rs_caller_t.key) may declare
                                       (RegisterTask, CreateWorld.task_document) and hold, at
                                       most max_worlds_share of the process's registry */
    int max_inflight_per_client;    /* requests of one client held unanswered at a time (parked
                                       or waiting); more get RESOURCE_EXHAUSTED */
    double world_ttl;               /* a world whose controller sent nothing for this long is
                                       destroyed (0: never) */
    const char *state_dir;          /* --state-dir: worlds checkpointed and restored there, or
                                       NULL for none */
    double checkpoint_interval;     /* seconds between checkpoints into state_dir */
    int shards;                     /* request loops, each on its core with its own worlds,
                                       behind one socket (1: the loop serves the socket) */
    size_t max_queued_bytes_per_peer; /* replies a connection has not taken, bytes, past which
                                       its requests are refused unrun (RESOURCE_EXHAUSTED) */
    int shard_ports;                /* with shards > 1, each shard's own port as well (clients
                                       send a world's requests straight to its shard): 0 a free
                                       port each, B > 0 ports B, B+1, ..., -1 none */
} rs_server_config_t;

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
