/* net/netns.c — a sandbox's network namespace, made by the creator while
 * the sandbox child builds its root: creating one costs ≈ 0.3-0.5 ms and
 * bringing its loopback up ≈ 0.1-0.2 ms more (the kernel adds the local
 * routes and ::1); done inside clone3 or by the child they would lie on
 * the critical path of every create.
 * On a host that withholds CAP_NET_ADMIN nobody here may bring `lo` up
 * in a namespace the host's user namespace owns, so the namespace is
 * made inside a user namespace of its own (netns_owned_apart). */
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fdpass.h"
#include "net/net.h"

/* The owner of the user namespaces made by netns_owned_apart: a uid no
 * sandbox process runs as. The kernel grants every capability in a user
 * namespace to the processes of its parent whose euid is its owner; with
 * owner 0 a sandbox's root (uid 0 of the host's namespace) would
 * administer its network namespace (links, nftables: kernel attack
 * surface) without holding CAP_NET_ADMIN itself. */
#define NETNS_OWNER_UID 4294967294u

bool net_can_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	return syscall(SYS_capget, &h, d) == 0 &&
	       (d[CAP_NET_ADMIN / 32].effective & (1u << (CAP_NET_ADMIN % 32)));
}

/* A child takes NETNS_OWNER_UID as its euid (its permitted capabilities
 * stay: its real uid is still 0), makes a user namespace and a network
 * namespace in it (where it holds every capability), brings `lo` up and
 * sends the namespace back. Only async-signal-safe calls in the child:
 * the caller may be threaded. */
static int netns_owned_apart(abox_error *err)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return abox_error_set(err, errno, "net: socketpair");
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sp[0]);
		close(sp[1]);
		return abox_error_set(err, e, "net: fork");
	}
	if (pid == 0) {
		close(sp[0]);
		int e = 0, fd = -1;
		if (syscall(SYS_setresuid, -1, NETNS_OWNER_UID, -1) < 0 ||
		    unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0 || (e = net_loopback_up(NULL)) < 0 ||
		    (fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
			e = e < 0 ? -e : errno;
		(void)fd_send(sp[1], &e, sizeof(e), fd >= 0 ? &fd : NULL, fd >= 0, 0);
		_exit(0);
	}
	close(sp[1]);
	int e = EPROTO, fd = -1;
	size_t nfd = 0;
	ssize_t n = fd_recv(sp[0], &e, sizeof(e), &fd, 1, &nfd, 0);
	close(sp[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(e) && e == 0 && nfd == 1)
		return fd;
	if (nfd == 1)
		close(fd);
	return abox_error_set(
		err, e ? e : EPROTO,
		"net: no CAP_NET_ADMIN here, and no user namespace could own the sandbox's network "
		"namespace");
}

int net_namespace_new(int (*inside)(void *ud, abox_error *err), void *ud, abox_error *err)
{
	/* unshare and setns act on the calling thread only: the rest of a
	 * multi-threaded caller (the daemon) stays where it is */
	_cleanup_close_ int own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (own < 0)
		return abox_error_set(err, errno, "net: open own network namespace");
	int fd;
	if (net_can_admin()) {
		if (unshare(CLONE_NEWNET) < 0)
			return abox_error_set(err, errno, "net: new network namespace");
		fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			abox_error_set(err, errno, "net: open the new network namespace");
	} else {
		if ((fd = netns_owned_apart(err)) < 0)
			return fd;
		if (setns(fd, CLONE_NEWNET) < 0) {
			int e = errno;
			close(fd);
			return abox_error_set(err, e, "net: enter the new network namespace");
		}
	}
	int r = fd < 0 ? -errno : 0;
	if (r >= 0 && inside)
		r = inside(ud, err);
	/* Back before anything else: a thread left in the sandbox's
	 * namespace would open its later sockets there (a daemon's listener
	 * reachable only from inside one sandbox). Leaving a namespace we
	 * just came from cannot fail short of a kernel bug; if it does,
	 * nothing this thread does afterwards can be trusted. */
	if (setns(own, CLONE_NEWNET) < 0)
		abort();
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

/* inside, run while this thread is in the network namespace of fd; the
 * thread comes back at once (see net_namespace_new). */
static int run_in(int fd, int (*inside)(void *ud, abox_error *err), void *ud, abox_error *err)
{
	_cleanup_close_ int own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (own < 0)
		return abox_error_set(err, errno, "net: open own network namespace");
	if (setns(fd, CLONE_NEWNET) < 0)
		return abox_error_set(err, errno, "net: enter the sandbox's network namespace");
	int r = inside(ud, err);
	if (setns(own, CLONE_NEWNET) < 0)
		abort();
	return r;
}

static int no_op(void *ud, abox_error *err)
{
	(void)ud;
	(void)err;
	return 0;
}

int net_namespace_enter(int fd, int (*inside)(void *ud, abox_error *err), void *ud, abox_error *err)
{
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (d < 0)
		return abox_error_set(err, errno, "net: dup the sandbox's network namespace");
	int r = run_in(d, inside ? inside : no_op, ud, err);
	if (r < 0) {
		close(d);
		return r;
	}
	return d;
}

struct listener {
	uint16_t port;
	int fd;
};

static int make_listener(void *ud, abox_error *err)
{
	struct listener *l = ud;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int e = fd < 0 ? errno : 0;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(l->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	/* a restarted netd binds again while connections of the one before
	 * linger in TIME_WAIT; a listener someone holds still refuses it */
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd >= 0 && (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0)) {
		e = errno;
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		return abox_error_set(err, e, "net: listen on 127.0.0.1:%u in the sandbox", l->port);
	l->fd = fd;
	return 0;
}

int net_listen_in(int netns_fd, uint16_t port, abox_error *err)
{
	struct listener l = { .port = port, .fd = -1 };
	int r = run_in(netns_fd, make_listener, &l, err);
	return r < 0 ? r : l.fd;
}
