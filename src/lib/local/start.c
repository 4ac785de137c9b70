/* local/start.c — an OCI container's start (its held process run by init,
 * see src/init/oci.c) and the removal of a sandbox by id, dead or alive.
 * Runs in the CLI/daemon. */
#include <stdlib.h>
#include <string.h>

#include "local/local.h"
#include "local/create_oci.h"
#include "proto/messages.h"

struct start_answer {
	int pid;
};

/* EV_START carries the pid; an EV_END before the EV_OK is its exec
 * failing, and an EV_ERROR init's refusal: each with init's words. */
static int start_frame(const struct proto_frame *f, const char *what, void *ud, abox_error *err)
{
	struct start_answer *a = ud;
	_cleanup_free_ char *msg = NULL;
	uint64_t code = 0, pid = 0;
	size_t off = 0;
	struct proto_field fl;
	while (proto_field_next(f, &off, &fl) > 0) {
		if (fl.tag == F_MESSAGE && !msg)
			(void)proto_field_strdup(&fl, &msg);
		else if (fl.tag == F_PID)
			(void)proto_field_u64(&fl, &pid);
		else if (fl.tag == F_ERRNO)
			(void)proto_field_u64(&fl, &code);
	}
	if (f->type == MSG_EV_START) {
		a->pid = (int)pid;
		return 0;
	}
	if (f->type == MSG_EV_ERROR)
		return abox_error_setx(err, code && code < 4096 ? (int)code : EPROTO, "%s: %s", what,
				       msg ? msg : "init refused");
	if (f->type == MSG_EV_END)
		return abox_error_setx(err, ENOEXEC, "%s: %s", what, msg ? msg : "the process ended at once");
	return 0;
}

int local_start(abox_sandbox *sb, int *pid, abox_error *err)
{
	int r = backend_can_ask(sb, "start", err);
	if (r < 0)
		return r;
	struct proto_msg m;
	uint32_t id = ++sb->next_req;
	proto_msg_init(&m, MSG_REQ_START, id);
	if ((r = backend_send(sb, &m)) < 0)
		return abox_error_set(err, -r, "start: send");
	struct start_answer a = { 0 };
	if ((r = backend_answer(sb, id, "start", start_frame, NULL, &a, err)) < 0)
		return r;
	if (pid)
		*pid = a.pid;
	return 0;
}

int local_remove(abox_ctx *ctx, const char *id, abox_error *err)
{
	abox_sandbox *sb = NULL;
	int r = local_connect_any(ctx, id, &sb, err);
	if (r < 0)
		return r;
	r = local_kill(sb, err);
	local_free(sb);
	return r;
}

int local_proc_start_oci(abox_sandbox *sb, const char *process_json, const int stdio[3], int *console,
			 abox_proc **out, abox_error *err)
{
	if (sb->paused)
		return backend_not_paused(sb, "exec", err);
	int r = backend_can_ask(sb, "exec", err);
	if (r < 0)
		return r;
	if (sb->active)
		return abox_error_setx(err, EBUSY, "exec: sandbox handle already runs a process");
	struct oci_process op;
	if ((r = oci_process_parse(process_json, strlen(process_json), "process", &op, err)) < 0)
		return r;
	uint64_t within = oci_init_caps(sb->pid);
	if ((r = oci_process_check(&op, within, err)) < 0) {
		oci_process_free(&op);
		return r;
	}
	int master = -1, slave = -1;
	if (op.terminal && !console) {
		oci_process_free(&op);
		return abox_error_setx(err, EINVAL,
				       "exec: process.terminal needs a console to hand the terminal to");
	}
	if (op.terminal && (r = oci_pty(sb->pid, &op, &master, &slave, err)) < 0) {
		oci_process_free(&op);
		return r;
	}
	abox_proc *p = calloc(1, sizeof(*p));
	if (!p) {
		oci_process_free(&op);
		close_if_open(master);
		close_if_open(slave);
		return abox_error_set(err, ENOMEM, "exec");
	}
	p->sb = sb;
	p->req = ++sb->next_req;
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_EXEC, p->req);
	oci_process_put(&m, &op, within);
	oci_process_free(&op);
	/* the caller's stdio, passed; the process goes when the caller does
	 * (a container engine's exec ends it by killing the caller) */
	proto_put_u64(&m, F_FLAGS, EXEC_FDS | EXEC_BOUND | (slave >= 0 ? EXEC_TTY : 0));
	for (int i = 0; i < (slave >= 0 ? 1 : 3); i++)
		proto_put_fd(&m, slave >= 0 ? slave : stdio[i]);
	r = backend_send_fds(sb, &m, "exec: send request", err);
	close_if_open(slave);
	if (r < 0) {
		close_if_open(master);
		free(p);
		return r;
	}
	if (console)
		*console = master;
	sb->active = p;
	*out = p;
	return 0;
}
