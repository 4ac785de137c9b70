/* tbuild.c — see tbuild.h.
 *
 * Each build is kept in memory (its status and log lines) for as long as
 * aboxd runs; the newest TB_KEEP of them. Uploads are files in the state
 * folder, one folder per API key owner: one owner's files never answer
 * another's "is this hash here?" (a client that uploaded first under a
 * hash it chose would otherwise put its files into someone else's
 * template). A Dockerfile line is made for each step, and a failing
 * line is reported as its step, as E2B's SDKs expect. */
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
#include "tbuild.h"
#include "tbuild_int.h"
#include "tbuild_steps.h"
#include "tlist.h"
#include "ttags.h"

#define TB_KEEP 64

enum tb_status {
	TB_WAITING,
	TB_BUILDING,
	TB_READY,
	TB_ERROR
};
static const char *const status_name[] = { "waiting", "building", "ready", "error" };

struct tb_log {
	char ts[32];
	const char *level;
	char *msg;
};

struct tbuild {
	char tid[64], bid[40], owner[17], name[64];
	char **tags; /* the build's tags; name holds the first one's template */
	int64_t memory_mb, cpus, created_ms;
	enum tb_status status;
	struct tb_log *log;
	size_t nlog, cap;
	char *reason;
	char reason_step[16];
	bool started;
	struct tb_plan in; /* the build's inputs: its Dockerfile, uploads, commands */
	struct tbuild *next;
};

pthread_mutex_t tb_mu = PTHREAD_MUTEX_INITIALIZER;
static struct tbuild *builds;
struct tb_upload *tb_uploads;

const char *tb_state_dir(void)
{
	const char *s = daemon_cfg.state_dir ? daemon_cfg.state_dir : getenv("ABOX_ROOT");
	return s && *s ? s : "/var/lib/abox";
}

int64_t tb_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* STATE/daemon-uploads/OWNER[/HASH] */
void tb_upload_path(const char *owner, const char *hash, char *out, size_t n)
{
	if (hash)
		snprintf(out, n, "%s/daemon-uploads/%s/%s", tb_state_dir(), owner, hash);
	else
		snprintf(out, n, "%s/daemon-uploads/%s", tb_state_dir(), owner);
}

