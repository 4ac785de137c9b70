/* Exact, fd-relative copy of a layer tree; see copy.h. */
#include "layer/copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "store/uidpool.h"

#define XATTR_LIST_MAX_BYTES 65536
#define XATTR_VALUE_MAX_BYTES 65536
#define COPY_CHUNK (1u << 20)

/* Regular files with more than one link, by source inode: the first copy's
 * path (relative to the destination root) is what later links point at. */
struct link_entry {
	dev_t dev;
	ino_t ino;
	char *path; /* NULL: empty slot */
};

struct copier {
	int dst_root;
	struct layer_copy_stats st;
	struct link_entry *links;
	size_t nlinks, cap; /* cap: a power of two, or 0 */
	bool sanitize;      /* an imported tree: no devices, setuid/setgid or file capabilities */
	uint32_t id_base; /* a layer of a sandbox with a user namespace: its first host id, else 0 */
	dev_t src_dev;      /* imports stay on the source's filesystem (like cp -x) */
	dev_t dst_dev;      /* and never copy the destination into itself */
	ino_t dst_ino;
	char path[8192];    /* relative path of the entry being copied */
	size_t path_len;
	abox_error *err;
};

static size_t link_slot(const struct copier *c, dev_t dev, ino_t ino)
{
	size_t h = ((size_t)ino * 0x9e3779b97f4a7c15ull) ^ (size_t)dev;
	size_t i = h & (c->cap - 1);
	while (c->links[i].path && !(c->links[i].dev == dev && c->links[i].ino == ino))
		i = (i + 1) & (c->cap - 1);
	return i;
}

static const char *link_find(const struct copier *c, const struct stat *s)
{
	if (!c->cap)
		return NULL;
	return c->links[link_slot(c, s->st_dev, s->st_ino)].path;
}

static int link_add(struct copier *c, const struct stat *s)
{
	if ((c->nlinks + 1) * 2 > c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		struct link_entry *old = c->links;
		size_t ocap = c->cap;
		c->links = calloc(ncap, sizeof(*c->links));
		if (!c->links) {
			c->links = old;
			return -ENOMEM;
		}
		c->cap = ncap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i].path)
				c->links[link_slot(c, old[i].dev, old[i].ino)] = old[i];
		free(old);
	}
	size_t i = link_slot(c, s->st_dev, s->st_ino);
	if (!(c->links[i].path = strdup(c->path)))
		return -ENOMEM;
	c->links[i].dev = s->st_dev;
	c->links[i].ino = s->st_ino;
	c->nlinks++;
	return 0;
}

static int fail(struct copier *c, int e, const char *what)
{
	return abox_error_set(c->err, e, "layer copy: %s '%s'", what, c->path_len ? c->path : ".");
}

/* Extended attributes through /proc/self/fd/DIR/NAME and the l* calls:
 * they work for every file type (whiteouts and symlinks have no fd to use
 * the f* calls on) and never follow a symlink in the last component. The
 * directory fds pin the parents, and the tree is frozen, so the names
 * cannot be swapped under us. */
/* A host id of the sandbox's range as the sandbox's own id (its layers
 * are stored with sandbox-relative owners: a snapshot made in one range
 * starts in any other). Host root's (the overlay's whiteouts and folders)
 * stays root's; anything else, which the sandbox could not have made, is
 * nobody's. */
static uint32_t rel_id(const struct copier *c, uint32_t id)
{
	if (!c->id_base || id == 0)
		return id;
	return id - c->id_base < UIDPOOL_RANGE ? id - c->id_base : 65534;
}

/* A file capability set inside a user namespace names the namespace's
 * root as a host id (version 3, rootid): stored relative, rootid 0, which
 * the kernel keeps as a plain version 2 set, valid again for whichever
 * sandbox root mounts the layer; one naming another namespace's root
 * would grant nothing and is left out. */
