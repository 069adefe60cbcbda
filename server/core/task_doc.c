/* Declared tasks (rs_task_doc.h): a task document parsed and validated against its preset's
 * model, its expressions compiled once with TinyExpr, and the rs_task_t callbacks that evaluate
 * the compiled forms at each reset, observation and control step. */
#include "rs_integrator.h"
#include "rs_json.h"
#include "rs_limits.h"
#include "rs_registry.h"
#include "rs_montecarlo.h"
#include "rs_robot.h"
#include "rs_task_doc.h"
#include "tinyexpr.h"
#include "robots/arm_common.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARAMS 8
#define MAX_RESET 16
#define MAX_REQUIRE 8
#define MAX_TARGETS (RS_TASK_STATE - RS_TASK_PRIVATE)
#define MAX_GROUP 8 /* the values an argmin quantity names per group */
#define GROUP_VARS (2 + RS_TASK_DOC_MAX_QUANTITIES) /* where the group's values go */
#define NVARS (GROUP_VARS + MAX_GROUP) /* t, steps, the quantities, an argmin's group */

enum { Q_STATE, Q_SENSOR, Q_COMMAND, Q_EVENTS, Q_TARGET, Q_EXPR, Q_AT_RESET, Q_UPDATE, Q_PARAM,
       Q_ARGMIN };

typedef struct quantity {
    char *name;
    int kind;
    int entity, index; /* STATE, SENSOR, COMMAND: index into x, sensors, u; EVENTS: the entity
                          and the event kind; TARGET, AT_RESET, UPDATE: the slot after
                          RS_TASK_PRIVATE that holds its value through the episode */
    int dist;          /* TARGET: RS_MC_UNIFORM or RS_MC_NORMAL with a, b */
    double a, b;
    te_expr *expr;     /* EXPR, AT_RESET (evaluated at reset, may draw), UPDATE (each control
                          step, reading its own last value) */
    double init;       /* UPDATE: the value at reset */
    int elem;          /* PARAM: the parameter's row in index, the value's position here;
                          ARGMIN: the list's row in index, the group's size here */
    int held;          /* AT_RESET, ARGMIN: 0 when computed at the start only */
    te_expr *value;    /* ARGMIN: the value at the minimizing group (expr minimized) */
    te_expr *until;    /* AT_RESET, ARGMIN: redraw quantities redraw ... this one until it
                          holds */
    int redraw, tries; /* the first quantity redrawn, the most draws */
    char *error;       /* the reset's error past them (NULL: a generic one) */
} quantity_t;

typedef struct decl {
    rs_task_t task; /* first: rs_task_bind_t.task points here */
    char *source;
    int builtin;    /* one of the server's own tasks (a family's document) */
    char *name, *preset, *entity, *doc, *reward_doc;
    int nq;
    quantity_t q[RS_TASK_DOC_MAX_QUANTITIES];
    te_expr *obs_expr[RS_TASK_MAX_OBS];
    char *obs_src[RS_TASK_MAX_OBS]; /* their sources, for the errors that name them */
    double obs_scale[RS_TASK_MAX_OBS];
    char *strings[3 * (RS_TASK_MAX_OBS + RS_TASK_MAX_ACT)]; /* names, units, docs given */
    int nstrings;
    rs_var_desc_t obs[RS_TASK_MAX_OBS], act[RS_TASK_MAX_ACT], cmd[RS_TASK_MAX_ACT];
    te_expr *reward, *success, *termination;
    char *reward_src, *success_src, *termination_src;
    int nrequire;
    te_expr *require[MAX_REQUIRE]; /* conditions on the parameters, checked on each model */
    char *require_error[MAX_REQUIRE];
    const char *info_names[RS_TASK_MAX_INFO];
    int info_q[RS_TASK_MAX_INFO]; /* quantity index, -1 for the success flag */
    int nparams;
    rs_task_param_t params[MAX_PARAMS];
    char *param_entity[MAX_PARAMS], *param_name[MAX_PARAMS];
    double *param_values[MAX_PARAMS];
    rs_task_name_t names[RS_TASK_MAX_NAMES]; /* the entity's items it reads (rs_task_bind) */
    int nreset;
    rs_mc_sampler_t reset[MAX_RESET];
    int reset_fixed[MAX_RESET]; /* a "value" rather than a distribution */
    int reset_q[MAX_RESET];     /* or a quantity's value (its index + 1; 0: none) */
    int npre; /* quantities 0 ... npre - 1 are computed before the start state (reset items
                 take their values) */
    double reset_value[MAX_RESET];
    te_expr *reset_expr[MAX_RESET]; /* or an expression of constants and draws */
    int clip_observation;          /* clip each observation value to its bounds */
    int ntargets;
    /* the entities' layout in the preset's model, checked at each reset (a model with another
     * layout would make the indices above point elsewhere) */
    int nentities;
    struct { const rs_robot_t *robot; int x_off, u_off, s_off; } layout[RS_MAX_ENTITIES];
    double base[NVARS]; /* the addresses the expressions were compiled against */
} decl_t;

/* ---- expression functions beyond TinyExpr's ------------------------------------------------ */

static double f_hypot(double a, double b) { return rs_hypot(a, b); }
static double f_min(double a, double b) { return fmin(a, b); }
static double f_max(double a, double b) { return fmax(a, b); }
static double f_clip(double x, double lo, double hi) { return fmin(fmax(x, lo), hi); }
static double f_wrap(double a) { return atan2(sin(a), cos(a)); }
static double f_lt(double a, double b) { return a < b; }
static double f_le(double a, double b) { return a <= b; }
static double f_gt(double a, double b) { return a > b; }
static double f_ge(double a, double b) { return a >= b; }
static double f_eq(double a, double b) { return a == b; }
static double f_and(double a, double b) { return a != 0.0 && b != 0.0; }
static double f_or(double a, double b) { return a != 0.0 || b != 0.0; }
static double f_not(double a) { return a == 0.0; }
static double f_if(double c, double a, double b) { return c != 0.0 ? a : b; }
/* The parallel arm's forward kinematics (the closed form its robot uses): the end effector's x
 * and y at servo angles q1, q2 for lengths L0, L1, L2, NAN where the linkage does not
 * assemble; its stretch (elbow distance / 2 L2, 1 stretched). */
static double f_parallel_x(double L0, double L1, double L2, double q1, double q2)
{
    double q[2] = {q1, q2}, p[2];
    return parallel_fk(L0, L1, L2, q, NULL, p, NULL) < 0 ? NAN : p[0];
}
static double f_parallel_y(double L0, double L1, double L2, double q1, double q2)
{
    double q[2] = {q1, q2}, p[2];
    return parallel_fk(L0, L1, L2, q, NULL, p, NULL) < 0 ? NAN : p[1];
}
static double f_parallel_stretch(double L0, double L1, double L2, double q1, double q2)
{
    double q[2] = {q1, q2};
    return parallel_u(L0, L1, q, NULL) / (2.0 * L2);
}
static double f_isnan(double a) { return isnan(a); }
/* uniform(a, b) and normal(mean, deviation) draw from the world's rng: eval() calls draw() for
 * them (these bodies only mark the nodes) */
static double f_uniform(double a, double b) { return NAN; }
static double f_normal(double a, double b) { return NAN; }

#define FN(name, f, n) {name, (const void *)(f), TE_FUNCTION##n | TE_FLAG_PURE, NULL}
static const te_variable functions[] = {
    FN("hypot", f_hypot, 2), FN("min", f_min, 2), FN("max", f_max, 2),
    FN("clip", f_clip, 3),   FN("wrap", f_wrap, 1), FN("lt", f_lt, 2),
    FN("le", f_le, 2),       FN("gt", f_gt, 2),   FN("ge", f_ge, 2),
    FN("eq", f_eq, 2),       FN("and", f_and, 2), FN("or", f_or, 2),
    FN("not", f_not, 1),     FN("if", f_if, 3),   FN("isnan", f_isnan, 1),
    FN("parallel_x", f_parallel_x, 5), FN("parallel_y", f_parallel_y, 5),
    FN("parallel_stretch", f_parallel_stretch, 5),
    /* not pure: never folded into a constant at compile time */
    {"uniform", (const void *)f_uniform, TE_FUNCTION2, NULL},
    {"normal", (const void *)f_normal, TE_FUNCTION2, NULL},
};
#define NFUNCTIONS (int)(sizeof functions / sizeof functions[0])
static const char *const reserved[] = {"t", "steps"};

static double draw(rs_data_t *d, int dist, double a, double b)
{
    if (dist == RS_MC_UNIFORM)
        return a + (b - a) * rs_data_uniform(d);
    double u1 = rs_data_uniform(d), u2 = rs_data_uniform(d); /* Box-Muller, as rs_mc_draw */
    return a + b * sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
}

/* TinyExpr's te_eval with the variables read from v[] by their offset from the addresses they
 * were compiled against, so one compiled expression serves every world and thread, and the
 * draws (uniform, normal) from d's rng (d NULL: no draws; parsing allows them only where d is
 * given). Node types as tinyexpr.c lays them out: 1 a constant, TE_VARIABLE, TE_FUNCTIONn with
 * n arguments. */
