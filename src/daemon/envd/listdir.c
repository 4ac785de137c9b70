/* listdir.c — filesystem.Filesystem/ListDir, streamed: the entries go
 * from init to the client as they come, so a listing of / costs the
 * daemon a pipe and one entry, not the tree (a deep listing once cost
 * 760 MB per request).
 *
 * A thread reads the entries (abox_file_list_each) and writes their JSON
 * into a pipe that the response reads. The handler waits for the first
 * entry or the end before it answers: a refused listing (too deep, over
 * ABOX_FILE_LIST_MAX_ENTRIES, not found) is a clean Connect error, since
 * init counts the tree before it sends any of it. A failure after the
 * first entry (the tree grew past the limit meanwhile, the sandbox died)
 * cuts the response, so the client never takes half a listing for all
 * of it.
 *
 * Entries carry their file metadata (envd 0.6.2). init cannot be asked
 * for it while it is still sending the listing (it would wait on us and
 * we on it), so the entries are first spooled to an unnamed file — disk,
 * not the daemon's memory — and sent from there in batches of
 * SPOOL_BATCH, each batch's metadata fetched in one request. Runs in
 * aboxd. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/accounts.h"
#include "envd.h"
#include "meta.h"

#define SPOOL_BATCH 256

struct listing {
	sandbox_handle_t h;
	char path[4096];
	char user[ACCT_NAME_MAX + 1];
	abox_accounts *acc; /* owner and group names, read once */
	unsigned depth;
	int pipe_r, pipe_w;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool started; /* the first entry came: the answer is a 200 */
	bool over;    /* the listing ended (result, err) */
	int result;
	abox_error err;
	atomic_bool failed; /* ended badly after it started: cut the reply */
	FILE *spool;        /* the entries as JSON lines, until init is done */
};

/* 1 when the client went away: the listing stops */
static int put(struct listing *l, const char *s, size_t n)
{
	return reply_pipe_put(l->pipe_w, s, n);
}

static int on_entry(const abox_file_info *e, void *ud)
{
	struct listing *l = ud;
	json_object *o = entry_json(e, l->acc);
	const char *js =
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	int stop = fputs(js, l->spool) < 0 || fputc('\n', l->spool) == EOF;
	json_object_put(o);
	return stop;
}

static void announce(struct listing *l, bool started)
{
	pthread_mutex_lock(&l->lock);
	if (started)
		l->started = true;
	else
		l->over = true;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

/* Sends one batch with its metadata; non-zero when the client went away. */
static int send_batch(struct listing *l, json_object *batch, bool *first)
{
	meta_add_to_entries(l->h.sb, l->user, batch);
	size_t n = json_object_array_length(batch);
	for (size_t i = 0; i < n; i++) {
		const char *js = json_object_to_json_string_ext(json_object_array_get_idx(batch, i),
								 JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		if (put(l, *first ? "{\"entries\":[" : ",", *first ? 12 : 1) || put(l, js, strlen(js)))
			return 1;
		*first = false;
	}
	return 0;
}

static void *list_thread(void *arg)
{
	struct listing *l = arg;
	abox_error err = ABOX_ERROR_INIT;
	(void)abox_accounts_read(l->h.sb, &l->acc, NULL);
	int r = abox_file_list_each(l->h.sb, l->path, l->user, l->depth, on_entry, l, &err);
	if (r >= 0 && (fflush(l->spool) != 0 || fseek(l->spool, 0, SEEK_SET) != 0))
		r = abox_error_setx(&err, EIO, "cannot spool the listing");
	l->result = r;
	l->err = err;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len = r >= 0 ? getline(&line, &cap, l->spool) : -1;
	if (len < 0) {
		/* an error, or an empty folder: answered by the handler */
		free(line);
		announce(l, false);
		return NULL;
	}
	announce(l, true);
	bool first = true, gone = false;
	json_object *batch = json_object_new_array();
	while (len >= 0 && !gone) {
		json_object *e = json_tokener_parse(line);
		if (e)
			json_object_array_add(batch, e);
		len = getline(&line, &cap, l->spool);
		if (json_object_array_length(batch) == SPOOL_BATCH || len < 0) {
			gone = send_batch(l, batch, &first) != 0;
			json_object_put(batch);
			batch = json_object_new_array();
		}
	}
	json_object_put(batch);
	free(line);
	if (!gone)
		(void)put(l, "]}", 2);
	close(l->pipe_w);
	l->pipe_w = -1;
	return NULL;
}

static ssize_t list_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct listing *l = cls;
	return reply_pipe_read(l->pipe_r, buf, max, &l->failed);
}

static void list_free(void *cls)
{
	struct listing *l = cls;
	close(l->pipe_r); /* a thread still writing gets EPIPE and stops */
	pthread_join(l->thread, NULL);
	if (l->pipe_w >= 0)
		close(l->pipe_w);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	if (l->spool)
		fclose(l->spool);
	envd_close(&l->h);
	abox_accounts_free(l->acc);
	free(l);
}

/* An unnamed file in the state folder (on disk), else in /tmp. */
static FILE *spool_open(void)
{
	const char *dir = daemon_cfg.state_dir ? daemon_cfg.state_dir : getenv("ABOX_ROOT");
	int fd = dir ? open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600) : -1;
	if (fd < 0)
		return tmpfile();
	FILE *f = fdopen(fd, "w+");
	if (!f)
		close(fd);
	return f;
}

/* h is taken over (closed here in every case). */
enum MHD_Result list_dir_stream(struct request *rq, sandbox_handle_t h, const char *path, unsigned depth)
{
	struct listing *l = calloc(1, sizeof(*l));
	int p[2];
	if (!l || pipe2(p, O_CLOEXEC) < 0) {
		free(l);
		envd_close(&h);
		return envd_error(rq, EAGAIN, "no room for the listing");
	}
	l->h = h;
	snprintf(l->path, sizeof(l->path), "%s", path);
	snprintf(l->user, sizeof(l->user), "%s", rq->user);
	l->depth = depth;
	l->pipe_r = p[0];
	l->pipe_w = p[1];
	l->spool = spool_open();
	if (!l->spool) {
		close(p[0]);
		close(p[1]);
		envd_close(&l->h);
		free(l);
		return envd_error(rq, EAGAIN, "no room to spool the listing");
	}
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	if (pthread_create(&l->thread, NULL, list_thread, l) != 0) {
		close(p[0]);
		close(p[1]);
		envd_close(&l->h);
		free(l);
		return envd_error(rq, EAGAIN, "no thread for the listing");
	}
	pthread_mutex_lock(&l->lock);
	while (!l->started && !l->over)
		pthread_cond_wait(&l->cond, &l->lock);
	bool started = l->started;
	pthread_mutex_unlock(&l->lock);
	if (!started) {
		/* over before any entry: an error or an empty folder */
		int r = l->result;
		abox_error err = l->err;
		list_free(l);
		if (r < 0)
			return envd_error(rq, -r, "%s", err.msg);
		json_object *o = json_object_new_object();
		json_object_object_add(o, "entries", json_object_new_array());
		return reply_json(rq, 200, o);
	}
	return reply_stream(rq, "application/json", list_reader, l, list_free);
}
