/* MobileAlign: the mobile manipulator aligning to a table edge, the dual-arm alignment of the
 * motion-specification tutorial as an episode. Declared as a task document in
 * mobile_align.json (rs_task_doc.h), which the build compiles in. */
#include "rs_task.h"

extern const char rs_task_documents_mobile_align[];

const rs_task_family_t rs_tasks_mobile_align = {.documents = rs_task_documents_mobile_align};
