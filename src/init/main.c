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
 * It never blocks on anyone: sockets and pipes are non-blocking, events
 * wait in a per-client queue, and a client that does not read slows down
 * the commands it listens to (their pipes are no longer drained) instead of
 * stalling init. A child that stops before its exec does not stall it
 * either: the exec result is read from the poll loop.
 *
 * Runs inside the sandbox's namespaces under the sandbox's seccomp policy
 * and capability bounding set. Not dumpable: processes in the sandbox,
 * which lack CAP_SYS_PTRACE, can neither ptrace it nor open its /proc
 * files (mem, fds, environ).
 *
 * This file is the poll loop and the dispatch of host frames; the client
 * table is clients.c, processes procs.c and exec.c, checkpoints
 * checkpoint.c, files files.c, meta.c and watch.c (tables.h holds what
 * they share). */
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "base/base.h"
#include "base/clock.h"
#include "base/fdpass.h"
#include "init.h"
#include "proto/messages.h"
#include "proto/proto.h"
#include "tables.h"

int listen_fd = INIT_LISTEN_FD;
bool ephemeral;
bool exiting;
int exit_code;
static int64_t deadline_ms; /* CLOCK_BOOTTIME, 0 = none */




/* A client went away: every table keyed by client number follows. */
static void client_gone(unsigned ci, unsigned last)
{
	files_client_gone((int)ci);
	watch_client_gone((int)ci);
	if (last != ci) {
		files_client_moved((int)last, (int)ci);
		watch_client_moved((int)last, (int)ci);
	}
	procs_client_gone(ci, last);
}

