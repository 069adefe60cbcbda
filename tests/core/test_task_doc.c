/* Declared tasks (rs_task_doc.h): a reach task written as a document runs as an episode whose
 * observation, reward, success and truncation follow its formulas on the world's own sensors;
 * its resets draw from the declared distributions and a seed repeats them; each bad item of a
 * document is refused with an error that names it; registration by name. */
#include "rs_limits.h"
#include "rs_task.h"
#include "rs_task_doc.h"
#include "rs_test.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const reach =
    "{\"name\": \"DocReach-v0\", \"preset\": \"serial_arm\", \"entity\": \"arm\","
    " \"doc\": \"reach a drawn point\","
    " \"params\": [{\"entity\": \"\", \"name\": \"control_dt\", \"values\": [0.05]}],"
    " \"quantities\": {\"x\": \"arm.x\", \"y\": \"arm.y\", \"q1\": \"arm.theta1\","
    "   \"u1\": {\"command\": \"arm.joint1\"}, \"stops\": {\"events\": \"arm.stop\"},"
    "   \"tx\": {\"dist\": \"uniform\", \"a\": -0.3, \"b\": 0.3},"
    "   \"ty\": {\"dist\": \"uniform\", \"a\": -0.2, \"b\": 0.1},"
    "   \"d\": {\"expr\": \"hypot(x - tx, y - ty)\"}},"
    " \"observation\": [{\"expr\": \"x - tx\", \"scale\": 0.5, \"low\": -1, \"high\": 1},"
    "   \"d\", {\"expr\": \"wrap(q1)\", \"name\": \"angle\"}],"
    " \"action\": [{\"actuator\": \"joint1\", \"low\": -1, \"high\": 1, \"command\": [-3, 3]},"
    "   {\"actuator\": \"joint2\", \"low\": -1, \"high\": 1, \"command\": [-3, 3]}],"
    " \"reward\": \"-d - 0.01 * u1^2\", \"reward_scale\": 0.5,"
    " \"success\": \"lt(d, 0.002)\", \"max_steps\": 40,"
    " \"reset\": [{\"item\": \"arm.theta0[0]\", \"dist\": \"uniform\", \"a\": 0.5, \"b\": 1.0},"
    "   {\"item\": \"arm.theta0[1]\", \"dist\": \"normal\", \"a\": 0.2, \"b\": 0.01}],"
    " \"info\": [\"d\", \"stops\"]}";

/* The sampling constructs: parameters read as quantities, quantities computed at the start
 * only ("held": false), a start redrawn "until" it is clear of the obstacles, reset items
 * taking quantities, argmins over the obstacle list, a "require" on a parameter. */
static const char *const ring =
    "{\"name\":\"DocRing-v0\",\"preset\":\"diff_drive\",\"entity\":\"robot\","
    "\"params\":[{\"entity\":\"robot\",\"name\":\"obstacles\",\"values\":[0,0,0.5,1,1,0.2]},"
    "{\"entity\":\"robot\",\"name\":\"x0\",\"values\":[-1.5]},"
    "{\"entity\":\"robot\",\"name\":\"y0\",\"values\":[1.5]}],"
    "\"require\":[{\"expr\":\"gt(R, 0.05)\",\"error\":\"the robot must be wider than 5 cm\"}],"
    "\"quantities\":{\"R\":{\"param\":\"robot.robot_radius\"},"
    "\"sx\":{\"at_reset\":\"uniform(-1, 1)\",\"held\":false},"
    "\"sy\":{\"at_reset\":\"uniform(-1, 1)\",\"held\":false},"
    "\"c0\":{\"argmin\":\"hypot(sx - ox, sy - oy) - R - orad\",\"over\":\"robot.obstacles\","
    "\"group\":3,\"as\":[\"ox\",\"oy\",\"orad\"],\"none\":10,\"held\":false,"
    "\"until\":\"ge(c0, 0.2)\",\"redraw\":\"sx\",\"tries\":500},"
    "\"gx\":{\"at_reset\":\"uniform(-1, 1)\"},"
    "\"x\":\"robot.x\",\"y\":\"robot.y\","
    "\"near_x\":{\"argmin\":\"hypot(x - ox, y - oy) - orad\",\"over\":\"robot.obstacles\","
    "\"group\":3,\"as\":[\"ox\",\"oy\",\"orad\"],\"value\":\"ox\"},"
    "\"clear\":{\"argmin\":\"hypot(x - px, y - py) - R - pr\",\"over\":\"robot.obstacles\","
    "\"group\":3,\"as\":[\"px\",\"py\",\"pr\"],\"none\":10}},"
    "\"reset\":[{\"item\":\"robot.x0\",\"quantity\":\"sx\"},"
    "{\"item\":\"robot.y0\",\"quantity\":\"sy\"}],"
    "\"observation\":[\"x\",\"y\",\"near_x\",\"clear\",\"gx\"],"
    "\"action\":[{\"actuator\":\"phi1_dot\",\"low\":-1,\"high\":1},"
    "{\"actuator\":\"phi2_dot\",\"low\":-1,\"high\":1}],"
    "\"reward\":\"-clear\",\"max_steps\":20}";

/* A copy of `doc` with the first `from` replaced by `to` (the caller frees it). */
static char *edit(const char *doc, const char *from, const char *to)
{
    const char *at = strstr(doc, from);
    CHECK(at != NULL, "'%s' is not in the document", from);
    if (!at)
        return strdup(doc);
    size_t n = strlen(doc) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - doc), doc, to, at + strlen(from));
    return out;
}

static const double *sensor(const rs_world_t *w, const char *name)
{
    const rs_entity_model_t *em = &w->model->ent[0];
    for (int i = 0; i < em->ns; i++)
        if (strcmp(em->robot->sensors[i].name, name) == 0)
            return &w->data->sensors[em->s_off + i];
    return NULL;
}

