/* disk/disk.c — see disk.h. */
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "base/run.h"
#include "disk/disk.h"

#ifndef FSCONFIG_SET_FLAG
#define FSCONFIG_SET_FLAG 0
#define FSCONFIG_SET_STRING 1
#define FSCONFIG_CMD_CREATE 6
#endif
#ifndef MOUNT_ATTR_NOSUID
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef LOOP_CONFIGURE
#define LOOP_CONFIGURE 0x4C0A
#endif

#define BLOCK 4096

static const char *mkfs_path(void)
{
	static const char *const cands[] = { "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4", "/usr/sbin/mke2fs",
					     "/sbin/mke2fs" };
	for (size_t i = 0; i < ELEMENTSOF(cands); i++)
		if (access(cands[i], X_OK) == 0)
			return cands[i];
	return NULL;
}

/* mkfs.ext4 on path (already truncated to its size). No journal: the
 * layer dies with its sandbox and a crash never needs it replayed (a
 * snapshot copies it while the sandbox is frozen). -m 0: every block is
 * the sandbox's, so ENOSPC comes when its size is used up. Lazy inode
 * tables: the image's holes already read as zeros. */
static int run_mkfs(const char *path, abox_error *err)
{
	const char *mkfs = mkfs_path();
	if (!mkfs)
		return abox_error_setx(err, ENOENT, "disk: mkfs.ext4 not found (install e2fsprogs)");
	const char *argv[] = { mkfs, "-q", "-F", "-t", "ext4", "-b", "4096", "-I", "256", "-i", "8192", "-m", "0",
			       "-O", "^has_journal,^resize_inode", "-E",
			       "lazy_itable_init=1,nodiscard,root_owner=0:0", "-L", "abox-layer", path, NULL };
	/* a fixed environment: the caller's locale must not change what
	 * mkfs does, nor its PATH which programs it runs */
	static char *const envp[] = { (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", (char *)"LC_ALL=C",
				      NULL };
	int st;
	int r = run_quiet(mkfs, argv, envp, &st, "disk", mkfs, err);
	if (r < 0)
		return r;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return abox_error_setx(err, EIO, "disk: %s failed on '%s' (status %d)", mkfs, path, st);
	return 0;
}

/* STATE/cache/disk/ext4-<bytes>.img, made once (under a lock, through a
 * temporary name: a crash never leaves a half-made image under the real
 * one). Returns an O_RDONLY fd. */
static int blank_open(const char *state_dir, uint64_t bytes, abox_error *err)
{
	char dir[4096], path[4200], tmp[4300];
	safe_snprintf(dir, sizeof(dir), "%s/cache/disk", state_dir);
	safe_snprintf(path, sizeof(path), "%s/ext4-%llu.img", dir, (unsigned long long)bytes);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0)
		return fd;
	if (errno != ENOENT)
		return abox_error_set(err, errno, "disk: open '%s'", path);
	char cache[4096];
	safe_snprintf(cache, sizeof(cache), "%s/cache", state_dir);
	if ((mkdir(cache, 0700) < 0 && errno != EEXIST) || (mkdir(dir, 0700) < 0 && errno != EEXIST))
		return abox_error_set(err, errno, "disk: mkdir '%s'", dir);
	safe_snprintf(tmp, sizeof(tmp), "%s/.lock", dir);
	_cleanup_close_ int lock = open(tmp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0)
		return abox_error_set(err, errno, "disk: lock '%s'", tmp);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0)
		return fd; /* another creator made it meanwhile */
	safe_snprintf(tmp, sizeof(tmp), "%s/.new-ext4-%llu.img", dir, (unsigned long long)bytes);
	(void)unlink(tmp);
	int w = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (w < 0)
		return abox_error_set(err, errno, "disk: create '%s'", tmp);
	int r = ftruncate(w, (off_t)bytes) < 0 ? abox_error_set(err, errno, "disk: size '%s'", tmp) : 0;
	if (r >= 0)
		r = run_mkfs(tmp, err);
	if (r >= 0 && fsync(w) < 0)
		r = abox_error_set(err, errno, "disk: flush '%s'", tmp);
	close(w);
	if (r >= 0 && rename(tmp, path) < 0)
		r = abox_error_set(err, errno, "disk: rename '%s'", tmp);
	if (r < 0) {
		(void)unlink(tmp);
		return r;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	return fd >= 0 ? fd : abox_error_set(err, errno, "disk: open '%s'", path);
}

