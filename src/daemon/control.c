/* control.c — the control plane: sandboxes and snapshots, as E2B's API
 * serves them (reference/e2b/openapi.yml), behind X-API-Key.
 *
 * A sandbox belongs to the key that made it: its record carries the key's
 * owner tag as a hidden metadata entry, and every call on a sandbox of
 * another key answers 404, as if it did not exist. Metadata entries whose
 * names start with "_abox" are abox's own: never shown, never accepted. */
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
#include "lifecycle.h"
#include "listing.h"
#include "wire.h"
#include "base/sha256.h"

#define DEFAULT_TIMEOUT_S 300
#define TOKEN_KEY "_aboxToken"

void owner_tag(const char *key, char out[17])
{
	struct sha256 h;
	char hex[65];
	sha256_init(&h);
	sha256_update(&h, key, strlen(key));
	sha256_hex(&h, hex);
	memcpy(out, hex, 16);
	out[16] = '\0';
}

/* Constant time in the key's length: a wrong key teaches nothing by timing. */
static bool same(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = (unsigned char)(la != lb);
	for (size_t i = 0; i < la; i++)
		d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
	return d == 0;
}

static bool authorized(struct request *rq)
{
	const char *k = header(rq, "X-API-Key");
	if (!k)
		return false;
	bool ok = false;
	for (size_t i = 0; daemon_cfg.keys && daemon_cfg.keys[i]; i++)
		ok |= same(k, daemon_cfg.keys[i]);
	if (ok) {
		rq->key = k;
		owner_tag(k, rq->owner);
	}
	return ok;
}

static void rfc3339(int64_t ms, char *buf, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t l = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + l, n - l, ".%03dZ", (int)(ms % 1000));
}

/* The record's metadata without abox's own entries; *token: the access
 * token when the sandbox is secure (malloc'd) */
static json_object *public_metadata(const abox_sandbox_info *in, char **token, char *owner)
{
	json_object *all = in->metadata_json ? json_tokener_parse(in->metadata_json) : NULL;
	json_object *out = json_object_new_object();
	if (all && json_object_is_type(all, json_type_object)) {
		json_object_object_foreach(all, k, v) {
			if (strncmp(k, "_abox", 5) != 0) {
				json_object_object_add(out, k, json_object_get(v));
				continue;
			}
			if (token && strcmp(k, TOKEN_KEY) == 0)
				*token = strdup(json_object_get_string(v));
			if (owner && strcmp(k, DAEMON_OWNER_KEY) == 0)
				snprintf(owner, 17, "%s", json_object_get_string(v));
		}
	}
	json_object_put(all);
	return out;
}

int sandbox_visible(struct request *rq, abox_ctx *ctx, const char *id, abox_sandbox_info *info)
{
	*info = (abox_sandbox_info){ .version = ABOX_SANDBOX_INFO_VERSION };
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_sandbox_info_get(ctx, id, info, &err);
	if (r < 0)
		return r;
	char owner[17] = "";
	json_object_put(public_metadata(info, NULL, owner));
	if (info->state == ABOX_STATE_DEAD || (rq->owner[0] && strcmp(owner, rq->owner) != 0)) {
		abox_sandbox_info_clear(info);
		return -ENOENT;
	}
	return 0;
}

static json_object *sandbox_json(const abox_sandbox_info *in)
{
	char token[AUTH_TOKEN_LEN + 1], traffic[AUTH_TOKEN_LEN + 1];
	auth_envd_token(in, token);
	auth_traffic_token(in, traffic);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "sandboxID", json_object_new_string(in->id));
	json_object_object_add(o, "templateID", json_object_new_string(in->template_name));
	json_object_object_add(o, "clientID", json_object_new_string("abox"));
	json_object_object_add(o, "envdVersion", json_object_new_string(DAEMON_ENVD_VERSION));
	/* always: every sandbox is secured, whatever `secure` said (SDK 2.51
	 * no longer sends it) */
	json_object_object_add(o, "envdAccessToken", json_object_new_string(token));
	json_object_object_add(o, "trafficAccessToken", json_object_new_string(traffic));
	if (daemon_cfg.domain)
		json_object_object_add(o, "domain", json_object_new_string(daemon_cfg.domain));
	return o;
}

