/* The MonteCarlo handler: runs sampled from one world, on the stepper's pool. */

#include "handlers.h"
#include "rs_montecarlo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- MonteCarlo (Klamp't's monteCarloSim) ---- */

#define MC_MAX_ITEMS 64 /* samplers, and return items, per request */

typedef struct mc_run {
    const rs_mc_source_t *src; /* the world's commands, schedules and task */
    const rs_mc_sampler_t *samplers;
    size_t ns;
    const rs_mc_item_t *items;
    size_t nr;
    uint64_t seed, nsteps;
    const atomic_int *abort;
    double *initial, *final, *t_end; /* per run */
    rs_status_t *status;             /* per run */
} mc_run_t;

/* A worker runs Monte Carlo run i: its own data, freed at its end. */
static void mc_step(void *ctx, size_t i, int worker)
{
    (void)worker;
    mc_run_t *r = ctx;
    rs_status_clear(&r->status[i]);
    if (atomic_load_explicit(r->abort, memory_order_relaxed)) {
        /* the budget ran out or the server stops: the runs not begun are not begun */
        r->status[i].code = RS_EDEADLINE;
        return;
    }
    rs_mc_run_from(r->src, r->samplers, r->ns, r->initial + i * r->ns, r->seed + i, r->nsteps,
                   r->abort, r->items, r->nr, r->final + i * r->nr, &r->t_end[i], &r->status[i]);
}

/* A MonteCarlo request's runs and results (malloc'd: on the loop they run on the stepper
 * thread while other requests come and go). */
typedef struct mc_job {
    mc_run_t run;
    rs_mc_source_t src;
    rs_mc_sampler_t samplers[MC_MAX_ITEMS];
    rs_mc_item_t items[MC_MAX_ITEMS];
    double *initial, *final, *t_end;
    rs_status_t *status;
    size_t n;
    double deadline; /* on the stepper: rs_clock() time its budget runs out */
} mc_job_t;

static void mc_job_free(void *p)
{
    mc_job_t *j = p;
    if (!j)
        return;
    rs_mc_source_release(&j->src);
    free(j->initial);
    free(j->final);
    free(j->t_end);
    free(j->status);
    free(j);
}

/* A job of n runs of world w (its commands, schedules and task), its results unset. NULL when
 * out of memory. */
static mc_job_t *mc_job_new(const rs_world_t *w, const rs_mc_sampler_t *samplers, size_t ns,
                            const rs_mc_item_t *items, size_t nr, size_t n, rs_status_t *st)
{
    mc_job_t *j = calloc(1, sizeof *j);
    if (!j) {
        OOM(st);
        return NULL;
    }
    j->n = n;
    j->initial = malloc(n * ns * sizeof *j->initial);
    j->final = malloc(n * nr * sizeof *j->final);
    j->t_end = malloc(n * sizeof *j->t_end);
    j->status = calloc(n, sizeof *j->status);
    if (!j->initial || !j->final || !j->t_end || !j->status) {
        mc_job_free(j);
        OOM(st);
        return NULL;
    }
    if (rs_mc_source_init(&j->src, w, st) < 0) {
        mc_job_free(j);
        return NULL;
    }
    memcpy(j->samplers, samplers, ns * sizeof *samplers);
    memcpy(j->items, items, nr * sizeof *items);
    j->run = (mc_run_t){.src = &j->src, .samplers = j->samplers, .ns = ns, .items = j->items,
                        .nr = nr, .initial = j->initial, .final = j->final, .t_end = j->t_end,
                        .status = j->status};
    return j;
}

/* On the stepper: the runs on its own workers, within the request's budget. */
static void mc_job_run(rs_server_t *s, rs_cont_t *c)
{
    mc_job_t *j = c->off_job;
    j->run.abort = &s->off_abort;
    atomic_store_explicit(&s->off_abort_at, j->deadline, memory_order_relaxed);
    if (!rs_server_stopping(s))
        atomic_store_explicit(&s->off_abort, 0, memory_order_relaxed);
    if (s->off_pool)
        rs_pool_run(s->off_pool, j->n, mc_step, &j->run);
    else
        for (size_t i = 0; i < j->n; i++)
            mc_step(&j->run, i, 0);
    atomic_store_explicit(&s->off_abort_at, INFINITY, memory_order_relaxed);
}

/* N runs of world w from drawn initial conditions (rs_montecarlo.h). The request is checked
 * whole first (counts, items, duration, the server's limits); the runs share the request's
 * compute budget, and any run's error is the request's, naming the run. On the loop they run
 * on the stepper thread, the request parked (counted as in flight) and world w held, so its
 * model stays; in-process on the worker pool. World w is read only. */
