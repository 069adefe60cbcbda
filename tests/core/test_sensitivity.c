/* Derivatives of a step (rs_sensitivity.h) against central finite differences of whole steps
 * (Richardson-extrapolated, with the world integrated at rtol 1e-13 so the differences resolve
 * 1e-9), and across an impact against the closed-form saltation matrix; the flow's sensitivity
 * without the saltation correction is printed to show it is wrong by O(1). Through stick-slip
 * and stops; a grazing touch and simultaneous impacts are reported as not differentiable;
 * the other contact formulations are refused by name. */
#include "rs_robot.h"
#include "rs_sensitivity.h"
#include "rs_test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXC 40
#define MAXN 24

typedef struct scenario {
    const char *name, *preset;
    const rs_param_t *p;
    size_t np;
    double u[8];
    uint64_t steps;
    const char *const *jparams;
    size_t q;
    /* the input directions compared (ndir of them, each over all columns); 0: each column.
     * In a contact mode the positions and velocities move together: a change of one alone
     * leaves the mode, where the Jacobian is the mode's (one-sided) derivative */
    int ndir;
    const double (*dirs)[MAXC];
} scenario_t;

static char last_events[400];
static int worst, worst_row, worst_col; /* the largest difference of the last compare() */
static int n_last_events;

static const double TIGHT[] = {1e-13}, ATOL[] = {1e-14}, ORDER8[] = {8};

/* A world of the scenario, tight tolerances; NULL on error. */
static rs_world_t *make(const scenario_t *sc)
{
    rs_param_t all[24];
    size_t n = 0;
    all[n++] = (rs_param_t){"", "rtol", TIGHT, 1};
    all[n++] = (rs_param_t){"", "atol", ATOL, 1};
    all[n++] = (rs_param_t){"", "erk_order", ORDER8, 1};
    for (size_t i = 0; i < sc->np; i++)
        all[n++] = sc->p[i];
    rs_status_t st;
    rs_world_t *w = rs_world_new(sc->preset, all, n, 1, &st);
    CHECK(w != NULL, "%s: create: %s", sc->name, st.message);
    return w;
}

/* The state after the scenario's steps with the inputs moved by delta along dir (NULL: none),
 * into out; with jac (n x ncol) the Jacobian computed along. 0, or -1 (and a failed check). */
static int run(const scenario_t *sc, const double *dir, double delta, double *out, double *jac,
               int *differentiable, char *why)
{
    rs_world_t *w = make(sc);
    if (!w)
        return -1;
    const rs_model_t *m = w->model;
    int n = m->nx, nu = m->nu, rc = 0;
    rs_status_t st;
    for (size_t j = 0; dir && j < sc->q; j++) { /* parameters: SetParams moves them */
        if (dir[n + nu + (int)j] == 0.0)
            continue;
        const char *item = sc->jparams[j];
        const char *dot = strchr(item, '.');
        char ent[64];
        snprintf(ent, sizeof ent, "%.*s", (int)(dot - item), item);
        int e = rs_model_entity(m, ent);
        double v = rs_model_param(m, e, dot + 1, 0) + delta * dir[n + nu + (int)j];
        rs_param_t p = {ent, dot + 1, &v, 1};
        rc = rs_world_set_params(w, &p, 1, &st);
        CHECK_OK(rc, st);
        m = w->model;
    }
    rs_data_t *d = w->data;
    double u[8];
    memcpy(u, sc->u, sizeof u);
    for (int i = 0; dir && i < n; i++)
        d->x[i] += delta * dir[i];
    for (int a = 0; dir && a < nu; a++)
        u[a] += delta * dir[n + a];
    rc = rs_set_all_commands(m, d, u, &st);
    CHECK_OK(rc, st);
    rs_sens_t *s = NULL;
    if (jac) {
        s = rs_sens_new(m, d, sc->jparams, sc->q, &st);
        CHECK(s != NULL, "%s: sens: %s", sc->name, st.message);
        d->hooks = s ? rs_sens_hooks(s) : NULL;
    }
    rc = rs_step(m, d, sc->steps, &st);
    CHECK_OK(rc, st);
    d->hooks = NULL;
    if (jac) { /* the events the Jacobian went through */
        last_events[0] = 0;
        for (int i = 0; i < d->nevents; i++)
            snprintf(last_events + strlen(last_events), sizeof last_events - strlen(last_events),
                     "%s%s", i ? ", " : "", rs_event_kind_name(m, &d->events[i]));
        n_last_events = d->nevents;
    }
    memcpy(out, d->x, (size_t)n * sizeof *out);
    if (s) {
        int nn, nc, q, dif;
        const double *phi;
        const char *reason;
        rc = rs_sens_result(s, &nn, &nc, &q, &phi, &dif, &reason, &st);
        CHECK_OK(rc, st);
        if (phi && jac)
            memcpy(jac, phi, (size_t)nn * (nn + nc + q) * sizeof *jac);
        *differentiable = dif;
        snprintf(why, 400, "%s", reason);
        rs_sens_destroy(&s);
    }
    rs_world_destroy(&w);
    return rc;
}

