/* multipart.h — a multipart/form-data body parsed as it arrives, in
 * constant memory (the part headers are capped, the data is handed on
 * in pieces). Runs in aboxd. */
#ifndef ABOX_DAEMON_MULTIPART_H
#define ABOX_DAEMON_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>

#define MP_MAX_HEADERS 8192

struct mp_ops {
	/* a part starts: its headers as sent (NUL-terminated) */
	int (*begin)(void *ud, const char *headers);
	int (*data)(void *ud, const char *p, size_t n);
	int (*end)(void *ud);
};

struct mp_out {
	char buf[65536];
	size_t n;
};

struct mp {
	char delim[80]; /* "\r\n--" + boundary */
	size_t dlen, match;
	int state;
	char hdr[MP_MAX_HEADERS];
	size_t hlen;
	bool stopped;      /* a callback said stop: the rest is ignored */
	struct mp_out out; /* data gathered for the next data() call */
};

/* The boundary of a Content-Type: -EINVAL (why filled) when there is no
 * usable one. */
int mp_init(struct mp *m, const char *content_type, char *why, size_t n);
/* Feeds bytes; the callbacks run as parts start, carry data and end.
 * -EINVAL (why filled) when the body is not well formed. */
int mp_feed(struct mp *m, const char *p, size_t n, const struct mp_ops *ops, void *ud, char *why, size_t wn);
/* Whether the closing delimiter came. */
bool mp_complete(const struct mp *m);
/* A parameter of the Content-Disposition in headers (name, filename):
 * copied to out, 0; -ENOENT when there is none. */
int mp_disposition(const char *headers, const char *param, char *out, size_t n);

#endif
