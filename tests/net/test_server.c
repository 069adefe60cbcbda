/* The protocol through the real server process on a loopback port: every operation, every kind
 * of bad input (each gets its specific error and the server keeps serving), two clients at once,
 * and a clean SIGTERM. */
#include "rs_test.h"
#include "server_proc.h"

#include <pthread.h>

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name

static server_proc_t server;

static rsc_client_t *connect_or_die(void)
{
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(server.endpoint, 2000, &err);
    CHECK(c != NULL, "connect: %s", err.message);
    if (!c)
        exit(1);
    return c;
}

/* The server still answers a plain request. */
static void still_serving(rsc_client_t *c)
{
    rsc_error_t err;
    Robosim__V1__ListWorldsReply *lw = NULL;
    int rc = rsc_list_worlds(c, &lw, &err);
    CHECK(rc == 0 && lw, "server stopped serving: %s", err.message);
    rsc_free(lw);
}

static void every_operation(void)
{
    rsc_client_t *c = connect_or_die();
    rsc_error_t err;
    Robosim__V1__HelloReply *hello = NULL;
    int rc = rsc_hello(c, 1, 0, &hello, &err);
    CHECK(rc == 0 && hello && hello->major == 1, "hello: %s", err.message);
    int has_step = 0, has_preset = 0;
    for (size_t i = 0; hello && i < hello->n_capabilities; i++)
        has_step |= strcmp(hello->capabilities[i], "step") == 0;
    for (size_t i = 0; hello && i < hello->n_presets; i++)
        has_preset |= strcmp(hello->presets[i], "diff_drive") == 0;
    CHECK(has_step && has_preset, "capabilities list step, presets list diff_drive");
    rsc_free(hello);

    /* the default world exists */
    Robosim__V1__ListWorldsReply *lw = NULL;
    rc = rsc_list_worlds(c, &lw, &err);
    CHECK(rc == 0 && lw && lw->n_worlds == 1 && lw->worlds[0]->world_id == 1 &&
              strcmp(lw->worlds[0]->preset, "workshop") == 0 && lw->worlds[0]->n_entities == 4,
          "default world 'workshop' listed: %s", err.message);
    rsc_free(lw);

    double obst[] = {3.00, 0, 0.10}; /* m */
    rsc_param_t p = {"robot", "obstacles", obst, 3};
    uint64_t id = 0;
    rc = rsc_create_world(c, "diff_drive", &p, 1, 42, &id, &err);
    CHECK(rc == 0 && id > 1, "create: %s", err.message);

    Robosim__V1__Spec *spec = NULL;
    rc = rsc_get_spec(c, id, &spec, &err);
    CHECK(rc == 0 && spec && spec->n_entities == 1, "spec: %s", err.message);
    if (spec && spec->n_entities == 1) {
        Robosim__V1__EntitySpec *es = spec->entities[0];
        CHECK(strcmp(es->name, "robot") == 0 && strcmp(es->kind, "diff_drive") == 0, "entity");
        CHECK(es->n_state == 3 && strcmp(es->state[2]->name, "theta") == 0, "state names");
        CHECK(es->n_actuators == 2 && strcmp(es->actuators[0]->unit, "rad/s") == 0, "actuators");
        CHECK(es->n_sensors >= 1 && strcmp(es->sensors[0]->name, "bumper") == 0, "sensors");
        int found = 0;
        for (size_t i = 0; i < es->n_params; i++)
            if (strcmp(es->params[i]->name, "obstacles") == 0)
                found = es->params[i]->n_values == 3 && es->params[i]->values[0] == 3.00;
        CHECK(found, "the obstacles override shows in the spec");
        CHECK(spec->world->control_dt == 0.01, "control_dt %g", spec->world->control_dt);
    }
    rsc_free(spec);

    double u[] = {3, 3};
    rc = rsc_set_force(c, id, "robot", u, 2, &err);
    CHECK(rc == 0, "set_force: %s", err.message);
    Robosim__V1__State *s = NULL;
    rc = rsc_step(c, id, 100, 0, NULL, 0, &s, &err);
    CHECK(rc == 0 && s, "step: %s", err.message);
    if (s) {
        /* v = r w = 0.09 m * 3 rad/s for 1 s (the chapter's 9 cm wheel radius, in m) */
        CHECK_REL(s->time, 1.0, 1e-12, 1.0);
        CHECK_REL(s->entities[0]->state[0], 0.27, 1e-9, 1.0);
        CHECK(s->step_count == 100 && s->world_id == id, "step count %llu",
              (unsigned long long)s->step_count);
        CHECK(s->entities[0]->n_commands == 2 && s->entities[0]->commands[0] == 3, "commands");
    }
    rsc_free(s);

    /* gym-style step: commands and a duration in one request */
    double turn[] = {2, -2};
    rsc_command_t cmd = {"robot", turn, 2};
    rc = rsc_step(c, id, 0, 0.5, &cmd, 1, &s, &err);
    CHECK(rc == 0 && s, "step with commands: %s", err.message);
    if (s) {
        /* thetadot = r/(2L)(w1 - w2) = 0.09/0.24 * 4 = 1.5 rad/s for 0.5 s */
        CHECK_REL(s->entities[0]->state[2], 0.75, 1e-9, 1.0);
        CHECK_REL(s->time, 1.5, 1e-12, 1.0);
    }
    rsc_free(s);

    rc = rsc_get_state(c, id, &s, &err);
    CHECK(rc == 0 && s && fabs(s->time - 1.5) < 1e-12, "get_state: %s", err.message);
    rsc_free(s);

    /* parameters change between steps */
    double r10[] = {0.10};
    rsc_param_t pr = {"robot", "wheel_radius", r10, 1};
    rc = rsc_set_params(c, id, &pr, 1, &err);
    CHECK(rc == 0, "set_params: %s", err.message);

    /* a schedule on the right wheel: ramp 0 -> 4 rad/s over 1 s, left wheel held at 0 */
    double zero[] = {0, 0};
    rsc_set_force(c, id, "robot", zero, 2, &err);
    double kt[] = {1.5, 2.5}, kv[] = {0, 4};
    rc = rsc_set_schedule(c, id, "robot", 0, kt, kv, 2, &err);
    CHECK(rc == 0, "set_schedule: %s", err.message);
    rc = rsc_step(c, id, 100, 0, NULL, 0, &s, &err);
    CHECK(rc == 0 && s, "step on a schedule: %s", err.message);
    if (s) {
        /* thetadot = r/(2L) w1(t), w1 = 4 (t - 1.5): theta gains 10/24 * 2 = 0.8333 */
        CHECK_REL(s->entities[0]->state[2], 0.75 + 10.0 / 24.0 * 2.0, 1e-8, 1.0);
        CHECK(s->entities[0]->commands[0] == 4, "schedule value at its end %g",
              s->entities[0]->commands[0]);
    }
    rsc_free(s);

    rc = rsc_reset(c, id, 1, 7, &s, &err);
    CHECK(rc == 0 && s && s->time == 0 && s->entities[0]->state[0] == 0, "reset: %s", err.message);
    rsc_free(s);

    rc = rsc_destroy_world(c, id, &err);
    CHECK(rc == 0, "destroy: %s", err.message);
    rc = rsc_get_state(c, id, &s, &err);
    CHECK(rc == CODE(NOT_FOUND), "state of a destroyed world: %d %s", rc, err.message);
    rsc_free(s);
    rsc_close(&c);
}