/* The episode follows the document's formulas on the world's own sensors and state. */
static void episode(void)
{
    rs_status_t st;
    const rs_task_t *t = NULL;
    CHECK_OK(rs_task_doc_register(reach, strlen(reach), &t, &st), st);
    if (!t)
        return;
    CHECK(rs_task_find("DocReach-v0") == t, "the registered task is found by name");
    int listed = 0;
    for (const char *const *n = rs_task_names(); *n; n++)
        listed += strcmp(*n, "DocReach-v0") == 0;
    CHECK(listed == 1, "the task names list it once (%d)", listed);
    CHECK(t->nobs == 3 && t->nact == 2 && t->ninfo == 3 && t->max_episode_steps == 40,
          "shape %d %d %d %u", t->nobs, t->nact, t->ninfo, t->max_episode_steps);
    CHECK(strcmp(t->info[2], "success") == 0 && strcmp(t->obs[2].name, "angle") == 0 &&
              strcmp(t->obs[1].name, "d") == 0,
          "names: %s %s %s", t->info[2], t->obs[1].name, t->obs[2].name);

    rs_world_t *w = rs_world_new_task("DocReach-v0", NULL, NULL, 0, 17, &st);
    CHECK(w != NULL, "create: %s", st.message);
    rs_world_t *twin = rs_world_new_task("DocReach-v0", NULL, NULL, 0, 17, &st);
    if (!w || !twin)
        return;
    CHECK(w->model->control_dt == 0.05, "the document's params apply (dt %g)",
          w->model->control_dt);
    const rs_data_t *d = w->data;
    double tx = d->task[RS_TASK_PRIVATE], ty = d->task[RS_TASK_PRIVATE + 1];
    CHECK(tx >= -0.3 && tx <= 0.3 && ty >= -0.2 && ty <= 0.1, "targets drawn in range: %g %g",
          tx, ty);
    CHECK(d->x[0] >= 0.5 && d->x[0] <= 1.0 && fabs(d->x[1] - 0.2) < 0.06,
          "start drawn from the reset distributions: %g %g", d->x[0], d->x[1]);
    CHECK(tx == twin->data->task[RS_TASK_PRIVATE] && d->x[1] == twin->data->x[1],
          "a seed repeats the draws");

    double a[2] = {0.4, -0.2}, u1 = -3 + (0.4 + 1) / 2 * 6, ret = 0;
    for (int k = 1; k <= 40; k++) {
        int rc = rs_world_task_step(w, a, 2, 1, &st);
        CHECK_OK(rc, st);
        CHECK_OK(rs_world_task_step(twin, a, 2, 1, &st), st);
        if (rc < 0)
            break;
        rs_task_view_t v;
        CHECK_OK(rs_world_task_view(w, &v, &st), st);
        double x = *sensor(w, "x"), y = *sensor(w, "y");
        double dist = hypot(x - tx, y - ty);
        CHECK_REL(v.reward, 0.5 * (-dist - 0.01 * u1 * u1), 1e-12, 1e-9);
        CHECK_REL(v.obs[0], fmin(fmax((x - tx) / 0.5, -1), 1), 1e-12, 1e-12);
        CHECK_REL(v.obs[1], dist, 1e-12, 1e-12);
        CHECK_REL(v.obs[2], atan2(sin(d->x[0]), cos(d->x[0])), 1e-12, 1e-12);
        CHECK(v.info[0] == v.obs[1] && v.info[2] == (dist < 0.002), "info d, success");
        ret += v.reward;
        CHECK(!v.terminated, "no success on this path (d = %g)", dist);
        CHECK(v.truncated == (k == 40), "truncated at step 40 only (step %d)", k);
        CHECK_REL(v.episode_return, ret, 1e-12, 1e-9);
        rs_task_view_t tv;
        CHECK_OK(rs_world_task_view(twin, &tv, &st), st);
        CHECK(tv.reward == v.reward && tv.obs[0] == v.obs[0], "a seed repeats the episode");
    }
    CHECK(rs_world_task_step(w, a, 2, 1, &st) == RS_EPRECOND, "the ended episode refuses steps");
    double bad[2] = {1.5, 0};
    CHECK_OK(rs_world_reset(w, 3, &st), st);
    CHECK(rs_world_task_step(w, bad, 2, 1, &st) == RS_ERANGE && strstr(st.message, "joint1"),
          "an action outside its declared bounds: %s", st.message);
    rs_world_destroy(&w);
    rs_world_destroy(&twin);

    /* success ends the episode as terminated, at the step its condition first holds */
    char *early = edit(reach, "\"lt(d, 0.002)\"", "\"ge(steps, 3)\"");
    char *renamed = edit(early, "DocReach-v0", "DocReachEarly-v0");
    CHECK_OK(rs_task_doc_register(renamed, strlen(renamed), NULL, &st), st);
    w = rs_world_new_task("DocReachEarly-v0", NULL, NULL, 0, 5, &st);
    CHECK(w != NULL, "create: %s", st.message);
    if (w) {
        CHECK_OK(rs_world_task_step(w, a, 2, 10, &st), st);
        rs_task_view_t v;
        CHECK_OK(rs_world_task_view(w, &v, &st), st);
        CHECK(v.terminated && !v.truncated && w->data->episode_steps == 3 && v.info[2] == 1.0,
              "terminated after 3 steps (%llu)", (unsigned long long)w->data->episode_steps);
        rs_world_destroy(&w);
    }
    free(early);
    free(renamed);

    /* held quantities: an at-reset value drawn from the rng, and a counter updated after each
     * control step from its own last value */
    char *held = edit(reach, "\"d\": {\"expr\": \"hypot(x - tx, y - ty)\"}",
                      "\"d\": {\"expr\": \"hypot(x - tx, y - ty)\"}, "
                      "\"start\": {\"at_reset\": \"q1 + uniform(1, 2)\"}, "
                      "\"count\": {\"update\": \"count + 2\", \"init\": 5}");
    char *held2 = edit(held, "[\"d\", \"stops\"]", "[\"count\", \"start\"]");
    char *held3 = edit(held2, "DocReach-v0", "DocReachHeld-v0");
    CHECK_OK(rs_task_doc_register(held3, strlen(held3), NULL, &st), st);
    w = rs_world_new_task("DocReachHeld-v0", NULL, NULL, 0, 9, &st);
    CHECK(w != NULL, "create: %s", st.message);
    if (w) {
        const double *slot = w->data->task + RS_TASK_PRIVATE;
        double off = slot[2] - w->data->x[0];
        CHECK(off >= 1 && off < 2 && slot[3] == 5, "at reset: start - q1 = %g in [1, 2), count %g",
              off, slot[3]);
        for (int k = 1; k <= 4; k++) {
            CHECK_OK(rs_world_task_step(w, a, 2, 1, &st), st);
            rs_task_view_t v;
            CHECK_OK(rs_world_task_view(w, &v, &st), st);
            CHECK(v.info[0] == 5 + 2 * k && slot[3] == v.info[0] && v.info[1] == slot[2],
                  "step %d: count %g, start %g", k, v.info[0], v.info[1]);
        }
        rs_world_destroy(&w);
    }
    free(held);
    free(held2);
    free(held3);
}

