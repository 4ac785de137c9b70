/* disk/spares.c — disks made ahead, so that a create takes a ready one
 * instead of waiting for image, loop device and mount (≈ 2 ms idle, far
 * more on a busy host).
 *
 * A helper process (forked once, low priority) makes disks and sends each
 * as its mount fd over a socket pair; the taker sends a token back for
 * every disk it takes, so at most `count` spares exist. Spares in flight
 * are fds in the socket's queue: when this process or the helper dies,
 * the kernel closes them and each disk is released (autoclear), so there
 * is nothing to clean up.
 * Runs in a long-lived process (aboxd); the helper runs disk_new only. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "base/fdpass.h"
#include "base/run.h"
#include "disk/disk.h"

#define REFILL_DELAY_MS 50

static struct {
	int sock;
	uint64_t bytes;
	char state_dir[4096];
} pool = { .sock = -1 };

static int send_one(int sock, int fd, const char *msg)
{
	ssize_t w = fd_send(sock, msg, strlen(msg) + 1, &fd, fd >= 0 ? 1 : 0, 0);
	return w < 0 ? (int)w : 0;
}

_Noreturn static void helper(int sock, pid_t parent)
{
	/* ends with its creator (then the queued spares are released) */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(0);
	prctl(PR_SET_NAME, "abox-disks", 0, 0, 0);
	/* creates come first: spares are made in the time between them */
	(void)setpriority(PRIO_PROCESS, 0, 10);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* nothing of the creator's but the socket */
	if (dup2(sock, 3) < 0)
		_exit(1);
	(void)syscall(SYS_close_range, 4, ~0U, 0);
	for (;;) {
		char token;
		ssize_t k = recv(3, &token, 1, 0);
		if (k <= 0)
			_exit(0);
		/* the token comes as a create takes a spare: that create
		 * goes first, this one is made once it is done (on two cores,
		 * loop and mount work beside it slows it by a millisecond) */
		usleep(REFILL_DELAY_MS * 1000);
		abox_error e = ABOX_ERROR_INIT;
		int m = disk_new(pool.state_dir, pool.bytes, &e);
		int r = send_one(3, m, m < 0 ? e.msg : "");
		if (m >= 0)
			close(m);
		if (r < 0)
			_exit(0);
	}
}

int disk_spares_start(const char *state_dir, uint64_t bytes, unsigned count, abox_error *err)
{
	if (pool.sock >= 0)
		return abox_error_setx(err, EALREADY, "disk: spare disks are made already");
	if (!count)
		return 0;
	if (strlen(state_dir) >= sizeof(pool.state_dir))
		return abox_error_setx(err, ENAMETOOLONG, "disk: state folder name too long");
	/* the first blank image now, so the helper never runs mkfs */
	abox_error pe = ABOX_ERROR_INIT;
	int r = disk_probe(state_dir, &pe);
	if (r < 0) {
		if (err)
			*err = pe;
		return r;
	}
	int m = disk_new(state_dir, bytes, err);
	if (m < 0)
		return m;
	close(m);
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return abox_error_set(err, errno, "disk: socketpair");
	safe_snprintf(pool.state_dir, sizeof(pool.state_dir), "%s", state_dir);
	pool.bytes = (bytes + 4095) / 4096 * 4096;
	pid_t parent = getpid();
	pid_t p = fork_with(sp, err, "disk: fork the helper");
	if (p < 0)
		return p;
	if (p == 0) {
		close(sp[0]);
		helper(sp[1], parent);
	}
	close(sp[1]);
	for (unsigned i = 0; i < count; i++)
		if (send(sp[0], "t", 1, MSG_NOSIGNAL) != 1) {
			int e = errno;
			close(sp[0]);
			return abox_error_set(err, e, "disk: start the helper");
		}
	pool.sock = sp[0];
	return 0;
}

int disk_spare_take(const char *state_dir, uint64_t bytes)
{
	int sock = __atomic_load_n(&pool.sock, __ATOMIC_ACQUIRE);
	if (sock < 0 || (bytes + 4095) / 4096 * 4096 != pool.bytes || strcmp(state_dir, pool.state_dir) != 0)
		return -ENOENT;
	char msg[600];
	int fd = -1;
	size_t nfd;
	ssize_t k = fd_recv(sock, msg, sizeof(msg) - 1, &fd, 1, &nfd, MSG_DONTWAIT);
	if (k < 0)
		return (int)k; /* -EAGAIN: none ready */
	if (k == 0)
		return -EPIPE; /* the helper is gone: the caller makes its own */
	(void)send(sock, "t", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	/* a failed one: the caller makes its own, and reports why */
	return nfd == 1 ? fd : -EAGAIN;
}
