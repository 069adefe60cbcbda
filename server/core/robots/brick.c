/* The falling brick (the classic example of hybrid versus time-stepping contact): a planar rigid rectangle
 * (width w, height h, mass m, inertia I = m (w^2 + h^2) / 12 of a uniform brick) under gravity
 * above the ground y = 0, with restitution and Coulomb friction, under one of three contact
 * formulations chosen by the parameter `contact_model`. docs/brick.md has the derivations.
 *
 *   hybrid (0), the hybrid method (guards, jump maps) with complete contact modes: flight; one corner on
 *     the ground, sticking ("pivoting") or sliding ("corner_sliding"); a face on the ground,
 *     sticking ("stuck") or sliding ("sliding"). At every event the mode is chosen by solving
 *     the contact complementarity conditions at the acceleration level (lambda >= 0,
 *     phi lambda = 0, |b| <= mu n, with a_n >= 0 for the corners at the ground):
 *     for one or two contacts in the plane the candidate modes are enumerated and the
 *     consistent one taken (Pfeiffer & Glocker 1996; Brogliato 1999, ch. 5). When none is, the
 *     sliding corner has 1/m + (rx^2 + mu s rx ry)/I <= 0: Painleve's paradox (possible only
 *     for mu > 4/3, for any rectangle: I/m = R^2/3 with R the half diagonal), reported as an
 *     error, the world kept at the event's state. Flow in a contact mode: the Newton-Euler
 *     equations with the contact forces that hold the constraints' accelerations at zero
 *     (index reduction); the state is projected back onto the constraints at every control
 *     step and event (drift of the order of the integrator tolerance otherwise). Guards: the
 *     free corners' heights, the normal forces (lift-off at lambda = 0, tipping), the friction
 *     cone margin (stick -> slip) and the sliding speed (slip -> stick or reversal). A guard
 *     that starts at 0 (a corner just after an impact) is armed by its approach velocity:
 *     such a corner's guard is its normal velocity until the apex, then its height again, so
 *     no root is lost at a restart from 0. Likewise a corner that starts sliding from rest
 *     (vt = 0 to rounding, of either sign) is guarded by its tangential acceleration along
 *     the slide until that reaches 0, then by its sliding speed: a slide that stops within
 *     one integration step would otherwise take the guard s vt from rounding below 0 up and
 *     back down unseen, and friction would go on driving the corner the other way.
 *     Impacts: a two-phase impulse (below). Zeno (bounces accumulating on one corner or two,
 *     e.g. a rocking brick): an impact whose normal approach speed is below `rest_speed` v_r
 *     is plastic, and the mode is chosen at once. Bound: the geometric bounce sequence it cuts
 *     short (rebound e v < e v_r under a normal acceleration a) would have ended
 *     2 e v_r / (a (1 - e)) later, at most (e v_r)^2 / (2 a) higher, and the cut dissipates
 *     at most (1/2) m_n (e v_r)^2 early (m_n the corner's effective mass).
 *   time_stepping (1), the time-stepping method (Stewart & Trinkle 1996): per internal step of ts_step s,
 *     m (v_{k+1} - v_k) / h = -m g + J^T lambda, q_{k+1} = q_k + h v_{k+1} (backward Euler on
 *     positions), lambda >= 0, phi(q_{k+1}) ~ phi_k + h J_n v_{k+1} >= 0, phi lambda = 0, and the
 *     friction pyramid, solved as an LCP by rs_contact_solve, the contact set grown until no
 *     corner ends the step below the ground; restitution by the two-phase impulse (below),
 *     measured in the step's energy, for the corners closing faster than
 *     max(rest_speed, 2 g h). Penetration bound: the gap's linearisation over a step,
 *     R (h omega)^2 / 2 (R the half diagonal), pushed back out by the next step.
 *   compliant (2), a compliant boundary layer: a corner closer to the ground than the padding
 *     (pad = brick padding + ground padding) feels a spring-damper normal force
 *     Fn = max(0, k d + c d') (d = pad - y_corner) and friction -mu Fn sat(vt / slip_speed).
 *     The damping follows from `restitution`: for a linear spring-damper whose contact ends
 *     when the force reaches zero, a corner of effective mass m_n meeting the layer at any
 *     speed leaves at e times it when c = 2 zeta sqrt(k m_n), zeta solving
 *     e = exp(-zeta (pi - 2 asin zeta) / sqrt(1 - zeta^2)) (derivation in docs/brick.md),
 *     at most critically damped: restitution below exp(-2) ~ 0.135 acts as exp(-2). The
 *     dashpot engages over the first 3e-3 of the padding (no force jump to c v at the touch,
 *     which an explicit method cannot start from), shifting e by about 1 %. `damping` adds
 *     to it. The clip at Fn = 0 inside the layer (the dashpot's pull when the corner leaves
 *     faster than the spring relaxes) is an event, like the padding's surface: a corner is
 *     marked pushing or slack, feels k d + c d' or nothing accordingly, and a guard on the
 *     sign of k d + c d' switches the mark, so no integration step holds the kink (a step in
 *     the force's rate k d', which an error test cannot pass over where an event left the
 *     state beside it). With friction above 4/3 the layer can jam (the
 *     compliant face of Painleve's paradox: the forces grow until the integrator gives up;
 *     Genot & Brogliato 1999), and the regularised layer jammed below 4/3 too, so a
 *     compliant brick's blended friction is at most 1 (brick_validate). Penetration bound
 *     (energy: the layer stores at most the approach energy): the spring's compression stays
 *     below v_n sqrt(m_n / k) + 2 m g / k, v_n the normal approach speed.
 *
 * The two-phase impulse (hybrid impacts, time-stepping restitution), a law that cannot create
 * energy: (1) compression: the frictional LCP with vn+ >= 0 (rs_contact_solve); at its
 * solution the kinetic energy changes by p.v+ - (1/2) p^T W p <= 0 (W = J M^-1 J^T,
 * complementarity gives pn vn+ = 0, maximal dissipation pt vt+ <= 0). (2) restitution
 * (Poisson's hypothesis): the normal impulse kappa pn_c, kappa = e, but clamped so that it
 * gives back at most e^2 of the energy phase 1 took (Stronge's energetic bound, Stronge 1991:
 * with friction and slip reversal Newton's and Poisson's laws can otherwise create energy).
 * (3) friction over the restitution phase: the tangential impulses that would stop the slip,
 * clamped to the cone mu kappa pn_c (coordinate descent on the kinetic energy: each update
 * lowers it). (4) a corner that approaches again (the restitution of another driving it into
 * the ground) is compressed again by the frictional LCP, as in (1), so that a sliding corner
 * feels mu times all of its normal impulse (Coulomb's law over the whole impact; a
 * frictionless pass made a tilted sliding brick's landing move it like the root of the tilt),
 * then a normal descent where that stopped short. So KE+ <= KE- - (1 - e^2) (KE- - KE_1) <=
 * KE-. Frictionless: Newton's e exactly.
 *
 * The brick's surface coefficients and the ground's are blended: arithmetic
 * mean for restitution, harmonic mean for friction, stiffness and damping (contact.h).
 *
 * Contact feedback for the pair (brick, ground), inContact / hadContact /
 * hadSeparation / hadPenetration / meanContactForce, is the brick's sensor vector. The mean
 * contact force over a control step is exact in every formulation from the momentum balance
 * (the only other force is gravity): F = m (v(t+dt) - v(t)) / dt + m g (0, 1). The contact
 * normal is the ground's, (0, 1). With a push (the one actuator, a horizontal force on the
 * centre of mass) the balance subtracts it: exact for a held push, the push at the step's end
 * for a schedule. */
#include "../contact.h"
#include "../rs_robot.h"

#include <math.h>

enum { X, Y, TH, VX, VY, W, NX };
enum { U_PUSH, NU };
enum { S_FX, S_FY, S_IN, S_HAD, S_SEP, S_PEN, S_CX, S_DEPTH, NS };
enum {
    MODE_FLIGHT, MODE_SLIDING, MODE_STUCK, MODE_TS, MODE_COMPLIANT, MODE_PIVOT, MODE_CSLIDE,
    MODE_FAILED, NMODES
};
enum { EV_IMPACT, EV_REST, EV_STOP, EV_TOUCH, EV_SEPARATE, EV_MODE, EV_INCONSISTENT, NEVENTS };
enum {
    AUX_VX0, AUX_VY0, AUX_IN, AUX_HAD, AUX_SEP, AUX_PEN, AUX_DIR,
    AUX_S0, AUX_S1, AUX_S2, AUX_S3, AUX_CORNER, AUX_PIVOT_X, AUX_FAIL, AUX_SLACK, NAUX
};
enum {
    P_M, P_W, P_H, P_G, P_MODEL, P_E, P_MU, P_PAD, P_K, P_C, P_GE, P_GMU, P_GPAD, P_GK, P_GC,
    P_TS_STEP, P_REST, P_SLIP, P_X0, P_Y0, P_TH0, P_VX0, P_VY0, P_W0, P_FEEDBACK, NP
};
/* why a hybrid brick cannot go on (AUX_FAIL) */
enum { FAIL_NONE, FAIL_PAINLEVE, FAIL_NO_MODE };

#define NCORNERS 4
#define NGUARDS 7 /* 4 corners, 2 normal forces, 1 friction (stick margin or slip speed) */
#define G_LAM_A 4
#define G_LAM_B 5
#define G_FRICTION 6
#define NGUARDS_COMPLIANT 8 /* 4 corners at the padding surface, 4 layer forces at 0 */
#define G_LAYER 4           /* compliant: the first layer-force guard (corner 0's) */
#define MAX_SWEEPS 200
/* compliant: the largest k / m served, sqrt of it 3.2e4 rad/s (at 1e12 1/s^2 a drop ended in
 * "more than 1000 events in one control step"; at 1e9 a tumbling drop comes to rest with about
 * 900 integrator steps per 10 ms control step) */
#define BRICK_K_OVER_M_MAX 1e9
/* compliant: the largest blended friction served. The rigid paradox needs mu > 4/3 for any
 * rectangle; the regularised layer jammed below it too (corner landings at 6 to 8 m/s, mu 1.2
 * and 1.28, paddings 5 to 45 mm); none of 650 random landings did at 1.0 or 1.1 */
#define BRICK_COMPLIANT_MU_MAX 1.0

static const rs_var_desc_t brick_state[NX] = {
    {"x", "m", -INFINITY, INFINITY, "centre of mass, horizontal"},
    {"y", "m", -INFINITY, INFINITY, "centre of mass, height above the ground"},
    {"theta", "rad", -INFINITY, INFINITY, "angle of the brick's width axis from the ground"},
    {"vx", "m/s", -INFINITY, INFINITY, "velocity of the centre of mass, x"},
    {"vy", "m/s", -INFINITY, INFINITY, "velocity of the centre of mass, y"},
    {"omega", "rad/s", -INFINITY, INFINITY, "angular velocity (counter-clockwise)"},
};

static const rs_var_desc_t brick_actuators[NU] = {
    {"push", "N", -1e6, 1e6, "horizontal force on the centre of mass (held over the step)"},
};

