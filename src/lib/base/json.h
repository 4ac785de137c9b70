/* base/json — the small readers and writers over json-c that records,
 * manifests and the remote client share: typed lookups that answer NULL
 * (or the default) for a missing key or a value of another type, never
 * crash on either. Not in abox-init (no json-c there). */
#ifndef ABOX_BASE_JSON_H
#define ABOX_BASE_JSON_H

#include <json-c/json.h>
#include <stdbool.h>

/* o[k] when it is of type t; NULL otherwise (o may be NULL). */
json_object *js_get(json_object *o, const char *k, json_type t);
/* o[k] as a string owned by o, or NULL. */
const char *js_str(json_object *o, const char *k);
/* o[k] as a malloc'd copy, or NULL. */
char *js_strdup(json_object *o, const char *k);
/* o[k] as an int (proto3 JSON may send integers as strings), else dflt. */
int js_int(json_object *o, const char *k, int dflt);
/* o[k], an array, as a NULL-terminated malloc'd strv of its strings
 * (others skipped); NULL when absent or out of memory. */
char **js_strv(json_object *o, const char *k);
/* o[k] = v, unless v is NULL. */
void js_put_str(json_object *o, const char *k, const char *v);

#endif
