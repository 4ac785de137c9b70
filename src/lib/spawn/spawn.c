/* spawn/spawn.c — see spawn.h. */
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fdpass.h"
#include "base/procsys.h"
#include "caps/caps.h"
#include "cgroup/cgroup.h"
#include "net/net.h"
#include "proto/messages.h"
#include "spawn/spawn.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

int spawn_init_memfd(const char *path, abox_error *err)
{
	_cleanup_close_ int in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return abox_error_set(err, errno, "open abox-init '%s'", path);
	struct stat st;
	if (fstat(in, &st) < 0)
		return abox_error_set(err, errno, "stat '%s'", path);
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
	/* MFD_EXEC: hosts with vm.memfd_noexec=1 make memfds non-executable
	 * unless asked; kernels before 6.3 do not know the flag (EINVAL). */
	_cleanup_close_ int mfd = memfd_create("abox-init", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (mfd < 0 && errno == EINVAL)
		mfd = memfd_create("abox-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return abox_error_set(err, errno, "memfd_create");
	off_t off = 0;
	while (off < st.st_size) {
		ssize_t n = sendfile(mfd, in, &off, (size_t)(st.st_size - off));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return abox_error_set(err, n < 0 ? errno : EIO, "copy abox-init into memfd");
	}
	/* Sealed against every change: a sandboxed root opening /proc/1/exe
	 * for writing gets EPERM, and there is no host file behind it. */
	if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		return abox_error_set(err, errno, "seal abox-init memfd");
	return TAKE_FD(mfd);
}

/* ---- child: between clone and exec, async-signal-safe only ------------- */

_Noreturn static void child_fail(int errfd, const abox_error *e)
{
	(void)write_full(errfd, e, sizeof(*e));
	_exit(125);
}

_Noreturn static void child_fail_errno(int errfd, abox_error *e, int errnum, const char *what)
{
	abox_error_set(e, errnum, "%s", what);
	child_fail(errfd, e);
}

/* Receives up to max fds in one message; -1 when the peer hung up. */

/* The sandbox's own copy of init in its /dev (see rootfs_plan.init_in_dev),
 * from the sealed memfd; closed before the exec (ETXTBSY otherwise). */
static int copy_init(int memfd, uid_t owner, abox_error *e)
{
	/* execute only: an exec of a file its user cannot read leaves the
	 * process not dumpable from the start (with a user namespace init runs
	 * as that file's owner, and a process of the same host id could
	 * otherwise trace it before it makes itself undumpable) */
	int fd = open(INIT_DEV_PATH, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0100);
	if (fd < 0)
		return abox_error_set(e, errno, "create %s", INIT_DEV_PATH);
	off_t off = 0;
	struct stat st;
	int r = fstat(memfd, &st);
	while (r == 0 && off < st.st_size) {
		ssize_t n = sendfile(fd, memfd, &off, (size_t)(st.st_size - off));
		if (n <= 0)
			r = -1;
	}
	/* init runs as the sandbox's root: with a user namespace, id_base */
	if (r == 0 && owner && fchown(fd, owner, owner) < 0)
		r = -1;
	if (r < 0) {
		abox_error_set(e, errno ? errno : EIO, "copy init into %s", INIT_DEV_PATH);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* With a user namespace, init is exec'd by the host's id_base (outside
 * the namespace, no capabilities, no_new_privs) and joins the namespace
 * itself (init/confine.c): its memory then belongs to the host's user
 * namespace, so its /proc files are host root's and sandbox root can
 * neither raise its oom_score_adj (and have the OOM killer end the
 * sandbox's init first) nor list its fds. Hands over what init needs for
 * that: the namespace, the capabilities and seccomp program to take on
 * (a memfd: INIT_CONFINE_FD) and this child's error pipe, which init
 * closes once confined. */
static int hand_over_confinement(const struct spawn_config *cfg, int userns_fd, uid_t base, int err_fd,
				 abox_error *e)
{
	int mfd = memfd_create("abox-confine", MFD_CLOEXEC);
	if (mfd < 0)
		return abox_error_set(e, errno, "memfd_create");
	/* above the fixed numbers, so that the dup2 below cannot be a
	 * no-op that keeps close-on-exec set */
	int hi = fcntl(mfd, F_DUPFD_CLOEXEC, 10);
	close(mfd);
	if (hi < 0)
		return abox_error_set(e, errno, "move fds");
	/* a policy with no program would leave the sandbox without one */
	if (cfg->bpf && (!cfg->bpf->insns || !cfg->bpf->len))
		return abox_error_setx(e, EINVAL, "an empty seccomp program");
	struct init_confine hdr = {
		.magic = INIT_CONFINE_MAGIC,
		.last_cap = (uint32_t)cfg->last_cap,
		.caps_keep = cfg->caps_keep,
		.bpf_len = cfg->bpf && cfg->bpf->insns ? cfg->bpf->len : 0,
		.flags = (cfg->no_nnp ? INIT_CONFINE_NO_NNP : 0) |
			 (cfg->keep_admin ? INIT_CONFINE_KEEP_ADMIN : 0),
	};
	size_t insns = (size_t)hdr.bpf_len * sizeof(struct sock_filter);
	if (write_full(hi, &hdr, sizeof(hdr)) < 0 || (insns && write_full(hi, cfg->bpf->insns, insns) < 0))
		return abox_error_set(e, errno, "write init's confinement");
	if (dup2(userns_fd, INIT_USERNS_FD) < 0 || dup2(hi, INIT_CONFINE_FD) < 0 ||
	    dup2(err_fd, INIT_ERR_FD) < 0)
		return abox_error_set(e, errno, "dup2 init's confinement");
	close(hi);
	/* Host ids, not the namespace's. Raw system calls: glibc's wrappers
	 * would try to change the ids of the caller's other threads too,
	 * which do not exist in this child (a clone of a multi-threaded
	 * daemon), and wait for them forever. The change from uid 0 clears
	 * every capability; init takes its own within the namespace. Every
	 * other namespace, the mounts and the cgroups were made before, as
	 * host root, and stay owned by the host's: sandbox root cannot
	 * remount, reconfigure its network or leave its cgroup, whatever it
	 * keeps of its capabilities. */
	if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, base, base, base) < 0 ||
	    syscall(SYS_setresuid, base, base, base) < 0)
		return abox_error_set(e, errno, "become host id %u", (unsigned)base);
	/* the change of ids cleared the parent-death signal (child_main);
	 * the exec and init's setns keep it. A creator that died just
	 * before it is re-armed has closed the error pipe's reading end. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	struct pollfd pf = { .fd = err_fd, .events = POLLOUT };
	if (poll(&pf, 1, 0) == 1 && (pf.revents & POLLERR))
		_exit(125);
	return 0;
}

static ssize_t recv_fds(int sock, char *tag, int *fds, size_t max)
{
	size_t k;
	/* fds come only with the byte: none to close when it did not */
	return fd_recv(sock, tag, 1, fds, max, &k, 0) == 1 ? (ssize_t)k : -1;
}

static int send_fds(int sock, char byte, const int *fds, size_t n)
{
	ssize_t w = fd_send(sock, &byte, 1, fds, n, 0);
	return w == 1 ? 0 : w < 0 ? (int)w : -EIO;
}

_Noreturn static void child_main(const struct spawn_config *cfg, int sync_fd, int err_fd, int leaf_fd)
{
	abox_error e = ABOX_ERROR_INIT;
	int r;

	spawn_mark(cfg->rootfs.marks, MARK_STARTED);
	/* Leaves the sandbox if the creator dies before init runs: no
	 * half-made sandbox survives a killed `abox`. init clears it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* modes given to mkdir/mknod below are meant exactly; init and the
	 * commands start with the usual 022 again */
	umask(0);
	/* Nothing of the caller's signal state may reach the sandbox: an
	 * ignored SIGTERM would survive every exec down to the commands, and
	 * abox_proc_signal would do nothing. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* its own session: no terminal, job-control signal or hang-up of the
	 * creator's session reaches a sandbox that outlives it */
	setsid();

	/* fds the child needs go above the stdio and agent numbers first, so
	 * that the dup2 calls below cannot overwrite one of them (the caller
	 * may have had 0-2 closed, making one of ours fd 0..3) */
	int listen_fd = fcntl(cfg->listen_fd, F_DUPFD_CLOEXEC, 10);
	int init_fd = fcntl(cfg->init_memfd, F_DUPFD_CLOEXEC, 10);
	int hi_sync = fcntl(sync_fd, F_DUPFD_CLOEXEC, 10);
	int hi_err = fcntl(err_fd, F_DUPFD_CLOEXEC, 10);
	int hi_leaf = leaf_fd >= 0 ? fcntl(leaf_fd, F_DUPFD_CLOEXEC, 10) : -1;
	struct rootfs_plan plan = cfg->rootfs;
	if (plan.userns_fd >= 0)
		plan.userns_fd = fcntl(plan.userns_fd, F_DUPFD_CLOEXEC, 10);
	if (hi_err < 0)
		_exit(125);
	err_fd = hi_err;
	if (listen_fd < 0 || init_fd < 0 || hi_sync < 0 || (leaf_fd >= 0 && hi_leaf < 0) ||
	    (cfg->rootfs.userns_fd >= 0 && plan.userns_fd < 0))
		child_fail_errno(err_fd, &e, errno, "move fds");
	sync_fd = hi_sync;

	/* an OCI config's mount namespace, before anything is mounted (the
	 * child was made without one of its own) */
	if (cfg->mntns_join && setns(cfg->mntns_fd, CLONE_NEWNS) < 0)
		child_fail_errno(err_fd, &e, errno, "join the mount namespace given");
	/* an OCI container of a pod joins its sandbox's ipc and uts
	 * namespaces (before its mounts: an mqueue mount is its ipc's) */
	if (plan.oci && ((plan.oci->ipc_fd >= 0 && setns(plan.oci->ipc_fd, CLONE_NEWIPC) < 0) ||
			 (plan.oci->uts_fd >= 0 && setns(plan.oci->uts_fd, CLONE_NEWUTS) < 0)))
		child_fail_errno(err_fd, &e, errno, "join the ipc or uts namespace given");
	int layer_fd = -1;
	int oci_fds[plan.oci ? plan.oci->nmounts + 1 : 1];
	plan.oci_fds = oci_fds;
	if ((r = rootfs_setup(&plan, &layer_fd, &e)) < 0)
		child_fail(err_fd, &e);

	/* Meanwhile the parent made the network namespace (lo up), its sysfs
	 * and the v1 cgroups; it sends them (the namespace first, then the
	 * sysfs when the tag is 's', then the cgroups' "tasks" files) or
	 * hangs up when it failed. Writing "0" to "tasks" moves this, the
	 * only, thread without the kernel's global threadgroup lock (see
	 * cgroup_open_self_attach). Limits hold before init runs. */
	int got[CG_CONTROLLER_MAX + 4];
	char tag = 0;
	ssize_t ngot = recv_fds(sync_fd, &tag, got, ELEMENTSOF(got));
	/* 's'/'n': with or without a sysfs; upper case: the commands'
	 * cgroup (for init) follows */
	bool has_sysfs = tag == 's' || tag == 'S', has_cmds = tag == 'S' || tag == 'N';
	ssize_t first_task = 1 + has_sysfs + has_cmds;
	if (ngot < first_task)
		_exit(125); /* the parent gave up: it reports its own error */
	if (setns(got[0], CLONE_NEWNET) < 0)
		child_fail_errno(err_fd, &e, errno, "join the network namespace");
	close(got[0]);
	int sysfs_fd = has_sysfs ? got[1] : -1;
	/* above the numbers the dup2 calls below write (as the others are):
	 * received fds take the lowest free ones, which may be 0-5 */
	int cmds_fd = has_cmds ? fcntl(got[1 + has_sysfs], F_DUPFD_CLOEXEC, 10) : -1;
	if (has_cmds) {
		if (cmds_fd < 0)
			child_fail_errno(err_fd, &e, errno, "move fds");
		close(got[1 + has_sysfs]);
	}
	for (ssize_t i = first_task; i < ngot; i++) {
		if (write(got[i], "0", 1) != 1)
			child_fail_errno(err_fd, &e, errno, "join cgroup");
		close(got[i]);
	}
	close(sync_fd);
	spawn_mark(cfg->rootfs.marks, MARK_JOINED);

	/* an OCI container's /sys where its config lists it (rootfs_oci_finish) */
	if (!plan.oci && (r = rootfs_sys(sysfs_fd, &e)) < 0)
		child_fail(err_fd, &e);
	spawn_mark(cfg->rootfs.marks, MARK_SYS);
	/* a joined uts namespace keeps the names its owner gave it */
	bool own_uts = !plan.oci || plan.oci->uts_fd < 0;
	if ((own_uts && sethostname(cfg->rootfs.hostname, strlen(cfg->rootfs.hostname)) < 0) ||
	    (own_uts && plan.oci && plan.oci->domainname &&
	     setdomainname(plan.oci->domainname, strlen(plan.oci->domainname)) < 0))
		child_fail_errno(err_fd, &e, errno, "sethostname");
	/* The cgroup namespace is made now, after the move, so that inside
	 * the sandbox its own cgroup is the root of what it can see. */
	if (unshare(CLONE_NEWCGROUP) < 0)
		child_fail_errno(err_fd, &e, errno, "unshare cgroup namespace");
	/* an OCI container's own mounts: in its namespaces, after its root */
	if (plan.oci && rootfs_oci_finish(&plan, sysfs_fd, &e) < 0)
		child_fail(err_fd, &e);
	if (sysfs_fd >= 0)
		close(sysfs_fd);
	/* v2 memory: init's own leaf, below the namespace's root so that
	 * the commands' cgroup next to it stays in view (a cgroup2 mounted
	 * with nsdelegate refuses moves into cgroups outside it). This write
	 * to cgroup.procs is the one that takes the kernel's threadgroup
	 * lock (a few ms); v1 hosts do not pay it. */
	if (hi_leaf >= 0) {
		if (write(hi_leaf, "0", 1) != 1)
			child_fail_errno(err_fd, &e, errno, "join init's cgroup");
		close(hi_leaf);
	}
	/* init must survive the sandbox's own OOM kills; commands reset
	 * this to 0 before they exec. Hosts that withhold CAP_SYS_RESOURCE
	 * refuse it: there the commands' own cgroup (cgroup.h) is what keeps
	 * init out of the OOM killer's choice. Through the legacy oom_adj (-17 is
	 * -1000): a write to oom_score_adj by a holder of CAP_SYS_RESOURCE
	 * also lowers oom_score_adj_min, which every command would inherit,
	 * and a command of any user could then write -1000 back and make a
	 * memory hog the OOM killer never picks. */
	if (plan.userns_fd < 0)
		(void)write_file_at(AT_FDCWD, "/proc/self/oom_adj", "-17");
	else
		/* With a user namespace init's /proc files stay host root's
		 * (init/confine.c), so no command could reset a score it
		 * inherits: start from 0, not from whatever the creator (a
		 * daemon with a negative OOMScoreAdjust) had. Lowering a
		 * positive one needs CAP_SYS_RESOURCE and may be refused:
		 * harmless, commands then start above 0. */
		(void)write_file_at(AT_FDCWD, "/proc/self/oom_score_adj", "0");

	uid_t owner = plan.userns_fd >= 0 ? plan.id_base : 0;
	if (cfg->rootfs.init_in_dev && copy_init(init_fd, owner, &e) < 0)
		child_fail(err_fd, &e);

	/* init's stdio: the sandbox's /dev/null, never a host terminal or file
	 * (a host fd inside could be reopened through /proc/self/fd) — but
	 * for an OCI container, whose engine gives its own (pipes or a
	 * terminal, as runc's init gets them): those are the container's
	 * stdio by the contract. /dev/null is opened above the stdio numbers,
	 * so that a dup2 onto a free slot is a real copy without
	 * close-on-exec. */
	int null0 = open("/dev/null", O_RDWR | O_CLOEXEC);
	int null = null0 >= 0 ? fcntl(null0, F_DUPFD_CLOEXEC, 10) : -1;
	if (null0 >= 0)
		close(null0);
	bool keep = cfg->keep_stdio;
	bool fail = null < 0;
	for (int fd = 0; fd < 3 && !fail; fd++) {
		/* close-on-exec there: one of ours, in a slot the caller left
		 * free (a closed one of the engine's is /dev/null all the same) */
		int fl = keep ? fcntl(fd, F_GETFD) : -1;
		if (fl < 0 || (fl & FD_CLOEXEC))
			fail = dup2(null, fd) < 0;
	}
	if (fail)
		child_fail_errno(err_fd, &e, errno, "open /dev/null");
	if (dup2(listen_fd, INIT_LISTEN_FD) < 0 || dup2(layer_fd, INIT_LAYER_FD) < 0 ||
	    (cmds_fd >= 0 && dup2(cmds_fd, INIT_CMDS_FD) < 0))
		child_fail_errno(err_fd, &e, errno, "dup2 agent socket");
	/* every other inherited fd closes at exec */
	if (syscall(SYS_close_range, (cmds_fd >= 0 ? INIT_CMDS_FD : INIT_LAYER_FD) + 1, ~0U,
		    CLOSE_RANGE_CLOEXEC) < 0)
		child_fail_errno(err_fd, &e, errno, "close_range");

	bool init_confines = plan.userns_fd >= 0;
	if (init_confines && hand_over_confinement(cfg, plan.userns_fd, plan.id_base, err_fd, &e) < 0)
		child_fail(err_fd, &e);
	/* Without no_new_privs (cfg->no_nnp) the kernel takes a filter only
	 * from a holder of CAP_SYS_ADMIN: installed before the capabilities
	 * go (the policy allows the prctl and capset that drop them); the
	 * bounding set still caps what a setuid file can grant. */
	bool nnp = !cfg->no_nnp, filter = !init_confines && cfg->bpf;
	if (filter && !nnp && (r = policy_bpf_install(cfg->bpf)) < 0)
		child_fail_errno(err_fd, &e, -r, "install seccomp filter");
	if (!init_confines &&
	    caps_apply(cfg->caps_keep, !nnp && cfg->keep_admin ? 1ULL << 21 /* CAP_SYS_ADMIN */ : 0,
		       cfg->last_cap, &e) < 0)
		child_fail(err_fd, &e);
	/* no_new_privs: setuid binaries and file capabilities grant nothing
	 * inside, so the dropped capabilities cannot come back. */
	if (nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail_errno(err_fd, &e, errno, "set no_new_privs");
	if (filter && nnp && (r = policy_bpf_install(cfg->bpf)) < 0)
		child_fail_errno(err_fd, &e, -r, "install seccomp filter");
	spawn_mark(cfg->rootfs.marks, MARK_CONFINED);
	umask(022);
	static char *const envp[] = { NULL };
	if (cfg->rootfs.init_in_dev)
		execve(INIT_DEV_PATH, cfg->init_argv, envp);
	else
		syscall(SYS_execveat, init_fd, "", cfg->init_argv, envp, AT_EMPTY_PATH);
	abox_error_set(&e, errno, "exec abox-init");
	child_fail(err_fd, &e);
}

/* ---- parent ------------------------------------------------------------ */

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

struct in_netns {
	struct spawn_marks *marks;
	int sysfs_fd;
	bool lo_up; /* made ahead with `lo` up */
	bool low_ports; /* anyone may bind ports below 1024 */
};

/* Runs inside the sandbox's new network namespace (net_namespace_new):
 * `lo` up, and the sysfs, made there so it shows that namespace's
 * devices. Kernels without fsopen leave the sysfs to the child
 * (sysfs_fd stays -1). */
static int in_new_netns(void *ud, abox_error *err)
{
	struct in_netns *n = ud;
	spawn_mark(n->marks, MARK_P_NETNS);
	int r = n->lo_up ? 0 : net_loopback_up(err);
	if (r < 0)
		return r;
	spawn_mark(n->marks, MARK_P_LO);
	/* With a user namespace the sandbox's root holds
	 * CAP_NET_BIND_SERVICE in that namespace only, and this network
	 * namespace is the host's: without this, no web server in the
	 * sandbox could listen on 80 (as with Docker, which sets the same).
	 * Through a procfs of its own (base/procsys.h). */
	if (n->low_ports && (r = (int)procsys_write_once("sys/net/ipv4/ip_unprivileged_port_start", "0")) < 0)
		return abox_error_set(err, -r, "allow ports below 1024 in the sandbox's network namespace");
	int fd = rootfs_sysfs_new(err);
	if (fd == -ENOSYS) {
		if (err)
			*err = (abox_error)ABOX_ERROR_INIT;
		return 0;
	}
	if (fd < 0)
		return fd;
	n->sysfs_fd = fd;
	return 0;
}

int spawn_sandbox(const struct spawn_config *cfg, struct spawn_result *out, abox_error *err)
{
	int sync[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int r = 0;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync) < 0)
		return abox_error_set(err, errno, "socketpair");
	if (pipe2(ep, O_CLOEXEC) < 0) {
		int e = errno;
		close_all(sync, 2);
		return abox_error_set(err, e, "pipe");
	}

	int pidfd = -1;
	struct clone_args args = {
		/* no CLONE_NEWNET: the parent makes that namespace meanwhile
		 * (net_namespace_new), off the child's path */
		.flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
		.exit_signal = SIGCHLD,
	};
	if (cfg->mntns_join)
		args.flags &= ~(uint64_t)CLONE_NEWNS;
	int cgfd = cfg->cg ? cgroup_v2_fd(cfg->cg) : -1;
	bool into_v2 = cgfd >= 0;
	if (into_v2) {
		args.flags |= CLONE_INTO_CGROUP;
		args.cgroup = (uint64_t)cgfd;
	}
	/* v2 memory: the child moves itself into init's leaf (see child_main) */
	int leaf_fd = cfg->cg ? cgroup_init_leaf_fd(cfg->cg, err) : -ENOENT;
	if (leaf_fd < 0 && leaf_fd != -ENOENT) {
		close_all(sync, 2);
		close_all(ep, 2);
		return leaf_fd;
	}
	/* a pod's pid namespace, a time namespace with offsets: set for
	 * this process's next child (spawn/ahead.c), ours given back after */
	struct ns_ahead ahead;
	if ((r = spawn_ns_ahead(cfg, &ahead, err)) < 0) {
		close_all(sync, 2);
		close_all(ep, 2);
		if (leaf_fd >= 0)
			close(leaf_fd);
		return r;
	}
	if (cfg->pidns_join)
		args.flags &= ~(uint64_t)CLONE_NEWPID;
	long pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL) && into_v2) {
		/* kernels before 5.7: no CLONE_INTO_CGROUP; the parent moves
		 * the child into the v2 cgroup by pid before releasing it */
		args.flags &= ~(uint64_t)CLONE_INTO_CGROUP;
		args.cgroup = 0;
		into_v2 = false;
		pid = syscall(SYS_clone3, &args, sizeof(args));
	}
	if (pid == 0) {
		close(sync[0]);
		close(ep[0]);
		child_main(cfg, sync[1], ep[1], leaf_fd);
	}
	int saved = errno;
	spawn_ns_back(&ahead);
	if (leaf_fd >= 0)
		close(leaf_fd);
	close(sync[1]);
	close(ep[1]);
	if (pid < 0) {
		close(sync[0]);
		close(ep[0]);
		return abox_error_set(err, saved, "clone3");
	}

	/* While the child builds its root: its network namespace and sysfs,
	 * and the rest of the cgroups, in the order the child takes them. */
	int give[CG_CONTROLLER_MAX + 4];
	size_t ngive = 0;
	struct in_netns inn = { .marks = cfg->rootfs.marks,
				.sysfs_fd = -1,
				.lo_up = cfg->net_premade,
				/* abox-netd's spares come with it set */
				.low_ports = cfg->rootfs.userns_fd >= 0 && !cfg->net_premade };
	r = cfg->net_premade ? net_namespace_enter(cfg->net_premade_fd, in_new_netns, &inn, err)
			     : net_namespace_new(in_new_netns, &inn, err);
	spawn_mark(cfg->rootfs.marks, MARK_P_NET);
	int sysfs_fd = inn.sysfs_fd;
	/* its interface, made by abox-netd while the child goes on */
	if (r >= 0 && cfg->net_begin) {
		int e = cfg->net_begin(cfg->net_ud, r, err);
		if (e < 0) {
			close(r);
			if (sysfs_fd >= 0)
				close(sysfs_fd);
			sysfs_fd = -1;
			r = e;
		}
	}
	if (r >= 0) {
		give[ngive++] = r;
		if (sysfs_fd >= 0)
			give[ngive++] = sysfs_fd;
		r = 0;
	}
	bool with_cmds = false;
	if (r >= 0 && cfg->cg) {
		size_t nattach = 0;
		r = cgroup_create_finish(cfg->cg_layout, cfg->cg, true, err);
		if (r >= 0 && !into_v2)
			r = cgroup_attach_v2(cfg->cg, (pid_t)pid, err);
		if (r >= 0) {
			int cfd = cgroup_cmds_fd(cfg->cg, err);
			if (cfd >= 0) {
				give[ngive++] = cfd;
				with_cmds = true;
			} else if (cfd != -ENOENT) {
				r = cfd;
			}
		}
		if (r >= 0)
			r = cgroup_open_self_attach(cfg->cg, give + ngive, ELEMENTSOF(give) - ngive, &nattach, err);
		ngive += nattach;
		spawn_mark(cfg->rootfs.marks, MARK_P_CGROUPS);
	}
	char tag = sysfs_fd >= 0 ? (with_cmds ? 'S' : 's') : (with_cmds ? 'N' : 'n');
	if (r >= 0 && (r = send_fds(sync[0], tag, give, ngive)) < 0)
		abox_error_set(err, -r, "hand the network namespace and cgroups to the sandbox child");
	close_all(give, ngive);
	close(sync[0]);
	/* The CPU limit while the child finishes: it holds before this
	 * returns, and nothing of the sandbox's own runs before that (init
	 * starts commands only when asked, after create returns). */
	if (r >= 0 && cfg->cg)
		r = cgroup_create_cpu(cfg->cg, err);

	/* The child's own report wins: when it failed first, our send above
	 * failed only because it was gone. */
	abox_error child_err;
	ssize_t n = read_full(ep[0], &child_err, sizeof(child_err));
	close(ep[0]);
	if (n == (ssize_t)sizeof(child_err)) {
		child_err.msg[sizeof(child_err.msg) - 1] = '\0';
		if (err)
			*err = child_err;
		r = -(child_err.code ? child_err.code : EIO);
	} else if (r >= 0 && n != 0) {
		r = abox_error_setx(err, EIO, "sandbox child died during setup");
	}
	/* init runs (exec'd) and sits in its v2 leaf: the commands' limit
	 * can be written now, before anything of the sandbox's own runs */
	if (r >= 0 && cfg->cg)
		r = cgroup_nest_finish(cfg->cg, err);
	if (r < 0) {
		kill((pid_t)pid, SIGKILL);
		while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (pidfd >= 0)
			close(pidfd);
		return r;
	}
	out->pid = (pid_t)pid;
	out->pidfd = pidfd;
	return 0;
}
