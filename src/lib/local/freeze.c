/* local/freeze.c — every freeze recorded before it is made, and undone
 * when its maker died.
 *
 * A snapshot, a fork, a pause or a checkpoint freezes the sandbox's tree
 * for a moment; a maker SIGKILLed in that moment (the CLI, aboxd) used to
 * leave it frozen for good while its record said "running": commands
 * hung, and so did every later call that waited on its init. So a freeze
 * (and a thaw of a paused tree) is first written down in
 * <state>/sandboxes/<id>/freeze as "PID START WHAT" (the maker, its start
 * time: a reused pid is not taken for it), and removed once the record
 * and the tree agree again. Whoever takes the sandbox's lock next
 * (backend_lock), connects to it, or reaps (abox_reap: gc, aboxd every
 * second and at its start) and finds a marker whose maker is gone puts
 * the tree back as the record says: thawed and its clocks running, or
 * frozen when the record says paused, or ended when it says paused
 * without memory.
 *
 * The same kind of note (backend_pid_note) names a checkpoint's keeper.
 *
 * Not here: the freezer itself (cgroup/), the lock file (store/state.c).
 * Runs in the CLI/daemon. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "local/local.h"
#include "proto/messages.h"
#include "store/state.h"
#include "store/store.h"

#define MARKER "freeze"

static void marker_path(const abox_ctx *ctx, const char *id, char *buf, size_t n)
{
	safe_snprintf(buf, n, "%s/sandboxes/%s/" MARKER, ctx->state_dir, id);
}

static uint64_t self_start(void)
{
	static uint64_t start; /* the pid of a process never changes its start */
	static pid_t pid;
	if (pid != getpid()) {
		uint64_t s = 0;
		(void)proc_start_time(getpid(), &s);
		start = s;
		pid = getpid();
	}
	return start;
}

int backend_pid_note_live(const char *path, char *what, size_t n, pid_t *pid_out)
{
	_cleanup_free_ char *s = NULL;
	int r = read_file_at(AT_FDCWD, path, 512, &s, NULL);
	if (r == -ENOENT)
		return -ENOENT;
	if (what && n)
		what[0] = '\0';
	long pid = 0;
	unsigned long long start = 0;
	char w[64] = "";
	if (r < 0 || sscanf(s, "%ld %llu %63s", &pid, &start, w) < 2 || pid <= 0)
		return 0;
	if (what && n)
		safe_snprintf(what, n, "%s", w);
	if (pid_out)
		*pid_out = (pid_t)pid;
	uint64_t now;
	return proc_start_time((pid_t)pid, &now) == 0 && now == start;
}

int backend_pid_note(const char *path, pid_t pid, const char *what)
{
	uint64_t start = 0;
	if (pid == getpid())
		start = self_start();
	else if (proc_start_time(pid, &start) < 0)
		return -ESRCH;
	char text[128], tmp[4300];
	int len =
		safe_snprintf(text, sizeof(text), "%d %llu %s\n", (int)pid, (unsigned long long)start, what);
	safe_snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	/* no fsync: after a power loss no process it names runs */
	return write_file_replace(path, tmp, text, (size_t)len, 0600, false);
}

/* Written before the freeze, and kept by a nested one (a checkpoint's
 * snapshot): the first maker's words stay. No fsync: after a power loss
 * nothing is frozen any more. */
int backend_freeze_mark(abox_sandbox *sb, const char *what, abox_error *err)
{
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		return 0;
	char p[4200];
	marker_path(sb->ctx, sb->id, p, sizeof(p));
	pid_t holder = 0;
	if (backend_pid_note_live(p, NULL, 0, &holder) == 1 && holder == getpid())
		return 0;
	int r = backend_pid_note(p, getpid(), what);
	return r < 0 ? abox_error_set(err, -r, "%s: record the freeze of %s", what, sb->id) : 0;
}

int backend_freeze(abox_sandbox *sb, bool frozen, const char *what, abox_error *err)
{
	int r = backend_freeze_mark(sb, what, err);
	return r < 0 ? r : cgroup_freeze(sb->cg, frozen, err);
}

void backend_freeze_settled(abox_sandbox *sb)
{
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		return;
	char p[4200];
	marker_path(sb->ctx, sb->id, p, sizeof(p));
	pid_t holder = 0;
	/* only our own: another process's marker is its business */
	if (backend_pid_note_live(p, NULL, 0, &holder) == 1 && holder == getpid())
		(void)unlink(p);
}

/* A paused-without-memory record whose old tree still runs: the maker
 * died between the record and the kill. The kill is finished. */
static void finish_cold(abox_ctx *ctx, const struct sb_state *st, struct cg_sandbox *cg)
{
	if (cg) {
		(void)cgroup_kill(cg, NULL);
		(void)cgroup_destroy(cg, NULL);
	}
	char rd[4200];
	safe_snprintf(rd, sizeof(rd), "%s/%s", ctx->runtime_dir, st->id);
	(void)store_rundir_remove(rd, NULL);
}

