/* The 1D finger and object (the "1D Robot" article), as a hybrid system (flow, guards,
 * jump maps, exact event times by root finding).
 *
 * A finger of mass m_f (tip at x_f, velocity v_f) is driven along a line by an applied force F_a
 * (actuator 0) against its drag. An object of mass m_o (near face at x_o, velocity v_o) rests on
 * a surface with Coulomb friction (static F_static, kinetic F_kinetic <= F_static) and has its
 * own drag. The gap x_o - x_f never goes negative. Drag D(v) opposes a body's own velocity and
 * is, per body, linear c v or quadratic c v |v| (signed: D has the sign of v).
 *
 * Modes (the article's epochs):
 *   separated          apart (gap >= 0), object sliding: m_o v_o' = -D_o - F_kinetic dir
 *   separated_stuck    apart, object at rest held by static friction (nothing pushes it);
 *                      where no kinetic friction acts on it moving (the article's law, or
 *                      F_kinetic = 0) and no external force, nothing holds it: given a
 *                      velocity it glides under its drag (m_o v_o' = -D_o), as apart
 *   contact_sliding    touching (gap = 0, v_f = v_o = v), sliding together:
 *                        (m_f + m_o) v' = F_a - D_f - D_o - F_kinetic dir
 *   contact_stuck      touching, both at rest, the finger pressing: nothing moves
 * dir (+1 or -1) is the object's direction of sliding, fixed when the slide starts.
 *
 * Contact force (the article's "constant component"), from the two bodies' equations with
 * a common acceleration:
 *   sliding together   N = (m_o (F_a - D_f) + m_f (F_kinetic dir + D_o)) / (m_f + m_o)
 *   object stuck       N = F_a - D_f
 * Apart, the closing acceleration a_f - a_o equals N / mu (mu = m_f m_o / (m_f + m_o)) with N
 * the sliding formula: contact holds exactly while N >= 0.
 *
 * Guards (fire when falling through 0; eps are tiny offsets, see below):
 *   touch       separated*:      gap + eps_x
 *   separate    contact*:        N + eps_F
 *   stop        *sliding:        dir v_o + eps_v    (slide-to-stick: the object's velocity in its
 *                                                   direction of motion reaches 0)
 *   slip        contact_stuck:   F_static - N + eps_F   (stick-to-slide)
 * A free object at rest has no push on it, so it can only start sliding by an impact.
 *
 * Jump maps:
 *   touch   impact with restitution e on the relative velocity, momentum conserved:
 *             v_cm = (m_f v_f + m_o v_o) / (m_f + m_o),  v' = (1 + e) v_cm - e v  (each body).
 *           The impulse on the tip is J = (1 + e) m_f |v_f - v_cm| (the article's F_impulse dt).
 *           If the separating speed e |v_f - v_o| is below the resting speed, the bodies merge
 *           at v_cm instead (J = m_f |v_f - v_cm|, the finger's actual momentum change) and
 *           the contact mode is chosen as below. Positions are set exactly equal.
 *   stop    v_o (and v_f in contact) set to exactly 0; the object stays stuck unless the push
 *           on it (F_a - D_f(0) through the finger in contact, 0 when free) exceeds F_static,
 *           then it slides in the push's direction.
 *   slip    contact_stuck -> contact_sliding in the push's direction.
 *   separate contact -> separated (gap exactly 0, equal velocities; they drift apart).
 *
 * Tie-breaking and the eps offsets. ARKODE does not report a guard that is exactly 0 where an
 * interval starts, and treats it as inactive until it leaves 0; a guard starting at 0 and going
 * negative would be missed. So each decision at a jump or a settle picks the mode whose guards
 * are then strictly positive: ties (N = 0, N = F_static, v = 0) go to "stay in contact", "stay
 * stuck", "stopped", and every guard carries a tiny offset eps so it starts positive. eps_x is
 * 16 ulps of the positions, 16 DBL_EPSILON (1 + |x_f| + |x_o|) m (the rounding of a gap just
 * after a separation; below 1e-9 m while |x| < 1e5 m), eps_F = 1e-12 (1 + F_static) N, eps_v =
 * 1e-13 m/s: a slip fires when the push exceeds F_static by eps_F, a touch when the gap reaches
 * -eps_x (the finger is then put back exactly on the face), a stop when the velocity has just
 * crossed 0 by eps_v (it is then set to exactly 0). After each jump any guard left <= 0 (two
 * crossing at once) is handled too, so every interval starts with all guards positive.
 *
 * External force on the object (ApplyWrench body "object", f_o, for one control step): it adds
 * to the object's equation in every mode and formulation (m_o v_o' = f_o - D_o - friction apart;
 * (m_f + m_o) v' = F_a + f_o - ... and N less m_f f_o / (m_f + m_o) sliding together). Static
 * friction holds it: a free object at rest stays while |f_o| <= F_static (guard G_SLIP in
 * separated_stuck, F_static - |f_o| + eps_F), a stuck pair while |N + f_o| <= F_static, and it
 * slides in the direction of the net push. Its work f_o v_o counts in applied_work. With no such
 * force (f_o = 0) every expression keeps its bits (plus()).
 *
 * Events (kind: value): touch (closing speed, m/s), bounce (impulse J, N s), merge (impulse J,
 * N s), separate (contact force N at that instant, N), stick (push held by static friction, N),
 * slip (push that broke static friction, N; 0 when kicked by an impact). before/after hold
 * x_f, v_f, x_o, v_o around the jump.
 *
 * Sensors: tip_force is the mean force on the tip over the last control step,
 *   (integral of N dt + sum of impact impulses) / dt,
 * differenced from the state variable contact_impulse (which accumulates both); contact_force is
 * the instantaneous N; impact_impulse the sum of the impulses J of the last control step. After
 * a reset (dt = 0) tip_force reads the instantaneous N.
 *
 * friction_law: 0 coulomb (all of the above, the default), 1 article, the law the "1D Robot"
 * article describes, for reproducing its figures:
 *   - wall: a touch on an object at rest (separated_stuck, v_o = 0) whose push
 *     F_i = F_a - D_f(v_f) is at most F_static holds the object still like a wall:
 *     v_f' = -e v_f, J = (1 + e) m_f v_f (or
 *     v_f' = 0 and contact_stuck when e v_f is below the resting speed); a larger push gives
 *     the ordinary momentum-conserving impact;
 *   - kinetic friction only while pushing, f_kinetic min(F_i, F_static) with the article's
 *     fraction f_kinetic = F_kinetic / F_static (so F_kinetic once the push exceeds F_static);
 *     none on a free object (separated: m_o v_o' = -D_o);
 *   - the sensor: while pushing (contact_sliding) tip_force reads that friction force (the
 *     article's F_constant = F_kinetic), pressing (contact_stuck) the push F_i, plus the impulses.
 *     contact_force stays the true N (it decides the separation in both laws).
 *
 * All of the above (both laws) is the hybrid formulation (contact_model 0, the default);
 * friction_law acts there only. Two more:
 *   time_stepping (1), the contact-dynamics lecture's velocity-level step with backward Euler
 *     positions, per
 *     internal step h (ts_step): free velocities from F_a and the drags (the drags implicit,
 *     drag_step), then the
 *     LCP of the contact (gap + h (v_o+ - v_f+) >= 0, lambda >= 0, complementary; in every
 *     step's problem, so no gap closes after the solve; Newton restitution e on a contact
 *     closing in the step whose rebound e |v_f - v_o| reaches resting_speed, as an impulse
 *     between the bodies at the step's start that turns the closing speed into e times it,
 *     the step's forces, drags, friction and plastic contact then acting from there: the
 *     impact keeps momentum and loses kinetic energy, the rest is backward Euler, so the
 *     actuator's work F h v+ bounds the energy gained) and the object's
 *     ground friction as a box |p| <= F h (F_static if the object is at rest, else
 *     F_kinetic), by rs_contact_solve.
 *     contact_impulse accumulates lambda; contact_force is lambda / h of the last step.
 *   compliant (2), Klamp't's boundary layer: within padding = finger_padding +
 *     object_padding the pair feels N = max(0, k d + c d') (d the depth into the layer; k, c
 *     harmonic means of the two bodies' stiffness and damping); the object's ground friction
 *     is Coulomb stick-slip with exact events (static and kinetic levels, as in the hybrid
 *     formulation): at rest it stays (v_o' = 0, event stick) while |N| <= F_static
 *     (guard G_SLIP: F_static - |N|), then slides in the push's direction against F_kinetic
 *     (event slip) until its velocity passes through 0 (guard G_STOP), where it sticks again
 *     or turns. slip_speed is not used by the finger. Restitution
 *     then comes from the damping, not from `restitution`. Touch and separation at the layer's
 *     surface are found by root finding (guard G_TOUCH with the side in AUX_SIDE).
 * In both, impact_impulse reads 0 (there are no instantaneous impacts) and the events are
 * touch and separate. */
#include "../contact.h"
#include "../rs_robot.h"

#include <float.h>
#include <math.h>

enum { X_F, V_F, X_O, V_O, IMPULSE, WORK, NX };
enum { U_FORCE, NU };
enum { S_TIP_FORCE, S_CONTACT_FORCE, S_IMPACT_IMPULSE, NS };
enum { MODE_SEPARATED, MODE_SEPARATED_STUCK, MODE_CONTACT_SLIDING, MODE_CONTACT_STUCK, MODE_TS,
       MODE_COMPLIANT, NMODES };
enum { EV_TOUCH, EV_BOUNCE, EV_MERGE, EV_SEPARATE, EV_STICK, EV_SLIP, NEVENTS };
enum { G_TOUCH, G_SEPARATE, G_STOP, G_SLIP, NG };

