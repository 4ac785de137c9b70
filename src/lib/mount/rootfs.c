/* mount/rootfs.c — see rootfs.h. Runs between clone and exec in the sandbox
 * child, in its own mount namespace: nothing mounted here is visible on the
 * host, and all of it disappears with the namespace, so a crash at any
 * point leaves no mount behind. */
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/mountapi.h"
#include "mount/rootfs.h"

#define PATH_BUF 512

static int do_mount(const char *src, const char *dst, const char *type, unsigned long flags,
		    const char *data, abox_error *err)
{
	if (mount(src, dst, type, flags, data) < 0)
		return abox_error_set(err, errno, "mount %s on '%s'", type ? type : "bind", dst);
	return 0;
}

/* The owner a file made here gets: the sandbox's root, which is host
 * root without a user namespace and id_base with one. */
static uid_t owner_base;

static int own(const char *path, abox_error *err)
{
	if (owner_base && lchown(path, owner_base, owner_base) < 0)
		return abox_error_set(err, errno, "chown '%s'", path);
	return 0;
}

/* src (a host folder: a template, a snapshot layer, /usr) mounted at dst
 * through the sandbox's user namespace: host id k shows as sandbox id k,
 * so a template's root-owned files are the sandbox root's and its
 * uid-1000 files its user's, with no copy and no chown of the layer. */
int rootfs_idmapped_tree(const char *src, int userns_fd, abox_error *err)
{
	int t = (int)syscall(SYS_open_tree, AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (t < 0)
		return abox_error_set(err, errno, "open_tree '%s'", src);
	struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns_fd };
	if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0) {
		int e = errno;
		close(t);
		return abox_error_set(
			err, e,
			"an idmapped mount of '%s' (its filesystem cannot be mounted through the "
			"sandbox's user namespace: --userns off; see abox doctor)",
			src);
	}
	return t;
}

