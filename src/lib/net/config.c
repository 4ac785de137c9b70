/* net/config.c — the host's network config for sandboxes (see config.h). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <sys/un.h>

#include "base/json.h"
#include "base/sha256.h"
#include "net/config.h"

int net_parse_cidr4(const char *s, bool strict, uint32_t *addr, unsigned *prefix)
{
	char buf[INET_ADDRSTRLEN + 4];
	size_t n = strlen(s);
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n + 1);
	unsigned p = 32;
	char *slash = strchr(buf, '/');
	if (slash) {
		*slash = '\0';
		const char *d = slash + 1;
		if (!*d || strlen(d) > 2 || d[0] < '0' || d[0] > '9' ||
		    (d[1] && (d[1] < '0' || d[1] > '9')) || (d[0] == '0' && d[1]))
			return -EINVAL;
		p = (unsigned)atoi(d);
		if (p > 32)
			return -EINVAL;
	}
	struct in_addr a;
	/* inet_pton takes dotted quads only: no "10.1", no octal, no hex */
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -EINVAL;
	uint32_t mask = p ? htonl(~0u << (32 - p)) : 0;
	if (strict && (a.s_addr & ~mask))
		return -EINVAL;
	*addr = a.s_addr & mask;
	*prefix = p;
	return 0;
}

uint32_t net_config_slots(const struct net_config *c)
{
	return c->pool_prefix >= 30 ? 1 : 1u << (30 - c->pool_prefix);
}

uint32_t net_slot_gateway(const struct net_config *c, uint32_t slot)
{
	return htonl(ntohl(c->pool) + slot * 4 + 1);
}

uint32_t net_slot_address(const struct net_config *c, uint32_t slot)
{
	return htonl(ntohl(c->pool) + slot * 4 + 2);
}

int64_t net_slot_of(const struct net_config *c, uint32_t addr)
{
	uint32_t a = ntohl(addr), base = ntohl(c->pool);
	if (a < base)
		return -1;
	uint64_t slot = (a - base) / 4;
	return slot < net_config_slots(c) ? (int64_t)slot : -1;
}

static int resolver_parse(const char *s, uint32_t *addr, uint16_t *port)
{
	char buf[INET_ADDRSTRLEN + 8];
	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	*port = 53;
	char *colon = strchr(buf, ':');
	if (colon) {
		*colon = '\0';
		char *end;
		long p = strtol(colon + 1, &end, 10);
		if (*end || p < 1 || p > 65535)
			return -EINVAL;
		*port = (uint16_t)p;
	}
	struct in_addr a;
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -EINVAL;
	*addr = a.s_addr;
	return 0;
}

/* The IPv4 nameservers of resolv.conf: what the host itself asks. (IPv6
 * ones are left out: sandboxes' DNS is forwarded over IPv4 only.) */
static void resolvers_from_host(struct net_config *c)
{
	_cleanup_free_ char *text = NULL;
	if (read_file_at(AT_FDCWD, "/etc/resolv.conf", 65536, &text, NULL) < 0)
		return;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && c->nresolvers < NET_MAX_RESOLVERS;
	     l = strtok_r(NULL, "\n", &save)) {
		char ip[64];
		if (sscanf(l, " nameserver %63s", ip) != 1)
			continue;
		uint32_t a;
		uint16_t p;
		if (resolver_parse(ip, &a, &p) == 0) {
			c->resolvers[c->nresolvers] = a;
			c->resolver_ports[c->nresolvers++] = p;
		}
	}
}

static int port_of(json_object *o, const char *k, uint16_t *out, const char *path, abox_error *err)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v))
		return 0;
	int64_t p = json_object_get_int64(v);
	if (!json_object_is_type(v, json_type_int) || p < 1 || p > 65535)
		return abox_error_setx(err, EINVAL, "%s: %s must be a port number (1-65535)", path, k);
	*out = (uint16_t)p;
	return 0;
}

static int name_of(json_object *o, const char *k, char *out, size_t n, const char *path, abox_error *err)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v))
		return 0;
	const char *s = json_object_get_string(v);
	if (!json_object_is_type(v, json_type_string) || !*s || strlen(s) >= n || strpbrk(s, "/ \t\n"))
		return abox_error_setx(err, EINVAL, "%s: %s must be a name of at most %zu characters", path,
				       k, n - 1);
	snprintf(out, n, "%s", s);
	return 0;
}

