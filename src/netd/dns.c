/* netd/dns.c — DNS messages, bounded (see dns.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "dns.h"

#define HDR 12
#define MAX_JUMPS 64

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool name_byte_ok(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '_' || c == '*';
}

/* Reads the name at *off (following compression pointers, bounded) as
 * text into out (NULL: only skipped); *off moves past it in the message
 * as written. -EINVAL when malformed. */
static int read_name(const uint8_t *m, size_t n, size_t *off, char *out, size_t cap)
{
	size_t pos = *off, wire = 0, o = 0;
	bool jumped = false;
	int jumps = 0;
	for (;;) {
		if (pos >= n)
			return -EINVAL;
		uint8_t len = m[pos];
		if ((len & 0xc0) == 0xc0) {
			if (pos + 1 >= n || ++jumps > MAX_JUMPS)
				return -EINVAL;
			size_t to = (size_t)(len & 0x3f) << 8 | m[pos + 1];
			if (!jumped)
				*off = pos + 2;
			jumped = true;
			/* a pointer only ever points back: no loops in a row */
			if (to >= pos)
				return -EINVAL;
			pos = to;
			continue;
		}
		if (len & 0xc0)
			return -EINVAL; /* the reserved label types */
		pos++;
		if (len == 0)
			break;
		wire += (size_t)len + 1;
		if (wire > 255 || pos + len > n)
			return -EINVAL;
		if (out) {
			if (o && o + 1 < cap)
				out[o++] = '.';
			for (size_t i = 0; i < len; i++) {
				uint8_t c = m[pos + i];
				if (name_byte_ok(c)) {
					if (o + 1 >= cap)
						return -EINVAL;
					out[o++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
				} else {
					if (o + 5 >= cap)
						return -EINVAL;
					o += (size_t)snprintf(out + o, cap - o, "\\%03u", c);
				}
			}
		}
		pos += len;
	}
	if (!jumped)
		*off = pos;
	if (out)
		out[o] = '\0';
	return 0;
}

int dns_parse_query(const uint8_t *m, size_t n, struct dns_query *q)
{
	memset(q, 0, sizeof(*q));
	if (n < HDR)
		return -EINVAL;
	q->id = rd16(m);
	q->flags = rd16(m + 2);
	if (q->flags & 0x8000)
		return -EINVAL; /* a response, not a query */
	if (((q->flags >> 11) & 0xf) != 0 || rd16(m + 4) != 1)
		return -EOPNOTSUPP;
	size_t off = HDR;
	if (read_name(m, n, &off, q->name, sizeof(q->name)) < 0 || off + 4 > n)
		return -EINVAL;
	q->qtype = rd16(m + off);
	q->qclass = rd16(m + off + 2);
	q->qend = off + 4;
	return 0;
}

size_t dns_answer_empty(const uint8_t *query, size_t qend, uint8_t rcode, uint8_t *out, size_t cap)
{
	if (qend < HDR || qend > cap)
		return 0;
	memcpy(out, query, qend);
	/* QR, the query's opcode and RD, RA; the code */
	uint16_t f = (uint16_t)(0x8000 | (rd16(query + 2) & 0x7900) | 0x0080 | (rcode & 0xf));
	out[2] = (uint8_t)(f >> 8);
	out[3] = (uint8_t)f;
	bool question = qend > HDR;
	memset(out + 4, 0, 8);
	out[5] = question ? 1 : 0;
	return qend;
}

int dns_rcode(const uint8_t *m, size_t n)
{
	return n < HDR ? -EINVAL : m[3] & 0xf;
}

/* Skips the question section; off moves past it. */
static int skip_questions(const uint8_t *m, size_t n, size_t *off, unsigned count)
{
	for (unsigned i = 0; i < count; i++) {
		if (read_name(m, n, off, NULL, 0) < 0 || *off + 4 > n)
			return -EINVAL;
		*off += 4;
	}
	return 0;
}

int dns_each_a(const uint8_t *m, size_t n, int (*fn)(uint32_t addr, uint32_t ttl, void *ud), void *ud)
{
	if (n < HDR)
		return -EINVAL;
	unsigned qd = rd16(m + 4), rr = (unsigned)rd16(m + 6) + rd16(m + 8) + rd16(m + 10);
	size_t off = HDR;
	if (skip_questions(m, n, &off, qd) < 0)
		return -EINVAL;
	for (unsigned i = 0; i < rr; i++) {
		if (read_name(m, n, &off, NULL, 0) < 0 || off + 10 > n)
			return -EINVAL;
		uint16_t type = rd16(m + off), cls = rd16(m + off + 2), rdlen = rd16(m + off + 8);
		uint32_t ttl = rd32(m + off + 4);
		off += 10;
		if (off + rdlen > n)
			return -EINVAL;
		if (type == DNS_TYPE_A && cls == 1) {
			if (rdlen != 4)
				return -EINVAL;
			uint32_t a;
			memcpy(&a, m + off, 4);
			int r = fn(a, ttl, ud);
			if (r)
				return r;
		}
		off += rdlen;
	}
	return 0;
}

int dns_answers(const uint8_t *m, size_t n, const struct dns_query *q, uint16_t id)
{
	if (n < HDR || rd16(m) != id || !(m[2] & 0x80) || rd16(m + 4) != 1)
		return 0;
	size_t off = HDR;
	char name[DNS_NAME_TEXT];
	if (read_name(m, n, &off, name, sizeof(name)) < 0 || off + 4 > n)
		return 0;
	return !strcmp(name, q->name) && rd16(m + off) == q->qtype && rd16(m + off + 2) == q->qclass;
}

size_t dns_build_query(const char *name, uint16_t type, uint16_t id, uint8_t *out, size_t cap)
{
	size_t nl = strlen(name);
	if (cap < HDR + nl + 2 + 4 || nl > 253)
		return 0;
	memset(out, 0, HDR);
	out[0] = (uint8_t)(id >> 8);
	out[1] = (uint8_t)id;
	out[2] = 0x01; /* RD */
	out[5] = 1;
	size_t o = HDR;
	const char *p = name;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		if (len == 0 || len > 63)
			return 0;
		out[o++] = (uint8_t)len;
		memcpy(out + o, p, len);
		o += len;
		p += len + (dot ? 1 : 0);
	}
	out[o++] = 0;
	out[o++] = (uint8_t)(type >> 8);
	out[o++] = (uint8_t)type;
	out[o++] = 0;
	out[o++] = 1;
	return o;
}
