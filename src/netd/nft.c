/* netd/nft.c — abox's nftables table through libnftnl (see nft.h for what
 * the rules do and why). Messages go in one batch per change; the kernel
 * handles a batch inside sendmsg, so every answer is queued by the time
 * it returns and is read without waiting. */
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>

#include "nft.h"

/* The table's version: a table without this marker set was made by
 * another abox and is made anew (the sandboxes' elements are restored by
 * the caller from their records). */
#define MARKER "abox_ruleset_v2"
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

int nft_open(struct nft *n, const char *table, abox_error *err)
{
	memset(n, 0, sizeof(*n));
	snprintf(n->table, sizeof(n->table), "%s", table);
	n->sock = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!n->sock)
		return abox_error_set(err, errno, "nftables: open a netlink socket");
	if (mnl_socket_bind(n->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		int e = errno;
		nft_close(n);
		return abox_error_set(err, e, "nftables: bind a netlink socket");
	}
	n->portid = mnl_socket_get_portid(n->sock);
	n->seq = (uint32_t)time(NULL);
	n->cap = BATCH_BYTES;
	if (!(n->buf = malloc(n->cap))) {
		nft_close(n);
		return abox_error_set(err, ENOMEM, "nftables");
	}
	return 0;
}

void nft_close(struct nft *n)
{
	if (n->b)
		mnl_nlmsg_batch_stop(n->b);
	if (n->sock)
		mnl_socket_close(n->sock);
	free(n->buf);
	memset(n, 0, sizeof(*n));
}

/* ---- batches ----------------------------------------------------------- */

static void batch_begin(struct nft *n)
{
	if (n->b)
		mnl_nlmsg_batch_stop(n->b);
	/* leave room for the largest single message past the limit */
	n->b = mnl_nlmsg_batch_start(n->buf, n->cap / 2);
	nftnl_batch_begin(mnl_nlmsg_batch_current(n->b), n->seq++);
	mnl_nlmsg_batch_next(n->b);
}

static struct nlmsghdr *batch_msg(struct nft *n, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *h = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(n->b), type, NFPROTO_INET,
						   flags | NLM_F_ACK, n->seq++);
	return h;
}

static void batch_next(struct nft *n)
{
	mnl_nlmsg_batch_next(n->b);
}

/* Sends the batch: 0, or the first error the kernel answered (the batch
 * is then undone whole). */
static int batch_commit(struct nft *n)
{
	nftnl_batch_end(mnl_nlmsg_batch_current(n->b), n->seq++);
	mnl_nlmsg_batch_next(n->b);
	size_t len = mnl_nlmsg_batch_size(n->b);
	int r = 0;
	if (mnl_nlmsg_batch_is_empty(n->b))
		goto out;
	if (len > n->cap / 2 + n->cap / 4) {
		r = -E2BIG;
		goto out;
	}
	if (mnl_socket_sendto(n->sock, mnl_nlmsg_batch_head(n->b), len) < 0) {
		r = -errno;
		goto out;
	}
	char buf[NL_RECV_BUF];
	for (;;) {
		ssize_t got = recv(mnl_socket_get_fd(n->sock), buf, sizeof(buf), MSG_DONTWAIT);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			break; /* EAGAIN: every answer read */
		}
		int left = (int)got;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; mnl_nlmsg_ok(h, left);
		     h = mnl_nlmsg_next(h, &left)) {
			if (h->nlmsg_type != NLMSG_ERROR)
				continue;
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);
			if (e->error && !r)
				r = e->error;
		}
	}
out:
	mnl_nlmsg_batch_stop(n->b);
	n->b = NULL;
	return r;
}

/* Sends one request (no batch) and hands every answer to cb. */
static int request(struct nft *n, struct nlmsghdr *h, mnl_cb_t cb, void *data)
{
	if (mnl_socket_sendto(n->sock, h, h->nlmsg_len) < 0)
		return -errno;
	char buf[NL_RECV_BUF];
	for (;;) {
		ssize_t got = mnl_socket_recvfrom(n->sock, buf, sizeof(buf));
		if (got < 0)
			return -errno;
		int r = mnl_cb_run(buf, (size_t)got, h->nlmsg_seq, n->portid, cb, data);
		if (r < 0)
			return -errno;
		if (r == MNL_CB_STOP)
			return 0;
	}
}

/* ---- rules ------------------------------------------------------------- */

struct rb {
	struct nftnl_rule *r;
	bool oom;
};

static void add(struct rb *b, struct nftnl_expr *e)
{
	if (!e)
		b->oom = true;
	else
		nftnl_rule_add_expr(b->r, e);
}

static struct nftnl_expr *expr(const char *name)
{
	return nftnl_expr_alloc(name);
}

static void e_meta(struct rb *b, uint32_t key, uint32_t dreg)
{
	struct nftnl_expr *e = expr("meta");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, dreg);
	}
	add(b, e);
}

static void e_cmp(struct rb *b, uint32_t sreg, uint32_t op, const void *data, uint32_t len)
{
	struct nftnl_expr *e = expr("cmp");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, sreg);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
		nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
	}
	add(b, e);
}

static void e_payload(struct rb *b, uint32_t base, uint32_t off, uint32_t len, uint32_t dreg)
{
	struct nftnl_expr *e = expr("payload");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, dreg);
	}
	add(b, e);
}

static void e_lookup(struct rb *b, uint32_t sreg, const char *set, bool inv)
{
	struct nftnl_expr *e = expr("lookup");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, sreg);
		nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, set);
		if (inv)
			nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_FLAGS, NFT_LOOKUP_F_INV);
	}
	add(b, e);
}

