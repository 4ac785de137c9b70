/* base/run.c — see run.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "base.h"
#include "base/run.h"

int wait_child(pid_t pid, abox_error *err, const char *fmt, ...)
{
	int st;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			va_list ap;
			va_start(ap, fmt);
			int r = abox_error_vset(err, errno, true, fmt, ap);
			va_end(ap);
			return r;
		}
	}
	return st;
}

pid_t fork_with(int pair[2], abox_error *err, const char *fmt, ...)
{
	pid_t pid = fork();
	if (pid >= 0)
		return pid;
	int e = errno;
	close(pair[0]);
	close(pair[1]);
	va_list ap;
	va_start(ap, fmt);
	int r = abox_error_vset(err, e, true, fmt, ap);
	va_end(ap);
	return r;
}

/* Waits for pid at most timeout_ms (-1: for ever); on expiry it is
 * killed, and *timed_out says so. The caller reaps it. */
static void bound(pid_t pid, int timeout_ms, bool *timed_out)
{
	*timed_out = false;
	int pfd = timeout_ms >= 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	if (pfd < 0)
		return;
	struct pollfd p = { .fd = pfd, .events = POLLIN };
	int n;
	while ((n = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	if (n == 0) {
		*timed_out = true;
		kill(pid, SIGKILL);
	}
	close(pfd);
}

int run_quiet_within(const char *path, const char *const *argv, char *const *envp, int timeout_ms,
		     int *status, bool *timed_out, const char *what, const char *name, abox_error *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int se = posix_spawn(&pid, path, &fa, NULL, (char *const *)argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (se != 0)
		return abox_error_set(err, se, "%s: run %s", what, name);
	bound(pid, timeout_ms, timed_out);
	int st = wait_child(pid, err, "%s: wait for %s", what, name);
	if (st < 0)
		return st;
	*status = st;
	return 0;
}

int run_quiet(const char *path, const char *const *argv, char *const *envp, int *status, const char *what,
	      const char *name, abox_error *err)
{
	bool timed_out;
	return run_quiet_within(path, argv, envp, -1, status, &timed_out, what, name, err);
}
