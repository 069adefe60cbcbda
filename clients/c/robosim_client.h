/* robosim_client: the thin C client of the robosim server.
 *
 * One rsc_client_t is one ZeroMQ DEALER socket connected to a server's ROUTER socket. Every
 * call is a blocking request/reply with a per-call timeout (zmq_poll): nothing blocks forever.
 * Requests carry increasing ids; a reply whose id is not the one awaited (a late answer to an
 * earlier call that timed out) is discarded, so the client stays usable after a timeout.
 *
 * Every function returns 0 on success or a code:
 *   > 0  the server refused the request: a robosim.v1.ErrorCode (1 INVALID_ARGUMENT,
 *        2 NOT_FOUND, ..., 9 VERSION_MISMATCH, ...), with the server's message in err->message;
 *   < 0  a client-side failure, one of RSC_E* below, with a message saying what to do.
 * `err` may be NULL everywhere; when given it is always filled (code 0 and "" on success).
 *
 * Replies are protobuf-c messages owned by the caller: free them with rsc_free(). Output
 * pointers (`out`, `resp`) may be NULL when the caller does not want the reply.
 *
 * A client is not thread-safe: use one per thread. */
#ifndef ROBOSIM_CLIENT_H
#define ROBOSIM_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "robosim/v1/robosim.pb-c.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RSC_PROTOCOL_MAJOR 1
#define RSC_PROTOCOL_MINOR 3 /* 1.2: oneofs, Step.parts, SI units, EntitySpec.base_pose; 1.3:
                                HelloReply.routes */
#define RSC_DEFAULT_TIMEOUT_MS 5000 /* used when a timeout <= 0 is given */
#define RSC_TOKEN_MAX 64            /* a controller token, with its NUL, fits in this */

typedef struct rsc_client rsc_client_t;

/* Client-side failures (negative; the server's codes are positive). */
enum {
    RSC_ETIMEOUT = -1,     /* no reply within the call's timeout */
    RSC_EUNREACHABLE = -2, /* rsc_connect: nobody answered the Hello within the timeout */
    RSC_EVERSION = -3,     /* the server accepted Hello but speaks another protocol major */
    RSC_EPROTOCOL = -4,    /* the reply is not a valid Response, or not the one expected */
    RSC_ENOMEM = -5,       /* out of memory */
    RSC_EARG = -6          /* a bad argument to a client function (NULL client, bad endpoint) */
};

typedef struct rsc_error {
    int code;          /* 0 ok; > 0: the server's robosim.v1.ErrorCode; < 0: RSC_E* client-side */
    char message[512]; /* what went wrong, for a person to read; "" when code is 0 */
} rsc_error_t;

/* A parameter override: `entity` "" (or NULL) is the world itself. */
typedef struct rsc_param {
    const char *entity;
    const char *name;
    const double *values;
    size_t nvalues;
} rsc_param_t;

/* Actuator commands for one entity, one value per actuator in spec order. */
typedef struct rsc_command {
    const char *entity;
    const double *values;
    size_t nvalues;
} rsc_command_t;

/* ---- connection --------------------------------------------------------------------------- */

/* CurveZMQ. A server started with --curve-secret-file and --authorized-keys talks only to
 * clients that know its public key and hold a key pair it lists: the connection is encrypted
 * and authenticated, and everything else gets no reply at all (rsc_connect: RSC_EUNREACHABLE).
 * Keys are 32 bytes written as 40 Z85 characters. Key files are ZeroMQ certificates (the format
 * of CZMQ's zcert and pyzmq's zmq.auth), as robosim-cli keygen writes them:
 *
 *     PREFIX.key          public-key = "<40 Z85 characters>"          (give it away)
 *     PREFIX.key_secret   public-key = "..." and secret-key = "..."   (mode 0600, keep it)
 *
 * ('#' comments; other lines, e.g. zcert's "metadata" and "curve" sections, are ignored.) */
#define RSC_KEY_LEN 40 /* Z85 characters of a CURVE key */

