/* The reach tasks of the two arms: SerialArmReach (PID setpoints; -v1 normalized) and
 * ParallelArmReach (PID setpoints in -v0; the servos driven by torque in -v1). */
#include "task_util.h"

static const double dt_005[] = {0.05};

#define REACH_SPEED 0.05 /* m/s: the end effector counts as stopped below this */
enum { REACH_X = RS_TASK_PRIVATE, REACH_Y };

static const rs_var_desc_t reach_obs[] = {
    {"theta1", "rad", -INFINITY, INFINITY, "joint 1 angle"},
    {"theta2", "rad", -INFINITY, INFINITY, "joint 2 angle"},
    {"theta1_dot", "rad/s", -INFINITY, INFINITY, "joint 1 rate"},
    {"theta2_dot", "rad/s", -INFINITY, INFINITY, "joint 2 rate"},
    {"x", "m", -INFINITY, INFINITY, "end effector x"},
    {"y", "m", -INFINITY, INFINITY, "end effector y"},
    {"target_x", "m", -INFINITY, INFINITY, "target point x"},
    {"target_y", "m", -INFINITY, INFINITY, "target point y"},
};

static const char *const reach_info[] = {"distance", "speed", "effort", "success"};

/* the names the reach tasks read (both arms have them) */
enum { R_THETA1, R_THETA2, R_THETA1_DOT, R_THETA2_DOT, R_X, R_Y, R_VX, R_VY, R_TAU1, R_TAU2,
       R_TAU_MAX };
static const rs_task_name_t reach_names[] = {
    [R_THETA1] = {RS_TASK_NAME_STATE, "theta1"},
    [R_THETA2] = {RS_TASK_NAME_STATE, "theta2"},
    [R_THETA1_DOT] = {RS_TASK_NAME_STATE, "theta1_dot"},
    [R_THETA2_DOT] = {RS_TASK_NAME_STATE, "theta2_dot"},
    [R_X] = {RS_TASK_NAME_SENSOR, "x"},
    [R_Y] = {RS_TASK_NAME_SENSOR, "y"},
    [R_VX] = {RS_TASK_NAME_SENSOR, "vx"},
    [R_VY] = {RS_TASK_NAME_SENSOR, "vy"},
    [R_TAU1] = {RS_TASK_NAME_SENSOR, "tau1"},
    [R_TAU2] = {RS_TASK_NAME_SENSOR, "tau2"},
    [R_TAU_MAX] = {RS_TASK_NAME_PARAM, "tau_max"},
};

static const rs_var_desc_t serial_act[] = {
    {"joint1", "rad", -M_PI, M_PI, "joint 1 PID setpoint angle"},
    {"joint2", "rad", -M_PI, M_PI, "joint 2 PID setpoint angle"},
};

static const rs_var_desc_t parallel_act[] = {
    {"servo1", "rad", 0.0, M_PI / 2, "left servo PID setpoint angle"},
    {"servo2", "rad", 0.0, M_PI / 2, "right servo PID setpoint angle"},
};

static const double pid_modes[] = {1, 1};
static const double serial_kp[] = {4, 2}, serial_ki[] = {4, 2}, serial_kd[] = {0.2, 0.08};
static const rs_task_param_t serial_params[] = {
    {"", "control_dt", 1, dt_005},
    {"arm", "actuator_mode", 2, pid_modes},
    {"arm", "kP", 2, serial_kp},
    {"arm", "kI", 2, serial_ki},
    {"arm", "kD", 2, serial_kd},
};
static const rs_task_param_t parallel_params[] = {
    {"", "control_dt", 1, dt_005},
    {"delta", "actuator_mode", 2, pid_modes},
};

/* The arms' actions are PID setpoints: both joints must be in PID mode. */
static int reach_validate(const rs_model_t *m, int e, rs_status_t *st)
{
    for (int j = 0; j < 2; j++)
        if (rs_model_param(m, e, "actuator_mode", j) != 1.0)
            return rs_fail(st, RS_EINVAL,
                           "the reach tasks drive the joints by PID setpoints; '%s.actuator_mode' "
                           "must stay 1, 1 (PID)",
                           m->ent[e].name);
    return 0;
}

