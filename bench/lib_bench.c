/* What the library benches share (see lib_bench.h). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lib_bench.h"

int bench_runs(int argc, char **argv, int dflt)
{
	int n = argc > 1 ? atoi(argv[1]) : dflt;
	return n < 1 ? dflt : n;
}

double bench_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void bench_sort(double *t, int n)
{
	qsort(t, (size_t)n, sizeof(double), cmp);
}

int bench_begin(int argc, char **argv, const char *prog, int dflt, uint32_t timeout_ms, struct bench *b)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	so.timeout_ms = timeout_ms;
	*b = (struct bench){ .n = bench_runs(argc, argv, dflt) };
	if (abox_ctx_new(NULL, &b->ctx, &err) < 0 || abox_sandbox_create(b->ctx, &so, &b->sb, &err) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err.msg);
		abox_ctx_free(b->ctx);
		return -1;
	}
	return 0;
}

void bench_end(struct bench *b)
{
	if (b->sb) {
		(void)abox_sandbox_kill(b->sb, NULL);
		abox_sandbox_free(b->sb);
	}
	abox_ctx_free(b->ctx);
	*b = (struct bench){ 0 };
}

int bench_exec(abox_sandbox *sb, const char *const *argv, abox_event_fn fn, void *ud, abox_error *err)
{
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	po.argv = argv;
	abox_proc *p;
	int r = abox_proc_start(sb, &po, &p, err);
	if (r < 0)
		return r;
	r = abox_proc_wait(p, -1, fn, ud, err);
	abox_proc_free(p);
	return r < 0 ? r : 0;
}
