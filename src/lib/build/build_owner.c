/* build/build_owner.c — COPY/ADD --chown: names resolved in the stage's
 * own /etc/passwd and /etc/group (never the host's), numbers as given. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/accounts.h"
#include "build/build.h"

/* A file of the stage (/etc/passwd), or NULL. */
static char *view_file(const struct build_viewl *v, const char *path, size_t *len)
{
	char res[4096], p[8300];
	struct stat st;
	const char *where;
	if (build_view_resolve(v, path, res, sizeof(res)) < 0 || build_view_lstat(v, res, &st, &where) < 0 ||
	    !S_ISREG(st.st_mode))
		return NULL;
	safe_snprintf(p, sizeof(p), "%s%s", where, res);
	char *text = NULL;
	return read_file_at(AT_FDCWD, p, ACCT_FILE_MAX, &text, len) < 0 ? NULL : text;
}

/* gid of group name in group text ("name:x:gid:..."), or -1 */
static long group_id(const char *text, const char *name)
{
	size_t nl = strlen(name);
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (strncmp(l, name, nl) != 0 || l[nl] != ':')
			continue;
		const char *f = strchr(l + nl + 1, ':');
		char *end;
		long id = f ? strtol(f + 1, &end, 10) : -1;
		if (f && end != f + 1 && *end == ':' && id >= 0 && id <= ACCT_ID_MAX)
			return id;
	}
	return -1;
}

/* --chown USER[:GROUP]: numbers, or names of the stage's own accounts
 * (root and user known without them); USER alone: its primary group
 * (a number: the same number), as docker does. */
int build_owner(const struct build_viewl *v, const char *spec, uid_t *uid, gid_t *gid)
{
	*uid = 0;
	*gid = 0;
	if (!spec)
		return 0;
	char u[64], g[64] = "";
	if (sscanf(spec, "%63[^:]:%63s", u, g) < 1)
		return -1;
	char *end;
	unsigned long n = strtoul(u, &end, 10);
	long primary = -1;
	if (!*end && end != u && n <= ACCT_ID_MAX) {
		*uid = (uid_t)n;
		primary = (long)n;
	} else if (acct_name_ok(u)) {
		size_t len = 0;
		_cleanup_free_ char *pw = view_file(v, "/etc/passwd", &len);
		struct acct_user a;
		if (pw && acct_find_user(pw, len, u, &a) == 0) {
			*uid = a.uid;
			primary = a.gid;
		} else if (!strcmp(u, "root") || !strcmp(u, "user")) {
			primary = *u == 'r' ? 0 : 1000;
			*uid = (uid_t)primary;
		} else {
			return -1;
		}
	} else {
		return -1;
	}
	if (!g[0]) {
		*gid = (gid_t)primary;
		return 0;
	}
	n = strtoul(g, &end, 10);
	if (!*end && end != g && n <= ACCT_ID_MAX) {
		*gid = (gid_t)n;
		return 0;
	}
	size_t len = 0;
	_cleanup_free_ char *gr = acct_name_ok(g) ? view_file(v, "/etc/group", &len) : NULL;
	long id = gr ? group_id(gr, g) : -1;
	if (id < 0 && (!strcmp(g, "root") || !strcmp(g, "user")))
		id = *g == 'r' ? 0 : 1000;
	if (id < 0)
		return -1;
	*gid = (gid_t)id;
	return 0;
}
