/* net/policy — a sandbox's egress policy: its mode, the allow and deny
 * lists as given, and what they compile to (IPv4 ranges and name
 * patterns). Parsed from what callers send (the C API, the CLI, aboxd's
 * E2B bodies), stored in the sandbox's record as JSON, and read by
 * abox-netd to answer DNS and decide proxied connections: one parser for
 * all of them, and a fuzz target over it.
 * Runs in the creator, aboxd and abox-netd. */
#ifndef ABOX_NET_POLICY_H
#define ABOX_NET_POLICY_H

#include <stdint.h>

#include "base/base.h"

enum net_mode {
	NET_MODE_NONE = 0, /* loopback only: no veth */
	NET_MODE_OPEN = 1, /* out to anything but the always-denied ranges */
	NET_MODE_FILTERED = 2, /* the allow and deny lists decide */
};

#define NET_POLICY_MAX_ENTRIES 1024
#define NET_ENTRY_MAX 1024
#define NET_NAME_MAX 253
/* E2B's ALL_TRAFFIC: in denyOut, what allowOut does not name is refused */
#define NET_ALL_TRAFFIC "0.0.0.0/0"

struct net_range4 {
	uint32_t first, last; /* host byte order, inclusive */
};

struct net_policy {
	enum net_mode mode;
	char **allow_out; /* as given; NULL-terminated or NULL */
	char **deny_out;
	/* compiled */
	struct net_range4 *allow4, *deny4;
	size_t nallow4, ndeny4;
	char **names; /* allowOut's name patterns, lower case: "example.com", "*.example.com", "*" */
	size_t nnames;
	bool deny_all; /* denyOut holds 0.0.0.0/0: what allowOut does not name is refused */
};

/* Builds a policy from a mode and lists, validated as E2B validates them
 * (and with its error texts): denyOut takes IP addresses and CIDR blocks;
 * allowOut also takes name patterns ("example.com", "*.example.com" for
 * the names below it, "*" for any), which need "0.0.0.0/0" in denyOut;
 * the unspecified address is refused but in "0.0.0.0/0". IPv6 entries
 * are accepted and kept, though sandboxes have no IPv6. Lists need mode
 * filtered (with open or none they are refused); allow wins over deny. */
int net_policy_make(enum net_mode mode, const char *const *allow_out, const char *const *deny_out,
		    struct net_policy *out, abox_error *err);
void net_policy_free(struct net_policy *p);

/* {"mode":"filtered","allowOut":[...],"denyOut":[...]} */
char *net_policy_json(const struct net_policy *p);
int net_policy_parse(const char *json, struct net_policy *out, abox_error *err);

const char *net_mode_name(enum net_mode m);
/* "none", "open", "filtered"; -EINVAL otherwise. */
int net_mode_parse(const char *s, enum net_mode *out);

/* Whether a name (any case, trailing dot or not) is allowed: by a
 * pattern of allowOut, or because nothing denies it (not deny_all). */
bool net_policy_name_allowed(const struct net_policy *p, const char *name);
/* Whether a name matches one of allowOut's patterns. */
bool net_policy_name_listed(const struct net_policy *p, const char *name);
/* The verdict of the CIDR lists for an IPv4 address (network order):
 * allow wins over deny; the always-denied ranges are not applied here. */
bool net_policy_addr_allowed(const struct net_policy *p, uint32_t addr);

/* The ranges refused in every mode (private, loopback, link-local and
 * cloud metadata, CGNAT, multicast, reserved), host byte order. */
extern const struct net_range4 net_always_denied4[];
extern const size_t net_always_denied4_n;
bool net_addr_always_denied(uint32_t addr);

/* A name as DNS carries it: letters, digits, '-' and '_' in labels of 1
 * to 63, at most 253 in all; wildcard: a leading "*." is allowed. */
bool net_name_valid(const char *s, bool wildcard);

#endif
