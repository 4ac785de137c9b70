/* tlist.c — see tlist.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "base/json.h"
#include "tbuild_int.h"
#include "tlist.h"
#include "ttags.h"

/* the index files: read, changed and written whole under it */
static pthread_mutex_t tl_mu = PTHREAD_MUTEX_INITIALIZER;

static bool name_ok(const char *name)
{
	return str_of(name, "abcdefghijklmnopqrstuvwxyz0123456789-_", 1, 63);
}

static void index_path(const char *name, char *out, size_t n)
{
	snprintf(out, n, "%s/daemon-builds/index/%s.json", tb_state_dir(), name);
}

json_object *tb_object_load(const char *path, size_t max)
{
	json_object *o = NULL;
	return js_load(path, max, &o, NULL, NULL) < 0 ? json_object_new_object() : o;
}

int tb_object_save(const char *path, json_object *o)
{
	char tmp[4600];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	return write_file_replace(path, tmp, text, strlen(text), 0600, false);
}

static json_object *index_load(const char *name)
{
	char p[4500];
	index_path(name, p, sizeof(p));
	return tb_object_load(p, 8u << 20);
}

static int64_t i64(json_object *o, const char *k)
{
	json_object *v = js_get(o, k, json_type_int);
	return v ? json_object_get_int64(v) : 0;
}

void tl_index(const char *name, const struct tl_build *b)
{
	if (!name_ok(name))
		return;
	char dir[4400], p[4500];
	snprintf(dir, sizeof(dir), "%s/daemon-builds/index", tb_state_dir());
	pthread_mutex_lock(&tl_mu);
	(void)mkdir(dir, 0700);
	json_object *o = index_load(name), *was = NULL;
	int64_t created = b->created_ms;
	if (json_object_object_get_ex(o, b->bid, &was) && i64(was, "createdAt"))
		created = i64(was, "createdAt");
	json_object *e = json_object_new_object();
	js_put_str(e, "status", b->status);
	json_object_object_add(e, "createdAt", json_object_new_int64(created ? created : b->updated_ms));
	json_object_object_add(e, "updatedAt", json_object_new_int64(b->updated_ms));
	json_object_object_add(e, "memoryMB", json_object_new_int64(b->memory_mb));
	json_object_object_add(e, "cpuCount", json_object_new_int64(b->cpus));
	json_object_object_add(o, b->bid, e);
	index_path(name, p, sizeof(p));
	(void)tb_object_save(p, o);
	json_object_put(o);
	pthread_mutex_unlock(&tl_mu);
}

void tl_forget(const char *name)
{
	char p[4500];
	if (!name_ok(name))
		return;
	index_path(name, p, sizeof(p));
	pthread_mutex_lock(&tl_mu);
	(void)unlink(p);
	pthread_mutex_unlock(&tl_mu);
}

bool tb_owns(const char *owner, const char *name)
{
	char p[4500];
	snprintf(p, sizeof(p), "%s/daemon-builds/owners/%s", tb_state_dir(), name);
	char *who = NULL;
	bool mine = read_file_at(AT_FDCWD, p, 64, &who, NULL) == 0 && !strcmp(who, owner);
	free(who);
	return mine;
}

/* May owner build template name? A new name, or one this owner built:
 * templates are the whole daemon's, and one API key must not replace
 * another's template (or one the host's admin made) under its users.
 * The owner is recorded (STATE/daemon-builds/owners/NAME) when it may. */
