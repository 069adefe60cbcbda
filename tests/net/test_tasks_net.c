/* Task worlds through the real server: Hello lists the tasks, CreateWorld with a task, GetSpec's
 * TaskSpec, Reset / Step / GetState carrying TaskStep, and every bad action or mix refused with
 * its specific code while the server keeps serving; a declared task registered and run. */
#include "rs_test.h"
#include "server_proc.h"

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name

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
    int n = 0, push = 0;
    for (size_t i = 0; h && i < h->n_tasks; i++, n++)
        push |= strcmp(h->tasks[i], "FingerPush-v0") == 0;
    CHECK(n == 12 && push, "HelloReply.tasks lists the twelve tasks (%d)", n);
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
    rsc_close(&client);
    CHECK(server_stop(&server) == 0, "clean stop");
    return rs_test_done("test_tasks_net");
}
