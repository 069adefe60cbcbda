/* The two planar arms' shared actuator law, hybrid joint solver and closed-form kinematics;
 * arm_common.h documents each function. */
#include "arm_common.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* rad: the sensitivity's difference step for an angle (FD_REL in sensitivity.c): a boundary of
 * a map nearer the point than this is on it (arm_excursion) */
#define ANGLE_STEP 6e-6

const rs_aux_desc_t arm_aux_vars[ARM_NAUX] = {
    {"dir1", RS_AUX_INTEGER, -1.0, 1.0, 0, 0, 0, "joint 1 slip direction (0: no dry friction)"},
    {"dir2", RS_AUX_INTEGER, -1.0, 1.0, 0, 0, 0, "joint 2 slip direction"},
    {"act1", RS_AUX_INTEGER, 0.0, 1.0, 0, 0, 0, "actuator mode joint 1's integral belongs to"},
    {"act2", RS_AUX_INTEGER, 0.0, 1.0, 0, 0, 0, "actuator mode joint 2's integral belongs to"},
    {"sat1", RS_AUX_INTEGER, -1.0, 1.0, 0, 0, 0, "joint 1 torque saturation: -1, 0, +1"},
    {"sat2", RS_AUX_INTEGER, -1.0, 1.0, 0, 0, 0, "joint 2 torque saturation"},
};

/* ---- actuators ------------------------------------------------------------------------------- */

double arm_applied_torque(const rs_entity_model_t *em, const rs_entity_data_t *ed, int j, double u,
                          const double *x)
{
    double tau = arm_actuator_torque(em, ed, j, u, x), cap = em->p[ARM_P_TAU_MAX + j];
    return tau > cap ? cap : tau < -cap ? -cap : tau;
}

void arm_saturation_from_values(const rs_entity_model_t *em, rs_entity_data_t *ed, const double *x,
                                const double *u)
{
    for (int j = 0; j < 2; j++) {
        double raw = arm_raw_torque(em, j, u[j], x), cap = em->p[ARM_P_TAU_MAX + j];
        ed->aux[ARM_AUX_SAT1 + j] = raw > cap ? 1.0 : raw < -cap ? -1.0 : 0.0;
    }
}

void arm_saturation_guards(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                           const double *u, double *g)
{
    for (int j = 0; j < 2; j++) {
        double raw = arm_raw_torque(em, j, u[j], x), cap = em->p[ARM_P_TAU_MAX + j];
        double sat = ed->aux[ARM_AUX_SAT1 + j];
        g[2 * j] = sat > 0 ? raw - cap : sat < 0 ? -cap - raw : cap - raw;
        g[2 * j + 1] = sat == 0 ? raw + cap : 1.0;
    }
}

int arm_saturation_jump(rs_entity_data_t *ed, const int *fired)
{
    int any = 0;
    for (int j = 0; j < 2; j++) {
        double *sat = &ed->aux[ARM_AUX_SAT1 + j];
        if (fired[2 * j])
            *sat = *sat != 0 ? 0.0 : 1.0;
        else if (fired[2 * j + 1] && *sat == 0)
            *sat = -1.0;
        else
            continue;
        any = 1;
    }
    return any;
}

/* ---- joints: friction and stops -------------------------------------------------------------- */

void arm_joints_from(const rs_entity_model_t *em, arm_joints_t *jc)
{
    for (int j = 0; j < 2; j++) {
        jc->mu_D[j] = em->p[ARM_P_MU_D + j];
        jc->mu_V[j] = em->p[ARM_P_MU_V + j];
        jc->q_min[j] = em->p[ARM_P_THETA_MIN + j];
        jc->q_max[j] = em->p[ARM_P_THETA_MAX + j];
    }
    jc->limited = em->plen[ARM_PI_THETA_MIN] == 2;
}

int arm_joint_events(const rs_entity_model_t *em)
{
    return em->p[ARM_P_MU_D] > 0 || em->p[ARM_P_MU_D + 1] > 0 ||
           em->plen[ARM_PI_THETA_MIN] == 2;
}

int arm_held(int s) { return s != ARM_SLIP; }

int arm_holds(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x, int i)
{
    (void)x;
    if ((i != ARM_QD1 && i != ARM_QD2) || ed->mode < 0 || ed->mode >= ARM_JOINT_MODES)
        return 0; /* the parallel arm's stretched mode holds no joint */
    int j = i - ARM_QD1, s = j == 0 ? ed->mode % 4 : ed->mode / 4;
    return s == ARM_STICK ? em->p[ARM_P_MU_D + j] > 0.0 : s == ARM_MIN || s == ARM_MAX;
}

void arm_held_range(const arm_joints_t *jc, int j, int s, double *lo, double *hi)
{
    *lo = s == ARM_MAX ? -INFINITY : -jc->mu_D[j];
    *hi = s == ARM_MIN ? INFINITY : jc->mu_D[j];
}

void arm_accel(const double M[2][2], const double b[2], const arm_joints_t *jc, const int st[2],
               const double dir[2], const double qd[2], double qdd[2], double lam[2])
{
    double r[2];
    for (int j = 0; j < 2; j++)
        r[j] = b[j] - dir[j] * jc->mu_D[j] - jc->mu_V[j] * qd[j];
    lam[0] = lam[1] = 0.0;
    int h0 = arm_held(st[0]), h1 = arm_held(st[1]);
    if (!h0 && !h1) {
        arm_solve2(M, r, qdd);
    } else if (h0 && h1) {
        qdd[0] = qdd[1] = 0.0;
        lam[0] = -b[0];
        lam[1] = -b[1];
    } else {
        int j = h0 ? 0 : 1, k = 1 - j;
        qdd[j] = 0.0;
        qdd[k] = r[k] / M[k][k];
        lam[j] = M[j][k] * qdd[k] - b[j];
    }
}

