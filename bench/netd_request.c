/* netd_request — one request to abox-netd N times, timed from the
 * client's side: `netd_request NAME JSON N [kept]` prints "median_us
 * p90_us". NAME is netd's abstract socket name (without the leading
 * NUL). Each request connects anew, sends, waits for the answer and
 * closes, as libabox's net_client_call does; with "kept" one connection
 * carries every request (what a client holding its connection would
 * see). A refused request (an answer without "ok":true) fails the run. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int dial(const struct sockaddr_un *sa, socklen_t len)
{
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s >= 0 && connect(s, (const struct sockaddr *)sa, len) < 0) {
		close(s);
		return -1;
	}
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 4 || atoi(argv[3]) < 1) {
		fprintf(stderr, "usage: netd_request NAME JSON N [kept]\n");
		return 2;
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t nl = strlen(argv[1]);
	if (nl + 1 > sizeof(sa.sun_path))
		return 2;
	memcpy(sa.sun_path + 1, argv[1], nl);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + nl);
	int n = atoi(argv[3]);
	int kept = argc > 4 && !strcmp(argv[4], "kept");
	double *t = calloc((size_t)n, sizeof(double));
	static char buf[65536];
	int s = -1;
	for (int i = 0; t && i < n; i++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (s < 0 && (s = dial(&sa, len)) < 0) {
			perror("netd_request: connect");
			return 1;
		}
		ssize_t got = -1;
		if (send(s, argv[2], strlen(argv[2]), 0) >= 0)
			got = recv(s, buf, sizeof(buf) - 1, 0);
		if (!kept) {
			close(s);
			s = -1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (got <= 0) {
			perror("netd_request: no answer");
			return 1;
		}
		buf[got] = 0;
		if (!strstr(buf, "\"ok\":true")) {
			fprintf(stderr, "netd_request: refused: %s\n", buf);
			return 1;
		}
		t[i] = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
	}
	if (!t)
		return 1;
	qsort(t, (size_t)n, sizeof(double), cmp);
	printf("%.1f %.1f\n", t[n / 2], t[(n * 9) / 10]);
	return 0;
}
