/* The "Example Robotic Systems" chapter's differential-drive kinematics (ddkinematicsmodel),
 * shared by diff_drive.c and mobile_manipulator.c's wheels mode: with phi1_dot, phi2_dot the
 * right and left wheel speeds, r the wheel radius and L half the axle,
 *     v = r/2 (phi1_dot + phi2_dot),   w = r/(2L) (phi1_dot - phi2_dot). */
#ifndef RS_DIFF_DRIVE_COMMON_H
#define RS_DIFF_DRIVE_COMMON_H

static inline double wheels_forward_speed(double r, double phi1_dot, double phi2_dot)
{
    return 0.5 * r * (phi1_dot + phi2_dot);
}

static inline double wheels_turn_rate(double r, double L, double phi1_dot, double phi2_dot)
{
    return r / (2.0 * L) * (phi1_dot - phi2_dot);
}

#endif
