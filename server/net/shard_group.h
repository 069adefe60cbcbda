/* What a front (front.c) shares with its shards (shards.c), and a shard's place among them. */
#ifndef RS_SHARD_GROUP_H
#define RS_SHARD_GROUP_H

#include <stdatomic.h>

typedef struct rs_server rs_server_t;
struct rs_census;

/* Made and owned by the front; each shard points at it (rs_server_t.group). */
typedef struct rs_shard_group {
    int n;                       /* shards */
    char peer_key[33];           /* random (RS_TOKEN_LEN hex digits): the shards' routing ids
                                    to each other start with it, so no client passes as one */
    char (*peer_endpoints)[96];  /* shard k's inproc endpoint for the requests others pass it */
    atomic_int draining;         /* stopping: shards in their drain (or never started), which
                                    pass nothing on any more (rs_shard_drain_begin) */
    atomic_int *outstanding;     /* shard k's requests passed to others whose replies have not
                                    come back (written by shard k's thread; read by the others
                                    while stopping: rs_shard_settled) */
    struct rs_census *census;    /* the world counts and id -> shard table they share */
    struct rs_crew *crew;        /* the helper threads of the shards' loops' worker pools ... */
    struct rs_crew *off_crew;    /* ... and of their steppers' (NULL: none, --threads 1) */
} rs_shard_group_t;

/* Shard k's place, handed to rs_loop_new: its front and group, and the listening sockets the
 * front made for it (taken: set to -1 once its ROUTER owns them). */
typedef struct rs_shard_place {
    rs_server_t *front;
    rs_shard_group_t *group;
    int k;
    int *fd;                  /* on the shared port */
    int *own_fd;              /* on its own port (--shard-ports), or -1 */
    const char *own_endpoint; /* ... that port's endpoint */
} rs_shard_place_t;

#endif
