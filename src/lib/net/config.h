/* net/config — how this host gives sandboxes egress: the address pool,
 * the uplink, the resolvers abox forwards DNS to, the ports of abox's
 * resolver and proxy, the nftables table. One file per state folder
 * (<state>/network.json, or $ABOX_NETWORK_CONFIG), read by the library
 * and by abox-netd alike, so both see one world; every key optional.
 * Runs in the creator and in abox-netd. */
#ifndef ABOX_NET_CONFIG_H
#define ABOX_NET_CONFIG_H

#include <net/if.h>
#include <stdint.h>

#include "base/base.h"

#define NET_MAX_RESOLVERS 4
/* host ends of sandbox veths are named NET_IF_PREFIX + 12 characters of
 * the sandbox id (IFNAMSIZ allows 15) */
#define NET_IF_PREFIX "abx"
/* host ends of the veths of spare namespaces (not a sandbox's yet):
 * NET_SPARE_PREFIX + 12 random hex digits, renamed when handed out */
#define NET_SPARE_PREFIX "abp"
#define NET_SPARES_MAX 64

struct net_config {
	uint32_t pool; /* network byte order */
	unsigned pool_prefix; /* every sandbox takes a /30 of it */
	char uplink[IFNAMSIZ]; /* "" = the interface of the default route */
	char table[32]; /* the nftables table (family inet) */
	uint16_t dns_port; /* abox-netd's resolver, on every gateway address */
	uint16_t proxy_port; /* abox-netd's domain proxy */
	/* without CAP_NET_ADMIN: the HTTP/SOCKS5 relay on each sandbox's
	 * own 127.0.0.1 (relay.h) */
	uint16_t relay_port;
	uint32_t resolvers[NET_MAX_RESOLVERS]; /* upstream, network byte order */
	uint16_t resolver_ports[NET_MAX_RESOLVERS];
	unsigned nresolvers;
	bool allow_smtp; /* TCP 25 out (blocked by default: spam relays) */
	/* network namespaces abox-netd keeps made ahead, each with its veth
	 * and lo up, so a create only finishes one (netd/spares.h) */
	unsigned spares;
	char path[256]; /* the file it was read from ("" when none) */
};

/* Reads the state folder's network config over the defaults (pool
 * 10.231.0.0/16, uplink auto, table "abox", ports 15353/15380, relay port
 * 3128, 4 spares, resolvers from /etc/resolv.conf). A key with a bad value is an error naming it. */
int net_config_load(const char *state_dir, struct net_config *out, abox_error *err);

/* Slots of the pool (a /30 each) and their addresses (network order). */
uint32_t net_config_slots(const struct net_config *c);
uint32_t net_slot_gateway(const struct net_config *c, uint32_t slot);
uint32_t net_slot_address(const struct net_config *c, uint32_t slot);
/* The slot an address of the pool belongs to, or -1. */
int64_t net_slot_of(const struct net_config *c, uint32_t addr);

/* abox-netd's control socket for a state folder: an abstract unix name
 * (starting with a NUL, namespaced by the network namespace, gone with
 * netd) derived from the folder's path; *len is the sockaddr length. */
struct sockaddr_un;
void net_netd_address(const char *state_dir, struct sockaddr_un *sa, unsigned *len);

/* "a.b.c.d/n" or "a.b.c.d" (n = 32) into addr (network order) and prefix;
 * host bits must be zero when strict. -EINVAL otherwise. */
int net_parse_cidr4(const char *s, bool strict, uint32_t *addr, unsigned *prefix);

#endif