static void registration(void)
{
    rs_status_t st;
    CHECK_OK(rs_task_doc_register(reach, strlen(reach), NULL, &st), st); /* same again: fine */
    char *other = edit(reach, "\"max_steps\": 40", "\"max_steps\": 41");
    CHECK(rs_task_doc_register(other, strlen(other), NULL, &st) == RS_EINVAL &&
              strstr(st.message, "another document"),
          "another document under a registered name: %s", st.message);
    free(other);
    const char *names[] = {"SerialArmReach-v0", "FingerPush-v0"}; /* in C, declared */
    for (int i = 0; i < 2; i++) {
        char *builtin = edit(reach, "DocReach-v0", names[i]);
        CHECK(rs_task_doc_register(builtin, strlen(builtin), NULL, &st) == RS_EINVAL &&
                  strstr(st.message, "built-in"),
              "a built-in task's name: %s", st.message);
        free(builtin);
    }
    /* a -v1 extending a registered -v0: its items in place of the base's */
    const char *v1 = "{\"name\": \"DocReach-v1\", \"extends\": \"DocReach-v0\", "
                     "\"reward_scale\": 0.1, \"max_steps\": 7}";
    const rs_task_t *t1 = NULL, *t0 = rs_task_find("DocReach-v0");
    CHECK_OK(rs_task_doc_register(v1, strlen(v1), &t1, &st), st);
    CHECK(t1 && t0 && t1->max_episode_steps == 7 && t1->reward_scale == 0.1 &&
              t1->nobs == t0->nobs && t1->nact == t0->nact && t1->ninfo == t0->ninfo &&
              strcmp(t1->preset, "serial_arm") == 0,
          "DocReach-v1 derived from DocReach-v0");

    /* a user's variant of a built-in declared task: FingerPush-v1 with another reward, the
     * same episodes (observations) for the same seed and actions */
    const char *variant = "{\"name\": \"MyPush-v1\", \"extends\": \"FingerPush-v1\", "
                          "\"reward\": \"-distance\", \"reward_scale\": 1}";
    CHECK_OK(rs_task_doc_register(variant, strlen(variant), NULL, &st), st);
    rs_world_t *mine = rs_world_new_task("MyPush-v1", NULL, NULL, 0, 31, &st);
    rs_world_t *theirs = rs_world_new_task("FingerPush-v1", NULL, NULL, 0, 31, &st);
    CHECK(mine && theirs, "create: %s", st.message);
    for (int k = 0; mine && theirs && k < 20; k++) {
        double act = 0.8;
        CHECK_OK(rs_world_task_step(mine, &act, 1, 1, &st), st);
        CHECK_OK(rs_world_task_step(theirs, &act, 1, 1, &st), st);
        rs_task_view_t a, b;
        CHECK_OK(rs_world_task_view(mine, &a, &st), st);
        CHECK_OK(rs_world_task_view(theirs, &b, &st), st);
        CHECK(memcmp(a.obs, b.obs, sizeof a.obs) == 0 && a.reward == -a.info[0] &&
                  b.reward != a.reward,
              "step %d: the same observation, the variant's reward -distance (%g, %g)", k,
              a.reward, b.reward);
    }
    rs_world_destroy(&mine);
    rs_world_destroy(&theirs);

    /* a variant with a reward of its own and no scale or text: not FingerPush-v1's 0.1 and
     * its description of another reward, but 1 and its own expression */
    const char *own = "{\"name\": \"MyPush-v2\", \"extends\": \"FingerPush-v1\", "
                      "\"reward\": \"-distance\"}";
    const rs_task_t *t2 = NULL, *base = rs_task_find("FingerPush-v1");
    CHECK_OK(rs_task_doc_register(own, strlen(own), &t2, &st), st);
    CHECK(t2 && base && base->reward_scale == 0.1 && (t2->reward_scale == 0.0 || t2->reward_scale == 1.0) &&
              t2->reward && strcmp(t2->reward, "-distance") == 0,
          "a reward of its own: scale %g (0: 1; the base's %g), text '%s'", t2 ? t2->reward_scale : -1,
          base ? base->reward_scale : -1, t2 && t2->reward ? t2->reward : "(none)");
    /* one that keeps the base's reward keeps its scale and text */
    const char *same = "{\"name\": \"MyPush-v3\", \"extends\": \"FingerPush-v1\", "
                       "\"max_steps\": 50}";
    const rs_task_t *t3 = NULL;
    CHECK_OK(rs_task_doc_register(same, strlen(same), &t3, &st), st);
    CHECK(t3 && base && t3->reward_scale == base->reward_scale &&
              strcmp(t3->reward, base->reward) == 0,
          "the base's reward, scale and text kept");
}

/* A bad edit of a good document: `from` replaced by `to` is refused with `code` and a message
 * that holds `names` (the item). */
typedef struct bad_case {
    const char *from, *to;
    int code;
    const char *names;
} bad_case_t;

static void refused(const char *base, const bad_case_t *bad, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *doc = edit(base, bad[i].from, bad[i].to);
        rs_status_t st = {0};
        rs_task_t *t = rs_task_doc_parse(doc, strlen(doc), &st);
        CHECK(t == NULL && st.code == bad[i].code && strstr(st.message, bad[i].names),
              "case %zu (%s -> %s): code %d, message '%s' should name '%s'", i, bad[i].from,
              bad[i].to, st.code, st.message, bad[i].names);
        rs_task_doc_destroy(&t);
        free(doc);
    }
}

