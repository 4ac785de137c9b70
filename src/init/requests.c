/* requests.c — what abox-init does with each host request: a table from
 * the request type to its handler. The small requests (signal, resize,
 * detach, set-timeout, unwatch, metrics, shutdown) are handled here; the
 * others go to the part of init that owns them (exec.c, stdin.c,
 * output.c, procs.c, files.c, meta.c, users.c, checkpoint.c). A type with
 * no entry gets EOPNOTSUPP, so a newer host learns what this init lacks.
 * Runs only inside the sandbox, as its PID 1. */
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <termios.h>

#include "base/base.h"
#include "base/clock.h"
#include "init.h"
#include "proto/messages.h"
#include "proto/proto.h"
#include "tables.h"

static void queue_ok(int ci, uint32_t id)
{
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_OK, id);
	init_queue(ci, &m);
}

static void req_signal(int ci, const struct proto_frame *f)
{
	uint64_t sig = 0;
	struct proc *p = proc_of_frame(ci, f, &sig, NULL, NULL);
	if (!p || p->state == P_EXITED || sig == 0 || sig >= 65) {
		init_send_error(ci, f->id, p && p->state != P_EXITED ? EINVAL : ESRCH,
				!p ? "signal: no such process"
				   : p->state == P_EXITED ? "signal: the process has ended" : "signal: bad signal number");
		return;
	}
	/* the command is a session leader: its pid is its group id
	 * (until its setsid ran, only the pid itself exists) */
	if (kill(-p->pid, (int)sig) < 0 && errno == ESRCH)
		(void)kill(p->pid, (int)sig);
}

static void req_detach(int ci, const struct proto_frame *f)
{
	/* the creator recorded us: from now on we outlive it */
	prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
	creator_bound = false;
	queue_ok(ci, f->id);
}

static void req_set_timeout(int ci, const struct proto_frame *f)
{
	size_t off = 0;
	struct proto_field fl;
	uint64_t ms = 0, flags = 0;
	bool have = false;
	while (proto_field_next(f, &off, &fl) > 0) {
		if (fl.tag == F_TIMEOUT_MS && proto_field_u64(&fl, &ms) == 0)
			have = true;
		else if (fl.tag == F_FLAGS)
			(void)proto_field_u64(&fl, &flags);
	}
	if (!have || ms > (uint64_t)INT32_MAX * 1000) {
		init_send_error(ci, f->id, EINVAL, "set-timeout: bad value");
		return;
	}
	init_deadline_ms = ms ? clock_boot_ms() + (int64_t)ms : 0;
	if (flags & (CLOCKS_STOP | CLOCKS_RUN))
		procs_clocks_run(flags & CLOCKS_RUN);
	queue_ok(ci, f->id);
}

static void req_resize(int ci, const struct proto_frame *f)
{
	struct proc *p = proc_of_frame(ci, f, NULL, NULL, NULL);
	uint64_t rows = 0, cols = 0;
	size_t off = 0;
	struct proto_field fl;
	while (proto_field_next(f, &off, &fl) > 0) {
		if (fl.tag == F_ROWS)
			(void)proto_field_u64(&fl, &rows);
		else if (fl.tag == F_COLS)
			(void)proto_field_u64(&fl, &cols);
	}
	if (!p || !p->pty || p->out < 0 || !rows || !cols || rows > 1000 || cols > 1000) {
		init_send_error(ci, f->id, p && p->pty ? EINVAL : ENOTTY,
				p && p->pty ? "resize: bad size" : "resize: not a process on a terminal");
		return;
	}
	/* the kernel sends SIGWINCH to the terminal's foreground group */
	struct winsize ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
	(void)ioctl(p->out, TIOCSWINSZ, &ws);
}

static void req_unwatch(int ci, const struct proto_frame *f)
{
	watch_stop(ci, f->id);
	queue_ok(ci, f->id);
}

static void req_metrics(int ci, const struct proto_frame *f)
{
	struct statfs sf;
	if (fstatfs(INIT_LAYER_FD, &sf) < 0) {
		init_send_error(ci, f->id, errno, "metrics: statfs of the writable layer failed");
		return;
	}
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_OK, f->id);
	proto_put_u64(&m, F_DISK_USED, (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize);
	proto_put_u64(&m, F_DISK_TOTAL, (uint64_t)sf.f_blocks * (uint64_t)sf.f_bsize);
	init_queue(ci, &m);
}

static void req_shutdown(int ci, const struct proto_frame *f)
{
	(void)ci;
	(void)f;
	init_shutdown(0);
}

static const struct {
	uint16_t type;
	void (*handle)(int ci, const struct proto_frame *f);
} handlers[] = {
	{ MSG_REQ_EXEC, procs_exec },
	{ MSG_REQ_STDIN, proc_req_stdin },
	{ MSG_REQ_STDIN_CLOSE, proc_req_stdin_close },
	{ MSG_REQ_SIGNAL, req_signal },
	{ MSG_REQ_DETACH, req_detach },
	{ MSG_REQ_SET_TIMEOUT, req_set_timeout },
	{ MSG_REQ_ATTACH, procs_attach },
	{ MSG_REQ_RESIZE, req_resize },
	{ MSG_REQ_LIST, procs_list },
	{ MSG_REQ_FS_READ, files_handle },
	{ MSG_REQ_FS_WRITE, files_handle },
	{ MSG_REQ_FS_DATA, files_handle },
	{ MSG_REQ_FS_CLOSE, files_handle },
	{ MSG_REQ_FS_STAT, files_handle },
	{ MSG_REQ_FS_LIST, files_handle },
	{ MSG_REQ_FS_MKDIR, files_handle },
	{ MSG_REQ_FS_MOVE, files_handle },
	{ MSG_REQ_FS_REMOVE, files_handle },
	{ MSG_REQ_FS_WATCH, files_handle },
	{ MSG_REQ_FS_UNWATCH, req_unwatch },
	{ MSG_REQ_FS_META_GET, meta_handle },
	{ MSG_REQ_FS_META_SET, meta_handle },
	{ MSG_REQ_ACCOUNTS, users_accounts },
	{ MSG_REQ_METRICS, req_metrics },
	{ MSG_REQ_CHECKPOINT, ckpt_handle },
	{ MSG_REQ_START, oci_start },
	{ MSG_REQ_OCI_FDS, oci_fds },
	{ MSG_REQ_SHUTDOWN, req_shutdown },
};

void init_handle_frame(int ci, const struct proto_frame *f)
{
	size_t i = 0;
	while (i < ELEMENTSOF(handlers) && handlers[i].type != f->type)
		i++;
	if (i < ELEMENTSOF(handlers))
		handlers[i].handle(ci, f);
	else
		init_send_error(ci, f->id, EOPNOTSUPP, "unknown request type");
	/* the fds a request carries (an OCI exec's stdio) are its handler's
	 * to use while it runs, and never kept: a client sending others
	 * cannot fill init's table */
	for (unsigned k = 0; k < f->nfds; k++)
		close(f->fds[k]);
}
