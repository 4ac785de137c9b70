/* local/ready.c — a template's start command, and waiting until what it
 * starts is ready (E2B templates' start and ready commands).
 *
 * The start command runs like any background command of the sandbox (as
 * the template's user, in its folder, with its env). Readiness is either a
 * command that must exit 0, retried, or a TCP port that must accept on
 * the sandbox's own 127.0.0.1: checked from a short-lived child that
 * joins only the sandbox's network namespace (setns on init's pidfd), so
 * no port is ever opened on the host.
 * Runs in the CLI/daemon. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "base/run.h"
#include "local/local.h"
#include "layer/template_meta.h"

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

struct end_seen {
	bool ended;
	int code;
};

static void on_event(const abox_event *ev, void *ud)
{
	struct end_seen *s = ud;
	if (ev->type == ABOX_EVENT_END) {
		s->ended = true;
		s->code = ev->exit_code;
	}
}

/* Runs argv in the sandbox; its exit code, or a negative errno. */
static int run_once(abox_sandbox *sb, const char *const *argv, const char *tag, int timeout_ms, bool wait_end,
		    abox_error *err)
{
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	po.argv = argv;
	po.tag = tag;
	po.flags = PROC_NOT_ONESHOT;
	abox_proc *p;
	int r = local_proc_start(sb, &po, &p, err);
	if (r < 0)
		return r;
	struct end_seen s = { 0 };
	if (!wait_end) {
		/* started (or failed to): then it stays in the background */
		int pid = -1;
		for (int64_t end = clock_mono_ms() + timeout_ms; pid <= 0 && !s.ended && clock_mono_ms() < end;) {
			r = events_wait(p, 50, on_event, &s, err);
			if (r < 0 && r != -ETIMEDOUT)
				break;
			r = 0;
			pid = p->pid;
		}
		proc_handle_free(p);
		if (r < 0)
			return r;
		return s.ended ? s.code : 0;
	}
	r = events_wait(p, timeout_ms, on_event, &s, err);
	if (r == -ETIMEDOUT) {
		(void)local_proc_signal(p, SIGKILL, NULL);
		abox_error_clear(err);
	}
	proc_handle_free(p);
	if (r < 0 && r != -ETIMEDOUT)
		return r;
	return s.ended ? s.code : 1;
}

/* In a child inside the sandbox's network namespace only: connect to
 * 127.0.0.1:port every 50 ms until it accepts or time runs out. */
static int port_ready(abox_sandbox *sb, uint16_t port, int timeout_ms, abox_error *err)
{
	pid_t c = fork();
	if (c < 0)
		return abox_error_set(err, errno, "template start: fork");
	if (c == 0) {
		if (setns(sb->pidfd, CLONE_NEWNET) < 0)
			_exit(2);
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		for (int64_t end = clock_mono_ms() + timeout_ms; clock_mono_ms() < end;) {
			int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (s < 0)
				_exit(2);
			int ok = connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
			close(s);
			if (ok)
				_exit(0);
			sleep_ms(50);
		}
		_exit(1);
	}
	int st = wait_child(c, err, "template start: wait");
	if (st <= 0)
		return st;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
		return abox_error_setx(err, EIO, "template start: cannot enter the sandbox's network");
	return abox_error_setx(err, ETIMEDOUT, "template start: port %u did not accept within %d s", port,
			       timeout_ms / 1000);
}

int backend_template_start(abox_sandbox *sb, const struct template_meta *m, abox_error *err)
{
	if (!m->start_cmd && !m->ready_cmd && !m->ready_port)
		return 0;
	int timeout = (int)(m->ready_timeout_ms ? m->ready_timeout_ms : TEMPLATE_READY_TIMEOUT_MS);
	/* a readiness check alone (E2B's setReadyCmd without setStartCmd)
	 * waits for what the template's own files start */
	if (m->start_cmd) {
		const char *start[] = { "/bin/sh", "-c", m->start_cmd, NULL };
		int r = run_once(sb, start, "start", timeout, false, err);
		if (r < 0)
			return abox_error_prefix(err, "template start command");
		if (r > 0)
			return abox_error_setx(err, ECHILD,
					       "template start command could not run (exit %d): %s", r,
					       m->start_cmd);
	}
	if (m->ready_port)
		return port_ready(sb, m->ready_port, timeout, err);
	if (!m->ready_cmd)
		return 0;
	const char *check[] = { "/bin/sh", "-c", m->ready_cmd, NULL };
	int last = -1;
	for (int64_t end = clock_mono_ms() + timeout; clock_mono_ms() < end;) {
		int left = (int)(end - clock_mono_ms());
		last = run_once(sb, check, NULL, left > 0 ? left : 1, true, err);
		if (last < 0)
			return abox_error_prefix(err, "template readiness check");
		if (last == 0)
			return 0;
		sleep_ms(100);
	}
	return abox_error_setx(err, ETIMEDOUT, "template: not ready within %d s (`%s` last exited %d)",
			       timeout / 1000, m->ready_cmd, last);
}
