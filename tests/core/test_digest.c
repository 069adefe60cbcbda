/* The state digest (digest.c): partition-independent (Step 10 == 10 x Step 1 == a Step
 * interrupted partway and rolled back, then finished), carried by forks and snapshots, restarted
 * by a reset, and sensitive to a single bit of the state. */
#include "rs_core.h"
#include "rs_snapshot.h"
#include "rs_task.h"
#include "rs_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int same(const rs_data_t *a, const rs_data_t *b)
{
    return memcmp(a->digest, b->digest, sizeof a->digest) == 0;
}

static void partitions(const char *preset)
{
    rs_status_t st;
    rs_world_t *a = rs_world_new(preset, NULL, 0, 5, &st), *b = rs_world_new(preset, NULL, 0, 5, &st);
    CHECK(a && b, "%s: %s", preset, st.message);
    if (!a || !b)
        return;
    CHECK(same(a->data, b->data), "%s: equal digests after creation", preset);
    double u[RS_MAX_ACTUATORS * RS_MAX_ENTITIES] = {0};
    for (int i = 0; i < a->model->nu; i++)
        u[i] = 0.3;
    rs_set_all_commands(a->model, a->data, u, &st);
    rs_set_all_commands(b->model, b->data, u, &st);
    uint64_t before[4];
    memcpy(before, a->data->digest, sizeof before);
    CHECK_OK(rs_step(a->model, a->data, 10, &st), st);
    CHECK(memcmp(before, a->data->digest, sizeof before) != 0, "%s: a step moves the digest", preset);
    for (int k = 0; k < 10; k++)
        CHECK_OK(rs_step(b->model, b->data, 1, &st), st);
    CHECK(same(a->data, b->data), "%s: Step 10 and 10 x Step 1 give one digest", preset);

    /* a fork and a snapshot restore carry the chain on */
    rs_world_t *f = rs_world_fork(a, NULL, 0, &st);
    CHECK(f && same(a->data, f->data), "%s: a fork carries the digest", preset);
    size_t n = 0;
    rs_snapshot_size(a, &n);
    uint8_t *buf = malloc(n);
    CHECK_OK(rs_snapshot_write(a, buf, n, &n, &st), st);
    rs_world_t *r = rs_world_new(preset, NULL, 0, 9, &st);
    CHECK_OK(rs_snapshot_read(r, buf, n, &st), st);
    CHECK(same(a->data, r->data), "%s: a snapshot carries the digest", preset);
    CHECK_OK(rs_step(a->model, a->data, 7, &st), st);
    CHECK_OK(rs_step(f->model, f->data, 3, &st), st);
    CHECK_OK(rs_step(f->model, f->data, 4, &st), st);
    CHECK_OK(rs_step(r->model, r->data, 7, &st), st);
    CHECK(same(a->data, f->data) && same(a->data, r->data),
          "%s: the fork and the restored world go on with the same chain", preset);

    /* a single bit of the state changes the link it is folded into */
    uint64_t bits;
    memcpy(&bits, &r->data->x[0], 8);
    bits ^= 1;
    memcpy(&r->data->x[0], &bits, 8);
    rs_digest_step(a->model, a->data);
    rs_digest_step(r->model, r->data);
    CHECK(!same(a->data, r->data), "%s: one bit of x[0] changes the digest", preset);

    /* a reset restarts the chain: equal to a new world's with that seed */
    rs_world_t *c = rs_world_new(preset, NULL, 0, 11, &st);
    CHECK_OK(rs_world_reset(a, 11, &st), st);
    CHECK(same(a->data, c->data), "%s: a reset restarts the chain", preset);
    free(buf);
    rs_world_destroy(&a);
    rs_world_destroy(&b);
    rs_world_destroy(&c);
    rs_world_destroy(&f);
    rs_world_destroy(&r);
}

/* A task world: one Step of 20 control steps and 20 Steps of one give one digest (the reward
 * and return, which differ, are left out). */
static void task_partitions(void)
{
    rs_status_t st;
    rs_world_t *a = rs_world_new_task("FingerTouch-v0", NULL, NULL, 0, 3, &st);
    rs_world_t *b = rs_world_new_task("FingerTouch-v0", NULL, NULL, 0, 3, &st);
    CHECK(a && b, "%s", st.message);
    if (!a || !b)
        return;
    double act[RS_TASK_MAX_ACT] = {0};
    size_t n = (size_t)a->task->nact;
    for (size_t i = 0; i < n; i++)
        act[i] = 0.5 * (a->task->act[i].lower + a->task->act[i].upper);
    CHECK_OK(rs_world_task_step(a, act, n, 20, &st), st);
    for (int k = 0; k < 20; k++)
        CHECK_OK(rs_world_task_step(b, k ? NULL : act, k ? 0 : n, 1, &st), st);
    CHECK(same(a->data, b->data), "a task's Step 20 and 20 x Step 1 give one digest");
    rs_world_destroy(&a);
    rs_world_destroy(&b);
}

int main(void)
{
    for (const char *const *p = rs_preset_names(); *p; p++)
        partitions(*p);
    task_partitions();
    return rs_test_done("test_digest");
}
