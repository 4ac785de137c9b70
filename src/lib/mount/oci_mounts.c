/* mount/oci_mounts.c — an OCI container's own mounts (see rootfs.h):
 * binds taken from the host's tree before pivot_root, everything placed
 * after it. Runs between clone and exec in the sandbox child: system
 * calls only, on the strings the creator prepared. */
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/mountapi.h"
#include "mount/rootfs.h"

#ifndef RESOLVE_NO_MAGICLINKS
#define RESOLVE_NO_MAGICLINKS 0x02
#endif

struct how {
	uint64_t flags, mode, resolve;
};

int rootfs_oci_open(const struct rootfs_plan *plan, abox_error *err)
{
	const struct rootfs_oci *o = plan->oci;
	for (unsigned i = 0; i < o->nmounts; i++) {
		const struct rootfs_oci_mount *m = &o->mounts[i];
		plan->oci_fds[i] = -1;
		if (m->type)
			continue;
		unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (m->recursive ? AT_RECURSIVE : 0);
		int fd = (int)syscall(SYS_open_tree, AT_FDCWD, m->source, flags);
		if (fd < 0)
			return abox_error_set(err, errno, "mounts: bind source '%s' (for '%s')", m->source,
					      m->dest);
		/* nodev whatever the config says: a bound device node of the
		 * host's would open it */
		struct mount_attr a = { .attr_set = m->attr_set | MOUNT_ATTR_NODEV };
		if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | (m->recursive ? AT_RECURSIVE : 0), &a,
			    sizeof(a)) < 0) {
			int e = errno;
			close(fd);
			return abox_error_set(err, e, "mounts: options of the bind of '%s'", m->source);
		}
		/* idmapped: the source's ids seen through the mount's maps (a
		 * pod's volume, owned by host root, is its root's) */
		struct mount_attr im = { .attr_set = MOUNT_ATTR_IDMAP,
					 .userns_fd = (uint64_t)(m->idmap_fd >= 0 ? m->idmap_fd
										  : plan->userns_fd) };
		if (m->idmap &&
		    syscall(SYS_mount_setattr, fd, "",
			    AT_EMPTY_PATH | (m->idmap_recursive ? AT_RECURSIVE : 0), &im, sizeof(im)) < 0) {
			int e = errno;
			close(fd);
			return abox_error_set(err, e, "mounts: an idmapped bind of '%s' (for '%s')",
					      m->source, m->dest);
		}
		plan->oci_fds[i] = fd;
	}
	return 0;
}

/* An O_PATH fd on dest in the container, made (a folder, or an empty file
 * when file) where missing. Symlinks are followed — after pivot_root they
 * can only lead inside the container — but never /proc's magic links,
 * which could name a file of the host through a descriptor. */
static int target(const char *dest, bool file, bool make, abox_error *err)
{
	char comp[256];
	int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return abox_error_set(err, errno, "open /");
	const char *p = dest;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			return dir;
		const char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len >= sizeof(comp)) {
			close(dir);
			return abox_error_setx(err, ENAMETOOLONG, "mount destination '%s'", dest);
		}
		memcpy(comp, p, len);
		comp[len] = '\0';
		p += len;
		while (*p == '/')
			p++;
		bool last = !*p;
		struct how h = { .flags = O_PATH | O_CLOEXEC | (last && file ? 0 : O_DIRECTORY),
				 .resolve = RESOLVE_NO_MAGICLINKS };
		int next = (int)syscall(SYS_openat2, dir, comp, &h, sizeof(h));
		if (next < 0 && errno == ENOENT && make) {
			if (last && file) {
				int f = openat(dir, comp,
					       O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
				if (f >= 0)
					close(f);
			} else {
				(void)mkdirat(dir, comp, 0755);
			}
			next = (int)syscall(SYS_openat2, dir, comp, &h, sizeof(h));
		}
		int e = errno;
		close(dir);
		if (next < 0)
			return e == ENOENT && !make
				       ? -ENOENT
				       : abox_error_set(err, e, "mount destination '%s' (at '%s')", dest,
							comp);
		dir = next;
	}
}

static int mount_at(const char *src, int fd, const char *type, unsigned long flags, const char *data,
		    const char *dest, abox_error *err)
{
	char at[64];
	safe_snprintf(at, sizeof(at), "/proc/self/fd/%d", fd);
	if (mount(src, at, type, flags, data) < 0)
		return abox_error_set(err, errno, "mount %s on '%s'", type ? type : "bind", dest);
	return 0;
}

/* maskedPaths: a folder under an empty read-only tmpfs, a file under
 * /dev/null; readonlyPaths: bound read-only over themselves. Missing
 * paths are skipped, as the spec says. */
