#include "rs_codec.h"

#include "rs_registry.h"
#include "rs_motion_spec.h"
#include "rs_robot.h"
#include "rs_task.h"

#include <string.h>

#define NEW(a, type, init)                                                                     \
    ({                                                                                         \
        type *p_ = rs_arena_alloc((a), sizeof(type));                                             \
        if (p_)                                                                                \
            init(p_);                                                                          \
        p_;                                                                                    \
    })

/* A copy of n doubles in the arena. */
static double *doubles(rs_arena_t *a, const double *v, size_t n)
{
    double *p = rs_arena_alloc(a, n ? n * sizeof(double) : 1);
    if (p && n)
        memcpy(p, v, n * sizeof(double));
    return p;
}

Robosim__V1__WorldInfo *rs_codec_world_info(rs_arena_t *a, uint64_t id, const rs_world_t *w)
{
    const rs_model_t *m = w->model;
    Robosim__V1__WorldInfo *wi = NEW(a, Robosim__V1__WorldInfo, robosim__v1__world_info__init);
    char **names = rs_arena_alloc(a, (size_t)m->nentities * sizeof(char *) + 1);
    if (!wi || !names)
        return NULL;
    wi->world_id = id;
    wi->preset = (char *)m->preset;
    wi->time = w->data->t;
    wi->step_count = w->data->step_count;
    wi->control_dt = m->control_dt;
    for (int e = 0; e < m->nentities; e++)
        names[e] = (char *)m->ent[e].name;
    wi->n_entities = (size_t)m->nentities;
    wi->entities = names;
    wi->task = (char *)(w->task ? w->task->name : "");
    return wi;
}

/* The agent's view of a task world: observation, reward, flags, info figures. */
static Robosim__V1__TaskStep *task_step(rs_arena_t *a, const rs_world_t *w)
{
    rs_task_view_t v;
    Robosim__V1__TaskStep *ts = NEW(a, Robosim__V1__TaskStep, robosim__v1__task_step__init);
    if (!ts || rs_world_task_view(w, &v, NULL) < 0)
        return NULL;
    ts->n_observation = (size_t)v.nobs;
    ts->observation = doubles(a, v.obs, (size_t)v.nobs);
    ts->reward = v.reward;
    ts->terminated = v.terminated;
    ts->truncated = v.truncated;
    ts->n_info_keys = ts->n_info_values = (size_t)v.ninfo;
    ts->info_keys = (char **)v.info_names;
    ts->info_values = doubles(a, v.info, (size_t)v.ninfo);
    return ts->observation && ts->info_values ? ts : NULL;
}

/* State.contacts: the pairs of the entities whose robots report contact feedback */
static int contact_feedback(rs_arena_t *a, Robosim__V1__State *s, const rs_world_t *w)
{
    enum { PER_ENTITY = 4 };
    const rs_model_t *m = w->model;
    rs_contact_info_t info[PER_ENTITY];
    size_t n = 0, cap = 0;
    for (int e = 0; e < m->nentities; e++)
        if (m->ent[e].robot->contacts)
            cap += PER_ENTITY;
    if (!cap)
        return 0;
    Robosim__V1__ContactFeedback **out = rs_arena_alloc(a, cap * sizeof(void *) + 1);
    if (!out)
        return -1;
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        if (!em->robot->contacts)
            continue;
        int k = em->robot->contacts(em, &w->data->ent[e], w->data->x + em->x_off, info,
                                    PER_ENTITY);
        for (int i = 0; i < k; i++) {
            Robosim__V1__ContactFeedback *c =
                NEW(a, Robosim__V1__ContactFeedback, robosim__v1__contact_feedback__init);
            if (!c)
                return -1;
            c->entity = (char *)em->name;
            c->other = (char *)info[i].other;
            c->in_contact = info[i].in_contact;
            c->had_contact = info[i].had_contact;
            c->had_separation = info[i].had_separation;
            c->had_penetration = info[i].had_penetration;
            c->n_point = c->n_normal = c->n_mean_force = 2;
            c->point = doubles(a, info[i].point, 2);
            c->normal = doubles(a, info[i].normal, 2);
            c->mean_force = doubles(a, info[i].mean_force, 2);
            if (!c->point || !c->normal || !c->mean_force)
                return -1;
            out[n++] = c;
        }
    }
    s->n_contacts = n;
    s->contacts = out;
    return 0;
}

