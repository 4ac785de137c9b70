/* network.c — E2B's network settings of a sandbox, as E2B takes them:
 * the create body's `network` {allowOut, denyOut, allowPublicTraffic,
 * maskRequestHost, rules, egressProxy} and `allow_internet_access`, and
 * PUT /sandboxes/{id}/network. Checked in E2B's order with E2B's texts
 * and statuses (lists: abox_net_check), turned into the library's egress
 * policy (allow_internet_access false is E2B's denyOut ["0.0.0.0/0"];
 * no settings at all: the configured default, open as in E2B), and kept
 * as given (notes.c) for GET /sandboxes/{id}, which shows them as E2B
 * does. allowPublicTraffic and maskRequestHost are the port proxy's
 * (proxy.c: the traffic token required, the Host header replaced);
 * rules and egressProxy get the answer E2B gives a team without them.
 * Runs in aboxd. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "network.h"

void network_free(struct e2b_net *n)
{
	for (size_t i = 0; n->allow && n->allow[i]; i++)
		free(n->allow[i]);
	for (size_t i = 0; n->deny && n->deny[i]; i++)
		free(n->deny[i]);
	free(n->allow);
	free(n->deny);
	json_object_put(n->note);
	memset(n, 0, sizeof(*n));
}

__attribute__((format(printf, 5, 6))) static int fail(unsigned *status, unsigned code, char *why, size_t n,
						      const char *fmt, ...)
{
	*status = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -1;
}

/* A list of strings (or null/absent: none) as a NULL-terminated copy. */
static int strings(json_object *net, const char *k, char ***out, unsigned *status, char *why, size_t n)
{
	json_object *v = NULL;
	*out = NULL;
	if (!net || !json_object_object_get_ex(net, k, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return fail(status, 400, why, n, "network.%s must be an array of strings", k);
	size_t len = json_object_array_length(v);
	if (len > 1024)
		return fail(status, 400, why, n, "network.%s has more than 1024 entries", k);
	char **a = calloc(len + 1, sizeof(char *));
	if (!a)
		return fail(status, 500, why, n, "%s", "out of memory");
	for (size_t i = 0; i < len; i++) {
		json_object *e = json_object_array_get_idx(v, i);
		if (!json_object_is_type(e, json_type_string) ||
		    !(a[i] = strdup(json_object_get_string(e)))) {
			for (size_t k2 = 0; k2 < i; k2++)
				free(a[k2]);
			free(a);
			return fail(status, 400, why, n, "network.%s must be an array of strings", k);
		}
	}
	*out = a;
	return 0;
}

/* E2B's check of maskRequestHost: host[:port], the host in ASCII. */
static int mask_ok(const char *m, unsigned *status, char *why, size_t n)
{
	char host[512];
	snprintf(host, sizeof(host), "%s", m);
	char *colon = strrchr(host, ':');
	if (colon && !strchr(colon, ']'))
		*colon = '\0';
	for (const char *p = host; *p; p++)
		if ((unsigned char)*p >= 0x80) {
			*status = 400;
			snprintf(why, n,
				 "mask request host '%s' is not ASCII. Please use ASCII characters only.",
				 host);
			return -1;
		}
	/* ${PORT} stands for the port the request was for */
	bool ok = *host != '\0' && *host != '-' && strlen(m) < 256;
	for (const char *p = host; ok && *p; p++)
		ok = isalnum((unsigned char)*p) || strchr(".-_${}[]", *p);
	if (!ok)
		return fail(status, 400, why, n, "mask request host is not valid: %s", m);
	return 0;
}

/* What both routes share: the lists checked and made into the policy. */
static int lists(json_object *net, bool internet, struct e2b_net *out, unsigned *status, char *why, size_t n)
{
	if (strings(net, "allowOut", &out->allow, status, why, n) < 0 ||
	    strings(net, "denyOut", &out->deny, status, why, n) < 0)
		return -1;
	out->opts = (abox_net_opts)ABOX_NET_OPTS_INIT;
	out->opts.allow_out = (const char *const *)out->allow;
	out->opts.deny_out = (const char *const *)out->deny;
	bool has = (out->allow && *out->allow) || (out->deny && *out->deny);
	out->opts.mode = has ? ABOX_NET_FILTERED : ABOX_NET_OPEN;
	abox_error e = ABOX_ERROR_INIT;
	if (has && abox_net_check(&out->opts, &e) < 0)
		return fail(status, 400, why, n, "%s", e.msg);
	if (!internet) {
		/* E2B: the same as denyOut ["0.0.0.0/0"], allowOut kept */
		char **d = calloc(2, sizeof(char *));
		if (!d || !(d[0] = strdup("0.0.0.0/0"))) {
			free(d);
			return fail(status, 500, why, n, "%s", "out of memory");
		}
		for (size_t i = 0; out->deny && out->deny[i]; i++)
			free(out->deny[i]);
		free(out->deny);
		out->deny = d;
		out->opts.deny_out = (const char *const *)d;
		out->opts.mode = ABOX_NET_FILTERED;
	}
	return 0;
}

static int egress_extras(json_object *net, bool create, unsigned *status, char *why, size_t n)
{
	json_object *v;
	if (net && json_object_object_get_ex(net, "egressProxy", &v) &&
	    !json_object_is_type(v, json_type_null))
		return fail(status, 403, why, n, "Egress proxy (%s) is not enabled for this team.",
			    create ? "network.egressProxy" : "egressProxy");
	if (net && json_object_object_get_ex(net, "rules", &v) && !json_object_is_type(v, json_type_null) &&
	    !(json_object_is_type(v, json_type_object) && json_object_object_length(v) == 0))
		return fail(status, 400, why, n, "%s",
			    "Network transform rules are not available for your team.");
	return 0;
}

int network_parse_create(json_object *body, struct e2b_net *out, unsigned *status, char *why, size_t n)
{
	memset(out, 0, sizeof(*out));
	json_object *net = NULL, *allow = NULL, *v;
	json_object_object_get_ex(body, "network", &net);
	json_object_object_get_ex(body, "allow_internet_access", &allow);
	if (net && json_object_is_type(net, json_type_null))
		net = NULL;
	if (allow && json_object_is_type(allow, json_type_null))
		allow = NULL;
	if (net && !json_object_is_type(net, json_type_object))
		return fail(status, 400, why, n, "%s", "network must be an object");
	if (allow && !json_object_is_type(allow, json_type_boolean))
		return fail(status, 400, why, n, "%s", "allow_internet_access must be true or false");
	if (net && strlen(json_object_to_json_string_ext(net, JSON_C_TO_STRING_PLAIN)) > 60000)
		return fail(status, 400, why, n, "%s", "network settings over 60000 bytes");
	/* E2B's order: the public-traffic and mask settings, the lists,
	 * then the extras */
	if (net && json_object_object_get_ex(net, "allowPublicTraffic", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_boolean))
			return fail(status, 400, why, n, "%s",
				    "network.allowPublicTraffic must be true or false");
		json_object *sec;
		if (!json_object_get_boolean(v) && json_object_object_get_ex(body, "secure", &sec) &&
		    json_object_is_type(sec, json_type_boolean) && !json_object_get_boolean(sec))
			return fail(status, 400, why, n, "%s",
				    "You cannot create a sandbox without public access unless you enable "
				    "secure envd "
				    "access via 'secure' flag.");
	}
	if (net && json_object_object_get_ex(net, "maskRequestHost", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_string))
			return fail(status, 400, why, n, "%s", "network.maskRequestHost must be a string");
		if (mask_ok(json_object_get_string(v), status, why, n) < 0)
			return -1;
	}
	bool internet = !allow || json_object_get_boolean(allow);
	if (lists(net, internet, out, status, why, n) < 0 || egress_extras(net, true, status, why, n) < 0) {
		network_free(out);
		return -1;
	}
	/* no egress lists: the configured default (E2B's: open). SDKs send
	 * allow_internet_access: true whenever the caller said nothing, so
	 * it asks for nothing more than the default either */
	if (out->opts.mode != ABOX_NET_FILTERED)
		out->opts.mode = daemon_cfg.net_default;
	out->note = json_object_new_object();
	if (net)
		json_object_object_add(out->note, "network", json_object_get(net));
	if (allow)
		json_object_object_add(out->note, "allowInternetAccess", json_object_get(allow));
	return 0;
}

