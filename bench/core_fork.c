/* In-process cost of ForkWorld of a world as it is now (rs_world_fork(w, NULL, ...)), and of
 * taking and restoring a snapshot, for each preset, on one core: microseconds per call, the
 * median of 7 rounds of `seconds / 7` each. ForkWorld is a copy of the data (rs_data_copy)
 * plus a new integrator; it once wrote a snapshot and read it back.
 *
 *   bench_core_fork [seconds per preset, default 1] */
#include "bench_util.h"
#include "bench_world.h"
#include "rs_snapshot.h"

#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 7

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(seconds > 0))
        seconds = 1.0;
    static const char *const presets[] = {"finger", "serial_arm", "diff_drive", "workshop"};
    printf("%-12s %14s %18s\n", "preset", "fork us/call", "snapshot+restore us");
    for (int p = 0; p < 4; p++) {
        rs_status_t st;
        rs_world_t *w = world_or_exit(presets[p], NULL, 0, 1);
        rs_step(w->model, w->data, 50, &st);
        size_t n = 0;
        rs_snapshot_size(w, &n);
        uint8_t *buf = malloc(n);
        double fork_us[ROUNDS], snap_us[ROUNDS];
        for (int r = 0; r < ROUNDS; r++) {
            long calls = 0;
            double t0 = now(), t1 = t0;
            while (t1 - t0 < seconds / (2 * ROUNDS)) {
                rs_world_t *f = rs_world_fork(w, NULL, 0, &st);
                if (!f) {
                    fprintf(stderr, "fork: %s\n", st.message);
                    return 1;
                }
                rs_world_destroy(&f);
                calls++;
                t1 = now();
            }
            fork_us[r] = 1e6 * (t1 - t0) / (double)calls;
            calls = 0;
            t0 = t1 = now();
            while (t1 - t0 < seconds / (2 * ROUNDS)) {
                size_t len = 0;
                if (rs_snapshot_write(w, buf, n, &len, &st) < 0 ||
                    rs_snapshot_read(w, buf, len, &st) < 0) {
                    fprintf(stderr, "snapshot: %s\n", st.message);
                    return 1;
                }
                calls++;
                t1 = now();
            }
            snap_us[r] = 1e6 * (t1 - t0) / (double)calls;
        }
        qsort(fork_us, ROUNDS, sizeof(double), by_value);
        qsort(snap_us, ROUNDS, sizeof(double), by_value);
        printf("%-12s %14.2f %18.2f\n", presets[p], fork_us[ROUNDS / 2], snap_us[ROUNDS / 2]);
        free(buf);
        rs_world_destroy(&w);
    }
    return 0;
}
