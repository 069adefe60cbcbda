/* The finger tasks: FingerPush (push the object to rest at a target) and FingerTouch (press
 * on it with a target force without moving it), each in a -v0 and a normalized -v1 row. */
#include "task_util.h"

static const double dt_005[] = {0.05};

static const rs_task_param_t finger_params[] = {{"", "control_dt", 1, dt_005}};

#define PUSH_F_MAX 5.0    /* N */
#define PUSH_TOL 0.05     /* m */
#define REST_SPEED 1e-3   /* m/s: the object is at rest below this */
enum { PUSH_TARGET = RS_TASK_PRIVATE };

static const rs_var_desc_t push_obs[] = {
    {"x_f", "m", -INFINITY, INFINITY, "finger tip position"},
    {"v_f", "m/s", -INFINITY, INFINITY, "finger velocity"},
    {"x_o", "m", -INFINITY, INFINITY, "object near-face position"},
    {"v_o", "m/s", -INFINITY, INFINITY, "object velocity"},
    {"target", "m", -INFINITY, INFINITY, "where the object's face is to come to rest, x*"},
    {"tip_force", "N", -INFINITY, INFINITY, "the finger's tip force sensor (mean over the step)"},
};

static const rs_var_desc_t push_act[] = {
    {"force", "N", -PUSH_F_MAX, PUSH_F_MAX, "F: force applied on the finger, + towards the object"},
};

static const char *const push_info[] = {"distance", "gap", "effort", "success"};

/* the names the finger tasks read */
enum { F_X_F, F_V_F, F_X_O, F_V_O, F_TIP_FORCE };
static const rs_task_name_t finger_names[] = {
    [F_X_F] = {RS_TASK_NAME_STATE, "x_f"},
    [F_V_F] = {RS_TASK_NAME_STATE, "v_f"},
    [F_X_O] = {RS_TASK_NAME_STATE, "x_o"},
    [F_V_O] = {RS_TASK_NAME_STATE, "v_o"},
    [F_TIP_FORCE] = {RS_TASK_NAME_SENSOR, "tip_force"},
};

static int push_reset(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                      rs_status_t *st)
{
    double xf = 0.0, xo = uniform(d, 0.2, 0.6);
    d->task[PUSH_TARGET] = xo + uniform(d, 0.5, 1.5);
    const char *ent = m->ent[b->entity].name;
    rs_param_t init[] = {{ent, "finger_x0", &xf, 1}, {ent, "object_x0", &xo, 1}};
    return rs_reset_initial(m, d, init, 2, st);
}

static void push_observe(const rs_model_t *m, const rs_data_t *d, const rs_task_bind_t *b,
                         double *obs)
{
    (void)m;
    obs[0] = state_of(d, b, F_X_F);
    obs[1] = state_of(d, b, F_V_F);
    obs[2] = state_of(d, b, F_X_O);
    obs[3] = state_of(d, b, F_V_O);
    obs[4] = d->task[PUSH_TARGET];
    obs[5] = sensor_of(d, b, F_TIP_FORCE);
}

static double push_evaluate(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                            int first_event, int *terminated, double *info)
{
    double xf = state_of(d, b, F_X_F), xo = state_of(d, b, F_X_O);
    double vo = state_of(d, b, F_V_O);
    double dist = fabs(xo - d->task[PUSH_TARGET]), gap = fmax(0.0, xo - xf);
    double effort = sq(command_of(m, d, b, 0) / PUSH_F_MAX);
    int success = dist < PUSH_TOL && fabs(vo) < REST_SPEED;
    info[0] = dist, info[1] = gap, info[2] = effort, info[3] = success;
    *terminated = success;
    return -dist - 0.1 * gap - EFFORT_WEIGHT * effort + SUCCESS_BONUS * success;
}

/* ---- FingerTouch-v0 ----------------------------------------------------------------------- */

#define TOUCH_F_MAX 2.0     /* N */
#define TOUCH_FORCE_TOL 0.05 /* N */
#define TOUCH_MOVE_TOL 0.005 /* m */
#define TOUCH_HOLD 10       /* control steps on target for success */
enum { TOUCH_FORCE = RS_TASK_PRIVATE, TOUCH_X_O0, TOUCH_HELD };

static const rs_var_desc_t touch_obs[] = {
    {"gap", "m", -INFINITY, INFINITY, "x_o - x_f, 0 in contact"},
    {"v_f", "m/s", -INFINITY, INFINITY, "finger velocity"},
    {"displacement", "m", -INFINITY, INFINITY, "x_o - x_o(0): how far the object has moved"},
    {"v_o", "m/s", -INFINITY, INFINITY, "object velocity"},
    {"tip_force", "N", -INFINITY, INFINITY, "the tip force sensor (mean over the step)"},
    {"target_force", "N", 0.0, INFINITY, "F*: the tip force to hold"},
};