static void e_verdict(struct rb *b, int verdict, const char *chain)
{
	struct nftnl_expr *e = expr("immediate");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
		if (chain)
			nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, chain);
	}
	add(b, e);
}

static void e_imm(struct rb *b, uint32_t dreg, const void *data, uint32_t len)
{
	struct nftnl_expr *e = expr("immediate");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, dreg);
		nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, data, len);
	}
	add(b, e);
}

static void e_reject(struct rb *b, uint32_t type, uint32_t code)
{
	struct nftnl_expr *e = expr("reject");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, type);
		nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, (uint8_t)code);
	}
	add(b, e);
}

static void e_ct(struct rb *b, uint32_t key, uint32_t reg, bool set)
{
	struct nftnl_expr *e = expr("ct");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, key);
		nftnl_expr_set_u32(e, set ? NFTNL_EXPR_CT_SREG : NFTNL_EXPR_CT_DREG, reg);
	}
	add(b, e);
}

/* reg = reg & mask (4 bytes), then reg != 0 */
static void e_mask_nonzero(struct rb *b, uint32_t reg, uint32_t mask)
{
	struct nftnl_expr *e = expr("bitwise");
	uint32_t zero = 0;
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, reg);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, reg);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, 4);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, &mask, 4);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, &zero, 4);
	}
	add(b, e);
	e_cmp(b, reg, NFT_CMP_NEQ, &zero, 4);
}

static void e_redir(struct rb *b, uint16_t port)
{
	uint16_t p = htons(port);
	e_imm(b, NFT_REG_2, &p, sizeof(p));
	struct nftnl_expr *e = expr("redir");
	if (e)
		nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_2);
	add(b, e);
}

static void e_masq(struct rb *b)
{
	add(b, expr("masq"));
}

static void e_dynset_update(struct rb *b, uint32_t sreg, const char *set, uint64_t timeout_ms)
{
	struct nftnl_expr *e = expr("dynset");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_DYNSET_SREG_KEY, sreg);
		nftnl_expr_set_u32(e, NFTNL_EXPR_DYNSET_OP, NFT_DYNSET_OP_UPDATE);
		nftnl_expr_set_str(e, NFTNL_EXPR_DYNSET_SET_NAME, set);
		nftnl_expr_set_u64(e, NFTNL_EXPR_DYNSET_TIMEOUT, timeout_ms);
	}
	add(b, e);
}

/* ---- match shorthands (registers: R1 is 16 bytes = 32-bit regs 0-3) ---- */

#define R1 NFT_REG_1
#define R_ADDR NFT_REG32_04 /* after an interface name in R1: a concatenation */

static void m_if_in(struct rb *b, bool in, const char *set, bool inv)
{
	e_meta(b, in ? NFT_META_IIFNAME : NFT_META_OIFNAME, R1);
	e_lookup(b, R1, set, inv);
}

static void m_l4(struct rb *b, uint8_t proto)
{
	e_meta(b, NFT_META_L4PROTO, R1);
	e_cmp(b, R1, NFT_CMP_EQ, &proto, 1);
}

static void m_dport(struct rb *b, uint8_t proto, uint16_t port)
{
	m_l4(b, proto);
	uint16_t p = htons(port);
	e_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, R1);
	e_cmp(b, R1, NFT_CMP_EQ, &p, 2);
}

/* iifname . ip daddr (or saddr) in R1.R_ADDR, looked up in set */
static void m_if_addr(struct rb *b, bool daddr, const char *set, bool inv)
{
	e_meta(b, NFT_META_IIFNAME, R1);
	e_payload(b, NFT_PAYLOAD_NETWORK_HEADER, daddr ? 16 : 12, 4, R_ADDR);
	e_lookup(b, R1, set, inv);
}

static void m_ipv4(struct rb *b)
{
	uint8_t p = NFPROTO_IPV4;
	e_meta(b, NFT_META_NFPROTO, R1);
	e_cmp(b, R1, NFT_CMP_EQ, &p, 1);
}

static void m_ct(struct rb *b, uint32_t key, uint32_t mask)
{
	e_ct(b, key, R1, false);
	e_mask_nonzero(b, R1, mask);
}

/* Refused, and counted by why (a named counter of the table: the count
 * of counters stays fixed too). */
static void v_refuse(struct rb *b, const char *why)
{
	struct nftnl_expr *e = expr("objref");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_IMM_TYPE, NFT_OBJECT_COUNTER);
		nftnl_expr_set_str(e, NFTNL_EXPR_OBJREF_IMM_NAME, why);
	}
	add(b, e);
	e_verdict(b, NFT_JUMP, "refuse");
}

struct nftnl_rule_ctx {
	struct nft *n;
	const char *chain;
	int err;
};

static struct rb rule_new(void)
{
	struct rb b = { .r = nftnl_rule_alloc() };
	b.oom = !b.r;
	return b;
}

static void rule_emit(struct nftnl_rule_ctx *c, struct rb *b)
{
	if (b->oom) {
		c->err = -ENOMEM;
	} else {
		nftnl_rule_set_str(b->r, NFTNL_RULE_TABLE, c->n->table);
		nftnl_rule_set_str(b->r, NFTNL_RULE_CHAIN, c->chain);
		nftnl_rule_set_u32(b->r, NFTNL_RULE_FAMILY, NFPROTO_INET);
		struct nlmsghdr *h = batch_msg(c->n, NFT_MSG_NEWRULE, NLM_F_APPEND | NLM_F_CREATE);
		nftnl_rule_nlmsg_build_payload(h, b->r);
		batch_next(c->n);
	}
	if (b->r)
		nftnl_rule_free(b->r);
	b->r = NULL;
}

/* ---- the table ---------------------------------------------------------- */