static int bind_idmapped(const char *src, const char *dst, int userns_fd, abox_error *err)
{
	int t = rootfs_idmapped_tree(src, userns_fd, err);
	if (t < 0)
		return t;
	int r = 0;
	if (syscall(SYS_move_mount, t, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		r = abox_error_set(err, errno, "attach idmapped '%s' on '%s'", src, dst);
	close(t);
	return r;
}

/* A folder at path, made when missing. One that exists must be a folder
 * and not a symlink to one: these paths are in the writable layer and the
 * sandbox's tree, and until pivot_root a symlink there is followed in the
 * host's root (a sandbox that left "upper/root -> /etc" in its layer, or
 * "/dev -> /etc" in its tree, would have the host's /etc written to or
 * mounted over). */
static int mkdir_p1(const char *path, mode_t mode, abox_error *err)
{
	if (mkdir(path, mode) == 0)
		return 0;
	if (errno != EEXIST)
		return abox_error_set(err, errno, "mkdir '%s'", path);
	struct stat st;
	if (lstat(path, &st) < 0)
		return abox_error_set(err, errno, "stat '%s'", path);
	if (!S_ISDIR(st.st_mode))
		return abox_error_setx(err, ENOTDIR,
				       "'%s' is %s, not a folder: refusing to mount or write there before "
				       "pivot_root",
				       path, S_ISLNK(st.st_mode) ? "a symlink" : "a file");
	return 0;
}

static int write_new(const char *path, const char *content, abox_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return abox_error_set(err, errno, "create '%s'", path);
	int r = write_full(fd, content, strlen(content));
	if (r >= 0 && owner_base && fchown(fd, owner_base, owner_base) < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		return abox_error_set(err, -r, "write '%s'", path);
	return 0;
}

#define BOOT_ID_FILE "dev/.boot_id"

/* The sandbox's own boot id (a random UUID, as the kernel's), kept in its
 * /dev tmpfs and later bound over /proc/sys/kernel/random/boot_id: the
 * host's would tell every sandbox the host's boots (and that sandboxes
 * share a machine), and a sandbox started again without its memory must
 * look rebooted to what watches the id (the SDKs, systemd-style tools).
 * The /dev tmpfs is made anew on every start and kept by a memory
 * checkpoint, so the id changes exactly when the sandbox reboots.
 * Between clone and exec: getrandom, open, write only. */
static int make_boot_id(const char *root, abox_error *err)
{
	unsigned char b[16];
	if (syscall(SYS_getrandom, b, sizeof(b), 0) != (long)sizeof(b))
		return abox_error_set(err, errno ? errno : EIO, "boot id: getrandom");
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	static const char hex[] = "0123456789abcdef";
	char text[37];
	size_t k = 0;
	for (size_t i = 0; i < sizeof(b); i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			text[k++] = '-';
		text[k++] = hex[b[i] >> 4];
		text[k++] = hex[b[i] & 15];
	}
	text[k++] = '\n';
	char p[PATH_BUF];
	safe_snprintf(p, sizeof(p), "%s/" BOOT_ID_FILE, root);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (fd < 0)
		return abox_error_set(err, errno, "boot id: create '%s'", p);
	ssize_t w = write(fd, text, k);
	int e = errno;
	close(fd);
	if (w != (ssize_t)k)
		return abox_error_set(err, w < 0 ? e : EIO, "boot id: write '%s'", p);
	return 0;
}

static int setup_dev(const char *root, bool init_in_dev, unsigned extra, abox_error *err)
{
	static const struct {
		const char *name;
		unsigned maj, min;
	} nodes[] = {
		{ "null", 1, 3 }, { "zero", 1, 5 }, { "full", 1, 7 },
		{ "random", 1, 8 }, { "urandom", 1, 9 }, { "tty", 5, 0 },
	};
	static const struct {
		const char *name, *target;
	} links[] = {
		{ "ptmx", "pts/ptmx" }, { "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" },
		{ "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
	};
	char p[PATH_BUF], opts[128];
	int r;
	/* with a user namespace: /dev, its nodes and /dev/shm the sandbox
	 * root's, the terminals' group its tty group */
	uid_t b = owner_base;

	safe_snprintf(p, sizeof(p), "%s/dev", root);
	/* A fresh tmpfs with device nodes we create ourselves, rather than
	 * binds of the host's: nothing in it is a host object (a checkpointer
	 * can dump fds on it), and only these six devices exist at all. */
	/* extra: an OCI config's nodes and their folders */
	safe_snprintf(opts, sizeof(opts), "mode=0755,size=%s,nr_inodes=%u,uid=%u,gid=%u",
		      init_in_dev ? "256k" : "64k", 64 + extra, (unsigned)b, (unsigned)b);
	if ((r = mkdir_p1(p, 0755, err)) < 0 ||
	    (r = do_mount("tmpfs", p, "tmpfs", MS_NOSUID | (init_in_dev ? 0 : MS_NOEXEC), opts, err)) < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(nodes); i++) {
		safe_snprintf(p, sizeof(p), "%s/dev/%s", root, nodes[i].name);
		/* the child runs with umask 0: the mode is exact */
		if (mknod(p, S_IFCHR | 0666, makedev(nodes[i].maj, nodes[i].min)) < 0)
			return abox_error_set(err, errno, "mknod '%s'", p);
		if ((r = own(p, err)) < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(links); i++) {
		safe_snprintf(p, sizeof(p), "%s/dev/%s", root, links[i].name);
		if (symlink(links[i].target, p) < 0)
			return abox_error_set(err, errno, "symlink '%s'", p);
		if ((r = own(p, err)) < 0)
			return r;
	}
	safe_snprintf(p, sizeof(p), "%s/dev/pts", root);
	if ((r = mkdir_p1(p, 0755, err)) < 0)
		return r;
	/* newinstance: a private devpts, so the sandbox sees and can open only
	 * its own terminals, never the host's /dev/pts/N */
	safe_snprintf(opts, sizeof(opts), "newinstance,ptmxmode=0666,mode=0620,gid=%u", (unsigned)b + 5);
	if ((r = do_mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC, opts, err)) < 0)
		return r;
	if ((r = make_boot_id(root, err)) < 0)
		return r;
	safe_snprintf(p, sizeof(p), "%s/dev/shm", root);
	if ((r = mkdir_p1(p, 01777, err)) < 0)
		return r;
	safe_snprintf(opts, sizeof(opts), "mode=1777,size=64m,uid=%u,gid=%u", (unsigned)b, (unsigned)b);
	return do_mount("shm", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts, err);
}

/* /proc files that leak host state or offer a lever on the host kernel:
 * kcore (kernel memory image), keys (the kernel keyring list), timer_list,
 * timer_stats and sched_debug (host task names and pids), sysrq-trigger
 * (reboot the host), kpage* (physical page maps for rowhammer-style
 * attacks), latency_stats, kmsg; and the root-only views of the kernel's
 * allocators, which sandbox root could read as host root: slabinfo (slab
 * cache fill, the signal heap-grooming exploits steer by), vmallocinfo
 * (kernel virtual addresses: a KASLR bypass), pagetypeinfo (free-page
 * layout). They are covered by /dev/null. */
static const char *const proc_masked_files[] = {
	"kcore",         "keys",       "key-users",   "timer_list",   "sched_debug", "sysrq-trigger",
	"latency_stats", "kpagecount", "kpageflags",  "kpagecgroup",  "kmsg",        "config.gz",
	"timer_stats",   "slabinfo",   "vmallocinfo", "pagetypeinfo",
};
/* Directories hidden behind an empty read-only tmpfs. */
static const char *const proc_masked_dirs[] = { "acpi", "scsi", "asound", "driver" };
/* Directories kept visible but read-only: writing there tunes the host
 * kernel (sysctl, irq affinity, bus devices, filesystems) or, for
 * pressure, arms a PSI trigger: root may ask for any window, each one a
 * poller the kernel runs for it on the host. */
static const char *const proc_ro_dirs[] = { "sys", "irq", "bus", "fs", "pressure" };
_Static_assert(ELEMENTSOF(proc_masked_files) + ELEMENTSOF(proc_masked_dirs) <= 32,
	       "the masks present fit rootfs_plan.proc_masks");

/* The first mask is an empty read-only tmpfs; later ones are binds of it
 * (one superblock to make and tear down instead of one per mask). Its
 * O_PATH fd lives in the sandbox child only and is closed on exec. */
static int mask_fd = -1;

static int mask_tmpfs(const char *p, abox_error *err)
{
	if (mask_fd >= 0) {
		char src[64];
		safe_snprintf(src, sizeof(src), "/proc/self/fd/%d", mask_fd);
		if (mount(src, p, NULL, MS_BIND, NULL) == 0)
			return 0;
		if (errno == ENOENT)
			return 0;
		/* no /proc to name it by: a tmpfs of its own */
	}
	if (mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,nr_inodes=1") < 0) {
		if (errno == ENOENT)
			return 0;
		return abox_error_set(err, errno, "mask '%s'", p);
	}
	if (mask_fd < 0)
		mask_fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return 0;
}

/* Binds src over p (with MS_REC in rec: and what is mounted below it),
 * then makes that read-only, nosuid, nodev and noexec. A missing p is no
 * error. The errors say "BIND 'P'" or "RO 'P'". */
static int bind_ro(const char *src, const char *p, unsigned long rec, const char *bind, const char *ro,
		   abox_error *err)
{
	if (mount(src, p, NULL, MS_BIND | rec, NULL) < 0) {
		if (errno == ENOENT)
			return 0;
		return abox_error_set(err, errno, "%s '%s'", bind, p);
	}
	if (mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return abox_error_set(err, errno, "%s '%s'", ro, p);
	return 0;
}

uint32_t rootfs_proc_masks_present(void)
{
	/* The sandbox's /proc is a procfs of the same kernel: what exists in
	 * ours exists in its. Asking once here saves the child a failed
	 * mount per missing entry. */
	uint32_t m = 0;
	char p[64];
	for (size_t i = 0; i < ELEMENTSOF(proc_masked_files); i++) {
		safe_snprintf(p, sizeof(p), "/proc/%s", proc_masked_files[i]);
		if (access(p, F_OK) == 0)
			m |= 1u << i;
	}
	for (size_t i = 0; i < ELEMENTSOF(proc_masked_dirs); i++) {
		safe_snprintf(p, sizeof(p), "/proc/%s", proc_masked_dirs[i]);
		if (access(p, F_OK) == 0)
			m |= 1u << (ELEMENTSOF(proc_masked_files) + i);
	}
	return m;
}

/* /proc is mounted before /dev (the order an OCI config lists them, which
 * its runtimes keep); its masks after, as they bind /dev/null. */
static int mount_proc(const char *root, abox_error *err)
{
	char p[PATH_BUF];
	safe_snprintf(p, sizeof(p), "%s/proc", root);
	int r = mkdir_p1(p, 0555, err);
	return r < 0 ? r : do_mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err);
}

static int setup_proc(const char *root, uint32_t present, abox_error *err)
{
	char p[PATH_BUF], devnull[PATH_BUF];
	int r;
	safe_snprintf(devnull, sizeof(devnull), "%s/dev/null", root);
	for (size_t i = 0; i < ELEMENTSOF(proc_masked_files); i++) {
		if (!(present & (1u << i)))
			continue;
		safe_snprintf(p, sizeof(p), "%s/proc/%s", root, proc_masked_files[i]);
		if (mount(devnull, p, NULL, MS_BIND, NULL) < 0 && errno != ENOENT)
			return abox_error_set(err, errno, "mask '%s'", p);
	}
	for (size_t i = 0; i < ELEMENTSOF(proc_masked_dirs); i++) {
		if (!(present & (1u << (ELEMENTSOF(proc_masked_files) + i))))
			continue;
		safe_snprintf(p, sizeof(p), "%s/proc/%s", root, proc_masked_dirs[i]);
		if ((r = mask_tmpfs(p, err)) < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(proc_ro_dirs); i++) {
		safe_snprintf(p, sizeof(p), "%s/proc/%s", root, proc_ro_dirs[i]);
		if ((r = bind_ro(p, p, MS_REC, "bind", "remount read-only", err)) < 0)
			return r;
	}
	/* the sandbox's own boot id (see make_boot_id), read-only */
	char id[PATH_BUF];
	safe_snprintf(id, sizeof(id), "%s/" BOOT_ID_FILE, root);
	safe_snprintf(p, sizeof(p), "%s/proc/sys/kernel/random/boot_id", root);
	return bind_ro(id, p, 0, "bind the boot id over", "make the boot id read-only at", err);
}

int rootfs_sys(int sysfs_fd, abox_error *err)
{
	int r;
	/* A sysfs of the sandbox's own network namespace: it shows lo and
	 * nothing of the host's network devices. Read-only: sysfs writes
	 * reconfigure host devices. */
	if (sysfs_fd >= 0) {
		if (syscall(SYS_move_mount, sysfs_fd, "", AT_FDCWD, "/sys", MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return abox_error_set(err, errno, "attach sysfs on '/sys'");
	} else if ((r = do_mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err)) < 0) {
		return r;
	}
	/* vmcoreinfo: the kernel's symbol addresses and structure offsets
	 * for a crash dump, readable by anyone (a KASLR bypass) */
	if (mount("/dev/null", "/sys/kernel/vmcoreinfo", NULL, MS_BIND, NULL) < 0 && errno != ENOENT)
		return abox_error_set(err, errno, "mask '/sys/kernel/vmcoreinfo'");
	/* firmware tables, and powercap energy counters (the Platypus
	 * power side channel reads them to recover secrets) */
	if ((r = mask_tmpfs("/sys/firmware", err)) < 0)
		return r;
	return mask_tmpfs("/sys/devices/virtual/powercap", err);
}

/* Overlay shows its lowerdir, upperdir and workdir options in mountinfo
 * exactly as they were given, and the sandbox reads its own mountinfo:
 * host paths there would tell it where the host keeps its state and
 * runtime files, the template's version and the snapshot ids it stands
 * on. So the overlays are mounted with the writable layer's tmpfs as the
 * working folder (unreachable from the sandbox once the old root is
 * detached), their upper and work folders named relative to it, and each
 * lower layer named by a symlink "l/<tag>.<n>" in it. out gets the
 * relative lowerdir string. */
static int link_lowers(const char *lower, const char *tag, int userns_fd, char *out, size_t outlen,
		       abox_error *err)
{
	char target[4096], name[64];
	size_t used = 0;
	out[0] = '\0';
	for (unsigned n = 0; *lower; n++) {
		const char *end = strchr(lower, ':');
		size_t len = end ? (size_t)(end - lower) : strlen(lower);
		if (len == 0 || len >= sizeof(target))
			return abox_error_setx(err, ENAMETOOLONG, "overlay lower layer %u", n);
		memcpy(target, lower, len);
		target[len] = '\0';
		safe_snprintf(name, sizeof(name), "l/%s.%u", tag, n);
		if (userns_fd >= 0) {
			int r;
			if ((r = mkdir_p1(name, 0755, err)) < 0 ||
			    (r = bind_idmapped(target, name, userns_fd, err)) < 0)
				return r;
		} else if (symlink(target, name) < 0) {
			return abox_error_set(err, errno, "symlink '%s'", name);
		}
		size_t k = strlen(name);
		if (used + k + 2 > outlen)
			return abox_error_setx(err, ENAMETOOLONG, "overlay lowerdir of %s", tag);
		if (used)
			out[used++] = ':';
		memcpy(out + used, name, k + 1);
		used += k;
		lower = end ? end + 1 : lower + len;
	}
	return 0;
}

/* The root overlay: the template's (and snapshots') layers under the
 * writable layer's upper folder, with /etc/hostname, /etc/hosts (and
 * /etc/resolv.conf) written there first. Leaves the cwd on the layer. */
static int overlay_root(const struct rootfs_plan *plan, int layer_fd, const char *root, abox_error *err)
{
	char p[PATH_BUF], q[PATH_BUF], data[4096];
	const char *s = plan->scratch;
	int r;
	static const char *const dirs[] = { "upper",      "work",      "root",
					    "upper/root", "work/root", "upper/root/etc" };
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		safe_snprintf(p, sizeof(p), "%s/%s", s, dirs[i]);
		if ((r = mkdir_p1(p, 0755, err)) < 0)
			return r;
		/* the overlay's root and /etc take their owner from these */
		if (strncmp(dirs[i], "upper/", 6) == 0 && (r = own(p, err)) < 0)
			return r;
	}
	safe_snprintf(p, sizeof(p), "%s/upper/root/etc/hostname", s);
	safe_snprintf(q, sizeof(q), "%s\n", plan->hostname);
	if ((r = write_new(p, q, err)) < 0)
		return r;
	safe_snprintf(p, sizeof(p), "%s/upper/root/etc/hosts", s);
	if ((r = write_new(p, plan->hosts, err)) < 0)
		return r;
	if (plan->resolv) {
		/* over whatever the template has (a link to a resolver on the
		 * sandbox's own loopback would never reach abox's) */
		safe_snprintf(p, sizeof(p), "%s/upper/root/etc/resolv.conf", s);
		if ((r = write_new(p, plan->resolv, err)) < 0)
			return r;
	}

	char lower[2048];
	/* the overlay options below are relative to the layer (see
	 * link_lowers) */
	if (fchdir(layer_fd) < 0)
		return abox_error_set(err, errno, "chdir to the writable layer");
	if ((r = mkdir_p1("l", 0755, err)) < 0 ||
	    (r = link_lowers(plan->lower, "root", plan->userns_fd, lower, sizeof(lower), err)) < 0)
		return r;
	safe_snprintf(data, sizeof(data), "lowerdir=%s,upperdir=upper/root,workdir=work/root", lower);
	if ((r = do_mount("overlay", root, "overlay", MS_NOSUID | MS_NODEV, data, err)) < 0)
		return r;

	return 0;
}

/* Host trees (/usr, ...) get their own overlays: an overlay does not
 * show mounts below its lower directory, and the template borrows these
 * trees from the host instead of copying them. Writes land in the
 * sandbox's layer; the host's files are never touched. The cwd is the
 * layer (overlay_root). */
static int host_trees(const struct rootfs_plan *plan, const char *root, abox_error *err)
{
	char p[PATH_BUF], lower[2048], data[4096];
	const char *s = plan->scratch;
	int r;
	if (plan->restore) {
		safe_snprintf(p, sizeof(p), "%s/trees", s);
		if ((r = mkdir_p1(p, 0755, err)) < 0)
			return r;
	}
	for (unsigned i = 0; i < plan->ntrees; i++) {
		const char *t = plan->trees[i];
		safe_snprintf(p, sizeof(p), "%s/upper/%s", s, t);
		if ((r = mkdir_p1(p, 0755, err)) < 0 || (r = own(p, err)) < 0)
			return r;
		safe_snprintf(p, sizeof(p), "%s/work/%s", s, t);
		if ((r = mkdir_p1(p, 0755, err)) < 0)
			return r;
		/* a host tree alone is named as it is (/usr is no secret);
		 * snapshot layers over it by their links */
		if (plan->tree_lowers[i]) {
			char tag[16];
			safe_snprintf(tag, sizeof(tag), "tree%u", i);
			if ((r = link_lowers(plan->tree_lowers[i], tag, plan->userns_fd, lower, sizeof(lower),
					     err)) < 0)
				return r;
			safe_snprintf(data, sizeof(data), "lowerdir=%s,upperdir=upper/%s,workdir=work/%s",
				      lower, t, t);
		} else if (plan->userns_fd >= 0) {
			/* the host's tree, idmapped: its root files the sandbox root's */
			char tag[16], host[64];
			safe_snprintf(tag, sizeof(tag), "tree%u", i);
			safe_snprintf(host, sizeof(host), "/%s", t);
			if ((r = link_lowers(host, tag, plan->userns_fd, lower, sizeof(lower), err)) < 0)
				return r;
			safe_snprintf(data, sizeof(data), "lowerdir=%s,upperdir=upper/%s,workdir=work/%s", lower, t, t);
		} else {
			safe_snprintf(data, sizeof(data), "lowerdir=/%s,upperdir=upper/%s,workdir=work/%s", t, t, t);
		}
		if (plan->restore) {
			safe_snprintf(p, sizeof(p), "%s/trees/%s", s, t);
			if ((r = mkdir_p1(p, 0755, err)) < 0)
				return r;
		} else {
			safe_snprintf(p, sizeof(p), "%s/%s", root, t);
			if ((r = mkdir_p1(p, 0755, err)) < 0)
				return r;
		}
		if ((r = do_mount("overlay", p, "overlay", MS_NOSUID | MS_NODEV, data, err)) < 0)
			return r;
	}
	return 0;
}

int rootfs_setup(const struct rootfs_plan *plan, int *layer_fd, abox_error *err)
{
	char data[4096];
	const char *s = plan->scratch;
	int r;
	owner_base = plan->userns_fd >= 0 ? plan->id_base : 0; /* a user namespace's root owns abox's files */
	/* Nothing we mount may propagate back to the host's namespace. */
	if ((r = do_mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL, err)) < 0)
		return abox_error_prefix(err, "make / private");
	spawn_mark(plan->marks, MARK_PRIVATE);
	/* The writable layer: its size is the sandbox's disk limit. */
	if (plan->on_disk) {
		/* made by the creator (a disk of its own, see disk/): only
		 * attached here, in this namespace, so the host never has it
		 * mounted and it ends with the namespace */
		if (syscall(SYS_move_mount, plan->disk_fd, "", AT_FDCWD, s, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return abox_error_set(err, errno, "attach the writable layer on '%s'", s);
	} else {
		uint64_t inodes = plan->disk_bytes / 8192 < 16384 ? 16384 : plan->disk_bytes / 8192;
		safe_snprintf(data, sizeof(data), "size=%llu,nr_inodes=%llu,mode=0700",
			      (unsigned long long)plan->disk_bytes, (unsigned long long)inodes);
		if ((r = do_mount("abox", s, "tmpfs", MS_NOSUID | MS_NODEV, data, err)) < 0)
			return r;
	}
	int lfd = open(s, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (lfd < 0 || (*layer_fd = fcntl(lfd, F_DUPFD_CLOEXEC, 10)) < 0)
		return abox_error_set(err, errno, "open the writable layer");
	close(lfd);

	char root[PATH_BUF];
	safe_snprintf(root, sizeof(root), "%s/root", s);
	/* a restore goes back to its working folder after the overlays */
	_cleanup_close_ int old_cwd = plan->restore ? open(".", O_PATH | O_DIRECTORY | O_CLOEXEC) : -EBADF;
	if (plan->oci) {
		/* an OCI container's own folder, in place: its writes land where
		 * its engine looks for them (no overlay, no host trees) */
		if ((r = mkdir_p1(root, 0755, err)) < 0 ||
		    (r = do_mount(plan->oci->root, root, NULL, MS_BIND | MS_REC, NULL, err)) < 0)
			return abox_error_prefix(err, "root.path");
		/* nodev: a device node an image carries (a block device of the
		 * host's disk, made when the image was unpacked as root) opens
		 * nothing; nosuid as abox's own roots, unless the container
		 * runs as a container engine's default (its sudo, ping) */
		struct mount_attr a = { .attr_set = MOUNT_ATTR_NODEV |
						    (plan->oci->suid ? 0 : MOUNT_ATTR_NOSUID) };
		if (syscall(SYS_mount_setattr, AT_FDCWD, root, AT_RECURSIVE, &a, sizeof(a)) < 0)
			return abox_error_set(err, errno, "root.path: nodev, nosuid");
		safe_snprintf(data, sizeof(data), "%s/sys", root);
		if ((r = mkdir_p1(data, 0755, err)) < 0)
			return r;
	} else if ((r = overlay_root(plan, *layer_fd, root, err)) < 0) {
		return r;
	}
	if (!plan->oci && (r = host_trees(plan, root, err)) < 0)
		return r;
	if (plan->restore) {
		if (old_cwd >= 0 && fchdir(old_cwd) < 0)
			return abox_error_set(err, errno, "chdir back");
		return 0;
	}
	spawn_mark(plan->marks, MARK_LAYER);
	/* an OCI config's nodes, each with its folders */
	unsigned dev_inodes = 0;
	for (unsigned i = 0; plan->oci && i < plan->oci->ndevices; i++)
		for (const char *c = plan->oci->devices[i].path + 5; *c; c++)
			dev_inodes += *c == '/';
	if (plan->oci)
		dev_inodes += plan->oci->ndevices;
	if ((r = mount_proc(root, err)) < 0 || (r = setup_dev(root, plan->init_in_dev, dev_inodes, err)) < 0)
		return r;
	spawn_mark(plan->marks, MARK_DEV);
	if ((r = setup_proc(root, plan->proc_masks, err)) < 0)
		return r;
	spawn_mark(plan->marks, MARK_PROC);
	if (plan->oci && (r = rootfs_oci_open(plan, err)) < 0)
		return r;

	/* pivot_root and detach the old root: unlike chroot, no fd or cwd
	 * trick can walk back up to the host's tree afterwards. */
	if (chdir(root) < 0)
		return abox_error_set(err, errno, "chdir '%s'", root);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return abox_error_set(err, errno, "pivot_root '%s'", root);
	if (umount2(".", MNT_DETACH) < 0)
		return abox_error_set(err, errno, "detach old root");
	if (chdir("/") < 0)
		return abox_error_set(err, errno, "chdir /");
	spawn_mark(plan->marks, MARK_PIVOT);
	return 0;
}
