/* code_ctx.c — the code plane's contexts: starting a runner
 * (runners/python_runner.py for python and bash, runners/node_runner.js
 * for javascript and typescript) inside the sandbox, finding the running
 * ones again by their tag "abox-ctx:<id>:<language>:<cwd>", and the
 * default python and javascript contexts every sandbox lists (started on
 * their first cell). Cells and their streams are code.c's.
 *
 * Runners run as the sandbox's root, as E2B's Jupyter kernels do (so a
 * context may start in any folder, /root included); root here is the
 * sandbox's root, held in its own user namespace. Runs in aboxd. */
#include <ctype.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "code_ctx.h"
#include "config.h"
#include "daemon.h"

#define CTX_TAG "abox-ctx:"
#define DEFAULT_CWD "/home/user"
#define START_MS 60000

const char *code_language(const char *name)
{
	static const char *const known[] = { "python", "javascript", "typescript", "bash", "r", "java" };
	char l[16];
	size_t n = 0;
	while (*name == ' ' || *name == '\t')
		name++;
	for (; name[n] && n < sizeof(l) - 1; n++)
		l[n] = (char)tolower((unsigned char)name[n]);
	while (n && (l[n - 1] == ' ' || l[n - 1] == '\t'))
		n--;
	l[n] = '\0';
	if (!strcmp(l, "js"))
		return "javascript";
	if (!strcmp(l, "ts"))
		return "typescript";
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(l, known[i]))
			return known[i];
	return NULL;
}

void code_default_id(const char *language, char *out, size_t n)
{
	snprintf(out, n, "default-%s", language);
}

static bool node_based(const char *language)
{
	return !strcmp(language, "javascript") || !strcmp(language, "typescript");
}

/* One runner file's text from dir (malloc'd, NUL-terminated), or NULL. */
static char *read_runner(const char *dir, const char *file, size_t *len)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	FILE *f = fopen(p, "re");
	if (!f)
		return NULL;
	char *buf = malloc(256 << 10);
	size_t n = buf ? fread(buf, 1, (256 << 10) - 1, f) : 0;
	fclose(f);
	if (buf)
		buf[n] = '\0';
	*len = n;
	return buf;
}

/* The runner's source from $ABOX_RUNNERS, the installed copy or the source
 * tree: node_runner.js, or python_charts.py and python_runner.py as one
 * program. */
static char *runner_source(const char *language)
{
	const char *dirs[] = { getenv("ABOX_RUNNERS"), ABOX_DATADIR "/runners", ABOX_SOURCE_DIR "/runners" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		size_t n, m;
		if (!strcmp(language, "r") || !strcmp(language, "java")) {
			char *r = read_runner(dirs[i],
					      !strcmp(language, "r") ? "r_runner.R" : "JavaRunner.java", &n);
			if (r)
				return r;
			continue;
		}
		if (node_based(language)) {
			char *js = read_runner(dirs[i], "node_runner.js", &n);
			if (js)
				return js;
			continue;
		}
		char *main = read_runner(dirs[i], "python_runner.py", &n);
		if (!main)
			continue;
		char *charts = read_runner(dirs[i], "python_charts.py", &m);
		char *both = charts ? malloc(m + n + 2) : NULL;
		if (!both) { /* figures then carry no chart data */
			free(charts);
			return main;
		}
		memcpy(both, charts, m);
		both[m] = '\n';
		memcpy(both + m + 1, main, n + 1);
		free(charts);
		free(main);
		return both;
	}
	return NULL;
}

/* Parses "abox-ctx:<id>:<language>:<cwd>". */
static bool parse_tag(const char *tag, struct ctx_info *c)
{
	*c = (struct ctx_info){ 0 }; /* nothing of an entry parsed before */
	if (strncmp(tag, CTX_TAG, strlen(CTX_TAG)) != 0 ||
	    sscanf(tag + strlen(CTX_TAG), "%39[^:]:%15[^:]:%95[^\n]", c->id, c->language, c->cwd) < 2)
		return false;
	if (!c->cwd[0])
		snprintf(c->cwd, sizeof(c->cwd), "%s", DEFAULT_CWD);
	return true;
}

