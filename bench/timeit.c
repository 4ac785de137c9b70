/* timeit — runs a command N times and prints the median and p90 wall time
 * in milliseconds: `timeit N CMD [ARG...]`. Output: "median_ms p90_ms".
 * An argument "%i" is replaced by the run's index (unique container ids).
 * A failing run is reported and counted as an error (exit 1). */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: timeit N CMD [ARG...]\n");
		return 2;
	}
	int n = atoi(argv[1]);
	if (n < 1)
		return 2;
	double *t = calloc((size_t)n, sizeof(double));
	int bad = 0;
	for (int i = 0; i < n; i++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		char idx[32];
		snprintf(idx, sizeof(idx), "%d-%d", (int)getpid(), i);
		char *args[argc];
		for (int k = 2; k < argc; k++)
			args[k - 2] = strcmp(argv[k], "%i") == 0 ? idx : argv[k];
		args[argc - 2] = NULL;
		pid_t p;
		if (posix_spawnp(&p, args[0], NULL, NULL, args, environ) != 0) {
			perror("spawn");
			return 1;
		}
		int st;
		waitpid(p, &st, 0);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
		t[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	}
	qsort(t, (size_t)n, sizeof(double), cmp);
	printf("%.3f %.3f\n", t[n / 2], t[(n * 9) / 10]);
	if (bad)
		fprintf(stderr, "timeit: %d of %d runs failed\n", bad, n);
	return bad ? 1 : 0;
}
