/* libFuzzer harness over sequences of world operations (op_sequence.h): each input is pairs of
 * bytes (operation, argument), at most FUZZ_SEQUENCE_MAX pairs, run in turn on a fresh server
 * through rs_server_handle. Finds what a single mutated request cannot: a pointer that outlives
 * the model or world it was made for, in any order of create, step, set-params, specification,
 * fork, snapshot, set-state, reset, wrench and destroy. Every reply must decode, none INTERNAL,
 * and every world left must validate under its model. */
#include "op_sequence.h"
#include "rs_data.h"
#include "rs_log.h"

#define FUZZ_SEQUENCE_MAX 24

static seq_ctx_t proto; /* the documents, made once */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rs_log_set_level(RS_LOG_ERROR);
    if (seq_init(&proto) < 0)
        abort();
    rs_server_destroy(&proto.s);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    seq_ctx_t c = proto;
    c.snap = NULL;
    c.snap_len = 0;
    c.internal = 0;
    if (!(c.s = seq_server_new()))
        abort();
    rs_status_t st;
    rs_status_clear(&st);
    for (size_t i = 0; i + 1 < size && i / 2 < FUZZ_SEQUENCE_MAX; i += 2)
        seq_apply(&c, data[i], data[i + 1]);
    if (c.internal)
        abort(); /* an INTERNAL reply or one that did not decode */
    for (int i = 0; i < c.s->nworlds; i++) {
        const rs_world_t *w = c.s->worlds[i].world;
        if (rs_data_check(w->model, w->data, &st) < 0) {
            fprintf(stderr, "world %llu does not validate: %s\n",
                    (unsigned long long)c.s->worlds[i].id, st.message);
            abort();
        }
    }
    rs_server_destroy(&c.s);
    free(c.snap);
    return 0;
}
