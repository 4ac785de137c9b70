/* libFuzzer: a sandbox's /etc/passwd and /etc/group text as its root may
 * write it (src/common/base/accounts.c): the first input byte picks the
 * name looked up, the rest is the text. Must never crash, read out of
 * bounds or return an entry whose fields break the documented bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/accounts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "agent", "user", "root", "a", "x$", "-bad", "a:b", "" };
	if (size < 1)
		return 0;
	const char *name = names[data[0] % (sizeof(names) / sizeof(names[0]))];
	/* the text is not NUL-terminated: a copy of exactly its length */
	char *text = malloc(size - 1 ? size - 1 : 1);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	struct acct_user u;
	if (acct_find_user(text, size - 1, name, &u) == 0) {
		if (u.uid > ACCT_ID_MAX || u.gid > ACCT_ID_MAX || u.home[0] != '/' || strcmp(u.name, name) != 0 ||
		    strlen(u.home) > ACCT_HOME_MAX)
			abort();
		uint32_t g[8];
		size_t n = acct_groups(text, size - 1, name, u.gid, g, 8);
		if (n < 1 || n > 8 || g[0] != u.gid)
			abort();
	}
	char out[ACCT_NAME_MAX + 1];
	if (acct_name_of(text, size - 1, data[0], out, sizeof(out)) == 0 && !acct_name_ok(out))
		abort();
	free(text);
	return 0;
}
