/* abox — public C API.
 *
 * One contract, two backends (local now, remote later): a context, sandboxes
 * made from templates, and processes started inside them with streamed
 * events. Every handle is opaque. Option structs start with a version field
 * set by their _INIT macro and only ever grow, so code compiled against an
 * older header keeps working.
 *
 * Ownership: objects returned through `**out` parameters belong to the
 * caller and are released with the matching _free function. Strings
 * returned by accessors (abox_sandbox_id, ...) belong to the object and live
 * as long as it does. Event payloads passed to callbacks are valid only
 * during the callback. */
#ifndef ABOX_ABOX_H
#define ABOX_ABOX_H

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

#define ABOX_CTX_OPTS_VERSION 2
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
} abox_ctx_opts;
#define ABOX_CTX_OPTS_INIT { ABOX_CTX_OPTS_VERSION, NULL, NULL, NULL, NULL, NULL, NULL, NULL }

/* opts may be NULL for defaults. *out is owned by the caller. */
ABOX_EXPORT int abox_ctx_new(const abox_ctx_opts *opts, abox_ctx **out, abox_error *err);
/* Accepts NULL. Sandboxes made from the context must be freed first. */
ABOX_EXPORT void abox_ctx_free(abox_ctx *ctx);

/* ---- sandboxes -------------------------------------------------------- */

typedef struct abox_sandbox abox_sandbox;

/* The sandbox ends when its handle is freed (or its creator dies): what
 * `abox run` uses. Without it a sandbox is long-lived: it is recorded in the
 * state folder, outlives its creator, and is found again by id
 * (abox_sandbox_connect) until it is killed or reaches its timeout. */
#define ABOX_SANDBOX_EPHEMERAL (1u << 0)
/* At its deadline the sandbox is paused (with its memory: to disk when a
 * checkpointer works, else frozen in place), not killed (E2B's
 * autoPause). abox_reap does it: aboxd calls it every second, and every
 * abox_gc too. Long-lived sandboxes only. */
#define ABOX_SANDBOX_AUTO_PAUSE (1u << 1)
/* Where the writable layer (the sandbox's files) lives. On disk (an ext4
 * of disk_bytes on a loop device: its files never count against the
 * sandbox's memory) is the default of long-lived sandboxes; in memory (a
 * tmpfs of disk_bytes, faster to make, its files counted as the sandbox's
 * memory) the default of ephemeral ones. At most one of the two. */
#define ABOX_SANDBOX_LAYER_DISK (1u << 2)
#define ABOX_SANDBOX_LAYER_TMPFS (1u << 3)
/* With ABOX_SANDBOX_AUTO_PAUSE: the pause at the deadline keeps the files
 * only and ends the processes (E2B's autoPauseMemory: false); a resume
 * starts them afresh. */
#define ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY (1u << 4)

#define ABOX_SANDBOX_OPTS_VERSION 2
typedef struct abox_sandbox_opts {
	uint32_t version;
	uint32_t flags;            /* ABOX_SANDBOX_* */
	const char *template_name; /* NULL: "host" */
	uint64_t memory_bytes;     /* 0: 512 MiB */
	uint64_t disk_bytes;       /* 0: 1 GiB (size of the writable layer) */
	uint64_t pids;             /* 0: 512 */
	uint32_t cpu_millis;       /* 0: 1000 (one CPU) */
	uint32_t timeout_ms;       /* 0: none; the sandbox is killed at the deadline */
	const char *seccomp_policy; /* path; NULL: the default policy */
	const char *const *metadata; /* NULL-terminated "key=value" entries, or NULL */
	const char *const *env;      /* "K=V" for every command of the sandbox (a command's own env wins), or NULL */
	/* version 2 */
	const char *snapshot;        /* id or name: start from that snapshot's files (and its template) */
} abox_sandbox_opts;
#define ABOX_SANDBOX_OPTS_INIT { ABOX_SANDBOX_OPTS_VERSION, 0, NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL }

/* Creates and starts a sandbox. On failure nothing is left behind. *out is
 * owned by the caller. */
ABOX_EXPORT int abox_sandbox_create(abox_ctx *ctx, const abox_sandbox_opts *opts,
				    abox_sandbox **out, abox_error *err);
/* Attaches to a long-lived sandbox by id. -ENOENT when there is no such
 * sandbox, -ESRCH when it is recorded but its init is gone (abox_gc
 * removes it). *out is owned by the caller; freeing it does not end the
 * sandbox. */
ABOX_EXPORT int abox_sandbox_connect(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err);