bool tl_may_build(const char *owner, const char *name, bool pending)
{
	char dir[4400], p[4500], tmp[4600];
	snprintf(dir, sizeof(dir), "%s/daemon-builds", tb_state_dir());
	(void)mkdir(dir, 0700);
	snprintf(dir, sizeof(dir), "%s/daemon-builds/owners", tb_state_dir());
	(void)mkdir(dir, 0700);
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	char tp[4500];
	struct stat st;
	snprintf(tp, sizeof(tp), "%s/templates/%s", tb_state_dir(), name);
	/* a name lives on in its tags when its default tag is gone */
	bool alive = lstat(tp, &st) == 0 || tt_has_tags(name) || pending;
	if (alive && !tb_owns(owner, name))
		return false;
	if (!alive)
		tl_forget(name); /* a name made anew: no builds of the one before */
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", p, (int)gettid());
	return write_file_replace(p, tmp, owner, strlen(owner), 0600, false) == 0;
}

static json_object *ts(int64_t ms)
{
	char out[40];
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_object_new_string(out);
}

struct row {
	const char *bid;
	json_object *e;
};

static int newest_first(const void *a, const void *b)
{
	int64_t x = i64(((const struct row *)a)->e, "createdAt"),
		y = i64(((const struct row *)b)->e, "createdAt");
	return x < y ? 1 : x > y ? -1 : strcmp(((const struct row *)a)->bid, ((const struct row *)b)->bid);
}

/* name's builds in ix, newest first (n of them; free the array) */
static struct row *rows_of(json_object *ix, size_t *n)
{
	size_t c = (size_t)json_object_object_length(ix), k = 0;
	struct row *v = calloc(c ? c : 1, sizeof(*v));
	if (!v) {
		*n = 0;
		return NULL;
	}
	json_object_object_foreach(ix, bid, e) {
		if (k < c && json_object_is_type(e, json_type_object))
			v[k++] = (struct row){ .bid = bid, .e = e };
	}
	qsort(v, k, sizeof(*v), newest_first);
	*n = k;
	return v;
}

static int64_t mb(int64_t v, uint64_t dflt_bytes, int64_t fallback)
{
	return v > 0 ? v : dflt_bytes ? (int64_t)(dflt_bytes >> 20) : fallback;
}

static json_object *build_json(const struct row *r)
{
	json_object *b = json_object_new_object();
	js_put_str(b, "buildID", r->bid);
	js_put_str(b, "status", js_str(r->e, "status") ? js_str(r->e, "status") : "error");
	json_object_object_add(b, "createdAt", ts(i64(r->e, "createdAt")));
	json_object_object_add(b, "updatedAt", ts(i64(r->e, "updatedAt")));
	const char *st = js_str(r->e, "status");
	if (st && (!strcmp(st, "ready") || !strcmp(st, "error")))
		json_object_object_add(b, "finishedAt", ts(i64(r->e, "updatedAt")));
	int64_t cpus = i64(r->e, "cpuCount");
	json_object_object_add(b, "cpuCount",
			       json_object_new_int64(cpus > 0 ? cpus
						     : daemon_cfg.cpu_millis
							     ? (daemon_cfg.cpu_millis + 999) / 1000
							     : 2));
	json_object_object_add(
		b, "memoryMB",
		json_object_new_int64(mb(i64(r->e, "memoryMB"), daemon_cfg.memory_bytes, 1024)));
	json_object_object_add(b, "diskSizeMB", json_object_new_int64(mb(0, daemon_cfg.disk_bytes, 0)));
	js_put_str(b, "envdVersion", DAEMON_ENVD_VERSION);
	return b;
}

static void names_add(json_object *o, const char *name)
{
	json_object *a = json_object_new_array();
	json_object_array_add(a, json_object_new_string(name));
	json_object_object_add(o, "aliases", json_object_get(a));
	json_object_object_add(o, "names", a);
}

