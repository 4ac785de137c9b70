/* abox run — one command in a fresh sandbox that ends with it. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: abox run [OPTIONS] [--] CMD [ARG...]\n"
		"\n"
		"Runs CMD in a fresh sandbox and removes the sandbox when CMD ends.\n"
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
		"      --seccomp FILE    seccomp policy (OCI linux.seccomp JSON)\n"
		"  -h, --help            this text\n"
		"\n"
		"Exit status: the command's; 128+N if signal N ended it; 124 on --timeout;\n"
		"126/127 if it could not be run / was not found; 125 if abox itself failed.\n");
}

int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "template", required_argument, NULL, 't' },
		{ "user", required_argument, NULL, 'u' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "env", required_argument, NULL, 'e' },
		{ "interactive", no_argument, NULL, 'i' },
		{ "memory", required_argument, NULL, 'M' },
		{ "disk", required_argument, NULL, 'D' },
		{ "layer", required_argument, NULL, 'L' },
		{ "pids", required_argument, NULL, 'P' },
		{ "cpus", required_argument, NULL, 'C' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "seccomp", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	_cleanup_free_ const char **env = calloc((size_t)argc + 1, sizeof(char *));
	size_t nenv = 0;
	struct cli_proc_opts o = { .memory_text = "512M" };
	char membuf[32];
	int c;

	if (!env)
		return EXIT_ABOX;
	so.flags = ABOX_SANDBOX_EPHEMERAL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+t:u:w:e:ih", longopts, NULL)) != -1) {
		switch (c) {
		case 't': so.template_name = optarg; break;
		case 'u': po.user = optarg; break;
		case 'w': po.cwd = optarg; break;
		case 'e':
			if (cli_opt_kv("run", "--env", optarg) < 0)
				return EXIT_ABOX;
			env[nenv++] = optarg;
			break;
		case 'i': po.flags |= ABOX_PROC_STDIN; break;
		case 'M':
			if (cli_opt_size("run", "--memory", optarg, &so.memory_bytes) < 0)
				return EXIT_ABOX;
			format_size(so.memory_bytes, membuf, sizeof(membuf));
			o.memory_text = membuf;
			break;
		case 'D':
			if (cli_opt_size("run", "--disk", optarg, &so.disk_bytes) < 0)
				return EXIT_ABOX;
			break;
		case 'L':
			if (cli_opt_layer("run", optarg, &so.flags) < 0)
				return EXIT_ABOX;
			break;
		case 'P':
			if (cli_opt_count("run", "--pids", optarg, &so.pids) < 0)
				return EXIT_ABOX;
			break;
		case 'C':
			if (cli_opt_cpus("run", optarg, &so.cpu_millis) < 0)
				return EXIT_ABOX;
			break;
		case 'T':
			if (cli_opt_secs("run", "--timeout", optarg, &so.timeout_ms) < 0)
				return EXIT_ABOX;
			o.timeout_s = (so.timeout_ms + 999) / 1000;
			break;
		case 'S': so.seccomp_policy = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_ABOX;
		}
	}
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	if (optind >= argc) {
		cli_err("run: missing command (usage: abox run [OPTIONS] -- CMD [ARG...])");
		return EXIT_ABOX;
	}
	po.argv = (const char *const *)argv + optind;
	po.env = nenv ? env : NULL;

	if (cli_signals_block() < 0)
		return EXIT_ABOX;
	abox_ctx *ctx = NULL;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb = NULL;
	if (abox_sandbox_create(ctx, &so, &sb, &err) < 0) {
		abox_ctx_free(ctx);
		return cli_fail(&err);
	}
	int rc = cli_run_process(sb, &po, &o);
	abox_sandbox_free(sb);
	/* the cheap part of gc, on the way out (at most every few seconds):
	 * leftovers of runs that were SIGKILLed */
	(void)abox_gc_maybe(ctx, NULL, NULL);
	abox_ctx_free(ctx);
	return rc;
}