/* private run variables */
enum {
    AUX_DIR,       /* +1 / -1: direction of the object's slide (sliding modes) */
    AUX_P0,        /* contact_impulse at the start of the control step */
    AUX_JSUM,      /* impact impulses since reset, N s */
    AUX_JSUM0,     /* AUX_JSUM at the start of the control step */
    AUX_PENDING,   /* impulse applied by settle() just before the control step begins */
    AUX_IN_SETTLE, /* 1 while settle() runs */
    AUX_SIDE,      /* compliant: +1 outside the boundary layer, -1 inside */
    AUX_N,         /* time_stepping: contact force of the last internal step, N */
    AUX_STUCK,     /* compliant: 1 while static friction holds the object at rest */
    NAUX
};

/* the private run variables, as a snapshot restore validates them */
static const rs_aux_desc_t finger_aux[NAUX] = {
    {"dir", RS_AUX_SIGN, 0, 0, 0, 0, 0, "direction of the object's slide"},
    {"impulse0", RS_AUX_REAL, -INFINITY, INFINITY, 0, 0, 0, "contact_impulse at the step's start, N s"},
    {"jsum", RS_AUX_REAL, 0.0, INFINITY, 0, 0, 0, "impact impulses since reset, N s"},
    {"jsum0", RS_AUX_REAL, 0.0, INFINITY, 0, 0, 0, "jsum at the step's start, N s"},
    {"pending", RS_AUX_REAL, 0.0, INFINITY, 0, 0, 0, "impulse settle() applied before the step"},
    {"in_settle", RS_AUX_INTEGER, 0.0, 1.0, 0, 0, 0, "1 while settle() runs"},
    {"side", RS_AUX_SIGN, 0, 0, 0, 0, 0, "compliant: +1 outside the boundary layer, -1 inside"},
    {"ts_force", RS_AUX_REAL, 0.0, INFINITY, 0, 0, 0, "time_stepping: last step's contact force"},
    {"stuck", RS_AUX_INTEGER, 0.0, 1.0, 0, 0, 0,
     "compliant: 1 while static friction holds the object at rest"},
};

/* parameter slots in rs_entity_model_t.p (and their table indices, the same here) */
enum {
    P_M_F, P_M_O, P_DRAG_LAW_F, P_C_F, P_DRAG_LAW_O, P_C_O, P_F_STATIC, P_F_KINETIC,
    P_RESTITUTION, P_V_REST, P_X_F0, P_X_O0, P_V_F0, P_V_O0, P_FRICTION_LAW, P_MODEL, P_TS_STEP,
    P_PAD_F, P_K_F, P_C_F_SURF, P_PAD_O, P_K_O, P_C_O_SURF, P_SLIP, P_FEEDBACK, NP
};

enum { LAW_COULOMB = 0, LAW_ARTICLE = 1 };

enum { DRAG_LINEAR = 0, DRAG_QUADRATIC = 1 };

#define VEL_EPS 1e-13 /* m/s */

static const rs_var_desc_t finger_state[NX] = {
    {"x_f", "m", -INFINITY, INFINITY, "finger tip position"},
    {"v_f", "m/s", -INFINITY, INFINITY, "finger velocity"},
    {"x_o", "m", -INFINITY, INFINITY, "object near-face position (x_o >= x_f)"},
    {"v_o", "m/s", -INFINITY, INFINITY, "object velocity"},
    {"contact_impulse", "N s", 0.0, INFINITY,
     "momentum passed through the tip since reset: integral of the contact force N dt plus the "
     "impact impulses J; tip_force differences it over a control step"},
    {"applied_work", "J", -INFINITY, INFINITY,
     "work of the applied force and external forces since reset, integral of F_a v_f + f_o v_o "
     "dt (kinetic energy can grow by at most this much)"},
};

static const rs_var_desc_t finger_actuators[NU] = {
    {"force", "N", -1e6, 1e6, "F_a: applied force on the finger, + towards the object"},
};

static const rs_var_desc_t finger_sensors[NS] = {
    {"tip_force", "N", -INFINITY, INFINITY,
     "mean force on the tip over the last control step: (integral of N dt + sum of impact "
     "impulses) / dt (the constant plus impulse components of the 1D Robot article); the "
     "instantaneous N after a reset"},
    {"contact_force", "N", -INFINITY, INFINITY,
     "instantaneous contact (compression) force N; 0 when apart"},
    {"impact_impulse", "N s", 0.0, INFINITY,
     "sum of the impact impulses J in the last control step (each also an event with its time)"},
};

static const rs_param_desc_t finger_params[NP] = {
    {"finger_mass", "kg", 1e-9, 1e9, P_M_F, 1, 1, 1.0, "m_f: finger mass"},
    {"object_mass", "kg", 1e-9, 1e9, P_M_O, 1, 1, 1.0, "m_o: object mass"},
    {"finger_drag_law", "1", 0.0, 1.0, P_DRAG_LAW_F, 1, 1, DRAG_QUADRATIC,
     "finger drag law: 0 linear D = c v, 1 quadratic D = c v |v|"},
    {"finger_drag", "N s/m or N s^2/m^2", 0.0, 1e9, P_C_F, 1, 1, 1.0,
     "c_f: finger drag coefficient (N s/m if linear, N s^2/m^2 if quadratic)"},
    {"object_drag_law", "1", 0.0, 1.0, P_DRAG_LAW_O, 1, 1, DRAG_LINEAR,
     "object drag law: 0 linear D = c v, 1 quadratic D = c v |v|"},
    {"object_drag", "N s/m or N s^2/m^2", 0.0, 1e9, P_C_O, 1, 1, 0.02,
     "c_o: object drag coefficient (N s/m if linear, N s^2/m^2 if quadratic)"},
    {"static_friction", "N", 0.0, 1e9, P_F_STATIC, 1, 1, 1.0,
     "F_static: largest push the object resists at rest"},
    {"kinetic_friction", "N", 0.0, 1e9, P_F_KINETIC, 1, 1, 0.5,
     "F_kinetic: friction opposing the sliding object (<= static_friction)"},
    {"restitution", "1", 0.0, 1.0, P_RESTITUTION, 1, 1, 0.5,
     "e: coefficient of restitution of the impact (1 elastic, 0 plastic)"},
    {"resting_speed", "m/s", 0.0, 1e3, P_V_REST, 1, 1, 1e-3,
     "below this separating speed after an impact the bodies merge instead of bouncing"},
    {"finger_x0", "m", -1e6, 1e6, P_X_F0, 1, 1, 0.0, "initial finger tip position"},
    {"object_x0", "m", -1e6, 1e6, P_X_O0, 1, 1, 1.5,
     "initial object face position (>= finger_x0)"},
    {"finger_v0", "m/s", -1e3, 1e3, P_V_F0, 1, 1, 0.0, "initial finger velocity"},
    {"object_v0", "m/s", -1e3, 1e3, P_V_O0, 1, 1, 0.0, "initial object velocity"},
    {"friction_law", "1", 0.0, 1.0, P_FRICTION_LAW, 1, 1, LAW_COULOMB,
     "0 coulomb: constant kinetic friction on a sliding object, impacts conserve momentum, the "
     "sensor reads the true contact force; 1 article: the 1D Robot article's law (a resting "
     "object pushed below static_friction is a wall, kinetic friction only while pushing, "
     "the sensor reads it)"},
    {"contact_model", "1", 0, 2, P_MODEL, 1, 1, 0,
     "contact formulation: 0 hybrid (guards + jump maps, exact times), 1 time_stepping "
     "(velocity-level LCP), 2 compliant (boundary layer)"},
    {"ts_step", "s", 1e-7, 1.0, P_TS_STEP, 1, 1, 1e-3, "time_stepping: largest internal step"},
    {"finger_padding", "m", 0, 1, P_PAD_F, 1, 1, 0.0025, "the finger's boundary layer (compliant)"},
    {"finger_stiffness", "N/m", 1e-6, 1e12, P_K_F, 1, 1, 1e4, "the finger's surface stiffness"},
    {"finger_damping", "N s/m", 0, 1e9, P_C_F_SURF, 1, 1, 10.0, "the finger's surface damping"},
    {"object_padding", "m", 0, 1, P_PAD_O, 1, 1, 0.0, "the object's boundary layer (compliant)"},
    {"object_stiffness", "N/m", 1e-6, 1e12, P_K_O, 1, 1, 1e4, "the object's surface stiffness"},
    {"object_damping", "N s/m", 0, 1e9, P_C_O_SURF, 1, 1, 10.0, "the object's surface damping"},
    {"slip_speed", "m/s", 1e-9, 1e3, P_SLIP, 1, 1, 1e-3,
     "not used by the finger (its compliant friction is exact stick-slip with static_friction "
     "and kinetic_friction); accepted for older clients"},
    {"contact_feedback", "1", 0, 1, P_FEEDBACK, 1, 1, 0,
     "1: report the (finger, object) pair in State.contacts (Klamp't's enableContactFeedback)"},
};

/* bodies an external force can act on (ApplyWrench) */
static const rs_wrench_desc_t finger_wrench[] = {
    {"finger", 1, "force along the line, N (+ towards the object), added to F_a"},
    {"object", 1, "force along the line on the object, N (+ away from the finger)"},
};

static const char *const finger_modes[NMODES] = {"separated", "separated_stuck", "contact_sliding",
                                                 "contact_stuck", "time_stepping", "compliant"};
static const char *const finger_events[NEVENTS] = {"touch", "bounce", "merge",
                                                   "separate", "stick", "slip"};

