/* The C client without a server: unreachable endpoints, timeouts, stale replies, a refused
 * version and garbage replies, against fake servers (a ROUTER socket in a thread of this
 * test). argv[1] (the server binary) is not used. Loopback addresses only. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "robosim_client.h"
#include "rs_test.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A loopback TCP port nobody listens on (bound by the kernel, then released). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("free_port");
        exit(1);
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* ---- fake servers ------------------------------------------------------------------------- */

typedef enum {
    FAKE_SILENT,   /* read requests, never answer */
    FAKE_STALE,    /* ignore request 1; answer request 2 with 1's reply first, then 2's */
    FAKE_VERSION,  /* answer everything with VERSION_MISMATCH */
    FAKE_MAJOR2,   /* answer Hello with a HelloReply of major 2 */
    FAKE_GARBAGE,  /* answer with bytes that are not a Response */
    FAKE_ERROR,    /* answer with NOT_FOUND */
    FAKE_ECHO_ID0, /* answer anything with an id-0 MALFORMED error (as for unreadable bytes) */
} fake_mode_t;

#define FAKE_VERSION_MESSAGE "this server speaks protocol 7.0; the client sent 1.0"
#define FAKE_NOT_FOUND_MESSAGE "no world 42; see ListWorlds"
#define STALE_WORLD 111
#define FRESH_WORLD 222

typedef struct fake {
    fake_mode_t mode;
    void *ctx, *sock;
    char endpoint[128];
    pthread_t thread;
    atomic_int stop;
    atomic_int requests; /* requests read */
} fake_t;

static void send_reply(fake_t *f, zmq_msg_t *identity, const Robosim__V1__Response *r)
{
    size_t len = robosim__v1__response__get_packed_size(r);
    uint8_t *buf = malloc(len ? len : 1);
    robosim__v1__response__pack(r, buf);
    zmq_msg_t id;
    zmq_msg_init(&id);
    zmq_msg_copy(&id, identity);
    zmq_msg_send(&id, f->sock, ZMQ_SNDMORE);
    zmq_send(f->sock, buf, len, 0);
    free(buf);
}

static void send_error(fake_t *f, zmq_msg_t *identity, uint64_t id, int code, const char *msg)
{
    Robosim__V1__Response r = ROBOSIM__V1__RESPONSE__INIT;
    Robosim__V1__Error e = ROBOSIM__V1__ERROR__INIT;
    e.code = code;
    e.message = (char *)msg;
    r.id = id;
    r.result_case = ROBOSIM__V1__RESPONSE__RESULT_ERROR;
    r.error = &e;
    send_reply(f, identity, &r);
}

static void send_worlds(fake_t *f, zmq_msg_t *identity, uint64_t id, uint64_t world)
{
    Robosim__V1__Response r = ROBOSIM__V1__RESPONSE__INIT;
    Robosim__V1__ListWorldsReply l = ROBOSIM__V1__LIST_WORLDS_REPLY__INIT;
    Robosim__V1__WorldInfo w = ROBOSIM__V1__WORLD_INFO__INIT;
    Robosim__V1__WorldInfo *ws[] = {&w};
    w.world_id = world;
    w.preset = (char *)"diff_drive";
    l.n_worlds = 1;
    l.worlds = ws;
    r.id = id;
    r.result_case = ROBOSIM__V1__RESPONSE__RESULT_LIST_WORLDS;
    r.list_worlds = &l;
    send_reply(f, identity, &r);
}

