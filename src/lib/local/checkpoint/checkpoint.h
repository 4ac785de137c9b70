/* local/checkpoint — memory checkpoints of a sandbox through a
 * CRIU-compatible checkpoint hook (see checkpoint/hook.c). */
#ifndef ABOX_BACKEND_CHECKPOINT_H
#define ABOX_BACKEND_CHECKPOINT_H

#include "local/local.h"
#include "layer/layer.h"
#include "store/state.h"

/* The checkpointer: $ABOX_CHECKPOINTER, else the path in
 * <state>/checkpointer (written by scripts/criu-setup.sh), else criu in
 * the usual places, when its trial passes (checkpointer_trial). NULL when
 * there is none that works. malloc'd. */
char *checkpointer_find(abox_ctx *ctx);
/* Whether hook can checkpoint on this kernel: a dump of a process of our
 * own, under a time limit, the verdict kept in <state>/checkpointer-trial
 * for that checkpointer and kernel. -EOPNOTSUPP with the cause when not. */
int checkpointer_trial(abox_ctx *ctx, const char *hook, abox_error *err);
/* The environment a dump or a restore runs with: ours, plus CRIU_FAULT=130
 * (CRIU's "no breakpoints") unless set already. Virtual machines that keep
 * debug registers from their guests (Firecracker among them) never deliver
 * the hardware breakpoint CRIU sets to catch the end of its parasite code,
 * and every dump waits for ever; with 130 it steps there with
 * PTRACE_SYSCALL instead, which works everywhere for a few system-call
 * stops more. A malloc'd array of our strings (free() it, not them), or
 * NULL without memory; made before a fork whose child execs. */
char **checkpointer_environ(void);
/* How long one run of the checkpointer may take ($ABOX_CHECKPOINT_TIMEOUT_S,
 * default 600 s). */
int checkpointer_timeout_ms(void);

/* A checkpoint in steps: checkpoint_begin asks init to let go of its host
 * fds (sb->layer_fd keeps the writable layer for the caller) and freezes
 * the tree; the caller copies the files; checkpoint_dump has the hook
 * dump the frozen tree into dir (created). Failing after begin, both thaw
 * the tree and re-arm init (checkpoint_abort), so it runs on as before.
 * *token: what the dumped init waits for when restored (malloc'd). */
int checkpoint_begin(abox_sandbox *sb, char **token, abox_error *err);
/* What is left of the tree after a dump that worked. */
enum dump_end {
	DUMP_RUNNING, /* thawed, init re-armed: it goes on (a memory snapshot) */
	DUMP_FROZEN,  /* frozen and deaf as the dump found it: the caller records the
	               * dump, then ends the tree (pause to disk; were the hook to end
	               * it, a caller killed before its record is written would lose
	               * the sandbox) */
};
int checkpoint_dump(abox_sandbox *sb, const char *hook, const char *dir, const struct template_info *tmpl,
		    const char *token, enum dump_end end, abox_error *err);
void checkpoint_abort(abox_sandbox *sb, const char *token);
/* The caller is done with the checkpoint begun on sb (init re-armed, or
 * the tree dumped and gone): its keeper is told and reaped. */
void checkpoint_end(abox_sandbox *sb);

/* A checkpoint of a running sandbox under way (session.c), as a pause to
 * disk and a snapshot with memory take it. */
struct checkpoint_session {
	abox_sandbox *sb;
	const char *what; /* "pause", "snapshot": in messages and requests */
	int lock; /* the sandbox's, held throughout */
	struct sb_state st; /* its record as found */
	struct template_info tmpl; /* the template version its files stand on */
	char *token; /* what the dumped init waits for */
	int64_t now; /* when the checkpoint started (wall ms) */
	uint64_t left; /* of the deadline then (0: none) */
	bool was_paused; /* frozen when found */
	bool thawed; /* ...and thawed for init to answer: frozen again after */
	bool timer_cleared; /* init's timer was stopped: set again after */
};
/* Locks sb and reads its record into s->st for the caller to check. On
 * success s is the caller's to close (checkpoint_session_close); on
 * failure it holds nothing. */
int checkpoint_session_open(struct checkpoint_session *s, abox_sandbox *sb, const char *what,
			    abox_error *err);
/* Opens the cgroups and the template version, thaws a paused tree, stops
 * init's timer, then checkpoint_begin and the files kept as a snapshot
 * (backend_snapshot with name and how, left frozen) into *snap. A failure
 * once the tree was touched wants checkpoint_session_restore. */
int checkpoint_session_start(struct checkpoint_session *s, const char *name, uint32_t how,
			     abox_snapshot_info *snap, abox_error *err);
/* The tree as the session found it, for a tree that runs on (a dump that
 * failed, or one that left it running): init's timer set again, frozen
 * again when it was paused. */
void checkpoint_session_restore(struct checkpoint_session *s);
/* Lets go of what the session holds: the checkpoint (checkpoint_end), the
 * freeze mark, the layer fd, the template, the record and the lock. */
void checkpoint_session_close(struct checkpoint_session *s);

/* Restores a sandbox recorded in st from checkpoint images (read only:
 * one checkpoint restores any number of times) under id, the hook's log
 * and pid file in workdir: cgroups, runtime folder, root on the recorded layers, the
 * hook's restore, init re-armed. Returns the restored init. */
struct restored {
	pid_t pid;
	uint64_t pid_start;
	char *cgroups; /* the cgroup folders (as recorded) */
};
int checkpoint_restore(abox_ctx *ctx, const struct sb_state *st, const char *hook, const char *images,
		       const char *workdir, const char *id, const char *token, struct restored *out, abox_error *err);

/* For checkpoint/hook.c and checkpoint/restore.c */
void checkpoint_log_tail(const char *log, char *out, size_t n);
int checkpoint_run_hook(const char *hook, const char **argv, const char *log, const char *what, abox_error *err);
/* cmds_fd: the commands' cgroup for init (cgroup_cmds_fd), or -1 */
int checkpoint_rearm(pid_t init_pid, int pidfd, const char *token, int listen_fd, int layer_fd, int cmds_fd,
		     abox_error *err);
/* A hook's command line, argv[0] its path. */
struct checkpoint_argv {
	const char *v[48];
	int n;
	char ext[ROOTFS_MAX_TREES][600];
};
/* Starts a dump's or a restore's command line (rundir: where the restored
 * tree's trees are mounted) with what both sides of a checkpoint must say
 * alike; the caller adds its own options and the closing NULL. */
void checkpoint_hook_args(struct checkpoint_argv *a, const char *hook, bool restore, const char *dir,
			  const char *log, const struct template_info *t, const char *rundir);

/* The verbs (pause.c calls them). */
int backend_pause_to_disk(abox_sandbox *sb, abox_error *err);
int backend_resume_from_disk(abox_sandbox *sb, abox_error *err);

#endif
