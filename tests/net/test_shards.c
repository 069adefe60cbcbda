/* One server of several shards (--shards): a connection's new worlds go to the shard the
 * kernel gave the connection, requests for another shard's worlds are passed there, ids stay
 * one sequence, ListWorlds lists every shard's worlds, the world
 * limits and per-client quotas count over all shards, a world steps to the same bits on either
 * shard, snapshots of one shard's world restore and fork on another's, the observer stream
 * carries every shard's worlds, a StepBatch naming another shard's world says so, and a state
 * dir is refused. */
#include "rs_test.h"
#include "server_proc.h"

#include <math.h>

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name

static const char *binary;

static rsc_client_t *must_connect(const char *ep)
{
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(ep, 20000, &err);
    CHECK(c != NULL, "connect: %s", c ? "" : err.message);
    return c;
}

/* Step world `id` n control steps with a force that varies by step; the last state packed
 * (without world id and seq) into buf; its length, 0 on failure. */
static size_t step_and_pack(rsc_client_t *c, uint64_t id, int n, uint8_t *buf, size_t cap)
{
    rsc_error_t err;
    Robosim__V1__State *st = NULL;
    for (int i = 0; i < n; i++) {
        double f = 0.7 * sin(0.05 * i);
        rsc_command_t cmd = {"finger", &f, 1};
        rsc_free(st);
        st = NULL;
        if (rsc_step(c, id, 1, 0, &cmd, 1, &st, &err) != 0) {
            CHECK(0, "step world %llu: %s", (unsigned long long)id, err.message);
            return 0;
        }
    }
    st->world_id = 0;
    st->seq = 0;
    size_t len = robosim__v1__state__get_packed_size(st);
    if (len <= cap)
        robosim__v1__state__pack(st, buf);
    rsc_free(st);
    return len <= cap ? len : 0;
}

/* Whether worlds x and y (tokens held by c) are on different shards: a StepBatch over both
 * steps the first and names the second as another shard's. */
static int apart(rsc_client_t *c, uint64_t x, uint64_t y)
{
    rsc_error_t err;
    rsc_batch_item_t items[2] = {{.world_id = x, .steps = 1}, {.world_id = y, .steps = 1}};
    Robosim__V1__StepBatchReply *br = NULL;
    int r = -1;
    if (rsc_step_batch(c, items, 2, &br, &err) == 0 && br && br->n_results == 2) {
        const Robosim__V1__BatchResult *b = br->results[1];
        CHECK(br->results[0]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_STATE,
              "a batch steps its first world");
        if (b->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_STATE)
            r = 0;
        else if (b->error && b->error->code == CODE(NOT_FOUND) &&
                 strstr(b->error->message, "another of this server's 2 shards"))
            r = 1;
        else
            CHECK(0, "a batch's second world: stepped or named as another shard's, got %s",
                  b->error ? b->error->message : "?");
    } else {
        CHECK(0, "a batch over two worlds answered: %s", err.message);
    }
    rsc_free(br);
    return r;
}