/* ---- forces --------------------------------------------------------------------------- */

/* The force on the finger besides drag and contact: the command F_a plus an external force
 * applied for this control step (ApplyWrench on body "finger"). */
static inline double applied_force(const rs_entity_data_t *ed, const double *u)
{
    return u[U_FORCE] + ed->wrench[0];
}

/* The external force on the object for this control step (ApplyWrench on body "object"). */
static inline double object_force(const rs_entity_data_t *ed)
{
    return ed->wrench[1];
}

/* a + b, or a itself (its bits, a signed zero included) when b is 0: a world with no wrench on
 * the object computes exactly what it did before that wrench existed. */
static inline double plus(double a, double b)
{
    return b == 0.0 ? a : a + b;
}

/* Drag with the sign of v: linear c v or quadratic c v |v|. */
static inline double drag(double law, double c, double v)
{
    return law == DRAG_QUADRATIC ? c * v * fabs(v) : c * v;
}

static inline double drag_f(const rs_entity_model_t *em, double v)
{
    return drag(em->p[P_DRAG_LAW_F], em->p[P_C_F], v);
}

static inline double drag_o(const rs_entity_model_t *em, double v)
{
    return drag(em->p[P_DRAG_LAW_O], em->p[P_C_O], v);
}

static inline int article_law(const rs_entity_model_t *em)
{
    return em->p[P_FRICTION_LAW] == LAW_ARTICLE;
}

/* Kinetic friction magnitude on the object sliding with the finger pushing at v (F_a applied):
 * coulomb F_kinetic; article f_kinetic min(F_i, F_static), f_kinetic = F_kinetic / F_static. */
static double friction_pushed(const rs_entity_model_t *em, double v, double fa)
{
    if (!article_law(em))
        return em->p[P_F_KINETIC];
    double fs = em->p[P_F_STATIC];
    if (fs <= 0.0)
        return 0.0; /* F_kinetic <= F_static = 0 */
    double push = fmin(fmax(fa - drag_f(em, v), 0.0), fs);
    return em->p[P_F_KINETIC] / fs * push;
}

/* Kinetic friction magnitude on a free sliding object: none under the article's law. */
static double friction_free(const rs_entity_model_t *em)
{
    return article_law(em) ? 0.0 : em->p[P_F_KINETIC];
}

/* Whether the object apart from the finger is free: no kinetic friction acts on it when it
 * moves (the article's law, or F_kinetic = 0) and no external force pushes it. At rest
 * (separated_stuck) nothing then holds it: moved, it glides on under its drag, which is
 * separated_stuck's flow at a velocity (derivs) as well as separated's. */
static int object_free(const rs_entity_model_t *em, const rs_entity_data_t *ed)
{
    return friction_free(em) == 0.0 && object_force(ed) == 0.0;
}

/* Sliding together at v in direction dir: the friction magnitude that acts on the object (into
 * *friction) and the contact force N (returned, the header's formula; f_o the external force on
 * the object).
 *
 * The article's law has friction only while the finger pushes and none on a free object, so
 * an object sliding back onto the finger (dir < 0) can meet a contact that its own friction
 * opens (N < 0 with friction) while, apart and without it, the gap closes (the frictionless
 * N0 = (m_o (F_a - D_f) + m_f (D_o - f_o)) / (m_f + m_o) > 0): neither mode is consistent and
 * the bodies would touch and separate without end. The consistent motion is Filippov's on the
 * switching surface: the bodies stay together with N = 0 and the friction the part of
 * f_kinetic min(F_i, F_static) that leaves N at 0, N0 (m_f + m_o) / m_f; where N0 < 0 the
 * contact opens and there is no push, so no friction (N = N0, continuous with the former at
 * N0 = 0 and with the full friction where N reaches 0). The Coulomb law and a slide away from
 * the finger (dir > 0) are unchanged. */
static double sliding_contact(const rs_entity_model_t *em, double v, double dir, double fa,
                              double fo, double *friction)
{
    double mf = em->p[P_M_F], mo = em->p[P_M_O];
    double ff = friction_pushed(em, v, fa);
    double n = (mo * (fa - drag_f(em, v)) + mf * (ff * dir + drag_o(em, v) - fo)) / (mf + mo);
    *friction = ff;
    if (n < 0.0 && dir < 0.0 && article_law(em)) {
        double base = mo * (fa - drag_f(em, v)) + mf * (drag_o(em, v) - fo);
        *friction = fmin(fmax(base, 0.0) / mf, ff);
        n = fmin(base, 0.0) / (mf + mo);
    }
    return n;
}

/* N when both move at v and the object slides in direction dir. */
static double n_sliding(const rs_entity_model_t *em, double v, double dir, double fa, double fo)
{
    double ff;
    return sliding_contact(em, v, dir, fa, fo, &ff);
}

/* N when the object is stuck and the finger (at v_f, 0 in contact) presses on it. */
static double n_stuck(const rs_entity_model_t *em, double vf, double fa)
{
    return fa - drag_f(em, vf);
}

/* The contact force in the current mode; 0 when apart. */
static double contact_force(const rs_entity_model_t *em, int mode, double dir, const double *x,
                            double fa, double fo)
{
    if (mode == MODE_CONTACT_SLIDING)
        return n_sliding(em, x[V_F], dir, fa, fo);
    if (mode == MODE_CONTACT_STUCK)
        return n_stuck(em, x[V_F], fa);
    return 0.0;
}

static inline double gap_eps(const double *x)
{
    return 16.0 * DBL_EPSILON * (1.0 + fabs(x[X_F]) + fabs(x[X_O]));
}

static inline double force_eps(const rs_entity_model_t *em)
{
    return 1e-12 * (1.0 + em->p[P_F_STATIC]);
}

static inline int is_contact(int mode)
{
    return mode == MODE_CONTACT_SLIDING || mode == MODE_CONTACT_STUCK;
}

static inline int is_sliding(int mode)
{
    return mode == MODE_SEPARATED || mode == MODE_CONTACT_SLIDING;
}

/* ---- the module's callbacks ------------------------------------------------------------ */

static int finger_nguards(const rs_entity_model_t *em)
{
    (void)em;
    return NG;
}

static int finger_validate(const rs_entity_model_t *em, rs_status_t *st)
{
    static const int laws[] = {P_DRAG_LAW_F, P_DRAG_LAW_O};
    for (int i = 0; i < 2; i++) {
        double law = em->p[laws[i]];
        if (law != DRAG_LINEAR && law != DRAG_QUADRATIC)
            return rs_fail(st, RS_EINVAL,
                           "'%s.%s' = %g: the drag law is 0 (linear c v) or 1 (quadratic c v|v|)",
                           em->name, finger_params[laws[i]].name, law);
    }
    double law = em->p[P_FRICTION_LAW];
    if (law != LAW_COULOMB && law != LAW_ARTICLE)
        return rs_fail(st, RS_EINVAL,
                       "'%s.friction_law' = %g: the friction law is 0 (coulomb) or 1 (article, "
                       "the 1D Robot article's law)",
                       em->name, law);
    if (em->p[P_F_KINETIC] > em->p[P_F_STATIC])
        return rs_fail(st, RS_EINVAL,
                       "'%s': kinetic_friction %g N exceeds static_friction %g N; Coulomb "
                       "friction needs F_kinetic <= F_static",
                       em->name, em->p[P_F_KINETIC], em->p[P_F_STATIC]);
    if (em->p[P_X_O0] < em->p[P_X_F0])
        return rs_fail(st, RS_EINVAL,
                       "'%s': object_x0 %g m is behind finger_x0 %g m; the bodies may not "
                       "overlap (gap = object_x0 - finger_x0 >= 0)",
                       em->name, em->p[P_X_O0], em->p[P_X_F0]);
    return 0;
}

/* ---- time_stepping and compliant (see the header) ------------------------------------------ */

static double pad_of(const rs_entity_model_t *em) { return em->p[P_PAD_F] + em->p[P_PAD_O]; }

/* Enter the mode contact_model asks for if the entity is in another formulation's mode; returns
 * whether the formulation is time_stepping or compliant. */
static double compliant_force(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                              const double *x);
static double compliant_push(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                             const double *x);

static int pick_formulation(const rs_entity_model_t *em, rs_entity_data_t *ed, const double *x)
{
    ed->aux[AUX_STUCK] = 0.0;
    int model = (int)em->p[P_MODEL];
    ed->aux[AUX_SIDE] = 1.0;
    ed->aux[AUX_N] = 0.0;
    if (model == RS_CONTACT_TIME_STEPPING) {
        ed->mode = MODE_TS;
    } else if (model == RS_CONTACT_COMPLIANT) {
        ed->mode = MODE_COMPLIANT;
        ed->aux[AUX_SIDE] = x[X_O] - x[X_F] < pad_of(em) ? -1.0 : 1.0;
        ed->aux[AUX_DIR] = x[V_O] < 0.0 ? -1.0 : 1.0;
        ed->aux[AUX_STUCK] = x[V_O] == 0.0 && em->p[P_F_STATIC] > 0.0 &&
                             fabs(compliant_push(em, ed, x)) <= em->p[P_F_STATIC];
    } else {
        if (ed->mode == MODE_TS || ed->mode == MODE_COMPLIANT)
            ed->mode = x[V_O] != 0.0 ? MODE_SEPARATED : MODE_SEPARATED_STUCK;
        ed->aux[AUX_DIR] = x[V_O] < 0.0 ? -1.0 : 1.0;
        return 0;
    }
    return 1;
}

