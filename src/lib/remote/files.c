/* remote/files.c — files through aboxd's envd plane: GET/POST /files
 * (streamed both ways, never whole in memory) and the filesystem Connect
 * service. Runs in the caller's process. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/accounts.h"
#include "remote/remote.h"

static int files_path(abox_sandbox *sb, const char *path, const char *user, char *out, size_t n, abox_error *err)
{
	if (user && !acct_name_ok(user))
		return abox_error_setx(err, EINVAL, "files: '%s' is not a user name", user);
	char *e = curl_easy_escape(sb->ctx->remote->easy, path, 0);
	if (!e)
		return abox_error_set(err, ENOMEM, "files");
	int k = snprintf(out, n, "/files?path=%s&username=%s", e, user ? user : "user");
	curl_free(e);
	if (k >= (int)n)
		return abox_error_setx(err, ENAMETOOLONG, "files: path too long");
	return 0;
}

struct sink {
	abox_data_fn fn;
	void *ud;
	uint64_t size;
	bool stopped;
};

static size_t to_caller(char *d, size_t sz, size_t nm, void *ud)
{
	struct sink *s = ud;
	size_t n = sz * nm;
	if (s->fn && n && s->fn(d, n, s->ud) != 0) {
		s->stopped = true;
		return 0;
	}
	s->size += n;
	return n;
}

/* Errors of GET /files come as JSON with a status; peek at the status
 * before any byte reaches the caller. */
struct sink_guard {
	struct sink s;
	CURL *h;
	struct rbuf err_body;
};

static size_t guarded(char *d, size_t sz, size_t nm, void *ud)
{
	struct sink_guard *g = ud;
	long status = 0;
	curl_easy_getinfo(g->h, CURLINFO_RESPONSE_CODE, &status);
	size_t n = sz * nm;
	if (status != 200) {
		if (g->err_body.len + n + 1 > 65536)
			return n; /* keep the start of a long error body */
		char *p = realloc(g->err_body.data, g->err_body.len + n + 1);
		if (!p)
			return 0;
		memcpy(p + g->err_body.len, d, n);
		g->err_body.data = p;
		g->err_body.len += n;
		p[g->err_body.len] = '\0';
		return n;
	}
	return to_caller(d, sz, nm, &g->s);
}

int remote_file_read(abox_sandbox *sb, const char *path, const char *user, abox_data_fn fn, void *ud, uint64_t *size,
		     abox_error *err)
{
	char p[8192];
	int r = files_path(sb, path, user, p, sizeof(p), err);
	if (r < 0)
		return r;
	struct sink_guard g = { .s = { .fn = fn, .ud = ud }, .h = sb->ctx->remote->easy };
	struct rreq q = { .method = "GET", .path = p, .sandbox = sb->id, .user = user, .token = sb->remote->token,
			  .sink = guarded, .sink_ud = &g };
	struct rbuf b = { 0 };
	long status = 0;
	r = remote_call(sb->ctx->remote, &q, &b, &status, err);
	if (r == -ECANCELED && g.s.stopped)
		r = abox_error_setx(err, ECANCELED, "read '%s': stopped by the caller", path);
	else if (r < 0 && g.err_body.len) {
		/* the status is known; the message is in the body we kept */
		struct rbuf eb = g.err_body;
		json_object *o = remote_json(&eb, "read", NULL), *v;
		const char *code = o && json_object_object_get_ex(o, "code", &v) && json_object_is_type(v, json_type_string)
					   ? json_object_get_string(v)
					   : NULL;
		const char *msg = o && json_object_object_get_ex(o, "message", &v) ? json_object_get_string(v) : NULL;
		r = abox_error_setx(err, remote_refine(remote_errno(status, code), msg), "%s", msg ? msg : "read failed");
		json_object_put(o);
	}
	rbuf_free(&g.err_body);
	rbuf_free(&b);
	if (r < 0)
		return r;
	if (size)
		*size = g.s.size;
	return 0;
}

struct source {
	int fd;
	const uint8_t *data;
	size_t len, off;
	uint64_t sent;
	int err;
};

static size_t from_caller(char *d, size_t sz, size_t nm, void *ud)
{
	struct source *s = ud;
	size_t n = sz * nm;
	if (s->fd >= 0) {
		ssize_t k;
		do
			k = read(s->fd, d, n);
		while (k < 0 && errno == EINTR);
		if (k < 0) {
			s->err = errno;
			return CURL_READFUNC_ABORT;
		}
		s->sent += (uint64_t)k;
		return (size_t)k;
	}
	size_t k = s->len - s->off < n ? s->len - s->off : n;
	memcpy(d, s->data + s->off, k);
	s->off += k;
	s->sent += k;
	return k;
}

int remote_file_write(abox_sandbox *sb, const char *path, const char *user, int fd, const void *data, size_t len,
		      int parents, uint64_t *size, abox_error *err)
{
	(void)parents; /* envd's upload always makes the folders above */
	char p[8192];
	int r = files_path(sb, path, user, p, sizeof(p), err);
	if (r < 0)
		return r;
	/* the body streams from memory or the fd; the daemon writes it in
	 * chunks as it comes (and makes missing parent folders, as E2B does) */
	struct source s = { .fd = fd, .data = data, .len = len };
	struct rreq q = { .method = "POST", .path = p, .sandbox = sb->id, .user = user, .token = sb->remote->token,
			  .ctype = "application/octet-stream", .source = from_caller, .source_ud = &s };
	r = remote_call(sb->ctx->remote, &q, NULL, NULL, err);
	if (s.err)
		return abox_error_set(err, s.err, "write '%s': read the source", path);
	if (r < 0)
		return r;
	if (size)
		*size = s.sent;
	return 0;
}

