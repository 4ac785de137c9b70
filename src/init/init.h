/* abox-init internals shared by all of its parts: the event loop (main.c,
 * requests.c, clients.c, procs.c, output.c, stdin.c, exec.c,
 * checkpoint.c; their tables are tables.h),
 * starting processes (child.c), files, metadata, watches and users.
 * Runs only inside the sandbox, as its PID 1. */
#ifndef ABOX_INIT_H
#define ABOX_INIT_H

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include <abox/error.h>

#include "proto/proto.h"

#define INIT_MAX_CLIENTS 256

/* clients.c, for the other parts of init */
void init_queue(int ci, struct proto_msg *m);
void init_send_error(int ci, uint32_t id, int code, const char *msg);
/* Writes a client's queue out until it is small again (bounded wait). */
int init_flush_blocking(int ci);

/* watch.c */
#include <poll.h>
struct init_ident;
void watch_start(int ci, const struct proto_frame *f, const char *path, const struct init_ident *id, bool recursive);
void watch_stop(int ci, uint32_t id);
void watch_client_gone(int ci);
void watch_client_moved(int from, int to);
unsigned watch_pollfds(struct pollfd *pfd); /* fills WATCHES_MAX entries */
void watch_ready(const struct pollfd *pfd);

/* meta.c: MSG_REQ_FS_META_GET and _SET */
void meta_handle(int ci, const struct proto_frame *f);

/* files.c */
void files_handle(int ci, const struct proto_frame *f);
void files_client_gone(int ci);
void files_client_moved(int from, int to);

/* Who a request runs as (users.c). */
#define INIT_MAX_GROUPS 64
/* the most fds an OCI container's process is given beyond stdio */
#define INIT_OCI_MAX_FDS 256
struct init_ident {
	uid_t uid;
	gid_t gid;
	unsigned ngroups; /* supplementary groups, the primary among them */
	gid_t groups[INIT_MAX_GROUPS];
	char home[1025];
};

struct exec_req {
	char **argv;
	char **env;
	char *cwd;
	char *home;
	char *user;
	char *tag;
	char *tee_dir; /* keep the complete output here (truncation) */
	char *apparmor; /* F_APPARMOR: the profile its exec enters, or NULL */
	unsigned pty_rows, pty_cols; /* a terminal of this size, or 0 */
	uint32_t timeout_ms;         /* kill its group this long after the start, or 0 */
	uid_t uid;
	gid_t gid;
	unsigned ngroups;
	gid_t groups[INIT_MAX_GROUPS];
	uint32_t flags;
	uint32_t umask; /* 0x1000 | mask when one was asked for, else 0 */
	bool has_oom; /* F_OOM_ADJ: oom_adj is the process's oom_score_adj, else 0 */
	int oom_adj;
	bool has_caps; /* F_CAPS: caps is the process's bounding set */
	uint64_t caps;
	uint64_t caps_inh, caps_amb; /* F_CAPS_INH, F_CAPS_AMB (0: none) */
	bool nnp; /* F_NNP: no_new_privs set for it (init's own is inherited anyway) */
	uint64_t *filter; /* F_SECCOMP: a BPF program (struct sock_filter, 8 bytes each),
			   * installed last, before the exec */
	unsigned short filter_len;
	unsigned nrlimits; /* set in the child before its exec */
	struct {
		int resource;
		uint64_t soft, hard;
	} rlimits[16];
};

/* exec_req.flags that only init sets (never taken from a request): go to
 * the folder before becoming the user, as sudo does (a caller in a
 * folder the target user may not enter still runs the command there) */
#define EXEC_CWD_FIRST (1u << 30)

struct exec_fds {
	int in;  /* write end of the stdin pipe, or -1 */
	int out; /* read end of stdout */
	int err; /* read end of stderr */
	int ep;  /* read end of the exec-error pipe (non-blocking) */
	bool stalled; /* it did not reach its exec in time and was killed */
};

/* watchdog.c: how long a child may take from its start to its exec before
 * it is killed (it shares init's memory and init waits for it meanwhile). */
#define SPAWN_LIMIT_MS 2000
/* Before a start: arms the timer (starting the watchdog thread if it is
 * not there) and returns where clone is to write the child's pid
 * (CLONE_PARENT_SETTID); NULL when there can be no watchdog here (then
 * the command is to be forked). */
pid_t *watchdog_arm(void);
/* After it: disarms; true when the watchdog had to kill that child. */
bool watchdog_disarm(pid_t child);
/* The timer's signal: init blocks it from its start and drains it through
 * its signalfd (sandbox root can send it too; it must not pile up). */
int watchdog_signal(void);
/* creds.c: after a change of init's own credentials (setfsuid and back for
 * file operations as a user). The kernel then resets the dumpable flag to
 * fs.suid_dumpable and drops the parent-death signal; both are put back. */
void init_creds_changed(void);
/* With a user namespace: joins it and takes on the sandbox's
 * capabilities and seccomp program (confine.c); exits on failure. */
void init_confine(void);
/* creds.c: the creator's death ends the sandbox (PR_SET_PDEATHSIG, set
 * before our exec) until it detaches us */
extern bool creator_bound;

/* Starts a child that execs req as a new session leader and returns: the
 * result of the exec is on fds->ep (see child_exec_result; it is there
 * already unless the child had to be forked).
 * < 0 (-errno) when no child could be made at all. */
