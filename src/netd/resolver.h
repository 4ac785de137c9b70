/* netd/resolver — abox-netd's DNS for sandboxes (resolver.c says what
 * it decides and why) and the lookups the proxy makes itself.
 * Runs in abox-netd. */
#ifndef ABOX_NETD_RESOLVER_H
#define ABOX_NETD_RESOLVER_H

#include <net/if.h>
#include <stdint.h>
#include <sys/types.h>

#include "dns.h"

struct nft;

/* An upstream answer to a sandbox's query, checked: emptied when it
 * holds an always-denied address, its addresses learned (listed). Its
 * length in resp. */
size_t resolver_finish(uint32_t slot, const char *ifname, bool listed, const uint8_t *query, size_t qend,
		       uint8_t *resp, size_t n, size_t cap, struct nft *learn);
/* Asks the host's resolvers (in turn) and waits: the answer's length. */
ssize_t resolver_ask(const struct dns_query *q, const uint8_t *query, size_t n, uint8_t *out, size_t cap);
/* The A addresses of name, none in the always-denied ranges: 0, -ENOENT
 * (no such name or no address), -EACCES (only denied addresses), or
 * another -errno. */
int resolver_lookup_a(const char *name, uint32_t *addrs, size_t max, size_t *n);
/* How long an upstream resolver has to answer before the next is asked. */
#define RESOLVER_UPSTREAM_TIMEOUT_MS 2500
/* A socket connected to the host's resolver i (SOCK_DGRAM: non-blocking),
 * or -errno; and a random query id (upstream.c). */
int resolver_upstream_socket(unsigned i, int type);
uint16_t resolver_query_id(void);
/* A socket on port of every address (type SOCK_DGRAM or SOCK_STREAM). */
int resolver_listen(int type, uint16_t port, abox_error *err);

#endif
