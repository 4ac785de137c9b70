/* oci/store.c — containers' records under --root, the library context
 * for them, and a container's status (see oci.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <abox/abox.h>

#include "oci.h"

/* the library's warnings and errors, into runc's log */
static void library_log(abox_log_level level, const char *msg, void *ud)
{
	(void)ud;
	if (level <= ABOX_LOG_WARNING)
		oci_warn("%s", msg);
}

int oci_ctx(abox_ctx **out)
{
	/* '=' is in no container id: these never meet one's folder */
	char state[4200], run[4200];
	snprintf(state, sizeof(state), "%s/abox=state", oci_g.root);
	snprintf(run, sizeof(run), "%s/abox=run", oci_g.root);
	/* --root and the folders above it, as runc makes them */
	for (char *s = strchr(state + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(state, 0711) < 0 && errno != EEXIST)
			return oci_error("make '%s': %s", state, strerror(errno));
		*s = '/';
	}
	if ((mkdir(state, 0700) < 0 && errno != EEXIST) || (mkdir(run, 0700) < 0 && errno != EEXIST))
		return oci_error("make the state folders under '%s': %s", oci_g.root, strerror(errno));
	abox_ctx_opts o = ABOX_CTX_OPTS_INIT;
	o.state_dir = state;
	o.runtime_dir = run;
	o.log_max = ABOX_LOG_WARNING;
	o.log = library_log;
	o.cgroup_parent = oci_g.cgroup_parent[0] ? oci_g.cgroup_parent : NULL;
	/* runc's: the cgroupsPath is the container's own cgroup */
	o.cgroup_parent_flags = o.cgroup_parent ? ABOX_CGROUP_PARENT_OWN : 0;
	abox_error err = ABOX_ERROR_INIT;
	if (abox_ctx_new(&o, out, &err) < 0)
		return oci_error("%s", err.msg);
	return 0;
}

int oci_cgroup_path(const char *v, char *out, size_t n)
{
	out[0] = '\0';
	if (!v || !*v)
		return 0;
	const char *c1 = strchr(v, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!oci_g.systemd_cgroup || !c2) {
		if (oci_g.systemd_cgroup)
			return oci_error(
				"linux.cgroupsPath: '%s' is not slice:prefix:name (--systemd-cgroup)", v);
		if ((size_t)snprintf(out, n, "%s", v) >= n)
			return oci_error("linux.cgroupsPath: too long");
		return 0;
	}
	/* "a-b.slice" lives in "a.slice" in "-.slice": each dash a level */
	char slice[512];
	snprintf(slice, sizeof(slice), "%.*s", (int)(c1 - v), v);
	if (!slice[0])
		snprintf(slice, sizeof(slice), "system.slice");
	size_t sl = strlen(slice);
	if (sl < 7 || strcmp(slice + sl - 6, ".slice") != 0 || strchr(slice, '/') || c2[1] == '\0' ||
	    strchr(c2 + 1, '/') || memchr(c1 + 1, '/', (size_t)(c2 - c1 - 1)))
		return oci_error("linux.cgroupsPath: '%s' is not slice:prefix:name (--systemd-cgroup)", v);
	size_t used = 0;
	slice[sl - 6] = '\0';
	for (char *dash = slice; used < n; dash = strchr(dash + 1, '-')) {
		size_t upto = dash ? (size_t)(dash - slice) : strlen(slice);
		if (upto)
			used += (size_t)snprintf(out + used, n - used, "/%.*s.slice", (int)upto, slice);
		if (!dash)
			break;
	}
	if (used < n)
		used += (size_t)snprintf(out + used, n - used, "/%.*s%s%s.scope", (int)(c2 - c1 - 1), c1 + 1,
					 c2 - c1 > 1 ? "-" : "", c2 + 1);
	if (used >= n)
		return oci_error("linux.cgroupsPath: too long");
	return 0;
}

bool oci_id_ok(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > 1024 || !strcmp(id, ".") || !strcmp(id, ".."))
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr("_+-.", *p)))
			return false;
	return true;
}

int oci_write_file(const char *path, const char *text)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text);
	ssize_t w = write(fd, text, len);
	int e = w == (ssize_t)len ? 0 : w < 0 ? errno : EIO;
	if (close(fd) < 0 && !e)
		e = errno;
	if (!e && rename(tmp, path) < 0)
		e = errno;
	if (e)
		unlink(tmp);
	return -e;
}

static void copy(char *dst, size_t n, json_object *o, const char *key)
{
	json_object *v;
	snprintf(dst, n, "%s",
		 json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
			 ? json_object_get_string(v)
			 : "");
}

int oci_ctr_load(const char *id, struct oci_ctr *c)
{
	memset(c, 0, sizeof(*c));
	if (!oci_id_ok(id))
		return oci_error("invalid container id '%s'", id), 1;
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s/state.json", oci_g.root, id);
	json_object *o = json_object_from_file(path);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return oci_error("container does not exist: %s", id), 1;
	}
	snprintf(c->id, sizeof(c->id), "%s", id);
	copy(c->sandbox, sizeof(c->sandbox), o, "sandbox");
	copy(c->bundle, sizeof(c->bundle), o, "bundle");
	copy(c->rootfs, sizeof(c->rootfs), o, "rootfs");
	copy(c->created, sizeof(c->created), o, "created");
	copy(c->oci_version, sizeof(c->oci_version), o, "ociVersion");
	copy(c->cgroup_path, sizeof(c->cgroup_path), o, "cgroupPath");
	/* the context of a verb on this container makes and finds its
	 * cgroups where its create did */
	snprintf(oci_g.cgroup_parent, sizeof(oci_g.cgroup_parent), "%s", c->cgroup_path);
	json_object *v;
	c->started = json_object_object_get_ex(o, "started", &v) && json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "annotations", &v) && json_object_is_type(v, json_type_object))
		c->annotations_json = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	if (json_object_object_get_ex(o, "hooks", &v) && json_object_is_type(v, json_type_object))
		c->hooks_json = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return 0;
}