static int table_msg(struct nft *n, uint16_t type, uint16_t flags)
{
	struct nftnl_table *t = nftnl_table_alloc();
	if (!t)
		return -ENOMEM;
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, n->table);
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
	struct nlmsghdr *h = batch_msg(n, type, flags);
	nftnl_table_nlmsg_build_payload(h, t);
	batch_next(n);
	nftnl_table_free(t);
	return 0;
}

static int chain_msg(struct nft *n, const char *name, const char *type, int hook, int prio)
{
	struct nftnl_chain *c = nftnl_chain_alloc();
	if (!c)
		return -ENOMEM;
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, n->table);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
	if (type) {
		nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, type);
		nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, (uint32_t)hook);
		nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, prio);
		/* abox decides only for its own sandboxes' packets: every other
		 * packet passes as if the table were not there */
		nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	}
	struct nlmsghdr *h = batch_msg(n, NFT_MSG_NEWCHAIN, NLM_F_CREATE);
	nftnl_chain_nlmsg_build_payload(h, c);
	batch_next(n);
	nftnl_chain_free(c);
	return 0;
}

const char *const nft_refusals[4] = { "refused_host", "refused_private", "refused_smtp", "refused_policy" };

static int counter_msg(struct nft *n, const char *name)
{
	struct nftnl_obj *o = nftnl_obj_alloc();
	if (!o)
		return -ENOMEM;
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, n->table);
	nftnl_obj_set_str(o, NFTNL_OBJ_NAME, name);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
	nftnl_obj_set_u32(o, NFTNL_OBJ_FAMILY, NFPROTO_INET);
	struct nlmsghdr *h = batch_msg(n, NFT_MSG_NEWOBJ, NLM_F_CREATE);
	nftnl_obj_nlmsg_build_payload(h, o);
	batch_next(n);
	nftnl_obj_free(o);
	return 0;
}

enum set_kind {
	S_IF,
	S_IF_ADDR,
	S_IF_RANGE,
	S_ADDR_RANGE,
	S_IF_ADDR_TIMEOUT,
	S_MARKER
};

static struct nftnl_set *set_new(struct nft *n, const char *name)
{
	struct nftnl_set *s = nftnl_set_alloc();
	if (!s)
		return NULL;
	nftnl_set_set_str(s, NFTNL_SET_TABLE, n->table);
	nftnl_set_set_str(s, NFTNL_SET_NAME, name);
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
	return s;
}

static int set_msg(struct nft *n, const char *name, enum set_kind k, uint32_t id)
{
	struct nftnl_set *s = set_new(n, name);
	if (!s)
		return -ENOMEM;
	uint32_t flags = 0, len = KEY_IF_ADDR, type = (TYPE_IFNAME << TYPE_BITS) | TYPE_IPADDR;
	switch (k) {
	case S_IF:
		len = KEY_IF;
		type = TYPE_IFNAME;
		break;
	case S_IF_ADDR:
		break;
	case S_IF_RANGE:
		flags = NFT_SET_INTERVAL | NFT_SET_CONCAT;
		break;
	case S_ADDR_RANGE:
		len = 4;
		type = TYPE_IPADDR;
		flags = NFT_SET_INTERVAL;
		break;
	case S_IF_ADDR_TIMEOUT:
		flags = NFT_SET_TIMEOUT | NFT_SET_EVAL;
		break;
	case S_MARKER:
		len = 4;
		type = TYPE_INTEGER;
		break;
	}
	nftnl_set_set_u32(s, NFTNL_SET_KEY_LEN, len);
	nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE, type);
	nftnl_set_set_u32(s, NFTNL_SET_ID, id);
	if (flags)
		nftnl_set_set_u32(s, NFTNL_SET_FLAGS, flags);
	if (flags & NFT_SET_CONCAT) {
		uint8_t fl[16] = { KEY_IF, 4 };
		nftnl_set_set_data(s, NFTNL_SET_DESC_CONCAT, fl, sizeof(fl));
	}
	struct nlmsghdr *h = batch_msg(n, NFT_MSG_NEWSET, NLM_F_CREATE);
	nftnl_set_nlmsg_build_payload(h, s);
	batch_next(n);
	nftnl_set_free(s);
	return 0;
}

/* ---- elements ----------------------------------------------------------- */

static void key_if(uint8_t *k, const char *ifname)
{
	memset(k, 0, KEY_IF);
	strncpy((char *)k, ifname, KEY_IF - 1);
}

static struct nftnl_set_elem *elem_new(const void *key, uint32_t len, const void *key_end)
{
	struct nftnl_set_elem *e = nftnl_set_elem_alloc();
	if (!e)
		return NULL;
	nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key, len);
	if (key_end)
		nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY_END, key_end, len);
	return e;
}

static int elem_if(struct nftnl_set *s, const char *ifname)
{
	uint8_t k[KEY_IF];
	key_if(k, ifname);
	struct nftnl_set_elem *e = elem_new(k, KEY_IF, NULL);
	if (!e)
		return -ENOMEM;
	nftnl_set_elem_add(s, e);
	return 0;
}

static int elem_if_addr(struct nftnl_set *s, const char *ifname, uint32_t addr, uint64_t timeout_ms)
{
	uint8_t k[KEY_IF_ADDR];
	key_if(k, ifname);
	memcpy(k + KEY_IF, &addr, 4);
	struct nftnl_set_elem *e = elem_new(k, KEY_IF_ADDR, NULL);
	if (!e)
		return -ENOMEM;
	if (timeout_ms)
		nftnl_set_elem_set_u64(e, NFTNL_SET_ELEM_TIMEOUT, timeout_ms);
	nftnl_set_elem_add(s, e);
	return 0;
}

