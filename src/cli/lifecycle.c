/* abox kill / set-timeout / pause / resume — a long-lived sandbox's life.
 * pause ID... and resume ID... freeze and thaw long-lived sandboxes. Pausing a paused sandbox (or resuming a running one) is said
 * so on stderr, and is not a failure. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"

/* The verbs that take ID... and do the same to each. */
enum each_verb {
	EACH_PAUSE,
	EACH_RESUME,
	EACH_KILL
};

/* One sandbox of the command line: 0, or EXIT_ABOX once said why. */
static int each_one(abox_ctx *ctx, const char *id, enum each_verb v, uint32_t pause_flags)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	int r = abox_sandbox_connect(ctx, id, &sb, &err);
	if (r == -ESRCH && v == EACH_KILL) {
		/* recorded but dead: what is left is gc's to remove */
		(void)abox_gc(ctx, NULL, NULL);
		return 0;
	}
	if (r < 0)
		return cli_fail(&err);
	switch (v) {
	case EACH_PAUSE:
		r = abox_sandbox_pause_flags(sb, pause_flags, &err);
		break;
	case EACH_RESUME:
		r = abox_sandbox_resume(sb, &err);
		break;
	case EACH_KILL:
		r = abox_sandbox_kill(sb, &err);
		break;
	}
	int rc = 0;
	if (r == -EALREADY && v != EACH_KILL)
		cli_err("%s", err.msg); /* already in the state asked for */
	else if (r < 0)
		rc = cli_fail(&err);
	abox_sandbox_free(sb);
	return rc;
}

/* What `VERB --help` says. */
static const char *const usages[] = {
	[EACH_PAUSE] = "usage: abox pause [--no-memory | --to-disk] ID...\n"
		       "Freezes every process of the sandboxes; memory is kept, CPU use\n"
		       "stops, and so does the timeout clock. Commands and file requests\n"
		       "fail until `abox resume`; `abox kill` works.\n"
		       "--no-memory keeps only the files: every process ends and its memory\n"
		       "is freed; `abox resume` starts the sandbox afresh on those files.\n"
		       "--to-disk writes the processes to disk with the checkpointer (CRIU)\n"
		       "and frees their memory; `abox resume` restores them where they were.\n",
	[EACH_RESUME] = "usage: abox resume ID...\n"
			"Thaws paused sandboxes: processes go on where they were, and the\n"
			"deadline moves by the time spent paused.\n",
	[EACH_KILL] = "usage: abox kill ID...\n\n"
		      "Kills every process of each sandbox and removes its mounts, cgroups,\n"
		      "sockets and state.\n",
};

/* Each sandbox argv[1..] names in turn: one that fails does not stop the
 * others, it makes the exit status EXIT_ABOX. `VERB` alone is a mistake,
 * `VERB --help` a question: either way the usage text, on stderr or
 * stdout. */
static int each(int argc, char **argv, enum each_verb v, uint32_t pause_flags)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usages[v], argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_ABOX : 0;
	}
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	int rc = 0;
	for (int i = 1; i < argc; i++)
		if (each_one(ctx, argv[i], v, pause_flags) != 0)
			rc = EXIT_ABOX;
	if (v == EACH_KILL)
		(void)abox_gc_maybe(ctx, NULL, NULL); /* the cheap part of gc, on the way */
	abox_ctx_free(ctx);
	return rc;
}

int cmd_pause(int argc, char **argv)
{
	uint32_t flags = 0;
	while (argc > 1 && (strcmp(argv[1], "--no-memory") == 0 || strcmp(argv[1], "--to-disk") == 0)) {
		flags |= strcmp(argv[1], "--no-memory") == 0 ? ABOX_PAUSE_NO_MEMORY : ABOX_PAUSE_TO_DISK;
		argc--;
		argv++;
	}
	return each(argc, argv, EACH_PAUSE, flags);
}

int cmd_resume(int argc, char **argv)
{
	return each(argc, argv, EACH_RESUME, 0);
}

int cmd_kill(int argc, char **argv)
{
	return each(argc, argv, EACH_KILL, 0);
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
	_cleanup_(cli_close) struct cli_sandbox s = { 0 };
	int rc = cli_open(argv[1], &s);
	if (rc)
		return rc;
	abox_error err = ABOX_ERROR_INIT;
	return abox_sandbox_set_timeout(s.sb, ms, &err) < 0 ? cli_fail(&err) : 0;
}
