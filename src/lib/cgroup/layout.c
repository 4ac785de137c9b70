/* cgroup/layout.c — finds the cgroup hierarchies, the caller's own cgroup in
 * each, and decides per controller whether v2, v1 or nothing serves it.
 *
 * Does not create or write anything (cgroup.c does). Runs in the CLI or the
 * daemon, normally once per process. Input: the text of /proc/self/mountinfo
 * and /proc/self/cgroup; on the v2 side it also looks at the caller's
 * cgroup.controllers, cgroup.freeze and cgroup.kill, and — when the caller
 * sits at the v2 root, where those two files never exist — at the kernel
 * release (cgroup.freeze came in 5.2, cgroup.kill in 5.14). cgroup_create
 * verifies both files again on the sandbox's own directory, so the release
 * is only a prediction for reporting, never trusted for correctness.
 *
 * Paths: v1_mount/v2_mount hold fs_prefix + the mount point; v1_self/v2_self
 * hold the caller's cgroup *relative to that mount* (the cgroup path from
 * /proc/self/cgroup minus the mount's root, which differs from it only when
 * a subtree of the hierarchy was mounted). mount + self is the caller's
 * directory. The kernel release is read from fs_prefix/proc/sys/kernel/
 * osrelease, so fake trees control it too. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cgroup/cgroup_internal.h"
#include "mount/mountinfo.h"

/* Input limit: the text comes from our own /proc, but must not make us
 * allocate without bound (the mount table's is in mountinfo.h). */
#define SELF_CGROUP_MAX (64u << 10)

static const char *const controller_names[CG_CONTROLLER_MAX] = {
	[CG_MEMORY] = "memory",
	[CG_PIDS] = "pids",
	[CG_CPU] = "cpu",
	[CG_FREEZER] = "freezer",
};

const char *cgroup_controller_name(enum cg_controller c)
{
	if ((unsigned)c >= CG_CONTROLLER_MAX)
		return "unknown";
	return controller_names[c];
}

void cgroup_layout_free(struct cg_layout *l)
{
	if (!l)
		return;
	free(l->v2_mount);
	free(l->v2_self);
	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		free(l->v1_mount[c]);
		free(l->v1_self[c]);
	}
	memset(l, 0, sizeof(*l));
}

static void layout_freep(struct cg_layout *l)
{
	cgroup_layout_free(l);
}

struct mount_entry {
	char *root; /* the part of the hierarchy this mount shows */
	char *mp;
	char *fstype;
	char *super;
};

struct mount_table {
	struct mount_entry *e;
	size_t n, cap;
};

static void mount_table_freep(struct mount_table *t)
{
	free(t->e);
}

static int add_entry(struct mount_table *t, const struct mount_entry *m)
{
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		struct mount_entry *ne = realloc(t->e, ncap * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		t->e = ne;
		t->cap = ncap;
	}
	t->e[t->n++] = *m;
	return 0;
}

/* Every mount is kept (one made later on a cgroup mount's point or a
 * parent of it hides that one); only the cgroup hierarchies' ("cgroup",
 * "cgroup2") are ever picked. Nothing else is assumed about the other
 * lines: an nsfs mount's root is "net:[...]", not a path. */
static int add_mount(const struct mountinfo_entry *e, void *ud)
{
	return add_entry(ud, &(struct mount_entry){ .root = e->root, .mp = e->mount_point,
						    .fstype = e->fstype, .super = e->super_opts });
}

static int parse_mountinfo(char *text, struct mount_table *t, abox_error *err)
{
	int r = mountinfo_parse(text, add_mount, t, err);
	if (r == -ENOMEM)
		return abox_error_set(err, ENOMEM, "cgroup: mountinfo");
	if (r < 0 && err)
		(void)abox_error_prefix(err, "cgroup");
	return r;
}

static bool list_has(const char *list, const char *tok, char sep)
{
	char seps[2] = { sep, '\0' };
	return cgroup_list_has(list, tok, seps);
}