static bool rel_cap(const struct copier *c, char *val, ssize_t v)
{
	if (v != 24)
		return true;
	uint32_t magic, root;
	memcpy(&magic, val, 4);
	memcpy(&root, val + 20, 4);
	magic = le32toh(magic);
	root = le32toh(root);
	if ((magic & 0xff000000u) != 0x03000000u)
		return true;
	if (root - c->id_base >= UIDPOOL_RANGE)
		return false;
	root = htole32(root - c->id_base);
	memcpy(val + 20, &root, 4);
	return true;
}

static int copy_xattrs(struct copier *c, int sdir, const char *sname, int ddir, const char *dname)
{
	char sp[64 + 256], dp[64 + 256];
	if (sname)
		safe_snprintf(sp, sizeof(sp), "/proc/self/fd/%d/%s", sdir, sname);
	else
		safe_snprintf(sp, sizeof(sp), "/proc/self/fd/%d", sdir);
	if (dname)
		safe_snprintf(dp, sizeof(dp), "/proc/self/fd/%d/%s", ddir, dname);
	else
		safe_snprintf(dp, sizeof(dp), "/proc/self/fd/%d", ddir);
	/* the root of each side is named by its fd itself: follow that one
	 * magic link (it is a folder), nothing else */
	ssize_t (*list)(const char *, char *, size_t) = sname ? llistxattr : listxattr;
	ssize_t (*get)(const char *, const char *, void *, size_t) = sname ? lgetxattr : getxattr;
	int (*set)(const char *, const char *, const void *, size_t, int) = dname ? lsetxattr : setxattr;

	_cleanup_free_ char *names = malloc(XATTR_LIST_MAX_BYTES);
	_cleanup_free_ char *val = malloc(XATTR_VALUE_MAX_BYTES);
	if (!names || !val)
		return fail(c, ENOMEM, "xattrs of");
	ssize_t n = list(sp, names, XATTR_LIST_MAX_BYTES);
	if (n < 0) {
		if (errno == ENOTSUP)
			return 0;
		return fail(c, errno, "list xattrs of");
	}
	for (char *k = names; k < names + n; k += strlen(k) + 1) {
		ssize_t v = get(sp, k, val, XATTR_VALUE_MAX_BYTES);
		if (v < 0) {
			if (errno == ENODATA)
				continue; /* went away between list and get */
			return fail(c, errno, "read xattr of");
		}
		/* file capabilities raise privileges like setuid does */
		if (c->sanitize && strcmp(k, "security.capability") == 0)
			continue;
		if (c->id_base && strcmp(k, "security.capability") == 0 && !rel_cap(c, val, v))
			continue;
		if (set(dp, k, val, (size_t)v, 0) < 0)
			return abox_error_set(c->err, errno, "layer copy: set xattr '%s' on '%s'", k,
					      c->path_len ? c->path : ".");
	}
	return 0;
}

/* Data only: holes stay holes (SEEK_DATA/SEEK_HOLE), each data segment
 * goes through copy_file_range, or read/write across filesystems that
 * cannot do that. */
static int copy_data(struct copier *c, int in, int out, off_t size)
{
	if (ioctl(out, FICLONE, in) == 0) {
		c->st.reflinked++;
		c->st.data_bytes += (uint64_t)size;
		return 0;
	}
	_cleanup_free_ char *buf = NULL;
	off_t pos = 0;
	for (;;) {
		off_t data = lseek(in, pos, SEEK_DATA);
		if (data < 0) {
			if (errno == ENXIO)
				break; /* no data after pos */
			return fail(c, errno, "seek in");
		}
		off_t hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			return fail(c, errno, "seek in");
		off_t off = data;
		while (off < hole) {
			size_t want = (size_t)(hole - off) < COPY_CHUNK ? (size_t)(hole - off) : COPY_CHUNK;
			ssize_t k = -1;
			if (!buf) {
				loff_t a = off, b = off;
				k = copy_file_range(in, &a, out, &b, want, 0);
				if (k < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
					      errno == EOPNOTSUPP)) {
					if (!(buf = malloc(COPY_CHUNK)))
						return fail(c, ENOMEM, "copy");
				} else if (k < 0) {
					return fail(c, errno, "copy");
				}
			}
			if (buf) {
				k = pread(in, buf, want, off);
				if (k < 0)
					return fail(c, errno, "read");
				if (k > 0 && pwrite(out, buf, (size_t)k, off) != k)
					return fail(c, errno ? errno : EIO, "write");
			}
			if (k == 0)
				break; /* the file shrank: the size below settles it */
			off += k;
			c->st.data_bytes += (uint64_t)k;
		}
		pos = hole;
	}
	if (ftruncate(out, size) < 0)
		return fail(c, errno, "size");
	return 0;
}

