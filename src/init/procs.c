/* procs.c — abox-init's process table: slots and their release, the end
 * of a process (its exit status, the end event, the bounded history of
 * ended ones), reaping, per-command timeouts counted in running time, the
 * lookup of the process a request names, and list. Output is output.c,
 * stdin stdin.c, starting exec.c. Runs only inside the sandbox, as its
 * PID 1. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "base/base.h"
#include "base/clock.h"
#include "init.h"
#include "proto/messages.h"
#include "proto/proto.h"
#include "tables.h"

#include "tables.h"

struct proc procs[MAX_PROCS];
/* One past the highest slot ever taken. Slots are taken lowest first, so
 * loops stop here instead of walking all MAX_PROCS: a slot is ≈ 1 KiB, and
 * a full walk faulted in ≈ 75 pages on init's first pass (≈ 0.1 ms before
 * the first command could start) and touched 256 cache lines on every
 * pass of the loop after. */
unsigned procs_used;
static uint64_t exit_counter;

static void proc_close_io(struct proc *p)
{
	proc_close_fd(&p->in);
	proc_close_fd(&p->out);
	proc_close_fd(&p->err);
	proc_close_fd(&p->ep);
	proc_close_fd(&p->tee_out);
	proc_close_fd(&p->tee_err);
	free(p->inbuf);
	p->inbuf = NULL;
	p->inlen = 0;
}

static void proc_release(struct proc *p)
{
	proc_close_io(p);
	proc_ring_free(&p->rout);
	proc_ring_free(&p->rerr);
	free(p->tag);
	free(p->cmd);
	free(p->error);
	memset(p, 0, sizeof(*p));
	p->in = p->out = p->err = p->ep = p->tee_out = p->tee_err = -1;
	p->owner = -1;
}

/* Kills the commands whose own timeout has come: the whole group (the
 * command leads its session), so `sh -c 'sleep 1000 & sleep 1000'` ends
 * entirely. One that was reaped already is skipped: its pid may be
 * another process's by now. Returns the ms until the next such timeout,
 * or -1 when none is set. */
int64_t procs_kill_timed_out(void)
{
	int64_t now = 0, next = -1;
	for (unsigned j = 0; j < procs_used; j++) {
		struct proc *p = &procs[j];
		if (!p->kill_at || p->state == P_FREE || p->state == P_EXITED || p->exited)
			continue;
		if (!now) /* the clock is read only when a timeout is set */
			now = clock_boot_ms();
		if (p->kill_at <= now) {
			kill(-p->pid, SIGKILL);
			kill(p->pid, SIGKILL);
			p->timed_out = true;
			p->kill_at = 0;
			continue;
		}
		int64_t left = p->kill_at - now;
		if (next < 0 || left < next)
			next = left > INT32_MAX ? INT32_MAX : left;
	}
	return next;
}

/* Commands' timeouts count the sandbox's running time only. While it is
 * frozen (pause) or checkpointed, CLOCK_BOOTTIME goes on — and a restore
 * may even happen on another boot, where it means nothing — so what is
 * left is kept as a span and turned back into a time when it runs again. */
void procs_clocks_run(bool run)
{
	int64_t now = clock_boot_ms();
	for (unsigned j = 0; j < procs_used; j++) {
		struct proc *p = &procs[j];
		if (!run && p->kill_at) {
			p->kill_left = p->kill_at > now ? p->kill_at - now : 1;
			p->kill_at = 0;
		} else if (run && p->kill_left) {
			p->kill_at = now + p->kill_left;
			p->kill_left = 0;
		}
	}
}

/* Tells the attached clients and moves p to the history (bounded: the
 * oldest ended process goes). */
static void proc_ended(struct proc *p)
{
	if (p->sudo_fd)
		sudo_report(p);
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_END, 0);
	proc_put_end(&m, p);
	proc_broadcast(p, &m);
	bool oneshot = p->oneshot;
	if (p->oci_main)
		oci_main_ended(p);
	proc_close_io(p);
	p->state = P_EXITED;
	memset(p->att_req, 0, sizeof(p->att_req));
	p->owner = -1;
	p->exit_seq = ++exit_counter;
	unsigned n = 0;
	struct proc *oldest = NULL;
	for (unsigned i = 0; i < procs_used; i++) {
		if (procs[i].state != P_EXITED)
			continue;
		n++;
		if (!oldest || procs[i].exit_seq < oldest->exit_seq)
			oldest = &procs[i];
	}
	if (n > HISTORY_MAX && oldest)
		proc_release(oldest);
	if (oneshot)
		init_end_after_flush(0);
}

static void proc_finish(struct proc *p)
{
	proc_drain_pending(p);
	if (WIFEXITED(p->status)) {
		p->exit_code = WEXITSTATUS(p->status);
		p->exit_signal = 0;
	} else {
		p->exit_code = 128 + WTERMSIG(p->status);
		p->exit_signal = WTERMSIG(p->status);
	}
	/* it may have ended by itself just before its timeout came (a zombie
	 * not reaped yet gets the kill too): only a SIGKILL death is that */
	if (p->exit_signal != SIGKILL)
		p->timed_out = false;
	proc_ended(p);
}

