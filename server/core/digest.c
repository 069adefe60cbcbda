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
 * is; XXH3's values are the same on every platform.
 *
 * A control step's code already fills the first-level instruction cache, so what the digest
 * costs inside a step is mostly the cache lines its code takes (docs/performance.md, "The state
 * digest's cost"): the gathering is straight-line code without a room check per field, and
 * xxHash's functions are compiled at -O2, where GCC keeps its stripe loop a loop (at -O3 it
 * unrolls it completely: fewer instructions, twice the lines). */
#include "rs_data.h"

#include "rs_motion_spec.h"
#include "rs_robot.h"
#include "rs_task.h"

#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("O2")
#endif
#define XXH_INLINE_ALL
#include <xxhash.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#define GATHER_BYTES 2048 /* hashed in pieces when full: one call for any ordinary world */

typedef struct gather {
    unsigned char buf[GATHER_BYTES];
    int streaming;   /* whether st holds what came before the buffer */
    XXH3_state_t st;
} gather_t;

/* n bytes past a full buffer (n may be longer than the buffer): what the buffer held before
 * `at` goes into the stream first. */
__attribute__((noinline)) static unsigned char *put_past(gather_t *g, unsigned char *at,
                                                         const void *p, size_t n)
{
    if (!g->streaming) {
        XXH3_128bits_reset(&g->st);
        g->streaming = 1;
    }
    XXH3_128bits_update(&g->st, g->buf, (size_t)(at - g->buf));
    at = g->buf;
    if (n > sizeof g->buf) {
        XXH3_128bits_update(&g->st, p, n);
        return at;
    }
    memcpy(at, p, n);
    return at + n;
}

/* n bytes at `at`; returns the next free byte. `checked` is a constant: 0 where the caller
 * made sure that everything fits (MOST_FIELD, below), so that a put of a fixed n is its copy:
 * a few moves. */
static inline unsigned char *put(gather_t *g, unsigned char *at, const void *p, size_t n,
                                 int checked)
{
    if (checked && (size_t)(at - g->buf) + n > sizeof g->buf)
        return put_past(g, at, p, n);
    memcpy(at, p, n);
    return at + n;
}

/* The first n values of a fixed-size array: unchecked, the whole array is copied (a few
 * moves) and the cursor moved on by n values, so that the next put overwrites the rest. */
#define PUT_FIRST(array, n)                                                                    \
    do {                                                                                       \
        if (checked) {                                                                         \
            at = put(g, at, array, (n) * sizeof(array)[0], 1);                                 \
        } else {                                                                               \
            memcpy(at, array, sizeof(array));                                                  \
            at += (n) * sizeof(array)[0];                                                      \
        }                                                                                      \
    } while (0)

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

/* a task slot's value as bits, less its sign (so +-0 read as 0); the last Step's reward and the
 * return read as 0 */
static inline uint64_t slot_bits(const double *task, uint32_t i)
{
    uint64_t bits;
    memcpy(&bits, &task[i], sizeof bits);
    return i == RS_TASK_REWARD || i == RS_TASK_RETURN ? 0 : bits << 1;
}

/* The task's state less the last Step's reward and the return (they depend on how the control
 * steps were split into Steps), up to its last nonzero value. */
static inline unsigned char *put_episode(gather_t *g, unsigned char *at, const double *task,
                                         int checked)
{
    /* the last slot in use, found from the end four slots at a time */
    uint32_t used = RS_TASK_STATE;
    while (used >= 4 && !(slot_bits(task, used - 1) | slot_bits(task, used - 2) |
                          slot_bits(task, used - 3) | slot_bits(task, used - 4)))
        used -= 4;
    while (used > 0 && !slot_bits(task, used - 1))
        used--;
    at = put(g, at, &used, sizeof used, checked);
    for (uint32_t i = 0; i < used; i++)
        if (i != RS_TASK_REWARD && i != RS_TASK_RETURN)
            at = put(g, at, &task[i], sizeof task[i], checked);
    return at;
}

/* Each schedule's knot count and its first and last knots (the cursor is a search hint; the
 * values in force are in u_eff). */
static unsigned char *put_schedules(gather_t *g, unsigned char *at, const rs_model_t *m,
                                    const rs_data_t *d)
{
    for (int a = 0; a < m->nu; a++) {
        const rs_schedule_t *s = &d->sched[a];
        if (!s->n)
            continue;
        uint32_t head[2] = {(uint32_t)a, (uint32_t)s->n};
        at = put(g, at, head, sizeof head, 1);
        double ends[4] = {s->t[0], s->v[0], s->t[s->n - 1], s->v[s->n - 1]};
        at = put(g, at, ends, sizeof ends, 1);
    }
    return at;
}

