/* oci/manage.c — what runc's callers ask of a container once it exists:
 * `state` (the OCI state, 2-space indented, no newline after it), `list`,
 * `kill`, `delete`, `pause`, `resume` and `ps`. */
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <abox/abox.h>

#include "oci.h"

static json_object *state_json(abox_ctx *ctx, const struct oci_ctr *c)
{
	int pid;
	const char *st = oci_status(ctx, c, &pid);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "ociVersion",
			       json_object_new_string(c->oci_version[0] ? c->oci_version : OCI_SPEC_VERSION));
	json_object_object_add(o, "id", json_object_new_string(c->id));
	json_object_object_add(o, "pid", json_object_new_int(pid));
	json_object_object_add(o, "status", json_object_new_string(st));
	json_object_object_add(o, "bundle", json_object_new_string(c->bundle));
	json_object_object_add(o, "rootfs", json_object_new_string(c->rootfs));
	json_object_object_add(o, "created", json_object_new_string(c->created));
	if (c->annotations_json)
		json_object_object_add(o, "annotations", json_tokener_parse(c->annotations_json));
	json_object_object_add(o, "owner", json_object_new_string(""));
	return o;
}

char *oci_state_text(abox_ctx *ctx, const struct oci_ctr *c)
{
	return oci_state_text_as(ctx, c, NULL, 0);
}

char *oci_state_text_as(abox_ctx *ctx, const struct oci_ctr *c, const char *status, int pid)
{
	json_object *o = state_json(ctx, c);
	if (status) {
		json_object_object_add(o, "status", json_object_new_string(status));
		json_object_object_add(o, "pid", json_object_new_int(pid));
	}
	char *t = strdup(
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return t;
}

/* One id argument after the verb's options (none known here). */
static int one_id(int argc, char **argv, const char **id)
{
	if (argc != 2)
		return oci_error("%s: exactly one container id is needed", argv[0]);
	*id = argv[1];
	return 0;
}

int oci_state(int argc, char **argv)
{
	const char *id = NULL;
	struct oci_ctr c;
	abox_ctx *ctx = NULL;
	if (one_id(argc, argv, &id) || oci_open(id, &c, &ctx))
		return 1;
	json_object *o = state_json(ctx, &c);
	fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
							JSON_C_TO_STRING_NOSLASHESCAPE),
	      stdout);
	json_object_put(o);
	oci_close(&c, ctx);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int oci_list(int argc, char **argv)
{
	const char *format = "table";
	bool quiet = false;
	for (int i = 1; i < argc; i++) {
		char name[64];
		const char *val;
		if (!oci_option(argv[i], name, sizeof(name), &val))
			return oci_error("list: no arguments expected");
		if ((!strcmp(name, "format") || !strcmp(name, "f")) && !val && i + 1 < argc)
			val = argv[++i];
		if (!strcmp(name, "format") || !strcmp(name, "f"))
			format = val ? val : "";
		else if (!strcmp(name, "quiet") || !strcmp(name, "q"))
			quiet = true;
		else
			return oci_error("flag provided but not defined: -%s", name);
	}
	if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0)
		return oci_error("invalid format option: %s", format);
	abox_ctx *ctx = NULL;
	if (oci_ctx(&ctx))
		return 1;
	DIR *d = opendir(oci_g.root);
	char **ids = NULL;
	size_t n = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		char **more = oci_id_ok(e->d_name) ? realloc(ids, (n + 1) * sizeof(*ids)) : NULL;
		if (more && (more[n] = strdup(e->d_name)))
			ids = more, n++;
		else if (more)
			ids = more;
	}
	if (d)
		closedir(d);
	qsort(ids, n, sizeof(*ids), cmp);
	json_object *all = json_object_new_array();
	if (!strcmp(format, "table") && !quiet)
		printf("%-12s %-8s %-10s %-40s %-30s %s\n", "ID", "PID", "STATUS", "BUNDLE", "CREATED",
		       "OWNER");
	for (size_t i = 0; i < n; i++) {
		struct oci_ctr c;
		char path[4200];
		snprintf(path, sizeof(path), "%s/%s/state.json", oci_g.root, ids[i]);
		if (access(path, F_OK) == 0 && oci_ctr_load(ids[i], &c) == 0) {
			json_object *o = state_json(ctx, &c);
			json_object *v;
			if (quiet)
				printf("%s\n", c.id);
			else if (!strcmp(format, "table") && json_object_object_get_ex(o, "pid", &v))
				printf("%-12s %-8d %-10s %-40s %-30s %s\n", c.id, json_object_get_int(v),
				       json_object_get_string(json_object_object_get(o, "status")), c.bundle,
				       c.created, "root");
			json_object_array_add(all, o);
			oci_ctr_free(&c);
		}
		free(ids[i]);
	}
	free(ids);
	if (!quiet && !strcmp(format, "json"))
		printf("%s\n", json_object_array_length(all)
				       ? json_object_to_json_string_ext(
						 all, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
				       : "null");
	json_object_put(all);
	abox_ctx_free(ctx);
	return 0;
}

