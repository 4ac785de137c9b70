/* router.c — where a request goes: the calls libmicrohttpd makes for
 * every request of the API listeners (its start, its head and body, its
 * end), the choice of plane, and the route tables of the control and
 * envd planes.
 *
 * The envd and code planes are chosen by E2b-Sandbox-Id and
 * E2b-Sandbox-Port, or by a Host of the form <port>-<id>.<domain>;
 * everything else is the control plane. It answers nothing itself but
 * the refusals of a request's framing and body (400, 413, 503), the
 * planes' /health and envd's /metrics and /envs: the calls are the
 * planes' own, and answer through http.c. The admin listener (/metrics)
 * is metrics.c's. Runs in aboxd. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/clock.h"
#include "access_log.h"
#include "auth.h"
#include "conns.h"
#include "control.h"
#include "daemon.h"
#include "envd/envd.h"
#include "head.h"
#include "metrics.h"
#include "planes.h"
#include "router.h"
#include "tbuild.h"
#include "wire.h"

#define SMUGGLE_MSG "{\"code\":400,\"message\":\"Content-Length and Transfer-Encoding together are refused\"}"

#define NO_ROOM_MSG                                                                                            \
	"{\"code\":503,\"message\":\"the daemon's memory for request bodies (DAEMON_BODY_BUDGET, 128 MiB) is in use: try again\"}"

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

/* The control plane's route table (X-API-Key; /health needs none). */
static enum MHD_Result control_route(struct request *rq)
{
	const char *m = rq->method, *u = rq->url;
	if (!strcmp(u, "/health"))
		return reply_json(rq, 200, json_object_new_object());
	if (!control_authorized(rq))
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
	bool handled = false;
	if (!p && (q = tbuild_route(rq, m, u, &handled), handled))
		;
	else if (p && !*p && post)
		q = control_create(rq, ctx);
	else if (p && !*p && get)
		q = control_list(rq, ctx, v2);
	else if (p && *p == '/' && split_id(p + 1, id, &rest)) {
		if (!*rest && get)
			q = control_sandbox_call(rq, ctx, id, "info");
		else if (!*rest && del)
			q = control_sandbox_call(rq, ctx, id, "kill");
		else if (!strcmp(rest, "/connect") && post)
			q = control_connect(rq, ctx, id, false);
		else if (!strcmp(rest, "/resume") && post && !v2)
			q = control_connect(rq, ctx, id, true);
		else if (!strcmp(rest, "/pause") && post)
			q = control_pause(rq, ctx, id);
		else if (!strcmp(rest, "/timeout") && post)
			q = control_sandbox_call(rq, ctx, id, "timeout");
		else if (!strcmp(rest, "/metrics") && get)
			q = control_sandbox_call(rq, ctx, id, "metrics");
		else if (!strcmp(rest, "/network") && !strcmp(m, "PUT"))
			q = control_sandbox_call(rq, ctx, id, "network");
		else if (!strcmp(rest, "/snapshots") && post)
			q = control_snapshot(rq, ctx, id);
		else if (!strcmp(rest, "/fork") && post)
			q = control_fork(rq, ctx, id);
		else
			q = reply_error(rq, 404, "no route %s %s", m, u);
	} else if (!strcmp(u, "/snapshots") && get) {
		q = control_snapshots(rq, ctx);
	} else if (!strncmp(u, "/templates/aliases/", 19) && get) {
		q = control_template_alias(rq, ctx, u + 19);
	} else if (!strcmp(u, "/volumes") || !strncmp(u, "/volumes/", 9)) {
		q = reply_error(rq, 501, "volumes are not supported by abox (%s %s)", m, u);
	} else if (!strncmp(u, "/templates/", 11) && del) {
		q = control_template_forget(rq, ctx, u + 11);
	} else {
		q = reply_error(rq, 404, "no route %s %s", m, u);
	}
	abox_ctx_free(ctx);
	return q;
}

/* Whether the sandbox is there and running: what the SDKs' isRunning()
 * asks. Like E2B's proxy, 502 when it is not. */
static enum MHD_Result health(struct request *rq)
{
	abox_ctx *ctx = request_ctx();
	abox_sandbox_info in;
	bool up = ctx && sandbox_visible(rq, ctx, rq->sandbox, &in) == 0, ok = true;
	if (up) {
		ok = auth_request_ok(rq, &in);
		up = in.state == ABOX_STATE_RUNNING;
		abox_sandbox_info_clear(&in);
	}
	abox_ctx_free(ctx);
	if (!ok)
		return reply_error(rq, 401, "invalid or missing X-Access-Token for sandbox %s", rq->sandbox);
	return up ? reply_empty(rq, 204) : reply_error(rq, 502, "sandbox %s is not running", rq->sandbox);
}

