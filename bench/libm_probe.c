/* Probe of the C library's math functions the robots call: for each, 2^20 arguments from a
 * fixed pseudo-random sequence over the ranges the robots use, and a 64-bit FNV-1a digest of
 * the result bits; scripts/test-arm64 compares the x86-64 and arm64 lines.
 *   libm_probe   prints "function digest" lines */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint64_t s = 0x243f6a8885a308d3ULL;
static double u01(void)
{
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return (double)(s >> 11) * 0x1.0p-53;
}

static uint64_t fold(uint64_t h, double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    for (int i = 0; i < 8; i++)
        h = (h ^ (uint8_t)(b >> (8 * i))) * 0x100000001b3ULL;
    return h;
}

#define N (1 << 20)
#define PROBE1(name, f, lo, hi)                                                                \
    do {                                                                                       \
        uint64_t h = 0xcbf29ce484222325ULL;                                                    \
        for (int i = 0; i < N; i++)                                                            \
            h = fold(h, f((lo) + ((hi) - (lo)) * u01()));                                      \
        printf("%-6s %016llx\n", name, (unsigned long long)h);                                 \
    } while (0)
#define PROBE2(name, f, lo, hi)                                                                \
    do {                                                                                       \
        uint64_t h = 0xcbf29ce484222325ULL;                                                    \
        for (int i = 0; i < N; i++) {                                                          \
            double a = (lo) + ((hi) - (lo)) * u01(), b = (lo) + ((hi) - (lo)) * u01();         \
            h = fold(h, f(a, b));                                                              \
        }                                                                                      \
        printf("%-6s %016llx\n", name, (unsigned long long)h);                                 \
    } while (0)

static double pow_pos(double a, double b) { return pow(fabs(a), b); }

int main(void)
{
    PROBE1("sin", sin, -20.0, 20.0);
    PROBE1("cos", cos, -20.0, 20.0);
    PROBE1("exp", exp, -50.0, 50.0);
    PROBE1("log", log, 1e-9, 1e3);
    PROBE2("atan2", atan2, -10.0, 10.0);
    PROBE1("sqrt", sqrt, 0.0, 1e3);
    PROBE2("pow", pow_pos, -4.0, 4.0);
    PROBE1("tanh", tanh, -20.0, 20.0);
    PROBE1("acos", acos, -1.0, 1.0);
    PROBE1("asin", asin, -1.0, 1.0);
    PROBE1("atan", atan, -50.0, 50.0);
    PROBE1("expm1", expm1, -5.0, 5.0);
    PROBE2("hypot", hypot, -10.0, 10.0);
    PROBE1("acosh", acosh, 1.0, 1e3);
    return 0;
}
