/* backend/local.c — sandbox lifecycle on this machine past its create
 * (create.c): the link to init (send, receive, call), timeouts, kill and
 * cleanup, metrics, gc.
 * Runs in the CLI/daemon. */
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "backend/backend.h"
#include "layer/snapshot.h"
#include "caps/caps.h"
#include "disk/disk.h"
#include "layer/layer.h"
#include "proto/messages.h"
#include "seccomp/policy.h"
#include "spawn/spawn.h"
#include "store/state.h"
#include "store/store.h"
#include "versioned.h"



static void reap_blocking(abox_sandbox *sb)
{
	backend_reap_init(sb, true);
}

void backend_reap_init(abox_sandbox *sb, bool wait)
{
	if (sb->dead || sb->pid <= 0)
		return;
	if (sb->attached) {
		/* not our child (another process made it): its pidfd becomes
		 * readable when it exits */
		struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };
		int k;
		do
			k = poll(&p, 1, wait ? 10000 : 0);
		while (k < 0 && errno == EINTR);
		if (k > 0 || sb->pidfd < 0)
			sb->dead = true;
		/* found by id, but made by this very process (a daemon that
		 * runs on): then it is our child and only we can reap it */
		if (k > 0) {
			siginfo_t si;
			(void)waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED | WNOHANG);
		}
		return;
	}
	int st;
	pid_t r;
	do
		r = waitpid(sb->pid, &st, wait ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == sb->pid || (r < 0 && errno == ECHILD)) {
		sb->dead = true;
		sb->init_status = r == sb->pid ? st : 0;
	}
}

int backend_layout(abox_ctx *ctx, abox_error *err)
{
	if (ctx->cg_ready)
		return 0;
	int r = cgroup_layout_detect(&ctx->cg, err);
	if (r < 0)
		return r;
	ctx->proc_masks = rootfs_proc_masks_present();
	ctx->cg_ready = true;
	return 0;
}

int backend_send(abox_sandbox *sb, struct proto_msg *m)
{
	int r = proto_queue(&sb->out, m);
	proto_msg_free(m);
	if (r < 0)
		return r;
	r = proto_flush(sb->conn, &sb->out);
	return r < 0 ? r : 0;
}

void backend_release(abox_sandbox *sb)
{
	if (sb->conn >= 0)
		close(sb->conn);
	sb->conn = -1;
	proto_reader_free(&sb->rd);
	proto_outq_free(&sb->out);
	strv_free(sb->env);
	sb->env = NULL;
	free(sb->def_user);
	free(sb->def_cwd);
	sb->def_user = sb->def_cwd = NULL;
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	sb->pidfd = -1;
	if (sb->template_lock >= 0)
		close(sb->template_lock);
	sb->template_lock = -1;
	free(sb->rundir);
	sb->rundir = NULL;
	if (sb->rundir_fd >= 0)
		close(sb->rundir_fd); /* releases the lock: nothing is left to clean */
	sb->rundir_fd = -1;
}

int backend_recv(abox_sandbox *sb, struct proto_frame *f, const char *what, abox_error *err)
{
	/* never for ever: a tree frozen by someone who does not let go (or
	 * an init that stopped serving) ends in an error, not a hang that
	 * holds the sandbox's lock */
	int64_t end = clock_mono_ms() + lock_timeout_ms();
	for (;;) {
		int r = proto_recv_timeout(&sb->rd, f, 1000);
		if (r != -ETIMEDOUT)
			return r;
		if (clock_mono_ms() >= end)
			return abox_error_setx(err, ETIMEDOUT, "%s: init of sandbox %s did not answer for %lld ms", what,
					       sb->id, (long long)lock_timeout_ms());
		/* a frozen init never answers: if another process paused the
		 * sandbox since this handle looked, say so instead of waiting
		 * for ever */
		struct sb_state st = { 0 };
		bool paused = !(sb->flags & ABOX_SANDBOX_EPHEMERAL) &&
			      state_read(sb->ctx->state_dir, sb->id, &st, NULL) == 0 && st.paused_ms;
		sb_state_free(&st);
		if (paused) {
			sb->paused = true;
			return backend_not_paused(sb, what, err);
		}
	}
}