/* The scenario's Jacobian and its central finite differences (Richardson: (4 D(h/2) - D(h))
 * / 3), relative error max |J - FD| / max |FD| into *err; returns the number of columns. */
static int compare(const scenario_t *sc, double h, double *J, double *F, int *n_out,
                   double *err, int *differentiable, char *why)
{
    rs_world_t *w = make(sc);
    if (!w)
        return 0;
    int n = w->model->nx, ncol = n + w->model->nu + (int)sc->q;
    double zs[MAXC];
    for (int c = 0; c < ncol; c++) {
        if (c < n)
            zs[c] = w->data->x[c];
        else if (c < n + w->model->nu)
            zs[c] = sc->u[c - n];
        else {
            const char *item = sc->jparams[c - n - w->model->nu], *dot = strchr(item, '.');
            char ent[64];
            snprintf(ent, sizeof ent, "%.*s", (int)(dot - item), item);
            zs[c] = rs_model_param(w->model, rs_model_entity(w->model, ent), dot + 1, 0);
        }
    }
    rs_world_destroy(&w);
    double x0[MAXN], Jfull[MAXN * MAXC];
    run(sc, NULL, 0, x0, Jfull, differentiable, why);
    int ndir = sc->ndir ? sc->ndir : ncol;
    for (int c = 0; c < ndir; c++) {
        double dir[MAXC] = {0}, scale = 1, a[MAXN], b[MAXN], a2[MAXN], b2[MAXN];
        if (sc->ndir)
            memcpy(dir, sc->dirs[c], sizeof dir);
        else
            dir[c] = 1;
        for (int k = 0; k < ncol; k++)
            if (dir[k] != 0.0)
                scale = fmax(scale, fabs(zs[k]));
        double hc = h * scale;
        run(sc, dir, hc, a, NULL, NULL, NULL);
        run(sc, dir, -hc, b, NULL, NULL, NULL);
        run(sc, dir, hc / 2, a2, NULL, NULL, NULL);
        run(sc, dir, -hc / 2, b2, NULL, NULL, NULL);
        for (int i = 0; i < n; i++) {
            double d1 = (a[i] - b[i]) / (2 * hc), d2 = (a2[i] - b2[i]) / hc, jd = 0;
            F[i * ndir + c] = (4 * d2 - d1) / 3;
            for (int k = 0; k < ncol; k++)
                jd += Jfull[i * ncol + k] * dir[k];
            J[i * ndir + c] = jd;
        }
    }
    ncol = ndir;
    double num = 0, den = 0;
    for (int i = 0; i < n * ncol; i++) {
        if (fabs(J[i] - F[i]) > num)
            worst = i;
        num = fmax(num, fabs(J[i] - F[i]));
        den = fmax(den, fabs(F[i]));
    }
    worst_row = worst / ncol, worst_col = worst % ncol;
    *err = num / den;
    *n_out = n;
    return ncol;
}

static void check_against_fd(const scenario_t *sc, double h, double tol)
{
    double J[MAXN * MAXC], F[MAXN * MAXC], err = 0;
    int n = 0, dif = 0;
    char why[400];
    int ncol = compare(sc, h, J, F, &n, &err, &dif, why);
    printf("%-34s n %d, %d columns: Jacobian vs finite differences, max rel error %.2e "
           "(bound %.0e); events: %s\n",
           sc->name, n, ncol, err, tol, n_last_events ? last_events : "none");
    CHECK((tol < 1e-6) == (n_last_events == 0), "%s: events as the scenario means: %s",
          sc->name, last_events);
    CHECK(dif, "%s: not differentiable: %s", sc->name, why);
    CHECK(err <= tol, "%s: relative error %.3g > %.3g", sc->name, err, tol);
    if (err > tol)
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < ncol; j++)
                fprintf(stderr, " %10.5g/%10.5g", J[i * ncol + j], F[i * ncol + j]);
            fprintf(stderr, "\n");
        }
}

/* ---- scenarios -------------------------------------------------------------------------- */

static const double V03[] = {0.3}, X5[] = {5.0}, ZERO[] = {0.0}, V1[] = {1.0}, GAP[] = {0.004},
                    HALF[] = {0.5}, V02[] = {0.02}, TINY_GAP[] = {1e-13}, ONE[] = {1.0},
                    TS[] = {1.0};
static const char *const FINGER_P[] = {"finger.finger_mass", "finger.finger_drag",
                                       "finger.object_drag", "finger.kinetic_friction",
                                       "finger.restitution", "finger.object_mass"};