void arm_guards(const rs_entity_model_t *em, const rs_entity_data_t *ed, const arm_joints_t *jc,
                const int st[2], const double dir[2], const double *x, const double *u,
                const double lam[2], double *g)
{
    arm_saturation_guards(em, ed, x, u, g + ARM_G_SAT);
    for (int j = 0; j < 2; j++) {
        double *gj = g + 5 * j;
        for (int i = 0; i < 5; i++)
            gj[i] = 1.0;
        if (arm_held(st[j])) {
            double lo, hi;
            arm_held_range(jc, j, st[j], &lo, &hi);
            if (isfinite(lo))
                gj[0] = lam[j] - lo;
            if (isfinite(hi))
                gj[1] = hi - lam[j];
            /* on a stop under dry friction, the load into it beyond the friction: nothing
             * happens to the joint held there, but one moved off the stop and stuck there (a
             * Step's derivative along its angle, arm_excursion) slides back onto it now, the
             * offset lost; arm_jump puts it back (the map's derivative) */
            if (jc->mu_D[j] > 0 && st[j] == ARM_MAX)
                gj[0] = lam[j] + jc->mu_D[j];
            else if (jc->mu_D[j] > 0 && st[j] == ARM_MIN)
                gj[1] = jc->mu_D[j] - lam[j];
        } else {
            if (jc->mu_D[j] > 0)
                gj[2] = dir[j] * x[ARM_QD1 + j];
            if (jc->limited) {
                gj[3] = x[ARM_Q1 + j] - jc->q_min[j];
                gj[4] = jc->q_max[j] - x[ARM_Q1 + j];
            }
        }
    }
}

int arm_resolve(const double M[2][2], const double b[2], const arm_joints_t *jc, const double *x,
                int st[2], double dir[2])
{
    int cst[2][3], n[2];
    double cdir[2][3];
    for (int j = 0; j < 2; j++) {
        double q = x[ARM_Q1 + j], qd = x[ARM_QD1 + j], mu = jc->mu_D[j];
        n[j] = 0;
        if (qd != 0.0) {
            cst[j][0] = ARM_SLIP;
            cdir[j][0] = mu > 0 ? (qd > 0 ? 1.0 : -1.0) : 0.0;
            n[j] = 1;
            continue;
        }
        int at_min = jc->limited && q <= jc->q_min[j];
        int at_max = jc->limited && !at_min && q >= jc->q_max[j];
        if (at_min || at_max || mu > 0) {
            cst[j][n[j]] = at_min ? ARM_MIN : at_max ? ARM_MAX : ARM_STICK;
            cdir[j][n[j]++] = 0.0;
        }
        if (mu > 0) {
            if (!at_max) {
                cst[j][n[j]] = ARM_SLIP;
                cdir[j][n[j]++] = 1.0;
            }
            if (!at_min) {
                cst[j][n[j]] = ARM_SLIP;
                cdir[j][n[j]++] = -1.0;
            }
        } else {
            cst[j][n[j]] = ARM_SLIP;
            cdir[j][n[j]++] = 0.0;
        }
    }
    const double qd[2] = {x[ARM_QD1], x[ARM_QD2]};
    for (int i0 = 0; i0 < n[0]; i0++)
        for (int i1 = 0; i1 < n[1]; i1++) {
            int s[2] = {cst[0][i0], cst[1][i1]};
            double d[2] = {cdir[0][i0], cdir[1][i1]}, qdd[2], lam[2];
            arm_accel(M, b, jc, s, d, qd, qdd, lam);
            int ok = 1;
            for (int j = 0; j < 2 && ok; j++) {
                if (qd[j] != 0.0)
                    continue;
                if (arm_held(s[j])) {
                    double lo, hi;
                    arm_held_range(jc, j, s[j], &lo, &hi);
                    ok = lam[j] >= lo && lam[j] <= hi;
                } else if (d[j] != 0.0) {
                    ok = d[j] * qdd[j] >= 0.0;
                } else if (jc->limited && x[ARM_Q1 + j] <= jc->q_min[j]) {
                    ok = qdd[j] >= 0.0;
                } else if (jc->limited && x[ARM_Q1 + j] >= jc->q_max[j]) {
                    ok = qdd[j] <= 0.0;
                }
            }
            if (ok) {
                st[0] = s[0], st[1] = s[1];
                dir[0] = d[0], dir[1] = d[1];
                return 1;
            }
        }
    /* nothing fits: a tie within rounding, where the hold's torque check is exact and the
     * slide's acceleration is rounding noise of 0 (left held, the joint would stay stuck past
     * its friction, its hold guard already crossed) */
    st[0] = cst[0][0], st[1] = cst[1][0];
    dir[0] = cdir[0][0], dir[1] = cdir[1][0];
    double qdd[2], lam[2];
    arm_accel(M, b, jc, st, dir, qd, qdd, lam);
    for (int j = 0; j < 2; j++) {
        double lo, hi;
        if (qd[j] != 0.0 || !arm_held(st[j]))
            continue;
        arm_held_range(jc, j, st[j], &lo, &hi);
        if (lam[j] >= lo && lam[j] <= hi)
            continue;
        st[j] = ARM_SLIP;
        dir[j] = jc->mu_D[j] > 0 ? (lam[j] < lo ? 1.0 : -1.0) : 0.0;
    }
    return 0;
}

void arm_impact(const double M[2][2], int hit, double *x)
{
    double *qd = x + ARM_QD1;
    if (hit == 3) {
        qd[0] = qd[1] = 0.0;
        return;
    }
    int j = hit == 1 ? 0 : 1, k = 1 - j;
    qd[k] += M[k][j] * qd[j] / M[k][k];
    qd[j] = 0.0;
}

void arm_status_of(int mode, int st[2])
{
    st[0] = mode % 4;
    st[1] = (mode / 4) % 4;
}

void arm_dirs_of(const rs_entity_data_t *ed, double dir[2])
{
    dir[0] = ed->aux[ARM_AUX_DIR1];
    dir[1] = ed->aux[ARM_AUX_DIR2];
}

void arm_flow(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
              const double *u, arm_dynamics_fn dyn, double qdd[2], double lam[2], arm_joints_t *jc,
              int st[2], double dir[2])
{
    double M[2][2], b[2];
    arm_joints_from(em, jc);
    arm_status_of(ed->mode, st);
    arm_dirs_of(ed, dir);
    dyn(em, ed, x, u, M, b);
    const double qd[2] = {x[ARM_QD1], x[ARM_QD2]};
    arm_accel(M, b, jc, st, dir, qd, qdd, lam);
}

