/* Pause and resume of a long-lived sandbox: its cgroup's freezer, with
 * the timeout clock stopped while frozen. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "local/local.h"
#include "local/checkpoint/checkpoint.h"
#include "proto/messages.h"
#include "store/state.h"

int backend_not_paused(const abox_sandbox *sb, const char *what, abox_error *err)
{
	if (!sb->paused)
		return 0;
	return abox_error_setx(err, EAGAIN, "%s: sandbox %s is paused (`abox resume %s` continues it)", what, sb->id,
			       sb->id);
}

/* Tells init its new deadline (0: none). While the tree is frozen init's
 * timer cannot fire, but on thaw an expired timer would kill the sandbox
 * at once, before any later request: so pause clears it first and resume
 * re-arms it with what was left. */
int backend_init_clocks(abox_sandbox *sb, uint64_t ms, uint32_t clocks, const char *what, abox_error *err)
{
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_SET_TIMEOUT, ++sb->next_req);
	proto_put_u64(&m, F_TIMEOUT_MS, ms);
	if (clocks)
		proto_put_u64(&m, F_FLAGS, clocks);
	return backend_call(sb, &m, what, NULL, NULL, err);
}

int backend_init_timeout(abox_sandbox *sb, uint64_t ms, const char *what, abox_error *err)
{
	return backend_init_clocks(sb, ms, 0, what, err);
}

/* Pause and resume also stop and restart the clocks of the commands' own
 * timeouts (abox_proc_opts.timeout_ms): time spent frozen does not count,
 * as the sandbox's own deadline does not. Without a deadline to hand
 * over, a failure here costs only that, so it is not fatal. */
static int pause_clocks(abox_sandbox *sb, const struct sb_state *st, abox_error *err)
{
	int r = backend_init_clocks(sb, 0, CLOCKS_STOP, "pause", st->deadline_ms ? err : NULL);
	return st->deadline_ms ? r : 0;
}

static int resume_clocks(abox_sandbox *sb, uint64_t left, const char *what, abox_error *err)
{
	int r = backend_init_clocks(sb, left, CLOCKS_RUN, what, left ? err : NULL);
	return left ? r : 0;
}

/* Locks and reads the record; fails unless the sandbox is alive. */
static int begin(abox_sandbox *sb, const char *what, struct sb_state *st, int *lock, abox_error *err)
{
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		return abox_error_setx(err, EINVAL, "%s: sandbox %s is ephemeral", what, sb->id);
	int r = backend_lock_read(sb, lock, st, err);
	if (r < 0)
		return r;
	if (st->cold && st->paused_ms) {
		sb->cold = sb->paused = true;
		return abox_error_setx(err, EALREADY, "%s: sandbox %s is paused without memory", what, sb->id);
	}
	if (sb->dead || state_status(st) == SB_DEAD)
		return abox_error_setx(err, ESRCH, "%s: sandbox %s is not running (its init is gone)", what,
				       sb->id);
	r = backend_cgroups(sb, err);
	return r < 0 ? abox_error_prefix(err, "%s", what) : 0;
}

uint64_t backend_left_ms(const struct sb_state *st, int64_t now)
{
	if (!st->deadline_ms)
		return 0;
	int64_t left = st->deadline_ms - now;
	return left > 0 ? (uint64_t)left : 1; /* due: init ends it at once */
}

uint64_t backend_resume_left_ms(const struct sb_state *st)
{
	uint64_t left = backend_left_ms(st, st->paused_ms ? st->paused_ms : clock_wall_ms());
	return st->auto_pause && left && left < AUTO_RESUME_MIN_MS ? AUTO_RESUME_MIN_MS : left;
}

/* Warm pause and resume records are written without fsync: a frozen
 * sandbox's processes do not survive a power loss either, and the fsync
 * would be most of the latency. Cold pauses are durable. */
