/* Observer-stream history: each world keeps the frames it published, bounded in frames, age and
 * bytes, for GetHistory (docs/design.md, "Rationale and measurements"). */
#include "server_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SANITIZE_ADDRESS__)
#define HISTORY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HISTORY_ASAN 1
#endif
#endif
#ifdef HISTORY_ASAN
void __sanitizer_purge_allocator(void); /* its allocator, not glibc's, holds the pages */
#elif defined(__GLIBC__)
#include <malloc.h>
#endif

#define HISTORY_TRIM_BYTES (1u << 20)  /* held this much below the peak: give pages back */
#define HISTORY_RING_MIN 16            /* slots of a new ring */

typedef struct hist_slot {
    uint8_t *buf; /* len bytes, malloc'd for this frame */
    size_t len;
    uint64_t seq;
    double at; /* rs_monotonic() when published */
} hist_slot_t;

struct rs_history {
    hist_slot_t *slots; /* cap slots, a ring (NULL while cap is 0) */
    int cap;
    int head;     /* the oldest frame's slot */
    int count;    /* frames held */
    size_t bytes; /* the frames' bytes plus the ring's: what the bounds count */
    rs_server_t *server; /* whose histories.bytes count this one's too */
    int heap_at;  /* its place in server->histories.by_bytes */
};

/* ---- the histories by bytes held: a binary max-heap, so the largest is found at once however
 * many worlds there are (a scan of every world per frame before) ---- */

static void heap_put(rs_server_t *s, int i, rs_history_entry_t e)
{
    s->histories.by_bytes[i] = e;
    e.h->heap_at = i;
}

