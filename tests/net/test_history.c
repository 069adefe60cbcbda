/* Observer-stream history (GetHistory, history.c):
 *   - a watcher who joins after 500 steps gets all 500 from the history, then follows the live
 *     stream: seqs 1..N with no gap and no duplicate, every frame byte for byte the frame a
 *     watcher present from the start received;
 *   - paging (max_frames, more) returns consecutive frames;
 *   - worlds stepped by StepBatch.arrays on two workers are published as Steps are: live and
 *     in history, one frame per batch, each the state the batch replied; under the rate limit
 *     the last state once the limit allows;
 *   - past --history-frames, or older than --history-seconds, frames are reported dropped
 *     (GetHistory.dropped, first_seq), never silently missing;
 *   - from_seq past the last frame is OUT_OF_RANGE; a server without history says so;
 *   - memory: in-process, a world's history holds at most history_frames frames and stops
 *     growing once full; the bytes per frame of each world kind are printed, with the bytes per
 *     world-second at the default 60 states per second (the README quotes them);
 *   - memory in bytes: bouncing bricks (34 kB frames, 250 events a step) published as fast as
 *     they step keep within --history-bytes-per-world and --history-bytes (GetHistory's bytes
 *     and the server's RSS), a quiet world keeps its history, and destroying the worlds gives
 *     the memory back;
 *   - a client cannot raise a world's stream rate past --stream-max-hz: CreateWorld and
 *     SetParams asking for more are OUT_OF_RANGE, and a world carrying a larger one (a
 *     snapshot's) publishes at the server's rate. */
#include "inproc_server.h"
#include "rs_test.h"
#include "server_internal.h"
#include "server_proc.h"
#include "timing.h"

#include <math.h>

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name

/* A Step of one control step on the in-process server's world w, packed (malloc'd): the bytes
 * rs_server_handle takes. */
static uint8_t *packed_step(world_slot_t *w, size_t *n)
{
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__Step stp = ROBOSIM__V1__STEP__INIT;
    rq.op_case = ROBOSIM__V1__REQUEST__OP_STEP;
    rq.step = &stp;
    rq.world_id = w->id;
    rq.token = w->token;
    stp.length_case = ROBOSIM__V1__STEP__LENGTH_STEPS;
    stp.steps = 1;
    *n = robosim__v1__request__get_packed_size(&rq);
    uint8_t *b = malloc(*n);
    if (b)
        robosim__v1__request__pack(&rq, b);
    return b;
}

static void *zctx;

/* `s` seconds of waiting on an idle machine (a SUB's subscription taking effect, the last
 * frames arriving), stretched by the slowdown now (timing.h). */
static double waited(double s)
{
    return wall_bound(s, slowdown(0.02));
}

static char *stream_of(rsc_client_t *c)
{
    rsc_error_t err;
    Robosim__V1__HelloReply *h = NULL;
    rsc_hello(c, 1, 0, &h, &err);
    char *ep = strdup(h && h->stream_endpoint ? h->stream_endpoint : "");
    rsc_free(h);
    return ep;
}

static void *subscriber(const char *ep, uint64_t id)
{
    void *sub = zmq_socket(zctx, ZMQ_SUB);
    int linger = 0, hwm = 100000;
    char t[48];
    snprintf(t, sizeof t, "world/%llu/", (unsigned long long)id);
    zmq_setsockopt(sub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sub, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, t, strlen(t));
    CHECK(zmq_connect(sub, ep) == 0, "connect SUB to %s", ep);
    return sub;
}

/* frames by seq: the body bytes (malloc'd) */
typedef struct {
    uint8_t *b[2048];
    size_t n[2048];
} frames_t;

static uint64_t seq_of(const uint8_t *b, size_t n)
{
    Robosim__V1__StreamFrame *f = robosim__v1__stream_frame__unpack(NULL, n, b);
    uint64_t seq = f ? f->seq : 0;
    CHECK(f && f->state && f->state->seq == seq && f->wall_time > 1.6e9,
          "a StreamFrame with its seq and wall time");
    if (f)
        robosim__v1__stream_frame__free_unpacked(f, NULL);
    return seq;
}

/* Receive the frames waiting within timeout_ms into `into` (by seq); count duplicates. Returns
 * the frames received. */
static int drain(void *sub, frames_t *into, int timeout_ms, int *dups)
{
    int got = 0;
    zmq_pollitem_t it = {sub, 0, ZMQ_POLLIN, 0};
    while (zmq_poll(&it, 1, timeout_ms) > 0) {
        zmq_msg_t topic, body;
        zmq_msg_init(&topic);
        zmq_msg_init(&body);
        zmq_msg_recv(&topic, sub, 0);
        zmq_msg_recv(&body, sub, 0);
        uint64_t seq = seq_of(zmq_msg_data(&body), zmq_msg_size(&body));
        if (seq > 0 && seq < 2048) {
            if (into->b[seq])
                (*dups)++;
            else {
                into->n[seq] = zmq_msg_size(&body);
                into->b[seq] = malloc(into->n[seq]);
                memcpy(into->b[seq], zmq_msg_data(&body), into->n[seq]);
            }
        }
        zmq_msg_close(&topic);
        zmq_msg_close(&body);
        got++;
    }
    return got;
}

