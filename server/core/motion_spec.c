/* Declarative motion specifications (the dual-arm alignment tutorial): parse (json-c), bind,
 * validate, and evaluate once per control step. See rs_motion_spec.h for the vocabulary.
 *
 * The solver: the tutorial names the Popov-Vereshchagin hybrid dynamics solver
 * (AccelerationConstrainedHybridDynamicsAlgorithm). What is implemented of it: the part that
 * maps external Cartesian forces (the motion drivers' wrenches) to joint torques, which for the
 * planar two-link arms is the Jacobian transpose tau = J^T F (+ torque on the joints up to the
 * frame), done by the robot's apply_wrench; a wrench on a velocity-controlled base goes through
 * the robot's admittance. Acceleration constraints (AccelerationConstraintSpecification, the
 * solver's constrained part) are refused at validation with RS_EUNIMPL. Drivers in one
 * PrioritizationLevel add; levels add too (a planar two-link arm has no null space for a lower
 * level's force), which the solver entity documents by accepting only this. */
#include "rs_json.h"
#include "rs_limits.h"
#include "rs_motion_spec.h"
#include "rs_robot.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENT RS_MOTION_SPEC_MAX_ENTITIES
#define MAX_LIST 32
#define ID_MAX 96

enum ekind {
    E_OTHER, E_QUANTITY, E_FRAME, E_CONSTRAINT, E_EVALUATOR, E_CONTROLLER, E_MONITOR, E_HANDLER,
    E_MOTION, E_OPERATOR, E_DRIVER, E_PRIO, E_SOLVER
};
static const char *const ekind_names[] = {
    "entity of another kind", "Quantity", "Frame", "Constraint", "ErrorEvaluator", "Controller",
    "Monitor", "ConstraintHandler", "GuardedMotion", "operator", "MotionDriver",
    "PrioritizationLevel", "Solver"};

enum qkind {
    K_NONE, K_LENGTH, K_LINVEL, K_ANGVEL, K_ANGLE, K_FORCE, K_TORQUE, K_DIMLESS, K_TIME, K_POSE,
    K_TWIST, K_WRENCH, K_DIRECTION, K_CFORCE, NKINDS
};
static const char *const kind_names[NKINDS] = {
    "(none)", "Distance", "LinearVelocity", "AngularVelocity", "Angle", "Force", "Torque",
    "Dimensionless", "Time", "Pose", "VelocityTwist", "Wrench", "Direction", "ContactForce"};

enum qsrc { Q_FREE, Q_CONST, Q_POSE, Q_TWIST, Q_FORCE, Q_VIEW, Q_PRODUCED };
enum op { OP_DIST, OP_DIR, OP_ANGLE, OP_FORCE, OP_TORQUE };
enum ctype { C_EQUALITY = 1, C_BILATERAL = 2 };

/* a unit: its name, the kind it measures, the factor to SI */
static const struct unit { const char *name; int kind; double si; } units[] = {
    {"M", K_LENGTH, 1.0},          {"CentiM", K_LENGTH, 0.01},     {"MilliM", K_LENGTH, 1e-3},
    {"M-PER-SEC", K_LINVEL, 1.0},  {"RAD-PER-SEC", K_ANGVEL, 1.0}, {"RAD", K_ANGLE, 1.0},
    {"DEG", K_ANGLE, M_PI / 180},  {"N", K_FORCE, 1.0},            {"N-M", K_TORQUE, 1.0},
    {"UNITLESS", K_DIMLESS, 1.0},  {"SEC", K_TIME, 1.0},
};

/* names of quantity kinds (as quantity-kind or as an @type) */
static const struct kname { const char *name; int kind; } knames[] = {
    {"Distance", K_LENGTH},         {"LinearDistance", K_LENGTH}, {"Length", K_LENGTH},
    {"LinearVelocity", K_LINVEL},   {"AngularVelocity", K_ANGVEL}, {"Angle", K_ANGLE},
    {"Force", K_FORCE},             {"Torque", K_TORQUE},          {"Dimensionless", K_DIMLESS},
    {"Time", K_TIME},
};

/* typed constraints and the kind they require */
static const struct ctyped { const char *name; int kind; } ctyped[] = {
    {"LinearVelocityConstraint", K_LINVEL},   {"LinearDistanceConstraint", K_LENGTH},
    {"DistanceConstraint", K_LENGTH},         {"PositionConstraint", K_LENGTH},
    {"ForceConstraint", K_FORCE},             {"AngleConstraint", K_ANGLE},
    {"AngularPositionConstraint", K_ANGLE},   {"AngularVelocityConstraint", K_ANGVEL},
    {"TorqueConstraint", K_TORQUE},
};

typedef struct ent {
    char id[ID_MAX];
    int kind;
    /* quantities */
    int qkind, src, producer, asb; /* asb: the Frame whose axes a vector is in (-1: world) */
    double value[3];
    /* references (meaning by kind; -1 unset):
     *   Pose/Twist/ContactForce: a = of, b = with-respect-to; View: a = source, b = coordinate
     *   operator: a, b inputs, c output (op in `op`)
     *   Constraint: a = quantity, b = reference / lower, c = upper (ctype)
     *   ErrorEvaluator: a = constraint, b = error;  Controller: a = error, b = control
     *   Monitor: a = constraint;  Handler: a = constraint, b = controller or monitor
     *   MotionDriver: a = wrench, b = frame */
    int a, b, c, op, ctype, ckind;
    /* frames */
    int entity, frame;
    /* controllers and monitors */
    double kp, ki, kd, decay, tol;
    /* GuardedMotion: 0 when, 1 while, 2 until; PrioritizationLevel and Solver: list 0 */
    int list[3][MAX_LIST], nlist[3];
    int replace;
} ent_t;

/* one step's computations in dependency order */
typedef struct comp { int ent; } comp_t;

struct rs_motion_spec {
    char *source;
    size_t source_len;
    int n;
    ent_t e[MAX_ENT];
    /* quantity values and frame readings: buffer 0 for the control step (what readouts show),
     * buffer 1 for the integrator's guard evaluations at trial states; the pointers select */
    double val_buf[2][MAX_ENT][3];
    double fpose_buf[2][MAX_ENT][3], ftwist_buf[2][MAX_ENT][3], fforce_buf[2][MAX_ENT][2];
    double (*val)[3], (*fpose)[3], (*ftwist)[3], (*fforce)[2];
    int ncomp;
    comp_t comp[MAX_ENT];
    /* indexes of evaluators, controllers, monitors, motions, solvers in document order */
    int nev, nctl, nmon, nmot, nsol;
    int ev[MAX_ENT], ctl[MAX_ENT], mon[MAX_ENT], mot[MAX_ENT], sol[MAX_ENT];
    /* run state: the active motion and whether its `when` held; per controller integral,
     * previous error, whether there is one, output; per monitor satisfied; per evaluator the
     * error */
    double active, started;
    double integ[MAX_ENT], eprev[MAX_ENT], hasprev[MAX_ENT], out[MAX_ENT], sat[MAX_ENT],
        err[MAX_ENT];
};

static void use_buffer(rs_motion_spec_t *s, int b)
{
    s->val = s->val_buf[b], s->fpose = s->fpose_buf[b];
    s->ftwist = s->ftwist_buf[b], s->fforce = s->fforce_buf[b];
}

/* ---- JSON-LD names ------------------------------------------------------------------------- */

/* The local name of an IRI or compact name: after the last '#', '/' or ':'. */
static const char *local_name(const char *s)
{
    const char *l = s;
    for (const char *p = s; *p; p++)
        if (*p == '#' || *p == '/' || *p == ':')
            l = p + 1;
    return l;
}

/* A term resolved through @context (a string IRI, or an object's @id), then its local name. */
static const char *resolve(json_object *ctx, const char *term)
{
    json_object *v;
    if (ctx && json_object_object_get_ex(ctx, term, &v)) {
        if (json_object_is_type(v, json_type_string))
            return local_name(json_object_get_string(v));
        json_object *id;
        if (json_object_is_type(v, json_type_object) && json_object_object_get_ex(v, "@id", &id) &&
            json_object_is_type(id, json_type_string))
            return local_name(json_object_get_string(id));
    }
    return local_name(term);
}

