/* Tasks (rs_task.h) in-process: deterministic resets, action checks, each reward against its
 * documented formula on hand-computed cases, termination on success with a scripted controller,
 * truncation at max_episode_steps. */
#include "robots/arm_common.h"
#include "core/builtin_tasks.h"
#include "rs_snapshot.h"
#include "rs_task.h"
#include "rs_test.h"

#include <string.h>

static double clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static double wrap(double a) { return atan2(sin(a), cos(a)); }

static rs_world_t *make(const char *task, const rs_param_t *p, size_t n, uint64_t seed)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new_task(task, "", p, n, seed, &st);
    CHECK(w != NULL, "create %s: %s", task, st.message);
    return w;
}

static rs_task_view_t view(const rs_world_t *w)
{
    rs_task_view_t v;
    rs_status_t st;
    int rc = rs_world_task_view(w, &v, &st);
    CHECK_OK(rc, st);
    return v;
}

static int step(rs_world_t *w, const double *a, size_t n, uint64_t steps)
{
    rs_status_t st;
    int rc = rs_world_task_step(w, a, n, steps, &st);
    CHECK_OK(rc, st);
    return rc;
}

static double info(const rs_task_view_t *v, const char *name)
{
    for (int i = 0; i < v->ninfo; i++)
        if (strcmp(v->info_names[i], name) == 0)
            return v->info[i];
    CHECK(0, "no info '%s'", name);
    return NAN;
}

/* ---- table, creation, determinism ----------------------------------------------------------- */

static void table_and_creation(void)
{
    const char *const *names = rs_task_names();
    int n = 0;
    while (names[n])
        n++;
    for (int i = 0; i < NBUILTIN_TASKS; i++)
        CHECK(builtin_tasks_count(names, n, builtin_tasks[i]) == 1,
              "%s listed once among the %d tasks", builtin_tasks[i], n);
    for (int i = 0; i < n; i++)
        CHECK(builtin_tasks_count(names, n, names[i]) == 1, "%s listed once", names[i]);
    for (int i = 0; i < n; i++) {
        const rs_task_t *t = rs_task_find(names[i]);
        CHECK(t && t->nobs <= RS_TASK_MAX_OBS && t->nact <= RS_TASK_MAX_ACT &&
                  t->ninfo <= RS_TASK_MAX_INFO && t->max_episode_steps > 0,
              "%s row sizes", names[i]);
        CHECK(t && strstr(t->reward, "r = ") && strstr(t->reward, "success"),
              "%s documents its reward", names[i]);
    }
    rs_status_t st;
    rs_world_t *w = rs_world_new_task("NoSuchTask-v0", "", NULL, 0, 1, &st);
    CHECK(!w && st.code == RS_ENOTFOUND && strstr(st.message, "FingerPush-v0"),
          "unknown task lists the tasks: %s", st.message);
    w = rs_world_new_task("FingerPush-v0", "diff_drive", NULL, 0, 1, &st);
    CHECK(!w && st.code == RS_EINVAL && strstr(st.message, "'finger'"),
          "a different preset is refused: %s", st.message);
    w = rs_world_new_task("FingerPush-v0", "finger", NULL, 0, 1, &st);
    CHECK(w && w->task == rs_task_find("FingerPush-v0") && w->model->control_dt == 0.05,
          "the task's own preset named: %s", st.message);
    rs_world_destroy(&w);
    /* the client's overrides come after the task's defaults */
    double dt[] = {0.02};
    rs_param_t p = {"", "control_dt", dt, 1};
    w = make("FingerPush-v0", &p, 1, 1);
    CHECK(w && w->model->control_dt == 0.02, "override wins over the task default");
    rs_world_destroy(&w);
    /* the reach tasks need PID mode */
    double torque[] = {0, 0};
    rs_param_t tq = {"arm", "actuator_mode", torque, 2};
    w = rs_world_new_task("SerialArmReach-v0", NULL, &tq, 1, 1, &st);
    CHECK(!w && st.code == RS_EINVAL && strstr(st.message, "PID"), "torque mode refused: %s",
          st.message);
    /* ... and so is switching to it later */
    w = make("SerialArmReach-v0", NULL, 0, 1);
    CHECK(w && rs_world_set_params(w, &tq, 1, &st) == RS_EINVAL &&
              rs_model_param(w->model, 0, "actuator_mode", 0) == 1.0,
          "SetParams to torque mode refused: %s", st.message);
    rs_world_destroy(&w);
    /* a world without a task refuses actions */
    w = rs_world_new("finger", NULL, 0, 1, &st);
    double a = 1;
    CHECK(w && rs_world_task_step(w, &a, 1, 1, &st) == RS_EPRECOND, "no task: %s", st.message);
    rs_world_destroy(&w);
}

