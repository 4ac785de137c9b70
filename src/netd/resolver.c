/* netd/resolver.c — DNS as policy. Every port-53 packet a sandbox sends,
 * to any address, is redirected here by the table (nft.h), and the
 * sandbox is known by its source address (spoofing one is dropped
 * before the redirect). A name the sandbox's policy does not allow never
 * leaves the host: in a sandbox that may reach nothing by name the
 * answer is REFUSED, in one with allowed names NXDOMAIN — so neither
 * long labels, TXT queries, TCP nor another resolver's address carries
 * data out. Allowed names are forwarded to the host's resolvers (the
 * config's); answers holding an address of the always-denied ranges
 * are emptied (DNS rebinding: an allowed name pointed at the host's
 * network or the metadata service); the addresses of names allowed by
 * name are taught to the kernel (the sandbox's learned set, for at least
 * their TTL) so any protocol reaches them; AAAA questions get no answer
 * (sandboxes have no IPv6).
 * Runs in abox-netd: a thread for UDP (one loop, a socket per query
 * forwarded, so a spoofed answer must guess port and id), a thread per
 * TCP client (bounded). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "dns.h"
#include "netd.h"
#include "nft.h"
#include "resolver.h"
#include "workers.h"
#include "splice.h"

/* A UDP query unanswered this long is sent again, once, to the same
 * resolver (same socket and id: either answer does), before the rest of
 * RESOLVER_UPSTREAM_TIMEOUT_MS: a lost packet then costs under a second, not a
 * SERVFAIL and the client's own retry seconds later. */
#define UPSTREAM_RESEND_MS 800
#define PENDING_MAX 2048
#define PENDING_PER_SANDBOX 128
#define TCP_CLIENTS_MAX 64
#define LEARN_MIN_S 300

enum verdict {
	V_FORWARD,
	V_REFUSED,
	V_NXDOMAIN,
	V_NODATA,
	V_FORMERR
};

/* What the policy says of a query from addr; *slot and *listed (the name
 * is allowed by a pattern, so its addresses are learned) filled. Counts
 * the query. */
static enum verdict decide(uint32_t addr, int parsed, const struct dns_query *q, uint32_t *slot, bool *listed,
			   char ifname[IFNAMSIZ])
{
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = sbx_by_addr(addr);
	enum verdict v;
	*listed = false;
	if (!s) {
		v = V_REFUSED;
	} else if (parsed == -EINVAL) {
		v = V_FORMERR;
	} else if (parsed < 0) {
		v = V_REFUSED;
	} else if (!net_policy_name_allowed(&s->policy, q->name)) {
		/* nothing by name at all: refused; some names: this one does
		 * not exist as far as the sandbox can tell */
		v = s->policy.nnames ? V_NXDOMAIN : V_REFUSED;
	} else {
		*listed = s->policy.deny_all && net_policy_name_listed(&s->policy, q->name);
		v = q->qtype == DNS_TYPE_AAAA ? V_NODATA : V_FORWARD;
	}
	if (s) {
		*slot = s->slot;
		memcpy(ifname, s->ifname, IFNAMSIZ);
		s->c.dns_queries++;
		netd.total.dns_queries++;
		if (v != V_FORWARD && v != V_NODATA) {
			s->c.dns_refused++;
			netd.total.dns_refused++;
		}
		netd.last_busy_ms = clock_mono_ms();
	}
	pthread_mutex_unlock(&netd.lock);
	if (s && (v == V_REFUSED || v == V_NXDOMAIN) && netd_log_allowed()) {
		netd_log("%s: DNS %s for '%.200s' (not allowed by its egress policy)", s->id,
			 v == V_REFUSED ? "refused" : "NXDOMAIN", q->name);
	}
	return v;
}

static void count(uint32_t slot, bool rebind)
{
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = sbx_get(slot);
	if (s && rebind)
		s->c.dns_rebind++;
	if (rebind)
		netd.total.dns_rebind++;
	pthread_mutex_unlock(&netd.lock);
}

struct scan {
	uint32_t addrs[32];
	size_t n;
	uint32_t min_ttl;
	bool denied;
};

