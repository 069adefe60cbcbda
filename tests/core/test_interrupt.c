/* Interrupting a step (rs_step_until, rs_world_task_step_until, rs_data_set_abort):
 *   - a Step in slices of any length is bit-identical to one rs_step call (state digest
 *     included);
 *   - a task Step in slices (resume = 1) gives the same state, reward and return as one call;
 *   - the abort flag stops a control step that takes seconds within milliseconds, with
 *     RS_EDEADLINE; restored from the snapshot taken before, the world steps on exactly as a
 *     world never interrupted;
 *   - the flag set before a call stops it at the first boundary, with no step made. */
#include "rs_core.h"
#include "rs_snapshot.h"
#include "rs_task.h"
#include "rs_test.h"
#include "timing.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static rs_world_t *workshop(const rs_param_t *p, size_t n)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new("workshop", p, n, 3, &st);
    CHECK(w != NULL, "%s", st.message);
    if (!w)
        exit(1);
    double f = 2.0;
    rs_set_commands(w->model, w->data, rs_model_entity(w->model, "finger"), &f, 1, NULL);
    return w;
}

static int same_data(const rs_world_t *a, const rs_world_t *b)
{
    return a->data->t == b->data->t && a->data->step_count == b->data->step_count &&
           memcmp(a->data->x, b->data->x, (size_t)a->model->nx * sizeof(double)) == 0 &&
           a->data->nevents == b->data->nevents &&
           memcmp(a->data->digest, b->data->digest, sizeof a->data->digest) == 0;
}

static void test_slices_exact(void)
{
    rs_status_t st;
    rs_world_t *one = workshop(NULL, 0), *sliced = workshop(NULL, 0);
    const uint64_t n = 3000;
    CHECK_OK(rs_step(one->model, one->data, n, &st), st);
    /* yield_at already past: every call makes exactly one control step */
    uint64_t total = 0, calls = 0;
    sliced->data->nevents = 0;
    while (total < n) {
        uint64_t done = 0;
        int rc = rs_step_until(sliced->model, sliced->data, n - total, 0.0, &done, &st);
        CHECK_OK(rc, st);
        if (rc < 0 || done == 0)
            break;
        total += done;
        calls++;
    }
    CHECK(calls == n, "one control step per call when the time is up: %llu calls",
          (unsigned long long)calls);
    CHECK(same_data(one, sliced), "sliced stepping is bit-identical to one call");
    CHECK(one->data->nevents > 0, "events happened (%d)", one->data->nevents);
    int ev = one->data->nevents == sliced->data->nevents;
    for (int i = 0; ev && i < one->data->nevents; i++)
        ev = one->data->events[i].t == sliced->data->events[i].t;
    CHECK(ev, "the same events at the same times");
    /* no deadline: all at once */
    uint64_t done = 0;
    CHECK_OK(rs_step_until(one->model, one->data, 100, INFINITY, &done, &st), st);
    CHECK(done == 100, "INFINITY: all steps (%llu)", (unsigned long long)done);
    rs_world_destroy(&one);
    rs_world_destroy(&sliced);
}

static void test_task_slices_exact(void)
{
    rs_status_t st;
    rs_world_t *a = rs_world_new_task("FingerPush-v0", NULL, NULL, 0, 11, &st);
    rs_world_t *b = rs_world_new_task("FingerPush-v0", NULL, NULL, 0, 11, &st);
    CHECK(a && b, "%s", st.message);
    if (!a || !b)
        exit(1);
    double act[RS_TASK_MAX_ACT];
    for (int i = 0; i < a->task->nact; i++)
        act[i] = 0.5 * (a->task->act[i].lower + a->task->act[i].upper) + 0.1;
    const uint64_t n = 150;
    CHECK_OK(rs_world_task_step(a, act, (size_t)a->task->nact, n, &st), st);
    uint64_t total = 0;
    int resume = 0, ok = 1;
    while (total < n && ok) {
        uint64_t done = 0;
        int rc = rs_world_task_step_until(b, act, (size_t)b->task->nact, n - total, 0.0, resume,
                                          &done, &st);
        ok = rc == 0 && done == 1;
        total += done;
        resume = 1;
        if (b->data->task[RS_TASK_TERMINATED] != 0.0 || b->data->task[RS_TASK_TRUNCATED] != 0.0)
            break;
    }
    CHECK(ok, "one control step per slice: %s", st.message);
    CHECK(same_data(a, b), "task Step in slices: the same state (%llu vs %llu steps)",
          (unsigned long long)a->data->step_count, (unsigned long long)b->data->step_count);
    CHECK(memcmp(a->data->task, b->data->task, sizeof a->data->task) == 0 &&
              a->data->episode_steps == b->data->episode_steps,
          "the same reward %.17g vs %.17g, return %.17g vs %.17g", a->data->task[RS_TASK_REWARD],
          b->data->task[RS_TASK_REWARD], a->data->task[RS_TASK_RETURN],
          b->data->task[RS_TASK_RETURN]);
    rs_world_destroy(&a);
    rs_world_destroy(&b);
}