static int protect(const char *const *paths, bool mask, abox_error *err)
{
	for (size_t i = 0; paths && paths[i]; i++) {
		int fd = target(paths[i], true, false, err);
		if (fd == -ENOENT)
			continue;
		if (fd < 0)
			return fd;
		struct stat st;
		int r = fstat(fd, &st) < 0 ? abox_error_set(err, errno, "stat '%s'", paths[i]) : 0;
		bool dir = S_ISDIR(st.st_mode);
		if (r >= 0 && mask)
			r = dir ? mount_at("tmpfs", fd, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
					   "size=0", paths[i], err)
				: mount_at("/dev/null", fd, NULL, MS_BIND, NULL, paths[i], err);
		if (r >= 0 && !mask) {
			char at[64];
			safe_snprintf(at, sizeof(at), "/proc/self/fd/%d", fd);
			r = mount_at(at, fd, NULL, MS_BIND | MS_REC, NULL, paths[i], err);
			/* the new mount is on top: name it by path again */
			int top = r >= 0 ? target(paths[i], true, false, err) : -1;
			if (r >= 0 && top < 0)
				r = top;
			if (r >= 0) {
				/* read-only, its other flags kept, its submounts too */
				struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
				if (syscall(SYS_mount_setattr, top, "", AT_EMPTY_PATH | AT_RECURSIVE, &ro,
					    sizeof(ro)) < 0)
					r = abox_error_set(err, errno, "make '%s' read-only", paths[i]);
				close(top);
			}
		}
		close(fd);
		if (r < 0)
			return abox_error_prefix(err, "%s", mask ? "maskedPaths" : "readonlyPaths");
	}
	return 0;
}

/* linux.devices: each node made in its folder under /dev (made where
 * missing), owned and moded as the config says; one that is there already
 * (abox's own) stays when it is the same device, and is an error
 * otherwise. denied: the pass for the nodes the rules deny (after /dev
 * went nodev), or for the others (before). */
static int make_devices(const struct rootfs_oci *o, bool denied, abox_error *err)
{
	struct stat dev;
	if (o->ndevices && stat("/dev", &dev) < 0)
		return abox_error_set(err, errno, "linux.devices: /dev");
	for (unsigned i = 0; i < o->ndevices; i++) {
		const struct rootfs_oci_device *d = &o->devices[i];
		if (d->denied != denied)
			continue;
		const char *slash = strrchr(d->path, '/');
		char parent[4096];
		safe_snprintf(parent, sizeof(parent), "%.*s", (int)(slash - d->path), d->path);
		int dir = target(parent[0] ? parent : "/", false, true, err);
		if (dir < 0)
			return abox_error_prefix(err, "linux.devices");
		const char *name = slash + 1;
		int r = 0;
		struct stat st;
		/* in abox's /dev tmpfs itself, never on a mount over a part of
		 * it (a bind of a host folder there would get the node) */
		if (fstat(dir, &st) < 0 || st.st_dev != dev.st_dev)
			r = abox_error_setx(err, EXDEV,
					    "linux.devices: '%s' is not in abox's /dev (a mount over it)",
					    d->path);
		else if (mknodat(dir, name, d->mode, d->rdev) < 0) {
			if (errno != EEXIST)
				r = abox_error_set(err, errno, "linux.devices: make '%s'", d->path);
			else if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				r = abox_error_set(err, errno, "linux.devices: '%s'", d->path);
			else if ((st.st_mode & S_IFMT) != (d->mode & S_IFMT) || st.st_rdev != d->rdev)
				r = abox_error_setx(err, EEXIST,
						    "linux.devices: '%s' is abox's own and another device",
						    d->path);
		}
		if (r >= 0 && (fchownat(dir, name, d->uid, d->gid, AT_SYMLINK_NOFOLLOW) < 0 ||
			       fchmodat(dir, name, d->mode & 07777, 0) < 0))
			r = abox_error_set(err, errno, "linux.devices: owner and mode of '%s'", d->path);
		close(dir);
		if (r < 0)
			return r;
	}
	return 0;
}