/* the finger pushed through free space: no event */
static void test_free_flight(void)
{
    /* the object frictionless: a resting object held by friction takes a change of its
     * velocity back (derivative 0, test_every_preset), a free one keeps it */
    const rs_param_t p[] = {{"finger", "object_x0", X5, 1}, {"finger", "finger_v0", V03, 1},
                            {"finger", "static_friction", ZERO, 1},
                            {"finger", "kinetic_friction", ZERO, 1}};
    scenario_t sc = {"finger, free flight (no event)", "finger", p, 4, {0.7}, 10, FINGER_P, 3,
                     0, NULL};
    check_against_fd(&sc, 1e-3, 1e-7);
}

static void test_serial_arm(void)
{
    static const char *const ARM_P[] = {"arm.m1", "arm.m2"};
    scenario_t sc = {"serial arm, torques (no event)", "serial_arm", NULL, 0, {0.4, -0.2}, 5,
                     ARM_P, 2, 0, NULL};
    check_against_fd(&sc, 1e-3, 1e-7);
}

/* The touch and bounce, free bodies (no drag, no friction, no push): the step's Jacobian in
 * closed form is Phi(T - tau) S Phi(tau) with Phi(s) the free flow (x' = v) and S the
 * saltation matrix of the impact x_f+ = x_o, v+ = (1 + e) v_cm - e v, J = (1 + e) mu (v_f -
 * v_o) added to contact_impulse, guard g = x_o - x_f. */
static void test_touch_closed_form(void)
{
    const rs_param_t p[] = {{"finger", "object_x0", GAP, 1},   {"finger", "finger_v0", V1, 1},
                            {"finger", "finger_drag", ZERO, 1}, {"finger", "object_drag", ZERO, 1},
                            {"finger", "static_friction", ZERO, 1},
                            {"finger", "kinetic_friction", ZERO, 1},
                            {"finger", "restitution", HALF, 1}};
    scenario_t sc = {"finger, touch and bounce", "finger", p, 7, {0.0}, 1, FINGER_P + 4, 2,
                     0, NULL};
    check_against_fd(&sc, 1e-4, 1e-6);

    double J[MAXN * MAXC], xe[MAXN];
    int dif;
    char why[400];
    run(&sc, NULL, 0, xe, J, &dif, why);
    const double e = 0.5, mf = 1, mo = 1, T = 0.01, vf = 1.0, vo = 0.0, tau = 0.004;
    enum { N = 6 };
    double vcm = (mf * vf + mo * vo) / (mf + mo), vfp = (1 + e) * vcm - e * vf,
           vop = (1 + e) * vcm - e * vo;
    /* R_x over (x_f, v_f, x_o, v_o, impulse, work) */
    double Rx[N][N] = {{0}};
    Rx[0][2] = 1;                                        /* x_f+ = x_o */
    Rx[1][1] = (1 + e) * mf / (mf + mo) - e;             /* v_f+ */
    Rx[1][3] = (1 + e) * mo / (mf + mo);
    Rx[2][2] = 1;
    Rx[3][1] = (1 + e) * mf / (mf + mo);                 /* v_o+ */
    Rx[3][3] = (1 + e) * mo / (mf + mo) - e;
    Rx[4][4] = 1, Rx[5][5] = 1;                          /* impulse += (1+e) mu (v_f - v_o) */
    Rx[4][1] = (1 + e) * mf * mo / (mf + mo), Rx[4][3] = -Rx[4][1];
    double fm[N] = {vf, 0, vo, 0, 0, 0}, fp[N] = {vfp, 0, vop, 0, 0, 0};
    double gx[N] = {-1, 0, 1, 0, 0, 0}, gf = 0;
    for (int k = 0; k < N; k++)
        gf += gx[k] * fm[k];
    double S[N][N], F1[N][N] = {{0}}, F2[N][N] = {{0}};
    for (int i = 0; i < N; i++) {
        double rf = 0;
        for (int k = 0; k < N; k++)
            rf += Rx[i][k] * fm[k];
        for (int j = 0; j < N; j++)
            S[i][j] = Rx[i][j] + (fp[i] - rf) * gx[j] / gf;
        F1[i][i] = F2[i][i] = 1;
    }
    F1[0][1] = F1[2][3] = tau;     /* the free flow up to the touch (the object at rest,
                                      which nothing holds: moved, it glides) */
    F2[0][1] = F2[2][3] = T - tau; /* and after it */
    double closed[N][N], without[N][N], tmp[N][N], tmp2[N][N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            tmp[i][j] = tmp2[i][j] = 0;
            for (int k = 0; k < N; k++) {
                tmp[i][j] += S[i][k] * F1[k][j];
                tmp2[i][j] += Rx[i][k] * F1[k][j];
            }
        }
    double err = 0, off = 0, scale = 0;
    int ncol = N + 1 + 2;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            closed[i][j] = without[i][j] = 0;
            for (int k = 0; k < N; k++) {
                closed[i][j] += F2[i][k] * tmp[k][j];
                without[i][j] += F2[i][k] * tmp2[k][j];
            }
            err = fmax(err, fabs(J[i * ncol + j] - closed[i][j]));
            off = fmax(off, fabs(without[i][j] - closed[i][j]));
            scale = fmax(scale, fabs(closed[i][j]));
        }
    printf("finger touch: Jacobian vs closed-form saltation max rel error %.2e; the flow's "
           "sensitivity with the jump's Jacobian but no saltation correction is off by %.3f "
           "(relative %.2f)\n",
           err / scale, off, off / scale);
    printf("  e.g. d x_f(T) / d x_f(0): closed form %.6f, computed %.6f, without saltation "
           "%.6f\n",
           closed[0][0], J[0], without[0][0]);
    CHECK(err / scale <= 1e-6, "closed form: %.3g", err / scale);
    if (err / scale > 1e-6)
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < N; j++)
                fprintf(stderr, " %9.5f/%9.5f", J[i * ncol + j], closed[i][j]);
            fprintf(stderr, "\n");
        }
    CHECK(off / scale > 0.1, "the correction matters here (%.3g)", off / scale);
}