/* How to connect. Zero-initialise (rsc_options_t o = {0}) for a plaintext connection with the
 * default timeout; fill the keys (rsc_options_set_curve reads them from the usual places) for
 * CURVE. server_key and the client's pair go together: all three or none. */
typedef struct rsc_options {
    int timeout_ms;                     /* per-call timeout; <= 0: RSC_DEFAULT_TIMEOUT_MS */
    char server_key[RSC_KEY_LEN + 1];   /* the server's public key (Z85), "" for plaintext */
    char public_key[RSC_KEY_LEN + 1];   /* this client's key pair (Z85) */
    char secret_key[RSC_KEY_LEN + 1];
    int one_connection;                 /* 1: every request on the one connection, even to a
                                           server of several shards that lists each shard's own
                                           port (HelloReply.shard_ports; by default requests for
                                           the worlds this client controls go straight there) */
} rsc_options_t;

/* Read a key file: its public key into `public_key` and, when `secret_key` is not NULL, its
 * secret key (the file must then hold one, and it must belong to the public key). 0, or
 * RSC_EARG with a message naming the file (missing, unreadable, no or malformed key). */
int rsc_load_certificate(const char *path, char public_key[RSC_KEY_LEN + 1],
                         char secret_key[RSC_KEY_LEN + 1], rsc_error_t *err);

/* Fill o's keys: `server_key` is the server's public key, either 40 Z85 characters or the path
 * of a file holding it (its .key file, or the server's log line copied into one); and
 * `client_key_file` this client's secret key file. Both NULL or "": plaintext (o's keys
 * cleared), 0. One without the other, or a file that cannot be read: RSC_EARG saying which.
 * `o` NULL: RSC_EARG. */
int rsc_options_set_curve(rsc_options_t *o, const char *server_key, const char *client_key_file,
                          rsc_error_t *err);

/* Make a ZeroMQ socket (before its connect) a CURVE client as `o` says; nothing when o is NULL
 * or has no server_key. For sockets of your own, e.g. a SUB on the observer stream. 0, or
 * RSC_EARG (bad keys, or a libzmq without CURVE). */
int rsc_apply_curve(void *zmq_socket, const rsc_options_t *o, rsc_error_t *err);

/* rsc_connect with options (NULL: as rsc_connect with the default timeout). */
rsc_client_t *rsc_connect_with(const char *endpoint, const rsc_options_t *o, rsc_error_t *err);

/* rsc_connect_raw with options (NULL: the defaults). */
rsc_client_t *rsc_connect_raw_with(const char *endpoint, const rsc_options_t *o,
                                   rsc_error_t *err);

/* Connect a DEALER socket to `endpoint` (e.g. "tcp://127.0.0.1:5555") and say Hello with
 * protocol major 1. `timeout_ms` (<= 0: RSC_DEFAULT_TIMEOUT_MS) bounds the Hello and becomes
 * the per-call timeout. Returns the client (free with rsc_close), or NULL with `err` filled:
 * RSC_EUNREACHABLE (no answer within the timeout; the message names endpoint and timeout),
 * 9 VERSION_MISMATCH (the server refused our major; its message), RSC_EVERSION (the server
 * answered with another major), RSC_EARG (malformed endpoint), or another server code. */
rsc_client_t *rsc_connect(const char *endpoint, int timeout_ms, rsc_error_t *err);

/* As rsc_connect, without the Hello (for tests that send their own). ZeroMQ connects in the
 * background, so this succeeds whether or not a server listens; NULL only on RSC_EARG or
 * RSC_ENOMEM. */
rsc_client_t *rsc_connect_raw(const char *endpoint, int timeout_ms, rsc_error_t *err);

/* Close the socket, free `*c` (NULL-safe: c or *c may be NULL) and set `*c` to NULL. Pending
 * requests are dropped (linger 0). */
void rsc_close(rsc_client_t **c);

/* Set the per-call timeout of later calls (<= 0: RSC_DEFAULT_TIMEOUT_MS). */
void rsc_set_timeout(rsc_client_t *c, int timeout_ms);

