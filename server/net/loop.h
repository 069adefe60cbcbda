/* One request loop (loop.c): the single server, or a shard of a front. */
#ifndef RS_LOOP_H
#define RS_LOOP_H

#include "server_internal.h"

/* A server on cfg: its worlds, watchdog, stepper, scheduler, and its request socket bound to
 * cfg.bind. `place` NULL: a server of its own (or a front's base, cfg.shards > 1: no request
 * socket, its stream bound); else shard place->k of a front, in the front's context, bound to
 * the listening sockets the front made for it. NULL on failure (reason in st). */
rs_server_t *rs_loop_new(const rs_server_config_t *cfg, const rs_shard_place_t *place,
                         rs_status_t *st);

/* Serve until *stop, then answer what is held and drain (rs_server_run for one loop). */
int rs_loop_run(rs_server_t *s, rs_stop_flag_t *stop);

/* Free a loop's server (NULL-safe; clears *s). */
void rs_loop_destroy(rs_server_t **s);

/* Whether a TCP connection of this process holds bytes that ZeroMQ's I/O threads have not read
 * yet (tcp_unread.c; Linux, elsewhere 0): the drain waits for them. */
int rs_tcp_input_unread(void);

#endif
