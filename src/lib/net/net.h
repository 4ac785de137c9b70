/* net — the sandbox's network namespace: made with `lo` up and nothing
 * else (no egress; abox-netd adds a veth, or a relay on 127.0.0.1,
 * when the sandbox's policy gives it some). */
#ifndef ABOX_NET_H
#define ABOX_NET_H

#include "base/base.h"

/* Brings `lo` of the caller's network namespace up (async-signal-safe;
 * nothing to do when it is up already). */
int net_loopback_up(abox_error *err);

/* Whether this process holds CAP_NET_ADMIN: what veths and the table
 * need. Without it a sandbox's network namespace is owned by a user
 * namespace of its own and its egress is relayed (docs/networking.md). */
bool net_can_admin(void);

/* A new network namespace, as an fd for setns (close-on-exec); the calling
 * thread stays in its own namespace. inside (if not NULL) runs while the
 * thread is in the new one, for what must be made there (bringing `lo`
 * up, a sysfs). -errno on failure. */
int net_namespace_new(int (*inside)(void *ud, abox_error *err), void *ud, abox_error *err);

/* The same for a namespace made ahead (abox-netd's spares): inside runs
 * in the namespace of fd; a dup of fd (close-on-exec), or -errno. */
int net_namespace_enter(int fd, int (*inside)(void *ud, abox_error *err), void *ud, abox_error *err);

/* A TCP listener (non-blocking, close-on-exec) on 127.0.0.1:port of the
 * network namespace netns_fd; the calling thread enters it and comes
 * back. -errno (-EADDRINUSE: something in the sandbox holds the port). */
int net_listen_in(int netns_fd, uint16_t port, abox_error *err);

#endif
