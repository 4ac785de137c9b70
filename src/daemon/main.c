/* aboxd — see daemon.h and docs/daemon.md.
 *
 *   aboxd [--config FILE] [--listen ADDR] [--port N]
 *
 * Start-up and shutdown: the options (which win over the config file,
 * config.c), the admission limits (the ABOXD_LIMIT_* environment wins
 * over the file's "limits"), the listeners (API on TCP and a unix
 * socket, metrics on the admin one), the threads that enforce deadlines
 * and keep house, and a stop on SIGTERM/SIGINT. Requests are router.c's.
 * Runs as root on the host. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "access_log.h"
#include "auth.h"
#include "admission.h"
#include "daemon.h"
#include "conns.h"
#include "metrics.h"
#include "router.h"

/* What the library says while reaping (a sandbox frozen or paused at its
 * deadline, a pause that failed and why, a dead maker's freeze undone)
 * goes to stderr: these happen with no request to answer. */
static void reaper_log(abox_log_level level, const char *msg, void *ud)
{
	(void)ud;
	if (level <= ABOX_LOG_INFO)
		fprintf(stderr, "aboxd: %s%s\n", level <= ABOX_LOG_WARNING ? "warning: " : "", msg);
}

static abox_ctx *reaper_ctx(void)
{
	abox_ctx_opts o = ABOX_CTX_OPTS_INIT;
	o.state_dir = daemon_cfg.state_dir;
	o.log = reaper_log;
	abox_ctx *ctx = NULL;
	return abox_ctx_new(&o, &ctx, NULL) < 0 ? NULL : ctx;
}

/* Housekeeping in the background, every quarter of a second: the pauses
 * autoPause sandboxes asked for (to disk, without memory) once frozen at
 * their deadline, the cheap gc of dead sandboxes' leftovers
 * (abox_gc_maybe rate-limits itself across processes) and, once a minute,
 * the daemon's notes on sandboxes and snapshots that are gone (expired,
 * removed on the host). Slow work here never delays the deadlines. */
static void *housekeeper(void *arg)
{
	(void)arg;
	abox_ctx *ctx = NULL; /* one for the thread's life: it reads only what changed */
	for (unsigned tick = 0;; tick++) {
		if (ctx || (ctx = reaper_ctx())) {
			(void)abox_reap_steps(ctx, ABOX_REAP_MEMORY, NULL, NULL, NULL);
			if (tick % 4 == 0)
				(void)abox_gc_maybe(ctx, NULL, NULL);
			if (tick % 240 == 0)
				notes_sweep(ctx);
		}
		usleep(250 * 1000);
	}
	return NULL;
}

/* The deadlines of autoPause sandboxes: each one whose time has come is
 * frozen (a warm pause) at once — the thread wakes at the next deadline,
 * at least every 200 ms, and runs ahead of the request threads (nice
 * -10: a host busy with creates must not make it late) — so it is paused
 * within a second of its deadline however many are due or how slow the
 * pause it asked for is. The first tick, at start, also undoes the
 * freezes of a daemon killed midway. Other deadlines are enforced by
 * each sandbox's init, which needs no daemon. */
static void *reaper(void *arg)
{
	(void)arg;
	(void)setpriority(PRIO_PROCESS, (id_t)gettid(), -10);
	pthread_t ht;
	if (pthread_create(&ht, NULL, housekeeper, NULL) == 0)
		pthread_detach(ht);
	abox_ctx *ctx = NULL; /* one for the thread's life: it wakes often */
	for (;;) {
		int64_t next = 0;
		if (ctx || (ctx = reaper_ctx()))
			(void)abox_reap_steps(ctx, ABOX_REAP_FREEZE, NULL, &next, NULL);
		int64_t wait = next ? next - clock_wall_ms() : 200;
		/* 20 ms at least: deadlines a moment apart are taken together */
		usleep((useconds_t)(wait < 20 ? 20 : wait > 200 ? 200 : wait) * 1000);
	}
	return NULL;
}


/* No configured domain: the SDKs would fall back to the public cloud's
 * (getHost(3000) = 3000-<id>.e2b.app), sending a sandbox's traffic, token
 * and all, to hosts that are not this daemon. "localhost:<port>" makes
 * getHost give 3000-<id>.localhost:<port>: the name is loopback by
 * RFC 6761 (curl, browsers and nss-myhostname resolve it without DNS) and
 * the port is this daemon's, whose Host routing sends it to the sandbox. */