typedef enum abox_sandbox_state {
	ABOX_STATE_RUNNING = 1,
	ABOX_STATE_DEAD = 2, /* recorded, but its init is gone: abox_gc removes it */
	ABOX_STATE_PAUSED = 3, /* frozen by abox_sandbox_pause; its timeout clock is stopped */
} abox_sandbox_state;

#define ABOX_SANDBOX_INFO_VERSION 1
typedef struct abox_sandbox_info {
	uint32_t version;   /* set by the caller to ABOX_SANDBOX_INFO_VERSION */
	char id[ABOX_ID_LEN + 1];
	abox_sandbox_state state;
	int pid;            /* init, in the host's pid namespace */
	int64_t created_ms; /* Unix time in ms */
	int64_t deadline_ms; /* Unix time in ms; 0 = no timeout */
	char template_name[64];
	uint64_t memory_bytes, disk_bytes, pids;
	uint32_t cpu_millis;
	char *metadata_json; /* {"key":"value",...}; free with abox_sandbox_info_clear */
} abox_sandbox_info;

/* Information on a long-lived sandbox, from its record and a liveness check
 * (a reused pid is never taken for the sandbox's init). */
ABOX_EXPORT int abox_sandbox_info_get(abox_ctx *ctx, const char *id, abox_sandbox_info *out,
				      abox_error *err);
ABOX_EXPORT void abox_sandbox_info_clear(abox_sandbox_info *info);
/* Ids of all long-lived sandboxes, running or dead. *ids is a malloc'd
 * NULL-terminated array owned by the caller: free with abox_strv_free. */
ABOX_EXPORT int abox_sandbox_list(abox_ctx *ctx, char ***ids, abox_error *err);

#define ABOX_LIST_OPTS_VERSION 1
typedef struct abox_list_opts {
	uint32_t version;
	abox_sandbox_state state;      /* 0: any */
	const char *const *metadata;   /* "key=value" entries that must all match, or NULL */
	uint32_t limit;                /* 0: no limit */
	const char *next_token;        /* from the previous page, or NULL */
} abox_list_opts;
#define ABOX_LIST_OPTS_INIT { ABOX_LIST_OPTS_VERSION, 0, NULL, 0, NULL }

/* Sandboxes matching opts, in id order, one page at a time. *infos is a
 * malloc'd array of *n entries (clear each with abox_sandbox_info_clear,
 * then free the array); *next is a malloc'd token for the next page, or
 * NULL on the last one (next itself may be NULL: no more pages wanted). */
ABOX_EXPORT int abox_sandbox_query(abox_ctx *ctx, const abox_list_opts *opts, abox_sandbox_info **infos,
				   size_t *n, char **next, abox_error *err);
ABOX_EXPORT void abox_strv_free(char **v);

/* 20 characters of [a-z0-9]; owned by the sandbox handle. */
ABOX_EXPORT const char *abox_sandbox_id(const abox_sandbox *sb);
/* Kills every process of the sandbox and removes its mounts, cgroups,
 * sockets and state. Idempotent. */
ABOX_EXPORT int abox_sandbox_kill(abox_sandbox *sb, abox_error *err);
/* Releases the handle; an ephemeral sandbox is killed, a long-lived one
 * keeps running. Accepts NULL. */
ABOX_EXPORT void abox_sandbox_free(abox_sandbox *sb);
/* Moves a long-lived sandbox's deadline to timeout_ms from now, earlier or
 * later (0: no timeout). Its init enforces it even with no abox process
 * running. */
ABOX_EXPORT int abox_sandbox_set_timeout(abox_sandbox *sb, uint32_t timeout_ms, abox_error *err);
#define ABOX_SNAPSHOT_INFO_VERSION 2
typedef struct abox_snapshot_info {
	uint32_t version;        /* set by the caller to ABOX_SNAPSHOT_INFO_VERSION */
	char id[ABOX_ID_LEN + 1];
	char name[128];          /* "" when unnamed */
	char parent[ABOX_ID_LEN + 1];         /* the snapshot it was made on top of; "" = none */
	char template_name[128];
	int64_t created_ms;      /* Unix time in ms */
	uint64_t bytes;          /* file data in this layer alone */
	uint32_t depth;          /* layers in its chain, itself included */
	/* version 2: */
	bool memory;             /* holds a checkpoint of the processes too */
	bool automatic;          /* made by a fork or a pause (not asked for): gc removes it once unused */
} abox_snapshot_info;