static void determinism(void)
{
    const char *const *names = rs_task_names();
    for (int i = 0; names[i]; i++) {
        rs_world_t *a = make(names[i], NULL, 0, 7), *b = make(names[i], NULL, 0, 7);
        rs_world_t *c = make(names[i], NULL, 0, 8);
        if (!a || !b || !c)
            continue;
        rs_task_view_t va = view(a), vb = view(b), vc = view(c);
        CHECK(memcmp(va.obs, vb.obs, sizeof va.obs) == 0, "%s: same seed, same start", names[i]);
        CHECK(memcmp(va.obs, vc.obs, sizeof va.obs) != 0, "%s: seeds 7 and 8 differ", names[i]);
        CHECK(va.reward == 0 && !va.terminated && !va.truncated && a->data->episode_steps == 0,
              "%s: fresh episode", names[i]);
        /* the same actions give the same observations, bit for bit; Reset(seed) starts again */
        const rs_task_t *t = a->task;
        double act[RS_TASK_MAX_ACT];
        for (int k = 0; k < t->nact; k++)
            act[k] = 0.5 * (t->act[k].lower + t->act[k].upper) + 0.3 * (t->act[k].upper -
                                                                         t->act[k].lower) / 2;
        step(a, act, (size_t)t->nact, 5);
        step(b, act, (size_t)t->nact, 5);
        va = view(a), vb = view(b);
        CHECK(memcmp(va.obs, vb.obs, sizeof va.obs) == 0 && va.reward == vb.reward,
              "%s: same actions, same observations", names[i]);
        rs_status_t st;
        int rc = rs_world_reset(a, 8, &st);
        CHECK_OK(rc, st);
        va = view(a);
        CHECK(memcmp(va.obs, vc.obs, sizeof va.obs) == 0 && va.reward == 0 &&
                  a->data->episode_steps == 0 && va.episode_return == 0,
              "%s: Reset(8) equals a world created with seed 8", names[i]);
        /* the observation lies in its bounds */
        for (int k = 0; k < t->nobs; k++)
            CHECK(va.obs[k] >= t->obs[k].lower && va.obs[k] <= t->obs[k].upper,
                  "%s: obs %s = %g in bounds", names[i], t->obs[k].name, va.obs[k]);
        rs_world_destroy(&a);
        rs_world_destroy(&b);
        rs_world_destroy(&c);
    }
}