static const rs_var_desc_t brick_sensors[NS] = {
    {"contact_fx", "N", -INFINITY, INFINITY,
     "mean contact force on the brick over the last control step, x (meanContactForce)"},
    {"contact_fy", "N", -INFINITY, INFINITY,
     "mean contact force on the brick over the last control step, y (normal (0, 1))"},
    {"in_contact", "1", 0, 1, "1 if brick and ground are in contact at the end of the step"},
    {"had_contact", "1", 0, 1, "1 if they were in contact at some time during the last step"},
    {"had_separation", "1", 0, 1, "1 if they separated during the last step"},
    {"had_penetration", "1", 0, 1,
     "1 if a corner went below the contact surface (ground, or padding's inner side) in the step"},
    {"contact_x", "m", -INFINITY, INFINITY,
     "contact point: mean x of the corners touching at the end of the step (x when none)"},
    {"penetration", "m", 0, INFINITY,
     "depth of the lowest corner below the contact surface at the end of the step (compliant: "
     "below the padding surface, i.e. the spring's compression)"},
};

static const rs_param_desc_t brick_params[NP] = {
    {"mass", "kg", 1e-3, 1e9, P_M, 1, 1, 1.0,
     "m (compliant: with the stiffness, k / m at most 1e9 1/s^2, k the blended stiffness)"},
    {"width", "m", 1e-6, 1e3, P_W, 1, 1, 0.2, "w, along the brick's x axis"},
    {"height", "m", 1e-6, 1e3, P_H, 1, 1, 0.1, "h, along the brick's y axis"},
    {"gravity", "m/s^2", 0.0, 1e3, P_G, 1, 1, 9.81, "g, along -y"},
    {"contact_model", "1", 0, 2, P_MODEL, 1, 1, 0,
     "contact formulation: 0 hybrid (guards + jump map, exact impact time, contact modes), 1 "
     "time_stepping (velocity-level LCP, backward Euler), 2 compliant (spring-damper "
     "boundary layer)"},
    {"restitution", "1", 0, 1, P_E, 1, 1, 0.5,
     "the brick's coefficient of restitution (every formulation; compliant: sets the damping)"},
    {"friction", "1", 0, 1e3, P_MU, 1, 1, 0.5,
     "the brick's Coulomb friction coefficient (hybrid: above 4/3 a sliding corner can meet "
     "Painleve's paradox, reported as an error; compliant: the blended friction at most 1, "
     "above which a landing corner can jam the layer)"},
    {"padding", "m", 0, 1, P_PAD, 1, 1, 0.0025,
     "the brick's boundary layer (compliant only; default 2.5 mm)"},
    {"stiffness", "N/m", 1e-6, 1e9, P_K, 1, 1, 1e6,
     "the brick's surface stiffness (compliant; the blended k over the mass at most 1e9 1/s^2: "
     "the layer's frequency sqrt(k / m) at most 3.2e4 rad/s, which the integrator resolves)"},
    {"damping", "N s/m", 0, 1e9, P_C, 1, 1, 0.0,
     "the brick's surface damping added to the one restitution sets (compliant)"},
    {"ground_restitution", "1", 0, 1, P_GE, 1, 1, 0.5, "the ground's coefficient of restitution"},
    {"ground_friction", "1", 0, 1e3, P_GMU, 1, 1, 0.5, "the ground's friction coefficient"},
    {"ground_padding", "m", 0, 1, P_GPAD, 1, 1, 0.0, "the ground's boundary layer (compliant)"},
    {"ground_stiffness", "N/m", 1e-6, 1e9, P_GK, 1, 1, 1e6,
     "the ground's stiffness (compliant; see stiffness for its bound with the mass)"},
    {"ground_damping", "N s/m", 0, 1e9, P_GC, 1, 1, 0.0,
     "the ground's damping added to the one restitution sets (compliant)"},
    {"ts_step", "s", 1e-7, 1.0, P_TS_STEP, 1, 1, 1e-3,
     "time_stepping: the largest internal step h (each control step is split evenly)"},
    {"rest_speed", "m/s", 0, 1e3, P_REST, 1, 1, 1e-3,
     "hybrid and time_stepping: an impact slower than this (normal approach speed) is plastic "
     "(ends a Zeno bounce sequence)"},
    {"slip_speed", "m/s", 1e-9, 1e3, P_SLIP, 1, 1, 1e-3,
     "compliant: the sliding speed below which Coulomb friction is regularised (linear)"},
    {"x0", "m", -1e6, 1e6, P_X0, 1, 1, 0.0, "initial x"},
    {"y0", "m", -1e6, 1e6, P_Y0, 1, 1, 0.5, "initial height of the centre"},
    {"theta0", "rad", -1e3, 1e3, P_TH0, 1, 1, 0.0, "initial angle"},
    {"vx0", "m/s", -1e6, 1e6, P_VX0, 1, 1, 0.0, "initial vx"},
    {"vy0", "m/s", -1e6, 1e6, P_VY0, 1, 1, 0.0, "initial vy"},
    {"omega0", "rad/s", -1e6, 1e6, P_W0, 1, 1, 0.0, "initial angular velocity"},
    {"contact_feedback", "1", 0, 1, P_FEEDBACK, 1, 1, 0,
     "1: report the (brick, ground) pair in State.contacts (enableContactFeedback)"},
};

static const rs_aux_desc_t brick_aux[NAUX] = {
    {"vx_start", RS_AUX_REAL, -1e12, 1e12, 0, 0, 0, "vx at the start of the control step"},
    {"vy_start", RS_AUX_REAL, -1e12, 1e12, 0, 0, 0, "vy at the start of the control step"},
    {"in_contact", RS_AUX_INTEGER, 0, 1, 0, 0, 0, "in contact (a contact mode, or a time step "
                                                  "or padding with contact)"},
    {"had_contact", RS_AUX_INTEGER, 0, 1, 0, 0, 0, "contact during this control step"},
    {"had_separation", RS_AUX_INTEGER, 0, 1, 0, 0, 0, "separation during this control step"},
    {"had_penetration", RS_AUX_INTEGER, 0, 1, 0, 0, 0, "penetration during this control step"},
    {"slide_dir", RS_AUX_SIGN, 0, 0, 0, 0, 0, "hybrid sliding: the sign of the sliding speed"},
    {"side0", RS_AUX_SIGN, 0, 0, 0, 0, 0,
     "corner 0: compliant: outside (+1) / inside (-1) the padding; hybrid: guard on its "
     "height (+1) or, just after touching, on its normal velocity (-1)"},
    {"side1", RS_AUX_SIGN, 0, 0, 0, 0, 0, "corner 1, as side0"},
    {"side2", RS_AUX_SIGN, 0, 0, 0, 0, 0, "corner 2, as side0"},
    {"side3", RS_AUX_SIGN, 0, 0, 0, 0, 0, "corner 3, as side0"},
    {"contact_corner", RS_AUX_INTEGER, 0, 3, 0, 0, 0,
     "hybrid: the corner on the ground (pivoting, corner_sliding), the first of the face's"},
    {"pivot_x", RS_AUX_REAL, -1e12, 1e12, 0, 0, 0, "hybrid pivoting: x of the sticking corner"},
    {"failure", RS_AUX_INTEGER, 0, 2, 0, 0, 0,
     "hybrid: why the contact cannot go on (1 Painleve, 2 no consistent mode)"},
    {"layer_slack", RS_AUX_INTEGER, 0, 15, 0, 0, 0,
     "compliant: bit i set: corner i is inside the padding but its spring-damper force "
     "k d + c d' is not positive, so the layer exerts none (it does not pull)"},
};

static const char *const brick_modes[NMODES] = {
    "flight", "sliding", "stuck", "time_stepping", "compliant", "pivoting", "corner_sliding",
    "inconsistent"};
static const char *const brick_events[NEVENTS] = {"impact", "rest", "stop", "touch",
                                                  "separate", "mode", "inconsistent"};

/* ---- geometry and blended coefficients ------------------------------------------------- */

/* corner i's offset from the centre in the world frame (corners 0, 1 bottom at theta = 0) */
static void corner(const rs_entity_model_t *em, const double *x, int i, double *rx, double *ry)
{
    static const double sx[NCORNERS] = {-0.5, 0.5, 0.5, -0.5}, sy[NCORNERS] = {-0.5, -0.5, 0.5, 0.5};
    double cx = sx[i] * em->p[P_W], cy = sy[i] * em->p[P_H];
    double c = cos(x[TH]), s = sin(x[TH]);
    *rx = c * cx - s * cy;
    *ry = s * cx + c * cy;
}

static double inertia(const rs_entity_model_t *em)
{
    const double *p = em->p;
    return p[P_M] * (p[P_W] * p[P_W] + p[P_H] * p[P_H]) / 12.0;
}

static double mu_of(const rs_entity_model_t *em) { return rs_blend_harmonic(em->p[P_MU], em->p[P_GMU]); }
static double e_of(const rs_entity_model_t *em) { return rs_blend_arithmetic(em->p[P_E], em->p[P_GE]); }
static double pad_of(const rs_entity_model_t *em) { return em->p[P_PAD] + em->p[P_GPAD]; }
static int model_of(const rs_entity_model_t *em) { return (int)em->p[P_MODEL]; }
static double size_of(const rs_entity_model_t *em) { return em->p[P_W] + em->p[P_H]; }

/* a length tolerance for "at the ground" (roundoff of y + ry) */
static double tol_of(const rs_entity_model_t *em) { return 1e-12 * (1.0 + size_of(em)); }

/* hybrid: a corner this close to the ground is on it (root finding leaves the event's corner
 * within about 1e-13 of it; a contact mode's projection within roundoff) */
static double gap_tol(const rs_entity_model_t *em) { return 1e-9 * size_of(em); }

/* hybrid: the deepest a corner may be below the ground before the state counts as broken */
static double pen_tol(const rs_entity_model_t *em) { return 1e-7 * size_of(em); }

/* a speed scale for "at rest along the normal": gravity's over the brick's size and the
 * brick's own speeds */
static double speed_tol(const rs_entity_model_t *em, const double *x)
{
    double L = size_of(em);
    return 1e-9 * (sqrt(em->p[P_G] * L) + fabs(x[VX]) + fabs(x[VY]) + fabs(x[W]) * L) + 1e-300;
}

static double gap(const rs_entity_model_t *em, const double *x, int i)
{
    double rx, ry;
    corner(em, x, i, &rx, &ry);
    return x[Y] + ry;
}

/* velocity of corner i along the normal (0, 1) and the tangent (1, 0) */
static double normal_speed(const rs_entity_model_t *em, const double *x, int i)
{
    double rx, ry;
    corner(em, x, i, &rx, &ry);
    return x[VY] + x[W] * rx;
}

static double tangent_speed(const rs_entity_model_t *em, const double *x, int i)
{
    double rx, ry;
    corner(em, x, i, &rx, &ry);
    return x[VX] - x[W] * ry;
}

static double lowest_corner(const rs_entity_model_t *em, const double *x)
{
    double lo = INFINITY;
    for (int i = 0; i < NCORNERS; i++)
        lo = fmin(lo, gap(em, x, i));
    return lo;
}

static double kinetic_energy(const rs_entity_model_t *em, const double *v)
{
    return 0.5 * (em->p[P_M] * (v[0] * v[0] + v[1] * v[1]) + inertia(em) * v[2] * v[2]);
}

/* contact rows of corner i: normal (0, 1, rx), tangent (1, 0, -ry) on (vx, vy, omega) */
static void rows(const rs_entity_model_t *em, const double *x, int i, rs_contact_point_t *pt)
{
    double rx, ry;
    corner(em, x, i, &rx, &ry);
    *pt = (rs_contact_point_t){.jn = {0.0, 1.0, rx}, .jt = {1.0, 0.0, -ry}, .mu = mu_of(em)};
}

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* ---- the two-phase impulse (header comment): cannot create kinetic energy ---------------- */

