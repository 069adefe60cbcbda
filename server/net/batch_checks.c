/* A StepBatch's checks as a whole, made alike by the handler (handlers_batch.c) and by a
 * shard splitting a batch over several shards (shard_batch.c), so both refuse the same
 * batches with the same words. */
#include "handlers.h"

#include <stdio.h>

/* A part's places: none, or one per world. */
int rs_batch_places_ok(size_t nplaces, size_t n, rs_status_t *st)
{
    if (nplaces && nplaces != n)
        return rs_fail(st, RS_EINVAL,
                       "StepBatch has %zu places for %zu worlds; leave places empty (it is for "
                       "the parts of a batch the server splits over its shards)",
                       nplaces, n);
    return 0;
}

/* The batch's size within limits: not empty, not over --max-batch. `what` names the part. */
int rs_batch_size_ok(const rs_server_t *s, size_t n, const char *what, rs_status_t *st)
{
    if (n == 0)
        return rs_fail(st, RS_EINVAL, "StepBatch carries no %s; add one per world", what);
    if (n > (size_t)s->cfg.max_batch)
        return rs_fail(st, RS_EEXHAUSTED,
                       "StepBatch of %zu %s is over this server's limit of %d (--max-batch); "
                       "split it",
                       n, what, s->cfg.max_batch);
    return 0;
}

/* The whole batch may ask for as many control steps as one Step may: a request must not hold
 * the server for hours. */
int rs_batch_total_ok(const rs_server_t *s, uint64_t total, rs_status_t *st)
{
    if (total <= s->cfg.max_steps_per_request)
        return 0;
    return rs_fail(st, RS_EEXHAUSTED,
                   "the batch asks for %llu control steps in all, over this server's limit of "
                   "%llu per request (--max-steps-per-request); split it",
                   (unsigned long long)total, (unsigned long long)s->cfg.max_steps_per_request);
}

/* The request's lengths against the number of worlds n, before anything is looked up. */
int rs_batch_arrays_check(rs_server_t *s, const Robosim__V1__BatchArrays *in, size_t n,
                          rs_status_t *st)
{
    int rc = rs_batch_size_ok(s, n, "world_ids", st);
    if (rc < 0 || (rc = rs_batch_places_ok(in->n_places, n, st)) < 0)
        return rc;
    if (in->n_tokens != n && in->n_tokens != 0)
        return rs_fail(st, RS_EINVAL,
                       "BatchArrays has %zu tokens for %zu worlds; give one per world, in "
                       "world_ids order",
                       in->n_tokens, n);
    if (in->n_commands && in->n_actions)
        return rs_fail(st, RS_EINVAL,
                       "BatchArrays sets both commands and actions; set commands for plain "
                       "worlds or actions for task worlds");
    if ((in->n_reset && in->n_reset != n) || (in->n_reset_seeds && in->n_reset_seeds != n))
        return rs_fail(st, RS_EINVAL,
                       "BatchArrays has %zu reset flags and %zu reset seeds for %zu worlds; give "
                       "one per world, in world_ids order, or none",
                       in->n_reset, in->n_reset_seeds, n);
    return rs_batch_total_ok(s, (in->steps ? in->steps : 1) * n, st);
}

/* The commands or actions of n worlds of `preset` and `task` (NULL: none) with nu actuators
 * and na action values each: n times as many, or none. */
int rs_batch_arrays_fit(const Robosim__V1__BatchArrays *in, size_t n, const char *preset,
                        const char *task, size_t nu, size_t na, rs_status_t *st)
{
    if (in->n_commands && in->n_commands != n * nu)
        return rs_fail(st, RS_EINVAL,
                       "BatchArrays.commands holds %zu values; %zu worlds of preset '%s' with "
                       "%zu actuators each take %zu (or none, to hold the commands)",
                       in->n_commands, n, preset, nu, n * nu);
    if (in->n_actions && !task)
        return rs_fail(st, RS_EINVAL,
                       "BatchArrays.actions is set, but the batch's worlds (preset '%s') run "
                       "no task; drive them with commands",
                       preset);
    if (in->n_actions && in->n_actions != n * na)
        return rs_fail(st, RS_EINVAL,
                       "BatchArrays.actions holds %zu values; %zu worlds of task '%s' with "
                       "%zu action values each take %zu (or none, to hold the commands)",
                       in->n_actions, n, task, na, n * na);
    return 0;
}

/* World `id` at place `at`, of preset and task (NULL: none), is not like the batch's first
 * world like_id: its INVALID_ARGUMENT. */
int rs_batch_not_like(rs_status_t *st, size_t at, uint64_t id, const char *preset, const char *task,
                      uint64_t like_id, const char *like_preset, const char *like_task)
{
    return rs_fail(st, RS_EINVAL,
                   "world_ids[%zu]: world %llu (preset '%s'%s%s) is not like the batch's first "
                   "world %llu (preset '%s'%s%s); one BatchArrays takes worlds of one shape",
                   at, (unsigned long long)id, preset, task ? ", task " : "", task ? task : "",
                   (unsigned long long)like_id, like_preset, like_task ? ", task " : "",
                   like_task ? like_task : "");
}

/* The reply's sizes and counts for n worlds of nx state, ns sensor, nobs observation and
 * ninfo info values (the info keys, nkeys of them, when nobs). */
void rs_batch_arrays_sizes(Robosim__V1__BatchArraysReply *out, size_t n, size_t nx, size_t ns,
                           size_t nobs, size_t ninfo, char **keys, size_t nkeys)
{
    out->state_size = (uint32_t)nx;
    out->sensor_size = (uint32_t)ns;
    out->observation_size = (uint32_t)nobs;
    out->n_codes = out->n_time = out->n_step_count = out->n_events = n;
    out->n_state = n * nx;
    out->n_sensors = n * ns;
    if (nobs) {
        out->n_observation = n * nobs;
        out->n_reward = out->n_terminated = out->n_truncated = n;
        out->info_size = (uint32_t)ninfo;
        out->n_info_keys = nkeys;
        out->info_keys = keys;
        out->n_info = n * ninfo;
    }
}
