/* A task document parsed (rs_task_doc.h, task_decl.h): its items checked against the preset's
 * model section by section, its expressions compiled, its worst-case work bounded, a document
 * that "extends" another merged onto it first. The quantities are task_quantity.c's; the
 * evaluation task_eval.c's; which tasks a name may extend, the registry's (task_registry.c). */
#include "task_decl.h"
#include "rs_json.h"
#include "rs_limits.h"
#include "rs_registry.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Expression `key` of the task compiled into *out, its source kept in *src_out. */
static int get_expr(parser_t *P, json_object *o, const char *key, int required, te_expr **out,
                    char **src_out)
{
    const char *src;
    *out = NULL;
    int rc = rs_json_string(o, key, "task", required, &src, P->st);
    if (rc < 0 || !src || (rc = rs_task_compile(P, src, key, out, NULL, 0)) < 0)
        return rc;
    if (!(*src_out = strdup(src)))
        return rs_fail(P->st, RS_EEXHAUSTED, "out of memory");
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
    if ((rc = rs_json_string(o, "name", where, 0, &name, P->st)) < 0 ||
        (rc = rs_json_string(o, "unit", where, 0, &unit, P->st)) < 0 ||
        (rc = rs_json_string(o, "doc", where, 0, &doc, P->st)) < 0)
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
            if ((rc = rs_json_check_keys(o, where, keys, 7, st)) < 0 ||
                (rc = rs_json_string(o, "expr", where, 1, &src, st)) < 0 ||
                (rc = rs_json_number(o, "scale", where, 0, 1.0, &scale, st)) < 0 ||
                (rc = rs_json_number(o, "low", where, 0, -INFINITY, &lo, st)) < 0 ||
                (rc = rs_json_number(o, "high", where, 0, INFINITY, &hi, st)) < 0)
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
        if ((rc = rs_task_compile(P, src, where, &k->obs_expr[i], NULL, 0)) < 0)
            return rc;
        k->task.nobs = i + 1;
        if (!(k->obs_src[i] = strdup(src)))
            return rs_fail(st, RS_EEXHAUSTED, "out of memory");
        k->obs_scale[i] = scale;
        k->obs[i] = (rs_var_desc_t){keep(k, rs_expr_identifier(src) ? src : fallback),
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
        if ((rc = rs_json_check_keys(o, where, keys, 7, st)) < 0 ||
            (rc = rs_json_string(o, "actuator", where, 1, &act, st)) < 0 ||
            (rc = rs_json_number(o, "low", where, 1, 0, &lo, st)) < 0 ||
            (rc = rs_json_number(o, "high", where, 1, 0, &hi, st)) < 0)
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
            if ((rc = rs_json_as_number(json_object_array_get_idx(c, 0), w, &clo, st)) < 0 ||
                (rc = rs_json_as_number(json_object_array_get_idx(c, 1), w, &chi, st)) < 0)
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
        if ((rc = rs_json_check_keys(o, where, keys, 3, st)) < 0 ||
            (rc = rs_json_string(o, "name", where, 1, &name, st)) < 0)
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
            if ((rc = rs_json_as_number(json_object_array_get_idx(vals, (size_t)j), where,
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
        if ((rc = rs_json_check_keys(o, where, keys, 7, st)) < 0 ||
            (rc = rs_json_string(o, "item", where, 1, &item, st)) < 0 ||
            (rc = rs_json_string(o, "expr", where, 0, &expr, st)) < 0 ||
            (rc = rs_json_string(o, "quantity", where, 0, &qname, st)) < 0)
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
            rc = rs_task_compile(P, expr, where, &k->reset_expr[i], NULL, C_DRAW);
            k->nq = nq;
            if (rc < 0)
                return rc;
            dist = "uniform", a = b = 0.0; /* the item is checked as a sampler's */
        } else if ((k->reset_fixed[i] = json_object_object_get_ex(o, "value", &val))) {
            /* a fixed value: checked as the sampler uniform(value, value), never drawn */
            if ((rc = rs_json_number(o, "value", where, 1, 0, &k->reset_value[i], st)) < 0)
                return rc;
            dist = "uniform", a = b = k->reset_value[i];
        } else if ((rc = rs_json_string(o, "dist", where, 1, &dist, st)) < 0 ||
                   (rc = rs_json_number(o, "a", where, 1, 0, &a, st)) < 0 ||
                   (rc = rs_json_number(o, "b", where, 1, 0, &b, st)) < 0) {
            return rc;
        }
        if (rs_mc_parse_sampler(P->m, item, dist, a, b, &k->reset[i], st) < 0)
            return rs_json_at(st, where);
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
        if ((rc = rs_json_check_keys(o, where, keys, 2, st)) < 0 ||
            (rc = rs_json_string(o, "expr", where, 1, &expr, st)) < 0 ||
            (rc = rs_json_string(o, "error", where, 1, &error, st)) < 0)
            return rc;
        char w[64];
        snprintf(w, sizeof w, "%s.expr", where);
        if ((rc = rs_task_compile(P, expr, w, &k->require[i], NULL, C_PARAMS)) < 0)
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

/* The node evaluations quantity q costs once at worst (an argmin over the longest list a
 * parameter can hold), with its until. */
static long long quantity_cost(const quantity_t *q)
{
    long long c = 1 + rs_expr_nodes(q->until);
    if (q->kind == Q_ARGMIN)
        return c + (RS_MAX_PARAM_VALUES + q->elem - 1) / q->elem * rs_expr_nodes(q->expr) +
               rs_expr_nodes(q->value);
    return c + rs_expr_nodes(q->expr);
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
    step = pass + rs_expr_nodes(k->reward) + rs_expr_nodes(k->success) + rs_expr_nodes(k->termination);
    for (int i = 0; i < k->task.nobs; i++)
        step += rs_expr_nodes(k->obs_expr[i]);
    if (step > RS_TASK_DOC_MAX_STEP_WORK)
        return rs_fail(st, RS_ERANGE, "task: a control step may evaluate %lld expression terms "
                       "(the quantities, an argmin over a list of %d values, the reward, flags "
                       "and observation), over the limit of %ld per control step", step,
                       RS_MAX_PARAM_VALUES, RS_TASK_DOC_MAX_STEP_WORK);
    long long reset = pass;
    for (int i = 0; i < MAX_RESET; i++)
        reset += rs_expr_nodes(k->reset_expr[i]);
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
    if ((rc = rs_json_check_keys(root, "task", keys, (int)(sizeof keys / sizeof keys[0]), st)) < 0 ||
        (rc = rs_json_string(root, "name", "task", 1, &name, st)) < 0 ||
        (rc = rs_json_string(root, "preset", "task", 1, &preset, st)) < 0 ||
        (rc = rs_json_string(root, "entity", "task", 1, &entity, st)) < 0 ||
        (rc = rs_json_string(root, "doc", "task", 0, &doc, st)) < 0 ||
        (rc = rs_json_string(root, "reward_doc", "task", 0, &reward_doc, st)) < 0 ||
        (rc = rs_json_number(root, "max_steps", "task", 1, 0, &max_steps, st)) < 0 ||
        (rc = rs_json_number(root, "reward_scale", "task", 0, 0, &reward_scale, st)) < 0 ||
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
        return rs_json_at(st, params ? "preset and params" : "preset");
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
            if ((rc = rs_task_parse_quantity(P, qname, qv)) < 0)
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
    rs_task_decl_bind(k);
    return 0;
}

#define MAX_EXTENDS 4

/* A document with "extends": the named task's document (lookup's, itself extended), with this
 * document's items in place of its own. */
static json_object *extend(json_object *root, rs_task_doc_lookup_fn *lookup, void *ctx,
                           int depth, rs_status_t *st)
{
    json_object *ext;
    if (!json_object_is_type(root, json_type_object) ||
        !json_object_object_get_ex(root, "extends", &ext))
        return root;
    const char *base_name = json_object_get_string(ext);
    const char *src = lookup ? lookup(base_name, ctx) : NULL;
    json_object *base = NULL;
    if (src) { /* a document that parsed once: within the limits */
        rs_status_t ignored;
        base = rs_json_parse(src, strlen(src), "task document", RS_TASK_DOC_MAX_SOURCE,
                             RS_TASK_DOC_MAX_NESTING, &ignored);
    }
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
    if (!(base = extend(base, lookup, ctx, depth + 1, st))) {
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

rs_task_t *rs_task_doc_parse_with(const char *json, size_t len, rs_task_doc_lookup_fn *lookup,
                                  void *ctx, rs_status_t *st)
{
    json_object *root = rs_json_parse(json, len, "task document", RS_TASK_DOC_MAX_SOURCE,
                                      RS_TASK_DOC_MAX_NESTING, st);
    if (root)
        root = extend(root, lookup, ctx, 0, st);
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
    const decl_t *k = rs_task_decl_of(t);
    return k ? k->source : NULL;
}
