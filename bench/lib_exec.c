/* lib_exec — exec of `true` in a running sandbox through the library:
 * start, wait for its end; repeated N times in one long-lived sandbox.
 * Prints the median and p90 in milliseconds. */
#include <stdio.h>
#include <stdlib.h>

#include "lib_bench.h"

int main(int argc, char **argv)
{
	int n = bench_runs(argc, argv, 100);
	abox_ctx *ctx;
	abox_sandbox *sb = bench_sandbox("lib_exec", 600000, &ctx);
	if (!sb)
		return 1;
	abox_error err = ABOX_ERROR_INIT;
	double *t = calloc((size_t)n, sizeof(double));
	const char *argv_true[] = { "/bin/true", NULL };
	for (int i = 0; i < n; i++) {
		double a = bench_now_ms();
		if (bench_exec(sb, argv_true, NULL, NULL, &err) < 0) {
			fprintf(stderr, "lib_exec: %s\n", err.msg);
			return 1;
		}
		t[i] = bench_now_ms() - a;
	}
	bench_sandbox_end(ctx, sb);
	bench_sort(t, n);
	printf("%.3f %.3f\n", t[n / 2], t[(n * 9) / 10]);
	return 0;
}
