/* local/checkpoint/to_disk.c — pause to disk (E2B's pause: memory written out
 * and freed) and resume from it, with the checkpoint hook (checkpoint/hook.c)
 * in a checkpoint session (session.c).
 *
 * Pause: init lets go of its host fds, the tree is frozen, its files are
 * kept as a snapshot layer (as a pause without memory does), the hook
 * dumps the processes into <state>/sandboxes/<id>/checkpoint (leaving
 * them frozen), the record says cold + checkpoint, and only then is the
 * tree ended: gc and kill treat it like any paused sandbox, and no
 * memory, cgroup or mount is left. Killed at any point, the sandbox is
 * either running as before (the keeper re-arms it) or paused to disk. Resume
 * restores the processes on those files; they continue where they were,
 * with what was left of the timeout. Without a working checkpointer both
 * fail with a clear error and the sandbox stays as it was. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "local/checkpoint/checkpoint.h"
#include "layer/snapshot.h"

static int no_checkpointer(const char *what, const char *id, abox_error *err)
{
	return abox_error_setx(err, EOPNOTSUPP,
			       "%s %s: no checkpointer on this machine (scripts/criu-setup.sh installs CRIU; "
			       "`abox doctor` tells)", what, id);
}

static void images_dir(const abox_sandbox *sb, char *buf, size_t n)
{
	safe_snprintf(buf, n, "%s/sandboxes/%s/checkpoint", sb->ctx->state_dir, sb->id);
}

/* Writes st as paused to disk: standing on the layer snap_id, memory in
 * dir, the restored init to be re-armed with token. st is left as it was. */
static int record_paused(abox_ctx *ctx, const struct sb_state *st, const char *snap_id, const char *dir,
			 const char *token, int64_t now, abox_error *err)
{
	size_t n = strv_length(st->snapshots);
	char **chain = calloc(n + 2, sizeof(char *));
	char *images = strdup(dir);
	if (!chain || !images || !(chain[0] = strdup(snap_id))) {
		free(chain);
		free(images);
		return abox_error_set(err, ENOMEM, "pause");
	}
	for (size_t i = 0; i < n; i++)
		chain[i + 1] = st->snapshots[i];
	struct sb_state rec = *st;
	rec.snapshots = chain;
	rec.paused_ms = st->paused_ms ? st->paused_ms : now;
	rec.cold = true;
	rec.auto_pending = false;
	rec.checkpoint = images;
	rec.checkpoint_token = (char *)token;
	int r = state_write(ctx->state_dir, &rec, err);
	free(chain[0]);
	free(chain);
	free(images);
	return r;
}

int backend_pause_to_disk(abox_sandbox *sb, abox_error *err)
{
	abox_ctx *ctx = sb->ctx;
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		return abox_error_setx(err, EINVAL, "pause: sandbox %s is ephemeral", sb->id);
	if (sb->cold)
		return abox_error_setx(err, EALREADY, "pause: sandbox %s is already paused to disk or without memory",
				       sb->id);
	_cleanup_free_ char *hook = checkpointer_find(ctx);
	if (!hook)
		return no_checkpointer("pause --to-disk", sb->id, err);
	struct checkpoint_session cs;
	int r = checkpoint_session_open(&cs, sb, "pause", err);
	if (r < 0)
		return r;
	if (cs.st.cold) {
		sb->cold = sb->paused = true;
		r = abox_error_setx(err, EALREADY, "pause: sandbox %s is already paused to disk or without memory",
				    sb->id);
		goto out;
	}
	if (sb->dead || state_status(&cs.st) == SB_DEAD) {
		r = abox_error_setx(err, ESRCH, "pause: sandbox %s is not running (its init is gone)", sb->id);
		goto out;
	}
	/* the timeout clock stops while on disk, and starts again on resume */
	abox_snapshot_info snap = { .version = ABOX_SNAPSHOT_INFO_VERSION };
	if ((r = checkpoint_session_start(&cs, NULL, SNAP_AUTO_REMOVE, &snap, err)) < 0)
		goto restore;
	char dir[4200];
	images_dir(sb, dir, sizeof(dir));
	(void)rm_rf_at(AT_FDCWD, dir, 0);
	backend_log(ctx, ABOX_LOG_DEBUG, "pause %s: files kept, dumping", sb->id);
	/* the dump leaves the tree frozen: it ends only once the record says
	 * where its memory is (killed in between, the keeper re-arms it, or
	 * ends it when the record was written) */
	if ((r = checkpoint_dump(sb, hook, dir, &cs.tmpl, cs.token, DUMP_FROZEN, err)) < 0) {
		(void)rm_rf_at(AT_FDCWD, dir, 0);
		/* the files' layer was only for this pause */
		(void)snap_remove(ctx->state_dir, snap.id, NULL);
		goto restore;
	}

	/* on disk for real before the record points at it: after a power
	 * loss, half-written images could restore zeros where memory was */
	backend_log(ctx, ABOX_LOG_DEBUG, "pause %s: dumped, flushing", sb->id);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || syncfs(dfd) < 0)
		backend_log(ctx, ABOX_LOG_WARNING, "pause %s: flushing the checkpoint in %s failed: %s", sb->id, dir,
			    abox_strerror(errno));
	if (dfd >= 0)
		close(dfd);
	/* the record now stands on the new layer and the images */
	if ((r = record_paused(ctx, &cs.st, snap.id, dir, cs.token, cs.now, err)) < 0) {
		/* not recorded: the tree goes on as before */
		checkpoint_abort(sb, cs.token);
		(void)rm_rf_at(AT_FDCWD, dir, 0);
		(void)snap_remove(ctx->state_dir, snap.id, NULL);
		goto restore;
	}
	snap_settle(ctx->state_dir, snap.id);
	state_lock_hold(cs.lock, ctx->state_dir, sb->id);
	r = backend_kill(sb, true, err); /* the tree, its cgroups, its runtime folder */
	state_lock_hold(-1, NULL, NULL);
	if (r < 0)
		goto out;
	sb->paused = sb->cold = true;
	backend_log(ctx, ABOX_LOG_DEBUG, "pause %s to disk: memory in %s, files in snapshot %s", sb->id, dir,
		    snap.id);
	goto out;

