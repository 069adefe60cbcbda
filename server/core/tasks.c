/* The task table and the episode loop (rs_task.h). Every reward is written once, in its row's
 * `reward` string, and computed once, in the row's evaluate(); the tests check the two agree on
 * hand-computed cases.
 *
 * Common shape of the rewards, per control step: a distance term (what the task is about), a
 * small effort penalty (commands or applied torques, normalised by their bounds, squared), and a
 * success bonus of +10 on the step that terminates the episode. No task terminates on failure:
 * with negative per-step rewards an early end would be a way out, so a bad state just keeps
 * costing until the time limit truncates the episode. */
#include "rs_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUCCESS_BONUS 10.0
#define EFFORT_WEIGHT 0.01
#define SAMPLE_TRIES 1000

/* ---- helpers ------------------------------------------------------------------------------ */

/* The values of a task's names by their resolved index (rs_task_bind): state variable k,
 * sensor k, value i of parameter k (NAN past the values set, as rs_model_param). */
static double state_of(const rs_data_t *d, const rs_task_bind_t *b, int k)
{
    return d->x[b->index[k]];
}

static double sensor_of(const rs_data_t *d, const rs_task_bind_t *b, int k)
{
    return d->sensors[b->index[k]];
}

static double param_of(const rs_model_t *m, const rs_task_bind_t *b, int k, int i)
{
    const rs_entity_model_t *em = &m->ent[b->entity];
    int row = b->index[k];
    return i >= 0 && i < em->plen[row] ? em->p[em->robot->params[row].offset + i] : NAN;
}

/* Held command of actuator a of the task's entity. */
static double command_of(const rs_model_t *m, const rs_data_t *d, const rs_task_bind_t *b, int a)
{
    return d->u[m->ent[b->entity].u_off + a];
}

static double uniform(rs_data_t *d, double lo, double hi)
{
    return lo + (hi - lo) * rs_data_uniform(d);
}

static double sq(double v) { return v * v; }

/* ---- FingerPush-v0 ------------------------------------------------------------------------ */

#define PUSH_F_MAX 5.0    /* N */
#define PUSH_TOL 0.05     /* m */
#define REST_SPEED 1e-3   /* m/s: the object is at rest below this */
enum { PUSH_TARGET = RS_TASK_PRIVATE };

static const double dt_005[] = {0.05};
static const double dt_01[] = {0.1};

static const rs_task_param_t finger_params[] = {{"", "control_dt", 1, dt_005}};

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

/* ---- the arms: SerialArmReach-v0, ParallelArmReach-v0 ------------------------------------- */

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

/* ---- DiffDriveGoal-v0 --------------------------------------------------------------------- */

/* In metres since protocol 1.2 (the robot's unit; the task was written in the seed's cm: each
 * figure is the cm one / 100, and the reward, -d/100 with d in cm, is -d with d in m). */
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

/* ---- the normalized versions (-v1) of the other tasks --------------------------------------- */

/* The same episodes as v0 (resets, rewards' terms, success), for learners: the action is
 * [-1, 1] per value, mapped linearly onto v0's bounds (cmd); the observation is v0's divided
 * by a scale of its typical magnitude and clipped to finite bounds; the reward is a tenth of
 * v0's, so that returns stay within tens. */
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

/* ---- MobileAlign-v0 (issue 11, seed 001's alignment) --------------------------------------- */

#define ALIGN_TOL (M_PI / 180) /* rad */
#define ALIGN_TUBE_LO 0.68     /* m, seed 001's tube */
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
    /* a start angle of 0.1 to 0.3 rad either way, as the seed's figure */
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

/* ---- the table ---------------------------------------------------------------------------- */

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

