/* local/network.c — a sandbox's egress on this machine: its policy
 * checked, a slot of the address pool taken (recorded before anything is
 * made, so a crash leaves something gc finds), abox-netd asked to attach
 * the sandbox's namespace while the sandbox child builds its root, and
 * everything taken apart again at kill, gc and a failed create; policy
 * changes and the counters.
 * What the packets meet is netd's and the table's (src/netd/); the
 * library holds no netlink code, so the CLI stays a static musl program.
 * Runs in the CLI/daemon. */
#include <arpa/inet.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/json.h"
#include "local/local.h"
#include "net/client.h"
#include "net/config.h"
#include "net/net.h"
#include "net/policy.h"
#include "net/slots.h"
#include "store/state.h"
#include "versioned.h"

int local_net_policy(const abox_net_opts *in, struct net_policy *out, abox_error *err)
{
	abox_net_opts o = ABOX_NET_OPTS_INIT;
	if (in && versioned_copy_in(VERSIONED_NET_OPTS, &o, in) < 0)
		return abox_error_setx(err, EINVAL, "abox_net_opts: bad version %u", in->version);
	int r = net_policy_make((enum net_mode)o.mode, o.allow_out, o.deny_out, out, err);
	return r < 0 ? abox_error_prefix(err, "network") : 0;
}

static void resolv_conf(const char *gateway, char *buf, size_t n)
{
	/* every port-53 packet ends at abox's resolver whatever this says;
	 * naming the gateway keeps tools that read it honest */
	snprintf(buf, n, "nameserver %s\n", gateway);
}

/* Relayed egress: the sandbox's processes are told where the relay is
 * (before the sandbox's own entries, which win), and its resolv.conf
 * names its loopback, where nothing answers, so a lookup fails at once
 * instead of waiting: names are resolved by the relay. */
static int relay_env(struct local_net *ln, unsigned port, char ***env, abox_error *err)
{
	char http[64], socks[64];
	snprintf(http, sizeof(http), "http://127.0.0.1:%u", port);
	snprintf(socks, sizeof(socks), "socks5h://127.0.0.1:%u", port);
	static const char *const keys[] = { "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy",
					    "ALL_PROXY",  "all_proxy",  "NO_PROXY",    "no_proxy" };
	size_t n = strv_length(*env), k = ELEMENTSOF(keys);
	char **v = calloc(n + k + 1, sizeof(char *));
	if (!v)
		return abox_error_set(err, ENOMEM, "network");
	for (size_t i = 0; i < k; i++) {
		const char *val = i < 4 ? http : i < 6 ? socks : "localhost,127.0.0.1,::1";
		if (asprintf(&v[i], "%s=%s", keys[i], val) < 0) {
			v[i] = NULL;
			strv_free(v);
			return abox_error_set(err, ENOMEM, "network");
		}
	}
	for (size_t i = 0; i < n; i++)
		v[k + i] = (*env)[i];
	free(*env);
	*env = v;
	snprintf(ln->resolv, sizeof(ln->resolv), "nameserver 127.0.0.1\n");
	return 0;
}

int local_net_ask(abox_ctx *ctx, const char *id, const char *resumed, const struct net_policy *p,
		  struct local_net *ln, abox_error *err)
{
	memset(ln, 0, sizeof(*ln));
	ln->conn = -1;
	ln->netns_fd = -1;
	if (p->mode == NET_MODE_NONE)
		return 0;
	if (!(ln->policy_json = net_policy_json(p)))
		return abox_error_set(err, ENOMEM, "network");
	/* a cold resume keeps its address: the slot its record names */
	int64_t prefer = -1;
	struct sb_state st = { 0 };
	if (resumed && state_read(ctx->state_dir, resumed, &st, NULL) == 0 && st.net_policy)
		prefer = st.net_slot;
	sb_state_free(&st);
	memcpy(ln->id, id, sizeof(ln->id));
	ln->state_dir = ctx->state_dir;
	ln->netd_path = ctx->netd_path;
	ln->prefer = prefer;
	/* connected now, so a netd that must be started starts before the
	 * clone, not on the sandbox's critical path */
	if ((ln->conn = net_client_connect(ctx->state_dir, ctx->netd_path, err)) < 0)
		return abox_error_prefix(err, "network");
	/* a slot of the pool, taken and recorded by netd (a crash from then
	 * on leaves something gc finds), and a namespace it made ahead,
	 * with its veth: asked for now and answered by local_net_answer,
	 * so netd's part runs while the creator readies the rest */
	int r = net_client_take(ln->conn, id, ln->policy_json, prefer, err);
	/* reset: the netd connected to was leaving; the answer's wait
	 * (take_answer) asks a netd started anew */
	if (r < 0 && r != -ECONNRESET && r != -EPIPE)
		return abox_error_prefix(err, "network");
	ln->asked = true;
	return 0;
}