struct dirent64_head {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* Each device node in the /dev tmpfs folder dir (and its folders, on
 * that tmpfs alone: pts, shm and mqueue are mounts of their own) bound
 * over itself: the binds keep the right to open devices that /dev, made
 * nodev next, loses. */
static int bind_nodes(int dir, dev_t dev, int depth, abox_error *err)
{
	char buf[4096];
	for (;;) {
		long n = syscall(SYS_getdents64, dir, buf, sizeof(buf));
		if (n < 0)
			return abox_error_set(err, errno, "/dev: read a folder");
		if (n == 0)
			return 0;
		for (long off = 0; off < n;) {
			const struct dirent64_head *d = (const void *)(buf + off);
			off += d->reclen;
			struct stat st;
			if (!strcmp(d->name, ".") || !strcmp(d->name, "..") ||
			    fstatat(dir, d->name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
				continue;
			if (S_ISDIR(st.st_mode) && depth >= 8)
				return abox_error_setx(err, ELOOP, "/dev: '%s' is more than 8 folders deep",
						       d->name);
			if (S_ISDIR(st.st_mode)) {
				int sub =
					openat(dir, d->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				int r = sub < 0 ? abox_error_set(err, errno, "/dev: open '%s'", d->name)
						: bind_nodes(sub, dev, depth + 1, err);
				if (sub >= 0)
					close(sub);
				if (r < 0)
					return r;
				continue;
			}
			if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
				continue;
			int t = (int)syscall(SYS_open_tree, dir, d->name,
					     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
			int r = t < 0 ? -errno
				      : (int)syscall(SYS_move_mount, t, "", dir, d->name,
						     MOVE_MOUNT_F_EMPTY_PATH);
			if (r < 0 && t >= 0)
				r = -errno;
			if (t >= 0)
				close(t);
			if (r < 0)
				return abox_error_set(err, -r, "/dev: bind '%s' over itself", d->name);
		}
	}
}

/* With CAP_MKNOD the container could make a node of the host's disk in
 * /dev and open it (abox makes no device cgroup): /dev becomes nodev,
 * as every other mount it can write already is, after abox's and the
 * config's nodes were each bound over themselves. Last, so that the
 * masks' binds of /dev/null were taken from a /dev that still opens
 * devices. */
static int dev_nodev(abox_error *err)
{
	int dir = open("/dev", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dir < 0 || fstat(dir, &st) < 0) {
		int e = errno;
		if (dir >= 0)
			close(dir);
		return abox_error_set(err, e, "/dev");
	}
	int r = bind_nodes(dir, st.st_dev, 0, err);
	close(dir);
	struct mount_attr a = { .attr_set = MOUNT_ATTR_NODEV };
	if (r >= 0 && syscall(SYS_mount_setattr, AT_FDCWD, "/dev", 0, &a, sizeof(a)) < 0)
		r = abox_error_set(err, errno, "/dev: nodev");
	return r;
}

/* The container's /sys now. The kernel lists mounts in the order they
 * were made, and the creator made sysfs_fd's while this child built the
 * root: attached is a copy made at this point instead. */
static int sys_now(int sysfs_fd, abox_error *err)
{
	if (sysfs_fd < 0)
		return rootfs_sys(-1, err);
	/* kernels before 6.15 copy no detached mount (EINVAL): the creator's
	 * own then, listed out of the config's order */
	int t = (int)syscall(SYS_open_tree, sysfs_fd, "",
			     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (t < 0 && errno != EINVAL)
		return abox_error_set(err, errno, "copy the sysfs mount");
	int r = rootfs_sys(t >= 0 ? t : sysfs_fd, err);
	if (t >= 0)
		close(t);
	return r;
}

int rootfs_oci_finish(const struct rootfs_plan *plan, int sysfs_fd, abox_error *err)
{
	const struct rootfs_oci *o = plan->oci;
	int r;
	bool sys = false;
	for (unsigned i = 0; i < o->nmounts; i++) {
		const struct rootfs_oci_mount *m = &o->mounts[i];
		/* /sys (abox's own) where the config lists it, or just before
		 * the first mount in it: mounts in the config's order */
		if (!sys && (i == o->sys_at || (o->sys_at == UINT_MAX && !strncmp(m->dest, "/sys", 4) &&
						(m->dest[4] == '/' || !m->dest[4])))) {
			if ((r = sys_now(sysfs_fd, err)) < 0)
				return r;
			sys = true;
		}
		int fd = target(m->dest, m->file, true, err);
		if (fd < 0)
			return abox_error_prefix(err, "mounts");
		/* a bind: a copy of the one taken before pivot_root, made now,
		 * as the kernel lists mounts in the order they were made (before
		 * 6.15 it copies no detached mount: the one taken then) */
		int t = m->type ? -1
				: (int)syscall(SYS_open_tree, plan->oci_fds[i], "",
					       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
						       (m->recursive ? AT_RECURSIVE : 0));
		if (m->type)
			r = mount_at(m->source, fd, m->type, m->flags | MS_NODEV, m->data, m->dest, err);
		else if ((t < 0 && errno != EINVAL) ||
			 syscall(SYS_move_mount, t >= 0 ? t : plan->oci_fds[i], "", fd, "",
				 MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			r = abox_error_set(err, errno, "bind '%s' on '%s'", m->source, m->dest);
		else
			r = 0;
		if (t >= 0)
			close(t);
		close(fd);
		if (!m->type) {
			close(plan->oci_fds[i]);
			plan->oci_fds[i] = -1;
		}
		if (r < 0)
			return abox_error_prefix(err, "mounts");
	}
	if ((!sys && (r = sys_now(sysfs_fd, err)) < 0) || (r = make_devices(o, false, err)) < 0 ||
	    (r = protect(o->masked, true, err)) < 0 || (r = protect(o->readonly_paths, false, err)) < 0)
		return r;
	if (o->dev_bound && ((r = dev_nodev(err)) < 0 || (r = make_devices(o, true, err)) < 0))
		return r;
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
	if (o->readonly && syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, &ro, sizeof(ro)) < 0)
		return abox_error_set(err, errno, "root.readonly: make / read-only");
	return 0;
}