/* The property of entity object o whose resolved local name is `name`, or NULL. */
static json_object *prop(json_object *ctx, json_object *o, const char *name)
{
    json_object_object_foreach(o, key, val)
    {
        if (strcmp(resolve(ctx, key), name) == 0)
            return val;
    }
    return NULL;
}

static int has_type(json_object *ctx, json_object *types, const char *name)
{
    if (!types)
        return 0;
    if (json_object_is_type(types, json_type_string))
        return strcmp(resolve(ctx, json_object_get_string(types)), name) == 0;
    if (json_object_is_type(types, json_type_array))
        for (size_t i = 0; i < json_object_array_length(types); i++) {
            json_object *t = json_object_array_get_idx(types, i);
            if (json_object_is_type(t, json_type_string) &&
                strcmp(resolve(ctx, json_object_get_string(t)), name) == 0)
                return 1;
        }
    return 0;
}

/* ---- parse context ------------------------------------------------------------------------- */

typedef struct parser {
    const rs_model_t *m;
    rs_motion_spec_t *s;
    json_object *ctx;
    json_object *obj[MAX_ENT];
    json_object *types[MAX_ENT];
    rs_status_t *st;
} parser_t;

static int find_id(const rs_motion_spec_t *s, const char *id)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->e[i].id, id) == 0)
            return i;
    return -1;
}

/* A reference property: required (or optional: *out = -1 when absent), naming an entity of
 * kind `want` (E_OTHER: any). */
static int get_ref(parser_t *P, int i, const char *name, int want, int required, int *out)
{
    *out = -1;
    json_object *v = prop(P->ctx, P->obj[i], name);
    const char *id = P->s->e[i].id;
    if (!v) {
        if (!required)
            return 0;
        return rs_fail(P->st, RS_EINVAL, "entity '%s': missing the reference '%s'", id, name);
    }
    if (!json_object_is_type(v, json_type_string))
        return rs_fail(P->st, RS_EINVAL, "entity '%s': '%s' must be the @id of an entity (a string)",
                       id, name);
    const char *ref = json_object_get_string(v);
    int j = find_id(P->s, ref);
    if (j < 0)
        return rs_fail(P->st, RS_EINVAL,
                       "entity '%s': '%s' refers to '%s', which is not in the document (a dangling "
                       "reference)",
                       id, name, ref);
    if (want != E_OTHER && P->s->e[j].kind != want)
        return rs_fail(P->st, RS_EINVAL, "entity '%s': '%s' must refer to a %s, but '%s' is a %s",
                       id, name, ekind_names[want], ref, ekind_names[P->s->e[j].kind]);
    *out = j;
    return 0;
}

static int get_list(parser_t *P, int i, const char *name, int want, int *list, int *n)
{
    *n = 0;
    json_object *v = prop(P->ctx, P->obj[i], name);
    const char *id = P->s->e[i].id;
    if (!v)
        return 0;
    if (json_object_is_type(v, json_type_string)) {
        int j;
        int rc = get_ref(P, i, name, want, 1, &j);
        if (rc == 0)
            list[(*n)++] = j;
        return rc;
    }
    if (!json_object_is_type(v, json_type_array))
        return rs_fail(P->st, RS_EINVAL, "entity '%s': '%s' must be a list of @ids", id, name);
    size_t len = json_object_array_length(v);
    if (len > MAX_LIST)
        return rs_fail(P->st, RS_EEXHAUSTED, "entity '%s': '%s' lists %zu entries (at most %d)", id,
                       name, len, MAX_LIST);
    for (size_t k = 0; k < len; k++) {
        json_object *r = json_object_array_get_idx(v, k);
        const char *ref = json_object_is_type(r, json_type_string) ? json_object_get_string(r) : NULL;
        int j = ref ? find_id(P->s, ref) : -1;
        if (!ref)
            return rs_fail(P->st, RS_EINVAL, "entity '%s': entry %zu of '%s' is not an @id", id, k,
                           name);
        if (j < 0)
            return rs_fail(P->st, RS_EINVAL,
                           "entity '%s': '%s' refers to '%s', which is not in the document (a "
                           "dangling reference)",
                           id, name, ref);
        if (want != E_OTHER && P->s->e[j].kind != want)
            return rs_fail(P->st, RS_EINVAL,
                           "entity '%s': '%s' must list %s entities, but '%s' is a %s", id, name,
                           ekind_names[want], ref, ekind_names[P->s->e[j].kind]);
        list[(*n)++] = j;
    }
    return 0;
}

/* A number given as a JSON number or a numeric string (the tutorial writes "450.0"). */
static int get_number(parser_t *P, int i, const char *name, int required, double def, double *out)
{
    json_object *v = prop(P->ctx, P->obj[i], name);
    *out = def;
    if (!v)
        return required ? rs_fail(P->st, RS_EINVAL, "entity '%s': missing '%s'", P->s->e[i].id, name)
                        : 0;
    if (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)) {
        *out = json_object_get_double(v);
    } else if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        char *end;
        *out = strtod(s, &end);
        if (end == s || *end)
            return rs_fail(P->st, RS_EINVAL, "entity '%s': '%s' = \"%s\" is not a number",
                           P->s->e[i].id, name, s);
    } else {
        return rs_fail(P->st, RS_EINVAL, "entity '%s': '%s' must be a number", P->s->e[i].id, name);
    }
    if (!isfinite(*out))
        return rs_fail(P->st, RS_EINVAL, "entity '%s': '%s' is not finite", P->s->e[i].id, name);
    return 0;
}

