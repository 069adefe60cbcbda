/* The tasks ported from C rows to documents against the C rows they replace, kept (renamed
 * "C" + name) until the port is proven: the same spec (GetSpec's TaskSpec and the info names),
 * and bit for bit the same episodes (observation, reward, flags, info, state and episode
 * state) over seeds and random actions, through several episodes per world (resets). */
#include "rs_task.h"
#include "rs_test.h"
#include "seeded_rng.h"
#include "robots/arm_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int same_str(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

static int same_desc(const rs_var_desc_t *a, const rs_var_desc_t *b)
{
    return same_str(a->name, b->name) && same_str(a->unit, b->unit) && same_str(a->doc, b->doc) &&
           memcmp(&a->lower, &b->lower, sizeof a->lower) == 0 &&
           memcmp(&a->upper, &b->upper, sizeof a->upper) == 0;
}

static void compare_spec(const char *name)
{
    char cname[80];
    snprintf(cname, sizeof cname, "C%s", name);
    const rs_task_t *t = rs_task_find(name), *c = rs_task_find(cname);
    CHECK(t && c, "%s: both rows exist", name);
    if (!t || !c)
        return;
    CHECK(same_str(t->preset, c->preset) && same_str(t->entity, c->entity), "%s: preset", name);
    CHECK(same_str(t->doc, c->doc), "%s: doc\n%s\n%s", name, t->doc, c->doc);
    CHECK(same_str(t->reward, c->reward), "%s: reward\n%s\n%s", name, t->reward, c->reward);
    CHECK(t->max_episode_steps == c->max_episode_steps, "%s: max steps", name);
    CHECK(t->nobs == c->nobs && t->nact == c->nact && t->ninfo == c->ninfo, "%s: shape", name);
    for (int i = 0; i < t->nobs && i < c->nobs; i++)
        CHECK(same_desc(&t->obs[i], &c->obs[i]), "%s: obs[%d] %s/%s %s/%s %g/%g %g/%g", name, i,
              t->obs[i].name, c->obs[i].name, t->obs[i].unit, c->obs[i].unit, t->obs[i].lower,
              c->obs[i].lower, t->obs[i].upper, c->obs[i].upper);
    for (int i = 0; i < t->nact && i < c->nact; i++) {
        CHECK(same_desc(&t->act[i], &c->act[i]), "%s: act[%d] %s/%s %s/%s", name, i,
              t->act[i].name, c->act[i].name, t->act[i].unit, c->act[i].unit);
        CHECK(!t->cmd == !c->cmd && (!t->cmd || (t->cmd[i].lower == c->cmd[i].lower &&
                                                 t->cmd[i].upper == c->cmd[i].upper)),
              "%s: cmd[%d] bounds", name, i);
    }
    for (int i = 0; i < t->ninfo && i < c->ninfo; i++)
        CHECK(same_str(t->info[i], c->info[i]), "%s: info[%d] %s/%s", name, i, t->info[i],
              c->info[i]);
    CHECK(t->nparams == c->nparams && t->reward_scale == c->reward_scale, "%s: params, scale",
          name);
    for (int i = 0; i < t->nparams && i < c->nparams; i++)
        CHECK(same_str(t->params[i].entity, c->params[i].entity) &&
                  same_str(t->params[i].name, c->params[i].name) &&
                  t->params[i].n == c->params[i].n &&
                  memcmp(t->params[i].values, c->params[i].values,
                         (size_t)t->params[i].n * sizeof(double)) == 0,
              "%s: params[%d]", name, i);
}

/* A policy that reaches the target (so that success is reached too), or 0 to act at random. */
typedef int (*policy_t)(const rs_world_t *w, double *act);

/* The serial arm's setpoints from inverse kinematics of the target (in pi rad with -v1's cmd). */
static int serial_policy(const rs_world_t *w, double *act)
{
    double q[2], a1 = rs_model_param(w->model, 0, "a1", 0), a2 = rs_model_param(w->model, 0, "a2", 0);
    if (serial_ik(a1, a2, w->data->task[RS_TASK_PRIVATE], w->data->task[RS_TASK_PRIVATE + 1], 1,
                  q) != 0)
        return 0;
    double s = w->task->cmd ? M_PI : 1.0;
    act[0] = q[0] / s, act[1] = q[1] / s;
    return 1;
}