int network_parse_update(json_object *body, const char *old_note, struct e2b_net *out, unsigned *status,
			 char *why, size_t n)
{
	memset(out, 0, sizeof(*out));
	if (!json_object_is_type(body, json_type_object))
		return fail(status, 400, why, n, "%s", "the body must be a JSON object");
	json_object *allow = NULL;
	json_object_object_get_ex(body, "allow_internet_access", &allow);
	if (allow && json_object_is_type(allow, json_type_null))
		allow = NULL;
	if (allow && !json_object_is_type(allow, json_type_boolean))
		return fail(status, 400, why, n, "%s", "allow_internet_access must be true or false");
	if (strlen(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN)) > 60000)
		return fail(status, 400, why, n, "%s", "network settings over 60000 bytes");
	/* "omitting a field clears it": the egress is the body's alone;
	 * allow_internet_access counts only when it is given */
	bool internet = !allow || json_object_get_boolean(allow);
	if (lists(body, internet, out, status, why, n) < 0 ||
	    egress_extras(body, false, status, why, n) < 0) {
		network_free(out);
		return -1;
	}
	/* what GET shows: the egress replaced, the ingress settings and
	 * allowInternetAccess kept unless given anew */
	json_object *old = old_note ? json_tokener_parse(old_note) : NULL;
	json_object *oldnet = NULL, *oldallow = NULL;
	if (old) {
		json_object_object_get_ex(old, "network", &oldnet);
		json_object_object_get_ex(old, "allowInternetAccess", &oldallow);
	}
	json_object *net = json_object_new_object();
	static const char *const ingress[] = { "allowPublicTraffic", "maskRequestHost" };
	json_object *v;
	for (size_t i = 0; i < sizeof(ingress) / sizeof(ingress[0]); i++)
		if (oldnet && json_object_object_get_ex(oldnet, ingress[i], &v))
			json_object_object_add(net, ingress[i], json_object_get(v));
	static const char *const egress[] = { "allowOut", "denyOut", "rules" };
	for (size_t i = 0; i < sizeof(egress) / sizeof(egress[0]); i++)
		if (json_object_object_get_ex(body, egress[i], &v) && !json_object_is_type(v, json_type_null))
			json_object_object_add(net, egress[i], json_object_get(v));
	out->note = json_object_new_object();
	json_object_object_add(out->note, "network", net);
	if (allow)
		json_object_object_add(out->note, "allowInternetAccess", json_object_get(allow));
	else if (oldallow)
		json_object_object_add(out->note, "allowInternetAccess", json_object_get(oldallow));
	json_object_put(old);
	return 0;
}