void arm_derivs(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                const double *u, arm_dynamics_fn dyn, double *xdot)
{
    arm_joints_t jc;
    int st[2];
    double dir[2], qdd[2], lam[2];
    arm_flow(em, ed, x, u, dyn, qdd, lam, &jc, st, dir);
    xdot[ARM_Q1] = x[ARM_QD1];
    xdot[ARM_Q2] = x[ARM_QD2];
    xdot[ARM_QD1] = qdd[0];
    xdot[ARM_QD2] = qdd[1];
    arm_integral_rates(em, x, u, xdot);
}

void arm_guard_values(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                      const double *u, arm_dynamics_fn dyn, double *g)
{
    arm_joints_t jc;
    int st[2];
    double dir[2], lam[2] = {0.0, 0.0};
    arm_status_of(ed->mode, st);
    if (arm_held(st[0]) || arm_held(st[1])) {
        double qdd[2];
        arm_flow(em, ed, x, u, dyn, qdd, lam, &jc, st, dir);
    } else {
        arm_joints_from(em, &jc);
        arm_dirs_of(ed, dir);
    }
    arm_guards(em, ed, &jc, st, dir, x, u, lam, g);
}

/* Two stops in turn (Zeno): joint j reaches its stop while joint k is held at its own; the
 * impact kicks k off its stop at `kick`, the load brings it back, its impact kicks j off, and so
 * on, the rates shrinking geometrically (about 0.73 per pair in the serial arm) towards both
 * joints at rest on their stops, infinitely many impacts in finite time. The accumulation is
 * taken by a rest threshold on the kick: where k, pulled back towards its stop at qdd_k (j held
 * at its stop after the impact), would leave it by no more than kick^2 / (2 |qdd_k|) <=
 * 1e-9 (1 + |stop|) rad, both joints are stopped at once (both rates to 0, an inelastic impact:
 * it takes energy, never adds it). Error bound: the skipped flight of k, at most that angle and
 * 2 |kick| / |qdd_k| in time, and the remaining sequence's, a geometric series of them. */
static int stop_accumulates(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                            const double *x, const double *u, arm_dynamics_fn dyn,
                            const arm_joints_t *jc, int j, double kick)
{
    int k = 1 - j;
    double y[ARM_NX], M[2][2], b[2], stop = jc->q_min[k];
    memcpy(y, x, sizeof y);
    if (x[ARM_Q1 + k] >= 0.5 * (jc->q_min[k] + jc->q_max[k]))
        stop = jc->q_max[k];
    y[ARM_QD1 + j] = 0.0;
    y[ARM_QD1 + k] += kick;
    dyn(em, ed, y, u, M, b);
    double qd = y[ARM_QD1 + k], dir = jc->mu_D[k] > 0 ? (qd > 0 ? 1.0 : -1.0) : 0.0;
    double qdd = (b[k] - dir * jc->mu_D[k] - jc->mu_V[k] * qd) / M[k][k];
    if (!(qdd * kick < 0)) /* not pulled back: it leaves for good */
        return 0;
    return kick * kick <= 2e-9 * (1.0 + fabs(stop)) * fabs(qdd);
}

static void fall_back(const rs_entity_model_t *em, const rs_entity_data_t *ed, double *x,
                      const double *u, arm_dynamics_fn dyn, const int st[2], int j);

