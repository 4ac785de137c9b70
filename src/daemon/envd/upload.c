/* upload.c — POST /files, streamed: one file
 * (application/octet-stream with ?path=) or several
 * (multipart/form-data: each part's filename is its target path when
 * ?path= is not given), written by abox-init inside the sandbox as the
 * requested user, the bytes passed on as they arrive. GET /files and the
 * shared pieces are files.c's. Runs in aboxd. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/accounts.h"
#include "envd.h"
#include "gzip.h"
#include "multipart.h"
#include "meta.h"

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
		return u->result = abox_error_setx(&u->err, errno, "pipe");
	u->pipe_r = p[0];
	u->pipe_w = p[1];
	/* the write runs as the request's user: files_username() set u->user */
	u->running = pthread_create(&u->thread, NULL, upload_thread, u) == 0;
	if (!u->running) {
		close(p[0]);
		close(p[1]);
		u->pipe_r = u->pipe_w = -1;
		return u->result = abox_error_setx(&u->err, EAGAIN, "no thread for the upload");
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
		u->result = abox_error_setx(&u->err, ENAMETOOLONG, "a part's filename is too long");
		return 1;
	}
	/* like envd: a form field that is not a file is passed over */
	u->skip = k < 0 && strcmp(name, "file") != 0;
	if (u->skip)
		return 0;
	const char *target = u->query_path ? u->query_path : file;
	if (!*target) {
		u->result = abox_error_setx(&u->err, EINVAL,
					    "a part names no file (filename) and there is no ?path=");
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
	if (!files_username(rq)) {
		snprintf(u->user, sizeof(u->user), "%.32s", query(rq, "username"));
		u->result = abox_error_setx(&u->err, ABOX_ENOUSER, "unknown user");
		return true;
	}
	snprintf(u->user, sizeof(u->user), "%s", rq->user);
	/* bad metadata headers are refused before anything is written */
	char bad_meta[200];
	if (meta_check(rq, bad_meta, sizeof(bad_meta)) < 0) {
		u->result = abox_error_setx(&u->err, EINVAL, "%s", bad_meta);
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
			u->result = abox_error_setx(&u->err, EINVAL, "%s", why);
		} else if (!(u->mp = malloc(sizeof(*u->mp))) || !(u->done = json_object_new_array())) {
			u->result = abox_error_setx(&u->err, ENOMEM, "no memory for the upload");
		} else if (mp_init(u->mp, ct, why, sizeof(why)) < 0) {
			u->result = abox_error_setx(&u->err, EINVAL, "%s", why);
		}
		return true;
	}
	if (!u->query_path) {
		u->result = abox_error_setx(&u->err, EINVAL, "?path= is required for an octet-stream upload");
		return true;
	}
	snprintf(u->path, sizeof(u->path), "%s", path);
	if (encoded) {
		if (strcasecmp(enc, "gzip") != 0 || gz_begin(&u->gz, false) < 0) {
			char why[160];
			snprintf(why, sizeof(why), "Content-Encoding '%.64s': abox takes gzip or identity", enc);
			u->result = abox_error_setx(&u->err, EINVAL, "%s", why);
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
			u->result = abox_error_setx(&u->err, EINVAL, "%s", why);
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
		return files_fail(rq, -u->result, u->user, u->path, u->err.msg);
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
		return files_fail(rq, -u->result, u->user, NULL, u->err.msg);
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
