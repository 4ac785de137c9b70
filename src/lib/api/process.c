/* api/process.c — the public process calls: checks, then the sandbox's
 * backend; the handle's events are handle/events.c, its truncated output
 * handle/output.c (rendered here for abox_proc_result_get). Runs in the
 * caller's process. */
#include <poll.h>

#include "api/api.h"

int abox_proc_start(abox_sandbox *sb, const abox_proc_opts *opts, abox_proc **out, abox_error *err)
{
	API_NEED(sb, "exec");
	return API_CALL(sb->ctx, proc_start, "exec", sb, opts, out, err);
}

int abox_proc_start_oci(abox_sandbox *sb, const char *process_json, const int stdio[3], int *console,
			abox_proc **out, abox_error *err)
{
	API_NEED(sb, "exec");
	API_NEED(process_json, "exec");
	API_NEED(stdio, "exec");
	return API_CALL(sb->ctx, proc_start_oci, "exec", sb, process_json, stdio, console, out, err);
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

int abox_proc_result_get(abox_proc *p, abox_proc_result *out, abox_error *err)
{
	if (!out || out->version < 1)
		return abox_error_setx(err, EINVAL, "result: abox_proc_result needs its version set");
	if (!p->t_threshold)
		return abox_error_setx(err, EINVAL, "result: the process was started without truncation");
	if (!p->ended)
		return abox_error_setx(err, EBUSY, "result: the process has not ended");
	int fr;
	if (p->sb->ctx->be->truncate_finish && (fr = p->sb->ctx->be->truncate_finish(p, err)) < 0)
		return fr;
	abox_proc_result r = { .version = out->version,
			       .exit_code = p->exit_code,
			       .stdout_bytes = p->t_out.bytes,
			       .stderr_bytes = p->t_err.bytes };
	bool cut = p->t_out.bytes + p->t_err.bytes > p->t_threshold;
	r.truncated = cut && (p->t_out.bytes > (uint64_t)p->t_head + p->t_tail ||
			      p->t_err.bytes > (uint64_t)p->t_head + p->t_tail);
	r.stdout_text = truncate_render(p, &p->t_out, "stdout.txt", cut, &r.stdout_len);
	r.stderr_text = truncate_render(p, &p->t_err, "stderr.txt", cut, &r.stderr_len);
	safe_snprintf(r.dir, sizeof(r.dir), "%s", p->t_dir);
	if (!r.stdout_text || !r.stderr_text) {
		abox_proc_result_clear(&r);
		return abox_error_set(err, ENOMEM, "result");
	}
	*out = r;
	return 0;
}

void abox_proc_result_clear(abox_proc_result *r)
{
	if (!r)
		return;
	free(r->stdout_text);
	free(r->stderr_text);
	r->stdout_text = r->stderr_text = NULL;
}
