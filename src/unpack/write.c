/* write.c — archive entries into the destination folder, safely.
 *
 * Attacks this stops, each refused with the entry named:
 *  - path traversal: a `..` component anywhere in a name or a hardlink
 *    target; leading `/` is taken as relative to the destination.
 *  - symlink-then-write: an entry whose folder is (or goes through) a
 *    symlink the archive made earlier, or any non-folder. Folders are
 *    opened one component at a time with RESOLVE_NO_SYMLINKS, never by
 *    path, so no symlink is ever followed while we work as root.
 *  - hardlinks to files outside the destination: the target is resolved
 *    the same way, and linkat() never follows a final symlink.
 *  - other filesystems: RESOLVE_NO_XDEV keeps every step on the
 *    destination's filesystem.
 *  - privilege in the image: device nodes and setuid/setgid files are
 *    dropped (unless asked for), xattrs other than user.* (overlay
 *    markers, file capabilities, security labels) are never written.
 *  - resource exhaustion: entry counts, data bytes, sparse sizes and path
 *    depth are bounded. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/base.h"
#include "unpack.h"
#include "base/openat2.h"

void unpack_init(struct unpack *u, int root)
{
	memset(u, 0, sizeof(*u));
	u->root = root;
	u->cache_fd = -1;
	u->max_bytes = 64ull << 30;
	u->max_entries = 4000000;
}

static void drop_cache(struct unpack *u)
{
	if (u->cache_fd >= 0)
		close(u->cache_fd);
	u->cache_fd = -1;
	free(u->cache_path);
	u->cache_path = NULL;
}

void unpack_done(struct unpack *u)
{
	drop_cache(u);
	free(u->config);
	u->config = NULL;
}

int unpack_fail(struct unpack *u, const char *fmt, ...)
{
	if (u->err[0])
		return -1; /* the first cause is the one worth reporting */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(u->err, sizeof(u->err), fmt, ap);
	va_end(ap);
	return -1;
}

/* Normalizes an archive name into "a/b/c" (no leading or trailing slash,
 * no "." components) in out. Returns the number of components (0: the
 * root itself), or -1 for `..`, an over-long or over-deep name. */
static int normalize(struct unpack *u, const char *raw, char *out, size_t n)
{
	if (!raw)
		return unpack_fail(u, "an entry has a name that is not valid text");
	size_t len = 0;
	int depth = 0;
	const char *p = raw;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = strchrnul(p, '/');
		size_t cl = (size_t)(e - p);
		if (cl == 0)
			break;
		if (cl == 1 && p[0] == '.') {
			p = e;
			continue;
		}
		if (cl == 2 && p[0] == '.' && p[1] == '.')
			return unpack_fail(u, "entry '%s' leaves the destination (a '..' component)", raw);
		if (cl > NAME_MAX)
			return unpack_fail(u, "entry '%.200s...' has a name component longer than %d", raw, NAME_MAX);
		if (++depth > UNPACK_MAX_DEPTH || len + cl + 2 > n)
			return unpack_fail(u, "entry '%.200s...' is nested too deep", raw);
		if (len)
			out[len++] = '/';
		memcpy(out + len, p, cl);
		len += cl;
		p = e;
	}
	out[len] = '\0';
	return depth;
}

static long openat2_beneath(int dir, const char *name, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)flags | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	return openat2_retry(dir, name, &how, sizeof(how));
}

/* Opens the folder `path` (normalized, "" = the root) below the
 * destination, component by component, creating missing folders when
 * create is set. Returns a borrowed fd (owned by the cache), -2 when it
 * does not exist and create is not set, or -1 on a refused or failed
 * step. `entry` names the archive entry in errors. */
static int open_folder(struct unpack *u, const char *path, bool create, const char *entry)
{
	if (!*path)
		return u->root;
	if (u->cache_path && strcmp(u->cache_path, path) == 0)
		return u->cache_fd;
	drop_cache(u);

	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", path);
	int fd = u->root;
	char *comp = buf;
	for (;;) {
		char *slash = strchr(comp, '/');
		if (slash)
			*slash = '\0';
		long nfd = openat2_beneath(fd, comp, O_RDONLY | O_DIRECTORY);
		if (nfd < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
				unpack_fail(u, "entry '%s': create folder '%s': %s", entry, buf, strerror(errno));
				goto fail;
			}
			nfd = openat2_beneath(fd, comp, O_RDONLY | O_DIRECTORY);
		}
		if (nfd < 0) {
			int e = errno;
			if (e == ENOENT && !create) {
				if (fd != u->root)
					close(fd);
				return -2;
			}
			if (e == ELOOP)
				unpack_fail(u, "entry '%s' goes through the symlink '%s': refused (symlink-then-write)",
					    entry, buf);
			else if (e == ENOTDIR)
				unpack_fail(u, "entry '%s' goes through '%s', which is not a folder", entry, buf);
			else if (e == EXDEV)
				unpack_fail(u, "entry '%s' goes through '%s', on another filesystem", entry, buf);
			else
				unpack_fail(u, "entry '%s': open folder '%s': %s", entry, buf, strerror(e));
			goto fail;
		}
		if (fd != u->root)
			close(fd);
		fd = (int)nfd;
		if (!slash)
			break;
		*slash = '/';
		comp = slash + 1;
	}
	u->cache_path = strdup(path);
	if (!u->cache_path) {
		close(fd);
		return unpack_fail(u, "out of memory");
	}
	u->cache_fd = fd;
	return fd;
