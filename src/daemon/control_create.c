/* control_create.c — POST /sandboxes: a sandbox made as E2B's API
 * describes it, its fields checked and bounded before anything is made,
 * and nothing left behind when a step fails. Runs in aboxd. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "base/json.h"
#include "base/clock.h"
#include "auth.h"
#include "admission.h"
#include "daemon.h"
#include "network.h"
#include "lifecycle.h"
#include "listing.h"
#include "wire.h"
#include "base/sha256.h"
#include "code_ctx.h"
#include "control.h"

/* Metadata as E2B bounds a secret's (the closest it documents): it is
 * stored in the sandbox's record, which every list reads, so it must stay
 * small; a record too big to read back would be a sandbox nobody can
 * see or kill. Environment variables go to every command: bounded too. */
static const struct wire_map_bounds metadata_bounds = {
	.what = "metadata", .reserved = "_abox",
	.entries = 32, .name_bytes = 128, .value_bytes = 1024, .total_bytes = 8192,
};
static const struct wire_map_bounds env_bounds = {
	.what = "envVars",
	.entries = 1024, .name_bytes = 256, .value_bytes = 32768, .total_bytes = 131072,
};

static bool snapshot_named(abox_ctx *ctx, const char *ref)
{
	abox_snapshot_info *v = NULL;
	size_t n = 0;
	bool found = false;
	if (abox_snapshot_list(ctx, &v, &n, NULL) < 0)
		return false;
	for (size_t i = 0; i < n && !found; i++)
		found = strcmp(v[i].id, ref) == 0 || strcmp(v[i].name, ref) == 0;
	free(v);
	return found;
}

/* A create fails for the request's sake only when its template or
 * snapshot does not exist or an entry the library checks is not K=V;
 * anything else went wrong on the host (the mount table, cgroups, disk)
 * and is the daemon's failure: a 5xx, which reply_error logs. Mapping the
 * errno alone would turn a host step's EINVAL or ENOENT into a 400/404. */
static unsigned create_status(int r, const abox_error *err)
{
	int e = r < 0 ? -r : err->code;
	if (e == ENOENT && (strstr(err->msg, "template '") || strstr(err->msg, "snapshot ")) &&
	    strstr(err->msg, "not found"))
		return 404;
	if (e == EINVAL && (strstr(err->msg, "is not K=V") || strstr(err->msg, "is not key=value")))
		return 400;
	unsigned s = status_of_errno(e);
	return s >= 500 ? s : 500;
}

/* A sandbox this request made, undone because the create cannot be
 * answered with it: nothing a client was told failed may keep running. */
static void undo_create(abox_sandbox *sb)
{
	char id[ABOX_ID_LEN + 1];
	snprintf(id, sizeof(id), "%s", abox_sandbox_id(sb));
	abox_error err = ABOX_ERROR_INIT;
	if (abox_sandbox_kill(sb, &err) < 0)
		fprintf(stderr, "aboxd: undoing the create of %s: %s\n", id, err.msg);
	abox_sandbox_free(sb);
	note_remove("network", id);
}

/* A create field abox cannot honour, given with a value that asks for
 * something (null, {} and [] ask for nothing): the message, else NULL. */
static const char *unsupported_create_field(json_object *b)
{
	json_object *v;
	if (json_object_object_get_ex(b, "mcp", &v) && v &&
	    !(json_object_is_type(v, json_type_object) && json_object_object_length(v) == 0))
		return "mcp: MCP servers in sandboxes are not supported by abox";
	if (json_object_object_get_ex(b, "volumeMounts", &v) && v &&
	    !(json_object_is_type(v, json_type_array) && json_object_array_length(v) == 0))
		return "volumeMounts: volumes are not supported by abox";
	return NULL;
}

/* The built-in templates under the names E2B's SDKs use. */
static bool builtin_template(const char *name)
{
	return !strcmp(name, "base") || !strcmp(name, "code-interpreter-v1") || !strcmp(name, "host");
}

static bool template_exists(abox_ctx *ctx, const char *name)
{
	if (!strcmp(name, "host"))
		return true;
	char **names = NULL;
	bool found = false;
	if (abox_template_list(ctx, &names, NULL) >= 0) {
		for (size_t i = 0; names && names[i] && !found; i++)
			found = !strcmp(names[i], name);
		abox_strv_free(names);
	}
	return found;
}

/* E2B's code interpreter template when the one that stands for it here
 * is not built: never another template in its place (the host's has no
 * IPython, numpy or TypeScript the SDK's cells expect). */
