/* child_exec.c — the child side of a start in abox-init: what runs
 * between the clone (or fork) and the exec. It may share init's memory
 * (see child.c), so it makes raw system calls only and writes only its own
 * stack: no libc state (errno, locks) of init's is touched. It joins the
 * commands' cgroup, leaves init's OOM shield, takes its terminal and
 * stdio, closes every other fd, drops to the user and execs; a failure on
 * the way is written to the exec-error pipe for init to report. Runs
 * inside the sandbox, in the child of PID 1. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <termios.h>

#include "base/rawsys.h"
#include "capraw.h"
#include "base/base.h"
#include "child.h"
#include "init.h"
#include "proto/messages.h"

const char *child_env_get(char **env, const char *key)
{
	size_t k = strlen(key);
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], key, k) == 0 && env[i][k] == '=')
			return env[i] + k + 1;
	return NULL;
}

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
	const char *path = child_env_get(envp, "PATH");
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

/* fd new becomes a copy of old without close-on-exec (dup2 semantics,
 * also when they are the same number). */
static long child_dup(int old, int new)
{
	return old == new ? RS3(SYS_fcntl, new, F_SETFD, 0) : RS3(SYS_dup3, old, new, 0);
}

/* An OCI process's inheritable and ambient sets, after its change of
 * user (its permitted set kept): the inheritable one set, then each
 * ambient capability raised, which the kernel allows only for one both
 * permitted and inheritable. A process that is not root keeps its ambient
 * set through its exec, and nothing else (as with runc). */
static long child_capsets(uint64_t inh, uint64_t amb, bool root)
{
	struct init_caps data[2];
	long r = init_caps_get(data);
	if (r < 0)
		return r;
	for (int i = 0; i < 2; i++) {
		data[i].inheritable = (uint32_t)(inh >> (32 * i)) & data[i].permitted;
		/* a user that is not root does the rest (its cwd) without
		 * them, as it would without this step */
		data[i].effective = root ? data[i].permitted : 0;
	}
	if ((r = init_caps_set(data)) < 0)
		return r;
	for (int c = 0; c < 64; c++)
		if ((amb & (1ULL << c)) &&
		    (r = RS4(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0)) < 0)
			return r;
	return 0;
}

/* An OCI container's own seccomp profile, over init's (the kernel runs
 * both, the stricter answer wins: it can only take away). */
static long filter_install(const struct exec_req *req)
{
	struct {
		unsigned short len;
		const uint64_t *filter;
	} prog = { req->filter_len, req->filter }; /* struct sock_fprog */
	return RS3(SYS_seccomp, 1 /* SECCOMP_SET_MODE_FILTER */, 0, &prog);
}

/* CAP_SYS_ADMIN raised from init's permitted set, where init keeps it
 * (oci_caps_park: an OCI container run as a container engine's default,
 * with a profile): what the kernel asks of a process that installs a
 * filter without no_new_privs. Gone at the exec, which gives the
 * process its bounding set and nothing else (init's inheritable set is
 * empty). */
static long admin_raise(void)
{
	struct init_caps data[2];
	long r = init_caps_get(data);
	if (r < 0)
		return r;
	if (!(data[0].permitted & (1u << INIT_CAP_SYS_ADMIN)))
		return -EPERM;
	data[0].effective |= 1u << INIT_CAP_SYS_ADMIN;
	return init_caps_set(data);
}

