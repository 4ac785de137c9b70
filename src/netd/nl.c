/* netd/nl.c — rtnetlink requests with libmnl (see nl.h). Each request is
 * one message and its acknowledgement; what fails carries the kernel's
 * errno and names the link it was about. */
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/ip.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <string.h>
#include <time.h>

#include "nl.h"

#define NL_BUF (MNL_SOCKET_BUFFER_SIZE < 8192 ? 8192 : MNL_SOCKET_BUFFER_SIZE)

int nl_open(struct nl *nl, abox_error *err)
{
	memset(nl, 0, sizeof(*nl));
	nl->sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl->sock)
		return abox_error_set(err, errno, "net: open a route netlink socket");
	if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		int e = errno;
		nl_close(nl);
		return abox_error_set(err, e, "net: bind a route netlink socket");
	}
	nl->portid = mnl_socket_get_portid(nl->sock);
	nl->seq = (uint32_t)time(NULL);
	return 0;
}

void nl_close(struct nl *nl)
{
	if (nl->sock)
		mnl_socket_close(nl->sock);
	nl->sock = NULL;
}

static struct nlmsghdr *msg_new(struct nl *nl, char *buf, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = ++nl->seq;
	return h;
}

/* Sends h and runs cb on every answer until the acknowledgement (or the
 * end of a dump). 0 or -errno of the kernel's answer. */
static int talk(struct nl *nl, struct nlmsghdr *h, mnl_cb_t cb, void *data)
{
	if (mnl_socket_sendto(nl->sock, h, h->nlmsg_len) < 0)
		return -errno;
	char buf[NL_BUF];
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl->sock, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		int r = mnl_cb_run(buf, (size_t)n, h->nlmsg_seq, nl->portid, cb, data);
		if (r < 0)
			return -errno;
		if (r == MNL_CB_STOP)
			return 0;
	}
}

