/* abox — command line entry point: picks the verb. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: abox [--root DIR] [--runtime-dir DIR] [--remote URL [--api-key KEY]] COMMAND [OPTIONS]\n"
		"\n"
		"Run untrusted code in isolated sandboxes.\n"
		"\n"
		"commands:\n"
		"  run [OPTIONS] -- CMD [ARG...]   run one command in a fresh sandbox\n"
		"  create [OPTIONS]                create a long-lived sandbox, print its id\n"
		"  exec [OPTIONS] ID -- CMD...     run a command in a running sandbox\n"
		"  ps [--json] ID                  processes of a sandbox (running, recently ended)\n"
		"  shell ID [root|user]            interactive shell on a terminal (follows our size)\n"
		"  resize ID PID|TAG ROWSxCOLS     resize a process's terminal\n"
		"  files OP ID PATH...             cat, write, ls, stat, exists, mkdir, mv, rm\n"
		"  cp SRC DST                      copy files and folders; one side is ID:PATH\n"
		"  attach ID PID|TAG               follow a background process (kept output first)\n"
		"  signal ID PID|TAG [SIGNAL]      signal a process's whole group (default TERM)\n"
		"  ls [--json]                     list long-lived sandboxes\n"
		"  info [--json] ID                one sandbox's state, limits and metadata\n"
		"  metrics [--json] ID             CPU, memory, disk and processes in use\n"
		"  set-timeout ID SECS             move a sandbox's deadline (from now; 0 = none)\n"
		"  pause ID...                     freeze sandboxes (memory kept, timeout clock stopped)\n"
		"  resume ID...                    thaw paused sandboxes\n"
		"  snapshot [--name N] ID          copy a sandbox's files into a snapshot\n"
		"  snapshots ls|rm                 list or remove snapshots\n"
		"  fork [--count N] ID             new sandboxes with a sandbox's current files\n"
		"  template ls|import|rm           root filesystems sandboxes start from\n"
		"  kill ID...                      end sandboxes and remove all they left\n"
		"  serve [--config FILE] ...       the E2B-compatible HTTP server (aboxd)\n"
		"  doctor                          what this host offers abox\n"
		"  gc                              remove what killed sandboxes left behind\n"
		"  version                         print the version\n"
		"\n"
		"`abox COMMAND --help` shows a command's options.\n"
		"\n"
		"--remote URL (or ABOX_REMOTE) drives the sandboxes of an aboxd instead\n"
		"(http://HOST:PORT or unix:/PATH), with --api-key KEY (or ABOX_API_KEY).\n");
}

/* `abox serve [aboxd options]`: the daemon, found next to abox (a build
 * folder) or where it is installed. */
static int exec_daemon(char **argv)
{
	char self[PATH_MAX], near[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(near, sizeof(near), "%s/aboxd", self);
	const char *cands[] = { near, ABOX_SBINDIR "/aboxd" };
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		if (access(cands[i], X_OK) != 0)
			continue;
		argv[0] = (char *)cands[i];
		execv(cands[i], argv);
		cli_err("serve: exec %s: %s", cands[i], abox_strerror(errno));
		return EXIT_ABOX;
	}
	cli_err("serve: aboxd is not installed (looked next to abox and in " ABOX_SBINDIR ")");
	return EXIT_ABOX;
}

#ifndef ABOX_CLI_HAS_REMOTE
/* This binary is static and lean for the local fast path; the remote
 * backend (libcurl) lives in abox-remote, the same CLI built with it. */
static int exec_remote_cli(char **argv)
{
	char self[PATH_MAX], near[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(near, sizeof(near), "%s/abox-remote", self);
	const char *cands[] = { getenv("ABOX_REMOTE_CLI"), near, ABOX_LIBEXECDIR "/abox-remote" };
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		if (!cands[i] || !*cands[i] || access(cands[i], X_OK) != 0)
			continue;
		argv[0] = (char *)cands[i];
		execv(cands[i], argv);
		cli_err("remote: exec %s: %s", cands[i], abox_strerror(errno));
		return EXIT_ABOX;
	}
	cli_err("remote: abox-remote (the CLI with the remote backend) is not installed "
		"(looked next to abox and in " ABOX_LIBEXECDIR ")");
	return EXIT_ABOX;
}
#endif