/* netd's answer to the take: the slot (recorded: have_slot from here
 * on) and the spare's namespace. */
static int take_answer(struct local_net *ln, json_object **o, abox_error *err)
{
	ln->asked = false;
	int r = net_client_wait_fd(ln->conn, o, &ln->netns_fd, err);
	for (int again = 0; (r == -ECONNRESET || r == -EPIPE) && again < 8; again++) {
		/* the connection closed unanswered: netd was leaving (a minute
		 * idle, or asked to stop) as this create connected, and never
		 * read the take. Again, to a netd started anew once the
		 * leaving one is gone: waits growing from 20 ms (a busy
		 * machine may take a while to let the old one go, and each
		 * try can meet it again) to 2.5 s in all */
		close(ln->conn);
		usleep(20000u << (again < 4 ? again : 4));
		ln->conn = net_client_connect(ln->state_dir, ln->netd_path, err);
		if (ln->conn < 0)
			return ln->conn;
		r = net_client_take(ln->conn, ln->id, ln->policy_json, ln->prefer, err);
		if (r >= 0)
			r = net_client_wait_fd(ln->conn, o, &ln->netns_fd, err);
	}
	if (r < 0)
		return r;
	json_object *sv = js_get(*o, "slot", json_type_int);
	if (!sv || json_object_get_int64(sv) < 0 || json_object_get_int64(sv) > UINT32_MAX)
		return abox_error_setx(
			err, EPROTO,
			"abox-netd is older than this abox (it does not take slots): it leaves a minute "
			"after its last sandbox, or stop it");
	ln->slot = (uint32_t)json_object_get_int64(sv);
	ln->have_slot = true;
	ln->took = ln->netns_fd >= 0;
	return 0;
}

int local_net_answer(struct local_net *ln, char ***env, abox_error *err)
{
	if (!ln->asked)
		return 0;
	/* the slot and the spare (none ready: the sandbox gets a new
	 * namespace), and how netd gives egress here (a veth, or without
	 * CAP_NET_ADMIN the relay): its answer, not our own capabilities,
	 * since another process may have started it */
	json_object *o = NULL;
	int r = take_answer(ln, &o, err);
	if (r < 0) {
		json_object_put(o);
		return abox_error_prefix(err, "network");
	}
	const char *dp = js_str(o, "datapath");
	const char *gw = js_str(o, "gateway");
	unsigned port = (unsigned)js_int(o, "relayPort", 0);
	ln->relay = dp && !strcmp(dp, "relay");
	if (ln->relay)
		r = relay_env(ln, port, env, err);
	else if (!gw || strlen(gw) >= sizeof(ln->resolv) - 16)
		r = abox_error_setx(err, EPROTO, "network: abox-netd named no resolver address");
	else
		resolv_conf(gw, ln->resolv, sizeof(ln->resolv));
	json_object_put(o);
	return r;
}

int local_net_begin(void *ud, int netns_fd, abox_error *err)
{
	struct local_net *ln = ud;
	int r = net_client_send(ln->conn, "attach", ln->id, ln->slot, netns_fd, err);
	ln->sent = r >= 0;
	return r;
}

int local_net_finish(struct local_net *ln, abox_error *err)
{
	if (ln->conn < 0 || !ln->sent)
		return 0;
	int r = net_client_wait(ln->conn, NULL, err);
	close(ln->conn);
	ln->conn = -1;
	/* the sandbox holds its namespace now */
	if (ln->netns_fd >= 0)
		close(ln->netns_fd);
	ln->netns_fd = -1;
	if (r < 0)
		return abox_error_prefix(err, "network");
	ln->attached = true;
	return 0;
}

/* A sandbox's elements and flows gone, then its slot: netd removes what
 * it applied (it keeps that), frees the slot and answers, and the caller
 * waits for that answer. Not waiting saved a kill one round trip but let
 * a kill or gc return with the removal still queued in netd, lost when
 * netd stopped or was killed then (the elements and slot stayed until
 * some later gc). What netd cannot remove it says, and the slot stays
 * for gc to ask again (a crash before the request is sent leaves it too). */
