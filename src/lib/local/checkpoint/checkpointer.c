/* local/checkpoint/checkpointer.c — the checkpoint hook as a program:
 * which one this machine uses ($ABOX_CHECKPOINTER, the one recorded in the
 * state folder by scripts/criu-setup.sh, else CRIU where it usually is),
 * whether it works and its version, running it with its output in a log,
 * and the lines of that log that say what went wrong.
 * Not here: what it is asked to dump or restore, and the tree's side of a
 * checkpoint (hook.c, restore.c). Runs in the CLI/daemon, as root. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/run.h"
#include "local/local.h"
#include "local/checkpoint/checkpoint.h"

extern char **environ;

static bool executable(const char *p)
{
	struct stat st;
	return p && *p && stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

char *checkpointer_find(abox_ctx *ctx)
{
	const char *env = getenv("ABOX_CHECKPOINTER");
	if (env && *env)
		return strdup(env); /* as given, even when wrong: the error names it */
	char conf[4200];
	safe_snprintf(conf, sizeof(conf), "%s/checkpointer", ctx->state_dir);
	_cleanup_free_ char *s = NULL;
	if (read_file_at(AT_FDCWD, conf, 4096, &s, NULL) >= 0) {
		s[strcspn(s, "\n")] = '\0';
		if (executable(s))
			return strdup(s);
	}
	static const char *const cands[] = { "/usr/local/sbin/criu", "/usr/sbin/criu", "/usr/bin/criu" };
	for (size_t i = 0; i < ELEMENTSOF(cands); i++)
		if (executable(cands[i]))
			return strdup(cands[i]);
	return NULL;
}

/* The last lines of a hook's log that say what went wrong. */
void checkpoint_log_tail(const char *log, char *out, size_t n)
{
	out[0] = '\0';
	_cleanup_free_ char *s = NULL;
	if (read_file_at(AT_FDCWD, log, 8u << 20, &s, NULL) < 0)
		return;
	/* the last error lines, or else the last lines at all: a log
	 * without one (the checkpointer died early, or failed quietly)
	 * must still say something */
	const char *lines[4] = { NULL }, *last[4] = { NULL };
	unsigned k = 0, all = 0;
	for (char *save = NULL, *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		last[all++ % 4] = l;
		if (strstr(l, "Error") || strstr(l, "error"))
			lines[k++ % 4] = l;
	}
	if (k == 0) {
		memcpy(lines, last, sizeof(lines));
		k = all;
	}
	for (unsigned i = k > 4 ? k - 4 : 0; i < k; i++) {
		size_t len = strlen(out);
		safe_snprintf(out + len, n - len, "\n  %s", lines[i % 4]);
	}
}

/* Runs the hook with argv (argv[0] is replaced by its path); its output
 * goes to the log it is told to write. */
int checkpoint_run_hook(const char *hook, const char **argv, const char *log, const char *what, abox_error *err)
{
	argv[0] = hook;
	char name[4200];
	safe_snprintf(name, sizeof(name), "the checkpointer '%s'", hook);
	int st;
	int r = run_quiet(hook, argv, environ, &st, what, name, err);
	if (r < 0)
		return r;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	char tail[2048];
	checkpoint_log_tail(log, tail, sizeof(tail));
	return abox_error_setx(err, EIO, "%s: the checkpointer failed (%s %d; log %s)%s", what,
			       WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), log,
			       tail);
}

int local_checkpointer_check(abox_ctx *ctx, char **hook_out, char **version, abox_error *err)
{
	if (hook_out)
		*hook_out = NULL;
	if (version)
		*version = NULL;
	_cleanup_free_ char *hook = checkpointer_find(ctx);
	if (!hook)
		return abox_error_setx(err, ENOENT, "no checkpointer (set $ABOX_CHECKPOINTER)");
	if (hook_out && !(*hook_out = strdup(hook)))
		return abox_error_set(err, ENOMEM, "checkpointer");
	char log[] = "/tmp/abox-criu-check.XXXXXX";
	int fd = mkstemp(log);
	if (fd < 0)
		return abox_error_set(err, errno, "checkpointer: temp file");
	close(fd);
	if (version) {
		/* `criu --version` prints "Version: X.Y" first */
		const char *vargv[] = { NULL, "--version", NULL };
		int p[2];
		if (pipe2(p, O_CLOEXEC) == 0) {
			posix_spawn_file_actions_t fa;
			posix_spawn_file_actions_init(&fa);
			posix_spawn_file_actions_adddup2(&fa, p[1], 1);
			posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
			vargv[0] = hook;
			pid_t pid;
			if (posix_spawn(&pid, hook, &fa, NULL, (char *const *)vargv, environ) == 0) {
				close(p[1]);
				p[1] = -1;
				char buf[256] = "";
				ssize_t n = read(p[0], buf, sizeof(buf) - 1);
				buf[n > 0 ? n : 0] = '\0';
				buf[strcspn(buf, "\n")] = '\0';
				while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
					;
				const char *v = strncmp(buf, "Version: ", 9) == 0 ? buf + 9 : buf;
				*version = *v ? strdup(v) : NULL;
			}
			posix_spawn_file_actions_destroy(&fa);
			close(p[0]);
			if (p[1] >= 0)
				close(p[1]);
		}
	}
	const char *argv[] = { NULL, "check", "-o", log, NULL };
	int r = checkpoint_run_hook(hook, argv, log, "checkpointer check", err);
	unlink(log);
	return r;
}
