/* The finger (the 1D Robot article) and the arms (the Example Robotic Systems chapter) through the
 * real server: presets, commands, schedules, targets, workspace, the workshop world, and bad input
 * refused with the world left as it was. Physics is checked against closed forms. */
#include "rs_test.h"
#include "server_proc.h"

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name

static server_proc_t server;
static rsc_client_t *c;
static rsc_error_t err;

static int index_of(Robosim__V1__VarSpec **v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i]->name, name) == 0)
            return (int)i;
    return -1;
}

static Robosim__V1__EntitySpec *entity_spec(Robosim__V1__Spec *spec, const char *name)
{
    for (size_t i = 0; spec && i < spec->n_entities; i++)
        if (strcmp(spec->entities[i]->name, name) == 0)
            return spec->entities[i];
    return NULL;
}

static double param_value(Robosim__V1__EntitySpec *es, const char *name, int i)
{
    for (size_t k = 0; es && k < es->n_params; k++)
        if (strcmp(es->params[k]->name, name) == 0 && (size_t)i < es->params[k]->n_values)
            return es->params[k]->values[i];
    return NAN;
}

/* Pushing from rest with quadratic drag: x = (m/c) ln cosh(sqrt(F c) t / m) reaches the object
 * at x_o = 1.5 m at t = (m / sqrt(F c)) acosh(exp(1.5 c / m)). */
static void finger_touch_time(void)
{
    uint64_t id;
    int rc = rsc_create_world(c, "finger", NULL, 0, 1, &id, &err);
    CHECK(rc == 0, "create finger: %s", err.message);
    Robosim__V1__Spec *spec = NULL;
    rsc_get_spec(c, id, &spec, &err);
    Robosim__V1__EntitySpec *es = entity_spec(spec, "finger");
    CHECK(es && es->n_actuators == 1 && strcmp(es->actuators[0]->unit, "N") == 0, "finger spec");
    int ixf = es ? index_of(es->state, es->n_state, "x_f") : -1;
    int ixo = es ? index_of(es->state, es->n_state, "x_o") : -1;
    int ivf = es ? index_of(es->state, es->n_state, "v_f") : -1;
    int itip = es ? index_of(es->sensors, es->n_sensors, "tip_force") : -1;
    CHECK(ixf >= 0 && ixo >= 0 && ivf >= 0 && itip >= 0, "state and sensor names");
    CHECK(param_value(es, "static_friction", 0) == 1.0 && param_value(es, "restitution", 0) == 0.5,
          "the preset's defaults");
    rsc_free(spec);

    double F = 2.0;
    rc = rsc_set_force(c, id, "finger", &F, 1, &err);
    CHECK(rc == 0, "set force: %s", err.message);
    double t_touch = acosh(exp(1.5)) / sqrt(2.0), seen = NAN;
    int touches = 0;
    Robosim__V1__State *s = NULL;
    for (int k = 0; k < 200; k++) {
        rsc_free(s);
        s = NULL;
        rc = rsc_step(c, id, 1, 0, NULL, 0, &s, &err);
        if (rc != 0 || !s)
            break;
        for (size_t i = 0; i < s->n_events; i++)
            if (strcmp(s->events[i]->kind, "touch") == 0 && touches++ == 0) {
                seen = s->events[i]->time;
                CHECK(s->events[i]->n_before == s->events[i]->n_after && s->events[i]->n_before >= 4,
                      "touch carries the velocities before and after");
            }
        /* closed form before the touch */
        if (!touches) {
            double t = s->time;
            CHECK_REL(s->entities[0]->state[ixf], log(cosh(sqrt(2.0) * t)), 1e-7, 1e-3);
        }
    }
    CHECK(rc == 0, "stepping: %s", err.message);
    CHECK(touches >= 1 && fabs(seen - t_touch) <= 1e-8 * t_touch,
          "touch at %.15g, closed form %.15g", seen, t_touch);
    if (s) {
        CHECK(s->entities[0]->state[ixo] - s->entities[0]->state[ixf] >= -1e-9, "no overlap");
        CHECK(strlen(s->entities[0]->mode) > 0, "a mode is reported: %s", s->entities[0]->mode);
        CHECK(isfinite(s->entities[0]->sensors[itip]), "the sensor reads");
    }
    rsc_free(s);
    rsc_destroy_world(c, id, &err);
}