static void *fake_main(void *arg)
{
    fake_t *f = arg;
    uint64_t first_id = 0;
    while (!atomic_load(&f->stop)) {
        zmq_pollitem_t item = {f->sock, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, 20) <= 0)
            continue;
        zmq_msg_t identity, body;
        zmq_msg_init(&identity);
        zmq_msg_init(&body);
        zmq_msg_recv(&identity, f->sock, 0);
        zmq_msg_recv(&body, f->sock, 0);
        int n = atomic_fetch_add(&f->requests, 1) + 1;
        Robosim__V1__Request *req =
            robosim__v1__request__unpack(NULL, zmq_msg_size(&body), zmq_msg_data(&body));
        uint64_t id = req ? req->id : 0;
        switch (f->mode) {
        case FAKE_SILENT: break;
        case FAKE_STALE:
            if (n == 1) {
                first_id = id; /* let this call time out */
            } else if (n == 2) {
                send_worlds(f, &identity, first_id, STALE_WORLD);
                send_worlds(f, &identity, id, FRESH_WORLD);
            } else {
                send_worlds(f, &identity, id, FRESH_WORLD + (uint64_t)n);
            }
            break;
        case FAKE_VERSION:
            send_error(f, &identity, id, ROBOSIM__V1__ERROR_CODE__VERSION_MISMATCH,
                       FAKE_VERSION_MESSAGE);
            break;
        case FAKE_MAJOR2: {
            Robosim__V1__Response r = ROBOSIM__V1__RESPONSE__INIT;
            Robosim__V1__HelloReply h = ROBOSIM__V1__HELLO_REPLY__INIT;
            h.major = 2;
            h.server_version = (char *)"9.9.9";
            r.id = id;
            r.result_case = ROBOSIM__V1__RESPONSE__RESULT_HELLO;
            r.hello = &h;
            send_reply(f, &identity, &r);
            break;
        }
        case FAKE_GARBAGE: {
            static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                           0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
            zmq_msg_send(&identity, f->sock, ZMQ_SNDMORE);
            zmq_send(f->sock, junk, sizeof junk, 0);
            zmq_msg_init(&identity);
            break;
        }
        case FAKE_ERROR:
            send_error(f, &identity, id, ROBOSIM__V1__ERROR_CODE__NOT_FOUND,
                       FAKE_NOT_FOUND_MESSAGE);
            break;
        case FAKE_ECHO_ID0:
            send_error(f, &identity, 0, ROBOSIM__V1__ERROR_CODE__MALFORMED, "not a Request");
            break;
        }
        if (req)
            robosim__v1__request__free_unpacked(req, NULL);
        zmq_msg_close(&identity);
        zmq_msg_close(&body);
    }
    return NULL;
}

static void fake_start(fake_t *f, fake_mode_t mode)
{
    memset(f, 0, sizeof *f);
    f->mode = mode;
    f->ctx = zmq_ctx_new();
    f->sock = zmq_socket(f->ctx, ZMQ_ROUTER);
    int linger = 0;
    zmq_setsockopt(f->sock, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind(f->sock, "tcp://127.0.0.1:*") != 0) {
        perror("fake server bind");
        exit(1);
    }
    size_t len = sizeof f->endpoint;
    zmq_getsockopt(f->sock, ZMQ_LAST_ENDPOINT, f->endpoint, &len);
    pthread_create(&f->thread, NULL, fake_main, f);
}