/* Each bad item is refused with its code and a message naming it. */
static void validation(void)
{
    static const bad_case_t bad[] = {
        {"\"preset\": \"serial_arm\"", "\"preset\": \"no_such\"", RS_ENOTFOUND, "preset"},
        {"\"entity\": \"arm\"", "\"entity\": \"leg\"", RS_ENOTFOUND, "entity: preset"},
        {"\"arm.x\"", "\"arm.nope\"", RS_ENOTFOUND, "quantities.x"},
        /* a Monte Carlo return item names no entity: it read ent[-1] (found by fuzz_task_doc) */
        {"\"arm.x\"", "\"task.return\"", RS_EINVAL, "quantities.x"},
        {"\"arm.y\"", "\"hand.y\"", RS_ENOTFOUND, "quantities.y"},
        {"\"arm.joint1\"", "\"arm.joint9\"", RS_ENOTFOUND, "quantities.u1"},
        {"\"arm.stop\"", "\"arm.bang\"", RS_ENOTFOUND, "quantities.stops"},
        {"\"dist\": \"uniform\", \"a\": -0.3", "\"dist\": \"cauchy\", \"a\": -0.3", RS_EINVAL,
         "quantities.tx"},
        {"\"a\": -0.2, \"b\": 0.1", "\"a\": 0.2, \"b\": 0.1", RS_EINVAL, "quantities.ty"},
        {"hypot(x - tx, y - ty)", "hypot(x - tx, y - tz)", RS_EINVAL, "quantities.d"},
        {"hypot(x - tx, y - ty)", "hypot(x - tx,, y)", RS_EINVAL, "quantities.d"},
        {"\"q1\": \"arm.theta1\"", "\"2q\": \"arm.theta1\"", RS_EINVAL, "quantities.2q"},
        {"\"q1\": \"arm.theta1\"", "\"steps\": \"arm.theta1\"", RS_EINVAL, "quantities.steps"},
        {"\"q1\": \"arm.theta1\"", "\"q1\": 5", RS_EINVAL, "quantities.q1"},
        {"\"scale\": 0.5", "\"scale\": 0", RS_ERANGE, "observation[0].scale"},
        {"\"low\": -1, \"high\": 1}", "\"low\": 1, \"high\": -1}", RS_ERANGE, "observation[0]"},
        {"\"wrap(q1)\"", "\"wrap(q)\"", RS_EINVAL, "observation[2]"},
        {"\"d\", {", "\"d\", {\"expr\": \"d\", \"colour\": 1}, {", RS_EINVAL,
         "observation[2]: unknown item 'colour'"},
        {"\"actuator\": \"joint1\"", "\"actuator\": \"joint2\"", RS_EINVAL, "action[0].actuator"},
        {"\"command\": [-3, 3]}", "\"command\": [3, -3]}", RS_ERANGE, "action[0].command"},
        {"\"command\": [-3, 3]}", "\"command\": [-3, 2e7]}", RS_ERANGE, "action[0]"},
        {"\"high\": 1, \"command\": [-3, 3]},", "\"command\": [-3, 3]},", RS_EINVAL,
         "action[0]: 'high' is required"},
        {"\"reward\": \"-d - 0.01 * u1^2\"", "\"reward\": \"-d - \"", RS_EINVAL, "reward"},
        {"\"reward\": \"-d - 0.01 * u1^2\", ", "", RS_EINVAL, "'reward' is required"},
        {"\"lt(d, 0.002)\"", "\"lt(d 0.002)\"", RS_EINVAL, "success"},
        {"\"max_steps\": 40", "\"max_steps\": 0", RS_ERANGE, "max_steps"},
        {"\"max_steps\": 40", "\"max_steps\": 2.5", RS_ERANGE, "max_steps"},
        {"\"max_steps\": 40", "\"max_steps\": \"forever\"", RS_EINVAL, "task.max_steps"},
        {"\"arm.theta0[0]\"", "\"arm.theta9[0]\"", RS_ENOTFOUND, "reset[0]"},
        {"\"arm.theta0[1]\"", "\"arm.theta0[7]\"", RS_ERANGE, "reset[1]"},
        {"\"dist\": \"normal\", \"a\": 0.2, \"b\": 0.01", "\"dist\": \"normal\", \"a\": 0.2, "
         "\"b\": -1", RS_EINVAL, "reset[1]"},
        {"[\"d\", \"stops\"]", "[\"d\", \"speed\"]", RS_EINVAL, "info[1]"},
        {"\"name\": \"DocReach-v0\"", "\"name\": \"Doc Reach\"", RS_EINVAL, "name"},
        {"\"reward_scale\": 0.5", "\"reward_scale\": 0.5, \"gamma\": 0.99", RS_EINVAL,
         "task: unknown item 'gamma'"},
        {"\"name\": \"control_dt\", \"values\": [0.05]",
         "\"name\": \"control_dt\", \"values\": [-1]", RS_ERANGE, "params"},
        {"{\"name\"", "[{\"name\"", RS_EMALFORMED, "not JSON"},
        {"hypot(x - tx, y - ty)", "hypot(x - tx, y - ty) + uniform(0, 1)", RS_EINVAL,
         "quantities.d: 'hypot(x - tx, y - ty) + uniform(0, 1)' draws"},
        {"\"reward\": \"-d", "\"reward\": \"normal(0, 1) - d", RS_EINVAL, "reward: "},
        {"{\"expr\": \"hypot(x - tx, y - ty)\"}", "{\"at_reset\": \"hypot(x - tx, \"}",
         RS_EINVAL, "quantities.d"},
        {"{\"expr\": \"hypot(x - tx, y - ty)\"}", "{\"update\": \"d + 1\", \"init\": \"z\"}",
         RS_EINVAL, "quantities.d.init"},
        {"{\"expr\": \"hypot(x - tx, y - ty)\"}", "{\"expr\": \"d + 1\"}", RS_EINVAL,
         "quantities.d"}, /* only an update reads its own name */
        {"{\"expr\": \"hypot(x - tx, y - ty)\"}", "{\"expr\": \"x\", \"update\": \"x\"}",
         RS_EINVAL, "quantities.d: one of"},
        {"{\"item\": \"arm.theta0[0]\", \"dist\": \"uniform\", \"a\": 0.5, \"b\": 1.0}",
         "{\"item\": \"arm.theta0[0]\", \"value\": \"high\"}", RS_EINVAL, "reset[0].value"},
        {"{\"name\": \"DocReach-v0\",", "{\"name\": \"DocReach-v0\", \"extends\": \"Nope-v0\",",
         RS_ENOTFOUND, "extends: no declared task 'Nope-v0'"},
    };
    refused(reach, bad, sizeof bad / sizeof bad[0]);
    rs_status_t st;
    rs_task_t *t = rs_task_doc_parse(reach, strlen(reach), &st);
    CHECK(t != NULL && strcmp(rs_task_doc_source(t), reach) == 0, "the base document parses: %s",
          st.message);
    rs_task_doc_destroy(&t);
    const char *const *names = rs_task_names();
    int declared = 0, n = 0;
    for (; names[n]; n++)
        declared += rs_task_doc_source(rs_task_find(names[n])) != NULL;
    CHECK(declared == n && n >= 11, "every built-in task is declared as a document (%d of %d)",
          declared, n);
}