static void log_add(struct tbuild *t, const char *level, const char *msg)
{
	if (t->nlog == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct tb_log *nl = realloc(t->log, cap * sizeof(*nl));
		if (!nl)
			return;
		t->log = nl;
		t->cap = cap;
	}
	struct tb_log *e = &t->log[t->nlog];
	time_t s = time(NULL);
	struct tm tm;
	gmtime_r(&s, &tm);
	strftime(e->ts, sizeof(e->ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	e->level = level;
	if ((e->msg = strdup(msg)))
		t->nlog++;
}

static void build_free(struct tbuild *t)
{
	for (size_t i = 0; i < t->nlog; i++)
		free(t->log[i].msg);
	free(t->log);
	free(t->reason);
	strv_free(t->tags);
	tbuild_plan_free(&t->in);
	free(t);
}

/* Under tb_mu. */
/* STATE/daemon-builds/records/BID.json: a build's outcome outlives aboxd */
static void record_path(const char *bid, char *out, size_t n)
{
	snprintf(out, n, "%s/daemon-builds/records/%s.json", tb_state_dir(), bid);
}

static bool bid_ok(const char *bid)
{
	return strlen(bid) == 36 && strspn(bid, "0123456789abcdef-") == 36;
}

/* Writes t's record (under tb_mu): its status, reason and log. */
static void record(struct tbuild *t)
{
	char dir[4400], p[4500], tmp[4600];
	snprintf(dir, sizeof(dir), "%s/daemon-builds", tb_state_dir());
	(void)mkdir(dir, 0700);
	snprintf(dir, sizeof(dir), "%s/daemon-builds/records", tb_state_dir());
	(void)mkdir(dir, 0700);
	record_path(t->bid, p, sizeof(p));
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	json_object *o = json_object_new_object();
	js_put_str(o, "templateID", t->tid);
	js_put_str(o, "buildID", t->bid);
	js_put_str(o, "owner", t->owner);
	js_put_str(o, "status", status_name[t->status]);
	js_put_str(o, "reason", t->reason);
	js_put_str(o, "step", t->reason_step[0] ? t->reason_step : NULL);
	json_object *logs = json_object_new_array();
	for (size_t i = 0; i < t->nlog; i++) {
		json_object *e = json_object_new_object();
		js_put_str(e, "timestamp", t->log[i].ts);
		js_put_str(e, "level", t->log[i].level);
		js_put_str(e, "message", t->log[i].msg);
		json_object_array_add(logs, e);
	}
	json_object_object_add(o, "logs", logs);
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	(void)write_file_replace(p, tmp, text, strlen(text), 0600, false);
	json_object_put(o);
	struct tl_build b = { .status = status_name[t->status],
			      .created_ms = t->created_ms,
			      .updated_ms = tb_now_ms(),
			      .memory_mb = t->memory_mb,
			      .cpus = t->cpus };
	snprintf(b.bid, sizeof(b.bid), "%s", t->bid);
	tl_index(t->tid, &b);
}

/* A build aboxd knew before it restarted, from its record; one that was
 * running then failed with it. Under tb_mu. */
static struct tbuild *load(const char *owner, const char *tid, const char *bid)
{
	char p[4500];
	record_path(bid, p, sizeof(p));
	json_object *o = NULL;
	if (js_load(p, 64u << 20, &o, NULL, NULL) < 0)
		return NULL;
	struct tbuild *t = NULL;
	const char *st = js_str(o, "status");
	if (!js_str(o, "owner") || strcmp(js_str(o, "owner"), owner) != 0 || !js_str(o, "templateID") ||
	    strcmp(js_str(o, "templateID"), tid) != 0 || !st || !(t = calloc(1, sizeof(*t))))
		goto out;
	snprintf(t->tid, sizeof(t->tid), "%s", tid);
	snprintf(t->name, sizeof(t->name), "%s", tid);
	snprintf(t->bid, sizeof(t->bid), "%s", bid);
	snprintf(t->owner, sizeof(t->owner), "%s", owner);
	t->started = true;
	json_object *logs = js_get(o, "logs", json_type_array);
	for (size_t i = 0; logs && i < json_object_array_length(logs); i++) {
		json_object *e = json_object_array_get_idx(logs, i);
		const char *msg = js_str(e, "message"), *lv = js_str(e, "level");
		if (msg)
			log_add(t, lv && !strcmp(lv, "error") ? "error" : "info", msg);
	}
	if (!strcmp(st, "ready")) {
		t->status = TB_READY;
	} else {
		t->status = TB_ERROR;
		const char *why = !strcmp(st, "error") ? js_str(o, "reason") : NULL;
		t->reason = strdup(why ? why : "aboxd restarted while this build ran; build again");
		snprintf(t->reason_step, sizeof(t->reason_step), "%s",
			 js_str(o, "step") ? js_str(o, "step") : "finalize");
	}
	t->next = builds;
	builds = t;
out:
	json_object_put(o);
	return t;
}

struct tbuild *tb_find(const char *owner, const char *tid, const char *bid)
{
	for (struct tbuild *t = builds; t; t = t->next)
		if (!strcmp(t->owner, owner) && !strcmp(t->tid, tid) && (!bid || !strcmp(t->bid, bid)))
			return t;
	return bid && bid_ok(bid) ? load(owner, tid, bid) : NULL;
}

/* ---- POST /v3/templates */

/* Whether a build of name is under way (or asked for within the hour):
 * its template is not there yet, but its name is taken. */
static bool pending(const char *name)
{
	bool any = false;
	int64_t now = tb_now_ms();
	pthread_mutex_lock(&tb_mu);
	for (struct tbuild *t = builds; t && !any; t = t->next)
		any = !strcmp(t->tid, name) &&
		      (t->status == TB_BUILDING ||
		       (t->status == TB_WAITING && now - t->created_ms < 3600 * 1000));
	pthread_mutex_unlock(&tb_mu);
	return any;
}

static enum MHD_Result request_build(struct request *rq)
{
	enum MHD_Result sent;
	json_object *b = body_json(rq, &sent);
	if (!b)
		return sent;
	const char *name = js_str(b, "name");
	if (!name)
		name = js_str(b, "alias");
	char n[64] = "", why[300] = "";
	if (name)
		snprintf(n, sizeof(n), "%.*s", (int)strcspn(name, ":"), name);
	/* "--" is kept for the templates of tags (ttags.c) */
	bool ok = n[0] && strlen(name ? name : "") < 200 &&
		  str_of(n, "abcdefghijklmnopqrstuvwxyz0123456789-_", 1, 63) && strcmp(n, "host") != 0 &&
		  strcmp(n, "scratch") != 0 && strcmp(n, "base") != 0 && !strstr(n, "--");
	json_object *mem = js_get(b, "memoryMB", json_type_int);
	int64_t memory_mb = mem ? json_object_get_int64(mem) : 0;
	json_object *cpu = js_get(b, "cpuCount", json_type_int);
	int64_t cpus = cpu ? json_object_get_int64(cpu) : 0;
	char **tags = ok ? tt_build_tags(b, name, n, why, sizeof(why)) : NULL;
	if (!ok || !tags) {
		/* name is b's: answered before b goes */
		enum MHD_Result q =
			!ok ? reply_error(rq, 400,
					  "template name '%s': 1-63 of a-z 0-9 - _ (not base, host or "
					  "scratch, and no --)",
					  name ? name : "")
			    : reply_error(rq, 400, "%s", why);
		json_object_put(b);
		return q;
	}
	json_object_put(b);
	if (!tl_may_build(rq->owner, n, pending(n))) {
		strv_free(tags);
		return reply_error(
			rq, 409,
			"template '%s' exists and was not built with this API key: pick another name", n);
	}
	struct tbuild *t = calloc(1, sizeof(*t));
	unsigned char r[16];
	if (!t || random_bytes(r, sizeof(r)) < 0) {
		free(t);
		strv_free(tags);
		return reply_error(rq, 500, "out of memory");
	}
	t->tags = tags;
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	snprintf(t->bid, sizeof(t->bid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2],
		 r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
	snprintf(t->tid, sizeof(t->tid), "%s", n);
	(void)tt_template(n, tags[0], t->name, sizeof(t->name)); /* tt_build_tags checked its length */
	snprintf(t->owner, sizeof(t->owner), "%s", rq->owner);
	t->memory_mb = memory_mb > 0 && memory_mb < (1 << 24) ? memory_mb : 0;
	t->cpus = cpus > 0 && cpus <= 4096 ? cpus : 0;
	t->created_ms = tb_now_ms();
	pthread_mutex_lock(&tb_mu);
	/* the newest TB_KEEP builds stay; older finished ones go */
	size_t count = 0;
	for (struct tbuild **pp = &builds; *pp;) {
		struct tbuild *o = *pp;
		if (++count >= TB_KEEP && (o->status == TB_READY || o->status == TB_ERROR || !o->started)) {
			*pp = o->next;
			build_free(o);
			continue;
		}
		pp = &o->next;
	}
	t->next = builds;
	builds = t;
	pthread_mutex_unlock(&tb_mu);
	/* listed as waiting until its steps come (GET /templates/{name}) */
	struct tl_build lb = { .status = "waiting",
			       .created_ms = t->created_ms,
			       .updated_ms = t->created_ms,
			       .memory_mb = t->memory_mb,
			       .cpus = t->cpus };
	snprintf(lb.bid, sizeof(lb.bid), "%s", t->bid);
	tl_index(t->tid, &lb);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "templateID", json_object_new_string(t->tid));
	json_object_object_add(o, "buildID", json_object_new_string(t->bid));
	json_object *names = json_object_new_array();
	json_object_array_add(names, json_object_new_string(n));
	json_object_object_add(o, "aliases", json_object_get(names));
	json_object_object_add(o, "names", names);
	json_object_object_add(o, "tags", js_strv_array(t->tags));
	json_object_object_add(o, "public", json_object_new_boolean(false));
	return reply_json(rq, 202, o);
}

/* ---- the build itself */

static void on_progress(const abox_template_progress *pg, void *ud)
{
	struct tbuild *t = ud;
	char text[600];
	const char *msg = pg->message;
	if (!msg && pg->pull_state && strcmp(pg->pull_state, "pulling") != 0) {
		snprintf(text, sizeof(text), "layer %u/%u: %llu bytes, %s", pg->layer, pg->layers,
			 (unsigned long long)pg->pull_size, pg->pull_state);
		msg = text;
	}
	if (!msg)
		return;
	pthread_mutex_lock(&tb_mu);
	log_add(t, "info", msg);
	pthread_mutex_unlock(&tb_mu);
}

/* The step of an error ("line N: ..." of the Dockerfile we wrote). */
static void error_step(struct tbuild *t, const char *msg, char *out, size_t n)
{
	const char *l = strstr(msg, "line ");
	unsigned ln = 0;
	if (l && sscanf(l, "line %u", &ln) == 1 && ln > 0 && ln <= t->in.nlines && t->in.line_step[ln])
		snprintf(out, n, "%u", t->in.line_step[ln]);
	else
		snprintf(out, n, "%s", l && ln == 1 ? "base" : "finalize");
}

static void *run(void *arg)
{
	struct tbuild *t = arg;
	char dir[4400], df[4500];
	snprintf(dir, sizeof(dir), "%s/daemon-builds", tb_state_dir());
	(void)mkdir(dir, 0700);
	snprintf(dir, sizeof(dir), "%s/daemon-builds/%s", tb_state_dir(), t->bid);
	snprintf(df, sizeof(df), "%s/Dockerfile", dir);
	abox_error err = ABOX_ERROR_INIT;
	int r = -EIO;
	abox_ctx *ctx = request_ctx();
	if (!ctx)
		abox_error_setx(&err, EIO, "cannot open abox's state");
	else if (mkdir(dir, 0700) < 0)
		r = abox_error_set(&err, errno, "create '%s'", dir);
	else {
		char tmp[4600];
		snprintf(tmp, sizeof(tmp), "%s.tmp", df);
		if ((r = write_file_replace(df, tmp, t->in.dockerfile, strlen(t->in.dockerfile), 0600,
					    false)) < 0)
			abox_error_set(&err, -r, "write '%s'", df);
	}
	if (ctx && r >= 0) {
		abox_template_opts o = ABOX_TEMPLATE_OPTS_INIT;
		o.progress = on_progress;
		o.userdata = t;
		o.start_cmd = t->in.start && *t->in.start ? t->in.start : NULL;
		o.ready_cmd = t->in.ready && *t->in.ready ? t->in.ready : NULL;
		abox_pull_opts po = ABOX_PULL_OPTS_INIT;
		po.username = t->in.user;
		po.password = t->in.pass;
		abox_dockerfile_opts d = ABOX_DOCKERFILE_OPTS_INIT;
		d.context_archives = (const char *const *)t->in.archives;
		d.pull = &po;
		d.flags = t->in.force ? ABOX_DOCKERFILE_NO_CACHE : 0;
		/* RUN steps get the network a create without settings gets */
		abox_net_opts net = ABOX_NET_OPTS_INIT;
		net.mode = daemon_cfg.net_default;
		d.net = &net;
		d.memory_bytes = t->memory_mb ? (uint64_t)t->memory_mb << 20 : 0;
		r = abox_template_build_dockerfile(ctx, t->name, df, &o, &d, &err);
		/* every further tag a template of its own (ttags.c) */
		for (size_t i = 1; r >= 0 && t->tags[i]; i++) {
			char other[64];
			(void)tt_template(t->tid, t->tags[i], other, sizeof(other));
			r = abox_template_copy(ctx, t->name, other, &err);
		}
		if (r >= 0 && tt_record(t->tid, t->tags, t->bid) < 0)
			r = abox_error_setx(&err, EIO, "cannot record the tags of '%s'", t->tid);
	}
	abox_ctx_free(ctx);
	(void)rm_rf_at(AT_FDCWD, dir, 0);
	pthread_mutex_lock(&tb_mu);
	if (r < 0) {
		t->status = TB_ERROR;
		t->reason = strdup(err.msg);
		error_step(t, err.msg, t->reason_step, sizeof(t->reason_step));
		log_add(t, "error", err.msg);
	} else {
		t->status = TB_READY;
		log_add(t, "info", "build finished");
	}
	record(t);
	pthread_mutex_unlock(&tb_mu);
	return NULL;
}

static enum MHD_Result start(struct request *rq, const char *tid, const char *bid)
{
	enum MHD_Result sent;
	json_object *b = body_json(rq, &sent);
	if (!b)
		return sent;
	char up[4400], why[512];
	tb_upload_path(rq->owner, NULL, up, sizeof(up));
	struct tb_plan p;
	int r = tbuild_plan(b, up, &p, why, sizeof(why));
	json_object_put(b);
	if (r < 0)
		return reply_error(rq, 400, "%s", why);
	pthread_mutex_lock(&tb_mu);
	struct tbuild *t = tb_find(rq->owner, tid, bid);
	if (!t || t->started) {
		pthread_mutex_unlock(&tb_mu);
		tbuild_plan_free(&p);
		return t ? reply_error(rq, 409, "build %s has started already", bid)
			 : reply_error(rq, 404, "template '%s' has no build %s", tid, bid);
	}
	t->in = p;
	t->started = true;
	t->status = TB_BUILDING;
	log_add(t, "info", "build started");
	record(t);
	pthread_t th;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&th, &at, run, t);
	pthread_attr_destroy(&at);
	if (r != 0) {
		t->status = TB_ERROR;
		t->reason = strdup("could not start the build");
		snprintf(t->reason_step, sizeof(t->reason_step), "base");
	}
	pthread_mutex_unlock(&tb_mu);
	return reply_empty(rq, 202);
}

static enum MHD_Result status(struct request *rq, const char *tid, const char *bid)
{
	const char *off_s = query(rq, "logsOffset"), *lim_s = query(rq, "limit");
	long off = off_s ? atol(off_s) : 0, lim = lim_s ? atol(lim_s) : 100;
	if (off < 0)
		off = 0;
	if (lim <= 0 || lim > 1000)
		lim = 100;
	pthread_mutex_lock(&tb_mu);
	struct tbuild *t = tb_find(rq->owner, tid, bid);
	if (!t) {
		pthread_mutex_unlock(&tb_mu);
		return reply_error(rq, 404, "template '%s' has no build %s", tid, bid);
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "templateID", json_object_new_string(t->tid));
	json_object_object_add(o, "buildID", json_object_new_string(t->bid));
	json_object_object_add(o, "status", json_object_new_string(status_name[t->status]));
	json_object *logs = json_object_new_array(), *entries = json_object_new_array();
	for (size_t i = (size_t)off; i < t->nlog && i < (size_t)off + (size_t)lim; i++) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "timestamp", json_object_new_string(t->log[i].ts));
		json_object_object_add(e, "level", json_object_new_string(t->log[i].level));
		json_object_object_add(e, "message", json_object_new_string(t->log[i].msg));
		json_object_array_add(entries, e);
		json_object_array_add(logs, json_object_new_string(t->log[i].msg));
	}
	json_object_object_add(o, "logs", logs);
	json_object_object_add(o, "logEntries", entries);
	if (t->status == TB_ERROR) {
		json_object *reason = json_object_new_object();
		json_object_object_add(reason, "message",
				       json_object_new_string(t->reason ? t->reason : "build failed"));
		json_object_object_add(reason, "step",
				       json_object_new_string(t->reason_step[0] ? t->reason_step : "base"));
		json_object_object_add(o, "reason", reason);
	}
	pthread_mutex_unlock(&tb_mu);
	return reply_json(rq, 200, o);
}

