/* lib_exec — exec of `true` in a running sandbox through the library:
 * start, wait for its end; repeated N times in one long-lived sandbox.
 * Prints the median and p90 in milliseconds. */
#include <abox/abox.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	if (n < 1)
		n = 100;
	abox_error err = ABOX_ERROR_INIT;
	abox_ctx *ctx;
	abox_sandbox *sb;
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	so.timeout_ms = 600000;
	if (abox_ctx_new(NULL, &ctx, &err) < 0 || abox_sandbox_create(ctx, &so, &sb, &err) < 0) {
		fprintf(stderr, "lib_exec: %s\n", err.msg);
		return 1;
	}
	double *t = calloc((size_t)n, sizeof(double));
	const char *argv_true[] = { "/bin/true", NULL };
	for (int i = 0; i < n; i++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		abox_proc_opts po = ABOX_PROC_OPTS_INIT;
		po.argv = argv_true;
		abox_proc *p;
		if (abox_proc_start(sb, &po, &p, &err) < 0 || abox_proc_wait(p, -1, NULL, NULL, &err) < 0) {
			fprintf(stderr, "lib_exec: %s\n", err.msg);
			return 1;
		}
		abox_proc_free(p);
		clock_gettime(CLOCK_MONOTONIC, &b);
		t[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	}
	(void)abox_sandbox_kill(sb, NULL);
	abox_sandbox_free(sb);
	abox_ctx_free(ctx);
	qsort(t, (size_t)n, sizeof(double), cmp);
	printf("%.3f %.3f\n", t[n / 2], t[(n * 9) / 10]);
	return 0;
}
