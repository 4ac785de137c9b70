/* abox create — a long-lived sandbox; prints its id. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"

int cmd_create(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "template", required_argument, NULL, 't' },
		{ "metadata", required_argument, NULL, 'm' },
		{ "env", required_argument, NULL, 'e' },
		{ "memory", required_argument, NULL, 'M' },
		{ "disk", required_argument, NULL, 'D' },
		{ "layer", required_argument, NULL, 'L' },
		{ "pids", required_argument, NULL, 'P' },
		{ "cpus", required_argument, NULL, 'C' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "seccomp", required_argument, NULL, 'S' },
		{ "from", required_argument, NULL, 'F' },
		{ "auto-pause", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	_cleanup_free_ const char **meta = calloc((size_t)argc + 1, sizeof(char *));
	_cleanup_free_ const char **env = calloc((size_t)argc + 1, sizeof(char *));
	size_t nmeta = 0, nenv = 0;
	int c;
	if (!meta || !env)
		return EXIT_ABOX;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+t:m:e:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (cli_opt_kv("create", "--env", optarg) < 0)
				return EXIT_ABOX;
			env[nenv++] = optarg;
			break;
		case 't': so.template_name = optarg; break;
		case 'm':
			if (cli_opt_kv("create", "--metadata", optarg) < 0)
				return EXIT_ABOX;
			meta[nmeta++] = optarg;
			break;
		case 'M':
			if (cli_opt_size("create", "--memory", optarg, &so.memory_bytes) < 0)
				return EXIT_ABOX;
			break;
		case 'D':
			if (cli_opt_size("create", "--disk", optarg, &so.disk_bytes) < 0)
				return EXIT_ABOX;
			break;
		case 'L':
			if (cli_opt_layer("create", optarg, &so.flags) < 0)
				return EXIT_ABOX;
			break;
		case 'P':
			if (cli_opt_count("create", "--pids", optarg, &so.pids) < 0)
				return EXIT_ABOX;
			break;
		case 'C':
			if (cli_opt_cpus("create", optarg, &so.cpu_millis) < 0)
				return EXIT_ABOX;
			break;
		case 'T':
			if (cli_opt_secs("create", "--timeout", optarg, &so.timeout_ms) < 0)
				return EXIT_ABOX;
			break;
		case 'S': so.seccomp_policy = optarg; break;
		case 'F': so.snapshot = optarg; break;
		case 'A': so.flags |= ABOX_SANDBOX_AUTO_PAUSE; break;
		case 'h':
			printf("usage: abox create [--template NAME | --from SNAPSHOT] [--metadata K=V]... [-e K=V]...\n"
			       "                   [--memory SIZE] [--disk SIZE] [--pids N] [--cpus N] [--timeout SECS]\n"
			       "                   [--auto-pause] [--seccomp FILE] [--layer disk|tmpfs]\n\n"
			       "Creates a long-lived sandbox and prints its id. It runs until `abox kill ID`\n"
			       "or its timeout, whether or not any abox process is running. --from starts it\n"
			       "with the files of a snapshot (id or name) on that snapshot's template.\n"
			       "--auto-pause: at its timeout it is paused with its memory (to disk when the\n"
			       "checkpointer works), not killed; aboxd or any `abox gc` does it.\n"
			       "--layer: its files on a disk of its own of --disk's size (the default: they\n"
			       "never count as its memory), or in memory ('tmpfs').\n");
			return 0;
		default:
			return EXIT_ABOX;
		}
	}
	if (optind < argc) {
		cli_err("create: unexpected argument '%s'", argv[optind]);
		return EXIT_ABOX;
	}
	so.metadata = nmeta ? meta : NULL;
	so.env = nenv ? env : NULL;
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	if (abox_sandbox_create(ctx, &so, &sb, &err) < 0) {
		abox_ctx_free(ctx);
		return cli_fail(&err);
	}
	printf("%s\n", abox_sandbox_id(sb));
	fflush(stdout);
	abox_sandbox_free(sb);
	(void)abox_gc_maybe(ctx, NULL, NULL); /* the cheap part of gc, on the way */
	abox_ctx_free(ctx);
	return 0;
}