/* The parallel arm to the inverse kinematics of the target: those setpoints in -v0, a PD
 * torque toward them in -v1 (torque fractions of 0.5 N*m). */
static int parallel_policy(const rs_world_t *w, double *act)
{
    const rs_model_t *m = w->model;
    double q[2], L0 = rs_model_param(m, 0, "L0", 0), L1 = rs_model_param(m, 0, "L1", 0),
           L2 = rs_model_param(m, 0, "L2", 0);
    if (parallel_ik(L0, L1, L2, w->data->task[RS_TASK_PRIVATE],
                    w->data->task[RS_TASK_PRIVATE + 1], q) != 0)
        return 0;
    if (!w->task->cmd) {
        act[0] = q[0], act[1] = q[1];
        return 1;
    }
    rs_status_t st;
    rs_task_view_t v;
    if (rs_world_task_view(w, &v, &st) < 0)
        return 0;
    for (int j = 0; j < 2; j++)
        act[j] = fmin(fmax((2.0 * (q[j] - v.obs[j]) - 0.2 * 10 * v.obs[2 + j]) / 0.5, -1), 1);
    return 1;
}

/* The diff drive toward the goal: turn to face it, then drive (obstacles are hit on the way,
 * so collisions occur too); in fractions of 10 rad/s with -v1's cmd. */
static int dd_policy(const rs_world_t *w, double *act)
{
    rs_status_t st;
    rs_task_view_t v;
    if (rs_world_task_view(w, &v, &st) < 0)
        return 0;
    const double *o = v.obs;
    double err = atan2(o[5], o[4]) - atan2(o[3], o[2]);
    err = atan2(sin(err), cos(err));
    double fwd = fabs(err) < 0.5 ? fmin(fmax(20 * hypot(o[4], o[5]), 1), 8) : 0;
    double turn = fmin(fmax(4 * err, -3), 3), s = w->task->cmd ? 10.0 : 1.0;
    act[0] = fmin(fmax(fwd + turn, -10), 10) / s;
    act[1] = fmin(fmax(fwd - turn, -10), 10) / s;
    return 1;
}

static int same_view(const rs_task_view_t *a, const rs_task_view_t *b)
{
    return a->nobs == b->nobs && memcmp(a->obs, b->obs, (size_t)a->nobs * sizeof(double)) == 0 &&
           memcmp(&a->reward, &b->reward, sizeof a->reward) == 0 &&
           a->terminated == b->terminated && a->truncated == b->truncated &&
           memcmp(&a->episode_return, &b->episode_return, sizeof(double)) == 0 &&
           a->ninfo == b->ninfo && memcmp(a->info, b->info, (size_t)a->ninfo * sizeof(double)) == 0;
}

static void compare_episodes(const char *name, int seeds, int steps, policy_t policy,
                             const rs_param_t *p, size_t np)
{
    char cname[80];
    snprintf(cname, sizeof cname, "C%s", name);
    rs_status_t st;
    int differ = 0, episodes = 0, successes = 0;
    for (int s = 0; s < seeds && !differ; s++) {
        rs_world_t *a = rs_world_new_task(name, NULL, p, np, (uint64_t)s + 1, &st);
        CHECK(a != NULL, "%s: %s", name, a ? "" : st.message);
        rs_world_t *b = rs_world_new_task(cname, NULL, p, np, (uint64_t)s + 1, &st);
        CHECK(b != NULL, "%s: %s", cname, b ? "" : st.message);
        if (!a || !b) {
            rs_world_destroy(&a);
            rs_world_destroy(&b);
            return;
        }
        const rs_task_t *t = a->task;
        rng_state = 1000 + (uint64_t)s;
        for (int k = 0; k < steps && !differ; k++) {
            double act[RS_TASK_MAX_ACT];
            for (int i = 0; i < t->nact; i++) /* mostly inside the bounds, some outside */
                act[i] = t->act[i].lower + (t->act[i].upper - t->act[i].lower) *
                                               urand(-0.1, 1.1);
            if (policy && s % 2 == 1 && urand(0, 1) < 0.9) /* odd seeds: mostly the policy */
                policy(a, act);
            int ra = rs_world_task_step(a, act, (size_t)t->nact, 1, &st);
            int rb = rs_world_task_step(b, act, (size_t)t->nact, 1, &st);
            rs_task_view_t va, vb;
            rs_world_task_view(a, &va, &st);
            rs_world_task_view(b, &vb, &st);
            const rs_data_t *da = a->data, *db = b->data;
            differ = ra != rb || !same_view(&va, &vb) ||
                     memcmp(da->x, db->x, (size_t)a->model->nx * sizeof(double)) != 0 ||
                     memcmp(da->task, db->task, sizeof da->task) != 0 ||
                     memcmp(&da->t, &db->t, sizeof da->t) != 0;
            CHECK(!differ, "%s: seed %d step %d differs (rc %d %d, reward %.17g %.17g)", name, s,
                  k, ra, rb, va.reward, vb.reward);
            if (va.terminated || va.truncated || k % 150 == 149) { /* and resets mid-episode */
                episodes++;
                successes += va.terminated;
                CHECK_OK(rs_world_reset(a, 100 + (uint64_t)(k + s), &st), st);
                CHECK_OK(rs_world_reset(b, 100 + (uint64_t)(k + s), &st), st);
            }
        }
        rs_world_destroy(&a);
        rs_world_destroy(&b);
    }
    printf("%s (%zu params): %d seeds x %d steps, %d episodes ended (%d successes), bit-identical: %s\n", name,
           np, seeds, steps, episodes, successes, differ ? "no" : "yes");
}

