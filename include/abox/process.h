/* abox/process.h — processes inside a sandbox: start, events, stdin,
 * signals, terminals, lists. Part of the public API; abox/abox.h includes
 * every part. */
#ifndef ABOX_PROCESS_H
#define ABOX_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <abox/common.h>
#include <abox/error.h>
#include <abox/version.h>
#include <abox/sandbox.h>

#ifdef __cplusplus
extern "C" {
#endif

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
/* Starts a process described as an OCI runtime spec process (the JSON
 * `runc exec --process` reads: args, env, cwd, user with uid, gid and
 * additionalGids, rlimits) in an OCI container (abox_sandbox_opts
 * oci_bundle). Its stdin, stdout and stderr are stdio's three fds of the
 * caller (passed to the sandbox's init, which makes the process); it is
 * killed when the caller's handle on the sandbox goes. Events as for
 * abox_proc_start, without output (the fds carry it). A program that is
 * not there ends it at once with exit code 127 and the reason. With
 * process.terminal its stdio is a terminal made in the container instead,
 * whose master *console receives (close-on-exec; console must then not
 * be NULL). */
ABOX_EXPORT int abox_proc_start_oci(abox_sandbox *sb, const char *process_json, const int stdio[3],
				    int *console, abox_proc **out, abox_error *err);
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

#ifdef __cplusplus
}
#endif
#endif
