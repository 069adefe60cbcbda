/* The registry: robot modules and the presets built from them. Adding a robot is one line in
 * `robots`; adding a preset is one entry in `presets`. */
#include "rs_registry.h"
#include "rs_task.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

static const rs_robot_t *const robots[] = {
    &rs_robot_diff_drive,
    &rs_robot_serial_arm,
    &rs_robot_parallel_arm,
    &rs_robot_finger,
    &rs_robot_brick,
    &rs_robot_mobile_manipulator,
};

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

int rs_robot_check(const rs_robot_t *r, rs_status_t *st)
{
    const char *kind = r && r->kind ? r->kind : "?";
    if (!r || !r->kind || !r->init || !r->derivs || !r->nguards || r->nx < 0 || r->nu < 0 ||
        r->ns < 0 || r->np < 0 || r->np > RS_MAX_PARAMS || r->nmodes < 1 || !r->mode_names ||
        r->nevent_kinds < 0 || (r->nx && !r->state) || (r->nu && !r->actuators) ||
        (r->ns && !r->sensors) || (r->np && !r->params))
        return rs_fail(st, RS_EINTERNAL,
                       "robot '%s' cannot be registered: its tables or callbacks are incomplete",
                       kind);
    if (r->nu > RS_MAX_ACTUATORS)
        return rs_fail(st, RS_EINTERNAL,
                       "robot '%s' cannot be registered: %d actuators, at most %d "
                       "(RS_MAX_ACTUATORS)", kind, r->nu, RS_MAX_ACTUATORS);
    if (!r->aux_vars || r->naux < 0 || r->naux > RS_AUX_MAX)
        return rs_fail(st, RS_EINTERNAL,
                       "robot '%s' cannot be registered: it does not declare its private run "
                       "variables (rs_robot_t.aux_vars, naux <= %d), which snapshots are "
                       "validated against",
                       kind, RS_AUX_MAX);
    int nw = 0;
    for (int i = 0; i < r->nwrench && r->wrench; i++)
        nw += r->wrench[i].n > 0 && r->wrench[i].body ? r->wrench[i].n : RS_WRENCH_MAX + 1;
    if (r->nwrench < 0 || (r->nwrench && !r->wrench) || nw > RS_WRENCH_MAX)
        return rs_fail(st, RS_EINTERNAL,
                       "robot '%s' cannot be registered: its wrench bodies are incomplete or "
                       "hold more than %d values",
                       kind, RS_WRENCH_MAX);
    for (int i = 0; i < r->naux; i++) {
        const rs_aux_desc_t *a = &r->aux_vars[i];
        int ok = a->name != NULL;
        if (a->kind == RS_AUX_REAL || a->kind == RS_AUX_INTEGER)
            ok &= !(a->lower > a->upper) && !isnan(a->lower) && !isnan(a->upper);
        else if (a->kind == RS_AUX_INDEX)
            ok &= a->param >= 0 && a->param < r->np && a->per >= 1;
        else
            ok &= a->kind == RS_AUX_SIGN;
        if (!ok)
            return rs_fail(st, RS_EINTERNAL,
                           "robot '%s' cannot be registered: private variable %d ('%s') is "
                           "declared inconsistently",
                           kind, i, a->name ? a->name : "?");
    }
    return 0;
}

int rs_robot_check_data(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                        rs_status_t *st)
{
    const rs_robot_t *r = em->robot;
    if (ed->mode < 0 || ed->mode >= r->nmodes)
        return rs_fail(st, RS_EINVAL, "entity '%s' (%s) in mode %d; its modes are 0 to %d",
                       em->name, r->kind, ed->mode, r->nmodes - 1);
    for (int i = 0; i < RS_AUX_MAX; i++) {
        double v = ed->aux[i];
        if (i >= r->naux) {
            if (v != 0.0)
                return rs_fail(st, RS_EINVAL,
                               "entity '%s' (%s): private slot %d is %g; the robot does not use "
                               "it, so it must be 0",
                               em->name, r->kind, i, v);
            continue;
        }
        const rs_aux_desc_t *a = &r->aux_vars[i];
        int ok = isfinite(v);
        double hi = a->upper;
        switch (a->kind) {
        case RS_AUX_REAL: ok = ok && v >= a->lower && v <= a->upper; break;
        case RS_AUX_INTEGER: ok = ok && v == floor(v) && v >= a->lower && v <= a->upper; break;
        case RS_AUX_SIGN: ok = v == 1.0 || v == -1.0; break;
        case RS_AUX_INDEX:
            hi = (double)(em->plen[a->param] / a->per) - 1.0;
            ok = ok && v == floor(v) && v >= -1.0 && v <= hi &&
                 !(v == -1.0 && ed->mode < 32 && (a->needed_in >> ed->mode & 1u));
            break;
        }
        if (!ok)
            return rs_fail(st, RS_EINVAL,
                           "entity '%s' (%s) in mode '%s': private variable '%s' is %g; it must "
                           "be %s",
                           em->name, r->kind, r->mode_names[ed->mode], a->name, v,
                           a->kind == RS_AUX_SIGN    ? "-1 or +1"
                           : a->kind == RS_AUX_INDEX ? "an element index (or -1 where none is needed)"
                           : a->kind == RS_AUX_INTEGER ? "an integer within its bounds"
                                                       : "finite and within its bounds");
    }
    return 0;
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

/* ---- tasks: one family per file in tasks/ ----------------------------------------------- */

static const rs_task_family_t *const task_families[] = {
    &rs_tasks_finger,
    &rs_tasks_arms,
    &rs_tasks_diff_drive,
    &rs_tasks_mobile_align,
};

#define NFAMILIES (int)(sizeof task_families / sizeof task_families[0])
#define MAX_TASKS 64

const rs_task_t *rs_task_find(const char *name)
{
    for (int f = 0; name && f < NFAMILIES; f++)
        for (int i = 0; i < task_families[f]->n; i++)
            if (strcmp(task_families[f]->tasks[i].name, name) == 0)
                return &task_families[f]->tasks[i];
    return NULL;
}

static const char *task_names[MAX_TASKS + 1];
static pthread_once_t task_names_once = PTHREAD_ONCE_INIT;

static void fill_task_names(void)
{
    int n = 0;
    for (int f = 0; f < NFAMILIES; f++)
        for (int i = 0; i < task_families[f]->n && n < MAX_TASKS; i++)
            task_names[n++] = task_families[f]->tasks[i].name;
    task_names[n] = NULL;
}

const char *const *rs_task_names(void)
{
    pthread_once(&task_names_once, fill_task_names);
    return task_names;
}
