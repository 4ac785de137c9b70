/* lib_pause — pause and resume latency of a long-lived sandbox through
 * the library: idle, then busy (a shell loop spinning on the CPU).
 * Prints "idle|busy pause_median pause_p90 resume_median resume_p90" in
 * milliseconds. */
#include <stdio.h>
#include <stdlib.h>

#include "lib_bench.h"

static int measure(abox_sandbox *sb, int n, const char *label)
{
	abox_error err = ABOX_ERROR_INIT;
	double *p = calloc((size_t)n, sizeof(double)), *r = calloc((size_t)n, sizeof(double));
	for (int i = 0; i < n; i++) {
		double a = bench_now_ms();
		if (abox_sandbox_pause(sb, &err) < 0)
			goto fail;
		double b = bench_now_ms();
		if (abox_sandbox_resume(sb, &err) < 0)
			goto fail;
		double c = bench_now_ms();
		p[i] = b - a;
		r[i] = c - b;
	}
	bench_sort(p, n);
	bench_sort(r, n);
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
	struct bench b;
	if (bench_begin(argc, argv, "lib_pause", 100, 600000, &b) < 0)
		return 1;
	int rc = measure(b.sb, b.n, "idle") < 0;
	if (!rc) {
		abox_error err = ABOX_ERROR_INIT;
		const char *spin[] = { "/bin/sh", "-c", "while :; do :; done", NULL };
		abox_proc_opts po = ABOX_PROC_OPTS_INIT;
		po.argv = spin;
		abox_proc *sp;
		if (abox_proc_start(b.sb, &po, &sp, &err) < 0) {
			fprintf(stderr, "lib_pause: %s\n", err.msg);
			rc = 1;
		} else {
			/* let it run a while, then leave it running in the background */
			(void)abox_proc_wait(sp, 200, NULL, NULL, NULL);
			abox_proc_free(sp);
			rc = measure(b.sb, b.n, "busy") < 0;
		}
	}
	bench_end(&b);
	return rc;
}
