/* libFuzzer: the sandbox list's query parser (src/daemon/listing.c), fed
 * seven NUL-separated values (state, order, startedAfter, startedBefore,
 * template, limit, nextToken), then the page cut over a few entries.
 * Must never crash or read out of bounds; a parsed limit is 1-100. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "listing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the library's, for the entries listing_apply drops */
void abox_sandbox_info_clear(abox_sandbox_info *info)
{
	(void)info;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *z = fuzz_text(data, size);
	if (!z)
		return 0;
	const char *f[7] = { NULL };
	char *p = z, *end = z + size;
	for (int i = 0; i < 7 && p <= end; i++) {
		f[i] = *p ? p : NULL; /* an empty value is an absent one */
		p += strlen(p) + 1;
	}
	struct listing l;
	char why[160];
	if (listing_parse(&l, size & 1, f[0], f[1], f[2], f[3], f[4], f[5], f[6], why, sizeof(why)) == 0) {
		if (l.limit > 100)
			abort();
		abox_sandbox_info v[4];
		memset(v, 0, sizeof(v));
		for (int i = 0; i < 4; i++) {
			v[i].state = i & 1 ? ABOX_STATE_PAUSED : ABOX_STATE_RUNNING;
			v[i].created_ms = (int64_t)((size ? data[0] : 0) * i);
			memcpy(v[i].id, "aaaaaaaaaaaaaaaaaaa", 20);
			v[i].id[19] = (char)('a' + i);
			memcpy(v[i].template_name, "host", 5);
		}
		size_t n = 4, running = 0;
		char next[64];
		listing_apply(&l, v, &n, &running, next, sizeof(next));
		if (n > 4 || running > 4)
			abort();
	}
	(void)listing_time(z);
	free(z);
	return 0;
}
