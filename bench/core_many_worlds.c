/* In-process world-steps per second of many finger worlds stepped in turn, one 10 ms control
 * step each with a new force, on one core: what a StepBatch's workers do, without the network
 * and protobuf. With 1 or 16 worlds the worlds stay in cache; with 1024 each world's step
 * starts cold, which is what a batch of 1024 pays (compare bench_net_many b); 4096 worlds (25 MB)
 * outgrow a 32 MB L3 cache shared with other work, and each step waits on memory. As the StepBatch
 * workers do, the worlds ahead are prefetched in stages (rs_world_prefetch_stage) while one is
 * stepped; `bench_core_many_worlds 1 next` prefetches the whole of the next world at once
 * (rs_world_prefetch), `bench_core_many_worlds 1 noprefetch` leaves prefetching out.
 *
 *   bench_core_many_worlds [seconds per size, default 1 [staged|next|noprefetch]] */
#include "bench_util.h"
#include "rs_core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    const char *mode = argc > 2 ? argv[2] : "staged";
    int prefetch = strcmp(mode, "noprefetch") != 0, staged = strcmp(mode, "staged") == 0;
    static const int sizes[] = {1, 16, 256, 1024, 4096};
    printf("finger worlds stepped in turn in one thread, control_dt 10 ms, a new force each "
           "step, %s\n", staged     ? "the worlds ahead prefetched in stages"
                   : prefetch ? "the next world prefetched"
                              : "no prefetch");
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int n = sizes[si];
        rs_status_t st;
        rs_world_t **w = calloc((size_t)n, sizeof *w);
        for (int i = 0; i < n; i++)
            if (!(w[i] = rs_world_new("finger", NULL, 0, (uint64_t)i, &st))) {
                fprintf(stderr, "bench_core_many_worlds: %s\n", st.message);
                return 1;
            }
        long steps = 0, round = 0;
        double t0 = now(), t = 0;
        do {
            for (int i = 0; i < n; i++) {
                if (staged) /* as the StepBatch workers do */
                    for (int k = RS_WORLD_PREFETCH_STAGES; k >= 1; k--) {
                        if (i + k < n)
                            rs_world_prefetch_stage(w[i + k], k);
                    }
                else if (prefetch && i + 1 < n)
                    rs_world_prefetch(w[i + 1]);
                double f = 0.5 + 0.5 * sin(0.1 * (double)round + i);
                if (rs_set_commands(w[i]->model, w[i]->data, 0, &f, 1, &st) != 0 ||
                    rs_step(w[i]->model, w[i]->data, 1, &st) != 0) {
                    fprintf(stderr, "bench_core_many_worlds: %s\n", st.message);
                    return 1;
                }
            }
            steps += n;
            round++;
            t = now() - t0;
        } while (t < seconds);
        printf("  %5d worlds: %9.0f world-steps/s  (%.2f us per world-step)\n", n,
               (double)steps / t, 1e6 * t / (double)steps);
        for (int i = 0; i < n; i++)
            rs_world_destroy(&w[i]);
        free(w);
    }
    return 0;
}