static int scan_a(uint32_t addr, uint32_t ttl, void *ud)
{
	struct scan *s = ud;
	if (net_addr_always_denied(addr))
		s->denied = true;
	else if (s->n < ELEMENTSOF(s->addrs))
		s->addrs[s->n++] = addr;
	if (ttl < s->min_ttl)
		s->min_ttl = ttl;
	return 0;
}

size_t resolver_finish(uint32_t slot, const char *ifname, bool listed, const uint8_t *query, size_t qend,
		       uint8_t *resp, size_t n, size_t cap, struct nft *learn)
{
	struct scan sc = { .min_ttl = UINT32_MAX };
	if (dns_each_a(resp, n, scan_a, &sc) < 0)
		return dns_answer_empty(query, qend, DNS_RCODE_SERVFAIL, resp, cap);
	if (sc.denied) {
		/* an allowed name that points into the host's or anyone's
		 * private network: no answer at all */
		count(slot, true);
		netd_log("slot %u: DNS answer with a private or reserved address dropped (rebinding)", slot);
		return dns_answer_empty(query, qend, DNS_RCODE_NOERROR, resp, cap);
	}
	if (listed && sc.n && learn) {
		uint64_t ttl = sc.min_ttl < LEARN_MIN_S ? LEARN_MIN_S : sc.min_ttl;
		abox_error e = ABOX_ERROR_INIT;
		/* under the lock a policy change holds: what it forgets
		 * (netd's list of what was learned) and the kernel's set
		 * stay in step */
		pthread_mutex_lock(&netd.lock);
		int r = nft_learned_add(learn, ifname, sc.addrs, sc.n, ttl * 1000, &e);
		struct sbx *s = sbx_get(slot);
		if (s)
			sbx_learn(s, sc.addrs, sc.n, ttl * 1000);
		pthread_mutex_unlock(&netd.lock);
		if (r < 0)
			netd_log("slot %u: %s", slot, e.msg);
	}
	return n;
}

int resolver_lookup_a(const char *name, uint32_t *addrs, size_t max, size_t *n)
{
	uint8_t qb[512], ans[4096];
	size_t qn = dns_build_query(name, DNS_TYPE_A, 0, qb, sizeof(qb));
	struct dns_query q;
	if (!qn || dns_parse_query(qb, qn, &q) < 0)
		return -EINVAL;
	ssize_t got = resolver_ask(&q, qb, qn, ans, sizeof(ans));
	if (got < 0)
		return (int)got;
	if (dns_rcode(ans, (size_t)got) == DNS_RCODE_NXDOMAIN)
		return -ENOENT;
	struct scan sc = { .min_ttl = UINT32_MAX };
	if (dns_each_a(ans, (size_t)got, scan_a, &sc) < 0)
		return -EPROTO;
	*n = 0;
	for (size_t i = 0; i < sc.n && *n < max; i++)
		addrs[(*n)++] = sc.addrs[i];
	/* every address private: the name leads nowhere a sandbox may go */
	return *n ? 0 : sc.denied ? -EACCES : -ENOENT;
}

/* One query from a sandbox, answered synchronously (TCP). */
static size_t answer_sync(uint32_t src, const uint8_t *m, size_t n, uint8_t *out, size_t cap,
			  struct nft *learn)
{
	struct dns_query q;
	int parsed = dns_parse_query(m, n, &q);
	uint32_t slot = 0;
	bool listed;
	char ifname[IFNAMSIZ];
	enum verdict v = decide(src, parsed, &q, &slot, &listed, ifname);
	if (parsed == -EINVAL && n < 12)
		return 0;
	size_t qend = parsed < 0 ? 12 : q.qend;
	switch (v) {
	case V_FORMERR:
		return dns_answer_empty(m, 12, DNS_RCODE_FORMERR, out, cap);
	case V_REFUSED:
		return dns_answer_empty(m, qend, DNS_RCODE_REFUSED, out, cap);
	case V_NXDOMAIN:
		return dns_answer_empty(m, qend, DNS_RCODE_NXDOMAIN, out, cap);
	case V_NODATA:
		return dns_answer_empty(m, qend, DNS_RCODE_NOERROR, out, cap);
	case V_FORWARD:
		break;
	}
	ssize_t got = resolver_ask(&q, m, n, out, cap);
	if (got < 0)
		return dns_answer_empty(m, qend, DNS_RCODE_SERVFAIL, out, cap);
	return resolver_finish(slot, ifname, listed, m, qend, out, (size_t)got, cap, learn);
}