fail:
	if (fd != u->root)
		close(fd);
	return -1;
}

/* Splits a normalized path into its folder (in dir) and leaf. */
static const char *split(char *path, char *dir, size_t n)
{
	char *slash = strrchr(path, '/');
	if (!slash) {
		dir[0] = '\0';
		return path;
	}
	snprintf(dir, n, "%.*s", (int)(slash - path), path);
	return slash + 1;
}

/* Makes room for a new entry called leaf in parent: an existing folder
 * stays when the new entry is a folder too (tar semantics: the later
 * entry's attributes win), anything else is removed. */
static int clear_leaf(struct unpack *u, int parent, const char *leaf, bool keep_dir, const char *entry)
{
	struct stat st;
	if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : unpack_fail(u, "entry '%s': %s", entry, strerror(errno));
	if (keep_dir && S_ISDIR(st.st_mode))
		return 1;
	/* whatever a cached folder fd points into may be going away, unless
	 * the cached folder is parent itself (it stays; closing it would
	 * pull parent out from under us: a later layer replacing a file
	 * failed with EBADF) */
	if (parent != u->cache_fd)
		drop_cache(u);
	int r = rm_rf_at(parent, leaf, 0);
	if (r < 0)
		return unpack_fail(u, "entry '%s': replace the existing entry: %s", entry, strerror(-r));
	return 0;
}

static int account(struct unpack *u, uint64_t bytes, const char *entry)
{
	if (bytes > u->max_bytes || u->bytes > u->max_bytes - bytes)
		return unpack_fail(u, "entry '%s': the data passes the size limit of %llu bytes", entry,
				   (unsigned long long)u->max_bytes);
	u->bytes += bytes;
	return 0;
}

static int write_data(struct unpack *u, struct archive *a, int fd, int64_t size, const char *entry)
{
	const void *buf;
	size_t n;
	la_int64_t off;
	int r;
	while ((r = archive_read_data_block(a, &buf, &n, &off)) == ARCHIVE_OK) {
		if (off < 0 || (uint64_t)off > (uint64_t)size || n > (uint64_t)size - (uint64_t)off)
			return unpack_fail(u, "entry '%s': data beyond its declared size", entry);
		if (account(u, n, entry) < 0)
			return -1;
		const char *p = buf;
		while (n) {
			ssize_t w = pwrite(fd, p, n, off);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				return unpack_fail(u, "entry '%s': write: %s", entry, strerror(errno));
			}
			p += w;
			n -= (size_t)w;
			off += w;
		}
	}
	if (r != ARCHIVE_EOF)
		return unpack_fail(u, "entry '%s': %s", entry, archive_error_string(a));
	if (ftruncate(fd, size) < 0) /* a trailing hole of a sparse file */
		return unpack_fail(u, "entry '%s': truncate: %s", entry, strerror(errno));
	return 0;
}

static void set_xattrs(struct unpack *u, struct archive_entry *e, int fd)
{
	const char *name;
	const void *val;
	size_t len;
	archive_entry_xattr_reset(e);
	while (archive_entry_xattr_next(e, &name, &val, &len) == ARCHIVE_OK) {
		/* only the unprivileged namespace, and never overlayfs's own
		 * markers there (an unprivileged overlay reads user.overlay.*) */
		if (!name || strncmp(name, "user.", 5) != 0 || strncmp(name, "user.overlay.", 13) == 0 ||
		    fsetxattr(fd, name, val, len, 0) < 0)
			u->dropped++;
	}
}

/* Owner, mode, xattrs and time of what was just made as leaf in parent;
 * fd is open on it (regular files and folders) or -1 (symlinks, fifos). */
