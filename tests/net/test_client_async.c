/* The C client's pipelined batches (rsc_batch_send / rsc_batch_recv) through the real server:
 * several StepBatch.arrays requests in flight on one connection give, world by world, the same
 * bits as the synchronous rsc_step_arrays on twin worlds with the same inputs (state digests,
 * state rows, task observations and rewards); each request's rows land in the arrays named at
 * its send, whichever order the server answers in (a long batch sent first is answered after
 * short ones sent behind it); a request the server refuses, or whose rows do not fit, is
 * reported for that request alone; a synchronous call made meanwhile leaves the batches' answers
 * to rsc_batch_recv; forgetting or closing with requests in flight frees everything (the ASan
 * build's leak check). */
#include "rs_test.h"
#include "server_proc.h"
#include "timing.h"

#define CODE(name) ROBOSIM__V1__ERROR_CODE__##name
#define NW 48     /* worlds per set */
#define GROUPS 4  /* requests in flight per round: group g holds worlds g, g + 4, g + 8, ... */
#define PER (NW / GROUPS)
#define ROUNDS 5
#define MAXS 64   /* room for a state or sensor row */

/* The finger's force for world i in round r: pushes of varied strength, some pulls. */
static double force(int i, int r)
{
    return (r + i) % 5 == 4 ? -8.0 : 15.0 + 3.0 * (double)((i * 7 + r * 3) % 11);
}

static void create_set(rsc_client_t *c, const char *task, uint64_t seed0, uint64_t *ids)
{
    rsc_error_t err;
    for (int i = 0; i < NW; i++) {
        int rc = task ? rsc_create_task_world(c, task, NULL, NULL, 0, seed0 + (uint64_t)i,
                                              &ids[i], &err)
                      : rsc_create_world(c, "finger", NULL, 0, seed0 + (uint64_t)i, &ids[i], &err);
        CHECK(rc == 0, "create world %d: %s", i, err.message);
    }
}

/* Rows of one set, world by world in set order. */
typedef struct rows {
    int32_t codes[NW];
    double state[NW * MAXS], sensors[NW * MAXS], obs[NW * MAXS];
    double reward[NW], time[NW];
    uint64_t step_count[NW];
    uint8_t terminated[NW], truncated[NW];
    uint8_t digests[NW * 32];
} rows_t;

/* The synchronous reference: set `b` stepped in one rsc_step_arrays with inputs u (commands, or
 * actions for task worlds), its rows into *ref. Returns the reply's widths. */
static void sync_round(rsc_client_t *c, const uint64_t *b, const double *u, int task, rows_t *ref,
                       size_t *ss, size_t *ns, size_t *no)
{
    rsc_error_t err;
    Robosim__V1__BatchArraysReply *a = NULL;
    int rc = rsc_step_arrays(c, b, NW, 1, task ? NULL : u, task ? 0 : NW, task ? u : NULL,
                             task ? NW : 0, &a, &err);
    CHECK(rc == 0 && a && a->n_codes == NW && a->digests.len == NW * 32 &&
              a->state_size <= MAXS && a->sensor_size <= MAXS && a->observation_size <= MAXS,
          "synchronous batch: %d %s", rc, err.message);
    if (rc != 0 || !a)
        exit(rs_test_done("test_client_async"));
    *ss = a->state_size;
    *ns = a->sensor_size;
    *no = a->observation_size;
    for (int i = 0; i < NW; i++) {
        ref->codes[i] = (int32_t)a->codes[i];
        ref->time[i] = a->time[i];
        ref->step_count[i] = a->step_count[i];
        if (task) {
            ref->reward[i] = a->reward[i];
            ref->terminated[i] = a->terminated[i] != 0;
            ref->truncated[i] = a->truncated[i] != 0;
        }
    }
    if (a->n_state)
        memcpy(ref->state, a->state, a->n_state * sizeof(double));
    if (a->n_sensors)
        memcpy(ref->sensors, a->sensors, a->n_sensors * sizeof(double));
    if (a->n_observation)
        memcpy(ref->obs, a->observation, a->n_observation * sizeof(double));
    memcpy(ref->digests, a->digests.data, NW * 32);
    rsc_free(a);
}