Robosim__V1__State *rs_codec_state(rs_arena_t *a, uint64_t id, const rs_world_t *w)
{
    const rs_model_t *m = w->model;
    const rs_data_t *d = w->data;
    Robosim__V1__State *s = NEW(a, Robosim__V1__State, robosim__v1__state__init);
    Robosim__V1__EntityState **ents = rs_arena_alloc(a, (size_t)m->nentities * sizeof(void *) + 1);
    Robosim__V1__Event **evs = rs_arena_alloc(a, (size_t)d->nevents * sizeof(void *) + 1);
    Robosim__V1__IntegratorStats *stats =
        NEW(a, Robosim__V1__IntegratorStats, robosim__v1__integrator_stats__init);
    if (!s || !ents || !evs || !stats)
        return NULL;
    s->world_id = id;
    s->time = d->t;
    s->step_count = d->step_count;
    uint8_t *digest = rs_arena_alloc(a, RS_DIGEST_BYTES);
    if (!digest)
        return NULL;
    rs_digest_bytes(d, digest);
    s->digest.data = digest;
    s->digest.len = RS_DIGEST_BYTES;
    s->seed = d->seed;
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        Robosim__V1__EntityState *es = NEW(a, Robosim__V1__EntityState, robosim__v1__entity_state__init);
        double *cmd = rs_arena_alloc(a, (size_t)em->nu * sizeof(double) + 1);
        if (!es || !cmd)
            return NULL;
        rs_current_commands(m, d, e, cmd);
        es->name = (char *)em->name;
        es->kind = (char *)em->robot->kind;
        es->n_state = (size_t)em->nx;
        es->state = doubles(a, d->x + em->x_off, (size_t)em->nx);
        es->n_commands = (size_t)em->nu;
        es->commands = cmd;
        es->n_sensors = (size_t)em->ns;
        es->sensors = doubles(a, d->sensors + em->s_off, (size_t)em->ns);
        es->mode = (char *)rs_mode_name(m, d, e);
        if (!es->state || !es->sensors)
            return NULL;
        ents[e] = es;
    }
    s->n_entities = (size_t)m->nentities;
    s->entities = ents;
    for (int i = 0; i < d->nevents; i++) {
        const rs_event_t *ev = &d->events[i];
        Robosim__V1__Event *pe = NEW(a, Robosim__V1__Event, robosim__v1__event__init);
        if (!pe)
            return NULL;
        pe->entity = (char *)m->ent[ev->entity].name;
        pe->kind = (char *)rs_event_kind_name(m, ev);
        pe->time = ev->t;
        pe->value = ev->value;
        pe->n_before = pe->n_after = (size_t)ev->nvalues;
        pe->before = (double *)ev->before;
        pe->after = (double *)ev->after;
        evs[i] = pe;
    }
    s->n_events = (size_t)d->nevents;
    s->events = evs;
    s->events_dropped = d->events_dropped;
    if (contact_feedback(a, s, w) < 0)
        return NULL;
    rs_stats_t st;
    rs_get_stats(d, &st);
    stats->internal_steps = st.internal_steps;
    stats->rhs_evals = st.rhs_evals;
    stats->root_evals = st.root_evals;
    stats->events = st.events;
    s->stats = stats;
    if (w->task && !(s->task = task_step(a, w)))
        return NULL;
    if (rs_codec_state_randomized(a, s, w) < 0)
        return NULL;
    if (d->spec) {
        /* the specification's readouts, in MotionSpecReply's order */
        int ne = rs_motion_spec_nevaluators(d->spec), nc = rs_motion_spec_ncontrollers(d->spec);
        double *err = rs_arena_alloc(a, (size_t)ne * sizeof(double) + 1);
        double *out = rs_arena_alloc(a, (size_t)nc * sizeof(double) + 1);
        if (!err || !out || !(s->spec_commands = doubles(a, d->u_spec, (size_t)m->nu)))
            return NULL;
        for (int i = 0; i < ne; i++)
            rs_motion_spec_evaluator(d->spec, i, &err[i]);
        for (int i = 0; i < nc; i++)
            rs_motion_spec_controller(d->spec, i, &out[i]);
        s->n_spec_errors = (size_t)ne, s->spec_errors = err;
        s->n_spec_outputs = (size_t)nc, s->spec_outputs = out;
        s->n_spec_commands = (size_t)m->nu;
        const char *mid;
        rs_motion_spec_active_motion(d->spec, &mid);
        s->spec_active_motion = (char *)(mid ? mid : "");
    }
    return s;
}

