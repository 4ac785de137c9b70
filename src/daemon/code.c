/* code.c — the code plane (port 49999), as @e2b/code-interpreter uses it:
 * POST /execute streams NDJSON, /contexts creates, lists, deletes and
 * restarts contexts. No Jupyter: a context is a long-lived runner process
 * inside the sandbox (code_ctx.c), found again by its tag, so aboxd keeps
 * no state and a restarted aboxd finds every context. A cell is one JSON
 * line to the runner's stdin; its output lines carry the cell's id, which
 * is how this stream picks its own out of the runner's output. A client
 * that goes away mid-cell (a client's timeout) interrupts it at once
 * (SIGINT to the runner), so the next cell does not wait behind it. Every
 * route wants the sandbox's access token or its traffic token (auth.c):
 * /execute runs code as the sandbox's user. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "config.h"
#include "envd/envd.h"
#include "lifecycle.h"
#include "planes.h"
#include "stream.h"
#include "code_ctx.h"

#define KEEPALIVE_MS 5000

static json_object *ctx_json(const struct ctx_info *c)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(c->id));
	json_object_object_add(o, "language", json_object_new_string(c->language));
	json_object_object_add(o, "cwd", json_object_new_string(c->cwd));
	return o;
}

/* The answer for a context that could not start: what the template lacks
 * or a cwd that is not there is the request's fault (400). */
static enum MHD_Result start_failed(struct request *rq, int r, const abox_error *err)
{
	return reply_error(rq, r == -ENOTSUP || r == -ENOENT ? 400 : status_of_errno(-r), "%s", err->msg);
}

static void random_hex(char *out, size_t bytes)
{
	unsigned char raw[32];
	FILE *f = fopen("/dev/urandom", "re");
	size_t n = f ? fread(raw, 1, bytes, f) : 0;
	if (f)
		fclose(f);
	for (size_t i = 0; i < bytes; i++)
		snprintf(out + 2 * i, 3, "%02x", i < n ? raw[i] : (unsigned char)rand());
}

/* ---- /execute --------------------------------------------------------- */

struct exec_stream {
	sandbox_handle_t h;
	abox_proc *p;
	int pid;
	int client_fd; /* the client's connection: its close ends the cell */
	char id[33];
	char ctx_id[40], language[16]; /* the context's, for the message when its runner dies */
	char *line;          /* a partial output line */
	size_t line_len;
	char *out;           /* NDJSON ready to send */
	size_t out_len, out_off;
	bool done;
	bool cut;            /* the sandbox went away: the response ends with an error */
	int64_t last_ms;
};

static void queue_line(struct exec_stream *s, const char *l, size_t n)
{
	char *nb = realloc(s->out, s->out_len + n + 1);
	if (!nb)
		return;
	s->out = nb;
	memcpy(s->out + s->out_len, l, n);
	s->out[s->out_len + n] = '\n';
	s->out_len += n + 1;
	s->last_ms = clock_mono_ms();
}

/* One line of the runner's output: ours (by id), or someone else's. */
static void runner_line(struct exec_stream *s, const char *l, size_t n)
{
	json_object *o = json_tokener_parse(l), *v;
	if (o && json_object_object_get_ex(o, "id", &v) && json_object_is_type(v, json_type_string) &&
	    !strcmp(json_object_get_string(v), s->id)) {
		json_object_object_del(o, "id");
		const char *j = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		queue_line(s, j, strlen(j));
		if (json_object_object_get_ex(o, "type", &v) && !strcmp(json_object_get_string(v), "end_of_execution"))
			s->done = true;
	}
	json_object_put(o);
	(void)n;
}

static void on_runner(const abox_event *ev, void *ud)
{
	struct exec_stream *s = ud;
	if (ev->type == ABOX_EVENT_STDOUT) {
		const char *d = ev->data;
		for (size_t i = 0; i < ev->len; i++) {
			if (d[i] != '\n') {
				char *nb = realloc(s->line, s->line_len + 2);
				if (!nb)
					return;
				s->line = nb;
				s->line[s->line_len++] = d[i];
				continue;
			}
			if (s->line) {
				s->line[s->line_len] = '\0';
				runner_line(s, s->line, s->line_len);
			}
			s->line_len = 0;
		}
	} else if (ev->type == ABOX_EVENT_END && !s->done && lifecycle_sandbox_gone(s->h.ctx, abox_sandbox_id(s->h.sb))) {
		s->done = s->cut = true; /* the sandbox's kill: no normal end (below) */
	} else if (ev->type == ABOX_EVENT_END && !s->done) {
		/* the interpreter died under the cell (an os._exit, the OOM
		 * killer...): the cell says so, and how to get the context back */
		char why[256];
		if (ev->signal)
			snprintf(why, sizeof(why), "killed by signal %d", ev->signal);
		else
			snprintf(why, sizeof(why), "exit %d", ev->exit_code);
		json_object *e = json_object_new_object();
		json_object_object_add(e, "type", json_object_new_string("error"));
		json_object_object_add(e, "name", json_object_new_string("ContextEnded"));
		char value[512];
		snprintf(value, sizeof(value),
			 "the %s interpreter of context %s ended during this cell (%s); "
			 "POST /contexts/%s/restart starts it again",
			 s->language, s->ctx_id, why, s->ctx_id);
		json_object_object_add(e, "value", json_object_new_string(value));
		json_object_object_add(e, "traceback", json_object_new_string(""));
		const char *msg = json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN);
		queue_line(s, msg, strlen(msg));
		json_object_put(e);
		queue_line(s, "{\"type\":\"end_of_execution\"}", 27);
		s->done = true;
	}
}