static const char *get_string(parser_t *P, int i, const char *name)
{
    json_object *v = prop(P->ctx, P->obj[i], name);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* ---- entity kinds -------------------------------------------------------------------------- */

static int classify(parser_t *P, int i)
{
    json_object *t = P->types[i];
    ent_t *e = &P->s->e[i];
    static const char *const ops[] = {"PoseToLinearDistance", "PoseToDirection",
                                      "AngleBetweenDirections",
                                      "PureForceFromDirectionAndMagnitude",
                                      "PureTorqueFromMagnitude"};
    for (int k = 0; k < 5; k++)
        if (has_type(P->ctx, t, ops[k])) {
            e->op = k;
            return E_OPERATOR;
        }
    if (has_type(P->ctx, t, "AccelerationConstraintSpecification"))
        return -1; /* refused below */
    if (has_type(P->ctx, t, "Constraint") || has_type(P->ctx, t, "EqualityConstraint") ||
        has_type(P->ctx, t, "BilateralConstraint"))
        return E_CONSTRAINT;
    if (has_type(P->ctx, t, "ErrorEvaluator") || has_type(P->ctx, t, "ConstraintEvaluator"))
        return E_EVALUATOR;
    if (has_type(P->ctx, t, "Controller") || has_type(P->ctx, t, "ProportionalIntegralDerivative"))
        return E_CONTROLLER;
    if (has_type(P->ctx, t, "Monitor"))
        return E_MONITOR;
    if (has_type(P->ctx, t, "ConstraintHandler"))
        return E_HANDLER;
    if (has_type(P->ctx, t, "GuardedMotion"))
        return E_MOTION;
    if (has_type(P->ctx, t, "MotionDriver"))
        return E_DRIVER;
    if (has_type(P->ctx, t, "PrioritizationLevel"))
        return E_PRIO;
    if (has_type(P->ctx, t, "Solver") || has_type(P->ctx, t, "SolverWithInputAndOutput"))
        return E_SOLVER;
    if (has_type(P->ctx, t, "Frame"))
        return E_FRAME;
    static const char *const qtypes[] = {"Quantity", "Pose", "VelocityTwist", "Wrench", "Direction",
                                         "ContactForce", "View"};
    for (int k = 0; k < 7; k++)
        if (has_type(P->ctx, t, qtypes[k]))
            return E_QUANTITY;
    return E_OTHER;
}

static int kind_by_name(const char *n)
{
    for (size_t k = 0; k < sizeof knames / sizeof knames[0]; k++)
        if (strcmp(knames[k].name, n) == 0)
            return knames[k].kind;
    return K_NONE;
}

static int parse_quantity(parser_t *P, int i)
{
    ent_t *e = &P->s->e[i];
    json_object *t = P->types[i];
    int rc;
    e->src = Q_FREE;
    e->asb = -1;
    /* composite quantities by @type */
    if (has_type(P->ctx, t, "Pose"))
        e->qkind = K_POSE, e->src = Q_POSE;
    else if (has_type(P->ctx, t, "VelocityTwist"))
        e->qkind = K_TWIST, e->src = Q_TWIST;
    else if (has_type(P->ctx, t, "ContactForce"))
        e->qkind = K_CFORCE, e->src = Q_FORCE;
    else if (has_type(P->ctx, t, "Wrench"))
        e->qkind = K_WRENCH;
    else if (has_type(P->ctx, t, "Direction"))
        e->qkind = K_DIRECTION;
    if (e->src == Q_POSE || e->src == Q_TWIST || e->src == Q_FORCE) {
        if ((rc = get_ref(P, i, "of", E_FRAME, 1, &e->a)) ||
            (rc = get_ref(P, i, "with-respect-to", E_FRAME, e->src != Q_FORCE, &e->b)))
            return rc;
        int asb;
        if ((rc = get_ref(P, i, "as-seen-by", E_FRAME, 0, &asb)))
            return rc;
        e->asb = asb >= 0 ? asb : e->b;
        return 0;
    }
    if (e->qkind == K_DIRECTION) {
        /* a constant direction: "value": [x, y] in as-seen-by's axes (default: world) */
        json_object *v = prop(P->ctx, P->obj[i], "value");
        if (!v)
            return 0; /* produced by an operator */
        if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) != 2)
            return rs_fail(P->st, RS_EINVAL, "entity '%s': a Direction's value is [x, y]", e->id);
        for (int k = 0; k < 2; k++) {
            json_object *c = json_object_array_get_idx(v, (size_t)k);
            e->value[k] = json_object_is_type(c, json_type_string)
                              ? strtod(json_object_get_string(c), NULL)
                              : json_object_get_double(c);
        }
        double r = rs_hypot(e->value[0], e->value[1]);
        if (!(r > 0) || !isfinite(r))
            return rs_fail(P->st, RS_EINVAL, "entity '%s': a Direction's value must be a non-zero "
                           "vector", e->id);
        e->value[0] /= r, e->value[1] /= r;
        e->src = Q_CONST;
        return get_ref(P, i, "as-seen-by", E_FRAME, 0, &e->asb);
    }
    if (e->qkind != K_NONE)
        return 0; /* Wrench: produced by an operator */
    /* scalar: the kind from quantity-kind and from the @type, which must agree */
    int by_type = K_NONE;
    for (size_t k = 0; k < sizeof knames / sizeof knames[0]; k++)
        if (has_type(P->ctx, t, knames[k].name))
            by_type = knames[k].kind;
    const char *qk = get_string(P, i, "quantity-kind");
    int by_prop = qk ? kind_by_name(resolve(P->ctx, qk)) : K_NONE;
    if (qk && by_prop == K_NONE)
        return rs_fail(P->st, RS_EINVAL, "entity '%s': unknown quantity-kind '%s'", e->id, qk);
    if (by_prop != K_NONE && by_type != K_NONE && by_prop != by_type)
        return rs_fail(P->st, RS_EINVAL,
                       "entity '%s': quantity-kind %s does not match its @type %s (a quantity-kind "
                       "mismatch)",
                       e->id, kind_names[by_prop], kind_names[by_type]);
    e->qkind = by_prop != K_NONE ? by_prop : by_type;
    if (e->qkind == K_NONE)
        return rs_fail(P->st, RS_EINVAL,
                       "entity '%s': a Quantity needs a quantity-kind (Distance, LinearVelocity, "
                       "AngularVelocity, Angle, Force, Torque, Dimensionless, Time)",
                       e->id);
    const char *unit = get_string(P, i, "unit");
    double si = 1.0;
    if (!unit)
        return rs_fail(P->st, RS_EINVAL, "entity '%s': missing 'unit'", e->id);
    const char *un = resolve(P->ctx, unit);
    size_t u;
    for (u = 0; u < sizeof units / sizeof units[0]; u++)
        if (strcmp(units[u].name, un) == 0)
            break;
    if (u == sizeof units / sizeof units[0])
        return rs_fail(P->st, RS_EINVAL, "entity '%s': unknown unit '%s'", e->id, unit);
    if (units[u].kind != e->qkind)
        return rs_fail(P->st, RS_EINVAL,
                       "entity '%s': unit %s measures %s, not %s (a unit mismatch)", e->id, un,
                       kind_names[units[u].kind], kind_names[e->qkind]);
    si = units[u].si;
    /* a view into a composite quantity, or a constant, or free (produced later) */
    if (prop(P->ctx, P->obj[i], "view-of")) {
        double coord;
        if ((rc = get_ref(P, i, "view-of", E_QUANTITY, 1, &e->a)) ||
            (rc = get_number(P, i, "coordinate", 1, 0, &coord)))
            return rc;
        if (coord != 0 && coord != 1 && coord != 2)
            return rs_fail(P->st, RS_EINVAL, "entity '%s': coordinate %g must be 0, 1 or 2", e->id,
                           coord);
        e->b = (int)coord;
        e->src = Q_VIEW;
        return 0;
    }
    if (prop(P->ctx, P->obj[i], "value")) {
        if ((rc = get_number(P, i, "value", 1, 0, &e->value[0])))
            return rc;
        e->value[0] *= si;
        e->src = Q_CONST;
    }
    return 0;
}

static int parse_frame(parser_t *P, int i)
{
    ent_t *e = &P->s->e[i];
    const char *wf = get_string(P, i, "world-frame");
    if (!wf)
        return rs_fail(P->st, RS_EINVAL,
                       "entity '%s': a Frame needs 'world-frame' (a robot frame such as left_ee, "
                       "or world)",
                       e->id);
    e->entity = e->frame = -1;
    if (strcmp(wf, "world") == 0)
        return 0;
    const char *en = get_string(P, i, "entity");
    char names[256] = "";
    for (int k = 0; k < P->m->nentities; k++) {
        const rs_entity_model_t *em = &P->m->ent[k];
        if (en && strcmp(en, em->name) != 0)
            continue;
        for (int f = 0; f < em->robot->nframes; f++) {
            if (strcmp(em->robot->frame_names[f], wf) == 0) {
                e->entity = k, e->frame = f;
                return 0;
            }
            rs_join(names, sizeof names, "%s", em->robot->frame_names[f]);
        }
    }
    return rs_fail(P->st, RS_ENOTFOUND, "entity '%s': no frame '%s'%s%s in this world (frames: %s)",
                   e->id, wf, en ? " on entity " : "", en ? en : "", names[0] ? names : "none");
}

/* kind check of a quantity reference */
static int want_kind(parser_t *P, int i, const char *role, int q, int kind)
{
    const ent_t *e = &P->s->e[q];
    if (e->qkind != kind)
        return rs_fail(P->st, RS_EINVAL, "entity '%s': '%s' must be a %s quantity, but '%s' is %s",
                       P->s->e[i].id, role, kind_names[kind], e->id, kind_names[e->qkind]);
    return 0;
}

static int produce(parser_t *P, int by, int q)
{
    ent_t *e = &P->s->e[q];
    if (e->src == Q_PRODUCED)
        return rs_fail(P->st, RS_EINVAL, "quantity '%s' is produced both by '%s' and by '%s'", e->id,
                       P->s->e[e->producer].id, P->s->e[by].id);
    if (e->src != Q_FREE)
        return rs_fail(P->st, RS_EINVAL,
                       "entity '%s' would overwrite quantity '%s', which has a value or a binding "
                       "of its own",
                       P->s->e[by].id, e->id);
    e->src = Q_PRODUCED;
    e->producer = by;
    return 0;
}

