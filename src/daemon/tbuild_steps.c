/* tbuild_steps.c — E2B's build steps as a Dockerfile (see tbuild.h).
 *
 * The body of POST /v2/templates/{id}/builds/{build} is a client's: every
 * value that lands in the Dockerfile is checked or quoted so that it
 * stays the one instruction it came as (a newline in an ENV value or a
 * user name would otherwise start an instruction of the client's
 * choosing). Commands go in JSON form, where json-c's escaping keeps
 * them on one line. Runs in aboxd. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"
#include "base/json.h"
#include "tbuild_steps.h"

struct out {
	FILE *f;
	char *text;
	size_t len;
	unsigned line;
	unsigned *map;
	size_t cap;
};

static bool line(struct out *o, unsigned step, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool line(struct out *o, unsigned step, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(o->f, fmt, ap);
	va_end(ap);
	fputc('\n', o->f);
	o->line++;
	if (o->line >= o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		unsigned *nm = realloc(o->map, cap * sizeof(unsigned));
		if (!nm)
			return false;
		memset(nm + o->cap, 0, (cap - o->cap) * sizeof(unsigned));
		o->map = nm;
		o->cap = cap;
	}
	o->map[o->line] = step;
	return true;
}

/* "value" for ENV and WORKDIR: \ " and $ escaped; NULL for a value with
 * a line break or control byte (it could end the instruction). */
static char *quoted(const char *v)
{
	size_t n = strlen(v);
	char *q = malloc(n * 2 + 3), *p = q;
	if (!q)
		return NULL;
	*p++ = '"';
	for (const char *s = v; *s; s++) {
		if ((unsigned char)*s < 0x20) {
			free(q);
			return NULL;
		}
		if (*s == '\\' || *s == '"' || *s == '$')
			*p++ = '\\';
		*p++ = *s;
	}
	*p++ = '"';
	*p = '\0';
	return q;
}

/* A user name, an image reference: printable, no blank, no quote, not
 * starting with '-' (the instruction would take it for a --flag). */
static bool plain(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;
	if (!n || n > max || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f || s[i] == '"' || s[i] == '\'' ||
		    s[i] == '\\')
			return false;
	return true;
}

static const char *arg(json_object *args, size_t i)
{
	json_object *a =
		args && i < json_object_array_length(args) ? json_object_array_get_idx(args, i) : NULL;
	return a && json_object_is_type(a, json_type_string) ? json_object_get_string(a) : NULL;
}

/* argv as a JSON array on one line */
static char *json_argv(const char *const *v)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; v[i]; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	char *s = strdup(
		json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(a);
	return s;
}

#define FAIL(...)                                                                                            \
	do {                                                                                                 \
		snprintf(err, errlen, __VA_ARGS__);                                                          \
		goto fail;                                                                                   \
	} while (0)