/* compliant: the layer's force N on the object (and -N on the finger) */
static double compliant_force(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                              const double *x)
{
    if (ed->aux[AUX_SIDE] > 0.0)
        return 0.0;
    double k = rs_blend_harmonic(em->p[P_K_F], em->p[P_K_O]);
    double c = rs_blend_harmonic(em->p[P_C_F_SURF], em->p[P_C_O_SURF]);
    double depth = pad_of(em) - (x[X_O] - x[X_F]), rate = x[V_F] - x[V_O];
    return fmax(0.0, k * depth + c * rate);
}

/* compliant: the force static friction must hold on the object, the layer's N plus the wrench */
static double compliant_push(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                             const double *x)
{
    return plus(compliant_force(em, ed, x), object_force(ed));
}

static void compliant_derivs(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                             const double *x, double fa, double *xdot)
{
    double n = compliant_force(em, ed, x), fo = object_force(ed);
    double friction = em->p[P_F_KINETIC] * ed->aux[AUX_DIR];
    int stuck = ed->aux[AUX_STUCK] != 0.0;
    xdot[X_F] = x[V_F];
    xdot[V_F] = (fa - drag_f(em, x[V_F]) - n) / em->p[P_M_F];
    xdot[X_O] = x[V_O];
    xdot[V_O] = stuck ? 0.0 : plus(n - drag_o(em, x[V_O]) - friction, fo) / em->p[P_M_O];
    xdot[IMPULSE] = n;
    xdot[WORK] = plus(fa * x[V_F], fo * x[V_O]);
}

/* The free velocity after a step of h with drag taken implicitly (backward Euler):
 * v+ + k D(v+) / c = a, a the velocity without drag, k = h c / m. Linear drag: a / (1 + k);
 * quadratic: v+ + k v+ |v+| = a, |v+| = 2 |a| / (1 + sqrt(1 + 4 k |a|)) with the sign of a.
 * Implicit, the drag only takes energy out (D(v+) v+ >= 0) and never reverses or amplifies a
 * velocity, whatever h c / m is; explicit, it added energy where h c / m > 1 (a reversal) and
 * diverged past 2. */
static double drag_step(double law, double k, double a)
{
    if (law == DRAG_QUADRATIC)
        return copysign(2.0 * fabs(a) / (1.0 + sqrt(1.0 + 4.0 * k * fabs(a))), a);
    return a / (1.0 + k);
}

/* time_stepping's contact problem, solved exactly: the pair's free velocities v (finger,
 * object), inverse masses w; find the contact impulse pn >= 0 (-pn on the finger, +pn on the
 * object) and the object's ground friction impulse pt in [-T, T] with
 *     v_o+ - v_f+ >= c, complementary to pn, and pt opposing v_o+ (|pt| = T where v_o+ != 0).
 * Its solution is unique (the impulses minimise the kinetic energy of the velocity change
 * under these constraints, a strictly convex problem); of the four cases (contact open with
 * the friction's clamp; closed with the object held; closed with it sliding either way) the
 * one whose conditions hold is taken. Projected Gauss-Seidel (rs_contact_solve) converged here
 * by a factor 1 - w_f / (w_f + w_o) a sweep when friction holds the object, so a heavy finger
 * on a light object stopped short of the constraint after its 200 sweeps: the tip stayed past
 * the face, and a push was answered by pushing the finger back 1e-10 m. Returns 0, or -1 where
 * rounding left no case consistent (the caller then keeps the iterative solve). */
static int pair_solve(const double w[2], double c, double T, double v[2], double *pn, double *pt)
{
    double a = v[0], b = v[1];
    /* open: the friction alone on the object */
    double p_t = fmin(T, fmax(-T, -b / w[1]));
    double vo = fabs(p_t) < T ? 0.0 : b + p_t * w[1];
    if (vo - a >= c) {
        v[1] = vo, *pn = 0.0, *pt = p_t;
        return 0;
    }
    /* closed, the object held: v_o+ = 0, v_f+ = -c */
    double p_n = (a + c) / w[0];
    p_t = -b / w[1] - p_n;
    if (p_n >= 0.0 && fabs(p_t) <= T) {
        v[0] = -c, v[1] = 0.0, *pn = p_n, *pt = p_t;
        return 0;
    }
    /* closed, the object sliding its way s against T */
    for (int k = 0; k < 2; k++) {
        double sgn = k == 0 ? 1.0 : -1.0;
        p_n = (c + a - b + sgn * T * w[1]) / (w[0] + w[1]);
        vo = b + (p_n - sgn * T) * w[1];
        if (p_n >= 0.0 && sgn * vo >= 0.0) {
            v[0] = vo - c, v[1] = vo, *pn = p_n, *pt = -sgn * T;
            return 0;
        }
    }
    return -1;
}

/* time_stepping: the contact-dynamics lecture's step, repeated over the control step */
static void finger_advance(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                           double *x, const double *u, double dt)
{
    if (ed->mode != MODE_TS || !(dt > 0.0))
        return;
    const double *p = em->p;
    double h, steps = rs_ts_substeps(dt, p[P_TS_STEP], &h), fa = applied_force(ed, u);
    double fo = object_force(ed);
    double minv[2] = {1.0 / p[P_M_F], 1.0 / p[P_M_O]};
    for (double k = 0.0; k < steps; k += 1.0) {
        double gap = x[X_O] - x[X_F], closing = x[V_F] - x[V_O], v[2], vfree[2], pn[2], pt[2];
        double impulse = 0.0;
        /* The contact is always in the problem (gap + h (v_o+ - v_f+) >= 0, complementary to
         * lambda >= 0: it takes no force where it stays open), so no gap closes after the
         * solve whichever velocities the friction leaves. Newton restitution applies where the
         * contact closes in this step: by the free velocities, or, if the solve finds it
         * active without it, the step is solved again after the impact; and, as in the hybrid
         * impact, only where the rebound e |v_f - v_o| would reach resting_speed: slower, the
         * bodies stay together (a pushing finger keeps one contact instead of bouncing at every
         * step on its own rounding). The impact comes first, at the step's start, an impulse
         * between the two bodies alone that turns the closing speed into e times it (their
         * momentum kept, kinetic energy lost); then the step's forces, drags, friction and the
         * plastic contact act from there, backward Euler, which only takes energy out against
         * the actuator's work F h v+. Solved as one problem with the rebound as a bound on the
         * separating speed, the contact's impulse had to hold that bound against the object's
         * ground friction, and pushed it with more energy than the impact had. */
        int bounces = closing > 0.0 && p[P_RESTITUTION] * closing >= p[P_V_REST] &&
                      p[P_RESTITUTION] > 0.0;
        for (int pass = 0; pass < 2; pass++) {
            double vf0 = x[V_F], vo0 = x[V_O];
            if (pass == 1) { /* the impact: (1 + e) closing between the two bodies */
                impulse = (1.0 + p[P_RESTITUTION]) * closing / (minv[0] + minv[1]);
                vf0 -= impulse * minv[0];
                vo0 += impulse * minv[1];
            }
            double kf = h * p[P_C_F] / p[P_M_F], ko = h * p[P_C_O] / p[P_M_O];
            vfree[0] = drag_step(p[P_DRAG_LAW_F], kf, vf0 + h * fa / p[P_M_F]);
            vfree[1] = drag_step(p[P_DRAG_LAW_O], ko, plus(vo0, h * fo / p[P_M_O]));
            /* the drags act on the velocities after the contact too (backward Euler): a body
             * of mass m with drag c v+ over h answers an impulse J as one of mass m + h c,
             * (m + h c) v+ = m v + h F + J; the quadratic law c v+ |v+| taken there with c |v|
             * of its free velocity (the same free velocity, a drag that only takes energy out).
             * Applied to the free velocities alone, a contact that turned the finger against
             * its push met a drag pointing along the motion (+2.1e-6 J in a step) */
            double w[2] = {
                minv[0] / (1.0 + kf * (p[P_DRAG_LAW_F] == DRAG_QUADRATIC ? fabs(vfree[0]) : 1.0)),
                minv[1] / (1.0 + ko * (p[P_DRAG_LAW_O] == DRAG_QUADRATIC ? fabs(vfree[1]) : 1.0))};
            rs_contact_point_t pts[2] = {
                {.jn = {-1.0, 1.0}, .vn_min = -gap / h},
                /* the object's ground friction: a box of F h on v_o */
                {.jt = {0.0, 1.0},
                 .ft_max = h * (fabs(vo0) <= VEL_EPS ? p[P_F_STATIC] : p[P_F_KINETIC])}};
            v[0] = vfree[0], v[1] = vfree[1];
            pn[1] = pt[0] = 0.0;
            if (pair_solve(w, pts[0].vn_min, pts[1].ft_max, v, &pn[0], &pt[1]) < 0) {
                v[0] = vfree[0], v[1] = vfree[1];
                rs_contact_solve(2, w, 2, pts, v, pn, pt, 200);
                if (fabs(pt[1]) < pts[1].ft_max)
                    v[1] = 0.0; /* friction inside its box holds the object */
            }
            int impact = gap + h * (vfree[1] - vfree[0]) <= 0.0 || pn[0] > 0.0;
            if (pass == 1 || !impact || !bounces)
                break;
        }
        double lambda = impulse + pn[0], was = ed->aux[AUX_N];
        x[V_F] = v[0], x[V_O] = v[1];
        x[X_F] += h * v[0], x[X_O] += h * v[1]; /* backward Euler positions */
        x[IMPULSE] += lambda;
        x[WORK] += plus(fa * h * v[0], fo * h * v[1]);
        ed->aux[AUX_N] = lambda / h;
        if (lambda > 0.0 && !(was > 0.0))
            rs_emit_event(ed, EV_TOUCH, t + (k + 1.0) * h, closing, x, x, 4);
        else if (!(lambda > 0.0) && was > 0.0)
            rs_emit_event(ed, EV_SEPARATE, t + (k + 1.0) * h, 0.0, x, x, 4);
    }
}

