/* proxy.c — any other E2b-Sandbox-Port (or Host "<port>-<id>.<domain>"):
 * HTTP and WebSocket to that TCP port inside the sandbox.
 *
 * The connection is made from inside the sandbox's network namespace by a
 * short-lived child (setns on init's pidfd, connect to 127.0.0.1:port)
 * that hands the socket back over a socketpair: no host port is ever
 * opened for a sandbox, and nothing outside the sandbox's own loopback is
 * reachable this way. Plain requests go upstream as HTTP/1.0 (one request
 * per connection, no chunked replies to undo); a request asking for an
 * Upgrade (WebSocket) goes as HTTP/1.1 and, when upstream agrees (101),
 * both sockets are spliced until either side closes.
 * A sandbox made with network.allowPublicTraffic false is reached only
 * with its traffic token (E2B-Traffic-Access-Token); one with
 * network.maskRequestHost gets that Host ("${PORT}": the port asked for)
 * instead of the client's (network.c). */
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "base/fdpass.h"
#include "daemon.h"
#include "auth.h"
#include "lifecycle.h"
#include "network.h"
#include "planes.h"

#define HEAD_MAX (64 << 10)

/* A socket connected to 127.0.0.1:port in the network namespace of pid. */
static int connect_inside(pid_t pid, unsigned port, char *why, size_t whyn)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		snprintf(why, whyn, "socketpair: %s", strerror(errno));
		return -1;
	}
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		snprintf(why, whyn, "the sandbox's init is gone");
		close(sp[0]);
		close(sp[1]);
		return -1;
	}
	pid_t c = fork();
	if (c == 0) {
		close(sp[0]);
		int err = 0;
		int s = -1;
		if (setns(pidfd, CLONE_NEWNET) < 0)
			err = errno;
		else if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
			err = errno;
		else {
			struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
			sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			struct timeval tv = { .tv_sec = 5 };
			setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
				err = errno;
		}
		_exit(fd_send(sp[1], &err, sizeof(err), &s, err ? 0 : 1, 0) < 0 ? 1 : 0);
	}
	close(pidfd);
	close(sp[1]);
	int fd = -1, err = EIO;
	if (c > 0) {
		size_t nfd = 0;
		(void)fd_recv(sp[0], &err, sizeof(err), &fd, 1, &nfd, 0);
		if (nfd == 0)
			fd = -1;
		while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close(sp[0]);
	if (fd < 0)
		snprintf(why, whyn, "nothing listens on port %u inside the sandbox (%s)", port, strerror(err ? err : EIO));
	return fd;
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

struct hdrbuf {
	char *p;
	size_t len, cap;
	bool upgrade;
	const char *host; /* sent instead of the client's Host, or NULL */
};

static void hb_add(struct hdrbuf *b, const char *s)
{
	size_t n = strlen(s);
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *np = realloc(b->p, cap);
		if (!np)
			return;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n + 1);
	b->len += n;
}

/* Client headers worth passing on: not abox's routing or credentials,
 * not the hop-by-hop ones (we frame the upstream request ourselves). */
static enum MHD_Result copy_header(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	(void)kind;
	struct hdrbuf *b = cls;
	static const char *const drop[] = { "E2b-Sandbox-Id", "E2b-Sandbox-Port", "X-API-Key", "X-Access-Token",
					    "E2B-Traffic-Access-Token", "Content-Length", "Transfer-Encoding",
					    "Keep-Alive", "Proxy-Connection" };
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (!strcasecmp(k, drop[i]))
			return MHD_YES;
	if (!strcasecmp(k, "Connection") && !b->upgrade)
		return MHD_YES;
	if (!strcasecmp(k, "Host") && b->host)
		return MHD_YES; /* the mask's, added with the request line */
	hb_add(b, k);
	hb_add(b, ": ");
	hb_add(b, v ? v : "");
	hb_add(b, "\r\n");
	return MHD_YES;
}

struct upstream {
	int fd;
	char *extra;       /* bytes read past the response head */
	size_t extra_len, extra_off;
};

