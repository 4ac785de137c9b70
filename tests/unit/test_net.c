/* Egress: the policy as E2B's rules make it (src/lib/net/policy.c), the
 * host's network config, and abox-netd's readers of untrusted bytes: DNS
 * messages (src/netd/dns.c), the first bytes of a connection
 * (src/netd/sni.c) and the requests of the relay (src/netd/relay_parse.c). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dns.h"
#include "net/config.h"
#include "net/policy.h"
#include "net/slots.h"
#include "relay_parse.h"
#include "sni.h"

static uint32_t ip(const char *s)
{
	struct in_addr a;
	cr_assert(inet_pton(AF_INET, s, &a) == 1);
	return a.s_addr;
}

static int make(const char *const *allow, const char *const *deny, struct net_policy *p, abox_error *e)
{
	*e = (abox_error)ABOX_ERROR_INIT;
	return net_policy_make(NET_MODE_FILTERED, allow, deny, p, e);
}

Test(policy, e2b_validation_texts)
{
	static const struct {
		const char *allow[3], *deny[3], *text;
	} bad[] = {
		{ { NULL }, { "example.com", NULL }, "invalid denied CIDR example.com" },
		{ { NULL }, { "10.0.0.0/33", NULL }, "invalid denied CIDR 10.0.0.0/33" },
		{ { NULL }, { "0.0.0.0", NULL }, "invalid denied CIDR 0.0.0.0" },
		{ { NULL }, { "0.0.0.0/8", NULL }, "invalid denied CIDR 0.0.0.0/8" },
		{ { "0.0.0.0", NULL }, { NULL }, "invalid allowed address 0.0.0.0" },
		{ { "1.2.3.4/40", NULL }, { NULL }, "invalid allowed address 1.2.3.4/40" },
		{ { "example.com", NULL },
		  { "10.0.0.0/8", NULL },
		  "When specifying allowed domains in allow out, you must include 'ALL_TRAFFIC' in deny out "
		  "to block all other traffic." },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct net_policy p;
		abox_error e;
		cr_expect_eq(make(bad[i].allow, bad[i].deny, &p, &e), -EINVAL, "case %zu accepted", i);
		cr_expect_str_eq(e.msg, bad[i].text, "case %zu", i);
	}
}

Test(policy, what_e2b_accepts)
{
	/* host bits set in a block, IPv6, names that can never match, "*" */
	const char *allow[] = { "10.1.2.3/8", "2001:db8::/32", "example.*", "*", "*.ok.test", NULL };
	const char *deny[] = { "0.0.0.0/0", "::1", NULL };
	struct net_policy p;
	abox_error e;
	cr_assert_eq(make(allow, deny, &p, &e), 0, "%s", e.msg);
	cr_expect(p.deny_all);
	cr_expect_eq(p.nallow4, 1);
	cr_expect_eq(p.nnames, 3);
	net_policy_free(&p);
	cr_expect_eq(net_policy_make(NET_MODE_OPEN, allow, NULL, &p, &e), -EINVAL, "lists with mode open");
	cr_expect_eq(net_policy_make(NET_MODE_NONE, NULL, deny, &p, &e), -EINVAL, "lists with mode none");
}

Test(policy, names_match_as_e2b)
{
	const char *allow[] = { "Example.COM", "*.api.test", NULL };
	const char *deny[] = { "0.0.0.0/0", NULL };
	struct net_policy p;
	abox_error e;
	cr_assert_eq(make(allow, deny, &p, &e), 0, "%s", e.msg);
	cr_expect(net_policy_name_listed(&p, "example.com"));
	cr_expect(net_policy_name_listed(&p, "EXAMPLE.com."), "any case, and the trailing dot of DNS");
	cr_expect(!net_policy_name_listed(&p, "www.example.com"), "an exact name is only itself");
	cr_expect(net_policy_name_listed(&p, "v1.api.test"));
	cr_expect(net_policy_name_listed(&p, "a.b.api.test"), "deeper names too");
	cr_expect(!net_policy_name_listed(&p, "api.test"), "*.x is not x itself");
	cr_expect(!net_policy_name_listed(&p, "evilapi.test"), "a suffix of a label is not a name below");
	cr_expect(!net_policy_name_allowed(&p, "other.test"), "deny all: what is not listed");
	net_policy_free(&p);
}