/* Coordinate descent on the kinetic energy over one kind of row (normal or tangential) with
 * fixed bounds: each update is the exact minimiser along its row, projected on [lo, hi] of
 * the accumulated impulse q (which starts inside), so none raises the energy. The normal rows
 * ask jn.v >= vn_min (lo 0, hi inf); the tangential ones stop the slip within +-bound. */
static void descend(const double *minv, int nc, const rs_contact_point_t *pts, int normal,
                    const double *bound, double *q, double *v)
{
    for (int sweep = 0; sweep < MAX_SWEEPS; sweep++) {
        double change = 0.0, largest = 0.0;
        for (int c = 0; c < nc; c++) {
            const double *j = normal ? pts[c].jn : pts[c].jt;
            double k = j[0] * j[0] * minv[0] + j[1] * j[1] * minv[1] + j[2] * j[2] * minv[2];
            if (!(k > 0.0))
                continue;
            double next;
            if (normal)
                next = fmax(0.0, q[c] - (dot3(j, v) - pts[c].vn_min) / k);
            else
                next = fmin(bound[c], fmax(-bound[c], q[c] - dot3(j, v) / k));
            double dp = next - q[c];
            for (int i = 0; i < 3; i++)
                v[i] += minv[i] * j[i] * dp;
            q[c] = next;
            change = fmax(change, fabs(dp));
            largest = fmax(largest, fabs(q[c]));
        }
        if (change <= 1e-13 * largest || largest == 0.0)
            break;
    }
}

/* kinetic energy at velocities v + shift (shift NULL: none) */
static double shifted_energy(const rs_entity_model_t *em, const double *v, const double *shift)
{
    double w[3] = {v[0], v[1], v[2]};
    if (shift)
        for (int i = 0; i < 3; i++)
            w[i] += shift[i];
    return kinetic_energy(em, w);
}

/* The contact impulse on velocities v (vx, vy, omega; in place) at the nc points pts (their
 * vn_min <= 0), with restitution e for the points flagged in `restitute`: compression LCP,
 * Poisson restitution kappa pn_c (kappa = e, lowered by bisection when needed) such that the
 * impulse as a whole gives back at most e^2 of the energy compression took, friction over the
 * restitution phase, a plastic pass. The energy is kinetic at v + shift: a time step's
 * (gravity's and the push's work over the step, see ts_impulse), or the plain kinetic energy
 * (shift NULL). kappa = 0 always qualifies (compression alone loses `lost`). The normal
 * impulses in pn (nc). */
static void two_phase_impulse(const rs_entity_model_t *em, int nc, const rs_contact_point_t *pts,
                              const int *restitute, double e, const double *shift, double *v,
                              double *pn)
{
    double minv[3] = {1.0 / em->p[P_M], 1.0 / em->p[P_M], 1.0 / inertia(em)};
    double pt[RS_CONTACT_MAX_POINTS], bound[RS_CONTACT_MAX_POINTS], q[RS_CONTACT_MAX_POINTS];
    double ke0 = shifted_energy(em, v, shift), v1[3], d[3] = {0, 0, 0}, pr[RS_CONTACT_MAX_POINTS];
    rs_contact_solve(3, minv, nc, pts, v, pn, pt, MAX_SWEEPS);
    /* where projected Gauss-Seidel stopped short of vn+ >= vn_min (high friction couples the
     * rows), a plastic pass over the normal rows alone finishes compression (descent) */
    for (int c = 0; c < nc; c++)
        pr[c] = 0.0;
    descend(minv, nc, pts, 1, NULL, pr, v);
    for (int c = 0; c < nc; c++)
        pn[c] += pr[c];
    double ke1 = shifted_energy(em, v, shift), lost = fmax(0.0, ke0 - ke1);
    int any = 0;
    for (int c = 0; c < nc; c++)
        if (restitute[c] && pn[c] > 0.0) {
            for (int i = 0; i < 3; i++)
                d[i] += pn[c] * pts[c].jn[i];
            any = 1;
        }
    if (!any || !(e > 0.0))
        return;
    double target = ke0 - (1.0 - e * e) * lost + 1e-14 * ke0, kappa = e, lo = 0.0, hi = e;
    for (int i = 0; i < 3; i++)
        v1[i] = v[i];
    for (int iter = 0; iter < 40; iter++) {
        /* the restitution phase with coefficient kappa, from the end of compression */
        for (int i = 0; i < 3; i++)
            v[i] = v1[i] + kappa * minv[i] * d[i];
        for (int c = 0; c < nc; c++) {
            bound[c] = restitute[c] ? pts[c].mu * kappa * pn[c] : 0.0;
            q[c] = 0.0;
        }
        descend(minv, nc, pts, 0, bound, q, v);
        /* (4) a corner the restitution drives back into the ground: compressed again, with
         * its friction (a sliding corner's friction is mu times all its normal impulse) */
        double p4t[RS_CONTACT_MAX_POINTS];
        rs_contact_solve(3, minv, nc, pts, v, pr, p4t, MAX_SWEEPS);
        descend(minv, nc, pts, 1, NULL, pr, v);
        int ok = shifted_energy(em, v, shift) <= target;
        if (ok && kappa == hi)
            break; /* the largest kappa tried qualifies */
        if (ok)
            lo = kappa;
        else
            hi = kappa;
        kappa = iter == 38 ? lo : 0.5 * (lo + hi);
        if (iter == 38)
            hi = lo; /* the last pass: the best qualifying kappa */
    }
    for (int c = 0; c < nc; c++)
        pn[c] += (restitute[c] ? kappa * pn[c] : 0.0) + pr[c];
}

/* ---- hybrid contact modes: the acceleration-level complementarity problem ----------------- */

/* Accelerations and contact forces of the brick in one contact mode. */
typedef struct accel {
    double ax, ay, al;  /* centre of mass and angular acceleration */
    double lam[2], ft;  /* normal forces (one corner: lam[0]), total friction force along x */
} accel_t;

/* normal acceleration of corner (rx, ry): d^2/dt^2 (y + ry) */
static double normal_accel(const accel_t *a, const double *x, double rx, double ry)
{
    return a->ay + a->al * rx - x[W] * x[W] * ry;
}

static double tangent_accel(const accel_t *a, const double *x, double rx, double ry)
{
    return a->ax - a->al * ry - x[W] * x[W] * rx;
}

static void accel_free(const rs_entity_model_t *em, const double *u, accel_t *a)
{
    *a = (accel_t){.ax = u[U_PUSH] / em->p[P_M], .ay = -em->p[P_G]};
}

/* the accelerations under corner forces (lam at rx_i, friction ft at height ry) */
static void accel_from_forces(const rs_entity_model_t *em, const double *u, const double *rxs,
                              int n, double ry, accel_t *a)
{
    double m = em->p[P_M], I = inertia(em), torque = -ry * a->ft, fy = 0.0;
    for (int i = 0; i < n; i++)
        fy += a->lam[i], torque += rxs[i] * a->lam[i];
    a->ax = (u[U_PUSH] + a->ft) / m;
    a->ay = fy / m - em->p[P_G];
    a->al = torque / I;
}

/* One corner (rx, ry) sticking: a_n = a_t = 0, the 2x2 Delassus system
 *   [1/m + rx^2/I, -rx ry/I; -rx ry/I, 1/m + ry^2/I] [lam; ft] = [g + w^2 ry; w^2 rx - P/m]. */
static void accel_pivot(const rs_entity_model_t *em, const double *x, const double *u, double rx,
                        double ry, accel_t *a)
{
    double m = em->p[P_M], I = inertia(em), w2 = x[W] * x[W];
    double a11 = 1.0 / m + rx * rx / I, a12 = -rx * ry / I, a22 = 1.0 / m + ry * ry / I;
    double b1 = em->p[P_G] + w2 * ry, b2 = w2 * rx - u[U_PUSH] / m, det = a11 * a22 - a12 * a12;
    *a = (accel_t){.lam = {(b1 * a22 - a12 * b2) / det}, .ft = (a11 * b2 - a12 * b1) / det};
    accel_from_forces(em, u, &rx, 1, ry, a);
}

/* One corner sliding in direction s: ft = -mu s lam, a_n = 0:
 *   (1/m + (rx^2 + mu s rx ry)/I) lam = g + w^2 ry. Returns the coefficient (<= 0: Painleve). */
static double accel_corner_slide(const rs_entity_model_t *em, const double *x, const double *u,
                                 double rx, double ry, double s, accel_t *a)
{
    double m = em->p[P_M], I = inertia(em), mu = mu_of(em);
    double A = 1.0 / m + (rx * rx + mu * s * rx * ry) / I;
    double lam = A > 0.0 ? (em->p[P_G] + x[W] * x[W] * ry) / A : 0.0;
    *a = (accel_t){.lam = {lam}, .ft = -mu * s * lam};
    accel_from_forces(em, u, &rx, 1, ry, a);
    return A;
}

/* A face on the ground (corners at rx_a, rx_b, height ry; omega = 0): a_y = alpha = 0,
 *   lam_a + lam_b = m g, rx_a lam_a + rx_b lam_b - ry ft = 0; stick (s = 0): ft = -P;
 *   sliding in direction s: ft = -mu s m g. */
static void accel_face(const rs_entity_model_t *em, const double *u, double rxa, double rxb,
                       double ry, double s, accel_t *a)
{
    double mg = em->p[P_M] * em->p[P_G];
    double ft = s == 0.0 ? -u[U_PUSH] : -mu_of(em) * s * mg;
    double lb = (ry * ft - rxa * mg) / (rxb - rxa);
    *a = (accel_t){.ax = (u[U_PUSH] + ft) / em->p[P_M], .lam = {mg - lb, lb}, .ft = ft};
}

/* The face (corners a, b) the brick lies on when both are on the ground: its height ry and
 * the corners' rx; 0 if a, b are not the two ends of one face. */
static int face_of(const rs_entity_model_t *em, const double *x, int a, int b, double *rxa,
                   double *rxb, double *ry)
{
    double rya, ryb;
    if ((a + 1) % NCORNERS != b && (b + 1) % NCORNERS != a)
        return 0;
    corner(em, x, a, rxa, &rya);
    corner(em, x, b, rxb, &ryb);
    *ry = 0.5 * (rya + ryb);
    return *rxa != *rxb;
}

/* the current mode's contact accelerations (pivot and corner sliding: corner AUX_CORNER) */
static void mode_accel(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                       const double *u, accel_t *a)
{
    double rx, ry;
    int k = (int)ed->aux[AUX_CORNER];
    corner(em, x, k, &rx, &ry);
    if (ed->mode == MODE_PIVOT)
        accel_pivot(em, x, u, rx, ry, a);
    else
        accel_corner_slide(em, x, u, rx, ry, ed->aux[AUX_DIR], a);
}

/* The scales the complementarity tests compare against: an acceleration and a force. */
static double accel_scale(const rs_entity_model_t *em, const double *x, const double *u)
{
    double a = em->p[P_G] + x[W] * x[W] * size_of(em) + fabs(u[U_PUSH]) / em->p[P_M];
    return a > 0.0 ? a : 1.0;
}

/* One candidate mode and how well it satisfies its complementarity conditions: the least of
 * its inequalities' margins, each over its scale (>= 0: consistent). */
typedef struct choice {
    int mode, corner;
    double dir, margin;
} choice_t;