static enum MHD_Result no_code_interpreter(struct request *rq, const char *want)
{
	const char *t = daemon_template_of(want);
	return reply_error(rq, 404,
			   "template '%s' is served by the template '%s', which is not built here: run "
			   "'abox template build %s rootfs/code-interpreter.recipe' (once; minutes), or set "
			   "codeInterpreterTemplate in aboxd's config",
			   want, t, t);
}

/* GET /templates/aliases/{alias} (the SDKs' Template.exists): the
 * built-in templates, the imported ones and this key's named snapshots
 * (which aboxd serves as templates) exist; anything else is a 404. */
enum MHD_Result control_template_alias(struct request *rq, abox_ctx *ctx, const char *alias)
{
	char sid[ABOX_ID_LEN + 1];
	bool found = template_exists(ctx, daemon_template_of(alias));
	if (!found && !strcmp(alias, "code-interpreter-v1"))
		return no_code_interpreter(rq, alias);
	if (!found && control_snapshot_of(ctx, rq, alias, sid) == 1)
		found = true;
	if (!found)
		return reply_error(rq, 404, "template alias '%s' not found", alias);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "templateID", json_object_new_string(alias));
	json_object_object_add(o, "public", json_object_new_boolean(builtin_template(alias)));
	return reply_json(rq, 200, o);
}

