/* cgroup — per-sandbox control groups on v2, v1 or a hybrid of both,
 * decided per controller.
 *
 * What it does: finds the hierarchies and the cgroup the calling process
 * runs in (layout.c), creates one cgroup per sandbox *under that cgroup* in
 * every hierarchy it needs, writes limits, moves a process in, reports OOM
 * kills, freezes/thaws, kills every task, and removes what it created.
 * What it does not do: decide the limits (local/link.c) or account disk
 * (the upper layer's filesystem does).
 * Runs in the CLI/daemon process (never between clone and exec).
 * Kernel: cgroup v1 memory/pids/cpu/freezer, cgroup v2 with cgroup.freeze
 * (5.2+) and cgroup.kill (5.14+) when present. All roots are parameters so
 * tests can point the module at fake trees. */
#ifndef ABOX_CGROUP_H
#define ABOX_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/base.h"

enum cg_controller {
	CG_MEMORY = 0,
	CG_PIDS,
	CG_CPU,
	CG_FREEZER, /* v2: cgroup.freeze (core file, no controller needed) */
	CG_CONTROLLER_MAX
};

enum cg_version { CG_NONE = 0, CG_V1 = 1, CG_V2 = 2 };

struct cg_layout {
	/* v2 (unified) hierarchy: mount point and the caller's own path in it
	 * ("/" or "/user.slice/x.scope"), NULL when there is no v2 mount. */
	char *v2_mount;
	char *v2_self;
	bool v2_kill; /* cgroup.kill exists */
	/* v1 hierarchies per controller, NULL when not mounted. */
	char *v1_mount[CG_CONTROLLER_MAX];
	char *v1_self[CG_CONTROLLER_MAX];
	/* The decision: which hierarchy serves each controller. */
	enum cg_version use[CG_CONTROLLER_MAX];
};

/* Pure parser: builds a layout from the text of /proc/self/mountinfo and
 * /proc/self/cgroup, then checks the v2 side on the filesystem through
 * fs_prefix (prepended to every mount point when reading files; "" for the
 * real system, a temp dir for fake trees): a controller is v2 when the
 * caller's v2 cgroup lists it in cgroup.controllers, else v1 when mounted,
 * else CG_NONE. The freezer is v2 when the caller's v2 cgroup (or, at the
 * root, the root) offers cgroup.freeze semantics. */
int cgroup_layout_parse(const char *mountinfo, const char *self_cgroup, const char *fs_prefix,
			struct cg_layout *out, abox_error *err);
/* Reads /proc/self/mountinfo and /proc/self/cgroup and calls the parser. */
int cgroup_layout_detect(struct cg_layout *out, abox_error *err);
/* The same as if the caller ran in parent (a cgroup path: absolute from
 * each hierarchy's root, or relative to the caller's own cgroup; no "."
 * or ".." parts), which is made in every hierarchy abox uses, with v2's
 * controllers handed down along it (never at a root). */
int cgroup_layout_detect_at(const char *parent, struct cg_layout *out, abox_error *err);
/* Removes the layout's own cgroup in every hierarchy when it is empty
 * (the parent cgroup_layout_detect_at made; never a root). */
void cgroup_layout_remove_self(const struct cg_layout *l);
void cgroup_layout_free(struct cg_layout *l);
const char *cgroup_controller_name(enum cg_controller c);

struct cg_limits {
	uint64_t memory_bytes; /* 0 = no limit */
	uint64_t pids;         /* 0 = no limit */
	uint32_t cpu_millis;   /* 1000 = one CPU; 0 = no limit */
	/* CPU weight against other cgroups as OCI's cpu.shares (2..262144,
	 * 1024 the kernel's default; v2: turned into cpu.weight); 0 = the
	 * kernel's default */
	uint32_t cpu_shares;
	/* the CFS period and quota exactly (an OCI config's cpu.period and
	 * quota, for cpu_millis set from them); 0: a quota of cpu_millis over
	 * the period in force (a new cgroup's: 100 ms) */
	uint32_t cpu_period_us;
	uint64_t cpu_quota_us;
};

struct cg_sandbox; /* opaque: one sandbox's cgroups */

/* Creates "<self>/abox-<name>" in every hierarchy that serves a controller
 * (and in the v2 hierarchy whenever one is mounted, for freeze and kill)
 * and writes the limits. On pure v2 it enables the needed controllers in
 * the caller's cgroup.subtree_control. A failure removes whatever was made.
 * A limit whose controller is CG_NONE is an error naming the controller. */
int cgroup_create(const struct cg_layout *l, const char *name, const struct cg_limits *lim,
		  struct cg_sandbox **out, abox_error *err);
