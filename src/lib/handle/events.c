/* handle/events.c — the events of a process handle, whichever backend:
 * both deliver them as init's frames on sb->conn (a remote process's
 * through a socketpair its stream thread writes), so the caller's poll
 * loop, dispatch and wait are one. What only a backend knows (OOM
 * counts, whether a deadline still holds, reaping init) it is asked
 * through its table. Runs in the caller's process. */
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "backend.h"
#include "proto/messages.h"

/* A deadline this handle passed, confirmed by the backend (another
 * process may have moved it: a pause stops the clock). */
static bool deadline_due(abox_sandbox *sb)
{
	return !sb->ctx->be->deadline_due || sb->ctx->be->deadline_due(sb);
}

static void deliver_end(abox_proc *p, abox_event *ev, abox_event_fn fn, void *ud)
{
	uint64_t ooms = 0;
	abox_sandbox *sb = p->sb;
	if (sb->oom_known && sb->ctx->be->oom_kills && sb->ctx->be->oom_kills(sb, &ooms, NULL) >= 0) {
		if (ooms > sb->oom_base)
			ev->end_flags |= ABOX_END_OOM;
		sb->oom_base = ooms;
	}
	/* said in words too, for callers that pass the error on as it is
	 * (aboxd's end event, and from there the SDKs' CommandExitError):
	 * the OOM kill and the limit that was hit */
	if ((ev->end_flags & ABOX_END_OOM) && !ev->error) {
		char lim[32] = "";
		if (sb->memory_limit)
			format_size(sb->memory_limit, lim, sizeof(lim));
		safe_snprintf(p->oom_msg, sizeof(p->oom_msg), "%s" END_OOM_WORDS "%s%s%s",
			      ev->signal == SIGKILL ? "killed" : "a process of the sandbox was killed",
			      lim[0] ? " (limit " : "", lim, lim[0] ? ")" : "");
		ev->error = p->oom_msg;
	}
	p->ended = true;
	p->exit_code = ev->exit_code;
	p->sb->active = NULL;
	if (fn)
		fn(ev, ud);
}

/* init went away without an end event: the sandbox was killed (deadline,
 * OOM of init's tree, an outside kill). */
static void deliver_lost(abox_proc *p, abox_event_fn fn, void *ud)
{
	abox_sandbox *sb = p->sb;
	if (sb->ctx->be->link_lost)
		sb->ctx->be->link_lost(sb);
	abox_event ev = { .type = ABOX_EVENT_END,
			  .pid = p->pid,
			  .exit_code = 128 + SIGKILL,
			  .signal = SIGKILL,
			  .end_flags = ABOX_END_LOST };
	if (sb->timed_out || (sb->deadline_ms && clock_mono_ms() >= sb->deadline_ms - 5) ||
	    (sb->dead && WIFEXITED(sb->init_status) && WEXITSTATUS(sb->init_status) == 124))
		ev.end_flags = ABOX_END_TIMEOUT;
	deliver_end(p, &ev, fn, ud);
}

static int handle(abox_proc *p, const struct proto_frame *f, abox_event_fn fn, void *ud, abox_error *err)
{
	for (unsigned i = 0; i < f->nfds; i++)
		close(f->fds[i]);
	if (f->id != p->req)
		return 0; /* HELLO and events of other requests */

	abox_event ev = { 0 };
	_cleanup_free_ char *msg = NULL;
	uint64_t v;
	int64_t sv;
	size_t off = 0;
	struct proto_field fl;
	int k;
	while ((k = proto_field_next(f, &off, &fl)) > 0) {
		switch (fl.tag) {
		case F_PID:
			if (proto_field_u64(&fl, &v) == 0)
				ev.pid = (int)v;
			break;
		case F_DATA:
			ev.data = fl.val;
			ev.len = fl.len;
			break;
		case F_EXIT_CODE:
			if (proto_field_i64(&fl, &sv) == 0)
				ev.exit_code = (int)sv;
			break;
		case F_SIGNAL:
			if (proto_field_u64(&fl, &v) == 0)
				ev.signal = (int)v;
			break;
		case F_DROPPED:
			if (proto_field_u64(&fl, &v) == 0)
				ev.dropped = v;
			break;
		case F_FLAGS:
			if (f->type == MSG_EV_END && proto_field_u64(&fl, &v) == 0 && (v & END_TIMED_OUT))
				ev.end_flags |= ABOX_END_CMD_TIMEOUT;
			if (f->type == MSG_EV_END && proto_field_u64(&fl, &v) == 0 && (v & END_OOM_KILLED))
				ev.end_flags |= ABOX_END_OOM;
			break;
		case F_MESSAGE:
			free(msg);
			msg = NULL;
			(void)proto_field_strdup(&fl, &msg);
			break;
		default:
			break;
		}
	}
	if (k < 0)
		return abox_error_setx(err, EPROTO, "exec: malformed event from init");

	switch (f->type) {
	case MSG_EV_STDIN_ACK: {
		uint64_t n = 0;
		off = 0;
		while (proto_field_next(f, &off, &fl) > 0)
			if (fl.tag == F_COUNT)
				(void)proto_field_u64(&fl, &n);
		p->stdin_unacked = n > p->stdin_unacked ? 0 : p->stdin_unacked - (size_t)n;
		/* a failed send means init is going away: its end event (or the
		 * loss of the connection) follows and says what happened */
		if (p->sb->ctx->be->proc_stdin_ack)
			p->sb->ctx->be->proc_stdin_ack(p);
		return 0;
	}
	case MSG_EV_START:
		p->pid = ev.pid;
		backend_log(p->sb->ctx, ABOX_LOG_DEBUG, "exec %s: started as pid %d", p->sb->id, (int)ev.pid);
		ev.type = ABOX_EVENT_START;
		if (fn)
			fn(&ev, ud);
		return 0;
	case MSG_EV_PTY:
		ev.type = ABOX_EVENT_PTY;
		if (fn)
			fn(&ev, ud);
		return 0;
	case MSG_EV_STDOUT:
	case MSG_EV_STDERR:
		ev.type = f->type == MSG_EV_STDOUT ? ABOX_EVENT_STDOUT : ABOX_EVENT_STDERR;
		if (p->t_threshold)
			truncate_feed(p, f->type == MSG_EV_STDERR, ev.data, ev.len);
		if (fn)
			fn(&ev, ud);
		return 0;
	case MSG_EV_END:
		backend_log(p->sb->ctx, ABOX_LOG_DEBUG, "exec %s: ended", p->sb->id);
		ev.type = ABOX_EVENT_END;
		p->exit_code = ev.exit_code;
		ev.error = msg;
		deliver_end(p, &ev, fn, ud);
		return 1;
	case MSG_EV_ERROR: {
		/* init's errno, so callers can tell "no such process" (ESRCH)
		 * from a failure */
		uint64_t e = EIO;
		off = 0;
		while (proto_field_next(f, &off, &fl) > 0)
			if (fl.tag == F_ERRNO)
				(void)proto_field_u64(&fl, &e);
		p->ended = true;
		p->sb->active = NULL;
		return abox_error_setx(err, e > 0 && e < 4096 ? (int)e : EIO, "%s",
				       msg ? msg : "init reported an error");
	}
	default:
		return 0;
	}
}

