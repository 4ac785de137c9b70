/* netd/main.c — abox-netd's start: one per state folder and network
 * namespace (the control socket's abstract name says which; a second
 * one finds it taken and leaves), its config read from the state
 * folder, the table reconciled with the slots on record (elements of
 * sandboxes no slot names removed, missing ones restored), then its
 * threads; it leaves once no sandbox has been served for a while.
 *   abox-netd --state DIR
 *   abox-netd --check --state DIR   what this host offers egress (for
 *       `abox doctor`: one line a finding, "ok|no NAME DETAIL"), and exit
 *   ABOX_NETD_IDLE_S  seconds without sandboxes before it leaves (60);
 *       its spare namespaces (spares.h) go with it
 * Runs as its own process, started by the library (net/client.c). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "attach.h"
#include "base/clock.h"
#include "net/net.h"
#include "net/slots.h"
#include "netd.h"
#include "nft.h"
#include "relay.h"
#include "spares.h"

static int listen_control(abox_error *err)
{
	struct sockaddr_un sa;
	unsigned len;
	net_netd_address(netd.state_dir, &sa, &len);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return abox_error_set(err, errno, "control socket");
	if (bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, 64) < 0) {
		int e = errno;
		close(fd);
		return abox_error_set(err, e, "bind the control socket");
	}
	return fd;
}

/* Whether a netd that serves answers on the control socket's name. The
 * name taken says another netd holds it, not that it serves: one asked to
 * stop (or leaving idle) keeps it until its process is gone, and a create
 * that met it leaving started this one, which must not leave too (the
 * create would find no netd at all). */
static bool holder_serves(void)
{
	struct sockaddr_un sa;
	unsigned len;
	net_netd_address(netd.state_dir, &sa, &len);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	static const char ask[] = "{\"op\":\"status\"}";
	char buf[512];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	bool ok = connect(fd, (struct sockaddr *)&sa, len) == 0 && send(fd, ask, sizeof(ask) - 1, 0) > 0 &&
		  poll(&p, 1, 1000) == 1 && recv(fd, buf, sizeof(buf), 0) > 0;
	close(fd);
	return ok;
}

/* The control socket, once the name is free (5 s at most); *served when
 * a netd that serves holds it (then -EADDRINUSE). */
static int listen_when_free(bool *served, abox_error *err)
{
	int lfd = listen_control(err);
	for (int i = 0; lfd == -EADDRINUSE && i < 250; i++) {
		if ((*served = holder_serves()))
			return lfd;
		usleep(20000);
		*err = (abox_error)ABOX_ERROR_INIT;
		lfd = listen_control(err);
	}
	return lfd;
}

/* The table as the slots say: every recorded sandbox's elements put back
 * (purged first: what was there may be of an older policy), and the
 * elements of interfaces no slot names removed. */
static void reconcile(void)
{
	abox_error e = ABOX_ERROR_INIT;
	pthread_mutex_lock(&netd.lock);
	if (sbx_load_all(&e) < 0)
		netd_log("reconcile: %s", e.msg);
	if (netd.relay) {
		/* the listeners went with the netd before: made again in
		 * each sandbox still running */
		for (size_t i = 0; i < netd.nsbx; i++) {
			e = (abox_error)ABOX_ERROR_INIT;
			if (relay_reattach(netd.sbx[i], &e) < 0)
				netd_log("%s: reconcile: %s", netd.sbx[i]->id, e.msg);
		}
		netd.last_busy_ms = clock_mono_ms();
		pthread_mutex_unlock(&netd.lock);
		return;
	}
	if (netd.nsbx && attach_table(&netd.cfg, netd.uplink, &e) < 0)
		netd_log("reconcile: %s", e.msg);
	for (size_t i = 0; i < netd.nsbx; i++) {
		struct sbx *s = netd.sbx[i];
		e = (abox_error)ABOX_ERROR_INIT;
		if (attach_repolicy(&netd.cfg, s->id, s->slot, NULL, &s->policy, false, NULL, 0, &e) < 0) {
			netd_log("%s: reconcile: %s", s->id, e.msg);
			continue;
		}
		sbx_applied(s);
		sbx_learned_none(s); /* the purge took its learned addresses too */
	}
	struct nft n;
	char **ifaces = NULL;
	if (nft_open(&n, netd.cfg.table, &e) >= 0) {
		if (nft_ifaces(&n, &ifaces, &e) >= 0) {
			for (size_t i = 0; ifaces[i]; i++) {
				bool known = false;
				for (size_t k = 0; k < netd.nsbx && !known; k++)
					known = !strcmp(netd.sbx[k]->ifname, ifaces[i]);
				if (!known) {
					netd_log("reconcile: removing the elements of '%s' (no sandbox on "
						 "record)",
						 ifaces[i]);
					(void)nft_sandbox_purge(&n, ifaces[i], NULL);
				}
			}
			strv_free(ifaces);
		}
		nft_close(&n);
	}
	netd.last_busy_ms = clock_mono_ms();
	pthread_mutex_unlock(&netd.lock);
}

