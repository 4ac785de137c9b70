/* netd/relay.c — egress where abox-netd lacks CAP_NET_ADMIN: no veth, no
 * table. A sandbox keeps loopback only; abox-netd holds a listener on
 * the sandbox's own 127.0.0.1 (made inside its network namespace, so
 * nothing of the host is reachable from there) that speaks HTTP proxy
 * (CONNECT, and requests for http:// URLs) and SOCKS5 on one port, and
 * the sandbox's processes are given HTTP(S)_PROXY and ALL_PROXY naming
 * it. Each request is decided by the sandbox's policy as the table and
 * the name proxy decide it — names resolved here through the host's
 * resolvers (a spoofed /etc/hosts or a rebinding answer gains nothing),
 * every address checked against the always-denied ranges, the host's
 * own addresses, TCP 25 and the policy's lists — then dialled from the
 * host and spliced. A refusal is said at once: 403 naming abox's egress
 * policy, or SOCKS5's "not allowed by ruleset"; and logged.
 * Fails closed: the listener dies with abox-netd, so while it is down
 * connections are refused; a restarted netd makes it again in each
 * sandbox on record (its init found from the sandbox's record).
 * Runs in abox-netd: an accept thread (epoll over every listener), a
 * thread per connection. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "net/net.h"
#include "netd.h"
#include "relay.h"
#include "relay_parse.h"
#include "resolver.h"
#include "splice.h"
#include "workers.h"
#include "store/state.h"

#define PER_SANDBOX_MAX 256
#define TOTAL_MAX 4096
#define REQUEST_MS 10000
#define CONNECT_MS 10000

struct listener {
	uint32_t slot;
	int fd;
};

struct rconn {
	int client, server;
	uint32_t slot;
	char host[RELAY_HOST_MAX];
	bool is_ip;
	uint32_t addr; /* dialled (network order) */
	uint16_t port;
	struct rconn *next;
};

/* with netd.lock */
static struct listener *lis;
static size_t nlis, caplis;
static struct rconn *rconns;
static unsigned nrconns;
static int ep = -1;

static ssize_t lis_find(uint32_t slot)
{
	for (size_t i = 0; i < nlis; i++)
		if (lis[i].slot == slot)
			return (ssize_t)i;
	return -1;
}

static void lis_close(size_t i)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, lis[i].fd, NULL);
	close(lis[i].fd);
	lis[i] = lis[--nlis];
}

/* Whether addr (network order) is one of the host's own: reaching it
 * from the host would reach the host's services, which the table keeps
 * sandboxes away from on the routed path. */
static bool host_local(uint32_t addr)
{
	struct ifaddrs *ifa;
	if (getifaddrs(&ifa) < 0)
		return true; /* unknown: refuse */
	bool local = false;
	for (struct ifaddrs *i = ifa; i && !local; i = i->ifa_next)
		local = i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == addr;
	freeifaddrs(ifa);
	return local;
}

/* What the policy says of host before any address is known (NULL:
 * nothing against it yet). Lock held. */
static const char *verdict_name(const struct sbx *s, const char *host, bool is_ip, uint16_t port)
{
	const struct net_policy *p = &s->policy;
	if (p->mode == NET_MODE_NONE)
		return "the sandbox's network is off";
	if (port == 25 && !netd.cfg.allow_smtp)
		return "SMTP (TCP 25) is blocked";
	/* as the resolver answers NXDOMAIN on the routed path */
	if (!is_ip && p->mode == NET_MODE_FILTERED && p->deny_all && !net_policy_name_listed(p, host))
		return "the name is not on the sandbox's allow list";
	return NULL;
}

/* Why a connection to addr (for host: a name, or the address itself) on
 * port is refused to s, or NULL. Lock held. */
static const char *verdict(const struct sbx *s, const char *host, bool is_ip, uint32_t addr, uint16_t port,
			   bool local)
{
	const struct net_policy *p = &s->policy;
	const char *why = verdict_name(s, host, is_ip, port);
	if (why)
		return why;
	if (net_addr_always_denied(addr))
		return "the address is private, local or reserved";
	if (local)
		return "the address is the host's own";
	if (p->mode == NET_MODE_OPEN || (!is_ip && net_policy_name_listed(p, host)))
		return NULL;
	return net_policy_addr_allowed(p, addr) ? NULL : "the address is denied by the sandbox's policy";
}

/* The addresses host may be dialled at for the sandbox in slot, or why
 * not. The lock is taken only around the policy: a lookup may wait. */
