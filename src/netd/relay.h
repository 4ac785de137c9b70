/* netd/relay — sandboxes' egress where abox-netd has no CAP_NET_ADMIN:
 * an HTTP proxy and SOCKS5 relay on each sandbox's own 127.0.0.1
 * (relay.c says what it decides and why).
 * Runs in abox-netd. */
#ifndef ABOX_NETD_RELAY_H
#define ABOX_NETD_RELAY_H

#include <stdint.h>

#include "base/base.h"

struct sbx;

/* The accept thread. */
int relay_start(abox_error *err);
/* The listener in the sandbox's network namespace (netns_fd), replacing
 * one it had; the sandbox marked attached. Lock held. */
int relay_attach(struct sbx *s, int netns_fd, abox_error *err);
/* The same for a sandbox on record after a restart: its namespace found
 * through its init (the pid and start time its record names). Lock held. */
int relay_reattach(struct sbx *s, abox_error *err);
/* Its listener closed and its connections cut. Lock held. */
void relay_remove(uint32_t slot);
/* Cuts the relayed connections of slot that its policy no longer allows
 * (after a policy change). Takes the lock. */
void relay_recheck(uint32_t slot);

#endif