static void finger_init(const rs_entity_model_t *em, rs_entity_data_t *ed, double *x)
{
    x[X_F] = em->p[P_X_F0];
    x[V_F] = em->p[P_V_F0];
    x[X_O] = em->p[P_X_O0];
    x[V_O] = em->p[P_V_O0];
    x[IMPULSE] = 0.0;
    x[WORK] = 0.0;
    /* apart to start with; settle() puts touching bodies in contact at the first step */
    ed->mode = x[V_O] != 0.0 ? MODE_SEPARATED : MODE_SEPARATED_STUCK;
    ed->aux[AUX_DIR] = x[V_O] < 0.0 ? -1.0 : 1.0;
    pick_formulation(em, ed, x);
}

static void finger_derivs(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                          const double *x, const double *u, double *xdot)
{
    (void)t;
    double fa = applied_force(ed, u), fo = object_force(ed), dir = ed->aux[AUX_DIR];
    double mf = em->p[P_M_F], mo = em->p[P_M_O];
    switch (ed->mode) {
    case MODE_TS: /* advanced by finger_advance */
        for (int i = 0; i < NX; i++)
            xdot[i] = 0.0;
        break;
    case MODE_COMPLIANT:
        compliant_derivs(em, ed, x, fa, xdot);
        break;
    case MODE_CONTACT_SLIDING: {
        /* one body of mass m_f + m_o; both positions and velocities get the same derivative,
         * so they stay exactly equal */
        double v = x[V_F];
        double ff, n = sliding_contact(em, v, dir, fa, fo, &ff);
        double a = plus(fa - drag_f(em, v) - drag_o(em, v) - ff * dir, fo) / (mf + mo);
        xdot[X_F] = xdot[X_O] = v;
        xdot[V_F] = xdot[V_O] = a;
        /* the sensor: the true N, or the article's reading (the friction it pushes against) */
        xdot[IMPULSE] = article_law(em) ? ff : n;
        xdot[WORK] = plus(fa * v, fo * v);
        break;
    }
    case MODE_CONTACT_STUCK:
        xdot[X_F] = xdot[X_O] = xdot[V_F] = xdot[V_O] = 0.0;
        xdot[IMPULSE] = n_stuck(em, x[V_F], fa);
        xdot[WORK] = 0.0;
        break;
    default: /* apart */
        xdot[X_F] = x[V_F];
        xdot[V_F] = (fa - drag_f(em, x[V_F])) / mf;
        if (ed->mode == MODE_SEPARATED || (x[V_O] != 0.0 && object_free(em, ed))) {
            xdot[X_O] = x[V_O];
            xdot[V_O] = -(drag_o(em, x[V_O]) + friction_free(em) * dir - fo) / mo;
        } else {
            xdot[X_O] = xdot[V_O] = 0.0;
        }
        xdot[IMPULSE] = 0.0;
        xdot[WORK] = plus(fa * x[V_F], ed->mode == MODE_SEPARATED ? fo * x[V_O] : 0.0);
        break;
    }
}

static void finger_guards(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                          const double *x, const double *u, double *g)
{
    (void)t;
    double fa = applied_force(ed, u), dir = ed->aux[AUX_DIR], feps = force_eps(em);
    g[G_TOUCH] = g[G_SEPARATE] = g[G_STOP] = g[G_SLIP] = 1.0;
    switch (ed->mode) {
    case MODE_COMPLIANT: /* the layer's surface, crossed either way; the object's stick-slip */
        g[G_TOUCH] = ed->aux[AUX_SIDE] * (x[X_O] - x[X_F] - pad_of(em));
        if (ed->aux[AUX_STUCK] != 0.0)
            g[G_SLIP] = em->p[P_F_STATIC] - fabs(compliant_push(em, ed, x));
        else if (em->p[P_F_STATIC] > 0.0)
            g[G_STOP] = dir * x[V_O];
        break;
    case MODE_SEPARATED:
        g[G_TOUCH] = x[X_O] - x[X_F] + gap_eps(x);
        g[G_STOP] = dir * x[V_O] + VEL_EPS;
        break;
    case MODE_SEPARATED_STUCK:
        g[G_TOUCH] = x[X_O] - x[X_F] + gap_eps(x);
        if (object_force(ed) != 0.0) /* static friction holds the object against the wrench */
            g[G_SLIP] = em->p[P_F_STATIC] - fabs(object_force(ed)) + feps;
        break;
    case MODE_CONTACT_SLIDING:
        g[G_SEPARATE] = n_sliding(em, x[V_F], dir, fa, object_force(ed)) + feps;
        g[G_STOP] = dir * x[V_F] + VEL_EPS;
        break;
    case MODE_CONTACT_STUCK: {
        /* the object holds the push N plus the wrench on it, either way */
        double n = n_stuck(em, x[V_F], fa), fo = object_force(ed);
        g[G_SEPARATE] = n + feps;
        g[G_SLIP] = em->p[P_F_STATIC] - (fo == 0.0 ? n : fabs(n + fo)) + feps;
        break;
    }
    }
}

/* ---- jumps ----------------------------------------------------------------------------- */

/* The state around one jump, for the events it logs. */
typedef struct jump_ctx {
    rs_entity_data_t *ed;
    double t;
    double before[4];
    const double *x;
} jump_ctx_t;

static void emit(jump_ctx_t *j, int kind, double value)
{
    rs_emit_event(j->ed, kind, j->t, value, j->before, j->x, 4);
}

/* Switch to `mode` (sliding direction dir), logging separate / stick / slip as the contact and
 * the object's sliding change. `push` is the value logged with stick and slip. */
static void enter_mode(jump_ctx_t *j, int mode, double dir, double push)
{
    rs_entity_data_t *ed = j->ed;
    int old = ed->mode;
    double old_dir = ed->aux[AUX_DIR];
    ed->mode = mode;
    if (is_sliding(mode))
        ed->aux[AUX_DIR] = dir;
    if (is_contact(old) && !is_contact(mode))
        emit(j, EV_SEPARATE, push);
    if (is_sliding(old) && !is_sliding(mode)) {
        emit(j, EV_STICK, push);
    } else if (!is_sliding(old) && is_sliding(mode)) {
        emit(j, EV_SLIP, push);
    } else if (is_sliding(old) && is_sliding(mode) && dir != old_dir) {
        /* reversal through rest */
        emit(j, EV_STICK, push);
        emit(j, EV_SLIP, push);
    }
}

/* The bodies touch (gap 0) at a common velocity x[V_F] == x[V_O]: pick contact sliding, contact
 * stuck, or apart, as the contact force says. */
static void resolve_touching(const rs_entity_model_t *em, jump_ctx_t *j, double *x, double fa)
{
    double v = x[V_F], fo = object_force(j->ed);
    if (v != 0.0) {
        double dir = v > 0 ? 1.0 : -1.0;
        double n = n_sliding(em, v, dir, fa, fo);
        enter_mode(j, n >= 0.0 ? MODE_CONTACT_SLIDING : MODE_SEPARATED, dir, n);
        return;
    }
    /* at rest: the finger pushes on the object with F_a - D_f(0), the wrench f_o adds to it */
    double push = n_stuck(em, 0.0, fa), total = plus(push, fo);
    if (push >= 0.0 && total > em->p[P_F_STATIC])
        enter_mode(j, MODE_CONTACT_SLIDING, 1.0, total);
    else if (push >= 0.0 && total < -em->p[P_F_STATIC]) /* the object pushes the finger back */
        enter_mode(j, MODE_CONTACT_SLIDING, -1.0, total);
    else if (push >= 0.0)
        enter_mode(j, MODE_CONTACT_STUCK, 1.0, push);
    else
        enter_mode(j, MODE_SEPARATED_STUCK, 1.0, push);
}

/* Record an impact impulse on the tip. */
static void add_impulse(rs_entity_data_t *ed, double *x, double J)
{
    x[IMPULSE] += J;
    ed->aux[AUX_JSUM] += J;
    if (ed->aux[AUX_IN_SETTLE] != 0.0)
        ed->aux[AUX_PENDING] += J; /* belongs to the control step about to begin */
}

/* An impact that reverses a sliding object does not stop it: no stick/slip pair is logged. */
static void keep_direction_through_impact(rs_entity_data_t *ed, const double *x)
{
    if (is_sliding(ed->mode) && x[V_O] != 0.0)
        ed->aux[AUX_DIR] = x[V_O] > 0 ? 1.0 : -1.0;
}

