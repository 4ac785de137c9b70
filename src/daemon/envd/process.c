/* process.c — process.Process over Connect: Start and Connect stream a
 * process's events (start, output, end; keepalives at the interval the
 * client asks for); List, SendInput, CloseStdin, SendSignal and Update are
 * unary. A client that goes away leaves the process running (it can be
 * connected to again by pid or tag), as in E2B. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/base64.h"
#include "envd.h"
#include "lifecycle.h"
#include "proctab.h"
#include "e2b/e2b.h" /* END_TIMEOUT_ERROR, E2B_DEADLINE_EXCEEDED */
#include "stream.h"

struct pstream {
	sandbox_handle_t h;
	abox_proc *p;
	struct ebuf out;
	int keepalive_ms;
	int64_t deadline_ms;  /* a Connect's own Connect-Timeout-Ms; 0: none */
	char sid[ABOX_ID_LEN + 1];
	json_object *config;  /* a Start's ProcessConfig, for proctab at its start event */
};

static void put_event(struct pstream *s, const char *kind, json_object *body)
{
	ebuf_event(&s->out, kind, body);
}

static void on_event(const abox_event *ev, void *ud)
{
	struct pstream *s = ud;
	json_object *b = json_object_new_object();
	switch (ev->type) {
	case ABOX_EVENT_START:
		json_object_object_add(b, "pid", json_object_new_int(ev->pid));
		if (s->config)
			proctab_put(s->sid, ev->pid, s->config);
		put_event(s, "start", b);
		break;
	case ABOX_EVENT_STDOUT:
	case ABOX_EVENT_STDERR:
	case ABOX_EVENT_PTY: {
		char *enc = base64_encode(ev->data, ev->len);
		json_object_object_add(b, ev->type == ABOX_EVENT_STDOUT ? "stdout" : ev->type == ABOX_EVENT_STDERR ? "stderr" : "pty",
				       json_object_new_string(enc ? enc : ""));
		free(enc);
		put_event(s, "data", b);
		break;
	}
	case ABOX_EVENT_END: {
		char status[96];
		if (ev->end_flags & ABOX_END_CMD_TIMEOUT) {
			/* as envd: the stream ends with deadline_exceeded, which the
			 * SDKs raise as their timeout error; no end event (an exit
			 * -1 would read as the command's own failure) */
			json_object_put(b);
			ebuf_end(&s->out, E2B_DEADLINE_EXCEEDED, "the command's timeout passed: it was killed");
			break;
		}
		if (ev->signal)
			snprintf(status, sizeof(status), "signal: %s", ev->signal == SIGKILL ? "killed" : strsignal(ev->signal));
		else
			snprintf(status, sizeof(status), "exit status %d", ev->exit_code);
		json_object_object_add(b, "exitCode", json_object_new_int(ev->signal ? -1 : ev->exit_code));
		json_object_object_add(b, "exited", json_object_new_boolean(!ev->signal));
		json_object_object_add(b, "status", json_object_new_string(status));
		if (ev->signal == SIGKILL && lifecycle_sandbox_gone(s->h.ctx, s->sid)) {
			/* the sandbox's kill, not the command's: the SDKs raise
			 * their error for a sandbox gone, not an exit -1 */
			json_object_put(b);
			ebuf_end(&s->out, "unavailable", "the sandbox was killed");
			break;
		}
		/* envd's error is Go's wait error: "signal: killed" for a kill */
		if (ev->error || ev->signal)
			json_object_object_add(b, "error", json_object_new_string(ev->error ? ev->error : status));
		put_event(s, "end", b);
		break;
	}
	default:
		json_object_put(b);
	}
}

/* More of the stream: the process's events, a keepalive when it has
 * been quiet, or the end (its own, or the connection's timeout). */
