/* The observer stream's per-world state (stream.c owns it; world_slot_t.stream). The stream's
 * functions are declared in server_internal.h. */
#ifndef RS_STREAM_H
#define RS_STREAM_H

#include <stdint.h>

typedef struct rs_stream_slot {
    uint64_t seq;         /* frames published for this world (State.seq) */
    double last;          /* rs_monotonic() time of the last one */
    int pending;          /* a state was held back by the rate limit */
    int watched;          /* someone subscribes to the world's topic ... */
    uint64_t watched_gen; /* ... as of this subscription generation */
} rs_stream_slot_t;

#endif
