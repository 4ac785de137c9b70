/* aboxd — see daemon.h and docs/daemon.md.
 *
 *   aboxd [--config FILE] [--listen ADDR] [--port N]
 *
 * The config file (JSON, default /etc/abox/aboxd.json, optional) may name
 * "stateDir", "listen", "port", "apiKeys" (array), "domain",
 * "idleTimeoutSeconds" (60), "accessLog" (a file, or "-" for stderr),
 * "unixSocket" (also serve on that path),
 * "adminListen"/"adminPort" (Prometheus /metrics, 127.0.0.1:49990; port 0
 * for none), "maxConnections" (1000), "maxConnectionsPerClient" (64),
 * "headerTimeoutSeconds" (10; see conns.c), "defaults" {"memoryMB", "diskMB", "cpus"} and "limits"
 * (admission.h; the ABOXD_LIMIT_* environment wins). With no key configured, the
 * key in <state>/aboxd.key is used, made on first start (e2b_ and 40 hex
 * digits, the shape the SDKs check; mode 0600) and printed once. */
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
#include "auth.h"
#include "admission.h"
#include "daemon.h"
#include "conns.h"

struct daemon_config daemon_cfg = {
	.port = 49982,
	.memory_bytes = 512ull << 20,
	.disk_bytes = 1ull << 30,
	.cpu_millis = 1000,
};

enum MHD_Result daemon_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **con_cls);
void daemon_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe);
void *daemon_uri(void *cls, const char *uri, struct MHD_Connection *conn);

/* a client silent this long is cut off (slowloris) */
static unsigned idle_timeout = 60;
static char *access_log_path, *admin_listen, *unix_path;
static int admin_port = 49990;
/* connections: caps and the head deadline (conns.c) */
static unsigned max_conns = 1000, per_client_conns = 64, head_timeout = 10;

static int load_config(const char *path, bool explicit)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		if (!explicit && errno == ENOENT)
			return 0;
		fprintf(stderr, "aboxd: config '%s': %s\n", path, strerror(errno));
		return -1;
	}
	char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	json_object *o = json_tokener_parse(buf), *v;
	if (!o || !json_object_is_type(o, json_type_object)) {
		fprintf(stderr, "aboxd: config '%s' is not a JSON object\n", path);
		json_object_put(o);
		return -1;
	}
	int r = 0;
	json_object_object_foreach(o, k, val) {
		if (!strcmp(k, "stateDir") && json_object_is_type(val, json_type_string))
			daemon_cfg.state_dir = strdup(json_object_get_string(val));
		else if (!strcmp(k, "listen") && json_object_is_type(val, json_type_string))
			daemon_cfg.listen = strdup(json_object_get_string(val));
		else if (!strcmp(k, "port") && json_object_is_type(val, json_type_int))
			daemon_cfg.port = (uint16_t)json_object_get_int(val);
		else if (!strcmp(k, "unixSocket") && json_object_is_type(val, json_type_string))
			unix_path = strdup(json_object_get_string(val));
		else if (!strcmp(k, "accessLog") && json_object_is_type(val, json_type_string))
			access_log_path = strdup(json_object_get_string(val));
		else if (!strcmp(k, "adminListen") && json_object_is_type(val, json_type_string))
			admin_listen = strdup(json_object_get_string(val));
		else if (!strcmp(k, "adminPort") && json_object_is_type(val, json_type_int))
			admin_port = json_object_get_int(val);
		else if (!strcmp(k, "idleTimeoutSeconds") && json_object_is_type(val, json_type_int))
			idle_timeout = (unsigned)json_object_get_int(val);
		else if (!strcmp(k, "maxConnections") && json_object_is_type(val, json_type_int) &&
			 json_object_get_int(val) >= 10)
			max_conns = (unsigned)json_object_get_int(val);
		else if (!strcmp(k, "maxConnectionsPerClient") && json_object_is_type(val, json_type_int) &&
			 json_object_get_int(val) >= 0)
			per_client_conns = (unsigned)json_object_get_int(val);
		else if (!strcmp(k, "headerTimeoutSeconds") && json_object_is_type(val, json_type_int) &&
			 json_object_get_int(val) >= 1)
			head_timeout = (unsigned)json_object_get_int(val);
		else if (!strcmp(k, "domain") && json_object_is_type(val, json_type_string))
			daemon_cfg.domain = strdup(json_object_get_string(val));
		else if (!strcmp(k, "apiKeys") && json_object_is_type(val, json_type_array)) {
			size_t c = json_object_array_length(val);
			daemon_cfg.keys = calloc(c + 1, sizeof(char *));
			for (size_t i = 0; daemon_cfg.keys && i < c; i++)
				daemon_cfg.keys[i] = strdup(json_object_get_string(json_object_array_get_idx(val, i)));
		} else if (!strcmp(k, "limits")) {
			char why[256];
			if (admission_configure(val, why, sizeof(why)) < 0) {
				fprintf(stderr, "aboxd: config '%s': %s\n", path, why);
				r = -1;
			}
		} else if (!strcmp(k, "defaults") && json_object_is_type(val, json_type_object)) {
			if (json_object_object_get_ex(val, "memoryMB", &v))
				daemon_cfg.memory_bytes = (uint64_t)json_object_get_int64(v) << 20;
			if (json_object_object_get_ex(val, "diskMB", &v))
				daemon_cfg.disk_bytes = (uint64_t)json_object_get_int64(v) << 20;
			if (json_object_object_get_ex(val, "cpus", &v))
				daemon_cfg.cpu_millis = (uint32_t)(json_object_get_double(v) * 1000);
		} else {
			fprintf(stderr, "aboxd: config '%s': unknown or mistyped key '%s'\n", path, k);
			r = -1;
		}
	}
	json_object_put(o);
	return r;
}

