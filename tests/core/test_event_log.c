/* The event log: allocated on demand, not inline in the data. A world
 * without events carries no log; a Step request keeps its first RS_EVENT_LOG events in order
 * and counts the rest in events_dropped (events_total and step_events count them all); the
 * next Step starts an empty log; copies and snapshots carry the log. */
#include "rs_core.h"
#include "rs_robot.h"
#include "rs_snapshot.h"
#include "rs_test.h"

#include <stdlib.h>

int main(void)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new("finger", NULL, 0, 3, &st);
    CHECK(w != NULL, "%s", st.message);
    if (!w)
        return rs_test_done("test_event_log");
    rs_data_t *d = w->data;
    CHECK(d->events == NULL && d->events_cap == 0 && d->nevents == 0,
          "a fresh world has no event log allocated (capacity %d)", d->events_cap);

    /* more events than the log holds, as a robot emits them within one Step request */
    int extra = 37;
    uint64_t total0 = d->events_total;
    double before[2] = {1.0, 2.0}, after[2] = {3.0, 4.0};
    for (int i = 0; i < RS_EVENT_LOG + extra; i++)
        rs_emit_event(&d->ent[0], 1, 0.001 * i, (double)i, before, after, 2);
    CHECK(d->nevents == RS_EVENT_LOG, "the log keeps %d events, has %d", RS_EVENT_LOG,
          d->nevents);
    CHECK(d->events_dropped == (unsigned)extra, "%d dropped, counted %u", extra,
          d->events_dropped);
    CHECK(d->events_total - total0 == (uint64_t)(RS_EVENT_LOG + extra),
          "events_total counts every event (%llu)",
          (unsigned long long)(d->events_total - total0));
    int in_order = 1;
    for (int i = 0; i < d->nevents; i++)
        in_order &= d->events[i].value == (double)i && d->events[i].after[1] == 4.0;
    CHECK(in_order, "the first %d events are kept, in order, with their values", RS_EVENT_LOG);
    CHECK(d->events_cap <= RS_EVENT_LOG, "the log never grows past %d entries (%d)", RS_EVENT_LOG,
          d->events_cap);

    /* a fork copies the log exactly */
    rs_world_t *f = rs_world_fork(w, NULL, 0, &st);
    CHECK(f != NULL, "fork: %s", st.message);
    if (f) {
        int same = f->data->nevents == d->nevents && f->data->events_dropped == d->events_dropped;
        for (int i = 0; same && i < d->nevents; i++)
            same = f->data->events[i].t == d->events[i].t &&
                   f->data->events[i].value == d->events[i].value;
        CHECK(same, "a fork carries the event log and the dropped count");
        rs_world_destroy(&f);
    }

    /* the next Step request starts with an empty log and no dropped events */
    double force = 0.0;
    CHECK(rs_set_commands(w->model, d, 0, &force, 1, &st) == 0, "%s", st.message);
    CHECK(rs_step(w->model, d, 1, &st) == 0, "%s", st.message);
    CHECK(d->nevents == 0 && d->events_dropped == 0, "a new Step clears the log (%d, %u)",
          d->nevents, d->events_dropped);
    rs_world_destroy(&w);
    CHECK(w == NULL, "destroy clears the pointer");
    return rs_test_done("test_event_log");
}
