/* input.c — process.Process/StreamInput: a client stream of Connect
 * envelopes over one HTTP/1.1 request (chunked), decoded as it arrives —
 * {"start": {"process": {"pid"|"tag"}}} first, then {"data": {"input":
 * {"stdin"|"pty": base64}}} and {"keepalive": {}} — so each piece of input
 * reaches the process when it comes, not when the request ends. The reply
 * (at the end) is a Connect stream: an empty message and the end-stream
 * envelope, or the end-stream with the first error. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "envd.h"
#include "wire.h"
#include "e2b/e2b.h"

struct instream {
	sandbox_handle_t h;
	bool failed_early;        /* envd_open's reply is queued; the body is dropped */
	enum MHD_Result early;
	bool started;             /* the start message named a live process */
	int pid;
	char *tag;
	struct envq q;
	int result;               /* first failure, as -errno (0: fine) */
	abox_error err;
};

static int fail(struct instream *s, int e, const char *msg)
{
	if (!s->result) {
		s->result = -e;
		snprintf(s->err.msg, sizeof(s->err.msg), "%s", msg);
	}
	return -e;
}

bool input_stream_begin(struct request *rq)
{
	if (strcmp(rq->method, "POST") != 0 || strcmp(rq->url, "/process.Process/StreamInput") != 0)
		return false;
	struct instream *s = calloc(1, sizeof(*s));
	if (!s)
		return false;
	rq->input = s;
	s->h = envd_open(rq, &s->early);
	s->failed_early = !s->h.sb;
	return true;
}

static void saw_start(const abox_event *ev, void *ud)
{
	if (ev->type == ABOX_EVENT_START)
		*(bool *)ud = true;
}

/* Attaches to the stream's process for one piece of input: the attach
 * answers with the process's start (after its kept output, discarded
 * here) or with "no such process". A handle is held only while a message
 * is handled: one held across messages would have init keep the
 * process's output for it, and a client that sends slowly would hold the
 * process's output back for everyone. */
static int attach(struct instream *s, abox_proc **p, abox_error *err)
{
	int r = abox_proc_attach(s->h.sb, s->tag ? 0 : s->pid, s->tag, p, err);
	bool started = false;
	for (int i = 0; r >= 0 && !started && i < 500; i++) {
		if (!abox_proc_buffered(*p)) {
			struct pollfd pf = { .fd = abox_proc_fd(*p), .events = (short)abox_proc_events(*p) };
			(void)poll(&pf, 1, 10);
		}
		r = abox_proc_dispatch(*p, saw_start, &started, err);
		if (r == 1)
			started = true; /* it has ended already: its input is dropped */
	}
	if (r >= 0 && !started)
		r = -ETIMEDOUT, snprintf(err->msg, sizeof(err->msg), "StreamInput: the process did not answer");
	if (r < 0) {
		abox_proc_free(*p);
		*p = NULL;
	}
	return r < 0 ? r : 0;
}

/* Sends what is queued; input a process does not read is refused rather
 * than piled up in the daemon. */
static int drain(abox_proc *p, abox_error *err)
{
	int r = envd_proc_drain(p, err);
	if (r == 0 && abox_proc_stdin_pending(p)) {
		snprintf(err->msg, sizeof(err->msg), "StreamInput: the process has not read its input for 10 s");
		return -ENOSPC;
	}
	return r < 0 ? r : 0;
}

