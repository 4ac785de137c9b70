/* local/autopause.c — sandboxes that pause at their deadline (E2B's
 * autoPause), never killed there.
 *
 * Two steps, so the slow one never delays the fast one: at the deadline
 * the tree is frozen at once (a warm pause: the clocks stop, the record
 * says paused, marked pending); then, in the background, the pause it
 * asked for is made from that frozen state — to disk with the
 * checkpointer (memory kept), or without memory (files kept, processes
 * ended) when it asked for that. A memory pause that fails leaves it
 * frozen in place, with the reason logged: frozen is paused too.
 *
 * Not here: the pauses themselves (pause.c, checkpoint/to_disk.c); who calls the
 * steps and how often (aboxd, abox gc). Runs in the CLI/daemon. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "local/local.h"
#include "local/checkpoint/checkpoint.h"
#include "store/state.h"

struct due {
	char *id;
	int64_t deadline;
};

/* A record as the reaper last read it, known by its file's identity: every
 * write of a record is a new file (rename), so an unchanged inode, size
 * and mtime is an unchanged record, and a stat replaces a parse. */
struct reap_seen {
	char id[ABOX_ID_LEN + 1];
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	bool armed;       /* autoPause, running (not paused), with a deadline */
	bool pending;     /* frozen at its deadline, its pause still to come */
	int64_t deadline;
};

void backend_reap_seen_free(abox_ctx *ctx)
{
	free(ctx->reap_seen);
	ctx->reap_seen = NULL;
	ctx->reap_nseen = 0;
}

static struct reap_seen *seen_slot(abox_ctx *ctx, const char *id)
{
	for (size_t i = 0; i < ctx->reap_nseen; i++)
		if (!strcmp(ctx->reap_seen[i].id, id))
			return &ctx->reap_seen[i];
	struct reap_seen *v = realloc(ctx->reap_seen, (ctx->reap_nseen + 1) * sizeof(*v));
	if (!v)
		return NULL;
	ctx->reap_seen = v;
	struct reap_seen *s = &v[ctx->reap_nseen++];
	memset(s, 0, sizeof(*s));
	safe_snprintf(s->id, sizeof(s->id), "%s", id);
	return s;
}

/* Whether the record is armed, and its deadline (and whether a pause is
 * pending): from the cache when the file did not change, else read. -1
 * when there is no readable record. */
static int look(abox_ctx *ctx, const char *id, int64_t *deadline, bool *pending)
{
	bool ignored;
	if (!pending)
		pending = &ignored;
	char p[4200];
	safe_snprintf(p, sizeof(p), "%s/sandboxes/%s/state.json", ctx->state_dir, id);
	struct stat fs;
	if (stat(p, &fs) < 0)
		return -1;
	struct reap_seen *s = seen_slot(ctx, id);
	if (s && s->ino == fs.st_ino && s->dev == fs.st_dev && s->size == fs.st_size &&
	    s->mtime.tv_sec == fs.st_mtim.tv_sec && s->mtime.tv_nsec == fs.st_mtim.tv_nsec) {
		*deadline = s->deadline;
		*pending = s->pending;
		return s->armed;
	}
	struct sb_state st = { 0 };
	if (state_read(ctx->state_dir, id, &st, NULL) < 0)
		return -1;
	bool armed = st.auto_pause && !st.paused_ms && st.deadline_ms;
	*deadline = st.deadline_ms;
	*pending = st.auto_pending && st.paused_ms && !st.cold;
	sb_state_free(&st);
	if (s) {
		s->dev = fs.st_dev;
		s->ino = fs.st_ino;
		s->size = fs.st_size;
		s->mtime = fs.st_mtim;
		s->armed = armed;
		s->pending = *pending;
		s->deadline = *deadline;
	}
	return armed;
}

/* Entries of sandboxes that are gone: the cache stays as large as the
 * sandboxes are many. */
static void seen_prune(abox_ctx *ctx, char **ids)
{
	size_t k = 0;
	for (size_t i = 0; i < ctx->reap_nseen; i++) {
		bool live = false;
		for (size_t j = 0; ids[j] && !live; j++)
			live = !strcmp(ids[j], ctx->reap_seen[i].id);
		if (live)
			ctx->reap_seen[k++] = ctx->reap_seen[i];
	}
	ctx->reap_nseen = k;
}

static int by_deadline(const void *a, const void *b)
{
	const struct due *x = a, *y = b;
	return x->deadline < y->deadline ? -1 : x->deadline > y->deadline;
}

static void freeze_one(abox_ctx *ctx, const struct due *d, unsigned *n)
{
	abox_sandbox *sb = NULL;
	abox_error e = ABOX_ERROR_INIT;
	int64_t late = clock_wall_ms() - d->deadline;
	int r = local_connect(ctx, d->id, &sb, &e);
	if (r >= 0)
		r = backend_pause_warm(sb, true, &e);
	local_free(sb);
	if (r >= 0) {
		(*n)++;
		backend_log(ctx, ABOX_LOG_INFO, "sandbox %s frozen at its deadline (%lld ms after it; the freeze took %lld ms)",
			    d->id, (long long)late, (long long)(clock_wall_ms() - d->deadline - late));
	} else if (r != -EALREADY && r != -ESRCH) {
		/* the next tick tries again: it is never killed for it */
		backend_log(ctx, ABOX_LOG_WARNING, "sandbox %s: freezing it at its deadline failed: %s", d->id, e.msg);
	}
}

