/* cgroup/cgroup_internal.h — what the files of src/lib/cgroup/ share: the
 * handle of one sandbox's cgroups (its directories, which one serves each
 * controller) and the knob helpers. Not installed, not used outside
 * src/lib/cgroup/; callers see only cgroup.h. Runs in the CLI/daemon. */
#ifndef ABOX_CGROUP_INTERNAL_H
#define ABOX_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cgroup/cgroup.h"

/* the v2 dir + one per v1 controller + the commands' and init's own
 * memory cgroups below the sandbox's (see cgroup_cmds_fd) */
#define DIRS_MAX (CG_CONTROLLER_MAX + 3)
#define NAME_LEN_MAX 128
#define NSEC 1000000000ull
#define WAIT_NS (2 * NSEC)       /* bound for freeze, kill and destroy */
#define SPIN_MIN_NS 10000ull     /* 10 µs, doubled up to */
#define SPIN_MAX_NS 1000000ull   /* 1 ms */

struct cg_dir {
	char *path;
	int fd; /* O_PATH|O_DIRECTORY, also the clone3 cgroup fd on v2 */
	enum cg_version version;
	bool fake; /* not on cgroupfs: a test tree */
};

struct cg_sandbox {
	struct cg_dir dir[DIRS_MAX];
	size_t n;
	int ctl[CG_CONTROLLER_MAX]; /* index in dir[] serving each controller, -1: none */
	int v2;                     /* index of the v2 directory, -1: none */
	bool v2_kill;
	bool v2_freeze;
	bool finished; /* cgroup_create_finish ran */
	bool cpu_pending; /* the CPU limit is still to be written (cgroup_create_cpu) */
	int oom_fd;    /* the OOM kill counter's file, kept open (read after each command), or -1 */
	int oom_cmds_fd; /* the same for the commands' cgroup (v1), or -1 */
	int cmds;      /* index of "<memory dir>/cmds" (the commands' memory limit), or -1 */
	int init_leaf; /* v2 memory only: index of "<v2 dir>/init" (init's own), or -1 */
	struct cg_limits lim;
	char leaf[sizeof("abox-") + NAME_LEN_MAX];
};

/* Sleeps *delay, then doubles it up to SPIN_MAX_NS. */
void cgroup_backoff(uint64_t *delay);
/* Writes val to d/file. An optional knob that is missing is skipped; on
 * a fake tree a required one is created. */
int cgroup_knob_write(const struct cg_dir *d, const char *file, const char *val, bool optional,
		      abox_error *err);
/* "key value" lookup in flat-keyed files (cgroup.events, memory.events,
 * memory.oom_control): 0, -ENOENT or -EPROTO. */
int cgroup_kv_get(const char *text, const char *key, uint64_t *v);
/* "<mount><self>" (self "/" adds nothing), malloc'd, or NULL. */
char *cgroup_self_dir(const char *mount, const char *self);
/* Whether list (tokens separated by any of seps) holds tok exactly. */
bool cgroup_list_has(const char *list, const char *tok, const char *seps);
/* Fake trees only: rmdir needs the knob files we created gone. */
void cgroup_clear_fake_dir(const struct cg_dir *d);
/* Writes the limits in lim that are set (limits.c). */
int cgroup_write_limits(struct cg_sandbox *cg, const struct cg_limits *lim, abox_error *err);
/* Sets d frozen or thawed and waits (until deadline, monotonic ns) for
 * the kernel to report it (freeze.c). */
int cgroup_set_frozen(const struct cg_dir *d, bool frozen, uint64_t deadline, abox_error *err);

#endif
