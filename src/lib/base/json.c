/* base/json.c — see json.h. */
#include <stdlib.h>
#include <string.h>

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
