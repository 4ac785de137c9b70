/* Pause and resume of a long-lived sandbox: its cgroup's freezer, with
 * the timeout clock stopped while frozen. */
#include <errno.h>

#include "backend/backend.h"
#include "proto/messages.h"
#include "store/state.h"

int backend_not_paused(const abox_sandbox *sb, const char *what, abox_error *err)
{
	if (!sb->paused)
		return 0;
	return abox_error_setx(err, EAGAIN, "%s: sandbox %s is paused (`abox resume %s` continues it)", what, sb->id,
			       sb->id);
}

static int open_cgroups(abox_sandbox *sb, const char *what, abox_error *err)
{
	int r;
	if (sb->cg)
		return 0;
	if ((r = backend_layout(sb->ctx, err)) < 0 ||
	    (r = cgroup_open_existing(&sb->ctx->cg, sb->id, &sb->cg, err)) < 0)
		return abox_error_prefix(err, "%s", what);
	return 0;
}

/* Tells init its new deadline (0: none). While the tree is frozen init's
 * timer cannot fire, but on thaw an expired timer would kill the sandbox
 * at once, before any later request: so pause clears it first and resume
 * re-arms it with what was left. */
static int init_timeout(abox_sandbox *sb, uint64_t ms, const char *what, abox_error *err)
{
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_SET_TIMEOUT, ++sb->next_req);
	proto_put_u64(&m, F_TIMEOUT_MS, ms);
	return backend_call(sb, &m, what, NULL, NULL, err);
}

/* Locks and reads the record; fails unless the sandbox is alive. */
static int begin(abox_sandbox *sb, const char *what, struct sb_state *st, int *lock, abox_error *err)
{
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		return abox_error_setx(err, EINVAL, "%s: sandbox %s is ephemeral", what, sb->id);
	*lock = state_lock(sb->ctx->state_dir, sb->id, err);
	if (*lock < 0)
		return *lock;
	int r = state_read(sb->ctx->state_dir, sb->id, st, err);
	if (r < 0)
		return r;
	if (sb->dead || state_status(st) == SB_DEAD)
		return abox_error_setx(err, ESRCH, "%s: sandbox %s is not running (its init is gone)", what,
				       sb->id);
	return open_cgroups(sb, what, err);
}

static uint64_t left_ms(const struct sb_state *st, int64_t now)
{
	if (!st->deadline_ms)
		return 0;
	int64_t left = st->deadline_ms - now;
	return left > 0 ? (uint64_t)left : 1; /* due: init ends it at once */
}

int abox_sandbox_pause(abox_sandbox *sb, abox_error *err)
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
	int64_t now = backend_wall_ms();
	if (st.deadline_ms && (r = init_timeout(sb, 0, "pause", err)) < 0)
		goto out;
	if ((r = cgroup_freeze(sb->cg, true, err)) < 0) {
		abox_error_prefix(err, "pause");
		if (st.deadline_ms)
			(void)init_timeout(sb, left_ms(&st, backend_wall_ms()), "pause", NULL);
		goto out;
	}
	/* The record keeps the wall-clock deadline; what is left of it is
	 * deadline - paused_ms, handed back to init on resume. */
	st.paused_ms = now;
	if ((r = state_write(sb->ctx->state_dir, &st, err)) < 0) {
		/* unrecorded, a pause would leave a frozen sandbox that every
		 * tool reports as running: undo it */
		(void)cgroup_freeze(sb->cg, false, NULL);
		if (st.deadline_ms)
			(void)init_timeout(sb, left_ms(&st, now), "pause", NULL);
		goto out;
	}
	sb->paused = true;
	sb->deadline_ms = 0;
	backend_log(sb->ctx, ABOX_LOG_DEBUG, "pause %s", sb->id);
out:
	sb_state_free(&st);
	return r;
}

int abox_sandbox_resume(abox_sandbox *sb, abox_error *err)
{
	struct sb_state st = { 0 };
	_cleanup_close_ int lock = -EBADF;
	int r = begin(sb, "resume", &st, &lock, err);
	if (r < 0)
		goto out;
	if (!st.paused_ms) {
		sb->paused = false;
		r = abox_error_setx(err, EALREADY, "resume: sandbox %s is not paused", sb->id);
		goto out;
	}
	uint64_t left = left_ms(&st, st.paused_ms);
	if ((r = cgroup_freeze(sb->cg, false, err)) < 0) {
		abox_error_prefix(err, "resume");
		goto out;
	}
	sb->paused = false;
	if (left && (r = init_timeout(sb, left, "resume", err)) < 0)
		goto out; /* init is unreachable: the record stays "paused" for kill/gc */
	st.paused_ms = 0;
	st.deadline_ms = left ? backend_wall_ms() + (int64_t)left : 0;
	if ((r = state_write(sb->ctx->state_dir, &st, err)) < 0)
		goto out;
	sb->deadline_ms = left ? backend_now_ms() + (int64_t)left : 0;
	backend_log(sb->ctx, ABOX_LOG_DEBUG, "resume %s", sb->id);
out:
	sb_state_free(&st);
	return r;
}
