/* watch.c — filesystem.Filesystem's watchers: WatchDir (a stream of
 * changes below a folder) and the polling trio CreateWatcher,
 * GetWatcherEvents, RemoveWatcher (for clients that cannot hold a
 * stream). Each watcher has its own sandbox handle; a polling watcher is
 * drained into a bounded list by a thread of its own, and one nobody
 * polled for ten minutes is removed. Event names are relative to the
 * watched folder, as envd gives them. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/accounts.h"
#include "envd.h"
#include "meta.h"
#include "stream.h"
#include "wire.h"

#define WATCHER_EVENTS_MAX 10000
#define WATCHER_IDLE_MS (10 * 60 * 1000)
/* each watcher is a thread, a connection to init and up to
 * WATCHER_EVENTS_MAX queued events: their number bounds the daemon's
 * memory for them (init allows 8 watches per sandbox, streams included) */
#define WATCHERS_MAX 256

static const char *event_name(abox_fs_event_type t)
{
	switch (t) {
	case ABOX_FS_CREATE: return "EVENT_TYPE_CREATE";
	case ABOX_FS_WRITE: return "EVENT_TYPE_WRITE";
	case ABOX_FS_REMOVE: return "EVENT_TYPE_REMOVE";
	case ABOX_FS_RENAME: return "EVENT_TYPE_RENAME";
	case ABOX_FS_CHMOD: return "EVENT_TYPE_CHMOD";
	default: return "EVENT_TYPE_UNSPECIFIED";
	}
}

static json_object *fs_event(const char *root, abox_fs_event_type t, const char *path)
{
	size_t rl = strlen(root);
	while (rl > 1 && root[rl - 1] == '/')
		rl--;
	const char *name = path;
	if (!strncmp(path, root, rl) && (path[rl] == '/' || !path[rl]))
		name = path[rl] == '/' ? path + rl + 1 : path + rl;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "type", json_object_new_string(event_name(t)));
	return o;
}

/* includeEntry (envd 0.6.3): an event carries the entry it names, when it
 * still exists, read through a second connection to the sandbox (the
 * watch's own streams its events). allowNetworkMounts (0.6.4) changes
 * nothing: abox watches every filesystem the same way. */
struct entries {
	sandbox_handle_t h; /* .sb NULL: events without entries */
	char user[ACCT_NAME_MAX + 1];
	abox_accounts *acc;
};

static void entries_open(struct entries *e, struct request *rq, json_object *b)
{
	json_object *v;
	memset(e, 0, sizeof(*e));
	if (!json_object_object_get_ex(b, "includeEntry", &v) || !json_object_get_boolean(v))
		return;
	snprintf(e->user, sizeof(e->user), "%s", rq->user);
	e->h.ctx = request_ctx();
	if (e->h.ctx && abox_sandbox_connect(e->h.ctx, rq->sandbox, &e->h.sb, NULL) < 0)
		e->h.sb = NULL;
	if (e->h.sb)
		(void)abox_accounts_read(e->h.sb, &e->acc, NULL);
}

static json_object *with_entry(struct entries *e, abox_fs_event_type t, const char *path, json_object *ev)
{
	abox_file_info f;
	if (e->h.sb && t != ABOX_FS_REMOVE && abox_file_stat(e->h.sb, path, e->user, &f, NULL) == 0) {
		json_object *en = entry_json(&f, e->acc);
		meta_add_to_entry(e->h.sb, e->user, en);
		json_object_object_add(ev, "entry", en);
	}
	return ev;
}

/* What a WatchDir stream and a polling watcher both hold: the sandbox,
 * its watch of a folder, that folder as the client's paths name it, and
 * what the events' entries are read with. */
struct watching {
	sandbox_handle_t h;
	abox_watch *w;
	char root[4096];
	struct entries entries;
};

static bool recursive_of(json_object *b)
{
	json_object *v;
	return json_object_object_get_ex(b, "recursive", &v) && json_object_get_boolean(v);
}

/* Starts watching path in h's sandbox as b asks (recursive,
 * includeEntry); wg takes h over when it succeeds. */
static int watching_start(struct watching *wg, struct request *rq, sandbox_handle_t h, json_object *b,
			  const char *path, abox_error *err)
{
	char home[ACCT_HOME_MAX + 1] = "/";
	(void)envd_user_home(h.sb, rq->user, home, sizeof(home)); /* checked by envd_open */
	int r = abox_watch_start(h.sb, path, rq->user, recursive_of(b), &wg->w, err);
	if (r < 0)
		return r;
	char abs[4096];
	snprintf(wg->root, sizeof(wg->root), "%s", envd_user_path(home, path, abs, sizeof(abs)));
	entries_open(&wg->entries, rq, b);
	wg->h = h;
	return 0;
}

