/* cgroup/parent.c — a layout whose own cgroup is one the caller names (an
 * OCI config's cgroupsPath: the kubelet's pod cgroup and the container's
 * name below it) instead of the cgroup the caller runs in, so a sandbox's
 * cgroups are made below it and count in it. The path is made in every
 * hierarchy abox uses (on v2 with the controllers handed down along it,
 * never at the root), then the layout is read as if the caller ran there.
 * Runs in the CLI/daemon, before any sandbox of the context is made. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/cgroup_internal.h"
#include "mount/mountinfo.h"

/* "/a/b" or "a/b" without "." or ".." parts: joined to a hierarchy's
 * mount, ".." would climb out of it into the host's folders */
static bool path_ok(const char *p)
{
	if (!*p || strlen(p) >= 2048)
		return false;
	for (const char *s = p; *s;) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s += n;
	}
	return true;
}

/* v2: dir hands its children the controllers abox uses that it has */
static void hand_down(const char *dir)
{
	_cleanup_close_ int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *have = NULL, *given = NULL;
	if (fd < 0 || read_file_at(fd, "cgroup.controllers", 4096, &have, NULL) < 0 ||
	    read_file_at(fd, "cgroup.subtree_control", 4096, &given, NULL) < 0)
		return;
	static const char *const names[] = { "memory", "pids", "cpu", "cpuset" };
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		char want[16];
		snprintf(want, sizeof(want), "+%s", names[i]);
		if (!cgroup_list_has(have, names[i], " \n") || cgroup_list_has(given, names[i], " \n"))
			continue;
		/* a cgroup with processes of its own cannot (EBUSY): the layout
		 * then finds the controller missing and says so */
		_cleanup_close_ int w = openat(fd, "cgroup.subtree_control", O_WRONLY | O_CLOEXEC);
		if (w >= 0)
			(void)write_full(w, want, strlen(want));
	}
}

/* mount + path, made part by part (v2: the controllers handed down on
 * the way; the mount itself, a hierarchy's root, is never written) */
static int make_path(const char *mount, const char *path, bool v2, abox_error *err)
{
	char dir[4096];
	size_t len = (size_t)snprintf(dir, sizeof(dir), "%s", mount);
	for (const char *s = path; *s;) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		if (!n)
			break;
		if (v2 && len > strlen(mount))
			hand_down(dir);
		if (len + 1 + n >= sizeof(dir))
			return abox_error_setx(err, ENAMETOOLONG, "cgroup: '%s%s' is too long", mount, path);
		dir[len++] = '/';
		memcpy(dir + len, s, n);
		len += n;
		dir[len] = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return abox_error_set(err, errno, "cgroup: make '%s'", dir);
		s += n;
	}
	if (v2 && len > strlen(mount))
		hand_down(dir);
	return 0;
}

/* The cgroup path a line of /proc/self/cgroup gets: parent itself, or
 * when relative, below the line's own. */
static int line_path(const char *own, const char *parent, char *out, size_t n)
{
	int k = parent[0] == '/' ? snprintf(out, n, "%s", parent)
				 : snprintf(out, n, "%s/%s", strcmp(own, "/") ? own : "", parent);
	return k < 0 || (size_t)k >= n ? -1 : 0;
}

int cgroup_layout_detect_at(const char *parent, struct cg_layout *out, abox_error *err)
{
	if (!path_ok(parent))
		return abox_error_setx(err, EINVAL,
				       "cgroup: '%s' is not a cgroup path (no '.' or '..' parts)", parent);
	_cleanup_free_ char *mi = NULL, *self = NULL, *moved = NULL;
	int r = mountinfo_read("/proc/self/mountinfo", &mi, NULL, err);
	if (r < 0)
		return err ? abox_error_prefix(err, "cgroup") : r;
	if ((r = read_file_at(AT_FDCWD, "/proc/self/cgroup", 64u << 10, &self, NULL)) < 0)
		return abox_error_set(err, -r, "cgroup: read '/proc/self/cgroup'");
	/* where the hierarchies are mounted: the caller's own layout */
	struct cg_layout own = { 0 };
	if ((r = cgroup_layout_parse(mi, self, "", &own, err)) < 0)
		return r;
	size_t cap = strlen(self) * 2 + 64 * (strlen(parent) + 1) + 1, used = 0;
	if (!(moved = malloc(cap))) {
		cgroup_layout_free(&own);
		return abox_error_set(err, ENOMEM, "cgroup");
	}
	moved[0] = '\0';
	/* every line "ID:CONTROLLERS:PATH" with PATH moved to the parent,
	 * which is made where abox uses the hierarchy */
	for (char *line = self, *next; r >= 0 && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		char path[4096];
		if (line_path(c2 + 1, parent, path, sizeof(path)) < 0) {
			r = abox_error_setx(err, ENAMETOOLONG, "cgroup: '%s' is too long", parent);
			break;
		}
		const char *mount = NULL;
		bool v2 = c2 == c1 + 1 && !strncmp(line, "0:", 2);
		if (v2)
			mount = own.v2_mount;
		for (int c = 0; !v2 && c < CG_CONTROLLER_MAX; c++) {
			const char *name = cgroup_controller_name(c);
			*c2 = '\0';
			bool has = own.v1_mount[c] && cgroup_list_has(c1 + 1, name, ",");
			*c2 = ':';
			if (has)
				mount = own.v1_mount[c];
		}
		if (mount && (r = make_path(mount, path, v2, err)) < 0)
			break;
		int k = snprintf(moved + used, cap - used, "%.*s%s\n", (int)(c2 + 1 - line), line, path);
		if (k < 0 || (size_t)k >= cap - used) {
			r = abox_error_setx(err, ENAMETOOLONG, "cgroup: '%s' is too long", parent);
			break;
		}
		used += (size_t)k;
	}
	cgroup_layout_free(&own);
	if (r < 0)
		return r;
	return cgroup_layout_parse(mi, moved, "", out, err);
}

void cgroup_layout_remove_self(const struct cg_layout *l)
{
	/* the parent's own folders, each once and only when empty (the
	 * sandboxes below it removed first); never a hierarchy's root */
	if (l->v2_mount && l->v2_self && strcmp(l->v2_self, "/") != 0) {
		_cleanup_free_ char *d = cgroup_self_dir(l->v2_mount, l->v2_self);
		if (d)
			(void)rmdir(d);
	}
	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		if (!l->v1_mount[c] || !l->v1_self[c] || !strcmp(l->v1_self[c], "/"))
			continue;
		_cleanup_free_ char *d = cgroup_self_dir(l->v1_mount[c], l->v1_self[c]);
		if (d)
			(void)rmdir(d);
	}
}
