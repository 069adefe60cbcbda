/* Replies queued per peer: each reply's payload is a message of our own (zmq_msg_init_data)
 * whose free callback, run by ZeroMQ's I/O thread once the bytes are in the connection (or
 * dropped with it), takes them off its peer's count; so the loop knows, per peer, the bytes
 * it has handed ZeroMQ that the peer has not taken. */
#include "sendq.h"
#include "rs_log.h"
#include "rs_tsan.h"
#include "rs_wire.h"
#include "server_internal.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__SANITIZE_ADDRESS__)
#define SENDQ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SENDQ_ASAN 1
#endif
#endif
#ifdef SENDQ_ASAN
void __sanitizer_purge_allocator(void); /* its allocator, not glibc's, holds the pages */
size_t __sanitizer_get_current_allocated_bytes(void);
#elif defined(__GLIBC__)
#include <malloc.h>
#endif

#define BUCKETS 1024
#define TICK_MS 250     /* how often the loop looks while replies are queued */
#define HEADER 16       /* bytes before a payload: its length (keeps the payload aligned) */

/* A peer's count. The table holds one reference, each message in ZeroMQ one more; the last
 * to let go frees it. Only the loop adds references, so a record the loop sees with one
 * (its own) has nothing in flight and gets none. */
typedef struct peer {
    struct peer *next;
    atomic_size_t bytes;
    atomic_int refs;
    size_t idlen;
    unsigned char id[]; /* the routing id */
} peer_t;

struct rs_sendq {
    peer_t *bucket[BUCKETS];
    size_t total;      /* bytes queued, summed at the last tick */
    size_t peak;       /* the most summed since the heap was last given back */
    double next_tick;
};

static uint32_t hash(const unsigned char *id, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ id[i]) * 16777619u;
    return h % BUCKETS;
}

static void unref(peer_t *p)
{
    if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
        free(p);
}

rs_sendq_t *rs_sendq_new(void)
{
    return calloc(1, sizeof(rs_sendq_t));
}

void rs_sendq_destroy(rs_sendq_t **pq)
{
    rs_sendq_t *q = *pq;
    if (!q)
        return;
    for (int b = 0; b < BUCKETS; b++)
        for (peer_t *p = q->bucket[b], *next; p; p = next) {
            next = p->next;
            unref(p);
        }
    free(q);
    *pq = NULL;
}

/* The record of peer `id` (made when `make`), or NULL. */
static peer_t *find(rs_sendq_t *q, const unsigned char *id, size_t len, int make)
{
    peer_t **head = &q->bucket[hash(id, len)];
    for (peer_t *p = *head; p; p = p->next)
        if (p->idlen == len && memcmp(p->id, id, len) == 0)
            return p;
    if (!make)
        return NULL;
    peer_t *p = malloc(sizeof *p + len);
    if (!p)
        return NULL;
    atomic_init(&p->bytes, 0);
    atomic_init(&p->refs, 1);
    p->idlen = len;
    memcpy(p->id, id, len);
    p->next = *head;
    *head = p;
    return p;
}

/* ZeroMQ is done with a payload (on its I/O thread, or on the loop's when a send failed). */
static void payload_free(void *data, void *hint)
{
    unsigned char *base = (unsigned char *)data - HEADER;
    size_t len;
    memcpy(&len, base, sizeof len);
    peer_t *p = hint;
    if (p) {
        atomic_fetch_sub_explicit(&p->bytes, len, memory_order_relaxed);
        unref(p);
    }
    free(base);
}

int rs_sendq_send(rs_sendq_t *q, void *sock, zmq_msg_t *frames, int n, const void *data,
                  size_t len)
{
    peer_t *p = n >= 2 ? find(q, zmq_msg_data(&frames[0]), zmq_msg_size(&frames[0]), 1) : NULL;
    for (int i = 0; i < n - 1; i++)
        if (zmq_msg_send(&frames[i], sock, ZMQ_SNDMORE) < 0)
            zmq_msg_close(&frames[i]);
    unsigned char *base = malloc(HEADER + (len ? len : 1));
    zmq_msg_t m;
    if (!base) /* no room to count it: sent as ZeroMQ copies it */
        return zmq_send(sock, data, len, 0) < 0 ? -1 : 0;
    memcpy(base, &len, sizeof len);
    if (len)
        memcpy(base + HEADER, data, len);
    if (p) {
        atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->bytes, len, memory_order_relaxed);
    }
    if (zmq_msg_init_data(&m, base + HEADER, len, payload_free, p) != 0) {
        payload_free(base + HEADER, p);
        return zmq_send(sock, data, len, 0) < 0 ? -1 : 0;
    }
    RS_TSAN_RELEASE(base + HEADER); /* a shard that receives it reads it on its thread */
    if (zmq_msg_send(&m, sock, 0) < 0) {
        int e = zmq_errno();
        zmq_msg_close(&m); /* frees it: counted no more */
        errno = e;
        return -1;
    }
    return 0;
}

size_t rs_sendq_queued(rs_sendq_t *q, zmq_msg_t *routing)
{
    peer_t *p = find(q, zmq_msg_data(routing), zmq_msg_size(routing), 0);
    return p ? atomic_load_explicit(&p->bytes, memory_order_relaxed) : 0;
}

