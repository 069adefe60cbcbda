/* The parts of model.c that building a model from a preset (model_build.c) uses. Internal to
 * the core. */
#ifndef RS_MODEL_H
#define RS_MODEL_H

#include "rs_core.h"

/* Set every world-level parameter of m to its default. */
void rs_model_world_defaults(rs_model_t *m);

/* Apply one parameter override to m after checking it against its robot's (or the world's)
 * table. 0, or RS_ENOTFOUND / RS_EINVAL / RS_ERANGE with the reason in st. */
int rs_model_apply_param(rs_model_t *m, const rs_param_t *p, rs_status_t *st);

/* Lay out the entities' slices, run each robot's cross-parameter checks and derive its
 * constants (compile). 0 or the robot's error. */
int rs_model_finish(rs_model_t *m, rs_status_t *st);

#endif