/* Resets over many seeds keep starts and targets in their documented ranges. */
static void reset_ranges(void)
{
    rs_world_t *push = make("FingerPush-v0", NULL, 0, 1);
    rs_world_t *touch = make("FingerTouch-v0", NULL, 0, 1);
    rs_world_t *dd = make("DiffDriveGoal-v0", NULL, 0, 1);
    rs_world_t *pa = make("ParallelArmReach-v0", NULL, 0, 1);
    if (!push || !touch || !dd || !pa)
        return;
    rs_status_t st;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        rs_world_reset(push, seed, &st);
        rs_task_view_t v = view(push);
        CHECK(v.obs[0] == 0 && v.obs[2] >= 0.2 && v.obs[2] < 0.6 && v.obs[4] - v.obs[2] >= 0.5 &&
                  v.obs[4] - v.obs[2] < 1.5,
              "push start, seed %llu", (unsigned long long)seed);
        rs_world_reset(touch, seed, &st);
        v = view(touch);
        CHECK(v.obs[0] >= 0.1 && v.obs[0] < 0.5 && v.obs[2] == 0 && v.obs[5] >= 0.2 &&
                  v.obs[5] < 0.8,
              "touch start, seed %llu", (unsigned long long)seed);
        rs_world_reset(dd, seed, &st);
        v = view(dd);
        /* in m (the task's documented 180 cm arena, 10 cm margin, 100 cm apart) */
        CHECK(fabs(v.obs[0]) <= 1.8 && fabs(v.obs[1]) <= 1.8 && v.obs[8] >= 0.1 &&
                  hypot(v.obs[4], v.obs[5]) >= 1.0 && fabs(v.obs[0] + v.obs[4]) <= 1.8 &&
                  fabs(v.obs[1] + v.obs[5]) <= 1.8,
              "diff drive start and goal, seed %llu", (unsigned long long)seed);
        CHECK(fabs(hypot(v.obs[2], v.obs[3]) - 1) < 1e-12, "heading on the unit circle");
        rs_world_reset(pa, seed, &st);
        v = view(pa);
        CHECK(v.obs[0] > 0 && v.obs[0] < M_PI / 2 && v.obs[1] > 0 && v.obs[1] < M_PI / 2 &&
                  hypot(v.obs[6] - v.obs[4], v.obs[7] - v.obs[5]) > 0.015,
              "parallel arm start and target, seed %llu", (unsigned long long)seed);
    }
    rs_world_destroy(&push);
    rs_world_destroy(&touch);
    rs_world_destroy(&dd);
    rs_world_destroy(&pa);
}

/* ---- actions ------------------------------------------------------------------------------- */

static void bad_actions(void)
{
    rs_world_t *w = make("DiffDriveGoal-v0", NULL, 0, 3);
    if (!w)
        return;
    rs_status_t st;
    rs_task_view_t before = view(w);
    double one[] = {1}, three[] = {1, 1, 1}, nan2[] = {1, NAN}, inf2[] = {INFINITY, 0};
    double big[] = {1, 10.5}, edge[] = {-10, 10};
    CHECK(rs_world_task_step(w, one, 1, 1, &st) == RS_EINVAL && strstr(st.message, "2 values"),
          "short action: %s", st.message);
    CHECK(rs_world_task_step(w, three, 3, 1, &st) == RS_EINVAL, "long action: %s", st.message);
    CHECK(rs_world_task_step(w, nan2, 2, 1, &st) == RS_EINVAL && strstr(st.message, "phi2_dot") &&
              strstr(st.message, "not finite"),
          "NaN: %s", st.message);
    CHECK(rs_world_task_step(w, inf2, 2, 1, &st) == RS_EINVAL, "inf: %s", st.message);
    CHECK(rs_world_task_step(w, big, 2, 1, &st) == RS_ERANGE && strstr(st.message, "[-10, 10]"),
          "out of bounds: %s", st.message);
    rs_task_view_t after = view(w);
    CHECK(memcmp(before.obs, after.obs, sizeof before.obs) == 0 && w->data->t == 0 &&
              w->data->episode_steps == 0 && w->data->u[0] == 0,
          "refused actions change nothing");
    CHECK(rs_world_task_step(w, edge, 2, 1, &st) == 0, "the bounds themselves are allowed: %s",
          st.message);
    /* n = 0 holds the action in force */
    CHECK(rs_world_task_step(w, NULL, 0, 1, &st) == 0 && w->data->u[0] == -10 &&
              w->data->u[1] == 10 && w->data->episode_steps == 2,
          "hold: %s", st.message);
    rs_world_destroy(&w);
}

/* ---- rewards on hand-computed cases ------------------------------------------------------- */

