/* abox-init — PID 1 of every sandbox.
 *
 * Started by libabox from a sealed memfd copy (so /proc/1/exe never leads to
 * a host file), statically linked (so it runs in any root filesystem), with
 * the listening end of the host's agent socket as fd 3. It accepts host
 * connections, starts commands on request, streams their output as framed
 * events, forwards stdin and signals, reaps every zombie in the sandbox, and
 * ends the sandbox when told to (or, for an ephemeral sandbox, when its
 * creator hangs up or its oneshot command ends).
 *
 * Runs inside the sandbox's namespaces under the sandbox's seccomp policy
 * and capability bounding set. Not dumpable: processes in the sandbox,
 * which lack CAP_SYS_PTRACE, can neither ptrace it nor open its /proc
 * files (mem, fds, environ). */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "base/base.h"
#include "init.h"
#include "proto/messages.h"
#include "proto/proto.h"

#define MAX_CLIENTS 64
#define MAX_PROCS 256
#define STDIN_HIGH_WATER (1u << 20)

struct client {
	int fd;
	struct proto_reader rd;
};

struct proc {
	pid_t pid;
	uint32_t req_id;
	int client; /* index of the client that started it, -1 when gone */
	int in, out, err;
	uint8_t *inbuf;
	size_t inlen;
	bool close_in; /* close stdin once inbuf drains */
	bool exited;
	int status;
	bool oneshot;
};

static struct client clients[MAX_CLIENTS];
static unsigned nclients;
static struct proc procs[MAX_PROCS];
static int listen_fd = INIT_LISTEN_FD;
static bool ephemeral;
static int64_t deadline_ms; /* CLOCK_BOOTTIME, 0 = none */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

_Noreturn static void shutdown_sandbox(int code)
{
	/* Exiting PID 1 makes the kernel SIGKILL every process left in the
	 * pid namespace: nothing can outlive the sandbox. */
	_exit(code);
}

static int send_error(int cfd, uint32_t id, int code, const char *msg)
{
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_ERROR, id);
	proto_put_u64(&m, F_ERRNO, (uint64_t)(code < 0 ? -code : code));
	proto_put_str(&m, F_MESSAGE, msg);
	int r = proto_send(cfd, &m);
	proto_msg_free(&m);
	return r;
}

static int client_fd(int ci)
{
	return ci >= 0 && (unsigned)ci < nclients ? clients[ci].fd : -1;
}

static void send_data(struct proc *p, uint16_t type, const void *buf, size_t n)
{
	int cfd = client_fd(p->client);
	if (cfd < 0)
		return;
	struct proto_msg m;
	proto_msg_init(&m, type, p->req_id);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	proto_put_bytes(&m, F_DATA, buf, n);
	(void)proto_send(cfd, &m);
	proto_msg_free(&m);
}

/* Reads what a pipe has now; closes it at EOF. */
static void drain(struct proc *p, int *fd, uint16_t type, bool until_empty)
{
	static uint8_t buf[65536];
	while (*fd >= 0) {
		ssize_t n = read(*fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close(*fd);
			*fd = -1;
			return;
		}
		send_data(p, type, buf, (size_t)n);
		if (!until_empty)
			return;
	}
}

static void proc_release(struct proc *p)
{
	if (p->in >= 0)
		close(p->in);
	if (p->out >= 0)
		close(p->out);
	if (p->err >= 0)
		close(p->err);
	free(p->inbuf);
	memset(p, 0, sizeof(*p));
}

static void proc_finish(struct proc *p)
{
	/* Everything the command wrote before it ended goes out before the
	 * end event. Pipes still held open by its background children are
	 * drained of what is there now and closed: the command has ended. */
	drain(p, &p->out, MSG_EV_STDOUT, true);
	drain(p, &p->err, MSG_EV_STDERR, true);
	int cfd = client_fd(p->client);
	if (cfd >= 0) {
		struct proto_msg m;
		proto_msg_init(&m, MSG_EV_END, p->req_id);
		proto_put_u64(&m, F_PID, (uint64_t)p->pid);
		if (WIFEXITED(p->status)) {
			proto_put_i64(&m, F_EXIT_CODE, WEXITSTATUS(p->status));
			proto_put_u64(&m, F_SIGNAL, 0);
		} else {
			proto_put_i64(&m, F_EXIT_CODE, 128 + WTERMSIG(p->status));
			proto_put_u64(&m, F_SIGNAL, (uint64_t)WTERMSIG(p->status));
		}
		(void)proto_send(cfd, &m);
		proto_msg_free(&m);
	}
	bool oneshot = p->oneshot;
	proc_release(p);
	if (oneshot)
		shutdown_sandbox(0);
}

