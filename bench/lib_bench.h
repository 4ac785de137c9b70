/* What the library benches (lib_*.c) share: the run count, a clock,
 * sorting for medians, a long-lived sandbox and one command run to its
 * end. */
#ifndef ABOX_LIB_BENCH_H
#define ABOX_LIB_BENCH_H

#include <abox/abox.h>

/* argv[1] as a count of runs; dflt when it is absent or below 1. */
int bench_runs(int argc, char **argv, int dflt);
/* CLOCK_MONOTONIC in milliseconds. */
double bench_now_ms(void);
/* Sorts t[0..n) ascending: t[n / 2] is then the median, t[n * 9 / 10]
 * the 90th percentile. */
void bench_sort(double *t, int n);
/* A bench on one long-lived sandbox: its run count, context and sandbox. */
struct bench {
	int n;
	abox_ctx *ctx;
	abox_sandbox *sb;
};
/* n from argv[1] (bench_runs, dflt), then a context and a sandbox that
 * lives timeout_ms: 0, or -1 once it has said why ("prog: ..."). */
int bench_begin(int argc, char **argv, const char *prog, int dflt, uint32_t timeout_ms, struct bench *b);
/* Kills and frees what bench_begin made (the sandbox may be gone). */
void bench_end(struct bench *b);
/* Runs argv in sb to its end, its events to fn (may be NULL): 0, or < 0
 * with *err set. */
int bench_exec(abox_sandbox *sb, const char *const *argv, abox_event_fn fn, void *ud, abox_error *err);

#endif