/* The obstacles of a world: n of them, (x, y, radius) each. */
static int obstacles(const rs_world_t *w, double o[][3])
{
    int n = 0;
    for (; n < 8; n++) {
        o[n][0] = rs_model_param(w->model, 0, "obstacles", 3 * n);
        if (isnan(o[n][0]))
            break;
        o[n][1] = rs_model_param(w->model, 0, "obstacles", 3 * n + 1);
        o[n][2] = rs_model_param(w->model, 0, "obstacles", 3 * n + 2);
    }
    return n;
}

/* Starts drawn until clear, argmins, only the held quantity kept; the refusals. */
static void sampling(void)
{
    rs_status_t st;
    CHECK_OK(rs_task_doc_register(ring, strlen(ring), NULL, &st), st);
    int starts = 0;
    for (uint64_t seed = 1; seed <= 30; seed++) {
        rs_world_t *w = rs_world_new_task("DocRing-v0", NULL, NULL, 0, seed, &st);
        CHECK(w != NULL, "create: %s", st.message);
        if (!w)
            return;
        double o[8][3], R = rs_model_param(w->model, 0, "robot_radius", 0);
        int n = obstacles(w, o);
        for (int k = 0; k < 3; k++) {
            rs_task_view_t v;
            CHECK_OK(rs_world_task_view(w, &v, &st), st);
            double x = v.obs[0], y = v.obs[1], best = INFINITY, nx = NAN, clear = INFINITY;
            for (int i = 0; i < n; i++) {
                double rim = hypot(x - o[i][0], y - o[i][1]) - o[i][2];
                if (rim < best)
                    best = rim, nx = o[i][0];
                clear = fmin(clear, rim - R);
            }
            if (k == 0) { /* the start: inside [-1, 1]^2, at least 0.2 m clear */
                CHECK(fabs(x) <= 1 && fabs(y) <= 1 && clear >= 0.2,
                      "seed %llu: start (%g, %g) drawn until 0.2 m clear (%g)",
                      (unsigned long long)seed, x, y, clear);
                starts += clear >= 0.2;
                CHECK(w->data->task[RS_TASK_PRIVATE] == v.obs[4] &&
                          w->data->task[RS_TASK_PRIVATE + 1] == 0.0,
                      "only the held quantity (gx) is kept in the episode state");
            }
            CHECK(v.obs[2] == nx, "near_x: the nearest obstacle's x (%g, %g)", v.obs[2], nx);
            CHECK_REL(v.obs[3], clear, 1e-12, 1e-12);
            double a[2] = {1, 0.5};
            CHECK_OK(rs_world_task_step(w, a, 2, 1, &st), st);
        }
        rs_world_destroy(&w);
    }
    CHECK(starts == 30, "every start clear (%d of 30)", starts);
    /* no obstacles: the argmins give "none" (10 for clear, 0 for near_x) */
    rs_param_t none = {"robot", "obstacles", NULL, 0};
    rs_world_t *w = rs_world_new_task("DocRing-v0", NULL, &none, 1, 3, &st);
    rs_task_view_t v;
    CHECK(w && rs_world_task_view(w, &v, &st) == 0 && v.obs[3] == 10 && v.obs[2] == 0,
          "no obstacles: clear 10, near_x 0");
    rs_world_destroy(&w);
    /* the require, and an until that cannot hold */
    double small[] = {0.01}, big[] = {0.5, -0.5, 2.0};
    rs_param_t thin = {"robot", "robot_radius", small, 1}, wall = {"robot", "obstacles", big, 3};
    w = rs_world_new_task("DocRing-v0", NULL, &thin, 1, 3, &st);
    CHECK(!w && st.code == RS_EINVAL && strstr(st.message, "wider than 5 cm"),
          "the require refuses: %s", st.message);
    w = rs_world_new_task("DocRing-v0", NULL, &wall, 1, 3, &st);
    CHECK(!w && st.code == RS_EINVAL && strstr(st.message, "quantities.c0") &&
              strstr(st.message, "500 draws"),
          "an until past its tries: %s", st.message);
    rs_world_destroy(&w);

    static const bad_case_t bad[] = {
        {"robot.robot_radius", "robot.radius_nope", RS_ENOTFOUND, "quantities.R"},
        {"robot.robot_radius", "robot.robot_radius[x]", RS_EINVAL, "quantities.R"},
        {"\"x\":\"robot.x\"", "\"x\":{\"expr\":\"1\",\"held\":false}", RS_EINVAL,
         "quantities.x.held"},
        {"[\"x\",\"y\"", "[\"sx\",\"y\"", RS_EINVAL, "observation[0]"},
        {"\"redraw\":\"sx\",", "", RS_EINVAL, "quantities.c0: 'until' needs 'redraw'"},
        {"\"redraw\":\"sx\"", "\"redraw\":\"zz\"", RS_EINVAL, "quantities.c0.redraw"},
        {"\"redraw\":\"sx\"", "\"redraw\":\"R\"", RS_EINVAL, "quantities.c0.redraw"},
        {"\"tries\":500", "\"tries\":0", RS_ERANGE, "quantities.c0.tries"},
        {"ge(c0, 0.2)", "ge(c0, ", RS_EINVAL, "quantities.c0.until"},
        {"\"value\":\"ox\"}", "\"value\":\"ox\",\"until\":\"1\"}", RS_EINVAL,
         "quantities.near_x.until"},
        {"\"value\":\"ox\"}", "\"value\":\"ox\",\"tries\":3}", RS_EINVAL,
         "quantities.near_x: 'redraw', 'tries' and 'error' need 'until'"},
        {"\"over\":\"robot.obstacles\",\"group\":3,\"as\":[\"ox\",\"oy\",\"orad\"],\"value",
         "\"over\":\"robot.obstacles[1]\",\"group\":3,\"as\":[\"ox\",\"oy\",\"orad\"],\"value",
         RS_EINVAL, "quantities.near_x.over"},
        {"\"group\":3,\"as\":[\"ox\",\"oy\",\"orad\"],\"value", "\"group\":0,\"as\":[],\"value",
         RS_ERANGE, "quantities.near_x.group"},
        {"[\"ox\",\"oy\",\"orad\"],\"value", "[\"ox\",\"oy\"],\"value", RS_EINVAL,
         "quantities.near_x.as"},
        {"[\"ox\",\"oy\",\"orad\"],\"value", "[\"x\",\"oy\",\"orad\"],\"value", RS_EINVAL,
         "quantities.near_x.as[0]"},
        {"\"value\":\"ox\"", "\"value\":\"oz\"", RS_EINVAL, "quantities.near_x.value"},
        {"\"over\":\"robot.obstacles\",\"group\":3,\"as\":[\"px\"",
         "\"over\":\"robot.nope\",\"group\":3,\"as\":[\"px\"", RS_ENOTFOUND, "quantities.clear"},
        {"{\"at_reset\":\"uniform(-1, 1)\"}", "{\"at_reset\":\"uniform(-1, 1)\",\"group\":3}",
         RS_EINVAL, "quantities.gx: 'over'"},
        {"{\"at_reset\":\"uniform(-1, 1)\"}", "{\"at_reset\":\"uniform(-1, 1)\",\"error\":\"e\"}",
         RS_EINVAL, "quantities.gx: 'redraw', 'tries' and 'error' need 'until'"},
        {"\"R\":{\"param\":\"robot.robot_radius\"}",
         "\"R\":{\"param\":\"robot.robot_radius\",\"argmin\":\"1\",\"over\":\"robot.obstacles\"}",
         RS_EINVAL, "quantities.R: one of"},
        {"\"quantity\":\"sx\"", "\"quantity\":\"nope\"", RS_EINVAL, "reset[0].quantity"},
        {"\"quantity\":\"sy\"", "\"quantity\":\"clear\"", RS_EINVAL,
         "quantities.x reads the state"},
        {"gt(R, 0.05)", "gt(x, 0.05)", RS_EINVAL, "require[0].expr"},
        {",\"error\":\"the robot must be wider than 5 cm\"", "", RS_EINVAL,
         "require[0]: 'error' is required"},
        {"\"require\":[{", "\"require\":[5,{", RS_EINVAL, "require[0]"},
        {"\"gx\"]", "\"parallel_x(1, 2, 3)\"]", RS_EINVAL, "observation[4]"},
    };
    refused(ring, bad, sizeof bad / sizeof bad[0]);
}