static unsigned char *put_spec(gather_t *g, unsigned char *at, const rs_data_t *d)
{
    double state[2 + 6 * 256]; /* as data.c keeps it */
    size_t n = rs_motion_spec_state_len(d->spec);
    if (n > sizeof state / sizeof state[0])
        n = sizeof state / sizeof state[0];
    rs_motion_spec_state_get(d->spec, state);
    uint32_t n32 = (uint32_t)n;
    at = put(g, at, &n32, sizeof n32, 1);
    return put(g, at, state, n * sizeof state[0], 1);
}

static int any_schedule(const rs_model_t *m, const rs_data_t *d)
{
    for (int e = 0; e < m->nentities; e++)
        if (d->nsched[e])
            return 1;
    return 0;
}

/* The fields the table marks (RS_DATA_FIELDS' digest column), in its order, each put by code
 * the X-macro unrolls here: the bytes the table walk gathered, without walking the table. */
#define LEN_NX m->nx
#define LEN_NU m->nu
#define LEN_NS m->ns
#define PUT_HASH_VALUE(name, length) at = put(g, at, &d->name, sizeof d->name, checked);
#define PUT_HASH_VECTOR(name, length)                                                          \
    at = put(g, at, d->name, 8 * (size_t)LEN_##length, checked);
#define PUT_HASH_ENTITY(name, length)                                                          \
    for (int e = 0; e < m->nentities; e++)                                                     \
        at = put(g, at, &d->ent[e].name, sizeof d->ent[e].name, checked);
#define PUT_SCHED_VECTOR(name, length)                                                         \
    if (sched)                                                                                 \
        PUT_HASH_VECTOR(name, length)
#define PUT_SPECU_VECTOR(name, length)                                                         \
    if (spec)                                                                                  \
        PUT_HASH_VECTOR(name, length)
#define PUT_USED_ENTITY(name, length)                                                          \
    for (int e = 0; e < m->nentities; e++)                                                     \
        PUT_FIRST(d->ent[e].name, used_##name(&m->ent[e]));
#define PUT_EPISODE_VALUE(name, length) at = put_episode(g, at, d->name, checked);
#define PUT_SKIP_VALUE(name, length)
#define PUT_SKIP_VECTOR(name, length)
#define PUT_SKIP_ENTITY(name, length)
#define PUT_FIELD(shape, type, name, dims, length, reset, check, digest)                        \
    PUT_##digest##_##shape(name, length)

/* The link before and the fields at g's buffer's start; returns the next free byte. Inlined
 * twice: checked (room checked at every put; schedules or a motion specification in force, or
 * a world too large for the buffer) and unchecked (the rest: a put is its copy). */
static inline unsigned char *put_fields(gather_t *g, const rs_model_t *m, const rs_data_t *d,
                                        const uint64_t prev[2], int sched, int spec, int checked)
{
    unsigned char *at = g->buf;
    at = put(g, at, prev, 2 * sizeof prev[0], checked);
    RS_DATA_FIELDS(PUT_FIELD)
    return at;
}

__attribute__((noinline)) static unsigned char *put_all_checked(gather_t *g, const rs_model_t *m,
                                                                const rs_data_t *d,
                                                                const uint64_t prev[2])
{
    int sched = any_schedule(m, d);
    unsigned char *at = put_fields(g, m, d, prev, sched, d->spec != NULL, 1);
    if (sched)
        at = put_schedules(g, at, m, d);
    if (d->spec)
        at = put_spec(g, at, d);
    return at;
}

/* The most bytes the unchecked put_fields writes: every field whole (PUT_FIRST copies whole
 * arrays), the task's used-slot count and the link before. */
#define MOST_VALUE(name, length) +sizeof(((rs_data_t *)0)->name)
#define MOST_VECTOR(name, length) +8 * (size_t)LEN_##length
#define MOST_ENTITY(name, length) +(size_t)m->nentities * sizeof(((rs_entity_data_t *)0)->name)
#define MOST_FIELD(shape, type, name, dims, length, reset, check, digest)                       \
    MOST_##shape(name, length)

/* One link: XXH3-128 over the link before (16 bytes) and the state. The 32 bytes of the digest
 * are this link and the one before it: equal digests mean equal links, and a link covers every
 * state since the chain's start through the link it hashes. */
static void chain(const rs_model_t *m, rs_data_t *d, const uint64_t prev[2])
{
    gather_t gather, *g = &gather;
    g->streaming = 0;
    unsigned char *at;
    if (!d->spec && !any_schedule(m, d) &&
        2 * sizeof prev[0] + sizeof(uint32_t) + RS_DATA_FIELDS(MOST_FIELD) <= sizeof g->buf)
        at = put_fields(g, m, d, prev, 0, 0, 0);
    else
        at = put_all_checked(g, m, d, prev);
    XXH128_hash_t h;
    if (g->streaming) {
        XXH3_128bits_update(&g->st, g->buf, (size_t)(at - g->buf));
        h = XXH3_128bits_digest(&g->st);
    } else {
        h = XXH3_128bits(g->buf, (size_t)(at - g->buf));
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