/* GetHistory of world id from from_seq, at most max frames; the reply or NULL (*code: its
 * error code, 0 for a result). */
static Robosim__V1__GetHistoryReply *get_history(rsc_client_t *c, uint64_t id, uint64_t from,
                                                 uint32_t max, int *code,
                                                 Robosim__V1__Response **keep)
{
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__GetHistory g = ROBOSIM__V1__GET_HISTORY__INIT;
    rq.op_case = ROBOSIM__V1__REQUEST__OP_GET_HISTORY;
    rq.get_history = &g;
    rq.world_id = id;
    g.from_seq = from;
    g.max_frames = max;
    rsc_error_t err;
    *keep = NULL;
    int rc = rsc_call(c, &rq, keep, &err);
    *code = rc == 0 ? 0 : err.code;
    if (rc != 0 || !*keep || (*keep)->result_case != ROBOSIM__V1__RESPONSE__RESULT_GET_HISTORY)
        return NULL;
    return (*keep)->get_history;
}

static void step(rsc_client_t *c, uint64_t id, int n)
{
    rsc_error_t err;
    for (int i = 0; i < n; i++)
        CHECK(rsc_step(c, id, 1, 0, NULL, 0, NULL, &err) == 0, "step: %s", err.message);
}

/* The server started with extra, and a client of it; NULL (a failed check) if it did not start. */
static rsc_client_t *started_client(server_proc_t *sp, const char *binary, const char *const *extra)
{
    CHECK(server_start(sp, binary, extra) == 0, "server did not start");
    return sp->pid > 0 ? client_of(sp->endpoint, 5000) : NULL;
}

static void late_joiner_sees_everything(const char *binary)
{
    server_proc_t sp;
    const char *extra[] = {"--stream-max-hz", "1000000", "--no-world", NULL};
    rsc_client_t *c = started_client(&sp, binary, extra);
    if (!c)
        return;
    char *ep = stream_of(c);
    rsc_error_t err;
    uint64_t id = 0;
    CHECK(rsc_create_world(c, "finger", NULL, 0, 1, &id, &err) == 0, "create: %s", err.message);

    /* watcher A from the start: subscribed before the first frame */
    void *a = subscriber(ep, id);
    sleep_s(waited(0.3));
    static frames_t fa, fb;
    int dups_a = 0, dups_b = 0;
    step(c, id, 500);
    drain(a, &fa, (int)(1000 * waited(0.5)), &dups_a);
    CHECK(fa.b[1] && fa.b[500], "watcher A saw seq 1 and 500");

    /* watcher B joins after 500 steps: subscribe, wait until the subscription is in effect
     * (a frame arrives), then page the history from the start */
    void *b = subscriber(ep, id);
    int live = 0;
    for (int i = 0; i < 100 && !live; i++) {
        step(c, id, 1);
        live = drain(b, &fb, 20, &dups_b);
    }
    CHECK(live > 0, "B's subscription took effect");
    uint64_t from = 1, last = 0;
    int pages = 0, code = 0, gap = 0;
    for (;;) {
        Robosim__V1__Response *keep;
        Robosim__V1__GetHistoryReply *r = get_history(c, id, from, 128, &code, &keep);
        CHECK(r != NULL, "GetHistory from %llu: code %d", (unsigned long long)from, code);
        if (!r) {
            rsc_free(keep);
            break;
        }
        pages++;
        gap |= r->dropped != 0 || r->first_seq != 1;
        for (size_t i = 0; i < r->n_frames; i++) {
            uint64_t seq = seq_of(r->frames[i].data, r->frames[i].len);
            gap |= seq != from + i;
            if (seq < 2048 && !fb.b[seq]) {
                fb.n[seq] = r->frames[i].len;
                fb.b[seq] = malloc(fb.n[seq]);
                memcpy(fb.b[seq], r->frames[i].data, fb.n[seq]);
            }
            last = seq;
        }
        from += r->n_frames;
        int more = r->more;
        rsc_free(keep);
        if (!more)
            break;
    }
    CHECK(!gap && pages >= 4, "history pages from seq 1, consecutive, nothing dropped (%d pages)",
          pages);
    /* then 100 live steps */
    step(c, id, 100);
    drain(a, &fa, (int)(1000 * waited(0.3)), &dups_a);
    drain(b, &fb, (int)(1000 * waited(0.3)), &dups_b);
    uint64_t n = 0;
    int differ = 0, missing = 0;
    for (uint64_t s = 1; s < 2048; s++) {
        if (!fa.b[s] && !fb.b[s])
            break;
        n = s;
        missing += !fa.b[s] || !fb.b[s];
        differ += fa.b[s] && fb.b[s] &&
                  (fa.n[s] != fb.n[s] || memcmp(fa.b[s], fb.b[s], fa.n[s]) != 0);
    }
    CHECK(n >= 600 && last >= 500 && !missing && !differ && !dups_a,
          "late watcher B reconstructs seq 1..%llu (500 steps before it joined, history up to "
          "%llu, then live), byte for byte what A saw: %d missing, %d differ, %d duplicates "
          "at A",
          (unsigned long long)n, (unsigned long long)last, missing, differ, dups_a);
    printf("late joiner: %llu frames, the first %llu from history in %d pages, identical to "
           "the watcher present from the start\n",
           (unsigned long long)n, (unsigned long long)last, pages);
    for (int s = 0; s < 2048; s++) {
        free(fa.b[s]);
        free(fb.b[s]);
    }

    /* bad inputs: past the end; an unknown world */
    Robosim__V1__Response *keep;
    CHECK(!get_history(c, id, n + 2, 0, &code, &keep) && code == CODE(OUT_OF_RANGE),
          "from_seq past the last frame: OUT_OF_RANGE (%d)", code);
    rsc_free(keep);
    Robosim__V1__GetHistoryReply *r = get_history(c, id, n + 1, 0, &code, &keep);
    CHECK(r && r->n_frames == 0 && !r->more && r->last_seq == n && r->dropped == 0,
          "from last + 1: no frame, nothing dropped");
    rsc_free(keep);
    CHECK(!get_history(c, 999, 1, 0, &code, &keep) && code == CODE(NOT_FOUND),
          "unknown world: NOT_FOUND (%d)", code);
    rsc_free(keep);
    zmq_close(a);
    zmq_close(b);
    free(ep);
    rsc_close(&c);
    CHECK(server_stop(&sp) == 0, "server exits 0");
}

