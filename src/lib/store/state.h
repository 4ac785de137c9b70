/* store/state — the record of a long-lived sandbox in the state folder:
 * <state_dir>/sandboxes/<id>/state.json, written atomically (temp file,
 * fsync, rename), plus a lock file that serializes changes (kill, timeout).
 *
 * Liveness is never taken from the record alone: a sandbox is running only
 * when its init's pid still exists *and* has the start time recorded at
 * create, so a reused pid is never mistaken for a sandbox.
 * Runs in the CLI/daemon. */
#ifndef ABOX_STORE_STATE_H
#define ABOX_STORE_STATE_H

#include <stdint.h>
#include <sys/types.h>

#include "base/base.h"

#define STATE_MAX_META 64

struct sb_state {
	char id[ABOX_ID_LEN + 1];
	pid_t pid;            /* init, in the host's pid namespace */
	uint64_t pid_start;   /* its start time (clock ticks since boot) */
	int64_t created_ms;   /* wall clock */
	int64_t deadline_ms;  /* wall clock; 0 = none */
	int64_t paused_ms;    /* wall clock when paused; 0 = not paused */
	bool cold;            /* paused without memory: no processes, files kept in snapshots[0] */
	bool auto_pause;      /* the deadline pauses it (abox_reap), init does not enforce it */
	bool tmpfs_layer;     /* its writable layer is a tmpfs (asked for), not a disk */
	bool auto_no_memory;  /* ... keeping its files only (autoPauseMemory false) */
	bool auto_pending;    /* frozen at its deadline, the pause it asked for still to come */
	char *template_name;
	char *template_root;  /* the version in use */
	char *cgroups;        /* the sandbox's cgroup folders, one per line */
	uint64_t memory_bytes, disk_bytes, pids;
	uint32_t cpu_millis;
	char **env;           /* "K=V" for every command, NULL-terminated, or NULL */
	char *seccomp_policy; /* a custom policy's absolute path; NULL = the default */
	char *user;           /* default user of commands (from the template); NULL = "user" */
	char *workdir;        /* default working folder (from the template); NULL = the user's home */
	char *checkpoint;     /* paused to disk: the folder of its memory checkpoint, else NULL */
	char *checkpoint_token; /* the token its checkpointed init waits to be re-armed with */
	char **snapshots;     /* ids of the snapshot chain it stands on, newest first, or NULL */
	char *net_policy; /* its egress policy (net/policy.h JSON), NULL: loopback only */
	uint32_t net_slot; /* with net_policy: its slot of the address pool (net/slots.h) */
	uint32_t id_base; /* with a user namespace: its first host id (store/uidpool.h), else 0 */
	bool no_sudo; /* made without sudo inside (ABOX_SANDBOX_NO_SUDO) */
	char *meta_keys[STATE_MAX_META];
	char *meta_values[STATE_MAX_META];
	unsigned nmeta;
};

enum sb_status { SB_RUNNING = 0, SB_DEAD = 1, SB_PAUSED = 2 };

int state_write(const char *state_dir, const struct sb_state *s, abox_error *err);
/* durable=false skips the fsync: only for changes that cannot matter
 * after a power loss (the frozen state of processes that die with it). */
int state_write_ex(const char *state_dir, const struct sb_state *s, bool durable, abox_error *err);
/* -ENOENT (with a message naming the id) when there is no such sandbox. */
int state_read(const char *state_dir, const char *id, struct sb_state *s, abox_error *err);
int state_remove(const char *state_dir, const char *id);
void sb_state_free(struct sb_state *s);
/* Start time of pid from /proc/<pid>/stat; -ESRCH when there is no such
 * process or it has exited (a zombie). */
int proc_start_time(pid_t pid, uint64_t *out);
enum sb_status state_status(const struct sb_state *s);
/* Ids of every recorded sandbox (malloc'd NULL-terminated list). */
int state_list(const char *state_dir, char ***ids, abox_error *err);
/* Takes the sandbox's change lock, waiting at most lock_timeout_ms()
 * (then -ETIMEDOUT naming the holder's pid). Returns the fd to close. */
int state_lock(const char *state_dir, const char *id, abox_error *err);
/* state_lock without waiting: -EWOULDBLOCK while someone holds it (gc
 * leaves a sandbox alone while anyone works on it). */
int state_trylock(const char *state_dir, const char *id);
/* Marks fd (from state_lock) as held by this thread until called with -1:
 * state_lock of the same sandbox then re-enters instead of waiting. */
void state_lock_hold(int fd, const char *state_dir, const char *id);
/* Whether this thread holds the lock of sandbox id (state_lock_hold). */
bool state_lock_is_held(const char *state_dir, const char *id);

#endif
