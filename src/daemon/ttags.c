/* ttags.c — see ttags.h.
 *
 * A name's tags: STATE/daemon-builds/tags/NAME.json, an object of
 * TAG -> {"buildID", "createdAt" (ms)}. Each tag is a template of its own:
 * "default" is NAME itself (what `abox run -t NAME` and
 * Sandbox.create(NAME) find), any other NAME--t and 10 hex digits of the
 * tag's sha256 (tags are spelt as E2B allows, v1.0 or Prod, which abox's
 * template names cannot hold). Giving a build's tag to another tag copies
 * its template; removing a tag removes its template. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "base/json.h"
#include "base/sha256.h"
#include "tbuild_int.h"
#include "ttags.h"

/* the file of a name's tags: read, changed and written whole under it */
static pthread_mutex_t tt_mu = PTHREAD_MUTEX_INITIALIZER;

bool tt_tag_ok(const char *tag)
{
	size_t n = strlen(tag);
	/* a build id in a tag's place names that build (name:BUILD_ID) */
	bool uuid = n == 36 && strspn(tag, "0123456789abcdef-") == 36;
	return n >= 1 && n <= 128 && !uuid && strchr("._-", tag[0]) == NULL &&
	       str_of(tag, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", 1, 128);
}

int tt_template(const char *name, const char *tag, char *out, size_t n)
{
	if (!strcmp(tag, "default")) {
		snprintf(out, n, "%s", name);
		return 0;
	}
	struct sha256 s;
	char hex[65];
	sha256_init(&s);
	sha256_update(&s, tag, strlen(tag));
	sha256_hex(&s, hex);
	if (strlen(name) + 13 > 63 || n < 64)
		return -1;
	snprintf(out, n, "%s--t%.10s", name, hex);
	return 0;
}

static void tags_path(const char *name, char *out, size_t n)
{
	snprintf(out, n, "%s/daemon-builds/tags/%s.json", tb_state_dir(), name);
}

/* Whether tag of name has its template (`abox template rm` may have
 * removed it behind aboxd's back). */
static bool tag_alive(const char *name, const char *tag)
{
	char t[64], p[4500];
	struct stat st;
	if (tt_template(name, tag, t, sizeof(t)) < 0)
		return false;
	snprintf(p, sizeof(p), "%s/templates/%s", tb_state_dir(), t);
	return lstat(p, &st) == 0;
}

/* name's tags whose templates are there (an empty object when none);
 * under tt_mu */
static json_object *tags_load(const char *name)
{
	char p[4500];
	tags_path(name, p, sizeof(p));
	json_object *o = tb_object_load(p, 1u << 20);
	json_object *live = json_object_new_object();
	json_object_object_foreach(o, k, v) {
		if (json_object_is_type(v, json_type_object) && tt_tag_ok(k) && tag_alive(name, k))
			json_object_object_add(live, k, json_object_get(v));
	}
	json_object_put(o);
	return live;
}

static int tags_save(const char *name, json_object *o)
{
	char dir[4400], p[4500];
	snprintf(dir, sizeof(dir), "%s/daemon-builds/tags", tb_state_dir());
	(void)mkdir(dir, 0700);
	tags_path(name, p, sizeof(p));
	if (!json_object_object_length(o))
		return unlink(p) == 0 || errno == ENOENT ? 0 : -errno;
	return tb_object_save(p, o);
}

static void tag_put(json_object *o, const char *tag, const char *bid)
{
	json_object *e = json_object_new_object();
	js_put_str(e, "buildID", bid);
	json_object_object_add(e, "createdAt", json_object_new_int64(tb_now_ms()));
	json_object_object_add(o, tag, e);
}

bool tt_has_tags(const char *name)
{
	pthread_mutex_lock(&tt_mu);
	json_object *o = tags_load(name);
	bool any = json_object_object_length(o) > 0;
	json_object_put(o);
	pthread_mutex_unlock(&tt_mu);
	return any;
}

int tt_record(const char *name, char *const *tags, const char *bid)
{
	pthread_mutex_lock(&tt_mu);
	json_object *o = tags_load(name);
	for (size_t i = 0; tags[i]; i++)
		tag_put(o, tags[i], bid);
	int r = tags_save(name, o);
	json_object_put(o);
	pthread_mutex_unlock(&tt_mu);
	return r;
}

int tt_build_of(const char *name, const char *tag, char *out, size_t n)
{
	pthread_mutex_lock(&tt_mu);
	json_object *o = tags_load(name), *e = NULL;
	const char *b = json_object_object_get_ex(o, tag, &e) ? js_str(e, "buildID") : NULL;
	if (b)
		snprintf(out, n, "%s", b);
	json_object_put(o);
	pthread_mutex_unlock(&tt_mu);
	return b ? 0 : -1;
}

const char *tt_resolve(const char *name, const char *tag, char *out, size_t n)
{
	if (strlen(tag) == 36 && strspn(tag, "0123456789abcdef-") == 36) {
		/* name:BUILD_ID — a tag that has that build */
		pthread_mutex_lock(&tt_mu);
		json_object *o = tags_load(name);
		bool found = false;
		json_object_object_foreach(o, k, v) {
			const char *b = js_str(v, "buildID");
			if (!found && b && !strcmp(b, tag))
				found = tt_template(name, k, out, n) == 0;
		}
		json_object_put(o);
		pthread_mutex_unlock(&tt_mu);
		if (found)
			return out;
	}
	if (!tt_tag_ok(tag) || tt_template(name, tag, out, n) < 0)
		snprintf(out, n, "%s--t-none", name); /* no such template */
	return out;
}

char **tt_build_tags(json_object *b, const char *name, const char *n, char *why, size_t wn)
{
	json_object *a = js_get(b, "tags", json_type_array);
	size_t c = a ? json_object_array_length(a) : 0, k = 0;
	const char *in_name = strchr(name, ':');
	if (c > 64) {
		snprintf(why, wn, "tags: at most 64");
		return NULL;
	}
	char **v = calloc(c + 2, sizeof(char *));
	if (!v) {
		snprintf(why, wn, "out of memory");
		return NULL;
	}
	/* candidate i: the name's tag first, then the array's */
	for (size_t i = in_name ? 0 : 1; i <= c; i++) {
		json_object *e = i ? json_object_array_get_idx(a, i - 1) : NULL;
		const char *tag = !i                                         ? in_name + 1
				  : json_object_is_type(e, json_type_string) ? json_object_get_string(e)
									     : "";
		char tmpl[64];
		if (!tt_tag_ok(tag)) {
			snprintf(why, wn,
				 "tag '%.*s': 1-128 of A-Z a-z 0-9 . _ - (not starting with . _ -, not a "
				 "build id)",
				 128, tag);
		} else if (tt_template(n, tag, tmpl, sizeof(tmpl)) < 0) {
			snprintf(why, wn,
				 "template name '%s' is too long to carry tag '%.*s' (50 characters at most)",
				 n, 128, tag);
		} else {
			bool dup = false;
			for (size_t j = 0; j < k && !dup; j++)
				dup = !strcmp(v[j], tag);
			if (dup || (v[k] = strdup(tag)) != NULL) {
				k += !dup;
				continue;
			}
			snprintf(why, wn, "out of memory");
		}
		strv_free(v);
		return NULL;
	}
	if (!k && !(v[0] = strdup("default"))) {
		snprintf(why, wn, "out of memory");
		strv_free(v);
		return NULL;
	}
	return v;
}

/* ---- the routes */

/* "name" or "name:tag" split; 0, or -1 when either is malformed */
static int split(const char *ref, char *name, size_t nn, char *tag, size_t tn)
{
	size_t l = strcspn(ref, ":");
	if (l == 0 || l >= nn || (ref[l] && strchr(ref + l + 1, ':')))
		return -1;
	snprintf(name, nn, "%.*s", (int)l, ref);
	snprintf(tag, tn, "%s", ref[l] ? ref + l + 1 : "default");
	return str_of(name, "abcdefghijklmnopqrstuvwxyz0123456789-_", 1, 63) && tt_tag_ok(tag) ? 0 : -1;
}

/* the request's "tags": 1-64 valid tags into v (a strv); NULL and a reason */
static char **tags_of(json_object *b, char *why, size_t n)
{
	json_object *a = js_get(b, "tags", json_type_array);
	size_t c = a ? json_object_array_length(a) : 0;
	if (!c || c > 64) {
		snprintf(why, n, "tags: 1-64 tags are needed");
		return NULL;
	}
	char **v = calloc(c + 1, sizeof(char *));
	for (size_t i = 0; v && i < c; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "";
		if (!tt_tag_ok(s)) {
			snprintf(why, n, "tag '%.*s': 1-128 of A-Z a-z 0-9 . _ - (not starting with . _ -)",
				 128, s);
			strv_free(v);
			return NULL;
		}
		v[i] = strdup(s);
	}
	if (!v)
		snprintf(why, n, "out of memory");
	return v;
}

/* POST /templates/tags {target: "name[:tag]", tags: [...]} */
static enum MHD_Result assign(struct request *rq)
{
	enum MHD_Result sent;
	json_object *b = body_json(rq, &sent);
	if (!b)
		return sent;
	char name[64], tag[129], why[300], src[64];
	const char *target = js_str(b, "target");
	char **tags = tags_of(b, why, sizeof(why));
	int bad = !target || split(target, name, sizeof(name), tag, sizeof(tag)) < 0;
	json_object_put(b);
	if (bad || !tags) {
		strv_free(tags);
		return reply_error(rq, 400, "%s", bad ? "target: a template name, or name:tag" : why);
	}
	pthread_mutex_lock(&tt_mu);
	json_object *o = tags_load(name);
	json_object *from = NULL;
	json_object_object_get_ex(o, tag, &from);
	const char *bid = from ? js_str(from, "buildID") : NULL;
	enum MHD_Result q;
	abox_ctx *ctx = NULL;
	char dst[64];
	if (!tb_owns(rq->owner, name) || !bid) {
		q = reply_error(rq, 404, "template '%s' has no tag '%s'", name, tag);
	} else if (tt_template(name, tag, src, sizeof(src)) < 0 || !(ctx = request_ctx())) {
		q = reply_error(rq, 500, "cannot open abox's state");
	} else {
		char keep[40];
		snprintf(keep, sizeof(keep), "%s", bid);
		abox_error err = ABOX_ERROR_INIT;
		int r = 0;
		for (size_t i = 0; tags[i] && r >= 0; i++) {
			json_object *had = NULL;
			json_object_object_get_ex(o, tags[i], &had);
			if (had && js_str(had, "buildID") && !strcmp(js_str(had, "buildID"), keep))
				continue; /* it has that build already */
			if (tt_template(name, tags[i], dst, sizeof(dst)) < 0)
				r = abox_error_setx(&err, EINVAL, "template name '%s' is too long for tags",
						    name);
			else if ((r = abox_template_copy(ctx, src, dst, &err)) >= 0)
				tag_put(o, tags[i], keep);
		}
		if (tags_save(name, o) < 0 && r >= 0)
			r = abox_error_setx(&err, EIO, "cannot write the tags of '%s'", name);
		if (r < 0) {
			q = reply_error(rq, 500, "%s", err.msg);
		} else {
			json_object *res = json_object_new_object();
			json_object_object_add(res, "tags", js_strv_array(tags));
			js_put_str(res, "buildID", keep);
			q = reply_json(rq, 201, res);
		}
	}
	abox_ctx_free(ctx);
	json_object_put(o);
	pthread_mutex_unlock(&tt_mu);
	strv_free(tags);
	return q;
}

/* Removes tag (its template, then its entry) of name; under tt_mu. */
static int drop(abox_ctx *ctx, const char *name, json_object *o, const char *tag, abox_error *err)
{
	char t[64];
	if (tt_template(name, tag, t, sizeof(t)) == 0) {
		int r = abox_template_remove(ctx, t, err);
		if (r < 0 && r != -ENOENT)
			return r;
	}
	json_object_object_del(o, tag);
	return 0;
}

/* DELETE /templates/tags {name, tags: [...]} */
static enum MHD_Result untag(struct request *rq)
{
	enum MHD_Result sent;
	json_object *b = body_json(rq, &sent);
	if (!b)
		return sent;
	char name[64], tag[129], why[300];
	const char *nm = js_str(b, "name");
	char **tags = tags_of(b, why, sizeof(why));
	int bad = !nm || split(nm, name, sizeof(name), tag, sizeof(tag)) < 0;
	json_object_put(b);
	if (bad || !tags) {
		strv_free(tags);
		return reply_error(rq, 400, "%s", bad ? "name: a template name" : why);
	}
	pthread_mutex_lock(&tt_mu);
	json_object *o = tags_load(name);
	enum MHD_Result q = MHD_NO;
	abox_ctx *ctx = NULL;
	const char *missing = NULL;
	for (size_t i = 0; tags[i] && !missing; i++)
		if (!json_object_object_get_ex(o, tags[i], NULL))
			missing = tags[i];
	if (!tb_owns(rq->owner, name) || !json_object_object_length(o)) {
		q = reply_error(rq, 404, "template '%s' not found", name);
	} else if (missing) {
		q = reply_error(rq, 404, "template '%s' has no tag '%s'", name, missing);
	} else if (!(ctx = request_ctx())) {
		q = reply_error(rq, 500, "cannot open abox's state");
	} else {
		abox_error err = ABOX_ERROR_INIT;
		int r = 0;
		for (size_t i = 0; tags[i] && r >= 0; i++)
			r = drop(ctx, name, o, tags[i], &err);
		if (tags_save(name, o) < 0 && r >= 0)
			r = abox_error_setx(&err, EIO, "cannot write the tags of '%s'", name);
		q = r < 0 ? reply_error(rq, 500, "%s", err.msg) : reply_empty(rq, 204);
	}
	abox_ctx_free(ctx);
	json_object_put(o);
	pthread_mutex_unlock(&tt_mu);
	strv_free(tags);
	return q;
}

/* GET /templates/{name}/tags */
static enum MHD_Result list(struct request *rq, const char *name)
{
	if (!str_of(name, "abcdefghijklmnopqrstuvwxyz0123456789-_", 1, 63) || !tb_owns(rq->owner, name))
		return reply_error(rq, 404, "template '%s' not found", name);
	pthread_mutex_lock(&tt_mu);
	json_object *o = tags_load(name);
	pthread_mutex_unlock(&tt_mu);
	if (!json_object_object_length(o)) {
		json_object_put(o);
		return reply_error(rq, 404, "template '%s' not found", name);
	}
	json_object *a = json_object_new_array();
	json_object_object_foreach(o, k, v) {
		json_object *e = json_object_new_object();
		js_put_str(e, "tag", k);
		js_put_str(e, "buildID", js_str(v, "buildID"));
		json_object *c = js_get(v, "createdAt", json_type_int);
		char ts[40];
		time_t s = (time_t)((c ? json_object_get_int64(c) : 0) / 1000);
		struct tm tm;
		gmtime_r(&s, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
		js_put_str(e, "createdAt", ts);
		json_object_array_add(a, e);
	}
	json_object_put(o);
	return reply_json(rq, 200, a);
}

int tt_forget(abox_ctx *ctx, const char *owner, const char *name, abox_error *err)
{
	if (!str_of(name, "abcdefghijklmnopqrstuvwxyz0123456789-_", 1, 63) || !tb_owns(owner, name))
		return abox_error_setx(err, ENOENT, "template '%s' not found", name);
	pthread_mutex_lock(&tt_mu);
	json_object *o = tags_load(name);
	int r = 0;
	bool had_default = json_object_object_get_ex(o, "default", NULL);
	/* a copy: drop() changes o while we walk its keys */
	json_object *keys = json_object_new_array();
	json_object_object_foreach(o, k, v) {
		(void)v;
		json_object_array_add(keys, json_object_new_string(k));
	}
	for (size_t i = 0; i < json_object_array_length(keys) && r >= 0; i++)
		r = drop(ctx, name, o, json_object_get_string(json_object_array_get_idx(keys, i)), err);
	json_object_put(keys);
	/* a name built before tags were kept has only its template */
	if (r >= 0 && !had_default && (r = abox_template_remove(ctx, name, err)) == -ENOENT)
		r = 0;
	if (tags_save(name, o) < 0 && r >= 0)
		r = abox_error_setx(err, EIO, "cannot write the tags of '%s'", name);
	json_object_put(o);
	pthread_mutex_unlock(&tt_mu);
	return r;
}

enum MHD_Result tt_route(struct request *rq, const char *m, const char *u, bool *handled)
{
	*handled = true;
	if (!strcmp(u, "/templates/tags") && !strcmp(m, "POST"))
		return assign(rq);
	if (!strcmp(u, "/templates/tags") && !strcmp(m, "DELETE"))
		return untag(rq);
	size_t l = strlen(u);
	if (!strncmp(u, "/templates/", 11) && l > 16 && !strcmp(u + l - 5, "/tags") && !strcmp(m, "GET")) {
		char name[128];
		if (l - 16 < sizeof(name)) {
			snprintf(name, sizeof(name), "%.*s", (int)(l - 16), u + 11);
			return list(rq, name);
		}
	}
	*handled = false;
	return MHD_NO;
}