Test(policy, addresses_allow_wins)
{
	const char *allow[] = { "203.0.113.10", NULL };
	const char *deny[] = { "203.0.113.0/24", NULL };
	struct net_policy p;
	abox_error e;
	cr_assert_eq(make(allow, deny, &p, &e), 0, "%s", e.msg);
	cr_expect(net_policy_addr_allowed(&p, ip("203.0.113.10")));
	cr_expect(!net_policy_addr_allowed(&p, ip("203.0.113.11")));
	cr_expect(net_policy_addr_allowed(&p, ip("198.51.100.1")), "not denied: open");
	cr_expect(net_policy_name_allowed(&p, "anything.test"), "no ALL_TRAFFIC: names are not refused");
	net_policy_free(&p);
	for (const char *const *a = (const char *const[]){ "10.9.9.9", "169.254.169.254", "127.0.0.1",
							   "100.64.1.1", "172.16.0.1", "192.168.1.1",
							   "224.0.0.1", "255.255.255.255", "0.1.2.3", NULL };
	     *a; a++)
		cr_expect(net_addr_always_denied(ip(*a)), "%s is always denied", *a);
	cr_expect(!net_addr_always_denied(ip("203.0.113.10")));
}

Test(policy, stored_form_round_trips)
{
	const char *allow[] = { "allowed.test", "203.0.113.10", NULL };
	const char *deny[] = { "0.0.0.0/0", NULL };
	struct net_policy p, q;
	abox_error e;
	cr_assert_eq(make(allow, deny, &p, &e), 0);
	char *j = net_policy_json(&p);
	cr_assert(j);
	cr_assert_eq(net_policy_parse(j, &q, &e), 0, "%s", e.msg);
	cr_expect_eq(q.mode, NET_MODE_FILTERED);
	cr_expect_str_eq(q.allow_out[0], "allowed.test");
	cr_expect_str_eq(q.deny_out[0], "0.0.0.0/0");
	cr_expect(q.deny_all);
	free(j);
	net_policy_free(&p);
	net_policy_free(&q);
	cr_expect_eq(net_policy_parse("{\"mode\":\"sideways\"}", &q, &e), -EINVAL);
	cr_expect_eq(net_policy_parse("[", &q, &e), -EINVAL);
}

Test(config, pool_and_slots)
{
	char dir[] = "/tmp/abox-netcfg.XXXXXX";
	cr_assert(mkdtemp(dir));
	char p[300];
	snprintf(p, sizeof(p), "%s/network.json", dir);
	FILE *f = fopen(p, "w");
	fputs("{\"pool\":\"10.200.0.0/24\",\"uplink\":\"up0\",\"resolvers\":[\"203.0.113.53:5353\"]}", f);
	fclose(f);
	struct net_config c;
	abox_error e = ABOX_ERROR_INIT;
	cr_assert_eq(net_config_load(dir, &c, &e), 0, "%s", e.msg);
	cr_expect_eq(net_config_slots(&c), 64);
	cr_expect_eq(net_slot_gateway(&c, 3), ip("10.200.0.13"));
	cr_expect_eq(net_slot_address(&c, 3), ip("10.200.0.14"));
	cr_expect_eq(net_slot_of(&c, ip("10.200.0.14")), 3);
	cr_expect_eq(net_slot_of(&c, ip("10.201.0.1")), -1);
	cr_expect_str_eq(c.uplink, "up0");
	cr_expect_eq(c.resolver_ports[0], 5353);
	f = fopen(p, "w");
	fputs("{\"pool\":\"10.200.0.0/31\"}", f);
	fclose(f);
	cr_expect_eq(net_config_load(dir, &c, &e), -EINVAL, "a pool smaller than a /30");
	cr_expect(strstr(e.msg, "pool"), "%s", e.msg);
	f = fopen(p, "w");
	fputs("{\"uplnk\":\"x\"}", f);
	fclose(f);
	cr_expect_eq(net_config_load(dir, &c, &e), -EINVAL, "an unknown key");
	cr_expect(strstr(e.msg, "uplnk"), "%s", e.msg);
	unlink(p);
	rmdir(dir);
}

