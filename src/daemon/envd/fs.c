/* fs.c — filesystem.Filesystem over Connect (unary calls) and the plain
 * /files endpoint: GET streams a file's bytes, POST writes one
 * (application/octet-stream with ?path=) or several (multipart/form-data:
 * each part's filename is its target path when ?path= is not given). All
 * done by abox-init inside the sandbox as the requested user, so paths
 * resolve in the sandbox's own tree. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/accounts.h"
#include "base/json.h"
#include "envd.h"
#include "gzip.h"
#include "multipart.h"
#include "meta.h"

static void perms(uint32_t mode, abox_file_type t, char out[11])
{
	out[0] = t == ABOX_FILE_DIR ? 'd' : t == ABOX_FILE_SYMLINK ? 'l' : '-';
	const char *rwx = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[1 + i] = mode & (1u << (8 - i)) ? rwx[i] : '-';
	out[10] = '\0';
}

/* The name the sandbox's own files give an id; its number when none
 * does (as envd does when a lookup fails). */
static json_object *id_name(const abox_accounts *acc, uint32_t id, bool group)
{
	char name[ACCT_NAME_MAX + 1];
	int r = acc ? (group ? abox_accounts_group_name(acc, id, name, sizeof(name))
			     : abox_accounts_user_name(acc, id, name, sizeof(name)))
		    : -ENOENT;
	if (r < 0 && (id == 0 || id == 1000)) /* the template contract's two */
		snprintf(name, sizeof(name), "%s", id == 0 ? "root" : "user");
	else if (r < 0)
		snprintf(name, sizeof(name), "%u", id);
	return json_object_new_string(name);
}

json_object *entry_json(const abox_file_info *f, const abox_accounts *acc)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(f->name));
	/* A symlink's type goes as its number (FILE_TYPE_SYMLINK = 3), not its
	 * name: proto3 JSON allows both, and SDKs generated before symlinks
	 * existed, parsed by older protobuf runtimes (Debian 12's), reject the
	 * unknown name for the whole listing but keep an unknown number. Newer
	 * SDKs read 3 as a symlink either way. */
	if (f->type == ABOX_FILE_SYMLINK)
		json_object_object_add(o, "type", json_object_new_int(3));
	else
		json_object_object_add(o, "type", json_object_new_string(f->type == ABOX_FILE_DIR ? "FILE_TYPE_DIRECTORY"
												  : "FILE_TYPE_FILE"));
	json_object_object_add(o, "path", json_object_new_string(f->path));
	char size[32], p[11], t[40];
	snprintf(size, sizeof(size), "%llu", (unsigned long long)f->size); /* int64: a string in proto3 JSON */
	json_object_object_add(o, "size", json_object_new_string(size));
	json_object_object_add(o, "mode", json_object_new_int((int)f->mode));
	perms(f->mode, f->type, p);
	json_object_object_add(o, "permissions", json_object_new_string(p));
	json_object_object_add(o, "owner", id_name(acc, f->uid, false));
	json_object_object_add(o, "group", id_name(acc, f->gid, true));
	time_t s = (time_t)(f->mtime_ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t l = strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(t + l, sizeof(t) - l, ".%03dZ", (int)(f->mtime_ms % 1000));
	json_object_object_add(o, "modifiedTime", json_object_new_string(t));
	if (f->target[0])
		json_object_object_add(o, "symlinkTarget", json_object_new_string(f->target));
	return o;
}

static enum MHD_Result entry_reply(struct request *rq, sandbox_handle_t *h, const char *path)
{
	abox_file_info f;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_file_stat(h->sb, path, rq->user, &f, &err);
	if (r < 0)
		return envd_error(rq, -r, "%s", err.msg);
	abox_accounts *acc = NULL;
	(void)abox_accounts_read(h->sb, &acc, NULL); /* without: the fixed names */
	json_object *o = json_object_new_object(), *e = entry_json(&f, acc);
	abox_accounts_free(acc);
	meta_add_to_entry(h->sb, rq->user, e);
	json_object_object_add(o, "entry", e);
	return reply_json(rq, 200, o);
}

