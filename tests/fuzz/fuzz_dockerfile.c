/* libFuzzer: a Dockerfile as abox's builder reads it
 * (src/lib/build/dockerfile.c): the parser, then every instruction's
 * text through variable expansion and word splitting. Must never crash,
 * leak or read out of bounds; whatever it accepts starts with FROM or
 * ARG and names only the instructions it runs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "build/dockerfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *vars(const char *name, void *ud)
{
	(void)ud;
	return name[0] == 'A' ? "value with spaces" : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dockerfile d;
	char err[512];
	if (dockerfile_parse((const char *)data, size, &d, err, sizeof(err)) < 0)
		return 0;
	if (d.n == 0 || (d.v[0].kind != DF_FROM && d.v[0].kind != DF_ARG))
		abort();
	for (size_t i = 0; i < d.n; i++) {
		if (d.v[i].kind > DF_SHELL || !d.v[i].text || !d.v[i].rest)
			abort();
		char *x = df_expand(d.v[i].rest, vars, NULL, err, sizeof(err));
		char **w = x ? df_words(x) : NULL;
		strv_free(w);
		free(x);
		(void)df_flag(d.v[i].flags, "from");
	}
	dockerfile_free(&d);
	return 0;
}
