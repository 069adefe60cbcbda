/* A declared task evaluated (task_decl.h): its quantities filled from a world's state at each
 * episode's start, observation and control step, then its observation, reward, flags and info
 * figures computed from them. */
#include "task_decl.h"
#include "rs_integrator.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* An argmin quantity: expr minimized over the groups of `elem` values of the list parameter
 * (the first smallest; the group's values at v[GROUP_VARS ...], NAN past the values set), then
 * value (or the minimum) at that group; `init` when the list is empty. */
static double argmin(const decl_t *k, const quantity_t *q, const rs_model_t *m, double *v)
{
    const rs_entity_model_t *em = &m->ent[q->entity];
    int len = em->plen[q->index], g = q->elem, best = -1;
    const double *p = em->p + em->robot->params[q->index].offset;
    double low = q->init;
    for (int i = 0; g * i < len; i++) {
        for (int j = 0; j < g; j++)
            v[GROUP_VARS + j] = g * i + j < len ? p[g * i + j] : NAN;
        double c = rs_expr_eval(q->expr, k->base, v, NULL);
        if (best < 0 || c < low)
            best = i, low = c;
    }
    if (best < 0 || !q->value)
        return low;
    for (int j = 0; j < g; j++)
        v[GROUP_VARS + j] = g * best + j < len ? p[g * best + j] : NAN;
    return rs_expr_eval(q->value, k->base, v, NULL);
}

enum { FILL_READ, FILL_STEP, FILL_RESET };

/* The values of t, steps and the quantities at d's state into v; events counted from
 * d->events[first_event ...]. mode FILL_READ reads the held quantities (drawn, at-reset and
 * updated ones) from d's episode state; FILL_STEP (after a control step) computes the updated
 * ones and stores them; FILL_RESET (at the episode's start) draws and computes the held ones
 * and stores them, redrawing where an "until" does not hold. dw is d, writable, for the last
 * two. Returns 0, or RS_EINVAL with st when an "until" still fails after its tries. */
static int fill_range(const decl_t *k, const rs_model_t *m, const rs_data_t *d, int first_event,
                      double *v, int mode, rs_data_t *dw, rs_status_t *st, int from, int to)
{
    v[0] = d->t;
    v[1] = (double)d->episode_steps;
    int tries[RS_TASK_DOC_MAX_QUANTITIES] = {0};
    for (int i = from; i < to; i++) {
        const quantity_t *q = &k->q[i];
        double x = NAN;
        switch (q->kind) {
        case Q_STATE: x = q->index < m->nx ? d->x[q->index] : NAN; break;
        case Q_SENSOR: x = q->index < m->ns ? d->sensors[q->index] : NAN; break;
        case Q_COMMAND: x = q->index < m->nu ? d->u[q->index] : NAN; break;
        case Q_PARAM: {
            const rs_entity_model_t *em = &m->ent[q->entity];
            x = q->elem < em->plen[q->index] ? em->p[em->robot->params[q->index].offset + q->elem]
                                             : NAN;
            break;
        }
        case Q_TARGET:
            x = mode == FILL_RESET ? rs_expr_draw(dw, q->dist, q->a, q->b)
                                   : d->task[RS_TASK_PRIVATE + q->index];
            break;
        case Q_AT_RESET:
            x = mode == FILL_RESET ? rs_expr_eval(q->expr, k->base, v, dw)
                : q->held          ? d->task[RS_TASK_PRIVATE + q->index]
                                   : NAN;
            break;
        case Q_UPDATE:
            v[2 + i] = d->task[RS_TASK_PRIVATE + q->index]; /* its last value, for itself */
            x = mode == FILL_RESET  ? q->init
                : mode == FILL_STEP ? rs_expr_eval(q->expr, k->base, v, NULL)
                                    : v[2 + i];
            break;
        case Q_EVENTS:
            x = 0.0;
            for (int j = first_event; j < d->nevents; j++)
                x += d->events[j].entity == q->entity && d->events[j].kind == q->index;
            break;
        case Q_EXPR: x = rs_expr_eval(q->expr, k->base, v, NULL); break;
        case Q_ARGMIN: x = q->held || mode == FILL_RESET ? argmin(k, q, m, v) : NAN; break;
        }
        v[2 + i] = x;
        if (mode != FILL_READ && (q->kind == Q_UPDATE || (mode == FILL_RESET &&
                                                          (q->kind == Q_TARGET ||
                                                           (q->kind == Q_AT_RESET && q->held)))))
            dw->task[RS_TASK_PRIVATE + q->index] = x;
        if (mode == FILL_RESET && q->until && rs_expr_eval(q->until, k->base, v, NULL) == 0.0) {
            if (rs_integrator_aborted(dw->integ)) /* a stop, or the request's budget */
                return rs_fail(st, RS_EDEADLINE, "task '%s': quantities.%s: the rejection "
                               "sampling was interrupted after %d draws (the server is stopping "
                               "or the request's compute budget ran out)", k->name, q->name,
                               tries[i] + 1);
            if (++tries[i] == q->tries)
                return q->error ? rs_fail(st, RS_EINVAL, "task '%s': %s", k->name, q->error)
                                : rs_fail(st, RS_EINVAL, "task '%s': quantities.%s: 'until' did "
                                          "not hold in %d draws; check the task's parameters",
                                          k->name, q->name, q->tries);
            i = q->redraw - 1; /* draw quantities redraw ... i again */
        }
    }
    return 0;
}

static int fill(const decl_t *k, const rs_model_t *m, const rs_data_t *d, int first_event,
                double *v, int mode, rs_data_t *dw, rs_status_t *st)
{
    return fill_range(k, m, d, first_event, v, mode, dw, st, 0, k->nq);
}

static const decl_t *decl_of(const rs_task_bind_t *b) { return (const decl_t *)b->task; }

static int doc_observe(const rs_model_t *m, const rs_data_t *d, const rs_task_bind_t *b,
                       double *obs, rs_status_t *st);

static int doc_reset(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                     rs_status_t *st)
{
    const decl_t *k = decl_of(b);
    if (m->nentities != k->nentities)
        return rs_fail(st, RS_EINVAL, "task '%s': the world has %d entities, the task was "
                       "declared on %d", k->name, m->nentities, k->nentities);
    for (int e = 0; e < m->nentities; e++)
        if (m->ent[e].robot != k->layout[e].robot || m->ent[e].x_off != k->layout[e].x_off ||
            m->ent[e].u_off != k->layout[e].u_off || m->ent[e].s_off != k->layout[e].s_off)
            return rs_fail(st, RS_EINVAL, "task '%s': entity '%s' is laid out otherwise than in "
                           "preset '%s'", k->name, m->ent[e].name, k->preset);
    /* the quantities the reset items take (parameters and draws only), before the start */
    double v[NVARS];
    int rc = fill_range(k, m, d, d->nevents, v, FILL_RESET, d, st, 0, k->npre);
    if (rc < 0)
        return rc;
    /* initial-condition parameters, grouped by parameter: its values with the drawn ones set */
    double values[MAX_RESET][RS_MAX_PARAM_VALUES];
    rs_param_t init[MAX_RESET];
    int ninit = 0;
    for (int i = 0; i < k->nreset; i++) {
        const rs_mc_sampler_t *s = &k->reset[i];
        const rs_entity_model_t *em = &m->ent[s->entity];
        int g = 0;
        while (g < ninit && !(strcmp(init[g].entity, em->name) == 0 &&
                              strcmp(init[g].name, em->robot->params[s->param].name) == 0))
            g++;
        if (g == ninit) {
            int len = em->plen[s->param];
            memcpy(values[g], em->p + em->robot->params[s->param].offset,
                   (size_t)len * sizeof(double));
            init[g] = (rs_param_t){em->name, em->robot->params[s->param].name, values[g],
                                   (size_t)len};
            ninit++;
        }
        if ((size_t)s->index >= init[g].nvalues)
            return rs_fail(st, RS_EINVAL, "task '%s': reset[%d] sets element %d of '%s', which "
                           "holds %zu values in this world", k->name, i, s->index, init[g].name,
                           init[g].nvalues);
        double start[2] = {d->t, 0.0}; /* t and steps; no quantity is defined yet */
        values[g][s->index] = k->reset_q[i]       ? v[2 + k->reset_q[i] - 1]
                              : k->reset_expr[i]  ? rs_expr_eval(k->reset_expr[i], k->base, start, d)
                              : k->reset_fixed[i] ? k->reset_value[i]
                                                  : rs_expr_draw(d, s->dist, s->a, s->b);
    }
    rc = ninit ? rs_reset_initial(m, d, init, (size_t)ninit, st) : 0;
    if (rc < 0)
        return rc;
    /* the other held quantities at the start: drawn, computed, initial values */
    if ((rc = fill_range(k, m, d, d->nevents, v, FILL_RESET, d, st, k->npre, k->nq)) < 0)
        return rc;
    double obs[RS_TASK_MAX_OBS]; /* the start's observation, as the agent will see it */
    return doc_observe(m, d, b, obs, st);
}

int rs_task_doc_validate(const rs_task_t *t, const rs_model_t *m, rs_status_t *st)
{
    const decl_t *k = rs_task_decl_of(t);
    if (!k)
        return 0;
    double v[NVARS] = {0.0, 0.0}; /* t, steps; the parameters; the rest NAN */
    for (int i = 0; i < k->nq; i++) {
        const quantity_t *q = &k->q[i];
        v[2 + i] = NAN;
        if (q->kind == Q_PARAM && q->entity < m->nentities) {
            const rs_entity_model_t *em = &m->ent[q->entity];
            if (q->elem < em->plen[q->index])
                v[2 + i] = em->p[em->robot->params[q->index].offset + q->elem];
        }
    }
    for (int i = 0; i < k->nrequire; i++)
        if (rs_expr_eval(k->require[i], k->base, v, NULL) == 0.0)
            return rs_fail(st, RS_EINVAL, "task '%s': %s", k->name, k->require_error[i]);
    return 0;
}

/* RS_ESIMFAIL for declared value x (item, its expression src when known) that is not finite:
 * no rule turns NaN or inf into a reward, a flag or an observation an agent would take as
 * real, so the Step (or the episode's start) that meets one fails naming it. */
static int not_finite(const decl_t *k, const rs_data_t *d, const char *item, const char *src,
                      double x, rs_status_t *st)
{
    return rs_fail(st, RS_ESIMFAIL, "task '%s': %s is %s at t = %.9g s (episode step %llu); a "
                   "declared value must be finite%s%s%s", k->name, item,
                   isnan(x) ? "NaN" : x > 0 ? "+inf" : "-inf", d->t,
                   (unsigned long long)d->episode_steps, src ? ": '" : "", src ? src : "",
                   src ? "'" : "");
}

static int doc_observe(const rs_model_t *m, const rs_data_t *d, const rs_task_bind_t *b,
                       double *obs, rs_status_t *st)
{
    const decl_t *k = decl_of(b);
    double v[NVARS];
    int rc = 0;
    fill(k, m, d, 0, v, FILL_READ, NULL, NULL); /* events: the last Step's */
    for (int i = 0; i < k->task.nobs; i++) {
        obs[i] = rs_expr_eval(k->obs_expr[i], k->base, v, NULL) / k->obs_scale[i];
        if (!isfinite(obs[i])) { /* kept as it is: clipping would hide it behind a bound */
            char item[32];
            snprintf(item, sizeof item, "observation[%d]", i);
            if (rc == 0)
                rc = not_finite(k, d, item, k->obs_src[i], obs[i], st);
        } else if (k->clip_observation) {
            obs[i] = fmin(fmax(obs[i], k->obs[i].lower), k->obs[i].upper);
        }
    }
    return rc;
}

static int doc_evaluate(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                        int first_event, double *reward, int *terminated, double *info,
                        rs_status_t *st)
{
    const decl_t *k = decl_of(b);
    double v[NVARS];
    fill(k, m, d, first_event, v, FILL_STEP, d, NULL);
    double success = k->success ? rs_expr_eval(k->success, k->base, v, NULL) : 0.0;
    double failed = k->termination ? rs_expr_eval(k->termination, k->base, v, NULL) : 0.0;
    double r = rs_expr_eval(k->reward, k->base, v, NULL);
    if (!isfinite(r))
        return not_finite(k, d, "the reward", k->reward_src, r, st);
    if (!isfinite(success))
        return not_finite(k, d, "success", k->success_src, success, st);
    if (!isfinite(failed))
        return not_finite(k, d, "termination", k->termination_src, failed, st);
    *terminated = success != 0.0 || failed != 0.0;
    for (int i = 0; i < k->task.ninfo; i++) {
        info[i] = k->info_q[i] < 0 ? (double)(success != 0.0) : v[2 + k->info_q[i]];
        if (!isfinite(info[i])) {
            char item[96];
            snprintf(item, sizeof item, "info figure '%s' (quantities.%s)", k->info_names[i],
                     k->info_names[i]);
            return not_finite(k, d, item, NULL, info[i], st);
        }
    }
    *reward = r;
    return 0;
}

void rs_task_decl_bind(decl_t *k)
{
    k->task.reset = doc_reset;
    k->task.observe = doc_observe;
    k->task.evaluate = doc_evaluate;
}

const decl_t *rs_task_decl_of(const rs_task_t *t)
{
    return t && t->reset == doc_reset ? (const decl_t *)t : NULL;
}
