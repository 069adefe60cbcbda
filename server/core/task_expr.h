/* The expression language of task documents: TinyExpr's grammar and functions, the functions
 * robosim adds (comparisons, logic, clip, wrap, the parallel arm's closed forms, the draws
 * uniform and normal), compilation within the limits of rs_limits.h, and evaluation of a
 * compiled expression against any world's values. */
#ifndef RS_TASK_EXPR_H
#define RS_TASK_EXPR_H

#include "rs_data.h"
#include "tinyexpr.h"

#define RS_EXPR_NFUNCTIONS 20  /* the functions robosim adds to TinyExpr's */
#define RS_EXPR_MAX_VARIABLES 80 /* the most names one compilation may give */

/* The functions robosim adds, and the reserved names: "t" (time, s) and "steps" (control
 * steps this episode). */
extern const te_variable rs_expr_functions[RS_EXPR_NFUNCTIONS];
extern const char *const rs_expr_reserved[2];

/* Compile `src` with robosim's functions and the variables vars[0 ... n - 1] (at most
 * RS_EXPR_MAX_VARIABLES) as its names, into *out (the caller frees it: te_free). A draw
 * (uniform, normal) only with may_draw. 0, or RS_EINVAL with st naming `where` and the limit
 * passed or the character that does not compile (with `hint`, the names it may use). */
int rs_expr_compile(const char *src, const char *where, const te_variable *vars, int n,
                    int may_draw, const char *hint, te_expr **out, rs_status_t *st);

/* Expression n's value with its variables read from v[] by their offset from `base`, the
 * addresses they were compiled against, so one compiled expression serves every world and
 * thread; the draws from d's rng (d NULL: NAN, as no expression that draws is evaluated
 * without one). */
double rs_expr_eval(const te_expr *n, const double *base, const double *v, rs_data_t *d);

/* One draw from d's rng: RS_MC_UNIFORM on [a, b], or RS_MC_NORMAL of mean a, deviation b. */
double rs_expr_draw(rs_data_t *d, int dist, double a, double b);

/* The nodes of compiled expression n (0 for none): what one evaluation of it costs. */
long long rs_expr_nodes(const te_expr *n);

/* Whether s is a name: letters, digits and '_', not starting with a digit. */
int rs_expr_identifier(const char *s);

/* Whether `name` is taken by TinyExpr's own functions and constants (pi, e, sin, ...). */
int rs_expr_builtin(const char *name);

#endif
