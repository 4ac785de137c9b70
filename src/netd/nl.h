/* netd/nl — the rtnetlink requests a networked sandbox needs (a veth pair
 * with one end in the sandbox's namespace, addresses, routes, link state
 * and counters), made with libmnl on a socket of the namespace they act
 * in. Never by running ip(8): an exec costs ≈ 20 ms a sandbox against
 * ≈ 0.5 ms for the requests themselves.
 *
 * Runs in abox-netd. A socket acts in the network namespace of the
 * thread that opened it, whatever namespace the thread is in later. */
#ifndef ABOX_NETD_NL_H
#define ABOX_NETD_NL_H

#include <net/if.h>
#include <stdint.h>

#include "base/base.h"

struct mnl_socket;

struct nl {
	struct mnl_socket *sock;
	uint32_t seq, portid;
};

/* Opens a route netlink socket in the calling thread's network namespace.
 * nl_close accepts a never-opened (zeroed) one. */
int nl_open(struct nl *nl, abox_error *err);
void nl_close(struct nl *nl);

/* A veth pair: host_if here (down, no address) and peer_if in the
 * namespace of peer_netns_fd. -EEXIST when host_if exists. */
int nl_veth_new(struct nl *nl, const char *host_if, const char *peer_if, int peer_netns_fd, abox_error *err);
/* The index of a link of this namespace, or -ENODEV. */
int nl_link_index(struct nl *nl, const char *name, abox_error *err);
/* Sets a link up; with forwarding, also its IPv4 forwarding switch (so
 * the host forwards what the sandbox sends without turning forwarding
 * on for every interface). */
int nl_link_up(struct nl *nl, int ifindex, bool forwarding, abox_error *err);
/* The same, renamed to name on the way (one request: the kernel renames
 * a link only while it is down, and does so before bringing it up). */
int nl_link_up_as(struct nl *nl, int ifindex, const char *name, bool forwarding, abox_error *err);
/* No IPv6 address is ever made for the link (IN6_ADDR_GEN_MODE_NONE: no
 * link-local, no autoconfiguration); set before it goes up. */
int nl_link_no_ipv6(struct nl *nl, int ifindex, abox_error *err);
/* Deletes a link (its veth peer goes with it). A missing link is 0. */
int nl_link_del(struct nl *nl, const char *name, abox_error *err);
/* addr/prefix (network byte order) on ifindex; the peer address for a
 * point-to-point link is not used. */
int nl_addr_add(struct nl *nl, int ifindex, uint32_t addr, unsigned prefix, abox_error *err);
/* The default route through gw (network byte order) on ifindex. */
int nl_route_default(struct nl *nl, int ifindex, uint32_t gw, abox_error *err);

struct nl_link_stats {
	uint64_t rx_bytes, tx_bytes, rx_packets, tx_packets;
};
/* The counters of a link, seen from this namespace's side. */
int nl_link_stats(struct nl *nl, const char *name, struct nl_link_stats *out, abox_error *err);
/* The counters of every link named prefix*, added up, and how many. */
int nl_links_stats_sum(struct nl *nl, const char *prefix, struct nl_link_stats *sum, unsigned *count,
		       abox_error *err);
/* The interface of this namespace's IPv4 default route (name of
 * IFNAMSIZ): what "uplink: auto" means. -ENETUNREACH without one. */
int nl_default_uplink(struct nl *nl, char *name, abox_error *err);
/* Names of the links of this namespace whose names start with prefix, as
 * a NULL-terminated strv (for reconciling with the sandboxes on record). */
int nl_links_with_prefix(struct nl *nl, const char *prefix, char ***out, abox_error *err);

#endif