/* Whether c's id is among the first n of v. */
static bool have_id(const struct ctx_info *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].id, id))
			return true;
	return false;
}

/* The running contexts, then (ended) those whose runner died — a removal
 * ends a runner with SIGTERM, which is no death — then the defaults not
 * started yet. */
static int contexts_of(sandbox_handle_t *h, bool with_ended, struct ctx_info **out, size_t *count)
{
	abox_proc_info *v = NULL;
	size_t n = 0, k = 0;
	*out = NULL;
	*count = 0;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_proc_list(h->sb, &v, &n, &err);
	if (r < 0)
		return r;
	struct ctx_info *c = calloc(2 * n + 2, sizeof(*c));
	if (!c) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (v[i].running && parse_tag(v[i].tag, &c[k])) {
			c[k].pid = v[i].pid;
			c[k].running = true;
			k++;
		}
	for (size_t i = n; with_ended && i-- > 0;) /* the newest end first */
		if (!v[i].running && v[i].signal != SIGTERM && parse_tag(v[i].tag, &c[k]) &&
		    !have_id(c, k, c[k].id)) {
			c[k].pid = v[i].pid;
			c[k].ended = true;
			c[k].exit_code = v[i].exit_code;
			c[k].end_signal = v[i].signal;
			k++;
		}
	free(v);
	/* every sandbox lists a python and a javascript context, as E2B's
	 * server starts them at boot; here they start on their first cell */
	const char *defaults[] = { "python", "javascript" };
	for (size_t d = 0; d < 2; d++) {
		char id[40];
		code_default_id(defaults[d], id, sizeof(id));
		if (!have_id(c, k, id)) {
			c[k] = (struct ctx_info){ .running = false };
			snprintf(c[k].id, sizeof(c[k].id), "%s", id);
			snprintf(c[k].language, sizeof(c[k].language), "%s", defaults[d]);
			snprintf(c[k].cwd, sizeof(c[k].cwd), "%s", DEFAULT_CWD);
			k++;
		}
	}
	*out = c;
	*count = k;
	return 0;
}

int code_contexts(sandbox_handle_t *h, struct ctx_info **out, size_t *count)
{
	return contexts_of(h, false, out, count);
}

bool code_find_context(sandbox_handle_t *h, const char *id, struct ctx_info *out)
{
	struct ctx_info *v;
	size_t n;
	bool found = false;
	if (contexts_of(h, true, &v, &n) < 0)
		return false;
	for (size_t i = 0; i < n && !found; i++)
		if (!strcmp(v[i].id, id)) {
			*out = v[i];
			found = true;
		}
	free(v);
	return found;
}

/* What a starting runner said: its first message line, its stderr (the
 * first KiB) and how it ended, if it did. */
struct start_watch {
	char line[1024], err[1024];
	size_t line_len, err_len;
	bool have_line, ended;
	int exit_code;
	char why[256];
};

static void on_start(const abox_event *ev, void *ud)
{
	struct start_watch *w = ud;
	if (ev->type == ABOX_EVENT_STDOUT && !w->have_line) {
		const char *d = ev->data;
		for (size_t i = 0; i < ev->len && !w->have_line; i++) {
			if (d[i] == '\n')
				w->have_line = true;
			else if (w->line_len < sizeof(w->line) - 1)
				w->line[w->line_len++] = d[i];
		}
	} else if (ev->type == ABOX_EVENT_STDERR) {
		size_t room = sizeof(w->err) - 1 - w->err_len;
		size_t n = ev->len < room ? ev->len : room;
		memcpy(w->err + w->err_len, ev->data, n);
		w->err_len += n;
	} else if (ev->type == ABOX_EVENT_END) {
		w->ended = true;
		w->exit_code = ev->exit_code;
		snprintf(w->why, sizeof(w->why), "%s", ev->error ? ev->error : "");
	}
}

