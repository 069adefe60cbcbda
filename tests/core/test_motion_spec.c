/* Motion specifications (the dual-arm alignment tutorial): every bad specification in the table
 * gets its specific error naming the entity; a good one evaluates the tutorial's formulas (the
 * tube's piecewise error, the decaying-integral PID) and maps its force through the robot (closed
 * forms, computed here independently); the examples in examples/specs load. */
#include "rs_core.h"
#include "rs_limits.h"
#include "rs_motion_spec.h"
#include "rs_data.h"
#include "motion_spec_fixture.h"
#include "rs_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the right arm's distance tube driving the base (scenario 1's distance part), minimal */
static const char *base_spec = RS_TEST_BASE_SPEC;

/* base_spec with the first `from` replaced by `to` (a new string; the caller frees it) */
static char *edit(const char *from, const char *to)
{
    const char *at = strstr(base_spec, from);
    CHECK(at != NULL, "the base specification contains '%s'", from);
    if (!at)
        return strdup(base_spec);
    size_t n = strlen(base_spec) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%s", (int)(at - base_spec), base_spec, to, at + strlen(from));
    return s;
}

static void bad_specs(const rs_model_t *m)
{
    static const struct {
        const char *name, *from, *to;
        int code;
        const char *says; /* a piece of the message: names the entity and the reason */
    } table[] = {
        {"dangling reference", "\"quantity\": \"dist\"", "\"quantity\": \"nope\"", RS_EINVAL,
         "entity 'cstr': 'quantity' refers to 'nope', which is not in the document"},
        {"type mismatch", "\"LinearDistanceConstraint\"", "\"LinearVelocityConstraint\"", RS_EINVAL,
         "entity 'cstr': a LinearVelocityConstraint cannot constrain 'dist', which is a Distance"},
        {"unit mismatch", "\"unit\": \"M\", \"value\": \"0.68\"", "\"unit\": \"N\", \"value\": \"0.68\"",
         RS_EINVAL, "entity 'lo': unit N measures Force, not Distance"},
        {"quantity-kind mismatch", "\"quantity-kind\": \"Distance\", \"unit\": \"M\"",
         "\"quantity-kind\": \"Force\", \"unit\": \"N\"", RS_EINVAL,
         "entity 'err': quantity-kind Force does not match its @type Distance"},
        {"threshold kind", "\"upper-threshold\": \"hi\"", "\"upper-threshold\": \"f\"", RS_EINVAL,
         "entity 'cstr': 'upper-threshold' must be a Distance quantity, but 'f' is Force"},
        {"neither controlled nor monitored", "\"constraint\": \"cstr\", \"controller\": \"ctl\"",
         "\"constraint\": \"cstr2\", \"controller\": \"ctl\"", RS_EINVAL,
         "'constraint' refers to 'cstr2'"},
        {"cycle", "\"lower-threshold\": \"lo\"", "\"lower-threshold\": \"err\"", RS_EINVAL,
         "a cycle among the quantities: 'err' -> 'err'"},
        {"unknown frame", "\"right_ee\"", "\"right_foot\"", RS_ENOTFOUND,
         "entity 'fe': no frame 'right_foot'"},
        {"wrong kind of reference", "\"attached-to\": \"fb\"", "\"attached-to\": \"dist\"",
         RS_EINVAL, "entity 'drv': 'attached-to' must refer to a Frame, but 'dist' is a Quantity"},
        {"malformed JSON", "]}", "]", RS_EMALFORMED, "is not JSON"},
        {"duplicate @id", "{\"@id\": \"hi\"", "{\"@id\": \"lo\"", RS_EINVAL,
         "entity 'lo' is defined twice"},
        {"produced twice", "\"control-signal\": \"f\"", "\"control-signal\": \"dist\"", RS_EINVAL,
         "quantity 'dist' is produced both by 'op-dist' and by 'ctl'"},
        {"unknown unit", "\"unit\": \"N\"}", "\"unit\": \"FURLONG\"}", RS_EINVAL,
         "entity 'f': unknown unit 'FURLONG'"},
        {"acceleration constraints", "\"@type\": \"MotionDriver\"",
         "\"@type\": \"AccelerationConstraintSpecification\"", RS_EUNIMPL,
         "entity 'drv': acceleration constraint specifications"},
        {"unknown solver", "\"solver\": \"JacobianTranspose\"", "\"solver\": \"Magic\"", RS_EINVAL,
         "entity 'slv': solver 'Magic' is not one this server runs"},
        {"controller on another constraint's error", "\"error-signal\": \"err\"",
         "\"error-signal\": \"dist\"", RS_EINVAL,
         "entity 'hdl': controller 'ctl' acts on 'dist', which is not the error of constraint 'cstr'"},
        {"driver outside any solver", "\"motion-drivers\": [\"drv\"]", "\"motion-drivers\": []",
         RS_EINVAL, "motion driver 'drv' is in no PrioritizationLevel of a Solver"},
        {"not a number", "\"proportional-gain\": \"450.0\"", "\"proportional-gain\": \"lots\"",
         RS_EINVAL, "entity 'ctl': 'proportional-gain' = \"lots\" is not a number"},
        {"view of a scalar", "{\"@id\": \"hi\", \"@type\": [\"Quantity\", \"Distance\"], \"unit\": "
                             "\"M\", \"value\": \"0.72\"}",
         "{\"@id\": \"hi\", \"@type\": [\"Quantity\", \"Distance\"], \"unit\": \"M\", \"view-of\": "
         "\"lo\", \"coordinate\": 0}",
         RS_EINVAL, "entity 'hi': view-of 'lo', a scalar Distance"},
    };
    rs_status_t st;
    rs_motion_spec_t *ok = rs_motion_spec_parse(m, base_spec, strlen(base_spec), &st);
    CHECK(ok != NULL, "the base specification is valid: %s", st.message);
    rs_motion_spec_destroy(&ok);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        char *doc = edit(table[i].from, table[i].to);
        memset(&st, 0, sizeof st);
        rs_motion_spec_t *s = rs_motion_spec_parse(m, doc, strlen(doc), &st);
        CHECK(s == NULL, "%s: accepted", table[i].name);
        CHECK(st.code == table[i].code, "%s: code %d, expected %d (%s)", table[i].name, st.code,
              table[i].code, st.message);
        CHECK(strstr(st.message, table[i].says) != NULL, "%s: message \"%s\" lacks \"%s\"",
              table[i].name, st.message, table[i].says);
        rs_motion_spec_destroy(&s);
        free(doc);
    }
    /* the tutorial's rule on its own: a constraint nobody handles */
    char *doc = edit("{\"@id\": \"hdl\", \"@type\": \"ConstraintHandler\"",
                     "{\"@id\": \"hdl\", \"@type\": \"Unrelated\"");
    rs_motion_spec_t *s = rs_motion_spec_parse(m, doc, strlen(doc), &st);
    CHECK(s == NULL && strstr(st.message, "constraint 'cstr' is neither controlled nor monitored"),
          "unhandled constraint: %s", st.message);
    rs_motion_spec_destroy(&s);
    free(doc);
    /* not JSON at all, empty, and garbage after the document */
    const char *junk[] = {"", "{", "[1, 2]", "{\"@graph\": 5}", "[] x"};
    for (size_t i = 0; i < 5; i++) {
        s = rs_motion_spec_parse(m, junk[i], strlen(junk[i]), &st);
        CHECK(s == NULL && st.code != 0, "junk %zu accepted", i);
        rs_motion_spec_destroy(&s);
    }
    /* JSON nesting past the limit: refused naming it (json-c frees a value recursively) */
    for (int levels = RS_MOTION_SPEC_MAX_NESTING - 2; levels <= 100000; levels *= 100) {
        size_t n = 2 * (size_t)levels + 64;
        char *deep = malloc(n), *p = deep;
        p += sprintf(p, "{\"@graph\": ");
        for (int i = 0; i < levels; i++)
            *p++ = '[';
        for (int i = 0; i < levels; i++)
            *p++ = ']';
        sprintf(p, "}");
        s = rs_motion_spec_parse(m, deep, strlen(deep), &st);
        if (levels < RS_MOTION_SPEC_MAX_NESTING)
            CHECK(s == NULL && st.code == RS_EINVAL && !strstr(st.message, "limit"),
                  "%d levels parse (and are refused as entries): %s", levels, st.message);
        else
            CHECK(s == NULL && st.code == RS_EINVAL && strstr(st.message, "limit of 32 levels"),
                  "%d levels: %s", levels, st.message);
        rs_motion_spec_destroy(&s);
        free(deep);
    }
}