static void push_reward(void)
{
    rs_world_t *w = make("FingerPush-v0", NULL, 0, 11);
    if (!w)
        return;
    rs_task_view_t v0 = view(w);
    double xo = v0.obs[2], target = v0.obs[4];
    /* F = 0: nothing moves; r = -(x* - x_o) - 0.1 (x_o - 0) */
    double zero = 0;
    step(w, &zero, 1, 1);
    rs_task_view_t v = view(w);
    CHECK_REL(v.reward, -(target - xo) - 0.1 * xo, 1e-12, 1.0);
    CHECK(v.obs[2] == xo && v.obs[0] == 0, "at rest");
    /* F = 2 N for one step of 0.05 s, the finger still apart: the effort term 0.01 (2/5)^2 and
     * the gap from the finger's new position */
    double f = 2;
    step(w, &f, 1, 1);
    v = view(w);
    double xf = v.obs[0];
    CHECK(xf > 0 && xf < 0.0025, "finger moved %g m (< F dt^2 / 2m)", xf);
    CHECK_REL(v.reward, -(target - xo) - 0.1 * (xo - xf) - 0.01 * 0.16, 1e-12, 1.0);
    CHECK_REL(info(&v, "effort"), 0.16, 1e-15, 1.0);
    CHECK_REL(info(&v, "gap"), xo - xf, 1e-15, 1.0);
    /* a Step of 3 control steps returns the sum of their rewards */
    double ret_before = v.episode_return;
    step(w, &zero, 1, 3);
    v = view(w);
    CHECK(w->data->episode_steps == 5, "5 steps");
    CHECK_REL(v.episode_return - ret_before, v.reward, 1e-12, 1.0);
    rs_world_destroy(&w);
}

static void touch_reward(void)
{
    rs_world_t *w = make("FingerTouch-v0", NULL, 0, 5);
    if (!w)
        return;
    rs_task_view_t v0 = view(w);
    double target = v0.obs[5];
    double f = -1.0; /* pull away: no contact, tip force 0 */
    step(w, &f, 1, 1);
    rs_task_view_t v = view(w);
    CHECK_REL(v.reward, -target - 0.01 * 0.25, 1e-12, 1.0);
    CHECK(info(&v, "held_steps") == 0 && info(&v, "displacement") == 0, "nothing touched");
    rs_world_destroy(&w);
}

static void dd_reward(void)
{
    /* no obstacles: the reward is the distance and effort terms alone */
    rs_param_t none = {"robot", "obstacles", NULL, 0};
    rs_world_t *w = make("DiffDriveGoal-v0", &none, 1, 21);
    if (!w)
        return;
    rs_task_view_t v0 = view(w);
    CHECK(v0.obs[8] == 10.0 && v0.obs[6] == 0 && v0.obs[9] == 0, "no obstacle observed");
    double x = v0.obs[0], y = v0.obs[1], gx = x + v0.obs[4], gy = y + v0.obs[5];
    /* both wheels at 2 rad/s for 0.1 s: 0.09 m * 2 rad/s * 0.1 s = 0.018 m straight ahead */
    double a[] = {2, 2};
    step(w, a, 2, 1);
    rs_task_view_t v = view(w);
    double nx = x + 0.018 * v0.obs[2], ny = y + 0.018 * v0.obs[3];
    CHECK_REL(v.obs[0], nx, 1e-9, 1.0);
    CHECK_REL(v.obs[1], ny, 1e-9, 1.0);
    double d = hypot(gx - nx, gy - ny);
    CHECK_REL(v.reward, -d - 0.01 * (0.04 + 0.04) / 2, 1e-9, 1.0);
    CHECK(info(&v, "collision") == 0, "no collision");
    rs_world_destroy(&w);

    /* one obstacle: steer into it; the step with the contact costs 1 more */
    double obst[] = {0, 0, 0.40};
    rs_param_t one = {"robot", "obstacles", obst, 3};
    w = make("DiffDriveGoal-v0", &one, 1, 4);
    if (!w)
        return;
    int hit = 0;
    for (int k = 0; k < 300 && !hit; k++) {
        v = view(w);
        double heading = atan2(v.obs[3], v.obs[2]), want = atan2(v.obs[7], v.obs[6]);
        double err = wrap(want - heading);
        double fwd = fabs(err) < 0.3 ? 8 : 0, turn = clamp(4 * err, -2, 2);
        double u[] = {clamp(fwd + turn, -10, 10), clamp(fwd - turn, -10, 10)};
        if (step(w, u, 2, 1) < 0)
            break;
        v = view(w);
        if (info(&v, "collision") != 0) {
            hit = 1;
            double dist = hypot(v.obs[4], v.obs[5]);
            double eff = 0.5 * (u[0] * u[0] + u[1] * u[1]) / 100;
            CHECK_REL(v.reward, -dist - 0.01 * eff - 1.0, 1e-9, 1.0);
            CHECK(v.obs[9] == 1 && fabs(v.obs[8]) < 1e-6, "bumper pressed at the rim: %g",
                  v.obs[8]);
            int contact = 0;
            for (int i = 0; i < w->data->nevents; i++)
                contact |= strcmp(rs_event_kind_name(w->model, &w->data->events[i]),
                                  "contact") == 0;
            CHECK(contact, "the contact event is in the step's log");
        }
    }
    CHECK(hit, "drove into the obstacle");
    rs_world_destroy(&w);
}

