/* libFuzzer target: what aboxd parses from the network before any
 * sandbox is involved — Connect envelopes, JSON bodies (depth-limited),
 * the twice-encoded metadata filter, sandbox hosts and Basic credentials.
 * The JSON strict readers run on every body the parser accepts.
 * The first byte picks the parser. Must never crash, hang or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <abox/common.h>

#include "fuzz.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = data[0] % 5;
	const char *in = (const char *)data + 1;
	size_t n = size - 1;
	char why[256];
	char *z = fuzz_text(data + 1, n); /* for the string parsers */
	if (!z)
		return 0;
	switch (mode) {
	case 0: {
		const char *msg;
		size_t mlen;
		if (connect_unframe(in, n, &msg, &mlen, why, sizeof(why)) == 0)
			json_object_put(json_parse_object(msg, mlen, why, sizeof(why)));
		break;
	}
	case 1: {
		/* and the strict readers the routes use on what it accepted */
		json_object *o = json_parse_object(in, n, why, sizeof(why));
		if (o) {
			static const struct wire_map_bounds b = { .what = "metadata", .reserved = "_abox", .entries = 32,
								  .name_bytes = 128, .value_bytes = 1024,
								  .total_bytes = 8192 };
			char **v = json_string_map(o, &b, 2, why, sizeof(why));
			for (size_t i = 0; v && v[i]; i++)
				free(v[i]);
			free(v);
			const char *s;
			int64_t x;
			bool f;
			(void)json_get_string(o, "templateID", &s, why, sizeof(why));
			(void)json_get_int(o, "timeout", 0, 2592000, &x, why, sizeof(why));
			(void)json_get_bool(o, "secure", &f, why, sizeof(why));
		}
		json_object_put(o);
		break;
	}
	case 2: {
		char **v = metadata_query(z, "_aboxOwner=0123456789abcdef");
		for (size_t i = 0; v && v[i]; i++)
			free(v[i]);
		free(v);
		break;
	}
	case 3: {
		char id[ABOX_ID_LEN + 1];
		unsigned port;
		(void)sandbox_host(z, id, &port);
		(void)sandbox_id_ok(z);
		break;
	}
	default: {
		char user[16];
		(void)basic_user(z, user, sizeof(user));
	}
	}
	free(z);
	return 0;
}
