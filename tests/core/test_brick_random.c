/* The brick's invariants on randomized, seeded scenarios under each contact formulation: any
 * pose theta in [0, 2 pi), height, velocities, spin, size, restitution and friction within the
 * parameters' bounds. At every control step: finite state; no corner below the ground beyond
 * the formulation's tolerance; mechanical energy never rises (no actuator acts; compliant:
 * the layer's spring energy counted); no impact adds kinetic energy; and a brick with low
 * restitution, friction that can hold it and an aspect ratio of 0.3 or more comes to rest on
 * a face within 5 s.
 *
 * Each scenario is made from its own seed (base seed + index): a failure prints it, and
 *   BRICK_SEED=<seed> BRICK_MODEL=<0|1|2> ./test_brick_random
 * runs that one scenario alone. BRICK_SCENARIOS=<n> runs n per formulation (a soak). */
#include "rs_robot.h"
#include "rs_test.h"
#include "world_with.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { X, Y, TH, VX, VY, W };

#define BASE_SEED 0x6272696b00000000ULL /* "brik" */
#define STEPS 500                      /* 5 s at control_dt 0.01 */
#define DT 0.01
#define G 9.81

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(splitmix64(s) >> 11) * 0x1.0p-53;
}

typedef struct scenario {
    int model;
    double w, h, theta, clearance, vx, vy, omega, e, mu;
} scenario_t;

static scenario_t draw(int model, uint64_t seed)
{
    uint64_t s = seed;
    scenario_t c = {.model = model};
    c.w = uniform(&s, 0.05, 0.4);
    c.h = uniform(&s, 0.02, 0.3);
    c.theta = uniform(&s, 0.0, 2.0 * M_PI);
    c.clearance = uniform(&s, 0.0, 0.6);
    c.vx = uniform(&s, -2.0, 2.0);
    c.vy = uniform(&s, -2.0, 2.0);
    c.omega = uniform(&s, -15.0, 15.0);
    c.e = uniform(&s, 0.0, 1.0);
    /* mostly below 4/3 (no Painleve paradox for any rectangle); some above it, where the
     * hybrid and compliant formulations may stop with an error */
    c.mu = uniform(&s, 0.0, 1.0) < 0.85 ? uniform(&s, 0.0, 1.3) : uniform(&s, 1.3, 3.0);
    if (uniform(&s, 0.0, 1.0) < 0.1)
        c.omega = 0.0, c.vx = 0.0; /* a plain tilted drop */
    return c;
}

typedef struct run_stats {
    long steps, impacts, painleve, rested, rest_required;
    double max_pen, max_rise, max_impact_gain;
} run_stats_t;

static double inertia(const scenario_t *c) { return (c->w * c->w + c->h * c->h) / 12.0; }

static double lowest_corner(const scenario_t *c, const double *x)
{
    double lo = INFINITY;
    for (int i = 0; i < 4; i++) {
        double sx = (i == 1 || i == 2) ? 0.5 : -0.5, sy = i >= 2 ? 0.5 : -0.5;
        double ry = sin(x[TH]) * sx * c->w + cos(x[TH]) * sy * c->h;
        lo = fmin(lo, x[Y] + ry);
    }
    return lo;
}

static double kinetic(const scenario_t *c, const double *x)
{
    return 0.5 * (x[VX] * x[VX] + x[VY] * x[VY] + inertia(c) * x[W] * x[W]);
}

/* compliant: the layer's stored energy, sum of k d^2 / 2 over the corners inside (m = 1) */
static double spring(const scenario_t *c, const double *x, double k, double pad)
{
    double e = 0.0;
    for (int i = 0; i < 4; i++) {
        double sx = (i == 1 || i == 2) ? 0.5 : -0.5, sy = i >= 2 ? 0.5 : -0.5;
        double d = pad - (x[Y] + sin(x[TH]) * sx * c->w + cos(x[TH]) * sy * c->h);
        if (d > 0.0)
            e += 0.5 * k * d * d;
    }
    return e;
}

static double energy(const scenario_t *c, const double *x, double k, double pad)
{
    return kinetic(c, x) + G * x[Y] + (c->model == 2 ? spring(c, x, k, pad) : 0.0);
}

/* at rest on a face: flat, no speed, both corners of the bottom face at the contact surface */
static int on_face(const scenario_t *c, const double *x, const char *mode, double surface,
                   double tol)
{
    double k = nearbyint(x[TH] / (0.5 * M_PI)), half = fmod(fabs(k), 2.0) == 0.0 ? 0.5 * c->h
                                                                               : 0.5 * c->w;
    if (c->model == 0)
        return !strcmp(mode, "stuck") && x[TH] == k * 0.5 * M_PI && x[Y] == half && x[VX] == 0.0;
    return fabs(x[TH] - k * 0.5 * M_PI) < tol && fabs(x[Y] - half - surface) < tol * c->w &&
           fabs(x[VX]) + fabs(x[VY]) + fabs(x[W]) * c->w < tol;
}

