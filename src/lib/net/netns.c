/* net/netns.c — a sandbox's network namespace, made by the creator while
 * the sandbox child builds its root: creating one costs ≈ 0.3-0.5 ms and
 * bringing its loopback up ≈ 0.1-0.2 ms more (the kernel adds the local
 * routes and ::1); done inside clone3 or by the child they would lie on
 * the critical path of every create. */
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "net/net.h"

int net_namespace_new(int (*inside)(void *ud, abox_error *err), void *ud, abox_error *err)
{
	/* unshare and setns act on the calling thread only: the rest of a
	 * multi-threaded caller (the daemon) stays where it is */
	_cleanup_close_ int own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (own < 0)
		return abox_error_set(err, errno, "net: open own network namespace");
	if (unshare(CLONE_NEWNET) < 0)
		return abox_error_set(err, errno, "net: new network namespace");
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	int r = fd < 0 ? abox_error_set(err, errno, "net: open the new network namespace") : 0;
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
