/* Parsing a JSON document a client sends (motion specifications, task documents) with json-c:
 * one place for the size and depth limits and the errors that say where the text is wrong. */
#ifndef RS_JSON_H
#define RS_JSON_H

#include "rs_errors.h"

#include <json-c/json.h>
#include <stddef.h>

/* Parse `json` (len bytes) as one JSON value, at most max_len bytes and max_depth levels deep.
 * Returns the value (the caller owns it: json_object_put), or NULL with st set: RS_EINVAL for
 * an empty document or one nested deeper than max_depth (json-c's parser is iterative, its
 * json_object_put recursive: the bound keeps the free's recursion short), RS_EEXHAUSTED for
 * one over max_len, RS_EMALFORMED for text that is not JSON or has text after its value (the
 * message names `what` and the byte). */
json_object *rs_json_parse(const char *json, size_t len, const char *what, size_t max_len,
                           int max_depth, rs_status_t *st);

/* The members of a parsed document, each error naming its place `where` ("quantities.d"):
 * all return 0 or RS_EINVAL with st. */

/* Object o has no member but those in keys[0 ... n - 1] (the error lists them). */
int rs_json_check_keys(json_object *o, const char *where, const char *const *keys, int n,
                       rs_status_t *st);

/* Member `key` of o as a non-empty string into *out (NULL when absent or null and not
 * required); the string lives as long as o. */
int rs_json_string(json_object *o, const char *key, const char *where, int required,
                   const char **out, rs_status_t *st);

/* Value v as a finite number into *out. */
int rs_json_as_number(json_object *v, const char *where, double *out, rs_status_t *st);

/* Member `key` of o as a finite number into *out (def when absent and not required). */
int rs_json_number(json_object *o, const char *key, const char *where, int required,
                   double def, double *out, rs_status_t *st);

/* Put "where: " before st's message (an error from a part of the document, placed); returns
 * st's code. */
int rs_json_at(rs_status_t *st, const char *where);

#endif
