/* lib_remote — libabox's remote backend against an aboxd (ABOX_REMOTE,
 * ABOX_API_KEY): the round trip of `true` in a running sandbox, create to
 * first command finished, and FLEET sandboxes each streaming a command at
 * once (one thread and context each). Prints medians and p90 in ms.
 *   usage: lib_remote [RUNS] [FLEET] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib_bench.h"

static void count(const abox_event *ev, void *ud)
{
	if (ev->type == ABOX_EVENT_STDOUT)
		*(uint64_t *)ud += ev->len;
}

/* bench_exec, the bytes of stdout counted into *bytes (unless NULL) */
static int run(abox_sandbox *sb, const char *const *argv, uint64_t *bytes, abox_error *err)
{
	uint64_t n = 0;
	int r = bench_exec(sb, argv, count, &n, err);
	if (bytes)
		*bytes = n;
	return r;
}

static void report(const char *what, double *t, int n)
{
	bench_sort(t, n);
	printf("%-38s median %8.3f ms   p90 %8.3f ms   (%d runs)\n", what, t[n / 2], t[(n * 9) / 10], n);
}

struct member {
	double ms;
	int failed;
	char why[ABOX_ERROR_MSG_MAX];
};

static void *fleet_member(void *arg)
{
	struct member *m = arg;
	abox_error err = ABOX_ERROR_INIT;
	abox_ctx *ctx = NULL;
	abox_sandbox *sb = NULL;
	double a = bench_now_ms();
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	so.timeout_ms = 300000;
	const char *argv[] = { "sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do echo line $i; sleep 0.05; done", NULL };
	uint64_t bytes = 0;
	if (abox_ctx_new(NULL, &ctx, &err) < 0 || abox_sandbox_create(ctx, &so, &sb, &err) < 0 ||
	    run(sb, argv, &bytes, &err) < 0 || bytes == 0) {
		m->failed = 1;
		snprintf(m->why, sizeof(m->why), "%s", err.msg[0] ? err.msg : "no output");
	}
	m->ms = bench_now_ms() - a;
	if (sb) {
		(void)abox_sandbox_kill(sb, NULL);
		abox_sandbox_free(sb);
	}
	abox_ctx_free(ctx);
	return NULL;
}

/* A step that failed: said, and the exit status to leave with. */
static int step_failed(const abox_error *err)
{
	fprintf(stderr, "lib_remote: %s\n", err->msg);
	return 1;
}

int main(int argc, char **argv)
{
	int fleet = argc > 2 ? atoi(argv[2]) : 100;
	if (fleet < 1)
		fleet = 100;
	if (!getenv("ABOX_REMOTE")) {
		fprintf(stderr, "lib_remote: set ABOX_REMOTE (and ABOX_API_KEY)\n");
		return 2;
	}
	abox_error err = ABOX_ERROR_INIT;
	struct bench b;
	if (bench_begin(argc, argv, "lib_remote", 200, 600000, &b) < 0)
		return 1;
	int n = b.n;
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	double *t = calloc((size_t)(n > fleet ? n : fleet), sizeof(double));
	const char *argv_true[] = { "true", NULL };
	for (int i = 0; i < n; i++) {
		double a = bench_now_ms();
		if (run(b.sb, argv_true, NULL, &err) < 0)
			return step_failed(&err);
		t[i] = bench_now_ms() - a;
	}
	(void)abox_sandbox_kill(b.sb, NULL);
	abox_sandbox_free(b.sb);
	b.sb = NULL;
	report("exec `true` round trip", t, n);

	int m = n / 4 > 10 ? n / 4 : 10;
	for (int i = 0; i < m; i++) {
		double a = bench_now_ms();
		so.timeout_ms = 60000;
		abox_sandbox *sb;
		if (abox_sandbox_create(b.ctx, &so, &sb, &err) < 0 || run(sb, argv_true, NULL, &err) < 0)
			return step_failed(&err);
		t[i] = bench_now_ms() - a;
		(void)abox_sandbox_kill(sb, NULL);
		abox_sandbox_free(sb);
	}
	report("create -> first command finished", t, m);
	bench_end(&b);

	struct member *ms = calloc((size_t)fleet, sizeof(*ms));
	pthread_t *th = calloc((size_t)fleet, sizeof(*th));
	double a = bench_now_ms();
	for (int i = 0; i < fleet; i++)
		pthread_create(&th[i], NULL, fleet_member, &ms[i]);
	int failed = 0;
	for (int i = 0; i < fleet; i++) {
		pthread_join(th[i], NULL);
		if (ms[i].failed && failed++ == 0)
			fprintf(stderr, "lib_remote: fleet: %s\n", ms[i].why);
		t[i] = ms[i].ms;
	}
	double wall = bench_now_ms() - a;
	char what[64];
	snprintf(what, sizeof(what), "fleet of %d streaming at once", fleet);
	report(what, t, fleet);
	printf("%-38s %d failed, all done in %.0f ms\n", "", failed, wall);
	free(ms);
	free(th);
	free(t);
	return failed ? 1 : 0;
}
