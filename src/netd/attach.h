/* netd/attach — a sandbox's egress plumbing: a veth pair between the
 * host and the sandbox's network namespace, the gateway (.1 of the
 * sandbox's /30) on the host end, the sandbox's address (.2) on its eth0
 * with a default route, and the sandbox's elements in abox's nftables
 * table; and taking the elements and flows away again.
 * Runs in abox-netd (its control thread). */
#ifndef ABOX_NETD_ATTACH_H
#define ABOX_NETD_ATTACH_H

#include "net/config.h"
#include "net/policy.h"

/* A sandbox's links: the veth into netns_fd with its addresses and route
 * (slot's). On failure the veth is gone. No lock needed: this is rtnetlink
 * work on links no other sandbox has, so netd's lock is not held for it
 * (the resolver, the proxy and other creates go on meanwhile). */
int attach_sandbox(const struct net_config *cfg, const char *id, uint32_t slot, int netns_fd,
		   abox_error *err);
/* The same on a spare namespace made ahead (spares.h): its veth exists,
 * so only the host end's name and both ends' addresses and the route are
 * left to do. On failure the veth is gone; the spare is the caller's to
 * free either way. */
struct spare;
int attach_spare(const struct net_config *cfg, const char *id, uint32_t slot, struct spare *sp,
		 abox_error *err);
/* Then its elements in the table (made first when missing: *table_made,
 * the other sandboxes' elements are to be restored). With netd's lock
 * held: two threads making the table at once would each replace it. */
int attach_elements(const struct net_config *cfg, const char *uplink, const char *id, uint32_t slot,
		    const struct net_policy *policy, bool *table_made, abox_error *err);
/* The host end of a sandbox's veth deleted (the pair goes with it). */
void attach_unlink(const char *id);
/* The sandbox's elements, learned addresses and conntrack entries gone
 * (missing pieces are fine); policy NULL: what was added is not known,
 * whatever the table holds for the sandbox goes. The veth goes with the
 * namespace. With netd's lock held, as attach_repolicy: the three share
 * one kept netlink socket for the table. */
int attach_remove(const struct net_config *cfg, const char *id, uint32_t slot,
		  const struct net_policy *policy, abox_error *err);
/* Its elements replaced by cur's (old's taken away in the same batch;
 * old NULL: whatever is there for the sandbox). Learned addresses are
 * forgotten: names still allowed are learned again at their next lookup.
 * learned_known: learned holds every address its learned set may hold
 * (then one transaction does it all); else the set is read back. */
int attach_repolicy(const struct net_config *cfg, const char *id, uint32_t slot, const struct net_policy *old,
		    const struct net_policy *cur, bool learned_known, const uint32_t *learned,
		    size_t nlearned, abox_error *err);
/* IPv6 off on a host end before it goes up: no link-local address, no
 * route. Every host end's fe80::/64, local and multicast routes sat in
 * the host's one IPv6 table, which the kernel walks whole at each link's
 * change (rt6_sync_down_dev, and at each sandbox's end): with 1,000
 * sandboxes every create and kill paid walks over 3,000 routes. Sandboxes
 * have no IPv6 way out, and no service of the host listens for them on a
 * link-local address now. A kernel without IPv6: nothing to do. */
int attach_host_no_ipv6(const char *ifname, abox_error *err);
/* The table made for cfg when missing, the uplink forwarding: 1 when made. */
int attach_table(const struct net_config *cfg, const char *uplink, abox_error *err);
/* The uplink cfg names, or the default route's. */
int attach_uplink(const struct net_config *cfg, char name[IFNAMSIZ], abox_error *err);

#endif
