/* The contact-dynamics lecture's brick drop and the diff-drive bumper under the three contact
 * formulations, side by side. In-process; prints one table row per formulation and, with
 * --csv FILE, the
 * trajectories (t, formulation, x, y, theta, contact_fy) for bench/contact_compare.py's plot.
 *
 * Scenario: a 1 kg, 0.2 x 0.1 m brick dropped flat from y0 = 0.5 m (H = 0.45 m fall) with
 * vx0 = 1 m/s, restitution e = 0.5, friction mu = 0.5. Closed forms (rigid, Newton, Coulomb):
 *   impact at t1 = sqrt(2 H / g), speed v = g t1;
 *   the friction impulse mu (1 + e) m v = 2.2 N s exceeds m vx0 = 1 N s: vx = 0 after impact;
 *   rebound apex e^2 H above rest height; contact impulse m (1 + e) v.
 * Compliant: the preset's layer (padding 2.5 mm, k = 1e6 N/m, the damping set by the
 * restitution); its closed-form impact time is when the corners reach the padding surface,
 * sqrt(2 (H - pad) / g).
 *
 * With --tilted N [SEED], random tilted drops instead: N seeded drops per formulation (see
 * tilted_rows), one CSV line per drop on stdout for bench/contact_compare.py's table.
 *
 * Columns:
 *   impact_err   first contact event time minus the closed form (s);
 *   max_pen      deepest corner below its contact surface over the run, sampled every control
 *                step of 0.1 ms (m; compliant: compression of the padding);
 *   rebound_err  (first rebound apex - e^2 H) / (e^2 H), the energy kept by the impact
 *                (compliant: heights from where the corners meet the padding);
 *   impulse_err  (contact impulse up to the closed-form apex time - m (1 + e) v) / that, from
 *                the contact_fy sensor (the sensor force trace, integrated);
 *   us/step      CPU microseconds per 10 ms control step over a 2 s run (median of 5). */
#include "bench_util.h"
#include "bench_world.h"
#include "rs_montecarlo.h"
#include "rs_robot.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define G 9.81
static const char *const names[3] = {"hybrid", "time_stepping", "compliant"};

static rs_world_t *brick(int model, double control_dt)
{
    /* compliant: the damping follows from restitution (the brick's own law) */
    const char *n[] = {"contact_model", "vx0", "control_dt"};
    double v[] = {model, 1.0, control_dt};
    rs_param_t p[3];
    for (int i = 0; i < 3; i++)
        p[i] = (rs_param_t){i == 2 ? "" : "brick", n[i], &v[i], 1};
    rs_world_t *w = world_or_exit("brick_drop", p, 3, 1);
    return w;
}

/* The diff-drive robot (the example-systems chapter's, kinematic) driving head-on at 0.09 m/s
 * into a disk obstacle:
 * contact after reach / v; no energy or impulse (the robot has no mass), so those columns are
 * empty. Compliant: the padding is 0.0025 m, contact when the layer is reached, and its
 * penetration column is the depth into the layer (settles at c v / k = 0.0009 m). */
static rs_world_t *dd_world(int model, double control_dt)
{
    double obst[3] = {1.0, 0.0, 0.10}, m = model, u[2] = {1.0, 1.0};
    rs_param_t p[3] = {{"robot", "obstacles", obst, 3},
                       {"robot", "contact_model", &m, 1},
                       {"", "control_dt", &control_dt, 1}};
    rs_status_t st;
    rs_world_t *w = rs_world_new("diff_drive", p, 3, 1, &st);
    if (!w || rs_set_all_commands(w->model, w->data, u, &st) < 0) {
        fprintf(stderr, "core_contact: %s\n", st.message);
        exit(1);
    }
    return w;
}

