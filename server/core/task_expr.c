/* The expression language of task documents (task_expr.h). */
#include "task_expr.h"
#include "rs_core.h"
#include "rs_limits.h"
#include "rs_montecarlo.h"
#include "robots/arm_common.h"

#include <math.h>
#include <string.h>

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
/* uniform(a, b) and normal(mean, deviation) draw from the world's rng: rs_expr_eval calls
 * rs_expr_draw for them (these bodies only mark the nodes) */
static double f_uniform(double a, double b) { return NAN; }
static double f_normal(double a, double b) { return NAN; }

#define FN(name, f, n) {name, (const void *)(f), TE_FUNCTION##n | TE_FLAG_PURE, NULL}
const te_variable rs_expr_functions[] = { /* RS_EXPR_NFUNCTIONS: the header's size checks it */
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
const char *const rs_expr_reserved[2] = {"t", "steps"};

double rs_expr_draw(rs_data_t *d, int dist, double a, double b)
{
    if (dist == RS_MC_UNIFORM)
        return a + (b - a) * rs_data_uniform(d);
    double u1 = rs_data_uniform(d), u2 = rs_data_uniform(d); /* Box-Muller, as rs_mc_draw */
    return a + b * sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
}

/* Node types as tinyexpr.c lays them out: 1 a constant, TE_VARIABLE, TE_FUNCTIONn with n
 * arguments. */
double rs_expr_eval(const te_expr *n, const double *base, const double *v, rs_data_t *d)
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
        a[i] = rs_expr_eval(n->parameters[i], base, v, d);
    if (n->function == (const void *)f_uniform || n->function == (const void *)f_normal) {
        int dist = n->function == (const void *)f_uniform ? RS_MC_UNIFORM : RS_MC_NORMAL;
        return d ? rs_expr_draw(d, dist, a[0], a[1]) : NAN;
    }
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

int rs_expr_compile(const char *src, const char *where, const te_variable *names, int n,
                    int may_draw, const char *hint, te_expr **out, rs_status_t *st)
{
    te_variable vars[RS_EXPR_NFUNCTIONS + RS_EXPR_MAX_VARIABLES];
    int nv = 0;
    for (int i = 0; i < RS_EXPR_NFUNCTIONS; i++)
        vars[nv++] = rs_expr_functions[i];
    for (int i = 0; i < n && i < RS_EXPR_MAX_VARIABLES; i++)
        vars[nv++] = names[i];
    *out = NULL;
    size_t len = strlen(src);
    if (len > RS_EXPR_MAX_SOURCE)
        return rs_fail(st, RS_EINVAL, "%s: the expression has %zu characters, over the limit "
                       "of %d characters per expression", where, len, RS_EXPR_MAX_SOURCE);
    static const te_limits limits = {RS_EXPR_MAX_NESTING, RS_EXPR_MAX_NODES, RS_EXPR_MAX_DEPTH};
    int err = 0, hit = TE_LIMIT_NONE;
    *out = te_compile_bounded(src, vars, nv, &limits, &err, &hit);
    if (!*out && hit == TE_LIMIT_NESTING)
        return rs_fail(st, RS_EINVAL, "%s: the expression nests parentheses and function "
                       "calls deeper than the limit of %d levels", where, RS_EXPR_MAX_NESTING);
    if (!*out && hit == TE_LIMIT_NODES)
        return rs_fail(st, RS_EINVAL, "%s: the expression has more than the limit of %d "
                       "terms (numbers, names, operators and calls)", where, RS_EXPR_MAX_NODES);
    if (!*out && hit == TE_LIMIT_DEPTH)
        return rs_fail(st, RS_EINVAL, "%s: the expression's tree is deeper than the limit of "
                       "%d levels (a chain a + b + c + ... is as deep as its terms: group them in "
                       "parentheses)", where, RS_EXPR_MAX_DEPTH);
    if (!*out)
        return rs_fail(st, RS_EINVAL,
                       "%s: '%s' does not compile at character %d (a syntax error or an unknown "
                       "name; names it may use: %s)",
                       where, src, err, hint);
    if (!may_draw && draws(*out)) {
        te_free(*out);
        *out = NULL;
        return rs_fail(st, RS_EINVAL, "%s: '%s' draws (uniform, normal), which only a "
                       "quantity's 'at_reset' expression may", where, src);
    }
    return 0;
}

long long rs_expr_nodes(const te_expr *n)
{
    if (!n)
        return 0;
    long long c = 1;
    int type = n->type & 0x1f;
    if (type >= TE_FUNCTION0 && type <= TE_FUNCTION7)
        for (int i = 0; i < type - TE_FUNCTION0; i++)
            c += rs_expr_nodes(n->parameters[i]);
    return c;
}

int rs_expr_identifier(const char *s)
{
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
        return 0;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_'))
            return 0;
    return 1;
}

int rs_expr_builtin(const char *name)
{
    return te_interp(name, NULL) == te_interp(name, NULL); /* NAN for anything else */
}
