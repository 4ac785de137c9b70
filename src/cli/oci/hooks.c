/* oci/hooks.c — a config's hooks, run by the runtime with the
 * container's state on their stdin: prestart and createRuntime at the end
 * of `create` in the runtime's namespaces, then createContainer in the
 * container's (a failure fails the create), poststart after `start` and
 * poststop after `delete` (a failure is a warning). startContainer runs
 * inside the container (hooks_in.c). */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "oci.h"

static char **strv(json_object *a)
{
	size_t n = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
	char **v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && i < n; i++)
		v[i] = (char *)json_object_get_string(json_object_array_get_idx(a, i));
	return v;
}

void oci_hook_failed(FILE *out, const char *how, char *msg, size_t n)
{
	char tail[256] = "";
	long size = fseek(out, 0, SEEK_END) == 0 ? ftell(out) : 0;
	if (size > 0 && fseek(out, size > 255 ? size - 255 : 0, SEEK_SET) == 0)
		tail[fread(tail, 1, sizeof(tail) - 1, out)] = '\0';
	for (char *c = tail; *c; c++)
		if (*c == '\n')
			*c = ' ';
	snprintf(msg, n, "%s%s%s%s", how, tail[0] ? " (its output: " : "", tail, tail[0] ? ")" : "");
}

/* One hook: 0, or -1 with why in msg (its last output among it). Its
 * stdout and stderr go to a file of ours, never to the container's stdio
 * (during create those are the engine's pipes: a hook that stays behind
 * holding them would keep the engine from ever seeing their end). */
/* createContainer, in the child: into the container's network, uts,
 * ipc, cgroup and pid namespaces (init's), keeping the runtime's mount
 * namespace: abox makes the container's root and mounts in one step in
 * its own, so there is no moment "before pivot_root" to run a host
 * program in, and the runtime's tree is where the hook's path resolves and
 * where it finds the container's root (its bundle's). The pid namespace
 * takes a child: this process waits for it and ends as it did. */
static void join_container(pid_t init)
{
	int pfd = (int)syscall(SYS_pidfd_open, init, 0);
	if (pfd < 0 ||
	    setns(pfd, CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP | CLONE_NEWPID) < 0) {
		fprintf(stderr, "join the container's namespaces: %s\n", strerror(errno));
		_exit(126);
	}
	close(pfd);
	pid_t c = fork();
	if (c < 0) {
		fprintf(stderr, "fork: %s\n", strerror(errno));
		_exit(126);
	}
	if (c == 0)
		return;
	int st = 0;
	while (waitpid(c, &st, 0) < 0 && errno == EINTR)
		;
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

static int run_one(json_object *h, const char *state, pid_t join, char *msg, size_t n)
{
	json_object *v;
	const char *path = json_object_object_get_ex(h, "path", &v) ? json_object_get_string(v) : NULL;
	if (!path || path[0] != '/')
		return snprintf(msg, n, "no absolute path"), -1;
	int timeout = json_object_object_get_ex(h, "timeout", &v) ? json_object_get_int(v) : 0;
	json_object *args = NULL, *env = NULL;
	json_object_object_get_ex(h, "args", &args);
	json_object_object_get_ex(h, "env", &env);
	char **argv = strv(args), **envp = strv(env);
	char *self[] = { (char *)path, NULL };
	int in[2] = { -1, -1 };
	FILE *out = tmpfile();
	if (!argv || !envp || !out || pipe2(in, O_CLOEXEC) < 0) {
		snprintf(msg, n, "%s", strerror(errno));
		free(argv);
		free(envp);
		if (out)
			fclose(out);
		return -1;
	}
	signal(SIGPIPE, SIG_IGN); /* a hook that reads nothing may close its stdin */
	pid_t pid = fork();
	if (pid == 0) {
		/* a group of its own: a timeout ends what it started too */
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		dup2(in[0], 0);
		/* ours (close-on-exec), but createContainer's hook has a
		 * parent here that never execs: its stdin would never end */
		close(in[1]);
		dup2(fileno(out), 1);
		dup2(fileno(out), 2);
		if (join > 0)
			join_container(join);
		execve(path, argv[0] ? argv : self, envp);
		_exit(127);
	}
	free(argv);
	free(envp);
	close(in[0]);
	if (pid < 0) {
		close(in[1]);
		fclose(out);
		return snprintf(msg, n, "fork: %s", strerror(errno)), -1;
	}
	if (write(in[1], state, strlen(state)) < 0) {
		/* it did not read its state: its status tells */
	}
	close(in[1]);
	int status = 0;
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	bool timed_out = false;
	for (;;) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (timeout > 0 && now.tv_sec - start.tv_sec >= timeout) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			timed_out = true;
			break;
		}
		poll(NULL, 0, 10);
	}
	bool ok = !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	char how[64];
	if (timed_out)
		snprintf(how, sizeof(how), "timed out after %d s", timeout);
	else if (WIFEXITED(status))
		snprintf(how, sizeof(how), "exit status %d", WEXITSTATUS(status));
	else
		snprintf(how, sizeof(how), "killed by signal %d", WTERMSIG(status));
	if (!ok)
		oci_hook_failed(out, how, msg, n);
	fclose(out);
	return ok ? 0 : -1;
}

static int run_kind(const char *hooks_json, const char *kind, const char *state, bool fatal, pid_t join)
{
	json_object *hooks = hooks_json ? json_tokener_parse(hooks_json) : NULL, *list;
	int r = 0;
	if (hooks && json_object_object_get_ex(hooks, kind, &list) &&
	    json_object_is_type(list, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(list); i++) {
			char why[512];
			json_object *h = json_object_array_get_idx(list, i);
			if (run_one(h, state, join, why, sizeof(why)) == 0)
				continue;
			json_object *p;
			const char *hp =
				json_object_object_get_ex(h, "path", &p) ? json_object_get_string(p) : "?";
			if (fatal) {
				r = oci_error("hooks.%s[%zu] '%s' failed: %s", kind, i, hp, why);
				break;
			}
			oci_warn("hooks.%s[%zu] '%s' failed: %s", kind, i, hp, why);
		}
	}
	json_object_put(hooks);
	return r;
}

int oci_hooks(const char *hooks_json, const char *kind, const char *state, bool fatal)
{
	return run_kind(hooks_json, kind, state, fatal, 0);
}

int oci_hooks_create_container(const char *hooks_json, const char *state, pid_t init)
{
	return run_kind(hooks_json, "createContainer", state, true, init);
}
