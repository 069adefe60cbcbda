/* The field table of rs_data_t (MuJoCo's MJDATA_POINTERS habit): one row per run variable,
 * generated from RS_DATA_FIELDS (rs_core.h), plus a row each for the schedules and the event
 * log. Reset, rs_data_copy, snapshot write and read, snapshot validation and prefetch walk it,
 * so none of them lists the fields by hand. */
#ifndef RS_DATA_H
#define RS_DATA_H

#include "rs_core.h"

#include <stdlib.h>
#include <string.h>

typedef enum rs_field_shape {
    RS_SHAPE_VALUE,     /* values inside rs_data_t */
    RS_SHAPE_VECTOR,    /* a pointer in rs_data_t to `length` values the data owns */
    RS_SHAPE_ENTITY,    /* values inside each entity's rs_entity_data_t */
    RS_SHAPE_SCHEDULES, /* rs_data_t.sched: one rs_schedule_t per actuator */
    RS_SHAPE_EVENTS,    /* rs_data_t.nevents and events[] */
    RS_SHAPE_SPEC,      /* rs_data_t.spec: the motion specification's source and run state */
} rs_field_shape_t;

typedef enum rs_field_type { RS_TYPE_F64, RS_TYPE_U64, RS_TYPE_I32, RS_TYPE_U32 } rs_field_type_t;

typedef enum rs_field_length { RS_LEN_FIXED, RS_LEN_NX, RS_LEN_NU, RS_LEN_NS } rs_field_length_t;

typedef enum rs_field_reset {
    RS_RESET_ZERO, RS_RESET_ONE, RS_RESET_INIT, RS_RESET_KEEP
} rs_field_reset_t;

/* What a restored value must satisfy (rs_data_check). */
typedef enum rs_field_check {
    RS_CHECK_ANY,       /* any value of its type */
    RS_CHECK_FINITE,    /* every value finite */
    RS_CHECK_TIME,      /* finite, >= 0 and below 2^53 control steps; with the grid (below) */
    RS_CHECK_STEPS,     /* a control-step count below 2^53 */
    RS_CHECK_GRID,      /* grid_k <= step_count and t in [grid_t0 + k dt, grid_t0 + (k+1) dt) */
    RS_CHECK_STEP_SIZE, /* finite, in [0, control_dt] */
    RS_CHECK_RNG,       /* not all zero (xoshiro's one bad state) */
    RS_CHECK_COMMAND,   /* finite and within each actuator's bounds */
    RS_CHECK_MODE,      /* a mode of the entity's robot: [0, nmodes) */
    RS_CHECK_AUX,       /* as the robot's aux table declares (rs_robot.h); undeclared slots 0 */
    RS_CHECK_BOOL,      /* 0 or 1 */
    RS_CHECK_COUNT,     /* >= 0 */
    RS_CHECK_SCHEDULES, /* knots finite, times strictly increasing, values in bounds, cursor */
    RS_CHECK_EVENTS,    /* at most RS_EVENT_LOG, entities and kinds known, times finite */
    RS_CHECK_SPEC,      /* parses and validates under the model; its run state in range */
} rs_field_check_t;

/* What the state digest (digest.c) takes of a field (the `digest` column of RS_DATA_FIELDS). */
typedef enum rs_field_digest {
    RS_DIGEST_SKIP,      /* nothing */
    RS_DIGEST_HASH,      /* every value */
    RS_DIGEST_USED,      /* ENTITY: the slots its robot uses (aux: naux; wrench: its bodies') */
    RS_DIGEST_SCHED,     /* every value, while a schedule is in force (else they are u's) */
    RS_DIGEST_SPECU,     /* every value, while a motion specification is in force (else 0) */
    RS_DIGEST_EPISODE,   /* the task's state less the last Step's reward and the return */
    RS_DIGEST_SCHEDULES, /* each schedule's knot count, cursor and the knots around it */
    RS_DIGEST_SPEC,      /* the motion specification's run state */
} rs_field_digest_t;

typedef struct rs_field {
    const char *name;
    rs_field_shape_t shape;
    rs_field_type_t type;
    size_t offset;            /* in rs_data_t (VALUE, VECTOR: of the pointer) or in
                                 rs_entity_data_t (ENTITY) */
    int count;                /* VALUE, ENTITY: values in one place */
    rs_field_length_t length; /* VECTOR: which of the model's sizes */
    rs_field_reset_t reset;
    rs_field_check_t check;
    rs_field_digest_t digest;
} rs_field_t;

/* The table: its rows and their number. */
const rs_field_t *rs_data_fields(int *n);

/* How many values field f holds in d for model m (VALUE: count; VECTOR: the model's size;
 * ENTITY: count per entity; SCHEDULES: actuators; EVENTS: events logged). */
