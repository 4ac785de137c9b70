/* layer_copy_tree: an upper layer copied into a new layer keeps every
 * detail overlayfs and the sandbox's programs rely on, and never follows
 * what the sandbox planted (symlinks to host files). Needs root (owners,
 * trusted.* xattrs, device nodes). Trees are made under /var/tmp (ext4
 * here) and /dev/shm (tmpfs), so both the in-kernel copy and the
 * cross-filesystem path run; everything is removed afterwards. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "layer/copy.h"

static char src[64], dst[64];

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f)
{
	(void)s, (void)flag, (void)f;
	return remove(p);
}

static void rm_tree(const char *p)
{
	if (p[0])
		nftw(p, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

static void init(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (file owners, trusted.* xattrs, device nodes)");
}

static void fini(void)
{
	rm_tree(src);
	rm_tree(dst);
	src[0] = dst[0] = '\0';
}

TestSuite(layer_copy, .init = init, .fini = fini, .timeout = 60);

static void mk_dirs(const char *sbase, const char *dbase)
{
	snprintf(src, sizeof(src), "%s/abox-copy-src.XXXXXX", sbase);
	snprintf(dst, sizeof(dst), "%s/abox-copy-dst.XXXXXX", dbase);
	cr_assert_not_null(mkdtemp(src));
	cr_assert_not_null(mkdtemp(dst));
}

static void at(char *buf, size_t n, const char *root, const char *rel)
{
	snprintf(buf, n, "%s/%s", root, rel);
}

static void put(const char *rel, const char *text, mode_t mode, uid_t uid, gid_t gid)
{
	char p[256];
	at(p, sizeof(p), src, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0, "create %s: %s", p, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_eq(chown(p, uid, gid), 0);
	cr_assert_eq(chmod(p, mode), 0);
}

/* The layer a sandbox might leave: one of each thing overlayfs writes. */
static void build_source(void)
{
	char p[256], q[256];
	put("plain", "hello\n", 0644, 1000, 1000);
	put("setuid", "#!/bin/sh\n", 04755, 0, 0);
	put("linked-a", "same inode\n", 0640, 1000, 100);
	at(p, sizeof(p), src, "linked-a");
	at(q, sizeof(q), src, "linked-b");
	cr_assert_eq(link(p, q), 0);
	cr_assert_eq(setxattr(p, "user.note", "kept", 4, 0), 0);

	at(p, sizeof(p), src, "deep");
	cr_assert_eq(mkdir(p, 0750), 0);
	cr_assert_eq(chown(p, 1000, 1000), 0);
	at(p, sizeof(p), src, "deep/er");
	cr_assert_eq(mkdir(p, 0700), 0);
	/* a third link to linked-a, two levels down */
	at(p, sizeof(p), src, "linked-a");
	at(q, sizeof(q), src, "deep/er/linked-c");
	cr_assert_eq(link(p, q), 0);

	/* an opaque folder: everything of the lower layers under it hidden */
	at(p, sizeof(p), src, "opaque");
	cr_assert_eq(mkdir(p, 0755), 0);
	cr_assert_eq(setxattr(p, "trusted.overlay.opaque", "y", 1, 0), 0);
	/* a whiteout: a lower layer's file deleted */
	at(p, sizeof(p), src, "deleted");
	cr_assert_eq(mknod(p, S_IFCHR | 0, makedev(0, 0)), 0);
	at(p, sizeof(p), src, "fifo");
	cr_assert_eq(mkfifo(p, 0620), 0);
	/* device nodes sandbox root made (useless in its nodev layer) must
	 * not become live nodes on the host's state filesystem */
	at(p, sizeof(p), src, "disk");
	cr_assert_eq(mknod(p, S_IFBLK | 0600, makedev(8, 0)), 0);
	at(p, sizeof(p), src, "mem");
	cr_assert_eq(mknod(p, S_IFCHR | 0600, makedev(1, 1)), 0);

	/* symlinks the sandbox planted toward host secrets: copied, never
	 * followed */
	at(p, sizeof(p), src, "to-shadow");
	cr_assert_eq(symlink("/etc/shadow", p), 0);
	cr_assert_eq(lchown(p, 1000, 1000), 0);
	at(p, sizeof(p), src, "dangling");
	cr_assert_eq(symlink("../../nowhere", p), 0);

	/* sparse: 64 MiB with 4 bytes of data at the end */
	at(p, sizeof(p), src, "sparse");
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, "tail", 4, (64 << 20) - 4), 4);
	close(fd);

	/* times and the root's own metadata */
	at(p, sizeof(p), src, "plain");
	struct timespec ts[2] = { { 1000000000, 0 }, { 1200000000, 0 } };
	cr_assert_eq(utimensat(AT_FDCWD, p, ts, 0), 0);
	cr_assert_eq(chmod(src, 0751), 0);
	cr_assert_eq(setxattr(src, "trusted.overlay.opaque", "y", 1, 0), 0);
}