/* A frame's seq, time and digest. */
static int frame_state(const uint8_t *b, size_t n, uint64_t *seq, double *t, uint8_t digest[32])
{
    Robosim__V1__StreamFrame *f = robosim__v1__stream_frame__unpack(NULL, n, b);
    int ok = f && f->state && f->state->digest.len == 32;
    if (ok) {
        *seq = f->seq;
        *t = f->state->time;
        memcpy(digest, f->state->digest.data, 32);
    }
    if (f)
        robosim__v1__stream_frame__free_unpacked(f, NULL);
    return ok;
}

/* Worlds stepped by StepBatch.arrays (on two workers, which build their frames) are published
 * as Steps are: a watcher of one sees a frame per batch, seq 1..N, each the state the batch
 * replied (time and digest); another world's history holds the same; under the rate limit the
 * held-back last state is published once the limit allows. */
static void arrays_batches_published(const char *binary)
{
    enum { NW = 6, ROUNDS = 30 };
    for (int limited = 0; limited < 2; limited++) {
        server_proc_t sp;
        const char *extra[] = {"--stream-max-hz", limited ? "20" : "1000000", "--no-world",
                               "--threads", "2", NULL};
        rsc_client_t *c = started_client(&sp, binary, extra);
        if (!c)
            return;
        char *ep = stream_of(c);
        rsc_error_t err;
        uint64_t ids[NW];
        for (int i = 0; i < NW; i++)
            CHECK(rsc_create_world(c, "finger", NULL, 0, (uint64_t)i, &ids[i], &err) == 0,
                  "create: %s", err.message);
        void *sub = subscriber(ep, ids[2]);
        sleep_s(waited(0.3));
        static double times[2][ROUNDS + 1];
        static uint8_t digests[2][ROUNDS + 1][32];
        int replied = 0;
        for (int r = 1; r <= ROUNDS; r++) {
            double f[NW];
            for (int i = 0; i < NW; i++)
                f[i] = 0.3 + 0.1 * i + 0.01 * r;
            Robosim__V1__BatchArraysReply *a = NULL;
            if (rsc_step_arrays(c, ids, NW, 1, f, NW, NULL, 0, &a, &err) != 0 ||
                a->n_codes != NW || a->codes[2] || a->codes[4] || a->digests.len != NW * 32) {
                rsc_free(a);
                continue;
            }
            replied++;
            for (int k = 0; k < 2; k++) {
                int i = k ? 4 : 2;
                times[k][r] = a->time[i];
                memcpy(digests[k][r], a->digests.data + 32 * i, 32);
            }
            rsc_free(a);
        }
        CHECK(replied == ROUNDS, "%d of %d batches answered", replied, ROUNDS);
        if (!limited) {
            /* every batch's state of world 2, live */
            static frames_t fr;
            int dups = 0;
            drain(sub, &fr, (int)(1000 * waited(0.3)), &dups);
            int bad = 0, missing = 0;
            for (int r = 1; r <= ROUNDS; r++) {
                uint64_t seq;
                double t;
                uint8_t d[32];
                if (!fr.b[r] || !frame_state(fr.b[r], fr.n[r], &seq, &t, d)) {
                    missing++;
                    continue;
                }
                bad += seq != (uint64_t)r || t != times[0][r] || memcmp(d, digests[0][r], 32);
            }
            CHECK(!missing && !bad && !dups && !fr.b[ROUNDS + 1],
                  "the watcher of a batch-stepped world got seq 1..%d, each the state its "
                  "batch replied: %d missing, %d differ, %d duplicates",
                  ROUNDS, missing, bad, dups);
            for (int k = 0; k < 2048; k++)
                free(fr.b[k]), fr.b[k] = NULL;
        }
        /* world 4's history (nobody watches it): every batch's state, or under the limit the
         * last one once the limit lets it out */
        if (limited)
            sleep_s(0.2);
        int code = 0, bad = 0;
        Robosim__V1__Response *keep;
        Robosim__V1__GetHistoryReply *h = get_history(c, ids[4], 1, 0, &code, &keep);
        CHECK(h != NULL && h->n_frames > 0, "GetHistory of a batch-stepped world: code %d", code);
        uint64_t seq = 0;
        double t = 0;
        uint8_t d[32];
        for (size_t k = 0; h && k < h->n_frames; k++) {
            if (!frame_state(h->frames[k].data, h->frames[k].len, &seq, &t, d)) {
                bad++;
                continue;
            }
            bad += seq != k + 1;
            if (!limited)
                bad += t != times[1][k + 1] || memcmp(d, digests[1][k + 1], 32);
        }
        if (!limited)
            CHECK(h && h->n_frames == ROUNDS && !bad,
                  "its history: %zu frames, each the state a batch replied (%d differ)",
                  h ? h->n_frames : 0, bad);
        else
            CHECK(h && h->n_frames < ROUNDS && !bad && t == times[1][ROUNDS] &&
                      !memcmp(d, digests[1][ROUNDS], 32),
                  "at 20 states per second: %zu frames for %d batches, the last the last "
                  "batch's state",
                  h ? h->n_frames : 0, ROUNDS);
        rsc_free(keep);
        zmq_close(sub);
        free(ep);
        rsc_close(&c);
        CHECK(server_stop(&sp) == 0, "server exits 0");
    }
}

