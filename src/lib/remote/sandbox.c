/* remote/sandbox.c — one sandbox's lifecycle through aboxd's control
 * plane (the E2B REST API): create, info and connect, kill and release,
 * timeout, pause and resume, metrics; and the handle and info record the
 * other control-plane files build from the daemon's replies. Not here:
 * lists and queries (query.c), snapshots and forks (snapshot.c), the
 * table (ops.c). Runs in the caller's process. */
#include <errno.h>
#include <string.h>

#include "base/json.h"
#include "remote/remote.h"

static int64_t jint(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

void remote_info_from(json_object *o, abox_sandbox_info *out)
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

abox_sandbox *remote_sandbox_new(abox_ctx *ctx, const char *id, const char *token, uint32_t flags)
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

static struct rreq post_req(const char *path, json_object *body, bool idempotent)
{
	const char *s = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : "{}";
	return (struct rreq){
		.method = "POST", .path = path, .body = s, .body_len = strlen(s), .idempotent = idempotent
	};
}

int remote_post_json(abox_ctx *ctx, const char *path, json_object *body, bool idempotent, struct rbuf *resp,
		     long *status, abox_error *err)
{
	struct rreq q = post_req(path, body, idempotent);
	return remote_call(ctx->remote, &q, resp, status, err);
}

int remote_post_reply(abox_ctx *ctx, const char *path, json_object *body, const char *what, json_object **out,
		      abox_error *err)
{
	struct rreq q = post_req(path, body, false);
	return remote_call_json(ctx->remote, &q, what, out, err);
}

int remote_create(abox_ctx *ctx, const abox_sandbox_opts *o, abox_sandbox **out, abox_error *err)
{
	abox_sandbox_opts d = ABOX_SANDBOX_OPTS_INIT;
	if (!o)
		o = &d;
	if (o->seccomp_policy)
		return backend_unsupported(ctx, "create with a seccomp policy (the daemon's policy applies)", err);
	if (o->pids)
		return backend_unsupported(ctx, "create with a pids limit", err);
	if (o->version >= 4 && o->oci_bundle)
		return backend_unsupported(ctx, "an OCI container (abox oci runs on the node itself)", err);
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
		json_object_object_add(b, "diskSizeMB",
				       json_object_new_int64((int64_t)(o->disk_bytes >> 20)));
	/* not retried: a second create would make a second sandbox */
	json_object *j;
	int r = remote_post_reply(ctx, "/sandboxes", b, "create", &j, err);
	json_object_put(b);
	if (r < 0)
		return r;
	const char *id = js_str(j, "sandboxID");
	abox_sandbox *sb = id ? remote_sandbox_new(ctx, id, js_str(j, "envdAccessToken"), o->flags) : NULL;
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
	json_object *j;
	int r = remote_call_json(ctx->remote, &q, "info", &j, err);
	if (r < 0)
		return r;
	remote_info_from(j, out);
	if (token)
		*token = js_str(j, "envdAccessToken") ? strdup(js_str(j, "envdAccessToken")) : NULL;
	json_object_put(j);
	return 0;
}

int remote_info(abox_ctx *ctx, const char *id, abox_sandbox_info *out, abox_error *err)
{
	return get_info(ctx, id, out, NULL, err);
}

int remote_connect(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err)
{
	abox_sandbox_info in = { .version = ABOX_SANDBOX_INFO_VERSION };
	char *token = NULL;
	int r = get_info(ctx, id, &in, &token, err);
	if (r < 0)
		return r;
	abox_sandbox *sb = remote_sandbox_new(ctx, id, token, 0);
	if (sb)
		sb->paused = in.state == ABOX_STATE_PAUSED;
	free(token);
	abox_sandbox_info_clear(&in);
	if (!sb)
		return abox_error_set(err, ENOMEM, "connect");
	*out = sb;
	return 0;
}
int remote_kill(abox_sandbox *sb, abox_error *err)
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

void remote_release(abox_sandbox *sb)
{
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		(void)remote_kill(sb, NULL);
	if (sb->remote) {
		free(sb->remote->token);
		free(sb->remote);
		sb->remote = NULL;
	}
	if (sb->conn >= 0)
		close(sb->conn);
	proto_reader_free(&sb->rd);
}

int remote_set_timeout(abox_sandbox *sb, uint32_t timeout_ms, abox_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s/timeout", sb->id);
	json_object *b = json_object_new_object();
	/* E2B's 0 ends the sandbox now; this API's 0 is "no timeout", which
	 * the daemon's protocol has as its longest timeout, 30 days */
	json_object_object_add(b, "timeout", json_object_new_int64(timeout_ms ? (timeout_ms + 999) / 1000 : 86400 * 30));
	int r = remote_post_json(sb->ctx, path, b, true, NULL, NULL, err);
	json_object_put(b);
	return r;
}

int remote_pause(abox_sandbox *sb, uint32_t flags, abox_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s/pause", sb->id);
	json_object *b = json_object_new_object();
	json_object_object_add(b, "memory", json_object_new_boolean(!(flags & ABOX_PAUSE_NO_MEMORY)));
	int r = remote_post_json(sb->ctx, path, b, false, NULL, NULL, err);
	json_object_put(b);
	if (r >= 0)
		sb->paused = true;
	return r;
}

int remote_resume(abox_sandbox *sb, abox_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s/connect", sb->id);
	/* timeout 0: the deadline stays where the pause left it */
	json_object *b = json_object_new_object();
	json_object_object_add(b, "timeout", json_object_new_int(0));
	long status = 0;
	int r = remote_post_json(sb->ctx, path, b, true, NULL, &status, err);
	json_object_put(b);
	if (r < 0)
		return r;
	sb->paused = false;
	if (status == 200)
		return abox_error_setx(err, EALREADY, "resume: sandbox %s is not paused", sb->id);
	return 0;
}

int remote_metrics(abox_sandbox *sb, abox_metrics *out, abox_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s/metrics", sb->id);
	struct rreq q = { .method = "GET", .path = path, .idempotent = true };
	json_object *j;
	int r = remote_call_json(sb->ctx->remote, &q, "metrics", &j, err);
	if (r < 0)
		return r;
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