static int elem_if_range(struct nftnl_set *s, const char *ifname, const struct net_range4 *r)
{
	uint8_t k[KEY_IF_ADDR], ke[KEY_IF_ADDR];
	key_if(k, ifname);
	key_if(ke, ifname);
	uint32_t first = htonl(r->first), last = htonl(r->last);
	memcpy(k + KEY_IF, &first, 4);
	memcpy(ke + KEY_IF, &last, 4);
	struct nftnl_set_elem *e = elem_new(k, KEY_IF_ADDR, ke);
	if (!e)
		return -ENOMEM;
	nftnl_set_elem_add(s, e);
	return 0;
}

/* One element message for set name, filled by fill. */
static int elems_msg(struct nft *n, uint16_t type, const char *name,
		     int (*fill)(struct nftnl_set *s, const void *ud), const void *ud)
{
	struct nftnl_set *s = set_new(n, name);
	if (!s)
		return -ENOMEM;
	int r = fill(s, ud);
	if (r > 0) {
		struct nlmsghdr *h = batch_msg(n, type, type == NFT_MSG_NEWSETELEM ? NLM_F_CREATE : 0);
		nftnl_set_elems_nlmsg_build_payload(h, s);
		batch_next(n);
		r = 0;
	}
	nftnl_set_free(s);
	return r;
}

/* The always-denied ranges as an interval set: a start element and, past
 * the end, an interval-end one (ranges that touch are merged first, or
 * one's end would be the next one's start). */