static bool busy_7(uint32_t slot)
{
	return slot == 7;
}

/* The slots abox-netd takes for creators: picked (never one that has a
 * file or that netd picked already), recorded whole where none was, or
 * through a file made ahead; files made ahead are cleared, slots not. */
Test(slots, pick_record_premade)
{
	char dir[] = "/tmp/abox-netslots.XXXXXX";
	cr_assert(mkdtemp(dir));
	struct net_config c = { 0 };
	c.pool = ip("10.200.0.0");
	c.pool_prefix = 29; /* two slots: 0 and 1 */
	cr_assert_eq(net_config_slots(&c), 2);
	abox_error e = ABOX_ERROR_INIT;
	const char *pol = "{\"mode\":\"open\",\"allowOut\":[],\"denyOut\":[]}";
	const char *a = "aaaaaaaaaaaaaaaaaaaa", *b = "bbbbbbbbbbbbbbbbbbbb";
	uint32_t s0, s1;
	cr_assert_eq(net_slot_pick(dir, &c, NULL, &s0, &e), 0, "%s", e.msg);
	cr_assert_eq(net_slot_record(dir, s0, a, pol, &e), 0, "%s", e.msg);
	cr_expect_eq(net_slot_record(dir, s0, b, pol, &e), -EEXIST,
		     "a slot recorded already is not taken again");
	cr_assert_eq(net_slot_pick(dir, &c, NULL, &s1, &e), 0, "%s", e.msg);
	cr_expect_neq(s1, s0, "a recorded slot is never picked");
	char id[ABOX_ID_LEN + 1];
	char *got = NULL;
	cr_assert_eq(net_slot_read(dir, s0, id, &got, &e), 0, "%s", e.msg);
	cr_expect_str_eq(id, a);
	cr_expect(strstr(got, "\"open\""), "%s", got);
	free(got);
	/* a file made ahead becomes the slot, whole; used up either way */
	char pre[NET_SLOT_PREMADE_NAME], pre2[NET_SLOT_PREMADE_NAME];
	cr_assert_eq(net_slot_premake(dir, pre, &e), 0, "%s", e.msg);
	cr_assert_eq(net_slot_premake(dir, pre2, &e), 0, "%s", e.msg);
	cr_expect_str_neq(pre, pre2);
	cr_assert_eq(net_slot_record_premade(dir, pre, s1, b, pol, &e), 0, "%s", e.msg);
	cr_assert_eq(net_slot_read(dir, s1, id, NULL, &e), 0, "%s", e.msg);
	cr_expect_str_eq(id, b);
	cr_expect_eq(net_slot_record_premade(dir, pre2, s0, b, pol, &e), -EEXIST, "never over a slot");
	cr_assert_eq(net_slot_read(dir, s0, id, NULL, &e), 0, "%s", e.msg);
	cr_expect_str_eq(id, a, "the slot there kept its holder");
	char p[400];
	snprintf(p, sizeof(p), "%s/net/slots/%s", dir, pre2);
	cr_expect_eq(access(p, F_OK), -1, "the file made ahead went with the refusal");
	cr_expect_eq(net_slot_pick(dir, &c, NULL, &s1, &e), -ENOSPC, "a full pool says so");
	cr_expect(strstr(e.msg, "every address"), "%s", e.msg);
	/* busy: netd's own picks not recorded yet */
	net_slot_release(dir, s0, a);
	net_slot_release(dir, s1, b);
	c.pool_prefix = 28; /* four slots */
	for (int i = 0; i < 50; i++) {
		uint32_t s;
		cr_assert_eq(net_slot_pick(dir, &c, busy_7, &s, &e), 0, "%s", e.msg);
		cr_expect_neq(s, 7);
	}
	uint32_t *list = NULL;
	size_t n = 9;
	cr_assert_eq(net_slots_list(dir, &list, &n, &e), 0);
	cr_expect_eq(n, 0, "released slots are gone");
	free(list);
	cr_assert_eq(net_slot_premake(dir, pre, &e), 0, "%s", e.msg);
	cr_assert_eq(net_slot_record(dir, 2, a, pol, &e), 0, "%s", e.msg);
	net_slot_premade_clear(dir);
	snprintf(p, sizeof(p), "%s/net/slots/%s", dir, pre);
	cr_expect_eq(access(p, F_OK), -1, "files made ahead are cleared");
	cr_assert_eq(net_slots_list(dir, &list, &n, &e), 0);
	cr_expect(n == 1 && list[0] == 2, "a slot is not");
	free(list);
	net_slot_release(dir, 2, a);
	snprintf(p, sizeof(p), "%s/net/slots", dir);
	cr_expect_eq(rmdir(p), 0);
	snprintf(p, sizeof(p), "%s/net", dir);
	cr_expect_eq(rmdir(p), 0);
	cr_expect_eq(rmdir(dir), 0, "nothing else was left");
}