/* The directories cgroup_create would make for name, one absolute path per
 * line: recorded before they exist, so that a crash at any point leaves a
 * list gc can clean up from. */
int cgroup_planned_dirs(const struct cg_layout *l, const char *name, char *buf, size_t len,
			abox_error *err);
/* cgroup_create in two halves, so the expensive half can run while the
 * sandbox child builds its root filesystem: _begin checks the request and
 * makes only the v2 directory (needed before clone3 for
 * CLONE_INTO_CGROUP); _finish makes the v1 directories and writes every
 * limit, the CPU limit only when !defer_cpu; cgroup_create_cpu then writes
 * that one (a CFS quota walks every CPU cgroup on the host: ≈ 0.3 ms with
 * 1,000 sandboxes, which the caller can spend while the child works). On
 * failure of any, cgroup_destroy removes what exists. */
int cgroup_create_begin(const struct cg_layout *l, const char *name, const struct cg_limits *lim,
			struct cg_sandbox **out, abox_error *err);
int cgroup_create_finish(const struct cg_layout *l, struct cg_sandbox *cg, bool defer_cpu, abox_error *err);
int cgroup_create_cpu(struct cg_sandbox *cg, abox_error *err);
/* Opens the directories a sandbox of that name has (made by another
 * process), so that it can be killed and removed. Missing directories are
 * skipped (a sandbox with none yields an empty handle). */
int cgroup_open_existing(const struct cg_layout *l, const char *name, struct cg_sandbox **out,
			 abox_error *err);
/* Writes val to file (a plain name, no '/') in the sandbox's v2 directory:
 * an OCI config's linux.resources.unified. -ENOENT (said in err) when the
 * sandbox has no v2 directory or the file is not there (its controller is
 * on v1, or not enabled for abox's cgroups). */
int cgroup_unified_write(struct cg_sandbox *cg, const char *file, const char *val, abox_error *err);
/* The sandbox's limits (its whole bound: the commands' and init's
 * headroom) written on the layout's own cgroup too, the parent
 * cgroup_layout_detect_at made: an OCI container's cgroupsPath, which a
 * container engine reads as the container's cgroup (runc's limits are
 * there). Never at a hierarchy's root. */
int cgroup_parent_limits(const struct cg_layout *l, const struct cg_sandbox *cg, abox_error *err);
/* The limits set in lim (as given: no headroom added) on the layout's own
 * cgroup alone. */
int cgroup_parent_write(const struct cg_layout *l, const struct cg_limits *lim, abox_error *err);
/* fd of the sandbox's v2 directory for clone3(CLONE_INTO_CGROUP), or -1. */
int cgroup_v2_fd(const struct cg_sandbox *cg);
/* An OCI container's cpuset (cpuset.c): the v1 folder sandbox name's
 * goes in, below parent (a cgroupsPath, relative to the caller's cpuset
 * cgroup unless absolute; NULL: the caller's), into dir; "" where v2
 * serves the sandbox (its own folder); -EOPNOTSUPP without cpusets. */
int cgroup_cpuset_plan(const struct cg_layout *l, const char *parent, const char *name, char *dir, size_t n,
		       abox_error *err);
/* The folder made (each new level given its parent's CPUs and nodes),
 * mems then cpus written (NULL or "": the parent's), every process of cg
 * moved in; parent_too: the sets written on the parent's folder first
 * (the container's own cgroupsPath, ABOX_CGROUP_PARENT_OWN). */
int cgroup_cpuset_apply(struct cg_sandbox *cg, const char *dir, bool parent_too, const char *cpus,
			const char *mems, abox_error *err);
/* The sets changed on a running sandbox's cpuset folder (made as
 * cgroup_cpuset_apply does when missing), each kept within its parent's
 * on v1 whatever the order of the change. */
int cgroup_cpuset_update(struct cg_sandbox *cg, const char *dir, bool parent_too, const char *cpus,
			 const char *mems, abox_error *err);
/* The parent's own cpuset folder removed when empty (v1; never a root). */
void cgroup_cpuset_remove_parent(const char *parent);
/* Moves pid into every v1 cgroup of the sandbox (and the v2 one too when
 * include_v2 is true: use that when clone3 could not place it). */
int cgroup_attach(struct cg_sandbox *cg, pid_t pid, bool include_v2, abox_error *err);
/* Moves pid into the sandbox's v2 cgroup only (when clone3 could not). */
int cgroup_attach_v2(struct cg_sandbox *cg, pid_t pid, abox_error *err);
/* Opens the v1 "tasks" file of every v1 directory of the sandbox for
 * writing. A single-threaded child that writes "0" to each moves itself
 * without the kernel's global threadgroup lock: writing a pid to
 * cgroup.procs takes that lock and waits for an RCU grace period (several
 * milliseconds), writing "0" (this thread) to "tasks" does not. The caller
 * owns the fds. */