int backend_call(abox_sandbox *sb, struct proto_msg *m, const char *what,
		 void (*on_ok)(const struct proto_frame *f, void *ud), void *ud, abox_error *err)
{
	int r = backend_not_paused(sb, what, err);
	if (r < 0)
		return r;
	if (sb->conn < 0)
		return abox_error_setx(err, ESRCH, "%s: sandbox %s is not reachable", what, sb->id);
	if (sb->active)
		return abox_error_setx(err, EBUSY, "%s: the handle is running a process", what);
	uint32_t id = m->id;
	r = backend_send(sb, m);
	if (r < 0)
		return abox_error_set(err, -r, "%s", what);
	for (;;) {
		while (proto_outq_len(&sb->out)) {
			struct pollfd p = { .fd = sb->conn, .events = POLLOUT };
			poll(&p, 1, 1000);
			if ((r = proto_flush(sb->conn, &sb->out)) < 0)
				return abox_error_set(err, -r, "%s", what);
		}
		struct proto_frame f;
		r = backend_recv(sb, &f, what, err);
		if (r == -EAGAIN)
			return r;
		if (r <= 0)
			return abox_error_set(err, r < 0 ? -r : EPIPE, "%s: init did not answer", what);
		for (unsigned i = 0; i < f.nfds; i++)
			close(f.fds[i]);
		if (f.id != id)
			continue;
		if (f.type == MSG_EV_OK) {
			if (on_ok)
				on_ok(&f, ud);
			return 0;
		}
		_cleanup_free_ char *msg = NULL;
		size_t off = 0;
		struct proto_field fl;
		while (proto_field_next(&f, &off, &fl) > 0)
			if (fl.tag == F_MESSAGE && !msg)
				(void)proto_field_strdup(&fl, &msg);
		return abox_error_setx(err, EPROTO, "%s: %s", what, msg ? msg : "init refused");
	}
}

/* ABOX_DEBUG: the steps the child and the parent stamped (spawn/marks.h). */
int abox_sandbox_set_timeout(abox_sandbox *sb, uint32_t timeout_ms, abox_error *err)
{
	if (REMOTE_SB(sb))
		return sb->ctx->remote_ops->set_timeout(sb, timeout_ms, err);
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		return abox_error_setx(err, EINVAL, "set-timeout: sandbox %s is ephemeral", sb->id);
	_cleanup_close_ int lock = backend_lock(sb->ctx, sb->id, err);
	if (lock < 0)
		return lock;
	struct sb_state st = { 0 };
	int r = state_read(sb->ctx->state_dir, sb->id, &st, err);
	if (r < 0)
		return r;
	if (st.paused_ms) {
		/* the record is the truth, not this handle: a frozen init would
		 * never answer, and we hold the lock resume and kill need */
		sb->paused = true;
		sb_state_free(&st);
		return backend_not_paused(sb, "set-timeout", err);
	}
	if (!st.auto_pause) {
		struct proto_msg m;
		proto_msg_init(&m, MSG_REQ_SET_TIMEOUT, ++sb->next_req);
		proto_put_u64(&m, F_TIMEOUT_MS, timeout_ms);
		r = backend_call(sb, &m, "set-timeout", NULL, NULL, err);
	}
	if (r >= 0) {
		st.deadline_ms = timeout_ms ? clock_wall_ms() + timeout_ms : 0;
		r = state_write(sb->ctx->state_dir, &st, err);
		sb->deadline_ms = timeout_ms && !st.auto_pause ? clock_mono_ms() + timeout_ms : 0;
	}
	sb_state_free(&st);
	return r;
}

const char *abox_sandbox_id(const abox_sandbox *sb)
{
	return sb->id;
}

uint64_t abox_sandbox_memory_limit(const abox_sandbox *sb)
{
	return sb->memory_limit;
}

int abox_sandbox_oom_kills(abox_sandbox *sb, uint64_t *out, abox_error *err)
{
	if (REMOTE_SB(sb))
		return backend_remote_unsupported("oom kills", err);
	*out = 0;
	/* a handle found by id opens the sandbox's cgroups on first use, so
	 * that `abox exec` reports OOM kills as `abox run` does */
	if (!sb->cg && sb->attached) {
		int r;
		if ((r = backend_layout(sb->ctx, err)) < 0 ||
		    (r = cgroup_open_existing(&sb->ctx->cg, sb->id, &sb->cg, err)) < 0)
			return abox_error_prefix(err, "oom count");
	}
	if (!sb->cg)
		return 0;
	return cgroup_oom_kills(sb->cg, out, err);
}

int abox_sandbox_kill(abox_sandbox *sb, abox_error *err)
{
	if (REMOTE_SB(sb))
		return sb->ctx->remote_ops->kill(sb, err);
	return backend_kill(sb, false, err);
}

/* Removes the cgroup folders a long-lived sandbox recorded, listed in its
 * runtime folder or else in its state record. */
