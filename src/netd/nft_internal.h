/* netd/nft_internal — what the three files of abox's nftables code share
 * (nft.c: batches, the table; nft_rules.c: the ruleset; nft_elems.c:
 * sandboxes' elements and flows). Only src/netd/nft*.c include it. */
#ifndef ABOX_NETD_NFT_INTERNAL_H
#define ABOX_NETD_NFT_INTERNAL_H

#include <libmnl/libmnl.h>
#include <stdio.h>
#include <libnftnl/set.h>

#include "nft.h"

/* The table's version: a table without this marker set was made by
 * another abox and is made anew (the sandboxes' elements are restored by
 * the caller from their records). */
#define MARKER "abox_ruleset_v3"
#define KEY_IF 16 /* IFNAMSIZ: meta iifname loads 16 bytes, zero-padded */
#define KEY_IF_ADDR (KEY_IF + 4)
/* nftables' datatype numbers, for how `nft list` prints the sets */
#define TYPE_IPADDR 7
#define TYPE_IFNAME 41
#define TYPE_INTEGER 4
#define TYPE_BITS 6
#define BATCH_BYTES (1u << 19)
#define NL_RECV_BUF 16384
/* the kernels abox supports all know "destroy", but older headers not */
#ifndef NFT_MSG_DESTROYSETELEM
#define NFT_MSG_DESTROYSETELEM 30
#endif

/* A batch: begun, messages added (each with NLM_F_ACK), committed whole:
 * 0 or the first error the kernel answered. */
void nft_batch_begin(struct nft *n);
struct nlmsghdr *nft_batch_msg(struct nft *n, uint16_t type, uint16_t flags);
void nft_batch_next(struct nft *n);
int nft_batch_commit(struct nft *n);
/* One request outside a batch; every answer to cb. */
int nft_request(struct nft *n, struct nlmsghdr *h, mnl_cb_t cb, void *data);
/* A set object of abox's table, named. */
struct nftnl_set *nft_set_new(struct nft *n, const char *name);
/* An interface name as a key (16 bytes, zero-padded). */
void nft_key_if(uint8_t *k, const char *ifname);
struct nftnl_set_elem *nft_elem_new(const void *key, uint32_t len, const void *key_end);
/* One element message for set name, filled by fill (> 0: something to
 * send, 0: nothing, < 0: an error). */
int nft_elems_msg(struct nft *n, uint16_t type, const char *name,
		  int (*fill)(struct nftnl_set *s, const void *ud), const void *ud);
/* The always-denied ranges, as the elements of an interval set. */
int nft_fill_always(struct nftnl_set *s, const void *ud);
/* The ruleset's rules, into the batch (*err: the first failure). */
void nft_rules(struct nft *n, const struct nft_table_cfg *c, int *err);

#endif
