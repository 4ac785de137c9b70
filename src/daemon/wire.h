/* wire — parsers of aboxd's untrusted input (see wire.c). */
#ifndef ABOX_DAEMON_WIRE_H
#define ABOX_DAEMON_WIRE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <abox/common.h>

#define WIRE_MAX_JSON_DEPTH 32

/* One uncompressed Connect envelope that is the whole body: *msg points
 * into buf. -1 with the reason in why. */
int connect_unframe(const char *buf, size_t len, const char **msg, size_t *mlen, char *why, size_t whyn);
/* A JSON object and nothing else, at most WIRE_MAX_JSON_DEPTH deep. */
json_object *json_parse_object(const char *buf, size_t len, char *why, size_t whyn);
/* Strict readers of field k of object o: 0 when it is absent or null, 1
 * with *out set, -1 with why naming the field when it has another type
 * (or, for integers, lies outside min-max). Nothing is coerced. */
int json_get_string(json_object *o, const char *k, const char **out, char *why, size_t whyn);
int json_get_int(json_object *o, const char *k, int64_t min, int64_t max, int64_t *out, char *why, size_t whyn);
int json_get_bool(json_object *o, const char *k, bool *out, char *why, size_t whyn);
/* Bounds of a map of strings (metadata, envVars): reserved, when set, is
 * a name prefix clients may not use. */
struct wire_map_bounds {
	const char *what;
	const char *reserved;
	size_t entries, name_bytes, value_bytes, total_bytes;
};
/* Field b->what of o (an object of strings, or absent) as "k=v" entries,
 * NULL-terminated with room for extra more; NULL with why naming the
 * bound or the entry. Free with abox_strv_free. */
char **json_string_map(json_object *o, const struct wire_map_bounds *b, size_t extra, char *why, size_t whyn);
/* The list filter "metadata=" (encoded twice by the SDKs) as "k=v"
 * entries, abox's own names dropped, plus extra (may be NULL).
 * NULL-terminated, malloc'd. */
char **metadata_query(const char *raw, const char *extra);
/* path as envd reads it for a user whose home is home: "~", "~/x" and
 * relative paths below it (init resolves them the same way; aboxd needs
 * the absolute form to name watch events). buf holds it when one is
 * made. */
const char *envd_user_path(const char *home, const char *path, char *buf, size_t n);
/* Host "<port>-<id>.<domain>" -> id and port. */
bool sandbox_host(const char *host, char id[ABOX_ID_LEN + 1], unsigned *port);
bool sandbox_id_ok(const char *id);
/* "Basic base64(user:)" -> "user" or "root" (default "user"); -1 for
 * another name or bad base64. */
int basic_user(const char *auth, char *user, size_t n);

#endif