static ssize_t body_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct upstream *u = cls;
	if (u->extra_off < u->extra_len) {
		size_t n = u->extra_len - u->extra_off < max ? u->extra_len - u->extra_off : max;
		memcpy(buf, u->extra + u->extra_off, n);
		u->extra_off += n;
		return (ssize_t)n;
	}
	ssize_t n;
	do
		n = recv(u->fd, buf, max, 0);
	while (n < 0 && errno == EINTR);
	return n > 0 ? n : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void upstream_free(void *cls)
{
	struct upstream *u = cls;
	close(u->fd);
	free(u->extra);
	free(u);
}

static void splice_loop(int a, int b, const char *pending, size_t plen)
{
	if (plen && write_all(a, pending, plen) < 0)
		return;
	char buf[64 << 10];
	for (;;) {
		struct pollfd p[2] = { { .fd = a, .events = POLLIN }, { .fd = b, .events = POLLIN } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (int i = 0; i < 2; i++) {
			if (!p[i].revents)
				continue;
			ssize_t n = recv(p[i].fd, buf, sizeof(buf), 0);
			if (n <= 0 || write_all(i == 0 ? b : a, buf, (size_t)n) < 0)
				return;
		}
	}
}

static void upgraded(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in, size_t extra_in_size,
		     MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	(void)conn;
	(void)con_cls;
	struct upstream *u = cls;
	/* what the client sent past its request head goes upstream first */
	if (!extra_in_size || write_all(u->fd, extra_in, extra_in_size) == 0)
		splice_loop(sock, u->fd, u->extra + u->extra_off, u->extra_len - u->extra_off);
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
	upstream_free(u);
}

enum MHD_Result proxy_route(struct request *rq)
{
	abox_ctx *ctx = request_ctx();
	abox_sandbox_info in;
	if (!ctx || sandbox_visible(rq, ctx, rq->sandbox, &in) < 0) {
		abox_ctx_free(ctx);
		return reply_error(rq, 502, "sandbox %s not found", rq->sandbox);
	}
	abox_error err = ABOX_ERROR_INIT;
	int wake = lifecycle_wake(ctx, &in, &err);
	bool woke = wake == 0 && in.state == ABOX_STATE_PAUSED;
	pid_t pid = in.pid;
	bool running = in.state == ABOX_STATE_RUNNING || woke;
	bool public_traffic;
	char mask[320], host[400] = "";
	(void)network_ingress(in.id, &public_traffic, mask, sizeof(mask));
	if (!public_traffic) {
		if (!auth_traffic_ok(&in, header(rq, "E2B-Traffic-Access-Token"))) {
			abox_sandbox_info_clear(&in);
			abox_ctx_free(ctx);
			return reply_error(
				rq, 403,
				"sandbox %s takes traffic only with its traffic access token "
				"(E2B-Traffic-Access-Token): it was made with allowPublicTraffic false",
				rq->sandbox);
		}
	}
	if (*mask) {
		/* "${PORT}" stands for the port the request was for */
		char *at = strstr(mask, "${PORT}");
		if (at)
			snprintf(host, sizeof(host), "%.*s%u%s", (int)(at - mask), mask, rq->port, at + 7);
		else
			snprintf(host, sizeof(host), "%s", mask);
	}
	abox_sandbox_info_clear(&in);
	if (woke && sandbox_visible(rq, ctx, rq->sandbox, &in) == 0) {
		pid = in.pid; /* a resume from disk restores init under a new pid */
		abox_sandbox_info_clear(&in);
	}
	abox_ctx_free(ctx);
	if (wake == -EAGAIN)
		return lifecycle_paused_reply(rq);
	if (wake < 0)
		return reply_error(rq, 502, "resuming sandbox %s: %s", rq->sandbox, err.msg);
	if (!running)
		return reply_error(rq, 502, "sandbox %s is not running", rq->sandbox);
	if (rq->port == 0 || rq->port > 65535)
		return reply_error(rq, 400, "port %u is not a TCP port", rq->port);
	char why[256];
	int fd = connect_inside(pid, rq->port, why, sizeof(why));
	if (fd < 0)
		return reply_error(rq, 502, "%s", why);

	const char *up = header(rq, "Upgrade");
	struct hdrbuf h = { .upgrade = up != NULL, .host = *host ? host : NULL };
	char line[8400];
	snprintf(line, sizeof(line), "%s %s HTTP/%s\r\n", rq->method, rq->raw_uri[0] ? rq->raw_uri : rq->url,
		 up ? "1.1" : "1.0");
	hb_add(&h, line);
	if (h.host) {
		snprintf(line, sizeof(line), "Host: %s\r\n", h.host);
		hb_add(&h, line);
	}
	MHD_get_connection_values(rq->conn, MHD_HEADER_KIND, copy_header, &h);
	if (rq->len) {
		snprintf(line, sizeof(line), "Content-Length: %zu\r\n", rq->len);
		hb_add(&h, line);
	}
	hb_add(&h, "\r\n");
	int w = h.p ? write_all(fd, h.p, h.len) : -1;
	free(h.p);
	if (w < 0 || (rq->len && write_all(fd, rq->body, rq->len) < 0)) {
		close(fd);
		return reply_error(rq, 502, "port %u of sandbox %s: the request could not be sent", rq->port, rq->sandbox);
	}

	/* the response head */
	char *head = malloc(HEAD_MAX + 1);
	size_t hl = 0;
	char *end = NULL;
	while (head && hl < HEAD_MAX && !end) {
		ssize_t n = recv(fd, head + hl, HEAD_MAX - hl, 0);
		if (n <= 0)
			break;
		hl += (size_t)n;
		head[hl] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	int status = 0;
	if (!end || sscanf(head, "HTTP/%*d.%*d %d", &status) != 1 || status < 100 || status > 599) {
		free(head);
		close(fd);
		return reply_error(rq, 502, "port %u of sandbox %s did not answer in HTTP", rq->port, rq->sandbox);
	}
	struct upstream *u = calloc(1, sizeof(*u));
	size_t body_at = (size_t)(end - head) + 4;
	if (!u || !(u->extra = malloc(hl - body_at + 1))) {
		free(u);
		free(head);
		close(fd);
		return MHD_NO;
	}
	u->fd = fd;
	u->extra_len = hl - body_at;
	memcpy(u->extra, head + body_at, u->extra_len);
	*end = '\0';
	/* header lines after the status line: name, value */
	char *names[128], *values[128];
	size_t nh = 0;
	long long clen = -1;
	char *save = NULL;
	(void)strtok_r(head, "\r\n", &save); /* the status line */
	for (char *l = strtok_r(NULL, "\r\n", &save); l && nh < 128; l = strtok_r(NULL, "\r\n", &save)) {
		char *colon = strchr(l, ':');
		if (!colon)
			continue;
		*colon = '\0';
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		if (!strcasecmp(l, "Content-Length"))
			clen = atoll(v);
		names[nh] = l;
		values[nh++] = v;
	}
	struct MHD_Response *resp = status == 101 && up
					    ? MHD_create_response_for_upgrade(upgraded, u)
					    : MHD_create_response_from_callback(clen >= 0 ? (uint64_t)clen : MHD_SIZE_UNKNOWN,
										64 << 10, body_reader, u, upstream_free);
	if (!resp) {
		upstream_free(u);
		free(head);
		return MHD_NO;
	}
	/* upstream's headers, but for the framing ones MHD sets itself (an
	 * upgrade keeps its Connection and Upgrade) */
	for (size_t i = 0; i < nh; i++) {
		bool framing = !strcasecmp(names[i], "Content-Length") || !strcasecmp(names[i], "Transfer-Encoding") ||
			       !strcasecmp(names[i], "Keep-Alive") ||
			       (!strcasecmp(names[i], "Connection") && status != 101);
		if (!framing)
			MHD_add_response_header(resp, names[i], values[i]);
	}
	free(head);
	enum MHD_Result q = daemon_queue(rq, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return q;
}
