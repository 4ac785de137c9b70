/* stream.c — see stream.h. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "e2b/e2b.h"
#include "stream.h"

void ebuf_put(struct ebuf *b, unsigned char flag, json_object *o)
{
	const char *j = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	size_t n = strlen(j);
	if (b->off == b->len)
		b->off = b->len = 0;
	if (b->len + n + 5 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 8192;
		while (cap < b->len + n + 5)
			cap *= 2;
		char *nb = realloc(b->buf, cap);
		if (!nb) {
			json_object_put(o);
			return;
		}
		b->buf = nb;
		b->cap = cap;
	}
	char *p = b->buf + b->len;
	e2b_envelope_head(p, flag, n);
	memcpy(p + E2B_ENVELOPE_HEAD, j, n);
	b->len += n + E2B_ENVELOPE_HEAD;
	b->last_ms = clock_mono_ms();
	json_object_put(o);
}

void ebuf_event(struct ebuf *b, const char *kind, json_object *body)
{
	json_object *ev = json_object_new_object(), *o = json_object_new_object();
	json_object_object_add(ev, kind, body);
	json_object_object_add(o, "event", ev);
	ebuf_put(b, 0, o);
}

void ebuf_field(struct ebuf *b, const char *kind, json_object *body)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, kind, body);
	ebuf_put(b, 0, o);
}

void ebuf_end(struct ebuf *b, const char *code, const char *msg)
{
	json_object *o = json_object_new_object();
	if (code) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "code", json_object_new_string(code));
		json_object_object_add(e, "message", json_object_new_string(msg));
		json_object_object_add(o, "error", e);
	}
	ebuf_put(b, 2, o);
	b->finished = true;
}

size_t ebuf_take(struct ebuf *b, char *out, size_t max)
{
	size_t n = b->len - b->off < max ? b->len - b->off : max;
	if (!n)
		return 0; /* nothing queued yet: buf may still be NULL */
	memcpy(out, b->buf + b->off, n);
	b->off += n;
	return n;
}

ssize_t ebuf_read(struct ebuf *b, char *out, size_t max, void (*fill)(void *cls), void *cls)
{
	for (;;) {
		size_t n = ebuf_take(b, out, max);
		if (n)
			return (ssize_t)n;
		if (b->finished)
			return MHD_CONTENT_READER_END_OF_STREAM;
		fill(cls);
	}
}

void ebuf_free(struct ebuf *b)
{
	free(b->buf);
	*b = (struct ebuf){ 0 };
}
