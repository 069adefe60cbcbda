/* A model from a preset (the registry's) and the client's parameter overrides. */
#include "rs_model.h"
#include "rs_registry.h"

#include <stdio.h>
#include <string.h>

int rs_model_build(rs_model_t *m, const char *preset, const rs_param_t *params, size_t nparams,
                   rs_status_t *st)
{
    const rs_preset_t *ps = preset ? rs_preset_find(preset) : NULL;
    if (!ps) {
        char names[200] = "";
        const char *const *pn = rs_preset_names();
        for (int i = 0; pn[i]; i++)
            rs_join(names, sizeof names, "%s", pn[i]);
        return rs_fail(st, RS_ENOTFOUND, "unknown preset '%s' (presets: %s)", preset ? preset : "",
                       names);
    }
    memset(m, 0, sizeof *m);
    snprintf(m->preset, sizeof m->preset, "%s", ps->name);
    rs_model_world_defaults(m);

    m->nentities = ps->nentities;
    for (int e = 0; e < ps->nentities; e++) {
        rs_entity_model_t *em = &m->ent[e];
        const rs_robot_t *r = rs_robot_find(ps->entities[e].kind);
        if (!r)
            return rs_fail(st, RS_EINTERNAL, "preset '%s' names unknown robot kind '%s'", ps->name,
                           ps->entities[e].kind);
        int rc = rs_robot_check(r, st);
        if (rc < 0)
            return rc;
        em->robot = r;
        snprintf(em->name, sizeof em->name, "%s", ps->entities[e].name);
        for (int i = 0; i < r->np; i++) {
            const rs_param_desc_t *pd = &r->params[i];
            /* scalars start at their default; vectors start with len_min default values */
            for (int k = 0; k < pd->len_min; k++)
                em->p[pd->offset + k] = pd->def;
            em->plen[i] = pd->len_min;
        }
    }
    for (int i = 0; i < RS_PRESET_OVERRIDES && ps->overrides[i].entity; i++) {
        const rs_preset_override_t *o = &ps->overrides[i];
        rs_param_t p = {o->entity, o->name, &o->value, 1};
        int rc = rs_model_apply_param(m, &p, st);
        if (rc < 0) { /* the reason is in st->message: copied first, rs_fail rewrites it */
            char why[sizeof st->message];
            snprintf(why, sizeof why, "%s", st ? st->message : "");
            return rs_fail(st, RS_EINTERNAL, "preset '%s': %s", ps->name, why);
        }
    }
    for (size_t i = 0; i < nparams; i++) {
        int rc = rs_model_apply_param(m, &params[i], st);
        if (rc < 0)
            return rc;
    }
    return rs_model_finish(m, st);
}