/* Freezes every autoPause sandbox whose deadline has come, the earliest
 * first; *next: the earliest deadline still ahead. */
static unsigned freeze_due(abox_ctx *ctx, char **ids, int64_t *next)
{
	unsigned n = 0;
	size_t k = 0, cap = strv_length(ids);
	struct due *v = calloc(cap + 1, sizeof(*v));
	if (!v)
		return 0;
	*next = 0;
	for (size_t i = 0; ids[i]; i++) {
		/* freezes whose makers died (a CLI or an aboxd SIGKILLed
		 * mid-snapshot): gc and every aboxd tick undo them */
		(void)backend_freeze_recover(ctx, ids[i]);
		int64_t deadline = 0, now = clock_wall_ms();
		if (look(ctx, ids[i], &deadline, NULL) != 1)
			continue;
		if (now < deadline) {
			if (!*next || deadline < *next)
				*next = deadline;
			continue;
		}
		/* due: now the full record, and whether its init lives */
		struct sb_state st = { 0 };
		if (state_read(ctx->state_dir, ids[i], &st, NULL) < 0)
			continue;
		if (st.auto_pause && !st.paused_ms && st.deadline_ms && now >= st.deadline_ms &&
		    state_status(&st) == SB_RUNNING)
			v[k++] = (struct due){ ids[i], st.deadline_ms };
		sb_state_free(&st);
	}
	qsort(v, k, sizeof(*v), by_deadline);
	for (size_t i = 0; i < k; i++)
		freeze_one(ctx, &v[i], &n);
	free(v);
	return n;
}

/* Takes the pending mark off under the lock: one caller makes the
 * pause, and one that dies midway leaves the sandbox frozen (paused),
 * not half done again and again. 1 when this caller got it. */
static int take_pending(abox_ctx *ctx, const char *id, bool *no_memory)
{
	_cleanup_close_ int lock = backend_lock(ctx, id, NULL);
	if (lock < 0)
		return lock;
	struct sb_state st = { 0 };
	if (state_read(ctx->state_dir, id, &st, NULL) < 0)
		return 0;
	int r = 0;
	if (st.auto_pending && st.paused_ms && !st.cold) {
		*no_memory = st.auto_no_memory;
		st.auto_pending = false;
		r = state_write_ex(ctx->state_dir, &st, false, NULL) < 0 ? 0 : 1;
	}
	sb_state_free(&st);
	return r;
}

/* Makes the pause each frozen-at-deadline sandbox asked for. */
static unsigned settle_pending(abox_ctx *ctx, char **ids)
{
	unsigned n = 0;
	_cleanup_free_ char *hook = NULL;
	bool looked = false;
	for (size_t i = 0; ids[i]; i++) {
		int64_t deadline;
		bool pending = false;
		if (look(ctx, ids[i], &deadline, &pending) < 0)
			continue;
		bool no_memory = false;
		if (!pending || take_pending(ctx, ids[i], &no_memory) != 1)
			continue;
		if (!looked) {
			hook = checkpointer_find(ctx);
			looked = true;
		}
		if (!no_memory && !hook)
			continue; /* frozen in place is the pause with memory here */
		abox_sandbox *sb = NULL;
		abox_error e = ABOX_ERROR_INIT;
		int r = local_connect(ctx, ids[i], &sb, &e);
		if (r >= 0)
			r = local_pause(sb, no_memory ? ABOX_PAUSE_NO_MEMORY : ABOX_PAUSE_TO_DISK, &e);
		local_free(sb);
		if (r >= 0) {
			n++;
			backend_log(ctx, ABOX_LOG_INFO, "sandbox %s paused at its deadline %s", ids[i],
				    no_memory ? "without memory (files kept)" : "to disk");
		} else if (r != -EALREADY) {
			backend_log(ctx, ABOX_LOG_WARNING,
				    "sandbox %s: pause %s at its deadline failed, it stays frozen in place: %s", ids[i],
				    no_memory ? "without memory" : "to disk", e.msg);
		}
	}
	return n;
}

int local_reap(abox_ctx *ctx, uint32_t steps, unsigned *paused, int64_t *next_deadline_ms, abox_error *err)
{
	if (steps & ~(ABOX_REAP_FREEZE | ABOX_REAP_MEMORY))
		return abox_error_setx(err, EINVAL, "reap: unknown steps 0x%x", steps);
	char **ids = NULL;
	int r = state_list(ctx->state_dir, &ids, err);
	if (r < 0)
		return r;
	unsigned nf = 0, ns = 0;
	int64_t next = 0;
	if (steps & ABOX_REAP_FREEZE)
		nf = freeze_due(ctx, ids, &next);
	if (next_deadline_ms)
		*next_deadline_ms = next;
	if (steps & ABOX_REAP_MEMORY)
		ns = settle_pending(ctx, ids);
	seen_prune(ctx, ids);
	/* a sandbox both steps paused counts once */
	unsigned n = steps & ABOX_REAP_FREEZE ? nf : ns;
	strv_free(ids);
	if (paused)
		*paused = n;
	return 0;
}

