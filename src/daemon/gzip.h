/* gzip — streamed gzip for /files (gzip.c). */
#ifndef ABOX_DAEMON_GZIP_H
#define ABOX_DAEMON_GZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

struct gz {
	z_stream z;
	bool on, compress, ended;
};

/* Where produced bytes go; non-zero stops (the feed returns -EPIPE). */
typedef int (*gz_out_fn)(const void *data, size_t n, void *ud);

int gz_begin(struct gz *g, bool compress);
/* Feeds n bytes (finish: the last ones, compression only); output goes
 * to out in pieces of at most 64 KiB. -EINVAL for input that is not gzip. */
int gz_feed(struct gz *g, const void *in, size_t n, bool finish, gz_out_fn out, void *ud);
/* Inflation: whether the input ended exactly at a member's end. */
bool gz_complete(const struct gz *g);
void gz_end(struct gz *g);
/* Whether an Accept-Encoding value accepts gzip. */
bool gz_accepted(const char *accept);

#endif