Test(dns, query_names_are_bounded_text)
{
	uint8_t q[512];
	size_t n = dns_build_query("Allowed.Test", DNS_TYPE_A, 0x4242, q, sizeof(q));
	cr_assert(n > 12);
	struct dns_query d;
	cr_assert_eq(dns_parse_query(q, n, &d), 0);
	cr_expect_str_eq(d.name, "allowed.test", "lower case");
	cr_expect_eq(d.id, 0x4242);
	cr_expect_eq(d.qtype, DNS_TYPE_A);
	/* a label holding a dot and a NUL cannot pass for a name */
	static const uint8_t sly[] = { 0,   1,   1,   0,   0,   1,   0,   0, 0, 0, 0, 0, 9, 'e',
				       'v', 'i', 'l', '.', 't', 'e', 's', 0, 0, 0, 1, 0, 1 };
	cr_assert_eq(dns_parse_query(sly, sizeof(sly), &d), 0);
	cr_expect_str_eq(d.name, "evil\\046tes\\000");
	/* a pointer loop, a pointer forward, a cut message */
	static const uint8_t loop[] = { 0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1 };
	cr_expect_eq(dns_parse_query(loop, sizeof(loop), &d), -EINVAL);
	cr_expect_eq(dns_parse_query(q, n - 3, &d), -EINVAL);
	uint8_t resp[64] = { 0, 1, 0x80 };
	cr_expect_eq(dns_parse_query(resp, 12, &d), -EINVAL, "a response is no query");
}

static int collect(uint32_t a, uint32_t ttl, void *ud)
{
	uint32_t *v = ud;
	v[0] = a;
	v[1] = ttl;
	return 0;
}

Test(dns, answers_are_walked_and_matched)
{
	static const uint8_t ans[] = { 0x12, 0x34, 0x81, 0x80, 0,   1,   0,    1,    0,   0,   0,   0,
				       7,    'a',  'l',  'l',  'o', 'w', 'e',  'd',  4,   't', 'e', 's',
				       't',  0,    0,    1,    0,   1,   0xc0, 0x0c, 0,   1,   0,   1,
				       0,    0,    0,    60,   0,   4,   203,  0,    113, 10 };
	uint32_t got[2] = { 0 };
	cr_assert_eq(dns_each_a(ans, sizeof(ans), collect, got), 0);
	cr_expect_eq(got[0], ip("203.0.113.10"));
	cr_expect_eq(got[1], 60);
	uint8_t q[512];
	size_t n = dns_build_query("allowed.test", DNS_TYPE_A, 0x1234, q, sizeof(q));
	struct dns_query d;
	cr_assert_eq(dns_parse_query(q, n, &d), 0);
	cr_expect(dns_answers(ans, sizeof(ans), &d, 0x1234));
	cr_expect(!dns_answers(ans, sizeof(ans), &d, 0x1235), "another id: a forged answer");
	cr_expect_eq(dns_each_a(ans, sizeof(ans) - 2, collect, got), -EINVAL, "a cut record");
	uint8_t out[512];
	size_t en = dns_answer_empty(q, d.qend, DNS_RCODE_NXDOMAIN, out, sizeof(out));
	cr_assert_eq(en, d.qend);
	cr_expect_eq(dns_rcode(out, en), DNS_RCODE_NXDOMAIN);
	cr_expect(out[2] & 0x80, "QR set");
}