/* envd's own GET /metrics: the sandbox's use, in envd's field names. */
static enum MHD_Result envd_metrics(struct request *rq)
{
	enum MHD_Result sent;
	sandbox_handle_t h = envd_open(rq, &sent);
	if (!h.sb)
		return sent;
	abox_metrics mt = { .version = ABOX_METRICS_VERSION };
	abox_sandbox_info in;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_sandbox_metrics(h.sb, &mt, &err);
	unsigned cpus = 1;
	if (r >= 0 && abox_sandbox_info_get(h.ctx, rq->sandbox, &in, NULL) == 0) {
		cpus = (in.cpu_millis + 999) / 1000;
		abox_sandbox_info_clear(&in);
	}
	envd_close(&h);
	if (r < 0)
		return envd_error(rq, -r, "%s", err.msg);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "ts", json_object_new_int64(mt.timestamp_ms / 1000));
	json_object_object_add(o, "cpu_count", json_object_new_int((int)cpus));
	json_object_object_add(o, "cpu_used_pct", json_object_new_double(mt.cpu_pct));
	json_object_object_add(o, "mem_total", json_object_new_int64((int64_t)mt.mem_limit));
	json_object_object_add(o, "mem_used", json_object_new_int64((int64_t)mt.mem_used));
	json_object_object_add(o, "mem_cache", json_object_new_int64(0));
	json_object_object_add(o, "mem_total_mib", json_object_new_int64((int64_t)(mt.mem_limit >> 20)));
	json_object_object_add(o, "mem_used_mib", json_object_new_int64((int64_t)(mt.mem_used >> 20)));
	json_object_object_add(o, "disk_used", json_object_new_int64((int64_t)mt.disk_used));
	json_object_object_add(o, "disk_total", json_object_new_int64((int64_t)mt.disk_limit));
	return reply_json(rq, 200, o);
}

/* The envd plane's route table (port 49983). */
static enum MHD_Result envd_route(struct request *rq)
{
	const char *u = rq->url, *m = rq->method;
	if (!strcmp(u, "/health"))
		return health(rq);
	if (!strcmp(u, "/files"))
		return !strcmp(m, "GET") ? files_get_stream(rq) : !strcmp(m, "POST") ? files_post(rq)
										 : envd_error(rq, EINVAL, "method %s", m);
	if (!strcmp(u, "/metrics") && !strcmp(m, "GET"))
		return envd_metrics(rq);
	if (!strcmp(u, "/envs") && !strcmp(m, "GET"))
		return reply_json(rq, 200, json_object_new_object());
	if (strcmp(m, "POST") != 0)
		return envd_error(rq, EINVAL, "no route %s %s", m, u);
	if (!strncmp(u, "/process.Process/", 17))
		return process_rpc(rq, u + 17);
	if (!strncmp(u, "/filesystem.Filesystem/", 23))
		return filesystem_rpc(rq, u + 23);
	return envd_error(rq, EOPNOTSUPP, "no such method %s", u);
}

/* E2b-Sandbox-Id/-Port, or Host "<port>-<id>.<domain>": which sandbox
 * plane this is, if any. */
static bool sandbox_plane(struct request *rq)
{
	const char *id = header(rq, "E2b-Sandbox-Id"), *port = header(rq, "E2b-Sandbox-Port");
	if (id && port) {
		if (!sandbox_id_ok(id))
			return false;
		memcpy(rq->sandbox, id, 21);
		rq->port = (unsigned)strtoul(port, NULL, 10);
		return true;
	}
	if (sandbox_host(header(rq, "Host"), rq->sandbox, &rq->port))
		return true;
	/* a signed URL the SDKs built from E2B_SANDBOX_URL names no sandbox:
	 * its signature does */
	return auth_signed_route(rq);
}

/* A refusal of the request's framing: a fixed JSON body and one header
 * more, never queued behind anything (no defer_reply). */
static enum MHD_Result refuse(struct request *rq, unsigned status, const char *msg, const char *name,
			      const char *value)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, name, value);
	enum MHD_Result q = daemon_queue(rq, status, r);
	MHD_destroy_response(r);
	return q;
}

static enum MHD_Result route(struct request *rq)
{
	if (rq->smuggled)
		return refuse(rq, 400, SMUGGLE_MSG, "Connection", "close");
	if (rq->too_big)
		return reply_error(rq, 413, "the body is larger than %u bytes (the limit of a JSON body; files go to POST /files, streamed)",
				   DAEMON_MAX_BODY);
	/* not this request's fault: the others' bodies fill the budget */
	if (rq->no_room)
		return refuse(rq, 503, NO_ROOM_MSG, "Retry-After", "1");
	if (sandbox_plane(rq)) {
		if (rq->port == DAEMON_ENVD_PORT)
			return envd_route(rq);
		if (rq->port == DAEMON_CODE_PORT)
			return code_route(rq);
		return proxy_route(rq);
	}
	return control_route(rq);
}

