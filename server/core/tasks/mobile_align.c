/* MobileAlign: the mobile manipulator aligning to a table edge, the dual-arm alignment of the
 * motion-specification tutorial as an episode. */
#include "task_util.h"

#define ALIGN_TOL (M_PI / 180) /* rad */
#define ALIGN_TUBE_LO 0.68     /* m: the tutorial's tube */
#define ALIGN_TUBE_HI 0.72
#define ALIGN_SLACK 1e-3       /* m: a distance rests at the tube's boundary (README) */
#define ALIGN_WHEEL_MAX 2.0    /* rad/s */

static const rs_var_desc_t align_obs[] = {
    {"heading_error", "rad", -INFINITY, INFINITY, "base heading minus pi/2 (facing the edge), "
                                                  "wrapped to [-pi, pi]"},
    {"base_y", "m", -INFINITY, INFINITY, "base y (the edge is at table_y)"},
    {"left_distance", "m", 0.0, INFINITY, "left shoulder to end effector"},
    {"right_distance", "m", 0.0, INFINITY, "right shoulder to end effector"},
    {"left_force_normal", "N", 0.0, INFINITY, "the edge's normal force on the left end effector"},
    {"right_force_normal", "N", 0.0, INFINITY, "and on the right one"},
    {"left_contact", "1", 0.0, 2.0, "0 free, 1 sliding, 2 stuck"},
    {"right_contact", "1", 0.0, 2.0, "0 free, 1 sliding, 2 stuck"},
};
static const rs_var_desc_t align_act[] = {
    {"phi1_dot", "rad/s", -ALIGN_WHEEL_MAX, ALIGN_WHEEL_MAX, "right wheel speed"},
    {"phi2_dot", "rad/s", -ALIGN_WHEEL_MAX, ALIGN_WHEEL_MAX, "left wheel speed"},
};
static const char *const align_info[] = {"heading_error", "tube_violation", "success"};

/* the names MobileAlign reads */
enum { AL_THETA, AL_Y, AL_LEFT_DIST, AL_RIGHT_DIST, AL_LEFT_FN, AL_RIGHT_FN, AL_LEFT_CONTACT,
       AL_RIGHT_CONTACT };
static const rs_task_name_t align_names[] = {
    [AL_THETA] = {RS_TASK_NAME_STATE, "theta"},
    [AL_Y] = {RS_TASK_NAME_STATE, "y"},
    [AL_LEFT_DIST] = {RS_TASK_NAME_SENSOR, "left_distance"},
    [AL_RIGHT_DIST] = {RS_TASK_NAME_SENSOR, "right_distance"},
    [AL_LEFT_FN] = {RS_TASK_NAME_SENSOR, "left_force_normal"},
    [AL_RIGHT_FN] = {RS_TASK_NAME_SENSOR, "right_force_normal"},
    [AL_LEFT_CONTACT] = {RS_TASK_NAME_SENSOR, "left_contact"},
    [AL_RIGHT_CONTACT] = {RS_TASK_NAME_SENSOR, "right_contact"},
};

static int align_reset(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                       rs_status_t *st)
{
    /* a start angle of 0.1 to 0.3 rad either way, as in the tutorial's figure */
    double a = uniform(d, 0.1, 0.3) * (uniform(d, 0, 1) < 0.5 ? -1.0 : 1.0);
    double th = M_PI / 2 + a;
    rs_param_t init[] = {{m->ent[b->entity].name, "theta0", &th, 1}};
    return rs_reset_initial(m, d, init, 1, st);
}

static void align_observe(const rs_model_t *m, const rs_data_t *d, const rs_task_bind_t *b,
                          double *obs)
{
    (void)m;
    double th = state_of(d, b, AL_THETA) - M_PI / 2;
    obs[0] = atan2(sin(th), cos(th));
    obs[1] = state_of(d, b, AL_Y);
    obs[2] = sensor_of(d, b, AL_LEFT_DIST);
    obs[3] = sensor_of(d, b, AL_RIGHT_DIST);
    obs[4] = sensor_of(d, b, AL_LEFT_FN);
    obs[5] = sensor_of(d, b, AL_RIGHT_FN);
    obs[6] = sensor_of(d, b, AL_LEFT_CONTACT);
    obs[7] = sensor_of(d, b, AL_RIGHT_CONTACT);
}

static double tube_violation(double dist)
{
    return dist < ALIGN_TUBE_LO ? ALIGN_TUBE_LO - dist : dist > ALIGN_TUBE_HI ? dist - ALIGN_TUBE_HI : 0.0;
}

static double align_evaluate(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                             int first_event, int *terminated, double *info)
{
    (void)first_event;
    double obs[8];
    align_observe(m, d, b, obs);
    double tube = tube_violation(obs[2]) + tube_violation(obs[3]);
    int success = fabs(obs[0]) < ALIGN_TOL && tube <= 2 * ALIGN_SLACK &&
                  tube_violation(obs[2]) <= ALIGN_SLACK && tube_violation(obs[3]) <= ALIGN_SLACK &&
                  obs[6] > 0 && obs[7] > 0;
    info[0] = obs[0], info[1] = tube, info[2] = success;
    *terminated = success;
    return -fabs(obs[0]) - 10.0 * tube + SUCCESS_BONUS * success;
}

/* ---- the rows ------------------------------------------------------------------------------- */



static const rs_task_t tasks[] = {
    {
        .name = "MobileAlign-v0",
        .preset = "mobile_manipulator",
        .entity = "mm",
        .doc = "Align the mobile manipulator to the table edge: heading within 1 "
               "degree of facing the edge, both end effectors on it, both shoulder-to-end-"
               "effector distances in the tube [0.68, 0.72] m (1 mm slack). The action is the "
               "two wheel speeds; the arms' torques are 0 unless a motion specification runs on "
               "the world (LoadMotionSpec, e.g. examples/specs/dual_arm_alignment.jsonld): the "
               "agent then acts on top of it, or alone without one. Start: heading at 0.1 to "
               "0.3 rad either side of facing the edge.",
        .reward = "per control step: r = -|heading error| - 10 (tube violation of both distances, "
                  "m) + 10 [success] (the conditions above, both arms in contact), which "
                  "terminates the episode. Truncated after 3000 steps (30 s).",
        .nobs = N(align_obs),
        .obs = align_obs,
        .nact = N(align_act),
        .act = align_act,
        .ninfo = N(align_info),
        .info = align_info,
        .max_episode_steps = 3000,
        .nnames = N(align_names),
        .names = align_names,
        .reset = align_reset,
        .observe = align_observe,
        .evaluate = align_evaluate,
    },
};

const rs_task_family_t rs_tasks_mobile_align = {.n = N(tasks), .tasks = tasks};
