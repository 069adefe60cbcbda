/* The differential-drive robot against closed forms (the Example Robotic Systems chapter). The
 * robot is in metres
 * (protocol 1.2, SI on the wire); the chapter's figures are in centimetres and are converted here
 * (CM = 0.01 m), so the chapter's worked example is checked with its own numbers. */
#include "rs_core.h"
#include "rs_test.h"

#include <string.h>

/* Closed-form pose after driving wheel speeds (w1, w2) for time T from (x, y, th):
 * v = r (w1 + w2) / 2, w = r (w1 - w2) / (2L); arcs of radius v/w, or straight lines. */
static void closed_form(double r, double L, double w1, double w2, double T, double *p)
{
    double v = 0.5 * r * (w1 + w2), w = r * (w1 - w2) / (2 * L);
    double th = p[2];
    if (w == 0) {
        p[0] += v * T * cos(th);
        p[1] += v * T * sin(th);
    } else {
        p[0] += v / w * (sin(th + w * T) - sin(th));
        p[1] -= v / w * (cos(th + w * T) - cos(th));
        p[2] += w * T;
    }
}

static int robot;

#define CM 0.01 /* m: the chapter's unit */

static void drive(rs_world_t *w, double w1, double w2, double seconds)
{
    rs_status_t st;
    double u[2] = {w1, w2};
    int rc = rs_set_commands(w->model, w->data, robot, u, 2, &st);
    CHECK_OK(rc, st);
    uint64_t n = (uint64_t)llround(seconds / w->model->control_dt);
    rc = rs_step(w->model, w->data, n, &st);
    CHECK_OK(rc, st);
}

/* The chapter's five-phase schedule, ending near (277.6, 107.7) cm, heading 0. */
static void worked_example(void)
{
    rs_status_t st;
    double tight[] = {1e-12};
    double atol[] = {1e-12};
    rs_param_t p[] = {{"", "rtol", tight, 1}, {"", "atol", atol, 1}};
    rs_world_t *w = rs_world_new("diff_drive", p, 2, 1, &st);
    CHECK(w != NULL, "%s", st.message);
    if (!w)
        return;
    robot = rs_model_entity(w->model, "robot");
    CHECK(robot == 0, "entity robot at %d", robot);
    CHECK(rs_model_param(w->model, robot, "wheel_radius", 0) == 9.0 * CM, "r = 18 cm / 2");
    CHECK(rs_model_param(w->model, robot, "half_axle", 0) == 12.0 * CM, "L = 12 cm");

    struct { double w1, w2, T; } phases[] = {{3, 3, 5}, {2, -2, 1}, {3, 3, 4}, {-2, 2, 1}, {3, 3, 5}};
    double expect[3] = {0, 0, 0};
    for (size_t i = 0; i < 5; i++) {
        drive(w, phases[i].w1, phases[i].w2, phases[i].T);
        closed_form(9.0 * CM, 12.0 * CM, phases[i].w1, phases[i].w2, phases[i].T, expect);
    }
    const double *x = w->data->x;
    CHECK_REL(w->data->t, 16.0, 1e-14, 1.0);
    CHECK_REL(x[0], expect[0], 1e-8, 1.0);
    CHECK_REL(x[1], expect[1], 1e-8, 1.0);
    CHECK(fabs(x[2] - expect[2]) <= 1e-8, "theta %.17g expected %.17g", x[2], expect[2]);
    /* and the chapter's rounded figures, 277.6 and 107.7 cm to the nearest 0.1 cm */
    CHECK(fabs(x[0] - 277.6 * CM) < 0.05 * CM && fabs(x[1] - 107.7 * CM) < 0.05 * CM,
          "pose (%g, %g) m", x[0], x[1]);
    rs_world_destroy(&w);
    CHECK(w == NULL, "destroy clears the pointer");
}