/* The "1D Robot" article's finger (defaults: m_f = m_o = 1 kg, quadratic finger drag c = 1,
 * e = 0.5, F_static = 1 N) pushed by F = 2 N from rest 1.5 m before the object. Closed forms: with
 * quadratic drag x_f(t) = (m/c) ln cosh(t sqrt(F c) / m), so the touch is at
 * t1 = acosh(exp(1.5 c / m)) / sqrt(2) (compliant: 1.4975 m, the padding), at speed
 * v1 = sqrt(F/c) tanh(sqrt(F c) t1 / m); the impact on the resting object of equal mass keeps
 * the kinetic energy fraction (1 + e^2) / 2. The sensor trace error is the difference after
 * 3 s between the momentum the tip_force sensor reports passed through the tip (its trace
 * integrated, N s; a pointwise difference would only measure when each puts the impact's
 * spike) and hybrid's (whose tip force matches the closed forms in
 * tests/core/test_finger.c); the first impact alone passes m (1 + e) v1 / 2 = 1.2 N s. */
static rs_world_t *finger_world(int model, double control_dt)
{
    /* compliant: damping for e = 0.5 in a linear spring-damper, zeta = 2 c / (2 sqrt(k mu))
     * with the reduced mass mu = 0.5 kg and k = 1e4 N/m (blended values equal the bodies') */
    double lne = log(0.5), zeta = -lne / sqrt(M_PI * M_PI + lne * lne);
    double m = model, f = 2.0, c = 2.0 * zeta * sqrt(1e4 * 0.5);
    rs_param_t p[4] = {{"finger", "contact_model", &m, 1},
                       {"", "control_dt", &control_dt, 1},
                       {"finger", "finger_damping", &c, 1},
                       {"finger", "object_damping", &c, 1}};
    rs_status_t st;
    rs_world_t *w = rs_world_new("finger", p, 4, 1, &st);
    if (!w || rs_set_commands(w->model, w->data, 0, &f, 1, &st) < 0) {
        fprintf(stderr, "core_contact: %s\n", st.message);
        exit(1);
    }
    return w;
}

static void finger_rows(FILE *csv)
{
    enum { N = 30000 };
    static double trace[3][N];
    double e = 0.5;
    printf("\nfinger (\"1D Robot\" article): F = 2 N from 1.5 m, e = 0.5, m_f = m_o = 1 kg; "
           "control step 0.1 ms\n");
    printf("%-14s %12s %12s %12s %12s %10s\n", "formulation", "impact_err", "max_pen",
           "energy_err", "sensor_err", "us/step");
    for (int model = 0; model < 3; model++) {
        double dt = 1e-4, pad = model == 2 ? 0.0025 : 0.0;
        double t1 = acosh(exp(1.5 - pad)) / sqrt(2.0), v1 = sqrt(2.0) * tanh(sqrt(2.0) * t1);
        rs_world_t *w = finger_world(model, dt);
        rs_status_t st;
        double t_contact = NAN, max_pen = 0.0, ke_after = NAN;
        for (int k = 0; k < N; k++) {
            if (rs_step(w->model, w->data, 1, &st) < 0) {
                fprintf(stderr, "finger %s: %s\n", names[model], st.message);
                break;
            }
            const rs_data_t *d = w->data;
            for (int i = 0; i < d->nevents; i++) {
                const rs_event_t *ev = &d->events[i];
                const char *kind = rs_event_kind_name(w->model, ev);
                if (isnan(t_contact) && !strcmp(kind, "touch"))
                    t_contact = ev->t;
                /* the end of the first impact: hybrid's bounce, the others' separation */
                if (isnan(ke_after) && (!strcmp(kind, "bounce") || !strcmp(kind, "separate")))
                    ke_after = 0.5 * (ev->after[1] * ev->after[1] + ev->after[3] * ev->after[3]);
            }
            max_pen = fmax(max_pen, pad - (d->x[2] - d->x[0]));
            trace[model][k] = (k ? trace[model][k - 1] : 0.0) + d->sensors[0] * dt;
            if (csv && k % 10 == 0)
                fprintf(csv, "finger:%s,%.6f,%.9g,%.9g,%.9g,%.9g\n", names[model], d->t,
                        d->x[0], d->x[2], d->x[3], d->sensors[0]);
        }
        rs_world_destroy(&w);
        double sensor_err = fabs(trace[model][N - 1] - trace[0][N - 1]);
        double ke_exact = 0.5 * v1 * v1 * (1 + e * e) / 2;
        double cost[5];
        for (int r = 0; r < 5; r++) {
            rs_world_t *c = finger_world(model, 0.01);
            double c0 = cpu_now();
            rs_step(c->model, c->data, 300, &st);
            cost[r] = (cpu_now() - c0) / 300 * 1e6;
            rs_world_destroy(&c);
        }
        qsort(cost, 5, sizeof cost[0], by_value);
        printf("%-14s %12.3e %12.3e %12.3e %12.3e %10.2f\n", names[model], t_contact - t1,
               max_pen, (ke_after - ke_exact) / ke_exact, sensor_err, cost[2]);
    }
}

