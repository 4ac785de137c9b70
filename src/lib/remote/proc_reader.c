/* remote/proc_reader.c — the reader of a remote process's event stream.
 * A thread of the handle runs the HTTP exchange (process.Process/Start or
 * Connect, or a WatchDir stream) and turns each Connect event into the
 * frame init itself would have sent, written to a socketpair whose other
 * end is the sandbox handle's connection: the dispatch code, the caller's
 * poll loop and back-pressure (the thread blocks when the caller stops
 * reading) are the local backend's own. It also keeps the complete output
 * of a command with truncation. Not here: opening the stream and the
 * handle's requests (proc.c), decoding one event (stream.c). Runs in the
 * caller's process, on the handle's thread. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/clock.h"
#include "proto/messages.h"
#include "remote/remote.h"
#include "remote/stream.h"

static void decide(struct remote_proc *rp, int pid, int e)
{
	pthread_mutex_lock(&rp->lock);
	if (!rp->decided) {
		rp->decided = true;
		rp->pid = pid;
		if (e)
			rp->err = e;
		pthread_cond_signal(&rp->cond);
	}
	pthread_mutex_unlock(&rp->lock);
}

static int send_frame(struct remote_proc *rp, struct proto_msg *m)
{
	int r = proto_send(rp->fd, m);
	proto_msg_free(m);
	return r;
}

/* Appends a data event's bytes to its stream's spool file. */
static void spool(struct remote_proc *rp, json_object *o)
{
	json_object *e, *d, *v;
	if (!json_object_object_get_ex(o, "event", &e) || !json_object_object_get_ex(e, "data", &d))
		return;
	int which = json_object_object_get_ex(d, "stdout", &v) || json_object_object_get_ex(d, "pty", &v) ? 0
		    : json_object_object_get_ex(d, "stderr", &v)						 ? 1
													 : -1;
	unsigned char *raw = NULL;
	size_t n = 0;
	if (which < 0 || base64_decode(json_object_get_string(v), &raw, &n) < 0)
		return;
	(void)write_full(rp->spool[which], raw, n); /* a full disk here only costs the full-output files */
	free(raw);
}

/* Whether a SIGKILL end was the command's own timeout. aboxd says so in
 * the end's error (also to a later attach); a daemon that does not is
 * taken at its word when the kill came once our timeout had passed. */
static bool killed_after_timeout(const struct remote_proc *rp, json_object *o)
{
	json_object *e, *end, *st, *er;
	if (!json_object_object_get_ex(o, "event", &e) || !json_object_object_get_ex(e, "end", &end) ||
	    !json_object_object_get_ex(end, "status", &st) || !json_object_is_type(st, json_type_string) ||
	    strcmp(json_object_get_string(st), "signal: killed") != 0)
		return false;
	if (json_object_object_get_ex(end, "error", &er) && json_object_is_type(er, json_type_string) &&
	    strcmp(json_object_get_string(er), END_TIMEOUT_ERROR) == 0)
		return true;
	if (!rp->timeout_ms)
		return false;
	int64_t ms = clock_mono_ms() - rp->t0_ms;
	return ms >= (int64_t)rp->timeout_ms;
}

/* Whether aboxd's end event says the OOM killer struck (its error, as
 * local/proc.c words it), so that the end carries ABOX_END_OOM here too. */
static bool oom_killed(json_object *o)
{
	json_object *e, *end, *er;
	return json_object_object_get_ex(o, "event", &e) && json_object_object_get_ex(e, "end", &end) &&
	       json_object_object_get_ex(end, "error", &er) && json_object_is_type(er, json_type_string) &&
	       strstr(json_object_get_string(er), END_OOM_WORDS) != NULL;
}

static int on_message(struct remote_proc *rp, uint8_t flags, json_object *o)
{
	if (flags & E2B_END_STREAM) {
		const char *code, *msg;
		if (remote_end_error(o, &code, &msg) && !rp->watch_root && !rp->ended && !strcmp(code, E2B_DEADLINE_EXCEEDED)) {
			/* aboxd (as envd) ends a command killed at its timeout this
			 * way, with no end event: the caller gets init's timeout end */
			json_object *ev = json_tokener_parse("{\"event\": {\"end\": {\"exitCode\": -1, \"exited\": false,"
							     " \"status\": \"signal: killed\", \"error\": \"" END_TIMEOUT_ERROR "\"}}}");
			int k = ev ? on_message(rp, 0, ev) : -ENOMEM;
			json_object_put(ev);
			return k;
		}
		if (remote_end_error(o, &code, &msg)) {
			rp->failed = true;
			rp->err = remote_refine(remote_errno(500, code), msg);
			snprintf(rp->errmsg, sizeof(rp->errmsg), "%s", msg);
		}
		return 0;
	}
	struct proto_msg m;
	bool end = false, started = false;
	int pid = rp->pid;
	int k = rp->watch_root ? remote_watch_frame(o, rp->req, rp->watch_root, &started, &m)
			       : remote_event_frame(o, rp->req, &pid, &end, &m);
	if (started)
		decide(rp, 1, 0); /* the watch is in place */
	if (k < 0) {
		rp->failed = true;
		rp->err = EPROTO;
		snprintf(rp->errmsg, sizeof(rp->errmsg), "%s: a malformed event from the daemon",
			 rp->watch_root ? "watch" : "exec");
		return k;
	}
	if (k == 0)
		return 0;
	if (end && killed_after_timeout(rp, o))
		proto_put_u64(&m, F_FLAGS, END_TIMED_OUT);
	else if (end && oom_killed(o))
		proto_put_u64(&m, F_FLAGS, END_OOM_KILLED);
	if (rp->spool[0] >= 0 && !rp->watch_root)
		spool(rp, o);
	if (send_frame(rp, &m) < 0) {
		rp->failed = true;
		rp->err = EPIPE;
		snprintf(rp->errmsg, sizeof(rp->errmsg), "exec: the handle was closed");
		return -EPIPE;
	}
	if (end)
		rp->ended = true;
	if (pid != rp->pid)
		decide(rp, pid, 0); /* the start: the caller learns the pid */
	return 0;
}

