/* abox — command line entry point: global options, then the verb from
 * the table (which is also the usage text). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "oci/oci.h"

/* The verbs, in the order `abox --help` lists them. */
struct verb {
	const char *name;
	const char *args; /* the synopsis after the name; NULL: an alias, not listed */
	const char *what;
	int (*run)(int argc, char **argv);
	bool here;        /* runs in this binary even with --remote (nothing to ask aboxd) */
};

static int cmd_serve(int argc, char **argv);
static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

static const struct verb verbs[] = {
	{ "run", "[OPTIONS] -- CMD [ARG...]", "run one command in a fresh sandbox", cmd_run, false },
	{ "create", "[OPTIONS]", "create a long-lived sandbox, print its id", cmd_create, false },
	{ "exec", "[OPTIONS] ID -- CMD...", "run a command in a running sandbox", cmd_exec, false },
	{ "ps", "[--json] ID", "processes of a sandbox (running, recently ended)", cmd_ps, false },
	{ "shell", "ID [root|user]", "interactive shell on a terminal (follows our size)", cmd_shell, false },
	{ "resize", "ID PID|TAG ROWSxCOLS", "resize a process's terminal", cmd_resize, false },
	{ "files", "OP ID PATH...", "cat, write, ls, stat, exists, mkdir, mv, rm", cmd_files, false },
	{ "cp", "SRC DST", "copy files and folders; one side is ID:PATH", cmd_cp, false },
	{ "attach", "ID PID|TAG", "follow a background process (kept output first)", cmd_attach, false },
	{ "signal", "ID PID|TAG [SIGNAL]", "signal a process's whole group (default TERM)", cmd_signal,
	  false },
	{ "ls", "[--json]", "list long-lived sandboxes", cmd_ls, false },
	{ "info", "[--json] ID", "one sandbox's state, limits and metadata", cmd_info, false },
	{ "metrics", "[--json] ID", "CPU, memory, disk and processes in use", cmd_metrics, false },
	{ "set-timeout", "ID SECS", "move a sandbox's deadline (from now; 0 = none)", cmd_set_timeout,
	  false },
	{ "network", "ID [--net MODE ...]", "a sandbox's egress: show it, or change its policy", cmd_network,
	  false },
	{ "pause", "ID...", "freeze sandboxes (memory kept, timeout clock stopped)", cmd_pause, false },
	{ "resume", "ID...", "thaw paused sandboxes", cmd_resume, false },
	{ "snapshot", "[--name N] ID", "copy a sandbox's files into a snapshot", cmd_snapshot, false },
	{ "snapshots", "ls|rm", "list or remove snapshots", cmd_snapshots, false },
	{ "fork", "[--count N] ID", "new sandboxes with a sandbox's current files", cmd_fork, false },
	{ "template", "ls|import|rm", "root filesystems sandboxes start from", cmd_template, false },
	{ "kill", "ID...", "end sandboxes and remove all they left", cmd_kill, false },
	{ "serve", "[--config FILE] ...", "the E2B-compatible HTTP server (aboxd)", cmd_serve, false },
	{ "oci", "[OPTIONS] COMMAND ...", "the OCI runtime command line (runc's)", cmd_oci, true },
	{ "doctor", "", "what this host offers abox", cmd_doctor, false },
	{ "gc", "", "remove what killed sandboxes left behind", cmd_gc, false },
	{ "version", "", "print the version", cmd_version, true },
	{ "--version", NULL, NULL, cmd_version, true },
	{ "help", NULL, NULL, cmd_help, true },
	{ "--help", NULL, NULL, cmd_help, true },
	{ "-h", NULL, NULL, cmd_help, true },
};

static const struct verb *verb_find(const char *name)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(verbs[i].name, name) == 0)
			return &verbs[i];
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: abox [--root DIR] [--runtime-dir DIR] [--remote URL [--api-key KEY]] COMMAND [OPTIONS]\n"
		   "\n"
		   "Run untrusted code in isolated sandboxes.\n"
		   "\n"
		   "commands:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (!verbs[i].args)
			continue;
		char synopsis[64];
		snprintf(synopsis, sizeof(synopsis), "%s%s%s", verbs[i].name, *verbs[i].args ? " " : "", verbs[i].args);
		fprintf(f, "  %-32s%s\n", synopsis, verbs[i].what);
	}
	fprintf(f, "\n"
		   "`abox COMMAND --help` shows a command's options.\n"
		   "\n"
		   "--remote URL (or ABOX_REMOTE) drives the sandboxes of an aboxd instead\n"
		   "(http://HOST:PORT or unix:/PATH), with --api-key KEY (or ABOX_API_KEY).\n");
}

