/* The observer stream through the real server: a subscriber sees every step of a slow run in
 * order with consecutive sequence numbers and the states the controller got; the rate limit
 * (a world parameter) thins a fast run but the last state always arrives; a late watcher lines
 * up with GetState's seq; Reset and SetState publish too; a subscriber that never reads does
 * not stop the server from serving others or grow it without bound; --no-stream turns it off;
 * an idle server (its loop blocked with no timeout) still publishes held-back states, expires
 * idle worlds and stops on SIGTERM on time, and uses almost no CPU. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "rs_test.h"
#include "server_internal.h"
#include "server_proc.h"
#include "timing.h"

#include <math.h>
#include <sched.h>
#include <sys/stat.h>

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name

static server_proc_t server;
static char stream_ep[256];
static void *zctx;

static void *subscriber(const char *prefix)
{
    void *sub = zmq_socket(zctx, ZMQ_SUB);
    int linger = 0;
    zmq_setsockopt(sub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, prefix, strlen(prefix));
    CHECK(zmq_connect(sub, stream_ep) == 0, "connect SUB to %s", stream_ep);
    return sub;
}

/* The next frame within timeout_ms, or NULL; the topic is checked against the frame. */
static Robosim__V1__StreamFrame *next_frame(void *sub, int timeout_ms)
{
    zmq_pollitem_t it = {sub, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, timeout_ms) <= 0)
        return NULL;
    char topic[64];
    int tn = zmq_recv(sub, topic, sizeof topic - 1, 0);
    int more = 0;
    size_t ms = sizeof more;
    zmq_getsockopt(sub, ZMQ_RCVMORE, &more, &ms);
    CHECK(tn > 0 && more, "a frame starts with its topic");
    if (tn <= 0 || !more)
        return NULL;
    topic[tn] = '\0';
    zmq_msg_t body;
    zmq_msg_init(&body);
    zmq_msg_recv(&body, sub, 0);
    Robosim__V1__StreamFrame *f =
        robosim__v1__stream_frame__unpack(NULL, zmq_msg_size(&body), zmq_msg_data(&body));
    zmq_msg_close(&body);
    CHECK(f && f->state, "the body is a StreamFrame");
    if (f) {
        char want[64];
        snprintf(want, sizeof want, "world/%llu/", (unsigned long long)f->world_id);
        CHECK(!strcmp(topic, want) && f->state->world_id == f->world_id &&
                  f->state->seq == f->seq,
              "topic '%s' for world %llu, seq %llu", topic, (unsigned long long)f->world_id,
              (unsigned long long)f->seq);
    }
    return f;
}

/* Step until the subscription is in effect (a frame arrives); drain; return the last frame's
 * seq. */
static uint64_t wait_subscribed(rsc_client_t *c, uint64_t id, void *sub)
{
    rsc_error_t err;
    for (int i = 0; i < 100; i++) {
        rsc_step(c, id, 1, 0, NULL, 0, NULL, &err);
        Robosim__V1__StreamFrame *f = next_frame(sub, 50);
        if (f) {
            uint64_t seq = f->seq;
            robosim__v1__stream_frame__free_unpacked(f, NULL);
            while ((f = next_frame(sub, 50))) {
                seq = f->seq;
                robosim__v1__stream_frame__free_unpacked(f, NULL);
            }
            return seq;
        }
    }
    CHECK(0, "the subscription never took effect");
    return 0;
}

