/* abox/context.h — the context: where abox keeps its state, logging, what
 * the host offers (abox_ctx_describe), garbage collection and the reaper.
 * Part of the public API; abox/abox.h includes every part. */
#ifndef ABOX_CONTEXT_H
#define ABOX_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <abox/common.h>
#include <abox/error.h>
#include <abox/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- context ---------------------------------------------------------- */

typedef struct abox_ctx abox_ctx;

typedef enum abox_log_level {
	ABOX_LOG_ERROR = 3,
	ABOX_LOG_WARNING = 4,
	ABOX_LOG_INFO = 6,
	ABOX_LOG_DEBUG = 7,
} abox_log_level;

typedef void (*abox_log_fn)(abox_log_level level, const char *msg, void *userdata);

#define ABOX_CTX_OPTS_VERSION 5
typedef struct abox_ctx_opts {
	uint32_t version;
	const char *state_dir;   /* NULL: $ABOX_ROOT or /var/lib/abox */
	const char *runtime_dir; /* NULL: $ABOX_RUNTIME_DIR or /run/abox */
	const char *init_path;   /* NULL: $ABOX_INIT, next to the program, or the install path */
	abox_log_fn log;         /* optional; the library never prints */
	void *log_userdata;
	/* version 2: the remote backend. With a URL (here or $ABOX_REMOTE:
	 * "http://host:port" of an aboxd, or "unix:/path/to/socket") every
	 * call goes to that daemon over its E2B-compatible HTTP API, with
	 * api_key (or $ABOX_API_KEY) as X-API-Key. Calls the protocol does
	 * not cover fail with -EOPNOTSUPP naming the call. */
	const char *remote_url;
	const char *api_key;
	/* version 3: the most detailed level given to log (ABOX_LOG_WARNING:
	 * warnings and errors only; the library then also skips the timing
	 * it does for debug messages); 0: every level */
	abox_log_level log_max;
	/* version 4: the cgroup sandboxes' cgroups are made below, instead of
	 * the one the caller runs in (an OCI config's cgroupsPath: a path
	 * from each hierarchy's root, or relative to the caller's cgroup; no
	 * "." or ".." parts). It is made when missing, with cgroup v2's
	 * controllers handed down along it; abox_ctx_remove_cgroup_parent
	 * removes it once empty. NULL: the caller's own. */
	const char *cgroup_parent;
	/* version 5: ABOX_CGROUP_PARENT_* */
	uint32_t cgroup_parent_flags;
} abox_ctx_opts;
/* cgroup_parent is one sandbox's own folder (an OCI container's
 * cgroupsPath, as runc uses it): that sandbox's memory, pids and CPU
 * limits are written on it too, where a container engine reads them.
 * Never for a parent several sandboxes share. */
#define ABOX_CGROUP_PARENT_OWN (1u << 0)
#define ABOX_CTX_OPTS_INIT                                                                                   \
	{                                                                                                    \
		ABOX_CTX_OPTS_VERSION, NULL, NULL, NULL, NULL, NULL, NULL, NULL, (abox_log_level)0, NULL, 0  \
	}

/* opts may be NULL for defaults. *out is owned by the caller. */
ABOX_EXPORT int abox_ctx_new(const abox_ctx_opts *opts, abox_ctx **out, abox_error *err);
/* Accepts NULL. Sandboxes made from the context must be freed first. */
ABOX_EXPORT void abox_ctx_free(abox_ctx *ctx);
/* Removes the context's cgroup_parent in every hierarchy where it holds
 * no cgroup any more (after its sandboxes were removed); 0 without one. */
ABOX_EXPORT int abox_ctx_remove_cgroup_parent(abox_ctx *ctx, abox_error *err);

/* One finding about what this host offers ctx's sandboxes, as the library
 * sees it (`abox doctor` prints them). The struct and its strings belong
 * to the library and are valid during the call; fields are only added at
 * the end, and version says how many there are. */
