/* The observer stream's recent past (history.c owns it): the server's account of every world's
 * history (rs_server_t.histories) and each world's own (world_slot_t.history, opaque). The
 * history's functions are declared in server_internal.h. */
#ifndef RS_HISTORY_H
#define RS_HISTORY_H

#include <stddef.h>

typedef struct rs_history rs_history_t;

/* One entry of the heap by bytes: the history and a copy of its bytes, so that the heap's
 * comparisons read the heap's array only, not every history on the path. */
typedef struct rs_history_entry {
    size_t bytes;
    rs_history_t *h;
} rs_history_entry_t;

typedef struct rs_histories {
    size_t bytes;                  /* what all worlds' histories hold ... */
    size_t peak;                   /* ... and held at most since the heap was last trimmed */
    rs_history_entry_t *by_bytes;  /* every world's history, a max-heap by bytes held (the
                                      largest gives up frames for cfg.history_bytes) */
    int n, cap;
} rs_histories_t;

#endif
