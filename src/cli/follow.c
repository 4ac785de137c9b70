/* src/cli/follow.c — runs one process in a sandbox for `abox run` and
 * `abox exec`: streams its output, feeds stdin, forwards signals, and
 * turns its end into an exit status.
 *
 * Exit status: the command's own; 128+N when signal N ended it; 124 when
 * the sandbox's timeout ended it; 126/127 when the command could not be
 * started (not runnable / not found); 141 when our stdout's reader left;
 * 125 for abox's own errors. */
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/time.h>
#include <termios.h>

#include "base/base.h"
#include "cli.h"

#define EXIT_TIMEOUT 124

/* Signals arrive through handlers (no SA_RESTART) that note them and wake
 * the loop through a pipe: unlike a blocked signal read from a signalfd,
 * they also interrupt a write to a stdout that nobody reads, so SIGTERM
 * always ends the sandbox. */
static volatile sig_atomic_t got_signals[65];
static int wake_pipe[2] = { -1, -1 };
static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGALRM };
static sigset_t saved_mask;

static void on_signal(int sig)
{
	int saved = errno;
	got_signals[sig] = 1;
	if (wake_pipe[1] >= 0)
		(void)!write(wake_pipe[1], "", 1);
	errno = saved;
}

int cli_signals_block(void)
{
	sigset_t mask;
	sigemptyset(&mask);
	for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
		sigaddset(&mask, sigs[i]);
	sigprocmask(SIG_BLOCK, &mask, &saved_mask);
	signal(SIGPIPE, SIG_IGN);
	if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		cli_err("pipe: %s", abox_strerror(errno));
		return -1;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
	return 0;
}

static bool must_stop(void)
{
	return got_signals[SIGTERM] || got_signals[SIGHUP];
}

/* Output is dropped once we are ending or the deadline passed (SIGALRM):
 * a reader that never reads must not keep abox from either. */
static bool drop_output(void)
{
	return must_stop() || got_signals[SIGALRM];
}

/* Writes all of buf unless a terminating signal comes first. -EPIPE when
 * the reader is gone. */
static int out_write(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		if (drop_output())
			return -EINTR;
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) { /* someone made our stdout non-blocking */
				struct pollfd pf = { .fd = fd, .events = POLLOUT };
				(void)poll(&pf, 1, -1);
				continue;
			}
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

struct run_state {
	int exit_code;
	bool stdout_broken;
	const struct cli_proc_opts *o;
};

static void on_event(const abox_event *ev, void *ud)
{
	struct run_state *st = ud;
	switch (ev->type) {
	case ABOX_EVENT_PTY:
		if (!st->stdout_broken && out_write(1, ev->data, ev->len) == -EPIPE)
			st->stdout_broken = true;
		break;
	case ABOX_EVENT_STDOUT:
		if (st->o->truncated)
			break; /* printed whole at the end */
		if (ev->dropped)
			cli_err("[%llu bytes of output were not kept before this]", (unsigned long long)ev->dropped);
		if (!st->stdout_broken && out_write(1, ev->data, ev->len) == -EPIPE)
			st->stdout_broken = true;
		break;
	case ABOX_EVENT_STDERR:
		if (st->o->truncated)
			break;
		if (ev->dropped)
			cli_err("[%llu bytes of error output were not kept before this]", (unsigned long long)ev->dropped);
		(void)out_write(2, ev->data, ev->len);
		break;
	case ABOX_EVENT_END:
		if (ev->end_flags & ABOX_END_TIMEOUT) {
			cli_err("killed: timeout (%us)", st->o->timeout_s);
			st->exit_code = EXIT_TIMEOUT;
			break;
		}
		st->exit_code = ev->exit_code;
		if (ev->end_flags & ABOX_END_CMD_TIMEOUT) {
			/* as timeout(1) and `abox run --timeout` say it */
			cli_err("killed: the command's timeout passed");
			st->exit_code = EXIT_TIMEOUT;
			break;
		}
		if (ev->error)
			cli_err("%s", ev->error);
		/* `abox exec ID --json sh`: the option was taken for the command */
		if (ev->error && ev->exit_code == 127 && st->o->argv0 && st->o->argv0[0] == '-')
			cli_err("(options go before the sandbox id, or close them with '--': "
				"abox exec [OPTIONS] ID -- CMD)");
		/* the library says an OOM kill in ev->error; these are for
		 * backends that flag it only */
		if ((ev->end_flags & ABOX_END_OOM) && ev->error)
			;
		else if ((ev->end_flags & ABOX_END_OOM) && ev->signal == SIGKILL)
			cli_err("killed: out of memory (limit %s)", st->o->memory_text);
		else if (ev->end_flags & ABOX_END_OOM)
			cli_err("warning: a process in the sandbox was killed: out of memory (limit %s)",
				st->o->memory_text);
		else if (ev->end_flags & ABOX_END_LOST)
			cli_err("sandbox ended unexpectedly");
		break;
	default:
		break;
	}
}

