/* libFuzzer: head_check (src/daemon/head.c), the checks aboxd makes on a
 * request's head, fed the way aboxd is: the input is the raw bytes a
 * client sends, read by a real libmicrohttpd daemon over a socket pair,
 * so the pointers head_check walks are libmicrohttpd's own buffers (the
 * layout checks read between header values there).
 * Must never crash, read out of bounds or hang; and a target with %00 that
 * reaches the handler must be refused (a NUL there would cut the path). */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct MHD_Daemon *d;
/* what the handler saw for the current input (one connection at a time) */
static volatile int saw_pct00, verdict = -1;

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls;
	(void)conn;
	struct request *rq = calloc(1, sizeof(*rq));
	if (rq) { /* as http.c's daemon_uri */
		rq->target = uri;
		rq->target_len = uri ? strlen(uri) : 0;
		rq->target_pct00 = uri && strstr(uri, "%00");
	}
	return rq;
}

static void on_done(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	free(*con_cls);
	*con_cls = NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)cls;
	(void)url;
	(void)upload;
	struct request *rq = *con_cls;
	if (!rq)
		return MHD_NO;
	if (!rq->conn) {
		rq->conn = conn;
		char why[160];
		unsigned bad = head_check(rq, method, version, why, sizeof(why));
		saw_pct00 = rq->target_pct00;
		verdict = (int)bad;
		if (bad) {
			struct MHD_Response *r = MHD_create_response_from_buffer(strlen(why), why, MHD_RESPMEM_MUST_COPY);
			enum MHD_Result q = MHD_queue_response(conn, bad, r);
			MHD_destroy_response(r);
			return q;
		}
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0; /* bodies are not this target's business */
		return MHD_YES;
	}
	struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
	enum MHD_Result q = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	return q;
}

static void start(void)
{
	signal(SIGPIPE, SIG_IGN);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC |
				     MHD_USE_NO_LISTEN_SOCKET,
			     0, NULL, NULL, on_request, NULL, MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
			     MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_CONNECTION_TIMEOUT, 2u,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024), MHD_OPTION_END);
	if (!d)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!d)
		start();
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(40000),
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	saw_pct00 = 0;
	verdict = -1;
	if (MHD_add_connection(d, sv[1], (struct sockaddr *)&peer, sizeof(peer)) != MHD_YES) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	/* send it all (the peer may close early: EPIPE ends the sending),
	 * then read until libmicrohttpd closes or the idle cut */
	size_t off = 0;
	while (off < size) {
		ssize_t w = send(sv[0], data + off, size - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	shutdown(sv[0], SHUT_WR);
	char buf[4096];
	for (;;) {
		struct pollfd p = { .fd = sv[0], .events = POLLIN };
		/* libmicrohttpd's own idle cut is 2 s: 15 s without a byte or
		 * the close is a hang. (5 s fired once in about 28,000 inputs
		 * of a run on a loaded machine, for an input that takes 7-45 ms
		 * on its own every time.) */
		if (poll(&p, 1, 15000) <= 0)
			abort();
		ssize_t r = read(sv[0], buf, sizeof(buf));
		if (r <= 0 && !(r < 0 && errno == EINTR))
			break;
	}
	close(sv[0]);
	/* the request line as sent: a raw NUL in its method or target, or a
	 * %00 in its target, that reached the handler must have been refused
	 * (the C strings would cut there) */
	/* a line ends at CR LF or at a bare LF (libmicrohttpd 0.9.75's
	 * get_next_header_line: a bare CR stays in the line), and lines
	 * before the request line that are empty as C strings are skipped,
	 * as libmicrohttpd skips empty lines there */
	size_t line;
	for (;;) {
		size_t lf = 0;
		while (lf < size && data[lf] != '\n')
			lf++;
		if (lf == size)
			return 0; /* no whole request line: the handler was not reached */
		line = lf > 0 && data[lf - 1] == '\r' ? lf - 1 : lf;
		if (line > 0 && data[0] != '\0')
			break;
		data += lf + 1;
		size -= lf + 1;
	}
	const uint8_t *sp = memchr(data, ' ', line);
	size_t head = sp ? (size_t)(sp - data) : line, last = head;
	for (size_t i = head + 1; i < line; i++)
		if (data[i] == ' ')
			last = i;
	if (last == head)
		last = line;
	bool cut = memchr(data, '\0', last) != NULL ||
		   (last > head + 1 && memmem(data + head + 1, last - head - 1, "%00", 3) != NULL);
	if (verdict == 0 && (saw_pct00 || cut))
		abort();
	return 0;
}