/* The key of <state>/aboxd.key, made on first start. */
static int default_key(void)
{
	const char *state = daemon_cfg.state_dir ? daemon_cfg.state_dir : getenv("ABOX_ROOT");
	if (!state || !*state)
		state = "/var/lib/abox";
	char path[4096];
	snprintf(path, sizeof(path), "%s/aboxd.key", state);
	char key[64] = "";
	FILE *f = fopen(path, "re");
	if (f) {
		if (!fgets(key, sizeof(key), f))
			key[0] = '\0';
		fclose(f);
		key[strcspn(key, "\n")] = '\0';
	}
	if (!key[0]) {
		unsigned char raw[20];
		f = fopen("/dev/urandom", "re");
		if (!f || fread(raw, 1, sizeof(raw), f) != sizeof(raw)) {
			fprintf(stderr, "aboxd: no randomness for an API key\n");
			if (f)
				fclose(f);
			return -1;
		}
		fclose(f);
		strcpy(key, "e2b_");
		for (int i = 0; i < 20; i++)
			snprintf(key + 4 + 2 * i, 3, "%02x", raw[i]);
		mkdir(state, 0711);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0 || dprintf(fd, "%s\n", key) < 0 || fsync(fd) < 0) {
			fprintf(stderr, "aboxd: store the API key in '%s': %s\n", path, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
		fprintf(stderr, "aboxd: created the API key %s (kept in %s, mode 0600)\n", key, path);
	}
	daemon_cfg.keys = calloc(2, sizeof(char *));
	if (!daemon_cfg.keys || !(daemon_cfg.keys[0] = strdup(key)))
		return -1;
	return 0;
}

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
	if (load_config(config, explicit) < 0)
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
	if (!daemon_cfg.keys && default_key() < 0)
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
	struct conn_limits lim = { .max = max_conns, .per_client = per_client_conns,
				   .head_ms = (int64_t)head_timeout * 1000, .idle_ms = (int64_t)idle_timeout * 1000 };
	struct conns *tcp_conns = conns_new(&lim);
	lim.per_client = 0;
	struct conns *unix_conns = conns_new(&lim);
	if (!tcp_conns || !unix_conns)
		return 1;
	unsigned mhd_limit = max_conns + 64;
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
			MHD_USE_ITC | MHD_ALLOW_UPGRADE, 0,
		NULL, NULL,
		daemon_access, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED,
		daemon_completed, NULL, MHD_OPTION_URI_LOG_CALLBACK, daemon_uri, NULL,
		MHD_OPTION_NOTIFY_CONNECTION, conns_notify, tcp_conns,
		MHD_OPTION_CONNECTION_TIMEOUT, idle_timeout,
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
	if (unix_path) {
		struct sockaddr_un un = { .sun_family = AF_UNIX };
		int us = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (us < 0 || strlen(unix_path) >= sizeof(un.sun_path)) {
			fprintf(stderr, "aboxd: unix socket '%s': %s\n", unix_path, us < 0 ? strerror(errno) : "path too long");
			return 1;
		}
		strcpy(un.sun_path, unix_path);
		unlink(unix_path);
		mode_t old = umask(0117);
		int b = bind(us, (struct sockaddr *)&un, sizeof(un));
		umask(old);
		if (b < 0 || listen(us, 128) < 0 ||
		    !(ud = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
						    MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_ALLOW_UPGRADE,
					    0, NULL, NULL, daemon_access, NULL, MHD_OPTION_LISTEN_SOCKET, us,
					    MHD_OPTION_NOTIFY_COMPLETED, daemon_completed, NULL, MHD_OPTION_URI_LOG_CALLBACK,
					    daemon_uri, NULL, MHD_OPTION_NOTIFY_CONNECTION, conns_notify, unix_conns,
					    MHD_OPTION_CONNECTION_TIMEOUT, idle_timeout,
					    MHD_OPTION_CONNECTION_LIMIT, mhd_limit, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
					    (size_t)(256 << 10), MHD_OPTION_END))) {
			fprintf(stderr, "aboxd: cannot listen on unix socket '%s': %s\n", unix_path, strerror(errno));
			return 1;
		}
		fprintf(stderr, "aboxd: listening on unix:%s\n", unix_path);
	}
	/* the access log: a file, "-" for stderr, none when unset */
	if (access_log_path && !strcmp(access_log_path, "-"))
		access_log = stderr;
	else if (access_log_path && !(access_log = fopen(access_log_path, "ae"))) {
		fprintf(stderr, "aboxd: access log '%s': %s\n", access_log_path, strerror(errno));
		return 1;
	}
	/* Prometheus metrics on the admin listener (0: none) */
	struct MHD_Daemon *admin = NULL;
	if (admin_port > 0) {
		struct sockaddr_in aa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)admin_port) };
		if (inet_pton(AF_INET, admin_listen ? admin_listen : "127.0.0.1", &aa.sin_addr) != 1 ||
		    !(admin = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, ops_admin,
					       NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&aa, MHD_OPTION_END))) {
			fprintf(stderr, "aboxd: cannot listen for metrics on %s:%d\n", admin_listen ? admin_listen : "127.0.0.1",
				admin_port);
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
	if (unix_path)
		unlink(unix_path);
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
