/* net/client.c — asking abox-netd (see client.h). */
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "base/fdpass.h"
#include "base/json.h"
#include "net/client.h"
#include "net/config.h"

#define ANSWER_MAX 65536
/* the largest policy sent inside a take (netd reads 64 KiB a message) */
#define TAKE_INLINE_MAX 60000
/* attach makes a veth and table elements: well under a second, even on
 * a loaded host; a netd that takes longer is stuck */
#define ANSWER_TIMEOUT_MS 15000
#define START_TIMEOUT_MS 5000

extern char **environ;

/* Connected to abox-netd's name, and the listener is netd: root or this
 * user. The name is abstract (no file mode guards it) and known to
 * anyone who knows the state folder, so while no netd runs any local
 * user could listen under it; a creator that talked to that process
 * would join the network namespace it hands out (its traffic seen and
 * steered by that user) or be told its policy is applied when nothing
 * is. -EPERM, with the listener's credentials in *who, when it is
 * someone else's. */
static int try_connect(const char *state_dir, struct ucred *who)
{
	struct sockaddr_un sa;
	unsigned len;
	net_netd_address(state_dir, &sa, &len);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, len) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || (cr.uid != 0 && cr.uid != geteuid())) {
		if (who)
			*who = cl == sizeof(cr) ? cr : (struct ucred){ .pid = 0, .uid = (uid_t)-1 };
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int impostor(const struct ucred *who, abox_error *err)
{
	return abox_error_setx(
		err, EPERM,
		"net: abox-netd's socket is held by pid %d of uid %d, neither root nor this user: "
		"refusing to talk to it (stop that process; abox-netd starts again on the next "
		"request)",
		(int)who->pid, (int)who->uid);
}

/* abox-netd, detached: its own session, its output in its log, no fd of
 * ours. The intermediate child is reaped here; netd is nobody's child. */
static int start_netd(const char *state_dir, const char *netd_path, abox_error *err)
{
	if (!netd_path)
		return abox_error_setx(err, ENOENT,
				       "abox-netd not found (looked at $ABOX_NETD, next to the program, "
				       "and where abox installs it): sandboxes cannot have networking");
	char dir[4096], log[4200];
	snprintf(dir, sizeof(dir), "%s/net", state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "net: mkdir '%s'", dir);
	snprintf(log, sizeof(log), "%s/netd.log", dir);
	pid_t pid = fork();
	if (pid < 0)
		return abox_error_set(err, errno, "net: start abox-netd");
	if (pid == 0) {
		/* only async-signal-safe calls from here: the caller may be
		 * multi-threaded (aboxd) */
		setsid();
		if (fork() != 0)
			_exit(0);
		/* the caller's blocked signals would survive the exec: a netd
		 * started by `abox run` (which blocks SIGTERM, SIGINT, SIGHUP
		 * to pass them on) then ignored a plain kill */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		int lf = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (nul < 0 || lf < 0)
			_exit(127);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(lf, 2);
		syscall(SYS_close_range, 3, ~0u, 0);
		char *argv[] = { (char *)"abox-netd", (char *)"--state", (char *)state_dir, NULL };
		execve(netd_path, argv, environ);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return 0;
}

int net_client_connect(const char *state_dir, const char *netd_path, abox_error *err)
{
	struct ucred who;
	int fd = try_connect(state_dir, &who);
	if (fd >= 0)
		return fd;
	if (fd == -EPERM)
		return impostor(&who, err);
	int r = start_netd(state_dir, netd_path, err);
	if (r < 0)
		return r;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int64_t started_ms = 0;
	for (unsigned wait_us = 200;; wait_us = wait_us < 20000 ? wait_us * 2 : wait_us) {
		if ((fd = try_connect(state_dir, &who)) >= 0)
			return fd;
		if (fd == -EPERM)
			return impostor(&who, err);
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		int64_t ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms > START_TIMEOUT_MS)
			break;
		/* still nobody after half a second: the one started may have
		 * left (it found the name held by a netd that served when it
		 * asked, and was gone the moment after); another, which
		 * leaves at once if one serves by then */
		if (ms - started_ms > 500) {
			started_ms = ms;
			if ((r = start_netd(state_dir, netd_path, err)) < 0)
				return r;
		}
		usleep(wait_us);
	}
	return abox_error_set(err, -fd, "net: abox-netd did not start (its log: %s/net/netd.log)", state_dir);
}

int net_client_send(int conn, const char *op, const char *id, uint32_t slot, int fd, abox_error *err)
{
	char msg[256];
	int n = id ? snprintf(msg, sizeof(msg), "{\"op\":\"%s\",\"id\":\"%s\",\"slot\":%u}", op, id, slot)
		   : snprintf(msg, sizeof(msg), "{\"op\":\"%s\"}", op);
	ssize_t r = fd_send(conn, msg, (size_t)n, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, 0);
	if (r < 0)
		return abox_error_set(err, (int)-r, "net: ask abox-netd to %s", op);
	return 0;
}

int net_client_take(int conn, const char *id, const char *policy_json, int64_t prefer, abox_error *err)
{
	char pf[40] = "";
	if (prefer >= 0)
		snprintf(pf, sizeof(pf), ",\"prefer\":%lld", (long long)prefer);
	size_t pl = strlen(policy_json);
	/* beyond what netd reads in one message: the policy in a file */
	bool inline_pol = pl <= TAKE_INLINE_MAX;
	_cleanup_close_ int mfd = -1;
	if (!inline_pol) {
		if ((mfd = memfd_create("abox-net-policy", MFD_CLOEXEC)) < 0)
			return abox_error_set(err, errno, "net: a file for the policy");
		int w = write_full(mfd, policy_json, pl);
		if (w < 0)
			return abox_error_set(err, -w, "net: write the policy");
	}
	_cleanup_free_ char *msg = NULL;
	int n = asprintf(&msg, "{\"op\":\"take\",\"id\":\"%s\"%s%s%s}", id, pf,
			 inline_pol ? ",\"policy\":" : "", inline_pol ? policy_json : "");
	if (n < 0)
		return abox_error_set(err, ENOMEM, "net: ask abox-netd to take");
	ssize_t r = fd_send(conn, msg, (size_t)n, mfd >= 0 ? &mfd : NULL, mfd >= 0 ? 1 : 0, 0);
	if (r < 0)
		return abox_error_set(err, (int)-r, "net: ask abox-netd to take");
	return 0;
}

int net_client_remove(const char *state_dir, const char *netd_path, const char *id, uint32_t slot,
		      abox_error *err)
{
	_cleanup_close_ int conn = net_client_connect(state_dir, netd_path, err);
	if (conn < 0)
		return conn;
	char msg[160];
	int n = snprintf(msg, sizeof(msg), "{\"op\":\"remove\",\"id\":\"%s\",\"slot\":%u,\"release\":true}",
			 id, slot);
	ssize_t r = fd_send(conn, msg, (size_t)n, NULL, 0, 0);
	if (r < 0)
		return abox_error_set(err, (int)-r, "net: ask abox-netd to remove");
	/* netd's answer: the removal done (or why not) */
	return net_client_wait(conn, NULL, err);
}

int net_client_wait(int conn, json_object **out, abox_error *err)
{
	return net_client_wait_fd(conn, out, NULL, err);
}

int net_client_wait_fd(int conn, json_object **out, int *fd, abox_error *err)
{
	if (fd)
		*fd = -1;
	struct pollfd p = { .fd = conn, .events = POLLIN };
	int pr;
	while ((pr = poll(&p, 1, ANSWER_TIMEOUT_MS)) < 0 && errno == EINTR)
		;
	if (pr == 0)
		return abox_error_setx(err, ETIMEDOUT, "net: abox-netd did not answer in %d s",
				       ANSWER_TIMEOUT_MS / 1000);
	char *buf = malloc(ANSWER_MAX);
	if (!buf)
		return abox_error_set(err, ENOMEM, "net");
	int got = -1;
	size_t nfds = 0;
	ssize_t n = fd_recv(conn, buf, ANSWER_MAX - 1, &got, 1, &nfds, 0);
	if (nfds && (!fd || n <= 0)) {
		close(got);
		nfds = 0;
	}
	if (n <= 0) {
		int e = n < 0 ? (int)-n : ECONNRESET;
		free(buf);
		return abox_error_set(err, e, "net: abox-netd's answer");
	}
	buf[n] = '\0';
	json_object *o = json_tokener_parse(buf);
	free(buf);
	json_object *ok = js_get(o, "ok", json_type_boolean);
	if (!ok) {
		json_object_put(o);
		return abox_error_setx(err, EPROTO, "net: abox-netd's answer is not one");
	}
	int r = 0;
	if (!json_object_get_boolean(ok)) {
		int code = js_int(o, "errno", EIO);
		const char *msg = js_str(o, "error");
		r = abox_error_setx(err, code > 0 ? code : EIO, "%s", msg ? msg : "abox-netd failed");
	}
	if (out && r >= 0)
		*out = o;
	else
		json_object_put(o);
	if (nfds && r >= 0)
		*fd = got;
	else if (nfds)
		close(got);
	return r;
}

int net_client_call(const char *state_dir, const char *netd_path, const char *op, const char *id,
		    uint32_t slot, int fd, json_object **out, abox_error *err)
{
	int conn = net_client_connect(state_dir, netd_path, err);
	if (conn < 0)
		return conn;
	int r = net_client_send(conn, op, id, slot, fd, err);
	if (r >= 0)
		r = net_client_wait(conn, out, err);
	close(conn);
	return r;
}

int net_client_status(const char *state_dir, json_object **out, abox_error *err)
{
	struct ucred who;
	int conn = try_connect(state_dir, &who);
	if (conn == -EPERM)
		return impostor(&who, err);
	if (conn < 0)
		return abox_error_setx(err, ESRCH, "abox-netd is not running");
	int r = net_client_send(conn, "status", NULL, 0, -1, err);
	if (r >= 0)
		r = net_client_wait(conn, out, err);
	close(conn);
	return r;
}
