#include "arena.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAP_AT (1u << 20) /* chunks this large are mapped: freeing them unmaps at once */

struct rs_arena_chunk {
    rs_arena_chunk_t *next;
    size_t size, used;
    int mapped;
    alignas(max_align_t) unsigned char mem[];
};

static rs_arena_chunk_t *chunk_new(size_t cap)
{
    size_t bytes = sizeof(rs_arena_chunk_t) + cap;
    rs_arena_chunk_t *c;
    int mapped = bytes >= MAP_AT;
    if (mapped) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        c = p == MAP_FAILED ? NULL : p;
    } else {
        c = malloc(bytes);
    }
    if (c) {
        c->size = cap;
        c->used = 0;
        c->next = NULL;
        c->mapped = mapped;
    }
    return c;
}

static void chunk_free(rs_arena_chunk_t *c)
{
    if (c->mapped)
        munmap(c, sizeof *c + c->size);
    else
        free(c);
}

void rs_arena_init(rs_arena_t *a, size_t chunk_size)
{
    a->head = a->first = NULL;
    a->chunk_size = chunk_size;
}

void *rs_arena_alloc(rs_arena_t *a, size_t size)
{
    size = (size + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
    rs_arena_chunk_t *c = a->head;
    while (c && c->used + size > c->size)
        c = c->next; /* a later, already allocated chunk may be free */
    if (!c) {
        /* as large as the arena so far: a request that needs much takes few chunks */
        size_t cap = size > a->chunk_size ? size : a->chunk_size, held = rs_arena_capacity(a);
        if (held > cap)
            cap = held;
        if (!(c = chunk_new(cap)))
            return NULL;
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

char *rs_arena_strdup(rs_arena_t *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = rs_arena_alloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void rs_arena_reset(rs_arena_t *a)
{
    for (rs_arena_chunk_t *c = a->first; c; c = c->next)
        c->used = 0;
    a->head = a->first;
}

size_t rs_arena_capacity(const rs_arena_t *a)
{
    size_t n = 0;
    for (const rs_arena_chunk_t *c = a->first; c; c = c->next)
        n += c->size;
    return n;
}

void rs_arena_free(rs_arena_t *a)
{
    rs_arena_chunk_t *c = a->first;
    while (c) {
        rs_arena_chunk_t *next = c->next;
        chunk_free(c);
        c = next;
    }
    a->head = a->first = NULL;
}
