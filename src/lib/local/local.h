/* local — the local backend's own helpers: what create, kill, pause,
 * snapshots, fork and checkpoints share inside src/lib/local/. Nothing
 * outside src/lib/local/ includes this: the rest of the library reaches
 * the local backend through local_backend_ops (backend.h).
 * Runs in the CLI/daemon. */
#ifndef ABOX_LOCAL_H
#define ABOX_LOCAL_H

#include "spawn/userns.h"
#include "backend.h"
#include "net/config.h"

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
/* Opens sb's cgroups into sb->cg unless the handle has them (one found by
 * id opens them on first use). */
int backend_cgroups(abox_sandbox *sb, abox_error *err);
/* Whether a sandbox made with flags (ABOX_SANDBOX_*) has its writable
 * layer on a disk of its own (disk/) rather than a tmpfs. */
bool backend_layer_on_disk(uint32_t flags);
/* A new disk of bytes for a writable layer: a detached mount fd for
 * rootfs_plan.disk_fd (disk_new). */
int backend_disk_new(abox_ctx *ctx, uint64_t bytes, abox_error *err);
/* Reaps init if it has exited (non-blocking unless wait is true). */
void backend_reap_init(abox_sandbox *sb, bool wait);
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
/* The same with the egress policy of a record (JSON; NULL: opts->net's):
 * a cold resume and forks keep their sandbox's. */
int backend_create_net(abox_ctx *ctx, const abox_sandbox_opts *opts, const char *fixed_id,
		       const char *net_json, abox_sandbox **out, abox_error *err);

/* A sandbox's egress as create makes it (network.c). */
struct net_policy;
struct local_net {
	char id[ABOX_ID_LEN + 1];
	uint32_t slot;
	bool have_slot, sent, attached;
	bool asked; /* a take sent, its answer not read yet */
	bool took; /* a spare was handed out: netd finishes it on conn */
	char *policy_json; /* as recorded */
	int conn; /* to abox-netd, while the attach is under way */
	/* to ask again a netd that had begun to leave when the take came */
	const char *state_dir, *netd_path;
	int64_t prefer;
	char resolv[64]; /* the sandbox's resolv.conf */
	bool relay; /* no veth: netd relays its egress (no CAP_NET_ADMIN) */
	/* a namespace netd made ahead, with its veth (-1: none ready, the
	 * sandbox gets a new one) */
	int netns_fd;
};
/* The page the child and its parent stamp their steps on (NULL when the
 * context has no log), and its lines logged and the page unmapped. */
struct spawn_marks *local_marks_begin(abox_ctx *ctx);
void local_marks_end(abox_ctx *ctx, const char *id, struct spawn_marks *m, uint64_t cloned);
/* The policy of versioned options (NULL: none). */
int local_net_policy(const abox_net_opts *in, struct net_policy *out, abox_error *err);
/* As soon as the sandbox has an id: the slot taken (resumed: the id of a
 * cold resume, which keeps the slot its record names; NULL otherwise),
 * netd reached (started when needed) and asked for a spare namespace. */
int local_net_ask(abox_ctx *ctx, const char *id, const char *resumed, const struct net_policy *p,
		  struct local_net *ln, abox_error *err);
/* Before the clone: netd's answer (the spare, how it gives egress);
 * relayed egress puts the proxy variables before the sandbox's
 * environment (*env, a strv replaced). */
int local_net_answer(struct local_net *ln, char ***env, abox_error *err);
/* spawn_config.net_begin: asks netd to attach the new namespace. */
int local_net_begin(void *ud, int netns_fd, abox_error *err);
/* After the clone: netd's answer. */
int local_net_finish(struct local_net *ln, abox_error *err);
/* A failed create's egress, taken apart. */
void local_net_undo(abox_ctx *ctx, struct local_net *ln);
/* A killed sandbox's (sb->net_policy): elements, flows, slot. */
int local_net_teardown(abox_sandbox *sb, abox_error *err);
/* -EOPNOTSUPP for a memory checkpoint of a sandbox with networking: its
 * interface and flows are the host's, which a checkpoint of its tree
 * cannot carry (yet); the sandbox is left as it was. */
int local_net_no_checkpoint(const char *what, const abox_sandbox *sb, abox_error *err);
/* What this host offers egress (abox-netd --check, and whether it runs). */
void local_net_describe(abox_ctx *ctx, void (*tell)(void *ud, const char *name, bool ok, const char *detail),
			void *ud);
