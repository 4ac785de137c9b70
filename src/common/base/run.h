/* base/run — running a helper program whose output nobody reads (mkfs,
 * the checkpointer: what they have to say goes to a log they are told to
 * write, or into their exit status), and the waits and forks every
 * starter of a helper process shares. Runs in the CLI and the daemon. */
#ifndef ABOX_BASE_RUN_H
#define ABOX_BASE_RUN_H

#include <stdbool.h>
#include <sys/types.h>

#include <abox/error.h>

/* Runs path with argv and envp, its standard fds on /dev/null, and waits
 * for it: 0 with its wait status in *status, or an error "WHAT: run NAME"
 * or "WHAT: wait for NAME". */
int run_quiet(const char *path, const char *const *argv, char *const *envp, int *status, const char *what,
	      const char *name, abox_error *err);
/* The same, waiting at most timeout_ms (-1: for ever): a helper that takes
 * longer is killed and reaped, and *timed_out says so (its status is then
 * that of the kill); the caller says why in its own words. */
int run_quiet_within(const char *path, const char *const *argv, char *const *envp, int timeout_ms,
		     int *status, bool *timed_out, const char *what, const char *name, abox_error *err);

/* Waits for child pid to end, retrying on EINTR: its wait status, which
 * is 0 exactly when it exited with code 0, or -errno with err set to the
 * formatted message. */
int wait_child(pid_t pid, abox_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* fork() for a child that is handed one end of pair (a pipe or a socket
 * pair): when the fork fails both ends are closed and err says the
 * formatted message with the errno. */
pid_t fork_with(int pair[2], abox_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
