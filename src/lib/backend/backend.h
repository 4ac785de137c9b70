/* backend — the objects behind the public handles, local backend.
 * Runs in the CLI/daemon. */
#ifndef ABOX_BACKEND_H
#define ABOX_BACKEND_H

#include <abox/abox.h>

#include "base/base.h"
#include "base/clock.h"
#include "cgroup/cgroup.h"
#include "proto/proto.h"
#include "layer/layer.h"
#include "layer/snapshot.h"

struct remote_ops;
struct remote;

struct abox_ctx {
	/* the remote backend, when the context talks to an aboxd: every
	 * public call checks it first (remote/remote.h) */
	const struct remote_ops *remote_ops;
	struct remote *remote;
	char *state_dir;
	char *runtime_dir;
	char *init_path;
	char *unpack_path;     /* abox-unpack, or NULL when not found */
	char *default_policy;
	abox_log_fn log;
	void *log_userdata;
	struct cg_layout cg;
	bool cg_ready;
	uint32_t proc_masks;
	int last_cap;
	/* what the reaper last read of each record (autopause.c): a context
	 * that reaps often reads only the records that changed */
	struct reap_seen *reap_seen;
	size_t reap_nseen;
};
void backend_reap_seen_free(abox_ctx *ctx);

struct abox_sandbox {
	abox_ctx *ctx;
	char id[ABOX_ID_LEN + 1];
	struct remote_sandbox *remote; /* set on a remote context's sandboxes */
	uint32_t flags;
	char *rundir;
	int rundir_fd; /* locked for the sandbox's life (see store_gc) */
	int conn;
	int conn_errno; /* why conn is -1 on an attached handle */
	struct proto_reader rd;
	struct proto_outq out; /* requests waiting for room on conn */
	struct cg_sandbox *cg;
	int template_lock; /* shared lock on the template version in use */
	pid_t pid;
	int pidfd;
	bool attached;    /* found by id: init is not our child */
	bool dead;        /* init is gone (reaped) */
	int init_status;  /* its wait status once dead */
	bool timed_out;
	bool paused;       /* frozen by pause (as recorded when connected) */
	bool cold;         /* paused without memory: no init until resume */
	int64_t deadline_ms; /* CLOCK_MONOTONIC, 0 = none */
	uint32_t next_req;
	uint64_t memory_limit;
	struct abox_proc *active;
	/* OOM kills counted by the cgroup when the running command started:
	 * the count is cumulative, and an end is flagged only for kills
	 * during that command (oom_known: a fresh sandbox counts from 0,
	 * an attached handle reads it at its first command) */
	uint64_t oom_base;
	bool oom_known;
	char **env;            /* the sandbox's env, sent before each command's */
	char *def_user;        /* commands' user when they name none (template); NULL: "user" */
	/* during a checkpoint: init let go of the writable layer's fd and
	 * this copy of it serves snapshots (when has_layer_fd) */
	bool has_layer_fd;
	int layer_fd;
	/* during a checkpoint: a child that re-arms init should we die
	 * before we do (checkpoint.c); its pipe's write end, or -1 */
	int keeper_fd;
	pid_t keeper_pid;
	char *def_cwd;         /* commands' folder when they name none (template); NULL: home */
	int64_t metrics_at_ms; /* previous metrics sample on this handle */
	int64_t created_wall_ms; /* when the sandbox was made (wall clock; 0: unknown) */
	uint64_t metrics_cpu_usec;
};

/* What truncation keeps of one stream: its start, its end, and counts. */
struct trunc_stream {
	uint8_t *head;      /* first bytes, up to head_cap */
	size_t head_len, head_cap;
	uint8_t *tail;      /* ring of the last tail_cap bytes */
	size_t tail_start, tail_len, tail_cap;
	uint64_t bytes, chars;
};