Robosim__V1__MotionSpecReply *rs_codec_motion_spec(rs_arena_t *a, const rs_world_t *w)
{
    Robosim__V1__MotionSpecReply *r =
        NEW(a, Robosim__V1__MotionSpecReply, robosim__v1__motion_spec_reply__init);
    const rs_motion_spec_t *sp = w->data->spec;
    if (!r || !sp)
        return r;
    size_t len;
    int ne = rs_motion_spec_nevaluators(sp), nc = rs_motion_spec_ncontrollers(sp);
    char **ev = rs_arena_alloc(a, (size_t)ne * sizeof(char *) + 1);
    char **ct = rs_arena_alloc(a, (size_t)nc * sizeof(char *) + 1);
    if (!ev || !ct)
        return NULL;
    double ignored;
    for (int i = 0; i < ne; i++)
        ev[i] = (char *)rs_motion_spec_evaluator(sp, i, &ignored);
    for (int i = 0; i < nc; i++)
        ct[i] = (char *)rs_motion_spec_controller(sp, i, &ignored);
    const char *id;
    rs_motion_spec_active_motion(sp, &id);
    r->loaded = 1;
    r->document = (char *)rs_motion_spec_source(sp, &len);
    r->n_evaluators = (size_t)ne, r->evaluators = ev;
    r->n_controllers = (size_t)nc, r->controllers = ct;
    r->active_motion = (char *)(id ? id : "");
    r->replaces_commands = rs_motion_spec_replaces(sp);
    return r;
}

static Robosim__V1__VarSpec **var_specs(rs_arena_t *a, const rs_var_desc_t *v, int n)
{
    Robosim__V1__VarSpec **out = rs_arena_alloc(a, (size_t)n * sizeof(void *) + 1);
    if (!out)
        return NULL;
    for (int i = 0; i < n; i++) {
        Robosim__V1__VarSpec *vs = NEW(a, Robosim__V1__VarSpec, robosim__v1__var_spec__init);
        if (!vs)
            return NULL;
        vs->name = (char *)v[i].name;
        vs->unit = (char *)v[i].unit;
        vs->lower = v[i].lower;
        vs->upper = v[i].upper;
        vs->size = 1;
        vs->doc = (char *)(v[i].doc ? v[i].doc : "");
        out[i] = vs;
    }
    return out;
}

static Robosim__V1__ParamSpec *param_spec(rs_arena_t *a, const char *name, const char *unit,
                                          double lower, double upper, int len_min, int len_max,
                                          const double *values, int n, const char *doc)
{
    Robosim__V1__ParamSpec *ps = NEW(a, Robosim__V1__ParamSpec, robosim__v1__param_spec__init);
    if (!ps)
        return NULL;
    ps->name = (char *)name;
    ps->unit = (char *)unit;
    ps->lower = lower;
    ps->upper = upper;
    ps->min_size = (uint32_t)len_min;
    ps->max_size = (uint32_t)len_max;
    ps->n_values = (size_t)n;
    ps->values = doubles(a, values, (size_t)n);
    ps->doc = (char *)(doc ? doc : "");
    return ps->values ? ps : NULL;
}

