/* base/json — the small readers and writers over json-c that records,
 * manifests and the remote client share: typed lookups that answer NULL
 * (or the default) for a missing key or a value of another type, never
 * crash on either. Not in abox-init (no json-c there). */
#ifndef ABOX_BASE_JSON_H
#define ABOX_BASE_JSON_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include <abox/error.h>

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
/* text as one JSON object, nested at most depth deep, with nothing after
 * it; NULL for anything else (the caller puts it). */
json_object *js_parse_object(const char *text, int depth);
/* v (NULL: none) as a JSON array of strings. */
json_object *js_strv_array(char *const *v);

/* The file path (at most max bytes) parsed as one JSON object into *out,
 * which the caller puts. Errors: -ENOENT when there is no such file, said
 * in err by the format missing (NULL: not said, nothing is set); else
 * -errno said as "read 'PATH'", or -EBADMSG "'PATH' is damaged" for
 * anything but one JSON object. */
int js_load(const char *path, size_t max, json_object **out, abox_error *err, const char *missing, ...)
	__attribute__((format(printf, 5, 6)));

/* A record kept as a JSON object, described once by a table of its
 * fields (key, offsetof, kind): the record's reader, writer and free
 * walk the same table, so the three never disagree about a field. */
enum js_kind {
	JS_STR, /* char *; absent when NULL */
	JS_STRV, /* char **, an array of strings (others skipped on read) */
	JS_ENV, /* char **, as JS_STRV but only K=V strings are read */
	JS_FLAG, /* bool; written only when true */
	JS_INT, /* int, read as a non-negative integer (else 0) */
	JS_U16, /* uint16_t */
	JS_U32, /* uint32_t (also unsigned) */
	JS_U64, /* uint64_t */
	JS_I64, /* int64_t */
	JS_KIND = 0xff,
	JS_OMIT0 = 0x100, /* with a number or JS_STRV/JS_ENV: absent when 0 or NULL */
};
struct js_field {
	const char *key;
	size_t off;
	unsigned kind; /* enum js_kind, with JS_OMIT0 */
};
/* Fills the fields of rec that o holds: a missing one is left as it was
 * (the caller zeroes rec first), a mistyped one reads as 0 or NULL. */
void js_fields_get(json_object *o, void *rec, const struct js_field *f, size_t n);
/* Adds rec's fields to o, in the table's order. */
void js_fields_put(json_object *o, const void *rec, const struct js_field *f, size_t n);
/* Frees rec's strings and string arrays and sets them to NULL. */
void js_fields_free(void *rec, const struct js_field *f, size_t n);

#endif