void arm_update(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                const double *u, arm_dynamics_fn dyn, int hit, int rest)
{
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    int old[2], st[2];
    double dir[2], before[ARM_NX], M[2][2], b[2];
    arm_status_of(ed->mode, old);
    memcpy(before, x, sizeof before);
    /* a joint held at a stop is exactly there: a state interpolated to an event time may have
     * moved it by rounding, and released from beyond the stop its stop guard would start below
     * 0, never to fire. Only within rounding (the tolerance of the arms' failure checks): a
     * joint moved off it by more (a Step's derivative along its angle) is where it was moved
     * to, and one past it by more is no state a step goes on from */
    for (int j = 0; j < 2; j++) {
        double stop = old[j] == ARM_MIN ? jc.q_min[j] : jc.q_max[j], q = x[ARM_Q1 + j];
        if ((old[j] == ARM_MIN || old[j] == ARM_MAX) && fabs(q - stop) <= 1e-9 * (1.0 + fabs(q)))
            x[ARM_Q1 + j] = stop;
    }
    for (int j = 0; j < 2; j++) {
        if (!(hit >> j & 1))
            continue;
        double *q = &x[ARM_Q1 + j];
        *q = *q <= 0.5 * (jc.q_min[j] + jc.q_max[j]) ? jc.q_min[j] : jc.q_max[j];
    }
    double delay = 0.0; /* s: the other joint reaches its stop this much later */
    if (hit) {
        dyn(em, ed, x, u, M, b);
        if (hit != 3) {
            int j = hit == 1 ? 0 : 1, k = 1 - j;
            double kick = M[k][j] * x[ARM_QD1 + j] / M[k][k];
            double stop = old[k] == ARM_MIN ? jc.q_min[k] : jc.q_max[k];
            if ((old[k] == ARM_MIN && kick < 0) || (old[k] == ARM_MAX && kick > 0)) {
                hit = 3;
                /* off its stop by more than rounding (a Step's derivative along its angle),
                 * the kick takes it there within that distance over the kick's rate: the
                 * stop and what follows come that much later (beyond it, earlier: the same
                 * law continued, so the map stays differentiable there) */
                delay = (x[ARM_Q1 + k] - stop) * (old[k] == ARM_MIN ? 1.0 : -1.0) / fabs(kick);
            } else if ((old[k] == ARM_MIN || old[k] == ARM_MAX) &&
                       stop_accumulates(em, ed, x, u, dyn, &jc, j, kick)) {
                hit = 3;
            }
            if (hit == 3) /* the other joint stopped with it on its own stop */
                x[ARM_Q1 + k] = stop;
        }
        arm_impact(M, hit, x);
        for (int j = 0; j < 2; j++)
            if (hit >> j & 1) {
                rs_emit_event(ed, ARM_EV_STOP, t, j + 1, before, x, ARM_NX);
                old[j] = x[ARM_Q1 + j] <= jc.q_min[j] ? ARM_MIN : ARM_MAX;
            }
        arm_saturation_from_values(em, ed, x, u); /* the rates jumped, and the PID's D term */
    }
    for (int j = 0; j < 2; j++)
        if (rest >> j & 1)
            x[ARM_QD1 + j] = 0.0;
    /* a joint at rest within rounding of a stop is on it: left a few ulps short, it would slip
     * onto the stop again from there, each impact kicking the other joint, without end */
    for (int j = 0; j < 2 && jc.limited; j++) {
        double *q = &x[ARM_Q1 + j], near = 16.0 * DBL_EPSILON * (1.0 + fabs(*q));
        if (x[ARM_QD1 + j] != 0.0)
            continue;
        if (fabs(*q - jc.q_min[j]) <= near)
            *q = jc.q_min[j];
        else if (fabs(*q - jc.q_max[j]) <= near)
            *q = jc.q_max[j];
    }
    dyn(em, ed, x, u, M, b);
    arm_resolve(M, b, &jc, x, st, dir);
    if (delay != 0.0) { /* the joints' motion from the stop starts `delay` later (the PID
                           integrals run on meanwhile, the angles are the same to first order) */
        double qdd[2], lam[2];
        const double qd[2] = {x[ARM_QD1], x[ARM_QD2]};
        arm_accel(M, b, &jc, st, dir, qd, qdd, lam);
        for (int j = 0; j < 2; j++)
            x[ARM_QD1 + j] -= qdd[j] * delay;
    }
    for (int j = 0; j < 2; j++) {
        int o = old[j], s = st[j], kind = -1;
        if (s == o)
            continue;
        if (s == ARM_MIN || s == ARM_MAX)
            kind = ARM_EV_STOP;
        else if (o == ARM_MIN || o == ARM_MAX)
            kind = ARM_EV_RELEASE;
        else
            kind = s == ARM_STICK ? ARM_EV_STICK : ARM_EV_SLIP;
        rs_emit_event(ed, kind, t, j + 1, before, x, ARM_NX);
    }
    ed->mode = st[0] + 4 * st[1];
    ed->aux[ARM_AUX_DIR1] = dir[0];
    ed->aux[ARM_AUX_DIR2] = dir[1];
    /* a joint on its stop whose load into it the jump took past the dry friction (the other
     * joint come to rest and turning, its friction's direction flipped): one moved off the stop
     * slides back onto it, as where arm_guards' guard fires */
    double qdd[2], lam[2];
    const double qd[2] = {x[ARM_QD1], x[ARM_QD2]};
    dyn(em, ed, x, u, M, b);
    arm_accel(M, b, &jc, st, dir, qd, qdd, lam);
    for (int j = 0; j < 2; j++)
        if (jc.mu_D[j] > 0 && ((st[j] == ARM_MIN && lam[j] > jc.mu_D[j]) ||
                               (st[j] == ARM_MAX && lam[j] < -jc.mu_D[j])))
            fall_back(em, ed, x, u, dyn, st, j);
}

void arm_jump(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
              const double *u, arm_dynamics_fn dyn, const int *fired)
{
    arm_saturation_jump(ed, fired + ARM_G_SAT);
    int hit = 0, rest = 0, held = 0, st[2];
    arm_status_of(ed->mode, st);
    for (int j = 0; j < 2; j++)
        if ((st[j] == ARM_MAX && fired[5 * j]) || (st[j] == ARM_MIN && fired[5 * j + 1]))
            fall_back(em, ed, x, u, dyn, st, j);
    for (int j = 0; j < 2; j++) {
        hit |= (fired[5 * j + 3] || fired[5 * j + 4]) << j;
        rest |= (fired[5 * j + 2] != 0) << j;
        held |= fired[5 * j] || fired[5 * j + 1];
    }
    if (hit || rest || held)
        arm_update(em, ed, t, x, u, dyn, hit, rest);
}

/* (M q_dot)_k's rate F_k = (dM/dt q_dot)_k + r_k at x with the rates qd (dM/dt by central
 * differences of M along q_dot; r_k = b_k less joint k's friction, its direction dir_k). */
static double momentum_rate(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                            const double *x, const double *u, arm_dynamics_fn dyn,
                            const arm_joints_t *jc, double dir_k, int k, const double qd[2])
{
    double y[ARM_NX], M[2][2], Mp[2][2], Mm[2][2], b[2], bb[2];
    memcpy(y, x, sizeof y);
    y[ARM_QD1] = qd[0];
    y[ARM_QD2] = qd[1];
    dyn(em, ed, y, u, M, b);
    double eps = 1e-6 / fmax(1.0, fmax(fabs(qd[0]), fabs(qd[1]))), mdot = 0.0;
    for (int s = -1; s <= 1; s += 2) {
        for (int j = 0; j < 2; j++)
            y[ARM_Q1 + j] = x[ARM_Q1 + j] + s * eps * qd[j];
        dyn(em, ed, y, u, s > 0 ? Mp : Mm, bb);
    }
    for (int c = 0; c < 2; c++)
        mdot += (Mp[k][c] - Mm[k][c]) / (2.0 * eps) * qd[c];
    return mdot + b[k] - dir_k * jc->mu_D[k] - jc->mu_V[k] * qd[k];
}

/* dF_k / dq_dot along w = e_j - m e_k (m = M_kj / M_kk): the change of joint k's momentum rate
 * (momentum_rate) per unit of joint j's rate moved with k's momentum kept, by central
 * differences of the rates. */