static void reach_reward(const char *task, double scale)
{
    rs_world_t *w = make(task, NULL, 0, 9);
    if (!w)
        return;
    rs_task_view_t v0 = view(w);
    double hold[] = {v0.obs[0], v0.obs[1]};
    if (strcmp(task, "ParallelArmReach-v0") != 0)
        hold[0] = wrap(hold[0]), hold[1] = wrap(hold[1]);
    step(w, hold, 2, 1);
    rs_task_view_t v = view(w);
    const rs_data_t *d = w->data;
    const rs_entity_model_t *em = &w->model->ent[0];
    const double *s = d->sensors + em->s_off; /* x, y, vx, vy, tau1, tau2, ... */
    double dist = hypot(s[0] - v.obs[6], s[1] - v.obs[7]);
    double tm1 = rs_model_param(w->model, 0, "tau_max", 0);
    double tm2 = rs_model_param(w->model, 0, "tau_max", 1);
    double eff = 0.5 * (s[4] * s[4] / (tm1 * tm1) + s[5] * s[5] / (tm2 * tm2));
    CHECK_REL(v.reward, -scale * dist - 0.01 * eff, 1e-12, 1.0);
    CHECK_REL(info(&v, "distance"), hypot(v.obs[4] - v.obs[6], v.obs[5] - v.obs[7]), 1e-12, 1.0);
    CHECK_REL(info(&v, "speed"), hypot(s[2], s[3]), 1e-12, 1.0);
    rs_world_destroy(&w);
}

/* ---- scripted controllers: termination on success ------------------------------------------ */

typedef void (*policy_fn)(const rs_world_t *w, const double *obs, double *a);

static void push_policy(const rs_world_t *w, const double *o, double *a)
{
    double dist = o[4] - o[2], vo = o[3];
    /* the free object decelerates by at least F_kinetic / m_o = 0.5 m/s^2 */
    if (dist <= 0.0 || (vo > 0 && vo * vo / (2 * 0.5) >= dist - 0.01))
        a[0] = -5;
    else
        a[0] = clamp(8 * (fmin(0.8, sqrt(dist)) - o[1]), -5, 5);
}

static void touch_policy(const rs_world_t *w, const double *o, double *a)
{
    if (o[0] > 1e-9) {
        double v = fmax(0.02, fmin(0.3, 2 * o[0]));
        a[0] = clamp(6 * (v - o[1]) + o[1] * fabs(o[1]), -2, 2);
    } else {
        /* in contact: let a sliding object stop first (pushing above F_kinetic keeps it
         * sliding), then press with F* (below F_static it stays stuck) */
        a[0] = fabs(o[3]) > 0 ? 0.0 : o[5];
    }
}

static void serial_policy(const rs_world_t *w, const double *o, double *a)
{
    double a1 = rs_model_param(w->model, 0, "a1", 0), a2 = rs_model_param(w->model, 0, "a2", 0);
    double q[2];
    if (serial_ik(a1, a2, o[6], o[7], 1, q) < 0)
        q[0] = q[1] = 0;
    a[0] = wrap(q[0]);
    a[1] = wrap(q[1]);
}

static void parallel_policy(const rs_world_t *w, const double *o, double *a)
{
    const rs_model_t *m = w->model;
    double q[2];
    if (parallel_ik(rs_model_param(m, 0, "L0", 0), rs_model_param(m, 0, "L1", 0),
                    rs_model_param(m, 0, "L2", 0), o[6], o[7], q) < 0)
        q[0] = q[1] = M_PI / 4;
    a[0] = clamp(q[0], 0, M_PI / 2);
    a[1] = clamp(q[1], 0, M_PI / 2);
}

