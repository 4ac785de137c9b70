/* mount — builds the sandbox's root filesystem inside its new mount
 * namespace and switches to it.
 *
 * What it does: a size-limited tmpfs for the writable layer, the overlay
 * root (template lower + upper), overlays over the host trees the template
 * borrows (/usr, ...), /proc with masks, a minimal /dev, read-only /sys,
 * pivot_root with the old root detached.
 * What it does not do: prepare the template (layer/) or pick sizes
 * (backend/).
 * Runs in the sandbox child between clone and exec: every function here is
 * async-signal-safe and uses only the strings prepared in the plan. Needs
 * overlayfs, tmpfs, devpts newinstance. */
#ifndef ABOX_MOUNT_ROOTFS_H
#define ABOX_MOUNT_ROOTFS_H

#include <stdint.h>

#include "base/base.h"

#define ROOTFS_MAX_TREES 8

struct rootfs_plan {
	const char *scratch;   /* host dir the scratch tmpfs is mounted on (in the child's namespace only) */
	const char *lower;     /* lowerdir of the root overlay: snapshot layers' root/ folders,
				* newest first, then the template root (':'-separated) */
	const char *tree_lowers[ROOTFS_MAX_TREES]; /* lowerdir per tree; NULL: the host tree alone */
	const char *trees[ROOTFS_MAX_TREES]; /* host trees overlaid read-write, e.g. "usr" (relative to /) */
	unsigned ntrees;
	uint64_t disk_bytes;   /* tmpfs size: the writable layer's limit */
	const char *hostname;
	const char *hosts;     /* content of /etc/hosts */
	uid_t user_uid;
	gid_t user_gid;
	uint32_t proc_masks;   /* from rootfs_proc_masks_present() */
	/* for a checkpoint restore: only the writable layer, the root
	 * overlay and the host trees' overlays (at <scratch>/trees/<tree>),
	 * no /dev, /proc, /sys (the checkpointer restores those) and no
	 * pivot_root */
	bool restore;
	/* init runs from a copy in /dev (then exec-able, 256 KiB) instead of
	 * a memfd: a checkpointer cannot restore a memfd as a process's exe,
	 * so long-lived (checkpointable) sandboxes need a real file. It is
	 * the sandbox's own copy: replacing it changes nothing (init never
	 * execs again) and no host file is reachable through /proc/1/exe. */
	bool init_in_dev;
};

/* Which of the /proc entries to mask exist on this kernel (bit set). Runs
 * in the parent, before clone. */
uint32_t rootfs_proc_masks_present(void);

/* Runs the whole sequence; on return the process's root is the sandbox's
 * root and the cwd is "/". *layer_fd is an O_PATH fd (close-on-exec, >= 10)
 * on the writable layer's tmpfs, which nothing in the sandbox can reach by
 * path after pivot_root: init keeps it to report disk use. */
int rootfs_setup(const struct rootfs_plan *plan, int *layer_fd, abox_error *err);

#endif