int backend_pause_warm(abox_sandbox *sb, bool pending, abox_error *err)
{
	struct sb_state st = { 0 };
	_cleanup_close_ int lock = -EBADF;
	int r = begin(sb, "pause", &st, &lock, err);
	if (r < 0)
		goto out;
	if (st.paused_ms) {
		sb->paused = true;
		r = abox_error_setx(err, EALREADY, "pause: sandbox %s is already paused", sb->id);
		goto out;
	}
	int64_t now = clock_wall_ms();
	uint64_t keep = st.auto_pause ? 0 : 1; /* whether init holds the deadline */
	/* marked before the clocks stop: a pause cut short anywhere from
	 * here is undone (clocks and all) by the next one to look */
	if ((r = backend_freeze_mark(sb, "pause", err)) < 0)
		goto out;
	if ((r = pause_clocks(sb, &st, err)) < 0)
		goto out;
	if ((r = cgroup_freeze(sb->cg, true, err)) < 0) {
		abox_error_prefix(err, "pause");
		(void)resume_clocks(sb, keep ? backend_left_ms(&st, clock_wall_ms()) : 0, "pause", NULL);
		goto out;
	}
	/* The record keeps the wall-clock deadline; what is left of it is
	 * deadline - paused_ms, handed back to init on resume. */
	st.paused_ms = now;
	st.auto_pending = pending;
	if ((r = state_write_ex(sb->ctx->state_dir, &st, false, err)) < 0) {
		/* unrecorded, a pause would leave a frozen sandbox that every
		 * tool reports as running: undo it */
		(void)cgroup_freeze(sb->cg, false, NULL);
		(void)resume_clocks(sb, keep ? backend_left_ms(&st, now) : 0, "pause", NULL);
		goto out;
	}
	sb->paused = true;
	sb->deadline_ms = 0;
	backend_log(sb->ctx, ABOX_LOG_DEBUG, "pause %s", sb->id);
out:
	backend_freeze_settled(sb);
	sb_state_free(&st);
	return r;
}

static int resume_cold(abox_sandbox *sb, abox_error *err);

/* A handle connected before another process paused the sandbox without
 * memory still thinks an init runs: the record says. */
static void refresh_cold(abox_sandbox *sb)
{
	struct sb_state st = { 0 };
	if (!sb->cold && !(sb->flags & ABOX_SANDBOX_EPHEMERAL) &&
	    state_read(sb->ctx->state_dir, sb->id, &st, NULL) == 0 && st.cold && st.paused_ms)
		sb->cold = sb->paused = true;
	sb_state_free(&st);
}

int local_resume(abox_sandbox *sb, abox_error *err)
{
	refresh_cold(sb);
	if (sb->cold) {
		/* paused to disk: its processes come back; else a cold start */
		int d = backend_resume_from_disk(sb, err);
		return d != 1 ? d : resume_cold(sb, err);
	}
	struct sb_state st = { 0 };
	_cleanup_close_ int lock = -EBADF;
	int r = begin(sb, "resume", &st, &lock, err);
	if (r == -EALREADY && sb->cold) {
		/* a pause to disk (or without memory) was under way while we
		 * waited for the lock, and has ended the tree this handle
		 * knew: resume what it left */
		sb_state_free(&st);
		if (lock >= 0)
			close(TAKE_FD(lock));
		if (err)
			*err = (abox_error)ABOX_ERROR_INIT;
		int d = backend_resume_from_disk(sb, err);
		return d != 1 ? d : resume_cold(sb, err);
	}
	if (r < 0)
		goto out;
	if (!st.paused_ms) {
		sb->paused = false;
		r = abox_error_setx(err, EALREADY, "resume: sandbox %s is not paused", sb->id);
		goto out;
	}
	uint64_t left = backend_resume_left_ms(&st);
	if ((r = backend_freeze(sb, false, "resume", err)) < 0) {
		abox_error_prefix(err, "resume");
		goto out;
	}
	sb->paused = false;
	/* init can only answer once thawed; if it cannot take its deadline
	 * back, freeze again so that the record ("paused") stays true */
	if ((r = resume_clocks(sb, st.auto_pause ? 0 : left, "resume", err)) < 0) {
		(void)cgroup_freeze(sb->cg, true, NULL);
		sb->paused = true;
		goto out;
	}
	st.paused_ms = 0;
	st.auto_pending = false;
	st.deadline_ms = left ? clock_wall_ms() + (int64_t)left : 0;
	if ((r = state_write_ex(sb->ctx->state_dir, &st, false, err)) < 0)
		goto out;
	sb->deadline_ms = left ? clock_mono_ms() + (int64_t)left : 0;
	backend_log(sb->ctx, ABOX_LOG_DEBUG, "resume %s", sb->id);
out:
	backend_freeze_settled(sb);
	sb_state_free(&st);
	return r;
}