size_t rs_field_count(const rs_field_t *f, const rs_model_t *m, const rs_data_t *d);

/* The address of f's values in d: for ENTITY those of entity e (else e is ignored); NULL for
 * SCHEDULES and EVENTS. */
void *rs_field_values(const rs_field_t *f, rs_data_t *d, int e);

/* Size in bytes of one value of type t. */
size_t rs_field_type_size(rs_field_type_t t);

/* Whether every value of every field of d is valid for model m (the checks above and the
 * robots' aux tables): 0, or RS_EINVAL naming the field, the entity and the value. */
int rs_data_check(const rs_model_t *m, const rs_data_t *d, rs_status_t *st);

/* ---- serialization, for snapshot.c: each field as its name, a count and its values,
 * little-endian ----------------------------------------------------------------------------- */

typedef struct rs_writer {
    uint8_t *buf; /* NULL: only count the bytes */
    size_t len, cap;
} rs_writer_t;

typedef struct rs_reader {
    const uint8_t *p, *end;
    const char *field; /* what was being read, for the message when it runs past the end */
    int overrun;
} rs_reader_t;

/* A string into buf (cap bytes with the NUL) by rs_get_str: -1 when it is too long, holds a
 * NUL or overruns. The primitives are inline: a snapshot is some thousand of them. */
static inline void rs_put_bytes(rs_writer_t *w, const void *p, size_t n)
{
    if (w->buf && w->len + n <= w->cap)
        memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static inline void rs_put_u64(rs_writer_t *w, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    rs_put_bytes(w, b, 8);
}

static inline void rs_put_u32(rs_writer_t *w, uint32_t v)
{
    uint8_t b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    rs_put_bytes(w, b, 4);
}

static inline void rs_put_f64(rs_writer_t *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    rs_put_u64(w, bits);
}

static inline void rs_put_str(rs_writer_t *w, const char *s)
{
    size_t n = strlen(s);
    rs_put_u32(w, (uint32_t)n);
    rs_put_bytes(w, s, n);
}

static inline const uint8_t *rs_take(rs_reader_t *r, size_t n)
{
    if (r->overrun || (size_t)(r->end - r->p) < n) {
        r->overrun = 1;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n;
    return at;
}

static inline uint64_t rs_get_u64(rs_reader_t *r)
{
    const uint8_t *b = rs_take(r, 8);
    uint64_t v = 0;
    for (int i = 0; b && i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

static inline uint32_t rs_get_u32(rs_reader_t *r)
{
    const uint8_t *b = rs_take(r, 4);
    uint32_t v = 0;
    for (int i = 0; b && i < 4; i++)
        v |= (uint32_t)b[i] << (8 * i);
    return v;
}

static inline double rs_get_f64(rs_reader_t *r)
{
    uint64_t bits = rs_get_u64(r);
    double v;
    memcpy(&v, &bits, 8);
    return v;
}

static inline int rs_get_str(rs_reader_t *r, char *buf, size_t cap)
{
    uint32_t n = rs_get_u32(r);
    buf[0] = '\0';
    if (n >= cap) {
        r->overrun |= n > (size_t)(r->end - r->p);
        return -1;
    }
    const uint8_t *b = rs_take(r, n);
    if (!b || memchr(b, 0, n))
        return -1;
    memcpy(buf, b, n);
    buf[n] = '\0';
    return 0;
}

/* Write field f of d. */
void rs_field_write(rs_writer_t *w, const rs_field_t *f, const rs_model_t *m, const rs_data_t *d);

/* Write every field of d, in table order. */
void rs_data_write(rs_writer_t *w, const rs_model_t *m, const rs_data_t *d);

/* Read every field into d (allocated for m by rs_data_scratch), in table order: names and
 * counts must match (else RS_EINVAL naming the field); schedules get fresh knots. The values
 * are not checked: rs_data_check does that. */
int rs_data_read(rs_reader_t *r, const rs_model_t *m, rs_data_t *d, rs_status_t *st);

/* Data for m with its arrays but no integrator, all zero: a staging area for a snapshot being
 * read (rs_data_read, rs_data_check, then rs_data_copy into the world). NULL when out of memory. Free with
 * rs_data_destroy. */
rs_data_t *rs_data_scratch(const rs_model_t *m);

/* Make room for n entries in d's event log (n <= RS_EVENT_LOG); the entries kept stay. 0, or
 * RS_EEXHAUSTED with the log unchanged. */
int rs_data_reserve_events(rs_data_t *d, int n);

/* Seed the world's generator state from `seed` (rng.c). */
void rs_rng_seed(uint64_t rng[4], uint64_t seed);

/* Free a schedule's knots and empty it. */
static inline void rs_schedule_clear(rs_schedule_t *s)
{
    free(s->t);
    free(s->v);
    memset(s, 0, sizeof *s);
}

#endif