static const char *decide(uint32_t slot, const char *host, uint16_t port, uint32_t *addrs, size_t max,
			  size_t *n)
{
	*n = 0;
	uint32_t a;
	bool is_ip = inet_pton(AF_INET, host, &a) == 1;
	size_t got = 0;
	if (is_ip) {
		addrs[got++] = a;
	} else {
		pthread_mutex_lock(&netd.lock);
		struct sbx *s = sbx_get(slot);
		const char *why = !s ? "no such sandbox" : verdict_name(s, host, false, port);
		pthread_mutex_unlock(&netd.lock);
		/* refused before any lookup: the name never leaves the host */
		if (why)
			return why;
		int r = resolver_lookup_a(host, addrs, max, &got);
		if (r == -EACCES)
			return "the name resolves to private or reserved addresses only";
		if (r < 0)
			return "the name does not resolve";
	}
	bool local[16] = { false };
	for (size_t i = 0; i < got && i < ELEMENTSOF(local); i++)
		local[i] = host_local(addrs[i]);
	const char *why = NULL;
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = sbx_get(slot);
	for (size_t i = 0; i < got && i < ELEMENTSOF(local); i++) {
		const char *w = s ? verdict(s, host, is_ip, addrs[i], port, local[i]) : "no such sandbox";
		if (!w)
			addrs[(*n)++] = addrs[i];
		else
			why = w;
	}
	pthread_mutex_unlock(&netd.lock);
	return *n ? NULL : why ? why : "the name has no address";
}

void relay_recheck(uint32_t slot)
{
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = sbx_get(slot);
	for (struct rconn *c = rconns; c; c = c->next) {
		if (c->slot != slot || c->server < 0)
			continue;
		/* the host's own addresses were refused at the dial and a
		 * policy does not change them */
		const char *why =
			s ? verdict(s, c->host, c->is_ip, c->addr, c->port, false) : "no such sandbox";
		if (!why)
			continue;
		shutdown(c->client, SHUT_RDWR);
		shutdown(c->server, SHUT_RDWR);
		netd_log("%s: relayed connection to '%s' cut: %s", s ? s->id : "?", c->host, why);
	}
	pthread_mutex_unlock(&netd.lock);
}

/* Reads more of the request into b (of cap, *n held): false when the
 * client left, sent too much or took too long. */
static bool read_more(int fd, uint8_t *b, size_t cap, size_t *n, int64_t deadline)
{
	int64_t left = deadline - clock_mono_ms();
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (*n >= cap || left <= 0 || poll(&p, 1, (int)left) <= 0)
		return false;
	ssize_t r = recv(fd, b + *n, cap - *n, 0);
	if (r <= 0)
		return false;
	*n += (size_t)r;
	return true;
}

static void send_all(int fd, const void *b, size_t n)
{
	(void)write_full(fd, b, n);
}

static void socks_reply(int fd, uint8_t code)
{
	const uint8_t r[10] = { 5, code, 0, 1, 0, 0, 0, 0, 0, 0 };
	send_all(fd, r, sizeof(r));
}

static void http_reply(int fd, int status, const char *reason, const char *host, const char *why)
{
	char body[512], head[512];
	int bn = snprintf(body, sizeof(body), "abox: egress to '%s' is not allowed: %s\n",
			  host[0] ? host : "?", why);
	int hn = snprintf(head, sizeof(head),
			  "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%sConnection: "
			  "close\r\n\r\n",
			  status, reason, bn,
			  status == 403 ? "X-Abox-Egress: denied by the sandbox's network policy\r\n" : "");
	send_all(fd, head, (size_t)hn);
	send_all(fd, body, (size_t)bn);
}

/* The request of a client: 0 (r filled, b[r->used..*n] are bytes for the
 * server), or -1 when it was answered already (malformed, refused). */
