/* The front of a server with --shards (front.c): N request loops behind one port. */
#ifndef RS_FRONT_H
#define RS_FRONT_H

#include "server_internal.h"

/* A front on cfg (cfg->shards > 1): the stream, CURVE and the state dir's lock and id record
 * are its own; its shards, made here, each on its listening socket on cfg.bind's port
 * (SO_REUSEPORT: the kernel spreads the connections over them), hold (restore, checkpoint) the
 * worlds. NULL on failure (reason in st). */
rs_server_t *rs_front_new(const rs_server_config_t *cfg, rs_status_t *st);

/* Start each shard's loop on its thread, forward the observer stream between the shards and
 * the subscribers until *stop and every shard has ended. */
int rs_front_run(rs_server_t *s, rs_stop_flag_t *stop);

/* Destroy the shards, then the front (NULL-safe; clears *s). */
void rs_front_destroy(rs_server_t **s);

#endif
