/* libFuzzer harness over randomize ranges (CreateWorld.randomize, Reset.randomize): byte 0
 * picks a world (a preset's or a task's, fuzz_lang.h), the rest is up to FUZZ_MAX_ITEMS
 * lines "item dist a b" (numbers as strtod reads them, missing ones 0), the distributions set
 * on a fresh copy of the world (each item resolved, its range checked against the parameter's
 * and the model's, and the task's); accepted ones are drawn by two resets and the world takes
 * a control step under a compute budget (RANDOMIZE_BUDGET_US). A refusal must give a specific
 * code. */
#include "fuzz_lang.h"
#include "rs_randomize.h"
#include "rs_snapshot.h"

#include <stdint.h>
#include <stdio.h>

#define FUZZ_MAX_ITEMS 64
/* The step here only checks that drawn parameters do not break a world; most of this
 * harness's inputs are a mobile manipulator's, whose control step with parameters drawn near
 * their bounds runs into any budget (at 20 ms: about 200 inputs a second). */
#define RANDOMIZE_BUDGET_US 5000

static rs_world_t *worlds[FUZZ_MAX_WORLDS];
static int nworlds;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_budget_init();
    nworlds = fuzz_lang_worlds(worlds, 1);
    return 0;
}

/* The next space- or tab-separated word of the line at *p (NUL-terminated there); "" at its
 * end. */
static char *word(char **p)
{
    char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    char *start = s;
    while (*s && *s != ' ' && *s != '\t')
        s++;
    if (*s)
        *s++ = 0;
    *p = s;
    return start;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    rs_randomize_item_t items[FUZZ_MAX_ITEMS];
    size_t n = 0;
    for (char *line = text, *next; line && n < FUZZ_MAX_ITEMS; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        char *p = line;
        items[n].item = word(&p);
        items[n].dist = word(&p);
        items[n].a = strtod(word(&p), NULL);
        items[n].b = strtod(word(&p), NULL);
        n++;
    }
    rs_status_t st;
    rs_status_clear(&st);
    rs_world_t *w = rs_world_fork(worlds[data[0] % nworlds], NULL, 0, &st);
    if (!w)
        abort();
    if (rs_world_set_randomize(w, items, n, &st) < 0) {
        fuzz_check_refusal(&st);
    } else {
        fuzz_budget_on(w, RANDOMIZE_BUDGET_US);
        for (uint64_t seed = 1; seed <= 2; seed++) {
            rs_status_clear(&st);
            if (rs_world_reset(w, seed, &st) < 0)
                fuzz_check_refusal(&st);
        }
        rs_status_clear(&st);
        int rc;
        if (w->task) {
            double action[RS_TASK_MAX_ACT];
            fuzz_action(w->task, (unsigned)size, action);
            rc = rs_world_task_step(w, action, (size_t)w->task->nact, 1, &st);
        } else {
            rc = rs_step(w->model, w->data, 1, &st);
        }
        if (rc < 0)
            fuzz_check_refusal(&st);
        fuzz_budget_off(w);
    }
    rs_world_destroy(&w);
    free(text);
    return 0;
}
