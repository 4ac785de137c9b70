/* libFuzzer: a request to abox-init's sudo (src/init/sudo_parse.c), as any
 * process of a sandbox may send it. Must never crash or read out of
 * bounds, and an accepted request must hold what init relies on: a user,
 * at least one argument, NULL-ended lists within their bounds, and only
 * K=V environment entries. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sudo_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	static struct sudo_req r;
	if (sudo_parse(buf, size, &r) == 0) {
		if (!r.user || !r.args[0] || !r.args[0][0])
			abort();
		size_t n = 0;
		while (r.args[n])
			n++;
		if (n > SUDO_ARGS_MAX)
			abort();
		for (n = 0; r.env[n]; n++)
			if (n >= SUDO_ENV_MAX || !strchr(r.env[n], '=') || r.env[n][0] == '=')
				abort();
		for (n = 0; r.args[n]; n++)
			if (r.args[n] < buf || r.args[n] >= buf + size)
				abort();
	}
	free(buf);
	return 0;
}