static double momentum_rate_along(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                                  const double *x, const double *u, arm_dynamics_fn dyn,
                                  const arm_joints_t *jc, double dir_k, int j, double m)
{
    int k = 1 - j;
    const double qd[2] = {x[ARM_QD1], x[ARM_QD2]};
    double eta = 1e-3 * fmax(1.0, fmax(fabs(qd[0]), fabs(qd[1])));
    double qp[2] = {qd[0], qd[1]}, qm[2] = {qd[0], qd[1]};
    qp[j] += eta, qp[k] -= eta * m;
    qm[j] -= eta, qm[k] += eta * m;
    return (momentum_rate(em, ed, x, u, dyn, jc, dir_k, k, qp) -
            momentum_rate(em, ed, x, u, dyn, jc, dir_k, k, qm)) /
           (2.0 * eta);
}

/* The load into joint j's stop has just passed its dry friction (arm_guards' guard on the held
 * range's open side, arm_jump): nothing happens to a joint held there, but one that a change of
 * its angle had moved off the stop by d, stuck there, slides back onto it now, within a time that
 * vanishes with d. The map puts it on the stop; the other joint, where it slides, keeps its
 * generalized momentum (M q_dot)_k but for the integral of its rate F_k's change over the slide,
 * dF_k/dq_dot along w = e_j - (M_kj / M_kk) e_k times the distance slid, and is moved by
 * -M_kj / M_kk of that distance (arm_excursion's fall back, from a point reached in the Step). */
static void fall_back(const rs_entity_model_t *em, const rs_entity_data_t *ed, double *x,
                      const double *u, arm_dynamics_fn dyn, const int st[2], int j)
{
    arm_joints_t jc;
    double M[2][2], b[2], dir[2];
    int k = 1 - j;
    arm_joints_from(em, &jc);
    double stop = st[j] == ARM_MAX ? jc.q_max[j] : jc.q_min[j], d = stop - x[ARM_Q1 + j];
    if (d == 0.0)
        return;
    if (arm_held(st[k])) {
        x[ARM_Q1 + j] = stop;
        return;
    }
    dyn(em, ed, x, u, M, b);
    arm_dirs_of(ed, dir);
    const double qd[2] = {x[ARM_QD1], x[ARM_QD2]};
    double m = M[k][j] / M[k][k];
    double dF = momentum_rate_along(em, ed, x, u, dyn, &jc, dir[k], j, m);
    double p = M[k][k] * qd[k] + M[k][j] * qd[j] + dF * d;
    x[ARM_Q1 + k] -= m * d;
    x[ARM_Q1 + j] = stop;
    dyn(em, ed, x, u, M, b);
    x[ARM_QD1 + k] = (p - M[k][j] * qd[j]) / M[k][k];
}

/* How far joint j on its stop, its load lam_j into the stop past its dry friction by e, slides
 * back when moved off the stop before its friction holds it again: the flow takes e away
 * within t_h = e / |d lam_j / dt|, the joint slides back at e / m (m: its inertia with the other
 * joint's momentum kept, det M / M_kk, or M_jj while that one is held) decaying to 0 and comes
 * to rest after 2 t_h, (2/3) (e / m) t_h^2 nearer the stop. INFINITY where nothing takes the
 * excess away (it falls back onto the stop from any distance). */
static double slide_back(const rs_entity_model_t *em, const rs_entity_data_t *ed,
                         const double *x, const double *u, arm_dynamics_fn dyn,
                         const arm_joints_t *jc, const int st[2], const double dir[2],
                         const double M[2][2], const double lam[2], int j)
{
    int k = 1 - j;
    double into = st[j] == ARM_MIN ? 1.0 : -1.0, excess = into * lam[j] - jc->mu_D[j];
    if (!(jc->mu_D[j] > 0) || !(excess > 0))
        return INFINITY;
    double xdot[ARM_NX], y[ARM_NX], Mm[2][2], b[2], qdd[2], l2[2], rate = 0.0, size = 1.0;
    arm_derivs(em, ed, x, u, dyn, xdot);
    for (int i = ARM_Q1; i <= ARM_QD2; i++)
        size = fmax(size, fabs(xdot[i]));
    double eps = 1e-6 / size;
    for (int s = -1; s <= 1; s += 2) {
        for (int i = 0; i < ARM_NX; i++)
            y[i] = x[i] + s * eps * xdot[i];
        dyn(em, ed, y, u, Mm, b);
        const double qd[2] = {y[ARM_QD1], y[ARM_QD2]};
        arm_accel(Mm, b, jc, st, dir, qd, qdd, l2);
        rate += s * into * l2[j] / (2.0 * eps);
    }
    if (!(rate < 0))
        return INFINITY; /* the excess grows: it falls back */
    double m = arm_held(st[k]) ? M[j][j] : (M[0][0] * M[1][1] - M[0][1] * M[1][0]) / M[k][k];
    double th = excess / -rate;
    return 2.0 / 3.0 * excess / m * th * th;
}

/* Whether joint j, moved off its stop by the angle's difference step and falling back at its
 * slide's acceleration a (the other joint k sliding on), would still be in flight when k reaches
 * a stop of its own: t_k, from k's rate and acceleration, below sqrt(2 ANGLE_STEP / |a|). Then
 * a change beyond |a| t_k^2 / 2, within the step, meets k's impact off the stop (arm_update
 * stops it with k from there, or the kick takes it on), and that boundary is on the point: the
 * side is the one that stays off, as where it sticks. */
static int stop_before_fall_back(const arm_joints_t *jc, const int st[2], const double dir[2],
                                 const double *x, const double M[2][2], const double b[2],
                                 const double qdd[2], int j)
{
    int k = 1 - j, s2[2] = {st[0], st[1]};
    double d2[2] = {dir[0], dir[1]}, a2[2], l2[2];
    const double qd[2] = {x[ARM_QD1], x[ARM_QD2]};
    double v = qd[k];
    if (!jc->limited || v == 0.0)
        return 0;
    s2[j] = ARM_SLIP;
    d2[j] = jc->mu_D[j] > 0 ? (st[j] == ARM_MIN ? -1.0 : 1.0) : 0.0; /* towards the stop */
    arm_accel(M, b, jc, s2, d2, qd, a2, l2);
    double dist = v < 0 ? x[ARM_Q1 + k] - jc->q_min[k] : jc->q_max[k] - x[ARM_Q1 + k];
    double a = (v < 0 ? -1.0 : 1.0) * qdd[k], tk; /* along the motion */
    if (a == 0.0)
        tk = dist / fabs(v);
    else if (v * v + 2.0 * a * dist >= 0.0)
        tk = (sqrt(v * v + 2.0 * a * dist) - fabs(v)) / a;
    else
        return 0; /* it turns back short of the stop */
    return tk >= 0.0 && tk * tk * fabs(a2[j]) < 2.0 * ANGLE_STEP;
}

