/* abox-init/child.c — starts one command inside the sandbox.
 *
 * Runs in abox-init (PID 1 of the sandbox) and, after fork, in the child
 * until exec. The child becomes a session leader so that a signal request
 * reaches the whole process group (`bash -c 'sleep 1000 & sleep 1000'` dies
 * entirely), drops to the requested user, and reports a failed exec through
 * a close-on-exec pipe so "command not found" is never confused with a
 * command that exited 127 on its own. */
#include <fcntl.h>
#include <termios.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "base/base.h"
#include "init.h"

void exec_req_free(struct exec_req *req)
{
	strv_free(req->argv);
	strv_free(req->env);
	free(req->cwd);
	free(req->home);
	free(req->user);
	free(req->tag);
	free(req->tee_dir);
	memset(req, 0, sizeof(*req));
}

static const char *env_get(char **env, const char *key)
{
	size_t k = strlen(key);
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], key, k) == 0 && env[i][k] == '=')
			return env[i] + k + 1;
	return NULL;
}

/* Child side, after fork: only system calls and the safe formatter. */
struct child_err {
	int code;
	char msg[480];
};

_Noreturn static void child_fail(int errfd, int code, const char *what, const char *arg)
{
	struct child_err e = { .code = code };
	safe_snprintf(e.msg, sizeof(e.msg), "%s '%s': %s", what, arg,
		      errno_name(code) ? errno_name(code) : "error");
	(void)write_full(errfd, &e, sizeof(e));
	_exit(code == ENOENT && strcmp(what, "exec") == 0 ? 127 : 126);
}

