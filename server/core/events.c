/* The event log of a control step: robots and motion specifications record their discrete
 * events here (rs_emit_event), into a log grown on demand up to RS_EVENT_LOG entries. */
#include "rs_data.h"
#include "rs_robot.h"

#include <math.h>
#include <stdlib.h>

void rs_emit_event(rs_entity_data_t *ed, int kind, double t, double value, const double *before,
                   const double *after, int n)
{
    rs_data_t *d = ed->data;
    d->events_total++;
    d->step_events++;
    if (d->nevents >= RS_EVENT_LOG || rs_data_reserve_events(d, d->nevents + 1) < 0) {
        d->events_dropped++; /* the step's count stays exact (step_events, events_total) */
        return;
    }
    rs_event_t *ev = &d->events[d->nevents++];
    if (n > RS_EVENT_VALUES)
        n = RS_EVENT_VALUES;
    ev->entity = ed->index;
    ev->kind = kind;
    ev->t = t;
    ev->value = value;
    ev->nvalues = n;
    for (int i = 0; i < n; i++) {
        ev->before[i] = before ? before[i] : NAN;
        ev->after[i] = after ? after[i] : NAN;
    }
}

int rs_data_reserve_events(rs_data_t *d, int n)
{
    if (n <= d->events_cap)
        return 0;
    if (n > RS_EVENT_LOG)
        return RS_EEXHAUSTED;
    int cap = d->events_cap ? d->events_cap : 4;
    while (cap < n)
        cap *= 2;
    if (cap > RS_EVENT_LOG)
        cap = RS_EVENT_LOG;
    rs_event_t *grown = realloc(d->events, (size_t)cap * sizeof *grown);
    if (!grown)
        return RS_EEXHAUSTED;
    d->events = grown;
    d->events_cap = cap;
    return 0;
}