Test(sni, tls_and_http_names)
{
	/* a ClientHello naming Allowed.Test, in one record */
	uint8_t hello[200];
	const char *name = "Allowed.Test";
	size_t nl = strlen(name), o = 0;
	uint8_t body[160];
	size_t b = 0;
	body[b++] = 3, body[b++] = 3;
	memset(body + b, 0, 32), b += 32;
	body[b++] = 0; /* session id */
	body[b++] = 0, body[b++] = 2, body[b++] = 0x13, body[b++] = 1; /* one suite */
	body[b++] = 1, body[b++] = 0; /* compression */
	size_t ext_len = 4 + 2 + 3 + nl;
	body[b++] = 0, body[b++] = (uint8_t)ext_len;
	body[b++] = 0, body[b++] = 0, body[b++] = 0, body[b++] = (uint8_t)(2 + 3 + nl);
	body[b++] = 0, body[b++] = (uint8_t)(3 + nl), body[b++] = 0, body[b++] = 0, body[b++] = (uint8_t)nl;
	memcpy(body + b, name, nl), b += nl;
	hello[o++] = 0x16, hello[o++] = 3, hello[o++] = 1, hello[o++] = 0, hello[o++] = (uint8_t)(b + 4);
	hello[o++] = 1, hello[o++] = 0, hello[o++] = 0, hello[o++] = (uint8_t)b;
	memcpy(hello + o, body, b), o += b;
	char out[SNI_NAME_MAX];
	cr_expect_eq(sni_kind(hello, o), SNI_TLS);
	cr_assert_eq(sni_tls_name(hello, o, out), 0);
	cr_expect_str_eq(out, "allowed.test");
	cr_expect_eq(sni_tls_name(hello, o - 5, out), 1, "half a record: more is needed");
	const char http[] = "GET / HTTP/1.1\r\nhost:  Api.Test:8080 \r\nAccept: */*\r\n\r\n";
	cr_expect_eq(sni_kind((const uint8_t *)http, strlen(http)), SNI_HTTP);
	cr_assert_eq(sni_http_host((const uint8_t *)http, strlen(http), out), 0);
	cr_expect_str_eq(out, "api.test");
	const char two[] = "GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n";
	cr_expect_eq(sni_http_host((const uint8_t *)two, strlen(two), out), -EINVAL, "two Hosts: refused");
	const char addr[] = "GET / HTTP/1.1\r\nHost: 203.0.113.10\r\n\r\n";
	cr_expect_eq(sni_http_host((const uint8_t *)addr, strlen(addr), out), -EINVAL,
		     "an address is not a name");
	const char none[] = "GET / HTTP/1.0\r\n\r\n";
	cr_expect_eq(sni_http_host((const uint8_t *)none, strlen(none), out), -ENOENT);
	const char part[] = "GET / HTTP/1.1\r\nHost: a.test\r\n";
	cr_expect_eq(sni_http_host((const uint8_t *)part, strlen(part), out), 1, "the head is not whole yet");
}

static int http(const char *s, struct relay_req *r)
{
	return relay_http_parse((const uint8_t *)s, strlen(s), r);
}

