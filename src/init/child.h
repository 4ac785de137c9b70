/* child.h — what the two halves of a start in abox-init share: the
 * spawning side (child.c, in init) and the child side (child_exec.c,
 * between the clone and the exec). Runs only inside the sandbox. */
#ifndef ABOX_INIT_CHILD_H
#define ABOX_INIT_CHILD_H

#include <stdbool.h>

#include "init.h"

/* Where the child may share init's memory until its exec: the
 * architectures child_exec.c has raw system calls for (elsewhere the
 * child is forked and may use libc). */
#if defined(__x86_64__) || defined(__aarch64__)
#define SHARED_VM_SPAWN 1
#else
#define SHARED_VM_SPAWN 0
#endif

/* How commands reach their cgroup (INIT_CMDS_FD). CMDS_PROCS: v2 when
 * clone3 is refused (the default seccomp policy answers it ENOSYS, since
 * it cannot read clone3's flags): the forked child writes itself into the
 * cgroup's cgroup.procs, which costs it a few ms (the kernel's
 * threadgroup lock) but leaves init free meanwhile. Set by child.c, read
 * by the child. */
enum child_cmds { CMDS_NONE, CMDS_TASKS, CMDS_CLONE_INTO, CMDS_PROCS };
extern enum child_cmds child_cmds_mode;

struct child_args {
	const struct exec_req *req;
	char **envp;
	int in, out, err, ep;
	bool pty;
	const int *extra; /* become the process's fds 3 .. 3 + nextra - 1 */
	unsigned nextra;
};

/* The child, from its start to its exec (which does not return). */
__attribute__((noreturn)) void child_exec(const struct child_args *a);
/* The value of key in an environment list, or NULL. */
const char *child_env_get(char **env, const char *key);

#endif
