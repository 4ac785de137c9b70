/* netd/nft.c — abox's nftables table through libnftnl (see nft.h for what
 * the rules do and why): the socket, batches, the table with its sets,
 * chains and counters, and the refusal counts. The rules themselves are
 * nft_rules.c's, sandboxes' elements nft_elems.c's. Messages go in one
 * batch per change; the kernel handles a batch inside sendmsg, so every
 * answer is queued by the time it returns and is read without waiting. */
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

#include "nft_internal.h"

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

void nft_batch_begin(struct nft *n)
{
	if (n->b)
		mnl_nlmsg_batch_stop(n->b);
	/* leave room for the largest single message past the limit */
	n->b = mnl_nlmsg_batch_start(n->buf, n->cap / 2);
	nftnl_batch_begin(mnl_nlmsg_batch_current(n->b), n->seq++);
	mnl_nlmsg_batch_next(n->b);
}

struct nlmsghdr *nft_batch_msg(struct nft *n, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *h = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(n->b), type, NFPROTO_INET,
						   flags | NLM_F_ACK, n->seq++);
	return h;
}

void nft_batch_next(struct nft *n)
{
	mnl_nlmsg_batch_next(n->b);
}

/* Sends the batch: 0, or the first error the kernel answered (the batch
 * is then undone whole). */
int nft_batch_commit(struct nft *n)
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

/* Sends one nft_request (no batch) and hands every answer to cb. */
int nft_request(struct nft *n, struct nlmsghdr *h, mnl_cb_t cb, void *data)
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

/* ---- the table ---------------------------------------------------------- */

static int table_msg(struct nft *n, uint16_t type, uint16_t flags)
{
	struct nftnl_table *t = nftnl_table_alloc();
	if (!t)
		return -ENOMEM;
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, n->table);
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
	struct nlmsghdr *h = nft_batch_msg(n, type, flags);
	nftnl_table_nlmsg_build_payload(h, t);
	nft_batch_next(n);
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
	struct nlmsghdr *h = nft_batch_msg(n, NFT_MSG_NEWCHAIN, NLM_F_CREATE);
	nftnl_chain_nlmsg_build_payload(h, c);
	nft_batch_next(n);
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
	struct nlmsghdr *h = nft_batch_msg(n, NFT_MSG_NEWOBJ, NLM_F_CREATE);
	nftnl_obj_nlmsg_build_payload(h, o);
	nft_batch_next(n);
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

struct nftnl_set *nft_set_new(struct nft *n, const char *name)
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
	struct nftnl_set *s = nft_set_new(n, name);
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
	struct nlmsghdr *h = nft_batch_msg(n, NFT_MSG_NEWSET, NLM_F_CREATE);
	nftnl_set_nlmsg_build_payload(h, s);
	nft_batch_next(n);
	nftnl_set_free(s);
	return 0;
}

static int marker_cb(const struct nlmsghdr *h, void *data)
{
	(void)h;
	*(bool *)data = true;
	return MNL_CB_OK;
}

int nft_table_present(struct nft *n, abox_error *err)
{
	struct nftnl_set *s = nft_set_new(n, MARKER);
	if (!s)
		return abox_error_set(err, ENOMEM, "nftables");
	char buf[NL_RECV_BUF];
	struct nlmsghdr *h = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSET, NFPROTO_INET, NLM_F_ACK, n->seq++);
	nftnl_set_nlmsg_build_payload(h, s);
	nftnl_set_free(s);
	bool found = false;
	int r = nft_request(n, h, marker_cb, &found);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return abox_error_set(err, -r, "nftables: look for table '%s'", n->table);
	return found;
}

int nft_table_remove(struct nft *n, abox_error *err)
{
	nft_batch_begin(n);
	int r = table_msg(n, NFT_MSG_DELTABLE, 0);
	if (r >= 0)
		r = nft_batch_commit(n);
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
	nft_batch_begin(n);
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
		r = nft_elems_msg(n, NFT_MSG_NEWSETELEM, "always4", nft_fill_always, NULL);
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
		nft_rules(n, c, &r);
	if (r >= 0)
		r = nft_batch_commit(n);
	else
		mnl_nlmsg_batch_stop(n->b), n->b = NULL;
	if (r == -EEXIST)
		return 0; /* another abox made it meanwhile */
	if (r < 0)
		return abox_error_set(err, -r, "nftables: make table '%s'", n->table);
	return 1;
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
	int r = nft_request(n, h, counter_cb, &q);
	if (r >= 0)
		r = q.err;
	if (r == -ENOENT)
		return 0;
	return r < 0 ? abox_error_set(err, -r, "nftables: read the refusal counters") : 0;
}