static int teardown(abox_ctx *ctx, const char *id, uint32_t slot, abox_error *err)
{
	int r = net_client_remove(ctx->state_dir, ctx->netd_path, id, slot, err);
	return r < 0 ? abox_error_prefix(err, "network") : 0;
}

void local_net_undo(abox_ctx *ctx, struct local_net *ln)
{
	if (ln->conn >= 0) {
		/* a take asked for and not answered yet (the create failed
		 * before it read the answer): the answer first. netd finishes
		 * a spare it handed out after it answered, whether or not the
		 * creator is still there, and a remove that overtook that
		 * finish would leave its elements in the table for good. */
		if (ln->asked) {
			json_object *o = NULL;
			(void)take_answer(ln, &o, NULL);
			json_object_put(o);
		}
		/* an attach sent and not waited for, or a spare netd is
		 * finishing: its answer first, so the remove below comes after
		 * what netd adds (netd answers an attach on this connection
		 * once the spare is finished) */
		if (!ln->sent && ln->took)
			ln->sent = net_client_send(ln->conn, "attach", ln->id, ln->slot, -1, NULL) >= 0;
		if (ln->sent)
			(void)net_client_wait(ln->conn, NULL, NULL);
		close(ln->conn);
		ln->conn = -1;
	}
	if (ln->netns_fd >= 0)
		close(ln->netns_fd);
	ln->netns_fd = -1;
	ln->took = false;
	if (ln->have_slot)
		(void)teardown(ctx, ln->id, ln->slot, NULL);
	ln->have_slot = false;
	free(ln->policy_json);
	ln->policy_json = NULL;
}

int local_net_teardown(abox_sandbox *sb, abox_error *err)
{
	if (!sb->net_policy)
		return 0;
	int r = teardown(sb->ctx, sb->id, sb->net_slot, err);
	if (r >= 0) {
		free(sb->net_policy);
		sb->net_policy = NULL;
	}
	return r;
}

int local_set_network(abox_sandbox *sb, const abox_net_opts *net, abox_error *err)
{
	struct net_policy p;
	int r = local_net_policy(net, &p, err);
	if (r < 0)
		return r;
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL) {
		net_policy_free(&p);
		return abox_error_setx(err, EOPNOTSUPP,
				       "network: only a long-lived sandbox's policy can change");
	}
	_cleanup_close_ int lock = backend_lock(sb->ctx, sb->id, err);
	if (lock < 0) {
		net_policy_free(&p);
		return lock;
	}
	struct sb_state st = { 0 };
	if ((r = state_read(sb->ctx->state_dir, sb->id, &st, err)) < 0) {
		net_policy_free(&p);
		return r;
	}
	_cleanup_free_ char *json = NULL;
	if (!st.net_policy)
		r = abox_error_setx(
			err, EOPNOTSUPP,
			"network: sandbox %s was made without networking; its mode cannot change now",
			sb->id);
	else if (p.mode == NET_MODE_NONE)
		r = abox_error_setx(err, EOPNOTSUPP,
				    "network: a sandbox keeps its interface; to let nothing out, use "
				    "filtered with deny-out 0.0.0.0/0");
	else if (!(json = net_policy_json(&p)))
		r = abox_error_set(err, ENOMEM, "network");
	net_policy_free(&p);
	/* the slot file first: netd's resolver and proxy read the policy
	 * from it, and the table follows at once */
	if (r >= 0 && (r = net_slot_update(sb->ctx->state_dir, st.net_slot, sb->id, json, err)) >= 0)
		r = net_client_call(sb->ctx->state_dir, sb->ctx->netd_path, "policy", sb->id, st.net_slot, -1,
				    NULL, err);
	if (r >= 0) {
		free(st.net_policy);
		st.net_policy = TAKE_PTR(json);
		r = state_write(sb->ctx->state_dir, &st, err);
		if (r >= 0) {
			free(sb->net_policy);
			sb->net_policy = strdup(st.net_policy);
		}
	}
	sb_state_free(&st);
	return r < 0 ? abox_error_prefix(err, "network") : 0;
}

static char **strv_dup(char **v)
{
	size_t n = strv_length(v);
	char **d = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; d && i < n; i++)
		if (!(d[i] = strdup(v[i]))) {
			strv_free(d);
			return NULL;
		}
	return d;
}

