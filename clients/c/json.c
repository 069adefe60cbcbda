/* JSON output and input of protobuf-c messages, generic over their descriptors: nothing here
 * knows the robosim messages, so a field added to the proto shows up in robosim-cli --json, and
 * can be set through robosim-cli call, by itself. Input is parsed by json-c; bytes are decoded
 * by libsodium. */
#include "json.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <sodium.h>
#include <stdarg.h>
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

/* ---- input: JSON -> message ---------------------------------------------------------------- */

typedef struct reader {
    char *err;
    size_t errlen;
} reader_t;

static int bad(reader_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(reader_t *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The fields of d, for a message that names them ("steps, duration, commands, ..."). */
static void field_names(const ProtobufCMessageDescriptor *d, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < d->n_fields && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", d->fields[i].name);
    if (!d->n_fields)
        snprintf(buf, len, "none");
}

static const char *type_name(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: return "a 32-bit integer";
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: return "an unsigned 32-bit integer";
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: return "a 64-bit integer";
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: return "an unsigned 64-bit integer";
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE: return "a number (or \"inf\", \"-inf\", \"nan\")";
    case PROTOBUF_C_TYPE_BOOL: return "true or false";
    case PROTOBUF_C_TYPE_ENUM: return "an enum name or number";
    case PROTOBUF_C_TYPE_STRING: return "a string";
    case PROTOBUF_C_TYPE_BYTES: return "a base64 string (hex for digests)";
    case PROTOBUF_C_TYPE_MESSAGE: return "an object";
    }
    return "?";
}

/* An integer from a JSON integer or a string of one, within [lo, hi] (signed) or [0, uhi]. */
static int read_int(reader_t *r, const char *where, json_object *v, int is_signed, int64_t lo,
                    int64_t hi, uint64_t uhi, void *out, size_t size)
{
    const char *s = json_object_get_string(v);
    int type = json_object_get_type(v);
    if (type != json_type_int && type != json_type_string)
        return bad(r, "%s: expected an integer, got %s", where, s);
    char *end;
    errno = 0;
    if (is_signed) {
        long long x = strtoll(s, &end, 10);
        if (end == s || *end || errno || x < lo || x > hi)
            return bad(r, "%s: expected an integer in [%" PRId64 ", %" PRId64 "], got %s",
                       where, lo, hi, s);
        if (size == 4)
            *(int32_t *)out = (int32_t)x;
        else
            *(int64_t *)out = (int64_t)x;
    } else {
        while (*s == ' ')
            s++;
        unsigned long long x = strtoull(s, &end, 10);
        if (*s == '-' || end == s || *end || errno || x > uhi)
            return bad(r, "%s: expected an integer in [0, %" PRIu64 "], got %s", where, uhi,
                       json_object_get_string(v));
        if (size == 4)
            *(uint32_t *)out = (uint32_t)x;
        else
            *(uint64_t *)out = (uint64_t)x;
    }
    return 0;
}

static int read_message(reader_t *r, const char *where, json_object *obj,
                        const ProtobufCMessageDescriptor *d, ProtobufCMessage **out);

/* The value of ed called `name`, or, when no value is, the one value whose name ends in
 * "_NAME" (STATE for STATE_PART_STATE, as the CLI's --parts reads it); NULL if none. */
static const ProtobufCEnumValue *enum_by_name(const ProtobufCEnumDescriptor *ed, const char *name)
{
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value_by_name(ed, name);
    if (ev)
        return ev;
    size_t n = strlen(name);
    for (unsigned i = 0; n && i < ed->n_values; i++) {
        size_t m = strlen(ed->values[i].name);
        if (m > n && ed->values[i].name[m - n - 1] == '_' &&
            strcmp(ed->values[i].name + m - n, name) == 0) {
            if (ev)
                return NULL; /* two values end so: ambiguous */
            ev = &ed->values[i];
        }
    }
    return ev;
}

/* One value of field f from v into p (a slot of value_size(f->type) bytes). */
static int read_value(reader_t *r, const char *where, const ProtobufCFieldDescriptor *f,
                      json_object *v, void *p)
{
    int type = json_object_get_type(v);
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return read_int(r, where, v, 1, INT32_MIN, INT32_MAX, 0, p, 4);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: return read_int(r, where, v, 0, 0, 0, UINT32_MAX, p, 4);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        return read_int(r, where, v, 1, INT64_MIN, INT64_MAX, 0, p, 8);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: return read_int(r, where, v, 0, 0, 0, UINT64_MAX, p, 8);
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE: {
        double x;
        const char *s = json_object_get_string(v);
        if (type == json_type_int || type == json_type_double)
            x = json_object_get_double(v);
        else if (type == json_type_string && strcmp(s, "inf") == 0)
            x = INFINITY;
        else if (type == json_type_string && strcmp(s, "-inf") == 0)
            x = -INFINITY;
        else if (type == json_type_string && strcmp(s, "nan") == 0)
            x = NAN;
        else
            return bad(r, "%s: expected %s, got %s", where, type_name(f), s);
        if (f->type == PROTOBUF_C_TYPE_FLOAT)
            *(float *)p = (float)x;
        else
            *(double *)p = x;
        return 0;
    }
    case PROTOBUF_C_TYPE_BOOL:
        if (type != json_type_boolean)
            return bad(r, "%s: expected true or false, got %s", where,
                       json_object_get_string(v));
        *(protobuf_c_boolean *)p = json_object_get_boolean(v);
        return 0;
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumDescriptor *ed = f->descriptor;
        const ProtobufCEnumValue *ev = NULL;
        if (type == json_type_string)
            ev = enum_by_name(ed, json_object_get_string(v));
        else if (type == json_type_int)
            ev = protobuf_c_enum_descriptor_get_value(ed, json_object_get_int(v));
        if (!ev) {
            char names[512] = "";
            size_t used = 0;
            for (unsigned i = 0; i < ed->n_values && used < sizeof names; i++)
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                         i ? ", " : "", ed->values[i].name);
            return bad(r, "%s: %s is not a %s; its values: %s", where,
                       json_object_get_string(v), ed->short_name, names);
        }
        *(int *)p = ev->value;
        return 0;
    }
    case PROTOBUF_C_TYPE_STRING: {
        if (type != json_type_string)
            return bad(r, "%s: expected a string, got %s", where, json_object_get_string(v));
        char *s = strdup(json_object_get_string(v));
        if (!s)
            return bad(r, "out of memory");
        *(char **)p = s;
        return 0;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        if (type != json_type_string)
            return bad(r, "%s: expected %s, got %s", where, type_name(f),
                       json_object_get_string(v));
        const char *s = json_object_get_string(v);
        size_t n = strlen(s), len = 0;
        unsigned char *b = malloc(n + 1);
        if (!b)
            return bad(r, "out of memory");
        int hex = strcmp(f->name, "digest") == 0 || strcmp(f->name, "digests") == 0;
        int rc = hex ? sodium_hex2bin(b, n + 1, s, n, NULL, &len, NULL)
                     : sodium_base642bin(b, n + 1, s, n, NULL, &len, NULL,
                                         sodium_base64_VARIANT_ORIGINAL);
        if (rc != 0) {
            free(b);
            return bad(r, "%s: expected %s, got a string that is not %s", where,
                       type_name(f), hex ? "hex" : "base64");
        }
        ((ProtobufCBinaryData *)p)->data = b;
        ((ProtobufCBinaryData *)p)->len = len;
        return 0;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        if (type == json_type_null)
            return 0;
        return read_message(r, where, v, f->descriptor, (ProtobufCMessage **)p);
    }
    return bad(r, "%s: a field of an unknown type", where);
}