/* A force just below F_static + drag presses without moving anything: the tip reads F_a. */
static void finger_press_and_schedule(void)
{
    /* the finger starts on the object's face (no impact) and presses with 0.9 N < F_static */
    uint64_t id;
    double on_face = 1.5;
    rsc_param_t start = {"finger", "finger_x0", &on_face, 1};
    int rc0 = rsc_create_world(c, "finger", &start, 1, 1, &id, &err);
    CHECK(rc0 == 0, "create: %s", err.message);
    double F = 0.9;
    rsc_set_force(c, id, "finger", &F, 1, &err);
    Robosim__V1__State *s = NULL;
    int rc = rsc_step(c, id, 0, 20.0, NULL, 0, &s, &err);
    CHECK(rc == 0 && s, "step 20 s: %s", err.message);
    if (s) {
        const double *x = s->entities[0]->state;
        CHECK(fabs(x[2] - 1.5) < 1e-12, "the object has not moved: x_o = %.15g", x[2]);
        CHECK(fabs(x[1]) < 1e-9 && fabs(x[3]) < 1e-12, "both at rest");
        CHECK(fabs(s->entities[0]->sensors[0] - 0.9) < 1e-9, "tip reads F_a - D_f = 0.9, got %.12g",
              s->entities[0]->sensors[0]);
        CHECK(strstr(s->entities[0]->mode, "stuck") != NULL, "mode %s", s->entities[0]->mode);
    }
    rsc_free(s);

    /* a schedule ramps the force through F_static: the object breaks away when F_a = 1 N */
    double times[] = {20.0, 21.0}, values[] = {0.9, 1.9};
    rc = rsc_set_schedule(c, id, "finger", 0, times, values, 2, &err);
    CHECK(rc == 0, "schedule: %s", err.message);
    rc = rsc_step(c, id, 0, 1.0, NULL, 0, &s, &err);
    CHECK(rc == 0 && s, "step on the schedule: %s", err.message);
    int slipped = 0;
    for (size_t i = 0; s && i < s->n_events; i++)
        if (strcmp(s->events[i]->kind, "slip") == 0) {
            slipped = 1;
            CHECK(fabs(s->events[i]->time - 20.1) < 1e-9, "slip when F_a reaches 1 N: t = %.15g",
                  s->events[i]->time);
        }
    CHECK(slipped, "the object slips on the ramp");
    CHECK(s && s->entities[0]->commands[0] == 1.9, "the schedule's last value holds");
    rsc_free(s);

    /* bad input: nothing changes */
    Robosim__V1__State *before = NULL, *after = NULL;
    rsc_get_state(c, id, &before, &err);
    double nan = NAN;
    CHECK(rsc_set_force(c, id, "finger", &nan, 1, &err) == CODE(INVALID_ARGUMENT), "NaN force");
    double dec_t[] = {3, 2}, v2[] = {0, 1}, nan_t[] = {1, NAN};
    CHECK(rsc_set_schedule(c, id, "finger", 0, dec_t, v2, 2, &err) == CODE(INVALID_ARGUMENT),
          "decreasing schedule times: %s", err.message);
    CHECK(rsc_set_schedule(c, id, "finger", 0, nan_t, v2, 2, &err) == CODE(INVALID_ARGUMENT),
          "NaN schedule time");
    CHECK(rsc_set_schedule(c, id, "finger", 0, v2, nan_t, 2, &err) == CODE(INVALID_ARGUMENT),
          "NaN schedule value");
    double neg = -1, big = 2, half = 0.5;
    rsc_param_t bad[][1] = {{{"finger", "finger_mass", &neg, 1}}, {{"finger", "static_friction", &neg, 1}},
                           {{"finger", "kinetic_friction", &big, 1}}, {{"finger", "restitution", &big, 1}},
                           {{"finger", "restitution", &neg, 1}}};
    int want[] = {CODE(OUT_OF_RANGE), CODE(OUT_OF_RANGE), CODE(INVALID_ARGUMENT), CODE(OUT_OF_RANGE),
                  CODE(OUT_OF_RANGE)};
    for (int i = 0; i < 5; i++) {
        rc = rsc_set_params(c, id, bad[i], 1, &err);
        CHECK(rc == want[i] && err.message[0], "bad param %d: %d %s", i, rc, err.message);
    }
    /* F_kinetic > F_static in one request with a good change: neither applies */
    rsc_param_t mixed[] = {{"finger", "restitution", &half, 1}, {"finger", "kinetic_friction", &big, 1}};
    CHECK(rsc_set_params(c, id, mixed, 2, &err) == CODE(INVALID_ARGUMENT), "F_k > F_s refused");
    rsc_get_state(c, id, &after, &err);
    CHECK(before && after && before->time == after->time &&
              memcmp(before->entities[0]->state, after->entities[0]->state,
                     before->entities[0]->n_state * sizeof(double)) == 0 &&
              before->entities[0]->commands[0] == after->entities[0]->commands[0],
          "the world is unchanged by refused requests");
    Robosim__V1__Spec *spec = NULL;
    rsc_get_spec(c, id, &spec, &err);
    Robosim__V1__EntitySpec *es = entity_spec(spec, "finger");
    CHECK(param_value(es, "kinetic_friction", 0) == 0.5 && param_value(es, "finger_mass", 0) == 1.0,
          "parameters unchanged");
    rsc_free(spec);
    rsc_free(before);
    rsc_free(after);
    rsc_destroy_world(c, id, &err);
}

