/* One server of several shards (--shards): a connection's new worlds go to the shard the
 * kernel gave the connection, requests for another shard's worlds are passed there, ids stay
 * one sequence, ListWorlds lists every shard's worlds, the world
 * limits and per-client quotas count over all shards, a world steps to the same bits on either
 * shard, snapshots of one shard's world restore and fork on another's, the observer stream
 * carries every shard's worlds, a StepBatch over several shards' worlds (either form) answers
 * as one server does (the same bits, errors in their slots, the budget), and a state dir keeps
 * every shard's worlds and restores them at any --shards. */
#include "rs_test.h"
#include "server_internal.h" /* rs_route_of */
#include "server_proc.h"
#include "timing.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <zmq.h>

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name

static const char *binary;

static rsc_client_t *must_connect(const char *ep)
{
    rsc_error_t err;
    rsc_client_t *c = rsc_connect(ep, 20000, &err);
    CHECK(c != NULL, "connect: %s", c ? "" : err.message);
    return c;
}

/* State st packed without world id and seq into buf, and freed; its length (0: over cap). */
static size_t pack_state(Robosim__V1__State *st, uint8_t *buf, size_t cap)
{
    st->world_id = 0;
    st->seq = 0;
    size_t len = robosim__v1__state__get_packed_size(st);
    if (len <= cap)
        robosim__v1__state__pack(st, buf);
    rsc_free(st);
    return len <= cap ? len : 0;
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
    return pack_state(st, buf, cap);
}

/* The shard world `id` lives on (ListWorlds' WorldInfo.shard), or -1. */
static int shard_of(rsc_client_t *c, uint64_t id)
{
    rsc_error_t err;
    Robosim__V1__ListWorldsReply *lw = NULL;
    int k = -1;
    CHECK(rsc_list_worlds(c, &lw, &err) == 0 && lw, "ListWorlds: %s", err.message);
    for (size_t i = 0; lw && i < lw->n_worlds; i++)
        if (lw->worlds[i]->world_id == id)
            k = (int)lw->worlds[i]->shard;
    rsc_free(lw);
    return k;
}