static int fill_always(struct nftnl_set *s, const void *ud)
{
	(void)ud;
	struct net_range4 v[32];
	size_t n = 0;
	for (size_t i = 0; i < net_always_denied4_n && n < ELEMENTSOF(v); i++) {
		if (n && (uint64_t)v[n - 1].last + 1 >= net_always_denied4[i].first) {
			if (net_always_denied4[i].last > v[n - 1].last)
				v[n - 1].last = net_always_denied4[i].last;
		} else {
			v[n++] = net_always_denied4[i];
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t a = htonl(v[i].first);
		struct nftnl_set_elem *e = elem_new(&a, 4, NULL);
		if (!e)
			return -ENOMEM;
		nftnl_set_elem_add(s, e);
		if (v[i].last == 0xffffffffu)
			continue;
		uint32_t end = htonl(v[i].last + 1);
		if (!(e = elem_new(&end, 4, NULL)))
			return -ENOMEM;
		nftnl_set_elem_set_u32(e, NFTNL_SET_ELEM_FLAGS, NFT_SET_ELEM_INTERVAL_END);
		nftnl_set_elem_add(s, e);
	}
	return 1;
}

/* ---- the ruleset -------------------------------------------------------- */

static void rules(struct nft *n, const struct nft_table_cfg *c, int *err)
{
	struct nftnl_rule_ctx x = { .n = n };
	struct rb b;
	uint8_t tcp = IPPROTO_TCP, udp = IPPROTO_UDP;
	char up[KEY_IF];
	key_if((uint8_t *)up, c->uplink);

	/* refuse: said, never a silent drop */
	x.chain = "refuse";
	b = rule_new();
	m_l4(&b, tcp);
	e_reject(&b, NFT_REJECT_TCP_RST, 0);
	rule_emit(&x, &b);
	b = rule_new();
	e_reject(&b, NFT_REJECT_ICMPX_UNREACH, NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
	rule_emit(&x, &b);

	/* prerouting, before conntrack's NAT: who the packet is from */
	x.chain = "pre";
	b = rule_new();
	m_if_in(&b, true, "ifaces", false);
	e_verdict(&b, NFT_JUMP, "sb_pre");
	rule_emit(&x, &b);
	x.chain = "sb_pre";
	b = rule_new(); /* no IPv6 (see nft.h) */
	uint8_t v6 = NFPROTO_IPV6;
	e_meta(&b, NFT_META_NFPROTO, R1);
	e_cmp(&b, R1, NFT_CMP_EQ, &v6, 1);
	e_verdict(&b, NF_DROP, NULL);
	rule_emit(&x, &b);
	b = rule_new(); /* a source that is not this veth's sandbox */
	m_if_addr(&b, false, "sbx", true);
	e_verdict(&b, NF_DROP, NULL);
	rule_emit(&x, &b);
	b = rule_new(); /* the flow's mark: its sandbox's address */
	e_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 12, 4, R1);
	e_ct(&b, NFT_CT_MARK, R1, true);
	rule_emit(&x, &b);

	/* nat prerouting: DNS to abox's resolver; names to its proxy */
	x.chain = "dnat";
	for (int i = 0; i < 2; i++) {
		b = rule_new();
		m_if_in(&b, true, "ifaces", false);
		m_dport(&b, i ? tcp : udp, 53);
		e_redir(&b, c->dns_port);
		rule_emit(&x, &b);
	}
	static const uint16_t web[] = { 80, 443 };
	for (size_t i = 0; i < ELEMENTSOF(web); i++) {
		b = rule_new();
		m_if_in(&b, true, "proxied", false);
		m_ipv4(&b);
		m_dport(&b, tcp, web[i]);
		m_if_addr(&b, true, "allow4", true);
		e_redir(&b, c->proxy_port);
		rule_emit(&x, &b);
	}

	/* input: the host is reachable from a sandbox only through the
	 * redirects above; the resolver's and proxy's ports from nowhere else */
	x.chain = "in";
	b = rule_new();
	m_if_in(&b, true, "ifaces", false);
	e_verdict(&b, NFT_JUMP, "sb_in");
	rule_emit(&x, &b);
	const uint16_t own[][2] = { { IPPROTO_UDP, c->dns_port },
				    { IPPROTO_TCP, c->dns_port },
				    { IPPROTO_TCP, c->proxy_port } };
	for (size_t i = 0; i < ELEMENTSOF(own); i++) {
		b = rule_new();
		e_meta(&b, NFT_META_IIFNAME, R1);
		e_cmp(&b, R1, NFT_CMP_NEQ, "lo\0\0\0\0\0\0\0\0\0\0\0\0\0", KEY_IF);
		m_dport(&b, (uint8_t)own[i][0], own[i][1]);
		e_verdict(&b, NF_DROP, NULL);
		rule_emit(&x, &b);
	}
	x.chain = "sb_in";
	for (size_t i = 0; i < ELEMENTSOF(own); i++) {
		b = rule_new();
		m_dport(&b, (uint8_t)own[i][0], own[i][1]);
		m_ct(&b, NFT_CT_STATUS, IPS_DST_NAT);
		e_verdict(&b, NF_ACCEPT, NULL);
		rule_emit(&x, &b);
	}
	b = rule_new();
	v_refuse(&b, "refused_host");
	rule_emit(&x, &b);

	/* forward */
	x.chain = "fwd";
	b = rule_new();
	m_if_in(&b, true, "ifaces", false);
	e_verdict(&b, NFT_JUMP, "sb_out");
	rule_emit(&x, &b);
	b = rule_new();
	m_if_in(&b, false, "ifaces", false);
	m_ct(&b, NFT_CT_STATE, NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED));
	e_verdict(&b, NF_ACCEPT, NULL);
	rule_emit(&x, &b);
	b = rule_new(); /* nothing unasked reaches a sandbox */
	m_if_in(&b, false, "ifaces", false);
	e_verdict(&b, NF_DROP, NULL);
	rule_emit(&x, &b);

	x.chain = "sb_out";
	b = rule_new(); /* out through the uplink only */
	e_meta(&b, NFT_META_OIFNAME, R1);
	e_cmp(&b, R1, NFT_CMP_NEQ, up, KEY_IF);
	v_refuse(&b, "refused_host");
	rule_emit(&x, &b);
	b = rule_new();
	e_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 16, 4, R1);
	e_lookup(&b, R1, "always4", false);
	v_refuse(&b, "refused_private");
	rule_emit(&x, &b);
	if (!c->allow_smtp) {
		b = rule_new();
		m_dport(&b, tcp, 25);
		v_refuse(&b, "refused_smtp");
		rule_emit(&x, &b);
	}
	b = rule_new();
	m_if_addr(&b, true, "allow4", false);
	e_verdict(&b, NF_ACCEPT, NULL);
	rule_emit(&x, &b);
	b = rule_new(); /* a learned address stays while a flow uses it */
	m_if_addr(&b, true, "learned4", false);
	e_dynset_update(&b, R1, "learned4", 3600 * 1000);
	e_verdict(&b, NF_ACCEPT, NULL);
	rule_emit(&x, &b);
	b = rule_new();
	m_if_addr(&b, true, "deny4", false);
	v_refuse(&b, "refused_policy");
	rule_emit(&x, &b);
	b = rule_new();
	m_if_in(&b, true, "denyall", false);
	v_refuse(&b, "refused_policy");
	rule_emit(&x, &b);

	/* nat postrouting */
	x.chain = "snat";
	b = rule_new();
	e_meta(&b, NFT_META_OIFNAME, R1);
	e_cmp(&b, R1, NFT_CMP_EQ, up, KEY_IF);
	m_ipv4(&b);
	e_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 12, 4, R1);
	uint32_t mask = c->pool_prefix ? htonl(~0u << (32 - c->pool_prefix)) : 0, zero = 0;
	struct nftnl_expr *bw = expr("bitwise");
	if (bw) {
		nftnl_expr_set_u32(bw, NFTNL_EXPR_BITWISE_SREG, R1);
		nftnl_expr_set_u32(bw, NFTNL_EXPR_BITWISE_DREG, R1);
		nftnl_expr_set_u32(bw, NFTNL_EXPR_BITWISE_LEN, 4);
		nftnl_expr_set(bw, NFTNL_EXPR_BITWISE_MASK, &mask, 4);
		nftnl_expr_set(bw, NFTNL_EXPR_BITWISE_XOR, &zero, 4);
	}
	add(&b, bw);
	e_cmp(&b, R1, NFT_CMP_EQ, &c->pool, 4);
	e_masq(&b);
	rule_emit(&x, &b);
	*err = x.err;
}

static int marker_cb(const struct nlmsghdr *h, void *data)
{
	(void)h;
	*(bool *)data = true;
	return MNL_CB_OK;
}

int nft_table_present(struct nft *n, abox_error *err)
{
	struct nftnl_set *s = set_new(n, MARKER);
	if (!s)
		return abox_error_set(err, ENOMEM, "nftables");
	char buf[NL_RECV_BUF];
	struct nlmsghdr *h = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSET, NFPROTO_INET, NLM_F_ACK, n->seq++);
	nftnl_set_nlmsg_build_payload(h, s);
	nftnl_set_free(s);
	bool found = false;
	int r = request(n, h, marker_cb, &found);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return abox_error_set(err, -r, "nftables: look for table '%s'", n->table);
	return found;
}

int nft_table_remove(struct nft *n, abox_error *err)
{
	batch_begin(n);
	int r = table_msg(n, NFT_MSG_DELTABLE, 0);
	if (r >= 0)
		r = batch_commit(n);
	if (r == -ENOENT)
		return 0;
	return r < 0 ? abox_error_set(err, -r, "nftables: remove table '%s'", n->table) : 0;
}

