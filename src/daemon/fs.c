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

#include "envd.h"
#include "gzip.h"
#include "meta.h"

static void perms(uint32_t mode, abox_file_type t, char out[11])
{
	out[0] = t == ABOX_FILE_DIR ? 'd' : t == ABOX_FILE_SYMLINK ? 'l' : '-';
	const char *rwx = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[1 + i] = mode & (1u << (8 - i)) ? rwx[i] : '-';
	out[10] = '\0';
}

json_object *entry_json(const abox_file_info *f)
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
	json_object_object_add(o, "owner", json_object_new_string(f->uid == 0 ? "root" : f->uid == 1000 ? "user" : "?"));
	json_object_object_add(o, "group", json_object_new_string(f->gid == 0 ? "root" : f->gid == 1000 ? "user" : "?"));
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

static const char *jstr(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
												: NULL;
}

static enum MHD_Result entry_reply(struct request *rq, sandbox_handle_t *h, const char *path)
{
	abox_file_info f;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_file_stat(h->sb, path, rq->user, &f, &err);
	if (r < 0)
		return envd_error(rq, -r, "%s", err.msg);
	json_object *o = json_object_new_object(), *e = entry_json(&f);
	meta_add_to_entry(h->sb, rq->user, e);
	json_object_object_add(o, "entry", e);
	return reply_json(rq, 200, o);
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
	const char *path = jstr(b, "path");
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
	} else if (!strcmp(method, "Move") && jstr(b, "source") && jstr(b, "destination")) {
		r = abox_file_move(h.sb, jstr(b, "source"), jstr(b, "destination"), rq->user, &err);
		q = r < 0 ? envd_error(rq, -r, "%s", err.msg) : entry_reply(rq, &h, jstr(b, "destination"));
	} else if (!strcmp(method, "Remove") && path) {
		r = abox_file_remove(h.sb, path, rq->user, &err);
		q = r < 0 ? envd_error(rq, -r, "%s", err.msg) : reply_json(rq, 200, json_object_new_object());
	} else if (!strcmp(method, "ListDir") && path) {
		json_object *d;
		int depth = json_object_object_get_ex(b, "depth", &d) ? json_object_get_int(d) : 1;
		abox_file_info *v = NULL;
		size_t n = 0;
		r = abox_file_list(h.sb, path, rq->user, (unsigned)(depth > 0 ? depth : 1), &v, &n, &err);
		if (r < 0) {
			q = envd_error(rq, -r, "%s", err.msg);
		} else {
			json_object *a = json_object_new_array();
			for (size_t i = 0; i < n; i++)
				json_object_array_add(a, entry_json(&v[i]));
			free(v);
			meta_add_to_entries(h.sb, rq->user, a);
			json_object *o = json_object_new_object();
			json_object_object_add(o, "entries", a);
			q = reply_json(rq, 200, o);
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

static void username(struct request *rq)
{
	const char *u = query(rq, "username");
	if (u && (!strcmp(u, "root") || !strcmp(u, "user")))
		snprintf(rq->user, sizeof(rq->user), "%s", u);
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

/* One part of a multipart body: [start, end) with its filename. */
static const char *memmem_s(const char *h, size_t n, const char *needle)
{
	return memmem(h, n, needle, strlen(needle));
}

enum MHD_Result files_post(struct request *rq)
{
	enum MHD_Result sent;
	const char *enc = header(rq, "Content-Encoding");
	if (enc && *enc && strcasecmp(enc, "identity") != 0)
		/* compressed bytes must not land in a file as its content */
		return reply_error(rq, 400, "Content-Encoding '%s' works with application/octet-stream and ?path= only",
				   enc);
	sandbox_handle_t h = envd_open(rq, &sent);
	if (!h.sb)
		return sent;
	username(rq);
	char why[200];
	if (meta_check(rq, why, sizeof(why)) < 0) {
		envd_close(&h);
		return reply_error(rq, 400, "%s", why);
	}
	const char *path = query(rq, "path");
	const char *ct = header(rq, "Content-Type");
	abox_error err = ABOX_ERROR_INIT;
	json_object *a = json_object_new_array();
	int r = 0;
	if (ct && !strncmp(ct, "multipart/form-data", 19)) {
		const char *bd = strstr(ct, "boundary=");
		char delim[300];
		if (!bd) {
			r = set_err(&err, EINVAL, "multipart without a boundary");
		} else {
			bd += 9;
			size_t bl = strcspn(bd, ";");
			if (*bd == '"') {
				bd++;
				bl = strcspn(bd, "\"");
			}
			snprintf(delim, sizeof(delim), "--%.*s", (int)bl, bd);
		}
		const char *p = rq->body, *end = rq->body + rq->len;
		while (r >= 0 && p && (p = memmem_s(p, (size_t)(end - p), delim))) {
			p += strlen(delim);
			if (end - p >= 2 && p[0] == '-' && p[1] == '-')
				break; /* the closing delimiter */
			const char *hdr_end = memmem_s(p, (size_t)(end - p), "\r\n\r\n");
			if (!hdr_end)
				break;
			char hdrs[2048];
			snprintf(hdrs, sizeof(hdrs), "%.*s", (int)(hdr_end - p), p);
			const char *data = hdr_end + 4;
			const char *next = memmem_s(data, (size_t)(end - data), delim);
			if (!next) {
				r = set_err(&err, EINVAL, "a multipart part is not closed");
				break;
			}
			size_t dlen = (size_t)(next - data);
			if (dlen >= 2 && data[dlen - 2] == '\r' && data[dlen - 1] == '\n')
				dlen -= 2;
			char target[4096] = "";
			const char *fn = strstr(hdrs, "filename=\"");
			if (path && !target[0])
				snprintf(target, sizeof(target), "%s", path);
			else if (fn)
				snprintf(target, sizeof(target), "%.*s", (int)strcspn(fn + 10, "\""), fn + 10);
			if (!target[0]) {
				r = set_err(&err, EINVAL, "a part names no file (filename) and there is no ?path=");
				break;
			}
			if ((r = abox_file_write(h.sb, target, rq->user, data, dlen, 1, &err)) >= 0 &&
			    (r = meta_apply(h.sb, rq, target, &err)) >= 0)
				json_object_array_add(a, written(&h, rq, target));
			p = next;
		}
	} else {
		if (!path) {
			r = set_err(&err, EINVAL, "?path= is required for an octet-stream upload");
		} else if ((r = abox_file_write(h.sb, path, rq->user, rq->body ? rq->body : "", rq->len, 1, &err)) >= 0 &&
			   (r = meta_apply(h.sb, rq, path, &err)) >= 0) {
			json_object_array_add(a, written(&h, rq, path));
		}
	}
	envd_close(&h);
	if (r < 0) {
		json_object_put(a);
		return reply_error(rq, status_of_errno(-r), "%s", err.msg);
	}
	return reply_json(rq, 200, a);
}

/* ---- streamed /files: large files never sit in memory ------------------ */

struct upload {
	sandbox_handle_t h;
	int pipe_w;
	pthread_t thread;
	bool running;
	char path[4096];
	char user[16];
	int result;
	abox_error err;
	uint64_t size;
	int pipe_r;
	enum MHD_Result early;  /* set when the sandbox could not be opened */
	bool failed_early;
	struct gz gz;           /* Content-Encoding: gzip, inflated on the way */
	bool gzip, bad_gzip;
};

static void *upload_thread(void *arg)
{
	struct upload *u = arg;
	u->result = abox_file_write_fd(u->h.sb, u->path, u->user, u->pipe_r, 1, &u->size, &u->err);
	close(u->pipe_r);
	return NULL;
}

bool files_stream_begin(struct request *rq)
{
	const char *ct = header(rq, "Content-Type"), *path = query(rq, "path");
	if (strcmp(rq->method, "POST") != 0 || strcmp(rq->url, "/files") != 0 || !ct ||
	    strncmp(ct, "application/octet-stream", 24) != 0 || !path || !*path)
		return false;
	struct upload *u = calloc(1, sizeof(*u));
	if (!u)
		return false;
	u->pipe_r = u->pipe_w = -1; /* not 0: an early failure must not close the daemon's stdin */
	rq->upload = u;
	snprintf(u->path, sizeof(u->path), "%s", path);
	u->h = envd_open(rq, &u->early);
	if (!u->h.sb) {
		u->failed_early = true; /* its reply is queued; the body is read and dropped */
		return true;
	}
	username(rq);
	snprintf(u->user, sizeof(u->user), "%s", rq->user);
	char bad_meta[200];
	if (meta_check(rq, bad_meta, sizeof(bad_meta)) < 0) {
		u->result = set_err(&u->err, EINVAL, bad_meta);
		return true;
	}
	const char *enc = header(rq, "Content-Encoding");
	if (enc && *enc && strcasecmp(enc, "identity") != 0) {
		if (strcasecmp(enc, "gzip") != 0 || gz_begin(&u->gz, false) < 0) {
			char why[160];
			snprintf(why, sizeof(why), "Content-Encoding '%.64s': abox takes gzip or identity", enc);
			u->result = set_err(&u->err, EINVAL, why);
			return true;
		}
		u->gzip = true;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		u->result = set_err(&u->err, errno, "pipe");
		return true;
	}
	u->pipe_r = p[0];
	u->pipe_w = p[1];
	/* the write runs as the request's user: user_of() set rq->user */
	u->running = pthread_create(&u->thread, NULL, upload_thread, u) == 0;
	if (!u->running) {
		close(p[0]);
		close(p[1]);
		u->pipe_w = -1;
		u->result = set_err(&u->err, EAGAIN, "no thread for the upload");
	}
	return true;
}

static int to_writer(const void *data, size_t n, void *ud)
{
	struct upload *u = ud;
	const char *p = data;
	while (n) {
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

void files_stream_chunk(struct request *rq, const char *data, size_t n)
{
	struct upload *u = rq->upload;
	if (u->failed_early || !u->running || u->pipe_w < 0 || u->bad_gzip)
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

static void upload_finish(struct upload *u)
{
	if (u->pipe_w >= 0)
		close(u->pipe_w);
	u->pipe_w = -1;
	if (u->running)
		pthread_join(u->thread, NULL);
	u->running = false;
}

enum MHD_Result files_stream_end(struct request *rq)
{
	struct upload *u = rq->upload;
	if (u->failed_early)
		return u->early;
	bool writer_gave_up = u->pipe_w < 0 && !u->bad_gzip;
	bool truncated_gzip = u->gzip && !u->bad_gzip && !writer_gave_up && !gz_complete(&u->gz);
	upload_finish(u);
	/* the writer's own failure first (permission, no space): then the
	 * file was not touched by us beyond what it reports */
	if (u->result < 0)
		return reply_error(rq, status_of_errno(-u->result), "%s", u->err.msg);
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
	free(u);
	rq->upload = NULL;
}

struct download {
	sandbox_handle_t h;
	char path[4096];
	char user[16];
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
	username(rq);
	const char *path = query(rq, "path");
	abox_file_info f;
	abox_error err = ABOX_ERROR_INIT;
	int r = path ? abox_file_stat(d->h.sb, path, rq->user, &f, &err) : set_err(&err, EINVAL, "?path= is required");
	if (r >= 0 && f.type == ABOX_FILE_DIR)
		r = set_err(&err, EISDIR, "it is a folder");
	int p[2] = { -1, -1 };
	if (r >= 0 && pipe2(p, O_CLOEXEC) < 0)
		r = set_err(&err, errno, "pipe");
	if (r < 0) {
		envd_close(&d->h);
		free(d);
		return reply_error(rq, status_of_errno(-r), "%s%s%s", path ? path : "", path ? ": " : "", err.msg);
	}
	snprintf(d->path, sizeof(d->path), "%s", path);
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
