/* A Step's Jacobian on the wire (Step.jacobian, State.jacobian): see rs_sensitivity.h. */
#include "rs_codec.h"
#include "rs_sensitivity.h"

#include <string.h>

Robosim__V1__Jacobian *rs_codec_jacobian(rs_arena_t *a, rs_sens_t *sens,
                                         char *const *params, rs_status_t *st)
{
    int n, m, q, differentiable;
    const double *phi;
    const char *why;
    if (rs_sens_result(sens, &n, &m, &q, &phi, &differentiable, &why, st) < 0)
        return NULL;
    Robosim__V1__Jacobian *j = rs_arena_alloc(a, sizeof *j);
    if (!j) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for a Jacobian");
        return NULL;
    }
    robosim__v1__jacobian__init(j);
    j->n = (uint32_t)n;
    j->m = (uint32_t)m;
    j->n_params = (size_t)q;
    j->params = (char **)params;
    j->differentiable = differentiable;
    if (!differentiable) {
        j->not_differentiable = rs_arena_strdup(a, why);
        return j->not_differentiable ? j : NULL;
    }
    int ncol = n + m + q;
    double *xs = rs_arena_alloc(a, (size_t)n * n * sizeof *xs + 1),
           *us = rs_arena_alloc(a, (size_t)n * m * sizeof *us + 1),
           *ps = rs_arena_alloc(a, (size_t)n * q * sizeof *ps + 1);
    if (!xs || !us || !ps) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for a Jacobian");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        memcpy(xs + (size_t)i * n, phi + (size_t)i * ncol, (size_t)n * sizeof *xs);
        memcpy(us + (size_t)i * m, phi + (size_t)i * ncol + n, (size_t)m * sizeof *us);
        memcpy(ps + (size_t)i * q, phi + (size_t)i * ncol + n + m, (size_t)q * sizeof *ps);
    }
    j->n_state = (size_t)n * n, j->state = xs;
    j->n_commands = (size_t)n * m, j->commands = us;
    j->n_param_columns = (size_t)n * q, j->param_columns = ps;
    return j;
}
