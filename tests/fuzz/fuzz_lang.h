/* What the harnesses of the input languages share (fuzz_task_doc, fuzz_motion_spec,
 * fuzz_randomize) with their seed generator (make_lang_corpus): the worlds an input's first
 * byte picks, the compute budget of the work an accepted input starts, and the rule on
 * refusals. In process, no server and no sockets, so each runs thousands of inputs a second. */
#ifndef RS_FUZZ_LANG_H
#define RS_FUZZ_LANG_H

#include "rs_core.h"
#include "rs_task.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* The worlds an input's first byte picks (modulo their number): one per preset, then one per
 * task, all seeded 1, in rs_preset_names() and rs_task_names() order. */
#define FUZZ_MAX_WORLDS 48

static inline int fuzz_lang_worlds(rs_world_t **worlds, int with_tasks)
{
    rs_status_t st;
    int n = 0;
    for (const char *const *p = rs_preset_names(); *p && n < FUZZ_MAX_WORLDS; p++)
        if (!(worlds[n++] = rs_world_new(*p, NULL, 0, 1, &st)))
            abort();
    for (const char *const *t = rs_task_names(); with_tasks && *t && n < FUZZ_MAX_WORLDS; t++)
        if (!(worlds[n++] = rs_world_new_task(*t, NULL, NULL, 0, 1, &st)))
            abort();
    return n;
}

/* The CPU time the steps of one input may take: an accepted document may carry in-range
 * parameters (control_dt 10 s, rtol 1e-14, a randomized mass near its bound) that make one
 * control step take minutes; the abort flag ends it, as the server's watchdog does. 20 ms is
 * many control steps of every preset in this instrumented build, and keeps the harnesses at
 * hundreds of inputs a second even when the corpus fills with such inputs (at 200 ms,
 * fuzz_randomize fell to 25 a second). A virtual timer and SIGVTALRM, since libFuzzer's own
 * -timeout uses the real-time timer and SIGALRM. */
#define FUZZ_BUDGET_US 20000
static atomic_int fuzz_budget_over;

static void fuzz_on_budget(int sig)
{
    (void)sig;
    atomic_store(&fuzz_budget_over, 1);
}

static inline void fuzz_budget_init(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fuzz_on_budget;
    sigaction(SIGVTALRM, &sa, NULL);
}

/* Arm a budget of `us` microseconds of CPU time on world w's data; fuzz_budget_off disarms
 * it. */
static inline void fuzz_budget_on(rs_world_t *w, long us)
{
    struct itimerval budget = {{0, 0}, {0, us}};
    atomic_store(&fuzz_budget_over, 0);
    rs_data_set_abort(w->data, &fuzz_budget_over);
    setitimer(ITIMER_VIRTUAL, &budget, NULL);
}

static inline void fuzz_budget_off(rs_world_t *w)
{
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_VIRTUAL, &off, NULL);
    rs_data_set_abort(w->data, NULL);
}

/* A refusal must say why, with a specific code: a finding otherwise. */
static inline void fuzz_check_refusal(const rs_status_t *st)
{
    if (st->code == 0 || st->code == RS_EINTERNAL || !st->message[0])
        abort();
}

/* A task world's action: each value at its lower bound, middle or upper bound (by `pick`). */
static inline void fuzz_action(const rs_task_t *t, unsigned pick, double *action)
{
    for (int i = 0; i < t->nact; i++) {
        const rs_var_desc_t *a = &t->act[i];
        action[i] = a->lower + (a->upper - a->lower) * (double)((pick + (unsigned)i) % 3) / 2.0;
    }
}

#endif
