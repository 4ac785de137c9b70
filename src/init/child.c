/* abox-init/child.c — starts one command inside the sandbox.
 *
 * Runs in abox-init (PID 1 of the sandbox) and, until its exec, in the
 * child. The child becomes a session leader so that a signal request
 * reaches the whole process group (`bash -c 'sleep 1000 & sleep 1000'` dies
 * entirely), drops to the requested user, and reports a failed exec through
 * a close-on-exec pipe so "command not found" is never confused with a
 * command that exited 127 on its own.
 *
 * The child shares init's memory until its exec, with init suspended
 * (CLONE_VM | CLONE_VFORK, as posix_spawn does): no page tables to copy,
 * no copy-on-write faults in init afterwards, and the exec's result is
 * known when the clone returns. What makes that safe in PID 1:
 *  - a child stopped before its exec would freeze init: watchdog.c kills a
 *    child held there (when init is not alone in the sandbox: with no
 *    other process, nothing can hold it);
 *  - the child's change of uid sets the shared memory's dumpable flag to
 *    fs.suid_dumpable: with 1 ("debug"), a process of the target user could
 *    ptrace the child in that window and write into init's memory. With
 *    that setting (or no watchdog, or an architecture without the raw
 *    system calls below) commands are forked instead;
 *  - the child writes oom_score_adj 0: a vfork child's write applies to
 *    itself only (a plain CLONE_VM child's would reach init too);
 *  - the child only makes raw system calls and writes only its own stack:
 *    libc state (errno, locks) stays init's.
 *
 * Every command goes into the commands' cgroup (INIT_CMDS_FD, see
 * cgroup_cmds_fd) before its exec, so that its memory counts against the
 * user's limit there and an OOM picks its victims among the commands,
 * never init. v1: the child writes "0" to the cgroup's "tasks" file (that
 * thread only: no global lock). v2: the child is made there by clone3
 * (CLONE_INTO_CGROUP), forked rather than sharing init's memory; where
 * the seccomp policy refuses clone3, the forked child writes itself into
 * the cgroup's cgroup.procs instead (see CMDS_PROCS). */
#include <fcntl.h>
#include <sched.h>
#include <termios.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "base/base.h"
#include "init.h"
#include "proto/messages.h"

/* init is built against libc headers only (no kernel headers): the few
 * kernel constants and clone3's argument block it needs */
#define CG1_MAGIC 0x27e0ebu
#define CG2_MAGIC 0x63677270u
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
struct clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
		set_tid_size, cgroup;
};

/* How commands reach their cgroup (INIT_CMDS_FD). CMDS_PROCS: v2 when
 * clone3 is refused (the default seccomp policy answers it ENOSYS, since
 * it cannot read clone3's flags): the forked child writes itself into the
 * cgroup's cgroup.procs, which costs it a few ms (the kernel's
 * threadgroup lock) but leaves init free meanwhile. */
static enum { CMDS_NONE, CMDS_TASKS, CMDS_CLONE_INTO, CMDS_PROCS } cmds_mode;

void child_cgroup_probe(void)
{
	struct statfs sf;
	struct stat st;
	cmds_mode = CMDS_NONE;
	if (fstatfs(INIT_CMDS_FD, &sf) < 0 || fstat(INIT_CMDS_FD, &st) < 0)
		return;
	fcntl(INIT_CMDS_FD, F_SETFD, FD_CLOEXEC);
	if ((unsigned long)sf.f_type == CG1_MAGIC && S_ISREG(st.st_mode))
		cmds_mode = CMDS_TASKS;
	else if ((unsigned long)sf.f_type == CG2_MAGIC && S_ISDIR(st.st_mode))
		cmds_mode = CMDS_CLONE_INTO;
}

void child_cgroup_drop(void)
{
	if (cmds_mode != CMDS_NONE)
		close(INIT_CMDS_FD);
	cmds_mode = CMDS_NONE;
}

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

