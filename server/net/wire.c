/* String fields on the wire. protobuf-c hands a string field to the handlers as a C string
 * without its length, so "finger\0junk" would arrive as "finger": a request quietly read as
 * another. rs_wire_check_strings walks the serialized request with the descriptors protobuf-c
 * generates and refuses any string field holding a NUL or invalid UTF-8, naming the field. */
#include "rs_wire.h"

#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 32 /* robosim's messages nest 4 deep */

typedef struct walk {
    const uint8_t *p, *end;
} walk_t;

int rs_wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

static int varint(walk_t *w, uint64_t *v)
{
    return rs_wire_varint(&w->p, w->end, v);
}

/* Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF). */
static int utf8_ok(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint64_t word;
        if (n - i >= 8 && (memcpy(&word, s + i, 8), !(word & 0x8080808080808080ull))) {
            i += 8; /* eight ASCII bytes (tokens, names): the common case */
            continue;
        }
        uint8_t c = s[i];
        size_t len;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            len = 2, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        if (n - i < len)
            return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += len;
    }
    return 1;
}

/* Where the walk is: the field being read at each depth and which of its occurrences, so the
 * path that names a bad string (e.g. "create_world.params[2].name") is written only when one
 * is found. */
typedef struct place {
    const ProtobufCFieldDescriptor *f;
    unsigned index;
    const struct place *up;
} place_t;

/* at's path into buf (cap bytes). */
static void path_of(const place_t *at, char *buf, size_t cap)
{
    const place_t *chain[MAX_DEPTH + 2];
    int n = 0;
    for (; at && n < MAX_DEPTH + 2; at = at->up)
        chain[n++] = at;
    size_t used = 0;
    buf[0] = '\0';
    while (n-- > 0 && used < cap) {
        const ProtobufCFieldDescriptor *f = chain[n]->f;
        int w = f->label == PROTOBUF_C_LABEL_REPEATED
                    ? snprintf(buf + used, cap - used, "%s%s[%u]", used ? "." : "", f->name,
                               chain[n]->index)
                    : snprintf(buf + used, cap - used, "%s%s", used ? "." : "", f->name);
        used += w > 0 ? (size_t)w : 0;
    }
}

static int walk_message(const ProtobufCMessageDescriptor *d, walk_t w, const place_t *up,
                        int depth, rs_status_t *st)
{
    if (depth > MAX_DEPTH)
        return rs_fail(st, RS_EMALFORMED, "the request nests messages more than %d deep",
                       MAX_DEPTH);
    unsigned seen[64] = {0}; /* occurrences of each field, for the index in the path */
    while (w.p < w.end) {
        uint64_t tag, len;
        if (varint(&w, &tag) < 0)
            return 0; /* protobuf-c accepted the bytes; nothing here is a string */
        const ProtobufCFieldDescriptor *f =
            tag >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3))
                                   : NULL;
        switch (tag & 7) {
        case PROTOBUF_C_WIRE_TYPE_VARINT:
            if (varint(&w, &len) < 0)
                return 0;
            continue;
        case PROTOBUF_C_WIRE_TYPE_64BIT: w.p += (size_t)(w.end - w.p) < 8 ? (size_t)(w.end - w.p) : 8; continue;
        case PROTOBUF_C_WIRE_TYPE_32BIT: w.p += (size_t)(w.end - w.p) < 4 ? (size_t)(w.end - w.p) : 4; continue;
        case PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED: break;
        default: return 0;
        }
        if (varint(&w, &len) < 0 || len > (uint64_t)(w.end - w.p))
            return 0;
        walk_t sub = {w.p, w.p + len};
        w.p += len;
        if (!f || (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE))
            continue;
        unsigned k = (unsigned)(f - d->fields);
        place_t here = {f, k < 64 ? seen[k] : 0, up};
        if (k < 64)
            seen[k]++;
        if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
            int rc = walk_message(f->descriptor, sub, &here, depth + 1, st);
            if (rc < 0)
                return rc;
            continue;
        }
        const void *nul = memchr(sub.p, 0, (size_t)(sub.end - sub.p));
        int utf8 = nul || utf8_ok(sub.p, (size_t)(sub.end - sub.p));
        if (nul || !utf8) {
            char path[200];
            path_of(&here, path, sizeof path);
            if (nul)
                return rs_fail(st, RS_EINVAL,
                               "string field %s holds a NUL byte at offset %zu; strings may not "
                               "contain NUL (it would cut the string short)",
                               path, (size_t)((const uint8_t *)nul - sub.p));
            return rs_fail(st, RS_EINVAL, "string field %s is not valid UTF-8", path);
        }
    }
    return 0;
}

int rs_wire_check_strings(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                          rs_status_t *st)
{
    walk_t w = {buf, buf + len};
    return walk_message(d, w, NULL, 0, st);
}

int rs_wire_next(const uint8_t **p, const uint8_t *end, uint32_t *num, uint32_t *type,
                 uint64_t *v, const uint8_t **sub, const uint8_t **subend)
{
    walk_t w = {*p, end};
    uint64_t tag;
    *sub = *subend = NULL;
    *v = 0;
    if (w.p >= end)
        return 0;
    if (varint(&w, &tag) < 0)
        return -1;
    *num = (uint32_t)(tag >> 3);
    *type = (uint32_t)(tag & 7);
    if (*type == 0) {
        if (varint(&w, v) < 0)
            return -1;
    } else if (*type == 2) {
        if (varint(&w, v) < 0 || *v > (uint64_t)(end - w.p))
            return -1;
        *sub = w.p;
        *subend = w.p + *v;
        w.p += *v;
    } else if (*type == 1 || *type == 5) {
        size_t skip = *type == 1 ? 8 : 4;
        if ((size_t)(end - w.p) < skip)
            return -1;
        w.p += skip;
    } else {
        return -1;
    }
    *p = w.p;
    return 1;
}

size_t rs_wire_put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        if (p)
            p[n] = b | (v ? 0x80 : 0);
        n++;
    } while (v);
    return n;
}

uint64_t rs_wire_last_varint(const uint8_t *buf, size_t len, uint32_t num)
{
    const uint8_t *p = buf, *end = buf + len, *sub, *subend;
    uint32_t n, type;
    uint64_t v, last = 0;
    int r;
    while ((r = rs_wire_next(&p, end, &n, &type, &v, &sub, &subend)) == 1)
        if (n == num && type == 0)
            last = v;
    return r < 0 ? 0 : last;
}