/* "9", "KILL", "SIGKILL" */
static int signal_number(const char *s)
{
	char *end;
	long n = strtol(s, &end, 10);
	if (*s && !*end)
		return n > 0 && n < NSIG ? (int)n : -1;
	static const struct {
		const char *name;
		int sig;
	} names[] = {
		{ "HUP", SIGHUP },       { "INT", SIGINT },   { "QUIT", SIGQUIT },     { "ILL", SIGILL },
		{ "TRAP", SIGTRAP },     { "ABRT", SIGABRT }, { "IOT", SIGIOT },       { "BUS", SIGBUS },
		{ "FPE", SIGFPE },       { "KILL", SIGKILL }, { "USR1", SIGUSR1 },     { "SEGV", SIGSEGV },
		{ "USR2", SIGUSR2 },     { "PIPE", SIGPIPE }, { "ALRM", SIGALRM },     { "TERM", SIGTERM },
		{ "STKFLT", SIGSTKFLT }, { "CHLD", SIGCHLD }, { "CONT", SIGCONT },     { "STOP", SIGSTOP },
		{ "TSTP", SIGTSTP },     { "TTIN", SIGTTIN }, { "TTOU", SIGTTOU },     { "URG", SIGURG },
		{ "XCPU", SIGXCPU },     { "XFSZ", SIGXFSZ }, { "VTALRM", SIGVTALRM }, { "PROF", SIGPROF },
		{ "WINCH", SIGWINCH },   { "IO", SIGIO },     { "PWR", SIGPWR },       { "SYS", SIGSYS },
	};
	if (!strncmp(s, "SIG", 3))
		s += 3;
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (!strcmp(names[k].name, s))
			return names[k].sig;
	return -1;
}

static int kill_all(int init_pid, const char *sandbox, int sig)
{
	/* by the container's cgroups, never its pid namespace: a pod's
	 * shared one holds other containers' processes too */
	static int pids[65536];
	size_t n = oci_pids(sandbox, pids, sizeof(pids) / sizeof(pids[0]));
	for (size_t i = 0; i < n; i++) {
		if (pids[i] == init_pid)
			continue;
		int fd = (int)syscall(SYS_pidfd_open, pids[i], 0);
		/* the pid still names a process of the container */
		if (fd >= 0 && oci_pid_of(pids[i], sandbox))
			(void)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
		if (fd >= 0)
			close(fd);
	}
	return 0;
}

/* A process's start time (clock ticks since boot) and parent, or -1. */
static long long started_at(int pid, int *ppid)
{
	char buf[1024];
	oci_proc_read(pid, "stat", buf, sizeof(buf));
	/* after the name's closing parenthesis: state, ppid, ... field 22 */
	char *p = strrchr(buf, ')');
	long long start = -1;
	int parent = 0;
	if (!p ||
	    sscanf(p + 2, "%*c %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lld",
		   &parent, &start) != 2)
		return -1;
	*ppid = parent;
	return start;
}