/* pushed together, kinetic friction stops them, static friction holds them: stop then stick */
static void test_stop_and_stick(void)
{
    const rs_param_t p[] = {{"finger", "object_x0", ZERO, 1}, {"finger", "finger_v0", V02, 1},
                            {"finger", "object_v0", V02, 1}};
    /* the bodies together (x_f + x_o, v_f + v_o), the others alone: 6 + 1 + 6 columns */
    static const double dirs[][MAXC] = {
        {1, 0, 1}, {0, 1, 0, 1}, {0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 1},
        {[6] = 1}, {[7] = 1}, {[8] = 1}, {[9] = 1}, {[10] = 1}, {[11] = 1}, {[12] = 1}};
    scenario_t sc = {"finger, slide -> stop -> stick", "finger", p, 3, {0.3}, 30, FINGER_P, 6,
                     11, dirs};
    check_against_fd(&sc, 1e-5, 1e-6);
}

static void test_grazing(void)
{
    /* at rest, a gap of 1e-13 m, pushed: the touch comes at a closing speed ~ sqrt(2 a gap) */
    const rs_param_t p[] = {{"finger", "object_x0", TINY_GAP, 1}};
    scenario_t sc = {"finger, grazing touch", "finger", p, 1, {1.0}, 1, NULL, 0, 0, NULL};
    double J[MAXN * MAXC], x[MAXN];
    int dif = 1;
    char why[400] = "";
    run(&sc, NULL, 0, x, J, &dif, why);
    printf("grazing touch: differentiable %d: %s\n", dif, why);
    CHECK(!dif && strstr(why, "grazing"), "grazing reported: %d '%s'", dif, why);
}

static const double Y0[] = {0.6}, VY0[] = {-1.0};

static void test_brick(void)
{
    /* a flat drop: two corners touch at once, a tilt would separate them: no derivative */
    const rs_param_t p[] = {{"brick", "y0", Y0, 1}, {"brick", "vy0", VY0, 1}};
    scenario_t sc = {"brick, flat drop", "brick_drop", p, 2, {0.0}, 40, NULL, 0, 0, NULL};
    double J[MAXN * MAXC], x[MAXN];
    int dif = 1;
    char why[400] = "";
    run(&sc, NULL, 0, x, J, &dif, why);
    printf("brick flat drop: differentiable %d: %s (events: %s)\n", dif, why, last_events);
    CHECK(!dif && strstr(why, "simultaneous"), "flat drop reported: %d '%s'", dif, why);
    /* along the vertical (y, vy) both corners land together whatever the change: there the
     * derivative exists and is the bouncing body's closed form Phi(T - tau) S Phi(tau),
     * S = [[-e, 0], [-(1 + e) g / v-, -e]] for (y, vy), v- the landing speed (negative) */
    {
        rs_world_t *w = make(&sc);
        const rs_model_t *m = w->model;
        double g = rs_model_param(m, 0, "gravity", 0), h = rs_model_param(m, 0, "height", 0);
        double e = (rs_model_param(m, 0, "restitution", 0) +
                    rs_model_param(m, 0, "ground_restitution", 0)) / 2;
        double T = (double)sc.steps * m->control_dt, y0 = Y0[0] - h / 2, v0 = VY0[0];
        double tau = (v0 + sqrt(v0 * v0 + 2 * g * y0)) / g, vm = v0 - g * tau;
        double S[2][2] = {{-e, 0}, {-(1 + e) * g / vm, -e}}, A[2][2], C[2][2];
        double F1[2][2] = {{1, tau}, {0, 1}}, F2[2][2] = {{1, T - tau}, {0, 1}};
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                A[i][j] = S[i][0] * F1[0][j] + S[i][1] * F1[1][j];
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                C[i][j] = F2[i][0] * A[0][j] + F2[i][1] * A[1][j];
        const int idx[2] = {1, 4}; /* y, vy */
        int ncol = 7;
        double err = 0, off = 0;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                double jv = J[idx[i] * ncol + idx[j]];
                /* Phi(T - tau) R_x Phi(tau), R_x = diag(1, -e): the jump alone */
                double no_salt = i == j                ? (i == 0 ? 1 : -e)
                                 : i == 0 && j == 1 ? tau - e * (T - tau)
                                                    : 0;
                err = fmax(err, fabs(jv - C[i][j]) / fmax(1, fabs(C[i][j])));
                off = fmax(off, fabs(no_salt - C[i][j]));
            }
        printf("brick flat drop, (y, vy) block: Jacobian vs closed-form saltation max rel "
               "error %.2e (e %.3g, landing speed %.4f m/s at %.6f s); without the saltation "
               "correction off by %.3f; the theta and omega columns: %s\n",
               err, e, vm, tau, off, isnan(J[2]) && isnan(J[5]) ? "NaN (undefined)" : "numbers");
        CHECK(err <= 1e-6, "flat drop closed form: %.3g", err);
        CHECK(off > 0.1, "the correction matters (%.3g)", off);
        CHECK(isnan(J[2]) && isnan(J[5]), "the tilt's columns are undefined");
        CHECK(!isnan(J[1 * ncol + 1]) && !isnan(J[1 * ncol + 0]), "the others are defined");
        rs_world_destroy(&w);
    }
    /* a tilted drop: one corner at a time; against finite differences */
    static const double TH0[] = {0.3};
    const rs_param_t pt[] = {{"brick", "y0", Y0, 1}, {"brick", "vy0", VY0, 1},
                             {"brick", "theta0", TH0, 1}};
    static const char *const BP[] = {"brick.restitution"};
    scenario_t st = {"brick, tilted drop (corner impact)", "brick_drop", pt, 3, {0.0}, 26, BP,
                     1, 0, NULL};
    check_against_fd(&st, 1e-5, 1e-6);
}

