/* abox run — one command in a fresh sandbox that ends with it.
 *
 * Exit status: the command's own; 128+N when signal N ended it; 124 when
 * --timeout ended the sandbox; 126/127 when the command could not be
 * started (not runnable / not found); 125 for abox's own errors. */
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>

#include "base/base.h"
#include "cli.h"

#define EXIT_TIMEOUT 124

static void usage(FILE *f)
{
	fprintf(f,
		"usage: abox run [OPTIONS] [--] CMD [ARG...]\n"
		"\n"
		"Runs CMD in a fresh sandbox and removes the sandbox when CMD ends.\n"
		"\n"
		"  -t, --template NAME   template to start from (default: host)\n"
		"  -u, --user USER       run as 'user' (uid 1000, default) or 'root'\n"
		"  -w, --cwd DIR         working directory (default: the user's home)\n"
		"  -e, --env K=V         set an environment variable (repeatable)\n"
		"  -i, --interactive     pass standard input to the command\n"
		"      --memory SIZE     memory limit (default 512M)\n"
		"      --disk SIZE       size of the writable layer (default 1G)\n"
		"      --pids N          process limit (default 512)\n"
		"      --cpus N          CPU limit, e.g. 0.5 or 2 (default 1)\n"
		"      --timeout SECS    kill the sandbox after SECS seconds\n"
		"      --seccomp FILE    seccomp policy (OCI linux.seccomp JSON)\n"
		"  -h, --help            this text\n"
		"\n"
		"Exit status: the command's; 128+N if signal N ended it; 124 on --timeout;\n"
		"126/127 if it could not be run / was not found; 125 if abox itself failed.\n");
}

struct run_state {
	int exit_code;
	bool ended;
	bool stdout_broken;
	const char *memory_text;
	uint32_t timeout_s;
	abox_sandbox *sb;
};

/* Signals arrive through handlers (no SA_RESTART) that note them and wake
 * the loop through a pipe: unlike a blocked signal read from a signalfd,
 * they also interrupt a write to a stdout that nobody reads, so SIGTERM
 * always ends the sandbox. */
static volatile sig_atomic_t got_signals[65];
static int wake_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;
	got_signals[sig] = 1;
	if (wake_pipe[1] >= 0)
		(void)!write(wake_pipe[1], "", 1);
	errno = saved;
}

static bool must_stop(void)
{
	return got_signals[SIGTERM] || got_signals[SIGHUP];
}

/* Writes all of buf unless a terminating signal comes first. -EPIPE when
 * the reader is gone. */
static int out_write(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR) {
				if (must_stop())
					return -EINTR;
				continue;
			}
			if (errno == EAGAIN) { /* someone made our stdout non-blocking */
				struct pollfd pf = { .fd = fd, .events = POLLOUT };
				if (poll(&pf, 1, -1) < 0 && errno == EINTR && must_stop())
					return -EINTR;
				continue;
			}
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void on_event(const abox_event *ev, void *ud)
{
	struct run_state *st = ud;
	switch (ev->type) {
	case ABOX_EVENT_STDOUT:
		if (!st->stdout_broken && out_write(1, ev->data, ev->len) == -EPIPE)
			st->stdout_broken = true;
		break;
	case ABOX_EVENT_STDERR:
		(void)out_write(2, ev->data, ev->len);
		break;
	case ABOX_EVENT_END:
		st->ended = true;
		if (ev->end_flags & ABOX_END_TIMEOUT) {
			cli_err("killed: timeout (%us)", st->timeout_s);
			st->exit_code = EXIT_TIMEOUT;
			break;
		}
		st->exit_code = ev->exit_code;
		if (ev->error)
			cli_err("%s", ev->error);
		if ((ev->end_flags & ABOX_END_OOM) && ev->signal == SIGKILL)
			cli_err("killed: out of memory (limit %s)", st->memory_text);
		else if (ev->end_flags & ABOX_END_OOM)
			cli_err("warning: a process in the sandbox was killed: out of memory (limit %s)",
				st->memory_text);
		else if (ev->end_flags & ABOX_END_LOST)
			cli_err("sandbox ended unexpectedly");
		break;
	default:
		break;
	}
}

static int parse_cpus(const char *s, uint32_t *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !isfinite(v) || v <= 0 || v > 1024)
		return -EINVAL;
	*out = (uint32_t)(v * 1000 + 0.5);
	return *out ? 0 : -EINVAL;
}

