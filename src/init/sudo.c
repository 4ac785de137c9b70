/* sudo.c — `sudo` inside the sandbox, as E2B's templates have it
 * (passwordless): setuid binaries grant nothing under no_new_privs, so the
 * sandbox's `sudo` (src/sudo/) asks init instead, on an abstract unix
 * socket of the sandbox's own network namespace, and init starts the
 * command as the user asked for with the caller's stdin, stdout and
 * stderr — the power `user: root` already has through the API, and no
 * more. Off with the create option (init's "nosudo" argument).
 *
 * The request (one SOCK_SEQPACKET message, SUDO_REQ_MAX bytes at most,
 * three fds): "ABOXSUDO1\0" then NUL-ended fields, each a letter and '=':
 * u= user, c= folder, f= flags ('i': a login: the user's home as folder),
 * a= each argument, e= each environment entry. The answers: 'E' + code +
 * message when it could not start, 'X' + exit code + signal at its end.
 * The caller sends 'K' + signal to signal the command's group.
 * Runs only inside the sandbox, as its PID 1. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "base/base.h"
#include "base/fdpass.h"
#include "base/sudo_wire.h"
#include "init.h"
#include "sudo_parse.h"
#include "tables.h"

struct sudo_conn {
	int fd; /* 0: free */
	pid_t pid; /* its command, once started */
};
static struct sudo_conn conns[SUDO_MAX];
static int sudo_sock = -1; /* the listening socket */

void sudo_listen(void)
{
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, "\0" SUDO_SOCKET_NAME, sizeof(SUDO_SOCKET_NAME));
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + sizeof(SUDO_SOCKET_NAME));
	if (s < 0 || bind(s, (struct sockaddr *)&sa, len) < 0 || listen(s, 16) < 0) {
		if (s >= 0)
			close(s);
		return; /* sudo then says init does not answer */
	}
	sudo_sock = s;
}

unsigned sudo_pollfds(struct pollfd *pfd)
{
	unsigned n = 0, used = 0;
	for (unsigned i = 0; i < SUDO_MAX; i++) {
		pfd[n++] = (struct pollfd){ .fd = conns[i].fd > 0 ? conns[i].fd : -1, .events = POLLIN };
		used += conns[i].fd > 0;
	}
	/* full: callers wait in the backlog until one ends */
	pfd[n++] = (struct pollfd){ .fd = used < SUDO_MAX ? sudo_sock : -1, .events = POLLIN };
	return n;
}