/* One step against the closed forms of the dual-arm alignment tutorial and the robot's admittance.
 * */
static void evaluate(rs_world_t *w)
{
    rs_status_t st;
    rs_motion_spec_t *s = rs_motion_spec_parse(w->model, base_spec, strlen(base_spec), &st);
    CHECK(s != NULL, "%s", st.message);
    if (!s)
        return;
    const double *x = w->data->x;
    /* right shoulder to end effector: serial_fk of the right joints (the Example Robotic Systems
     * chapter) */
    double a1 = 0.45, a2 = 0.40, q1 = x[7], q2 = x[8];
    double px = a1 * cos(q1) + a2 * cos(q1 + q2), py = a1 * sin(q1) + a2 * sin(q1 + q2);
    double d = hypot(px, py);
    double e = d < 0.68 ? d - 0.68 : d > 0.72 ? d - 0.72 : 0.0;
    CHECK(e != 0, "the preset starts outside the tube (d = %g)", d);
    double u[6];
    int replace, ek[8], ei[8], nev;
    double dt = w->model->control_dt, I = 0, eprev = 0;
    for (int k = 0; k < 3; k++) {
        int rc = rs_motion_spec_step(s, w->model, w->data, dt, u, &replace, ek, ei, 8, &nev, &st);
        CHECK_OK(rc, st);
        double v[3];
        int dim;
        rs_motion_spec_quantity(s, "dist", v, &dim);
        CHECK(fabs(v[0] - d) < 1e-12 && dim == 1, "distance %.15g, closed form %.15g", v[0], d);
        double err;
        CHECK(strcmp(rs_motion_spec_evaluator(s, 0, &err), "ev") == 0, "evaluator 0 is ev");
        CHECK(fabs(err - e) < 1e-12, "tube error %.15g, closed form %.15g", err, e);
        /* f = Kp e + Ki int exp(lambda (tau - t)) e dtau + Kd de/dt; e constant (the world is not
         * stepped): the integral is e (1 - exp(-lambda t)) / lambda, de/dt 0 */
        I = exp(-0.99 * dt) * I + e * (1 - exp(-0.99 * dt)) / 0.99;
        double t = (k + 1) * dt;
        CHECK(fabs(I - e * (1 - exp(-0.99 * t)) / 0.99) < 1e-15, "integral closed form");
        double f = 450 * e + 65.5 * I + 80 * (k ? (e - eprev) / dt : 0.0);
        eprev = e;
        double out;
        rs_motion_spec_controller(s, 0, &out);
        CHECK(fabs(out - f) < 1e-9, "controller %.15g, closed form %.15g", out, f);
        /* the wrench f * (p / |p|) (base axes) on the base: v = k F . heading, w = 0;
         * the direction is in the base's axes, so F . heading = f px / d */
        double vb = 0.002 * f * px / d, r = 0.1; /* base_admittance 0.002 m/(N s) */
        CHECK(fabs(u[0] - vb / r) < 1e-9 && fabs(u[1] - vb / r) < 1e-9 && u[2] == 0 && u[5] == 0,
              "wheel speeds %g %g, closed form %g", u[0], u[1], vb / r);
        CHECK(replace == 0 && nev == 0, "combine add, no events");
    }
    /* the run state round-trips and a bad one is refused */
    size_t n = rs_motion_spec_state_len(s);
    double *a = malloc(n * sizeof *a);
    rs_motion_spec_state_get(s, a);
    CHECK(rs_motion_spec_state_set(s, a, n, &st) == 0, "state set: %s", st.message);
    a[0] = 7;
    CHECK(rs_motion_spec_state_set(s, a, n, &st) == RS_EINVAL, "a bad active motion is refused");
    free(a);
    rs_motion_spec_destroy(&s);
    CHECK(s == NULL, "destroy clears the pointer");
}

