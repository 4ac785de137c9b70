/* netd/attach.c — a sandbox's veth, addresses and table elements (see
 * attach.h). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "attach.h"
#include "base/procsys.h"
#include "net/slots.h"
#include "nft.h"
#include "nl.h"
#include "spares.h"

/* One netlink socket for the table's elements, kept from change to
 * change (every user holds netd's lock): opening, binding and closing one
 * per change, with its 512 KiB batch buffer, was a third of a policy
 * change's time. Dropped after any failure, so that an answer left
 * unread by a failed exchange never meets the next change. */
static struct nft kept;

static int elements_open(const struct net_config *cfg, struct nft **n, abox_error *err)
{
	if (kept.sock && strcmp(kept.table, cfg->table))
		nft_close(&kept);
	int r = kept.sock ? 0 : nft_open(&kept, cfg->table, err);
	*n = &kept;
	return r;
}

static int elements_done(int r)
{
	if (r < 0)
		nft_close(&kept);
	return r;
}

int attach_uplink(const struct net_config *cfg, char name[IFNAMSIZ], abox_error *err)
{
	if (cfg->uplink[0]) {
		snprintf(name, IFNAMSIZ, "%s", cfg->uplink);
		return 0;
	}
	struct nl nl;
	int r = nl_open(&nl, err);
	if (r >= 0)
		r = nl_default_uplink(&nl, name, err);
	nl_close(&nl);
	return r;
}

int attach_table(const struct net_config *cfg, const char *uplink, abox_error *err)
{
	struct nl nl;
	int r = nl_open(&nl, err);
	if (r < 0)
		return r;
	int idx = nl_link_index(&nl, uplink, err);
	/* replies to sandboxes come in through the uplink: it forwards
	 * (it and the sandboxes' veths only, not every interface) */
	r = idx < 0 ? idx : nl_link_up(&nl, idx, true, err);
	nl_close(&nl);
	if (r < 0)
		return abox_error_prefix(err, "uplink '%s'", uplink);
	struct nft n;
	if ((r = nft_open(&n, cfg->table, err)) < 0)
		return r;
	struct nft_table_cfg tc = {
		.uplink = uplink,
		.pool = cfg->pool,
		.pool_prefix = cfg->pool_prefix,
		.dns_port = cfg->dns_port,
		.proxy_port = cfg->proxy_port,
		.allow_smtp = cfg->allow_smtp,
	};
	r = nft_table_ensure(&n, &tc, err);
	nft_close(&n);
	return r;
}

int attach_host_no_ipv6(const char *ifname, abox_error *err)
{
	char rel[64];
	snprintf(rel, sizeof(rel), "sys/net/ipv6/conf/%s/disable_ipv6", ifname);
	long r = procsys_write_once(rel, "1");
	if (r < 0 && r != -ENOENT)
		return abox_error_set(err, (int)-r, "net: turn IPv6 off on '%s'", ifname);
	return 0;
}

/* A route socket of the namespace of netns_fd: this thread goes there
 * for the socket() call and comes straight back. */
static int nl_open_in(struct nl *nl, int netns_fd, abox_error *err)
{
	_cleanup_close_ int own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (own < 0)
		return abox_error_set(err, errno, "open own network namespace");
	if (setns(netns_fd, CLONE_NEWNET) < 0)
		return abox_error_set(err, errno, "enter the sandbox's network namespace");
	int r = nl_open(nl, err);
	/* a thread left in a sandbox's namespace would open every later
	 * socket there (DNS forwarding, the proxy's connections) */
	if (setns(own, CLONE_NEWNET) < 0)
		abort();
	return r;
}

/* The addresses, route and link state of a veth whose ends exist: the
 * host end (hidx; renamed to host_if on its way up when rename) gets the
 * gateway and forwards, eth0 (sidx, in the sandbox's namespace, up
 * already when eth0_up) the sandbox's address and the default route. */
static int configure(struct nl *host, struct nl *in, int hidx, const char *host_if, bool rename, int sidx,
		     bool eth0_up, uint32_t addr, uint32_t gw, abox_error *err)
{
	int r;
	if ((r = nl_addr_add(host, hidx, gw, 30, err)) < 0 ||
	    (r = nl_link_up_as(host, hidx, rename ? host_if : NULL, true, err)) < 0)
		return r;
	/* IPv6 off before eth0 is up (no link-local address is ever made):
	 * sandboxes have no IPv6 route out, and the table drops what they
	 * would send anyway */
	if (!eth0_up && ((r = nl_link_no_ipv6(in, sidx, err)) < 0))
		return r;
	if ((r = nl_addr_add(in, sidx, addr, 30, err)) < 0 ||
	    (!eth0_up && (r = nl_link_up(in, sidx, false, err)) < 0))
		return r;
	return nl_route_default(in, sidx, gw, err);
}