/* Owner, then mode (chown clears setuid/setgid), then xattrs (chown also
 * clears security.capability), then times. */
static int finish(struct copier *c, int sdir, const char *name, int ddir, const struct stat *s)
{
	if (fchownat(ddir, name ? name : "", rel_id(c, s->st_uid), rel_id(c, s->st_gid),
		     name ? AT_SYMLINK_NOFOLLOW : AT_EMPTY_PATH) < 0)
		return fail(c, errno, "chown");
	if (!S_ISLNK(s->st_mode)) {
		mode_t mode = s->st_mode & (c->sanitize && !S_ISDIR(s->st_mode) ? 01777 : 07777);
		int r = name ? fchmodat(ddir, name, mode, 0) : fchmod(ddir, mode);
		if (r < 0)
			return fail(c, errno, "chmod");
	}
	int r = copy_xattrs(c, sdir, name, ddir, name);
	if (r < 0)
		return r;
	struct timespec ts[2] = { s->st_atim, s->st_mtim };
	if (utimensat(ddir, name ? name : "", ts, name ? AT_SYMLINK_NOFOLLOW : AT_EMPTY_PATH) < 0 &&
	    (name || futimens(ddir, ts) < 0))
		return fail(c, errno, "set times of");
	return 0;
}

static int copy_dir(struct copier *c, int sdir, int ddir, unsigned depth);

/* Into folder name on both sides: walk (copy_dir or merge_dir) takes its
 * entries, then the folder gets the source's owner, mode, times and
 * xattrs (once its entries are in: their writes would move its times). */
static int descend(struct copier *c, int sdir, int ddir, const char *name, const struct stat *s,
		   unsigned depth, int (*walk)(struct copier *c, int sdir, int ddir, unsigned depth))
{
	_cleanup_close_ int sd = openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int dd = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sd < 0 || dd < 0)
		return fail(c, errno, "open folder");
	int r = walk(c, sd, dd, depth + 1);
	return r < 0 ? r : finish(c, sdir, name, ddir, s);
}

static int copy_regular(struct copier *c, int sdir, int ddir, const char *name, const struct stat *s)
{
	if (s->st_nlink > 1) {
		const char *first = link_find(c, s);
		if (first) {
			if (linkat(c->dst_root, first, ddir, name, 0) < 0)
				return fail(c, errno, "hardlink");
			c->st.hardlinks++;
			return 0;
		}
	}
	_cleanup_close_ int in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (in < 0)
		return fail(c, errno, "open");
	struct stat now;
	if (fstat(in, &now) < 0 || now.st_ino != s->st_ino || !S_ISREG(now.st_mode))
		return fail(c, ESTALE, "changed while copying"); /* the tree was not frozen */
	_cleanup_close_ int out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return fail(c, errno, "create");
	int r = copy_data(c, in, out, s->st_size);
	if (r < 0)
		return r;
	if ((r = finish(c, sdir, name, ddir, s)) < 0)
		return r;
	if (s->st_nlink > 1 && link_add(c, s) < 0)
		return fail(c, ENOMEM, "remember link of");
	return 0;
}