/* Jacobian transpose: a wrench on right_ee gives tau = J^T F (base axes) */
static void jacobian_transpose(rs_world_t *w)
{
    const char *doc =
        "[{\"@id\": \"fe\", \"@type\": \"Frame\", \"world-frame\": \"right_ee\"},"
        " {\"@id\": \"fw\", \"@type\": \"Frame\", \"world-frame\": \"world\"},"
        " {\"@id\": \"f\", \"@type\": [\"Quantity\", \"Force\"], \"unit\": \"N\", \"value\": 3},"
        " {\"@id\": \"d\", \"@type\": \"Direction\", \"value\": [0, 2], \"as-seen-by\": \"fw\"},"
        " {\"@id\": \"w\", \"@type\": \"Wrench\"},"
        " {\"@id\": \"op\", \"@type\": \"PureForceFromDirectionAndMagnitude\", \"magnitude\": \"f\","
        "  \"direction\": \"d\", \"wrench\": \"w\"},"
        " {\"@id\": \"drv\", \"@type\": \"MotionDriver\", \"wrench\": \"w\", \"attached-to\": \"fe\"},"
        " {\"@id\": \"p\", \"@type\": \"PrioritizationLevel\", \"motion-drivers\": [\"drv\"]},"
        " {\"@id\": \"s\", \"@type\": \"Solver\", \"motion-drivers\": [\"p\"], \"combine\": "
        "\"replace\"}]";
    rs_status_t st;
    rs_motion_spec_t *s = rs_motion_spec_parse(w->model, doc, strlen(doc), &st);
    CHECK(s != NULL, "%s", st.message);
    if (!s)
        return;
    double u[6];
    int replace, ek[4], ei[4], nev;
    int rc = rs_motion_spec_step(s, w->model, w->data, 0.01, u, &replace, ek, ei, 4, &nev, &st);
    CHECK_OK(rc, st);
    const double *x = w->data->x;
    double th = x[2], q1 = x[7], q2 = x[8], a1 = 0.45, a2 = 0.40;
    /* F = (0, 3) world; in base axes (sin th, cos th) * 3 */
    double Fb[2] = {3 * sin(th), 3 * cos(th)};
    double J[2][2] = {{-a1 * sin(q1) - a2 * sin(q1 + q2), -a2 * sin(q1 + q2)},
                      {a1 * cos(q1) + a2 * cos(q1 + q2), a2 * cos(q1 + q2)}};
    for (int j = 0; j < 2; j++) {
        double tau = J[0][j] * Fb[0] + J[1][j] * Fb[1];
        CHECK(fabs(u[4 + j] - tau) < 1e-12, "right tau%d %.15g, J^T F %.15g", j + 1, u[4 + j], tau);
    }
    CHECK(u[0] == 0 && u[1] == 0 && u[2] == 0 && u[3] == 0 && replace == 1, "only the right arm");
    rs_motion_spec_destroy(&s);
}

