/* A declared task's parsed form (decl_t: rs_task_doc.h's document with its expressions
 * compiled), shared by the files that build it (task_doc.c, task_quantity.c) and the one that
 * evaluates it (task_eval.c). Private to the core. */
#ifndef RS_TASK_DECL_H
#define RS_TASK_DECL_H

#include "rs_core.h"
#include "rs_montecarlo.h"
#include "rs_robot.h"
#include "rs_task_doc.h"
#include "task_expr.h"

#include <json-c/json.h>

#define MAX_PARAMS 8
#define MAX_RESET 16
#define MAX_REQUIRE 8
#define MAX_TARGETS (RS_TASK_STATE - RS_TASK_PRIVATE)
#define MAX_GROUP 8 /* the values an argmin quantity names per group */
#define GROUP_VARS (2 + RS_TASK_DOC_MAX_QUANTITIES) /* where the group's values go */
#define NVARS (GROUP_VARS + MAX_GROUP) /* t, steps, the quantities, an argmin's group */

enum { Q_STATE, Q_SENSOR, Q_COMMAND, Q_EVENTS, Q_TARGET, Q_EXPR, Q_AT_RESET, Q_UPDATE, Q_PARAM,
       Q_ARGMIN };

typedef struct quantity {
    char *name;
    int kind;
    int entity, index; /* STATE, SENSOR, COMMAND: index into x, sensors, u; EVENTS: the entity
                          and the event kind; TARGET, AT_RESET, UPDATE: the slot after
                          RS_TASK_PRIVATE that holds its value through the episode */
    int dist;          /* TARGET: RS_MC_UNIFORM or RS_MC_NORMAL with a, b */
    double a, b;
    te_expr *expr;     /* EXPR, AT_RESET (evaluated at reset, may draw), UPDATE (each control
                          step, reading its own last value) */
    double init;       /* UPDATE: the value at reset */
    int elem;          /* PARAM: the parameter's row in index, the value's position here;
                          ARGMIN: the list's row in index, the group's size here */
    int held;          /* AT_RESET, ARGMIN: 0 when computed at the start only */
    te_expr *value;    /* ARGMIN: the value at the minimizing group (expr minimized) */
    te_expr *until;    /* AT_RESET, ARGMIN: redraw quantities redraw ... this one until it
                          holds */
    int redraw, tries; /* the first quantity redrawn, the most draws */
    char *error;       /* the reset's error past them (NULL: a generic one) */
} quantity_t;

typedef struct decl {
    rs_task_t task; /* first: rs_task_bind_t.task points here */
    char *source;
    int builtin;    /* one of the server's own tasks (a family's document) */
    char *name, *preset, *entity, *doc, *reward_doc;
    int nq;
    quantity_t q[RS_TASK_DOC_MAX_QUANTITIES];
    te_expr *obs_expr[RS_TASK_MAX_OBS];
    char *obs_src[RS_TASK_MAX_OBS]; /* their sources, for the errors that name them */
    double obs_scale[RS_TASK_MAX_OBS];
    char *strings[3 * (RS_TASK_MAX_OBS + RS_TASK_MAX_ACT)]; /* names, units, docs given */
    int nstrings;
    rs_var_desc_t obs[RS_TASK_MAX_OBS], act[RS_TASK_MAX_ACT], cmd[RS_TASK_MAX_ACT];
    te_expr *reward, *success, *termination;
    char *reward_src, *success_src, *termination_src;
    int nrequire;
    te_expr *require[MAX_REQUIRE]; /* conditions on the parameters, checked on each model */
    char *require_error[MAX_REQUIRE];
    const char *info_names[RS_TASK_MAX_INFO];
    int info_q[RS_TASK_MAX_INFO]; /* quantity index, -1 for the success flag */
    int nparams;
    rs_task_param_t params[MAX_PARAMS];
    char *param_entity[MAX_PARAMS], *param_name[MAX_PARAMS];
    double *param_values[MAX_PARAMS];
    rs_task_name_t names[RS_TASK_MAX_NAMES]; /* the entity's items it reads (rs_task_bind) */
    int nreset;
    rs_mc_sampler_t reset[MAX_RESET];
    int reset_fixed[MAX_RESET]; /* a "value" rather than a distribution */
    int reset_q[MAX_RESET];     /* or a quantity's value (its index + 1; 0: none) */
    int npre; /* quantities 0 ... npre - 1 are computed before the start state (reset items
                 take their values) */
    double reset_value[MAX_RESET];
    te_expr *reset_expr[MAX_RESET]; /* or an expression of constants and draws */
    int clip_observation;          /* clip each observation value to its bounds */
    int ntargets;
    /* the entities' layout in the preset's model, checked at each reset (a model with another
     * layout would make the indices above point elsewhere) */
    int nentities;
    struct { const rs_robot_t *robot; int x_off, u_off, s_off; } layout[RS_MAX_ENTITIES];
    double base[NVARS]; /* the addresses the expressions were compiled against */
} decl_t;

_Static_assert(NVARS + 1 <= RS_EXPR_MAX_VARIABLES, "a compilation names the variables and itself");

/* ---- task_eval.c ------------------------------------------------------------------------- */

/* Give declared task k its reset, observe and evaluate callbacks. */
void rs_task_decl_bind(decl_t *k);

/* t as a declared task, or NULL for a task that is not one (a C row). */
const decl_t *rs_task_decl_of(const rs_task_t *t);

/* ---- task_quantity.c: the quantities, and the names a document's expressions may use ---- */

typedef struct parser {
    decl_t *k;
    const rs_model_t *m;
    int e; /* the task's entity */
    rs_status_t *st;
    int ngroup; /* the names an argmin quantity's expressions give its group's values */
    const char *group[MAX_GROUP];
} parser_t;

enum { C_DRAW = 1, C_START = 2, C_PARAMS = 4 };

/* Compile `src` with the functions, t, steps and the quantities defined so far as its names
 * (and the one being defined, with self): under C_PARAMS the parameter quantities only, else
 * the held ones and with C_START also those computed at the start only; draws (uniform,
 * normal) only with C_DRAW. 0 or the error, naming `where`. */
int rs_task_compile(parser_t *P, const char *src, const char *where, te_expr **out,
                    const char *self, int flags);

/* Quantity `qname` defined by v (the document's "quantities" entry) appended to P->k. */
int rs_task_parse_quantity(parser_t *P, const char *qname, json_object *v);

/* ---- task_doc.c ------------------------------------------------------------------------ */

/* The source of the task document called `name` that a document's "extends" names, or NULL
 * (ctx is the caller's). */
typedef const char *rs_task_doc_lookup_fn(const char *name, void *ctx);

/* rs_task_doc_parse with "extends" resolved by lookup (NULL: no document may extend another). */
rs_task_t *rs_task_doc_parse_with(const char *json, size_t len, rs_task_doc_lookup_fn *lookup,
                                  void *ctx, rs_status_t *st);

#endif
