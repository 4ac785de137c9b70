/* libFuzzer: the first bytes of a sandbox's connection as abox-netd's
 * proxy reads them (src/netd/sni.c): the server name of a TLS
 * ClientHello, the Host of an HTTP request. Must never crash or read out
 * of bounds; a name it returns is a plain host name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void plain(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len >= SNI_NAME_MAX || n[0] == '.' || n[len - 1] == '.')
		abort();
	for (size_t i = 0; i < len; i++) {
		char c = n[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[SNI_NAME_MAX];
	(void)sni_kind(data, size);
	if (sni_tls_name(data, size, name) == 0)
		plain(name);
	if (sni_http_host(data, size, name) == 0)
		plain(name);
	return 0;
}