/* Is `dir` equal to `path` or one of its parents? */
static bool covers(const char *dir, const char *path)
{
	size_t n = strlen(dir);
	if (dir[0] != '/') /* not a path (an nsfs root): covers nothing */
		return false;
	if (n == 1) /* "/" */
		return true;
	return strncmp(dir, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The caller's cgroup as seen through mount m, or NULL when this mount
 * shows another subtree (bind mounts, foreign cgroup namespaces). */
static const char *relative_self(const struct mount_entry *m, const char *self)
{
	if (!covers(m->root, self))
		return NULL;
	if (strcmp(m->root, "/") == 0)
		return self;
	const char *rel = self + strlen(m->root);
	return *rel ? rel : "/";
}

/* A mount made later on the same point or on a parent hides this one. */
static bool shadowed(const struct mount_table *t, size_t i)
{
	for (size_t j = i + 1; j < t->n; j++)
		if (covers(t->e[j].mp, t->e[i].mp))
			return true;
	return false;
}

/* /proc/self/cgroup: "hierarchy-id:controllers:path" per line. For v2
 * (id 0, empty list) pass ctrl == NULL. */
static int self_path(const char *text, const char *ctrl, const char **path, size_t *len,
		     abox_error *err)
{
	unsigned lineno = 0;
	*path = NULL;
	for (const char *line = text; *line;) {
		const char *eol = strchr(line, '\n');
		size_t n = eol ? (size_t)(eol - line) : strlen(line);
		lineno++;
		if (n > 0) {
			const char *c1 = memchr(line, ':', n);
			const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
			if (!c1 || c1 == line || !c2 || c2 + 1 == line + n || c2[1] != '/')
				return abox_error_setx(err, EINVAL,
						       "cgroup: /proc/self/cgroup line %u is malformed",
						       lineno);
			for (const char *d = line; d < c1; d++)
				if (*d < '0' || *d > '9')
					return abox_error_setx(
						err, EINVAL,
						"cgroup: /proc/self/cgroup line %u is malformed", lineno);
			bool match;
			if (!ctrl) {
				match = c2 == c1 + 1 && c1 - line == 1 && line[0] == '0';
			} else {
				char list[256];
				size_t ll = (size_t)(c2 - c1 - 1);
				match = ll < sizeof(list);
				if (match) {
					memcpy(list, c1 + 1, ll);
					list[ll] = '\0';
					match = list_has(list, ctrl, ',');
				}
			}
			if (match && !*path) {
				*path = c2 + 1;
				*len = n - (size_t)(c2 + 1 - line);
			}
		}
		line = eol ? eol + 1 : line + n;
	}
	return 0;
}

/* Picks the first visible mount of the hierarchy that shows the caller's
 * cgroup; fills mount (with prefix) and self. Leaves them NULL if none. */
static int pick_mount(const struct mount_table *t, const char *self_text, const char *ctrl,
		      const char *fs_prefix, char **mount, char **self, abox_error *err)
{
	const char *p;
	size_t plen;
	int r = self_path(self_text, ctrl, &p, &plen, err);
	if (r < 0 || !p)
		return r;
	_cleanup_free_ char *path = strndup(p, plen);
	if (!path)
		return abox_error_set(err, ENOMEM, "cgroup: layout");

	for (size_t i = 0; i < t->n; i++) {
		const struct mount_entry *m = &t->e[i];
		if (ctrl ? strcmp(m->fstype, "cgroup") != 0 || !list_has(m->super, ctrl, ',')
			 : strcmp(m->fstype, "cgroup2") != 0)
			continue;
		const char *rel = relative_self(m, path);
		if (!rel || shadowed(t, i))
			continue;
		char *mp = NULL, *sp = strdup(rel);
		if (!sp || asprintf(&mp, "%s%s", fs_prefix, m->mp) < 0) {
			free(sp);
			return abox_error_set(err, ENOMEM, "cgroup: layout");
		}
		*mount = mp;
		*self = sp;
		return 0;
	}
	return 0;
}

/* The kernel's major*1000+minor from "6.18.44-foo"; 0 when unknown. */
static unsigned kernel_release(const char *fs_prefix)
{
	char path[4096];
	_cleanup_free_ char *rel = NULL;
	unsigned ma, mi;

	if ((size_t)snprintf(path, sizeof(path), "%s/proc/sys/kernel/osrelease", fs_prefix) >=
	    sizeof(path))
		return 0;
	if (read_file_at(AT_FDCWD, path, 256, &rel, NULL) < 0 ||
	    sscanf(rel, "%u.%u", &ma, &mi) != 2 || mi >= 1000)
		return 0;
	return ma * 1000 + mi;
}

/* Looks at the caller's v2 cgroup: which controllers it offers its children
 * and whether the core freeze/kill files exist. */
static int probe_v2(struct cg_layout *l, const char *fs_prefix, bool v2_ctl[CG_CONTROLLER_MAX],
		    bool *freeze, abox_error *err)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_free_ char *ctl = NULL;
	bool at_root = strcmp(l->v2_self, "/") == 0;

	if (asprintf(&dir, "%s%s", l->v2_mount, at_root ? "" : l->v2_self) < 0)
		return abox_error_set(err, ENOMEM, "cgroup: layout");
	_cleanup_close_ int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			return abox_error_set(err, errno, "cgroup: open '%s'", dir);
		/* Our cgroup is not reachable through this mount (another
		 * cgroup namespace mounted it): the v2 side is unusable. */
		free(l->v2_mount);
		free(l->v2_self);
		l->v2_mount = l->v2_self = NULL;
		return 0;
	}
	int r = read_file_at(fd, "cgroup.controllers", 4096, &ctl, NULL);
	if (r < 0 && r != -ENOENT)
		return abox_error_set(err, -r, "cgroup: read '%s/cgroup.controllers'", dir);
	if (ctl) {
		/* the file is "cpuset cpu io memory pids\n" */
		ctl[strcspn(ctl, "\n")] = '\0';
		for (int c = 0; c < CG_CONTROLLER_MAX; c++)
			v2_ctl[c] = c != CG_FREEZER && list_has(ctl, controller_names[c], ' ');
	}
	if (at_root) {
		unsigned rel = kernel_release(fs_prefix);
		*freeze = rel >= 5002;
		l->v2_kill = rel >= 5014;
	} else {
		*freeze = faccessat(fd, "cgroup.freeze", F_OK, 0) == 0;
		l->v2_kill = faccessat(fd, "cgroup.kill", F_OK, 0) == 0;
	}
	return 0;
}