int op_monte_carlo(rs_server_t *s, const Robosim__V1__Request *rq, world_slot_t *w,
                   Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__MonteCarlo *mc = rq->monte_carlo;
    const rs_model_t *m = w->world->model;
    size_t n = mc->runs, ns = mc->n_samplers, nr = mc->n_returns;
    if (n == 0)
        return rs_fail(st, RS_EINVAL, "MonteCarlo asks for 0 runs; set runs >= 1");
    if (n > (size_t)s->cfg.max_batch)
        return rs_fail(st, RS_EEXHAUSTED,
                       "MonteCarlo of %zu runs is over this server's limit of %d (--max-batch); "
                       "split it over requests with first_run",
                       n, s->cfg.max_batch);
    if (ns == 0 || ns > MC_MAX_ITEMS)
        return rs_fail(st, ns ? RS_ERANGE : RS_EINVAL,
                       "MonteCarlo carries %zu samplers; give 1 to %d (e.g. item 'arm.theta0[0]', "
                       "dist 'uniform', a -3.14, b 3.14)",
                       ns, MC_MAX_ITEMS);
    if (nr == 0 || nr > MC_MAX_ITEMS)
        return rs_fail(st, nr ? RS_ERANGE : RS_EINVAL,
                       "MonteCarlo carries %zu return items; give 1 to %d (e.g. 'arm.theta1')",
                       nr, MC_MAX_ITEMS);
    Robosim__V1__Step dur = ROBOSIM__V1__STEP__INIT;
    dur.length_case = ROBOSIM__V1__STEP__LENGTH_DURATION;
    dur.duration = mc->duration;
    uint64_t nsteps = 0;
    int rc = rs_step_count(s, &dur, m->control_dt, &nsteps, st);
    if (rc < 0)
        return rc;
    if (nsteps > s->cfg.max_steps_per_request / n)
        return rs_fail(st, RS_EEXHAUSTED,
                       "MonteCarlo of %zu runs of %llu control steps asks for %.3g control steps "
                       "in all, over this server's limit of %llu per request "
                       "(--max-steps-per-request); ask for fewer runs or a shorter duration",
                       n, (unsigned long long)nsteps, (double)n * (double)nsteps,
                       (unsigned long long)s->cfg.max_steps_per_request);
    rs_mc_sampler_t samplers[MC_MAX_ITEMS];
    rs_mc_item_t items[MC_MAX_ITEMS];
    for (size_t j = 0; j < ns; j++) {
        const Robosim__V1__Sampler *sp = mc->samplers[j];
        if ((rc = rs_mc_parse_sampler(m, sp->item, sp->dist, sp->a, sp->b, &samplers[j], st)) < 0)
            return rc;
    }
    for (size_t k = 0; k < nr; k++)
        if ((rc = rs_mc_parse_item(m, mc->returns[k], &items[k], st)) < 0)
            return rc;
    uint64_t first = mc->first_run;
    if (first > UINT64_MAX - n)
        return rs_fail(st, RS_ERANGE, "first_run %llu + %zu runs overflows",
                       (unsigned long long)first, n);
    Robosim__V1__MonteCarloReply *reply = rs_arena_alloc(&s->arena, sizeof *reply);
    if (!reply)
        return OOM(st);
    rs_cont_t *c = s->cont;
    mc_job_t *job = c->off_job;
    if (!job) {
        if (!(job = mc_job_new(w->world, samplers, ns, items, nr, n, st)))
            return st->code;
        for (size_t i = 0; i < n; i++)
            rs_mc_draw(samplers, ns, mc->seed, first + i, job->initial + i * ns);
        job->run.seed = mc->seed + first;
        job->run.nsteps = nsteps;
        if (c->can_park && !rs_server_stopping(s)) {
            /* off the loop: the stepper runs it while its world is held (its model stays) */
            if (!(c->held = malloc(sizeof *c->held))) {
                mc_job_free(job);
                return OOM(st);
            }
            c->held[0] = w->id;
            c->nheld = 1;
            job->deadline = rs_clock() + fmax(0.0, s->cfg.max_request_seconds - c->used);
            c->off_run = mc_job_run;
            c->off_free = mc_job_free;
            c->off_job = job;
            c->off_done = 0;
            c->park = 1;
            return RS_PARKED;
        }
        job->run.abort = &s->abort;
        double deadline = rs_arm_budget(s);
        rs_pool_run(s->pool, n, mc_step, &job->run);
        rs_disarm_budget(s, deadline);
        c->off_job = job; /* the reply points into it: freed with the request's progress */
        c->off_free = mc_job_free;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (job->status[i].code == RS_EDEADLINE)
            rc = rs_fail(st, rs_server_stopping(s) ? RS_EUNAVAIL : RS_EDEADLINE,
                         "MonteCarlo of %zu runs of %llu control steps is over this server's "
                         "compute budget of %g s per request (--max-request-seconds)%s; split "
                         "the runs over requests with first_run",
                         n, (unsigned long long)nsteps, s->cfg.max_request_seconds,
                         rs_server_stopping(s) ? ", or the server is stopping" : "");
        else if (job->status[i].code < 0)
            rc = rs_fail(st, job->status[i].code, "run %llu: %s",
                         (unsigned long long)(first + i), job->status[i].message);
    }
    if (rc < 0)
        return rc;
    double *initial = job->initial, *final = job->final, *t_end = job->t_end;
    robosim__v1__monte_carlo_reply__init(reply);
    reply->runs = (uint32_t)n;
    reply->n_samplers = ns;
    reply->n_returns = nr;
    reply->samplers = rs_arena_alloc(&s->arena, ns * sizeof(char *));
    reply->returns = rs_arena_alloc(&s->arena, nr * sizeof(char *));
    if (!reply->samplers || !reply->returns)
        return OOM(st);
    for (size_t j = 0; j < ns; j++)
        if (!(reply->samplers[j] = rs_arena_strdup(&s->arena, mc->samplers[j]->item)))
            return OOM(st);
    for (size_t k = 0; k < nr; k++)
        if (!(reply->returns[k] = rs_arena_strdup(&s->arena, mc->returns[k])))
            return OOM(st);
    reply->n_initial = n * ns;
    reply->initial = initial;
    reply->n_final = n * nr;
    reply->final = final;
    reply->time = t_end[0];
    REPLY(rp, monte_carlo, MONTE_CARLO, reply);
    return 0;
}