/* h's bytes changed: move it up or down to its place (its entry's bytes are updated here). */
static void heap_fix(rs_server_t *s, rs_history_t *h)
{
    rs_history_entry_t *a = s->histories.by_bytes, e = {h->bytes, h};
    int i = h->heap_at, n = s->histories.n;
    while (i > 0 && a[(i - 1) / 2].bytes < e.bytes) {
        heap_put(s, i, a[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        int big = i, l = 2 * i + 1, r = l + 1;
        size_t bb = e.bytes;
        if (l < n && a[l].bytes > bb)
            big = l, bb = a[l].bytes;
        if (r < n && a[r].bytes > bb)
            big = r;
        if (big == i)
            break;
        heap_put(s, i, a[big]);
        i = big;
    }
    heap_put(s, i, e);
}

static int heap_add(rs_server_t *s, rs_history_t *h)
{
    if (s->histories.n == s->histories.cap) {
        int cap = s->histories.cap ? 2 * s->histories.cap : 64;
        rs_history_entry_t *grown = realloc(s->histories.by_bytes, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        s->histories.by_bytes = grown;
        s->histories.cap = cap;
    }
    heap_put(s, s->histories.n++, (rs_history_entry_t){h->bytes, h});
    heap_fix(s, h);
    return 0;
}

static void heap_remove(rs_server_t *s, rs_history_t *h)
{
    rs_history_entry_t last = s->histories.by_bytes[--s->histories.n];
    if (last.h == h)
        return;
    heap_put(s, h->heap_at, last);
    heap_fix(s, last.h);
}

void rs_history_close(rs_server_t *s)
{
    free(s->histories.by_bytes);
    s->histories.by_bytes = NULL;
    s->histories.n = s->histories.cap = 0;
}

/* After frees that are not made room for a new frame: once the histories hold a MiB less than
 * their peak, give the freed heap pages back to the system (glibc keeps them otherwise). */
static void trim_heap(rs_server_t *s)
{
    if (s->histories.peak - s->histories.bytes < HISTORY_TRIM_BYTES)
        return;
#ifdef HISTORY_ASAN
    __sanitizer_purge_allocator();
#elif defined(__GLIBC__)
    malloc_trim(0);
#endif
    s->histories.peak = s->histories.bytes;
}

static void account(rs_history_t *h, size_t add, size_t sub)
{
    rs_server_t *s = h->server;
    h->bytes = h->bytes + add - sub;
    s->histories.bytes = s->histories.bytes + add - sub;
    heap_fix(s, h);
    if (s->histories.bytes > s->histories.peak)
        s->histories.peak = s->histories.bytes;
}

/* Drop the oldest frame. */
static void drop_oldest(rs_history_t *h)
{
    hist_slot_t *sl = &h->slots[h->head];
    account(h, 0, sl->len);
    free(sl->buf);
    sl->buf = NULL;
    sl->len = 0;
    h->head = (h->head + 1) % h->cap;
    h->count--;
}

/* Drop every frame and the ring itself. */
static void drop_all(rs_history_t *h)
{
    while (h->count > 0)
        drop_oldest(h);
    account(h, 0, (size_t)h->cap * sizeof *h->slots);
    free(h->slots);
    h->slots = NULL;
    h->cap = h->head = 0;
}

void rs_history_destroy(rs_history_t **h)
{
    if (!h || !*h)
        return;
    rs_server_t *s = (*h)->server;
    drop_all(*h);
    heap_remove(s, *h);
    free(*h);
    *h = NULL;
    trim_heap(s);
}

/* Forget frames older than the server's history_seconds. */
static void age_out(rs_server_t *s, rs_history_t *h, double now)
{
    double limit = s->cfg.history_seconds;
    int aged = 0;
    for (; h->count > 0 && limit > 0 && now - h->slots[h->head].at > limit; aged++)
        drop_oldest(h);
    if (aged)
        trim_heap(s);
}

/* Grow a full ring (double it, up to cfg.history_frames) if that stays within the world's
 * bound with the new frame of len bytes; 0 when it grew. */
static int grow_ring(const rs_server_t *s, rs_history_t *h, size_t len)
{
    int cap = h->cap ? 2 * h->cap : HISTORY_RING_MIN;
    if (cap > s->cfg.history_frames)
        cap = s->cfg.history_frames;
    size_t more = (size_t)(cap - h->cap) * sizeof *h->slots;
    if (cap <= h->cap || h->bytes + more + len > s->cfg.history_bytes_per_world)
        return -1;
    hist_slot_t *grown = calloc((size_t)cap, sizeof *grown);
    if (!grown)
        return -1;
    for (int i = 0; i < h->count; i++) /* unwrapped: the oldest at 0 */
        grown[i] = h->slots[(h->head + i) % h->cap];
    free(h->slots);
    h->slots = grown;
    h->cap = cap;
    h->head = 0;
    account(h, more, 0);
    return 0;
}

/* The history that gives up its oldest frame for the server's bound: the one holding the most
 * bytes. `mine` (about to take a frame) only while it has frames, so its ring stays. */
static rs_history_t *largest(rs_server_t *s, const rs_history_t *mine)
{
    rs_history_entry_t *a = s->histories.by_bytes;
    rs_history_t *big = s->histories.n ? a[0].h : NULL;
    if (big == mine && mine->count == 0) /* then the next largest: a child of the top */
        big = s->histories.n > 2 && a[2].bytes > a[1].bytes ? a[2].h
              : s->histories.n > 1                          ? a[1].h
                                                            : NULL;
    return big && big->bytes ? big : NULL;
}

/* rs_history_push and rs_history_take: *frame kept as it is (own: the history takes the buffer
 * and clears *frame) or copied; 0 when kept. */
static int push(rs_server_t *s, world_slot_t *w, uint64_t seq, uint8_t **frame, size_t len,
                double now, int own)
{
    if (s->cfg.history_frames <= 0)
        return -1;
    rs_history_t *h = w->history;
    if (!h) {
        if (!(h = calloc(1, sizeof *h)))
            return -1; /* out of memory: GetHistory reports these frames as dropped */
        h->server = s;
        if (heap_add(s, h) < 0) {
            free(h);
            return -1;
        }
        w->history = h;
    }
    age_out(s, h, now);
    if (h->count > 0 && h->slots[(h->head + h->count - 1) % h->cap].seq + 1 != seq)
        drop_all(h); /* a frame went missing: keep the held ones consecutive */
    size_t world_max = s->cfg.history_bytes_per_world, server_max = s->cfg.history_bytes;
    size_t least = len + HISTORY_RING_MIN * sizeof *h->slots; /* a frame alone, in a new ring */
    if (least > world_max || least > server_max) {
        drop_all(h); /* too large to keep: reported as dropped, as are older ones */
        trim_heap(s);
        return -1;
    }
    if (h->count == h->cap && grow_ring(s, h, len) < 0 && h->count > 0)
        drop_oldest(h);
    if (h->cap == 0)
        return -1; /* out of memory for the ring */
    while (h->count > 0 && h->bytes + len > world_max)
        drop_oldest(h);
    while (s->histories.bytes + len > server_max) {
        rs_history_t *big = largest(s, h);
        if (!big)
            break;
        if (big->count > 0)
            drop_oldest(big);
        else
            drop_all(big); /* an empty ring is all it holds */
    }
    if (h->bytes + len > world_max || s->histories.bytes + len > server_max)
        return -1; /* the ring alone leaves no room: reported as dropped */
    uint8_t *buf = own ? *frame : malloc(len ? len : 1);
    if (!buf)
        return -1; /* the next push sees the gap and starts afresh */
    if (own)
        *frame = NULL;
    else
        memcpy(buf, *frame, len);
    hist_slot_t *sl = &h->slots[(h->head + h->count) % h->cap];
    sl->buf = buf;
    sl->len = len;
    sl->seq = seq;
    sl->at = now;
    h->count++;
    account(h, len, 0);
    return 0;
}

void rs_history_push(rs_server_t *s, world_slot_t *w, uint64_t seq, const uint8_t *frame,
                     size_t len, double now)
{
    uint8_t *f = (uint8_t *)frame; /* copied, never written */
    push(s, w, seq, &f, len, now, 0);
}

int rs_history_take(rs_server_t *s, world_slot_t *w, uint64_t seq, uint8_t **frame, size_t len,
                    double now)
{
    return push(s, w, seq, frame, len, now, 1);
}

void rs_history_prefetch(const world_slot_t *w, int ring)
{
    const rs_history_t *h = w->history;
    if (!h)
        return;
    if (!ring) {
        __builtin_prefetch(h);
    } else if (h->count > 0) {
        __builtin_prefetch(&h->slots[h->head]);
        __builtin_prefetch(&h->slots[(h->head + h->count - 1) % h->cap]);
    }
}

size_t rs_history_bytes(const world_slot_t *w, int *frames, size_t *ring)
{
    const rs_history_t *h = w->history;
    if (frames)
        *frames = h ? h->count : 0;
    if (ring)
        *ring = h ? (size_t)h->cap * sizeof(hist_slot_t) : 0;
    return h ? h->bytes : 0;
}

int rs_history_held(rs_server_t *s, world_slot_t *w, double now)
{
    rs_history_t *h = w->history;
    if (!h)
        return 0;
    age_out(s, h, now);
    return h->count;
}

const uint8_t *rs_history_frame(const world_slot_t *w, int i, size_t *len, uint64_t *seq)
{
    const rs_history_t *h = w->history;
    const hist_slot_t *sl = &h->slots[(h->head + i) % h->cap];
    *len = sl->len;
    if (seq)
        *seq = sl->seq;
    return sl->buf;
}
