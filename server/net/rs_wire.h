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

#endif