static void serial_arm(void)
{
    uint64_t id;
    int rc = rsc_create_world(c, "serial_arm", NULL, 0, 1, &id, &err);
    CHECK(rc == 0, "create serial_arm: %s", err.message);
    Robosim__V1__Spec *spec = NULL;
    rsc_get_spec(c, id, &spec, &err);
    Robosim__V1__EntitySpec *es = entity_spec(spec, "arm");
    int ix = es ? index_of(es->sensors, es->n_sensors, "x") : -1;
    int iy = es ? index_of(es->sensors, es->n_sensors, "y") : -1;
    double a1 = param_value(es, "a1", 0), a2 = param_value(es, "a2", 0);
    CHECK(ix >= 0 && iy >= 0 && a1 > 0 && a2 > 0, "arm spec");
    rsc_free(spec);

    /* the chapter's IK example, scaled to the arm: (10, 8) with a1 = 15, a2 = 10 */
    double s = a1 / 15.0, target[] = {10 * s, 8 * s, 1};
    rc = rsc_set_target(c, id, "arm", target, 3, &err);
    CHECK(rc == 0, "set target: %s", err.message);
    Robosim__V1__State *st = NULL;
    rc = rsc_get_state(c, id, &st, &err);
    if (st) {
        /* the setpoints are the chapter's angles */
        CHECK(fabs(remainder(st->entities[0]->commands[0] - 1.394087, 2 * M_PI)) < 1e-6 &&
                  fabs(remainder(st->entities[0]->commands[1] + 2.137278, 2 * M_PI)) < 1e-6,
              "IK setpoints %.7f %.7f", st->entities[0]->commands[0], st->entities[0]->commands[1]);
    }
    rsc_free(st);
    rc = rsc_step(c, id, 0, 10.0, NULL, 0, &st, &err);
    CHECK(rc == 0 && st, "step 10 s: %s", err.message);
    if (st && ix >= 0) {
        double ex = st->entities[0]->sensors[ix], ey = st->entities[0]->sensors[iy];
        CHECK(hypot(ex - target[0], ey - target[1]) < 2e-3, "PID reached (%g, %g): at (%g, %g)",
              target[0], target[1], ex, ey);
    }
    rsc_free(st);

    /* unreachable: refused, commands unchanged */
    Robosim__V1__State *before = NULL, *after = NULL;
    rsc_get_state(c, id, &before, &err);
    double far[] = {1.0, 0.0, 1};
    rc = rsc_set_target(c, id, "arm", far, 3, &err);
    CHECK(rc == CODE(OUT_OF_RANGE) && strstr(err.message, "0.05") && strstr(err.message, "0.25"),
          "an unreachable target is refused with the annulus: %s", err.message);
    double nan_t[] = {NAN, 0.1, 1}, one[] = {0.1};
    CHECK(rsc_set_target(c, id, "arm", nan_t, 3, &err) == CODE(INVALID_ARGUMENT), "NaN target");
    CHECK(rsc_set_target(c, id, "arm", one, 1, &err) == CODE(INVALID_ARGUMENT), "one value target");
    CHECK(rsc_set_target(c, id, "hand", far, 3, &err) == CODE(NOT_FOUND), "unknown entity");
    double three[] = {0, 0, 0};
    CHECK(rsc_set_force(c, id, "arm", three, 3, &err) == CODE(INVALID_ARGUMENT), "three joints");
    double mins[] = {1, 1}, maxs[] = {0, 0};
    rsc_param_t limits[] = {{"arm", "theta_min", mins, 2}, {"arm", "theta_max", maxs, 2}};
    rc = rsc_set_params(c, id, limits, 2, &err);
    CHECK(rc != 0 && err.message[0], "limits with min > max refused: %d", rc);
    rsc_get_state(c, id, &after, &err);
    CHECK(before && after &&
              memcmp(before->entities[0]->commands, after->entities[0]->commands, 2 * sizeof(double)) == 0,
          "commands unchanged");
    rsc_free(before);
    rsc_free(after);

    /* workspace: the annulus */
    double q[] = {0.2, 0.0, 0.3, 0.0, 0.01, 0.0};
    Robosim__V1__WorkspaceReply *ws = NULL;
    rc = rsc_get_workspace(c, id, "arm", 64, q, 3, &ws, &err);
    CHECK(rc == 0 && ws && ws->n_reachable == 3 && ws->reachable[0] && !ws->reachable[1] &&
              !ws->reachable[2],
          "reachable queries: %s", err.message);
    CHECK(ws && ws->n_boundary >= 2 * 32, "boundary samples: %zu", ws ? ws->n_boundary : 0);
    for (size_t i = 0; ws && i + 1 < ws->n_boundary; i += 2) {
        double r = hypot(ws->boundary[i], ws->boundary[i + 1]);
        CHECK(r < a1 + a2 + 1e-9 && r > fabs(a1 - a2) - 1e-9, "boundary point at r = %g", r);
    }
    rsc_free(ws);
    rsc_destroy_world(c, id, &err);
}

