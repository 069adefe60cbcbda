/* Parsing client JSON documents and reading their members (rs_json.h). */
#include "rs_json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

json_object *rs_json_parse(const char *json, size_t len, const char *what, size_t max_len,
                           int max_depth, rs_status_t *st)
{
    if (!json || len == 0) {
        rs_fail(st, RS_EINVAL, "an empty %s", what);
        return NULL;
    }
    if (len > max_len) {
        rs_fail(st, RS_EEXHAUSTED, "the %s has %zu bytes (at most %zu)", what, len, max_len);
        return NULL;
    }
    json_tokener *tok = json_tokener_new_ex(max_depth);
    if (!tok) {
        rs_fail(st, RS_EEXHAUSTED, "out of memory");
        return NULL;
    }
    json_object *root = json_tokener_parse_ex(tok, json, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (jerr == json_tokener_error_depth) {
        rs_fail(st, RS_EINVAL, "the %s nests objects and arrays deeper than the limit of %d "
                "levels (at byte %zu)", what, max_depth, used);
        json_object_put(root);
        return NULL;
    }
    if (!root || jerr != json_tokener_success) {
        rs_fail(st, RS_EMALFORMED, "the %s is not JSON: %s (at byte %zu)", what,
                jerr == json_tokener_continue ? "the document ends early"
                                              : json_tokener_error_desc(jerr),
                used);
        json_object_put(root);
        return NULL;
    }
    for (size_t k = used; k < len; k++)
        if (json[k] != ' ' && json[k] != '\n' && json[k] != '\t' && json[k] != '\r' && json[k]) {
            rs_fail(st, RS_EMALFORMED, "the %s has text after its JSON (byte %zu)", what, k);
            json_object_put(root);
            return NULL;
        }
    return root;
}

int rs_json_at(rs_status_t *st, const char *where)
{
    char msg[sizeof st->message];
    int n = snprintf(msg, sizeof msg, "%s: ", where);
    if (n > 0 && (size_t)n < sizeof msg)
        memcpy(msg + n, st->message, sizeof msg - (size_t)n - 1);
    msg[sizeof msg - 1] = 0;
    memcpy(st->message, msg, sizeof msg);
    return st->code;
}

int rs_json_check_keys(json_object *o, const char *where, const char *const *keys, int n,
                       rs_status_t *st)
{
    json_object_object_foreach(o, key, val) {
        (void)val;
        int i = 0;
        while (i < n && strcmp(keys[i], key) != 0)
            i++;
        if (i == n) {
            char list[200] = "";
            for (int j = 0; j < n; j++)
                rs_join(list, sizeof list, "%s", keys[j]);
            return rs_fail(st, RS_EINVAL, "%s: unknown item '%s' (known: %s)", where, key, list);
        }
    }
    return 0;
}

int rs_json_string(json_object *o, const char *key, const char *where, int required,
                   const char **out, rs_status_t *st)
{
    json_object *v;
    *out = NULL;
    if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
        if (required)
            return rs_fail(st, RS_EINVAL, "%s: '%s' is required", where, key);
        return 0;
    }
    if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
        return rs_fail(st, RS_EINVAL, "%s.%s: a non-empty string is required", where, key);
    *out = json_object_get_string(v);
    return 0;
}

int rs_json_as_number(json_object *v, const char *where, double *out, rs_status_t *st)
{
    if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
        return rs_fail(st, RS_EINVAL, "%s: a number is required", where);
    *out = json_object_get_double(v);
    if (!isfinite(*out))
        return rs_fail(st, RS_EINVAL, "%s: the number must be finite", where);
    return 0;
}

int rs_json_number(json_object *o, const char *key, const char *where, int required,
                   double def, double *out, rs_status_t *st)
{
    json_object *v;
    *out = def;
    if (!json_object_object_get_ex(o, key, &v)) {
        if (required)
            return rs_fail(st, RS_EINVAL, "%s: '%s' is required", where, key);
        return 0;
    }
    char w[160];
    snprintf(w, sizeof w, "%s.%s", where, key);
    return rs_json_as_number(v, w, out, st);
}
