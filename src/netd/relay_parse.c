/* netd/relay_parse.c — HTTP proxy and SOCKS5 requests (relay_parse.h).
 * Pure functions over the bytes read so far: the relay calls them again
 * as more arrive. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "relay_parse.h"

/* A host as the relay takes it: lower-cased into out, or false. */
static bool host_take(const char *s, size_t n, char out[RELAY_HOST_MAX])
{
	if (n == 0 || n >= RELAY_HOST_MAX || s[0] == '.' || s[0] == '-')
		return false;
	if (s[n - 1] == '.')
		n--; /* "example.com." is example.com */
	if (n == 0 || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
			  (c == '.' && (i + 1 >= n || s[i + 1] != '.'));
		if (!ok)
			return false;
		out[i] = c;
	}
	out[n] = '\0';
	return true;
}

static bool port_take(const char *s, size_t n, uint16_t *port)
{
	if (n == 0 || n > 5)
		return false;
	unsigned v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

/* host[:port] (port required when def is 0) */
static int authority_take(const char *s, size_t n, uint16_t def, struct relay_req *r)
{
	if (n && s[0] == '[')
		return -EAFNOSUPPORT;
	if (memchr(s, '@', n))
		return -EINVAL; /* no credentials in a proxy target */
	const char *colon = memchr(s, ':', n);
	size_t hl = colon ? (size_t)(colon - s) : n;
	if (!host_take(s, hl, r->host))
		return -EINVAL;
	if (colon)
		return port_take(colon + 1, n - hl - 1, &r->port) ? 0 : -EINVAL;
	if (!def)
		return -EINVAL;
	r->port = def;
	return 0;
}

static bool is_tchar(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

int relay_http_parse(const uint8_t *b, size_t n, struct relay_req *r)
{
	memset(r, 0, sizeof(*r));
	const char *s = (const char *)b;
	size_t lim = n < RELAY_HEAD_MAX ? n : RELAY_HEAD_MAX;
	const char *end = memmem(s, lim, "\r\n\r\n", 4);
	if (!end)
		return n >= RELAY_HEAD_MAX ? -EMSGSIZE : 1;
	const char *eol = memmem(s, (size_t)(end - s) + 2, "\r\n", 2);
	size_t ll = (size_t)(eol - s);
	/* METHOD SP TARGET SP HTTP/1.x */
	const char *sp1 = memchr(s, ' ', ll);
	if (!sp1 || sp1 == s)
		return -EINVAL;
	for (const char *p = s; p < sp1; p++)
		if (!is_tchar(*p))
			return -EINVAL;
	const char *tgt = sp1 + 1;
	const char *sp2 = memchr(tgt, ' ', ll - (size_t)(tgt - s));
	if (!sp2 || sp2 == tgt)
		return -EINVAL;
	size_t vl = ll - (size_t)(sp2 + 1 - s);
	if (vl != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) || (sp2[8] != '0' && sp2[8] != '1'))
		return -EINVAL;
	size_t tl = (size_t)(sp2 - tgt);
	for (size_t i = 0; i < tl; i++)
		if ((unsigned char)tgt[i] <= ' ' || tgt[i] == 0x7f)
			return -EINVAL;
	size_t ml = (size_t)(sp1 - s);
	if (ml == 7 && !memcmp(s, "CONNECT", 7)) {
		int e = authority_take(tgt, tl, 0, r);
		if (e < 0)
			return e;
		r->proto = RELAY_CONNECT;
		r->used = (size_t)(end - s) + 4;
		return 0;
	}
	if (tl < 7 || strncasecmp(tgt, "http://", 7)) {
		/* https:// and other schemes go through CONNECT; an origin
		 * form ("/x") is a client that took the relay for a server */
		const char *colon = memmem(tgt, tl, "://", 3);
		return colon ? -EPROTONOSUPPORT : -EINVAL;
	}
	const char *auth = tgt + 7, *tend = tgt + tl;
	const char *rest = auth;
	while (rest < tend && *rest != '/' && *rest != '?' && *rest != '#')
		rest++;
	int e = authority_take(auth, (size_t)(rest - auth), 80, r);
	if (e < 0)
		return e;
	/* a fragment is never sent */
	const char *hash = memchr(rest, '#', (size_t)(tend - rest));
	size_t pl = (size_t)((hash ? hash : tend) - rest);
	bool slash = pl == 0 || *rest != '/';
	size_t need = ml + 1 + slash + pl + 1 + 8 + 2;
	if (need >= sizeof(r->line))
		return -EMSGSIZE;
	char *o = r->line;
	memcpy(o, s, ml + 1);
	o += ml + 1;
	if (slash)
		*o++ = '/';
	memcpy(o, rest, pl);
	o += pl;
	*o++ = ' ';
	memcpy(o, sp2 + 1, 8);
	o += 8;
	memcpy(o, "\r\n", 2);
	o += 2;
	r->line_len = (size_t)(o - r->line);
	r->proto = RELAY_FORWARD;
	r->used = ll + 2;
	return 0;
}

int relay_socks_hello(const uint8_t *b, size_t n, size_t *used)
{
	if (n < 1)
		return 1;
	if (b[0] != 5)
		return -EINVAL;
	if (n < 2)
		return 1;
	if (b[1] == 0)
		return -EINVAL;
	if (n < 2u + b[1])
		return 1;
	*used = 2u + b[1];
	return memchr(b + 2, 0, b[1]) ? 0 : -EACCES;
}

int relay_socks_parse(const uint8_t *b, size_t n, struct relay_req *r)
{
	memset(r, 0, sizeof(*r));
	r->proto = RELAY_SOCKS5;
	if (n < 4)
		return n && b[0] != 5 ? -EINVAL : 1;
	if (b[0] != 5 || b[2] != 0)
		return -EINVAL;
	size_t alen;
	switch (b[3]) {
	case 1:
		alen = 4;
		break;
	case 3:
		if (n < 5)
			return 1;
		alen = 1u + b[4];
		break;
	default:
		return -EAFNOSUPPORT;
	}
	if (n < 4 + alen + 2)
		return 1;
	if (b[1] != 1)
		return -EOPNOTSUPP;
	const uint8_t *pp = b + 4 + alen;
	r->port = (uint16_t)(pp[0] << 8 | pp[1]);
	if (r->port == 0)
		return -EINVAL;
	if (b[3] == 1) {
		if (!inet_ntop(AF_INET, b + 4, r->host, sizeof(r->host)))
			return -EINVAL;
	} else if (!host_take((const char *)b + 5, b[4], r->host)) {
		return -EINVAL;
	}
	r->used = 4 + alen + 2;
	return 0;
}
