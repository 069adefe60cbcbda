/* Randomized physics per episode (rs_randomize.h): the draws are a function of the reset seed
 * (the same seed gives the same parameters and the same trajectory bit for bit), they follow
 * their distributions (Kolmogorov-Smirnov on 1,000 resets), the model runs with them, and bad
 * items are refused with the item named and the world unchanged. */
#include "rs_randomize.h"
#include "rs_task.h"
#include "rs_test.h"

#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The Kolmogorov-Smirnov statistic of the n values v (sorted here) against the cdf. */
static double ks(double *v, int n, double (*cdf)(double, double, double), double a, double b)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    double d = 0;
    for (int i = 0; i < n; i++) {
        double f = cdf(v[i], a, b);
        d = fmax(d, fmax(fabs((i + 1.0) / n - f), fabs(f - (double)i / n)));
    }
    return d;
}

static double uniform_cdf(double x, double a, double b)
{
    return x <= a ? 0 : x >= b ? 1 : (x - a) / (b - a);
}

static double normal_cdf(double x, double mean, double dev)
{
    return 0.5 * erfc(-(x - mean) / (dev * sqrt(2.0)));
}

static const rs_randomize_item_t DISTS[] = {
    {"finger.static_friction", "uniform", 0.5, 1.5},
    {"finger.object_mass", "normal", 1.0, 0.1},
};

static void run(rs_world_t *w, uint64_t seed, double drawn[2], uint8_t digest[RS_DIGEST_BYTES])
{
    rs_status_t st;
    int rc = rs_world_reset(w, seed, &st);
    CHECK_OK(rc, st);
    memcpy(drawn, rs_world_randomized(w), 2 * sizeof(double));
    double action[1] = {0.8};
    rc = rs_world_task_step(w, action, 1, 40, &st);
    CHECK_OK(rc, st);
    rs_digest_bytes(w->data, digest);
}

static void test_reproducible(void)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new_task("FingerPush-v1", "", NULL, 0, 0, &st);
    CHECK(w != NULL, "create: %s", st.message);
    if (!w)
        return;
    int rc = rs_world_set_randomize(w, DISTS, 2, &st);
    CHECK_OK(rc, st);
    CHECK(rs_world_randomize_count(w) == 2, "two distributions");
    double d1[2], d2[2], d3[2];
    uint8_t g1[RS_DIGEST_BYTES], g2[RS_DIGEST_BYTES], g3[RS_DIGEST_BYTES];
    run(w, 11, d1, g1);
    int e = rs_model_entity(w->model, "finger");
    /* the model the episode ran on holds the draws */
    CHECK(rs_model_param(w->model, e, "static_friction", 0) == d1[0], "model friction %g vs %g",
          rs_model_param(w->model, e, "static_friction", 0), d1[0]);
    CHECK(rs_model_param(w->model, e, "object_mass", 0) == d1[1], "model mass");
    run(w, 12, d3, g3);
    run(w, 11, d2, g2);
    CHECK(d1[0] == d2[0] && d1[1] == d2[1], "same seed, same draws: %g %g vs %g %g", d1[0],
          d1[1], d2[0], d2[1]);
    CHECK(memcmp(g1, g2, RS_DIGEST_BYTES) == 0, "same seed, same trajectory (digest)");
    CHECK(d1[0] != d3[0] && d1[1] != d3[1], "another seed, other draws");
    CHECK(memcmp(g1, g3, RS_DIGEST_BYTES) != 0, "another seed, another trajectory");

    /* a world built by hand with the draws runs the randomized episode exactly */
    rs_param_t p[2] = {{"finger", "static_friction", &d1[0], 1},
                       {"finger", "object_mass", &d1[1], 1}};
    rs_world_t *h = rs_world_new_task("FingerPush-v1", "", p, 2, 11, &st);
    CHECK(h != NULL, "create by hand: %s", st.message);
    if (h) {
        double action[1] = {0.8};
        rc = rs_world_task_step(h, action, 1, 40, &st);
        CHECK_OK(rc, st);
        uint8_t gh[RS_DIGEST_BYTES];
        rs_digest_bytes(h->data, gh);
        CHECK(memcmp(g1, gh, RS_DIGEST_BYTES) == 0,
              "the randomized episode is the episode of a world with the drawn parameters");
        rs_world_destroy(&h);
    }
    rs_world_destroy(&w);
}

static void test_distribution(void)
{
    enum { N = 1000 };
    rs_status_t st;
    rs_world_t *w = rs_world_new("finger", NULL, 0, 0, &st);
    CHECK(w != NULL, "create: %s", st.message);
    if (!w)
        return;
    int rc = rs_world_set_randomize(w, DISTS, 2, &st);
    CHECK_OK(rc, st);
    static double fr[N], ms[N];
    for (int i = 0; i < N && rc == 0; i++) {
        rc = rs_world_reset(w, (uint64_t)i * 7919 + 1, &st);
        CHECK_OK(rc, st);
        fr[i] = rs_world_randomized(w)[0];
        ms[i] = rs_world_randomized(w)[1];
    }
    /* the Kolmogorov-Smirnov critical value at significance 0.001: 1.949 / sqrt(N) */
    double crit = 1.949 / sqrt(N);
    double du = ks(fr, N, uniform_cdf, 0.5, 1.5), dn = ks(ms, N, normal_cdf, 1.0, 0.1);
    printf("KS over %d resets: uniform(0.5, 1.5) D = %.4f, normal(1, 0.1) D = %.4f, critical "
           "value (p = 0.001) %.4f\n",
           N, du, dn, crit);
    CHECK(du < crit, "uniform draws: KS D = %g >= %g", du, crit);
    CHECK(dn < crit, "normal draws: KS D = %g >= %g", dn, crit);
    CHECK(fr[0] >= 0.5 && fr[N - 1] <= 1.5, "uniform draws in [0.5, 1.5]");
    rs_world_destroy(&w);
}