int local_network(abox_ctx *ctx, const char *id, abox_net_info *out, abox_error *err)
{
	if (!out || out->version < 1)
		return abox_error_setx(err, EINVAL, "network: abox_net_info needs its version set");
	struct sb_state st = { 0 };
	int r = state_read(ctx->state_dir, id, &st, err);
	if (r < 0)
		return r;
	abox_net_info i = { .version = ABOX_NET_INFO_VERSION };
	struct net_policy p = { 0 };
	if (st.net_policy && (r = net_policy_parse(st.net_policy, &p, err)) >= 0) {
		i.mode = p.mode;
		i.allow_out = p.allow_out ? strv_dup(p.allow_out) : NULL;
		i.deny_out = p.deny_out ? strv_dup(p.deny_out) : NULL;
		/* the counters from netd when it runs (never started for this) */
		json_object *o = NULL;
		bool asked =
			net_client_status(ctx->state_dir, NULL, NULL) >= 0 &&
			net_client_call(ctx->state_dir, NULL, "stats", id, st.net_slot, -1, &o, NULL) >= 0;
		const char *proxy = asked ? js_str(o, "proxy") : NULL;
		struct net_config cfg;
		/* relayed: netd says so, or (not running) this process would */
		bool relayed = proxy || (!asked && !net_can_admin());
		bool have_cfg = net_config_load(ctx->state_dir, &cfg, NULL) >= 0;
		if (have_cfg && relayed) {
			snprintf(i.proxy, sizeof(i.proxy), "127.0.0.1:%u", cfg.relay_port);
		} else if (have_cfg) {
			uint32_t a = net_slot_address(&cfg, st.net_slot),
				 g = net_slot_gateway(&cfg, st.net_slot);
			inet_ntop(AF_INET, &a, i.address, sizeof(i.address));
			inet_ntop(AF_INET, &g, i.gateway, sizeof(i.gateway));
		}
		if (asked) {
			i.tx_bytes = (uint64_t)json_object_get_uint64(js_get(o, "txBytes", json_type_int));
			i.rx_bytes = (uint64_t)json_object_get_uint64(js_get(o, "rxBytes", json_type_int));
			i.dns_queries =
				(uint64_t)json_object_get_uint64(js_get(o, "dnsQueries", json_type_int));
			i.dns_refused =
				(uint64_t)json_object_get_uint64(js_get(o, "dnsRefused", json_type_int));
			i.proxy_connections = (uint64_t)json_object_get_uint64(
				js_get(o, "proxyConnections", json_type_int));
			i.proxy_refused =
				(uint64_t)json_object_get_uint64(js_get(o, "proxyRefused", json_type_int));
			i.dns_rebind_dropped = (uint64_t)json_object_get_uint64(
				js_get(o, "dnsRebindDropped", json_type_int));
			i.proxy_bytes_out =
				(uint64_t)json_object_get_uint64(js_get(o, "proxyBytesOut", json_type_int));
			i.proxy_bytes_in =
				(uint64_t)json_object_get_uint64(js_get(o, "proxyBytesIn", json_type_int));
		}
		json_object_put(o);
	}
	net_policy_free(&p);
	sb_state_free(&st);
	if (r < 0)
		return r;
	versioned_copy_out(VERSIONED_NET_INFO, out, &i);
	return 0;
}

/* As old as a slot of nobody's must be before gc frees it (the host ids'
 * pool waits as long). */
#define SLOT_STALE_S 60

int local_net_gc(abox_ctx *ctx, bool (*alive)(abox_ctx *ctx, const char *id), unsigned *removed)
{
	uint32_t *slots = NULL;
	size_t n = 0;
	if (net_slots_list(ctx->state_dir, &slots, &n, NULL) < 0)
		return 0;
	/* sandboxes with networking and no netd (it was killed): started
	 * again, which reconciles the table; until then their DNS and named
	 * connections fail, and nothing else opens */
	if (n && ctx->netd_path) {
		int c = net_client_connect(ctx->state_dir, ctx->netd_path, NULL);
		if (c >= 0)
			close(c);
	}
	for (size_t i = 0; i < n; i++) {
		char id[ABOX_ID_LEN + 1];
		if (net_slot_read(ctx->state_dir, slots[i], id, NULL, NULL) < 0 || alive(ctx, id))
			continue;
		/* A create takes its slot at its start, before its runtime
		 * folder or record says it exists: only a slot a while old can
		 * be a dead creator's. (Torn down under a create in flight, its
		 * attach failed, or its elements went after it: a sandbox
		 * running without them.) */
		if (net_slot_age_s(ctx->state_dir, slots[i]) < SLOT_STALE_S)
			continue;
		abox_error e = ABOX_ERROR_INIT;
		if (teardown(ctx, id, slots[i], &e) < 0)
			backend_log(ctx, ABOX_LOG_WARNING, "gc: network of %s: %s", id, e.msg);
		else if (removed)
			(*removed)++;
	}
	free(slots);
	return 0;
}