static int remove_recorded_cgroups(abox_sandbox *sb, abox_error *err)
{
	const struct cg_layout *l = sb->ctx->cg_ready ? &sb->ctx->cg : NULL;
	char p[4200];
	safe_snprintf(p, sizeof(p), "%s/%s/%s", sb->ctx->runtime_dir, sb->id, STORE_CGROUPS_FILE);
	_cleanup_free_ char *rec = NULL;
	int r = 0;
	if (read_file_at(AT_FDCWD, p, 65536, &rec, NULL) == 0)
		return store_cgroups_remove(rec, sb->id, l, err);
	/* the runtime folder is gone (a reboot, a half-done kill): the
	 * state record keeps the same list */
	struct sb_state st = { 0 };
	if (state_read(sb->ctx->state_dir, sb->id, &st, NULL) == 0 && st.cgroups)
		r = store_cgroups_remove(st.cgroups, sb->id, l, err);
	sb_state_free(&st);
	return r;
}

/* A disk about to go is not written back: its filesystem is shut down
 * first, so the unmount when init's namespace ends takes no writeback of
 * what the sandbox wrote. Reached through init's fd on its layer; the
 * pidfd check after the open proves the pid still named our init. */
static void discard_layer(abox_sandbox *sb)
{
	int fd = -1;
	if (sb->has_layer_fd) {
		fd = fcntl(sb->layer_fd, F_DUPFD_CLOEXEC, 3);
	} else if (sb->pidfd >= 0) {
		char p[64];
		safe_snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)sb->pid, INIT_LAYER_FD);
		fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 && syscall(SYS_pidfd_send_signal, sb->pidfd, 0, NULL, 0) < 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return;
	(void)disk_discard(sb->ctx->state_dir, fd);
	close(fd);
}

