/* libFuzzer harness over the core's snapshot reader: byte 0 picks a world (every preset, then
 * every task; its high bit set: the snapshot's length field and checksum are left as they
 * are, else fixed up so the contents are what the reader judges), the rest is a snapshot. A snapshot the reader accepts is forked into a new world
 * that then takes one control step, so values that pass validation but break the physics show
 * up too. */
#include "fuzz_server.h"
#include "rs_task.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORLDS 32
static rs_world_t *worlds[MAX_WORLDS];
static int nworlds;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    rs_status_t st;
    for (const char *const *p = rs_preset_names(); *p && nworlds < MAX_WORLDS; p++)
        if (!(worlds[nworlds++] = rs_world_new(*p, NULL, 0, 1, &st)))
            abort();
    for (const char *const *t = rs_task_names(); *t && nworlds < MAX_WORLDS; t++)
        if (!(worlds[nworlds++] = rs_world_new_task(*t, NULL, NULL, 0, 1, &st)))
            abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    rs_status_t st;
    rs_status_clear(&st);
    const rs_world_t *src = worlds[(data[0] & 0x7f) % nworlds];
    uint8_t *snap = malloc(size);
    memcpy(snap, data + 1, size - 1);
    if (!(data[0] & 0x80))
        fuzz_fix_snapshot(snap, size - 1);
    rs_world_t *w = rs_world_fork(src, snap, size - 1, &st);
    free(snap);
    if (w) {
        rs_step(&w->model, w->data, 1, &st);
        rs_world_destroy(&w);
    } else if (st.code == 0 || st.code == RS_EINTERNAL) {
        abort(); /* a refusal must say why, with a specific code */
    }
    return 0;
}
