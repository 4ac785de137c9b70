/* netd/upstream.c — the host's resolvers, as abox-netd's resolver asks
 * them: a connected socket per question, a random id, and the blocking
 * ask that TCP clients and the proxy use (resolver.c forwards UDP
 * questions without waiting). Runs in abox-netd. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "netd.h"
#include "resolver.h"

int resolver_upstream_socket(unsigned i, int type)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(netd.cfg.resolver_ports[i]),
				  .sin_addr.s_addr = netd.cfg.resolvers[i] };
	int fd = socket(AF_INET, type | SOCK_CLOEXEC | (type == SOCK_DGRAM ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

uint16_t resolver_query_id(void)
{
	uint16_t id = 0;
	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = (uint16_t)clock_mono_ns();
	return id;
}

/* Sends q (n bytes, id already ours) to resolver i over UDP and waits for
 * an answer to it. Its length, or -errno. */
static ssize_t ask_udp(unsigned i, const struct dns_query *q, uint16_t id, const uint8_t *m, size_t n,
		       uint8_t *out, size_t cap)
{
	int fd = resolver_upstream_socket(i, SOCK_DGRAM);
	if (fd < 0)
		return fd;
	ssize_t r = send(fd, m, n, 0) < 0 ? -errno : -ETIMEDOUT;
	int64_t end = clock_mono_ms() + RESOLVER_UPSTREAM_TIMEOUT_MS;
	while (r == -ETIMEDOUT) {
		int64_t left = end - clock_mono_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t got = recv(fd, out, cap, 0);
		if (got < 0 && errno != EAGAIN && errno != EINTR)
			r = -errno;
		else if (got > 0 && dns_answers(out, (size_t)got, q, id))
			r = got;
	}
	close(fd);
	return r;
}

ssize_t resolver_ask(const struct dns_query *q, const uint8_t *query, size_t n, uint8_t *out, size_t cap)
{
	if (netd.cfg.nresolvers == 0 || n > DNS_MSG_MAX || n < 12)
		return -ENETUNREACH;
	uint8_t *m = malloc(n);
	if (!m)
		return -ENOMEM;
	memcpy(m, query, n);
	ssize_t r = -ENETUNREACH;
	for (unsigned i = 0; i < netd.cfg.nresolvers && r < 0; i++) {
		uint16_t id = resolver_query_id();
		m[0] = (uint8_t)(id >> 8);
		m[1] = (uint8_t)id;
		r = ask_udp(i, q, id, m, n, out, cap);
		/* the id the asker chose, back */
		if (r >= 2)
			memcpy(out, query, 2);
	}
	free(m);
	return r;
}