static void reach_observe(const rs_model_t *m, const rs_data_t *d, const rs_task_bind_t *b,
                          double *obs)
{
    (void)m;
    obs[0] = state_of(d, b, R_THETA1);
    obs[1] = state_of(d, b, R_THETA2);
    obs[2] = state_of(d, b, R_THETA1_DOT);
    obs[3] = state_of(d, b, R_THETA2_DOT);
    obs[4] = sensor_of(d, b, R_X);
    obs[5] = sensor_of(d, b, R_Y);
    obs[6] = d->task[REACH_X];
    obs[7] = d->task[REACH_Y];
}

/* -scale d - 0.01 effort + 10 [success]; success: d < tol and the end effector stopped. */
static double reach_evaluate(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                             double scale, double tol, int *terminated, double *info)
{
    double dist = rs_hypot(sensor_of(d, b, R_X) - d->task[REACH_X],
                           sensor_of(d, b, R_Y) - d->task[REACH_Y]);
    double speed = rs_hypot(sensor_of(d, b, R_VX), sensor_of(d, b, R_VY));
    double effort = 0.5 * (sq(sensor_of(d, b, R_TAU1) / param_of(m, b, R_TAU_MAX, 0)) +
                           sq(sensor_of(d, b, R_TAU2) / param_of(m, b, R_TAU_MAX, 1)));
    int success = dist < tol && speed < REACH_SPEED;
    info[0] = dist, info[1] = speed, info[2] = effort, info[3] = success;
    *terminated = success;
    return -scale * dist - EFFORT_WEIGHT * effort + SUCCESS_BONUS * success;
}

#define SERIAL_TOL 0.01  /* m */
#define PARALLEL_TOL 0.005

/* The end effector's point at joint angles q, through the robot table's forward kinematics
 * (rs_robot_t.joints_to_point); RS_EINVAL when the linkage does not assemble there. */
static int arm_point(const rs_model_t *m, int e, const double q[2], double p[2], double *stretch)
{
    const rs_entity_model_t *em = &m->ent[e];
    return em->robot->joints_to_point ? em->robot->joints_to_point(em, q, p, stretch) : RS_EUNIMPL;
}

static int serial_reset(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                        rs_status_t *st)
{
    int e = b->entity;
    double q0[2], p0[2], q[2], p[2];
    q0[0] = uniform(d, -M_PI, M_PI);
    q0[1] = uniform(d, -M_PI, M_PI);
    if (arm_point(m, e, q0, p0, NULL) < 0)
        return rs_fail(st, RS_EINTERNAL, "'%s' (%s) has no forward kinematics",
                       m->ent[e].name, m->ent[e].robot->kind);
    /* a target point at least 3 tolerances away, as the image of random joint angles */
    for (int k = 0;; k++) {
        q[0] = uniform(d, -M_PI, M_PI);
        q[1] = uniform(d, -M_PI, M_PI);
        arm_point(m, e, q, p, NULL);
        if (rs_hypot(p[0] - p0[0], p[1] - p0[1]) > 3 * SERIAL_TOL || k == SAMPLE_TRIES)
            break;
    }
    d->task[REACH_X] = p[0];
    d->task[REACH_Y] = p[1];
    rs_param_t init[] = {{m->ent[e].name, "theta0", q0, 2}};
    return rs_reset_initial(m, d, init, 1, st);
}

static double serial_evaluate(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                              int first_event, int *terminated, double *info)
{
    return reach_evaluate(m, d, b, 10.0, SERIAL_TOL, terminated, info);
}

/* Joint angles inside the servo range with a margin, where the linkage assembles at least 2%
 * short of stretched. */
