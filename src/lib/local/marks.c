/* local/marks.c — ABOX_DEBUG timings of a create (base/marks.h): a page
 * the sandbox child and its parent stamp, mapped only when the context
 * has a log, and the lines logged from it after the clone.
 * Runs in the creator. */
#include <sys/mman.h>

#include "local/local.h"

struct spawn_marks *local_marks_begin(abox_ctx *ctx)
{
	if (!backend_debug(ctx))
		return NULL;
	struct spawn_marks *m =
		mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

static void log_marks(abox_ctx *ctx, const char *id, const struct spawn_marks *m, uint64_t cloned)
{
	static const char *const names[MARK_MAX] = {
		[MARK_STARTED] = "clone3 (namespaces)",
		[MARK_PRIVATE] = "mounts made private",
		[MARK_LAYER] = "writable layer and overlays",
		[MARK_DEV] = "/dev",
		[MARK_PROC] = "/proc",
		[MARK_JOINED] = "network namespace and cgroups joined",
		[MARK_SYS] = "/sys",
		[MARK_PIVOT] = "pivot_root",
		[MARK_CONFINED] = "capabilities, seccomp",
		[MARK_P_NETNS] = "(parent) network namespace",
		[MARK_P_LO] = "(parent) lo up",
		[MARK_P_NET] = "(parent) its sysfs",
		[MARK_P_CGROUPS] = "(parent) v1 cgroups",
	};
	uint64_t prev = cloned;
	for (int k = 0; k < MARK_MAX; k++) {
		if (!m->t[k])
			continue;
		if (k == MARK_P_NETNS)
			prev = cloned; /* the parent's own line of steps */
		backend_log(ctx, ABOX_LOG_DEBUG, "create %s: %s%s done, %.1f us after clone (step %.1f us)",
			    id, k < MARK_P_NETNS ? "child: " : "", names[k], (double)(m->t[k] - cloned) / 1e3,
			    (double)(m->t[k] - prev) / 1e3);
		prev = m->t[k];
	}
}

void local_marks_end(abox_ctx *ctx, const char *id, struct spawn_marks *m, uint64_t cloned)
{
	if (!m)
		return;
	log_marks(ctx, id, m, cloned);
	munmap(m, sizeof(*m));
}
