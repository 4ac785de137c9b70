/* procs.c — abox-init's processes: exec requests, their output streamed
 * to every attached client (and kept in a bounded ring for late ones),
 * stdin under a credit window, reaping, timeouts, the bounded history of
 * ended ones, attach and list. Runs only inside the sandbox, as its PID 1. */
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "base/base.h"
#include "base/clock.h"
#include "base/fdpass.h"
#include "init.h"
#include "proto/messages.h"
#include "proto/proto.h"
#include "tables.h"

struct proc procs[MAX_PROCS];
/* One past the highest slot ever taken. Slots are taken lowest first, so
 * loops stop here instead of walking all MAX_PROCS: a slot is ≈ 1 KiB, and
 * a full walk faulted in ≈ 75 pages on init's first pass (≈ 0.1 ms before
 * the first command could start) and touched 256 cache lines on every
 * pass of the loop after. */
unsigned procs_used;
static size_t ring_total; /* all rings' bytes, against RING_BUDGET */
static uint64_t exit_counter;

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void ring_put(struct ring *r, const uint8_t *d, size_t n)
{
	if (n >= RING_MAX) {
		r->dropped += r->len + (n - RING_MAX);
		d += n - RING_MAX;
		n = RING_MAX;
		r->start = r->len = 0;
	}
	if (r->len + n > r->cap && r->cap < RING_MAX) {
		size_t ncap = r->cap ? r->cap : 65536;
		while (ncap < r->len + n && ncap < RING_MAX)
			ncap *= 2;
		uint8_t *nb = ring_total - r->cap + ncap <= RING_BUDGET ? malloc(ncap) : NULL;
		if (nb) {
			ring_total = ring_total - r->cap + ncap;
			/* linearize into the bigger buffer */
			for (size_t i = 0; i < r->len; i++)
				nb[i] = r->buf[(r->start + i) % r->cap];
			free(r->buf);
			r->buf = nb;
			r->cap = ncap;
			r->start = 0;
		}
	}
	if (!r->cap) {
		r->dropped += n;
		return;
	}
	if (n > r->cap) {
		/* a ring that could not grow: only the newest bytes fit */
		r->dropped += r->len + (n - r->cap);
		d += n - r->cap;
		n = r->cap;
		r->start = r->len = 0;
	}
	if (r->len + n > r->cap) {
		size_t drop = r->len + n - r->cap;
		r->start = (r->start + drop) % r->cap;
		r->len -= drop;
		r->dropped += drop;
	}
	for (size_t i = 0; i < n;) {
		size_t at = (r->start + r->len) % r->cap;
		size_t k = r->cap - at < n - i ? r->cap - at : n - i;
		memcpy(r->buf + at, d + i, k);
		r->len += k;
		i += k;
	}
}

static void ring_free(struct ring *r)
{
	ring_total -= r->cap;
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* Sends one event to every client attached to p (each under its own
 * request id). */
static void broadcast(struct proc *p, struct proto_msg *m)
{
	for (unsigned ci = 0; ci < nclients; ci++) {
		if (!p->att_req[ci])
			continue;
		m->id = p->att_req[ci];
		if (!clients[ci].mute)
			(void)proto_queue(&clients[ci].out, m);
	}
	proto_msg_free(m);
}

static void send_data(struct proc *p, uint16_t type, const void *buf, size_t n)
{
	ring_put(type == MSG_EV_STDERR ? &p->rerr : &p->rout, buf, n);
	int *tee = type == MSG_EV_STDERR ? &p->tee_err : &p->tee_out;
	if (*tee >= 0 && (memguard_room(*tee, n) < 0 || write_full(*tee, buf, n) < 0))
		close_fd(tee); /* the layer is full: keep what fitted */
	bool any = false;
	for (unsigned ci = 0; ci < nclients && !any; ci++)
		any = p->att_req[ci] != 0;
	if (!any)
		return;
	struct proto_msg m;
	proto_msg_init(&m, type, 0);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	proto_put_bytes(&m, F_DATA, buf, n);
	broadcast(p, &m);
}

/* Reads up to budget bytes from a pipe; closes it at EOF. */
void proc_drain(struct proc *p, int *fd, uint16_t type, size_t budget)
{
	static uint8_t buf[CHUNK];
	while (*fd >= 0 && budget > 0) {
		ssize_t n = read(*fd, buf, budget < sizeof(buf) ? budget : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close_fd(fd);
			return;
		}
		send_data(p, type, buf, (size_t)n);
		budget -= (size_t)n;
	}
}

/* What a pipe holds right now: the last output of an ended command, but
 * no more (a background child that keeps writing cannot hold the end
 * event back). */
static size_t pending(int fd)
{
	int n = 0;
	if (fd < 0 || ioctl(fd, FIONREAD, &n) < 0 || n < 0)
		return 0;
	return (size_t)n;
}

static void proc_close_io(struct proc *p)
{
	close_fd(&p->in);
	close_fd(&p->out);
	close_fd(&p->err);
	close_fd(&p->ep);
	close_fd(&p->tee_out);
	close_fd(&p->tee_err);
	free(p->inbuf);
	p->inbuf = NULL;
	p->inlen = 0;
}

static void proc_release(struct proc *p)
{
	proc_close_io(p);
	ring_free(&p->rout);
	ring_free(&p->rerr);
	free(p->tag);
	free(p->cmd);
	free(p->error);
	memset(p, 0, sizeof(*p));
	p->in = p->out = p->err = p->ep = p->tee_out = p->tee_err = -1;
	p->owner = -1;
}

static void put_end(struct proto_msg *m, const struct proc *p)
{
	proto_put_u64(m, F_PID, (uint64_t)p->pid);
	proto_put_i64(m, F_EXIT_CODE, p->exit_code);
	proto_put_u64(m, F_SIGNAL, (uint64_t)p->exit_signal);
	if (p->timed_out)
		proto_put_u64(m, F_FLAGS, END_TIMED_OUT);
	if (p->error) {
		proto_put_u64(m, F_ERRNO, ENOENT);
		proto_put_str(m, F_MESSAGE, p->error);
	}
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
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_END, 0);
	put_end(&m, p);
	broadcast(p, &m);
	bool oneshot = p->oneshot;
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
	proc_drain(p, &p->out, p->pty ? MSG_EV_PTY : MSG_EV_STDOUT, pending(p->out));
	proc_drain(p, &p->err, MSG_EV_STDERR, pending(p->err));
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
	close_fd(&p->ep);
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_START, 0);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	broadcast(p, &m);
	if (k == 0) {
		p->state = P_RUNNING;
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

void proc_ack_stdin(struct proc *p, size_t n)
{
	if (n == 0)
		return;
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_STDIN_ACK, p->owner_req);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	proto_put_u64(&m, F_COUNT, n);
	init_queue(p->owner, &m);
}

