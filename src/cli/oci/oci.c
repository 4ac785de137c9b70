/* oci/oci.c — see oci.h: runc's global options and its log, then the verb.
 *
 * Options are read as runc reads them: a long option with one dash or
 * two (go-runc sends `-no-subreaper`), its value after `=` or as the next
 * word; the global ones come before the verb. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <abox/version.h>

#include "oci.h"

struct oci_globals oci_g = { .root = "/run/abox-oci", .rootless = "auto" };
static int log_fd = 2;

int oci_log_fd(void)
{
	return log_fd;
}

static void log_line(const char *level, const char *msg)
{
	char ts[40];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	char *line = NULL;
	int n;
	if (oci_g.log_json) {
		/* keys in the order runc's logger writes them (sorted) */
		json_object *o = json_object_new_object();
		json_object_object_add(o, "level", json_object_new_string(level));
		json_object_object_add(o, "msg", json_object_new_string(msg));
		json_object_object_add(o, "time", json_object_new_string(ts));
		n = asprintf(&line, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	} else {
		n = asprintf(&line, "time=\"%s\" level=%s msg=\"%s\"\n", ts, level, msg);
	}
	if (n > 0 && write(log_fd, line, (size_t)n) < 0) {
		/* nowhere left to say it */
	}
	free(line);
}

void oci_warn(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_line("warning", msg);
}

int oci_error(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_line("error", msg);
	if (log_fd != 2)
		fprintf(stderr, "%s\n", msg);
	return 1;
}

/* "-x", "--x", "--x=v": the option's name into name; its inline value
 * (after '=') or NULL. false when arg is no option. */
bool oci_option(const char *arg, char *name, size_t n, const char **value)
{
	if (arg[0] != '-' || !arg[1] || !strcmp(arg, "--"))
		return false;
	arg += arg[1] == '-' ? 2 : 1;
	size_t len = strcspn(arg, "=");
	snprintf(name, n, "%.*s", (int)len, arg);
	*value = arg[len] == '=' ? arg + len + 1 : NULL;
	return true;
}

static int version(void)
{
	/* go-runc reads the first line's "runc version " and the "spec: " line */
	printf("runc version %s (abox)\ncommit: abox %s\nspec: %s\n", ABOX_VERSION_STRING,
	       ABOX_VERSION_STRING, OCI_SPEC_VERSION);
	return 0;
}

static const char usage_text[] =
	"usage: abox oci [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n"
	"\n"
	"abox as an OCI runtime, with runc's command line (containerd's runc shim can\n"
	"drive it; a program named abox-oci or runc that links to abox runs this).\n"
	"\n"
	"commands:\n"
	"  create [--bundle DIR] [--pid-file F] ID   make a container; its process waits\n"
	"  start ID                 run the container's process\n"
	"  run [--bundle DIR] [--detach] ID          create, start and (without --detach)\n"
	"                           wait for its end, with its exit status\n"
	"  state ID                 its state as OCI JSON\n"
	"  list [--format table|json] [--quiet]\n"
	"  kill [--all] ID [SIGNAL] send a signal (default SIGTERM) to its process\n"
	"  delete [--force] ID      remove a stopped (or, forced, any) container\n"
	"  pause ID, resume ID      freeze and thaw every process of it\n"
	"  ps [--format table|json] ID   its processes\n"
	"  exec [--process F] [--detach] [--pid-file F] [--cwd D] [--env K=V] [--user U[:G]]\n"
	"       ID [COMMAND ARGS...]    another process in it\n"
	"  events [--stats] [--interval 5s] ID   its resource use, as JSON lines\n"
	"  update [--resources F|-] [--memory N] [--pids-limit N] [--cpu-quota N]\n"
	"       [--cpu-period N] ID     new limits for it\n"
	"  features                 what this runtime supports, as JSON\n"
	"  spec [--bundle DIR] [--rootless]   write a config.json to start a bundle from\n"
	"\n"
	"global options:\n"
	"  --root DIR              containers' state (default /run/abox-oci)\n"
	"  --log FILE              the log (default: stderr)\n"
	"  --log-format text|json  one JSON object a line: level, msg, time\n"
	"  --debug                 accepted (this abox logs errors only)\n"
	"  --systemd-cgroup        cgroupsPath is slice:prefix:name\n"
	"  --rootless true|false|auto\n"
	"  --version, -v           print the version\n";