static void diff_drive_rows(FILE *csv)
{
    double v = 0.09, reach = 0.75, pad = 0.0025;
    printf("\ndiff-drive bumper (example-systems chapter): 0.09 m/s head-on into a disk, "
           "contact at x = 0.75 m "
           "(compliant: 0.7475, the padding)\n");
    printf("%-14s %12s %12s %10s\n", "formulation", "impact_err", "max_pen", "us/step");
    for (int model = 0; model < 3; model++) {
        double dt = 1e-3, surface = model == 2 ? reach - pad : reach;
        rs_world_t *w = dd_world(model, dt);
        rs_status_t st;
        double t_contact = NAN, max_pen = 0.0;
        for (int k = 0; k < 10000; k++) {
            if (rs_step(w->model, w->data, 1, &st) < 0) {
                fprintf(stderr, "%s: %s\n", names[model], st.message);
                break;
            }
            const rs_data_t *d = w->data;
            for (int i = 0; i < d->nevents; i++)
                if (isnan(t_contact) && !strcmp(rs_event_kind_name(w->model, &d->events[i]), "contact"))
                    t_contact = d->events[i].t;
            max_pen = fmax(max_pen, d->x[0] - surface);
            if (csv && k % 10 == 0 && d->t > 7.5)
                fprintf(csv, "diff_drive:%s,%.6f,%.9g,%.9g,%.9g,%.9g\n", names[model], d->t,
                        d->x[0], d->x[1], d->x[2], d->sensors[0]);
        }
        rs_world_destroy(&w);
        double cost[5];
        for (int r = 0; r < 5; r++) {
            rs_world_t *c = dd_world(model, 0.01);
            double c0 = cpu_now();
            rs_step(c->model, c->data, 1000, &st);
            cost[r] = (cpu_now() - c0) / 1000 * 1e6;
            rs_world_destroy(&c);
        }
        qsort(cost, 5, sizeof cost[0], by_value);
        printf("%-14s %12.3e %12.3e %10.2f\n", names[model], t_contact - surface / v, max_pen,
               cost[2]);
    }
}

/* ---- random tilted drops ------------------------------------------------------------- */

enum { BX, BY, BTH, BVX, BVY, BW };
#define TILT_STEPS 500 /* 5 s at 10 ms */
#define TILT_DT 0.01

typedef struct drop_geom {
    double w, h, inertia, k, pad; /* the preset's 1 kg, 0.2 x 0.1 m brick and its layer */
} drop_geom_t;

static double corner_y(const drop_geom_t *b, const double *x, int i)
{
    double sx = (i == 1 || i == 2) ? 0.5 : -0.5, sy = i >= 2 ? 0.5 : -0.5;
    return x[BY] + sin(x[BTH]) * sx * b->w + cos(x[BTH]) * sy * b->h;
}

static double lowest(const drop_geom_t *b, const double *x)
{
    double lo = INFINITY;
    for (int i = 0; i < 4; i++)
        lo = fmin(lo, corner_y(b, x, i));
    return lo;
}

