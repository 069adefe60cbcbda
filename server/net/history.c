/* Observer-stream history (the "DVR"): each world keeps the frames it published, serialized,
 * in a ring of cfg.history_frames slots, each dropped once older than cfg.history_seconds of
 * wall-clock time. GetHistory hands them back byte for byte, so a watcher who joins late sees
 * what a watcher present from the start saw, then lines up with the live stream by seq.
 *
 * Memory: a world holds at most history_frames frames; a frame's size is fixed by its kind
 * (the state vector, sensors, commands and the events of one step, bounded by the event log),
 * so the bound is history_frames x the largest frame. A slot's buffer is reused and grows only
 * to the largest frame seen, so after the ring has gone round once publishing does not
 * allocate. Figures: bench/history_bytes measures bytes per world-second; the README quotes
 * them.
 *
 * Frames are kept whether or not anyone subscribes: a late watcher must find them. With
 * history on, each published frame is therefore serialized (at most stream_max_hz per world
 * per second); --history-frames 0 turns history off and makes an unwatched stream free again. */
#include "server_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HISTORY_REPLY_BYTES (4u << 20) /* frames per GetHistory reply: at most this many bytes */

typedef struct hist_slot {
    uint8_t *buf;
    size_t len, cap;
    uint64_t seq;
    double at; /* rs_monotonic() when published */
} hist_slot_t;

struct rs_history {
    hist_slot_t *slots; /* cap slots, a ring */
    int cap;
    int head;  /* the oldest frame's slot */
    int count; /* frames held */
    size_t bytes; /* bytes the slots' buffers hold (allocated), for the figures */
};

void rs_history_destroy(rs_history_t **h)
{
    if (!h || !*h)
        return;
    for (int i = 0; i < (*h)->cap; i++)
        free((*h)->slots[i].buf);
    free((*h)->slots);
    free(*h);
    *h = NULL;
}

/* Forget frames older than the server's history_seconds. */
static void age_out(const rs_server_t *s, rs_history_t *h, double now)
{
    double limit = s->cfg.history_seconds;
    while (h->count > 0 && limit > 0 && now - h->slots[h->head].at > limit) {
        h->head = (h->head + 1) % h->cap;
        h->count--;
    }
}

void rs_history_push(rs_server_t *s, world_entry_t *w, uint64_t seq, const uint8_t *frame,
                     size_t len, double now)
{
    if (s->cfg.history_frames <= 0)
        return;
    rs_history_t *h = w->history;
    if (!h) {
        h = calloc(1, sizeof *h);
        if (h && !(h->slots = calloc((size_t)s->cfg.history_frames, sizeof *h->slots))) {
            free(h);
            h = NULL;
        }
        if (!h)
            return; /* out of memory: GetHistory reports these frames as dropped */
        h->cap = s->cfg.history_frames;
        w->history = h;
    }
    age_out(s, h, now);
    if (h->count > 0 && h->slots[(h->head + h->count - 1) % h->cap].seq + 1 != seq)
        h->count = 0; /* a frame went missing (out of memory): keep the held ones consecutive */
    if (h->count == h->cap) { /* full: the oldest goes */
        h->head = (h->head + 1) % h->cap;
        h->count--;
    }
    hist_slot_t *sl = &h->slots[(h->head + h->count) % h->cap];
    if (sl->cap < len) {
        uint8_t *grown = realloc(sl->buf, len);
        if (!grown)
            return; /* the next push sees the gap and starts afresh */
        h->bytes += len - sl->cap;
        sl->buf = grown;
        sl->cap = len;
    }
    memcpy(sl->buf, frame, len);
    sl->len = len;
    sl->seq = seq;
    sl->at = now;
    if (h->count == 0)
        h->head = (int)(sl - h->slots);
    h->count++;
}

size_t rs_history_bytes(const world_entry_t *w, int *frames, size_t *ring)
{
    const rs_history_t *h = w->history;
    if (frames)
        *frames = h ? h->count : 0;
    if (ring)
        *ring = h ? (size_t)h->cap * sizeof(hist_slot_t) + sizeof *h : 0;
    return h ? h->bytes : 0;
}

int rs_op_get_history(rs_server_t *s, const Robosim__V1__Request *rq, world_entry_t *w,
                      Robosim__V1__Response *rp, rs_status_t *st)
{
    const Robosim__V1__GetHistory *g = rq->get_history;
    if (!s->xpub || s->cfg.history_frames <= 0)
        return rs_fail(st, RS_EPRECOND,
                       "this server keeps no stream history (%s); start it with the observer "
                       "stream on and --history-frames N",
                       s->xpub ? "--history-frames 0" : "the observer stream is off");
    uint64_t last = w->stream_seq, from = g->from_seq ? g->from_seq : 1;
    if (from > last + 1)
        return rs_fail(st, RS_ERANGE,
                       "from_seq %llu is past world %llu's last published frame (seq %llu); "
                       "ask from %llu at most",
                       (unsigned long long)from, (unsigned long long)w->id,
                       (unsigned long long)last, (unsigned long long)last + 1);
    rs_history_t *h = w->history;
    if (h)
        age_out(s, h, rs_monotonic());
    int count = h ? h->count : 0;
    uint64_t first = count ? h->slots[h->head].seq : last + 1;
    Robosim__V1__GetHistoryReply *r = rs_arena_alloc(&s->arena, sizeof *r);
    if (!r)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    robosim__v1__get_history_reply__init(r);
    r->first_seq = first;
    r->last_seq = last;
    r->dropped = from < first ? first - from : 0;
    uint64_t start = from < first ? first : from;
    size_t want = count ? (size_t)(last - start + 1) : 0; /* held seqs end at last */
    if (count && h->slots[(h->head + count - 1) % h->cap].seq != last)
        want = 0; /* the last frame was never held (out of memory): nothing consecutive */
    if (g->max_frames && want > g->max_frames)
        want = g->max_frames;
    ProtobufCBinaryData *frames = want ? rs_arena_alloc(&s->arena, want * sizeof *frames) : NULL;
    if (want && !frames)
        return rs_fail(st, RS_EEXHAUSTED, "out of memory");
    size_t n = 0, bytes = 0;
    for (; n < want; n++) {
        const hist_slot_t *sl = &h->slots[(h->head + (int)(start - first) + (int)n) % h->cap];
        if (n > 0 && bytes + sl->len > HISTORY_REPLY_BYTES)
            break;
        frames[n].data = sl->buf; /* packed before anything can change the ring */
        frames[n].len = sl->len;
        bytes += sl->len;
    }
    r->n_frames = n;
    r->frames = frames;
    r->more = start + n <= last;
    rp->result_case = ROBOSIM__V1__RESPONSE__RESULT_GET_HISTORY;
    rp->get_history = r;
    return 0;
}
