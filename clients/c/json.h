/* JSON output of any protobuf-c message, written once by walking its descriptors, for
 * robosim-cli --json. */
#ifndef RSC_JSON_H
#define RSC_JSON_H

#include <stdio.h>

#include <protobuf-c/protobuf-c.h>

/* Write `msg` to `f` as one JSON object (then a newline), indented by two spaces per level.
 * Field names are the proto names (snake_case); every field of the message is written, with
 * its default when unset, except oneof members that are not the chosen case. Enums are written
 * by name, 64-bit integers as numbers, doubles as the shortest decimal that reads back to the
 * same double (at most %.17g), non-finite doubles as the strings "inf", "-inf", "nan", bytes as
 * base64 strings, unset sub-messages as null. Returns 0, or -1 if writing failed. */
int rsc_json_write(FILE *f, const ProtobufCMessage *msg);

/* The message of type `d` that the JSON object `text` describes, by the same names and forms
 * rsc_json_write writes (proto field names; enums by name or number; integers as numbers or
 * decimal strings; doubles as numbers or "inf", "-inf", "nan"; bytes as base64, digests as
 * hex; nested messages as objects, repeated fields as lists; fields left out keep their
 * defaults). NULL when `text` is not such an object, with the reason in err (errlen bytes):
 * the field's path, and for an unknown field name the message's fields. Free the result with
 * protobuf_c_message_free_unpacked(msg, NULL). */
ProtobufCMessage *rsc_json_read(const char *text, const ProtobufCMessageDescriptor *d, char *err,
                                size_t errlen);

#endif
