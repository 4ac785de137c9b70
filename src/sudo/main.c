/* abox-sudo — `sudo` inside a sandbox (installed there as /usr/bin/sudo).
 *
 * Setuid binaries grant nothing under no_new_privs, so this one asks the
 * sandbox's init (src/init/sudo.c) to start the command as root, or the
 * user -u names, with our stdin, stdout and stderr; it passes on the
 * signals it gets and exits with the command's status. Passwordless, as
 * in E2B's templates: every process of the sandbox may, as `user: root`
 * may through the API. Static, so it runs in any template.
 *
 *   sudo [-u USER] [-E | --preserve-env[=A,B]] [-i | -s] [-H] [-n] [--] CMD [ARG...]
 *   sudo -i | -s          a login (or plain) shell
 *   sudo -k | -K | -v     accepted, nothing to do (there is no password)
 *   sudo -l               what may be run: everything */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/fdpass.h"
#include "base/sudo_wire.h"

extern char **environ;

static char req[SUDO_REQ_MAX];
static size_t used;
static int sig_pipe[2] = { -1, -1 };

static void usage(FILE *f)
{
	fputs("usage: sudo [-u USER] [-E | --preserve-env[=VAR,...]] [-H] [-n] [--] COMMAND [ARG...]\n"
	      "       sudo [-u USER] -i | -s [COMMAND [ARG...]]\n"
	      "       sudo -k | -K | -v | -l | -V\n"
	      "Runs COMMAND as root (or USER) in this sandbox, through its init: passwordless.\n",
	      f);
}

__attribute__((format(printf, 2, 3), noreturn)) static void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("sudo: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

static void put(char kind, const char *v)
{
	size_t n = strlen(v);
	if (used + n + 3 > sizeof(req))
		die(1, "%s: the command line and environment are too long", "request");
	req[used++] = kind;
	req[used++] = '=';
	memcpy(req + used, v, n + 1);
	used += n + 1;
}

/* The login shell of name in /etc/passwd, else /bin/sh. */
static const char *shell_of(const char *name)
{
	static char line[1024], shell[512];
	FILE *f = fopen("/etc/passwd", "re");
	const char *found = "/bin/sh";
	size_t nl = strlen(name);
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, name, nl) != 0 || line[nl] != ':')
			continue;
		char *last = strrchr(line, ':');
		if (last && last[1] && last[1] != '\n') {
			snprintf(shell, sizeof(shell), "%s", last + 1);
			shell[strcspn(shell, "\n")] = '\0';
			found = shell;
		}
		break;
	}
	if (f)
		fclose(f);
	return found;
}

/* The arguments as one shell command line, each byte that is not plain
 * escaped with a backslash (what sudo does for -i and -s). */
static char *joined(char **argv)
{
	size_t n = 1;
	for (size_t i = 0; argv[i]; i++)
		n += 2 * strlen(argv[i]) + 1;
	char *s = malloc(n), *p = s;
	if (!s)
		die(1, "%s", "out of memory");
	for (size_t i = 0; argv[i]; i++) {
		if (i)
			*p++ = ' ';
		for (const char *c = argv[i]; *c; c++) {
			if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-/"
				    ".,:=+@%",
				    *c))
				*p++ = '\\';
			*p++ = *c;
		}
	}
	*p = '\0';
	return s;
}

static bool listed(const char *list, const char *entry)
{
	size_t k = strcspn(entry, "=");
	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, ",");
		if (n == k && strncmp(p, entry, k) == 0)
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

static void on_signal(int sig)
{
	int32_t s = sig;
	int e = errno;
	if (write(sig_pipe[1], &s, sizeof(s)) < 0) {
		/* full: that many signals at once; the command gets the rest */
	}
	errno = e;
}

