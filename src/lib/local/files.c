/* local/files.c — the host side of file operations: requests to
 * abox-init, which does them inside the sandbox as the requested user
 * (see src/init/files.c for why the host never opens sandbox paths).
 * Runs in the CLI/daemon. */
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "local/local.h"
#include "base/accounts.h"
#include "proto/messages.h"

struct req_cb {
	int (*on_frame)(const struct proto_frame *f, void *ud);
	void *ud;
};

static int who(const char *user, struct proto_msg *m, abox_error *err)
{
	const char *u = user ? user : "user";
	/* `user` and `root` are the template contract's (uid 1000 and 0):
	 * sent with their ids, no lookup inside. Any other name is the
	 * sandbox's own, looked up by init in its /etc/passwd. */
	if (!acct_name_ok(u)) {
		proto_msg_free(m);
		return abox_error_setx(err, EINVAL, "'%s' is not a user name", u);
	}
	proto_put_str(m, F_USER, u);
	if (strcmp(u, "user") == 0) {
		proto_put_u64(m, F_UID, 1000);
		proto_put_u64(m, F_GID, 1000);
	} else if (strcmp(u, "root") == 0) {
		proto_put_u64(m, F_UID, 0);
		proto_put_u64(m, F_GID, 0);
	} else {
		proto_put_u64(m, F_LOOKUP, 1);
		proto_put_u64(m, F_UID, 65534);
		proto_put_u64(m, F_GID, 65534);
	}
	return 0;
}

const char *backend_user_path(const char *user, const char *path, char *buf, size_t n)
{
	/* as envd: "~" and a path that is not absolute are the user's home
	 * and below it (a file written as "rel.txt" lands in the home, not
	 * in / where the user may not write). Only `user` and `root` have
	 * a home known here: another user's relative path goes to init as
	 * it is, which places it below the home its /etc/passwd names. */
	if (!path || !path[0] || path[0] == '/')
		return path;
	if (user && strcmp(user, "root") != 0 && strcmp(user, "user") != 0)
		return path;
	const char *home = user && strcmp(user, "root") == 0 ? "/root" : "/home/user";
	const char *rest = path;
	if (rest[0] == '~' && (rest[1] == '\0' || rest[1] == '/'))
		rest += rest[1] ? 2 : 1;
	if (safe_snprintf(buf, n, "%s%s%s", home, *rest ? "/" : "", rest) >= n)
		return NULL;
	return buf;
}

/* What wait_answer hands on, and whether the caller said stop. */
struct answer {
	int (*on_frame)(const struct proto_frame *f, void *ud);
	void (*on_ok)(const struct proto_frame *f, void *ud);
	void *ud;
	bool stopped;
};

/* A frame of a file request's answer before its end: EV_ERROR is init's
 * refusal, with its errno and message; anything else is data. */
static int answer_frame(const struct proto_frame *f, const char *what, void *ud, abox_error *err)
{
	struct answer *a = ud;
	if (f->type == MSG_EV_ERROR) {
		uint64_t code = EIO;
		_cleanup_free_ char *msg = NULL;
		size_t off = 0;
		struct proto_field fl;
		while (proto_field_next(f, &off, &fl) > 0) {
			if (fl.tag == F_ERRNO)
				(void)proto_field_u64(&fl, &code);
			else if (fl.tag == F_MESSAGE && !msg)
				(void)proto_field_strdup(&fl, &msg);
		}
		if (code == 0 || code > 4095)
			code = EIO;
		return abox_error_setx(err, (int)code, "%s", msg ? msg : "file operation failed");
	}
	if (a->on_frame && !a->stopped && a->on_frame(f, a->ud) != 0)
		a->stopped = true; /* keep reading to the end of this request */
	return 0;
}

static void answer_ok(const struct proto_frame *f, void *ud)
{
	struct answer *a = ud;
	if (a->on_ok)
		a->on_ok(f, a->ud);
}

/* Waits for the answer to request id: frames before EV_OK go to
 * on_frame (non-zero: no more of them); EV_OK goes to on_ok; EV_ERROR
 * becomes the error, with init's errno and message. */
