/* What a client can send that reaches a robot never crashes the core (run under ASan/UBSan):
 * every parameter of every robot at its lower bound, its upper bound and between (vectors at
 * their longest), each world then driven with actuator commands at their bounds, a schedule
 * across them, task-space targets far out and at the origin, and workspace queries. Each call
 * either works or returns one of the documented codes; worlds allow 200 integrator steps per
 * control step, so that a stiff corner fails fast (RS_ESIMFAIL) instead of running long. */
#include "rs_robot.h"
#include "rs_test.h"

#include <string.h>

static int documented(int rc)
{
    return rc == 0 || rc == RS_EINVAL || rc == RS_ERANGE || rc == RS_ENOTFOUND ||
           rc == RS_EPRECOND || rc == RS_ESIMFAIL || rc == RS_EUNIMPL;
}

static int worlds, refused, failed_steps;

static void drive(rs_world_t *w, const char *what)
{
    const rs_model_t *m = w->model;
    rs_status_t st;
    for (int side = 0; side < 2; side++) {
        for (int e = 0; e < m->nentities; e++) {
            const rs_robot_t *r = m->ent[e].robot;
            double u[RS_MAX_ACTUATORS];
            for (int a = 0; a < r->nu; a++)
                u[a] = side ? r->actuators[a].upper : r->actuators[a].lower;
            int rc = rs_set_commands(m, w->data, e, u, (size_t)r->nu, &st);
            CHECK(rc == 0, "%s: commands at the bounds: %s", what, st.message);
        }
        int rc = rs_step(m, w->data, 3, &st);
        CHECK(documented(rc), "%s: step: %d %s", what, rc, st.message);
        failed_steps += rc < 0;
    }
    for (int e = 0; e < m->nentities; e++) {
        const rs_robot_t *r = m->ent[e].robot;
        double t[3] = {w->data->t, w->data->t + 0.005, w->data->t + 1e6};
        double v[3] = {r->actuators[0].lower, r->actuators[0].upper, 0.0};
        int rc = rs_set_schedule(m, w->data, e, 0, t, v, 3, &st);
        CHECK(rc == 0, "%s: schedule across the bounds: %s", what, st.message);
        static const double targets[][3] = {{1e300, -1e300, 1}, {0, 0, -1}, {1e-300, 0, 1},
                                            {0.1, 0.1, 1}, {-5, 7, -1}};
        for (int k = 0; k < 5; k++)
            for (int n = 0; n <= 3; n++) {
                rc = rs_set_target(m, w->data, e, targets[k], (size_t)n, &st);
                CHECK(documented(rc), "%s: target %d of %d values: %d %s", what, k, n, rc,
                      st.message);
            }
        double xy[2 * 64];
        rc = rs_workspace(m, e, xy, 64, &st);
        CHECK(documented(rc) || rc >= 0, "%s: workspace: %d", what, rc);
        rs_reachable(m, e, 1e300, -1e300);
        rs_reachable(m, e, 0, 0);
    }
    int rc = rs_step(m, w->data, 2, &st);
    CHECK(documented(rc), "%s: step with schedules and targets: %d %s", what, rc, st.message);
    failed_steps += rc < 0;
}

static void preset_extremes(const char *preset)
{
    rs_status_t st;
    rs_world_t *probe = rs_world_new(preset, NULL, 0, 1, &st);
    CHECK(probe != NULL, "%s: %s", preset, st.message);
    if (!probe)
        return;
    for (int e = 0; e < probe->model->nentities; e++) {
        const rs_entity_model_t *em = &probe->model->ent[e];
        const rs_robot_t *r = em->robot;
        for (int i = 0; i < r->np; i++) {
            const rs_param_desc_t *pd = &r->params[i];
            double picks[3] = {pd->lower, pd->upper, 0.5 * (pd->lower + pd->upper)};
            for (int k = 0; k < 3; k++) {
                double vals[RS_MAX_PARAM_VALUES], cap = 200;
                int n = pd->len_max > 0 ? pd->len_max : 1;
                for (int j = 0; j < n; j++)
                    vals[j] = picks[k];
                rs_param_t p[2] = {{em->name, pd->name, vals, (size_t)n},
                                   {"", "max_internal_steps", &cap, 1}};
                char what[128];
                snprintf(what, sizeof what, "%s.%s = %g (x%d)", em->name, pd->name, picks[k], n);
                rs_world_t *w = rs_world_new(preset, p, 2, 7, &st);
                if (!w) {
                    CHECK(documented(st.code), "%s: refused with %d %s", what, st.code,
                          st.message);
                    refused++;
                    continue;
                }
                worlds++;
                drive(w, what);
                rs_world_destroy(&w);
            }
        }
    }
    rs_world_destroy(&probe);
}

int main(void)
{
    static const char *const presets[] = {"finger", "serial_arm", "parallel_arm", "diff_drive"};
    for (int i = 0; i < 4; i++)
        preset_extremes(presets[i]);
    printf("%d worlds built at parameter extremes and driven at the actuator bounds (%d steps "
           "ended in a simulation failure), %d parameter sets refused\n",
           worlds, failed_steps, refused);
    CHECK(worlds > 100, "the extremes were exercised (%d worlds)", worlds);
    return rs_test_done("test_extremes");
}