int main(int argc, char **argv)
{
	const char *user = "root", *keep = NULL;
	bool keep_all = false, login = false, shell = false;
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-u") || !strcmp(a, "--user")) {
			if (++i == argc)
				die(1, "option '%s' needs a user", a);
			user = argv[i];
		} else if (!strncmp(a, "--user=", 7)) {
			user = a + 7;
		} else if (!strncmp(a, "-u", 2)) {
			user = a + 2;
		} else if (!strcmp(a, "-E") || !strcmp(a, "--preserve-env")) {
			keep_all = true;
		} else if (!strncmp(a, "--preserve-env=", 15)) {
			keep = a + 15;
		} else if (!strcmp(a, "-i") || !strcmp(a, "--login")) {
			login = true;
		} else if (!strcmp(a, "-s") || !strcmp(a, "--shell")) {
			shell = true;
		} else if (!strcmp(a, "-H") || !strcmp(a, "-n") || !strcmp(a, "--non-interactive") ||
			   !strcmp(a, "--set-home") || !strcmp(a, "-S") || !strcmp(a, "--stdin")) {
			/* no password to ask for or read; HOME is the target's */
		} else if (!strcmp(a, "-k") || !strcmp(a, "-K") || !strcmp(a, "-v") ||
			   !strcmp(a, "--reset-timestamp") || !strcmp(a, "--remove-timestamp") ||
			   !strcmp(a, "--validate")) {
			if (i + 1 == argc)
				return 0;
		} else if (!strcmp(a, "-l") || !strcmp(a, "--list")) {
			printf("User may run the following commands in this sandbox:\n    (ALL : ALL) "
			       "NOPASSWD: ALL\n");
			return 0;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("abox sudo (asks the sandbox's init; passwordless)\n");
			return 0;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr,
				"sudo: unknown option '%s' (abox's sudo knows -u, -E, --preserve-env, -i, "
				"-s, -H, -n, "
				"-k, -K, -v, -l, -V)\n",
				a);
			usage(stderr);
			return 1;
		}
	}
	if (login && shell)
		die(1, "%s", "-i and -s cannot be used together");
	if (i == argc && !login && !shell) {
		usage(stderr);
		return 1;
	}

	int first = i;
	const char *cmd0 = i < argc ? argv[i] : "shell";
	memcpy(req, SUDO_MAGIC, sizeof(SUDO_MAGIC));
	used = sizeof(SUDO_MAGIC);
	put('u', user);
	char cwd[4096];
	if (getcwd(cwd, sizeof(cwd)))
		put('c', cwd);
	put('f', login ? "i" : shell ? "s" : "");
	if (login || shell) {
		/* -i: the target's login shell; -s: $SHELL, else ours */
		const char *sh = login ? shell_of(user) : getenv("SHELL");
		if (!sh || !*sh)
			sh = shell_of(getenv("USER") ? getenv("USER") : "root");
		cmd0 = sh;
		put('a', sh);
		if (login)
			put('a', "-l");
		if (i < argc) {
			put('a', "-c");
			put('a', joined(argv + i));
		}
	} else {
		for (; i < argc; i++)
			put('a', argv[i]);
	}
	/* as sudo's env_reset: the terminal and display survive, the
	 * identity variables are the target's (init sets them); -E keeps
	 * everything */
	static const char *const kept[] = {
		"TERM", "COLORTERM", "DISPLAY", "LANG", "LANGUAGE", "LC_ALL", "TZ"
	};
	for (char **e = environ; e && *e; e++) {
		bool pass = keep_all || listed(keep, *e);
		for (size_t j = 0; !pass && j < sizeof(kept) / sizeof(kept[0]); j++)
			pass = !strncmp(*e, kept[j], strlen(kept[j])) && (*e)[strlen(kept[j])] == '=';
		if (pass && (!login || !strncmp(*e, "TERM=", 5)))
			put('e', *e);
	}
	/* who asked (SUDO_UID and SUDO_GID init takes from the kernel) */
	char extra[4200];
	const char *me = getenv("USER");
	if (me && *me) {
		snprintf(extra, sizeof(extra), "SUDO_USER=%s", me);
		put('e', extra);
	}
	size_t k = (size_t)snprintf(extra, sizeof(extra), "SUDO_COMMAND=");
	for (int j = first; j < argc && k + 2 < sizeof(extra); j++)
		k += (size_t)snprintf(extra + k, sizeof(extra) - k, "%s%s", j > first ? " " : "", argv[j]);
	put('e', extra);

	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, "\0" SUDO_SOCKET_NAME, sizeof(SUDO_SOCKET_NAME));
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + sizeof(SUDO_SOCKET_NAME));
	if (s < 0 || connect(s, (struct sockaddr *)&sa, len) < 0)
		die(1, "%s",
		    "this sandbox's init does not answer: sudo is off here (created without it) or init is "
		    "gone");
	int fds[3] = { 0, 1, 2 };
	if (fd_send(s, req, used, fds, 3, 0) != (ssize_t)used)
		die(1, "%s", "could not send the request to the sandbox's init");

	/* signals for the command: through a pipe to the loop below */
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		die(1, "%s", "pipe");
	static const int fwd[] = { SIGINT,  SIGTERM,  SIGHUP,  SIGQUIT, SIGUSR1,
				   SIGUSR2, SIGWINCH, SIGCONT, SIGALRM };
	struct sigaction act = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	sigemptyset(&act.sa_mask);
	for (size_t j = 0; j < sizeof(fwd) / sizeof(fwd[0]); j++)
		sigaction(fwd[j], &act, NULL);
	for (;;) {
		struct pollfd pfd[2] = { { .fd = s, .events = POLLIN },
					 { .fd = sig_pipe[0], .events = POLLIN } };
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die(1, "%s", "poll");
		}
		if (pfd[1].revents) {
			int32_t sig;
			while (read(sig_pipe[0], &sig, sizeof(sig)) == (ssize_t)sizeof(sig)) {
				char m[5] = { 'K' };
				memcpy(m + 1, &sig, 4);
				(void)send(s, m, sizeof(m), MSG_NOSIGNAL);
			}
		}
		if (!pfd[0].revents)
			continue;
		char m[700];
		ssize_t n = recv(s, m, sizeof(m) - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 9)
			die(1, "%s", "the sandbox's init went away before the command ended");
		m[n] = '\0';
		int32_t a, b;
		memcpy(&a, m + 1, 4);
		memcpy(&b, m + 5, 4);
		if (m[0] == 'E') {
			/* as sudo says it, with sudo's status (1) */
			if (a == 127)
				fprintf(stderr, "sudo: %s: command not found\n", cmd0);
			else
				fprintf(stderr, "sudo: %s\n", m + 9);
			return 1;
		}
		if (m[0] == 'X')
			return b ? 128 + b : a;
	}
}
