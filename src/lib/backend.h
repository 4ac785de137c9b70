/* backend — the objects behind the public handles and the table of what
 * a backend does (struct abox_backend_ops), shared by src/lib/api/,
 * src/lib/local/ and src/lib/remote/, and what they all use of the
 * handles (src/lib/handle/). Runs in the caller's process. */
#ifndef ABOX_BACKEND_H
#define ABOX_BACKEND_H

#include <abox/abox.h>

#include "base/accounts.h"
#include "base/base.h"
#include "base/clock.h"
#include "cgroup/cgroup.h"
#include "proto/proto.h"
#include "layer/layer.h"
#include "layer/snapshot.h"

struct abox_backend_ops;
struct remote;

struct abox_ctx {
	/* local_backend_ops, or the remote backend's when the context talks
	 * to an aboxd (then remote holds its connection: remote/remote.h) */
	const struct abox_backend_ops *be;
	struct remote *remote;
	char *state_dir;
	char *runtime_dir;
	char *init_path;
	char *unpack_path;     /* abox-unpack, or NULL when not found */
	char *pull_path; /* abox-pull, or NULL when not found */
	char *netd_path; /* abox-netd, or NULL when not found */
	char *sudo_path; /* abox-sudo (sandboxes' sudo), or NULL when not found */
	char *extras_dir; /* the layer of abox's own files every sandbox gets (local/extras.c), once made */
	char *default_policy;
	abox_log_fn log;
	abox_log_level log_max; /* 0: every level */
	void *log_userdata;
	struct cg_layout cg;
	bool cg_ready;
	char *cgroup_parent; /* abox_ctx_opts' (version 4), or NULL */
	bool cgroup_parent_own; /* ABOX_CGROUP_PARENT_OWN (version 5) */
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
	 * before we do (checkpoint/hook.c); its pipe's write end, or -1 */
	int keeper_fd;
	pid_t keeper_pid;
	char *def_cwd;         /* commands' folder when they name none (template); NULL: home */
	int64_t metrics_at_ms; /* previous metrics sample on this handle */
	int64_t created_wall_ms; /* when the sandbox was made (wall clock; 0: unknown) */
	char *net_policy; /* its egress policy (JSON), NULL: loopback only */
	uint32_t net_slot; /* with net_policy: its slot of the address pool */
	uint32_t id_base; /* with a user namespace: its first host id (store/uidpool.h), else 0 */
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

/* What a backend does: every public call that acts on a context, a
 * sandbox or a process is checked in src/lib/api/ and then lands here,
 * so neither backend tests which one it is. The local backend
 * (src/lib/local/) fills every entry; the remote one (src/lib/remote/)
 * leaves NULL what aboxd's API does not carry, and the API then answers
 * EOPNOTSUPP naming the call. A remote process feeds its events to the
 * handle as init's own frames over a socketpair (sb->conn), so dispatch,
 * wait and the caller's poll loop (handle/events.c) are one for both. */
struct abox_backend_ops {
	const char *name; /* in refusals: "a remote abox" */
	/* the context */
	int (*open)(abox_ctx *ctx, const char *url, const char *key, abox_error *err);
	void (*close)(abox_ctx *ctx);
	int (*describe)(abox_ctx *ctx, abox_host_check_fn fn, void *ud, abox_error *err);
	/* maybe: only when the last gc is more than a few seconds old */
	int (*gc)(abox_ctx *ctx, bool maybe, unsigned *removed, abox_error *err);
	int (*reap)(abox_ctx *ctx, uint32_t steps, unsigned *paused, int64_t *next_deadline_ms, abox_error *err);
	int (*spare_disks)(abox_ctx *ctx, uint64_t disk_bytes, unsigned count, abox_error *err);
	int (*checkpointer_check)(abox_ctx *ctx, char **hook, char **version, abox_error *err);
	/* sandboxes */
	int (*create)(abox_ctx *ctx, const abox_sandbox_opts *o, abox_sandbox **out, abox_error *err);
	int (*connect)(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err);
	int (*start)(abox_sandbox *sb, int *pid, abox_error *err);
	int (*remove)(abox_ctx *ctx, const char *id, abox_error *err);
	int (*info)(abox_ctx *ctx, const char *id, abox_sandbox_info *out, abox_error *err);
	int (*list)(abox_ctx *ctx, char ***ids, abox_error *err);
	int (*query)(abox_ctx *ctx, const abox_list_opts *o, abox_sandbox_info **infos, size_t *n, char **next,
		     abox_error *err);
	int (*kill)(abox_sandbox *sb, abox_error *err);
	/* what the handle holds, closed (an ephemeral sandbox ends with it);
	 * the struct itself is freed by the caller */
	void (*release)(abox_sandbox *sb);
	int (*set_timeout)(abox_sandbox *sb, uint32_t timeout_ms, abox_error *err);
	int (*set_limits)(abox_sandbox *sb, const abox_limits *l, abox_error *err);
	int (*remove_cgroup_parent)(abox_ctx *ctx, abox_error *err);
	int (*oom_kills)(abox_sandbox *sb, uint64_t *out, abox_error *err);
	int (*set_network)(abox_sandbox *sb, const abox_net_opts *net, abox_error *err);
	int (*network)(abox_ctx *ctx, const char *id, abox_net_info *out, abox_error *err);
	int (*net_totals)(abox_ctx *ctx, abox_net_totals *out, abox_error *err);
	int (*pause)(abox_sandbox *sb, uint32_t flags, abox_error *err);
	int (*resume)(abox_sandbox *sb, abox_error *err);
	int (*metrics)(abox_sandbox *sb, abox_metrics *out, abox_error *err);
	int (*snapshot)(abox_sandbox *sb, const char *name, uint32_t flags, abox_snapshot_info *out, abox_error *err);
	int (*fork)(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, uint32_t flags, abox_sandbox **forks,
		    abox_error *errs, abox_error *err);
	/* snapshots; forget: its layers go once no sandbox uses them */
	int (*snapshot_list)(abox_ctx *ctx, abox_snapshot_info **out, size_t *n, abox_error *err);
	int (*snapshot_remove)(abox_ctx *ctx, const char *ref, bool forget, abox_error *err);
	/* templates */
	int (*template_build)(abox_ctx *ctx, const char *name, const char *recipe, const abox_template_opts *o,
			      abox_error *err);
	int (*template_import)(abox_ctx *ctx, const char *name, const char *source, const abox_template_opts *o,
			       abox_error *err);
	int (*template_dockerfile)(abox_ctx *ctx, const char *name, const char *dockerfile,
				   const abox_template_opts *o, const abox_dockerfile_opts *df,
				   abox_error *err);
	int (*template_pull)(abox_ctx *ctx, const char *name, const char *ref, const abox_template_opts *o,
			     const abox_pull_opts *p, abox_error *err);
	int (*template_inspect)(abox_ctx *ctx, const char *name, abox_template_info *out, abox_error *err);
	int (*template_list)(abox_ctx *ctx, char ***names, abox_error *err);
	int (*template_remove)(abox_ctx *ctx, const char *name, abox_error *err);
	int (*template_copy)(abox_ctx *ctx, const char *src, const char *dst, abox_error *err);
	/* processes */
	int (*proc_start)(abox_sandbox *sb, const abox_proc_opts *o, abox_proc **out, abox_error *err);
	int (*proc_start_oci)(abox_sandbox *sb, const char *process_json, const int stdio[3], int *console,
			      abox_proc **out, abox_error *err);
	int (*proc_attach)(abox_sandbox *sb, int pid, const char *tag, abox_proc **out, abox_error *err);
	int (*proc_list)(abox_sandbox *sb, abox_proc_info **out, size_t *n, abox_error *err);
	int (*proc_input)(abox_proc *p, const void *buf, size_t len, bool close, abox_error *err);
	int (*proc_signal)(abox_proc *p, int sig, abox_error *err);
	int (*proc_resize)(abox_proc *p, uint16_t rows, uint16_t cols, abox_error *err);
	/* what the backend holds for p (the caller frees p) */
	void (*proc_free)(abox_proc *p);
	/* the handle passed its deadline: true when it still holds (another
	 * process may have paused the sandbox or moved it; NULL: it holds) */
	bool (*deadline_due)(abox_sandbox *sb);
	/* the link to init closed without an end: reap it (NULL: not ours) */
	void (*link_lost)(abox_sandbox *sb);
	/* init took stdin bytes: send what waits (NULL: no credit scheme) */
	void (*proc_stdin_ack)(abox_proc *p);
	/* after END of a process started with truncation: its complete
	 * output written into the sandbox (NULL: init did it) */
	int (*truncate_finish)(abox_proc *p, abox_error *err);
	/* files; write: from fd when fd >= 0, else from data */
	int (*file_read)(abox_sandbox *sb, const char *path, const char *user, abox_data_fn fn, void *ud,
			 uint64_t *size, abox_error *err);
	int (*file_write)(abox_sandbox *sb, const char *path, const char *user, int fd, const void *data, size_t len,
			  int parents, uint64_t *size, abox_error *err);
	int (*file_stat)(abox_sandbox *sb, const char *path, const char *user, abox_file_info *out, abox_error *err);
	int (*file_list)(abox_sandbox *sb, const char *path, const char *user, unsigned depth,
			 int (*fn)(const abox_file_info *e, void *ud), void *ud, abox_error *err);
	int (*file_mkdir)(abox_sandbox *sb, const char *path, const char *user, int *made, abox_error *err);
	int (*file_move)(abox_sandbox *sb, const char *from, const char *to, const char *user, abox_error *err);
	int (*file_remove)(abox_sandbox *sb, const char *path, const char *user, abox_error *err);
	int (*file_meta_set)(abox_sandbox *sb, const char *path, const char *user, const char *const *kv, size_t n,
			     abox_error *err);
	int (*file_meta_get)(abox_sandbox *sb, const char *const *paths, size_t n, const char *user, abox_meta_fn fn,
			     void *ud, abox_error *err);
	int (*accounts_read)(abox_sandbox *sb, abox_accounts **out, abox_error *err);
	/* a watch: w->sb set; fills w->id (and w->stream) */
	int (*watch_start)(abox_sandbox *sb, const char *path, const char *user, int recursive, abox_watch *w,
			   abox_error *err);
	/* ends it; answer: wait for init to confirm */
	int (*watch_stop)(abox_watch *w, bool answer, abox_error *err);
};

/* A watch on either backend: its events arrive on sb->conn as init's
 * MSG_EV_FS_EVENT frames with request id id. */
struct abox_watch {
	abox_sandbox *sb;
	uint32_t id;
	bool gone;         /* the sandbox went away */
	abox_proc *stream; /* remote: the WatchDir stream feeding sb->conn */
};

/* A sandbox's /etc/passwd and /etc/group as init read them. */
struct abox_accounts {
	char *passwd, *group;
	size_t passwd_len, group_len;
	struct acct_user last; /* what abox_accounts_user's *home points into */
};

extern const struct abox_backend_ops local_backend_ops;
/* The remote backend is linked into libabox but not into the static CLI:
 * found through a weak symbol, NULL when absent. */
const struct abox_backend_ops *remote_backend(void) __attribute__((weak));
/* -EOPNOTSUPP naming the call and the backend, for an entry it leaves NULL. */
int backend_unsupported(const abox_ctx *ctx, const char *what, abox_error *err);

/* What abox_proc_free does: the backend's part, then the handle's
 * (handle/handle.c); for the library's own handles. */
void proc_handle_free(abox_proc *p);

/* The events of a process handle, whichever backend (handle/events.c). */
int events_dispatch(abox_proc *p, abox_event_fn fn, void *ud, abox_error *err);
int events_wait(abox_proc *p, int timeout_ms, abox_event_fn fn, void *ud, abox_error *err);
bool events_buffered(const abox_proc *p);
int events_poll_mask(const abox_proc *p);

/* A debug line to the context's log callback (handle/handle.c). */
void backend_log(abox_ctx *ctx, abox_log_level lvl, const char *fmt, ...) _printf_(3, 4);
/* Whether debug messages reach the caller's log (the timings made only
 * for them are skipped otherwise). */
static inline bool backend_debug(const abox_ctx *ctx)
{
	return ctx->log && (!ctx->log_max || ctx->log_max >= ABOX_LOG_DEBUG);
}

/* Output truncation of a process handle, whichever backend (handle/output.c). */
int truncate_setup(abox_proc *p, uint32_t threshold, uint32_t head, uint32_t tail);
void truncate_feed(abox_proc *p, bool is_err, const uint8_t *d, size_t n);
void truncate_free(abox_proc *p);
/* One stream as the caller's result shows it (head, marker, tail), or
 * NULL (no memory); *len its length. */
char *truncate_render(const abox_proc *p, const struct trunc_stream *s, const char *file, bool cut,
		      size_t *len);

#endif