/* Slots whose sandbox nothing speaks for any more, released. */
int local_net_gc(abox_ctx *ctx, bool (*alive)(abox_ctx *ctx, const char *id), unsigned *removed);
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
/* A note "PID START WHAT" naming a process (its start time: a reused pid
 * is not taken for it), written whole (temp file and rename): the freeze
 * marker's, the checkpoint keeper's. 0 or -errno. */
int backend_pid_note(const char *path, pid_t pid, const char *what);
/* 1 when the note at path names a live process (*pid_out: it, what: its
 * word), 0 when that process is gone (or the note is unreadable: written
 * by a maker killed mid-write), -ENOENT when there is none. */
int backend_pid_note_live(const char *path, char *what, size_t n, pid_t *pid_out);
int backend_freeze(abox_sandbox *sb, bool frozen, const char *what, abox_error *err);
void backend_freeze_settled(abox_sandbox *sb);
int backend_lock(abox_ctx *ctx, const char *id, abox_error *err);
/* backend_lock, then the record read into *st: *lock is the caller's to
 * close and *st to free, whatever this returns. */
int backend_lock_read(abox_sandbox *sb, int *lock, struct sb_state *st, abox_error *err);
/* 1 when it undid a dead maker's freeze, 0 when there was none. */
int backend_freeze_recover(abox_ctx *ctx, const char *id);
/* The same whether or not a mark is left (a checkpoint's keeper). */
int backend_freeze_recover_now(abox_ctx *ctx, const char *id);

/* abox_sandbox_pause; pending: recorded as frozen at its deadline, the
 * pause it asked for (to disk, without memory) still to come. */
int backend_pause_warm(abox_sandbox *sb, bool pending, abox_error *err);

/* 0, or -EAGAIN with a message naming the sandbox when it is paused. */
int backend_not_paused(const abox_sandbox *sb, const char *what, abox_error *err);
/* A snapshot with a checkpoint of the processes (checkpoint/memory_snapshot.c). */
int backend_snapshot_memory(abox_sandbox *sb, const char *name, uint32_t how, abox_snapshot_info *out,
			    abox_error *err);
struct snap_record;
/* A new sandbox with the processes of a memory snapshot (checkpoint/memory_snapshot.c). */
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
/* 0 when the handle can ask init something now: the sandbox is not
 * paused, init is reachable and no process runs on the handle; else an
 * error that starts with what. */
int backend_can_ask(const abox_sandbox *sb, const char *what, abox_error *err);
/* Writes out what is queued for init, waiting for room. */
int backend_flush(abox_sandbox *sb, const char *what, abox_error *err);
/* Reads the answer to request id up to its EV_OK (handed to on_ok, which
 * may be NULL). Every other frame of it goes to on_frame, whose error ends
 * the answer: init's refusal, in the request's own terms. Frames of other
 * requests are late answers to requests given up on, and are dropped; the
 * fds any frame carries are closed. Errors start with what; -EAGAIN when
 * the sandbox turned out paused. */
int backend_answer(abox_sandbox *sb, uint32_t id, const char *what,
		   int (*on_frame)(const struct proto_frame *f, const char *what, void *ud, abox_error *err),
		   void (*on_ok)(const struct proto_frame *f, void *ud), void *ud, abox_error *err);
/* Sends a short control request (m is consumed) and waits for its EV_OK:
 * any other frame of its answer is init's refusal (EPROTO). */
int backend_call(abox_sandbox *sb, struct proto_msg *m, const char *what,
		 void (*on_ok)(const struct proto_frame *f, void *ud), void *ud, abox_error *err);
/* Queues a request and writes what the socket takes (never blocks). */
int backend_send(abox_sandbox *sb, struct proto_msg *m);
/* backend_send, also for a request carrying fds (those go out whole,
 * after what is queued, waiting for room); m is consumed. */
int backend_send_fds(abox_sandbox *sb, struct proto_msg *m, const char *what, abox_error *err);

/* path as the files of user see it: "~", "~/x" and relative paths are
 * below the user's home, as in envd; absolute ones as given. buf holds the
 * result when one is made; NULL when it does not fit. */
const char *backend_user_path(const char *user, const char *path, char *buf, size_t n);


/* The entries of local_backend_ops (ops.c), and what local code calls
 * instead of the public API. */
