/* The robot contract's checks (rs_robot.h): that a robot module's tables and callbacks are
 * complete and consistent, and that an entity's run variables fit its robot and parameters. */
#include "rs_robot.h"

#include <math.h>
#include <string.h>

int rs_robot_check(const rs_robot_t *r, rs_status_t *st)
{
    const char *kind = r && r->kind ? r->kind : "?";
    if (!r || !r->kind || !r->init || !r->derivs || !r->nguards || r->nx < 0 || r->nu < 0 ||
        r->ns < 0 || r->np < 0 || r->np > RS_MAX_PARAMS || r->nmodes < 1 || !r->mode_names ||
        r->nevent_kinds < 0 || (r->nx && !r->state) || (r->nu && !r->actuators) ||
        (r->ns && !r->sensors) || (r->np && !r->params))
        return rs_fail(st, RS_EINTERNAL,
                       "robot '%s' cannot be registered: its tables or callbacks are incomplete",
                       kind);
    if (r->nu > RS_MAX_ACTUATORS)
        return rs_fail(st, RS_EINTERNAL,
                       "robot '%s' cannot be registered: %d actuators, at most %d "
                       "(RS_MAX_ACTUATORS)", kind, r->nu, RS_MAX_ACTUATORS);
    if (!r->aux_vars || r->naux < 0 || r->naux > RS_AUX_MAX)
        return rs_fail(st, RS_EINTERNAL,
                       "robot '%s' cannot be registered: it does not declare its private run "
                       "variables (rs_robot_t.aux_vars, naux <= %d), which snapshots are "
                       "validated against",
                       kind, RS_AUX_MAX);
    int nw = 0;
    for (int i = 0; i < r->nwrench && r->wrench; i++)
        nw += r->wrench[i].n > 0 && r->wrench[i].body ? r->wrench[i].n : RS_WRENCH_MAX + 1;
    if (r->nwrench < 0 || (r->nwrench && !r->wrench) || nw > RS_WRENCH_MAX)
        return rs_fail(st, RS_EINTERNAL,
                       "robot '%s' cannot be registered: its wrench bodies are incomplete or "
                       "hold more than %d values",
                       kind, RS_WRENCH_MAX);
    for (int i = 0; i < r->naux; i++) {
        const rs_aux_desc_t *a = &r->aux_vars[i];
        int ok = a->name != NULL;
        if (a->kind == RS_AUX_REAL || a->kind == RS_AUX_INTEGER)
            ok &= !(a->lower > a->upper) && !isnan(a->lower) && !isnan(a->upper);
        else if (a->kind == RS_AUX_INDEX)
            ok &= a->param >= 0 && a->param < r->np && a->per >= 1;
        else
            ok &= a->kind == RS_AUX_SIGN;
        if (!ok)
            return rs_fail(st, RS_EINTERNAL,
                           "robot '%s' cannot be registered: private variable %d ('%s') is "
                           "declared inconsistently",
                           kind, i, a->name ? a->name : "?");
    }
    return 0;
}

int rs_robot_check_data(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                        rs_status_t *st)
{
    const rs_robot_t *r = em->robot;
    if (ed->mode < 0 || ed->mode >= r->nmodes)
        return rs_fail(st, RS_EINVAL, "entity '%s' (%s) in mode %d; its modes are 0 to %d",
                       em->name, r->kind, ed->mode, r->nmodes - 1);
    for (int i = 0; i < RS_AUX_MAX; i++) {
        double v = ed->aux[i];
        if (i >= r->naux) {
            if (v != 0.0)
                return rs_fail(st, RS_EINVAL,
                               "entity '%s' (%s): private slot %d is %g; the robot does not use "
                               "it, so it must be 0",
                               em->name, r->kind, i, v);
            continue;
        }
        const rs_aux_desc_t *a = &r->aux_vars[i];
        int ok = isfinite(v);
        double hi = a->upper;
        switch (a->kind) {
        case RS_AUX_REAL: ok = ok && v >= a->lower && v <= a->upper; break;
        case RS_AUX_INTEGER: ok = ok && v == floor(v) && v >= a->lower && v <= a->upper; break;
        case RS_AUX_SIGN: ok = v == 1.0 || v == -1.0; break;
        case RS_AUX_INDEX:
            hi = (double)(em->plen[a->param] / a->per) - 1.0;
            ok = ok && v == floor(v) && v >= -1.0 && v <= hi &&
                 !(v == -1.0 && ed->mode < 32 && (a->needed_in >> ed->mode & 1u));
            break;
        }
        if (!ok)
            return rs_fail(st, RS_EINVAL,
                           "entity '%s' (%s) in mode '%s': private variable '%s' is %g; it must "
                           "be %s",
                           em->name, r->kind, r->mode_names[ed->mode], a->name, v,
                           a->kind == RS_AUX_SIGN    ? "-1 or +1"
                           : a->kind == RS_AUX_INDEX ? "an element index (or -1 where none is needed)"
                           : a->kind == RS_AUX_INTEGER ? "an integer within its bounds"
                                                       : "finite and within its bounds");
    }
    return 0;
}

int rs_robot_param_is_choice(const rs_robot_t *r, int param)
{
    for (const char *const *c = r->choices; c && *c; c++)
        if (!strcmp(*c, r->params[param].name))
            return 1;
    return 0;
}