void proc_flush_stdin(struct proc *p)
{
	size_t done = 0;
	while (p->in >= 0 && p->inlen > 0) {
		ssize_t w = write(p->in, p->inbuf, p->inlen);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w < 0) {
			/* the command closed its stdin: drop what is pending */
			done += p->inlen;
			p->inlen = 0;
			close_fd(&p->in);
			break;
		}
		memmove(p->inbuf, p->inbuf + w, p->inlen - (size_t)w);
		p->inlen -= (size_t)w;
		done += (size_t)w;
	}
	if (p->in >= 0 && p->inlen == 0 && p->close_in)
		close_fd(&p->in);
	proc_ack_stdin(p, done);
}

static void replay(int ci, uint32_t id, const struct proc *p, const struct ring *r, uint16_t type)
{
	if (r->dropped) {
		/* the marker: this many bytes came before what is kept */
		struct proto_msg m;
		proto_msg_init(&m, type, id);
		proto_put_u64(&m, F_PID, (uint64_t)p->pid);
		proto_put_u64(&m, F_DROPPED, r->dropped);
		proto_put_bytes(&m, F_DATA, "", 0);
		init_queue(ci, &m);
	}
	for (size_t off = 0; off < r->len;) {
		size_t at = (r->start + off) % r->cap;
		size_t k = r->cap - at < r->len - off ? r->cap - at : r->len - off;
		if (k > CHUNK)
			k = CHUNK;
		struct proto_msg m;
		proto_msg_init(&m, type, id);
		proto_put_u64(&m, F_PID, (uint64_t)p->pid);
		proto_put_bytes(&m, F_DATA, r->buf + at, k);
		init_queue(ci, &m);
		off += k;
	}
}

/* Attaches a client to a running process (or one in the history): start,
 * what its streams kept, then live events (or the end right away). */
void procs_attach(int ci, const struct proto_frame *f)
{
	struct proc *p = proc_of_frame(ci, f, NULL, NULL, NULL);
	if (!p) {
		init_send_error(ci, f->id, ESRCH, "attach: no such process");
		return;
	}
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_START, f->id);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	init_queue(ci, &m);
	replay(ci, f->id, p, &p->rout, p->pty ? MSG_EV_PTY : MSG_EV_STDOUT);
	replay(ci, f->id, p, &p->rerr, MSG_EV_STDERR);
	if (p->state == P_EXITED) {
		proto_msg_init(&m, MSG_EV_END, f->id);
		put_end(&m, p);
		init_queue(ci, &m);
		return;
	}
	p->att_req[ci] = f->id;
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

bool proc_output_blocked(const struct proc *p)
{
	for (unsigned ci = 0; ci < nclients; ci++)
		if (p->att_req[ci] && proto_outq_len(&clients[ci].out) > OUT_HIGH_WATER)
			return true;
	return false;
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
		if (p->owner == (int)ci)
			p->owner = -1;
		else if (p->owner == (int)last)
			p->owner = (int)ci;
		p->att_req[ci] = p->att_req[last];
		p->att_req[last] = 0;
	}
}