/* Cold pause: a snapshot keeps the files, then the tree is killed; the
 * record is kept, marked cold, standing on the new snapshot. */
static int pause_cold(abox_sandbox *sb, abox_error *err)
{
	abox_ctx *ctx = sb->ctx;
	if (sb->cold)
		return abox_error_setx(err, EALREADY, "pause: sandbox %s is already paused without memory", sb->id);
	abox_snapshot_info snap = { .version = ABOX_SNAPSHOT_INFO_VERSION };
	/* left frozen after the copy: a write or a command accepted between
	 * the copy and the kill would be lost without a word */
	/* the snapshot's freeze mark stays until the kill: a cold pause cut
	 * short before its record is thawed, one cut short after it ends */
	int r = backend_snapshot(sb, NULL, SNAP_AUTO_REMOVE, true, &snap, err);
	if (r < 0)
		return abox_error_prefix(err, "pause");
	struct sb_state st = { 0 };
	{
		_cleanup_close_ int lock = backend_lock(ctx, sb->id, err);
		if (lock < 0 || (r = state_read(ctx->state_dir, sb->id, &st, err)) < 0) {
			if (!st.paused_ms && sb->cg)
				(void)cgroup_freeze(sb->cg, false, NULL); /* back as it was */
			backend_freeze_settled(sb);
			return lock < 0 ? lock : r;
		}
		/* recorded before the kill: from here on the record says
		 * "paused", so gc never takes the dead init for a dead
		 * sandbox */
		bool was_paused = st.paused_ms != 0; /* frozen before we came */
		size_t n = strv_length(st.snapshots);
		char **chain = calloc(n + 2, sizeof(char *));
		if (!chain || !(chain[0] = strdup(snap.id))) {
			free(chain);
			sb_state_free(&st);
			if (!was_paused && sb->cg)
				(void)cgroup_freeze(sb->cg, false, NULL);
			backend_freeze_settled(sb);
			return abox_error_set(err, ENOMEM, "pause");
		}
		for (size_t i = 0; i < n; i++)
			chain[i + 1] = TAKE_PTR(st.snapshots[i]);
		free(st.snapshots);
		st.snapshots = chain;
		if (!st.paused_ms)
			st.paused_ms = clock_wall_ms();
		st.cold = true;
		st.auto_pending = false;
		r = state_write(ctx->state_dir, &st, err);
		sb_state_free(&st);
		if (r < 0) {
			if (!was_paused && sb->cg)
				(void)cgroup_freeze(sb->cg, false, NULL);
			backend_freeze_settled(sb);
			return r;
		}
	}
	snap_settle(ctx->state_dir, snap.id);
	r = backend_kill(sb, true, err);
	backend_freeze_settled(sb);
	if (r < 0)
		return abox_error_prefix(err, "pause");
	sb->paused = sb->cold = true;
	backend_log(ctx, ABOX_LOG_DEBUG, "pause %s without memory: files in snapshot %s", sb->id, snap.id);
	return 0;
}