int child_spawn(const struct exec_req *req, pid_t *pid, struct exec_fds *fds);
/* The same with the caller's stdin, stdout and stderr (sudo's: they stay
 * the caller's); *ep as fds->ep. */
int child_spawn_stdio(const struct exec_req *req, const int stdio[3], pid_t *pid, int *ep, bool *stalled);
/* The same, the nextra fds of extra becoming the process's 3, 4, ...
 * (an OCI container's preserved fds; stay the caller's). */
int child_spawn_extra(const struct exec_req *req, const int stdio[3], const int *extra, unsigned nextra,
		      pid_t *pid, int *ep, bool *stalled);
/* sudo.c: the sandbox's `sudo` (see there). sudo_listen at the start (when
 * not turned off); sudo_pollfds fills SUDO_MAX + 1 entries, sudo_ready
 * takes them back. */
struct proc;
void sudo_listen(void);
unsigned sudo_pollfds(struct pollfd *pfd);
void sudo_ready(const struct pollfd *pfd);
/* A process started for sudo ended (or could not start): its caller is
 * told and let go. */
void sudo_report(struct proc *p);
/* exec.c: a free process slot (the highest in use raised), or NULL. */
struct proc *procs_slot(void);

/* memguard.c: whether n more bytes written by init itself to fd fit the
 * sandbox's memory limit ("memory=N") when they land in memory (a tmpfs):
 * 0 or -ENOSPC. */
void memguard_set_limit(uint64_t bytes);
int memguard_room(int fd, size_t n);
/* From now on commands are forked (init's "spawn=fork" argument). */
void child_always_fork(void);
/* Looks at INIT_CMDS_FD (the commands' cgroup, see child.c): at the start
 * and after a re-arm. child_cgroup_drop closes it (before a checkpoint). */
void child_cgroup_probe(void);
void child_cgroup_drop(void);
/* Makes <dir>/{command.txt,stdout.txt,stderr.txt} as uid/gid (see tee.c)
 * and returns the two output files open for writing. 0 or -errno. */
int tee_open(const char *dir, const char *cmdline, uid_t uid, gid_t gid, int *out_fd, int *err_fd);
/* Reads the exec result from ep: 0 = exec happened (EOF), 1 = it failed
 * (*exec_errno and errbuf say why), -EAGAIN = not known yet. */
int child_exec_result(int ep, int *exec_errno, char *errbuf, size_t errlen);
void exec_req_free(struct exec_req *req);
/* A MSG_REQ_EXEC's fields into req (free it with exec_req_free, also on
 * failure): 0, -ABOX_ENOUSER or -errno. */
int exec_parse(const struct proto_frame *f, struct exec_req *req);

/* oci.c: init in an OCI container ("oci" argument). The container's
 * process is held (oci_hold takes req) until MSG_REQ_START runs it with
 * init's stdio; its end is init's (oci_main_ended, with its status), and
 * the signals a container engine sends to init go to it (oci_signal:
 * true when sig was one of those). */
extern bool oci_mode;
void oci_hold(int ci, const struct proto_frame *f, struct exec_req *req);
void oci_start(int ci, const struct proto_frame *f);
/* MSG_REQ_OCI_FDS: the held process's extra fds, kept until its start. */
void oci_fds(int ci, const struct proto_frame *f);
/* An exec with the caller's three fds as its stdio (EXEC_FDS): takes req. */
void oci_exec(int ci, const struct proto_frame *f, struct exec_req *req);
bool oci_signal(int sig, int code, int sender);
/* init's inheritable set emptied, and CAP_SYS_ADMIN out of its effective
 * set when it is in its permitted set alone, not its bounding set: an OCI
 * container run as a container engine's default, with a seccomp profile,
 * whose processes without no_new_privs need it to install that profile
 * (child_exec). In main, before anything but init_confine. */
void oci_caps_park(void);
/* The container's seccomp profile (linux.seccomp, kept from its process)
 * into req when it carries none: every process started in an OCI
 * container runs under it, an exec through abox's own API too. -ENOMEM. */
int oci_filter_into(struct exec_req *req);
void oci_signals(sigset_t *mask);

/* users.c: the identity a request names (F_USER, F_UID, F_GID): `user`
 * and `root` as sent, another name looked up in the sandbox's
 * /etc/passwd and /etc/group. 0, -ABOX_ENOUSER or -errno. */
int users_ident(const struct proto_frame *f, struct init_ident *id);
int users_lookup(const char *name, struct init_ident *id);
/* A relative path (or ~, ~/x) below id's home, else path itself; NULL
 * when it does not fit buf. */
const char *users_path(const struct init_ident *id, const char *path, char *buf, size_t n);
/* Takes on id's filesystem identity and groups for one operation, and
 * gives them back (then init_creds_changed). */
void users_enter(const struct init_ident *id);
void users_leave(void);
/* Reads a regular file of at most ACCT_FILE_MAX bytes without blocking:
 * 0 and a malloc'd *text, or -errno. */
int users_read(const char *path, char **text, size_t *len);
/* MSG_REQ_ACCOUNTS: the sandbox's passwd and group text. */
void users_accounts(int ci, const struct proto_frame *f);

#endif