struct abox_proc {
	abox_sandbox *sb;
	struct remote_proc *remote; /* the stream behind a remote process */
	uint32_t req;
	int pid;
	bool ended;
	bool stdin_open;
	/* stdin not yet sent (credit-based, see STDIN_WINDOW) */
	struct proto_outq stdin_q;
	size_t stdin_unacked;
	bool stdin_close_pending;
	/* truncation (threshold 0 = off) */
	uint32_t t_threshold, t_head, t_tail;
	char t_dir[128];
	struct trunc_stream t_out, t_err;
	int exit_code;
	char oom_msg[96]; /* the END's error after an OOM kill (see deliver_end) */
};

/* The remote backend (src/lib/remote/), linked into libabox but not into
 * the static CLI: found through a weak symbol, NULL when absent. A
 * remote process feeds its events to the handle as init's own frames
 * over a socketpair (sb->conn), so dispatch, wait and the caller's poll
 * loop work unchanged. */
struct remote_ops {
	int (*open)(abox_ctx *ctx, const char *url, const char *key, abox_error *err);
	void (*close)(abox_ctx *ctx);
	int (*create)(abox_ctx *ctx, const abox_sandbox_opts *o, abox_sandbox **out, abox_error *err);
	int (*connect)(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err);
	int (*info)(abox_ctx *ctx, const char *id, abox_sandbox_info *out, abox_error *err);
	int (*query)(abox_ctx *ctx, const abox_list_opts *o, abox_sandbox_info **infos, size_t *n, char **next,
		     abox_error *err);
	int (*kill)(abox_sandbox *sb, abox_error *err);
	void (*release)(abox_sandbox *sb);
	int (*set_timeout)(abox_sandbox *sb, uint32_t timeout_ms, abox_error *err);
	int (*pause)(abox_sandbox *sb, uint32_t flags, abox_error *err);
	int (*resume)(abox_sandbox *sb, abox_error *err);
	int (*metrics)(abox_sandbox *sb, abox_metrics *out, abox_error *err);
	int (*snapshot)(abox_sandbox *sb, const char *name, abox_snapshot_info *out, abox_error *err);
	int (*snapshot_list)(abox_ctx *ctx, abox_snapshot_info **out, size_t *n, abox_error *err);
	int (*snapshot_remove)(abox_ctx *ctx, const char *ref, abox_error *err);
	int (*proc_start)(abox_sandbox *sb, const abox_proc_opts *o, abox_proc **out, abox_error *err);
	int (*proc_attach)(abox_sandbox *sb, int pid, const char *tag, abox_proc **out, abox_error *err);
	int (*proc_list)(abox_sandbox *sb, abox_proc_info **out, size_t *n, abox_error *err);
	int (*watch_start)(abox_sandbox *sb, const char *path, const char *user, int recursive, abox_proc **out,
			   abox_error *err);
	int (*fork)(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, abox_sandbox **forks, abox_error *errs,
		    abox_error *err);
	int (*proc_input)(abox_proc *p, const void *buf, size_t len, bool close, abox_error *err);
	int (*proc_signal)(abox_proc *p, int sig, abox_error *err);
	int (*proc_resize)(abox_proc *p, uint16_t rows, uint16_t cols, abox_error *err);
	void (*proc_free)(abox_proc *p);
	int (*truncate_finish)(abox_proc *p, abox_error *err);
	int (*file_read)(abox_sandbox *sb, const char *path, const char *user, abox_data_fn fn, void *ud,
			 uint64_t *size, abox_error *err);
	int (*file_write)(abox_sandbox *sb, const char *path, const char *user, int fd, const void *data, size_t len,
			  uint64_t *size, abox_error *err);
	int (*file_stat)(abox_sandbox *sb, const char *path, const char *user, abox_file_info *out, abox_error *err);
	int (*file_list)(abox_sandbox *sb, const char *path, const char *user, unsigned depth, abox_file_info **out,
			 size_t *n, abox_error *err);
	int (*file_op)(abox_sandbox *sb, const char *method, const char *path, const char *to, const char *user,
		       abox_error *err);
};
const struct remote_ops *remote_backend(void) __attribute__((weak));
/* -EOPNOTSUPP naming the call, for what the protocol does not cover. */
int backend_remote_unsupported(const char *what, abox_error *err);
#define REMOTE_CTX(c) ((c) && (c)->remote_ops)
#define REMOTE_SB(s) ((s) && (s)->remote)