/* Expect `rc` to be `code` with a message, and the server to go on. */
#define EXPECT_ERR(c, rc, code, what)                                                          \
    do {                                                                                       \
        CHECK((rc) == (code) && err.message[0], "%s: got %d (%s), want %d", what, (rc),        \
              err.message, (code));                                                            \
        still_serving(c);                                                                      \
    } while (0)

static void bad_input(void)
{
    rsc_client_t *c = connect_or_die();
    rsc_error_t err;
    uint64_t id = 0;
    int rc = rsc_create_world(c, "diff_drive", NULL, 0, 1, &id, &err);
    CHECK(rc == 0, "create: %s", err.message);
    Robosim__V1__State *before = NULL;
    rsc_step(c, id, 3, 0, NULL, 0, &before, &err);

    rc = rsc_get_state(c, 9999, NULL, &err);
    EXPECT_ERR(c, rc, CODE(NOT_FOUND), "unknown world");
    rc = rsc_create_world(c, "no_such_preset", NULL, 0, 1, NULL, &err);
    EXPECT_ERR(c, rc, CODE(NOT_FOUND), "unknown preset");
    CHECK(strstr(err.message, "diff_drive") != NULL, "the message lists the presets: %s", err.message);

    /* bytes that are not a Request */
    const char garbage[] = "\xff\xff\xff\xff this is not protobuf";
    Robosim__V1__Response *resp = NULL;
    rc = rsc_send_raw(c, garbage, sizeof garbage, &resp, &err);
    CHECK(rc == CODE(MALFORMED) || (resp && resp->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR &&
                                    resp->error->code == CODE(MALFORMED)),
          "garbage: %d %s", rc, err.message);
    rsc_free(resp);
    still_serving(c);

    /* an operation this server does not know: field 39 of Request (length-delimited, empty) */
    const unsigned char unknown_op[] = {0x08, 0x07, 0xba, 0x02, 0x00};
    resp = NULL;
    rc = rsc_send_raw(c, unknown_op, sizeof unknown_op, &resp, &err);
    CHECK(resp && resp->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR &&
              resp->error->code == CODE(UNIMPLEMENTED) && resp->id == 7,
          "unknown op: rc %d", rc);
    rsc_free(resp);
    still_serving(c);
    /* no operation at all */
    const unsigned char no_op[] = {0x08, 0x08};
    resp = NULL;
    rsc_send_raw(c, no_op, sizeof no_op, &resp, &err);
    CHECK(resp && resp->error && resp->error->code == CODE(UNIMPLEMENTED), "empty op");
    rsc_free(resp);

    double nan2[] = {NAN, 1}, inf2[] = {INFINITY, 1}, three[] = {1, 2, 3}, huge[] = {1e6, 0};
    rc = rsc_set_force(c, id, "robot", nan2, 2, &err);
    EXPECT_ERR(c, rc, CODE(INVALID_ARGUMENT), "NaN command");
    rc = rsc_set_force(c, id, "robot", inf2, 2, &err);
    EXPECT_ERR(c, rc, CODE(INVALID_ARGUMENT), "infinite command");
    rc = rsc_set_force(c, id, "robot", three, 3, &err);
    EXPECT_ERR(c, rc, CODE(INVALID_ARGUMENT), "three values for two wheels");
    rc = rsc_set_force(c, id, "robot", three, 1, &err);
    EXPECT_ERR(c, rc, CODE(INVALID_ARGUMENT), "one value for two wheels");
    rc = rsc_set_force(c, id, "robot", huge, 2, &err);
    EXPECT_ERR(c, rc, CODE(OUT_OF_RANGE), "wheel speed beyond its bound");
    rc = rsc_set_force(c, id, "nobody", three, 2, &err);
    EXPECT_ERR(c, rc, CODE(NOT_FOUND), "unknown entity");
    rsc_command_t bad_cmd = {"robot", nan2, 2};
    rc = rsc_step(c, id, 1, 0, &bad_cmd, 1, NULL, &err);
    EXPECT_ERR(c, rc, CODE(INVALID_ARGUMENT), "NaN in a step's commands");

    rc = rsc_step(c, id, 0, -1.0, NULL, 0, NULL, &err);
    EXPECT_ERR(c, rc, CODE(INVALID_ARGUMENT), "negative duration");
    rc = rsc_step(c, id, 0, 0.0, NULL, 0, NULL, &err);
    EXPECT_ERR(c, rc, CODE(INVALID_ARGUMENT), "zero duration");
    rc = rsc_step(c, id, 0, NAN, NULL, 0, NULL, &err);
    EXPECT_ERR(c, rc, CODE(INVALID_ARGUMENT), "NaN duration");
    rc = rsc_step(c, id, 0, 1e300, NULL, 0, NULL, &err);
    EXPECT_ERR(c, rc, CODE(OUT_OF_RANGE), "absurd duration");
    rc = rsc_step(c, id, 4000000000u, 0, NULL, 0, NULL, &err);
    EXPECT_ERR(c, rc, CODE(OUT_OF_RANGE), "absurd step count");
    rc = rsc_step(c, id, 0, 0.015, NULL, 0, NULL, &err);
    EXPECT_ERR(c, rc, CODE(INVALID_ARGUMENT), "duration not a multiple of control_dt");
    /* protocol 1.2: steps and duration are a oneof, so the client cannot send both */
    rc = rsc_step(c, id, 2, 0.02, NULL, 0, NULL, &err);
    EXPECT_ERR(c, rc, RSC_EARG, "both steps and duration (refused by the client)");

    double one[] = {1}, neg[] = {-5}, two[] = {1, 2};
    rsc_param_t unknown = {"robot", "warp_drive", one, 1};
    rc = rsc_set_params(c, id, &unknown, 1, &err);
    EXPECT_ERR(c, rc, CODE(NOT_FOUND), "unknown parameter");
    rsc_param_t out_of_range = {"robot", "wheel_radius", neg, 1};
    rc = rsc_set_params(c, id, &out_of_range, 1, &err);
    EXPECT_ERR(c, rc, CODE(OUT_OF_RANGE), "negative wheel radius");
    rsc_param_t dt_bad = {"", "control_dt", neg, 1};
    rc = rsc_set_params(c, id, &dt_bad, 1, &err);
    EXPECT_ERR(c, rc, CODE(OUT_OF_RANGE), "negative control_dt");
    rsc_param_t wrong_count = {"robot", "half_axle", two, 2};
    rc = rsc_set_params(c, id, &wrong_count, 1, &err);
    EXPECT_ERR(c, rc, CODE(INVALID_ARGUMENT), "two values for a scalar");
    /* one good and one bad parameter: nothing is applied */
    rsc_param_t mixed[] = {{"robot", "half_axle", one, 1}, {"robot", "wheel_radius", neg, 1}};
    rc = rsc_set_params(c, id, mixed, 2, &err);
    EXPECT_ERR(c, rc, CODE(OUT_OF_RANGE), "a good and a bad parameter");
    Robosim__V1__Spec *spec = NULL;
    rsc_get_spec(c, id, &spec, &err);
    for (size_t i = 0; spec && i < spec->entities[0]->n_params; i++)
        if (strcmp(spec->entities[0]->params[i]->name, "half_axle") == 0)
            CHECK(spec->entities[0]->params[i]->values[0] == 0.12, "half_axle unchanged: %g",
                  spec->entities[0]->params[i]->values[0]);
    rsc_free(spec);

    double dec_t[] = {1, 0.5}, v2[] = {1, 1};
    rc = rsc_set_schedule(c, id, "robot", 0, dec_t, v2, 2, &err);
    EXPECT_ERR(c, rc, CODE(INVALID_ARGUMENT), "schedule times decreasing");
    rc = rsc_set_schedule(c, id, "robot", 5, v2, v2, 2, &err);
    EXPECT_ERR(c, rc, CODE(NOT_FOUND), "schedule on actuator 5");

    rc = rsc_set_target(c, id, "robot", two, 2, &err);
    EXPECT_ERR(c, rc, CODE(UNIMPLEMENTED), "a target for a robot without task space");

    /* none of this changed the world */
    Robosim__V1__State *after = NULL;
    rsc_get_state(c, id, &after, &err);
    CHECK(before && after && before->time == after->time &&
              memcmp(before->entities[0]->state, after->entities[0]->state, 3 * sizeof(double)) == 0 &&
              after->entities[0]->commands[0] == 0,
          "the world is unchanged by refused requests");
    rsc_free(before);
    rsc_free(after);

    /* a client of another major version is refused, naming both */
    rsc_client_t *raw = rsc_connect_raw(server.endpoint, 2000, &err);
    rc = rsc_hello(raw, 2, 0, NULL, &err);
    char ours[32];
    snprintf(ours, sizeof ours, "%d.%d", RSC_PROTOCOL_MAJOR, RSC_PROTOCOL_MINOR);
    CHECK(rc == CODE(VERSION_MISMATCH) && strstr(err.message, "2.0") && strstr(err.message, ours),
          "version refused: %d %s", rc, err.message);
    rsc_close(&raw);

    rsc_destroy_world(c, id, &err);
    still_serving(c);
    rsc_close(&c);
}