/* Set a (pipelined, GROUPS requests in flight each round, group g's rows at rows g * PER ...
 * of its own arrays) against its twin set b (one synchronous batch per round), bit for bit,
 * world by world. `slow` worlds, when given, get a long batch sent first each round: the short
 * ones behind it are answered before it. Long means several of the server's 5 ms slices in any
 * build: 16 worlds x 15,000 control steps (1,500 ran in one slice on a release build with two
 * threads, and the long batch was answered first). */
static void pipelined_equals_sync(rsc_client_t *c, const char *task, uint64_t seed0,
                                  const uint64_t *slow, size_t nslow)
{
    uint64_t a[NW], b[NW];
    create_set(c, task, seed0, a);
    create_set(c, task, seed0, b);
    static rows_t got, ref;
    int mismatched = 0, misplaced = 0, early = 0;
    for (int r = 0; r < ROUNDS; r++) {
        double u[NW], ug[GROUPS][PER];
        uint64_t ids[GROUPS][PER];
        for (int i = 0; i < NW; i++)
            u[i] = task ? 0.25 * (double)((i + r) % 5) - 0.5 : force(i, r);
        size_t ss, ns, no;
        sync_round(c, b, u, task != NULL, &ref, &ss, &ns, &no);
        memset(&got, 0xff, sizeof got); /* rows not written stay NaN-like garbage */
        rsc_error_t err;
        uint64_t tickets[GROUPS], slow_ticket = 0;
        double slow_u[NW];
        int32_t slow_codes[NW];
        rsc_batch_out_t slow_out = {.codes = slow_codes};
        if (nslow) {
            for (size_t i = 0; i < nslow; i++)
                slow_u[i] = 3.0;
            rsc_batch_in_t sin = {.world_ids = slow, .n = nslow, .steps = 15000, .commands = slow_u,
                                  .ncommands = nslow};
            CHECK(rsc_batch_send(c, &sin, &slow_out, &slow_ticket, &err) == 0 && slow_ticket,
                  "send the long batch: %s", err.message);
        }
        for (int g = 0; g < GROUPS; g++) {
            for (int j = 0; j < PER; j++) {
                ids[g][j] = a[g + GROUPS * j];
                ug[g][j] = u[g + GROUPS * j];
            }
            size_t row = (size_t)g * PER;
            rsc_batch_out_t out = {
                .codes = got.codes + row, .state = got.state + row * ss, .state_size = ss,
                .sensors = got.sensors + row * ns, .sensor_size = ns, .time = got.time + row,
                .step_count = got.step_count + row, .digests = got.digests + row * 32};
            if (task) {
                out.observation = got.obs + row * no;
                out.observation_size = no;
                out.reward = got.reward + row;
                out.terminated = got.terminated + row;
                out.truncated = got.truncated + row;
            }
            rsc_batch_in_t in = {.world_ids = ids[g], .n = PER, .steps = 1};
            if (task) {
                in.actions = ug[g];
                in.nactions = PER;
            } else {
                in.commands = ug[g];
                in.ncommands = PER;
            }
            int rc = rsc_batch_send(c, &in, &out, &tickets[g], &err);
            CHECK(rc == 0 && tickets[g] > 0, "send group %d: %d %s", g, rc, err.message);
            /* the inputs are copied at the send: scribbling on them changes nothing */
            memset(ids[g], 0, sizeof ids[g]);
            memset(ug[g], 0, sizeof ug[g]);
        }
        CHECK(rsc_batch_pending(c) == GROUPS + (nslow ? 1u : 0u), "%zu in flight",
              rsc_batch_pending(c));
        int seen[GROUPS] = {0}, slow_seen = 0, order = 0;
        while (rsc_batch_pending(c) > 0) {
            rsc_batch_done_t done;
            int rc = rsc_batch_recv(c, 60000, &done, &err);
            CHECK(rc == 0 && done.nfailed == 0, "recv: %d %s (%s)", rc, err.message, done.message);
            if (rc != 0 && done.ticket == 0)
                break;
            order++;
            if (done.ticket == slow_ticket) {
                slow_seen = order;
                continue;
            }
            int g = 0;
            while (g < GROUPS && tickets[g] != done.ticket)
                g++;
            CHECK(g < GROUPS && !seen[g] && done.n == PER, "ticket %llu unknown or twice",
                  (unsigned long long)done.ticket);
            if (g < GROUPS)
                seen[g] = 1;
        }
        if (nslow) {
            CHECK(slow_seen > 0, "the long batch was answered");
            early += slow_seen > 1;
        }
        /* row g * PER + j of the pipelined arrays is world g + GROUPS * j of the set */
        for (int g = 0; g < GROUPS; g++)
            for (int j = 0; j < PER; j++) {
                int row = g * PER + j, w = g + GROUPS * j;
                misplaced += got.step_count[row] != ref.step_count[w] ||
                             got.time[row] != ref.time[w] || got.codes[row] != 0;
                mismatched += memcmp(got.digests + 32 * row, ref.digests + 32 * w, 32) != 0 ||
                              memcmp(got.state + row * ss, ref.state + w * ss, ss * 8) != 0 ||
                              memcmp(got.sensors + row * ns, ref.sensors + w * ns, ns * 8) != 0;
                if (task)
                    mismatched += memcmp(got.obs + row * no, ref.obs + w * no, no * 8) != 0 ||
                                  memcmp(&got.reward[row], &ref.reward[w], 8) != 0 ||
                                  got.terminated[row] != ref.terminated[w] ||
                                  got.truncated[row] != ref.truncated[w];
            }
    }
    CHECK(mismatched == 0, "%s: %d rows differ from the synchronous twin's", task ? task : "finger",
          mismatched);
    CHECK(misplaced == 0, "%s: %d rows hold another world's step count or time", task ? task : "finger",
          misplaced);
    if (nslow)
        CHECK(early == ROUNDS, "a short batch was answered before the long one sent ahead of it in "
                               "%d of %d rounds",
              early, ROUNDS);
    rsc_error_t err;
    for (int i = 0; i < NW; i++) {
        rsc_destroy_world(c, a[i], &err);
        rsc_destroy_world(c, b[i], &err);
    }
}

