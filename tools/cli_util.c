/* tools/cli_util.c — message helpers for the CLI verbs. */
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"

const char *cli_prog = "abox";

void cli_err(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_fail(const abox_error *err)
{
	cli_err("%s", err->msg[0] ? err->msg : "unknown error");
	return EXIT_ABOX;
}
