/* cgroup/cpuset.c — an OCI container's cpuset (linux.resources.cpu.cpus
 * and mems): the CPUs and memory nodes its processes may use.
 *
 * On v1 cpusets are a hierarchy of their own, which abox's layout does not
 * serve (its sandboxes need none): the container's folder there is made
 * beside its others, below the same parent (the config's cgroupsPath, or
 * the caller's own cpuset cgroup) and named as they are, each level made
 * on the way given its parent's CPUs and nodes (a v1 cpuset takes no task
 * while either is empty); the sandbox's processes are moved in before the
 * container's process runs, and whatever they start later is born there.
 * The folder is recorded with the sandbox's others, so kill and gc remove
 * it as they remove those. On v2 the sandbox's own folder takes
 * cpuset.cpus and cpuset.mems once its parent hands the controller down.
 * Runs in the CLI/daemon. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/cgroup_internal.h"
#include "mount/mountinfo.h"

struct find {
	char *mount;
};

static int find_cpuset(const struct mountinfo_entry *e, void *ud)
{
	struct find *f = ud;
	if (!f->mount && !strcmp(e->fstype, "cgroup") && cgroup_list_has(e->super_opts, "cpuset", ","))
		f->mount = strdup(e->mount_point);
	return 0;
}

/* The v1 cpuset hierarchy's mount, or NULL. */
static char *v1_mount(abox_error *err)
{
	_cleanup_free_ char *mi = NULL;
	if (mountinfo_read("/proc/self/mountinfo", &mi, NULL, err) < 0)
		return NULL;
	struct find f = { 0 };
	(void)mountinfo_parse(mi, find_cpuset, &f, NULL);
	return f.mount;
}

/* The caller's cgroup in the v1 cpuset hierarchy, into out. */
static int v1_self(char *out, size_t n)
{
	_cleanup_free_ char *text = NULL;
	if (read_file_at(AT_FDCWD, "/proc/self/cgroup", 64u << 10, &text, NULL) < 0)
		return -EIO;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		if (cgroup_list_has(c1 + 1, "cpuset", ",")) {
			int k = snprintf(out, n, "%s", strcmp(c2 + 1, "/") ? c2 + 1 : "");
			return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
		}
	}
	return -ENOENT;
}

/* The cpuset folder of parent (a cgroupsPath: absolute from the
 * hierarchy's root, else below the caller's cpuset cgroup; NULL: the
 * caller's own) under mount, into out ("" for the root itself). */
