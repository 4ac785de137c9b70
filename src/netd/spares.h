/* netd/spares — network namespaces made ahead of the sandboxes that will
 * use them: each with `lo` up and a veth pair whose eth0 is inside (up,
 * IPv6 off) and whose host end waits, down and without an address, under
 * a name of NET_SPARE_PREFIX. Making a namespace and a veth is most of
 * what egress costs a create (the kernel registers two devices and moves
 * one); with a spare handed out before the clone, a create only names
 * the host end, adds addresses, a route and its elements
 * (attach_spare), while its child builds the root.
 *
 * A spare is held by netd's fds only, so a netd that leaves or dies
 * takes its spares with it (the kernel removes a namespace nobody holds,
 * and its veth with it): nothing is left to clean up. One thread keeps
 * the pool full at a low priority, between the creates it serves.
 * Runs in abox-netd. */
#ifndef ABOX_NETD_SPARES_H
#define ABOX_NETD_SPARES_H

#include <net/if.h>

#include "base/base.h"
#include "nl.h"

struct spare {
	int netns_fd;
	struct nl in; /* a route socket of the spare's namespace */
	int host_index, eth0_index;
	char host_if[IFNAMSIZ]; /* NET_SPARE_PREFIX + 12 hex digits */
};

/* Starts the thread that keeps want spares ready (0: none, and nothing
 * started). */
int spares_start(unsigned want, abox_error *err);
/* A spare, when one is ready: true and *out is the caller's (spare_free
 * it); false: make the namespace the slow way. */
bool spares_take(struct spare *out);
/* A create under way (from its take to the end of its connection) and
 * its end: the pool is refilled between creates, unless it runs low. */
void spares_create_begin(void);
void spares_create_end(void);
/* How many are ready now. */
unsigned spares_ready(void);
/* Closes what netd holds of a spare: once the sandbox's processes are
 * gone too, the kernel removes its namespace and veth. */
void spare_free(struct spare *sp);

#endif
