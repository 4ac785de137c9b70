/* abox exec / shell — a command in a running sandbox, in the foreground
 * or left running (--detach). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"

/* Starts a process and leaves it running: prints its pid once it runs. */
static int detach_start(abox_sandbox *sb, const abox_proc_opts *po)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_proc *p;
	if (abox_proc_start(sb, po, &p, &err) < 0)
		return cli_fail(&err);
	struct cli_start s = { 0 };
	if (cli_wait_started(p, &s, &err) < 0) {
		abox_proc_free(p);
		return cli_fail(&err);
	}
	/* an exec failure shows as start + end together */
	(void)abox_proc_dispatch(p, cli_on_start, &s, NULL);
	abox_proc_free(p);
	if (s.ended && s.error)
		return s.code; /* it could not start (126/127) */
	printf("%d\n", s.pid);
	return 0;
}

int cmd_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "env", required_argument, NULL, 'e' },
		{ "interactive", no_argument, NULL, 'i' },
		{ "detach", no_argument, NULL, 'd' },
		{ "tag", required_argument, NULL, 'T' },
		{ "truncate", required_argument, NULL, 'R' },
		{ "tty", no_argument, NULL, 't' },
		{ "size", required_argument, NULL, 'Z' },
		{ "json", no_argument, NULL, 'J' },
		{ "idempotent", no_argument, NULL, 'I' },
		{ "check", no_argument, NULL, 'C' },
		{ "timeout", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	bool detach = false, tty = false, json = false, check = false;
	const char *size = NULL;
	_cleanup_free_ const char **env = calloc((size_t)argc + 1, sizeof(char *));
	size_t nenv = 0;
	int c;
	if (!env)
		return EXIT_ABOX;
	optind = 1;
parse:
	while ((c = getopt_long(argc, argv, "+u:w:e:idth", longopts, NULL)) != -1) {
		switch (c) {
		case 't': tty = true; break;
		case 'Z': size = optarg; tty = true; break;
		case 'J': json = true; break;
		case 'I': po.flags |= ABOX_PROC_IDEMPOTENT; break;
		case 'C': check = true; break;
		case 'O':
			if (cli_opt_secs("exec", "--timeout", optarg, &po.timeout_ms) < 0)
				return EXIT_ABOX;
			break;
		case 'd': detach = true; break;
		case 'T': po.tag = optarg; break;
		case 'R':
			if (cli_opt_truncate("exec", optarg, &po) < 0)
				return EXIT_ABOX;
			break;
		case 'u': po.user = optarg; break;
		case 'w': po.cwd = optarg; break;
		case 'e':
			if (cli_opt_kv("exec", "--env", optarg, env, &nenv) < 0)
				return EXIT_ABOX;
			break;
		case 'i': po.flags |= ABOX_PROC_STDIN; break;
		case 'h':
			printf("usage: abox exec [-u USER] [-w DIR] [-e K=V]... [-i] [-d] [--tag TAG] ID [--] CMD [ARG...]\n\n"
			       "Runs CMD in the running sandbox ID. Exit status as for `abox run`.\n"
			       "  -d, --detach   start it in the background, print its pid and return\n"
			       "                 (`abox attach ID PID|TAG` follows it again)\n"
			       "      --tag TAG  a name to find it by (attach, signal, ps)\n"
			       "  -t, --tty      give it a terminal (raw keys; follows our window size)\n"
			       "      --json     print one JSON object at the end: exitCode, stdout, stderr,\n"
			       "                 truncated, their lengths and the paths of the full output\n"
			       "      --size RxC the terminal's size (default: ours, or 24x80)\n"
			       "      --idempotent  CMD may run twice: with --remote, a start that failed\n"
			       "                 on a transient error (daemon unreachable, 502/503/504)\n"
			       "                 is tried again; without it a start is never repeated\n"
			       "      --timeout SECS  kill CMD and its process group after SECS seconds\n"
			       "                 (exit status 124), also when detached\n"
			       "      --check    a non-zero exit is reported as a failure on stderr\n"
			       "                 (\"abox: exec: CMD exited with N\"), the status stays N\n"
			       "      --truncate N[:HEAD:TAIL]\n"
			       "                 when stdout+stderr exceed N bytes, print each stream cut to\n"
			       "                 its first HEAD and last TAIL bytes (default N/2 each) with a\n"
			       "                 marker; the complete output stays in /tmp/abox/cmd/<uuid>/\n");
			return 0;
		default:
			return EXIT_ABOX;
		}
	}
	if (optind >= argc) {
		cli_err("exec: missing sandbox id (usage: abox exec [OPTIONS] ID -- CMD [ARG...])");
		return EXIT_ABOX;
	}
	/* `abox exec ID --json -- CMD`: options after the ID, closed by a
	 * "--", are taken as options too (the order people type), by moving
	 * the ID behind them. Without a "--" after them, what follows the ID
	 * is the command, as documented. */
	if (optind + 1 < argc && argv[optind + 1][0] == '-' && strcmp(argv[optind + 1], "--") != 0) {
		int dash = optind + 2;
		while (dash < argc && strcmp(argv[dash], "--") != 0)
			dash++;
		if (dash < argc) {
			char *idarg = argv[optind];
			memmove(argv + optind, argv + optind + 1, (size_t)(dash - optind - 1) * sizeof(char *));
			argv[dash - 1] = idarg;
			goto parse;
		}
	}
	const char *id = argv[optind];
	if (cli_command("exec", "abox exec [OPTIONS] ID -- CMD [ARG...]", argc, argv, optind + 1, &po) < 0)
		return EXIT_ABOX;
	po.env = nenv ? env : NULL;
	if (tty && cli_opt_size_rc("exec", size, &po) < 0)
		return EXIT_ABOX;
	if (json && tty) {
		cli_err("exec: --json and --tty do not go together");
		return EXIT_ABOX;
	}
	if (json && !po.truncate_threshold) {
		/* a JSON result holds the output: bound what it may hold */
		po.truncate_threshold = 16u << 20;
	}
	if (tty && !detach)
		po.flags |= ABOX_PROC_STDIN;

	if (cli_signals_block() < 0)
		return EXIT_ABOX;
	_cleanup_(cli_close) struct cli_sandbox s = { 0 };
	int rc = cli_open(id, &s);
	if (rc)
		return rc;
	if (detach) {
		if (po.flags & ABOX_PROC_STDIN) {
			cli_err("exec: --detach and --interactive do not go together");
			return EXIT_ABOX;
		}
		return detach_start(s.sb, &po);
	}
	char membuf[32];
	format_size(abox_sandbox_memory_limit(s.sb), membuf, sizeof(membuf));
	struct cli_proc_opts o = { .memory_text = membuf, .truncated = po.truncate_threshold != 0, .tty = tty,
				   .json = json, .argv0 = po.argv[0] };
	rc = cli_run_process(s.sb, &po, &o);
	if (check && rc != 0 && rc != EXIT_ABOX)
		cli_err("exec: %s exited with %d", po.argv[0], rc);
	cli_close_gc(&s); /* the cheap part of gc, on the way */
	return rc;
}

int cmd_shell(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || argv[1][0] == '-') {
		cli_err("shell: usage: abox shell ID [root|user]");
		return EXIT_ABOX;
	}
	char *args[] = { (char *)"exec", (char *)"-t", (char *)"-u", (char *)(argc == 3 ? argv[2] : "user"),
			 argv[1], (char *)"--", (char *)"/bin/bash", (char *)"-l", NULL };
	return cmd_exec(8, args);
}
