/* The episode loop of task worlds (rs_task.h): binding a task's names to a model, agent steps
 * with their rewards and ends, and what the agent sees. Task worlds are created and reset in
 * world.c; the tasks themselves are rows in tasks/FAMILY.c. */
#include "rs_task.h"
#include "rs_task_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int name_index(const rs_var_desc_t *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return i;
    return -1;
}

int rs_task_bind(const rs_task_t *t, const rs_model_t *m, rs_task_bind_t *b, rs_status_t *st)
{
    static const char *const kinds[] = {"state variable", "sensor", "parameter", "event kind"};
    int e = rs_model_entity(m, t->entity);
    if (e < 0)
        return rs_fail(st, RS_EINTERNAL, "task '%s' drives entity '%s', which the world lacks",
                       t->name, t->entity);
    if (t->nnames > RS_TASK_MAX_NAMES)
        return rs_fail(st, RS_EINTERNAL, "task '%s' reads %d names, more than %d", t->name,
                       t->nnames, RS_TASK_MAX_NAMES);
    const rs_entity_model_t *em = &m->ent[e];
    const rs_robot_t *r = em->robot;
    rs_task_bind_t next = {.robot = r, .task = t, .entity = e};
    for (int k = 0; k < t->nnames; k++) {
        const rs_task_name_t *n = &t->names[k];
        int i = -1;
        switch (n->kind) {
        case RS_TASK_NAME_STATE:
            i = name_index(r->state, em->nx, n->name);
            next.index[k] = em->x_off + i;
            break;
        case RS_TASK_NAME_SENSOR:
            i = name_index(r->sensors, em->ns, n->name);
            next.index[k] = em->s_off + i;
            break;
        case RS_TASK_NAME_PARAM:
            for (int j = 0; j < r->np && i < 0; j++)
                if (strcmp(r->params[j].name, n->name) == 0)
                    i = j;
            next.index[k] = i;
            break;
        case RS_TASK_NAME_EVENT:
            for (int j = 0; j < r->nevent_kinds && i < 0; j++)
                if (strcmp(r->event_names[j], n->name) == 0)
                    i = j;
            next.index[k] = i;
            break;
        }
        if (i < 0)
            return rs_fail(st, RS_EINTERNAL, "task '%s' reads %s '%s', which robot '%s' lacks",
                           t->name, kinds[n->kind], n->name, r->kind);
    }
    *b = next;
    return 0;
}

/* The world's task binding in *out: w->task_bind, or, if the model's entity has another robot
 * than the one it was resolved for (never, in practice: a task world's preset is fixed, and
 * SetParams and snapshots keep it), the names resolved again into *scratch. 0 or an error. */
static int task_bound(const rs_world_t *w, rs_task_bind_t *scratch, const rs_task_bind_t **out,
                      rs_status_t *st)
{
    const rs_task_bind_t *b = &w->task_bind;
    const rs_model_t *m = w->model;
    *out = scratch;
    if (b->robot && b->entity < m->nentities && m->ent[b->entity].robot == b->robot) {
        *out = b;
        return 0;
    }
    return rs_task_bind(w->task, m, scratch, st);
}

uint64_t rs_task_episode_limit(const rs_task_t *t, const rs_model_t *m)
{
    return m->max_episode_steps > 0 ? (uint64_t)m->max_episode_steps : t->max_episode_steps;
}

int rs_task_check_model(const rs_task_t *t, const rs_model_t *m, rs_status_t *st)
{
    int e = rs_model_entity(m, t->entity);
    if (e < 0)
        return rs_fail(st, RS_EINTERNAL, "task '%s' drives entity '%s', which the world lacks",
                       t->name, t->entity);
    int rc = t->validate ? t->validate(m, e, st) : 0;
    return rc < 0 ? rc : rs_task_doc_validate(t, m, st);
}

