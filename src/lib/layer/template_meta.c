/* layer/template_meta.c — see template_meta.h. */
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/json.h"
#include "layer/template_meta.h"

#define META_MAX_BYTES (1u << 20)

#define F(key, field, kind)                                                                                  \
	{                                                                                                    \
		key, offsetof(struct template_meta, field), kind                                             \
	}
/* Every field of a version's metadata, in the order its .json has them. */
static const struct js_field fields[] = {
	F("source", source, JS_STR),
	F("createdMs", created_ms, JS_I64),
	F("entries", entries, JS_U64),
	F("bytes", bytes, JS_U64),
	F("dropped", dropped, JS_U64),
	F("user", user, JS_STR),
	F("workdir", workdir, JS_STR),
	F("env", env, JS_ENV),
	F("startCmd", start_cmd, JS_STR),
	F("readyCmd", ready_cmd, JS_STR),
	F("readyPort", ready_port, JS_U16 | JS_OMIT0),
	F("readyTimeoutMs", ready_timeout_ms, JS_U32 | JS_OMIT0),
	F("cmd", cmd, JS_STRV | JS_OMIT0),
};
#undef F

int template_meta_read(const char *version_path, struct template_meta *m, abox_error *err)
{
	memset(m, 0, sizeof(*m));
	char p[4200];
	safe_snprintf(p, sizeof(p), "%s.json", version_path);
	json_object *o;
	int r = js_load(p, META_MAX_BYTES, &o, err, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		abox_error_prefix(err, "template");
		return r;
	}
	js_fields_get(o, m, fields, ELEMENTSOF(fields));
	json_object_put(o);
	return 0;
}

int template_meta_write(const char *version_path, const struct template_meta *m, abox_error *err)
{
	json_object *o = json_object_new_object();
	js_fields_put(o, m, fields, ELEMENTSOF(fields));
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);

	char p[4200], tmp[4300];
	safe_snprintf(p, sizeof(p), "%s.json", version_path);
	safe_snprintf(tmp, sizeof(tmp), "%s.json.tmp", version_path);
	int r = write_file_replace(p, tmp, s, strlen(s), 0644, true);
	json_object_put(o);
	return r < 0 ? abox_error_set(err, -r, "template: write '%s'", p) : 0;
}

void template_meta_free(struct template_meta *m)
{
	if (!m)
		return;
	js_fields_free(m, fields, ELEMENTSOF(fields));
	memset(m, 0, sizeof(*m));
}

const char *template_user_from_image(const char *u)
{
	if (!u || !*u || strcmp(u, "root") == 0 || strcmp(u, "0") == 0 || strncmp(u, "0:", 2) == 0)
		return "root";
	if (strcmp(u, "user") == 0 || strcmp(u, "1000") == 0 || strncmp(u, "1000:", 5) == 0)
		return "user";
	return NULL;
}
