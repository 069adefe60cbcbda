/* rs_dense_solve (dense.c): against systems with a known solution (A z* = b built from z*),
 * checked in long double; a system whose first pivot is 0 (needs the row exchange); a singular
 * one and sizes out of range refused with -1; A left as it was. */
#include "rs_core.h"
#include "rs_test.h"

#include <math.h>
#include <string.h>

static uint64_t s = 0x2545f4914f6cdd1dULL;
static double u11(void)
{
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return (double)(s >> 11) * 0x1.0p-52 - 1.0;
}

int main(void)
{
    /* random diagonally dominant systems (condition number of order 1) of every size */
    double worst = 0;
    for (int n = 1; n <= RS_DENSE_MAX; n++)
        for (int rep = 0; rep < 200; rep++) {
            double A[RS_DENSE_MAX * RS_DENSE_MAX], copy[RS_DENSE_MAX * RS_DENSE_MAX];
            double zs[RS_DENSE_MAX], b[RS_DENSE_MAX];
            for (int i = 0; i < n; i++) {
                zs[i] = u11();
                for (int j = 0; j < n; j++)
                    A[i * n + j] = u11() + (i == j ? 2.0 * n : 0.0);
            }
            for (int i = 0; i < n; i++) {
                long double acc = 0;
                for (int j = 0; j < n; j++)
                    acc += (long double)A[i * n + j] * zs[j];
                b[i] = (double)acc;
            }
            memcpy(copy, A, sizeof(double) * (size_t)(n * n));
            CHECK(rs_dense_solve(n, A, b) == 0, "n %d: solved", n);
            CHECK(!memcmp(copy, A, sizeof(double) * (size_t)(n * n)), "n %d: A unchanged", n);
            for (int i = 0; i < n; i++)
                worst = fmax(worst, fabs(b[i] - zs[i]));
        }
    CHECK(worst <= 1e-13, "largest error %.3g on unit-sized solutions", worst);
    /* a zero first pivot: [[0, 1], [2, 3]] z = (1, 8) has z = (2.5, 1) */
    double P[4] = {0, 1, 2, 3}, pb[2] = {1, 8};
    CHECK(rs_dense_solve(2, P, pb) == 0 && pb[0] == 2.5 && pb[1] == 1.0, "pivoted: %g %g", pb[0],
          pb[1]);
    /* singular: the second row twice the first */
    double S[9] = {1, 2, 3, 2, 4, 6, 0, 1, 1}, sb[3] = {1, 2, 3};
    CHECK(rs_dense_solve(3, S, sb) == -1, "singular refused");
    double one[1] = {1}, ob[1] = {1};
    CHECK(rs_dense_solve(0, one, ob) == -1 && rs_dense_solve(RS_DENSE_MAX + 1, one, ob) == -1,
          "sizes out of range refused");
    return rs_test_done("test_dense");
}
