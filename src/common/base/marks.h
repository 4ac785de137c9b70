/* base/marks — ABOX_DEBUG timings of a create: the sandbox child and its
 * parent stamp their steps on a page they share, and the parent logs them
 * after the fact (local/link.c). The child stamps between clone and
 * exec, so stamping is async-signal-safe. Here, below both spawn/ and
 * mount/ (which stamp), so neither includes the other's headers for it. */
#ifndef ABOX_BASE_MARKS_H
#define ABOX_BASE_MARKS_H

#include <stdint.h>
#include <time.h>

/* The steps timed, the child's in the order it takes them. */
enum spawn_mark {
	MARK_STARTED, /* the child's first step: clone3 made the namespaces */
	MARK_PRIVATE, /* the mount tree made private */
	MARK_LAYER, /* writable layer and the overlays */
	MARK_DEV,
	MARK_PROC,
	MARK_PIVOT, /* pivot_root and the old root detached */
	MARK_JOINED, /* the parent's network namespace and cgroups joined */
	MARK_SYS,
	MARK_CONFINED, /* capabilities, no_new_privs, seccomp */
	/* the parent's steps meanwhile */
	MARK_P_NETNS, /* network namespace made */
	MARK_P_LO, /* its lo up */
	MARK_P_NET, /* its sysfs made, back in our own namespace */
	MARK_P_CGROUPS, /* v1 cgroups made, limits set */
	MARK_MAX,
};

/* CLOCK_MONOTONIC ns per step, on a page the child shares with its
 * parent; NULL when nobody asked. */
struct spawn_marks {
	uint64_t t[MARK_MAX];
};

static inline void spawn_mark(struct spawn_marks *m, enum spawn_mark k)
{
	if (m) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts); /* the vDSO: async-signal-safe */
		m->t[k] = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
}

#endif