/* The touch jump map: the finger (v_f) meets the object (v_o) at gap ~ 0. */
static void impact(const rs_entity_model_t *em, jump_ctx_t *j, double *x, double fa)
{
    rs_entity_data_t *ed = j->ed;
    double closing = x[V_F] - x[V_O];
    x[X_F] = x[X_O]; /* exactly on the face: the gap is 0, never negative */
    if (closing < 0.0)
        return; /* already opening (the guard fired within rounding): nothing happens */
    double mf = em->p[P_M_F], mo = em->p[P_M_O], e = em->p[P_RESTITUTION];
    double vcm = (mf * x[V_F] + mo * x[V_O]) / (mf + mo);
    emit(j, EV_TOUCH, closing);
    if (article_law(em) && ed->mode == MODE_SEPARATED_STUCK && x[V_O] == 0.0 &&
        n_stuck(em, x[V_F], fa) <= em->p[P_F_STATIC]) {
        /* the article's wall: the object stays put, the finger alone rebounds */
        double J = (1.0 + e) * mf * closing;
        if (e * closing >= em->p[P_V_REST]) {
            x[V_F] = -e * x[V_F];
            add_impulse(ed, x, J);
            emit(j, EV_BOUNCE, J);
            return;
        }
        x[V_F] = 0.0;
        add_impulse(ed, x, mf * closing);
        emit(j, EV_MERGE, mf * closing);
        resolve_touching(em, j, x, fa);
        return;
    }
    if (e * closing >= em->p[P_V_REST] && closing > 0.0) {
        /* bounce: restitution on the relative velocity about the centre of momentum */
        double J = (1.0 + e) * mf * fabs(x[V_F] - vcm);
        x[V_F] = (1.0 + e) * vcm - e * x[V_F];
        x[V_O] = (1.0 + e) * vcm - e * x[V_O];
        add_impulse(ed, x, J);
        emit(j, EV_BOUNCE, J);
        keep_direction_through_impact(ed, x);
        if (x[V_O] != 0.0)
            enter_mode(j, MODE_SEPARATED, x[V_O] > 0 ? 1.0 : -1.0, 0.0);
        else
            enter_mode(j, MODE_SEPARATED_STUCK, 1.0, 0.0);
        return;
    }
    /* merge: both at the centre-of-momentum velocity */
    double J = mf * fabs(x[V_F] - vcm);
    x[V_F] = x[V_O] = vcm;
    add_impulse(ed, x, J);
    emit(j, EV_MERGE, J);
    keep_direction_through_impact(ed, x);
    resolve_touching(em, j, x, fa);
}

/* The object's velocity reached 0 (in contact, the finger's too): stick, or slide the other way
 * if the push exceeds F_static. */
static void stop(const rs_entity_model_t *em, jump_ctx_t *j, double *x, double fa)
{
    x[V_O] = 0.0;
    if (is_contact(j->ed->mode)) {
        x[V_F] = 0.0;
        resolve_touching(em, j, x, fa);
    } else {
        enter_mode(j, MODE_SEPARATED_STUCK, 1.0, 0.0); /* nothing pushes a free object */
    }
}

static void jump_begin(jump_ctx_t *j, rs_entity_data_t *ed, double t, const double *x)
{
    j->ed = ed;
    j->t = t;
    j->x = x;
    for (int i = 0; i < 4; i++)
        j->before[i] = x[i];
}

/* Apply the jump maps of the guards in `fired`. */
static void handle_fired(const rs_entity_model_t *em, jump_ctx_t *j, double *x, double fa,
                         const int *fired)
{
    rs_entity_data_t *ed = j->ed;
    switch (ed->mode) {
    case MODE_SEPARATED:
    case MODE_SEPARATED_STUCK:
        if (fired[G_TOUCH])
            impact(em, j, x, fa); /* the impact decides the object's motion too */
        else if (fired[G_STOP] && ed->mode == MODE_SEPARATED)
            stop(em, j, x, fa);
        else if (fired[G_SLIP] && ed->mode == MODE_SEPARATED_STUCK) /* the wrench breaks it */
            enter_mode(j, MODE_SEPARATED, object_force(ed) > 0.0 ? 1.0 : -1.0,
                       fabs(object_force(ed)));
        break;
    case MODE_CONTACT_SLIDING:
        if (fired[G_STOP]) {
            stop(em, j, x, fa);
        } else if (fired[G_SEPARATE]) {
            double n = n_sliding(em, x[V_F], ed->aux[AUX_DIR], fa, object_force(ed));
            enter_mode(j, MODE_SEPARATED, ed->aux[AUX_DIR], n);
        }
        break;
    case MODE_CONTACT_STUCK: {
        double n = n_stuck(em, x[V_F], fa), total = plus(n, object_force(ed));
        if (fired[G_SEPARATE])
            enter_mode(j, MODE_SEPARATED_STUCK, 1.0, n);
        else if (fired[G_SLIP])
            enter_mode(j, MODE_CONTACT_SLIDING, total < 0.0 ? -1.0 : 1.0, total);
        break;
    }
    }
}

/* Handle the fired guards, then any guard of the new mode that is not strictly positive (two
 * guards crossing at once, e.g. touch and stop): the integrator restarts here and would not see
 * a guard that starts at or below 0. Each pass leaves the guards it handled at >= eps, so this
 * ends in a few passes. */
static void jump_to_consistent(const rs_entity_model_t *em, jump_ctx_t *j, double t, double *x,
                               const double *u, const int *fired)
{
    int again[NG];
    handle_fired(em, j, x, applied_force(j->ed, u), fired);
    for (int pass = 0; pass < 4; pass++) {
        double g[NG];
        int any = 0;
        finger_guards(em, j->ed, t, x, u, g);
        for (int i = 0; i < NG; i++)
            any |= again[i] = g[i] <= 0.0;
        if (!any)
            return;
        handle_fired(em, j, x, applied_force(j->ed, u), again);
    }
}

/* compliant: the object at rest (or reaching rest) sticks while static friction can hold the
 * layer's push, |N| <= F_static; else it slides in the push's direction (Coulomb's law with
 * a static level). */
static void compliant_stick_slip(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                                 double *x)
{
    double before[4] = {x[X_F], x[V_F], x[X_O], x[V_O]};
    int was = ed->aux[AUX_STUCK] != 0.0;
    double n = compliant_push(em, ed, x);
    x[V_O] = 0.0; /* at rest, or reached it (its guard crossed 0) */
    if (fabs(n) <= em->p[P_F_STATIC] && em->p[P_F_STATIC] > 0.0) {
        ed->aux[AUX_STUCK] = 1.0;
        if (!was)
            rs_emit_event(ed, EV_STICK, t, fabs(n), before, x, 4);
    } else {
        ed->aux[AUX_STUCK] = 0.0;
        ed->aux[AUX_DIR] = n < 0.0 ? -1.0 : 1.0;
        if (was)
            rs_emit_event(ed, EV_SLIP, t, fabs(n), before, x, 4);
    }
}

static void finger_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                        const double *u, const int *fired)
{
    if (ed->mode == MODE_COMPLIANT) {
        if (fired[G_TOUCH]) {
            ed->aux[AUX_SIDE] = -ed->aux[AUX_SIDE];
            rs_emit_event(ed, ed->aux[AUX_SIDE] < 0.0 ? EV_TOUCH : EV_SEPARATE, t,
                          x[V_F] - x[V_O], x, x, 4);
        }
        /* the layer's force jumps where the surface is crossed (its damping term c d'): a
         * stuck object then slips at once if it exceeds F_static */
        int stuck = ed->aux[AUX_STUCK] != 0.0;
        if (fired[G_SLIP] || (!stuck && fired[G_STOP]) ||
            (stuck && fabs(compliant_push(em, ed, x)) > em->p[P_F_STATIC]))
            compliant_stick_slip(em, ed, t, x);
        return;
    }
    jump_ctx_t j;
    jump_begin(&j, ed, t, x);
    jump_to_consistent(em, &j, t, x, u, fired);
}

/* The object stuck apart from the finger: kinetic friction takes a change of its velocity
 * back (rs_robot_t.holds). Not under the article's law, which has no friction on a free object:
 * moved, it glides on under its drag alone. */
static int finger_holds(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                        int i)
{
    (void)x;
    return ed->mode == MODE_SEPARATED_STUCK && i == V_O && em->p[P_F_KINETIC] > 0.0 &&
           !article_law(em);
}

/* The free object at rest apart from the finger (object_free): moved either way it glides
 * on (separated, or separated_stuck's own flow where F_kinetic = 0) under its drag as
 * separated_stuck's flow moves it at the changed velocity (rs_robot_t.glides). Not at the
 * touch, where a change of its velocity turns the article's wall into an impact. */
static int finger_glides(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                         const double *x, int i)
{
    return ed->mode == MODE_SEPARATED_STUCK && i == V_O && object_free(em, ed) &&
           x[X_O] - x[X_F] > gap_eps(x);
}