static int start_in(sandbox_handle_t *h, const char *id, const char *language, const char *cwd,
		    const char *src, struct ctx_info *out, abox_error *err)
{
	char tag[160];
	snprintf(tag, sizeof(tag), "%s%s:%s:%s", CTX_TAG, id, language, cwd ? cwd : "");
	bool node = node_based(language), r_lang = !strcmp(language, "r"), java = !strcmp(language, "java");
	/* python3 -u -c SRC LANGUAGE / node -e SRC LANGUAGE / R through a
	 * shell that gives it its message channel on fd 3 (r_runner.R) */
	const char *argv[] = { node ? "node" : "python3", node ? "-e" : "-u",     node ? src : "-c",
			       node ? language : src,     node ? NULL : language, NULL };
	const char *r_argv[] = { "sh", "-c", "exec 3>&1 1>&2 && exec Rscript --vanilla -e \"$1\"",
				 "sh", src,  NULL };
	/* Java through its source launcher, from a file in a folder of its own */
	const char *java_argv[] = {
		"sh",
		"-c",
		"command -v java >/dev/null || exit 127; d=$(mktemp -d) && "
		"printf '%s' \"$1\" > \"$d/JavaRunner.java\" && exec 3>&1 1>&2 && "
		"exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \"$d/JavaRunner.java\"",
		"sh",
		src,
		NULL
	};
	const char *env[] = { "PYTHONUNBUFFERED=1", "MPLBACKEND=Agg", NULL };
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	po.argv = r_lang ? r_argv : java ? java_argv : argv;
	po.env = env;
	po.cwd = cwd;
	po.user = "root";
	po.tag = tag;
	po.flags = ABOX_PROC_STDIN;
	abox_proc *p;
	int r = abox_proc_start(h->sb, &po, &p, err);
	if (r < 0)
		return r;
	struct start_watch w = { .exit_code = -1 };
	int64_t until = clock_mono_ms() + START_MS;
	while (!w.have_line && !w.ended && clock_mono_ms() < until) {
		if (!abox_proc_buffered(p)) {
			struct pollfd pf = { .fd = abox_proc_fd(p), .events = (short)abox_proc_events(p) };
			(void)poll(&pf, 1, 100);
		}
		if (abox_proc_dispatch(p, on_start, &w, err) < 0)
			break;
	}
	int pid = abox_proc_pid(p);
	w.err[w.err_len] = '\0';
	w.line[w.line_len] = '\0';
	const char *runtime = node                        ? "node"
			      : r_lang                    ? "R (Rscript; Debian's r-base-core)"
			      : java                      ? "Java (a JDK with jshell)"
			      : !strcmp(language, "bash") ? "python3 (and bash)"
							  : "python3";
	if (w.have_line && strstr(w.line, "\"ready\"")) {
		abox_proc_free(p);
		*out = (struct ctx_info){ .pid = pid, .running = true };
		snprintf(out->id, sizeof(out->id), "%s", id);
		snprintf(out->language, sizeof(out->language), "%s", language);
		snprintf(out->cwd, sizeof(out->cwd), "%s", cwd ? cwd : DEFAULT_CWD);
		return 0;
	}
	if (!w.ended)
		(void)abox_proc_signal(p, SIGKILL, NULL);
	abox_proc_free(p);
	if (w.have_line && strstr(w.line, "\"missing\"")) {
		json_object *o = json_tokener_parse(w.line), *v;
		r = abox_error_setx(err, ENOTSUP, "language '%s': %s", language,
				    o && json_object_object_get_ex(o, "value", &v)
					    ? json_object_get_string(v)
					    : "the template lacks its runtime");
		json_object_put(o);
		return r;
	}
	if (w.ended && (strstr(w.why, "chdir") || strstr(w.why, "cwd")))
		return abox_error_setx(err, ENOENT, "cwd '%s': %s", cwd ? cwd : "", w.why);
	if (w.ended && (w.exit_code == 127 || strstr(w.why, "exec")))
		return abox_error_setx(err, ENOTSUP, "language '%s': the template has no %s (%s)", language,
				       runtime, w.why[0] ? w.why : "not found");
	if (w.ended) {
		w.err[400] = '\0';
		return abox_error_setx(err, EIO, "the %s context's runner ended at its start (exit %d)%s%s",
				       language, w.exit_code, w.err[0] ? ": " : "", w.err);
	}
	return abox_error_setx(err, ETIMEDOUT, "the %s context's runner did not become ready in %d s",
			       language, START_MS / 1000);
}