static json_object *detail_json(const abox_sandbox_info *in)
{
	json_object *o = sandbox_json(in);
	char t[40];
	rfc3339(in->created_ms, t, sizeof(t));
	json_object_object_add(o, "startedAt", json_object_new_string(t));
	rfc3339(in->deadline_ms ? in->deadline_ms : in->created_ms + 100LL * 365 * 86400 * 1000, t, sizeof(t));
	json_object_object_add(o, "endAt", json_object_new_string(t));
	json_object_object_add(o, "cpuCount", json_object_new_int((int)((in->cpu_millis + 999) / 1000)));
	json_object_object_add(o, "memoryMB", json_object_new_int64((int64_t)(in->memory_bytes >> 20)));
	json_object_object_add(o, "diskSizeMB", json_object_new_int64((int64_t)(in->disk_bytes >> 20)));
	json_object_object_add(o, "state",
			       json_object_new_string(in->state == ABOX_STATE_PAUSED ? "paused" : "running"));
	json_object_object_add(o, "metadata", public_metadata(in, NULL, NULL));
	json_object_object_add(o, "lifecycle", lifecycle_json(in));
	char *net = note_read("network", in->id);
	json_object *nj = net && *net ? json_tokener_parse(net) : NULL;
	if (nj)
		json_object_object_add(o, "network", nj);
	free(net);
	return o;
}

/* "/sandboxes/ID/rest" -> ID and rest; false when it is not that shape. */
static bool split_id(const char *path, char id[ABOX_ID_LEN + 1], const char **rest)
{
	size_t n = strcspn(path, "/");
	if (n != ABOX_ID_LEN)
		return false;
	memcpy(id, path, ABOX_ID_LEN);
	id[ABOX_ID_LEN] = '\0';
	for (int i = 0; i < ABOX_ID_LEN; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9')))
			return false;
	*rest = path + ABOX_ID_LEN;
	return true;
}

/* Network settings as E2B takes them ({allowOut, denyOut, ...} and
 * allow_internet_access): checked for shape and stored as given (notes.c)
 * until sandboxes get networking; today a sandbox has loopback only, so
 * every deny already holds and no allow can. NULL and why when malformed;
 * else a malloc'd JSON text to store, or "" when there is nothing to
 * store. */
static char *network_note(json_object *net, json_object *allow, char *why, size_t whyn)
{
	if (net && !json_object_is_type(net, json_type_object) && !json_object_is_type(net, json_type_null)) {
		snprintf(why, whyn, "network must be an object");
		return NULL;
	}
	if (allow && !json_object_is_type(allow, json_type_boolean) && !json_object_is_type(allow, json_type_null)) {
		snprintf(why, whyn, "allow_internet_access must be true or false");
		return NULL;
	}
	if (net && json_object_is_type(net, json_type_object)) {
		json_object_object_foreach(net, k, v) {
			if (strcmp(k, "allowOut") && strcmp(k, "denyOut"))
				continue; /* other settings are kept as they are */
			size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
			if (!json_object_is_type(v, json_type_array) || n > 1024) {
				snprintf(why, whyn, "network.%s must be an array of at most 1024 addresses or names", k);
				return NULL;
			}
			for (size_t i = 0; i < n; i++) {
				json_object *e = json_object_array_get_idx(v, i);
				if (!json_object_is_type(e, json_type_string) || !json_object_get_string_len(e) ||
				    json_object_get_string_len(e) > 253) {
					snprintf(why, whyn, "network.%s[%zu] must be an address, a CIDR or a host name", k, i);
					return NULL;
				}
			}
		}
	}
	if (net && json_object_is_type(net, json_type_object) &&
	    strlen(json_object_to_json_string_ext(net, JSON_C_TO_STRING_PLAIN)) > 60000) {
		snprintf(why, whyn, "network settings over 60000 bytes");
		return NULL;
	}
	bool have_net = net && json_object_is_type(net, json_type_object);
	bool have_allow = allow && json_object_is_type(allow, json_type_boolean);
	if (!have_net && !have_allow)
		return strdup("");
	json_object *o = have_net ? json_object_get(net) : json_object_new_object();
	json_object_object_del(o, "allow_internet_access"); /* kept under its name in the config */
	if (have_allow)
		json_object_object_add(o, "allowInternetAccess", json_object_get(allow));
	char *text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return text;
}

static bool checkpointer_works(abox_ctx *ctx)
{
	return abox_checkpointer_check(ctx, NULL, NULL, NULL) == 0;
}

/* Snapshots belong to the API key that made them, like sandboxes: one
 * key must not list, start from (and so read the files of) or delete
 * another key's snapshot. The daemon notes the owner of each snapshot it
 * makes (notes.c); snapshots made otherwise (the CLI on the host) belong
 * to no key. */
static bool owned_by(const char *id, const char *owner)
{
	char *got = note_read("snapshots", id);
	bool ok = got && owner[0] && strcmp(got, owner) == 0;
	free(got);
	return ok;
}

/* The id of the caller's snapshot named ref (id or name): 1 and *id set,
 * 0 when there is none (another key's counts as none), < 0 on error. */
static int snapshot_of(abox_ctx *ctx, struct request *rq, const char *ref, char id[ABOX_ID_LEN + 1])
{
	abox_snapshot_info *v = NULL;
	size_t n = 0;
	int found = 0;
	if (abox_snapshot_list(ctx, &v, &n, NULL) < 0)
		return -EIO;
	for (size_t i = 0; i < n && !found; i++)
		if (!v[i].automatic && (strcmp(v[i].id, ref) == 0 || strcmp(v[i].name, ref) == 0) &&
		    owned_by(v[i].id, rq->owner)) {
			snprintf(id, 21, "%s", v[i].id);
			found = 1;
		}
	free(v);
	return found;
}

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

/* GET /templates/aliases/{alias} (the SDKs' Template.exists): the
 * built-in templates, the imported ones and this key's named snapshots
 * (which aboxd serves as templates) exist; anything else is a 404. */
static enum MHD_Result template_alias(struct request *rq, abox_ctx *ctx, const char *alias)
{
	char sid[ABOX_ID_LEN + 1];
	bool found = builtin_template(alias);
	if (!found) {
		char **names = NULL;
		if (abox_template_list(ctx, &names, NULL) >= 0) {
			for (size_t i = 0; names && names[i] && !found; i++)
				found = !strcmp(names[i], alias);
			abox_strv_free(names);
		}
	}
	if (!found && snapshot_of(ctx, rq, alias, sid) == 1)
		found = true;
	if (!found)
		return reply_error(rq, 404, "template alias '%s' not found", alias);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "templateID", json_object_new_string(alias));
	json_object_object_add(o, "public", json_object_new_boolean(builtin_template(alias)));
	return reply_json(rq, 200, o);
}