static int copy_entry(struct copier *c, int sdir, int ddir, const char *name, unsigned depth)
{
	struct stat s;
	if (fstatat(sdir, name, &s, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(c, errno, "stat");
	c->st.entries++;
	switch (s.st_mode & S_IFMT) {
	case S_IFREG:
		return copy_regular(c, sdir, ddir, name, &s);
	case S_IFDIR: {
		/* an import of "/" or of a tree holding the state folder would
		 * descend into /proc or copy the new template into itself */
		if (c->sanitize && (s.st_dev != c->src_dev || (s.st_dev == c->dst_dev && s.st_ino == c->dst_ino))) {
			c->st.dropped++;
			return 0;
		}
		if (mkdirat(ddir, name, 0700) < 0)
			return fail(c, errno, "mkdir");
		return descend(c, sdir, ddir, name, &s, depth, copy_dir);
	}
	case S_IFLNK: {
		char target[4097];
		ssize_t n = readlinkat(sdir, name, target, sizeof(target) - 1);
		if (n < 0)
			return fail(c, errno, "readlink");
		target[n] = '\0';
		if (symlinkat(target, ddir, name) < 0)
			return fail(c, errno, "symlink");
		return finish(c, sdir, name, ddir, &s);
	}
	case S_IFCHR:
	case S_IFBLK:
		/* an imported tree gets no device nodes: the sandbox's /dev is
		 * made by abox, and a node elsewhere could reach host devices */
		if (c->sanitize) {
			c->st.entries--; /* counted above, but not made */
			c->st.dropped++;
			return 0;
		}
		/* a snapshot keeps whiteouts (0:0 character devices) and no
		 * other node: sandbox root may mknod in its layer (useless
		 * there, the layer is nodev), but a copy would put a live
		 * device node on the host's state filesystem */
		if (!(S_ISCHR(s.st_mode) && s.st_rdev == 0)) {
			c->st.entries--;
			c->st.dropped++;
			return 0;
		}
		/* fall through */
	case S_IFIFO:
	case S_IFSOCK:
		/* a 0:0 character device is an overlay whiteout: a file deleted
		 * from a lower layer */
		if (mknodat(ddir, name, s.st_mode & (S_IFMT | 0777), s.st_rdev) < 0)
			return fail(c, errno, "mknod");
		return finish(c, sdir, name, ddir, &s);
	default:
		return fail(c, EINVAL, "unknown file type of");
	}
}

typedef int (*entry_fn)(struct copier *c, int sdir, int ddir, const char *name, unsigned depth);

static int walk_dir(struct copier *c, int sdir, int ddir, unsigned depth, entry_fn fn)
{
	if (depth > LAYER_COPY_MAX_DEPTH)
		return fail(c, ELOOP, "folders nested too deep at");
	int fd = openat(sdir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fail(c, errno, "open folder");
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return fail(c, errno, "open folder");
	}
	int r = 0;
	size_t base = c->path_len;
	struct dirent *de;
	while (r == 0 && (errno = 0, de = readdir(d))) {
		const char *n = de->d_name;
		if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])))
			continue;
		size_t nl = strlen(n);
		if (base + 1 + nl + 1 > sizeof(c->path)) {
			r = fail(c, ENAMETOOLONG, "path too long under");
			break;
		}
		if (base)
			c->path[c->path_len++] = '/';
		memcpy(c->path + c->path_len, n, nl + 1);
		c->path_len += nl;
		r = fn(c, sdir, ddir, n, depth);
		c->path_len = base;
		c->path[base] = '\0';
	}
	if (r == 0 && errno)
		r = fail(c, errno, "read folder");
	closedir(d);
	return r;
}

static int copy_dir(struct copier *c, int sdir, int ddir, unsigned depth)
{
	return walk_dir(c, sdir, ddir, depth, copy_entry);
}

/* Whether an upper folder hides everything below it (overlayfs marks it
 * so when a folder is made where a lower one was deleted). */