static void bounds_reported_as_dropped(const char *binary)
{
    server_proc_t sp;
    /* the frame bound with no age bound (300 steps beside CPU hogs can take longer than any
     * short one), then the age bound on a server of its own */
    const char *extra[] = {"--stream-max-hz", "1000000", "--no-world", "--history-frames", "100",
                           "--history-seconds", "0", NULL};
    rsc_client_t *c = started_client(&sp, binary, extra);
    if (!c)
        return;
    rsc_error_t err;
    uint64_t id = 0;
    rsc_create_world(c, "diff_drive", NULL, 0, 1, &id, &err);
    Robosim__V1__HelloReply *h = NULL;
    rsc_hello(c, 1, 0, &h, &err);
    CHECK(h && h->history_frames == 100 && h->history_seconds == 0,
          "Hello says the history bound");
    rsc_free(h);
    step(c, id, 300);
    int code;
    Robosim__V1__Response *keep;
    Robosim__V1__GetHistoryReply *r = get_history(c, id, 1, 0, &code, &keep);
    CHECK(r && r->last_seq == 300 && r->first_seq == 201 && r->dropped == 200 &&
              r->n_frames == 100 && !r->more && seq_of(r->frames[0].data, r->frames[0].len) == 201,
          "past --history-frames: 200 reported dropped, frames 201..300 returned");
    rsc_free(keep);
    r = get_history(c, id, 250, 0, &code, &keep);
    CHECK(r && r->dropped == 0 && r->n_frames == 51, "from inside the history: nothing dropped");
    rsc_free(keep);
    rsc_close(&c);
    CHECK(server_stop(&sp) == 0, "server exits 0");

    const char *aging[] = {"--stream-max-hz", "1000000", "--no-world", "--history-frames", "100",
                           "--history-seconds", "1", NULL};
    if (!(c = started_client(&sp, binary, aging)))
        return;
    rsc_create_world(c, "diff_drive", NULL, 0, 1, &id, &err);
    h = NULL;
    rsc_hello(c, 1, 0, &h, &err);
    CHECK(h && h->history_seconds == 1.0, "Hello says the age bound");
    rsc_free(h);
    step(c, id, 300);
    sleep_s(1.3); /* the newest frame is older than 1 s now, however long the steps took */
    r = get_history(c, id, 1, 0, &code, &keep);
    CHECK(r && r->n_frames == 0 && r->dropped == 300 && r->first_seq == 301,
          "older than --history-seconds: all 300 reported dropped");
    rsc_free(keep);
    rsc_close(&c);
    CHECK(server_stop(&sp) == 0, "server exits 0");

    const char *off[] = {"--history-frames", "0", NULL};
    c = started_client(&sp, binary, off);
    if (!c)
        return;
    CHECK(!get_history(c, 1, 1, 0, &code, &keep) && code == CODE(FAILED_PRECONDITION),
          "--history-frames 0: FAILED_PRECONDITION (%d)", code);
    rsc_free(keep);
    rsc_close(&c);
    CHECK(server_stop(&sp) == 0, "server exits 0");
}

