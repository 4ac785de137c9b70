/* oci/console.c — a terminal's master handed to a container engine over
 * its --console-socket, as runc does: one message on a unix socket, the
 * master's name as its data and the fd as SCM_RIGHTS, before the verb
 * returns. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "oci.h"

int oci_console_send(const char *path, int master)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	if (strlen(path) >= sizeof(sa.sun_path))
		return oci_error("--console-socket '%s': path too long", path);
	if (stat(path, &st) < 0)
		return oci_error("--console-socket '%s': %s", path, strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return oci_error("--console-socket '%s': not a socket", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		if (s >= 0)
			close(s);
		return oci_error("--console-socket '%s': connect: %s", path, strerror(e));
	}
	static const char name[] = "/dev/ptmx";
	struct iovec iov = { .iov_base = (void *)name, .iov_len = sizeof(name) - 1 };
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
	memcpy(CMSG_DATA(h), &master, sizeof(int));
	ssize_t w = sendmsg(s, &m, MSG_NOSIGNAL);
	int e = errno;
	close(s);
	if (w < 0)
		return oci_error("--console-socket '%s': send the terminal: %s", path, strerror(e));
	return 0;
}