static int take_request(struct rconn *c, uint8_t *b, size_t cap, size_t *n, struct relay_req *r)
{
	int64_t deadline = clock_mono_ms() + REQUEST_MS;
	if (!read_more(c->client, b, cap, n, deadline))
		return -1;
	if (b[0] == 4) {
		/* SOCKS4: "request rejected", in its own format */
		static const uint8_t no[8] = { 0, 0x5b };
		send_all(c->client, no, sizeof(no));
		return -1;
	}
	if (b[0] != 5) {
		int e;
		while ((e = relay_http_parse(b, *n, r)) == 1)
			if (!read_more(c->client, b, cap, n, deadline))
				return -1;
		if (e == 0)
			return 0;
		const char *why = e == -EPROTONOSUPPORT
					  ? "only http:// URLs are forwarded; https goes by CONNECT"
				  : e == -EAFNOSUPPORT ? "sandboxes have no IPv6"
						       : "not an HTTP proxy request";
		http_reply(c->client, e == -EAFNOSUPPORT ? 403 : 400,
			   e == -EAFNOSUPPORT ? "Forbidden" : "Bad Request", "", why);
		return -1;
	}
	size_t hello = 0;
	int e;
	while ((e = relay_socks_hello(b, *n, &hello)) == 1)
		if (!read_more(c->client, b, cap, n, deadline))
			return -1;
	if (e < 0) {
		const uint8_t no[2] = { 5, 0xff }; /* no acceptable method */
		send_all(c->client, no, sizeof(no));
		return -1;
	}
	const uint8_t yes[2] = { 5, 0 };
	send_all(c->client, yes, sizeof(yes));
	while ((e = relay_socks_parse(b + hello, *n - hello, r)) == 1)
		if (!read_more(c->client, b, cap, n, deadline))
			return -1;
	if (e < 0) {
		/* 7: command not supported, 8: address type not supported */
		socks_reply(c->client, e == -EOPNOTSUPP ? 7 : e == -EAFNOSUPPORT ? 8 : 1);
		return -1;
	}
	r->used += hello;
	return 0;
}

static void count(uint32_t slot, bool refused, uint64_t out, uint64_t in)
{
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = sbx_get(slot);
	struct netd_counters *cs[2] = { &netd.total, s ? &s->c : NULL };
	for (size_t i = 0; i < 2; i++)
		if (cs[i]) {
			cs[i]->proxy_conns++;
			cs[i]->proxy_refused += refused;
			cs[i]->proxy_bytes_out += out;
			cs[i]->proxy_bytes_in += in;
		}
	pthread_mutex_unlock(&netd.lock);
}