static int parent_dir(const char *mount, const char *parent, char *out, size_t n)
{
	char self[2048] = "";
	if ((!parent || parent[0] != '/') && v1_self(self, sizeof(self)) < 0)
		return -ENOENT;
	int k = !parent            ? snprintf(out, n, "%s%s", mount, self)
		: parent[0] == '/' ? snprintf(out, n, "%s%s", mount, strcmp(parent, "/") ? parent : "")
				   : snprintf(out, n, "%s%s/%s", mount, self, parent);
	return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

int cgroup_cpuset_plan(const struct cg_layout *l, const char *parent, const char *name, char *dir, size_t n,
		       abox_error *err)
{
	dir[0] = '\0';
	/* v2 alone serves the sandbox's controllers: its own folder */
	if (l->v2_mount && l->use[CG_MEMORY] == CG_V2)
		return 0;
	_cleanup_free_ char *mount = v1_mount(err);
	if (!mount)
		return abox_error_setx(err, EOPNOTSUPP, "this host mounts no cpuset hierarchy");
	char up[4096];
	int r = parent_dir(mount, parent, up, sizeof(up));
	if (r == -ENOENT)
		return abox_error_setx(err, EOPNOTSUPP, "this process's cpuset cgroup is unknown");
	int k = r < 0 ? -1 : snprintf(dir, n, "%s/abox-%s", up, name);
	if (k < 0 || (size_t)k >= n)
		return abox_error_setx(err, ENAMETOOLONG, "cgroup: the cpuset folder's path is too long");
	return 0;
}

/* dir's parent folder's path (malloc'd), or NULL. */
static char *up_of(const char *dir)
{
	char *up = strdup(dir);
	char *slash = up ? strrchr(up, '/') : NULL;
	if (slash)
		*slash = '\0';
	else
		free(up);
	return slash ? up : NULL;
}

/* A v1 cpuset folder's file set from its parent's when empty. */
static int inherit(int parent, int fd, const char *file, abox_error *err)
{
	_cleanup_free_ char *mine = NULL, *theirs = NULL;
	if (read_file_at(fd, file, 65536, &mine, NULL) == 0 && mine[0] && mine[0] != '\n')
		return 0;
	int r = read_file_at(parent, file, 65536, &theirs, NULL);
	if (r < 0)
		return abox_error_set(err, -r, "cgroup: read the parent's %s", file);
	if ((r = write_file_at(fd, file, theirs)) < 0)
		return abox_error_set(err, -r, "cgroup: write %s", file);
	return 0;
}

/* The folder (v1) made level by level below the hierarchy's mount, each
 * new one given its parent's CPUs and nodes. fd of the last. */
static int make_v1(const char *mount, const char *dir, abox_error *err)
{
	size_t ml = mount ? strlen(mount) : 0;
	if (!mount || strncmp(dir, mount, ml) != 0 || dir[ml] != '/')
		return abox_error_setx(err, EINVAL, "cgroup: '%s' is not in the cpuset hierarchy", dir);
	int cur = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return abox_error_set(err, errno, "cgroup: open '%s'", mount);
	for (const char *s = dir + ml; *s;) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		char part[256];
		if (!n)
			break;
		if (n >= sizeof(part) || (n == 2 && !strncmp(s, "..", 2)) || (n == 1 && s[0] == '.')) {
			close(cur);
			return abox_error_setx(err, EINVAL, "cgroup: '%s' is not a cgroup path", dir);
		}
		memcpy(part, s, n);
		part[n] = '\0';
		s += n;
		if (mkdirat(cur, part, 0755) < 0 && errno != EEXIST) {
			int e = errno;
			close(cur);
			return abox_error_set(err, e, "cgroup: make '%s' in '%s'", part, dir);
		}
		int next = openat(cur, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int r = next < 0 ? abox_error_set(err, errno, "cgroup: open '%s'", part) : 0;
		if (r == 0 && ((r = inherit(cur, next, "cpuset.cpus", err)) < 0 ||
			       (r = inherit(cur, next, "cpuset.mems", err)) < 0))
			close(next);
		close(cur);
		if (r < 0)
			return r;
		cur = next;
	}
	return cur;
}

static int set(int fd, const char *file, const char *val, const char *field, abox_error *err)
{
	if (!val || !*val)
		return 0;
	int r = write_file_at(fd, file, val);
	if (r < 0)
		return abox_error_set(err, -r, "%s: the kernel refused '%s' (%s)", field, val, file);
	return 0;
}

/* Every process of the sandbox's folders into fd's cgroup.procs. */
static int move_all(const struct cg_sandbox *cg, int fd, abox_error *err)
{
	for (size_t i = 0; i < cg->n; i++) {
		_cleanup_free_ char *procs = NULL;
		if (cg->dir[i].fd < 0 ||
		    read_file_at(cg->dir[i].fd, "cgroup.procs", 1 << 20, &procs, NULL) < 0)
			continue;
		for (char *save = NULL, *t = strtok_r(procs, "\n", &save); t;
		     t = strtok_r(NULL, "\n", &save)) {
			int r = write_file_at(fd, "cgroup.procs", t);
			if (r < 0 && r != -ESRCH)
				return abox_error_set(err, -r, "cgroup: move process %s into the cpuset", t);
		}
	}
	return 0;
}

/* mems, then cpus (CPUs of a node the set lacks may be refused) */
static int set_both(int fd, const char *cpus, const char *mems, abox_error *err)
{
	int r = set(fd, "cpuset.mems", mems, "linux.resources.cpu.mems", err);
	return r < 0 ? r : set(fd, "cpuset.cpus", cpus, "linux.resources.cpu.cpus", err);
}

int cgroup_cpuset_apply(struct cg_sandbox *cg, const char *dir, bool parent_too, const char *cpus,
			const char *mems, abox_error *err)
{
	int r;
	if (!dir || !*dir) {
		/* v2: the sandbox's folder, the controller handed down to it */
		if (cg->v2 < 0)
			return abox_error_setx(err, EOPNOTSUPP,
					       "cgroup: the sandbox has no v2 folder for its cpuset");
		const char *d = cg->dir[cg->v2].path;
		_cleanup_free_ char *up = up_of(d);
		if (!up)
			return abox_error_set(err, ENOMEM, "cgroup");
		_cleanup_close_ int pfd = open(up, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd >= 0)
			(void)write_file_at(pfd, "cgroup.subtree_control", "+cpuset");
		_cleanup_close_ int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return abox_error_set(err, errno, "cgroup: open '%s'", d);
		if (faccessat(fd, "cpuset.cpus", F_OK, 0) < 0)
			return abox_error_setx(
				err, EOPNOTSUPP,
				"cgroup: the cpuset controller is not handed down to '%s' (its parent "
				"has processes of its own, or lacks it)",
				d);
		if (parent_too && pfd >= 0 && faccessat(pfd, "cpuset.cpus", F_OK, 0) == 0 &&
		    (r = set_both(pfd, cpus, mems, err)) < 0)
			return abox_error_prefix(err, "the cgroupsPath's folder");
		return set_both(fd, cpus, mems, err);
	}
	/* the container's own cgroupsPath folder first, where a container
	 * engine reads its cpuset (as it does its other limits): the
	 * sandbox's below takes its sets from there */
	_cleanup_free_ char *mount = v1_mount(err);
	if (!mount)
		return abox_error_setx(err, EOPNOTSUPP, "this host mounts no cpuset hierarchy");
	if (parent_too) {
		_cleanup_free_ char *up = up_of(dir);
		if (!up)
			return abox_error_set(err, ENOMEM, "cgroup");
		int pfd = make_v1(mount, up, err);
		if (pfd < 0)
			return pfd;
		r = set_both(pfd, cpus, mems, err);
		close(pfd);
		if (r < 0)
			return abox_error_prefix(err, "the cgroupsPath's folder");
	}
	int fd = make_v1(mount, dir, err);
	if (fd < 0)
		return fd;
	if ((r = set_both(fd, cpus, mems, err)) >= 0)
		r = move_all(cg, fd, err);
	close(fd);
	return r;
}

void cgroup_cpuset_remove_parent(const char *parent)
{
	char dir[4096];
	_cleanup_free_ char *mount = v1_mount(NULL);
	/* never a root: the hierarchy's, or the caller's own cgroup */
	if (mount && parent && strcmp(parent, "/") != 0 && parent_dir(mount, parent, dir, sizeof(dir)) == 0)
		(void)rmdir(dir);
}

/* The parent folder of a v1 cpuset folder, open. */
static int open_up(const char *dir)
{
	_cleanup_free_ char *up = up_of(dir);
	if (!up)
		return -ENOMEM;
	int fd = open(up, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int cgroup_cpuset_update(struct cg_sandbox *cg, const char *dir, bool parent_too, const char *cpus,
			 const char *mems, abox_error *err)
{
	_cleanup_close_ int fd = *dir ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -EBADF;
	/* v2, or a folder not made yet (a container made without a cpuset) */
	if (!*dir || (fd < 0 && errno == ENOENT))
		return cgroup_cpuset_apply(cg, dir, parent_too, cpus, mems, err);
	if (fd < 0)
		return abox_error_set(err, errno, "cgroup: open '%s'", dir);
	if (!parent_too)
		return set_both(fd, cpus, mems, err);
	_cleanup_close_ int up = open_up(dir);
	if (up < 0)
		return abox_error_set(err, -up, "cgroup: open the parent of '%s'", dir);
	/* v1 keeps a child's sets within its parent's: the child first for a
	 * shrink; otherwise the parent is widened to its own parent's sets,
	 * the child set, and the parent narrowed to the same */
	if (set_both(fd, cpus, mems, NULL) == 0)
		return set_both(up, cpus, mems, err);
	_cleanup_close_ int top = openat(up, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *wide_cpus = NULL, *wide_mems = NULL;
	int r;
	if (top < 0 || read_file_at(top, "cpuset.cpus", 65536, &wide_cpus, NULL) < 0 ||
	    read_file_at(top, "cpuset.mems", 65536, &wide_mems, NULL) < 0)
		return abox_error_setx(err, EIO, "cgroup: the sets above '%s' cannot be read", dir);
	if ((r = set_both(up, wide_cpus, wide_mems, err)) < 0 || (r = set_both(fd, cpus, mems, err)) < 0)
		return r;
	return set_both(up, cpus, mems, err);
}