static struct ifinfomsg *put_ifinfo(struct nlmsghdr *h, int index)
{
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(h, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = index;
	return ifi;
}

int nl_veth_new(struct nl *nl, const char *host_if, const char *peer_if, int peer_netns_fd, abox_error *err)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = msg_new(nl, buf, RTM_NEWLINK, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
	put_ifinfo(h, 0);
	mnl_attr_put_strz(h, IFLA_IFNAME, host_if);
	struct nlattr *info = mnl_attr_nest_start(h, IFLA_LINKINFO);
	mnl_attr_put_strz(h, IFLA_INFO_KIND, "veth");
	struct nlattr *data = mnl_attr_nest_start(h, IFLA_INFO_DATA);
	struct nlattr *peer = mnl_attr_nest_start(h, VETH_INFO_PEER);
	/* the peer's own ifinfomsg comes first inside VETH_INFO_PEER */
	put_ifinfo(h, 0);
	mnl_attr_put_strz(h, IFLA_IFNAME, peer_if);
	mnl_attr_put_u32(h, IFLA_NET_NS_FD, (uint32_t)peer_netns_fd);
	mnl_attr_nest_end(h, peer);
	mnl_attr_nest_end(h, data);
	mnl_attr_nest_end(h, info);
	int r = talk(nl, h, NULL, NULL);
	if (r < 0)
		return abox_error_set(err, -r, "net: make the veth pair '%s'", host_if);
	return 0;
}

struct link_q {
	int index;
	const char *name;
	struct nl_link_stats *stats;
	char **names;
	size_t n, cap;
	int oom;
	struct nl_link_stats *sum; /* a dump's links named prefix*, added up */
	unsigned summed;
};

static int link_cb(const struct nlmsghdr *h, void *data)
{
	struct link_q *q = data;
	struct ifinfomsg *ifi = mnl_nlmsg_get_payload(h);
	struct nlattr *a;
	const char *name = NULL;
	struct rtnl_link_stats64 last = { 0 };
	bool have_stats = false;
	mnl_attr_for_each(a, h, sizeof(*ifi))
	{
		uint16_t t = mnl_attr_get_type(a);
		if (t == IFLA_IFNAME && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
			name = mnl_attr_get_str(a);
		else if (t == IFLA_STATS64 && (q->stats || q->sum) &&
			 mnl_attr_get_payload_len(a) >= sizeof(struct rtnl_link_stats64)) {
			struct rtnl_link_stats64 s;
			memcpy(&s, mnl_attr_get_payload(a), sizeof(s));
			if (q->stats) {
				q->stats->rx_bytes = s.rx_bytes;
				q->stats->tx_bytes = s.tx_bytes;
				q->stats->rx_packets = s.rx_packets;
				q->stats->tx_packets = s.tx_packets;
			}
			last = s;
			have_stats = true;
		}
	}
	if (q->sum && have_stats && name && !strncmp(name, q->name, strlen(q->name))) {
		q->sum->rx_bytes += last.rx_bytes;
		q->sum->tx_bytes += last.tx_bytes;
		q->sum->rx_packets += last.rx_packets;
		q->sum->tx_packets += last.tx_packets;
		q->summed++;
	}
	q->index = ifi->ifi_index;
	if (q->names && name && !strncmp(name, q->name, strlen(q->name))) {
		if (q->n + 2 > q->cap) {
			size_t cap = q->cap ? q->cap * 2 : 16;
			char **v = realloc(q->names, cap * sizeof(*v));
			if (!v) {
				q->oom = 1;
				return MNL_CB_OK;
			}
			q->names = v;
			q->cap = cap;
		}
		if (!(q->names[q->n] = strdup(name)))
			q->oom = 1;
		else
			q->names[++q->n] = NULL;
	}
	return MNL_CB_OK;
}

static int link_get(struct nl *nl, const char *name, struct link_q *q)
{
	char buf[NL_BUF];
	/* with an acknowledgement after the answer: talk() stops there */
	struct nlmsghdr *h = msg_new(nl, buf, RTM_GETLINK, NLM_F_ACK);
	put_ifinfo(h, 0);
	mnl_attr_put_strz(h, IFLA_IFNAME, name);
	q->index = 0;
	return talk(nl, h, link_cb, q);
}

int nl_link_index(struct nl *nl, const char *name, abox_error *err)
{
	struct link_q q = { 0 };
	int r = link_get(nl, name, &q);
	if (r < 0)
		return abox_error_set(err, -r, "net: find link '%s'", name);
	return q.index > 0 ? q.index : abox_error_setx(err, ENODEV, "net: no link '%s'", name);
}

int nl_link_stats(struct nl *nl, const char *name, struct nl_link_stats *out, abox_error *err)
{
	struct nl_link_stats s = { 0 };
	struct link_q q = { .stats = &s };
	int r = link_get(nl, name, &q);
	if (r < 0)
		return abox_error_set(err, -r, "net: counters of link '%s'", name);
	*out = s;
	return 0;
}

int nl_links_with_prefix(struct nl *nl, const char *prefix, char ***out, abox_error *err)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = msg_new(nl, buf, RTM_GETLINK, NLM_F_DUMP);
	put_ifinfo(h, 0);
	struct link_q q = { .name = prefix };
	q.names = calloc(1, sizeof(char *));
	if (!q.names)
		return abox_error_set(err, ENOMEM, "net: list links");
	q.cap = 1;
	int r = talk(nl, h, link_cb, &q);
	if (r >= 0 && q.oom)
		r = -ENOMEM;
	if (r < 0) {
		strv_free(q.names);
		return abox_error_set(err, -r, "net: list links");
	}
	*out = q.names;
	return 0;
}

int nl_link_up(struct nl *nl, int ifindex, bool forwarding, abox_error *err)
{
	return nl_link_up_as(nl, ifindex, NULL, forwarding, err);
}

int nl_link_up_as(struct nl *nl, int ifindex, const char *name, bool forwarding, abox_error *err)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = msg_new(nl, buf, RTM_NEWLINK, NLM_F_ACK);
	struct ifinfomsg *ifi = put_ifinfo(h, ifindex);
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	if (name)
		mnl_attr_put_strz(h, IFLA_IFNAME, name);
	if (forwarding) {
		/* IPv4's per-interface switches travel as IFLA_INET_CONF, an
		 * array indexed by IPV4_DEVCONF_* */
		struct nlattr *af = mnl_attr_nest_start(h, IFLA_AF_SPEC);
		struct nlattr *in = mnl_attr_nest_start(h, AF_INET);
		struct nlattr *conf = mnl_attr_nest_start(h, IFLA_INET_CONF);
		mnl_attr_put_u32(h, IPV4_DEVCONF_FORWARDING, 1);
		mnl_attr_nest_end(h, conf);
		mnl_attr_nest_end(h, in);
		mnl_attr_nest_end(h, af);
	}
	int r = talk(nl, h, NULL, NULL);
	if (r < 0)
		return name ? abox_error_set(err, -r, "net: bring link %d up as '%s'", ifindex, name)
			    : abox_error_set(err, -r, "net: bring link %d up", ifindex);
	return 0;
}

int nl_link_del(struct nl *nl, const char *name, abox_error *err)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = msg_new(nl, buf, RTM_DELLINK, NLM_F_ACK);
	put_ifinfo(h, 0);
	mnl_attr_put_strz(h, IFLA_IFNAME, name);
	int r = talk(nl, h, NULL, NULL);
	if (r == -ENODEV)
		return 0;
	if (r < 0)
		return abox_error_set(err, -r, "net: delete link '%s'", name);
	return 0;
}