int local_pause(abox_sandbox *sb, uint32_t flags, abox_error *err)
{
	if (flags & ~(ABOX_PAUSE_NO_MEMORY | ABOX_PAUSE_TO_DISK) ||
	    (flags & (ABOX_PAUSE_NO_MEMORY | ABOX_PAUSE_TO_DISK)) == (ABOX_PAUSE_NO_MEMORY | ABOX_PAUSE_TO_DISK))
		return abox_error_setx(err, EINVAL, "pause: unknown flags 0x%x", flags);
	refresh_cold(sb);
	if ((flags & ABOX_PAUSE_TO_DISK) && sb->net_policy)
		return local_net_no_checkpoint("pause --to-disk", sb, err);
	if ((flags & ABOX_PAUSE_TO_DISK) && sb->id_base)
		return local_userns_no_checkpoint("pause --to-disk", sb, err);
	if (flags & ABOX_PAUSE_TO_DISK)
		return backend_pause_to_disk(sb, err);
	if (flags & ABOX_PAUSE_NO_MEMORY) {
		if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
			return abox_error_setx(err, EINVAL, "pause: sandbox %s is ephemeral", sb->id);
		return pause_cold(sb, err);
	}
	if (sb->cold)
		return abox_error_setx(err, EALREADY, "pause: sandbox %s is already paused (without memory)", sb->id);
	return backend_pause_warm(sb, false, err);
}

/* Cold resume: a new init on the kept files, same id and settings; the
 * handle then speaks to it. */
static int resume_cold(abox_sandbox *sb, abox_error *err)
{
	abox_ctx *ctx = sb->ctx;
	/* held through the create: a concurrent kill waits until the new
	 * init is recorded (then kills that), never tears down a half-made
	 * one; the create's own failure path re-enters it */
	_cleanup_close_ int lock = -EBADF;
	struct sb_state st = { 0 };
	int r = backend_lock_read(sb, &lock, &st, err);
	if (r < 0)
		return r;
	if (!st.cold || !st.paused_ms) {
		sb_state_free(&st);
		return abox_error_setx(err, EALREADY, "resume: sandbox %s is not paused any more", sb->id);
	}
	state_lock_hold(lock, ctx->state_dir, sb->id);
	abox_sandbox_opts o;
	char **meta = NULL;
	if ((r = backend_opts_from_record(&st, &o, &meta, err)) < 0)
		goto out;
	o.snapshot = st.snapshots ? st.snapshots[0] : NULL;
	if (st.deadline_ms)
		o.timeout_ms = (uint32_t)(backend_resume_left_ms(&st) > UINT32_MAX ? UINT32_MAX
										  : backend_resume_left_ms(&st));
	abox_sandbox *fresh = NULL;
	r = o.snapshot ? backend_create_net(ctx, &o, sb->id, st.net_policy, &fresh, err)
		       : abox_error_setx(err, EBADMSG, "resume: the record of %s names no files", sb->id);
	if (r >= 0) {
		/* the new record: keep when the sandbox was first created */
		struct sb_state now = { 0 };
		if (state_read(ctx->state_dir, sb->id, &now, NULL) == 0) {
			now.created_ms = st.created_ms;
			(void)state_write(ctx->state_dir, &now, NULL);
			sb_state_free(&now);
		}
		/* the caller's handle becomes the new sandbox's */
		abox_sandbox old = *sb;
		*sb = *fresh;
		*fresh = old;
		local_free(fresh);
	} else {
		/* a create that failed late removes "its" record, which is the
		 * paused sandbox's: put it back, the files are still there */
		(void)state_write(ctx->state_dir, &st, NULL);
	}
out:
	state_lock_hold(-1, NULL, NULL);
	strv_free(meta);
	sb_state_free(&st);
	if (r >= 0)
		backend_log(ctx, ABOX_LOG_DEBUG, "resume %s: cold start", sb->id);
	return r < 0 ? abox_error_prefix(err, "resume") : 0;
}
