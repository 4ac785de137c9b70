/* local/checkpoint/restore.c — a sandbox's processes back from their
 * checkpoint (see checkpoint/hook.c).
 *
 * What the dump did not take is made again exactly as at create: the
 * cgroups with the recorded limits, the runtime folder with a new
 * listening socket, the writable layer (a new disk, or a tmpfs where the
 * sandbox asked for one) and the root overlay
 * on the recorded template version and snapshot layers. The hook runs in
 * a child that joined those cgroups and has a mount namespace of its own
 * holding the new root and the host trees' overlays (the hook binds them
 * in as the external mounts it was told of at dump): the restored tree
 * lands in the sandbox's cgroups and none of its mounts touch the host.
 * Runs in the CLI/daemon, as root. */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "local/checkpoint/checkpoint.h"
#include "base/fdpass.h"
#include "disk/disk.h"
#include "mount/rootfs.h"
#include "store/store.h"

/* One fd or an error text over a socketpair. */
static void send_fd_or_msg(int sock, int fd, const char *msg)
{
	const char *m = msg ? msg : ".";
	(void)fd_send(sock, m, strlen(m) + 1, &fd, fd >= 0 ? 1 : 0, 0);
}

static int recv_fd_or_msg(int sock, char *msg, size_t n)
{
	int fd = -1;
	size_t nfd = 0;
	ssize_t got = fd_recv(sock, msg, n - 1, &fd, 1, &nfd, 0);
	msg[got > 0 ? (size_t)got : 0] = '\0';
	return nfd == 1 ? fd : -1;
}

struct restorer {
	const char *hook;
	const char **argv;
	struct cg_sandbox *cg;
	const struct rootfs_plan *plan;
	int sock;
	char **env; /* checkpointer_environ */
};

/* The child: into the cgroups, a mount namespace of its own with the new
 * root, the layer's fd to the parent, then the hook. */
static _Noreturn void restorer_child(const struct restorer *r)
{
	abox_error e = ABOX_ERROR_INIT;
	int layer = -1;
	if (cgroup_attach(r->cg, getpid(), true, &e) < 0 || (unshare(CLONE_NEWNS) < 0 &&
							      abox_error_set(&e, errno, "unshare") < 0) ||
	    rootfs_setup(r->plan, &layer, &e) < 0) {
		send_fd_or_msg(r->sock, -1, e.msg[0] ? e.msg : "set-up failed");
		_exit(120);
	}
	send_fd_or_msg(r->sock, layer, NULL);
	close(layer);
	close(r->sock);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	execve(r->hook, (char *const *)r->argv, r->env);
	_exit(127);
}

