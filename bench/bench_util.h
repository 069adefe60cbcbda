/* What the benchmarks share: the clocks they time with (tests/timing.h), the agent loops' random
 * commands, the server binary a network benchmark starts (a process's CPU time: cpu_seconds and
 * cpu_threads in tests/timing.h). */
#ifndef RS_BENCH_UTIL_H
#define RS_BENCH_UTIL_H

#include "../tests/timing.h"

#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

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

/* The server binary to bench: `given` if not NULL, else robosim-server beside this program. */
static inline void find_server(char *path, size_t size, const char *given)
{
    if (given) {
        snprintf(path, size, "%s", given);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    snprintf(path, size, "%s/robosim-server", dirname(self));
}

#endif