/* The shard serving a world this client controls (from the reply that made it or handed it
 * over), -1 when unknown: a server of one loop, or a world it does not control. With a server of
 * several shards the client sends that world's requests to the shard's own port. */
int rsc_world_shard(const rsc_client_t *c, uint64_t world_id);

/* The endpoint the client connected to; owned by the client, valid until rsc_close. */
const char *rsc_endpoint(const rsc_client_t *c);

/* ---- controller tokens ---------------------------------------------------------------------
 * The server gives a controller token to the client that creates, forks or claims a world;
 * requests that change the world must carry it. The client remembers the token of every world
 * it created, forked or claimed and sends it with every request on that world, so a program
 * that creates its worlds never sees tokens. A program that reconnects (a new process, a new
 * client) hands its saved token back with rsc_set_world_token. */

/* The token this client holds for world_id, or NULL. Owned by the client; valid until the
 * next call that changes the client's tokens. */
const char *rsc_world_token(rsc_client_t *c, uint64_t world_id);

/* Hold `token` for world_id from now on (NULL or "" forgets it). 0, RSC_EARG (NULL client or
 * a token of RSC_TOKEN_MAX characters or more) or RSC_ENOMEM. */
int rsc_set_world_token(rsc_client_t *c, uint64_t world_id, const char *token);

/* Take control of world_id when its controller's lease has lapsed: the new token is kept (and
 * in (*out)->token; the old one stops working). A world whose lease still runs gives
 * 3 FAILED_PRECONDITION saying how long; a client that holds the current token gets it back
 * with the lease renewed. The reply (the world and token) in *out. */
int rsc_claim(rsc_client_t *c, uint64_t world_id, Robosim__V1__CreateWorldReply **out,
              rsc_error_t *err);

/* ---- generic request/reply ---------------------------------------------------------------- */

/* Set req->id to the client's next id, send `req`, and wait up to the timeout for the Response
 * with that id (replies with other ids, e.g. late answers to an earlier timed-out call, are
 * discarded). Returns 0 with *resp set; or, when the Response is an Error, its code (> 0) with
 * err->message = the server's message and *resp still set; or RSC_ETIMEOUT / RSC_EPROTOCOL /
 * RSC_ENOMEM / RSC_EARG with *resp = NULL. The caller owns *resp: free it with rsc_free. A
 * Response with id 0 that is an Error (the server could not read our request) is taken as the
 * answer too. `resp` may be NULL. */
int rsc_call(rsc_client_t *c, Robosim__V1__Request *req, Robosim__V1__Response **resp,
             rsc_error_t *err);

/* Note: rsc_call sends `req` as given; it does not attach controller tokens (the per-operation
 * functions below do). */

/* Send `len` arbitrary bytes as one frame and wait up to the timeout for one Response (any id,
 * except late answers to this client's earlier timed-out calls). Returns as rsc_call: 0, the
 * code of an Error response (> 0, *resp set), or RSC_ETIMEOUT / RSC_EPROTOCOL / ... The caller
 * owns *resp (rsc_free). For tests that send garbage or hand-made requests. */
int rsc_send_raw(rsc_client_t *c, const void *bytes, size_t len, Robosim__V1__Response **resp,
                 rsc_error_t *err);

/* Free any unpacked protobuf-c message this library returned (NULL-safe). */
void rsc_free(void *protobuf_message);

/* The name of a code: "OK", the robosim.v1.ErrorCode name for > 0 ("INVALID_ARGUMENT"),
 * "TIMEOUT", "UNREACHABLE", "VERSION", "PROTOCOL", "NO_MEMORY", "BAD_ARGUMENT" for the RSC_E*
 * codes, "UNKNOWN" otherwise. A static string. */
const char *rsc_error_name(int code);

/* ---- any operation by name, from the protocol's descriptors -------------------------------
 * The operations are the fields of Request's `op` oneof; each reply is the Response field of
 * the same name. A new operation in the proto is callable here with no code of its own. */

