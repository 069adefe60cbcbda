/* nvector.c: robosim's N_Vector, through SUNDIALS' generic N_V* calls as
 * ARKODE makes them. Values are small integers and halves, so every result is exact and is
 * compared with ==:
 *   - a slab's slots hold the first vectors, further clones are malloc'd, and destroying a
 *     vector frees its slot for the next clone; all vectors share one ops table;
 *   - each operation ERKStep calls, against its definition (linear sums in their a == b and
 *     a == -b forms, linear combination with z aliasing X[0] and a later X[i], scale-add-multi,
 *     the norms, min, abs, inv, add-const, prod, div, scale). */
#include "rs_nvector.h"
#include "rs_test.h"

#include <sundials/sundials_config.h>
#include <sundials/sundials_context.h>

#include <stdlib.h>

#define N 3

static int equal(N_Vector v, double a, double b, double c)
{
    const double *d = N_VGetArrayPointer(v);
    return d[0] == a && d[1] == b && d[2] == c;
}

static void counts(rs_nvec_slab_t *slab, int want_in, int want_beyond, const char *when)
{
    int in, beyond;
    rs_nvec_slab_count(slab, &in, &beyond);
    CHECK(in == want_in && beyond == want_beyond, "%s: %d in slots, %d beyond (want %d, %d)",
          when, in, beyond, want_in, want_beyond);
}

