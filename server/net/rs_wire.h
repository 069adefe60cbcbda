/* Checks on a serialized protobuf message that protobuf-c's unpack does not make. */
#ifndef RS_WIRE_H
#define RS_WIRE_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "rs_errors.h"

/* Walk the message of type d in buf (len bytes, already accepted by protobuf-c's unpack) and
 * check every string field, nested messages included: 0, or RS_EINVAL when one holds a NUL
 * byte or is not valid UTF-8, the message naming the field as a path
 * ("create_world.params[3].name"). */
int rs_wire_check_strings(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                          rs_status_t *st);

/* The next top-level field of a serialized message at *p (before end), *p moved past it: its
 * number and wire type, its value (varint; a length-delimited field's length) and, for a
 * length-delimited one, its bytes [*sub, *subend). 1, 0 at the end, -1 malformed. */
int rs_wire_next(const uint8_t **p, const uint8_t *end, uint32_t *num, uint32_t *type,
                 uint64_t *v, const uint8_t **sub, const uint8_t **subend);

/* The varint at *p (before end) in *v, *p moved past it: 0, or -1 when it runs past end or
 * over ten bytes. */
int rs_wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

/* The value of the last varint field numbered `num` at the top level of the message in buf
 * (len bytes), as protobuf-c keeps it: 0 when it has none or cannot be read. */
uint64_t rs_wire_last_varint(const uint8_t *buf, size_t len, uint32_t num);

/* Write v as a varint at p (p NULL: only count); the bytes it takes. */
size_t rs_wire_put_varint(uint8_t *p, uint64_t v);

#endif