static bool opaque(int dir, const char *name)
{
	char p[64 + 256], v[2];
	safe_snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", dir, name);
	return (lgetxattr(p, "trusted.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y') ||
	       (lgetxattr(p, "user.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y');
}

static int merge_dir(struct copier *c, int sdir, int ddir, unsigned depth);

/* Applies one entry of an upper layer onto the merged tree, as overlayfs
 * would show it: a folder over a folder merges (unless opaque), anything
 * else replaces what was there; a whiteout replaces it with a whiteout,
 * which still hides the template's file below the merged layer. */
static int merge_entry(struct copier *c, int sdir, int ddir, const char *name, unsigned depth)
{
	struct stat s, d;
	if (fstatat(sdir, name, &s, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(c, errno, "stat");
	bool have = fstatat(ddir, name, &d, AT_SYMLINK_NOFOLLOW) == 0;
	if (have && S_ISDIR(s.st_mode) && S_ISDIR(d.st_mode) && !opaque(sdir, name)) {
		/* the upper folder's owner, mode and times are what shows;
		 * xattrs are added (an opaque mark below stays in force) */
		return descend(c, sdir, ddir, name, &s, depth, merge_dir);
	}
	if (have) {
		int r = rm_rf_at(ddir, name, 0);
		if (r < 0)
			return fail(c, -r, "replace");
	}
	int r = copy_entry(c, sdir, ddir, name, depth);
	if (r < 0)
		return r;
	/* A folder over a non-folder (a file, a whiteout) of the merged
	 * layers: in the stack, that non-folder hid the template's folder
	 * at this path, so the flattened folder must hide it too. */
	if (have && S_ISDIR(s.st_mode) && !S_ISDIR(d.st_mode)) {
		char p[64 + 256];
		safe_snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", ddir, name);
		if (lsetxattr(p, "trusted.overlay.opaque", "y", 1, 0) < 0)
			return fail(c, errno, "mark opaque");
	}
	return 0;
}

static int merge_dir(struct copier *c, int sdir, int ddir, unsigned depth)
{
	return walk_dir(c, sdir, ddir, depth, merge_entry);
}

static int run(int src_dir, int dst_dir, bool merge, bool sanitize, uint32_t id_base,
	       struct layer_copy_stats *stats, abox_error *err)
{
	struct copier c = { .dst_root = dst_dir, .err = err, .sanitize = sanitize, .id_base = id_base };
	struct stat s, d;
	int r;
	if (fstat(dst_dir, &d) == 0) {
		c.dst_dev = d.st_dev;
		c.dst_ino = d.st_ino;
	}
	if (fstat(src_dir, &s) < 0 || !S_ISDIR(s.st_mode))
		r = abox_error_set(err, errno ? errno : ENOTDIR, "layer copy: source is not a folder");
	else if ((c.src_dev = s.st_dev, r = (merge ? merge_dir : copy_dir)(&c, src_dir, dst_dir, 0)) == 0)
		r = finish(&c, src_dir, NULL, dst_dir, &s);
	for (size_t i = 0; i < c.cap; i++)
		free(c.links[i].path);
	free(c.links);
	if (r == 0 && stats)
		*stats = c.st;
	return r;
}

int layer_copy_tree(int src_dir, int dst_dir, struct layer_copy_stats *stats, abox_error *err)
{
	return run(src_dir, dst_dir, false, false, 0, stats, err);
}

int layer_merge_tree(int upper_dir, int dst_dir, struct layer_copy_stats *stats, abox_error *err)
{
	return run(upper_dir, dst_dir, true, false, 0, stats, err);
}

int layer_copy_tree_ids(int src_dir, int dst_dir, uint32_t id_base, struct layer_copy_stats *stats,
			abox_error *err)
{
	return run(src_dir, dst_dir, false, false, id_base, stats, err);
}

int layer_merge_tree_ids(int upper_dir, int dst_dir, uint32_t id_base, struct layer_copy_stats *stats,
			 abox_error *err)
{
	return run(upper_dir, dst_dir, true, false, id_base, stats, err);
}

int layer_import_tree(int src_dir, int dst_dir, struct layer_copy_stats *stats, abox_error *err)
{
	return run(src_dir, dst_dir, false, true, 0, stats, err);
}
