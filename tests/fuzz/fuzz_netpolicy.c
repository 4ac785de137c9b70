/* libFuzzer: egress policies (src/lib/net/policy.c) as stored JSON, and
 * as lists a caller sends (NUL-separated entries, the first byte saying
 * which go to allowOut); then names and addresses matched against them.
 * Must never crash or leak; a policy it accepts serialises and parses
 * back to the same policy. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "net/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use(const struct net_policy *p, const uint8_t *data, size_t size)
{
	char name[300];
	size_t n = size < sizeof(name) - 1 ? size : sizeof(name) - 1;
	memcpy(name, data, n);
	name[n] = '\0';
	(void)net_policy_name_allowed(p, name);
	uint32_t a = 0;
	memcpy(&a, data, size < 4 ? size : 4);
	(void)net_policy_addr_allowed(p, a);
	(void)net_addr_always_denied(a);
	char *j = net_policy_json(p);
	if (!j)
		return;
	struct net_policy back;
	if (net_policy_parse(j, &back, NULL) < 0 || back.nallow4 != p->nallow4 || back.ndeny4 != p->ndeny4 ||
	    back.nnames != p->nnames || back.deny_all != p->deny_all)
		abort();
	net_policy_free(&back);
	free(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *z = fuzz_text(data, size);
	if (!z)
		return 0;
	struct net_policy p;
	if (net_policy_parse(z, &p, NULL) == 0) {
		use(&p, data, size);
		net_policy_free(&p);
	}
	/* as lists: entries split at NULs, each to allowOut or denyOut by
	 * its first byte's low bit */
	const char *allow[64] = { NULL }, *deny[64] = { NULL };
	size_t na = 0, nd = 0;
	for (char *e = z; e < z + size && na < 63 && nd < 63; e += strlen(e) + 1) {
		if (!*e)
			continue;
		if (*e & 1)
			allow[na++] = e + 1;
		else
			deny[nd++] = e + 1;
	}
	if (net_policy_make(NET_MODE_FILTERED, allow, deny, &p, NULL) == 0) {
		use(&p, data, size);
		net_policy_free(&p);
	}
	free(z);
	return 0;
}