/* Run one scenario; 0 if every invariant held. */
static int run(uint64_t seed, int model, run_stats_t *rs, int verbose)
{
    scenario_t c = draw(model, seed);
    if (model == 2) /* compliant serves a blended friction up to 1 (brick_validate) */
        c.mu = fmin(c.mu, 1.0);
    double y0 = c.clearance + 0.5 * (fabs(sin(c.theta)) * c.w + fabs(cos(c.theta)) * c.h);
    double k = 1e6, pad = 0.0025; /* the preset's compliant layer (harmonic mean of 1e6, 1e6) */
    rs_world_t *w = world_with(
        "brick_drop", "brick",
        (kv_t[]){{"contact_model", model}, {"width", c.w}, {"height", c.h}, {"theta0", c.theta},
                 {"y0", y0 + (model == 2 ? pad : 0.0)}, {"vx0", c.vx}, {"vy0", c.vy},
                 {"omega0", c.omega}, {"restitution", c.e}, {"ground_restitution", c.e},
                 {"friction", c.mu}, {"ground_friction", c.mu}, {"control_dt", DT}, {NULL, 0}});
    const double *x = w->data->x;
    double L = c.w + c.h, E0 = energy(&c, x, k, pad), hmin = 0.5 * fmin(c.w, c.h);
    /* penetration tolerances: hybrid, the root finding's (events leave a corner within
     * about 1e-13 m; contact modes are projected); time stepping, its linearisation (below);
     * compliant, the energy bound: the layer holds at most what was there,
     * k d^2 / 2 <= E0 - m g (hmin + pad - d) */
    double pen_tol = 1e-9 * L;
    if (model == 1) {
        /* time stepping: the gap linearised over a step, phi(q + h v) - (phi + h J v), is at
         * most R (h omega)^2 / 2 (R the half diagonal), omega bounded by the energy:
         * I omega^2 / 2 <= E0 - m g hmin; the next step pushes such a corner back out */
        double R = 0.5 * hypot(c.w, c.h), h = 1e-3;
        pen_tol += R * h * h * fmax(0.0, E0 - G * hmin) / inertia(&c);
    }
    if (model == 2) {
        double avail = fmax(0.0, E0 - G * (hmin + pad));
        pen_tol = (G + sqrt(G * G + 2.0 * k * avail)) / k - pad; /* below the ground itself */
        pen_tol = fmax(pen_tol, 0.0);
    }
    /* energy: the integrator's error over a step (rtol 1e-8 of the state: well below 1e-9 of
     * the energy's scale in contact modes; free flight is exact) */
    double e_tol = 1e-9 * (E0 + G * L) + 1e-12;
    int bad = 0, rested_at = -1;
    /* rest required at low restitution, with friction that holds, for a brick not slender: one
     * standing on a narrow face rocks from corner to corner keeping (1 - 3/2 sin^2 a)^2 of its
     * energy per impact (Housner 1963, a = atan of the aspect ratio) even when plastic */
    int need_rest = c.e <= 0.3 && c.mu >= 0.3 && fmin(c.w, c.h) >= 0.3 * fmax(c.w, c.h);
    rs_status_t st;
    char why[320] = "";
    double E = E0;
    for (int n = 0; n < STEPS && !bad; n++) {
        int rc = rs_step(w->model, w->data, 1, &st);
        rs->steps++;
        if (rc < 0) {
            /* the one failure allowed, only with friction above 4/3 and hybrid: Painleve's
             * paradox, reported by name, the state consistent and again on the next step
             * (compliant, where the layer would jam, does not take such friction) */
            int ok = c.mu > 4.0 / 3.0 && lowest_corner(&c, x) >= -pen_tol && model == 0 &&
                     strstr(st.message, "Painleve");
            rs_status_t st2; /* it holds: the next step fails the same way */
            ok = ok && rs_step(w->model, w->data, 1, &st2) == rc;
            if (ok) {
                rs->painleve++;
                need_rest = 0;
                break;
            }
            snprintf(why, sizeof why, "step %d failed: %s", n, st.message);
            bad = 1;
            break;
        }
        for (int i = 0; i < 6; i++)
            if (!isfinite(x[i])) {
                snprintf(why, sizeof why, "step %d: state %d not finite", n, i);
                bad = 1;
            }
        double lo = lowest_corner(&c, x);
        rs->max_pen = fmax(rs->max_pen, -lo / L);
        if (lo < -pen_tol) {
            snprintf(why, sizeof why, "step %d: corner %.3g m below the ground (tolerance %.3g, mode %s)",
                     n, -lo, pen_tol, rs_mode_name(w->model, w->data, 0));
            bad = 1;
        }
        double En = energy(&c, x, k, pad);
        rs->max_rise = fmax(rs->max_rise, (En - E) / (E0 + G * L));
        if (En > E + e_tol) {
            snprintf(why, sizeof why, "step %d: energy rose %.9g -> %.9g J (+%.3g, mode %s)", n, E,
                     En, En - E, rs_mode_name(w->model, w->data, 0));
            bad = 1;
        }
        E = En;
        for (int i = 0; i < w->data->nevents; i++) {
            const rs_event_t *ev = &w->data->events[i];
            if (strcmp(rs_event_kind_name(w->model, ev), "impact"))
                continue;
            rs->impacts++;
            double kb = kinetic(&c, ev->before), ka = kinetic(&c, ev->after);
            rs->max_impact_gain = fmax(rs->max_impact_gain, (ka - kb) / (kb + 1e-300));
            if (ka > kb * (1.0 + 1e-12) + 1e-15) {
                snprintf(why, sizeof why, "step %d: impact at t %.9g raised KE %.9g -> %.9g J", n,
                         ev->t, kb, ka);
                bad = 1;
            }
        }
        if (rested_at < 0 && on_face(&c, x, rs_mode_name(w->model, w->data, 0),
                                     model == 2 ? pad - G / (2 * k) : 0.0, 1e-6))
            rested_at = n;
        else if (rested_at >= 0 && n > rested_at + 20)
            break; /* rest seen and held: the rest of the 5 s adds nothing */
    }
    if (!bad && need_rest) {
        rs->rest_required++;
        if (rested_at < 0) {
            snprintf(why, sizeof why, "not at rest on a face after %g s (mode %s, x %g %g %g %g %g %g)",
                     STEPS * DT, rs_mode_name(w->model, w->data, 0), x[0], x[1], x[2], x[3],
                     x[4], x[5]);
            bad = 1;
        } else {
            rs->rested++;
        }
    }
    if (bad || verbose)
        fprintf(stderr,
                "%s scenario seed %" PRIu64 " model %d: %s\n  (BRICK_SEED=%" PRIu64
                " BRICK_MODEL=%d; w %.4g h %.4g theta %.6g y0 %.6g v %.4g %.4g omega %.4g e %.4g "
                "mu %.4g)\n",
                bad ? "FAILED" : "ok", seed, model, why, seed, model, c.w, c.h, c.theta, y0, c.vx,
                c.vy, c.omega, c.e, c.mu);
    rs_world_destroy(&w);
    return bad;
}