/* Copies a long-lived sandbox's files (its writable layer) into a new
 * immutable snapshot: the sandbox is frozen for the copy and thawed after
 * (a paused one stays paused). The cost grows with the bytes the sandbox
 * changed, not with its template. name may be NULL; names are unique. */
ABOX_EXPORT int abox_sandbox_snapshot(abox_sandbox *sb, const char *name, abox_snapshot_info *out,
				      abox_error *err);
/* Forks a long-lived sandbox count times (1-64): one snapshot of its files
 * (a brief freeze; the source keeps running), then count sandboxes from
 * it, each with its own id, writable layer and cgroups, and the source's
 * limits, seccomp policy, environment and metadata. timeout_ms 0: what is
 * left of the source's timeout. forks[i] is a new sandbox or NULL, with
 * the reason in errs[i] (errs may be NULL). Returns how many were made, or
 * a negative errno when the snapshot itself failed. The snapshot is
 * removed by abox_gc once no fork uses it. */
ABOX_EXPORT int abox_sandbox_fork(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, abox_sandbox **forks,
				  abox_error *errs, abox_error *err);
/* abox_sandbox_snapshot, plus a checkpoint of the processes
 * (ABOX_SNAPSHOT_MEMORY, needs the checkpoint hook; the source runs on):
 * sandboxes created from such a snapshot get those processes back,
 * running from where they were, each on its own. */
#define ABOX_SNAPSHOT_MEMORY (1u << 0)
/* A name another snapshot has moves to the new one (E2B's names: the name
 * then means the newest); the older keeps its id. Without it such a
 * name is refused (EEXIST). */
#define ABOX_SNAPSHOT_TAKE_NAME (1u << 1)
ABOX_EXPORT int abox_sandbox_snapshot_flags(abox_sandbox *sb, const char *name, uint32_t flags,
					    abox_snapshot_info *out, abox_error *err);
/* abox_sandbox_fork; with ABOX_FORK_MEMORY every fork also gets the
 * source's processes (one checkpoint, restored count times). */
#define ABOX_FORK_MEMORY (1u << 0)
ABOX_EXPORT int abox_sandbox_fork_flags(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, uint32_t flags,
					abox_sandbox **forks, abox_error *errs, abox_error *err);
/* Every snapshot; *out is freed with free(). */
ABOX_EXPORT int abox_snapshot_list(abox_ctx *ctx, abox_snapshot_info **out, size_t *n, abox_error *err);
/* Removes a snapshot by id or name; -EBUSY (naming it) while a recorded
 * sandbox or another snapshot stands on it. */
ABOX_EXPORT int abox_snapshot_remove(abox_ctx *ctx, const char *ref, abox_error *err);
/* Removes a snapshot as E2B deletes a template: one that sandboxes or
 * other snapshots stand on is not refused but forgotten (no name, listed
 * as automatic) and its layers are removed by abox_gc once nothing uses
 * them; what runs on it is not disturbed. */
ABOX_EXPORT int abox_snapshot_forget(abox_ctx *ctx, const char *ref, abox_error *err);

/* Templates. `host` is built in. abox_template_import makes (or replaces)
 * template name from source: a folder holding a root filesystem, a root
 * filesystem tarball (.tar, .tar.gz, .tar.xz, .tar.zst, .tar.bz2), an OCI
 * image layout (folder or archive) or a `docker save` archive (layers
 * applied in order, whiteouts honoured). Nothing in the source is ever
 * followed, no entry may land outside the template (`..`, absolute
 * names, writes through symlinks refuse the whole import), and device
 * nodes, setuid/setgid bits and file capabilities are dropped unless
 * opts allow them. Sandboxes already using an older version keep it
 * until they end. */
ABOX_EXPORT int abox_template_import(abox_ctx *ctx, const char *name, const char *source, abox_error *err);

#define ABOX_TEMPLATE_KEEP_SETUID  (1u << 0) /* keep setuid/setgid bits (sandbox roots are nosuid anyway) */
#define ABOX_TEMPLATE_KEEP_DEVICES (1u << 1) /* keep device nodes (sandbox roots are nodev anyway) */

typedef struct abox_template_progress {
	uint64_t entries;     /* written so far */
	uint64_t bytes;       /* file data written so far */
	unsigned layer;       /* image layer being applied (1-based); 0: not an image */
	unsigned layers;
	const char *message;  /* a line of a build's output (abox_template_build), or NULL */
} abox_template_progress;

