/* code.c — the code plane (port 49999), as @e2b/code-interpreter uses it:
 * POST /execute streams NDJSON, /contexts creates, lists, deletes and
 * restarts contexts. No Jupyter: a context is a long-lived runner process
 * inside the sandbox (runners/python_runner.py for python and bash,
 * runners/node_runner.js for javascript), started like any command and
 * found again by its tag "abox-ctx:<id>:<language>:<cwd>", so aboxd keeps
 * no state and a restarted aboxd finds every context. A cell is one JSON
 * line to the runner's stdin; its output lines carry the cell's id, which
 * is how this stream picks its own out of the runner's output. A client
 * that goes away mid-cell interrupts it (SIGINT to the runner). Every
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

#define CTX_TAG "abox-ctx:"
#define KEEPALIVE_MS 5000

static const char *runner_file(const char *language)
{
	return strcmp(language, "javascript") == 0 ? "node_runner.js" : "python_runner.py";
}

/* The runner's source: $ABOX_RUNNERS, the installed copy, the source tree. */
static char *runner_source(const char *language)
{
	const char *dirs[] = { getenv("ABOX_RUNNERS"), ABOX_DATADIR "/runners", ABOX_SOURCE_DIR "/runners" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		char p[4096];
		snprintf(p, sizeof(p), "%s/%s", dirs[i], runner_file(language));
		FILE *f = fopen(p, "re");
		if (!f)
			continue;
		char *buf = malloc(256 << 10);
		size_t n = buf ? fread(buf, 1, (256 << 10) - 1, f) : 0;
		fclose(f);
		if (buf)
			buf[n] = '\0';
		return buf;
	}
	return NULL;
}

static bool language_ok(const char *l)
{
	return !strcmp(l, "python") || !strcmp(l, "javascript") || !strcmp(l, "bash");
}

struct ctx_info {
	int pid;
	char id[40], language[16], cwd[96];
};

/* Parses "abox-ctx:<id>:<language>:<cwd>". */
static bool parse_tag(const char *tag, struct ctx_info *c)
{
	if (strncmp(tag, CTX_TAG, strlen(CTX_TAG)) != 0)
		return false;
	return sscanf(tag + strlen(CTX_TAG), "%39[^:]:%15[^:]:%95[^\n]", c->id, c->language, c->cwd) >= 2;
}

/* Running contexts of the sandbox (malloc'd array). */
static size_t contexts(sandbox_handle_t *h, struct ctx_info **out)
{
	abox_proc_info *v = NULL;
	size_t n = 0, k = 0;
	*out = NULL;
	if (abox_proc_list(h->sb, &v, &n, NULL) < 0)
		return 0;
	struct ctx_info *c = calloc(n ? n : 1, sizeof(*c));
	for (size_t i = 0; c && i < n; i++)
		if (v[i].running && parse_tag(v[i].tag, &c[k])) {
			c[k].pid = v[i].pid;
			k++;
		}
	free(v);
	*out = c;
	return c ? k : 0;
}

static bool find_context(sandbox_handle_t *h, const char *id, struct ctx_info *out)
{
	struct ctx_info *v;
	size_t n = contexts(h, &v);
	bool found = false;
	for (size_t i = 0; i < n && !found; i++)
		if (!strcmp(v[i].id, id)) {
			*out = v[i];
			found = true;
		}
	free(v);
	return found;
}

static int start_context(struct request *rq, sandbox_handle_t *h, const char *id, const char *language,
			 const char *cwd, struct ctx_info *out, abox_error *err)
{
	char *src = runner_source(language);
	if (!src)
		return abox_error_setx(err, ENOENT, "the code runner is not installed (runners/)");
	char tag[128];
	snprintf(tag, sizeof(tag), "%s%s:%s:%s", CTX_TAG, id, language, cwd ? cwd : "");
	const char *argv[] = { !strcmp(language, "javascript") ? "node" : "python3",
			       !strcmp(language, "javascript") ? "-e" : "-u", NULL, NULL, NULL };
	if (!strcmp(language, "javascript")) {
		argv[2] = src;
	} else {
		argv[2] = "-c";
		argv[3] = src;
	}
	/* python3 -u -c SRC LANGUAGE: the runner reads its language from argv */
	const char *pargv[] = { argv[0], argv[1], argv[2], argv[3], language, NULL };
	const char *env[] = { "MPLBACKEND=Agg", "PYTHONUNBUFFERED=1", NULL };
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	po.argv = !strcmp(language, "javascript") ? argv : pargv;
	po.env = env;
	po.cwd = cwd && *cwd ? cwd : NULL;
	po.user = rq->user;
	po.tag = tag;
	po.flags = ABOX_PROC_STDIN;
	abox_proc *p;
	int r = abox_proc_start(h->sb, &po, &p, err);
	free(src);
	if (r < 0)
		return r;
	/* wait for it to run (or to fail to start) */
	int pid = 0;
	for (int i = 0; i < 100 && pid <= 0; i++) {
		struct pollfd pf = { .fd = abox_proc_fd(p), .events = (short)abox_proc_events(p) };
		(void)poll(&pf, 1, 20);
		if (abox_proc_dispatch(p, NULL, NULL, err) < 0)
			break;
		pid = abox_proc_pid(p);
	}
	abox_proc_free(p);
	if (pid <= 0)
		return err->code ? -err->code : abox_error_setx(err, EIO, "the code runner did not start");
	*out = (struct ctx_info){ .pid = pid };
	snprintf(out->id, sizeof(out->id), "%s", id);
	snprintf(out->language, sizeof(out->language), "%s", language);
	snprintf(out->cwd, sizeof(out->cwd), "%s", cwd ? cwd : "");
	return 0;
}