int rs_task_check_action(const rs_task_t *t, const double *action, size_t n, rs_status_t *st)
{
    if (n != (size_t)t->nact)
        return rs_fail(st, RS_EINVAL, "task '%s' takes an action of %d value%s, got %zu", t->name,
                       t->nact, t->nact == 1 ? "" : "s", n);
    for (int i = 0; i < t->nact; i++) {
        const rs_var_desc_t *v = &t->act[i];
        if (!isfinite(action[i]))
            return rs_fail(st, RS_EINVAL, "action[%d] (%s) of task '%s' is not finite", i, v->name,
                           t->name);
        if (action[i] < v->lower || action[i] > v->upper)
            return rs_fail(st, RS_ERANGE, "action[%d] (%s) = %g is outside [%g, %g] %s", i,
                           v->name, action[i], v->lower, v->upper, v->unit);
    }
    return 0;
}

int rs_world_task_step(rs_world_t *w, const double *action, size_t n, uint64_t nsteps,
                       rs_status_t *st)
{
    uint64_t done = 0;
    int rc = rs_world_task_step_until(w, action, n, nsteps, INFINITY, 0, &done, st);
    const rs_data_t *d = w->data;
    if (rc == 0 && done < nsteps && d->task[RS_TASK_TERMINATED] == 0.0 &&
        d->task[RS_TASK_TRUNCATED] == 0.0)
        rc = rs_fail(st, RS_EDEADLINE, "interrupted at t = %.9g s after %llu of %llu control steps",
                     d->t, (unsigned long long)done, (unsigned long long)nsteps);
    return rc;
}