/* The exec result arrived (or the child died before telling). */
void proc_started(struct proc *p)
{
	int exec_errno = 0;
	char msg[480];
	int k = child_exec_result(p->ep, &exec_errno, msg, sizeof(msg));
	if (k == -EAGAIN)
		return;
	if (k == 0 && p->stalled) {
		/* no exec, no error from the child: it was stopped (by a signal
		 * from inside the sandbox) and killed by the watchdog */
		k = 1;
		exec_errno = ETIMEDOUT;
		safe_snprintf(msg, sizeof(msg), "exec '%s': stopped before its exec, killed after %d ms",
			      p->cmd ? p->cmd : "?", SPAWN_LIMIT_MS);
	}
	proc_close_fd(&p->ep);
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_START, 0);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	proc_broadcast(p, &m);
	if (k == 0) {
		p->state = P_RUNNING;
		if (p->oci_main && p->owner >= 0) {
			/* the start's answer: it runs */
			proto_msg_init(&m, MSG_EV_OK, p->owner_req);
			init_queue(p->owner, &m);
		}
		if (p->exited)
			proc_finish(p);
		return;
	}
	/* It could not exec: an end with the shell's codes (127 not found,
	 * 126 not runnable) and the reason. The child is reaped by the
	 * SIGCHLD path (proc_find skips ended entries). */
	p->exit_code = exec_errno == ENOENT && strncmp(msg, "exec", 4) == 0 ? 127 : 126;
	p->exit_signal = 0;
	p->error = strdup(msg);
	proc_ended(p);
}

/* A live (starting or running) process by pid. */
static struct proc *proc_find(pid_t pid)
{
	for (unsigned i = 0; i < procs_used; i++)
		if ((procs[i].state == P_STARTING || procs[i].state == P_RUNNING) && procs[i].pid == pid)
			return &procs[i];
	return NULL;
}

void procs_reap(void)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0)
			return;
		struct proc *p = proc_find(pid);
		if (!p || p->exited)
			continue;
		p->exited = true;
		p->status = st;
		if (p->state == P_STARTING)
			proc_started(p); /* EOF or the error is there now */
		else
			proc_finish(p);
	}
}

/* The process a request is about: by F_PID or F_TAG (live ones first, then
 * the history, newest first), or when the host does not know the pid yet
 * (it sent the request before reading the start event), by the id of the
 * exec or attach request on the same connection. */
struct proc *proc_of_frame(int ci, const struct proto_frame *f, uint64_t *sig,
				  const uint8_t **data, size_t *len)
{
	size_t off = 0;
	struct proto_field fl;
	uint64_t pid = 0;
	const uint8_t *tag = NULL;
	size_t taglen = 0;
	while (proto_field_next(f, &off, &fl) > 0) {
		if (fl.tag == F_PID)
			(void)proto_field_u64(&fl, &pid);
		else if (fl.tag == F_SIGNAL && sig)
			(void)proto_field_u64(&fl, sig);
		else if (fl.tag == F_TAG) {
			tag = fl.val;
			taglen = fl.len;
		} else if (fl.tag == F_DATA && data) {
			*data = fl.val;
			*len = fl.len;
		}
	}
	struct proc *best = NULL;
	for (unsigned i = 0; i < procs_used; i++) {
		struct proc *p = &procs[i];
		if (p->state == P_FREE)
			continue;
		bool match;
		if (pid > 0)
			match = (uint64_t)p->pid == pid;
		else if (tag)
			match = p->tag && strlen(p->tag) == taglen && memcmp(p->tag, tag, taglen) == 0;
		else
			match = (p->owner == ci && p->owner_req == f->id) ||
				p->att_req[ci] == f->id;
		if (!match)
			continue;
		bool live = p->state != P_EXITED;
		bool best_live = best && best->state != P_EXITED;
		if (!best || (live && !best_live) || (live == best_live && !live && p->exit_seq > best->exit_seq))
			best = p;
	}
	return best;
}

void procs_list(int ci, const struct proto_frame *f)
{
	for (unsigned i = 0; i < procs_used; i++) {
		const struct proc *p = &procs[i];
		if (p->state == P_FREE)
			continue;
		struct proto_msg m;
		proto_msg_init(&m, MSG_EV_PROC, f->id);
		proto_put_u64(&m, F_PID, (uint64_t)p->pid);
		if (p->tag)
			proto_put_str(&m, F_TAG, p->tag);
		if (p->cmd)
			proto_put_str(&m, F_ARG, p->cmd);
		proto_put_u64(&m, F_FLAGS, p->state == P_EXITED ? 0 : 1);
		if (p->state == P_EXITED) {
			proto_put_i64(&m, F_EXIT_CODE, p->exit_code);
			proto_put_u64(&m, F_SIGNAL, (uint64_t)p->exit_signal);
		}
		init_queue(ci, &m);
	}
	struct proto_msg ok;
	proto_msg_init(&ok, MSG_EV_OK, f->id);
	init_queue(ci, &ok);
}

void init_end_after_flush(int code)
{
	exiting = true;
	exit_code = code;
}

void procs_client_gone(unsigned ci, unsigned last)
{
	for (unsigned i = 0; i < procs_used; i++) {
		if (procs[i].state == P_FREE)
			continue;
		struct proc *p = &procs[i];
		if (p->owner == (int)ci && p->bound && (p->state == P_STARTING || p->state == P_RUNNING) &&
		    !p->exited) {
			kill(-p->pid, SIGKILL);
			kill(p->pid, SIGKILL);
		}
		if (p->owner == (int)ci)
			p->owner = -1;
		else if (p->owner == (int)last)
			p->owner = (int)ci;
		p->att_req[ci] = p->att_req[last];
		p->att_req[last] = 0;
	}
}
