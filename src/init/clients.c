/* clients.c — abox-init's host connections: accepted on the agent socket,
 * each with its frame reader and its event queue. Queues are written once
 * per loop turn and never block init; a client that breaks the protocol
 * is cut off, and its slot's processes and watches move with the table.
 * Runs only inside the sandbox, as its PID 1. */
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

struct client clients[MAX_CLIENTS];
unsigned nclients;

/* Queues an event for a client. Queues are written once per loop turn
 * (events of one turn leave together: an exec failure's start and end
 * arrive as one read); a client whose socket is gone is dropped there. */
void init_queue(int ci, struct proto_msg *m)
{
	if (ci >= 0 && (unsigned)ci < nclients && !clients[ci].mute)
		(void)proto_queue(&clients[ci].out, m);
	proto_msg_free(m);
}

int init_flush_blocking(int ci)
{
	/* a big file read: keep what waits for the host bounded; a host that
	 * stops reading for half a minute is cut off */
	struct client *c = &clients[ci];
	while (proto_outq_len(&c->out) > (1u << 20)) {
		int r = proto_flush(c->fd, &c->out);
		if (r < 0) {
			c->doomed = true;
			return -1;
		}
		if (r == 0)
			break;
		struct pollfd p = { .fd = c->fd, .events = POLLOUT };
		if (poll(&p, 1, 30000) <= 0) {
			c->doomed = true;
			return -1;
		}
	}
	return 0;
}

void init_send_error(int ci, uint32_t id, int code, const char *msg)
{
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_ERROR, id);
	proto_put_u64(&m, F_ERRNO, (uint64_t)(code < 0 ? -code : code));
	proto_put_str(&m, F_MESSAGE, msg);
	init_queue(ci, &m);
}

static void (*drop_hook)(unsigned gone, unsigned last);

void clients_on_drop(void (*fn)(unsigned gone, unsigned last))
{
	drop_hook = fn;
}

void clients_drop(unsigned ci)
{
	close(clients[ci].fd);
	proto_reader_free(&clients[ci].rd);
	proto_outq_free(&clients[ci].out);
	unsigned last = nclients - 1;
	/* the last slot moves into the freed one: whoever keeps client
	 * numbers (processes, file transfers, watches) follows */
	if (drop_hook)
		drop_hook(ci, last);
	clients[ci] = clients[last];
	nclients--;
	if (ephemeral)
		init_shutdown(0);
}

void clients_accept(void)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	clients_add(fd);
}

void clients_add(int fd)
{
	if (nclients == MAX_CLIENTS) {
		close(fd);
		return;
	}
	struct client *c = &clients[nclients];
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	proto_reader_init(&c->rd, fd);
	nclients++;
	struct proto_msg m;
	proto_msg_init(&m, MSG_HELLO, 0);
	proto_put_u64(&m, F_VERSION, ABOX_PROTO_VERSION);
	proto_put_u64(&m, F_PID, (uint64_t)getpid());
	init_queue((int)nclients - 1, &m);
}

/* Returns false when the client was dropped. */
bool clients_read(unsigned ci, void (*handle)(int ci, const struct proto_frame *f))
{
	int k = proto_reader_fill(&clients[ci].rd);
	if (k == -EAGAIN)
		return true;
	if (k < 0 || clients[ci].rd.eof) {
		clients_drop(ci);
		return false;
	}
	struct proto_frame f;
	while ((k = proto_reader_next(&clients[ci].rd, &f)) > 0) {
		handle((int)ci, &f);
		if (clients[ci].doomed)
			k = -EPROTO;
		if (k < 0)
			break;
	}
	if (k < 0) { /* a peer that breaks the protocol is cut off */
		clients_drop(ci);
		return false;
	}
	return true;
}

bool clients_queues_empty(void)
{
	for (unsigned i = 0; i < nclients; i++)
		if (proto_outq_len(&clients[i].out) > 0)
			return false;
	return true;
}