static enum MHD_Result create(struct request *rq, abox_ctx *ctx)
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
	char *netnote = NULL;
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
	json_object *net = NULL, *allow = NULL;
	json_object_object_get_ex(b, "network", &net);
	json_object_object_get_ex(b, "allow_internet_access", &allow);
	netnote = network_note(net, allow, bad, sizeof(bad));
	if (!netnote) {
		q = reply_error(rq, 400, "%s", bad);
		goto out;
	}
	abox_sandbox_opts o = ABOX_SANDBOX_OPTS_INIT;
	o.timeout_ms = (uint32_t)(timeout > 0 ? timeout : DEFAULT_TIMEOUT_S) * 1000;
	o.memory_bytes = mem > 0 ? (uint64_t)mem << 20 : daemon_cfg.memory_bytes;
	o.disk_bytes = disk > 0 ? (uint64_t)disk << 20 : daemon_cfg.disk_bytes;
	o.cpu_millis = cpus > 0 ? (uint32_t)cpus * 1000 : daemon_cfg.cpu_millis;
	o.metadata = (const char *const *)meta;
	o.env = (const char *const *)env;
	if (auto_pause)
		o.flags |= ABOX_SANDBOX_AUTO_PAUSE;
	/* SDK 2.51's lifecycle.onTimeout {action: 'pause', keepMemory: false} */
	json_object *apm;
	if ((o.flags & ABOX_SANDBOX_AUTO_PAUSE) && json_object_object_get_ex(b, "autoPauseMemory", &apm) &&
	    json_object_is_type(apm, json_type_boolean) && !json_object_get_boolean(apm))
		o.flags |= ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY;
	/* E2B's default templates ("base", the code interpreter's): here the
	 * host template, which has python3 and node when the host has them */
	if (!tmpl || !*tmpl || (builtin_template(tmpl) && strcmp(tmpl, "host") != 0))
		tmpl = NULL;
	char snap_id[ABOX_ID_LEN + 1];
	if (tmpl && snapshot_of(ctx, rq, tmpl, snap_id) == 1) {
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
	if (*netnote && note_write("network", abox_sandbox_id(sb), netnote) < 0) {
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
	abox_sandbox_free(sb);
	q = reply_json(rq, 201, sandbox_json(&in));
	abox_sandbox_info_clear(&in);
out:
	free(netnote);
	abox_strv_free(meta);
	abox_strv_free(env);
	json_object_put(b);
	return q;
}

static enum MHD_Result list(struct request *rq, abox_ctx *ctx, bool v2)
{
	struct listing l;
	char why[160];
	if (listing_parse(&l, v2, query(rq, "state"), query(rq, "order"), query(rq, "startedAfter"),
			  query(rq, "startedBefore"), query(rq, "template"), query(rq, "limit"), query(rq, "nextToken"),
			  why, sizeof(why)) < 0)
		return reply_error(rq, 400, "%s", why);
	char owner[64];
	snprintf(owner, sizeof(owner), "%s=%s", DAEMON_OWNER_KEY, rq->owner);
	char **mf = metadata_query(query(rq, "metadata"), owner);
	if (!mf)
		return reply_error(rq, 500, "out of memory");
	/* all of this key's that match the metadata, then listing.c's order,
	 * filters and page (a page cut before the filters would come short) */
	abox_list_opts lo = ABOX_LIST_OPTS_INIT;
	lo.metadata = (const char *const *)mf;
	abox_sandbox_info *infos = NULL;
	size_t n = 0, running = 0;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_sandbox_query(ctx, &lo, &infos, &n, NULL, &err);
	abox_strv_free(mf);
	if (r < 0)
		return reply_abox_error(rq, &err, r);
	char next[64];
	listing_apply(&l, infos, &n, &running, next, sizeof(next));
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		json_object_array_add(a, detail_json(&infos[i]));
		abox_sandbox_info_clear(&infos[i]);
	}
	free(infos);
	const char *s = json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	char *copy = strdup(s);
	json_object_put(a);
	struct MHD_Response *resp = copy ? MHD_create_response_from_buffer(strlen(copy), copy, MHD_RESPMEM_MUST_FREE) : NULL;
	if (!resp) {
		free(copy);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	if (next[0])
		MHD_add_response_header(resp, "X-Next-Token", next);
	if (l.running) {
		char total[24];
		snprintf(total, sizeof(total), "%zu", running);
		MHD_add_response_header(resp, "X-Total-Running", total);
	}
	enum MHD_Result q = daemon_queue(rq, 200, resp);
	MHD_destroy_response(resp);
	return q;
}

/* Opens a visible sandbox; on failure the reply is sent (*sent). */
static abox_sandbox *open_visible(struct request *rq, abox_ctx *ctx, const char *id, abox_sandbox_info *in,
				  enum MHD_Result *sent)
{
	if (sandbox_visible(rq, ctx, id, in) < 0) {
		*sent = reply_error(rq, 404, "sandbox %s not found", id);
		return NULL;
	}
	abox_sandbox *sb = NULL;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_sandbox_connect(ctx, id, &sb, &err);
	if (r < 0) {
		abox_sandbox_info_clear(in);
		*sent = reply_abox_error(rq, &err, r);
		return NULL;
	}
	return sb;
}


static enum MHD_Result connect_sb(struct request *rq, abox_ctx *ctx, const char *id, bool legacy_resume)
{
	enum MHD_Result sent;
	json_object *b = rq->len ? body_json(rq, &sent) : json_object_new_object();
	if (!b)
		return sent;
	int64_t t = DEFAULT_TIMEOUT_S;
	json_object *tv = js_get(b, "timeout", json_type_int);
	if (tv)
		t = json_object_get_int64(tv);
	json_object_put(b);
	abox_sandbox_info in;
	abox_sandbox *sb = open_visible(rq, ctx, id, &in, &sent);
	if (!sb)
		return sent;
	unsigned status = 200;
	abox_error err = ABOX_ERROR_INIT;
	int r = 0;
	if (in.state == ABOX_STATE_PAUSED) {
		r = abox_sandbox_resume(sb, &err);
		status = 201;
		if (r == -EALREADY) {
			/* a concurrent connect (or request of an autoResume
			 * sandbox) resumed it first: it runs */
			r = 0;
			status = 200;
		}
	} else if (legacy_resume) {
		abox_sandbox_free(sb);
		abox_sandbox_info_clear(&in);
		return reply_error(rq, 409, "sandbox %s is already running", id);
	}
	if (t > 86400 * 30)
		t = 86400 * 30;
	/* E2B's contract: connecting to a running sandbox only ever extends
	 * its life (an SDK's connect() with its default 5 minutes must not cut
	 * a 1 h sandbox short; setTimeout is the explicit way to shorten). A
	 * resumed sandbox gets the timeout it asked for. */
	bool extend = status == 201 || (in.deadline_ms > 0 && clock_wall_ms() + t * 1000 > in.deadline_ms);
	if (r >= 0 && t > 0 && extend)
		r = abox_sandbox_set_timeout(sb, (uint32_t)t * 1000, &err);
	abox_sandbox_free(sb);
	abox_sandbox_info_clear(&in);
	if (r < 0)
		return reply_abox_error(rq, &err, r);
	if (sandbox_visible(rq, ctx, id, &in) < 0)
		return reply_error(rq, 404, "sandbox %s not found", id);
	enum MHD_Result q = reply_json(rq, status, sandbox_json(&in));
	abox_sandbox_info_clear(&in);
	return q;
}

/* A resume makes a paused sandbox running again: it takes a running slot
 * and its memory (its disk it holds already), so it is admitted like a
 * create, around connect_sb. */
static enum MHD_Result connect_admitted(struct request *rq, abox_ctx *ctx, const char *id, bool legacy_resume)
{
	/* the body is checked here, strictly, before connect_sb reads it:
	 * "timeout": "60" or -5 is a 400, not the default */
	if (rq->len) {
		enum MHD_Result sent;
		json_object *b = body_json(rq, &sent);
		if (!b)
			return sent;
		char why[128];
		int64_t t = 0;
		int r = json_get_int(b, "timeout", 0, 86400 * 30, &t, why, sizeof(why));
		json_object_put(b);
		if (r < 0)
			return reply_error(rq, 400, "%s (seconds)", why);
		if (admission_cfg.sandbox_timeout_s && t > admission_cfg.sandbox_timeout_s)
			return reply_error(rq, 400, "timeout %lld is over the maximum of %u seconds (limits.sandboxTimeoutSeconds)",
					   (long long)t, admission_cfg.sandbox_timeout_s);
	}
	abox_sandbox_info in;
	if (sandbox_visible(rq, ctx, id, &in) < 0 || in.state != ABOX_STATE_PAUSED) {
		abox_sandbox_info_clear(&in); /* safe on a cleared or failed one */
		return connect_sb(rq, ctx, id, legacy_resume);
	}
	struct admission_ask ask = { .owner = rq->owner, .memory_bytes = in.memory_bytes, .count = 1, .resume = true };
	abox_sandbox_info_clear(&in);
	struct admission_ticket ticket;
	char why[512];
	unsigned st = admission_admit(ctx, &ask, &ticket, why, sizeof(why));
	if (st)
		return reply_error(rq, st, "%s", why);
	enum MHD_Result q = connect_sb(rq, ctx, id, legacy_resume);
	admission_release(&ticket);
	return q;
}

static enum MHD_Result pause_sb(struct request *rq, abox_ctx *ctx, const char *id)
{
	enum MHD_Result sent;
	bool memory = true;
	if (rq->len) {
		json_object *b = body_json(rq, &sent);
		if (!b)
			return sent;
		char why[128];
		int r = json_get_bool(b, "memory", &memory, why, sizeof(why));
		json_object_put(b);
		if (r < 0)
			return reply_error(rq, 400, "%s", why);
	}
	abox_sandbox_info in;
	abox_sandbox *sb = open_visible(rq, ctx, id, &in, &sent);
	if (!sb)
		return sent;
	if (in.state == ABOX_STATE_PAUSED) {
		abox_sandbox_free(sb);
		abox_sandbox_info_clear(&in);
		return reply_error(rq, 409, "sandbox %s is already paused", id);
	}
	abox_sandbox_info_clear(&in);
	abox_error err = ABOX_ERROR_INIT;
	/* E2B's pause keeps memory and frees the machine: to disk when a
	 * checkpointer works here, else frozen in place */
	uint32_t flags = !memory ? ABOX_PAUSE_NO_MEMORY : checkpointer_works(ctx) ? ABOX_PAUSE_TO_DISK : 0;
	int r = abox_sandbox_pause_flags(sb, flags, &err);
	abox_sandbox_free(sb);
	if (r == -EALREADY)
		return reply_error(rq, 409, "%s", err.msg);
	return r < 0 ? reply_abox_error(rq, &err, r) : reply_empty(rq, 204);
}

static enum MHD_Result simple(struct request *rq, abox_ctx *ctx, const char *id, const char *what)
{
	enum MHD_Result sent;
	abox_sandbox_info in;
	abox_sandbox *sb = open_visible(rq, ctx, id, &in, &sent);
	if (!sb)
		return sent;
	abox_error err = ABOX_ERROR_INIT;
	int r = 0;
	enum MHD_Result q;
	if (!strcmp(what, "kill")) {
		r = abox_sandbox_kill(sb, &err);
		if (r >= 0)
			note_remove("network", id);
		q = r < 0 ? reply_abox_error(rq, &err, r) : reply_empty(rq, 204);
	} else if (!strcmp(what, "timeout")) {
		json_object *b = body_json(rq, &sent);
		int64_t t = -1;
		char why[128] = "timeout is required";
		if (!b) {
			q = sent;
		} else if (json_get_int(b, "timeout", 0, 86400 * 30, &t, why, sizeof(why)) <= 0) {
			q = reply_error(rq, 400, "%s (seconds)", why);
		} else if (admission_cfg.sandbox_timeout_s && t > admission_cfg.sandbox_timeout_s) {
			q = reply_error(rq, 400, "timeout %lld is over the maximum of %u seconds (limits.sandboxTimeoutSeconds)",
					(long long)t, admission_cfg.sandbox_timeout_s);
		} else {
			/* E2B: the sandbox expires t seconds from now, so 0 is
			 * now (killed, or paused with autoPause), never "no
			 * timeout" as in abox's own API */
			r = abox_sandbox_set_timeout(sb, t ? (uint32_t)t * 1000 : 1, &err);
			q = r < 0 ? reply_abox_error(rq, &err, r) : reply_empty(rq, 204);
		}
		json_object_put(b);
	} else if (!strcmp(what, "metrics")) {
		/* abox keeps no history: the one sample is now's, in the
		 * window [start, end] (Unix seconds) or not at all */
		int64_t start = 0, end = INT64_MAX;
		const char *qs = query(rq, "start"), *qe = query(rq, "end");
		char *e1 = NULL, *e2 = NULL;
		if (qs)
			start = strtoll(qs, &e1, 10);
		if (qe)
			end = strtoll(qe, &e2, 10);
		bool bad_num = (qs && (!isdigit((unsigned char)*qs) || *e1)) || (qe && (!isdigit((unsigned char)*qe) || *e2));
		if (bad_num)
			q = reply_error(rq, 400, "start and end: Unix times in seconds");
		else if (start > end)
			q = reply_error(rq, 400, "start %lld is after end %lld", (long long)start, (long long)end);
		if (!bad_num && start <= end) {
			abox_metrics m = { .version = ABOX_METRICS_VERSION };
			json_object *a = json_object_new_array();
			int64_t now_s = (int64_t)time(NULL);
			if (in.state == ABOX_STATE_RUNNING && now_s >= start && now_s <= end &&
			    abox_sandbox_metrics(sb, &m, &err) >= 0) {
				json_object *o = json_object_new_object();
				char t[40];
				rfc3339(m.timestamp_ms, t, sizeof(t));
				json_object_object_add(o, "timestamp", json_object_new_string(t));
				json_object_object_add(o, "timestampUnix", json_object_new_int64(m.timestamp_ms / 1000));
				json_object_object_add(o, "cpuCount", json_object_new_int((int)((in.cpu_millis + 999) / 1000)));
				json_object_object_add(o, "cpuUsedPct", json_object_new_double(m.cpu_pct));
				json_object_object_add(o, "memUsed", json_object_new_int64((int64_t)m.mem_used));
				json_object_object_add(o, "memTotal", json_object_new_int64((int64_t)m.mem_limit));
				json_object_object_add(o, "memCache", json_object_new_int64(0));
				json_object_object_add(o, "diskUsed", json_object_new_int64((int64_t)m.disk_used));
				json_object_object_add(o, "diskTotal", json_object_new_int64((int64_t)m.disk_limit));
				json_object_array_add(a, o);
			}
			q = reply_json(rq, 200, a);
		}
	} else if (!strcmp(what, "network")) {
		json_object *b = body_json(rq, &sent), *allow = NULL;
		char why[256], *text = NULL;
		if (!b) {
			q = sent;
		} else if (json_object_object_get_ex(b, "allow_internet_access", &allow),
			   !(text = network_note(b, allow, why, sizeof(why)))) {
			q = reply_error(rq, 400, "%s", why);
		} else if (*text ? note_write("network", id, text) < 0 : (note_remove("network", id), false)) {
			q = reply_error(rq, 500, "cannot store the sandbox's network settings");
		} else {
			q = reply_empty(rq, 204); /* stored; enforced when sandboxes get networking */
		}
		free(text);
		json_object_put(b);
	} else {
		q = reply_json(rq, 200, detail_json(&in));
	}
	abox_sandbox_free(sb);
	abox_sandbox_info_clear(&in);
	return q;
}

static json_object *snap_json(const abox_snapshot_info *s)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "snapshotID", json_object_new_string(s->id));
	json_object *names = json_object_new_array();
	if (s->name[0])
		json_object_array_add(names, json_object_new_string(s->name));
	json_object_object_add(o, "names", names);
	return o;
}

