/* DiffDriveGoal: drive the differential-drive robot to a goal among disk obstacles (-v0, and
 * the normalized -v1). */
#include "task_util.h"

static const double dt_01[] = {0.1};

/* In metres, the robot's unit (protocol 1.1 had centimetres: each figure there was this one
 * times 100, and the reward, -d/100 with d in cm, is -d with d in m). */
#define DD_ARENA 1.8      /* m: start and goal lie in [-1.8, 1.8]^2 */
#define DD_CLEAR 0.1      /* m: free margin of start and goal around the inflated obstacles */
#define DD_MIN_START 1.0  /* m: the goal is at least this far from the start */
#define DD_GOAL_TOL 0.1   /* m */
#define DD_W_MAX 10.0     /* rad/s */
#define DD_NO_OBSTACLE 10.0 /* m: the clearance reported when there is no obstacle */
enum { DD_GOAL_X = RS_TASK_PRIVATE, DD_GOAL_Y };

static const double dd_obstacles[] = {
    0, 0, 0.30,  -1.00, 0.80, 0.25,  1.00, -0.80, 0.25,  0.90, 1.10, 0.20,  -1.10, -1.00, 0.20,
};
static const double dd_x0[] = {-1.7}, dd_y0[] = {1.7}; /* clear of the obstacles (reset samples) */
static const rs_task_param_t dd_params[] = {
    {"", "control_dt", 1, dt_01},
    {"robot", "x0", 1, dd_x0},
    {"robot", "y0", 1, dd_y0},
    {"robot", "obstacles", sizeof dd_obstacles / sizeof dd_obstacles[0], dd_obstacles},
};

static const rs_var_desc_t dd_obs[] = {
    {"x", "m", -INFINITY, INFINITY, "robot centre x"},
    {"y", "m", -INFINITY, INFINITY, "robot centre y"},
    {"cos_theta", "1", -1.0, 1.0, "cosine of the heading"},
    {"sin_theta", "1", -1.0, 1.0, "sine of the heading"},
    {"goal_dx", "m", -INFINITY, INFINITY, "goal x minus robot x"},
    {"goal_dy", "m", -INFINITY, INFINITY, "goal y minus robot y"},
    {"obstacle_dx", "m", -INFINITY, INFINITY,
     "nearest obstacle's centre x minus robot x (0 without obstacles)"},
    {"obstacle_dy", "m", -INFINITY, INFINITY, "nearest obstacle's centre y minus robot y"},
    {"clearance", "m", -INFINITY, INFINITY,
     "distance from the robot's rim to the nearest obstacle's rim (10 without obstacles)"},
    {"bumper", "1", 0.0, 1.0, "1 while the robot is held at an obstacle"},
};

static const rs_var_desc_t dd_act[] = {
    {"phi1_dot", "rad/s", -DD_W_MAX, DD_W_MAX, "right wheel speed"},
    {"phi2_dot", "rad/s", -DD_W_MAX, DD_W_MAX, "left wheel speed"},
};

static const char *const dd_info[] = {"distance", "effort", "collision", "success"};

/* the names DiffDriveGoal reads */
enum { DD_N_X, DD_N_Y, DD_N_THETA, DD_N_BUMPER, DD_N_RADIUS, DD_N_OBSTACLES, DD_N_CONTACT };
static const rs_task_name_t dd_names[] = {
    [DD_N_X] = {RS_TASK_NAME_STATE, "x"},
    [DD_N_Y] = {RS_TASK_NAME_STATE, "y"},
    [DD_N_THETA] = {RS_TASK_NAME_STATE, "theta"},
    [DD_N_BUMPER] = {RS_TASK_NAME_SENSOR, "bumper"},
    [DD_N_RADIUS] = {RS_TASK_NAME_PARAM, "robot_radius"},
    [DD_N_OBSTACLES] = {RS_TASK_NAME_PARAM, "obstacles"},
    [DD_N_CONTACT] = {RS_TASK_NAME_EVENT, "contact"},
};