static void st(const char *root, const char *rel, struct stat *s)
{
	char p[256];
	at(p, sizeof(p), root, rel);
	cr_assert_eq(lstat(p, s), 0, "lstat %s: %s", p, strerror(errno));
}

static void same_meta(const char *rel)
{
	struct stat a, b;
	st(src, rel, &a);
	st(dst, rel, &b);
	cr_assert_eq(a.st_mode, b.st_mode, "%s: mode %o vs %o", rel, a.st_mode, b.st_mode);
	cr_assert_eq(a.st_uid, b.st_uid, "%s: uid", rel);
	cr_assert_eq(a.st_gid, b.st_gid, "%s: gid", rel);
	if (!S_ISDIR(a.st_mode)) /* a folder's size is its filesystem's business */
		cr_assert_eq(a.st_size, b.st_size, "%s: size", rel);
	cr_assert_eq(a.st_rdev, b.st_rdev, "%s: rdev", rel);
	if (!S_ISLNK(a.st_mode))
		cr_assert_eq(a.st_mtim.tv_sec, b.st_mtim.tv_sec, "%s: mtime", rel);
}

static void xattr_is(const char *root, const char *rel, const char *name, const char *want)
{
	char p[256], v[64];
	at(p, sizeof(p), root, rel);
	ssize_t n = lgetxattr(p, name, v, sizeof(v) - 1);
	cr_assert_geq(n, 0, "%s of %s: %s", name, p, strerror(errno));
	v[n] = '\0';
	cr_assert_str_eq(v, want);
}

static void check_copy(void)
{
	const char *all[] = { "plain", "setuid", "linked-a", "linked-b", "deep", "deep/er", "deep/er/linked-c",
			      "opaque", "deleted", "fifo", "to-shadow", "dangling", "sparse" };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		same_meta(all[i]);
	same_meta(".");

	struct stat a, b, c2;
	st(dst, "setuid", &a);
	cr_assert_eq(a.st_mode & 07777, 04755, "setuid bit kept (chown would clear it)");
	st(dst, "linked-a", &a);
	st(dst, "linked-b", &b);
	st(dst, "deep/er/linked-c", &c2);
	cr_assert_eq(a.st_ino, b.st_ino, "hardlinks stay one inode");
	cr_assert_eq(a.st_ino, c2.st_ino, "hardlinks across folders stay one inode");
	cr_assert_eq(a.st_nlink, 3);
	xattr_is(dst, "linked-a", "user.note", "kept");
	xattr_is(dst, "opaque", "trusted.overlay.opaque", "y");
	xattr_is(dst, ".", "trusted.overlay.opaque", "y");

	st(dst, "deleted", &a);
	cr_assert(S_ISCHR(a.st_mode) && a.st_rdev == makedev(0, 0), "the whiteout is a 0:0 char device");
	{
		char q[256];
		at(q, sizeof(q), dst, "disk");
		cr_assert_neq(lstat(q, &a), 0, "a block device was copied into the snapshot");
		at(q, sizeof(q), dst, "mem");
		cr_assert_neq(lstat(q, &a), 0, "a character device was copied into the snapshot");
	}
	st(dst, "to-shadow", &a);
	cr_assert(S_ISLNK(a.st_mode), "a symlink stays a symlink, not the host file it names");
	char p[256], t[64];
	at(p, sizeof(p), dst, "to-shadow");
	ssize_t n = readlink(p, t, sizeof(t) - 1);
	cr_assert_gt(n, 0);
	t[n] = '\0';
	cr_assert_str_eq(t, "/etc/shadow");

	st(dst, "sparse", &a);
	cr_assert_eq(a.st_size, 64 << 20);
	cr_assert_lt(a.st_blocks * 512, 1 << 20, "holes stay holes (%lld bytes allocated)",
		     (long long)a.st_blocks * 512);
	at(p, sizeof(p), dst, "sparse");
	int fd = open(p, O_RDONLY);
	cr_assert_eq(pread(fd, t, 4, (64 << 20) - 4), 4);
	close(fd);
	cr_assert_eq(memcmp(t, "tail", 4), 0);
	at(p, sizeof(p), dst, "plain");
	fd = open(p, O_RDONLY);
	n = read(fd, t, sizeof(t));
	close(fd);
	cr_assert_eq(n, 6);
	cr_assert_eq(memcmp(t, "hello\n", 6), 0);
}

