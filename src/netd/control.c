/* netd/control.c — what the library asks of abox-netd, one JSON object a
 * message on a SOCK_SEQPACKET socket (abstract name: see net/netd.h):
 *   {"op":"attach","id":…,"slot":N} with the sandbox's network namespace
 *       as an fd: the veth, addresses, route and elements (without
 *       CAP_NET_ADMIN: the relay's listener in that namespace);
 *   {"op":"take","id":…,"policy":{…}[,"prefer":N]}, before the clone
 *       (the policy as a file's fd instead when it is too big for one
 *       message): a slot of the pool taken and recorded for the sandbox
 *       (net/slots.h; prefer: the one a cold resume held), answered with
 *       it ("slot", "gateway": the sandbox's resolver address,
 *       "relayPort") and a spare namespace (spares.h) as an fd
 *       ("spare":true; none ready: false, and the creator makes its
 *       own), finished for the sandbox right after the answer is sent,
 *       while the creator goes on; the attach that follows on the same
 *       connection answers how that went. Also says how netd gives
 *       egress ("datapath", as status). Taking the slot here spares the
 *       creator the network config and the slot file on its critical
 *       path. ({"op":"take","id":…,"slot":N}, from a library that made
 *       the slot itself, is served too);
 *   {"op":"remove","id":…,"slot":N[,"release":true]}: its elements and
 *       flows gone, then (release) its slot freed;
 *   {"op":"policy","id":…,"slot":N}: the slot file holds a new policy:
 *       the elements replaced in one batch, learned addresses forgotten,
 *       proxied connections to names no longer allowed cut;
 *   {"op":"stats","id":…,"slot":N}: its counters;
 *   {"op":"status"}: what netd serves and how ("datapath": "veth" or
 *       "relay"; for `abox doctor` and the creator);
 *   {"op":"totals"}: the counters summed, refusals by why (Prometheus);
 *   {"op":"stop"}: leave now (tests, and gc when nothing is served).
 * Answers: {"ok":true,…} or {"ok":false,"errno":N,"error":"…"}.
 * Only root (or netd's own user) may ask: the peer's credentials are
 * checked on every connection, since an abstract socket has no file
 * mode to do it.
 * Runs in abox-netd's control threads (one per connection). */
#include <arpa/inet.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "attach.h"
#include "base/clock.h"
#include "base/fdpass.h"
#include "base/json.h"
#include "net/slots.h"
#include "netd.h"
#include "nft.h"
#include "nl.h"
#include "relay.h"
#include "spares.h"
#include "take.h"
#include "splice.h"
#include "workers.h"

#define MSG_MAX 65536

/* What a connection carries from one request to the next: a spare
 * handed out by take, finished after its answer, for the attach. */
struct conn {
	struct spare sp;
	bool pending; /* taken: to be finished once the answer is sent */
	bool finished; /* finished: result and e are the attach's answer */
	int result;
	abox_error e;
	char id[ABOX_ID_LEN + 1];
	uint32_t slot;
	int send_fd; /* sent along with the answer (-1: none) */
	struct take tk; /* a take's slot, recorded once the answer is sent */
	bool creating; /* a create under way on this connection (spares.h) */
};

static json_object *answer_err(const abox_error *e)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(false));
	json_object_object_add(o, "errno", json_object_new_int(e->code ? e->code : EIO));
	json_object_object_add(o, "error", json_object_new_string(e->msg));
	return o;
}

static json_object *answer_ok(void)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(true));
	return o;
}

/* The sandbox a request names, as its slot file says; the id must be the
 * slot's holder. Lock held. */
static struct sbx *named(json_object *req, abox_error *err)
{
	const char *id = js_str(req, "id");
	json_object *sv = js_get(req, "slot", json_type_int);
	int64_t slot = sv ? json_object_get_int64(sv) : -1;
	if (!id || !id_ok(id) || slot < 0 || slot >= net_config_slots(&netd.cfg)) {
		abox_error_setx(err, EINVAL, "a request needs an id and a slot of the pool");
		return NULL;
	}
	struct sbx *s = sbx_get((uint32_t)slot);
	if (!s || strcmp(s->id, id)) {
		abox_error_setx(err, ESTALE, "slot %lld is not sandbox %s's", (long long)slot, id);
		return NULL;
	}
	return s;
}

/* The table was missing and is made anew: every other attached
 * sandbox's elements are restored from its slot file. */