void init_handle_frame(int ci, const struct proto_frame *f)
{
	for (unsigned i = 0; i < f->nfds; i++)
		close(f->fds[i]); /* no request of this version passes fds in */
	switch (f->type) {
	case MSG_REQ_EXEC:
		procs_exec(ci, f);
		break;
	case MSG_REQ_STDIN: {
		const uint8_t *data = NULL;
		size_t len = 0;
		struct proc *p = proc_of_frame(ci, f, NULL, &data, &len);
		if (!p)
			break; /* stdin of a gone process: like a closed pipe */
		if (p->in < 0 || p->close_in) {
			proc_ack_stdin(p, len); /* consumed: dropped */
			break;
		}
		if (p->inlen + len > STDIN_HARD_LIMIT) {
			clients[ci].doomed = true; /* ignores the window */
			return;
		}
		uint8_t *nb = realloc(p->inbuf, p->inlen + len);
		if (!nb)
			break;
		p->inbuf = nb;
		memcpy(p->inbuf + p->inlen, data, len);
		p->inlen += len;
		proc_flush_stdin(p);
		break;
	}
	case MSG_REQ_STDIN_CLOSE: {
		struct proc *p = proc_of_frame(ci, f, NULL, NULL, NULL);
		if (p) {
			p->close_in = true;
			proc_flush_stdin(p);
		}
		break;
	}
	case MSG_REQ_SIGNAL: {
		uint64_t sig = 0;
		struct proc *p = proc_of_frame(ci, f, &sig, NULL, NULL);
		if (!p || p->state == P_EXITED || sig == 0 || sig >= 65) {
			init_send_error(ci, f->id, p && p->state != P_EXITED ? EINVAL : ESRCH,
				   !p ? "signal: no such process" : p->state == P_EXITED ? "signal: the process has ended"
										: "signal: bad signal number");
			break;
		}
		/* the command is a session leader: its pid is its group id
		 * (until its setsid ran, only the pid itself exists) */
		if (kill(-p->pid, (int)sig) < 0 && errno == ESRCH)
			(void)kill(p->pid, (int)sig);
		break;
	}
	case MSG_REQ_DETACH: {
		/* the creator recorded us: from now on we outlive it */
		prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
		creator_bound = false;
		struct proto_msg m;
		proto_msg_init(&m, MSG_EV_OK, f->id);
		init_queue(ci, &m);
		break;
	}
	case MSG_REQ_SET_TIMEOUT: {
		size_t off = 0;
		struct proto_field fl;
		uint64_t ms = 0, flags = 0;
		bool have = false;
		while (proto_field_next(f, &off, &fl) > 0) {
			if (fl.tag == F_TIMEOUT_MS && proto_field_u64(&fl, &ms) == 0)
				have = true;
			else if (fl.tag == F_FLAGS)
				(void)proto_field_u64(&fl, &flags);
		}
		if (!have || ms > (uint64_t)INT32_MAX * 1000) {
			init_send_error(ci, f->id, EINVAL, "set-timeout: bad value");
			break;
		}
		deadline_ms = ms ? clock_boot_ms() + (int64_t)ms : 0;
		if (flags & (CLOCKS_STOP | CLOCKS_RUN))
			procs_clocks_run(flags & CLOCKS_RUN);
		struct proto_msg m;
		proto_msg_init(&m, MSG_EV_OK, f->id);
		init_queue(ci, &m);
		break;
	}
	case MSG_REQ_ATTACH:
		procs_attach(ci, f);
		break;
	case MSG_REQ_RESIZE: {
		struct proc *p = proc_of_frame(ci, f, NULL, NULL, NULL);
		uint64_t rows = 0, cols = 0;
		size_t off = 0;
		struct proto_field fl;
		while (proto_field_next(f, &off, &fl) > 0) {
			if (fl.tag == F_ROWS)
				(void)proto_field_u64(&fl, &rows);
			else if (fl.tag == F_COLS)
				(void)proto_field_u64(&fl, &cols);
		}
		if (!p || !p->pty || p->out < 0 || !rows || !cols || rows > 1000 || cols > 1000) {
			init_send_error(ci, f->id, p && p->pty ? EINVAL : ENOTTY,
				   p && p->pty ? "resize: bad size" : "resize: not a process on a terminal");
			break;
		}
		/* the kernel sends SIGWINCH to the terminal's foreground group */
		struct winsize ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
		(void)ioctl(p->out, TIOCSWINSZ, &ws);
		break;
	}
	case MSG_REQ_LIST:
		procs_list(ci, f);
		break;
	case MSG_REQ_FS_READ:
	case MSG_REQ_FS_WRITE:
	case MSG_REQ_FS_DATA:
	case MSG_REQ_FS_CLOSE:
	case MSG_REQ_FS_STAT:
	case MSG_REQ_FS_LIST:
	case MSG_REQ_FS_MKDIR:
	case MSG_REQ_FS_MOVE:
	case MSG_REQ_FS_REMOVE:
	case MSG_REQ_FS_WATCH:
		files_handle(ci, f);
		break;
	case MSG_REQ_FS_META_GET:
	case MSG_REQ_FS_META_SET:
		meta_handle(ci, f);
		break;
	case MSG_REQ_ACCOUNTS:
		users_accounts(ci, f);
		break;
	case MSG_REQ_FS_UNWATCH: {
		watch_stop(ci, f->id);
		struct proto_msg m;
		proto_msg_init(&m, MSG_EV_OK, f->id);
		init_queue(ci, &m);
		break;
	}
	case MSG_REQ_METRICS: {
		struct statfs sf;
		struct proto_msg m;
		if (fstatfs(INIT_LAYER_FD, &sf) < 0) {
			init_send_error(ci, f->id, errno, "metrics: statfs of the writable layer failed");
			break;
		}
		proto_msg_init(&m, MSG_EV_OK, f->id);
		proto_put_u64(&m, F_DISK_USED, (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize);
		proto_put_u64(&m, F_DISK_TOTAL, (uint64_t)sf.f_blocks * (uint64_t)sf.f_bsize);
		init_queue(ci, &m);
		break;
	}
	case MSG_REQ_CHECKPOINT:
		ckpt_handle(ci, f);
		break;
	case MSG_REQ_SHUTDOWN:
		init_shutdown(0);
	default:
		init_send_error(ci, f->id, EOPNOTSUPP, "unknown request type");
		break;
	}
}

int main(int argc, char **argv)
{
	/* First thing: not dumpable (see the file comment). execve reset it. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* exec from a memfd names the process after the fd; ps and
	 * /proc/1/comm should say what it is */
	prctl(PR_SET_NAME, "abox-init", 0, 0, 0);
	/* the creator's supplementary groups (root's 0, say) would otherwise
	 * widen what a file operation done as a user may touch */
	syscall(SYS_setgroups, 0L, NULL);
	clients_on_drop(client_gone);

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "ephemeral") == 0)
			ephemeral = true;
		else if (strcmp(argv[i], "spawn=fork") == 0)
			child_always_fork();
		else if (strncmp(argv[i], "timeout_ms=", 11) == 0)
			deadline_ms = clock_boot_ms() + strtoll(argv[i] + 11, NULL, 10);
		else if (strncmp(argv[i], "memory=", 7) == 0)
			memguard_set_limit(strtoull(argv[i] + 7, NULL, 10));
	}
	/* procs[] is not touched here: its fds are set when a slot is taken
	 * (an idle sandbox keeps those pages unallocated) */

	/* The creator's death ends the sandbox (the signal was set before
	 * exec) until a long-lived one is detached (MSG_REQ_DETACH). */

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, INIT_REARM_SIGNAL);
	sigaddset(&mask, watchdog_signal());
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return 125;
	fcntl(listen_fd, F_SETFD, FD_CLOEXEC);
	fcntl(INIT_LAYER_FD, F_SETFD, FD_CLOEXEC);
	child_cgroup_probe();
	fcntl(listen_fd, F_SETFL, O_NONBLOCK);
	/* An ephemeral sandbox's creator may hand over one end of a
	 * connected pair instead of a listening socket: it is the only
	 * client there will ever be. */
	int listening = 1;
	socklen_t ll = sizeof(listening);
	if (ephemeral && getsockopt(listen_fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) == 0 && !listening) {
		clients_add(listen_fd);
		listen_fd = -1;
	}

	static struct pollfd pfd[2 + MAX_CLIENTS + 4 * MAX_PROCS + 16];
	for (;;) {
		/* a client that hung up may still have requests in flight (a
		 * signal, a resize, then close): stop writing to it, keep
		 * reading it until its end of file */
		for (unsigned i = nclients; i-- > 0;)
			if (proto_outq_len(&clients[i].out) && proto_flush(clients[i].fd, &clients[i].out) < 0) {
				clients[i].mute = true;
				proto_outq_free(&clients[i].out);
			}
		if (exiting && (clients_queues_empty() || nclients == 0))
			init_shutdown(exit_code);
		nfds_t n = 0;
		pfd[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = exiting ? -1 : listen_fd, .events = POLLIN };
		for (unsigned i = 0; i < nclients; i++) {
			/* clients are always read: stdin is bounded by its window,
			 * so signals never wait behind it */
			short ev = exiting ? 0 : POLLIN;
			if (proto_outq_len(&clients[i].out))
				ev |= POLLOUT;
			pfd[n++] = (struct pollfd){ .fd = clients[i].fd, .events = ev };
		}
		for (unsigned j = 0; j < procs_used; j++) {
			struct proc *p = &procs[j];
			if (p->state == P_FREE || p->state == P_EXITED)
				continue;
			bool hold = proc_output_blocked(p);
			pfd[n++] = (struct pollfd){ .fd = p->ep, .events = POLLIN };
			pfd[n++] = (struct pollfd){ .fd = hold ? -1 : p->out, .events = POLLIN };
			pfd[n++] = (struct pollfd){ .fd = hold ? -1 : p->err, .events = POLLIN };
			pfd[n++] = (struct pollfd){ .fd = p->inlen ? p->in : -1, .events = POLLOUT };
		}
		nfds_t watch_at = n;
		n += watch_pollfds(&pfd[n]);
		int timeout = -1;
		if (deadline_ms) {
			int64_t left = deadline_ms - clock_boot_ms();
			if (left <= 0)
				init_shutdown(124);
			timeout = left > INT32_MAX ? INT32_MAX : (int)left;
		}
		int64_t next_kill = procs_kill_timed_out();
		if (next_kill >= 0 && (timeout < 0 || next_kill < timeout))
			timeout = (int)next_kill;
		int r = poll(pfd, n, timeout);
		if (r < 0 && errno != EINTR) {
			/* EINVAL: our fd limit was lowered below what we poll; take
			 * the hard limit back if we may, else end cleanly */
			struct rlimit rl;
			if (errno == EINVAL && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
				rl.rlim_cur = rl.rlim_max;
				if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
					continue;
			}
			init_shutdown(125);
		}
		if (r <= 0)
			continue;

		/* Output first, then exits: a command's last bytes must precede
		 * its end event. */
		nfds_t at = 2 + nclients;
		for (unsigned j = 0; j < procs_used; j++) {
			struct proc *p = &procs[j];
			if (p->state == P_FREE || p->state == P_EXITED)
				continue;
			struct pollfd *q = &pfd[at];
			at += 4;
			if (q[0].revents && p->state == P_STARTING)
				proc_started(p);
			if (p->state == P_FREE || p->state == P_EXITED)
				continue;
			if (q[1].revents)
				proc_drain(p, &p->out, p->pty ? MSG_EV_PTY : MSG_EV_STDOUT, CHUNK);
			if (q[2].revents)
				proc_drain(p, &p->err, MSG_EV_STDERR, CHUNK);
			if (q[3].revents)
				proc_flush_stdin(p);
		}
		watch_ready(&pfd[watch_at]);
		if (pfd[0].revents) {
			struct signalfd_siginfo si;
			bool want_rearm = false;
			while (read(sfd, &si, sizeof(si)) > 0)
				want_rearm |= si.ssi_signo == INIT_REARM_SIGNAL;
			procs_reap();
			if (want_rearm)
				ckpt_rearm();
		}
		for (unsigned i = nclients; i-- > 0;) {
			/* a request may have dropped clients (a checkpoint
			 * drops them all): their slots are gone */
			if (i >= nclients)
				continue;
			short rev = pfd[2 + i].revents;
			if (!rev)
				continue;
			if ((rev & POLLOUT) && proto_flush(clients[i].fd, &clients[i].out) < 0) {
				clients[i].mute = true;
				proto_outq_free(&clients[i].out);
			}
			if ((rev & (POLLIN | POLLHUP | POLLERR)) && !clients_read(i, init_handle_frame))
				continue;
		}
		if (pfd[1].revents)
			clients_accept();
	}
}
