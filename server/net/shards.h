/* A shard of a front (shards.c): where a request goes, passing it to the shard of its world
 * and relaying the reply; a StepBatch split over shards (shard_batch.c). */
#ifndef RS_SHARDS_H
#define RS_SHARDS_H

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#include "rs_server.h"

/* A shard's socket for the requests other shards pass it, and its sockets to them. 0 or a
 * negative code (st); rs_shard_close_peers undoes it (NULL-safe). */
int rs_shard_open_peers(rs_server_t *s, rs_status_t *st);
void rs_shard_close_peers(rs_server_t *s);

/* A shard's next request to serve (up to cap frames in frames[0..*n-1], its caller, the socket
 * its reply goes out of), waiting up to timeout_ms: requests for worlds of other shards are
 * passed to them and their replies relayed meanwhile. 0, or -1 with errno EAGAIN (none) or
 * ETERM. */
int rs_shard_next(rs_server_t *s, zmq_msg_t *frames, int cap, int *n, rs_caller_t *caller,
                  void **sock, int timeout_ms);

/* Stopping: this shard has begun its drain and passes nothing on from now (loop.c's drain). */
void rs_shard_drain_begin(rs_server_t *s);

/* Whether no request can still come to this shard from another: every shard of the front has
 * begun its drain (or never started) and none waits for the reply to a request it passed
 * (1 when not a shard). A stopping shard keeps relaying and refusing until then. */
int rs_shard_settled(const rs_server_t *s);

/* Where a shard sends a serialized request it received, read without decoding it (its bytes
 * are the client's: any may come) but as protobuf-c decodes it (the op is the oneof's last
 * field present, the world the last world_id), by its op's route in the dispatch table
 * (rs_op_t.route): ROUTE_WORLD to the shard of *world (ROUTE_WORLD rows), ROUTE_BATCH by all
 * its worlds (ROUTE_WORLDS: a StepBatch; *world its first, 0 if none), ROUTE_ALL to every
 * shard (ROUTE_ALL_SHARDS: ListWorlds), ROUTE_CREATE to the shard its connection is placed on
 * (ROUTE_PLACEMENT: CreateWorld), ROUTE_HERE to this one (ROUTE_ANY, no world_id, or
 * unreadable: the handler answers). */
/* (ROUTE_CREATE last: fuzz_request.c checks a route is within HERE..CREATE) */
enum { ROUTE_HERE, ROUTE_WORLD, ROUTE_ALL, ROUTE_BATCH, ROUTE_CREATE };
int rs_route_of(const uint8_t *req, size_t len, uint64_t *world);

/* ---- shard_batch.c: a StepBatch whose worlds live on several shards ---- */

typedef struct rs_batch_plan rs_batch_plan_t;

/* Split the serialized request `req` (len bytes), read by shard s, when it is a StepBatch:
 * checked as a whole as one server checks it (its size, a world twice, the steps asked, the
 * columnar form's lengths and shape, from the census; a world of another shape than the
 * first is refused here), then parts[k] (malloc'd; NULL where shard k has none of its worlds)
 * is the request for shard k's worlds, in the batch's order with their places, lens[k] its
 * length. 0 with *plan (the merge's; rs_batch_plan_free), 1 when it is not a StepBatch to
 * split (its shard answers it whole), or a negative code with the reason in `refusal` and the
 * request's id in *id (the batch refused as a whole). */
int rs_batch_split(rs_server_t *s, const uint8_t *req, size_t len, uint8_t **parts,
                   size_t *lens, rs_batch_plan_t **plan, uint64_t *id, rs_status_t *refusal);

/* The batch's reply from its parts' (replies[k], lens[k]: shard k's packed Response, NULL
 * where it had no part or none came), in the request's order: each world's result or rows
 * from its part, a part refused as a whole giving each of its worlds that error. *out is
 * malloc'd (*outlen bytes). 0, or -1 out of memory. */
int rs_batch_merge(const rs_batch_plan_t *plan, uint8_t *const *replies, const size_t *lens,
                   uint8_t **out, size_t *outlen);

/* Free a plan and the request it holds (NULL-safe; clears *plan). */
void rs_batch_plan_free(rs_batch_plan_t **plan);

#endif