static void worlds_and_bits(void)
{
    const char *extra[] = {"--shards", "2", "--threads", "1", NULL};
    server_proc_t sp;
    CHECK(server_start(&sp, binary, extra) == 0, "server with --shards 2 started");
    if (sp.pid <= 0)
        return;
    rsc_error_t err;
    rsc_client_t *a = must_connect(sp.endpoint), *b = NULL;
    uint64_t wa = 0, wb = 0, wa2 = 0, last = 1;
    CHECK(rsc_create_world(a, "finger", NULL, 0, 7, &wa, &err) == 0, "create on a: %s", err.message);
    CHECK(rsc_create_world(a, "finger", NULL, 0, 8, &wa2, &err) == 0, "create on a: %s", err.message);
    CHECK(wa == 2 && wa2 == 3, "ids in creation order after the start-up world 1: %llu %llu",
          (unsigned long long)wa, (unsigned long long)wa2);
    CHECK(apart(a, wa, wa2) == 0, "one connection's worlds share a shard");
    /* the kernel spreads connections over the shards: connect until one reaches the other */
    last = wa2;
    for (int i = 0; i < 64; i++) {
        rsc_close(&b);
        b = must_connect(sp.endpoint);
        CHECK(rsc_create_world(b, "finger", NULL, 0, 7, &wb, &err) == 0 && wb == last + 1,
              "create on b: world %llu after %llu: %s", (unsigned long long)wb,
              (unsigned long long)last, err.message);
        last = wb;
        rsc_set_world_token(a, wb, rsc_world_token(b, wb));
        if (apart(a, wa, wb) == 1)
            break;
        rsc_destroy_world(b, wb, &err);
        wb = 0;
    }
    CHECK(wb != 0, "a connection reached the other shard within 64 tries");
    Robosim__V1__ListWorldsReply *lw = NULL;
    CHECK(rsc_list_worlds(b, &lw, &err) == 0 && lw && lw->n_worlds == 4,
          "ListWorlds lists both shards' 4 worlds (got %zu)", lw ? lw->n_worlds : 0);
    for (size_t i = 1; lw && i < lw->n_worlds; i++)
        CHECK(lw->worlds[i]->world_id > lw->worlds[i - 1]->world_id, "ListWorlds by id");
    rsc_free(lw);
    if (!wb) {
        server_stop(&sp);
        return;
    }

    /* the same seed and commands on two shards (fresh worlds on each): the same bits */
    static uint8_t sa[1 << 16], sb[1 << 16];
    uint64_t wc = 0, wd = 0;
    CHECK(rsc_create_world(a, "finger", NULL, 0, 9, &wc, &err) == 0 &&
              rsc_create_world(b, "finger", NULL, 0, 9, &wd, &err) == 0,
          "a fresh world on each shard: %s", err.message);
    last = wd;
    size_t na = step_and_pack(a, wc, 200, sa, sizeof sa);
    size_t nb = step_and_pack(b, wd, 200, sb, sizeof sb);
    CHECK(na > 0 && na == nb && !memcmp(sa, sb, na),
          "one world on each shard, same seed and commands: the same state bits (%zu, %zu bytes)",
          na, nb);

    /* a snapshot of a's world restores into b's (another shard) and forks there bit-exactly */
    Robosim__V1__State *snap = NULL, *after = NULL;
    CHECK(rsc_get_snapshot(a, wa2, &snap, &err) == 0 && snap && snap->snapshot.len > 0,
          "snapshot of world %llu: %s", (unsigned long long)wa2, err.message);
    if (snap) {
        CHECK(rsc_set_state(b, wb, snap->snapshot.data, snap->snapshot.len, &after, &err) == 0,
              "set_state on the other shard's world: %s", err.message);
        rsc_free(after);
        uint64_t fork = 0;
        CHECK(rsc_fork_world(b, wb, snap->snapshot.data, snap->snapshot.len, &fork, &err) == 0 &&
                  fork == last + 1,
              "fork from the other shard's snapshot: world %llu: %s", (unsigned long long)fork,
              err.message);
        size_t n1 = step_and_pack(a, wa2, 50, sa, sizeof sa);
        size_t n2 = step_and_pack(b, wb, 50, sb, sizeof sb);
        CHECK(n1 > 0 && n1 == n2 && !memcmp(sa, sb, n1),
              "the restored world continues as the original on its own shard");
        size_t n3 = step_and_pack(b, fork, 50, sb, sizeof sb);
        CHECK(n3 == n1 && !memcmp(sa, sb, n1), "and so does the fork");
        /* each client reaches the other shard's worlds through its own connection */
        rsc_set_world_token(b, wa2, rsc_world_token(a, wa2));
        rsc_set_world_token(a, fork, rsc_world_token(b, fork));
        size_t n4 = step_and_pack(b, wa2, 1, sb, sizeof sb);
        size_t n5 = step_and_pack(a, fork, 1, sa, sizeof sa);
        CHECK(n4 > 0 && n4 == n5 && !memcmp(sa, sb, n4),
              "a request for another shard's world is passed there and answered");
    }
    rsc_free(snap);

    CHECK(rsc_destroy_world(b, wb, &err) == 0, "destroy on its shard: %s", err.message);
    CHECK(rsc_list_worlds(a, &lw, &err) == 0 && lw && lw->n_worlds == 6,
          "ListWorlds after a destroy: 6 (got %zu)", lw ? lw->n_worlds : 0);
    rsc_free(lw);
    rsc_close(&a);
    rsc_close(&b);
    CHECK(server_stop(&sp) == 0, "server exits 0 on SIGTERM");
}

