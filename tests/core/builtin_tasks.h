/* The tasks this tree ships (server/core/tasks/NAME.json), for the tests that check they are all
 * listed: a list that may grow (a new family is one file), so the tests check containment, not
 * a count. */
#ifndef TEST_BUILTIN_TASKS_H
#define TEST_BUILTIN_TASKS_H

#include <string.h>

static const char *const builtin_tasks[] = {
    "FingerPush-v0",       "FingerPush-v1",       "FingerTouch-v0",   "FingerTouch-v1",
    "SerialArmReach-v0",   "SerialArmReach-v1",   "ParallelArmReach-v0", "ParallelArmReach-v1",
    "DiffDriveGoal-v0",    "DiffDriveGoal-v1",    "MobileAlign-v0",   "MobileAlign-v1",
};
#define NBUILTIN_TASKS (int)(sizeof builtin_tasks / sizeof builtin_tasks[0])

/* How many times `name` appears in names[0 ... n - 1]. */
static inline int builtin_tasks_count(const char *const *names, int n, const char *name)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        c += strcmp(names[i], name) == 0;
    return c;
}

#endif
