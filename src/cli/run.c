/* abox run — one command in a fresh sandbox that ends with it. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"

/* The default command of template name (NULL: host, which has none). */
static char **template_cmd(const char *name)
{
	abox_ctx *ctx;
	if (!name || cli_ctx(&ctx) != 0)
		return NULL;
	abox_template_info t = { .version = ABOX_TEMPLATE_INFO_VERSION };
	abox_error err = ABOX_ERROR_INIT;
	char **cmd = NULL;
	if (abox_template_inspect(ctx, name, &t, &err) == 0) {
		cmd = t.cmd;
		t.cmd = NULL;
		abox_template_info_clear(&t);
	}
	abox_error_clear(&err);
	abox_ctx_free(ctx);
	return cmd;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: abox run [OPTIONS] [--] CMD [ARG...]\n"
		   "\n"
		   "Runs CMD in a fresh sandbox and removes the sandbox when CMD ends.\n"
		   "Without CMD: the template's own command (a pulled or imported image's\n"
		   "Entrypoint and Cmd), where it has one.\n"
		   "\n"
		   "  -t, --template NAME   template to start from (default: host)\n"
		   "  -u, --user USER       run as 'user' (uid 1000, default), 'root' or a user of\n"
		   "                        the sandbox's /etc/passwd\n"
		   "  -w, --cwd DIR         working directory (default: the user's home)\n"
		   "  -e, --env K=V         set an environment variable (repeatable)\n"
		   "  -i, --interactive     pass standard input to the command\n"
		   "      --memory SIZE     memory limit (default 512M)\n"
		   "      --disk SIZE       size of the writable layer (default 1G)\n"
		   "      --layer KIND      the writable layer in memory ('tmpfs', the default here)\n"
		   "                        or on a disk of its own ('disk': files never count as memory)\n"
		   "      --pids N          process limit (default 512)\n"
		   "      --cpus N          CPU limit, e.g. 0.5 or 2 (default 1)\n"
		   "      --timeout SECS    kill the sandbox after SECS seconds\n"
		   "      --seccomp FILE    seccomp policy (OCI linux.seccomp JSON)\n" CLI_NET_USAGE
		   "  -h, --help            this text\n"
		   "\n"
		   "Exit status: the command's; 128+N if signal N ended it; 124 on --timeout;\n"
		   "126/127 if it could not be run / was not found; 125 if abox itself failed.\n");
}

int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_SANDBOX_LONGOPTS,
		{ "user", required_argument, NULL, 'u' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "interactive", no_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	_cleanup_(cli_new_free) struct cli_new_sandbox ns;
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	int c, r;

	if (cli_new_init(&ns, argc) < 0)
		return EXIT_ABOX;
	ns.so.flags = ABOX_SANDBOX_EPHEMERAL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+t:u:w:e:ih", longopts, NULL)) != -1) {
		switch (c) {
		case 'u': po.user = optarg; break;
		case 'w':
			po.cwd = optarg;
			break;
		case 'i':
			po.flags |= ABOX_PROC_STDIN;
			break;
		case 'h': usage(stdout); return 0;
		default:
			r = cli_sandbox_opt("run", c, optarg, &ns);
			if (r == 0)
				usage(stderr);
			if (r <= 0)
				return EXIT_ABOX;
		}
	}
	/* no command: the template's own (an image's Entrypoint + Cmd) */
	_cleanup_(strv_freep) char **tcmd = NULL;
	bool none = optind >= argc || (optind == argc - 1 && strcmp(argv[optind], "--") == 0);
	if (none && (tcmd = template_cmd(ns.so.template_name)))
		po.argv = (const char *const *)tcmd;
	else if (cli_command("run", "abox run [OPTIONS] -- CMD [ARG...]", argc, argv, optind, &po) < 0)
		return EXIT_ABOX;
	/* -e is the command's here (the sandbox ends with it anyway) */
	po.env = ns.nenv ? ns.env : NULL;
	ns.nenv = 0;
	/* how an end is told: the limit a kill for memory hit, the timeout */
	struct cli_proc_opts o = { .memory_text = "512M", .timeout_s = (ns.so.timeout_ms + 999) / 1000 };
	char membuf[32];
	if (ns.so.memory_bytes) {
		format_size(ns.so.memory_bytes, membuf, sizeof(membuf));
		o.memory_text = membuf;
	}

	if (cli_signals_block() < 0)
		return EXIT_ABOX;
	_cleanup_(cli_close) struct cli_sandbox s = { 0 };
	int rc = cli_create("run", &ns, &s);
	if (rc)
		return rc;
	rc = cli_run_process(s.sb, &po, &o);
	/* the cheap part of gc, on the way out (at most every few seconds):
	 * leftovers of runs that were SIGKILLed */
	cli_close_gc(&s);
	return rc;
}