static void dd_policy(const rs_world_t *w, const double *o, double *a)
{
    double err = wrap(atan2(o[5], o[4]) - atan2(o[3], o[2]));
    double dist = hypot(o[4], o[5]);
    double fwd = fabs(err) < 0.5 ? clamp(20 * dist, 1, 8) : 0, turn = clamp(4 * err, -3, 3); /* m */
    a[0] = clamp(fwd + turn, -10, 10);
    a[1] = clamp(fwd - turn, -10, 10);
}

static void solves(const char *task, policy_fn policy, const rs_param_t *p, size_t np)
{
    int solved = 0, tries = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        rs_world_t *w = make(task, p, np, seed);
        if (!w)
            return;
        tries++;
        const rs_task_t *t = w->task;
        rs_task_view_t v = view(w);
        double ret = 0;
        while (!v.terminated && !v.truncated) {
            double a[RS_TASK_MAX_ACT];
            policy(w, v.obs, a);
            if (step(w, a, (size_t)t->nact, 1) < 0)
                break;
            v = view(w);
            ret += v.reward;
        }
        CHECK_REL(v.episode_return, ret, 1e-9, 1.0);
        if (v.terminated) {
            solved++;
            CHECK(info(&v, "success") == 1 && v.reward > 5 && !v.truncated,
                  "%s: the success step carries the bonus (r = %g)", task, v.reward);
            rs_status_t st;
            double a[RS_TASK_MAX_ACT] = {0};
            CHECK(rs_world_task_step(w, a, (size_t)t->nact, 1, &st) == RS_EPRECOND &&
                      strstr(st.message, "Reset"),
                  "%s: a step after the end is refused: %s", task, st.message);
        } else {
            fprintf(stderr, "%s seed %llu: not solved in %llu steps (info %g %g %g %g)\n", task,
                    (unsigned long long)seed, (unsigned long long)w->data->episode_steps,
                    v.info[0], v.info[1], v.info[2], v.info[3]);
        }
        rs_world_destroy(&w);
    }
    CHECK(solved == tries, "%s: the scripted controller solves %d of %d seeds", task, solved,
          tries);
}

/* ---- truncation ---------------------------------------------------------------------------- */

static void truncation(void)
{
    rs_world_t *w = make("FingerPush-v0", NULL, 0, 2);
    if (!w)
        return;
    double zero = 0;
    /* 28 Steps of 7 control steps, then one that stops at 200 */
    for (int k = 0; k < 28; k++)
        step(w, &zero, 1, 7);
    rs_task_view_t v = view(w);
    CHECK(!v.truncated && w->data->episode_steps == 196, "196 steps, not truncated yet");
    step(w, &zero, 1, 7);
    v = view(w);
    CHECK(v.truncated && !v.terminated && w->data->episode_steps == 200 &&
              w->data->step_count == 200,
          "truncated exactly at 200 (episode %llu, step_count %llu)",
          (unsigned long long)w->data->episode_steps, (unsigned long long)w->data->step_count);
    rs_status_t st;
    CHECK(rs_world_task_step(w, &zero, 1, 1, &st) == RS_EPRECOND && strstr(st.message, "truncated"),
          "refused after truncation: %s", st.message);
    CHECK(rs_world_reset(w, 2, &st) == 0 && !view(w).truncated && w->data->episode_steps == 0,
          "Reset starts a new episode");
    rs_world_destroy(&w);
}

/* The world parameter max_episode_steps replaces the task's limit, longer or shorter. */
static void episode_limit_parameter(void)
{
    for (double limit = 3; limit <= 230; limit += 227) {
        rs_param_t p = {"", "max_episode_steps", &limit, 1};
        rs_world_t *w = make("FingerPush-v0", &p, 1, 2);
        if (!w)
            return;
        CHECK(rs_task_episode_limit(w->task, w->model) == (uint64_t)limit, "limit %g", limit);
        double zero = 0;
        for (int k = 0; k < (int)limit - 1; k++)
            step(w, &zero, 1, 1);
        CHECK(!view(w).truncated, "not truncated before %g", limit);
        step(w, &zero, 1, 1);
        CHECK(view(w).truncated && w->data->episode_steps == (uint64_t)limit,
              "truncated at %g (after %llu)", limit, (unsigned long long)w->data->episode_steps);
        rs_world_destroy(&w);
    }
}