static int wait_answer(abox_sandbox *sb, uint32_t id, int (*on_frame)(const struct proto_frame *, void *),
		       void (*on_ok)(const struct proto_frame *, void *), void *ud, abox_error *err)
{
	struct answer a = { .on_frame = on_frame, .on_ok = on_ok, .ud = ud };
	int r = backend_answer(sb, id, "files", answer_frame, answer_ok, &a, err);
	if (r >= 0 && a.stopped)
		return abox_error_setx(err, ECANCELED, "stopped by the caller");
	return r;
}

/* Sends m (made by begin) and waits for its answer (wait_answer). */
static int ask(abox_sandbox *sb, struct proto_msg *m, const char *what,
	       int (*on_frame)(const struct proto_frame *, void *),
	       void (*on_ok)(const struct proto_frame *, void *), void *ud, abox_error *err)
{
	uint32_t id = m->id;
	int r = backend_send(sb, m);
	if (r < 0)
		return abox_error_set(err, -r, "%s: send", what);
	return wait_answer(sb, id, on_frame, on_ok, ud, err);
}

static int begin(abox_sandbox *sb, uint16_t type, struct proto_msg *m, const char *path, const char *user,
		 abox_error *err)
{
	int r = backend_can_ask(sb, "files", err);
	if (r < 0)
		return r;
	if (!path || !path[0])
		return abox_error_setx(err, EINVAL, "empty path");
	char abs[4200];
	path = backend_user_path(user, path, abs, sizeof(abs));
	if (!path || strlen(path) >= 4096)
		return abox_error_setx(err, ENAMETOOLONG, "path too long");
	proto_msg_init(m, type, ++sb->next_req);
	proto_put_str(m, F_PATH, path);
	return who(user, m, err);
}

struct read_ctx {
	abox_data_fn fn;
	void *ud;
	uint64_t size;
};

static int read_chunk(const struct proto_frame *f, void *ud)
{
	struct read_ctx *c = ud;
	if (f->type != MSG_EV_DATA)
		return 0;
	size_t off = 0;
	struct proto_field fl;
	while (proto_field_next(f, &off, &fl) > 0)
		if (fl.tag == F_DATA && c->fn && c->fn(fl.val, fl.len, c->ud) != 0)
			return 1;
	return 0;
}

static void read_size(const struct proto_frame *f, void *ud)
{
	struct read_ctx *c = ud;
	size_t off = 0;
	struct proto_field fl;
	while (proto_field_next(f, &off, &fl) > 0)
		if (fl.tag == F_SIZE)
			(void)proto_field_u64(&fl, &c->size);
}

int local_file_read(abox_sandbox *sb, const char *path, const char *user, abox_data_fn fn, void *ud,
		   uint64_t *size, abox_error *err)
{
	struct proto_msg m;
	int r = begin(sb, MSG_REQ_FS_READ, &m, path, user, err);
	if (r < 0)
		return r;
	struct read_ctx c = { .fn = fn, .ud = ud };
	r = ask(sb, &m, "read", read_chunk, read_size, &c, err);
	if (r >= 0 && size)
		*size = c.size;
	return r;
}

#define WRITE_CHUNK 65536

/* Writes from a source: either memory or an fd, chunk by chunk. */
static int write_from(abox_sandbox *sb, const char *path, const char *user, const uint8_t *mem, size_t len,
		      int fd, int parents, uint64_t *size, abox_error *err)
{
	struct proto_msg m;
	int r = begin(sb, MSG_REQ_FS_WRITE, &m, path, user, err);
	if (r < 0)
		return r;
	uint32_t id = m.id;
	proto_put_u64(&m, F_FLAGS, parents ? FS_PARENTS : 0);
	if ((r = backend_send(sb, &m)) < 0)
		return abox_error_set(err, -r, "write: send");
	/* one buffer per call: the daemon runs several writes at once, each
	 * on its own thread (a shared static buffer mixed their bytes) */
	_cleanup_free_ uint8_t *buf = fd >= 0 ? malloc(WRITE_CHUNK) : NULL;
	if (fd >= 0 && !buf)
		r = abox_error_set(err, ENOMEM, "write");
	size_t off = 0;
	while (r >= 0) {
		const uint8_t *chunk;
		size_t n;
		if (fd >= 0) {
			ssize_t k = read(fd, buf, WRITE_CHUNK);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				r = abox_error_set(err, errno, "write: read the source");
				break;
			}
			chunk = buf;
			n = (size_t)k;
		} else {
			chunk = mem + off;
			n = len - off > WRITE_CHUNK ? WRITE_CHUNK : len - off;
			off += n;
		}
		if (n == 0)
			break;
		proto_msg_init(&m, MSG_REQ_FS_DATA, id);
		proto_put_bytes(&m, F_DATA, chunk, n);
		if ((r = backend_send(sb, &m)) < 0 || (r = backend_flush(sb, "write", err)) < 0) {
			abox_error_set(err, r < 0 ? -r : EIO, "write: send");
			break;
		}
	}
	/* the close is sent even after a source error, so init frees the
	 * write; the error we report is ours */
	proto_msg_init(&m, MSG_REQ_FS_CLOSE, id);
	int k = backend_send(sb, &m);
	if (r < 0)
		return r;
	if (k < 0)
		return abox_error_set(err, -k, "write: send");
	struct read_ctx c = { 0 };
	r = wait_answer(sb, id, NULL, read_size, &c, err);
	if (r >= 0 && size)
		*size = c.size;
	return r;
}