static int same_state(Robosim__V1__State *a, Robosim__V1__State *b)
{
    size_t na = robosim__v1__state__get_packed_size(a), nb = robosim__v1__state__get_packed_size(b);
    unsigned char *x = malloc(na), *y = malloc(nb);
    robosim__v1__state__pack(a, x);
    robosim__v1__state__pack(b, y);
    int same = na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

static void every_step_in_order(rsc_client_t *c, uint64_t id)
{
    rsc_error_t err;
    char prefix[48];
    snprintf(prefix, sizeof prefix, "world/%llu/", (unsigned long long)id);
    void *sub = subscriber(prefix);
    uint64_t seq = wait_subscribed(c, id, sub);
    CHECK(seq > 0, "frames flow (last seq %llu)", (unsigned long long)seq);

    /* a slow run: 5 ms between steps, the limit (1000 per second) lets every state through */
    double u[] = {3, 2};
    rsc_command_t cmd = {"robot", u, 2};
    int in_order = 0, same = 0;
    for (int k = 0; k < 40; k++) {
        Robosim__V1__State *s = NULL;
        u[0] = 2 + k % 3;
        rsc_step(c, id, 1, 0, &cmd, 1, &s, &err);
        Robosim__V1__StreamFrame *f = next_frame(sub, 1000);
        if (s && f && f->seq == seq + 1 && s->seq == f->seq && f->world_id == id) {
            in_order++;
            same += same_state(s, f->state);
        }
        seq = f ? f->seq : seq;
        if (f)
            robosim__v1__stream_frame__free_unpacked(f, NULL);
        rsc_free(s);
        sleep_s(0.005);
    }
    CHECK(in_order == 40 && same == 40,
          "every step of a slow run arrives in order with consecutive seq (%d of 40) and the "
          "controller's state (%d of 40)",
          in_order, same);

    /* Reset and SetState publish too */
    Robosim__V1__State *snap = NULL, *s = NULL;
    rsc_get_snapshot(c, id, &snap, &err);
    CHECK(snap && snap->seq == seq, "GetState's seq is the last published: %llu vs %llu",
          snap ? (unsigned long long)snap->seq : 0ULL, (unsigned long long)seq);
    sleep_s(0.005);
    rsc_reset(c, id, 0, 0, &s, &err);
    Robosim__V1__StreamFrame *f = next_frame(sub, 1000);
    CHECK(f && f->seq == seq + 1 && f->state->step_count == 0 && s && s->seq == f->seq,
          "a Reset is published");
    if (f)
        seq = f->seq, robosim__v1__stream_frame__free_unpacked(f, NULL);
    rsc_free(s);
    sleep_s(0.005);
    s = NULL;
    rsc_set_state(c, id, snap->snapshot.data, snap->snapshot.len, &s, &err);
    f = next_frame(sub, 1000);
    CHECK(f && f->seq == seq + 1 && s && f->state->step_count == snap->step_count,
          "a SetState is published");
    if (f)
        seq = f->seq, robosim__v1__stream_frame__free_unpacked(f, NULL);
    rsc_free(s);
    rsc_free(snap);

    /* the rate limit as a world parameter: 20 states per second; a burst of steps is thinned,
     * seq stays consecutive, and the last state arrives once the limit allows */
    double hz[] = {20};
    rsc_param_t p = {"", "stream_max_hz", hz, 1};
    int rc = rsc_set_params(c, id, &p, 1, &err);
    CHECK(rc == 0, "set stream_max_hz: %s", err.message);
    sleep_s(0.06);
    Robosim__V1__State *last = NULL;
    for (int k = 0; k < 60; k++) {
        rsc_free(last);
        last = NULL;
        rsc_step(c, id, 1, 0, NULL, 0, &last, &err);
    }
    int frames = 0, consecutive = 1;
    Robosim__V1__StreamFrame *latest = NULL;
    while ((f = next_frame(sub, 300))) {
        frames++;
        consecutive &= f->seq == seq + 1;
        seq = f->seq;
        if (latest)
            robosim__v1__stream_frame__free_unpacked(latest, NULL);
        latest = f;
    }
    CHECK(frames >= 1 && frames < 30 && consecutive,
          "60 fast steps at 20 per second: %d frames, consecutive seq %d", frames, consecutive);
    int eq = 0;
    if (latest && last) { /* the reply went out before the state was published: its seq is older */
        uint64_t keep = last->seq;
        last->seq = latest->state->seq;
        eq = same_state(latest->state, last);
        last->seq = keep;
    }
    CHECK(eq && latest->state->step_count == last->step_count,
          "the last state arrives after the limit's wait (frame step %llu, reply step %llu)",
          latest ? (unsigned long long)latest->state->step_count : 0ULL,
          last ? (unsigned long long)last->step_count : 0ULL);
    if (latest)
        robosim__v1__stream_frame__free_unpacked(latest, NULL);
    rsc_free(last);
    hz[0] = 1000;
    rsc_set_params(c, id, &p, 1, &err);
    zmq_close(sub);
}

/* A watcher joining late: subscribe, GetState once, then frames with seq > State.seq. */
static void late_joiner(rsc_client_t *c, uint64_t id)
{
    rsc_error_t err;
    /* the world has been running (every_step_in_order); a watcher of all worlds joins */
    void *sub = subscriber("world/");
    wait_subscribed(c, id, sub);
    rsc_client_t *watcher = client_of(server.endpoint, 5000);
    Robosim__V1__State *now = NULL;
    rsc_get_state(watcher, id, &now, &err);
    CHECK(now && now->seq > 0, "GetState carries the stream seq");
    sleep_s(0.005);
    Robosim__V1__State *s = NULL;
    rsc_step(c, id, 1, 0, NULL, 0, &s, &err);
    /* frames up to now->seq are history for the watcher; the next is seq + 1 */
    Robosim__V1__StreamFrame *f;
    int old = 0, lined_up = 0;
    while ((f = next_frame(sub, 500))) {
        if (f->world_id == id && f->seq <= now->seq)
            old++;
        else if (f->world_id == id && f->seq == now->seq + 1 && s &&
                 f->state->step_count == now->step_count + 1 && same_state(f->state, s))
            lined_up = 1;
        robosim__v1__stream_frame__free_unpacked(f, NULL);
        if (lined_up)
            break;
    }
    CHECK(lined_up, "the late watcher lines up: the frame after GetState's seq %llu is the next "
                    "step (%d older frames skipped)",
          now ? (unsigned long long)now->seq : 0ULL, old);
    rsc_free(now);
    rsc_free(s);
    rsc_close(&watcher);
    zmq_close(sub);
}

/* A subscriber that never reads cannot stop the server or grow it without bound. */
static void subscriber_never_reads(void)
{
    rsc_error_t err;
    rsc_client_t *c = client_of(server.endpoint, 5000);
    uint64_t id;
    rsc_create_world(c, "workshop", NULL, 0, 1, &id, &err);
    double hz[] = {1e6};
    rsc_param_t p = {"", "stream_max_hz", hz, 1};
    rsc_set_params(c, id, &p, 1, &err);
    void *deaf = zmq_socket(zctx, ZMQ_SUB);
    int hwm = 10, rcvbuf = 4096, linger = 0;
    zmq_setsockopt(deaf, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(deaf, ZMQ_RCVBUF, &rcvbuf, sizeof rcvbuf);
    zmq_setsockopt(deaf, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(deaf, ZMQ_SUBSCRIBE, "", 0);
    zmq_connect(deaf, stream_ep);
    wait_subscribed(c, id, deaf); /* it read these; from now on it never reads again */
    long before = rss_kb(server.pid);

    /* another client keeps being served while the stream floods the deaf subscriber */
    rsc_client_t *other = client_of(server.endpoint, 5000);
    uint64_t mine;
    rsc_create_world(other, "diff_drive", NULL, 0, 1, &mine, &err);
    int ok = 0, other_ok = 0;
    double t0 = 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t0 = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    for (int k = 0; k < 3000; k++) {
        ok += rsc_step(c, id, 1, 0, NULL, 0, NULL, &err) == 0;
        if (k % 100 == 0)
            other_ok += rsc_step(other, mine, 1, 0, NULL, 0, NULL, &err) == 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double secs = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec - t0;
    long after = rss_kb(server.pid);
    CHECK(ok == 3000 && other_ok == 30,
          "with a subscriber that never reads, 3000 published steps and another client's 30 "
          "steps are all served (%d, %d) in %.2f s",
          ok, other_ok, secs);
    CHECK(before > 0 && after - before < 64 * 1024,
          "the server's memory stays bounded: %ld kB before, %ld kB after", before, after);
    rsc_destroy_world(c, id, &err);
    rsc_destroy_world(other, mine, &err);
    rsc_close(&other);
    rsc_close(&c);
    zmq_close(deaf);
}

static void no_stream(const char *binary)
{
    const char *extra[] = {"--no-stream", NULL};
    server_proc_t sp;
    CHECK(server_start(&sp, binary, extra) == 0, "server with --no-stream");
    rsc_client_t *c = client_of(sp.endpoint, 5000);
    rsc_error_t err;
    Robosim__V1__HelloReply *h = NULL;
    rsc_hello(c, 1, 0, &h, &err);
    CHECK(h && h->stream_endpoint && h->stream_endpoint[0] == '\0',
          "--no-stream: Hello.stream_endpoint is empty");
    rsc_free(h);
    uint64_t id;
    rsc_create_world(c, "finger", NULL, 0, 1, &id, &err);
    Robosim__V1__State *s = NULL;
    rsc_step(c, id, 3, 0, NULL, 0, &s, &err);
    CHECK(s && s->seq == 0, "no stream: seq stays 0");
    rsc_free(s);
    rsc_close(&c);
    server_stop(&sp);

    /* an explicit endpoint that cannot be bound stops the start-up with a message */
    const char *bad[] = {"--stream", "tcp://256.0.0.1:1", NULL};
    CHECK(server_start(&sp, binary, bad) != 0, "--stream on an address that does not exist fails");
    server_stop(&sp);
}

/* The loop's main-thread CPU seconds while one client sends `n` Steps `gap_ms` apart, against a
 * server started with `extra`; -1 when it did not start. */
static double paced_main_cpu(const char *binary, const char *const *extra, int n, int gap_ms)
{
    server_proc_t sp;
    if (server_start(&sp, binary, extra) != 0 || sp.pid <= 0)
        return -1;
    rsc_client_t *c = client_of(sp.endpoint, 5000);
    rsc_error_t err;
    uint64_t id = 0;
    int ok = rsc_create_world(c, "finger", NULL, 0, 1, &id, &err) == 0;
    double main0 = 0, main1 = 0;
    cpu_threads(sp.pid, &main0, NULL);
    struct timespec gap = {0, gap_ms * 1000000L};
    for (int i = 0; i < n && ok; i++) {
        ok = rsc_step(c, id, 1, 0, NULL, 0, NULL, &err) == 0;
        nanosleep(&gap, NULL);
    }
    cpu_threads(sp.pid, &main1, NULL);
    CHECK(ok, "paced Steps: %s", err.message);
    rsc_close(&c);
    server_stop(&sp);
    return main1 - main0;
}

/* --spin-us: a loop polls for the next request only while requests lately came back within
 * the window. A client that pauses 3 ms between Steps (an agent thinking) must not make the
 * loop poll 200 us after every reply: that would add about n x 200 us of CPU over the same
 * client against --spin-us 0. The lesser of three servers each way, alternating: under
 * ThreadSanitizer one server now and then uses twice its CPU whichever the flag. */
static void paced_client_no_spin(const char *binary)
{
    const char *spin[] = {"--no-world", NULL}, *none[] = {"--no-world", "--spin-us", "0", NULL};
    const int n = 300;
    double base = INFINITY, with = INFINITY;
    for (int i = 0; i < 3; i++) {
        base = fmin(base, paced_main_cpu(binary, none, n, 3));
        with = fmin(with, paced_main_cpu(binary, spin, n, 3));
    }
    CHECK(base >= 0 && with >= 0 && with < base + 0.5 * n * 200e-6,
          "a client pausing 3 ms between %d Steps: the loop's CPU %.1f ms at the default "
          "--spin-us, %.1f ms at --spin-us 0 (least of 3 each; polling after every reply would "
          "add %.0f ms)", n, 1e3 * with, 1e3 * base, 1e3 * n * 200e-6);
    printf("paced client: loop CPU %.1f ms (default --spin-us) vs %.1f ms (--spin-us 0) over %d "
           "Steps 3 ms apart, least of 3 servers each\n", 1e3 * with, 1e3 * base, n);
}

/* A server whose loop is idle, blocked in its receive (no timeout: its watchdog wakes it):
 *   - a state the rate limit held back is still published on time with no request after it
 *     (--world-ttl 0, so no sweep wakes the loop either: only the wake-up can publish it);
 *   - idle, it uses almost no CPU (a wake-up that spins would use a whole core);
 *   - SIGTERM stops it within a second;
 *   - --world-ttl expires an idle world with no request to wake the loop (the first request
 *     after the idle time would be served before the sweep: ListWorlds sees the sweep's work). */
static void idle_server(const char *binary)
{
    const char *extra[] = {"--stream-max-hz", "5", "--world-ttl", "0", "--no-world", NULL};
    server_proc_t sp;
    CHECK(server_start(&sp, binary, extra) == 0, "server with --stream-max-hz 5 --world-ttl 0");
    if (sp.pid <= 0)
        return;
    rsc_client_t *c = client_of(sp.endpoint, 5000);
    rsc_error_t err;
    Robosim__V1__HelloReply *h = NULL;
    rsc_hello(c, 1, 0, &h, &err);
    snprintf(stream_ep, sizeof stream_ep, "%s", h ? h->stream_endpoint : "");
    rsc_free(h);
    uint64_t id = 0;
    CHECK(rsc_create_world(c, "finger", NULL, 0, 1, &id, &err) == 0, "create: %s", err.message);
    void *sub = subscriber("world/");
    Robosim__V1__StreamFrame *f = NULL;
    for (int i = 0; i < 100 && !f; i++) { /* until the subscription is in effect */
        rsc_step(c, id, 1, 0, NULL, 0, NULL, &err);
        f = next_frame(sub, 50);
    }
    CHECK(f != NULL, "the subscription never took effect");
    robosim__v1__stream_frame__free_unpacked(f, NULL);
    while ((f = next_frame(sub, 400))) /* what the rate limit held back, published */
        robosim__v1__stream_frame__free_unpacked(f, NULL);

    /* two quick steps: the first state goes out at once, the second is held back 0.2 s */
    Robosim__V1__State *s1 = NULL, *s2 = NULL;
    rsc_step(c, id, 1, 0, NULL, 0, &s1, &err);
    rsc_step(c, id, 1, 0, NULL, 0, &s2, &err);
    double t0 = now(), got = -1;
    uint64_t want = s2 ? s2->step_count : 0, last = 0;
    int frames = 0;
    while (now() - t0 < 1.5 && got < 0) {
        if (!(f = next_frame(sub, 50)))
            continue;
        frames++;
        last = f->state ? f->state->step_count : 0;
        if (last == want && got < 0)
            got = now() - t0;
        robosim__v1__stream_frame__free_unpacked(f, NULL);
    }
    CHECK(s1 && s2 && frames >= 1 && got >= 0 && got < 0.6,
          "the held-back state (step %llu) is published about 0.2 s after its step with no "
          "request after it: %d frames, the last of step %llu, it came after %.3f s (-1: never)",
          (unsigned long long)want, frames, (unsigned long long)last, got);
    rsc_free(s1);
    rsc_free(s2);

    double cpu0 = cpu_seconds(sp.pid), w0 = now();
    struct timespec idle = {1, 500000000L};
    nanosleep(&idle, NULL);
    double used = cpu_seconds(sp.pid) - cpu0, wall = now() - w0;
    CHECK(cpu0 >= 0 && used < 0.15 * wall,
          "an idle server uses little CPU: %.3f s in %.2f s (a spinning wake-up would use about "
          "all of it)", used, wall);

    zmq_close(sub);
    rsc_close(&c);
    double slow = slowdown(0.02); /* the 1 s goal times the slowdown measured now */
    double t1 = now();
    int rc = server_stop(&sp);
    double stop_s = now() - t1;
    CHECK(rc == 0 && stop_s < wall_bound(1.0, slow),
          "idle, SIGTERM stops it within 1 s x slowdown %.2f: exit %d after %.3f s", slow, rc,
          stop_s);

    /* --world-ttl 1: an idle world expires with no request coming */
    const char *ttl[] = {"--world-ttl", "1", "--no-world", NULL};
    CHECK(server_start(&sp, binary, ttl) == 0, "server with --world-ttl 1");
    if (sp.pid <= 0)
        return;
    c = client_of(sp.endpoint, 5000);
    CHECK(rsc_create_world(c, "finger", NULL, 0, 1, &id, &err) == 0, "create: %s", err.message);
    struct timespec wait = {2, 600000000L}; /* the TTL, plus a sweep (every 0.25 s) */
    nanosleep(&wait, NULL);
    Robosim__V1__ListWorldsReply *lw = NULL;
    CHECK(rsc_list_worlds(c, &lw, &err) == 0, "ListWorlds: %s", err.message);
    CHECK(lw && lw->n_worlds == 0,
          "the world idle for 2.6 s under --world-ttl 1 expired before the next request: %zu "
          "left", lw ? lw->n_worlds : (size_t)99);
    rsc_free(lw);
    rsc_close(&c);
    CHECK(server_stop(&sp) == 0, "server exits 0 on SIGTERM");
}

/* path (under dir) holds text */
static void put_file(const char *dir, const char *path, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, path);
    for (char *slash = strchr(p + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(p, 0700);
        *slash = '/';
    }
    FILE *f = fopen(p, "w");
    CHECK(f != NULL, "write %s", p);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* The cores a polling loop counts as its own (rs_cores_usable): an affinity mask of one CPU
 * gives one; against cgroup trees made in a temporary directory, a quota on a parent binds its
 * child, v1's quota over its period, no quota leaves the cores online and allowed by the
 * affinity mask. */
static void cores_usable(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    int allowed = online > 0 ? (int)online : 1;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0, "sched_getaffinity");
    if (CPU_COUNT(&set) < allowed)
        allowed = CPU_COUNT(&set);
    char dir[] = "/tmp/rs_cgroup_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char root[600], proc[600];
    snprintf(root, sizeof root, "%s/fs", dir);
    snprintf(proc, sizeof proc, "%s/cgroup", dir);

    int got = rs_cores_usable(root, "/nonexistent/cgroup");
    CHECK(got == allowed, "no cgroup list: %d cores, want %d", got, allowed);
    /* the affinity mask: held to one CPU, one core (then the mask as it was) */
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) {
            CPU_SET(c, &one);
            break;
        }
    if (allowed > 1 && sched_setaffinity(0, sizeof one, &one) == 0) {
        got = rs_cores_usable(root, "/nonexistent/cgroup");
        CHECK(got == 1, "affinity mask of one CPU: %d cores, want 1", got);
        CHECK(sched_setaffinity(0, sizeof set, &set) == 0, "restore the affinity mask");
    }
    put_file(dir, "cgroup", "0::/\n");
    got = rs_cores_usable(root, proc);
    CHECK(got == allowed, "cgroup v2 with no cpu.max: %d cores, want %d", got, allowed);
    /* half a core on the parent, none on the child: one core */
    put_file(dir, "cgroup", "0::/box/job\n");
    put_file(dir, "fs/box/cpu.max", "50000 100000\n");
    put_file(dir, "fs/box/job/cpu.max", "max 100000\n");
    got = rs_cores_usable(root, proc);
    CHECK(got == 1, "cgroup v2, parent's quota 0.5 core: %d cores, want 1", got);
    /* 1.5 cores at the root of a namespaced tree: 2 (or fewer when fewer are allowed) */
    put_file(dir, "cgroup", "0::/\n");
    put_file(dir, "fs/cpu.max", "150000 100000\n");
    got = rs_cores_usable(root, proc);
    CHECK(got == (allowed < 2 ? allowed : 2), "cgroup v2, quota 1.5 cores: %d cores, want %d", got,
          allowed < 2 ? allowed : 2);
    /* cgroup v1: quota -1 on the child, 0.25 core on the parent */
    put_file(dir, "cgroup", "5:memory:/x\n4:cpu,cpuacct:/ci/run\n");
    put_file(dir, "fs/cpu,cpuacct/ci/cpu.cfs_quota_us", "25000\n");
    put_file(dir, "fs/cpu,cpuacct/ci/cpu.cfs_period_us", "100000\n");
    put_file(dir, "fs/cpu,cpuacct/ci/run/cpu.cfs_quota_us", "-1\n");
    put_file(dir, "fs/cpu,cpuacct/ci/run/cpu.cfs_period_us", "100000\n");
    got = rs_cores_usable(root, proc);
    CHECK(got == 1, "cgroup v1, parent's quota 0.25 core: %d cores, want 1", got);
    printf("cores usable: %d with no quota; quotas of 0.5, 1.5 and 0.25 cores read\n", allowed);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "remove %s", dir);
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    cores_usable();
    const char *extra[] = {"--stream-max-hz", "1000", NULL};
    CHECK(server_start(&server, binary, extra) == 0, "server did not start on %s",
          server.endpoint);
    if (server.pid <= 0)
        return rs_test_done("test_stream");
    zctx = zmq_ctx_new();
    rsc_client_t *c = client_of(server.endpoint, 5000);
    rsc_error_t err;
    Robosim__V1__HelloReply *h = NULL;
    rsc_hello(c, 1, 0, &h, &err);
    CHECK(h && h->stream_endpoint && !strncmp(h->stream_endpoint, "tcp://127.0.0.1:", 16),
          "Hello advertises the stream: '%s'", h ? h->stream_endpoint : "");
    snprintf(stream_ep, sizeof stream_ep, "%s", h ? h->stream_endpoint : "");
    rsc_free(h);
    uint64_t id;
    rsc_create_world(c, "diff_drive", NULL, 0, 1, &id, &err);
    every_step_in_order(c, id);
    late_joiner(c, id);
    rsc_close(&c);
    subscriber_never_reads();
    CHECK(server_stop(&server) == 0, "server exits 0 on SIGTERM");
    zmq_ctx_term(zctx);
    no_stream(binary);
    zctx = zmq_ctx_new();
    idle_server(binary);
    zmq_ctx_term(zctx);
    paced_client_no_spin(binary);
    return rs_test_done("test_stream");
}