static uint32_t id_of(const char *name)
{
	return name && !strcmp(name, "root") ? 0 : name && !strcmp(name, "user") ? 1000 : 65534;
}

static void entry_from(json_object *e, abox_file_info *f)
{
	json_object *v;
	memset(f, 0, sizeof(*f));
#define S(k) (json_object_object_get_ex(e, k, &v) && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL)
	const char *s;
	snprintf(f->path, sizeof(f->path), "%s", (s = S("path")) ? s : "");
	snprintf(f->name, sizeof(f->name), "%s", (s = S("name")) ? s : "");
	s = S("type");
	f->type = !s ? ABOX_FILE_OTHER
		  : !strcmp(s, "FILE_TYPE_DIRECTORY") ? ABOX_FILE_DIR
		  : !strcmp(s, "FILE_TYPE_SYMLINK")   ? ABOX_FILE_SYMLINK
		  : !strcmp(s, "FILE_TYPE_FILE")      ? ABOX_FILE_REGULAR
						      : ABOX_FILE_OTHER;
	f->size = json_object_object_get_ex(e, "size", &v) ? (uint64_t)json_object_get_int64(v) : 0;
	f->mode = json_object_object_get_ex(e, "mode", &v) ? (uint32_t)json_object_get_int(v) & 07777 : 0;
	f->uid = id_of(S("owner"));
	f->gid = id_of(S("group"));
	f->mtime_ms = remote_time_ms(S("modifiedTime"));
	snprintf(f->target, sizeof(f->target), "%s", (s = S("symlinkTarget")) ? s : "");
#undef S
}

int remote_file_stat(abox_sandbox *sb, const char *path, const char *user, abox_file_info *out, abox_error *err)
{
	json_object *b = json_object_new_object(), *reply = NULL, *e;
	json_object_object_add(b, "path", json_object_new_string(path));
	int r = remote_rpc(sb, "filesystem.Filesystem", "Stat", user, b, &reply, err);
	json_object_put(b);
	if (r < 0)
		return r;
	if (!json_object_object_get_ex(reply, "entry", &e)) {
		json_object_put(reply);
		return abox_error_setx(err, EPROTO, "stat '%s': the daemon's reply has no entry", path);
	}
	entry_from(e, out);
	json_object_put(reply);
	return 0;
}

int remote_file_list(abox_sandbox *sb, const char *path, const char *user, unsigned depth, abox_file_entry_fn fn,
		     void *ud, abox_error *err)
{
	json_object *b = json_object_new_object(), *reply = NULL, *a;
	json_object_object_add(b, "path", json_object_new_string(path));
	json_object_object_add(b, "depth", json_object_new_int((int)(depth ? depth : 1)));
	int r = remote_rpc(sb, "filesystem.Filesystem", "ListDir", user, b, &reply, err);
	json_object_put(b);
	if (r < 0)
		return r;
	if (!json_object_object_get_ex(reply, "entries", &a) || !json_object_is_type(a, json_type_array)) {
		json_object_put(reply);
		return abox_error_setx(err, EPROTO, "list '%s': the daemon's reply has no entries", path);
	}
	/* the daemon answers a listing whole: handed on in order */
	size_t cnt = json_object_array_length(a);
	abox_file_info e;
	for (size_t i = 0; r >= 0 && i < cnt; i++) {
		entry_from(json_object_array_get_idx(a, i), &e);
		if (fn(&e, ud) != 0)
			r = abox_error_setx(err, ECANCELED, "stopped by the caller");
	}
	json_object_put(reply);
	return r;
}

static int file_op(abox_sandbox *sb, const char *method, const char *path, const char *to, const char *user,
		   abox_error *err)
{
	json_object *b = json_object_new_object();
	if (to) {
		json_object_object_add(b, "source", json_object_new_string(path));
		json_object_object_add(b, "destination", json_object_new_string(to));
	} else {
		json_object_object_add(b, "path", json_object_new_string(path));
	}
	int r = remote_rpc(sb, "filesystem.Filesystem", method, user, b, NULL, err);
	json_object_put(b);
	return r;
}

int remote_file_mkdir(abox_sandbox *sb, const char *path, const char *user, int *made, abox_error *err)
{
	int r = file_op(sb, "MakeDir", path, NULL, user, err);
	if (made)
		*made = r == 0;
	return r == -EEXIST ? (abox_error_clear(err), 0) : r;
}

int remote_file_move(abox_sandbox *sb, const char *from, const char *to, const char *user, abox_error *err)
{
	return file_op(sb, "Move", from, to, user, err);
}

int remote_file_remove(abox_sandbox *sb, const char *path, const char *user, abox_error *err)
{
	return file_op(sb, "Remove", path, NULL, user, err);
}
