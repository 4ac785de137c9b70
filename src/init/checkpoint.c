/* checkpoint.c — abox-init's part of a memory checkpoint: on request it
 * lets go of every host fd (clients, the listening socket, the commands'
 * cgroup) so CRIU can dump the tree, and it re-arms after a restore or
 * when the requester goes away. Runs only inside the sandbox, as its PID 1. */
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

/* between MSG_REQ_CHECKPOINT and a re-arm: no host fds, nobody served */
static bool checkpointing;
static char ckpt_token[64];

/* Lets go of every fd that leads out of the sandbox, so a checkpointer can
 * dump the tree: the clients (after the answer went out), the listening
 * socket, the writable layer's fd. A restored init must not die with its
 * restorer either: the parent-death signal goes. */
void ckpt_handle(int ci, const struct proto_frame *f)
{
	size_t off = 0;
	struct proto_field fl;
	char *tok = NULL;
	while (proto_field_next(f, &off, &fl) > 0)
		if (fl.tag == F_NAME && !tok && proto_field_strdup(&fl, &tok) < 0)
			tok = NULL;
	if (!tok || !*tok || strlen(tok) >= sizeof(ckpt_token) || strspn(tok, "abcdefghijklmnopqrstuvwxyz0123456789") != strlen(tok)) {
		free(tok);
		init_send_error(ci, f->id, EINVAL, "checkpoint: bad token");
		return;
	}
	/* an asker that is gone already (killed right after it sent this)
	 * cannot dump, nor re-arm us: letting go now would leave a sandbox
	 * nobody can reach, since its keeper, which saw us still listening,
	 * has left. The request is dropped; everything stays as it was. */
	struct pollfd hp = { .fd = clients[ci].fd, .events = POLLRDHUP };
	if (poll(&hp, 1, 0) > 0 && (hp.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		free(tok);
		return;
	}
	safe_snprintf(ckpt_token, sizeof(ckpt_token), "%s", tok);
	free(tok);
	prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
	creator_bound = false;
	/* everything but the asker first; the asker's connection closes
	 * last, after the answer: its end of file tells the host that
	 * nothing is left (it dumps as soon as it sees it) */
	close(listen_fd);
	listen_fd = -1;
	close(INIT_LAYER_FD);
	/* a cgroup file is not the checkpointer's to dump (and names the
	 * old sandbox's cgroup): the re-arm brings the new one */
	child_cgroup_drop();
	checkpointing = true;
	procs_clocks_run(false);
	for (unsigned i = nclients; i-- > 0;)
		if ((int)i != ci)
			clients_drop(i);
	unsigned me = 0; /* the asker is the only one left */
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_OK, f->id);
	init_queue((int)me, &m);
	/* the answer is small: out now, blocking briefly if need be */
	int fl0 = fcntl(clients[me].fd, F_GETFL);
	fcntl(clients[me].fd, F_SETFL, fl0 & ~O_NONBLOCK);
	(void)proto_flush(clients[me].fd, &clients[me].out);
	clients_drop(me);
}

/* SIGUSR2 while checkpointing: fetch the new listening socket and layer
 * fd from the host (see INIT_REARM_NAME). Anything odd leaves us waiting
 * for the next try. */
bool ckpt_waiting(void)
{
	return checkpointing;
}

void ckpt_rearm(void)
{
	if (!checkpointing)
		return;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t nl = (size_t)safe_snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "%s%s", INIT_REARM_NAME, ckpt_token);
	struct timeval tv = { .tv_sec = 2 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + nl)) < 0) {
		close(s);
		return;
	}
	char byte;
	int got[3] = { -1, -1, -1 }, fds[3] = { -1, -1, -1 };
	size_t nfd = 0;
	ssize_t n = fd_recv(s, &byte, 1, got, 3, &nfd, 0);
	close(s);
	if (n != 1 || nfd < 2) {
		for (size_t i = 0; i < nfd; i++)
			close(got[i]);
		return;
	}
	/* the kernel gave the lowest free numbers, which may be 3, 4 and 5
	 * themselves: move them all out of the way before placing them */
	for (size_t i = 0; i < nfd; i++) {
		fds[i] = fcntl(got[i], F_DUPFD_CLOEXEC, 10);
		close(got[i]);
	}
	/* the commands' cgroup, when the host sent one */
	if (fds[2] >= 0) {
		if (dup3(fds[2], INIT_CMDS_FD, O_CLOEXEC) >= 0)
			child_cgroup_probe();
		close(fds[2]);
	}
	struct stat a, b;
	bool ok = fds[0] >= 0 && fds[1] >= 0 && fstat(fds[0], &a) == 0 && S_ISSOCK(a.st_mode) &&
		  fstat(fds[1], &b) == 0 && S_ISDIR(b.st_mode) && dup3(fds[0], INIT_LISTEN_FD, O_CLOEXEC) >= 0 &&
		  dup3(fds[1], INIT_LAYER_FD, O_CLOEXEC) >= 0;
	close_if_open(fds[0]);
	close_if_open(fds[1]);
	if (!ok)
		return;
	listen_fd = INIT_LISTEN_FD;
	fcntl(listen_fd, F_SETFL, O_NONBLOCK);
	checkpointing = false;
	procs_clocks_run(true);
}