static double kinetic(const drop_geom_t *b, const double *x)
{
    return 0.5 * (x[BVX] * x[BVX] + x[BVY] * x[BVY] + b->inertia * x[BW] * x[BW]);
}

/* mechanical energy (m = 1 kg); compliant: plus the layer's spring energy k d^2 / 2 per corner */
static double mech_energy(const drop_geom_t *b, int model, const double *x)
{
    double e = kinetic(b, x) + G * x[BY];
    for (int i = 0; model == 2 && i < 4; i++) {
        double d = b->pad - corner_y(b, x, i);
        if (d > 0.0)
            e += 0.5 * b->k * d * d;
    }
    return e;
}

/* flat on a face at its half extent above the contact surface (compliant: the padding less the
 * static compression m g / 2k), at rest, within tol */
static int at_rest_on_face(const drop_geom_t *b, int model, const double *x, double tol,
                           double *height_err)
{
    double q = nearbyint(x[BTH] / (0.5 * M_PI));
    double half = fmod(fabs(q), 2.0) == 0.0 ? 0.5 * b->h : 0.5 * b->w;
    double surface = model == 2 ? b->pad - G / (2.0 * b->k) : 0.0;
    *height_err = x[BY] - half - surface;
    return fabs(x[BTH] - q * 0.5 * M_PI) < tol && fabs(*height_err) < tol &&
           fabs(x[BVX]) + fabs(x[BVY]) + fabs(x[BW]) * b->w < tol;
}

/* Random tilted drops, the same N for each formulation: each drop's values are Monte Carlo
 * draws (rs_mc_draw: a function of the seed and the drop's index only) of the brick's
 * parameters within their bounds: theta0 in [0.05, pi/2 - 0.05] (never flat), y0 such that the
 * lowest corner starts 0.02 to 0.5 m up, omega0 in [-10, 10] rad/s, restitution in [0, 0.6] and
 * friction in [0.3, 1.2] (brick and ground alike; friction below 4/3, so no Painleve case).
 * Each runs 5 s in 10 ms control steps, the formulations interleaved drop by drop. Per drop,
 * one CSV line:
 *   max_pen       deepest corner below the contact surface (the ground; compliant: the padding's
 *                 surface, the spring's compression), m;  below_ground  below y = 0, m;
 *   impact_gain   largest kinetic energy gained at an impact event, J (hybrid, time_stepping:
 *                 0 when no impact adds energy; compliant has no impact events);
 *   energy_rise   largest rise of the mechanical energy (compliant: spring energy counted)
 *                 above its lowest value so far, J (nothing drives the brick: 0 is exact);
 *   t_rest        when the brick came to rest on a face and stayed (NaN: not within 5 s);
 *   height_err    the final height minus the resting height on the face it lies on, m;
 *   cpu_us, wall_us  per control step over the 5 s;
 *   violation     1 if a step failed, a value was not finite, energy rose beyond 1e-9 of its
 *                 scale, an impact added kinetic energy, or a corner went below the ground
 *                 beyond the formulation's tolerance (hybrid 1e-9 m; time_stepping its
 *                 linearisation bound R (h omega_max)^2 / 2; compliant 0). */