static void fill(void *cls)
{
	struct pstream *s = cls;
	if (s->deadline_ms && clock_mono_ms() >= s->deadline_ms) {
		/* a Connect's own timeout: it ends, the command runs on */
		ebuf_end(&s->out, E2B_DEADLINE_EXCEEDED,
			 "the connection's timeout passed (the command goes on)");
		return;
	}
	if (!abox_proc_buffered(s->p)) {
		int64_t until = s->out.last_ms + s->keepalive_ms;
		if (s->deadline_ms && s->deadline_ms < until)
			until = s->deadline_ms;
		int wait = (int)(until - clock_mono_ms());
		if (wait < 0)
			wait = 0;
		struct pollfd p = { .fd = abox_proc_fd(s->p), .events = (short)abox_proc_events(s->p) };
		int pr = poll(&p, 1, wait);
		if (pr == 0) {
			if (clock_mono_ms() >= s->out.last_ms + s->keepalive_ms)
				put_event(s, "keepalive", json_object_new_object());
			return;
		}
	}
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_proc_dispatch(s->p, on_event, s, &err);
	if (s->out.finished)
		return; /* on_event ended it (a timeout) */
	if (r == 1)
		ebuf_end(&s->out, NULL, NULL);
	else if (r < 0) /* an attach to a process that is not there, or the sandbox went away */
		ebuf_end(&s->out, r == -ESRCH || r == -ENOENT ? "not_found" : "unavailable",
			 err.msg[0] ? err.msg : "the sandbox went away");
}

static ssize_t reader(void *cls, uint64_t pos, char *out, size_t max)
{
	struct pstream *s = cls;
	return ebuf_read(&s->out, out, max, fill, s);
}

static void stream_free(void *cls)
{
	struct pstream *s = cls;
	abox_proc_free(s->p);
	envd_close(&s->h);
	ebuf_free(&s->out);
	if (s->config)
		json_object_put(s->config);
	free(s);
}

/* The reply that streams s's events; s takes h over. */
static enum MHD_Result stream_reply(struct request *rq, struct pstream *s, sandbox_handle_t h)
{
	s->h = h;
	snprintf(s->sid, sizeof(s->sid), "%s", rq->sandbox);
	const char *ka = header(rq, "Keepalive-Ping-Interval");
	/* keepalives also when none was asked for: a silent command must not
	 * look like an idle connection (the idle timeout would cut it) */
	s->keepalive_ms = ka && atoi(ka) > 0 ? atoi(ka) * 1000 : 30000;
	s->out.last_ms = clock_mono_ms();
	return reply_stream(rq, "application/connect+json", reader, s, stream_free);
}

static bool selector(json_object *b, int *pid, const char **tag)
{
	json_object *p, *v;
	*pid = 0;
	*tag = NULL;
	if (!json_object_object_get_ex(b, "process", &p) || !json_object_is_type(p, json_type_object))
		return false;
	if (json_object_object_get_ex(p, "pid", &v))
		*pid = json_object_get_int(v); /* a number, or a string for int64 */
	if (json_object_object_get_ex(p, "tag", &v) && json_object_is_type(v, json_type_string))
		*tag = json_object_get_string(v);
	return *pid > 0 || *tag;
}

/* Connect-Timeout-Ms, in ms (0: none); false when it is not a number */
static bool connect_timeout(struct request *rq, uint32_t *ms)
{
	const char *ct = header(rq, "Connect-Timeout-Ms");
	*ms = 0;
	if (!ct || !*ct)
		return true;
	char *end;
	errno = 0;
	long long t = strtoll(ct, &end, 10);
	if (*end || errno)
		return false;
	*ms = t <= 0 ? 0 : t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
	return true;
}

/* The ProcessConfig List answers for a command started with pc. */
static json_object *config_of(json_object *pc)
{
	json_object *c = json_object_new_object(), *v;
	json_object_object_add(c, "cmd", json_object_object_get_ex(pc, "cmd", &v) ? json_object_get(v) : json_object_new_string(""));
	json_object_object_add(c, "args", json_object_object_get_ex(pc, "args", &v) && json_object_is_type(v, json_type_array)
						  ? json_object_get(v) : json_object_new_array());
	json_object_object_add(c, "envs", json_object_object_get_ex(pc, "envs", &v) && json_object_is_type(v, json_type_object)
						  ? json_object_get(v) : json_object_new_object());
	if (json_object_object_get_ex(pc, "cwd", &v) && json_object_is_type(v, json_type_string) && *json_object_get_string(v))
		json_object_object_add(c, "cwd", json_object_get(v));
	return c;
}