typedef struct raiser {
    atomic_int *flag;
    double after;
} raiser_t;

static void *raise_later(void *arg)
{
    raiser_t *r = arg;
    struct timespec ts = {0, (long)(r->after * 1e9)};
    nanosleep(&ts, NULL);
    atomic_store(r->flag, 1);
    return NULL;
}

/* A control step of 10 s at rtol 1e-14 with the 4th-order method and the arm's targets
 * switching between -20 and 20 rad every 0.1 s: seconds of work in one control step (the
 * arm's own 8th-order default does it in tens of milliseconds). */
static rs_world_t *slow_world(void)
{
    double dt = 10, rtol = 1e-14, maxint = 1e7, order = 4;
    rs_param_t p[] = {{"", "control_dt", &dt, 1}, {"", "rtol", &rtol, 1},
                      {"", "max_internal_steps", &maxint, 1}, {"", "erk_order", &order, 1}};
    rs_world_t *w = workshop(p, 4);
    enum { K = 400 };
    double t[K], v[K];
    for (int i = 0; i < K; i++) {
        t[i] = 0.1 * i;
        v[i] = i % 2 ? 20.0 : -20.0;
    }
    int arm = rs_model_entity(w->model, "arm");
    rs_status_t st;
    for (int a = 0; a < 2; a++)
        CHECK_OK(rs_set_schedule(w->model, w->data, arm, a, t, v, K, &st), st);
    return w;
}

static void test_abort(void)
{
    rs_status_t st;
    rs_world_t *w = slow_world(), *twin = slow_world();
    atomic_int flag;
    atomic_init(&flag, 0);
    rs_data_set_abort(w->data, &flag);
    size_t cap = 0, len = 0;
    rs_snapshot_size(w, &cap);
    uint8_t *saved = malloc(cap);
    CHECK_OK(rs_snapshot_write(w, saved, cap, &len, &st), st);

    raiser_t r = {&flag, 0.05};
    pthread_t th;
    double slow = slowdown(0.02);
    pthread_create(&th, NULL, raise_later, &r);
    double t0 = rs_clock();
    uint64_t done = 99;
    int rc = rs_step_until(w->model, w->data, 2, INFINITY, &done, &st);
    double took = rs_clock() - t0;
    pthread_join(th, NULL);
    slow = slowdown_since(slow);
    printf("abort flag set 50 ms into a slow control step: stopped after %.3f s (slowdown %.2f): "
           "%s\n", took, slow, st.message);
    CHECK(rc == RS_EDEADLINE, "RS_EDEADLINE (rc %d: %s)", rc, st.message);
    CHECK(done == 0, "no control step completed (%llu)", (unsigned long long)done);
    CHECK(took < wall_bound(0.5, slow), "stopped within one evaluation of the flag (%.3f s, "
          "0.5 s x slowdown %.2f allowed)", took, slow);

    /* the flag set before the call: stops at the first boundary, nothing made */
    rc = rs_step_until(w->model, w->data, 2, INFINITY, &done, &st);
    CHECK(rc == 0 && done == 0, "flag already set: 0 steps at the boundary (rc %d, %llu)", rc,
          (unsigned long long)done);
    rc = rs_step(w->model, w->data, 1, &st);
    CHECK(rc == RS_EDEADLINE, "rs_step with the flag set: RS_EDEADLINE (rc %d)", rc);

    /* rolled back and released: steps on exactly as the twin never interrupted */
    CHECK_OK(rs_snapshot_read(w, saved, len, &st), st);
    atomic_store(&flag, 0);
    double cheap = 0.01, rtol = 1e-6;
    rs_param_t fast[] = {{"", "control_dt", &cheap, 1}, {"", "rtol", &rtol, 1}};
    CHECK_OK(rs_world_set_params(w, fast, 2, &st), st);
    CHECK_OK(rs_world_set_params(twin, fast, 2, &st), st);
    CHECK_OK(rs_step(w->model, w->data, 50, &st), st);
    CHECK_OK(rs_step(twin->model, twin->data, 50, &st), st);
    CHECK(same_data(w, twin), "after the rollback the world steps on as its twin");
    rs_data_set_abort(w->data, NULL);
    free(saved);
    rs_world_destroy(&w);
    rs_world_destroy(&twin);
}

int main(void)
{
    test_slices_exact();
    test_task_slices_exact();
    test_abort();
    return rs_test_done("test_interrupt");
}
