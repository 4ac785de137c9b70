/* mount — builds the sandbox's root filesystem inside its new mount
 * namespace and switches to it.
 *
 * What it does: the writable layer (a disk made by disk/ and attached
 * here, or a size-limited tmpfs), the overlay
 * root (template lower + upper), overlays over the host trees the template
 * borrows (/usr, ...), /proc with masks, a minimal /dev, read-only /sys,
 * pivot_root with the old root detached.
 * What it does not do: prepare the template (layer/) or pick sizes
 * (local/).
 * Runs in the sandbox child between clone and exec: every function here is
 * async-signal-safe and uses only the strings prepared in the plan. Needs
 * overlayfs, tmpfs, devpts newinstance. */
#ifndef ABOX_MOUNT_ROOTFS_H
#define ABOX_MOUNT_ROOTFS_H

#include <stdint.h>
#include <sys/types.h>

#include "base/base.h"
#include "base/marks.h"

#define ROOTFS_MAX_TREES 8

/* One mount of an OCI container's config (mount/oci_mounts.c), made
 * ready by the creator: abox's own /proc, /dev, /dev/pts and /sys are
 * not among them. */
struct rootfs_oci_mount {
	const char *source; /* a bind's host path; a filesystem's source name */
	const char *dest; /* absolute, in the container, without ".." */
	const char *type; /* NULL: a bind */
	const char *data; /* a filesystem's options, or NULL */
	unsigned long flags; /* MS_* of a filesystem */
	uint64_t attr_set; /* MOUNT_ATTR_* of a bind */
	bool recursive; /* rbind */
	bool file; /* a bind of a file: the destination is a file */
	/* a bind mounted idmapped (the options idmap, ridmap) through
	 * idmap_fd, a user namespace holding the mount's maps, or -1: the
	 * container's own (rootfs_plan.userns_fd) */
	bool idmap, idmap_recursive;
	int idmap_fd;
};

/* A device node of an OCI container's config (linux.devices), made in
 * its /dev after its mounts. */
struct rootfs_oci_device {
	const char *path; /* absolute, under /dev, without ".." */
	mode_t mode; /* S_IFCHR, S_IFBLK or S_IFIFO, and the permissions */
	dev_t rdev;
	uid_t uid;
	gid_t gid;
	/* its device rules deny it: made after /dev went nodev (dev_bound)
	 * and not bound, so it is there and opens nothing (EACCES where a
	 * device cgroup gives EPERM) */
	bool denied;
};

/* An OCI container's root: its own folder, bound in place (its writes
 * land there, as the container engine expects), then its mounts. */
struct rootfs_oci {
	const char *root; /* host path of the container's root folder */
	bool readonly;
	const char *domainname; /* or NULL */
	int ipc_fd, uts_fd; /* namespaces to join (a pod's), or -1 */
	const struct rootfs_oci_mount *mounts;
	unsigned nmounts;
	const char *const *masked; /* NULL-terminated paths, or NULL */
	const char *const *readonly_paths;
	const struct rootfs_oci_device *devices;
	unsigned ndevices;
	/* the container may make device nodes (CAP_MKNOD), or a node its
	 * rules deny is listed: /dev becomes nodev like every other mount it
	 * can write, abox's nodes and the allowed ones each bound over
	 * themselves first, so a node made after opens nothing */
	bool dev_bound;
	bool suid; /* its root keeps setuid files working (a container engine's default) */
	/* /sys is attached before mounts[sys_at] (where the config lists it;
	 * UINT_MAX: before the first mount in /sys, or last) */
	unsigned sys_at;
};

struct rootfs_plan {
	const char *scratch;   /* host dir the scratch tmpfs is mounted on (in the child's namespace only) */
	const char *lower;     /* lowerdir of the root overlay: snapshot layers' root/ folders,
				* newest first, then the template root (':'-separated) */
	const char *tree_lowers[ROOTFS_MAX_TREES]; /* lowerdir per tree; NULL: the host tree alone */
	const char *trees[ROOTFS_MAX_TREES]; /* host trees overlaid read-write, e.g. "usr" (relative to /) */
	unsigned ntrees;
	uint64_t disk_bytes;   /* tmpfs size: the writable layer's limit */
	/* the writable layer on a disk: a detached mount (disk_new) the
	 * child attaches on scratch instead of mounting a tmpfs */
	bool on_disk;
	int disk_fd;
	const char *hostname;
	const char *hosts;     /* content of /etc/hosts */
	const char *resolv; /* content of /etc/resolv.conf; NULL: the template's */
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
	struct spawn_marks *marks; /* NULL: not timed */
	/* A user namespace of its own (-1: none): the sandbox's ids 0-65535
	 * are host ids id_base.. (store/uidpool.h). Lower layers and host
	 * trees are then mounted idmapped through it, so the template's root
	 * files are the sandbox root's; what this setup writes into the
	 * writable layer and /dev is owned by id_base. */
	int userns_fd;
	uid_t id_base;
	/* an OCI container (lower, trees, hosts and resolv unused), or NULL */
	const struct rootfs_oci *oci;
	int *oci_fds; /* the child's: one per OCI mount, for its bind's tree */
};

/* A detached copy of the mount at src (fd, close-on-exec) seen through
 * userns_fd's id map: what a sandbox with a user namespace mounts its
 * lower layers and host trees as, and what `abox doctor` and the create
 * probe ask of a filesystem. -errno when src's filesystem cannot (err
 * names src and what to do). Async-signal-safe. */
int rootfs_idmapped_tree(const char *src, int userns_fd, abox_error *err);

/* Which of the /proc entries to mask exist on this kernel (bit set). Runs
 * in the parent, before clone. */
uint32_t rootfs_proc_masks_present(void);

/* Runs the whole sequence but /sys; on return the process's root is the
 * sandbox's root and the cwd is "/". *layer_fd is an O_PATH fd
 * (close-on-exec, >= 10) on the writable layer's tmpfs, which nothing in
 * the sandbox can reach by path after pivot_root: init keeps it to report
 * disk use. With plan->restore: only the layer and the overlays. */
int rootfs_setup(const struct rootfs_plan *plan, int *layer_fd, abox_error *err);

/* An OCI container's binds, taken while the host's tree is in view
 * (rootfs_setup calls it before pivot_root): each one's tree detached
 * into plan->oci_fds. */
int rootfs_oci_open(const struct rootfs_plan *plan, abox_error *err);
/* Its mounts in order, its /sys (rootfs_sys, from sysfs_fd) before the
 * first of them in /sys, then its masked and read-only paths and a
 * read-only root: after pivot_root and the cgroup namespace, so a
 * destination's symlinks resolve inside the container and nowhere else. */
int rootfs_oci_finish(const struct rootfs_plan *plan, int sysfs_fd, abox_error *err);

/* A detached, read-only sysfs mount (fd) of the caller's network
 * namespace: a sysfs shows the network devices of the namespace it was
 * made in. The creator makes it while it is in the sandbox's namespace
 * (see net_namespace_new), which takes the kernel's search of every sysfs
 * superblock (one per namespace) off the child's path. -errno on failure
 * (kernels before 5.2: no fsopen). */
int rootfs_sysfs_new(abox_error *err);

/* /sys of the sandbox, after rootfs_setup: sysfs_fd from rootfs_sysfs_new,
 * or -1 to mount one here (then the caller must already be in the
 * sandbox's network namespace), with firmware and powercap masked. */
int rootfs_sys(int sysfs_fd, abox_error *err);

#endif
