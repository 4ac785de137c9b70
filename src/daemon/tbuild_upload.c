/* tbuild_upload.c — the files of a template build's COPY steps (see
 * tbuild.h): GET /templates/{id}/files/{hash} answers whether they are
 * here and hands out an upload link; PUT to that link streams them to
 * disk. The link's random token, made for one owner and hash and good
 * for an hour, is the upload's only credential; each owner's uploads are
 * kept apart, so one owner's files never answer another's hash. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "base/json.h"
#include "tbuild.h"
#include "tbuild_int.h"

static bool hex64(const char *s)
{
	return s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* ---- GET /templates/{id}/files/{hash} and the upload */

enum MHD_Result tb_files(struct request *rq, const char *tid, const char *hash)
{
	if (!hex64(hash))
		return reply_error(rq, 400, "files hash '%s' is not 64 lowercase hex digits", hash);
	pthread_mutex_lock(&tb_mu);
	bool known = tb_find(rq->owner, tid, NULL) != NULL;
	pthread_mutex_unlock(&tb_mu);
	if (!known)
		return reply_error(rq, 404, "template '%s' has no build (POST /v3/templates first)", tid);
	char p[4400];
	tb_upload_path(rq->owner, hash, p, sizeof(p));
	struct stat st;
	bool present = stat(p, &st) == 0 && S_ISREG(st.st_mode);
	struct tb_upload *u = calloc(1, sizeof(*u));
	if (!u || random_id(u->token, 33) < 0) {
		free(u);
		return reply_error(rq, 500, "out of memory");
	}
	snprintf(u->owner, sizeof(u->owner), "%s", rq->owner);
	memcpy(u->hash, hash, 65);
	u->until = tb_now_ms() + TB_UPLOAD_TTL_MS;
	pthread_mutex_lock(&tb_mu);
	/* forget tokens that expired */
	for (struct tb_upload **pp = &tb_uploads; *pp;) {
		if ((*pp)->until < tb_now_ms()) {
			struct tb_upload *x = *pp;
			*pp = x->next;
			free(x);
			continue;
		}
		pp = &(*pp)->next;
	}
	u->next = tb_uploads;
	tb_uploads = u;
	pthread_mutex_unlock(&tb_mu);
	const char *host = header(rq, "Host");
	char url[600];
	snprintf(url, sizeof(url), "http://%s/templates/uploads/%s",
		 host && !strpbrk(host, " /\r\n") ? host : "localhost", u->token);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "present", json_object_new_boolean(present));
	json_object_object_add(o, "url", json_object_new_string(url));
	return reply_json(rq, 201, o);
}

#define TB_MAX_UPLOAD (16ull << 30) /* one COPY step's files, compressed */

struct tb_stream {
	int fd;
	char path[4500], tmp[4600];
	uint64_t got;
	unsigned status; /* 0: fine so far */
	char why[200];
};

bool tbuild_stream_begin(struct request *rq)
{
	if (strcmp(rq->method, "PUT") != 0 || strncmp(rq->url, "/templates/uploads/", 19) != 0)
		return false;
	struct tb_stream *st = calloc(1, sizeof(*st));
	if (!st)
		return false;
	st->fd = -1;
	rq->tupload = st;
	const char *token = rq->url + 19;
	char owner[17] = "", hash[65] = "";
	pthread_mutex_lock(&tb_mu);
	for (struct tb_upload *u = tb_uploads; u; u = u->next)
		if (!strcmp(u->token, token) && u->until >= tb_now_ms()) {
			memcpy(owner, u->owner, sizeof(owner));
			memcpy(hash, u->hash, sizeof(hash));
		}
	pthread_mutex_unlock(&tb_mu);
	if (!owner[0]) {
		st->status = 404;
		snprintf(st->why, sizeof(st->why), "no such upload (its link is unknown or expired)");
		return true;
	}
	char up[4400], dir[4400];
	snprintf(up, sizeof(up), "%s/daemon-uploads", tb_state_dir());
	tb_upload_path(owner, NULL, dir, sizeof(dir));
	(void)mkdir(up, 0700);
	(void)mkdir(dir, 0700);
	tb_upload_path(owner, hash, st->path, sizeof(st->path));
	snprintf(st->tmp, sizeof(st->tmp), "%s.XXXXXX", st->path);
	st->fd = mkostemp(st->tmp, O_CLOEXEC);
	if (st->fd < 0) {
		st->status = 500;
		snprintf(st->why, sizeof(st->why), "keep the upload: %s", abox_strerror(errno));
	}
	return true;
}

void tbuild_stream_chunk(struct request *rq, const char *data, size_t n)
{
	struct tb_stream *st = rq->tupload;
	if (st->status)
		return; /* read and dropped: the answer is given at the end */
	st->got += n;
	if (st->got > TB_MAX_UPLOAD) {
		st->status = 413;
		snprintf(st->why, sizeof(st->why), "the upload is larger than %llu bytes",
			 (unsigned long long)TB_MAX_UPLOAD);
	} else if (write_full(st->fd, data, n) < 0) {
		st->status = 500;
		snprintf(st->why, sizeof(st->why), "keep the upload: %s", abox_strerror(errno));
	}
	if (st->status) {
		close(st->fd);
		st->fd = -1;
		(void)unlink(st->tmp);
	}
}

enum MHD_Result tbuild_stream_end(struct request *rq)
{
	struct tb_stream *st = rq->tupload;
	if (!st->status && (fsync(st->fd) < 0 || rename(st->tmp, st->path) < 0)) {
		st->status = 500;
		snprintf(st->why, sizeof(st->why), "keep the upload: %s", abox_strerror(errno));
		(void)unlink(st->tmp);
	}
	if (st->fd >= 0)
		close(st->fd);
	st->fd = -1;
	st->tmp[0] = '\0';
	return st->status ? reply_error(rq, st->status, "%s", st->why) : reply_empty(rq, 200);
}

void tbuild_stream_free(struct request *rq)
{
	struct tb_stream *st = rq->tupload;
	if (!st)
		return;
	/* a client that went away midway: nothing of its upload stays */
	if (st->fd >= 0) {
		close(st->fd);
		if (st->tmp[0])
			(void)unlink(st->tmp);
	}
	free(st);
	rq->tupload = NULL;
}