enum MHD_Result control_create(struct request *rq, abox_ctx *ctx)
{
	enum MHD_Result sent;
	json_object *b = body_json(rq, &sent);
	if (!b)
		return sent;
	char bad[512] = "";
	const char *tmpl = NULL;
	int64_t timeout = 0, mem = 0, disk = 0, cpus = 0;
	bool secure = false, auto_pause = false;
	char **meta = NULL, **env = NULL;
	struct e2b_net en = { 0 };
	unsigned nst = 0;
	enum MHD_Result q;
	if (json_get_string(b, "templateID", &tmpl, bad, sizeof(bad)) < 0 ||
	    json_get_int(b, "timeout", 0, 86400 * 30, &timeout, bad, sizeof(bad)) < 0 ||
	    json_get_int(b, "memoryMB", 1, INT32_MAX, &mem, bad, sizeof(bad)) < 0 ||
	    json_get_int(b, "diskSizeMB", 0, INT32_MAX, &disk, bad, sizeof(bad)) < 0 ||
	    json_get_int(b, "cpuCount", 1, 4096, &cpus, bad, sizeof(bad)) < 0 ||
	    json_get_bool(b, "secure", &secure, bad, sizeof(bad)) < 0 ||
	    json_get_bool(b, "autoPause", &auto_pause, bad, sizeof(bad)) < 0 ||
	    /* three more: the owner tag and the lifecycle */
	    !(meta = json_string_map(b, &metadata_bounds, 3, bad, sizeof(bad))) ||
	    !(env = json_string_map(b, &env_bounds, 0, bad, sizeof(bad)))) {
		q = reply_error(rq, 400, "%s", bad);
		goto out;
	}
	bool auto_resume;
	if (lifecycle_parse(b, auto_pause, &auto_resume, bad, sizeof(bad)) < 0) {
		q = reply_error(rq, 400, "%s", bad);
		goto out;
	}
	size_t nm = 0;
	while (meta[nm])
		nm++;
	/* the owner and the lifecycle ride in the record as reserved
	 * metadata (json_string_map left room for three) */
	if (asprintf(&meta[nm++], "%s=%s", DAEMON_OWNER_KEY, rq->owner) < 0 ||
	    (auto_pause && asprintf(&meta[nm++], "%s=pause", LIFECYCLE_ON_TIMEOUT_KEY) < 0) ||
	    (auto_resume && asprintf(&meta[nm++], "%s=1", LIFECYCLE_AUTO_RESUME_KEY) < 0)) {
		meta[--nm] = NULL;
		q = reply_error(rq, 500, "out of memory");
		goto out;
	}
	/* what E2B offers and abox does not: refused with the cause, never
	 * ignored (a sandbox without the volume or MCP server asked for
	 * would fail later, in a way that hides why) */
	const char *missing = unsupported_create_field(b);
	if (missing) {
		q = reply_error(rq, 400, "%s", missing);
		goto out;
	}
	/* no token is kept: every sandbox's is derived (auth.c), `secure`
	 * or not */
	if (network_parse_create(b, &en, &nst, bad, sizeof(bad)) < 0) {
		q = reply_error(rq, nst, "%s", bad);
		goto out;
	}
	abox_sandbox_opts o = ABOX_SANDBOX_OPTS_INIT;
	o.timeout_ms = (uint32_t)(timeout > 0 ? timeout : DEFAULT_TIMEOUT_S) * 1000;
	o.memory_bytes = mem > 0 ? (uint64_t)mem << 20 : daemon_cfg.memory_bytes;
	o.disk_bytes = disk > 0 ? (uint64_t)disk << 20 : daemon_cfg.disk_bytes;
	o.cpu_millis = cpus > 0 ? (uint32_t)cpus * 1000 : daemon_cfg.cpu_millis;
	o.metadata = (const char *const *)meta;
	o.env = (const char *const *)env;
	o.net = en.opts.mode == ABOX_NET_NONE ? NULL : &en.opts;
	if (auto_pause)
		o.flags |= ABOX_SANDBOX_AUTO_PAUSE;
	/* SDK 2.51's lifecycle.onTimeout {action: 'pause', keepMemory: false} */
	json_object *apm;
	if ((o.flags & ABOX_SANDBOX_AUTO_PAUSE) && json_object_object_get_ex(b, "autoPauseMemory", &apm) &&
	    json_object_is_type(apm, json_type_boolean) && !json_object_get_boolean(apm))
		o.flags |= ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY;
	/* E2B's default templates: "base" is the host template, which has
	 * python3 and node when the host has them; the code interpreter's is
	 * the one built for it (daemon_template_of) */
	if (tmpl && !strcmp(tmpl, "code-interpreter-v1")) {
		if (!template_exists(ctx, daemon_template_of(tmpl))) {
			q = no_code_interpreter(rq, tmpl);
			goto out;
		}
		tmpl = daemon_template_of(tmpl);
	}
	if (!tmpl || !*tmpl || !strcmp(tmpl, "base") || !strcmp(tmpl, "host"))
		tmpl = NULL;
	char snap_id[ABOX_ID_LEN + 1];
	if (tmpl && strchr(tmpl, ':') && control_snapshot_of(ctx, rq, tmpl, snap_id) != 1) {
		/* name:tag: the tag's own template, named in errors as asked */
		const char *t = daemon_template_of(tmpl);
		if (!template_exists(ctx, t)) {
			q = reply_error(rq, 404, "template '%s' not found", tmpl);
			goto out;
		}
		tmpl = !strcmp(t, "host") ? NULL : t;
	}
	if (tmpl && control_snapshot_of(ctx, rq, tmpl, snap_id) == 1) {
		o.snapshot = snap_id;
	} else if (tmpl && snapshot_named(ctx, tmpl)) {
		q = reply_error(rq, 404, "template '%s' not found", tmpl); /* another key's snapshot */
		goto out;
	} else {
		o.template_name = tmpl;
	}
	struct admission_ask ask = { .owner = rq->owner, .memory_bytes = o.memory_bytes, .disk_bytes = o.disk_bytes,
				     .cpu_millis = o.cpu_millis, .timeout_s = o.timeout_ms / 1000, .count = 1 };
	struct admission_ticket ticket;
	unsigned st = admission_admit(ctx, &ask, &ticket, bad, sizeof(bad));
	if (st) {
		q = reply_error(rq, st, "%s", bad);
		goto out;
	}
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb = NULL;
	int r = abox_sandbox_create(ctx, &o, &sb, &err);
	admission_release(&ticket);
	if (r < 0) {
		q = reply_error(rq, create_status(r, &err), "%s", err.msg);
		goto out;
	}
	const char *notetext = json_object_object_length(en.note)
				       ? json_object_to_json_string_ext(en.note, JSON_C_TO_STRING_PLAIN)
				       : NULL;
	if (notetext && note_write("network", abox_sandbox_id(sb), notetext) < 0) {
		undo_create(sb);
		q = reply_error(rq, 500, "cannot store the sandbox's network settings");
		goto out;
	}
	abox_sandbox_info in;
	if (sandbox_visible(rq, ctx, abox_sandbox_id(sb), &in) < 0) {
		/* made but not readable as this key's: a sandbox the client
		 * would never hear of, running until its timeout */
		undo_create(sb);
		q = reply_error(rq, 500, "the new sandbox could not be read back; it was removed");
		goto out;
	}
	/* the code interpreter's first cell finds IPython loaded, as E2B's
	 * boot starts its kernels */
	if (daemon_cfg.ci_head_start && o.template_name &&
	    !strcmp(o.template_name, daemon_template_of("code-interpreter-v1")) &&
	    strcmp(o.template_name, "host") != 0)
		code_head_start(abox_sandbox_id(sb));
	abox_sandbox_free(sb);
	q = reply_json(rq, 201, control_sandbox_json(&in));
	abox_sandbox_info_clear(&in);
out:
	network_free(&en);
	abox_strv_free(meta);
	abox_strv_free(env);
	json_object_put(b);
	return q;
}
