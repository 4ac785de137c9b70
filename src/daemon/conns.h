/* conns — per-client caps, the head deadline and room for clients with
 * a key, over libmicrohttpd's connections (see conns.c). */
#ifndef ABOX_DAEMON_CONNS_H
#define ABOX_DAEMON_CONNS_H

#include <stdint.h>

#include "daemon.h"

struct conn_limits {
	unsigned max;        /* connections in all (libmicrohttpd's limit is a little above) */
	unsigned per_client; /* without an accepted credential, per source address; 0: no cap */
	int64_t head_ms;     /* a request's head must be in this long after it began */
	int64_t idle_ms;     /* between requests, once a credential was accepted */
};

/* A table for one listener (malloc'd, lives as long as the daemon);
 * pass it as the closure of MHD_OPTION_NOTIFY_CONNECTION with
 * conns_notify. The first table starts the thread that enforces the
 * deadlines. */
struct conns *conns_new(const struct conn_limits *lim);
void conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		  enum MHD_ConnectionNotificationCode code);
/* The request hooks: its request line arrived (libmicrohttpd's URI log
 * callback), its head is in (the first access call), it is over.
 * conns_request_head returns the limit's name when the request is to be
 * refused (a connection on probation past a cap, and no key), else NULL. */
void conns_request_line(struct MHD_Connection *conn);
const char *conns_request_head(struct request *rq);
void conns_request_done(struct request *rq, struct MHD_Connection *conn);

#endif