/* The obstacle nearest (x, y) by rim-to-rim clearance; -1 when there are none. */
static int dd_nearest(const rs_model_t *m, const rs_task_bind_t *b, double x, double y,
                      double *clearance)
{
    double R = param_of(m, b, DD_N_RADIUS, 0);
    int best = -1;
    *clearance = DD_NO_OBSTACLE;
    for (int i = 0;; i++) {
        double ox = param_of(m, b, DD_N_OBSTACLES, 3 * i);
        if (isnan(ox))
            break;
        double oy = param_of(m, b, DD_N_OBSTACLES, 3 * i + 1);
        double orad = param_of(m, b, DD_N_OBSTACLES, 3 * i + 2);
        double c = rs_hypot(x - ox, y - oy) - R - orad;
        if (best < 0 || c < *clearance)
            best = i, *clearance = c;
    }
    return best;
}

static int dd_free_point(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b, double *x,
                         double *y)
{
    for (int k = 0; k < SAMPLE_TRIES; k++) {
        double c;
        *x = uniform(d, -DD_ARENA, DD_ARENA);
        *y = uniform(d, -DD_ARENA, DD_ARENA);
        if (dd_nearest(m, b, *x, *y, &c) < 0 || c >= DD_CLEAR)
            return 0;
    }
    return -1;
}

static int dd_reset(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                    rs_status_t *st)
{
    int e = b->entity;
    double x0 = 0, y0 = 0, th0 = uniform(d, -M_PI, M_PI), gx = 0, gy = 0;
    int found = 0;
    if (dd_free_point(m, d, b, &x0, &y0) == 0)
        for (int k = 0; k < SAMPLE_TRIES && !found; k++)
            found = dd_free_point(m, d, b, &gx, &gy) == 0 &&
                    rs_hypot(gx - x0, gy - y0) >= DD_MIN_START;
    if (!found)
        return rs_fail(st, RS_EINVAL,
                       "the obstacles of '%s' leave no room in the %g m arena for a start and a "
                       "goal %g m apart",
                       m->ent[e].name, 2 * DD_ARENA, DD_MIN_START);
    d->task[DD_GOAL_X] = gx;
    d->task[DD_GOAL_Y] = gy;
    const char *ent = m->ent[e].name;
    rs_param_t init[] = {{ent, "x0", &x0, 1}, {ent, "y0", &y0, 1}, {ent, "theta0", &th0, 1}};
    return rs_reset_initial(m, d, init, 3, st);
}

static void dd_observe(const rs_model_t *m, const rs_data_t *d, const rs_task_bind_t *b,
                       double *obs)
{
    double x = state_of(d, b, DD_N_X), y = state_of(d, b, DD_N_Y);
    double th = state_of(d, b, DD_N_THETA), c;
    int i = dd_nearest(m, b, x, y, &c);
    obs[0] = x;
    obs[1] = y;
    obs[2] = cos(th);
    obs[3] = sin(th);
    obs[4] = d->task[DD_GOAL_X] - x;
    obs[5] = d->task[DD_GOAL_Y] - y;
    obs[6] = i < 0 ? 0.0 : param_of(m, b, DD_N_OBSTACLES, 3 * i) - x;
    obs[7] = i < 0 ? 0.0 : param_of(m, b, DD_N_OBSTACLES, 3 * i + 1) - y;
    obs[8] = c;
    obs[9] = sensor_of(d, b, DD_N_BUMPER);
}

static double dd_evaluate(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                          int first_event, int *terminated, double *info)
{
    double x = state_of(d, b, DD_N_X), y = state_of(d, b, DD_N_Y);
    double dist = rs_hypot(d->task[DD_GOAL_X] - x, d->task[DD_GOAL_Y] - y);
    double effort = 0.5 * (sq(command_of(m, d, b, 0) / DD_W_MAX) +
                           sq(command_of(m, d, b, 1) / DD_W_MAX));
    /* a collision: a contact event in this control step, or still held at an obstacle */
    int collision = sensor_of(d, b, DD_N_BUMPER) > 0.5;
    for (int i = first_event; i < d->nevents; i++)
        collision |= d->events[i].entity == b->entity &&
                     d->events[i].kind == b->index[DD_N_CONTACT];
    int success = dist < DD_GOAL_TOL;
    info[0] = dist, info[1] = effort, info[2] = collision, info[3] = success;
    *terminated = success;
    return -dist - EFFORT_WEIGHT * effort - 1.0 * collision + SUCCESS_BONUS * success;
}

