/* Parsing client JSON documents (rs_json.h). */
#include "rs_json.h"

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
