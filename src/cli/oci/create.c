/* oci/create.c — `create`, `start` and `run`: a container made from a
 * bundle (an abox sandbox whose init holds the container's process, with
 * the caller's stdio, until `start`), as runc's callers expect: the
 * container's pid (its init's, a child of `create` until that exits, then
 * of whoever reaps orphans there, such as containerd's shim) in
 * --pid-file before `create` returns. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <abox/abox.h>

#include "oci.h"

struct create_opts {
	const char *bundle, *pid_file, *id, *console_socket, *pidfd_socket;
	bool detach;
	unsigned preserve_fds; /* the caller's fds 3.. the process gets */
};

/* create's and run's options, then the id. 0, or 1 with the error said. */
static int parse(int argc, char **argv, bool run, struct create_opts *o)
{
	int i = 1;
	for (; i < argc; i++) {
		char name[64];
		const char *val;
		if (!oci_option(argv[i], name, sizeof(name), &val))
			break;
		bool takes = !strcmp(name, "bundle") || !strcmp(name, "b") || !strcmp(name, "pid-file") ||
			     !strcmp(name, "console-socket") || !strcmp(name, "preserve-fds") ||
			     !strcmp(name, "pidfd-socket");
		if (takes && !val) {
			if (i + 1 >= argc)
				return oci_error("option --%s needs a value", name);
			val = argv[++i];
		}
		if (!strcmp(name, "bundle") || !strcmp(name, "b"))
			o->bundle = val;
		else if (!strcmp(name, "pid-file"))
			o->pid_file = *val ? val : NULL;
		else if (!strcmp(name, "console-socket"))
			o->console_socket = *val ? val : NULL;
		else if (!strcmp(name, "preserve-fds")) {
			char *end;
			errno = 0;
			unsigned long n = strtoul(val, &end, 10);
			if (!*val || *end || errno || n > 256 || val[0] == '-')
				return oci_error("--preserve-fds '%s': a number of descriptors (at most 256)",
						 val);
			o->preserve_fds = (unsigned)n;
			/* checked before this runtime opens anything that could
			 * take a missing one's place */
			for (unsigned k = 0; k < o->preserve_fds; k++)
				if (fcntl(3 + (int)k, F_GETFD) < 0 || 3 + (int)k == oci_log_fd())
					return oci_error("--preserve-fds %u: descriptor %u is not open",
							 o->preserve_fds, 3 + k);
		} else if (!strcmp(name, "pidfd-socket"))
			o->pidfd_socket = *val ? val : NULL;
		else if (!strcmp(name, "no-pivot") || !strcmp(name, "no-new-keyring"))
			; /* abox always pivots (stronger); it makes no session keyring */
		else if (run && (!strcmp(name, "detach") || !strcmp(name, "d")))
			o->detach = true;
		else if (run && (!strcmp(name, "keep") || !strcmp(name, "no-subreaper")))
			;
		else
			return oci_error("flag provided but not defined: -%s", name);
	}
	if (i != argc - 1)
		return oci_error("%s: exactly one container id is needed", argv[0]);
	o->id = argv[i];
	if (!oci_id_ok(o->id))
		return oci_error("invalid container id '%s'", o->id);
	return 0;
}

/* The config's fields the OCI state repeats (the library reads it whole
 * and strictly). */
static int bundle_facts(struct oci_ctr *c, bool *terminal)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/config.json", c->bundle);
	json_object *o = json_object_from_file(path);
	if (!o)
		return oci_error("read '%s': %s", path,
				 json_util_get_last_err() ? json_util_get_last_err() : "");
	json_object *v, *root, *proc;
	if (json_object_object_get_ex(o, "process", &proc) && json_object_object_get_ex(proc, "terminal", &v))
		*terminal = json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "ociVersion", &v) && json_object_is_type(v, json_type_string))
		snprintf(c->oci_version, sizeof(c->oci_version), "%s", json_object_get_string(v));
	if (json_object_object_get_ex(o, "root", &root) && json_object_object_get_ex(root, "path", &v) &&
	    json_object_is_type(v, json_type_string)) {
		const char *p = json_object_get_string(v);
		int n = p[0] == '/' ? snprintf(c->rootfs, sizeof(c->rootfs), "%s", p)
				    : snprintf(c->rootfs, sizeof(c->rootfs), "%.2000s/%.2000s", c->bundle, p);
		(void)n;
	}
	if (json_object_object_get_ex(o, "annotations", &v) && json_object_is_type(v, json_type_object) &&
	    json_object_object_length(v) > 0)
		c->annotations_json = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	if (json_object_object_get_ex(o, "hooks", &v) && json_object_is_type(v, json_type_object))
		c->hooks_json = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	json_object *lin;
	int r = 0;
	if (json_object_object_get_ex(o, "linux", &lin) &&
	    json_object_object_get_ex(lin, "cgroupsPath", &v) && json_object_is_type(v, json_type_string))
		r = oci_cgroup_path(json_object_get_string(v), c->cgroup_path, sizeof(c->cgroup_path));
	json_object_put(o);
	return r;
}

