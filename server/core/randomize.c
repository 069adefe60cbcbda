/* Randomized physics per episode; see rs_randomize.h. */
#include "rs_randomize.h"
#include "rs_robot.h"
#include "rs_task.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct rs_randomize {
    size_t n;
    rs_mc_sampler_t *s;
    rs_randomize_item_t *items; /* item and dist strings owned here */
    double *values;             /* the last reset's draws */
    /* scratch for one draw's parameter list (group_params) */
    rs_param_t *params;
    double *vals;
};

/* The draws use their own stream of the reset seed, apart from the task's reset draws. */
#define RANDOMIZE_STREAM 0x52414E444F4D495AULL

void rs_randomize_free(struct rs_randomize **pr)
{
    struct rs_randomize *r = *pr;
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free((char *)r->items[i].item);
        free((char *)r->items[i].dist);
    }
    free(r->s);
    free(r->items);
    free(r->values);
    free(r->params);
    free(r->vals);
    free(r);
    *pr = NULL;
}

static char *dup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    return p ? memcpy(p, s, n) : NULL;
}

/* r->params from r->values: the samplers of one parameter make one rs_param_t, the model's
 * values with the drawn elements replaced. Returns the number of parameters. */
static size_t group_params(const rs_model_t *m, struct rs_randomize *r)
{
    size_t np = 0;
    for (size_t i = 0; i < r->n; i++) {
        const rs_entity_model_t *em = &m->ent[r->s[i].entity];
        const rs_param_desc_t *pd = &em->robot->params[r->s[i].param];
        size_t g = 0;
        while (g < np && !(strcmp(r->params[g].entity, em->name) == 0 &&
                           strcmp(r->params[g].name, pd->name) == 0))
            g++;
        if (g == np) {
            memcpy(r->vals + np * RS_MAX_PARAM_VALUES, em->p + pd->offset,
                   (size_t)em->plen[r->s[i].param] * sizeof *r->vals);
            r->params[np++] = (rs_param_t){em->name, pd->name, r->vals + g * RS_MAX_PARAM_VALUES,
                                           (size_t)em->plen[r->s[i].param]};
        }
        r->vals[g * RS_MAX_PARAM_VALUES + r->s[i].index] = r->values[i];
    }
    return np;
}

int rs_world_set_randomize(rs_world_t *w, const rs_randomize_item_t *items, size_t n,
                           rs_status_t *st)
{
    const rs_model_t *m = w->model;
    if (n == 0) {
        rs_randomize_free(&w->randomize);
        return 0;
    }
    if (n > (size_t)RS_MAX_PARAMS * 4)
        return rs_fail(st, RS_ERANGE, "%zu randomized parameters; at most %d", n,
                       RS_MAX_PARAMS * 4);
    struct rs_randomize *r = calloc(1, sizeof *r);
    if (!r || !(r->s = calloc(n, sizeof *r->s)) || !(r->items = calloc(n, sizeof *r->items)) ||
        !(r->values = calloc(n, sizeof *r->values)) ||
        !(r->params = calloc(n, sizeof *r->params)) ||
        !(r->vals = calloc(n * RS_MAX_PARAM_VALUES, sizeof *r->vals))) {
        rs_randomize_free(&r);
        return rs_fail(st, RS_EEXHAUSTED, "out of memory for randomized parameters");
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const rs_randomize_item_t *it = &items[i];
        rs_mc_sampler_t *s = &r->s[i];
        if ((rc = rs_mc_parse_sampler(m, it->item, it->dist, it->a, it->b, s, st)) < 0)
            break;
        for (size_t j = 0; j < i; j++)
            if (r->s[j].entity == s->entity && r->s[j].param == s->param &&
                r->s[j].index == s->index)
                rc = rs_fail(st, RS_EINVAL, "randomize '%s': this parameter is already "
                                            "randomized (as '%s')",
                             it->item, items[j].item);
        const rs_param_desc_t *pd = &m->ent[s->entity].robot->params[s->param];
        if (rc == 0 && rs_robot_param_is_choice(m->ent[s->entity].robot, s->param))
            rc = rs_fail(st, RS_EINVAL,
                         "randomize '%s': the parameter is a choice among the whole numbers "
                         "%g to %g, which a range would draw between; set it with the world's "
                         "parameters, or create one world per choice",
                         it->item, pd->lower, pd->upper);
        if (rc == 0 && s->dist == RS_MC_UNIFORM && (it->a < pd->lower || it->b > pd->upper))
            rc = rs_fail(st, RS_ERANGE,
                         "randomize '%s': uniform(%g, %g) leaves the parameter's range [%g, %g] "
                         "%s",
                         it->item, it->a, it->b, pd->lower, pd->upper, pd->unit);
        if (rc == 0 && s->dist == RS_MC_NORMAL && (it->a < pd->lower || it->a > pd->upper))
            rc = rs_fail(st, RS_ERANGE,
                         "randomize '%s': normal mean %g is outside the parameter's range "
                         "[%g, %g] %s",
                         it->item, it->a, pd->lower, pd->upper, pd->unit);
        r->items[i] = (rs_randomize_item_t){dup(it->item), dup(it->dist), it->a, it->b};
        r->n = i + 1;
        if (rc == 0 && (!r->items[i].item || !r->items[i].dist))
            rc = rs_fail(st, RS_EEXHAUSTED, "out of memory for randomized parameters");
    }
    if (rc < 0) {
        rs_randomize_free(&r);
        return rc;
    }
    /* the model must accept the ends of each range (a parameter the model refuses to change,
     * or one whose change the world's task refuses, fails here rather than at a reset) */
    for (int end = 0; end < 2 && rc == 0; end++) {
        for (size_t i = 0; i < n; i++)
            r->values[i] = r->s[i].dist == RS_MC_UNIFORM ? (end ? r->s[i].b : r->s[i].a)
                                                         : r->s[i].a;
        rs_model_t tmp = *m;
        size_t np = group_params(m, r);
        rc = rs_model_set_params(&tmp, r->params, np, st);
        if (rc == 0 && w->task)
            rc = rs_task_check_model(w->task, &tmp, st);
    }
    if (rc < 0) {
        rs_randomize_free(&r);
        return rc;
    }
    for (size_t i = 0; i < n; i++)
        r->values[i] = NAN; /* nothing drawn yet */
    rs_randomize_free(&w->randomize);
    w->randomize = r;
    return 0;
}

size_t rs_world_randomize_count(const rs_world_t *w)
{
    return w->randomize ? w->randomize->n : 0;
}

const rs_randomize_item_t *rs_world_randomize_item(const rs_world_t *w, size_t i)
{
    return w->randomize && i < w->randomize->n ? &w->randomize->items[i] : NULL;
}

const double *rs_world_randomized(const rs_world_t *w)
{
    return w->randomize ? w->randomize->values : NULL;
}

size_t rs_randomize_draw(struct rs_randomize *r, const rs_model_t *m, uint64_t seed,
                         const rs_param_t **params)
{
    rs_mc_draw(r->s, r->n, seed ^ RANDOMIZE_STREAM, 0, r->values);
    for (size_t i = 0; i < r->n; i++) {
        const rs_param_desc_t *pd = &m->ent[r->s[i].entity].robot->params[r->s[i].param];
        if (r->values[i] < pd->lower) /* a normal's tail, clipped to the parameter's range */
            r->values[i] = pd->lower;
        if (r->values[i] > pd->upper)
            r->values[i] = pd->upper;
    }
    *params = r->params;
    return group_params(m, r);
}