static enum MHD_Result snapshot(struct request *rq, abox_ctx *ctx, const char *id)
{
	enum MHD_Result sent;
	const char *name = NULL;
	json_object *b = rq->len ? body_json(rq, &sent) : json_object_new_object();
	if (!b)
		return sent;
	char why[128];
	if (json_get_string(b, "name", &name, why, sizeof(why)) < 0 || (name && strlen(name) > 127)) {
		json_object_put(b);
		return reply_error(rq, 400, "%s", name ? "name: at most 127 bytes" : why);
	}
	abox_sandbox_info in;
	abox_sandbox *sb = open_visible(rq, ctx, id, &in, &sent);
	if (!sb) {
		json_object_put(b);
		return sent;
	}
	abox_sandbox_info_clear(&in);
	/* a key with no room left makes no snapshot at all */
	unsigned st = admission_snapshot(ctx, rq->owner, 1, why, sizeof(why));
	if (st) {
		abox_sandbox_free(sb);
		json_object_put(b);
		return reply_error(rq, st, "%s", why);
	}
	abox_snapshot_info s = { .version = ABOX_SNAPSHOT_INFO_VERSION };
	abox_error err = ABOX_ERROR_INIT;
	/* E2B's names: a name in use moves to the newest snapshot */
	uint32_t flags = (checkpointer_works(ctx) ? ABOX_SNAPSHOT_MEMORY : 0) | ABOX_SNAPSHOT_TAKE_NAME;
	int r = abox_sandbox_snapshot_flags(sb, name, flags, &s, &err);
	abox_sandbox_free(sb);
	json_object_put(b);
	/* the sandbox it was made from: listSnapshots({sandboxId}) */
	if (r >= 0)
		(void)note_write("snapshot-source", s.id, id);
	if (r >= 0 && note_write("snapshots", s.id, rq->owner) < 0) {
		/* a snapshot nobody may use is worse than none */
		(void)abox_snapshot_remove(ctx, s.id, NULL);
		return reply_error(rq, 500, "snapshot %s: cannot record its owner", s.id);
	}
	/* its size is known once it exists: one that took the key over
	 * its storage is undone */
	if (r >= 0 && (st = admission_snapshot(ctx, rq->owner, 0, why, sizeof(why))) != 0) {
		(void)abox_snapshot_remove(ctx, s.id, NULL);
		note_remove("snapshots", s.id);
		note_remove("snapshot-source", s.id);
		return reply_error(rq, st, "%s", why);
	}
	return r < 0 ? reply_abox_error(rq, &err, r) : reply_json(rq, 201, snap_json(&s));
}