/* ListDir's depth: proto3 JSON gives a uint32 as a number or a string;
 * 0 or absent is 1. Anything else, or more than the limit, is refused
 * with the reason rather than turned into some depth. */
static int list_depth(json_object *b, unsigned *out, char *why, size_t n)
{
	json_object *d;
	if (!json_object_object_get_ex(b, "depth", &d) || json_object_is_type(d, json_type_null))
		return 0;
	int64_t v = -1;
	if (json_object_is_type(d, json_type_int)) {
		v = json_object_get_int64(d);
	} else if (json_object_is_type(d, json_type_string)) {
		const char *s = json_object_get_string(d);
		char *end;
		v = *s >= '0' && *s <= '9' ? strtoll(s, &end, 10) : -1;
		if (v >= 0 && *end)
			v = -1;
	}
	if (v < 0 || v > UINT32_MAX) {
		snprintf(why, n, "depth: a whole number from 0 to %u is expected", (unsigned)ABOX_FILE_LIST_MAX_DEPTH);
		return -EINVAL;
	}
	if (v > ABOX_FILE_LIST_MAX_DEPTH) {
		snprintf(why, n, "depth %lld is over the limit of %u", (long long)v, (unsigned)ABOX_FILE_LIST_MAX_DEPTH);
		return -EINVAL;
	}
	*out = v ? (unsigned)v : 1;
	return 0;
}

enum MHD_Result filesystem_rpc(struct request *rq, const char *method)
{
	if (!strcmp(method, "WatchDir"))
		return watch_dir(rq);
	if (!strcmp(method, "CreateWatcher") || !strcmp(method, "GetWatcherEvents") || !strcmp(method, "RemoveWatcher"))
		return watcher_rpc(rq, method);
	enum MHD_Result sent;
	json_object *b = envd_body(rq, false, &sent);
	if (!b)
		return sent;
	sandbox_handle_t h = envd_open(rq, &sent);
	if (!h.sb) {
		json_object_put(b);
		return sent;
	}
	abox_error err = ABOX_ERROR_INIT;
	const char *path = js_str(b, "path");
	enum MHD_Result q;
	int r = 0;
	if (!strcmp(method, "Stat") && path) {
		q = entry_reply(rq, &h, path);
	} else if (!strcmp(method, "MakeDir") && path) {
		int made = 0;
		r = abox_file_mkdir(h.sb, path, rq->user, &made, &err);
		q = r < 0 ? envd_error(rq, -r, "%s", err.msg)
		    : !made ? envd_error(rq, EEXIST, "'%s' already exists", path)
			    : entry_reply(rq, &h, path);
	} else if (!strcmp(method, "Move") && js_str(b, "source") && js_str(b, "destination")) {
		r = abox_file_move(h.sb, js_str(b, "source"), js_str(b, "destination"), rq->user, &err);
		q = r < 0 ? envd_error(rq, -r, "%s", err.msg) : entry_reply(rq, &h, js_str(b, "destination"));
	} else if (!strcmp(method, "Remove") && path) {
		r = abox_file_remove(h.sb, path, rq->user, &err);
		q = r < 0 ? envd_error(rq, -r, "%s", err.msg) : reply_json(rq, 200, json_object_new_object());
	} else if (!strcmp(method, "ListDir") && path) {
		unsigned depth = 1;
		char why[160];
		if (list_depth(b, &depth, why, sizeof(why)) < 0) {
			q = envd_error(rq, EINVAL, "%s", why);
		} else {
			q = list_dir_stream(rq, h, path, depth); /* streamed; it owns h now */
			h = (sandbox_handle_t){ 0 };
		}
	} else if (strcmp(method, "Stat") && strcmp(method, "MakeDir") && strcmp(method, "Move") &&
		   strcmp(method, "Remove") && strcmp(method, "ListDir")) {
		q = envd_error(rq, EOPNOTSUPP, "no method filesystem.Filesystem/%s (yet)", method);
	} else {
		q = envd_error(rq, EINVAL, "missing path (or source/destination)");
	}
	envd_close(&h);
	json_object_put(b);
	return q;
}

