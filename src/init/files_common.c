/* abox-init/files_common.c — what the file operations (files.c) and the
 * uploads (files_write.c) both use: an operation's name, its error
 * answer, and mkdir -p. Below both, so neither calls into the other's
 * file for them.
 * Runs in abox-init. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"
#include "files.h"
#include "init.h"
#include "proto/messages.h"
#include "base/openat2.h"

const char *files_what(uint16_t type)
{
	switch (type) {
	case MSG_REQ_FS_READ:
		return "read";
	case MSG_REQ_FS_WRITE:
		return "write";
	case MSG_REQ_FS_STAT:
		return "stat";
	case MSG_REQ_FS_LIST:
		return "list";
	case MSG_REQ_FS_MKDIR:
		return "mkdir";
	case MSG_REQ_FS_MOVE:
		return "move";
	case MSG_REQ_FS_REMOVE:
		return "remove";
	default:
		return "files";
	}
}

void files_error(int ci, const struct proto_frame *f, int code, const char *path)
{
	char msg[600];
	safe_snprintf(msg, sizeof(msg), "%s '%s': %s", files_what(f->type), path ? path : "",
		      errno_name(code) ? errno_name(code) : "error");
	init_send_error(ci, f->id, code, msg);
}

/* openat2 and RESOLVE_NO_MAGICLINKS, for the C libraries whose headers
 * lack them (musl's) */
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define FILES_RESOLVE_NO_MAGICLINKS 0x02
struct files_open_how {
	uint64_t flags, mode, resolve;
};

int files_openat(int dfd, const char *path, int flags, mode_t mode)
{
	struct files_open_how how = {
		.flags = (uint64_t)(unsigned)flags,
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = FILES_RESOLVE_NO_MAGICLINKS,
	};
	long fd = openat2_retry(dfd, path, &how, sizeof(how));
	/* kernels before 5.6: no openat2, and nothing better to ask for */
	if (fd < 0 && errno == ENOSYS)
		return openat(dfd, path, flags, mode);
	return (int)fd;
}

int files_anchor(const char *path, char *base, size_t n)
{
	size_t len = strlen(path);
	/* "a/b/" is "a/b" */
	while (len > 1 && path[len - 1] == '/')
		len--;
	const char *slash = memrchr(path, '/', len);
	char dir[4096];
	const char *last = slash ? slash + 1 : path;
	size_t dlen = slash ? (slash == path ? 1 : (size_t)(slash - path)) : 1;
	size_t blen = len - (size_t)(last - path);
	if (dlen >= sizeof(dir) || blen + 1 > n)
		return -ENAMETOOLONG;
	memcpy(dir, slash ? path : ".", dlen);
	dir[dlen] = '\0';
	memcpy(base, last, blen);
	base[blen] = '\0';
	if (!base[0]) /* "/" itself */
		snprintf(base, n, ".");
	int fd = files_openat(AT_FDCWD, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

/* mkdir -p of path's parents (or of path itself when self), one folder
 * at a time below the one before (files_openat), never by the whole
 * path: a path that crosses a magic link is refused at that link. */
int files_make_dirs(const char *path, bool self)
{
	char p[4096];
	size_t n = strlen(path);
	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, path, n + 1);
	if (!self) {
		char *slash = strrchr(p, '/');
		if (!slash || slash == p)
			return 0;
		*slash = '\0';
	}
	int cur = files_openat(AT_FDCWD, p[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (cur < 0)
		return -errno;
	int r = 0;
	for (char *save = NULL, *c = strtok_r(p, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST) {
			r = -errno;
			break;
		}
		int next = files_openat(cur, c, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (next < 0) {
			r = -errno;
			break;
		}
		close(cur);
		cur = next;
	}
	close(cur);
	return r;
}
