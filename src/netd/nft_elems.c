/* netd/nft_elems.c — sandboxes in abox's table: their elements added,
 * replaced and removed in one batch each, learned addresses, sets read
 * back (purges, reconciling), and their conntrack entries flushed. */
#include <arpa/inet.h>
#include <stdio.h>
#include <libnftnl/set.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>

#include "nft_internal.h"

/* ---- elements ----------------------------------------------------------- */

void nft_key_if(uint8_t *k, const char *ifname)
{
	memset(k, 0, KEY_IF);
	strncpy((char *)k, ifname, KEY_IF - 1);
}

struct nftnl_set_elem *nft_elem_new(const void *key, uint32_t len, const void *key_end)
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
	nft_key_if(k, ifname);
	struct nftnl_set_elem *e = nft_elem_new(k, KEY_IF, NULL);
	if (!e)
		return -ENOMEM;
	nftnl_set_elem_add(s, e);
	return 0;
}

static int elem_if_addr(struct nftnl_set *s, const char *ifname, uint32_t addr, uint64_t timeout_ms)
{
	uint8_t k[KEY_IF_ADDR];
	nft_key_if(k, ifname);
	memcpy(k + KEY_IF, &addr, 4);
	struct nftnl_set_elem *e = nft_elem_new(k, KEY_IF_ADDR, NULL);
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
	nft_key_if(k, ifname);
	nft_key_if(ke, ifname);
	uint32_t first = htonl(r->first), last = htonl(r->last);
	memcpy(k + KEY_IF, &first, 4);
	memcpy(ke + KEY_IF, &last, 4);
	struct nftnl_set_elem *e = nft_elem_new(k, KEY_IF_ADDR, ke);
	if (!e)
		return -ENOMEM;
	nftnl_set_elem_add(s, e);
	return 0;
}

/* One element message for set name, filled by fill. */
int nft_elems_msg(struct nft *n, uint16_t type, const char *name,
		  int (*fill)(struct nftnl_set *s, const void *ud), const void *ud)
{
	struct nftnl_set *s = nft_set_new(n, name);
	if (!s)
		return -ENOMEM;
	int r = fill(s, ud);
	if (r > 0) {
		struct nlmsghdr *h = nft_batch_msg(n, type, type == NFT_MSG_NEWSETELEM ? NLM_F_CREATE : 0);
		nftnl_set_elems_nlmsg_build_payload(h, s);
		nft_batch_next(n);
		r = 0;
	}
	nftnl_set_free(s);
	return r;
}

/* The always-denied ranges as an interval set: a start element and, past
 * the end, an interval-end one (ranges that touch are merged first, or
 * one's end would be the next one's start). */
int nft_fill_always(struct nftnl_set *s, const void *ud)
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
		struct nftnl_set_elem *e = nft_elem_new(&a, 4, NULL);
		if (!e)
			return -ENOMEM;
		nftnl_set_elem_add(s, e);
		if (v[i].last == 0xffffffffu)
			continue;
		uint32_t end = htonl(v[i].last + 1);
		if (!(e = nft_elem_new(&end, 4, NULL)))
			return -ENOMEM;
		nftnl_set_elem_set_u32(e, NFTNL_SET_ELEM_FLAGS, NFT_SET_ELEM_INTERVAL_END);
		nftnl_set_elem_add(s, e);
	}
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
		r = nft_elems_msg(n, type, sandbox_sets[w], fill_sandbox, &f);
	}
	return r;
}

int nft_sandbox_add(struct nft *n, const struct nft_sandbox *s, abox_error *err)
{
	nft_batch_begin(n);
	int r = sandbox_msgs(n, NFT_MSG_NEWSETELEM, s, true);
	r = r < 0 ? r : nft_batch_commit(n);
	if (r < 0)
		return abox_error_set(err, -r, "nftables: add sandbox '%s'", s->ifname);
	return 0;
}

/* Deletes with "destroy" (no error for what is already gone); a kernel
 * that predates it gets deletes one set at a time, missing ones skipped. */
