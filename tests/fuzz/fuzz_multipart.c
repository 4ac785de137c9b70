/* libFuzzer: the daemon's streaming multipart parser. The first input
 * byte picks how the rest is split into reads; whatever the split, the
 * parts and their bytes must be the same as when it is fed whole. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "multipart.h"

struct acc {
	uint64_t hash, bytes;
	int depth; /* 1 inside a part */
};

static void mix(struct acc *a, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		a->hash = (a->hash ^ s[i]) * 1099511628211ull;
}

static int on_begin(void *ud, const char *h)
{
	struct acc *a = ud;
	if (a->depth != 0)
		abort();
	a->depth = 1;
	char fn[256];
	if (mp_disposition(h, "filename", fn, sizeof(fn)) == 0)
		mix(a, fn, strlen(fn));
	mix(a, "B", 1);
	return 0;
}

static int on_data(void *ud, const char *p, size_t n)
{
	struct acc *a = ud;
	if (a->depth != 1 || n == 0)
		abort();
	a->bytes += n;
	mix(a, p, n);
	return 0;
}

static int on_end(void *ud)
{
	struct acc *a = ud;
	if (a->depth != 1)
		abort();
	a->depth = 0;
	mix(a, "E", 1);
	return 0;
}

static const struct mp_ops ops = {on_begin, on_data, on_end};

static int feed(const uint8_t *d, size_t n, size_t step, struct acc *a)
{
	static struct mp m;
	char why[160];
	if (mp_init(&m, "multipart/form-data; boundary=b0", why, sizeof(why)) < 0)
		abort();
	int worst = 0;
	for (size_t off = 0; off < n; off += step) {
		int r = mp_feed(&m, (const char *)d + off, n - off < step ? n - off : step, &ops, a, why,
		                sizeof(why));
		if (r < 0) {
			worst = r;
			break;
		}
	}
	return worst;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = (size_t)data[0] + 1;
	struct acc whole = {0}, split = {0};
	int a = feed(data + 1, size - 1, size, &whole);
	int b = feed(data + 1, size - 1, step, &split);
	if (a != b || (a == 0 && (whole.hash != split.hash || whole.bytes != split.bytes)))
		abort();
	if (whole.bytes > size)
		abort();
	return 0;
}
