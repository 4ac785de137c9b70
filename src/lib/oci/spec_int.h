/* oci/spec_int — what spec.c and spec_linux.c share: the parse context
 * (errors name the config and the JSON path) and typed readers. */
#ifndef ABOX_OCI_SPEC_INT_H
#define ABOX_OCI_SPEC_INT_H

#include <json-c/json.h>

#include "oci/spec.h"

#define OCI_MAX_CONFIG (4 << 20)
#define OCI_MAX_STR 65536
#define OCI_PATH 256 /* a JSON path in an error */

struct oci_pc {
	const char *source;
	abox_error *err;
};

/* a JSON path for an error, cut short if it must be */
void oci_pathf(char *out, size_t n, const char *fmt, ...) _printf_(3, 4);
int oci_fail(struct oci_pc *c, const char *path, const char *fmt, ...) _printf_(3, 4);
int oci_want(struct oci_pc *c, json_object *v, json_type t, const char *path, const char *what);
/* a string (without NUL bytes, at most OCI_MAX_STR) as a malloc'd copy */
int oci_str(struct oci_pc *c, json_object *v, const char *path, bool empty_ok, char **out);
int oci_uint(struct oci_pc *c, json_object *v, const char *path, uint64_t max, uint64_t *out);
int oci_int(struct oci_pc *c, json_object *v, const char *path, int64_t min, int64_t max, int64_t *out);
/* an array of at most max strings as a NULL-terminated strv */
int oci_strv(struct oci_pc *c, json_object *v, const char *path, size_t max, bool empty_ok, char ***out);
/* an object of strings as "key=value" entries */
int oci_kv(struct oci_pc *c, json_object *v, const char *path, char ***out);

void oci_resources_init(struct oci_resources *r);
int oci_parse_mounts(struct oci_pc *c, json_object *v, struct oci_spec *s);
int oci_parse_linux(struct oci_pc *c, json_object *v, struct oci_spec *s);

#endif