/* Call operation `op` (its proto field name "get_state", with dashes "get-state", or its
 * message name "GetState") on world_id (0 for operations on no world), with the token this
 * client holds for it. `msg` is the operation's message (NULL: all its fields at their
 * defaults). Returns as the functions below: 0 with the reply's message in *out (caller frees
 * with rsc_free; an Ack for operations that return nothing), the server's code, or RSC_EARG
 * naming the operations when `op` is none of them, or when msg is another message type. A
 * CreateWorldReply's token is kept, as create, fork and claim keep theirs; a destroyed world's
 * token is forgotten. */
int rsc_call_op(rsc_client_t *c, uint64_t world_id, const char *op, const ProtobufCMessage *msg,
                ProtobufCMessage **out, rsc_error_t *err);

/* The operations: how many, the i-th (Request's field descriptor: name, number, message type
 * in ->descriptor), and the one `name` names (as rsc_call_op reads it), or NULL. */
size_t rsc_op_count(void);
const ProtobufCFieldDescriptor *rsc_op_at(size_t i);
const ProtobufCFieldDescriptor *rsc_op_find(const char *name);

/* ---- one function per operation -------------------------------------------------------------
 * Each returns 0, the server's code (> 0) or an RSC_E* code (< 0), with `err` filled. Replies
 * stored in `*out` are owned by the caller (rsc_free); *out is NULL on failure. */

/* Hello with the given protocol version. The server's reply in *out. A major the server does
 * not speak gives 9 VERSION_MISMATCH. */
int rsc_hello(rsc_client_t *c, uint32_t major, uint32_t minor, Robosim__V1__HelloReply **out,
              rsc_error_t *err);

/* The worlds the server holds, in *out. */
int rsc_list_worlds(rsc_client_t *c, Robosim__V1__ListWorldsReply **out, rsc_error_t *err);

/* Create a world from `preset` with `nparams` overrides, reset with `seed`; its id in
 * *world_id (may be NULL). The client keeps its controller token (rsc_world_token). */
int rsc_create_world(rsc_client_t *c, const char *preset, const rsc_param_t *params,
                     size_t nparams, uint64_t seed, uint64_t *world_id, rsc_error_t *err);

/* Create a world that runs `task` (e.g. "FingerPush-v0", HelloReply.tasks) as a Gym-style
 * episode started with `seed`; preset NULL or "" means the task's own. Drive it with actions
 * (rsc_step's action, rsc_batch_item_t.action, rsc_step_arrays' actions). */
int rsc_create_task_world(rsc_client_t *c, const char *task, const char *preset,
                          const rsc_param_t *params, size_t nparams, uint64_t seed,
                          uint64_t *world_id, rsc_error_t *err);

/* Destroy a world. */
int rsc_destroy_world(rsc_client_t *c, uint64_t world_id, rsc_error_t *err);

/* The world's spec (entities, variables, actuators, sensors, parameters) in *out. */
int rsc_get_spec(rsc_client_t *c, uint64_t world_id, Robosim__V1__Spec **out, rsc_error_t *err);

/* Reset the world: with `use_seed` reseeded with `seed`, else with its last seed. The state
 * after the reset in *out. */
int rsc_reset(rsc_client_t *c, uint64_t world_id, int use_seed, uint64_t seed,
              Robosim__V1__State **out, rsc_error_t *err);

/* Apply `ncmds` commands, then advance by `steps` control steps or by `duration` seconds (set
 * exactly one, the other 0). The state at the end and the Step's events in *out. */
int rsc_step(rsc_client_t *c, uint64_t world_id, uint32_t steps, double duration,
             const rsc_command_t *cmds, size_t ncmds, Robosim__V1__State **out,
             rsc_error_t *err);

/* Step a task world (rsc_create_task_world) by `steps` control steps with the task's action
 * vector (naction values, TaskSpec.action's size and bounds). The state, with its TaskStep
 * (observation, reward, terminated, truncated), in *out. */
int rsc_step_action(rsc_client_t *c, uint64_t world_id, uint32_t steps, const double *action,
                    size_t naction, Robosim__V1__State **out, rsc_error_t *err);