static enum MHD_Result fork_sb(struct request *rq, abox_ctx *ctx, const char *id)
{
	enum MHD_Result sent;
	json_object *b = rq->len ? body_json(rq, &sent) : json_object_new_object();
	if (!b)
		return sent;
	int64_t count = 1, t = 0;
	char why[128];
	int bad = json_get_int(b, "count", 1, 64, &count, why, sizeof(why)) < 0 ||
		  json_get_int(b, "timeout", 0, 86400 * 30, &t, why, sizeof(why)) < 0;
	json_object_put(b);
	if (bad)
		return reply_error(rq, 400, "%s", why);
	abox_sandbox_info in;
	abox_sandbox *sb = open_visible(rq, ctx, id, &in, &sent);
	if (!sb)
		return sent;
	/* forks are sandboxes of their source's size: admitted as creates */
	struct admission_ask ask = { .owner = rq->owner, .memory_bytes = in.memory_bytes, .disk_bytes = in.disk_bytes,
				     .cpu_millis = in.cpu_millis, .timeout_s = (uint32_t)t, .count = (unsigned)count };
	abox_sandbox_info_clear(&in);
	struct admission_ticket ticket;
	unsigned st = admission_admit(ctx, &ask, &ticket, why, sizeof(why));
	if (st) {
		abox_sandbox_free(sb);
		return reply_error(rq, st, "%s", why);
	}
	abox_sandbox *forks[64] = { 0 };
	abox_error errs[64], err = ABOX_ERROR_INIT;
	uint32_t flags = checkpointer_works(ctx) ? ABOX_FORK_MEMORY : 0;
	int made = abox_sandbox_fork_flags(sb, (unsigned)count, (uint32_t)(t > 0 ? t : 0) * 1000, flags, forks, errs,
					   &err);
	admission_release(&ticket);
	abox_sandbox_free(sb);
	if (made < 0)
		return reply_abox_error(rq, &err, made);
	json_object *a = json_object_new_array();
	for (int i = 0; i < count; i++) {
		json_object *o = json_object_new_object();
		abox_sandbox_info fi;
		if (forks[i] && sandbox_visible(rq, ctx, abox_sandbox_id(forks[i]), &fi) == 0) {
			json_object_object_add(o, "sandbox", sandbox_json(&fi));
			abox_sandbox_info_clear(&fi);
		} else {
			json_object *e = json_object_new_object();
			json_object_object_add(e, "code", json_object_new_int(500));
			json_object_object_add(e, "message",
					       json_object_new_string(forks[i] ? "the fork vanished" : errs[i].msg));
			json_object_object_add(o, "error", e);
		}
		abox_sandbox_free(forks[i]);
		json_object_array_add(a, o);
	}
	return reply_json(rq, 201, a);
}