/* autopause.c */
int local_reap(abox_ctx *ctx, uint32_t steps, unsigned *paused, int64_t *next_deadline_ms, abox_error *err);
/* checkpoint/hook.c */
int local_checkpointer_check(abox_ctx *ctx, char **hook_out, char **version, abox_error *err);
/* create.c */
int local_create(abox_ctx *ctx, const abox_sandbox_opts *opts, abox_sandbox **out, abox_error *err);
/* describe.c */
int local_describe(abox_ctx *ctx, abox_host_check_fn fn, void *ud, abox_error *err);
/* disk_layer.c */
int local_spare_disks(abox_ctx *ctx, uint64_t disk_bytes, unsigned count, abox_error *err);
/* files.c */
int local_file_read(abox_sandbox *sb, const char *path, const char *user, abox_data_fn fn, void *ud,
		   uint64_t *size, abox_error *err);
int local_file_write(abox_sandbox *sb, const char *path, const char *user, int fd, const void *data, size_t len,
		     int parents, uint64_t *size, abox_error *err);
int local_file_stat(abox_sandbox *sb, const char *path, const char *user, abox_file_info *out, abox_error *err);
int local_file_list(abox_sandbox *sb, const char *path, const char *user, unsigned depth, abox_file_entry_fn fn,
		    void *userdata, abox_error *err);
int local_file_mkdir(abox_sandbox *sb, const char *path, const char *user, int *made, abox_error *err);
int local_file_move(abox_sandbox *sb, const char *from, const char *to, const char *user, abox_error *err);
int local_file_remove(abox_sandbox *sb, const char *path, const char *user, abox_error *err);
int local_watch_start(abox_sandbox *sb, const char *path, const char *user, int recursive, abox_watch *w,
		      abox_error *err);
int local_watch_stop(abox_watch *w, bool answer, abox_error *err);
int local_file_meta_set(abox_sandbox *sb, const char *path, const char *user, const char *const *kv, size_t n,
		       abox_error *err);
int local_file_meta_get(abox_sandbox *sb, const char *const *paths, size_t n, const char *user, abox_meta_fn fn,
		       void *userdata, abox_error *err);
int local_accounts_read(abox_sandbox *sb, abox_accounts **out, abox_error *err);
/* fork.c */
int local_fork(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, uint32_t flags,
			    abox_sandbox **forks, abox_error *errs, abox_error *err);
/* gc.c */
int local_gc(abox_ctx *ctx, bool maybe, unsigned *removed, abox_error *err);
/* kill.c */
int local_kill(abox_sandbox *sb, abox_error *err);
void local_release(abox_sandbox *sb);
void local_free(abox_sandbox *sb);
/* link.c */
void local_link_lost(abox_sandbox *sb);
/* pause.c */
int local_resume(abox_sandbox *sb, abox_error *err);
int local_pause(abox_sandbox *sb, uint32_t flags, abox_error *err);
/* proc.c */
int local_proc_start(abox_sandbox *sb, const abox_proc_opts *opts, abox_proc **out, abox_error *err);
bool local_deadline_due(abox_sandbox *sb);
int local_proc_resize(abox_proc *p, uint16_t rows, uint16_t cols, abox_error *err);
int local_proc_signal(abox_proc *p, int sig, abox_error *err);
int local_proc_input(abox_proc *p, const void *buf, size_t len, bool close, abox_error *err);
void local_proc_stdin_ack(abox_proc *p);
int local_proc_attach(abox_sandbox *sb, int pid, const char *tag, abox_proc **out, abox_error *err);
int local_proc_list(abox_sandbox *sb, abox_proc_info **out, size_t *n, abox_error *err);
/* registry.c */
int local_list(abox_ctx *ctx, char ***ids, abox_error *err);
int local_info(abox_ctx *ctx, const char *id, abox_sandbox_info *out, abox_error *err);
int local_connect(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err);
/* local_connect that never waits for a checkpoint's keeper (for callers
 * that hold the sandbox's lock, which the keeper may need, and for the
 * keeper itself). */
int local_connect_now(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err);
/* local_connect that also gives a handle on a sandbox whose init is gone
 * (sb->dead: it can only be killed, which removes what it left). */
int local_connect_any(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err);
/* start.c */
int local_start(abox_sandbox *sb, int *pid, abox_error *err);
int local_remove(abox_ctx *ctx, const char *id, abox_error *err);
int local_proc_start_oci(abox_sandbox *sb, const char *process_json, const int stdio[3], int *console,
			 abox_proc **out, abox_error *err);
int local_query(abox_ctx *ctx, const abox_list_opts *opts, abox_sandbox_info **infos, size_t *n,
		       char **next, abox_error *err);