static void examples(const rs_model_t *m)
{
    static const char *const files[] = {"single_arm.jsonld", "dual_arm_alignment.jsonld",
                                        "dual_arm_alignment_passive.jsonld"};
    char dir[512];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *slash = strstr(dir, "tests/core/");
    if (!slash)
        return;
    *slash = 0;
    for (int i = 0; i < 3; i++) {
        char path[700];
        snprintf(path, sizeof path, "%sexamples/specs/%s", dir, files[i]);
        FILE *f = fopen(path, "rb");
        CHECK(f != NULL, "open %s", path);
        if (!f)
            continue;
        static char buf[1 << 17];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        rs_status_t st;
        rs_motion_spec_t *s = rs_motion_spec_parse(m, buf, n, &st);
        CHECK(s != NULL, "%s: %s", files[i], st.message);
        rs_motion_spec_destroy(&s);
    }
}

/* A monitor firing is an event in the step's event list (on entity 0, after its robot's kinds) */
static void monitor_event(rs_world_t *w)
{
    char *doc = edit("{\"@id\": \"hdl\",",
                     "{\"@id\": \"mon\", \"@type\": \"Monitor\", \"constraint\": \"cstr\", "
                     "\"tolerance\": 1.0},\n {\"@id\": \"hdl-mon\", \"@type\": "
                     "\"ConstraintHandler\", \"constraint\": \"cstr\", \"monitor\": \"mon\"},\n "
                     "{\"@id\": \"hdl\",");
    rs_status_t st;
    int rc = rs_set_motion_spec(w->model, w->data, doc, strlen(doc), &st);
    CHECK_OK(rc, st);
    rc = rs_step(w->model, w->data, 1, &st);
    CHECK_OK(rc, st);
    int found = 0;
    for (int i = 0; i < w->data->nevents; i++)
        found += strcmp(rs_event_kind_name(w->model, &w->data->events[i]),
                        "spec_monitor_satisfied") == 0 &&
                 w->data->events[i].value == 0 && w->data->events[i].t == 0;
    CHECK(found == 1, "one spec_monitor_satisfied event at t = 0 (%d events)", w->data->nevents);
    CHECK(rs_data_check(w->model, w->data, &st) == 0, "the log validates: %s", st.message);
    rs_set_motion_spec(w->model, w->data, NULL, 0, &st);
    free(doc);
}

