/* abox-init/meta.c — file metadata as E2B's envd keeps it: user-defined
 * key/value pairs stored as the file's "user.e2b.<key>" extended
 * attributes, set on upload (X-Metadata-* headers) and read back with the
 * file's entry. Validating keys and values (what the daemon accepts from
 * HTTP) is the daemon's job; this file only bounds what it reads back.
 *
 * Like files.c, paths resolve in init's root (the sandbox's), and every
 * operation runs with the requested user's filesystem identity, so a user
 * can label only what it may label. Symlinks are not followed: the l*xattr
 * calls act on the link itself (where user.* attributes are refused), so a
 * link cannot redirect a label onto another file. Runs in abox-init. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/xattr.h>

#include "base/base.h"
#include "init.h"
#include "proto/messages.h"

#define META_PREFIX "user.e2b."
#define META_MAX_PATHS 100000  /* one listing's worth (files.c's LIST_MAX_ENTRIES) */
#define META_MAX_NAMES 65536   /* bytes of one file's attribute names */
#define META_MAX_VALUE 65536

struct meta_req {
	struct init_ident id;
};

static void as_user(const struct meta_req *r)
{
	users_enter(&r->id);
}

static void as_init(void)
{
	users_leave();
}

/* Adds one file's metadata pairs to m; 1 when it had any. */
static int put_meta(struct proto_msg *m, const char *path)
{
	static char names[META_MAX_NAMES], value[META_MAX_VALUE + 1];
	ssize_t n = llistxattr(path, names, sizeof(names));
	if (n <= 0)
		return 0;
	int any = 0;
	for (char *k = names; k < names + n; k += strlen(k) + 1) {
		if (strncmp(k, META_PREFIX, strlen(META_PREFIX)) != 0)
			continue;
		ssize_t v = lgetxattr(path, k, value, META_MAX_VALUE);
		if (v < 0 || m->len + (size_t)v + strlen(k) + 64 > PROTO_MAX_PAYLOAD / 2)
			continue; /* one frame stays well inside the protocol's bound */
		value[v] = '\0';
		proto_put_str(m, F_META_KEY, k + strlen(META_PREFIX));
		proto_put_str(m, F_META_VALUE, value);
		any = 1;
	}
	return any;
}

static void meta_get(int ci, const struct proto_frame *f, const struct meta_req *r)
{
	size_t off = 0;
	struct proto_field fl;
	uint64_t index = 0;
	as_user(r);
	while (proto_field_next(f, &off, &fl) > 0 && index < META_MAX_PATHS) {
		if (fl.tag != F_PATH)
			continue;
		char *path = NULL;
		if (proto_field_strdup(&fl, &path) == 0) {
			struct proto_msg m;
			proto_msg_init(&m, MSG_EV_ENTRY, f->id);
			proto_put_u64(&m, F_COUNT, index);
			char buf[4200];
			const char *at = users_path(&r->id, path, buf, sizeof(buf));
			if (at && put_meta(&m, at))
				init_queue(ci, &m);
			else
				proto_msg_free(&m);
			free(path);
		}
		index++;
	}
	as_init();
	struct proto_msg ok;
	proto_msg_init(&ok, MSG_EV_OK, f->id);
	init_queue(ci, &ok);
}

static void meta_set(int ci, const struct proto_frame *f, const struct meta_req *r)
{
	size_t off = 0;
	struct proto_field fl;
	_cleanup_free_ char *path = NULL, *key = NULL;
	int code = 0;
	/* the path comes first; each key is followed by its value */
	as_user(r);
	while (!code && proto_field_next(f, &off, &fl) > 0) {
		if (fl.tag == F_PATH && !path) {
			code = -proto_field_strdup(&fl, &path);
		} else if (fl.tag == F_META_KEY) {
			free(key);
			key = NULL;
			code = -proto_field_strdup(&fl, &key);
		} else if (fl.tag == F_META_VALUE && key && path) {
			char name[300], buf[4200];
			const char *at = users_path(&r->id, path, buf, sizeof(buf));
			if (snprintf(name, sizeof(name), META_PREFIX "%s", key) >= (int)sizeof(name) || !at)
				code = ENAMETOOLONG;
			else if (lsetxattr(at, name, fl.val, fl.len, 0) < 0)
				code = errno;
		}
	}
	as_init();
	if (!path && !code)
		code = EINVAL;
	if (code) {
		char msg[600];
		safe_snprintf(msg, sizeof(msg), "metadata of '%s': %s", path ? path : "", errno_name(code) ? errno_name(code) : "error");
		init_send_error(ci, f->id, code, msg);
		return;
	}
	struct proto_msg ok;
	proto_msg_init(&ok, MSG_EV_OK, f->id);
	init_queue(ci, &ok);
}

void meta_handle(int ci, const struct proto_frame *f)
{
	struct meta_req r;
	int e = users_ident(f, &r.id);
	if (e < 0) {
		init_send_error(ci, f->id, -e, e == -ABOX_ENOUSER ? "metadata: no such user in the sandbox (not in its /etc/passwd)"
							    : "metadata: the user cannot be looked up");
		return;
	}
	if (f->type == MSG_REQ_FS_META_GET)
		meta_get(ci, f, &r);
	else
		meta_set(ci, f, &r);
}
