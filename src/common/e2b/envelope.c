/* e2b/envelope.c — Connect envelopes (flag byte, 4-byte big-endian
 * length, JSON): written, and cut from a byte stream that arrives in any
 * pieces (the remote backend reads process streams with it, aboxd the
 * client stream of process.Process/StreamInput). Bounded, strict:
 * whatever sends the bytes is not trusted (tests/fuzz/fuzz_remote.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/e2b.h"

void e2b_envelope_head(char out[E2B_ENVELOPE_HEAD], uint8_t flags, size_t n)
{
	out[0] = (char)flags;
	out[1] = (char)(n >> 24);
	out[2] = (char)(n >> 16);
	out[3] = (char)(n >> 8);
	out[4] = (char)n;
}

char *e2b_envelope(uint8_t flags, json_object *o, size_t *len)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen(s);
	char *env = malloc(n + E2B_ENVELOPE_HEAD);
	if (!env)
		return NULL;
	e2b_envelope_head(env, flags, n);
	memcpy(env + E2B_ENVELOPE_HEAD, s, n);
	*len = n + E2B_ENVELOPE_HEAD;
	return env;
}

int envq_push(struct envq *q, const void *d, size_t n)
{
	if (q->off && q->off == q->len)
		q->off = q->len = 0;
	if (q->len - q->off + n > ENVQ_MAX + 5)
		return -E2BIG;
	if (q->len + n > q->cap) {
		/* move what is left to the front before growing */
		memmove(q->buf, q->buf + q->off, q->len - q->off);
		q->len -= q->off;
		q->off = 0;
		if (q->len + n > q->cap) {
			size_t cap = (q->len + n) * 2;
			uint8_t *p = realloc(q->buf, cap);
			if (!p)
				return -ENOMEM;
			q->buf = p;
			q->cap = cap;
		}
	}
	memcpy(q->buf + q->len, d, n);
	q->len += n;
	return 0;
}

int envq_next(struct envq *q, uint8_t *flags, json_object **o, char *why, size_t whyn)
{
	*o = NULL;
	size_t avail = q->len - q->off;
	if (avail < 5)
		return 0;
	const uint8_t *h = q->buf + q->off;
	uint32_t l = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
	if (l > ENVQ_MAX) {
		snprintf(why, whyn, "a Connect message of %u bytes (the bound is %u)", l, ENVQ_MAX);
		return -EPROTO;
	}
	if (h[0] & ~0x03u) {
		snprintf(why, whyn, "Connect envelope flags 0x%02x", h[0]);
		return -EPROTO;
	}
	if (h[0] & 0x01) {
		snprintf(why, whyn, "a compressed Connect message (none was asked for)");
		return -EPROTO;
	}
	if (avail - 5 < l)
		return 0;
	*flags = h[0];
	q->off += 5 + l;
	if (l == 0 && (*flags & E2B_END_STREAM))
		return 1; /* an empty end-stream: fine */
	json_tokener *t = json_tokener_new_ex(32);
	if (!t) {
		snprintf(why, whyn, "out of memory");
		return -ENOMEM;
	}
	*o = json_tokener_parse_ex(t, (const char *)h + 5, (int)l);
	bool whole = json_tokener_get_error(t) == json_tokener_success &&
		     json_tokener_get_parse_end(t) == (size_t)l;
	json_tokener_free(t);
	if (!*o || !whole || !json_object_is_type(*o, json_type_object)) {
		json_object_put(*o);
		*o = NULL;
		snprintf(why, whyn, "a Connect message that is not one JSON object");
		return -EPROTO;
	}
	return 1;
}

int envq_each(struct envq *q, int (*fn)(void *ud, uint8_t flags, json_object *o), void *ud, char *why,
	      size_t whyn)
{
	for (;;) {
		uint8_t flags = 0;
		json_object *o = NULL;
		int k = envq_next(q, &flags, &o, why, whyn);
		if (k <= 0)
			return k;
		k = fn(ud, flags, o);
		json_object_put(o);
		if (k)
			return k;
	}
}

void envq_free(struct envq *q)
{
	free(q->buf);
	*q = (struct envq){ 0 };
}
