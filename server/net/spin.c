/* A loop's wait for its next request: polled for a while before it sleeps (--spin-us), for
 * the one-loop server (server.c) and each shard (shards.c). See server_internal.h and
 * docs/design.md, "Measurements behind choices in the loop". */
#include "server_internal.h"

#include <math.h>
#include <sched.h>
#include <zmq.h>

void rs_spin(rs_server_t *s, void *sock)
{
    double max = s->cfg.spin_seconds, t0 = rs_clock();
    s->wait_from = t0;
    if (!(max > 0) || s->gap_avg >= max)
        return;
    for (;;) {
        int events = 0;
        size_t len = sizeof events;
        if (zmq_getsockopt(sock, ZMQ_EVENTS, &events, &len) != 0 || (events & ZMQ_POLLIN) ||
            rs_clock() - t0 >= max || rs_server_stopping(s))
            return;
        sched_yield(); /* a thread that would bring the request may be waiting for this core */
    }
}

void rs_spin_arrived(rs_server_t *s)
{
    double max = s->cfg.spin_seconds;
    if (!(max > 0))
        return;
    double gap = fmin(rs_clock() - s->wait_from, 4 * max); /* so a long idle spell is soon
                                                               forgotten once requests come */
    s->gap_avg += (gap - s->gap_avg) / 8;
}