static void consider(choice_t *best, int mode, int corner_index, double dir, double margin)
{
    if (margin > best->margin)
        *best = (choice_t){mode, corner_index, dir, margin};
}

/* The contact mode consistent with state x and push u, among the corners on the ground with
 * no normal velocity (cand, n <= 2): flight, a corner sticking or sliding, a face sticking or
 * sliding. Returns the best candidate; its margin < -1e-9 when none is consistent, and
 * *painleve set when a sliding corner's normal problem had no positive coefficient. */
static choice_t choose_mode(const rs_entity_model_t *em, const double *x, const double *u,
                            const int *cand, int n, int *painleve, int *painleve_corner)
{
    double a0 = accel_scale(em, x, u), f0 = em->p[P_M] * a0, mu = mu_of(em);
    double rx[2], ry[2], vtol = speed_tol(em, x);
    choice_t best = {MODE_FLIGHT, 0, 1.0, -INFINITY};
    accel_t a;
    *painleve = 0;
    for (int i = 0; i < n; i++)
        corner(em, x, cand[i], &rx[i], &ry[i]);
    /* flight: every candidate accelerates away (a_n >= 0) */
    accel_free(em, u, &a);
    double margin = INFINITY;
    for (int i = 0; i < n; i++)
        margin = fmin(margin, normal_accel(&a, x, rx[i], ry[i]) / a0);
    consider(&best, MODE_FLIGHT, 0, 1.0, margin);
    /* one corner on the ground, the other candidate (if any) free to leave */
    for (int i = 0; i < n; i++) {
        double vt = tangent_speed(em, x, cand[i]);
        int other = n == 2 ? 1 - i : -1;
        if (fabs(vt) <= vtol) {
            accel_pivot(em, x, u, rx[i], ry[i], &a);
            margin = fmin(a.lam[0] / f0, (mu * a.lam[0] - fabs(a.ft)) / f0);
            if (other >= 0)
                margin = fmin(margin, normal_accel(&a, x, rx[other], ry[other]) / a0);
            consider(&best, MODE_PIVOT, cand[i], 1.0, margin);
        }
        for (double s = -1.0; s <= 1.0; s += 2.0) {
            if (fabs(vt) > vtol && s * vt < 0.0)
                continue; /* sliding: friction opposes the slip it has */
            if (accel_corner_slide(em, x, u, rx[i], ry[i], s, &a) <= 0.0) {
                if (em->p[P_G] + x[W] * x[W] * ry[i] > 0.0)
                    *painleve = 1, *painleve_corner = cand[i];
                continue;
            }
            margin = a.lam[0] / f0;
            if (fabs(vt) <= vtol) /* starting to slide: it must accelerate in direction s */
                margin = fmin(margin, s * tangent_accel(&a, x, rx[i], ry[i]) / a0);
            if (other >= 0)
                margin = fmin(margin, normal_accel(&a, x, rx[other], ry[other]) / a0);
            consider(&best, MODE_CSLIDE, cand[i], s, margin);
        }
    }
    /* a face on the ground */
    double rxa, rxb, ryf;
    if (n == 2 && face_of(em, x, cand[0], cand[1], &rxa, &rxb, &ryf)) {
        double mg = em->p[P_M] * em->p[P_G];
        if (fabs(x[VX]) <= vtol) {
            accel_face(em, u, rxa, rxb, ryf, 0.0, &a);
            margin = fmin(fmin(a.lam[0], a.lam[1]), mu * mg - fabs(a.ft)) / f0;
            consider(&best, MODE_STUCK, cand[0], 1.0, margin);
        }
        for (double s = -1.0; s <= 1.0; s += 2.0) {
            if (fabs(x[VX]) > vtol && s * x[VX] < 0.0)
                continue;
            accel_face(em, u, rxa, rxb, ryf, s, &a);
            margin = fmin(a.lam[0], a.lam[1]) / f0;
            if (fabs(x[VX]) <= vtol)
                margin = fmin(margin, s * a.ax / a0);
            consider(&best, MODE_SLIDING, cand[0], s, margin);
        }
    }
    return best;
}

/* ---- hybrid: events, mode choice, projection ---------------------------------------------- */

static int is_hybrid_mode(int mode)
{
    return mode != MODE_TS && mode != MODE_COMPLIANT;
}

static int is_face(int mode) { return mode == MODE_SLIDING || mode == MODE_STUCK; }

/* the two lowest corners (a face's, in face modes) */
static void lowest_two(const rs_entity_model_t *em, const double *x, int *a, int *b)
{
    double g[NCORNERS];
    int i0 = 0, i1 = 1;
    for (int i = 0; i < NCORNERS; i++)
        g[i] = gap(em, x, i);
    if (g[i1] < g[i0])
        i0 = 1, i1 = 0;
    for (int i = 2; i < NCORNERS; i++) {
        if (g[i] < g[i0])
            i1 = i0, i0 = i;
        else if (g[i] < g[i1])
            i1 = i;
    }
    *a = i0 < i1 ? i0 : i1;
    *b = i0 < i1 ? i1 : i0;
}

/* the face mode's accelerations and forces at state x */
static void face_accel(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                       const double *u, accel_t *acc)
{
    int a, b;
    double rxa, rxb, ry;
    lowest_two(em, x, &a, &b);
    if (!face_of(em, x, a, b, &rxa, &rxb, &ry)) {
        accel_free(em, u, acc);
        return;
    }
    accel_face(em, u, rxa, rxb, ry, ed->mode == MODE_STUCK ? 0.0 : ed->aux[AUX_DIR], acc);
}

/* Put the state back on the current contact mode's constraints (integration drift): the
 * contact corner at height 0 with no normal velocity (and, sticking, at its pivot with no
 * tangential velocity); a face flat at rest height with no vertical or angular velocity.
 * Sliding, the vertical velocity removed is a normal impulse m dvy, and Coulomb's friction
 * comes with it: vx moves by -s mu dvy (s the slide's direction). A corner that a mode takes
 * as at rest along the normal (|v_n| within speed_tol, which grows with |vx|: 1.5e-4 m/s at
 * vx = 1.5e5 m/s) would in the flow hop off and land, or press, the normal force's impulse
 * over it differing from the mode's by that same m dvy; without its friction vx jumped by up
 * to mu speed_tol wherever a tilt or a bounce ended in such a snap (docs/derivatives.md, the
 * brick's many-bounce noise). */
static void project(const rs_entity_model_t *em, const rs_entity_data_t *ed, double *x)
{
    double rx, ry, vy = x[VY];
    if (ed->mode == MODE_PIVOT || ed->mode == MODE_CSLIDE) {
        corner(em, x, (int)ed->aux[AUX_CORNER], &rx, &ry);
        x[Y] = -ry;
        x[VY] = -x[W] * rx;
        if (ed->mode == MODE_PIVOT) {
            x[X] = ed->aux[AUX_PIVOT_X] - rx;
            x[VX] = x[W] * ry;
        }
    } else if (is_face(ed->mode)) {
        double k = nearbyint(x[TH] / (0.5 * M_PI));
        x[TH] = k * 0.5 * M_PI;
        x[Y] = fmod(fabs(k), 2.0) == 0.0 ? 0.5 * em->p[P_H] : 0.5 * em->p[P_W];
        x[VY] = x[W] = 0.0;
        if (ed->mode == MODE_STUCK)
            x[VX] = 0.0;
    }
    if (ed->mode == MODE_SLIDING || ed->mode == MODE_CSLIDE)
        x[VX] -= ed->aux[AUX_DIR] * mu_of(em) * (x[VY] - vy);
}

/* The impact of the corners c (n of them) at the ground: the two-phase impulse, plastic when
 * the approach is slower than rest_speed (the Zeno cut, header comment). The corners in
 * `held` (bit i: corner i) are held on the ground by the contact mode before the impact, their
 * normal velocity 0 but for drift: not restituted, whatever the sign of that drift (a corner
 * sliding when another lands: restituting its compression impulse or not by the sign of
 * 1e-12 m/s would make the impact a step function of the state). */
static void impact(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                   const int *c, int n, int held)
{
    rs_contact_point_t pts[NCORNERS];
    int restitute[NCORNERS];
    double pn[NCORNERS], before[NX], vin = 0.0, vtol = speed_tol(em, x);
    for (int i = 0; i < NX; i++)
        before[i] = x[i];
    for (int k = 0; k < n; k++) {
        double vn = normal_speed(em, x, c[k]);
        rows(em, x, c[k], &pts[k]);
        pts[k].vn_min = 0.0;
        restitute[k] = vn < -vtol && !(held >> c[k] & 1);
        vin = fmin(vin, vn);
    }
    /* a face landing flat without spin or slip: by symmetry no spin or slip after (the
     * solver's sweep order leaves ~1e-13 of asymmetry, which repeated bounces would grow) */
    double rxa, rxb, ryf;
    int mirror = n == 2 && x[W] == 0.0 && x[VX] == 0.0 &&
                 face_of(em, x, c[0], c[1], &rxa, &rxb, &ryf) &&
                 fabs(rxa + rxb) <= 1e-12 * size_of(em);
    double v[3] = {x[VX], x[VY], x[W]};
    two_phase_impulse(em, n, pts, restitute, -vin < em->p[P_REST] ? 0.0 : e_of(em), NULL, v,
                      pn);
    x[VX] = mirror ? 0.0 : v[0], x[VY] = v[1], x[W] = mirror ? 0.0 : v[2];
    ed->aux[AUX_HAD] = 1.0;
    rs_emit_event(ed, EV_IMPACT, t, vin, before, x, NX);
}

/* whether a corner is at the ground (within the gap tolerance) and closing */
static int closing_at_ground(const rs_entity_model_t *em, const double *x)
{
    double gtol = gap_tol(em), vtol = speed_tol(em, x);
    for (int i = 0; i < NCORNERS; i++)
        if (gap(em, x, i) <= gtol && normal_speed(em, x, i) < -vtol)
            return 1;
    return 0;
}

/* One round of resolve (below). `at_event`: at an event's jump, where the state is put back
 * onto the contact mode's constraints first, and the corners that mode holds on the ground
 * and those whose height guard fired (`landed`, bit i: corner i) are on it whatever their gap:
 * the flow keeps the constraints to its tolerance, so only a change of the state off them, as
 * the derivatives' differences make a coordinate at a time, moves them, and the jump is then
 * that of the state on them (the jump a smooth map, not one that a difference's sign decides
 * between an impact and none). */