/* One request refused, or whose rows do not fit its arrays: that request's error, the others'
 * rows as they should be. Client-side misuse: RSC_EARG with nothing in flight. */
static void errors_stay_with_their_request(rsc_client_t *c)
{
    rsc_error_t err;
    uint64_t w[6];
    for (int i = 0; i < 6; i++)
        CHECK(rsc_create_world(c, "finger", NULL, 0, 7 + (uint64_t)i, &w[i], &err) == 0,
              "create: %s", err.message);
    double f[4] = {10, 12, 14, 16};
    uint64_t step_count[4][3];
    int32_t codes[4][3];
    double state[4][3 * MAXS];
    memset(step_count, 0, sizeof step_count);
    /* 0: fine; 1: three forces for two worlds (refused whole); 2: an unknown world beside a good
     * one (that world's code); 3: rows declared one value too wide */
    rsc_batch_in_t in[4] = {
        {.world_ids = &w[0], .n = 2, .steps = 1, .commands = f, .ncommands = 2},
        {.world_ids = &w[2], .n = 2, .steps = 1, .commands = f, .ncommands = 3},
        {.world_ids = (uint64_t[]){w[4], 999999}, .n = 2, .steps = 1},
        {.world_ids = &w[5], .n = 1, .steps = 1, .commands = f, .ncommands = 1},
    };
    Robosim__V1__BatchArraysReply *probe = NULL;
    CHECK(rsc_step_arrays(c, &w[0], 1, 1, f, 1, NULL, 0, &probe, &err) == 0, "probe: %s",
          err.message);
    size_t ss = probe ? probe->state_size : 0;
    rsc_free(probe);
    uint64_t t[4];
    for (int k = 0; k < 4; k++) {
        rsc_batch_out_t out = {.codes = codes[k], .step_count = step_count[k], .state = state[k],
                               .state_size = k == 3 ? ss + 1 : ss};
        CHECK(rsc_batch_send(c, &in[k], &out, &t[k], &err) == 0, "send %d: %s", k, err.message);
    }
    int rcs[4] = {99, 99, 99, 99};
    size_t nfailed[4] = {0};
    char msg[4][512];
    for (int k = 0; k < 4; k++) {
        rsc_batch_done_t done;
        int rc = rsc_batch_recv(c, 30000, &done, &err);
        int which = 0;
        while (which < 4 && t[which] != done.ticket)
            which++;
        CHECK(which < 4, "recv %d names ticket %llu: %d %s", k, (unsigned long long)done.ticket,
              rc, err.message);
        if (which == 4)
            return;
        rcs[which] = rc;
        nfailed[which] = done.nfailed;
        snprintf(msg[which], sizeof msg[which], "%s", rc ? err.message : done.message);
    }
    CHECK(rcs[0] == 0 && codes[0][0] == 0 && codes[0][1] == 0 && step_count[0][0] == 2 &&
              step_count[0][1] == 1,
          "the good request: %d, codes %d %d, steps %llu %llu", rcs[0], codes[0][0], codes[0][1],
          (unsigned long long)step_count[0][0], (unsigned long long)step_count[0][1]);
    CHECK(rcs[1] == CODE(INVALID_ARGUMENT) && step_count[1][0] == 0,
          "the bad request is refused alone: %d %s", rcs[1], msg[1]);
    CHECK(rcs[2] == 0 && nfailed[2] == 1 && codes[2][0] == 0 &&
              codes[2][1] == CODE(NOT_FOUND) && isnan(state[2][ss]) && strstr(msg[2], "999999"),
          "the unknown world fails alone: %d, %zu failed, codes %d %d, '%s'", rcs[2], nfailed[2],
          codes[2][0], codes[2][1], msg[2]);
    CHECK(rcs[3] == RSC_EARG && codes[3][0] == 0 && strstr(msg[3], "state_size"),
          "rows declared too wide: %d '%s'", rcs[3], msg[3]);
    /* the worlds of the refused request were not stepped; the good ones were */
    Robosim__V1__State *s = NULL;
    CHECK(rsc_get_state(c, w[2], &s, &err) == 0 && s && s->step_count == 0,
          "the refused request stepped nothing");
    rsc_free(s);
    /* a request the server cannot read (over --max-message-size) is answered with id 0: reported
     * with no ticket, nothing ended; the one behind it is answered as usual */
    static double big[20000];
    uint64_t tb, tg;
    int32_t gc[1] = {-1};
    CHECK(rsc_batch_send(c, &(rsc_batch_in_t){.world_ids = w, .n = 1, .commands = big,
                                              .ncommands = 20000},
                         &(rsc_batch_out_t){0}, &tb, &err) == 0 &&
              rsc_batch_send(c, &(rsc_batch_in_t){.world_ids = &w[1], .n = 1},
                             &(rsc_batch_out_t){.codes = gc}, &tg, &err) == 0,
          "send an oversized request and a good one: %s", err.message);
    rsc_batch_done_t unread;
    int rc = rsc_batch_recv(c, 30000, &unread, &err);
    CHECK(rc == CODE(RESOURCE_EXHAUSTED) && unread.ticket == 0 && rsc_batch_pending(c) == 2,
          "the unreadable request: %d, ticket %llu, %zu in flight: %s", rc,
          (unsigned long long)unread.ticket, rsc_batch_pending(c), err.message);
    rc = rsc_batch_recv(c, 30000, &unread, &err);
    CHECK(rc == 0 && unread.ticket == tg && gc[0] == 0, "the good one behind it: %d %s", rc,
          err.message);
    CHECK(rsc_batch_recv(c, 200, &unread, &err) == RSC_ETIMEOUT && unread.ticket == 0 &&
              rsc_batch_pending(c) == 1,
          "the unreadable one is never answered: %s", err.message);
    CHECK(rsc_batch_forget(c) == 1 && rsc_batch_pending(c) == 0, "given up");
    /* misuse */
    rsc_batch_done_t done;
    CHECK(rsc_batch_recv(c, 100, &done, &err) == RSC_EARG && done.ticket == 0 &&
              strstr(err.message, "no batch in flight"),
          "recv with nothing in flight: %s", err.message);
    uint64_t ticket = 1;
    rsc_batch_out_t none = {0};
    CHECK(rsc_batch_send(c, &(rsc_batch_in_t){.world_ids = w, .n = 0}, &none, &ticket, &err) ==
                  RSC_EARG &&
              ticket == 0 && rsc_batch_pending(c) == 0,
          "send of no worlds: %s", err.message);
    CHECK(rsc_batch_send(c, &(rsc_batch_in_t){.world_ids = w, .n = 1, .ncommands = 1}, &none,
                         &ticket, &err) == RSC_EARG,
          "commands announced but NULL: %s", err.message);
    for (int i = 0; i < 6; i++)
        rsc_destroy_world(c, w[i], &err);
}