static int parse_secs(const char *s, uint32_t *ms)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !isfinite(v) || v <= 0 || v > 4294967.0)
		return -EINVAL;
	*ms = (uint32_t)(v * 1000 + 0.5);
	return *ms ? 0 : -EINVAL;
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
	bool interactive = false;
	const char *memory_text = "512M";
	char membuf[32];
	int c;

	if (!env)
		return EXIT_ABOX;
	so.flags = ABOX_SANDBOX_EPHEMERAL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+t:u:w:e:ih", longopts, NULL)) != -1) {
		uint64_t v;
		switch (c) {
		case 't': so.template_name = optarg; break;
		case 'u': po.user = optarg; break;
		case 'w': po.cwd = optarg; break;
		case 'e':
			if (!strchr(optarg, '=') || optarg[0] == '=') {
				cli_err("run: --env '%s': expected K=V", optarg);
				return EXIT_ABOX;
			}
			env[nenv++] = optarg;
			break;
		case 'i': interactive = true; break;
		case 'M':
			if (parse_size(optarg, &v) < 0 || v == 0) {
				cli_err("run: --memory '%s': expected a size like 512M or 2G", optarg);
				return EXIT_ABOX;
			}
			so.memory_bytes = v;
			format_size(v, membuf, sizeof(membuf));
			memory_text = membuf;
			break;
		case 'D':
			if (parse_size(optarg, &v) < 0 || v == 0) {
				cli_err("run: --disk '%s': expected a size like 1G or 256M", optarg);
				return EXIT_ABOX;
			}
			so.disk_bytes = v;
			break;
		case 'P':
			if (parse_size(optarg, &v) < 0 || v == 0 || v > (1ULL << 22)) {
				cli_err("run: --pids '%s': expected a number of processes", optarg);
				return EXIT_ABOX;
			}
			so.pids = v;
			break;
		case 'C':
			if (parse_cpus(optarg, &so.cpu_millis) < 0) {
				cli_err("run: --cpus '%s': expected a positive number like 0.5 or 2", optarg);
				return EXIT_ABOX;
			}
			break;
		case 'T':
			if (parse_secs(optarg, &so.timeout_ms) < 0) {
				cli_err("run: --timeout '%s': expected seconds, e.g. 30 or 2.5", optarg);
				return EXIT_ABOX;
			}
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
	if (interactive)
		po.flags |= ABOX_PROC_STDIN;

	/* Signals become events of the loop below: SIGTERM/SIGHUP end the
	 * sandbox cleanly, the others are forwarded to the command's process
	 * group. They are blocked while the sandbox is made, so none can
	 * interrupt the creation half-way, and handled from then on. */
	sigset_t mask, old_mask;
	sigemptyset(&mask);
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT };
	for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
		sigaddset(&mask, sigs[i]);
	sigprocmask(SIG_BLOCK, &mask, &old_mask);
	signal(SIGPIPE, SIG_IGN);
	if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		cli_err("run: pipe: %s", strerror(errno));
		return EXIT_ABOX;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
		sigaction(sigs[i], &sa, NULL);

	abox_error err = ABOX_ERROR_INIT;
	abox_ctx *ctx = NULL;
	abox_ctx_opts co = ABOX_CTX_OPTS_INIT;
	if (getenv("ABOX_DEBUG") && *getenv("ABOX_DEBUG"))
		co.log = cli_log_stderr;
	if (abox_ctx_new(&co, &ctx, &err) < 0)
		return cli_fail(&err);
	abox_sandbox *sb = NULL;
	if (abox_sandbox_create(ctx, &so, &sb, &err) < 0) {
		abox_ctx_free(ctx);
		return cli_fail(&err);
	}
	struct run_state st = { .exit_code = EXIT_ABOX, .memory_text = memory_text,
				.timeout_s = (so.timeout_ms + 999) / 1000, .sb = sb };
	/* creation is done: let the handlers run (they only set flags) */
	abox_proc *p = NULL;
	int rc;
	if (co.log)
		co.log(ABOX_LOG_DEBUG, "exec: start", NULL);
	if (abox_proc_start(sb, &po, &p, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}

	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	bool stdin_open = interactive;
	for (;;) {
		if (must_stop()) {
			/* our own end: take the sandbox with us */
			rc = 128 + (got_signals[SIGTERM] ? SIGTERM : SIGHUP);
			goto out;
		}
		for (size_t i = 0; i < ELEMENTSOF(sigs); i++) {
			int sig = sigs[i];
			if (got_signals[sig] && sig != SIGTERM && sig != SIGHUP) {
				got_signals[sig] = 0;
				(void)abox_proc_signal(p, sig, NULL);
			}
		}
		int r = abox_proc_dispatch(p, on_event, &st, &err);
		if (r < 0) {
			rc = cli_fail(&err);
			goto out;
		}
		if (r > 0)
			break;
		if (st.stdout_broken) {
			/* like a pipeline: the reader left, the writer ends */
			rc = 128 + SIGPIPE;
			goto out;
		}
		/* read more stdin only while little is waiting to be sent */
		bool want_stdin = stdin_open && abox_proc_stdin_pending(p) < (1u << 20);
		struct pollfd pfd[3] = {
			{ .fd = abox_proc_fd(p), .events = (short)abox_proc_events(p) },
			{ .fd = wake_pipe[0], .events = POLLIN },
			{ .fd = want_stdin ? 0 : -1, .events = POLLIN },
		};
		if (poll(pfd, 3, 100) < 0 && errno != EINTR) {
			abox_error_set(&err, errno, "run: poll");
			rc = cli_fail(&err);
			goto out;
		}
		if (pfd[1].revents) {
			char drainbuf[64];
			while (read(wake_pipe[0], drainbuf, sizeof(drainbuf)) > 0)
				;
		}
		if (pfd[2].revents) {
			char buf[65536];
			ssize_t n = read(0, buf, sizeof(buf));
			if (n > 0) {
				if (abox_proc_write_stdin(p, buf, (size_t)n, NULL) < 0)
					stdin_open = false;
			} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
				(void)abox_proc_close_stdin(p, NULL);
				stdin_open = false;
			}
		}
	}
	rc = st.exit_code;
	if (co.log)
		co.log(ABOX_LOG_DEBUG, "exec: ended", NULL);
out:
	abox_proc_free(p);
	abox_sandbox_free(sb);
	/* the cheap part of gc, on the way out: leftovers of runs that were
	 * SIGKILLed (nothing runs on their way out) */
	(void)abox_gc(ctx, NULL, NULL);
	abox_ctx_free(ctx);
	return rc;
}
