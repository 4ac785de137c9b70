/* api/files.c — the public file calls: checks, then the sandbox's
 * backend. What is built from other calls (exists, a listing as an
 * array, a watch for a while) is built here once for both backends.
 * Runs in the caller's process. */
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "base/accounts.h"
#include "proto/messages.h"

int abox_file_read(abox_sandbox *sb, const char *path, const char *user, abox_data_fn fn, void *ud,
		   uint64_t *size, abox_error *err)
{
	API_NEED(sb, "read");
	return API_CALL(sb->ctx, file_read, "read", sb, path, user, fn, ud, size, err);
}

int abox_file_write(abox_sandbox *sb, const char *path, const char *user, const void *data, size_t len,
		    int parents, abox_error *err)
{
	API_NEED(sb, "write");
	return API_CALL(sb->ctx, file_write, "write", sb, path, user, -1, data, len, parents, NULL, err);
}

int abox_file_write_fd(abox_sandbox *sb, const char *path, const char *user, int fd, int parents,
		       uint64_t *size, abox_error *err)
{
	API_NEED(sb, "write");
	return API_CALL(sb->ctx, file_write, "write", sb, path, user, fd, NULL, 0, parents, size, err);
}

int abox_file_stat(abox_sandbox *sb, const char *path, const char *user, abox_file_info *out, abox_error *err)
{
	API_NEED(sb, "stat");
	return API_CALL(sb->ctx, file_stat, "stat", sb, path, user, out, err);
}

int abox_file_exists(abox_sandbox *sb, const char *path, const char *user, int *exists, abox_error *err)
{
	abox_file_info info;
	abox_error e2 = ABOX_ERROR_INIT;
	int r = abox_file_stat(sb, path, user, &info, &e2);
	if (r == -ENOENT || r == -ENOTDIR) {
		*exists = 0;
		return 0;
	}
	if (r < 0) {
		if (err)
			*err = e2;
		return r;
	}
	*exists = 1;
	return 0;
}

int abox_file_list_each(abox_sandbox *sb, const char *path, const char *user, unsigned depth,
			abox_file_entry_fn fn, void *userdata, abox_error *err)
{
	API_NEED(sb, "list");
	if (!fn)
		return abox_error_setx(err, EINVAL, "list: no callback");
	return API_CALL(sb->ctx, file_list, "list", sb, path, user, depth, fn, userdata, err);
}

struct list_acc {
	abox_file_info *v;
	size_t n, cap;
	bool oom;
};

static int list_add(const abox_file_info *e, void *ud)
{
	struct list_acc *a = ud;
	if (a->n == a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 32;
		abox_file_info *nv = realloc(a->v, ncap * sizeof(*nv));
		if (!nv) {
			a->oom = true;
			return 1;
		}
		a->v = nv;
		a->cap = ncap;
	}
	a->v[a->n++] = *e;
	return 0;
}

int abox_file_list(abox_sandbox *sb, const char *path, const char *user, unsigned depth, abox_file_info **out,
		   size_t *n, abox_error *err)
{
	struct list_acc a = { 0 };
	int r = abox_file_list_each(sb, path, user, depth, list_add, &a, err);
	if (a.oom) {
		free(a.v);
		return abox_error_set(err, ENOMEM, "list");
	}
	if (r < 0) {
		free(a.v);
		return r;
	}
	*out = a.v;
	*n = a.n;
	return 0;
}

int abox_file_mkdir(abox_sandbox *sb, const char *path, const char *user, int *made, abox_error *err)
{
	API_NEED(sb, "mkdir");
	return API_CALL(sb->ctx, file_mkdir, "mkdir", sb, path, user, made, err);
}

int abox_file_move(abox_sandbox *sb, const char *from, const char *to, const char *user, abox_error *err)
{
	API_NEED(sb, "move");
	return API_CALL(sb->ctx, file_move, "move", sb, from, to, user, err);
}

int abox_file_remove(abox_sandbox *sb, const char *path, const char *user, abox_error *err)
{
	API_NEED(sb, "remove");
	return API_CALL(sb->ctx, file_remove, "remove", sb, path, user, err);
}

int abox_file_meta_set(abox_sandbox *sb, const char *path, const char *user, const char *const *kv, size_t n,
		       abox_error *err)
{
	API_NEED(sb, "file metadata");
	return API_CALL(sb->ctx, file_meta_set, "file metadata", sb, path, user, kv, n, err);
}

int abox_file_meta_get(abox_sandbox *sb, const char *const *paths, size_t n, const char *user, abox_meta_fn fn,
		       void *userdata, abox_error *err)
{
	API_NEED(sb, "file metadata");
	return API_CALL(sb->ctx, file_meta_get, "file metadata", sb, paths, n, user, fn, userdata, err);
}

/* ---- watches ----------------------------------------------------------- */

