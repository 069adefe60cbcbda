/* The field table of rs_data_t (rs_data.h), generated from RS_DATA_FIELDS (rs_core.h): each
 * field's name, shape, type, place and count. Everything that walks the data's fields (reset,
 * copy, validation, snapshots, the digest) reads this table; nothing else lists the fields. */
#include "rs_data.h"

#define ROW_VALUE(type, name, dims, length, reset, check, digest)                              \
    {#name, RS_SHAPE_VALUE, RS_TYPE_##type, offsetof(rs_data_t, name),                         \
     (int)(sizeof(((rs_data_t *)0)->name) / sizeof(RS_CTYPE_##type)), RS_LEN_##length,        \
     RS_RESET_##reset, RS_CHECK_##check, RS_DIGEST_##digest},
#define ROW_VECTOR(type, name, dims, length, reset, check, digest)                             \
    {#name, RS_SHAPE_VECTOR, RS_TYPE_##type, offsetof(rs_data_t, name), 0, RS_LEN_##length,   \
     RS_RESET_##reset, RS_CHECK_##check, RS_DIGEST_##digest},
#define ROW_ENTITY(type, name, dims, length, reset, check, digest)                             \
    {#name, RS_SHAPE_ENTITY, RS_TYPE_##type, offsetof(rs_entity_data_t, name),                 \
     (int)(sizeof(((rs_entity_data_t *)0)->name) / sizeof(RS_CTYPE_##type)), RS_LEN_##length, \
     RS_RESET_##reset, RS_CHECK_##check, RS_DIGEST_##digest},
#define ROW(shape, type, name, dims, length, reset, check, digest)                             \
    ROW_##shape(type, name, dims, length, reset, check, digest)

static const rs_field_t fields[] = {
    RS_DATA_FIELDS(ROW)
    {"schedules", RS_SHAPE_SCHEDULES, RS_TYPE_F64, offsetof(rs_data_t, sched), 0, RS_LEN_NU,
     RS_RESET_ZERO, RS_CHECK_SCHEDULES, RS_DIGEST_SCHEDULES},
    {"events", RS_SHAPE_EVENTS, RS_TYPE_F64, offsetof(rs_data_t, events), 0, RS_LEN_FIXED,
     RS_RESET_ZERO, RS_CHECK_EVENTS, RS_DIGEST_SKIP},
    {"motion_spec", RS_SHAPE_SPEC, RS_TYPE_F64, offsetof(rs_data_t, spec), 0, RS_LEN_FIXED,
     RS_RESET_KEEP, RS_CHECK_SPEC, RS_DIGEST_SPEC},
};
#define NFIELDS (int)(sizeof fields / sizeof fields[0])

const rs_field_t *rs_data_fields(int *n)
{
    *n = NFIELDS;
    return fields;
}

size_t rs_field_type_size(rs_field_type_t t)
{
    return t == RS_TYPE_F64 || t == RS_TYPE_U64 ? 8 : 4;
}

size_t rs_field_count(const rs_field_t *f, const rs_model_t *m, const rs_data_t *d)
{
    switch (f->shape) {
    case RS_SHAPE_VALUE:
    case RS_SHAPE_ENTITY: return (size_t)f->count;
    case RS_SHAPE_VECTOR:
        return (size_t)(f->length == RS_LEN_NX ? m->nx : f->length == RS_LEN_NU ? m->nu : m->ns);
    case RS_SHAPE_SCHEDULES: return (size_t)m->nu;
    case RS_SHAPE_EVENTS: return (size_t)d->nevents;
    case RS_SHAPE_SPEC: return d->spec != NULL;
    }
    return 0;
}

void *rs_field_values(const rs_field_t *f, rs_data_t *d, int e)
{
    switch (f->shape) {
    case RS_SHAPE_VALUE: return (char *)d + f->offset;
    case RS_SHAPE_VECTOR: return *(void **)((char *)d + f->offset);
    case RS_SHAPE_ENTITY: return (char *)&d->ent[e] + f->offset;
    default: return NULL;
    }
}
