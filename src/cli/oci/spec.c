/* oci/spec.c — `abox oci spec [--bundle DIR] [--rootless]`: a config.json
 * to start a bundle from, with abox's own confinement as its defaults
 * (the capabilities abox gives a sandbox's root, no new privileges, the
 * /proc and /sys paths masked or read-only). Never overwrites one. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oci.h"

/* abox's default capability set for a sandbox's root (src/lib/caps) */
static const char *const caps[] = { "CAP_CHOWN",      "CAP_DAC_OVERRIDE", "CAP_FOWNER",
				    "CAP_FSETID",     "CAP_KILL",         "CAP_SETGID",
				    "CAP_SETUID",     "CAP_SETPCAP",      "CAP_NET_BIND_SERVICE",
				    "CAP_SYS_CHROOT", "CAP_SETFCAP" };

static const char *const masked[] = { "/proc/acpi",
				      "/proc/asound",
				      "/proc/kcore",
				      "/proc/keys",
				      "/proc/latency_stats",
				      "/proc/timer_list",
				      "/proc/timer_stats",
				      "/proc/sched_debug",
				      "/proc/scsi",
				      "/sys/firmware",
				      "/sys/devices/virtual/powercap" };
static const char *const readonly[] = { "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
					"/proc/sysrq-trigger" };

static json_object *strs(const char *const *v, size_t n)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

#define STRS(v) strs(v, sizeof(v) / sizeof(v[0]))

static void mount_add(json_object *a, const char *dst, const char *type, const char *src, const char *opts)
{
	json_object *m = json_object_new_object();
	json_object_object_add(m, "destination", json_object_new_string(dst));
	json_object_object_add(m, "type", json_object_new_string(type));
	json_object_object_add(m, "source", json_object_new_string(src));
	json_object *o = json_object_new_array();
	for (const char *p = opts; *p;) {
		size_t n = strcspn(p, ",");
		json_object_array_add(o, json_object_new_string_len(p, (int)n));
		p += n + (p[n] == ',');
	}
	json_object_object_add(m, "options", o);
	json_object_array_add(a, m);
}

static json_object *idmap(unsigned host)
{
	json_object *a = json_object_new_array(), *m = json_object_new_object();
	json_object_object_add(m, "containerID", json_object_new_int64(0));
	json_object_object_add(m, "hostID", json_object_new_int64(host));
	json_object_object_add(m, "size", json_object_new_int64(1));
	json_object_array_add(a, m);
	return a;
}

