/* abox gc — removes what killed sandboxes left behind (runtime folders,
 * sockets, empty cgroups). Live sandboxes are never touched. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_gc(int argc, char **argv)
{
	bool quiet = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
			quiet = true;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("usage: abox gc [-q]\n\nRemoves the runtime folders and cgroups of sandboxes whose creator was\n"
			       "killed. Live sandboxes are never touched.\n");
			return 0;
		} else {
			cli_err("gc: unknown option '%s'", argv[i]);
			return EXIT_ABOX;
		}
	}
	abox_error err = ABOX_ERROR_INIT;
	abox_ctx *ctx = NULL;
	unsigned removed = 0;
	if (abox_ctx_new(NULL, &ctx, &err) < 0)
		return cli_fail(&err);
	int r = abox_gc(ctx, &removed, &err);
	abox_ctx_free(ctx);
	if (r < 0)
		return cli_fail(&err);
	if (!quiet)
		printf("removed %u leftover sandbox%s\n", removed, removed == 1 ? "" : "es");
	return 0;
}
