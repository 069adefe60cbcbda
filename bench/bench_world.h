/* What the in-process benchmarks share beyond bench_util.h: the world they time. */
#ifndef RS_BENCH_WORLD_H
#define RS_BENCH_WORLD_H

#include "rs_core.h"

#include <stdio.h>
#include <stdlib.h>

/* A world of `preset` with params[n], seeded `seed`; the program exits (status 1, the reason on
 * stderr) if it cannot be made. */
static inline rs_world_t *world_or_exit(const char *preset, const rs_param_t *params, size_t n,
                                        uint64_t seed)
{
    rs_status_t st;
    rs_world_t *w = rs_world_new(preset, params, n, seed, &st);
    if (!w) {
        fprintf(stderr, "%s: %s\n", preset, st.message);
        exit(1);
    }
    return w;
}

#endif
