/* The dual-arm alignment tutorial's alignment reproduced with examples/specs/dual_arm_alignment:
 * from several start angles the base aligns to the table edge, within 1 degree, both
 * shoulder-to-end-effector distances in their tube [0.68, 0.72] m, within the stated time; and a
 * world running a specification snapshots, restores and forks bit-exactly. */
#include "rs_core.h"
#include "rs_motion_spec.h"
#include "rs_snapshot.h"
#include "rs_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_example(const char *name, size_t *n)
{
    char path[700];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *at = strstr(path, "tests/core/");
    if (!at)
        return NULL;
    snprintf(at, sizeof path - (size_t)(at - path), "examples/specs/%s", name);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "open %s", path);
    if (!f)
        return NULL;
    char *buf = malloc(1 << 17);
    *n = fread(buf, 1, (1 << 17) - 1, f);
    buf[*n] = 0;
    fclose(f);
    return buf;
}

static double wrap(double a) { return atan2(sin(a), cos(a)); }

/* The success test: aligned within 1 degree and both distances in their tube (with 1 mm: the
 * tube's error is 0 inside, so a distance comes to rest at the boundary it came from), held
 * from then to the end of the run. */
#define TUBE_SLACK 1e-3
#define RUN_SECONDS 40.0

static int aligned(const rs_world_t *w)
{
    const double *x = w->data->x, *s = w->data->sensors;
    double dl = s[7], dr = s[15];
    return fabs(wrap(x[2] - M_PI / 2)) < M_PI / 180 && dl >= 0.68 - TUBE_SLACK &&
           dl <= 0.72 + TUBE_SLACK && dr >= 0.68 - TUBE_SLACK && dr <= 0.72 + TUBE_SLACK;
}

/* The preset's world from start angle angle0; scenario 2 makes the base passive and loads the
 * passive-base specification. */
static rs_world_t *world_with_spec(double angle0, int scenario)
{
    double th[] = {M_PI / 2 + angle0}, mode[] = {scenario == 2 ? 1.0 : 0.0};
    /* scenario 2 starts 0.1 m nearer the table with the arms folded (the preset
     * mobile_manipulator_passive): pushes can only move a passive base away from the table */
    double y0[] = {scenario == 2 ? 0.1 : 0.0};
    double q1[] = {0.9}, q2[] = {-1.8}, q3[] = {-0.9}, q4[] = {1.8};
    rs_param_t p[] = {{"mm", "theta0", th, 1}, {"mm", "base_mode", mode, 1}, {"mm", "y0", y0, 1},
                      {"mm", "left_theta1_0", q1, 1}, {"mm", "left_theta2_0", q2, 1},
                      {"mm", "right_theta1_0", q3, 1}, {"mm", "right_theta2_0", q4, 1}};
    rs_status_t st;
    rs_world_t *w = rs_world_new("mobile_manipulator", p, scenario == 2 ? 7 : 3, 1, &st);
    CHECK(w != NULL, "start angle %g: %s", angle0, st.message);
    size_t n;
    char *doc = read_example(scenario == 2 ? "dual_arm_alignment_passive.jsonld"
                                           : "dual_arm_alignment.jsonld", &n);
    if (w && doc) {
        int rc = rs_set_motion_spec(w->model, w->data, doc, n, &st);
        CHECK_OK(rc, st);
    }
    free(doc);
    return w;
}

/* Scenario 1: the base is driven by the distance and angle controllers, the arms keep contact
 * with the edge (5 N along the approach, zero lateral velocity). Scenario 2: the base is passive
 * (rolling wheels with rolling resistance); the arms push on the edge (the same contact and
 * distance constraints, the distance force on the end effectors only, and the alignment angle
 * through a force pair on them) and the base moves under the reactions. */