int nl_addr_add(struct nl *nl, int ifindex, uint32_t addr, unsigned prefix, abox_error *err)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = msg_new(nl, buf, RTM_NEWADDR, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(h, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = (uint8_t)prefix;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = (uint32_t)ifindex;
	mnl_attr_put_u32(h, IFA_LOCAL, addr);
	mnl_attr_put_u32(h, IFA_ADDRESS, addr);
	int r = talk(nl, h, NULL, NULL);
	if (r < 0) {
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &addr, a, sizeof(a));
		return abox_error_set(err, -r, "net: add address %s/%u", a, prefix);
	}
	return 0;
}

int nl_route_default(struct nl *nl, int ifindex, uint32_t gw, abox_error *err)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = msg_new(nl, buf, RTM_NEWROUTE, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
	struct rtmsg *rt = mnl_nlmsg_put_extra_header(h, sizeof(*rt));
	rt->rtm_family = AF_INET;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_STATIC;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	mnl_attr_put_u32(h, RTA_GATEWAY, gw);
	mnl_attr_put_u32(h, RTA_OIF, (uint32_t)ifindex);
	int r = talk(nl, h, NULL, NULL);
	if (r < 0)
		return abox_error_set(err, -r, "net: add the default route");
	return 0;
}

struct route_q {
	int oif;
	uint32_t prio;
};

static int route_cb(const struct nlmsghdr *h, void *data)
{
	struct route_q *q = data;
	struct rtmsg *rt = mnl_nlmsg_get_payload(h);
	if (rt->rtm_family != AF_INET || rt->rtm_dst_len != 0 || rt->rtm_table != RT_TABLE_MAIN ||
	    rt->rtm_type != RTN_UNICAST)
		return MNL_CB_OK;
	int oif = 0;
	uint32_t prio = 0;
	struct nlattr *a;
	mnl_attr_for_each(a, h, sizeof(*rt))
	{
		if (mnl_attr_get_type(a) == RTA_OIF && mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
			oif = (int)mnl_attr_get_u32(a);
		else if (mnl_attr_get_type(a) == RTA_PRIORITY && mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
			prio = mnl_attr_get_u32(a);
	}
	/* the route with the lowest metric wins, as the kernel picks it */
	if (oif > 0 && (!q->oif || prio < q->prio)) {
		q->oif = oif;
		q->prio = prio;
	}
	return MNL_CB_OK;
}

int nl_default_uplink(struct nl *nl, char *name, abox_error *err)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = msg_new(nl, buf, RTM_GETROUTE, NLM_F_DUMP);
	struct rtmsg *rt = mnl_nlmsg_put_extra_header(h, sizeof(*rt));
	rt->rtm_family = AF_INET;
	struct route_q q = { 0 };
	int r = talk(nl, h, route_cb, &q);
	if (r < 0)
		return abox_error_set(err, -r, "net: read the routing table");
	if (!q.oif)
		return abox_error_setx(
			err, ENETUNREACH,
			"net: this host has no IPv4 default route to send sandboxes' traffic by");
	if (!if_indextoname((unsigned)q.oif, name))
		return abox_error_set(err, errno, "net: name of link %d", q.oif);
	return 0;
}

int nl_links_stats_sum(struct nl *nl, const char *prefix, struct nl_link_stats *sum, unsigned *count,
		       abox_error *err)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = msg_new(nl, buf, RTM_GETLINK, NLM_F_DUMP);
	put_ifinfo(h, 0);
	struct nl_link_stats total = { 0 };
	struct link_q q = { .name = prefix, .sum = &total };
	int r = talk(nl, h, link_cb, &q);
	if (r < 0)
		return abox_error_set(err, -r, "net: counters of links");
	*sum = total;
	*count = q.summed;
	return 0;
}

int nl_link_no_ipv6(struct nl *nl, int ifindex, abox_error *err)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = msg_new(nl, buf, RTM_NEWLINK, NLM_F_ACK);
	put_ifinfo(h, ifindex);
	struct nlattr *af = mnl_attr_nest_start(h, IFLA_AF_SPEC);
	struct nlattr *in6 = mnl_attr_nest_start(h, AF_INET6);
	mnl_attr_put_u8(h, IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE);
	mnl_attr_nest_end(h, in6);
	mnl_attr_nest_end(h, af);
	int r = talk(nl, h, NULL, NULL);
	/* a kernel without IPv6 has nothing to turn off */
	if (r < 0 && r != -EAFNOSUPPORT && r != -EOPNOTSUPP)
		return abox_error_set(err, -r, "net: turn IPv6 off on link %d", ifindex);
	return 0;
}
