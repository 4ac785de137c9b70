/* base/json.c — see json.h. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/json.h"

json_object *js_get(json_object *o, const char *k, json_type t)
{
	json_object *v;
	return o && json_object_object_get_ex(o, k, &v) && json_object_is_type(v, t) ? v : NULL;
}

const char *js_str(json_object *o, const char *k)
{
	json_object *v = js_get(o, k, json_type_string);
	return v ? json_object_get_string(v) : NULL;
}

char *js_strdup(json_object *o, const char *k)
{
	const char *s = js_str(o, k);
	return s ? strdup(s) : NULL;
}

int js_int(json_object *o, const char *k, int dflt)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, k, &v))
		return dflt;
	return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_string)
		       ? json_object_get_int(v)
		       : dflt;
}

char **js_strv(json_object *o, const char *k)
{
	json_object *a = js_get(o, k, json_type_array);
	if (!a)
		return NULL;
	size_t n = json_object_array_length(a);
	char **v = calloc(n + 1, sizeof(char *));
	for (size_t i = 0, j = 0; v && i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		if (json_object_is_type(e, json_type_string) && (v[j] = strdup(json_object_get_string(e))))
			j++;
	}
	return v;
}

void js_put_str(json_object *o, const char *k, const char *v)
{
	if (v)
		json_object_object_add(o, k, json_object_new_string(v));
}

json_object *js_parse_object(const char *text, int depth)
{
	json_tokener *tok = json_tokener_new_ex(depth);
	int len = (int)strlen(text);
	json_object *o = tok ? json_tokener_parse_ex(tok, text, len) : NULL;
	bool whole = tok && json_tokener_get_error(tok) == json_tokener_success;
	/* the tokener stops after the first value: what follows it may be
	 * white space, nothing else ("{} {}" is two documents) */
	for (size_t i = whole ? json_tokener_get_parse_end(tok) : 0; whole && i < (size_t)len; i++)
		whole = strchr(" \t\r\n", text[i]) != NULL;
	json_tokener_free(tok);
	if (!o || !whole || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

json_object *js_strv_array(char *const *v)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && v && v[i]; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

int js_load(const char *path, size_t max, json_object **out, abox_error *err, const char *missing, ...)
{
	*out = NULL;
	_cleanup_free_ char *text = NULL;
	int r = read_file_at(AT_FDCWD, path, max, &text, NULL);
	if (r == -ENOENT && missing) {
		va_list ap;
		va_start(ap, missing);
		r = abox_error_vset(err, ENOENT, false, missing, ap);
		va_end(ap);
		return r;
	}
	if (r == -ENOENT)
		return r;
	if (r < 0)
		return abox_error_set(err, -r, "read '%s'", path);
	json_object *o = json_tokener_parse(text);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return abox_error_setx(err, EBADMSG, "'%s' is damaged", path);
	}
	*out = o;
	return 0;
}

/* The strings of array a that are K=V (a name before the '='). */
static char **env_strv(json_object *a)
{
	if (!json_object_is_type(a, json_type_array))
		return NULL;
	size_t n = json_object_array_length(a), k = 0;
	char **v = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; v && i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : NULL;
		if (s && strchr(s, '=') && s[0] != '=')
			v[k++] = strdup(s);
	}
	return v;
}

void js_fields_get(json_object *o, void *rec, const struct js_field *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *p = (char *)rec + f[i].off;
		json_object *v;
		if (!json_object_object_get_ex(o, f[i].key, &v))
			continue;
		unsigned k = f[i].kind & JS_KIND;
		/* numbers: a value of another type (or a negative one where a
		 * count belongs) reads as 0 */
		uint64_t u = json_object_is_type(v, json_type_int) ? json_object_get_uint64(v) : 0;
		switch (k) {
		case JS_STR:
			*(char **)p = js_strdup(o, f[i].key);
			break;
		case JS_STRV:
			*(char ***)p = js_strv(o, f[i].key);
			break;
		case JS_ENV:
			*(char ***)p = env_strv(v);
			break;
		case JS_FLAG:
			*(bool *)p = json_object_get_boolean(v);
			break;
		case JS_INT:
			*(int *)p = (int)u;
			break;
		case JS_U16:
			*(uint16_t *)p = (uint16_t)u;
			break;
		case JS_U32:
			*(uint32_t *)p = (uint32_t)u;
			break;
		case JS_U64:
			*(uint64_t *)p = u;
			break;
		case JS_I64:
			*(int64_t *)p = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
			break;
		}
	}
}

/* A field of an unsigned kind as a uint64_t. */
static uint64_t unsigned_at(unsigned k, const char *p)
{
	return k == JS_U16 ? *(const uint16_t *)p : k == JS_U32 ? *(const uint32_t *)p : *(const uint64_t *)p;
}

void js_fields_put(json_object *o, const void *rec, const struct js_field *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *p = (const char *)rec + f[i].off;
		unsigned k = f[i].kind & JS_KIND;
		bool keep0 = !(f[i].kind & JS_OMIT0);
		json_object *v = NULL;
		if (k == JS_STR) {
			const char *s = *(char *const *)p;
			v = s ? json_object_new_string(s) : NULL;
		} else if (k == JS_STRV || k == JS_ENV) {
			char *const *sv = *(char **const *)p;
			v = sv || keep0 ? js_strv_array(sv) : NULL;
		} else if (k == JS_FLAG) {
			v = *(const bool *)p ? json_object_new_boolean(1) : NULL;
		} else if (k == JS_INT || k == JS_I64) {
			int64_t x = k == JS_INT ? *(const int *)p : *(const int64_t *)p;
			v = x || keep0 ? json_object_new_int64(x) : NULL;
		} else {
			uint64_t x = unsigned_at(k, p);
			v = x || keep0 ? json_object_new_uint64(x) : NULL;
		}
		if (v)
			json_object_object_add(o, f[i].key, v);
	}
}

void js_fields_free(void *rec, const struct js_field *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *p = (char *)rec + f[i].off;
		unsigned k = f[i].kind & JS_KIND;
		if (k == JS_STR) {
			free(*(char **)p);
			*(char **)p = NULL;
		} else if (k == JS_STRV || k == JS_ENV) {
			strv_free(*(char ***)p);
			*(char ***)p = NULL;
		}
	}
}