/* The bundle's facts into c (its id still to set): read once, before the
 * context, which makes the sandbox's cgroups below its cgroupsPath. */
static int read_bundle(const struct create_opts *o, struct oci_ctr *c, bool *terminal)
{
	char *bundle = realpath(o->bundle ? o->bundle : ".", NULL);
	if (!bundle)
		return oci_error("bundle '%s': %s", o->bundle ? o->bundle : ".", strerror(errno));
	snprintf(c->bundle, sizeof(c->bundle), "%s", bundle);
	free(bundle);
	snprintf(c->id, sizeof(c->id), "%s", o->id);
	int r = bundle_facts(c, terminal);
	snprintf(oci_g.cgroup_parent, sizeof(oci_g.cgroup_parent), "%s", c->cgroup_path);
	return r;
}

static void now_rfc3339(char *out, size_t n)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char base[32];
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, n, "%s.%09ldZ", base, ts.tv_nsec);
}

/* runc's pid file: the decimal pid, no newline, replaced whole. */
static int write_pid_file(const char *path, int pid)
{
	char text[32];
	snprintf(text, sizeof(text), "%d", pid);
	int r = oci_write_file(path, text);
	if (r < 0)
		return oci_error("write the pid file '%s': %s", path, strerror(-r));
	return 0;
}

static void remove_dir(const char *id)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s/state.json", oci_g.root, id);
	unlink(p);
	snprintf(p, sizeof(p), "%s/%s", oci_g.root, id);
	rmdir(p);
}

/* Makes the container; *pid its init's. 0, or 1 with the error said and
 * nothing left behind. */
static int make(abox_ctx *ctx, const struct create_opts *o, struct oci_ctr *c, bool terminal, int *pid)
{
	/* runc's rules: a terminal goes to the engine through its socket */
	if (terminal && !o->console_socket) {
		oci_ctr_free(c);
		return oci_error("cannot allocate tty if runc will detach without setting console socket");
	}
	if (!terminal && o->console_socket) {
		oci_ctr_free(c);
		return oci_error("cannot use console socket if runc will not detach or allocate tty");
	}
	/* a node's choice for all its containers (a container engine's
	 * environment), as the annotation is a container's: a misspelt one
	 * is an error, never the strict default taken silently */
	const char *conf = getenv("ABOX_OCI_CONFINEMENT");
	if (conf && *conf && strcmp(conf, "abox") && strcmp(conf, "compat")) {
		oci_ctr_free(c);
		return oci_error("ABOX_OCI_CONFINEMENT=%.64s: neither abox nor compat", conf);
	}
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/%s", oci_g.root, o->id);
	if (mkdir(dir, 0700) < 0) {
		oci_ctr_free(c);
		return errno == EEXIST ? oci_error("container with id exists: %s", o->id)
				       : oci_error("make '%s': %s", dir, strerror(errno));
	}
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	int console = -1;
	so.oci_bundle = c->bundle;
	so.oci_preserve_fds = o->preserve_fds;
	/* recorded before the sandbox exists, and the sandbox named after the
	 * container: a create killed half-way leaves a container that state
	 * reports and delete --force removes, sandbox and all */
	char meta[1200];
	snprintf(meta, sizeof(meta), OCI_META_KEY "=%s", o->id);
	const char *const metadata[] = { meta, NULL };
	so.metadata = metadata;
	now_rfc3339(c->created, sizeof(c->created));
	if (oci_ctr_save(c)) {
		oci_ctr_free(c);
		remove_dir(o->id);
		return 1;
	}
	if (conf && !strcmp(conf, "abox"))
		so.flags |= ABOX_SANDBOX_OCI_ABOX_CONFINEMENT;
	else if (conf && !strcmp(conf, "compat"))
		so.flags |= ABOX_SANDBOX_OCI_COMPAT;

	so.oci_console = terminal ? &console : NULL;
	abox_sandbox *sb = NULL;
	abox_error err = ABOX_ERROR_INIT;
	if (abox_sandbox_create(ctx, &so, &sb, &err) < 0) {
		/* the cgroupsPath folders made for it, as a delete removes them */
		if (c->cgroup_path[0])
			(void)abox_ctx_remove_cgroup_parent(ctx, NULL);
		oci_ctr_free(c);
		remove_dir(o->id);
		return oci_error("%s", err.msg);
	}
	snprintf(c->sandbox, sizeof(c->sandbox), "%s", abox_sandbox_id(sb));
	abox_sandbox_info info = { .version = ABOX_SANDBOX_INFO_VERSION };
	int r = abox_sandbox_info_get(ctx, c->sandbox, &info, &err) < 0 ? oci_error("%s", err.msg) : 0;
	*pid = info.pid;
	abox_sandbox_info_clear(&info);
	if (!r)
		r = oci_ctr_save(c);
	char *state = r ? NULL : oci_state_text(ctx, c);
	if (state && !(r = oci_hooks(c->hooks_json, "prestart", state, true)) &&
	    !(r = oci_hooks(c->hooks_json, "createRuntime", state, true)))
		r = oci_hooks_create_container(c->hooks_json, state, *pid);
	free(state);
	if (!r && o->pid_file)
		r = write_pid_file(o->pid_file, *pid);
	if (!r && console >= 0)
		r = oci_console_send(o->console_socket, console);
	if (!r && o->pidfd_socket)
		r = oci_pidfd_send(o->pidfd_socket, *pid);
	if (console >= 0)
		close(console);
	if (r) {
		(void)abox_sandbox_kill(sb, NULL);
		if (c->cgroup_path[0])
			(void)abox_ctx_remove_cgroup_parent(ctx, NULL);
		remove_dir(o->id);
	}
	abox_sandbox_free(sb);
	oci_ctr_free(c);
	return r;
}

