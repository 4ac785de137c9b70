/* files.c — the plain /files endpoint of envd: GET streams a file's
 * bytes out of the sandbox (gzip when the client accepts it), and what
 * GET and POST share (the user, the status of a filesystem error). A
 * POST's body is streamed into the sandbox by upload.c. Reads are done
 * by abox-init inside the sandbox as the requested user, so paths
 * resolve in the sandbox's own tree. Runs in aboxd. */
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
bool files_username(struct request *rq)
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
enum MHD_Result files_fail(struct request *rq, int e, const char *user, const char *path, const char *msg)
{
	if (e == ABOX_ENOUSER)
		return reply_error(rq, 401, "error looking up user '%s': user: unknown user %s", user, user);
	return reply_error(rq, file_status(e), "%s%s%s", path && *path ? path : "", path && *path ? ": " : "", msg);
}

/* Reached only for what the streamed path does not take (it takes every
 * POST /files): nothing is buffered for an upload. */
enum MHD_Result files_post(struct request *rq)
{
	return reply_error(rq, 400, "POST /files takes multipart/form-data or application/octet-stream with ?path=");
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
	return reply_pipe_put(d->pipe_w, data, n); /* 1: the client went away */
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
	return reply_pipe_read(d->pipe_r, buf, max, NULL);
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
			return abox_error_setx(err, ENOENT, "a dangling symlink (its target does not exist)");
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
			return abox_error_setx(err, ENAMETOOLONG, "a symlink's target path is too long");
		memcpy(real, next, (size_t)n + 1);
	}
	return abox_error_setx(err, ELOOP, "too many levels of symlinks (a cycle?)");
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
	int r = !files_username(rq) ? (snprintf(rq->user, sizeof(rq->user), "%.32s", query(rq, "username")),
				       -ABOX_ENOUSER)
		: path              ? stat_followed(&d->h, path, rq->user, &f, real, &err)
				    : abox_error_setx(&err, EINVAL, "?path= is required");
	if (r >= 0 && f.type == ABOX_FILE_DIR)
		r = abox_error_setx(&err, EISDIR, "it is a folder");
	else if (r >= 0 && f.type != ABOX_FILE_REGULAR)
		r = abox_error_setx(&err, EINVAL,
				    "not a regular file (a device, FIFO or socket is not read)");
	int p[2] = { -1, -1 };
	if (r >= 0 && pipe2(p, O_CLOEXEC) < 0)
		r = abox_error_setx(&err, errno, "pipe");
	if (r < 0) {
		envd_close(&d->h);
		free(d);
		return files_fail(rq, -r, rq->user, path, err.msg);
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
