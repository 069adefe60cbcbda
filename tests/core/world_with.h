/* Shared by the core tests: a world of one preset with scalar parameter overrides, and the
 * bit-exact comparison of two worlds' states (a fork against its original). */
#ifndef RS_TEST_WORLD_WITH_H
#define RS_TEST_WORLD_WITH_H

#include "rs_core.h"
#include "rs_test.h"

#include <stdlib.h>
#include <string.h>

/* A scalar parameter override: {name, value}; a list ends with {NULL, 0}. */
typedef struct kv {
    const char *name;
    double value;
} kv_t;

/* Whether `name` is a world parameter (control_dt, rtol, ...: entity ""), by the core's table. */
static inline int is_world_param(const char *name)
{
    for (int i = 0; i < rs_world_param_count(); i++) {
        const char *wp, *unit, *doc;
        double lower, upper;
        if (rs_world_param_info(i, &wp, &unit, &lower, &upper, &doc) == 0 && !strcmp(wp, name))
            return 1;
    }
    return 0;
}

/* World `preset` with the overrides kv (at most 32): world parameters (is_world_param) go to
 * the world, every other name to `entity`. Seed 1. A world that cannot be made fails the test
 * and ends it. */
static inline rs_world_t *world_with(const char *preset, const char *entity, const kv_t *kv)
{
    rs_param_t p[32];
    size_t n = 0;
    for (; kv && kv[n].name && n < 32; n++)
        p[n] = (rs_param_t){is_world_param(kv[n].name) ? "" : entity, kv[n].name, &kv[n].value,
                            1};
    rs_status_t st;
    rs_world_t *w = rs_world_new(preset, p, n, 1, &st);
    CHECK(w != NULL, "rs_world_new(%s): %s", preset, st.message);
    if (!w)
        exit(rs_test_done(preset));
    return w;
}

/* Whether worlds a and b (of one model shape) hold bit-identical states and sensors. */
static inline int same_state(const rs_world_t *a, const rs_world_t *b)
{
    const rs_model_t *m = a->model;
    return m->nx == b->model->nx && m->ns == b->model->ns &&
           !memcmp(a->data->x, b->data->x, (size_t)m->nx * sizeof(double)) &&
           !memcmp(a->data->sensors, b->data->sensors, (size_t)m->ns * sizeof(double));
}

#endif
