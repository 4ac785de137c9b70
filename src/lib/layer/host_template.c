/* layer/host_template.c — the built-in `host` template.
 *
 * A sandbox on the host template sees the host's programs and libraries
 * (/usr and friends, read-only lowers) and a generated /etc. The /etc is
 * built from an allowlist: passwd/group/nsswitch/resolv.conf are written
 * by us; a few harmless host files (CA certificates, the dynamic linker
 * cache, alternatives, time zone) are copied, and only entries readable by
 * everyone on the host are copied at all, so /etc/shadow, ssh host keys,
 * /etc/ssl/private or machine-id can never slip in. /root, /home, /run and
 * /var are empty folders of the template, never the host's.
 * Runs in the CLI/daemon. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "layer/layer.h"

#define STAMP ".abox-template"
#define STAMP_HEAD "host 2\n"

/* Host files whose change makes the generated copy stale. */
static const char *const watched[] = { "etc/ld.so.cache", "etc/alternatives", "etc/ssl/certs" };

/* Copied from the host's /etc when present and world-readable. */
static const char *const etc_copy[] = {
	"alternatives", "ssl", "ca-certificates", "ca-certificates.conf", "ld.so.cache",
	"ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "os-release", "debian_version",
	"profile", "profile.d", "bash.bashrc", "skel", "mime.types", "protocols", "services",
	"shells", "inputrc", "gai.conf", "host.conf", "locale.alias", "python3", "python3.11",
	"ethertypes", "networks", "rpc", "magic", "magic.mime", "mailcap", "login.defs",
	"xattr.conf", "terminfo", "vim", "gitconfig", "wgetrc", "nanorc", "papersize", "ucf.conf",
};

/* Top-level folders of the host that are system trees, borrowed through
 * overlays (or recreated as symlinks on merged-/usr hosts). */
const char *const host_trees[HOST_TREES] = { "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32" };

static const char passwd[] =
	"root:x:0:0:root:/root:/bin/bash\n"
	"user:x:1000:1000:user:/home/user:/bin/bash\n"
	"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char group[] =
	"root:x:0:\n"
	"tty:x:5:\n"
	"users:x:100:user\n"
	"user:x:1000:\n"
	"nogroup:x:65534:\n";
static const char nsswitch[] =
	"passwd: files\n"
	"group: files\n"
	"shadow: files\n"
	"hosts: files dns\n"
	"networks: files\n"
	"protocols: files\n"
	"services: files\n"
	"ethers: files\n"
	"rpc: files\n";

static int write_at(int dfd, const char *name, const char *content, mode_t mode, abox_error *err)
{
	_cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return abox_error_set(err, errno, "template: create '%s'", name);
	int r = write_full(fd, content, strlen(content));
	if (r < 0)
		return abox_error_set(err, -r, "template: write '%s'", name);
	if (fchmod(fd, mode) < 0)
		return abox_error_set(err, errno, "template: chmod '%s'", name);
	return 0;
}

static int copy_file(int sfd, int dfd, const char *name, const struct stat *st, abox_error *err)
{
	_cleanup_close_ int in = openat(sfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return 0; /* vanished or unreadable: skip */
	_cleanup_close_ int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, st->st_mode & 0755);
	if (out < 0)
		return abox_error_set(err, errno, "template: create '%s'", name);
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return abox_error_set(err, errno, "template: read '%s'", name);
		if (n == 0)
			break;
		int r = write_full(out, buf, (size_t)n);
		if (r < 0)
			return abox_error_set(err, -r, "template: write '%s'", name);
	}
	return 0;
}

/* Copies one entry (recursively for folders). Only what "other" may read
 * on the host is copied: that rule alone keeps secrets out. */
static int copy_entry(int sfd, int dfd, const char *name, unsigned depth, abox_error *err)
{
	struct stat st;
	if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (depth > 16)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = readlinkat(sfd, name, target, sizeof(target) - 1);
		if (n < 0)
			return 0;
		target[n] = '\0';
		if (symlinkat(target, dfd, name) < 0)
			return abox_error_set(err, errno, "template: symlink '%s'", name);
		return 0;
	}
	if (!(st.st_mode & S_IROTH))
		return 0;
	if (S_ISREG(st.st_mode))
		return copy_file(sfd, dfd, name, &st, err);
	if (!S_ISDIR(st.st_mode) || !(st.st_mode & S_IXOTH))
		return 0; /* sockets, fifos, devices: never */
	if (mkdirat(dfd, name, st.st_mode & 0755) < 0)
		return abox_error_set(err, errno, "template: mkdir '%s'", name);
	_cleanup_close_ int sub = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_close_ int dsub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (sub < 0 || dsub < 0)
		return 0;
	DIR *d = fdopendir(sub);
	if (!d)
		return abox_error_set(err, errno, "template: opendir '%s'", name);
	sub = -EBADF; /* owned by d now */
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		r = copy_entry(dirfd(d), dsub, de->d_name, depth + 1, err);
		if (r < 0)
			break;
	}
	closedir(d);
	return r;
}