static struct proc *proc_find(pid_t pid)
{
	for (unsigned i = 0; i < MAX_PROCS; i++)
		if (procs[i].pid == pid && pid > 0)
			return &procs[i];
	return NULL;
}

static void reap(void)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0)
			return;
		struct proc *p = proc_find(pid);
		if (p && !p->exited) {
			p->exited = true;
			p->status = st;
			proc_finish(p);
		}
	}
}

static int parse_exec(const struct proto_frame *f, struct exec_req *req)
{
	size_t off = 0, nargs = 0, nenv = 0;
	struct proto_field fl;
	int k;
	while ((k = proto_field_next(f, &off, &fl)) > 0) {
		if (fl.tag == F_ARG)
			nargs++;
		else if (fl.tag == F_ENV)
			nenv++;
	}
	if (k < 0)
		return k;
	if (nargs == 0 || nargs > 65536 || nenv > 65536)
		return -EINVAL;
	req->argv = calloc(nargs + 1, sizeof(char *));
	req->env = calloc(nenv + 1, sizeof(char *));
	if (!req->argv || !req->env)
		return -ENOMEM;
	req->uid = 1000;
	req->gid = 1000;
	size_t ia = 0, ie = 0;
	off = 0;
	while ((k = proto_field_next(f, &off, &fl)) > 0) {
		uint64_t v;
		int r = 0;
		switch (fl.tag) {
		case F_ARG: r = proto_field_strdup(&fl, &req->argv[ia++]); break;
		case F_ENV: r = proto_field_strdup(&fl, &req->env[ie++]); break;
		case F_CWD: free(req->cwd); r = proto_field_strdup(&fl, &req->cwd); break;
		case F_HOME: free(req->home); r = proto_field_strdup(&fl, &req->home); break;
		case F_USER: free(req->user); r = proto_field_strdup(&fl, &req->user); break;
		case F_UID: r = proto_field_u64(&fl, &v); req->uid = (uid_t)v; break;
		case F_GID: r = proto_field_u64(&fl, &v); req->gid = (gid_t)v; break;
		case F_FLAGS: r = proto_field_u64(&fl, &v); req->flags = (uint32_t)v; break;
		default: break; /* newer hosts may send more: ignore */
		}
		if (r < 0)
			return r;
	}
	return k;
}

static void handle_exec(int ci, const struct proto_frame *f)
{
	int cfd = clients[ci].fd;
	struct exec_req req = { 0 };
	int r = parse_exec(f, &req);
	if (r < 0) {
		send_error(cfd, f->id, r, "exec: malformed request");
		exec_req_free(&req);
		return;
	}
	struct proc *p = proc_find(0);
	if (!p) {
		for (unsigned i = 0; i < MAX_PROCS; i++)
			if (procs[i].pid == 0) {
				p = &procs[i];
				break;
			}
	}
	if (!p) {
		send_error(cfd, f->id, EAGAIN, "exec: too many processes tracked by init");
		exec_req_free(&req);
		return;
	}
	pid_t pid;
	struct exec_fds fds;
	int exec_errno = 0;
	char msg[480];
	r = child_spawn(&req, &pid, &fds, &exec_errno, msg, sizeof(msg));
	bool oneshot = req.flags & EXEC_ONESHOT;
	exec_req_free(&req);
	if (r < 0) {
		char m2[128];
		safe_snprintf(m2, sizeof(m2), "exec: fork: %s", errno_name(-r) ? errno_name(-r) : "error");
		send_error(cfd, f->id, r, m2);
		if (oneshot)
			shutdown_sandbox(125);
		return;
	}
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_START, f->id);
	proto_put_u64(&m, F_PID, (uint64_t)pid);
	(void)proto_send(cfd, &m);
	proto_msg_free(&m);
	if (r == 1) {
		/* the process existed but could not exec: report it as an end
		 * with the shell's codes (127 not found, 126 not runnable) and
		 * the reason */
		proto_msg_init(&m, MSG_EV_END, f->id);
		proto_put_u64(&m, F_PID, (uint64_t)pid);
		proto_put_i64(&m, F_EXIT_CODE, exec_errno == ENOENT ? 127 : 126);
		proto_put_u64(&m, F_SIGNAL, 0);
		proto_put_u64(&m, F_ERRNO, (uint64_t)exec_errno);
		proto_put_str(&m, F_MESSAGE, msg);
		(void)proto_send(cfd, &m);
		proto_msg_free(&m);
		if (oneshot)
			shutdown_sandbox(0);
		return;
	}
	*p = (struct proc){ .pid = pid, .req_id = f->id, .client = ci, .in = fds.in,
			    .out = fds.out, .err = fds.err, .oneshot = oneshot };
	fcntl(p->out, F_SETFL, O_NONBLOCK);
	fcntl(p->err, F_SETFL, O_NONBLOCK);
	if (p->in >= 0)
		fcntl(p->in, F_SETFL, O_NONBLOCK);
}

