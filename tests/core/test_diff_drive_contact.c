/* The diff-drive bumper under the three contact formulations, against closed forms:
 * a head-on approach at v = r (phi1 + phi2) / 2 to a disk obstacle touches after
 * (distance - R_robot - R_obstacle) / v; hybrid exactly, time_stepping within one internal step
 * and without penetration, compliant at the padding surface and then settling at depth
 * c v / k with time constant c / k (a massless spring-damper, see diff_drive.c), held at the
 * rigid surfaces under the layers (a gap narrower than the robot stops it). */
#include "rs_robot.h"
#include "rs_snapshot.h"
#include "rs_test.h"
#include "seeded_rng.h"
#include "workshop_wedge.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rs_world_t *robot(int model, double control_dt)
{
    double obst[3] = {1.0, 0.0, 0.10}, m = model;
    rs_param_t p[3] = {{"robot", "obstacles", obst, 3},
                       {"robot", "contact_model", &m, 1},
                       {"", "control_dt", &control_dt, 1}};
    rs_status_t st;
    rs_world_t *w = rs_world_new("diff_drive", p, 3, 1, &st);
    CHECK(w != NULL, "rs_world_new: %s", st.message);
    if (!w)
        exit(1);
    double u[2] = {1.0, 1.0}; /* 0.09 m/s straight ahead (wheel radius 0.09 m) */
    CHECK_OK(rs_set_all_commands(w->model, w->data, u, &st), st);
    return w;
}

/* steps until t_end; the time of the first "contact" event (NAN if none) */
static double run(rs_world_t *w, int steps, double *max_x)
{
    rs_status_t st;
    double t_contact = NAN;
    *max_x = -INFINITY;
    for (int k = 0; k < steps; k++) {
        CHECK_OK(rs_step(w->model, w->data, 1, &st), st);
        for (int i = 0; i < w->data->nevents; i++)
            if (isnan(t_contact) &&
                !strcmp(rs_event_kind_name(w->model, &w->data->events[i]), "contact"))
                t_contact = w->data->events[i].t;
        *max_x = fmax(*max_x, w->data->x[0]);
    }
    return t_contact;
}

static rs_world_t *robot_among(int model, const double *obst, int nobst, double x0, double y0,
                               double theta0)
{
    double m = model, dt = 0.01;
    rs_param_t p[] = {{"robot", "obstacles", obst, (size_t)(3 * nobst)},
                      {"robot", "contact_model", &m, 1},
                      {"robot", "x0", &x0, 1},
                      {"robot", "y0", &y0, 1},
                      {"robot", "theta0", &theta0, 1},
                      {"", "control_dt", &dt, 1}};
    rs_status_t st;
    rs_world_t *w = rs_world_new("diff_drive", p, 6, 1, &st);
    CHECK(w != NULL, "rs_world_new: %s", st.message);
    return w;
}

/* distance of the robot's centre to obstacle i's inflated boundary (R_robot = 0.15 m) */
static double clearance_of(const rs_world_t *w, const double *obst, int i)
{
    return hypot(w->data->x[0] - obst[3 * i], w->data->x[1] - obst[3 * i + 1]) - 0.15 -
           obst[3 * i + 2];
}

/* Wedged (hybrid): obstacles touching the robot at +-60 degrees from the x axis, heading 0,
 * driving forward while turning clockwise at w. Every heading within 90 degrees of either
 * contact normal points into an obstacle, so the robot may not translate until the heading
 * reaches -150 degrees, at t* = (5 pi / 6) / |w|; from there it is free and follows the arc
 * x = (v / w)(sin th - sin th*), y = -(v / w)(cos th - cos th*), th = th* + w (t - t*). */
static void wedged(void)
{
    double rho = 0.15 + 0.1, a = M_PI / 3;
    double obst[6] = {rho * cos(a), rho * sin(a), 0.1, rho * cos(a), -rho * sin(a), 0.1};
    rs_world_t *w = robot_among(0, obst, 2, 0, 0, 0);
    if (!w)
        return;
    rs_status_t st;
    double u[2] = {5.0, 10.0}, v = 0.09 / 2 * 15.0, om = 0.09 / 0.24 * (5.0 - 10.0);
    CHECK_OK(rs_set_all_commands(w->model, w->data, u, &st), st);
    double t_free = (5.0 * M_PI / 6.0) / -om, th0 = -5.0 * M_PI / 6.0, worst_held = 0,
           worst_arc = 0, worst_pen = 0;
    for (int k = 0; k < 200; k++) {
        CHECK_OK(rs_step(w->model, w->data, 1, &st), st);
        double t = w->data->t, *x = w->data->x;
        for (int i = 0; i < 2; i++)
            worst_pen = fmax(worst_pen, -clearance_of(w, obst, i));
        if (t < t_free - 1e-9) {
            worst_held = fmax(worst_held, hypot(x[0], x[1]));
        } else {
            double th = th0 + om * (t - t_free);
            double ex = v / om * (sin(th) - sin(th0)), ey = -v / om * (cos(th) - cos(th0));
            worst_arc = fmax(worst_arc, hypot(x[0] - ex, x[1] - ey));
        }
    }
    CHECK(worst_pen <= 1e-12, "no penetration: %.3g m", worst_pen);
    CHECK(worst_held <= 1e-12, "held in place until the heading frees it: moved %.3g m",
          worst_held);
    CHECK(worst_arc <= 1e-7, "then on the closed-form arc: off by %.3g m", worst_arc);
    rs_world_destroy(&w);
}

