/* oci/exec.c — `exec`: a process in a running container, as runc's
 * callers start one: from --process FILE (an OCI process object) or from
 * the config's process with the command and options given. abox-init
 * makes it inside with the caller's stdin, stdout and stderr; the caller
 * waits for its end and exits with its status (255 when it could not
 * start). With --detach a waiter does that instead: its pid is what
 * --pid-file gets, so a container engine that reaps it (containerd's shim
 * does) reads the process's exit status from it; killing the waiter kills
 * the process, and the signals it is sent go to the process. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <abox/abox.h>

#include "oci.h"

struct exec_opts {
	const char *process, *pid_file, *cwd, *user, *id, *console_socket, *pidfd_socket;
	bool detach, tty;
	const char *env[256];
	size_t nenv;
	const char *gids;
	char *const *args;
};

static int parse(int argc, char **argv, struct exec_opts *o)
{
	int i = 1;
	for (; i < argc; i++) {
		char name[64];
		const char *val;
		if (!oci_option(argv[i], name, sizeof(name), &val))
			break;
		static const char *const takes[] = { "process",
						     "p",
						     "pid-file",
						     "cwd",
						     "env",
						     "e",
						     "user",
						     "u",
						     "additional-gids",
						     "g",
						     "console-socket",
						     "cap",
						     "c",
						     "process-label",
						     "apparmor",
						     "preserve-fds",
						     "cgroup",
						     "pidfd-socket" };
		bool t = false;
		for (size_t k = 0; k < sizeof(takes) / sizeof(takes[0]); k++)
			t |= !strcmp(name, takes[k]);
		if (t && !val) {
			if (i + 1 >= argc)
				return oci_error("option --%s needs a value", name);
			val = argv[++i];
		}
		if (!strcmp(name, "process") || !strcmp(name, "p"))
			o->process = val;
		else if (!strcmp(name, "pid-file"))
			o->pid_file = *val ? val : NULL;
		else if (!strcmp(name, "cwd"))
			o->cwd = val;
		else if (!strcmp(name, "env") || !strcmp(name, "e")) {
			if (o->nenv >= sizeof(o->env) / sizeof(o->env[0]))
				return oci_error("exec: too many --env");
			o->env[o->nenv++] = val;
		} else if (!strcmp(name, "user") || !strcmp(name, "u"))
			o->user = val;
		else if (!strcmp(name, "additional-gids") || !strcmp(name, "g"))
			o->gids = val;
		else if (!strcmp(name, "detach") || !strcmp(name, "d"))
			o->detach = !val || !strcmp(val, "true");
		else if (!strcmp(name, "tty") || !strcmp(name, "t"))
			o->tty = !val || !strcmp(val, "true");
		else if (!strcmp(name, "console-socket"))
			o->console_socket = *val ? val : NULL;
		else if (!strcmp(name, "pidfd-socket"))
			o->pidfd_socket = *val ? val : NULL;
		else if (!strcmp(name, "no-new-privs") || !strcmp(name, "ignore-paused") ||
			 (!strcmp(name, "preserve-fds") && !strcmp(val, "0")) ||
			 ((!strcmp(name, "process-label") || !strcmp(name, "apparmor")) && !*val))
			; /* no_new_privs always holds; a console only with --tty */
		else if (t)
			return oci_error("exec: --%s is not supported", name);
		else
			return oci_error("flag provided but not defined: -%s", name);
	}
	if (i >= argc)
		return oci_error("exec: a container id is needed");
	o->id = argv[i];
	o->args = argv + i + 1;
	if (!o->process && !o->args[0])
		return oci_error("exec: a command is needed (or --process FILE)");
	if (o->tty && !o->console_socket)
		return oci_error(
			"exec: --tty needs --console-socket (abox hands the terminal to its caller)");
	/* the pidfd is of the process --pid-file names: with --detach, the
	 * waiter that stands for it; without, this runtime itself */
	if (o->pidfd_socket && !o->detach)
		return oci_error("exec: --pidfd-socket is for --detach (the process is then the waiter "
				 "--pid-file names)");
	return 0;
}

/* The process as JSON: --process's file, or the config's process with
 * what the options change. NULL with the error said. */
