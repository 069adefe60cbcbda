/* The state digest: XXH3-128 (xxHash, inlined from its header) over the link before it and the
 * bits of the fields the field table marks (rs_core.h, RS_DATA_FIELDS' `digest` column), chained
 * from control step to control step; the 32 bytes are the chain's last two links. The digest
 * detects divergence between runs, which a fast non-cryptographic 128-bit hash does with a
 * chance of an accidental match far below anything that matters (about 2^-128); nothing
 * authenticates by it (snapshots carry their own MAC, snapmac.c), so a cryptographic hash only
 * cost time. The only core file that includes xxhash.h.
 *
 * The bytes are gathered into one buffer and hashed in one call: only the slots a world uses
 * (nx, nu; each robot's naux and wrench values; the task's used state), so a finger control
 * step hashes 252 bytes, the link included. Values are hashed in the machine's byte order;
 * every target the project builds for (x86-64, arm64) is little-endian, as the snapshot format
 * is; XXH3's values are the same on every platform. */
#include "rs_data.h"

#include "rs_motion_spec.h"
#include "rs_robot.h"
#include "rs_task.h"

#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>


#define GATHER_BYTES 2048 /* flushed into the hash when full: one call for any ordinary world */

typedef struct gather {
    XXH3_state_t st; /* the hash, once the buffer overflowed: what came before */
    int streaming;
    size_t len;
    unsigned char buf[GATHER_BYTES];
} gather_t;

__attribute__((noinline)) static void put_slow(gather_t *g, const void *p, size_t n)
{
    if (!g->streaming) {
        XXH3_128bits_reset(&g->st);
        g->streaming = 1;
    }
    XXH3_128bits_update(&g->st, g->buf, g->len);
    g->len = 0;
    if (n > sizeof g->buf) {
        XXH3_128bits_update(&g->st, p, n);
        return;
    }
    memcpy(g->buf, p, n);
    g->len = n;
}

/* n bytes into the buffer (a fixed-size field's copy compiles to a few moves) */
static inline void put(gather_t *g, const void *p, size_t n)
{
    if (__builtin_expect(g->len + n > sizeof g->buf, 0)) {
        put_slow(g, p, n);
        return;
    }
    memcpy(g->buf + g->len, p, n);
    g->len += n;
}

/* n doubles: copied one 8-byte move at a time (short vectors; a call to memcpy costs more) */
static inline void put_f64s(gather_t *g, const double *v, size_t n)
{
    if (__builtin_expect(g->len + 8 * n > sizeof g->buf, 0)) {
        put_slow(g, v, 8 * n);
        return;
    }
    unsigned char *dst = g->buf + g->len;
    for (size_t k = 0; k < n; k++)
        memcpy(dst + 8 * k, &v[k], 8);
    g->len += 8 * n;
}

static void put_u32(gather_t *g, uint32_t v) { put(g, &v, sizeof v); }

/* How many of an entity's aux and wrench slots it uses: its robot's naux; its bodies' wrench
 * values. */
static size_t used_aux(const rs_entity_model_t *em) { return (size_t)em->robot->naux; }

static size_t used_wrench(const rs_entity_model_t *em)
{
    size_t n = 0;
    for (int b = 0; b < em->robot->nwrench; b++)
        n += (size_t)em->robot->wrench[b].n;
    return n < RS_WRENCH_MAX ? n : RS_WRENCH_MAX;
}

/* The task's state less the last Step's reward and the return (they depend on how the control
 * steps were split into Steps), up to its last nonzero value. */
/* a task slot's value as bits, less its sign (so +-0 read as 0); the last Step's reward and the
 * return read as 0 */
static inline uint64_t slot_bits(const double *task, uint32_t i)
{
    uint64_t bits;
    memcpy(&bits, &task[i], sizeof bits);
    return i == RS_TASK_REWARD || i == RS_TASK_RETURN ? 0 : bits << 1;
}

static void put_episode(gather_t *g, const double *task)
{
    /* the last slot in use, found from the end four slots at a time */
    uint32_t used = RS_TASK_STATE;
    while (used >= 4 && !(slot_bits(task, used - 1) | slot_bits(task, used - 2) |
                          slot_bits(task, used - 3) | slot_bits(task, used - 4)))
        used -= 4;
    while (used > 0 && !slot_bits(task, used - 1))
        used--;
    put_u32(g, used);
    for (uint32_t i = 0; i < used; i++)
        if (i != RS_TASK_REWARD && i != RS_TASK_RETURN)
            put(g, &task[i], sizeof task[i]);
}

/* Each schedule's knot count and its first and last knots (the cursor is a search hint; the
 * values in force are in u_eff). */