/* Random obstacle fields (hybrid; seeded, RS_RUNS sets the count): 2-5 obstacles, among them
 * two the robot starts touching, random wheel speeds redrawn every 20 control steps. The
 * robot's centre never enters an inflated obstacle (to 1e-12 m). */
static void hybrid_random(void)
{
    int runs = getenv("RS_RUNS") ? atoi(getenv("RS_RUNS")) : 100, violations = 0;
    double worst = 0;
    for (int r = 0; r < runs; r++) {
        rng_state = 2000 + r;
        int n = 2 + (int)urand(0, 4);
        double obst[15];
        /* two obstacles touching the start (0, 0), the rest anywhere clear of it */
        for (int i = 0; i < n; i++) {
            double ro = urand(0.02, 0.3), ang = urand(-M_PI, M_PI);
            double d = (0.15 + ro) * (1 + 1e-13) + (i < 2 ? 0.0 : urand(0.0, 1.0));
            obst[3 * i] = d * cos(ang), obst[3 * i + 1] = d * sin(ang), obst[3 * i + 2] = ro;
        }
        rs_world_t *w = robot_among(0, obst, n, 0, 0, urand(-M_PI, M_PI));
        if (!w)
            continue;
        rs_status_t st;
        int bad = 0;
        for (int k = 0; k < 200 && !bad; k++) {
            if (k % 20 == 0) {
                double u[2] = {urand(-10, 10), urand(-10, 10)};
                CHECK_OK(rs_set_all_commands(w->model, w->data, u, &st), st);
            }
            int rc = rs_step(w->model, w->data, 1, &st);
            CHECK_OK(rc, st);
            if (rc < 0)
                break;
            for (int i = 0; i < n; i++) {
                double pen = -clearance_of(w, obst, i);
                worst = fmax(worst, pen);
                if (pen > 1e-12 && !bad)
                    fprintf(stderr, "seed %d, control step %d: %.3g m inside obstacle %d\n",
                            2000 + r, k, pen, i);
                bad |= pen > 1e-12;
            }
        }
        violations += bad;
        rs_world_destroy(&w);
    }
    CHECK(violations == 0, "%d of %d random hybrid runs entered an obstacle (worst %.3g m)",
          violations, runs, worst);
}

/* Compliant at grazing incidence (seeded): the robot drives straight past an obstacle whose
 * inflated boundary its path cuts near the rim. The layer pushes back along the contact
 * normal n, so the depth d = padding - clearance obeys d' = v |h . n| - (k / c) d <= v - (k / c) d:
 * it never exceeds c v / k (the head-on steady depth), whatever the incidence. */