/* truncate.c */
int truncate_setup(abox_proc *p, uint32_t threshold, uint32_t head, uint32_t tail);
void truncate_feed(abox_proc *p, bool is_err, const uint8_t *d, size_t n);
void truncate_free(abox_proc *p);

/* limits of a sandbox created without them */
#define DEFAULT_MEMORY (512ULL << 20)
#define DEFAULT_DISK (1ULL << 30)
#define DEFAULT_PIDS 512
#define DEFAULT_CPU 1000

/* abox_proc_opts.flags bit for the library's own commands (a template's
 * start and readiness commands): in an ephemeral sandbox their end does
 * not end the sandbox. Outside the public ABOX_PROC_* range. */
#define PROC_NOT_ONESHOT (1u << 31)
struct template_meta;
/* Runs the template's start command (if any) in sb and waits for its
 * readiness check; an error means the sandbox must not be handed out. */
int backend_template_start(abox_sandbox *sb, const struct template_meta *m, abox_error *err);
/* Detects the cgroup layout once per context. */
int backend_layout(abox_ctx *ctx, abox_error *err);
/* Whether a sandbox made with flags (ABOX_SANDBOX_*) has its writable
 * layer on a disk of its own (disk/) rather than a tmpfs. */
bool backend_layer_on_disk(uint32_t flags);
/* A new disk of bytes for a writable layer: a detached mount fd for
 * rootfs_plan.disk_fd (disk_new). */
int backend_disk_new(abox_ctx *ctx, uint64_t bytes, abox_error *err);
void backend_log(abox_ctx *ctx, abox_log_level lvl, const char *fmt, ...) _printf_(3, 4);
/* Reaps init if it has exited (non-blocking unless wait is true). */
void backend_reap_init(abox_sandbox *sb, bool wait);
/* Sends a request and waits for its EV_OK (or error): for short control
 * requests on a handle that is not running a process. */
struct sb_state;
/* Create options that rebuild what a record's sandbox was made with:
 * limits, seccomp policy, env, metadata (*meta owns those strings, free
 * with strv_free) and what is left of its timeout. */
int backend_opts_from_record(const struct sb_state *st, abox_sandbox_opts *o, char ***meta, abox_error *err);
/* Closes what a handle holds (socket, pidfd, template lock, runtime
 * folder fd) and frees its strings; the struct itself stays. */
void backend_release(abox_sandbox *sb);
/* abox_sandbox_create with a given id (a cold resume reuses the id);
 * create.c, in phases. */
int backend_create(abox_ctx *ctx, const abox_sandbox_opts *opts, const char *fixed_id, abox_sandbox **out,
		   abox_error *err);
/* abox_sandbox_kill; keep_record: the record stays (a cold pause). */
int backend_kill(abox_sandbox *sb, bool keep_record, abox_error *err);

/* A snapshot chain stacked under a new sandbox (stack.c). */
struct stack {
	int lock;              /* shared snapshot-store lock, held until recorded */
	char **layers;         /* layer folders, newest first */
	char **ids;            /* their snapshot ids, same order */
	struct snap_record top;
	char *root_lower;      /* lowerdir strings for the overlays */
	char *tree_lowers[ROOTFS_MAX_TREES];
};
int stack_open(abox_ctx *ctx, const char *ref, struct stack *s, abox_error *err);
int stack_lowers(struct stack *s, const struct template_info *t, abox_error *err);
void stack_free(struct stack *s);
/* How backend_snapshot makes one. */
#define SNAP_AUTO_REMOVE (1u << 0) /* a fork's or a pause's: removed by gc once unused */
#define SNAP_TAKE_NAME (1u << 1)   /* a name in use moves to this one (the older keeps its id) */
/* abox_sandbox_snapshot; how: SNAP_*; stay_frozen: on success the sandbox
 * is left frozen (a cold pause kills it next, and nothing may change or
 * be accepted in between). */
