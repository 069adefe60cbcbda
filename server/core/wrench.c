/* External wrenches for the next control step (Klamp't's applied
 * forces). A robot declares the bodies a wrench can act on (rs_robot_t.wrench) and reads their
 * values in ed->wrench, a data field (rs_core.h), so snapshots, forks and batches carry it. */
#include "rs_robot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define WRENCH_LIMIT 1e9 /* N or N*m: as the actuators' widest bounds, far beyond any robot here */

int rs_apply_wrench(const rs_model_t *m, rs_data_t *d, int e, const char *body, const double *w,
                    size_t n, rs_status_t *st)
{
    if (e < 0 || e >= m->nentities)
        return rs_fail(st, RS_ENOTFOUND, "no entity %d", e);
    const rs_robot_t *r = m->ent[e].robot;
    int off = 0, b = 0;
    for (; b < r->nwrench && strcmp(r->wrench[b].body, body ? body : "") != 0; b++)
        off += r->wrench[b].n;
    if (b == r->nwrench) {
        char names[200] = "";
        for (int i = 0; i < r->nwrench; i++)
            rs_join(names, sizeof names, "'%s' (%s)", r->wrench[i].body, r->wrench[i].doc);
        return rs_fail(st, RS_ENOTFOUND, "'%s' (a %s) has no body '%s' for a wrench; %s%s",
                       m->ent[e].name, r->kind, body ? body : "",
                       r->nwrench ? "its bodies: " : "it takes no external wrench", names);
    }
    const rs_wrench_desc_t *wd = &r->wrench[b];
    if (n != (size_t)wd->n)
        return rs_fail(st, RS_EINVAL, "a wrench on '%s.%s' has %d values (%s), got %zu",
                       m->ent[e].name, body, wd->n, wd->doc, n);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(w[i]))
            return rs_fail(st, RS_EINVAL, "wrench value %zu on '%s.%s' is not finite", i,
                           m->ent[e].name, body);
        if (fabs(w[i]) > WRENCH_LIMIT)
            return rs_fail(st, RS_ERANGE, "wrench value %zu on '%s.%s' = %g is outside [-%g, %g]",
                           i, m->ent[e].name, body, w[i], WRENCH_LIMIT, WRENCH_LIMIT);
    }
    memcpy(d->ent[e].wrench + off, w, n * sizeof *w);
    d->dirty = 1; /* as new commands: the modes are settled again before the step */
    return 0;
}

void rs_wrench_step_over(const rs_model_t *m, rs_data_t *d)
{
    static const double zero[RS_WRENCH_MAX];
    for (int e = 0; e < m->nentities; e++) {
        if (memcmp(d->ent[e].wrench, zero, sizeof zero) == 0)
            continue;
        memset(d->ent[e].wrench, 0, sizeof d->ent[e].wrench);
        d->dirty = 1; /* the forces changed: settle before the next step */
    }
}