/* ---- /files ---------------------------------------------------------- */

/* The status of an error of the sandbox's filesystem, as init reported
 * it. Only here: on the control plane the same codes come from the
 * host's own filesystems, and a host failure is a 5xx. */
static unsigned file_status(int e)
{
	switch (e) {
	case EXDEV: /* a move across filesystems */
	case E2BIG: /* a listing over its entry limit */
	case ELOOP: /* a symlink cycle */
		return 400;
	case EROFS: /* a read-only mount inside the sandbox */
		return 403;
	case ENOTEMPTY:
		return 409;
	case EFBIG:
		return 413;
	case EDQUOT:
		return 507;
	default:
		return status_of_errno(e);
	}
}

/* ?username= names the user (default: the Basic credential's, else
 * `user`); a name that cannot be a user is refused as envd refuses an
 * unknown one, never replaced by the default user. */
static bool username(struct request *rq)
{
	const char *u = query(rq, "username");
	if (u && *u && !acct_name_ok(u))
		return false;
	if (u && *u)
		snprintf(rq->user, sizeof(rq->user), "%s", u);
	return true;
}

/* A failed /files request: envd's 401 and words for a user the sandbox
 * does not have, else the path and what went wrong. */
static enum MHD_Result file_fail(struct request *rq, int e, const char *user, const char *path, const char *msg)
{
	if (e == ABOX_ENOUSER)
		return reply_error(rq, 401, "error looking up user '%s': user: unknown user %s", user, user);
	return reply_error(rq, file_status(e), "%s%s%s", path && *path ? path : "", path && *path ? ": " : "", msg);
}

static json_object *written(sandbox_handle_t *h, struct request *rq, const char *path)
{
	abox_file_info f;
	json_object *o = json_object_new_object();
	const char *name = strrchr(path, '/');
	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "name", json_object_new_string(name ? name + 1 : path));
	json_object_object_add(o, "type", json_object_new_string("file"));
	if (abox_file_stat(h->sb, path, rq->user, &f, NULL) == 0)
		json_object_object_add(o, "path", json_object_new_string(f.path));
	meta_add_written(rq, o);
	return o;
}

/* Reached only for what the streamed path does not take (it takes every
 * POST /files): nothing is buffered for an upload. */
enum MHD_Result files_post(struct request *rq)
{
	return reply_error(rq, 400, "POST /files takes multipart/form-data or application/octet-stream with ?path=");
}

/* ---- streamed /files: large files never sit in memory ------------------
 *
 * Every POST /files streams: an octet-stream body goes to one writer, a
 * multipart body is parsed as it arrives (multipart.c) and each file part
 * gets a writer of its own, one after the other. A writer is a thread
 * that feeds abox_file_write_fd from a pipe, so the bytes flow from the
 * socket to the sandbox's disk in 64 KiB steps: an upload is bounded by
 * the sandbox's disk (ENOSPC: 507), never by the daemon's memory. */

struct upload {
	struct request *rq;
	sandbox_handle_t h;
	int pipe_w;
	pthread_t thread;
	bool running;
	char path[4096];
	char user[ACCT_NAME_MAX + 1];
	int result;             /* the upload's outcome (the request's thread only) */
	abox_error err;
	int wresult;            /* the writer thread's, read once it is joined */
	abox_error werr;
	uint64_t size;
	int pipe_r;
	enum MHD_Result early;  /* set when the sandbox could not be opened */
	bool failed_early;
	struct gz gz;           /* Content-Encoding: gzip, inflated on the way */
	bool gzip, bad_gzip;
	struct mp *mp;          /* multipart/form-data: the parser */
	const char *query_path; /* ?path=: the target of every file part */
	bool skip;              /* the current part is not a file */
	json_object *done;      /* the files written so far */
};