/* What a Step carries, shared by rsc_step_opts_t and rsc_batch_item_t: steps or duration (exactly
 * one), commands or a task world's action, the parts of State the reply should carry (Step.parts:
 * values of Robosim__V1__StatePart; none = all). */
#define RSC_STEP_FIELDS                                                                           \
    uint32_t steps;                                                                               \
    double duration;                                                                              \
    const rsc_command_t *cmds;                                                                    \
    size_t ncmds;                                                                                 \
    const double *action;                                                                         \
    size_t naction;                                                                               \
    const Robosim__V1__StatePart *parts;                                                          \
    size_t nparts;

/* Everything a Step can carry (protocol 1.2): RSC_STEP_FIELDS, and whether to compute the Step's
 * Jacobian. */
typedef struct rsc_step_opts {
    RSC_STEP_FIELDS
    /* Step.jacobian: the reply's State.jacobian holds the Step's derivatives with respect to
     * the state before it, the commands and the parameters named in jacobian_params */
    int jacobian;
    const char *const *jacobian_params;
    size_t njacobian_params;
} rsc_step_opts_t;

/* The general Step (rsc_step and rsc_step_action are shorthands for it). */
int rsc_step_with(rsc_client_t *c, uint64_t world_id, const rsc_step_opts_t *o,
                  Robosim__V1__State **out, rsc_error_t *err);

/* The world's current state in *out. */
int rsc_get_state(rsc_client_t *c, uint64_t world_id, Robosim__V1__State **out,
                  rsc_error_t *err);

/* Set the held actuator commands of one entity (n values, one per actuator). */
int rsc_set_force(rsc_client_t *c, uint64_t world_id, const char *entity, const double *values,
                  size_t n, rsc_error_t *err);

/* Change parameters (all validated before any is applied). */
int rsc_set_params(rsc_client_t *c, uint64_t world_id, const rsc_param_t *params, size_t n,
                   rsc_error_t *err);

/* Upload a piecewise-linear schedule of n (time, value) knots for one actuator; n = 0 removes
 * it. */
int rsc_set_schedule(rsc_client_t *c, uint64_t world_id, const char *entity, uint32_t actuator,
                     const double *times, const double *values, size_t n, rsc_error_t *err);

/* Set an entity's commands from a task-space target (inverse kinematics). */
int rsc_set_target(rsc_client_t *c, uint64_t world_id, const char *entity, const double *target,
                   size_t n, rsc_error_t *err);

/* `samples` boundary points of an entity's workspace and the reachability of `nquery` (x, y)
 * points (query_xy holds 2 * nquery doubles), in *out. */
int rsc_get_workspace(rsc_client_t *c, uint64_t world_id, const char *entity, uint32_t samples,
                      const double *query_xy, size_t nquery, Robosim__V1__WorkspaceReply **out,
                      rsc_error_t *err);

/* Register the task document `document` (JSON, NUL-terminated; the format is the server's
 * rs_task_doc.h) on the server: rsc_create_task_world can then name it. Its name is copied into
 * name[name_len] (may be NULL). A bad document: 1 INVALID_ARGUMENT, 2 NOT_FOUND, 10
 * OUT_OF_RANGE, 8 MALFORMED, the message naming the item; another document under a registered
 * name: INVALID_ARGUMENT. */
int rsc_register_task(rsc_client_t *c, const char *document, char *name, size_t name_len,
                      rsc_error_t *err);

/* ---- motion specifications ----------------------------------------------------- */

/* Load the JSON-LD motion specification `document` (NUL-terminated) on the world, replacing
 * any; it runs at every control step from the next Step on. A bad document changes nothing:
 * 1 INVALID_ARGUMENT, 2 NOT_FOUND (an unknown frame), 8 MALFORMED (not JSON), the message
 * naming the entity. */
int rsc_load_motion_spec(rsc_client_t *c, uint64_t world_id, const char *document,
                         rsc_error_t *err);