int local_file_write(abox_sandbox *sb, const char *path, const char *user, int fd, const void *data, size_t len,
		     int parents, uint64_t *size, abox_error *err)
{
	return write_from(sb, path, user, data, len, fd, parents, size, err);
}

static void parse_entry(const struct proto_frame *f, abox_file_info *e)
{
	memset(e, 0, sizeof(*e));
	size_t off = 0;
	struct proto_field fl;
	uint64_t v;
	int64_t sv;
	while (proto_field_next(f, &off, &fl) > 0) {
		switch (fl.tag) {
		case F_PATH: safe_snprintf(e->path, sizeof(e->path), "%.*s", (int)(fl.len < 4095 ? fl.len : 4095), (const char *)fl.val); break;
		case F_NAME: safe_snprintf(e->name, sizeof(e->name), "%.*s", (int)(fl.len < 255 ? fl.len : 255), (const char *)fl.val); break;
		case F_TARGET: safe_snprintf(e->target, sizeof(e->target), "%.*s", (int)(fl.len < 4095 ? fl.len : 4095), (const char *)fl.val); break;
		case F_TYPE: if (proto_field_u64(&fl, &v) == 0) e->type = (abox_file_type)v; break;
		case F_SIZE: if (proto_field_u64(&fl, &v) == 0) e->size = v; break;
		case F_MODE: if (proto_field_u64(&fl, &v) == 0) e->mode = (uint32_t)v; break;
		case F_UID: if (proto_field_u64(&fl, &v) == 0) e->uid = (uint32_t)v; break;
		case F_GID: if (proto_field_u64(&fl, &v) == 0) e->gid = (uint32_t)v; break;
		case F_MTIME_MS: if (proto_field_i64(&fl, &sv) == 0) e->mtime_ms = sv; break;
		default: break;
		}
	}
}

static void stat_ok(const struct proto_frame *f, void *ud)
{
	parse_entry(f, ud);
}

int local_file_stat(abox_sandbox *sb, const char *path, const char *user, abox_file_info *out, abox_error *err)
{
	struct proto_msg m;
	int r = begin(sb, MSG_REQ_FS_STAT, &m, path, user, err);
	if (r < 0)
		return r;
	return ask(sb, &m, "stat", NULL, stat_ok, out, err);
}

/* Sends a listing request: depth checked here so that the caller learns
 * the limit's name, not init's clamp. */
static int list_begin(abox_sandbox *sb, const char *path, const char *user, unsigned depth, uint32_t *id,
		      abox_error *err)
{
	if (depth > ABOX_FILE_LIST_MAX_DEPTH)
		return abox_error_setx(err, EINVAL, "depth %u is over the limit of %u", depth,
				       (unsigned)ABOX_FILE_LIST_MAX_DEPTH);
	struct proto_msg m;
	int r = begin(sb, MSG_REQ_FS_LIST, &m, path, user, err);
	if (r < 0)
		return r;
	*id = m.id;
	proto_put_u64(&m, F_DEPTH, depth ? depth : 1);
	if ((r = backend_send(sb, &m)) < 0)
		return abox_error_set(err, -r, "list: send");
	return 0;
}

