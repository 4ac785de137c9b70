/* http.c — libmicrohttpd glue: bodies, routing to the planes, replies.
 *
 * Bodies that are not streamed (uploads and stdin are, see fs.c and
 * input.c) are collected up to DAEMON_MAX_BODY each and DAEMON_BODY_BUDGET
 * together (below). JSON is parsed with a depth limit. The envd/code planes are chosen by E2b-Sandbox-Id and
 * E2b-Sandbox-Port, or by a Host of the form <port>-<id>.<domain>;
 * everything else is the control plane. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/clock.h"
#include "e2b/e2b.h"
#include "auth.h"
#include "daemon.h"
#include "stream.h"
#include "wire.h"
#include "envd/envd.h"
#include "head.h"
#include "conns.h"

const char *header(struct request *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

const char *query(struct request *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

#define SMUGGLE_MSG "{\"code\":400,\"message\":\"Content-Length and Transfer-Encoding together are refused\"}"

#define NO_ROOM_MSG                                                                                            \
	"{\"code\":503,\"message\":\"the daemon's memory for request bodies (DAEMON_BODY_BUDGET, 128 MiB) is in use: try again\"}"

static enum MHD_Result queue(struct request *rq, unsigned status, const char *ctype, char *data, size_t len)
{
	if (rq->defer_reply) {
		free(rq->deferred);
		rq->deferred = data;
		rq->deferred_len = len;
		rq->deferred_status = status;
		rq->deferred_ctype = ctype;
		return MHD_YES;
	}
	struct MHD_Response *r = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(data);
		return MHD_NO;
	}
	if (ctype)
		MHD_add_response_header(r, "Content-Type", ctype);
	enum MHD_Result q = daemon_queue(rq, status, r);
	MHD_destroy_response(r);
	return q;
}

enum MHD_Result reply_deferred(struct request *rq)
{
	char *d = rq->deferred;
	rq->deferred = NULL;
	rq->defer_reply = false;
	return d ? queue(rq, rq->deferred_status, rq->deferred_ctype, d, rq->deferred_len) : MHD_NO;
}

enum MHD_Result reply_json(struct request *rq, unsigned status, json_object *body)
{
	const char *s = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	char *copy = strdup(s ? s : "null");
	json_object_put(body);
	if (!copy)
		return MHD_NO;
	return queue(rq, status, "application/json", copy, strlen(copy));
}

enum MHD_Result reply_stream_error(struct request *rq, json_object *error)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "error", error);
	size_t n = 0;
	char *buf = e2b_envelope(E2B_END_STREAM, o, &n);
	json_object_put(o);
	if (!buf)
		return MHD_NO;
	return queue(rq, 200, "application/connect+json", buf, n);
}

enum MHD_Result reply_stream(struct request *rq, const char *ctype, MHD_ContentReaderCallback reader, void *cls,
			     MHD_ContentReaderFreeCallback free_fn)
{
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, reader, cls, free_fn);
	if (!r) {
		free_fn(cls);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", ctype);
	enum MHD_Result q = daemon_queue(rq, 200, r);
	MHD_destroy_response(r);
	return q;
}

enum MHD_Result reply_empty(struct request *rq, unsigned status)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	enum MHD_Result q = daemon_queue(rq, status, r);
	MHD_destroy_response(r);
	return q;
}

enum MHD_Result reply_error(struct request *rq, unsigned status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the daemon's own failures go to its log too (the journal under
	 * systemd): a client may show only the first line, or nothing */
	if (status >= 500)
		fprintf(stderr, "aboxd: %s %s: %u: %s\n", rq->method ? rq->method : "?", rq->url ? rq->url : "?",
			status, msg);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "code", json_object_new_int((int)status));
	json_object_object_add(o, "message", json_object_new_string(msg));
	return reply_json(rq, status, o);
}

unsigned status_of_errno(int e)
{
	switch (e) {
	case ENOENT:
	case ESRCH:
		return 404;
	case EALREADY:
	case EEXIST:
	case EBUSY:
		return 409;
	case EINVAL:
	case ENAMETOOLONG:
	case ENOTDIR:
	case EISDIR:
		return 400;
	case EACCES:
	case EPERM:
		return 403;
	case ENOSPC:
		return 507;
	case EAGAIN:
		return 409;
	case EOPNOTSUPP:
		return 501;
	default:
		return 500;
	}
}

enum MHD_Result reply_abox_error(struct request *rq, const abox_error *err, int r)
{
	int e = r < 0 ? -r : err->code;
	return reply_error(rq, status_of_errno(e), "%s", err->msg[0] ? err->msg : "failed");
}

json_object *body_json(struct request *rq, enum MHD_Result *sent)
{
	if (!rq->len) {
		*sent = reply_error(rq, 400, "a JSON body is required");
		return NULL;
	}
	char why[256];
	json_object *o = json_parse_object(rq->body, rq->len, why, sizeof(why));
	if (!o)
		*sent = reply_error(rq, 400, "%s", why);
	return o;
}

