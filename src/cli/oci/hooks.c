/* oci/hooks.c — a config's hooks, run by the runtime in its own
 * namespaces with the container's state on their stdin: prestart and
 * createRuntime at the end of `create` (a failure fails the create),
 * poststart after `start` and poststop after `delete` (a failure is a
 * warning). createContainer and startContainer, which run inside the
 * container, are refused when the container is made (the library). */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* One hook: 0, or -1 with why in msg. */
static int run_one(json_object *h, const char *state, char *msg, size_t n)
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
	int in[2];
	if (!argv || !envp || pipe2(in, O_CLOEXEC) < 0) {
		free(argv);
		free(envp);
		return snprintf(msg, n, "%s", strerror(errno)), -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		execve(path, argv[0] ? argv : self, envp);
		_exit(127);
	}
	free(argv);
	free(envp);
	close(in[0]);
	if (pid < 0) {
		close(in[1]);
		return snprintf(msg, n, "fork: %s", strerror(errno)), -1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (write(in[1], state, strlen(state)) < 0) {
		/* a hook that reads nothing may close its stdin */
	}
	close(in[1]);
	int status = 0;
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (timeout > 0 && now.tv_sec - start.tv_sec >= timeout) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return snprintf(msg, n, "timed out after %d s", timeout), -1;
		}
		poll(NULL, 0, 10);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		snprintf(msg, n, "exit status %d", WEXITSTATUS(status));
	else
		snprintf(msg, n, "killed by signal %d", WTERMSIG(status));
	return -1;
}

int oci_hooks(const char *bundle, const char *kind, const char *state, bool fatal)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	json_object *cfg = json_object_from_file(path), *hooks, *list;
	int r = 0;
	if (cfg && json_object_object_get_ex(cfg, "hooks", &hooks) &&
	    json_object_object_get_ex(hooks, kind, &list) && json_object_is_type(list, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(list); i++) {
			char why[512];
			json_object *h = json_object_array_get_idx(list, i);
			if (run_one(h, state, why, sizeof(why)) == 0)
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
	json_object_put(cfg);
	return r;
}