/* In-process: a world's history stops growing at history_frames; bytes per frame per kind. */
static void memory_bound(void)
{
    static const char *const presets[] = {"finger", "serial_arm", "parallel_arm", "diff_drive",
                                          "workshop"};
    for (size_t k = 0; k < sizeof presets / sizeof presets[0]; k++) {
        rs_server_config_t cfg;
        rs_server_config_defaults(&cfg);
        cfg.bind = "inproc://history-requests"; /* the stream opens with the sockets */
        cfg.default_preset = presets[k];
        cfg.threads = 1;
        cfg.stream_endpoint = "inproc://history-test";
        cfg.stream_max_hz = 1e6;
        cfg.history_frames = 200;
        rs_server_t *s = inproc_server(&cfg);
        if (!s)
            continue;
        world_slot_t *w = &s->worlds[0];
        size_t n;
        uint8_t *b = packed_step(w, &n);
        size_t full = 0, later = 0;
        int frames = 0;
        for (int i = 0; i < 600; i++) {
            const uint8_t *out;
            size_t outlen;
            struct timespec ts = {0, 2000}; /* past the 1 us rate limit */
            nanosleep(&ts, NULL);
            rs_server_handle(s, b, n, &out, &outlen);
            if (i == 199)
                full = rs_history_bytes(w, &frames, NULL);
        }
        size_t ring = 0;
        later = rs_history_bytes(w, &frames, &ring);
        free(b);
        double per_frame = (double)(later - ring) / frames,
               per_slot = (double)ring / cfg.history_frames;
        CHECK(frames == 200 && w->stream.seq == 600 && later <= full + 64 * 200 && per_slot < 64,
              "%s: history holds 200 of 600 frames and stops growing once full (%zu then %zu "
              "bytes)",
              presets[k], full, later);
        printf("history memory: %-12s %6.0f bytes per frame; %7.0f bytes per world-second at "
               "60 states/s; %5.1f MB per world at the default 3600 frames\n",
               presets[k], per_frame, per_frame * 60, (per_frame + per_slot) * 3600 / 1e6);
        rs_server_destroy(&s);
    }
}

/* The server's account of the histories against its parts: histories.bytes is the sum of the
 * worlds' bytes, within cfg.history_bytes, each world within cfg.history_bytes_per_world. */
static int accounted(const rs_server_t *s, const world_slot_t *w, int n)
{
    size_t sum = 0;
    int within = 1;
    for (int i = 0; i < n; i++) {
        size_t b = rs_history_bytes(&w[i], NULL, NULL);
        within &= b <= s->cfg.history_bytes_per_world;
        sum += b;
    }
    return within && sum == s->histories.bytes && sum <= s->cfg.history_bytes;
}

/* In-process, history.c alone on a made-up clock (rs_history_push and rs_history_held with
 * chosen times, no sockets, so no timing): the eviction and the account.
 *   - the scenario: a quiet world's 50 small frames, then 8 worlds flooding 34 kB
 *     frames past --history-bytes 4M (1M per world): the quiet world keeps all 50 and the
 *     server's account is the worlds' sum; once the quiet frames are older than
 *     --history-seconds, GetHistory's ageing forgets them and the account follows;
 *   - a seeded random run of pushes (small and large frames, seq gaps), ageing reads and
 *     destroyed worlds: after every operation the account is the worlds' sum within the
 *     bounds, and a push never takes a frame from another world holding less than its share,
 *     (history_bytes - the largest frame) / worlds (the largest, which gives up frames, always
 *     holds more). */