abox_ctx *request_ctx(void)
{
	abox_ctx_opts o = ABOX_CTX_OPTS_INIT;
	o.state_dir = daemon_cfg.state_dir;
	abox_ctx *ctx = NULL;
	return abox_ctx_new(&o, &ctx, NULL) < 0 ? NULL : ctx;
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

static enum MHD_Result route(struct request *rq)
{
	if (rq->smuggled) {
		struct MHD_Response *r = MHD_create_response_from_buffer(
			strlen(SMUGGLE_MSG), (void *)SMUGGLE_MSG, MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, "Content-Type", "application/json");
		MHD_add_response_header(r, "Connection", "close");
		enum MHD_Result q = daemon_queue(rq, 400, r);
		MHD_destroy_response(r);
		return q;
	}
	if (rq->too_big)
		return reply_error(rq, 413, "the body is larger than %u bytes (the limit of a JSON body; files go to POST /files, streamed)",
				   DAEMON_MAX_BODY);
	if (rq->no_room) {
		/* not this request's fault: the others' bodies fill the budget */
		struct MHD_Response *r = MHD_create_response_from_buffer(strlen(NO_ROOM_MSG), (void *)NO_ROOM_MSG,
									 MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, "Content-Type", "application/json");
		MHD_add_response_header(r, "Retry-After", "1");
		enum MHD_Result q = daemon_queue(rq, 503, r);
		MHD_destroy_response(r);
		return q;
	}
	if (sandbox_plane(rq)) {
		if (rq->port == DAEMON_ENVD_PORT)
			return envd_route(rq);
		if (rq->port == DAEMON_CODE_PORT)
			return code_route(rq);
		return proxy_route(rq);
	}
	return control_route(rq);
}

/* ---- buffered bodies ---------------------------------------------------
 *
 * A body that is not streamed (JSON, a proxied request) is kept whole,
 * up to DAEMON_MAX_BODY each and DAEMON_BODY_BUDGET for all requests
 * together: eight clients sending 70 MB each once held 464 MB. A body
 * announced larger than the cap is read and dropped, none of it kept,
 * then answered 413; one that would take the budget past its end is
 * dropped from there on (its memory given back at once) and answered 503
 * (try again). */

static atomic_size_t body_bytes; /* what the buffered bodies hold */

static bool budget_take(size_t more)
{
	size_t cur = atomic_load(&body_bytes);
	do
		if (cur + more > DAEMON_BODY_BUDGET)
			return false;
	while (!atomic_compare_exchange_weak(&body_bytes, &cur, cur + more));
	return true;
}

static void body_release(struct request *rq)
{
	if (rq->cap)
		body_bytes -= rq->cap;
	free(rq->body);
	rq->body = NULL;
	rq->len = rq->cap = 0;
}

/* Room for need bytes: the buffer doubles, never past the body's
 * Content-Length or the cap. */
static int body_grow(struct request *rq, size_t need)
{
	/* a Content-Length is a claim: memory follows the bytes that came,
	 * so a client that announces 60 MB and sends one byte holds 1 MiB */
	size_t limit = rq->expect ? rq->expect + 1 : DAEMON_MAX_BODY + 1;
	size_t cap = rq->cap ? rq->cap : 4096;
	while (cap < need)
		cap *= 2;
	if (cap > limit)
		cap = need > limit ? need : limit;
	size_t more = cap - rq->cap;
	if (!budget_take(more)) {
		rq->no_room = true;
		body_release(rq);
		return -ENOMEM;
	}
	char *nb = realloc(rq->body, cap);
	if (!nb) {
		body_bytes -= more;
		rq->no_room = true;
		body_release(rq);
		return -ENOMEM;
	}
	rq->body = nb;
	rq->cap = cap;
	return 0;
}

enum MHD_Result daemon_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **con_cls);
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
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
		if (cl && !rq->upload && !rq->input) {
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
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		if (rq->too_big || rq->no_room)
			return MHD_YES; /* read and dropped, answered at the end */
		if (rq->len + n > DAEMON_MAX_BODY) {
			rq->too_big = true;
			body_release(rq);
			return MHD_YES;
		}
		if (rq->len + n + 1 > rq->cap && body_grow(rq, rq->len + n + 1) < 0)
			return MHD_YES;
		memcpy(rq->body + rq->len, upload, n);
		rq->len += n;
		rq->body[rq->len] = '\0';
		return MHD_YES;
	}
	return route(rq);
}

/* The raw request target, before libmicrohttpd splits off and decodes
 * the query: the request's state starts here. */
void *daemon_uri(void *cls, const char *uri, struct MHD_Connection *conn);
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

void daemon_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe);
void daemon_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)toe;
	struct request *rq = *con_cls;
	conns_request_done(rq, conn);
	if (rq) {
		if (rq->conn)
			ops_request_done(rq);
		files_stream_free(rq);
		free(rq->deferred);
		input_stream_free(rq);
		body_release(rq);
		free(rq);
	}
	*con_cls = NULL;
}
