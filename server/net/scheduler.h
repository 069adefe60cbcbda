/* The scheduler (scheduler.c): requests run in slices, parked between them, handed to the stepper,
 * or waiting behind a request that holds their world; the loop's requests all go through it. */
#ifndef RS_SCHED_LOOP_H
#define RS_SCHED_LOOP_H

#include "rs_server.h"

#include <zmq.h>

#define MAX_ENVELOPE 8 /* routing frames kept before a request's payload */

typedef struct rs_sched rs_sched_t;

/* An empty scheduler (NULL: out of memory); rs_sched_destroy frees it and the requests it
 * still holds unanswered (a server destroyed without rs_server_run's end); NULL-safe. */
rs_sched_t *rs_sched_new(void);
void rs_sched_destroy(rs_sched_t **p);

/* A request arrived (frames[0..n-1], its routing id first, consumed; `sock` the socket its
 * reply goes out of): served now, or queued behind the parked request holding its world, or
 * refused when its client has cfg.max_inflight_per_client held already. */
void rs_sched_arrive(rs_server_t *s, void *sock, zmq_msg_t *frames, int n,
                     const rs_caller_t *caller);

/* Whether requests are parked between slices / handed to the stepper. */
int rs_sched_parked(const rs_sched_t *sq);
int rs_sched_offloaded(const rs_sched_t *sq);

/* Resume the parked request at the head of the list for one slice. */
void rs_sched_resume_next(rs_server_t *s);

/* Resume the requests whose work the stepper has run; how many. */
int rs_sched_resume_offloaded(rs_server_t *s);

/* Serve the waiting requests whose worlds are free now, in arrival order. */
void rs_sched_serve_waiting(rs_server_t *s);

/* Stopping: interrupt the work under way (s->abort, s->off_abort) and answer every request
 * held, parked, offloaded or waiting (a Step: UNAVAILABLE with how far it got). */
void rs_sched_finish(rs_server_t *s);

/* --world-ttl: destroy the worlds whose controller has sent nothing for that long, but for
 * those a request holds or waits for and those no client owns. */
void rs_sched_expire_idle(rs_server_t *s, double now);

/* An error reply (code, message) to a request not run (frames consumed). */
void rs_refuse(rs_server_t *s, void *sock, zmq_msg_t *frames, int n, int code,
               const char *message);

#endif