static void rconn_end(struct rconn *c)
{
	pthread_mutex_lock(&netd.lock);
	for (struct rconn **pp = &rconns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	nrconns--;
	netd.active_proxied--;
	netd.last_busy_ms = clock_mono_ms();
	pthread_mutex_unlock(&netd.lock);
	close(c->client);
	if (c->server >= 0)
		close(c->server);
	free(c);
}

static void *conn_main(void *arg)
{
	struct rconn *c = arg;
	uint8_t *b = malloc(RELAY_HEAD_MAX);
	struct relay_req *r = malloc(sizeof(*r));
	size_t n = 0;
	uint64_t out = 0, in = 0;
	const char *why = NULL;
	if (!b || !r || take_request(c, b, RELAY_HEAD_MAX, &n, r) < 0)
		goto end;
	memcpy(c->host, r->host, sizeof(c->host));
	c->port = r->port;
	c->is_ip = inet_pton(AF_INET, r->host, &c->addr) == 1;
	uint32_t addrs[16];
	size_t naddr = 0;
	why = decide(c->slot, r->host, r->port, addrs, ELEMENTSOF(addrs), &naddr);
	int fd = -ECONNREFUSED;
	for (size_t i = 0; !why && i < naddr && fd < 0; i++)
		if ((fd = splice_connect(addrs[i], htons(r->port), CONNECT_MS)) >= 0)
			c->addr = addrs[i];
	if (why) {
		if (r->proto == RELAY_SOCKS5)
			socks_reply(c->client, 2); /* connection not allowed by ruleset */
		else
			http_reply(c->client, 403, "Forbidden", r->host, why);
	} else if (fd < 0) {
		if (r->proto == RELAY_SOCKS5)
			socks_reply(c->client, fd == -ECONNREFUSED ? 5 : 4);
		else
			http_reply(c->client, 502, "Bad Gateway", r->host, "the server could not be reached");
		why = "the server could not be reached";
	} else {
		pthread_mutex_lock(&netd.lock);
		c->server = fd;
		pthread_mutex_unlock(&netd.lock);
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		if (r->proto == RELAY_CONNECT)
			send_all(c->client, ok, sizeof(ok) - 1);
		else if (r->proto == RELAY_SOCKS5)
			socks_reply(c->client, 0);
		else
			send_all(fd, r->line, r->line_len), out += r->line_len;
		/* what the client sent past its request is the server's */
		send_all(fd, b + r->used, n - r->used);
		out += n - r->used;
		splice_both(c->client, fd, &out, &in);
	}
	if (why && netd_log_allowed()) {
		pthread_mutex_lock(&netd.lock);
		struct sbx *s = sbx_get(c->slot);
		char id[ABOX_ID_LEN + 1] = "?";
		if (s)
			memcpy(id, s->id, sizeof(id));
		pthread_mutex_unlock(&netd.lock);
		netd_log("%s: relayed connection to %s:%u refused: %s", id, r->host, r->port, why);
	}
	count(c->slot, why != NULL, out, in);
end:
	free(b);
	free(r);
	rconn_end(c);
	return NULL;
}

static void accept_one(uint32_t slot)
{
	pthread_mutex_lock(&netd.lock);
	ssize_t i = lis_find(slot);
	/* the accept under the lock: a listener closed meanwhile cannot
	 * have its number taken by another file */
	int fd = i >= 0 ? accept4(lis[i].fd, NULL, NULL, SOCK_CLOEXEC) : -1;
	unsigned mine = 0;
	for (struct rconn *c = rconns; c && fd >= 0; c = c->next)
		mine += c->slot == slot;
	struct rconn *c = NULL;
	if (fd >= 0 && nrconns < TOTAL_MAX && mine < PER_SANDBOX_MAX && (c = calloc(1, sizeof(*c)))) {
		c->client = fd;
		c->server = -1;
		c->slot = slot;
		c->next = rconns;
		rconns = c;
		nrconns++;
		netd.active_proxied++;
	}
	pthread_mutex_unlock(&netd.lock);
	if (fd < 0)
		return;
	if (!c) {
		/* too many: a reset, never a hang */
		struct linger l = { .l_onoff = 1, .l_linger = 0 };
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		close(fd);
		return;
	}
	if (netd_thread(conn_main, c) != 0)
		rconn_end(c);
}

static void *accept_main(void *arg)
{
	(void)arg;
	struct epoll_event ev[64];
	for (;;) {
		int k = epoll_wait(ep, ev, ELEMENTSOF(ev), -1);
		for (int i = 0; i < k; i++)
			accept_one(ev[i].data.u32);
	}
	return NULL;
}

int relay_start(abox_error *err)
{
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return abox_error_set(err, errno, "relay: epoll");
	if (netd_thread(accept_main, NULL) != 0)
		return abox_error_setx(err, EAGAIN, "relay: thread");
	return 0;
}

int relay_attach(struct sbx *s, int netns_fd, abox_error *err)
{
	int fd = net_listen_in(netns_fd, netd.cfg.relay_port, err);
	if (fd < 0)
		return abox_error_prefix(err, "relay");
	ssize_t i = lis_find(s->slot);
	if (i >= 0)
		lis_close((size_t)i);
	if (nlis == caplis) {
		size_t cap = caplis ? caplis * 2 : 64;
		struct listener *v = realloc(lis, cap * sizeof(*v));
		if (!v) {
			close(fd);
			return abox_error_set(err, ENOMEM, "relay");
		}
		lis = v;
		caplis = cap;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = s->slot };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int e = errno;
		close(fd);
		return abox_error_set(err, e, "relay: epoll");
	}
	lis[nlis++] = (struct listener){ .slot = s->slot, .fd = fd };
	sbx_applied(s);
	return 0;
}

void relay_remove(uint32_t slot)
{
	ssize_t i = lis_find(slot);
	if (i >= 0)
		lis_close((size_t)i);
	for (struct rconn *c = rconns; c; c = c->next)
		if (c->slot == slot) {
			shutdown(c->client, SHUT_RDWR);
			if (c->server >= 0)
				shutdown(c->server, SHUT_RDWR);
		}
}

int relay_reattach(struct sbx *s, abox_error *err)
{
	struct sb_state st = { 0 };
	int r = state_read(netd.state_dir, s->id, &st, err);
	uint64_t start = 0;
	pid_t pid = r >= 0 ? st.pid : 0;
	bool alive = r >= 0 && pid > 0 && proc_start_time(pid, &start) == 0 && start == st.pid_start;
	sb_state_free(&st);
	if (r < 0)
		return r;
	if (!alive)
		return abox_error_setx(err, ESRCH, "its init is gone");
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/ns/net", (int)pid);
	int ns = open(p, O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		return abox_error_set(err, errno, "open %s", p);
	r = relay_attach(s, ns, err);
	close(ns);
	return r;
}
