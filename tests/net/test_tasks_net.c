/* Task worlds through the real server: Hello lists the tasks, CreateWorld with a task, GetSpec's
 * TaskSpec, Reset / Step / GetState carrying TaskStep, and every bad action or mix refused with
 * its specific code while the server keeps serving; a declared task registered and run. */
#include "core/builtin_tasks.h"
#include "inproc_server.h"
#include "rs_test.h"
#include "server_proc.h"

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static server_proc_t server;
static rsc_client_t *client;

/* Send `rq` (its token set from `token`); returns the error code (0 on success), *out the reply. */
static int call(Robosim__V1__Request *rq, const char *token, Robosim__V1__Response **out,
                rsc_error_t *err)
{
    rq->token = (char *)(token ? token : "");
    *out = NULL;
    return rsc_call(client, rq, out, err);
}

static int create(const char *task, const char *preset, uint64_t seed, uint64_t *id, char *token,
                  rsc_error_t *err)
{
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__CreateWorld cw = ROBOSIM__V1__CREATE_WORLD__INIT;
    cw.task = (char *)task;
    cw.preset = (char *)preset;
    cw.seed = seed;
    rq.op_case = ROBOSIM__V1__REQUEST__OP_CREATE_WORLD;
    rq.create_world = &cw;
    Robosim__V1__Response *rp;
    int rc = call(&rq, NULL, &rp, err);
    if (rc == 0) {
        *id = rp->create_world->world->world_id;
        snprintf(token, 128, "%s", rp->create_world->token ? rp->create_world->token : "");
        CHECK(strcmp(rp->create_world->world->task, task) == 0, "WorldInfo.task '%s'",
              rp->create_world->world->task);
    }
    rsc_free(rp);
    return rc;
}

/* Step world id with `action` (n values) and/or one command; returns the code, *state on 0. */
static int step(uint64_t id, const char *token, const double *action, size_t n, uint32_t steps,
                const char *entity, Robosim__V1__State **state, rsc_error_t *err)
{
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__Step sp = ROBOSIM__V1__STEP__INIT;
    Robosim__V1__ActuatorCommand cmd = ROBOSIM__V1__ACTUATOR_COMMAND__INIT;
    Robosim__V1__ActuatorCommand *cmds[] = {&cmd};
    double zero = 0;
    sp.steps = steps;
    sp.length_case = ROBOSIM__V1__STEP__LENGTH_STEPS;
    sp.action = (double *)action;
    sp.n_action = n;
    if (entity) {
        cmd.entity = (char *)entity;
        cmd.values = &zero;
        cmd.n_values = 1;
        sp.commands = cmds;
        sp.n_commands = 1;
    }
    rq.world_id = id;
    rq.op_case = ROBOSIM__V1__REQUEST__OP_STEP;
    rq.step = &sp;
    Robosim__V1__Response *rp;
    int rc = call(&rq, token, &rp, err);
    *state = NULL;
    if (rc == 0) {
        *state = rp->step;
        rp->step = NULL;
        rp->result_case = ROBOSIM__V1__RESPONSE__RESULT__NOT_SET;
    }
    rsc_free(rp);
    return rc;
}

static int simple(uint64_t id, const char *token, Robosim__V1__Request__OpCase op, void *msg,
                  Robosim__V1__Response **rp, rsc_error_t *err)
{
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    rq.world_id = id;
    rq.op_case = op;
    rq.reset = msg; /* a union: any op pointer */
    return call(&rq, token, rp, err);
}

static void hello_lists_tasks(void)
{
    rsc_error_t err;
    Robosim__V1__HelloReply *h = NULL;
    int rc = rsc_hello(client, 1, 0, &h, &err);
    CHECK(rc == 0 && h, "hello: %s", err.message);
    int n = h ? (int)h->n_tasks : 0;
    for (int i = 0; i < NBUILTIN_TASKS; i++)
        CHECK(builtin_tasks_count((const char *const *)(h ? h->tasks : NULL), n,
                                  builtin_tasks[i]) == 1,
              "HelloReply.tasks lists %s once (%d tasks)", builtin_tasks[i], n);
    rsc_free(h);
}

