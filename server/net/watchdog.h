/* The watchdog (watchdog.c): a thread that interrupts a request at its compute deadline and
 * everything on stop, and wakes the loop blocked in its receive when a duty is due. */
#ifndef RS_WATCHDOG_H
#define RS_WATCHDOG_H

#include <zmq.h>

#include "rs_core.h"

typedef struct rs_server rs_server_t;
typedef struct rs_watchdog rs_watchdog_t;

/* Start server s's watchdog: it reads s->abort_at, s->off_abort_at and s->stop and sets
 * s->abort and s->off_abort (server_internal.h). NULL on failure (reason in st). */
rs_watchdog_t *rs_watchdog_new(rs_server_t *s, rs_status_t *st);

/* Give it a DEALER on the loop's ROUTER (inproc, a random routing id) to wake the loop with.
 * Without one (an error, logged) the loop's receive must time out: rs_watchdog_can_wake 0. */
void rs_watchdog_wake_open(rs_watchdog_t *wd, void *zctx, void *router);

/* Whether the watchdog can wake the loop (NULL-safe: 0). */
int rs_watchdog_can_wake(const rs_watchdog_t *wd);

/* Wake the loop at rs_clock() time `at` (INFINITY: only on stop). */
void rs_watchdog_wake_at(rs_watchdog_t *wd, double at);

/* Whether a message the loop received (its frames) is the watchdog's wake-up (NULL-safe). */
int rs_watchdog_is_wake(const rs_watchdog_t *wd, zmq_msg_t *frames, int n);

/* Join the thread, close its socket (before the context ends); NULL-safe, clears *p. */
void rs_watchdog_destroy(rs_watchdog_t **p);

#endif
