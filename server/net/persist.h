/* --state-dir's per-world state (persist.c owns it; world_slot_t.ckpt). The state dir's
 * functions are declared in server_internal.h. */
#ifndef RS_PERSIST_H
#define RS_PERSIST_H

#include <stdint.h>

typedef struct rs_persist_slot {
    uint64_t mark; /* checksum of the file the last checkpoint wrote (0: not written) */
    int clean;     /* nothing changed since the last checkpoint wrote it (cleared by every
                      change: tokens, lease, steps) */
} rs_persist_slot_t;

#endif