/* ---- TCP clients ------------------------------------------------------------ */

static unsigned tcp_clients;

struct tcp_client {
	int fd;
	uint32_t src;
};

static bool read_exact(int fd, uint8_t *b, size_t n)
{
	size_t got = 0;
	while (got < n) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 10000) <= 0)
			return false;
		ssize_t r = recv(fd, b + got, n - got, 0);
		if (r <= 0)
			return r < 0 && errno == EINTR ? true : false;
		got += (size_t)r;
	}
	return true;
}

static void *tcp_main(void *arg)
{
	struct tcp_client c = *(struct tcp_client *)arg;
	free(arg);
	uint8_t *in = malloc(DNS_MSG_MAX), *out = malloc(DNS_MSG_MAX + 2);
	struct nft learn;
	bool have_nft = nft_open(&learn, netd.cfg.table, NULL) >= 0;
	/* RFC 7766: several queries a connection, one at a time here */
	for (int k = 0; in && out && k < 64; k++) {
		uint8_t lb[2];
		if (!read_exact(c.fd, lb, 2))
			break;
		size_t len = (size_t)lb[0] << 8 | lb[1];
		if (len < 12 || !read_exact(c.fd, in, len))
			break;
		size_t an = answer_sync(c.src, in, len, out + 2, DNS_MSG_MAX, have_nft ? &learn : NULL);
		if (!an)
			break;
		out[0] = (uint8_t)(an >> 8);
		out[1] = (uint8_t)an;
		if (write_full(c.fd, out, an + 2) < 0)
			break;
	}
	if (have_nft)
		nft_close(&learn);
	free(in);
	free(out);
	close(c.fd);
	pthread_mutex_lock(&netd.lock);
	tcp_clients--;
	pthread_mutex_unlock(&netd.lock);
	return NULL;
}

/* ---- UDP: one loop, queries forwarded without waiting ---------------------- */

struct pending {
	int fd; /* the upstream socket, or -1 when free */
	uint16_t id; /* ours, on the upstream query */
	struct sockaddr_in client;
	uint32_t slot;
	char ifname[IFNAMSIZ];
	bool listed;
	struct dns_query q;
	uint8_t query[512 + 12];
	size_t qlen;
	unsigned resolver;
	bool resent; /* to the current resolver */
	int64_t deadline_ms;
};

static struct pending *pend;
static int udp_fd = -1, ep = -1;
static struct nft udp_nft;
static bool udp_nft_ok;

static void pending_close(struct pending *p)
{
	if (p->fd >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, p->fd, NULL);
		close(p->fd);
	}
	p->fd = -1;
}

static void reply(const struct sockaddr_in *to, const uint8_t *m, size_t n)
{
	if (n)
		(void)sendto(udp_fd, m, n, MSG_DONTWAIT, (const struct sockaddr *)to, sizeof(*to));
}

/* A reply that comes after the query was handled (the upstream's answer,
 * or SERVFAIL at the deadline): only while the sandbox that asked still
 * holds its slot (sbx_known: no reload of a slot file its creator has not
 * released yet), checked and sent under netd's lock so that its removal
 * (control.c do_remove, which flushes its flows under the same lock)
 * comes wholly before or after. After the flush, a reply would make a new
 * conntrack entry toward an address that is gone, left until the kernel
 * times it out, or, the slot given again, hand another sandbox's answer
 * to the next sandbox at that address. */
