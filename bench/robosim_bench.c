/* robosim-bench: the cost of a Step round trip against the transport it rides on.
 *
 * In one run, alternating blocks so that machine drift hits both alike:
 *   raw   a ZeroMQ DEALER -> ROUTER echo round trip over tcp loopback, with the request and reply
 *         payloads the same size as a Step's (the echo runs in its own process, as the server);
 *   step  a gym-style Step (set both wheel speeds, advance one 10 ms control step, get the whole
 *         state back) of the diff-drive world through robosim-server.
 * Prints both mean round trips and their ratio (goal: at most 1.10), and beside them the CPU
 * time per round trip of the echo and of the server (every thread, from schedstat) and of this
 * client in each kind of block: wall time on a shared machine swings, CPU time much less.
 * A third block in each round does the Step's own work with no sockets: the same request
 * handled by an in-process server (rs_server_handle: decode, step, encode) and the client's
 * packing of it and unpacking of its reply. Each round trip waits for that work on top of the
 * transport's, so (raw + that) / raw is the ratio a server and client that added nothing else
 * would reach: the floor under the goal on this machine. */
#include "server_proc.h" /* free_port, server_start, server_stop (tests/net) */
#include "bench_util.h"
#include "rs_log.h"
#include "rs_server.h"

#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

/* The echo server: answers every message with as many bytes as its first four bytes say (so
 * the reply is as large as a Step's). Runs until killed. */
static void echo_server(const char *endpoint)
{
    void *ctx = zmq_ctx_new(), *router = zmq_socket(ctx, ZMQ_ROUTER);
    if (zmq_bind(router, endpoint) != 0) {
        fprintf(stderr, "robosim-bench: echo cannot bind %s: %s\n", endpoint, zmq_strerror(zmq_errno()));
        _exit(1);
    }
    static char reply[1 << 20];
    for (;;) {
        zmq_msg_t id, body;
        zmq_msg_init(&id);
        zmq_msg_init(&body);
        if (zmq_msg_recv(&id, router, 0) < 0 || zmq_msg_recv(&body, router, 0) < 0)
            _exit(0);
        uint32_t want = 0;
        if (zmq_msg_size(&body) >= 4)
            memcpy(&want, zmq_msg_data(&body), 4);
        zmq_msg_send(&id, router, ZMQ_SNDMORE);
        zmq_send(router, reply, want < sizeof reply ? want : sizeof reply, 0);
        zmq_msg_close(&body);
    }
}