static void refused(rs_world_t *w, rs_randomize_item_t it, int code, const char *needle)
{
    rs_status_t st;
    size_t before = rs_world_randomize_count(w);
    int rc = rs_world_set_randomize(w, &it, 1, &st);
    CHECK(rc == code, "'%s' %s(%g, %g): rc %d, expected %d (%s)", it.item, it.dist, it.a, it.b,
          rc, code, st.message);
    CHECK(rc == 0 || strstr(st.message, needle) != NULL, "message '%s' names '%s'", st.message,
          needle);
    CHECK(rs_world_randomize_count(w) == before, "a refused set changes nothing");
}

static void test_refused(void)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new_task("FingerPush-v1", "", NULL, 0, 0, &st);
    CHECK(w != NULL, "create: %s", st.message);
    if (!w)
        return;
    int rc = rs_world_set_randomize(w, DISTS, 1, &st);
    CHECK_OK(rc, st);
    refused(w, (rs_randomize_item_t){"hand.static_friction", "uniform", 0, 1}, RS_ENOTFOUND,
            "hand.static_friction");
    refused(w, (rs_randomize_item_t){"finger.stickiness", "uniform", 0, 1}, RS_ENOTFOUND,
            "stickiness");
    refused(w, (rs_randomize_item_t){"finger.restitution", "gamma", 0, 1}, RS_EINVAL, "gamma");
    refused(w, (rs_randomize_item_t){"finger.restitution", "uniform", 0.5, 1.5}, RS_ERANGE,
            "finger.restitution");
    refused(w, (rs_randomize_item_t){"finger.restitution", "uniform", 0.9, 0.1}, RS_EINVAL,
            "finger.restitution");
    refused(w, (rs_randomize_item_t){"finger.restitution", "normal", 0.5, -1}, RS_EINVAL,
            "finger.restitution");
    refused(w, (rs_randomize_item_t){"static_friction", "uniform", 0, 1}, RS_EINVAL,
            "static_friction");
    /* a choice among whole numbers (a formulation, a law) cannot be drawn from a range: the
     * uniform(0, 2) of contact_model drew 1.0168 */
    refused(w, (rs_randomize_item_t){"finger.contact_model", "uniform", 0, 2}, RS_EINVAL,
            "finger.contact_model");
    refused(w, (rs_randomize_item_t){"finger.friction_law", "normal", 0, 0.5}, RS_EINVAL,
            "finger.friction_law");
    {
        rs_world_t *b = rs_world_new("brick_drop", NULL, 0, 1, &st);
        CHECK(b && rs_world_set_randomize(b, &(rs_randomize_item_t){"brick.contact_model",
                                                                    "uniform", 0, 2},
                                          1, &st) == RS_EINVAL &&
                  strstr(st.message, "whole numbers"),
              "the brick's contact_model from a range refused: %s", st.message);
        /* and set directly, a value between the choices is refused too */
        double v = 1.5;
        rs_param_t p = {"brick", "contact_model", &v, 1};
        CHECK(b && rs_world_set_params(b, &p, 1, &st) == RS_EINVAL &&
                  strstr(st.message, "contact_model"),
              "contact_model 1.5 refused: %s", st.message);
        rs_world_destroy(&b);
        rs_world_t *dd = rs_world_new("diff_drive", NULL, 0, 1, &st);
        rs_param_t q = {"robot", "contact_model", &v, 1};
        CHECK(dd && rs_world_set_params(dd, &q, 1, &st) == RS_EINVAL &&
                  strstr(st.message, "contact_model"),
              "the diff drive's contact_model 1.5 refused (it was taken as 1): %s", st.message);
        rs_world_destroy(&dd);
    }
    rs_randomize_item_t twice[2] = {DISTS[0], {"finger.static_friction", "normal", 1, 0.1}};
    rc = rs_world_set_randomize(w, twice, 2, &st);
    CHECK(rc == RS_EINVAL && strstr(st.message, "already"), "twice: %d %s", rc, st.message);
    /* n = 0 removes them; the model keeps its last values */
    rc = rs_world_set_randomize(w, NULL, 0, &st);
    CHECK_OK(rc, st);
    CHECK(rs_world_randomize_count(w) == 0 && rs_world_randomized(w) == NULL, "cleared");
    rs_world_destroy(&w);
}

int main(void)
{
    test_reproducible();
    test_distribution();
    test_refused();
    return rs_test_done("test_randomize");
}