int main(void)
{
    SUNContext ctx = NULL;
#if SUNDIALS_VERSION_MAJOR >= 7
    CHECK(SUNContext_Create(SUN_COMM_NULL, &ctx) == 0, "a SUNDIALS context");
#else
    CHECK(SUNContext_Create(NULL, &ctx) == 0, "a SUNDIALS context");
#endif
    void *mem = malloc(rs_nvec_slab_bytes(N, 2));
    rs_nvec_slab_t *slab = rs_nvec_slab_init(mem, N, 2, ctx);
    double xs[N] = {1.0, 2.0, 4.0};

    N_Vector x = rs_nvec_make(slab, xs);
    CHECK(N_VGetArrayPointer(x) == xs && N_VGetLength(x) == N, "x is made over the caller's array");
    N_Vector a = N_VClone(x), b = N_VClone(x), c = N_VClone(x);
    counts(slab, 2, 2, "x and three clones, two slots");
    CHECK(a->ops == x->ops && c->ops == x->ops, "one ops table for all");
    CHECK(N_VGetVectorID(a) == SUNDIALS_NVEC_CUSTOM && N_VGetArrayPointer(a) != xs,
          "a clone has its own values");
    sunindextype lrw = 0, liw = 0;
    a->ops->nvspace(a, &lrw, &liw); /* the op itself: SUNDIALS 7 deprecates N_VSpace */
    CHECK(lrw == N && liw == 1, "space: %ld reals, %ld integers", (long)lrw, (long)liw);

    N_VConst(2.0, a);
    CHECK(equal(a, 2, 2, 2), "const");
    N_VLinearSum(1.0, x, -1.0, a, b);
    CHECK(equal(b, -1, 0, 2), "x - a");
    N_VLinearSum(0.5, x, 0.5, a, b);
    CHECK(equal(b, 1.5, 2, 3), "(x + a) / 2");
    N_VLinearSum(2.0, x, 3.0, a, b);
    CHECK(equal(b, 8, 10, 14), "2 x + 3 a");
    N_VLinearSum(-1.0, x, 1.0, b, b);
    CHECK(equal(b, 7, 8, 10), "b - x into b");

    sunrealtype cs[3] = {1.0, 2.0, -1.0};
    N_Vector X[3] = {b, a, x};
    CHECK(N_VLinearCombination(3, cs, X, b) == 0 && equal(b, 10, 10, 10), "b + 2 a - x into b");
    X[0] = x, X[1] = a, X[2] = c;
    N_VConst(1.0, c);
    CHECK(N_VLinearCombination(3, cs, X, c) == 0 && equal(c, 4, 5, 7), "x + 2 a - c into c");
    CHECK(N_VLinearCombination(1, cs + 1, X, c) == 0 && equal(c, 2, 4, 8), "2 x");
    CHECK(N_VLinearCombination(2, cs, X, c) == 0 && equal(c, 5, 6, 8), "x + 2 a");

    sunrealtype sc[2] = {2.0, -1.0};
    N_Vector Y[2] = {a, c}, Z[2] = {b, c};
    CHECK(N_VScaleAddMulti(2, sc, x, Y, Z) == 0 && equal(b, 4, 6, 10) && equal(c, 4, 4, 4),
          "2 x + a, -x + c into c");

    /* more terms than the kernel's table of addresses holds (17: a 16-stage method's solution);
     * coefficients 1..17, x at the odd ones (sum 81), a = (2, 2, 2) at the even ones (sum 72) */
    sunrealtype many_c[17];
    N_Vector many_x[17];
    for (int i = 0; i < 17; i++)
        many_c[i] = (double)(i + 1), many_x[i] = i % 2 ? a : x;
    CHECK(N_VLinearCombination(17, many_c, many_x, c) == 0 && equal(c, 225, 306, 468),
          "17 terms: 81 x + 72 a");
    many_x[16] = c; /* the last term, 17 c, is z itself */
    CHECK(N_VLinearCombination(17, many_c, many_x, c) == 0 &&
              equal(c, 64 + 144 + 17 * 225, 128 + 144 + 17 * 306, 256 + 144 + 17 * 468),
          "17 terms, the last one z itself: 64 x + 72 a + 17 c");

    N_VConst(0.5, a);
    CHECK(N_VWrmsNorm(x, a) == 0.5 * sqrt(21.0 / 3.0), "wrms norm: %.17g", N_VWrmsNorm(x, a));
    N_VLinearSum(1.0, a, -1.0, b, c); /* (-3.5, -5.5, -9.5) */
    CHECK(N_VMaxNorm(c) == 9.5 && N_VMin(c) == -9.5 && N_VMin(x) == 1.0, "max norm, min");
    N_VAbs(c, c);
    CHECK(equal(c, 3.5, 5.5, 9.5), "abs");
    N_VInv(x, c);
    CHECK(equal(c, 1, 0.5, 0.25), "inv");
    N_VAddConst(x, -1.0, c);
    CHECK(equal(c, 0, 1, 3), "add const");
    N_VProd(x, b, c);
    CHECK(equal(c, 4, 12, 40), "prod");
    N_VDiv(b, x, c);
    CHECK(equal(c, 4, 3, 2.5), "div");
    N_VScale(1.0, x, c);
    CHECK(equal(c, 1, 2, 4), "scale by 1: a copy");
    N_VScale(-2.0, c, c);
    CHECK(equal(c, -2, -4, -8), "scale in place");

    N_VDestroy(b);
    counts(slab, 2, 1, "a malloc'd clone destroyed");
    N_VDestroy(a);
    counts(slab, 1, 1, "a slot's clone destroyed");
    N_Vector d = N_VClone(c);
    counts(slab, 2, 1, "the next clone takes the free slot");
    N_Vector e = N_VCloneEmpty(d);
    CHECK(N_VGetArrayPointer(e) == NULL, "an empty clone has no values");
    N_VSetArrayPointer(xs, e);
    CHECK(N_VGetArrayPointer(e) == xs, "set array pointer");
    N_VDestroy(e);
    N_VDestroy(d);
    N_VDestroy(c);
    N_VDestroy(x);
    counts(slab, 0, 0, "all destroyed");
    CHECK(xs[0] == 1.0 && xs[2] == 4.0, "the caller's array is untouched");
    free(mem);

    /* a longer vector through every path of the linear combination (blocks of six elements,
     * a pair, a last single element), z among the terms: each element is the sum of its terms
     * in the order of the vectors, exactly (small integers) */
    enum { L = 15, T = 5 };
    void *lmem = malloc(rs_nvec_slab_bytes(L, T + 1));
    rs_nvec_slab_t *lslab = rs_nvec_slab_init(lmem, L, T + 1, ctx);
    double ys[L];
    for (int k = 0; k < L; k++)
        ys[k] = k + 1;
    N_Vector ly[T];
    ly[0] = rs_nvec_make(lslab, ys);
    for (int i = 1; i < T; i++) {
        ly[i] = N_VClone(ly[0]);
        for (int k = 0; k < L; k++)
            N_VGetArrayPointer(ly[i])[k] = (i + 1) * (k % 4) - i;
    }
    double lc[T] = {1, -2, 3, 0.5, -1}, want[L];
    for (int k = 0; k < L; k++) {
        want[k] = 0;
        for (int i = 0; i < T; i++)
            want[k] += lc[i] * N_VGetArrayPointer(ly[i])[k];
    }
    CHECK(N_VLinearCombination(T, lc, ly, ly[T - 1]) == 0, "15 elements, 5 terms");
    int same = 1;
    for (int k = 0; k < L; k++)
        same &= N_VGetArrayPointer(ly[T - 1])[k] == want[k];
    CHECK(same, "15 elements, 5 terms, z the last: every element its sum");
    for (int i = T - 1; i >= 0; i--)
        N_VDestroy(ly[i]);
    free(lmem);
    SUNContext_Free(&ctx);
    return rs_test_done("test_nvector");
}