/* The specification in force ((*out)->loaded 0 when none), in *out (free with rsc_free). */
int rsc_get_motion_spec(rsc_client_t *c, uint64_t world_id, Robosim__V1__MotionSpecReply **out,
                        rsc_error_t *err);

/* Remove the world's specification. */
int rsc_clear_motion_spec(rsc_client_t *c, uint64_t world_id, rsc_error_t *err);

/* ---- snapshots and forks ------------------------------------------------------------------ */

/* The world's state with a snapshot: (*out)->snapshot.data / .len hold an opaque, versioned,
 * checksummed blob that rsc_set_state and rsc_fork_world accept. */
int rsc_get_snapshot(rsc_client_t *c, uint64_t world_id, Robosim__V1__State **out,
                     rsc_error_t *err);

/* Restore the world from a snapshot (len bytes). The world is unchanged on error: 1
 * INVALID_ARGUMENT (truncated, corrupted, contents that do not fit), 3 FAILED_PRECONDITION
 * (another preset, task or format version). The restored state in *out. */
int rsc_set_state(rsc_client_t *c, uint64_t world_id, const void *snapshot, size_t len,
                  Robosim__V1__State **out, rsc_error_t *err);

/* A new world from world_id's state now (snapshot NULL) or from `snapshot` (of a world like
 * world_id); this client becomes its controller (the token is kept). Its id in *new_world_id. */
int rsc_fork_world(rsc_client_t *c, uint64_t world_id, const void *snapshot, size_t len,
                   uint64_t *new_world_id, rsc_error_t *err);

/* ---- batched stepping ---------------------------------------------------------------------- */

/* One world's part of a StepBatch: as rsc_step_with (exactly one of steps and duration;
 * commands, or a task world's action vector; the parts of its State the reply should carry,
 * Step.parts: values of Robosim__V1__StatePart, none = all). The client attaches the world's
 * token itself. Initialise with designated initializers ({.world_id = id, .steps = 1}): fields
 * may be added. */
typedef struct rsc_batch_item {
    uint64_t world_id;
    RSC_STEP_FIELDS
} rsc_batch_item_t;

/* Step n worlds in one request. Returns 0 when the server took the batch: then (*out)->results
 * holds one BatchResult per item in item order, each a State or that item's own Error (an
 * unknown world, a wrong token, a bad command, ...). The batch as a whole is refused with
 * 1 INVALID_ARGUMENT (empty, or a world named twice) or 5 RESOURCE_EXHAUSTED (more items than
 * the server's --max-batch). */
int rsc_step_batch(rsc_client_t *c, const rsc_batch_item_t *items, size_t n,
                   Robosim__V1__StepBatchReply **out, rsc_error_t *err);

/* The columnar StepBatch (capability "step_batch.arrays", protocol 1.1): n worlds of one shape
 * (the same preset and task) each take `steps` control steps (0 means 1). `commands`: world
 * after world, each world's actuator commands in spec order (all entities), n x actuators
 * values, or NULL (ncommands 0) to hold those in force; `actions`: likewise for task worlds,
 * n x action size. The client attaches each world's token itself. Returns 0 when the server
 * took the batch: then, for world i, (*out)->codes[i] is 0 (OK) or its error code (the message
 * in (*out)->errors), and its rows are state[i * state_size ...], sensors[i * sensor_size ...]
 * and, for task worlds, observation[i * observation_size ...], reward[i], terminated[i],
 * truncated[i] (NaN rows for a world that failed). Refused as a whole as StepBatch, and when
 * commands or actions are not n times a world's count (1 INVALID_ARGUMENT). Free with rsc_free. */
int rsc_step_arrays(rsc_client_t *c, const uint64_t *world_ids, size_t n, uint32_t steps,
                    const double *commands, size_t ncommands, const double *actions,
                    size_t nactions, Robosim__V1__BatchArraysReply **out, rsc_error_t *err);

