/* A bump allocator for building one reply: everything is released at once by arena_reset.
 * Chunks are kept between requests, so a steady request stream does not allocate. */
#ifndef RS_ARENA_H
#define RS_ARENA_H

#include <stddef.h>

typedef struct arena_chunk arena_chunk_t;

typedef struct arena {
    arena_chunk_t *head;  /* chunk being filled */
    arena_chunk_t *first;
    size_t chunk_size;
} arena_t;

/* Prepare an empty arena whose chunks hold at least chunk_size bytes. */
void arena_init(arena_t *a, size_t chunk_size);

/* `size` zeroed bytes, aligned for any type; NULL when out of memory. */
void *arena_alloc(arena_t *a, size_t size);

/* Copy of a string in the arena (NULL if out of memory). */
char *arena_strdup(arena_t *a, const char *s);

/* Forget everything allocated; keep the chunks. */
void arena_reset(arena_t *a);

/* Bytes held in chunks (used or not). */
size_t arena_capacity(const arena_t *a);

/* Free every chunk. */
void arena_free(arena_t *a);

#endif