/* A snapshot name filter as E2B's ("name", "team/name", "name:tag"):
 * abox has no teams or tags, so those parts must not hide a match. */
static bool name_matches(const abox_snapshot_info *s, const char *want)
{
	const char *slash = strrchr(want, '/');
	const char *w = slash ? slash + 1 : want;
	size_t k = strcspn(w, ":");
	return (strlen(s->name) == k && !strncmp(s->name, w, k)) || (strlen(s->id) == k && !strncmp(s->id, w, k));
}

static int snap_newest_first(const void *a, const void *b)
{
	const abox_snapshot_info *x = a, *y = b;
	if (x->created_ms != y->created_ms)
		return x->created_ms > y->created_ms ? -1 : 1;
	return -strcmp(x->id, y->id);
}

static enum MHD_Result snapshots(struct request *rq, abox_ctx *ctx)
{
	const char *from = query(rq, "sandboxID"), *name = query(rq, "name");
	const char *lim = query(rq, "limit");
	unsigned long limit = 0;
	if (lim) {
		char *end = NULL;
		limit = strtoul(lim, &end, 10);
		if (!isdigit((unsigned char)*lim) || *end || limit < 1 || limit > 100)
			return reply_error(rq, 400, "limit must be 1-100");
	}
	abox_snapshot_info *v = NULL;
	size_t n = 0;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_snapshot_list(ctx, &v, &n, &err);
	if (r < 0)
		return reply_abox_error(rq, &err, r);
	qsort(v, n, sizeof(*v), snap_newest_first);
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n && (!limit || json_object_array_length(a) < limit); i++) {
		/* forks' and pauses' own layers are not the user's; other keys'
		 * snapshots are not this key's */
		if (v[i].automatic || !owned_by(v[i].id, rq->owner) || (name && !name_matches(&v[i], name)))
			continue;
		if (from) {
			char *src = note_read("snapshot-source", v[i].id);
			bool same = src && !strcmp(src, from);
			free(src);
			if (!same)
				continue;
		}
		json_object_array_add(a, snap_json(&v[i]));
	}
	free(v);
	return reply_json(rq, 200, a);
}