static void restore_others(uint32_t slot)
{
	netd_log("the table was missing: made anew, restoring the sandboxes' elements");
	pthread_mutex_lock(&netd.lock);
	for (size_t i = 0; i < netd.nsbx; i++) {
		struct sbx *o = netd.sbx[i];
		if (o->slot != slot && o->attached)
			(void)attach_repolicy(&netd.cfg, o->id, o->slot, NULL, &o->policy, false, NULL, 0,
					      NULL);
	}
	pthread_mutex_unlock(&netd.lock);
}

/* The elements of sandbox id in slot, after its links were made without
 * the lock: it must still hold the slot (a creator that gave up has
 * released it meanwhile). On failure its veth is deleted. */
static int elements_for(const char *id, uint32_t slot, abox_error *err)
{
	bool made = false;
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = sbx_get(slot);
	int r;
	if (!s || strcmp(s->id, id)) {
		r = abox_error_setx(err, ESTALE, "slot %u is not sandbox %s's", slot, id);
	} else {
		r = attach_elements(&netd.cfg, netd.uplink, id, slot, &s->policy, &made, err);
		if (r >= 0) {
			sbx_applied(s);
			/* its interface's own name: whatever an earlier
			 * incarnation learned went with its elements' removal
			 * (nft_sandbox_del, nft_sandbox_purge) */
			sbx_learned_none(s);
		}
	}
	pthread_mutex_unlock(&netd.lock);
	if (r < 0)
		attach_unlink(id);
	if (made)
		restore_others(slot);
	return r;
}

static json_object *do_attach(json_object *req, int fd, struct conn *cn)
{
	abox_error e = ABOX_ERROR_INIT;
	if (cn->finished) {
		/* taken on this connection and finished already */
		const char *id = js_str(req, "id");
		json_object *sv = js_get(req, "slot", json_type_int);
		cn->finished = false;
		if (id && !strcmp(id, cn->id) && sv && json_object_get_int64(sv) == (int64_t)cn->slot)
			return cn->result < 0 ? answer_err(&cn->e) : answer_ok();
	}
	if (fd < 0) {
		abox_error_setx(&e, EINVAL, "attach needs the sandbox's network namespace");
		return answer_err(&e);
	}
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = named(req, &e);
	int r = s ? 0 : -1;
	char id[ABOX_ID_LEN + 1] = "";
	uint32_t slot = 0;
	if (s) {
		memcpy(id, s->id, sizeof(id));
		slot = s->slot;
	}
	if (s && netd.relay)
		r = relay_attach(s, fd, &e);
	pthread_mutex_unlock(&netd.lock);
	if (s && !netd.relay) {
		r = attach_sandbox(&netd.cfg, id, slot, fd, &e);
		if (r >= 0)
			r = elements_for(id, slot, &e);
	}
	return r < 0 ? answer_err(&e) : answer_ok();
}

/* A take of a library older than slots taken by netd: the slot is made
 * already, and named by the request. */
static bool take_named(json_object *req, struct conn *cn, abox_error *err)
{
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = named(req, err);
	if (s) {
		memcpy(cn->id, s->id, sizeof(cn->id));
		cn->slot = s->slot;
	}
	pthread_mutex_unlock(&netd.lock);
	return s != NULL;
}

/* A sandbox's slot and, when one is ready, a spare for it: answered with
 * the slot, the resolver's address and the spare's namespace, finished
 * by finish_taken once the answer is on its way. */
static json_object *do_take(json_object *req, int fd, struct conn *cn)
{
	abox_error e = ABOX_ERROR_INIT;
	bool named_slot =
		js_get(req, "slot", json_type_int) && !js_get(req, "policy", json_type_object) && fd < 0;
	if (cn->creating) {
		abox_error_setx(&e, EBUSY, "take: this connection took already");
		return answer_err(&e);
	}
	if (named_slot && !take_named(req, cn, &e))
		return answer_err(&e);
	if (!named_slot) {
		if (take_slot(req, fd, &cn->tk, &e) < 0)
			return answer_err(&e);
		memcpy(cn->id, cn->tk.id, sizeof(cn->id));
		cn->slot = cn->tk.slot;
	}
	spares_create_begin();
	cn->creating = true;
	bool got = !netd.relay && spares_take(&cn->sp);
	json_object *o = answer_ok();
	json_object_object_add(o, "datapath", json_object_new_string(netd.relay ? "relay" : "veth"));
	json_object_object_add(o, "spare", json_object_new_boolean(got));
	json_object_object_add(o, "slot", json_object_new_int64(cn->slot));
	uint32_t gw = net_slot_gateway(&netd.cfg, cn->slot);
	char a[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &gw, a, sizeof(a));
	json_object_object_add(o, "gateway", json_object_new_string(a));
	json_object_object_add(o, "relayPort", json_object_new_int(netd.cfg.relay_port));
	if (got) {
		cn->pending = true;
		cn->send_fd = cn->sp.netns_fd;
	}
	return o;
}