/* The members of f's oneof: those fields of d sharing its case slot. */
static const char *oneof_chosen(const ProtobufCMessageDescriptor *d, const char *base,
                                const ProtobufCFieldDescriptor *f)
{
    uint32_t chosen = *(const uint32_t *)(base + f->quantifier_offset);
    if (!chosen)
        return NULL;
    const ProtobufCFieldDescriptor *c = protobuf_c_message_descriptor_get_field(d, chosen);
    return c ? c->name : "?";
}

static int read_message(reader_t *r, const char *where, json_object *obj,
                        const ProtobufCMessageDescriptor *d, ProtobufCMessage **out)
{
    if (json_object_get_type(obj) != json_type_object)
        return bad(r, "%s: expected an object (a %s), got %s", where, d->short_name,
                   json_object_get_string(obj));
    ProtobufCMessage *msg = malloc(d->sizeof_message);
    if (!msg)
        return bad(r, "out of memory");
    protobuf_c_message_init(d, msg);
    *out = msg; /* freed by the caller's protobuf_c_message_free_unpacked, also on error */
    char *base = (char *)msg;
    json_object_object_foreach(obj, key, v)
    {
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, key);
        char here[256];
        snprintf(here, sizeof here, "%s%s%s", where, *where ? "." : "", key);
        if (!f) {
            char names[512];
            field_names(d, names, sizeof names);
            return bad(r, "%s: %s has no field '%s'; its fields: %s", here, d->short_name, key,
                       names);
        }
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            const char *other = oneof_chosen(d, base, f);
            if (other)
                return bad(r, "%s: '%s' and '%s' are alternatives (a oneof); give one", here,
                           other, key);
            *(uint32_t *)(base + f->quantifier_offset) = f->id;
        }
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            if (json_object_get_type(v) != json_type_array)
                return bad(r, "%s: expected a list of %s, got %s", here, type_name(f),
                           json_object_get_string(v));
            size_t n = json_object_array_length(v), sz = value_size(f->type);
            char *arr = calloc(n ? n : 1, sz);
            if (!arr)
                return bad(r, "out of memory");
            *(char **)(base + f->offset) = arr;
            *(size_t *)(base + f->quantifier_offset) = 0;
            for (size_t k = 0; k < n; k++) {
                char item[300];
                snprintf(item, sizeof item, "%s[%zu]", here, k);
                json_object *e = json_object_array_get_idx(v, k);
                if (f->type == PROTOBUF_C_TYPE_MESSAGE && json_object_get_type(e) == json_type_null)
                    return bad(r, "%s: expected an object, got null", item);
                *(size_t *)(base + f->quantifier_offset) = k + 1; /* freed with the rest */
                if (read_value(r, item, f, e, arr + k * sz) < 0)
                    return -1;
            }
            continue;
        }
        if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
            !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) && f->type != PROTOBUF_C_TYPE_STRING &&
            f->type != PROTOBUF_C_TYPE_MESSAGE)
            *(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
        if (read_value(r, here, f, v, base + f->offset) < 0)
            return -1;
    }
    return 0;
}

ProtobufCMessage *rsc_json_read(const char *text, const ProtobufCMessageDescriptor *d, char *err,
                                size_t errlen)
{
    reader_t r = {err, errlen};
    enum json_tokener_error jerr;
    json_object *obj = json_tokener_parse_verbose(text ? text : "", &jerr);
    if (!obj) {
        bad(&r, "not JSON (%s): %s", json_tokener_error_desc(jerr), text ? text : "");
        return NULL;
    }
    ProtobufCMessage *msg = NULL;
    int rc = read_message(&r, "", obj, d, &msg);
    json_object_put(obj);
    if (rc < 0) {
        if (msg)
            protobuf_c_message_free_unpacked(msg, NULL);
        return NULL;
    }
    return msg;
}
