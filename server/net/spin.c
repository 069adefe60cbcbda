/* A loop's wait for its next request: polled for a while before it sleeps (--spin-us), for
 * the one-loop server (server.c) and each shard (shards.c). See server_internal.h and
 * docs/design.md, "Measurements behind choices in the loop". */
#include "server_internal.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#include <zmq.h>

/* Whether the machine has no core to spare: the running mean (1/4 weight) of the tasks running
 * or runnable (/proc/loadavg's fourth field, this thread among them), sampled at most every
 * 10 ms, above the online cores plus one (a polling loop and the client it waits for may both
 * be running on a machine with room). A loop that polls then would take a core from the client or
 * the I/O thread that brings its next request (two shards polling on two cores halved a
 * bench's Steps per second). Without /proc/loadavg: never. */
static int contended(rs_server_t *s, double now)
{
    if (!s->load_cores) { /* once per loop: glibc reads a file for it */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        s->load_cores = cores > 0 ? (int)cores : 1;
    }
    if (now - s->load_at >= 0.01) {
        s->load_at = now;
        FILE *f = fopen("/proc/loadavg", "r");
        int running = 0;
        if (f && fscanf(f, "%*f %*f %*f %d/", &running) == 1)
            s->running_avg += (running - s->running_avg) / 4;
        if (f)
            fclose(f);
    }
    return s->running_avg > (double)s->load_cores + 1;
}

void rs_spin(rs_server_t *s, void *sock)
{
    double max = s->cfg.spin_seconds;
    if (!(max > 0))
        return; /* --spin-us 0: not even the clock */
    double t0 = rs_clock();
    s->wait_from = t0;
    if (s->gap_avg >= max || contended(s, t0))
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
