/* Models: the world-level parameters, applying and validating parameter changes, and the
 * shared, reference-counted models worlds point at. Building one from a preset: model_build.c. */
#include "rs_model.h"
#include "rs_robot.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* World-level parameters (entity ""), kept in rs_model_t fields. */
typedef struct world_param {
    const char *name, *unit;
    double lower, upper, def;
    size_t field; /* offsetof in rs_model_t */
    const char *doc;
} world_param_t;

static const world_param_t world_params[] = {
    {"control_dt", "s", 1e-5, 10.0, 0.01, offsetof(rs_model_t, control_dt),
     "control step: commands are held over it and the integrator stops at its boundaries"},
    {"rtol", "1", 1e-14, 1e-2, 1e-8, offsetof(rs_model_t, rtol), "integrator relative tolerance"},
    {"atol", "1", 1e-16, 1.0, 1e-10, offsetof(rs_model_t, atol), "integrator absolute tolerance"},
    {"max_internal_steps", "1", 10, 1e7, 20000, offsetof(rs_model_t, max_internal_steps),
     "integrator steps allowed in one control step before it is declared failed"},
    {"sim_step", "s", 0, 10.0, 0, offsetof(rs_model_t, sim_step),
     "largest internal integrator step (Klamp't's setSimStep: a control step is integrated in "
     "substeps no longer than this); 0: no limit beyond the error control and control_dt"},
    {"stream_max_hz", "Hz", 0, 1e6, 0, offsetof(rs_model_t, stream_max_hz),
     "most states per second published for this world on the observer stream, at most the "
     "server's --stream-max-hz (more is refused); 0: the server's rate"},
    {"max_episode_steps", "1", 0, 1e9, 0, offsetof(rs_model_t, max_episode_steps),
     "control steps after which a task world's episode is truncated; 0: the task's own limit"},
    {"erk_order", "1", 0, 8, 0, offsetof(rs_model_t, erk_order),
     "order of the explicit Runge-Kutta method: 4, Zonneveld 4(3); 5, Dormand-Prince 5(4); "
     "8, Verner 8(7), events refined on the trajectory (6 and 7 read as 5, fractions as the "
     "integer below); 0: the robots' own choice: 8 with a serial arm, 5 with a parallel arm, "
     "else 4"},
};
#define NWORLD_PARAMS (sizeof world_params / sizeof world_params[0])

int rs_world_param_count(void) { return (int)NWORLD_PARAMS; }

void rs_model_world_defaults(rs_model_t *m)
{
    for (size_t i = 0; i < NWORLD_PARAMS; i++)
        *(double *)((char *)m + world_params[i].field) = world_params[i].def;
}

int rs_world_param_info(int i, const char **name, const char **unit, double *lower, double *upper,
                        const char **doc)
{
    if (i < 0 || i >= (int)NWORLD_PARAMS)
        return RS_ENOTFOUND;
    *name = world_params[i].name;
    *unit = world_params[i].unit;
    *lower = world_params[i].lower;
    *upper = world_params[i].upper;
    *doc = world_params[i].doc;
    return 0;
}

double rs_world_param_value(const rs_model_t *m, int i)
{
    return *(const double *)((const char *)m + world_params[i].field);
}

static const rs_param_desc_t *find_param(const rs_robot_t *r, const char *name)
{
    for (int i = 0; i < r->np; i++)
        if (strcmp(r->params[i].name, name) == 0)
            return &r->params[i];
    return NULL;
}

int rs_model_entity(const rs_model_t *m, const char *name)
{
    for (int e = 0; e < m->nentities; e++)
        if (strcmp(m->ent[e].name, name) == 0)
            return e;
    return RS_ENOTFOUND;
}

double rs_model_param(const rs_model_t *m, int e, const char *name, int i)
{
    if (e < 0 || e >= m->nentities)
        return NAN;
    const rs_param_desc_t *pd = find_param(m->ent[e].robot, name);
    if (!pd || i < 0 || i >= m->ent[e].plen[pd - m->ent[e].robot->params])
        return NAN;
    return m->ent[e].p[pd->offset + i];
}

static void list_names(char *buf, size_t len, const rs_model_t *m)
{
    buf[0] = '\0';
    for (int e = 0; e < m->nentities; e++)
        rs_join(buf, len, "'%s'", m->ent[e].name);
}

