/* handle/output.c — output truncation for agents: while a command
 * runs, each stream's first and last bytes are kept (bounded memory);
 * at its end, a stream longer than the budget is cut to head + a marker
 * naming how many characters were left out and where the whole output is +
 * tail. Cuts fall on UTF-8 character boundaries. The complete streams are
 * kept by abox-init in files inside the sandbox. Both backends feed it;
 * abox_proc_result_get (api/process.c) renders it.
 * Runs in the caller's process. */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "backend.h"

static bool cont(uint8_t c)
{
	return (c & 0xC0) == 0x80; /* UTF-8 continuation byte */
}

static uint64_t count_chars(const uint8_t *d, size_t n)
{
	uint64_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += !cont(d[i]);
	return c;
}

int truncate_setup(abox_proc *p, uint32_t threshold, uint32_t head, uint32_t tail)
{
	p->t_threshold = threshold;
	p->t_head = head ? head : threshold / 2;
	p->t_tail = tail ? tail : threshold / 2;
	uint8_t rnd[16];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	char hex[33];
	for (int i = 0; i < 16; i++)
		safe_snprintf(hex + 2 * i, 3, "%x%x", rnd[i] >> 4, rnd[i] & 15);
	safe_snprintf(p->t_dir, sizeof(p->t_dir), "/tmp/abox/cmd/%s", hex);
	struct trunc_stream *ss[2] = { &p->t_out, &p->t_err };
	for (int i = 0; i < 2; i++) {
		/* whole up to the threshold; head and tail beyond */
		ss[i]->head_cap = p->t_threshold > p->t_head ? p->t_threshold : p->t_head;
		ss[i]->tail_cap = p->t_tail;
		ss[i]->head = malloc(ss[i]->head_cap + 1);
		ss[i]->tail = malloc(ss[i]->tail_cap + 1);
		if (!ss[i]->head || !ss[i]->tail)
			return -ENOMEM;
	}
	return 0;
}

void truncate_feed(abox_proc *p, bool is_err, const uint8_t *d, size_t n)
{
	struct trunc_stream *s = is_err ? &p->t_err : &p->t_out;
	s->bytes += n;
	s->chars += count_chars(d, n);
	size_t h = s->head_cap - s->head_len < n ? s->head_cap - s->head_len : n;
	memcpy(s->head + s->head_len, d, h);
	s->head_len += h;
	if (!s->tail_cap)
		return;
	for (size_t i = 0; i < n; i++) {
		size_t at = (s->tail_start + s->tail_len) % s->tail_cap;
		s->tail[at] = d[i];
		if (s->tail_len < s->tail_cap)
			s->tail_len++;
		else
			s->tail_start = (s->tail_start + 1) % s->tail_cap;
	}
}

void truncate_free(abox_proc *p)
{
	free(p->t_out.head);
	free(p->t_out.tail);
	free(p->t_err.head);
	free(p->t_err.tail);
	memset(&p->t_out, 0, sizeof(p->t_out));
	memset(&p->t_err, 0, sizeof(p->t_err));
}

/* The text an agent sees of one stream. */
char *truncate_render(const abox_proc *p, const struct trunc_stream *s, const char *file, bool cut,
		      size_t *len)
{
	if (!cut || s->bytes <= (uint64_t)p->t_head + p->t_tail) {
		/* complete: short enough (it is all in head, whose capacity
		 * covers the threshold and head+tail) */
		size_t n = s->head_len;
		char *t = malloc(n + 1);
		if (!t)
			return NULL;
		memcpy(t, s->head, n);
		t[n] = '\0';
		*len = n;
		return t;
	}
	size_t hn = p->t_head < s->head_len ? p->t_head : s->head_len;
	while (hn > 0 && hn < s->head_len && cont(s->head[hn]))
		hn--; /* do not end inside a character */
	uint8_t *tl = malloc(s->tail_len + 1);
	if (!tl)
		return NULL;
	for (size_t i = 0; i < s->tail_len; i++)
		tl[i] = s->tail[(s->tail_start + i) % s->tail_cap];
	size_t ts = 0;
	while (ts < s->tail_len && cont(tl[ts]))
		ts++; /* nor start inside one */
	uint64_t omitted = s->chars - count_chars(s->head, hn) - count_chars(tl + ts, s->tail_len - ts);
	char marker[300];
	/* on a line of its own, without a blank line when head ends one */
	int mn = snprintf(
		marker, sizeof(marker), "%s... [%llu characters omitted] ...\n(Full output: %s/%s)\n",
		hn > 0 && s->head[hn - 1] == '\n' ? "" : "\n", (unsigned long long)omitted, p->t_dir, file);
	size_t n = hn + (size_t)mn + (s->tail_len - ts);
	char *t = malloc(n + 1);
	if (!t) {
		free(tl);
		return NULL;
	}
	memcpy(t, s->head, hn);
	memcpy(t + hn, marker, (size_t)mn);
	memcpy(t + hn + (size_t)mn, tl + ts, s->tail_len - ts);
	t[n] = '\0';
	free(tl);
	*len = n;
	return t;
}
