/* The state digest: XXH3-128 (xxHash, inlined from its header) over the bits of the fields the
 * field table marks (rs_core.h, RS_DATA_FIELDS' `digest` column), chained from control step to
 * control step, twice with two seeds: the 32 bytes are two 128-bit hashes of the same bytes.
 * The digest detects divergence between runs, which a fast non-cryptographic hash does with a
 * chance of an accidental match far below anything that matters (2^-128 per hash); nothing
 * authenticates by it (snapshots carry their own MAC, snapmac.c), so a cryptographic hash only
 * cost time (BLAKE2b-256 took about as long as the finger's control step itself). The only core
 * file that includes xxhash.h.
 *
 * The bytes are gathered into one buffer and hashed in one call: only the slots a world uses
 * (nx, nu; each robot's naux and wrench values; the task's used state), so a finger control
 * step hashes 252 bytes with the link before. Values are hashed in the machine's byte order;
 * every target the project builds for (x86-64, arm64) is little-endian, as the snapshot format
 * is; XXH3's values are the same on every platform. */
#include "rs_data.h"

#include "rs_motion_spec.h"
#include "rs_robot.h"
#include "rs_task.h"

#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* the two hashes' seeds: any two different constants */
#define SEED_A 0x726f626f73696d31ULL
#define SEED_B 0x646967657374322eULL

#define GATHER_BYTES 2048 /* flushed into the hash when full: one call for any ordinary world */

typedef struct gather {
    XXH3_state_t st[2]; /* the two hashes, once the buffer overflowed: what came before */
    uint64_t seed[2];
    int streaming;
    size_t len;
    unsigned char buf[GATHER_BYTES];
} gather_t;

static void update_both(gather_t *g, const void *p, size_t n)
{
    XXH3_128bits_update(&g->st[0], p, n);
    XXH3_128bits_update(&g->st[1], p, n);
}

static void put_slow(gather_t *g, const void *p, size_t n)
{
    if (!g->streaming) {
        XXH3_128bits_reset_withSeed(&g->st[0], g->seed[0]);
        XXH3_128bits_reset_withSeed(&g->st[1], g->seed[1]);
        g->streaming = 1;
    }
    update_both(g, g->buf, g->len);
    g->len = 0;
    if (n > sizeof g->buf) {
        update_both(g, p, n);
        return;
    }
    memcpy(g->buf, p, n);
    g->len = n;
}

/* n bytes into the buffer; the values are 4 or 8 bytes each, so fixed-size copies (inlined
 * moves) do it without a call to memcpy for each field */
static inline void put(gather_t *g, const void *p, size_t n)
{
    if (g->len + n > sizeof g->buf) {
        put_slow(g, p, n);
        return;
    }
    const unsigned char *src = p;
    unsigned char *dst = g->buf + g->len;
    size_t k = 0;
    for (; k + 8 <= n; k += 8)
        memcpy(dst + k, src + k, 8);
    if (k < n)
        memcpy(dst + k, src + k, 4);
    g->len += n;
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
static void put_episode(gather_t *g, const double *task)
{
    uint32_t used = 0;
    for (uint32_t i = 0; i < RS_TASK_STATE; i++)
        if (i != RS_TASK_REWARD && i != RS_TASK_RETURN && task[i] != 0.0)
            used = i + 1;
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

static void put_spec(gather_t *g, const rs_data_t *d)
{
    if (!d->spec)
        return;
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
#define PUT_HASH_VECTOR(name, length) put(g, d->name, (size_t)LEN_##length * sizeof *d->name);
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
        put(g, d->ent[e].name, used_##name(&m->ent[e]) * sizeof d->ent[e].name[0]);
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
    put_spec(g, d);
}

static void chain(const rs_model_t *m, rs_data_t *d, const uint64_t prev[4])
{
    gather_t g;
    g.streaming = 0;
    g.len = 0;
    /* the previous link enters as the two hashes' seeds (each half of it folded into 64 bits):
     * a seed costs nothing up to 240 bytes of input, where the link as bytes would have pushed
     * a finger's 220 bytes of state past it, onto XXH3's slower long-input path */
    uint64_t seed_a = SEED_A ^ prev[0] ^ XXH_rotl64(prev[1], 29),
             seed_b = SEED_B ^ prev[2] ^ XXH_rotl64(prev[3], 29);
    g.seed[0] = seed_a;
    g.seed[1] = seed_b;
    put_state(&g, m, d);
    XXH128_hash_t a, b;
    if (g.streaming) {
        update_both(&g, g.buf, g.len);
        a = XXH3_128bits_digest(&g.st[0]);
        b = XXH3_128bits_digest(&g.st[1]);
    } else {
        a = XXH3_128bits_withSeed(g.buf, g.len, seed_a);
        b = XXH3_128bits_withSeed(g.buf, g.len, seed_b);
    }
    d->digest[0] = a.low64;
    d->digest[1] = a.high64;
    d->digest[2] = b.low64;
    d->digest[3] = b.high64;
}

void rs_digest_start(const rs_model_t *m, rs_data_t *d)
{
    static const uint64_t zero[4];
    chain(m, d, zero);
}

void rs_digest_step(const rs_model_t *m, rs_data_t *d)
{
    uint64_t prev[4];
    memcpy(prev, d->digest, sizeof prev);
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
