/* remote/sandbox.c — the sandbox lifecycle through aboxd's control plane
 * (the E2B REST API). Runs in the caller's process. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "remote/remote.h"
#include "versioned.h"

static int r_open(abox_ctx *ctx, const char *url, const char *key, abox_error *err)
{
	static bool curl_ready;
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
			return abox_error_setx(err, EIO, "remote: libcurl failed to initialise");
		curl_ready = true;
	}
	struct remote *rm = calloc(1, sizeof(*rm));
	if (!rm)
		return abox_error_set(err, ENOMEM, "remote");
	if (!strncmp(url, "unix:", 5)) {
		rm->unix_path = strdup(url + 5);
		rm->base = strdup("http://localhost");
	} else if (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8)) {
		rm->base = strdup(url);
		size_t n = rm->base ? strlen(rm->base) : 0;
		while (n > 8 && rm->base[n - 1] == '/')
			rm->base[--n] = '\0';
	} else {
		free(rm);
		return abox_error_setx(err, EINVAL, "remote URL '%s': want http://HOST:PORT or unix:/PATH", url);
	}
	rm->key = key && *key ? strdup(key) : NULL;
	rm->easy = curl_easy_init();
	if (!rm->base || !rm->easy || (key && *key && !rm->key)) {
		free(rm->base);
		free(rm->unix_path);
		free(rm->key);
		if (rm->easy)
			curl_easy_cleanup(rm->easy);
		free(rm);
		return abox_error_set(err, ENOMEM, "remote");
	}
	ctx->remote = rm;
	return 0;
}

static void r_close(abox_ctx *ctx)
{
	struct remote *rm = ctx->remote;
	if (!rm)
		return;
	curl_easy_cleanup(rm->easy);
	free(rm->base);
	free(rm->unix_path);
	free(rm->key);
	free(rm);
	ctx->remote = NULL;
}

static int64_t jint(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

static void info_from(json_object *o, abox_sandbox_info *out)
{
	uint32_t version = out->version;
	memset(out, 0, sizeof(*out));
	out->version = version;
	snprintf(out->id, sizeof(out->id), "%s", js_str(o, "sandboxID") ? js_str(o, "sandboxID") : "");
	snprintf(out->template_name, sizeof(out->template_name), "%s", js_str(o, "templateID") ? js_str(o, "templateID") : "");
	const char *st = js_str(o, "state");
	out->state = st && !strcmp(st, "paused") ? ABOX_STATE_PAUSED : ABOX_STATE_RUNNING;
	out->created_ms = remote_time_ms(js_str(o, "startedAt"));
	int64_t end = remote_time_ms(js_str(o, "endAt"));
	/* the daemon reports "no timeout" as an end far in the future */
	out->deadline_ms = end && end - out->created_ms < 50LL * 365 * 86400 * 1000 ? end : 0;
	out->cpu_millis = (uint32_t)jint(o, "cpuCount") * 1000;
	out->memory_bytes = (uint64_t)jint(o, "memoryMB") << 20;
	out->disk_bytes = (uint64_t)jint(o, "diskSizeMB") << 20;
	json_object *m;
	if (json_object_object_get_ex(o, "metadata", &m))
		out->metadata_json = strdup(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN));
}