static void compliant_grazing(void)
{
    int runs = getenv("RS_RUNS") ? atoi(getenv("RS_RUNS")) : 100, violations = 0;
    double worst = -INFINITY, pad = 0.0025, rate = 1e4 / 100.0;
    for (int r = 0; r < runs; r++) {
        rng_state = 3000 + r;
        double ro = urand(0.02, 0.3), rho = 0.15 + ro, b = urand(rho - 0.05, rho + pad);
        double obst[3] = {1.0, b, ro};
        rs_world_t *w = robot_among(2, obst, 1, 0, 0, 0);
        if (!w)
            continue;
        rs_status_t st;
        double wheel = urand(0.5, 2.5), u[2] = {wheel, wheel}, v = 0.09 * wheel;
        CHECK_OK(rs_set_all_commands(w->model, w->data, u, &st), st);
        double bound = v / rate, most = -INFINITY;
        int steps = (int)(2.0 / v / 0.01) + 1; /* well past the obstacle */
        for (int k = 0; k < steps; k++) {
            int rc = rs_step(w->model, w->data, 1, &st);
            CHECK_OK(rc, st);
            if (rc < 0)
                break;
            most = fmax(most, pad - clearance_of(w, obst, 0));
            /* each layer event leaves the robot on its new mode's side of the layer's surface
             * (out on a release, in on a contact), so that the new guard starts armed */
            for (int i = 0; i < w->data->nevents; i++) {
                const rs_event_t *ev = &w->data->events[i];
                const char *kind = rs_event_kind_name(w->model, ev);
                /* in the robot's own arithmetic (rs_hypot, radii summed, padding 0.0025 + 0) */
                double c = rs_hypot(ev->after[0] - obst[0], ev->after[1] - obst[1]) -
                           (0.15 + ro) - (pad + 0.0);
                if (!strcmp(kind, "release"))
                    CHECK(c >= 0, "seed %d: released %.3g m inside the layer", 3000 + r, -c);
                if (!strcmp(kind, "contact"))
                    CHECK(c <= 0, "seed %d: entered %.3g m outside the layer", 3000 + r, c);
            }
        }
        worst = fmax(worst, most / bound);
        if (most > bound * (1 + 1e-6) + 1e-12) {
            fprintf(stderr, "seed %d: depth %.3g m beyond c v / k = %.3g m\n", 3000 + r, most,
                    bound);
            violations++;
        }
        rs_world_destroy(&w);
    }
    CHECK(violations == 0, "%d of %d grazing passes deeper than c v / k (worst depth %.3g of it)",
          violations, runs, worst);
}

/* Compliant at a gap narrower than the robot: two disks (radius ro) either side of the path at
 * x = 1, their surfaces g apart. The layers' pushes along nearly opposite normals cancel, and
 * before the rigid surfaces under them the robot drove through (0.8 x its diameter at 1.8 m/s
 * with 30 mm overlap, 0.5 x at 9 m/s with 74 mm). It stops held at both surfaces: on the axis,
 * s* = sqrt((R + ro)^2 - (g / 2 + ro)^2) before the gap, the command (v > 2 (k / c) padding
 * s* / (R + ro)) pressing it into both. */
static void compliant_gap(void)
{
    const double R = 0.15, ro = 0.1, cases[][2] = {{0.8, 1.8}, {0.5, 9.0}, {0.95, 0.5}};
    for (int k = 0; k < 3; k++) {
        double g = cases[k][0] * 2 * R, v = cases[k][1], half = g / 2 + ro;
        double obst[6] = {1.0, half, ro, 1.0, -half, ro};
        double stop = 1.0 - sqrt((R + ro) * (R + ro) - half * half);
        rs_world_t *w = robot_among(2, obst, 2, 0, 0, 0);
        if (!w)
            continue;
        rs_status_t st;
        double wheel = v / 0.09, u[2] = {wheel, wheel}, most = -INFINITY, least = INFINITY;
        CHECK_OK(rs_set_all_commands(w->model, w->data, u, &st), st);
        int held = 0, steps = (int)(2.0 / v / 0.01) + 50;
        for (int j = 0; j < steps; j++) {
            int rc = rs_step(w->model, w->data, 1, &st);
            CHECK_OK(rc, st);
            if (rc < 0)
                break;
            most = fmax(most, w->data->x[0]);
            least = fmin(least, fmin(clearance_of(w, obst, 0), clearance_of(w, obst, 1)));
            for (int i = 0; i < w->data->nevents; i++)
                held += !strcmp(rs_event_kind_name(w->model, &w->data->events[i]), "held");
        }
        CHECK(least >= -1e-9, "gap %.2g x diameter at %g m/s: %.3g m inside an obstacle",
              cases[k][0], v, -least);
        CHECK(most <= stop + 1e-9, "gap %.2g x diameter at %g m/s: reached x = %.9g, past the "
              "stop %.9g", cases[k][0], v, most, stop);
        CHECK_REL(w->data->x[0], stop, 1e-9, 1e-12);
        CHECK(fabs(w->data->x[1]) <= 1e-9, "on the axis: y = %.3g", w->data->x[1]);
        CHECK(held >= 2, "held at both surfaces (%d held events)", held);
        rs_world_destroy(&w);
    }
}

/* Compliant among 6 random disks (seeded), driven forward while turning at random: several
 * layers often push at once, and the centre never enters an obstacle under its layer (the
 * integrator's error on the centre, rtol 1e-8 over a few metres, aside). Before the rigid
 * surfaces 48 of 1,456 such fields let the robot in. */