static void finding(bool ok, const char *name, const char *fmt, ...) _printf_(3, 4);
static void finding(bool ok, const char *name, const char *fmt, ...)
{
	char d[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d, sizeof(d), fmt, ap);
	va_end(ap);
	printf("%s %s %s\n", ok ? "ok" : "no", name, d);
}

/* What egress needs, probed for real: the capability, netlink for links
 * and for nftables, the uplink and the resolvers. */
static int check_host(const char *state)
{
	abox_error e = ABOX_ERROR_INIT;
	struct net_config c;
	if (net_config_load(state, &c, &e) < 0) {
		finding(false, "network-config", "%s", e.msg);
		return 1;
	}
	char pool[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &c.pool, pool, sizeof(pool));
	finding(true, "network-config",
		"%s: pool %s/%u (%u sandboxes), %u spare namespaces, table %s, resolver port %u, proxy port "
		"%u",
		*c.path ? c.path : "defaults (no network.json)", pool, c.pool_prefix, net_config_slots(&c),
		c.spares, c.table, c.dns_port, c.proxy_port);
	bool admin = net_can_admin();
	if (!admin) {
		/* nothing below is used: say what is */
		finding(false, "net-admin",
			"no CAP_NET_ADMIN: egress is relayed, proxy only: an HTTP proxy and SOCKS5 on each "
			"sandbox's 127.0.0.1:%u (HTTP_PROXY, HTTPS_PROXY and ALL_PROXY set), decided by its "
			"policy; programs that ignore proxy variables reach nothing",
			c.relay_port);
		finding(c.nresolvers > 0, "resolvers", "%s",
			c.nresolvers
				? "the relay resolves names through the host's resolvers"
				: "none (no \"resolvers\" in network.json, none in /etc/resolv.conf): names "
				  "will not resolve");
		return 0;
	}
	finding(admin, "net-admin", "%s", "CAP_NET_ADMIN: sandboxes get a veth, NAT and the table");
	struct nft n;
	int r = nft_open(&n, c.table, &e);
	if (r >= 0)
		r = nft_table_present(&n, &e);
	finding(r >= 0, "nftables", "%s",
		r < 0 ? e.msg
		: r   ? "reachable; abox's table is in place"
		      : "reachable; abox's table is made with the first sandbox");
	if (n.sock)
		nft_close(&n);
	char up[IFNAMSIZ];
	e = (abox_error)ABOX_ERROR_INIT;
	r = attach_uplink(&c, up, &e);
	finding(r >= 0, "uplink", "%s%s", r >= 0 ? up : e.msg,
		r >= 0 ? (c.uplink[0] ? " (configured)" : " (the default route's)") : "");
	if (c.nresolvers) {
		char list[256] = "";
		for (unsigned i = 0; i < c.nresolvers; i++) {
			char a[INET_ADDRSTRLEN];
			inet_ntop(AF_INET, &c.resolvers[i], a, sizeof(a));
			size_t l = strlen(list);
			snprintf(list + l, sizeof(list) - l, "%s%s:%u", i ? ", " : "", a,
				 c.resolver_ports[i]);
		}
		finding(true, "resolvers", "sandboxes' DNS forwarded to %s", list);
	} else {
		finding(false, "resolvers",
			"none (no \"resolvers\" in network.json, none in /etc/resolv.conf): names will not "
			"resolve");
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *state = NULL;
	bool check = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--state") && i + 1 < argc)
			state = argv[++i];
		else if (!strcmp(argv[i], "--check"))
			check = true;
		else {
			fprintf(stderr, "usage: abox-netd [--check] --state DIR\n");
			return 2;
		}
	}
	if (!state || state[0] != '/') {
		fprintf(stderr, "abox-netd: --state takes an absolute path\n");
		return 2;
	}
	if (check)
		return check_host(state);
	signal(SIGPIPE, SIG_IGN);
	netd.state_dir = state;
	abox_error e = ABOX_ERROR_INIT;
	if (net_config_load(state, &netd.cfg, &e) < 0) {
		fprintf(stderr, "abox-netd: %s\n", e.msg);
		return 1;
	}
	netd.relay = !net_can_admin();
	bool served = false;
	int lfd = listen_when_free(&served, &e);
	if (served) /* another netd serves this state folder here */
		return 0;
	if (lfd < 0) {
		fprintf(stderr, "abox-netd: %s\n", e.msg);
		return 1;
	}
	if (netd.relay) {
		/* no listener on the host: without the table nothing would
		 * keep the world away from a resolver or proxy there */
		netd_log("serving %s without CAP_NET_ADMIN: egress relayed on each sandbox's 127.0.0.1:%u",
			 state, netd.cfg.relay_port);
		if (relay_start(&e) < 0) {
			netd_log("%s", e.msg);
			return 1;
		}
	} else {
		if (attach_uplink(&netd.cfg, netd.uplink, &e) < 0)
			netd_log("%s (sandboxes cannot be given networking until there is one)", e.msg);
		netd_log("serving %s: uplink %s, table %s, resolver port %u, proxy port %u", state,
			 netd.uplink[0] ? netd.uplink : "(none)", netd.cfg.table, netd.cfg.dns_port,
			 netd.cfg.proxy_port);
	}
	/* files made ahead by a netd before (killed): this one's own */
	net_slot_premade_clear(state);
	reconcile();
	if ((!netd.relay &&
	     (resolver_start(&e) < 0 || proxy_start(&e) < 0 || spares_start(netd.cfg.spares, &e) < 0)) ||
	    control_start(lfd, &e) < 0) {
		netd_log("%s", e.msg);
		return 1;
	}
	const char *idle_env = getenv("ABOX_NETD_IDLE_S");
	int64_t idle_ms = (idle_env && *idle_env ? atoll(idle_env) : 60) * 1000;
	int64_t scanned_ms = clock_mono_ms();
	for (;;) {
		sleep(1);
		pthread_mutex_lock(&netd.lock);
		/* the slot files read again (under the lock, one stat each:
		 * ≈ 1 ms with a thousand sandboxes) only when none is known,
		 * to find one before leaving, and every 30 s to let go of
		 * those freed without a word to netd; requests load the slot
		 * they name themselves */
		if (netd.nsbx == 0 || clock_mono_ms() - scanned_ms > 30000) {
			(void)sbx_load_all(NULL);
			scanned_ms = clock_mono_ms();
		}
		bool idle = netd.nsbx == 0 && netd.active_proxied == 0 && netd.nconns == 0 &&
			    clock_mono_ms() - netd.last_busy_ms > idle_ms;
		netd.leaving |= idle;
		pthread_mutex_unlock(&netd.lock);
		if (idle) {
			netd_log("no sandbox to serve: leaving");
			net_slot_premade_clear(state);
			return 0;
		}
	}
}