static enum MHD_Result start(struct request *rq, json_object *b, sandbox_handle_t h)
{
	json_object *pc, *v;
	if (!json_object_object_get_ex(b, "process", &pc) || !json_object_object_get_ex(pc, "cmd", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		envd_close(&h);
		return envd_error(rq, EINVAL, "process.cmd is required");
	}
	/* Connect-Timeout-Ms: envd kills the command when it passes (the SDKs
	 * send their commands' timeoutMs here, 60 s unless told). Here init
	 * kills its whole group, so it holds after the client is gone too. */
	uint32_t timeout_ms = 0;
	if (!connect_timeout(rq, &timeout_ms)) {
		envd_close(&h);
		return envd_error(rq, EINVAL, "Connect-Timeout-Ms '%.32s' is not a number of milliseconds",
				  header(rq, "Connect-Timeout-Ms"));
	}
	json_object *args = NULL, *envs = NULL, *pty = NULL, *size = NULL;
	json_object_object_get_ex(pc, "args", &args);
	json_object_object_get_ex(pc, "envs", &envs);
	size_t na = args && json_object_is_type(args, json_type_array) ? json_object_array_length(args) : 0;
	size_t ne = envs && json_object_is_type(envs, json_type_object) ? (size_t)json_object_object_length(envs) : 0;
	const char **argv = calloc(na + 2, sizeof(char *));
	char **env = calloc(ne + 1, sizeof(char *));
	if (!argv || !env) {
		free(argv);
		free(env);
		envd_close(&h);
		return MHD_NO;
	}
	argv[0] = json_object_get_string(v);
	for (size_t i = 0; i < na; i++)
		argv[i + 1] = json_object_get_string(json_object_array_get_idx(args, i));
	size_t k = 0;
	if (ne) {
		json_object_object_foreach(envs, ek, ev) {
			if (asprintf(&env[k], "%s=%s", ek, json_object_get_string(ev)) >= 0)
				k++;
		}
	}
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	po.argv = argv;
	po.env = (const char *const *)env;
	po.user = rq->user;
	po.timeout_ms = timeout_ms;
	if (json_object_object_get_ex(pc, "cwd", &v) && json_object_is_type(v, json_type_string) && *json_object_get_string(v))
		po.cwd = json_object_get_string(v);
	if (json_object_object_get_ex(b, "tag", &v) && json_object_is_type(v, json_type_string))
		po.tag = json_object_get_string(v);
	if (json_object_object_get_ex(b, "stdin", &v) && json_object_get_boolean(v))
		po.flags |= ABOX_PROC_STDIN;
	if (json_object_object_get_ex(b, "pty", &pty) && json_object_object_get_ex(pty, "size", &size)) {
		json_object *c, *r2;
		if (json_object_object_get_ex(size, "cols", &c) && json_object_object_get_ex(size, "rows", &r2)) {
			po.pty_cols = (uint16_t)json_object_get_int(c);
			po.pty_rows = (uint16_t)json_object_get_int(r2);
		}
	}
	struct pstream *s = calloc(1, sizeof(*s));
	abox_error err = ABOX_ERROR_INIT;
	int r = s ? abox_proc_start(h.sb, &po, &s->p, &err) : -ENOMEM;
	free(argv);
	for (size_t i = 0; i < k; i++)
		free(env[i]);
	free(env);
	if (r < 0) {
		free(s);
		envd_close(&h);
		return envd_error(rq, -r, "%s", err.msg);
	}
	s->config = config_of(pc);
	return stream_reply(rq, s, h);
}

static enum MHD_Result connect_proc(struct request *rq, json_object *b, sandbox_handle_t h)
{
	int pid;
	const char *tag;
	if (!selector(b, &pid, &tag)) {
		envd_close(&h);
		return envd_error(rq, EINVAL, "process.pid or process.tag is required");
	}
	uint32_t timeout_ms;
	if (!connect_timeout(rq, &timeout_ms)) {
		envd_close(&h);
		return envd_error(rq, EINVAL, "Connect-Timeout-Ms '%.32s' is not a number of milliseconds",
				  header(rq, "Connect-Timeout-Ms"));
	}
	struct pstream *s = calloc(1, sizeof(*s));
	abox_error err = ABOX_ERROR_INIT;
	int r = s ? abox_proc_attach(h.sb, pid, tag, &s->p, &err) : -ENOMEM;
	if (r < 0) {
		free(s);
		envd_close(&h);
		return envd_error(rq, -r, "%s", err.msg);
	}
	if (timeout_ms)
		s->deadline_ms = clock_mono_ms() + timeout_ms;
	return stream_reply(rq, s, h);
}

/* A short-lived handle on a running process, for the unary calls. */
static int with_proc(struct request *rq, json_object *b, sandbox_handle_t *h, abox_proc **p, abox_error *err)
{
	int pid;
	const char *tag;
	if (!selector(b, &pid, &tag))
		return abox_error_setx(err, EINVAL, "process.pid or process.tag is required");
	(void)rq;
	return abox_proc_attach(h->sb, pid, tag, p, err);
}

int envd_proc_drain(abox_proc *p, abox_error *err)
{
	for (int i = 0; i < 1000 && abox_proc_stdin_pending(p); i++) {
		struct pollfd pf = { .fd = abox_proc_fd(p), .events = (short)abox_proc_events(p) };
		(void)poll(&pf, 1, 10);
		int r = abox_proc_dispatch(p, NULL, NULL, err);
		if (r < 0)
			return r;
		if (r == 1)
			return 1; /* it ended: nothing more goes in */
	}
	return 0;
}

/* 0 when the process b names runs, -ESRCH when not (as envd: a signal
 * to it is not_found, and the SDKs' kill() is false). An attach learns
 * that only from its first event, which a signal does not wait for. */
static int running(sandbox_handle_t *h, json_object *b, abox_error *err)
{
	int pid;
	const char *tag;
	if (!selector(b, &pid, &tag))
		return abox_error_setx(err, EINVAL, "process.pid or process.tag is required");
	abox_proc_info *v = NULL;
	size_t n = 0;
	int r = abox_proc_list(h->sb, &v, &n, err);
	if (r < 0)
		return r;
	bool found = false;
	for (size_t i = 0; i < n && !found; i++)
		found = v[i].running && (tag ? !strcmp(v[i].tag, tag) : v[i].pid == pid);
	free(v);
	if (found)
		return 0;
	char msg[192];
	if (tag)
		snprintf(msg, sizeof(msg), "process with tag %.128s not found", tag);
	else
		snprintf(msg, sizeof(msg), "process with pid %d not found", pid);
	return abox_error_setx(err, ESRCH, "%s", msg);
}

static enum MHD_Result unary(struct request *rq, const char *method, json_object *b, sandbox_handle_t h)
{
	abox_error err = ABOX_ERROR_INIT;
	enum MHD_Result q;
	if (!strcmp(method, "List")) {
		abox_proc_info *v = NULL;
		size_t n = 0;
		int r = abox_proc_list(h.sb, &v, &n, &err);
		if (r < 0) {
			q = envd_error(rq, -r, "%s", err.msg);
		} else {
			json_object *a = json_object_new_array();
			int *alive = calloc(n + 1, sizeof(int));
			size_t na = 0;
			for (size_t i = 0; i < n; i++) {
				if (!v[i].running)
					continue;
				if (alive)
					alive[na++] = v[i].pid;
				json_object *o = json_object_new_object(), *c = proctab_get(rq->sandbox, v[i].pid);
				if (c) {
					json_object_object_add(o, "config", c);
					json_object_object_add(o, "pid", json_object_new_int(v[i].pid));
					if (v[i].tag[0])
						json_object_object_add(o, "tag", json_object_new_string(v[i].tag));
					json_object_array_add(a, o);
					continue;
				}
				/* started before aboxd did: only init's command line is known */
				c = json_object_new_object();
				char cmd[256];
				snprintf(cmd, sizeof(cmd), "%s", v[i].cmd);
				char *sp = strchr(cmd, ' ');
				json_object *args = json_object_new_array();
				if (sp) {
					*sp = '\0';
					for (char *save = NULL, *t = strtok_r(sp + 1, " ", &save); t; t = strtok_r(NULL, " ", &save))
						json_object_array_add(args, json_object_new_string(t));
				}
				json_object_object_add(c, "cmd", json_object_new_string(cmd));
				json_object_object_add(c, "args", args);
				json_object_object_add(c, "envs", json_object_new_object());
				json_object_object_add(o, "config", c);
				json_object_object_add(o, "pid", json_object_new_int(v[i].pid));
				if (v[i].tag[0])
					json_object_object_add(o, "tag", json_object_new_string(v[i].tag));
				json_object_array_add(a, o);
			}
			free(v);
			if (alive)
				proctab_prune(rq->sandbox, alive, na);
			free(alive);
			json_object *o = json_object_new_object();
			json_object_object_add(o, "processes", a);
			q = reply_json(rq, 200, o);
		}
		envd_close(&h);
		return q;
	}
	abox_proc *p = NULL;
	int r = !strcmp(method, "SendSignal") ? running(&h, b, &err) : 0;
	if (r >= 0)
		r = with_proc(rq, b, &h, &p, &err);
	if (r >= 0) {
		json_object *in, *v;
		if (!strcmp(method, "SendInput")) {
			const char *data = NULL;
			if (json_object_object_get_ex(b, "input", &in) &&
			    (json_object_object_get_ex(in, "stdin", &v) || json_object_object_get_ex(in, "pty", &v)))
				data = json_object_get_string(v);
			unsigned char *raw = NULL;
			size_t n = 0;
			if (!data || base64_decode(data, &raw, &n) < 0)
				r = abox_error_setx(&err, EINVAL, "input.stdin (base64) is required");
			else if ((r = abox_proc_write_stdin(p, raw, n, &err)) >= 0)
				r = envd_proc_drain(p, &err);
			free(raw);
		} else if (!strcmp(method, "CloseStdin")) {
			if ((r = abox_proc_close_stdin(p, &err)) >= 0)
				r = envd_proc_drain(p, &err);
		} else if (!strcmp(method, "SendSignal")) {
			const char *sig = json_object_object_get_ex(b, "signal", &v) ? json_object_get_string(v) : "";
			int s = !strcmp(sig, "SIGNAL_SIGKILL") || !strcmp(sig, "9") ? SIGKILL
				: !strcmp(sig, "SIGNAL_SIGTERM") || !strcmp(sig, "15") ? SIGTERM
										     : 0;
			r = s ? abox_proc_signal(p, s, &err)
			      : abox_error_setx(&err, EINVAL,
						"signal must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
			if (r >= 0)
				r = envd_proc_drain(p, &err);
		} else if (!strcmp(method, "Update")) {
			json_object *pty, *size, *c, *rw;
			if (json_object_object_get_ex(b, "pty", &pty) && json_object_object_get_ex(pty, "size", &size) &&
			    json_object_object_get_ex(size, "cols", &c) && json_object_object_get_ex(size, "rows", &rw))
				r = abox_proc_resize(p, (uint16_t)json_object_get_int(rw), (uint16_t)json_object_get_int(c), &err);
			if (r >= 0)
				r = envd_proc_drain(p, &err);
		} else {
			r = abox_error_setx(&err, EOPNOTSUPP, "no such method of process.Process");
		}
	}
	abox_proc_free(p);
	envd_close(&h);
	return r < 0 ? envd_error(rq, -r, "%s", err.msg) : reply_json(rq, 200, json_object_new_object());
}

enum MHD_Result process_rpc(struct request *rq, const char *method)
{
	bool stream = !strcmp(method, "Start") || !strcmp(method, "Connect");
	enum MHD_Result sent;
	json_object *b;
	sandbox_handle_t h = envd_read_open(rq, stream, &b, &sent);
	if (!h.sb)
		return sent;
	enum MHD_Result q = !strcmp(method, "Start")	 ? start(rq, b, h)
			    : !strcmp(method, "Connect") ? connect_proc(rq, b, h)
							 : unary(rq, method, b, h);
	json_object_put(b);
	return q;
}