/* Two clients stepping their own worlds at the same time each see only their own replies. */
typedef struct { int ok, bad; double speed; } client_run_t;

static void *client_thread(void *arg)
{
    client_run_t *run = arg;
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(server.endpoint, 2000, &err);
    if (!c) {
        run->bad++;
        return NULL;
    }
    uint64_t id;
    if (rsc_create_world(c, "diff_drive", NULL, 0, 0, &id, &err) != 0) {
        run->bad++;
        rsc_close(&c);
        return NULL;
    }
    double u[] = {run->speed, run->speed};
    rsc_set_force(c, id, "robot", u, 2, &err);
    for (int k = 1; k <= 200; k++) {
        Robosim__V1__State *s = NULL;
        int rc = rsc_step(c, id, 1, 0, NULL, 0, &s, &err);
        /* my world, my time, my speed: x = r w t */
        if (rc == 0 && s && s->world_id == id && s->step_count == (uint64_t)k &&
            fabs(s->entities[0]->state[0] - 0.09 * run->speed * 0.01 * k) < 1e-11)
            run->ok++;
        else
            run->bad++;
        rsc_free(s);
    }
    rsc_destroy_world(c, id, &err);
    rsc_close(&c);
    return NULL;
}

static void two_clients(void)
{
    client_run_t a = {0, 0, 1.0}, b = {0, 0, 2.0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, client_thread, &a);
    pthread_create(&tb, NULL, client_thread, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.ok == 200 && a.bad == 0, "client a: %d ok, %d wrong", a.ok, a.bad);
    CHECK(b.ok == 200 && b.bad == 0, "client b: %d ok, %d wrong", b.ok, b.bad);
}

