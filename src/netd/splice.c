/* netd/splice.c — dialling and splicing (splice.h).
 * Runs in abox-netd. */
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base.h"
#include "splice.h"

int splice_connect(uint32_t addr, uint16_t port, int timeout_ms)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = port, .sin_addr.s_addr = addr };
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		return -e;
	}
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int e = 0;
	socklen_t el = sizeof(e);
	if (poll(&p, 1, timeout_ms) <= 0)
		e = ETIMEDOUT;
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		e = errno;
	if (e) {
		close(fd);
		return -e;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/* Both ways through pipes: the bytes never come up to user space. */
void splice_both(int a, int b, uint64_t *a_to_b, uint64_t *b_to_a)
{
	int pa[2], pb[2];
	if (pipe2(pa, O_CLOEXEC | O_NONBLOCK) < 0)
		return;
	if (pipe2(pb, O_CLOEXEC | O_NONBLOCK) < 0) {
		close(pa[0]);
		close(pa[1]);
		return;
	}
	size_t in_a = 0, in_b = 0; /* bytes waiting in each pipe */
	bool eof_a = false, eof_b = false;
	while (!(eof_a && in_a == 0 && eof_b && in_b == 0)) {
		struct pollfd p[2] = {
			{ .fd = a, .events = (short)((eof_a ? 0 : POLLIN) | (in_b ? POLLOUT : 0)) },
			{ .fd = b, .events = (short)((eof_b ? 0 : POLLIN) | (in_a ? POLLOUT : 0)) }
		};
		if (poll(p, 2, 600000) <= 0)
			break; /* ten minutes of silence both ways */
		if ((p[0].revents | p[1].revents) & POLLNVAL)
			break;
		bool moved = false;
		if (!eof_a && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t n = splice(a, NULL, pa[1], NULL, 1 << 20, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0)
				in_a += (size_t)n, moved = true;
			else if (n == 0 || (errno != EAGAIN && errno != EINTR))
				eof_a = true, moved = true;
		}
		if (!eof_b && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t n = splice(b, NULL, pb[1], NULL, 1 << 20, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0)
				in_b += (size_t)n, moved = true;
			else if (n == 0 || (errno != EAGAIN && errno != EINTR))
				eof_b = true, moved = true;
		}
		if (in_a) {
			ssize_t n = splice(pa[0], NULL, b, NULL, in_a, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0)
				in_a -= (size_t)n, *a_to_b += (uint64_t)n, moved = true;
			else if (n < 0 && errno != EAGAIN && errno != EINTR)
				break;
		}
		if (in_b) {
			ssize_t n = splice(pb[0], NULL, a, NULL, in_b, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0)
				in_b -= (size_t)n, *b_to_a += (uint64_t)n, moved = true;
			else if (n < 0 && errno != EAGAIN && errno != EINTR)
				break;
		}
		/* a side done and its bytes delivered: the other learns */
		if (eof_a && in_a == 0)
			shutdown(b, SHUT_WR);
		if (eof_b && in_b == 0)
			shutdown(a, SHUT_WR);
		if (!moved && (p[0].revents | p[1].revents) & POLLERR)
			break;
	}
	close(pa[0]);
	close(pa[1]);
	close(pb[0]);
	close(pb[1]);
}