static void reply_late(const struct pending *p, const uint8_t *m, size_t n)
{
	pthread_mutex_lock(&netd.lock);
	const struct sbx *s = sbx_known(p->slot);
	if (s && s->attached && strcmp(s->ifname, p->ifname) == 0)
		reply(&p->client, m, n);
	pthread_mutex_unlock(&netd.lock);
}

/* Sends p's query to its next resolver; false when none is left. */
static bool pending_send(struct pending *p)
{
	while (p->resolver < netd.cfg.nresolvers) {
		int fd = resolver_upstream_socket(p->resolver++, SOCK_DGRAM);
		if (fd < 0)
			continue;
		p->id = resolver_query_id();
		uint8_t m[sizeof(p->query)];
		memcpy(m, p->query, p->qlen);
		m[0] = (uint8_t)(p->id >> 8);
		m[1] = (uint8_t)p->id;
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = p };
		if (send(fd, m, p->qlen, 0) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			continue;
		}
		p->fd = fd;
		p->resent = false;
		p->deadline_ms = clock_mono_ms() + UPSTREAM_RESEND_MS;
		return true;
	}
	return false;
}

static unsigned pending_of(uint32_t slot)
{
	unsigned n = 0;
	for (size_t i = 0; i < PENDING_MAX; i++)
		n += pend[i].fd >= 0 && pend[i].slot == slot;
	return n;
}

static void udp_query(void)
{
	uint8_t m[4096], out[4096];
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	ssize_t n = recvfrom(udp_fd, m, sizeof(m), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
	if (n < 12 || from.sin_family != AF_INET)
		return;
	struct dns_query q;
	int parsed = dns_parse_query(m, (size_t)n, &q);
	uint32_t slot = 0;
	bool listed;
	char ifname[IFNAMSIZ];
	enum verdict v = decide(from.sin_addr.s_addr, parsed, &q, &slot, &listed, ifname);
	size_t qend = parsed < 0 ? 12 : q.qend;
	switch (v) {
	case V_FORMERR:
		reply(&from, out, dns_answer_empty(m, 12, DNS_RCODE_FORMERR, out, sizeof(out)));
		return;
	case V_REFUSED:
		reply(&from, out, dns_answer_empty(m, qend, DNS_RCODE_REFUSED, out, sizeof(out)));
		return;
	case V_NXDOMAIN:
		reply(&from, out, dns_answer_empty(m, qend, DNS_RCODE_NXDOMAIN, out, sizeof(out)));
		return;
	case V_NODATA:
		reply(&from, out, dns_answer_empty(m, qend, DNS_RCODE_NOERROR, out, sizeof(out)));
		return;
	case V_FORWARD:
		break;
	}
	struct pending *p = NULL;
	for (size_t i = 0; i < PENDING_MAX && !p; i++)
		if (pend[i].fd < 0)
			p = &pend[i];
	/* a sandbox that floods gets refused, not everyone's slots */
	if (!p || (size_t)n > sizeof(p->query) || pending_of(slot) >= PENDING_PER_SANDBOX) {
		reply(&from, out, dns_answer_empty(m, qend, DNS_RCODE_REFUSED, out, sizeof(out)));
		return;
	}
	p->client = from;
	p->slot = slot;
	memcpy(p->ifname, ifname, IFNAMSIZ);
	p->listed = listed;
	p->q = q;
	memcpy(p->query, m, (size_t)n);
	p->qlen = (size_t)n;
	p->resolver = 0;
	if (!pending_send(p))
		reply(&from, out, dns_answer_empty(m, qend, DNS_RCODE_SERVFAIL, out, sizeof(out)));
}

static void udp_answer(struct pending *p)
{
	uint8_t out[4096];
	ssize_t n = recv(p->fd, out, sizeof(out), MSG_DONTWAIT);
	if (n <= 0 || !dns_answers(out, (size_t)n, &p->q, p->id))
		return; /* not the answer: keep waiting until the deadline */
	memcpy(out, p->query, 2);
	size_t len = resolver_finish(p->slot, p->ifname, p->listed, p->query, p->q.qend, out, (size_t)n,
				     sizeof(out), udp_nft_ok ? &udp_nft : NULL);
	reply_late(p, out, len);
	pending_close(p);
}

static void udp_timeouts(void)
{
	int64_t now = clock_mono_ms();
	for (size_t i = 0; i < PENDING_MAX; i++) {
		struct pending *p = &pend[i];
		if (p->fd < 0 || p->deadline_ms > now)
			continue;
		if (!p->resent) {
			uint8_t m[sizeof(p->query)];
			memcpy(m, p->query, p->qlen);
			m[0] = (uint8_t)(p->id >> 8);
			m[1] = (uint8_t)p->id;
			(void)send(p->fd, m, p->qlen, MSG_DONTWAIT);
			p->resent = true;
			p->deadline_ms = now + RESOLVER_UPSTREAM_TIMEOUT_MS - UPSTREAM_RESEND_MS;
			continue;
		}
		pending_close(p);
		if (!pending_send(p)) {
			uint8_t out[1024];
			reply_late(
				p, out,
				dns_answer_empty(p->query, p->q.qend, DNS_RCODE_SERVFAIL, out, sizeof(out)));
		}
	}
}

static int tcp_fd = -1;

static void tcp_accept(void)
{
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	int c = accept4(tcp_fd, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC);
	if (c < 0)
		return;
	pthread_mutex_lock(&netd.lock);
	bool room = tcp_clients < TCP_CLIENTS_MAX;
	if (room)
		tcp_clients++;
	pthread_mutex_unlock(&netd.lock);
	struct tcp_client *tc = room ? malloc(sizeof(*tc)) : NULL;
	if (tc) {
		tc->fd = c;
		tc->src = from.sin_addr.s_addr;
		if (netd_thread(tcp_main, tc) == 0)
			return;
		free(tc);
	}
	if (room) {
		pthread_mutex_lock(&netd.lock);
		tcp_clients--;
		pthread_mutex_unlock(&netd.lock);
	}
	close(c);
}

static void *udp_main(void *arg)
{
	(void)arg;
	struct epoll_event evs[64];
	for (;;) {
		int n = epoll_wait(ep, evs, ELEMENTSOF(evs), 250);
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == &udp_fd)
				udp_query();
			else if (evs[i].data.ptr == &tcp_fd)
				tcp_accept();
			else
				udp_answer(evs[i].data.ptr);
		}
		udp_timeouts();
	}
	return NULL;
}