static void list_params(char *buf, size_t len, const rs_robot_t *r)
{
    buf[0] = '\0';
    for (int i = 0; i < r->np; i++)
        rs_join(buf, len, "%s", r->params[i].name);
}

/* Apply one parameter to `m` after checking it; `m` may be left partly changed on error, so
 * callers work on a copy. */
int rs_model_apply_param(rs_model_t *m, const rs_param_t *p, rs_status_t *st)
{
    char names[160];
    if (!p->name)
        return rs_fail(st, RS_EINVAL, "a parameter has no name");
    for (size_t i = 0; i < p->nvalues; i++)
        if (!isfinite(p->values[i]))
            return rs_fail(st, RS_EINVAL, "parameter '%s%s%s' value %zu is not finite",
                           p->entity && p->entity[0] ? p->entity : "",
                           p->entity && p->entity[0] ? "." : "", p->name, i);

    if (!p->entity || !p->entity[0]) {
        for (size_t i = 0; i < NWORLD_PARAMS; i++) {
            const world_param_t *wp = &world_params[i];
            if (strcmp(wp->name, p->name) != 0)
                continue;
            if (p->nvalues != 1)
                return rs_fail(st, RS_EINVAL, "world parameter '%s' takes 1 value, got %zu",
                               p->name, p->nvalues);
            if (p->values[0] < wp->lower || p->values[0] > wp->upper)
                return rs_fail(st, RS_ERANGE, "world parameter '%s' = %g is outside [%g, %g] %s",
                               p->name, p->values[0], wp->lower, wp->upper, wp->unit);
            *(double *)((char *)m + wp->field) = p->values[0];
            return 0;
        }
        return rs_fail(st, RS_ENOTFOUND,
                       "unknown world parameter '%s' (world parameters: control_dt, rtol, atol, "
                       "max_internal_steps, sim_step, stream_max_hz, max_episode_steps; entity parameters need the entity "
                       "name)",
                       p->name);
    }

    int e = rs_model_entity(m, p->entity);
    if (e < 0) {
        list_names(names, sizeof names, m);
        return rs_fail(st, RS_ENOTFOUND, "no entity '%s' in this world (entities: %s)", p->entity,
                       names);
    }
    rs_entity_model_t *em = &m->ent[e];
    const rs_param_desc_t *pd = find_param(em->robot, p->name);
    if (!pd) {
        list_params(names, sizeof names, em->robot);
        return rs_fail(st, RS_ENOTFOUND, "entity '%s' (%s) has no parameter '%s' (parameters: %s)",
                       p->entity, em->robot->kind, p->name, names);
    }
    if ((int)p->nvalues < pd->len_min || (int)p->nvalues > pd->len_max) {
        if (pd->len_min == pd->len_max)
            return rs_fail(st, RS_EINVAL, "parameter '%s.%s' takes %d value%s, got %zu", p->entity,
                           p->name, pd->len_min, pd->len_min == 1 ? "" : "s", p->nvalues);
        return rs_fail(st, RS_EINVAL, "parameter '%s.%s' takes %d to %d values, got %zu",
                       p->entity, p->name, pd->len_min, pd->len_max, p->nvalues);
    }
    for (size_t i = 0; i < p->nvalues; i++) {
        if (p->values[i] < pd->lower || p->values[i] > pd->upper)
            return rs_fail(st, RS_ERANGE, "parameter '%s.%s' = %g is outside [%g, %g] %s",
                           p->entity, p->name, p->values[i], pd->lower, pd->upper, pd->unit);
        /* a choice between its whole values: the robot's validate names them */
        if (p->values[i] != floor(p->values[i]) &&
            rs_robot_param_is_choice(em->robot, (int)(pd - em->robot->params)) &&
            !em->robot->validate)
            return rs_fail(st, RS_EINVAL,
                           "parameter '%s.%s' = %g: it is a choice, one of the whole numbers "
                           "%g to %g (GetSpec says what each means)",
                           p->entity, p->name, p->values[i], pd->lower, pd->upper);
    }
    if (p->nvalues)
        memcpy(&em->p[pd->offset], p->values, p->nvalues * sizeof(double));
    em->plen[pd - em->robot->params] = (int)p->nvalues;
    return 0;
}