static void fake_stop(fake_t *f)
{
    atomic_store(&f->stop, 1);
    pthread_join(f->thread, NULL);
    zmq_close(f->sock);
    zmq_ctx_term(f->ctx);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_unreachable(void)
{
    char ep[64];
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", free_port());
    rsc_error_t err;
    int64_t t0 = now_ms();
    rsc_client_t *c = rsc_connect(ep, 300, &err);
    int64_t dt = now_ms() - t0;
    CHECK(c == NULL, "connect to %s (nobody listening) succeeded", ep);
    CHECK(err.code == RSC_EUNREACHABLE, "code %d (%s): %s", err.code, rsc_error_name(err.code),
          err.message);
    CHECK(strstr(err.message, ep) != NULL, "message does not name %s: %s", ep, err.message);
    CHECK(strstr(err.message, "300 ms") != NULL, "message does not give the timeout: %s",
          err.message);
    CHECK(dt >= 250 && dt <= 1300, "gave up after %lld ms, not about 300", (long long)dt);
    CHECK(strcmp(rsc_error_name(err.code), "UNREACHABLE") == 0, "%s", rsc_error_name(err.code));
    rsc_close(&c);
}

static void test_timeout_then_usable(void)
{
    fake_t f;
    fake_start(&f, FAKE_SILENT);
    rsc_error_t err;
    rsc_client_t *c = rsc_connect_raw(f.endpoint, 100, &err);
    CHECK(c != NULL, "connect_raw: %s", err.message);
    CHECK(strcmp(rsc_endpoint(c), f.endpoint) == 0, "endpoint %s", rsc_endpoint(c));
    for (int i = 0; i < 3; i++) {
        Robosim__V1__ListWorldsReply *l = (void *)&err; /* must be reset to NULL */
        int64_t t0 = now_ms();
        int rc = rsc_list_worlds(c, &l, &err);
        int64_t dt = now_ms() - t0;
        CHECK(rc == RSC_ETIMEOUT, "call %d: rc %d: %s", i, rc, err.message);
        CHECK(err.code == RSC_ETIMEOUT, "err.code %d", err.code);
        CHECK(l == NULL, "reply not NULL after a timeout");
        CHECK(dt >= 100 && dt <= 1000, "call %d timed out after %lld ms, not 100..1000", i,
              (long long)dt);
        CHECK(strstr(err.message, f.endpoint) != NULL, "message does not name the endpoint: %s",
              err.message);
    }
    CHECK(atomic_load(&f.requests) == 3, "the fake server read %d requests, not 3",
          atomic_load(&f.requests));
    rsc_close(&c);
    CHECK(c == NULL, "rsc_close did not clear the pointer");
    rsc_close(&c);   /* NULL-safe twice */
    rsc_close(NULL); /* and with NULL */
    fake_stop(&f);
}

static void test_stale_reply_discarded(void)
{
    fake_t f;
    fake_start(&f, FAKE_STALE);
    rsc_error_t err;
    rsc_client_t *c = rsc_connect_raw(f.endpoint, 200, &err);
    CHECK(c != NULL, "connect_raw: %s", err.message);

    /* call 1 is never answered in time... */
    Robosim__V1__ListWorldsReply *l = NULL;
    int rc = rsc_list_worlds(c, &l, &err);
    CHECK(rc == RSC_ETIMEOUT, "first call: rc %d: %s", rc, err.message);

    /* ...and its late reply (sent first) must not be taken for call 2's */
    rsc_set_timeout(c, 2000);
    rc = rsc_list_worlds(c, &l, &err);
    CHECK(rc == 0, "second call: rc %d: %s", rc, err.message);
    CHECK(l && l->n_worlds == 1 && l->worlds[0]->world_id == FRESH_WORLD,
          "second call got world %llu, not %d",
          l && l->n_worlds ? (unsigned long long)l->worlds[0]->world_id : 0ULL, FRESH_WORLD);
    CHECK(err.code == 0 && err.message[0] == '\0', "err not cleared on success: %d %s",
          err.code, err.message);
    rsc_free(l);

    /* and the next call goes on normally, through the generic rsc_call */
    Robosim__V1__Request req = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__ListWorlds op = ROBOSIM__V1__LIST_WORLDS__INIT;
    req.op_case = ROBOSIM__V1__REQUEST__OP_LIST_WORLDS;
    req.list_worlds = &op;
    Robosim__V1__Response *resp = NULL;
    rc = rsc_call(c, &req, &resp, &err);
    CHECK(rc == 0, "third call: rc %d: %s", rc, err.message);
    CHECK(req.id == 3, "third request id %llu, not 3", (unsigned long long)req.id);
    CHECK(resp && resp->id == req.id, "reply id does not match");
    CHECK(resp && resp->result_case == ROBOSIM__V1__RESPONSE__RESULT_LIST_WORLDS &&
              resp->list_worlds->worlds[0]->world_id == FRESH_WORLD + 3,
          "third reply is not the third answer");
    rsc_free(resp);
    rsc_close(&c);
    fake_stop(&f);
}

static void test_version_refused(void)
{
    fake_t f;
    fake_start(&f, FAKE_VERSION);
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(f.endpoint, 2000, &err);
    CHECK(c == NULL, "connect succeeded despite VERSION_MISMATCH");
    CHECK(err.code == 9 && err.code == ROBOSIM__V1__ERROR_CODE__VERSION_MISMATCH, "code %d: %s",
          err.code, err.message);
    CHECK(strcmp(err.message, FAKE_VERSION_MESSAGE) == 0, "message '%s'", err.message);
    CHECK(strcmp(rsc_error_name(err.code), "VERSION_MISMATCH") == 0, "name %s",
          rsc_error_name(err.code));
    rsc_close(&c);
    fake_stop(&f);

    /* a server that accepts Hello but answers with another major */
    fake_start(&f, FAKE_MAJOR2);
    c = rsc_connect(f.endpoint, 2000, &err);
    CHECK(c == NULL, "connect to a major-2 server succeeded");
    CHECK(err.code == RSC_EVERSION, "code %d: %s", err.code, err.message);
    CHECK(strstr(err.message, "2.0") != NULL, "message does not name the server's version: %s",
          err.message);
    rsc_close(&c);
    fake_stop(&f);
}

static void test_garbage_reply(void)
{
    fake_t f;
    fake_start(&f, FAKE_GARBAGE);
    rsc_error_t err;
    rsc_client_t *c = rsc_connect_raw(f.endpoint, 2000, &err);
    CHECK(c != NULL, "connect_raw: %s", err.message);
    Robosim__V1__State *s = NULL;
    int rc = rsc_get_state(c, 1, &s, &err);
    CHECK(rc == RSC_EPROTOCOL, "rc %d (%s): %s", rc, rsc_error_name(rc), err.message);
    CHECK(s == NULL, "a state from garbage");
    CHECK(strstr(err.message, f.endpoint) != NULL, "message does not name the endpoint: %s",
          err.message);
    Robosim__V1__Response *resp = NULL;
    rc = rsc_send_raw(c, "hello?", 6, &resp, &err);
    CHECK(rc == RSC_EPROTOCOL && resp == NULL, "send_raw: rc %d", rc);
    rsc_close(&c);
    fake_stop(&f);

    /* rsc_connect against such a server fails with the same code */
    fake_start(&f, FAKE_GARBAGE);
    c = rsc_connect(f.endpoint, 2000, &err);
    CHECK(c == NULL && err.code == RSC_EPROTOCOL, "connect: code %d: %s", err.code,
          err.message);
    fake_stop(&f);
}

static void test_server_error(void)
{
    fake_t f;
    fake_start(&f, FAKE_ERROR);
    rsc_error_t err;
    rsc_client_t *c = rsc_connect_raw(f.endpoint, 2000, &err);
    Robosim__V1__Spec *spec = NULL;
    int rc = rsc_get_spec(c, 42, &spec, &err);
    CHECK(rc == ROBOSIM__V1__ERROR_CODE__NOT_FOUND && err.code == rc, "rc %d err %d", rc,
          err.code);
    CHECK(strcmp(err.message, FAKE_NOT_FOUND_MESSAGE) == 0, "message '%s'", err.message);
    CHECK(spec == NULL, "a spec from an error");
    CHECK(strcmp(rsc_error_name(rc), "NOT_FOUND") == 0, "name %s", rsc_error_name(rc));

    /* rsc_call returns the code and still hands over the Response */
    Robosim__V1__Request req = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__GetState op = ROBOSIM__V1__GET_STATE__INIT;
    req.op_case = ROBOSIM__V1__REQUEST__OP_GET_STATE;
    req.get_state = &op;
    Robosim__V1__Response *resp = NULL;
    rc = rsc_call(c, &req, &resp, &err);
    CHECK(rc == ROBOSIM__V1__ERROR_CODE__NOT_FOUND, "rc %d", rc);
    CHECK(resp && resp->result_case == ROBOSIM__V1__RESPONSE__RESULT_ERROR &&
              resp->id == req.id,
          "the Error response was not handed over");
    rsc_free(resp);
    rsc_close(&c);
    fake_stop(&f);

    /* an id-0 error (the server could not read the request) answers the call */
    fake_start(&f, FAKE_ECHO_ID0);
    c = rsc_connect_raw(f.endpoint, 2000, &err);
    rc = rsc_destroy_world(c, 1, &err);
    CHECK(rc == ROBOSIM__V1__ERROR_CODE__MALFORMED, "rc %d: %s", rc, err.message);
    rc = rsc_send_raw(c, "\xff", 1, &resp, &err);
    CHECK(rc == ROBOSIM__V1__ERROR_CODE__MALFORMED && resp && resp->id == 0, "send_raw rc %d",
          rc);
    rsc_free(resp);
    rsc_close(&c);
    fake_stop(&f);
}

static void test_arguments(void)
{
    rsc_error_t err;
    CHECK(rsc_connect(NULL, 100, &err) == NULL && err.code == RSC_EARG, "NULL endpoint: %d",
          err.code);
    CHECK(rsc_connect("not an endpoint", 100, &err) == NULL && err.code == RSC_EARG,
          "bad endpoint: %d", err.code);
    CHECK(strstr(err.message, "not an endpoint") != NULL, "%s", err.message);
    CHECK(rsc_list_worlds(NULL, NULL, &err) == RSC_EARG, "NULL client: %d", err.code);
    CHECK(rsc_endpoint(NULL) == NULL, "endpoint of NULL");
    rsc_free(NULL);
    CHECK(strcmp(rsc_error_name(0), "OK") == 0, "0");
    CHECK(strcmp(rsc_error_name(1), "INVALID_ARGUMENT") == 0, "1");
    CHECK(strcmp(rsc_error_name(11), "SIMULATION_FAILED") == 0, "11");
    CHECK(strcmp(rsc_error_name(RSC_ETIMEOUT), "TIMEOUT") == 0, "timeout");
    CHECK(strcmp(rsc_error_name(RSC_EPROTOCOL), "PROTOCOL") == 0, "protocol");
    CHECK(strcmp(rsc_error_name(999), "UNKNOWN") == 0, "999");

    /* a NULL array with a count is refused before anything is sent */
    fake_t f;
    fake_start(&f, FAKE_SILENT);
    rsc_client_t *c = rsc_connect_raw(f.endpoint, 100, &err);
    CHECK(rsc_set_force(c, 1, "robot", NULL, 2, &err) == RSC_EARG, "set_force NULL values: %d",
          err.code);
    CHECK(rsc_step(c, 1, 1, 0, NULL, 1, NULL, &err) == RSC_EARG, "step NULL cmds: %d", err.code);
    CHECK(atomic_load(&f.requests) == 0, "a bad call reached the server");
    rsc_close(&c);
    fake_stop(&f);
}

/* What a program that does not check rsc_connect's NULL goes on to do (the README's example
 * before it checked): every call on a NULL client returns RSC_EARG with a message, clears its
 * outputs and crashes nothing. */
static void test_null_client(void)
{
    rsc_error_t err;
    uint64_t id = 7;
    double v[2] = {1, 2}, xy[2] = {0, 0};
    rsc_command_t cmd = {"robot", v, 2};
    rsc_param_t param = {"robot", "wheel_radius", v, 1};
    rsc_batch_item_t item = {.world_id = 1, .steps = 1, .cmds = &cmd, .ncmds = 1};
    uint64_t ids[1] = {1};
    Robosim__V1__State *st = (Robosim__V1__State *)&err; /* must come back NULL */
    Robosim__V1__Spec *spec = (Robosim__V1__Spec *)&err;
    Robosim__V1__HelloReply *hello = (Robosim__V1__HelloReply *)&err;
    Robosim__V1__ListWorldsReply *list = (Robosim__V1__ListWorldsReply *)&err;
    Robosim__V1__CreateWorldReply *cw = (Robosim__V1__CreateWorldReply *)&err;
    Robosim__V1__WorkspaceReply *ws = (Robosim__V1__WorkspaceReply *)&err;
    Robosim__V1__StepBatchReply *batch = (Robosim__V1__StepBatchReply *)&err;
    Robosim__V1__BatchArraysReply *arrays = (Robosim__V1__BatchArraysReply *)&err;
    Robosim__V1__Response *resp = (Robosim__V1__Response *)&err;
    Robosim__V1__Request req = ROBOSIM__V1__REQUEST__INIT;
    int rcs[] = {
        rsc_hello(NULL, 1, 0, &hello, &err),
        rsc_list_worlds(NULL, &list, &err),
        rsc_create_world(NULL, "diff_drive", &param, 1, 1, &id, &err),
        rsc_create_task_world(NULL, "FingerPush-v0", NULL, NULL, 0, 1, &id, &err),
        rsc_destroy_world(NULL, 1, &err),
        rsc_get_spec(NULL, 1, &spec, &err),
        rsc_reset(NULL, 1, 1, 3, &st, &err),
        rsc_step(NULL, 1, 100, 0, &cmd, 1, &st, &err),
        rsc_get_state(NULL, 1, &st, &err),
        rsc_set_force(NULL, 1, "robot", v, 2, &err),
        rsc_set_params(NULL, 1, &param, 1, &err),
        rsc_set_schedule(NULL, 1, "robot", 0, v, v, 2, &err),
        rsc_set_target(NULL, 1, "arm", xy, 2, &err),
        rsc_get_workspace(NULL, 1, "arm", 16, xy, 1, &ws, &err),
        rsc_get_snapshot(NULL, 1, &st, &err),
        rsc_set_state(NULL, 1, v, sizeof v, &st, &err),
        rsc_fork_world(NULL, 1, NULL, 0, &id, &err),
        rsc_claim(NULL, 1, &cw, &err),
        rsc_step_batch(NULL, &item, 1, &batch, &err),
        rsc_step_arrays(NULL, ids, 1, 1, v, 2, NULL, 0, &arrays, &err),
        rsc_call(NULL, &req, &resp, &err),
        rsc_send_raw(NULL, "x", 1, &resp, &err),
        rsc_set_world_token(NULL, 1, "token"),
    };
    for (size_t i = 0; i < sizeof rcs / sizeof rcs[0]; i++)
        CHECK(rcs[i] == RSC_EARG, "call %zu on a NULL client returned %d, not RSC_EARG", i,
              rcs[i]);
    CHECK(err.code == RSC_EARG && strstr(err.message, "client") != NULL,
          "err after a NULL-client call: %d '%s'", err.code, err.message);
    CHECK(!st && !spec && !hello && !list && !cw && !ws && !batch && !arrays && !resp,
          "an output was not cleared: %p %p %p %p %p %p %p %p %p", (void *)st, (void *)spec,
          (void *)hello, (void *)list, (void *)cw, (void *)ws, (void *)batch, (void *)arrays,
          (void *)resp);
    CHECK(id == 0, "world id %llu left from before a failed create/fork", (unsigned long long)id);
    CHECK(rsc_world_token(NULL, 1) == NULL, "token of a NULL client");
    rsc_set_timeout(NULL, 100);
    rsc_close(NULL);
}

/* The client's token table: a token set from the client's own (rsc_world_token's pointer into
 * the table) is kept, also while the table grows (and moves) under it. */
static void test_tokens(void)
{
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", free_port());
    rsc_error_t err;
    rsc_client_t *c = rsc_connect_raw(endpoint, 100, &err);
    CHECK(c != NULL, "raw client: %s", err.message);
    if (!c)
        return;
    CHECK(rsc_set_world_token(c, 1, "first-token") == 0, "set");
    CHECK(rsc_set_world_token(c, 1, rsc_world_token(c, 1)) == 0 &&
              strcmp(rsc_world_token(c, 1), "first-token") == 0,
          "a world's token set from itself is kept: '%s'", rsc_world_token(c, 1));
    int kept = 0;
    for (uint64_t w = 2; w <= 100; w++) {
        CHECK(rsc_set_world_token(c, w, rsc_world_token(c, 1)) == 0, "set %llu",
              (unsigned long long)w);
        kept += strcmp(rsc_world_token(c, w), "first-token") == 0;
    }
    CHECK(kept == 99 && strcmp(rsc_world_token(c, 1), "first-token") == 0,
          "99 worlds given world 1's token through its pointer as the table grew: %d kept", kept);
    rsc_close(&c);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv; /* the server binary: not needed here */
    test_arguments();
    test_null_client();
    test_unreachable();
    test_timeout_then_usable();
    test_stale_reply_discarded();
    test_version_refused();
    test_garbage_reply();
    test_server_error();
    test_tokens();
    return rs_test_done("test_client_offline");
}
