/* Worlds: a shared model and its data (rs_core.h), created, re-parameterised (copy on write),
 * reset and destroyed as one. */
#include "rs_data.h"
#include "rs_prefetch.h"
#include "rs_integrator.h"
#include "rs_randomize.h"
#include "rs_robot.h"
#include "rs_task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

rs_world_t *rs_world_new(const char *preset, const rs_param_t *params, size_t nparams,
                         uint64_t seed, rs_status_t *st)
{
    rs_world_t *w = calloc(1, sizeof *w);
    if (!w) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for a world");
        return NULL;
    }
    rs_model_t *built = malloc(sizeof *built);
    if (!built) {
        free(w);
        rs_fail(st, RS_EEXHAUSTED, "out of memory for a model");
        return NULL;
    }
    int rc = rs_model_build(built, preset, params, nparams, st);
    if (rc == 0)
        w->model = rs_model_share(built, st);
    free(built);
    if (rc < 0 || !w->model || !(w->data = rs_data_new(w->model, seed, st)))
        rs_world_destroy(&w);
    return w;
}

void rs_world_destroy(rs_world_t **pw)
{
    rs_world_t *w = *pw;
    if (!w)
        return;
    rs_data_destroy(&w->data);
    rs_model_release(&w->model);
    rs_randomize_free(&w->randomize);
    free(w);
    *pw = NULL;
}

static int set_params_checked(const rs_world_t *w, rs_model_t *next, const rs_param_t *params,
                              size_t nparams, int live, rs_status_t *st);

/* rs_world_set_params; live: the new parameters must fit the live state (a SetParams), else
 * only the run variables (a reset with randomized parameters, which then re-initialises the
 * state under them) */
static int world_set_params(rs_world_t *w, const rs_param_t *params, size_t nparams, int live,
                            rs_status_t *st)
{
    /* copy on write: the new parameters make a new model, shared with any world that has the
     * same; the old one stays with the worlds that still use it */
    rs_model_t *next = malloc(sizeof *next);
    if (!next)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory for a model");
    *next = *w->model;
    int rc = set_params_checked(w, next, params, nparams, live, st);
    const rs_model_t *shared = rc == 0 ? rs_model_share(next, st) : NULL;
    free(next);
    if (rc == 0 && !shared)
        rc = RS_EEXHAUSTED;
    if (rc == 0 && (rc = rs_data_model_changed(shared, w->data, st)) == 0) {
        rs_model_release(&w->model);
        w->model = shared;
        return 0;
    }
    rs_model_release(&shared);
    return rc;
}

int rs_world_set_params(rs_world_t *w, const rs_param_t *params, size_t nparams, rs_status_t *st)
{
    return world_set_params(w, params, nparams, 1, st);
}

/* rs_model_set_params on `next`, then the checks the world's task and state make of it. */
static int set_params_checked(const rs_world_t *w, rs_model_t *next, const rs_param_t *params,
                              size_t nparams, int live, rs_status_t *st)
{
    int rc = rs_model_set_params(next, params, nparams, st);
    if (rc < 0)
        return rc;
    if (w->task && (rc = rs_task_check_model(w->task, next, st)) < 0)
        return rc; /* e.g. the reach tasks' PID mode */
    /* the robots' run variables must still fit the new parameters (a diff-drive robot blocked
     * by obstacle 3 keeps it), or the world's state would be one no snapshot may hold */
    for (int e = 0; e < next->nentities; e++) {
        rs_status_t why;
        rs_status_clear(&why);
        if (rs_robot_check_data(&next->ent[e], &w->data->ent[e], &why) < 0)
            return rs_fail(st, RS_EPRECOND, "the new parameters do not fit the world's state: %s",
                           why.message);
    }
    /* and the continuous state: no body left inside another, past a stop, unassemblable, or
     * in a compliant layer holding more energy than before (the robots' admissible) */
    for (int e = 0; e < next->nentities && live; e++) {
        const rs_robot_t *r = next->ent[e].robot;
        if (r->admissible &&
            (rc = r->admissible(&next->ent[e], &w->model->ent[e], &w->data->ent[e],
                                w->data->x + next->ent[e].x_off, st)) < 0)
            return rc;
    }
    return 0;
}

/* Ask the caches for the memory a control step of w reads, one link of its chain of pointers
 * per stage: the world; its data's and model's heads; the data's block (head, entities, vectors,
 * schedules), the model's entities and the integrator's fields; the integrator's vectors and
 * what it allocated apart (rs_integrator_prefetch: its guards' block, ARKODE's memory and
 * method table). */