static int apply(struct net_config *c, json_object *o, const char *path, abox_error *err)
{
	static const char *const known[] = { "pool",      "uplink",    "table",     "dnsPort", "proxyPort",
					     "relayPort", "resolvers", "allowSmtp", "spares" };
	json_object_object_foreach(o, key, val) {
		(void)val;
		bool ok = false;
		for (size_t i = 0; i < ELEMENTSOF(known); i++)
			ok = ok || !strcmp(key, known[i]);
		if (!ok)
			return abox_error_setx(err, EINVAL, "%s: unknown key '%s'", path, key);
	}
	const char *pool = js_str(o, "pool");
	if (json_object_object_get_ex(o, "pool", NULL)) {
		if (!pool || net_parse_cidr4(pool, true, &c->pool, &c->pool_prefix) < 0 ||
		    c->pool_prefix > 30 || c->pool_prefix < 8)
			return abox_error_setx(
				err, EINVAL,
				"%s: pool must be an IPv4 network from /8 to /30 (e.g. 10.231.0.0/16)", path);
	}
	int r;
	char up[IFNAMSIZ] = "";
	if ((r = name_of(o, "uplink", up, sizeof(up), path, err)) < 0 ||
	    (r = name_of(o, "table", c->table, sizeof(c->table), path, err)) < 0 ||
	    (r = port_of(o, "dnsPort", &c->dns_port, path, err)) < 0 ||
	    (r = port_of(o, "proxyPort", &c->proxy_port, path, err)) < 0 ||
	    (r = port_of(o, "relayPort", &c->relay_port, path, err)) < 0)
		return r;
	if (*up)
		snprintf(c->uplink, sizeof(c->uplink), "%s", strcmp(up, "auto") ? up : "");
	json_object *v;
	if (json_object_object_get_ex(o, "allowSmtp", &v)) {
		if (!json_object_is_type(v, json_type_boolean))
			return abox_error_setx(err, EINVAL, "%s: allowSmtp must be true or false", path);
		c->allow_smtp = json_object_get_boolean(v);
	}
	if (json_object_object_get_ex(o, "spares", &v)) {
		int64_t n = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
		if (n < 0 || n > NET_SPARES_MAX)
			return abox_error_setx(err, EINVAL, "%s: spares must be a count from 0 to %d", path,
					       NET_SPARES_MAX);
		c->spares = (unsigned)n;
	}
	if (json_object_object_get_ex(o, "resolvers", &v)) {
		size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
		if (!json_object_is_type(v, json_type_array) || n == 0 || n > NET_MAX_RESOLVERS)
			return abox_error_setx(err, EINVAL, "%s: resolvers must list 1 to %d IPv4 addresses",
					       path, NET_MAX_RESOLVERS);
		c->nresolvers = 0;
		for (size_t i = 0; i < n; i++) {
			json_object *e = json_object_array_get_idx(v, i);
			if (!json_object_is_type(e, json_type_string) ||
			    resolver_parse(json_object_get_string(e), &c->resolvers[i],
					   &c->resolver_ports[i]) < 0)
				return abox_error_setx(
					err, EINVAL,
					"%s: resolvers[%zu] must be an IPv4 address (or address:port)", path,
					i);
			c->nresolvers++;
		}
	}
	return 0;
}

int net_config_load(const char *state_dir, struct net_config *out, abox_error *err)
{
	struct net_config c = { 0 };
	inet_pton(AF_INET, "10.231.0.0", &c.pool);
	c.pool_prefix = 16;
	snprintf(c.table, sizeof(c.table), "abox");
	c.dns_port = 15353;
	c.proxy_port = 15380;
	c.relay_port = 3128;
	c.spares = 4;
	const char *env = getenv("ABOX_NETWORK_CONFIG");
	if (env && *env)
		snprintf(c.path, sizeof(c.path), "%s", env);
	else
		snprintf(c.path, sizeof(c.path), "%s/network.json", state_dir);
	_cleanup_free_ char *text = NULL;
	int r = read_file_at(AT_FDCWD, c.path, 1 << 20, &text, NULL);
	if (r == -ENOENT && !(env && *env)) {
		c.path[0] = '\0';
	} else if (r < 0) {
		return abox_error_set(err, -r, "read the network config '%s'", c.path);
	} else {
		json_object *o = js_parse_object(text, 16);
		if (!o)
			return abox_error_setx(err, EINVAL, "%s: not a JSON object", c.path);
		r = apply(&c, o, c.path, err);
		json_object_put(o);
		if (r < 0)
			return r;
	}
	if (c.nresolvers == 0)
		resolvers_from_host(&c);
	if (c.dns_port == c.proxy_port)
		return abox_error_setx(err, EINVAL, "%s: dnsPort and proxyPort must differ",
				       *c.path ? c.path : "network config");
	*out = c;
	return 0;
}

void net_netd_address(const char *state_dir, struct sockaddr_un *sa, unsigned *len)
{
	struct sha256 h;
	char hex[65];
	sha256_init(&h);
	sha256_update(&h, state_dir, strlen(state_dir));
	sha256_hex(&h, hex);
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	int n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "abox-netd-%.32s", hex);
	*len = (unsigned)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}