/* SIGSTOP to the container's process: sent to init, it would stop init
 * itself (no process can catch or pass it on) and with it every exec and
 * file request; runc's init is the process, so it is that one that
 * stops. The process is init's first child (the others are execs, made
 * after it); a container not started yet has none, and nothing to stop. */
static int stop_main(int init_pid, int sig)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", init_pid, init_pid);
	FILE *f = fopen(path, "re");
	int child, main_pid = 0, ppid;
	long long first = -1;
	while (f && fscanf(f, "%d", &child) == 1) {
		long long t = started_at(child, &ppid);
		if (t >= 0 && (first < 0 || t < first)) {
			first = t;
			main_pid = child;
		}
	}
	if (f)
		fclose(f);
	if (!main_pid)
		return 0;
	int fd = (int)syscall(SYS_pidfd_open, main_pid, 0);
	/* the pidfd holds the pid; it is still init's child */
	int r = fd >= 0 && started_at(main_pid, &ppid) == first && ppid == init_pid &&
				syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) < 0
			? oci_error("kill: %s", strerror(errno))
			: 0;
	if (fd >= 0)
		close(fd);
	return r;
}

int oci_kill(int argc, char **argv)
{
	int i = 1;
	bool all = false;
	for (; i < argc; i++) {
		char name[64];
		const char *val;
		if (!oci_option(argv[i], name, sizeof(name), &val))
			break;
		if (!strcmp(name, "all") || !strcmp(name, "a"))
			all = !val || !strcmp(val, "true");
		else
			return oci_error("flag provided but not defined: -%s", name);
	}
	if (i >= argc || argc - i > 2)
		return oci_error("kill: a container id and at most one signal are needed");
	const char *id = argv[i];
	int sig = argc - i == 2 ? signal_number(argv[i + 1]) : SIGTERM;
	if (sig < 0)
		return oci_error("unknown signal \"%s\"", argv[i + 1]);
	struct oci_ctr c;
	abox_ctx *ctx = NULL;
	if (oci_open(id, &c, &ctx))
		return 1;
	/* a pidfd on the pid, then the status again: if it still names the
	 * container's init, the pidfd holds it and no reused pid is hit */
	int pid, r = 0;
	oci_status(ctx, &c, &pid);
	int pfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	int again = 0;
	const char *st = pfd >= 0 ? oci_status(ctx, &c, &again) : "stopped";
	if (pfd < 0 || again != pid || !strcmp(st, "stopped"))
		r = all ? 0 : oci_error("container not running");
	/* --all: every process of the container, as runc signals its
	 * cgroup's (each through a pidfd taken while it is in the
	 * container's cgroups); SIGKILL to init ends the rest with it when
	 * init is its pid namespace's PID 1, not in a pod's shared one */
	else if (all && sig != SIGKILL)
		r = kill_all(pid, c.sandbox, sig);
	else if (sig == SIGSTOP)
		r = stop_main(pid, sig);
	/* a paused container's init cannot act on a signal it forwards:
	 * only SIGKILL (the kernel's) ends it frozen, as runc's */
	else if ((all && kill_all(pid, c.sandbox, SIGKILL)) ||
		 syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0) < 0)
		r = oci_error("kill: %s", strerror(errno));
	if (pfd >= 0)
		close(pfd);
	oci_close(&c, ctx);
	return r;
}

/* A container's folder: its record and the record's temporary copies (a
 * create or start that died writing one), then the folder. */
static int remove_record(const char *dir)
{
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));)
		if (!strncmp(e->d_name, "state.json", 10))
			(void)unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	return rmdir(dir);
}

