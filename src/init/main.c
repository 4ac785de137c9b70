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
 * This file is the start and the poll loop; requests.c maps each host
 * request to its handler, the client table is clients.c, processes
 * procs.c, output.c, stdin.c and exec.c, checkpoints checkpoint.c, files
 * files.c, meta.c and watch.c, an OCI container's process oci.c
 * (tables.h holds what they share). */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "base/base.h"
#include "base/clock.h"
#include "base/sudo_wire.h"
#include "init.h"
#include "proto/messages.h"
#include "proto/proto.h"
#include "tables.h"

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

/* "nosudo": the create turned the sandbox's sudo off (sudo.c) */
static bool sudo_off;

int main(int argc, char **argv)
{
	/* First thing: not dumpable (see the file comment). execve reset it. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	init_confine();
	oci_caps_park();
	/* exec from a memfd names the process after the fd; ps and
	 * /proc/1/comm should say what it is */
	prctl(PR_SET_NAME, "abox-init", 0, 0, 0);
	/* the creator's supplementary groups (root's 0, say) would otherwise
	 * widen what a file operation done as a user may touch */
	syscall(SYS_setgroups, 0L, NULL);
	clients_on_drop(client_gone);

	/* not PID 1 (a container in a pod's shared pid namespace): other
	 * containers' processes can stop a child before its exec, which a
	 * child sharing init's memory would make init wait for */
	if (getpid() != 1)
		child_always_fork();
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "ephemeral") == 0)
			ephemeral = true;
		else if (strcmp(argv[i], "spawn=fork") == 0)
			child_always_fork();
		else if (strncmp(argv[i], "timeout_ms=", 11) == 0)
			init_deadline_ms = clock_boot_ms() + strtoll(argv[i] + 11, NULL, 10);
		else if (strncmp(argv[i], "memory=", 7) == 0)
			memguard_set_limit(strtoull(argv[i] + 7, NULL, 10));
		else if (strcmp(argv[i], "nosudo") == 0)
			sudo_off = true;
		else if (strcmp(argv[i], "oci") == 0)
			oci_mode = true;
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
	if (oci_mode)
		oci_signals(&mask);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return 125;
	fcntl(listen_fd, F_SETFD, FD_CLOEXEC);
	fcntl(INIT_LAYER_FD, F_SETFD, FD_CLOEXEC);
	child_cgroup_probe();
	if (!sudo_off)
		sudo_listen();
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

	static struct pollfd pfd[2 + MAX_CLIENTS + 4 * MAX_PROCS + 16 + SUDO_MAX + 1];
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
		nfds_t sudo_at = n;
		n += sudo_pollfds(&pfd[n]);
		int timeout = -1;
		if (init_deadline_ms) {
			int64_t left = init_deadline_ms - clock_boot_ms();
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
		sudo_ready(&pfd[sudo_at]);
		if (pfd[0].revents) {
			struct signalfd_siginfo si;
			bool want_rearm = false;
			while (read(sfd, &si, sizeof(si)) > 0) {
				if (!oci_signal((int)si.ssi_signo, si.ssi_code, (int)si.ssi_pid))
					want_rearm |= si.ssi_signo == INIT_REARM_SIGNAL;
			}
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