static void test_refused(void)
{
    const rs_param_t p[] = {{"finger", "contact_model", TS, 1}};
    rs_status_t st;
    rs_world_t *w = rs_world_new("finger", p, 1, 1, &st);
    CHECK(w != NULL, "create: %s", st.message);
    if (!w)
        return;
    rs_sens_t *s = rs_sens_new(w->model, w->data, NULL, 0, &st);
    CHECK(!s && st.code == RS_EUNIMPL && strstr(st.message, "finger") &&
              strstr(st.message, "time_stepping"),
          "time stepping refused by name: %s", st.message);
    const char *bad[] = {"finger.nosuch"};
    rs_world_t *h = rs_world_new("finger", NULL, 0, 1, &st);
    s = rs_sens_new(h->model, h->data, bad, 1, &st);
    CHECK(!s && st.code == RS_ENOTFOUND && strstr(st.message, "nosuch"), "bad param: %s",
          st.message);
    rs_world_destroy(&h);
    rs_world_destroy(&w);
    (void)ONE;
}

/* every preset's robots under the hybrid formulation, driven by a fifth of each actuator's
 * range (or 0.2) for a few steps from the preset's start, against finite differences */
static void test_every_preset(void)
{
    for (const char *const *name = rs_preset_names(); *name; name++) {
        rs_status_t st;
        rs_world_t *w = rs_world_new(*name, NULL, 0, 1, &st);
        CHECK(w != NULL, "%s: %s", *name, st.message);
        if (!w)
            continue;
        const rs_model_t *m = w->model;
        int n = m->nx, nu = m->nu;
        if (n > MAXN || n + nu > MAXC || nu > 8) {
            printf("%-34s n %d, m %d: larger than this test's arrays, skipped\n", *name, n, nu);
            rs_world_destroy(&w);
            continue;
        }
        scenario_t sc = {*name, *name, NULL, 0, {0}, 2, NULL, 0, 0, NULL};
        for (int e = 0, a = 0; e < m->nentities; e++)
            for (int k = 0; k < m->ent[e].nu; k++, a++) {
                double hi = m->ent[e].robot->actuators[k].upper;
                sc.u[a] = isfinite(hi) && hi < 1e3 ? 0.2 * hi : 0.2;
            }
        /* the passive base starts stuck (v = w = 0 held by its rolling resistance): a change of
         * its speed to one side leaves the mode, where the Jacobian is the stuck mode's
         * one-sided derivative and a central difference is not; its speed columns are left out.
         * So are the variables a robot says its mode holds at the start (rs_robot_t.holds: a
         * stuck object's velocity): moved either way they come back within a time of the order
         * of the change, so the Step's derivative along them is 0 while the state moves by the
         * square of the change, a bias of the order of the step in a central difference; their
         * columns are checked to be 0 instead */
        static double dirs[MAXC][MAXC];
        int stuck = strcmp(*name, "mobile_manipulator_passive") == 0;
        int held[MAXC] = {0}, nheld = 0;
        for (int e = 0; e < m->nentities; e++)
            for (int i = 0; m->ent[e].robot->holds && i < m->ent[e].nx; i++)
                if (m->ent[e].robot->holds(&m->ent[e], &w->data->ent[e],
                                           w->data->x + m->ent[e].x_off, i))
                    held[m->ent[e].x_off + i] = 1, nheld++;
        if (stuck || nheld) {
            int ncol = n + nu;
            memset(dirs, 0, sizeof dirs);
            for (int c = 0, k = 0; c < ncol; c++) {
                const char *vn =
                    stuck && c < n ? rs_robot_find("mobile_manipulator")->state[c].name : "";
                if (strcmp(vn, "base_v") == 0 || strcmp(vn, "base_w") == 0 || held[c])
                    continue;
                dirs[k++][c] = 1;
                sc.ndir = k;
            }
            sc.dirs = (const double(*)[MAXC])dirs;
        }
        if (nheld) { /* the held columns of the Jacobian itself: 0 */
            double x0[MAXN], Jfull[MAXN * MAXC], worst_held = 0;
            int dif0 = 0;
            char why0[400];
            run(&sc, NULL, 0, x0, Jfull, &dif0, why0);
            for (int i = 0; i < n; i++)
                for (int c = 0; c < n; c++)
                    if (held[c])
                        worst_held = fmax(worst_held, fabs(Jfull[i * (n + nu) + c]));
            CHECK(worst_held == 0.0, "%s: the Jacobian's columns of the %d held variables are 0 "
                  "(largest entry %g)", *name, nheld, worst_held);
        }
        rs_world_destroy(&w);
        double J[MAXN * MAXC], F[MAXN * MAXC], err = 0;
        int nn = 0, dif = 0;
        char why[400];
        compare(&sc, 1e-4, J, F, &nn, &err, &dif, why);
        printf("%-34s n %d, m %d: Jacobian vs finite differences, max rel error %.2e; events: "
               "%s%s%s\n",
               *name, nn, nu, err, n_last_events ? last_events : "none",
               dif ? "" : "; not differentiable: ", dif ? "" : why);
        CHECK(!dif || err <= (n_last_events ? 1e-6 : 1e-7),
              "%s: %.3g at row %d column %d: %g vs %g", *name, err, worst_row, worst_col,
              J[worst], F[worst]);
    }
}