int cgroup_open_self_attach(struct cg_sandbox *cg, int *fds, size_t max, size_t *n, abox_error *err);
/* Commands live one level below the sandbox in the memory hierarchy,
 * "<sandbox>/cmds", which carries the user's memory limit; the sandbox's
 * own directory carries that plus CG_INIT_HEADROOM, and init stays out of
 * the commands' cgroup. An OOM of the commands then picks its victims
 * among the commands only: init (PID 1, whose OOM score cannot be lowered
 * on hosts that withhold CAP_SYS_RESOURCE) and with it the sandbox
 * survive. v1 keeps init in the sandbox's directory; v2 lets no process
 * sit in a cgroup that hands a controller down, so init gets its own leaf,
 * "<sandbox>/init", which the sandbox child moves into (cgroup_init_leaf_fd)
 * once its cgroup namespace is made at the sandbox's directory. */
#define CG_INIT_HEADROOM (64ull << 20)
/* A new fd init places commands with: v1, the commands' "tasks" file
 * (a child writes "0" to it before its exec); v2, their directory (for
 * clone3 CLONE_INTO_CGROUP). -ENOENT when the sandbox has none (no memory
 * limit, or made before commands had a cgroup of their own). */
int cgroup_cmds_fd(const struct cg_sandbox *cg, abox_error *err);
/* v2 memory only: a new fd of "<sandbox>/init/cgroup.procs" for the sandbox
 * child to write "0" to; -ENOENT elsewhere. */
int cgroup_init_leaf_fd(const struct cg_sandbox *cg, abox_error *err);
/* v2 memory only, once init is in its leaf: hands the memory controller to
 * the sandbox's children and writes the commands' limit. 0 elsewhere. */
int cgroup_nest_finish(struct cg_sandbox *cg, abox_error *err);
/* Number of OOM kills inside the sandbox's memory cgroup so far. */
int cgroup_oom_kills(struct cg_sandbox *cg, uint64_t *out, abox_error *err);
/* What the sandbox uses now; UINT64_MAX where the host cannot tell (no
 * CPU accounting on a v1-only host without cpuacct, no controller). */
struct cg_stats {
	uint64_t cpu_usec;     /* CPU time used since create */
	uint64_t mem_current;  /* bytes charged now (includes a tmpfs layer, and the cache of a disk's files) */
	/* of those, what the sandbox uses: all but the page cache of files
	 * on disks (not tmpfs), which the kernel reclaims under pressure */
	uint64_t mem_used;
	uint64_t mem_limit;
	uint64_t pids_current; /* processes and threads */
};
int cgroup_stats(struct cg_sandbox *cg, struct cg_stats *out, abox_error *err);
/* Freezes (true) or thaws (false) and returns once the kernel reports the
 * new state (re-reading the state file, not waiting on notifications). */
int cgroup_freeze(struct cg_sandbox *cg, bool frozen, abox_error *err);
/* The folder whose freezer cgroup_freeze uses (v2 cgroup.freeze or the v1
 * freezer), or NULL; a checkpointer is pointed at it. */
const char *cgroup_freezer_dir(const struct cg_sandbox *cg);
/* SIGKILLs every task: cgroup.kill on v2, else freeze + kill each pid +
 * thaw on v1 (SIGKILL does not reach frozen v1 tasks until thawed). */
int cgroup_kill(struct cg_sandbox *cg, abox_error *err);
/* Kills what is left, waits (bounded, ~2 s) until every cgroup is empty and
 * removes the directories. Frees cg in every case. */
int cgroup_destroy(struct cg_sandbox *cg, abox_error *err);
/* Frees the handle without touching the kernel objects. Accepts NULL. */
void cgroup_sandbox_free(struct cg_sandbox *cg);
/* Limit actually written (for messages like "limit 512M"). */
/* New limits for a running sandbox (those set in lim; the others stay):
 * memory on the sandbox and its commands' cgroup, pids, CPU. A memory
 * limit below what is in use makes the kernel reclaim, or refuse (v1:
 * EBUSY), or kill (v2), as it would for any cgroup. */
int cgroup_update_limits(struct cg_sandbox *cg, const struct cg_limits *lim, abox_error *err);
const struct cg_limits *cgroup_limits(const struct cg_sandbox *cg);
/* The CFS period in force on the sandbox's CPU folder, in us (100000
 * where it cannot be read). */
uint32_t cgroup_cpu_period(const struct cg_sandbox *cg);

#endif