/* An event as the client gets it: named below the watched folder, with
 * its entry when asked for. */
static json_object *watching_event(struct watching *wg, abox_fs_event_type t, const char *path)
{
	return with_entry(&wg->entries, t, path, fs_event(wg->root, t, path));
}

static void watching_close(struct watching *wg)
{
	abox_watch_free(wg->w);
	envd_close(&wg->h);
	envd_close(&wg->entries.h);
	abox_accounts_free(wg->entries.acc);
}

/* ---- WatchDir -------------------------------------------------------- */

struct wstream {
	struct watching wg;
	struct ebuf out;
	int keepalive_ms;
};

static int on_stream_event(abox_fs_event_type t, const char *path, void *ud)
{
	struct wstream *s = ud;
	ebuf_field(&s->out, "filesystem", watching_event(&s->wg, t, path));
	return 0;
}

/* More of the stream: the events that came, else a keepalive once it has
 * been quiet that long; the end when the watch fails. */
static void wfill(void *cls)
{
	struct wstream *s = cls;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_watch_dispatch(s->wg.w, on_stream_event, s, &err);
	if (r < 0) {
		ebuf_end(&s->out, "unavailable", err.msg);
		return;
	}
	if (s->out.len > s->out.off)
		return;
	int wait = (int)(s->out.last_ms + s->keepalive_ms - clock_mono_ms());
	struct pollfd p = { .fd = abox_watch_fd(s->wg.w), .events = POLLIN };
	if (poll(&p, 1, wait > 0 ? wait : 0) == 0 && clock_mono_ms() >= s->out.last_ms + s->keepalive_ms)
		ebuf_field(&s->out, "keepalive", json_object_new_object());
}

static ssize_t wreader(void *cls, uint64_t pos, char *out, size_t max)
{
	struct wstream *s = cls;
	return ebuf_read(&s->out, out, max, wfill, s);
}

static void wstream_free(void *cls)
{
	struct wstream *s = cls;
	watching_close(&s->wg);
	ebuf_free(&s->out);
	free(s);
}

enum MHD_Result watch_dir(struct request *rq)
{
	enum MHD_Result sent;
	json_object *b = envd_body(rq, true, &sent), *v;
	if (!b)
		return sent;
	const char *path = json_object_object_get_ex(b, "path", &v) ? json_object_get_string(v) : NULL;
	if (!path || !*path) {
		json_object_put(b);
		return envd_error(rq, EINVAL, "path is required");
	}
	sandbox_handle_t h = envd_open_body(rq, b, &sent);
	if (!h.sb)
		return sent;
	struct wstream *s = calloc(1, sizeof(*s));
	abox_error err = ABOX_ERROR_INIT;
	int r = s ? watching_start(&s->wg, rq, h, b, path, &err) : -ENOMEM;
	json_object_put(b);
	if (r < 0) {
		free(s);
		envd_close(&h);
		return envd_error(rq, -r, "%s", err.msg);
	}
	const char *ka = header(rq, "Keepalive-Ping-Interval");
	s->keepalive_ms = ka && atoi(ka) > 0 ? atoi(ka) * 1000 : 30000;
	ebuf_field(&s->out, "start", json_object_new_object());
	return reply_stream(rq, "application/connect+json", wreader, s, wstream_free);
}

/* ---- polling watchers ------------------------------------------------- */

struct watcher {
	char id[33];
	char sandbox[ABOX_ID_LEN + 1];
	struct watching wg;
	pthread_t thread;
	bool stop;
	json_object *events; /* array, guarded by lock */
	int64_t polled_ms;
	struct watcher *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct watcher *watchers;

static int on_polled_event(abox_fs_event_type t, const char *path, void *ud)
{
	struct watcher *w = ud;
	json_object *ev = watching_event(&w->wg, t, path);
	pthread_mutex_lock(&lock);
	if (json_object_array_length(w->events) < WATCHER_EVENTS_MAX)
		json_object_array_add(w->events, ev);
	else
		json_object_put(ev);
	pthread_mutex_unlock(&lock);
	return 0;
}

static void *drain(void *arg)
{
	struct watcher *w = arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		bool stop = w->stop || clock_mono_ms() - w->polled_ms > WATCHER_IDLE_MS;
		pthread_mutex_unlock(&lock);
		if (stop)
			break;
		struct pollfd p = { .fd = abox_watch_fd(w->wg.w), .events = POLLIN };
		(void)poll(&p, 1, 500);
		if (abox_watch_dispatch(w->wg.w, on_polled_event, w, NULL) < 0)
			break;
	}
	return NULL;
}

static void watcher_free(struct watcher *w)
{
	pthread_mutex_lock(&lock);
	w->stop = true;
	pthread_mutex_unlock(&lock);
	pthread_join(w->thread, NULL);
	watching_close(&w->wg);
	json_object_put(w->events);
	free(w);
}