static int parse_operator(parser_t *P, int i)
{
    ent_t *e = &P->s->e[i];
    int rc;
    switch (e->op) {
    case OP_DIST:
        if ((rc = get_ref(P, i, "pose", E_QUANTITY, 1, &e->a)) ||
            (rc = get_ref(P, i, "distance", E_QUANTITY, 1, &e->c)) ||
            (rc = want_kind(P, i, "pose", e->a, K_POSE)) ||
            (rc = want_kind(P, i, "distance", e->c, K_LENGTH)))
            return rc;
        break;
    case OP_DIR:
        if ((rc = get_ref(P, i, "pose", E_QUANTITY, 1, &e->a)) ||
            (rc = get_ref(P, i, "direction", E_QUANTITY, 1, &e->c)) ||
            (rc = want_kind(P, i, "pose", e->a, K_POSE)) ||
            (rc = want_kind(P, i, "direction", e->c, K_DIRECTION)))
            return rc;
        break;
    case OP_ANGLE:
        if ((rc = get_ref(P, i, "direction-a", E_QUANTITY, 1, &e->a)) ||
            (rc = get_ref(P, i, "direction-b", E_QUANTITY, 1, &e->b)) ||
            (rc = get_ref(P, i, "angle", E_QUANTITY, 1, &e->c)) ||
            (rc = want_kind(P, i, "direction-a", e->a, K_DIRECTION)) ||
            (rc = want_kind(P, i, "direction-b", e->b, K_DIRECTION)) ||
            (rc = want_kind(P, i, "angle", e->c, K_ANGLE)))
            return rc;
        break;
    case OP_TORQUE:
        if ((rc = get_ref(P, i, "magnitude", E_QUANTITY, 1, &e->a)) ||
            (rc = get_ref(P, i, "wrench", E_QUANTITY, 1, &e->c)) ||
            (rc = want_kind(P, i, "magnitude", e->a, K_TORQUE)) ||
            (rc = want_kind(P, i, "wrench", e->c, K_WRENCH)))
            return rc;
        break;
    default:
        if ((rc = get_ref(P, i, "magnitude", E_QUANTITY, 1, &e->a)) ||
            (rc = get_ref(P, i, "direction", E_QUANTITY, 1, &e->b)) ||
            (rc = get_ref(P, i, "wrench", E_QUANTITY, 1, &e->c)) ||
            (rc = want_kind(P, i, "magnitude", e->a, K_FORCE)) ||
            (rc = want_kind(P, i, "direction", e->b, K_DIRECTION)) ||
            (rc = want_kind(P, i, "wrench", e->c, K_WRENCH)))
            return rc;
        break;
    }
    return produce(P, i, e->c);
}

static int parse_constraint(parser_t *P, int i)
{
    ent_t *e = &P->s->e[i];
    json_object *t = P->types[i];
    int rc;
    int eq = has_type(P->ctx, t, "EqualityConstraint"), bi = has_type(P->ctx, t, "BilateralConstraint");
    if (eq == bi)
        return rs_fail(P->st, RS_EINVAL,
                       "entity '%s': a Constraint is an EqualityConstraint or a BilateralConstraint "
                       "(exactly one)",
                       e->id);
    if ((rc = get_ref(P, i, "quantity", E_QUANTITY, 1, &e->a)))
        return rc;
    int k = P->s->e[e->a].qkind;
    if (k >= K_POSE)
        return rs_fail(P->st, RS_EINVAL,
                       "entity '%s': constrains '%s', a %s; constrain a one-dimensional view of it",
                       e->id, P->s->e[e->a].id, kind_names[k]);
    for (size_t c = 0; c < sizeof ctyped / sizeof ctyped[0]; c++)
        if (has_type(P->ctx, t, ctyped[c].name) && ctyped[c].kind != k)
            return rs_fail(P->st, RS_EINVAL,
                           "entity '%s': a %s cannot constrain '%s', which is a %s (a type "
                           "mismatch)",
                           e->id, ctyped[c].name, P->s->e[e->a].id, kind_names[k]);
    e->ckind = k;
    if (eq) {
        e->ctype = C_EQUALITY;
        if ((rc = get_ref(P, i, "reference-value", E_QUANTITY, 1, &e->b)) ||
            (rc = want_kind(P, i, "reference-value", e->b, k)))
            return rc;
    } else {
        e->ctype = C_BILATERAL;
        if ((rc = get_ref(P, i, "lower-threshold", E_QUANTITY, 1, &e->b)) ||
            (rc = get_ref(P, i, "upper-threshold", E_QUANTITY, 1, &e->c)) ||
            (rc = want_kind(P, i, "lower-threshold", e->b, k)) ||
            (rc = want_kind(P, i, "upper-threshold", e->c, k)))
            return rc;
        const ent_t *lo = &P->s->e[e->b], *hi = &P->s->e[e->c];
        if (lo->src == Q_CONST && hi->src == Q_CONST && !(lo->value[0] <= hi->value[0]))
            return rs_fail(P->st, RS_EINVAL,
                           "entity '%s': lower-threshold %g is above upper-threshold %g", e->id,
                           lo->value[0], hi->value[0]);
    }
    return 0;
}

static int parse_entity(parser_t *P, int i)
{
    ent_t *e = &P->s->e[i];
    int rc = 0;
    switch (e->kind) {
    case E_QUANTITY: return parse_quantity(P, i);
    case E_FRAME: return parse_frame(P, i);
    case E_CONSTRAINT: return 0; /* after the quantities (their kinds) */
    case E_OPERATOR: return 0;   /* after the quantities */
    case E_EVALUATOR:
        return get_ref(P, i, "constraint", E_CONSTRAINT, 1, &e->a) ||
                       get_ref(P, i, "error", E_QUANTITY, 1, &e->b)
                   ? -1
                   : 0;
    case E_CONTROLLER:
        if ((rc = get_ref(P, i, "error-signal", E_QUANTITY, 1, &e->a)) ||
            (rc = get_ref(P, i, "control-signal", E_QUANTITY, 1, &e->b)) ||
            (rc = get_number(P, i, "proportional-gain", 0, 0, &e->kp)) ||
            (rc = get_number(P, i, "integral-gain", 0, 0, &e->ki)) ||
            (rc = get_number(P, i, "derivative-gain", 0, 0, &e->kd)) ||
            (rc = get_number(P, i, "decay-rate", has_type(P->ctx, P->types[i], "DecayingIntegralTerm"),
                             0, &e->decay)))
            return rc;
        if (e->decay < 0)
            return rs_fail(P->st, RS_EINVAL, "entity '%s': decay-rate %g must not be negative",
                           e->id, e->decay);
        return 0;
    case E_MONITOR:
        if ((rc = get_ref(P, i, "constraint", E_CONSTRAINT, 1, &e->a)) ||
            (rc = get_number(P, i, "tolerance", 0, 0, &e->tol)))
            return rc;
        return e->tol < 0 ? rs_fail(P->st, RS_EINVAL, "entity '%s': negative tolerance", e->id) : 0;
    case E_HANDLER: {
        int c, mo;
        if ((rc = get_ref(P, i, "constraint", E_CONSTRAINT, 1, &e->a)) ||
            (rc = get_ref(P, i, "controller", E_CONTROLLER, 0, &c)) ||
            (rc = get_ref(P, i, "monitor", E_MONITOR, 0, &mo)))
            return rc;
        if ((c >= 0) == (mo >= 0))
            return rs_fail(P->st, RS_EINVAL,
                           "entity '%s': a ConstraintHandler names a controller or a monitor "
                           "(exactly one)",
                           e->id);
        e->b = c >= 0 ? c : mo;
        return 0;
    }
    case E_MOTION:
        if ((rc = get_list(P, i, "when", E_CONSTRAINT, e->list[0], &e->nlist[0])) ||
            (rc = get_list(P, i, "while", E_CONSTRAINT, e->list[1], &e->nlist[1])) ||
            (rc = get_list(P, i, "until", E_CONSTRAINT, e->list[2], &e->nlist[2])))
            return rc;
        return 0;
    case E_DRIVER:
        if ((rc = get_ref(P, i, "wrench", E_QUANTITY, 1, &e->a)) ||
            (rc = get_ref(P, i, "attached-to", E_FRAME, 1, &e->b)) ||
            (rc = want_kind(P, i, "wrench", e->a, K_WRENCH)))
            return rc;
        return 0;
    case E_PRIO:
        return get_list(P, i, "motion-drivers", E_DRIVER, e->list[0], &e->nlist[0]);
    case E_SOLVER: {
        if ((rc = get_list(P, i, "motion-drivers", E_PRIO, e->list[0], &e->nlist[0])))
            return rc;
        const char *alg = get_string(P, i, "solver");
        if (alg && strcmp(resolve(P->ctx, alg), "JacobianTranspose") != 0 &&
            strcmp(resolve(P->ctx, alg), "AccelerationConstrainedHybridDynamicsAlgorithm") != 0)
            return rs_fail(P->st, RS_EINVAL,
                           "entity '%s': solver '%s' is not one this server runs "
                           "(JacobianTranspose, AccelerationConstrainedHybridDynamicsAlgorithm)",
                           e->id, alg);
        const char *comb = get_string(P, i, "combine");
        if (comb && strcmp(comb, "add") != 0 && strcmp(comb, "replace") != 0)
            return rs_fail(P->st, RS_EINVAL, "entity '%s': combine is \"add\" or \"replace\", not "
                           "\"%s\"", e->id, comb);
        e->replace = comb && strcmp(comb, "replace") == 0;
        return 0;
    }
    default: return 0;
    }
}

