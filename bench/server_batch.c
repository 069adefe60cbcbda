/* The batch path without sockets: StepBatch.arrays of N finger worlds (one 10 ms control step
 * each, a new force per world per request) handed to rs_server_handle on one thread (--threads
 * 1: the loop steps every world), against N worlds of the same preset stepped in-process by
 * rs_set_commands and rs_step, in alternating blocks (ABAB). What the handler adds per world
 * (decode, tokens, admission, the rollback boundary, the budget's clock, the reply's columns)
 * is the difference, with no ZeroMQ, no other thread and no client in the way.
 *
 * usage: bench_server_batch [WORLDS [SECONDS]]  (default 1024 worlds, 4 s in all)
 * environment: BENCH_ONLY=handler: every block through the handler (to profile it alone);
 *              BENCH_ONLY=inprocess: every block in-process (the profile to compare with) */
#include "rs_core.h"
#include "rs_log.h"
#include "rs_server.h"
#include "robosim/v1/robosim.pb-c.h"

#include "bench_util.h"

#include <stdlib.h>

static void die(const char *what, const char *message)
{
    fprintf(stderr, "bench_server_batch: %s: %s\n", what, message);
    exit(1);
}

/* One request through the handler; its Response (caller frees). */
static Robosim__V1__Response *handle(rs_server_t *s, Robosim__V1__Request *rq)
{
    size_t len = robosim__v1__request__get_packed_size(rq);
    uint8_t *buf = malloc(len ? len : 1);
    robosim__v1__request__pack(rq, buf);
    const uint8_t *out;
    size_t outlen;
    rs_server_handle(s, buf, len, &out, &outlen);
    free(buf);
    Robosim__V1__Response *rp = robosim__v1__response__unpack(NULL, outlen, out);
    if (!rp)
        die("handle", "no Response");
    if (rp->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR)
        die("handle", rp->error->message);
    return rp;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    double seconds = argc > 2 ? atof(argv[2]) : 4.0;
    const char *only = getenv("BENCH_ONLY"); /* "handler": its blocks alone (for a profiler) */
    int handler_only = only && !strcmp(only, "handler");
    int local_only = only && !strcmp(only, "inprocess");
    if (n < 1 || seconds <= 0) {
        printf("usage: bench_server_batch [WORLDS [SECONDS]]\n");
        return 2;
    }
    rs_log_set_level(RS_LOG_WARN);
    rs_server_config_t cfg;
    rs_server_config_defaults(&cfg);
    cfg.bind = NULL;
    cfg.stream_endpoint = NULL;
    cfg.default_preset = NULL;
    cfg.max_worlds = n + 1;
    cfg.max_batch = n;
    cfg.max_worlds_per_client = 0;
    cfg.threads = 1;
    rs_status_t st;
    rs_status_clear(&st);
    rs_server_t *s = rs_server_new(&cfg, &st);
    if (!s)
        die("server", st.message);

    uint64_t *ids = calloc((size_t)n, sizeof *ids);
    char **tokens = calloc((size_t)n, sizeof *tokens);
    rs_world_t **local = calloc((size_t)n, sizeof *local);
    for (int i = 0; i < n; i++) {
        Robosim__V1__CreateWorld cw = ROBOSIM__V1__CREATE_WORLD__INIT;
        cw.preset = "finger";
        cw.seed = (uint64_t)i;
        Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
        rq.id = (uint64_t)i + 1;
        rq.op_case = ROBOSIM__V1__REQUEST__OP_CREATE_WORLD;
        rq.create_world = &cw;
        Robosim__V1__Response *rp = handle(s, &rq);
        ids[i] = rp->create_world->world->world_id;
        tokens[i] = strdup(rp->create_world->token);
        robosim__v1__response__free_unpacked(rp, NULL);
        if (!(local[i] = rs_world_new("finger", NULL, 0, (uint64_t)i, &st)))
            die("in-process world", st.message);
    }

    double *forces = calloc((size_t)n, sizeof *forces);
    Robosim__V1__BatchArrays arr = ROBOSIM__V1__BATCH_ARRAYS__INIT;
    arr.n_world_ids = (size_t)n;
    arr.world_ids = ids;
    arr.n_tokens = (size_t)n;
    arr.tokens = tokens;
    arr.steps = 1;
    arr.n_commands = (size_t)n;
    arr.commands = forces;
    Robosim__V1__StepBatch sb = ROBOSIM__V1__STEP_BATCH__INIT;
    sb.form_case = ROBOSIM__V1__STEP_BATCH__FORM_ARRAYS;
    sb.arrays = &arr;
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    rq.op_case = ROBOSIM__V1__REQUEST__OP_STEP_BATCH;
    rq.step_batch = &sb;
    size_t cap = robosim__v1__request__get_packed_size(&rq) + 64;
    uint8_t *buf = malloc(cap);

    const int blocks = 8;
    double t_handle = 0, t_local = 0;
    long ws_handle = 0, ws_local = 0, round = 0;
    for (int b = 0; b < 2 * blocks; b++) {
        double t0 = now(), t = 0, busy = 0; /* busy: the handler's or the steps' time */
        long steps = 0;
        do {
            for (int i = 0; i < n; i++)
                forces[i] = 0.5 + 0.5 * sin(0.1 * (double)round + i);
            if ((b % 2 == 0 || handler_only) && !local_only) {
                rq.id = (uint64_t)round + 1;
                size_t len = robosim__v1__request__pack(&rq, buf); /* the client's part: */
                const uint8_t *out;                                /* not timed */
                size_t outlen;
                double h0 = now();
                rs_server_handle(s, buf, len, &out, &outlen);
                busy += now() - h0;
                if (outlen < 8)
                    die("batch", "reply too short");
            } else {
                double h0 = now();
                for (int i = 0; i < n; i++) {
                    if (i + 1 < n)
                        rs_world_prefetch(local[i + 1]);
                    if (rs_set_commands(local[i]->model, local[i]->data, 0, &forces[i], 1, &st) ||
                        rs_step(local[i]->model, local[i]->data, 1, &st))
                        die("in-process", st.message);
                }
                busy += now() - h0;
            }
            steps += n;
            round++;
            t = now() - t0;
        } while (t < seconds / (2 * blocks));
        if (b % 2 == 0) {
            t_handle += busy;
            ws_handle += steps;
        } else {
            t_local += busy;
            ws_local += steps;
        }
    }
    /* the last reply says every world stepped */
    rq.id = (uint64_t)round + 1;
    Robosim__V1__Response *rp = handle(s, &rq);
    size_t ok = 0;
    for (size_t i = 0; i < rp->step_batch->arrays->n_codes; i++)
        ok += rp->step_batch->arrays->codes[i] == 0;
    robosim__v1__response__free_unpacked(rp, NULL);
    double us_h = 1e6 * t_handle / (double)ws_handle, us_l = 1e6 * t_local / (double)ws_local;
    printf("bench_server_batch: StepBatch.arrays of %d finger worlds, one control step each, "
           "%d blocks each way, alternating\n", n, blocks);
    printf("  through rs_server_handle (one thread): %.3f us per world-step (%.0f world-steps/s)\n",
           us_h, 1e6 / us_h);
    printf("  in-process rs_set_commands + rs_step: %.3f us per world-step (%.0f world-steps/s)\n",
           us_l, 1e6 / us_l);
    printf("  handler / in-process: %.3f (%zu of %d worlds stepped in the last reply)\n",
           us_h / us_l, ok, n);

    for (int i = 0; i < n; i++) {
        free(tokens[i]);
        rs_world_destroy(&local[i]);
    }
    free(tokens);
    free(ids);
    free(local);
    free(forces);
    free(buf);
    rs_server_destroy(&s);
    return ok == (size_t)n ? 0 : 1;
}
