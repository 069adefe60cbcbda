/* A workshop world in which a hybrid diff-drive robot, wedged between two obstacles, once
 * ended in SIMULATION_FAILED ("1.48807e-05 m inside obstacle 0") at control step 251 while the
 * same robot and wheel commands in the diff_drive preset ran all 300 steps: the parameters of
 * every entity and the robot's wheel commands (the other entities' are 0), as runs of control
 * steps. Used by test_diff_drive_contact.c. */
#ifndef RS_TEST_WORKSHOP_WEDGE_H
#define RS_TEST_WORKSHOP_WEDGE_H

typedef struct wedge_param {
    const char *entity, *name;
    int n;
    double v[6];
} wedge_param_t;

static const wedge_param_t wedge_params[] = {
    {"finger", "contact_model", 1, {2.0}},
    {"finger", "friction_law", 1, {0.0}},
    {"finger", "finger_mass", 1, {2.8596379064157533}},
    {"finger", "object_mass", 1, {0.27256506440556066}},
    {"finger", "finger_drag_law", 1, {1.0}},
    {"finger", "object_drag_law", 1, {1.0}},
    {"finger", "finger_drag", 1, {1.9604376478028545}},
    {"finger", "object_drag", 1, {0.45658509302975925}},
    {"finger", "static_friction", 1, {1.531440627067437}},
    {"finger", "kinetic_friction", 1, {1.1991476756431438}},
    {"finger", "restitution", 1, {1.0}},
    {"finger", "finger_x0", 1, {0.0}},
    {"finger", "object_x0", 1, {0.0}},
    {"finger", "finger_v0", 1, {2.9971288299423406}},
    {"finger", "object_v0", 1, {0.04527619282654971}},
    {"arm", "a1", 1, {0.37766998519170625}},
    {"arm", "a2", 1, {0.14798079276348908}},
    {"arm", "m1", 1, {1.1797253360256417}},
    {"arm", "m2", 1, {1.961426706607783}},
    {"arm", "gravity", 1, {0.0}},
    {"arm", "theta0", 2, {-0.24082999299801733, -1.585044180067686}},
    {"arm", "mu_D", 2, {0.2567087339717213, 0.2376900190141202}},
    {"arm", "mu_V", 2, {0.0, 0.026131904820663743}},
    {"arm", "actuator_mode", 2, {0.0, 0.0}},
    {"arm", "theta_dot0", 2, {3.4449042711513442, -1.8592586391937385}},
    {"arm", "tau_max", 2, {0.3415037970439479, 0.3415037970439479}},
    {"delta", "L0", 1, {0.09825244181185888}},
    {"delta", "L1", 1, {0.040886754751498784}},
    {"delta", "L2", 1, {0.1121411693550296}},
    {"delta", "theta_min", 2, {0.326340372119037, -0.4790395819550419}},
    {"delta", "theta_max", 2, {1.3657922533931877, 0.7212917910018404}},
    {"delta", "theta0", 2, {0.8069914522472987, -0.17663327734917078}},
    {"delta", "J", 2, {0.0005145073222193957, 0.00038423783514928366}},
    {"delta", "mu_V", 2, {0.0016098667842567211, 0.0026131904820663743}},
    {"delta", "mu_D", 2, {0.0, 0.006281482721612524}},
    {"delta", "actuator_mode", 2, {0.0, 0.0}},
    {"delta", "theta_dot0", 2, {-1.9387215221703908, 2.539278925633351}},
    {"delta", "tau_max", 2, {0.10131389363916955, 0.10131389363916955}},
    {"robot", "robot_radius", 1, {0.24563110452964723}},
    {"robot", "wheel_radius", 1, {0.09}},
    {"robot", "half_axle", 1, {0.12}},
    {"robot", "x0", 1, {0.0}},
    {"robot", "y0", 1, {0.0}},
    {"robot", "theta0", 1, {-1.773522703640099}},
    {"robot", "obstacles", 6, {0.18434143124799118, -1.553484269534925, 0.2527712141584485, -0.782144078820827, -1.3548231541173694, 0.2527712141584485}},
    {"robot", "contact_model", 1, {0.0}},
};

/* from control step `from` on (until the next row): the robot's wheel speeds, rad/s */
static const struct wedge_commands {
    int from;
    double phi[2];
} wedge_commands[] = {
    {0, {16.09434866757398, 16.09434866757398}},
    {105, {10.310072891052421, 8.749534383932833}},
    {154, {11.692002535216027, -7.121065725946231}},
    {165, {0.9055238565309942, -5.343018297788827}},
    {224, {-7.437034556774954, -12.924810147802607}},
    {251, {-7.404980187700749, 8.604002161720299}},
};
#define WEDGE_STEPS 300

#endif
