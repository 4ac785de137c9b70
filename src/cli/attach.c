/* abox attach / signal / resize — a running process of a sandbox, by pid
 * or tag. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"

int cmd_attach(int argc, char **argv)
{
	if (argc != 3) {
		cli_err("attach: usage: abox attach ID PID|TAG");
		return EXIT_ABOX;
	}
	int pid;
	const char *tag;
	cli_target(argv[2], &pid, &tag);
	if (cli_signals_block() < 0)
		return EXIT_ABOX;
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	if (abox_sandbox_connect(ctx, argv[1], &sb, &err) < 0) {
		abox_ctx_free(ctx);
		return cli_fail(&err);
	}
	abox_proc *p;
	int rc;
	if (abox_proc_attach(sb, pid, tag, &p, &err) < 0) {
		rc = cli_fail(&err);
	} else {
		char membuf[32];
		format_size(abox_sandbox_memory_limit(sb), membuf, sizeof(membuf));
		struct cli_proc_opts o = { .memory_text = membuf };
		rc = cli_follow(p, false, &o);
	}
	abox_sandbox_free(sb);
	abox_ctx_free(ctx);
	return rc;
}

static int signal_number(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = { { "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "KILL", SIGKILL },
		      { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "CONT", SIGCONT },
		      { "STOP", SIGSTOP }, { "TSTP", SIGTSTP }, { "WINCH", SIGWINCH }, { "ALRM", SIGALRM } };
	char *end;
	long v = strtol(s, &end, 10);
	if (*s && !*end)
		return v > 0 && v < 65 ? (int)v : -1;
	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].sig;
	return -1;
}

int cmd_signal(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		cli_err("signal: usage: abox signal ID PID|TAG [SIGNAL] (default TERM; sent to its process group)");
		return EXIT_ABOX;
	}
	int sig = argc == 4 ? signal_number(argv[3]) : SIGTERM;
	if (sig < 0) {
		cli_err("signal: unknown signal '%s'", argv[3]);
		return EXIT_ABOX;
	}
	int pid;
	const char *tag;
	cli_target(argv[2], &pid, &tag);
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	int rc = 0;
	if (abox_sandbox_connect(ctx, argv[1], &sb, &err) < 0) {
		rc = cli_fail(&err);
	} else {
		abox_proc *p;
		/* attach, then signal through the handle: the same lookup by
		 * pid or tag, and a clear error for an unknown one */
		if (abox_proc_attach(sb, pid, tag, &p, &err) < 0) {
			rc = cli_fail(&err);
		} else {
			struct cli_start s = { 0 };
			if (cli_wait_started(p, &s, &err) < 0)
				rc = cli_fail(&err);
			if (rc == 0 && s.ended) {
				cli_err("signal: process %s has ended (exit %d)", argv[2], s.code);
				rc = EXIT_ABOX;
			} else if (rc == 0 && abox_proc_signal(p, sig, &err) < 0) {
				rc = cli_fail(&err);
			}
			abox_proc_free(p);
		}
		abox_sandbox_free(sb);
	}
	abox_ctx_free(ctx);
	return rc;
}

int cmd_resize(int argc, char **argv)
{
	unsigned rows, cols;
	char extra;
	if (argc != 4 || sscanf(argv[3], "%ux%u%c", &rows, &cols, &extra) != 2) {
		cli_err("resize: usage: abox resize ID PID|TAG ROWSxCOLS");
		return EXIT_ABOX;
	}
	int pid;
	const char *tag;
	cli_target(argv[2], &pid, &tag);
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	int rc = 0;
	if (abox_sandbox_connect(ctx, argv[1], &sb, &err) < 0) {
		rc = cli_fail(&err);
	} else {
		abox_proc *p;
		if (abox_proc_attach(sb, pid, tag, &p, &err) < 0) {
			rc = cli_fail(&err);
		} else {
			struct cli_start s = { 0 };
			if (cli_wait_started(p, &s, &err) < 0)
				rc = cli_fail(&err);
			if (rc == 0 && s.ended) {
				cli_err("resize: process %s has ended", argv[2]);
				rc = EXIT_ABOX;
			} else if (rc == 0 && abox_proc_resize(p, (uint16_t)rows, (uint16_t)cols, &err) < 0) {
				rc = cli_fail(&err);
			}
			abox_proc_free(p);
		}
		abox_sandbox_free(sb);
	}
	abox_ctx_free(ctx);
	return rc;
}