static int parallel_sample(const rs_model_t *m, rs_data_t *d, int e, double q[2], double p[2])
{
    double lo[2], hi[2], stretch;
    for (int j = 0; j < 2; j++) {
        lo[j] = rs_model_param(m, e, "theta_min", j);
        hi[j] = rs_model_param(m, e, "theta_max", j);
        double margin = 0.1 * (hi[j] - lo[j]);
        lo[j] += margin, hi[j] -= margin;
    }
    for (int k = 0; k < SAMPLE_TRIES; k++) {
        q[0] = uniform(d, lo[0], hi[0]);
        q[1] = uniform(d, lo[1], hi[1]);
        if (arm_point(m, e, q, p, &stretch) == 0 && stretch < 0.98)
            return 0;
    }
    return -1;
}

static int parallel_reset(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                          rs_status_t *st)
{
    int e = b->entity;
    double q0[2], p0[2], q[2], p[2];
    if (parallel_sample(m, d, e, q0, p0) < 0)
        return rs_fail(st, RS_EINVAL,
                       "no joint angles inside the servo range of '%s' assemble the linkage; "
                       "check L0, L1, L2, theta_min and theta_max",
                       m->ent[e].name);
    for (int k = 0;; k++) {
        if (parallel_sample(m, d, e, q, p) < 0)
            p[0] = p0[0], p[1] = p0[1];
        if (rs_hypot(p[0] - p0[0], p[1] - p0[1]) > 3 * PARALLEL_TOL || k == SAMPLE_TRIES)
            break;
    }
    d->task[REACH_X] = p[0];
    d->task[REACH_Y] = p[1];
    rs_param_t init[] = {{m->ent[e].name, "theta0", q0, 2}};
    return rs_reset_initial(m, d, init, 1, st);
}

static double parallel_evaluate(const rs_model_t *m, rs_data_t *d, const rs_task_bind_t *b,
                                int first_event, int *terminated, double *info)
{
    return reach_evaluate(m, d, b, 20.0, PARALLEL_TOL, terminated, info);
}

/* ---- ParallelArmReach-v1: the servos driven by torque ------------------------------------ */

/* v0's setpoints let the servos' PID do all the work (the scripted baseline solves it in two
 * steps). Here the action is each servo's torque as a fraction of +-0.5 N*m (tau_max), so a
 * policy has to accelerate, brake and hold the arm itself. Heavier servos than the preset's
 * (J = 0.01 kg m^2, mu_V = 0.02 N m s/rad: at most 50 rad/s^2, a 0.5 s damping time, 25 rad/s
 * at full torque) keep one 0.05 s control step from moving a joint more than ~0.06 rad from
 * rest, so the task is controllable at 20 Hz. Observations scaled to order 1 and bounded. */
static const double torque_modes[] = {0, 0}, heavy_J[] = {0.01, 0.01}, heavy_muV[] = {0.02, 0.02};
static const rs_task_param_t parallel_v1_params[] = {
    {"", "control_dt", 1, dt_005},
    {"delta", "actuator_mode", 2, torque_modes},
    {"delta", "J", 2, heavy_J},
    {"delta", "mu_V", 2, heavy_muV},
};

static const rs_var_desc_t parallel_v1_act[] = {
    {"servo1", "1", -1.0, 1.0, "left servo torque as a fraction of 0.5 N*m"},
    {"servo2", "1", -1.0, 1.0, "right servo torque as a fraction of 0.5 N*m"},
};
static const rs_var_desc_t parallel_v1_cmd[] = {
    {"servo1", "N*m", -0.5, 0.5, "left servo torque"},
    {"servo2", "N*m", -0.5, 0.5, "right servo torque"},
};

static const rs_var_desc_t reach_v1_obs[] = {
    {"theta1", "rad", -2.0, 2.0, "joint 1 angle"},
    {"theta2", "rad", -2.0, 2.0, "joint 2 angle"},
    {"theta1_dot", "10 rad/s", -5.0, 5.0, "joint 1 rate / (10 rad/s)"},
    {"theta2_dot", "10 rad/s", -5.0, 5.0, "joint 2 rate / (10 rad/s)"},
    {"x", "0.1 m", -3.0, 3.0, "end effector x / (0.1 m)"},
    {"y", "0.1 m", -3.0, 3.0, "end effector y / (0.1 m)"},
    {"target_x", "0.1 m", -3.0, 3.0, "target point x / (0.1 m)"},
    {"target_y", "0.1 m", -3.0, 3.0, "target point y / (0.1 m)"},
};
static const double reach_v1_scale[] = {1, 1, 10, 10, 0.1, 0.1, 0.1, 0.1};