static void resolve_once(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                         const double *u, int at_event, int landed)
{
    int was = ed->mode, cand[NCORNERS], n = 0, held = 0, a, b;
    double gtol = gap_tol(em);
    if (was == MODE_PIVOT || was == MODE_CSLIDE)
        held = 1 << (int)ed->aux[AUX_CORNER];
    else if (is_face(was))
        lowest_two(em, x, &a, &b), held = 1 << a | 1 << b;
    /* at an event; elsewhere where a corner mode's corner is below the ground (a start whose
     * state was moved off the constraint: put back onto it, its normal velocity with it) */
    if (held && (at_event || ((was == MODE_PIVOT || was == MODE_CSLIDE) &&
                              gap(em, x, (int)ed->aux[AUX_CORNER]) < -gtol)))
        project(em, ed, x);
    int on = at_event ? held | landed : 0;
    for (int pass = 0; pass < 4; pass++) {
        int c[NCORNERS], nc = 0, closing = 0;
        double vtol = speed_tol(em, x);
        for (int i = 0; i < NCORNERS; i++)
            if (gap(em, x, i) <= gtol || on >> i & 1) {
                c[nc++] = i;
                closing |= normal_speed(em, x, i) < -vtol;
            }
        if (!closing)
            break;
        impact(em, ed, t, x, c, nc, pass == 0 ? held : 0);
    }
    double vtol = speed_tol(em, x);
    for (int i = 0; i < NCORNERS; i++)
        if ((gap(em, x, i) <= gtol || on >> i & 1) && fabs(normal_speed(em, x, i)) <= vtol)
            cand[n++] = i;
    if (n > 2) { /* a degenerate brick: keep the two lowest */
        lowest_two(em, x, &cand[0], &cand[1]);
        n = 2;
    }
    int painleve = 0, pc = 0;
    choice_t ch = choose_mode(em, x, u, cand, n, &painleve, &pc);
    if (ch.margin < -1e-9) {
        ed->mode = MODE_FAILED;
        ed->aux[AUX_FAIL] = painleve ? FAIL_PAINLEVE : FAIL_NO_MODE;
        ed->aux[AUX_CORNER] = painleve ? pc : (n ? cand[0] : 0);
        rs_emit_event(ed, EV_INCONSISTENT, t, ed->aux[AUX_CORNER], x, x, NX);
        return;
    }
    int same_pivot = was == MODE_PIVOT && ch.mode == MODE_PIVOT && ed->aux[AUX_CORNER] == ch.corner;
    ed->mode = ch.mode;
    ed->aux[AUX_FAIL] = FAIL_NONE;
    ed->aux[AUX_CORNER] = ch.corner;
    ed->aux[AUX_DIR] = ch.dir;
    if (ch.mode == MODE_PIVOT && !same_pivot) { /* a pivot kept keeps its point */
        double rx, ry;
        corner(em, x, ch.corner, &rx, &ry);
        ed->aux[AUX_PIVOT_X] = x[X] + rx;
    }
    project(em, ed, x);
    for (int i = 0; i < NCORNERS; i++) /* a corner on the ground: guard its velocity first */
        ed->aux[AUX_S0 + i] = gap(em, x, i) <= gtol ? -1.0 : 1.0;
    if (ch.mode == MODE_CSLIDE) /* the sliding corner's slot: a slide from rest (below) */
        ed->aux[AUX_S0 + ch.corner] =
            fabs(tangent_speed(em, x, ch.corner)) <= speed_tol(em, x) ? -1.0 : 1.0;
    int contact = ch.mode != MODE_FLIGHT;
    if (contact)
        ed->aux[AUX_HAD] = 1.0;
    else if (ed->aux[AUX_IN] > 0.0 || ed->aux[AUX_HAD] > 0.0)
        ed->aux[AUX_SEP] = 1.0; /* left the ground (after an impact or a contact mode) */
    ed->aux[AUX_IN] = contact;
    if (ch.mode != was) {
        rs_emit_event(ed, EV_MODE, t, ch.mode, x, x, NX);
        if (is_face(ch.mode) && !is_face(was))
            rs_emit_event(ed, EV_REST, t, x[VX], x, x, NX);
        if ((was == MODE_SLIDING || was == MODE_CSLIDE) &&
            (ch.mode == MODE_STUCK || ch.mode == MODE_PIVOT))
            rs_emit_event(ed, EV_STOP, t, x[X], x, x, NX);
    }
}

/* After an event (or a reset, new commands, new parameters): resolve the impacts of the
 * corners closing at the ground, then choose the contact mode the acceleration-level
 * complementarity problem allows, project onto it and arm the guards. The projection moves
 * the free corners too (by the constraints' drift, within the gap tolerance): one it brings to
 * the ground while it closes meets the ground now (another round), rather than being left
 * with a velocity guard already below 0, which would never fire. */
static void resolve(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                    const double *u, int at_event, int landed)
{
    resolve_once(em, ed, t, x, u, at_event, landed);
    for (int round = 1; round < 4 && ed->mode != MODE_FAILED && closing_at_ground(em, x); round++)
        resolve_once(em, ed, t, x, u, 0, 0);
}

static void set_slack(const rs_entity_model_t *em, rs_entity_data_t *ed, const double *x,
                      int keep);

static void set_sides(const rs_entity_model_t *em, rs_entity_data_t *ed, const double *x)
{
    for (int i = 0; i < NCORNERS; i++)
        ed->aux[AUX_S0 + i] = gap(em, x, i) < pad_of(em) ? -1.0 : 1.0;
}

/* the mode the state and contact_model call for (reset, new parameters) */
static void pick_mode(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                      const double *u)
{
    int model = model_of(em);
    ed->aux[AUX_IN] = 0.0;
    ed->aux[AUX_DIR] = 1.0;
    ed->aux[AUX_CORNER] = ed->aux[AUX_PIVOT_X] = ed->aux[AUX_FAIL] = 0.0;
    ed->aux[AUX_SLACK] = 0.0;
    for (int i = 0; i < NCORNERS; i++)
        ed->aux[AUX_S0 + i] = 1.0;
    if (model == RS_CONTACT_TIME_STEPPING) {
        ed->mode = MODE_TS;
    } else if (model == RS_CONTACT_COMPLIANT) {
        ed->mode = MODE_COMPLIANT;
        set_sides(em, ed, x);
        set_slack(em, ed, x, 0);
        for (int i = 0; i < NCORNERS; i++)
            ed->aux[AUX_IN] = fmax(ed->aux[AUX_IN], ed->aux[AUX_S0 + i] < 0.0);
    } else {
        ed->mode = MODE_FLIGHT;
        resolve(em, ed, t, x, u, 0, 0);
    }
}

/* ---- callbacks -------------------------------------------------------------------------- */

static int brick_nguards(const rs_entity_model_t *em)
{
    return model_of(em) == RS_CONTACT_COMPLIANT ? NGUARDS_COMPLIANT : NGUARDS;
}

static int brick_validate(const rs_entity_model_t *em, rs_status_t *st)
{
    double x[NX] = {em->p[P_X0], em->p[P_Y0], em->p[P_TH0], 0, 0, 0};
    if (model_of(em) != em->p[P_MODEL])
        return rs_fail(st, RS_EINVAL, "contact_model must be 0 (hybrid), 1 (time_stepping) or 2 "
                                      "(compliant), not %g", em->p[P_MODEL]);
    double k = rs_blend_harmonic(em->p[P_K], em->p[P_GK]);
    if (model_of(em) == RS_CONTACT_COMPLIANT && k / em->p[P_M] > BRICK_K_OVER_M_MAX)
        return rs_fail(st, RS_EINVAL,
                       "brick '%s': the compliant layer's stiffness %g N/m (blended) over the mass "
                       "%g kg is %g 1/s^2, above %g (a layer frequency the integrator cannot "
                       "resolve in a control step); lower the stiffness or raise the mass",
                       em->name, k, em->p[P_M], k / em->p[P_M], BRICK_K_OVER_M_MAX);
    if (model_of(em) == RS_CONTACT_COMPLIANT && mu_of(em) > BRICK_COMPLIANT_MU_MAX)
        return rs_fail(st, RS_EINVAL,
                       "brick '%s': under compliant contact the blended friction %g may not "
                       "exceed %g: above it a landing corner can jam the layer (the compliant "
                       "form of Painleve's paradox, the forces growing until the integrator "
                       "gives up; Genot & Brogliato 1999); lower the friction, or use "
                       "contact_model 0, which reports the paradox where it arises, or 1",
                       em->name, mu_of(em), BRICK_COMPLIANT_MU_MAX);
    double lo = lowest_corner(em, x);
    if (lo < -tol_of(em))
        return rs_fail(st, RS_EINVAL,
                       "the brick starts %.6g m below the ground (its lowest corner); raise y0 to "
                       "at least %.9g m",
                       -lo, em->p[P_Y0] - lo);
    return 0;
}

static void brick_init(const rs_entity_model_t *em, rs_entity_data_t *ed, double *x)
{
    const double *p = em->p, u[NU] = {0.0};
    x[X] = p[P_X0], x[Y] = p[P_Y0], x[TH] = p[P_TH0];
    x[VX] = p[P_VX0], x[VY] = p[P_VY0], x[W] = p[P_W0];
    ed->aux[AUX_HAD] = ed->aux[AUX_SEP] = ed->aux[AUX_PEN] = 0.0;
    pick_mode(em, ed, 0.0, x, u);
    ed->aux[AUX_VX0] = x[VX];
    ed->aux[AUX_VY0] = x[VY];
    ed->aux[AUX_HAD] = ed->aux[AUX_IN];
    ed->aux[AUX_SEP] = ed->aux[AUX_PEN] = 0.0;
}

/* compliant: the restitution of a linear spring-damper whose contact ends when its force
 * reaches zero (no pull), as a function of the damping ratio zeta (docs/brick.md):
 *   zeta < 1:  e = exp(-zeta (pi - 2 asin zeta) / sqrt(1 - zeta^2));
 *   zeta = 1:  e = exp(-2);
 *   zeta > 1:  e = -d'(t*) / v with d = v (e^{r1 t} - e^{r2 t}) / (r1 - r2), r = -zeta +- s,
 *              s = sqrt(zeta^2 - 1), and t* = ln((1 + 2 zeta r2) / (1 + 2 zeta r1)) / (2 s)
 *              where k d + c d' = 0 (unit natural frequency). */
static double restitution_of_zeta(double z)
{
    if (z <= 0.0)
        return 1.0;
    if (z < 1.0)
        return exp(-z * (M_PI - 2.0 * asin(z)) / sqrt(1.0 - z * z));
    if (z == 1.0)
        return exp(-2.0);
    double s = sqrt(z * z - 1.0), r1 = -(z - s), r2 = -(z + s);
    double ts = log((1.0 + 2.0 * z * r2) / (1.0 + 2.0 * z * r1)) / (2.0 * s);
    return -(r1 * exp(r1 * ts) - r2 * exp(r2 * ts)) / (2.0 * s);
}

#define ZETA_MAX 1e4
#define DASHPOT_RAMP 3e-3 /* of the padding (header comment) */

