/* local/checkpoint/checkpointer.c — the checkpoint hook as a program:
 * which one this machine uses ($ABOX_CHECKPOINTER, the one recorded in the
 * state folder by scripts/criu-setup.sh, else CRIU where it usually is),
 * whether it works and its version, running it with its output in a log
 * and a time limit, and the lines of that log that say what went wrong.
 * "Works" is proven, not assumed: `criu check` passes on kernels where
 * a dump then hangs for ever (seen: a CRIU whose parasite never traps
 * back under a paravirtualised kernel), so the checkpointer is first
 * made to dump a process of its own, under a time limit, once per
 * checkpointer and kernel (the verdict kept in the state folder). One
 * that fails is not used: pauses keep their memory frozen in place, and
 * what needs a checkpoint is refused, naming why (`abox doctor`).
 * Not here: what it is asked to dump or restore, and the tree's side of a
 * checkpoint (hook.c, restore.c). Runs in the CLI/daemon, as root. */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
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

/* The recorded or usual checkpointer, not yet tried. */
static char *find(abox_ctx *ctx)
{
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

char *checkpointer_find(abox_ctx *ctx)
{
	const char *env = getenv("ABOX_CHECKPOINTER");
	if (env && *env)
		return strdup(env); /* as given, even when wrong: the error names it */
	char *hook = find(ctx);
	abox_error e = ABOX_ERROR_INIT;
	if (hook && checkpointer_trial(ctx, hook, &e) < 0) {
		backend_log(ctx, ABOX_LOG_DEBUG, "checkpointer %s not used: %s", hook, e.msg);
		free(hook);
		return NULL;
	}
	return hook;
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

/* How long one run of the checkpointer may take: a dump of gigabytes
 * takes seconds, one that takes this long is stuck, and a caller that
 * waits for ever holds the sandbox's lock for ever. */
int checkpointer_timeout_ms(void)
{
	const char *e = getenv("ABOX_CHECKPOINT_TIMEOUT_S");
	long s = e && *e ? strtol(e, NULL, 10) : 600;
	return s > 0 && s < 86400 ? (int)(s * 1000) : 600000;
}

char **checkpointer_environ(void)
{
	size_t n = 0;
	bool set = false;
	for (; environ && environ[n]; n++)
		set = set || strncmp(environ[n], "CRIU_FAULT=", 11) == 0;
	char **e = calloc(n + 2, sizeof(*e));
	if (!e)
		return NULL;
	if (n)
		memcpy(e, environ, n * sizeof(*e));
	if (!set)
		e[n] = (char *)"CRIU_FAULT=130";
	return e;
}

static int run_hook_bounded(const char *hook, const char **argv, const char *log, const char *what,
			    int timeout_ms, abox_error *err)
{
	argv[0] = hook;
	char name[4200];
	safe_snprintf(name, sizeof(name), "the checkpointer '%s'", hook);
	int st;
	bool timed_out;
	_cleanup_free_ char **env = checkpointer_environ();
	if (!env)
		return abox_error_set(err, ENOMEM, "%s", what);
	int r = run_quiet_within(hook, argv, env, timeout_ms, &st, &timed_out, what, name, err);
	if (r < 0)
		return r;
	if (timed_out) {
		char tail[2048];
		checkpoint_log_tail(log, tail, sizeof(tail));
		return abox_error_setx(
			err, ETIMEDOUT,
			"%s: the checkpointer did not finish in %d s and was killed (log %s)%s", what,
			timeout_ms / 1000, log, tail);
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	char tail[2048];
	checkpoint_log_tail(log, tail, sizeof(tail));
	return abox_error_setx(err, EIO, "%s: the checkpointer failed (%s %d; log %s)%s", what,
			       WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), log,
			       tail);
}

/* Runs the hook with argv (argv[0] is replaced by its path); its output
 * goes to the log it is told to write. */
int checkpoint_run_hook(const char *hook, const char **argv, const char *log, const char *what,
			abox_error *err)
{
	return run_hook_bounded(hook, argv, log, what, checkpointer_timeout_ms(), err);
}

/* How long the trial dump may take: a sleeping process dumps in well
 * under a second; ABOX_CHECKPOINT_TRIAL_S (tests) sets another bound. */
#define TRIAL_AGAIN_MS (10 * 60 * 1000)

static int trial_ms(void)
{
	const char *e = getenv("ABOX_CHECKPOINT_TRIAL_S");
	long s = e && *e ? strtol(e, NULL, 10) : 15;
	return s > 0 && s < 3600 ? (int)(s * 1000) : 15000;
}

/* What the verdict is kept for: the checkpointer (its path, size and
 * time: a new one is tried anew) and the kernel. */
static void trial_key(const char *hook, char *key, size_t n)
{
	struct stat st = { 0 };
	(void)stat(hook, &st);
	struct utsname u;
	if (uname(&u) < 0)
		memset(&u, 0, sizeof(u));
	/* a verdict reached with another CRIU_FAULT is not this one's */
	const char *fault = getenv("CRIU_FAULT");
	safe_snprintf(key, n, "%s %lld %lld %s %s fault=%s", hook, (long long)st.st_size,
		      (long long)st.st_mtime, u.release, u.version, fault ? fault : "130");
}

/* Dumps a process of our own (a child sleeping in its own session) with
 * the hook: 0 when the dump finishes in time. */
static int trial_dump(const char *hook, const char *dir, const char *log, abox_error *err)
{
	pid_t target = fork();
	if (target < 0)
		return abox_error_set(err, errno, "checkpointer trial: fork");
	if (target == 0) {
		setsid();
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		/* nothing of the caller's: a pidfd of a sandbox's init (the
		 * caller of a pause has one) is a process outside the dumped
		 * tree, which CRIU refuses, and the verdict kept would have
		 * said this kernel cannot checkpoint */
		(void)syscall(SYS_close_range, 3, ~0U, 0);
		for (;;)
			pause();
	}
	char pid[16];
	safe_snprintf(pid, sizeof(pid), "%d", (int)target);
	const char *argv[] = {
		NULL, "dump", "-t", pid, "-D", dir, "-o", log, "-v2", "--leave-running", NULL
	};
	abox_error e = ABOX_ERROR_INIT;
	int r = run_hook_bounded(hook, argv, log, "trial", trial_ms(), &e);
	if (r == -ETIMEDOUT) {
		abox_error_setx(err, ETIMEDOUT,
				"a trial dump of a sleeping process did not finish in %d s (log %s)",
				trial_ms() / 1000, log);
	} else if (r < 0) {
		/* the log's last error line, on one line */
		char tail[512];
		checkpoint_log_tail(log, tail, sizeof(tail));
		char *last = strrchr(tail, '\n');
		abox_error_setx(err, e.code, "a trial dump of a sleeping process failed (log %s): %s", log,
				last ? last + 3 : e.msg);
	}
	kill(target, SIGKILL);
	while (waitpid(target, NULL, 0) < 0 && errno == EINTR)
		;
	return r;
}

int checkpointer_trial(abox_ctx *ctx, const char *hook, abox_error *err)
{
	char key[4600], path[4200];
	trial_key(hook, key, sizeof(key));
	safe_snprintf(path, sizeof(path), "%s/checkpointer-trial", ctx->state_dir);
	_cleanup_free_ char *kept = NULL;
	size_t kl = strlen(key);
	if (read_file_at(AT_FDCWD, path, 65536, &kept, NULL) >= 0 && !strncmp(kept, key, kl) &&
	    kept[kl] == '\n') {
		char *verdict = kept + kl + 1, *nl = verdict + strcspn(verdict, "\n");
		long long until = 0;
		if (*nl)
			(void)sscanf(nl + 1, "until %lld", &until);
		*nl = '\0';
		if (!strcmp(verdict, "ok"))
			return 0;
		if (!until || clock_wall_ms() < until)
			return abox_error_setx(err, EOPNOTSUPP, "%s", verdict);
	}
	char dir[] = "/tmp/abox-criu-trial.XXXXXX", log[4300];
	if (!mkdtemp(dir))
		return abox_error_set(err, errno, "checkpointer trial: temp folder");
	/* a state folder not made yet (`abox doctor` on a fresh host): the
	 * log in the trial's folder, and no verdict kept */
	bool keep = access(ctx->state_dir, W_OK) == 0;
	if (keep)
		safe_snprintf(log, sizeof(log), "%s.log", path);
	else
		safe_snprintf(log, sizeof(log), "%s/trial.log", dir);
	abox_error e = ABOX_ERROR_INIT;
	int r = trial_dump(hook, dir, log, &e);
	(void)rm_rf_at(AT_FDCWD, dir, 0);
	for (char *c = e.msg; *c; c++)
		if (*c == '\n')
			*c = ' ';
	/* kept for the next caller: a verdict, never a half-written one */
	char text[5200], tmp[4300];
	struct utsname u;
	if (uname(&u) < 0)
		memset(&u, 0, sizeof(u));
	char verdict[1024];
	safe_snprintf(verdict, sizeof(verdict), "cannot checkpoint on this kernel (%s): %s", u.release,
		      e.msg);
	/* a dump that failed says so for good (until the checkpointer or the
	 * kernel changes); one that only took too long may have met a busy
	 * machine: kept for TRIAL_AGAIN_MS, so that no caller waits for a
	 * hang again and again, and a passing load does not end checkpoints
	 * here for ever */
	char until[48] = "";
	if (r == -ETIMEDOUT)
		safe_snprintf(until, sizeof(until), "until %lld\n",
			      (long long)(clock_wall_ms() + TRIAL_AGAIN_MS));
	safe_snprintf(text, sizeof(text), "%s\n%s\n%s", key, r < 0 ? verdict : "ok", until);
	safe_snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	if (keep)
		(void)write_file_replace(path, tmp, text, strlen(text), 0644, false);
	if (r < 0)
		return abox_error_setx(err, EOPNOTSUPP, "%s", verdict);
	return 0;
}

int local_checkpointer_check(abox_ctx *ctx, char **hook_out, char **version, abox_error *err)
{
	if (hook_out)
		*hook_out = NULL;
	if (version)
		*version = NULL;
	const char *env = getenv("ABOX_CHECKPOINTER");
	_cleanup_free_ char *hook = env && *env ? strdup(env) : find(ctx);
	if (!hook)
		return abox_error_setx(err, ENOENT, "no checkpointer (set $ABOX_CHECKPOINTER)");
	if (hook_out && !(*hook_out = strdup(hook)))
		return abox_error_set(err, ENOMEM, "checkpointer");
	/* the log: a file unlinked at once, named to the checkpointer by our
	 * fd, so that no kill of this process (a test's, a user's ^C) leaves
	 * one behind in /tmp */
	char tmp[] = "/tmp/abox-criu-check.XXXXXX";
	_cleanup_close_ int fd = mkstemp(tmp);
	if (fd < 0)
		return abox_error_set(err, errno, "checkpointer: temp file");
	unlink(tmp);
	char log[64];
	safe_snprintf(log, sizeof(log), "/proc/%d/fd/%d", (int)getpid(), fd);
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
	int r = run_hook_bounded(hook, argv, log, "checkpointer check", trial_ms(), err);
	/* a check that passes says little: a real dump must finish too */
	if (r >= 0)
		r = checkpointer_trial(ctx, hook, err);
	return r;
}
