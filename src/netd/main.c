/* netd/main.c — abox-netd's start: one per state folder and network
 * namespace (the control socket's abstract name says which; a second
 * one finds it taken and leaves), its config read from the state
 * folder, the table reconciled with the slots on record (elements of
 * sandboxes no slot names removed, missing ones restored), then its
 * threads; it leaves once no sandbox has been served for a while.
 *   abox-netd --state DIR
 *   ABOX_NETD_IDLE_S  seconds without sandboxes before it leaves (60)
 * Runs as its own process, started by the library (net/client.c). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "attach.h"
#include "base/clock.h"
#include "netd.h"
#include "nft.h"

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

/* The table as the slots say: every recorded sandbox's elements put back
 * (purged first: what was there may be of an older policy), and the
 * elements of interfaces no slot names removed. */
static void reconcile(void)
{
	abox_error e = ABOX_ERROR_INIT;
	pthread_mutex_lock(&netd.lock);
	if (sbx_load_all(&e) < 0)
		netd_log("reconcile: %s", e.msg);
	if (netd.nsbx && attach_table(&netd.cfg, netd.uplink, &e) < 0)
		netd_log("reconcile: %s", e.msg);
	for (size_t i = 0; i < netd.nsbx; i++) {
		struct sbx *s = netd.sbx[i];
		e = (abox_error)ABOX_ERROR_INIT;
		if (attach_repolicy(&netd.cfg, s->id, s->slot, NULL, &s->policy, &e) < 0) {
			netd_log("%s: reconcile: %s", s->id, e.msg);
			continue;
		}
		char *j = net_policy_json(&s->policy);
		if (!j || net_policy_parse(j, &s->applied, NULL) < 0)
			memset(&s->applied, 0, sizeof(s->applied));
		free(j);
		s->attached = true;
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
					netd_log("reconcile: removing the elements of '%s' (no sandbox on record)", ifaces[i]);
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

int main(int argc, char **argv)
{
	const char *state = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--state") && i + 1 < argc)
			state = argv[++i];
		else {
			fprintf(stderr, "usage: abox-netd --state DIR\n");
			return 2;
		}
	}
	if (!state || state[0] != '/') {
		fprintf(stderr, "abox-netd: --state takes an absolute path\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	netd.state_dir = state;
	abox_error e = ABOX_ERROR_INIT;
	if (net_config_load(state, &netd.cfg, &e) < 0) {
		fprintf(stderr, "abox-netd: %s\n", e.msg);
		return 1;
	}
	int lfd = listen_control(&e);
	if (lfd < 0) {
		/* EADDRINUSE: another netd serves this state folder here */
		if (-lfd == EADDRINUSE)
			return 0;
		fprintf(stderr, "abox-netd: %s\n", e.msg);
		return 1;
	}
	if (attach_uplink(&netd.cfg, netd.uplink, &e) < 0)
		netd_log("%s (sandboxes cannot be given networking until there is one)", e.msg);
	netd_log("serving %s: uplink %s, table %s, resolver port %u, proxy port %u", state,
		 netd.uplink[0] ? netd.uplink : "(none)", netd.cfg.table, netd.cfg.dns_port, netd.cfg.proxy_port);
	reconcile();
	if (resolver_start(&e) < 0 || proxy_start(&e) < 0 || control_start(lfd, &e) < 0) {
		netd_log("%s", e.msg);
		return 1;
	}
	const char *idle_env = getenv("ABOX_NETD_IDLE_S");
	int64_t idle_ms = (idle_env && *idle_env ? atoll(idle_env) : 60) * 1000;
	for (;;) {
		sleep(1);
		pthread_mutex_lock(&netd.lock);
		(void)sbx_load_all(NULL);
		bool idle = netd.nsbx == 0 && netd.active_proxied == 0 && clock_mono_ms() - netd.last_busy_ms > idle_ms;
		pthread_mutex_unlock(&netd.lock);
		if (idle) {
			netd_log("no sandbox to serve: leaving");
			return 0;
		}
	}
}