/* ---- pipelined batches: send now, receive whichever is answered first -------------------------
 * EnvPool's async mode over the columnar StepBatch: rsc_batch_send sends a batch for some worlds
 * and returns at once; rsc_batch_recv waits for whichever request in flight is answered first and
 * writes its rows straight into the caller's arrays named at its send. Several requests may be in
 * flight on the one connection, so the server steps the next batch while the caller works on the
 * last one's results. The server may answer them in another order than they were sent (a large
 * batch it serves in slices lets a smaller one after it finish first); each reply carries its
 * request's id, by which the client finds the request and its arrays. A world should be in at most
 * one request in flight: the server runs two requests naming the same world in the order they
 * arrived, but the caller's rows would race.
 *
 * The server bounds what one client may have held unanswered (--max-inflight-per-client, 4 by
 * default): a request beyond it is refused with 5 RESOURCE_EXHAUSTED, for that request only.
 * Pipelined requests go on the connection rsc_connect opened (a server of several shards
 * passes a world's part of the batch to its shard). Synchronous calls may be made while
 * requests are in flight: a batch reply that arrives meanwhile is kept for rsc_batch_recv. */

/* One request's worlds and inputs, as rsc_step_arrays takes them: n worlds of one shape, each
 * taking `steps` control steps (0 means 1), with `commands` (n x actuators, or NULL to hold
 * those in force) or a task world's `actions` (n x action size). `reset` (n flags, or NULL):
 * world i with reset[i] != 0 is reset instead of stepped (capability "step_batch.arrays.reset"),
 * reseeded with reset_seeds[i] when reset_seeds is given, else with its last seed; its rows are
 * then the new episode's first. Everything is copied into the request at the send: the arrays
 * may be reused as soon as rsc_batch_send returns. Initialise with designated initializers:
 * fields may be added. */
typedef struct rsc_batch_in {
    const uint64_t *world_ids;
    size_t n;
    uint32_t steps;
    const double *commands;
    size_t ncommands;
    const double *actions;
    size_t nactions;
    const uint8_t *reset;
    const uint64_t *reset_seeds;
} rsc_batch_in_t;

/* Where a request's answer goes: the caller's arrays, row i for the request's world i. A NULL
 * pointer: that column is not wanted. A row's width (state_size, sensor_size, observation_size,
 * info_size) must be the server's for these worlds (WorldSpec, TaskSpec, or one rsc_step_arrays'
 * reply); a reply of another width is refused for that request (RSC_EARG) with nothing written
 * but codes. Rows of a world whose code is not 0 hold NaN. The arrays must stay valid until
 * rsc_batch_recv has reported the request, or rsc_close. */
typedef struct rsc_batch_out {
    int32_t *codes;        /* n: 0, or the world's robosim.v1.ErrorCode */
    double *state;         /* n x state_size */
    size_t state_size;
    double *sensors;       /* n x sensor_size */
    size_t sensor_size;
    double *observation;   /* n x observation_size (task worlds) */
    size_t observation_size;
    double *reward;        /* n (task worlds) */
    uint8_t *terminated;   /* n: 1 or 0 (task worlds) */
    uint8_t *truncated;    /* n: 1 or 0 (task worlds) */
    double *info;          /* n x info_size: the task's info figures (capability
                              "step_batch.arrays.info"), named by the reply's info_keys */
    size_t info_size;
    double *time;          /* n, s */
    uint64_t *step_count;  /* n */
    uint8_t *digests;      /* n x 32: each world's State.digest */
} rsc_batch_out_t;

/* What rsc_batch_recv reports about the request it received. */
typedef struct rsc_batch_done {
    uint64_t ticket;   /* the request (rsc_batch_send's *ticket); 0 when none is named */
    size_t n;          /* its worlds */
    size_t nfailed;    /* worlds whose code is not 0 */
    char message[256]; /* the first failed world's error message, "" when none failed */
} rsc_batch_done_t;

/* Send a columnar StepBatch for in->n worlds without waiting for its answer, which
 * rsc_batch_recv will write into `out`'s arrays. The client attaches each world's token. Returns
 * 0 with the request's ticket (its Request.id, > 0) in *ticket; RSC_EARG (NULL arguments, no
 * worlds, values announced but NULL), RSC_ENOMEM, or RSC_ETIMEOUT (the send queue stayed full
 * for the per-call timeout), with nothing in flight. What the server thinks of the request
 * comes with its answer. */