#if defined(__x86_64__)
#define SHARED_VM_SPAWN 1
static inline long rsys(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
#define SHARED_VM_SPAWN 1
static inline long rsys(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b, x2 __asm__("x2") = c,
			   x3 __asm__("x3") = d, x4 __asm__("x4") = e, x5 __asm__("x5") = f;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory", "cc");
	return x0;
}
#else
/* elsewhere the child is forked (its own memory): libc is safe to use */
#define SHARED_VM_SPAWN 0
static inline long rsys(long n, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(n, a, b, c, d, e, f);
	return r < 0 ? -errno : r;
}
#endif
#define RS0(n) rsys(n, 0, 0, 0, 0, 0, 0)
#define RS1(n, a) rsys(n, (long)(a), 0, 0, 0, 0, 0)
#define RS2(n, a, b) rsys(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define RS3(n, a, b, c) rsys(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define RS4(n, a, b, c, d) rsys(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

struct child_err {
	int code;
	char msg[480];
};

_Noreturn static void child_exit(int status)
{
	for (;;)
		(void)RS1(SYS_exit_group, status);
}

_Noreturn static void child_fail(int errfd, int code, const char *what, const char *arg)
{
	struct child_err e = { .code = code };
	safe_snprintf(e.msg, sizeof(e.msg), "%s '%s': %s", what, arg,
		      errno_name(code) ? errno_name(code) : "error");
	const char *p = (const char *)&e;
	for (size_t left = sizeof(e); left;) {
		long w = RS3(SYS_write, errfd, p, left);
		if (w == -EINTR)
			continue;
		if (w <= 0)
			break;
		p += w;
		left -= (size_t)w;
	}
	child_exit(code == ENOENT && strcmp(what, "exec") == 0 ? 127 : 126);
}

static void exec_path(const char *file, char **argv, char **envp, int errfd)
{
	if (strchr(file, '/')) {
		long r = RS3(SYS_execve, file, argv, envp);
		child_fail(errfd, (int)-r, "exec", file);
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
			long r = RS3(SYS_execve, buf, argv, envp);
			/* like execvp: remember a permission problem, keep looking
			 * past missing entries */
			if (r != -ENOENT && r != -ENOTDIR && first_err == ENOENT)
				first_err = (int)-r;
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

/* fd new becomes a copy of old without close-on-exec (dup2 semantics,
 * also when they are the same number). */
static long child_dup(int old, int new)
{
	return old == new ? RS3(SYS_fcntl, new, F_SETFD, 0) : RS3(SYS_dup3, old, new, 0);
}

/* The child, between its start and its exec. */
__attribute__((noinline, noreturn)) static void child_exec(const struct child_args *a)
{
	const struct exec_req *req = a->req;
	int ep = a->ep;
	/* init blocks SIGCHLD and ignores SIGPIPE, and both would survive the
	 * exec; it has no handlers (exec would reset those) */
	uint64_t none = 0;
	(void)RS4(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(none));
	struct {
		unsigned long handler, flags, restorer;
		uint64_t mask;
	} dfl = { 0 }; /* SIG_DFL */
	(void)RS4(SYS_rt_sigaction, SIGPIPE, &dfl, NULL, sizeof(uint64_t));
	(void)RS0(SYS_setsid);
	long r;
	/* v1: into the commands' cgroup before anything of the command's
	 * own can allocate; a command that cannot get there does not run
	 * (it would share init's cgroup and could take init down with it) */
	if (cmds_mode == CMDS_TASKS && (r = RS3(SYS_write, INIT_CMDS_FD, "0", 1)) != 1)
		child_fail(ep, r < 0 ? (int)-r : EIO, "join cgroup", "cmds");
	if (cmds_mode == CMDS_PROCS) {
		long pfd = RS4(SYS_openat, INIT_CMDS_FD, "cgroup.procs", O_WRONLY | O_CLOEXEC, 0);
		r = pfd < 0 ? pfd : RS3(SYS_write, pfd, "0", 1);
		if (r != 1)
			child_fail(ep, r < 0 ? (int)-r : EIO, "join cgroup", "cmds");
		(void)RS1(SYS_close, pfd);
	}
	/* init is shielded from the OOM killer (-1000); commands must not
	 * inherit that, or a memory hog could never be stopped */
	long oom = RS4(SYS_openat, AT_FDCWD, "/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC, 0);
	if (oom >= 0) {
		(void)RS3(SYS_write, oom, "0", 1);
		(void)RS1(SYS_close, oom);
	}
	if (a->pty && (r = RS3(SYS_ioctl, a->err, TIOCSCTTY, 0)) < 0)
		child_fail(ep, (int)-r, "ioctl", "TIOCSCTTY"); /* the terminal becomes ours */
	if ((r = child_dup(a->in, 0)) < 0 || (r = child_dup(a->out, 1)) < 0 || (r = child_dup(a->err, 2)) < 0)
		child_fail(ep, (int)-r, "dup2", "stdio");
	/* Keep only stdio and the exec-error pipe from here on: init's other
	 * fds (other commands' stdin ends, the agent socket) are
	 * close-on-exec, but a child stopped before its exec would otherwise
	 * hold them open, and another command would never see EOF on its
	 * stdin. */
	if (child_dup(ep, 3) < 0)
		child_exit(126);
	(void)RS3(SYS_fcntl, 3, F_SETFD, FD_CLOEXEC);
	ep = 3;
	(void)RS3(SYS_close_range, 4, ~0U, 0);
	if ((r = RS2(SYS_setgroups, req->ngroups, req->groups)) < 0)
		child_fail(ep, (int)-r, "setgroups", req->user ? req->user : "?");
	if ((r = RS3(SYS_setresgid, req->gid, req->gid, req->gid)) < 0)
		child_fail(ep, (int)-r, "setgid", req->user ? req->user : "?");
	if ((r = RS3(SYS_setresuid, req->uid, req->uid, req->uid)) < 0)
		child_fail(ep, (int)-r, "setuid", req->user ? req->user : "?");
	if (req->cwd && (r = RS1(SYS_chdir, req->cwd)) < 0)
		child_fail(ep, (int)-r, "cwd", req->cwd);
	exec_path(req->argv[0], req->argv, a->envp, ep);
	child_exit(127);
}

static bool always_fork;

void child_always_fork(void)
{
	always_fork = true;
}

#if SHARED_VM_SPAWN
static int child_main(void *arg)
{
	child_exec(arg);
}

/* The stack children run on until their exec: one at a time (init waits),
 * made once, with a guard page below it. */
#define CHILD_STACK (64u << 10)
static char *child_stack;

/* Whether init is alone in the sandbox: then nothing can stop or trace the
 * child before its exec, and it needs no watchdog (the first command of
 * every sandbox, and each one of a serial workload). Every process of the
 * sandbox's pid namespace descends from init and orphans are handed to
 * it, so no child at all (not even a zombie) means no other process;
 * only the host's root could enter from outside. */
static bool sandbox_empty(void)
{
	siginfo_t si;
	return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 && errno == ECHILD;
}

/* Whether this start may share init's memory (see the file comment). */
static bool shared_vm_ok(void)
{
	static int dumpable_fd = -2;
	if (always_fork || cmds_mode == CMDS_CLONE_INTO || cmds_mode == CMDS_PROCS)
		return false;
	if (dumpable_fd == -2) {
		/* opened before the first command runs; /proc/sys is read-only
		 * in the sandbox, and this is the sandbox's own procfs */
		dumpable_fd = open("/proc/sys/fs/suid_dumpable", O_RDONLY | O_CLOEXEC);
		if (dumpable_fd >= 0 && !child_stack) {
			char *m = mmap(NULL, CHILD_STACK + 4096, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
			if (m != MAP_FAILED && mprotect(m, 4096, PROT_NONE) == 0)
				child_stack = m + 4096;
		}
	}
	if (dumpable_fd < 0 || !child_stack)
		return false;
	/* read at each start: the host's administrator may change it */
	char v[8];
	ssize_t n = pread(dumpable_fd, v, sizeof(v), 0);
	return n > 0 && (v[0] == '0' || v[0] == '2');
}
#endif

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
	pid_t c = -1;
	bool shared = false;
#if SHARED_VM_SPAWN
	pid_t unguarded = 0;
	pid_t *slot = NULL;
	if (shared_vm_ok())
		slot = sandbox_empty() ? &unguarded : watchdog_arm();
	if (slot) {
		shared = true;
		c = clone(child_main, child_stack + CHILD_STACK,
			  CLONE_VM | CLONE_VFORK | CLONE_PARENT_SETTID | SIGCHLD, &a, slot);
		int e = errno;
		fds->stalled = slot != &unguarded && watchdog_disarm(c);
		/* the child's change of uid set our dumpable flag to
		 * fs.suid_dumpable (0 or 2 here): back to "never" */
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		errno = e;
	}
#endif
	if (c < 0 && shared) {
		/* a policy given with --seccomp may refuse CLONE_VM: fork */
		shared = false;
	}
	if (!shared) {
		fds->stalled = false;
		/* its own memory: a tracer or a stop before its exec reaches
		 * only the child */
		if (cmds_mode == CMDS_CLONE_INTO) {
			/* a fork made in the commands' cgroup: a raw clone3,
			 * so no fork handlers of libc run (the child makes
			 * raw system calls only) */
			struct clone3_args ca = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD,
						 .cgroup = (uint64_t)INIT_CMDS_FD };
			c = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
			if (c < 0 && (errno == ENOSYS || errno == EPERM || errno == EINVAL)) {
				cmds_mode = CMDS_PROCS; /* from now on, for every command */
				c = fork();
			}
		} else {
			c = fork();
		}
		if (c == 0)
			child_exec(&a);
	}
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
