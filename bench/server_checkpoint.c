/* What --state-dir costs the server: a checkpoint of N workshop worlds when every world
 * changed, as the request loop pays it (each world's file image built, handed to the writer
 * thread) and until the writer has them on the disk (N files each written, fsync'd and renamed,
 * then the directory fsync'd); one when none changed (each world's snapshot built and hashed,
 * nothing written); and a start-up that restores the N worlds. In-process (rs_server_new without sockets), in a temporary directory
 * under DIR (default /tmp: put it on the disk a server would use).
 *
 *   bench_server_checkpoint [worlds, default 64] [DIR] */
#include "bench_util.h"
#include "rs_log.h"
#include "rs_snapshot.h"
#include "server_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static rs_server_t *server(const char *dir, int n)
{
    rs_server_config_t cfg;
    rs_server_config_defaults(&cfg);
    cfg.bind = NULL;
    cfg.stream_endpoint = NULL;
    cfg.default_preset = NULL;
    cfg.max_worlds = n;
    cfg.threads = 1;
    cfg.state_dir = dir;
    cfg.checkpoint_interval = 1e-9; /* every rs_persist_tick checkpoints */
    rs_status_t st;
    rs_server_t *s = rs_server_new(&cfg, &st);
    if (!s) {
        fprintf(stderr, "bench_server_checkpoint: %s\n", st.message);
        exit(1);
    }
    return s;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 64;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/robosim-ckpt-XXXXXX", argc > 2 ? argv[2] : "/tmp");
    if (n < 1 || !mkdtemp(dir)) {
        fprintf(stderr, "usage: bench_server_checkpoint [worlds] [DIR]\n");
        return 2;
    }
    rs_log_set_level(RS_LOG_WARN);
    rs_server_t *s = server(dir, n);
    for (int i = 0; i < n; i++) {
        Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
        Robosim__V1__CreateWorld cw = ROBOSIM__V1__CREATE_WORLD__INIT;
        cw.preset = "workshop";
        rq.op_case = ROBOSIM__V1__REQUEST__OP_CREATE_WORLD;
        rq.create_world = &cw;
        uint8_t buf[256];
        const uint8_t *out;
        size_t outlen, len = robosim__v1__request__pack(&rq, buf);
        rs_server_handle(s, buf, len, &out, &outlen);
    }
    rs_status_t st;
    double held = 0, all = 0, none = 0;
    int rounds = 5;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < s->nworlds; i++)
            rs_step(s->worlds[i].world->model, s->worlds[i].world->data, 1, &st);
        double t0 = now();
        rs_persist_tick(s); /* what the loop pays */
        double t1 = now();
        if (rs_server_checkpoint(s, &st) < 0) /* waits for the writer; nothing left to write */
            fprintf(stderr, "checkpoint: %s\n", st.message);
        double t2 = now();
        rs_persist_tick(s);
        double t3 = now();
        held += t1 - t0;
        all += t2 - t0;
        none += t3 - t2;
    }
    size_t snap;
    rs_snapshot_size(s->worlds[0].world, &snap);
    int nw = s->nworlds;
    rs_server_destroy(&s);
    double t0 = now();
    s = server(dir, n);
    double restore = now() - t0;
    printf("%d workshop worlds (snapshot %zu bytes each), state dir %s, mean of %d:\n", nw, snap,
           dir, rounds);
    printf("  checkpoint, every world changed: %8.2f ms in the loop, %8.2f ms until on the disk "
           "(%.3f ms per world)\n",
           1e3 * held / rounds, 1e3 * all / rounds, 1e3 * all / rounds / nw);
    printf("  checkpoint, nothing changed:     %8.2f ms in the loop\n", 1e3 * none / rounds);
    printf("  start-up restoring them:         %8.2f ms (%d worlds back)\n", 1e3 * restore,
           s->nworlds);
    rs_server_destroy(&s);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
