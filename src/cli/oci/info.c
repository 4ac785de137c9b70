/* oci/info.c — `ps` (the container's processes: those in its init's pid
 * namespace) and `features` (what this runtime does, in the JSON runc
 * 1.1 and later print; only what abox honours is listed). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <abox/abox.h>

#include "oci.h"

int oci_ps(int argc, char **argv)
{
	const char *format = "table";
	int i = 1;
	for (; i < argc; i++) {
		char name[64];
		const char *val;
		if (!oci_option(argv[i], name, sizeof(name), &val))
			break;
		if ((!strcmp(name, "format") || !strcmp(name, "f")) && !val && i + 1 < argc)
			val = argv[++i];
		if (!strcmp(name, "format") || !strcmp(name, "f"))
			format = val ? val : "";
		else
			return oci_error("flag provided but not defined: -%s", name);
	}
	if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0)
		return oci_error("invalid format option: %s", format);
	if (i >= argc)
		return oci_error("ps: a container id is needed");
	struct oci_ctr c;
	abox_ctx *ctx = NULL;
	if (oci_open(argv[i], &c, &ctx))
		return 1;
	int pid;
	const char *st = oci_status(ctx, &c, &pid);
	char sandbox[sizeof(c.sandbox)];
	snprintf(sandbox, sizeof(sandbox), "%s", c.sandbox);
	oci_close(&c, ctx);
	if (!strcmp(st, "stopped"))
		return oci_error("container not running");
	static int pids[65536];
	size_t n = oci_pids(sandbox, pids, sizeof(pids) / sizeof(pids[0]));
	if (!strcmp(format, "json")) {
		putchar('[');
		for (size_t k = 0; k < n; k++)
			printf("%s%d", k ? "," : "", pids[k]);
		puts("]");
		return 0;
	}
	/* the table: ps's own lines for those pids (ps -ef, or the
	 * arguments given after the id) */
	char cmd[1024] = "ps";
	size_t used = 2;
	if (i + 1 >= argc)
		used += (size_t)snprintf(cmd + used, sizeof(cmd) - used, " -ef");
	for (int k = i + 1; k < argc && used < sizeof(cmd); k++) {
		if (strspn(argv[k], "-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,=") !=
		    strlen(argv[k]))
			return oci_error("ps: unsupported ps argument '%s'", argv[k]);
		used += (size_t)snprintf(cmd + used, sizeof(cmd) - used, " %s", argv[k]);
	}
	FILE *f = popen(cmd, "r");
	if (!f)
		return oci_error("ps: %s", strerror(errno));
	char line[4096];
	int col = -1;
	while (fgets(line, sizeof(line), f)) {
		if (col < 0) {
			/* the PID column's index, from the header */
			char copy[4096];
			snprintf(copy, sizeof(copy), "%s", line);
			int k = 0;
			for (char *save, *t = strtok_r(copy, " \t\n", &save); t;
			     t = strtok_r(NULL, " \t\n", &save), k++)
				if (!strcmp(t, "PID"))
					col = k;
			fputs(line, stdout);
			if (col < 0)
				break;
			continue;
		}
		char copy[4096];
		snprintf(copy, sizeof(copy), "%s", line);
		char *save, *t = strtok_r(copy, " \t\n", &save);
		for (int k = 0; t && k < col; k++)
			t = strtok_r(NULL, " \t\n", &save);
		long p = t ? strtol(t, NULL, 10) : 0;
		for (size_t k = 0; k < n; k++)
			if (pids[k] == p) {
				fputs(line, stdout);
				break;
			}
	}
	pclose(f);
	if (col < 0)
		return oci_error("ps: no PID column in ps's output");
	return 0;
}

/* Kept to what abox does: the namespaces it makes, abox's own
 * capability set, the mount options it knows. */
static const char features_json[] =
	"{\n"
	"    \"ociVersionMin\": \"1.0.0\",\n"
	"    \"ociVersionMax\": \"" OCI_SPEC_VERSION "\",\n"
	"    \"hooks\": [\"prestart\", \"createRuntime\", \"createContainer\", \"startContainer\", "
	"\"poststart\",\n"
	"              \"poststop\"],\n"
	"    \"mountOptions\": [\n"
	"        \"async\", \"atime\", \"bind\", \"dev\", \"dirsync\", \"exec\", \"idmap\", \"noatime\",\n"
	"        \"nodev\", \"nodiratime\", \"noexec\", \"norelatime\", \"nostrictatime\", \"nosuid\",\n"
	"        \"private\", \"rbind\", \"relatime\", \"ridmap\", \"ro\", \"rprivate\", \"rshared\",\n"
	"        \"rslave\", \"runbindable\",\n"
	"        \"rw\", \"shared\", \"slave\", \"strictatime\", \"suid\", \"sync\", \"unbindable\"\n"
	"    ],\n"
	"    \"linux\": {\n"
	"        \"namespaces\": [\"cgroup\", \"ipc\", \"mount\", \"network\", \"pid\", \"time\", \"user\", "
	"\"uts\"],\n"
	"        \"capabilities\": [\n"
	"            \"CAP_CHOWN\", \"CAP_DAC_OVERRIDE\", \"CAP_FOWNER\", \"CAP_FSETID\", \"CAP_KILL\",\n"
	"            \"CAP_SETGID\", \"CAP_SETUID\", \"CAP_SETPCAP\", \"CAP_NET_BIND_SERVICE\",\n"
	"            \"CAP_SYS_CHROOT\", \"CAP_SETFCAP\"\n"
	"        ],\n"
	"        \"cgroup\": {\n"
	"            \"v1\": true,\n"
	"            \"v2\": true,\n"
	"            \"systemd\": false,\n"
	"            \"systemdUser\": false\n"
	"        },\n"
	"        \"seccomp\": {\n"
	"            \"enabled\": true\n"
	"        },\n"
	"        \"apparmor\": {\n"
	"            \"enabled\": false\n"
	"        },\n"
	"        \"selinux\": {\n"
	"            \"enabled\": false\n"
	"        },\n"
	"        \"mountExtensions\": {\n"
	"            \"idmap\": {\n"
	"                \"enabled\": true\n"
	"            }\n"
	"        }\n"
	"    },\n"
	"    \"annotations\": {\n"
	"        \"org.opencontainers.runc.version\": \"abox " ABOX_VERSION_STRING "\"\n"
	"    }\n"
	"}\n";

int oci_features(int argc, char **argv)
{
	if (argc > 1)
		return oci_error("features: no arguments expected");
	fputs(features_json, stdout);
	return 0;
}