/* the damping ratio that gives restitution e (bisection: e(zeta) decreases) */
static double zeta_of_restitution(double e)
{
    double lo = 0.0, hi = ZETA_MAX;
    if (e >= 1.0)
        return 0.0;
    for (int k = 0; k < 200 && hi - lo > 1e-15 * hi; k++) {
        double mid = 0.5 * (lo + hi);
        if (restitution_of_zeta(mid) > e)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

enum { C_ZETA, NC_DERIVED };

static void brick_compile(rs_entity_model_t *em)
{
    /* at most critical damping: an overdamped layer's force at the touch (c v) is more than an
     * explicit method can start from, so restitution below exp(-2) ~ 0.135 acts as exp(-2) */
    em->c[C_ZETA] = fmin(1.0, zeta_of_restitution(e_of(em)));
}

/* compliant: the number of corners inside the padding */
static int corners_inside(const rs_entity_data_t *ed)
{
    int n = 0;
    for (int i = 0; i < NCORNERS; i++)
        n += ed->aux[AUX_S0 + i] < 0.0;
    return n;
}

/* compliant: corner i's spring-damper law in the layer, s = k d + c_i min(1, d / ramp) d'
 * (d its depth below the padding surface), with the damping c_i from restitution (header
 * comment) for the corner's effective mass along the normal: 1 / (1/m + rx^2/I) alone, m / n
 * for n corners inside together (a face). The dashpot engages over the first DASHPOT_RAMP of
 * the layer, so that the force does not jump to c v at the touch (an explicit method cannot
 * start from that). The layer's force is max(0, s); *q (may be NULL) gets
 * s / max(d, ramp) = k + c_i d' / max(d, ramp), which has the sign of s inside the layer
 * (d > 0) but, unlike s, does not vanish at the padding surface: the guard of the switch
 * s = 0, apart from the corner's own guard at the surface. The corner's offset in rx, ry. */
static double layer_law(const rs_entity_model_t *em, const double *x, int i, int n, double *q,
                        double *rx, double *ry)
{
    const double *p = em->p;
    double k = rs_blend_harmonic(p[P_K], p[P_GK]), c = rs_blend_harmonic(p[P_C], p[P_GC]);
    double m = p[P_M], pad = pad_of(em), ramp = DASHPOT_RAMP * pad + 1e-9 * size_of(em);
    corner(em, x, i, rx, ry);
    double mn = n > 1 ? m / n : 1.0 / (1.0 / m + *rx * *rx / inertia(em));
    double ci = c + 2.0 * em->c[C_ZETA] * sqrt(k * mn);
    double depth = pad - (x[Y] + *ry), rate = -(x[VY] + x[W] * *rx);
    if (q)
        *q = k + ci * rate / fmax(depth, ramp);
    return k * depth + ci * fmin(1.0, depth / ramp) * rate;
}

/* compliant: whether the layer guards (G_LAYER + i) are registered and in force */
static int layer_guarded(const rs_entity_model_t *em, const rs_entity_data_t *ed)
{
    return model_of(em) == RS_CONTACT_COMPLIANT && ed->mode == MODE_COMPLIANT;
}

/* compliant: mark each corner inside the padding pushing (s > 0) or slack (s <= 0) from its law
 * at x, but keep the marks of the corners in `keep` (bit i: a layer guard of corner i fired
 * here, the mark already switched; its s is 0 up to rounding) */
static void set_slack(const rs_entity_model_t *em, rs_entity_data_t *ed, const double *x,
                      int keep)
{
    int n = corners_inside(ed), slack = (int)ed->aux[AUX_SLACK] & keep;
    for (int i = 0; i < NCORNERS; i++) {
        double q, rx, ry;
        if (keep >> i & 1 || ed->aux[AUX_S0 + i] > 0.0)
            continue;
        layer_law(em, x, i, n, &q, &rx, &ry);
        if (!(q > 0.0))
            slack |= 1 << i;
    }
    ed->aux[AUX_SLACK] = slack;
}

/* compliant: the boundary layer's forces, summed over the corners inside. Max(0, s) is
 * integrated exactly: a corner marked pushing feels s, one marked slack none, and the guard
 * on s's sign (q) switches the mark, so the flow between events is smooth (the kink of the
 * clip, a step in the force's rate k d', is never inside an integration step). */
static void compliant_forces(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                             const double *x, double *f)
{
    const double *p = em->p;
    double mu = mu_of(em), rx, ry;
    int inside = corners_inside(ed), slack = (int)ed->aux[AUX_SLACK];
    f[0] = f[1] = f[2] = 0.0;
    for (int i = 0; i < NCORNERS; i++) {
        if (ed->aux[AUX_S0 + i] > 0.0 || slack >> i & 1)
            continue;
        double fn = layer_law(em, x, i, inside, NULL, &rx, &ry);
        double vt = x[VX] - x[W] * ry;
        double ft = -mu * fn * fmax(-1.0, fmin(1.0, vt / p[P_SLIP]));
        f[0] += ft;
        f[1] += fn;
        f[2] += rx * fn - ry * ft;
    }
}

static void brick_derivs(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                         const double *x, const double *u, double *xdot)
{
    (void)t;
    const double *p = em->p;
    accel_t a;
    for (int i = 0; i < NX; i++)
        xdot[i] = 0.0;
    switch (ed->mode) {
    case MODE_FLIGHT:
        xdot[X] = x[VX], xdot[Y] = x[VY], xdot[TH] = x[W];
        xdot[VX] = u[U_PUSH] / p[P_M];
        xdot[VY] = -p[P_G];
        break;
    case MODE_PIVOT:
    case MODE_CSLIDE: /* Newton-Euler with the contact forces of the mode */
        mode_accel(em, ed, x, u, &a);
        xdot[X] = x[VX], xdot[Y] = x[VY], xdot[TH] = x[W];
        xdot[VX] = a.ax, xdot[VY] = a.ay, xdot[W] = a.al;
        break;
    case MODE_SLIDING: /* Coulomb: the normal force is m g on the flat brick */
        xdot[X] = x[VX];
        xdot[VX] = u[U_PUSH] / p[P_M] - ed->aux[AUX_DIR] * mu_of(em) * p[P_G];
        break;
    case MODE_COMPLIANT: {
        double f[3];
        compliant_forces(em, ed, x, f);
        xdot[X] = x[VX], xdot[Y] = x[VY], xdot[TH] = x[W];
        xdot[VX] = (f[0] + u[U_PUSH]) / p[P_M];
        xdot[VY] = f[1] / p[P_M] - p[P_G];
        xdot[W] = f[2] / inertia(em);
        break;
    }
    default: /* stuck; inconsistent (held); time_stepping (advanced by brick_advance) */
        break;
    }
}

/* Values with their partials along (theta, omega, push): forward-mode differentiation of the
 * corner contacts' accelerations (accel_pivot, accel_corner_slide, accel_from_forces). */
typedef struct d3 {
    double v, d[3];
} d3_t;

static d3_t d3_lin(double k0, d3_t a, double ka, d3_t b, double kb) /* k0 + ka a + kb b */
{
    d3_t r = {k0 + ka * a.v + kb * b.v, {0}};
    for (int i = 0; i < 3; i++)
        r.d[i] = ka * a.d[i] + kb * b.d[i];
    return r;
}

static d3_t d3_mul(d3_t a, d3_t b)
{
    d3_t r = {a.v * b.v, {0}};
    for (int i = 0; i < 3; i++)
        r.d[i] = a.d[i] * b.v + a.v * b.d[i];
    return r;
}

static d3_t d3_div(d3_t a, d3_t b)
{
    d3_t r = {a.v / b.v, {0}};
    for (int i = 0; i < 3; i++)
        r.d[i] = (a.d[i] - r.v * b.d[i]) / b.v;
    return r;
}

/* The corner contact modes' accelerations (ax, ay, alpha) and their partials: corner k at
 * (rx, ry), d/dtheta (rx, ry) = (-ry, rx); pivoting, the Delassus system of accel_pivot; sliding,
 * accel_corner_slide's lam = (g + w^2 ry) / A. */
static void corner_accel_partials(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                                  const double *x, const double *u, d3_t out[3])
{
    double rx0, ry0, m = em->p[P_M], I = inertia(em), g = em->p[P_G];
    corner(em, x, (int)ed->aux[AUX_CORNER], &rx0, &ry0);
    d3_t zero = {0, {0}}, rx = {rx0, {-ry0, 0, 0}}, ry = {ry0, {rx0, 0, 0}};
    d3_t w = {x[W], {0, 1, 0}}, push = {u[U_PUSH], {0, 0, 1}};
    d3_t w2 = d3_mul(w, w), lam, ft;
    if (ed->mode == MODE_PIVOT) {
        d3_t a11 = d3_lin(1.0 / m, d3_mul(rx, rx), 1.0 / I, zero, 0);
        d3_t a12 = d3_lin(0.0, d3_mul(rx, ry), -1.0 / I, zero, 0);
        d3_t a22 = d3_lin(1.0 / m, d3_mul(ry, ry), 1.0 / I, zero, 0);
        d3_t b1 = d3_lin(g, d3_mul(w2, ry), 1.0, zero, 0);
        d3_t b2 = d3_lin(0.0, d3_mul(w2, rx), 1.0, push, -1.0 / m);
        d3_t det = d3_lin(0.0, d3_mul(a11, a22), 1.0, d3_mul(a12, a12), -1.0);
        lam = d3_div(d3_lin(0.0, d3_mul(b1, a22), 1.0, d3_mul(a12, b2), -1.0), det);
        ft = d3_div(d3_lin(0.0, d3_mul(a11, b2), 1.0, d3_mul(a12, b1), -1.0), det);
    } else {
        double mus = mu_of(em) * ed->aux[AUX_DIR];
        d3_t A = d3_lin(1.0 / m, d3_mul(rx, rx), 1.0 / I, d3_mul(rx, ry), mus / I);
        lam = A.v > 0.0 ? d3_div(d3_lin(g, d3_mul(w2, ry), 1.0, zero, 0), A) : zero;
        ft = d3_lin(0.0, lam, -mus, zero, 0);
    }
    out[0] = d3_lin(0.0, push, 1.0 / m, ft, 1.0 / m);
    out[1] = d3_lin(-g, lam, 1.0 / m, zero, 0);
    out[2] = d3_lin(0.0, d3_mul(rx, lam), 1.0 / I, d3_mul(ry, ft), -1.0 / I);
}

/* rs_robot_t.jacobian: flight (x'' = u / m, y'' = -g), sliding flat (x'' = u / m - dir mu g),
 * stuck and failed (held: 0) in closed form, with the mass and gravity among the parameters;
 * pivoting and sliding on a corner by forward-mode partials (corner_accel_partials), their
 * parameters differenced. Compliant and time_stepping: none (differenced). */
static int brick_jacobian(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                          const double *x, const double *u, int nq, const int *slot, double *f,
                          double *J, int ld, unsigned char *known)
{
    int mode = ed->mode;
    if (mode == MODE_TS || mode == MODE_COMPLIANT)
        return -1;
    brick_derivs(em, ed, t, x, u, f);
    const double *p = em->p;
    for (int i = 0; i < NX; i++)
        for (int c = 0; c < NX + NU + nq; c++)
            J[i * ld + c] = 0.0;
    if (mode == MODE_STUCK || mode == MODE_FAILED) {
        for (int k = 0; k < nq; k++)
            known[k] = 1;
        return 0;
    }
    J[X * ld + VX] = 1.0;
    if (mode == MODE_PIVOT || mode == MODE_CSLIDE) {
        d3_t acc[3];
        corner_accel_partials(em, ed, x, u, acc);
        static const int rows[3] = {VX, VY, W}, cols[3] = {TH, W, NX + U_PUSH};
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++)
                J[rows[r] * ld + cols[c]] = acc[r].d[c];
        J[Y * ld + VY] = J[TH * ld + W] = 1.0;
        return 0;
    }
    for (int k = 0; k < nq; k++)
        known[k] = slot[k] == P_M || slot[k] == P_G;
    J[VX * ld + NX + U_PUSH] = 1.0 / p[P_M];
    for (int k = 0; k < nq; k++) {
        if (slot[k] == P_M)
            J[VX * ld + NX + NU + k] = -u[U_PUSH] / (p[P_M] * p[P_M]);
        else if (slot[k] == P_G && mode == MODE_SLIDING)
            J[VX * ld + NX + NU + k] = -ed->aux[AUX_DIR] * mu_of(em);
        else if (slot[k] == P_G)
            J[VY * ld + NX + NU + k] = -1.0;
    }
    if (mode == MODE_FLIGHT)
        J[Y * ld + VY] = J[TH * ld + W] = 1.0;
    return 0;
}

/* rs_robot_t.rejoin: the brick sliding on a face or a corner, lifted off the ground at a
 * control step's start by a change of y (or of theta, to the side that raises the contact
 * corner). It falls back within a time of the order of the root of the lift and slides on. To
 * first order the lift changes what follows by the contact impulse it misses in the air and
 * meets at the landings (bounces included): P(t) = int (lambda_lifted - lambda) dt along one
 * direction, friction -s mu P with it (s the slide's direction, kept while the slide goes on),
 * so vx, vy and omega change by (-s mu / m, 1 / m, c / I) per unit of it, c = rx + s mu ry the
 * corner's torque arm. The gap closes from the lift to 0 with the normal velocity
 * A P - omega ry dtheta (A = 1/m + rx c / I, as in accel_corner_slide), so
 * Q = int P dt = -lift / A, which moves the position by Q times that direction. P is of the
 * order of the root of the lift within a time of that order, so the arm's drift over that time,
 * c' = (s mu rx - ry) omega, adds -c' Q / I to omega; back on the ground the normal velocity's
 * 0 gives P_end: A P_end = omega ry dtheta + rx c' Q / I. A face (omega = 0, both corners):
 * x moves by s mu per unit of y. Not where the slide starts from rest (the landing can stop
 * it) or the free corner does not fall back. */
static int brick_rejoin(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                        const double *x, const double *u, int i, int side, double *dx)
{
    double mu = mu_of(em), s = ed->aux[AUX_DIR], m = em->p[P_M], I = inertia(em), rx, ry;
    int k = (int)ed->aux[AUX_CORNER];
    for (int r = 0; r < NX; r++)
        dx[r] = 0.0;
    if (ed->mode == MODE_SLIDING) {
        if (i != Y || side < 0 || !(s * x[VX] > speed_tol(em, x)))
            return 0;
        dx[X] = s * mu;
        return 1;
    }
    if (ed->mode != MODE_CSLIDE || (i != Y && i != TH) || ed->aux[AUX_S0 + k] < 0.0)
        return 0;
    corner(em, x, k, &rx, &ry);
    double lift = i == Y ? 1.0 : rx, c = rx + s * mu * ry, A = 1.0 / m + rx * c / I;
    accel_t a;
    accel_free(em, u, &a);
    if (!(side * lift > 0.0) || !(A > 0.0) || !(normal_accel(&a, x, rx, ry) < 0.0) ||
        !(s * tangent_speed(em, x, k) > speed_tol(em, x)))
        return 0;
    double q = -lift / A, c_rate = (s * mu * rx - ry) * x[W];
    dx[X] = -s * mu * q / m;
    dx[Y] = (i == Y) + q / m;
    dx[TH] = (i == TH) + c * q / I;
    double p_end = (x[W] * ry * dx[TH] + rx * c_rate * q / I) / A;
    dx[VX] = -s * mu * p_end / m;
    dx[VY] = p_end / m;
    dx[W] = (c * p_end - c_rate * q) / I;
    return 1;
}

static void brick_guards(const rs_entity_model_t *em, const rs_entity_data_t *ed, double t,
                         const double *x, const double *u, double *g)
{
    (void)t;
    accel_t a;
    int k = (int)ed->aux[AUX_CORNER], ng = brick_nguards(em);
    for (int i = 0; i < ng; i++)
        g[i] = 1.0;
    switch (ed->mode) {
    case MODE_COMPLIANT: {
        int n = corners_inside(ed), slack = (int)ed->aux[AUX_SLACK];
        for (int i = 0; i < NCORNERS; i++) {
            double q, rx, ry;
            g[i] = ed->aux[AUX_S0 + i] * (gap(em, x, i) - pad_of(em));
            if (!layer_guarded(em, ed) || ed->aux[AUX_S0 + i] > 0.0)
                continue;
            layer_law(em, x, i, n, &q, &rx, &ry);
            g[G_LAYER + i] = slack >> i & 1 ? -q : q; /* pushing: to s = 0; slack: to s > 0 */
        }
        break;
    }
    case MODE_PIVOT:
    case MODE_CSLIDE:
        mode_accel(em, ed, x, u, &a);
        g[G_LAM_A] = a.lam[0]; /* lift-off */
        if (ed->mode == MODE_PIVOT) {
            g[G_FRICTION] = mu_of(em) * a.lam[0] - fabs(a.ft); /* slip */
        } else if (ed->aux[AUX_S0 + k] < 0.0) { /* a slide from rest: until it decelerates */
            double rx, ry;
            corner(em, x, k, &rx, &ry);
            g[G_FRICTION] = ed->aux[AUX_DIR] * tangent_accel(&a, x, rx, ry);
        } else { /* stop or reversal */
            g[G_FRICTION] = ed->aux[AUX_DIR] * tangent_speed(em, x, k);
        }
        __attribute__((fallthrough)); /* and the free corners */
    case MODE_FLIGHT:
        for (int i = 0; i < NCORNERS; i++) {
            if (ed->mode != MODE_FLIGHT && i == k)
                continue;
            g[i] = ed->aux[AUX_S0 + i] > 0.0 ? gap(em, x, i) : normal_speed(em, x, i);
        }
        break;
    case MODE_SLIDING:
    case MODE_STUCK:
        face_accel(em, ed, x, u, &a);
        g[G_LAM_A] = a.lam[0], g[G_LAM_B] = a.lam[1]; /* tipping */
        g[G_FRICTION] = ed->mode == MODE_STUCK ? mu_of(em) * em->p[P_M] * em->p[P_G] - fabs(a.ft)
                                               : ed->aux[AUX_DIR] * x[VX];
        break;
    default: break;
    }
}

static void brick_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                       const double *u, const int *fired)
{
    if (is_hybrid_mode(ed->mode)) {
        /* a corner's apex in the air (its velocity guard): guard its height from now on */
        int other = 0, landed = 0;
        for (int i = 0; i < NGUARDS; i++) {
            if (!fired[i])
                continue;
            int k = (int)ed->aux[AUX_CORNER];
            if (i < NCORNERS && ed->aux[AUX_S0 + i] < 0.0 && gap(em, x, i) > gap_tol(em))
                ed->aux[AUX_S0 + i] = 1.0;
            else if (i == G_FRICTION && ed->mode == MODE_CSLIDE && ed->aux[AUX_S0 + k] < 0.0 &&
                     ed->aux[AUX_DIR] * tangent_speed(em, x, k) > speed_tol(em, x))
                ed->aux[AUX_S0 + k] = 1.0; /* a slide from rest decelerates: guard its speed */
            else
                other = 1, landed |= i < NCORNERS && ed->aux[AUX_S0 + i] > 0.0 ? 1 << i : 0;
        }
        if (other)
            resolve(em, ed, t, x, u, 1, landed);
        return;
    }
    if (ed->mode == MODE_COMPLIANT) {
        int was_in = 0, now_in = 0, crossed = 0, switched = 0;
        for (int i = 0; i < NCORNERS; i++) {
            was_in |= ed->aux[AUX_S0 + i] < 0.0;
            if (fired[i])
                ed->aux[AUX_S0 + i] = -ed->aux[AUX_S0 + i], crossed = 1;
            now_in |= ed->aux[AUX_S0 + i] < 0.0;
            if (layer_guarded(em, ed) && fired[G_LAYER + i])
                switched |= 1 << i; /* s = 0: the layer starts or stops pushing */
        }
        ed->aux[AUX_SLACK] = (int)ed->aux[AUX_SLACK] ^ switched;
        if (crossed) /* a corner entered or left: the others' damping changed with their count */
            set_slack(em, ed, x, switched);
        if (!was_in && now_in) {
            ed->aux[AUX_HAD] = 1.0;
            rs_emit_event(ed, EV_TOUCH, t, x[VY], x, x, NX);
        } else if (was_in && !now_in) {
            ed->aux[AUX_SEP] = 1.0;
            rs_emit_event(ed, EV_SEPARATE, t, x[VY], x, x, NX);
        }
        ed->aux[AUX_IN] = now_in;
    }
}