/* layer_copy_tree of src into dst: its result, *err its error */
static int copy(struct layer_copy_stats *s, abox_error *err)
{
	int sfd = open(src, O_RDONLY | O_DIRECTORY);
	int dfd = open(dst, O_RDONLY | O_DIRECTORY);
	int r = layer_copy_tree(sfd, dfd, s, err);
	close(sfd);
	close(dfd);
	return r;
}

static void copy_ok(struct layer_copy_stats *s)
{
	abox_error err = ABOX_ERROR_INIT;
	int r = copy(s, &err);
	cr_assert_eq(r, 0, "layer_copy_tree: %s", err.msg);
}

Test(layer_copy, same_filesystem_keeps_everything)
{
	mk_dirs("/var/tmp", "/var/tmp");
	build_source();
	struct layer_copy_stats s;
	copy_ok(&s);
	check_copy();
	cr_assert_eq(s.hardlinks, 2);
	cr_assert_eq(s.entries, 13);
	cr_assert_eq(s.dropped, 2, "the two device nodes are counted as left out");
	/* only data is copied: 4 bytes of the sparse file, not 64 MiB */
	cr_assert_lt(s.data_bytes, 1 << 20, "copied %llu bytes", (unsigned long long)s.data_bytes);
}

Test(layer_copy, tmpfs_to_ext4_keeps_everything)
{
	mk_dirs("/dev/shm", "/var/tmp");
	build_source();
	copy_ok(NULL);
	check_copy();
}

Test(layer_copy, refuses_a_non_empty_destination_without_touching_its_files)
{
	mk_dirs("/var/tmp", "/var/tmp");
	put("plain", "new\n", 0644, 0, 0);
	char p[256];
	at(p, sizeof(p), dst, "plain");
	FILE *f = fopen(p, "w");
	fputs("old\n", f);
	fclose(f);
	abox_error err = ABOX_ERROR_INIT;
	int r = copy(NULL, &err);
	cr_assert_eq(r, -EEXIST);
	cr_assert(strstr(err.msg, "plain"), "the error names the entry: %s", err.msg);
	f = fopen(p, "r");
	char line[16] = "";
	cr_assert_not_null(fgets(line, sizeof(line), f));
	fclose(f);
	cr_assert_str_eq(line, "old\n");
}

Test(layer_copy, refuses_trees_nested_too_deep)
{
	mk_dirs("/var/tmp", "/var/tmp");
	int fd = open(src, O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < LAYER_COPY_MAX_DEPTH + 2; i++) {
		cr_assert_eq(mkdirat(fd, "d", 0755), 0);
		int n = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		close(fd);
		fd = n;
	}
	close(fd);
	abox_error err = ABOX_ERROR_INIT;
	int r = copy(NULL, &err);
	cr_assert_eq(r, -ELOOP, "%s", err.msg);
	cr_assert(strstr(err.msg, "too deep"), "%s", err.msg);
}
