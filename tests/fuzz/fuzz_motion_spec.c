/* libFuzzer harness over motion specifications: byte 0 picks a preset's world (fuzz_lang.h),
 * the rest is a JSON-LD specification loaded on a fresh copy of it (parse, bind to the
 * model's frames, validate); one that loads drives three control steps under a compute
 * budget (its controllers, monitors as integrator guards, motion switches), then is cleared.
 * A refusal must give a specific code. */
#include "fuzz_lang.h"
#include "rs_motion_spec.h"
#include "rs_snapshot.h"

#include <stdint.h>

static rs_world_t *worlds[FUZZ_MAX_WORLDS];
static int nworlds;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_budget_init();
    nworlds = fuzz_lang_worlds(worlds, 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    rs_status_t st;
    rs_status_clear(&st);
    rs_world_t *w = rs_world_fork(worlds[data[0] % nworlds], NULL, 0, &st);
    if (!w)
        abort();
    if (rs_set_motion_spec(w->model, w->data, (const char *)data + 1, size - 1, &st) < 0) {
        fuzz_check_refusal(&st);
    } else {
        fuzz_budget_on(w, FUZZ_BUDGET_US);
        rs_status_clear(&st);
        if (rs_step(w->model, w->data, 3, &st) < 0)
            fuzz_check_refusal(&st);
        fuzz_budget_off(w);
        if (rs_set_motion_spec(w->model, w->data, NULL, 0, &st) < 0)
            abort(); /* clearing cannot fail */
    }
    rs_world_destroy(&w);
    return 0;
}