int nft_table_ensure(struct nft *n, const struct nft_table_cfg *c, abox_error *err)
{
	int r = nft_table_present(n, err);
	if (r != 0)
		return r < 0 ? r : 0;
	/* missing or another version's: made anew in one batch, so no
	 * packet ever meets half a table */
	batch_begin(n);
	r = table_msg(n, NFT_MSG_NEWTABLE, NLM_F_CREATE);
	if (r >= 0)
		r = table_msg(n, NFT_MSG_DELTABLE, 0);
	if (r >= 0)
		r = table_msg(n, NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_EXCL);
	static const struct {
		const char *name;
		enum set_kind kind;
	} sets[] = {
		{ MARKER, S_MARKER },     { "ifaces", S_IF },      { "sbx", S_IF_ADDR },
		{ "allow4", S_IF_RANGE }, { "deny4", S_IF_RANGE }, { "learned4", S_IF_ADDR_TIMEOUT },
		{ "denyall", S_IF },      { "proxied", S_IF },     { "always4", S_ADDR_RANGE },
	};
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(sets); i++)
		r = set_msg(n, sets[i].name, sets[i].kind, (uint32_t)i + 1);
	if (r >= 0)
		r = elems_msg(n, NFT_MSG_NEWSETELEM, "always4", fill_always, NULL);
	static const struct {
		const char *name, *type;
		int hook, prio;
	} chains[] = {
		{ "refuse", NULL, 0, 0 },
		{ "pre", "filter", NF_INET_PRE_ROUTING, -150 },
		{ "sb_pre", NULL, 0, 0 },
		{ "dnat", "nat", NF_INET_PRE_ROUTING, -100 },
		{ "in", "filter", NF_INET_LOCAL_IN, 0 },
		{ "sb_in", NULL, 0, 0 },
		{ "fwd", "filter", NF_INET_FORWARD, 0 },
		{ "sb_out", NULL, 0, 0 },
		{ "snat", "nat", NF_INET_POST_ROUTING, 100 },
	};
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(nft_refusals); i++)
		r = counter_msg(n, nft_refusals[i]);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(chains); i++)
		r = chain_msg(n, chains[i].name, chains[i].type, chains[i].hook, chains[i].prio);
	if (r >= 0)
		rules(n, c, &r);
	if (r >= 0)
		r = batch_commit(n);
	else
		mnl_nlmsg_batch_stop(n->b), n->b = NULL;
	if (r == -EEXIST)
		return 0; /* another abox made it meanwhile */
	if (r < 0)
		return abox_error_set(err, -r, "nftables: make table '%s'", n->table);
	return 1;
}

/* ---- a sandbox's elements ------------------------------------------------ */

struct fill {
	const struct nft_sandbox *s;
	int which;
};

enum {
	F_IFACES,
	F_SBX,
	F_ALLOW,
	F_DENY,
	F_DENYALL,
	F_PROXIED
};

static int fill_sandbox(struct nftnl_set *set, const void *ud)
{
	const struct fill *f = ud;
	const struct nft_sandbox *s = f->s;
	const struct net_policy *p = s->policy;
	int r = 0, n = 0;
	switch (f->which) {
	case F_IFACES:
		r = elem_if(set, s->ifname), n = 1;
		break;
	case F_SBX:
		r = elem_if_addr(set, s->ifname, s->addr, 0), n = 1;
		break;
	case F_ALLOW:
		for (size_t i = 0; r >= 0 && i < p->nallow4; i++, n++)
			r = elem_if_range(set, s->ifname, &p->allow4[i]);
		break;
	case F_DENY:
		for (size_t i = 0; r >= 0 && i < p->ndeny4; i++, n++)
			r = elem_if_range(set, s->ifname, &p->deny4[i]);
		break;
	case F_DENYALL:
		if (p->deny_all)
			r = elem_if(set, s->ifname), n = 1;
		break;
	case F_PROXIED:
		if (p->nnames)
			r = elem_if(set, s->ifname), n = 1;
		break;
	}
	return r < 0 ? r : n > 0;
}

static const char *const sandbox_sets[] = { "ifaces", "sbx", "allow4", "deny4", "denyall", "proxied" };

/* The messages of a sandbox's elements; ifaces/sbx only when whole (a
 * replace keeps them). */
static int sandbox_msgs(struct nft *n, uint16_t type, const struct nft_sandbox *s, bool whole)
{
	int r = 0;
	for (int w = whole ? F_IFACES : F_ALLOW; r >= 0 && w <= F_PROXIED; w++) {
		struct fill f = { s, w };
		r = elems_msg(n, type, sandbox_sets[w], fill_sandbox, &f);
	}
	return r;
}

int nft_sandbox_add(struct nft *n, const struct nft_sandbox *s, abox_error *err)
{
	batch_begin(n);
	int r = sandbox_msgs(n, NFT_MSG_NEWSETELEM, s, true);
	r = r < 0 ? r : batch_commit(n);
	if (r < 0)
		return abox_error_set(err, -r, "nftables: add sandbox '%s'", s->ifname);
	return 0;
}

/* Deletes with "destroy" (no error for what is already gone); a kernel
 * that predates it gets deletes one set at a time, missing ones skipped. */
static int del_elems(struct nft *n, const struct nft_sandbox *s, bool whole)
{
	batch_begin(n);
	int r = sandbox_msgs(n, NFT_MSG_DESTROYSETELEM, s, whole);
	r = r < 0 ? r : batch_commit(n);
	if (r != -EINVAL && r != -EOPNOTSUPP)
		return r;
	r = 0;
	for (int w = whole ? F_IFACES : F_ALLOW; w <= F_PROXIED; w++) {
		struct fill f = { s, w };
		batch_begin(n);
		int e = elems_msg(n, NFT_MSG_DELSETELEM, sandbox_sets[w], fill_sandbox, &f);
		e = e < 0 ? e : batch_commit(n);
		if (e < 0 && e != -ENOENT && !r)
			r = e;
	}
	return r;
}