/* The servos run in torque mode here. */
static int torque_validate(const rs_model_t *m, int e, rs_status_t *st)
{
    for (int j = 0; j < 2; j++)
        if (rs_model_param(m, e, "actuator_mode", j) != 0.0)
            return rs_fail(st, RS_EINVAL,
                           "this task drives the servos by torque; '%s.actuator_mode' must stay "
                           "0, 0 (torque)",
                           m->ent[e].name);
    return 0;
}

/* The normalized version (-v1): the same episodes (resets, reward terms, success), for
 * learners: the action is [-1, 1] per value, mapped linearly onto v0's bounds (cmd); the
 * observation is v0's divided by a scale of its typical magnitude and clipped to finite
 * bounds; the reward is a tenth of v0's, so that returns stay within tens. */
static const rs_var_desc_t serial_act_v1[] = {
    {"joint1", "pi rad", -1.0, 1.0, "joint 1 PID setpoint angle / pi"},
    {"joint2", "pi rad", -1.0, 1.0, "joint 2 PID setpoint angle / pi"},
};
static const rs_var_desc_t serial_obs_v1[] = {
    {"theta1", "rad", -M_PI, M_PI, "joint 1 angle, wrapped to [-pi, pi]"},
    {"theta2", "rad", -M_PI, M_PI, "joint 2 angle, wrapped to [-pi, pi]"},
    {"theta1_dot", "10 rad/s", -10.0, 10.0, "joint 1 rate / (10 rad/s)"},
    {"theta2_dot", "10 rad/s", -10.0, 10.0, "joint 2 rate / (10 rad/s)"},
    {"x", "m", -5.0, 5.0, "end effector x"},
    {"y", "m", -5.0, 5.0, "end effector y"},
    {"target_x", "m", -5.0, 5.0, "target point x"},
    {"target_y", "m", -5.0, 5.0, "target point y"},
};
static const double serial_scale_v1[] = {1, 1, 10, 10, 1, 1, 1, 1};

/* v0's observation with the joint angles wrapped to [-pi, pi] (the serial arm's joints turn
 * freely, so v0's angles are unbounded). */
static void serial_observe_v1(const rs_model_t *m, const rs_data_t *d, const rs_task_bind_t *b,
                              double *obs)
{
    reach_observe(m, d, b, obs);
    obs[0] = atan2(sin(obs[0]), cos(obs[0]));
    obs[1] = atan2(sin(obs[1]), cos(obs[1]));
}

/* ---- the rows ------------------------------------------------------------------------------- */

/* SerialArmReach-v0 and SerialArmReach-v1: what both rows share (-v1 adds its scaling). */
#define SERIAL_R "-10 d - 0.01 (tau1^2 / tau_max1^2 + tau2^2 / tau_max2^2) / 2 + 10 [success]"
#define SERIAL_ENDS "(d the end effector's distance to the target in m, tau the applied joint " \
    "torques). Success, which terminates the episode: d < 0.01 m with the end effector slower " \
    "than 0.05 m/s. Truncated after 200 steps (10 s)."
#define SERIAL_ROW \
    .preset = "serial_arm", \
    .entity = "arm", \
    .ninfo = N(reach_info), \
    .info = reach_info, \
    .max_episode_steps = 200, \
    .nparams = N(serial_params), \
    .params = serial_params, \
    .validate = reach_validate, \
    .nnames = N(reach_names), \
    .names = reach_names, \
    .reset = serial_reset, \
    .evaluate = serial_evaluate

/* ParallelArmReach-v0 and ParallelArmReach-v1: what both rows share (-v1 adds its scaling). */
#define PARALLEL_R "-20 d - 0.01 (tau1^2 / tau_max1^2 + tau2^2 / tau_max2^2) / 2 + 10 [success]"
#define PARALLEL_ENDS "(d the end effector's distance to the target in m, tau the applied servo " \
    "torques). Success, which terminates the episode: d < 0.005 m with the end effector slower " \
    "than 0.05 m/s. Truncated after 200 steps (10 s)."