/* Whether worlds x and y are on different shards: 1, 0, or -1 when one is not listed. */
static int apart(rsc_client_t *c, uint64_t x, uint64_t y)
{
    int kx = shard_of(c, x), ky = shard_of(c, y);
    return kx < 0 || ky < 0 ? -1 : kx != ky;
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

/* ---- --state-dir with shards ------------------------------------------------------------- */

#define NS 6       /* worlds kept in the state dir */
#define AHEAD 20   /* control steps of each world's reference */

typedef struct kept {
    uint64_t id;
    char token[RSC_TOKEN_MAX];
    int alive;
    uint8_t now[1 << 14], ref[1 << 14]; /* its state (no id or seq), and after AHEAD steps */
    size_t nnow, nref;
} kept_t;

/* World id's state packed without world id and seq into buf; its length (0: failed). */
static size_t state_of(rsc_client_t *c, uint64_t id, uint8_t *buf, size_t cap)
{
    rsc_error_t err;
    Robosim__V1__State *st = NULL;
    if (rsc_get_state(c, id, &st, &err) != 0) {
        CHECK(0, "state of world %llu: %s", (unsigned long long)id, err.message);
        return 0;
    }
    return pack_state(st, buf, cap);
}

/* Each live world's state now, and its state AHEAD steps on (stepped from a snapshot, then
 * set back to it: the world is left as it was). */
static void take_references(rsc_client_t *c, kept_t *k)
{
    rsc_error_t err;
    for (int i = 0; i < NS; i++) {
        if (!k[i].alive)
            continue;
        Robosim__V1__State *snap = NULL, *back = NULL;
        k[i].nnow = state_of(c, k[i].id, k[i].now, sizeof k[i].now);
        CHECK(rsc_get_snapshot(c, k[i].id, &snap, &err) == 0 && snap, "snapshot: %s", err.message);
        if (!snap)
            continue;
        k[i].nref = step_and_pack(c, k[i].id, AHEAD, k[i].ref, sizeof k[i].ref);
        CHECK(rsc_set_state(c, k[i].id, snap->snapshot.data, snap->snapshot.len, &back, &err) == 0,
              "set back: %s", err.message);
        rsc_free(back);
        rsc_free(snap);
        static uint8_t again[1 << 14];
        size_t n = state_of(c, k[i].id, again, sizeof again);
        CHECK(n == k[i].nnow && !memcmp(again, k[i].now, n), "world %llu set back to its state",
              (unsigned long long)k[i].id);
    }
}

/* ListWorlds names exactly the live worlds, spread evenly over the `shards` shards. */
static void check_listed(rsc_client_t *c, const kept_t *k, int shards)
{
    rsc_error_t err;
    Robosim__V1__ListWorldsReply *lw = NULL;
    int alive = 0, per[8] = {0};
    for (int i = 0; i < NS; i++)
        alive += k[i].alive;
    CHECK(rsc_list_worlds(c, &lw, &err) == 0 && lw && (int)lw->n_worlds == alive,
          "ListWorlds at --shards %d: the %d kept worlds (got %zu)", shards, alive,
          lw ? lw->n_worlds : 0);
    for (size_t j = 0; lw && j < lw->n_worlds; j++) {
        int found = 0;
        for (int i = 0; i < NS; i++)
            found |= k[i].alive && k[i].id == lw->worlds[j]->world_id;
        CHECK(found, "world %llu listed is a kept one", (unsigned long long)lw->worlds[j]->world_id);
        CHECK(lw->worlds[j]->shard < (uint32_t)shards, "world on shard %u of %d",
              lw->worlds[j]->shard, shards);
        if (lw->worlds[j]->shard < 8)
            per[lw->worlds[j]->shard]++;
    }
    for (int s = 0; s < shards && s < 8; s++)
        CHECK(per[s] >= alive / shards && per[s] <= (alive + shards - 1) / shards,
              "restored worlds spread over %d shards: shard %d has %d of %d", shards, s, per[s],
              alive);
    rsc_free(lw);
}

static int file_exists(const char *dir, uint64_t id)
{
    char path[512];
    snprintf(path, sizeof path, "%s/world-%llu.rsw", dir, (unsigned long long)id);
    return access(path, F_OK) == 0;
}

/* Worlds made on both shards of a --shards 2 server, SIGTERM, then restarts at --shards 2, 1
 * and 3: every world back bit for bit and stepping on as it would have, spread over the shards
 * (each interruptible as any: the net_shards run of test_stalls checks a slow restored one),
 * new ids past every id given before, the per-client quota counting the restored worlds,
 * destroyed worlds' files removed and no shard removing another's. */
static void state_dir(void)
{
    char dir[] = "/tmp/robosim-shards-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    static kept_t k[NS];
    rsc_error_t err;
    server_proc_t sp;
    const char *first[] = {"--shards", "2", "--threads", "1", "--no-world", "--state-dir", dir,
                           "--checkpoint-interval", "0.2", NULL};
    CHECK(server_start(&sp, binary, first) == 0, "server with --shards 2 --state-dir started");
    if (sp.pid <= 0)
        return;
    /* one world per connection: placement puts them on both shards */
    rsc_client_t *conn[NS];
    for (int i = 0; i < NS; i++) {
        conn[i] = must_connect(sp.endpoint);
        CHECK(rsc_create_world(conn[i], "finger", NULL, 0, 11 + (uint64_t)i, &k[i].id, &err) == 0,
              "create: %s", err.message);
        snprintf(k[i].token, sizeof k[i].token, "%s", rsc_world_token(conn[i], k[i].id));
        k[i].alive = 1;
    }
    uint64_t gone = 0, top = 0;
    CHECK(rsc_create_world(conn[0], "finger", NULL, 0, 5, &gone, &err) == 0, "create: %s",
          err.message);
    rsc_client_t *c = must_connect(sp.endpoint);
    for (int i = 0; i < NS; i++) {
        rsc_set_world_token(c, k[i].id, k[i].token);
        uint8_t buf[1 << 14];
        CHECK(step_and_pack(c, k[i].id, 3 + 4 * i, buf, sizeof buf) > 0, "steps");
    }
    Robosim__V1__ListWorldsReply *lw = NULL;
    int on[2] = {0, 0};
    CHECK(rsc_list_worlds(c, &lw, &err) == 0 && lw, "ListWorlds: %s", err.message);
    for (size_t j = 0; lw && j < lw->n_worlds; j++)
        on[lw->worlds[j]->shard & 1]++;
    rsc_free(lw);
    CHECK(on[0] > 0 && on[1] > 0, "worlds on both shards (%d, %d)", on[0], on[1]);
    sleep_s(0.6); /* checkpoints: world `gone` is written, then destroyed */
    CHECK(file_exists(dir, gone), "a periodic checkpoint wrote world %llu",
          (unsigned long long)gone);
    CHECK(rsc_destroy_world(conn[0], gone, &err) == 0, "destroy: %s", err.message);
    top = gone;
    take_references(c, k);
    for (int i = 0; i < NS; i++)
        rsc_close(&conn[i]);
    rsc_close(&c);
    CHECK(server_stop(&sp) == 0, "server exits 0 on SIGTERM");
    for (int i = 0; i < NS; i++)
        CHECK(file_exists(dir, k[i].id), "world %llu's file", (unsigned long long)k[i].id);
    CHECK(!file_exists(dir, gone), "the destroyed world's file removed");

    const int shards[] = {2, 1, 3};
    for (int r = 0; r < 3; r++) {
        char nshards[8];
        snprintf(nshards, sizeof nshards, "%d", shards[r]);
        const char *again[] = {"--shards", nshards, "--threads", "1", "--state-dir", dir,
                               "--checkpoint-interval", "0.2", "--max-worlds-per-client",
                               r == 2 ? "6" : "64", NULL};
        CHECK(server_start(&sp, binary, again) == 0, "restart with --shards %d", shards[r]);
        if (sp.pid <= 0)
            break;
        c = must_connect(sp.endpoint);
        for (int i = 0; i < NS; i++)
            rsc_set_world_token(c, k[i].id, k[i].token);
        check_listed(c, k, shards[r]);
        for (int i = 0; i < NS; i++) {
            if (!k[i].alive)
                continue;
            static uint8_t buf[1 << 14];
            size_t n = state_of(c, k[i].id, buf, sizeof buf);
            CHECK(n > 0 && n == k[i].nnow && !memcmp(buf, k[i].now, n),
                  "--shards %d: world %llu restored bit for bit", shards[r],
                  (unsigned long long)k[i].id);
            n = step_and_pack(c, k[i].id, AHEAD, buf, sizeof buf);
            CHECK(n > 0 && n == k[i].nref && !memcmp(buf, k[i].ref, n),
                  "--shards %d: world %llu steps on to the same bits", shards[r],
                  (unsigned long long)k[i].id);
        }
        uint64_t id = 0;
        if (r == 2) {
            /* the quota counts the restored worlds: 6 held by this client's address */
            int rc = rsc_create_world(c, "finger", NULL, 0, 1, &id, &err);
            CHECK(rc != 0 && err.code == CODE(RESOURCE_EXHAUSTED) && strstr(err.message, "6 worlds"),
                  "--shards 3: the per-client quota counts the 6 restored worlds (%s)",
                  rc ? err.message : "created");
            CHECK(rsc_destroy_world(c, k[NS - 1].id, &err) == 0, "destroy: %s", err.message);
            k[NS - 1].alive = 0;
        }
        CHECK(rsc_create_world(c, "finger", NULL, 0, 1, &id, &err) == 0 && id > top,
              "--shards %d: a new world's id %llu is past every id given before (%llu)",
              shards[r], (unsigned long long)id, (unsigned long long)top);
        top = id > top ? id : top;
        CHECK(rsc_destroy_world(c, id, &err) == 0, "destroy: %s", err.message);
        take_references(c, k);
        rsc_close(&c);
        CHECK(server_stop(&sp) == 0, "server exits 0 on SIGTERM");
        for (int i = 0; i < NS; i++)
            CHECK(file_exists(dir, k[i].id) == k[i].alive, "world %llu's file %s",
                  (unsigned long long)k[i].id, k[i].alive ? "kept" : "removed");
    }
    remove_dir(dir);
}

/* ---- a StepBatch over several shards' worlds -------------------------------------------- */

#define NB 8        /* finger worlds batched, over 4 connections */
#define NOWORLD 999 /* an id no server hands out here */

typedef struct fleet {
    server_proc_t sp;
    rsc_client_t *conn[4], *c; /* c holds every world's token */
    uint64_t ids[NB + 1];      /* the finger worlds, then a workshop */
    int shards;
} fleet_t;

/* A server of `shards` shards with the same worlds in the same order (so the same ids): NB
 * finger worlds over 4 connections, then a workshop world. 0 or -1. */
static int fleet_start(fleet_t *f, int shards, const char *budget)
{
    char n[8];
    snprintf(n, sizeof n, "%d", shards);
    const char *extra[] = {"--shards", n, "--threads", "1", "--no-world",
                           "--max-steps-per-request", "3000000", "--max-request-seconds",
                           budget, NULL};
    rsc_error_t err;
    memset(f, 0, sizeof *f);
    f->shards = shards;
    if (server_start(&f->sp, binary, extra) != 0)
        return -1;
    f->c = must_connect(f->sp.endpoint);
    for (int i = 0; i < NB + 1; i++) {
        rsc_client_t *by = f->conn[i % 4] ? f->conn[i % 4] : (f->conn[i % 4] = must_connect(f->sp.endpoint));
        CHECK(rsc_create_world(by, i < NB ? "finger" : "workshop", NULL, 0, 100 + (uint64_t)i,
                               &f->ids[i], &err) == 0 && f->ids[i] == (uint64_t)i + 1,
              "world %d: %s", i, err.message);
        rsc_set_world_token(f->c, f->ids[i], rsc_world_token(by, f->ids[i]));
    }
    return 0;
}

static void fleet_stop(fleet_t *f)
{
    for (int i = 0; i < 4; i++)
        rsc_close(&f->conn[i]);
    rsc_close(&f->c);
    CHECK(server_stop(&f->sp) == 0, "server exits 0 on SIGTERM");
}

/* The batch's order: the finger worlds alternating between shards 0 and 1 (as the --shards 2
 * server placed them), NOWORLD third. */
static int batch_order(rsc_client_t *c, const uint64_t *ids, uint64_t *order)
{
    uint64_t on[2][NB];
    int n[2] = {0, 0};
    for (int i = 0; i < NB; i++) {
        int k = shard_of(c, ids[i]);
        if (k == 0 || k == 1)
            on[k][n[k]++] = ids[i];
    }
    CHECK(n[0] == NB / 2 && n[1] == NB / 2, "the worlds on both shards: %d and %d", n[0], n[1]);
    if (n[0] != NB / 2 || n[1] != NB / 2)
        return -1;
    int m = 0;
    for (int i = 0; i < NB / 2; i++) {
        order[m++] = on[i % 2][i];
        order[m++] = on[1 - i % 2][i];
        if (m == 2)
            order[m++] = NOWORLD;
    }
    return m;
}

/* Items over `order` (round r): commands and step counts that vary by item; the item at
 * `bad_cmd` names an entity no world has. */
static Robosim__V1__StepBatchReply *items_batch(rsc_client_t *c, const uint64_t *order, int m,
                                               int r, int bad_cmd, rsc_error_t *err)
{
    rsc_batch_item_t items[NB + 2];
    static double f[NB + 2];
    static rsc_command_t cmds[NB + 2];
    for (int i = 0; i < m; i++) {
        f[i] = 0.4 * sin(1.3 * i + r);
        cmds[i] = (rsc_command_t){i == bad_cmd ? "nope" : "finger", &f[i], 1};
        items[i] = (rsc_batch_item_t){.world_id = order[i], .steps = 1 + (uint32_t)((i + r) % 3),
                                      .cmds = &cmds[i], .ncmds = 1};
    }
    Robosim__V1__StepBatchReply *out = NULL;
    return rsc_step_batch(c, items, (size_t)m, &out, err) == 0 ? out : NULL;
}

/* Two batch results the same to the bit (states without seq) or the same error. */
static int same_result(Robosim__V1__BatchResult *x, Robosim__V1__BatchResult *y)
{
    if (x->result_case != y->result_case || x->world_id != y->world_id)
        return 0;
    if (x->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_ERROR)
        return x->error->code == y->error->code && !strcmp(x->error->message, y->error->message);
    static uint8_t a[1 << 14], b[1 << 14];
    x->state->seq = y->state->seq = 0;
    size_t na = robosim__v1__state__get_packed_size(x->state);
    size_t nb = robosim__v1__state__get_packed_size(y->state);
    if (na != nb || na > sizeof a)
        return 0;
    robosim__v1__state__pack(x->state, a);
    robosim__v1__state__pack(y->state, b);
    return !memcmp(a, b, na);
}

/* Two columnar replies the same to the bit: codes, errors, rows and digests. */
static int same_arrays(const Robosim__V1__BatchArraysReply *x, const Robosim__V1__BatchArraysReply *y)
{
    if (x->n_codes != y->n_codes || x->state_size != y->state_size ||
        x->sensor_size != y->sensor_size || x->n_errors != y->n_errors ||
        x->digests.len != y->digests.len)
        return 0;
    size_t n = x->n_codes;
    for (size_t e = 0; e < x->n_errors; e++)
        if (x->errors[e]->index != y->errors[e]->index ||
            x->errors[e]->world_id != y->errors[e]->world_id ||
            x->errors[e]->error->code != y->errors[e]->error->code ||
            strcmp(x->errors[e]->error->message, y->errors[e]->error->message))
            return 0;
    if (x->observation_size != y->observation_size || x->info_size != y->info_size ||
        x->n_reward != y->n_reward || x->n_info_keys != y->n_info_keys)
        return 0;
    for (size_t k = 0; k < x->n_info_keys; k++)
        if (strcmp(x->info_keys[k], y->info_keys[k]))
            return 0;
    if (x->n_reward && (memcmp(x->reward, y->reward, n * sizeof *x->reward) ||
                        memcmp(x->terminated, y->terminated, n * sizeof *x->terminated) ||
                        memcmp(x->truncated, y->truncated, n * sizeof *x->truncated) ||
                        memcmp(x->observation, y->observation,
                               n * x->observation_size * sizeof *x->observation) ||
                        memcmp(x->info, y->info, n * x->info_size * sizeof *x->info)))
        return 0;
    return !memcmp(x->codes, y->codes, n * sizeof *x->codes) &&
           !memcmp(x->time, y->time, n * sizeof *x->time) &&
           !memcmp(x->step_count, y->step_count, n * sizeof *x->step_count) &&
           !memcmp(x->state, y->state, n * x->state_size * sizeof *x->state) &&
           !memcmp(x->sensors, y->sensors, n * x->sensor_size * sizeof *x->sensors) &&
           !memcmp(x->digests.data, y->digests.data, x->digests.len);
}

/* A StepBatch over worlds of both shards of a --shards 2 server gives what a --shards 1 server
 * gives for the same worlds (the same bits, errors in the same slots with the same messages)
 * and what Steps one world at a time give; so does the columnar form; a batch refused as a
 * whole (a world twice) is refused the same and steps nothing. */
static void mixed_batches(void)
{
    fleet_t two, one, single;
    if (fleet_start(&two, 2, "5") < 0 || fleet_start(&one, 1, "5") < 0 ||
        fleet_start(&single, 2, "5") < 0) {
        CHECK(0, "servers started");
        return;
    }
    rsc_error_t err;
    uint64_t order[NB + 2];
    int m = batch_order(two.c, two.ids, order);
    if (m < 0)
        return;
    CHECK(m == NB + 1 && order[2] == NOWORLD, "the batch: %d items", m);

    /* items: rounds of plain steps, then one with a bad command and a wrong token */
    for (int r = 0; r < 4; r++) {
        int bad = r == 3 ? 6 : -1;
        rsc_client_t *c2 = two.c, *c1 = one.c;
        if (r == 3) { /* a wrong token for the item at 4, on both */
            rsc_set_world_token(c2, order[4], "0123456789abcdef0123456789abcdef");
            rsc_set_world_token(c1, order[4], "0123456789abcdef0123456789abcdef");
        }
        Robosim__V1__StepBatchReply *x = items_batch(c2, order, m, r, bad, &err);
        CHECK(x && x->n_results == (size_t)m, "the mixed batch answered: %s", x ? "" : err.message);
        Robosim__V1__StepBatchReply *y = items_batch(c1, order, m, r, bad, &err);
        CHECK(y && y->n_results == (size_t)m, "the --shards 1 batch answered: %s", y ? "" : err.message);
        for (int i = 0; x && y && i < m; i++) {
            CHECK(same_result(x->results[i], y->results[i]),
                  "round %d item %d (world %llu): the same %s on 2 shards as on 1 (%s)", r, i,
                  (unsigned long long)order[i],
                  x->results[i]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_ERROR ? "error"
                                                                                       : "state",
                  x->results[i]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_ERROR
                      ? x->results[i]->error->message
                      : "");
            int want_error = order[i] == NOWORLD || (r == 3 && (i == 4 || i == bad));
            CHECK((x->results[i]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_ERROR) == want_error,
                  "round %d item %d: %s in its slot", r, i, want_error ? "an error" : "a state");
        }
        /* the same steps, one world at a time */
        for (int i = 0; x && r < 3 && i < m; i++) {
            if (order[i] == NOWORLD)
                continue;
            double f = 0.4 * sin(1.3 * i + r);
            rsc_command_t cmd = {"finger", &f, 1};
            Robosim__V1__State *st = NULL;
            CHECK(rsc_step(single.c, order[i], 1 + (uint32_t)((i + r) % 3), 0, &cmd, 1, &st,
                           &err) == 0,
                  "step: %s", err.message);
            Robosim__V1__BatchResult one_step = ROBOSIM__V1__BATCH_RESULT__INIT;
            one_step.world_id = order[i];
            one_step.result_case = ROBOSIM__V1__BATCH_RESULT__RESULT_STATE;
            one_step.state = st;
            CHECK(st && same_result(x->results[i], &one_step),
                  "round %d world %llu: the batch's state is that of its Steps one at a time", r,
                  (unsigned long long)order[i]);
            rsc_free(st);
        }
        rsc_free(x);
        rsc_free(y);
        if (r == 3) {
            rsc_set_world_token(c2, order[4], rsc_world_token(two.conn[(order[4] - 1) % 4], order[4]));
            rsc_set_world_token(c1, order[4], rsc_world_token(one.conn[(order[4] - 1) % 4], order[4]));
        }
    }

    /* the columnar form, the workshop world (another shape) at place 5 */
    uint64_t ids[NB + 2];
    memcpy(ids, order, sizeof ids);
    ids[5] = two.ids[NB];
    for (int r = 0; r < 3; r++) {
        double u[NB + 2];
        for (int i = 0; i < m; i++)
            u[i] = 0.3 * cos(0.7 * i + r);
        Robosim__V1__BatchArraysReply *x = NULL, *y = NULL;
        CHECK(rsc_step_arrays(two.c, ids, (size_t)m, 2, u, (size_t)m, NULL, 0, &x, &err) == 0,
              "mixed arrays: %s", err.message);
        CHECK(rsc_step_arrays(one.c, ids, (size_t)m, 2, u, (size_t)m, NULL, 0, &y, &err) == 0,
              "--shards 1 arrays: %s", err.message);
        CHECK(x && y && same_arrays(x, y),
              "round %d: the columnar batch over both shards is the --shards 1 server's, bit for bit", r);
        CHECK(x && x->n_errors == 2 && x->errors[0]->index == 2 && x->errors[1]->index == 5 &&
                  x->codes[2] == CODE(NOT_FOUND) && x->codes[5] == CODE(INVALID_ARGUMENT),
              "round %d: no world at place 2, another shape at 5 (%zu errors)", r,
              x ? x->n_errors : 0);
        rsc_free(x);
        rsc_free(y);
    }

    /* the columnar form with a wrong token for every finger world: several failures in each
     * shard's part, each merged with its own world's message, as the --shards 1 server words it */
    {
        static const char *wrong = "0123456789abcdef0123456789abcdef";
        for (int i = 0; i < m; i++)
            if (i != 2 && i != 5) {
                rsc_set_world_token(two.c, ids[i], wrong);
                rsc_set_world_token(one.c, ids[i], wrong);
            }
        double u[NB + 2] = {0};
        Robosim__V1__BatchArraysReply *x = NULL, *y = NULL;
        CHECK(rsc_step_arrays(two.c, ids, (size_t)m, 1, u, (size_t)m, NULL, 0, &x, &err) == 0,
              "wrong tokens, 2 shards: %s", err.message);
        CHECK(rsc_step_arrays(one.c, ids, (size_t)m, 1, u, (size_t)m, NULL, 0, &y, &err) == 0,
              "wrong tokens, 1 shard: %s", err.message);
        CHECK(x && y && same_arrays(x, y), "wrong tokens: the same reply on 2 shards as on 1");
        size_t denied = 0;
        for (size_t e = 0; x && e < x->n_errors; e++) {
            const Robosim__V1__BatchError *be = x->errors[e];
            char id[32];
            snprintf(id, sizeof id, "world %llu:", (unsigned long long)be->world_id);
            if (be->error->code != CODE(PERMISSION_DENIED))
                continue;
            denied++;
            CHECK(strstr(be->error->message, "token is wrong") && strstr(be->error->message, id),
                  "place %u: its own world's message (%s)", be->index, be->error->message);
        }
        CHECK(denied == (size_t)m - 2, "every finger world refused (%zu of %d)", denied, m - 2);
        rsc_free(x);
        rsc_free(y);
        for (int i = 0; i < m; i++)
            if (i != 2 && i != 5) {
                rsc_set_world_token(two.c, ids[i], rsc_world_token(two.conn[(ids[i] - 1) % 4], ids[i]));
                rsc_set_world_token(one.c, ids[i], rsc_world_token(one.conn[(ids[i] - 1) % 4], ids[i]));
            }
    }

    /* refused as a whole: a world twice (its two places on different shards from the rest) */
    uint64_t twice[4] = {order[0], order[1], order[3], order[0]};
    Robosim__V1__State *before = NULL, *after = NULL;
    CHECK(rsc_get_state(two.c, order[1], &before, &err) == 0, "state: %s", err.message);
    rsc_batch_item_t items[4];
    for (int i = 0; i < 4; i++)
        items[i] = (rsc_batch_item_t){.world_id = twice[i], .steps = 1};
    Robosim__V1__StepBatchReply *out = NULL;
    rsc_error_t e2, e1;
    int rc2 = rsc_step_batch(two.c, items, 4, &out, &e2);
    rsc_free(out);
    out = NULL;
    int rc1 = rsc_step_batch(one.c, items, 4, &out, &e1);
    rsc_free(out);
    CHECK(rc2 != 0 && e2.code == CODE(INVALID_ARGUMENT) && strstr(e2.message, "twice"),
          "a world twice: the batch refused (%s)", e2.message);
    CHECK(rc1 != 0 && e1.code == e2.code && !strcmp(e1.message, e2.message),
          "refused as the --shards 1 server refuses it (%s | %s)", e2.message, e1.message);
    CHECK(rsc_get_state(two.c, order[1], &after, &err) == 0 && before && after &&
              after->step_count == before->step_count && after->time == before->time,
          "a refused batch steps nothing");
    rsc_free(before);
    rsc_free(after);
    fleet_stop(&two);
    fleet_stop(&one);
    fleet_stop(&single);
}

/* The columnar form over task worlds of both shards: observations, rewards, flags and info
 * rows merged as one server gives them. */
static void mixed_task_arrays(void)
{
    server_proc_t sp[2];
    rsc_client_t *c[2] = {NULL, NULL};
    uint64_t ids[2][4];
    rsc_error_t err;
    for (int v = 0; v < 2; v++) {
        const char *extra[] = {"--shards", v ? "1" : "2", "--threads", "1", "--no-world", NULL};
        CHECK(server_start(&sp[v], binary, extra) == 0, "server started");
        if (sp[v].pid <= 0)
            return;
        c[v] = must_connect(sp[v].endpoint);
        for (int i = 0; i < 4; i++) {
            rsc_client_t *by = must_connect(sp[v].endpoint);
            CHECK(rsc_create_task_world(by, "FingerPush-v0", NULL, NULL, 0, 200 + (uint64_t)i,
                                        &ids[v][i], &err) == 0,
                  "task world: %s", err.message);
            rsc_set_world_token(c[v], ids[v][i], rsc_world_token(by, ids[v][i]));
            rsc_close(&by);
        }
    }
    CHECK(!memcmp(ids[0], ids[1], sizeof ids[0]), "the same ids on both servers");
    int k0 = shard_of(c[0], ids[0][0]), spread = 0;
    for (int i = 1; i < 4; i++)
        spread |= shard_of(c[0], ids[0][i]) != k0;
    CHECK(spread, "the task worlds on both shards");
    for (int r = 0; r < 5; r++) {
        double act[4];
        for (int i = 0; i < 4; i++)
            act[i] = 0.5 * sin(0.8 * i + 1.7 * r);
        Robosim__V1__BatchArraysReply *x = NULL, *y = NULL;
        CHECK(rsc_step_arrays(c[0], ids[0], 4, 3, NULL, 0, act, 4, &x, &err) == 0,
              "task arrays on 2 shards: %s", err.message);
        CHECK(rsc_step_arrays(c[1], ids[1], 4, 3, NULL, 0, act, 4, &y, &err) == 0,
              "task arrays on 1: %s", err.message);
        CHECK(x && y && x->observation_size > 0 && x->n_errors == 0 && same_arrays(x, y),
              "round %d: task rows over both shards as on one, bit for bit", r);
        rsc_free(x);
        rsc_free(y);
    }
    for (int v = 0; v < 2; v++) {
        rsc_close(&c[v]);
        CHECK(server_stop(&sp[v]) == 0, "server exits 0 on SIGTERM");
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* A mixed batch at a compute budget: the items over it end with their own DEADLINE_EXCEEDED on
 * either shard, the others are answered with their states, as at --shards 1. */
static void mixed_budget(void)
{
    fleet_t two, one;
    if (fleet_start(&two, 2, "0.25") < 0 || fleet_start(&one, 1, "0.25") < 0) {
        CHECK(0, "servers started");
        return;
    }
    rsc_error_t err;
    uint64_t order[NB + 2];
    int m = batch_order(two.c, two.ids, order);
    if (m < 0)
        return;
    /* a million control steps for the first world of each shard, one for the others */
    rsc_batch_item_t items[NB + 2];
    int m2 = 0;
    for (int i = 0; i < m; i++)
        if (order[i] != NOWORLD)
            items[m2] = (rsc_batch_item_t){.world_id = order[i], .steps = m2 < 2 ? 1000000 : 1},
            m2++;
    Robosim__V1__StepBatchReply *x = NULL, *y = NULL;
    double slow = slowdown(0.02), t0 = now_s();
    CHECK(rsc_step_batch(two.c, items, (size_t)m2, &x, &err) == 0 && x && x->n_results == (size_t)m2,
          "the mixed batch at a budget answered: %s", err.message);
    double took = now_s() - t0;
    slow = slowdown_since(slow);
    CHECK(rsc_step_batch(one.c, items, (size_t)m2, &y, &err) == 0 && y && y->n_results == (size_t)m2,
          "the --shards 1 batch answered: %s", err.message);
    CHECK(took < wall_bound(2.0, slow), "the budget of 0.25 s held the mixed batch to %.2f s "
          "(2 s x slowdown %.2f allowed)", took, slow);
    for (int i = 0; x && y && i < m2; i++) {
        Robosim__V1__BatchResult *a = x->results[i], *b = y->results[i];
        if (i < 2) {
            CHECK(a->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_ERROR &&
                      a->error->code == CODE(DEADLINE_EXCEEDED) &&
                      b->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_ERROR &&
                      b->error->code == CODE(DEADLINE_EXCEEDED),
                  "item %d (shard %d) over the budget: DEADLINE_EXCEEDED on 2 shards and on 1", i,
                  shard_of(two.c, items[i].world_id));
        } else {
            CHECK(same_result(a, b), "item %d within the budget: the same state on 2 shards as on 1",
                  i);
        }
    }
    rsc_free(x);
    rsc_free(y);
    fleet_stop(&two);
    fleet_stop(&one);
}


/* ---- each shard's own port ---------------------------------------------------------------- */

/* Established TCP connections of this process's clients to `port` on loopback (from
 * /proc/net/tcp: the remote port column, state 01). */
static int connections_to(int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512];
    int n = 0;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        unsigned lport, rport, state;
        if (sscanf(line, " %*d: %*8X:%X %*8X:%X %X", &lport, &rport, &state) == 3 &&
            (int)rport == port && state == 1)
            n++;
    }
    fclose(f);
    return n;
}

static Robosim__V1__HelloReply *hello_of(rsc_client_t *c)
{
    rsc_error_t err;
    Robosim__V1__HelloReply *h = NULL;
    CHECK(rsc_hello(c, RSC_PROTOCOL_MAJOR, RSC_PROTOCOL_MINOR, &h, &err) == 0 && h, "hello: %s",
          err.message);
    return h;
}

/* Hello lists each shard's own port; a client sends the requests for its worlds straight to
 * their shard's port (a connection there, none to the other's); any port serves any world; a
 * client asked for one connection keeps to it; --shard-ports BASE and off. */
static void own_ports(void)
{
    const char *extra[] = {"--shards", "2", "--threads", "1", NULL};
    server_proc_t sp;
    CHECK(server_start(&sp, binary, extra) == 0, "server with --shards 2 started");
    if (sp.pid <= 0)
        return;
    rsc_error_t err;
    rsc_options_t one = {.timeout_ms = 20000, .one_connection = 1};
    rsc_client_t *a = must_connect(sp.endpoint), *solo = rsc_connect_with(sp.endpoint, &one, &err);
    CHECK(solo != NULL, "connect with one_connection: %s", solo ? "" : err.message);
    Robosim__V1__HelloReply *h = hello_of(a);
    int ports[2] = {0, 0};
    CHECK(h && h->n_shard_ports == 2 && h->shard_ports[0] > 0 && h->shard_ports[1] > 0 &&
              h->shard_ports[0] != h->shard_ports[1],
          "Hello lists two shards' own ports (%zu)", h ? h->n_shard_ports : 0);
    if (h && h->n_shard_ports == 2) {
        ports[0] = (int)h->shard_ports[0];
        ports[1] = (int)h->shard_ports[1];
    }
    rsc_free(h);
    if (!ports[0] || !solo) {
        rsc_close(&a);
        rsc_close(&solo);
        server_stop(&sp);
        return;
    }
    CHECK(connections_to(ports[0]) == 0 && connections_to(ports[1]) == 0,
          "no connection to a shard's port before a world is stepped");
    uint64_t w = 0;
    CHECK(rsc_create_world(a, "finger", NULL, 0, 5, &w, &err) == 0, "create: %s", err.message);
    int k = rsc_world_shard(a, w);
    CHECK(k >= 0 && k == shard_of(a, w), "the client knows its world's shard (%d, listed %d)", k,
          shard_of(a, w));
    static uint8_t s1[1 << 16], s2[1 << 16];
    size_t n1 = step_and_pack(a, w, 20, s1, sizeof s1);
    CHECK(n1 > 0, "steps through the shard's port");
    if (k >= 0)
        CHECK(connections_to(ports[k]) == 1 && connections_to(ports[1 - k]) == 0,
              "one connection to the world's shard's port (%d), none to the other's (%d)",
              connections_to(ports[k]), connections_to(ports[1 - k]));
    /* any port serves any world: a client of each port, one connection each */
    uint64_t twin = 0;
    CHECK(rsc_create_world(solo, "finger", NULL, 0, 5, &twin, &err) == 0, "create: %s",
          err.message);
    size_t n2 = step_and_pack(solo, twin, 20, s2, sizeof s2);
    CHECK(n2 == n1 && !memcmp(s1, s2, n1), "the one-connection client's twin: the same bits");
    for (int j = 0; j < 2; j++) {
        char ep[64];
        snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", ports[j]);
        rsc_client_t *d = rsc_connect_with(ep, &one, &err);
        CHECK(d != NULL, "connect to shard %d's port: %s", j, d ? "" : err.message);
        if (!d)
            continue;
        rsc_set_world_token(d, w, rsc_world_token(a, w));
        rsc_set_world_token(d, twin, rsc_world_token(solo, twin));
        n1 = step_and_pack(d, w, 3, s1, sizeof s1);
        n2 = step_and_pack(d, twin, 3, s2, sizeof s2);
        CHECK(n1 > 0 && n1 == n2 && !memcmp(s1, s2, n1),
              "shard %d's port serves both shards' worlds, the same bits", j);
        rsc_close(&d);
    }
    CHECK(connections_to(ports[0]) + connections_to(ports[1]) == 1,
          "the one-connection clients kept to the port they were given");
    rsc_close(&a);
    rsc_close(&solo);
    server_stop(&sp);

    /* --shard-ports BASE: BASE and BASE + 1 (a free BASE whose BASE + 1 another process may
     * hold: tried with up to five BASEs, one of which must start); off: none listed, and the
     * server still serves */
    int started = 0;
    for (int tries = 0; tries < 5 && !started; tries++) {
        char base[16];
        int b = free_port();
        snprintf(base, sizeof base, "%d", b);
        const char *fixed[] = {"--shards", "2", "--threads", "1", "--shard-ports", base, NULL};
        if (server_start(&sp, binary, fixed) != 0)
            continue; /* port b + 1 was taken */
        started = 1;
        a = must_connect(sp.endpoint);
        h = hello_of(a);
        CHECK(h && h->n_shard_ports == 2 && (int)h->shard_ports[0] == b &&
                  (int)h->shard_ports[1] == b + 1,
              "--shard-ports %d: ports %d and %d", b, b, b + 1);
        rsc_free(h);
        rsc_close(&a);
        server_stop(&sp);
    }
    CHECK(started, "a server with --shard-ports BASE started (five BASEs tried)");
    const char *off[] = {"--shards", "2", "--threads", "1", "--shard-ports", "off", NULL};
    CHECK(server_start(&sp, binary, off) == 0, "server with --shard-ports off started");
    if (sp.pid > 0) {
        a = must_connect(sp.endpoint);
        h = hello_of(a);
        CHECK(h && h->n_shard_ports == 0, "--shard-ports off: none listed");
        rsc_free(h);
        CHECK(rsc_create_world(a, "finger", NULL, 0, 5, &w, &err) == 0 &&
                  step_and_pack(a, w, 3, s1, sizeof s1) > 0,
              "and its worlds step by the one connection: %s", err.message);
        CHECK(rsc_world_shard(a, w) == -1, "the client routes nothing");
        rsc_close(&a);
        server_stop(&sp);
    }
}

/* A server whose Hello lists shard ports nobody listens on (published ports not mapped, a
 * firewall): the client tries each once (at most 2 s) and then sends by its one connection. A
 * stand-in server on a thread answers Hello, CreateWorld (shard 1) and Step. */
typedef struct fake {
    char endpoint[64];
    uint32_t dead[2];
    atomic_int stop;
    atomic_int served;
} fake_t;

static void *fake_server(void *arg)
{
    fake_t *f = arg;
    void *ctx = zmq_ctx_new(), *r = zmq_socket(ctx, ZMQ_ROUTER);
    int linger = 0, timeout = 100;
    zmq_setsockopt(r, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(r, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    if (zmq_bind(r, f->endpoint) != 0)
        atomic_store(&f->stop, 1);
    while (!atomic_load(&f->stop)) {
        zmq_msg_t id, body;
        zmq_msg_init(&id);
        zmq_msg_init(&body);
        if (zmq_msg_recv(&id, r, 0) < 0 || zmq_msg_recv(&body, r, 0) < 0) {
            zmq_msg_close(&id);
            zmq_msg_close(&body);
            continue;
        }
        Robosim__V1__Request *rq =
            robosim__v1__request__unpack(NULL, zmq_msg_size(&body), zmq_msg_data(&body));
        Robosim__V1__Response rp = ROBOSIM__V1__RESPONSE__INIT;
        Robosim__V1__HelloReply hr = ROBOSIM__V1__HELLO_REPLY__INIT;
        Robosim__V1__CreateWorldReply cr = ROBOSIM__V1__CREATE_WORLD_REPLY__INIT;
        Robosim__V1__WorldInfo wi = ROBOSIM__V1__WORLD_INFO__INIT;
        Robosim__V1__State st = ROBOSIM__V1__STATE__INIT;
        rp.id = rq ? rq->id : 0;
        if (rq && rq->op_case == ROBOSIM__V1__REQUEST__OP_HELLO) {
            hr.major = 1;
            hr.n_shard_ports = 2;
            hr.shard_ports = f->dead;
            rp.result_case = ROBOSIM__V1__RESPONSE__RESULT_HELLO;
            rp.hello = &hr;
        } else if (rq && rq->op_case == ROBOSIM__V1__REQUEST__OP_CREATE_WORLD) {
            wi.world_id = 5;
            wi.shard = 1;
            cr.world = &wi;
            cr.token = "0123456789abcdef0123456789abcdef";
            rp.result_case = ROBOSIM__V1__RESPONSE__RESULT_CREATE_WORLD;
            rp.create_world = &cr;
        } else {
            st.world_id = 5;
            rp.result_case = ROBOSIM__V1__RESPONSE__RESULT_STEP;
            rp.step = &st;
            atomic_fetch_add(&f->served, 1);
        }
        uint8_t buf[256];
        size_t len = robosim__v1__response__get_packed_size(&rp);
        robosim__v1__response__pack(&rp, buf);
        zmq_msg_send(&id, r, ZMQ_SNDMORE);
        zmq_send(r, buf, len, 0);
        zmq_msg_close(&body);
        if (rq)
            robosim__v1__request__free_unpacked(rq, NULL);
    }
    zmq_close(r);
    zmq_ctx_term(ctx);
    return NULL;
}

static void unreachable_ports(void)
{
    fake_t f = {.dead = {(uint32_t)free_port(), (uint32_t)free_port()}};
    snprintf(f.endpoint, sizeof f.endpoint, "tcp://127.0.0.1:%d", free_port());
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fake_server, &f) == 0, "stand-in server started");
    rsc_error_t err;
    rsc_client_t *c = must_connect(f.endpoint);
    uint64_t w = 0;
    CHECK(c && rsc_create_world(c, "finger", NULL, 0, 1, &w, &err) == 0 && w == 5 &&
              rsc_world_shard(c, w) == 1,
          "created on shard 1 of the stand-in: %s", err.message);
    double t0 = now_s();
    CHECK(c && rsc_step(c, w, 1, 0, NULL, 0, NULL, &err) == 0, "the first step is answered by "
          "the one connection after the shard's port did not answer: %s", err.message);
    double t1 = now_s();
    CHECK(c && rsc_step(c, w, 1, 0, NULL, 0, NULL, &err) == 0, "and the second: %s", err.message);
    double t2 = now_s();
    CHECK(t1 - t0 < 4.0 && t2 - t1 < 0.5,
          "the dead port is tried once, for at most 2 s (%.2f s, then %.3f s)", t1 - t0, t2 - t1);
    CHECK(atomic_load(&f.served) == 2, "both steps reached the server (%d)",
          atomic_load(&f.served));
    rsc_close(&c);
    atomic_store(&f.stop, 1);
    pthread_join(t, NULL);
}

/* Request rq packed into buf (cap bytes); its length. */
static size_t packed(Robosim__V1__Request *rq, uint8_t *buf, size_t cap)
{
    size_t n = robosim__v1__request__get_packed_size(rq);
    CHECK(n <= cap, "request of %zu bytes fits", n);
    return n <= cap ? robosim__v1__request__pack(rq, buf) : 0;
}

/* Where a request goes, read from its bytes without decoding it (rs_route_of, what a shard
 * does with every request it receives): a world's op to its world, a StepBatch to its first
 * world (packed or unpacked ids, or its first item's), ListWorlds to all, CreateWorld to the
 * placement, and bytes that cannot be read to the shard that received them. */
static void route_reading(void)
{
    uint8_t buf[512];
    uint64_t world = 0;
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__Step step = ROBOSIM__V1__STEP__INIT;
    rq.id = 5;
    rq.world_id = 7;
    rq.token = "0123456789abcdef0123456789abcdef";
    rq.op_case = ROBOSIM__V1__REQUEST__OP_STEP;
    rq.step = &step;
    size_t n = packed(&rq, buf, sizeof buf);
    CHECK(rs_route_of(buf, n, &world) == ROUTE_WORLD && world == 7, "Step: world 7 (%llu)",
          (unsigned long long)world);
    for (size_t cut = 1; cut < n; cut++) { /* every truncation reads as something or nothing */
        int r = rs_route_of(buf, cut, &world);
        CHECK(r == ROUTE_HERE || (r == ROUTE_WORLD && world == 7), "Step cut at %zu: %d", cut, r);
    }

    Robosim__V1__ListWorlds lw = ROBOSIM__V1__LIST_WORLDS__INIT;
    Robosim__V1__Request all = ROBOSIM__V1__REQUEST__INIT;
    all.op_case = ROBOSIM__V1__REQUEST__OP_LIST_WORLDS;
    all.list_worlds = &lw;
    n = packed(&all, buf, sizeof buf);
    CHECK(rs_route_of(buf, n, &world) == ROUTE_ALL, "ListWorlds: every shard");

    Robosim__V1__CreateWorld cw = ROBOSIM__V1__CREATE_WORLD__INIT;
    cw.preset = "finger";
    Robosim__V1__Request create = ROBOSIM__V1__REQUEST__INIT;
    create.op_case = ROBOSIM__V1__REQUEST__OP_CREATE_WORLD;
    create.create_world = &cw;
    n = packed(&create, buf, sizeof buf);
    CHECK(rs_route_of(buf, n, &world) == ROUTE_CREATE, "CreateWorld: the placement");

    uint64_t ids[3] = {9, 3, 300};
    double u[3] = {0};
    Robosim__V1__BatchArrays arr = ROBOSIM__V1__BATCH_ARRAYS__INIT;
    arr.n_world_ids = 3;
    arr.world_ids = ids;
    arr.n_commands = 3;
    arr.commands = u;
    Robosim__V1__StepBatch sb = ROBOSIM__V1__STEP_BATCH__INIT;
    sb.form_case = ROBOSIM__V1__STEP_BATCH__FORM_ARRAYS;
    sb.arrays = &arr;
    Robosim__V1__Request batch = ROBOSIM__V1__REQUEST__INIT;
    batch.op_case = ROBOSIM__V1__REQUEST__OP_STEP_BATCH;
    batch.step_batch = &sb;
    n = packed(&batch, buf, sizeof buf);
    world = 0;
    CHECK(rs_route_of(buf, n, &world) == ROUTE_BATCH && world == 9,
          "StepBatch.arrays (packed ids): by its worlds, the first 9 (%llu)",
          (unsigned long long)world);
    /* the same ids unpacked (a writer may send them so): step_batch (field 25) { arrays (2)
     * { world_ids (1): 9, 1: 3 } } */
    const uint8_t unpacked[] = {0xca, 0x01, 0x06, 0x12, 0x04, 0x08, 0x09, 0x08, 0x03};
    world = 0;
    CHECK(ROBOSIM__V1__REQUEST__OP_STEP_BATCH == 25, "StepBatch is Request field 25");
    CHECK(rs_route_of(unpacked, sizeof unpacked, &world) == ROUTE_BATCH && world == 9,
          "StepBatch.arrays (unpacked ids): by its worlds, the first 9 (%llu)",
          (unsigned long long)world);

    Robosim__V1__BatchItem item = ROBOSIM__V1__BATCH_ITEM__INIT, *items[1] = {&item};
    item.world_id = 12;
    item.step = &step;
    Robosim__V1__BatchItems bi = ROBOSIM__V1__BATCH_ITEMS__INIT;
    bi.n_items = 1;
    bi.items = items;
    sb.form_case = ROBOSIM__V1__STEP_BATCH__FORM_ITEMS;
    sb.items = &bi;
    n = packed(&batch, buf, sizeof buf);
    world = 0;
    CHECK(rs_route_of(buf, n, &world) == ROUTE_BATCH && world == 12,
          "StepBatch.items: by its worlds, the first 12 (%llu)", (unsigned long long)world);

    /* several ops in one request: protobuf-c keeps the last, and so does the route */
    const uint8_t list_then_create[] = {0x5a, 0x00, 0x62, 0x00};  /* list_worlds, create_world */
    const uint8_t create_then_list[] = {0x62, 0x00, 0x5a, 0x00};
    const uint8_t step_then_list[] = {0x10, 0x07, 0x82, 0x01, 0x00, 0x5a, 0x00};
    const uint8_t list_then_step[] = {0x10, 0x07, 0x5a, 0x00, 0x82, 0x01, 0x00};
    CHECK(ROBOSIM__V1__REQUEST__OP_LIST_WORLDS == 11 &&
              ROBOSIM__V1__REQUEST__OP_CREATE_WORLD == 12 && ROBOSIM__V1__REQUEST__OP_STEP == 16,
          "ListWorlds, CreateWorld, Step are fields 11, 12, 16");
    CHECK(rs_route_of(list_then_create, sizeof list_then_create, &world) == ROUTE_CREATE,
          "ListWorlds then CreateWorld: a CreateWorld, to the placement");
    CHECK(rs_route_of(create_then_list, sizeof create_then_list, &world) == ROUTE_ALL,
          "CreateWorld then ListWorlds: a ListWorlds, to every shard");
    CHECK(rs_route_of(step_then_list, sizeof step_then_list, &world) == ROUTE_ALL,
          "Step then ListWorlds: a ListWorlds");
    world = 0;
    CHECK(rs_route_of(list_then_step, sizeof list_then_step, &world) == ROUTE_WORLD && world == 7,
          "ListWorlds then Step: a Step of world 7 (%llu)", (unsigned long long)world);
    /* world_id twice: the last; an op that names no world (Hello) goes nowhere else */
    const uint8_t two_ids[] = {0x10, 0x07, 0x82, 0x01, 0x00, 0x10, 0x09};
    const uint8_t hello_with_id[] = {0x10, 0x07, 0x52, 0x00};
    world = 0;
    CHECK(rs_route_of(two_ids, sizeof two_ids, &world) == ROUTE_WORLD && world == 9,
          "world_id 7 then 9: world 9 (%llu)", (unsigned long long)world);
    CHECK(rs_route_of(hello_with_id, sizeof hello_with_id, &world) == ROUTE_HERE,
          "Hello with a world_id: here");

    /* unreadable: a wire type 7 tag, a length past the end, a varint of eleven bytes */
    const uint8_t bad_type[] = {0x17, 0x01};
    const uint8_t past_end[] = {0xca, 0x01, 0x40, 0x12};
    const uint8_t long_varint[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0x01};
    CHECK(rs_route_of(bad_type, sizeof bad_type, &world) == ROUTE_HERE, "wire type 7: here");
    CHECK(rs_route_of(past_end, sizeof past_end, &world) == ROUTE_HERE, "length past the end: here");
    CHECK(rs_route_of(long_varint, sizeof long_varint, &world) == ROUTE_HERE,
          "an eleven-byte varint: here");
}

/* Worlds ListWorlds lists, or -1. */
static int worlds_listed(rsc_client_t *c)
{
    rsc_error_t err;
    Robosim__V1__ListWorldsReply *lw = NULL;
    int n = rsc_list_worlds(c, &lw, &err) == 0 && lw ? (int)lw->n_worlds : -1;
    rsc_free(lw);
    return n;
}

/* At 4 shards, a request is routed by the op it decodes to, not by the fields it holds: one
 * carrying a ListWorlds and then a CreateWorld makes one world (as one server does), not one
 * per shard; a StepBatch whose first world does not exist still steps its other worlds on
 * every shard, the unknown one NOT_FOUND in its slot. */
static void routing_by_op(void)
{
    fleet_t f;
    if (fleet_start(&f, 4, "5") < 0) {
        CHECK(0, "server of 4 shards started");
        return;
    }
    rsc_error_t err;
    int before = worlds_listed(f.c);
    CHECK(before == NB + 1, "%d worlds to start with (%d)", NB + 1, before);
    /* list_worlds {} then a CreateWorld request's bytes (its op field last) */
    Robosim__V1__CreateWorld cw = ROBOSIM__V1__CREATE_WORLD__INIT;
    cw.preset = "finger";
    Robosim__V1__Request create = ROBOSIM__V1__REQUEST__INIT;
    create.id = 41;
    create.op_case = ROBOSIM__V1__REQUEST__OP_CREATE_WORLD;
    create.create_world = &cw;
    uint8_t buf[256] = {0x5a, 0x00};
    size_t n = 2 + packed(&create, buf + 2, sizeof buf - 2);
    Robosim__V1__Response *rp = NULL;
    int rc = rsc_send_raw(f.c, buf, n, &rp, &err);
    CHECK(rc == 0 && rp && rp->result_case == ROBOSIM__V1__RESPONSE__RESULT_CREATE_WORLD &&
              rp->create_world->world && rp->create_world->world->world_id > 0 &&
              rp->create_world->token &&
              strlen(rp->create_world->token) == 32,
          "ListWorlds then CreateWorld: answered as a CreateWorld with one token (%d %s)", rc,
          rc ? err.message : "");
    rsc_free(rp);
    int after = worlds_listed(f.c);
    CHECK(after == before + 1, "it made one world on one shard: %d worlds before, %d after",
          before, after);
    /* the other way round: a ListWorlds, nothing made */
    uint8_t rev[256];
    size_t m = packed(&create, rev, sizeof rev - 2);
    rev[m++] = 0x5a;
    rev[m++] = 0x00;
    rp = NULL;
    rc = rsc_send_raw(f.c, rev, m, &rp, &err);
    CHECK(rc == 0 && rp && rp->result_case == ROBOSIM__V1__RESPONSE__RESULT_LIST_WORLDS &&
              rp->list_worlds->n_worlds == (size_t)after,
          "CreateWorld then ListWorlds: the list of every shard's %d worlds (%d)", after, rc);
    rsc_free(rp);
    CHECK(worlds_listed(f.c) == after, "and no world made");

    /* a batch: the unknown world first, then the finger worlds of every shard */
    int on[4] = {0}, shards_used = 0;
    for (int i = 0; i < NB; i++) {
        int k = shard_of(f.c, f.ids[i]);
        if (k >= 0 && k < 4 && !on[k]++)
            shards_used++;
    }
    CHECK(shards_used >= 2, "the batch's worlds are on %d shards", shards_used);
    rsc_batch_item_t items[NB + 1];
    static double force[NB + 1];
    static rsc_command_t cmds[NB + 1];
    for (int i = 0; i < NB + 1; i++) {
        force[i] = 0.1 * i;
        cmds[i] = (rsc_command_t){"finger", &force[i], 1};
        items[i] = (rsc_batch_item_t){.world_id = i == 0 ? NOWORLD : f.ids[i - 1], .steps = 1,
                                      .cmds = &cmds[i], .ncmds = 1};
    }
    Robosim__V1__StepBatchReply *out = NULL;
    rc = rsc_step_batch(f.c, items, NB + 1, &out, &err);
    CHECK(rc == 0 && out && out->n_results == NB + 1, "the batch answered: %d %s", rc,
          rc ? err.message : "");
    int stepped = 0, missing = 0;
    for (size_t i = 0; out && i < out->n_results; i++) {
        const Robosim__V1__BatchResult *r = out->results[i];
        if (i == 0)
            missing = r->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_ERROR &&
                      r->error->code == CODE(NOT_FOUND) && r->world_id == NOWORLD;
        else
            stepped += r->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_STATE &&
                       r->world_id == f.ids[i - 1] && r->state->step_count == 1;
    }
    CHECK(missing, "the unknown first world: NOT_FOUND in its slot");
    CHECK(stepped == NB, "every existing world stepped once, whatever its shard: %d of %d",
          stepped, NB);
    rsc_free(out);
    /* the unknown world first and the worlds of one other shard only: sent whole there */
    int k0 = shard_of(f.c, f.ids[0]), nk = 0;
    rsc_batch_item_t one[NB + 1];
    one[nk++] = items[0];
    for (int i = 0; i < NB; i++)
        if (shard_of(f.c, f.ids[i]) == k0)
            one[nk++] = items[i + 1];
    out = NULL;
    rc = rsc_step_batch(f.c, one, (size_t)nk, &out, &err);
    stepped = 0;
    for (size_t i = 1; rc == 0 && out && i < out->n_results; i++)
        stepped += out->results[i]->result_case == ROBOSIM__V1__BATCH_RESULT__RESULT_STATE &&
                   out->results[i]->state->step_count == 2;
    CHECK(rc == 0 && out && out->n_results == (size_t)nk && stepped == nk - 1,
          "the unknown world and shard %d's %d worlds: all %d stepped (%d %s)", k0, nk - 1,
          stepped, rc, rc ? err.message : "");
    rsc_free(out);
    fleet_stop(&f);
}

int main(int argc, char **argv)
{
    binary = server_arg(argc, argv);
    route_reading();
    routing_by_op();
    worlds_and_bits();
    limits();
    stream();
    state_dir();
    mixed_batches();
    mixed_budget();
    mixed_task_arrays();
    own_ports();
    unreachable_ports();
    return rs_test_done("test_shards");
}