/* ParallelArmReach-v1: action a in [-1, 1] applies the torque 0.5 a N*m (torque mode); the
 * observation is v0's divided by its scale and clipped; the reward a tenth of v0's formula. */
static void parallel_v1(void)
{
    rs_world_t *w = make("ParallelArmReach-v1", NULL, 0, 9);
    if (!w)
        return;
    double a[] = {0.6, -0.2};
    step(w, a, 2, 1);
    rs_task_view_t v = view(w);
    const rs_data_t *d = w->data;
    const rs_entity_model_t *em = &w->model->ent[0];
    const double *s = d->sensors + em->s_off; /* x, y, vx, vy, tau1, tau2, ... */
    const double *x = d->x + em->x_off;       /* theta1, theta2, rates */
    CHECK_REL(s[4], 0.3, 1e-12, 1.0);
    CHECK_REL(s[5], -0.1, 1e-12, 1.0);
    CHECK_REL(v.obs[2], clamp(x[2] / 10.0, -5, 5), 1e-12, 1.0);
    CHECK_REL(v.obs[4], s[0] / 0.1, 1e-12, 1.0);
    double dist = hypot(s[0] - 0.1 * v.obs[6], s[1] - 0.1 * v.obs[7]);
    double eff = 0.5 * (s[4] * s[4] / 0.25 + s[5] * s[5] / 0.25);
    CHECK_REL(v.reward, 0.1 * (-20.0 * dist - 0.01 * eff), 1e-12, 1.0);
    rs_status_t st;
    double pid[] = {1, 1};
    rs_param_t p = {"delta", "actuator_mode", pid, 2};
    CHECK(rs_world_set_params(w, &p, 1, &st) == RS_EINVAL && strstr(st.message, "torque"),
          "PID mode refused: %s", st.message);
    rs_world_destroy(&w);
}

/* Every task's names resolve once, at creation, to the robot's own entries; a name the robot
 * lacks refuses the world; a fork carries the binding. */
static void names_bound(void)
{
    for (const char *const *name = rs_task_names(); *name; name++) {
        rs_world_t *w = make(*name, NULL, 0, 3);
        if (!w)
            continue;
        const rs_task_t *t = w->task;
        const rs_task_bind_t *b = &w->task_bind;
        const rs_entity_model_t *em = &w->model->ent[b->entity];
        CHECK(b->robot == em->robot && strcmp(em->name, t->entity) == 0 && t->nnames > 0,
              "%s bound to entity '%s'", *name, t->entity);
        for (int k = 0; k < t->nnames; k++) {
            const char *found = NULL;
            int i = b->index[k];
            switch (t->names[k].kind) {
            case RS_TASK_NAME_STATE:
                found = i >= em->x_off && i < em->x_off + em->nx
                            ? em->robot->state[i - em->x_off].name : NULL;
                break;
            case RS_TASK_NAME_SENSOR:
                found = i >= em->s_off && i < em->s_off + em->ns
                            ? em->robot->sensors[i - em->s_off].name : NULL;
                break;
            case RS_TASK_NAME_PARAM:
                found = i >= 0 && i < em->robot->np ? em->robot->params[i].name : NULL;
                break;
            case RS_TASK_NAME_EVENT:
                found = i >= 0 && i < em->robot->nevent_kinds ? em->robot->event_names[i] : NULL;
                break;
            }
            CHECK(found && strcmp(found, t->names[k].name) == 0, "%s: name %d '%s' -> '%s'",
                  *name, k, t->names[k].name, found ? found : "(out of range)");
        }
        rs_status_t st;
        rs_world_t *f = rs_world_fork(w, NULL, 0, &st);
        CHECK(f && memcmp(&f->task_bind, b, sizeof *b) == 0, "%s: a fork keeps the binding: %s",
              *name, st.message);
        rs_world_destroy(&f);
        /* the same row with a name its robot lacks */
        rs_task_t bad = *t;
        rs_task_name_t names[RS_TASK_MAX_NAMES];
        memcpy(names, t->names, (size_t)t->nnames * sizeof names[0]);
        names[t->nnames - 1].name = "no_such_name";
        bad.names = names;
        rs_task_bind_t out;
        CHECK(rs_task_bind(&bad, w->model, &out, &st) == RS_EINTERNAL &&
                  strstr(st.message, "'no_such_name'") && strstr(st.message, em->robot->kind),
              "%s: a missing name is refused: %s", *name, st.message);
        rs_world_destroy(&w);
    }
}

