/* libFuzzer target: the frame decoder and field iterator, which parse
 * bytes that come from inside a sandbox (init's events) or from a host
 * peer. Must never crash, read out of bounds or leak. */
#include <stdint.h>
#include <stdlib.h>

#include "proto/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	while (off < size) {
		struct proto_frame f;
		size_t used = 0;
		int k = proto_decode(data + off, size - off, &f, &used);
		if (k <= 0)
			break;
		size_t fo = 0;
		struct proto_field fl;
		while (proto_field_next(&f, &fo, &fl) > 0) {
			uint64_t v;
			char *s = NULL;
			(void)proto_field_u64(&fl, &v);
			if (proto_field_strdup(&fl, &s) == 0)
				free(s);
		}
		off += used;
	}
	return 0;
}
