/* code_ctx — the code plane's contexts (code_ctx.c): a context is a
 * long-lived runner process inside the sandbox (runners/), found again by
 * its tag, so aboxd keeps no state for it. Used by code.c. */
#ifndef ABOX_DAEMON_CODE_CTX_H
#define ABOX_DAEMON_CODE_CTX_H

#include <stdbool.h>
#include <stddef.h>

#include "envd/envd.h"

struct ctx_info {
	int pid;
	bool running; /* false: a default context not started yet, or one that ended */
	bool ended; /* its runner died (not removed): how, below */
	int exit_code, end_signal;
	char id[40], language[16], cwd[96];
};

/* The language's canonical name (python, javascript, typescript, bash, r,
 * java; "js" and "ts" as the SDKs send them, any case), or NULL. */
const char *code_language(const char *name);
/* The default context's id for language ("default-python"...). */
void code_default_id(const char *language, char *out, size_t n);
/* Running contexts of the sandbox, then the default python and
 * javascript contexts not started yet (malloc'd array, *n entries). */
int code_contexts(sandbox_handle_t *h, struct ctx_info **out, size_t *n);
/* The context id: a running one, a default one not started yet, or one
 * whose runner died (ended; a removed one is not found). */
bool code_find_context(sandbox_handle_t *h, const char *id, struct ctx_info *out);
/* Starts a runner for language in cwd (NULL: /home/user, or root's home
 * where the template has none) and waits until it can take cells.
 * -ENOTSUP: the template lacks what the language needs; -ENOENT: no
 * such cwd; err says which. */
int code_context_start(sandbox_handle_t *h, const char *id, const char *language, const char *cwd,
		       struct ctx_info *out, abox_error *err);
/* The default context of language, started unless it runs (once, however
 * many ask at the same time). */
int code_default_context(sandbox_handle_t *h, const char *language, struct ctx_info *out, abox_error *err);
/* Starts the sandbox's default python context in the background, so that
 * its first cell finds IPython loaded (what E2B's boot does); for
 * sandboxes of the code interpreter's template. */
void code_head_start(const char *sandbox_id);
/* Ends the context's runner and waits until it is gone. */
int code_context_stop(sandbox_handle_t *h, const struct ctx_info *c, abox_error *err);

#endif
