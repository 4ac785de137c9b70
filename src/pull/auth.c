/* auth.c — what a registry asks for and what we answer with: its
 * WWW-Authenticate challenge (RFC 7235 with docker's Bearer parameters),
 * a token server's answer, and credentials from a docker-style config
 * file. All of it is text from the network or from a file a user wrote:
 * bounded, and nothing here ever reaches a header unchecked (a CR or LF
 * in a token would let a registry add headers to our next request). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base64.h"
#include "base/json.h"
#include "pull.h"

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* key=value or key="quoted \" value"; copies value into out (truncation
 * refuses the challenge). Returns the position after it, or NULL. */
static const char *param(const char *p, char *key, size_t kn, char *val, size_t vn)
{
	size_t k = 0;
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
	       *p == '_' || *p == '-') {
		if (k + 1 >= kn)
			return NULL;
		key[k++] = *p++;
	}
	key[k] = '\0';
	p = skip_ws(p);
	if (k == 0 || *p != '=')
		return NULL;
	p = skip_ws(p + 1);
	size_t v = 0;
	if (*p == '"') {
		p++;
		while (*p && *p != '"') {
			if (*p == '\\' && p[1])
				p++;
			if ((unsigned char)*p < 0x20 || v + 1 >= vn)
				return NULL;
			val[v++] = *p++;
		}
		if (*p != '"')
			return NULL;
		p++;
	} else {
		while (*p && *p != ',' && *p != ' ' && *p != '\t') {
			if ((unsigned char)*p < 0x20 || v + 1 >= vn)
				return NULL;
			val[v++] = *p++;
		}
	}
	val[v] = '\0';
	return p;
}

int challenge_parse(const char *hdr, struct challenge *c)
{
	memset(c, 0, sizeof(*c));
	if (!hdr)
		return -1;
	const char *p = skip_ws(hdr);
	if (strncasecmp(p, "Bearer", 6) == 0 && (p[6] == ' ' || p[6] == '\t'))
		c->scheme = AUTH_BEARER, p += 6;
	else if (strncasecmp(p, "Basic", 5) == 0 && (p[5] == ' ' || p[5] == '\t' || p[5] == '\0'))
		c->scheme = AUTH_BASIC, p += 5;
	else
		return -1;
	for (;;) {
		p = skip_ws(p);
		if (!*p)
			break;
		char key[32], val[1024];
		p = param(p, key, sizeof(key), val, sizeof(val));
		if (!p)
			return -1;
		char *dst = NULL;
		size_t dn = 0;
		if (strcasecmp(key, "realm") == 0)
			dst = c->realm, dn = sizeof(c->realm);
		else if (strcasecmp(key, "service") == 0)
			dst = c->service, dn = sizeof(c->service);
		else if (strcasecmp(key, "scope") == 0)
			dst = c->scope, dn = sizeof(c->scope);
		if (dst) {
			if (strlen(val) >= dn)
				return -1;
			memcpy(dst, val, strlen(val) + 1);
		}
		p = skip_ws(p);
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	/* a Bearer challenge is useless without the token server's address */
	if (c->scheme == AUTH_BEARER && strncmp(c->realm, "https://", 8) != 0 &&
	    strncmp(c->realm, "http://", 7) != 0)
		return -1;
	return 0;
}

static bool header_safe(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

char *token_parse(const char *body, size_t n)
{
	if (!body || n == 0 || n > PULL_MAX_TOKEN)
		return NULL;
	char *text = strndup(body, n);
	if (!text)
		return NULL;
	json_object *o = js_parse_object(text, 8);
	free(text);
	const char *t = js_str(o, "token");
	if (!t || !*t)
		t = js_str(o, "access_token");
	char *out = t && strlen(t) < 64 * 1024 && header_safe(t) ? strdup(t) : NULL;
	json_object_put(o);
	return out;
}

/* Does the config's key name this registry? Keys are "host[:port]",
 * optionally with a scheme and a path ("https://index.docker.io/v1/"). */
static bool key_matches(const char *key, const struct image_ref *ref)
{
	const char *h = key;
	if (strncmp(h, "https://", 8) == 0)
		h += 8;
	else if (strncmp(h, "http://", 7) == 0)
		h += 7;
	size_t hl = strcspn(h, "/");
	if (ref->docker_hub)
		return (hl == 15 && strncmp(h, "index.docker.io", 15) == 0) ||
		       (hl == 9 && strncmp(h, "docker.io", 9) == 0) ||
		       (hl == 20 && strncmp(h, "registry-1.docker.io", 20) == 0);
	return hl == strlen(ref->registry) && strncmp(h, ref->registry, hl) == 0;
}

int creds_from_config(const char *text, size_t n, const struct image_ref *ref, char **user, char **pass,
		      char *note, size_t notelen)
{
	*user = *pass = NULL;
	if (note && notelen)
		note[0] = '\0';
	if (!text || n > (4u << 20))
		return -1;
	char *copy = strndup(text, n);
	json_object *o = copy ? js_parse_object(copy, 16) : NULL;
	free(copy);
	if (!o)
		return -1;
	int found = 0;
	json_object *auths = js_get(o, "auths", json_type_object);
	if (auths) {
		json_object_object_foreach(auths, key, val) {
			if (found || !key_matches(key, ref) || !json_object_is_type(val, json_type_object))
				continue;
			const char *a = js_str(val, "auth");
			if (a && *a) {
				unsigned char *raw = NULL;
				size_t rn = 0;
				if (base64_decode(a, &raw, &rn) == 0) {
					char *s = strndup((char *)raw, rn);
					char *colon = s && strlen(s) == rn ? strchr(s, ':') : NULL;
					if (colon && colon != s) {
						*colon = '\0';
						*user = strdup(s);
						*pass = strdup(colon + 1);
						found = *user && *pass ? 1 : 0;
					}
					free(s);
				}
				free(raw);
			} else if (js_str(val, "username") && js_str(val, "password")) {
				*user = strdup(js_str(val, "username"));
				*pass = strdup(js_str(val, "password"));
				found = *user && *pass ? 1 : 0;
			}
			if (!found) {
				free(*user);
				free(*pass);
				*user = *pass = NULL;
			}
		}
	}
	if (!found && note && notelen) {
		json_object *helpers = js_get(o, "credHelpers", json_type_object);
		bool helper = false;
		if (helpers) {
			json_object_object_foreach(helpers, hk, hv) {
				(void)hv;
				helper = helper || key_matches(hk, ref);
			}
		}
		if (helper || js_str(o, "credsStore"))
			snprintf(note, notelen,
				 "its credentials are kept by a credential helper, which abox does not run "
				 "(give them with --username and --password-stdin)");
	}
	json_object_put(o);
	return found;
}
