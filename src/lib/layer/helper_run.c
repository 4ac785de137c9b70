/* layer/helper_run.c — see helper_run.h. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "base/run.h"
#include "layer/helper_run.h"

extern char **environ;

/* Splits what arrived into lines for the callback. */
static void take_lines(struct helper_run *h, char *buf, size_t *len, size_t cap)
{
	char *nl;
	while ((nl = memchr(buf, '\n', *len))) {
		*nl = '\0';
		h->on_line(buf, h->ud);
		size_t used = (size_t)(nl - buf) + 1;
		memmove(buf, nl + 1, *len - used);
		*len -= used;
	}
	if (*len == cap - 1)
		*len = 0; /* a line longer than any report: not one of ours */
}

int helper_run(struct helper_run *h, abox_error *err)
{
	int out[2], errp[2], in[2] = { -1, -1 };
	if (pipe2(out, O_CLOEXEC) < 0)
		return abox_error_set(err, errno, "%s: pipe", h->what);
	if (pipe2(errp, O_CLOEXEC) < 0) {
		int e = errno;
		close(out[0]);
		close(out[1]);
		return abox_error_set(err, e, "%s: pipe", h->what);
	}
	if (h->input && pipe2(in, O_CLOEXEC) < 0) {
		int e = errno;
		close(out[0]);
		close(out[1]);
		close(errp[0]);
		close(errp[1]);
		return abox_error_set(err, e, "%s: pipe", h->what);
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (h->input)
		posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	pid_t pid;
	int se = posix_spawn(&pid, h->path, &fa, NULL, (char *const *)h->argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(out[1]);
	close(errp[1]);
	if (h->input) {
		close(in[0]);
		/* a few short lines: they fit in the pipe, the write cannot block
		 * (SIGPIPE is the caller's: an early exit shows as EPIPE here) */
		if (se == 0) {
			size_t n = strlen(h->input);
			ssize_t w = write(in[1], h->input, n);
			(void)w;
		}
		close(in[1]);
	}
	if (se != 0) {
		close(out[0]);
		close(errp[0]);
		return abox_error_set(err, se, "%s: run '%s'", h->what, h->path);
	}

	char obuf[8192];
	size_t ol = 0, el = 0;
	struct pollfd p[2] = { { .fd = out[0], .events = POLLIN }, { .fd = errp[0], .events = POLLIN } };
	while (p[0].fd >= 0 || p[1].fd >= 0) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents) {
			ssize_t n = read(out[0], obuf + ol, sizeof(obuf) - 1 - ol);
			if (n <= 0) {
				close(out[0]);
				p[0].fd = -1;
			} else {
				ol += (size_t)n;
				take_lines(h, obuf, &ol, sizeof(obuf));
			}
		}
		if (p[1].revents) {
			char tmp[1024];
			ssize_t n = read(errp[0], tmp, sizeof(tmp));
			if (n <= 0) {
				close(errp[0]);
				p[1].fd = -1;
			} else {
				size_t room = sizeof(h->errtext) - 1 - el;
				size_t take = (size_t)n < room ? (size_t)n : room;
				memcpy(h->errtext + el, tmp, take);
				el += take;
			}
		}
	}
	if (p[0].fd >= 0)
		close(out[0]);
	if (p[1].fd >= 0)
		close(errp[0]);
	h->errtext[el] = '\0';
	while (el && (h->errtext[el - 1] == '\n' || h->errtext[el - 1] == ' '))
		h->errtext[--el] = '\0';
	return wait_child(pid, err, "%s: wait for '%s'", h->what, h->path);
}
