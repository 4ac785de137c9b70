/* gzip.c — Content-Encoding: gzip for /files, both ways and streamed:
 * an upload is inflated as it arrives (a bomb fills the sandbox's disk
 * limit, never the daemon's memory), a download deflated as it is read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gzip.h"

#define GZ_WINDOW (15 + 16) /* zlib's window, gzip framing */

int gz_begin(struct gz *g, bool compress)
{
	memset(g, 0, sizeof(*g));
	g->compress = compress;
	int r = compress ? deflateInit2(&g->z, 1, Z_DEFLATED, GZ_WINDOW, 8, Z_DEFAULT_STRATEGY)
			 : inflateInit2(&g->z, GZ_WINDOW);
	if (r != Z_OK)
		return -ENOMEM;
	g->on = true;
	return 0;
}

int gz_feed(struct gz *g, const void *in, size_t n, bool finish, gz_out_fn out, void *ud)
{
	unsigned char buf[64 << 10];
	g->z.next_in = (unsigned char *)(uintptr_t)in;
	g->z.avail_in = (uInt)n;
	for (;;) {
		g->z.next_out = buf;
		g->z.avail_out = sizeof(buf);
		int r;
		if (g->compress) {
			r = deflate(&g->z, finish ? Z_FINISH : Z_NO_FLUSH);
			if (r == Z_STREAM_ERROR)
				return -EIO;
		} else {
			if (g->ended && g->z.avail_in) {
				/* another gzip member follows (concatenated files are
				 * one file, as gunzip reads them) */
				if (inflateReset(&g->z) != Z_OK)
					return -EIO;
				g->ended = false;
			}
			r = inflate(&g->z, Z_NO_FLUSH);
			if (r == Z_STREAM_END)
				g->ended = true;
			else if (r != Z_OK && r != Z_BUF_ERROR)
				return -EINVAL; /* not gzip, or corrupt */
		}
		size_t made = sizeof(buf) - g->z.avail_out;
		if (made && out(buf, made, ud) != 0)
			return -EPIPE;
		if (g->compress) {
			if (finish ? r == Z_STREAM_END : g->z.avail_in == 0 && g->z.avail_out != 0)
				return 0;
		} else if (g->z.avail_in == 0 && g->z.avail_out != 0) {
			return 0;
		} else if (g->ended && g->z.avail_in == 0) {
			return 0;
		}
	}
}

bool gz_complete(const struct gz *g)
{
	return g->ended;
}

void gz_end(struct gz *g)
{
	if (!g->on)
		return;
	if (g->compress)
		deflateEnd(&g->z);
	else
		inflateEnd(&g->z);
	g->on = false;
}

bool gz_accepted(const char *accept)
{
	/* "gzip", "gzip, deflate", "br;q=1.0, gzip;q=0.8"; not "gzip;q=0" */
	while (accept && *accept) {
		size_t n = strcspn(accept, ",");
		char tok[128];
		snprintf(tok, sizeof(tok), "%.*s", (int)(n < sizeof(tok) - 1 ? n : sizeof(tok) - 1), accept);
		char *name = tok + strspn(tok, " \t"), *semi = strchr(name, ';');
		if (semi)
			*semi = '\0';
		size_t l = strcspn(name, " \t");
		name[l] = '\0';
		if (!strcasecmp(name, "gzip") || !strcasecmp(name, "x-gzip")) {
			const char *q = semi ? strstr(semi + 1, "q=") : NULL;
			return !q || strtod(q + 2, NULL) > 0;
		}
		accept += n + (accept[n] == ',');
	}
	return false;
}