/* ---- whole-document checks ----------------------------------------------------------------- */

/* The evaluator and controller relations after every entity is parsed. */
static int check_relations(parser_t *P)
{
    rs_motion_spec_t *s = P->s;
    int rc;
    for (int i = 0; i < s->n; i++) {
        ent_t *e = &s->e[i];
        if (e->kind == E_CONSTRAINT && (rc = parse_constraint(P, i)))
            return rc;
    }
    for (int i = 0; i < s->n; i++) {
        ent_t *e = &s->e[i];
        if (e->kind == E_OPERATOR && (rc = parse_operator(P, i)))
            return rc;
        if (e->kind == E_EVALUATOR) {
            if ((rc = want_kind(P, i, "error", e->b, s->e[e->a].ckind)) || (rc = produce(P, i, e->b)))
                return rc;
        }
    }
    for (int i = 0; i < s->n; i++) {
        ent_t *e = &s->e[i];
        if (e->kind == E_CONTROLLER) {
            if (s->e[e->a].qkind >= K_POSE || s->e[e->b].qkind >= K_POSE)
                return rs_fail(P->st, RS_EINVAL,
                               "entity '%s': error-signal and control-signal are scalar quantities",
                               e->id);
            if ((rc = produce(P, i, e->b)))
                return rc;
        }
        if (e->kind == E_QUANTITY && e->src == Q_VIEW) {
            int k = s->e[e->a].qkind;
            if (k < K_POSE)
                return rs_fail(P->st, RS_EINVAL,
                               "entity '%s': view-of '%s', a scalar %s; a View looks into a Pose, "
                               "VelocityTwist, Wrench, Direction or ContactForce",
                               e->id, s->e[e->a].id, kind_names[k]);
        }
    }
    /* handlers: a controller must control an error of its constraint; a monitor watch it */
    for (int i = 0; i < s->n; i++) {
        ent_t *h = &s->e[i];
        if (h->kind != E_HANDLER)
            continue;
        const ent_t *x = &s->e[h->b];
        if (x->kind == E_MONITOR && x->a != h->a)
            return rs_fail(P->st, RS_EINVAL,
                           "entity '%s': monitor '%s' watches constraint '%s', not '%s'", h->id,
                           x->id, s->e[x->a].id, s->e[h->a].id);
        if (x->kind == E_CONTROLLER) {
            const ent_t *err = &s->e[x->a];
            if (err->src != Q_PRODUCED || s->e[err->producer].kind != E_EVALUATOR ||
                s->e[err->producer].a != h->a)
                return rs_fail(P->st, RS_EINVAL,
                               "entity '%s': controller '%s' acts on '%s', which is not the error "
                               "of constraint '%s' (no ErrorEvaluator of it produces it)",
                               h->id, x->id, err->id, s->e[h->a].id);
        }
    }
    /* the tutorial's rule: every constraint is controlled or monitored by a handler */
    for (int i = 0; i < s->n; i++) {
        if (s->e[i].kind != E_CONSTRAINT)
            continue;
        int handled = 0;
        for (int j = 0; j < s->n; j++)
            handled |= s->e[j].kind == E_HANDLER && s->e[j].a == i;
        if (!handled)
            return rs_fail(P->st, RS_EINVAL,
                           "constraint '%s' is neither controlled nor monitored by a "
                           "ConstraintHandler",
                           s->e[i].id);
    }
    /* drivers belong to a level in a solver */
    for (int i = 0; i < s->n; i++) {
        if (s->e[i].kind != E_DRIVER)
            continue;
        int found = 0;
        for (int l = 0; l < s->n; l++) {
            if (s->e[l].kind != E_SOLVER)
                continue;
            for (int k = 0; k < s->e[l].nlist[0]; k++) {
                const ent_t *pl = &s->e[s->e[l].list[0][k]];
                for (int d = 0; d < pl->nlist[0]; d++)
                    found |= pl->list[0][d] == i;
            }
        }
        if (!found)
            return rs_fail(P->st, RS_EINVAL,
                           "motion driver '%s' is in no PrioritizationLevel of a Solver: nothing "
                           "would apply it",
                           s->e[i].id);
        if (s->e[s->e[i].b].entity < 0)
            return rs_fail(P->st, RS_EINVAL,
                           "motion driver '%s' is attached to the world frame; attach it to a "
                           "robot frame",
                           s->e[i].id);
    }
    return 0;
}

/* The inputs of the computation producing quantity q (at most 3; -1 unused). */
static void inputs_of(const rs_motion_spec_t *s, int q, int in[3])
{
    const ent_t *e = &s->e[q];
    in[0] = in[1] = in[2] = -1;
    if (e->src == Q_VIEW) {
        in[0] = e->a;
    } else if (e->src == Q_PRODUCED) {
        const ent_t *p = &s->e[e->producer];
        if (p->kind == E_OPERATOR) {
            in[0] = p->a;
            in[1] = p->op == OP_ANGLE || p->op == OP_FORCE ? p->b : -1;
        } else if (p->kind == E_EVALUATOR) {
            const ent_t *c = &s->e[p->a];
            in[0] = c->a, in[1] = c->b, in[2] = c->ctype == C_BILATERAL ? c->c : -1;
        } else if (p->kind == E_CONTROLLER) {
            in[0] = p->a;
        }
    }
}

/* Depth-first topological order of the quantities; a cycle or an input nobody gives a value is
 * an error naming the entities. */
static int order(parser_t *P, int q, int *mark, int *path, int depth)
{
    rs_motion_spec_t *s = P->s;
    if (mark[q] == 2)
        return 0;
    if (mark[q] == 1) {
        char buf[400] = "";
        int start = 0;
        while (start < depth && path[start] != q)
            start++;
        for (int k = start; k < depth; k++) {
            size_t l = strlen(buf);
            snprintf(buf + l, sizeof buf - l, "'%s' -> ", s->e[path[k]].id);
        }
        size_t l = strlen(buf);
        snprintf(buf + l, sizeof buf - l, "'%s'", s->e[q].id);
        return rs_fail(P->st, RS_EINVAL, "a cycle among the quantities: %s", buf);
    }
    if (s->e[q].src == Q_FREE)
        return rs_fail(P->st, RS_EINVAL,
                       "quantity '%s' is used but has no value: give it a value, bind it (of / "
                       "with-respect-to, view-of) or produce it (operator, evaluator, controller)",
                       s->e[q].id);
    mark[q] = 1;
    path[depth] = q;
    int in[3];
    inputs_of(s, q, in);
    for (int k = 0; k < 3; k++)
        if (in[k] >= 0) {
            int rc = order(P, in[k], mark, path, depth + 1);
            if (rc)
                return rc;
        }
    mark[q] = 2;
    s->comp[s->ncomp++].ent = q;
    return 0;
}

static int build_order(parser_t *P)
{
    rs_motion_spec_t *s = P->s;
    int mark[MAX_ENT] = {0}, path[MAX_ENT];
    s->ncomp = 0;
    /* everything that feeds a constraint, a driver, an evaluator, a controller */
    for (int i = 0; i < s->n; i++) {
        const ent_t *e = &s->e[i];
        int roots[3] = {-1, -1, -1};
        if (e->kind == E_CONSTRAINT)
            roots[0] = e->a, roots[1] = e->b, roots[2] = e->ctype == C_BILATERAL ? e->c : -1;
        else if (e->kind == E_DRIVER)
            roots[0] = e->a;
        else if (e->kind == E_EVALUATOR || e->kind == E_CONTROLLER)
            roots[0] = e->b;
        else if (e->kind == E_QUANTITY && e->src == Q_PRODUCED)
            roots[0] = i;
        for (int k = 0; k < 3; k++)
            if (roots[k] >= 0) {
                int rc = order(P, roots[k], mark, path, 0);
                if (rc)
                    return rc;
            }
    }
    return 0;
}