restore:
	checkpoint_session_restore(&cs);
out:
	checkpoint_session_close(&cs);
	return r < 0 ? abox_error_prefix(err, "pause") : 0;
}

/* The tree of a pause to disk whose holder died between writing the
 * record and ending the tree (DUMP_FROZEN), when its keeper died too:
 * frozen and deaf, holding the cgroups the restore is about to make
 * again. Ended first. Under the sandbox's lock. */
static void end_leftover(abox_ctx *ctx, const struct sb_state *st)
{
	if (st->pid <= 0)
		return;
	int pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
	uint64_t start;
	if (pidfd < 0)
		return;
	abox_sandbox *old = NULL;
	if (proc_start_time(st->pid, &start) < 0 || start != st->pid_start ||
	    local_connect(ctx, st->id, &old, NULL) < 0) {
		close(pidfd);
		return;
	}
	backend_log(ctx, ABOX_LOG_WARNING, "resume %s: ending the tree its pause to disk left (pid %d)", st->id,
		    (int)st->pid);
	old->pid = st->pid;
	old->pidfd = pidfd;
	old->cold = false;
	(void)backend_kill(old, true, NULL);
	local_free(old);
}

int backend_resume_from_disk(abox_sandbox *sb, abox_error *err)
{
	abox_ctx *ctx = sb->ctx;
	_cleanup_close_ int lock = -EBADF;
	struct sb_state st = { 0 };
	int r = backend_lock_read(sb, &lock, &st, err);
	if (r < 0)
		return r;
	if (!st.cold || !st.paused_ms || !st.checkpoint) {
		sb_state_free(&st);
		return 1; /* not paused to disk (any more): the caller decides */
	}
	_cleanup_free_ char *hook = checkpointer_find(ctx);
	if (!hook) {
		sb_state_free(&st);
		return no_checkpointer("resume", sb->id, err);
	}
	uint64_t left = backend_resume_left_ms(&st);
	struct restored rs = { 0 };
	state_lock_hold(lock, ctx->state_dir, sb->id);
	end_leftover(ctx, &st);
	r = checkpoint_restore(ctx, &st, hook, st.checkpoint, st.checkpoint, sb->id,
			       st.checkpoint_token ? st.checkpoint_token : "", &rs, err);
	if (r < 0)
		goto out;
	/* running again: the record says so before anything else can fail */
	char *images = TAKE_PTR(st.checkpoint);
	free(st.checkpoint_token);
	st.checkpoint_token = NULL;
	st.pid = rs.pid;
	st.pid_start = rs.pid_start;
	free(st.cgroups);
	st.cgroups = TAKE_PTR(rs.cgroups);
	st.paused_ms = 0;
	st.auto_pending = false;
	st.cold = false;
	st.deadline_ms = left ? clock_wall_ms() + (int64_t)left : 0;
	r = state_write(ctx->state_dir, &st, err);
	(void)rm_rf_at(AT_FDCWD, images, 0);
	free(images);
	if (r < 0)
		goto out;
	abox_sandbox *fresh = NULL;
	if ((r = local_connect(ctx, sb->id, &fresh, err)) < 0)
		goto out;
	if (left && !st.auto_pause && (r = backend_init_timeout(fresh, left, "resume", err)) < 0) {
		local_free(fresh);
		goto out;
	}
	abox_sandbox old = *sb;
	*sb = *fresh;
	*fresh = old;
	local_free(fresh);
	backend_log(ctx, ABOX_LOG_DEBUG, "resume %s from disk: init is pid %d", sb->id, (int)rs.pid);
out:
	state_lock_hold(-1, NULL, NULL);
	free(rs.cgroups);
	sb_state_free(&st);
	return r < 0 ? abox_error_prefix(err, "resume") : 0;
}
