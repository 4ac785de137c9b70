/* layer/template_meta.c — see template_meta.h. */
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/json.h"
#include "layer/template_meta.h"

#define META_MAX_BYTES (1u << 20)

static uint64_t get_u64(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int)
		       ? (uint64_t)json_object_get_int64(v)
		       : 0;
}

int template_meta_read(const char *version_path, struct template_meta *m, abox_error *err)
{
	memset(m, 0, sizeof(*m));
	char p[4200];
	safe_snprintf(p, sizeof(p), "%s.json", version_path);
	_cleanup_free_ char *s = NULL;
	size_t len = 0;
	int r = read_file_at(AT_FDCWD, p, META_MAX_BYTES, &s, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return abox_error_set(err, -r, "template: read '%s'", p);
	json_object *o = json_tokener_parse(s);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return abox_error_setx(err, EBADMSG, "template: '%s' is damaged", p);
	}
	m->source = js_strdup(o, "source");
	m->created_ms = (int64_t)get_u64(o, "createdMs");
	m->entries = get_u64(o, "entries");
	m->bytes = get_u64(o, "bytes");
	m->dropped = get_u64(o, "dropped");
	m->user = js_strdup(o, "user");
	m->workdir = js_strdup(o, "workdir");
	m->start_cmd = js_strdup(o, "startCmd");
	m->ready_cmd = js_strdup(o, "readyCmd");
	m->ready_port = (uint16_t)get_u64(o, "readyPort");
	m->ready_timeout_ms = (uint32_t)get_u64(o, "readyTimeoutMs");
	json_object *env;
	if (json_object_object_get_ex(o, "env", &env) && json_object_is_type(env, json_type_array)) {
		size_t n = json_object_array_length(env), k = 0;
		m->env = calloc(n + 1, sizeof(char *));
		for (size_t i = 0; m->env && i < n; i++) {
			json_object *e = json_object_array_get_idx(env, i);
			const char *v = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : NULL;
			if (v && strchr(v, '=') && v[0] != '=')
				m->env[k++] = strdup(v);
		}
	}
	json_object_put(o);
	return 0;
}

int template_meta_write(const char *version_path, const struct template_meta *m, abox_error *err)
{
	json_object *o = json_object_new_object();
	js_put_str(o, "source", m->source);
	json_object_object_add(o, "createdMs", json_object_new_int64(m->created_ms));
	json_object_object_add(o, "entries", json_object_new_uint64(m->entries));
	json_object_object_add(o, "bytes", json_object_new_uint64(m->bytes));
	json_object_object_add(o, "dropped", json_object_new_uint64(m->dropped));
	js_put_str(o, "user", m->user);
	js_put_str(o, "workdir", m->workdir);
	json_object *env = json_object_new_array();
	for (size_t i = 0; m->env && m->env[i]; i++)
		json_object_array_add(env, json_object_new_string(m->env[i]));
	json_object_object_add(o, "env", env);
	js_put_str(o, "startCmd", m->start_cmd);
	js_put_str(o, "readyCmd", m->ready_cmd);
	if (m->ready_port)
		json_object_object_add(o, "readyPort", json_object_new_int(m->ready_port));
	if (m->ready_timeout_ms)
		json_object_object_add(o, "readyTimeoutMs", json_object_new_int64(m->ready_timeout_ms));
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
	free(m->source);
	free(m->user);
	free(m->workdir);
	strv_free(m->env);
	free(m->start_cmd);
	free(m->ready_cmd);
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