int arm_excursion(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                  const double *u, arm_dynamics_fn dyn, int i, int sign, double *col)
{
    if (ed->mode < 0 || ed->mode >= ARM_JOINT_MODES || i < ARM_Q1 || i > ARM_QD2)
        return -1;
    arm_joints_t jc;
    int st[2];
    double dir[2], M[2][2], b[2], qdd[2], lam[2];
    arm_joints_from(em, &jc);
    arm_status_of(ed->mode, st);
    arm_dirs_of(ed, dir);
    int rate = i >= ARM_QD1, j = rate ? i - ARM_QD1 : i - ARM_Q1, k = 1 - j;
    int stop = st[j] == ARM_MIN || st[j] == ARM_MAX, away = st[j] == ARM_MIN ? 1 : -1;
    const double qd[2] = {x[ARM_QD1], x[ARM_QD2]};
    dyn(em, ed, x, u, M, b);
    arm_accel(M, b, &jc, st, dir, qd, qdd, lam);
    for (int r = 0; r < ARM_NX; r++)
        col[r] = 0.0;
    if (!rate) {
        if (!stop || sign != away)
            return -1;
        /* moved off, it sticks where it was moved to where its friction holds the load; where
         * the load's excess slides it back by `back` first, a change nearer the stop than that
         * falls back onto it and one farther sticks short of it by `back`: a boundary within
         * the angle's difference step is on the point, and what every change beyond it does,
         * sticking, is the side's derivative; beyond the step it falls back (and where nothing
         * ends the slide) */
        double back = jc.mu_D[j] > 0 && fabs(lam[j]) <= jc.mu_D[j]
                          ? 0.0
                          : slide_back(em, ed, x, u, dyn, &jc, st, dir, M, lam, j);
        if (back <= ANGLE_STEP) {
            col[i] = 1.0; /* stuck where it was moved to */
            return 0;
        }
        if (arm_held(st[k]))
            return 0; /* falls back; the other joint stays held */
        if (stop_before_fall_back(&jc, st, dir, x, M, b, qdd, j)) {
            col[i] = 1.0; /* off its stop until that impact, as where it sticks */
            return 0;
        }
        double m = M[k][j] / M[k][k];
        double dF = momentum_rate_along(em, ed, x, u, dyn, &jc, dir[k], j, m);
        /* the angle's change changed the momentum to begin with: (dM/dq_j q_dot)_k */
        double y[ARM_NX], Mp[2][2], Mm[2][2], bb[2], e = 1e-6 * fmax(1.0, fabs(x[i]));
        memcpy(y, x, sizeof y);
        y[i] = x[i] + e;
        dyn(em, ed, y, u, Mp, bb);
        y[i] = x[i] - e;
        dyn(em, ed, y, u, Mm, bb);
        double dp = 0.0;
        for (int c = 0; c < 2; c++)
            dp += (Mp[k][c] - Mm[k][c]) / (2.0 * e) * qd[c];
        col[ARM_Q1 + k] = m;
        col[ARM_QD1 + k] = (dp - dF) / M[k][k];
        return 0;
    }
    if (qd[j] != 0.0)
        return -1;
    if (stop) {
        if (sign != away)
            return -1; /* into the stop: the impact, the map's own */
        if (arm_held(st[k]))
            return 0; /* the other joint held as well: it keeps holding */
        /* off at the acceleration a_j of the mode it flies in (the other joint's status
         * resolved with it), to rest within tau1 = -sigma / a_j; held there (the stop's load
         * within its dry friction) or back at a_back within tau2 = |sigma| / sqrt(|a_j a_back|)
         * onto the stop at the rate -sigma r, r = sqrt(|a_back / a_j|), whose impact kicks the
         * other joint by -M_kj sigma r / M_kk (unless that stops it on its own stop); the other
         * joint meanwhile accelerating as in those modes instead of the held one's */
        double y[ARM_NX], sdir[2], aw[2], ab[2], lam2[2];
        int s2[2], s3[2];
        memcpy(y, x, sizeof y);
        y[ARM_QD1 + j] = sign * DBL_MIN;
        arm_resolve(M, b, &jc, y, s2, sdir);
        double qs[2] = {y[ARM_QD1], y[ARM_QD2]};
        arm_accel(M, b, &jc, s2, sdir, qs, aw, lam2);
        if (!(aw[j] * sign < 0))
            return -1; /* it does not come back */
        col[ARM_QD1 + k] = (aw[k] - qdd[k]) * -1.0 / aw[j];
        if (jc.mu_D[j] > 0 && fabs(lam[j]) <= jc.mu_D[j])
            return 0; /* held where it came to rest, on the stop to first order */
        y[ARM_QD1 + j] = -sign * DBL_MIN;
        arm_resolve(M, b, &jc, y, s3, sdir);
        qs[0] = y[ARM_QD1], qs[1] = y[ARM_QD2];
        arm_accel(M, b, &jc, s3, sdir, qs, ab, lam2);
        if (!(ab[j] * sign < 0))
            return -1;
        double r = sqrt(ab[j] / aw[j]), kick = -M[k][j] / M[k][k] * sign * r;
        int stopped = (s3[k] == ARM_MIN && kick < 0) || (s3[k] == ARM_MAX && kick > 0);
        col[ARM_QD1 + k] += (ab[k] - qdd[k]) * sign / sqrt(aw[j] * ab[j]) +
                            (stopped ? 0.0 : -M[k][j] / M[k][k] * r);
        return 0;
    }
    if (!(jc.mu_D[j] > 0) || (st[j] == ARM_SLIP && dir[j] == sign))
        return -1; /* no friction to bring it back, or sliding on that way */
    if (jc.limited && ((sign < 0 && x[ARM_Q1 + j] <= jc.q_min[j]) ||
                       (sign > 0 && x[ARM_Q1 + j] >= jc.q_max[j])))
        return -1; /* on a stop, into it: the impact, the map's own */
    /* the mode it slides in: the joint moving to side sign, the other resolved with it */
    double y[ARM_NX], sdir[2], sqdd[2];
    int s2[2];
    memcpy(y, x, sizeof y);
    y[ARM_QD1 + j] = sign * DBL_MIN;
    arm_resolve(M, b, &jc, y, s2, sdir);
    const double qs[2] = {y[ARM_QD1], y[ARM_QD2]};
    arm_accel(M, b, &jc, s2, sdir, qs, sqdd, lam);
    double a = sqdd[j];
    if (!(a * sign < 0))
        return -1; /* it does not come back */
    for (int c = 0; c < 2; c++)
        col[ARM_QD1 + c] = (c == j ? 1.0 : 0.0) + (qdd[c] - sqdd[c]) / a;
    return 0;
}