static int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("abox %s\n", ABOX_VERSION_STRING);
	return 0;
}

static int cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	usage(stdout);
	return 0;
}

/* Runs prog (argv[0] becomes its path) from the first place it is: the
 * path environment variable env names (NULL: none), next to abox (a build
 * folder), or installed. Returns only when none could be run, said as
 * "VERB: ..." (missing: what to say when it is nowhere). */
static int exec_beside(const char *verb, const char *env, const char *prog, const char *installed,
		       const char *missing, char **argv)
{
	char self[PATH_MAX], near[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(near, sizeof(near), "%s/%s", self, prog);
	const char *cands[] = { env ? getenv(env) : NULL, near, installed };
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		if (!cands[i] || !*cands[i] || access(cands[i], X_OK) != 0)
			continue;
		argv[0] = (char *)cands[i];
		execv(cands[i], argv);
		cli_err("%s: exec %s: %s", verb, cands[i], abox_strerror(errno));
		return EXIT_ABOX;
	}
	cli_err("%s: %s", verb, missing);
	return EXIT_ABOX;
}

/* `abox serve [aboxd options]`: the daemon, found next to abox (a build
 * folder) or where it is installed. */
static int cmd_serve(int argc, char **argv)
{
	(void)argc;
	return exec_beside("serve", NULL, "aboxd", ABOX_SBINDIR "/aboxd",
			   "aboxd is not installed (looked next to abox and in " ABOX_SBINDIR ")", argv);
}

#ifndef ABOX_CLI_HAS_REMOTE
/* This binary is static and lean for the local fast path; the remote
 * backend (libcurl) lives in abox-remote, the same CLI built with it. */
static int exec_remote_cli(char **argv)
{
	return exec_beside("remote", "ABOX_REMOTE_CLI", "abox-remote", ABOX_LIBEXECDIR "/abox-remote",
			   "abox-remote (the CLI with the remote backend) is not installed "
			   "(looked next to abox and in " ABOX_LIBEXECDIR ")",
			   argv);
}
#endif

int main(int argc, char **argv)
{
	/* fds 0-2 must be taken: otherwise the next file we open becomes
	 * someone's "stdout" (and the sandbox set-up relies on it) */
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", fd ? O_WRONLY : O_RDONLY) != fd)
			return EXIT_ABOX;

	/* named abox-oci or runc (a link to abox): the OCI runtime command
	 * line, where containerd's BinaryName points */
	const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	if (!strcmp(base, "abox-oci") || !strcmp(base, "runc"))
		return cmd_oci(argc, argv);

	/* global options before the verb */
	char **argv0 = argv;
	while (argc >= 3 && (strcmp(argv[1], "--root") == 0 || strcmp(argv[1], "--runtime-dir") == 0 ||
			     strcmp(argv[1], "--remote") == 0 || strcmp(argv[1], "--api-key") == 0)) {
		const char *var = !strcmp(argv[1], "--root")	    ? "ABOX_ROOT"
				  : !strcmp(argv[1], "--runtime-dir") ? "ABOX_RUNTIME_DIR"
				  : !strcmp(argv[1], "--remote")      ? "ABOX_REMOTE"
								      : "ABOX_API_KEY";
		setenv(var, argv[2], 1);
		argc -= 2;
		argv += 2;
	}
	const struct verb *v = argc >= 2 ? verb_find(argv[1]) : NULL;
	const char *remote = getenv("ABOX_REMOTE");
#ifndef ABOX_CLI_HAS_REMOTE
	if (remote && *remote && argc >= 2 && !(v && v->here)) {
		/* the options are in the environment now: pass the rest on */
		argv[0] = argv0[0];
		return exec_remote_cli(argv);
	}
#else
	cli_prog = "abox";
	(void)argv0;
#endif
	(void)remote;
	if (argc < 2) {
		usage(stderr);
		return EXIT_ABOX;
	}
	if (v)
		return v->run(argc - 1, argv + 1);
	const char *verb = argv[1];
	cli_err("unknown command '%s' (see 'abox --help')", verb);
	return EXIT_ABOX;
}
