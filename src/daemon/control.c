/* control.c — the control plane: sandboxes and snapshots, as E2B's API
 * serves them (reference/e2b/openapi.yml), behind X-API-Key.
 *
 * A sandbox belongs to the key that made it: its record carries the key's
 * owner tag as a hidden metadata entry, and every call on a sandbox of
 * another key answers 404, as if it did not exist. Metadata entries whose
 * names start with "_abox" are abox's own: never shown, never accepted.
 * The route table is router.c's. Runs in aboxd. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "auth.h"
#include "admission.h"
#include "daemon.h"
#include "network.h"
#include "lifecycle.h"
#include "listing.h"
#include "wire.h"
#include "base/sha256.h"
#include "control.h"

static void rfc3339(int64_t ms, char *buf, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t l = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + l, n - l, ".%03dZ", (int)(ms % 1000));
}

json_object *control_sandbox_json(const abox_sandbox_info *in)
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
	json_object *o = control_sandbox_json(in);
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
	json_object_object_add(o, "metadata", control_public_metadata(in, NULL, NULL));
	json_object_object_add(o, "lifecycle", lifecycle_json(in));
	network_detail(in->id, o);
	return o;
}

/* The answer kept a minute: asking runs `criu check` (≈ 70 ms here),
 * which every E2B pause, snapshot and fork would otherwise wait for, even
 * for sandboxes whose memory then cannot go to disk. Concurrent callers
 * wait for the one answer. */
#define CHECKPOINTER_RECHECK_MS 60000

bool control_checkpointer_works(abox_ctx *ctx)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static int64_t checked_ms = -1;
	static bool works;
	pthread_mutex_lock(&lock);
	int64_t now = clock_mono_ms();
	if (checked_ms < 0 || now - checked_ms >= CHECKPOINTER_RECHECK_MS) {
		works = abox_checkpointer_check(ctx, NULL, NULL, NULL) == 0;
		checked_ms = clock_mono_ms();
	}
	bool w = works;
	pthread_mutex_unlock(&lock);
	return w;
}

enum MHD_Result control_list(struct request *rq, abox_ctx *ctx, bool v2)
{
	struct listing l;
	char why[160];
	if (listing_parse(&l, v2, query(rq, "state"), query(rq, "order"), query(rq, "startedAfter"),
			  query(rq, "startedBefore"), query(rq, "template"), query(rq, "limit"), query(rq, "nextToken"),
			  why, sizeof(why)) < 0)
		return reply_error(rq, 400, "%s", why);
	if (l.template)
		l.template_here = daemon_template_of(l.template);
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
abox_sandbox *control_open_visible(struct request *rq, abox_ctx *ctx, const char *id, abox_sandbox_info *in,
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
	abox_sandbox *sb = control_open_visible(rq, ctx, id, &in, &sent);
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
	enum MHD_Result q = reply_json(rq, status, control_sandbox_json(&in));
	abox_sandbox_info_clear(&in);
	return q;
}

/* A resume makes a paused sandbox running again: it takes a running slot
 * and its memory (its disk it holds already), so it is admitted like a
 * create, around connect_sb. */
enum MHD_Result control_connect(struct request *rq, abox_ctx *ctx, const char *id, bool legacy_resume)
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

enum MHD_Result control_pause(struct request *rq, abox_ctx *ctx, const char *id)
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
	abox_sandbox *sb = control_open_visible(rq, ctx, id, &in, &sent);
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
	uint32_t flags = !memory ? ABOX_PAUSE_NO_MEMORY : control_checkpointer_works(ctx) ? ABOX_PAUSE_TO_DISK : 0;
	int r = abox_sandbox_pause_flags(sb, flags, &err);
	/* one whose memory cannot go to disk (a sandbox with networking)
	 * is paused as on a host without a checkpointer */
	if (r == -EOPNOTSUPP && flags == ABOX_PAUSE_TO_DISK) {
		err = (abox_error)ABOX_ERROR_INIT;
		r = abox_sandbox_pause_flags(sb, 0, &err);
	}
	abox_sandbox_free(sb);
	if (r == -EALREADY)
		return reply_error(rq, 409, "%s", err.msg);
	return r < 0 ? reply_abox_error(rq, &err, r) : reply_empty(rq, 204);
}

/* PUT /sandboxes/{id}/network: the egress replaced in force at once
 * (flows to what is now denied cut), then the settings GET shows. */
static enum MHD_Result network_put(struct request *rq, abox_sandbox *sb, const char *id)
{
	enum MHD_Result sent;
	json_object *b = body_json(rq, &sent);
	if (!b)
		return sent;
	char why[512];
	unsigned st = 0;
	struct e2b_net en;
	char *old = note_read("network", id);
	enum MHD_Result q;
	if (network_parse_update(b, old, &en, &st, why, sizeof(why)) < 0) {
		q = reply_error(rq, st, "%s", why);
	} else {
		abox_error err = ABOX_ERROR_INIT;
		int r = abox_sandbox_set_network(sb, &en.opts, &err);
		if (r == -EOPNOTSUPP)
			q = reply_error(
				rq, 409,
				"sandbox %s has no network to change (made while aboxd's network.default "
				"was none)",
				id);
		else if (r < 0)
			q = reply_abox_error(rq, &err, r);
		else if (note_write("network", id,
				    json_object_to_json_string_ext(en.note, JSON_C_TO_STRING_PLAIN)) < 0)
			q = reply_error(rq, 500, "the new policy is in force, but cannot be stored for GET");
		else
			q = reply_empty(rq, 204);
		network_free(&en);
	}
	free(old);
	json_object_put(b);
	return q;
}

enum MHD_Result control_sandbox_call(struct request *rq, abox_ctx *ctx, const char *id, const char *what)
{
	enum MHD_Result sent;
	abox_sandbox_info in;
	abox_sandbox *sb = control_open_visible(rq, ctx, id, &in, &sent);
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
		q = network_put(rq, sb, id);
	} else {
		q = reply_json(rq, 200, detail_json(&in));
	}
	abox_sandbox_free(sb);
	abox_sandbox_info_clear(&in);
	return q;
}