static void default_domain(struct MHD_Daemon *d, struct in_addr addr)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	unsigned port = i && i->port ? i->port : daemon_cfg.port;
	char buf[32];
	snprintf(buf, sizeof(buf), "localhost:%u", port);
	daemon_cfg.domain = strdup(buf);
	uint32_t a = ntohl(addr.s_addr);
	if (a != INADDR_ANY && (a >> 24) != 127)
		fprintf(stderr, "aboxd: no \"domain\" configured: getHost() names %s, which does not reach a daemon "
				"listening on %s only; configure \"domain\"\n",
			buf, inet_ntoa(addr));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' }, { "listen", required_argument, NULL, 'l' },
		{ "port", required_argument, NULL, 'p' },   { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = "/etc/abox/aboxd.json", *listen_addr = NULL;
	bool explicit = false;
	/* the daemon serves its own sandboxes: a remote backend picked up
	 * from the environment would send every request back to a daemon */
	unsetenv("ABOX_REMOTE");
	int port = -1, c;
	while ((c = getopt_long(argc, argv, "c:l:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; explicit = true; break;
		case 'l': listen_addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'h':
			printf("usage: aboxd [--config FILE] [--listen ADDR] [--port N]\n\n"
			       "Serves the E2B API (control plane, envd) for abox sandboxes on\n"
			       "http://ADDR:N (default 127.0.0.1:49982). See docs/daemon.md.\n");
			return 0;
		default: return 2;
		}
	}
	int cr = config_load(config, explicit);
	if (daemon_cfg.limits) {
		char why[256];
		if (admission_configure(daemon_cfg.limits, why, sizeof(why)) < 0) {
			fprintf(stderr, "aboxd: config '%s': %s\n", config, why);
			cr = -1;
		}
	}
	if (cr < 0)
		return 1;
	char lwhy[256];
	if (admission_from_env(lwhy, sizeof(lwhy)) < 0) {
		fprintf(stderr, "aboxd: %s\n", lwhy);
		return 1;
	}
	if (listen_addr)
		daemon_cfg.listen = strdup(listen_addr);
	if (port > 0 && port < 65536)
		daemon_cfg.port = (uint16_t)port;
	if (!daemon_cfg.keys && config_default_key() < 0)
		return 1;
	if (auth_init(daemon_cfg.state_dir) < 0)
		return 1;

	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(daemon_cfg.port) };
	if (inet_pton(AF_INET, daemon_cfg.listen ? daemon_cfg.listen : "127.0.0.1", &sa.sin_addr) != 1) {
		fprintf(stderr, "aboxd: listen address '%s' is not an IPv4 address\n", daemon_cfg.listen);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	/* SIGTERM/SIGINT are taken by the main thread alone (sigwait below):
	 * blocked here, before any thread exists, so every thread inherits
	 * the block and none of them swallows the signal */
	sigset_t stopset;
	sigemptyset(&stopset);
	sigaddset(&stopset, SIGTERM);
	sigaddset(&stopset, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stopset, NULL);
	/* disks made ahead for creates (a helper process, forked before any
	 * thread exists); ABOX_SPARE_DISKS sets how many, 0 none */
	const char *spares = getenv("ABOX_SPARE_DISKS");
	abox_ctx *sctx = request_ctx();
	abox_error serr = ABOX_ERROR_INIT;
	if (sctx && abox_spare_disks(sctx, daemon_cfg.disk_bytes, spares ? (unsigned)strtoul(spares, NULL, 10) : 4, &serr) < 0)
		fprintf(stderr, "aboxd: no spare disks (creates make their own): %s\n", serr.msg);
	abox_ctx_free(sctx);
	/* one table per listener: the unix socket's clients are all one
	 * local source, so it has no per-client cap. libmicrohttpd's own
	 * limit sits a little above ours, for connections cut and not yet
	 * closed; poll, not select, so fds past FD_SETSIZE are served. */
	struct conn_limits lim = { .max = daemon_cfg.max_conns, .per_client = daemon_cfg.per_client_conns,
				   .head_ms = (int64_t)daemon_cfg.head_timeout * 1000, .idle_ms = (int64_t)daemon_cfg.idle_timeout * 1000 };
	struct conns *tcp_conns = conns_new(&lim);
	lim.per_client = 0;
	struct conns *unix_conns = conns_new(&lim);
	if (!tcp_conns || !unix_conns)
		return 1;
	unsigned mhd_limit = daemon_cfg.max_conns + 64;
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
			MHD_USE_ITC | MHD_ALLOW_UPGRADE, 0,
		NULL, NULL,
		daemon_access, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED,
		daemon_completed, NULL, MHD_OPTION_URI_LOG_CALLBACK, daemon_uri, NULL,
		MHD_OPTION_NOTIFY_CONNECTION, conns_notify, tcp_conns,
		MHD_OPTION_CONNECTION_TIMEOUT, daemon_cfg.idle_timeout,
		MHD_OPTION_CONNECTION_LIMIT, mhd_limit, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(256 << 10),
		MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "aboxd: cannot listen on %s:%u\n", daemon_cfg.listen ? daemon_cfg.listen : "127.0.0.1",
			daemon_cfg.port);
		return 1;
	}
	if (!daemon_cfg.domain)
		default_domain(d, sa.sin_addr);
	/* the same API on a unix socket, for local clients that should not
	 * need a TCP port (mode 0660: root and the socket's group) */
	struct MHD_Daemon *ud = NULL;
	if (daemon_cfg.unix_path) {
		struct sockaddr_un un = { .sun_family = AF_UNIX };
		int us = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (us < 0 || strlen(daemon_cfg.unix_path) >= sizeof(un.sun_path)) {
			fprintf(stderr, "aboxd: unix socket '%s': %s\n", daemon_cfg.unix_path, us < 0 ? strerror(errno) : "path too long");
			return 1;
		}
		strcpy(un.sun_path, daemon_cfg.unix_path);
		unlink(daemon_cfg.unix_path);
		mode_t old = umask(0117);
		int b = bind(us, (struct sockaddr *)&un, sizeof(un));
		umask(old);
		if (b < 0 || listen(us, 128) < 0 ||
		    !(ud = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
						    MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_ALLOW_UPGRADE,
					    0, NULL, NULL, daemon_access, NULL, MHD_OPTION_LISTEN_SOCKET, us,
					    MHD_OPTION_NOTIFY_COMPLETED, daemon_completed, NULL, MHD_OPTION_URI_LOG_CALLBACK,
					    daemon_uri, NULL, MHD_OPTION_NOTIFY_CONNECTION, conns_notify, unix_conns,
					    MHD_OPTION_CONNECTION_TIMEOUT, daemon_cfg.idle_timeout,
					    MHD_OPTION_CONNECTION_LIMIT, mhd_limit, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
					    (size_t)(256 << 10), MHD_OPTION_END))) {
			fprintf(stderr, "aboxd: cannot listen on unix socket '%s': %s\n", daemon_cfg.unix_path, strerror(errno));
			return 1;
		}
		fprintf(stderr, "aboxd: listening on unix:%s\n", daemon_cfg.unix_path);
	}
	if (access_log_open(daemon_cfg.access_log_path) < 0)
		return 1;
	/* Prometheus metrics on the admin listener (0: none) */
	struct MHD_Daemon *admin = NULL;
	if (daemon_cfg.admin_port > 0) {
		struct sockaddr_in aa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)daemon_cfg.admin_port) };
		if (inet_pton(AF_INET, daemon_cfg.admin_listen ? daemon_cfg.admin_listen : "127.0.0.1", &aa.sin_addr) != 1 ||
		    !(admin = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, metrics_admin,
					       NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&aa, MHD_OPTION_END))) {
			fprintf(stderr, "aboxd: cannot listen for metrics on %s:%d\n", daemon_cfg.admin_listen ? daemon_cfg.admin_listen : "127.0.0.1",
				daemon_cfg.admin_port);
			return 1;
		}
	}
	fprintf(stderr, "aboxd: listening on http://%s:%u\n", daemon_cfg.listen ? daemon_cfg.listen : "127.0.0.1",
		daemon_cfg.port);
	pthread_t rt;
	pthread_create(&rt, NULL, reaper, NULL);
	pthread_detach(rt);
	int sig;
	while (sigwait(&stopset, &sig) != 0)
		;
	/* no new connections; streams in flight get a moment, then we go.
	 * Sandboxes do not depend on aboxd: they run on, and a new aboxd
	 * finds them all in the state folder. */
	MHD_quiesce_daemon(d);
	if (ud)
		MHD_quiesce_daemon(ud);
	if (daemon_cfg.unix_path)
		unlink(daemon_cfg.unix_path);
	fprintf(stderr, "aboxd: stopping\n");
	sleep(1);
	/* the notes of sandboxes that ended since the last sweep go now,
	 * not with the next daemon */
	abox_ctx *ctx = request_ctx();
	if (ctx) {
		notes_sweep(ctx);
		abox_ctx_free(ctx);
	}
	_exit(0);
}
