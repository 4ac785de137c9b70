/* netd/sni.c — server names of TLS ClientHellos and HTTP Host headers
 * (see sni.h; RFC 8446 §4.1.2, RFC 6066 §3, RFC 9112 §3.2). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "sni.h"

enum sni_kind sni_kind(const uint8_t *b, size_t n)
{
	if (n >= 1 && b[0] == 0x16)
		return SNI_TLS;
	/* a method token, then a space */
	size_t i = 0;
	while (i < n && i < 16 && b[i] >= 'A' && b[i] <= 'Z')
		i++;
	if (i > 0 && (i == n || (i < n && b[i] == ' ')))
		return SNI_HTTP;
	return SNI_OTHER;
}

/* A host name as sni.h says, copied lower case into name. */
static int host_copy(const uint8_t *s, size_t len, char *name)
{
	if (len && s[len - 1] == '.')
		len--;
	if (len == 0 || len >= SNI_NAME_MAX)
		return -EINVAL;
	size_t label = 0;
	bool alpha = false;
	for (size_t i = 0; i < len; i++) {
		uint8_t c = s[i];
		if (c == '.') {
			if (label == 0)
				return -EINVAL;
			label = 0;
			name[i] = '.';
			continue;
		}
		if (c >= 'A' && c <= 'Z')
			c = (uint8_t)(c + 32);
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return -EINVAL;
		alpha = alpha || (c >= 'a' && c <= 'z');
		if (++label > 63)
			return -EINVAL;
		name[i] = (char)c;
	}
	if (label == 0 || !alpha)
		return -EINVAL; /* "1.2.3.4" is an address, not a name */
	name[len] = '\0';
	return 0;
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

int sni_tls_name(const uint8_t *b, size_t n, char *name)
{
	if (n < 5)
		return 1;
	if (b[0] != 0x16 || b[1] != 0x03)
		return -EINVAL;
	size_t rec = rd16(b + 3);
	if (rec < 4 || rec > 16384)
		return -EINVAL;
	if (n < 5 + rec)
		return n >= SNI_PEEK_MAX ? -EINVAL : 1;
	const uint8_t *h = b + 5;
	if (h[0] != 0x01)
		return -EINVAL; /* not a ClientHello */
	size_t hl = (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
	/* a ClientHello larger than its first record (rare: huge key
	 * shares) is refused rather than read across records */
	if (hl + 4 > rec)
		return -EINVAL;
	const uint8_t *p = h + 4, *end = h + 4 + hl;
#define NEED(k)                                                                                              \
	do {                                                                                                 \
		if ((size_t)(end - p) < (k))                                                                 \
			return -EINVAL;                                                                      \
	} while (0)
	NEED(2 + 32 + 1);
	p += 2 + 32; /* version, random */
	size_t sid = *p++;
	NEED(sid + 2);
	p += sid;
	size_t cs = rd16(p);
	p += 2;
	NEED(cs + 1);
	p += cs;
	size_t comp = *p++;
	NEED(comp);
	p += comp;
	if (p == end)
		return -ENOENT; /* no extensions */
	NEED(2);
	size_t ext = rd16(p);
	p += 2;
	NEED(ext);
	end = p + ext;
	bool found = false;
	while (p < end) {
		NEED(4);
		uint16_t type = rd16(p), len = rd16(p + 2);
		p += 4;
		NEED(len);
		if (type == 0) {
			if (found || len < 2)
				return -EINVAL;
			const uint8_t *q = p, *qe = p + len;
			size_t list = rd16(q);
			q += 2;
			if (list != (size_t)(qe - q) || list < 3)
				return -EINVAL;
			/* one host_name entry (RFC 6066: at most one per type) */
			if (q[0] != 0)
				return -EINVAL;
			size_t nl = rd16(q + 1);
			if (nl + 3 != list)
				return -EINVAL;
			if (host_copy(q + 3, nl, name) < 0)
				return -EINVAL;
			found = true;
		}
		p += len;
	}
#undef NEED
	return found ? 0 : -ENOENT;
}

int sni_http_host(const uint8_t *b, size_t n, char *name)
{
	const uint8_t *end = NULL;
	for (size_t i = 0; i + 3 < n; i++)
		if (b[i] == '\r' && b[i + 1] == '\n' && b[i + 2] == '\r' && b[i + 3] == '\n') {
			end = b + i + 2;
			break;
		}
	if (!end)
		return n >= SNI_PEEK_MAX ? -EINVAL : 1;
	const uint8_t *line = memchr(b, '\n', (size_t)(end - b));
	if (!line)
		return -EINVAL;
	bool found = false;
	for (const uint8_t *p = line + 1; p < end;) {
		const uint8_t *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			break;
		size_t len = (size_t)(eol - p);
		if (len && p[len - 1] == '\r')
			len--;
		/* obsolete line folding: refused (RFC 9112 §5.2) */
		if (len && (p[0] == ' ' || p[0] == '\t'))
			return -EINVAL;
		if (len > 5 && !strncasecmp((const char *)p, "host:", 5)) {
			if (found)
				return -EINVAL;
			const uint8_t *v = p + 5, *ve = p + len;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			const uint8_t *colon = memchr(v, ':', (size_t)(ve - v));
			if (colon) {
				for (const uint8_t *d = colon + 1; d < ve; d++)
					if (*d < '0' || *d > '9')
						return -EINVAL;
				ve = colon;
			}
			if (host_copy(v, (size_t)(ve - v), name) < 0)
				return -EINVAL;
			found = true;
		}
		p = eol + 1;
	}
	return found ? 0 : -ENOENT;
}
