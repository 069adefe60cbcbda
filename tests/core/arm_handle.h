/* The planar arms' tests drive one two-actuator entity of a preset: the world, the entity's
 * index, and its state and sensors in the data, with the few steps every test takes (commands,
 * control steps, the mode, an event of the last step). */
#ifndef RS_TEST_ARM_HANDLE_H
#define RS_TEST_ARM_HANDLE_H

#include "rs_core.h"
#include "rs_test.h"

#include <string.h>

typedef struct arm_handle {
    rs_world_t *w;
    int e;
    const double *x; /* theta1, theta2, theta1_dot, theta2_dot, integral1, integral2 */
    const double *s; /* the robot's sensors, in its table's order */
} arm_handle_t;

/* Entity `entity` of a new world of `preset` with parameters p (seed 1); the test fails, and
 * w is NULL, when the world cannot be made. */
static inline arm_handle_t arm_handle(const char *preset, const char *entity,
                                      const rs_param_t *p, size_t n)
{
    rs_status_t st;
    arm_handle_t a = {0};
    a.w = rs_world_new(preset, p, n, 1, &st);
    CHECK(a.w != NULL, "%s world: %s", preset, st.message);
    if (!a.w)
        return a;
    a.e = rs_model_entity(a.w->model, entity);
    CHECK(a.e >= 0, "entity '%s' in preset %s", entity, preset);
    a.x = a.w->data->x + a.w->model->ent[a.e].x_off;
    a.s = a.w->data->sensors + a.w->model->ent[a.e].s_off;
    return a;
}

static inline void command(arm_handle_t *a, double u1, double u2)
{
    rs_status_t st;
    double u[2] = {u1, u2};
    int rc = rs_set_commands(a->w->model, a->w->data, a->e, u, 2, &st);
    CHECK_OK(rc, st);
}

static inline void step(arm_handle_t *a, uint64_t n)
{
    rs_status_t st;
    int rc = rs_step(a->w->model, a->w->data, n, &st);
    CHECK_OK(rc, st);
}

static inline const char *mode(const arm_handle_t *a)
{
    return rs_mode_name(a->w->model, a->w->data, a->e);
}

/* The first event called `name` of the last rs_step, or NULL. */
static inline const rs_event_t *find_event(const arm_handle_t *a, const char *name)
{
    for (int i = 0; i < a->w->data->nevents; i++)
        if (strcmp(rs_event_kind_name(a->w->model, &a->w->data->events[i]), name) == 0)
            return &a->w->data->events[i];
    return NULL;
}

#endif