/* A curved path (both wheels turning at different speeds) against the arc closed form. */
static void arc(void)
{
    rs_status_t st;
    double tight[] = {1e-11};
    rs_param_t p[] = {{"", "rtol", tight, 1}};
    rs_world_t *w = rs_world_new("diff_drive", p, 1, 1, &st);
    CHECK(w != NULL, "%s", st.message);
    double expect[3] = {0, 0, 0};
    drive(w, 4.0, 1.5, 7.3);
    closed_form(9.0 * CM, 12.0 * CM, 4.0, 1.5, 7.3, expect);
    for (int i = 0; i < 3; i++)
        CHECK_REL(w->data->x[i], expect[i], 1e-8, 1.0);
    rs_world_destroy(&w);
}

/* Straight at a disk obstacle: exact contact time, no penetration, freed when turning away. */
static void obstacle(void)
{
    rs_status_t st;
    double obst[] = {100.0 * CM, 0.0, 10.0 * CM};
    rs_param_t p[] = {{"robot", "obstacles", obst, 3}};
    rs_world_t *w = rs_world_new("diff_drive", p, 1, 1, &st);
    CHECK(w != NULL, "%s", st.message);
    if (!w)
        return;
    /* v = r w = 27 cm/s; contact when the centre is R_robot + R_obst = 25 cm from (100, 0) */
    double v = 9.0 * CM * 3.0, t_contact = (100.0 - 25.0) * CM / v;
    double u[2] = {3, 3};
    rs_set_commands(w->model, w->data, 0, u, 2, &st);
    double max_x = 0;
    int contacts = 0;
    double event_t = NAN;
    for (int k = 0; k < 400; k++) {
        int rc = rs_step(w->model, w->data, 1, &st);
        CHECK_OK(rc, st);
        if (w->data->x[0] > max_x)
            max_x = w->data->x[0];
        for (int i = 0; i < w->data->nevents; i++)
            if (strcmp(rs_event_kind_name(w->model, &w->data->events[i]), "contact") == 0) {
                contacts++;
                event_t = w->data->events[i].t;
                CHECK(w->data->events[i].value == 0, "obstacle index %g", w->data->events[i].value);
            }
    }
    CHECK(contacts == 1, "%d contact events", contacts);
    CHECK(fabs(event_t - t_contact) <= 1e-9, "contact at %.15g, closed form %.15g (err %.3g)",
          event_t, t_contact, event_t - t_contact);
    CHECK(max_x <= 75.0 * CM + 1e-11, "penetration: x reached %.15g > 0.75 m", max_x);
    CHECK(w->data->sensors[0] == 1.0, "bumper reads %g", w->data->sensors[0]);
    CHECK(strcmp(rs_mode_name(w->model, w->data, 0), "blocked") == 0, "mode %s",
          rs_mode_name(w->model, w->data, 0));

    /* keep pushing forward while turning left: v = 18 cm/s, thetadot = 0.75 rad/s; the robot
     * stays at the boundary until the heading passes pi/2, then it is released exactly then. */
    double t0 = w->data->t;
    double turn[2] = {3, 1};
    rs_set_commands(w->model, w->data, 0, turn, 2, &st);
    double t_release = t0 + (M_PI / 2) / 0.75;
    double release_t = NAN;
    double min_clear = INFINITY;
    for (int k = 0; k < 300; k++) {
        rs_step(w->model, w->data, 1, &st);
        double dx = w->data->x[0] - 100 * CM, dy = w->data->x[1];
        double c = hypot(dx, dy) - 25.0 * CM;
        if (c < min_clear)
            min_clear = c;
        for (int i = 0; i < w->data->nevents; i++)
            if (strcmp(rs_event_kind_name(w->model, &w->data->events[i]), "release") == 0)
                release_t = w->data->events[i].t;
    }
    CHECK(fabs(release_t - t_release) <= 1e-8, "released at %.15g, closed form %.15g", release_t,
          t_release);
    CHECK(min_clear >= -1e-11, "penetration while turning: clearance %.3g", min_clear);
    CHECK(w->data->sensors[0] == 0.0, "bumper after release reads %g", w->data->sensors[0]);
    CHECK(strcmp(rs_mode_name(w->model, w->data, 0), "free") == 0, "mode after release %s",
          rs_mode_name(w->model, w->data, 0));
    CHECK(hypot(w->data->x[0] - 100 * CM, w->data->x[1]) > (25.0 + 1.0) * CM, "drove away");
    rs_world_destroy(&w);
}