int code_context_start(sandbox_handle_t *h, const char *id, const char *language, const char *cwd,
		       struct ctx_info *out, abox_error *err)
{
	char *src = runner_source(language);
	if (!src)
		return abox_error_setx(err, ENOENT, "the code runner is not installed (runners/)");
	int r = start_in(h, id, language, cwd ? cwd : DEFAULT_CWD, src, out, err);
	if (r == -ENOENT && !cwd) /* a template without /home/user: root's home */
		r = start_in(h, id, language, NULL, src, out, err);
	free(src);
	return r;
}

int code_context_stop(sandbox_handle_t *h, const struct ctx_info *c, abox_error *err)
{
	if (!c->running)
		return 0;
	abox_proc *p;
	int r = abox_proc_attach(h->sb, c->pid, NULL, &p, err);
	if (r < 0)
		return r;
	/* SIGTERM marks a removal (contexts_of tells it from a death); a
	 * runner that does not end of it within a second is killed */
	r = abox_proc_signal(p, SIGTERM, err);
	bool gone = false;
	for (int i = 0; r >= 0 && i < 150 && !gone; i++) { /* gone before it is started again */
		if (i == 50)
			(void)abox_proc_signal(p, SIGKILL, NULL);
		struct pollfd pf = { .fd = abox_proc_fd(p), .events = (short)abox_proc_events(p) };
		(void)poll(&pf, 1, 20);
		gone = abox_proc_dispatch(p, NULL, NULL, NULL) != 0;
	}
	abox_proc_free(p);
	return r < 0 ? r : 0;
}

/* A default context is started by whoever first needs it — a cell, or the
 * head start below — never twice: the look and the start happen under a
 * lock of the sandbox's (one of a few, by a hash of its id). */
static pthread_mutex_t start_locks[32] = { [0 ... 31] = PTHREAD_MUTEX_INITIALIZER };

static pthread_mutex_t *start_lock(sandbox_handle_t *h)
{
	unsigned x = 2166136261u;
	for (const char *p = abox_sandbox_id(h->sb); *p; p++)
		x = (x ^ (unsigned char)*p) * 16777619u;
	return &start_locks[x % 32];
}

int code_default_context(sandbox_handle_t *h, const char *language, struct ctx_info *out, abox_error *err)
{
	char id[40];
	code_default_id(language, id, sizeof(id));
	pthread_mutex_t *m = start_lock(h);
	pthread_mutex_lock(m);
	int r = 0;
	if (!code_find_context(h, id, out) || !out->running)
		r = code_context_start(h, id, language, NULL, out, err);
	pthread_mutex_unlock(m);
	return r;
}

static void *head_start(void *arg)
{
	char *id = arg;
	sandbox_handle_t h = { .ctx = request_ctx() };
	abox_error err = ABOX_ERROR_INIT;
	struct ctx_info c;
	if (h.ctx && abox_sandbox_connect(h.ctx, id, &h.sb, &err) >= 0)
		(void)code_default_context(&h, "python", &c, &err);
	envd_close(&h);
	free(id);
	return NULL;
}

void code_head_start(const char *sandbox_id)
{
	pthread_t t;
	pthread_attr_t a;
	char *id = strdup(sandbox_id);
	if (!id || pthread_attr_init(&a) != 0) {
		free(id);
		return;
	}
	(void)pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, head_start, id) != 0)
		free(id);
	pthread_attr_destroy(&a);
}