static void finish_taken(struct conn *cn)
{
	cn->pending = false;
	cn->e = (abox_error)ABOX_ERROR_INIT;
	cn->result = attach_spare(&netd.cfg, cn->id, cn->slot, &cn->sp, &cn->e);
	if (cn->result >= 0)
		cn->result = elements_for(cn->id, cn->slot, &cn->e);
	/* the creator holds the namespace now: netd's hold ends here */
	spare_free(&cn->sp);
	cn->finished = true;
}

/* A take's slot recorded, its answer sent (answered false: the creator
 * is gone, and nothing is recorded or made). A failure is what the
 * attach that follows answers, and the spare is not finished. */
static void take_recorded(struct conn *cn, bool answered)
{
	abox_error e = ABOX_ERROR_INIT;
	int r = take_record(&cn->tk, answered, &e);
	if (r >= 0 && answered)
		return;
	if (cn->pending) {
		spare_free(&cn->sp);
		cn->pending = false;
	}
	cn->finished = answered;
	cn->result = r < 0 ? r : -ECONNRESET;
	cn->e = e;
}

static json_object *do_remove(json_object *req)
{
	abox_error e = ABOX_ERROR_INIT;
	const char *id = js_str(req, "id");
	json_object *sv = js_get(req, "slot", json_type_int);
	int64_t slot = sv ? json_object_get_int64(sv) : -1;
	if (!id || !id_ok(id) || slot < 0 || slot >= net_config_slots(&netd.cfg)) {
		abox_error_setx(&e, EINVAL, "remove needs an id and a slot of the pool");
		return answer_err(&e);
	}
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = sbx_known((uint32_t)slot);
	int r;
	/* what was applied, removed exactly; not known here (a netd
	 * restarted since): whatever the table holds for the sandbox */
	bool known = s && !strcmp(s->id, id) && s->applied.mode != NET_MODE_NONE;
	if (netd.relay) {
		relay_remove((uint32_t)slot);
		r = 0;
	} else {
		r = attach_remove(&netd.cfg, id, (uint32_t)slot, known ? &s->applied : NULL, &e);
	}
	if (r >= 0 && s && !strcmp(s->id, id)) {
		s->attached = false;
		sbx_drop((uint32_t)slot);
	}
	/* the slot freed once nothing of the sandbox is left in the table
	 * (a slot freed first could be given to a new sandbox while the
	 * old one's elements still name its address); when the removal
	 * failed it stays, and gc asks again */
	json_object *rel = js_get(req, "release", json_type_boolean);
	if (r >= 0 && rel && json_object_get_boolean(rel))
		net_slot_release(netd.state_dir, (uint32_t)slot, id);
	pthread_mutex_unlock(&netd.lock);
	return r < 0 ? answer_err(&e) : answer_ok();
}

static json_object *do_policy(json_object *req)
{
	abox_error e = ABOX_ERROR_INIT;
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = named(req, &e);
	int r = -1;
	uint32_t slot = 0;
	if (s) {
		slot = s->slot;
		bool known = s->applied.mode != NET_MODE_NONE;
		/* the relay reads the policy at each request: nothing to apply */
		r = netd.relay ? 0
			       : attach_repolicy(&netd.cfg, s->id, s->slot, known ? &s->applied : NULL,
						 &s->policy, s->learned_known, s->learned_all,
						 s->nlearned_all, &e);
		if (r >= 0) {
			sbx_applied(s);
			/* every learned address went with the change */
			sbx_learned_none(s);
		}
	}
	pthread_mutex_unlock(&netd.lock);
	if (r >= 0 && netd.relay)
		relay_recheck(slot);
	else if (r >= 0)
		proxy_recheck(slot);
	return r < 0 ? answer_err(&e) : answer_ok();
}

