/* abox attach / signal / resize — a running process of a sandbox, by pid
 * or tag. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"

static void proc_freep(abox_proc **p)
{
	abox_proc_free(*p);
}

/* Opens sandbox id and attaches to its process target (PID|TAG, as
 * cli_target reads it). Returns 0, or EXIT_ABOX once it has said why. */
static int open_proc(const char *id, const char *target, struct cli_sandbox *s, abox_proc **p)
{
	int pid;
	const char *tag;
	cli_target(target, &pid, &tag);
	int rc = cli_open(id, s);
	if (rc)
		return rc;
	abox_error err = ABOX_ERROR_INIT;
	if (abox_proc_attach(s->sb, pid, tag, p, &err) < 0)
		return cli_fail(&err);
	return 0;
}

/* signal and resize: the process target (PID|TAG) of sandbox id, which
 * must still run (its first events tell), sent sig or, without one,
 * resized to rows x cols. Errors are said as VERB's. */
static int to_running(const char *verb, const char *id, const char *target, int sig, unsigned rows,
		      unsigned cols)
{
	_cleanup_(cli_close) struct cli_sandbox s = { 0 };
	_cleanup_(proc_freep) abox_proc *p = NULL;
	/* attach, then act through the handle: the same lookup by pid or
	 * tag, and a clear error for an unknown one */
	int rc = open_proc(id, target, &s, &p);
	if (rc)
		return rc;
	abox_error err = ABOX_ERROR_INIT;
	struct cli_start st = { 0 };
	if (cli_wait_started(p, &st, &err) < 0)
		return cli_fail(&err);
	if (st.ended) {
		cli_err("%s: process %s has ended (exit %d)", verb, target, st.code);
		return EXIT_ABOX;
	}
	int r = sig ? abox_proc_signal(p, sig, &err)
		    : abox_proc_resize(p, (uint16_t)rows, (uint16_t)cols, &err);
	return r < 0 ? cli_fail(&err) : 0;
}

int cmd_attach(int argc, char **argv)
{
	if (argc != 3) {
		cli_err("attach: usage: abox attach ID PID|TAG");
		return EXIT_ABOX;
	}
	if (cli_signals_block() < 0)
		return EXIT_ABOX;
	_cleanup_(cli_close) struct cli_sandbox s = { 0 };
	abox_proc *p;
	int rc = open_proc(argv[1], argv[2], &s, &p);
	if (rc)
		return rc;
	char membuf[32];
	format_size(abox_sandbox_memory_limit(s.sb), membuf, sizeof(membuf));
	struct cli_proc_opts o = { .memory_text = membuf };
	return cli_follow(p, false, &o);
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
	return to_running("signal", argv[1], argv[2], sig, 0, 0);
}

int cmd_resize(int argc, char **argv)
{
	unsigned rows, cols;
	char extra;
	if (argc != 4 || sscanf(argv[3], "%ux%u%c", &rows, &cols, &extra) != 2) {
		cli_err("resize: usage: abox resize ID PID|TAG ROWSxCOLS");
		return EXIT_ABOX;
	}
	return to_running("resize", argv[1], argv[2], 0, rows, cols);
}
