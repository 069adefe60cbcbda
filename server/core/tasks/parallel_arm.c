/* ParallelArmReach: bring the parallel (2D delta) arm's end effector to a target point and
 * stop there (PID setpoints in -v0; the servos driven by torque in -v1). Declared as task
 * documents in parallel_arm.json (rs_task_doc.h), which the build compiles in. */
#include "rs_task.h"

extern const char rs_task_documents_parallel_arm[];

const rs_task_family_t rs_tasks_parallel_arm = {.documents = rs_task_documents_parallel_arm};