static json_object *make(bool rootless)
{
	json_object *o = json_object_new_object(), *p = json_object_new_object(),
		    *u = json_object_new_object();
	/* the version whose fields it uses: crun 1.8 refuses a config that
	 * says 1.2, runc 1.1 reads it */
	json_object_object_add(o, "ociVersion", json_object_new_string("1.0.2"));
	json_object *root = json_object_new_object();
	json_object_object_add(root, "path", json_object_new_string("rootfs"));
	json_object_object_add(root, "readonly", json_object_new_boolean(true));
	json_object_object_add(o, "root", root);

	json_object_object_add(p, "terminal", json_object_new_boolean(true));
	json_object_object_add(u, "uid", json_object_new_int64(0));
	json_object_object_add(u, "gid", json_object_new_int64(0));
	json_object_object_add(p, "user", u);
	const char *args[] = { "sh" };
	json_object_object_add(p, "args", STRS(args));
	const char *env[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			      "TERM=xterm" };
	json_object_object_add(p, "env", STRS(env));
	json_object_object_add(p, "cwd", json_object_new_string("/"));
	json_object *c = json_object_new_object();
	const char *sets[] = { "bounding", "effective", "permitted" };
	for (size_t i = 0; i < 3; i++)
		json_object_object_add(c, sets[i], STRS(caps));
	json_object_object_add(p, "capabilities", c);
	json_object *rl = json_object_new_array(), *r = json_object_new_object();
	json_object_object_add(r, "type", json_object_new_string("RLIMIT_NOFILE"));
	json_object_object_add(r, "hard", json_object_new_int64(1024));
	json_object_object_add(r, "soft", json_object_new_int64(1024));
	json_object_array_add(rl, r);
	json_object_object_add(p, "rlimits", rl);
	json_object_object_add(p, "noNewPrivileges", json_object_new_boolean(true));
	json_object_object_add(o, "process", p);
	json_object_object_add(o, "hostname", json_object_new_string("abox"));

	json_object *m = json_object_new_array();
	mount_add(m, "/proc", "proc", "proc", "nosuid,noexec,nodev");
	mount_add(m, "/dev", "tmpfs", "tmpfs", "nosuid,strictatime,mode=755,size=65536k");
	mount_add(m, "/dev/pts", "devpts", "devpts",
		  rootless ? "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620"
			   : "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620,gid=5");
	mount_add(m, "/dev/shm", "tmpfs", "shm", "nosuid,noexec,nodev,mode=1777,size=65536k");
	mount_add(m, "/dev/mqueue", "mqueue", "mqueue", "nosuid,noexec,nodev");
	/* a user namespace that owns no network namespace cannot mount
	 * sysfs: the host's, bound read-only */
	if (rootless)
		mount_add(m, "/sys", "none", "/sys", "rbind,nosuid,noexec,nodev,ro");
	else
		mount_add(m, "/sys", "sysfs", "sysfs", "nosuid,noexec,nodev,ro");
	mount_add(m, "/sys/fs/cgroup", "cgroup", "cgroup", "nosuid,noexec,nodev,relatime,ro");
	json_object_object_add(o, "mounts", m);

	json_object *l = json_object_new_object(), *ns = json_object_new_array();
	const char *kinds[] = { "pid", "ipc", "uts", "mount", "cgroup", "network", "user" };
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) - (rootless ? 0 : 1); i++) {
		if (rootless && !strcmp(kinds[i], "network"))
			continue; /* as its peers do: the host's network, unprivileged */
		json_object *n = json_object_new_object();
		json_object_object_add(n, "type", json_object_new_string(kinds[i]));
		json_object_array_add(ns, n);
	}
	json_object_object_add(l, "namespaces", ns);
	if (rootless) {
		json_object_object_add(l, "uidMappings", idmap((unsigned)getuid()));
		json_object_object_add(l, "gidMappings", idmap((unsigned)getgid()));
	}
	json_object_object_add(l, "maskedPaths", STRS(masked));
	json_object_object_add(l, "readonlyPaths", STRS(readonly));
	json_object_object_add(o, "linux", l);
	return o;
}

int oci_spec(int argc, char **argv)
{
	const char *bundle = ".";
	bool rootless = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i] + (argv[i][0] == '-' && argv[i][1] == '-');
		if (!strcmp(a, "-bundle") || !strcmp(a, "-b")) {
			if (++i >= argc)
				return oci_error("spec: --bundle needs a folder");
			bundle = argv[i];
		} else if (!strncmp(a, "-bundle=", 8)) {
			bundle = a + 8;
		} else if (!strcmp(a, "-rootless")) {
			rootless = true;
		} else {
			return oci_error("spec: unknown argument '%s' (spec [--bundle DIR] [--rootless])",
					 argv[i]);
		}
	}
	char path[4200];
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	json_object *o = make(rootless);
	const char *text =
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644), rc = 0;
	if (fd < 0) {
		rc = errno == EEXIST ? oci_error("spec: %s exists: remove it first", path)
				     : oci_error("spec: create %s: %s", path, strerror(errno));
	} else {
		bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text) && write(fd, "\n", 1) == 1;
		if (close(fd) < 0 || !ok) {
			rc = oci_error("spec: write %s: %s", path, strerror(errno));
			unlink(path);
		}
	}
	json_object_put(o);
	return rc;
}