/* How much one dispatch call does before it returns to its caller's loop,
 * so a flood of output never keeps the caller from its signals, stdin or
 * deadline. */
#define DISPATCH_FRAMES 64

int events_dispatch(abox_proc *p, abox_event_fn fn, void *ud, abox_error *err)
{
	abox_sandbox *sb = p->sb;
	if (p->ended)
		return 1;
	if (sb->deadline_ms && clock_mono_ms() >= sb->deadline_ms && deadline_due(sb)) {
		sb->timed_out = true;
		(void)sb->ctx->be->kill(sb, NULL);
		deliver_lost(p, fn, ud);
		return 1;
	}
	if (proto_outq_len(&sb->out) && proto_flush(sb->conn, &sb->out) < 0) {
		/* init is gone; what it said before is still readable */
	}
	for (int budget = DISPATCH_FRAMES; budget > 0;) {
		struct proto_frame f;
		int k = proto_reader_next(&sb->rd, &f);
		if (k < 0)
			return abox_error_setx(err, EPROTO, "exec: broken frame from init");
		if (k > 0) {
			budget--;
			k = handle(p, &f, fn, ud, err);
			if (k != 0)
				return k;
			continue;
		}
		k = proto_reader_fill(&sb->rd);
		if (k == -EAGAIN)
			break;
		if (k < 0 && k != -ECONNRESET)
			return abox_error_set(err, -k, "exec: read from init");
		if (k <= 0) {
			deliver_lost(p, fn, ud);
			return 1;
		}
	}
	return 0;
}

int events_poll_mask(const abox_proc *p)
{
	return POLLIN | (proto_outq_len(&p->sb->out) ? POLLOUT : 0);
}

bool events_buffered(const abox_proc *p)
{
	size_t consumed;
	struct proto_frame f;
	const struct proto_reader *rd = &p->sb->rd;
	return !p->ended && rd->buf &&
	       proto_decode(rd->buf + rd->start, rd->end - rd->start, &f, &consumed) == 1;
}

int events_wait(abox_proc *p, int timeout_ms, abox_event_fn fn, void *ud, abox_error *err)
{
	int64_t until = timeout_ms >= 0 ? clock_mono_ms() + timeout_ms : 0;
	for (;;) {
		int r = events_dispatch(p, fn, ud, err);
		if (r != 0)
			return r;
		int64_t now = clock_mono_ms();
		int wait = -1;
		if (until) {
			if (now >= until)
				return abox_error_setx(err, ETIMEDOUT, "wait: timed out");
			wait = (int)(until - now);
		}
		if (p->sb->deadline_ms) {
			int64_t left = p->sb->deadline_ms - now;
			if (left < 0)
				left = 0;
			if (wait < 0 || left < wait)
				wait = (int)left;
		}
		if (events_buffered(p))
			continue; /* read but not yet delivered: no need to wait */
		struct pollfd pfd = { .fd = p->sb->conn, .events = (short)events_poll_mask(p) };
		if (poll(&pfd, 1, wait) < 0 && errno != EINTR)
			return abox_error_set(err, errno, "wait: poll");
	}
}