/* Lay out the entities' slices, run each robot's cross-parameter checks and derive its
 * constants (compile). */
int rs_model_finish(rs_model_t *m, rs_status_t *st)
{
    m->nx = m->nu = m->ns = m->ng = 0;
    for (int e = 0; e < m->nentities; e++) {
        rs_entity_model_t *em = &m->ent[e];
        const rs_robot_t *r = em->robot;
        if (r->validate) {
            int rc = r->validate(em, st);
            if (rc < 0)
                return rc;
        }
        memset(em->c, 0, sizeof em->c);
        if (r->compile)
            r->compile(em);
        em->x_off = m->nx;
        em->nx = r->nx;
        em->u_off = m->nu;
        em->nu = r->nu;
        em->s_off = m->ns;
        em->ns = r->ns;
        em->g_off = m->ng;
        em->ng = r->nguards ? r->nguards(em) : 0;
        m->nx += em->nx;
        m->nu += em->nu;
        m->ns += em->ns;
        m->ng += em->ng;
    }
    return 0;
}

int rs_model_set_params(rs_model_t *m, const rs_param_t *params, size_t nparams, rs_status_t *st)
{
    rs_model_t tmp = *m;
    for (size_t i = 0; i < nparams; i++) {
        int rc = rs_model_apply_param(&tmp, &params[i], st);
        if (rc < 0)
            return rc;
    }
    int rc = rs_model_finish(&tmp, st);
    if (rc < 0)
        return rc;
    if (tmp.nx != m->nx || tmp.nu != m->nu || tmp.ns != m->ns)
        return rs_fail(st, RS_EINTERNAL, "parameters changed the state layout");
    *m = tmp;
    return 0;
}

/* ---- shared models ------------------------------------------------------------------------
 * One list of the models in use, each with a reference count and a hash of its bytes (FNV-1a),
 * under one mutex: worlds are created and re-parameterised far less often than stepped, and
 * stepping never touches the list. A model is found by its bytes: rs_model_build zeroes the
 * struct first and every change copies it whole, so equal parameters give equal bytes. */
typedef struct shared_model {
    rs_model_t model; /* first: a shared model's address is its node's */
    int refs;
    uint64_t hash;
    struct shared_model *next;
} shared_model_t;

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static shared_model_t *shared_models;
static int shared_count;

static uint64_t model_hash(const rs_model_t *m)
{
    const unsigned char *p = (const unsigned char *)m;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < sizeof *m; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

const rs_model_t *rs_model_share(const rs_model_t *m, rs_status_t *st)
{
    uint64_t h = model_hash(m);
    pthread_mutex_lock(&shared_lock);
    shared_model_t *s = shared_models;
    while (s && !(s->hash == h && memcmp(&s->model, m, sizeof *m) == 0))
        s = s->next;
    if (s) {
        s->refs++;
    } else if ((s = malloc(sizeof *s)) != NULL) {
        s->model = *m;
        s->refs = 1;
        s->hash = h;
        s->next = shared_models;
        shared_models = s;
        shared_count++;
    }
    pthread_mutex_unlock(&shared_lock);
    if (!s)
        rs_fail(st, RS_EEXHAUSTED, "out of memory for a model");
    return s ? &s->model : NULL;
}

const rs_model_t *rs_model_retain(const rs_model_t *m)
{
    pthread_mutex_lock(&shared_lock);
    ((shared_model_t *)(void *)m)->refs++; /* m is a node's first member (rs_model_share) */
    pthread_mutex_unlock(&shared_lock);
    return m;
}

void rs_model_release(const rs_model_t **pm)
{
    const rs_model_t *m = *pm;
    if (!m)
        return;
    *pm = NULL;
    pthread_mutex_lock(&shared_lock);
    shared_model_t **at = &shared_models;
    while (*at && &(*at)->model != m)
        at = &(*at)->next;
    shared_model_t *s = *at;
    if (s && --s->refs == 0) {
        *at = s->next;
        shared_count--;
    } else {
        s = NULL;
    }
    pthread_mutex_unlock(&shared_lock);
    free(s);
}

int rs_model_shared_count(void)
{
    pthread_mutex_lock(&shared_lock);
    int n = shared_count;
    pthread_mutex_unlock(&shared_lock);
    return n;
}
