/* proto/frame.c — frame encoding, decoding and fd passing (see proto.h).
 * Runs in the CLI/daemon and in abox-init; libc only. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/fdpass.h"
#include "proto/proto.h"

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

void proto_msg_init(struct proto_msg *m, uint16_t type, uint32_t id)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->id = id;
	m->len = PROTO_HDR_SIZE;
}

void proto_msg_free(struct proto_msg *m)
{
	free(m->buf);
	m->buf = NULL;
	m->len = m->cap = 0;
}

static uint8_t *reserve(struct proto_msg *m, size_t n)
{
	if (m->failed)
		return NULL;
	if (m->len + n - PROTO_HDR_SIZE > PROTO_MAX_PAYLOAD) {
		m->failed = EMSGSIZE;
		return NULL;
	}
	if (m->len + n > m->cap) {
		size_t ncap = m->cap ? m->cap : 256;
		while (ncap < m->len + n)
			ncap *= 2;
		uint8_t *nb = realloc(m->buf, ncap);
		if (!nb) {
			m->failed = ENOMEM;
			return NULL;
		}
		m->buf = nb;
		m->cap = ncap;
	}
	uint8_t *p = m->buf + m->len;
	m->len += n;
	return p;
}

void proto_put_bytes(struct proto_msg *m, uint16_t tag, const void *data, size_t n)
{
	if (n > PROTO_MAX_PAYLOAD) {
		m->failed = EMSGSIZE;
		return;
	}
	uint8_t *p = reserve(m, PROTO_FIELD_HDR + n);
	if (!p)
		return;
	put_le16(p, tag);
	put_le32(p + 2, (uint32_t)n);
	if (n)
		memcpy(p + PROTO_FIELD_HDR, data, n);
}

void proto_put_str(struct proto_msg *m, uint16_t tag, const char *s)
{
	proto_put_bytes(m, tag, s, strlen(s));
}

void proto_put_u64(struct proto_msg *m, uint16_t tag, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	proto_put_bytes(m, tag, b, sizeof(b));
}

void proto_put_i64(struct proto_msg *m, uint16_t tag, int64_t v)
{
	proto_put_u64(m, tag, (uint64_t)v);
}

void proto_put_fd(struct proto_msg *m, int fd)
{
	if (m->nfds >= PROTO_MAX_FDS || fd < 0) {
		m->failed = EBADF;
		return;
	}
	m->fds[m->nfds++] = fd;
}

/* Writes the header in front of the payload. */
static int finish_header(struct proto_msg *m)
{
	if (m->failed)
		return -m->failed;
	if (!m->buf) {
		/* empty payload: make room for the header */
		m->buf = malloc(PROTO_HDR_SIZE);
		if (!m->buf)
			return -ENOMEM;
		m->cap = PROTO_HDR_SIZE;
	}
	uint8_t *h = m->buf;
	put_le32(h, (uint32_t)(m->len - PROTO_HDR_SIZE));
	put_le16(h + 4, m->type);
	h[6] = (uint8_t)m->nfds;
	h[7] = 0;
	put_le32(h + 8, m->id);
	return 0;
}

int proto_queue(struct proto_outq *q, struct proto_msg *m)
{
	int r = finish_header(m);
	if (r < 0)
		return r;
	if (m->nfds)
		return -EINVAL; /* fds need proto_send: they ride on a byte */
	if (q->start > 0 && q->start == q->end)
		q->start = q->end = 0;
	if (q->cap - q->end < m->len) {
		if (q->start > 0) {
			memmove(q->buf, q->buf + q->start, q->end - q->start);
			q->end -= q->start;
			q->start = 0;
		}
		if (q->cap - q->end < m->len) {
			size_t ncap = q->cap ? q->cap : 65536;
			while (ncap - q->end < m->len)
				ncap *= 2;
			uint8_t *nb = realloc(q->buf, ncap);
			if (!nb)
				return -ENOMEM;
			q->buf = nb;
			q->cap = ncap;
		}
	}
	memcpy(q->buf + q->end, m->buf, m->len);
	q->end += m->len;
	return 0;
}

int proto_flush(int sock, struct proto_outq *q)
{
	while (q->end > q->start) {
		ssize_t w = send(sock, q->buf + q->start, q->end - q->start, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 1;
			return -errno;
		}
		q->start += (size_t)w;
	}
	q->start = q->end = 0;
	/* a burst may have grown the buffer: give it back once idle */
	if (q->cap > (1u << 20)) {
		free(q->buf);
		q->buf = NULL;
		q->cap = 0;
	}
	return 0;
}

size_t proto_outq_len(const struct proto_outq *q)
{
	return q->end - q->start;
}

void proto_outq_free(struct proto_outq *q)
{
	free(q->buf);
	memset(q, 0, sizeof(*q));
}

int proto_send(int sock, struct proto_msg *m)
{
	int r = finish_header(m);
	if (r < 0)
		return r;

	size_t off = 0;
	bool fds_sent = m->nfds == 0;
	while (off < m->len) {
		/* the fds go with the first bytes that leave */
		ssize_t w = fd_send(sock, m->buf + off, m->len - off, m->fds, fds_sent ? 0 : m->nfds, 0);
		if (w < 0) {
			if (w == -EAGAIN) {
				/* a non-blocking socket whose buffer is full: wait for
				 * room rather than tear a frame in half */
				struct pollfd p = { .fd = sock, .events = POLLOUT };
				poll(&p, 1, -1);
				continue;
			}
			return (int)w;
		}
		fds_sent = true;
		off += (size_t)w;
	}
	return 0;
}

