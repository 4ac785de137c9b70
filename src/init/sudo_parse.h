/* sudo_parse — the request of the sandbox's `sudo` (untrusted: any
 * process of the sandbox may send one), checked and split, with no other
 * part of init: its own fuzz target (tests/fuzz/fuzz_sudo.c).
 * Runs only inside the sandbox, as its PID 1. */
#ifndef ABOX_INIT_SUDO_PARSE_H
#define ABOX_INIT_SUDO_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#define SUDO_ARGS_MAX 1024
#define SUDO_ENV_MAX 1024

struct sudo_req {
	char *user, *cwd; /* pointing into the buffer */
	bool login; /* 'i' among the flags */
	char *args[SUDO_ARGS_MAX + 1]; /* NULL-ended, at least one */
	char *env[SUDO_ENV_MAX + 3]; /* NULL-ended K=V entries; room for two more */
};

/* buf (len bytes) as a request (see src/init/sudo.c): 0, or -EINVAL
 * (malformed: no magic, a field without its letter and '=', an unknown
 * letter, an unterminated last field, no argument or user), -E2BIG (too
 * many arguments or entries). Entries without '=' are dropped. */
int sudo_parse(char *buf, size_t len, struct sudo_req *req);

#endif