int oci_create(int argc, char **argv)
{
	struct create_opts o = { 0 };
	abox_ctx *ctx = NULL;
	int pid;
	struct oci_ctr c = { 0 };
	bool terminal = false;
	if (parse(argc, argv, false, &o) || read_bundle(&o, &c, &terminal) || oci_ctx(&ctx)) {
		oci_ctr_free(&c);
		return 1;
	}
	int r = make(ctx, &o, &c, terminal, &pid);
	abox_ctx_free(ctx);
	return r;
}

static int start(abox_ctx *ctx, const char *id)
{
	struct oci_ctr c;
	if (oci_ctr_load(id, &c))
		return 1;
	int pid;
	const char *st = oci_status(ctx, &c, &pid);
	if (strcmp(st, "created") != 0) {
		oci_ctr_free(&c);
		return oci_error(!strcmp(st, "stopped") ? "cannot start a container that has stopped"
							: "cannot start an already running container");
	}
	abox_sandbox *sb = NULL;
	abox_error err = ABOX_ERROR_INIT;
	int r = 0;
	char *created = NULL;
	if (abox_sandbox_connect(ctx, c.sandbox, &sb, &err) < 0)
		r = oci_error("%s", err.msg);
	/* startContainer: inside the container, before its process */
	else if (c.hooks_json && strstr(c.hooks_json, "\"startContainer\"") &&
		 (!(created = oci_state_text(ctx, &c)) ||
		  oci_hooks_in(sb, c.hooks_json, "startContainer", created)))
		r = 1;
	else if (abox_sandbox_start(sb, NULL, &err) < 0)
		r = oci_error("%s", err.msg);
	free(created);
	abox_sandbox_free(sb);
	if (!r) {
		c.started = true;
		r = oci_ctr_save(&c);
	}
	char *state = r ? NULL : oci_state_text_as(ctx, &c, "running", pid);
	if (state)
		(void)oci_hooks(c.hooks_json, "poststart", state, false);
	free(state);
	oci_ctr_free(&c);
	return r;
}

int oci_start(int argc, char **argv)
{
	if (argc != 2)
		return oci_error("start: exactly one container id is needed");
	abox_ctx *ctx = NULL;
	struct oci_ctr c; /* read first: the context finds its cgroups */
	if (oci_ctr_load(argv[1], &c))
		return 1;
	oci_ctr_free(&c);
	if (oci_ctx(&ctx))
		return 1;
	int r = start(ctx, argv[1]);
	abox_ctx_free(ctx);
	return r;
}

static volatile sig_atomic_t run_pid;

static void forward(int sig)
{
	int saved = errno;
	if (run_pid > 0)
		kill(run_pid, sig);
	errno = saved;
}

int oci_run(int argc, char **argv)
{
	struct create_opts o = { 0 };
	abox_ctx *ctx = NULL;
	int pid;
	struct oci_ctr c = { 0 };
	bool terminal = false;
	if (parse(argc, argv, true, &o) || read_bundle(&o, &c, &terminal) || oci_ctx(&ctx)) {
		oci_ctr_free(&c);
		return 1;
	}
	int r = make(ctx, &o, &c, terminal, &pid);
	if (!r) {
		/* the container's init is our child, and its status ours to
		 * read: the start is made by a child of ours, whose handle on
		 * the sandbox can never reap it (a process that ends at once
		 * would otherwise be reaped by the handle that started it) */
		fflush(NULL);
		pid_t s = fork();
		if (s == 0)
			_exit(start(ctx, o.id));
		int st = 0;
		while (s > 0 && waitpid(s, &st, 0) < 0 && errno == EINTR)
			;
		r = s < 0 ? oci_error("run: fork: %s", strerror(errno)) : WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	if (r) {
		char *del[] = { (char *)"delete", (char *)"--force", (char *)o.id, NULL };
		(void)oci_delete(3, del);
	}
	if (r || o.detach) {
		abox_ctx_free(ctx);
		return r;
	}
	/* the container's init is our child: its end is the container's,
	 * and what we are sent is its process's */
	run_pid = pid;
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };
	struct sigaction sa = { .sa_handler = forward };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	int status = 0;
	pid_t w;
	while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	run_pid = 0;
	if (w != pid) {
		oci_error("run: the container's end could not be waited for: %s", strerror(errno));
		status = 255 << 8;
	}
	char *del[] = { (char *)"delete", (char *)"--force", (char *)o.id, NULL };
	(void)oci_delete(3, del);
	abox_ctx_free(ctx);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