/* One message for envq_each: a failed one (said in rp) stops the stream. */
static int take(void *ud, uint8_t flags, json_object *o)
{
	return on_message(ud, flags, o) < 0;
}

size_t remote_proc_on_data(char *d, size_t sz, size_t nm, void *ud)
{
	struct remote_proc *rp = ud;
	size_t n = sz * nm;
	if (rp->stop)
		return 0;
	long status = 0;
	curl_easy_getinfo(rp->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		/* an error body: kept (bounded), judged at the end */
		size_t room = rp->err_len < sizeof(rp->err_body) - 1 ? sizeof(rp->err_body) - 1 - rp->err_len : 0;
		size_t k = n < room ? n : room;
		memcpy(rp->err_body + rp->err_len, d, k);
		rp->err_len += k;
		rp->err_body[rp->err_len] = '\0';
		return n;
	}
	int r = envq_push(&rp->q, d, n);
	if (r < 0) {
		rp->failed = true;
		rp->err = r == -E2BIG ? EPROTO : -r;
		snprintf(rp->errmsg, sizeof(rp->errmsg), "exec: a message from the daemon is over %u bytes", ENVQ_MAX);
		return 0;
	}
	char why[160];
	int k = envq_each(&rp->q, take, rp, why, sizeof(why));
	if (k < 0) {
		rp->failed = true;
		rp->err = -k;
		snprintf(rp->errmsg, sizeof(rp->errmsg), "exec: %s", why);
	}
	return k == 0 ? n : 0;
}

void *remote_proc_run(void *arg)
{
	struct remote_proc *rp = arg;
	/* the caller's signals are the caller's: this thread takes none */
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	int running = 1;
	CURLcode done = CURLE_OK;
	while (running && !rp->stop) {
		if (curl_multi_perform(rp->multi, &running) != CURLM_OK)
			break;
		int q;
		CURLMsg *msg;
		while ((msg = curl_multi_info_read(rp->multi, &q)))
			if (msg->msg == CURLMSG_DONE)
				done = msg->data.result;
		if (running)
			curl_multi_poll(rp->multi, NULL, 0, 1000, NULL);
	}
	long status = 0;
	curl_easy_getinfo(rp->easy, CURLINFO_RESPONSE_CODE, &status);
	if (!rp->stop && !rp->ended) {
		struct proto_msg m;
		int e = 0;
		char msg[sizeof(rp->errmsg)];
		if (status && status != 200) {
			json_object *o = NULL, *v;
			json_tokener *t = json_tokener_new_ex(16);
			if (t && rp->err_len)
				o = json_tokener_parse_ex(t, rp->err_body, (int)rp->err_len);
			if (t)
				json_tokener_free(t);
			const char *code = o && json_object_object_get_ex(o, "code", &v) ? json_object_get_string(v) : NULL;
			e = remote_errno(status, code);
			snprintf(msg, sizeof(msg), "%s",
				 o && json_object_object_get_ex(o, "message", &v) ? json_object_get_string(v) : "exec failed");
			json_object_put(o);
		} else if (rp->failed) {
			e = rp->err ? rp->err : EIO;
			snprintf(msg, sizeof(msg), "%s", rp->errmsg);
		} else if (done == CURLE_COULDNT_CONNECT) {
			e = ECONNREFUSED;
			snprintf(msg, sizeof(msg), "exec: %s", curl_easy_strerror(done));
		} else {
			e = EPIPE;
			snprintf(msg, sizeof(msg), "exec: the daemon's stream ended without an end event (%s)",
				 curl_easy_strerror(done));
		}
		if (status == 502 || status == 503 || status == 504)
			rp->transient = true;
		proto_msg_init(&m, MSG_EV_ERROR, rp->req);
		proto_put_u64(&m, F_ERRNO, (uint64_t)e);
		proto_put_str(&m, F_MESSAGE, msg);
		(void)send_frame(rp, &m);
		if (!rp->decided)
			snprintf(rp->errmsg, sizeof(rp->errmsg), "%s", msg);
		decide(rp, 0, e);
	}
	decide(rp, 0, EPIPE);
	close(rp->fd); /* the caller reads what came, then EOF */
	rp->fd = -1;
	return NULL;
}
