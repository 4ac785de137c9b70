/* helper_run — runs one of abox's own helpers that parse hostile input
 * in a process of their own (abox-unpack, abox-pull) and reads its short
 * line reports: each line of its stdout goes to a callback, its stderr
 * (one line naming the cause of a failure) is kept.
 * Runs in the CLI/daemon. */
#ifndef ABOX_LAYER_HELPER_RUN_H
#define ABOX_LAYER_HELPER_RUN_H

#include <stddef.h>

#include "base/base.h"

struct helper_run {
	const char *path; /* the helper */
	const char *const *argv; /* NULL-terminated */
	const char *input; /* written to its stdin (then closed); NULL: /dev/null */
	void (*on_line)(char *line, void *ud);
	void *ud;
	const char *what; /* "import", "pull": errors start with it */
	/* results */
	char errtext[2048]; /* its stderr, trailing space trimmed */
};

/* Its wait status (0: it exited 0), or a negative errno (err set) when it
 * could not be run or waited for. */
int helper_run(struct helper_run *h, abox_error *err);

#endif
