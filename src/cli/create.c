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
		CLI_SANDBOX_LONGOPTS,
		{ "metadata", required_argument, NULL, 'm' },
		{ "from", required_argument, NULL, 'F' },
		{ "auto-pause", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	_cleanup_free_ const char **meta = calloc((size_t)argc + 1, sizeof(char *));
	_cleanup_(cli_new_free) struct cli_new_sandbox ns;
	abox_sandbox_opts *so = &ns.so;
	size_t nmeta = 0;
	int c;
	if (cli_new_init(&ns, argc) < 0 || !meta)
		return EXIT_ABOX;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+t:m:e:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (cli_opt_kv("create", "--metadata", optarg, meta, &nmeta) < 0)
				return EXIT_ABOX;
			break;
		case 'F':
			so->snapshot = optarg;
			break;
		case 'A':
			so->flags |= ABOX_SANDBOX_AUTO_PAUSE;
			break;
		case 'h':
			printf("usage: abox create [--template NAME | --from SNAPSHOT] [--metadata K=V]... "
			       "[-e K=V]...\n"
			       "                   [--memory SIZE] [--disk SIZE] [--pids N] [--cpus N] "
			       "[--timeout SECS]\n"
			       "                   [--auto-pause] [--seccomp FILE] [--layer disk|tmpfs]\n"
			       "                   [--net none|open|filtered] [--allow-out X]... [--deny-out "
			       "X]...\n\n"
			       "Creates a long-lived sandbox and prints its id. It runs until `abox kill "
			       "ID`\n"
			       "or its timeout, whether or not any abox process is running. --from starts "
			       "it\n"
			       "with the files of a snapshot (id or name) on that snapshot's template.\n"
			       "--auto-pause: at its timeout it is paused with its memory (to disk when the\n"
			       "checkpointer works), not killed; aboxd or any `abox gc` does it.\n"
			       "--layer: its files on a disk of its own of --disk's size (the default: they\n"
			       "never count as its memory), or in memory ('tmpfs').\n"
			       "--net: what it may reach outside (`abox run --help`; the default: "
			       "nothing).\n");
			return 0;
		default:
			if (cli_sandbox_opt("create", c, optarg, &ns) <= 0)
				return EXIT_ABOX;
		}
	}
	if (optind < argc) {
		cli_err("create: unexpected argument '%s'", argv[optind]);
		return EXIT_ABOX;
	}
	so->metadata = nmeta ? meta : NULL;
	_cleanup_(cli_close) struct cli_sandbox s = { 0 };
	int rc = cli_create("create", &ns, &s);
	if (rc)
		return rc;
	printf("%s\n", abox_sandbox_id(s.sb));
	fflush(stdout);
	cli_close_gc(&s);
	return 0;
}
