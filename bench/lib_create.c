/* lib_create — library-level cost of one sandbox: create, run `true`,
 * wait for its end, kill and clean up; repeated N times. Prints the median
 * and p90 in milliseconds, and the same for exec alone. */
#include <abox/abox.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double ms_since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) * 1e3 + (double)(b.tv_nsec - a->tv_nsec) / 1e6;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50;
	if (n < 1)
		n = 50;
	abox_error err = ABOX_ERROR_INIT;
	abox_ctx *ctx;
	if (abox_ctx_new(NULL, &ctx, &err) < 0) {
		fprintf(stderr, "lib_create: %s\n", err.msg);
		return 1;
	}
	double *total = calloc((size_t)n, sizeof(double)), *create = calloc((size_t)n, sizeof(double));
	const char *argv_true[] = { "true", NULL };
	for (int i = 0; i < n; i++) {
		struct timespec t0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
		so.flags = ABOX_SANDBOX_EPHEMERAL;
		abox_sandbox *sb;
		if (abox_sandbox_create(ctx, &so, &sb, &err) < 0) {
			fprintf(stderr, "lib_create: %s\n", err.msg);
			return 1;
		}
		create[i] = ms_since(&t0);
		abox_proc_opts po = ABOX_PROC_OPTS_INIT;
		po.argv = argv_true;
		abox_proc *p;
		if (abox_proc_start(sb, &po, &p, &err) < 0 || abox_proc_wait(p, -1, NULL, NULL, &err) < 0) {
			fprintf(stderr, "lib_create: %s\n", err.msg);
			return 1;
		}
		abox_proc_free(p);
		abox_sandbox_free(sb);
		total[i] = ms_since(&t0);
	}
	qsort(total, (size_t)n, sizeof(double), cmp);
	qsort(create, (size_t)n, sizeof(double), cmp);
	printf("%.3f %.3f %.3f\n", total[n / 2], total[(n * 9) / 10], create[n / 2]);
	abox_ctx_free(ctx);
	return 0;
}