/* Autoreset in the pipelined request: a flagged world is reset (reseeded) instead of stepped,
 * its rows the new episode's first, as a synchronous Reset with that seed gives them; the
 * unflagged world beside it is stepped. */
static void reset_in_the_request(rsc_client_t *c)
{
    rsc_error_t err;
    uint64_t x[2], twin;
    for (int i = 0; i < 2; i++)
        CHECK(rsc_create_world(c, "finger", NULL, 0, 5, &x[i], &err) == 0, "create: %s",
              err.message);
    CHECK(rsc_create_world(c, "finger", NULL, 0, 5, &twin, &err) == 0, "create: %s", err.message);
    double f[2] = {12, 12};
    uint64_t t, steps[2];
    uint8_t dig[2 * 32];
    rsc_batch_done_t done;
    for (int k = 0; k < 3; k++) {
        uint8_t reset[2] = {k == 2, 0};
        uint64_t seeds[2] = {9, 0};
        rsc_batch_in_t in = {.world_ids = x, .n = 2, .steps = 1, .commands = f, .ncommands = 2,
                             .reset = reset, .reset_seeds = seeds};
        CHECK(rsc_batch_send(c, &in, &(rsc_batch_out_t){.step_count = steps, .digests = dig}, &t,
                             &err) == 0 &&
                  rsc_batch_recv(c, 30000, &done, &err) == 0 && done.ticket == t,
              "autoreset round %d: %s", k, err.message);
    }
    Robosim__V1__State *s = NULL;
    CHECK(rsc_reset(c, twin, 1, 9, &s, &err) == 0 && s && s->digest.len == 32,
          "synchronous reset: %s", err.message);
    CHECK(steps[0] == 0 && steps[1] == 3, "the flagged world reset (%llu steps), the other stepped "
                                          "(%llu)",
          (unsigned long long)steps[0], (unsigned long long)steps[1]);
    CHECK(s && s->digest.len == 32 && memcmp(dig, s->digest.data, 32) == 0,
          "the reset world's digest is a synchronous Reset's with the same seed");
    rsc_free(s);
    for (int i = 0; i < 2; i++)
        rsc_destroy_world(c, x[i], &err);
    rsc_destroy_world(c, twin, &err);
}