/* ---- public: parse ------------------------------------------------------------------------- */

rs_motion_spec_t *rs_motion_spec_parse(const rs_model_t *m, const char *json, size_t len,
                                       rs_status_t *st)
{
    json_object *root =
        rs_json_parse(json, len, "motion specification", RS_MOTION_SPEC_MAX_SOURCE,
                      RS_MOTION_SPEC_MAX_NESTING, st);
    if (!root)
        return NULL;
    rs_motion_spec_t *s = calloc(1, sizeof *s);
    parser_t *P = calloc(1, sizeof *P);
    int rc = 0;
    if (s)
        use_buffer(s, 0);
    if (!s || !P) {
        rc = rs_fail(st, RS_EEXHAUSTED, "out of memory");
        goto done;
    }
    P->m = m, P->s = s, P->st = st;
    json_object *graph = root;
    if (json_object_is_type(root, json_type_object)) {
        json_object *c, *g;
        if (json_object_object_get_ex(root, "@context", &c) && json_object_is_type(c, json_type_object))
            P->ctx = c;
        if (json_object_object_get_ex(root, "@graph", &g))
            graph = g;
    }
    if (!json_object_is_type(graph, json_type_array)) {
        rc = rs_fail(st, RS_EINVAL,
                     "a motion specification is a JSON array of entities, or an object with "
                     "\"@graph\" (and \"@context\")");
        goto done;
    }
    size_t n = json_object_array_length(graph);
    if (n > MAX_ENT) {
        rc = rs_fail(st, RS_EEXHAUSTED, "the specification has %zu entities (at most %d)", n, MAX_ENT);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *o = json_object_array_get_idx(graph, i), *id, *types;
        if (!json_object_is_type(o, json_type_object)) {
            rc = rs_fail(st, RS_EINVAL, "entry %zu of the specification is not an object", i);
            goto done;
        }
        if (!json_object_object_get_ex(o, "@id", &id) || !json_object_is_type(id, json_type_string)) {
            rc = rs_fail(st, RS_EINVAL, "entry %zu of the specification has no \"@id\" string", i);
            goto done;
        }
        const char *ids = json_object_get_string(id);
        if (strlen(ids) == 0 || strlen(ids) >= ID_MAX) {
            rc = rs_fail(st, RS_EINVAL, "entry %zu: an @id of %zu characters (1 to %d)", i,
                         strlen(ids), ID_MAX - 1);
            goto done;
        }
        if (find_id(s, ids) >= 0) {
            rc = rs_fail(st, RS_EINVAL, "entity '%s' is defined twice", ids);
            goto done;
        }
        ent_t *e = &s->e[s->n];
        memset(e, 0, sizeof *e);
        snprintf(e->id, sizeof e->id, "%s", ids);
        e->a = e->b = e->c = e->producer = e->asb = e->entity = e->frame = -1;
        json_object_object_get_ex(o, "@type", &types);
        P->obj[s->n] = o;
        P->types[s->n] = json_object_object_get_ex(o, "@type", &types) ? types : NULL;
        s->n++;
    }
    for (int i = 0; i < s->n; i++) {
        int k = classify(P, i);
        if (k < 0) {
            rc = rs_fail(st, RS_EUNIMPL,
                         "entity '%s': acceleration constraint specifications (the Vereshchagin "
                         "solver's constrained part) are not run by this server; give the "
                         "constraint as a force through a MotionDriver",
                         s->e[i].id);
            goto done;
        }
        s->e[i].kind = k;
    }
    /* frames and quantities first (kinds), then everything that refers to them */
    for (int pass = 0; pass < 2 && rc == 0; pass++)
        for (int i = 0; i < s->n && rc == 0; i++) {
            int early = s->e[i].kind == E_FRAME || s->e[i].kind == E_QUANTITY;
            if (early == (pass == 0))
                rc = parse_entity(P, i) ? -1 : 0;
        }
    if (rc == 0)
        rc = check_relations(P);
    if (rc == 0)
        rc = build_order(P);
    if (rc == 0) {
        for (int i = 0; i < s->n; i++) {
            int k = s->e[i].kind;
            if (k == E_EVALUATOR)
                s->ev[s->nev++] = i;
            else if (k == E_CONTROLLER)
                s->ctl[s->nctl++] = i;
            else if (k == E_MONITOR)
                s->mon[s->nmon++] = i;
            else if (k == E_MOTION)
                s->mot[s->nmot++] = i;
            else if (k == E_SOLVER)
                s->sol[s->nsol++] = i;
        }
        s->source = malloc(len + 1);
        if (!s->source) {
            rc = rs_fail(st, RS_EEXHAUSTED, "out of memory");
        } else {
            memcpy(s->source, json, len);
            s->source[len] = 0;
            s->source_len = len;
            rs_motion_spec_reset(s);
        }
    }
done:
    json_object_put(root);
    free(P);
    if (rc != 0) {
        if (st->code == 0)
            rs_fail(st, RS_EINVAL, "the motion specification is invalid");
        rs_motion_spec_destroy(&s);
        return NULL;
    }
    return s;
}

void rs_motion_spec_destroy(rs_motion_spec_t **p)
{
    if (!p || !*p)
        return;
    free((*p)->source);
    free(*p);
    *p = NULL;
}

const char *rs_motion_spec_source(const rs_motion_spec_t *s, size_t *len)
{
    *len = s->source_len;
    return s->source;
}

void rs_motion_spec_reset(rs_motion_spec_t *s)
{
    s->active = s->nmot > 0 ? 0 : -1;
    s->started = 0;
    memset(s->integ, 0, sizeof s->integ);
    memset(s->eprev, 0, sizeof s->eprev);
    memset(s->hasprev, 0, sizeof s->hasprev);
    memset(s->out, 0, sizeof s->out);
    memset(s->sat, 0, sizeof s->sat);
    memset(s->err, 0, sizeof s->err);
    memset(s->val_buf[0], 0, sizeof s->val_buf[0]);
}

/* ---- evaluation ---------------------------------------------------------------------------- */

static void rotate(double ang, const double in[2], double out[2])
{
    double c = cos(ang), sn = sin(ang);
    double x = c * in[0] - sn * in[1], y = sn * in[0] + c * in[1];
    out[0] = x, out[1] = y;
}

/* the world angle of the axes a vector quantity is given in */
static double axes_angle(const rs_motion_spec_t *s, int frame)
{
    return frame >= 0 ? s->fpose[frame][2] : 0.0;
}

/* How far constraint c is inside its monitor's tolerance tol (>= 0: satisfied, |e| <= tol): a
 * continuous function of the quantities (the tube's error is 0 inside; this is the distance to
 * the nearer threshold there), so the integrator can find its zero as a guard. */
static double constraint_margin(const rs_motion_spec_t *s, int c, double tol)
{
    const ent_t *e = &s->e[c];
    double q = s->val[e->a][0];
    if (e->ctype == C_EQUALITY)
        return tol - fabs(s->val[e->b][0] - q);
    return tol + fmin(q - s->val[e->b][0], s->val[e->c][0] - q);
}

static double constraint_error(const rs_motion_spec_t *s, int c)
{
    const ent_t *e = &s->e[c];
    double q = s->val[e->a][0];
    if (e->ctype == C_EQUALITY)
        return s->val[e->b][0] - q;
    double lo = s->val[e->b][0], hi = s->val[e->c][0];
    return q < lo ? q - lo : q > hi ? q - hi : 0.0;
}

/* whether controller ctl runs: with guarded motions, only while a handler ties it to a
 * constraint of the active motion's `while` (and that motion's `when` held) */
static int controller_active(const rs_motion_spec_t *s, int ctl)
{
    if (s->nmot == 0)
        return 1;
    if (s->active < 0 || !s->started)
        return 0;
    const ent_t *mo = &s->e[s->mot[(int)s->active]];
    for (int h = 0; h < s->n; h++) {
        if (s->e[h].kind != E_HANDLER || s->e[h].b != ctl)
            continue;
        for (int k = 0; k < mo->nlist[1]; k++)
            if (mo->list[1][k] == s->e[h].a)
                return 1;
    }
    return 0;
}

