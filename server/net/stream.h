/* The observer stream's state (stream.c owns it): the server's (rs_server_t.stream) and each
 * world's (world_slot_t.stream). The stream's functions are declared in server_internal.h. */
#ifndef RS_STREAM_H
#define RS_STREAM_H

#include <stdint.h>

typedef struct rs_stream {
    void *xpub;             /* the PUB side (an XPUB, to see subscriptions), or NULL */
    char **subs;            /* topic prefixes someone subscribes to */
    int nsubs, capsubs;
    int subs_overflow;      /* too many prefixes to track: every world counts as watched */
    uint64_t sub_gen;       /* bumped when the prefixes change (starts at 1) */
    uint64_t subs_read_at;  /* s->requests when the subscription messages were last read */
    double next_due;        /* earliest time a held-back state is due, or INFINITY */
    uint64_t frames_sent, frames_dropped;
} rs_stream_t;

typedef struct rs_stream_slot {
    uint64_t seq;         /* frames published for this world (State.seq) */
    double last;          /* rs_monotonic() time of the last one */
    int pending;          /* a state was held back by the rate limit */
    int watched;          /* someone subscribes to the world's topic ... */
    uint64_t watched_gen; /* ... as of this subscription generation */
} rs_stream_slot_t;

/* The clocks a batch slice's frames go by, read once for the slice: the rate limit's
 * (rs_monotonic()) and the frames' wall_time (rs_wall_clock()). */
typedef struct rs_stream_clock {
    double now, wall;
} rs_stream_clock_t;

#endif
