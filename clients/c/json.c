/* JSON output of protobuf-c messages, generic over their descriptors: nothing here knows the
 * robosim messages, so a field added to the proto shows up in robosim-cli --json by itself. */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void indent(FILE *f, int level)
{
    for (int i = 0; i < level; i++)
        fputs("  ", f);
}

static void write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f); /* UTF-8 passes through; protobuf strings are UTF-8 */
        }
    }
    fputc('"', f);
}

/* State digests (fields "digest", "digests") read as hex, as every tool prints a hash */
static void write_hex(FILE *f, const ProtobufCBinaryData *b)
{
    fputc('"', f);
    for (size_t i = 0; i < b->len; i++)
        fprintf(f, "%02x", b->data[i]);
    fputc('"', f);
}

static void write_base64(FILE *f, const ProtobufCBinaryData *b)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fputc('"', f);
    size_t i = 0;
    for (; i + 2 < b->len; i += 3) {
        unsigned v = (unsigned)b->data[i] << 16 | (unsigned)b->data[i + 1] << 8 | b->data[i + 2];
        fputc(tab[v >> 18 & 63], f);
        fputc(tab[v >> 12 & 63], f);
        fputc(tab[v >> 6 & 63], f);
        fputc(tab[v & 63], f);
    }
    if (i < b->len) {
        unsigned v = (unsigned)b->data[i] << 16;
        if (i + 1 < b->len)
            v |= (unsigned)b->data[i + 1] << 8;
        fputc(tab[v >> 18 & 63], f);
        fputc(tab[v >> 12 & 63], f);
        fputc(i + 1 < b->len ? tab[v >> 6 & 63] : '=', f);
        fputc('=', f);
    }
    fputc('"', f);
}

/* The shortest of %.15g, %.16g, %.17g that reads back as exactly `v` (%.17g always does). */
static void write_double(FILE *f, double v)
{
    if (isnan(v)) {
        fputs("\"nan\"", f);
        return;
    }
    if (isinf(v)) {
        fputs(v > 0 ? "\"inf\"" : "\"-inf\"", f);
        return;
    }
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
}

static void write_message(FILE *f, const ProtobufCMessage *msg, int level);

/* One value of `field`, stored at `p`. */
static void write_value(FILE *f, const ProtobufCFieldDescriptor *field, const void *p, int level)
{
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: fprintf(f, "%" PRId32, *(const int32_t *)p); break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: fprintf(f, "%" PRIu32, *(const uint32_t *)p); break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: fprintf(f, "%" PRId64, *(const int64_t *)p); break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: fprintf(f, "%" PRIu64, *(const uint64_t *)p); break;
    case PROTOBUF_C_TYPE_FLOAT: write_double(f, *(const float *)p); break;
    case PROTOBUF_C_TYPE_DOUBLE: write_double(f, *(const double *)p); break;
    case PROTOBUF_C_TYPE_BOOL: fputs(*(const protobuf_c_boolean *)p ? "true" : "false", f); break;
    case PROTOBUF_C_TYPE_ENUM: {
        int v = *(const int *)p;
        const ProtobufCEnumDescriptor *ed = field->descriptor;
        const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(ed, v);
        if (ev)
            write_string(f, ev->name);
        else
            fprintf(f, "%d", v); /* a value newer than this client's proto */
        break;
    }
    case PROTOBUF_C_TYPE_STRING: write_string(f, *(char *const *)p); break;
    case PROTOBUF_C_TYPE_BYTES:
        if (strcmp(field->name, "digest") == 0 || strcmp(field->name, "digests") == 0)
            write_hex(f, (const ProtobufCBinaryData *)p);
        else
            write_base64(f, (const ProtobufCBinaryData *)p);
        break;
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)p;
        if (sub)
            write_message(f, sub, level);
        else
            fputs("null", f);
        break;
    }
    }
}

static size_t value_size(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: return sizeof(int32_t);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: return sizeof(uint32_t);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: return sizeof(int64_t);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: return sizeof(uint64_t);
    case PROTOBUF_C_TYPE_FLOAT: return sizeof(float);
    case PROTOBUF_C_TYPE_DOUBLE: return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_ENUM: return sizeof(int);
    case PROTOBUF_C_TYPE_STRING: return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE: return sizeof(ProtobufCMessage *);
    }
    return 0;
}

/* Whether a field is present: oneof members only when chosen; proto2-style optional scalars
 * by their has_ flag; everything else always (proto3 defaults are written out). */
static int field_present(const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *field)
{
    const char *base = (const char *)msg;
    if (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        return *(const uint32_t *)(base + field->quantifier_offset) == field->id;
    if (field->label == PROTOBUF_C_LABEL_OPTIONAL && field->quantifier_offset &&
        field->type != PROTOBUF_C_TYPE_STRING && field->type != PROTOBUF_C_TYPE_MESSAGE)
        return *(const protobuf_c_boolean *)(base + field->quantifier_offset) != 0;
    return 1;
}

static void write_message(FILE *f, const ProtobufCMessage *msg, int level)
{
    const ProtobufCMessageDescriptor *d = msg->descriptor;
    const char *base = (const char *)msg;
    int first = 1;
    fputc('{', f);
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *field = &d->fields[i];
        if (!field_present(msg, field))
            continue;
        fputs(first ? "\n" : ",\n", f);
        first = 0;
        indent(f, level + 1);
        write_string(f, field->name);
        fputs(": ", f);
        if (field->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + field->quantifier_offset);
            const char *arr = *(const char *const *)(base + field->offset);
            size_t sz = value_size(field->type);
            int nested = field->type == PROTOBUF_C_TYPE_MESSAGE;
            fputc('[', f);
            for (size_t k = 0; k < n; k++) {
                if (nested) {
                    fputs(k ? ",\n" : "\n", f);
                    indent(f, level + 2);
                } else if (k) {
                    fputs(", ", f);
                }
                write_value(f, field, arr + k * sz, level + 2);
            }
            if (nested && n) {
                fputc('\n', f);
                indent(f, level + 1);
            }
            fputc(']', f);
        } else {
            write_value(f, field, base + field->offset, level + 1);
        }
    }
    if (!first) {
        fputc('\n', f);
        indent(f, level);
    }
    fputc('}', f);
}

int rsc_json_write(FILE *f, const ProtobufCMessage *msg)
{
    if (msg)
        write_message(f, msg, 0);
    else
        fputs("null", f);
    fputc('\n', f);
    return ferror(f) ? -1 : 0;
}
