/* netd/nft — abox's one nftables table (family inet) with libnftnl: the
 * rules are made once, and every sandbox is only elements of its sets,
 * so the rule count never grows with the number of sandboxes and each
 * change is one netlink batch (≈ 10 µs) — never an exec of nft(8).
 *
 * What the table does, for traffic from a sandbox's veth (iifname in
 * @ifaces; a veth of abox's names that is not in it — its elements
 * missing — has every packet dropped: the table fails closed):
 *   prerouting (-150): IPv6 dropped (sandboxes have none); a source that
 *     is not the veth's own address dropped (@sbx: no spoofing another
 *     sandbox's policy or DNS answers); the flow's conntrack mark set to
 *     the sandbox's address, so kill can flush its flows in one message.
 *   prerouting nat: every port-53 packet, to any address, redirected to
 *     abox's resolver; in sandboxes with domain rules (@proxied), TCP
 *     80/443 to addresses no CIDR allows redirected to abox's proxy.
 *   input: only the redirected resolver and proxy flows reach the host;
 *     anything else to any host address is refused. The resolver and
 *     proxy ports are closed to everyone but sandboxes.
 *   forward: out through the uplink only (no sandbox to sandbox or to
 *     another host network), never to the always-denied ranges, never to
 *     TCP 25 unless allowed; then @allow4 accepts, @learned4 (addresses
 *     of allowed names, taught by the resolver) accepts and stays fresh
 *     while used, @deny4 refuses, @denyall refuses the rest. Every packet
 *     is judged, not only a flow's first: a policy change cuts flows to
 *     what it now denies. Refusals are a TCP reset or an ICMP
 *     "administratively prohibited", never a silent drop.
 *   postrouting nat: masquerade out of the uplink.
 * Replies come back through conntrack; nothing else reaches a sandbox.
 *
 * Runs in abox-netd. */
#ifndef ABOX_NETD_NFT_H
#define ABOX_NETD_NFT_H

#include <stdint.h>

#include "base/base.h"
#include "net/policy.h"

struct mnl_socket;

struct nft {
	struct mnl_socket *sock;
	uint32_t portid, seq;
	char table[32];
	/* the batch being built */
	char *buf;
	size_t cap;
	struct mnl_nlmsg_batch *b;
};

struct nft_table_cfg {
	const char *uplink;
	uint32_t pool; /* network order */
	unsigned pool_prefix;
	uint16_t dns_port, proxy_port;
	bool allow_smtp;
};

/* A sandbox as the table knows it. */
struct nft_sandbox {
	const char *ifname; /* the host end of its veth */
	uint32_t addr; /* its address, network order */
	const struct net_policy *policy;
};

int nft_open(struct nft *n, const char *table, abox_error *err);
void nft_close(struct nft *n);

/* Makes the table when it is missing (or made by another abox version:
 * then it is made anew and the caller restores the sandboxes' elements).
 * 1 when made, 0 when it was there. */
int nft_table_ensure(struct nft *n, const struct nft_table_cfg *c, abox_error *err);
/* 1 when the table exists in this version, 0 when not. */
int nft_table_present(struct nft *n, abox_error *err);
int nft_table_remove(struct nft *n, abox_error *err);

/* A sandbox's elements, added / removed / replaced in one batch each (a
 * replace is atomic: no packet sees half of either policy; with old
 * NULL what the table holds for the sandbox is purged first, not
 * atomically). Removal of elements already gone is not an error. */
int nft_sandbox_add(struct nft *n, const struct nft_sandbox *s, abox_error *err);
int nft_sandbox_del(struct nft *n, const struct nft_sandbox *s, abox_error *err);
int nft_sandbox_replace(struct nft *n, const struct nft_sandbox *old, const struct nft_sandbox *cur,
			abox_error *err);
/* Every element of the sandbox on ifname, found by reading the sets
 * back (when what was added is not known: a restart, a crash). */
int nft_sandbox_purge(struct nft *n, const char *ifname, abox_error *err);
/* Addresses of an allowed name for the sandbox on ifname, for timeout_ms
 * (refreshed while traffic uses them). */
int nft_learned_add(struct nft *n, const char *ifname, const uint32_t *addrs, size_t naddrs,
		    uint64_t timeout_ms, abox_error *err);
/* A replace that also forgets the learned addresses given (every one the
 * sandbox's learned set may hold), all in one batch: one transaction for
 * a policy change instead of a replace, a read of the whole learned set
 * and a delete. Addresses no longer there are fine (NFT_MSG_DESTROYSETELEM,
 * kernels from 6.3). Any error leaves the table as it was (the batch is
 * one transaction): the caller then takes the long way. -errno. */
int nft_sandbox_replace_forget(struct nft *n, const struct nft_sandbox *old, const struct nft_sandbox *cur,
			       const uint32_t *learned, size_t nlearned);
/* Every learned address of ifname, gone (a policy change re-learns). */
int nft_learned_flush(struct nft *n, const char *ifname, abox_error *err);
/* The interfaces the table holds elements for (a NULL-terminated strv). */
int nft_ifaces(struct nft *n, char ***out, abox_error *err);

/* Packets refused by the table, by why (nft_refusals: a sandbox's
 * traffic to the host or another sandbox, to the always-denied ranges,
 * to TCP 25, by its own policy), since the table was made. */
extern const char *const nft_refusals[4];
int nft_refusal_counts(struct nft *n, uint64_t packets[4], abox_error *err);
/* Flushes the conntrack entries whose mark is mark (nft_sandbox's flows
 * carry the sandbox's address as their mark: see above). */
int nft_ct_flush(uint32_t addr, abox_error *err);

#endif