int backend_snapshot(abox_sandbox *sb, const char *name, uint32_t how, bool stay_frozen,
		     abox_snapshot_info *out, abox_error *err);

/* Freezes recorded before they are made (freeze.c): backend_freeze_mark
 * writes down that this process is about to change the tree's frozen
 * state away from what the record says (the pid and its start time),
 * backend_freeze marks and freezes (or thaws), backend_freeze_settled
 * drops this process's mark once the record and the tree agree again.
 * A mark whose maker died is undone by backend_lock (the sandbox's lock,
 * bounded), backend_freeze_recover (connect, abox_reap) and so gc and a
 * restarted aboxd: the tree is put back as the record says. */
int backend_freeze_mark(abox_sandbox *sb, const char *what, abox_error *err);
int backend_freeze(abox_sandbox *sb, bool frozen, const char *what, abox_error *err);
void backend_freeze_settled(abox_sandbox *sb);
int backend_lock(abox_ctx *ctx, const char *id, abox_error *err);
/* 1 when it undid a dead maker's freeze, 0 when there was none. */
int backend_freeze_recover(abox_ctx *ctx, const char *id);
/* The same whether or not a mark is left (a checkpoint's keeper). */
int backend_freeze_recover_now(abox_ctx *ctx, const char *id);

/* abox_sandbox_pause; pending: recorded as frozen at its deadline, the
 * pause it asked for (to disk, without memory) still to come. */
int backend_pause_warm(abox_sandbox *sb, bool pending, abox_error *err);

/* 0, or -EAGAIN with a message naming the sandbox when it is paused. */
int backend_not_paused(const abox_sandbox *sb, const char *what, abox_error *err);
/* A snapshot with a checkpoint of the processes (memory_snap.c). */
int backend_snapshot_memory(abox_sandbox *sb, const char *name, uint32_t how, abox_snapshot_info *out,
			    abox_error *err);
struct snap_record;
/* A new sandbox with the processes of a memory snapshot (memory_snap.c). */
int backend_create_restored(abox_ctx *ctx, const abox_sandbox_opts *o, const struct snap_record *snap,
			    const char *fixed_id, abox_sandbox **out, abox_error *err);
/* Tells init its new deadline, ms from now (0: none). */
int backend_init_timeout(abox_sandbox *sb, uint64_t ms, const char *what, abox_error *err);
/* The same, and the commands' own timeouts stop (CLOCKS_STOP: the sandbox
 * is about to be frozen) or run again (CLOCKS_RUN). */
int backend_init_clocks(abox_sandbox *sb, uint64_t ms, uint32_t clocks, const char *what, abox_error *err);
struct sb_state;
/* What is left of a recorded deadline at now (wall ms); 0: none, 1: due. */
uint64_t backend_left_ms(const struct sb_state *st, int64_t now);
/* What a resume gives an autoPause sandbox paused at its deadline: with
 * nothing left it would be frozen again before its resumer could set a
 * new timeout (aboxd's connect does, right after). */
#define AUTO_RESUME_MIN_MS 10000
uint64_t backend_resume_left_ms(const struct sb_state *st);
/* The next frame from init (proto_recv), or -EAGAIN with a message when
 * init stays silent because the record says the sandbox is paused. */
int backend_recv(abox_sandbox *sb, struct proto_frame *f, const char *what, abox_error *err);
int backend_call(abox_sandbox *sb, struct proto_msg *m, const char *what,
		 void (*on_ok)(const struct proto_frame *f, void *ud), void *ud, abox_error *err);
/* Queues a request and writes what the socket takes (never blocks). */
int backend_send(abox_sandbox *sb, struct proto_msg *m);

/* path as the files of user see it: "~", "~/x" and relative paths are
 * below the user's home, as in envd; absolute ones as given. buf holds the
 * result when one is made; NULL when it does not fit. */
const char *backend_user_path(const char *user, const char *path, char *buf, size_t n);

#endif