static char *process_json(const struct exec_opts *o, const struct oci_ctr *c)
{
	json_object *p = NULL;
	if (o->process) {
		p = json_object_from_file(o->process);
		if (!p)
			return oci_error("exec: read '%s': %s", o->process,
					 json_util_get_last_err() ? json_util_get_last_err() : "not JSON"),
			       NULL;
	} else {
		char path[4200];
		snprintf(path, sizeof(path), "%s/config.json", c->bundle);
		json_object *cfg = json_object_from_file(path), *v;
		if (!cfg || !json_object_object_get_ex(cfg, "process", &v)) {
			json_object_put(cfg);
			return oci_error("exec: no process in '%s'", path), NULL;
		}
		p = json_object_get(v);
		json_object_put(cfg);
		json_object *args = json_object_new_array();
		for (size_t i = 0; o->args[i]; i++)
			json_object_array_add(args, json_object_new_string(o->args[i]));
		json_object_object_add(p, "args", args);
		json_object_object_add(p, "terminal", json_object_new_boolean(o->tty));
		if (o->cwd)
			json_object_object_add(p, "cwd", json_object_new_string(o->cwd));
		json_object *env;
		if (!json_object_object_get_ex(p, "env", &env)) {
			env = json_object_new_array();
			json_object_object_add(p, "env", env);
		}
		for (size_t i = 0; i < o->nenv; i++)
			json_object_array_add(env, json_object_new_string(o->env[i]));
		if (o->user) {
			unsigned uid, gid;
			int n = sscanf(o->user, "%u:%u", &uid, &gid);
			if (n < 1) {
				json_object_put(p);
				return oci_error("exec: --user '%s': give uid[:gid] in numbers", o->user),
				       NULL;
			}
			json_object *u = json_object_new_object();
			json_object_object_add(u, "uid", json_object_new_int64(uid));
			json_object_object_add(u, "gid", json_object_new_int64(n == 2 ? gid : 0));
			json_object_object_add(p, "user", u);
		}
		if (o->gids) {
			json_object *u, *g = json_object_new_array();
			for (const char *s = o->gids; *s;) {
				json_object_array_add(g, json_object_new_int64(strtoll(s, NULL, 10)));
				s += strcspn(s, ",");
				s += *s == ',';
			}
			if (json_object_object_get_ex(p, "user", &u))
				json_object_object_add(u, "additionalGids", g);
			else
				json_object_put(g);
		}
	}
	char *text = strdup(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN));
	json_object_put(p);
	return text;
}

struct ended {
	int code;
	char error[512];
	int pid;
	int report; /* the waiter's pipe to its parent, or -1 */
};

static void on_event(const abox_event *ev, void *ud)
{
	struct ended *e = ud;
	if (ev->type == ABOX_EVENT_START) {
		e->pid = ev->pid;
		if (e->report >= 0) {
			/* started: the parent may go; our stdio is the process's
			 * alone from now on, so its readers see its end */
			if (write(e->report, "1", 1) < 0) {
			}
			close(e->report);
			e->report = -1;
			int null = open("/dev/null", O_RDWR | O_CLOEXEC);
			for (int fd = 0; fd < 3 && null >= 0; fd++)
				dup2(null, fd);
			if (null > 2)
				close(null);
		}
	} else if (ev->type == ABOX_EVENT_END) {
		e->code = ev->exit_code;
		if (ev->error)
			snprintf(e->error, sizeof(e->error), "%s", ev->error);
	}
}

static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	if (write(sig_pipe[1], &b, 1) < 0) {
	}
	errno = saved;
}

/* Runs the process to its end, forwarding the signals we get. Its exit
 * code, or 255 with the error said when it could not start. */
