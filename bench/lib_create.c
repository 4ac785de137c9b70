/* lib_create — library-level cost of one sandbox: create, run `true`,
 * wait for its end, kill and clean up; repeated N times. Prints the median
 * and p90 in milliseconds, and the same for exec alone.
 *   lib_create [N] [tmpfs|disk|long|long-tmpfs]: the ephemeral sandbox's
 *   writable layer in memory (its default) or on a disk; "long":
 *   long-lived sandboxes (a disk, their default), "long-tmpfs" the same
 *   with the layer in memory (what they had before disks), killed after
 *   the command.
 *   A third argument "spares": disks made ahead (abox_spare_disks), as
 *   aboxd does; a pause of [gap ms] (fourth argument, default 0) after
 *   each round gives the helper its time between creates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib_bench.h"

static void log_line(abox_log_level level, const char *msg, void *ud)
{
	(void)level;
	(void)ud;
	fprintf(stderr, "%s\n", msg);
}

int main(int argc, char **argv)
{
	int n = bench_runs(argc, argv, 50);
	const char *kind = argc > 2 ? argv[2] : "tmpfs";
	abox_error err = ABOX_ERROR_INIT;
	abox_ctx *ctx;
	abox_ctx_opts co = ABOX_CTX_OPTS_INIT;
	if (getenv("ABOX_DEBUG"))
		co.log = log_line; /* every step, timed (the CLI's ABOX_DEBUG) */
	if (abox_ctx_new(&co, &ctx, &err) < 0) {
		fprintf(stderr, "lib_create: %s\n", err.msg);
		return 1;
	}
	if (argc > 3 && strcmp(argv[3], "spares") == 0 && abox_spare_disks(ctx, 0, 4, &err) < 0) {
		fprintf(stderr, "lib_create: %s\n", err.msg);
		return 1;
	}
	int gap_ms = argc > 4 ? atoi(argv[4]) : 0;
	double *total = calloc((size_t)n, sizeof(double)), *create = calloc((size_t)n, sizeof(double));
	const char *argv_true[] = { "true", NULL };
	for (int i = 0; i < n; i++) {
		double t0 = bench_now_ms();
		abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
		so.flags = strcmp(kind, "long") == 0	   ? 0
			   : strcmp(kind, "long-tmpfs") == 0 ? ABOX_SANDBOX_LAYER_TMPFS
			   : strcmp(kind, "disk") == 0	   ? ABOX_SANDBOX_EPHEMERAL | ABOX_SANDBOX_LAYER_DISK
							   : ABOX_SANDBOX_EPHEMERAL;
		abox_sandbox *sb;
		if (abox_sandbox_create(ctx, &so, &sb, &err) < 0) {
			fprintf(stderr, "lib_create: %s\n", err.msg);
			return 1;
		}
		create[i] = bench_now_ms() - t0;
		if (bench_exec(sb, argv_true, NULL, NULL, &err) < 0) {
			fprintf(stderr, "lib_create: %s\n", err.msg);
			return 1;
		}
		if (!(so.flags & ABOX_SANDBOX_EPHEMERAL) && abox_sandbox_kill(sb, &err) < 0) {
			fprintf(stderr, "lib_create: %s\n", err.msg);
			return 1;
		}
		abox_sandbox_free(sb);
		total[i] = bench_now_ms() - t0;
		if (gap_ms > 0)
			nanosleep(&(struct timespec){ .tv_sec = gap_ms / 1000, .tv_nsec = (gap_ms % 1000) * 1000000L }, NULL);
	}
	bench_sort(total, n);
	bench_sort(create, n);
	printf("%.3f %.3f %.3f\n", total[n / 2], total[(n * 9) / 10], create[n / 2]);
	abox_ctx_free(ctx);
	return 0;
}