int abox_watch_start(abox_sandbox *sb, const char *path, const char *user, int recursive, abox_watch **out,
		     abox_error *err)
{
	API_NEED(sb, "watch");
	if (!sb->ctx->be->watch_start)
		return backend_unsupported(sb->ctx, "watch", err);
	abox_watch *w = calloc(1, sizeof(*w));
	if (!w)
		return abox_error_set(err, ENOMEM, "watch");
	w->sb = sb;
	int r = sb->ctx->be->watch_start(sb, path, user, recursive, w, err);
	if (r < 0) {
		free(w);
		return r;
	}
	*out = w;
	return 0;
}

int abox_watch_fd(const abox_watch *w)
{
	return w->sb->conn;
}

int abox_watch_dispatch(abox_watch *w, abox_fs_event_fn fn, void *ud, abox_error *err)
{
	for (;;) {
		if (w->gone)
			return abox_error_setx(err, EPIPE, "watch: the sandbox went away");
		struct proto_frame f;
		int k = proto_reader_next(&w->sb->rd, &f);
		if (k < 0)
			return abox_error_setx(err, EPROTO, "watch: broken frame from init");
		if (k > 0) {
			for (unsigned i = 0; i < f.nfds; i++)
				close(f.fds[i]);
			if (f.id != w->id || f.type != MSG_EV_FS_EVENT)
				continue;
			char evpath[4096] = "";
			uint64_t type = 0;
			size_t off = 0;
			struct proto_field fl;
			while (proto_field_next(&f, &off, &fl) > 0) {
				if (fl.tag == F_PATH)
					safe_snprintf(evpath, sizeof(evpath), "%.*s", (int)(fl.len < 4095 ? fl.len : 4095),
						      (const char *)fl.val);
				else if (fl.tag == F_TYPE)
					(void)proto_field_u64(&fl, &type);
			}
			if (fn && fn((abox_fs_event_type)type, evpath, ud) != 0)
				return 1;
			continue;
		}
		k = proto_reader_fill(&w->sb->rd);
		if (k == -EAGAIN)
			return 0;
		if (k <= 0)
			w->gone = true;
	}
}

void abox_watch_free(abox_watch *w)
{
	if (!w)
		return;
	(void)w->sb->ctx->be->watch_stop(w, false, NULL);
	free(w);
}

int abox_file_watch(abox_sandbox *sb, const char *path, const char *user, int recursive, int timeout_ms,
		    abox_fs_event_fn fn, void *ud, abox_error *err)
{
	abox_watch *w;
	int r = abox_watch_start(sb, path, user, recursive, &w, err);
	if (r < 0)
		return r;
	int64_t until = timeout_ms >= 0 ? clock_mono_ms() + timeout_ms : 0;
	for (;;) {
		r = abox_watch_dispatch(w, fn, ud, err);
		if (r != 0)
			break;
		int wait = -1;
		if (until) {
			int64_t left = until - clock_mono_ms();
			if (left <= 0)
				break;
			wait = (int)left;
		}
		struct pollfd p = { .fd = abox_watch_fd(w), .events = POLLIN };
		(void)poll(&p, 1, wait);
	}
	/* ended by its deadline or the callback: init confirms the end */
	int s = r < 0 ? 0 : sb->ctx->be->watch_stop(w, true, err);
	if (r < 0)
		(void)sb->ctx->be->watch_stop(w, false, NULL);
	free(w);
	return r < 0 ? r : s;
}

/* ---- the sandbox's own users and groups ------------------------------- */

int abox_accounts_read(abox_sandbox *sb, abox_accounts **out, abox_error *err)
{
	API_NEED(sb, "accounts");
	return API_CALL(sb->ctx, accounts_read, "accounts", sb, out, err);
}

int abox_accounts_user(const abox_accounts *a, const char *name, uint32_t *uid, uint32_t *gid, const char **home)
{
	struct acct_user u;
	if (!a || !a->passwd || acct_find_user(a->passwd, a->passwd_len, name, &u) < 0)
		return -ABOX_ENOUSER;
	/* the home lives in the handle until the next call or the free */
	((abox_accounts *)a)->last = u;
	if (uid)
		*uid = u.uid;
	if (gid)
		*gid = u.gid;
	if (home)
		*home = a->last.home;
	return 0;
}

int abox_accounts_user_name(const abox_accounts *a, uint32_t uid, char *buf, size_t n)
{
	return a && a->passwd ? acct_name_of(a->passwd, a->passwd_len, uid, buf, n) : -ENOENT;
}

int abox_accounts_group_name(const abox_accounts *a, uint32_t gid, char *buf, size_t n)
{
	return a && a->group ? acct_name_of(a->group, a->group_len, gid, buf, n) : -ENOENT;
}

void abox_accounts_free(abox_accounts *a)
{
	if (!a)
		return;
	free(a->passwd);
	free(a->group);
	free(a);
}
