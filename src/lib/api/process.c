/* api/process.c — the public process calls: checks, then the sandbox's
 * backend; the handle's events are api/events.c, its truncated output
 * api/truncate.c. Runs in the caller's process. */
#include <poll.h>

#include "api/api.h"

int abox_proc_start(abox_sandbox *sb, const abox_proc_opts *opts, abox_proc **out, abox_error *err)
{
	API_NEED(sb, "exec");
	return API_CALL(sb->ctx, proc_start, "exec", sb, opts, out, err);
}

int abox_proc_attach(abox_sandbox *sb, int pid, const char *tag, abox_proc **out, abox_error *err)
{
	API_NEED(sb, "attach");
	return API_CALL(sb->ctx, proc_attach, "attach", sb, pid, tag, out, err);
}

int abox_proc_list(abox_sandbox *sb, abox_proc_info **out, size_t *n, abox_error *err)
{
	API_NEED(sb, "ps");
	return API_CALL(sb->ctx, proc_list, "ps", sb, out, n, err);
}

int abox_proc_write_stdin(abox_proc *p, const void *buf, size_t len, abox_error *err)
{
	API_NEED(p, "stdin");
	return API_CALL(p->sb->ctx, proc_input, "stdin", p, buf, len, false, err);
}

int abox_proc_close_stdin(abox_proc *p, abox_error *err)
{
	API_NEED(p, "stdin");
	return API_CALL(p->sb->ctx, proc_input, "stdin", p, NULL, 0, true, err);
}

int abox_proc_resize(abox_proc *p, uint16_t rows, uint16_t cols, abox_error *err)
{
	API_NEED(p, "resize");
	return API_CALL(p->sb->ctx, proc_resize, "resize", p, rows, cols, err);
}

int abox_proc_signal(abox_proc *p, int sig, abox_error *err)
{
	API_NEED(p, "signal");
	return API_CALL(p->sb->ctx, proc_signal, "signal", p, sig, err);
}

void proc_handle_free(abox_proc *p)
{
	if (!p)
		return;
	if (p->sb && p->sb->ctx->be->proc_free)
		p->sb->ctx->be->proc_free(p);
	proto_outq_free(&p->stdin_q);
	truncate_free(p);
	if (p->sb && p->sb->active == p)
		p->sb->active = NULL;
	free(p);
}

void abox_proc_free(abox_proc *p)
{
	proc_handle_free(p);
}

int abox_proc_fd(const abox_proc *p)
{
	return p->sb->conn;
}

int abox_proc_pid(const abox_proc *p)
{
	return p->pid;
}

int abox_proc_events(const abox_proc *p)
{
	return events_poll_mask(p);
}

size_t abox_proc_stdin_pending(const abox_proc *p)
{
	return proto_outq_len(&p->stdin_q) + proto_outq_len(&p->sb->out);
}

bool abox_proc_buffered(const abox_proc *p)
{
	return events_buffered(p);
}

int abox_proc_dispatch(abox_proc *p, abox_event_fn fn, void *ud, abox_error *err)
{
	API_NEED(p, "exec");
	return events_dispatch(p, fn, ud, err);
}

int abox_proc_wait(abox_proc *p, int timeout_ms, abox_event_fn fn, void *ud, abox_error *err)
{
	API_NEED(p, "wait");
	return events_wait(p, timeout_ms, fn, ud, err);
}