static void compliant_fields(void)
{
    int runs = getenv("RS_RUNS") ? atoi(getenv("RS_RUNS")) : 150, inside = 0;
    double worst = INFINITY;
    for (int r = 0; r < runs; r++) {
        rng_state = 7000 + r;
        double obst[18];
        int n = 0;
        while (n < 6) {
            double ro = urand(0.05, 0.3), ox = urand(-1.0, 1.5), oy = urand(-1.0, 1.0);
            if (hypot(ox, oy) > 0.15 + ro + 0.0025 + 1e-3) /* the start clear of its layer */
                obst[3 * n] = ox, obst[3 * n + 1] = oy, obst[3 * n + 2] = ro, n++;
        }
        rs_world_t *w = robot_among(2, obst, 6, 0, 0, urand(-M_PI, M_PI));
        if (!w)
            continue;
        rs_status_t st;
        double least = INFINITY;
        for (int j = 0; j < 150; j++) {
            if (j % 25 == 0) {
                double fwd = urand(0, 30), turn = urand(-3, 3), u[2] = {fwd + turn, fwd - turn};
                CHECK_OK(rs_set_all_commands(w->model, w->data, u, &st), st);
            }
            int rc = rs_step(w->model, w->data, 1, &st);
            CHECK_OK(rc, st);
            if (rc < 0)
                break;
            for (int i = 0; i < 6; i++)
                least = fmin(least, clearance_of(w, obst, i));
        }
        worst = fmin(worst, least);
        inside += least < -1e-7;
        rs_world_destroy(&w);
    }
    CHECK(inside == 0, "%d of %d fields let the robot into an obstacle (deepest %.3g m)", inside,
          runs, -worst);
}

/* Never silent: a hybrid state inside an obstacle (beyond rounding) is refused by the robot's
 * failure check with a specific error; the state it reached by stepping is accepted. */
static void inside_is_an_error(void)
{
    double obst[3] = {1.0, 0.0, 0.1};
    rs_world_t *w = robot_among(0, obst, 1, 0, 0, 0);
    if (!w)
        return;
    const rs_entity_model_t *em = &w->model->ent[0];
    rs_status_t st;
    CHECK(em->robot->failure && em->robot->failure(em, &w->data->ent[0], w->data->x, &st) == 0,
          "a clear start is consistent");
    double x[3] = {1.0 - 0.25 + 1e-6, 0.0, 0.0}; /* 1 um inside the inflated boundary */
    int rc = em->robot->failure ? em->robot->failure(em, &w->data->ent[0], x, &st) : 0;
    CHECK(rc == RS_ESIMFAIL && strstr(st.message, "inside obstacle 0"), "inside: %d %s", rc,
          rc ? st.message : "");
    rs_world_destroy(&w);
}

/* The wedge of workshop_wedge.h, in the workshop world (with the other entities, commands 0)
 * and in the diff_drive preset alone: under hybrid contact the robot's centre never enters an
 * inflated obstacle (1e-9 m of rounding), every control step succeeds, and the two worlds agree
 * on the robot's path (its dynamics do not depend on the other entities'; the integrators'
 * steps do, so to the tolerance's size, 1e-6 m). */