int rs_world_task_step_until(rs_world_t *w, const double *action, size_t n, uint64_t nsteps,
                             double yield_at, int resume, uint64_t *done, rs_status_t *st)
{
    const rs_task_t *t = w->task;
    rs_data_t *d = w->data;
    const rs_model_t *m = w->model;
    *done = 0;
    if (!t)
        return rs_fail(st, RS_EPRECOND,
                       "this world runs no task, so a Step takes commands, not an action; create "
                       "the world with CreateWorld.task to use actions");
    if (!resume && (d->task[RS_TASK_TERMINATED] != 0.0 || d->task[RS_TASK_TRUNCATED] != 0.0))
        return rs_fail(st, RS_EPRECOND,
                       "the episode of task '%s' ended (%s) after %llu steps; Reset starts a new "
                       "one",
                       t->name, d->task[RS_TASK_TERMINATED] != 0.0 ? "terminated" : "truncated",
                       (unsigned long long)d->episode_steps);
    rs_task_bind_t scratch;
    const rs_task_bind_t *b;
    int bc = task_bound(w, &scratch, &b, st);
    if (bc < 0)
        return bc;
    int e = b->entity;
    if (n && !resume) {
        int rc = rs_task_check_action(t, action, n, st);
        if (rc < 0)
            return rc;
        double u[RS_TASK_MAX_ACT];
        if (t->cmd) { /* normalized: [lower, upper] of act onto cmd's range */
            for (size_t i = 0; i < n; i++)
                u[i] = t->cmd[i].lower + (action[i] - t->act[i].lower) /
                                             (t->act[i].upper - t->act[i].lower) *
                                             (t->cmd[i].upper - t->cmd[i].lower);
            action = u;
        }
        /* an action may drive the first actuators only (MobileAlign-v0: the wheels); the
         * others keep their held commands */
        const rs_entity_model_t *em = &m->ent[e];
        double full[RS_MAX_ACTUATORS]; /* em->nu <= RS_MAX_ACTUATORS: rs_robot_check */
        for (int i = 0; i < em->nu && i < RS_MAX_ACTUATORS; i++)
            full[i] = (size_t)i < n ? action[i] : d->u[em->u_off + i];
        if ((rc = rs_set_commands(m, d, e, full, (size_t)em->nu, st)) < 0)
            return rc;
    }
    if (!resume) {
        d->nevents = 0;
        d->events_dropped = 0;
    }
    /* a resumed Step sums on from where it stopped, so slicing leaves the sum bit-identical */
    double reward = resume ? d->task[RS_TASK_REWARD] : 0.0;
    uint64_t limit = rs_task_episode_limit(t, m);
    int ended = 0;
    uint64_t k = 0;
    for (; k < nsteps; k++) {
        int first = d->nevents, terminated = 0;
        double info[RS_TASK_MAX_INFO] = {0};
        uint64_t one = 0;
        d->digest_later = 1; /* folded in below, with the task's evaluation */
        int rc = rs_step_until(m, d, 1, INFINITY, &one, st);
        d->digest_later = 0;
        if (rc < 0 || one == 0) { /* failed, or interrupted (at the boundary: one == 0) */
            d->task[RS_TASK_REWARD] = reward;
            *done = k;
            return rc;
        }
        d->episode_steps++;
        double r = 0.0;
        if ((rc = t->evaluate(m, d, b, first, &r, &terminated, info, st)) < 0) {
            /* a declared value is not finite: the control step stands (state, counts, digest),
             * its reward, flags and info figures are not taken, and the Step fails */
            if (d->episode_steps >= limit)
                d->task[RS_TASK_TRUNCATED] = 1.0;
            rs_digest_step(m, d);
            d->task[RS_TASK_REWARD] = reward;
            *done = k + 1;
            return rc;
        }
        reward += t->reward_scale > 0.0 ? t->reward_scale * r : r;
        memcpy(d->task + RS_TASK_INFO, info, sizeof info);
        if (terminated)
            d->task[RS_TASK_TERMINATED] = 1.0;
        else if (d->episode_steps >= limit)
            d->task[RS_TASK_TRUNCATED] = 1.0;
        rs_digest_step(m, d);
        if ((ended = terminated || d->task[RS_TASK_TRUNCATED] != 0.0)) {
            k++;
            break;
        }
        if (yield_at < INFINITY && k + 1 < nsteps && rs_clock() >= yield_at) {
            k++;
            break;
        }
    }
    *done = k;
    d->task[RS_TASK_REWARD] = reward;
    if (ended || k == nsteps) { /* the Step is over: its reward counts in the return */
        double obs[RS_TASK_MAX_OBS];
        int rc = t->observe(m, d, b, obs, st); /* the observation it returns must be finite */
        if (rc < 0)
            return rc;
        d->task[RS_TASK_RETURN] += reward;
    }
    return 0;
}

int rs_world_task_view(const rs_world_t *w, rs_task_view_t *out, rs_status_t *st)
{
    const rs_task_t *t = w->task;
    if (!t)
        return rs_fail(st, RS_EPRECOND, "this world runs no task");
    rs_task_bind_t scratch;
    const rs_task_bind_t *b;
    int bc = task_bound(w, &scratch, &b, st);
    if (bc < 0)
        return bc;
    const rs_data_t *d = w->data;
    memset(out, 0, sizeof *out);
    out->nobs = t->nobs;
    t->observe(w->model, d, b, out->obs, NULL); /* a value not finite shows as it is: the
                                                   Step or Reset that made it failed */
    for (int i = 0; t->obs_scale && i < t->nobs; i++)
        out->obs[i] = fmin(fmax(out->obs[i] / t->obs_scale[i], t->obs[i].lower), t->obs[i].upper);
    out->reward = d->task[RS_TASK_REWARD];
    out->terminated = d->task[RS_TASK_TERMINATED] != 0.0;
    out->truncated = d->task[RS_TASK_TRUNCATED] != 0.0;
    out->episode_return = d->task[RS_TASK_RETURN];
    out->ninfo = t->ninfo;
    out->info_names = t->info;
    memcpy(out->info, d->task + RS_TASK_INFO, sizeof out->info);
    return 0;
}
