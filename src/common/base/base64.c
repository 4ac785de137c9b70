/* base64.c — proto3 JSON carries bytes as base64 (RFC 4648, with padding;
 * the URL-safe alphabet is accepted on input too, as proto3 JSON asks). */
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"

static const char enc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const void *data, size_t n)
{
	const unsigned char *p = data;
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	size_t i = 0;
	for (; i + 2 < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		*o++ = enc[v >> 18];
		*o++ = enc[(v >> 12) & 63];
		*o++ = enc[(v >> 6) & 63];
		*o++ = enc[v & 63];
	}
	if (i < n) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0);
		*o++ = enc[v >> 18];
		*o++ = enc[(v >> 12) & 63];
		*o++ = i + 1 < n ? enc[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

static int val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int base64_decode(const char *s, unsigned char **out, size_t *n)
{
	size_t len = strlen(s);
	unsigned char *buf = malloc(len / 4 * 3 + 3), *o = buf;
	if (!buf)
		return -1;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '=')
			break;
		int v = val(s[i]);
		if (v < 0) {
			free(buf);
			return -1;
		}
		acc = acc << 6 | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			*o++ = (unsigned char)(acc >> bits);
		}
	}
	*out = buf;
	*n = (size_t)(o - buf);
	return 0;
}
