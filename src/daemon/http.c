/* http.c — the toolkit every plane answers with: request headers and
 * query, replies (JSON, errors, streams, deferred answers), the JSON body
 * and its memory, a reply a thread writes through a pipe, and a libabox
 * context per request.
 *
 * It does not route: which plane a request goes to, and the calls
 * libmicrohttpd makes, are router.c's. Bodies that are not streamed
 * (uploads and stdin are, see envd/fs.c and envd/input.c) are collected
 * up to DAEMON_MAX_BODY each and DAEMON_BODY_BUDGET together (below).
 * JSON is parsed with a depth limit. Runs in aboxd. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2b/e2b.h"
#include "daemon.h"
#include "wire.h"

const char *header(struct request *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

const char *query(struct request *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

enum MHD_Result daemon_queue(struct request *rq, unsigned status, struct MHD_Response *r)
{
	rq->status = status;
	return MHD_queue_response(rq->conn, status, r);
}

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

int reply_pipe_put(int fd, const void *data, size_t n)
{
	const char *p = data;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return 1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

ssize_t reply_pipe_read(int fd, char *buf, size_t max, const atomic_bool *cut)
{
	ssize_t n;
	do
		n = read(fd, buf, max);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		return n;
	/* cut is read after the end: its writer sets it before it closes */
	return n == 0 && !(cut && atomic_load(cut)) ? MHD_CONTENT_READER_END_OF_STREAM
						    : MHD_CONTENT_READER_END_WITH_ERROR;
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

void http_body_release(struct request *rq)
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
		http_body_release(rq);
		return -ENOMEM;
	}
	char *nb = realloc(rq->body, cap);
	if (!nb) {
		body_bytes -= more;
		rq->no_room = true;
		http_body_release(rq);
		return -ENOMEM;
	}
	rq->body = nb;
	rq->cap = cap;
	return 0;
}

void http_body_append(struct request *rq, const char *data, size_t n)
{
	if (rq->too_big || rq->no_room)
		return; /* read and dropped, answered at the end */
	if (rq->len + n > DAEMON_MAX_BODY) {
		rq->too_big = true;
		http_body_release(rq);
		return;
	}
	if (rq->len + n + 1 > rq->cap && body_grow(rq, rq->len + n + 1) < 0)
		return;
	memcpy(rq->body + rq->len, data, n);
	rq->len += n;
	rq->body[rq->len] = '\0';
}
