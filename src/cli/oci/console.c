/* oci/console.c — an fd handed to a container engine over a socket it
 * names, as runc does: a terminal's master over --console-socket, a
 * process's pidfd over --pidfd-socket. One message on a unix socket, a
 * name as its data and the fd as SCM_RIGHTS, before the verb returns. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "oci.h"

static int send_fd(const char *opt, const char *path, const char *name, int fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	if (strlen(path) >= sizeof(sa.sun_path))
		return oci_error("--%s '%s': path too long", opt, path);
	if (stat(path, &st) < 0)
		return oci_error("--%s '%s': %s", opt, path, strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return oci_error("--%s '%s': not a socket", opt, path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		if (s >= 0)
			close(s);
		return oci_error("--%s '%s': connect: %s", opt, path, strerror(e));
	}
	struct iovec iov = { .iov_base = (void *)name, .iov_len = strlen(name) };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	memset(&c, 0, sizeof(c));
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf)
	};
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	ssize_t w = sendmsg(s, &m, MSG_NOSIGNAL);
	int e = errno;
	close(s);
	if (w < 0)
		return oci_error("--%s '%s': send the %s: %s", opt, path,
				 strcmp(opt, "pidfd-socket") ? "terminal" : "pidfd", strerror(e));
	return 0;
}

int oci_console_send(const char *path, int master)
{
	return send_fd("console-socket", path, "/dev/ptmx", master);
}

int oci_pidfd_send(const char *path, pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return oci_error("--pidfd-socket: a pidfd of %d: %s", (int)pid, strerror(errno));
	int r = send_fd("pidfd-socket", path, "pidfd", fd);
	close(fd);
	return r;
}