int checkpoint_restore(abox_ctx *ctx, const struct sb_state *st, const char *hook, const char *images,
		       const char *workdir, const char *id, const char *token, struct restored *out, abox_error *err)
{
	int r;
	struct template_info tmpl = { .lock_fd = -1 };
	struct stack stk = { .lock = -1 };
	struct cg_sandbox *cg = NULL;
	char *rundir = NULL;
	int rundir_fd = -1, listen_fd = -1, conn = -1, layer = -1, pidfd = -1, disk_fd = -1;
	int sp[2] = { -1, -1 };
	char planned[8192];
	_cleanup_free_ char *with_extras = NULL; /* the lowers with abox's own files */
	_cleanup_free_ char **env = checkpointer_environ();

	if (!st->template_root || !st->template_name)
		return abox_error_setx(err, EBADMSG, "restore: the record of %s names no template", id);
	if ((r = template_open_version(st->template_name, st->template_root, &tmpl, err)) < 0)
		return abox_error_prefix(err, "restore");
	if (st->snapshots && st->snapshots[0] &&
	    ((r = stack_open(ctx, st->snapshots[0], &stk, err)) < 0 || (r = stack_lowers(&stk, &tmpl, err)) < 0)) {
		abox_error_prefix(err, "restore");
		goto out;
	}
	if ((r = backend_layout(ctx, err)) < 0 ||
	    (r = store_rundir_create(ctx->runtime_dir, id, false, &rundir, &rundir_fd, &listen_fd, &conn, err)) < 0 ||
	    (r = cgroup_planned_dirs(&ctx->cg, id, planned, sizeof(planned), err)) < 0 ||
	    (r = store_rundir_record(rundir_fd, STORE_CGROUPS_FILE, planned, err)) < 0 ||
	    (r = store_rundir_record(rundir_fd, STORE_ROOT_FILE, ctx->state_dir, err)) < 0) {
		abox_error_prefix(err, "restore");
		goto out;
	}
	struct cg_limits lim = { .memory_bytes = st->memory_bytes, .pids = st->pids, .cpu_millis = st->cpu_millis };
	if ((r = cgroup_create(&ctx->cg, id, &lim, &cg, err)) < 0) {
		abox_error_prefix(err, "restore");
		goto out;
	}

	/* a disk as the sandbox had, or the tmpfs it asked for */
	if (!st->tmpfs_layer && (disk_fd = backend_disk_new(ctx, st->disk_bytes, err)) < 0) {
		r = disk_fd;
		disk_fd = -1;
		if (!disk_unsupported(r)) {
			abox_error_prefix(err, "restore");
			goto out;
		}
		/* this host has no disks (any more): as a create would */
		backend_log(ctx, ABOX_LOG_WARNING, "restore %s: no disk (%s), the writable layer is a tmpfs", id,
			    err ? err->msg : "");
		if (err)
			*err = (abox_error)ABOX_ERROR_INIT;
	}

	char hosts[256], log[4200], pidfile[4200], root[4200];
	snprintf(hosts, sizeof(hosts), "127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n", id);
	struct rootfs_plan plan = {
		.userns_fd = -1,
		.scratch = rundir,
		.lower = st->snapshots && st->snapshots[0] ? stk.root_lower : tmpl.root,
		.ntrees = tmpl.ntrees,
		.disk_bytes = st->disk_bytes,
		.on_disk = disk_fd >= 0,
		.disk_fd = disk_fd,
		.hostname = id,
		.hosts = hosts,
		.user_uid = tmpl.user_uid,
		.user_gid = tmpl.user_gid,
		.restore = true,
	};
	for (unsigned i = 0; i < tmpl.ntrees; i++) {
		plan.trees[i] = tmpl.trees[i];
		plan.tree_lowers[i] = stk.tree_lowers[i];
	}
	/* the same layers as when it was dumped: abox's own files too */
	if (!st->no_sudo && (r = local_extras_apply(ctx, &plan, &with_extras, err)) < 0)
		goto out;
	safe_snprintf(log, sizeof(log), "%s/restore.log", workdir);
	/* not in the runtime folder: the restorer has the new tmpfs mounted there */
	safe_snprintf(pidfile, sizeof(pidfile), "%s/restored.pid", workdir);
	safe_snprintf(root, sizeof(root), "%s/root", rundir);
	struct checkpoint_argv a;
	checkpoint_hook_args(&a, hook, true, images, log, &tmpl, rundir);
	a.v[a.n++] = "--root";
	a.v[a.n++] = root;
	a.v[a.n++] = "--restore-detached";
	a.v[a.n++] = "--pidfile";
	a.v[a.n++] = pidfile;
	a.v[a.n] = NULL;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		r = abox_error_set(err, errno, "restore: socketpair");
		goto out;
	}
	if (!env) {
		r = abox_error_set(err, ENOMEM, "restore");
		goto out;
	}
	struct restorer rs = {
		.hook = hook, .argv = a.v, .cg = cg, .plan = &plan, .sock = sp[1], .env = env
	};
	pid_t c = fork();
	if (c < 0) {
		r = abox_error_set(err, errno, "restore: fork");
		goto out;
	}
	if (c == 0)
		restorer_child(&rs);
	close(sp[1]);
	sp[1] = -1;
	if (disk_fd >= 0)
		close(disk_fd); /* the restorer's namespace has it now */
	disk_fd = -1;
	char msg[1024];
	layer = recv_fd_or_msg(sp[0], msg, sizeof(msg));
	int wst;
	while (waitpid(c, &wst, 0) < 0 && errno == EINTR)
		;
	if (layer < 0) {
		r = abox_error_setx(err, EIO, "restore: %s", msg[0] ? msg : "the restorer failed");
		goto out;
	}
	if (!WIFEXITED(wst) || WEXITSTATUS(wst) != 0) {
		char tail[64];
		safe_snprintf(tail, sizeof(tail), "%s %d", WIFEXITED(wst) ? "exit" : "signal",
			      WIFEXITED(wst) ? WEXITSTATUS(wst) : WTERMSIG(wst));
		char why[2048];
		checkpoint_log_tail(log, why, sizeof(why));
		r = abox_error_setx(err, EIO, "restore: the checkpointer failed (%s; log %s)%s", tail, log, why);
		goto out;
	}
	char *pidtxt = NULL;
	if (read_file_at(AT_FDCWD, pidfile, 64, &pidtxt, NULL) < 0) {
		r = abox_error_setx(err, EIO, "restore: the checkpointer wrote no pid (log %s)", log);
		goto out;
	}
	out->pid = (pid_t)strtol(pidtxt, NULL, 10);
	free(pidtxt);
	unlink(pidfile);
	pidfd = (int)syscall(SYS_pidfd_open, out->pid, 0);
	if (out->pid <= 0 || pidfd < 0 || proc_start_time(out->pid, &out->pid_start) < 0) {
		r = abox_error_setx(err, ESRCH, "restore: the restored init (pid %d) is gone (log %s)", (int)out->pid,
				    log);
		goto out;
	}
	/* v2 memory: the restored tree sits in init's leaf now; then the
	 * commands' cgroup gets its limit, and init the fd to start commands
	 * there (the restored ones stay where the restore put them, within
	 * the sandbox's total) */
	int cmds = -1;
	if ((r = cgroup_nest_finish(cg, err)) < 0 ||
	    ((cmds = cgroup_cmds_fd(cg, err)) < 0 && cmds != -ENOENT) ||
	    (r = checkpoint_rearm(out->pid, pidfd, token, listen_fd, layer, cmds, err)) < 0) {
		if (cmds >= 0)
			close(cmds);
		r = r < 0 ? r : cmds;
		abox_error_prefix(err, "restore");
		(void)cgroup_kill(cg, NULL);
		goto out;
	}
	if (cmds >= 0)
		close(cmds);
	out->cgroups = strdup(planned);
	r = 0;
out:
	if (r < 0 && cg) {
		(void)cgroup_kill(cg, NULL);
		(void)cgroup_destroy(cg, NULL); /* frees it */
	} else {
		cgroup_sandbox_free(cg);
	}
	if (r < 0 && rundir)
		(void)store_rundir_remove(rundir, NULL);
	for (int i = 0; i < 2; i++)
		close_if_open(sp[i]);
	close_if_open(pidfd);
	close_if_open(disk_fd);
	close_if_open(layer);
	close_if_open(listen_fd);
	close_if_open(conn);
	close_if_open(rundir_fd);
	free(rundir);
	template_info_free(&tmpl);
	stack_free(&stk);
	return r;
}