int backend_kill(abox_sandbox *sb, bool keep_record, abox_error *err)
{
	int r = 0;
	if (!sb)
		return 0;
	bool long_lived = !(sb->flags & ABOX_SANDBOX_EPHEMERAL);
	_cleanup_close_ int lock = -EBADF;
	if (long_lived) {
		/* one killer at a time; a second one finds it gone */
		lock = state_lock(sb->ctx->state_dir, sb->id, NULL);
		if (!sb->cg && backend_layout(sb->ctx, NULL) >= 0)
			(void)cgroup_open_existing(&sb->ctx->cg, sb->id, &sb->cg, NULL);
	}
	if (!sb->dead && sb->pid > 0) {
		discard_layer(sb);
		/* cgroup.kill (or the v1 freeze-and-kill walk) reaches every
		 * task, including ones a frozen tree holds back; killing init
		 * alone would also end the pid namespace */
		if (sb->cg && long_lived)
			(void)cgroup_kill(sb->cg, NULL);
		if (sb->pidfd >= 0)
			(void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
		else if (!sb->attached)
			(void)kill(sb->pid, SIGKILL);
		reap_blocking(sb);
	}
	backend_log(sb->ctx, ABOX_LOG_DEBUG, "kill %s: init gone", sb->id);
	if (sb->cg) {
		r = cgroup_destroy(sb->cg, err);
		sb->cg = NULL;
	}
	/* the folders recorded at create, whether or not the handle found
	 * them (no layout: an unreadable mount table; or one seen from
	 * another cgroup than the creator's) */
	if (r >= 0 && long_lived)
		r = remove_recorded_cgroups(sb, err);
	if (r < 0) {
		/* a cgroup stays: keep the runtime folder and record, so
		 * that `abox gc` finds them and tries again */
		backend_release(sb);
		return r;
	}
	if (!sb->rundir && long_lived) {
		char rd[4096];
		safe_snprintf(rd, sizeof(rd), "%s/%s", sb->ctx->runtime_dir, sb->id);
		sb->rundir = strdup(rd);
	}
	if (sb->rundir) {
		int k = store_rundir_remove(sb->rundir, r < 0 ? NULL : err);
		if (r >= 0)
			r = k;
	}
	if (long_lived && !keep_record)
		(void)state_remove(sb->ctx->state_dir, sb->id);
	backend_release(sb);
	backend_log(sb->ctx, ABOX_LOG_DEBUG, "kill %s: cleaned up", sb->id);
	return r;
}

void abox_sandbox_free(abox_sandbox *sb)
{
	if (!sb)
		return;
	if (REMOTE_SB(sb)) {
		sb->ctx->remote_ops->release(sb);
		free(sb);
		return;
	}
	/* an ephemeral sandbox ends with its handle; a long-lived one runs on */
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		(void)abox_sandbox_kill(sb, NULL);
	else
		backend_release(sb);
	if (sb->cg)
		cgroup_sandbox_free(sb->cg);
	free(sb);
}

int abox_gc(abox_ctx *ctx, unsigned *removed, abox_error *err)
{
	if (REMOTE_CTX(ctx))
		return removed ? (*removed = 0, 0) : 0; /* the daemon collects its own */
	(void)abox_reap(ctx, NULL, NULL);
	/* without a layout gc still removes every recorded cgroup (their
	 * filesystem vouches for them); only the search for unrecorded ones
	 * needs it */
	abox_error lerr = ABOX_ERROR_INIT;
	bool have_layout = backend_layout(ctx, &lerr) >= 0;
	if (!have_layout)
		backend_log(ctx, ABOX_LOG_DEBUG, "gc without a cgroup layout: %s", lerr.msg);
	template_sweep(ctx->state_dir, NULL);
	snap_sweep(ctx->state_dir);
	return store_gc(ctx->runtime_dir, ctx->state_dir, have_layout ? &ctx->cg : NULL, removed, err);
}

static void disk_fields(const struct proto_frame *f, void *ud)
{
	abox_metrics *m = ud;
	size_t off = 0;
	struct proto_field fl;
	while (proto_field_next(f, &off, &fl) > 0) {
		if (fl.tag == F_DISK_USED)
			(void)proto_field_u64(&fl, &m->disk_used);
		else if (fl.tag == F_DISK_TOTAL)
			(void)proto_field_u64(&fl, &m->disk_limit);
	}
}

int abox_sandbox_metrics(abox_sandbox *sb, abox_metrics *out, abox_error *err)
{
	if (REMOTE_SB(sb))
		return sb->ctx->remote_ops->metrics(sb, out, err);
	if (!out || out->version < 1)
		return abox_error_setx(err, EINVAL, "metrics: abox_metrics needs its version set");
	int r;
	if (!sb->cg) {
		if ((r = backend_layout(sb->ctx, err)) < 0 ||
		    (r = cgroup_open_existing(&sb->ctx->cg, sb->id, &sb->cg, err)) < 0)
			return abox_error_prefix(err, "metrics");
	}
	struct cg_stats cs;
	if ((r = cgroup_stats(sb->cg, &cs, err)) < 0)
		return abox_error_prefix(err, "metrics");
	abox_metrics m = { .version = out->version, .timestamp_ms = clock_wall_ms() };
	struct proto_msg req;
	proto_msg_init(&req, MSG_REQ_METRICS, ++sb->next_req);
	if ((r = backend_call(sb, &req, "metrics", disk_fields, &m, err)) < 0)
		return r;
	m.cpu_used_usec = cs.cpu_usec;
	/* what a machine reports as used: its files' page cache does not
	 * count (the kernel drops it when memory runs short), its tmpfs
	 * files do */
	m.mem_used = cs.mem_current != UINT64_MAX && cs.mem_current > cs.mem_file ? cs.mem_current - cs.mem_file
										     : cs.mem_current;
	m.mem_limit = cs.mem_limit;
	m.pids = cs.pids_current;
	/* CPU share since the previous call on this handle, or on its first
	 * call since the sandbox was made (what a one-shot client such as
	 * the daemon's metrics route sees) */
	int64_t now = clock_mono_ms(), wall = clock_wall_ms();
	if (cs.cpu_usec != UINT64_MAX && sb->metrics_at_ms && now > sb->metrics_at_ms)
		m.cpu_pct = (double)(cs.cpu_usec - sb->metrics_cpu_usec) / 10.0 / (double)(now - sb->metrics_at_ms);
	else if (cs.cpu_usec != UINT64_MAX && !sb->metrics_at_ms && sb->created_wall_ms && wall > sb->created_wall_ms)
		m.cpu_pct = (double)cs.cpu_usec / 10.0 / (double)(wall - sb->created_wall_ms);
	sb->metrics_at_ms = now;
	sb->metrics_cpu_usec = cs.cpu_usec;
	*out = m;
	return 0;
}

#define GC_INTERVAL_S 10

int abox_gc_maybe(abox_ctx *ctx, unsigned *removed, abox_error *err)
{
	if (REMOTE_CTX(ctx))
		return removed ? (*removed = 0, 0) : 0;
	char stamp[4200];
	safe_snprintf(stamp, sizeof(stamp), "%s/.gc-stamp", ctx->runtime_dir);
	struct stat st;
	int64_t now_s = clock_wall_ms() / 1000;
	if (removed)
		*removed = 0;
	if (stat(stamp, &st) == 0 && now_s - st.st_mtime < GC_INTERVAL_S && st.st_mtime <= now_s)
		return 0;
	int fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		(void)futimens(fd, NULL);
		close(fd);
	}
	return abox_gc(ctx, removed, err);
}