/* A finger task whose reward, success, termination and observation the caller gives (%s in
 * that order), each an expression; `info` names a quantity "q" listed as an info figure. */
static char *finger_doc(const char *name, const char *reward, const char *success,
                        const char *termination, const char *obs, const char *q)
{
    char *doc = malloc(8192);
    snprintf(doc, 8192,
             "{\"name\": \"%s\", \"preset\": \"finger\", \"entity\": \"finger\", "
             "\"quantities\": {\"x\": \"finger.x_f\", \"q\": {\"expr\": \"%s\"}}, "
             "\"observation\": [\"x\", {\"expr\": \"%s\", \"low\": -1, \"high\": 1}], "
             "\"action\": [{\"actuator\": \"force\", \"low\": -1, \"high\": 1}], "
             "\"reward\": \"%s\", \"success\": \"%s\", \"termination\": \"%s\", "
             "\"info\": [\"q\"], \"max_steps\": 50}",
             name, q, obs, reward, success, termination);
    return doc;
}

/* A document whose reward is `reward`, parsed: the status code (0: accepted), st's message. */
static int parse_reward(const char *reward, rs_status_t *st)
{
    size_t n = strlen(reward) + 512;
    char *doc = malloc(n);
    snprintf(doc, n,
             "{\"name\": \"Deep-v0\", \"preset\": \"finger\", \"entity\": \"finger\", "
             "\"quantities\": {\"x\": \"finger.x_f\"}, \"observation\": [\"x\"], "
             "\"action\": [{\"actuator\": \"force\", \"low\": -1, \"high\": 1}], "
             "\"reward\": \"%s\", \"max_steps\": 5}", reward);
    rs_task_t *t = rs_task_doc_parse(doc, strlen(doc), st);
    free(doc);
    int rc = t ? 0 : st->code;
    rs_task_doc_destroy(&t);
    return rc;
}

/* `n` copies of `unit` between `head` and `tail` (the caller frees it). */
static char *repeat(const char *head, const char *unit, int n, const char *tail)
{
    size_t len = strlen(head) + (size_t)n * strlen(unit) + strlen(tail) + 1;
    char *s = malloc(len), *p = s;
    p += sprintf(p, "%s", head);
    for (int i = 0; i < n; i++)
        p += sprintf(p, "%s", unit);
    sprintf(p, "%s", tail);
    return s;
}

/* Every expression is bounded in size, nesting and tree depth, every document in JSON
 * nesting, each refusal naming the limit and its value: a reward of 32,000 nested
 * parentheses (64 KB, under the document limit) overflowed the parser's stack before. */