static void on_message(struct instream *s, json_object *o)
{
	json_object *ev, *v, *in;
	if (json_object_object_get_ex(o, "start", &ev)) {
		if (s->started) {
			fail(s, EINVAL, "StreamInput: a second start");
			return;
		}
		if (json_object_object_get_ex(ev, "process", &v) && json_object_is_type(v, json_type_object)) {
			/* read strictly: "pid": "12" or 1.5 must not become some
			 * other process (or none) without a word */
			char why[128];
			int64_t pid = 0;
			const char *tag = NULL;
			if (json_get_int(v, "pid", 1, INT32_MAX, &pid, why, sizeof(why)) < 0 ||
			    json_get_string(v, "tag", &tag, why, sizeof(why)) < 0) {
				char msg[160];
				snprintf(msg, sizeof(msg), "StreamInput: start.process.%s", why);
				fail(s, EINVAL, msg);
				return;
			}
			s->pid = (int)pid;
			if (tag && !(s->tag = strdup(tag))) {
				fail(s, ENOMEM, "StreamInput: out of memory");
				return;
			}
		}
		if (s->pid <= 0 && !s->tag) {
			fail(s, EINVAL, "StreamInput: start.process.pid or .tag is required");
			return;
		}
		abox_proc *p = NULL;
		abox_error err = ABOX_ERROR_INIT;
		int r = attach(s, &p, &err);
		abox_proc_free(p);
		if (r < 0)
			fail(s, -r, err.msg);
		else
			s->started = true;
		return;
	}
	if (json_object_object_get_ex(o, "data", &ev)) {
		if (!s->started) {
			fail(s, EINVAL, "StreamInput: data before start");
			return;
		}
		const char *b64 = NULL;
		if (json_object_object_get_ex(ev, "input", &in) &&
		    (json_object_object_get_ex(in, "stdin", &v) || json_object_object_get_ex(in, "pty", &v)) &&
		    json_object_is_type(v, json_type_string))
			b64 = json_object_get_string(v);
		unsigned char *raw = NULL;
		size_t n = 0;
		if (!b64 || base64_decode(b64, &raw, &n) < 0) {
			fail(s, EINVAL, "StreamInput: data.input.stdin (base64) is required");
			return;
		}
		abox_proc *p = NULL;
		abox_error err = ABOX_ERROR_INIT;
		int r = attach(s, &p, &err);
		if (r >= 0 && (r = abox_proc_write_stdin(p, raw, n, &err)) >= 0)
			r = drain(p, &err);
		free(raw);
		abox_proc_free(p);
		if (r < 0)
			fail(s, -r, err.msg);
		return;
	}
	/* keepalive, or an event this version does not know: nothing to do */
}

/* One message for envq_each: taken until the stream has its answer. */
static int take(void *ud, uint8_t flags, json_object *o)
{
	struct instream *s = ud;
	if (!(flags & E2B_END_STREAM) && o)
		on_message(s, o);
	return s->result != 0;
}

void input_stream_chunk(struct request *rq, const char *data, size_t n)
{
	struct instream *s = rq->input;
	if (s->failed_early || s->result)
		return; /* read and dropped; answered at the end */
	int r = envq_push(&s->q, data, n);
	if (r < 0) {
		fail(s, r == -E2BIG ? E2BIG : -r, "StreamInput: a message over the size bound");
		return;
	}
	char why[160];
	if (envq_each(&s->q, take, s, why, sizeof(why)) < 0) {
		char msg[200];
		snprintf(msg, sizeof(msg), "StreamInput: %s", why);
		fail(s, EINVAL, msg);
	}
}

static void put_envelope(char *out, size_t *len, uint8_t flags, const char *json)
{
	size_t n = strlen(json);
	e2b_envelope_head(out + *len, flags, n);
	memcpy(out + *len + E2B_ENVELOPE_HEAD, json, n);
	*len += E2B_ENVELOPE_HEAD + n;
}

enum MHD_Result input_stream_end(struct request *rq)
{
	struct instream *s = rq->input;
	if (s->failed_early)
		return s->early;
	if (!s->result && s->q.len != s->q.off)
		fail(s, EINVAL, "StreamInput: the request ended inside a message");
	if (!s->result && !s->started)
		fail(s, EINVAL, "StreamInput: no start message");
	const char *end = "{}";
	json_object *eo = NULL;
	if (s->result) {
		eo = json_object_new_object();
		json_object *e = json_object_new_object();
		int code = -s->result;
		json_object_object_add(e, "code", json_object_new_string(code == ENOENT || code == ESRCH ? "not_found"
									 : code == EINVAL || code == E2BIG ? "invalid_argument"
									 : code == ENOSPC		   ? "resource_exhausted"
													   : "internal"));
		json_object_object_add(e, "message", json_object_new_string(s->err.msg));
		json_object_object_add(eo, "error", e);
		end = json_object_to_json_string_ext(eo, JSON_C_TO_STRING_PLAIN);
	}
	size_t cap = 16 + strlen(end), len = 0;
	char *body = malloc(cap);
	if (!body) {
		json_object_put(eo);
		return MHD_NO;
	}
	if (!s->result)
		put_envelope(body, &len, 0, "{}");
	put_envelope(body, &len, E2B_END_STREAM, end);
	json_object_put(eo);
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/connect+json");
	enum MHD_Result q = daemon_queue(rq, 200, r);
	MHD_destroy_response(r);
	return q;
}

void input_stream_free(struct request *rq)
{
	struct instream *s = rq->input;
	if (!s)
		return;
	free(s->tag);
	if (!s->failed_early)
		envd_close(&s->h);
	envq_free(&s->q);
	free(s);
	rq->input = NULL;
}
