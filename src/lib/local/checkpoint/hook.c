/* local/checkpoint/hook.c — memory checkpoints through a checkpoint hook.
 *
 * The hook is a CRIU-compatible program (CRIU itself by default: see
 * scripts/criu-setup.sh). Pause to disk: init lets go of every fd that leads
 * out of the sandbox (MSG_REQ_CHECKPOINT), the tree is frozen, its files
 * are kept as a snapshot layer (as a pause without memory does), and the
 * hook dumps the frozen tree into <state>/sandboxes/<id>/checkpoint,
 * which kills it. Resume: the sandbox's cgroups, runtime folder, writable
 * layer and root overlay (on the kept layer) are made again, the hook
 * restores the tree into them from a child that joined the cgroups, and
 * the restored init is re-armed with a new listening socket and layer fd.
 *
 * Mounts the hook must not dump (the host trees' overlays, /usr...) are
 * named external; the root is given with --root on restore. The network
 * has only loopback, so no network lock is needed (and none of the host's
 * firewall is touched). Finding, checking and running the hook program:
 * checkpointer.c.
 * Runs in the CLI/daemon, as root. */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "local/local.h"
#include "local/checkpoint/checkpoint.h"
#include "base/fdpass.h"
#include "base/run.h"
#include "layer/layer.h"
#include "mount/rootfs.h"
#include "proto/messages.h"
#include "store/state.h"
#include "store/store.h"

/* In a child about to serve: fds[i] (those >= 0) become 3 + i, every
 * other fd above 2 is closed, fds[] says the new numbers. False when an
 * fd could not be placed. */
static bool keep_only_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0 && (fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 100)) < 0)
			return false;
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0 && (fds[i] = dup3(fds[i], 3 + i, O_CLOEXEC)) < 0)
			return false;
	(void)syscall(SYS_close_range, 3 + n, ~0U, 0);
	return true;
}

/* Gives init (restored, or after a failed dump) a listening socket and
 * the writable layer's fd: from a child in the sandbox's network
 * namespace only, through an abstract socket named with the checkpoint's
 * token, to a peer that must be init itself. */
int checkpoint_rearm(pid_t init_pid, int pidfd, const char *token, int listen_fd, int layer_fd, int cmds_fd,
		     abox_error *err)
{
	pid_t c = fork();
	if (c < 0)
		return abox_error_set(err, errno, "re-arm init: fork");
	if (c == 0) {
		/* nothing of ours but what init gets: a copy of another
		 * sandbox's connection kept here (aboxd holds many) would hide
		 * its hang-up from that sandbox's init */
		int keep[4] = { pidfd, listen_fd, layer_fd, cmds_fd };
		if (!keep_only_fds(keep, 4))
			_exit(9);
		pidfd = keep[0];
		listen_fd = keep[1];
		layer_fd = keep[2];
		cmds_fd = keep[3];
		if (setns(pidfd, CLONE_NEWNET) < 0)
			_exit(10);
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		size_t nl = (size_t)safe_snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "%s%s", INIT_REARM_NAME,
						  token);
		socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + nl);
		if (s < 0 || bind(s, (struct sockaddr *)&sa, len) < 0 || listen(s, 8) < 0)
			_exit(11);
		for (int tries = 0; tries < 20; tries++) {
			if (syscall(SYS_pidfd_send_signal, pidfd, INIT_REARM_SIGNAL, NULL, 0) < 0)
				_exit(12);
			struct pollfd p = { .fd = s, .events = POLLIN };
			while (poll(&p, 1, 250) > 0) {
				int a = accept4(s, NULL, NULL, SOCK_CLOEXEC);
				if (a < 0)
					break;
				struct ucred cr;
				socklen_t cl = sizeof(cr);
				/* someone else who found the name: nothing for them */
				if (getsockopt(a, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.pid != init_pid) {
					close(a);
					continue;
				}
				int fds[3] = { listen_fd, layer_fd, cmds_fd };
				size_t nfds = cmds_fd >= 0 ? 3 : 2;
				_exit(fd_send(a, "A", 1, fds, nfds, 0) == 1 ? 0 : 13);
			}
		}
		_exit(14);
	}
	int st = wait_child(c, err, "re-arm init: wait");
	if (st <= 0)
		return st;
	return abox_error_setx(err, EIO, "re-arm init: init did not take its new sockets (step %d)",
			       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* Asks init to let go of its host fds; it answers, then hangs up. */
static int checkpoint_prepare(abox_sandbox *sb, const char *token, abox_error *err)
{
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_CHECKPOINT, ++sb->next_req);
	proto_put_str(&m, F_NAME, token);
	int r = backend_call(sb, &m, "checkpoint", NULL, NULL, err);
	bool init_let_go = r >= 0;
	/* init hangs up on us last, once it holds nothing from outside:
	 * wait for that end of file before anything is frozen */
	if (r >= 0 && sb->conn >= 0) {
		int64_t end = clock_mono_ms() + 5000;
		for (;;) {
			char buf[256];
			ssize_t n = read(sb->conn, buf, sizeof(buf));
			if (n == 0)
				break;
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				break; /* a reset is as good as the end */
			int left = (int)(end - clock_mono_ms());
			if (left <= 0) {
				r = abox_error_setx(err, ETIMEDOUT, "checkpoint: init of %s did not let go of its connections",
						    sb->id);
				break;
			}
			struct pollfd p = { .fd = sb->conn, .events = POLLIN };
			(void)poll(&p, 1, left);
		}
	}
	if (r < 0 && sb->conn >= 0 && !init_let_go)
		return r; /* init said no: it keeps its connections, we ours */
	if (sb->conn >= 0)
		close(sb->conn);
	sb->conn = -1;
	sb->rd.sock = -1;
	sb->conn_errno = ESRCH;
	return r;
}