enum MHD_Result daemon_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)cls;
	struct request *rq = *con_cls;
	if (!rq)
		return MHD_NO; /* out of memory in daemon_uri */
	if (rq->answered) {
		*upload_size = 0; /* answered before its body: what still comes is dropped */
		return MHD_YES;
	}
	if (!rq->conn) {
		rq->conn = conn;
		rq->method = method;
		rq->url = url;
		/* a malformed head is answered before any body is read, and
		 * libmicrohttpd closes the connection after an early answer */
		char why[160];
		const char *full = conns_request_head(rq);
		unsigned bad = full ? 503 : head_check(rq, method, version, why, sizeof(why));
		if (full)
			snprintf(why, sizeof(why), "too many connections without an API key (%s); retry later", full);
		if (bad) {
			/* the client's doing even when 5xx: not logged as the
			 * daemon's own failure (reply_error would) */
			json_object *o = json_object_new_object();
			json_object_object_add(o, "code", json_object_new_int((int)bad));
			json_object_object_add(o, "message", json_object_new_string(why));
			*con_cls = rq;
			return reply_json(rq, bad, o);
		}
		/* both framings at once is how requests are smuggled past a
		 * proxy that reads the other one: refused, connection closed */
		rq->smuggled = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length") &&
			       MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Transfer-Encoding");
		*con_cls = rq;
		/* a file upload goes into the sandbox as it arrives */
		if (!rq->smuggled && sandbox_plane(rq) && rq->port == DAEMON_ENVD_PORT && !files_stream_begin(rq))
			(void)input_stream_begin(rq); /* and stdin goes to the process as it arrives */
		/* a template build's upload goes to disk as it arrives (its link's
		 * token is its credential: no API key) */
		if (!rq->smuggled && !sandbox_plane(rq))
			(void)tbuild_stream_begin(rq);
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
		if (cl && !rq->upload && !rq->input && !rq->tupload) {
			unsigned long long v = strtoull(cl, NULL, 10);
			/* refused before any of it is kept: it is read and
			 * dropped (a client that is still sending would not see
			 * an answer given now, only a reset connection) — or,
			 * when the client waits for a go before it sends
			 * (Expect: 100-continue), answered now, and the body
			 * never comes */
			if (v > DAEMON_MAX_BODY) {
				rq->too_big = true;
				const char *ex = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Expect");
				if (ex && !strcasecmp(ex, "100-continue")) {
					rq->answered = true;
					return route(rq);
				}
			}
			rq->expect = (size_t)v;
		}
		return MHD_YES;
	}
	if (rq->input) {
		if (*upload_size) {
			input_stream_chunk(rq, upload, *upload_size);
			*upload_size = 0;
			return MHD_YES;
		}
		return input_stream_end(rq);
	}
	if (rq->upload) {
		if (*upload_size) {
			files_stream_chunk(rq, upload, *upload_size);
			*upload_size = 0;
			return MHD_YES;
		}
		return files_stream_end(rq);
	}
	if (rq->tupload) {
		if (*upload_size) {
			tbuild_stream_chunk(rq, upload, *upload_size);
			*upload_size = 0;
			return MHD_YES;
		}
		return tbuild_stream_end(rq);
	}
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		http_body_append(rq, upload, n);
		return MHD_YES;
	}
	return route(rq);
}

/* The request is over: counted by route, then its access log line. */
static void request_done(struct request *rq)
{
	double secs = (double)(clock_mono_ms() - rq->start_ms) / 1000.0;
	char route[128];
	metrics_route(rq, route, sizeof(route));
	metrics_count(rq, route, secs);
	access_log_write(rq, route, secs);
}

/* The raw request target, before libmicrohttpd splits off and decodes
 * the query: the request's state starts here. */
void *daemon_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls;
	conns_request_line(conn);
	struct request *rq = calloc(1, sizeof(*rq));
	if (rq) {
		snprintf(rq->raw_uri, sizeof(rq->raw_uri), "%s", uri ? uri : "");
		rq->target = uri;
		rq->target_len = uri ? strlen(uri) : 0;
		rq->target_pct00 = uri && strstr(uri, "%00");
		rq->start_ms = clock_mono_ms();
	}
	return rq;
}

void daemon_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)toe;
	struct request *rq = *con_cls;
	conns_request_done(rq, conn);
	if (rq) {
		if (rq->conn)
			request_done(rq);
		files_stream_free(rq);
		tbuild_stream_free(rq);
		free(rq->deferred);
		input_stream_free(rq);
		http_body_release(rq);
		free(rq);
	}
	*con_cls = NULL;
}
