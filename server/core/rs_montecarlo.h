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

/* One item read at the end of a run: state variable or sensor `index` of entity `entity`. */
typedef struct rs_mc_item {
    int entity, sensor, index;
} rs_mc_item_t;

/* Parse "entity.parameter" or "entity.parameter[k]" and its distribution ("uniform" or
 * "normal", a, b) for model m. Returns 0, or RS_ENOTFOUND / RS_EINVAL / RS_ERANGE with a
 * message naming the item. */
int rs_mc_parse_sampler(const rs_model_t *m, const char *item, const char *dist, double a,
                        double b, rs_mc_sampler_t *out, rs_status_t *st);

/* Parse "entity.name" of a state variable (first) or a sensor. 0 or RS_ENOTFOUND. */
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

#endif
