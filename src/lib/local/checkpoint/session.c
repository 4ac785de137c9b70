/* local/checkpoint/session.c — a checkpoint of a running sandbox from its
 * start to its end, as a pause to disk (to_disk.c) and a snapshot with
 * memory (memory_snapshot.c) both take it: the sandbox's lock and record,
 * a paused tree thawed for the moment init must answer, init's timer
 * stopped, init let go and the tree frozen with its files kept as a
 * snapshot; afterwards the tree as it was found where it runs on, and
 * whatever the checkpoint held let go of.
 * Not here: the dump and what becomes of it (theirs), the tree's side of
 * a checkpoint (hook.c). Runs in the CLI/daemon. */
#include <unistd.h>

#include "local/checkpoint/checkpoint.h"
#include "proto/messages.h"

int checkpoint_session_open(struct checkpoint_session *s, abox_sandbox *sb, const char *what, abox_error *err)
{
	*s = (struct checkpoint_session){ .sb = sb, .what = what, .lock = -EBADF, .tmpl = { .lock_fd = -1 } };
	int r = backend_lock_read(sb, &s->lock, &s->st, err);
	if (r < 0) {
		if (s->lock >= 0)
			close(s->lock);
		s->lock = -EBADF;
		sb_state_free(&s->st);
	}
	return r;
}

int checkpoint_session_start(struct checkpoint_session *s, const char *name, uint32_t how,
			     abox_snapshot_info *snap, abox_error *err)
{
	abox_sandbox *sb = s->sb;
	abox_ctx *ctx = sb->ctx;
	int r;
	if ((r = backend_cgroups(sb, err)) < 0)
		return r;
	if ((r = template_open_version(s->st.template_name, s->st.template_root, &s->tmpl, err)) < 0)
		return r;
	s->was_paused = s->st.paused_ms != 0;
	s->now = clock_wall_ms();
	s->left = backend_left_ms(&s->st, s->was_paused ? s->st.paused_ms : s->now);
	/* a warm-paused init must answer: thawed for that moment */
	if (s->was_paused && (r = backend_freeze(sb, false, s->what, err)) < 0)
		return r;
	s->thawed = s->was_paused;
	sb->paused = false;
	/* a checkpoint carries no deadline: a copy gets its own, and a tree
	 * paused to disk must not time out as it comes back, before its
	 * deadline is set again. A clear that failed may still have reached
	 * init: either way the timer is put back if the checkpoint fails. */
	if (!s->was_paused && s->st.deadline_ms) {
		s->timer_cleared = true;
		if ((r = backend_init_timeout(sb, 0, s->what, err)) < 0)
			return r;
	}
	state_lock_hold(s->lock, ctx->state_dir, sb->id);
	if ((r = checkpoint_begin(sb, &s->token, err)) < 0) {
		state_lock_hold(-1, NULL, NULL);
		return r;
	}
	backend_log(ctx, ABOX_LOG_DEBUG, "%s %s: init let go, tree frozen", s->what, sb->id);
	r = backend_snapshot(sb, name, how, true, snap, err);
	state_lock_hold(-1, NULL, NULL);
	if (r < 0)
		checkpoint_abort(sb, s->token);
	return r;
}

void checkpoint_session_restore(struct checkpoint_session *s)
{
	abox_sandbox *sb = s->sb;
	if (s->timer_cleared && sb->conn >= 0)
		(void)backend_init_timeout(sb, s->left, s->what, NULL);
	if (s->thawed) {
		/* the re-arm after a dump ran the commands' clocks again */
		if (sb->conn >= 0)
			(void)backend_init_clocks(sb, 0, CLOCKS_STOP, s->what, NULL);
		(void)cgroup_freeze(sb->cg, true, NULL);
		sb->paused = true;
	}
}

void checkpoint_session_close(struct checkpoint_session *s)
{
	abox_sandbox *sb = s->sb;
	checkpoint_end(sb);
	backend_freeze_settled(sb);
	if (sb->has_layer_fd) {
		close(sb->layer_fd);
		sb->has_layer_fd = false;
	}
	template_info_free(&s->tmpl);
	sb_state_free(&s->st);
	free(s->token);
	s->token = NULL;
	if (s->lock >= 0)
		close(s->lock);
	s->lock = -EBADF;
}