static void exec_path(const char *file, char **argv, char **envp, int errfd)
{
	if (strchr(file, '/')) {
		execve(file, argv, envp);
		child_fail(errfd, errno, "exec", file);
	}
	const char *path = env_get(envp, "PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int first_err = ENOENT;
	char buf[4096];
	for (const char *p = path;; p++) {
		const char *e = strchr(p, ':');
		size_t dl = e ? (size_t)(e - p) : strlen(p);
		if (dl + 1 + strlen(file) + 1 <= sizeof(buf)) {
			if (dl == 0) {
				buf[0] = '.';
				dl = 1;
			} else {
				memcpy(buf, p, dl);
			}
			buf[dl] = '/';
			strcpy(buf + dl + 1, file);
			execve(buf, argv, envp);
			/* like execvp: remember a permission problem, keep looking
			 * past missing entries */
			if (errno != ENOENT && errno != ENOTDIR && first_err == ENOENT)
				first_err = errno;
		}
		if (!e)
			break;
		p = e;
	}
	child_fail(errfd, first_err, "exec", file);
}

int child_exec_result(int ep, int *exec_errno, char *errbuf, size_t errlen)
{
	struct child_err ce;
	ssize_t got = read(ep, &ce, sizeof(ce));
	if (got < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : 0;
	if (got != (ssize_t)sizeof(ce))
		return 0; /* EOF: the exec happened (or the child died first) */
	ce.msg[sizeof(ce.msg) - 1] = '\0';
	safe_snprintf(errbuf, errlen, "%s", ce.msg);
	*exec_errno = ce.code;
	return 1;
}

struct child_args {
	const struct exec_req *req;
	char **envp;
	int in, out, err, ep;
	bool pty;
};

/* The child, between fork and exec. */
__attribute__((noinline, noreturn)) static void child_exec(const struct child_args *a)
{
	const struct exec_req *req = a->req;
	int ep = a->ep;
	/* init has no handlers (exec resets those) but blocks SIGCHLD and
	 * ignores SIGPIPE, and both would survive the exec */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	setsid();
	/* init is shielded from the OOM killer (-1000); commands must not
	 * inherit that, or a memory hog could never be stopped */
	(void)write_file_at(AT_FDCWD, "/proc/self/oom_score_adj", "0");
	if (a->pty && ioctl(a->err, TIOCSCTTY, 0) < 0)
		child_fail(ep, errno, "ioctl", "TIOCSCTTY"); /* the terminal becomes ours */
	if (dup2(a->in, 0) < 0 || dup2(a->out, 1) < 0 || dup2(a->err, 2) < 0)
		child_fail(ep, errno, "dup2", "stdio");
	/* Keep only stdio and the exec-error pipe from here on: init's other
	 * fds (other commands' stdin ends, the agent socket) are
	 * close-on-exec, but a child stopped before its exec would otherwise
	 * hold them open, and another command would never see EOF on its
	 * stdin. */
	if (dup2(ep, 3) < 0)
		_exit(126);
	fcntl(3, F_SETFD, FD_CLOEXEC);
	ep = 3;
	(void)syscall(SYS_close_range, 4, ~0U, 0);
	/* raw system calls: the child is single-threaded, libc's
	 * all-threads machinery would only add signal-mask round trips */
	if (syscall(SYS_setgroups, 0, NULL) < 0)
		child_fail(ep, errno, "setgroups", req->user ? req->user : "?");
	if (syscall(SYS_setresgid, req->gid, req->gid, req->gid) < 0)
		child_fail(ep, errno, "setgid", req->user ? req->user : "?");
	if (syscall(SYS_setresuid, req->uid, req->uid, req->uid) < 0)
		child_fail(ep, errno, "setuid", req->user ? req->user : "?");
	if (req->cwd && chdir(req->cwd) < 0)
		child_fail(ep, errno, "cwd", req->cwd);
	exec_path(req->argv[0], req->argv, a->envp, ep);
	_exit(127);
}

int child_spawn(const struct exec_req *req, pid_t *pid, struct exec_fds *fds)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int r = 0;

	if (!req->argv || !req->argv[0])
		return -EINVAL;
	int master = -1, slave = -1;
	if (req->pty_rows && req->pty_cols) {
		/* A terminal: the master stays with init, the command gets the
		 * peer as its controlling tty. /dev/pts/ptmx of the sandbox's
		 * own devpts (a mount point the sandbox cannot replace), and the
		 * peer through TIOCGPTPEER: no path the sandbox controls. */
		master = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
		int unlock = 0;
		if (master < 0 || ioctl(master, TIOCSPTLCK, &unlock) < 0)
			goto fail;
		slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (slave < 0)
			goto fail;
		struct winsize ws = { .ws_row = req->pty_rows, .ws_col = req->pty_cols };
		(void)ioctl(master, TIOCSWINSZ, &ws);
		in[0] = slave;
		in[1] = fcntl(master, F_DUPFD_CLOEXEC, 0);
		out[0] = master;
		out[1] = slave;
		if (in[1] < 0)
			goto fail;
	} else if (req->flags & 1u) {
		if (pipe2(in, O_CLOEXEC) < 0)
			goto fail;
	} else {
		/* An empty pipe whose writer is gone: reads see EOF at once.
		 * Not /dev/null by path: the sandbox owns /dev and could have
		 * put a FIFO there that blocks PID 1 in open(). */
		int e[2];
		if (pipe2(e, O_CLOEXEC) < 0)
			goto fail;
		close(e[1]);
		in[0] = e[0];
	}
	if ((master < 0 && pipe2(out, O_CLOEXEC) < 0) || (master < 0 && pipe2(err, O_CLOEXEC) < 0) ||
	    pipe2(ep, O_CLOEXEC) < 0)
		goto fail;
	/* init never waits on the child: a child stopped before its exec
	 * (SIGSTOP from a sandboxed process) must not stall PID 1 */
	fcntl(ep[0], F_SETFL, O_NONBLOCK);

	/* Environment: defaults first, the request's entries override. */
	size_t n = strv_length(req->env);
	char **envp = calloc(n + 8, sizeof(char *));
	if (!envp) {
		errno = ENOMEM;
		goto fail;
	}
	size_t k = 0;
	static char path_def[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	static char lang_def[] = "LANG=C.UTF-8";
	char home[512], user[128], logname[128];
	safe_snprintf(home, sizeof(home), "HOME=%s", req->home ? req->home : "/");
	safe_snprintf(user, sizeof(user), "USER=%s", req->user ? req->user : "root");
	safe_snprintf(logname, sizeof(logname), "LOGNAME=%s", req->user ? req->user : "root");
	static char term_def[] = "TERM=xterm-256color";
	char *defs[] = { path_def, home, user, logname, lang_def, term_def };
	for (size_t i = 0; i < ELEMENTSOF(defs) - (master >= 0 ? 0 : 1); i++) {
		const char *eq = strchr(defs[i], '=');
		char key[32];
		size_t kl = (size_t)(eq - defs[i]);
		memcpy(key, defs[i], kl);
		key[kl] = '\0';
		if (!env_get(req->env, key))
			envp[k++] = defs[i];
	}
	/* the sandbox's env comes first, the command's after it: for a key
	 * given twice the later one wins */
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(req->env[i], '=');
		size_t kl = eq ? (size_t)(eq - req->env[i]) + 1 : strlen(req->env[i]);
		bool later = false;
		for (size_t j = i + 1; j < n && n <= 4096 && !later; j++)
			later = strncmp(req->env[j], req->env[i], kl) == 0;
		if (!later)
			envp[k++] = req->env[i];
	}
	envp[k] = NULL;

	struct child_args a = {
		.req = req, .envp = envp, .in = in[0], .out = out[1],
		.err = master >= 0 ? slave : err[1], .ep = ep[1], .pty = master >= 0,
	};
	/* fork, not vfork: a vfork parent stays suspended until the child
	 * execs, and a process in the sandbox could SIGSTOP the child before
	 * that (once it has the target uid, or always as the sandbox's root)
	 * and so freeze PID 1: no more deadline, no more requests. */
	pid_t c = fork();
	if (c == 0)
		child_exec(&a);
	if (c < 0) {
		free(envp);
		goto fail;
	}
	free(envp);
	close(ep[1]);
	close(in[0]);
	if (master < 0) {
		close(out[1]);
		close(err[1]);
	}
	*pid = c;
	fds->in = in[1];
	fds->out = out[0];
	fds->err = master >= 0 ? -1 : err[0];
	fds->ep = ep[0];
	return 0;

fail:
	r = -errno;
	if (master >= 0) {
		/* in/out hold the pty ends: close each once */
		if (in[1] >= 0)
			close(in[1]);
		close(master);
		if (slave >= 0)
			close(slave);
		if (ep[0] >= 0)
			close(ep[0]);
		if (ep[1] >= 0)
			close(ep[1]);
		return r;
	}
	if (slave >= 0)
		close(slave);
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
		if (ep[i] >= 0)
			close(ep[i]);
	}
	return r;
}