static void create_refusals(void)
{
    rsc_error_t err;
    uint64_t id;
    char token[128];
    int rc = create("NoSuch-v0", "", 1, &id, token, &err);
    CHECK(rc == CODE(NOT_FOUND) && strstr(err.message, "DiffDriveGoal-v0"), "unknown task: %d %s",
          rc, err.message);
    rc = create("FingerPush-v0", "workshop", 1, &id, token, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "'finger'"),
          "preset differing from the task's: %d %s", rc, err.message);
}

static void episode_over_protocol(void)
{
    rsc_error_t err;
    uint64_t id = 0, id2 = 0;
    char token[128], token2[128];
    int rc = create("FingerPush-v0", "", 42, &id, token, &err);
    CHECK(rc == 0, "create FingerPush-v0: %s", err.message);
    rc = create("FingerPush-v0", "finger", 42, &id2, token2, &err);
    CHECK(rc == 0, "create with its own preset named: %s", err.message);

    /* GetSpec carries TaskSpec */
    Robosim__V1__GetSpec gs = ROBOSIM__V1__GET_SPEC__INIT;
    Robosim__V1__Response *rp;
    rc = simple(id, NULL, ROBOSIM__V1__REQUEST__OP_GET_SPEC, &gs, &rp, &err);
    CHECK(rc == 0 && rp->get_spec->task, "spec: %s", err.message);
    if (rc == 0 && rp->get_spec->task) {
        Robosim__V1__TaskSpec *ts = rp->get_spec->task;
        CHECK(strcmp(ts->name, "FingerPush-v0") == 0 && ts->n_observation == 6 &&
                  ts->n_action == 1 && ts->action[0]->lower == -5 && ts->action[0]->upper == 5 &&
                  strcmp(ts->action[0]->unit, "N") == 0 && ts->max_episode_steps == 200 &&
                  strstr(ts->reward, "r = ") && isinf(ts->observation[0]->upper),
              "TaskSpec contents");
        CHECK(strcmp(rp->get_spec->world->task, "FingerPush-v0") == 0 &&
                  rp->get_spec->world->control_dt == 0.05,
              "WorldInfo.task and the task's control_dt");
    }
    rsc_free(rp);

    /* Reset with a seed: TaskStep with the observation, reward 0 */
    Robosim__V1__Reset rs = ROBOSIM__V1__RESET__INIT;
    rs.seed = 5;
    rs.seed_given_case = ROBOSIM__V1__RESET__SEED_GIVEN_SEED;
    rc = simple(id, token, ROBOSIM__V1__REQUEST__OP_RESET, &rs, &rp, &err);
    CHECK(rc == 0 && rp->reset->task && rp->reset->task->n_observation == 6 &&
              rp->reset->task->reward == 0 && !rp->reset->task->terminated,
          "reset carries TaskStep: %s", err.message);
    rsc_free(rp);
    rc = simple(id2, token2, ROBOSIM__V1__REQUEST__OP_RESET, &rs, &rp, &err);
    rsc_free(rp);

    /* Step with an action: both worlds alike, bit for bit */
    double f = 3.0;
    Robosim__V1__State *s1 = NULL, *s2 = NULL;
    rc = step(id, token, &f, 1, 4, NULL, &s1, &err);
    CHECK(rc == 0 && s1 && s1->task, "step with action: %s", err.message);
    rc = step(id2, token2, &f, 1, 4, NULL, &s2, &err);
    CHECK(rc == 0 && s2 && s2->task, "step with action: %s", err.message);
    if (s1 && s2 && s1->task && s2->task) {
        CHECK(memcmp(s1->task->observation, s2->task->observation, 6 * sizeof(double)) == 0 &&
                  s1->task->reward == s2->task->reward,
              "same seed, same actions, same observations");
        CHECK(s1->task->reward < 0 && s1->step_count == 4 && s1->task->n_info_keys == 4 &&
                  strcmp(s1->task->info_keys[0], "distance") == 0 &&
                  s1->entities[0]->commands[0] == 3.0,
              "reward %g, info, the action in force", s1->task->reward);
    }
    rsc_free(s1);
    rsc_free(s2);

    /* bad actions: specific codes, nothing changes, the server goes on */
    double two[] = {1, 2}, nan1 = NAN, big = 5.5;
    rc = step(id, token, two, 2, 1, NULL, &s1, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "1 value"), "wrong size: %d %s", rc,
          err.message);
    rc = step(id, token, &nan1, 1, 1, NULL, &s1, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "not finite"), "NaN: %d %s", rc,
          err.message);
    rc = step(id, token, &big, 1, 1, NULL, &s1, &err);
    CHECK(rc == CODE(OUT_OF_RANGE) && strstr(err.message, "[-5, 5]"), "out of bounds: %d %s", rc,
          err.message);
    rc = step(id, token, &f, 1, 1, "finger", &s1, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "not both"),
          "action and commands: %d %s", rc, err.message);
    rc = step(id, token, NULL, 0, 1, "finger", &s1, &err);
    CHECK(rc == CODE(INVALID_ARGUMENT) && strstr(err.message, "Step.action"),
          "commands on a task world: %d %s", rc, err.message);
    Robosim__V1__GetState gst = ROBOSIM__V1__GET_STATE__INIT;
    rc = simple(id, NULL, ROBOSIM__V1__REQUEST__OP_GET_STATE, &gst, &rp, &err);
    CHECK(rc == 0 && rp->get_state->task && rp->get_state->step_count == 4 &&
              rp->get_state->entities[0]->commands[0] == 3.0,
          "GetState carries TaskStep; refused steps changed nothing: %s", err.message);
    rsc_free(rp);

    /* truncation: a long Step stops at max_episode_steps; the next Step is refused */
    double zero = 0;
    rc = step(id, token, &zero, 1, 500, NULL, &s1, &err);
    CHECK(rc == 0 && s1 && s1->task && s1->task->truncated && !s1->task->terminated &&
              s1->step_count == 200,
          "truncated at 200: %s", err.message);
    rsc_free(s1);
    rc = step(id, token, &zero, 1, 1, NULL, &s1, &err);
    CHECK(rc == CODE(FAILED_PRECONDITION) && strstr(err.message, "Reset"),
          "step after the end: %d %s", rc, err.message);

    /* an action on a world without a task */
    uint64_t plain = 0;
    rsc_error_t e2;
    rc = rsc_create_world(client, "finger", NULL, 0, 1, &plain, &e2);
    CHECK(rc == 0, "plain world: %s", e2.message);
    const char *pt = rsc_world_token(client, plain);
    rc = step(plain, pt, &f, 1, 1, NULL, &s1, &err);
    CHECK(rc == CODE(FAILED_PRECONDITION) && strstr(err.message, "no task"),
          "action without a task: %d %s", rc, err.message);
    rc = simple(plain, NULL, ROBOSIM__V1__REQUEST__OP_GET_STATE, &gst, &rp, &err);
    CHECK(rc == 0 && rp->get_state->task == NULL, "no TaskStep without a task");
    rsc_free(rp);
}

