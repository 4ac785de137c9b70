/* head.c — checks on a request's head (request line and headers) that
 * libmicrohttpd leaves to us, made once the head is in and before any
 * body is read; what fails is answered at once and the connection closed.
 *
 *  - Content-Length given twice with different values: which one frames
 *    the body is a guess a proxy in front may make differently (request
 *    smuggling), so 400, as RFC 9112 6.3 asks.
 *  - A Transfer-Encoding other than "chunked": libmicrohttpd then reads
 *    the body until the client closes, so the request hung until the idle
 *    cut. 501, as RFC 9112 6.1 asks (and Go's server, what E2B runs).
 *  - A NUL byte in the request target, raw or as %00: the C strings cut
 *    at it, so "/files?path=/etc/passwd%00.txt" named another file than
 *    the one sent, and a raw NUL cut the route. 400. The same for a raw
 *    NUL in the method.
 *  - A raw NUL in a header value: libmicrohttpd 0.9.75 cut the value at
 *    it ("X-API-Key: KEY\0junk" was taken as KEY). 400 naming the header.
 *    Newer libmicrohttpd refuses raw NULs itself. A header folded over
 *    lines (obsolete; 0.9.75 joins it into the header's name) is a 400
 *    too, as RFC 9112 5.2 allows.
 * Body framing and bodies are http.c's. Runs in the connection's thread. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "daemon.h"
#include "head.h"

struct scan {
	char first_len[24];
	bool len_differs, len_bad;
	unsigned chunked;
	char coding[64];            /* the first coding that is not chunked */
	const char *prev_end;       /* the end of the previous header's value */
	const char *nul_header;     /* a header whose value had a NUL cut out */
	bool layout_ok;             /* the raw head is where 0.9.75 keeps it */
	const char *lo, *hi;        /* the raw head: from the request line to the empty line's end */
	bool folded;                /* what follows the value is a folded line, not a NUL's rest */
};

static void trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t'))
		(*s)++, (*n)--;
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* Calls fn with each element of the comma-separated list v, blanks
 * around it trimmed (n bytes at e, not NUL-terminated). */
static void each_element(struct scan *sc, const char *v, void (*fn)(struct scan *sc, const char *e, size_t n))
{
	for (const char *p = v;;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		const char *e = p;
		trim(&e, &n);
		fn(sc, e, n);
		if (!end)
			break;
		p = end + 1;
	}
}

/* One element of a Content-Length list ("5" or "5, 5"). */
static void content_length(struct scan *sc, const char *e, size_t n)
{
	if (!n || n >= sizeof(sc->first_len) || strspn(e, "0123456789") < n)
		sc->len_bad = true;
	else if (!sc->first_len[0])
		memcpy(sc->first_len, e, n);
	else if (strlen(sc->first_len) != n || memcmp(sc->first_len, e, n))
		sc->len_differs = true;
}

/* One coding of a Transfer-Encoding list ("chunked", "gzip, chunked"). */
static void transfer_encoding(struct scan *sc, const char *e, size_t n)
{
	if (n == 7 && !strncasecmp(e, "chunked", 7))
		sc->chunked++;
	else if (!sc->coding[0])
		snprintf(sc->coding, sizeof(sc->coding), "%.*s", (int)(n < 60 ? n : 60), e);
}

/* Whether [from, to) is only what ends a header line (the NULs that
 * replaced CR LF, trailing blanks): anything else is the rest of a value
 * that a NUL cut short. Pointers outside the raw head (libmicrohttpd
 * moves a header it joins from folded lines) give no verdict. */
static bool only_line_end(struct scan *sc, const char *from, const char *to)
{
	if (from < sc->lo || to > sc->hi || to < from)
		return true;
	for (const char *p = from; p < to; p++)
		if (*p != '\0' && *p != ' ' && *p != '\t') {
			/* a line that starts with a blank continues the last
			 * header (obsolete folding, which 0.9.75 joins wrongly) */
			const char *q = p;
			while (q > from && (q[-1] == ' ' || q[-1] == '\t'))
				q--;
			sc->folded = q > from && q < p && q[-1] == '\0';
			return false;
		}
	return true;
}

