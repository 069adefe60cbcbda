/* The scheduler's per-world state (world_slot_t.sched): what the scheduler (scheduler.c) and
 * the step engine (handlers_step.c) keep to run a world's requests in slices and expire idle worlds
 * (--world-ttl). The boundary a control step rolls back to is the stepping thread's
 * (rs_rollback_t), not the world's. */
#ifndef RS_SCHED_H
#define RS_SCHED_H

#include "rs_core.h"

typedef struct rs_sched_slot {
    double last_active;               /* rs_monotonic() time of its controller's last request
                                         (or its creation): --world-ttl */
    int held;                         /* a Step parked between its slices holds the world:
                                         requests naming it wait behind it */
    int slow_steps;                   /* a control step of it outlasted the loop's fuse, and
                                         the stepper found it slow since: its Steps go to the
                                         stepper */
} rs_sched_slot_t;

#endif
