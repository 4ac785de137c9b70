/* netd/proxy.c — decisions by name. In a sandbox whose policy allows
 * names, the table redirects its TCP 80 and 443 (to addresses no CIDR of
 * its policy allows) here. The proxy reads the name the connection asks
 * for (TLS server_name, HTTP Host: sni.h) without consuming a byte,
 * matches it against the policy, resolves it itself through the host's
 * resolvers — so an /etc/hosts entry or a forged answer inside the
 * sandbox gains nothing, and an address in the always-denied ranges
 * (rebinding) is never dialled — connects to it on the port the sandbox
 * asked for, and splices both ways in the kernel.
 * A refusal is said at once: a TLS alert (access_denied), an HTTP 403
 * naming abox's egress policy, or a reset; and logged with the sandbox.
 * A connection whose first bytes do not come (a protocol where the
 * server speaks first) goes through only to an address the sandbox's
 * resolver learned for an allowed name.
 * Limits: connections per sandbox and in all; a policy change cuts the
 * connections to names it no longer allows.
 * Known limits (docs/networking.md): domain fronting (a TLS name allowed,
 * an HTTP Host inside the encryption another) and names that share a
 * CDN's addresses are not told apart.
 * Runs in abox-netd: an accept thread, a thread per connection. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "netd.h"
#include "resolver.h"
#include "sni.h"
#include "splice.h"
#include "workers.h"

#define PER_SANDBOX_MAX 256
#define TOTAL_MAX 4096
#define FIRST_BYTES_MS 3000
#define HEADER_MS 10000
#define CONNECT_MS 10000

struct conn {
	int client, server;
	uint32_t slot;
	char name[SNI_NAME_MAX];
	struct conn *next;
};

static struct conn *conns; /* with netd.lock */
static int proxy_fd = -1;

static unsigned conns_of(uint32_t slot)
{
	unsigned n = 0;
	for (struct conn *c = conns; c; c = c->next)
		n += c->slot == slot;
	return n;
}

void proxy_recheck(uint32_t slot)
{
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = sbx_get(slot);
	for (struct conn *c = conns; c; c = c->next) {
		if (c->slot != slot ||
		    (s && net_policy_name_listed(&s->policy, c->name) && s->policy.deny_all))
			continue;
		/* the splice loop sees both ends close */
		shutdown(c->client, SHUT_RDWR);
		if (c->server >= 0)
			shutdown(c->server, SHUT_RDWR);
		netd_log("%s: connection to '%s' cut: the new policy does not allow it", s ? s->id : "?",
			 c->name);
	}
	pthread_mutex_unlock(&netd.lock);
}

static void refuse(int fd, enum sni_kind kind, const char *name, const char *why)
{
	if (kind == SNI_TLS) {
		/* a fatal alert, access_denied (49), in a TLS 1.2 record:
		 * what every TLS client reports as a refused handshake */
		static const uint8_t alert[] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49 };
		(void)send(fd, alert, sizeof(alert), MSG_NOSIGNAL);
	} else if (kind == SNI_HTTP) {
		char body[512], head[1024];
		int bn = snprintf(body, sizeof(body), "abox: egress to '%s' is not allowed: %s\n",
				  name[0] ? name : "?", why);
		int hn = snprintf(
			head, sizeof(head),
			"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
			"X-Abox-Egress: denied by the sandbox's network policy\r\nConnection: close\r\n\r\n",
			bn);
		(void)send(fd, head, (size_t)hn, MSG_NOSIGNAL);
		(void)send(fd, body, (size_t)bn, MSG_NOSIGNAL);
	} else {
		/* a reset: no silent hang for what speaks neither */
		struct linger l = { .l_onoff = 1, .l_linger = 0 };
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
}

/* Peeks until the name is known: 0 (name set), or -errno; *kind set. */
static int peek_name(int fd, enum sni_kind *kind, char *name, bool *silent)
{
	uint8_t *b = malloc(SNI_PEEK_MAX);
	if (!b)
		return -ENOMEM;
	int64_t start = clock_mono_ms();
	size_t have = 0;
	int r = 1;
	*kind = SNI_OTHER;
	*silent = false;
	while (r == 1) {
		int64_t limit = have ? HEADER_MS : FIRST_BYTES_MS, left = start + limit - clock_mono_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			*silent = have == 0;
			r = -ETIMEDOUT;
			break;
		}
		ssize_t n = recv(fd, b, SNI_PEEK_MAX, MSG_PEEK);
		if (n <= 0) {
			r = n < 0 ? -errno : -ECONNRESET;
			break;
		}
		if ((size_t)n == have) {
			/* nothing new yet: wait a moment for the rest */
			usleep(2000);
			continue;
		}
		have = (size_t)n;
		*kind = sni_kind(b, have);
		if (*kind == SNI_TLS)
			r = sni_tls_name(b, have, name);
		else if (*kind == SNI_HTTP)
			r = sni_http_host(b, have, name);
		else
			r = -EPROTONOSUPPORT;
		if (r == 1 && have >= SNI_PEEK_MAX)
			r = -EMSGSIZE;
	}
	free(b);
	return r;
}

