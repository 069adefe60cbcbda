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

#endif
