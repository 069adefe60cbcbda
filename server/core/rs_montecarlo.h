/* Monte Carlo runs of a model (Klamp't's monteCarloSim): named initial conditions drawn from
 * distributions, each run from a fresh reset, the named items read at the end. The core part,
 * usable without the network; the server runs the runs on its worker pool (dispatch.c). */
#ifndef RS_MONTECARLO_H
#define RS_MONTECARLO_H

#include "rs_core.h"

enum { RS_MC_UNIFORM, RS_MC_NORMAL };

/* One sampled initial-condition parameter: element `index` of parameter `param` (an index in
 * the robot's parameter table) of entity `entity`. */
typedef struct rs_mc_sampler {
    int entity, param, index;
    int dist;    /* RS_MC_UNIFORM: a + (b - a) u; RS_MC_NORMAL: mean a, deviation b */
    double a, b;
} rs_mc_sampler_t;

enum { RS_MC_STATE, RS_MC_SENSOR, RS_MC_TASK_VALUE };

/* One item read at the end of a run: state variable (sensor RS_MC_STATE) or sensor
 * (RS_MC_SENSOR) `index` of entity `entity`, or (RS_MC_TASK_VALUE, entity -1) the task's value
 * d->task[index]: the episode's return, terminated or truncated. */
typedef struct rs_mc_item {
    int entity, sensor, index;
} rs_mc_item_t;

/* What every run of a world carries from it: its model, its commands and schedules (a copy of
 * its data, `base`), and its task (the episode each run starts). */
typedef struct rs_mc_source {
    const rs_model_t *m;
    const double *u;       /* without base: the commands (m->nu values) */
    rs_data_t *base;       /* owned: a copy of the world's data, or NULL */
    const rs_task_t *task; /* or NULL */
    rs_task_bind_t bind;
} rs_mc_source_t;

/* Copy what a run of world w needs into *src (its commands, schedules and task; the model is
 * w's, which must outlive src). 0, or an error with *src holding nothing to release. */
int rs_mc_source_init(rs_mc_source_t *src, const rs_world_t *w, rs_status_t *st);

/* Free what rs_mc_source_init copied (NULL-safe). */
void rs_mc_source_release(rs_mc_source_t *src);

/* Parse "entity.parameter" or "entity.parameter[k]" and its distribution ("uniform" or
 * "normal", a, b) for model m. Returns 0, or RS_ENOTFOUND / RS_EINVAL / RS_ERANGE with a
 * message naming the item. */
int rs_mc_parse_sampler(const rs_model_t *m, const char *item, const char *dist, double a,
                        double b, rs_mc_sampler_t *out, rs_status_t *st);

/* Parse "entity.name" of a state variable (first) or a sensor, or "task.return",
 * "task.terminated", "task.truncated". 0 or RS_ENOTFOUND. */
int rs_mc_parse_item(const rs_model_t *m, const char *item, rs_mc_item_t *out, rs_status_t *st);

/* Run `run`'s draws for the ns samplers into values[ns]: a function of (seed, run) only. */
void rs_mc_draw(const rs_mc_sampler_t *s, size_t ns, uint64_t seed, uint64_t run,
                double *values);

/* One run: data for m reset with `reset_seed`, the commands u (m->nu values), the sampled
 * initial conditions `values`, nsteps control steps (interrupted by *abort when not NULL: then
 * RS_EDEADLINE), and the nr items into out[nr]; *t_end the final time. Allocates and frees
 * its own data. Returns 0 or an error (a draw out of its parameter's bounds: RS_ERANGE). */
int rs_mc_run(const rs_model_t *m, const double *u, const rs_mc_sampler_t *s, size_t ns,
              const double *values, uint64_t reset_seed, uint64_t nsteps,
              const atomic_int *abort, const rs_mc_item_t *items, size_t nr, double *out,
              double *t_end, rs_status_t *st);

/* rs_mc_run for a source: each run starts with the source's commands and schedules, and on a
 * task world a new episode (the task's start sampled from reset_seed after the drawn initial
 * conditions), stepped with the commands held until nsteps or the episode's end. A task item
 * on a world without a task: RS_EPRECOND. */
int rs_mc_run_from(const rs_mc_source_t *src, const rs_mc_sampler_t *s, size_t ns,
                   const double *values, uint64_t reset_seed, uint64_t nsteps,
                   const atomic_int *abort, const rs_mc_item_t *items, size_t nr, double *out,
                   double *t_end, rs_status_t *st);

#endif
