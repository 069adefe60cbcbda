/* Contact helpers: Klamp't's coefficient blending and a projected Gauss-Seidel impulse solver
 * for the contact-dynamics lecture's velocity-level complementarity problem (see contact.h).
 *
 * Solver choice: Debian offers no C library for this small LCP (checked with apt-cache search:
 * libdart-external-odelcpsolver is DART's C++ copy of ODE's Dantzig solver, tied to DART's
 * headers; r-cran-quadprog is an R package; qpOASES and OSQP are not packaged). A brick has
 * four contact points and three velocities, so a documented PGS is the proportionate tool; it
 * is checked against closed forms in tests/core/test_brick.c (flat drop rebound, sliding
 * distance, a resting brick's contact impulse m g h). */
#include "contact.h"

#include <math.h>

double rs_blend_arithmetic(double a, double b) { return 0.5 * (a + b); }

double rs_blend_harmonic(double a, double b)
{
    if (a <= 0.0 || b <= 0.0)
        return 0.0;
    if (isinf(a))
        return isinf(b) ? INFINITY : 2.0 * b; /* 2ab/(a+b) -> 2b as a -> inf */
    if (isinf(b))
        return 2.0 * a;
    return 2.0 * a * b / (a + b);
}

double rs_ts_substeps(double dt, double ts_step, double *h)
{
    double n = fmin(RS_TS_MAX_SUBSTEPS, fmax(1.0, ceil(dt / ts_step * (1.0 - 1e-12))));
    *h = dt / n;
    return n;
}

static double dot(int n, const double *a, const double *b)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* effective inverse mass of a row: j minv j^T */
static double row_mass_inverse(int n, const double *minv, const double *j)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += j[i] * minv[i] * j[i];
    return s;
}

static void apply(int n, const double *minv, const double *j, double dp, double *v)
{
    for (int i = 0; i < n; i++)
        v[i] += minv[i] * j[i] * dp;
}

int rs_contact_solve(int ndof, const double *minv, int nc, const rs_contact_point_t *pts,
                     double *v, double *pn, double *pt, int max_sweeps)
{
    double kn[RS_CONTACT_MAX_POINTS], kt[RS_CONTACT_MAX_POINTS];
    for (int c = 0; c < nc; c++) {
        pn[c] = pt[c] = 0.0;
        kn[c] = row_mass_inverse(ndof, minv, pts[c].jn);
        kt[c] = row_mass_inverse(ndof, minv, pts[c].jt);
    }
    int sweep = 0;
    while (sweep < max_sweeps) {
        sweep++;
        double change = 0.0, largest = 0.0;
        for (int c = 0; c < nc; c++) {
            const rs_contact_point_t *p = &pts[c];
            /* normal row: pn >= 0, jn.v+ >= vn_min, complementary */
            if (kn[c] > 0.0) {
                double next = fmax(0.0, pn[c] - (dot(ndof, p->jn, v) - p->vn_min) / kn[c]);
                double dp = next - pn[c];
                apply(ndof, minv, p->jn, dp, v);
                pn[c] = next;
                change = fmax(change, fabs(dp));
            }
            /* tangential row: the impulse stopping the slip, projected on [-mu pn, mu pn] */
            if (kt[c] > 0.0) {
                double bound = p->mu * pn[c] + p->ft_max;
                double next = fmin(bound, fmax(-bound, pt[c] - dot(ndof, p->jt, v) / kt[c]));
                double dp = next - pt[c];
                apply(ndof, minv, p->jt, dp, v);
                pt[c] = next;
                change = fmax(change, fabs(dp));
            }
            largest = fmax(largest, fmax(pn[c], fabs(pt[c])));
        }
        if (change <= 1e-13 * largest || largest == 0.0)
            break;
    }
    return sweep;
}