static int all_satisfied(const rs_motion_spec_t *s, const int *list, int n, double tol_default)
{
    (void)tol_default;
    for (int k = 0; k < n; k++) {
        int c = list[k], ok = 0;
        for (int j = 0; j < s->nmon; j++) {
            const ent_t *mo = &s->e[s->mon[j]];
            if (mo->a == c && s->sat[s->mon[j]] > 0)
                ok = 1;
        }
        if (!ok)
            return 0;
    }
    return 1;
}

static void push_event(int kind, int index, int *ev_kind, int *ev_index, int max, int *nev)
{
    if (*nev < max) {
        ev_kind[*nev] = kind;
        ev_index[*nev] = index;
    }
    (*nev)++;
}

/* Evaluate the frames and quantities at state x (the world's full state vector) in the selected
 * buffer. With guard != 0 (a trial state of the integrator) the run state is left alone:
 * controllers give their held outputs, evaluators do not record their errors. */
static void evaluate(rs_motion_spec_t *s, const rs_model_t *m, const rs_data_t *d,
                     const double *x, double dt, int guard)
{
    /* frames */
    for (int i = 0; i < s->n; i++) {
        const ent_t *e = &s->e[i];
        if (e->kind != E_FRAME)
            continue;
        memset(s->fpose[i], 0, sizeof s->fpose[i]);
        memset(s->ftwist[i], 0, sizeof s->ftwist[i]);
        memset(s->fforce[i], 0, sizeof s->fforce[i]);
        if (e->entity < 0)
            continue;
        const rs_entity_model_t *em = &m->ent[e->entity];
        em->robot->frame(em, &d->ent[e->entity], x + em->x_off, d->u_eff + em->u_off, e->frame,
                         s->fpose[i], s->ftwist[i], s->fforce[i]);
    }
    /* quantities in dependency order; controllers use the step's errors */
    for (int i = 0; i < s->n; i++)
        if (s->e[i].kind == E_QUANTITY && s->e[i].src == Q_CONST)
            memcpy(s->val[i], s->e[i].value, sizeof s->e[i].value);
    for (int c = 0; c < s->ncomp; c++) {
        int q = s->comp[c].ent;
        ent_t *e = &s->e[q];
        double *v = s->val[q];
        if (e->src == Q_CONST) {
            memcpy(v, e->value, sizeof e->value);
        } else if (e->src == Q_POSE || e->src == Q_TWIST || e->src == Q_FORCE) {
            double rel[2], ang;
            if (e->src == Q_POSE) {
                double ox = s->fpose[e->a][0], oy = s->fpose[e->a][1];
                double wx = s->fpose[e->b][0], wy = s->fpose[e->b][1];
                rel[0] = ox - wx, rel[1] = oy - wy;
                ang = s->fpose[e->a][2] - s->fpose[e->b][2];
            } else if (e->src == Q_TWIST) {
                rel[0] = s->ftwist[e->a][0] - s->ftwist[e->b][0];
                rel[1] = s->ftwist[e->a][1] - s->ftwist[e->b][1];
                ang = s->ftwist[e->a][2] - s->ftwist[e->b][2];
            } else {
                rel[0] = s->fforce[e->a][0], rel[1] = s->fforce[e->a][1];
                ang = 0.0;
            }
            rotate(-axes_angle(s, e->asb), rel, v);
            v[2] = ang;
        } else if (e->src == Q_VIEW) {
            v[0] = s->val[e->a][e->b];
        } else {
            const ent_t *p = &s->e[e->producer];
            if (p->kind == E_OPERATOR) {
                const double *in = s->val[p->a];
                if (p->op == OP_DIST) {
                    v[0] = rs_hypot(in[0], in[1]);
                } else if (p->op == OP_DIR) {
                    double r = rs_hypot(in[0], in[1]);
                    v[0] = r > 0 ? in[0] / r : 1.0, v[1] = r > 0 ? in[1] / r : 0.0, v[2] = 0.0;
                    e->asb = s->e[p->a].asb;
                } else if (p->op == OP_ANGLE) {
                    double a[2], b[2];
                    rotate(axes_angle(s, s->e[p->a].asb), s->val[p->a], a);
                    rotate(axes_angle(s, s->e[p->b].asb), s->val[p->b], b);
                    v[0] = atan2(a[0] * b[1] - a[1] * b[0], a[0] * b[0] + a[1] * b[1]);
                } else if (p->op == OP_TORQUE) {
                    v[0] = v[1] = 0.0, v[2] = in[0];
                } else {
                    const double *dir = s->val[p->b];
                    v[0] = in[0] * dir[0], v[1] = in[0] * dir[1], v[2] = 0.0;
                    e->asb = s->e[p->b].asb;
                }
            } else if (p->kind == E_EVALUATOR) {
                v[0] = constraint_error(s, p->a);
                if (!guard)
                    s->err[e->producer] = v[0];
            } else if (p->kind == E_CONTROLLER) {
                int ci = e->producer;
                double err = s->val[p->a][0];
                if (guard) {
                    v[0] = s->out[ci];
                    continue;
                }
                if (!controller_active(s, ci)) {
                    s->integ[ci] = 0, s->hasprev[ci] = 0, s->out[ci] = 0;
                    v[0] = 0;
                    continue;
                }
                /* the decaying integral, exact for e held over the step:
                 * I(t + dt) = exp(-lambda dt) I(t) + e (1 - exp(-lambda dt)) / lambda */
                double lam = p->decay;
                if (lam > 0)
                    s->integ[ci] = exp(-lam * dt) * s->integ[ci] + err * -expm1(-lam * dt) / lam;
                else
                    s->integ[ci] += err * dt;
                double de = s->hasprev[ci] > 0 && dt > 0 ? (err - s->eprev[ci]) / dt : 0.0;
                s->eprev[ci] = err;
                s->hasprev[ci] = 1;
                s->out[ci] = p->kp * err + p->ki * s->integ[ci] + p->kd * de;
                v[0] = s->out[ci];
            }
        }
    }
}

/* Start the active motion when its `when` holds; move on when its `until` (non-empty) holds,
 * logging the switch. */
static void switch_motions(rs_motion_spec_t *s, int *ev_kind, int *ev_index, int max_events,
                           int *nev)
{
    if (s->active >= 0) {
        const ent_t *mo = &s->e[s->mot[(int)s->active]];
        if (!s->started && all_satisfied(s, mo->list[0], mo->nlist[0], 0))
            s->started = 1;
        if (s->started && mo->nlist[2] > 0 && all_satisfied(s, mo->list[2], mo->nlist[2], 0)) {
            s->active = s->active + 1 < s->nmot ? s->active + 1 : -1;
            s->started = 0;
            push_event(RS_SPEC_EV_MOTION_SWITCH, (int)s->active, ev_kind, ev_index, max_events, nev);
        }
    }
}

int rs_motion_spec_step(rs_motion_spec_t *s, const rs_model_t *m, const rs_data_t *d, double dt,
                        double *u, int *replace, int *ev_kind, int *ev_index, int max_events,
                        int *nev, rs_status_t *st)
{
    *nev = 0;
    *replace = 0;
    memset(u, 0, sizeof(double) * (size_t)m->nu);
    use_buffer(s, 0);
    evaluate(s, m, d, d->x, dt, 0);
    /* monitors (their changes across a control-step boundary: within a step the integrator
     * finds them as guards, rs_motion_spec_guards) */
    for (int j = 0; j < s->nmon; j++) {
        int mi = s->mon[j];
        const ent_t *mo = &s->e[mi];
        int now = fabs(constraint_error(s, mo->a)) <= mo->tol;
        if (now != (s->sat[mi] > 0))
            push_event(now ? RS_SPEC_EV_MONITOR_SATISFIED : RS_SPEC_EV_MONITOR_VIOLATED, j, ev_kind,
                       ev_index, max_events, nev);
        s->sat[mi] = now;
    }
    /* guarded motions: start when `when` holds, move on when `until` (non-empty) holds */
    switch_motions(s, ev_kind, ev_index, max_events, nev);
    /* solvers: every driver's wrench, in world axes, through the robot */
    for (int k = 0; k < s->nsol; k++) {
        const ent_t *sv = &s->e[s->sol[k]];
        *replace |= sv->replace;
        for (int l = 0; l < sv->nlist[0]; l++) {
            const ent_t *pl = &s->e[sv->list[0][l]];
            for (int j = 0; j < pl->nlist[0]; j++) {
                const ent_t *dr = &s->e[pl->list[0][j]];
                const ent_t *fr = &s->e[dr->b];
                const ent_t *wq = &s->e[dr->a];
                double w[3], f[2];
                rotate(axes_angle(s, wq->asb), s->val[dr->a], f);
                w[0] = f[0], w[1] = f[1], w[2] = s->val[dr->a][2];
                const rs_entity_model_t *em = &m->ent[fr->entity];
                if (!em->robot->apply_wrench)
                    return rs_fail(st, RS_EINVAL, "motion driver '%s': robot '%s' takes no wrenches",
                                   dr->id, em->name);
                int rc = em->robot->apply_wrench(em, &d->ent[fr->entity], d->x + em->x_off,
                                                 fr->frame, w, u + em->u_off, st);
                if (rc < 0)
                    return rc;
            }
        }
    }
    return 0;
}

