/* src/cli/util.c — what the CLI verbs share around the library: messages,
 * the context and sandbox a verb opens and closes, and how times and JSON
 * are printed. */
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

const char *cli_prog = "abox";

void cli_err(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_fail(const abox_error *err)
{
	cli_err("%s", err->msg[0] ? err->msg : "unknown error");
	return EXIT_ABOX;
}

/* Warnings and errors always (a sandbox made with less than asked for
 * says so); everything, timed, with ABOX_DEBUG set. */
void cli_log_stderr(abox_log_level level, const char *msg, void *userdata)
{
	static int debug = -1;
	if (debug < 0) {
		const char *d = getenv("ABOX_DEBUG");
		debug = d && *d;
	}
	if (!debug) {
		if (level <= ABOX_LOG_WARNING)
			fprintf(stderr, "%s: %s: %s\n", cli_prog,
				level == ABOX_LOG_ERROR ? "error" : "warning", msg);
		return;
	}
	static struct timespec t0;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	if (!t0.tv_sec)
		t0 = t;
	double us = (double)(t.tv_sec - t0.tv_sec) * 1e6 + (double)(t.tv_nsec - t0.tv_nsec) / 1e3;
	fprintf(stderr, "%s: [%9.1f us] %s\n", cli_prog, us, msg);
}

int cli_ctx(abox_ctx **ctx)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_ctx_opts co = ABOX_CTX_OPTS_INIT;
	co.log = cli_log_stderr;
	const char *dbg = getenv("ABOX_DEBUG");
	co.log_max = dbg && *dbg ? (abox_log_level)0 : ABOX_LOG_WARNING;
	if (abox_ctx_new(&co, ctx, &err) < 0)
		return cli_fail(&err);
	return 0;
}

/* A context, then sandbox id connected to or, without id, a new one made
 * from so. */
static int open_sandbox(const char *id, const abox_sandbox_opts *so, struct cli_sandbox *s)
{
	*s = (struct cli_sandbox){ 0 };
	if (cli_ctx(&s->ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	int r = id ? abox_sandbox_connect(s->ctx, id, &s->sb, &err)
		   : abox_sandbox_create(s->ctx, so, &s->sb, &err);
	if (r < 0) {
		cli_close(s);
		return cli_fail(&err);
	}
	return 0;
}

int cli_open(const char *id, struct cli_sandbox *s)
{
	return open_sandbox(id, NULL, s);
}

int cli_create(const char *verb, struct cli_new_sandbox *ns, struct cli_sandbox *s)
{
	*s = (struct cli_sandbox){ 0 };
	if (cli_new_finish(verb, ns) < 0)
		return EXIT_ABOX;
	return open_sandbox(NULL, &ns->so, s);
}

int cli_command(const char *verb, const char *usage, int argc, char **argv, int i, abox_proc_opts *po)
{
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc) {
		cli_err("%s: missing command (usage: %s)", verb, usage);
		return -1;
	}
	po->argv = (const char *const *)argv + i;
	return 0;
}

int cli_remove_each(abox_ctx *ctx, char **names, int n,
		    int (*rm)(abox_ctx *ctx, const char *name, abox_error *err))
{
	int rc = 0;
	for (int i = 0; i < n; i++) {
		abox_error err = ABOX_ERROR_INIT;
		if (rm(ctx, names[i], &err) < 0)
			rc = cli_fail(&err);
	}
	return rc;
}

void cli_close(struct cli_sandbox *s)
{
	abox_sandbox_free(s->sb);
	s->sb = NULL;
	abox_ctx_free(s->ctx);
	s->ctx = NULL;
}

void cli_close_gc(struct cli_sandbox *s)
{
	abox_sandbox_free(s->sb);
	s->sb = NULL;
	if (s->ctx)
		(void)abox_gc_maybe(s->ctx, NULL, NULL);
	cli_close(s);
}

void cli_target(const char *arg, int *pid, const char **tag)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (*arg && !*end && v > 0 && v < INT32_MAX) {
		*pid = (int)v;
		*tag = NULL;
	} else {
		*pid = 0;
		*tag = arg;
	}
}

void cli_utc(int64_t ms, char *buf, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void cli_print_json(struct json_object *o, int flags)
{
	printf("%s\n", json_object_to_json_string_ext(o, flags));
	json_object_put(o);
}