static void *upload_thread(void *arg)
{
	struct upload *u = arg;
	u->wresult = abox_file_write_fd(u->h.sb, u->path, u->user, u->pipe_r, 1, &u->size, &u->werr);
	close(u->pipe_r);
	return NULL;
}

/* A writer for u->path: -errno in u->result when there is none. */
static int writer_start(struct upload *u)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return u->result = set_err(&u->err, errno, "pipe");
	u->pipe_r = p[0];
	u->pipe_w = p[1];
	/* the write runs as the request's user: username() set u->user */
	u->running = pthread_create(&u->thread, NULL, upload_thread, u) == 0;
	if (!u->running) {
		close(p[0]);
		close(p[1]);
		u->pipe_r = u->pipe_w = -1;
		return u->result = set_err(&u->err, EAGAIN, "no thread for the upload");
	}
	return 0;
}

static void upload_finish(struct upload *u)
{
	if (u->pipe_w >= 0)
		close(u->pipe_w);
	u->pipe_w = -1;
	if (u->running) {
		pthread_join(u->thread, NULL);
		if (u->wresult < 0 && u->result >= 0) {
			u->result = u->wresult;
			u->err = u->werr;
		}
	}
	u->running = false;
}

static int to_writer(const void *data, size_t n, void *ud)
{
	struct upload *u = ud;
	const char *p = data;
	while (n && u->pipe_w >= 0) {
		ssize_t w = write(u->pipe_w, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) { /* the writer gave up (its error is in result) */
			close(u->pipe_w);
			u->pipe_w = -1;
			return 1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* multipart: a part begins, carries data, ends */
static int part_begin(void *ud, const char *headers)
{
	struct upload *u = ud;
	char name[64] = "", file[4096] = "";
	(void)mp_disposition(headers, "name", name, sizeof(name));
	int k = mp_disposition(headers, "filename", file, sizeof(file));
	if (k == -ENAMETOOLONG) {
		u->result = set_err(&u->err, ENAMETOOLONG, "a part's filename is too long");
		return 1;
	}
	/* like envd: a form field that is not a file is passed over */
	u->skip = k < 0 && strcmp(name, "file") != 0;
	if (u->skip)
		return 0;
	const char *target = u->query_path ? u->query_path : file;
	if (!*target) {
		u->result = set_err(&u->err, EINVAL, "a part names no file (filename) and there is no ?path=");
		return 1;
	}
	snprintf(u->path, sizeof(u->path), "%s", target);
	return writer_start(u) < 0;
}

static int part_data(void *ud, const char *p, size_t n)
{
	struct upload *u = ud;
	if (!u->skip)
		(void)to_writer(p, n, u); /* a writer that gave up says why at the part's end */
	return 0;
}

static int part_end(void *ud)
{
	struct upload *u = ud;
	if (u->skip) {
		u->skip = false;
		return 0;
	}
	upload_finish(u);
	if (u->result < 0)
		return 1;
	int m = meta_apply(u->h.sb, u->rq, u->path, &u->err);
	if (m < 0) {
		u->result = m;
		return 1;
	}
	json_object_array_add(u->done, written(&u->h, u->rq, u->path));
	return 0;
}

static const struct mp_ops part_ops = { part_begin, part_data, part_end };

bool files_stream_begin(struct request *rq)
{
	if (strcmp(rq->method, "POST") != 0 || strcmp(rq->url, "/files") != 0)
		return false;
	struct upload *u = calloc(1, sizeof(*u));
	if (!u)
		return false;
	u->pipe_r = u->pipe_w = -1; /* not 0: an early failure must not close the daemon's stdin */
	u->rq = rq;
	rq->upload = u;
	rq->defer_reply = true;
	u->h = envd_open(rq, &u->early);
	rq->defer_reply = false;
	if (!u->h.sb) {
		/* its reply is kept; the body is read and dropped, then it is
		 * answered */
		u->failed_early = true;
		return true;
	}
	free(rq->deferred); /* none is kept on success; to be sure */
	rq->deferred = NULL;
	if (!username(rq)) {
		snprintf(u->user, sizeof(u->user), "%.32s", query(rq, "username"));
		u->result = set_err(&u->err, ABOX_ENOUSER, "unknown user");
		return true;
	}
	snprintf(u->user, sizeof(u->user), "%s", rq->user);
	/* bad metadata headers are refused before anything is written */
	char bad_meta[200];
	if (meta_check(rq, bad_meta, sizeof(bad_meta)) < 0) {
		u->result = set_err(&u->err, EINVAL, bad_meta);
		return true;
	}
	const char *ct = header(rq, "Content-Type"), *path = query(rq, "path");
	const char *enc = header(rq, "Content-Encoding");
	bool encoded = enc && *enc && strcasecmp(enc, "identity") != 0;
	u->query_path = path && *path ? path : NULL;
	if (ct && !strncasecmp(ct, "multipart/", 10)) {
		char why[160];
		if (encoded) {
			/* compressed bytes must not land in a file as its content */
			snprintf(why, sizeof(why), "Content-Encoding '%.64s' works with application/octet-stream and ?path= only",
				 enc);
			u->result = set_err(&u->err, EINVAL, why);
		} else if (!(u->mp = malloc(sizeof(*u->mp))) || !(u->done = json_object_new_array())) {
			u->result = set_err(&u->err, ENOMEM, "no memory for the upload");
		} else if (mp_init(u->mp, ct, why, sizeof(why)) < 0) {
			u->result = set_err(&u->err, EINVAL, why);
		}
		return true;
	}
	if (!u->query_path) {
		u->result = set_err(&u->err, EINVAL, "?path= is required for an octet-stream upload");
		return true;
	}
	snprintf(u->path, sizeof(u->path), "%s", path);
	if (encoded) {
		if (strcasecmp(enc, "gzip") != 0 || gz_begin(&u->gz, false) < 0) {
			char why[160];
			snprintf(why, sizeof(why), "Content-Encoding '%.64s': abox takes gzip or identity", enc);
			u->result = set_err(&u->err, EINVAL, why);
			return true;
		}
		u->gzip = true;
	}
	(void)writer_start(u);
	return true;
}

void files_stream_chunk(struct request *rq, const char *data, size_t n)
{
	struct upload *u = rq->upload;
	if (u->failed_early || u->bad_gzip)
		return;
	if (u->mp) {
		/* multipart: result is written on this thread only (a part's
		 * writer is joined before its result is read) */
		char why[160];
		if (u->result < 0)
			return;
		if (mp_feed(u->mp, data, n, &part_ops, u, why, sizeof(why)) < 0 && u->result >= 0)
			u->result = set_err(&u->err, EINVAL, why);
		return;
	}
	if (!u->running || u->pipe_w < 0)
		return;
	if (!u->gzip) {
		(void)to_writer(data, n, u);
		return;
	}
	if (gz_feed(&u->gz, data, n, false, to_writer, u) == -EINVAL) {
		/* the file must not end up half written from garbage: the
		 * writer is stopped (its pipe closed early) and the reply names
		 * the cause */
		u->bad_gzip = true;
		close(u->pipe_w);
		u->pipe_w = -1;
	}
}

static enum MHD_Result multipart_end(struct request *rq, struct upload *u)
{
	bool mid_part = u->running;
	upload_finish(u);
	if (mid_part)
		/* a part cut short (a malformed body, or one that ended) is not
		 * the file that was sent */
		(void)abox_file_remove(u->h.sb, u->path, u->user, NULL);
	if (u->result < 0)
		return file_fail(rq, -u->result, u->user, u->path, u->err.msg);
	if (mid_part || !mp_complete(u->mp))
		return reply_error(rq, 400, "the multipart body ends before its closing delimiter");
	json_object *a = u->done;
	u->done = NULL;
	return reply_json(rq, 200, a);
}

enum MHD_Result files_stream_end(struct request *rq)
{
	struct upload *u = rq->upload;
	if (u->failed_early)
		return reply_deferred(rq);
	if (u->mp)
		return multipart_end(rq, u);
	bool writer_gave_up = u->pipe_w < 0 && !u->bad_gzip;
	bool truncated_gzip = u->gzip && !u->bad_gzip && !writer_gave_up && !gz_complete(&u->gz);
	upload_finish(u);
	/* the writer's own failure first (permission, no space): then the
	 * file was not touched by us beyond what it reports */
	if (u->result < 0)
		return file_fail(rq, -u->result, u->user, NULL, u->err.msg);
	if (u->bad_gzip || truncated_gzip) {
		/* what was written is not the file that was sent */
		(void)abox_file_remove(u->h.sb, u->path, u->user, NULL);
		return reply_error(rq, 400, "%s: the body is not %s gzip (Content-Encoding: gzip)", u->path,
				   u->bad_gzip ? "valid" : "complete");
	}
	if (meta_apply(u->h.sb, rq, u->path, &u->err) < 0)
		return reply_error(rq, status_of_errno(u->err.code), "%s", u->err.msg);
	json_object *a = json_object_new_array();
	json_object_array_add(a, written(&u->h, rq, u->path));
	return reply_json(rq, 200, a);
}

void files_stream_free(struct request *rq)
{
	struct upload *u = rq->upload;
	if (!u)
		return;
	upload_finish(u);
	gz_end(&u->gz);
	envd_close(&u->h);
	free(u->mp);
	json_object_put(u->done);
	free(u);
	rq->upload = NULL;
}

struct download {
	sandbox_handle_t h;
	char path[4096];
	char user[ACCT_NAME_MAX + 1];
	int pipe_r, pipe_w;
	pthread_t thread;
	bool gzip;     /* Accept-Encoding: gzip: deflated on the way */
	struct gz gz;
};

static int raw_to_pipe(const void *data, size_t n, void *ud);

static int to_pipe(const void *data, size_t n, void *ud)
{
	struct download *d = ud;
	if (d->gzip)
		return gz_feed(&d->gz, data, n, false, raw_to_pipe, d) < 0;
	return raw_to_pipe(data, n, ud);
}

static int raw_to_pipe(const void *data, size_t n, void *ud)
{
	struct download *d = ud;
	const char *p = data;
	while (n) {
		ssize_t w = write(d->pipe_w, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return 1; /* the client went away */
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *download_thread(void *arg)
{
	struct download *d = arg;
	uint64_t size;
	int r = abox_file_read(d->h.sb, d->path, d->user, to_pipe, d, &size, NULL);
	/* a gzip stream ends with its trailer; a failed read ends without
	 * one, so the client sees a broken file, not a short one */
	if (d->gzip && r >= 0)
		(void)gz_feed(&d->gz, NULL, 0, true, raw_to_pipe, d);
	close(d->pipe_w);
	return NULL;
}

static ssize_t download_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct download *d = cls;
	ssize_t n;
	do
		n = read(d->pipe_r, buf, max);
	while (n < 0 && errno == EINTR);
	return n > 0 ? n : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void download_free(void *cls)
{
	struct download *d = cls;
	close(d->pipe_r); /* a writer still at work gets EPIPE and stops */
	pthread_join(d->thread, NULL);
	gz_end(&d->gz);
	envd_close(&d->h);
	free(d);
}

/* stat() of path, symlinks followed (abox_file_stat does not follow the
 * last one): a download's Content-Length is its target's size, and a
 * dangling link is a 404 like envd's, not a 200 that ends short. The
 * links are read through init, so they resolve inside the sandbox's own
 * tree; real gets the path reached. */
static int stat_followed(sandbox_handle_t *h, const char *path, const char *user, abox_file_info *f,
			 char real[4096], abox_error *err)
{
	snprintf(real, 4096, "%s", path);
	for (int hops = 0; hops <= 40; hops++) {
		abox_error e = ABOX_ERROR_INIT;
		int r = abox_file_stat(h->sb, real, user, f, &e);
		if (r == -ENOENT && hops)
			return set_err(err, ENOENT, "a dangling symlink (its target does not exist)");
		if (r < 0) {
			*err = e;
			return r;
		}
		if (f->type != ABOX_FILE_SYMLINK)
			return 0;
		char next[4096];
		const char *slash = strrchr(real, '/');
		int n = f->target[0] == '/' || !slash
				? snprintf(next, sizeof(next), "%s", f->target)
				: snprintf(next, sizeof(next), "%.*s/%s", (int)(slash - real), real, f->target);
		if (n < 0 || (size_t)n >= sizeof(next))
			return set_err(err, ENAMETOOLONG, "a symlink's target path is too long");
		memcpy(real, next, (size_t)n + 1);
	}
	return set_err(err, ELOOP, "too many levels of symlinks (a cycle?)");
}

/* GET /files, streamed: stat first (a missing file is a 404, not an empty
 * 200), then the bytes as they are read. */
enum MHD_Result files_get_stream(struct request *rq)
{
	enum MHD_Result sent;
	struct download *d = calloc(1, sizeof(*d));
	if (!d)
		return MHD_NO;
	d->h = envd_open(rq, &sent);
	if (!d->h.sb) {
		free(d);
		return sent;
	}
	const char *path = query(rq, "path");
	abox_file_info f;
	abox_error err = ABOX_ERROR_INIT;
	char real[4096];
	int r = !username(rq) ? (snprintf(rq->user, sizeof(rq->user), "%.32s", query(rq, "username")), -ABOX_ENOUSER)
		: path	      ? stat_followed(&d->h, path, rq->user, &f, real, &err)
			      : set_err(&err, EINVAL, "?path= is required");
	if (r >= 0 && f.type == ABOX_FILE_DIR)
		r = set_err(&err, EISDIR, "it is a folder");
	else if (r >= 0 && f.type != ABOX_FILE_REGULAR)
		r = set_err(&err, EINVAL, "not a regular file (a device, FIFO or socket is not read)");
	int p[2] = { -1, -1 };
	if (r >= 0 && pipe2(p, O_CLOEXEC) < 0)
		r = set_err(&err, errno, "pipe");
	if (r < 0) {
		envd_close(&d->h);
		free(d);
		return file_fail(rq, -r, rq->user, path, err.msg);
	}
	snprintf(d->path, sizeof(d->path), "%s", real); /* the file that was measured is the one read */
	snprintf(d->user, sizeof(d->user), "%s", rq->user);
	d->pipe_r = p[0];
	d->pipe_w = p[1];
	d->gzip = gz_accepted(header(rq, "Accept-Encoding")) && gz_begin(&d->gz, true) == 0;
	if (pthread_create(&d->thread, NULL, download_thread, d) != 0) {
		close(p[0]);
		close(p[1]);
		envd_close(&d->h);
		free(d);
		return reply_error(rq, 503, "no thread for the download");
	}
	bool gz = d->gzip;
	struct MHD_Response *resp = MHD_create_response_from_callback(gz ? MHD_SIZE_UNKNOWN : f.size, 64 << 10,
								      download_reader, d, download_free);
	if (!resp) {
		download_free(d);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
	if (gz)
		MHD_add_response_header(resp, "Content-Encoding", "gzip");
	MHD_add_response_header(resp, "Vary", "Accept-Encoding");
	enum MHD_Result q = daemon_queue(rq, 200, resp);
	MHD_destroy_response(resp);
	return q;
}