struct list_each {
	abox_file_entry_fn fn;
	void *ud;
	abox_file_info e; /* one entry at a time: 8 KiB whatever the tree */
};

static int each_entry(const struct proto_frame *f, void *ud)
{
	struct list_each *c = ud;
	if (f->type != MSG_EV_ENTRY)
		return 0;
	parse_entry(f, &c->e);
	return c->fn(&c->e, c->ud);
}

int local_file_list(abox_sandbox *sb, const char *path, const char *user, unsigned depth, abox_file_entry_fn fn,
		    void *userdata, abox_error *err)
{
	uint32_t id = 0;
	int r = list_begin(sb, path, user, depth, &id, err);
	if (r < 0)
		return r;
	struct list_each *c = calloc(1, sizeof(*c));
	if (!c) {
		/* the request is out: its answer must still be read away */
		(void)wait_answer(sb, id, NULL, NULL, NULL, NULL);
		return abox_error_set(err, ENOMEM, "list");
	}
	c->fn = fn;
	c->ud = userdata;
	r = wait_answer(sb, id, each_entry, NULL, c, err);
	free(c);
	return r;
}

static void made_flag(const struct proto_frame *f, void *ud)
{
	size_t off = 0;
	struct proto_field fl;
	uint64_t v;
	while (proto_field_next(f, &off, &fl) > 0)
		if (fl.tag == F_FLAGS && proto_field_u64(&fl, &v) == 0)
			*(int *)ud = (int)v;
}

int local_file_mkdir(abox_sandbox *sb, const char *path, const char *user, int *made, abox_error *err)
{
	struct proto_msg m;
	int r = begin(sb, MSG_REQ_FS_MKDIR, &m, path, user, err);
	if (r < 0)
		return r;
	int flag = 0;
	r = ask(sb, &m, "mkdir", NULL, made_flag, &flag, err);
	if (r >= 0 && made)
		*made = flag;
	return r;
}

int local_file_move(abox_sandbox *sb, const char *from, const char *to, const char *user, abox_error *err)
{
	struct proto_msg m;
	int r = begin(sb, MSG_REQ_FS_MOVE, &m, from, user, err);
	if (r < 0)
		return r;
	if (!to || !to[0]) {
		proto_msg_free(&m);
		return abox_error_setx(err, EINVAL, "move: empty destination");
	}
	char abs[4200];
	if (!(to = backend_user_path(user, to, abs, sizeof(abs))) || strlen(to) >= 4096) {
		proto_msg_free(&m);
		return abox_error_setx(err, ENAMETOOLONG, "move: destination too long");
	}
	proto_put_str(&m, F_TARGET, to);
	return ask(sb, &m, "move", NULL, NULL, NULL, err);
}

int local_file_remove(abox_sandbox *sb, const char *path, const char *user, abox_error *err)
{
	struct proto_msg m;
	int r = begin(sb, MSG_REQ_FS_REMOVE, &m, path, user, err);
	if (r < 0)
		return r;
	return ask(sb, &m, "remove", NULL, NULL, NULL, err);
}

int local_watch_start(abox_sandbox *sb, const char *path, const char *user, int recursive, abox_watch *w,
		      abox_error *err)
{
	struct proto_msg m;
	int r = begin(sb, MSG_REQ_FS_WATCH, &m, path, user, err);
	if (r < 0)
		return r;
	uint32_t id = m.id;
	proto_put_u64(&m, F_FLAGS, recursive ? FS_RECURSIVE : 0);
	if ((r = ask(sb, &m, "watch", NULL, NULL, NULL, err)) < 0)
		return r;
	w->id = id;
	return 0;
}

int local_watch_stop(abox_watch *w, bool answer, abox_error *err)
{
	if (w->gone)
		return 0;
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_FS_UNWATCH, w->id);
	int r = backend_send(w->sb, &m);
	if (r < 0)
		return abox_error_set(err, -r, "watch: send");
	return answer ? wait_answer(w->sb, w->id, NULL, NULL, NULL, err) : backend_flush(w->sb, "watch", err);
}

/* ---- file metadata (src/init/meta.c) ---------------------------------- */

/* An init older than metadata support answers EOPNOTSUPP ("unknown
 * request type"), as does a filesystem without user extended attributes. */