int resolver_listen(int type, uint16_t port, abox_error *err)
{
	int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return abox_error_set(err, errno, "socket");
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* every gateway address of the pool, so 0.0.0.0: the table keeps
	 * everyone but sandboxes out (nft.h) */
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 256) < 0)) {
		int e = errno;
		close(fd);
		return abox_error_set(err, e, "listen on port %u", port);
	}
	return fd;
}

int resolver_start(abox_error *err)
{
	if (!(pend = calloc(PENDING_MAX, sizeof(*pend))))
		return abox_error_set(err, ENOMEM, "resolver");
	for (size_t i = 0; i < PENDING_MAX; i++)
		pend[i].fd = -1;
	if ((udp_fd = resolver_listen(SOCK_DGRAM, netd.cfg.dns_port, err)) < 0 ||
	    (tcp_fd = resolver_listen(SOCK_STREAM, netd.cfg.dns_port, err)) < 0)
		return abox_error_prefix(err, "resolver");
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return abox_error_set(err, errno, "resolver: epoll");
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &udp_fd };
	epoll_ctl(ep, EPOLL_CTL_ADD, udp_fd, &ev);
	ev.data.ptr = &tcp_fd;
	epoll_ctl(ep, EPOLL_CTL_ADD, tcp_fd, &ev);
	udp_nft_ok = nft_open(&udp_nft, netd.cfg.table, NULL) >= 0;
	if (netd.cfg.nresolvers == 0)
		netd_log("no upstream resolver (none in the config or /etc/resolv.conf): names will not "
			 "resolve");
	pthread_t t;
	int r = pthread_create(&t, NULL, udp_main, NULL);
	if (r)
		return abox_error_set(err, r, "resolver: thread");
	pthread_detach(t);
	return 0;
}