#define ABOX_TEMPLATE_OPTS_VERSION 1
typedef struct abox_template_opts {
	uint32_t version;
	uint32_t flags;                 /* ABOX_TEMPLATE_KEEP_* */
	uint64_t max_bytes;             /* file data limit; 0: 64 GiB */
	uint64_t max_entries;           /* entry limit; 0: 4 million */
	/* What sandboxes made from it start with (over what an image's
	 * config says): */
	const char *user;               /* default user of commands: "root" or "user" */
	const char *workdir;            /* default working folder (absolute) */
	const char *const *env;         /* "K=V" entries */
	const char *start_cmd;          /* run with sh -c, in the background, at every create */
	const char *ready_cmd;          /* create returns once this exits 0 (sh -c), or */
	uint16_t ready_port;            /* once this TCP port accepts on the sandbox's 127.0.0.1 */
	uint32_t ready_timeout_ms;      /* 0: 60 s; create fails (and kills) after it */
	void (*progress)(const abox_template_progress *p, void *userdata); /* may be NULL */
	void *userdata;
} abox_template_opts;
#define ABOX_TEMPLATE_OPTS_INIT { ABOX_TEMPLATE_OPTS_VERSION, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL }

ABOX_EXPORT int abox_template_import_ex(abox_ctx *ctx, const char *name, const char *source,
					const abox_template_opts *opts, abox_error *err);

/* Builds template name from a recipe (a `key = value` file, see rootfs/ and
 * docs/cli.md): debootstrap of a Debian suite from the machine's mirror
 * (or the recipe's), in a mount namespace of its own, then imported like
 * a folder. opts override the recipe's metadata; its progress callback
 * gets every line debootstrap prints (message). Takes minutes. */
ABOX_EXPORT int abox_template_build(abox_ctx *ctx, const char *name, const char *recipe,
				    const abox_template_opts *opts, abox_error *err);

#define ABOX_TEMPLATE_INFO_VERSION 1
typedef struct abox_template_info {
	uint32_t version;
	char name[64];
	char current[96];      /* its current version (folder name) */
	int64_t created_ms;    /* Unix time in ms; 0: unknown (host) */
	char *source;          /* what it was imported from, or NULL */
	uint64_t entries, bytes, dropped;
	char *user;            /* default user of commands */
	char *workdir;         /* default working folder, or NULL (the user's home) */
	char **env;            /* NULL-terminated, or NULL */
	char *start_cmd, *ready_cmd;
	uint16_t ready_port;
	uint32_t ready_timeout_ms;
} abox_template_info;

/* What template name is and does; clear with abox_template_info_clear. */
ABOX_EXPORT int abox_template_inspect(abox_ctx *ctx, const char *name, abox_template_info *out,
				      abox_error *err);
ABOX_EXPORT void abox_template_info_clear(abox_template_info *info);
/* Names of all templates, "host" first; NULL-terminated, free each and
 * the array with free(). */
ABOX_EXPORT int abox_template_list(abox_ctx *ctx, char ***names, abox_error *err);
ABOX_EXPORT int abox_template_remove(abox_ctx *ctx, const char *name, abox_error *err);

/* Freezes every process of a long-lived sandbox (its cgroup's freezer)
 * and returns once the kernel reports it frozen. A paused sandbox uses no
 * CPU, keeps its memory, and its timeout clock stops; commands and file
 * requests fail with -EAGAIN ("paused") until abox_sandbox_resume; kill
 * works. -EALREADY when it is paused already. */
ABOX_EXPORT int abox_sandbox_pause(abox_sandbox *sb, abox_error *err);
/* Pause without memory (E2B's keepMemory=false): the sandbox's files are
 * kept (a snapshot layer of their own), every process ends and its memory
 * is freed. abox_sandbox_resume then starts a fresh init on those files,
 * with the same id, limits, environment and metadata; background
 * processes are gone. Works on a running or a paused sandbox. */
#define ABOX_PAUSE_NO_MEMORY (1u << 0)
/* Pause to disk (E2B's pause): the processes are checkpointed by the
 * checkpoint hook (CRIU) into the state folder, with the files as in
 * ABOX_PAUSE_NO_MEMORY, and their memory is freed; abox_sandbox_resume
 * restores them where they were (a running counter keeps counting). Fails
 * with -EOPNOTSUPP, the sandbox untouched, when there is no working
 * checkpointer (`abox doctor`). */
#define ABOX_PAUSE_TO_DISK (1u << 1)
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
ABOX_EXPORT int abox_sandbox_pause_flags(abox_sandbox *sb, uint32_t flags, abox_error *err);
/* Thaws a paused sandbox: processes go on where they were, the deadline
 * moves by the time spent paused. -EALREADY when it is not paused. */
