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
 * of it. Runs in aboxd. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "envd.h"

struct listing {
	sandbox_handle_t h;
	char path[4096];
	char user[16];
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
};

static int put(struct listing *l, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(l->pipe_w, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return 1; /* the client went away: stop the listing */
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static int on_entry(const abox_file_info *e, void *ud)
{
	struct listing *l = ud;
	json_object *o = entry_json(e);
	const char *s =
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	bool first = false;
	pthread_mutex_lock(&l->lock);
	if (!l->started) {
		l->started = first = true;
		pthread_cond_signal(&l->cond);
	}
	pthread_mutex_unlock(&l->lock);
	int stop = put(l, first ? "{\"entries\":[" : ",", first ? 12 : 1) || put(l, s, strlen(s));
	json_object_put(o);
	return stop;
}

static void *list_thread(void *arg)
{
	struct listing *l = arg;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_file_list_each(l->h.sb, l->path, l->user, l->depth, on_entry, l, &err);
	pthread_mutex_lock(&l->lock);
	bool started = l->started;
	l->over = true;
	l->result = r;
	l->err = err;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	if (started) {
		if (r < 0)
			atomic_store(&l->failed, true);
		else
			(void)put(l, "]}", 2);
		close(l->pipe_w);
		l->pipe_w = -1;
	}
	return NULL;
}

static ssize_t list_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct listing *l = cls;
	ssize_t n;
	do
		n = read(l->pipe_r, buf, max);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		return n;
	return n == 0 && !atomic_load(&l->failed) ? MHD_CONTENT_READER_END_OF_STREAM
	                                          : MHD_CONTENT_READER_END_WITH_ERROR;
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
	envd_close(&l->h);
	free(l);
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
