/* rs_hypot (fpmath.c): within 2 ulp of hypotl (a wider reference) over the ranges the robots
 * use and far beyond (squares that would overflow or underflow), exact on the axes, and C's
 * special values. */
#include "rs_core.h"
#include "rs_test.h"

#include <math.h>

static uint64_t s = 0x9e3779b97f4a7c15ULL;
static double u01(void)
{
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return (double)(s >> 11) * 0x1.0p-53;
}

/* |got - exact| in units of the last place of the double nearest to exact */
static double ulps(double got, long double exact)
{
    double e = (double)exact;
    double ulp = nextafter(e, INFINITY) - e;
    return (double)(fabsl((long double)got - exact) / (long double)ulp);
}

int main(void)
{
    double worst = 0;
    const double scales[] = {1e-300, 1e-160, 1e-3, 1.0, 10.0, 1e3, 1e160, 1e300};
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < 200000; i++) {
            double x = scales[k] * (2.0 * u01() - 1.0), y = scales[k] * (2.0 * u01() - 1.0);
            if (i % 4 == 0)
                y *= 1e-9; /* one side much smaller */
            double e = ulps(rs_hypot(x, y), hypotl((long double)x, (long double)y));
            worst = e > worst ? e : worst;
        }
    CHECK(worst <= 2.0, "rs_hypot within 2 ulp of hypotl (worst %.3f ulp)", worst);
    printf("rs_hypot: worst error %.3f ulp\n", worst);
    CHECK(rs_hypot(3.0, 4.0) == 5.0 && rs_hypot(-0.0, 0.0) == 0.0 && rs_hypot(-7.5, 0.0) == 7.5,
          "exact cases");
    CHECK(rs_hypot(1e308, 1e308) > 1e308 && isfinite(rs_hypot(1e308, 1e308)),
          "no overflow where the result is representable");
    CHECK(rs_hypot(3e-310, 4e-310) > 0, "no underflow to zero for subnormal sides");
    CHECK(isinf(rs_hypot(INFINITY, NAN)) && isinf(rs_hypot(NAN, -INFINITY)) &&
              isnan(rs_hypot(NAN, 1.0)),
          "C's special values");
    return rs_test_done("test_fpmath");
}