enum MHD_Result control_route(struct request *rq)
{
	const char *m = rq->method, *u = rq->url;
	if (!strcmp(u, "/health"))
		return reply_json(rq, 200, json_object_new_object());
	if (!authorized(rq))
		return reply_error(rq, 401, "Invalid API key (X-API-Key)");
	abox_ctx *ctx = request_ctx();
	if (!ctx)
		return reply_error(rq, 500, "cannot open abox's state");
	enum MHD_Result q;
	char id[ABOX_ID_LEN + 1];
	const char *rest = NULL;
	bool post = !strcmp(m, "POST"), get = !strcmp(m, "GET"), del = !strcmp(m, "DELETE");
	const char *p = !strncmp(u, "/v2/sandboxes", 13) ? u + 13 : !strncmp(u, "/sandboxes", 10) ? u + 10 : NULL;
	bool v2 = !strncmp(u, "/v2/", 4);
	if (p && !*p && post)
		q = create(rq, ctx);
	else if (p && !*p && get)
		q = list(rq, ctx, v2);
	else if (p && *p == '/' && split_id(p + 1, id, &rest)) {
		if (!*rest && get)
			q = simple(rq, ctx, id, "info");
		else if (!*rest && del)
			q = simple(rq, ctx, id, "kill");
		else if (!strcmp(rest, "/connect") && post)
			q = connect_admitted(rq, ctx, id, false);
		else if (!strcmp(rest, "/resume") && post && !v2)
			q = connect_admitted(rq, ctx, id, true);
		else if (!strcmp(rest, "/pause") && post)
			q = pause_sb(rq, ctx, id);
		else if (!strcmp(rest, "/timeout") && post)
			q = simple(rq, ctx, id, "timeout");
		else if (!strcmp(rest, "/metrics") && get)
			q = simple(rq, ctx, id, "metrics");
		else if (!strcmp(rest, "/network") && !strcmp(m, "PUT"))
			q = simple(rq, ctx, id, "network");
		else if (!strcmp(rest, "/snapshots") && post)
			q = snapshot(rq, ctx, id);
		else if (!strcmp(rest, "/fork") && post)
			q = fork_sb(rq, ctx, id);
		else
			q = reply_error(rq, 404, "no route %s %s", m, u);
	} else if (!strcmp(u, "/snapshots") && get) {
		q = snapshots(rq, ctx);
	} else if (!strncmp(u, "/templates/aliases/", 19) && get) {
		q = template_alias(rq, ctx, u + 19);
	} else if (!strcmp(u, "/volumes") || !strncmp(u, "/volumes/", 9)) {
		q = reply_error(rq, 501, "volumes are not supported by abox (%s %s)", m, u);
	} else if (!strncmp(u, "/templates/", 11) && del) {
		abox_error err = ABOX_ERROR_INIT;
		char sid[ABOX_ID_LEN + 1];
		int r = snapshot_of(ctx, rq, u + 11, sid);
		if (r < 0) {
			q = reply_error(rq, 500, "cannot read the snapshots");
		} else if (r == 0) {
			q = reply_error(rq, 404, "template '%s' not found", u + 11);
		} else if ((r = abox_snapshot_forget(ctx, sid, &err)) < 0) {
			q = reply_abox_error(rq, &err, r);
		} else {
			note_remove("snapshots", sid);
			note_remove("snapshot-source", sid);
			q = reply_empty(rq, 204);
		}
	} else {
		q = reply_error(rq, 404, "no route %s %s", m, u);
	}
	abox_ctx_free(ctx);
	return q;
}