/* The process a stdin/signal request is about: by F_PID, or when the host
 * does not know the pid yet (it sent the request before reading the start
 * event), by the id of the exec request on the same connection. */
static struct proc *proc_of_frame(int ci, const struct proto_frame *f, uint64_t *sig,
				  const uint8_t **data, size_t *len)
{
	size_t off = 0;
	struct proto_field fl;
	uint64_t pid = 0;
	while (proto_field_next(f, &off, &fl) > 0) {
		if (fl.tag == F_PID)
			(void)proto_field_u64(&fl, &pid);
		else if (fl.tag == F_SIGNAL && sig)
			(void)proto_field_u64(&fl, sig);
		else if (fl.tag == F_DATA && data) {
			*data = fl.val;
			*len = fl.len;
		}
	}
	if (pid > 0 && pid < INT32_MAX)
		return proc_find((pid_t)pid);
	for (unsigned i = 0; i < MAX_PROCS; i++)
		if (procs[i].pid && procs[i].client == ci && procs[i].req_id == f->id)
			return &procs[i];
	return NULL;
}

static void flush_stdin(struct proc *p)
{
	while (p->in >= 0 && p->inlen > 0) {
		ssize_t w = write(p->in, p->inbuf, p->inlen);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		if (w < 0) {
			/* the command closed its stdin: drop what is pending */
			p->inlen = 0;
			close(p->in);
			p->in = -1;
			return;
		}
		memmove(p->inbuf, p->inbuf + w, p->inlen - (size_t)w);
		p->inlen -= (size_t)w;
	}
	if (p->in >= 0 && p->inlen == 0 && p->close_in) {
		close(p->in);
		p->in = -1;
	}
}

static void handle_frame(int ci, const struct proto_frame *f)
{
	int cfd = clients[ci].fd;
	for (unsigned i = 0; i < f->nfds; i++)
		close(f->fds[i]); /* no request of this version passes fds in */
	switch (f->type) {
	case MSG_REQ_EXEC:
		handle_exec(ci, f);
		break;
	case MSG_REQ_STDIN: {
		const uint8_t *data = NULL;
		size_t len = 0;
		struct proc *p = proc_of_frame(ci, f, NULL, &data, &len);
		if (!p || p->in < 0 || p->close_in)
			break; /* stdin of a gone process: like a closed pipe */
		uint8_t *nb = realloc(p->inbuf, p->inlen + len);
		if (!nb)
			break;
		p->inbuf = nb;
		memcpy(p->inbuf + p->inlen, data, len);
		p->inlen += len;
		flush_stdin(p);
		break;
	}
	case MSG_REQ_STDIN_CLOSE: {
		struct proc *p = proc_of_frame(ci, f, NULL, NULL, NULL);
		if (p) {
			p->close_in = true;
			flush_stdin(p);
		}
		break;
	}
	case MSG_REQ_SIGNAL: {
		uint64_t sig = 0;
		struct proc *p = proc_of_frame(ci, f, &sig, NULL, NULL);
		if (!p || sig == 0 || sig >= 65) {
			send_error(cfd, f->id, p ? EINVAL : ESRCH, p ? "signal: bad signal number" : "signal: no such process");
			break;
		}
		/* the command is a session leader: its pid is its group id */
		if (kill(-p->pid, (int)sig) < 0 && errno == ESRCH)
			(void)kill(p->pid, (int)sig);
		break;
	}
	case MSG_REQ_SHUTDOWN:
		shutdown_sandbox(0);
	default:
		send_error(cfd, f->id, EOPNOTSUPP, "unknown request type");
		break;
	}
}

static void client_drop(unsigned ci)
{
	close(clients[ci].fd);
	proto_reader_free(&clients[ci].rd);
	for (unsigned i = 0; i < MAX_PROCS; i++) {
		if (procs[i].pid && procs[i].client == (int)ci)
			procs[i].client = -1;
		else if (procs[i].pid && procs[i].client == (int)nclients - 1)
			procs[i].client = (int)ci;
	}
	clients[ci] = clients[nclients - 1];
	nclients--;
	if (ephemeral)
		shutdown_sandbox(0);
}