static double eval(const te_expr *n, const double *base, const double *v, rs_data_t *d)
{
    enum { CONSTANT = 1 };
    int type = n->type & 0x1f;
    if (type == CONSTANT)
        return n->value;
    if (type == TE_VARIABLE)
        return v[n->bound - base];
    if (type < TE_FUNCTION0 || type > TE_FUNCTION5)
        return NAN; /* no closures or wider functions are registered */
    double a[5];
    int arity = type - TE_FUNCTION0;
    for (int i = 0; i < arity; i++)
        a[i] = eval(n->parameters[i], base, v, d);
    if (n->function == (const void *)f_uniform || n->function == (const void *)f_normal)
        return d ? draw(d, n->function == (const void *)f_uniform ? RS_MC_UNIFORM : RS_MC_NORMAL,
                        a[0], a[1])
                 : NAN;
    switch (arity) {
    case 0: return ((double (*)(void))n->function)();
    case 1: return ((double (*)(double))n->function)(a[0]);
    case 2: return ((double (*)(double, double))n->function)(a[0], a[1]);
    case 3: return ((double (*)(double, double, double))n->function)(a[0], a[1], a[2]);
    case 5:
        return ((double (*)(double, double, double, double, double))n->function)(a[0], a[1], a[2],
                                                                               a[3], a[4]);
    default: return NAN; /* no function of 4 arguments is registered */
    }
}

/* Whether expression n draws (uniform, normal). */
static int draws(const te_expr *n)
{
    int type = n->type & 0x1f;
    if (type < TE_FUNCTION0 || type > TE_FUNCTION7)
        return 0;
    if (n->function == (const void *)f_uniform || n->function == (const void *)f_normal)
        return 1;
    for (int i = 0; i < type - TE_FUNCTION0; i++)
        if (draws(n->parameters[i]))
            return 1;
    return 0;
}