/* The stored settings of a sandbox, as a parsed object (NULL: none). */
static json_object *settings(const char *id)
{
	char *text = note_read("network", id);
	json_object *o = text && *text ? json_tokener_parse(text) : NULL;
	free(text);
	return o;
}

void network_detail(const char *id, json_object *detail)
{
	json_object *o = settings(id), *v;
	if (!o)
		return;
	if (json_object_object_get_ex(o, "network", &v))
		json_object_object_add(detail, "network", json_object_get(v));
	if (json_object_object_get_ex(o, "allowInternetAccess", &v))
		json_object_object_add(detail, "allowInternetAccess", json_object_get(v));
	json_object_put(o);
}

int network_ingress(const char *id, bool *public_traffic, char *mask, size_t n)
{
	*public_traffic = true;
	*mask = '\0';
	json_object *o = settings(id), *net, *v;
	if (!o)
		return 0;
	if (json_object_object_get_ex(o, "network", &net)) {
		if (json_object_object_get_ex(net, "allowPublicTraffic", &v) &&
		    json_object_is_type(v, json_type_boolean))
			*public_traffic = json_object_get_boolean(v);
		if (json_object_object_get_ex(net, "maskRequestHost", &v) &&
		    json_object_is_type(v, json_type_string))
			snprintf(mask, n, "%s", json_object_get_string(v));
	}
	json_object_put(o);
	return 0;
}