static void put_schedules(gather_t *g, const rs_model_t *m, const rs_data_t *d)
{
    for (int a = 0; a < m->nu; a++) {
        const rs_schedule_t *s = &d->sched[a];
        if (!s->n)
            continue;
        put_u32(g, (uint32_t)a);
        put_u32(g, (uint32_t)s->n);
        double ends[4] = {s->t[0], s->v[0], s->t[s->n - 1], s->v[s->n - 1]};
        put(g, ends, sizeof ends);
    }
}

__attribute__((noinline)) static void put_spec(gather_t *g, const rs_data_t *d)
{
    double state[2 + 6 * 256]; /* as data.c keeps it */
    size_t n = rs_motion_spec_state_len(d->spec);
    if (n > sizeof state / sizeof state[0])
        n = sizeof state / sizeof state[0];
    rs_motion_spec_state_get(d->spec, state);
    put_u32(g, (uint32_t)n);
    put(g, state, n * sizeof state[0]);
}

static int any_schedule(const rs_model_t *m, const rs_data_t *d)
{
    for (int e = 0; e < m->nentities; e++)
        if (d->nsched[e])
            return 1;
    return 0;
}

/* The fields the table marks (RS_DATA_FIELDS' digest column), in its order, then the
 * schedules and the motion specification (its rows by hand, fields.c), each put by code the
 * X-macro unrolls here: the bytes the table walk gathered, without walking the table. */
#define LEN_NX m->nx
#define LEN_NU m->nu
#define LEN_NS m->ns
#define PUT_HASH_VALUE(name, length) put(g, &d->name, sizeof d->name);
#define PUT_HASH_VECTOR(name, length) put_f64s(g, d->name, (size_t)LEN_##length);
#define PUT_HASH_ENTITY(name, length)                                                          \
    for (int e = 0; e < m->nentities; e++)                                                     \
        put(g, &d->ent[e].name, sizeof d->ent[e].name);
#define PUT_SCHED_VECTOR(name, length)                                                         \
    if (sched)                                                                                 \
        PUT_HASH_VECTOR(name, length)
#define PUT_SPECU_VECTOR(name, length)                                                         \
    if (d->spec)                                                                               \
        PUT_HASH_VECTOR(name, length)
#define PUT_USED_ENTITY(name, length)                                                          \
    for (int e = 0; e < m->nentities; e++)                                                     \
        put_f64s(g, d->ent[e].name, used_##name(&m->ent[e]));
#define PUT_EPISODE_VALUE(name, length) put_episode(g, d->name);
#define PUT_SKIP_VALUE(name, length)
#define PUT_SKIP_VECTOR(name, length)
#define PUT_SKIP_ENTITY(name, length)
#define PUT_FIELD(shape, type, name, dims, length, reset, check, digest)                        \
    PUT_##digest##_##shape(name, length)

static void put_state(gather_t *g, const rs_model_t *m, const rs_data_t *d)
{
    int sched = any_schedule(m, d);
    RS_DATA_FIELDS(PUT_FIELD)
    put_schedules(g, m, d);
    if (d->spec)
        put_spec(g, d);
}

/* One link: XXH3-128 over the link before (16 bytes) and the state. The 32 bytes of the digest
 * are this link and the one before it: equal digests mean equal links, and a link covers every
 * state since the chain's start through the link it hashes. */
static void chain(const rs_model_t *m, rs_data_t *d, const uint64_t prev[2])
{
    gather_t g;
    g.streaming = 0;
    g.len = 0;
    put(&g, prev, 2 * sizeof prev[0]);
    put_state(&g, m, d);
    XXH128_hash_t h;
    if (g.streaming) {
        XXH3_128bits_update(&g.st, g.buf, g.len);
        h = XXH3_128bits_digest(&g.st);
    } else {
        h = XXH3_128bits(g.buf, g.len);
    }
    d->digest[2] = prev[0];
    d->digest[3] = prev[1];
    d->digest[0] = h.low64;
    d->digest[1] = h.high64;
}

void rs_digest_start(const rs_model_t *m, rs_data_t *d)
{
    static const uint64_t zero[2];
    chain(m, d, zero);
}

void rs_digest_step(const rs_model_t *m, rs_data_t *d)
{
    uint64_t prev[2] = {d->digest[0], d->digest[1]};
    chain(m, d, prev);
}

void rs_digest_bytes(const rs_data_t *d, uint8_t out[RS_DIGEST_BYTES])
{
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < 8; b++)
            out[8 * i + b] = (uint8_t)(d->digest[i] >> (8 * b));
}

void rs_digest_hex(const rs_data_t *d, char out[2 * RS_DIGEST_BYTES + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t b[RS_DIGEST_BYTES];
    rs_digest_bytes(d, b);
    for (int i = 0; i < RS_DIGEST_BYTES; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[2 * RS_DIGEST_BYTES] = '\0';
}