int rs_sendq_tick(rs_sendq_t *q, double now)
{
    if (now < q->next_tick)
        return (int)ceil((q->next_tick - now) * 1e3);
    size_t total = 0;
    int peers = 0;
    for (int b = 0; b < BUCKETS; b++)
        for (peer_t **link = &q->bucket[b]; *link;) {
            peer_t *p = *link;
            if (atomic_load_explicit(&p->refs, memory_order_acquire) == 1) {
                *link = p->next; /* nothing in flight: forgotten */
                free(p);
                continue;
            }
            total += atomic_load_explicit(&p->bytes, memory_order_relaxed);
            peers++;
            link = &p->next;
        }
    q->total = total;
    q->next_tick = now + TICK_MS * 1e-3;
    rs_heap_give_back(now);
    return peers ? TICK_MS : 1000; /* the heap is looked at once a second anyway */
}

size_t rs_sendq_total(const rs_sendq_t *q)
{
    return q->total;
}

/* ---- the server's replies ------------------------------------------------------------------ */

/* Route a reply back: the envelope as received, then the reply; the frames are consumed. */
void rs_send_reply(rs_server_t *s, void *sock, zmq_msg_t *frames, int n, const uint8_t *out,
                   size_t outlen)
{
    if (rs_sendq_send(s->sendq, sock, frames, n, out, outlen) < 0)
        rs_log(RS_LOG_DEBUG, "reply not sent: %s", zmq_strerror(zmq_errno()));
    zmq_msg_close(&frames[n - 1]);
}

int rs_refuse_backlogged(rs_server_t *s, void *sock, zmq_msg_t *frames, int n)
{
    size_t max = s->cfg.max_queued_bytes_per_peer, queued;
    if (!max || n < 2 || (queued = rs_sendq_queued(s->sendq, &frames[0])) < max)
        return 0;
    /* logged at most every 10 s (the count is in the stop's line) */
    if (s->backlog_refused == 0 || s->backlog_logged_at + 10 < rs_clock()) {
        rs_log(RS_LOG_WARN,
               "a connection holds %zu MiB of replies it has not read (--max-queued-bytes-per-peer "
               "%zu MiB): its requests are refused until it reads them (%llu refused so far)",
               queued >> 20, max >> 20, (unsigned long long)s->backlog_refused + 1);
        s->backlog_logged_at = rs_clock();
    }
    s->backlog_refused++;
    char msg[256];
    snprintf(msg, sizeof msg,
             "this connection has %zu bytes of replies it has not read, past the server's "
             "limit of %zu (--max-queued-bytes-per-peer): request not run; read the replies, "
             "then send it again",
             queued, max);
    const uint8_t *out;
    size_t outlen;
    zmq_msg_t *payload = &frames[n - 1];
    rs_arena_reset(&s->arena);
    /* the request's id (field 1) read without decoding it */
    rs_error_reply(s, rs_wire_last_varint(zmq_msg_data(payload), zmq_msg_size(payload), 1),
                   RS_EEXHAUSTED, msg, &out, &outlen);
    rs_send_reply(s, sock, frames, n, out, outlen);
    return 1;
}

/* ---- the heap ---------------------------------------------------------------------------- */

static _Atomic double heap_next_look; /* rs_clock() time of the process's next look */
static atomic_size_t heap_peak;        /* the most in use seen since the last give-back */

static size_t heap_in_use(void)
{
#ifdef SENDQ_ASAN
    return __sanitizer_get_current_allocated_bytes();
#elif defined(__GLIBC__)
    /* every arena's (mallinfo2 counts the main one only, and ZeroMQ's I/O threads free into
     * theirs): malloc_info's totals, after the last heap, minus the free bytes */
    char *xml = NULL;
    size_t len = 0, used = 0;
    FILE *f = open_memstream(&xml, &len);
    if (!f)
        return 0;
    int ok = malloc_info(0, f) == 0;
    fclose(f);
    const char *at = ok && xml ? strstr(xml, "</heap>") : NULL, *next;
    while (at && (next = strstr(at + 1, "</heap>")))
        at = next;
    unsigned long long fast = 0, rest = 0, current = 0;
    const char *p;
    if (at && (p = strstr(at, "<total type=\"fast\"")) &&
        sscanf(p, "<total type=\"fast\" count=\"%*u\" size=\"%llu\"", &fast) == 1 &&
        (p = strstr(at, "<total type=\"rest\"")) &&
        sscanf(p, "<total type=\"rest\" count=\"%*u\" size=\"%llu\"", &rest) == 1 &&
        (p = strstr(at, "<system type=\"current\"")) &&
        sscanf(p, "<system type=\"current\" size=\"%llu\"", &current) == 1 &&
        current >= fast + rest)
        used = (size_t)(current - fast - rest);
    free(xml);
    return used;
#else
    return 0;
#endif
}

void rs_heap_give_back(double now)
{
    double at = atomic_load_explicit(&heap_next_look, memory_order_relaxed);
    if (now < at || !atomic_compare_exchange_strong(&heap_next_look, &at, now + 1.0))
        return; /* another loop looked within the second */
    size_t used = heap_in_use(), peak = atomic_load(&heap_peak);
    if (used > peak) {
        atomic_store(&heap_peak, used);
        return;
    }
    if (peak - used < RS_HEAP_GIVE_BACK_BYTES)
        return;
#ifdef SENDQ_ASAN
    __sanitizer_purge_allocator();
#elif defined(__GLIBC__)
    malloc_trim(0);
#endif
    atomic_store(&heap_peak, used);
    rs_log(RS_LOG_DEBUG, "heap: %zu MiB freed since its peak given back", (peak - used) >> 20);
}
