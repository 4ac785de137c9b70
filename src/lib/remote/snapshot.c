/* remote/snapshot.c — snapshots and forks through aboxd's control
 * plane: take one, fork a sandbox, list and remove snapshots (E2B's
 * templates). Not here: the sandboxes a fork hands back are made as
 * sandbox.c makes every remote handle. Runs in the caller's process. */
#include <errno.h>
#include <string.h>

#include "base/json.h"
#include "remote/remote.h"
#include "versioned.h"

static int r_snapshot(abox_sandbox *sb, const char *name, abox_snapshot_info *out, abox_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/sandboxes/%s/snapshots", sb->id);
	json_object *b = json_object_new_object();
	if (name)
		json_object_object_add(b, "name", json_object_new_string(name));
	json_object *j;
	int r = remote_post_reply(sb->ctx, path, b, "snapshot", &j, err);
	json_object_put(b);
	if (r < 0)
		return r;
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
	json_object *j;
	int r = remote_post_reply(sb->ctx, path, b, "fork", &j, err);
	json_object_put(b);
	if (r < 0 || (r = remote_want_array(j, "fork", err)) < 0)
		return r;
	int made = 0;
	for (unsigned i = 0; i < count; i++) {
		json_object *e = json_object_array_get_idx(j, i), *s, *x;
		if (errs)
			abox_error_clear(&errs[i]);
		if (e && json_object_object_get_ex(e, "sandbox", &s) && js_str(s, "sandboxID") &&
		    (forks[i] = remote_sandbox_new(sb->ctx, js_str(s, "sandboxID"), js_str(s, "envdAccessToken"), 0))) {
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

int remote_snapshot_list(abox_ctx *ctx, abox_snapshot_info **out, size_t *n, abox_error *err)
{
	struct rreq q = { .method = "GET", .path = "/snapshots", .idempotent = true };
	json_object *j;
	int r = remote_call_json(ctx->remote, &q, "snapshots", &j, err);
	if (r < 0 || (r = remote_want_array(j, "snapshots", err)) < 0)
		return r;
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

int remote_snapshot(abox_sandbox *sb, const char *name, uint32_t flags, abox_snapshot_info *out,
		    abox_error *err)
{
	if (flags)
		return backend_unsupported(sb->ctx, "snapshot --memory (the daemon decides)", err);
	return r_snapshot(sb, name, out, err);
}

/* The daemon forks with memory when its checkpointer works: the flag
 * is its choice, not the client's. */
int remote_fork(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, uint32_t flags,
		abox_sandbox **forks, abox_error *errs, abox_error *err)
{
	(void)flags;
	return r_fork(sb, count, timeout_ms, forks, errs, err);
}

/* aboxd's DELETE forgets a snapshot in use, as E2B's does. */
int remote_snapshot_remove(abox_ctx *ctx, const char *ref, bool forget, abox_error *err)
{
	(void)forget;
	return r_snapshot_remove(ctx, ref, err);
}
