/* base/run.c — see run.h. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include "base.h"
#include "base/run.h"

int run_quiet(const char *path, const char *const *argv, char *const *envp, int *status, const char *what,
	      const char *name, abox_error *err)
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
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return abox_error_set(err, errno, "%s: wait for %s", what, name);
	return 0;
}
