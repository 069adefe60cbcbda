/* The watchdog: interrupts a request at its budget deadline, and everything on stop.
 * A thread that looks every WATCHDOG_MS at the armed deadlines (s->abort_at: the loop's
 * request's budget, or a slice's fuse; s->off_abort_at: the stepper's) and the stop flag, and
 * sets the matching abort flag; the core then stops within one right-hand-side evaluation.
 * Nothing is added to the step path but a few atomic stores per request. While a deadline is
 * armed it looks every WATCHDOG_MS (which bounds how long past its fuse a control step holds
 * the loop), else every WATCHDOG_IDLE_MS. It also wakes the loop blocked in its receive with no
 * timeout (a timed wait arms a kernel timer each time, several us of CPU per request on a
 * virtual machine) through an inproc DEALER on its ROUTER at wake_at (the loop's next duty)
 * and on stop. */
#include "watchdog.h"
#include "rs_log.h"
#include "server_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WATCHDOG_MS 2
#define WATCHDOG_IDLE_MS 10

struct rs_watchdog {
    rs_server_t *s;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int quit;
    _Atomic double wake_at;         /* rs_clock() time the loop wants waking (INFINITY: none) */
    atomic_int wake_ready;          /* wake_tx and wake_id are set (else the receive times out) */
    void *wake_tx;                  /* the DEALER on the loop's ROUTER */
    char wake_id[RS_TOKEN_LEN + 1]; /* its routing id: random, so no client has it */
};

/* Wake the loop blocked in its receive (wake_ready: the DEALER is ours to use) when its
 * wake_at has come, and once on stop: an empty message from wake_id, which the loop drops.
 * wake_at goes back to none only if the loop has not set another meanwhile. A wake_at the loop
 * sets while the watchdog sleeps is seen at its next tick (2-10 ms): only an idle loop needs
 * it, a busy one does its duties between requests anyway. */
static void wake_loop(rs_watchdog_t *wd, int stopping, int *stop_sent)
{
    if (!atomic_load_explicit(&wd->wake_ready, memory_order_acquire))
        return;
    double at = atomic_load_explicit(&wd->wake_at, memory_order_relaxed);
    int due = rs_clock() >= at &&
              atomic_compare_exchange_strong_explicit(&wd->wake_at, &at, INFINITY,
                                                      memory_order_relaxed, memory_order_relaxed);
    if (due || (stopping && !*stop_sent))
        zmq_send(wd->wake_tx, "", 0, ZMQ_DONTWAIT); /* one queued is enough: EAGAIN is fine */
    *stop_sent = stopping; /* once per stop (a later rs_server_run may stop again) */
}

static void *watchdog_main(void *arg)
{
    rs_watchdog_t *wd = arg;
    rs_server_t *s = wd->s;
    int stop_sent = 0;
    pthread_mutex_lock(&wd->lock);
    while (!wd->quit) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int armed = isfinite(atomic_load_explicit(&s->abort_at, memory_order_relaxed)) ||
                    isfinite(atomic_load_explicit(&s->off_abort_at, memory_order_relaxed));
        long ns = (armed ? WATCHDOG_MS : WATCHDOG_IDLE_MS) * 1000000L;
        /* the loop's wake-up on time, not up to a tick late */
        double until = atomic_load_explicit(&wd->wake_at, memory_order_relaxed) - rs_clock();
        if (until * 1e9 < (double)ns)
            ns = until > 0 ? (long)(until * 1e9) + 1 : 0;
        ts.tv_nsec += ns;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&wd->wake, &wd->lock, &ts);
        int stopping = rs_server_stopping(s);
        double now = rs_clock();
        if (stopping || now >= atomic_load_explicit(&s->abort_at, memory_order_relaxed))
            atomic_store_explicit(&s->abort, 1, memory_order_relaxed);
        if (stopping || now >= atomic_load_explicit(&s->off_abort_at, memory_order_relaxed))
            atomic_store_explicit(&s->off_abort, 1, memory_order_relaxed);
        wake_loop(wd, stopping, &stop_sent);
    }
    pthread_mutex_unlock(&wd->lock);
    return NULL;
}

rs_watchdog_t *rs_watchdog_new(rs_server_t *s, rs_status_t *st)
{
    rs_watchdog_t *wd = calloc(1, sizeof *wd);
    if (!wd) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory");
        return NULL;
    }
    wd->s = s;
    atomic_init(&wd->wake_at, INFINITY);
    atomic_init(&wd->wake_ready, 0);
    pthread_mutex_init(&wd->lock, NULL);
    pthread_cond_init(&wd->wake, NULL);
    if (pthread_create(&wd->thread, NULL, watchdog_main, wd) != 0) {
        pthread_mutex_destroy(&wd->lock);
        pthread_cond_destroy(&wd->wake);
        free(wd);
        rs_fail(st, RS_EINTERNAL, "cannot start the watchdog thread");
        return NULL;
    }
    return wd;
}

/* Without the socket (an error) the loop's receive times out as before: nothing but a little
 * CPU per request is lost. */
void rs_watchdog_wake_open(rs_watchdog_t *wd, void *zctx, void *router)
{
    char ep[64];
    rs_status_t st;
    rs_status_clear(&st);
    int linger = 0;
    snprintf(ep, sizeof ep, "inproc://robosim-wake-%p", router);
    if (!wd || rs_token_generate(wd->wake_id, &st) < 0 || zmq_bind(router, ep) != 0 ||
        !(wd->wake_tx = zmq_socket(zctx, ZMQ_DEALER)) ||
        zmq_setsockopt(wd->wake_tx, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(wd->wake_tx, ZMQ_ROUTING_ID, wd->wake_id, strlen(wd->wake_id)) != 0 ||
        zmq_connect(wd->wake_tx, ep) != 0) {
        rs_log(RS_LOG_WARN, "the loop waits with a timeout: no wake-up socket (%s)",
               zmq_strerror(zmq_errno()));
        if (wd && wd->wake_tx)
            zmq_close(wd->wake_tx);
        if (wd)
            wd->wake_tx = NULL;
        return;
    }
    atomic_store_explicit(&wd->wake_ready, 1, memory_order_release);
}

int rs_watchdog_can_wake(const rs_watchdog_t *wd)
{
    return wd && atomic_load_explicit(&wd->wake_ready, memory_order_relaxed);
}

void rs_watchdog_wake_at(rs_watchdog_t *wd, double at)
{
    atomic_store_explicit(&wd->wake_at, at, memory_order_relaxed);
}

int rs_watchdog_is_wake(const rs_watchdog_t *wd, zmq_msg_t *frames, int n)
{
    if (!wd || !wd->wake_tx)
        return 0;
    size_t len = strlen(wd->wake_id);
    return n == 2 && len && zmq_msg_size(&frames[0]) == len &&
           memcmp(zmq_msg_data(&frames[0]), wd->wake_id, len) == 0;
}

void rs_watchdog_destroy(rs_watchdog_t **p)
{
    rs_watchdog_t *wd = *p;
    if (!wd)
        return;
    pthread_mutex_lock(&wd->lock);
    wd->quit = 1;
    pthread_cond_signal(&wd->wake);
    pthread_mutex_unlock(&wd->lock);
    pthread_join(wd->thread, NULL);
    if (wd->wake_tx)
        zmq_close(wd->wake_tx); /* before the context ends (rs_server_destroy) */
    pthread_mutex_destroy(&wd->lock);
    pthread_cond_destroy(&wd->wake);
    free(wd);
    *p = NULL;
}
