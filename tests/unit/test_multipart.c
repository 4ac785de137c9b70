/* The daemon's streaming multipart parser (src/daemon/multipart.c): the
 * same parts and bytes whatever the body's split into reads, delimiter-
 * like bytes inside data, form fields, malformed bodies. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "multipart.h"

struct seen {
	char log[8192]; /* "B<filename>|" data "E|" per part */
	size_t n;
};

static void add(struct seen *s, const char *p, size_t n)
{
	cr_assert(s->n + n < sizeof(s->log));
	memcpy(s->log + s->n, p, n);
	s->n += n;
	s->log[s->n] = '\0';
}

static int on_begin(void *ud, const char *h)
{
	char fn[256] = "-";
	(void)mp_disposition(h, "filename", fn, sizeof(fn));
	add(ud, "B", 1);
	add(ud, fn, strlen(fn));
	add(ud, "|", 1);
	return 0;
}

static int on_data(void *ud, const char *p, size_t n)
{
	add(ud, p, n);
	return 0;
}

static int on_end(void *ud)
{
	add(ud, "E|", 2);
	return 0;
}

static const struct mp_ops ops = {on_begin, on_data, on_end};

/* Feeds body in pieces of step bytes; returns mp_feed's worst result. */
static int run(const char *ct, const char *body, size_t len, size_t step, struct seen *s, bool *complete)
{
	static struct mp m;
	char why[160];
	cr_assert_eq(mp_init(&m, ct, why, sizeof(why)), 0, "%s", why);
	memset(s, 0, sizeof(*s));
	int worst = 0;
	for (size_t off = 0; off < len; off += step) {
		int r =
		    mp_feed(&m, body + off, len - off < step ? len - off : step, &ops, s, why, sizeof(why));
		if (r < 0)
			worst = r;
	}
	*complete = mp_complete(&m);
	return worst;
}

#define CT "multipart/form-data; boundary=XyZ"
static const char body[] =
    "preamble\r\n"
    "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/a;b.txt\"\r\n\r\n"
    "one\r\n--XyY\r\n-\r\r\n--X\r\n"
    "\r\n--XyZ  \r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nfield"
    "\r\n--XyZ\r\ncontent-disposition: form-data; name=file; filename=\"/b\"\r\n\r\n"
    "\r\n--XyZ--\r\nepilogue --XyZ\r\n";
static const char want[] = "B/a;b.txt|one\r\n--XyY\r\n-\r\r\n--X\r\nE|B-|fieldE|B/b|E|";

Test(multipart, same_parts_whatever_the_split)
{
	for (size_t step = 1; step <= sizeof(body); step++) {
		struct seen s;
		bool complete;
		cr_assert_eq(run(CT, body, sizeof(body) - 1, step, &s, &complete), 0, "step %zu", step);
		cr_assert_str_eq(s.log, want, "step %zu", step);
		cr_assert(complete, "step %zu", step);
	}
}

Test(multipart, a_body_opening_with_crlf_and_a_quoted_boundary)
{
	const char b[] =
	    "\r\n--q q\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\nx\r\n--q q--";
	struct seen s;
	bool complete;
	cr_assert_eq(run("multipart/form-data; boundary=\"q q\"", b, sizeof(b) - 1, 3, &s, &complete), 0);
	cr_assert_str_eq(s.log, "Bf|xE|");
	cr_assert(complete);
}

Test(multipart, malformed_bodies)
{
	struct mp m;
	char why[160];
	cr_assert_eq(mp_init(&m, "multipart/form-data", why, sizeof(why)), -EINVAL, "no boundary");
	cr_assert_eq(mp_init(&m, "multipart/form-data; boundary=", why, sizeof(why)), -EINVAL,
	             "empty boundary");
	char longb[120];
	snprintf(longb, sizeof(longb), "multipart/form-data; boundary=%071d", 0);
	cr_assert_eq(mp_init(&m, longb, why, sizeof(why)), -EINVAL, "71 characters");
	const char bad[] = "--XyZ\r\n\r\ndata\r\n--XyZjunk";
	struct seen s;
	bool complete;
	cr_assert_eq(run(CT, bad, sizeof(bad) - 1, 4, &s, &complete), -EINVAL,
	             "a delimiter followed by junk");
	const char cut[] =
	    "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\nhalf";
	cr_assert_eq(run(CT, cut, sizeof(cut) - 1, 5, &s, &complete), 0);
	cr_assert(!complete, "a body without its closing delimiter is not complete");
	cr_assert_str_eq(s.log, "Bf|half");
}

Test(multipart, headers_are_capped)
{
	static char big[MP_MAX_HEADERS + 64];
	size_t n = (size_t)snprintf(big, sizeof(big), "--XyZ\r\nX: ");
	memset(big + n, 'a', sizeof(big) - n - 1);
	struct seen s;
	bool complete;
	cr_assert_eq(run(CT, big, sizeof(big) - 1, 1000, &s, &complete), -EINVAL);
}

/* A bare CR inside a Content-Disposition line stopped every span of the
 * parameter scan where it stood: the loop never ended (found by
 * fuzz_multipart; a part header from any client holding an upload URL
 * hung a daemon thread). */
Test(multipart, a_bare_cr_in_the_disposition_ends, .timeout = 10)
{
	char fn[64];
	cr_assert_eq(mp_disposition("content-disposition: [Youndary\r\001x\r\n", "filename", fn, sizeof(fn)),
		     -ENOENT);
	cr_assert_eq(mp_disposition("Content-Disposition: form-data;\r name=\"f\"; filename=\"a\r\n",
				    "filename", fn, sizeof(fn)),
		     0);
	cr_assert_str_eq(fn, "a");
	cr_assert_eq(mp_disposition("Content-Disposition: \r\r\r", "name", fn, sizeof(fn)), -ENOENT);
}