static json_object *ctx_json(const struct ctx_info *c)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(c->id));
	json_object_object_add(o, "language", json_object_new_string(c->language));
	json_object_object_add(o, "cwd", json_object_new_string(c->cwd[0] ? c->cwd : "/home/user"));
	return o;
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
	char id[33];
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
		const char *msg = "{\"type\":\"error\",\"name\":\"ContextEnded\",\"value\":\"the context's runner ended\",\"traceback\":\"\"}";
		queue_line(s, msg, strlen(msg));
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
			struct pollfd pf = { .fd = abox_proc_fd(s->p), .events = (short)abox_proc_events(s->p) };
			if (poll(&pf, 1, wait > 0 ? wait : 0) == 0) {
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
	const char *code = json_object_object_get_ex(b, "code", &v) ? json_object_get_string(v) : NULL;
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
	if (lang && !strcmp(lang, "js"))
		lang = "javascript";
	if (!lang)
		lang = "python";
	if (!language_ok(lang)) {
		envd_close(&h);
		return reply_error(rq, 400, "language '%s': python, javascript or bash", lang);
	}
	struct ctx_info c;
	abox_error err = ABOX_ERROR_INIT;
	if (cid) {
		if (!find_context(&h, cid, &c)) {
			envd_close(&h);
			return reply_error(rq, 404, "context %s not found", cid);
		}
	} else {
		char def[40];
		snprintf(def, sizeof(def), "default-%s", lang);
		if (!find_context(&h, def, &c)) {
			int r = start_context(rq, &h, def, lang, NULL, &c, &err);
			if (r < 0) {
				envd_close(&h);
				return reply_error(rq, status_of_errno(-r), "%s", err.msg);
			}
		}
	}
	struct exec_stream *s = calloc(1, sizeof(*s));
	if (!s) {
		envd_close(&h);
		return MHD_NO;
	}
	random_hex(s->id, 16);
	s->h = h;
	s->pid = c.pid;
	s->last_ms = clock_mono_ms();
	int r = abox_proc_attach(h.sb, c.pid, NULL, &s->p, &err);
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
		if (!strcmp(lang, "js"))
			lang = "javascript";
		char id[33];
		random_hex(id, 16);
		struct ctx_info c;
		int r;
		if (!language_ok(lang))
			q = reply_error(rq, 400, "language '%s': python, javascript or bash", lang);
		else if (cwd && (strlen(cwd) > 90 || strchr(cwd, '\n')))
			q = reply_error(rq, 400, "cwd is too long");
		else if ((r = start_context(rq, &h, id, lang, cwd, &c, &err)) < 0)
			q = reply_error(rq, status_of_errno(-r), "%s", err.msg);
		else
			q = reply_json(rq, 201, ctx_json(&c));
	} else if (!strcmp(u, "/contexts") && !strcmp(m, "GET")) {
		struct ctx_info *v;
		size_t n = contexts(&h, &v);
		json_object *a = json_object_new_array();
		for (size_t i = 0; i < n; i++)
			json_object_array_add(a, ctx_json(&v[i]));
		free(v);
		q = reply_json(rq, 200, a);
	} else if (!strncmp(u, "/contexts/", 10)) {
		char id[40];
		snprintf(id, sizeof(id), "%.*s", (int)strcspn(u + 10, "/"), u + 10);
		const char *rest = u + 10 + strlen(id);
		struct ctx_info c;
		if (!find_context(&h, id, &c)) {
			q = reply_error(rq, 404, "context %s not found", id);
		} else {
			abox_proc *p;
			int r = abox_proc_attach(h.sb, c.pid, NULL, &p, &err);
			if (r >= 0) {
				r = abox_proc_signal(p, SIGKILL, &err);
				for (int i = 0; r >= 0 && i < 100; i++) { /* gone before it is started again */
					struct pollfd pf = { .fd = abox_proc_fd(p), .events = (short)abox_proc_events(p) };
					(void)poll(&pf, 1, 20);
					if (abox_proc_dispatch(p, NULL, NULL, NULL) != 0)
						break;
				}
				abox_proc_free(p);
			}
			if (r >= 0 && !strcmp(rest, "/restart") && !strcmp(m, "POST"))
				r = start_context(rq, &h, c.id, c.language, c.cwd, &c, &err);
			q = r < 0 ? reply_error(rq, status_of_errno(-r), "%s", err.msg) : reply_empty(rq, 204);
		}
	} else {
		q = reply_error(rq, 404, "no route %s %s", m, u);
	}
	envd_close(&h);
	json_object_put(b);
	return q;
}