int cgroup_layout_parse(const char *mountinfo, const char *self_cgroup, const char *fs_prefix,
			struct cg_layout *out, abox_error *err)
{
	_cleanup_(layout_freep) struct cg_layout l = { 0 };
	_cleanup_(mount_table_freep) struct mount_table t = { 0 };
	_cleanup_free_ char *text = NULL;
	bool v2_ctl[CG_CONTROLLER_MAX] = { false }, freeze = false;
	int r;

	if (!mountinfo || !self_cgroup || !out)
		return abox_error_setx(err, EINVAL, "cgroup: layout: missing argument");
	if (!fs_prefix)
		fs_prefix = "";
	text = strdup(mountinfo);
	if (!text)
		return abox_error_set(err, ENOMEM, "cgroup: layout");
	r = parse_mountinfo(text, &t, err);
	if (r < 0)
		return r;
	/* Validate every line up front so bad input fails the same way
	 * whichever hierarchies happen to be mounted. */
	const char *unused;
	size_t ulen;
	r = self_path(self_cgroup, NULL, &unused, &ulen, err);
	if (r < 0)
		return r;

	r = pick_mount(&t, self_cgroup, NULL, fs_prefix, &l.v2_mount, &l.v2_self, err);
	if (r < 0)
		return r;
	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		r = pick_mount(&t, self_cgroup, controller_names[c], fs_prefix, &l.v1_mount[c],
			       &l.v1_self[c], err);
		if (r < 0)
			return r;
	}
	if (l.v2_mount) {
		r = probe_v2(&l, fs_prefix, v2_ctl, &freeze, err);
		if (r < 0)
			return r;
	}

	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		bool v2 = c == CG_FREEZER ? l.v2_mount && freeze : v2_ctl[c];
		l.use[c] = v2 ? CG_V2 : l.v1_mount[c] ? CG_V1 : CG_NONE;
	}
	*out = l;
	memset(&l, 0, sizeof(l));
	return 0;
}

int cgroup_layout_detect(struct cg_layout *out, abox_error *err)
{
	_cleanup_free_ char *mi = NULL, *self = NULL;
	int r;

	r = mountinfo_read("/proc/self/mountinfo", &mi, NULL, err);
	if (r < 0)
		return err ? abox_error_prefix(err, "cgroup") : r;
	r = read_file_at(AT_FDCWD, "/proc/self/cgroup", SELF_CGROUP_MAX, &self, NULL);
	if (r < 0)
		return abox_error_set(err, -r, "cgroup: read '/proc/self/cgroup'");
	return cgroup_layout_parse(mi, self, "", out, err);
}