static void client_accept(void)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (nclients == MAX_CLIENTS) {
		close(fd);
		return;
	}
	clients[nclients].fd = fd;
	proto_reader_init(&clients[nclients].rd, fd);
	nclients++;
	struct proto_msg m;
	proto_msg_init(&m, MSG_HELLO, 0);
	proto_put_u64(&m, F_VERSION, ABOX_PROTO_VERSION);
	proto_put_u64(&m, F_PID, (uint64_t)getpid());
	(void)proto_send(fd, &m);
	proto_msg_free(&m);
}

static void client_read(unsigned ci)
{
	int k = proto_reader_fill(&clients[ci].rd);
	if (k == -EAGAIN)
		return;
	if (k <= 0 && (k < 0 || clients[ci].rd.eof)) {
		client_drop(ci);
		return;
	}
	struct proto_frame f;
	while ((k = proto_reader_next(&clients[ci].rd, &f)) > 0)
		handle_frame((int)ci, &f);
	if (k < 0) /* a peer that breaks framing is cut off */
		client_drop(ci);
}

int main(int argc, char **argv)
{
	/* First thing: not dumpable (see the file comment). execve reset it. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* exec from a memfd names the process after the fd; ps and
	 * /proc/1/comm should say what it is */
	prctl(PR_SET_NAME, "abox-init", 0, 0, 0);

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "ephemeral") == 0)
			ephemeral = true;
		else if (strncmp(argv[i], "timeout_ms=", 11) == 0)
			deadline_ms = now_ms() + strtoll(argv[i] + 11, NULL, 10);
	}

	/* The creator's death ends an ephemeral sandbox (the signal was set
	 * before exec); a long-lived one must outlive whoever created it. */
	if (!ephemeral)
		prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return 125;
	fcntl(listen_fd, F_SETFD, FD_CLOEXEC);
	fcntl(listen_fd, F_SETFL, O_NONBLOCK);

	struct pollfd pfd[2 + MAX_CLIENTS + 3 * MAX_PROCS];
	for (;;) {
		nfds_t n = 0;
		pfd[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
		for (unsigned i = 0; i < nclients; i++) {
			/* back-pressure: while a command has a full stdin queue from
			 * this client, stop reading the client */
			bool full = false;
			for (unsigned j = 0; j < MAX_PROCS; j++)
				if (procs[j].pid && procs[j].client == (int)i &&
				    procs[j].inlen > STDIN_HIGH_WATER)
					full = true;
			pfd[n++] = (struct pollfd){ .fd = clients[i].fd, .events = full ? 0 : POLLIN };
		}
		for (unsigned j = 0; j < MAX_PROCS; j++) {
			struct proc *p = &procs[j];
			if (!p->pid)
				continue;
			pfd[n++] = (struct pollfd){ .fd = p->out, .events = POLLIN };
			pfd[n++] = (struct pollfd){ .fd = p->err, .events = POLLIN };
			pfd[n++] = (struct pollfd){ .fd = p->inlen ? p->in : -1, .events = POLLOUT };
		}
		int timeout = -1;
		if (deadline_ms) {
			int64_t left = deadline_ms - now_ms();
			if (left <= 0)
				shutdown_sandbox(124);
			timeout = left > INT32_MAX ? INT32_MAX : (int)left;
		}
		int r = poll(pfd, n, timeout);
		if (r < 0 && errno != EINTR)
			shutdown_sandbox(125);
		if (r <= 0)
			continue;

		/* Output first, then exits: a command's last bytes must precede
		 * its end event. */
		nfds_t at = 2 + nclients;
		for (unsigned j = 0; j < MAX_PROCS; j++) {
			struct proc *p = &procs[j];
			if (!p->pid)
				continue;
			if (pfd[at].revents)
				drain(p, &p->out, MSG_EV_STDOUT, false);
			if (pfd[at + 1].revents)
				drain(p, &p->err, MSG_EV_STDERR, false);
			if (pfd[at + 2].revents)
				flush_stdin(p);
			at += 3;
		}
		if (pfd[0].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) > 0)
				;
			reap();
		}
		for (unsigned i = nclients; i-- > 0;) {
			if (pfd[2 + i].revents)
				client_read(i);
		}
		if (pfd[1].revents)
			client_accept();
	}
}
