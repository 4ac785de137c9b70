/* lib_pause — pause and resume latency of a long-lived sandbox through
 * the library: idle, then busy (a shell loop spinning on the CPU).
 * Prints "idle|busy pause_median pause_p90 resume_median resume_p90" in
 * milliseconds. */
#include <abox/abox.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int measure(abox_sandbox *sb, int n, const char *label)
{
	abox_error err = ABOX_ERROR_INIT;
	double *p = calloc((size_t)n, sizeof(double)), *r = calloc((size_t)n, sizeof(double));
	for (int i = 0; i < n; i++) {
		double a = now_ms();
		if (abox_sandbox_pause(sb, &err) < 0)
			goto fail;
		double b = now_ms();
		if (abox_sandbox_resume(sb, &err) < 0)
			goto fail;
		double c = now_ms();
		p[i] = b - a;
		r[i] = c - b;
	}
	qsort(p, (size_t)n, sizeof(double), cmp);
	qsort(r, (size_t)n, sizeof(double), cmp);
	printf("%s %.3f %.3f %.3f %.3f\n", label, p[n / 2], p[(n * 9) / 10], r[n / 2], r[(n * 9) / 10]);
	free(p);
	free(r);
	return 0;
fail:
	fprintf(stderr, "lib_pause: %s\n", err.msg);
	free(p);
	free(r);
	return -1;
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
		fprintf(stderr, "lib_pause: %s\n", err.msg);
		return 1;
	}
	int rc = measure(sb, n, "idle") < 0;
	if (!rc) {
		const char *spin[] = { "/bin/sh", "-c", "while :; do :; done", NULL };
		abox_proc_opts po = ABOX_PROC_OPTS_INIT;
		po.argv = spin;
		abox_proc *sp;
		if (abox_proc_start(sb, &po, &sp, &err) < 0) {
			fprintf(stderr, "lib_pause: %s\n", err.msg);
			rc = 1;
		} else {
			/* let it run a while, then leave it running in the background */
			(void)abox_proc_wait(sp, 200, NULL, NULL, NULL);
			abox_proc_free(sp);
			rc = measure(sb, n, "busy") < 0;
		}
	}
	(void)abox_sandbox_kill(sb, NULL);
	abox_sandbox_free(sb);
	abox_ctx_free(ctx);
	return rc;
}