ABOX_EXPORT int abox_sandbox_resume(abox_sandbox *sb, abox_error *err);
#define ABOX_METRICS_VERSION 1
typedef struct abox_metrics {
	uint32_t version;       /* set by the caller to ABOX_METRICS_VERSION */
	int64_t timestamp_ms;   /* Unix time in ms */
	uint64_t cpu_used_usec; /* CPU time since create; UINT64_MAX if the host cannot tell */
	double cpu_pct;         /* % of one CPU since the previous call on this handle (the first: since create) */
	uint64_t mem_used, mem_limit;   /* bytes (the writable layer lives in memory and counts) */
	uint64_t disk_used, disk_limit; /* bytes of the writable layer */
	uint64_t pids;          /* processes and threads */
} abox_metrics;

/* What the sandbox uses now. */
ABOX_EXPORT int abox_sandbox_metrics(abox_sandbox *sb, abox_metrics *out, abox_error *err);
/* Number of processes the kernel's OOM killer ended inside the sandbox. */
ABOX_EXPORT int abox_sandbox_oom_kills(abox_sandbox *sb, uint64_t *out, abox_error *err);
/* Effective memory limit in bytes. */
ABOX_EXPORT uint64_t abox_sandbox_memory_limit(const abox_sandbox *sb);

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

/* ---- processes -------------------------------------------------------- */

typedef struct abox_proc abox_proc;

#define ABOX_PROC_STDIN (1u << 0) /* open a stdin pipe (else /dev/null) */
/* The command may safely run twice: when its start fails on a transient
 * error before it ran (the remote daemon unreachable, or 502/503/504), it
 * is tried again (three tries in all). Without it a start is never
 * repeated. The local backend has no such errors. */
#define ABOX_PROC_IDEMPOTENT (1u << 1)

#define ABOX_PROC_OPTS_VERSION 2
typedef struct abox_proc_opts {
	uint32_t version;
	uint32_t flags;               /* ABOX_PROC_* */
	const char *const *argv;      /* NULL-terminated; argv[0] looked up in PATH */
	const char *const *env;       /* NULL-terminated "K=V" entries, or NULL */
	const char *cwd;              /* NULL: the user's home */
	const char *user;             /* "user" (default), "root" or a user of the sandbox's /etc/passwd */
	const char *tag;              /* optional name to find it again (attach, signal) */
	/* Output truncation for agents (0 = off): when stdout + stderr exceed
	 * truncate_threshold bytes, abox_proc_result gives each stream cut to
	 * its first truncate_head and last truncate_tail bytes with a marker
	 * between, and the complete streams stay in files inside the sandbox
	 * (/tmp/abox/cmd/<uuid>/{command,stdout,stderr}.txt). 0 head/tail:
	 * half the threshold each. */
	uint32_t truncate_threshold, truncate_head, truncate_tail;
	/* A terminal of this size (both > 0): the process's stdin, stdout and
	 * stderr are one pty, output arrives as ABOX_EVENT_PTY, stdin is open,
	 * TERM defaults to xterm-256color. */
	uint16_t pty_rows, pty_cols;
	/* Version 2. 0: none. This long after its start, init kills the
	 * process's group (SIGKILL) and its end carries ABOX_END_CMD_TIMEOUT:
	 * a runaway command cannot outlive the caller's patience, even when
	 * nobody is attached any more (E2B's commands timeoutMs). */
	uint32_t timeout_ms;
} abox_proc_opts;
#define ABOX_PROC_OPTS_INIT { ABOX_PROC_OPTS_VERSION, 0, NULL, NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0 }

typedef enum abox_event_type {
	ABOX_EVENT_START = 1,  /* pid */
	ABOX_EVENT_STDOUT = 2, /* data, len */
	ABOX_EVENT_STDERR = 3, /* data, len */
	ABOX_EVENT_END = 4,    /* exit_code, signal, error */
	ABOX_EVENT_PTY = 5,    /* data, len: a terminal's output */
} abox_event_type;

#define ABOX_END_OOM (1u << 0)     /* the OOM killer ended a process of the sandbox */
#define ABOX_END_TIMEOUT (1u << 1) /* the sandbox reached its deadline */
#define ABOX_END_LOST (1u << 2)    /* init went away without reporting */
#define ABOX_END_CMD_TIMEOUT (1u << 3) /* killed at its own timeout (abox_proc_opts.timeout_ms) */