typedef struct abox_host_check {
	unsigned version;   /* 1 */
	const char *name;   /* "abox-init", "cgroup memory", "seccomp", ... */
	int ok;             /* the facility works */
	int required;       /* without it no sandbox can run */
	const char *detail; /* what was found; or why not, and what that costs */
} abox_host_check;
typedef void (*abox_host_check_fn)(const abox_host_check *check, void *userdata);
/* Checks what ctx's sandboxes depend on, calling fn once per finding:
 * abox-init, each cgroup controller and cgroup kill, the writable layers'
 * disks (made for real, as a create would), the default seccomp policy.
 * 0, or -errno when the checks could not be made at all. */
ABOX_EXPORT int abox_ctx_describe(abox_ctx *ctx, abox_host_check_fn fn, void *userdata, abox_error *err);

/* The checkpointer abox uses ($ABOX_CHECKPOINTER, else the one recorded in
 * <state>/checkpointer by scripts/criu-setup.sh, else criu installed on the
 * system) and whether it works here (`criu check`). *hook and *version
 * (malloc'd, may be NULL) say which one it is, also on failure. */
ABOX_EXPORT int abox_checkpointer_check(abox_ctx *ctx, char **hook, char **version, abox_error *err);

/* Removes what sandboxes whose creator was killed (SIGKILL, power loss of
 * the process) left behind: runtime folders, sockets, empty cgroups.
 * Never touches a live sandbox. *removed (may be NULL) counts them. */
ABOX_EXPORT int abox_gc(abox_ctx *ctx, unsigned *removed, abox_error *err);
/* Keeps count disks of disk_bytes (0: the default, 1 GiB) ready for the
 * sandboxes this process creates in ctx's state folder (with any
 * context), made by a helper process forked now: call it once, before
 * the process starts threads, from the thread that lives as long as the
 * process. A create of that disk size takes a ready one instead of
 * making its own. Spares need no cleanup: they go with the process. For
 * long-lived processes such as aboxd. */
ABOX_EXPORT int abox_spare_disks(abox_ctx *ctx, uint64_t disk_bytes, unsigned count, abox_error *err);
/* Pauses the ABOX_SANDBOX_AUTO_PAUSE sandboxes whose deadline has come
 * (cheap when there are none: one read of each record). *paused (may be
 * NULL) counts them. */
ABOX_EXPORT int abox_reap(abox_ctx *ctx, unsigned *paused, abox_error *err);
/* abox_reap in its two steps, for a caller that must not let the slow one
 * delay the fast one (aboxd runs them in two threads). ABOX_REAP_FREEZE:
 * every sandbox whose deadline has come is frozen at once (its clock
 * stopped, recorded as paused), whatever the next step will do.
 * ABOX_REAP_MEMORY: sandboxes frozen so are then paused as they asked —
 * to disk with the checkpointer, or without memory (processes ended,
 * files kept) for ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY; when that fails they
 * stay frozen in place (the reason is logged), never killed. Both: as
 * abox_reap. *paused counts what the steps paused; *next_deadline_ms (may
 * be NULL) is the earliest autoPause deadline still ahead (wall clock ms,
 * 0: none), for a caller that sleeps until then. */
#define ABOX_REAP_FREEZE (1u << 0)
#define ABOX_REAP_MEMORY (1u << 1)
ABOX_EXPORT int abox_reap_steps(abox_ctx *ctx, uint32_t steps, unsigned *paused, int64_t *next_deadline_ms,
				abox_error *err);
/* abox_gc at most once every few seconds across all processes (a stamp in
 * the runtime folder): cheap to call on every operation, so its cost
 * stays flat however many sandboxes exist. */
ABOX_EXPORT int abox_gc_maybe(abox_ctx *ctx, unsigned *removed, abox_error *err);

#ifdef __cplusplus
}
#endif
#endif
