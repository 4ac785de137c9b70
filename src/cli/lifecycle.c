/* abox kill / set-timeout / pause / resume — a long-lived sandbox's life.
 * pause ID... and resume ID... freeze and thaw long-lived sandboxes. Pausing a paused sandbox (or resuming a running one) is said
 * so on stderr, and is not a failure. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int pause_or_resume(int argc, char **argv, bool pause)
{
	uint32_t flags = 0;
	while (pause && argc > 1 && (strcmp(argv[1], "--no-memory") == 0 || strcmp(argv[1], "--to-disk") == 0)) {
		flags |= strcmp(argv[1], "--no-memory") == 0 ? ABOX_PAUSE_NO_MEMORY : ABOX_PAUSE_TO_DISK;
		argc--;
		argv++;
	}
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fprintf(argc < 2 ? stderr : stdout,
			pause ? "usage: abox pause [--no-memory | --to-disk] ID...\n"
				"Freezes every process of the sandboxes; memory is kept, CPU use\n"
				"stops, and so does the timeout clock. Commands and file requests\n"
				"fail until `abox resume`; `abox kill` works.\n"
				"--no-memory keeps only the files: every process ends and its memory\n"
				"is freed; `abox resume` starts the sandbox afresh on those files.\n"
				"--to-disk writes the processes to disk with the checkpointer (CRIU)\n"
				"and frees their memory; `abox resume` restores them where they were.\n"
			      : "usage: abox resume ID...\n"
				"Thaws paused sandboxes: processes go on where they were, and the\n"
				"deadline moves by the time spent paused.\n");
		return argc < 2 ? EXIT_ABOX : 0;
	}
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		abox_error err = ABOX_ERROR_INIT;
		abox_sandbox *sb;
		if (abox_sandbox_connect(ctx, argv[i], &sb, &err) < 0) {
			rc = cli_fail(&err);
			continue;
		}
		int r = pause ? abox_sandbox_pause_flags(sb, flags, &err) : abox_sandbox_resume(sb, &err);
		if (r == -EALREADY)
			cli_err("%s", err.msg); /* already in the state asked for */
		else if (r < 0)
			rc = cli_fail(&err);
		abox_sandbox_free(sb);
	}
	abox_ctx_free(ctx);
	return rc;
}

int cmd_pause(int argc, char **argv)
{
	return pause_or_resume(argc, argv, true);
}

int cmd_resume(int argc, char **argv)
{
	return pause_or_resume(argc, argv, false);
}

int cmd_kill(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		FILE *f = argc < 2 ? stderr : stdout;
		fprintf(f, "usage: abox kill ID...\n\nKills every process of each sandbox and removes its mounts, cgroups,\nsockets and state.\n");
		return argc < 2 ? EXIT_ABOX : 0;
	}
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		abox_error err = ABOX_ERROR_INIT;
		abox_sandbox *sb;
		int r = abox_sandbox_connect(ctx, argv[i], &sb, &err);
		if (r == -ESRCH) {
			/* recorded but dead: what is left is gc's to remove */
			(void)abox_gc(ctx, NULL, NULL);
			continue;
		}
		if (r < 0) {
			rc = cli_fail(&err);
			continue;
		}
		if (abox_sandbox_kill(sb, &err) < 0)
			rc = cli_fail(&err);
		abox_sandbox_free(sb);
	}
	(void)abox_gc_maybe(ctx, NULL, NULL); /* the cheap part of gc, on the way */
	abox_ctx_free(ctx);
	return rc;
}

int cmd_set_timeout(int argc, char **argv)
{
	if (argc != 3) {
		cli_err("set-timeout: usage: abox set-timeout ID SECS (from now; 0 = no timeout)");
		return EXIT_ABOX;
	}
	uint32_t ms = 0;
	if (strcmp(argv[2], "0") != 0 && cli_opt_secs("set-timeout", "SECS", argv[2], &ms) < 0)
		return EXIT_ABOX;
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	int rc = 0;
	if (abox_sandbox_connect(ctx, argv[1], &sb, &err) < 0) {
		rc = cli_fail(&err);
	} else {
		if (abox_sandbox_set_timeout(sb, ms, &err) < 0)
			rc = cli_fail(&err);
		abox_sandbox_free(sb);
	}
	abox_ctx_free(ctx);
	return rc;
}