static const rs_var_desc_t touch_act[] = {
    {"force", "N", -TOUCH_F_MAX, TOUCH_F_MAX, "F: force applied on the finger, + towards the object"},
};

static const char *const touch_info[] = {"force_error", "displacement", "effort", "held_steps",
                                         "success"};

static int touch_reset(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                       rs_status_t *st)
{
    double xf = 0.0, xo = uniform(d, 0.1, 0.5);
    d->task[TOUCH_FORCE] = uniform(d, 0.2, 0.8);
    d->task[TOUCH_X_O0] = xo;
    d->task[TOUCH_HELD] = 0.0;
    const char *ent = m->ent[b->entity].name;
    rs_param_t init[] = {{ent, "finger_x0", &xf, 1}, {ent, "object_x0", &xo, 1}};
    return rs_reset_initial(m, d, init, 2, st);
}

static void touch_observe(const rs_model_t *m, const rs_data_t *d, const rs_task_bind_t *b,
                          double *obs)
{
    (void)m;
    double xo = state_of(d, b, F_X_O);
    obs[0] = xo - state_of(d, b, F_X_F);
    obs[1] = state_of(d, b, F_V_F);
    obs[2] = xo - d->task[TOUCH_X_O0];
    obs[3] = state_of(d, b, F_V_O);
    obs[4] = sensor_of(d, b, F_TIP_FORCE);
    obs[5] = d->task[TOUCH_FORCE];
}

static double touch_evaluate(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                             int first_event, int *terminated, double *info)
{
    double err = fabs(sensor_of(d, b, F_TIP_FORCE) - d->task[TOUCH_FORCE]);
    double disp = fabs(state_of(d, b, F_X_O) - d->task[TOUCH_X_O0]);
    double vo = state_of(d, b, F_V_O);
    double effort = sq(command_of(m, d, b, 0) / TOUCH_F_MAX);
    int on = err < TOUCH_FORCE_TOL && disp < TOUCH_MOVE_TOL && fabs(vo) < REST_SPEED;
    d->task[TOUCH_HELD] = on ? d->task[TOUCH_HELD] + 1.0 : 0.0;
    int success = d->task[TOUCH_HELD] >= TOUCH_HOLD;
    info[0] = err, info[1] = disp, info[2] = effort, info[3] = d->task[TOUCH_HELD];
    info[4] = success;
    *terminated = success;
    return -err - 10.0 * disp - EFFORT_WEIGHT * effort + SUCCESS_BONUS * success;
}

/* The normalized version (-v1): the same episodes (resets, reward terms, success), for
 * learners: the action is [-1, 1] per value, mapped linearly onto v0's bounds (cmd); the
 * observation is v0's divided by a scale of its typical magnitude and clipped to finite
 * bounds; the reward is a tenth of v0's, so that returns stay within tens. */
static const rs_var_desc_t unit_act1[] = {
    {"force", "1", -1.0, 1.0, "the force as a fraction of its bound, + towards the object"},
};
static const rs_var_desc_t push_obs_v1[] = {
    {"x_f", "m", -5.0, 5.0, "finger tip position"},
    {"v_f", "m/s", -5.0, 5.0, "finger velocity"},
    {"x_o", "m", -5.0, 5.0, "object near-face position"},
    {"v_o", "m/s", -5.0, 5.0, "object velocity"},
    {"target", "m", -5.0, 5.0, "where the object's face is to come to rest, x*"},
    {"tip_force", "5 N", -10.0, 10.0, "tip force sensor / (5 N)"},
};
static const double push_scale_v1[] = {1, 1, 1, 1, 1, 5};
static const rs_var_desc_t touch_obs_v1[] = {
    {"gap", "m", -5.0, 5.0, "x_o - x_f, 0 in contact"},
    {"v_f", "m/s", -5.0, 5.0, "finger velocity"},
    {"displacement", "cm", -100.0, 100.0, "x_o - x_o(0) / (0.01 m)"},
    {"v_o", "m/s", -5.0, 5.0, "object velocity"},
    {"tip_force", "N", -10.0, 10.0, "the tip force sensor (mean over the step)"},
    {"target_force", "N", 0.0, 10.0, "F*: the tip force to hold"},
};
static const double touch_scale_v1[] = {1, 1, 0.01, 1, 1, 1};