static void put_u64(json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static json_object *do_stats(json_object *req)
{
	abox_error e = ABOX_ERROR_INIT;
	pthread_mutex_lock(&netd.lock);
	struct sbx *s = named(req, &e);
	struct netd_counters c = s ? s->c : (struct netd_counters){ 0 };
	char ifname[IFNAMSIZ] = "";
	if (s)
		memcpy(ifname, s->ifname, sizeof(ifname));
	pthread_mutex_unlock(&netd.lock);
	if (!s)
		return answer_err(&e);
	struct nl nl;
	struct nl_link_stats ls = { 0 };
	if (netd.relay) {
		/* no interface: what went through the relay is all there is */
		ls.rx_bytes = c.proxy_bytes_out;
		ls.tx_bytes = c.proxy_bytes_in;
	} else if (nl_open(&nl, &e) >= 0) {
		(void)nl_link_stats(&nl, ifname, &ls, NULL);
		nl_close(&nl);
	}
	json_object *o = answer_ok();
	/* the host end's receive counters are what the sandbox sent */
	put_u64(o, "txBytes", ls.rx_bytes);
	put_u64(o, "rxBytes", ls.tx_bytes);
	put_u64(o, "txPackets", ls.rx_packets);
	put_u64(o, "rxPackets", ls.tx_packets);
	put_u64(o, "dnsQueries", c.dns_queries);
	put_u64(o, "dnsRefused", c.dns_refused);
	put_u64(o, "dnsRebindDropped", c.dns_rebind);
	put_u64(o, "proxyConnections", c.proxy_conns);
	put_u64(o, "proxyRefused", c.proxy_refused);
	put_u64(o, "proxyBytesOut", c.proxy_bytes_out);
	put_u64(o, "proxyBytesIn", c.proxy_bytes_in);
	if (netd.relay) {
		char a[32];
		snprintf(a, sizeof(a), "127.0.0.1:%u", netd.cfg.relay_port);
		json_object_object_add(o, "proxy", json_object_new_string(a));
	}
	return o;
}

/* Everything summed, for aboxd's Prometheus page: traffic through the
 * veths of the sandboxes there are now (the host end: what it receives
 * the sandbox sent), the resolver's and the proxy's counts since netd
 * started (never going down), the table's refusals by why. */
static json_object *do_totals(void)
{
	pthread_mutex_lock(&netd.lock);
	unsigned served = (unsigned)netd.nsbx;
	struct netd_counters t = netd.total;
	pthread_mutex_unlock(&netd.lock);
	struct nl nl;
	struct nl_link_stats ls = { 0 };
	unsigned links = 0;
	if (nl_open(&nl, NULL) >= 0) {
		(void)nl_links_stats_sum(&nl, NET_IF_PREFIX, &ls, &links, NULL);
		nl_close(&nl);
	}
	uint64_t refused[4] = { 0 };
	struct nft n;
	if (nft_open(&n, netd.cfg.table, NULL) >= 0) {
		(void)nft_refusal_counts(&n, refused, NULL);
		nft_close(&n);
	}
	json_object *o = answer_ok();
	json_object_object_add(o, "sandboxes", json_object_new_int((int)served));
	json_object_object_add(o, "interfaces", json_object_new_int((int)links));
	put_u64(o, "txBytes", ls.rx_bytes);
	put_u64(o, "rxBytes", ls.tx_bytes);
	put_u64(o, "dnsQueries", t.dns_queries);
	put_u64(o, "dnsRefused", t.dns_refused);
	put_u64(o, "dnsRebindDropped", t.dns_rebind);
	put_u64(o, "proxyConnections", t.proxy_conns);
	put_u64(o, "proxyRefused", t.proxy_refused);
	json_object *r = json_object_new_object();
	for (size_t i = 0; i < ELEMENTSOF(nft_refusals); i++)
		put_u64(r, nft_refusals[i] + strlen("refused_"), refused[i]);
	json_object_object_add(o, "refusedPackets", r);
	return o;
}

static json_object *do_status(void)
{
	json_object *o = answer_ok();
	json_object_object_add(o, "pid", json_object_new_int((int)getpid()));
	json_object_object_add(o, "datapath", json_object_new_string(netd.relay ? "relay" : "veth"));
	json_object_object_add(o, "relayPort", json_object_new_int(netd.cfg.relay_port));
	json_object_object_add(o, "uplink", json_object_new_string(netd.uplink));
	json_object_object_add(o, "table", json_object_new_string(netd.cfg.table));
	json_object_object_add(o, "dnsPort", json_object_new_int(netd.cfg.dns_port));
	json_object_object_add(o, "proxyPort", json_object_new_int(netd.cfg.proxy_port));
	json_object_object_add(o, "resolvers", json_object_new_int((int)netd.cfg.nresolvers));
	pthread_mutex_lock(&netd.lock);
	json_object_object_add(o, "sandboxes", json_object_new_int((int)netd.nsbx));
	pthread_mutex_unlock(&netd.lock);
	json_object_object_add(o, "spares", json_object_new_int((int)spares_ready()));
	return o;
}

static bool peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return false;
	return cr.uid == 0 || cr.uid == geteuid();
}