/* The arms' forward kinematics through the robot table (rs_robot_t.joints_to_point), against
 * closed forms: serial (a1 + a2, 0) stretched and (a2, a1) at (pi/2, -pi/2); the parallel arm
 * at equal angles t: x = 0, y = L1 sin t + sqrt(L2^2 - u^2/4), u = L0 + 2 L1 cos t. */
static void arm_forward_kinematics(void)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new("serial_arm", NULL, 0, 1, &st);
    CHECK(w != NULL, "serial arm: %s", st.message);
    if (w) {
        const rs_entity_model_t *em = &w->model->ent[0];
        double a1 = rs_model_param(w->model, 0, "a1", 0), a2 = rs_model_param(w->model, 0, "a2", 0);
        double q[2] = {0, 0}, p[2], stretch = -1;
        CHECK(em->robot->joints_to_point(em, q, p, &stretch) == 0 &&
                  fabs(p[0] - (a1 + a2)) < 1e-15 && fabs(p[1]) < 1e-15 && fabs(stretch - 1.0) < 1e-15,
              "serial straight: (%g, %g) stretch %g", p[0], p[1], stretch);
        q[0] = M_PI / 2, q[1] = -M_PI / 2;
        CHECK(em->robot->joints_to_point(em, q, p, &stretch) == 0 && fabs(p[0] - a2) < 1e-15 &&
                  fabs(p[1] - a1) < 1e-15 && fabs(stretch - hypot(a1, a2) / (a1 + a2)) < 1e-15,
              "serial bent: (%g, %g) stretch %g", p[0], p[1], stretch);
    }
    rs_world_destroy(&w);
    w = rs_world_new("parallel_arm", NULL, 0, 1, &st);
    CHECK(w != NULL, "parallel arm: %s", st.message);
    if (w) {
        rs_entity_model_t em = w->model->ent[0];
        double L0 = rs_model_param(w->model, 0, "L0", 0), L1 = rs_model_param(w->model, 0, "L1", 0);
        double L2 = rs_model_param(w->model, 0, "L2", 0), t = 0.7, p[2], stretch = -1;
        double q[2] = {t, t}, u = L0 + 2 * L1 * cos(t);
        CHECK(em.robot->joints_to_point(&em, q, p, &stretch) == 0 && fabs(p[0]) < 1e-15 &&
                  fabs(p[1] - (L1 * sin(t) + sqrt(L2 * L2 - 0.25 * u * u))) < 1e-15 &&
                  fabs(stretch - u / (2 * L2)) < 1e-15,
              "parallel at t = %g: (%g, %g) stretch %g", t, p[0], p[1], stretch);
        /* distal links shorter than half the elbows' distance: no assembly */
        for (int i = 0; i < em.robot->np; i++)
            if (strcmp(em.robot->params[i].name, "L2") == 0)
                em.p[em.robot->params[i].offset] = 0.49 * u;
        CHECK(em.robot->joints_to_point(&em, q, p, NULL) == RS_EINVAL,
              "a linkage that does not assemble is refused");
    }
    rs_world_destroy(&w);
}

int main(void)
{
    table_and_creation();
    names_bound();
    arm_forward_kinematics();
    determinism();
    reset_ranges();
    bad_actions();
    push_reward();
    touch_reward();
    dd_reward();
    reach_reward("SerialArmReach-v0", 10.0);
    reach_reward("ParallelArmReach-v0", 20.0);
    solves("FingerPush-v0", push_policy, NULL, 0);
    solves("FingerTouch-v0", touch_policy, NULL, 0);
    solves("SerialArmReach-v0", serial_policy, NULL, 0);
    solves("ParallelArmReach-v0", parallel_policy, NULL, 0);
    rs_param_t none = {"robot", "obstacles", NULL, 0};
    solves("DiffDriveGoal-v0", dd_policy, &none, 1);
    truncation();
    episode_limit_parameter();
    parallel_v1();
    return rs_test_done("test_tasks");
}