typedef struct abox_event {
	abox_event_type type;
	int pid;
	const void *data;   /* STDOUT/STDERR */
	size_t len;
	int exit_code;      /* END: the code, or 128+signal */
	int signal;         /* END: the signal that ended it, or 0 */
	uint32_t end_flags; /* END: ABOX_END_* */
	/* END: why it could not run (e.g. "exec 'x': No such file or directory"),
	 * or with ABOX_END_OOM that the OOM killer struck and the limit
	 * ("killed: out of memory (limit 512M)"), or NULL */
	const char *error;
	uint64_t dropped;   /* STDOUT/STDERR replayed on attach: bytes lost before this (only the last 1 MiB per stream is kept, 16 MiB for all processes of the sandbox together) */
} abox_event;

typedef void (*abox_event_fn)(const abox_event *ev, void *userdata);

/* Starts a process; events are delivered by abox_proc_dispatch/wait.
 * *out is owned by the caller (abox_proc_free). */
ABOX_EXPORT int abox_proc_start(abox_sandbox *sb, const abox_proc_opts *opts, abox_proc **out,
				abox_error *err);
/* A file descriptor for callers with their own poll loop, and the poll
 * events to wait for on it (POLLIN, plus POLLOUT while requests such as
 * stdin wait to be sent). Owned by the sandbox. */
ABOX_EXPORT int abox_proc_fd(const abox_proc *p);
ABOX_EXPORT int abox_proc_events(const abox_proc *p);
/* Delivers the events that are ready without blocking (a bounded number
 * per call, so a flood of output cannot starve the caller's loop) and
 * sends queued requests. Returns 1 once the END event was delivered, 0
 * otherwise, < 0 on error. */
ABOX_EXPORT int abox_proc_dispatch(abox_proc *p, abox_event_fn fn, void *userdata, abox_error *err);
/* True when events were already read from the fd and wait in the handle:
 * dispatch again before polling (the fd will not wake you for them). */
ABOX_EXPORT bool abox_proc_buffered(const abox_proc *p);
/* Blocks until the process ends (or timeout_ms passes: -ETIMEDOUT;
 * -1 = no timeout), delivering events. Returns 1 after END. */
ABOX_EXPORT int abox_proc_wait(abox_proc *p, int timeout_ms, abox_event_fn fn, void *userdata,
			       abox_error *err);
/* Queues stdin data and sends what the connection takes now; never
 * blocks. Keep abox_proc_stdin_pending() bounded (e.g. stop reading your
 * input above 1 MiB) and keep dispatching: that is the back-pressure. */
ABOX_EXPORT int abox_proc_write_stdin(abox_proc *p, const void *buf, size_t len, abox_error *err);
ABOX_EXPORT size_t abox_proc_stdin_pending(const abox_proc *p);
ABOX_EXPORT int abox_proc_close_stdin(abox_proc *p, abox_error *err);
/* A terminal process's new size (its foreground group gets SIGWINCH). */
ABOX_EXPORT int abox_proc_resize(abox_proc *p, uint16_t rows, uint16_t cols, abox_error *err);
/* Sends sig to the process's whole process group. */
ABOX_EXPORT int abox_proc_signal(abox_proc *p, int sig, abox_error *err);
ABOX_EXPORT int abox_proc_pid(const abox_proc *p);
/* Accepts NULL. Does not stop the process: in a long-lived sandbox it runs
 * on in the background and can be attached again. */
ABOX_EXPORT void abox_proc_free(abox_proc *p);

#define ABOX_PROC_RESULT_VERSION 1
typedef struct abox_proc_result {
	uint32_t version;      /* set by the caller to ABOX_PROC_RESULT_VERSION */
	int exit_code;
	int truncated;         /* 1 when the streams below were cut */
	uint64_t stdout_bytes, stderr_bytes; /* complete lengths */
	char *stdout_text, *stderr_text;     /* NUL-terminated; owned, see _clear */
	size_t stdout_len, stderr_len;
	char dir[128];         /* folder with command.txt, stdout.txt, stderr.txt */
} abox_proc_result;

/* After END of a process started with truncate_threshold: its output as an
 * agent should see it. Strings are owned by *out until abox_proc_result_clear. */
ABOX_EXPORT int abox_proc_result_get(abox_proc *p, abox_proc_result *out, abox_error *err);
ABOX_EXPORT void abox_proc_result_clear(abox_proc_result *r);

/* Attaches to a process of the sandbox by pid (tag NULL) or by tag (pid
 * 0): START, then what its streams kept while nobody listened (the last
 * 1 MiB each; ev->dropped says how much came before), then live events
 * or, for a process that already ended, its END. Several handles may be
 * attached to one process, and any of them may write to (and close) its
 * stdin: input for a process started without one is dropped. *out is
 * owned by the caller. */