static void eviction_fair_and_accounted(void)
{
    enum { K = 9, QUIET = 0 };
    static world_slot_t w[K];
    static uint8_t frame[34 << 10];
    rs_server_config_t cfg;
    inproc_config(&cfg);
    cfg.history_seconds = 60;
    cfg.history_bytes_per_world = 1u << 20;
    cfg.history_bytes = 4u << 20;
    rs_server_t *s = inproc_server(&cfg);
    if (!s)
        return;
    double t = 1000;
    for (uint64_t q = 1; q <= 50; q++, t += 0.01)
        rs_history_push(s, &w[QUIET], q, frame, 199, t);
    int ok = 1;
    for (uint64_t k = 1; k <= 150; k++)
        for (int i = 1; i < K; i++, t += 0.01) /* 12 s of flood */
            rs_history_push(s, &w[i], k, frame, sizeof frame, t), ok &= accounted(s, w, K);
    int quiet_frames = 0;
    rs_history_bytes(&w[QUIET], &quiet_frames, NULL);
    CHECK(ok && quiet_frames == 50 && rs_history_held(s, &w[QUIET], t) == 50 &&
              s->histories.bytes > 3u << 20,
          "in-process: the quiet world keeps its 50 frames while 8 worlds flood 34 kB frames "
          "past the 4 MiB bound, the account %zu bytes the worlds' sum at every push",
          s->histories.bytes);
    int aged = rs_history_held(s, &w[QUIET], 1000 + 60.5 + 0.2);
    CHECK(aged == 0 && accounted(s, w, K),
          "in-process: older than --history-seconds 60, the quiet world's frames go when read "
          "(%d left) and the account follows them (%zu bytes)",
          aged, s->histories.bytes);
    for (int i = 0; i < K; i++)
        rs_history_destroy(&w[i].history);
    CHECK(s->histories.bytes == 0 && s->histories.n == 0,
          "in-process: every history destroyed, the account is 0 (%zu)", s->histories.bytes);

    /* the random run, bounds small enough that the server's bound binds often */
    s->cfg.history_frames = 64;
    s->cfg.history_seconds = 5;
    s->cfg.history_bytes_per_world = 48u << 10;
    s->cfg.history_bytes = 160u << 10;
    const size_t big = 8000, share = (s->cfg.history_bytes - big) / K;
    uint64_t seq[K] = {0};
    uint32_t x = 2463534242u; /* xorshift32, seeded */
#define NEXT() (x ^= x << 13, x ^= x >> 17, x ^= x << 5, x)
    int pushes = 0, evicted_small = 0, bad_account = 0, evictions = 0;
    for (int op = 0; op < 15000; op++) {
        int k = (int)(NEXT() % K), r = (int)(NEXT() % 100);
        t += 1e-3 * (double)(NEXT() % 20); /* 10 ms an operation on average: ageing happens */
        if (r < 2) {
            rs_history_destroy(&w[k].history);
            seq[k] = 0;
        } else if (r < 6) {
            rs_history_held(s, &w[k], t);
        } else {
            /* worlds 0-2 publish small frames, the others large ones */
            size_t len = k < 3 ? 50 + NEXT() % 200 : 500 + NEXT() % (big - 500);
            seq[k] += r < 8 ? 2 : 1; /* now and then a frame went missing */
            int before[K];
            size_t held_before = s->histories.bytes;
            for (int j = 0; j < K; j++) {
                int frames = 0;
                size_t b = rs_history_bytes(&w[j], &frames, NULL);
                before[j] = j != k && b < share ? frames : -1;
            }
            rs_history_push(s, &w[k], seq[k], frame, len, t);
            pushes++;
            evictions += held_before + len > s->cfg.history_bytes;
            for (int j = 0; j < K; j++) {
                int frames = 0;
                rs_history_bytes(&w[j], &frames, NULL);
                evicted_small += before[j] >= 0 && frames != before[j];
            }
        }
        bad_account += !accounted(s, w, K);
    }
#undef NEXT
    printf("history eviction: %d pushes, %d past --history-bytes, %d took a frame from a world "
           "under its share, %d operations left the account off its parts\n",
           pushes, evictions, evicted_small, bad_account);
    CHECK(evictions > 1000, "the random run passed the server's bound often (%d pushes)",
          evictions);
    CHECK(evicted_small == 0, "no push took a frame from another world holding less than its "
          "share (%d did)", evicted_small);
    CHECK(bad_account == 0, "the server's account was the worlds' sum, within the bounds, after "
          "every operation (%d were not)", bad_account);
    for (int i = 0; i < K; i++)
        rs_history_destroy(&w[i].history);
    rs_server_destroy(&s);
}

/* A brick bouncing flat and elastically every 20 ms: 250 impacts in a 5 s control step, each an
 * event of the step's State, so each frame is about 34 kB. */
static uint64_t bouncing_brick(rsc_client_t *c)
{
    static const double one[] = {1}, zero[] = {0}, y0[] = {0.1}, g[] = {1000}, dt[] = {5};
    const rsc_param_t p[] = {{"brick", "restitution", one, 1},
                             {"brick", "ground_restitution", one, 1},
                             {"brick", "rest_speed", zero, 1},
                             {"brick", "y0", y0, 1},
                             {"brick", "gravity", g, 1},
                             {"", "control_dt", dt, 1}};
    rsc_error_t err;
    uint64_t id = 0;
    CHECK(rsc_create_world(c, "brick_drop", p, sizeof p / sizeof p[0], 1, &id, &err) == 0,
          "create a bouncing brick: %s", err.message);
    return id;
}

#define BRICKS 8
#define BRICK_STEPS 150 /* unbounded, 8 x 150 frames of 34 kB: 41 MB */
/* RSS a server may keep once the worlds are gone: under ASan the shadow of the freed frames
 * stays resident */
#if defined(__SANITIZE_ADDRESS__)
#define RETURN_SLACK_KB (6 * 1024)
#else
#define RETURN_SLACK_KB (3 * 1024)
#endif