#define PARALLEL_ROW \
    .preset = "parallel_arm", \
    .entity = "delta", \
    .ninfo = N(reach_info), \
    .info = reach_info, \
    .max_episode_steps = 200, \
    .nnames = N(reach_names), \
    .names = reach_names, \
    .reset = parallel_reset, \
    .observe = reach_observe, \
    .evaluate = parallel_evaluate

static const rs_task_t tasks[] = {
    {
        .name = "CSerialArmReach-v0",
        SERIAL_ROW,
        .reward = TASK_REWARD(SERIAL_R, SERIAL_ENDS),
        .doc = "Bring the end effector of the vertical two-link arm (gravity on) to the target "
               "point and stop there. The action is the two joints' PID setpoint angles. Start: "
               "joint angles U(-pi, pi); the target is the end effector's position for other "
               "random angles, at least 3 cm away; control step 0.05 s; PID gains kP = 4, 2, "
               "kI = 4, 2, kD = 0.2, 0.08.",
        .nobs = N(reach_obs),
        .obs = reach_obs,
        .nact = N(serial_act),
        .act = serial_act,
        .observe = reach_observe,
    },
    {
        .name = "CSerialArmReach-v1",
        SERIAL_ROW,
        .reward = TASK_REWARD_V1(SERIAL_R, SERIAL_ENDS),
        .doc = "SerialArmReach-v0 normalized: the action is the two joints' PID setpoint "
               "angles as fractions of pi in [-1, 1]; the observation is v0's with the joint "
               "angles wrapped to [-pi, pi] and the rates in 10 rad/s, each bounded; the reward "
               "a tenth of v0's.",
        .nobs = N(serial_obs_v1),
        .obs = serial_obs_v1,
        .nact = N(serial_act_v1),
        .act = serial_act_v1,
        .observe = serial_observe_v1,
        .cmd = serial_act,
        .obs_scale = serial_scale_v1,
        .reward_scale = 0.1,
    },
    {
        .name = "CParallelArmReach-v0",
        PARALLEL_ROW,
        .reward = TASK_REWARD(PARALLEL_R, PARALLEL_ENDS),
        .doc = "Bring the end effector of the parallel (2D delta) arm to the target point and "
               "stop there (y points down). The action is the two servos' PID setpoint angles. "
               "Start: servo angles uniform in the middle 80 % of their range; the target is the "
               "end effector's position for other such angles, at least 1.5 cm away; control "
               "step 0.05 s.",
        .nobs = N(reach_obs),
        .obs = reach_obs,
        .nact = N(parallel_act),
        .act = parallel_act,
        .nparams = N(parallel_params),
        .params = parallel_params,
        .validate = reach_validate,
    },
    {
        .name = "CParallelArmReach-v1",
        PARALLEL_ROW,
        .reward = TASK_REWARD_V1(PARALLEL_R, PARALLEL_ENDS),
        .doc = "ParallelArmReach-v0 driven by torque: bring the end effector of the parallel "
               "(2D delta) arm to the target point and stop there, the action being the two "
               "servos' torques as fractions of 0.5 N*m in [-1, 1] (heavier servos than the "
               "preset's: J = 0.01 kg m^2, mu_V = 0.02 N m s/rad). Start and target as in v0; "
               "control step 0.05 s. Observations as v0's, scaled: rates in 10 rad/s, "
               "positions in 0.1 m, each bounded.",
        .nobs = N(reach_v1_obs),
        .obs = reach_v1_obs,
        .nact = N(parallel_v1_act),
        .act = parallel_v1_act,
        .nparams = N(parallel_v1_params),
        .params = parallel_v1_params,
        .validate = torque_validate,
        .cmd = parallel_v1_cmd,
        .obs_scale = reach_v1_scale,
        .reward_scale = 0.1,
    },
};

const rs_task_family_t rs_tasks_arms = {.n = N(tasks), .tasks = tasks};