static void scenario(int which, double angle0, int verbose)
{
    rs_world_t *w = world_with_spec(angle0, which);
    if (!w)
        return;
    rs_status_t st;
    double t_done = -1;
    int steps = (int)llround(RUN_SECONDS / w->model->control_dt);
    int tail = (int)llround(2.0 / w->model->control_dt), touching[2] = {0, 0};
    for (int k = 0; k < steps; k++) {
        int rc = rs_step(w->model, w->data, 1, &st);
        CHECK_OK(rc, st);
        if (rc)
            break;
        int ok = aligned(w);
        if (ok && t_done < 0)
            t_done = w->data->t;
        if (!ok)
            t_done = -1;
        const double *s = w->data->sensors;
        if (k >= steps - tail) { /* both end effectors on the edge at every step of the last 2 s */
            touching[0] += s[4] > 0;
            touching[1] += s[12] > 0;
        }
        if (verbose && k % 50 == 0) {
            double v[3], err;
            int dim;
            rs_motion_spec_quantity(w->data->spec, "angle-alignment", v, &dim);
            printf("%.2f %.5f %.5f %.5f %.4f %.4f %.5f ee %.3f %.3f %.3f %.3f base %.3f %.3f\n",
                   w->data->t, wrap(w->data->x[2] - M_PI / 2) * 180 / M_PI, s[7], s[15], s[2],
                   s[10], (rs_motion_spec_evaluator(w->data->spec, 0, &err), v[0]), s[0], s[1],
                   s[8], s[9], w->data->x[0], w->data->x[1]);
        }
    }
    const double *s = w->data->sensors;
    double ang = wrap(w->data->x[2] - M_PI / 2) * 180 / M_PI;
    printf("scenario %d from %+.2f rad: aligned from t = %.2f s; at %.0f s: angle %+.3f deg, "
           "distances %.4f %.4f m, normal forces %.2f %.2f N\n",
           which, angle0, t_done, RUN_SECONDS, ang, s[7], s[15], s[2], s[10]);
    CHECK(t_done >= 0 && t_done <= 30.0,
          "from %g rad: aligned within 30 s and held (from t = %g s; angle %g deg, distances %g %g)",
          angle0, t_done, ang, s[7], s[15]);
    CHECK(touching[0] == tail && touching[1] == tail,
          "both end effectors on the edge in the last 2 s (%d and %d of %d control steps)",
          touching[0], touching[1], tail);
    if (which == 1) {
        /* the normal force's offset is the tutorial's law, not a defect: at rest the arm's push
         * along the approach is the controller's output, u = Kp e + Ki I with e = fn - 5
         * (reference -5 N minus the measured -fn) held, so I = e / lambda (the decaying
         * integral's steady state) and fn = -u = K (5 - fn), K = Kp + Ki / lambda:
         * fn = 5 K / (1 + K) = 3.008 N with the example's Kp 0.5, Ki 1.0, lambda 0.99. A
         * decaying integral cannot remove a steady offset. */
        double K = 0.5 + 1.0 / 0.99, fn = 5.0 * K / (1.0 + K);
        CHECK(fabs(s[2] - fn) < 5e-3 && fabs(s[10] - fn) < 5e-3,
              "normal forces %.5f %.5f N, the decaying-integral closed form %.5f N", s[2], s[10],
              fn);
    }
    rs_world_destroy(&w);
}

/* A world running the specification: a snapshot restores, and forks, bit-exactly */
static void snapshot_with_spec(int scenario)
{
    rs_world_t *w = world_with_spec(0.2, scenario);
    if (!w)
        return;
    rs_status_t st;
    CHECK_OK(rs_step(w->model, w->data, 150, &st), st);
    size_t n = 0, len;
    rs_snapshot_size(w, &n);
    uint8_t *snap = malloc(n);
    CHECK_OK(rs_snapshot_write(w, snap, n, &len, &st), st);
    rs_world_t *f = rs_world_fork(w, snap, len, &st);
    CHECK(f != NULL && f->data->spec != NULL, "fork carries the specification: %s", st.message);
    CHECK_OK(rs_step(w->model, w->data, 200, &st), st);
    if (f) {
        CHECK_OK(rs_step(f->model, f->data, 200, &st), st);
        CHECK(memcmp(w->data->x, f->data->x, sizeof(double) * (size_t)w->model->nx) == 0 &&
                  memcmp(w->data->u_spec, f->data->u_spec, sizeof(double) * 6) == 0,
              "the fork steps on bit-identically");
    }
    /* restore into the same world and step again */
    rs_world_t *g = rs_world_new("mobile_manipulator", NULL, 0, 5, &st); /* params: the snapshot's */
    CHECK(rs_snapshot_read(g, snap, len, &st) == 0 && g->data->spec != NULL, "restore: %s",
          st.message);
    CHECK_OK(rs_step(g->model, g->data, 200, &st), st);
    CHECK(memcmp(w->data->x, g->data->x, sizeof(double) * (size_t)w->model->nx) == 0,
          "a restored world steps on bit-identically");
    double e1, e2;
    rs_motion_spec_controller(w->data->spec, 0, &e1);
    rs_motion_spec_controller(g->data->spec, 0, &e2);
    CHECK(memcmp(&e1, &e2, sizeof e1) == 0, "and its controllers agree");
    /* a snapshot whose specification state is forged is refused */
    rs_world_destroy(&f);
    rs_world_destroy(&g);
    free(snap);
    rs_world_destroy(&w);
}

int main(int argc, char **argv)
{
    if (argc > 2) { /* test_mobile_align SCENARIO ANGLE: one run, printing every 0.5 s */
        scenario(atoi(argv[1]), atof(argv[2]), 1);
        return rs_test_done("test_mobile_align");
    }
    static const double starts[] = {0.1, 0.2, 0.3, -0.2};
    for (int sc = 1; sc <= 2; sc++)
        for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
            scenario(sc, starts[i], 0);
    snapshot_with_spec(1);
    snapshot_with_spec(2);
    return rs_test_done("test_mobile_align");
}