int tbuild_plan(json_object *body, const char *uploads, struct tb_plan *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	struct out o = { 0 };
	o.f = open_memstream(&o.text, &o.len);
	if (!o.f) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	const char *img = js_str(body, "fromImage"), *tpl = js_str(body, "fromTemplate");
	if (!!img == !!tpl)
		FAIL("give fromImage or fromTemplate (one of them)");
	const char *from = img ? img : tpl;
	if (!plain(from, 600))
		FAIL("from%s '%.100s' is not a plain name", img ? "Image" : "Template", from);
	if (tpl && !strcmp(tpl, "base"))
		FAIL("fromTemplate base: abox's base template is this machine's own system, which cannot be "
		     "built on; "
		     "use fromImage (a Debian or Ubuntu image, say)");
	if (!line(&o, 0, "FROM %s", from))
		FAIL("out of memory");
	json_object *reg = js_get(body, "fromImageRegistry", json_type_object);
	if (reg) {
		const char *type = js_str(reg, "type");
		if (!type || strcmp(type, "registry") != 0)
			FAIL("fromImageRegistry of type '%.40s': abox pulls with a user name and password "
			     "(type "
			     "registry) only",
			     type ? type : "");
		p->user = js_strdup(reg, "username");
		p->pass = js_strdup(reg, "password");
	}
	json_object *force = js_get(body, "force", json_type_boolean);
	p->force = force && json_object_get_boolean(force);
	p->start = js_strdup(body, "startCmd");
	p->ready = js_strdup(body, "readyCmd");
	json_object *steps = js_get(body, "steps", json_type_array);
	size_t n = steps ? json_object_array_length(steps) : 0;
	if (n > 1000)
		FAIL("more than 1000 steps");
	const char *cur_user = "root";
	bool forced = false;
	for (size_t i = 0; i < n; i++) {
		unsigned step = (unsigned)i + 1;
		json_object *s = json_object_array_get_idx(steps, i);
		const char *type = js_str(s, "type");
		json_object *args = js_get(s, "args", json_type_array);
		json_object *sf = js_get(s, "force", json_type_boolean);
		/* a forced step and every one after it run again, the steps
		 * before it stay cached: a label nobody had before changes the
		 * cache keys from here on */
		if (sf && json_object_get_boolean(sf) && !forced) {
			forced = true;
			unsigned char r[8];
			if (random_bytes(r, sizeof(r)) < 0 ||
			    !line(&o, step, "LABEL abox.force=%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1],
				  r[2], r[3], r[4], r[5], r[6], r[7]))
				FAIL("out of memory");
		}
		if (!type)
			FAIL("step %u: no type", step);
		if (!strcmp(type, "RUN")) {
			const char *cmd = arg(args, 0), *user = arg(args, 1);
			if (!cmd)
				FAIL("step %u: RUN without a command", step);
			if (user && *user && !plain(user, 64))
				FAIL("step %u: user '%.64s' is not a plain name", step, user);
			const char *v[] = { "/bin/sh", "-c", cmd, NULL };
			char *j = json_argv(v);
			bool ok = j != NULL;
			if (ok && user && *user && strcmp(user, cur_user))
				ok = line(&o, step, "USER %s", user);
			if (ok)
				ok = line(&o, step, "RUN %s", j);
			if (ok && user && *user && strcmp(user, cur_user))
				ok = line(&o, step, "USER %s", cur_user);
			free(j);
			if (!ok)
				FAIL("out of memory");
		} else if (!strcmp(type, "ENV")) {
			size_t na = args ? json_object_array_length(args) : 0;
			for (size_t k = 0; k + 1 < na; k += 2) {
				const char *key = arg(args, k), *val = arg(args, k + 1);
				if (!key || !val ||
				    !str_of(key,
					    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_",
					    1, 255) ||
				    (key[0] >= '0' && key[0] <= '9'))
					FAIL("step %u: ENV '%.64s' is not NAME and a value", step,
					     key ? key : "");
				char *q = quoted(val);
				if (!q)
					FAIL("step %u: the value of %s has a line break or control character",
					     step, key);
				bool ok = line(&o, step, "ENV %s=%s", key, q);
				free(q);
				if (!ok)
					FAIL("out of memory");
			}
		} else if (!strcmp(type, "WORKDIR") || !strcmp(type, "USER")) {
			const char *v = arg(args, 0);
			if (!v || !*v)
				FAIL("step %u: %s without a value", step, type);
			if (!strcmp(type, "USER")) {
				if (!plain(v, 64))
					FAIL("step %u: user '%.64s' is not a plain name", step, v);
				cur_user = v;
				if (!line(&o, step, "USER %s", v))
					FAIL("out of memory");
			} else {
				char *q = quoted(v);
				bool ok = q && line(&o, step, "WORKDIR %s", q);
				free(q);
				if (!ok)
					FAIL("step %u: WORKDIR '%.100s' has a line break or control "
					     "character",
					     step, v);
			}
		} else if (!strcmp(type, "COPY")) {
			const char *src = arg(args, 0), *dest = arg(args, 1), *user = arg(args, 2),
				   *mode = arg(args, 3), *hash = js_str(s, "filesHash");
			if (!src || !dest || !*src || !*dest)
				FAIL("step %u: COPY needs a source and a destination", step);
			if (!hash || strlen(hash) != 64 || strspn(hash, "0123456789abcdef") != 64)
				FAIL("step %u: COPY without a filesHash of 64 hex digits", step);
			char up[4400];
			struct stat st;
			snprintf(up, sizeof(up), "%s/%s", uploads, hash);
			if (stat(up, &st) < 0)
				FAIL("step %u: the files of COPY %.100s (%.12s...) were not uploaded", step,
				     src, hash);
			char entry[4500];
			snprintf(entry, sizeof(entry), "%s=%s", hash, up);
			bool have = false;
			for (size_t k = 0; p->archives && p->archives[k]; k++)
				have = have || !strcmp(p->archives[k], entry);
			if (!have) {
				size_t na = strv_length(p->archives);
				char **nv = realloc(p->archives, (na + 2) * sizeof(char *));
				if (!nv || !(nv[na] = strdup(entry)))
					FAIL("out of memory");
				nv[na + 1] = NULL;
				p->archives = nv;
			}
			char source[4200];
			snprintf(source, sizeof(source), "%s/%s", hash, src);
			const char *v[] = { source, dest, NULL };
			char *j = json_argv(v);
			if ((user && *user && !plain(user, 64)) ||
			    (mode && *mode && strspn(mode, "01234567") != strlen(mode))) {
				free(j);
				FAIL("step %u: COPY's user or mode is not plain", step);
			}
			char fl[200] = "";
			if (user && *user)
				snprintf(fl, sizeof(fl), "--chown=%s ", user);
			if (mode && *mode)
				snprintf(fl + strlen(fl), sizeof(fl) - strlen(fl), "--chmod=%s ", mode);
			bool ok = j && line(&o, step, "COPY %s%s", fl, j);
			free(j);
			if (!ok)
				FAIL("out of memory");
		} else {
			FAIL("step %u: type '%.40s' is not one abox builds (RUN, ENV, WORKDIR, USER, COPY)",
			     step, type);
		}
	}
	fclose(o.f);
	o.f = NULL;
	p->dockerfile = o.text;
	p->line_step = o.map;
	p->nlines = o.line;
	return 0;
fail:
	if (o.f)
		fclose(o.f);
	free(o.text);
	free(o.map);
	tbuild_plan_free(p);
	return -1;
}

void tbuild_plan_free(struct tb_plan *p)
{
	free(p->dockerfile);
	strv_free(p->archives);
	free(p->line_step);
	free(p->start);
	free(p->ready);
	free(p->user);
	if (p->pass) {
		explicit_bzero(p->pass, strlen(p->pass));
		free(p->pass);
	}
	memset(p, 0, sizeof(*p));
}