static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
				   const char *value, size_t value_size)
{
	(void)kind;
	struct scan *sc = cls;
	if (key_size == 14 && !strcasecmp(key, "Content-Length"))
		each_element(sc, value, content_length);
	else if (key_size == 17 && !strcasecmp(key, "Transfer-Encoding"))
		each_element(sc, value, transfer_encoding);
	/* libmicrohttpd 0.9.75 keeps the raw head in one buffer and parses
	 * it in place: between one header's value and the next header's name
	 * there is only the line's end, unless a NUL cut the value short */
	if (sc->layout_ok && sc->prev_end && !sc->nul_header && !only_line_end(sc, sc->prev_end, key))
		sc->nul_header = sc->prev_end; /* marks the previous header */
	if (sc->nul_header == sc->prev_end && sc->nul_header)
		return MHD_NO;
	sc->prev_end = value + value_size;
	return MHD_YES;
}

/* The name of the header whose value ends at end (for the message). */
struct find {
	const char *end, *name;
};

static enum MHD_Result find_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
				   const char *value, size_t value_size)
{
	(void)kind;
	(void)key_size;
	struct find *f = cls;
	if (value + value_size == f->end) {
		f->name = key;
		return MHD_NO;
	}
	return MHD_YES;
}

unsigned head_check(struct request *rq, const char *method, const char *version, char *why, size_t n)
{
	/* %00 anywhere in the target (path or query): decoding would cut there */
	if (rq->target_pct00) {
		snprintf(why, n, "the request target contains a NUL byte (%%00)");
		return 400;
	}
	struct scan sc = { .first_len = "" };
#if MHD_VERSION < 0x00097600
	/* the target ends where the version begins (one space between them):
	 * when it is longer than the string we were given, a raw NUL cut it */
	if (rq->target && version && *version && version > rq->target && version - rq->target < (1 << 20) &&
	    (size_t)(version - 1 - rq->target) > rq->target_len) {
		snprintf(why, n, "the request target contains a NUL byte");
		return 400;
	}
	const union MHD_ConnectionInfo *hs =
		MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	/* the method ends one space before the target, both in the raw
	 * head: a raw NUL in it ("G\0ET") would route on what the C string
	 * kept */
	if (hs && method && rq->target && method < rq->target && (size_t)(rq->target - method) < hs->header_size &&
	    strlen(method) + 1 != (size_t)(rq->target - method)) {
		snprintf(why, n, "the request method contains a NUL byte");
		return 400;
	}
	sc.layout_ok = hs && method && rq->target && method < rq->target &&
		       (size_t)(rq->target - method) < hs->header_size;
	if (sc.layout_ok) {
		sc.lo = method;
		sc.hi = method + hs->header_size;
	}
#else
	(void)method;
	(void)version;
#endif
	MHD_get_connection_values_n(rq->conn, MHD_HEADER_KIND, each_header, &sc);
#if MHD_VERSION < 0x00097600
	/* the last header's value runs to the empty line that ends the head */
	if (sc.layout_ok && sc.prev_end && !sc.nul_header && !only_line_end(&sc, sc.prev_end, sc.hi))
		sc.nul_header = sc.prev_end;
#endif
	if (sc.nul_header) {
		struct find f = { .end = sc.nul_header };
		MHD_get_connection_values_n(rq->conn, MHD_HEADER_KIND, find_header, &f);
		if (sc.folded)
			snprintf(why, n, "the header %s is folded over lines (obsolete, refused)", f.name ? f.name : "?");
		else
			snprintf(why, n, "the header %s contains a NUL byte", f.name ? f.name : "?");
		return 400;
	}
	if (sc.len_bad) {
		snprintf(why, n, "Content-Length is not a number");
		return 400;
	}
	if (sc.len_differs) {
		snprintf(why, n, "differing Content-Length values");
		return 400;
	}
	if (sc.coding[0]) {
		snprintf(why, n, "Transfer-Encoding '%s' is not supported (only chunked)", sc.coding);
		return 501;
	}
	if (sc.chunked > 1) {
		snprintf(why, n, "Transfer-Encoding names chunked more than once");
		return 400;
	}
	return 0;
}