static ssize_t exec_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct exec_stream *s = cls;
	for (;;) {
		if (s->out_off < s->out_len) {
			size_t n = s->out_len - s->out_off < max ? s->out_len - s->out_off : max;
			memcpy(buf, s->out + s->out_off, n);
			s->out_off += n;
			return (ssize_t)n;
		}
		if (s->done)
			/* cut: the SDKs raise their error for a request the
			 * sandbox's end broke, as under E2B's proxy */
			return s->cut ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
		if (!abox_proc_buffered(s->p)) {
			int wait = (int)(s->last_ms + KEEPALIVE_MS - clock_mono_ms());
			struct pollfd pf[2] = { { .fd = abox_proc_fd(s->p),
						  .events = (short)abox_proc_events(s->p) },
						{ .fd = s->client_fd, .events = POLLRDHUP } };
			int n = poll(pf, s->client_fd >= 0 ? 2 : 1, wait > 0 ? wait : 0);
			if (n > 0 && (pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR)))
				/* the client went away (its timeout): end the
				 * response now; exec_free interrupts the cell */
				return MHD_CONTENT_READER_END_WITH_ERROR;
			if (n == 0 || !(pf[0].revents)) {
				if (clock_mono_ms() >= s->last_ms + KEEPALIVE_MS)
					queue_line(s, "{\"type\":\"keepalive\"}", 20);
				continue;
			}
		}
		abox_error err = ABOX_ERROR_INIT;
		int r = abox_proc_dispatch(s->p, on_runner, s, &err);
		if (r < 0 && !s->done)
			s->done = s->cut = true; /* the sandbox went away under the cell */
	}
}

static void exec_free(void *cls)
{
	struct exec_stream *s = cls;
	if (!s->done) /* the client went away mid-cell: interrupt it */
		(void)abox_proc_signal(s->p, SIGINT, NULL);
	abox_proc_free(s->p);
	envd_close(&s->h);
	free(s->line);
	free(s->out);
	free(s);
}

static enum MHD_Result execute(struct request *rq, json_object *b, sandbox_handle_t h)
{
	json_object *v;
	/* code is a string, as E2B's server holds it (anything else is a 422
	 * there too: never run the JSON text of an object as code) */
	bool has_code = json_object_object_get_ex(b, "code", &v);
	if (has_code && !json_object_is_type(v, json_type_string)) {
		envd_close(&h);
		return reply_error(rq, 422, "code: a string is required");
	}
	const char *code = has_code ? json_object_get_string(v) : NULL;
	const char *cid = json_object_object_get_ex(b, "context_id", &v) && json_object_is_type(v, json_type_string)
				  ? json_object_get_string(v)
				  : NULL;
	const char *lang = json_object_object_get_ex(b, "language", &v) && json_object_is_type(v, json_type_string)
				   ? json_object_get_string(v)
				   : NULL;
	if (!code) {
		envd_close(&h);
		return reply_error(rq, 400, "code is required");
	}
	if (cid && lang) {
		envd_close(&h);
		return reply_error(rq, 400, "give context_id or language, not both");
	}
	const char *language = lang ? code_language(lang) : "python";
	if (!language) {
		envd_close(&h);
		return reply_error(
			rq, 400, "language '%s': abox runs python, javascript, typescript, bash, r and java",
			lang);
	}
	struct ctx_info c;
	abox_error err = ABOX_ERROR_INIT;
	if (cid && !code_find_context(&h, cid, &c)) {
		envd_close(&h);
		return reply_error(rq, 404, "context %s not found", cid);
	}
	if (cid && c.ended) {
		envd_close(&h);
		return reply_error(rq, 404,
				   "context %s: its %s interpreter ended (%s %d); POST /contexts/%s/restart "
				   "starts it again",
				   cid, c.language, c.end_signal ? "killed by signal" : "exit",
				   c.end_signal ? c.end_signal : c.exit_code, cid);
	}
	/* a default context (listed from the start) starts on its first cell;
	 * any other that is not running has ended (above) */
	int r = cid && c.running ? 0 : code_default_context(&h, cid ? c.language : language, &c, &err);
	if (r < 0) {
		envd_close(&h);
		return start_failed(rq, r, &err);
	}
	struct exec_stream *s = calloc(1, sizeof(*s));
	if (!s) {
		envd_close(&h);
		return MHD_NO;
	}
	random_hex(s->id, 16);
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	s->client_fd = ci ? ci->connect_fd : -1;
	s->h = h;
	s->pid = c.pid;
	snprintf(s->ctx_id, sizeof(s->ctx_id), "%s", c.id);
	snprintf(s->language, sizeof(s->language), "%s", c.language);
	s->last_ms = clock_mono_ms();
	r = abox_proc_attach(h.sb, c.pid, NULL, &s->p, &err);
	json_object *req = json_object_new_object();
	json_object_object_add(req, "id", json_object_new_string(s->id));
	json_object_object_add(req, "code", json_object_new_string(code));
	if (json_object_object_get_ex(b, "env_vars", &v) && json_object_is_type(v, json_type_object))
		json_object_object_add(req, "env", json_object_get(v));
	const char *line = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	char *withnl = r >= 0 ? malloc(strlen(line) + 2) : NULL;
	if (withnl) {
		strcpy(withnl, line);
		strcat(withnl, "\n");
		r = abox_proc_write_stdin(s->p, withnl, strlen(withnl), &err);
	} else if (r >= 0) {
		r = abox_error_setx(&err, ENOMEM, "out of memory");
	}
	free(withnl);
	json_object_put(req);
	if (r < 0) {
		s->done = true;
		exec_free(s);
		return reply_error(rq, status_of_errno(-r), "%s", err.msg);
	}
	return reply_stream(rq, "application/x-ndjson", exec_reader, s, exec_free);
}