int oci_ctr_save(const struct oci_ctr *c)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "sandbox", json_object_new_string(c->sandbox));
	json_object_object_add(o, "bundle", json_object_new_string(c->bundle));
	json_object_object_add(o, "rootfs", json_object_new_string(c->rootfs));
	json_object_object_add(o, "created", json_object_new_string(c->created));
	json_object_object_add(o, "ociVersion", json_object_new_string(c->oci_version));
	if (c->cgroup_path[0])
		json_object_object_add(o, "cgroupPath", json_object_new_string(c->cgroup_path));
	json_object_object_add(o, "started", json_object_new_boolean(c->started));
	if (c->annotations_json)
		json_object_object_add(o, "annotations", json_tokener_parse(c->annotations_json));
	if (c->hooks_json)
		json_object_object_add(o, "hooks", json_tokener_parse(c->hooks_json));
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s/state.json", oci_g.root, c->id);
	int r = oci_write_file(path, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	if (r < 0)
		return oci_error("write '%s': %s", path, strerror(-r));
	return 0;
}

void oci_ctr_free(struct oci_ctr *c)
{
	free(c->annotations_json);
	free(c->hooks_json);
	c->annotations_json = c->hooks_json = NULL;
}

/* The sandbox that carries container id in its metadata (create gives
 * it that before anything else), into out; "" when there is none. */
static void sandbox_by_metadata(abox_ctx *ctx, const char *id, char *out, size_t n)
{
	char kv[1200];
	snprintf(kv, sizeof(kv), OCI_META_KEY "=%s", id);
	const char *const md[] = { kv, NULL };
	abox_list_opts lo = ABOX_LIST_OPTS_INIT;
	lo.metadata = md;
	abox_sandbox_info *infos = NULL;
	size_t found = 0;
	out[0] = '\0';
	if (abox_sandbox_query(ctx, &lo, &infos, &found, NULL, NULL) < 0)
		return;
	for (size_t i = 0; i < found; i++) {
		if (i == 0)
			snprintf(out, n, "%s", infos[i].id);
		abox_sandbox_info_clear(&infos[i]);
	}
	free(infos);
}

void oci_ctr_resolve(abox_ctx *ctx, struct oci_ctr *c)
{
	if (!c->sandbox[0])
		sandbox_by_metadata(ctx, c->id, c->sandbox, sizeof(c->sandbox));
}

const char *oci_status(abox_ctx *ctx, const struct oci_ctr *c, int *pid)
{
	abox_sandbox_info info = { .version = ABOX_SANDBOX_INFO_VERSION };
	*pid = 0;
	char sandbox[sizeof(c->sandbox)];
	snprintf(sandbox, sizeof(sandbox), "%s", c->sandbox);
	if (!sandbox[0])
		sandbox_by_metadata(ctx, c->id, sandbox, sizeof(sandbox));
	if (!sandbox[0] || abox_sandbox_info_get(ctx, sandbox, &info, NULL) < 0)
		return "stopped";
	abox_sandbox_state st = info.state;
	int p = info.pid;
	abox_sandbox_info_clear(&info);
	if (st == ABOX_STATE_DEAD || p <= 0)
		return "stopped";
	*pid = p;
	if (st == ABOX_STATE_PAUSED)
		return "paused";
	return c->started ? "running" : "created";
}

size_t oci_proc_read(int pid, const char *name, char *buf, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	FILE *f = fopen(path, "re");
	size_t got = f ? fread(buf, 1, size - 1, f) : 0;
	if (f)
		fclose(f);
	buf[got] = '\0';
	return got;
}

/* oci_pid_of and oci_pids (oci.h): by the sandbox's cgroup folder, named
 * in every hierarchy's line of /proc/P/cgroup. */
bool oci_pid_of(int pid, const char *sandbox)
{
	char text[8192], tag[128];
	snprintf(tag, sizeof(tag), "/abox-%s", sandbox);
	oci_proc_read(pid, "cgroup", text, sizeof(text));
	/* the sandbox's folder, whole: "/abox-ID" then "/" or the line's end */
	size_t k = strlen(tag);
	for (const char *s = strstr(text, tag); s; s = strstr(s + 1, tag))
		if (s[k] == '/' || s[k] == '\n' || !s[k])
			return true;
	return false;
}

size_t oci_pids(const char *sandbox, int *out, size_t max)
{
	size_t n = 0;
	DIR *d = opendir("/proc");
	for (struct dirent *e; d && sandbox[0] && (e = readdir(d)) && n < max;) {
		char *end;
		long p = strtol(e->d_name, &end, 10);
		if (*end || p <= 0)
			continue;
		if (oci_pid_of((int)p, sandbox))
			out[n++] = (int)p;
	}
	if (d)
		closedir(d);
	return n;
}

int oci_open(const char *id, struct oci_ctr *c, abox_ctx **ctx)
{
	*ctx = NULL;
	if (oci_ctr_load(id, c))
		return 1;
	if (oci_ctx(ctx)) {
		oci_ctr_free(c);
		return 1;
	}
	return 0;
}

void oci_close(struct oci_ctr *c, abox_ctx *ctx)
{
	oci_ctr_free(c);
	abox_ctx_free(ctx);
}
