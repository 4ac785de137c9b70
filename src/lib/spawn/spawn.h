/* spawn — starts a sandbox: clone3 into new namespaces (and straight into
 * the sandbox's v2 cgroup when there is one), builds the root filesystem,
 * applies confinement, and execs abox-init from its sealed memfd.
 *
 * What it does not do: decide paths, limits or policies (local/link.c
 * prepares everything in a spawn_config before the clone, so the child
 * only makes system calls).
 * Runs in the CLI/daemon (parent) and in the sandbox child between clone
 * and exec. The calling process must be single-threaded, or at least have
 * no other thread that may hold a lock the child could need. */
#ifndef ABOX_SPAWN_H
#define ABOX_SPAWN_H

#include <stdint.h>
#include <sys/types.h>

#include "base/base.h"
#include "mount/rootfs.h"
#include "seccomp/policy.h"

struct cg_sandbox;
struct cg_layout;

/* Where a long-lived sandbox's init runs from (rootfs_plan.init_in_dev). */
#define INIT_DEV_PATH "/dev/.abox-init"

struct spawn_config {
	struct rootfs_plan rootfs;
	int listen_fd;              /* becomes fd 3 of init */
	int init_memfd;             /* sealed copy of abox-init */
	char *const *init_argv;
	const struct policy_bpf *bpf;
	uint64_t caps_keep;
	int last_cap;
	struct cg_sandbox *cg;      /* from cgroup_create_begin: finished while the child works */
	const struct cg_layout *cg_layout;
	/* networking: called in the creator's namespace as soon as the
	 * sandbox's exists (its fd, which the callee passes on or dups), so
	 * its interface is made while the child builds the root. NULL:
	 * loopback only. */
	int (*net_begin)(void *ud, int netns_fd, abox_error *err);
	void *net_ud;
	/* a namespace made ahead, with `lo` up (abox-netd's spares): used
	 * instead of a new one when net_premade (the fd stays the caller's) */
	bool net_premade;
	int net_premade_fd;
	/* init keeps the creator's stdin, stdout and stderr (an OCI
	 * container's: its engine's pipes or terminal, for its process)
	 * instead of the sandbox's /dev/null */
	bool keep_stdio;
	/* init without no_new_privs (an OCI container run as a container
	 * engine's default, whose processes may gain privileges through
	 * setuid files: init sets no_new_privs on each that asks for it).
	 * The seccomp policy is then installed while the child still holds
	 * CAP_SYS_ADMIN, before the capabilities are dropped. Not with a
	 * user namespace (init confines itself there). */
	bool no_nnp;
	/* with no_nnp: init keeps CAP_SYS_ADMIN in its permitted set alone
	 * (inheritable through its exec, parked by init at once), for its
	 * children that install an OCI container's seccomp profile without
	 * no_new_privs (init/child_exec.c); outside its bounding set, so no
	 * process of the container's ever gets it */
	bool keep_admin;
	/* a pid namespace to make init in instead of a new one (an OCI
	 * container of a pod that shares its sandbox's: init is then not its
	 * PID 1); the fd stays the caller's */
	bool pidns_join;
	int pidns_fd;
	/* a mount namespace to build the root in instead of a new one (an OCI
	 * config's mount path: checked to be neither the runtime's nor the
	 * host's); the fd stays the caller's */
	bool mntns_join;
	int mntns_fd;
	/* a time namespace of its own (an OCI container's), its monotonic
	 * ([0]) and boottime ([1]) clocks offset by these */
	bool timens;
	int64_t time_offset_s[2];
	uint32_t time_offset_ns[2];
};

/* spawn/ahead.c: the namespaces a sandbox is made in other than new
 * ones of its own (a pod's pid namespace to join, a time namespace with
 * offsets), set for this process's next child before the clone; back
 * gives this process's own back. 0, or -errno with nothing changed. */
struct ns_ahead {
	int pidns, timens; /* ours, to go back to; -1: unchanged */
};
int spawn_ns_ahead(const struct spawn_config *cfg, struct ns_ahead *a, abox_error *err);
void spawn_ns_back(struct ns_ahead *a);

struct spawn_result {
	pid_t pid;
	int pidfd;
};

/* Clones the sandbox and waits until init is exec'd (or the child reports
 * which step failed, e.g. "mount overlay on '...': Invalid argument"). On
 * failure the child is gone and reaped. */
int spawn_sandbox(const struct spawn_config *cfg, struct spawn_result *out, abox_error *err);

/* A sealed memfd holding a copy of the file at path: writes through
 * /proc/1/exe then hit the seal (EPERM) instead of a host file. */
int spawn_init_memfd(const char *path, abox_error *err);

#endif