/* An unnamed file in STATE/disks holding a sparse copy of the blank
 * image: a reflink where the filesystem has them, else its data extents
 * only (a few hundred KiB of a 1 GiB image). */
static int image_copy(const char *state_dir, int blank, abox_error *err)
{
	char dir[4096];
	safe_snprintf(dir, sizeof(dir), "%s/disks", state_dir);
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT) {
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return abox_error_set(err, errno, "disk: mkdir '%s'", dir);
		fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return abox_error_set(err, errno, "disk: an unnamed file in '%s'", dir);
	if (ioctl(fd, FICLONE, blank) == 0)
		return fd;
	struct stat st;
	if (fstat(blank, &st) < 0 || ftruncate(fd, st.st_size) < 0) {
		int e = errno;
		close(fd);
		return abox_error_set(err, e, "disk: size the image");
	}
	off_t off = 0;
	for (;;) {
		off_t d = lseek(blank, off, SEEK_DATA);
		if (d < 0)
			break; /* ENXIO: no data past off */
		off_t h = lseek(blank, d, SEEK_HOLE);
		if (h < 0)
			h = st.st_size;
		loff_t in = d, out = d;
		while (in < h) {
			ssize_t n = copy_file_range(blank, &in, fd, &out, (size_t)(h - in), 0);
			if (n <= 0) {
				int e = n < 0 ? errno : EIO;
				close(fd);
				return abox_error_set(err, e, "disk: copy the blank image");
			}
		}
		off = h;
	}
	return fd;
}

/* Binds file to a free loop device (direct I/O where the kernel can: the
 * image's pages are not cached twice). Autoclear: the device lets go of
 * the file when its last opener (our fd, then the mount) closes. Returns
 * the device's fd and its number. */
static int loop_attach(int file, int *nr_out, abox_error *err)
{
	_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return abox_error_set(err, errno, "disk: open /dev/loop-control");
	int e = EBUSY;
	for (int tries = 0; tries < 32; tries++) {
		int nr = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (nr < 0)
			return abox_error_set(err, errno, "disk: find a free loop device");
		char p[64];
		safe_snprintf(p, sizeof(p), "/dev/loop%d", nr);
		int fd = open(p, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return abox_error_set(err, errno, "disk: open '%s'", p);
		struct loop_config lc;
		memset(&lc, 0, sizeof(lc));
		lc.fd = (uint32_t)file;
		lc.block_size = BLOCK;
		lc.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
		safe_snprintf((char *)lc.info.lo_file_name, sizeof(lc.info.lo_file_name), "abox-layer");
		int k = ioctl(fd, LOOP_CONFIGURE, &lc);
		if (k < 0 && errno == EINVAL) {
			lc.info.lo_flags = LO_FLAGS_AUTOCLEAR;
			k = ioctl(fd, LOOP_CONFIGURE, &lc);
		}
		if (k == 0) {
			*nr_out = nr;
			return fd;
		}
		e = errno;
		close(fd);
		if (e != EBUSY)
			break; /* EBUSY: another process took it between the two calls */
	}
	return abox_error_set(err, e, "disk: bind a loop device");
}

/* The ext4 on /dev/loop<nr>, as a detached mount. noinit_itable: no
 * kernel thread zeroing inode tables that are holes already. The
 * sandbox cannot reach the device (its /dev has six nodes and it has no
 * CAP_MKNOD/CAP_SYS_ADMIN), so the filesystem only ever holds what ext4
 * itself wrote: no crafted image reaches the host kernel's parser. */
static int mount_detached(int nr, abox_error *err)
{
	char p[64];
	safe_snprintf(p, sizeof(p), "/dev/loop%d", nr);
	_cleanup_close_ int fs = (int)syscall(SYS_fsopen, "ext4", 1 /* FSOPEN_CLOEXEC */);
	if (fs < 0)
		return abox_error_set(err, errno, "disk: fsopen ext4");
	if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", p, 0) < 0)
		return abox_error_set(err, errno, "disk: source '%s'", p);
	(void)syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "noinit_itable", NULL, 0);
	/* statfs counts every block of the disk (its metadata as used):
	 * the sandbox's disk total is the size it asked for */
	(void)syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "minixdf", NULL, 0);
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return abox_error_set(err, errno, "disk: mount the ext4 on '%s'", p);
	int m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (m < 0)
		return abox_error_set(err, errno, "disk: fsmount '%s'", p);
	return m;
}