/* ---- the robots' right-hand-side Jacobians (rs_robot_t.jacobian) -------------------------- */

static uint64_t lcg = 0x9E3779B97F4A7C15ull;

static double uniform(double lo, double hi)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(lcg >> 11) * 0x1.0p-53;
}

/* derivs of entity em at (x, u) in ed's mode, into f */
static void rhs(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                const double *u, double *f)
{
    em->robot->derivs(em, ed, 0.0, x, u, f);
}

/* d derivs / d z_c by the five-point central difference (error O(h^4), rounding eps |f| / h:
 * both below 1e-11 relative at h = 1e-4 max(1, |z|)); c < nx a state, < nx + nu a command, else
 * the parameter slot `slot` (its model recompiled) */
static void five_point(const rs_entity_model_t *em, const rs_entity_data_t *ed, const double *x,
                       const double *u, int c, int slot, double *col)
{
    int nx = em->nx, nu = em->nu;
    double z = c < nx ? x[c] : c < nx + nu ? u[c - nx] : em->p[slot];
    double h = 1e-4 * fmax(1.0, fabs(z)), f[4][MAXN];
    static const double k[4] = {-2, -1, 1, 2};
    for (int s = 0; s < 4; s++) {
        double xp[MAXN], up[8];
        memcpy(xp, x, (size_t)nx * sizeof *xp);
        memcpy(up, u, (size_t)nu * sizeof *up);
        rs_entity_model_t mp = *em;
        if (c < nx)
            xp[c] += k[s] * h;
        else if (c < nx + nu)
            up[c - nx] += k[s] * h;
        else {
            mp.p[slot] += k[s] * h;
            if (mp.robot->compile)
                mp.robot->compile(&mp);
        }
        rhs(&mp, ed, xp, up, f[s]);
    }
    for (int i = 0; i < nx; i++)
        col[i] = ((f[0][i] - f[3][i]) - 8.0 * (f[1][i] - f[2][i])) / (12.0 * h); /* a constant:
                                                                          exactly 0 */
}

/* The jacobian of each entity of preset `preset` (with parameters p) at random states, commands
 * and wrenches in every mode against five-point differences of derivs: every entry within 1e-8
 * of its row's largest; the parameters it covers likewise. The modes in `required` (bit m: mode
 * m) must give one. Returns the modes checked. */
