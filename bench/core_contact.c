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
 * Compliant: padding 2.5 mm, k = 1e5 N/m per body, damping chosen so that a linear
 * spring-damper has e = 0.5 (zeta = -ln e / sqrt(pi^2 + ln^2 e)); its closed-form impact time
 * is when the corners reach the padding surface, sqrt(2 (H - pad) / g).
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
#include "rs_robot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define G 9.81
static const char *const names[3] = {"hybrid", "time_stepping", "compliant"};

static rs_world_t *brick(int model, double control_dt)
{
    double e = 0.5, lne = log(e), zeta = -lne / sqrt(M_PI * M_PI + lne * lne);
    double damping = zeta * sqrt(2.0 * 1e5 * 1.0); /* per corner: 2 corners, total c = 2 c */
    const char *n[] = {"contact_model", "vx0", "damping", "ground_damping", "control_dt"};
    double v[] = {model, 1.0, damping, damping, control_dt};
    rs_param_t p[5];
    for (int i = 0; i < 5; i++)
        p[i] = (rs_param_t){i == 4 ? "" : "brick", n[i], &v[i], 1};
    rs_status_t st;
    rs_world_t *w = rs_world_new("brick_drop", p, 5, 1, &st);
    if (!w) {
        fprintf(stderr, "core_contact: %s\n", st.message);
        exit(1);
    }
    return w;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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
        qsort(cost, 5, sizeof cost[0], cmp);
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
        qsort(cost, 5, sizeof cost[0], cmp);
        printf("%-14s %12.3e %12.3e %10.2f\n", names[model], t_contact - surface / v, max_pen,
               cost[2]);
    }
}

int main(int argc, char **argv)
{
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
        qsort(cost, 5, sizeof cost[0], cmp);
        printf("%-14s %12.3e %12.3e %12.3e %12.3e %10.2f\n", names[model], t_contact - t_exact,
               max_pen, (rebound - e * e * h_fall) / (e * e * h_fall), (J - impulse) / impulse, cost[2]);
    }
    finger_rows(csv);
    diff_drive_rows(csv);
    if (csv)
        fclose(csv);
    return 0;
}
