/* SerialArmReach: bring the vertical two-link arm's end effector to a target point and stop
 * there (PID setpoints; -v1 normalized). Declared as task documents in serial_arm.json
 * (rs_task_doc.h), which the build compiles in. */
#include "rs_task.h"

extern const char rs_task_documents_serial_arm[];

const rs_task_family_t rs_tasks_serial_arm = {.documents = rs_task_documents_serial_arm};