int main(void)
{
    const char *one = getenv("BRICK_SEED"), *count = getenv("BRICK_SCENARIOS");
    const int per_model[3] = {300, 200, 120};
    if (one) {
        run_stats_t rs = {0};
        int model = getenv("BRICK_MODEL") ? atoi(getenv("BRICK_MODEL")) : 0;
        CHECK(run(strtoull(one, NULL, 0), model, &rs, 1) == 0, "scenario failed");
        return rs_test_done("test_brick_random");
    }
    for (int model = 0; model < 3; model++) {
        run_stats_t rs = {0};
        int n = count ? atoi(count) : per_model[model], failed = 0;
        for (int i = 0; i < n; i++)
            failed += run(BASE_SEED + (uint64_t)(model * 1000000 + i), model, &rs, 0);
        CHECK(failed == 0, "model %d: %d of %d scenarios broke an invariant (seeds above)", model,
              failed, n);
        CHECK(rs.impacts > 0 || model != 0, "hybrid scenarios had impacts");
        CHECK(rs.rest_required > n / 10, "model %d: %ld scenarios had to come to rest", model,
              rs.rest_required);
        printf("model %d: %d scenarios, %d with a violation; %ld control steps, %ld impacts, "
               "%ld Painleve stops, %ld of %ld at rest on a face as required; deepest corner "
               "%.3g L, largest energy rise %.3g of the scale, largest impact KE gain %.3g\n",
               model, n, failed, rs.steps, rs.impacts, rs.painleve, rs.rested, rs.rest_required,
               rs.max_pen, rs.max_rise, rs.max_impact_gain);
    }
    return rs_test_done("test_brick_random");
}