static void expression_limits(void)
{
    rs_status_t st;
    char *deep = repeat("", "(", 32000, "x");
    char *closing = repeat(deep, ")", 32000, "");
    CHECK(parse_reward(closing, &st) == RS_EINVAL && strstr(st.message, "reward") &&
              strstr(st.message, "1024"),
          "32,000 parentheses: %s", st.message);
    free(deep);
    free(closing);
    /* nesting: 32 parentheses compile, 33 do not (within the size limit) */
    char *open32 = repeat("", "(", RS_EXPR_MAX_NESTING, "x"), *ok = repeat(open32, ")", 32, "");
    CHECK(parse_reward(ok, &st) == 0, "%d parentheses compile: %s", RS_EXPR_MAX_NESTING,
          st.message);
    char *open33 = repeat("(", "(", RS_EXPR_MAX_NESTING, "x"), *bad = repeat(open33, ")", 33, "");
    CHECK(parse_reward(bad, &st) == RS_EINVAL && strstr(st.message, "reward") &&
              strstr(st.message, "limit of 32 levels"),
          "33 parentheses: %s", st.message);
    free(open32), free(ok), free(open33), free(bad);
    /* unary functions nest without parentheses: the same bound */
    char *sins = repeat("", "sin ", 40, "x");
    CHECK(parse_reward(sins, &st) == RS_EINVAL && strstr(st.message, "limit of 32 levels"),
          "40 nested sin: %s", st.message);
    free(sins);
    /* a flat chain is a left-deep tree: its depth is bounded too (an evaluator's recursion) */
    char *chain = repeat("x", "+x", 200, "");
    CHECK(parse_reward(chain, &st) == RS_EINVAL && strstr(st.message, "limit of 128 levels"),
          "201 terms in a chain: %s", st.message);
    free(chain);
    char *chain_ok = repeat("x", "+x", RS_EXPR_MAX_DEPTH / 2 - 2, "");
    CHECK(parse_reward(chain_ok, &st) == 0, "a chain of %d terms: %s", RS_EXPR_MAX_DEPTH / 2 - 1,
          st.message);
    free(chain_ok);
    /* grouped, the same terms stay shallow but may not pass the node limit */
    char *groups = repeat("(x+x+x+x)", "+(x+x+x+x)", 90, "");
    CHECK(strlen(groups) <= RS_EXPR_MAX_SOURCE && parse_reward(groups, &st) == RS_EINVAL &&
              strstr(st.message, "limit of 512 terms"),
          "91 groups of 4: %s", st.message);
    free(groups);
    /* size: one character past the limit */
    char *longest = repeat("x", " ", RS_EXPR_MAX_SOURCE - 1, "");
    CHECK(parse_reward(longest, &st) == 0, "%d characters: %s", RS_EXPR_MAX_SOURCE, st.message);
    free(longest);
    longest = repeat("x", " ", RS_EXPR_MAX_SOURCE, "");
    CHECK(parse_reward(longest, &st) == RS_EINVAL && strstr(st.message, "1025 characters") &&
              strstr(st.message, "limit of 1024"),
          "%d characters: %s", RS_EXPR_MAX_SOURCE + 1, st.message);
    free(longest);
    /* the document's JSON nesting */
    char *nest = repeat("{\"name\": \"J-v0\", \"doc\": ", "[", 20, "1");
    char *nested = repeat(nest, "]", 20, "}");
    rs_task_t *t = rs_task_doc_parse(nested, strlen(nested), &st);
    CHECK(!t && st.code == RS_EINVAL && strstr(st.message, "limit of 16 levels"),
          "20 JSON levels: %s", st.message);
    rs_task_doc_destroy(&t);
    free(nest), free(nested);
}

/* Rejection sampling's worst case is bounded when the document is parsed: tries times what a
 * draw evaluates, under RS_TASK_DOC_MAX_RESET_WORK; and a stop or the request's budget (the
 * data's abort flag) interrupts it. */
static void sampling_limits(void)
{
    const char *base =
        "{\"name\": \"%s\", \"preset\": \"finger\", \"entity\": \"finger\", "
        "\"quantities\": {\"x\": \"finger.x_f\", \"a\": {\"at_reset\": \"uniform(0, 1)\", "
        "\"held\": false, \"until\": \"%s\", \"redraw\": \"a\", \"tries\": %s}}, "
        "\"observation\": [\"x\"], \"action\": [{\"actuator\": \"force\", \"low\": -1, "
        "\"high\": 1}], \"reward\": \"0\", \"max_steps\": 5}";
    char doc[16384];
    rs_status_t st;
    /* 1e7 tries of a 2,000-term condition that never holds (it held a server for minutes) */
    char *terms = repeat("lt(a", "+a", 1999, ", -1)");
    snprintf(doc, sizeof doc, base, "Never-v0", terms, "1e7");
    free(terms);
    double t0 = (double)clock() / CLOCKS_PER_SEC;
    rs_task_t *t = rs_task_doc_parse(doc, strlen(doc), &st);
    double spent = (double)clock() / CLOCKS_PER_SEC - t0;
    CHECK(!t && st.code == RS_EINVAL && strstr(st.message, "quantities.a.until"),
          "a 2,000-term until: %s", st.message);
    rs_task_doc_destroy(&t);
    /* a small condition, but 1e7 tries of it */
    snprintf(doc, sizeof doc, base, "Never-v1", "lt(a, -1)", "1e7");
    t = rs_task_doc_parse(doc, strlen(doc), &st);
    CHECK(!t && st.code == RS_ERANGE && strstr(st.message, "quantities.a") &&
              strstr(st.message, "limit of 2000000") && strstr(st.message, "10000000 tries"),
          "1e7 tries: %s", st.message);
    rs_task_doc_destroy(&t);
    /* refusing costs a parse, not the draws */
    CHECK(spent < 1.0, "refused in %.3f s of CPU time", spent);
    /* as many tries as the bound allows is accepted, and refused after them at a reset */
    snprintf(doc, sizeof doc, base, "Never-v2", "lt(a, -1)", "100000");
    t = rs_task_doc_parse(doc, strlen(doc), &st);
    CHECK(t != NULL, "1e5 tries of a small condition: %s", st.message);
    rs_task_doc_destroy(&t);
    /* a control step's worst case: three argmins of 480 nodes over a list of up to 160 */
    char *big = repeat("(o+o+o+o)", "+(o+o+o+o)", 59, "");
    char *argmins = malloc(8192), *p = argmins;
    for (int i = 0; i < 3; i++)
        p += sprintf(p, "%s\"m%d\": {\"argmin\": \"%s\", \"over\": \"robot.obstacles\", "
                     "\"group\": 1, \"as\": [\"o\"]}", i ? ", " : "", i, big);
    char *heavy = malloc(16384);
    snprintf(heavy, 16384,
             "{\"name\": \"Heavy-v0\", \"preset\": \"diff_drive\", \"entity\": \"robot\", "
             "\"quantities\": {%s}, \"observation\": [\"m0\"], \"action\": [{\"actuator\": "
             "\"phi1_dot\", \"low\": -1, \"high\": 1}], \"reward\": \"0\", \"max_steps\": 5}",
             argmins);
    t = rs_task_doc_parse(heavy, strlen(heavy), &st);
    CHECK(!t && st.code == RS_ERANGE && strstr(st.message, "limit of 200000 per control step"),
          "three heavy argmins: %s", st.message);
    rs_task_doc_destroy(&t);
    /* two of them fit */
    char *two = strstr(heavy, ", \"m2\"");
    memmove(two, strstr(two, "}}") + 1, strlen(strstr(two, "}}") + 1) + 1);
    t = rs_task_doc_parse(heavy, strlen(heavy), &st);
    CHECK(t != NULL, "two heavy argmins: %s", st.message);
    rs_task_doc_destroy(&t);
    free(big), free(argmins), free(heavy);
    /* the abort flag ends the draws with RS_EDEADLINE */
    snprintf(doc, sizeof doc, base, "Half-v0", "gt(a, 0.5)", "64");
    CHECK_OK(rs_task_doc_register(doc, strlen(doc), NULL, &st), st);
    rs_world_t *w = rs_world_new_task("Half-v0", NULL, NULL, 0, 1, &st);
    CHECK(w != NULL, "Half-v0: %s", st.message);
    if (!w)
        return;
    atomic_int stop = 1;
    rs_data_set_abort(w->data, &stop);
    int interrupted = 0, other = 0;
    for (uint64_t seed = 1; seed <= 16; seed++) {
        int rc = rs_world_reset(w, seed, &st);
        interrupted += rc == RS_EDEADLINE && strstr(st.message, "interrupted") &&
                       strstr(st.message, "quantities.a");
        other += rc != 0 && rc != RS_EDEADLINE;
    }
    CHECK(interrupted > 0 && other == 0, "%d of 16 resets interrupted at a failed draw, %d "
          "other errors: %s", interrupted, other, st.message);
    rs_data_set_abort(w->data, NULL);
    for (uint64_t seed = 1; seed <= 16; seed++)
        CHECK_OK(rs_world_reset(w, seed, &st), st);
    rs_world_destroy(&w);
}