ABOX_EXPORT int abox_proc_attach(abox_sandbox *sb, int pid, const char *tag, abox_proc **out,
				 abox_error *err);

typedef struct abox_proc_info {
	int pid;
	char tag[128];     /* "" when none */
	char cmd[256];     /* command line, shortened */
	int running;       /* 1 running, 0 ended */
	int exit_code;     /* when ended: the code, or 128+signal */
	int signal;        /* when ended by a signal */
} abox_proc_info;

/* Processes of the sandbox: running ones and recently ended ones (the last
 * 32). *out is a malloc'd array of *n entries owned by the caller (free()). */
ABOX_EXPORT int abox_proc_list(abox_sandbox *sb, abox_proc_info **out, size_t *n, abox_error *err);

/* ---- files -----------------------------------------------------------
 *
 * Done by abox-init inside the sandbox, as `user` (NULL: "user") with that
 * user's permissions; paths are resolved in the sandbox's own tree only.
 * `user` and `root` are uid 1000 and 0; any other name is a user of the
 * sandbox's own /etc/passwd (with its groups), -ABOX_ENOUSER when it has
 * none. A relative path (and "~", "~/x") is below the user's home.
 * Errors carry the kernel's errno: -ENOENT not found, -EACCES permission
 * denied, -ENOTDIR, -EISDIR, -EEXIST, -ENOSPC, ... An empty file reads as
 * 0 bytes, never as an error. */

typedef enum abox_file_type {
	ABOX_FILE_REGULAR = 1,
	ABOX_FILE_DIR = 2,
	ABOX_FILE_SYMLINK = 3,
	ABOX_FILE_OTHER = 4,
} abox_file_type;

typedef struct abox_file_info {
	char path[4096];
	char name[256];
	abox_file_type type;
	uint64_t size;
	uint32_t mode;     /* permission bits */
	uint32_t uid, gid;
	int64_t mtime_ms;  /* Unix time in ms */
	char target[4096]; /* a symlink's target, else "" */
} abox_file_info;

/* Chunks of a file as they are read (at most 64 KiB each, valid during the
 * call). Return non-zero to stop (the read then fails with -ECANCELED). */
typedef int (*abox_data_fn)(const void *data, size_t len, void *userdata);

ABOX_EXPORT int abox_file_read(abox_sandbox *sb, const char *path, const char *user, abox_data_fn fn,
			       void *userdata, uint64_t *size, abox_error *err);
/* Writes (creates or truncates) a file from memory; with parents, missing
 * folders are made first. */
ABOX_EXPORT int abox_file_write(abox_sandbox *sb, const char *path, const char *user, const void *data,
				size_t len, int parents, abox_error *err);
/* The same from a host file descriptor, in bounded chunks (any size). */
ABOX_EXPORT int abox_file_write_fd(abox_sandbox *sb, const char *path, const char *user, int fd,
				   int parents, uint64_t *size, abox_error *err);
ABOX_EXPORT int abox_file_stat(abox_sandbox *sb, const char *path, const char *user, abox_file_info *out,
			       abox_error *err);
/* 1 in *exists when the path exists (a dangling symlink exists). */
ABOX_EXPORT int abox_file_exists(abox_sandbox *sb, const char *path, const char *user, int *exists,
				 abox_error *err);
/* Entries below path down to depth levels (1 = the folder's own entries).
 * *out is a malloc'd array of *n entries (free()). */
ABOX_EXPORT int abox_file_list(abox_sandbox *sb, const char *path, const char *user, unsigned depth,
			       abox_file_info **out, size_t *n, abox_error *err);
/* Limits of a listing: a depth above ABOX_FILE_LIST_MAX_DEPTH is refused
 * (-EINVAL), and a tree with more than ABOX_FILE_LIST_MAX_ENTRIES entries
 * fails with -E2BIG before any entry is given. */
#define ABOX_FILE_LIST_MAX_DEPTH 16
#define ABOX_FILE_LIST_MAX_ENTRIES 100000
/* One entry of a listing, valid during the call. Non-zero stops the
 * listing (it then fails with -ECANCELED). */
typedef int (*abox_file_entry_fn)(const abox_file_info *entry, void *userdata);
/* The same entries as abox_file_list, handed to fn one by one as they
 * arrive: memory stays constant whatever the tree's size. */
ABOX_EXPORT int abox_file_list_each(abox_sandbox *sb, const char *path, const char *user, unsigned depth,
				    abox_file_entry_fn fn, void *userdata, abox_error *err);