static int check_rhs_jacobian(const char *preset, const rs_param_t *p, size_t np, int samples,
                              unsigned required)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new(preset, p, np, 1, &st);
    CHECK(w != NULL, "%s: %s", preset, st.message);
    if (!w)
        return 0;
    int checked = 0;
    for (int e = 0; e < w->model->nentities; e++) {
        const rs_entity_model_t *em = &w->model->ent[e];
        const rs_robot_t *r = em->robot;
        if (!r->jacobian)
            continue;
        int nx = em->nx, nu = em->nu, slot[RS_MAX_PARAMS], nq = 0;
        for (int i = 0; i < r->np && nq < RS_MAX_PARAMS; i++) /* every scalar parameter */
            if (r->params[i].len_max == 1 && em->plen[i] == 1)
                slot[nq++] = r->params[i].offset;
        int ld = nx + nu + nq, covered = 0;
        double worst_err = 0;
        for (int mode = 0; mode < r->nmodes; mode++) {
            int given = 0;
            for (int k = 0; k < samples; k++) {
                rs_entity_data_t ed = w->data->ent[e];
                ed.mode = mode;
                for (int a = 0; a < r->naux; a++) {
                    const rs_aux_desc_t *ad = &r->aux_vars[a];
                    if (ad->kind == RS_AUX_SIGN)
                        ed.aux[a] = uniform(0, 1) < 0.5 ? -1.0 : 1.0;
                    else if (ad->kind == RS_AUX_INTEGER)
                        ed.aux[a] = floor(uniform(ad->lower, ad->upper + 1.0));
                }
                for (int i = 0; i < RS_WRENCH_MAX; i++)
                    ed.wrench[i] = k % 2 ? uniform(-0.5, 0.5) : 0.0;
                double x[MAXN], u[8], J[MAXN * (MAXN + 8 + RS_MAX_PARAMS)], col[MAXN];
                for (int i = 0; i < nx; i++)
                    x[i] = uniform(-1.5, 1.5);
                for (int a = 0; a < nu; a++)
                    u[a] = uniform(-1.0, 1.0);
                unsigned char known[RS_MAX_PARAMS] = {0};
                double f[MAXN], f0[MAXN];
                if (r->jacobian(em, &ed, 0.0, x, u, nq, slot, f, J, ld, known) < 0)
                    continue;
                given++;
                rhs(em, &ed, x, u, f0);
                for (int i = 0; i < nx; i++)
                    CHECK(fabs(f[i] - f0[i]) <= 1e-12 * (1.0 + fabs(f0[i])),
                          "%s: %s mode %s: %s' %.17g, derivs %.17g", preset, r->kind,
                          r->mode_names[mode], r->state[i].name, f[i], f0[i]);
                for (int c = 0; c < ld; c++) {
                    if (c >= nx + nu && !known[c - nx - nu])
                        continue;
                    covered += c >= nx + nu && k == 0 && mode == 0;
                    five_point(em, &ed, x, u, c, c >= nx + nu ? slot[c - nx - nu] : -1, col);
                    for (int i = 0; i < nx; i++) {
                        double scale = 0;
                        for (int cc = 0; cc < nx; cc++) /* the row's largest state partial */
                            scale = fmax(scale, fabs(J[i * ld + cc]));
                        double err = fabs(J[i * ld + c] - col[i]) / fmax(fmax(scale, fabs(col[i])), 1e-6);
                        worst_err = fmax(worst_err, err);
                        CHECK(err <= 1e-8,
                              "%s: %s mode %s, d %s' / d column %d: %.12g vs differences %.12g",
                              preset, r->kind, r->mode_names[mode], r->state[i].name, c,
                              J[i * ld + c], col[i]);
                    }
                }
            }
            CHECK(!(required >> mode & 1) || given == samples,
                  "%s: %s gives no Jacobian in mode %s", preset, r->kind, r->mode_names[mode]);
            checked += given > 0;
        }
        printf("%-34s %s: right-hand-side Jacobian vs five-point differences in %d modes, "
               "%d parameters: max rel error %.2e (bound 1e-8)\n",
               preset, r->kind, checked, covered, worst_err);
        CHECK(covered > 0, "%s: the parameters' columns were not exercised", preset);
    }
    rs_world_destroy(&w);
    return checked;
}