/* Monitors are guards of the integrator: a distance monitor on a base moving at constant speed
 * changes at the closed-form time, not at the next control step. The base starts at x = 0.01 m
 * heading +x with both wheels at 2 rad/s: v = r/2 (2 + 2) = 0.2 m/s (the Example Robotic Systems
 * chapter), so its distance from the world origin is 0.01 + 0.2 t. Monitor 0 (distance within [0,
 * 0.123]) is violated at t = 0.113 / 0.2 = 0.565 s; monitor 1 (within [0.2, 100]) is satisfied at t
 * = 0.19 / 0.2 = 0.95 s, and with it the first guarded motion's `until` holds: the switch is at
 * 0.95 s too. Neither time is on the 10 ms control grid's points by more than round-off: the grid
 * would give 0.57 and 0.95 + up to 10 ms. */
static void monitor_exact_time(void)
{
    double th[] = {0.0}, x0[] = {0.01}, far[] = {100.0};
    rs_param_t p[] = {{"mm", "theta0", th, 1}, {"mm", "x0", x0, 1}, {"mm", "table_y", far, 1}};
    rs_status_t st;
    rs_world_t *w = rs_world_new("mobile_manipulator", p, 3, 1, &st);
    CHECK(w != NULL, "%s", st.message);
    if (!w)
        return;
    static const char doc[] =
        "[{\"@id\": \"fw\", \"@type\": \"Frame\", \"world-frame\": \"world\"},\n"
        " {\"@id\": \"fb\", \"@type\": \"Frame\", \"world-frame\": \"base\"},\n"
        " {\"@id\": \"pose\", \"@type\": \"Pose\", \"of\": \"fb\", \"with-respect-to\": \"fw\"},\n"
        " {\"@id\": \"dist\", \"@type\": [\"Quantity\", \"LinearDistance\"], \"quantity-kind\": "
        "\"Distance\", \"unit\": \"M\"},\n"
        " {\"@id\": \"op\", \"@type\": \"PoseToLinearDistance\", \"pose\": \"pose\", \"distance\": "
        "\"dist\"},\n"
        " {\"@id\": \"lo\", \"@type\": \"Quantity\", \"quantity-kind\": \"Distance\", \"unit\": "
        "\"M\", \"value\": \"0.0\"},\n"
        " {\"@id\": \"hi\", \"@type\": \"Quantity\", \"quantity-kind\": \"Distance\", \"unit\": "
        "\"M\", \"value\": \"0.123\"},\n"
        " {\"@id\": \"lo2\", \"@type\": \"Quantity\", \"quantity-kind\": \"Distance\", \"unit\": "
        "\"M\", \"value\": \"0.2\"},\n"
        " {\"@id\": \"hi2\", \"@type\": \"Quantity\", \"quantity-kind\": \"Distance\", \"unit\": "
        "\"M\", \"value\": \"100.0\"},\n"
        " {\"@id\": \"near\", \"@type\": [\"Constraint\", \"BilateralConstraint\", "
        "\"LinearDistanceConstraint\"], \"quantity\": \"dist\", \"lower-threshold\": \"lo\", "
        "\"upper-threshold\": \"hi\"},\n"
        " {\"@id\": \"far\", \"@type\": [\"Constraint\", \"BilateralConstraint\", "
        "\"LinearDistanceConstraint\"], \"quantity\": \"dist\", \"lower-threshold\": \"lo2\", "
        "\"upper-threshold\": \"hi2\"},\n"
        " {\"@id\": \"mon-near\", \"@type\": \"Monitor\", \"constraint\": \"near\"},\n"
        " {\"@id\": \"mon-far\", \"@type\": \"Monitor\", \"constraint\": \"far\"},\n"
        " {\"@id\": \"h-near\", \"@type\": \"ConstraintHandler\", \"constraint\": \"near\", "
        "\"monitor\": \"mon-near\"},\n"
        " {\"@id\": \"h-far\", \"@type\": \"ConstraintHandler\", \"constraint\": \"far\", "
        "\"monitor\": \"mon-far\"},\n"
        " {\"@id\": \"go\", \"@type\": \"GuardedMotion\", \"when\": [], \"while\": [\"near\"], "
        "\"until\": [\"far\"]},\n"
        " {\"@id\": \"there\", \"@type\": \"GuardedMotion\", \"when\": [], \"while\": [\"far\"], "
        "\"until\": []}]";
    int rc = rs_set_motion_spec(w->model, w->data, doc, strlen(doc), &st);
    CHECK_OK(rc, st);
    double u[6] = {2.0, 2.0, 0, 0, 0, 0};
    CHECK_OK(rs_set_commands(w->model, w->data, 0, u, 6, &st), st);
    double t_violated = -1, t_satisfied = -1, t_switch = -1;
    for (int k = 0; k < 120 && rc == 0; k++) {
        rc = rs_step(w->model, w->data, 1, &st);
        CHECK_OK(rc, st);
        for (int i = 0; i < w->data->nevents; i++) {
            const rs_event_t *e = &w->data->events[i];
            const char *name = rs_event_kind_name(w->model, e);
            if (strcmp(name, "spec_monitor_violated") == 0 && e->value == 0)
                t_violated = e->t;
            if (strcmp(name, "spec_monitor_satisfied") == 0 && e->value == 1)
                t_satisfied = e->t;
            if (strcmp(name, "spec_motion_switch") == 0 && e->value == 1)
                t_switch = e->t;
        }
    }
    CHECK(fabs(t_violated - 0.565) < 1e-9, "monitor 0 violated at t = %.12g s, closed form 0.565",
          t_violated);
    CHECK(fabs(t_satisfied - 0.95) < 1e-9, "monitor 1 satisfied at t = %.12g s, closed form 0.95",
          t_satisfied);
    CHECK(fabs(t_switch - 0.95) < 1e-9, "motion switch at t = %.12g s, closed form 0.95",
          t_switch);
    const char *id;
    CHECK(rs_motion_spec_active_motion(w->data->spec, &id) == 1 && strcmp(id, "there") == 0,
          "the second motion runs");
    CHECK(fabs(w->data->x[0] - (0.01 + 0.2 * w->data->t)) < 1e-9, "base x %.12g at t %g",
          w->data->x[0], w->data->t);
    rs_world_destroy(&w);
}