int attach_elements(const struct net_config *cfg, const char *uplink, const char *id, uint32_t slot,
		    const struct net_policy *policy, bool *table_made, abox_error *err)
{
	char host_if[IFNAMSIZ];
	net_host_ifname(id, host_if);
	*table_made = false;
	struct nft *n;
	int r = elements_open(cfg, &n, err);
	if (r < 0)
		return r;
	struct nft_sandbox s = { .ifname = host_if, .addr = net_slot_address(cfg, slot), .policy = policy };
	abox_error e = ABOX_ERROR_INIT;
	r = nft_sandbox_add(n, &s, &e);
	if (r == -ENOENT) {
		/* no table (the first sandbox, or one removed by hand) */
		int m = attach_table(cfg, uplink, err);
		*table_made = m > 0;
		r = m < 0 ? m : nft_sandbox_add(n, &s, err);
	} else if (r < 0 && err) {
		*err = e;
	}
	return elements_done(r);
}

int attach_sandbox(const struct net_config *cfg, const char *id, uint32_t slot, int netns_fd, abox_error *err)
{
	char host_if[IFNAMSIZ];
	net_host_ifname(id, host_if);
	uint32_t addr = net_slot_address(cfg, slot), gw = net_slot_gateway(cfg, slot);
	struct nl host = { 0 }, in = { 0 };
	int r = nl_open(&host, err);
	if (r < 0)
		return r;
	int hidx = -1, sidx;
	if ((r = nl_open_in(&in, netns_fd, err)) < 0 ||
	    (r = nl_veth_new(&host, host_if, "eth0", netns_fd, err)) < 0)
		goto out;
	if ((hidx = r = nl_link_index(&host, host_if, err)) < 0 ||
	    (sidx = r = nl_link_index(&in, "eth0", err)) < 0 || (r = attach_host_no_ipv6(host_if, err)) < 0)
		goto out;
	r = configure(&host, &in, hidx, host_if, false, sidx, false, addr, gw, err);
out:
	if (r < 0 && hidx > 0)
		(void)nl_link_del(&host, host_if, NULL);
	nl_close(&in);
	nl_close(&host);
	return r;
}

int attach_spare(const struct net_config *cfg, const char *id, uint32_t slot, struct spare *sp,
		 abox_error *err)
{
	char host_if[IFNAMSIZ];
	net_host_ifname(id, host_if);
	uint32_t addr = net_slot_address(cfg, slot), gw = net_slot_gateway(cfg, slot);
	struct nl host = { 0 };
	int r = nl_open(&host, err);
	if (r < 0)
		return r;
	r = configure(&host, &sp->in, sp->host_index, host_if, true, sp->eth0_index, true, addr, gw, err);
	if (r < 0) {
		/* by either name: the rename may or may not have happened */
		(void)nl_link_del(&host, host_if, NULL);
		(void)nl_link_del(&host, sp->host_if, NULL);
	}
	nl_close(&host);
	return r;
}

void attach_unlink(const char *id)
{
	char host_if[IFNAMSIZ];
	net_host_ifname(id, host_if);
	struct nl host;
	if (nl_open(&host, NULL) < 0)
		return;
	(void)nl_link_del(&host, host_if, NULL);
	nl_close(&host);
}

int attach_remove(const struct net_config *cfg, const char *id, uint32_t slot,
		  const struct net_policy *policy, abox_error *err)
{
	struct nft *n;
	int r = elements_open(cfg, &n, err);
	if (r < 0)
		return r;
	char ifname[IFNAMSIZ];
	net_host_ifname(id, ifname);
	struct nft_sandbox s = { .ifname = ifname, .addr = net_slot_address(cfg, slot), .policy = policy };
	r = elements_done(policy ? nft_sandbox_del(n, &s, err) : nft_sandbox_purge(n, ifname, err));
	int c = nft_ct_flush(s.addr, r < 0 ? NULL : err);
	return r < 0 ? r : c;
}

int attach_repolicy(const struct net_config *cfg, const char *id, uint32_t slot, const struct net_policy *old,
		    const struct net_policy *cur, bool learned_known, const uint32_t *learned,
		    size_t nlearned, abox_error *err)
{
	struct nft *n;
	int r = elements_open(cfg, &n, err);
	if (r < 0)
		return r;
	char ifname[IFNAMSIZ];
	net_host_ifname(id, ifname);
	uint32_t addr = net_slot_address(cfg, slot);
	struct nft_sandbox o = { .ifname = ifname, .addr = addr, .policy = old };
	struct nft_sandbox c = { .ifname = ifname, .addr = addr, .policy = cur };
	/* the short way when netd knows what it learned; any refusal
	 * (an element already gone, a kernel before 6.3) changed nothing */
	if (old && learned_known && nft_sandbox_replace_forget(n, &o, &c, learned, nlearned) >= 0)
		return 0;
	r = nft_sandbox_replace(n, old ? &o : NULL, &c, err);
	if (r >= 0)
		r = nft_learned_flush(n, ifname, err);
	return elements_done(r);
}
