/* netd/nft_rules.c — the ruleset of abox's table (nft.h says what it
 * does and why), built as libnftnl expressions: a few builders, the
 * matches they make up, then the chains' rules in order. */
#include <arpa/inet.h>
#include <stdio.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <netinet/in.h>
#include <string.h>

#include "net/config.h"
#include "nft_internal.h"

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
		struct nlmsghdr *h = nft_batch_msg(c->n, NFT_MSG_NEWRULE, NLM_F_APPEND | NLM_F_CREATE);
		nftnl_rule_nlmsg_build_payload(h, b->r);
		nft_batch_next(c->n);
	}
	if (b->r)
		nftnl_rule_free(b->r);
	b->r = NULL;
}

/* ---- the ruleset -------------------------------------------------------- */

void nft_rules(struct nft *n, const struct nft_table_cfg *c, int *err)
{
	struct nftnl_rule_ctx x = { .n = n };
	struct rb b;
	uint8_t tcp = IPPROTO_TCP, udp = IPPROTO_UDP;
	char up[KEY_IF];
	nft_key_if((uint8_t *)up, c->uplink);

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
	/* Fail closed: a sandbox's veth (or a spare's) that is no member of
	 * @ifaces — its elements missing, whatever the reason — would pass
	 * every chain below unjudged, to the internet and to the host alike.
	 * Its packets go nowhere. */
	static const char *const ours[] = { NET_IF_PREFIX, NET_SPARE_PREFIX };
	for (size_t i = 0; i < ELEMENTSOF(ours); i++) {
		b = rule_new();
		e_meta(&b, NFT_META_IIFNAME, R1);
		e_cmp(&b, R1, NFT_CMP_EQ, ours[i], (uint32_t)strlen(ours[i]));
		e_lookup(&b, R1, "ifaces", true);
		e_verdict(&b, NF_DROP, NULL);
		rule_emit(&x, &b);
	}
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
