/* layer/unpack_run.c — see unpack_run.h. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "base/run.h"
#include "layer/unpack_run.h"

extern char **environ;

/* One line of the helper's stdout. */
static void on_line(struct unpack_run *r, char *line)
{
	unsigned long long a, b, c;
	unsigned l, n;
	if (sscanf(line, "progress %llu %llu %u %u", &a, &b, &l, &n) == 4) {
		if (r->progress)
			r->progress(a, b, l, n, r->ud);
	} else if (strncmp(line, "config ", 7) == 0) {
		free(r->config);
		r->config = strdup(line + 7);
	} else if (sscanf(line, "done %llu %llu %llu", &a, &b, &c) == 3) {
		r->entries = a;
		r->bytes = b;
		r->dropped = c;
	}
}

int unpack_run(struct unpack_run *r, abox_error *err)
{
	char mb[48], me[48];
	const char *argv[12];
	int k = 0;
	argv[k++] = "abox-unpack";
	if (r->keep_setuid)
		argv[k++] = "--keep-setuid";
	if (r->keep_devices)
		argv[k++] = "--keep-devices";
	if (r->max_bytes) {
		snprintf(mb, sizeof(mb), "--max-bytes=%llu", (unsigned long long)r->max_bytes);
		argv[k++] = mb;
	}
	if (r->max_entries) {
		snprintf(me, sizeof(me), "--max-entries=%llu", (unsigned long long)r->max_entries);
		argv[k++] = me;
	}
	argv[k++] = "--";
	argv[k++] = r->source;
	argv[k++] = r->dest;
	argv[k++] = r->scratch;
	argv[k] = NULL;

	int out[2], errp[2];
	if (pipe2(out, O_CLOEXEC) < 0)
		return abox_error_set(err, errno, "import: pipe");
	if (pipe2(errp, O_CLOEXEC) < 0) {
		int e = errno;
		close(out[0]);
		close(out[1]);
		return abox_error_set(err, e, "import: pipe");
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	pid_t pid;
	int se = posix_spawn(&pid, r->helper, &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(out[1]);
	close(errp[1]);
	if (se != 0) {
		close(out[0]);
		close(errp[0]);
		return abox_error_set(err, se, "import: run '%s'", r->helper);
	}

	char obuf[8192], ebuf[2048];
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
				char *nl;
				while ((nl = memchr(obuf, '\n', ol))) {
					*nl = '\0';
					on_line(r, obuf);
					size_t used = (size_t)(nl - obuf) + 1;
					memmove(obuf, nl + 1, ol - used);
					ol -= used;
				}
				if (ol == sizeof(obuf) - 1)
					ol = 0; /* a line longer than any report: not one of ours */
			}
		}
		if (p[1].revents) {
			char tmp[1024];
			ssize_t n = read(errp[0], tmp, sizeof(tmp));
			if (n <= 0) {
				close(errp[0]);
				p[1].fd = -1;
			} else {
				size_t take = (size_t)n < sizeof(ebuf) - 1 - el ? (size_t)n : sizeof(ebuf) - 1 - el;
				memcpy(ebuf + el, tmp, take);
				el += take;
			}
		}
	}
	if (p[0].fd >= 0)
		close(out[0]);
	if (p[1].fd >= 0)
		close(errp[0]);
	ebuf[el] = '\0';
	while (el && (ebuf[el - 1] == '\n' || ebuf[el - 1] == ' '))
		ebuf[--el] = '\0';

	int status = wait_child(pid, err, "import: wait for the unpacker");
	if (status <= 0)
		return status;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		return 1;
	if (WIFSIGNALED(status))
		return abox_error_setx(err, EIO, "import: the unpacker was killed by signal %d%s%s", WTERMSIG(status),
				       el ? ": " : "", ebuf);
	return abox_error_setx(err, EINVAL, "import: %s", el ? ebuf : "the unpacker failed");
}

void unpack_run_free(struct unpack_run *r)
{
	free(r->config);
	r->config = NULL;
}