/* The layer's folders, made here so the sandbox child has fewer steps;
 * the root 0700 as the tmpfs layer had it. */
static int skeleton(int m, abox_error *err)
{
	static const char *const dirs[] = { "upper", "work", "root", "upper/root", "work/root" };
	if (fchmodat(m, ".", 0700, 0) < 0)
		return abox_error_set(err, errno, "disk: chmod the layer");
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
		if (mkdirat(m, dirs[i], 0755) < 0 && errno != EEXIST)
			return abox_error_set(err, errno, "disk: mkdir '%s'", dirs[i]);
	return 0;
}

int disk_new(const char *state_dir, uint64_t bytes, abox_error *err)
{
	if (bytes < (1ULL << 20))
		return abox_error_setx(err, EINVAL, "disk: %llu bytes is below the minimum of 1M",
				       (unsigned long long)bytes);
	bytes = (bytes + BLOCK - 1) / BLOCK * BLOCK;
	_cleanup_close_ int blank = blank_open(state_dir, bytes, err);
	if (blank < 0)
		return blank;
	_cleanup_close_ int img = image_copy(state_dir, blank, err);
	if (img < 0)
		return img;
	int nr;
	/* closed on return: from then on the mount alone keeps the device */
	_cleanup_close_ int loop = loop_attach(img, &nr, err);
	if (loop < 0)
		return loop;
	int m = mount_detached(nr, err);
	if (m < 0)
		return m;
	int r = skeleton(m, err);
	if (r < 0) {
		close(m);
		return r;
	}
	return m;
}

int disk_probe(const char *state_dir, abox_error *err)
{
	int m = disk_new(state_dir, 1ULL << 20, err);
	if (m < 0)
		return m;
	close(m);
	return 0;
}

bool disk_unsupported(int r)
{
	return r == -ENOENT || r == -ENODEV || r == -ENXIO || r == -ENOSYS || r == -EOPNOTSUPP || r == -EPERM ||
	       r == -EACCES;
}

#ifndef EXT4_IOC_SHUTDOWN
#define EXT4_IOC_SHUTDOWN _IOR('X', 125, uint32_t)
#endif
#define EXT4_GOING_FLAGS_NOLOGFLUSH 0x2
#define EXT4_MAGIC 0xEF53
#define LOOP_MAJOR 7

int disk_discard(const char *state_dir, int layer_fd)
{
	struct statfs sf;
	struct stat st;
	if (fstatfs(layer_fd, &sf) < 0 || sf.f_type != EXT4_MAGIC || fstat(layer_fd, &st) < 0 ||
	    major(st.st_dev) != LOOP_MAJOR)
		return 0;
	/* a shutdown of any other filesystem would take it from the host:
	 * the device's file must be one of our disks (unnamed, in
	 * state_dir/disks) */
	char p[128], want[4200];
	safe_snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/loop/backing_file", major(st.st_dev), minor(st.st_dev));
	_cleanup_free_ char *back = NULL;
	_cleanup_free_ char *real = realpath(state_dir, NULL);
	if (!real || read_file_at(AT_FDCWD, p, 8192, &back, NULL) < 0)
		return 0;
	safe_snprintf(want, sizeof(want), "%s/disks/", real);
	if (strncmp(back, want, strlen(want)) != 0)
		return 0;
	/* layer fds are often O_PATH, which takes no ioctl */
	_cleanup_close_ int fd = openat(layer_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint32_t how = EXT4_GOING_FLAGS_NOLOGFLUSH;
	if (fd < 0 || ioctl(fd, EXT4_IOC_SHUTDOWN, &how) < 0)
		return -errno;
	return 0;
}