void checkpoint_hook_args(struct checkpoint_argv *a, const char *hook, bool restore, const char *dir,
			  const char *log, const struct template_info *t, const char *rundir)
{
	a->n = 0;
	a->v[a->n++] = hook;
	a->v[a->n++] = restore ? "restore" : "dump";
	a->v[a->n++] = "-D";
	a->v[a->n++] = dir;
	a->v[a->n++] = "-o";
	a->v[a->n++] = log;
	a->v[a->n++] = "-v2";
	/* the cgroups are ours on both sides (the restore makes new ones),
	 * the network is the sandbox's own loopback: nothing to lock */
	a->v[a->n++] = "--manage-cgroups=ignore";
	a->v[a->n++] = "--network-lock=skip";
	a->v[a->n++] = "--tcp-established";
	a->v[a->n++] = "--file-locks";
	/* the template's trees are mounts of the host's: named on the way
	 * out, put back where the restored root has them */
	for (unsigned i = 0; i < t->ntrees; i++) {
		if (restore)
			safe_snprintf(a->ext[i], 600, "mnt[abox-tree-%s]:%s/trees/%s", t->trees[i], rundir,
				      t->trees[i]);
		else
			safe_snprintf(a->ext[i], 600, "mnt[/%s]:abox-tree-%s", t->trees[i], t->trees[i]);
		a->v[a->n++] = "--external";
		a->v[a->n++] = a->ext[i];
	}
}

/* Whether init serves requests, asked once the checkpoint's asker is gone
 * for good: 1 when it answered one (a request of the dead asker that it
 * reads from now on is refused: see init's ckpt_handle), 0 when it let go
 * (the connection refused, or dropped unanswered), -1 when it did not
 * answer in time (frozen again by someone, or slow: ask again). A look at
 * whether it merely listens was not enough: an init that had read the
 * request just before its asker died, and was then kept off the CPU for a
 * while, still listened when the keeper looked and let go after the
 * keeper had left, which lost the sandbox. */
static int init_serves(const char *rundir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	safe_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/init.sock", rundir);
	_cleanup_close_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -1;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return errno == ECONNREFUSED || errno == ENOENT ? 0 : -1;
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_LIST, 1);
	int r = proto_send(s, &m);
	proto_msg_free(&m);
	if (r < 0)
		return r == -EPIPE || r == -ECONNRESET ? 0 : -1;
	struct proto_reader rd;
	proto_reader_init(&rd, s);
	struct proto_frame f;
	r = proto_recv_timeout(&rd, &f, 2000);
	proto_reader_free(&rd);
	if (r > 0)
		return 1;
	return r == 0 || r == -ECONNRESET || r == -EPIPE ? 0 : -1;
}

/* Whether pid has ended (a zombie): its state in /proc/PID/stat, after
 * the name's closing parenthesis. */