/* A declared value that is not finite ends the Step with RS_ESIMFAIL naming the task and the
 * expression; the control step stands (time, counts), its reward and flags are not taken (a
 * NaN success is no success), nothing non-finite enters the episode's sums. The reward, flags
 * and info figures are checked after each control step (a Step of 3 from step 1 stops at step
 * 2), the observation the Step returns at its end (step 4). */
static void non_finite(void)
{
    static const struct {
        const char *what, *reward, *success, *termination, *obs, *q, *named;
        unsigned long long at;
    } cases[] = {
        {"reward NaN", "if(gt(steps, 1), 0/0, 0)", "0", "0", "x", "0", "the reward is NaN", 2},
        {"reward inf", "if(gt(steps, 1), 1/0, 0)", "0", "0", "x", "0", "the reward is +inf", 2},
        {"success NaN", "0", "if(gt(steps, 1), 0/0, 0)", "0", "x", "0", "success is NaN", 2},
        {"termination NaN", "0", "0", "if(gt(steps, 1), 0/0, 0)", "x", "0",
         "termination is NaN", 2},
        {"observation NaN", "0", "0", "0", "if(gt(steps, 1), 0/0, x)", "0",
         "observation[1] is NaN", 4},
        {"observation -inf", "0", "0", "0", "if(gt(steps, 1), -1/0, x)", "0",
         "observation[1] is -inf", 4},
        {"info NaN", "0", "0", "0", "x", "if(gt(steps, 1), 0/0, 0)", "info figure 'q'", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "NonFinite%zu-v0", i);
        char *doc = finger_doc(name, cases[i].reward, cases[i].success, cases[i].termination,
                               cases[i].obs, cases[i].q);
        rs_status_t st;
        CHECK_OK(rs_task_doc_register(doc, strlen(doc), NULL, &st), st);
        free(doc);
        rs_world_t *w = rs_world_new_task(name, NULL, NULL, 0, 5, &st);
        CHECK(w != NULL, "%s: %s", cases[i].what, st.message);
        if (!w)
            continue;
        double a = 0.5;
        CHECK_OK(rs_world_task_step(w, &a, 1, 1, &st), st);
        int rc = rs_world_task_step(w, &a, 1, 3, &st);
        const rs_data_t *d = w->data;
        char at[32];
        snprintf(at, sizeof at, "episode step %llu", cases[i].at);
        CHECK(rc == RS_ESIMFAIL && strstr(st.message, name) &&
                  strstr(st.message, cases[i].named) && strstr(st.message, at),
              "%s: rc %d, %s", cases[i].what, rc, st.message);
        CHECK(d->step_count == cases[i].at && d->episode_steps == cases[i].at,
              "%s: the failing control step stands (%llu, %llu)", cases[i].what,
              (unsigned long long)d->step_count, (unsigned long long)d->episode_steps);
        CHECK(d->task[RS_TASK_TERMINATED] == 0.0 && isfinite(d->task[RS_TASK_REWARD]) &&
                  isfinite(d->task[RS_TASK_RETURN]) && isfinite(d->task[RS_TASK_INFO]),
              "%s: no flag or sum taken from it (terminated %g, reward %g, return %g)",
              cases[i].what, d->task[RS_TASK_TERMINATED], d->task[RS_TASK_REWARD],
              d->task[RS_TASK_RETURN]);
        rs_task_view_t v;
        CHECK_OK(rs_world_task_view(w, &v, &st), st);
        CHECK(!v.terminated, "%s: the view is not terminated", cases[i].what);
        /* the start of a new episode is finite again */
        CHECK_OK(rs_world_reset(w, 6, &st), st);
        rs_world_destroy(&w);
    }
    /* an observation not finite at the start refuses the world */
    char *doc = finger_doc("NonFiniteStart-v0", "0", "0", "0", "ln(0)", "0");
    rs_status_t st;
    CHECK_OK(rs_task_doc_register(doc, strlen(doc), NULL, &st), st);
    free(doc);
    rs_world_t *w = rs_world_new_task("NonFiniteStart-v0", NULL, NULL, 0, 5, &st);
    CHECK(!w && st.code == RS_ESIMFAIL && strstr(st.message, "observation[1] is -inf") &&
              strstr(st.message, "ln(0)"),
          "a start observation of -inf: %s", st.message);
    rs_world_destroy(&w);
}

int main(void)
{
    validation();
    sampling();
    episode();
    registration();
    expression_limits();
    sampling_limits();
    non_finite();
    return rs_test_done("test_task_doc");
}