int nft_sandbox_del(struct nft *n, const struct nft_sandbox *s, abox_error *err)
{
	int r = del_elems(n, s, true);
	if (r >= 0)
		r = nft_learned_flush(n, s->ifname, NULL);
	if (r == -ENOENT)
		r = 0; /* the table is gone: nothing of the sandbox is left */
	return r < 0 ? abox_error_set(err, -r, "nftables: remove sandbox '%s'", s->ifname) : 0;
}

int nft_sandbox_replace(struct nft *n, const struct nft_sandbox *old, const struct nft_sandbox *cur,
			abox_error *err)
{
	if (!old) {
		/* what the old policy was is not known (a restarted netd):
		 * whatever the table holds for the sandbox goes first */
		int r = nft_sandbox_purge(n, cur->ifname, err);
		return r < 0 ? r : nft_sandbox_add(n, cur, err);
	}
	batch_begin(n);
	int r = sandbox_msgs(n, NFT_MSG_DELSETELEM, old, false);
	if (r >= 0)
		r = sandbox_msgs(n, NFT_MSG_NEWSETELEM, cur, false);
	r = r < 0 ? r : batch_commit(n);
	if (r == -ENOENT) {
		/* the old elements were not all there (a crash between two
		 * changes): clear what is, then add */
		if ((r = del_elems(n, old, false)) >= 0) {
			batch_begin(n);
			r = sandbox_msgs(n, NFT_MSG_NEWSETELEM, cur, false);
			r = r < 0 ? r : batch_commit(n);
		}
	}
	if (r < 0)
		return abox_error_set(err, -r, "nftables: change the policy of '%s'", cur->ifname);
	return 0;
}

struct learned {
	const char *ifname;
	const uint32_t *addrs;
	size_t n;
	uint64_t timeout;
};

static int fill_learned(struct nftnl_set *s, const void *ud)
{
	const struct learned *l = ud;
	for (size_t i = 0; i < l->n; i++) {
		int r = elem_if_addr(s, l->ifname, l->addrs[i], l->timeout);
		if (r < 0)
			return r;
	}
	return l->n > 0;
}

int nft_learned_add(struct nft *n, const char *ifname, const uint32_t *addrs, size_t naddrs,
		    uint64_t timeout_ms, abox_error *err)
{
	struct learned l = { ifname, addrs, naddrs, timeout_ms };
	batch_begin(n);
	/* NEWSETELEM without EXCL refreshes an element that is there */
	int r = elems_msg(n, NFT_MSG_NEWSETELEM, "learned4", fill_learned, &l);
	r = r < 0 ? r : batch_commit(n);
	return r < 0 ? abox_error_set(err, -r, "nftables: learn addresses for '%s'", ifname) : 0;
}

/* ---- reading sets back ----------------------------------------------------- */

struct elems_q {
	struct nftnl_set *set;
	int err;
};

static int elems_cb(const struct nlmsghdr *h, void *data)
{
	struct elems_q *q = data;
	if (nftnl_set_elems_nlmsg_parse(h, q->set) < 0)
		q->err = -EPROTO;
	return MNL_CB_OK;
}

/* Every element of set name (into a set object the caller frees). */
static int elems_get(struct nft *n, const char *name, struct nftnl_set **out)
{
	struct nftnl_set *s = set_new(n, name);
	if (!s)
		return -ENOMEM;
	char buf[NL_RECV_BUF];
	struct nlmsghdr *h =
		nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM, NFPROTO_INET, NLM_F_DUMP, n->seq++);
	nftnl_set_elems_nlmsg_build_payload(h, s);
	struct elems_q q = { s, 0 };
	int r = request(n, h, elems_cb, &q);
	if (r >= 0)
		r = q.err;
	if (r < 0) {
		nftnl_set_free(s);
		return r;
	}
	*out = s;
	return 0;
}

struct del_if {
	struct nftnl_set *all;
	const char *ifname;
};

/* The elements of d->all whose key starts with the interface name. */
static int fill_del_if(struct nftnl_set *s, const void *ud)
{
	const struct del_if *d = ud;
	uint8_t want[KEY_IF];
	key_if(want, d->ifname);
	int n = 0;
	struct nftnl_set_elems_iter *it = nftnl_set_elems_iter_create(d->all);
	if (!it)
		return -ENOMEM;
	/* iter_next hands out the current element, then moves on */
	for (struct nftnl_set_elem *e; (e = nftnl_set_elems_iter_next(it));) {
		uint32_t len = 0, elen = 0;
		const uint8_t *k = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
		const uint8_t *ke = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY_END, &elen);
		if (!k || len < KEY_IF || memcmp(k, want, KEY_IF))
			continue;
		struct nftnl_set_elem *c = elem_new(k, len, ke && elen == len ? ke : NULL);
		if (!c) {
			nftnl_set_elems_iter_destroy(it);
			return -ENOMEM;
		}
		nftnl_set_elem_add(s, c);
		n++;
	}
	nftnl_set_elems_iter_destroy(it);
	return n > 0;
}

/* Every element of set for ifname, read back and deleted. */
static int purge_set(struct nft *n, const char *set, const char *ifname)
{
	struct nftnl_set *all = NULL;
	int r = elems_get(n, set, &all);
	if (r >= 0) {
		struct del_if d = { all, ifname };
		batch_begin(n);
		r = elems_msg(n, NFT_MSG_DELSETELEM, set, fill_del_if, &d);
		r = r < 0 ? r : batch_commit(n);
		nftnl_set_free(all);
	}
	return r == -ENOENT ? 0 : r; /* expired meanwhile, or no table */
}

