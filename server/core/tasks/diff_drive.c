/* DiffDriveGoal: drive the differential-drive robot to a goal among disk obstacles (-v0, and
 * the normalized -v1). Declared as task documents in diff_drive.json (rs_task_doc.h),
 * which the build compiles in. */
#include "rs_task.h"

extern const char rs_task_documents_diff_drive[];

const rs_task_family_t rs_tasks_diff_drive = {.documents = rs_task_documents_diff_drive};