static void conn_unlink(struct conn *c)
{
	for (struct conn **pp = &conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct sockaddr_in peer, orig = { 0 };
	socklen_t pl = sizeof(peer), ol = sizeof(orig);
	enum sni_kind kind = SNI_OTHER;
	char id[ABOX_ID_LEN + 1] = "?";
	const char *why = NULL;
	bool silent = false;
	uint64_t out = 0, in = 0;
	if (getpeername(c->client, (struct sockaddr *)&peer, &pl) < 0 ||
	    getsockopt(c->client, SOL_IP, SO_ORIGINAL_DST, &orig, &ol) < 0) {
		why = "no original destination";
		goto done;
	}
	int r = peek_name(c->client, &kind, c->name, &silent);
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = sbx_get(c->slot);
	bool allowed = false, learned = false;
	if (s) {
		memcpy(id, s->id, sizeof(id));
		allowed = r == 0 && s->policy.deny_all && net_policy_name_listed(&s->policy, c->name);
		learned = silent && sbx_learned(s, orig.sin_addr.s_addr);
		s->c.proxy_conns++;
		netd.total.proxy_conns++;
	}
	pthread_mutex_unlock(&netd.lock);
	uint32_t addrs[16];
	size_t naddr = 0;
	if (learned) {
		/* the server speaks first; the address is one this sandbox's
		 * resolver gave it for an allowed name */
		addrs[naddr++] = orig.sin_addr.s_addr;
		inet_ntop(AF_INET, &orig.sin_addr, c->name, sizeof(c->name));
	} else if (!s) {
		why = "no such sandbox";
	} else if (r == -ENOENT) {
		why = kind == SNI_TLS ? "the TLS handshake names no server" : "the request names no host";
	} else if (r < 0) {
		why = silent ? "no request came, and the address was not learned for an allowed name"
			     : "not a TLS or HTTP request with a host name";
	} else if (!allowed) {
		why = "the name is not on the sandbox's allow list";
	} else {
		int lr = resolver_lookup_a(c->name, addrs, ELEMENTSOF(addrs), &naddr);
		if (lr == -EACCES)
			why = "the name resolves to private or reserved addresses only";
		else if (lr < 0)
			why = "the name does not resolve";
		for (size_t i = 0; i < naddr; i++)
			if (addrs[i] == orig.sin_addr.s_addr) {
				/* the address the sandbox chose, when the name
				 * has it: a pinned connection stays pinned */
				addrs[i] = addrs[0];
				addrs[0] = orig.sin_addr.s_addr;
			}
	}
	if (!why) {
		int fd = -ECONNREFUSED;
		for (size_t i = 0; i < naddr && fd < 0; i++)
			fd = splice_connect(addrs[i], orig.sin_port, CONNECT_MS);
		if (fd < 0) {
			why = "the server could not be reached";
			if (kind == SNI_HTTP) {
				static const char bad[] = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: "
							  "0\r\nConnection: close\r\n\r\n";
				(void)send(c->client, bad, sizeof(bad) - 1, MSG_NOSIGNAL);
				kind = SNI_OTHER; /* said already */
			}
		} else {
			pthread_mutex_lock(&netd.lock);
			c->server = fd;
			pthread_mutex_unlock(&netd.lock);
			splice_both(c->client, fd, &out, &in);
		}
	}
done:
	if (why) {
		refuse(c->client, kind, c->name, why);
		if (netd_log_allowed()) {
			char a[INET_ADDRSTRLEN] = "?";
			inet_ntop(AF_INET, &orig.sin_addr, a, sizeof(a));
			netd_log("%s: connection to %s:%u ('%s') refused: %s", id, a, ntohs(orig.sin_port),
				 c->name, why);
		}
	}
	pthread_mutex_lock(&netd.lock);
	struct sbx *s2 = sbx_get(c->slot);
	if (s2) {
		s2->c.proxy_bytes_out += out;
		s2->c.proxy_bytes_in += in;
		if (why)
			s2->c.proxy_refused++;
	}
	netd.total.proxy_bytes_out += out;
	netd.total.proxy_bytes_in += in;
	if (why)
		netd.total.proxy_refused++;
	conn_unlink(c);
	netd.active_proxied--;
	netd.last_busy_ms = clock_mono_ms();
	pthread_mutex_unlock(&netd.lock);
	close(c->client);
	if (c->server >= 0)
		close(c->server);
	free(c);
	return NULL;
}

static void *accept_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		int fd = accept4(proxy_fd, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EINTR && errno != ECONNABORTED)
				usleep(10000);
			continue;
		}
		struct conn *c = calloc(1, sizeof(*c));
		pthread_mutex_lock(&netd.lock);
		int64_t slot = net_slot_of(&netd.cfg, from.sin_addr.s_addr);
		bool room = c && slot >= 0 && netd.active_proxied < TOTAL_MAX &&
			    conns_of((uint32_t)slot) < PER_SANDBOX_MAX;
		if (room) {
			c->client = fd;
			c->server = -1;
			c->slot = (uint32_t)slot;
			c->next = conns;
			conns = c;
			netd.active_proxied++;
		}
		pthread_mutex_unlock(&netd.lock);
		if (room) {
			if (netd_thread(conn_main, c) == 0)
				continue;
			pthread_mutex_lock(&netd.lock);
			conn_unlink(c);
			netd.active_proxied--;
			pthread_mutex_unlock(&netd.lock);
		}
		free(c);
		refuse(fd, SNI_OTHER, "", "too many connections");
		close(fd);
	}
	return NULL;
}

int proxy_start(abox_error *err)
{
	if ((proxy_fd = resolver_listen(SOCK_STREAM, netd.cfg.proxy_port, err)) < 0)
		return abox_error_prefix(err, "proxy");
	/* blocking accepts in their own thread */
	fcntl(proxy_fd, F_SETFL, fcntl(proxy_fd, F_GETFL) & ~O_NONBLOCK);
	pthread_t t;
	int r = pthread_create(&t, NULL, accept_main, NULL);
	if (r)
		return abox_error_set(err, r, "proxy: thread");
	pthread_detach(t);
	return 0;
}
