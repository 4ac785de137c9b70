/* lib_exec — exec of `true` in a running sandbox through the library:
 * start, wait for its end; repeated N times in one long-lived sandbox.
 * Prints the median and p90 in milliseconds. */
#include <stdio.h>
#include <stdlib.h>

#include "lib_bench.h"

int main(int argc, char **argv)
{
	struct bench b;
	if (bench_begin(argc, argv, "lib_exec", 100, 600000, &b) < 0)
		return 1;
	abox_error err = ABOX_ERROR_INIT;
	double *t = calloc((size_t)b.n, sizeof(double));
	const char *argv_true[] = { "/bin/true", NULL };
	for (int i = 0; i < b.n; i++) {
		double a = bench_now_ms();
		if (bench_exec(b.sb, argv_true, NULL, NULL, &err) < 0) {
			fprintf(stderr, "lib_exec: %s\n", err.msg);
			return 1;
		}
		t[i] = bench_now_ms() - a;
	}
	bench_end(&b);
	bench_sort(t, b.n);
	printf("%.3f %.3f\n", t[b.n / 2], t[(b.n * 9) / 10]);
	return 0;
}
