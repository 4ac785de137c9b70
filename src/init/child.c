/* abox-init/child.c — starts one command inside the sandbox (the child
 * side, up to its exec, is child_exec.c).
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
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>

#include "base/base.h"
#include "child.h"
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


enum child_cmds child_cmds_mode;

void child_cgroup_probe(void)
{
	struct statfs sf;
	struct stat st;
	child_cmds_mode = CMDS_NONE;
	if (fstatfs(INIT_CMDS_FD, &sf) < 0 || fstat(INIT_CMDS_FD, &st) < 0)
		return;
	fcntl(INIT_CMDS_FD, F_SETFD, FD_CLOEXEC);
	if ((unsigned long)sf.f_type == CG1_MAGIC && S_ISREG(st.st_mode))
		child_cmds_mode = CMDS_TASKS;
	else if ((unsigned long)sf.f_type == CG2_MAGIC && S_ISDIR(st.st_mode))
		child_cmds_mode = CMDS_CLONE_INTO;
}

void child_cgroup_drop(void)
{
	if (child_cmds_mode != CMDS_NONE)
		close(INIT_CMDS_FD);
	child_cmds_mode = CMDS_NONE;
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
	if (always_fork || child_cmds_mode == CMDS_CLONE_INTO || child_cmds_mode == CMDS_PROCS)
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

/* The fds of one start: stdin/stdout/stderr pipes (or a terminal's two
 * ends) and the exec-error pipe; -1 = not made. */
struct child_io {
	int in[2], out[2], err[2], ep[2];
	int master, slave;
};

/* Closes everything io holds (a start that failed). With a terminal,
 * in[0] and out[1] are the slave and out[0] the master: each once. */
static void child_io_close(struct child_io *io)
{
	if (io->master >= 0) {
		close_if_open(io->in[1]);
		close(io->master);
		close_if_open(io->slave);
		close_if_open(io->ep[0]);
		close_if_open(io->ep[1]);
		return;
	}
	close_if_open(io->slave);
	for (int i = 0; i < 2; i++) {
		close_if_open(io->in[i]);
		close_if_open(io->out[i]);
		close_if_open(io->err[i]);
		close_if_open(io->ep[i]);
	}
}

