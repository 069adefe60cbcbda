/* Contact helpers shared by the robots that touch things: Klamp't's blending of two bodies'
 * surface coefficients, and the impulse solver of the contact-dynamics lecture's time-stepping
 * formulation (also used for the hybrid impact maps of several simultaneous contacts). Core
 * only; no allocation. */
#ifndef RS_CONTACT_H
#define RS_CONTACT_H

/* The contact formulations a world's entities can run under (parameter `contact_model`). */
enum { RS_CONTACT_HYBRID = 0, RS_CONTACT_TIME_STEPPING = 1, RS_CONTACT_COMPLIANT = 2 };

/* Klamp't's "Collision response": when two bodies touch, restitution is blended by the
 * arithmetic mean, friction, stiffness and damping by the harmonic mean. The harmonic mean of
 * a and b is 2ab / (a + b); it is 0 when either is 0 (a frictionless body makes a frictionless
 * pair) and a when b is infinite. */
double rs_blend_arithmetic(double a, double b);
double rs_blend_harmonic(double a, double b);

/* The internal steps of a time-stepping control step of length dt: the fewest steps of at most
 * ts_step that split dt evenly (so the last lands on the control grid), but never more than
 * RS_TS_MAX_SUBSTEPS: the loop runs outside the integrator, where a request's CPU budget cannot
 * interrupt it, so a tiny ts_step under a long control step is coarsened to dt / 1e5 (the
 * brick's 1e5 steps with contact take 2.3 s under ASan: ctest -R test_brick, 2.5 s in all, its
 * case "ts_step 1e-7, control_dt 1 s"). Returns the count; the step length in *h. */
#define RS_TS_MAX_SUBSTEPS 100000.0
double rs_ts_substeps(double dt, double ts_step, double *h);

#define RS_CONTACT_MAX_DOF 6
#define RS_CONTACT_MAX_POINTS 8

/* One contact point: normal and tangential rows of the contact Jacobian (velocity of the point
 * along the normal / the tangent = row . v), the least normal velocity allowed after the
 * impulse (`vn_min`: -phi/h for non-penetration at the end of a step of length h, -e vn for
 * Newton restitution, or their max), and the friction coefficient. */
typedef struct rs_contact_point {
    double jn[RS_CONTACT_MAX_DOF], jt[RS_CONTACT_MAX_DOF];
    double vn_min;
    double mu;
    double ft_max; /* a friction impulse bound added to mu pn, for friction not loaded through
                      this point's normal (an object's own weight on its ground: F h) */
} rs_contact_point_t;

/* Solve for the contact impulses of nc points on a body with ndof velocities v and a diagonal
 * inverse mass minv (ndof values): find pn >= 0, |pt| <= mu pn + ft_max such that, with
 *     v+ = v + minv (jn^T pn + jt^T pt),
 * each point has jn.v+ >= vn_min, pn (jn.v+ - vn_min) = 0 (complementarity), and its friction
 * impulse opposes the sliding velocity jt.v+ (zero when it can, else at the bound mu pn). In the
 * plane the contact-dynamics lecture's friction pyramid (b = [I -I] d, d >= 0, e^T d <= mu n)
 * is this box.
 * Method: projected Gauss-Seidel (Erleben's, as used by Bullet and ODE's quickstep): sweep over
 * the points, for each row take the Newton update of the accumulated impulse, project it on
 * its bounds (pn >= 0; pt in [-mu pn, mu pn]) and apply the change to v+; stop when a sweep
 * changes no impulse by more than 1e-13 of the largest, or after `max_sweeps`. Deterministic:
 * a fixed order and no randomisation. v is updated in place; pn, pt (nc each) receive the
 * impulses. Returns the number of sweeps done. */
int rs_contact_solve(int ndof, const double *minv, int nc, const rs_contact_point_t *pts,
                     double *v, double *pn, double *pt, int max_sweeps);

#endif
