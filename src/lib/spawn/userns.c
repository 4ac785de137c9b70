/* spawn/userns.c — see userns.h. */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn/userns.h"
#include "store/uidpool.h"

/* The namespace's first member: it shares our memory (no page tables
 * copied, whatever the size of the daemon) and only waits for the pipe to
 * close; the namespace outlives it through the fd we open. */
static int holder(void *arg)
{
	char c;
	const int *pp = arg;
	int fd = pp[0];
	/* its copy of the write end would keep the pipe open forever */
	syscall(SYS_close, pp[1]);
	while (syscall(SYS_read, fd, &c, 1) < 0 && errno == EINTR)
		;
	syscall(SYS_exit, 0);
	return 0;
}

static int write_map(pid_t pid, const char *file, const char *map)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, file);
	return write_file_at(AT_FDCWD, p, map);
}

int userns_new(uint32_t base, abox_error *err)
{
	int pp[2];
	if (pipe2(pp, O_CLOEXEC) < 0)
		return abox_error_set(err, errno, "user namespace: pipe");
	/* its stack: the holder calls read and exit only */
	static _Thread_local char stack[16384] __attribute__((aligned(16)));
	pid_t pid = clone(holder, stack + sizeof(stack), CLONE_VM | CLONE_NEWUSER | SIGCHLD, pp);
	if (pid < 0) {
		int e = errno;
		close(pp[0]);
		close(pp[1]);
		return abox_error_set(err, e, "user namespace: clone");
	}
	char map[64];
	snprintf(map, sizeof(map), "0 %u %u\n", base, UIDPOOL_RANGE);
	int r = write_map(pid, "uid_map", map);
	if (r < 0)
		abox_error_set(err, -r, "user namespace: write uid_map");
	else if ((r = write_map(pid, "gid_map", map)) < 0)
		abox_error_set(err, -r, "user namespace: write gid_map");
	int fd = -1;
	if (r >= 0) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/ns/user", (int)pid);
		if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
			r = abox_error_set(err, errno, "user namespace: open '%s'", p);
	}
	close(pp[1]);
	close(pp[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return r < 0 ? r : fd;
}

bool userns_supported(void)
{
	static int known = -1;
	if (known < 0) {
		int fd = userns_new(UIDPOOL_DEFAULT_START, NULL);
		known = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	return known == 1;
}
