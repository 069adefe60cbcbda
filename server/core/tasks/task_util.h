/* What the task families (tasks/FAMILY.c) share: the values of a task's bound names, the world's
 * RNG, and the common shape of every reward: a distance term, a small effort penalty (commands
 * or torques normalised by their bounds, squared) and a success bonus on the step that
 * terminates the episode. No task terminates on failure: with negative per-step rewards an
 * early end would be a way out, so a bad state keeps costing until the episode is truncated. */
#ifndef RS_TASK_UTIL_H
#define RS_TASK_UTIL_H

#include "rs_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUCCESS_BONUS 10.0
#define EFFORT_WEIGHT 0.01
#define SAMPLE_TRIES 1000

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

/* A reward's text from its formula r and what follows it (units, success, truncation): a -v0
 * row's, and a -v1 row's, which is a tenth of its -v0 row's (reward_scale 0.1). */
#define TASK_REWARD(r, ends) "per control step: r = " r " " ends
#define TASK_REWARD_V1(r, ends) "per control step: r = 0.1 (" r ") " ends

/* The values of a task's names by their resolved index (rs_task_bind): state variable k,
 * sensor k, value i of parameter k (NAN past the values set, as rs_model_param). */
static inline double state_of(const rs_data_t *d, const rs_task_bind_t *b, int k)
{
    return d->x[b->index[k]];
}

static inline double sensor_of(const rs_data_t *d, const rs_task_bind_t *b, int k)
{
    return d->sensors[b->index[k]];
}

static inline double param_of(const rs_model_t *m, const rs_task_bind_t *b, int k, int i)
{
    const rs_entity_model_t *em = &m->ent[b->entity];
    int row = b->index[k];
    return i >= 0 && i < em->plen[row] ? em->p[em->robot->params[row].offset + i] : NAN;
}

/* Held command of actuator a of the task's entity. */
static inline double command_of(const rs_model_t *m, const rs_data_t *d, const rs_task_bind_t *b,
                                int a)
{
    return d->u[m->ent[b->entity].u_off + a];
}

static inline double uniform(rs_data_t *d, double lo, double hi)
{
    return lo + (hi - lo) * rs_data_uniform(d);
}

static inline double sq(double v) { return v * v; }

#endif