/* ---- evaluation --------------------------------------------------------------------------- */

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
        double c = eval(q->expr, k->base, v, NULL);
        if (best < 0 || c < low)
            best = i, low = c;
    }
    if (best < 0 || !q->value)
        return low;
    for (int j = 0; j < g; j++)
        v[GROUP_VARS + j] = g * best + j < len ? p[g * best + j] : NAN;
    return eval(q->value, k->base, v, NULL);
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
            x = mode == FILL_RESET ? draw(dw, q->dist, q->a, q->b)
                                   : d->task[RS_TASK_PRIVATE + q->index];
            break;
        case Q_AT_RESET:
            x = mode == FILL_RESET ? eval(q->expr, k->base, v, dw)
                : q->held          ? d->task[RS_TASK_PRIVATE + q->index]
                                   : NAN;
            break;
        case Q_UPDATE:
            v[2 + i] = d->task[RS_TASK_PRIVATE + q->index]; /* its last value, for itself */
            x = mode == FILL_RESET  ? q->init
                : mode == FILL_STEP ? eval(q->expr, k->base, v, NULL)
                                    : v[2 + i];
            break;
        case Q_EVENTS:
            x = 0.0;
            for (int j = first_event; j < d->nevents; j++)
                x += d->events[j].entity == q->entity && d->events[j].kind == q->index;
            break;
        case Q_EXPR: x = eval(q->expr, k->base, v, NULL); break;
        case Q_ARGMIN: x = q->held || mode == FILL_RESET ? argmin(k, q, m, v) : NAN; break;
        }
        v[2 + i] = x;
        if (mode != FILL_READ && (q->kind == Q_UPDATE || (mode == FILL_RESET &&
                                                          (q->kind == Q_TARGET ||
                                                           (q->kind == Q_AT_RESET && q->held)))))
            dw->task[RS_TASK_PRIVATE + q->index] = x;
        if (mode == FILL_RESET && q->until && eval(q->until, k->base, v, NULL) == 0.0) {
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
                              : k->reset_expr[i]  ? eval(k->reset_expr[i], k->base, start, d)
                              : k->reset_fixed[i] ? k->reset_value[i]
                                                  : draw(d, s->dist, s->a, s->b);
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

static int doc_reset(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                     rs_status_t *st);

int rs_task_doc_validate(const rs_task_t *t, const rs_model_t *m, rs_status_t *st)
{
    if (!t || t->reset != doc_reset)
        return 0;
    const decl_t *k = (const decl_t *)t;
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
        if (eval(k->require[i], k->base, v, NULL) == 0.0)
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
        obs[i] = eval(k->obs_expr[i], k->base, v, NULL) / k->obs_scale[i];
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
    double success = k->success ? eval(k->success, k->base, v, NULL) : 0.0;
    double failed = k->termination ? eval(k->termination, k->base, v, NULL) : 0.0;
    double r = eval(k->reward, k->base, v, NULL);
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

/* ---- parsing ------------------------------------------------------------------------------ */

typedef struct parser {
    decl_t *k;
    const rs_model_t *m;
    int e; /* the task's entity */
    rs_status_t *st;
    int ngroup; /* the names an argmin quantity's expressions give its group's values */
    const char *group[MAX_GROUP];
} parser_t;

/* Put "where: " before st's message; returns its code. */
static int at(rs_status_t *st, const char *where)
{
    char msg[sizeof st->message];
    int n = snprintf(msg, sizeof msg, "%s: ", where);
    if (n > 0 && (size_t)n < sizeof msg)
        memcpy(msg + n, st->message, sizeof msg - (size_t)n - 1);
    msg[sizeof msg - 1] = 0;
    memcpy(st->message, msg, sizeof msg);
    return st->code;
}

static int check_keys(json_object *o, const char *where, const char *const *keys, int n,
                      rs_status_t *st)
{
    json_object_object_foreach(o, key, val) {
        (void)val;
        int i = 0;
        while (i < n && strcmp(keys[i], key) != 0)
            i++;
        if (i == n) {
            char list[200] = "";
            for (int j = 0; j < n; j++)
                rs_join(list, sizeof list, "%s", keys[j]);
            return rs_fail(st, RS_EINVAL, "%s: unknown item '%s' (known: %s)", where, key, list);
        }
    }
    return 0;
}

/* A string member (NULL when absent and not required). */
static int get_string(json_object *o, const char *key, const char *where, int required,
                      const char **out, rs_status_t *st)
{
    json_object *v;
    *out = NULL;
    if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
        if (required)
            return rs_fail(st, RS_EINVAL, "%s: '%s' is required", where, key);
        return 0;
    }
    if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
        return rs_fail(st, RS_EINVAL, "%s.%s: a non-empty string is required", where, key);
    *out = json_object_get_string(v);
    return 0;
}

static int as_number(json_object *v, const char *where, double *out, rs_status_t *st)
{
    if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
        return rs_fail(st, RS_EINVAL, "%s: a number is required", where);
    *out = json_object_get_double(v);
    if (!isfinite(*out))
        return rs_fail(st, RS_EINVAL, "%s: the number must be finite", where);
    return 0;
}

static int get_number(json_object *o, const char *key, const char *where, int required,
                      double def, double *out, rs_status_t *st)
{
    json_object *v;
    *out = def;
    if (!json_object_object_get_ex(o, key, &v)) {
        if (required)
            return rs_fail(st, RS_EINVAL, "%s: '%s' is required", where, key);
        return 0;
    }
    char w[160];
    snprintf(w, sizeof w, "%s.%s", where, key);
    return as_number(v, w, out, st);
}

static int is_identifier(const char *s)
{
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
        return 0;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_'))
            return 0;
    return 1;
}

enum { C_DRAW = 1, C_START = 2, C_PARAMS = 4 };

/* Whether quantity q may be named where `flags` (C_*) say: the quantities used at the start only
 * (at_reset, "held": false) in C_START expressions, only parameters in C_PARAMS ones. */
static int nameable(const quantity_t *q, int flags)
{
    if (flags & C_PARAMS)
        return q->kind == Q_PARAM;
    return (flags & C_START) || q->held;
}

/* Compile `src` with the functions, t, steps and the quantities defined so far as its names
 * (and the one being defined, with self), those nameable() under flags; draws (uniform, normal)
 * only with C_DRAW. */
static int compile_named(parser_t *P, const char *src, const char *where, te_expr **out,
                         const char *self, int flags)
{
    int may_draw = flags & C_DRAW;
    decl_t *k = P->k;
    te_variable vars[NFUNCTIONS + NVARS + 1];
    int n = 0;
    for (int i = 0; i < NFUNCTIONS; i++)
        vars[n++] = functions[i];
    for (int i = 0; i < 2; i++)
        vars[n++] = (te_variable){reserved[i], &k->base[i], TE_VARIABLE, NULL};
    for (int i = 0; i < k->nq; i++)
        if (nameable(&k->q[i], flags))
            vars[n++] = (te_variable){k->q[i].name, &k->base[2 + i], TE_VARIABLE, NULL};
    if (self)
        vars[n++] = (te_variable){self, &k->base[2 + k->nq], TE_VARIABLE, NULL};
    for (int j = 0; j < P->ngroup; j++)
        vars[n++] = (te_variable){P->group[j], &k->base[GROUP_VARS + j], TE_VARIABLE, NULL};
    *out = NULL;
    size_t len = strlen(src);
    if (len > RS_EXPR_MAX_SOURCE)
        return rs_fail(P->st, RS_EINVAL, "%s: the expression has %zu characters, over the limit "
                       "of %d characters per expression", where, len, RS_EXPR_MAX_SOURCE);
    static const te_limits limits = {RS_EXPR_MAX_NESTING, RS_EXPR_MAX_NODES, RS_EXPR_MAX_DEPTH};
    int err = 0, hit = TE_LIMIT_NONE;
    *out = te_compile_bounded(src, vars, n, &limits, &err, &hit);
    if (!*out && hit == TE_LIMIT_NESTING)
        return rs_fail(P->st, RS_EINVAL, "%s: the expression nests parentheses and function "
                       "calls deeper than the limit of %d levels", where, RS_EXPR_MAX_NESTING);
    if (!*out && hit == TE_LIMIT_NODES)
        return rs_fail(P->st, RS_EINVAL, "%s: the expression has more than the limit of %d "
                       "terms (numbers, names, operators and calls)", where, RS_EXPR_MAX_NODES);
    if (!*out && hit == TE_LIMIT_DEPTH)
        return rs_fail(P->st, RS_EINVAL, "%s: the expression's tree is deeper than the limit of "
                       "%d levels (a chain a + b + c + ... is as deep as its terms: group them in "
                       "parentheses)", where, RS_EXPR_MAX_DEPTH);
    if (!*out) {
        char names[200] = "";
        if (!(flags & C_PARAMS))
            rs_join(names, sizeof names, "%s", "t, steps");
        for (int i = 0; i < k->nq; i++)
            if (nameable(&k->q[i], flags))
                rs_join(names, sizeof names, "%s", k->q[i].name);
        return rs_fail(P->st, RS_EINVAL,
                       "%s: '%s' does not compile at character %d (a syntax error or an unknown "
                       "name; names it may use: %s)",
                       where, src, err, names);
    }
    if (!may_draw && draws(*out)) {
        te_free(*out);
        *out = NULL;
        return rs_fail(P->st, RS_EINVAL, "%s: '%s' draws (uniform, normal), which only a "
                       "quantity's 'at_reset' expression may", where, src);
    }
    return 0;
}

static int compile(parser_t *P, const char *src, const char *where, te_expr **out)
{
    return compile_named(P, src, where, out, NULL, 0);
}

/* Expression `key` of the task compiled into *out, its source kept in *src_out. */
static int get_expr(parser_t *P, json_object *o, const char *key, int required, te_expr **out,
                    char **src_out)
{
    const char *src;
    *out = NULL;
    int rc = get_string(o, key, "task", required, &src, P->st);
    if (rc < 0 || !src || (rc = compile(P, src, key, out)) < 0)
        return rc;
    if (!(*src_out = strdup(src)))
        return rs_fail(P->st, RS_EEXHAUSTED, "out of memory");
    return 0;
}

/* "entity.name" split into the entity (index) and name[RS_NAME_MAX]. */
static int split(const rs_model_t *m, const char *item, const char *where, char *name,
                 rs_status_t *st)
{
    const char *dot = strchr(item, '.');
    if (!dot || dot == item || !dot[1] || strlen(dot + 1) >= RS_NAME_MAX ||
        (size_t)(dot - item) >= RS_NAME_MAX)
        return rs_fail(st, RS_EINVAL, "%s: '%s' is not 'entity.name'", where, item);
    char ent[RS_NAME_MAX];
    memcpy(ent, item, (size_t)(dot - item));
    ent[dot - item] = 0;
    strcpy(name, dot + 1);
    int e = rs_model_entity(m, ent);
    if (e < 0)
        return rs_fail(st, RS_ENOTFOUND, "%s: the preset has no entity '%s'", where, ent);
    return e;
}

/* A parameter's value, "entity.name" or "entity.name[i]", into q (Q_PARAM): read from the
 * world's model at each evaluation, NAN past the values set. */
static int parse_param_item(parser_t *P, const char *item, const char *where, quantity_t *q)
{
    char name[RS_NAME_MAX];
    int e = split(P->m, item, where, name, P->st);
    if (e < 0)
        return e;
    int elem = 0;
    char *br = strchr(name, '[');
    if (br) {
        char *end;
        long i = strtol(br + 1, &end, 10);
        if (end == br + 1 || strcmp(end, "]") != 0 || i < 0 || i >= RS_MAX_PARAM_VALUES)
            return rs_fail(P->st, RS_EINVAL, "%s: '%s': the index in [] must be 0 to %d", where,
                           item, RS_MAX_PARAM_VALUES - 1);
        elem = (int)i;
        *br = 0;
    }
    const rs_robot_t *r = P->m->ent[e].robot;
    int row = 0;
    while (row < r->np && strcmp(r->params[row].name, name) != 0)
        row++;
    if (row == r->np) {
        char list[200] = "";
        for (int j = 0; j < r->np; j++)
            rs_join(list, sizeof list, "%s", r->params[j].name);
        return rs_fail(P->st, RS_ENOTFOUND, "%s: '%s' (a %s) has no parameter '%s' (it has: %s)",
                       where, P->m->ent[e].name, r->kind, name, list);
    }
    q->kind = Q_PARAM;
    q->entity = e;
    q->index = row;
    q->elem = elem;
    return 0;
}

/* An at_reset quantity's "until" (a condition on it and the quantities before it), "redraw"
 * (the first quantity drawn again when it fails: an at_reset one, it or before it) and
 * "tries" (the most draws before the reset fails). */
static int parse_until(parser_t *P, json_object *v, const char *where, const char *qname,
                       quantity_t *q)
{
    decl_t *k = P->k;
    rs_status_t *st = P->st;
    const char *until, *redraw, *error;
    double tries;
    int rc;
    if ((rc = get_string(v, "until", where, 0, &until, st)) < 0 ||
        (rc = get_string(v, "error", where, 0, &error, st)) < 0 ||
        (rc = get_string(v, "redraw", where, 0, &redraw, st)) < 0 ||
        (rc = get_number(v, "tries", where, 0, 0, &tries, st)) < 0)
        return rc;
    if (!until) {
        if (redraw || error || json_object_object_get_ex(v, "tries", NULL))
            return rs_fail(st, RS_EINVAL, "%s: 'redraw', 'tries' and 'error' need 'until'",
                           where);
        return 0;
    }
    if (error && !(q->error = strdup(error)))
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    if (!redraw || !json_object_object_get_ex(v, "tries", NULL))
        return rs_fail(st, RS_EINVAL, "%s: 'until' needs 'redraw' (the first quantity drawn "
                       "again) and 'tries' (the most draws)", where);
    if (tries < 1 || tries > 1e7 || tries != floor(tries))
        return rs_fail(st, RS_ERANGE, "%s.tries: a whole number from 1 to 1e7 is required",
                       where);
    q->tries = (int)tries;
    q->redraw = k->nq; /* itself */
    if (strcmp(redraw, qname) != 0) {
        q->redraw = 0;
        while (q->redraw < k->nq && strcmp(k->q[q->redraw].name, redraw) != 0)
            q->redraw++;
        if (q->redraw == k->nq || k->q[q->redraw].kind != Q_AT_RESET)
            return rs_fail(st, RS_EINVAL, "%s.redraw: '%s' is not an 'at_reset' quantity "
                           "defined before it (or itself)", where, redraw);
    }
    char w[112];
    snprintf(w, sizeof w, "%s.until", where);
    return compile_named(P, until, w, &q->until, qname, C_START);
}

/* An argmin quantity: {"argmin": expr, "over": "entity.list", "group": n, "as": [n names],
 * "value": expr, "none": v}: expr minimized over the list parameter's groups of n values, each
 * named by "as" in expr and value; the quantity is value (default: the minimum) at the first
 * minimizing group, or none (default 0) when the list is empty. q holds the parameter (from
 * parse_param_item: index, entity). "held": false computes it at the start only, where it
 * may name the start-only quantities and carry "until". */
static int parse_argmin(parser_t *P, json_object *v, const char *where, const char *qname,
                        quantity_t *q)
{
    rs_status_t *st = P->st;
    const char *expr, *value;
    double group, none;
    json_object *as;
    int rc;
    if ((rc = get_string(v, "argmin", where, 1, &expr, st)) < 0 ||
        (rc = get_string(v, "value", where, 0, &value, st)) < 0 ||
        (rc = get_number(v, "group", where, 1, 0, &group, st)) < 0 ||
        (rc = get_number(v, "none", where, 0, 0.0, &none, st)) < 0)
        return rc;
    if (q->elem != 0)
        return rs_fail(st, RS_EINVAL, "%s.over: a whole list parameter, without [i]", where);
    if (group < 1 || group > MAX_GROUP || group != floor(group))
        return rs_fail(st, RS_ERANGE, "%s.group: a whole number from 1 to %d is required", where,
                       MAX_GROUP);
    int g = (int)group;
    if (!json_object_object_get_ex(v, "as", &as) || !json_object_is_type(as, json_type_array) ||
        (int)json_object_array_length(as) != g)
        return rs_fail(st, RS_EINVAL, "%s.as: a list of %d names (one per value of a group) is "
                       "required", where, g);
    for (int j = 0; j < g; j++) {
        json_object *n = json_object_array_get_idx(as, (size_t)j);
        const char *name = json_object_is_type(n, json_type_string) ? json_object_get_string(n)
                                                                    : "";
        int clash = !is_identifier(name) || strcmp(name, qname) == 0;
        for (int i = 0; i < P->k->nq && !clash; i++)
            clash = strcmp(P->k->q[i].name, name) == 0;
        for (int i = 0; i < NFUNCTIONS && !clash; i++)
            clash = strcmp(functions[i].name, name) == 0;
        for (int i = 0; i < 2 && !clash; i++)
            clash = strcmp(reserved[i], name) == 0;
        if (clash || te_interp(name, NULL) == te_interp(name, NULL))
            return rs_fail(st, RS_EINVAL, "%s.as[%d]: '%s' is not a free name (letters, digits "
                           "and '_', not a quantity's or a function's)", where, j, name);
        P->group[j] = name;
    }
    q->kind = Q_ARGMIN;
    q->elem = g;
    q->init = none;
    int flags = q->held ? 0 : C_START;
    P->ngroup = g;
    char w[112];
    snprintf(w, sizeof w, "%s.argmin", where);
    rc = compile_named(P, expr, w, &q->expr, NULL, flags);
    if (rc == 0 && value) {
        snprintf(w, sizeof w, "%s.value", where);
        rc = compile_named(P, value, w, &q->value, NULL, flags);
    }
    P->ngroup = 0;
    if (rc < 0)
        return rc;
    if (!q->held)
        return parse_until(P, v, where, qname, q);
    if (json_object_object_get_ex(v, "until", NULL))
        return rs_fail(st, RS_EINVAL, "%s.until: on a quantity computed at the start only "
                       "(\"held\": false)", where);
    return parse_until(P, v, where, qname, q); /* refuses a 'redraw', 'tries', 'error' */
}

static int parse_quantity(parser_t *P, const char *qname, json_object *v)
{
    decl_t *k = P->k;
    rs_status_t *st = P->st;
    char where[96];
    snprintf(where, sizeof where, "quantities.%s", qname);
    if (!is_identifier(qname))
        return rs_fail(st, RS_EINVAL, "%s: a name is letters, digits and '_', not starting with "
                       "a digit", where);
    for (int i = 0; i < NFUNCTIONS; i++)
        if (strcmp(functions[i].name, qname) == 0)
            return rs_fail(st, RS_EINVAL, "%s: '%s' is a function's name", where, qname);
    for (int i = 0; i < 2; i++)
        if (strcmp(reserved[i], qname) == 0)
            return rs_fail(st, RS_EINVAL, "%s: '%s' is reserved (t: time, steps: control steps)",
                           where, qname);
    if (te_interp(qname, NULL) == te_interp(qname, NULL)) /* a TinyExpr built-in (pi, e, ...) */
        return rs_fail(st, RS_EINVAL, "%s: '%s' is a built-in function's name", where, qname);
    for (int i = 0; i < k->nq; i++)
        if (strcmp(k->q[i].name, qname) == 0)
            return rs_fail(st, RS_EINVAL, "%s: defined twice", where);
    if (k->nq == RS_TASK_DOC_MAX_QUANTITIES)
        return rs_fail(st, RS_EEXHAUSTED, "%s: at most %d quantities", where,
                       RS_TASK_DOC_MAX_QUANTITIES);
    quantity_t q = {.held = 1};
    const rs_model_t *m = P->m;
    int rc = 0;
    if (json_object_is_type(v, json_type_string)) { /* "entity.name": state or sensor */
        rs_mc_item_t it;
        if (rs_mc_parse_item(m, json_object_get_string(v), &it, st) < 0)
            return at(st, where);
        if (it.entity < 0 || it.entity >= m->nentities) /* "task.return": a Monte Carlo item */
            return rs_fail(st, RS_EINVAL, "%s: '%s' is no entity's state or sensor "
                           "(\"entity.name\")", where, json_object_get_string(v));
        const rs_entity_model_t *em = &m->ent[it.entity];
        q.kind = it.sensor ? Q_SENSOR : Q_STATE;
        q.index = (it.sensor ? em->s_off : em->x_off) + it.index;
        if (it.entity == P->e && k->task.nnames < RS_TASK_MAX_NAMES) /* bound as C rows' are */
            k->names[k->task.nnames++] = (rs_task_name_t){
                it.sensor ? RS_TASK_NAME_SENSOR : RS_TASK_NAME_STATE,
                it.sensor ? em->robot->sensors[it.index].name : em->robot->state[it.index].name};
    } else if (json_object_is_type(v, json_type_object)) {
        const char *cmd, *ev, *dist, *expr, *at_reset, *update, *param, *over = NULL;
        static const char *const keys[] = {"command", "events", "dist", "a", "b", "expr",
                                           "at_reset", "update", "init", "param", "held",
                                           "until", "redraw", "tries", "argmin", "over",
                                           "group", "as", "value", "none", "error"};
        if ((rc = check_keys(v, where, keys, 21, st)) < 0 ||
            (rc = get_string(v, "argmin", where, 0, &param, st)) < 0 ||
            (param && (rc = get_string(v, "over", where, 1, &over, st)) < 0) ||
            (!param && (rc = get_string(v, "param", where, 0, &param, st)) < 0) ||
            (rc = get_string(v, "command", where, 0, &cmd, st)) < 0 ||
            (rc = get_string(v, "events", where, 0, &ev, st)) < 0 ||
            (rc = get_string(v, "dist", where, 0, &dist, st)) < 0 ||
            (rc = get_string(v, "expr", where, 0, &expr, st)) < 0 ||
            (rc = get_string(v, "at_reset", where, 0, &at_reset, st)) < 0 ||
            (rc = get_string(v, "update", where, 0, &update, st)) < 0)
            return rc;
        if (!!cmd + !!ev + !!dist + !!expr + !!at_reset + !!update + !!param != 1)
            return rs_fail(st, RS_EINVAL, "%s: one of 'command', 'events', 'param', 'dist', "
                           "'expr', 'at_reset' or 'update' is required", where);
        if (over && json_object_object_get_ex(v, "param", NULL))
            return rs_fail(st, RS_EINVAL, "%s: one of 'argmin' (with 'over') or 'param'", where);
        if (!over && (json_object_object_get_ex(v, "group", NULL) ||
                      json_object_object_get_ex(v, "as", NULL) ||
                      json_object_object_get_ex(v, "value", NULL) ||
                      json_object_object_get_ex(v, "none", NULL)))
            return rs_fail(st, RS_EINVAL, "%s: 'over', 'group', 'as', 'value' and 'none' go with "
                           "'argmin' only", where);
        if (!at_reset && !over && (json_object_object_get_ex(v, "until", NULL) ||
                          json_object_object_get_ex(v, "redraw", NULL) ||
                          json_object_object_get_ex(v, "tries", NULL)))
            return rs_fail(st, RS_EINVAL, "%s: 'until', 'redraw' and 'tries' go with "
                           "'at_reset' or 'argmin' only", where);
        json_object *hv;
        q.held = !json_object_object_get_ex(v, "held", &hv) || json_object_get_boolean(hv);
        if (json_object_object_get_ex(v, "held", &hv) &&
            ((!at_reset && !over) || !json_object_is_type(hv, json_type_boolean)))
            return rs_fail(st, RS_EINVAL, "%s.held: true or false, on an 'at_reset' or 'argmin' "
                           "quantity only", where);
        if ((dist || update || (at_reset && q.held)) && k->ntargets == MAX_TARGETS)
            return rs_fail(st, RS_EEXHAUSTED, "%s: at most %d quantities held through the "
                           "episode ('dist', 'at_reset', 'update')", where, MAX_TARGETS);
        char name[RS_NAME_MAX];
        if (param) {
            if ((rc = parse_param_item(P, over ? over : param, where, &q)) < 0)
                return rc;
            if (json_object_object_get_ex(v, "over", NULL) &&
                (rc = parse_argmin(P, v, where, qname, &q)) < 0) {
                te_free(q.expr);
                te_free(q.value);
                te_free(q.until);
                free(q.error);
                return rc;
            }
            if (q.entity == P->e && k->task.nnames < RS_TASK_MAX_NAMES)
                k->names[k->task.nnames++] = (rs_task_name_t){
                    RS_TASK_NAME_PARAM, m->ent[q.entity].robot->params[q.index].name};
        } else if (cmd || ev) {
            int e = split(m, cmd ? cmd : ev, where, name, st);
            if (e < 0)
                return e;
            const rs_robot_t *r = m->ent[e].robot;
            int n = cmd ? m->ent[e].nu : r->nevent_kinds, i = 0;
            while (i < n && strcmp(cmd ? r->actuators[i].name : r->event_names[i], name) != 0)
                i++;
            if (i == n) {
                char list[160] = "";
                for (int j = 0; j < n; j++)
                    rs_join(list, sizeof list, "%s",
                            cmd ? r->actuators[j].name : r->event_names[j]);
                return rs_fail(st, RS_ENOTFOUND, "%s: '%s' (a %s) has no %s '%s' (it has: %s)",
                               where, m->ent[e].name, r->kind, cmd ? "actuator" : "event kind",
                               name, list);
            }
            q.kind = cmd ? Q_COMMAND : Q_EVENTS;
            q.entity = e;
            if (ev && e == P->e && k->task.nnames < RS_TASK_MAX_NAMES)
                k->names[k->task.nnames++] = (rs_task_name_t){RS_TASK_NAME_EVENT,
                                                              r->event_names[i]};
            q.index = cmd ? m->ent[e].u_off + i : i;
        } else if (dist) { /* the samplers' distributions, checked as they check them */
            double a, b;
            if ((rc = get_number(v, "a", where, 1, 0, &a, st)) < 0 ||
                (rc = get_number(v, "b", where, 1, 0, &b, st)) < 0)
                return rc;
            if (strcmp(dist, "uniform") != 0 && strcmp(dist, "normal") != 0)
                return rs_fail(st, RS_EINVAL, "%s: distribution '%s' is not 'uniform' or "
                               "'normal'", where, dist);
            q.dist = strcmp(dist, "uniform") == 0 ? RS_MC_UNIFORM : RS_MC_NORMAL;
            if ((q.dist == RS_MC_UNIFORM && b < a) || (q.dist == RS_MC_NORMAL && b < 0))
                return rs_fail(st, RS_EINVAL, "%s: %s(a = %g, b = %g) needs %s", where, dist, a,
                               b, q.dist == RS_MC_UNIFORM ? "a <= b" : "a deviation b >= 0");
            q.kind = Q_TARGET;
            q.index = k->ntargets++;
            q.a = a, q.b = b;
        } else if (at_reset) {
            if ((rc = compile_named(P, at_reset, where, &q.expr, NULL, C_DRAW | C_START)) < 0 ||
                (rc = parse_until(P, v, where, qname, &q)) < 0) {
                te_free(q.expr);
                te_free(q.until);
                free(q.error);
                return rc;
            }
            q.kind = Q_AT_RESET;
            q.index = q.held ? k->ntargets++ : -1;
        } else if (update) {
            if ((rc = get_number(v, "init", where, 0, 0.0, &q.init, st)) < 0 ||
                (rc = compile_named(P, update, where, &q.expr, qname, 0)) < 0)
                return rc;
            q.kind = Q_UPDATE;
            q.index = k->ntargets++;
        } else {
            q.kind = Q_EXPR;
            if ((rc = compile(P, expr, where, &q.expr)) < 0)
                return rc;
        }
    } else {
        return rs_fail(st, RS_EINVAL, "%s: a string \"entity.name\" or an object is required",
                       where);
    }
    if (!(q.name = strdup(qname))) {
        te_free(q.expr);
        te_free(q.value);
        te_free(q.until);
        free(q.error);
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    }
    k->q[k->nq++] = q;
    return 0;
}

/* A copy of s the task keeps (freed with it); NULL when out of memory. */
static const char *keep(decl_t *k, const char *s)
{
    if (k->nstrings == (int)(sizeof k->strings / sizeof k->strings[0]))
        return NULL;
    return k->strings[k->nstrings++] = strdup(s);
}

/* The optional "name", "unit" and "doc" of an observation or action entry into *desc (those
 * absent keep desc's). */
static int describe(parser_t *P, json_object *o, const char *where, rs_var_desc_t *desc)
{
    const char *name, *unit, *doc;
    int rc;
    if ((rc = get_string(o, "name", where, 0, &name, P->st)) < 0 ||
        (rc = get_string(o, "unit", where, 0, &unit, P->st)) < 0 ||
        (rc = get_string(o, "doc", where, 0, &doc, P->st)) < 0)
        return rc;
    if ((name && !(desc->name = keep(P->k, name))) || (unit && !(desc->unit = keep(P->k, unit))) ||
        (doc && !(desc->doc = keep(P->k, doc))))
        return rs_fail(P->st, RS_EEXHAUSTED, "out of memory");
    return 0;
}

static int parse_observation(parser_t *P, json_object *list)
{
    decl_t *k = P->k;
    rs_status_t *st = P->st;
    int n = (int)json_object_array_length(list);
    if (n < 1 || n > RS_TASK_MAX_OBS)
        return rs_fail(st, RS_EINVAL, "observation: 1 to %d entries are required, got %d",
                       RS_TASK_MAX_OBS, n);
    for (int i = 0; i < n; i++) {
        json_object *o = json_object_array_get_idx(list, (size_t)i);
        char where[48];
        snprintf(where, sizeof where, "observation[%d]", i);
        const char *src = NULL;
        double lo = -INFINITY, hi = INFINITY, scale = 1.0;
        int rc = 0;
        if (json_object_is_type(o, json_type_string)) {
            src = json_object_get_string(o);
        } else if (json_object_is_type(o, json_type_object)) {
            static const char *const keys[] = {"expr", "name", "unit", "doc", "scale", "low",
                                               "high"};
            if ((rc = check_keys(o, where, keys, 7, st)) < 0 ||
                (rc = get_string(o, "expr", where, 1, &src, st)) < 0 ||
                (rc = get_number(o, "scale", where, 0, 1.0, &scale, st)) < 0 ||
                (rc = get_number(o, "low", where, 0, -INFINITY, &lo, st)) < 0 ||
                (rc = get_number(o, "high", where, 0, INFINITY, &hi, st)) < 0)
                return rc;
        } else {
            return rs_fail(st, RS_EINVAL, "%s: an expression or an object is required", where);
        }
        if (scale == 0.0)
            return rs_fail(st, RS_ERANGE, "%s.scale: must not be 0", where);
        if (!(lo < hi))
            return rs_fail(st, RS_ERANGE, "%s: low (%g) must be below high (%g)", where, lo, hi);
        char fallback[16];
        snprintf(fallback, sizeof fallback, "obs%d", i);
        if ((rc = compile(P, src, where, &k->obs_expr[i])) < 0)
            return rc;
        k->task.nobs = i + 1;
        if (!(k->obs_src[i] = strdup(src)))
            return rs_fail(st, RS_EEXHAUSTED, "out of memory");
        k->obs_scale[i] = scale;
        k->obs[i] = (rs_var_desc_t){keep(k, is_identifier(src) ? src : fallback),
                                    scale == 1.0 ? "" : "scaled", lo, hi, ""};
        if (!k->obs[i].name)
            return rs_fail(st, RS_EEXHAUSTED, "out of memory");
        if (json_object_is_type(o, json_type_object) && (rc = describe(P, o, where, &k->obs[i])) < 0)
            return rc;
    }
    return 0;
}

static int parse_action(parser_t *P, json_object *list)
{
    decl_t *k = P->k;
    rs_status_t *st = P->st;
    const rs_entity_model_t *em = &P->m->ent[P->e];
    int n = (int)json_object_array_length(list), max = em->nu < RS_TASK_MAX_ACT ? em->nu
                                                                                : RS_TASK_MAX_ACT;
    if (n < 1 || n > max)
        return rs_fail(st, RS_EINVAL, "action: 1 to %d entries are required ('%s' has %d "
                       "actuators), got %d", max, em->name, em->nu, n);
    int scaled = 0;
    for (int i = 0; i < n; i++) {
        json_object *o = json_object_array_get_idx(list, (size_t)i);
        char where[48];
        snprintf(where, sizeof where, "action[%d]", i);
        if (!json_object_is_type(o, json_type_object))
            return rs_fail(st, RS_EINVAL, "%s: an object is required", where);
        static const char *const keys[] = {"actuator", "low", "high", "command", "name", "unit",
                                           "doc"};
        const char *act;
        double lo, hi;
        int rc;
        if ((rc = check_keys(o, where, keys, 7, st)) < 0 ||
            (rc = get_string(o, "actuator", where, 1, &act, st)) < 0 ||
            (rc = get_number(o, "low", where, 1, 0, &lo, st)) < 0 ||
            (rc = get_number(o, "high", where, 1, 0, &hi, st)) < 0)
            return rc;
        const rs_var_desc_t *a = &em->robot->actuators[i];
        if (strcmp(act, a->name) != 0) {
            char names[160] = "";
            for (int j = 0; j < em->nu; j++)
                rs_join(names, sizeof names, "%s", em->robot->actuators[j].name);
            return rs_fail(st, RS_EINVAL, "%s.actuator: '%s' is not actuator %d of '%s'; an "
                           "action drives the first actuators in order (%s)",
                           where, act, i, em->name, names);
        }
        if (!(lo < hi))
            return rs_fail(st, RS_ERANGE, "%s: low (%g) must be below high (%g)", where, lo, hi);
        double clo = lo, chi = hi;
        json_object *c;
        if (json_object_object_get_ex(o, "command", &c)) {
            char w[64];
            snprintf(w, sizeof w, "%s.command", where);
            if (!json_object_is_type(c, json_type_array) || json_object_array_length(c) != 2)
                return rs_fail(st, RS_EINVAL, "%s: [lower, upper] is required", w);
            if ((rc = as_number(json_object_array_get_idx(c, 0), w, &clo, st)) < 0 ||
                (rc = as_number(json_object_array_get_idx(c, 1), w, &chi, st)) < 0)
                return rc;
            if (!(clo < chi))
                return rs_fail(st, RS_ERANGE, "%s: lower (%g) must be below upper (%g)", w, clo,
                               chi);
            scaled = 1;
        }
        if (clo < a->lower || chi > a->upper)
            return rs_fail(st, RS_ERANGE, "%s: commands [%g, %g] reach outside actuator '%s''s "
                           "[%g, %g] %s", where, clo, chi, a->name, a->lower, a->upper, a->unit);
        k->act[i] = (rs_var_desc_t){a->name, a->unit, lo, hi, a->doc};
        k->cmd[i] = (rs_var_desc_t){a->name, a->unit, clo, chi, a->doc};
    }
    k->task.nact = n;
    for (int i = 0; i < n; i++) {
        char where[48];
        snprintf(where, sizeof where, "action[%d]", i);
        if (scaled)
            k->act[i].unit = "1";
        int rc = describe(P, json_object_array_get_idx(list, (size_t)i), where, &k->act[i]);
        if (rc < 0)
            return rc;
    }
    k->task.cmd = scaled ? k->cmd : NULL;
    return 0;
}

static int parse_params(parser_t *P, json_object *list)
{
    decl_t *k = P->k;
    rs_status_t *st = P->st;
    int n = (int)json_object_array_length(list);
    if (n > MAX_PARAMS)
        return rs_fail(st, RS_EEXHAUSTED, "params: at most %d entries", MAX_PARAMS);
    for (int i = 0; i < n; i++) {
        json_object *o = json_object_array_get_idx(list, (size_t)i), *vals;
        char where[48];
        snprintf(where, sizeof where, "params[%d]", i);
        static const char *const keys[] = {"entity", "name", "values"};
        const char *ent = NULL, *name;
        int rc;
        if (!json_object_is_type(o, json_type_object))
            return rs_fail(st, RS_EINVAL, "%s: an object is required", where);
        if ((rc = check_keys(o, where, keys, 3, st)) < 0 ||
            (rc = get_string(o, "name", where, 1, &name, st)) < 0)
            return rc;
        if (json_object_object_get_ex(o, "entity", &vals) &&
            json_object_is_type(vals, json_type_string))
            ent = json_object_get_string(vals); /* "" is the world */
        if (!json_object_object_get_ex(o, "values", &vals) ||
            !json_object_is_type(vals, json_type_array) || json_object_array_length(vals) < 1 ||
            json_object_array_length(vals) > RS_MAX_PARAM_VALUES)
            return rs_fail(st, RS_EINVAL, "%s.values: a list of 1 to %d numbers is required",
                           where, RS_MAX_PARAM_VALUES);
        int nv = (int)json_object_array_length(vals);
        k->param_entity[i] = strdup(ent ? ent : "");
        k->param_name[i] = strdup(name);
        k->param_values[i] = malloc((size_t)nv * sizeof(double));
        k->nparams = i + 1;
        if (!k->param_entity[i] || !k->param_name[i] || !k->param_values[i])
            return rs_fail(st, RS_EEXHAUSTED, "out of memory");
        for (int j = 0; j < nv; j++)
            if ((rc = as_number(json_object_array_get_idx(vals, (size_t)j), where,
                                &k->param_values[i][j], st)) < 0)
                return rc;
        k->params[i] = (rs_task_param_t){k->param_entity[i], k->param_name[i], nv,
                                         k->param_values[i]};
    }
    k->task.nparams = n;
    k->task.params = k->params;
    return 0;
}

static int parse_reset(parser_t *P, json_object *list)
{
    decl_t *k = P->k;
    rs_status_t *st = P->st;
    int n = (int)json_object_array_length(list);
    if (n > MAX_RESET)
        return rs_fail(st, RS_EEXHAUSTED, "reset: at most %d entries", MAX_RESET);
    for (int i = 0; i < n; i++) {
        json_object *o = json_object_array_get_idx(list, (size_t)i);
        char where[48];
        snprintf(where, sizeof where, "reset[%d]", i);
        static const char *const keys[] = {"item", "dist", "a", "b", "value", "expr",
                                           "quantity"};
        const char *item, *dist, *expr, *qname;
        double a, b;
        json_object *val;
        int rc;
        if (!json_object_is_type(o, json_type_object))
            return rs_fail(st, RS_EINVAL, "%s: an object is required", where);
        if ((rc = check_keys(o, where, keys, 7, st)) < 0 ||
            (rc = get_string(o, "item", where, 1, &item, st)) < 0 ||
            (rc = get_string(o, "expr", where, 0, &expr, st)) < 0 ||
            (rc = get_string(o, "quantity", where, 0, &qname, st)) < 0)
            return rc;
        if (qname) { /* a quantity's value, computed before the start with those before it */
            int q = 0;
            while (q < k->nq && strcmp(k->q[q].name, qname) != 0)
                q++;
            if (q == k->nq)
                return rs_fail(st, RS_EINVAL, "%s.quantity: '%s' is not a quantity of the task",
                               where, qname);
            k->reset_q[i] = q + 1;
            if (q + 1 > k->npre)
                k->npre = q + 1;
            dist = "uniform", a = b = 0.0; /* the item is checked as a sampler's */
        } else if (expr) { /* constants and draws only: evaluated before the start state exists */
            int nq = k->nq;
            k->nq = 0;
            rc = compile_named(P, expr, where, &k->reset_expr[i], NULL, C_DRAW);
            k->nq = nq;
            if (rc < 0)
                return rc;
            dist = "uniform", a = b = 0.0; /* the item is checked as a sampler's */
        } else if ((k->reset_fixed[i] = json_object_object_get_ex(o, "value", &val))) {
            /* a fixed value: checked as the sampler uniform(value, value), never drawn */
            if ((rc = get_number(o, "value", where, 1, 0, &k->reset_value[i], st)) < 0)
                return rc;
            dist = "uniform", a = b = k->reset_value[i];
        } else if ((rc = get_string(o, "dist", where, 1, &dist, st)) < 0 ||
                   (rc = get_number(o, "a", where, 1, 0, &a, st)) < 0 ||
                   (rc = get_number(o, "b", where, 1, 0, &b, st)) < 0) {
            return rc;
        }
        if (rs_mc_parse_sampler(P->m, item, dist, a, b, &k->reset[i], st) < 0)
            return at(st, where);
        k->nreset = i + 1;
    }
    /* the quantities computed before the start: through the last a reset item takes, and
     * through any "until" that redraws among them; they read no state */
    for (int i = k->npre; i < k->nq; i++)
        if (k->q[i].until && k->q[i].redraw < k->npre)
            k->npre = i + 1;
    for (int i = 0; i < k->npre; i++) {
        int kind = k->q[i].kind;
        if (kind != Q_PARAM && kind != Q_TARGET && kind != Q_AT_RESET && kind != Q_ARGMIN &&
            kind != Q_EXPR)
            return rs_fail(st, RS_EINVAL, "reset: the quantities up to '%s' are computed before "
                           "the episode's start state, for the reset items that take them, so "
                           "they may be parameters, draws, expressions and argmins only; "
                           "quantities.%s reads the state (define it after them)",
                           k->q[k->npre - 1].name, k->q[i].name);
    }
    return 0;
}

/* "require": conditions on the parameters a world must meet to run the task, each with the
 * error a world that does not meet it gets. */
static int parse_require(parser_t *P, json_object *list)
{
    decl_t *k = P->k;
    rs_status_t *st = P->st;
    int n = (int)json_object_array_length(list);
    if (n > MAX_REQUIRE)
        return rs_fail(st, RS_EEXHAUSTED, "require: at most %d entries", MAX_REQUIRE);
    for (int i = 0; i < n; i++) {
        json_object *o = json_object_array_get_idx(list, (size_t)i);
        char where[48];
        snprintf(where, sizeof where, "require[%d]", i);
        static const char *const keys[] = {"expr", "error"};
        const char *expr, *error;
        int rc;
        if (!json_object_is_type(o, json_type_object))
            return rs_fail(st, RS_EINVAL, "%s: an object {\"expr\", \"error\"} is required",
                           where);
        if ((rc = check_keys(o, where, keys, 2, st)) < 0 ||
            (rc = get_string(o, "expr", where, 1, &expr, st)) < 0 ||
            (rc = get_string(o, "error", where, 1, &error, st)) < 0)
            return rc;
        char w[64];
        snprintf(w, sizeof w, "%s.expr", where);
        if ((rc = compile_named(P, expr, w, &k->require[i], NULL, C_PARAMS)) < 0)
            return rc;
        k->nrequire = i + 1;
        if (!(k->require_error[i] = strdup(error)))
            return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    }
    return 0;
}

static int parse_info(parser_t *P, json_object *list)
{
    decl_t *k = P->k;
    rs_status_t *st = P->st;
    int n = 0, listed = 0;
    int len = list ? (int)json_object_array_length(list) : 0;
    for (int i = 0; i < len; i++) {
        json_object *o = json_object_array_get_idx(list, (size_t)i);
        char where[48];
        snprintf(where, sizeof where, "info[%d]", i);
        if (n == RS_TASK_MAX_INFO)
            return rs_fail(st, RS_EEXHAUSTED, "info: at most %d figures%s", RS_TASK_MAX_INFO,
                           k->success ? " (with 'success')" : "");
        const char *name = json_object_is_type(o, json_type_string) ? json_object_get_string(o)
                                                                    : "";
        if (k->success && strcmp(name, "success") == 0) { /* the success flag, here */
            k->info_names[n] = "success";
            k->info_q[n++] = -1;
            listed = 1;
            continue;
        }
        int q = 0;
        while (q < k->nq && strcmp(k->q[q].name, name) != 0)
            q++;
        if (q == k->nq)
            return rs_fail(st, RS_EINVAL, "%s: '%s' is not a quantity of the task", where, name);
        k->info_names[n] = k->q[q].name;
        k->info_q[n++] = q;
    }
    if (k->success && !listed) { /* the success flag last when the list does not place it */
        if (n == RS_TASK_MAX_INFO)
            return rs_fail(st, RS_EEXHAUSTED, "info: at most %d figures with 'success'",
                           RS_TASK_MAX_INFO);
        k->info_names[n] = "success";
        k->info_q[n++] = -1;
    }
    k->task.ninfo = n;
    k->task.info = k->info_names;
    return 0;
}

/* A member that must be an array (required or not). */
static int get_array(json_object *root, const char *key, int required, json_object **out,
                     rs_status_t *st)
{
    *out = NULL;
    if (!json_object_object_get_ex(root, key, out)) {
        return required ? rs_fail(st, RS_EINVAL, "task: '%s' is required", key) : 0;
    }
    if (!json_object_is_type(*out, json_type_array))
        return rs_fail(st, RS_EINVAL, "%s: a list is required", key);
    return 0;
}

static char *dup_or_empty(const char *s) { return strdup(s ? s : ""); }

/* The nodes of compiled expression n (0 for none): what one evaluation of it costs. */
static long long nodes(const te_expr *n)
{
    if (!n)
        return 0;
    long long c = 1;
    int type = n->type & 0x1f;
    if (type >= TE_FUNCTION0 && type <= TE_FUNCTION7)
        for (int i = 0; i < type - TE_FUNCTION0; i++)
            c += nodes(n->parameters[i]);
    return c;
}

/* The node evaluations quantity q costs once at worst (an argmin over the longest list a
 * parameter can hold), with its until. */
static long long quantity_cost(const quantity_t *q)
{
    long long c = 1 + nodes(q->until);
    if (q->kind == Q_ARGMIN)
        return c + (RS_MAX_PARAM_VALUES + q->elem - 1) / q->elem * nodes(q->expr) +
               nodes(q->value);
    return c + nodes(q->expr);
}

/* Refuse a document whose worst case would hold the server: a control step evaluating more
 * than RS_TASK_DOC_MAX_STEP_WORK nodes, or an episode start more than
 * RS_TASK_DOC_MAX_RESET_WORK (each until failing all its tries, each try recomputing the
 * quantities from its redraw through it: fill_range counts an until's tries over the whole
 * start, so the costs add). RS_ERANGE naming the limit. */
static int check_work(const decl_t *k, rs_status_t *st)
{
    long long pass = 0, step;
    for (int i = 0; i < k->nq; i++)
        pass += quantity_cost(&k->q[i]);
    step = pass + nodes(k->reward) + nodes(k->success) + nodes(k->termination);
    for (int i = 0; i < k->task.nobs; i++)
        step += nodes(k->obs_expr[i]);
    if (step > RS_TASK_DOC_MAX_STEP_WORK)
        return rs_fail(st, RS_ERANGE, "task: a control step may evaluate %lld expression terms "
                       "(the quantities, an argmin over a list of %d values, the reward, flags "
                       "and observation), over the limit of %ld per control step", step,
                       RS_MAX_PARAM_VALUES, RS_TASK_DOC_MAX_STEP_WORK);
    long long reset = pass;
    for (int i = 0; i < MAX_RESET; i++)
        reset += nodes(k->reset_expr[i]);
    for (int i = 0; i < k->nq; i++) {
        const quantity_t *q = &k->q[i];
        if (!q->until)
            continue;
        long long draw = 0;
        for (int j = q->redraw; j <= i; j++)
            draw += quantity_cost(&k->q[j]);
        reset += q->tries * draw;
        if (reset > RS_TASK_DOC_MAX_RESET_WORK)
            return rs_fail(st, RS_ERANGE, "quantities.%s: rejection sampling of %d tries x %lld "
                           "expression terms a draw may evaluate %lld terms at an episode's "
                           "start, over the limit of %ld; lower 'tries'", q->name, q->tries,
                           draw, reset, RS_TASK_DOC_MAX_RESET_WORK);
    }
    return 0;
}

static int parse(parser_t *P, json_object *root, rs_model_t *m)
{
    decl_t *k = P->k;
    rs_status_t *st = P->st;
    if (!json_object_is_type(root, json_type_object))
        return rs_fail(st, RS_EINVAL, "task: a JSON object is required");
    static const char *const keys[] = {"name", "preset", "entity", "doc", "reward_doc",
                                       "params", "quantities", "observation", "action",
                                       "reward", "reward_scale", "success", "termination",
                                       "max_steps", "reset", "info", "clip_observation",
                                       "require"};
    const char *name, *preset, *entity, *doc, *reward_doc;
    json_object *params, *quantities = NULL, *obs, *act, *reset, *info, *require;
    double max_steps, reward_scale;
    int rc;
    if ((rc = check_keys(root, "task", keys, (int)(sizeof keys / sizeof keys[0]), st)) < 0 ||
        (rc = get_string(root, "name", "task", 1, &name, st)) < 0 ||
        (rc = get_string(root, "preset", "task", 1, &preset, st)) < 0 ||
        (rc = get_string(root, "entity", "task", 1, &entity, st)) < 0 ||
        (rc = get_string(root, "doc", "task", 0, &doc, st)) < 0 ||
        (rc = get_string(root, "reward_doc", "task", 0, &reward_doc, st)) < 0 ||
        (rc = get_number(root, "max_steps", "task", 1, 0, &max_steps, st)) < 0 ||
        (rc = get_number(root, "reward_scale", "task", 0, 0, &reward_scale, st)) < 0 ||
        (rc = get_array(root, "params", 0, &params, st)) < 0 ||
        (rc = get_array(root, "observation", 1, &obs, st)) < 0 ||
        (rc = get_array(root, "action", 1, &act, st)) < 0 ||
        (rc = get_array(root, "reset", 0, &reset, st)) < 0 ||
        (rc = get_array(root, "info", 0, &info, st)) < 0 ||
        (rc = get_array(root, "require", 0, &require, st)) < 0)
        return rc;
    json_object *clip;
    k->clip_observation = 1;
    if (json_object_object_get_ex(root, "clip_observation", &clip)) {
        if (!json_object_is_type(clip, json_type_boolean))
            return rs_fail(st, RS_EINVAL, "clip_observation: true or false is required");
        k->clip_observation = json_object_get_boolean(clip);
    }
    if (strlen(name) >= 64)
        return rs_fail(st, RS_EINVAL, "name: at most 63 characters");
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            return rs_fail(st, RS_EINVAL, "name: '%s' may hold letters, digits, '-', '_' and "
                           "'.' only", name);
    if (max_steps < 1 || max_steps > 1e9 || max_steps != floor(max_steps))
        return rs_fail(st, RS_ERANGE, "max_steps: a whole number from 1 to 1e9 is required");
    if (reward_scale < 0)
        return rs_fail(st, RS_ERANGE, "reward_scale: must be > 0");
    if (!(k->name = strdup(name)) || !(k->preset = strdup(preset)) ||
        !(k->entity = strdup(entity)) || !(k->doc = dup_or_empty(doc)) ||
        !(k->reward_doc = dup_or_empty(reward_doc)))
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    k->task.name = k->name;
    k->task.preset = k->preset;
    k->task.entity = k->entity;
    k->task.doc = k->doc;
    k->task.reward = k->reward_doc;
    k->task.max_episode_steps = (uint32_t)max_steps;
    k->task.reward_scale = reward_scale;
    /* the preset's model with the task's parameter defaults: what the items are checked on */
    if (params && (rc = parse_params(P, params)) < 0)
        return rc;
    rs_param_t pv[MAX_PARAMS];
    for (int i = 0; i < k->nparams; i++)
        pv[i] = (rs_param_t){k->params[i].entity, k->params[i].name, k->params[i].values,
                             (size_t)k->params[i].n};
    if ((rc = rs_model_build(m, preset, pv, (size_t)k->nparams, st)) < 0)
        return at(st, params ? "preset and params" : "preset");
    P->m = m;
    if ((P->e = rs_model_entity(m, entity)) < 0)
        return rs_fail(st, RS_ENOTFOUND, "entity: preset '%s' has no entity '%s'", preset,
                       entity);
    k->nentities = m->nentities;
    for (int e = 0; e < m->nentities; e++) {
        k->layout[e].robot = m->ent[e].robot;
        k->layout[e].x_off = m->ent[e].x_off;
        k->layout[e].u_off = m->ent[e].u_off;
        k->layout[e].s_off = m->ent[e].s_off;
    }
    if (json_object_object_get_ex(root, "quantities", &quantities)) {
        if (!json_object_is_type(quantities, json_type_object))
            return rs_fail(st, RS_EINVAL, "quantities: an object (name: definition) is required");
        json_object_object_foreach(quantities, qname, qv)
            if ((rc = parse_quantity(P, qname, qv)) < 0)
                return rc;
    }
    if ((rc = parse_observation(P, obs)) < 0 || (rc = parse_action(P, act)) < 0 ||
        (rc = get_expr(P, root, "reward", 1, &k->reward, &k->reward_src)) < 0 ||
        (rc = get_expr(P, root, "success", 0, &k->success, &k->success_src)) < 0 ||
        (rc = get_expr(P, root, "termination", 0, &k->termination, &k->termination_src)) < 0 ||
        (reset && (rc = parse_reset(P, reset)) < 0) || (rc = parse_info(P, info)) < 0 ||
        (require && (rc = parse_require(P, require)) < 0) || (rc = check_work(k, st)) < 0)
        return rc;
    if (!k->reward_doc[0] && k->reward_src)
        k->task.reward = k->reward_src; /* no text for GetSpec: the expression itself */
    k->task.obs = k->obs;
    k->task.act = k->act;
    k->task.names = k->names;
    k->task.reset = doc_reset;
    k->task.observe = doc_observe;
    k->task.evaluate = doc_evaluate;
    return 0;
}

/* The documents a family's earlier documents extend (see parse_source). */
typedef struct known_docs {
    int n;
    const char *const *sources;
} known_docs_t;

static const char *doc_name(json_object *doc)
{
    json_object *v;
    return json_object_is_type(doc, json_type_object) && json_object_object_get_ex(doc, "name", &v) &&
                   json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : "";
}

#define MAX_EXTENDS 4

/* A document with "extends": the named task's document (one of `known`, else a declared
 * task's), itself extended, with this document's items in place of its own. */
static json_object *extend(json_object *root, const known_docs_t *known, int depth,
                           rs_status_t *st)
{
    json_object *ext;
    if (!json_object_is_type(root, json_type_object) ||
        !json_object_object_get_ex(root, "extends", &ext))
        return root;
    const char *base_name = json_object_get_string(ext), *src = NULL;
    json_object *base = NULL;
    for (int i = 0; known && i < known->n && !base; i++) {
        json_object *b = json_tokener_parse(known->sources[i]);
        if (b && strcmp(doc_name(b), base_name) == 0)
            base = b;
        else
            json_object_put(b);
    }
    /* a family's documents extend their own (its lock is held); others any declared task */
    const rs_task_t *t = base ? NULL : known ? rs_task_doc_find(base_name) : rs_task_find(base_name);
    if (!base && t && (src = rs_task_doc_source(t)))
        base = json_tokener_parse(src);
    if (!base || depth == MAX_EXTENDS) {
        if (base)
            rs_fail(st, RS_EINVAL, "extends: '%s' and the tasks it extends go more than %d "
                    "levels deep", base_name, MAX_EXTENDS);
        else
            rs_fail(st, RS_ENOTFOUND, "extends: no declared task '%s' to extend", base_name);
        json_object_put(base);
        json_object_put(root);
        return NULL;
    }
    if (!(base = extend(base, known, depth + 1, st))) {
        json_object_put(root);
        return NULL;
    }
    /* a reward of its own comes with its own scale and text: the base's (FingerPush-v1's
     * 0.1, its description of another reward) would apply to it silently */
    if (json_object_object_get_ex(root, "reward", NULL)) {
        if (!json_object_object_get_ex(root, "reward_scale", NULL))
            json_object_object_del(base, "reward_scale");
        if (!json_object_object_get_ex(root, "reward_doc", NULL))
            json_object_object_del(base, "reward_doc");
    }
    json_object_object_foreach(root, key, val)
        if (strcmp(key, "extends") != 0)
            json_object_object_add(base, key, json_object_get(val));
    json_object_put(root);
    return base;
}

static rs_task_t *parse_source(const char *json, size_t len, const known_docs_t *known,
                               rs_status_t *st)
{
    json_object *root = rs_json_parse(json, len, "task document", RS_TASK_DOC_MAX_SOURCE,
                                      RS_TASK_DOC_MAX_NESTING, st);
    if (root)
        root = extend(root, known, 0, st);
    if (!root)
        return NULL;
    decl_t *k = calloc(1, sizeof *k);
    rs_model_t *m = calloc(1, sizeof *m);
    int rc;
    if (!k || !m || !(k->source = malloc(len + 1))) {
        rc = rs_fail(st, RS_EEXHAUSTED, "out of memory");
    } else {
        memcpy(k->source, json, len);
        k->source[len] = 0;
        parser_t P = {.k = k, .e = -1, .st = st};
        rc = parse(&P, root, m);
    }
    json_object_put(root);
    free(m);
    rs_task_t *t = k ? &k->task : NULL;
    if (rc < 0)
        rs_task_doc_destroy(&t);
    return t;
}

rs_task_t *rs_task_doc_parse(const char *json, size_t len, rs_status_t *st)
{
    return parse_source(json, len, NULL, st);
}

void rs_task_doc_destroy(rs_task_t **p)
{
    if (!p || !*p)
        return;
    decl_t *k = (decl_t *)*p;
    for (int i = 0; i < k->nq; i++) {
        free(k->q[i].name);
        te_free(k->q[i].expr);
        te_free(k->q[i].until);
        te_free(k->q[i].value);
        free(k->q[i].error);
    }
    for (int i = 0; i < RS_TASK_MAX_OBS; i++) {
        te_free(k->obs_expr[i]);
        free(k->obs_src[i]);
    }
    for (int i = 0; i < k->nstrings; i++)
        free(k->strings[i]);
    for (int i = 0; i < MAX_RESET; i++)
        te_free(k->reset_expr[i]);
    for (int i = 0; i < k->nparams; i++) {
        free(k->param_entity[i]);
        free(k->param_name[i]);
        free(k->param_values[i]);
    }
    for (int i = 0; i < k->nrequire; i++) {
        te_free(k->require[i]);
        free(k->require_error[i]);
    }
    te_free(k->reward);
    te_free(k->success);
    te_free(k->termination);
    free(k->reward_src);
    free(k->success_src);
    free(k->termination_src);
    free(k->source);
    free(k->name);
    free(k->preset);
    free(k->entity);
    free(k->doc);
    free(k->reward_doc);
    free(k);
    *p = NULL;
}

const char *rs_task_doc_source(const rs_task_t *t)
{
    return t && t->reset == doc_reset ? ((const decl_t *)t)->source : NULL;
}

static int is_builtin(const rs_task_t *t)
{
    return !rs_task_doc_source(t) || ((const decl_t *)t)->builtin;
}

/* ---- the server's own tasks declared as documents (a family's JSON array) ---------------- */

#define MAX_FAMILIES 8
#define MAX_FAMILY_TASKS 16

static pthread_mutex_t family_lock = PTHREAD_MUTEX_INITIALIZER;
static struct family_tasks {
    const rs_task_family_t *family;
    int n;
    const rs_task_t *tasks[MAX_FAMILY_TASKS];
} families[MAX_FAMILIES];
static int nfamilies;

/* Parse family f's documents (each may extend an earlier one); 0 or the first error. */
static int parse_family(const rs_task_family_t *f, struct family_tasks *out, rs_status_t *st)
{
    json_object *list = rs_json_parse(f->documents, strlen(f->documents), "task family",
                                      RS_TASK_DOC_MAX_SOURCE * 4, RS_TASK_DOC_MAX_NESTING,
                                      st);
    if (!list)
        return st->code;
    int rc = 0, n = json_object_is_type(list, json_type_array)
                        ? (int)json_object_array_length(list) : 0;
    const char *sources[MAX_FAMILY_TASKS];
    for (int i = 0; i < n && i < MAX_FAMILY_TASKS && rc == 0; i++) {
        const char *src = json_object_to_json_string_ext(json_object_array_get_idx(list, (size_t)i),
                                                         JSON_C_TO_STRING_PLAIN);
        known_docs_t known = {i, sources};
        rs_task_t *t = parse_source(src, strlen(src), &known, st);
        if (!t) {
            rc = st->code;
            break;
        }
        ((decl_t *)t)->builtin = 1;
        out->tasks[out->n++] = t;
        sources[i] = ((decl_t *)t)->source;
    }
    json_object_put(list);
    return rc;
}

const rs_task_t *const *rs_task_doc_family(const rs_task_family_t *f, int *n)
{
    pthread_mutex_lock(&family_lock);
    struct family_tasks *ft = NULL;
    for (int i = 0; i < nfamilies && !ft; i++)
        if (families[i].family == f)
            ft = &families[i];
    if (!ft && nfamilies < MAX_FAMILIES) {
        rs_status_t st;
        ft = &families[nfamilies++];
        ft->family = f;
        if (parse_family(f, ft, &st) < 0) /* a document of the server's own: a test catches it */
            fprintf(stderr, "robosim: a built-in task document does not parse: %s\n",
                    st.message);
    }
    pthread_mutex_unlock(&family_lock);
    *n = ft ? ft->n : 0;
    return ft ? ft->tasks : NULL;
}

/* ---- the process's registered tasks ------------------------------------------------------- */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static rs_task_t *registered[RS_TASK_DOC_MAX_REGISTERED];
static int nregistered;

static const rs_task_t *find_locked(const char *name)
{
    for (int i = 0; i < nregistered; i++)
        if (strcmp(registered[i]->name, name) == 0)
            return registered[i];
    return NULL;
}

int rs_task_doc_register(const char *json, size_t len, const rs_task_t **out, rs_status_t *st)
{
    rs_task_t *t = rs_task_doc_parse(json, len, st);
    if (!t)
        return st->code;
    const rs_task_t *known = rs_task_find(t->name);
    if (known && is_builtin(known)) {
        int rc = rs_fail(st, RS_EINVAL, "name: '%s' is a built-in task; name the document "
                         "otherwise", t->name);
        rs_task_doc_destroy(&t);
        return rc;
    }
    int rc = 0;
    pthread_mutex_lock(&registry_lock);
    known = find_locked(t->name);
    if (known && strcmp(rs_task_doc_source(known), rs_task_doc_source(t)) != 0)
        rc = rs_fail(st, RS_EINVAL, "name: task '%s' is registered with another document; "
                     "give this one another name (e.g. a new -vN)", t->name);
    else if (!known && nregistered == RS_TASK_DOC_MAX_REGISTERED)
        rc = rs_fail(st, RS_EEXHAUSTED, "this server holds at most %d declared tasks",
                     RS_TASK_DOC_MAX_REGISTERED);
    else if (!known)
        registered[nregistered++] = t, known = t, t = NULL;
    pthread_mutex_unlock(&registry_lock);
    rs_task_doc_destroy(&t);
    if (out)
        *out = rc < 0 ? NULL : known;
    return rc;
}

rs_task_t *rs_task_doc_unregister(const rs_task_t *t)
{
    rs_task_t *out = NULL;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < nregistered && !out; i++)
        if (registered[i] == t) {
            out = registered[i];
            registered[i] = registered[--nregistered];
        }
    pthread_mutex_unlock(&registry_lock);
    return out;
}

