/* abox template ls|import|rm: the root filesystems sandboxes start from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_template(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : NULL;
	bool help = op && (strcmp(op, "--help") == 0 || strcmp(op, "-h") == 0);
	bool known = op && (strcmp(op, "ls") == 0 || strcmp(op, "import") == 0 || strcmp(op, "rm") == 0);
	if (!known || (strcmp(op, "import") == 0 && argc != 4) || (strcmp(op, "rm") == 0 && argc < 3)) {
		fprintf(help ? stdout : stderr,
			"usage: abox template ls\n"
			"       abox template import NAME DIR   a folder holding a root filesystem\n"
			"       abox template rm NAME...\n\n"
			"`host` (built in) is the default. An import copies DIR without following\n"
			"anything in it and leaves out device nodes, setuid/setgid bits and file\n"
			"capabilities; importing an existing name makes a new version of it.\n");
		return help ? 0 : EXIT_ABOX;
	}
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	int rc = 0;
	if (strcmp(op, "ls") == 0) {
		char **names;
		if (abox_template_list(ctx, &names, &err) < 0) {
			rc = cli_fail(&err);
		} else {
			for (size_t i = 0; names[i]; i++) {
				printf("%s\n", names[i]);
				free(names[i]);
			}
			free(names);
		}
	} else if (strcmp(op, "import") == 0) {
		if (abox_template_import(ctx, argv[2], argv[3], &err) < 0)
			rc = cli_fail(&err);
	} else {
		for (int i = 2; i < argc; i++) {
			abox_error e = ABOX_ERROR_INIT;
			if (abox_template_remove(ctx, argv[i], &e) < 0)
				rc = cli_fail(&e);
		}
	}
	abox_ctx_free(ctx);
	return rc;
}