static bool proc_ended(pid_t pid)
{
	_cleanup_free_ char *s = NULL;
	if (read_proc_file(pid, "stat", &s) < 0)
		return true;
	const char *p = strrchr(s, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

/* Whether a checkpointer still has init under ptrace (mid-dump). */
static bool init_traced(pid_t pid)
{
	_cleanup_free_ char *s = NULL;
	if (read_proc_file(pid, "status", &s) < 0)
		return false;
	const char *t = strstr(s, "\nTracerPid:");
	return t && strtol(t + 12, NULL, 10) != 0;
}

static void thaw_at(const char *freezer)
{
	int dfd = open(freezer, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		(void)write_file_at(dfd, "cgroup.freeze", "0");
		(void)write_file_at(dfd, "freezer.state", "THAWED");
		close(dfd);
	}
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* A pause to disk whose holder died after recording it but before ending
 * the tree (DUMP_FROZEN): the record says paused to disk, so the frozen
 * tree is what is left over, not the sandbox. It is ended as the holder
 * would have (cgroups, runtime folder; the record kept). True when the
 * record says so. */
static bool keeper_finish_pause(abox_sandbox *sb)
{
	/* under the sandbox's lock: a resume that came first has made the
	 * cgroups again, for its own tree */
	_cleanup_close_ int lock = state_lock(sb->ctx->state_dir, sb->id, NULL);
	if (lock < 0)
		return false;
	struct sb_state st = { 0 };
	if (state_read(sb->ctx->state_dir, sb->id, &st, NULL) < 0)
		return false;
	/* the pidfd is that init's: alive, it is the tree the record left */
	bool recorded = st.cold && st.checkpoint && st.pid == sb->pid;
	sb_state_free(&st);
	if (recorded && syscall(SYS_pidfd_send_signal, sb->pidfd, 0, NULL, 0) == 0) {
		state_lock_hold(lock, sb->ctx->state_dir, sb->id);
		(void)backend_kill(sb, true, NULL);
		state_lock_hold(-1, NULL, NULL);
	}
	return recorded;
}

/* The keeper, in the child: waits for its parent's word; if the parent
 * dies first (SIGKILLed mid-checkpoint), init would wait for a re-arm
 * that never comes — thawed by the next one to look, but unreachable for
 * good, since the layer fd it needs died with the parent. So the keeper,
 * which holds a copy of that fd, waits for an orphaned checkpointer to
 * finish (it leaves the tree frozen, as it found it), thaws the tree,
 * gives init a new socket and the fd, and has the clocks put back as the
 * record says. Bounded: a minute at most. */
_Noreturn static void keeper_main(abox_sandbox *sb, const char *token, const char *freezer, int rfd,
				  int parent)
{
	struct pollfd p = { .fd = rfd, .events = POLLIN };
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	char c = 0;
	ssize_t n = read(rfd, &c, 1);
	if (n == 1)
		_exit(0); /* the parent finished the checkpoint itself */
	/* the pipe's end of file may come before the parent's other fds are
	 * closed, its connection to init among them (init would still take a
	 * request on it for one that came from a live asker): the parent is
	 * gone for good once its pidfd says so */
	struct pollfd pp = { .fd = parent, .events = POLLIN };
	while (poll(&pp, 1, 10000) < 0 && errno == EINTR)
		;
	state_lock_hold(-1, NULL, NULL); /* the parent's, closed in this process */
	char rd[4200];
	safe_snprintf(rd, sizeof(rd), "%s/%s", sb->ctx->runtime_dir, sb->id);
	if (keeper_finish_pause(sb))
		_exit(0);
	/* a minute of tries after the last sight of an orphaned checkpointer
	 * at work (its own time limit died with our parent): at most the
	 * checkpointer's limit and that minute */
	int64_t cap = clock_mono_ms() + checkpointer_timeout_ms() + 60000;
	for (int64_t end = clock_mono_ms() + 60000; clock_mono_ms() < end; nap_ms(100)) {
		/* gone: ended by someone else (a kill), nothing to do */
		if (syscall(SYS_pidfd_send_signal, sb->pidfd, 0, NULL, 0) < 0)
			_exit(0);
		if (init_traced(sb->pid)) {
			int64_t later = clock_mono_ms() + 60000;
			end = later < cap ? later : cap;
			continue;
		}
		/* a checkpointer that ended after someone else thawed it left
		 * it frozen again; and a frozen init answers nobody */
		thaw_at(freezer);
		int serves = init_serves(rd);
		if (serves < 0)
			continue;
		if (serves) {
			(void)backend_freeze_recover_now(sb->ctx, sb->id);
			_exit(0);
		}
		abox_error e = ABOX_ERROR_INIT;
		int l = -1, conn = -1;
		int cmds = cgroup_cmds_fd(sb->cg, NULL);
		if (store_rundir_relisten(rd, &l, &conn, &e) == 0 &&
		    checkpoint_rearm(sb->pid, sb->pidfd, token, l, sb->layer_fd, cmds, &e) == 0) {
			close(conn);
			close(l);
			/* a checkpointer that started just before its parent
			 * died puts its freeze back as it ends: wait it out */
			for (int w = 0; w < 600 && init_traced(sb->pid); w++)
				nap_ms(100);
			nap_ms(100);
			thaw_at(freezer);
			(void)backend_freeze_recover_now(sb->ctx, sb->id);
			_exit(0);
		}
		close_if_open(l);
		close_if_open(conn);
		close_if_open(cmds);
	}
	_exit(1);
}

static void keeper_path(const abox_ctx *ctx, const char *id, char *buf, size_t n)
{
	/* beside the record, not in the runtime folder: a pause to disk
	 * removes that folder while its keeper still runs */
	safe_snprintf(buf, n, "%s/sandboxes/%s/keeper", ctx->state_dir, id);
}

bool local_keeper_wait(abox_ctx *ctx, const char *id)
{
	/* a keeper that ends a paused tree takes the sandbox's lock: not
	 * waited for by the holder of that lock (a resume from disk) */
	if (state_lock_is_held(ctx->state_dir, id))
		return false;
	char p[4200];
	keeper_path(ctx, id, p, sizeof(p));
	pid_t pid = 0;
	/* the pidfd, then the note's start time again: a reused pid is not
	 * waited for; nor ourselves, nor a keeper that ended (a zombie
	 * nobody reaps) */
	_cleanup_close_ int fd = -EBADF;
	if (backend_pid_note_live(p, NULL, 0, &pid) != 1 || pid == getpid() ||
	    (fd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0 || backend_pid_note_live(p, NULL, 0, NULL) != 1 ||
	    proc_ended(pid))
		return false;
	backend_log(ctx, ABOX_LOG_DEBUG,
		    "sandbox %s: init is away for a checkpoint, waiting for its keeper (pid %d)", id,
		    (int)pid);
	struct pollfd w = { .fd = fd, .events = POLLIN };
	int64_t t = lock_timeout_ms();
	int r;
	while ((r = poll(&w, 1, t > INT32_MAX ? INT32_MAX : (int)t)) < 0 && errno == EINTR)
		;
	return r > 0;
}

/* Starts the keeper of a checkpoint about to begin. It holds nothing of
 * ours but the layer fd and init's pidfd: no lock, no socket (a lock it
 * kept would outlive the parent it is meant to survive). */
static int keeper_start(abox_sandbox *sb, const char *token, abox_error *err)
{
	int r;
	const char *freezer = cgroup_freezer_dir(sb->cg);
	int pfd[2];
	if (!freezer || pipe2(pfd, O_CLOEXEC) < 0)
		return abox_error_set(err, freezer ? errno : EOPNOTSUPP, "checkpoint: keeper");
	/* ours, for the keeper to see us gone for good */
	int self = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (self < 0) {
		r = abox_error_set(err, errno, "checkpoint: keeper: pidfd_open");
		close(pfd[0]);
		close(pfd[1]);
		return r;
	}
	pid_t k = fork_with(pfd, err, "checkpoint: keeper: fork");
	if (k < 0) {
		close(self);
		return k;
	}
	if (k == 0) {
		/* its own session: a ^C to the caller's group must not take it */
		(void)setsid();
		int keep[4] = { pfd[0], sb->layer_fd, sb->pidfd, self };
		if (!keep_only_fds(keep, 4))
			_exit(2);
		sb->layer_fd = keep[1];
		sb->pidfd = keep[2];
		sb->conn = sb->rd.sock = -1;
		keeper_main(sb, token, freezer, keep[0], keep[3]);
	}
	close(self);
	close(pfd[0]);
	sb->keeper_fd = pfd[1];
	sb->keeper_pid = k;
	/* for a caller that finds init deaf meanwhile (local_keeper_wait);
	 * best effort */
	char note[4200];
	keeper_path(sb->ctx, sb->id, note, sizeof(note));
	(void)backend_pid_note(note, k, "keeper");
	return 0;
}

void checkpoint_end(abox_sandbox *sb)
{
	if (sb->keeper_pid <= 0)
		return;
	char d = 'D';
	(void)write_full(sb->keeper_fd, &d, 1);
	close(sb->keeper_fd);
	while (waitpid(sb->keeper_pid, NULL, 0) < 0 && errno == EINTR)
		;
	char p[4200];
	keeper_path(sb->ctx, sb->id, p, sizeof(p));
	(void)unlink(p);
	sb->keeper_fd = -1;
	sb->keeper_pid = 0;
}

int checkpoint_begin(abox_sandbox *sb, char **token_out, abox_error *err)
{
	char token[33];
	int r = random_id(token, 32);
	if (r < 0)
		return abox_error_set(err, -r, "checkpoint: random");
	if (!cgroup_freezer_dir(sb->cg))
		return abox_error_setx(err, EOPNOTSUPP, "checkpoint: the sandbox has no freezer");
	char p[64];
	safe_snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)sb->pid, INIT_LAYER_FD);
	int lfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lfd < 0)
		return abox_error_set(err, errno, "checkpoint: open the writable layer of %s", sb->id);
	sb->layer_fd = lfd;
	sb->has_layer_fd = true;
	if (!(*token_out = strdup(token)))
		return abox_error_set(err, ENOMEM, "checkpoint");
	if ((r = keeper_start(sb, token, err)) < 0)
		return r;
	if ((r = checkpoint_prepare(sb, token, err)) < 0) {
		checkpoint_end(sb);
		return r; /* init said no: it still has everything */
	}
	if ((r = backend_freeze(sb, true, "checkpoint", err)) < 0)
		checkpoint_abort(sb, token);
	return r;
}

void checkpoint_abort(abox_sandbox *sb, const char *token)
{
	/* the tree goes on as before: thawed, with a new socket */
	abox_error e2 = ABOX_ERROR_INIT;
	(void)cgroup_freeze(sb->cg, false, NULL);
	int l = -1, c = -1;
	char rd[4200];
	safe_snprintf(rd, sizeof(rd), "%s/%s", sb->ctx->runtime_dir, sb->id);
	int cmds = cgroup_cmds_fd(sb->cg, NULL);
	if (store_rundir_relisten(rd, &l, &c, &e2) == 0 &&
	    checkpoint_rearm(sb->pid, sb->pidfd, token, l, sb->layer_fd, cmds, &e2) == 0) {
		sb->conn = c;
		sb->rd.sock = c;
		sb->conn_errno = 0;
		fcntl(c, F_SETFL, O_NONBLOCK);
		c = -1;
	} else {
		backend_log(sb->ctx, ABOX_LOG_WARNING, "checkpoint of %s failed and its init could not be re-armed: %s",
			    sb->id, e2.msg);
	}
	close_if_open(l);
	close_if_open(c);
	close_if_open(cmds);
}

int checkpoint_dump(abox_sandbox *sb, const char *hook, const char *dir, const struct template_info *tmpl,
		    const char *token, enum dump_end end, abox_error *err)
{
	int r;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		r = abox_error_set(err, errno, "checkpoint: mkdir '%s'", dir);
		checkpoint_abort(sb, token);
		return r;
	}
	char log[4200], pid[24];
	/* beside the record, not in dir: a failed dump's images go, its
	 * log stays for the user to read (the next dump overwrites it) */
	safe_snprintf(log, sizeof(log), "%s/sandboxes/%s/dump.log", sb->ctx->state_dir, sb->id);
	safe_snprintf(pid, sizeof(pid), "%d", (int)sb->pid);
	struct checkpoint_argv a;
	checkpoint_hook_args(&a, hook, false, dir, log, tmpl, NULL);
	a.v[a.n++] = "-t";
	a.v[a.n++] = pid;
	a.v[a.n++] = "--freeze-cgroup";
	a.v[a.n++] = cgroup_freezer_dir(sb->cg);
	/* the hook never ends the tree: see enum dump_end */
	a.v[a.n++] = "--leave-running";
	a.v[a.n] = NULL;
	r = checkpoint_run_hook(hook, a.v, log, "checkpoint", err);
	/* failed, or done and to go on: it does so with a new socket */
	if (r < 0 || end == DUMP_RUNNING)
		checkpoint_abort(sb, token);
	return r;
}