const rs_task_t *rs_task_doc_find(const char *name)
{
    pthread_mutex_lock(&registry_lock);
    const rs_task_t *t = find_locked(name);
    pthread_mutex_unlock(&registry_lock);
    return t;
}

int rs_task_doc_names(const char **names, int max)
{
    pthread_mutex_lock(&registry_lock);
    int n = 0;
    for (; n < nregistered && n < max; n++)
        names[n] = registered[n]->name;
    pthread_mutex_unlock(&registry_lock);
    return n;
}

#define MAX_TASKS (64 + RS_TASK_DOC_MAX_REGISTERED)

/* ---- task lookup: the built-in families' rows and the declared tasks, by name ---------- */

/* Family f's rows: its C rows, or its documents parsed. */
static const rs_task_t *family_task(const rs_task_family_t *f, int i, int *n)
{
    if (!f->documents) {
        *n = f->n;
        return i < f->n ? &f->tasks[i] : NULL;
    }
    const rs_task_t *const *t = rs_task_doc_family(f, n);
    return i < *n ? t[i] : NULL;
}

const rs_task_t *rs_task_find(const char *name)
{
    int nfam;
    const rs_task_family_t *const *fam = rs_task_families(&nfam);
    for (int f = 0; name && f < nfam; f++) {
        int n = 0;
        const rs_task_t *t;
        for (int i = 0; (t = family_task(fam[f], i, &n)) != NULL; i++)
            if (strcmp(t->name, name) == 0)
                return t;
    }
    return name ? rs_task_doc_find(name) : NULL; /* declared tasks */
}

/* The built-in and the declared tasks' names, NULL-terminated: a copy per thread, made at each
 * call (tasks may be registered meanwhile by another shard's thread), valid until the calling
 * thread's next call. */
const char *const *rs_task_names(void)
{
    static _Thread_local const char *names[MAX_TASKS + 1];
    int n = 0;
    int nfam;
    const rs_task_family_t *const *fam = rs_task_families(&nfam);
    for (int f = 0; f < nfam; f++) {
        int nf = 0;
        const rs_task_t *t;
        for (int i = 0; n < MAX_TASKS && (t = family_task(fam[f], i, &nf)) != NULL; i++)
            names[n++] = t->name;
    }
    n += rs_task_doc_names(names + n, MAX_TASKS - n);
    names[n] = NULL;
    return names;
}
