/* net/policy.c — egress policies (see policy.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "net/config.h"
#include "net/policy.h"

#define R4(a, b, c, d, p)                                                                                    \
	{                                                                                                    \
		((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d),        \
			(((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) |              \
			 (uint32_t)(d)) |                                                                    \
				(uint32_t)((1ull << (32 - (p))) - 1)                                         \
	}

/* What a sandbox never reaches, whatever its policy allows: the host's
 * own networks and everyone else's (RFC 1918, CGNAT), loopback,
 * link-local (cloud metadata at 169.254.169.254 lives there), "this
 * network", the IETF's reserved blocks, multicast and broadcast. */
const struct net_range4 net_always_denied4[] = {
	R4(0, 0, 0, 0, 8),      R4(10, 0, 0, 0, 8),    R4(100, 64, 0, 0, 10), R4(127, 0, 0, 0, 8),
	R4(169, 254, 0, 0, 16), R4(172, 16, 0, 0, 12), R4(192, 0, 0, 0, 24),  R4(192, 168, 0, 0, 16),
	R4(198, 18, 0, 0, 15),  R4(224, 0, 0, 0, 4),   R4(240, 0, 0, 0, 4),
};
const size_t net_always_denied4_n = ELEMENTSOF(net_always_denied4);

bool net_addr_always_denied(uint32_t addr)
{
	uint32_t a = ntohl(addr);
	for (size_t i = 0; i < net_always_denied4_n; i++)
		if (a >= net_always_denied4[i].first && a <= net_always_denied4[i].last)
			return true;
	return false;
}

const char *net_mode_name(enum net_mode m)
{
	switch (m) {
	case NET_MODE_OPEN:
		return "open";
	case NET_MODE_FILTERED:
		return "filtered";
	default:
		return "none";
	}
}

int net_mode_parse(const char *s, enum net_mode *out)
{
	static const enum net_mode modes[] = { NET_MODE_NONE, NET_MODE_OPEN, NET_MODE_FILTERED };
	for (size_t i = 0; i < ELEMENTSOF(modes); i++)
		if (s && !strcmp(s, net_mode_name(modes[i]))) {
			*out = modes[i];
			return 0;
		}
	return -EINVAL;
}

bool net_name_valid(const char *s, bool wildcard)
{
	if (wildcard && s[0] == '*' && s[1] == '.')
		s += 2;
	size_t n = strlen(s);
	if (n == 0 || n > NET_NAME_MAX)
		return false;
	size_t label = 0;
	for (size_t i = 0; i <= n; i++) {
		char c = s[i];
		if (c == '.' || c == '\0') {
			if (label == 0 || label > 63)
				return false;
			label = 0;
			continue;
		}
		if (!isalnum((unsigned char)c) && c != '-' && c != '_')
			return false;
		label++;
	}
	return true;
}

/* An IPv6 address or range: accepted and kept, never compiled (sandboxes
 * have no IPv6). */
static bool cidr6_ok(const char *s)
{
	char buf[INET6_ADDRSTRLEN + 5];
	if (strlen(s) >= sizeof(buf))
		return false;
	strcpy(buf, s);
	char *slash = strchr(buf, '/');
	if (slash) {
		*slash = '\0';
		char *end;
		long p = strtol(slash + 1, &end, 10);
		if (!slash[1] || *end || p < 0 || p > 128)
			return false;
	}
	struct in6_addr a;
	return inet_pton(AF_INET6, buf, &a) == 1;
}

/* A name pattern for matching: lower case, no trailing dot (the names
 * DNS carries end in one). */