/* Protocol 1.2: Step.parts cut the reply to what was asked; Reset reseeds only when the seed is
 * set (the oneof), also with seed 0; the workshop's base poses; a task world stepped with
 * rsc_step_action. */
static void protocol_1_2(void)
{
    rsc_client_t *c = connect_or_die();
    rsc_error_t err;
    uint64_t id = 0;
    double obst[] = {0.5, 0, 0.1}; /* m: contact when x = 0.5 - 0.25, at t = 0.25 / 0.27 s */
    rsc_param_t p = {"robot", "obstacles", obst, 3};
    int rc = rsc_create_world(c, "diff_drive", &p, 1, 0, &id, &err);
    CHECK(rc == 0, "create: %s", err.message);
    double u[] = {3, 3};
    rsc_command_t cmd = {"robot", u, 2};
    Robosim__V1__StatePart only_events[] = {ROBOSIM__V1__STATE_PART__STATE_PART_EVENTS};
    rsc_step_opts_t o = {.steps = 100, .cmds = &cmd, .ncmds = 1, .parts = only_events,
                         .nparts = 1};
    Robosim__V1__State *s = NULL;
    rc = rsc_step_with(c, id, &o, &s, &err);
    CHECK(rc == 0 && s, "step with parts: %s", err.message);
    if (s) {
        CHECK(s->n_entities == 0 && !s->stats && !s->task && s->step_count == 100 &&
                  fabs(s->time - 1.0) < 1e-12,
              "events only: %zu entities, stats %p", s->n_entities, (void *)s->stats);
        CHECK(s->n_events == 1 && !strcmp(s->events[0]->kind, "contact") &&
                  fabs(s->events[0]->time - 0.25 / 0.27) < 1e-9,
              "the contact event at 0.25 m / 0.27 m/s: %zu events", s->n_events);
    }
    rsc_free(s);
    Robosim__V1__StatePart sensors_stats[] = {ROBOSIM__V1__STATE_PART__STATE_PART_SENSORS,
                                              ROBOSIM__V1__STATE_PART__STATE_PART_STATS};
    rsc_step_opts_t o2 = {.steps = 1, .parts = sensors_stats, .nparts = 2};
    rc = rsc_step_with(c, id, &o2, &s, &err);
    CHECK(rc == 0 && s && s->n_entities == 1 && s->entities[0]->n_state == 0 &&
              s->entities[0]->n_commands == 0 && s->entities[0]->n_sensors == 2 &&
              s->entities[0]->sensors[0] == 1.0 && s->stats && s->n_events == 0 &&
              !strcmp(s->entities[0]->name, "robot"),
          "sensors and stats only: %s", err.message);
    rsc_free(s);
    Robosim__V1__StatePart bad[] = {(Robosim__V1__StatePart)9};
    rsc_step_opts_t o3 = {.steps = 1, .parts = bad, .nparts = 1};
    rc = rsc_step_with(c, id, &o3, &s, &err);
    EXPECT_ERR(c, rc, CODE(INVALID_ARGUMENT), "an unknown part");
    rc = rsc_get_state(c, id, &s, &err);
    CHECK(rc == 0 && s && s->step_count == 101 && s->n_entities == 1 && s->stats,
          "the refused Step stepped nothing; GetState carries everything: %s", err.message);
    rsc_free(s);

    /* the workshop: four robots in one world frame, base poses in its spec */
    Robosim__V1__Spec *spec = NULL;
    rc = rsc_get_spec(c, 1, &spec, &err);
    CHECK(rc == 0 && spec && spec->n_entities == 4, "workshop spec: %s", err.message);
    static const struct { const char *name; double x, y; } poses[] = {
        {"finger", -1.0, 0.0}, {"arm", 0.0, 0.0}, {"delta", 0.5, 0.0}, {"robot", 0.0, -1.0}};
    for (size_t e = 0; spec && e < spec->n_entities; e++) {
        const Robosim__V1__EntitySpec *es = spec->entities[e];
        CHECK(es->n_base_pose == 3 && !strcmp(es->name, poses[e].name) &&
                  es->base_pose[0] == poses[e].x && es->base_pose[1] == poses[e].y &&
                  es->base_pose[2] == 0.0,
              "base pose of %s", es->name);
    }
    rsc_free(spec);

    /* a Reset with seed 0 reseeds (1.1's use_seed flag is now "seed is set") */
    uint64_t task = 0;
    rc = rsc_create_task_world(c, "DiffDriveGoal-v0", NULL, NULL, 0, 5, &task, &err);
    CHECK(rc == 0, "task world: %s", err.message);
    Robosim__V1__State *a = NULL, *b = NULL, *z = NULL;
    rsc_reset(c, task, 0, 0, &a, &err); /* the last seed, 5 */
    rsc_reset(c, task, 1, 0, &z, &err); /* seed 0 */
    rsc_reset(c, task, 0, 0, &b, &err); /* the last seed, now 0 */
    CHECK(a && z && b && a->task && z->task && b->task &&
              a->task->observation[0] != z->task->observation[0] &&
              z->task->observation[0] == b->task->observation[0],
          "seed 0 is a seed: %s", err.message);
    double action[] = {2, 2};
    rc = rsc_step_action(c, task, 1, action, 2, &s, &err);
    CHECK(rc == 0 && s && s->task && s->task->n_observation == 10 && s->step_count == 1 &&
              fabs(hypot(s->task->observation[0] - b->task->observation[0],
                         s->task->observation[1] - b->task->observation[1]) -
                   0.018) < 1e-9,
          "rsc_step_action: 0.09 m * 2 rad/s * 0.1 s = 0.018 m ahead: %s", err.message);
    rsc_free(s);
    rsc_free(a);
    rsc_free(b);
    rsc_free(z);
    rsc_destroy_world(c, task, &err);
    rsc_destroy_world(c, id, &err);
    rsc_close(&c);
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    CHECK(server_start(&server, binary, NULL) == 0, "server did not start on %s", server.endpoint);
    if (server.pid <= 0)
        return rs_test_done("test_server");
    every_operation();
    bad_input();
    two_clients();
    protocol_1_2();
    CHECK(server_stop(&server) == 0, "server exits 0 on SIGTERM");
    return rs_test_done("test_server");
}