Test(relay, http_proxy_requests)
{
	static struct relay_req r;
	cr_assert_eq(http("CONNECT Example.COM:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\nTLS", &r), 0);
	cr_expect_eq(r.proto, RELAY_CONNECT);
	cr_expect_str_eq(r.host, "example.com");
	cr_expect_eq(r.port, 443);
	cr_expect_eq(r.used, strlen("CONNECT Example.COM:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"),
		     "what follows the head is the server's");
	cr_expect_eq(http("CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n", &r), 1, "no end of head yet");
	cr_expect_eq(http("CONNECT example.com HTTP/1.1\r\n\r\n", &r), -EINVAL, "CONNECT needs a port");
	cr_expect_eq(http("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n", &r), -EAFNOSUPPORT);
	cr_expect_eq(http("CONNECT user@example.com:443 HTTP/1.1\r\n\r\n", &r), -EINVAL);
	cr_expect_eq(http("CONNECT example.com:0 HTTP/1.1\r\n\r\n", &r), -EINVAL);
	cr_expect_eq(http("CONNECT example.com:65536 HTTP/1.1\r\n\r\n", &r), -EINVAL);
	cr_expect_eq(http("CONNECT exa mple.com:1 HTTP/1.1\r\n\r\n", &r), -EINVAL);
	cr_expect_eq(http("CONNECT a..b:1 HTTP/1.1\r\n\r\n", &r), -EINVAL);

	cr_assert_eq(http("GET http://203.0.113.10:8080/a/b?c=d#frag HTTP/1.1\r\nHost: x\r\n\r\n", &r), 0);
	cr_expect_eq(r.proto, RELAY_FORWARD);
	cr_expect_str_eq(r.host, "203.0.113.10");
	cr_expect_eq(r.port, 8080);
	cr_expect_eq(r.line_len, strlen("GET /a/b?c=d HTTP/1.1\r\n"));
	cr_expect(!memcmp(r.line, "GET /a/b?c=d HTTP/1.1\r\n", r.line_len), "origin form: %.*s",
		  (int)r.line_len, r.line);
	cr_expect_eq(r.used, strlen("GET http://203.0.113.10:8080/a/b?c=d#frag HTTP/1.1\r\n"),
		     "the headers are sent on as they came");
	cr_assert_eq(http("HEAD HTTP://allowed.test HTTP/1.0\r\n\r\n", &r), 0);
	cr_expect_eq(r.port, 80);
	cr_expect(!memcmp(r.line, "HEAD / HTTP/1.0\r\n", r.line_len), "an empty path is /");
	cr_expect_eq(http("GET https://example.com/ HTTP/1.1\r\n\r\n", &r), -EPROTONOSUPPORT);
	cr_expect_eq(http("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", &r), -EINVAL,
		     "an origin-form request is not for a proxy");
	cr_expect_eq(http("GET http://example.com/ HTTP/2.0\r\n\r\n", &r), -EINVAL);
	cr_expect_eq(http("G(T http://example.com/ HTTP/1.1\r\n\r\n", &r), -EINVAL);
	static char big[RELAY_HEAD_MAX + 10];
	memset(big, 'a', sizeof(big) - 1);
	cr_expect_eq(relay_http_parse((const uint8_t *)big, sizeof(big) - 1, &r), -EMSGSIZE);
}

Test(relay, socks5)
{
	static struct relay_req r;
	size_t used = 0;
	const uint8_t hello[] = { 5, 2, 2, 0 }, noauth[] = { 5, 1, 2 };
	cr_expect_eq(relay_socks_hello(hello, 3, &used), 1);
	cr_assert_eq(relay_socks_hello(hello, sizeof(hello), &used), 0);
	cr_expect_eq(used, 4);
	cr_expect_eq(relay_socks_hello(noauth, sizeof(noauth), &used), -EACCES, "no method we take");
	const uint8_t byname[] = { 5,   1,   0,   3,   12,  'A', 'l', 'l', 'o', 'w',
				   'e', 'd', '.', 't', 'e', 's', 't', 1,   187 };
	cr_expect_eq(relay_socks_parse(byname, sizeof(byname) - 1, &r), 1);
	cr_assert_eq(relay_socks_parse(byname, sizeof(byname), &r), 0);
	cr_expect_str_eq(r.host, "allowed.test");
	cr_expect_eq(r.port, 443);
	cr_expect_eq(r.used, sizeof(byname));
	const uint8_t byaddr[] = { 5, 1, 0, 1, 203, 0, 113, 10, 0, 80 };
	cr_assert_eq(relay_socks_parse(byaddr, sizeof(byaddr), &r), 0);
	cr_expect_str_eq(r.host, "203.0.113.10");
	const uint8_t v6[] = { 5, 1, 0, 4 };
	cr_expect_eq(relay_socks_parse(v6, sizeof(v6), &r), -EAFNOSUPPORT);
	const uint8_t udp[] = { 5, 3, 0, 1, 203, 0, 113, 10, 0, 80 };
	cr_expect_eq(relay_socks_parse(udp, sizeof(udp), &r), -EOPNOTSUPP);
	const uint8_t badname[] = { 5, 1, 0, 3, 3, 'a', '/', 'b', 0, 80 };
	cr_expect_eq(relay_socks_parse(badname, sizeof(badname), &r), -EINVAL);
}
