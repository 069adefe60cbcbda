/* Every order of the operations that replace what a world holds: its history and kept
 * snapshots (and the stepping thread's rollback boundary, saved from it) must never outlive the
 * model or world they were made for.
 *   - the sequence a client found: create a finger (control_dt 0.0123, a model no other world
 *     shares), step (saves the rollback copy), set-params (a new model; the old one freed),
 *     a large refused specification, step, destroy: the server answers the next request;
 *   - every sequence of four operations after a create (9^4 of them), each world checked by
 *     the field table (rs_data_check) after every sequence, every reply decoded and none
 *     INTERNAL; the server's shutdown frees what is left.
 * Under AddressSanitizer a use after free aborts the test. */
#include "fuzz/op_sequence.h"
#include "rs_data.h"
#include "rs_log.h"
#include "rs_test.h"

#include <time.h>

/* Every world of the server validates under its model. */
static int worlds_valid(const seq_ctx_t *c, char *why, size_t cap)
{
    for (int i = 0; i < c->s->nworlds; i++) {
        const rs_world_t *w = c->s->worlds[i].world;
        rs_status_t st;
        rs_status_clear(&st);
        if (rs_data_check(w->model, w->data, &st) < 0) {
            snprintf(why, cap, "world %llu: %s", (unsigned long long)c->s->worlds[i].id,
                     st.message);
            return 0;
        }
    }
    return 1;
}

static int hello_answers(seq_ctx_t *c)
{
    Robosim__V1__Request rq = ROBOSIM__V1__REQUEST__INIT;
    Robosim__V1__Hello h = ROBOSIM__V1__HELLO__INIT;
    rq.op_case = ROBOSIM__V1__REQUEST__OP_HELLO;
    rq.hello = &h;
    h.major = 1;
    Robosim__V1__Response *rp = seq_send(c, &rq, 0);
    int ok = rp && rp->result_case == ROBOSIM__V1__RESPONSE__RESULT_HELLO;
    if (rp)
        robosim__v1__response__free_unpacked(rp, NULL);
    return ok;
}

static void reported_sequence(void)
{
    seq_ctx_t c;
    CHECK(seq_init(&c) == 0, "server");
    seq_apply(&c, SEQ_CREATE, 0);          /* finger, control_dt 0.0123 */
    seq_apply(&c, SEQ_STEP, 0);            /* protected: the rollback copy is made */
    seq_apply(&c, SEQ_SET_PARAMS, 1 << 4); /* control_dt 0.02: the 0.0123 model is freed */
    seq_apply(&c, SEQ_LOAD_SPEC, 0);       /* large strings, refused: the heap reused */
    seq_apply(&c, SEQ_STEP, 0); /* the boundary saved again, for the new model */
    CHECK(c.s->nworlds == 1 && c.s->worlds[0].world->model->control_dt == 0.02 &&
              c.s->worlds[0].world->data->step_count == 2,
          "stepped on under the new model (%d worlds)", c.s->nworlds);
    seq_apply(&c, SEQ_DESTROY, 0);
    CHECK(c.s->nworlds == 0, "destroyed");
    CHECK(hello_answers(&c), "the server answers after the sequence");
    CHECK(c.internal == 0, "no INTERNAL reply (%d)", c.internal);
    /* the same up to the destroy, then the shutdown path */
    seq_fini(&c);
    CHECK(seq_init(&c) == 0, "server");
    seq_apply(&c, SEQ_CREATE, 0);
    seq_apply(&c, SEQ_STEP, 0);
    seq_apply(&c, SEQ_SET_PARAMS, 1 << 4);
    seq_apply(&c, SEQ_LOAD_SPEC, 0);
    seq_fini(&c);
}

static void every_order(void)
{
    /* the operations after a create; arguments vary with the position so worlds, presets and
     * control steps differ between sequences of the same operations */
    static const uint8_t ops[] = {SEQ_STEP,     SEQ_SET_PARAMS, SEQ_LOAD_SPEC,
                                  SEQ_FORK,     SEQ_SNAPSHOT,   SEQ_SET_STATE,
                                  SEQ_RESET,    SEQ_DESTROY,    SEQ_WRENCH};
    const int nops = (int)(sizeof ops / sizeof ops[0]), len = 4;
    int total = 1;
    for (int k = 0; k < len; k++)
        total *= nops;
    int bad = 0, internal = 0, ran = 0;
    clock_t t0 = clock();
    for (int code = 0; code < total; code++) {
        seq_ctx_t c;
        if (seq_init(&c) < 0) {
            bad++;
            break;
        }
        /* two worlds: the finger the sequence acts on first, and a second model beside it
         * (every fourth sequence a mobile manipulator, which takes specifications) */
        seq_apply(&c, SEQ_CREATE, 0);
        seq_apply(&c, SEQ_CREATE, (uint8_t)(code % 4 == 0 ? 3 : 1));
        int x = code;
        char trace[128];
        size_t tn = 0;
        for (int k = 0; k < len; k++, x /= nops) {
            uint8_t op = ops[x % nops], arg = (uint8_t)((k * 16 + code) & 0x3f);
            if (k >= 2)
                arg &= 0x30; /* later operations on the first world left */
            tn += (size_t)snprintf(trace + tn, sizeof trace - tn, "%d/%d ", op, arg);
            seq_apply(&c, op, arg);
        }
        char why[512];
        if (!worlds_valid(&c, why, sizeof why)) {
            if (bad++ < 5)
                fprintf(stderr, "sequence %s: %s\n", trace, why);
        }
        if (!hello_answers(&c) && bad++ < 5)
            fprintf(stderr, "sequence %s: no Hello after it\n", trace);
        internal += c.internal;
        seq_fini(&c);
        ran++;
    }
    printf("%d sequences of %d operations in %.1f s CPU\n", ran, len,
           (double)(clock() - t0) / CLOCKS_PER_SEC);
    CHECK(ran == total, "every sequence ran (%d of %d)", ran, total);
    CHECK(bad == 0, "%d sequences left a world that does not validate or a silent server", bad);
    CHECK(internal == 0, "%d INTERNAL replies", internal);
}

int main(void)
{
    rs_log_set_level(RS_LOG_ERROR);
    reported_sequence();
    every_order();
    return rs_test_done("test_world_lifetimes");
}
