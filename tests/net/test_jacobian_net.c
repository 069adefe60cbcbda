/* A Step's Jacobian through the real server and the C client (rsc_step_opts_t.jacobian): the
 * matrices' shapes and a column against differences of two Steps, the parameter columns by
 * name, a grazing touch reported as not differentiable, and the time-stepping formulation
 * refused with UNIMPLEMENTED while the server keeps serving. */
#include "rs_test.h"
#include "server_proc.h"

#include <string.h>

static server_proc_t server;
static rsc_client_t *client;

static const double TOL_R[] = {1e-13}, TOL_A[] = {1e-14}, ORDER[] = {8}, GAP[] = {0.004},
                    V1[] = {1.0};

/* A finger world about to touch its object; x_f0 its finger's start. */
static uint64_t finger(double x_f0, const double *model, rsc_error_t *err)
{
    rsc_param_t p[] = {{"", "rtol", TOL_R, 1},           {"", "atol", TOL_A, 1},
                       {"", "erk_order", ORDER, 1},      {"finger", "object_x0", GAP, 1},
                       {"finger", "finger_v0", V1, 1},   {"finger", "finger_x0", &x_f0, 1},
                       {"finger", "contact_model", model, 1}};
    uint64_t id = 0;
    int rc = rsc_create_world(client, "finger", p, model ? 7 : 6, 1, &id, err);
    CHECK(rc == 0, "create: %s", err->message);
    return id;
}

static Robosim__V1__State *step(uint64_t id, int jacobian, rsc_error_t *err)
{
    static const char *params[] = {"finger.restitution"};
    double force = 0.2;
    rsc_command_t cmd = {"finger", &force, 1};
    rsc_step_opts_t o = {.steps = 3, .cmds = &cmd, .ncmds = 1, .jacobian = jacobian,
                         .jacobian_params = jacobian ? params : NULL,
                         .njacobian_params = jacobian ? 1 : 0};
    Robosim__V1__State *s = NULL;
    if (rsc_step_with(client, id, &o, &s, err) != 0)
        return NULL;
    return s;
}

static void jacobian_against_differences(void)
{
    rsc_error_t err;
    Robosim__V1__State *s = step(finger(0.0, NULL, &err), 1, &err);
    CHECK(s && s->jacobian, "a Jacobian: %s", err.message);
    if (!s || !s->jacobian)
        return;
    const Robosim__V1__Jacobian *j = s->jacobian;
    CHECK(j->differentiable && j->n == 6 && j->m == 1 && j->n_state == 36 &&
              j->n_commands == 6 && j->n_params == 1 && j->n_param_columns == 6 &&
              strcmp(j->params[0], "finger.restitution") == 0,
          "shapes: n %u m %u", j->n, j->m);
    CHECK(s->n_events >= 2, "the Step crossed the touch (%zu events)", s->n_events);
    /* column x_f: two Steps from finger_x0 = -+h */
    const double h = 1e-5;
    Robosim__V1__State *a = step(finger(h, NULL, &err), 0, &err);
    Robosim__V1__State *b = step(finger(-h, NULL, &err), 0, &err);
    CHECK(a && b, "steps: %s", err.message);
    if (a && b) {
        double worst = 0;
        for (int i = 0; i < 6; i++) {
            double fd = (a->entities[0]->state[i] - b->entities[0]->state[i]) / (2 * h);
            worst = fmax(worst, fabs(fd - j->state[i * 6 + 0]));
        }
        CHECK(worst < 1e-6, "d x / d x_f(0) against differences: %g", worst);
    }
    rsc_free(a);
    rsc_free(b);
    rsc_free(s);
}

static void not_differentiable_and_refused(void)
{
    rsc_error_t err;
    static const double tiny[] = {1e-13};
    rsc_param_t p[] = {{"finger", "object_x0", tiny, 1}};
    uint64_t id = 0;
    CHECK(rsc_create_world(client, "finger", p, 1, 1, &id, &err) == 0, "%s", err.message);
    double force = 1.0;
    rsc_command_t cmd = {"finger", &force, 1};
    rsc_step_opts_t o = {.steps = 1, .cmds = &cmd, .ncmds = 1, .jacobian = 1};
    Robosim__V1__State *s = NULL;
    CHECK(rsc_step_with(client, id, &o, &s, &err) == 0, "%s", err.message);
    CHECK(s && s->jacobian && !s->jacobian->differentiable &&
              strstr(s->jacobian->not_differentiable, "grazing") && s->jacobian->n_state == 0,
          "grazing reported");
    rsc_free(s);
    static const double ts[] = {1.0};
    uint64_t tid = finger(0.0, ts, &err);
    s = step(tid, 1, &err);
    CHECK(!s && err.code == ROBOSIM__V1__ERROR_CODE__UNIMPLEMENTED &&
              strstr(err.message, "time_stepping"),
          "time stepping refused: %d %s", err.code, err.message);
    rsc_free(s);
    s = step(tid, 0, &err); /* and the server serves on */
    CHECK(s != NULL, "a plain step after: %s", err.message);
    rsc_free(s);
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    const char *extra[] = {"--no-world", NULL};
    server_start_or_exit(&server, binary, extra);
    client = client_of(server.endpoint, 5000);
    jacobian_against_differences();
    not_differentiable_and_refused();
    rsc_close(&client);
    CHECK(server_stop(&server) == 0, "clean stop");
    return rs_test_done("test_jacobian_net");
}