int main(int argc, char **argv)
{
    int rounds = 40, per_block = 500;
    char server_path[PATH_MAX];
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("usage: robosim-bench [ROUNDS [PER_BLOCK [PATH/TO/robosim-server]]]\n"
               "  defaults: 40 rounds of 500 round trips each way; the server next to this "
               "binary\n");
        return 0;
    }
    if (argc > 1)
        rounds = atoi(argv[1]);
    if (argc > 2)
        per_block = atoi(argv[2]);
    find_server(server_path, sizeof server_path, argc > 3 ? argv[3] : NULL);
    if (rounds < 1 || per_block < 1) {
        fprintf(stderr, "robosim-bench: ROUNDS and PER_BLOCK must be positive\n");
        return 2;
    }

    /* fork the echo server before this process starts any ZeroMQ threads */
    char echo_ep[64];
    snprintf(echo_ep, sizeof echo_ep, "tcp://127.0.0.1:%d", free_port());
    pid_t echo = fork();
    if (echo == 0)
        echo_server(echo_ep);
    server_proc_t server;
    rsc_error_t err;
    rsc_client_t *c = NULL;
    if (server_start(&server, server_path, NULL) != 0 ||
        !(c = rsc_connect(server.endpoint, 2000, &err))) {
        fprintf(stderr, "robosim-bench: server %s did not come up\n", server_path);
        server_stop(&server);
        kill(echo, SIGTERM);
        return 1;
    }
    uint64_t world;
    if (rsc_create_world(c, "diff_drive", NULL, 0, 0, &world, &err) != 0) {
        fprintf(stderr, "robosim-bench: create: %s\n", err.message);
        return 1;
    }

    /* the sizes of a Step request and reply, for the echo */
    double u[2] = {3.0, 2.5};
    rsc_command_t cmd = {"robot", u, 2};
    Robosim__V1__ActuatorCommand ac = ROBOSIM__V1__ACTUATOR_COMMAND__INIT;
    ac.entity = "robot";
    ac.n_values = 2;
    ac.values = u;
    Robosim__V1__ActuatorCommand *acs[] = {&ac};
    Robosim__V1__Step step = ROBOSIM__V1__STEP__INIT;
    step.steps = 1;
    step.length_case = ROBOSIM__V1__STEP__LENGTH_STEPS;
    step.n_commands = 1;
    step.commands = acs;
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    rq.id = 123456;
    rq.world_id = world;
    rq.op_case = ROBOSIM__V1__REQUEST__OP_STEP;
    rq.step = &step;
    size_t req_size = robosim__v1__request__get_packed_size(&rq);
    Robosim__V1__Response *resp = NULL;
    rsc_call(c, &rq, &resp, &err);
    size_t reply_size = resp ? robosim__v1__response__get_packed_size(resp) : 0;
    rsc_free(resp);

    /* the same Step handled in-process: a server without sockets, its own diff-drive world */
    rs_log_set_level(RS_LOG_WARN);
    rs_server_config_t icfg;
    rs_server_config_defaults(&icfg);
    icfg.bind = NULL;
    icfg.stream_endpoint = NULL;
    icfg.default_preset = NULL;
    rs_status_t ist;
    rs_status_clear(&ist);
    rs_server_t *inproc = rs_server_new(&icfg, &ist);
    Robosim__V1__Request irq = rq;
    char itoken[128] = "";
    {
        Robosim__V1__CreateWorld cw = ROBOSIM__V1__CREATE_WORLD__INIT;
        cw.preset = "diff_drive";
        Robosim__V1__Request crq = ROBOSIM__V1__REQUEST__INIT;
        crq.id = 1;
        crq.op_case = ROBOSIM__V1__REQUEST__OP_CREATE_WORLD;
        crq.create_world = &cw;
        uint8_t cbuf[256];
        size_t clen = robosim__v1__request__pack(&crq, cbuf);
        const uint8_t *out = NULL;
        size_t outlen = 0;
        Robosim__V1__Response *cr = NULL;
        if (inproc)
            rs_server_handle(inproc, cbuf, clen, &out, &outlen);
        if (!inproc || !(cr = robosim__v1__response__unpack(NULL, outlen, out)) ||
            cr->result_case != ROBOSIM__V1__RESPONSE__RESULT_CREATE_WORLD) {
            fprintf(stderr, "robosim-bench: in-process server: %s\n",
                    inproc ? "CreateWorld failed" : ist.message);
            return 1;
        }
        irq.world_id = cr->create_world->world->world_id;
        snprintf(itoken, sizeof itoken, "%s", cr->create_world->token);
        robosim__v1__response__free_unpacked(cr, NULL);
        irq.token = itoken;
    }
    uint8_t *ibuf = malloc(robosim__v1__request__get_packed_size(&irq) + 64);

    void *ctx = zmq_ctx_new(), *dealer = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0, timeout_ms = 2000;
    zmq_setsockopt(dealer, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(dealer, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    zmq_connect(dealer, echo_ep);
    char *payload = calloc(1, req_size + 4), *back = malloc(reply_size + 64);
    uint32_t want = (uint32_t)reply_size;
    memcpy(payload, &want, 4);
    /* warm both paths up */
    for (int i = 0; i < 500; i++) {
        zmq_send(dealer, payload, req_size, 0);
        if (zmq_recv(dealer, back, reply_size + 64, 0) < 0) {
            fprintf(stderr, "robosim-bench: the echo server does not answer\n");
            kill(echo, SIGTERM);
            server_stop(&server);
            return 1;
        }
        rsc_step(c, world, 1, 0, &cmd, 1, NULL, &err);
    }

    double t_raw = 0, t_step = 0, t_handle = 0, t_client_work = 0;
    /* CPU time beside wall time (schedstat, every thread): the echo's and the server's per
     * round trip, and this client's in each kind of block */
    double cpu_echo = 0, cpu_server = 0, cpu_client_raw = 0, cpu_client_step = 0;
    long n_raw = 0, n_step = 0, failures = 0;
    double *ratios = calloc((size_t)rounds, sizeof(double));
    for (int r = 0; r < rounds; r++) {
        double e0 = cpu_seconds(echo), c0 = cpu_seconds(getpid());
        double t0 = now();
        for (int i = 0; i < per_block; i++) {
            zmq_send(dealer, payload, req_size, 0);
            if (zmq_recv(dealer, back, reply_size + 64, 0) < 0)
                failures++;
        }
        double t1 = now();
        double e1 = cpu_seconds(echo), c1 = cpu_seconds(getpid()),
               s1 = cpu_seconds(server.pid);
        for (int i = 0; i < per_block; i++) {
            u[0] = 3.0 + 0.001 * (i % 7); /* a new command every step, as an agent sends */
            Robosim__V1__State *s = NULL;
            if (rsc_step(c, world, 1, 0, &cmd, 1, &s, &err) != 0)
                failures++;
            rsc_free(s);
        }
        double t2 = now(), s2 = cpu_seconds(server.pid), c2 = cpu_seconds(getpid());
        /* the Step's own work, no sockets: the client's packing and unpacking, the server's
         * handling (after the CPU figures above are taken: it runs in this process) */
        for (int i = 0; i < per_block; i++) {
            u[0] = 3.0 + 0.001 * (i % 7);
            irq.id = (uint64_t)i + 1;
            double a = now();
            size_t len = robosim__v1__request__pack(&irq, ibuf);
            double b = now();
            const uint8_t *out = NULL;
            size_t outlen = 0;
            rs_server_handle(inproc, ibuf, len, &out, &outlen);
            double d = now();
            Robosim__V1__Response *rp = robosim__v1__response__unpack(NULL, outlen, out);
            if (!rp || rp->result_case != ROBOSIM__V1__RESPONSE__RESULT_STEP)
                failures++;
            if (rp)
                robosim__v1__response__free_unpacked(rp, NULL);
            t_handle += d - b;
            t_client_work += (b - a) + (now() - d);
        }
        cpu_echo += e1 - e0;
        cpu_client_raw += c1 - c0;
        cpu_server += s2 - s1;
        cpu_client_step += c2 - c1;
        t_raw += t1 - t0;
        t_step += t2 - t1;
        ratios[r] = (t2 - t1) / (t1 - t0);
        n_raw += per_block;
        n_step += per_block;
    }
    double raw_us = 1e6 * t_raw / (double)n_raw, step_us = 1e6 * t_step / (double)n_step;
    printf("payload: request %zu bytes, reply %zu bytes; %d rounds x %d round trips each\n",
           req_size, reply_size, rounds, per_block);
    printf("raw zmq round trip (tcp loopback): %8.2f us\n", raw_us);
    printf("step round trip (diff_drive, 10 ms step, commands + full state): %8.2f us\n", step_us);
    double us_echo = 1e6 * cpu_echo / (double)n_raw, us_server = 1e6 * cpu_server / (double)n_step,
           us_craw = 1e6 * cpu_client_raw / (double)n_raw,
           us_cstep = 1e6 * cpu_client_step / (double)n_step;
    printf("CPU per round trip (schedstat, all threads): echo %.2f us, server %.2f us (%.3f); "
           "this client %.2f us raw, %.2f us step; both ends %.3f\n",
           us_echo, us_server, us_server / us_echo, us_craw, us_cstep,
           (us_server + us_cstep) / (us_echo + us_craw));
    double handle_us = 1e6 * t_handle / (double)n_step,
           client_us = 1e6 * t_client_work / (double)n_step;
    printf("the Step's own work with no sockets: the server's handling %.2f us (decode, step, "
           "encode), the client's packing and unpacking %.2f us; floor of the ratio "
           "(raw + both) / raw: %.3f\n",
           handle_us, client_us, (raw_us + handle_us + client_us) / raw_us);
    qsort(ratios, (size_t)rounds, sizeof(double), by_value);
    printf("ratio step / raw: %.3f overall, %.3f median of %d rounds (goal <= 1.10)%s\n",
           step_us / raw_us, ratios[rounds / 2], rounds, failures ? " -- with failures!" : "");

    rsc_close(&c);
    free(ibuf);
    rs_server_destroy(&inproc);
    zmq_close(dealer);
    zmq_ctx_term(ctx);
    kill(echo, SIGTERM);
    server_stop(&server);
    waitpid(echo, NULL, 0);
    return failures ? 1 : 0;
}
