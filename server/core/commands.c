/* Commands: checking and holding actuator commands, actuator schedules, task-space targets
 * and the workspace questions the robots answer. A bad command changes nothing. */
#include "rs_data.h"
#include "rs_robot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rs_check_commands(const rs_model_t *m, int e, const double *u, size_t n, rs_status_t *st)
{
    if (e < 0 || e >= m->nentities)
        return rs_fail(st, RS_ENOTFOUND, "no entity %d", e);
    const rs_entity_model_t *em = &m->ent[e];
    const rs_robot_t *r = em->robot;
    if ((int)n != em->nu)
        return rs_fail(st, RS_EINVAL, "entity '%s' (%s) takes %d actuator value%s, got %zu",
                       em->name, r->kind, em->nu, em->nu == 1 ? "" : "s", n);
    for (size_t a = 0; a < n; a++) {
        if (!isfinite(u[a]))
            return rs_fail(st, RS_EINVAL, "actuator '%s.%s' command is not finite", em->name,
                           r->actuators[a].name);
        if (u[a] < r->actuators[a].lower || u[a] > r->actuators[a].upper)
            return rs_fail(st, RS_ERANGE, "actuator '%s.%s' command %g is outside [%g, %g] %s",
                           em->name, r->actuators[a].name, u[a], r->actuators[a].lower,
                           r->actuators[a].upper, r->actuators[a].unit);
    }
    return 0;
}

/* Entity e's held commands become u (checked), its schedules go. */
static void apply_commands(const rs_model_t *m, rs_data_t *d, int e, const double *u)
{
    const rs_entity_model_t *em = &m->ent[e];
    memcpy(d->u + em->u_off, u, (size_t)em->nu * sizeof(double));
    for (int a = 0; a < em->nu; a++)
        rs_schedule_clear(&d->sched[em->u_off + a]);
    d->nsched[e] = 0;
    d->dirty = 1;
}

int rs_set_commands(const rs_model_t *m, rs_data_t *d, int e, const double *u, size_t n,
                    rs_status_t *st)
{
    int rc = rs_check_commands(m, e, u, n, st);
    if (rc < 0)
        return rc;
    apply_commands(m, d, e, u);
    return 0;
}

int rs_set_all_commands(const rs_model_t *m, rs_data_t *d, const double *u, rs_status_t *st)
{
    for (int e = 0; e < m->nentities; e++) {
        int rc = rs_check_commands(m, e, u + m->ent[e].u_off, (size_t)m->ent[e].nu, st);
        if (rc < 0)
            return rc;
    }
    for (int e = 0; e < m->nentities; e++)
        apply_commands(m, d, e, u + m->ent[e].u_off);
    return 0;
}

int rs_check_actuator(const rs_model_t *m, int e, long long a, rs_status_t *st)
{
    if (e < 0 || e >= m->nentities)
        return rs_fail(st, RS_ENOTFOUND, "no entity %d", e);
    const rs_entity_model_t *em = &m->ent[e];
    if (a >= 0 && a < em->nu)
        return 0;
    char names[200] = "";
    for (int i = 0; i < em->nu; i++)
        rs_join(names, sizeof names, "%d: %s", i, em->robot->actuators[i].name);
    return rs_fail(st, RS_ENOTFOUND,
                   "entity '%s' (%s) has %d actuator%s (%s); there is no actuator %lld", em->name,
                   em->robot->kind, em->nu, em->nu == 1 ? "" : "s", names, a);
}

int rs_set_schedule(const rs_model_t *m, rs_data_t *d, int e, int a, const double *t,
                    const double *v, size_t n, rs_status_t *st)
{
    int rc = rs_check_actuator(m, e, a, st);
    if (rc < 0)
        return rc;
    const rs_entity_model_t *em = &m->ent[e];
    const rs_robot_t *r = em->robot;
    if (n > RS_MAX_SCHEDULE)
        return rs_fail(st, RS_EEXHAUSTED, "a schedule holds at most %d knots, got %zu",
                       RS_MAX_SCHEDULE, n);
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(t[k]) || !isfinite(v[k]))
            return rs_fail(st, RS_EINVAL, "schedule knot %zu is not finite", k);
        if (k > 0 && !(t[k] > t[k - 1]))
            return rs_fail(st, RS_EINVAL,
                           "schedule times must increase strictly; knot %zu (t = %g) follows t = %g",
                           k, t[k], t[k - 1]);
        if (v[k] < r->actuators[a].lower || v[k] > r->actuators[a].upper)
            return rs_fail(st, RS_ERANGE, "schedule value %g at knot %zu is outside [%g, %g] %s",
                           v[k], k, r->actuators[a].lower, r->actuators[a].upper,
                           r->actuators[a].unit);
    }
    rs_schedule_t fresh = {0};
    if (n) {
        fresh.t = malloc(n * sizeof(double));
        fresh.v = malloc(n * sizeof(double));
        if (!fresh.t || !fresh.v) {
            rs_schedule_clear(&fresh);
            return rs_fail(st, RS_EEXHAUSTED, "out of memory for a schedule of %zu knots", n);
        }
        memcpy(fresh.t, t, n * sizeof(double));
        memcpy(fresh.v, v, n * sizeof(double));
        fresh.n = (int)n;
    }
    rs_schedule_t *s = &d->sched[em->u_off + a];
    int had = s->n > 0;
    rs_schedule_clear(s);
    *s = fresh;
    d->nsched[e] += (n > 0) - had;
    d->dirty = 1;
    return 0;
}

int rs_set_target(const rs_model_t *m, rs_data_t *d, int e, const double *target, size_t n,
                  rs_status_t *st)
{
    if (e < 0 || e >= m->nentities)
        return rs_fail(st, RS_ENOTFOUND, "no entity %d", e);
    const rs_entity_model_t *em = &m->ent[e];
    if (!em->robot->target_to_commands)
        return rs_fail(st, RS_EUNIMPL, "entity '%s' (%s) takes no task-space target", em->name,
                       em->robot->kind);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(target[i]))
            return rs_fail(st, RS_EINVAL, "target value %zu is not finite", i);
    double u[RS_MAX_ACTUATORS]; /* em->nu <= RS_MAX_ACTUATORS: rs_robot_check */
    int rc = em->robot->target_to_commands(em, &d->ent[e], target, (int)n, u, st);
    if (rc < 0)
        return rc;
    return rs_set_commands(m, d, e, u, (size_t)em->nu, st);
}

int rs_reachable(const rs_model_t *m, int e, double x, double y)
{
    const rs_robot_t *r = e >= 0 && e < m->nentities ? m->ent[e].robot : NULL;
    if (!r || !r->reachable)
        return RS_EUNIMPL;
    return r->reachable(&m->ent[e], x, y) ? 1 : 0;
}

int rs_workspace(const rs_model_t *m, int e, double *xy, int max_points, rs_status_t *st)
{
    const rs_robot_t *r = e >= 0 && e < m->nentities ? m->ent[e].robot : NULL;
    if (!r || !r->workspace || !r->reachable)
        return rs_fail(st, RS_EUNIMPL, "entity '%s' (%s) has no task-space workspace",
                       r ? m->ent[e].name : "?", r ? r->kind : "?");
    return max_points > 0 ? r->workspace(&m->ent[e], xy, max_points) : 0;
}