int proto_decode(const uint8_t *buf, size_t len, struct proto_frame *f, size_t *consumed)
{
	if (len < PROTO_HDR_SIZE)
		return 0;
	uint32_t plen = get_le32(buf);
	if (plen > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (buf[6] > PROTO_MAX_FDS || buf[7] != 0)
		return -EPROTO;
	if (len - PROTO_HDR_SIZE < plen)
		return 0;
	f->type = get_le16(buf + 4);
	f->nfds = buf[6];
	f->id = get_le32(buf + 8);
	f->payload = buf + PROTO_HDR_SIZE;
	f->len = plen;
	*consumed = PROTO_HDR_SIZE + (size_t)plen;
	return 1;
}

int proto_field_next(const struct proto_frame *f, size_t *off, struct proto_field *fl)
{
	if (*off == f->len)
		return 0;
	if (*off > f->len || f->len - *off < PROTO_FIELD_HDR)
		return -EPROTO;
	const uint8_t *p = f->payload + *off;
	uint32_t n = get_le32(p + 2);
	if (n > f->len - *off - PROTO_FIELD_HDR)
		return -EPROTO;
	fl->tag = get_le16(p);
	fl->len = n;
	fl->val = p + PROTO_FIELD_HDR;
	*off += PROTO_FIELD_HDR + n;
	return 1;
}

int proto_field_u64(const struct proto_field *fl, uint64_t *v)
{
	if (fl->len != 8)
		return -EPROTO;
	uint64_t r = 0;
	for (int i = 7; i >= 0; i--)
		r = (r << 8) | fl->val[i];
	*v = r;
	return 0;
}

int proto_field_i64(const struct proto_field *fl, int64_t *v)
{
	uint64_t u;
	int r = proto_field_u64(fl, &u);
	if (r < 0)
		return r;
	*v = (int64_t)u;
	return 0;
}

int proto_field_strdup(const struct proto_field *fl, char **out)
{
	if (memchr(fl->val, '\0', fl->len))
		return -EPROTO;
	char *s = malloc((size_t)fl->len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, fl->val, fl->len);
	s[fl->len] = '\0';
	*out = s;
	return 0;
}

void proto_reader_init(struct proto_reader *r, int sock)
{
	memset(r, 0, sizeof(*r));
	r->sock = sock;
}

void proto_reader_free(struct proto_reader *r)
{
	for (unsigned i = 0; i < r->nfdq; i++)
		close(r->fdq[i]);
	r->nfdq = 0;
	free(r->buf);
	r->buf = NULL;
	r->start = r->end = r->cap = 0;
}

int proto_reader_fill(struct proto_reader *r)
{
	if (r->start > 0 && r->start == r->end)
		r->start = r->end = 0;
	if (r->cap - r->end < 4096) {
		/* compact, then grow up to one maximal frame */
		if (r->start > 0) {
			memmove(r->buf, r->buf + r->start, r->end - r->start);
			r->end -= r->start;
			r->start = 0;
		}
		if (r->cap - r->end < 4096) {
			size_t ncap = r->cap ? r->cap * 2 : 16384;
			if (ncap > PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD + 65536)
				ncap = PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD + 65536;
			if (ncap <= r->cap)
				return -EMSGSIZE;
			uint8_t *nb = realloc(r->buf, ncap);
			if (!nb)
				return -ENOMEM;
			r->buf = nb;
			r->cap = ncap;
		}
	}
	size_t room = sizeof(r->fdq) / sizeof(r->fdq[0]) - r->nfdq, got = 0;
	/* more fds than the queue holds are closed: a peer flooding us */
	ssize_t n = fd_recv(r->sock, r->buf + r->end, r->cap - r->end, r->fdq + r->nfdq, room, &got, MSG_DONTWAIT);
	if (n < 0)
		return (int)n;
	r->nfdq += got;
	if (n == 0) {
		r->eof = true;
		return 0;
	}
	r->end += (size_t)n;
	return (int)n;
}

int proto_reader_next(struct proto_reader *r, struct proto_frame *f)
{
	size_t consumed;
	int k = proto_decode(r->buf ? r->buf + r->start : NULL, r->end - r->start, f, &consumed);
	if (k <= 0)
		return k;
	if (f->nfds > r->nfdq)
		return -EBADMSG;
	memcpy(f->fds, r->fdq, sizeof(int) * f->nfds);
	memmove(r->fdq, r->fdq + f->nfds, sizeof(int) * (r->nfdq - f->nfds));
	r->nfdq -= f->nfds;
	r->start += consumed;
	return 1;
}

int proto_recv(struct proto_reader *r, struct proto_frame *f)
{
	return proto_recv_timeout(r, f, -1);
}

int proto_recv_timeout(struct proto_reader *r, struct proto_frame *f, int timeout_ms)
{
	for (;;) {
		int k = proto_reader_next(r, f);
		if (k != 0)
			return k;
		if (r->eof)
			return 0;
		k = proto_reader_fill(r);
		if (k == -EAGAIN) {
			struct pollfd p = { .fd = r->sock, .events = POLLIN };
			if (poll(&p, 1, timeout_ms) == 0)
				return -ETIMEDOUT;
			continue;
		}
		if (k < 0)
			return k;
		if (k == 0 && r->end == r->start)
			return 0;
		if (k == 0)
			return -EPROTO; /* EOF in the middle of a frame */
	}
}
