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
 * copied, whatever the size of the daemon) and the namespace outlives it
 * through the fd we open. It makes the namespace as the range's first id,
 * not as host root: the kernel charges a namespace's per-user counts
 * (inotify instances and watches, user namespaces, message queue bytes)
 * to its creator as well, so one sandbox using up its share uses up its
 * own id's, never root's or another sandbox's. Raw system calls: glibc's
 * setresuid would signal every thread of ours to change theirs too.
 * It keeps no fd but its pipe: in a daemon making sandboxes on several
 * threads at once, a helper holding copies of other fds (another
 * helper's pipe, a client's socket) would keep them open. It reports
 * with one byte, 'u' (made) or 'e', then waits to be killed. */
static int holder(void *arg)
{
	const struct userns_job *j = arg;
	int fd = j->h_ready;
	if (fd > 0)
		syscall(SYS_close_range, 0, fd - 1, 0);
	syscall(SYS_close_range, fd + 1, ~0U, 0);
	char c = 'u';
	if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, j->base, j->base, j->base) < 0 ||
	    syscall(SYS_setresuid, j->base, j->base, j->base) < 0 || syscall(SYS_unshare, CLONE_NEWUSER) < 0)
		c = 'e';
	syscall(SYS_write, fd, &c, 1);
	for (;;)
		syscall(SYS_pause);
	return 0;
}

static int write_map(pid_t pid, const char *file, const char *map)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, file);
	return write_file_at(AT_FDCWD, p, map);
}

int userns_begin(uint32_t base, struct userns_job *j, abox_error *err)
{
	int rp[2];
	*j = (struct userns_job){ .pid = -1, .ready_fd = -1, .base = base };
	if (pipe2(rp, O_CLOEXEC) < 0)
		return abox_error_set(err, errno, "user namespace: pipe");
	j->ready_fd = rp[0];
	j->h_ready = rp[1];
	/* no exit signal: only a wait with __WCLONE (ours) reaps it, so its
	 * pid stays ours to kill until we have */
	pid_t pid = clone(holder, j->stack + sizeof(j->stack), CLONE_VM, j);
	int e = errno;
	close(rp[1]);
	if (pid < 0) {
		userns_abort(j);
		return abox_error_set(err, e, "user namespace: clone");
	}
	j->pid = pid;
	return 0;
}

void userns_abort(struct userns_job *j)
{
	if (j->ready_fd >= 0)
		close(j->ready_fd);
	j->ready_fd = -1;
	if (j->pid > 0) {
		kill(j->pid, SIGKILL);
		while (waitpid(j->pid, NULL, __WCLONE) < 0 && errno == EINTR)
			;
	}
	j->pid = -1;
}

int userns_finish(struct userns_job *j, abox_error *err)
{
	int r = 0, fd = -1;
	char c = 0;
	if (j->pid <= 0)
		return abox_error_setx(err, EINVAL, "user namespace: not begun");
	ssize_t n;
	while ((n = read(j->ready_fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1 || c != 'u')
		r = abox_error_setx(err, EPERM, "user namespace: this kernel refused to make one (unshare)");
	char map[64];
	snprintf(map, sizeof(map), "0 %u %u\n", j->base, UIDPOOL_RANGE);
	if (r >= 0 && (r = write_map(j->pid, "uid_map", map)) < 0)
		abox_error_set(err, -r, "user namespace: write uid_map");
	else if (r >= 0 && (r = write_map(j->pid, "gid_map", map)) < 0)
		abox_error_set(err, -r, "user namespace: write gid_map");
	if (r >= 0) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/ns/user", (int)j->pid);
		if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
			r = abox_error_set(err, errno, "user namespace: open '%s'", p);
	}
	userns_abort(j);
	return r < 0 ? r : fd;
}

int userns_new(uint32_t base, abox_error *err)
{
	struct userns_job j;
	int r = userns_begin(base, &j, err);
	return r < 0 ? r : userns_finish(&j, err);
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