static int meta_unsupported(int r, abox_error *err)
{
	if (r != -EOPNOTSUPP)
		return r;
	char why[sizeof(err->msg)] = "";
	if (err)
		snprintf(why, sizeof(why), "%s", err->msg);
	return abox_error_setx(err, ENOTSUP, "file metadata: not kept here (%.400s)", why);
}

int local_file_meta_set(abox_sandbox *sb, const char *path, const char *user, const char *const *kv, size_t n,
		       abox_error *err)
{
	struct proto_msg m;
	int r = begin(sb, MSG_REQ_FS_META_SET, &m, path, user, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		proto_put_str(&m, F_META_KEY, kv[2 * i]);
		proto_put_str(&m, F_META_VALUE, kv[2 * i + 1]);
	}
	r = ask(sb, &m, "metadata", NULL, NULL, NULL, err);
	return r < 0 ? meta_unsupported(r, err) : r;
}

struct meta_ctx {
	abox_meta_fn fn;
	void *ud;
};

static int meta_entry(const struct proto_frame *f, void *ud)
{
	struct meta_ctx *c = ud;
	if (f->type != MSG_EV_ENTRY)
		return 0;
	size_t off = 0;
	struct proto_field fl;
	uint64_t index = 0;
	_cleanup_free_ char *key = NULL;
	while (proto_field_next(f, &off, &fl) > 0) {
		if (fl.tag == F_COUNT) {
			(void)proto_field_u64(&fl, &index);
		} else if (fl.tag == F_META_KEY) {
			free(key);
			key = NULL;
			(void)proto_field_strdup(&fl, &key);
		} else if (fl.tag == F_META_VALUE && key) {
			_cleanup_free_ char *value = NULL;
			if (proto_field_strdup(&fl, &value) == 0 && c->fn((size_t)index, key, value, c->ud) != 0)
				return 1;
		}
	}
	return 0;
}

int local_file_meta_get(abox_sandbox *sb, const char *const *paths, size_t n, const char *user, abox_meta_fn fn,
		       void *userdata, abox_error *err)
{
	if (n == 0)
		return 0;
	struct proto_msg m;
	int r = begin(sb, MSG_REQ_FS_META_GET, &m, paths[0], user, err);
	if (r < 0)
		return r;
	for (size_t i = 1; i < n; i++) {
		if (m.len + strlen(paths[i]) + 16 > PROTO_MAX_PAYLOAD) {
			proto_msg_free(&m);
			return abox_error_setx(err, E2BIG, "metadata: too many paths for one request");
		}
		char abs[4200];
		const char *pi = backend_user_path(user, paths[i], abs, sizeof(abs));
		proto_put_str(&m, F_PATH, pi ? pi : paths[i]);
	}
	struct meta_ctx c = { fn, userdata };
	r = ask(sb, &m, "metadata", meta_entry, NULL, &c, err);
	return r < 0 ? meta_unsupported(r, err) : r;
}

static void take_accounts(const struct proto_frame *f, void *ud)
{
	abox_accounts *a = ud;
	size_t off = 0;
	struct proto_field fl;
	while (proto_field_next(f, &off, &fl) > 0) {
		char **dst = fl.tag == F_DATA ? &a->passwd : fl.tag == F_TARGET ? &a->group : NULL;
		size_t *len = fl.tag == F_DATA ? &a->passwd_len : &a->group_len;
		if (!dst || *dst || fl.len > ACCT_FILE_MAX)
			continue;
		if ((*dst = malloc(fl.len + 1))) {
			memcpy(*dst, fl.val, fl.len);
			(*dst)[fl.len] = '\0';
			*len = fl.len;
		}
	}
}

int local_accounts_read(abox_sandbox *sb, abox_accounts **out, abox_error *err)
{
	int r = backend_can_ask(sb, "accounts", err);
	if (r < 0)
		return r;
	abox_accounts *a = calloc(1, sizeof(*a));
	if (!a)
		return abox_error_set(err, ENOMEM, "accounts");
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_ACCOUNTS, ++sb->next_req);
	if ((r = ask(sb, &m, "accounts", NULL, take_accounts, a, err)) < 0) {
		free(a->passwd);
		free(a->group);
		free(a);
		return r;
	}
	*out = a;
	return 0;
}
