/* output.c — where a process's output goes: each stdout/stderr chunk is
 * kept in a bounded ring (for clients that attach later), written to its
 * tee file when the host asked for the complete output, and sent to every
 * attached client; attach replays the rings first. Runs only inside the
 * sandbox, as its PID 1. */
#include <string.h>
#include <sys/ioctl.h>

#include "base/base.h"
#include "init.h"
#include "proto/messages.h"
#include "proto/proto.h"
#include "tables.h"

static size_t ring_total; /* all rings' bytes, against RING_BUDGET */

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

void proc_ring_free(struct ring *r)
{
	ring_total -= r->cap;
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* Sends one event to every client attached to p (each under its own
 * request id). */
void proc_broadcast(struct proc *p, struct proto_msg *m)
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
		proc_close_fd(tee); /* the layer is full: keep what fitted */
	bool any = false;
	for (unsigned ci = 0; ci < nclients && !any; ci++)
		any = p->att_req[ci] != 0;
	if (!any)
		return;
	struct proto_msg m;
	proto_msg_init(&m, type, 0);
	proto_put_u64(&m, F_PID, (uint64_t)p->pid);
	proto_put_bytes(&m, F_DATA, buf, n);
	proc_broadcast(p, &m);
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
			proc_close_fd(fd);
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

/* An end event's fields: how the command ended (procs.c sends it as it
 * ends, an attach replays it). */
void proc_put_end(struct proto_msg *m, const struct proc *p)
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
		proc_put_end(&m, p);
		init_queue(ci, &m);
		return;
	}
	p->att_req[ci] = f->id;
}

bool proc_output_blocked(const struct proc *p)
{
	for (unsigned ci = 0; ci < nclients; ci++)
		if (p->att_req[ci] && proto_outq_len(&clients[ci].out) > OUT_HIGH_WATER)
			return true;
	return false;
}

/* An ended command's last output, and no more (see pending). */
void proc_drain_pending(struct proc *p)
{
	proc_drain(p, &p->out, p->pty ? MSG_EV_PTY : MSG_EV_STDOUT, pending(p->out));
	proc_drain(p, &p->err, MSG_EV_STDERR, pending(p->err));
}