/* Scenario 1's specification drives the base with a wrench; on a passive base (base_mode 1) the
 * step is refused with RS_EINVAL naming base_mode, nothing moves, and once the specification is
 * cleared the world steps on. */
static void wrench_on_passive_base(void)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new("mobile_manipulator_passive", NULL, 0, 1, &st);
    CHECK(w != NULL, "%s", st.message);
    if (!w)
        return;
    char path[700];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *at = strstr(path, "tests/core/");
    if (at)
        snprintf(at, sizeof path - (size_t)(at - path), "examples/specs/dual_arm_alignment.jsonld");
    FILE *f = at ? fopen(path, "rb") : NULL;
    CHECK(f != NULL, "open %s", path);
    if (f) {
        static char buf[1 << 17];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        CHECK_OK(rs_set_motion_spec(w->model, w->data, buf, n, &st), st);
        double x0[13];
        memcpy(x0, w->data->x, sizeof x0);
        int rc = rs_step(w->model, w->data, 1, &st);
        CHECK(rc == RS_EINVAL && strstr(st.message, "base_mode") != NULL,
              "refused: %d %s", rc, st.message);
        CHECK(memcmp(x0, w->data->x, sizeof x0) == 0 && w->data->t == 0.0, "nothing moved");
        CHECK_OK(rs_set_motion_spec(w->model, w->data, NULL, 0, &st), st);
        CHECK_OK(rs_step(w->model, w->data, 10, &st), st);
    }
    rs_world_destroy(&w);
}

