/* A StepBatch over two shards' worlds against the same batch on one shard's (--shards 2): the
 * split where the batch arrives, the inproc hops of its parts and the merge of their replies,
 * against the same number of worlds stepped by one shard. Finger worlds, one control step each
 * with a new force per world per request, StepBatch.arrays (the columnar form) and items.
 * Blocks of the two kinds alternate (ABAB) so drift hits both; per kind: world-steps per
 * second of wall time and the server's CPU seconds per million world-steps.
 *
 * usage: bench_net_split [SECONDS_PER_FIGURE [WORLDS [PATH/TO/robosim-server]]]
 *        (default 2 s, 256 worlds per batch, the server next to this binary) */
#include "server_proc.h"
#include "bench_util.h"

#define BLOCKS 6 /* alternating blocks per kind and form */

typedef struct figure {
    double wall, cpu;
    long steps;
} figure_t;

/* One block: batches of the n worlds `ids` for `seconds`; the world-steps it took. */
static long block(rsc_client_t *c, const uint64_t *ids, size_t n, int arrays, double seconds)
{
    static double u[8192];
    static rsc_batch_item_t items[8192];
    static rsc_command_t cmds[8192];
    rsc_error_t err;
    long steps = 0;
    double until = now() + seconds;
    while (now() < until) {
        for (size_t i = 0; i < n; i++) {
            u[i] = 2.0 * uniform01() - 1.0;
            cmds[i] = (rsc_command_t){"finger", &u[i], 1};
            items[i] = (rsc_batch_item_t){.world_id = ids[i], .steps = 1, .cmds = &cmds[i],
                                          .ncmds = 1};
        }
        if (arrays) {
            Robosim__V1__BatchArraysReply *r = NULL;
            if (rsc_step_arrays(c, ids, n, 1, u, n, NULL, 0, &r, &err) != 0 || r->n_errors) {
                fprintf(stderr, "arrays: %s\n", r ? "a world failed" : err.message);
                exit(1);
            }
            rsc_free(r);
        } else {
            Robosim__V1__StepBatchReply *r = NULL;
            if (rsc_step_batch(c, items, n, &r, &err) != 0) {
                fprintf(stderr, "items: %s\n", err.message);
                exit(1);
            }
            rsc_free(r);
        }
        steps += (long)n;
    }
    return steps;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    size_t n = argc > 2 ? (size_t)atoi(argv[2]) : 256;
    char server[PATH_MAX];
    find_server(server, sizeof server, argc > 3 ? argv[3] : NULL);
    if (n < 2 || n > 4096 || !(seconds > 0)) {
        fprintf(stderr, "usage: bench_net_split [SECONDS_PER_FIGURE [WORLDS [SERVER]]]\n");
        return 2;
    }
    char worlds[16];
    snprintf(worlds, sizeof worlds, "%zu", 4 * n);
    const char *extra[] = {"--shards", "2", "--threads", "1", "--no-world", "--max-worlds",
                           worlds, "--max-worlds-per-client", "0", "--max-worlds-share", "1",
                           "--no-stream", NULL};
    server_proc_t sp;
    if (server_start(&sp, server, extra) != 0) {
        fprintf(stderr, "%s did not start\n", server);
        return 1;
    }
    /* two connections, placed on the two shards; n worlds each; one client holds every token */
    rsc_error_t err;
    rsc_client_t *by[2], *c = rsc_connect(sp.endpoint, 20000, &err);
    uint64_t *on[2] = {calloc(n, sizeof(uint64_t)), calloc(n, sizeof(uint64_t))};
    uint64_t *one = calloc(n, sizeof *one), *both = calloc(n, sizeof *both);
    for (int k = 0; k < 2; k++) {
        by[k] = rsc_connect(sp.endpoint, 20000, &err);
        for (size_t i = 0; i < n; i++) {
            if (rsc_create_world(by[k], "finger", NULL, 0, i, &on[k][i], &err) != 0) {
                fprintf(stderr, "create: %s\n", err.message);
                return 1;
            }
            rsc_set_world_token(c, on[k][i], rsc_world_token(by[k], on[k][i]));
        }
    }
    Robosim__V1__ListWorldsReply *lw = NULL;
    int shard[2] = {-1, -1};
    if (rsc_list_worlds(c, &lw, &err) == 0)
        for (size_t j = 0; j < lw->n_worlds; j++)
            for (int k = 0; k < 2; k++)
                if (lw->worlds[j]->world_id == on[k][0])
                    shard[k] = (int)lw->worlds[j]->shard;
    rsc_free(lw);
    if (shard[0] == shard[1]) {
        fprintf(stderr, "both connections' worlds on shard %d: nothing to compare\n", shard[0]);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        one[i] = on[0][i];
        both[i] = on[i % 2][i / 2];
    }
    printf("bench_net_split: --shards 2 --threads 1, %zu finger worlds per batch, %d blocks of "
           "%.2f s per kind and form, alternating\n", n, BLOCKS, seconds / BLOCKS);
    for (int arrays = 1; arrays >= 0; arrays--) {
        figure_t f[2] = {{0, 0, 0}, {0, 0, 0}}; /* [0] one shard's worlds, [1] both shards' */
        block(c, one, n, arrays, 0.2); /* warm up both */
        block(c, both, n, arrays, 0.2);
        for (int b = 0; b < 2 * BLOCKS; b++) {
            int kind = b % 2;
            double t0 = now(), c0 = cpu_seconds(sp.pid);
            long steps = block(c, kind ? both : one, n, arrays, seconds / BLOCKS);
            f[kind].wall += now() - t0;
            f[kind].cpu += cpu_seconds(sp.pid) - c0;
            f[kind].steps += steps;
        }
        double r0 = f[0].steps / f[0].wall, r1 = f[1].steps / f[1].wall;
        printf("%-6s one shard's worlds:  %9.0f world-steps/s, server CPU %.2f s per 1e6\n",
               arrays ? "arrays" : "items", r0, 1e6 * f[0].cpu / f[0].steps);
        printf("%-6s both shards' worlds: %9.0f world-steps/s, server CPU %.2f s per 1e6 "
               "(split / one shard: %.2f in rate, %.2f in CPU per world-step)\n",
               arrays ? "arrays" : "items", r1, 1e6 * f[1].cpu / f[1].steps, r1 / r0,
               (f[1].cpu / f[1].steps) / (f[0].cpu / f[0].steps));
    }
    rsc_close(&c);
    for (int k = 0; k < 2; k++)
        rsc_close(&by[k]);
    server_stop(&sp);
    free(on[0]);
    free(on[1]);
    free(one);
    free(both);
    return 0;
}
