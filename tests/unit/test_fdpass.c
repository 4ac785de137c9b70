/* Unit tests of base/fdpass: fds over a socket pair, close-on-exec on
 * arrival, and no fd kept beyond the receiver's room. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fdpass.h"

static int open_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

Test(fdpass, fds_and_bytes_arrive_together_close_on_exec)
{
	int sv[2], p[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(fd_send(sv[0], "hello", 5, p, 2, 0), 5);
	char buf[16] = { 0 };
	int got[2] = { -1, -1 };
	size_t n = 9;
	cr_assert_eq(fd_recv(sv[1], buf, sizeof(buf), got, 2, &n, 0), 5);
	cr_assert_str_eq(buf, "hello");
	cr_assert_eq(n, 2);
	cr_assert(fcntl(got[0], F_GETFD) & FD_CLOEXEC, "a received fd must be close-on-exec");
	/* the same pipe: what goes into the received write end comes out */
	cr_assert_eq(write(got[1], "x", 1), 1);
	char c = 0;
	cr_assert_eq(read(p[0], &c, 1), 1);
	cr_assert_eq(c, 'x');
	for (int i = 0; i < 2; i++) {
		close(got[i]);
		close(p[i]);
	}
	close(sv[0]);
	close(sv[1]);
}

Test(fdpass, fds_beyond_the_room_are_closed_not_leaked)
{
	int sv[2], p[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(pipe(p), 0);
	int many[6] = { p[0], p[1], p[0], p[1], p[0], p[1] };
	cr_assert_eq(fd_send(sv[0], "m", 1, many, 6, 0), 1);
	int before = open_fds();
	char b;
	int got[2];
	size_t n = 0;
	cr_assert_eq(fd_recv(sv[1], &b, 1, got, 2, &n, 0), 1);
	cr_assert_eq(n, 2);
	cr_assert_eq(open_fds(), before + 2, "only the two there was room for are open");
	close(got[0]);
	close(got[1]);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}

Test(fdpass, no_fds_and_bad_arguments)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	int fd = 0;
	cr_assert_eq(fd_send(sv[0], "", 0, &fd, 1, 0), -EINVAL, "fds need at least one byte to travel with");
	cr_assert_eq(fd_send(sv[0], "a", 1, &fd, FDPASS_MAX + 1, 0), -EINVAL);
	cr_assert_eq(fd_send(sv[0], "ab", 2, NULL, 0, 0), 2);
	char buf[4];
	size_t n = 7;
	cr_assert_eq(fd_recv(sv[1], buf, sizeof(buf), NULL, 0, &n, 0), 2);
	cr_assert_eq(n, 0);
	close(sv[0]);
	cr_assert_eq(fd_recv(sv[1], buf, sizeof(buf), NULL, 0, &n, MSG_DONTWAIT), 0, "closed peer: 0");
	close(sv[1]);
}