static int set_attrs(struct unpack *u, struct archive_entry *e, int parent, const char *leaf, int fd,
		     const char *entry)
{
	int64_t uid = archive_entry_uid(e), gid = archive_entry_gid(e);
	if (uid < 0 || uid >= UINT32_MAX || gid < 0 || gid >= UINT32_MAX)
		return unpack_fail(u, "entry '%s': owner %lld:%lld out of range", entry, (long long)uid,
				   (long long)gid);
	int r = fd >= 0 ? fchown(fd, (uid_t)uid, (gid_t)gid)
			: fchownat(parent, leaf, (uid_t)uid, (gid_t)gid, AT_SYMLINK_NOFOLLOW);
	if (r < 0)
		return unpack_fail(u, "entry '%s': chown: %s", entry, strerror(errno));
	mode_t type = archive_entry_filetype(e), mode = archive_entry_perm(e) & 07777;
	if (type != AE_IFDIR && (mode & (S_ISUID | S_ISGID)) && !u->keep_setuid) {
		mode &= ~(mode_t)(S_ISUID | S_ISGID);
		u->dropped++;
	}
	if (type != AE_IFLNK) {
		/* chown above cleared setuid/setgid; the mode puts back what we keep */
		if (fd >= 0 ? fchmod(fd, mode) < 0 : fchmodat(parent, leaf, mode, 0) < 0)
			return unpack_fail(u, "entry '%s': chmod: %s", entry, strerror(errno));
	}
	if (fd >= 0)
		set_xattrs(u, e, fd);
	if (archive_entry_mtime_is_set(e)) {
		struct timespec ts[2] = { { archive_entry_mtime(e), archive_entry_mtime_nsec(e) },
					  { archive_entry_mtime(e), archive_entry_mtime_nsec(e) } };
		if (ts[0].tv_nsec < 0 || ts[0].tv_nsec > 999999999)
			ts[0].tv_nsec = ts[1].tv_nsec = 0;
		(void)utimensat(parent, leaf, ts, AT_SYMLINK_NOFOLLOW);
	}
	return 0;
}

static int make_hardlink(struct unpack *u, int parent, const char *leaf, const char *target, const char *entry)
{
	char norm[PATH_MAX], dir[PATH_MAX];
	int d = normalize(u, target, norm, sizeof(norm));
	if (d < 0)
		return -1;
	if (d == 0)
		return unpack_fail(u, "entry '%s' is a hardlink to the destination's root", entry);
	const char *tleaf = split(norm, dir, sizeof(dir));
	/* the target's folder may not be the cached one: keep ours open */
	int p = openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p < 0)
		return unpack_fail(u, "entry '%s': %s", entry, strerror(errno));
	int tdir = open_folder(u, dir, false, entry);
	int r = -1;
	if (tdir == -2)
		unpack_fail(u, "entry '%s' is a hardlink to '%s', which the archive has not made", entry, target);
	else if (tdir >= 0 && linkat(tdir, tleaf, p, leaf, 0) < 0)
		unpack_fail(u, "entry '%s': hardlink to '%s': %s", entry, target,
			    errno == ENOENT ? "the archive has not made it" : strerror(errno));
	else if (tdir >= 0)
		r = 0;
	close(p);
	return r;
}

static bool is_whiteout(const char *leaf)
{
	return strncmp(leaf, ".wh.", 4) == 0;
}

/* A layer's .wh.NAME deletes NAME from the layers below; .wh..wh..opq
 * empties the folder it sits in (of what lower layers put there — this
 * pass runs before the layer's own entries are written). */