/* One request: its answer (NULL: leave the connection). */
static json_object *handle(const char *buf, size_t n, int fd, struct conn *cn, bool *stop)
{
	json_tokener *tok = json_tokener_new_ex(8);
	json_object *req = tok ? json_tokener_parse_ex(tok, buf, (int)n) : NULL;
	bool whole = tok && json_tokener_get_error(tok) == json_tokener_success;
	json_tokener_free(tok);
	abox_error e = ABOX_ERROR_INIT;
	json_object *ans;
	const char *op = whole ? js_str(req, "op") : NULL;
	if (!op)
		ans = (abox_error_setx(&e, EINVAL, "not a request"), answer_err(&e));
	else if (!strcmp(op, "attach"))
		ans = do_attach(req, fd, cn);
	else if (!strcmp(op, "take"))
		ans = do_take(req, fd, cn);
	else if (!strcmp(op, "remove"))
		ans = do_remove(req);
	else if (!strcmp(op, "policy"))
		ans = do_policy(req);
	else if (!strcmp(op, "stats"))
		ans = do_stats(req);
	else if (!strcmp(op, "status"))
		ans = do_status();
	else if (!strcmp(op, "totals"))
		ans = do_totals();
	else if (!strcmp(op, "stop"))
		ans = answer_ok(), *stop = true;
	else
		ans = (abox_error_setx(&e, EINVAL, "unknown request '%s'", op), answer_err(&e));
	json_object_put(req);
	return ans;
}

static void serve(int c)
{
	char *buf = malloc(MSG_MAX);
	bool stop = false;
	struct conn cn = { .sp = { .netns_fd = -1 }, .send_fd = -1 };
	while (buf && !stop) {
		struct pollfd p = { .fd = c, .events = POLLIN };
		/* a client is the library: it asks at once or is gone */
		if (poll(&p, 1, 10000) <= 0)
			break;
		int fd = -1;
		size_t nfds = 0;
		ssize_t n = fd_recv(c, buf, MSG_MAX - 1, &fd, 1, &nfds, 0);
		if (n <= 0) {
			if (nfds && fd >= 0)
				close(fd);
			break;
		}
		if (!nfds)
			fd = -1;
		pthread_mutex_lock(&netd.lock);
		bool leaving = netd.leaving;
		pthread_mutex_unlock(&netd.lock);
		if (leaving) {
			if (fd >= 0)
				close(fd);
			break;
		}
		json_object *ans = handle(buf, (size_t)n, fd, &cn, &stop);
		if (fd >= 0)
			close(fd);
		pthread_mutex_lock(&netd.lock);
		netd.last_busy_ms = clock_mono_ms();
		netd.leaving |= stop; /* before the answer: see netd.leaving */
		pthread_mutex_unlock(&netd.lock);
		const char *s = json_object_to_json_string_ext(ans, JSON_C_TO_STRING_PLAIN);
		ssize_t sent =
			fd_send(c, s, strlen(s), cn.send_fd >= 0 ? &cn.send_fd : NULL, cn.send_fd >= 0, 0);
		cn.send_fd = -1;
		json_object_put(ans);
		if (cn.tk.record)
			take_recorded(&cn, sent >= 0);
		if (cn.pending)
			finish_taken(&cn);
	}
	take_done(&cn.tk);
	if (cn.pending)
		spare_free(&cn.sp);
	if (cn.creating)
		spares_create_end();
	free(buf);
	if (stop) {
		netd_log("asked to stop");
		net_slot_premade_clear(netd.state_dir);
		exit(0);
	}
}

static void *serve_main(void *arg)
{
	int c = (int)(intptr_t)arg;
	pthread_mutex_lock(&netd.lock);
	netd.nconns++;
	pthread_mutex_unlock(&netd.lock);
	if (peer_allowed(c))
		serve(c);
	close(c);
	pthread_mutex_lock(&netd.lock);
	netd.nconns--;
	pthread_mutex_unlock(&netd.lock);
	return NULL;
}

/* A thread per connection: a creator keeps its connection open from
 * before its clone until the attach is answered, and creators made at
 * the same time must not wait for each other. */
static void *control_main(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			netd_log("control: accept: %s", strerror(errno));
			sleep(1);
			continue;
		}
		if (netd_thread(serve_main, (void *)(intptr_t)c) != 0) {
			netd_log("control: no thread for a client");
			close(c);
		}
	}
	return NULL;
}

int control_start(int listen_fd, abox_error *err)
{
	pthread_t t;
	int r = pthread_create(&t, NULL, control_main, (void *)(intptr_t)listen_fd);
	if (r)
		return abox_error_set(err, r, "start the control thread");
	pthread_detach(t);
	return 0;
}
