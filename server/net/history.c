/* Observer-stream history: each world keeps the frames it published, bounded in frames, age and
 * bytes, for GetHistory (docs/design.md, "Rationale and measurements"). A world's frames lie in
 * one byte ring of its own, each frame contiguous, so keeping a frame is a copy into the ring
 * and forgetting one moves an offset: nothing is allocated or freed per frame, and the account
 * of bytes (the rings' sizes) changes only when a ring grows or shrinks. */
#include "server_internal.h"
#include "rs_prefetch.h"

#include <math.h>
#include <stdint.h>
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
#define HISTORY_RING_MIN 16            /* slots of a new slot ring */
#define HISTORY_BYTES_MIN 4096         /* bytes of a new byte ring (more if a frame needs it) */

typedef struct hist_slot {
    size_t off; /* the frame's bytes: ring[off, off + len) */
    size_t len;
    uint64_t seq;
    double at; /* rs_monotonic() when published */
} hist_slot_t;

struct rs_history {
    hist_slot_t *slots; /* cap slots, a ring (NULL while cap is 0) */
    int cap;
    int head;     /* the oldest frame's slot */
    int count;    /* frames held */
    uint8_t *ring;   /* ring_cap bytes: the frames in publication order, wrapping at the end
                        (a frame that does not fit before it starts again at 0) */
    size_t ring_cap;
    size_t used;  /* the frames' bytes */
    size_t bytes; /* the byte ring's and the slot ring's sizes: what the bounds count */
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

static hist_slot_t *newest(const rs_history_t *h)
{
    return &h->slots[(h->head + h->count - 1) % h->cap];
}

/* Forget the oldest frame (its bytes stay the ring's). */
static void drop_oldest(rs_history_t *h)
{
    h->used -= h->slots[h->head].len;
    h->head = (h->head + 1) % h->cap;
    if (--h->count == 0)
        h->head = 0;
}

/* Forget every frame; the rings stay. */
static void forget_all(rs_history_t *h)
{
    h->count = h->head = 0;
    h->used = 0;
}

/* Move the frames held to the start of a byte ring of `cap` bytes (at least h->used; 0 frees
 * it): 0, or -1 out of memory (nothing changed). The account is the caller's. */
static int resize_bytes(rs_history_t *h, size_t cap)
{
    uint8_t *ring = NULL;
    if (cap && !(ring = malloc(cap)))
        return -1;
    size_t off = 0;
    for (int i = 0; i < h->count; i++) {
        hist_slot_t *sl = &h->slots[(h->head + i) % h->cap];
        memcpy(ring + off, h->ring + sl->off, sl->len);
        sl->off = off;
        off += sl->len;
    }
    free(h->ring);
    h->ring = ring;
    h->ring_cap = cap;
    return 0;
}

/* Drop every frame and both rings. */
static void drop_all(rs_history_t *h)
{
    forget_all(h);
    account(h, 0, h->ring_cap + (size_t)h->cap * sizeof *h->slots);
    free(h->ring);
    free(h->slots);
    h->ring = NULL;
    h->slots = NULL;
    h->ring_cap = 0;
    h->cap = 0;
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

/* Forget frames older than the server's history_seconds; a history left empty gives its byte
 * ring back. */
static void age_out(rs_server_t *s, rs_history_t *h, double now)
{
    double limit = s->cfg.history_seconds;
    int aged = 0;
    for (; h->count > 0 && limit > 0 && now - h->slots[h->head].at > limit; aged++)
        drop_oldest(h);
    if (aged && h->count == 0 && h->ring_cap) {
        account(h, 0, h->ring_cap);
        resize_bytes(h, 0);
        trim_heap(s);
    }
}

/* The history other than `mine` holding the most bytes, or NULL. */
static rs_history_t *largest_other(rs_server_t *s, const rs_history_t *mine)
{
    rs_history_entry_t *a = s->histories.by_bytes;
    int n = s->histories.n;
    if (n == 0)
        return NULL;
    if (a[0].h != mine)
        return a[0].h;
    return n > 2 && a[2].bytes > a[1].bytes ? a[2].h : n > 1 ? a[1].h : NULL;
}

/* Room in the server's bound for h to grow by: `want` bytes, or at least `least` (0 when not
 * even that). The bound's free room first; then, while h stays within its share of the bound
 * (history_bytes over the histories), bytes the histories above their share give up, the
 * largest first, each shrinking to no less than the share. So the histories fill the bound
 * and then hold about a share each, and a world that holds its share keeps its frames. */
static size_t obtain(rs_server_t *s, rs_history_t *h, size_t least, size_t want)
{
    size_t max = s->cfg.history_bytes;
    size_t room = s->histories.bytes < max ? max - s->histories.bytes : 0;
    if (want <= room)
        return want;
    size_t share = max / (size_t)(s->histories.n > 0 ? s->histories.n : 1);
    size_t upto = h->bytes < share ? share - h->bytes : 0; /* what h may take to */
    if (upto > want)
        upto = want;
    if (upto < least) /* taking could not give h what it needs: no history shrinks for it */
        return room >= least ? room : 0;
    while (room < upto) {
        rs_history_t *big = largest_other(s, h);
        if (!big || big->bytes <= share)
            break;
        size_t give = big->bytes - share;
        if (give > upto - room)
            give = upto - room;
        if (give >= big->ring_cap) {
            drop_all(big); /* all it holds, or only a slot ring */
        } else {
            size_t cap = big->ring_cap - give;
            while (big->count > 0 && big->used > cap)
                drop_oldest(big);
            if (resize_bytes(big, cap) < 0)
                break;
            account(big, 0, give);
        }
        room = s->histories.bytes < max ? max - s->histories.bytes : 0;
    }
    if (room >= want)
        return want;
    return room >= least ? room : 0;
}

/* Grow h's slot ring (double it, up to cfg.history_frames) within the bounds: 0 when it grew. */
static int grow_slots(rs_server_t *s, rs_history_t *h)
{
    int cap = h->cap ? 2 * h->cap : HISTORY_RING_MIN;
    if (cap > s->cfg.history_frames)
        cap = s->cfg.history_frames;
    size_t more = (size_t)(cap - h->cap) * sizeof *h->slots;
    if (cap <= h->cap || h->bytes + more > s->cfg.history_bytes_per_world ||
        obtain(s, h, more, more) < more)
        return -1;
    hist_slot_t *grown = malloc((size_t)cap * sizeof *grown);
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

/* Grow h's byte ring to hold its frames and one of len bytes, within the bounds: doubled, but
 * not much past what cfg.history_frames frames of their size take, nor by a sliver (each
 * growth copies the frames held): 0 when it grew. */
static int grow_bytes(rs_server_t *s, rs_history_t *h, size_t len)
{
    size_t need = h->used + len, have = h->ring_cap;
    size_t want = have ? 2 * have : HISTORY_BYTES_MIN;
    size_t frames = (size_t)s->cfg.history_frames, per = need / (size_t)(h->count + 1) + 1;
    if (per <= SIZE_MAX / 2 / frames && want > per * frames + per * frames / 8)
        want = per * frames + per * frames / 8;
    if (want < need)
        want = need;
    size_t slots = (size_t)h->cap * sizeof *h->slots, world_max = s->cfg.history_bytes_per_world;
    if (slots >= world_max || need > world_max - slots)
        return -1;
    if (want > world_max - slots)
        want = world_max - slots;
    size_t least = need - have, sliver = (want - have) / 4;
    size_t got = obtain(s, h, least > sliver ? least : sliver, want - have);
    if (!got || resize_bytes(h, have + got) < 0)
        return -1;
    account(h, got, 0);
    return 0;
}

/* Where a frame of len bytes goes in h's ring after its newest frame: its offset, or SIZE_MAX
 * when it does not fit before the oldest. */
static size_t place(const rs_history_t *h, size_t len)
{
    if (h->count == 0)
        return len <= h->ring_cap && h->ring_cap ? 0 : SIZE_MAX;
    const hist_slot_t *old = &h->slots[h->head], *nu = newest(h);
    size_t end = nu->off + nu->len;
    if (nu->off >= old->off) { /* held in [old, end) */
        if (len <= h->ring_cap - end)
            return end;
        return len < old->off ? 0 : SIZE_MAX;
    }
    return end + len < old->off ? end : SIZE_MAX; /* held in [old, cap) and [0, end) */
}

/* Make room in h for one more frame of len bytes: its offset in the ring, or SIZE_MAX (the
 * bounds, or memory, leave none). The oldest frames go past cfg.history_frames, and when the
 * ring is full and may not grow. */
static size_t make_room(rs_server_t *s, rs_history_t *h, size_t len)
{
    while (h->count >= s->cfg.history_frames)
        drop_oldest(h);
    while (h->count == h->cap && grow_slots(s, h) < 0) {
        if (h->count == 0)
            return SIZE_MAX;
        drop_oldest(h);
    }
    for (;;) {
        size_t at = place(h, len);
        if (at != SIZE_MAX)
            return at;
        if (h->used + len > h->ring_cap && grow_bytes(s, h, len) == 0)
            continue;
        if (h->count == 0)
            return SIZE_MAX;
        drop_oldest(h);
    }
}

void rs_history_push(rs_server_t *s, world_slot_t *w, uint64_t seq, const uint8_t *frame,
                     size_t len, double now)
{
    if (s->cfg.history_frames <= 0)
        return;
    rs_history_t *h = w->history;
    if (!h) {
        if (!(h = calloc(1, sizeof *h)))
            return; /* out of memory: GetHistory reports these frames as dropped */
        h->server = s;
        if (heap_add(s, h) < 0) {
            free(h);
            return;
        }
        w->history = h;
    }
    age_out(s, h, now);
    if (h->count > 0 && newest(h)->seq + 1 != seq)
        forget_all(h); /* a frame went missing: keep the held ones consecutive */
    size_t world_max = s->cfg.history_bytes_per_world, server_max = s->cfg.history_bytes;
    size_t least = len + 1 + HISTORY_RING_MIN * sizeof *h->slots; /* a frame alone */
    if (least > world_max || least > server_max) {
        drop_all(h); /* too large to keep: reported as dropped, as are older ones */
        trim_heap(s);
        return;
    }
    size_t at = make_room(s, h, len);
    if (at == SIZE_MAX)
        return; /* reported as dropped; the next push sees the gap and starts afresh */
    memcpy(h->ring + at, frame, len);
    hist_slot_t *sl = &h->slots[(h->head + h->count) % h->cap];
    sl->off = at;
    sl->len = len;
    sl->seq = seq;
    sl->at = now;
    h->count++;
    h->used += len;
}

void rs_history_prefetch(const world_slot_t *w, int stage)
{
    const rs_history_t *h = w->history;
    if (!h)
        return;
    if (stage == 0) {
        __builtin_prefetch(h);
        return;
    }
    if (h->count == 0)
        return;
    const hist_slot_t *nu = newest(h);
    if (stage == 1) {
        __builtin_prefetch(&h->slots[h->head]);
        __builtin_prefetch(nu);
        return;
    }
    /* stage 2: where the next frame most likely goes (place(): after the newest, of the
     * newest's size), for writing */
    size_t at = nu->off + nu->len;
    rs_prefetch_range(h->ring + (at + nu->len > h->ring_cap ? 0 : at), nu->len, 1);
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
    return h->ring + sl->off;
}