/* A control step thrown away and redone from a copy of the data (the server's rollback: the
 * copy keeps its parsed specification when the source is the same, and takes the state only)
 * steps on bit-identical to a world never rolled back, its controller's state included. */
static void rollback_keeps_spec(void)
{
    rs_status_t st;
    rs_world_t *a = rs_world_new("mobile_manipulator", NULL, 0, 1, &st);
    rs_world_t *b = rs_world_new("mobile_manipulator", NULL, 0, 1, &st);
    rs_data_t *saved = b ? rs_data_new(b->model, 0, &st) : NULL;
    CHECK(a && b && saved, "%s", st.message);
    if (!a || !b || !saved)
        return;
    CHECK_OK(rs_set_motion_spec(a->model, a->data, base_spec, strlen(base_spec), &st), st);
    CHECK_OK(rs_set_motion_spec(b->model, b->data, base_spec, strlen(base_spec), &st), st);
    int ok = 1;
    for (int k = 0; k < 100 && ok; k++) {
        ok &= rs_step(a->model, a->data, 1, &st) == 0;
        ok &= rs_data_copy(b->model, saved, b->data, &st) == 0;
        if (k % 3 == 0) /* a step, then back to the copy */
            ok &= rs_step(b->model, b->data, 1, &st) == 0 &&
                  rs_data_copy(b->model, b->data, saved, &st) == 0;
        ok &= rs_step(b->model, b->data, 1, &st) == 0;
    }
    CHECK(ok, "100 control steps with rollbacks: %s", st.message);
    CHECK(a->data->t == b->data->t &&
              memcmp(a->data->x, b->data->x, (size_t)a->model->nx * sizeof(double)) == 0,
          "bit-identical after rollbacks (t %.17g vs %.17g)", a->data->t, b->data->t);
    double sa[2 + 6 * 256], sb[2 + 6 * 256];
    rs_motion_spec_state_get(a->data->spec, sa);
    rs_motion_spec_state_get(b->data->spec, sb);
    CHECK(memcmp(sa, sb, rs_motion_spec_state_len(a->data->spec) * sizeof(double)) == 0,
          "the specification's state too");
    rs_data_destroy(&saved);
    rs_world_destroy(&a);
    rs_world_destroy(&b);
}

int main(void)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new("mobile_manipulator", NULL, 0, 1, &st);
    CHECK(w != NULL, "%s", st.message);
    if (!w)
        return 1;
    bad_specs(w->model);
    evaluate(w);
    jacobian_transpose(w);
    examples(w->model);
    monitor_event(w);
    rs_world_destroy(&w);
    monitor_exact_time();
    wrench_on_passive_base();
    rollback_keeps_spec();
    return rs_test_done("test_motion_spec");
}