static void brick_settle(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                         const double *u)
{
    int model = model_of(em);
    int family = ed->mode == MODE_TS ? RS_CONTACT_TIME_STEPPING
                 : ed->mode == MODE_COMPLIANT ? RS_CONTACT_COMPLIANT
                                              : RS_CONTACT_HYBRID;
    if (family != model)
        pick_mode(em, ed, t, x, u);
    else if (family == RS_CONTACT_HYBRID)
        resolve(em, ed, t, x, u, 0, 0); /* new commands may tip, slide or free it */
    else if (family == RS_CONTACT_COMPLIANT) {
        /* a new padding or shape may put a corner on the other side of the layer's surface
         * than its mark (beyond the root finder's tolerance, which an event leaves the marks
         * within): the mark follows, so that its guard starts armed and the layer pushes
         * only where the corner is in it */
        int flipped = 0;
        for (int i = 0; i < NCORNERS; i++) {
            double off = gap(em, x, i) - pad_of(em);
            if (fabs(off) > gap_tol(em) && (off < 0.0) != (ed->aux[AUX_S0 + i] < 0.0)) {
                ed->aux[AUX_S0 + i] = off < 0.0 ? -1.0 : 1.0;
                flipped |= 1 << i;
            }
        }
        if (flipped) {
            ed->aux[AUX_SLACK] = (double)((int)ed->aux[AUX_SLACK] & ~flipped);
            set_slack(em, ed, x, ~flipped & ((1 << NCORNERS) - 1));
            ed->aux[AUX_IN] = corners_inside(ed) > 0;
        }
    }
}

static void brick_step_begin(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                             const double *x, double dt)
{
    (void)em, (void)t, (void)dt;
    ed->aux[AUX_VX0] = x[VX];
    ed->aux[AUX_VY0] = x[VY];
    ed->aux[AUX_HAD] = ed->aux[AUX_IN];
    ed->aux[AUX_SEP] = ed->aux[AUX_PEN] = 0.0;
}

/* time_stepping: the contact impulse of one step of length h from velocities v_free. The
 * contact set grows until no corner outside it would end the step below the ground
 * (phi_k + h vn+ >= 0 for every corner), so the choice does not rest on the pre-solve
 * velocities alone. */
static int ts_impulse(const rs_entity_model_t *em, const double *x, const double *u, double h,
                      const double *v_free, double *v)
{
    /* the step's energy E(k+1) - E(k) - (push work) is KE(v+ + s) - KE(v_k) - KE(s) with
     * s = h (-P/m, g, 0) (positions q + h v+): the impulse is measured in KE(. + s) */
    double shift[3] = {-h * u[U_PUSH] / em->p[P_M], h * em->p[P_G], 0.0};
    /* a bounce slower than two steps of gravity would land within a few steps: plastic */
    double v_rest = fmax(em->p[P_REST], 2.0 * em->p[P_G] * h);
    rs_contact_point_t pts[NCORNERS];
    int restitute[NCORNERS], in_set[NCORNERS] = {0}, nc = 0;
    double pn[NCORNERS], rx, ry, e = e_of(em);
    for (int i = 0; i < NCORNERS; i++) {
        corner(em, x, i, &rx, &ry);
        double phi = x[Y] + ry;
        if (phi + h * (v_free[1] + v_free[2] * rx) <= 0.0)
            in_set[i] = 1;
    }
    for (int round = 0; round < NCORNERS + 1; round++) {
        nc = 0;
        for (int i = 0; i < NCORNERS; i++) {
            if (!in_set[i])
                continue;
            corner(em, x, i, &rx, &ry);
            double phi = x[Y] + ry, vn = x[VY] + x[W] * rx;
            rows(em, x, i, &pts[nc]);
            /* restitution for a corner closing faster than v_rest before the step: its
             * impact happens in this step, compressed to vn+ = 0 and restituted from there (a
             * bounce up to h |vn| above the ground: time stepping does not find the
             * exact impact time); other corners end the step on or above the ground
             * (phi_k + h vn+ >= 0; a corner the linearisation left below it by
             * R (h omega)^2 / 2 at most comes back up within the step) */
            restitute[nc] = e > 0.0 && vn < -v_rest;
            pts[nc].vn_min = restitute[nc] ? fmax(0.0, -phi / h) : -phi / h;
            nc++;
        }
        v[0] = v_free[0], v[1] = v_free[1], v[2] = v_free[2];
        if (nc)
            two_phase_impulse(em, nc, pts, restitute, e, shift, v, pn);
        int grew = 0;
        for (int i = 0; i < NCORNERS; i++) {
            corner(em, x, i, &rx, &ry);
            if (!in_set[i] && x[Y] + ry + h * (v[1] + v[2] * rx) < 0.0)
                in_set[i] = grew = 1;
        }
        if (!grew)
            break;
    }
    int in = 0;
    for (int c = 0; c < nc; c++)
        in |= pn[c] > 0.0;
    return in;
}