static void parallel_arm(void)
{
    uint64_t id;
    int rc = rsc_create_world(c, "parallel_arm", NULL, 0, 1, &id, &err);
    CHECK(rc == 0, "create parallel_arm: %s", err.message);
    /* the chapter's example point: x = 0.2, y = 0.1 x + 10 (cm), in metres */
    double target[] = {0.002, 0.1002};
    rc = rsc_set_target(c, id, "delta", target, 2, &err);
    CHECK(rc == 0, "parallel target: %s", err.message);
    Robosim__V1__State *st = NULL;
    rc = rsc_step(c, id, 0, 10.0, NULL, 0, &st, &err);
    CHECK(rc == 0 && st, "step: %s", err.message);
    if (st) {
        const double *sn = st->entities[0]->sensors;
        CHECK(hypot(sn[0] - target[0], sn[1] - target[1]) < 2e-3, "reached (%g, %g)", sn[0], sn[1]);
        for (size_t i = 0; i < st->entities[0]->n_state; i++)
            CHECK(isfinite(st->entities[0]->state[i]), "state %zu finite", i);
    }
    rsc_free(st);
    double far[] = {0.0, 1.0};
    rc = rsc_set_target(c, id, "delta", far, 2, &err);
    CHECK(rc == CODE(OUT_OF_RANGE) && err.message[0], "outside the workspace: %d %s", rc, err.message);
    rsc_destroy_world(c, id, &err);
}

/* The default world: every robot side by side, addressed by entity name. */
static void workshop(void)
{
    Robosim__V1__Spec *spec = NULL;
    int rc = rsc_get_spec(c, 1, &spec, &err);
    CHECK(rc == 0 && spec && spec->n_entities == 4, "workshop spec: %s", err.message);
    const char *names[] = {"finger", "arm", "delta", "robot"};
    for (int i = 0; i < 4; i++)
        CHECK(entity_spec(spec, names[i]) != NULL, "workshop has '%s'", names[i]);
    rsc_free(spec);
    uint64_t id;
    rsc_create_world(c, "workshop", NULL, 0, 3, &id, &err);
    double F = 2.0, wheels[] = {3, 3};
    rsc_command_t cmds[] = {{"finger", &F, 1}, {"robot", wheels, 2}};
    Robosim__V1__State *st = NULL;
    rc = rsc_step(c, id, 100, 0, cmds, 2, &st, &err);
    CHECK(rc == 0 && st && st->n_entities == 4, "workshop step: %s", err.message);
    for (size_t e = 0; st && e < st->n_entities; e++) {
        if (strcmp(st->entities[e]->name, "robot") == 0)
            CHECK_REL(st->entities[e]->state[0], 0.27, 1e-9, 1.0); /* 0.09 m * 3 rad/s * 1 s */
        if (strcmp(st->entities[e]->name, "finger") == 0)
            CHECK_REL(st->entities[e]->state[0], log(cosh(sqrt(2.0) * 1.0)), 1e-7, 1e-3);
    }
    rsc_free(st);
    rsc_destroy_world(c, id, &err);
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    CHECK(server_start(&server, binary, NULL) == 0, "server did not start on %s", server.endpoint);
    if (server.pid <= 0)
        return rs_test_done("test_robots_net");
    c = rsc_connect(server.endpoint, 5000, &err);
    CHECK(c != NULL, "connect: %s", err.message);
    if (c) {
        finger_touch_time();
        finger_press_and_schedule();
        serial_arm();
        parallel_arm();
        workshop();
        rsc_close(&c);
    }
    CHECK(server_stop(&server) == 0, "server exits 0 on SIGTERM");
    return rs_test_done("test_robots_net");
}
