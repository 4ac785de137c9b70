/* libFuzzer: what a sandbox sends abox-netd's relay (src/netd/relay_parse.c):
 * an HTTP proxy request, a SOCKS5 greeting and request. Must never crash
 * or read out of bounds; a host it returns is a plain lower-case name or
 * a dotted address, a port is never 0, and what it says it used is there. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "relay_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void plain(const struct relay_req *r, size_t size)
{
	size_t len = strlen(r->host);
	if (len == 0 || len >= RELAY_HOST_MAX || r->host[len - 1] == '.' || r->port == 0 || r->used > size)
		abort();
	for (size_t i = 0; i < len; i++) {
		char c = r->host[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
			abort();
	}
	if (r->proto == RELAY_FORWARD && (r->line_len < 14 || r->line_len >= sizeof(r->line)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct relay_req r;
	if (relay_http_parse(data, size, &r) == 0)
		plain(&r, size);
	size_t used = 0;
	if (relay_socks_hello(data, size, &used) == 0 && used > size)
		abort();
	if (relay_socks_parse(data, size, &r) == 0)
		plain(&r, size);
	return 0;
}