void local_net_describe(abox_ctx *ctx, void (*tell)(void *ud, const char *name, bool ok, const char *detail),
			void *ud)
{
	if (!ctx->netd_path) {
		tell(ud, "egress", false,
		     "abox-netd not found: sandboxes can have loopback only (--net none)");
		return;
	}
	/* netd probes what it would use, for real (it holds the netlink
	 * code; the library holds none) */
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		int nul = open("/dev/null", O_WRONLY);
		if (nul >= 0)
			dup2(nul, 2);
		execl(ctx->netd_path, "abox-netd", "--check", "--state", ctx->state_dir, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char buf[8192];
	ssize_t n = pid > 0 ? read_full(p[0], buf, sizeof(buf) - 1) : -1;
	close(p[0]);
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	buf[n > 0 ? n : 0] = '\0';
	bool any = false;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char name[64];
		int off = 0;
		char word[4];
		if (sscanf(l, "%3s %63s %n", word, name, &off) < 2 || !off)
			continue;
		char what[80];
		snprintf(what, sizeof(what), "egress %s", name);
		tell(ud, what, !strcmp(word, "ok"), l + off);
		any = true;
	}
	if (!any)
		tell(ud, "egress", false,
		     "abox-netd --check said nothing: sandboxes' networking is not known to work here");
	json_object *st = NULL;
	if (net_client_status(ctx->state_dir, &st, NULL) >= 0) {
		char d[256];
		snprintf(d, sizeof(d), "running (pid %d), serving %d sandboxes", js_int(st, "pid", 0),
			 js_int(st, "sandboxes", 0));
		tell(ud, "abox-netd", true, d);
		json_object_put(st);
	} else {
		tell(ud, "abox-netd", true, "not running: the first sandbox with networking starts it");
	}
}

int local_net_no_checkpoint(const char *what, const abox_sandbox *sb, abox_error *err)
{
	return abox_error_setx(
		err, EOPNOTSUPP,
		"%s %s: memory checkpoints of sandboxes with networking are not supported yet (its "
		"interface and flows live on the host); a pause keeps its memory frozen in place",
		what, sb->id);
}

static uint64_t u64_of(json_object *o, const char *k)
{
	return (uint64_t)json_object_get_uint64(js_get(o, k, json_type_int));
}

int local_net_totals(abox_ctx *ctx, abox_net_totals *out, abox_error *err)
{
	abox_net_totals t = { .version = ABOX_NET_TOTALS_VERSION };
	json_object *o = NULL;
	/* only a running netd is asked: none means no sandbox has networking */
	int conn = -1;
	if (net_client_status(ctx->state_dir, NULL, NULL) >= 0 &&
	    (conn = net_client_connect(ctx->state_dir, NULL, err)) >= 0) {
		int r = net_client_send(conn, "totals", NULL, 0, -1, err);
		if (r >= 0)
			r = net_client_wait(conn, &o, err);
		close(conn);
		if (r < 0)
			return r;
		t.sandboxes = (uint32_t)js_int(o, "sandboxes", 0);
		t.tx_bytes = u64_of(o, "txBytes");
		t.rx_bytes = u64_of(o, "rxBytes");
		t.dns_queries = u64_of(o, "dnsQueries");
		t.dns_refused = u64_of(o, "dnsRefused");
		t.dns_rebind_dropped = u64_of(o, "dnsRebindDropped");
		t.proxy_connections = u64_of(o, "proxyConnections");
		t.proxy_refused = u64_of(o, "proxyRefused");
		json_object *rp = js_get(o, "refusedPackets", json_type_object);
		t.refused_host = u64_of(rp, "host");
		t.refused_private = u64_of(rp, "private");
		t.refused_smtp = u64_of(rp, "smtp");
		t.refused_policy = u64_of(rp, "policy");
		json_object_put(o);
	}
	versioned_copy_out(VERSIONED_NET_TOTALS, out, &t);
	return 0;
}