static void test_rhs_jacobians(void)
{
    static const double LIN[] = {0}, QUAD[] = {1}, ART[] = {1}, COUL[] = {0}, FS[] = {1.3},
                        FK[] = {0.6}, CO[] = {0.3}, PID[] = {1, 1}, TORQ[] = {0, 0},
                        MIX[] = {1, 0}, MUD[] = {0.05, 0.02}, MUV[] = {0.01, 0.03},
                        LC[] = {0.06}, INERTIA[] = {0.002}, TAU[] = {5, 5};
    for (int law = 0; law < 4; law++) { /* drag laws and friction laws */
        const rs_param_t fp[] = {{"finger", "finger_drag_law", law & 1 ? QUAD : LIN, 1},
                                 {"finger", "object_drag_law", law & 1 ? LIN : QUAD, 1},
                                 {"finger", "friction_law", law & 2 ? ART : COUL, 1},
                                 {"finger", "static_friction", FS, 1},
                                 {"finger", "kinetic_friction", FK, 1},
                                 {"finger", "object_drag", CO, 1}};
        /* all four hybrid modes (not time_stepping, compliant) */
        CHECK(check_rhs_jacobian("finger", fp, 6, 20, 0xfu) == 4, "finger: four modes");
    }
    /* the brick: flight, sliding, stuck, pivot, corner sliding, failed (not time_stepping,
     * compliant) */
    CHECK(check_rhs_jacobian("brick_drop", NULL, 0, 10, 0xe7u) == 6, "brick: six modes");
    /* the differential drive: free and blocked */
    CHECK(check_rhs_jacobian("diff_drive", NULL, 0, 10, 0x3u) == 2, "diff drive: two modes");
    const double *modes[] = {PID, TORQ, MIX};
    for (int k = 0; k < 3; k++) {
        const rs_param_t ap[] = {{"arm", "actuator_mode", modes[k], 2},
                                 {"arm", "mu_D", MUD, 2},
                                 {"arm", "mu_V", MUV, 2},
                                 {"arm", "tau_max", TAU, 2},
                                 {"arm", "lc1", LC, 1},
                                 {"arm", "I2", INERTIA, 1}};
        CHECK(check_rhs_jacobian("serial_arm", ap, k == 2 ? 6 : 4, 10, 0xffffu) == 16,
              "serial arm: the sixteen joint modes");
    }
}

/* The same Step's Jacobian with the robots' own right-hand-side Jacobians and with central
 * differences of derivs (the fallback for robots without one) agree to 1e-8 relative. */
static void test_analytic_vs_differences(void)
{
    const rs_param_t fp[] = {{"finger", "object_x0", GAP, 1}, {"finger", "finger_v0", V1, 1}};
    static const double TH03[] = {0.3};
    const rs_param_t bp[] = {{"brick", "y0", Y0, 1}, {"brick", "vy0", VY0, 1},
                             {"brick", "theta0", TH03, 1}};
    static const char *const ARM_P[] = {"arm.m1", "arm.gravity", "arm.kP[0]"};
    static const char *const BRICK_P[] = {"brick.mass", "brick.gravity", "brick.friction"};
    static const char *const DD_P[] = {"robot.wheel_radius"};
    struct {
        const char *preset;
        const rs_param_t *p;
        size_t np;
        double u[2];
        const char *const *jp;
        size_t q;
        uint64_t steps;
    } cases[] = {{"finger", fp, 2, {0.2}, FINGER_P, 6, 10},
                 {"serial_arm", NULL, 0, {0.4, -0.2}, ARM_P, 3, 10},
                 {"brick_drop", bp, 3, {0.0}, BRICK_P, 3, 30},
                 {"diff_drive", NULL, 0, {1.0, 0.5}, DD_P, 1, 10}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        double J[2][MAXN * MAXC];
        int ncol = 0, n = 0;
        for (int diff = 0; diff < 2; diff++) {
            rs_status_t st;
            rs_world_t *w = rs_world_new(cases[k].preset, cases[k].p, cases[k].np, 1, &st);
            CHECK(w != NULL, "%s", st.message);
            if (!w)
                return;
            rs_data_t *d = w->data;
            CHECK_OK(rs_set_all_commands(w->model, d, cases[k].u, &st), st);
            rs_sens_t *s = rs_sens_new(w->model, d, cases[k].jp, cases[k].q, &st);
            CHECK(s != NULL, "%s", st.message);
            if (!s)
                return;
            rs_sens_use_differences(s, diff);
            d->hooks = rs_sens_hooks(s);
            CHECK_OK(rs_step(w->model, d, cases[k].steps, &st), st);
            d->hooks = NULL;
            int nc, q, dif;
            const double *phi;
            const char *why;
            CHECK_OK(rs_sens_result(s, &n, &nc, &q, &phi, &dif, &why, &st), st);
            CHECK(dif, "%s: %s", cases[k].preset, why);
            ncol = n + nc + q;
            memcpy(J[diff], phi, (size_t)n * ncol * sizeof *phi);
            rs_sens_destroy(&s);
            rs_world_destroy(&w);
        }
        double err = 0, scale = 0;
        for (int i = 0; i < n * ncol; i++)
            scale = fmax(scale, fabs(J[1][i]));
        for (int i = 0; i < n * ncol; i++)
            err = fmax(err, fabs(J[0][i] - J[1][i]) / scale);
        printf("%-34s a Step's Jacobian with the robot's right-hand-side Jacobian vs with "
               "differences of derivs: max rel difference %.2e (bound 1e-8)\n",
               cases[k].preset, err);
        CHECK(err <= 1e-8, "%s: %.3g", cases[k].preset, err);
    }
}

int main(void)
{
    test_every_preset();
    test_free_flight();
    test_serial_arm();
    test_touch_closed_form();
    test_stop_and_stick();
    test_grazing();
    test_brick();
    test_refused();
    test_rhs_jacobians();
    test_analytic_vs_differences();
    return rs_test_done("test_sensitivity");
}
