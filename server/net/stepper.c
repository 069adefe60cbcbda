/* The stepper: work too long for the loop's thread. One thread runs, in arrival order, what
 * handlers hand it (a Step's control steps that outlast the loop's fuse, MonteCarlo runs): the
 * request stays parked on the scheduler's offloaded list (scheduler.c), its worlds held, and the
 * loop resumes it once the stepper is done with it, so the loop goes on answering everyone
 * else. Work there is interrupted by its own flag (s->off_abort). */
#include "stepper.h"
#include "rs_log.h"
#include "server_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

struct rs_stepper {
    rs_server_t *s;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    rs_cont_t **queue; /* work not yet run (FIFO ring of cap) */
    size_t head, count, cap;
    atomic_int finished; /* runs done since the loop last looked */
    int quit;
};

static void *stepper_main(void *arg)
{
    rs_stepper_t *sp = arg;
    rs_server_t *s = sp->s;
    /* the loop comes first: this thread, and its crew's helpers (made so), run at a lower
     * priority, so the loop's thread is not kept waiting for a core by them */
    errno = 0;
    int nice_now = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    if (errno == 0)
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice_now + RS_STEPPER_NICE);
    rs_status_t st;
    if (!(s->off_pool = rs_pool_new_on(s->off_crew, s->cfg.threads, 64 << 10, &st)))
        rs_log(RS_LOG_WARN, "stepper: %s; MonteCarlo runs one at a time", st.message);
    pthread_mutex_lock(&sp->lock);
    for (;;) {
        while (!sp->count && !sp->quit)
            pthread_cond_wait(&sp->wake, &sp->lock);
        if (!sp->count)
            break;
        rs_cont_t *c = sp->queue[sp->head];
        sp->head = (sp->head + 1) % sp->cap;
        sp->count--;
        pthread_mutex_unlock(&sp->lock);
        c->off_run(s, c);
        pthread_mutex_lock(&sp->lock);
        c->off_done = 1;
        atomic_fetch_add(&sp->finished, 1);
    }
    pthread_mutex_unlock(&sp->lock);
    return NULL;
}

rs_stepper_t *rs_stepper_new(rs_server_t *s, rs_status_t *st)
{
    rs_stepper_t *sp = calloc(1, sizeof *sp);
    if (!sp) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory");
        return NULL;
    }
    sp->s = s;
    pthread_mutex_init(&sp->lock, NULL);
    pthread_cond_init(&sp->wake, NULL);
    atomic_init(&sp->finished, 0);
    if (pthread_create(&sp->thread, NULL, stepper_main, sp) != 0) {
        pthread_mutex_destroy(&sp->lock);
        pthread_cond_destroy(&sp->wake);
        free(sp);
        rs_fail(st, RS_EINTERNAL, "cannot start the stepper thread");
        return NULL;
    }
    return sp;
}

/* Join the stepper after the work it has (stopping: interrupted at once). */
void rs_stepper_destroy(rs_stepper_t **p)
{
    rs_stepper_t *sp = *p;
    if (!sp)
        return;
    rs_server_t *s = sp->s;
    atomic_store_explicit(&s->off_abort, 1, memory_order_relaxed);
    pthread_mutex_lock(&sp->lock);
    sp->quit = 1;
    pthread_cond_signal(&sp->wake);
    pthread_mutex_unlock(&sp->lock);
    pthread_join(sp->thread, NULL);
    pthread_mutex_destroy(&sp->lock);
    pthread_cond_destroy(&sp->wake);
    rs_pool_destroy(&s->off_pool);
    free(sp->queue);
    free(sp);
    *p = NULL;
}

int rs_stepper_submit(rs_stepper_t *sp, rs_cont_t *c)
{
    int rc = 0;
    pthread_mutex_lock(&sp->lock);
    if (sp->count == sp->cap) {
        size_t cap = sp->cap ? 2 * sp->cap : 16;
        rs_cont_t **q = malloc(cap * sizeof *q);
        if (q) {
            for (size_t i = 0; i < sp->count; i++)
                q[i] = sp->queue[(sp->head + i) % sp->cap];
            free(sp->queue);
            sp->queue = q;
            sp->head = 0;
            sp->cap = cap;
        } else {
            rc = -1;
        }
    }
    if (rc == 0) {
        sp->queue[(sp->head + sp->count) % sp->cap] = c;
        sp->count++;
        pthread_cond_signal(&sp->wake);
    }
    pthread_mutex_unlock(&sp->lock);
    return rc;
}

int rs_stepper_done(rs_stepper_t *sp, const rs_cont_t *c)
{
    pthread_mutex_lock(&sp->lock);
    int done = c->off_done;
    pthread_mutex_unlock(&sp->lock);
    return done;
}

int rs_stepper_finished(rs_stepper_t *sp)
{
    return atomic_exchange(&sp->finished, 0);
}