static int del_elems(struct nft *n, const struct nft_sandbox *s, bool whole)
{
	nft_batch_begin(n);
	int r = sandbox_msgs(n, NFT_MSG_DESTROYSETELEM, s, whole);
	r = r < 0 ? r : nft_batch_commit(n);
	if (r != -EINVAL && r != -EOPNOTSUPP)
		return r;
	r = 0;
	for (int w = whole ? F_IFACES : F_ALLOW; w <= F_PROXIED; w++) {
		struct fill f = { s, w };
		nft_batch_begin(n);
		int e = nft_elems_msg(n, NFT_MSG_DELSETELEM, sandbox_sets[w], fill_sandbox, &f);
		e = e < 0 ? e : nft_batch_commit(n);
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

struct learned {
	const char *ifname;
	const uint32_t *addrs;
	size_t n;
	uint64_t timeout;
};

static int fill_learned(struct nftnl_set *s, const void *ud);

#ifndef NFT_MSG_DESTROYSETELEM
#define NFT_MSG_DESTROYSETELEM 30 /* Linux 6.3's uapi; older headers lack it */
#endif

/* old's elements out and cur's in, and forget's learned addresses out
 * when given, committed as one transaction. */
static int replace_batch(struct nft *n, const struct nft_sandbox *old, const struct nft_sandbox *cur,
			 const struct learned *forget)
{
	nft_batch_begin(n);
	int r = sandbox_msgs(n, NFT_MSG_DELSETELEM, old, false);
	if (r >= 0)
		r = sandbox_msgs(n, NFT_MSG_NEWSETELEM, cur, false);
	if (r >= 0 && forget && forget->n)
		r = nft_elems_msg(n, NFT_MSG_DESTROYSETELEM, "learned4", fill_learned, forget);
	return r < 0 ? r : nft_batch_commit(n);
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
	int r = replace_batch(n, old, cur, NULL);
	if (r == -ENOENT) {
		/* the old elements were not all there (a crash between two
		 * changes): clear what is, then add */
		if ((r = del_elems(n, old, false)) >= 0) {
			nft_batch_begin(n);
			r = sandbox_msgs(n, NFT_MSG_NEWSETELEM, cur, false);
			r = r < 0 ? r : nft_batch_commit(n);
		}
	}
	if (r < 0)
		return abox_error_set(err, -r, "nftables: change the policy of '%s'", cur->ifname);
	return 0;
}

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
	nft_batch_begin(n);
	/* NEWSETELEM without EXCL refreshes an element that is there */
	int r = nft_elems_msg(n, NFT_MSG_NEWSETELEM, "learned4", fill_learned, &l);
	r = r < 0 ? r : nft_batch_commit(n);
	return r < 0 ? abox_error_set(err, -r, "nftables: learn addresses for '%s'", ifname) : 0;
}

int nft_sandbox_replace_forget(struct nft *n, const struct nft_sandbox *old, const struct nft_sandbox *cur,
			       const uint32_t *learned, size_t nlearned)
{
	struct learned l = { cur->ifname, learned, nlearned, 0 };
	return replace_batch(n, old, cur, &l);
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
	struct nftnl_set *s = nft_set_new(n, name);
	if (!s)
		return -ENOMEM;
	char buf[NL_RECV_BUF];
	struct nlmsghdr *h =
		nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM, NFPROTO_INET, NLM_F_DUMP, n->seq++);
	nftnl_set_elems_nlmsg_build_payload(h, s);
	struct elems_q q = { s, 0 };
	int r = nft_request(n, h, elems_cb, &q);
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
	nft_key_if(want, d->ifname);
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
		struct nftnl_set_elem *c = nft_elem_new(k, len, ke && elen == len ? ke : NULL);
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
		nft_batch_begin(n);
		r = nft_elems_msg(n, NFT_MSG_DELSETELEM, set, fill_del_if, &d);
		r = r < 0 ? r : nft_batch_commit(n);
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