/* network.c */
int local_set_network(abox_sandbox *sb, const abox_net_opts *net, abox_error *err);
int local_network(abox_ctx *ctx, const char *id, abox_net_info *out, abox_error *err);
int local_net_totals(abox_ctx *ctx, abox_net_totals *out, abox_error *err);
/* sandbox.c */
int local_remove_cgroup_parent(abox_ctx *ctx, abox_error *err);
int local_set_limits(abox_sandbox *sb, const abox_limits *l, abox_error *err);
int local_set_timeout(abox_sandbox *sb, uint32_t timeout_ms, abox_error *err);
int local_oom_kills(abox_sandbox *sb, uint64_t *out, abox_error *err);
int local_metrics(abox_sandbox *sb, abox_metrics *out, abox_error *err);
/* snapshot.c */
int local_snapshot(abox_sandbox *sb, const char *name, uint32_t flags, abox_snapshot_info *out, abox_error *err);
int local_snapshot_list(abox_ctx *ctx, abox_snapshot_info **out, size_t *n, abox_error *err);
int local_snapshot_remove(abox_ctx *ctx, const char *ref, bool forget, abox_error *err);
/* template.c */
int local_template_pull(abox_ctx *ctx, const char *name, const char *ref, const abox_template_opts *opts,
			const abox_pull_opts *pull, abox_error *err);
int local_template_build(abox_ctx *ctx, const char *name, const char *recipe, const abox_template_opts *opts,
			abox_error *err);
int local_template_import(abox_ctx *ctx, const char *name, const char *source, const abox_template_opts *opts,
			  abox_error *err);
int local_template_inspect(abox_ctx *ctx, const char *name, abox_template_info *out, abox_error *err);
int local_template_list(abox_ctx *ctx, char ***names, abox_error *err);
int local_template_remove(abox_ctx *ctx, const char *name, abox_error *err);
int local_template_copy(abox_ctx *ctx, const char *src, const char *dst, abox_error *err);

/* extras.c: the folder of abox's own files every sandbox gets as a lower
 * layer (its usr/bin/sudo), made on first use; NULL when abox-sudo is not
 * installed (sandboxes then have no sudo). local_lower_with: a lowerdir
 * list with extra put just above its last (bottom) layer, malloc'd. */
const char *local_extras(abox_ctx *ctx);
char *local_lower_with(const char *lowers, const char *extra);
/* Puts the extras into plan's lowers (the host's /usr tree, or the root);
 * *owned: the new string the plan now points at (caller frees). */
struct rootfs_plan;
int local_extras_apply(abox_ctx *ctx, struct rootfs_plan *plan, char **owned, abox_error *err);

/* create_opts.c: the options of a new sandbox, checked (the error names
 * the option); the kernel's version as major * 1000 + minor. */
int local_create_opts_check(const abox_sandbox_opts *o, abox_error *err);
unsigned local_kernel_version(void);

/* identity.c: the sandbox's own user namespace on a range of host ids
 * from the pool (j->base), begun at the start of a create so that the
 * kernel makes it meanwhile, unless flags or userns.json say none (then
 * j->pid is -1). The range is recorded under id; the caller gives it back
 * (uidpool_give) when the sandbox never runs. finish: an fd on it, or -1
 * when none was begun, or -errno. */
int local_userns_begin(abox_ctx *ctx, const char *id, uint32_t flags, struct userns_job *j, abox_error *err);
int local_userns_finish(abox_ctx *ctx, struct userns_job *j, abox_error *err);
/* Whether sandboxes here can have a user namespace at all: the kernel
 * makes one, and the state folder (or where it will be) and /usr, where
 * their layers come from, can be mounted idmapped. 0, or -errno with why
 * saying what fails. Unless fresh, a success is the one of an earlier
 * probe since boot for the same two filesystems (kept in the runtime
 * folder); a failure is never kept. */
int local_userns_probe(abox_ctx *ctx, bool fresh, abox_error *why);
/* The refusal of a memory checkpoint (what: "pause --to-disk", ...) of a
 * sandbox with a user namespace. */
int local_userns_no_checkpoint(const char *what, const abox_sandbox *sb, abox_error *err);
/* checkpoint/hook.c: when a checkpoint's keeper runs for sandbox id (its
 * init let go of its socket for a checkpoint), waits until it ends, at
 * most lock_timeout_ms(): true when it ended (init re-armed, or the tree
 * paused to disk), false when there was none to wait for. */
bool local_keeper_wait(abox_ctx *ctx, const char *id);

#endif
