/* The registry: robot modules and the presets built from them. Adding a robot is one line in
 * `robots`; adding a preset is one entry in `presets`. */
#include "rs_registry.h"

#include <string.h>

static const rs_robot_t *const robots[] = {
    &rs_robot_diff_drive,
    &rs_robot_serial_arm,
    &rs_robot_parallel_arm,
    &rs_robot_finger,
};

/* Each preset lists its entities; `overrides` change the robot defaults for this preset. */
static const rs_preset_t presets[] = {
    {
        .name = "diff_drive",
        .doc = "the differential-drive disk robot of seed 002 (wheels 18 cm, L = 12 cm; cm, rad, s)",
        .nentities = 1,
        .entities = {{"robot", "diff_drive"}},
    },
    {
        .name = "serial_arm",
        .doc = "the serial two-link arm of seeds 002/003, vertical (g = 9.81 along -y), PID "
               "actuators (a1 = 0.15 m, a2 = 0.10 m; SI)",
        .nentities = 1,
        .entities = {{"arm", "serial_arm"}},
    },
    {
        .name = "parallel_arm",
        .doc = "the dual two-link parallel (2D delta) arm of seed 002 on PID servos (L0 = 0.08, "
               "L1 = 0.05, L2 = 0.10 m; y down; SI)",
        .nentities = 1,
        .entities = {{"delta", "parallel_arm"}},
    },
    {
        .name = "finger",
        .doc = "the 1D finger and object of seed 000 (SI units; defaults as issue 3)",
        .nentities = 1,
        .entities = {{"finger", "finger"}},
    },
    {
        .name = "workshop",
        .doc = "the default world: the finger and object, the serial arm, the parallel arm and "
               "the differential-drive robot side by side, each with its robot's defaults",
        .nentities = 4,
        .entities = {{"finger", "finger"}, {"arm", "serial_arm"}, {"delta", "parallel_arm"},
                     {"robot", "diff_drive"}},
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
