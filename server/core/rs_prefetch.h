/* Prefetching: a hint to the caches, changing nothing (the worlds' stepping in turn,
 * rs_world_prefetch_stage; the history's rings). */
#ifndef RS_PREFETCH_H
#define RS_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

/* A hint, changing nothing: start loading the cache lines of [p, p + bytes), for reading or
 * (write 1) for writing. */
static inline void rs_prefetch_range(const void *p, size_t bytes, int write)
{
    const char *q = (const char *)((uintptr_t)p & ~(uintptr_t)63), *end = (const char *)p + bytes;
    for (; q < end; q += 64) {
        if (write)
            __builtin_prefetch(q, 1);
        else
            __builtin_prefetch(q, 0);
    }
}

#endif