Robosim__V1__Spec *rs_codec_spec(rs_arena_t *a, uint64_t id, const rs_world_t *w)
{
    const rs_model_t *m = w->model;
    Robosim__V1__Spec *sp = NEW(a, Robosim__V1__Spec, robosim__v1__spec__init);
    Robosim__V1__EntitySpec **ents = rs_arena_alloc(a, (size_t)m->nentities * sizeof(void *) + 1);
    int nwp = rs_world_param_count();
    Robosim__V1__ParamSpec **wps = rs_arena_alloc(a, (size_t)nwp * sizeof(void *) + 1);
    if (!sp || !ents || !wps || !(sp->world = rs_codec_world_info(a, id, w)))
        return NULL;
    for (int i = 0; i < nwp; i++) {
        const char *name, *unit, *doc;
        double lo, hi, v = rs_world_param_value(m, i);
        rs_world_param_info(i, &name, &unit, &lo, &hi, &doc);
        if (!(wps[i] = param_spec(a, name, unit, lo, hi, 1, 1, &v, 1, doc)))
            return NULL;
    }
    sp->n_world_params = (size_t)nwp;
    sp->world_params = wps;
    for (int e = 0; e < m->nentities; e++) {
        const rs_entity_model_t *em = &m->ent[e];
        const rs_robot_t *r = em->robot;
        Robosim__V1__EntitySpec *es = NEW(a, Robosim__V1__EntitySpec, robosim__v1__entity_spec__init);
        Robosim__V1__ParamSpec **ps = rs_arena_alloc(a, (size_t)r->np * sizeof(void *) + 1);
        if (!es || !ps)
            return NULL;
        es->name = (char *)em->name;
        es->kind = (char *)r->kind;
        es->n_state = (size_t)r->nx;
        es->state = var_specs(a, r->state, r->nx);
        es->n_actuators = (size_t)r->nu;
        es->actuators = var_specs(a, r->actuators, r->nu);
        es->n_sensors = (size_t)r->ns;
        es->sensors = var_specs(a, r->sensors, r->ns);
        if (!es->state || !es->actuators || !es->sensors)
            return NULL;
        for (int i = 0; i < r->np; i++) {
            const rs_param_desc_t *pd = &r->params[i];
            if (!(ps[i] = param_spec(a, pd->name, pd->unit, pd->lower, pd->upper, pd->len_min,
                                     pd->len_max, &em->p[pd->offset], em->plen[i], pd->doc)))
                return NULL;
        }
        es->n_params = (size_t)r->np;
        es->params = ps;
        es->n_modes = (size_t)r->nmodes;
        es->modes = (char **)r->mode_names;
        es->n_event_kinds = (size_t)r->nevent_kinds;
        es->event_kinds = (char **)r->event_names;
        /* the base frame in the world frame, from the preset (the origin when it gives none) */
        const rs_preset_t *pre = rs_preset_find(m->preset);
        static const double origin[3];
        es->n_base_pose = 3;
        if (!(es->base_pose = doubles(a, pre && e < pre->nentities ? pre->entities[e].base : origin, 3)))
            return NULL;
        ents[e] = es;
    }
    sp->n_entities = (size_t)m->nentities;
    sp->entities = ents;
    if (w->task) {
        const rs_task_t *t = w->task;
        Robosim__V1__TaskSpec *ts = NEW(a, Robosim__V1__TaskSpec, robosim__v1__task_spec__init);
        if (!ts)
            return NULL;
        ts->name = (char *)t->name;
        ts->n_observation = (size_t)t->nobs;
        ts->observation = var_specs(a, t->obs, t->nobs);
        ts->n_action = (size_t)t->nact;
        ts->action = var_specs(a, t->act, t->nact);
        ts->max_episode_steps = (uint32_t)rs_task_episode_limit(t, m);
        ts->reward = (char *)t->reward;
        ts->doc = (char *)t->doc;
        if (!ts->observation || !ts->action)
            return NULL;
        sp->task = ts;
    }
    if (rs_codec_spec_randomize(a, sp, w) < 0)
        return NULL;
    return sp;
}

rs_param_t *rs_codec_params(rs_arena_t *a, Robosim__V1__Param *const *params, size_t n)
{
    rs_param_t *out = rs_arena_alloc(a, n * sizeof(rs_param_t) + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        out[i].entity = params[i]->entity;
        out[i].name = params[i]->name;
        out[i].values = params[i]->values;
        out[i].nvalues = params[i]->n_values;
    }
    return out;
}