/* After new commands, a reset or new parameters: the mode consistent with x and u. */
static void finger_settle(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                          const double *u)
{
    int family = ed->mode == MODE_TS ? RS_CONTACT_TIME_STEPPING
                 : ed->mode == MODE_COMPLIANT ? RS_CONTACT_COMPLIANT
                                              : RS_CONTACT_HYBRID;
    if (family != (int)em->p[P_MODEL] && pick_formulation(em, ed, x))
        return; /* switched to time_stepping or compliant */
    if (family == (int)em->p[P_MODEL] && family == RS_CONTACT_COMPLIANT) {
        /* a new padding may put the layer's surface on the other side of the tip: the side
         * follows (beyond the root finder's tolerance, which an event leaves the mark within),
         * so that the touch guard starts armed */
        double off = x[X_O] - x[X_F] - pad_of(em);
        if (fabs(off) > 1e-9 * (1.0 + fabs(x[X_F]) + fabs(x[X_O])) &&
            (off < 0.0) != (ed->aux[AUX_SIDE] < 0.0))
            ed->aux[AUX_SIDE] = off < 0.0 ? -1.0 : 1.0;
        /* no modes; but a new wrench on the object (or its end) changes the push static
         * friction must hold on an object at rest: it sticks or slips at once */
        int stuck = ed->aux[AUX_STUCK] != 0.0;
        if (x[V_O] == 0.0 && em->p[P_F_STATIC] > 0.0 &&
            stuck != (fabs(compliant_push(em, ed, x)) <= em->p[P_F_STATIC]))
            compliant_stick_slip(em, ed, t, x);
        return;
    }
    if (family == (int)em->p[P_MODEL] && family != RS_CONTACT_HYBRID)
        return; /* time_stepping has no modes to settle */
    jump_ctx_t j;
    jump_begin(&j, ed, t, x);
    double fa = applied_force(ed, u), dir = ed->aux[AUX_DIR];
    int was_contact = is_contact(ed->mode);
    ed->aux[AUX_IN_SETTLE] = 1.0;
    switch (ed->mode) {
    case MODE_SEPARATED:
    case MODE_SEPARATED_STUCK: {
        double closing = x[V_F] - x[V_O];
        if (x[X_O] - x[X_F] <= gap_eps(x) && closing >= 0.0) {
            /* touching: an impact if closing; at equal velocities, contact if the finger
             * presses (else they stay apart and the touch guard watches) */
            int press;
            if (closing > 0.0)
                press = 1;
            else if (x[V_F] != 0.0)
                press = n_sliding(em, x[V_F], x[V_F] > 0 ? 1.0 : -1.0, fa, object_force(ed)) >= 0.0;
            else
                press = n_stuck(em, 0.0, fa) >= 0.0;
            if (press) {
                impact(em, &j, x, fa);
                break;
            }
        }
        if (ed->mode == MODE_SEPARATED && dir * x[V_O] <= 0.0)
            stop(em, &j, x, fa);
        else if (ed->mode == MODE_SEPARATED_STUCK && x[V_O] != 0.0 && em->p[P_F_KINETIC] > 0.0)
            /* a moving object cannot be held: it slides, and kinetic friction stops it again
             * within m |v_o| / F_kinetic (a state set from outside) */
            enter_mode(&j, MODE_SEPARATED, x[V_O] > 0.0 ? 1.0 : -1.0, 0.0);
        break;
    }
    case MODE_CONTACT_SLIDING:
        if (dir * x[V_F] <= 0.0) {
            stop(em, &j, x, fa);
        } else {
            double n = n_sliding(em, x[V_F], dir, fa, object_force(ed));
            if (n < 0.0)
                enter_mode(&j, MODE_SEPARATED, dir, n);
        }
        break;
    case MODE_CONTACT_STUCK: {
        double n = n_stuck(em, x[V_F], fa), total = plus(n, object_force(ed));
        if (n < 0.0)
            enter_mode(&j, MODE_SEPARATED_STUCK, 1.0, n);
        else if (fabs(total) > em->p[P_F_STATIC])
            enter_mode(&j, MODE_CONTACT_SLIDING, total < 0.0 ? -1.0 : 1.0, total);
        break;
    }
    }
    /* a contact left at the gap with the finger faster than the object (a state set from
     * outside, or a change of one velocity alone: contact keeps them equal) closes at once: the
     * impact, here as in the separated modes above, not by the touch guard an instant later */
    if (was_contact && !is_contact(ed->mode) && x[X_O] - x[X_F] <= gap_eps(x) &&
        x[V_F] - x[V_O] > 0.0)
        impact(em, &j, x, fa);
    static const int none[NG];
    jump_to_consistent(em, &j, t, x, u, none);
    ed->aux[AUX_IN_SETTLE] = 0.0;
}

/* ---- sensors --------------------------------------------------------------------------- */

static void finger_step_begin(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                              const double *x, double dt)
{
    (void)em, (void)t, (void)dt;
    /* impulses settle() applied at this instant belong to this control step */
    ed->aux[AUX_P0] = x[IMPULSE] - ed->aux[AUX_PENDING];
    ed->aux[AUX_JSUM0] = ed->aux[AUX_JSUM] - ed->aux[AUX_PENDING];
    ed->aux[AUX_PENDING] = 0.0;
}

static void finger_sense(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                         const double *x, const double *u, double dt)
{
    (void)t;
    double n = ed->mode == MODE_TS          ? ed->aux[AUX_N]
               : ed->mode == MODE_COMPLIANT ? compliant_force(em, ed, x)
                                            : contact_force(em, ed->mode, ed->aux[AUX_DIR], x,
                                                            applied_force(ed, u), object_force(ed));
    ed->s[S_CONTACT_FORCE] = n;
    if (dt > 0.0) {
        ed->s[S_TIP_FORCE] = (x[IMPULSE] - ed->aux[AUX_P0]) / dt;
        ed->s[S_IMPACT_IMPULSE] = ed->aux[AUX_JSUM] - ed->aux[AUX_JSUM0];
    } else {
        ed->s[S_TIP_FORCE] = n;
        ed->s[S_IMPACT_IMPULSE] = 0.0;
    }
}

/* The (finger, object) pair for State.contacts after the last control step. had_contact: any
 * momentum passed through the tip in the step (contact_impulse grew); had_separation: a
 * separate or bounce event in the step; had_penetration: the gap is negative at its end
 * (time_stepping's solver tolerance, or compliant through the padding). The force is the
 * object's on the finger, -tip_force along x. */
static int finger_contacts(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                           const double *x, rs_contact_info_t *out, int max)
{
    if (max < 1 || em->p[P_FEEDBACK] == 0.0)
        return 0;
    const rs_data_t *d = ed->data;
    int in = ed->mode == MODE_TS          ? ed->aux[AUX_N] > 0.0
             : ed->mode == MODE_COMPLIANT ? ed->aux[AUX_SIDE] < 0.0 && compliant_force(em, ed, x) > 0.0
                                          : is_contact(ed->mode);
    int sep = 0;
    double t0 = d->t - (d->m ? d->m->control_dt : 0.0);
    for (int i = 0; i < d->nevents; i++) {
        const rs_event_t *ev = &d->events[i];
        sep |= ev->entity == ed->index && ev->t > t0 &&
               (ev->kind == EV_SEPARATE || ev->kind == EV_BOUNCE);
    }
    *out = (rs_contact_info_t){
        .other = "object",
        .in_contact = in,
        .had_contact = in || x[IMPULSE] > ed->aux[AUX_P0],
        .had_separation = sep,
        .had_penetration = x[X_O] - x[X_F] < 0.0,
        .point = {x[X_F], 0.0},
        .normal = {-1.0, 0.0},
        .mean_force = {-ed->s[S_TIP_FORCE], 0.0},
    };
    return 1;
}

/* The gap never goes negative (hybrid: the tip is put back on the face at each touch;
 * time_stepping: the contact is in every step's problem): a state with the tip past the face
 * beyond rounding breaks the formulation, and the step stops with this error. Compliant contact
 * is exempt: there the layer is entered by design and the gap may go below 0. */
static int finger_failure(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                          const double *x, rs_status_t *st)
{
    double gap = x[X_O] - x[X_F];
    if (ed->mode == MODE_COMPLIANT || !(gap < -1e-9 * (1.0 + fabs(x[X_F]) + fabs(x[X_O]))))
        return 0;
    return rs_fail(st, RS_ESIMFAIL,
                   "'%s': the finger's tip is %g m past the object's face (x_f = %.9g, x_o = "
                   "%.9g); the contact formulation cannot go on from this state",
                   em->name, -gap, x[X_F], x[X_O]);
}

/* Whether the live state fits new parameters (rs_robot_t.admissible; docs/physics-edges.md).
 * The gap x_o - x_f depends on no parameter, so a change can only switch a tip already past
 * the face (compliant) to a rigid formulation, which cannot go on from there, or make the
 * compliant layer hold more than it held: 1/2 k d^2 (d = padding - gap, k the harmonic mean of
 * the stiffnesses) above its value under the old parameters (0 under a rigid formulation),
 * which the next steps would release as motion (a thicker padding throws the object off). */
static int finger_admissible(const rs_entity_model_t *em, const rs_entity_model_t *was,
                             const rs_entity_data_t *ed, const double *x, rs_status_t *st)
{
    (void)ed;
    double gap = x[X_O] - x[X_F];
    if (em->p[P_MODEL] != RS_CONTACT_COMPLIANT) {
        if (gap < -1e-9 * (1.0 + fabs(x[X_F]) + fabs(x[X_O])))
            return rs_fail(st, RS_EPRECOND,
                           "'%s': the finger's tip is %.6g m past the object's face, which a "
                           "rigid contact_model cannot start from; Reset or SetState the finger "
                           "behind the face (x_f <= x_o = %.9g m) first",
                           em->name, -gap, x[X_O]);
        return 0;
    }
    double d = pad_of(em) - gap, d_was = pad_of(was) - gap;
    double k = rs_blend_harmonic(em->p[P_K_F], em->p[P_K_O]);
    double k_was = rs_blend_harmonic(was->p[P_K_F], was->p[P_K_O]);
    double e_new = d > 0.0 ? 0.5 * k * d * d : 0.0;
    double e_was = was->p[P_MODEL] == RS_CONTACT_COMPLIANT && d_was > 0.0
                       ? 0.5 * k_was * d_was * d_was
                       : 0.0;
    if (e_new > e_was * (1.0 + 1e-9) + 1e-12)
        return rs_fail(st, RS_EPRECOND,
                       "'%s': under the new parameters the finger would be %.6g m deep in the "
                       "%.6g m compliant layer, whose spring would hold %.6g J (%.6g J before) "
                       "and release it as motion; Reset or SetState the bodies at least %.9g m "
                       "apart first, or change the padding or stiffness while they are",
                       em->name, d, pad_of(em), e_new, e_was, pad_of(em));
    return 0;
}

/* ---- the right-hand side's Jacobian (rs_robot_t.jacobian) ------------------------------------ */

/* A drag's partials along its velocity and its coefficient: c and v (linear), 2 c |v| and v |v|
 * (quadratic). */
