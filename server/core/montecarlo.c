/* Monte Carlo runs (Klamp't's monteCarloSim); see rs_montecarlo.h. */
#include "rs_montecarlo.h"
#include "rs_robot.h"
#include "rs_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int rs_mc_source_init(rs_mc_source_t *src, const rs_world_t *w, rs_status_t *st)
{
    *src = (rs_mc_source_t){.m = w->model, .task = w->task};
    if (!(src->base = rs_data_new(w->model, 0, st)))
        return st->code;
    int rc = rs_data_copy(w->model, src->base, w->data, st);
    if (rc < 0) {
        rs_data_destroy(&src->base);
        return rc;
    }
    if (w->task)
        src->bind = w->task_bind;
    return 0;
}

void rs_mc_source_release(rs_mc_source_t *src)
{
    if (src)
        rs_data_destroy(&src->base);
}

int rs_mc_run(const rs_model_t *m, const double *u, const rs_mc_sampler_t *s, size_t ns,
              const double *values, uint64_t reset_seed, uint64_t nsteps,
              const atomic_int *abort, const rs_mc_item_t *items, size_t nr, double *out,
              double *t_end, rs_status_t *st)
{
    rs_mc_source_t src = {.m = m, .u = u};
    return rs_mc_run_from(&src, s, ns, values, reset_seed, nsteps, abort, items, nr, out, t_end,
                          st);
}

/* Give d the source's commands and schedules (a reset cleared them). */
static int carry_commands(const rs_mc_source_t *src, rs_data_t *d, rs_status_t *st)
{
    const rs_model_t *m = src->m;
    const double *u = src->base ? src->base->u : src->u;
    int rc = 0;
    if (m->nu && (rc = rs_set_all_commands(m, d, u, st)) < 0)
        return rc;
    for (int e = 0; src->base && e < m->nentities; e++)
        for (int a = 0; a < m->ent[e].nu; a++) {
            const rs_schedule_t *sc = &src->base->sched[m->ent[e].u_off + a];
            if (sc->n > 0 && (rc = rs_set_schedule(m, d, e, a, sc->t, sc->v, (size_t)sc->n, st)) < 0)
                return rc;
        }
    return 0;
}

int rs_mc_run_from(const rs_mc_source_t *src, const rs_mc_sampler_t *s, size_t ns,
                   const double *values, uint64_t reset_seed, uint64_t nsteps,
                   const atomic_int *abort, const rs_mc_item_t *items, size_t nr, double *out,
                   double *t_end, rs_status_t *st)
{
    const rs_model_t *m = src->m;
    for (size_t k = 0; k < nr; k++)
        if (items[k].sensor == RS_MC_TASK_VALUE && !src->task)
            return rs_fail(st, RS_EPRECOND, "return item 'task.*' needs a world that runs a task "
                                            "(CreateWorld.task)");
    /* the samplers of one parameter make one rs_param_t: the model's values with the drawn
     * elements replaced */
    rs_param_t *init = calloc(ns ? ns : 1, sizeof *init);
    double *vals = calloc((ns ? ns : 1) * RS_MAX_PARAM_VALUES, sizeof *vals);
    int *owner = calloc(ns ? ns : 1, sizeof *owner);
    rs_data_t *d = NULL;
    int rc = 0;
    if (!init || !vals || !owner) {
        rc = rs_fail(st, RS_EEXHAUSTED, "out of memory for a Monte Carlo run");
        goto out;
    }
    size_t np = 0;
    for (size_t j = 0; j < ns; j++) {
        const rs_entity_model_t *em = &m->ent[s[j].entity];
        const rs_param_desc_t *pd = &em->robot->params[s[j].param];
        size_t g = 0;
        while (g < np && owner[g] != s[j].entity * RS_MAX_PARAMS + s[j].param)
            g++;
        if (g == np) {
            owner[np] = s[j].entity * RS_MAX_PARAMS + s[j].param;
            memcpy(vals + np * RS_MAX_PARAM_VALUES, em->p + pd->offset,
                   (size_t)em->plen[s[j].param] * sizeof *vals);
            init[np] = (rs_param_t){em->name, pd->name, vals + np * RS_MAX_PARAM_VALUES,
                                    (size_t)em->plen[s[j].param]};
            np++;
        }
        vals[g * RS_MAX_PARAM_VALUES + s[j].index] = values[j];
    }
    if (!(d = rs_data_new(m, reset_seed, st))) {
        rc = st->code;
        goto out;
    }
    if ((rc = rs_reset_initial(m, d, init, np, st)) < 0 || (rc = carry_commands(src, d, st)) < 0)
        goto out;
    rs_data_set_abort(d, abort);
    uint64_t done = 0;
    int ended = 0;
    if (src->task) { /* a new episode from this start, then its steps, holding the commands */
        rs_world_t w = {.model = m, .data = d, .task = src->task, .task_bind = src->bind};
        if ((rc = rs_world_start_episode(&w, st)) < 0)
            goto out;
        rc = rs_world_task_step_until(&w, NULL, 0, nsteps, INFINITY, 0, &done, st);
        ended = d->task[RS_TASK_TERMINATED] != 0.0 || d->task[RS_TASK_TRUNCATED] != 0.0;
    } else {
        rc = rs_step_until(m, d, nsteps, INFINITY, &done, st);
    }
    if (rc == 0 && done < nsteps && !ended)
        rc = rs_fail(st, RS_EDEADLINE, "interrupted after %llu of %llu control steps",
                     (unsigned long long)done, (unsigned long long)nsteps);
    if (rc < 0)
        goto out;
    for (size_t k = 0; k < nr; k++) {
        const rs_entity_model_t *em = &m->ent[items[k].entity < 0 ? 0 : items[k].entity];
        if (items[k].sensor == RS_MC_TASK_VALUE) {
            out[k] = d->task[items[k].index];
            continue;
        }
        out[k] = items[k].sensor ? d->sensors[em->s_off + items[k].index]
                                 : d->x[em->x_off + items[k].index];
    }
    *t_end = d->t;
out:
    rs_data_destroy(&d);
    free(init);
    free(vals);
    free(owner);
    return rc;
}
