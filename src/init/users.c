/* abox-init/users.c — who a request runs as: the sandbox's own users.
 *
 * The host names `user` and `root` with their ids (uid 1000 and 0, the
 * template contract) and any other name bare; init looks such a name up
 * in the sandbox's /etc/passwd and /etc/group (users made inside with
 * useradd, as agent harnesses do), so the host never parses a sandbox's
 * files for it nor trusts its own idea of who exists there. Parsing is
 * base/accounts.c; this file reads the files and enters an identity.
 * Runs in abox-init. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/accounts.h"
#include "base/base.h"
#include "init.h"
#include "proto/messages.h"

int users_read(const char *path, char **text, size_t *len)
{
	/* a sandbox's root can make /etc/passwd a FIFO (the open would block
	 * PID 1 and with it every request), a device or a huge file: only a
	 * regular file is read, without blocking, and at most
	 * ACCT_FILE_MAX of it */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	char *buf = malloc(ACCT_FILE_MAX);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	size_t used = 0;
	while (used < ACCT_FILE_MAX) {
		ssize_t n = read(fd, buf + used, ACCT_FILE_MAX - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	*text = buf;
	*len = used;
	return 0;
}

static int lookup(const char *name, struct init_ident *id)
{
	char *pw = NULL, *gr = NULL;
	size_t pwn = 0, grn = 0;
	struct acct_user u;
	int r = users_read("/etc/passwd", &pw, &pwn);
	if (r == 0)
		r = acct_find_user(pw, pwn, name, &u);
	free(pw);
	if (r == -ENOENT || r == -EINVAL)
		return -ABOX_ENOUSER;
	if (r < 0)
		return r;
	id->uid = u.uid;
	id->gid = u.gid;
	safe_snprintf(id->home, sizeof(id->home), "%s", u.home);
	uint32_t groups[INIT_MAX_GROUPS];
	size_t n = 1;
	groups[0] = u.gid;
	if (users_read("/etc/group", &gr, &grn) == 0)
		n = acct_groups(gr, grn, name, u.gid, groups, INIT_MAX_GROUPS);
	free(gr);
	for (size_t i = 0; i < n; i++)
		id->groups[i] = (gid_t)groups[i];
	id->ngroups = (unsigned)n;
	return 0;
}

int users_ident(const struct proto_frame *f, struct init_ident *id)
{
	size_t off = 0;
	struct proto_field fl;
	uint64_t v;
	bool lookup_name = false;
	char name[ACCT_NAME_MAX + 1] = "";
	*id = (struct init_ident){ .uid = 1000, .gid = 1000 };
	int k;
	while ((k = proto_field_next(f, &off, &fl)) > 0) {
		if (fl.tag == F_UID && proto_field_u64(&fl, &v) == 0)
			id->uid = (uid_t)v;
		else if (fl.tag == F_LOOKUP)
			lookup_name = true;
		else if (fl.tag == F_GID && proto_field_u64(&fl, &v) == 0)
			id->gid = (gid_t)v;
		else if (fl.tag == F_USER) {
			if (fl.len == 0 || fl.len > ACCT_NAME_MAX || memchr(fl.val, '\0', fl.len))
				return -ABOX_ENOUSER;
			memcpy(name, fl.val, fl.len);
			name[fl.len] = '\0';
		}
	}
	if (k < 0)
		return k;
	if (lookup_name)
		return name[0] ? lookup(name, id) : -ABOX_ENOUSER;
	/* `user` and `root` as the host names them */
	safe_snprintf(id->home, sizeof(id->home), "%s", id->uid == 0 ? "/root" : "/home/user");
	return 0;
}

int users_lookup(const char *name, struct init_ident *id)
{
	return acct_name_ok(name) ? lookup(name, id) : -ABOX_ENOUSER;
}

const char *users_path(const struct init_ident *id, const char *path, char *buf, size_t n)
{
	/* as envd: "~", "~/x" and a relative path are below the user's home */
	if (!path || !path[0] || path[0] == '/')
		return path;
	const char *rest = path;
	if (rest[0] == '~' && (rest[1] == '\0' || rest[1] == '/'))
		rest += rest[1] ? 2 : 1;
	const char *home = id->home[0] ? id->home : "/";
	bool slash = *rest && home[strlen(home) - 1] != '/';
	if (safe_snprintf(buf, n, "%s%s%s", home, slash ? "/" : "", rest) >= n)
		return NULL;
	return buf;
}

void users_enter(const struct init_ident *id)
{
	/* the raw syscall changes this thread's groups only (the C library's
	 * setgroups would signal every thread); without it a file operation
	 * as a user would carry init's own supplementary groups */
	syscall(SYS_setgroups, (long)id->ngroups, id->groups);
	setfsgid(id->gid);
	setfsuid(id->uid);
}

void users_leave(void)
{
	setfsuid(0);
	setfsgid(0);
	syscall(SYS_setgroups, 0L, NULL);
	init_creds_changed();
}

void users_accounts(int ci, const struct proto_frame *f)
{
	char *pw = NULL, *gr = NULL;
	size_t pwn = 0, grn = 0;
	/* either may be missing: a sandbox without /etc/group still has
	 * users; the host sees empty text */
	(void)users_read("/etc/passwd", &pw, &pwn);
	(void)users_read("/etc/group", &gr, &grn);
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_OK, f->id);
	proto_put_bytes(&m, F_DATA, pw ? pw : "", pwn);
	proto_put_bytes(&m, F_TARGET, gr ? gr : "", grn);
	free(pw);
	free(gr);
	init_queue(ci, &m);
}
