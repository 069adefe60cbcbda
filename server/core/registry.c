/* The registry: robot modules, the presets built from them and the built-in task families.
 * Adding a robot is one line in RS_ROBOTS (rs_robot.h); adding a preset is one entry in
 * `presets`; a task family is one file tasks/NAME.json (the build lists them). */
#include "rs_registry.h"
#include "rs_task.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#define ROBOT_ROW(name) &rs_robot_##name,
static const rs_robot_t *const robots[] = {RS_ROBOTS(ROBOT_ROW)};
#undef ROBOT_ROW

/* Each preset lists its entities; `overrides` change the robot defaults for this preset. */
static const rs_preset_t presets[] = {
    {
        .name = "diff_drive",
        .doc = "the differential-drive disk robot (wheels 18 cm across, r = 0.09 m, L = 0.12 m; "
               "SI: m, rad, s)",
        .nentities = 1,
        .entities = {{"robot", "diff_drive", {0.0, 0.0, 0.0}}}, /* at the world origin */
    },
    {
        .name = "serial_arm",
        .doc = "the serial two-link arm, vertical (g = 9.81 along -y), PID "
               "actuators (a1 = 0.15 m, a2 = 0.10 m; SI)",
        .nentities = 1,
        .entities = {{"arm", "serial_arm", {0.0, 0.0, 0.0}}},
    },
    {
        .name = "parallel_arm",
        .doc = "the dual two-link parallel (2D delta) arm on PID servos (L0 = 0.08, "
               "L1 = 0.05, L2 = 0.10 m; y down; SI)",
        .nentities = 1,
        .entities = {{"delta", "parallel_arm", {0.0, 0.0, 0.0}}},
    },
    {
        .name = "finger",
        .doc = "the 1D finger pushing an object that rests on a surface with Coulomb friction (SI)",
        .nentities = 1,
        .entities = {{"finger", "finger", {0.0, 0.0, 0.0}}},
    },
    {
        .name = "brick_drop",
        .doc = "the falling brick: a planar rigid brick (0.2 x 0.1 m, 1 kg) dropped "
               "flat from 0.5 m onto the ground (SI; contact_model picks the formulation)",
        .nentities = 1,
        .entities = {{"brick", "brick", {0.0, 0.0, 0.0}}},
    },
    {
        .name = "mobile_manipulator",
        .doc = "a differential-drive base with two torque-controlled planar two-link arms "
               "(a1 = 0.45, a2 = 0.40 m) near a table edge (y = 0.9 m), the base at 0.2 rad to it (SI)",
        .nentities = 1,
        .entities = {{"mm", "mobile_manipulator", {0.0, 0.0, 0.0}}},
        .overrides = {{"mm", "theta0", M_PI / 2 + 0.2}, {"mm", "x0", 0.0},
                      {"mm", "y0", 0.0}},
    },
    {
        .name = "mobile_manipulator_passive",
        .doc = "the mobile manipulator with a passive base (rolling wheels "
               "with rolling resistance), 0.1 m nearer the table edge than mobile_manipulator, "
               "at 0.2 rad to it, the arms folded (pushes can only move a passive base away)",
        .nentities = 1,
        .entities = {{"mm", "mobile_manipulator", {0.0, 0.0, 0.0}}},
        .overrides = {{"mm", "theta0", M_PI / 2 + 0.2}, {"mm", "y0", 0.1},
                      {"mm", "base_mode", 1.0}, {"mm", "left_theta1_0", 0.9},
                      {"mm", "left_theta2_0", -1.8}, {"mm", "right_theta1_0", -0.9},
                      {"mm", "right_theta2_0", 1.8}},
    },
    {
        .name = "workshop",
        .doc = "the default world: the finger and object, the serial arm, the parallel arm and "
               "the differential-drive robot side by side in one world frame (base poses: "
               "finger (-1, 0), arm (0, 0), delta (0.5, 0), robot (0, -1) m, all heading 0), "
               "each with its robot's defaults",
        .nentities = 4,
        /* one world frame (x, y in m, theta in rad), the robots 0.5-1 m apart so their
         * workspaces do not overlap: the serial arm reaches 0.25 m, the delta's workspace lies
         * within 0.2 m of its base, the finger's track is 1D along x from its base, the
         * diff-drive starts at its base (x0 = y0 = 0) */
        .entities = {{"finger", "finger", {-1.0, 0.0, 0.0}},
                     {"arm", "serial_arm", {0.0, 0.0, 0.0}},
                     {"delta", "parallel_arm", {0.5, 0.0, 0.0}},
                     {"robot", "diff_drive", {0.0, -1.0, 0.0}}},
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

/* The name lists are filled once (servers with several request threads ask at once). */
static const char *preset_names[sizeof presets / sizeof presets[0] + 1];
static pthread_once_t preset_names_once = PTHREAD_ONCE_INIT;

static void fill_preset_names(void)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        preset_names[i] = presets[i].name;
    preset_names[sizeof presets / sizeof presets[0]] = NULL;
}

const char *const *rs_preset_names(void)
{
    pthread_once(&preset_names_once, fill_preset_names);
    return preset_names;
}

/* ---- tasks: one family per file tasks/NAME.json, the table generated by the build ------- */

extern const rs_task_family_t rs_builtin_task_families[]; /* cmake/embed_documents.cmake */
extern const int rs_builtin_task_nfamilies;

const rs_task_family_t *rs_task_families(int *n)
{
    *n = rs_builtin_task_nfamilies;
    return rs_builtin_task_families;
}