void rs_world_prefetch_stage(const rs_world_t *w, int stage)
{
    const rs_data_t *d;
    const char *p, *end;
    switch (stage) {
    case 4: /* the world */
        __builtin_prefetch(w);
        __builtin_prefetch((const char *)(w + 1) - 1);
        break;
    case 3: /* the fields of its data and model that stage 2 reads, and their heads */
        d = w->data;
        __builtin_prefetch(d);
        __builtin_prefetch(&d->block_bytes);
        __builtin_prefetch(&d->integ);
        __builtin_prefetch(w->model);
        __builtin_prefetch(&w->model->nentities);
        break;
    case 2: /* the data block, the model's entities and the integrator's fields */
        d = w->data;
        rs_prefetch_range(d, d->block_bytes, 0);
        /* one line in four of the entities' models: their parameter storage is large and a
         * robot reads a few values of it */
        end = (const char *)&w->model->ent[w->model->nentities];
        for (p = (const char *)w->model; p < end; p += 256)
            __builtin_prefetch(p);
        rs_integrator_prefetch_head(d->integ);
        break;
    case 1: /* the integrator's vectors and ARKODE's memory */
        rs_integrator_prefetch(w->data->integ);
        break;
    default:
        break;
    }
}

void rs_world_prefetch(const rs_world_t *w)
{
    for (int k = RS_WORLD_PREFETCH_STAGES - 1; k >= 1; k--)
        rs_world_prefetch_stage(w, k);
}

rs_world_t *rs_world_new_task(const char *task, const char *preset, const rs_param_t *params,
                              size_t nparams, uint64_t seed, rs_status_t *st)
{
    const rs_task_t *t = rs_task_find(task);
    if (!t) {
        char names[400] = "";
        for (const char *const *n = rs_task_names(); *n; n++)
            rs_join(names, sizeof names, "%s", *n);
        rs_fail(st, RS_ENOTFOUND, "unknown task '%s' (tasks: %s)", task ? task : "", names);
        return NULL;
    }
    return rs_world_new_with_task(t, preset, params, nparams, seed, st);
}

rs_world_t *rs_world_new_with_task(const rs_task_t *t, const char *preset,
                                   const rs_param_t *params, size_t nparams, uint64_t seed,
                                   rs_status_t *st)
{
    if (preset && preset[0] && strcmp(preset, t->preset) != 0) {
        rs_fail(st, RS_EINVAL,
                "task '%s' runs on preset '%s', not '%s'; leave the preset empty or name '%s'",
                t->name, t->preset, preset, t->preset);
        return NULL;
    }
    /* the task's defaults first, the client's overrides after them (the last value wins) */
    size_t n = (size_t)t->nparams + nparams;
    rs_param_t *all = calloc(n ? n : 1, sizeof *all);
    if (!all) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for the parameters of a task world");
        return NULL;
    }
    for (int i = 0; i < t->nparams; i++)
        all[i] = (rs_param_t){t->params[i].entity, t->params[i].name, t->params[i].values,
                              (size_t)t->params[i].n};
    for (size_t i = 0; i < nparams; i++)
        all[t->nparams + i] = params[i];
    rs_world_t *w = rs_world_new(t->preset, all, n, seed, st);
    free(all);
    if (!w)
        return NULL;
    w->task = t;
    if (rs_task_check_model(t, w->model, st) < 0 ||
        rs_task_bind(t, w->model, &w->task_bind, st) < 0 || rs_world_reset(w, seed, st) < 0)
        rs_world_destroy(&w);
    return w;
}

int rs_world_reset(rs_world_t *w, uint64_t seed, rs_status_t *st)
{
    int rc;
    /* randomized parameters: the model rebuilt with this seed's draws, checked against the
     * data reset under the old one, then the reset proper under the new one */
    if (w->randomize) {
        const rs_param_t *drawn;
        size_t n = rs_randomize_draw(w->randomize, w->model, seed, &drawn);
        if ((rc = rs_reset(w->model, w->data, seed, st)) < 0 ||
            (rc = world_set_params(w, drawn, n, 0, st)) < 0)
            return rc;
    }
    rc = rs_reset(w->model, w->data, seed, st);
    if (rc < 0 || !w->task)
        return rc;
    return rs_world_start_episode(w, st);
}

int rs_world_start_episode(rs_world_t *w, rs_status_t *st)
{
    int rc;
    rs_data_t *d = w->data;
    memset(d->task, 0, sizeof d->task);
    d->episode_steps = 0;
    int bc = rs_task_bind(w->task, w->model, &w->task_bind, st);
    if (bc < 0)
        return bc;
    if ((rc = w->task->reset(w->model, d, &w->task_bind, st)) < 0)
        return rc;
    rs_digest_start(w->model, d); /* the episode's start and targets are part of its state */
    return 0;
}
