/* abox-init/files_common.c — what the file operations (files.c) and the
 * uploads (files_write.c) both use: an operation's name, its error
 * answer, and mkdir -p. Below both, so neither calls into the other's
 * file for them.
 * Runs in abox-init. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"
#include "files.h"
#include "init.h"
#include "proto/messages.h"

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

/* mkdir -p of path's parents (or of path itself when self). */
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
	for (char *s = p + 1;; s++) {
		char *slash = strchr(s, '/');
		if (slash)
			*slash = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (!slash)
			break;
		*slash = '/';
		s = slash;
	}
	return 0;
}
