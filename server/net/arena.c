#include "arena.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

struct arena_chunk {
    arena_chunk_t *next;
    size_t size, used;
    alignas(max_align_t) unsigned char mem[];
};

void arena_init(arena_t *a, size_t chunk_size)
{
    a->head = a->first = NULL;
    a->chunk_size = chunk_size;
}

void *arena_alloc(arena_t *a, size_t size)
{
    size = (size + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
    arena_chunk_t *c = a->head;
    while (c && c->used + size > c->size)
        c = c->next; /* a later, already allocated chunk may be free */
    if (!c) {
        size_t cap = size > a->chunk_size ? size : a->chunk_size;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->size = cap;
        c->used = 0;
        c->next = NULL;
        if (a->head) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            a->first = c;
        }
    }
    a->head = c;
    void *p = c->mem + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

char *arena_strdup(arena_t *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void arena_reset(arena_t *a)
{
    for (arena_chunk_t *c = a->first; c; c = c->next)
        c->used = 0;
    a->head = a->first;
}

size_t arena_capacity(const arena_t *a)
{
    size_t n = 0;
    for (const arena_chunk_t *c = a->first; c; c = c->next)
        n += c->size;
    return n;
}

void arena_free(arena_t *a)
{
    arena_chunk_t *c = a->first;
    while (c) {
        arena_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    a->head = a->first = NULL;
}