/* The clocks a pause stopped run again (the deadline too, unless the
 * sandbox's deadline pauses it): init re-reads them from this request. */
static int restart_clocks(abox_ctx *ctx, const struct sb_state *st, abox_error *err)
{
	abox_sandbox *sb = NULL;
	/* under the sandbox's lock: a checkpoint's keeper that needs it is
	 * not waited for */
	int r = local_connect_now(ctx, st->id, &sb, err);
	if (r < 0)
		return r;
	uint64_t left = st->auto_pause ? 0 : backend_left_ms(st, clock_wall_ms());
	r = backend_init_clocks(sb, left, CLOCKS_RUN, "thaw", err);
	local_free(sb);
	return r;
}

/* With the sandbox's lock held. force: put the tree back as the record
 * says even without a dead maker's mark (a checkpoint's keeper, whose
 * maker's mark someone else may have taken off before init could be
 * reached). */
static int recover_locked(abox_ctx *ctx, const char *id, bool force)
{
	char p[4200], what[64] = "checkpoint";
	marker_path(ctx, id, p, sizeof(p));
	pid_t holder = 0;
	int live = backend_pid_note_live(p, what, sizeof(what), &holder);
	if (live == 1 || (live < 0 && !force))
		return 0; /* its maker is at work, or there is none */
	struct sb_state st = { 0 };
	if (state_read(ctx->state_dir, id, &st, NULL) < 0) {
		(void)unlink(p);
		return 0;
	}
	struct cg_sandbox *cg = NULL;
	abox_error e = ABOX_ERROR_INIT;
	int r = backend_layout(ctx, &e);
	bool have_cg = r >= 0 && cgroup_open_existing(&ctx->cg, id, &cg, &e) >= 0;
	bool init_alive = state_status(&st) != SB_DEAD;
	const char *done = "";
	bool thawed = false;
	if (st.cold && st.paused_ms) {
		uint64_t start;
		if (st.pid > 0 && proc_start_time(st.pid, &start) == 0 && start == st.pid_start) {
			finish_cold(ctx, &st, have_cg ? cg : NULL);
			cg = NULL; /* destroyed */
			done = "its old tree ended (paused without memory)";
		} else {
			done = "nothing to undo (paused without memory)";
		}
	} else if (!init_alive || !have_cg) {
		done = "nothing to undo (its init is gone)";
	} else if (st.paused_ms) {
		r = cgroup_freeze(cg, true, &e);
		done = r < 0 ? "re-freezing it failed" : "frozen again (it is paused)";
	} else {
		r = cgroup_freeze(cg, false, &e);
		done = r < 0 ? "thawing it failed" : "thawed";
		thawed = r >= 0;
	}
	if (cg)
		cgroup_sandbox_free(cg);
	/* gone before the clocks' request: the connect it makes must not
	 * come back here */
	if (r >= 0)
		(void)unlink(p);
	abox_error ce = ABOX_ERROR_INIT;
	if (thawed && restart_clocks(ctx, &st, &ce) < 0)
		backend_log(ctx, ABOX_LOG_WARNING,
			    "sandbox %s: thawed after the %s of pid %d ended, but its init does not answer: %s", id,
			    what, (int)holder, ce.msg);
	backend_log(ctx, r < 0 ? ABOX_LOG_WARNING : ABOX_LOG_INFO,
		    "sandbox %s: the %s of pid %d ended midway: %s%s%s", id, what[0] ? what : "freeze", (int)holder,
		    done, r < 0 ? ": " : "", r < 0 ? e.msg : "");
	sb_state_free(&st);
	return r < 0 ? r : 1;
}

int backend_lock(abox_ctx *ctx, const char *id, abox_error *err)
{
	int fd = state_lock(ctx->state_dir, id, err);
	if (fd >= 0)
		(void)recover_locked(ctx, id, false);
	return fd;
}

int backend_lock_read(abox_sandbox *sb, int *lock, struct sb_state *st, abox_error *err)
{
	*lock = backend_lock(sb->ctx, sb->id, err);
	if (*lock < 0)
		return *lock;
	return state_read(sb->ctx->state_dir, sb->id, st, err);
}

int backend_freeze_recover(abox_ctx *ctx, const char *id)
{
	char p[4200];
	marker_path(ctx, id, p, sizeof(p));
	if (backend_pid_note_live(p, NULL, 0, NULL) != 0)
		return 0; /* the common case: one failed stat-like read */
	abox_error e = ABOX_ERROR_INIT;
	_cleanup_close_ int fd = state_lock(ctx->state_dir, id, &e);
	if (fd < 0) {
		backend_log(ctx, ABOX_LOG_WARNING, "sandbox %s: cannot undo a dead maker's freeze: %s", id, e.msg);
		return fd;
	}
	return recover_locked(ctx, id, false);
}

int backend_freeze_recover_now(abox_ctx *ctx, const char *id)
{
	abox_error e = ABOX_ERROR_INIT;
	_cleanup_close_ int fd = state_lock(ctx->state_dir, id, &e);
	return fd < 0 ? fd : recover_locked(ctx, id, true);
}