/* mkdir -p; *made (may be NULL) is 1 when it did not exist. */
ABOX_EXPORT int abox_file_mkdir(abox_sandbox *sb, const char *path, const char *user, int *made,
				abox_error *err);
ABOX_EXPORT int abox_file_move(abox_sandbox *sb, const char *from, const char *to, const char *user,
			       abox_error *err);
/* Removes a file or a whole folder. */
ABOX_EXPORT int abox_file_remove(abox_sandbox *sb, const char *path, const char *user, abox_error *err);

/* File metadata (what E2B calls it): user-defined key/value pairs kept as
 * the file's "user.e2b.<key>" extended attributes, done as user.
 * abox_file_meta_set sets n pairs (kv[2i] the key, kv[2i+1] its value) on
 * path, leaving its other pairs. abox_file_meta_get calls fn once per pair
 * of every path of paths[] that has any (index: the path's position;
 * strings valid during the call; return non-zero to stop); a path that
 * cannot be read has none. Sandboxes started by an abox without metadata
 * support, and remote ones, answer -ENOTSUP. */
typedef int (*abox_meta_fn)(size_t index, const char *key, const char *value, void *userdata);
ABOX_EXPORT int abox_file_meta_set(abox_sandbox *sb, const char *path, const char *user, const char *const *kv,
				   size_t n, abox_error *err);
ABOX_EXPORT int abox_file_meta_get(abox_sandbox *sb, const char *const *paths, size_t n, const char *user,
				   abox_meta_fn fn, void *userdata, abox_error *err);

/* The sandbox's own users and groups: its /etc/passwd and /etc/group as
 * they are now, read by abox-init (never the host's accounts). Users
 * made inside (useradd) are valid `user` arguments of every call here.
 * *out is owned by the caller (abox_accounts_free). Remote sandboxes
 * answer -ENOTSUP. */
typedef struct abox_accounts abox_accounts;
ABOX_EXPORT int abox_accounts_read(abox_sandbox *sb, abox_accounts **out, abox_error *err);
/* A user by name: 0 with its uid, gid and home (valid until the next
 * abox_accounts_user call on a or its free;
 * any of them may be NULL), or -ABOX_ENOUSER. */
ABOX_EXPORT int abox_accounts_user(const abox_accounts *a, const char *name, uint32_t *uid, uint32_t *gid,
				   const char **home);
/* The name of a uid or gid into buf: 0, or -ENOENT when none has it. */
ABOX_EXPORT int abox_accounts_user_name(const abox_accounts *a, uint32_t uid, char *buf, size_t n);
ABOX_EXPORT int abox_accounts_group_name(const abox_accounts *a, uint32_t gid, char *buf, size_t n);
ABOX_EXPORT void abox_accounts_free(abox_accounts *a);

typedef enum abox_fs_event_type {
	ABOX_FS_CREATE = 1,
	ABOX_FS_WRITE = 2,
	ABOX_FS_REMOVE = 3,
	ABOX_FS_RENAME = 4,
	ABOX_FS_CHMOD = 5,
} abox_fs_event_type;

/* One change below a watched folder; path is valid during the call.
 * Return non-zero to stop watching. */
typedef int (*abox_fs_event_fn)(abox_fs_event_type type, const char *path, void *userdata);

/* Watches a folder (and, with recursive, every folder below it, new ones
 * included) as user, calling fn for each change until fn returns
 * non-zero or timeout_ms passes (-1: no limit). Returns 0 then. */
ABOX_EXPORT int abox_file_watch(abox_sandbox *sb, const char *path, const char *user, int recursive,
				int timeout_ms, abox_fs_event_fn fn, void *userdata, abox_error *err);
/* The same for your own event loop: a watch on its own sandbox handle
 * (other requests on that handle would wait behind its events). Poll
 * abox_watch_fd for POLLIN, then abox_watch_dispatch delivers what
 * arrived without blocking: 0 when done for now, 1 when fn said stop,
 * -EPIPE when the sandbox went away. abox_watch_free stops the watch;
 * free it before its handle. */
typedef struct abox_watch abox_watch;
ABOX_EXPORT int abox_watch_start(abox_sandbox *sb, const char *path, const char *user, int recursive,
				 abox_watch **out, abox_error *err);
ABOX_EXPORT int abox_watch_fd(const abox_watch *w);
ABOX_EXPORT int abox_watch_dispatch(abox_watch *w, abox_fs_event_fn fn, void *userdata, abox_error *err);
ABOX_EXPORT void abox_watch_free(abox_watch *w);

#ifdef __cplusplus
}
#endif
#endif
