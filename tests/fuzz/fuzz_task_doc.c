/* libFuzzer harness over task documents and their expressions: each input is a document,
 * parsed (JSON, the items, the expressions compiled, the work bounds); one that parses runs as
 * a world (its preset, its parameters, the first episode's start with its draws and
 * rejection sampling), takes three control steps with an action at its bounds or middle,
 * shows its view and starts a second episode, under a compute budget; then everything is
 * freed. A refusal must give a specific code. */
#include "fuzz_lang.h"
#include "rs_task_doc.h"

#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_budget_init();
    rs_task_names(); /* the built-in families parsed once, for "extends" */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rs_status_t st;
    rs_status_clear(&st);
    rs_task_t *t = rs_task_doc_parse((const char *)data, size, &st);
    if (!t) {
        fuzz_check_refusal(&st);
        return 0;
    }
    rs_world_t *w = rs_world_new_with_task(t, NULL, NULL, 0, size, &st);
    if (!w) {
        fuzz_check_refusal(&st);
        rs_task_doc_destroy(&t);
        return 0;
    }
    double action[RS_TASK_MAX_ACT];
    fuzz_budget_on(w, FUZZ_BUDGET_US);
    for (unsigned k = 0; k < 3; k++) {
        fuzz_action(t, (unsigned)size + k, action);
        rs_status_clear(&st);
        if (rs_world_task_step(w, action, (size_t)t->nact, 1, &st) < 0) {
            fuzz_check_refusal(&st);
            break;
        }
    }
    rs_task_view_t v;
    if (rs_world_task_view(w, &v, &st) < 0)
        abort(); /* a task world always has a view */
    rs_status_clear(&st);
    if (rs_world_reset(w, 2, &st) < 0)
        fuzz_check_refusal(&st);
    fuzz_budget_off(w);
    rs_world_destroy(&w);
    rs_task_doc_destroy(&t);
    return 0;
}