int main(int argc, char **argv)
{
	/* fds 0-2 must be taken: otherwise the next file we open becomes
	 * someone's "stdout" (and the sandbox set-up relies on it) */
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", fd ? O_WRONLY : O_RDONLY) != fd)
			return EXIT_ABOX;

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
	const char *remote = getenv("ABOX_REMOTE");
#ifndef ABOX_CLI_HAS_REMOTE
	if (remote && *remote && argc >= 2 && strcmp(argv[1], "version") && strcmp(argv[1], "--version") &&
	    strcmp(argv[1], "help") && strcmp(argv[1], "--help") && strcmp(argv[1], "-h")) {
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
	const char *verb = argv[1];
	if (strcmp(verb, "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(verb, "serve") == 0)
		return exec_daemon(argv + 1);
	if (strcmp(verb, "doctor") == 0)
		return cmd_doctor(argc - 1, argv + 1);
	if (strcmp(verb, "gc") == 0)
		return cmd_gc(argc - 1, argv + 1);
	if (strcmp(verb, "create") == 0)
		return cmd_create(argc - 1, argv + 1);
	if (strcmp(verb, "exec") == 0)
		return cmd_exec(argc - 1, argv + 1);
	if (strcmp(verb, "kill") == 0)
		return cmd_kill(argc - 1, argv + 1);
	if (strcmp(verb, "ls") == 0)
		return cmd_ls(argc - 1, argv + 1);
	if (strcmp(verb, "info") == 0)
		return cmd_info(argc - 1, argv + 1);
	if (strcmp(verb, "shell") == 0)
		return cmd_shell(argc - 1, argv + 1);
	if (strcmp(verb, "resize") == 0)
		return cmd_resize(argc - 1, argv + 1);
	if (strcmp(verb, "files") == 0)
		return cmd_files(argc - 1, argv + 1);
	if (strcmp(verb, "cp") == 0)
		return cmd_cp(argc - 1, argv + 1);
	if (strcmp(verb, "ps") == 0)
		return cmd_ps(argc - 1, argv + 1);
	if (strcmp(verb, "attach") == 0)
		return cmd_attach(argc - 1, argv + 1);
	if (strcmp(verb, "signal") == 0)
		return cmd_signal(argc - 1, argv + 1);
	if (strcmp(verb, "metrics") == 0)
		return cmd_metrics(argc - 1, argv + 1);
	if (strcmp(verb, "snapshot") == 0)
		return cmd_snapshot(argc - 1, argv + 1);
	if (strcmp(verb, "template") == 0)
		return cmd_template(argc - 1, argv + 1);
	if (strcmp(verb, "fork") == 0)
		return cmd_fork(argc - 1, argv + 1);
	if (strcmp(verb, "snapshots") == 0)
		return cmd_snapshots(argc - 1, argv + 1);
	if (strcmp(verb, "pause") == 0)
		return cmd_pause(argc - 1, argv + 1);
	if (strcmp(verb, "resume") == 0)
		return cmd_resume(argc - 1, argv + 1);
	if (strcmp(verb, "set-timeout") == 0)
		return cmd_set_timeout(argc - 1, argv + 1);
	if (strcmp(verb, "version") == 0 || strcmp(verb, "--version") == 0) {
		printf("abox %s\n", ABOX_VERSION_STRING);
		return 0;
	}
	if (strcmp(verb, "help") == 0 || strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	cli_err("unknown command '%s' (see 'abox --help')", verb);
	return EXIT_ABOX;
}