static void answer(int fd, char kind, int32_t a, int32_t b, const char *msg)
{
	char buf[600];
	buf[0] = kind;
	memcpy(buf + 1, &a, 4);
	memcpy(buf + 5, &b, 4);
	size_t m = msg ? strnlen(msg, sizeof(buf) - 10) : 0;
	if (m)
		memcpy(buf + 9, msg, m);
	(void)send(fd, buf, 9 + m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void conn_close(struct sudo_conn *c)
{
	/* its command runs on; its end has no one to go to */
	for (unsigned j = 0; j < procs_used; j++)
		if (procs[j].sudo_fd == c->fd)
			procs[j].sudo_fd = 0;
	close(c->fd);
	*c = (struct sudo_conn){ 0 };
}

void sudo_report(struct proc *p)
{
	for (unsigned i = 0; i < SUDO_MAX; i++) {
		if (conns[i].fd != p->sudo_fd)
			continue;
		if (p->error)
			answer(conns[i].fd, 'E', p->exit_code, 0, p->error);
		else
			answer(conns[i].fd, 'X', p->exit_code, p->exit_signal, NULL);
		conn_close(&conns[i]);
		break;
	}
	p->sudo_fd = 0;
}

/* Starts what the request on c asks for; answers 'E' when it cannot. */
static void start(struct sudo_conn *c)
{
	static char buf[SUDO_REQ_MAX];
	static struct sudo_req sr;
	int fds[3] = { -1, -1, -1 };
	size_t nfds = 0;
	ssize_t n = fd_recv(c->fd, buf, sizeof(buf), fds, 3, &nfds, MSG_DONTWAIT);
	if (n == -EAGAIN || n == -EINTR)
		return;
	struct exec_req req = { 0 };
	int r = n <= 0 ? -EIO : nfds != 3 ? -EBADF : sudo_parse(buf, (size_t)n, &sr);
	char **env = sr.env;
	bool login = sr.login;
	if (r == 0) {
		req.user = sr.user;
		req.cwd = sr.cwd;
		req.argv = sr.args;
		req.env = sr.env;
	}
	const char *why = "malformed request";
	struct init_ident id;
	char cwd[4200];
	/* who asked, as the kernel tells it (what sudo's SUDO_UID says) */
	static char sudo_uid[32], sudo_gid[32];
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	if (r == 0 && getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0) {
		size_t ne = 0;
		while (env[ne])
			ne++;
		safe_snprintf(sudo_uid, sizeof(sudo_uid), "SUDO_UID=%u", (unsigned)cr.uid);
		safe_snprintf(sudo_gid, sizeof(sudo_gid), "SUDO_GID=%u", (unsigned)cr.gid);
		if (ne + 2 <= SUDO_ENV_MAX) {
			env[ne++] = sudo_uid;
			env[ne++] = sudo_gid;
			env[ne] = NULL;
		}
	}
	if (r == 0 && (r = users_lookup(req.user, &id)) < 0)
		why = "unknown user (not in the sandbox's /etc/passwd)";
	if (r == 0) {
		req.uid = id.uid;
		req.gid = id.gid;
		req.ngroups = id.ngroups;
		memcpy(req.groups, id.groups, sizeof(id.groups));
		req.home = id.home;
		/* a login starts in the user's home; else where the caller is */
		if (login || !req.cwd || req.cwd[0] != '/')
			req.cwd = (char *)users_path(&id, id.home, cwd, sizeof(cwd));
	}
	req.flags = EXEC_CWD_FIRST;
	struct proc *p = NULL;
	if (r == 0 && !(p = procs_slot())) {
		r = -EAGAIN;
		why = "too many processes tracked by init";
	}
	pid_t pid = 0;
	int ep = -1;
	bool stalled = false;
	if (r == 0 && (r = child_spawn_stdio(&req, fds, &pid, &ep, &stalled)) < 0)
		why = "could not start the command";
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	if (r < 0) {
		char msg[300];
		safe_snprintf(msg, sizeof(msg), "%s%s%s", why, r == -ABOX_ENOUSER ? "" : ": ",
			      r == -ABOX_ENOUSER ? ""
			      : errno_name(-r)   ? errno_name(-r)
						 : "error");
		answer(c->fd, 'E', r == -ABOX_ENOUSER ? 1 : 126, 0, msg);
		conn_close(c);
		return;
	}
	char line[256];
	size_t u = safe_snprintf(line, sizeof(line), "sudo");
	for (size_t i = 0; req.argv[i] && u + 2 < sizeof(line); i++)
		u += safe_snprintf(line + u, sizeof(line) - u, " %s", req.argv[i]);
	*p = (struct proc){ .state = P_STARTING,
			    .pid = pid,
			    .owner = -1,
			    .cmd = strdup(line),
			    .in = -1,
			    .out = -1,
			    .err = -1,
			    .ep = ep,
			    .tee_out = -1,
			    .tee_err = -1,
			    .stalled = stalled,
			    .sudo_fd = c->fd };
	c->pid = pid;
	proc_started(p); /* usually not known yet: the poll loop watches ep */
}

void sudo_ready(const struct pollfd *pfd)
{
	for (unsigned i = 0; i < SUDO_MAX; i++) {
		struct sudo_conn *c = &conns[i];
		if (!pfd[i].revents || c->fd <= 0)
			continue;
		if (!c->pid) {
			start(c);
			continue;
		}
		char m[16];
		ssize_t k = recv(c->fd, m, sizeof(m), MSG_DONTWAIT);
		if (k == 5 && m[0] == 'K') {
			int32_t sig;
			memcpy(&sig, m + 1, 4);
			/* the command leads its own session: its whole group */
			if (sig > 0 && sig < NSIG && kill(-c->pid, sig) < 0)
				kill(c->pid, sig);
		} else if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
			conn_close(c);
		}
	}
	if (pfd[SUDO_MAX].revents) {
		int fd = accept4(sudo_sock, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		for (unsigned i = 0; fd > 0 && i < SUDO_MAX; i++) {
			if (conns[i].fd <= 0) {
				conns[i] = (struct sudo_conn){ .fd = fd };
				fd = -1;
			}
		}
		if (fd > 0)
			close(fd);
	}
}
