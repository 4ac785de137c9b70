/* oci/hooks_in.c — startContainer hooks: run at `start` inside the
 * container (its namespaces, root and confinement, as an exec is) before
 * its process, with the container's state on their stdin; a failure fails
 * the start, as with runc. The hook's path is its program in the
 * container's root (its argv[0] is that path), its env its own. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <abox/abox.h>

#include "oci.h"

struct ended {
	int code;
	bool done;
	char error[256];
};

static void on_event(const abox_event *ev, void *ud)
{
	struct ended *e = ud;
	if (ev->type != ABOX_EVENT_END)
		return;
	e->done = true;
	e->code = ev->exit_code;
	if (ev->error)
		snprintf(e->error, sizeof(e->error), "%s", ev->error);
}

/* The hook as an OCI process: root, in /, its args with the path first. */
static char *process_of(json_object *h, const char *path)
{
	json_object *p = json_object_new_object(), *args = json_object_new_array(), *v, *user;
	json_object_array_add(args, json_object_new_string(path));
	if (json_object_object_get_ex(h, "args", &v) && json_object_is_type(v, json_type_array))
		for (size_t i = 1; i < json_object_array_length(v); i++)
			json_object_array_add(args, json_object_get(json_object_array_get_idx(v, i)));
	json_object_object_add(p, "args", args);
	json_object_object_add(p, "env",
			       json_object_object_get_ex(h, "env", &v) &&
					       json_object_is_type(v, json_type_array)
				       ? json_object_get(v)
				       : json_object_new_array());
	json_object_object_add(p, "cwd", json_object_new_string("/"));
	user = json_object_new_object();
	json_object_object_add(user, "uid", json_object_new_int(0));
	json_object_object_add(user, "gid", json_object_new_int(0));
	json_object_object_add(p, "user", user);
	char *text = strdup(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN));
	json_object_put(p);
	return text;
}

static int run_one(abox_sandbox *sb, json_object *h, const char *state, char *msg, size_t n)
{
	json_object *v;
	const char *path = json_object_object_get_ex(h, "path", &v) ? json_object_get_string(v) : NULL;
	if (!path || path[0] != '/')
		return snprintf(msg, n, "no absolute path"), -1;
	int timeout = json_object_object_get_ex(h, "timeout", &v) ? json_object_get_int(v) : 0;
	char *proc = process_of(h, path);
	int in[2] = { -1, -1 };
	FILE *out = tmpfile();
	if (!proc || !out || pipe2(in, O_CLOEXEC) < 0) {
		snprintf(msg, n, "%s", strerror(errno));
		free(proc);
		if (out)
			fclose(out);
		return -1;
	}
	int stdio[3] = { in[0], fileno(out), fileno(out) };
	abox_proc *p = NULL;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_proc_start_oci(sb, proc, stdio, NULL, &p, &err);
	free(proc);
	close(in[0]);
	if (r < 0) {
		close(in[1]);
		fclose(out);
		return snprintf(msg, n, "%s", err.msg), -1;
	}
	signal(SIGPIPE, SIG_IGN); /* a hook that reads nothing may close its stdin */
	if (write(in[1], state, strlen(state)) < 0) {
		/* it did not read its state: its status tells */
	}
	close(in[1]);
	struct ended e = { .code = -1 };
	r = abox_proc_wait(p, timeout > 0 ? timeout * 1000 : -1, on_event, &e, &err);
	bool timed_out = r == -ETIMEDOUT;
	if (timed_out) {
		(void)abox_proc_signal(p, SIGKILL, NULL);
		(void)abox_proc_wait(p, 5000, on_event, &e, NULL);
	}
	abox_proc_free(p);
	bool ok = !timed_out && r >= 0 && e.done && e.code == 0 && !e.error[0];
	char how[600];
	if (timed_out)
		snprintf(how, sizeof(how), "timed out after %d s", timeout);
	else if (r < 0)
		snprintf(how, sizeof(how), "%s", err.msg);
	else if (e.error[0])
		snprintf(how, sizeof(how), "%s", e.error);
	else
		snprintf(how, sizeof(how), "exit status %d", e.code);
	if (!ok)
		oci_hook_failed(out, how, msg, n);
	fclose(out);
	return ok ? 0 : -1;
}

int oci_hooks_in(abox_sandbox *sb, const char *hooks_json, const char *kind, const char *state)
{
	json_object *hooks = hooks_json ? json_tokener_parse(hooks_json) : NULL, *list;
	int r = 0;
	if (hooks && json_object_object_get_ex(hooks, kind, &list) &&
	    json_object_is_type(list, json_type_array))
		for (size_t i = 0; !r && i < json_object_array_length(list); i++) {
			char why[512];
			json_object *h = json_object_array_get_idx(list, i), *p;
			if (run_one(sb, h, state, why, sizeof(why)) < 0)
				r = oci_error("hooks.%s[%zu] '%s' failed: %s", kind, i,
					      json_object_object_get_ex(h, "path", &p)
						      ? json_object_get_string(p)
						      : "?",
					      why);
		}
	json_object_put(hooks);
	return r;
}