int cli_run_process(abox_sandbox *sb, const abox_proc_opts *po, const struct cli_proc_opts *o)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_proc *p = NULL;
	if (abox_proc_start(sb, po, &p, &err) < 0)
		return cli_fail(&err);
	return cli_follow(p, (po->flags & ABOX_PROC_STDIN) != 0, o);
}

int cli_follow(abox_proc *p, bool with_stdin, const struct cli_proc_opts *o)
{
	abox_error err = ABOX_ERROR_INIT;
	struct run_state st = { .exit_code = EXIT_ABOX, .o = o };
	int rc;
	/* a terminal process on a local terminal: keys go through raw (Ctrl-C
	 * reaches the sandbox's terminal, which makes the SIGINT there) */
	struct termios saved_tio;
	bool raw = o->tty && isatty(0) && tcgetattr(0, &saved_tio) == 0;
	if (raw) {
		struct termios t = saved_tio;
		cfmakeraw(&t);
		tcsetattr(0, TCSANOW, &t);
	}

	/* the deadline interrupts even a write to a reader that never reads
	 * (the library then ends the sandbox and reports the timeout) */
	if (o->timeout_s) {
		struct itimerval it = { .it_value = { .tv_sec = o->timeout_s, .tv_usec = 50000 } };
		setitimer(ITIMER_REAL, &it, NULL);
	}
	/* the sandbox is set up: from here on signals are handled */
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
	bool stdin_open = with_stdin;
	for (;;) {
		if (must_stop()) {
			/* our own end: an ephemeral sandbox goes with us */
			rc = 128 + (got_signals[SIGTERM] ? SIGTERM : SIGHUP);
			goto out;
		}
		if (o->tty && got_signals[SIGWINCH]) {
			got_signals[SIGWINCH] = 0;
			struct winsize ws;
			if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
				(void)abox_proc_resize(p, ws.ws_row, ws.ws_col, NULL);
		}
		for (size_t i = 0; i < ELEMENTSOF(sigs); i++) {
			int sig = sigs[i];
			if (got_signals[sig] && sig != SIGTERM && sig != SIGHUP && sig != SIGALRM) {
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
		if (poll(pfd, 3, abox_proc_buffered(p) ? 0 : 100) < 0 && errno != EINTR) {
			abox_error_set(&err, errno, "poll");
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
	if (o->truncated) {
		abox_proc_result res = { .version = ABOX_PROC_RESULT_VERSION };
		if (abox_proc_result_get(p, &res, &err) < 0) {
			rc = cli_fail(&err);
		} else if (o->json) {
			json_object *j = json_object_new_object();
			json_object_object_add(j, "exitCode", json_object_new_int(st.exit_code));
			json_object_object_add(j, "stdout", json_object_new_string_len(res.stdout_text, (int)res.stdout_len));
			json_object_object_add(j, "stderr", json_object_new_string_len(res.stderr_text, (int)res.stderr_len));
			json_object_object_add(j, "truncated", json_object_new_boolean(res.truncated));
			json_object_object_add(j, "stdoutLength", json_object_new_uint64(res.stdout_bytes));
			json_object_object_add(j, "stderrLength", json_object_new_uint64(res.stderr_bytes));
			char path[200];
			snprintf(path, sizeof(path), "%s/stdout.txt", res.dir);
			json_object_object_add(j, "stdoutPath", json_object_new_string(path));
			snprintf(path, sizeof(path), "%s/stderr.txt", res.dir);
			json_object_object_add(j, "stderrPath", json_object_new_string(path));
			snprintf(path, sizeof(path), "%s/command.txt", res.dir);
			json_object_object_add(j, "commandPath", json_object_new_string(path));
			const char *txt = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
			(void)out_write(1, txt, strlen(txt));
			(void)out_write(1, "\n", 1);
			json_object_put(j);
			abox_proc_result_clear(&res);
		} else {
			(void)out_write(1, res.stdout_text, res.stdout_len);
			(void)out_write(2, res.stderr_text, res.stderr_len);
			abox_proc_result_clear(&res);
		}
	}
out:
	if (raw)
		tcsetattr(0, TCSANOW, &saved_tio);
	abox_proc_free(p);
	return rc;
}

void cli_on_start(const abox_event *ev, void *ud)
{
	struct cli_start *s = ud;
	if (ev->type == ABOX_EVENT_START)
		s->pid = ev->pid;
	else if (ev->type == ABOX_EVENT_END) {
		s->ended = true;
		s->code = ev->exit_code;
		if (ev->error) {
			s->error = "failed";
			cli_err("%s", ev->error);
		}
	}
}

int cli_wait_started(abox_proc *p, struct cli_start *s, abox_error *err)
{
	while (!s->pid && !s->ended) {
		int r = abox_proc_dispatch(p, cli_on_start, s, err);
		if (r < 0)
			return r;
		if (r > 0 || s->pid || s->ended)
			break;
		struct pollfd pf = { .fd = abox_proc_fd(p), .events = (short)abox_proc_events(p) };
		if (!abox_proc_buffered(p))
			(void)poll(&pf, 1, 1000);
	}
	return 0;
}