int oci_delete(int argc, char **argv)
{
	int i = 1;
	bool force = false;
	for (; i < argc; i++) {
		char name[64];
		const char *val;
		if (!oci_option(argv[i], name, sizeof(name), &val))
			break;
		if (!strcmp(name, "force") || !strcmp(name, "f"))
			force = !val || !strcmp(val, "true");
		else
			return oci_error("flag provided but not defined: -%s", name);
	}
	if (i != argc - 1)
		return oci_error("delete: exactly one container id is needed");
	const char *id = argv[i];
	char dir[4200], path[4300];
	snprintf(dir, sizeof(dir), "%s/%s", oci_g.root, id);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	struct oci_ctr c;
	abox_ctx *ctx = NULL;
	if (force && oci_id_ok(id) && access(path, F_OK) < 0) {
		/* no record: nothing there, or a create killed before its first
		 * write, whose sandbox carries the id */
		memset(&c, 0, sizeof(c));
		snprintf(c.id, sizeof(c.id), "%s", id);
		if (access(dir, F_OK) == 0 && !oci_ctx(&ctx)) {
			oci_ctr_resolve(ctx, &c);
			if (c.sandbox[0])
				(void)abox_sandbox_remove(ctx, c.sandbox, NULL);
			/* a sandbox whose create died before its own record was
			 * whole: not found by its metadata, it is gc's (its
			 * creator's lock is gone) */
			(void)abox_gc(ctx, NULL, NULL);
			abox_ctx_free(ctx);
		}
		(void)remove_record(dir);
		return 0; /* what --force asks for holds */
	}
	if (oci_open(id, &c, &ctx))
		return 1;
	oci_ctr_resolve(ctx, &c);
	int pid, r = 0;
	const char *st = oci_status(ctx, &c, &pid);
	if (!force && (!strcmp(st, "running") || !strcmp(st, "paused"))) {
		r = oci_error("cannot delete container %s that is not stopped: %s", id, st);
	} else {
		abox_error err = ABOX_ERROR_INIT;
		if (c.sandbox[0] && abox_sandbox_remove(ctx, c.sandbox, &err) < 0 && err.code != ENOENT)
			r = oci_error("%s", err.msg);
		/* no sandbox named: its create may have died before the
		 * sandbox's record was whole (gc's, see above) */
		if (!r && !c.sandbox[0])
			(void)abox_gc(ctx, NULL, NULL);
		char *state = r ? NULL : oci_state_text(ctx, &c);
		/* the cgroupsPath folder create made for it (runc removes it) */
		if (!r && c.cgroup_path[0] && abox_ctx_remove_cgroup_parent(ctx, &err) < 0)
			oci_warn("delete: %s", err.msg);
		if (!r && remove_record(dir) < 0)
			r = oci_error("remove '%s': %s", dir, strerror(errno));
		if (state)
			(void)oci_hooks(c.hooks_json, "poststop", state, false);
		free(state);
	}
	oci_close(&c, ctx);
	return r;
}

static int freeze(int argc, char **argv, bool pause)
{
	const char *id = NULL;
	struct oci_ctr c;
	abox_ctx *ctx = NULL;
	if (one_id(argc, argv, &id) || oci_open(id, &c, &ctx))
		return 1;
	int pid, r = 0;
	const char *st = oci_status(ctx, &c, &pid);
	abox_sandbox *sb = NULL;
	abox_error err = ABOX_ERROR_INIT;
	if (pause && strcmp(st, "running") != 0 && strcmp(st, "created") != 0)
		r = oci_error("container not running");
	else if (!pause && strcmp(st, "paused") != 0)
		r = oci_error("container not paused");
	else if (abox_sandbox_connect(ctx, c.sandbox, &sb, &err) < 0 ||
		 (pause ? abox_sandbox_pause(sb, &err) : abox_sandbox_resume(sb, &err)) < 0)
		r = oci_error("%s", err.msg);
	abox_sandbox_free(sb);
	oci_close(&c, ctx);
	return r;
}

int oci_pause(int argc, char **argv)
{
	return freeze(argc, argv, true);
}

int oci_resume(int argc, char **argv)
{
	return freeze(argc, argv, false);
}
