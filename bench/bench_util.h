/* What the in-process benchmarks share: the clocks they time with and the agent loops' random
 * commands. */
#ifndef RS_BENCH_UTIL_H
#define RS_BENCH_UTIL_H

#include <stdint.h>
#include <time.h>

/* Seconds on the monotonic clock (wall time). */
static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds of CPU time this process has used (all its threads). */
static inline double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A uniform double in [0, 1) from one xorshift64 sequence per program (the same sequence on
 * every run, so runs compare). */
static inline double uniform01(void)
{
    static uint64_t rng = 88172645463325252ULL;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1.0p-53;
}

/* qsort's comparison of doubles, ascending. */
static inline int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
