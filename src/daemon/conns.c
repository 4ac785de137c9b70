/* conns.c — who may hold aboxd's connections, and for how long.
 *
 * The attack: about 1,000 idle TCP connections from one client with no
 * key filled libmicrohttpd's connection limit, and every other client
 * waited for the idle timeout (60 s) before it got in. So:
 *  - a head deadline: a connection must finish a request's head within
 *    headerTimeoutSeconds of being accepted (or of its request line, on
 *    a kept-alive connection), however slowly it trickles bytes — the
 *    idle timeout alone is reset by every byte (slowloris). Between two
 *    requests, a connection whose last request carried no accepted
 *    credential gets the head deadline too, one that did the idle timeout;
 *  - a per-client cap: one source address holds at most
 *    maxConnectionsPerClient connections that have not carried an
 *    accepted credential; past it, its oldest such connection that is
 *    between requests is cut (or the new one, when all are busy). A
 *    client with a key behind the same address still gets in: its new
 *    connection pushes out the oldest idle one;
 *  - room for clients with a key: connections without an accepted
 *    credential fill at most maxConnections minus a tenth; past that, and
 *    past maxConnections in all, the oldest connection between requests is
 *    cut (those without a credential first), so a new client is not left
 *    waiting behind idle ones; with none idle, a new connection past the
 *    nine tenths is on probation as above, past maxConnections it is cut.
 * "Accepted credential": a request on the connection carried a configured
 * X-API-Key, or was answered 2xx/3xx on a sandbox plane with an access
 * token. A connection is cut with shutdown(2): its libmicrohttpd thread
 * sees the end and closes it. The fd stays valid until libmicrohttpd's
 * CLOSED notification, which takes the lock before the entry goes.
 * Runs in the daemon: the notifications in libmicrohttpd's listening
 * thread, the request hooks in the connection's thread, the sweep in its
 * own thread. Bodies, routing and answers are http.c's. */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "auth.h"
#include "conns.h"
#include "stream.h"

struct conn {
	struct conn *prev, *next;
	struct conns *tab;
	int fd;
	struct sockaddr_storage addr;
	bool busy;          /* a request's head is in, its answer not done */
	bool trusted;       /* a request on it carried an accepted credential */
	bool cut;           /* shut down, waiting for libmicrohttpd to close it */
	bool token;         /* its request carries an access token or a signature (not yet checked) */
	bool fresh;         /* no request line yet since it was accepted */
	const char *probation; /* admitted past a cap (this one): its request must carry a key */
	int64_t since_ms;   /* when it last went idle (eviction order) */
	int64_t deadline_ms; /* idle: cut at this time (0: none) */
};

struct conns {
	pthread_mutex_t lock;
	struct conn *head;
	struct conn_limits lim;
	struct conns *next_table;
};

static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conns *tables;
static bool sweeper_started;

static bool same_source(const struct conn *a, const struct conn *b)
{
	if (a->addr.ss_family != b->addr.ss_family)
		return false;
	if (a->addr.ss_family == AF_INET)
		return ((const struct sockaddr_in *)&a->addr)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)&b->addr)->sin_addr.s_addr;
	if (a->addr.ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)&a->addr)->sin6_addr,
			       &((const struct sockaddr_in6 *)&b->addr)->sin6_addr, sizeof(struct in6_addr));
	return true; /* unix: one local source */
}

static void cut(struct conn *c)
{
	if (!c->cut) {
		c->cut = true;
		shutdown(c->fd, SHUT_RDWR);
	}
}

/* The oldest connection between requests that matches, other than the
 * new one nc (which has not had its chance yet), or NULL. */
static struct conn *oldest_idle(struct conns *t, const struct conn *nc, bool same, bool trusted)
{
	struct conn *best = NULL;
	for (struct conn *c = t->head; c; c = c->next)
		if (c != nc && !c->cut && !c->busy && c->trusted == trusted && (!same || same_source(c, nc)) &&
		    (!best || c->since_ms < best->since_ms))
			best = c;
	return best;
}

/* Makes room for the new connection nc (called with the lock held). */
static void admit(struct conns *t, struct conn *nc)
{
	unsigned live = 0, untrusted = 0, mine = 0;
	for (struct conn *c = t->head; c; c = c->next) {
		if (c->cut)
			continue;
		live++;
		if (!c->trusted) {
			untrusted++;
			/* a sandbox-plane request with a token in progress (a
			 * command's stream may run for hours) is not held against
			 * its client's cap: an SDK runs many at once. A forged
			 * token is a 401 once its head (or body) is in, and until
			 * then it still counts against the room kept for keys */
			if (same_source(c, nc) && !(c->busy && c->token))
				mine++;
		}
	}
	/* past a cap with no idle connection to push out (all busy), the new
	 * one is let in on probation rather than cut: it may be a client with
	 * a key, which is what the room kept is for; a request on it without
	 * one is refused (conns_request_head), and the next newcomer pushes
	 * it out while it is idle */
	struct conn *v;
	if (t->lim.per_client && mine > t->lim.per_client) {
		v = oldest_idle(t, nc, true, false);
		if (v) {
			cut(v);
			live--, untrusted--;
		} else {
			nc->probation = "maxConnectionsPerClient";
		}
	}
	unsigned room = t->lim.max - t->lim.max / 10;
	if (untrusted > room) {
		v = oldest_idle(t, nc, false, false);
		if (v) {
			cut(v);
			live--;
		} else {
			nc->probation = "nine tenths of maxConnections";
		}
	}
	if (live > t->lim.max) {
		v = oldest_idle(t, nc, false, false);
		if (!v)
			v = oldest_idle(t, nc, false, true);
		cut(v ? v : nc);
	}
}

void conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		  enum MHD_ConnectionNotificationCode code)
{
	struct conns *t = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ad = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		struct conn *c = calloc(1, sizeof(*c));
		if (!c || !fd) {
			/* untracked is unbounded: refuse it rather */
			free(c);
			if (fd)
				shutdown(fd->connect_fd, SHUT_RDWR);
			*socket_context = NULL;
			return;
		}
		c->fd = fd->connect_fd;
		c->addr.ss_family = AF_UNIX;
		if (ad && ad->client_addr) {
			socklen_t n = ad->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
			              : ad->client_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
			                                                     : sizeof(sa_family_t);
			memcpy(&c->addr, ad->client_addr, n);
		}
		c->tab = t;
		c->fresh = true;
		c->since_ms = clock_mono_ms();
		c->deadline_ms = c->since_ms + t->lim.head_ms;
		pthread_mutex_lock(&t->lock);
		c->next = t->head;
		if (t->head)
			t->head->prev = c;
		t->head = c;
		admit(t, c);
		pthread_mutex_unlock(&t->lock);
		*socket_context = c;
		return;
	}
	struct conn *c = *socket_context;
	if (!c)
		return;
	pthread_mutex_lock(&t->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		t->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&t->lock);
	free(c);
	*socket_context = NULL;
}

static struct conn *entry(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return i ? i->socket_context : NULL;
}

void conns_request_line(struct MHD_Connection *conn)
{
	struct conn *c = entry(conn);
	struct conns *t = c ? c->tab : NULL;
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	/* a fresh connection keeps the deadline it got when accepted; on a
	 * kept-alive one the head must be in this long after its first line */
	if (!c->fresh && !c->busy)
		c->deadline_ms = clock_mono_ms() + t->lim.head_ms;
	c->fresh = false;
	pthread_mutex_unlock(&t->lock);
}

const char *conns_request_head(struct request *rq)
{
	struct conn *c = entry(rq->conn);
	struct conns *t = c ? c->tab : NULL;
	if (!t)
		return NULL;
	const char *k = header(rq, "X-API-Key");
	bool ok = auth_key_known(k);
	bool token = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "X-Access-Token") ||
		     MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, "signature");
	pthread_mutex_lock(&t->lock);
	c->busy = true;
	c->token = token;
	c->fresh = false;
	c->deadline_ms = 0;
	c->trusted |= ok;
	const char *refused = c->trusted ? NULL : c->probation;
	c->probation = NULL;
	pthread_mutex_unlock(&t->lock);
	return refused;
}

void conns_request_done(struct request *rq, struct MHD_Connection *conn)
{
	struct conn *c = entry(conn);
	struct conns *t = c ? c->tab : NULL;
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	/* a sandbox plane answered with success to a request with a token:
	 * the token was good (a wrong one is a 401) */
	c->trusted |= c->token && rq && rq->conn && rq->sandbox[0] && rq->status >= 200 && rq->status < 400;
	c->token = false;
	c->busy = false;
	c->since_ms = clock_mono_ms();
	/* no idle timeout configured: libmicrohttpd keeps it as long */
	c->deadline_ms = !c->trusted ? c->since_ms + t->lim.head_ms : t->lim.idle_ms ? c->since_ms + t->lim.idle_ms : 0;
	pthread_mutex_unlock(&t->lock);
}

/* Cuts the connections whose head (or next request) is overdue. */
static void *sweeper(void *arg)
{
	(void)arg;
	for (;;) {
		usleep(250 * 1000);
		int64_t now = clock_mono_ms();
		pthread_mutex_lock(&tables_lock);
		for (struct conns *t = tables; t; t = t->next_table) {
			pthread_mutex_lock(&t->lock);
			for (struct conn *c = t->head; c; c = c->next)
				if (!c->cut && !c->busy && c->deadline_ms && now >= c->deadline_ms)
					cut(c);
			pthread_mutex_unlock(&t->lock);
		}
		pthread_mutex_unlock(&tables_lock);
	}
	return NULL;
}

struct conns *conns_new(const struct conn_limits *lim)
{
	struct conns *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	t->lim = *lim;
	if (!t->lim.max)
		t->lim.max = 1000;
	pthread_mutex_lock(&tables_lock);
	t->next_table = tables;
	tables = t;
	if (!sweeper_started) {
		pthread_t th;
		if (pthread_create(&th, NULL, sweeper, NULL) == 0) {
			pthread_detach(th);
			sweeper_started = true;
		}
	}
	pthread_mutex_unlock(&tables_lock);
	return t;
}