/* The Template object of name (NULL when it has no indexed build). */
static json_object *template_json(const char *name)
{
	pthread_mutex_lock(&tl_mu);
	json_object *ix = index_load(name);
	pthread_mutex_unlock(&tl_mu);
	size_t n;
	struct row *v = rows_of(ix, &n);
	json_object *o = NULL;
	if (n) {
		/* the build Sandbox.create(name) starts: its default tag's, else
		 * the newest that finished well */
		char dflt[40] = "";
		const struct row *use = NULL;
		if (tt_build_of(name, "default", dflt, sizeof(dflt)) == 0)
			for (size_t i = 0; i < n && !use; i++)
				use = !strcmp(v[i].bid, dflt) ? &v[i] : NULL;
		for (size_t i = 0; i < n && !use; i++)
			use = js_str(v[i].e, "status") && !strcmp(js_str(v[i].e, "status"), "ready") ? &v[i]
												     : NULL;
		json_object *b = build_json(use ? use : &v[0]);
		o = json_object_new_object();
		js_put_str(o, "templateID", name);
		js_put_str(o, "buildID", use ? use->bid : v[0].bid);
		json_object *x;
		const char *keys[] = { "cpuCount", "memoryMB", "diskSizeMB", "envdVersion" };
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (json_object_object_get_ex(b, keys[i], &x))
				json_object_object_add(o, keys[i], json_object_get(x));
		json_object_object_add(o, "public", json_object_new_boolean(false));
		names_add(o, name);
		json_object_object_add(o, "createdAt", ts(i64(v[n - 1].e, "createdAt")));
		json_object_object_add(o, "updatedAt", ts(i64(v[0].e, "updatedAt")));
		json_object_object_add(o, "createdBy", NULL);
		/* not counted here: sandboxes are the library's, not aboxd's */
		json_object_object_add(o, "lastSpawnedAt", NULL);
		json_object_object_add(o, "spawnCount", json_object_new_int64(0));
		json_object_object_add(o, "buildCount", json_object_new_int64((int64_t)n));
		js_put_str(o, "buildStatus", js_str(v[0].e, "status") ? js_str(v[0].e, "status") : "error");
		json_object_put(b);
	}
	free(v);
	json_object_put(ix);
	return o;
}

/* Whether name is this owner's and still has a template or tag. */
static bool visible(const char *owner, const char *name)
{
	char p[4500];
	struct stat st;
	snprintf(p, sizeof(p), "%s/templates/%s", tb_state_dir(), name);
	return name_ok(name) && tb_owns(owner, name) && (lstat(p, &st) == 0 || tt_has_tags(name));
}

enum MHD_Result tl_list(struct request *rq)
{
	char dir[4400];
	snprintf(dir, sizeof(dir), "%s/daemon-builds/owners", tb_state_dir());
	json_object *a = json_object_new_array();
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.' || !visible(rq->owner, de->d_name))
			continue;
		json_object *t = template_json(de->d_name);
		if (t)
			json_object_array_add(a, t);
	}
	if (d)
		closedir(d);
	return reply_json(rq, 200, a);
}

enum MHD_Result tl_get(struct request *rq, const char *name)
{
	if (!visible(rq->owner, name))
		return reply_error(rq, 404, "template '%s' not found", name);
	const char *lim_s = query(rq, "limit");
	long lim = lim_s ? atol(lim_s) : 100;
	if (lim < 1 || lim > 100)
		return reply_error(rq, 400, "limit must be 1-100");
	pthread_mutex_lock(&tl_mu);
	json_object *ix = index_load(name);
	pthread_mutex_unlock(&tl_mu);
	json_object *o = template_json(name);
	if (!o) {
		json_object_put(ix);
		return reply_error(rq, 404, "template '%s' not found", name);
	}
	/* TemplateWithBuilds has no build-level fields at its top */
	const char *drop[] = { "buildID",     "cpuCount",  "memoryMB",   "diskSizeMB",
			       "envdVersion", "createdBy", "buildCount", "buildStatus" };
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		json_object_object_del(o, drop[i]);
	size_t n;
	struct row *v = rows_of(ix, &n);
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n && i < (size_t)lim; i++)
		json_object_array_add(a, build_json(&v[i]));
	json_object_object_add(o, "builds", a);
	free(v);
	json_object_put(ix);
	return reply_json(rq, 200, o);
}