/* Both refuse to start where the task cannot (the same code). */
static void compare_refusal(const char *name, const rs_param_t *p, size_t np)
{
    char cname[80];
    snprintf(cname, sizeof cname, "C%s", name);
    rs_status_t sa, sb;
    rs_world_t *a = rs_world_new_task(name, NULL, p, np, 1, &sa);
    rs_world_t *b = rs_world_new_task(cname, NULL, p, np, 1, &sb);
    CHECK(!a && !b && sa.code == sb.code, "%s: both refused alike: %s | %s", name,
          a ? "" : sa.message, b ? "" : sb.message);
    printf("%s refused: %s\n", name, sa.message);
    rs_world_destroy(&a);
    rs_world_destroy(&b);
}

int main(void)
{
    static const struct { const char *name; policy_t policy; } ported[] = {
        {"SerialArmReach-v0", serial_policy},
        {"SerialArmReach-v1", serial_policy},
        {"ParallelArmReach-v0", parallel_policy},
        {"ParallelArmReach-v1", parallel_policy},
        {"DiffDriveGoal-v0", dd_policy},
        {"DiffDriveGoal-v1", dd_policy},
    };
    for (size_t i = 0; i < sizeof ported / sizeof ported[0]; i++) {
        compare_spec(ported[i].name);
        compare_episodes(ported[i].name, 12, 500, ported[i].policy, NULL, 0);
    }
    /* the diff drive's obstacles overridden: none, one, and one that leaves a corner free
     * (near the start pose, which it clears) but no goal 1 m from any start */
    static const double one[] = {0, 0, 0.4}, wall[] = {0.3, -0.3, 2.6};
    rs_param_t none_p = {"robot", "obstacles", NULL, 0}, one_p = {"robot", "obstacles", one, 3},
               wall_p = {"robot", "obstacles", wall, 3};
    compare_episodes("DiffDriveGoal-v0", 6, 400, dd_policy, &none_p, 1);
    compare_episodes("DiffDriveGoal-v1", 6, 400, dd_policy, &one_p, 1);
    compare_refusal("DiffDriveGoal-v0", &wall_p, 1);
    /* the reach tasks refuse torque mode */
    static const double torque[] = {0, 0};
    rs_param_t tq = {"arm", "actuator_mode", torque, 2}, tqd = {"delta", "actuator_mode", torque, 2};
    compare_refusal("SerialArmReach-v0", &tq, 1);
    compare_refusal("ParallelArmReach-v0", &tqd, 1);
    static const double pid[] = {1, 1};
    rs_param_t pidp = {"delta", "actuator_mode", pid, 2};
    compare_refusal("ParallelArmReach-v1", &pidp, 1);
    /* the parallel arm's links too short to assemble anywhere in the servo range */
    static const double L2[] = {0.01};
    rs_param_t shortp = {"delta", "L2", L2, 1};
    compare_refusal("ParallelArmReach-v0", &shortp, 1);
    return rs_test_done("test_task_port");
}