/* A synchronous call while batches are in flight reads their answers first: they are kept for
 * rsc_batch_recv. Then forgetting, and closing, with requests in flight. */
static void sync_calls_forget_and_close(const char *endpoint)
{
    rsc_error_t err;
    rsc_client_t *c = client_of(endpoint, 30000);
    uint64_t w[4];
    for (int i = 0; i < 4; i++)
        CHECK(rsc_create_world(c, "finger", NULL, 0, 70 + (uint64_t)i, &w[i], &err) == 0,
              "create: %s", err.message);
    uint64_t counts[2] = {0, 0}, t[2];
    for (int k = 0; k < 2; k++)
        CHECK(rsc_batch_send(c, &(rsc_batch_in_t){.world_ids = &w[k], .n = 1, .steps = 3},
                             &(rsc_batch_out_t){.step_count = &counts[k]}, &t[k], &err) == 0,
              "send: %s", err.message);
    Robosim__V1__State *s = NULL;
    CHECK(rsc_get_state(c, w[2], &s, &err) == 0 && s && s->world_id == w[2],
          "a synchronous call between: %s", err.message);
    rsc_free(s);
    for (int k = 0; k < 2; k++) {
        rsc_batch_done_t done;
        CHECK(rsc_batch_recv(c, 30000, &done, &err) == 0 && (done.ticket == t[0] || done.ticket == t[1]),
              "a kept answer: %s", err.message);
    }
    CHECK(counts[0] == 3 && counts[1] == 3, "both kept answers written: %llu %llu",
          (unsigned long long)counts[0], (unsigned long long)counts[1]);

    /* a timeout of 0 is the client's own: a long batch not answered within it stays in flight */
    uint64_t long_count = 0, tl;
    CHECK(rsc_batch_send(c, &(rsc_batch_in_t){.world_ids = &w[3], .n = 1, .steps = 300000},
                         &(rsc_batch_out_t){.step_count = &long_count}, &tl, &err) == 0,
          "send a long batch: %s", err.message);
    rsc_set_timeout(c, 100);
    double t0 = now();
    rsc_batch_done_t waited;
    int rc = rsc_batch_recv(c, 0, &waited, &err);
    double waited_s = now() - t0;
    rsc_set_timeout(c, 30000);
    CHECK(rc == RSC_ETIMEOUT && waited.ticket == 0 && rsc_batch_pending(c) == 1 &&
              strstr(err.message, "within 100 ms") && waited_s < 2.0,
          "recv with the client's 100 ms timeout: %d after %.2f s: %s", rc, waited_s, err.message);
    CHECK(rsc_batch_forget(c) == 1, "the long batch given up");

    /* forget: the late answers are dropped, the next batch's answer is its own */
    uint64_t late = 0, fresh = 0, tf;
    for (int k = 0; k < 2; k++)
        rsc_batch_send(c, &(rsc_batch_in_t){.world_ids = &w[k], .n = 1, .steps = 200},
                       &(rsc_batch_out_t){.step_count = &late}, &tf, &err);
    CHECK(rsc_batch_forget(c) == 2 && rsc_batch_pending(c) == 0, "forget two");
    CHECK(rsc_batch_send(c, &(rsc_batch_in_t){.world_ids = &w[2], .n = 1, .steps = 1},
                         &(rsc_batch_out_t){.step_count = &fresh}, &tf, &err) == 0,
          "send after forget: %s", err.message);
    rsc_batch_done_t done;
    CHECK(rsc_batch_recv(c, 30000, &done, &err) == 0 && done.ticket == tf && fresh == 1 &&
              late == 0,
          "after forget: ticket %llu (want %llu), steps %llu, forgotten rows %llu: %s",
          (unsigned long long)done.ticket, (unsigned long long)tf, (unsigned long long)fresh,
          (unsigned long long)late, err.message);

    /* close with requests in flight, one of whose answers a synchronous call has kept */
    double slow_f[3] = {5, 5, 5};
    uint64_t sink[3];
    for (int k = 0; k < 3; k++)
        rsc_batch_send(c, &(rsc_batch_in_t){.world_ids = &w[k], .n = 1, .steps = k ? 2000 : 1,
                                            .commands = &slow_f[k], .ncommands = 1},
                       &(rsc_batch_out_t){.step_count = &sink[k]}, &tf, &err);
    rsc_hello(c, RSC_PROTOCOL_MAJOR, RSC_PROTOCOL_MINOR, NULL, &err); /* keeps the first's */
    CHECK(rsc_batch_pending(c) == 3, "three in flight at the close");
    rsc_close(&c);
    CHECK(c == NULL, "closed");
    /* the server goes on serving others */
    rsc_client_t *d = client_of(endpoint, 30000);
    CHECK(rsc_list_worlds(d, NULL, &err) == 0, "server still answers: %s", err.message);
    rsc_close(&d);
}

