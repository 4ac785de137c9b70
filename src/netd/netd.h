/* netd — abox-netd, the host side of sandboxes' egress for one state
 * folder: it makes and removes sandboxes' veths and nftables elements
 * when the library asks (control.c), answers their DNS as policy
 * (resolver.c) and decides their proxied connections by name (proxy.c).
 * The library starts it when the first sandbox with networking is made
 * and it leaves when none has been left for a while; the nftables table
 * outlives it, so while it is down nothing opens (DNS and proxied
 * connections are refused) and what runs keeps its policy.
 *
 * This header holds what the parts share: the config and the table of
 * sandboxes it serves, filled from the slot files (net/slots.h) and
 * re-read when one changes, so a policy written by the library is the
 * one the resolver and the proxy apply.
 * Without CAP_NET_ADMIN it makes neither veths nor the table: each
 * sandbox gets a relay on its own loopback instead (relay.h).
 * Runs in abox-netd (its threads: control, resolver, proxy, relay). */
#ifndef ABOX_NETD_H
#define ABOX_NETD_H

#include <net/if.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/base.h"
#include "net/config.h"
#include "net/policy.h"

struct netd_counters {
	uint64_t dns_queries, dns_refused, dns_rebind;
	uint64_t proxy_conns, proxy_refused, proxy_bytes_out, proxy_bytes_in;
};

struct sbx {
	uint32_t slot;
	char id[ABOX_ID_LEN + 1];
	char ifname[IFNAMSIZ];
	struct net_policy policy; /* the slot file's */
	struct net_policy applied; /* what the table holds for it (mode NONE: nothing known) */
	bool attached; /* its elements are in the table */
	/* the slot file as last read */
	int64_t mtime_ns;
	uint64_t ino, size;
	uint64_t generation; /* bumped when the policy changes */
	struct netd_counters c;
	/* addresses the resolver gave it for allowed names, until when (a
	 * ring: the proxy lets server-first protocols through to these) */
	uint32_t learned[64];
	int64_t learned_until_ms[64];
	unsigned learned_next;
	/* every address put in the kernel's learned set for it since its
	 * elements were made or last replaced, when this netd saw them all
	 * (learned_known): a policy change then forgets exactly these in its
	 * own batch, without reading the whole set back */
	uint32_t *learned_all;
	size_t nlearned_all, learned_all_cap;
	bool learned_known;
};

struct netd {
	const char *state_dir;
	struct net_config cfg;
	char uplink[IFNAMSIZ];
	pthread_mutex_t lock; /* over the sandbox table and the counters */
	struct sbx **sbx; /* sorted by slot */
	size_t nsbx, cap;
	int64_t last_busy_ms; /* when a sandbox was last served or attached */
	struct netd_counters total; /* every sandbox's, also those gone: they only grow */
	unsigned active_proxied;
	/* clients connected now: netd does not leave idle while one is (a
	 * create's take and attach come on one connection) */
	unsigned nconns;
	/* on its way out (asked to stop, or idle): requests from here on are
	 * not answered, their connections closed, so a create asks a netd
	 * started anew and is never answered by one about to be gone */
	bool leaving;
	/* no CAP_NET_ADMIN: no veths and no table; every sandbox's egress
	 * goes through the relay on its loopback (relay.h) */
	bool relay;
};

extern struct netd netd;

/* The sandbox in slot as its slot file says now (re-read when it
 * changed), or NULL when the slot is free. With netd.lock held. */
struct sbx *sbx_get(uint32_t slot);
/* The same by a source address of the pool. */
struct sbx *sbx_by_addr(uint32_t addr);
/* Notes addresses learned for an allowed name, for ttl_ms; whether an
 * address is one of them now. Lock held. */
void sbx_learn(struct sbx *s, const uint32_t *addrs, size_t n, uint64_t ttl_ms);
bool sbx_learned(const struct sbx *s, uint32_t addr);
/* Its learned set is known to be empty (its elements were just made, or
 * a policy change forgot every learned address). Lock held. */
void sbx_learned_none(struct sbx *s);
/* The entry of slot as netd last knew it, whether or not its file is
 * still there (a remove comes after the library freed the slot). */
struct sbx *sbx_known(uint32_t slot);
/* Its policy is what the table now holds: kept (a copy) for an exact
 * removal later. Lock held. */
void sbx_applied(struct sbx *s);
/* Forgets a sandbox (after its elements were removed). Lock held. */
void sbx_drop(uint32_t slot);
/* Every slot file, read (the ones of sandboxes gone are the library's
 * to release). Lock held. */
int sbx_load_all(abox_error *err);

/* Logs a line to netd's log (stderr): "netd: <sandbox id>: ...". */
void netd_log(const char *fmt, ...) _printf_(1, 2);
/* Whether a line about a refusal may be logged now: a sandbox trying
 * thousands of names a second must not fill the disk (at most 20 lines
 * a second; the counters still count every one). */
bool netd_log_allowed(void);

/* The threads. */
int control_start(int listen_fd, abox_error *err);
int resolver_start(abox_error *err);
int proxy_start(abox_error *err);
/* Cuts the proxied connections of slot whose names its policy no
 * longer allows (after a policy change). */
void proxy_recheck(uint32_t slot);

#endif