/* Task worlds are evaluation worlds: SetForce, SetSchedule, SetTarget and SetParams are refused
 * with FAILED_PRECONDITION saying to use Step.action, and change nothing; the same operations
 * on a plain world of the preset work. */
static void task_world_refuses_commands(void)
{
    static const char *const tasks[] = {"FingerPush-v0", "SerialArmReach-v0"};
    for (int i = 0; i < 2; i++) {
        uint64_t id = 0;
        rsc_error_t err;
        int rc = rsc_create_task_world(client, tasks[i], NULL, NULL, 0, 3, &id, &err);
        CHECK(rc == 0, "%s: %s", tasks[i], err.message);
        int arm = i == 1;
        const char *ent = arm ? "arm" : "finger";
        Robosim__V1__State *before = NULL, *after = NULL;
        rsc_get_snapshot(client, id, &before, &err);

        double big[2] = {1e5, 1e5}, t[2] = {0.1, 0.2}, v[2] = {1, 2}, target[2] = {0.1, 0.1};
        double dt = 0.5;
        rsc_param_t p = {"", "control_dt", &dt, 1};
        struct {
            const char *op;
            int rc;
            rsc_error_t err;
        } r[4];
        r[0].op = "set_force";
        r[0].rc = rsc_set_force(client, id, ent, big, arm ? 2 : 1, &r[0].err);
        r[1].op = "set_schedule";
        r[1].rc = rsc_set_schedule(client, id, ent, 0, t, v, 2, &r[1].err);
        r[2].op = "set_params";
        r[2].rc = rsc_set_params(client, id, &p, 1, &r[2].err);
        r[3].op = "set_target";
        r[3].rc = arm ? rsc_set_target(client, id, ent, target, 2, &r[3].err) : 0;
        for (int k = 0; k < (arm ? 4 : 3); k++)
            CHECK(r[k].rc == CODE(FAILED_PRECONDITION) && strstr(r[k].err.message, r[k].op) &&
                      strstr(r[k].err.message, "Step.action"),
                  "%s: %s refused: %d %s", tasks[i], r[k].op, r[k].rc, r[k].err.message);
        rsc_get_snapshot(client, id, &after, &err);
        CHECK(before && after && before->snapshot.len == after->snapshot.len &&
                  memcmp(before->snapshot.data, after->snapshot.data, after->snapshot.len) == 0,
              "%s: the refused operations changed nothing", tasks[i]);
        rsc_free(before);
        rsc_free(after);
        rsc_destroy_world(client, id, &err);

        /* a world of the same preset without a task takes them */
        rc = rsc_create_world(client, arm ? "serial_arm" : "finger", NULL, 0, 3, &id, &err);
        double ok[2] = {0.5, 0.5};
        CHECK(rc == 0 && rsc_set_force(client, id, ent, ok, arm ? 2 : 1, &err) == 0 &&
                  rsc_set_schedule(client, id, ent, 0, t, v, 2, &err) == 0 &&
                  rsc_set_params(client, id, &p, 1, &err) == 0 &&
                  (!arm || rsc_set_target(client, id, ent, target, 2, &err) == 0),
              "%s's preset without a task takes them: %s", tasks[i], err.message);
        rsc_destroy_world(client, id, &err);
    }
}