static void bounded_in_bytes(const char *binary)
{
    server_proc_t sp;
    /* no age bound: beside CPU hogs the flood took over a minute under ASan, the quiet world's
     * frames grew older than the default --history-seconds 60 and GetHistory forgot them (as
     * it should: eviction_fair_and_accounted has that case on a made-up clock) */
    const char *extra[] = {"--stream-max-hz", "1000000", "--no-world", "--threads", "1",
                           "--history-bytes-per-world", "1M", "--history-bytes", "4M",
                           "--history-seconds", "0", NULL};
    /* ASan's quarantine would hold every freed frame: measure this server without it */
    char asan[512];
    const char *given = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof asan, "%s%squarantine_size_mb=0:allocator_release_to_os_interval_ms=0",
             given ? given : "", given && given[0] ? ":" : "");
    setenv("ASAN_OPTIONS", asan, 1);
    int started = server_start(&sp, binary, extra) == 0;
    if (given)
        setenv("ASAN_OPTIONS", given, 1);
    else
        unsetenv("ASAN_OPTIONS");
    CHECK(started, "server with --history-bytes-per-world 1M --history-bytes 4M did not start");
    if (!started)
        return;
    rsc_client_t *c = client_of(sp.endpoint, 20000);
    rsc_error_t err;
    Robosim__V1__HelloReply *h = NULL;
    rsc_hello(c, 1, 0, &h, &err);
    CHECK(h && h->history_bytes_per_world == 1u << 20 && h->history_bytes == 4u << 20,
          "Hello says the byte bounds (%llu per world, %llu in all)",
          h ? (unsigned long long)h->history_bytes_per_world : 0ULL,
          h ? (unsigned long long)h->history_bytes : 0ULL);
    rsc_free(h);

    /* a quiet world with small frames, published before the flood */
    uint64_t quiet = 0;
    CHECK(rsc_create_world(c, "finger", NULL, 0, 1, &quiet, &err) == 0, "create: %s",
          err.message);
    step(c, quiet, 50);
    long before = rss_kb(sp.pid);
    uint64_t id[BRICKS];
    double t0 = now();
    for (int i = 0; i < BRICKS; i++)
        id[i] = bouncing_brick(c);
    for (int k = 0; k < BRICK_STEPS; k++)
        for (int i = 0; i < BRICKS; i++)
            step(c, id[i], 1);
    double flood_s = now() - t0;
    long flooded = rss_kb(sp.pid);

    int code;
    Robosim__V1__Response *keep;
    uint64_t sum = 0, server_bytes = 0, largest_frame = 0;
    int ok = 1, same_account = 1;
    for (int i = 0; i < BRICKS; i++) {
        Robosim__V1__GetHistoryReply *r = get_history(c, id[i], 1, 0, &code, &keep);
        CHECK(r != NULL, "GetHistory of brick world %llu: code %d", (unsigned long long)id[i],
              code);
        if (r) {
            size_t held = 0;
            for (size_t f = 0; f < r->n_frames; f++) {
                held += r->frames[f].len;
                if (r->frames[f].len > largest_frame)
                    largest_frame = r->frames[f].len;
            }
            ok &= r->bytes <= 1u << 20 && held <= r->bytes && r->last_seq == BRICK_STEPS &&
                  r->dropped > 0 && r->first_seq == 1 + r->dropped &&
                  r->n_frames == r->last_seq - r->first_seq + 1 && !r->more;
            if (!ok)
                printf("brick world %llu: %llu bytes, frames %llu..%llu, %llu dropped, %zu "
                       "returned\n",
                       (unsigned long long)id[i], (unsigned long long)r->bytes,
                       (unsigned long long)r->first_seq, (unsigned long long)r->last_seq,
                       (unsigned long long)r->dropped, r->n_frames);
            sum += r->bytes;
            same_account &= i == 0 || server_bytes == r->server_bytes;
            server_bytes = r->server_bytes;
        }
        rsc_free(keep);
    }
    CHECK(largest_frame > 30000, "the bouncing brick's frames are large (%llu bytes)",
          (unsigned long long)largest_frame);
    CHECK(ok, "each brick world's history holds at most 1 MiB, its newest frames consecutive, "
              "the older ones reported dropped");
    Robosim__V1__GetHistoryReply *r = get_history(c, quiet, 1, 0, &code, &keep);
    CHECK(r && r->dropped == 0 && r->n_frames == 50 && r->first_seq == 1,
          "the quiet world keeps all its 50 frames while the bricks flood (%zu, %llu dropped)",
          r ? r->n_frames : 0, r ? (unsigned long long)r->dropped : 0ULL);
    if (r) {
        sum += r->bytes;
        same_account &= server_bytes == r->server_bytes;
    }
    rsc_free(keep);
    CHECK(same_account, "every GetHistory between the flood and the check read the same "
          "account (nothing published or aged in between)");
    CHECK(server_bytes <= 4u << 20 && server_bytes == sum && sum > 3u << 20,
          "all histories hold %llu bytes, within --history-bytes 4 MiB (the worlds' sum %llu)",
          (unsigned long long)server_bytes, (unsigned long long)sum);
    CHECK(before > 0 && flooded - before < 16 * 1024,
          "the server grew by %ld kB while %d worlds published %d frames of %llu bytes (bound "
          "4 MiB of history; 16 MiB allowed)",
          flooded - before, BRICKS, BRICKS * BRICK_STEPS, (unsigned long long)largest_frame);

    /* destroyed worlds give their history back, to the server's count and to the system */
    for (int i = 0; i < BRICKS; i++)
        CHECK(rsc_destroy_world(c, id[i], &err) == 0, "destroy: %s", err.message);
    sleep_s(0.2);
    long after = rss_kb(sp.pid);
    r = get_history(c, quiet, 1, 0, &code, &keep);
    CHECK(r && r->server_bytes == r->bytes && r->n_frames == 50,
          "after the bricks went, the server's histories hold only the quiet world's %llu bytes "
          "(%llu)",
          r ? (unsigned long long)r->bytes : 0ULL, r ? (unsigned long long)r->server_bytes : 0ULL);
    rsc_free(keep);
    CHECK(after - before < RETURN_SLACK_KB,
          "destroying the worlds returned the memory: %ld kB before them, %ld kB with them, "
          "%ld kB after (%d kB allowed)",
          before, flooded, after, RETURN_SLACK_KB);
    printf("history bytes: %d bouncing bricks, %d frames of %llu bytes in %.1f s: server RSS "
           "%ld kB before, %ld kB flooded (history %llu bytes), %ld kB after destroying them\n",
           BRICKS, BRICKS * BRICK_STEPS, (unsigned long long)largest_frame, flood_s, before,
           flooded, (unsigned long long)server_bytes, after);
    rsc_close(&c);
    CHECK(server_stop(&sp) == 0, "server exits 0");
}

