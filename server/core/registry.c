/* The registry: robot modules and the presets built from them. Adding a robot is one line in
 * `robots`; adding a preset is one entry in `presets`. */
#include "rs_registry.h"

#include <string.h>

static const rs_robot_t *const robots[] = {
    &rs_robot_diff_drive,
};

/* Each preset lists its entities; `overrides` change the robot defaults for this preset. */
static const rs_preset_t presets[] = {
    {
        .name = "diff_drive",
        .doc = "the differential-drive disk robot of seed 002 (wheels 18 cm, L = 12 cm; cm, rad, s)",
        .nentities = 1,
        .entities = {{"robot", "diff_drive"}},
    },
};

const rs_robot_t *rs_robot_find(const char *kind)
{
    for (size_t i = 0; i < sizeof robots / sizeof robots[0]; i++)
        if (strcmp(robots[i]->kind, kind) == 0)
            return robots[i];
    return NULL;
}

const rs_preset_t *rs_preset_find(const char *name)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

const char *const *rs_preset_names(void)
{
    static const char *names[sizeof presets / sizeof presets[0] + 1];
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        names[i] = presets[i].name;
    names[sizeof presets / sizeof presets[0]] = NULL;
    return names;
}