static int run_to_end(abox_sandbox *sb, const char *json, const char *console_socket, int report)
{
	static const int stdio[3] = { 0, 1, 2 };
	abox_proc *p = NULL;
	abox_error err = ABOX_ERROR_INIT;
	struct ended e = { .code = 255, .report = report };
	int console = -1;
	if (abox_proc_start_oci(sb, json, stdio, &console, &p, &err) < 0) {
		oci_error("%s", err.msg);
		return 255;
	}
	if (console >= 0) {
		int k = console_socket ? oci_console_send(console_socket, console)
				       : oci_error("exec: the process has a terminal and there is no "
						   "--console-socket");
		close(console);
		if (k) {
			(void)abox_proc_signal(p, SIGKILL, NULL);
			abox_proc_free(p);
			return 255;
		}
	}
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
		/* every signal a process can be sent goes on to the process
		 * (what a container engine sends an exec's pid is for it): all
		 * but those that stop or end us, SIGCHLD, the faults, the C
		 * library's own real-time signals */
		struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
		for (int sig = 1; sig < _NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD && sig != SIGSEGV &&
			    sig != SIGBUS && sig != SIGFPE && sig != SIGILL && sig != SIGTRAP &&
			    sig != SIGPIPE && (sig < 32 || sig >= SIGRTMIN))
				sigaction(sig, &sa, NULL);
	}
	int r = 0;
	while (r == 0) {
		if (!abox_proc_buffered(p)) {
			struct pollfd pf[2] = { { .fd = abox_proc_fd(p),
						  .events = (short)abox_proc_events(p) },
						{ .fd = sig_pipe[0], .events = POLLIN } };
			if (poll(pf, 2, -1) < 0 && errno != EINTR)
				break;
			unsigned char b;
			while (pf[1].revents && read(sig_pipe[0], &b, 1) == 1)
				(void)abox_proc_signal(p, b, NULL);
		}
		r = abox_proc_dispatch(p, on_event, &e, &err);
	}
	abox_proc_free(p);
	if (r < 0) {
		oci_error("%s", err.msg);
		return 255;
	}
	if (e.error[0])
		oci_error("exec failed: %s", e.error);
	return e.code;
}

int oci_exec(int argc, char **argv)
{
	struct exec_opts o = { 0 };
	struct oci_ctr c;
	if (parse(argc, argv, &o) || oci_ctr_load(o.id, &c))
		return 255;
	abox_ctx *ctx = NULL;
	int pid, r = 255;
	char *json = NULL;
	abox_sandbox *sb = NULL;
	abox_error err = ABOX_ERROR_INIT;
	if (oci_ctx(&ctx))
		goto out;
	const char *st = oci_status(ctx, &c, &pid);
	if (strcmp(st, "running") != 0 && strcmp(st, "created") != 0) {
		oci_error("cannot exec in a %s container", st);
		goto out;
	}
	if (!(json = process_json(&o, &c)))
		goto out;
	if (abox_sandbox_connect(ctx, c.sandbox, &sb, &err) < 0) {
		oci_error("%s", err.msg);
		goto out;
	}
	if (!o.detach) {
		r = run_to_end(sb, json, o.console_socket, -1);
		goto out;
	}
	int rep[2];
	if (pipe2(rep, O_CLOEXEC) < 0) {
		oci_error("exec: pipe: %s", strerror(errno));
		goto out;
	}
	fflush(NULL);
	pid_t w = fork();
	if (w < 0) {
		oci_error("exec: fork: %s", strerror(errno));
		goto out;
	}
	if (w == 0) {
		close(rep[0]);
		_exit(run_to_end(sb, json, o.console_socket, rep[1]) & 0xff);
	}
	close(rep[1]);
	char b;
	ssize_t got = read(rep[0], &b, 1);
	close(rep[0]);
	if (got != 1) {
		/* it never started: the waiter said why (the log is ours too) */
		goto out;
	}
	r = 0;
	if (o.pid_file) {
		char text[32];
		snprintf(text, sizeof(text), "%d", (int)w);
		int k = oci_write_file(o.pid_file, text);
		if (k < 0) {
			kill(w, SIGKILL);
			oci_error("exec: write the pid file '%s': %s", o.pid_file, strerror(-k));
			r = 255;
		}
	}
	if (!r && o.pidfd_socket && oci_pidfd_send(o.pidfd_socket, w)) {
		kill(w, SIGKILL);
		r = 255;
	}
out:
	abox_sandbox_free(sb);
	free(json);
	oci_ctr_free(&c);
	abox_ctx_free(ctx);
	return r;
}
