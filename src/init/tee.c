/* abox-init/tee.c — keeps the complete output of a command in files
 * inside the sandbox (for output truncation: the host shows head and tail,
 * the agent can read the rest), under a folder the host names:
 * <dir>/{command.txt,stdout.txt,stderr.txt}.
 *
 * The folders and files are made with the command user's filesystem
 * identity (setfsuid/setfsgid): init is root, the paths lie in a
 * world-writable /tmp, and a symlink planted there by a sandboxed process
 * must not turn init's root into a way to write where that user could
 * not. Runs in abox-init. */
#include <fcntl.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>

#include "base/base.h"
#include "init.h"

static int mkdir_one(const char *path, mode_t mode, bool shared)
{
	if (mkdir(path, mode) < 0) {
		if (errno != EEXIST)
			return -errno;
		struct stat st;
		if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			return -ENOTDIR;
		return 0;
	}
	/* shared parents are sticky and world-writable like /tmp, so that
	 * root's and user's commands can both keep output there */
	if (shared && chmod(path, mode) < 0)
		return -errno;
	return 0;
}

int tee_open(const char *dir, const char *cmdline, uid_t uid, gid_t gid, int *out_fd, int *err_fd)
{
	if (!dir || dir[0] != '/' || strstr(dir, "/../") || strlen(dir) > 200)
		return -EINVAL;
	uid_t old_uid = (uid_t)setfsuid(uid);
	gid_t old_gid = (gid_t)setfsgid(gid);
	int r = 0, o = -1, e = -1;
	char p[256];

	/* every parent but the last is shared (01777), the last is the
	 * command's own (0755) */
	for (const char *s = dir + 1;; s++) {
		const char *slash = strchr(s, '/');
		size_t n = slash ? (size_t)(slash - dir) : strlen(dir);
		memcpy(p, dir, n);
		p[n] = '\0';
		if (slash) {
			if (strcmp(p, "/tmp") != 0 && (r = mkdir_one(p, 01777, true)) < 0)
				goto out;
			s = slash;
		} else {
			if (mkdir(p, 0755) < 0) {
				r = -errno;
				goto out;
			}
			break;
		}
	}
	safe_snprintf(p, sizeof(p), "%s/command.txt", dir);
	int c = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (c < 0) {
		r = -errno;
		goto out;
	}
	(void)write_full(c, cmdline, strlen(cmdline));
	(void)write_full(c, "\n", 1);
	close(c);
	safe_snprintf(p, sizeof(p), "%s/stdout.txt", dir);
	o = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	safe_snprintf(p, sizeof(p), "%s/stderr.txt", dir);
	e = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (o < 0 || e < 0) {
		r = -errno;
		close_if_open(o);
		close_if_open(e);
		goto out;
	}
	*out_fd = o;
	*err_fd = e;
out:
	setfsuid(old_uid);
	setfsgid(old_gid);
	init_creds_changed();
	return r;
}