static void workshop_wedge(void)
{
    rs_param_t p[sizeof wedge_params / sizeof wedge_params[0]];
    size_t n = 0, nr = 0;
    for (size_t i = 0; i < sizeof wedge_params / sizeof wedge_params[0]; i++)
        p[n++] = (rs_param_t){wedge_params[i].entity, wedge_params[i].name, wedge_params[i].v,
                              (size_t)wedge_params[i].n};
    rs_param_t pr[16];
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p[i].entity, "robot"))
            pr[nr++] = p[i];
    rs_status_t st;
    rs_world_t *w[2] = {rs_world_new("workshop", p, n, 1, &st), NULL};
    CHECK(w[0] != NULL, "workshop: %s", st.message);
    w[1] = rs_world_new("diff_drive", pr, nr, 1, &st);
    CHECK(w[1] != NULL, "diff_drive: %s", st.message);
    if (!w[0] || !w[1]) {
        rs_world_destroy(&w[0]);
        rs_world_destroy(&w[1]);
        return;
    }
    int e[2] = {rs_model_entity(w[0]->model, "robot"), rs_model_entity(w[1]->model, "robot")};
    double worst[2] = {INFINITY, INFINITY}, apart = 0;
    int failed[2] = {-1, -1}, row = 0;
    for (int k = 0; k < WEDGE_STEPS; k++) {
        while (row + 1 < (int)(sizeof wedge_commands / sizeof wedge_commands[0]) &&
               wedge_commands[row + 1].from <= k)
            row++;
        for (int j = 0; j < 2; j++) {
            if (failed[j] >= 0)
                continue;
            if (rs_set_commands(w[j]->model, w[j]->data, e[j], wedge_commands[row].phi, 2, &st) ||
                rs_step(w[j]->model, w[j]->data, 1, &st)) {
                failed[j] = k;
                fprintf(stderr, "  %s, control step %d: %s\n", j ? "diff_drive" : "workshop", k,
                        st.message);
                continue;
            }
            const rs_entity_model_t *em = &w[j]->model->ent[e[j]];
            const double *x = w[j]->data->x + em->x_off;
            for (int i = 0; i < 2; i++) {
                double ob[3];
                for (int c = 0; c < 3; c++)
                    ob[c] = rs_model_param(w[j]->model, e[j], "obstacles", 3 * i + c);
                double c = hypot(x[0] - ob[0], x[1] - ob[1]) -
                           rs_model_param(w[j]->model, e[j], "robot_radius", 0) - ob[2];
                worst[j] = fmin(worst[j], c);
            }
        }
        if (failed[0] < 0 && failed[1] < 0) {
            const double *a = w[0]->data->x + w[0]->model->ent[e[0]].x_off;
            const double *b = w[1]->data->x + w[1]->model->ent[e[1]].x_off;
            apart = fmax(apart, hypot(a[0] - b[0], a[1] - b[1]));
        }
    }
    CHECK(failed[0] < 0, "the workshop's wedge failed at control step %d", failed[0]);
    CHECK(failed[1] < 0, "the diff_drive preset's wedge failed at control step %d", failed[1]);
    for (int j = 0; j < 2; j++)
        CHECK(worst[j] >= -1e-9, "%s: the centre %.3g m inside an obstacle",
              j ? "diff_drive" : "workshop", -worst[j]);
    CHECK(apart <= 1e-6, "the robot's paths in the two worlds differ by %.3g m", apart);
    rs_world_destroy(&w[0]);
    rs_world_destroy(&w[1]);
}

int main(void)
{
    workshop_wedge();
    inside_is_an_error();
    wedged();
    hybrid_random();
    compliant_grazing();
    compliant_gap();
    compliant_fields();
    double v = 0.09, reach = 1.0 - 0.10 - 0.15, max_x;
    /* hybrid: exact */
    rs_world_t *w = robot(0, 0.01);
    double tc = run(w, 1000, &max_x);
    CHECK_REL(tc, reach / v, 1e-9, 0);
    CHECK(max_x <= reach + 1e-9 && w->data->sensors[0] == 1.0, "held at %g", max_x);
    rs_world_destroy(&w);
    /* time stepping: within an internal step, no penetration, held at the boundary */
    w = robot(1, 0.01);
    tc = run(w, 1000, &max_x);
    CHECK(fabs(tc - reach / v) <= 1e-3 + 1e-12, "contact at %.9g, exact %.9g", tc, reach / v);
    CHECK(max_x <= reach + 1e-9, "no penetration: %.12g", max_x);
    CHECK_REL(w->data->x[0], reach, 1e-12, 0);
    CHECK(w->data->sensors[0] == 1.0 && w->data->sensors[1] == 0.0, "bumper on obstacle 0");
    rs_world_destroy(&w);
    /* compliant: touches the padding (0.0025 m) exactly; depth -> c v / k = 0.0009 m */
    w = robot(2, 0.01);
    tc = run(w, 900, &max_x); /* 9 s: 0.67 s (67 time constants) after the touch */
    double pad = 0.0025, t_touch = (reach - pad) / v;
    CHECK_REL(tc, t_touch, 1e-9, 0);
    double depth = (1.0 / 100.0) * v * (1.0 - exp(-100.0 * (9.0 - t_touch)));
    CHECK_REL(w->data->x[0], reach - pad + depth, 1e-6, 0);
    CHECK(w->data->sensors[0] == 1.0, "bumper in the layer");
    rs_world_destroy(&w);
    /* a fork steps on bit-identically under each formulation */
    for (int model = 0; model < 3; model++) {
        w = robot(model, 0.01);
        run(w, 820, &max_x);
        rs_status_t st;
        rs_world_t *f = rs_world_fork(w, NULL, 0, &st);
        CHECK(f != NULL, "fork: %s", st.message);
        run(w, 50, &max_x);
        if (f) {
            run(f, 50, &max_x);
            CHECK(!memcmp(f->data->x, w->data->x, 3 * sizeof(double)), "model %d", model);
            rs_world_destroy(&f);
        }
        rs_world_destroy(&w);
    }
    return rs_test_done("test_diff_drive_contact");
}
