/* Forward-mode derivatives for the robots' right-hand-side Jacobians (rs_robot_t.jacobian): a
 * value with its partials along up to RS_DUAL_N inputs, carried through the arithmetic exactly
 * (dual numbers; Griewank & Walther, "Evaluating Derivatives", 2nd ed., ch. 3). A robot writes
 * its flow once more over rs_dual_t and reads the partials off. */
#ifndef RS_DUAL_H
#define RS_DUAL_H

#include <math.h>

#define RS_DUAL_N 10

typedef struct rs_dual {
    double v, d[RS_DUAL_N];
} rs_dual_t;

static inline rs_dual_t rs_dual_const(double v)
{
    rs_dual_t r = {v, {0}};
    return r;
}

/* input i (its partial along itself 1) */
static inline rs_dual_t rs_dual_var(double v, int i)
{
    rs_dual_t r = rs_dual_const(v);
    r.d[i] = 1.0;
    return r;
}

/* a + k b */
static inline rs_dual_t rs_dual_axpy(rs_dual_t a, double k, rs_dual_t b)
{
    a.v += k * b.v;
    for (int i = 0; i < RS_DUAL_N; i++)
        a.d[i] += k * b.d[i];
    return a;
}

static inline rs_dual_t rs_dual_add(rs_dual_t a, rs_dual_t b) { return rs_dual_axpy(a, 1.0, b); }

static inline rs_dual_t rs_dual_sub(rs_dual_t a, rs_dual_t b) { return rs_dual_axpy(a, -1.0, b); }

static inline rs_dual_t rs_dual_scale(rs_dual_t a, double k)
{
    return rs_dual_axpy(rs_dual_const(0.0), k, a);
}

static inline rs_dual_t rs_dual_mul(rs_dual_t a, rs_dual_t b)
{
    rs_dual_t r = {a.v * b.v, {0}};
    for (int i = 0; i < RS_DUAL_N; i++)
        r.d[i] = a.d[i] * b.v + a.v * b.d[i];
    return r;
}

static inline rs_dual_t rs_dual_div(rs_dual_t a, rs_dual_t b)
{
    rs_dual_t r = {a.v / b.v, {0}};
    for (int i = 0; i < RS_DUAL_N; i++)
        r.d[i] = (a.d[i] - r.v * b.d[i]) / b.v;
    return r;
}

/* f(a) given f(a.v) = fv and f'(a.v) = dfv */
static inline rs_dual_t rs_dual_chain(rs_dual_t a, double fv, double dfv)
{
    rs_dual_t r = {fv, {0}};
    for (int i = 0; i < RS_DUAL_N; i++)
        r.d[i] = dfv * a.d[i];
    return r;
}

static inline rs_dual_t rs_dual_abs(rs_dual_t a) { return rs_dual_scale(a, a.v < 0.0 ? -1.0 : 1.0); }

#endif