static const rs_task_t tasks[] = {
    {
        .name = "FingerPush-v0",
        .preset = "finger",
        .entity = "finger",
        .doc = "Push the object with the 1D finger so that its face comes to rest at the target "
               "x*. The finger can only push: an object pushed past the target stays there. "
               "Start: finger at 0, object face at U(0.2, 0.6) m, x* = object + U(0.5, 1.5) m, "
               "both at rest; control step 0.05 s.",
        .reward = "per control step: r = -|x_o - x*| - 0.1 max(0, x_o - x_f) - 0.01 (F / 5 N)^2 "
                  "+ 10 [success] (lengths in m, F the applied force). Success, which "
                  "terminates the episode: |x_o - x*| < 0.05 m with the object at rest "
                  "(|v_o| < 1e-3 m/s). Truncated after 200 steps (10 s).",
        .nobs = N(push_obs),
        .obs = push_obs,
        .nact = N(push_act),
        .act = push_act,
        .ninfo = N(push_info),
        .info = push_info,
        .max_episode_steps = 200,
        .nparams = N(finger_params),
        .params = finger_params,
        .nnames = N(finger_names),
        .names = finger_names,
        .reset = push_reset,
        .observe = push_observe,
        .evaluate = push_evaluate,
    },
    {
        .name = "FingerPush-v1",
        .preset = "finger",
        .entity = "finger",
        .doc = "FingerPush-v0 normalized: the action is the force as a fraction of 5 N in "
               "[-1, 1]; the observation is v0's with the tip force in units of 5 N, each "
               "bounded; the reward a tenth of v0's.",
        .reward = "per control step: r = 0.1 (-|x_o - x*| - 0.1 max(0, x_o - x_f) - 0.01 (F / 5 "
                  "N)^2 + 10 [success]) (lengths in m, F the applied force). Success, which "
                  "terminates the episode: |x_o - x*| < 0.05 m with the object at rest "
                  "(|v_o| < 1e-3 m/s). Truncated after 200 steps (10 s).",
        .nobs = N(push_obs_v1),
        .obs = push_obs_v1,
        .nact = N(unit_act1),
        .act = unit_act1,
        .ninfo = N(push_info),
        .info = push_info,
        .max_episode_steps = 200,
        .nparams = N(finger_params),
        .params = finger_params,
        .nnames = N(finger_names),
        .names = finger_names,
        .reset = push_reset,
        .observe = push_observe,
        .evaluate = push_evaluate,
        .cmd = push_act,
        .obs_scale = push_scale_v1,
        .reward_scale = 0.1,
    },
    {
        .name = "FingerTouch-v0",
        .preset = "finger",
        .entity = "finger",
        .doc = "Press on the object with the target tip force F* without moving it: approach "
               "gently (an impact kicks the object) and hold the force, below static friction "
               "(1 N). Start: finger at 0, object face at U(0.1, 0.5) m, F* = U(0.2, 0.8) N; "
               "control step 0.05 s.",
        .reward = "per control step: r = -|s - F*| - 10 |x_o - x_o(0)| - 0.01 (F / 2 N)^2 + 10 "
                  "[success] (s the tip_force sensor in N, lengths in m). On target: |s - F*| "
                  "< 0.05 N, |x_o - x_o(0)| < 0.005 m and the object at rest; success, which "
                  "terminates the episode: on target for 10 control steps in a row (0.5 s). "
                  "Truncated after 200 steps (10 s).",
        .nobs = N(touch_obs),
        .obs = touch_obs,
        .nact = N(touch_act),
        .act = touch_act,
        .ninfo = N(touch_info),
        .info = touch_info,
        .max_episode_steps = 200,
        .nparams = N(finger_params),
        .params = finger_params,
        .nnames = N(finger_names),
        .names = finger_names,
        .reset = touch_reset,
        .observe = touch_observe,
        .evaluate = touch_evaluate,
    },
    {
        .name = "FingerTouch-v1",
        .preset = "finger",
        .entity = "finger",
        .doc = "FingerTouch-v0 normalized: the action is the force as a fraction of 2 N in "
               "[-1, 1]; the observation is v0's with the displacement in cm, each bounded; "
               "the reward a tenth of v0's.",
        .reward = "per control step: r = 0.1 (-|s - F*| - 10 |x_o - x_o(0)| - 0.01 (F / 2 N)^2 "
                  "+ 10 [success]) (s the tip_force sensor in N, lengths in m). On target: "
                  "|s - F*| < 0.05 N, |x_o - x_o(0)| < 0.005 m and the object at rest; success, "
                  "which terminates the episode: on target for 10 control steps in a row "
                  "(0.5 s). Truncated after 200 steps (10 s).",
        .nobs = N(touch_obs_v1),
        .obs = touch_obs_v1,
        .nact = N(unit_act1),
        .act = unit_act1,
        .ninfo = N(touch_info),
        .info = touch_info,
        .max_episode_steps = 200,
        .nparams = N(finger_params),
        .params = finger_params,
        .nnames = N(finger_names),
        .names = finger_names,
        .reset = touch_reset,
        .observe = touch_observe,
        .evaluate = touch_evaluate,
        .cmd = touch_act,
        .obs_scale = touch_scale_v1,
        .reward_scale = 0.1,
    },
    {
        .name = "SerialArmReach-v0",
        .preset = "serial_arm",
        .entity = "arm",
        .doc = "Bring the end effector of the vertical two-link arm (gravity on) to the target "
               "point and stop there. The action is the two joints' PID setpoint angles. Start: "
               "joint angles U(-pi, pi); the target is the end effector's position for other "
               "random angles, at least 3 cm away; control step 0.05 s; PID gains kP = 4, 2, "
               "kI = 4, 2, kD = 0.2, 0.08.",
        .reward = "per control step: r = -10 d - 0.01 (tau1^2 / tau_max1^2 + tau2^2 / "
                  "tau_max2^2) / 2 + 10 [success] (d the end effector's distance to the target "
                  "in m, tau the applied joint torques). Success, which terminates the episode: "
                  "d < 0.01 m with the end effector slower than 0.05 m/s. Truncated after 200 "
                  "steps (10 s).",
        .nobs = N(reach_obs),
        .obs = reach_obs,
        .nact = N(serial_act),
        .act = serial_act,
        .ninfo = N(reach_info),
        .info = reach_info,
        .max_episode_steps = 200,
        .nparams = N(serial_params),
        .params = serial_params,
        .validate = reach_validate,
        .nnames = N(reach_names),
        .names = reach_names,
        .reset = serial_reset,
        .observe = reach_observe,
        .evaluate = serial_evaluate,
    },
    {
        .name = "SerialArmReach-v1",
        .preset = "serial_arm",
        .entity = "arm",
        .doc = "SerialArmReach-v0 normalized: the action is the two joints' PID setpoint "
               "angles as fractions of pi in [-1, 1]; the observation is v0's with the joint "
               "angles wrapped to [-pi, pi] and the rates in 10 rad/s, each bounded; the reward "
               "a tenth of v0's.",
        .reward = "per control step: r = 0.1 (-10 d - 0.01 (tau1^2 / tau_max1^2 + tau2^2 / "
                  "tau_max2^2) / 2 + 10 [success]) (d the end effector's distance to the target "
                  "in m, tau the applied joint torques). Success, which terminates the episode: "
                  "d < 0.01 m with the end effector slower than 0.05 m/s. Truncated after 200 "
                  "steps (10 s).",
        .nobs = N(serial_obs_v1),
        .obs = serial_obs_v1,
        .nact = N(serial_act_v1),
        .act = serial_act_v1,
        .ninfo = N(reach_info),
        .info = reach_info,
        .max_episode_steps = 200,
        .nparams = N(serial_params),
        .params = serial_params,
        .validate = reach_validate,
        .nnames = N(reach_names),
        .names = reach_names,
        .reset = serial_reset,
        .observe = serial_observe_v1,
        .evaluate = serial_evaluate,
        .cmd = serial_act,
        .obs_scale = serial_scale_v1,
        .reward_scale = 0.1,
    },
    {
        .name = "ParallelArmReach-v0",
        .preset = "parallel_arm",
        .entity = "delta",
        .doc = "Bring the end effector of the parallel (2D delta) arm to the target point and "
               "stop there (y points down). The action is the two servos' PID setpoint angles. "
               "Start: servo angles uniform in the middle 80 % of their range; the target is the "
               "end effector's position for other such angles, at least 1.5 cm away; control "
               "step 0.05 s.",
        .reward = "per control step: r = -20 d - 0.01 (tau1^2 / tau_max1^2 + tau2^2 / "
                  "tau_max2^2) / 2 + 10 [success] (d the end effector's distance to the target "
                  "in m, tau the applied servo torques). Success, which terminates the episode: "
                  "d < 0.005 m with the end effector slower than 0.05 m/s. Truncated after 200 "
                  "steps (10 s).",
        .nobs = N(reach_obs),
        .obs = reach_obs,
        .nact = N(parallel_act),
        .act = parallel_act,
        .ninfo = N(reach_info),
        .info = reach_info,
        .max_episode_steps = 200,
        .nparams = N(parallel_params),
        .params = parallel_params,
        .validate = reach_validate,
        .nnames = N(reach_names),
        .names = reach_names,
        .reset = parallel_reset,
        .observe = reach_observe,
        .evaluate = parallel_evaluate,
    },
    {
        .name = "ParallelArmReach-v1",
        .preset = "parallel_arm",
        .entity = "delta",
        .doc = "ParallelArmReach-v0 driven by torque: bring the end effector of the parallel "
               "(2D delta) arm to the target point and stop there, the action being the two "
               "servos' torques as fractions of 0.5 N*m in [-1, 1] (heavier servos than the "
               "preset's: J = 0.01 kg m^2, mu_V = 0.02 N m s/rad). Start and target as in v0; "
               "control step 0.05 s. Observations as v0's, scaled: rates in 10 rad/s, "
               "positions in 0.1 m, each bounded.",
        .reward = "per control step: r = 0.1 (-20 d - 0.01 (tau1^2 / tau_max1^2 + tau2^2 / "
                  "tau_max2^2) / 2 + 10 [success]) (d the end effector's distance to the target "
                  "in m, tau the applied servo torques). Success, which terminates the episode: "
                  "d < 0.005 m with the end effector slower than 0.05 m/s. Truncated after 200 "
                  "steps (10 s).",
        .nobs = N(reach_v1_obs),
        .obs = reach_v1_obs,
        .nact = N(parallel_v1_act),
        .act = parallel_v1_act,
        .ninfo = N(reach_info),
        .info = reach_info,
        .max_episode_steps = 200,
        .nparams = N(parallel_v1_params),
        .params = parallel_v1_params,
        .validate = torque_validate,
        .nnames = N(reach_names),
        .names = reach_names,
        .reset = parallel_reset,
        .observe = reach_observe,
        .evaluate = parallel_evaluate,
        .cmd = parallel_v1_cmd,
        .obs_scale = reach_v1_scale,
        .reward_scale = 0.1,
    },
    {
        .name = "DiffDriveGoal-v0",
        .preset = "diff_drive",
        .entity = "robot",
        .doc = "Drive the differential-drive robot (m) to the goal among five disk obstacles "
               "(centres and radii: (0, 0, 0.3), (-1, 0.8, 0.25), (1, -0.8, 0.25), (0.9, 1.1, "
               "0.2), (-1.1, -1, 0.2) m). Start and goal: uniform in [-1.8, 1.8]^2 m, 0.1 m "
               "clear of the inflated obstacles, at least 1 m apart; heading U(-pi, pi); control "
               "step 0.1 s.",
        .reward = "per control step: r = -d - 0.01 ((w1 / 10)^2 + (w2 / 10)^2) / 2 - 1 "
                  "[collision] + 10 [success] (d the distance to the goal in m, w the wheel "
                  "speeds in rad/s). A collision: a contact event with an obstacle in this step, "
                  "or the bumper still pressed at its end. Success, which terminates the "
                  "episode: d < 0.1 m. Truncated after 300 steps (30 s).",
        .nobs = N(dd_obs),
        .obs = dd_obs,
        .nact = N(dd_act),
        .act = dd_act,
        .ninfo = N(dd_info),
        .info = dd_info,
        .max_episode_steps = 300,
        .nparams = N(dd_params),
        .params = dd_params,
        .nnames = N(dd_names),
        .names = dd_names,
        .reset = dd_reset,
        .observe = dd_observe,
        .evaluate = dd_evaluate,
    },
    {
        .name = "DiffDriveGoal-v1",
        .preset = "diff_drive",
        .entity = "robot",
        .doc = "DiffDriveGoal-v0 normalized: the action is the wheel speeds as fractions of "
               "10 rad/s in [-1, 1]; the observation is v0's (in m), each bounded; the reward a "
               "tenth of v0's.",
        .reward = "per control step: r = 0.1 (-d - 0.01 ((w1 / 10)^2 + (w2 / 10)^2) / 2 - "
                  "1 [collision] + 10 [success]) (d the distance to the goal in m, w the wheel "
                  "speeds in rad/s). A collision: a contact event with an obstacle in this "
                  "step, or the bumper still pressed at its end. Success, which terminates the "
                  "episode: d < 0.1 m. Truncated after 300 steps (30 s).",
        .nobs = N(dd_obs_v1),
        .obs = dd_obs_v1,
        .nact = N(dd_act_v1),
        .act = dd_act_v1,
        .ninfo = N(dd_info),
        .info = dd_info,
        .max_episode_steps = 300,
        .nparams = N(dd_params),
        .params = dd_params,
        .nnames = N(dd_names),
        .names = dd_names,
        .reset = dd_reset,
        .observe = dd_observe,
        .evaluate = dd_evaluate,
        .cmd = dd_act,
        .obs_scale = dd_scale_v1,
        .reward_scale = 0.1,
    },
    {
        .name = "MobileAlign-v0",
        .preset = "mobile_manipulator",
        .entity = "mm",
        .doc = "Align the mobile manipulator to the table edge (seed 001): heading within 1 "
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

#define NTASKS N(tasks)

const rs_task_t *rs_task_find(const char *name)
{
    for (int i = 0; name && i < NTASKS; i++)
        if (strcmp(tasks[i].name, name) == 0)
            return &tasks[i];
    return NULL;
}

const char *const *rs_task_names(void)
{
    static const char *names[NTASKS + 1];
    for (int i = 0; i < NTASKS; i++)
        names[i] = tasks[i].name;
    names[NTASKS] = NULL;
    return names;
}

/* ---- episodes ----------------------------------------------------------------------------- */

static int name_index(const rs_var_desc_t *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return i;
    return -1;
}

int rs_task_bind(const rs_task_t *t, const rs_model_t *m, rs_task_bind_t *b, rs_status_t *st)
{
    static const char *const kinds[] = {"state variable", "sensor", "parameter", "event kind"};
    int e = rs_model_entity(m, t->entity);
    if (e < 0)
        return rs_fail(st, RS_EINTERNAL, "task '%s' drives entity '%s', which the world lacks",
                       t->name, t->entity);
    if (t->nnames > RS_TASK_MAX_NAMES)
        return rs_fail(st, RS_EINTERNAL, "task '%s' reads %d names, more than %d", t->name,
                       t->nnames, RS_TASK_MAX_NAMES);
    const rs_entity_model_t *em = &m->ent[e];
    const rs_robot_t *r = em->robot;
    rs_task_bind_t next = {.robot = r, .entity = e};
    for (int k = 0; k < t->nnames; k++) {
        const rs_task_name_t *n = &t->names[k];
        int i = -1;
        switch (n->kind) {
        case RS_TASK_NAME_STATE:
            i = name_index(r->state, em->nx, n->name);
            next.index[k] = em->x_off + i;
            break;
        case RS_TASK_NAME_SENSOR:
            i = name_index(r->sensors, em->ns, n->name);
            next.index[k] = em->s_off + i;
            break;
        case RS_TASK_NAME_PARAM:
            for (int j = 0; j < r->np && i < 0; j++)
                if (strcmp(r->params[j].name, n->name) == 0)
                    i = j;
            next.index[k] = i;
            break;
        case RS_TASK_NAME_EVENT:
            for (int j = 0; j < r->nevent_kinds && i < 0; j++)
                if (strcmp(r->event_names[j], n->name) == 0)
                    i = j;
            next.index[k] = i;
            break;
        }
        if (i < 0)
            return rs_fail(st, RS_EINTERNAL, "task '%s' reads %s '%s', which robot '%s' lacks",
                           t->name, kinds[n->kind], n->name, r->kind);
    }
    *b = next;
    return 0;
}

/* The world's task binding in *out: w->task_bind, or, if the model's entity has another robot
 * than the one it was resolved for (never, in practice: a task world's preset is fixed, and
 * SetParams and snapshots keep it), the names resolved again into *scratch. 0 or an error. */
static int task_bound(const rs_world_t *w, rs_task_bind_t *scratch, const rs_task_bind_t **out,
                      rs_status_t *st)
{
    const rs_task_bind_t *b = &w->task_bind;
    const rs_model_t *m = w->model;
    *out = scratch;
    if (b->robot && b->entity < m->nentities && m->ent[b->entity].robot == b->robot) {
        *out = b;
        return 0;
    }
    return rs_task_bind(w->task, m, scratch, st);
}

uint64_t rs_task_episode_limit(const rs_task_t *t, const rs_model_t *m)
{
    return m->max_episode_steps > 0 ? (uint64_t)m->max_episode_steps : t->max_episode_steps;
}

int rs_task_check_model(const rs_task_t *t, const rs_model_t *m, rs_status_t *st)
{
    int e = rs_model_entity(m, t->entity);
    if (e < 0)
        return rs_fail(st, RS_EINTERNAL, "task '%s' drives entity '%s', which the world lacks",
                       t->name, t->entity);
    return t->validate ? t->validate(m, e, st) : 0;
}

rs_world_t *rs_world_new_task(const char *task, const char *preset, const rs_param_t *params,
                              size_t nparams, uint64_t seed, rs_status_t *st)
{
    const rs_task_t *t = rs_task_find(task);
    if (!t) {
        char names[400] = "";
        for (int i = 0; i < NTASKS; i++)
            rs_join(names, sizeof names, "%s", tasks[i].name);
        rs_fail(st, RS_ENOTFOUND, "unknown task '%s' (tasks: %s)", task ? task : "", names);
        return NULL;
    }
    if (preset && preset[0] && strcmp(preset, t->preset) != 0) {
        rs_fail(st, RS_EINVAL,
                "task '%s' runs on preset '%s', not '%s'; leave the preset empty or name '%s'",
                t->name, t->preset, preset, t->preset);
        return NULL;
    }
    /* the task's defaults first, the client's overrides after them (the last value wins) */
    size_t n = (size_t)t->nparams + nparams;
    rs_param_t *all = calloc(n ? n : 1, sizeof *all);
    if (!all) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory for the parameters of a task world");
        return NULL;
    }
    for (int i = 0; i < t->nparams; i++)
        all[i] = (rs_param_t){t->params[i].entity, t->params[i].name, t->params[i].values,
                              (size_t)t->params[i].n};
    for (size_t i = 0; i < nparams; i++)
        all[t->nparams + i] = params[i];
    rs_world_t *w = rs_world_new(t->preset, all, n, seed, st);
    free(all);
    if (!w)
        return NULL;
    w->task = t;
    if (rs_task_check_model(t, w->model, st) < 0 ||
        rs_task_bind(t, w->model, &w->task_bind, st) < 0 || rs_world_reset(w, seed, st) < 0)
        rs_world_destroy(&w);
    return w;
}

int rs_world_reset(rs_world_t *w, uint64_t seed, rs_status_t *st)
{
    int rc = rs_reset(w->model, w->data, seed, st);
    if (rc < 0 || !w->task)
        return rc;
    rs_data_t *d = w->data;
    memset(d->task, 0, sizeof d->task);
    d->episode_steps = 0;
    int bc = rs_task_bind(w->task, w->model, &w->task_bind, st);
    if (bc < 0)
        return bc;
    if ((rc = w->task->reset(w->model, d, &w->task_bind, st)) < 0)
        return rc;
    rs_digest_start(w->model, d); /* the episode's start and targets are part of its state */
    return 0;
}

int rs_task_check_action(const rs_task_t *t, const double *action, size_t n, rs_status_t *st)
{
    if (n != (size_t)t->nact)
        return rs_fail(st, RS_EINVAL, "task '%s' takes an action of %d value%s, got %zu", t->name,
                       t->nact, t->nact == 1 ? "" : "s", n);
    for (int i = 0; i < t->nact; i++) {
        const rs_var_desc_t *v = &t->act[i];
        if (!isfinite(action[i]))
            return rs_fail(st, RS_EINVAL, "action[%d] (%s) of task '%s' is not finite", i, v->name,
                           t->name);
        if (action[i] < v->lower || action[i] > v->upper)
            return rs_fail(st, RS_ERANGE, "action[%d] (%s) = %g is outside [%g, %g] %s", i,
                           v->name, action[i], v->lower, v->upper, v->unit);
    }
    return 0;
}

int rs_world_task_step(rs_world_t *w, const double *action, size_t n, uint64_t nsteps,
                       rs_status_t *st)
{
    uint64_t done = 0;
    int rc = rs_world_task_step_until(w, action, n, nsteps, INFINITY, 0, &done, st);
    const rs_data_t *d = w->data;
    if (rc == 0 && done < nsteps && d->task[RS_TASK_TERMINATED] == 0.0 &&
        d->task[RS_TASK_TRUNCATED] == 0.0)
        rc = rs_fail(st, RS_EDEADLINE, "interrupted at t = %.9g s after %llu of %llu control steps",
                     d->t, (unsigned long long)done, (unsigned long long)nsteps);
    return rc;
}

int rs_world_task_step_until(rs_world_t *w, const double *action, size_t n, uint64_t nsteps,
                             double yield_at, int resume, uint64_t *done, rs_status_t *st)
{
    const rs_task_t *t = w->task;
    rs_data_t *d = w->data;
    const rs_model_t *m = w->model;
    *done = 0;
    if (!t)
        return rs_fail(st, RS_EPRECOND,
                       "this world runs no task, so a Step takes commands, not an action; create "
                       "the world with CreateWorld.task to use actions");
    if (!resume && (d->task[RS_TASK_TERMINATED] != 0.0 || d->task[RS_TASK_TRUNCATED] != 0.0))
        return rs_fail(st, RS_EPRECOND,
                       "the episode of task '%s' ended (%s) after %llu steps; Reset starts a new "
                       "one",
                       t->name, d->task[RS_TASK_TERMINATED] != 0.0 ? "terminated" : "truncated",
                       (unsigned long long)d->episode_steps);
    rs_task_bind_t scratch;
    const rs_task_bind_t *b;
    int bc = task_bound(w, &scratch, &b, st);
    if (bc < 0)
        return bc;
    int e = b->entity;
    if (n && !resume) {
        int rc = rs_task_check_action(t, action, n, st);
        if (rc < 0)
            return rc;
        double u[RS_TASK_MAX_ACT];
        if (t->cmd) { /* normalized: [lower, upper] of act onto cmd's range */
            for (size_t i = 0; i < n; i++)
                u[i] = t->cmd[i].lower + (action[i] - t->act[i].lower) /
                                             (t->act[i].upper - t->act[i].lower) *
                                             (t->cmd[i].upper - t->cmd[i].lower);
            action = u;
        }
        /* an action may drive the first actuators only (MobileAlign-v0: the wheels); the
         * others keep their held commands */
        const rs_entity_model_t *em = &m->ent[e];
        double full[RS_MAX_ACTUATORS]; /* em->nu <= RS_MAX_ACTUATORS: rs_robot_check */
        for (int i = 0; i < em->nu && i < RS_MAX_ACTUATORS; i++)
            full[i] = (size_t)i < n ? action[i] : d->u[em->u_off + i];
        if ((rc = rs_set_commands(m, d, e, full, (size_t)em->nu, st)) < 0)
            return rc;
    }
    if (!resume) {
        d->nevents = 0;
        d->events_dropped = 0;
    }
    /* a resumed Step sums on from where it stopped, so slicing leaves the sum bit-identical */
    double reward = resume ? d->task[RS_TASK_REWARD] : 0.0;
    uint64_t limit = rs_task_episode_limit(t, m);
    int ended = 0;
    uint64_t k = 0;
    for (; k < nsteps; k++) {
        int first = d->nevents, terminated = 0;
        double info[RS_TASK_MAX_INFO] = {0};
        uint64_t one = 0;
        d->digest_later = 1; /* folded in below, with the task's evaluation */
        int rc = rs_step_until(m, d, 1, INFINITY, &one, st);
        d->digest_later = 0;
        if (rc < 0 || one == 0) { /* failed, or interrupted (at the boundary: one == 0) */
            d->task[RS_TASK_REWARD] = reward;
            *done = k;
            return rc;
        }
        d->episode_steps++;
        double r = t->evaluate(m, d, b, first, &terminated, info);
        reward += t->reward_scale > 0.0 ? t->reward_scale * r : r;
        memcpy(d->task + RS_TASK_INFO, info, sizeof info);
        if (terminated)
            d->task[RS_TASK_TERMINATED] = 1.0;
        else if (d->episode_steps >= limit)
            d->task[RS_TASK_TRUNCATED] = 1.0;
        rs_digest_step(m, d);
        if ((ended = terminated || d->task[RS_TASK_TRUNCATED] != 0.0)) {
            k++;
            break;
        }
        if (yield_at < INFINITY && k + 1 < nsteps && rs_clock() >= yield_at) {
            k++;
            break;
        }
    }
    *done = k;
    d->task[RS_TASK_REWARD] = reward;
    if (ended || k == nsteps) /* the Step is over: its reward counts in the return */
        d->task[RS_TASK_RETURN] += reward;
    return 0;
}

int rs_world_task_view(const rs_world_t *w, rs_task_view_t *out, rs_status_t *st)
{
    const rs_task_t *t = w->task;
    if (!t)
        return rs_fail(st, RS_EPRECOND, "this world runs no task");
    rs_task_bind_t scratch;
    const rs_task_bind_t *b;
    int bc = task_bound(w, &scratch, &b, st);
    if (bc < 0)
        return bc;
    const rs_data_t *d = w->data;
    memset(out, 0, sizeof *out);
    out->nobs = t->nobs;
    t->observe(w->model, d, b, out->obs);
    for (int i = 0; t->obs_scale && i < t->nobs; i++)
        out->obs[i] = fmin(fmax(out->obs[i] / t->obs_scale[i], t->obs[i].lower), t->obs[i].upper);
    out->reward = d->task[RS_TASK_REWARD];
    out->terminated = d->task[RS_TASK_TERMINATED] != 0.0;
    out->truncated = d->task[RS_TASK_TRUNCATED] != 0.0;
    out->episode_return = d->task[RS_TASK_RETURN];
    out->ninfo = t->ninfo;
    out->info_names = t->info;
    memcpy(out->info, d->task + RS_TASK_INFO, sizeof out->info);
    return 0;
}