/* A declared task through the protocol: RegisterTask (and its refusals, naming the item),
 * Hello listing it, a world of it by name, and CreateWorld.task_document registering and
 * running another in one request. */
static void declared_task_over_protocol(void)
{
    const char *doc =
        "{\"name\": \"NetDoc-v0\", \"preset\": \"finger\", \"entity\": \"finger\", "
        "\"quantities\": {\"x\": \"finger.x_f\"}, \"observation\": [\"x\"], "
        "\"action\": [{\"actuator\": \"force\", \"low\": -1, \"high\": 1}], "
        "\"reward\": \"-abs(x - 0.1)\", \"max_steps\": 5}";
    rsc_error_t err;
    char name[64] = "";
    CHECK(rsc_register_task(client, doc, name, sizeof name, &err) == 0 &&
              strcmp(name, "NetDoc-v0") == 0,
          "register: %s (%s)", err.message, name);
    const char *bad = "{\"name\": \"NetBad-v0\", \"preset\": \"finger\", \"entity\": "
                      "\"finger\", \"observation\": [\"x_f\"], \"action\": [], "
                      "\"reward\": \"0\", \"max_steps\": 5}";
    CHECK(rsc_register_task(client, bad, NULL, 0, &err) == CODE(INVALID_ARGUMENT) &&
              strstr(err.message, "observation[0]"),
          "a bad document is refused naming its item: %s", err.message);
    Robosim__V1__HelloReply *h = NULL;
    CHECK(rsc_hello(client, 1, 0, &h, &err) == 0, "hello: %s", err.message);
    int listed = 0;
    for (size_t i = 0; h && i < h->n_tasks; i++)
        listed |= strcmp(h->tasks[i], "NetDoc-v0") == 0;
    CHECK(listed, "Hello lists the registered task");
    rsc_free(h);
    uint64_t id = 0;
    char token[128];
    CHECK(create("NetDoc-v0", "", 3, &id, token, &err) == 0, "create by name: %s", err.message);
    double a = 0.5;
    Robosim__V1__State *s = NULL;
    CHECK(step(id, token, &a, 1, 10, NULL, &s, &err) == 0 && s && s->task &&
              s->task->truncated && s->step_count == 5 && s->task->n_observation == 1,
          "the declared episode truncates after 5 steps: %s", err.message);
    rsc_free(s);
    /* CreateWorld.task_document: registered and run in one request */
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__CreateWorld cw = ROBOSIM__V1__CREATE_WORLD__INIT;
    char doc2[1024];
    snprintf(doc2, sizeof doc2, "%s", doc);
    memcpy(strstr(doc2, "NetDoc-v0"), "NetDoc-v1", 9);
    cw.task_document = doc2;
    rq.op_case = ROBOSIM__V1__REQUEST__OP_CREATE_WORLD;
    rq.create_world = &cw;
    Robosim__V1__Response *rp = NULL;
    CHECK(call(&rq, NULL, &rp, &err) == 0 && rp->create_world &&
              strcmp(rp->create_world->world->task, "NetDoc-v1") == 0,
          "CreateWorld.task_document: %s", err.message);
    rsc_free(rp);
    cw.task = "SomethingElse-v0";
    CHECK(call(&rq, NULL, &rp, &err) == CODE(INVALID_ARGUMENT) && strstr(err.message, "NetDoc-v1"),
          "a task name other than the document's: %s", err.message);
    rsc_free(rp);
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A finger task document (name, reward and one quantity's extra items; the caller frees). */
static char *doc_with(const char *name, const char *reward, const char *quantity)
{
    size_t n = strlen(reward) + strlen(quantity) + 512;
    char *doc = malloc(n);
    snprintf(doc, n,
             "{\"name\": \"%s\", \"preset\": \"finger\", \"entity\": \"finger\", "
             "\"quantities\": {\"x\": \"finger.x_f\", \"a\": {\"at_reset\": \"uniform(0, 1)\", "
             "\"held\": false%s}}, \"observation\": [\"x\"], "
             "\"action\": [{\"actuator\": \"force\", \"low\": -1, \"high\": 1}], "
             "\"reward\": \"%s\", \"max_steps\": 5}",
             name, quantity, reward);
    return doc;
}

/* `doc` sent as RegisterTask and as CreateWorld.task_document: each refused with `code` and
 * a message holding `named`, within `within` seconds. */
static void refused_both_ways(const char *what, const char *doc, int code, const char *named,
                              double within)
{
    rsc_error_t err;
    double t0 = seconds_now();
    int rc = rsc_register_task(client, doc, NULL, 0, &err);
    double spent = seconds_now() - t0;
    CHECK(rc == code && strstr(err.message, named), "%s as RegisterTask: %d %s", what, rc,
          err.message);
    CHECK(spent < within, "%s: RegisterTask refused in %.3f s (at most %.3f)", what, spent,
          within);
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__CreateWorld cw = ROBOSIM__V1__CREATE_WORLD__INIT;
    cw.task_document = (char *)doc;
    rq.op_case = ROBOSIM__V1__REQUEST__OP_CREATE_WORLD;
    rq.create_world = &cw;
    Robosim__V1__Response *rp = NULL;
    t0 = seconds_now();
    rc = call(&rq, NULL, &rp, &err);
    spent = seconds_now() - t0;
    CHECK(rc == code && strstr(err.message, named), "%s as CreateWorld.task_document: %d %s",
          what, rc, err.message);
    CHECK(spent < within, "%s: CreateWorld refused in %.3f s (at most %.3f)", what, spent,
          within);
    rsc_free(rp);
}

/* Documents past the limits (docs/limits.md) are refused at once naming the limit, and the
 * server serves the next request, another client's too: a reward of 32,000 nested
 * parentheses overflowed the parser's stack (SIGSEGV), rejection sampling of 1e7 tries of a
 * 2,000-term condition held the loop for minutes. */
static void limits_over_protocol(void)
{
    rsc_error_t err;
    Robosim__V1__HelloReply *h = NULL;
    double t0 = seconds_now();
    CHECK(rsc_hello(client, 1, 0, &h, &err) == 0, "hello: %s", err.message);
    double hello = seconds_now() - t0; /* the margin: a round trip on this machine now */
    rsc_free(h);
    double within = 1.0 + 100.0 * hello;
    size_t n = 64100;
    char *reward = malloc(n), *p = reward;
    for (int i = 0; i < 32000; i++)
        *p++ = '(';
    *p++ = 'x';
    for (int i = 0; i < 32000; i++)
        *p++ = ')';
    *p = 0;
    char *deep = doc_with("Deep-v0", reward, "");
    CHECK(strlen(deep) < 65536, "under the 64 KiB document limit: %zu bytes", strlen(deep));
    refused_both_ways("32,000 parentheses", deep, CODE(INVALID_ARGUMENT), "limit of 1024",
                      within);
    free(deep);
    /* nesting within the size limit */
    p = reward;
    for (int i = 0; i < 40; i++)
        *p++ = '(';
    *p++ = 'x';
    for (int i = 0; i < 40; i++)
        *p++ = ')';
    *p = 0;
    deep = doc_with("Deep-v1", reward, "");
    refused_both_ways("40 parentheses", deep, CODE(INVALID_ARGUMENT), "limit of 32 levels",
                      within);
    free(deep);
    /* a 2,000-term until that never holds, 1e7 tries: the 4.3 KB document that held the loop */
    p = reward + sprintf(reward, ", \"until\": \"lt(a");
    for (int i = 0; i < 1999; i++)
        p += sprintf(p, "+a");
    sprintf(p, ", -1)\", \"redraw\": \"a\", \"tries\": 1e7");
    char *never = doc_with("Never-v0", "0", reward);
    CHECK(strlen(never) > 4000 && strlen(never) < 5000, "a 4.3 KB document: %zu bytes",
          strlen(never));
    refused_both_ways("a 2,000-term until", never, CODE(INVALID_ARGUMENT), "quantities.a.until",
                      within);
    free(never);
    /* a small until, 1e7 tries: the bound on a start's work */
    never = doc_with("Never-v1", "0",
                     ", \"until\": \"lt(a, -1)\", \"redraw\": \"a\", \"tries\": 1e7");
    refused_both_ways("1e7 tries", never, CODE(OUT_OF_RANGE), "limit of 2000000", within);
    free(never);
    free(reward);
    /* the server goes on: this client, and another */
    CHECK(rsc_hello(client, 1, 0, &h, &err) == 0, "hello after: %s", err.message);
    rsc_free(h);
    rsc_client_t *other = client_of(server.endpoint, 5000);
    CHECK(rsc_hello(other, 1, 0, &h, &err) == 0, "another client's hello: %s", err.message);
    rsc_free(h);
    rsc_close(&other);
}

/* A declared reward that is not finite fails the Step (SIMULATION_FAILED naming the task and
 * the expression) instead of reaching the agent; the world answers on. */
static void non_finite_over_protocol(void)
{
    rsc_error_t err;
    char *doc = doc_with("NetNaN-v0", "if(gt(steps, 1), 0/0, -x)", "");
    CHECK(rsc_register_task(client, doc, NULL, 0, &err) == 0, "register: %s", err.message);
    free(doc);
    uint64_t id = 0;
    char token[128];
    CHECK(create("NetNaN-v0", "", 3, &id, token, &err) == 0, "create: %s", err.message);
    double a = 0.5;
    Robosim__V1__State *s = NULL;
    CHECK(step(id, token, &a, 1, 1, NULL, &s, &err) == 0 && s && s->task &&
              isfinite(s->task->reward),
          "the first step's reward: %s", err.message);
    rsc_free(s);
    int rc = step(id, token, &a, 1, 1, NULL, &s, &err);
    CHECK(rc == CODE(SIMULATION_FAILED) && strstr(err.message, "NetNaN-v0") &&
              strstr(err.message, "the reward is NaN") && strstr(err.message, "0/0"),
          "a NaN reward: %d %s", rc, err.message);
    rsc_free(s);
    Robosim__V1__HelloReply *h = NULL;
    CHECK(rsc_hello(client, 1, 0, &h, &err) == 0, "hello after: %s", err.message);
    rsc_free(h);
}

/* A small task document named `name` (buf of cap bytes). */
static const char *task_doc(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap,
             "{\"name\": \"%s\", \"preset\": \"finger\", \"entity\": \"finger\", "
             "\"quantities\": {\"x\": \"finger.x_f\"}, \"observation\": [\"x\"], "
             "\"action\": [{\"actuator\": \"force\", \"low\": -1, \"high\": 1}], "
             "\"reward\": \"-abs(x)\", \"max_steps\": 100000}",
             name);
    return buf;
}

/* RegisterTask (or CreateWorld.task_document when `create`) of task `name` in-process from
 * quota key `key`: the reply's error code (0: registered), its message in msg. */
static int declare_as(rs_server_t *s, const char *key, const char *name, int create, char *msg,
                      size_t cap)
{
    char doc[1024];
    task_doc(doc, sizeof doc, name);
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__RegisterTask reg = ROBOSIM__V1__REGISTER_TASK__INIT;
    Robosim__V1__CreateWorld cw = ROBOSIM__V1__CREATE_WORLD__INIT;
    if (create) {
        cw.task_document = doc;
        rq.op_case = ROBOSIM__V1__REQUEST__OP_CREATE_WORLD;
        rq.create_world = &cw;
    } else {
        reg.document = doc;
        rq.op_case = ROBOSIM__V1__REQUEST__OP_REGISTER_TASK;
        rq.register_task = &reg;
    }
    uint8_t buf[2048];
    size_t n = robosim__v1__request__pack(&rq, buf);
    rs_caller_t caller = {0};
    snprintf(caller.id, sizeof caller.id, "conn:%s", key);
    snprintf(caller.key, sizeof caller.key, "%s", key);
    const uint8_t *out;
    size_t outlen;
    rs_server_handle_from(s, &caller, buf, n, &out, &outlen);
    Robosim__V1__Response *rp = robosim__v1__response__unpack(NULL, outlen, out);
    int code = !rp                                                      ? -1
               : rp->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR ? (int)rp->error->code
                                                                        : 0;
    snprintf(msg, cap, "%s", code > 0 ? rp->error->message : "");
    if (rp)
        robosim__v1__response__free_unpacked(rp, NULL);
    return code;
}

/* Declared tasks are counted per client (quota key), as worlds are: one client at its quota
 * is refused RegisterTask and CreateWorld.task_document while another still declares (in
 * process, two keys); a document registered already goes through at the quota. */
static void declared_quota_per_key(void)
{
    rs_server_config_t cfg;
    inproc_config(&cfg);
    cfg.max_tasks_per_client = 2;
    rs_server_t *s = inproc_server(&cfg);
    if (!s)
        return;
    char msg[512];
    const char *a = "ip:192.0.2.1", *b = "ip:192.0.2.2";
    CHECK(declare_as(s, a, "QuotaA0-v0", 0, msg, sizeof msg) == 0, "A's first task: %s", msg);
    CHECK(declare_as(s, a, "QuotaA1-v0", 1, msg, sizeof msg) == 0, "A's second (CreateWorld): %s",
          msg);
    CHECK(declare_as(s, a, "QuotaA2-v0", 0, msg, sizeof msg) == CODE(RESOURCE_EXHAUSTED) &&
              strstr(msg, "--max-tasks-per-client"),
          "A's third refused, naming the flag: %s", msg);
    CHECK(declare_as(s, a, "QuotaA2-v0", 1, msg, sizeof msg) == CODE(RESOURCE_EXHAUSTED),
          "and as CreateWorld.task_document: %s", msg);
    CHECK(declare_as(s, a, "QuotaA0-v0", 0, msg, sizeof msg) == 0,
          "A's own document again goes through at its quota: %s", msg);
    CHECK(declare_as(s, b, "QuotaB0-v0", 0, msg, sizeof msg) == 0, "B registers meanwhile: %s",
          msg);
    CHECK(declare_as(s, b, "QuotaB1-v0", 1, msg, sizeof msg) == 0,
          "and creates a world of another in one request: %s", msg);
    rs_server_destroy(&s);
}

/* Through the real server with --world-ttl 1: a client at its quota of declared tasks that
 * holds no world gets its slots back once its tasks have been unused for the TTL (their names
 * leave Hello's list); a task whose world runs stays. */
static void declared_tasks_expire(const char *binary)
{
    server_proc_t sp;
    const char *extra[] = {"--no-world", "--world-ttl", "1", "--max-tasks-per-client", "3", NULL};
    server_start_or_exit(&sp, binary, extra);
    rsc_client_t *c = client_of(sp.endpoint, 5000);
    rsc_error_t err;
    char doc[1024], name[64];
    const char *names[] = {"Expire0-v0", "Expire1-v0", "Expire2-v0", "Expire3-v0"};
    for (int i = 0; i < 3; i++)
        CHECK(rsc_register_task(c, task_doc(doc, sizeof doc, names[i]), name, sizeof name,
                                &err) == 0,
              "task %d: %s", i, err.message);
    CHECK(rsc_register_task(c, task_doc(doc, sizeof doc, names[3]), name, sizeof name, &err) ==
              CODE(RESOURCE_EXHAUSTED),
          "the fourth refused at the quota of 3: %s", err.message);
    /* a world of the first, kept running */
    uint64_t id = 0;
    CHECK(rsc_create_task_world(c, names[0], NULL, NULL, 0, 1, &id, &err) == 0, "world: %s",
          err.message);
    double t0 = now_s(), a = 0.1;
    int registered = 0;
    while (!registered && now_s() - t0 < 4.0) {
        Robosim__V1__State *st = NULL;
        rsc_step(c, id, 1, 0.0, NULL, 0, &st, &err); /* keeps the world (and its owner) alive */
        rsc_free(st);
        (void)a;
        sleep_s(0.2);
        registered = rsc_register_task(c, task_doc(doc, sizeof doc, names[3]), name,
                                       sizeof name, &err) == 0;
    }
    CHECK(!registered, "no task expires while its client holds a world (%.1f s)", now_s() - t0);
    CHECK(rsc_destroy_world(c, id, &err) == 0, "destroy: %s", err.message);
    t0 = now_s();
    while (!registered && now_s() - t0 < 8.0) {
        sleep_s(0.25);
        registered = rsc_register_task(c, task_doc(doc, sizeof doc, names[3]), name,
                                       sizeof name, &err) == 0;
    }
    printf("declared tasks expired %.1f s after their client's last world went (--world-ttl 1)\n",
           now_s() - t0);
    CHECK(registered, "the client's unused tasks expired and its quota is free again: %s",
          err.message);
    Robosim__V1__HelloReply *h = NULL;
    CHECK(rsc_hello(c, 1, 0, &h, &err) == 0, "hello: %s", err.message);
    int listed[4] = {0};
    for (size_t i = 0; h && i < h->n_tasks; i++)
        for (int k = 0; k < 4; k++)
            listed[k] |= strcmp(h->tasks[i], names[k]) == 0;
    rsc_free(h);
    CHECK(!listed[1] && !listed[2] && listed[3], "Hello lists the new task, not the expired ones");
    rsc_close(&c);
    CHECK(server_stop(&sp) == 0, "clean stop");
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    const char *extra[] = {"--no-world", NULL};
    server_start_or_exit(&server, binary, extra);
    client = client_of(server.endpoint, 5000);
    hello_lists_tasks();
    create_refusals();
    episode_over_protocol();
    task_world_refuses_commands();
    declared_task_over_protocol();
    limits_over_protocol();
    non_finite_over_protocol();
    declared_quota_per_key();
    declared_tasks_expire(binary);
    rsc_close(&client);
    CHECK(server_stop(&server) == 0, "clean stop");
    return rs_test_done("test_tasks_net");
}