int main(int argc, char **argv)
{
    const char *binary = server_arg(argc, argv);
    const char *extra[] = {"--threads", "2", "--max-worlds", "400", "--max-worlds-per-client", "0",
                           "--max-worlds-share", "1", "--max-message-size", "65536",
                           "--no-world", NULL};
    server_proc_t sp;
    CHECK(server_start(&sp, binary, extra) == 0, "server starts");
    if (sp.pid <= 0)
        return rs_test_done("test_client_async");
    rsc_client_t *c = client_of(sp.endpoint, 30000);
    rsc_error_t err;
    uint64_t slow[16];
    for (int i = 0; i < 16; i++)
        CHECK(rsc_create_world(c, "finger", NULL, 0, 500 + (uint64_t)i, &slow[i], &err) == 0,
              "create: %s", err.message);
    pipelined_equals_sync(c, NULL, 100, NULL, 0);
    pipelined_equals_sync(c, NULL, 200, slow, 16);
    pipelined_equals_sync(c, "FingerPush-v1", 300, NULL, 0);
    errors_stay_with_their_request(c);
    reset_in_the_request(c);
    rsc_close(&c);
    sync_calls_forget_and_close(sp.endpoint);
    CHECK(server_stop(&sp) == 0, "server exits 0");
    return rs_test_done("test_client_async");
}