/* "a/b/c" split into up to 4 path components (bounded, no empties) */
static int parts(const char *u, char v[4][128])
{
	int n = 0;
	while (*u == '/')
		u++;
	while (*u && n < 4) {
		size_t l = strcspn(u, "/?");
		if (!l || l >= 128)
			return -1;
		memcpy(v[n], u, l);
		v[n++][l] = '\0';
		u += l;
		if (*u == '?')
			break;
		if (*u == '/')
			u++;
	}
	return *u && *u != '?' ? -1 : n;
}

enum MHD_Result tbuild_route(struct request *rq, const char *m, const char *u, bool *handled)
{
	*handled = true;
	bool post = !strcmp(m, "POST"), get = !strcmp(m, "GET");
	enum MHD_Result q = tt_route(rq, m, u, handled);
	if (*handled)
		return q;
	*handled = true;
	if ((!strcmp(u, "/v3/templates") || !strcmp(u, "/v2/templates")) && post)
		return request_build(rq);
	char v[4][128];
	int n;
	if (!strcmp(u, "/templates") && get)
		return tl_list(rq);
	if (!strncmp(u, "/templates/", 11) && get && (n = parts(u + 11, v)) >= 0) {
		if (n == 1 && strcmp(v[0], "aliases") != 0)
			return tl_get(rq, v[0]);
		if (n == 3 && !strcmp(v[1], "files"))
			return tb_files(rq, v[0], v[2]);
		if (n == 4 && !strcmp(v[1], "builds") && !strcmp(v[3], "status"))
			return status(rq, v[0], v[2]);
	}
	if (!strncmp(u, "/v2/templates/", 14) && post && (n = parts(u + 14, v)) == 3 &&
	    !strcmp(v[1], "builds"))
		return start(rq, v[0], v[2]);
	*handled = false;
	return MHD_NO;
}
