/* The server's state, shared by the loop (server.c) and the handlers (dispatch.c). */
#ifndef RS_SERVER_INTERNAL_H
#define RS_SERVER_INTERNAL_H

#include "arena.h"
#include "robosim/v1/robosim.pb-c.h"
#include "rs_server.h"

typedef struct world_entry {
    uint64_t id;
    rs_world_t *world;
} world_entry_t;

struct rs_server {
    rs_server_config_t cfg;
    void *zctx;
    void *router;
    world_entry_t *worlds; /* cfg.max_worlds slots, the first nworlds used */
    int nworlds;
    uint64_t next_world_id;
    arena_t arena;         /* the reply being built */
    uint8_t *out;          /* packed reply */
    size_t out_cap;
    uint64_t requests, errors;
};

/* A request handler: fills `rp` (its result) or returns a negative code with the reason in
 * st. `w` is the target world for rows that need one, else NULL. */
typedef int (*rs_handler_fn)(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                             Robosim__V1__Response *rp, rs_status_t *st);

typedef struct rs_op {
    Robosim__V1__Request__OpCase op;
    const char *name;   /* as in capabilities and logs */
    rs_handler_fn fn;
    int needs_world;    /* the request's world_id must name an existing world */
    int mutates;        /* changes a world (controllers only, once roles exist) */
} rs_op_t;

/* The dispatch table row for a request type, or NULL. */
const rs_op_t *rs_op_find(Robosim__V1__Request__OpCase op);

/* All rows, for Hello's capabilities. */
const rs_op_t *rs_ops(size_t *n);

/* The entry of world `id`, or NULL. */
world_entry_t *rs_server_world(rs_server_t *s, uint64_t id);

#endif
