/* net — network setup inside the sandbox's network namespace.
 * For now only loopback: a fresh network namespace has `lo` down and
 * nothing else, which is the default (no egress).
 * Runs in the sandbox child between clone and exec (async-signal-safe). */
#ifndef ABOX_NET_H
#define ABOX_NET_H

#include "base/base.h"

int net_loopback_up(abox_error *err);

#endif