int cmd_oci(int argc, char **argv)
{
	int i = 1;
	const char *log_format = "text";
	for (; i < argc; i++) {
		char name[64];
		const char *val;
		if (!oci_option(argv[i], name, sizeof(name), &val))
			break;
		bool takes = !strcmp(name, "root") || !strcmp(name, "log") || !strcmp(name, "log-format") ||
			     !strcmp(name, "rootless") || !strcmp(name, "criu");
		if (takes && !val) {
			if (i + 1 >= argc)
				return oci_error("option --%s needs a value", name);
			val = argv[++i];
		}
		if (!strcmp(name, "root"))
			oci_g.root = val;
		else if (!strcmp(name, "log"))
			oci_g.log_path = *val ? val : NULL;
		else if (!strcmp(name, "log-format"))
			log_format = val;
		else if (!strcmp(name, "rootless"))
			oci_g.rootless = val;
		else if (!strcmp(name, "criu"))
			; /* abox finds its own CRIU (the checkpoint hook) */
		else if (!strcmp(name, "debug") && (!val || !strcmp(val, "true")))
			oci_g.debug = true;
		else if (!strcmp(name, "systemd-cgroup") && (!val || !strcmp(val, "true")))
			oci_g.systemd_cgroup = true;
		else if ((!strcmp(name, "debug") || !strcmp(name, "systemd-cgroup")) && !strcmp(val, "false"))
			;
		else if (!strcmp(name, "version") || !strcmp(name, "v"))
			return version();
		else if (!strcmp(name, "help") || !strcmp(name, "h")) {
			fputs(usage_text, stdout);
			return 0;
		} else
			return oci_error("flag provided but not defined: -%s", name);
	}
	if (strcmp(log_format, "text") != 0 && strcmp(log_format, "json") != 0)
		return oci_error("invalid log-format: %s", log_format);
	oci_g.log_json = !strcmp(log_format, "json");
	if (oci_g.log_path) {
		int fd = open(oci_g.log_path, O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0)
			return oci_error("open log '%s': %s", oci_g.log_path, strerror(errno));
		/* above the fds a caller passes (--preserve-fds: 3 .. 258),
		 * never in a slot one of them should have had */
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 300);
		if (high >= 0) {
			close(fd);
			fd = high;
		}
		log_fd = fd;
	}
	if (strcmp(oci_g.rootless, "true") != 0 && strcmp(oci_g.rootless, "false") != 0 &&
	    strcmp(oci_g.rootless, "auto") != 0)
		return oci_error("invalid --rootless value: %s (true, false or auto)", oci_g.rootless);
	if (oci_g.root[0] != '/' || !strcmp(oci_g.root, "/"))
		return oci_error("--root must be an absolute path other than /: %s", oci_g.root);
	if (i >= argc) {
		fputs(usage_text, stderr);
		return 1;
	}
	const char *verb = argv[i];
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} verbs[] = {
		{ "spec", oci_spec },     { "create", oci_create },
		{ "start", oci_start },   { "run", oci_run },
		{ "state", oci_state },   { "list", oci_list },
		{ "kill", oci_kill },     { "delete", oci_delete },
		{ "pause", oci_pause },   { "resume", oci_resume },
		{ "ps", oci_ps },         { "exec", oci_exec },
		{ "events", oci_events }, { "features", oci_features },
		{ "update", oci_update },
	};
	for (size_t k = 0; k < sizeof(verbs) / sizeof(verbs[0]); k++)
		if (!strcmp(verb, verbs[k].name))
			return verbs[k].fn(argc - i, argv + i);
	return oci_error("abox oci: no command '%s' (checkpoint and restore are not there yet)", verb);
}
