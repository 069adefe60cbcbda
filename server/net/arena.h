/* A bump allocator for building one reply: everything is released at once by rs_arena_reset.
 * Chunks are kept between requests, so a steady request stream does not allocate. */
#ifndef RS_ARENA_H
#define RS_ARENA_H

#include <stddef.h>

typedef struct rs_arena_chunk rs_arena_chunk_t;

typedef struct rs_arena {
    rs_arena_chunk_t *head;  /* chunk being filled */
    rs_arena_chunk_t *first;
    size_t chunk_size;
} rs_arena_t;

/* Prepare an empty arena whose chunks hold at least chunk_size bytes. */
void rs_arena_init(rs_arena_t *a, size_t chunk_size);

/* `size` zeroed bytes, aligned for any type; NULL when out of memory. */
void *rs_arena_alloc(rs_arena_t *a, size_t size);

/* Copy of a string in the arena (NULL if out of memory). */
char *rs_arena_strdup(rs_arena_t *a, const char *s);

/* Forget everything allocated; keep the chunks. */
void rs_arena_reset(rs_arena_t *a);

/* Bytes held in chunks (used or not). */
size_t rs_arena_capacity(const rs_arena_t *a);

/* Free every chunk. */
void rs_arena_free(rs_arena_t *a);

#endif
