/* What another client sees of a busy server, shared by test_sched and test_stalls: a prober
 * timing Hello and GetState from when each was due, stopping a server with SIGTERM against the
 * clock, and reading how far a refused request got. Define PROBE_TEST_NAME (the test's name,
 * for an early exit) before including it. */
#ifndef RS_TEST_PROBE_H
#define RS_TEST_PROBE_H

#include "rs_test.h"
#include "server_proc.h"
#include "timing.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROBE_EVERY 0.005 /* s between probes */
#define PROBE_MAX 4000    /* probes kept at most */

static rsc_client_t *connect_to(server_proc_t *sp, int timeout_ms)
{
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(sp->endpoint, timeout_ms, &err);
    CHECK(c != NULL, "connect: %s", err.message);
    if (!c) {
        server_stop(sp);
        exit(rs_test_done(PROBE_TEST_NAME));
    }
    return c;
}

/* SIGTERM the server; the seconds until it exited (1e9 if not within 60 s: then killed; the
 * callers' bounds, stretched by the slowdown beside them, stay well under that). */
static double stop_timed(server_proc_t *sp, int *status)
{
    double t0 = now();
    kill(sp->pid, SIGTERM);
    while (now() - t0 < 60.0) {
        if (waitpid(sp->pid, status, WNOHANG) == sp->pid) {
            sp->pid = -1;
            return now() - t0;
        }
        sleep_s(0.002);
    }
    kill(sp->pid, SIGKILL);
    waitpid(sp->pid, status, 0);
    sp->pid = -1;
    return 1e9;
}

/* ---- the prober: another client's view of the server ---------------------------------- */

typedef struct probe {
    int n, failed;
    double p50, p99, max;
    double slow; /* the slowdown (timing.h) measured beside the probes, before and after */
} probe_t;

/* Hello and GetState of world `other` in turn (Hello alone when other is 0), one due every
 * PROBE_EVERY s (or as soon as its predecessor is answered, when that is later), for at least
 * min_s and until *busy is 0 (at most max_s): each latency from the time it was sent. */
static probe_t probe(rsc_client_t *c, uint64_t other, atomic_int *busy, double min_s,
                     double max_s)
{
    static double lat[PROBE_MAX];
    probe_t r = {0};
    double slow = slowdown(0.02), t0 = now();
    for (int i = 0; i < PROBE_MAX; i++) {
        double due = t0 + PROBE_EVERY * i, t = now();
        if (t - t0 >= max_s || (t - t0 >= min_s && (!busy || !atomic_load(busy))))
            break;
        if (t < due)
            sleep_s(due - t);
        /* each probe's own wait, from when it is sent: a probe sent late (its predecessor took
         * longer than PROBE_EVERY) is timed from then, not from when it was due */
        double sent = t < due ? due : t;
        rsc_error_t err;
        int rc;
        if (other && i % 2) {
            Robosim__V1__State *st = NULL;
            rc = rsc_get_state(c, other, &st, &err);
            rsc_free(st);
        } else {
            Robosim__V1__HelloReply *h = NULL;
            rc = rsc_hello(c, 1, 1, &h, &err);
            rsc_free(h);
        }
        lat[r.n++] = now() - sent;
        if (rc != 0) {
            r.failed = 1;
            fprintf(stderr, "probe %d: %s\n", i, err.message);
            break;
        }
    }
    r.slow = slowdown_since(slow);
    qsort(lat, (size_t)r.n, sizeof lat[0], by_value);
    if (r.n > 0) {
        r.p50 = lat[r.n / 2];
        r.p99 = lat[(r.n * 99 + 99) / 100 - 1];
        r.max = lat[r.n - 1];
    }
    return r;
}

static void print_probe(const probe_t *r, const char *during)
{
    printf("other client during %s: %d probes, p50 %.2f ms, p99 %.2f ms, max %.2f ms "
           "(slowdown %.2f)\n",
           during, r->n, r->p50 * 1e3, r->p99 * 1e3, r->max * 1e3, r->slow);
}

/* The probes' p99 within `goal` s on an idle machine, stretched by the slowdown beside them. */
static int probe_within(const probe_t *r, double goal)
{
    return r->p99 <= wall_bound(goal, r->slow);
}

/* Enough probes over `seconds` of probing: `nominal` on an idle machine over the slowdown, but
 * no more than probes each within the stretched p99 goal could make in that time (one each
 * PROBE_EVERY after its predecessor's answer), and at least 1. */
static int probe_enough(const probe_t *r, int nominal, double seconds, double goal)
{
    double fit = seconds / (PROBE_EVERY + wall_bound(goal, r->slow));
    double need = fmin(nominal / fmax(1.0, r->slow), fit);
    return r->n >= (need > 1 ? (int)need : 1);
}

/* "after K of the N control steps asked": K, or -1. */
static long long steps_done(const char *message, unsigned long long asked)
{
    char pat[64];
    snprintf(pat, sizeof pat, " of the %llu control steps", asked);
    const char *at = strstr(message, pat), *p = at;
    if (!at)
        return -1;
    while (p > message && p[-1] >= '0' && p[-1] <= '9')
        p--;
    return p < at ? atoll(p) : -1;
}

/* Send rq with id rid on world `world` (0: none) on a raw DEALER (pipelined requests). */
static void send_request(void *sock, Robosim__V1__Request *rq, uint64_t rid, uint64_t world)
{
    rq->id = rid;
    rq->world_id = world;
    size_t n = robosim__v1__request__get_packed_size(rq);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return;
    robosim__v1__request__pack(rq, buf);
    zmq_send(sock, buf, n, 0);
    free(buf);
}

/* The next Response on a raw DEALER (pipelined requests), or NULL. */
static Robosim__V1__Response *recv_reply(void *sock)
{
    static uint8_t buf[1 << 20];
    int n = zmq_recv(sock, buf, sizeof buf, 0);
    size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf;
    return n > 0 ? robosim__v1__response__unpack(NULL, len, buf) : NULL;
}

#endif