static int apply_whiteout(struct unpack *u, const char *dir, const char *leaf, const char *entry)
{
	int p = open_folder(u, dir, false, entry);
	if (p == -2)
		return 0;
	if (p < 0)
		return -1;
	if (strcmp(leaf, ".wh..wh..opq") == 0) {
		int dup_fd = openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
		if (!d) {
			if (dup_fd >= 0)
				close(dup_fd);
			return unpack_fail(u, "entry '%s': %s", entry, strerror(errno));
		}
		struct dirent *de;
		int r = 0;
		while (r == 0 && (de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && rm_rf_at(dirfd(d), de->d_name, 0) < 0)
				r = unpack_fail(u, "entry '%s': clear the folder: %s", entry, strerror(errno));
		closedir(d);
		return r;
	}
	const char *name = leaf + 4;
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return unpack_fail(u, "entry '%s' is a whiteout of nothing", entry);
	int r = rm_rf_at(p, name, 0);
	return r < 0 ? unpack_fail(u, "entry '%s': delete '%s': %s", entry, name, strerror(-r)) : 0;
}

static int write_entry(struct unpack *u, struct archive *a, struct archive_entry *e, bool layer,
		       bool pass_whiteouts)
{
	const char *entry = archive_entry_pathname(e);
	char norm[PATH_MAX], dir[PATH_MAX];
	int depth = normalize(u, entry, norm, sizeof(norm));
	if (depth < 0)
		return -1;
	if (depth == 0)
		return 0; /* "./": the destination's own root is ours */
	const char *leaf = split(norm, dir, sizeof(dir));
	if (layer && is_whiteout(leaf))
		return pass_whiteouts ? apply_whiteout(u, dir, leaf, entry) : 0;
	if (pass_whiteouts)
		return 0;

	const char *hl = archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e);
	if (!hl && (type == AE_IFCHR || type == AE_IFBLK) && !u->keep_devices) {
		u->dropped++;
		return 0;
	}
	if (!hl && type == AE_IFSOCK) {
		u->dropped++; /* a socket file is meaningless without its process */
		return 0;
	}
	int parent = open_folder(u, dir, true, entry);
	if (parent < 0)
		return -1;
	int c = clear_leaf(u, parent, leaf, !hl && type == AE_IFDIR, entry);
	if (c < 0)
		return -1;
	/* clear_leaf may have dropped the cache (and parent with it) */
	if ((parent = open_folder(u, dir, true, entry)) < 0)
		return -1;
	if (hl)
		return make_hardlink(u, parent, leaf, hl, entry);

	int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
	if (size < 0 || (uint64_t)size > u->max_bytes)
		return unpack_fail(u, "entry '%s' is larger than the size limit of %llu bytes", entry,
				   (unsigned long long)u->max_bytes);
	switch (type) {
	case AE_IFREG: {
		int fd = openat(parent, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return unpack_fail(u, "entry '%s': create: %s", entry, strerror(errno));
		int r = write_data(u, a, fd, size, entry);
		if (r == 0)
			r = set_attrs(u, e, parent, leaf, fd, entry);
		close(fd);
		return r;
	}
	case AE_IFDIR: {
		if (!c && mkdirat(parent, leaf, 0700) < 0)
			return unpack_fail(u, "entry '%s': mkdir: %s", entry, strerror(errno));
		long fd = openat2_beneath(parent, leaf, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			return unpack_fail(u, "entry '%s': open: %s", entry, strerror(errno));
		int r = set_attrs(u, e, parent, leaf, (int)fd, entry);
		close((int)fd);
		return r;
	}
	case AE_IFLNK: {
		const char *target = archive_entry_symlink(e);
		if (!target || !*target || strlen(target) >= PATH_MAX)
			return unpack_fail(u, "entry '%s' is a symlink without a valid target", entry);
		/* the target is stored, never followed here */
		if (symlinkat(target, parent, leaf) < 0)
			return unpack_fail(u, "entry '%s': symlink: %s", entry, strerror(errno));
		return set_attrs(u, e, parent, leaf, -1, entry);
	}
	case AE_IFIFO:
	case AE_IFCHR:
	case AE_IFBLK: {
		mode_t m = type == AE_IFIFO ? S_IFIFO : type == AE_IFCHR ? S_IFCHR : S_IFBLK;
		dev_t dev = type == AE_IFIFO ? 0 : makedev(archive_entry_rdevmajor(e), archive_entry_rdevminor(e));
		if (mknodat(parent, leaf, m | 0600, dev) < 0)
			return unpack_fail(u, "entry '%s': mknod: %s", entry, strerror(errno));
		return set_attrs(u, e, parent, leaf, -1, entry);
	}
	default:
		return unpack_fail(u, "entry '%s' has an unknown file type %o", entry, (unsigned)type);
	}
}

struct archive *unpack_reader_new(void)
{
	struct archive *a = archive_read_new();
	if (!a)
		return NULL;
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	/* built-in decompressors only: the "all" set would run external
	 * programs (lrzip, lzop, grzip) on an archive's say-so */
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_bzip2(a);
	archive_read_support_filter_xz(a);
	archive_read_support_filter_lzma(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_filter_lz4(a);
	return a;
}

struct archive *unpack_reader(int fd)
{
	struct archive *a = unpack_reader_new();
	if (a && archive_read_open_fd(a, fd, 1 << 16) != ARCHIVE_OK) {
		archive_read_free(a);
		return NULL;
	}
	return a;
}

int unpack_entries(struct unpack *u, struct archive *a, bool layer, bool pass_whiteouts)
{
	struct archive_entry *e;
	int r;
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		if (!pass_whiteouts && ++u->entries > u->max_entries)
			return unpack_fail(u, "the archive has more than %llu entries (the limit)",
					   (unsigned long long)u->max_entries);
		if (write_entry(u, a, e, layer, pass_whiteouts) < 0)
			return -1;
		if (u->progress && u->entries + (u->bytes >> 16) >= u->next_report) {
			u->progress(u);
			u->next_report = u->entries + (u->bytes >> 16) + 2000;
		}
	}
	if (r != ARCHIVE_EOF)
		return unpack_fail(u, "the archive is damaged: %s", archive_error_string(a));
	return 0;
}