/* What a client can set cannot lift the server's --stream-max-hz. */
static void rate_capped(const char *binary)
{
    server_proc_t sp;
    const char *extra[] = {"--stream-max-hz", "100", "--no-world", NULL};
    rsc_client_t *c = started_client(&sp, binary, extra);
    if (!c)
        return;
    rsc_error_t err;
    uint64_t id = 0;
    double fast[] = {1e6}, slower[] = {50}, same[] = {0};
    rsc_param_t p = {"", "stream_max_hz", fast, 1};
    int rc = rsc_create_world(c, "finger", &p, 1, 1, &id, &err);
    CHECK(rc != 0 && err.code == CODE(OUT_OF_RANGE) && strstr(err.message, "--stream-max-hz") &&
              strstr(err.message, "at most 100"),
          "CreateWorld with stream_max_hz 1e6 on a 100 Hz server: OUT_OF_RANGE saying the most "
          "allowed (%d: %s)",
          err.code, rc ? err.message : "accepted");
    CHECK(rsc_create_world(c, "finger", NULL, 0, 1, &id, &err) == 0, "create: %s", err.message);
    rc = rsc_set_params(c, id, &p, 1, &err);
    CHECK(rc != 0 && err.code == CODE(OUT_OF_RANGE) && strstr(err.message, "at most 100"),
          "SetParams stream_max_hz 1e6: OUT_OF_RANGE (%d: %s)", err.code,
          rc ? err.message : "accepted");
    p.values = slower;
    CHECK(rsc_set_params(c, id, &p, 1, &err) == 0, "a lower rate is fine: %s", err.message);
    p.values = same;
    CHECK(rsc_set_params(c, id, &p, 1, &err) == 0, "0 (the server's) is fine: %s", err.message);
    rsc_close(&c);
    CHECK(server_stop(&sp) == 0, "server exits 0");

    /* in-process, a world whose parameter says more than the server (a snapshot's) is held
     * to the server's rate: 100 quick steps publish a few frames, not 100 */
    rs_server_config_t cfg;
    rs_server_config_defaults(&cfg);
    cfg.bind = "inproc://rate-requests";
    cfg.default_preset = "finger";
    cfg.threads = 1;
    cfg.stream_endpoint = "inproc://rate-stream";
    cfg.stream_max_hz = 2;
    rs_server_t *s = inproc_server(&cfg);
    if (!s)
        return;
    world_slot_t *w = &s->worlds[0];
    rs_param_t wp = {"", "stream_max_hz", fast, 1};
    rs_status_t st;
    CHECK(rs_world_set_params(w->world, &wp, 1, &st) == 0, "set the world's rate: %s",
          st.message);
    size_t n;
    uint8_t *b = packed_step(w, &n);
    for (int i = 0; i < 100; i++) {
        const uint8_t *out;
        size_t outlen;
        rs_server_handle(s, b, n, &out, &outlen);
    }
    free(b);
    CHECK(w->stream.seq >= 1 && w->stream.seq <= 3,
          "a world asking 1e6 states per second on a 2 per second server published %llu of "
          "100 quick steps",
          (unsigned long long)w->stream.seq);
    rs_server_destroy(&s);
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    zctx = zmq_ctx_new();
    memory_bound();
    eviction_fair_and_accounted();
    late_joiner_sees_everything(binary);
    arrays_batches_published(binary);
    bounds_reported_as_dropped(binary);
    bounded_in_bytes(binary);
    rate_capped(binary);
    zmq_ctx_term(zctx);
    return rs_test_done("test_history");
}
