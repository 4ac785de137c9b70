/* multipart.c — see multipart.h. The delimiter is found byte by byte:
 * it starts with CR and a boundary holds no CR (checked), so a failed
 * partial match can only restart at the byte at hand, and the bytes it
 * had matched are known (the delimiter's own prefix) and go out as data.
 * No part is ever held whole: an 80 MB file costs 64 KiB here. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "multipart.h"

enum { S_PREAMBLE, S_AFTER, S_AFTER_LF, S_DASH, S_HEADERS, S_DATA, S_EPILOGUE };

int mp_init(struct mp *m, const char *ct, char *why, size_t n)
{
	memset(m, 0, sizeof(*m));
	const char *b = ct ? strcasestr(ct, "boundary=") : NULL;
	if (!b) {
		snprintf(why, n, "multipart without a boundary");
		return -EINVAL;
	}
	b += 9;
	size_t bl;
	if (*b == '"') {
		b++;
		bl = strcspn(b, "\"");
	} else {
		bl = strcspn(b, "; \t");
	}
	/* RFC 2046: 1 to 70 characters, none of them CR or LF */
	if (bl == 0 || bl > 70 || memchr(b, '\r', bl) || memchr(b, '\n', bl)) {
		snprintf(why, n, "multipart boundary: 1 to 70 characters without CR or LF");
		return -EINVAL;
	}
	m->dlen = (size_t)snprintf(m->delim, sizeof(m->delim), "\r\n--%.*s", (int)bl, b);
	m->match = 2; /* the first delimiter may open the body: its CRLF is implied */
	m->state = S_PREAMBLE;
	return 0;
}

bool mp_complete(const struct mp *m)
{
	return m->state == S_EPILOGUE;
}

static int flush(struct mp *m, struct mp_out *o, const struct mp_ops *ops, void *ud)
{
	int r = 0;
	if (o->n && !m->stopped)
		r = ops->data(ud, o->buf, o->n);
	o->n = 0;
	if (r)
		m->stopped = true;
	return r;
}

static int emit(struct mp *m, struct mp_out *o, const char *p, size_t n, const struct mp_ops *ops, void *ud)
{
	while (n) {
		size_t k = sizeof(o->buf) - o->n < n ? sizeof(o->buf) - o->n : n;
		memcpy(o->buf + o->n, p, k);
		o->n += k;
		p += k;
		n -= k;
		if (o->n == sizeof(o->buf) && flush(m, o, ops, ud))
			return 1;
	}
	return 0;
}

int mp_feed(struct mp *m, const char *p, size_t n, const struct mp_ops *ops, void *ud, char *why, size_t wn)
{
	struct mp_out *o = &m->out;
	o->n = 0;
	for (size_t i = 0; i < n && !m->stopped; i++) {
		char c = p[i];
		switch (m->state) {
		case S_PREAMBLE:
		case S_DATA:
			if (c == m->delim[m->match]) {
				if (++m->match < m->dlen)
					break;
				m->match = 0;
				if (m->state == S_DATA) {
					if (flush(m, o, ops, ud))
						break;
					if (ops->end(ud)) {
						m->stopped = true;
						break;
					}
				}
				m->state = S_AFTER;
				break;
			}
			if (m->match && m->state == S_DATA && emit(m, o, m->delim, m->match, ops, ud))
				break;
			m->match = c == m->delim[0];
			if (!m->match && m->state == S_DATA && emit(m, o, &c, 1, ops, ud))
				break;
			break;
		case S_AFTER:
			if (c == '-')
				m->state = S_DASH;
			else if (c == '\r')
				m->state = S_AFTER_LF;
			else if (c != ' ' && c != '\t')
				goto bad;
			break;
		case S_DASH:
			if (c != '-')
				goto bad;
			m->state = S_EPILOGUE;
			break;
		case S_AFTER_LF:
			if (c != '\n')
				goto bad;
			m->state = S_HEADERS;
			m->hlen = 0;
			break;
		case S_HEADERS:
			if (m->hlen + 1 >= sizeof(m->hdr)) {
				snprintf(why, wn, "a multipart part's headers are over %d bytes",
				         MP_MAX_HEADERS);
				return -EINVAL;
			}
			m->hdr[m->hlen++] = c;
			m->hdr[m->hlen] = '\0';
			if ((m->hlen == 2 && !memcmp(m->hdr, "\r\n", 2)) ||
			    (m->hlen >= 4 && !memcmp(m->hdr + m->hlen - 4, "\r\n\r\n", 4))) {
				if (ops->begin(ud, m->hdr)) {
					m->stopped = true;
					break;
				}
				m->state = S_DATA;
				m->match = 0;
			}
			break;
		case S_EPILOGUE:
			i = n; /* what follows the closing delimiter is ignored */
			break;
		}
	}
	if (m->state == S_DATA)
		(void)flush(m, o, ops, ud);
	return 0;
bad:
	snprintf(why, wn, "a multipart delimiter is followed by neither CRLF nor \"--\"");
	return -EINVAL;
}

int mp_disposition(const char *headers, const char *param, char *out, size_t n)
{
	const char *h = headers;
	while (h && *h) {
		const char *eol = strstr(h, "\r\n");
		size_t len = eol ? (size_t)(eol - h) : strlen(h);
		if (len > 20 && !strncasecmp(h, "content-disposition:", 20)) {
			size_t pl = strlen(param);
			for (const char *s = h + 20; s < h + len;) {
				s += strspn(s, " \t;");
				if (s >= h + len)
					break;
				size_t kl = strcspn(s, "=;\r");
				const char *v = s + kl + (s[kl] == '=');
				size_t vl;
				bool quoted = *v == '"';
				if (quoted) {
					v++;
					vl = strcspn(v, "\"\r");
				} else {
					vl = strcspn(v, ";\r \t");
				}
				if (kl == pl && !strncasecmp(s, param, pl) && s[kl] == '=') {
					if (vl >= n)
						return -ENAMETOOLONG;
					memcpy(out, v, vl);
					out[vl] = '\0';
					return 0;
				}
				const char *next = v + vl + (quoted && v[vl] == '"');
				/* a bare CR inside the line stops every span
				 * above where it stands: step over it, or a
				 * hostile part header loops here for ever (it
				 * hung a daemon thread) */
				s = next > s ? next : s + 1;
			}
		}
		h = eol ? eol + 2 : NULL;
	}
	return -ENOENT;
}