int rs_motion_spec_nguards(const rs_motion_spec_t *s) { return s->nmon; }

void rs_motion_spec_guards(rs_motion_spec_t *s, const rs_model_t *m, const rs_data_t *d,
                           const double *x, double *g)
{
    use_buffer(s, 1);
    evaluate(s, m, d, x, 0.0, 1);
    for (int j = 0; j < s->nmon; j++) {
        const ent_t *mo = &s->e[s->mon[j]];
        double margin = constraint_margin(s, mo->a, mo->tol);
        g[j] = s->sat[s->mon[j]] > 0 ? margin : -margin;
    }
    use_buffer(s, 0);
}

void rs_motion_spec_fired(rs_motion_spec_t *s, const int *fired, int *ev_kind, int *ev_index,
                          int max_events, int *nev)
{
    *nev = 0;
    for (int j = 0; j < s->nmon; j++) {
        if (!fired[j])
            continue;
        int mi = s->mon[j];
        s->sat[mi] = s->sat[mi] > 0 ? 0 : 1;
        push_event(s->sat[mi] > 0 ? RS_SPEC_EV_MONITOR_SATISFIED : RS_SPEC_EV_MONITOR_VIOLATED, j,
                   ev_kind, ev_index, max_events, nev);
    }
    switch_motions(s, ev_kind, ev_index, max_events, nev);
}

/* ---- readouts and run state ---------------------------------------------------------------- */

int rs_motion_spec_nevaluators(const rs_motion_spec_t *s) { return s->nev; }
int rs_motion_spec_ncontrollers(const rs_motion_spec_t *s) { return s->nctl; }

const char *rs_motion_spec_evaluator(const rs_motion_spec_t *s, int i, double *error)
{
    if (i < 0 || i >= s->nev)
        return NULL;
    *error = s->err[s->ev[i]];
    return s->e[s->ev[i]].id;
}

const char *rs_motion_spec_controller(const rs_motion_spec_t *s, int i, double *output)
{
    if (i < 0 || i >= s->nctl)
        return NULL;
    *output = s->out[s->ctl[i]];
    return s->e[s->ctl[i]].id;
}

int rs_motion_spec_quantity(const rs_motion_spec_t *s, const char *id, double v[3], int *dim)
{
    int i = find_id(s, id);
    if (i < 0 || s->e[i].kind != E_QUANTITY)
        return RS_ENOTFOUND;
    memcpy(v, s->val[i], 3 * sizeof(double));
    *dim = s->e[i].qkind >= K_POSE ? 3 : 1;
    return 0;
}

int rs_motion_spec_active_motion(const rs_motion_spec_t *s, const char **id)
{
    int a = (int)s->active;
    *id = a >= 0 ? s->e[s->mot[a]].id : NULL;
    return a;
}

/* layout: active, started, then per entity integ, eprev, hasprev, out, sat, err, then the
 * vector quantities' axes (asb of produced directions and wrenches) */
size_t rs_motion_spec_state_len(const rs_motion_spec_t *s) { return 2 + 6 * (size_t)s->n; }

void rs_motion_spec_state_get(const rs_motion_spec_t *s, double *out)
{
    out[0] = s->active, out[1] = s->started;
    for (int i = 0; i < s->n; i++) {
        double *o = out + 2 + 6 * i;
        o[0] = s->integ[i], o[1] = s->eprev[i], o[2] = s->hasprev[i];
        o[3] = s->out[i], o[4] = s->sat[i], o[5] = s->err[i];
    }
}

int rs_motion_spec_state_set(rs_motion_spec_t *s, const double *in, size_t n, rs_status_t *st)
{
    if (n != rs_motion_spec_state_len(s))
        return rs_fail(st, RS_EINVAL, "motion specification state: %zu values, expected %zu", n,
                       rs_motion_spec_state_len(s));
    if (!(in[0] == -1 || (in[0] >= 0 && in[0] < s->nmot && in[0] == floor(in[0]))) ||
        (s->nmot == 0 && in[0] != -1) || !(in[1] == 0 || in[1] == 1))
        return rs_fail(st, RS_EINVAL, "motion specification state: active motion %g / started %g "
                       "out of range", in[0], in[1]);
    for (size_t k = 2; k < n; k++)
        if (!isfinite(in[k]))
            return rs_fail(st, RS_EINVAL, "motion specification state: value %zu is not finite", k);
    for (int i = 0; i < s->n; i++) {
        const double *o = in + 2 + 6 * i;
        if (!(o[2] == 0 || o[2] == 1) || !(o[4] == 0 || o[4] == 1))
            return rs_fail(st, RS_EINVAL, "motion specification state: flags of '%s' not 0/1",
                           s->e[i].id);
    }
    s->active = in[0], s->started = in[1];
    for (int i = 0; i < s->n; i++) {
        const double *o = in + 2 + 6 * i;
        s->integ[i] = o[0], s->eprev[i] = o[1], s->hasprev[i] = o[2];
        s->out[i] = o[3], s->sat[i] = o[4], s->err[i] = o[5];
    }
    return 0;
}

/* ---- in a world ---------------------------------------------------------------------------- */

const char *const rs_spec_event_names[RS_SPEC_EVENT_KINDS] = {
    "spec_monitor_satisfied", "spec_monitor_violated", "spec_motion_switch"};

int rs_motion_spec_replaces(const rs_motion_spec_t *s)
{
    for (int k = 0; k < s->nsol; k++)
        if (s->e[s->sol[k]].replace)
            return 1;
    return 0;
}

int rs_set_motion_spec(const rs_model_t *m, rs_data_t *d, const char *json, size_t len,
                       rs_status_t *st)
{
    rs_motion_spec_t *s = NULL;
    if (json && len > 0 && !(s = rs_motion_spec_parse(m, json, len, st)))
        return st->code;
    /* a new specification's commands are computed (and settled) at the next control step;
     * removing one returns to the agent's commands, a discontinuity to settle */
    if (d->spec && !s)
        d->dirty = 1;
    rs_motion_spec_destroy(&d->spec);
    d->spec = s;
    return 0;
}

/* Log a step's specification events on entity 0, after its robot's own kinds, at d->t. */
static void log_events(const rs_model_t *m, rs_data_t *d, const int *kinds, const int *index,
                       int nev, int max)
{
    int base = m->ent[0].robot->nevent_kinds;
    for (int i = 0; i < nev; i++) {
        if (i >= max) { /* more than the buffer took: counted as dropped */
            d->events_total++;
            d->events_dropped++;
            continue;
        }
        rs_emit_event(&d->ent[0], base + kinds[i], d->t, index[i], NULL, NULL, 0);
    }
}

int rs_motion_spec_control(const rs_model_t *m, rs_data_t *d, double dt, rs_status_t *st)
{
    int kinds[16], index[16], nev, replace;
    int rc = rs_motion_spec_step(d->spec, m, d, dt, d->u_spec, &replace, kinds, index, 16, &nev,
                                 st);
    (void)replace;
    if (rc < 0)
        return rc;
    log_events(m, d, kinds, index, nev, 16);
    return 0;
}

void rs_motion_spec_roots(const rs_model_t *m, rs_data_t *d, const int *fired)
{
    int kinds[16], index[16], nev;
    rs_motion_spec_fired(d->spec, fired, kinds, index, 16, &nev);
    log_events(m, d, kinds, index, nev, 16);
}