/* The normalized version (-v1): the same episodes (resets, reward terms, success), for
 * learners: the action is [-1, 1] per value, mapped linearly onto v0's bounds (cmd); the
 * observation is v0's divided by a scale of its typical magnitude and clipped to finite
 * bounds; the reward is a tenth of v0's, so that returns stay within tens. */
static const rs_var_desc_t dd_act_v1[] = {
    {"phi1_dot", "10 rad/s", -1.0, 1.0, "right wheel speed / (10 rad/s)"},
    {"phi2_dot", "10 rad/s", -1.0, 1.0, "left wheel speed / (10 rad/s)"},
};
static const rs_var_desc_t dd_obs_v1[] = {
    {"x", "m", -3.0, 3.0, "robot centre x"},
    {"y", "m", -3.0, 3.0, "robot centre y"},
    {"cos_theta", "1", -1.0, 1.0, "cosine of the heading"},
    {"sin_theta", "1", -1.0, 1.0, "sine of the heading"},
    {"goal_dx", "m", -6.0, 6.0, "goal x minus robot x"},
    {"goal_dy", "m", -6.0, 6.0, "goal y minus robot y"},
    {"obstacle_dx", "m", -6.0, 6.0, "nearest obstacle's centre x minus robot x (0 without)"},
    {"obstacle_dy", "m", -6.0, 6.0, "nearest obstacle's centre y minus robot y"},
    {"clearance", "m", -1.0, 10.0, "robot rim to nearest obstacle rim (10 without obstacles)"},
    {"bumper", "1", 0.0, 1.0, "1 while the robot is held at an obstacle"},
};
static const double dd_scale_v1[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}; /* v0 is in m too */

/* ---- the rows ------------------------------------------------------------------------------- */

/* DiffDriveGoal-v0 and DiffDriveGoal-v1: what both rows share (-v1 adds its scaling). */
#define DD_R "-d - 0.01 ((w1 / 10)^2 + (w2 / 10)^2) / 2 - 1 [collision] + 10 [success]"
#define DD_ENDS "(d the distance to the goal in m, w the wheel speeds in rad/s). A collision: a " \
    "contact event with an obstacle in this step, or the bumper still pressed at its end. " \
    "Success, which terminates the episode: d < 0.1 m. Truncated after 300 steps (30 s)."
#define DD_ROW \
    .preset = "diff_drive", \
    .entity = "robot", \
    .ninfo = N(dd_info), \
    .info = dd_info, \
    .max_episode_steps = 300, \
    .nparams = N(dd_params), \
    .params = dd_params, \
    .nnames = N(dd_names), \
    .names = dd_names, \
    .reset = dd_reset, \
    .observe = dd_observe, \
    .evaluate = dd_evaluate

static const rs_task_t tasks[] = {
    {
        .name = "CDiffDriveGoal-v0",
        DD_ROW,
        .reward = TASK_REWARD(DD_R, DD_ENDS),
        .doc = "Drive the differential-drive robot (m) to the goal among five disk obstacles "
               "(centres and radii: (0, 0, 0.3), (-1, 0.8, 0.25), (1, -0.8, 0.25), (0.9, 1.1, "
               "0.2), (-1.1, -1, 0.2) m). Start and goal: uniform in [-1.8, 1.8]^2 m, 0.1 m "
               "clear of the inflated obstacles, at least 1 m apart; heading U(-pi, pi); control "
               "step 0.1 s.",
        .nobs = N(dd_obs),
        .obs = dd_obs,
        .nact = N(dd_act),
        .act = dd_act,
    },
    {
        .name = "CDiffDriveGoal-v1",
        DD_ROW,
        .reward = TASK_REWARD_V1(DD_R, DD_ENDS),
        .doc = "DiffDriveGoal-v0 normalized: the action is the wheel speeds as fractions of "
               "10 rad/s in [-1, 1]; the observation is v0's (in m), each bounded; the reward a "
               "tenth of v0's.",
        .nobs = N(dd_obs_v1),
        .obs = dd_obs_v1,
        .nact = N(dd_act_v1),
        .act = dd_act_v1,
        .cmd = dd_act,
        .obs_scale = dd_scale_v1,
        .reward_scale = 0.1,
    },
};

const rs_task_family_t rs_tasks_diff_drive = {.n = N(tasks), .tasks = tasks};
