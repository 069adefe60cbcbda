/* A task document's quantities (task_decl.h): each entry of "quantities" checked against the
 * preset's model and compiled, and the names the document's expressions may use where. */
#include "task_decl.h"
#include "rs_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether quantity q may be named where `flags` (C_*) say: the quantities used at the start only
 * (at_reset, "held": false) in C_START expressions, only parameters in C_PARAMS ones. */
static int nameable(const quantity_t *q, int flags)
{
    if (flags & C_PARAMS)
        return q->kind == Q_PARAM;
    return (flags & C_START) || q->held;
}

int rs_task_compile(parser_t *P, const char *src, const char *where, te_expr **out,
                    const char *self, int flags)
{
    decl_t *k = P->k;
    te_variable vars[RS_EXPR_MAX_VARIABLES];
    int n = 0;
    for (int i = 0; i < 2; i++)
        vars[n++] = (te_variable){rs_expr_reserved[i], &k->base[i], TE_VARIABLE, NULL};
    for (int i = 0; i < k->nq; i++)
        if (nameable(&k->q[i], flags))
            vars[n++] = (te_variable){k->q[i].name, &k->base[2 + i], TE_VARIABLE, NULL};
    if (self)
        vars[n++] = (te_variable){self, &k->base[2 + k->nq], TE_VARIABLE, NULL};
    for (int j = 0; j < P->ngroup; j++)
        vars[n++] = (te_variable){P->group[j], &k->base[GROUP_VARS + j], TE_VARIABLE, NULL};
    char names[200] = ""; /* the names an error says it may use */
    if (!(flags & C_PARAMS))
        rs_join(names, sizeof names, "%s", "t, steps");
    for (int i = 0; i < k->nq; i++)
        if (nameable(&k->q[i], flags))
            rs_join(names, sizeof names, "%s", k->q[i].name);
    return rs_expr_compile(src, where, vars, n, flags & C_DRAW, names, out, P->st);
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
    if ((rc = rs_json_string(v, "until", where, 0, &until, st)) < 0 ||
        (rc = rs_json_string(v, "error", where, 0, &error, st)) < 0 ||
        (rc = rs_json_string(v, "redraw", where, 0, &redraw, st)) < 0 ||
        (rc = rs_json_number(v, "tries", where, 0, 0, &tries, st)) < 0)
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
    return rs_task_compile(P, until, w, &q->until, qname, C_START);
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
    if ((rc = rs_json_string(v, "argmin", where, 1, &expr, st)) < 0 ||
        (rc = rs_json_string(v, "value", where, 0, &value, st)) < 0 ||
        (rc = rs_json_number(v, "group", where, 1, 0, &group, st)) < 0 ||
        (rc = rs_json_number(v, "none", where, 0, 0.0, &none, st)) < 0)
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
        int clash = !rs_expr_identifier(name) || strcmp(name, qname) == 0;
        for (int i = 0; i < P->k->nq && !clash; i++)
            clash = strcmp(P->k->q[i].name, name) == 0;
        for (int i = 0; i < RS_EXPR_NFUNCTIONS && !clash; i++)
            clash = strcmp(rs_expr_functions[i].name, name) == 0;
        for (int i = 0; i < 2 && !clash; i++)
            clash = strcmp(rs_expr_reserved[i], name) == 0;
        if (clash || rs_expr_builtin(name))
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
    rc = rs_task_compile(P, expr, w, &q->expr, NULL, flags);
    if (rc == 0 && value) {
        snprintf(w, sizeof w, "%s.value", where);
        rc = rs_task_compile(P, value, w, &q->value, NULL, flags);
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

int rs_task_parse_quantity(parser_t *P, const char *qname, json_object *v)
{
    decl_t *k = P->k;
    rs_status_t *st = P->st;
    char where[96];
    snprintf(where, sizeof where, "quantities.%s", qname);
    if (!rs_expr_identifier(qname))
        return rs_fail(st, RS_EINVAL, "%s: a name is letters, digits and '_', not starting with "
                       "a digit", where);
    for (int i = 0; i < RS_EXPR_NFUNCTIONS; i++)
        if (strcmp(rs_expr_functions[i].name, qname) == 0)
            return rs_fail(st, RS_EINVAL, "%s: '%s' is a function's name", where, qname);
    for (int i = 0; i < 2; i++)
        if (strcmp(rs_expr_reserved[i], qname) == 0)
            return rs_fail(st, RS_EINVAL, "%s: '%s' is reserved (t: time, steps: control steps)",
                           where, qname);
    if (rs_expr_builtin(qname)) /* a TinyExpr built-in (pi, e, ...) */
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
            return rs_json_at(st, where);
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
        if ((rc = rs_json_check_keys(v, where, keys, 21, st)) < 0 ||
            (rc = rs_json_string(v, "argmin", where, 0, &param, st)) < 0 ||
            (param && (rc = rs_json_string(v, "over", where, 1, &over, st)) < 0) ||
            (!param && (rc = rs_json_string(v, "param", where, 0, &param, st)) < 0) ||
            (rc = rs_json_string(v, "command", where, 0, &cmd, st)) < 0 ||
            (rc = rs_json_string(v, "events", where, 0, &ev, st)) < 0 ||
            (rc = rs_json_string(v, "dist", where, 0, &dist, st)) < 0 ||
            (rc = rs_json_string(v, "expr", where, 0, &expr, st)) < 0 ||
            (rc = rs_json_string(v, "at_reset", where, 0, &at_reset, st)) < 0 ||
            (rc = rs_json_string(v, "update", where, 0, &update, st)) < 0)
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
            if ((rc = rs_json_number(v, "a", where, 1, 0, &a, st)) < 0 ||
                (rc = rs_json_number(v, "b", where, 1, 0, &b, st)) < 0)
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
            if ((rc = rs_task_compile(P, at_reset, where, &q.expr, NULL, C_DRAW | C_START)) < 0 ||
                (rc = parse_until(P, v, where, qname, &q)) < 0) {
                te_free(q.expr);
                te_free(q.until);
                free(q.error);
                return rc;
            }
            q.kind = Q_AT_RESET;
            q.index = q.held ? k->ntargets++ : -1;
        } else if (update) {
            if ((rc = rs_json_number(v, "init", where, 0, 0.0, &q.init, st)) < 0 ||
                (rc = rs_task_compile(P, update, where, &q.expr, qname, 0)) < 0)
                return rc;
            q.kind = Q_UPDATE;
            q.index = k->ntargets++;
        } else {
            q.kind = Q_EXPR;
            if ((rc = rs_task_compile(P, expr, where, &q.expr, NULL, 0)) < 0)
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