static char *normalised(const char *s)
{
	char *d = strdup(s);
	if (!d)
		return NULL;
	for (char *c = d; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	size_t n = strlen(d);
	if (n > 1 && d[n - 1] == '.')
		d[n - 1] = '\0';
	return d;
}

static int add_range(struct net_range4 **v, size_t *n, uint32_t addr, unsigned prefix)
{
	struct net_range4 *nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	uint32_t a = ntohl(addr);
	nv[*n].first = a;
	nv[*n].last = prefix ? a | (uint32_t)((1ull << (32 - prefix)) - 1) : 0xffffffffu;
	(*n)++;
	return 0;
}

static int strv_push(char ***v, size_t *n, char *s)
{
	char **nv = realloc(*v, (*n + 2) * sizeof(**v));
	if (!nv) {
		free(s);
		return -ENOMEM;
	}
	*v = nv;
	nv[(*n)++] = s;
	nv[*n] = NULL;
	return 0;
}

void net_policy_free(struct net_policy *p)
{
	if (!p)
		return;
	strv_free(p->allow_out);
	strv_free(p->deny_out);
	strv_free(p->names);
	free(p->allow4);
	free(p->deny4);
	memset(p, 0, sizeof(*p));
}

/* An address or CIDR as E2B takes one: never the unspecified address
 * (0.0.0.0, ::, or a block named by it) but for "0.0.0.0/0" itself. */
static bool specified_cidr(const char *s, uint32_t *a4, unsigned *p4, bool *v4)
{
	*v4 = net_parse_cidr4(s, false, a4, p4) == 0;
	if (*v4) {
		char ip[INET_ADDRSTRLEN];
		if (!str_head(s, "/", ip, sizeof(ip)))
			return false;
		struct in_addr a;
		inet_pton(AF_INET, ip, &a);
		return a.s_addr != 0 || !strcmp(s, NET_ALL_TRAFFIC);
	}
	if (!cidr6_ok(s))
		return false;
	char ip[INET6_ADDRSTRLEN];
	if (!str_head(s, "/", ip, sizeof(ip)))
		return false;
	struct in6_addr a;
	inet_pton(AF_INET6, ip, &a);
	return !IN6_IS_ADDR_UNSPECIFIED(&a);
}

/* One list entry, compiled into p. The texts of the errors are E2B's own
 * (aboxd answers them as E2B does). */
static int entry(struct net_policy *p, const char *raw, bool allow, size_t *nlist, abox_error *err)
{
	uint32_t a;
	unsigned prefix;
	bool v4;
	bool cidr = specified_cidr(raw, &a, &prefix, &v4);
	int r = 0;
	if (cidr && v4) {
		r = allow ? add_range(&p->allow4, &p->nallow4, a, prefix)
			  : add_range(&p->deny4, &p->ndeny4, a, prefix);
		if (!allow && !strcmp(raw, NET_ALL_TRAFFIC))
			p->deny_all = true;
	} else if (cidr) {
		/* IPv6: kept as given, nothing to compile (sandboxes have none) */
	} else if (!allow) {
		return abox_error_setx(err, EINVAL, "invalid denied CIDR %s", raw);
	} else if (strchr(raw, '/') || inet_pton(AF_INET, raw, &a) == 1 || cidr6_ok(raw)) {
		/* looks like an address, but not one E2B takes */
		return abox_error_setx(err, EINVAL, "invalid allowed address %s", raw);
	} else {
		/* anything else is a name pattern, as in E2B (one that can
		 * never match a DNS name, like "example.*", matches nothing) */
		char *pat = normalised(raw);
		if (!pat || (r = strv_push(&p->names, &p->nnames, pat)) < 0)
			return abox_error_set(err, ENOMEM, "network policy");
	}
	if (r < 0)
		return abox_error_set(err, -r, "network policy");
	char *copy = strdup(raw);
	if (!copy || (r = strv_push(allow ? &p->allow_out : &p->deny_out, nlist, copy)) < 0)
		return abox_error_set(err, ENOMEM, "network policy");
	return 0;
}

static int lists(struct net_policy *p, const char *const *v, bool allow, abox_error *err)
{
	size_t n = 0;
	for (size_t i = 0; v && v[i]; i++) {
		if (i >= NET_POLICY_MAX_ENTRIES)
			return abox_error_setx(err, EINVAL, "%s has more than %d entries",
					       allow ? "allowOut" : "denyOut", NET_POLICY_MAX_ENTRIES);
		if (strlen(v[i]) > NET_ENTRY_MAX)
			return abox_error_setx(err, EINVAL, "%s[%zu] is longer than %d characters",
					       allow ? "allowOut" : "denyOut", i, NET_ENTRY_MAX);
		int r = entry(p, v[i], allow, &n, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int net_policy_make(enum net_mode mode, const char *const *allow_out, const char *const *deny_out,
		    struct net_policy *out, abox_error *err)
{
	bool has_lists = (allow_out && *allow_out) || (deny_out && *deny_out);
	if (mode == NET_MODE_NONE && has_lists)
		return abox_error_setx(err, EINVAL,
				       "allow and deny lists need networking (mode filtered), not mode none");
	if (mode == NET_MODE_OPEN && has_lists)
		return abox_error_setx(err, EINVAL, "allow and deny lists make the mode filtered, not open");
	if (mode != NET_MODE_NONE && mode != NET_MODE_OPEN && mode != NET_MODE_FILTERED)
		return abox_error_setx(err, EINVAL, "unknown network mode %d", (int)mode);
	struct net_policy p = { .mode = mode };
	int r = lists(&p, deny_out, false, err);
	if (r >= 0)
		r = lists(&p, allow_out, true, err);
	if (r >= 0 && p.nnames && !p.deny_all)
		r = abox_error_setx(err, EINVAL,
				    "When specifying allowed domains in allow out, you must include "
				    "'ALL_TRAFFIC' in deny out to block all other traffic.");
	if (r < 0) {
		net_policy_free(&p);
		return r;
	}
	*out = p;
	return 0;
}

char *net_policy_json(const struct net_policy *p)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "mode", json_object_new_string(net_mode_name(p->mode)));
	json_object_object_add(o, "allowOut", js_strv_array(p->allow_out));
	json_object_object_add(o, "denyOut", js_strv_array(p->deny_out));
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	char *d = s ? strdup(s) : NULL;
	json_object_put(o);
	return d;
}

int net_policy_parse(const char *json, struct net_policy *out, abox_error *err)
{
	json_object *o = js_parse_object(json, 8);
	if (!o)
		return abox_error_setx(err, EINVAL, "network policy: not a JSON object");
	enum net_mode mode;
	int r = net_mode_parse(js_str(o, "mode"), &mode);
	_cleanup_strv_free_ char **allow = js_strv(o, "allowOut");
	_cleanup_strv_free_ char **deny = js_strv(o, "denyOut");
	json_object_put(o);
	if (r < 0)
		return abox_error_setx(err, EINVAL, "network policy: no known mode");
	return net_policy_make(mode, (const char *const *)allow, (const char *const *)deny, out, err);
}

static bool in_ranges(const struct net_range4 *v, size_t n, uint32_t a)
{
	for (size_t i = 0; i < n; i++)
		if (a >= v[i].first && a <= v[i].last)
			return true;
	return false;
}

bool net_policy_addr_allowed(const struct net_policy *p, uint32_t addr)
{
	if (p->mode == NET_MODE_NONE)
		return false;
	uint32_t a = ntohl(addr);
	if (in_ranges(p->allow4, p->nallow4, a))
		return true;
	return !in_ranges(p->deny4, p->ndeny4, a);
}

bool net_policy_name_listed(const struct net_policy *p, const char *name)
{
	char n[NET_NAME_MAX + 2];
	size_t len = strlen(name);
	if (len == 0 || len > NET_NAME_MAX + 1)
		return false;
	for (size_t i = 0; i <= len; i++)
		n[i] = (char)tolower((unsigned char)name[i]);
	if (len > 1 && n[len - 1] == '.')
		n[--len] = '\0';
	for (size_t i = 0; i < p->nnames; i++) {
		const char *pat = p->names[i];
		if (!strcmp(pat, "*"))
			return true; /* any name */
		if (pat[0] == '*' && pat[1] == '.') {
			/* "*.example.com": names below example.com, not itself */
			size_t pl = strlen(pat + 1);
			if (len > pl && !strcmp(n + len - pl, pat + 1))
				return true;
		} else if (!strcmp(n, pat)) {
			return true;
		}
	}
	return false;
}

bool net_policy_name_allowed(const struct net_policy *p, const char *name)
{
	if (p->mode == NET_MODE_NONE)
		return false;
	return net_policy_name_listed(p, name) || !p->deny_all;
}