void arm_settle_integrals(const rs_entity_model_t *em, rs_entity_data_t *ed, double *x)
{
    for (int j = 0; j < 2; j++) {
        double act = em->p[ARM_P_MODE + j];
        if (ed->aux[ARM_AUX_ACT1 + j] != act) {
            x[ARM_I1 + j] = 0.0;
            ed->aux[ARM_AUX_ACT1 + j] = act;
        }
    }
}

void arm_settle(const rs_entity_model_t *em, rs_entity_data_t *ed, double t, double *x,
                const double *u, arm_dynamics_fn dyn)
{
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    arm_settle_integrals(em, ed, x);
    arm_saturation_from_values(em, ed, x, u);
    /* a joint held at a stop that new parameters moved away from it (or removed) is no longer
     * held there: taken as stuck, the choice below is made afresh; kept, arm_update would put
     * it on the new stop, a jump of the angle with no motion to make it (and its energy) */
    if (ed->mode < ARM_JOINT_MODES) {
        int st[2];
        arm_status_of(ed->mode, st);
        for (int j = 0; j < 2; j++) {
            double q = x[ARM_Q1 + j];
            if ((st[j] == ARM_MIN && !(jc.limited && fabs(q - jc.q_min[j]) <= 1e-9 * (1.0 + fabs(q)))) ||
                (st[j] == ARM_MAX && !(jc.limited && fabs(q - jc.q_max[j]) <= 1e-9 * (1.0 + fabs(q)))))
                st[j] = ARM_STICK;
        }
        ed->mode = st[0] + 4 * st[1];
    }
    int hit = 0;
    for (int j = 0; j < 2; j++) {
        if (!jc.limited)
            continue;
        /* beyond a stop (new limits under a running arm), or on one and moving into it */
        double q = x[ARM_Q1 + j], qd = x[ARM_QD1 + j];
        if (q < jc.q_min[j] || q > jc.q_max[j] || (q == jc.q_min[j] && qd < 0) ||
            (q == jc.q_max[j] && qd > 0))
            hit |= 1 << j;
    }
    arm_update(em, ed, t, x, u, dyn, hit, 0);
}

void arm_joint_sensors(int mode, double *stick, double *limit)
{
    int st[2];
    arm_status_of(mode, st);
    for (int j = 0; j < 2; j++) {
        stick[j] = st[j] == ARM_STICK;
        limit[j] = st[j] == ARM_MIN ? -1.0 : st[j] == ARM_MAX ? 1.0 : 0.0;
    }
}

int arm_validate_joints(const rs_entity_model_t *em, rs_status_t *st)
{
    for (int j = 0; j < 2; j++) {
        double mo = em->p[ARM_P_MODE + j];
        if (mo != ARM_TORQUE && mo != ARM_PID)
            return rs_fail(st, RS_EINVAL,
                           "'%s.actuator_mode' value %d is %g; it must be 0 (torque) or 1 (PID)",
                           em->name, j + 1, mo);
    }
    int nmin = em->plen[ARM_PI_THETA_MIN], nmax = em->plen[ARM_PI_THETA_MAX];
    if (nmin != nmax || (nmin != 0 && nmin != 2))
        return rs_fail(st, RS_EINVAL,
                       "'%s.theta_min' has %d values and '%s.theta_max' %d; give both with one "
                       "value per joint, or neither",
                       em->name, nmin, em->name, nmax);
    if (nmin == 2)
        for (int j = 0; j < 2; j++) {
            double lo = em->p[ARM_P_THETA_MIN + j], hi = em->p[ARM_P_THETA_MAX + j];
            double q0 = em->p[ARM_P_THETA0 + j];
            if (!(lo < hi))
                return rs_fail(st, RS_EINVAL,
                               "joint %d of '%s': theta_min = %g must be below theta_max = %g rad",
                               j + 1, em->name, lo, hi);
            if (q0 < lo || q0 > hi)
                return rs_fail(st, RS_EINVAL,
                               "joint %d of '%s': theta0 = %g lies outside [theta_min, theta_max] "
                               "= [%g, %g] rad",
                               j + 1, em->name, q0, lo, hi);
        }
    return 0;
}

void arm_init(const rs_entity_model_t *em, rs_entity_data_t *ed, double *x)
{
    for (int j = 0; j < 2; j++) {
        x[ARM_Q1 + j] = em->p[ARM_P_THETA0 + j];
        x[ARM_QD1 + j] = em->p[ARM_P_THETA_DOT0 + j];
        x[ARM_I1 + j] = 0.0;
        ed->aux[ARM_AUX_DIR1 + j] =
            em->p[ARM_P_MU_D + j] > 0 && x[ARM_QD1 + j] != 0 ? copysign(1.0, x[ARM_QD1 + j]) : 0.0;
        ed->aux[ARM_AUX_ACT1 + j] = em->p[ARM_P_MODE + j];
    }
    for (int j = 0; j < 2; j++)
        ed->aux[ARM_AUX_SAT1 + j] = 0.0; /* settled at the first step */
    ed->mode = ARM_SLIP + 4 * ARM_SLIP;
}