/* Bad parameters are refused with the right code and a reason. */
static void bad_params(void)
{
    rs_status_t st;
    double neg[] = {-1};
    double inside[] = {0, 0, 0.05};
    double two[] = {1, 2};
    double nan[] = {NAN};
    struct { rs_param_t p; int code; } cases[] = {
        {{"robot", "wheel_radius", neg, 1}, RS_ERANGE},
        {{"robot", "nope", neg, 1}, RS_ENOTFOUND},
        {{"ghost", "wheel_radius", neg, 1}, RS_ENOTFOUND},
        {{"robot", "obstacles", inside, 3}, RS_EINVAL},
        {{"robot", "obstacles", two, 2}, RS_EINVAL},
        {{"robot", "half_axle", two, 2}, RS_EINVAL},
        {{"robot", "half_axle", nan, 1}, RS_EINVAL},
        {{"", "control_dt", neg, 1}, RS_ERANGE},
        {{"", "bogus", neg, 1}, RS_ENOTFOUND},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rs_world_t *w = rs_world_new("diff_drive", &cases[i].p, 1, 0, &st);
        CHECK(w == NULL && st.code == cases[i].code && st.message[0],
              "case %zu: code %d (%s) message '%s'", i, st.code, rs_errname(st.code), st.message);
        rs_world_destroy(&w);
    }
    rs_world_t *w = rs_world_new("no_such_preset", NULL, 0, 0, &st);
    CHECK(w == NULL && st.code == RS_ENOTFOUND && strstr(st.message, "diff_drive"), "%s",
          st.message);

    /* commands: wrong count, NaN, out of bounds; the world is unchanged */
    w = rs_world_new("diff_drive", NULL, 0, 0, &st);
    double before[2] = {w->data->u[0], w->data->u[1]};
    double bad_nan[2] = {1, NAN}, big[2] = {1e9, 0};
    CHECK(rs_set_commands(w->model, w->data, 0, bad_nan, 2, &st) == RS_EINVAL, "NaN command");
    CHECK(rs_set_commands(w->model, w->data, 0, big, 2, &st) == RS_ERANGE, "huge command");
    CHECK(rs_set_commands(w->model, w->data, 0, big, 1, &st) == RS_EINVAL, "one value");
    CHECK(w->data->u[0] == before[0] && w->data->u[1] == before[1], "commands unchanged");
    rs_world_destroy(&w);
}

/* Reset gives back the same trajectory bit for bit. */
static void reset_repeats(void)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new("diff_drive", NULL, 0, 7, &st);
    double u[2] = {2.5, 1.0}, first[3];
    rs_set_commands(w->model, w->data, 0, u, 2, &st);
    rs_step(w->model, w->data, 123, &st);
    memcpy(first, w->data->x, sizeof first);
    rs_reset(w->model, w->data, 7, &st);
    CHECK(w->data->t == 0 && w->data->x[0] == 0 && w->data->u[0] == 0, "reset state");
    rs_set_commands(w->model, w->data, 0, u, 2, &st);
    rs_step(w->model, w->data, 123, &st);
    CHECK(memcmp(first, w->data->x, sizeof first) == 0, "same trajectory after reset");
    rs_world_destroy(&w);
}

int main(void)
{
    worked_example();
    arc();
    obstacle();
    bad_params();
    reset_repeats();
    return rs_test_done("test_diff_drive");
}