/* time_stepping: the velocity-level step, repeated over the control step; hybrid
 * contact modes: the state put back on the mode's constraints (integration drift) */
static void brick_advance(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                          const double *u, double dt)
{
    if (is_hybrid_mode(ed->mode) && ed->mode != MODE_FLIGHT && ed->mode != MODE_FAILED) {
        project(em, ed, x);
        /* the projection moves the free corners too: one it brings to the ground while it
         * closes meets it now (its height guard would start below 0 and never fire) */
        if (closing_at_ground(em, x))
            resolve(em, ed, t, x, u, 0, 0);
        return;
    }
    if (ed->mode != MODE_TS || !(dt > 0.0))
        return;
    const double *p = em->p;
    double h, n = rs_ts_substeps(dt, p[P_TS_STEP], &h);
    for (double k = 0.0; k < n; k += 1.0) {
        double v_free[3], v[3];
        v_free[0] = x[VX] + h * u[U_PUSH] / p[P_M], v_free[1] = x[VY] - h * p[P_G], v_free[2] = x[W];
        int in = ts_impulse(em, x, u, h, v_free, v);
        x[VX] = v[0], x[VY] = v[1], x[W] = v[2];
        x[X] += h * v[0], x[Y] += h * v[1], x[TH] += h * v[2]; /* backward Euler positions */
        double tk = t + (k + 1.0) * h;
        if (in && !(ed->aux[AUX_IN] > 0.0))
            rs_emit_event(ed, EV_TOUCH, tk, x[VY], x, x, NX);
        if (!in && ed->aux[AUX_IN] > 0.0) {
            ed->aux[AUX_SEP] = 1.0;
            rs_emit_event(ed, EV_SEPARATE, tk, x[VY], x, x, NX);
        }
        ed->aux[AUX_IN] = in;
        if (in)
            ed->aux[AUX_HAD] = 1.0;
        if (lowest_corner(em, x) < -tol_of(em))
            ed->aux[AUX_PEN] = 1.0;
    }
}

static void brick_sense(const rs_entity_model_t *em, rs_entity_data_t *ed, double t,
                        const double *x, const double *u, double dt)
{
    (void)t;
    const double *p = em->p;
    double surface = ed->mode == MODE_COMPLIANT ? pad_of(em) : 0.0;
    double lo = lowest_corner(em, x), sx = 0.0;
    int in = ed->aux[AUX_IN] > 0.0, n = 0;
    if (ed->mode == MODE_COMPLIANT && lo < 0.0)
        ed->aux[AUX_PEN] = 1.0; /* through the padding into the brick's own geometry */
    if (is_hybrid_mode(ed->mode) && lo < -gap_tol(em))
        ed->aux[AUX_PEN] = 1.0;
    for (int i = 0; i < NCORNERS; i++) {
        double rx, ry;
        corner(em, x, i, &rx, &ry);
        if (in && x[Y] + ry <= surface + 1e-9 * (1.0 + p[P_W] + p[P_H]))
            sx += x[X] + rx, n++;
    }
    /* momentum balance: the mean contact force over the step (gravity the only other force) */
    ed->s[S_FX] = dt > 0.0 ? p[P_M] * (x[VX] - ed->aux[AUX_VX0]) / dt - u[U_PUSH] : 0.0;
    ed->s[S_FY] = dt > 0.0 ? p[P_M] * ((x[VY] - ed->aux[AUX_VY0]) / dt + p[P_G]) : 0.0;
    ed->s[S_IN] = in;
    ed->s[S_HAD] = ed->aux[AUX_HAD] > 0.0 || in;
    ed->s[S_SEP] = ed->aux[AUX_SEP];
    ed->s[S_PEN] = ed->aux[AUX_PEN];
    ed->s[S_CX] = n ? sx / n : x[X];
    ed->s[S_DEPTH] = fmax(0.0, surface - lo);
}

/* the (brick, ground) pair for State.contacts, from the sensors of the last step */
static int brick_contacts(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                          const double *x, rs_contact_info_t *out, int max)
{
    (void)x;
    if (max < 1 || em->p[P_FEEDBACK] == 0.0)
        return 0;
    const double *s = ed->s;
    *out = (rs_contact_info_t){
        .other = "ground",
        .in_contact = s[S_IN] != 0.0,
        .had_contact = s[S_HAD] != 0.0,
        .had_separation = s[S_SEP] != 0.0,
        .had_penetration = s[S_PEN] != 0.0,
        .point = {s[S_CX], ed->mode == MODE_COMPLIANT ? pad_of(em) - s[S_DEPTH] : -s[S_DEPTH]},
        .normal = {0.0, 1.0},
        .mean_force = {s[S_FX], s[S_FY]},
    };
    return 1;
}

/* Whether the brick can go on: not after an inconsistent contact (Painleve), nor with a
 * corner below the ground beyond the hybrid tolerance (a lost impact), nor non-finite. */
static int brick_failure(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                         const double *x, rs_status_t *st)
{
    for (int i = 0; i < NX; i++)
        if (!isfinite(x[i]))
            return rs_fail(st, RS_ESIMFAIL, "brick '%s': state %s is not finite", em->name,
                           brick_state[i].name);
    if (ed->mode == MODE_FAILED) {
        int k = (int)ed->aux[AUX_CORNER];
        double rx, ry, I = inertia(em), mu = mu_of(em);
        corner(em, x, k, &rx, &ry);
        if (ed->aux[AUX_FAIL] == FAIL_PAINLEVE)
            return rs_fail(st, RS_ESIMFAIL,
                           "brick '%s': Painleve paradox at corner %d (rx %.6g, ry %.6g m): with "
                           "friction %.6g no contact force and no lift-off satisfy Coulomb's law "
                           "(1/m + (rx^2 - mu |rx ry|)/I = %.6g <= 0, possible for friction above "
                           "4/3); lower the friction or use contact_model 1 or 2",
                           em->name, k, rx, ry, mu,
                           1.0 / em->p[P_M] + (rx * rx - mu * fabs(rx * ry)) / I);
        return rs_fail(st, RS_ESIMFAIL,
                       "brick '%s': no contact mode at corner %d satisfies the contact laws at "
                       "the acceleration level",
                       em->name, k);
    }
    double lo = lowest_corner(em, x);
    if (is_hybrid_mode(ed->mode) && lo < -pen_tol(em))
        return rs_fail(st, RS_ESIMFAIL,
                       "brick '%s': a corner is %.3g m below the ground in mode %s, beyond the "
                       "hybrid tolerance %.3g m (an impact was lost)",
                       em->name, -lo, brick_modes[ed->mode], pen_tol(em));
    return 0;
}

/* Whether the live state fits new parameters (rs_robot_t.admissible; docs/physics-edges.md):
 * under a rigid formulation no corner deeper below the ground than the hybrid tolerance (or
 * than it already was under the same formulation); under compliant none deeper below the
 * ground than before, and the layer's springs, sum over the corners of 1/2 k d^2 (d the depth
 * below the padding surface), holding no more energy than under the old parameters (none
 * under a rigid formulation): a change that stored some would release it as motion (a resting
 * brick switched to compliant jumps; a thicker padding throws it). */
static int brick_admissible(const rs_entity_model_t *em, const rs_entity_model_t *was,
                            const rs_entity_data_t *ed, const double *x, rs_status_t *st)
{
    (void)ed;
    int model = model_of(em), same = model_of(was) == model;
    double below = -lowest_corner(em, x), before = same ? fmax(0.0, -lowest_corner(was, x)) : 0.0;
    if (below > before + pen_tol(em))
        return rs_fail(st, RS_EPRECOND,
                       "brick '%s': under the new parameters its lowest corner would be %.6g m "
                       "below the ground (y = %.9g m, theta = %.9g rad); Reset it or SetState "
                       "it clear of the ground (y at least %.9g m) first",
                       em->name, below, x[Y], x[TH], x[Y] + below);
    if (model != RS_CONTACT_COMPLIANT)
        return 0;
    double k = rs_blend_harmonic(em->p[P_K], em->p[P_GK]), e_new = 0.0, deepest = 0.0;
    double k_was = rs_blend_harmonic(was->p[P_K], was->p[P_GK]), e_was = 0.0;
    for (int i = 0; i < NCORNERS; i++) {
        double d = pad_of(em) - gap(em, x, i), d_was = pad_of(was) - gap(was, x, i);
        if (d > 0.0)
            e_new += 0.5 * k * d * d;
        if (same && d_was > 0.0)
            e_was += 0.5 * k_was * d_was * d_was;
        deepest = fmax(deepest, d);
    }
    if (e_new > e_was * (1.0 + 1e-9) + 1e-12)
        return rs_fail(st, RS_EPRECOND,
                       "brick '%s': under the new parameters a corner would be %.6g m deep in the "
                       "%.6g m compliant layer, whose springs would hold %.6g J (%.6g J before) "
                       "and release it as motion; Reset it or SetState it clear of the layer "
                       "(y at least %.9g m) first, or change the padding or stiffness while it "
                       "is clear of the ground",
                       em->name, deepest, pad_of(em), e_new, e_was, x[Y] + deepest);
    return 0;
}

/* the parameters that choose (rs_robot_t.choices) */
static const char *const brick_choices[] = {"contact_model", "contact_feedback", NULL};

const rs_robot_t rs_robot_brick = {
    .kind = "brick",
    .doc = "planar rigid brick falling onto the ground, three contact formulations",
    .nx = NX,
    .state = brick_state,
    .nu = NU,
    .actuators = brick_actuators,
    .ns = NS,
    .sensors = brick_sensors,
    .np = NP,
    .params = brick_params,
    .nmodes = NMODES,
    .mode_names = brick_modes,
    .choices = brick_choices,
    .nevent_kinds = NEVENTS,
    .event_names = brick_events,
    .naux = NAUX,
    .aux_vars = brick_aux,
    .nguards = brick_nguards,
    .validate = brick_validate,
    .compile = brick_compile,
    .init = brick_init,
    .derivs = brick_derivs,
    .jacobian = brick_jacobian,
    .rejoin = brick_rejoin,
    .guards = brick_guards,
    .jump = brick_jump,
    .settle = brick_settle,
    .step_begin = brick_step_begin,
    .advance = brick_advance,
    .contacts = brick_contacts,
    .sense = brick_sense,
    .failure = brick_failure,
    .admissible = brick_admissible,
};