/* ---- /contexts -------------------------------------------------------- */

enum MHD_Result code_route(struct request *rq)
{
	const char *u = rq->url, *m = rq->method;
	enum MHD_Result sent;
	json_object *b = NULL;
	if (!strcmp(m, "POST") && (!strcmp(u, "/execute") || !strcmp(u, "/contexts"))) {
		b = rq->len ? body_json(rq, &sent) : json_object_new_object();
		if (!b)
			return sent;
	}
	sandbox_handle_t h = envd_open_body(rq, b, &sent);
	if (!h.sb)
		return sent;
	enum MHD_Result q;
	if (!strcmp(u, "/health")) {
		/* answered only to a client with the token, like every route */
		envd_close(&h);
		return reply_empty(rq, 204);
	}
	if (!strcmp(u, "/execute") && b) {
		q = execute(rq, b, h);
		json_object_put(b);
		return q;
	}
	abox_error err = ABOX_ERROR_INIT;
	if (!strcmp(u, "/contexts") && !strcmp(m, "POST")) {
		json_object *v;
		const char *lang = json_object_object_get_ex(b, "language", &v) && json_object_is_type(v, json_type_string)
					   ? json_object_get_string(v)
					   : "python";
		const char *cwd = json_object_object_get_ex(b, "cwd", &v) && json_object_is_type(v, json_type_string)
					  ? json_object_get_string(v)
					  : NULL;
		const char *language = code_language(lang);
		char id[33];
		random_hex(id, 16);
		struct ctx_info c;
		int r;
		if (!language)
			q = reply_error(
				rq, 400,
				"language '%s': abox runs python, javascript, typescript, bash, r and java",
				lang);
		else if (cwd && (cwd[0] != '/' || strlen(cwd) > 90 || strchr(cwd, '\n') || strchr(cwd, ':')))
			q = reply_error(rq, 400,
					"cwd '%.100s': an absolute path of at most 90 bytes, without ':'",
					cwd);
		else if ((r = code_context_start(&h, id, language, cwd && *cwd ? cwd : NULL, &c, &err)) < 0)
			q = start_failed(rq, r, &err);
		else
			q = reply_json(rq, 200, ctx_json(&c));
	} else if (!strcmp(u, "/contexts") && !strcmp(m, "GET")) {
		struct ctx_info *v;
		size_t n;
		int r = code_contexts(&h, &v, &n);
		if (r < 0) {
			q = reply_error(rq, status_of_errno(-r), "contexts: %s", strerror(-r));
		} else {
			json_object *a = json_object_new_array();
			for (size_t i = 0; i < n; i++)
				json_object_array_add(a, ctx_json(&v[i]));
			free(v);
			q = reply_json(rq, 200, a);
		}
	} else if (!strncmp(u, "/contexts/", 10)) {
		char id[40];
		snprintf(id, sizeof(id), "%.*s", (int)strcspn(u + 10, "/"), u + 10);
		const char *rest = u + 10 + strlen(id);
		bool remove = !strcmp(m, "DELETE") && !*rest,
		     restart = !strcmp(m, "POST") && !strcmp(rest, "/restart");
		struct ctx_info c;
		if (!remove && !restart) {
			q = reply_error(rq, 404, "no route %s %s", m, u);
		} else if (!code_find_context(&h, id, &c)) {
			q = reply_error(rq, 404, "context %s not found", id);
		} else {
			int r = code_context_stop(&h, &c, &err);
			if (r >= 0 && restart)
				r = code_context_start(&h, c.id, c.language,
						       c.running || c.ended ? c.cwd : NULL, &c, &err);
			q = r < 0 ? start_failed(rq, r, &err) : reply_empty(rq, 204);
		}
	} else {
		q = reply_error(rq, 404, "no route %s %s", m, u);
	}
	envd_close(&h);
	json_object_put(b);
	return q;
}
