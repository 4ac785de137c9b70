/* net — the sandbox's network namespace.
 * For now only loopback: a fresh network namespace has `lo` down and
 * nothing else, which is the default (no egress). */
#ifndef ABOX_NET_H
#define ABOX_NET_H

#include "base/base.h"

/* Brings `lo` of the caller's network namespace up (async-signal-safe). */
int net_loopback_up(abox_error *err);

/* A new network namespace, as an fd for setns (close-on-exec); the calling
 * thread stays in its own namespace. inside (if not NULL) runs while the
 * thread is in the new one, for what must be made there (bringing `lo`
 * up, a sysfs). -errno on failure. */
int net_namespace_new(int (*inside)(void *ud, abox_error *err), void *ud, abox_error *err);

#endif