/* Unlinks watcher id of sandbox sb (NULL when there is none). */
static struct watcher *take(const char *id, const char *sb)
{
	struct watcher *found = NULL;
	pthread_mutex_lock(&lock);
	for (struct watcher **pp = &watchers; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->id, id) && !strcmp((*pp)->sandbox, sb)) {
			found = *pp;
			*pp = found->next;
			break;
		}
	pthread_mutex_unlock(&lock);
	return found;
}

/* Watchers nobody polled for a long time (their client went away). */
static void reap_idle(void)
{
	for (;;) {
		struct watcher *idle = NULL;
		pthread_mutex_lock(&lock);
		for (struct watcher **pp = &watchers; *pp; pp = &(*pp)->next)
			if (clock_mono_ms() - (*pp)->polled_ms > WATCHER_IDLE_MS) {
				idle = *pp;
				*pp = idle->next;
				break;
			}
		pthread_mutex_unlock(&lock);
		if (!idle)
			return;
		watcher_free(idle);
	}
}

enum MHD_Result watcher_rpc(struct request *rq, const char *method)
{
	enum MHD_Result sent;
	reap_idle();
	json_object *b = envd_body(rq, false, &sent), *v;
	if (!b)
		return sent;
	const char *wid = json_object_object_get_ex(b, "watcherId", &v) ? json_object_get_string(v) : NULL;
	enum MHD_Result q;
	if (!strcmp(method, "CreateWatcher")) {
		const char *path = json_object_object_get_ex(b, "path", &v) ? json_object_get_string(v) : NULL;
		if (!path) {
			json_object_put(b);
			return envd_error(rq, EINVAL, "path is required");
		}
		unsigned all = 0;
		pthread_mutex_lock(&lock);
		for (struct watcher *o = watchers; o; o = o->next)
			all++;
		pthread_mutex_unlock(&lock);
		if (all >= WATCHERS_MAX) {
			json_object_put(b);
			return envd_error(rq, EMFILE, "too many watchers: the daemon's limit is %u (RemoveWatcher frees one)",
					  WATCHERS_MAX);
		}
		sandbox_handle_t h = envd_open_body(rq, b, &sent);
		if (!h.sb)
			return sent;
		struct watcher *w = calloc(1, sizeof(*w));
		abox_error err = ABOX_ERROR_INIT;
		/* its id first: nothing to undo when there is none */
		unsigned char raw[16];
		FILE *f = w ? fopen("/dev/urandom", "re") : NULL;
		int r = !w ? -ENOMEM : !f || fread(raw, 1, sizeof(raw), f) != sizeof(raw) ? -EIO : 0;
		if (f)
			fclose(f);
		if (r >= 0)
			r = watching_start(&w->wg, rq, h, b, path, &err);
		if (r < 0) {
			free(w);
			envd_close(&h);
			json_object_put(b);
			return envd_error(rq, -r, "%s", err.msg[0] ? err.msg : "cannot watch");
		}
		for (int i = 0; i < 16; i++)
			snprintf(w->id + 2 * i, 3, "%02x", raw[i]);
		memcpy(w->sandbox, rq->sandbox, sizeof(w->sandbox));
		w->events = json_object_new_array();
		w->polled_ms = clock_mono_ms();
		pthread_create(&w->thread, NULL, drain, w);
		pthread_mutex_lock(&lock);
		w->next = watchers;
		watchers = w;
		pthread_mutex_unlock(&lock);
		json_object *o = json_object_new_object();
		json_object_object_add(o, "watcherId", json_object_new_string(w->id));
		q = reply_json(rq, 200, o);
	} else if (!wid) {
		q = envd_error(rq, EINVAL, "watcherId is required");
	} else if (!strcmp(method, "GetWatcherEvents")) {
		json_object *events = NULL;
		pthread_mutex_lock(&lock);
		for (struct watcher *w = watchers; w; w = w->next)
			if (!strcmp(w->id, wid) && !strcmp(w->sandbox, rq->sandbox)) {
				events = w->events;
				w->events = json_object_new_array();
				w->polled_ms = clock_mono_ms();
			}
		pthread_mutex_unlock(&lock);
		if (!events) {
			q = envd_error(rq, ENOENT, "watcher %s not found", wid);
		} else {
			json_object *o = json_object_new_object();
			json_object_object_add(o, "events", events);
			q = reply_json(rq, 200, o);
		}
	} else {
		struct watcher *w = take(wid, rq->sandbox);
		if (w)
			watcher_free(w);
		q = w ? reply_json(rq, 200, json_object_new_object()) : envd_error(rq, ENOENT, "watcher %s not found", wid);
	}
	json_object_put(b);
	return q;
}