static int mkdirs(int dfd, abox_error *err)
{
	static const struct {
		const char *path;
		mode_t mode;
	} dirs[] = {
		{ "etc", 0755 }, { "dev", 0755 }, { "proc", 0555 }, { "sys", 0555 }, { "tmp", 01777 },
		{ "run", 0755 }, { "var", 0755 }, { "var/tmp", 01777 }, { "var/lib", 0755 },
		{ "var/cache", 0755 }, { "var/log", 0755 }, { "root", 0700 }, { "home", 0755 },
		{ "home/user", 0750 }, { "opt", 0755 }, { "mnt", 0755 }, { "srv", 0755 }, { "media", 0755 },
	};
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		if (mkdirat(dfd, dirs[i].path, dirs[i].mode) < 0)
			return abox_error_set(err, errno, "template: mkdir '%s'", dirs[i].path);
		/* umask must not weaken /tmp's sticky world-writable mode */
		if (fchmodat(dfd, dirs[i].path, dirs[i].mode, 0) < 0)
			return abox_error_set(err, errno, "template: chmod '%s'", dirs[i].path);
	}
	if (fchownat(dfd, "home/user", 1000, 1000, 0) < 0)
		return abox_error_set(err, errno, "template: chown 'home/user'");
	if (symlinkat("../run", dfd, "var/run") < 0)
		return abox_error_set(err, errno, "template: symlink 'var/run'");
	return 0;
}

static int resolv_conf(int hostfd, int etcfd, abox_error *err)
{
	/* Only nameserver/search/options lines: resolv.conf may name hosts
	 * but holds no secrets; comments and odd lines are dropped. */
	char out[4096] = "";
	size_t used = 0;
	_cleanup_free_ char *host = NULL;
	if (read_file_at(hostfd, "etc/resolv.conf", 65536, &host, NULL) == 0) {
		for (char *save = NULL, *line = strtok_r(host, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			if (strncmp(line, "nameserver", 10) && strncmp(line, "search", 6) && strncmp(line, "options", 7))
				continue;
			size_t l = strlen(line);
			if (used + l + 2 >= sizeof(out))
				break;
			memcpy(out + used, line, l);
			out[used + l] = '\n';
			used += l + 1;
			out[used] = '\0';
		}
	}
	return write_at(etcfd, "resolv.conf", out, 0644, err);
}

static void stamp_text(const char *host_root, char *buf, size_t n);

int host_template_build(const char *host_root, const char *dir, abox_error *err)
{
	int r;
	/* what the host files are before we copy them: a change during the
	 * copy then shows as stale at the next check */
	char stamp[2048];
	stamp_text(host_root, stamp, sizeof(stamp));
	_cleanup_close_ int hostfd = open(host_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (hostfd < 0)
		return abox_error_set(err, errno, "template: open '%s'", host_root);
	if (mkdir(dir, 0755) < 0)
		return abox_error_set(err, errno, "template: mkdir '%s'", dir);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return abox_error_set(err, errno, "template: open '%s'", dir);
	if (fchmod(dfd, 0755) < 0)
		return abox_error_set(err, errno, "template: chmod '%s'", dir);
	if ((r = mkdirs(dfd, err)) < 0)
		return r;

	for (size_t i = 0; i < ELEMENTSOF(host_trees); i++) {
		struct stat st;
		if (fstatat(hostfd, host_trees[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			if ((r = copy_entry(hostfd, dfd, host_trees[i], 0, err)) < 0)
				return r;
		} else if (S_ISDIR(st.st_mode)) {
			if (mkdirat(dfd, host_trees[i], 0755) < 0)
				return abox_error_set(err, errno, "template: mkdir '%s'", host_trees[i]);
		}
	}

	_cleanup_close_ int etcfd = openat(dfd, "etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int hetc = openat(hostfd, "etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (etcfd < 0)
		return abox_error_set(err, errno, "template: open etc");
	if ((r = write_at(etcfd, "passwd", passwd, 0644, err)) < 0 ||
	    (r = write_at(etcfd, "group", group, 0644, err)) < 0 ||
	    (r = write_at(etcfd, "nsswitch.conf", nsswitch, 0644, err)) < 0 ||
	    (r = write_at(etcfd, "hostname", "sandbox\n", 0644, err)) < 0 ||
	    (r = write_at(etcfd, "hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n", 0644, err)) < 0 ||
	    (r = resolv_conf(hostfd, etcfd, err)) < 0)
		return r;
	if (hetc >= 0) {
		for (size_t i = 0; i < ELEMENTSOF(etc_copy); i++) {
			/* never trust the list alone: private keys live below ssl/ */
			if ((r = copy_entry(hetc, etcfd, etc_copy[i], 0, err)) < 0)
				return r;
		}
	}
	return write_at(dfd, STAMP, stamp, 0644, err);
}

/* The stamp records what the copied host files were (inode, size, mtime,
 * ctime) when the template was built; the template is fresh while they
 * are still exactly that. Equality, not "newer than": a file dated in the
 * future must not make every build stale at once. */
static void stamp_text(const char *host_root, char *buf, size_t n)
{
	size_t used = safe_snprintf(buf, n, "%s", STAMP_HEAD);
	for (size_t i = 0; i < ELEMENTSOF(watched); i++) {
		char p[4096];
		struct stat st;
		safe_snprintf(p, sizeof(p), "%s/%s", strcmp(host_root, "/") == 0 ? "" : host_root, watched[i]);
		if (stat(p, &st) < 0)
			used += safe_snprintf(buf + used, n - used, "%s -\n", watched[i]);
		else
			used += safe_snprintf(buf + used, n - used, "%s %lu %lld %lld.%ld %lld.%ld\n", watched[i],
					      (unsigned long)st.st_ino, (long long)st.st_size,
					      (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec,
					      (long long)st.st_ctim.tv_sec, (long)st.st_ctim.tv_nsec);
	}
}

bool host_template_fresh(const char *dir)
{
	char p[4096], want[2048];
	safe_snprintf(p, sizeof(p), "%s/" STAMP, dir);
	_cleanup_free_ char *content = NULL;
	if (read_file_at(AT_FDCWD, p, 4096, &content, NULL) < 0)
		return false;
	stamp_text("/", want, sizeof(want));
	return strcmp(content, want) == 0;
}