/* Makes the fds of a start: 0 or -errno (then io holds what was made). */
static int child_io_open(const struct exec_req *req, struct child_io *io)
{
	if (req->pty_rows && req->pty_cols) {
		/* A terminal: the master stays with init, the command gets the
		 * peer as its controlling tty. /dev/pts/ptmx of the sandbox's
		 * own devpts (a mount point the sandbox cannot replace), and the
		 * peer through TIOCGPTPEER: no path the sandbox controls. */
		io->master = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
		int unlock = 0;
		if (io->master < 0 || ioctl(io->master, TIOCSPTLCK, &unlock) < 0)
			return -errno;
		io->slave = ioctl(io->master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (io->slave < 0)
			return -errno;
		struct winsize ws = { .ws_row = req->pty_rows, .ws_col = req->pty_cols };
		(void)ioctl(io->master, TIOCSWINSZ, &ws);
		io->in[0] = io->slave;
		io->in[1] = fcntl(io->master, F_DUPFD_CLOEXEC, 0);
		io->out[0] = io->master;
		io->out[1] = io->slave;
		if (io->in[1] < 0)
			return -errno;
	} else if (req->flags & 1u) {
		if (pipe2(io->in, O_CLOEXEC) < 0)
			return -errno;
	} else {
		/* An empty pipe whose writer is gone: reads see EOF at once.
		 * Not /dev/null by path: the sandbox owns /dev and could have
		 * put a FIFO there that blocks PID 1 in open(). */
		int e[2];
		if (pipe2(e, O_CLOEXEC) < 0)
			return -errno;
		close(e[1]);
		io->in[0] = e[0];
	}
	if ((io->master < 0 && pipe2(io->out, O_CLOEXEC) < 0) || (io->master < 0 && pipe2(io->err, O_CLOEXEC) < 0) ||
	    pipe2(io->ep, O_CLOEXEC) < 0)
		return -errno;
	/* init never waits on the child: a child stopped before its exec
	 * (SIGSTOP from a sandboxed process) must not stall PID 1 */
	fcntl(io->ep[0], F_SETFL, O_NONBLOCK);
	return 0;
}

/* The command's environment (its strings stay owned by req and env). */
struct child_env {
	char home[512], user[128], logname[128];
	char **envp;
};

/* Defaults first, the request's entries override. 0 or -ENOMEM. */
static int child_env_build(const struct exec_req *req, bool pty, struct child_env *ce)
{
	size_t n = strv_length(req->env);
	char **envp = calloc(n + 8, sizeof(char *));
	if (!envp)
		return -ENOMEM;
	size_t k = 0;
	static char path_def[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	static char lang_def[] = "LANG=C.UTF-8";
	static char term_def[] = "TERM=xterm-256color";
	safe_snprintf(ce->home, sizeof(ce->home), "HOME=%s", req->home ? req->home : "/");
	safe_snprintf(ce->user, sizeof(ce->user), "USER=%s", req->user ? req->user : "root");
	safe_snprintf(ce->logname, sizeof(ce->logname), "LOGNAME=%s", req->user ? req->user : "root");
	char *defs[] = { path_def, ce->home, ce->user, ce->logname, lang_def, term_def };
	for (size_t i = 0; i < ELEMENTSOF(defs) - (pty ? 0 : 1); i++) {
		const char *eq = strchr(defs[i], '=');
		char key[32];
		size_t kl = (size_t)(eq - defs[i]);
		memcpy(key, defs[i], kl);
		key[kl] = '\0';
		if (!child_env_get(req->env, key))
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
	ce->envp = envp;
	return 0;
}

/* Makes the child: sharing init's memory where that is safe, else
 * forked (into the commands' cgroup by clone3 on v2). Its pid, or -1
 * and errno. */
static pid_t child_start(const struct child_args *a, struct exec_fds *fds)
{
	pid_t c = -1;
	bool shared = false;
#if SHARED_VM_SPAWN
	pid_t unguarded = 0;
	pid_t *slot = NULL;
	if (shared_vm_ok())
		slot = sandbox_empty() ? &unguarded : watchdog_arm();
	if (slot) {
		shared = true;
		c = clone(child_main, child_stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | CLONE_PARENT_SETTID | SIGCHLD,
			  (void *)a, slot);
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
	if (shared)
		return c;
	fds->stalled = false;
	/* its own memory: a tracer or a stop before its exec reaches only
	 * the child */
	if (child_cmds_mode == CMDS_CLONE_INTO) {
		/* a fork made in the commands' cgroup: a raw clone3, so no fork
		 * handlers of libc run (the child makes raw system calls only) */
		struct clone3_args ca = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD,
					  .cgroup = (uint64_t)INIT_CMDS_FD };
		c = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
		if (c < 0 && (errno == ENOSYS || errno == EPERM || errno == EINVAL)) {
			child_cmds_mode = CMDS_PROCS; /* from now on, for every command */
			c = fork();
		}
	} else {
		c = fork();
	}
	if (c == 0)
		child_exec(a);
	return c;
}

int child_spawn(const struct exec_req *req, pid_t *pid, struct exec_fds *fds)
{
	struct child_io io = { { -1, -1 }, { -1, -1 }, { -1, -1 }, { -1, -1 }, -1, -1 };
	struct child_env ce;

	if (!req->argv || !req->argv[0])
		return -EINVAL;
	int r = child_io_open(req, &io);
	if (r == 0)
		r = child_env_build(req, io.master >= 0, &ce);
	if (r < 0) {
		child_io_close(&io);
		return r;
	}
	struct child_args a = {
		.req = req, .envp = ce.envp, .in = io.in[0], .out = io.out[1],
		.err = io.master >= 0 ? io.slave : io.err[1], .ep = io.ep[1], .pty = io.master >= 0,
	};
	pid_t c = child_start(&a, fds);
	r = c < 0 ? -errno : 0;
	free(ce.envp);
	if (c < 0) {
		child_io_close(&io);
		return r;
	}
	close(io.ep[1]);
	close(io.in[0]);
	if (io.master < 0) {
		close(io.out[1]);
		close(io.err[1]);
	}
	*pid = c;
	fds->in = io.in[1];
	fds->out = io.out[0];
	fds->err = io.master >= 0 ? -1 : io.err[0];
	fds->ep = io.ep[0];
	return 0;
}

int child_spawn_stdio(const struct exec_req *req, const int stdio[3], pid_t *pid, int *ep, bool *stalled)
{
	return child_spawn_extra(req, stdio, NULL, 0, pid, ep, stalled);
}

int child_spawn_extra(const struct exec_req *req, const int stdio[3], const int *extra, unsigned nextra,
		      pid_t *pid, int *ep, bool *stalled)
{
	if (!req->argv || !req->argv[0])
		return -EINVAL;
	int e[2];
	if (pipe2(e, O_CLOEXEC) < 0)
		return -errno;
	fcntl(e[0], F_SETFL, O_NONBLOCK);
	struct child_env ce;
	int r = child_env_build(req, false, &ce);
	if (r < 0) {
		close(e[0]);
		close(e[1]);
		return r;
	}
	/* a terminal given (an OCI process's): it becomes the controlling one */
	struct child_args a = { .req = req,
				.envp = ce.envp,
				.in = stdio[0],
				.out = stdio[1],
				.err = stdio[2],
				.ep = e[1],
				.pty = (req->flags & EXEC_TTY) != 0,
				.extra = extra,
				.nextra = nextra };
	struct exec_fds fds = { 0 };
	pid_t c = child_start(&a, &fds);
	r = c < 0 ? -errno : 0;
	free(ce.envp);
	close(e[1]);
	if (c < 0) {
		close(e[0]);
		return r;
	}
	*pid = c;
	*ep = e[0];
	*stalled = fds.stalled;
	return 0;
}
