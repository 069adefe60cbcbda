/* Presets: named worlds made of entities of registered robot kinds. */
#ifndef RS_REGISTRY_H
#define RS_REGISTRY_H

#include "rs_robot.h"

#define RS_PRESET_OVERRIDES 16

typedef struct rs_preset_entity {
    const char *name; /* entity name in the world */
    const char *kind; /* robot kind */
    double base[3];   /* its base frame in the world frame: x (m), y (m), theta (rad) */
} rs_preset_entity_t;

typedef struct rs_preset_override {
    const char *entity, *name;
    double value;
} rs_preset_override_t;

typedef struct rs_preset {
    const char *name;
    const char *doc;
    int nentities;
    rs_preset_entity_t entities[RS_MAX_ENTITIES];
    rs_preset_override_t overrides[RS_PRESET_OVERRIDES]; /* ends at the first NULL entity */
} rs_preset_t;

/* The preset called `name`, or NULL. */
const rs_preset_t *rs_preset_find(const char *name);

/* The built-in task families (tasks/NAME.json, in the order of their names), *n of them; task
 * lookup by name is rs_task_find. */
struct rs_task_family;
const struct rs_task_family *rs_task_families(int *n);

#endif
