/* base/run — running a helper program whose output nobody reads (mkfs,
 * the checkpointer: what they have to say goes to a log they are told to
 * write, or into their exit status). Runs in the CLI and the daemon. */
#ifndef ABOX_BASE_RUN_H
#define ABOX_BASE_RUN_H

#include <abox/error.h>

/* Runs path with argv and envp, its standard fds on /dev/null, and waits
 * for it: 0 with its wait status in *status, or an error "WHAT: run NAME"
 * or "WHAT: wait for NAME". */
int run_quiet(const char *path, const char *const *argv, char *const *envp, int *status, const char *what,
	      const char *name, abox_error *err);

#endif
