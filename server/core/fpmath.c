/* Math functions whose bits do not depend on the platform's C library: built from IEEE 754
 * operations only (+, -, *, /, sqrt, each correctly rounded everywhere; the core is compiled
 * with -ffp-contract=off), for the functions whose glibc results differ between x86-64 and
 * arm64 (scripts/test-arm64's probe: hypot). */
#include "rs_core.h"

#include <math.h>

double rs_hypot(double x, double y)
{
    double ax = fabs(x), ay = fabs(y);
    if (isinf(ax) || isinf(ay))
        return INFINITY; /* as C's hypot: infinite even with a NaN beside it */
    if (isnan(ax) || isnan(ay))
        return ax + ay;
    double hi = ax > ay ? ax : ay, lo = ax > ay ? ay : ax;
    if (hi == 0.0)
        return 0.0;
    /* scale by a power of two (exact) so that the squares neither overflow nor underflow */
    double scale = 1.0;
    if (hi > 0x1p500) {
        scale = 0x1p600;
        hi *= 0x1p-600;
        lo *= 0x1p-600;
    } else if (hi < 0x1p-500) {
        scale = 0x1p-600;
        hi *= 0x1p600;
        lo *= 0x1p600;
    }
    return scale * sqrt(hi * hi + lo * lo);
}