/* The child, between its start and its exec. */
__attribute__((noinline, noreturn)) void child_exec(const struct child_args *a)
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
	if (child_cmds_mode == CMDS_TASKS && (r = RS3(SYS_write, INIT_CMDS_FD, "0", 1)) != 1)
		child_fail(ep, r < 0 ? (int)-r : EIO, "join cgroup", "cmds");
	if (child_cmds_mode == CMDS_PROCS) {
		long pfd = RS4(SYS_openat, INIT_CMDS_FD, "cgroup.procs", O_WRONLY | O_CLOEXEC, 0);
		r = pfd < 0 ? pfd : RS3(SYS_write, pfd, "0", 1);
		if (r != 1)
			child_fail(ep, r < 0 ? (int)-r : EIO, "join cgroup", "cmds");
		(void)RS1(SYS_close, pfd);
	}
	/* init is shielded from the OOM killer (-1000); commands must not
	 * inherit that, or a memory hog could never be stopped. An OCI
	 * process gets its config's oomScoreAdj, and fails without it */
	long oom = RS4(SYS_openat, AT_FDCWD, "/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC, 0);
	if (oom >= 0) {
		char adj[16];
		size_t len = safe_snprintf(adj, sizeof(adj), "%d", req->has_oom ? req->oom_adj : 0);
		r = RS3(SYS_write, oom, adj, len);
		(void)RS1(SYS_close, oom);
		if (r < 0 && req->has_oom)
			child_fail(ep, (int)-r, "oom_score_adj", "process.oomScoreAdj");
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
	int first = 3 + (int)a->nextra; /* the exec-error pipe's place */
	if (a->nextra) {
		/* an OCI process's preserved fds at 3, 4, ...: each copied
		 * above that range first, so that none is overwritten by
		 * another before its own copy is made */
		long hi[INIT_OCI_MAX_FDS];
		for (unsigned i = 0; i < a->nextra; i++)
			if ((hi[i] = RS3(SYS_fcntl, a->extra[i], F_DUPFD_CLOEXEC, first + 1)) < 0)
				child_fail(ep, (int)-hi[i], "dup", "preserved fds");
		long hep = RS3(SYS_fcntl, ep, F_DUPFD_CLOEXEC, first + 1);
		if (hep < 0)
			child_fail(ep, (int)-hep, "dup", "preserved fds");
		for (unsigned i = 0; i < a->nextra; i++)
			if (RS3(SYS_dup3, hi[i], 3 + (int)i, 0) < 0)
				child_fail((int)hep, EBADF, "dup2", "preserved fds");
		ep = (int)hep;
	}
	if (child_dup(ep, first) < 0)
		child_exit(126);
	(void)RS3(SYS_fcntl, first, F_SETFD, FD_CLOEXEC);
	ep = first;
	(void)RS3(SYS_close_range, first + 1, ~0U, 0);
	bool cwd_first = req->flags & EXEC_CWD_FIRST;
	if (cwd_first && req->cwd && (r = RS1(SYS_chdir, req->cwd)) < 0)
		child_fail(ep, (int)-r, "cwd", req->cwd);
	/* its own bounding set (an OCI process's), dropped while init's
	 * CAP_SETPCAP is still ours, before the change of user */
	for (int c = 0; req->has_caps && c < 64; c++)
		if (!(req->caps & (1ULL << c)) && (r = RS2(SYS_prctl, PR_CAPBSET_DROP, c)) < 0 &&
		    r != -EINVAL)
			child_fail(ep, (int)-r, "capabilities", "process.capabilities.bounding");
	for (unsigned i = 0; i < req->nrlimits; i++) {
		uint64_t lim[2] = { req->rlimits[i].soft, req->rlimits[i].hard };
		if ((r = RS4(SYS_prlimit64, 0, req->rlimits[i].resource, lim, NULL)) < 0)
			child_fail(ep, (int)-r, "setrlimit", "process.rlimits");
	}
	/* an OCI process's AppArmor profile, entered at its exec (the
	 * kernel's attr file of the LSM, or the older shared one), asked for
	 * while the child is still root, as runc does */
	if (req->apparmor) {
		long fd = RS4(SYS_openat, AT_FDCWD, "/proc/self/attr/apparmor/exec", O_WRONLY | O_CLOEXEC, 0);
		if (fd < 0)
			fd = RS4(SYS_openat, AT_FDCWD, "/proc/self/attr/exec", O_WRONLY | O_CLOEXEC, 0);
		char cmd[300];
		size_t len = safe_snprintf(cmd, sizeof(cmd), "exec %s", req->apparmor);
		r = fd < 0 ? fd : RS3(SYS_write, fd, cmd, len);
		if (fd >= 0)
			(void)RS1(SYS_close, fd);
		if (r < 0)
			child_fail(ep, (int)-r, "apparmor", req->apparmor);
	}
	/* inheritable or ambient sets asked for: the permitted set must
	 * survive the change of user to give them (the kernel clears the
	 * flag at the exec) */
	uint64_t inh = req->caps_inh & (req->has_caps ? req->caps : ~0ULL), amb = req->caps_amb;
	/* a profile for a process without no_new_privs: installed now, before
	 * the change of user (as runc does then), so it judges that too */
	bool early = req->filter_len && !req->nnp && admin_raise() == 0;
	if (early && (r = filter_install(req)) < 0)
		child_fail(ep, (int)-r, "seccomp", "linux.seccomp");
	if ((inh || amb) && (r = RS2(SYS_prctl, PR_SET_KEEPCAPS, 1)) < 0)
		child_fail(ep, (int)-r, "capabilities", "PR_SET_KEEPCAPS");
	if ((r = RS2(SYS_setgroups, req->ngroups, req->groups)) < 0)
		child_fail(ep, (int)-r, "setgroups", req->user ? req->user : "?");
	if ((r = RS3(SYS_setresgid, req->gid, req->gid, req->gid)) < 0)
		child_fail(ep, (int)-r, "setgid", req->user ? req->user : "?");
	if ((r = RS3(SYS_setresuid, req->uid, req->uid, req->uid)) < 0)
		child_fail(ep, (int)-r, "setuid", req->user ? req->user : "?");
	if ((inh || amb) && (r = child_capsets(inh, amb, req->uid == 0)) < 0)
		child_fail(ep, (int)-r, "capabilities", "process.capabilities.inheritable/ambient");
	if (!cwd_first && req->cwd && (r = RS1(SYS_chdir, req->cwd)) < 0)
		child_fail(ep, (int)-r, "cwd", req->cwd);
	if (req->umask)
		(void)RS1(SYS_umask, req->umask & 0777);
	/* no_new_privs asked for (an init started without it: an OCI
	 * container run as a container engine's default), or needed: the
	 * kernel takes a filter from a process without CAP_SYS_ADMIN only
	 * with it (init holds none to raise under abox's own confinement,
	 * which keeps no_new_privs anyway) */
	if (!early && (req->nnp || req->filter_len) && (r = RS2(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1)) < 0)
		child_fail(ep, (int)-r, "no_new_privs", "process.noNewPrivileges");
	/* otherwise the last step, so it judges the program and not this
	 * set-up */
	if (!early && req->filter_len && (r = filter_install(req)) < 0)
		child_fail(ep, (int)-r, "seccomp", "linux.seccomp");
	exec_path(req->argv[0], req->argv, a->envp, ep);
	child_exit(127);
}