int nft_learned_flush(struct nft *n, const char *ifname, abox_error *err)
{
	int r = purge_set(n, "learned4", ifname);
	return r < 0 ? abox_error_set(err, -r, "nftables: forget the learned addresses of '%s'", ifname) : 0;
}

int nft_sandbox_purge(struct nft *n, const char *ifname, abox_error *err)
{
	static const char *const sets[] = { "allow4",   "deny4", "denyall", "proxied",
					    "learned4", "sbx",   "ifaces" };
	for (size_t i = 0; i < ELEMENTSOF(sets); i++) {
		int r = purge_set(n, sets[i], ifname);
		if (r < 0)
			return abox_error_set(err, -r, "nftables: remove the elements of '%s' from set %s",
					      ifname, sets[i]);
	}
	return 0;
}

int nft_ifaces(struct nft *n, char ***out, abox_error *err)
{
	struct nftnl_set *all = NULL;
	int r = elems_get(n, "ifaces", &all);
	if (r == -ENOENT) {
		*out = calloc(1, sizeof(char *));
		return *out ? 0 : abox_error_set(err, ENOMEM, "nftables");
	}
	if (r < 0)
		return abox_error_set(err, -r, "nftables: list the sandboxes of table '%s'", n->table);
	size_t cnt = 0, cap = 8;
	char **v = calloc(cap + 1, sizeof(char *));
	struct nftnl_set_elems_iter *it = v ? nftnl_set_elems_iter_create(all) : NULL;
	r = it ? 0 : -ENOMEM;
	for (struct nftnl_set_elem *e; r >= 0 && it && (e = nftnl_set_elems_iter_next(it));) {
		uint32_t len = 0;
		const char *k = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
		if (!k || len != KEY_IF)
			continue;
		if (cnt == cap) {
			char **nv = realloc(v, (cap * 2 + 1) * sizeof(char *));
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
			cap *= 2;
		}
		if (!(v[cnt] = strndup(k, KEY_IF)))
			r = -ENOMEM;
		else
			v[++cnt] = NULL;
	}
	if (it)
		nftnl_set_elems_iter_destroy(it);
	nftnl_set_free(all);
	if (r < 0) {
		strv_free(v);
		return abox_error_set(err, -r, "nftables: list the sandboxes");
	}
	*out = v;
	return 0;
}

struct counters_q {
	uint64_t *packets;
	int err;
};

static int counter_cb(const struct nlmsghdr *h, void *data)
{
	struct counters_q *q = data;
	struct nftnl_obj *o = nftnl_obj_alloc();
	if (!o || nftnl_obj_nlmsg_parse(h, o) < 0) {
		q->err = -EPROTO;
	} else {
		const char *name = nftnl_obj_get_str(o, NFTNL_OBJ_NAME);
		for (size_t i = 0; name && i < ELEMENTSOF(nft_refusals); i++)
			if (!strcmp(name, nft_refusals[i]))
				q->packets[i] = nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_PKTS);
	}
	if (o)
		nftnl_obj_free(o);
	return MNL_CB_OK;
}

int nft_refusal_counts(struct nft *n, uint64_t packets[4], abox_error *err)
{
	memset(packets, 0, 4 * sizeof(*packets));
	struct nftnl_obj *o = nftnl_obj_alloc();
	if (!o)
		return abox_error_set(err, ENOMEM, "nftables");
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, n->table);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
	char buf[NL_RECV_BUF];
	struct nlmsghdr *h = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETOBJ, NFPROTO_INET, NLM_F_DUMP, n->seq++);
	nftnl_obj_nlmsg_build_payload(h, o);
	nftnl_obj_free(o);
	struct counters_q q = { packets, 0 };
	int r = request(n, h, counter_cb, &q);
	if (r >= 0)
		r = q.err;
	if (r == -ENOENT)
		return 0;
	return r < 0 ? abox_error_set(err, -r, "nftables: read the refusal counters") : 0;
}

/* ---- conntrack ------------------------------------------------------------ */

int nft_ct_flush(uint32_t addr, abox_error *err)
{
	struct mnl_socket *s = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!s)
		return abox_error_set(err, errno, "conntrack: open a netlink socket");
	int r = 0;
	if (mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) {
		r = -errno;
		goto out;
	}
	char buf[NL_RECV_BUF];
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_DELETE;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	h->nlmsg_seq = (uint32_t)time(NULL);
	struct nfgenmsg *g = mnl_nlmsg_put_extra_header(h, sizeof(*g));
	g->nfgen_family = AF_INET;
	g->version = NFNETLINK_V0;
	/* without a tuple, a delete flushes every entry matching the mark:
	 * the flows marked with this sandbox's address in prerouting */
	uint32_t mark;
	memcpy(&mark, &addr, 4);
	mnl_attr_put_u32(h, CTA_MARK, htonl(mark));
	mnl_attr_put_u32(h, CTA_MARK_MASK, htonl(0xffffffffu));
	if (mnl_socket_sendto(s, h, h->nlmsg_len) < 0) {
		r = -errno;
		goto out;
	}
	ssize_t got = mnl_socket_recvfrom(s, buf, sizeof(buf));
	if (got < 0)
		r = -errno;
	else if (mnl_cb_run(buf, (size_t)got, h->nlmsg_seq, mnl_socket_get_portid(s), NULL, NULL) < 0)
		r = -errno;
out:
	mnl_socket_close(s);
	/* no conntrack module loaded: no entries either */
	if (r == -ENOENT || r == -EOPNOTSUPP || r == -EPROTONOSUPPORT)
		r = 0;
	return r < 0 ? abox_error_set(err, -r, "conntrack: flush the flows of a sandbox") : 0;
}