static void drag_partials(double law, double c, double v, double *dv, double *dc)
{
    *dv = law == DRAG_QUADRATIC ? 2.0 * c * fabs(v) : c;
    *dc = law == DRAG_QUADRATIC ? v * fabs(v) : v;
}

/* The inputs finger_derivs depends on in the hybrid modes (the positions enter none): the two
 * velocities, the applied force, then the masses, drags and frictions among the parameters. */
enum { PD_VF, PD_VO, PD_FA, PD_MF, PD_MO, PD_CF, PD_CO, PD_FS, PD_FK, PD_N };

/* friction_pushed()'s partials (PD_N values) at v, fa: with the article's law, f_kinetic
 * min(F_i, F_static) differentiated on the side of its clamp where F_i lies. */
static void friction_pushed_partials(const rs_entity_model_t *em, double v, double fa, double *g)
{
    for (int i = 0; i < PD_N; i++)
        g[i] = 0.0;
    if (!article_law(em)) {
        g[PD_FK] = 1.0;
        return;
    }
    double fs = em->p[P_F_STATIC], fk = em->p[P_F_KINETIC];
    if (fs <= 0.0)
        return;
    double push = fa - drag_f(em, v), dv, dc;
    if (push <= 0.0)
        return;
    if (push >= fs) {
        g[PD_FK] = 1.0; /* f_kinetic F_static = F_kinetic */
        return;
    }
    drag_partials(em->p[P_DRAG_LAW_F], em->p[P_C_F], v, &dv, &dc);
    g[PD_VF] = -fk / fs * dv;
    g[PD_FA] = fk / fs;
    g[PD_CF] = -fk / fs * dc;
    g[PD_FK] = push / fs;
    g[PD_FS] = -fk * push / (fs * fs);
}

/* rs_robot_t.jacobian: finger_derivs differentiated by hand in the hybrid modes (see the
 * header's equations); the masses, drags and frictions among the parameters. time_stepping and
 * compliant: none (differenced). */
static int finger_jacobian(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                           const double *x, const double *u, int nq, const int *slot, double *f,
                           double *J, int ld, unsigned char *known)
{
    if (ed->mode == MODE_TS || ed->mode == MODE_COMPLIANT)
        return -1;
    finger_derivs(em, ed, t, x, u, f);
    const double *p = em->p;
    double fa = applied_force(ed, u), fo = object_force(ed), dir = ed->aux[AUX_DIR];
    double mf = p[P_M_F], mo = p[P_M_O], vf = x[V_F], vo = x[V_O];
    double g[NX][PD_N] = {{0}}, dfv, dfc, dov, doc;
    drag_partials(p[P_DRAG_LAW_F], p[P_C_F], vf, &dfv, &dfc);
    switch (ed->mode) {
    case MODE_CONTACT_SLIDING: {
        /* a = (F_a - D_f(v) - D_o(v) - ff dir + f_o) / (m_f + m_o), N = n_sliding() */
        double ff[PD_N], mt = mf + mo, a = f[V_F], n = f[IMPULSE];
        friction_pushed_partials(em, vf, fa, ff);
        drag_partials(p[P_DRAG_LAW_O], p[P_C_O], vf, &dov, &doc);
        double df = drag_f(em, vf), dro = drag_o(em, vf), ffv = friction_pushed(em, vf, fa);
        if (article_law(em) && dir < 0.0 &&
            mo * (fa - df) + mf * (ffv * dir + dro - fo) < 0.0) {
            /* sliding_contact's Filippov friction: min(max(base, 0) / m_f, ff), base = m_o
             * (F_a - D_f) + m_f (D_o - f_o) */
            double base = mo * (fa - df) + mf * (dro - fo);
            if (base <= 0.0) {
                for (int i = 0; i < PD_N; i++)
                    ff[i] = 0.0;
            } else if (base / mf < ffv) {
                double gb[PD_N] = {0};
                gb[PD_VF] = -mo * dfv + mf * dov;
                gb[PD_FA] = mo;
                gb[PD_MF] = dro - fo - base / mf;
                gb[PD_MO] = fa - df;
                gb[PD_CF] = -mo * dfc;
                gb[PD_CO] = mf * doc;
                for (int i = 0; i < PD_N; i++)
                    ff[i] = gb[i] / mf;
            }
        }
        g[X_F][PD_VF] = g[X_O][PD_VF] = 1.0;
        double *ga = g[V_F];
        ga[PD_VF] = (-dfv - dov - dir * ff[PD_VF]) / mt;
        ga[PD_FA] = (1.0 - dir * ff[PD_FA]) / mt;
        ga[PD_MF] = (-a - dir * ff[PD_MF]) / mt;
        ga[PD_MO] = (-a - dir * ff[PD_MO]) / mt;
        ga[PD_CF] = (-dfc - dir * ff[PD_CF]) / mt;
        ga[PD_CO] = (-doc - dir * ff[PD_CO]) / mt;
        ga[PD_FS] = -dir * ff[PD_FS] / mt;
        ga[PD_FK] = -dir * ff[PD_FK] / mt;
        for (int i = 0; i < PD_N; i++)
            g[V_O][i] = ga[i];
        double *gn = g[IMPULSE];
        if (article_law(em)) {
            for (int i = 0; i < PD_N; i++)
                gn[i] = ff[i];
        } else {
            gn[PD_VF] = (-mo * dfv + mf * (dir * ff[PD_VF] + dov)) / mt;
            gn[PD_FA] = (mo + mf * dir * ff[PD_FA]) / mt;
            gn[PD_MF] = (ffv * dir + dro - fo - n) / mt;
            gn[PD_MO] = (fa - df - n) / mt;
            gn[PD_CF] = (-mo * dfc + mf * dir * ff[PD_CF]) / mt;
            gn[PD_CO] = mf * doc / mt;
            gn[PD_FS] = mf * dir * ff[PD_FS] / mt;
            gn[PD_FK] = mf * dir * ff[PD_FK] / mt;
        }
        g[WORK][PD_VF] = fa + fo;
        g[WORK][PD_FA] = vf;
        break;
    }
    case MODE_CONTACT_STUCK: /* N = F_a - D_f(v_f) */
        g[IMPULSE][PD_VF] = -dfv;
        g[IMPULSE][PD_FA] = 1.0;
        g[IMPULSE][PD_CF] = -dfc;
        break;
    default: /* apart: m_f v_f' = F_a - D_f, m_o v_o' = -D_o - F_kinetic dir + f_o (sliding) */
        g[X_F][PD_VF] = 1.0;
        g[V_F][PD_VF] = -dfv / mf;
        g[V_F][PD_FA] = 1.0 / mf;
        g[V_F][PD_MF] = -f[V_F] / mf;
        g[V_F][PD_CF] = -dfc / mf;
        g[WORK][PD_VF] = fa;
        g[WORK][PD_FA] = vf;
        if (ed->mode == MODE_SEPARATED || object_free(em, ed)) {
            /* sliding, or free at rest: the glide's (derivs moves a free object at rest
             * once it has a velocity) */
            drag_partials(p[P_DRAG_LAW_O], p[P_C_O], vo, &dov, &doc);
            g[X_O][PD_VO] = 1.0;
            g[V_O][PD_VO] = -dov / mo;
            g[V_O][PD_MO] = -f[V_O] / mo;
            g[V_O][PD_CO] = -doc / mo;
            g[V_O][PD_FK] = article_law(em) || ed->mode != MODE_SEPARATED ? 0.0 : -dir / mo;
            g[WORK][PD_VO] = fo;
        }
        break;
    }
    static const int pslot[PD_N] = {-1, -1, -1, P_M_F, P_M_O, P_C_F, P_C_O, P_F_STATIC,
                                    P_F_KINETIC};
    for (int i = 0; i < NX; i++) {
        double *row = J + (size_t)i * ld;
        for (int c = 0; c < NX; c++)
            row[c] = 0.0;
        row[V_F] = g[i][PD_VF];
        row[V_O] = g[i][PD_VO];
        row[NX + U_FORCE] = g[i][PD_FA];
        for (int k = 0; k < nq; k++)
            for (int q = PD_MF; q < PD_N; q++)
                if (slot[k] == pslot[q]) {
                    row[NX + NU + k] = g[i][q];
                    known[k] = 1;
                }
    }
    return 0;
}

/* the parameters that choose (rs_robot_t.choices) */
static const char *const finger_choices[] = {"friction_law", "contact_model", "contact_feedback",
                                             "finger_drag_law", "object_drag_law", NULL};

const rs_robot_t rs_robot_finger = {
    .kind = "finger",
    .doc = "1D finger pushing an object with static/kinetic friction, impacts and a tip force "
           "sensor",
    .nx = NX,
    .state = finger_state,
    .nu = NU,
    .actuators = finger_actuators,
    .ns = NS,
    .sensors = finger_sensors,
    .np = NP,
    .params = finger_params,
    .nmodes = NMODES,
    .mode_names = finger_modes,
    .choices = finger_choices,
    .nevent_kinds = NEVENTS,
    .event_names = finger_events,
    .naux = NAUX,
    .aux_vars = finger_aux,
    .nwrench = sizeof finger_wrench / sizeof finger_wrench[0],
    .wrench = finger_wrench,
    .nguards = finger_nguards,
    .validate = finger_validate,
    .init = finger_init,
    .derivs = finger_derivs,
    .jacobian = finger_jacobian,
    .guards = finger_guards,
    .jump = finger_jump,
    .settle = finger_settle,
    .holds = finger_holds,
    .glides = finger_glides,
    .step_begin = finger_step_begin,
    .advance = finger_advance,
    .failure = finger_failure,
    .admissible = finger_admissible,
    .contacts = finger_contacts,
    .sense = finger_sense,
};