static int tilted_rows(int n, uint64_t seed)
{
    rs_status_t st;
    rs_world_t *w0 = world_or_exit("brick_drop", NULL, 0, 1);
    static const char *const items[5] = {"brick.theta0", "brick.y0", "brick.omega0",
                                         "brick.restitution", "brick.friction"};
    static const double lo[5] = {0.05, 0.02, -10.0, 0.0, 0.3},
                        hi[5] = {M_PI / 2 - 0.05, 0.5, 10.0, 0.6, 1.2};
    rs_mc_sampler_t s[5];
    for (int j = 0; j < 5; j++)
        if (rs_mc_parse_sampler(w0->model, items[j], "uniform", lo[j], hi[j], &s[j], &st) < 0) {
            fprintf(stderr, "core_contact: %s\n", st.message);
            return 1;
        }
    rs_world_destroy(&w0);
    drop_geom_t b = {0.2, 0.1, (0.2 * 0.2 + 0.1 * 0.1) / 12.0, 1e6, 0.0025};
    printf("formulation,drop,theta0,clearance,omega0,restitution,friction,max_pen,below_ground,"
           "impact_gain,energy_rise,t_rest,height_err,cpu_us,wall_us,violation,error\n");
    for (int i = 0; i < n; i++) /* formulations interleaved: their timings share the load */
        for (int model = 0; model < 3; model++) {
            double v[5];
            rs_mc_draw(s, 5, seed, (uint64_t)i, v);
            double th = v[0], y0 = v[1] + 0.5 * (sin(th) * b.w + cos(th) * b.h) +
                                   (model == 2 ? b.pad : 0.0);
            const char *nm[] = {"contact_model", "theta0", "y0", "omega0", "restitution",
                                "ground_restitution", "friction", "ground_friction", "control_dt"};
            double val[] = {model, th, y0, v[2], v[3], v[3], v[4], v[4], TILT_DT};
            rs_param_t p[9];
            for (int k = 0; k < 9; k++)
                p[k] = (rs_param_t){k == 8 ? "" : "brick", nm[k], &val[k], 1};
            rs_world_t *w = world_or_exit("brick_drop", p, 9, 1);
            const double *x = w->data->x;
            int pen_s = -1;
            for (int k = 0; k < w->model->ent[0].robot->ns; k++)
                if (!strcmp(w->model->ent[0].robot->sensors[k].name, "penetration"))
                    pen_s = k;
            double E0 = mech_energy(&b, model, x), Emin = E0, scale = E0 + G * (b.w + b.h);
            double hmin = 0.5 * b.h, R = 0.5 * hypot(b.w, b.h);
            double tol = model == 0 ? 1e-9
                         : model == 1 ? R * 1e-6 * fmax(0.0, E0 - G * hmin) / b.inertia
                                      : 0.0;
            double max_pen = 0.0, below = 0.0, gain = 0.0, rise = 0.0, herr = NAN;
            int rested_at = -1, bad = 0;
            char err[200] = "";
            double c0 = cpu_now();
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (int k = 0; k < TILT_STEPS; k++) {
                if (rs_step(w->model, w->data, 1, &st) < 0) {
                    snprintf(err, sizeof err, "%.150s", st.message);
                    for (char *c = err; *c; c++)
                        if (*c == ',' || *c == '\n')
                            *c = ';';
                    bad = 1;
                    break;
                }
                for (int j = 0; j < 6; j++)
                    bad |= !isfinite(x[j]);
                max_pen = fmax(max_pen, w->data->sensors[pen_s]);
                below = fmax(below, -lowest(&b, x));
                double E = mech_energy(&b, model, x);
                rise = fmax(rise, E - Emin);
                Emin = fmin(Emin, E);
                for (int e = 0; e < w->data->nevents; e++) {
                    const rs_event_t *ev = &w->data->events[e];
                    if (!strcmp(rs_event_kind_name(w->model, ev), "impact"))
                        gain = fmax(gain, kinetic(&b, ev->after) - kinetic(&b, ev->before));
                }
                if (at_rest_on_face(&b, model, x, 1e-6, &herr)) {
                    if (rested_at < 0)
                        rested_at = k;
                } else {
                    rested_at = -1;
                }
            }
            double cpu = (cpu_now() - c0) / TILT_STEPS * 1e6;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double wall = ((double)(t1.tv_sec - t0.tv_sec) +
                           1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / TILT_STEPS * 1e6;
            at_rest_on_face(&b, model, x, 1e-6, &herr);
            bad |= rise > 1e-9 * scale || gain > 1e-12 * scale || below > tol;
            printf("%s,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.4g,%.4g,%d,%s\n",
                   names[model], i, th, v[1], v[2], v[3], v[4], max_pen, below, gain, rise,
                   rested_at < 0 ? NAN : (rested_at + 1) * TILT_DT, herr, cpu, wall, bad, err);
            rs_world_destroy(&w);
        }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "--tilted"))
        return tilted_rows(atoi(argv[2]), argc > 3 ? strtoull(argv[3], NULL, 0) : 1);
    FILE *csv = NULL;
    if (argc == 3 && !strcmp(argv[1], "--csv") && !(csv = fopen(argv[2], "w"))) {
        perror(argv[2]);
        return 1;
    }
    if (csv)
        fprintf(csv, "formulation,t,x,y,theta,contact_fy\n");
    double H = 0.45, e = 0.5, pad = 0.0025, t1 = sqrt(2 * H / G), v = G * t1;
    double apex_t = t1 + e * v / G, impulse = 1.0 * (1 + e) * v;
    printf("brick drop (contact-dynamics lecture): H = 0.45 m, vx0 = 1 m/s, e = 0.5, mu = 0.5, "
           "control step "
           "0.1 ms for accuracy, 10 ms for cost\n");
    printf("%-14s %12s %12s %12s %12s %10s\n", "formulation", "impact_err", "max_pen",
           "rebound_err", "impulse_err", "us/step");
    for (int model = 0; model < 3; model++) {
        double dt = 1e-4;
        rs_world_t *w = brick(model, dt);
        rs_status_t st;
        double t_contact = NAN, max_pen = 0.0, apex = -INFINITY, J = 0.0;
        int phase = 0; /* 0 falling, 1 first contact seen, 2 left after it, 3 second contact */
        for (int k = 0; k < 20000 && phase < 3; k++) {
            if (rs_step(w->model, w->data, 1, &st) < 0) {
                fprintf(stderr, "%s: %s\n", names[model], st.message);
                break;
            }
            const rs_data_t *d = w->data;
            for (int i = 0; i < d->nevents; i++) {
                const char *kind = rs_event_kind_name(w->model, &d->events[i]);
                int contact = !strcmp(kind, "impact") || !strcmp(kind, "touch");
                if (contact && phase == 0)
                    t_contact = d->events[i].t, phase = 1;
                else if (contact && phase == 2)
                    phase = 3;
            }
            if (phase == 1 && d->x[4] > 0.0 && d->sensors[2] == 0.0)
                phase = 2; /* rising and out of contact */
            if (phase == 2)
                apex = fmax(apex, d->x[1] - 0.05);
            max_pen = fmax(max_pen, d->sensors[7]);
            if (d->t <= apex_t + 1e-12)
                J += d->sensors[1] * dt;
            if (csv)
                fprintf(csv, "%s,%.6f,%.9g,%.9g,%.9g,%.9g\n", names[model], d->t, d->x[0],
                        d->x[1], d->x[2], d->sensors[1]);
        }
        rs_world_destroy(&w);
        double t_exact = model == 2 ? sqrt(2 * (H - pad) / G) : t1;
        /* compliant: fall and rebound are measured from where the corners meet the padding */
        double rebound = model == 2 ? apex - pad : apex, h_fall = model == 2 ? H - pad : H;

        double cost[5];
        for (int r = 0; r < 5; r++) {
            rs_world_t *c = brick(model, 0.01);
            double c0 = cpu_now();
            rs_step(c->model, c->data, 200, &st);
            cost[r] = (cpu_now() - c0) / 200 * 1e6;
            rs_world_destroy(&c);
        }
        qsort(cost, 5, sizeof cost[0], by_value);
        printf("%-14s %12.3e %12.3e %12.3e %12.3e %10.2f\n", names[model], t_contact - t_exact,
               max_pen, (rebound - e * e * h_fall) / (e * e * h_fall), (J - impulse) / impulse, cost[2]);
    }
    finger_rows(csv);
    diff_drive_rows(csv);
    if (csv)
        fclose(csv);
    return 0;
}