static abox_sandbox *sandbox_new(abox_ctx *ctx, const char *id, const char *token, uint32_t flags)
{
	abox_sandbox *sb = calloc(1, sizeof(*sb));
	struct remote_sandbox *rs = calloc(1, sizeof(*rs));
	/* an id from the daemon goes into URLs and headers: exactly 20 of
	 * [a-z0-9], nothing that could split a header line */
	if (!sb || !rs || strlen(id) != 20 || strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") != 20) {
		free(sb);
		free(rs);
		return NULL;
	}
	sb->ctx = ctx;
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	sb->flags = flags;
	sb->conn = sb->rundir_fd = sb->pidfd = sb->template_lock = sb->layer_fd = -1;
	/* the access token goes into a header too */
	if (token && strspn(token, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != strlen(token))
		token = NULL;
	rs->token = token ? strdup(token) : NULL;
	sb->remote = rs;
	return sb;
}

/* a JSON object of "k=v" entries */
static json_object *pairs(const char *const *v)
{
	json_object *o = json_object_new_object();
	for (size_t i = 0; v && v[i]; i++) {
		const char *eq = strchr(v[i], '=');
		if (!eq)
			continue;
		char *k = strndup(v[i], (size_t)(eq - v[i]));
		if (k)
			json_object_object_add(o, k, json_object_new_string(eq + 1));
		free(k);
	}
	return o;
}

static int post_json(abox_ctx *ctx, const char *path, json_object *body, bool idempotent, struct rbuf *resp,
		     long *status, abox_error *err)
{
	const char *s = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : "{}";
	struct rreq q = { .method = "POST", .path = path, .body = s, .body_len = strlen(s), .idempotent = idempotent };
	return remote_call(ctx->remote, &q, resp, status, err);
}

static int r_create(abox_ctx *ctx, const abox_sandbox_opts *o, abox_sandbox **out, abox_error *err)
{
	abox_sandbox_opts d = ABOX_SANDBOX_OPTS_INIT;
	if (!o)
		o = &d;
	if (o->seccomp_policy)
		return backend_unsupported(ctx, "create with a seccomp policy (the daemon's policy applies)", err);
	if (o->pids)
		return backend_unsupported(ctx, "create with a pids limit", err);
	json_object *b = json_object_new_object();
	const char *tmpl = o->version >= 2 && o->snapshot ? o->snapshot : o->template_name;
	if (tmpl)
		json_object_object_add(b, "templateID", json_object_new_string(tmpl));
	if (o->timeout_ms)
		json_object_object_add(b, "timeout", json_object_new_int64((o->timeout_ms + 999) / 1000));
	json_object_object_add(b, "metadata", pairs(o->metadata));
	json_object_object_add(b, "envVars", pairs(o->env));
	if (o->flags & ABOX_SANDBOX_AUTO_PAUSE)
		json_object_object_add(b, "autoPause", json_object_new_boolean(true));
	if (o->flags & ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY)
		json_object_object_add(b, "autoPauseMemory", json_object_new_boolean(false));
	if (o->cpu_millis)
		json_object_object_add(b, "cpuCount", json_object_new_int((int)((o->cpu_millis + 999) / 1000)));
	if (o->memory_bytes)
		json_object_object_add(b, "memoryMB", json_object_new_int64((int64_t)(o->memory_bytes >> 20)));
	if (o->disk_bytes)
		json_object_object_add(b, "diskSizeMB", json_object_new_int64((int64_t)(o->disk_bytes >> 20)));
	struct rbuf resp = { 0 };
	/* not retried: a second create would make a second sandbox */
	int r = post_json(ctx, "/sandboxes", b, false, &resp, NULL, err);
	json_object_put(b);
	if (r < 0)
		return r;
	json_object *j = remote_json(&resp, "create", err);
	rbuf_free(&resp);
	if (!j)
		return -EPROTO;
	const char *id = js_str(j, "sandboxID");
	abox_sandbox *sb = id ? sandbox_new(ctx, id, js_str(j, "envdAccessToken"), o->flags) : NULL;
	json_object_put(j);
	if (!sb)
		return abox_error_setx(err, EPROTO, "create: the daemon's reply has no usable sandboxID");
	*out = sb;
	return 0;
}

static int get_info(abox_ctx *ctx, const char *id, abox_sandbox_info *out, char **token, abox_error *err)
{
	if (strlen(id) != 20 || strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") != 20)
		return abox_error_setx(err, ENOENT, "sandbox '%s' not found", id);
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	struct rreq q = { .method = "GET", .path = path, .idempotent = true };
	struct rbuf resp = { 0 };
	int r = remote_call(ctx->remote, &q, &resp, NULL, err);
	if (r < 0)
		return r;
	json_object *j = remote_json(&resp, "info", err);
	rbuf_free(&resp);
	if (!j)
		return -EPROTO;
	info_from(j, out);
	if (token)
		*token = js_str(j, "envdAccessToken") ? strdup(js_str(j, "envdAccessToken")) : NULL;
	json_object_put(j);
	return 0;
}

static int r_info(abox_ctx *ctx, const char *id, abox_sandbox_info *out, abox_error *err)
{
	return get_info(ctx, id, out, NULL, err);
}

static int r_connect(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err)
{
	abox_sandbox_info in = { .version = ABOX_SANDBOX_INFO_VERSION };
	char *token = NULL;
	int r = get_info(ctx, id, &in, &token, err);
	if (r < 0)
		return r;
	abox_sandbox *sb = sandbox_new(ctx, id, token, 0);
	if (sb)
		sb->paused = in.state == ABOX_STATE_PAUSED;
	free(token);
	abox_sandbox_info_clear(&in);
	if (!sb)
		return abox_error_set(err, ENOMEM, "connect");
	*out = sb;
	return 0;
}

/* "k=v&k2=v2", URL-escaped as one query value (E2B's metadata filter) */
static char *metadata_query(CURL *h, const char *const *md)
{
	size_t n = 1;
	for (size_t i = 0; md && md[i]; i++)
		n += strlen(md[i]) * 3 + 1;
	char *raw = calloc(1, n), *esc = NULL;
	if (!raw)
		return NULL;
	for (size_t i = 0; md && md[i]; i++) {
		if (i)
			strcat(raw, "&");
		char *e = curl_easy_escape(h, md[i], 0);
		/* keep the '=' between key and value, escaped once more below */
		if (e) {
			char *eq = strstr(e, "%3D");
			if (eq) {
				*eq = '\0';
				strcat(raw, e);
				strcat(raw, "=");
				strcat(raw, eq + 3);
			} else {
				strcat(raw, e);
			}
			curl_free(e);
		}
	}
	char *e = curl_easy_escape(h, raw, 0);
	free(raw);
	if (e) {
		esc = strdup(e);
		curl_free(e);
	}
	return esc;
}

/* Appends to buf at *k; false (and buf unchanged past *k) when it does
 * not fit. */
static bool append(char *buf, size_t n, size_t *k, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool append(char *buf, size_t n, size_t *k, const char *fmt, ...)
{
	if (*k >= n)
		return false;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *k, n - *k, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= n - *k) {
		buf[*k] = '\0';
		return false;
	}
	*k += (size_t)w;
	return true;
}

static int r_query(abox_ctx *ctx, const abox_list_opts *o, abox_sandbox_info **infos, size_t *n, char **next,
		   abox_error *err)
{
	abox_list_opts d = ABOX_LIST_OPTS_INIT;
	if (!o)
		o = &d;
	*infos = NULL;
	*n = 0;
	if (next)
		*next = NULL;
	if (o->state == ABOX_STATE_DEAD)
		return 0; /* the daemon hands out no dead sandboxes */
	char path[4096];
	size_t k = 0;
	bool ok = append(path, sizeof(path), &k, "/v2/sandboxes?state=%s",
			 o->state == ABOX_STATE_RUNNING ? "running"
			 : o->state == ABOX_STATE_PAUSED ? "paused"
							 : "running,paused");
	if (ok && o->limit)
		ok = append(path, sizeof(path), &k, "&limit=%u", o->limit > 100 ? 100 : o->limit);
	if (ok && o->next_token && *o->next_token) {
		char *e = curl_easy_escape(ctx->remote->easy, o->next_token, 0);
		ok = e && append(path, sizeof(path), &k, "&nextToken=%s", e);
		curl_free(e);
	}
	if (ok && o->metadata && o->metadata[0]) {
		char *mq = metadata_query(ctx->remote->easy, o->metadata);
		if (!mq)
			return abox_error_set(err, ENOMEM, "list");
		ok = append(path, sizeof(path), &k, "&metadata=%s", mq);
		free(mq);
	}
	if (!ok)
		return abox_error_setx(err, E2BIG, "list: the page token or the metadata filter is too long");
	char *tok = NULL;
	struct rreq q = { .method = "GET", .path = path, .idempotent = true, .next_token = &tok };
	struct rbuf resp = { 0 };
	int r = remote_call(ctx->remote, &q, &resp, NULL, err);
	if (r < 0) {
		free(tok);
		return r;
	}
	json_object *j = remote_json(&resp, "list", err);
	rbuf_free(&resp);
	if (!j || !json_object_is_type(j, json_type_array)) {
		json_object_put(j);
		free(tok);
		return abox_error_setx(err, EPROTO, "list: the daemon's reply is not an array");
	}
	size_t cnt = json_object_array_length(j);
	abox_sandbox_info *v = calloc(cnt ? cnt : 1, sizeof(*v));
	if (!v) {
		json_object_put(j);
		free(tok);
		return abox_error_set(err, ENOMEM, "list");
	}
	for (size_t i = 0; i < cnt; i++) {
		v[i].version = ABOX_SANDBOX_INFO_VERSION;
		info_from(json_object_array_get_idx(j, i), &v[i]);
	}
	json_object_put(j);
	*infos = v;
	*n = cnt;
	if (next)
		*next = tok;
	else
		free(tok);
	return 0;
}

static int r_kill(abox_sandbox *sb, abox_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s", sb->id);
	struct rreq q = { .method = "DELETE", .path = path, .idempotent = true };
	int r = remote_call(sb->ctx->remote, &q, NULL, NULL, err);
	if (r == -ENOENT) { /* gone already: kill is idempotent */
		abox_error_clear(err);
		return 0;
	}
	return r;
}

static void r_release(abox_sandbox *sb)
{
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		(void)r_kill(sb, NULL);
	if (sb->remote) {
		free(sb->remote->token);
		free(sb->remote);
		sb->remote = NULL;
	}
	if (sb->conn >= 0)
		close(sb->conn);
	proto_reader_free(&sb->rd);
}

static int r_set_timeout(abox_sandbox *sb, uint32_t timeout_ms, abox_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s/timeout", sb->id);
	json_object *b = json_object_new_object();
	/* E2B's 0 ends the sandbox now; this API's 0 is "no timeout", which
	 * the daemon's protocol has as its longest timeout, 30 days */
	json_object_object_add(b, "timeout", json_object_new_int64(timeout_ms ? (timeout_ms + 999) / 1000 : 86400 * 30));
	int r = post_json(sb->ctx, path, b, true, NULL, NULL, err);
	json_object_put(b);
	return r;
}

static int r_pause(abox_sandbox *sb, uint32_t flags, abox_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", sb->id);
	json_object *b = json_object_new_object();
	json_object_object_add(b, "memory", json_object_new_boolean(!(flags & ABOX_PAUSE_NO_MEMORY)));
	int r = post_json(sb->ctx, path, b, false, NULL, NULL, err);
	json_object_put(b);
	if (r >= 0)
		sb->paused = true;
	return r;
}

static int r_resume(abox_sandbox *sb, abox_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s/connect", sb->id);
	/* timeout 0: the deadline stays where the pause left it */
	json_object *b = json_object_new_object();
	json_object_object_add(b, "timeout", json_object_new_int(0));
	long status = 0;
	int r = post_json(sb->ctx, path, b, true, NULL, &status, err);
	json_object_put(b);
	if (r < 0)
		return r;
	sb->paused = false;
	if (status == 200)
		return abox_error_setx(err, EALREADY, "resume: sandbox %s is not paused", sb->id);
	return 0;
}

static int r_metrics(abox_sandbox *sb, abox_metrics *out, abox_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s/metrics", sb->id);
	struct rreq q = { .method = "GET", .path = path, .idempotent = true };
	struct rbuf resp = { 0 };
	int r = remote_call(sb->ctx->remote, &q, &resp, NULL, err);
	if (r < 0)
		return r;
	json_object *j = remote_json(&resp, "metrics", err);
	rbuf_free(&resp);
	if (!j)
		return -EPROTO;
	size_t n = json_object_is_type(j, json_type_array) ? json_object_array_length(j) : 0;
	if (!n) {
		json_object_put(j);
		return abox_error_setx(err, EAGAIN, "metrics: sandbox %s reports none (paused?)", sb->id);
	}
	json_object *m = json_object_array_get_idx(j, n - 1), *v;
	uint32_t version = out->version;
	memset(out, 0, sizeof(*out));
	out->version = version;
	out->timestamp_ms = jint(m, "timestampUnix") * 1000;
	out->cpu_used_usec = UINT64_MAX; /* the protocol carries a percentage only */
	out->cpu_pct = json_object_object_get_ex(m, "cpuUsedPct", &v) ? json_object_get_double(v) : 0;
	out->mem_used = (uint64_t)jint(m, "memUsed");
	out->mem_limit = (uint64_t)jint(m, "memTotal");
	out->disk_used = (uint64_t)jint(m, "diskUsed");
	out->disk_limit = (uint64_t)jint(m, "diskTotal");
	json_object_put(j);
	return 0;
}

static int r_snapshot(abox_sandbox *sb, const char *name, abox_snapshot_info *out, abox_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s/snapshots", sb->id);
	json_object *b = json_object_new_object();
	if (name)
		json_object_object_add(b, "name", json_object_new_string(name));
	struct rbuf resp = { 0 };
	int r = post_json(sb->ctx, path, b, false, &resp, NULL, err);
	json_object_put(b);
	if (r < 0)
		return r;
	json_object *j = remote_json(&resp, "snapshot", err);
	rbuf_free(&resp);
	if (!j)
		return -EPROTO;
	if (out) {
		versioned_clear(VERSIONED_SNAPSHOT_INFO, out);
		snprintf(out->id, sizeof(out->id), "%s", js_str(j, "snapshotID") ? js_str(j, "snapshotID") : "");
		snprintf(out->name, sizeof(out->name), "%s", name ? name : "");
		out->created_ms = clock_wall_ms();
	}
	json_object_put(j);
	return 0;
}

static int r_fork(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, abox_sandbox **forks, abox_error *errs,
		  abox_error *err)
{
	if (count < 1 || count > 64)
		return abox_error_setx(err, EINVAL, "fork: count %u is not between 1 and 64", count);
	for (unsigned i = 0; i < count; i++)
		forks[i] = NULL;
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s/fork", sb->id);
	json_object *b = json_object_new_object();
	json_object_object_add(b, "count", json_object_new_int((int)count));
	if (timeout_ms)
		json_object_object_add(b, "timeout", json_object_new_int64((timeout_ms + 999) / 1000));
	struct rbuf resp = { 0 };
	int r = post_json(sb->ctx, path, b, false, &resp, NULL, err);
	json_object_put(b);
	if (r < 0)
		return r;
	json_object *j = remote_json(&resp, "fork", err);
	rbuf_free(&resp);
	if (!j || !json_object_is_type(j, json_type_array)) {
		json_object_put(j);
		return abox_error_setx(err, EPROTO, "fork: the daemon's reply is not an array");
	}
	int made = 0;
	for (unsigned i = 0; i < count; i++) {
		json_object *e = json_object_array_get_idx(j, i), *s, *x;
		if (errs)
			abox_error_clear(&errs[i]);
		if (e && json_object_object_get_ex(e, "sandbox", &s) && js_str(s, "sandboxID") &&
		    (forks[i] = sandbox_new(sb->ctx, js_str(s, "sandboxID"), js_str(s, "envdAccessToken"), 0))) {
			made++;
			continue;
		}
		const char *msg = e && json_object_object_get_ex(e, "error", &x) ? js_str(x, "message") : NULL;
		if (errs)
			abox_error_setx(&errs[i], EIO, "fork %u: %s", i + 1, msg ? msg : "no sandbox in the reply");
	}
	json_object_put(j);
	return made;
}

static void snap_from(json_object *o, abox_snapshot_info *s)
{
	json_object *names;
	memset(s, 0, sizeof(*s));
	s->version = ABOX_SNAPSHOT_INFO_VERSION;
	snprintf(s->id, sizeof(s->id), "%s", js_str(o, "snapshotID") ? js_str(o, "snapshotID") : "");
	if (json_object_object_get_ex(o, "names", &names) && json_object_is_type(names, json_type_array) &&
	    json_object_array_length(names) > 0)
		snprintf(s->name, sizeof(s->name), "%s", json_object_get_string(json_object_array_get_idx(names, 0)));
}

static int r_snapshot_list(abox_ctx *ctx, abox_snapshot_info **out, size_t *n, abox_error *err)
{
	struct rreq q = { .method = "GET", .path = "/snapshots", .idempotent = true };
	struct rbuf resp = { 0 };
	int r = remote_call(ctx->remote, &q, &resp, NULL, err);
	if (r < 0)
		return r;
	json_object *j = remote_json(&resp, "snapshots", err);
	rbuf_free(&resp);
	if (!j || !json_object_is_type(j, json_type_array)) {
		json_object_put(j);
		return abox_error_setx(err, EPROTO, "snapshots: the daemon's reply is not an array");
	}
	size_t cnt = json_object_array_length(j);
	abox_snapshot_info *v = calloc(cnt ? cnt : 1, sizeof(*v));
	if (!v) {
		json_object_put(j);
		return abox_error_set(err, ENOMEM, "snapshots");
	}
	for (size_t i = 0; i < cnt; i++)
		snap_from(json_object_array_get_idx(j, i), &v[i]);
	json_object_put(j);
	*out = v;
	*n = cnt;
	return 0;
}

static int r_snapshot_remove(abox_ctx *ctx, const char *ref, abox_error *err)
{
	char *e = curl_easy_escape(ctx->remote->easy, ref, 0);
	char path[512];
	snprintf(path, sizeof(path), "/templates/%s", e ? e : "");
	curl_free(e);
	struct rreq q = { .method = "DELETE", .path = path, .idempotent = true };
	return remote_call(ctx->remote, &q, NULL, NULL, err);
}

/* The daemon collects, reaps and keeps spare disks for its own
 * sandboxes: there is nothing for its client to do. */
static int r_gc(abox_ctx *ctx, bool maybe, unsigned *removed, abox_error *err)
{
	(void)ctx, (void)maybe, (void)err;
	if (removed)
		*removed = 0;
	return 0;
}

static int r_reap(abox_ctx *ctx, uint32_t steps, unsigned *paused, int64_t *next, abox_error *err)
{
	(void)ctx, (void)steps, (void)paused, (void)next, (void)err;
	return 0;
}

static int r_spare_disks(abox_ctx *ctx, uint64_t bytes, unsigned count, abox_error *err)
{
	(void)ctx, (void)bytes, (void)count, (void)err;
	return 0;
}

/* The ids of one query, every page. */
static int r_list(abox_ctx *ctx, char ***ids, abox_error *err)
{
	abox_list_opts o = ABOX_LIST_OPTS_INIT;
	abox_sandbox_info *v = NULL;
	size_t n = 0;
	int r = r_query(ctx, &o, &v, &n, NULL, err);
	if (r < 0)
		return r;
	char **ids_out = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		if (ids_out)
			ids_out[i] = strdup(v[i].id);
		abox_sandbox_info_clear(&v[i]);
	}
	free(v);
	if (!ids_out)
		return abox_error_set(err, ENOMEM, "list");
	*ids = ids_out;
	return 0;
}

static int r_snapshot_flags(abox_sandbox *sb, const char *name, uint32_t flags, abox_snapshot_info *out,
			    abox_error *err)
{
	if (flags)
		return backend_unsupported(sb->ctx, "snapshot --memory (the daemon decides)", err);
	return r_snapshot(sb, name, out, err);
}

/* The daemon forks with memory when its checkpointer works: the flag
 * is its choice, not the client's. */
static int r_fork_flags(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, uint32_t flags, abox_sandbox **forks,
			abox_error *errs, abox_error *err)
{
	(void)flags;
	return r_fork(sb, count, timeout_ms, forks, errs, err);
}

/* aboxd's DELETE forgets a snapshot in use, as E2B's does. */
static int r_snapshot_remove_any(abox_ctx *ctx, const char *ref, bool forget, abox_error *err)
{
	(void)forget;
	return r_snapshot_remove(ctx, ref, err);
}

static const struct abox_backend_ops remote_ops_table = {
	.name = "a remote abox",
	.open = r_open,
	.close = r_close,
	.gc = r_gc,
	.reap = r_reap,
	.spare_disks = r_spare_disks,
	.create = r_create,
	.connect = r_connect,
	.info = r_info,
	.list = r_list,
	.query = r_query,
	.kill = r_kill,
	.release = r_release,
	.set_timeout = r_set_timeout,
	.pause = r_pause,
	.resume = r_resume,
	.metrics = r_metrics,
	.snapshot = r_snapshot_flags,
	.fork = r_fork_flags,
	.snapshot_list = r_snapshot_list,
	.snapshot_remove = r_snapshot_remove_any,
	.proc_start = remote_proc_start,
	.proc_attach = remote_proc_attach,
	.proc_list = remote_proc_list,
	.proc_input = remote_proc_input,
	.proc_signal = remote_proc_signal,
	.proc_resize = remote_proc_resize,
	.proc_free = remote_proc_free,
	.truncate_finish = remote_truncate_finish,
	.file_read = remote_file_read,
	.file_write = remote_file_write,
	.file_stat = remote_file_stat,
	.file_list = remote_file_list,
	.file_mkdir = remote_file_mkdir,
	.file_move = remote_file_move,
	.file_remove = remote_file_remove,
	.watch_start = remote_watch_start,
	.watch_stop = remote_watch_stop,
};

const struct abox_backend_ops *remote_backend(void)
{
	return &remote_ops_table;
}