int rsc_batch_send(rsc_client_t *c, const rsc_batch_in_t *in, const rsc_batch_out_t *out,
                   uint64_t *ticket, rsc_error_t *err);

/* Wait up to timeout_ms (<= 0: the client's per-call timeout) for the first answer to a request
 * in flight; its rows are then in the arrays given at its send and done->ticket names it. Returns
 * 0 when the server stepped the batch (each world's code in out->codes; done->nfailed counts
 * failures); the server's code (> 0) when it refused the request as a whole (err->message says
 * why; nothing written); RSC_EARG when the reply's rows are not the widths out declared (and,
 * with done->ticket 0, when no request is in flight); RSC_EPROTOCOL for an answer that is not a StepBatch.arrays reply. Each of
 * these ends that request (done->ticket) and no other. With done->ticket 0 nothing is ended and
 * every request stays in flight: RSC_ETIMEOUT (nothing answered in time), RSC_EPROTOCOL (a
 * message that is not a Response), or the code of an Error the server sent with id 0 (it could
 * not read one of the requests, so cannot say which; that one will not be answered: its
 * rsc_batch_recv times out, rsc_batch_forget gives it up). `done` may be NULL. */
int rsc_batch_recv(rsc_client_t *c, int timeout_ms, rsc_batch_done_t *done, rsc_error_t *err);

/* The requests this client has in flight (sent, not yet received). */
size_t rsc_batch_pending(const rsc_client_t *c);

/* Stop waiting for every request in flight: their answers, when they come, are dropped, and
 * their arrays are no longer written. Returns how many there were. */
size_t rsc_batch_forget(rsc_client_t *c);

/* An external wrench on `body` of `entity` for the next control step only (ApplyWrench): the
 * finger's "finger" (1 value, N), the serial arm's "end_effector" (fx, fy, tau_z), "link1",
 * "link2" (tau_z). 2 NOT_FOUND for an unknown body (the message lists the entity's bodies). */
int rsc_apply_wrench(rsc_client_t *c, uint64_t world_id, const char *entity, const char *body,
                     const double *values, size_t n, rsc_error_t *err);

/* ---- Monte Carlo runs ------------------------------------------------------------------------ */

/* One sampled initial condition: "entity.parameter" or "entity.parameter[k]" (e.g.
 * "arm.theta0[0]"), dist "uniform" (in [a, b)) or "normal" (mean a, deviation b). */
typedef struct rsc_sampler {
    const char *item;
    const char *dist;
    double a, b;
} rsc_sampler_t;

/* `runs` runs of world_id (Klamp't's monteCarloSim; the world is not changed), runs first_run
 * .. first_run + runs - 1 (split a large N over requests this way), each from the world reset
 * (seed + index) with its parameters and held commands and the samplers' draws for that run
 * (a function of seed and the run's index only), stepped `duration` seconds; the `returns`
 * items ("entity.state_or_sensor") at the end. On 0, (*out)->initial[i * nsamplers + j] is
 * sampler j's draw in run i and (*out)->final[i * nreturns + k] item k at the end of run i.
 * Refused as a whole with 1 INVALID_ARGUMENT, 2 NOT_FOUND (an unknown entity, parameter or
 * item), 10 OUT_OF_RANGE, 5 RESOURCE_EXHAUSTED (runs over --max-batch, runs x steps over
 * --max-steps-per-request) or 12 DEADLINE_EXCEEDED. Free with rsc_free. */
int rsc_monte_carlo(rsc_client_t *c, uint64_t world_id, uint32_t runs, uint64_t seed,
                    uint64_t first_run, double duration, const rsc_sampler_t *samplers, size_t nsamplers,
                    const char *const *returns, size_t nreturns,
                    Robosim__V1__MonteCarloReply **out, rsc_error_t *err);

#ifdef __cplusplus
}
#endif

#endif