/* The quota and --max-worlds count every shard's worlds. */
static void limits(void)
{
    const char *extra[] = {"--shards", "2", "--threads", "1", "--no-world", "--max-worlds", "10",
                           "--max-worlds-per-client", "3", NULL};
    server_proc_t sp;
    CHECK(server_start(&sp, binary, extra) == 0, "server with --shards 2 started");
    if (sp.pid <= 0)
        return;
    rsc_client_t *c[4];
    rsc_error_t err;
    uint64_t id;
    for (int i = 0; i < 4; i++)
        c[i] = must_connect(sp.endpoint);
    /* four connections from loopback, one quota key: three worlds over both shards */
    int made = 0;
    for (int i = 0; i < 4; i++)
        made += rsc_create_world(c[i], "finger", NULL, 0, 1, &id, &err) == 0;
    CHECK(made == 3 && err.code == CODE(RESOURCE_EXHAUSTED) && strstr(err.message, "3 worlds"),
          "the per-client quota over both shards: 3 made, then refused (%d; %s)", made,
          err.message);
    CHECK(server_stop(&sp) == 0, "server exits 0 on SIGTERM");

    const char *extra2[] = {"--shards", "2", "--threads", "1", "--no-world", "--max-worlds", "3",
                            "--max-worlds-per-client", "0", "--max-worlds-share", "1", NULL};
    CHECK(server_start(&sp, binary, extra2) == 0, "server with --shards 2 started");
    if (sp.pid <= 0)
        return;
    for (int i = 0; i < 4; i++) {
        rsc_close(&c[i]);
        c[i] = must_connect(sp.endpoint);
    }
    made = 0;
    for (int i = 0; i < 4; i++)
        made += rsc_create_world(c[i], "finger", NULL, 0, 1, &id, &err) == 0;
    CHECK(made == 3 && err.code == CODE(RESOURCE_EXHAUSTED) && strstr(err.message, "--max-worlds"),
          "--max-worlds 3 over both shards: 3 made, then refused (%d; %s)", made, err.message);
    for (int i = 0; i < 4; i++)
        rsc_close(&c[i]);
    CHECK(server_stop(&sp) == 0, "server exits 0 on SIGTERM");
}

/* Every shard's worlds publish on the one stream. */
static void stream(void)
{
    const char *extra[] = {"--shards", "2", "--threads", "1", "--no-world", "--stream-max-hz",
                           "1000", NULL};
    server_proc_t sp;
    CHECK(server_start(&sp, binary, extra) == 0, "server with --shards 2 started");
    if (sp.pid <= 0)
        return;
    rsc_client_t *a = must_connect(sp.endpoint), *b = must_connect(sp.endpoint);
    rsc_error_t err;
    Robosim__V1__HelloReply *h = NULL;
    CHECK(rsc_hello(a, RSC_PROTOCOL_MAJOR, RSC_PROTOCOL_MINOR, &h, &err) == 0 && h && strncmp(h->stream_endpoint, "tcp://", 6) == 0,
          "Hello names the public stream endpoint (%s)", h ? h->stream_endpoint : "");
    void *zctx = zmq_ctx_new(), *sub = zmq_socket(zctx, ZMQ_SUB);
    int timeout = 200;
    zmq_setsockopt(sub, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "world/", 6);
    CHECK(h && zmq_connect(sub, h->stream_endpoint) == 0, "SUB connects");
    rsc_free(h);
    uint64_t wa = 0, wb = 0;
    CHECK(rsc_create_world(a, "finger", NULL, 0, 1, &wa, &err) == 0 &&
              rsc_create_world(b, "finger", NULL, 0, 1, &wb, &err) == 0,
          "a world on each shard: %s", err.message);
    sleep_s(0.3); /* the subscription reaches both shards */
    int seen_a = 0, seen_b = 0;
    char topic_a[64], topic_b[64];
    snprintf(topic_a, sizeof topic_a, "world/%llu/", (unsigned long long)wa);
    snprintf(topic_b, sizeof topic_b, "world/%llu/", (unsigned long long)wb);
    for (int round = 0; round < 20 && !(seen_a && seen_b); round++) {
        Robosim__V1__State *st = NULL;
        rsc_step(a, wa, 1, 0, NULL, 0, &st, &err);
        rsc_free(st);
        st = NULL;
        rsc_step(b, wb, 1, 0, NULL, 0, &st, &err);
        rsc_free(st);
        char topic[64];
        int n;
        while ((n = zmq_recv(sub, topic, sizeof topic - 1, 0)) >= 0) {
            topic[n < (int)sizeof topic - 1 ? n : (int)sizeof topic - 1] = '\0';
            char body[1 << 14];
            zmq_recv(sub, body, sizeof body, 0);
            seen_a |= !strcmp(topic, topic_a);
            seen_b |= !strcmp(topic, topic_b);
        }
    }
    CHECK(seen_a && seen_b, "the stream carries both shards' worlds (%d %d)", seen_a, seen_b);
    zmq_close(sub);
    zmq_ctx_term(zctx);
    rsc_close(&a);
    rsc_close(&b);
    CHECK(server_stop(&sp) == 0, "server exits 0 on SIGTERM");
}

/* A state dir is kept by one server loop: refused with --shards 2, saying why. */
static void state_dir_refused(void)
{
    char dir[] = "/tmp/robosim-shards-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "%s --bind tcp://127.0.0.1:%d --shards 2 --state-dir %s 2>&1 | grep -q 'shards'",
             binary, free_port(), dir);
    CHECK(system(cmd) == 0, "--state-dir with --shards 2 refused, naming --shards");
    rmdir(dir);
}

int main(int argc, char **argv)
{
    binary = server_arg(argc, argv);
    worlds_and_bits();
    limits();
    stream();
    state_dir_refused();
    return rs_test_done("test_shards");
}