/* ---- the rows ------------------------------------------------------------------------------- */

/* FingerPush-v0 and FingerPush-v1: what both rows share (-v1 adds its scaling). */
#define PUSH_R "-|x_o - x*| - 0.1 max(0, x_o - x_f) - 0.01 (F / 5 N)^2 + 10 [success]"
#define PUSH_ENDS "(lengths in m, F the applied force). Success, which terminates the episode: " \
    "|x_o - x*| < 0.05 m with the object at rest (|v_o| < 1e-3 m/s). Truncated after 200 steps " \
    "(10 s)."
#define PUSH_ROW \
    .preset = "finger", \
    .entity = "finger", \
    .ninfo = N(push_info), \
    .info = push_info, \
    .max_episode_steps = 200, \
    .nparams = N(finger_params), \
    .params = finger_params, \
    .nnames = N(finger_names), \
    .names = finger_names, \
    .reset = push_reset, \
    .observe = push_observe, \
    .evaluate = push_evaluate

/* FingerTouch-v0 and FingerTouch-v1: what both rows share (-v1 adds its scaling). */
#define TOUCH_R "-|s - F*| - 10 |x_o - x_o(0)| - 0.01 (F / 2 N)^2 + 10 [success]"
#define TOUCH_ENDS "(s the tip_force sensor in N, lengths in m). On target: |s - F*| < 0.05 N, " \
    "|x_o - x_o(0)| < 0.005 m and the object at rest; success, which terminates the episode: on " \
    "target for 10 control steps in a row (0.5 s). Truncated after 200 steps (10 s)."
#define TOUCH_ROW \
    .preset = "finger", \
    .entity = "finger", \
    .ninfo = N(touch_info), \
    .info = touch_info, \
    .max_episode_steps = 200, \
    .nparams = N(finger_params), \
    .params = finger_params, \
    .nnames = N(finger_names), \
    .names = finger_names, \
    .reset = touch_reset, \
    .observe = touch_observe, \
    .evaluate = touch_evaluate

static const rs_task_t tasks[] = {
    {
        .name = "FingerPush-v0",
        PUSH_ROW,
        .reward = TASK_REWARD(PUSH_R, PUSH_ENDS),
        .doc = "Push the object with the 1D finger so that its face comes to rest at the target "
               "x*. The finger can only push: an object pushed past the target stays there. "
               "Start: finger at 0, object face at U(0.2, 0.6) m, x* = object + U(0.5, 1.5) m, "
               "both at rest; control step 0.05 s.",
        .nobs = N(push_obs),
        .obs = push_obs,
        .nact = N(push_act),
        .act = push_act,
    },
    {
        .name = "FingerPush-v1",
        PUSH_ROW,
        .reward = TASK_REWARD_V1(PUSH_R, PUSH_ENDS),
        .doc = "FingerPush-v0 normalized: the action is the force as a fraction of 5 N in "
               "[-1, 1]; the observation is v0's with the tip force in units of 5 N, each "
               "bounded; the reward a tenth of v0's.",
        .nobs = N(push_obs_v1),
        .obs = push_obs_v1,
        .nact = N(unit_act1),
        .act = unit_act1,
        .cmd = push_act,
        .obs_scale = push_scale_v1,
        .reward_scale = 0.1,
    },
    {
        .name = "FingerTouch-v0",
        TOUCH_ROW,
        .reward = TASK_REWARD(TOUCH_R, TOUCH_ENDS),
        .doc = "Press on the object with the target tip force F* without moving it: approach "
               "gently (an impact kicks the object) and hold the force, below static friction "
               "(1 N). Start: finger at 0, object face at U(0.1, 0.5) m, F* = U(0.2, 0.8) N; "
               "control step 0.05 s.",
        .nobs = N(touch_obs),
        .obs = touch_obs,
        .nact = N(touch_act),
        .act = touch_act,
    },
    {
        .name = "FingerTouch-v1",
        TOUCH_ROW,
        .reward = TASK_REWARD_V1(TOUCH_R, TOUCH_ENDS),
        .doc = "FingerTouch-v0 normalized: the action is the force as a fraction of 2 N in "
               "[-1, 1]; the observation is v0's with the displacement in cm, each bounded; "
               "the reward a tenth of v0's.",
        .nobs = N(touch_obs_v1),
        .obs = touch_obs_v1,
        .nact = N(unit_act1),
        .act = unit_act1,
        .cmd = touch_act,
        .obs_scale = touch_scale_v1,
        .reward_scale = 0.1,
    },
};

const rs_task_family_t rs_tasks_finger = {N(tasks), tasks};
