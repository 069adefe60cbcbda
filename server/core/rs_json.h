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

#endif