/* ---- serial two-link arm kinematics --------------------------------------------------------- */

void serial_fk(double a1, double a2, const double q[2], double p[2])
{
    p[0] = a2 * cos(q[0] + q[1]) + a1 * cos(q[0]);
    p[1] = a2 * sin(q[0] + q[1]) + a1 * sin(q[0]);
}

void serial_jacobian(double a1, double a2, const double q[2], double Jm[2][2])
{
    double s1 = sin(q[0]), c1 = cos(q[0]), s12 = sin(q[0] + q[1]), c12 = cos(q[0] + q[1]);
    Jm[0][0] = -a1 * s1 - a2 * s12;
    Jm[0][1] = -a2 * s12;
    Jm[1][0] = a1 * c1 + a2 * c12;
    Jm[1][1] = a2 * c12;
}

int serial_ik(double a1, double a2, double x, double y, int elbow, double q[2])
{
    double D = (x * x + y * y - a1 * a1 - a2 * a2) / (2.0 * a1 * a2);
    if (fabs(D) > 1.0 + 1e-12 || !isfinite(D))
        return -1;
    if (D > 1.0)
        D = 1.0;
    if (D < -1.0)
        D = -1.0;
    q[1] = atan2(-(double)elbow * sqrt(1.0 - D * D), D);
    q[0] = atan2(y, x) - atan2(a2 * sin(q[1]), a1 + a2 * cos(q[1]));
    return 0;
}

/* ---- dual two-link parallel arm kinematics -------------------------------------------------- */

void parallel_elbows(double L0, double L1, const double q[2], double A[2], double B[2])
{
    A[0] = -L1 * cos(q[0]) - 0.5 * L0;
    A[1] = L1 * sin(q[0]);
    B[0] = L1 * cos(q[1]) + 0.5 * L0;
    B[1] = L1 * sin(q[1]);
}

double parallel_u(double L0, double L1, const double q[2], double grad[2])
{
    double A[2], B[2];
    parallel_elbows(L0, L1, q, A, B);
    double wx = B[0] - A[0], wy = B[1] - A[1], u = rs_hypot(wx, wy);
    if (grad) {
        double ex = wx / u, ey = wy / u;
        /* dA/dt1 = (L1 sin t1, L1 cos t1), dB/dt2 = (-L1 sin t2, L1 cos t2) */
        grad[0] = -(ex * L1 * sin(q[0]) + ey * L1 * cos(q[0]));
        grad[1] = ex * (-L1 * sin(q[1])) + ey * L1 * cos(q[1]);
    }
    return u;
}

int parallel_fk(double L0, double L1, double L2, const double q[2], const double qd[2], double p[2],
                double pdot[2])
{
    double A[2], B[2];
    parallel_elbows(L0, L1, q, A, B);
    double wx = B[0] - A[0], wy = B[1] - A[1], u = rs_hypot(wx, wy);
    double v2 = L2 * L2 - 0.25 * u * u, v = v2 > 0 ? sqrt(v2) : 0.0;
    double ex = wx / u, ey = wy / u, nx = -ey, ny = ex; /* n = (b - d, c - a) / u */
    p[0] = 0.5 * (A[0] + B[0]) + v * nx;
    p[1] = 0.5 * (A[1] + B[1]) + v * ny;
    if (pdot) {
        double dA[2] = {L1 * sin(q[0]) * qd[0], L1 * cos(q[0]) * qd[0]};
        double dB[2] = {-L1 * sin(q[1]) * qd[1], L1 * cos(q[1]) * qd[1]};
        double dwx = dB[0] - dA[0], dwy = dB[1] - dA[1];
        double du = ex * dwx + ey * dwy;
        double dex = (dwx - ex * du) / u, dey = (dwy - ey * du) / u;
        double dv = v > 0 ? -0.25 * u * du / v : 0.0;
        pdot[0] = 0.5 * (dA[0] + dB[0]) + dv * nx + v * (-dey);
        pdot[1] = 0.5 * (dA[1] + dB[1]) + dv * ny + v * dex;
    }
    return v2 >= 0 ? 0 : -1;
}

int parallel_ik(double L0, double L1, double L2, double x, double y, double q[2])
{
    double G = sqrt((x - 0.5 * L0) * (x - 0.5 * L0) + y * y);
    double H = sqrt((x + 0.5 * L0) * (x + 0.5 * L0) + y * y);
    if (!(G > 0) || !(H > 0))
        return -1;
    double ca = (G * G + L0 * L0 - H * H) / (2.0 * G * L0);
    double cb = (H * H + L0 * L0 - G * G) / (2.0 * H * L0);
    double cg = (G * G + L1 * L1 - L2 * L2) / (2.0 * G * L1);
    double ce = (H * H + L1 * L1 - L2 * L2) / (2.0 * H * L1);
    if (fabs(cg) > 1.0 || fabs(ce) > 1.0 || !isfinite(cg) || !isfinite(ce))
        return -1;
    /* the base-triangle cosines can only leave [-1, 1] by rounding */
    ca = ca > 1 ? 1 : ca < -1 ? -1 : ca;
    cb = cb > 1 ? 1 : cb < -1 ? -1 : cb;
    q[0] = M_PI - acos(cb) - acos(ce);
    q[1] = M_PI - acos(ca) - acos(cg);
    return 0;
}

int arm_admissible_stops(const rs_entity_model_t *em, const double *x, rs_status_t *st)
{
    arm_joints_t jc;
    arm_joints_from(em, &jc);
    for (int j = 0; j < 2 && jc.limited; j++) {
        double q = x[ARM_Q1 + j], past = fmax(jc.q_min[j] - q, q - jc.q_max[j]);
        if (past > 1e-9 * (1.0 + fabs(q)))
            return rs_fail(st, RS_EPRECOND,
                           "joint %d of '%s' would be %.6g rad past its stop under the new "
                           "parameters (theta%d = %.9g rad, stops [%.9g, %.9g]); Reset or "
                           "SetState the joint within the stops first, or keep them around it",
                           j + 1, em->name, past, j + 1, q, jc.q_min[j], jc.q_max[j]);
    }
    return 0;
}
