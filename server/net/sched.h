/* The scheduler's per-world state (world_slot_t.sched): what the loop (server.c) and the step
 * engine (handlers_step.c) keep to run a world's requests in slices, interrupt and roll back a
 * control step, and expire idle worlds (--world-ttl). */
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
    rs_data_t *boundary;              /* a copy of the world's data at the start of the slice
                                         being run, to roll back an interrupted control step
                                         (made on the first save) */
    const rs_model_t *boundary_model; /* the model `boundary` was made for, retained while it
                                         lives: SetParams or SetState may replace the world's
                                         model in between */
} rs_sched_slot_t;

#endif
