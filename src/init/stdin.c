/* stdin.c — a command's stdin from the host under a credit window: data
 * is buffered up to the window and written as the pipe takes it, each
 * written byte acknowledged (MSG_EV_STDIN_ACK) so the host sends more; a
 * host that ignores the window is cut off. Runs only inside the sandbox,
 * as its PID 1. */
#include <string.h>

#include "base/base.h"
#include "init.h"
#include "proto/messages.h"
#include "proto/proto.h"
#include "tables.h"

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
			proc_close_fd(&p->in);
			break;
		}
		memmove(p->inbuf, p->inbuf + w, p->inlen - (size_t)w);
		p->inlen -= (size_t)w;
		done += (size_t)w;
	}
	if (p->in >= 0 && p->inlen == 0 && p->close_in)
		proc_close_fd(&p->in);
	proc_ack_stdin(p, done);
}

void proc_req_stdin(int ci, const struct proto_frame *f)
{
	const uint8_t *data = NULL;
	size_t len = 0;
	struct proc *p = proc_of_frame(ci, f, NULL, &data, &len);
	if (!p)
		return; /* stdin of a gone process: like a closed pipe */
	if (p->in < 0 || p->close_in) {
		proc_ack_stdin(p, len); /* consumed: dropped */
		return;
	}
	if (p->inlen + len > STDIN_HARD_LIMIT) {
		clients[ci].doomed = true; /* ignores the window */
		return;
	}
	uint8_t *nb = realloc(p->inbuf, p->inlen + len);
	if (!nb)
		return;
	p->inbuf = nb;
	memcpy(p->inbuf + p->inlen, data, len);
	p->inlen += len;
	proc_flush_stdin(p);
}

void proc_req_stdin_close(int ci, const struct proto_frame *f)
{
	struct proc *p = proc_of_frame(ci, f, NULL, NULL, NULL);
	if (p) {
		p->close_in = true;
		proc_flush_stdin(p);
	}
}
