/* The finger tasks: FingerPush (push the object to rest at a target) and FingerTouch (press
 * on it with a target force without moving it), each in a -v0 and a normalized -v1 row
 * (extending its -v0: the same episodes, the action in [-1, 1] mapped onto v0's bounds, the
 * observation scaled and bounded, a tenth of the reward). Declared as task documents in
 * finger.json (rs_task_doc.h), which the build compiles in. */
#include "rs_task.h"

extern const char rs_task_documents_finger[];

const rs_task_family_t rs_tasks_finger = {.documents = rs_task_documents_finger};
