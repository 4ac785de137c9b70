/* cgroup/create.c — makes one sandbox's cgroups under the caller's
 * cgroup in every hierarchy that serves a controller (in two halves, so
 * the slow half can run while the sandbox child works), lists them before
 * they exist, and opens those another process made. Hands v2 controllers
 * down to the sandboxes where the caller's cgroup lacks them.
 *
 * Does not write the limits (limits.c) or put processes in (attach.c).
 * Runs in the CLI/daemon, never between clone and exec. */
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "cgroup/cgroup_internal.h"

#define CPU_MILLIS_MIN 10u /* the kernel's minimum quota: 1 ms per period */

static bool list_has(const char *list, const char *tok)
{
	return cgroup_list_has(list, tok, " \n");
}

/* The name becomes a cgroup path component: no '/', and no newline or ':'
 * which would make /proc/<pid>/cgroup ambiguous for every reader. */
static bool name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > NAME_LEN_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return false;
	}
	return true;
}

/* Undoes a half-done create: nothing runs inside yet, so plain rmdir. */
static void sandbox_removep(struct cg_sandbox **p)
{
	struct cg_sandbox *cg = *p;
	if (!cg)
		return;
	for (size_t i = cg->n; i-- > 0;) {
		if (cg->dir[i].fake)
			cgroup_clear_fake_dir(&cg->dir[i]);
		(void)rmdir(cg->dir[i].path);
	}
	cgroup_sandbox_free(cg);
}

/* mkdir <mount><self>/<leaf> and keep an fd on it. Hierarchies that
 * co-mount several controllers share one directory. Returns its index. */
static int add_dir(struct cg_sandbox *cg, const char *mount, const char *self, const char *leaf,
		   enum cg_version v, bool existing, abox_error *err)
{
	_cleanup_free_ char *parent = cgroup_self_dir(mount, self);
	char *path = NULL;
	if (!parent || asprintf(&path, "%s/%s", parent, leaf) < 0)
		return abox_error_set(err, ENOMEM, "cgroup: create");
	for (size_t i = 0; i < cg->n; i++)
		if (strcmp(cg->dir[i].path, path) == 0) {
			free(path);
			return (int)i;
		}
	if (existing) {
		int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || cg->n == DIRS_MAX) {
			int e = fd < 0 ? errno : EINVAL;
			free(path);
			if (fd >= 0)
				close(fd);
			return -e;
		}
		close(fd);
	} else if (cg->n == DIRS_MAX || mkdir(path, 0755) < 0) {
		int e = cg->n == DIRS_MAX ? EINVAL : errno;
		abox_error_set(err, e, "cgroup: mkdir '%s'%s", path,
			       e == EEXIST ? " (a sandbox of that name exists or was left behind)" : "");
		free(path);
		return -e;
	}
	struct cg_dir *d = &cg->dir[cg->n++];
	*d = (struct cg_dir){ .path = path, .fd = -EBADF, .version = v };
	d->fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->fd < 0)
		return abox_error_set(err, errno, "cgroup: open '%s'", path);
	struct statfs sf;
	if (fstatfs(d->fd, &sf) < 0)
		return abox_error_set(err, errno, "cgroup: statfs '%s'", path);
	d->fake = sf.f_type != CGROUP_SUPER_MAGIC && sf.f_type != CGROUP2_SUPER_MAGIC;
	return (int)(cg->n - 1);
}

/* mkdir <dir[parent]>/<name> (or open it when existing) and keep an fd on
 * it. Returns its index. */
static int add_child(struct cg_sandbox *cg, int parent, const char *name, bool existing, abox_error *err)
{
	const struct cg_dir *p = &cg->dir[parent];
	_cleanup_free_ char *path = NULL;
	if (asprintf(&path, "%s/%s", p->path, name) < 0)
		return abox_error_set(err, ENOMEM, "cgroup: create");
	if (cg->n == DIRS_MAX)
		return abox_error_setx(err, EINVAL, "cgroup: too many directories");
	if (existing) {
		if (faccessat(p->fd, name, F_OK, 0) < 0)
			return -errno;
	} else if (mkdirat(p->fd, name, 0755) < 0) {
		return abox_error_set(err, errno, "cgroup: mkdir '%s'", path);
	}
	struct cg_dir *d = &cg->dir[cg->n++];
	*d = (struct cg_dir){ .path = TAKE_PTR(path), .fd = -EBADF, .version = p->version, .fake = p->fake };
	d->fd = openat(p->fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->fd < 0)
		return abox_error_set(err, errno, "cgroup: open '%s'", d->path);
	return (int)(cg->n - 1);
}

/* v2 hands a controller to children only when their parent lists it in
 * cgroup.subtree_control. Read first and write only what is missing: a
 * write, even of controllers already on, makes the kernel walk every
 * existing child, so create would slow down as sandboxes accumulate. Once
 * on, controllers stay on (siblings use them; turning them off would fail). */
static int enable_v2(const struct cg_layout *l, abox_error *err)
{
	static const enum cg_controller order[] = { CG_MEMORY, CG_PIDS, CG_CPU };
	_cleanup_free_ char *dir = cgroup_self_dir(l->v2_mount, l->v2_self), *cur = NULL;
	char want[64] = "";
	bool root = strcmp(l->v2_self, "/") == 0;

	if (!dir)
		return abox_error_set(err, ENOMEM, "cgroup: create");
	_cleanup_close_ int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return abox_error_set(err, errno, "cgroup: open '%s'", dir);
	int r = read_file_at(fd, "cgroup.subtree_control", 4096, &cur, NULL);
	if (r < 0)
		return abox_error_set(err, -r, "cgroup: read '%s/cgroup.subtree_control'", dir);
	for (size_t i = 0; i < ELEMENTSOF(order); i++) {
		const char *name = cgroup_controller_name(order[i]);
		if (l->use[order[i]] == CG_V2 && !list_has(cur, name))
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s+%s",
				 want[0] ? " " : "", name);
	}
	if (!want[0])
		return 0;
	if (root)
		return abox_error_setx(err, EPERM,
				       "cgroup: '%s' is not enabled in '%s/cgroup.subtree_control' and "
				       "abox never changes a hierarchy root: enable it there, or run "
				       "abox in a delegated cgroup (systemd-run --scope -p Delegate=yes)",
				       want, dir);
	/* O_TRUNC: harmless on cgroupfs, keeps a fake tree's file exact */
	_cleanup_close_ int wfd = openat(fd, "cgroup.subtree_control",
					 O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
	r = wfd < 0 ? -errno : write_full(wfd, want, strlen(want));
	if (r == -EBUSY)
		return abox_error_setx(
			err, EBUSY,
			"cgroup: cannot enable '%s' in '%s/cgroup.subtree_control': cgroup v2 gives "
			"controllers to children only of a cgroup with no processes of its own, and "
			"the caller runs in it. Run abox in a delegated cgroup that holds no "
			"processes (e.g. systemd-run --scope -p Delegate=yes, caller moved into a child)",
			want, dir);
	if (r < 0)
		return abox_error_set(err, -r, "cgroup: write '%s' to '%s/cgroup.subtree_control'",
				      want, dir);
	return 0;
}

static int check_request(const struct cg_layout *l, const struct cg_limits *lim, abox_error *err)
{
	const bool want[CG_CONTROLLER_MAX] = { [CG_MEMORY] = lim->memory_bytes != 0,
					       [CG_PIDS] = lim->pids != 0,
					       [CG_CPU] = lim->cpu_millis != 0 };

	if (lim->cpu_millis && lim->cpu_millis < CPU_MILLIS_MIN)
		return abox_error_setx(err, EINVAL,
				       "cgroup: cpu limit %u millis is below the kernel's minimum of %u",
				       lim->cpu_millis, CPU_MILLIS_MIN);
	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		const char *name = cgroup_controller_name(c);
		if (c != CG_FREEZER && want[c] && l->use[c] == CG_NONE)
			return abox_error_setx(err, EOPNOTSUPP,
					       "cgroup: a %s limit was asked for but no cgroup "
					       "hierarchy offers the %s controller",
					       name, name);
		if ((l->use[c] == CG_V2 && (!l->v2_mount || !l->v2_self)) ||
		    (l->use[c] == CG_V1 && (!l->v1_mount[c] || !l->v1_self[c])))
			return abox_error_setx(err, EINVAL, "cgroup: layout has no mount for %s",
					       name);
	}
	return 0;
}

int cgroup_planned_dirs(const struct cg_layout *l, const char *name, char *buf, size_t len,
			abox_error *err)
{
	size_t used = 0;
	buf[0] = '\0';
	if (!name_ok(name))
		return abox_error_setx(err, EINVAL, "cgroup: invalid sandbox name");
	const char *mounts[1 + CG_CONTROLLER_MAX], *selfs[1 + CG_CONTROLLER_MAX];
	bool mem[1 + CG_CONTROLLER_MAX] = { false };
	size_t n = 0;
	if (l->v2_mount && l->v2_self) {
		mem[n] = l->use[CG_MEMORY] == CG_V2;
		mounts[n] = l->v2_mount;
		selfs[n++] = l->v2_self;
	}
	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		/* the freezer may fall back to v1 when the v2 directory lacks
		 * cgroup.freeze: list it whenever it is mounted */
		if ((l->use[c] == CG_V1 || c == CG_FREEZER) && l->v1_mount[c] && l->v1_self[c]) {
			mem[n] = c == CG_MEMORY;
			mounts[n] = l->v1_mount[c];
			selfs[n++] = l->v1_self[c];
		}
	}
	for (size_t i = 0; i < n; i++) {
		/* nested ones first: they go before their parent can */
		static const char *const subs[] = { "/cmds", "/init", "" };
		for (size_t s = mem[i] ? 0 : 2; s < ELEMENTSOF(subs); s++) {
			char line[4096];
			const char *self = strcmp(selfs[i], "/") == 0 ? "" : selfs[i];
			if (s == 1 && l->use[CG_MEMORY] != CG_V2)
				continue; /* init has a leaf of its own on v2 only */
			int k = snprintf(line, sizeof(line), "%s%s/abox-%s%s\n", mounts[i], self, name, subs[s]);
			if (k < 0 || (size_t)k >= sizeof(line))
				return abox_error_setx(err, ENAMETOOLONG, "cgroup: path too long");
			if (strstr(buf, line))
				continue; /* co-mounted controllers share a directory */
			if (used + (size_t)k + 1 > len)
				return abox_error_setx(err, ENOBUFS, "cgroup: too many directories");
			memcpy(buf + used, line, (size_t)k + 1);
			used += (size_t)k;
		}
	}
	return 0;
}

int cgroup_open_existing(const struct cg_layout *l, const char *name, struct cg_sandbox **out,
			 abox_error *err)
{
	_cleanup_(sandbox_removep) struct cg_sandbox *cg = NULL;
	if (!l || !out || !name_ok(name))
		return abox_error_setx(err, EINVAL, "cgroup: open: invalid argument");
	cg = calloc(1, sizeof(*cg));
	if (!cg)
		return abox_error_set(err, ENOMEM, "cgroup: open");
	snprintf(cg->leaf, sizeof(cg->leaf), "abox-%s", name);
	cg->v2 = -1;
	cg->oom_fd = -1;
	cg->cmds = cg->init_leaf = cg->oom_cmds_fd = -1;
	for (int c = 0; c < CG_CONTROLLER_MAX; c++)
		cg->ctl[c] = -1;
	if (l->v2_mount && l->v2_self) {
		int r = add_dir(cg, l->v2_mount, l->v2_self, cg->leaf, CG_V2, true, NULL);
		if (r >= 0) {
			cg->v2 = r;
			cg->v2_kill = faccessat(cg->dir[r].fd, "cgroup.kill", F_OK, 0) == 0;
			cg->v2_freeze = cg->v2_kill || faccessat(cg->dir[r].fd, "cgroup.freeze", F_OK, 0) == 0;
		}
	}
	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		if (l->use[c] == CG_V2 && cg->v2 >= 0)
			cg->ctl[c] = cg->v2;
		else if ((l->use[c] == CG_V1 || c == CG_FREEZER) && l->v1_mount[c] && l->v1_self[c]) {
			int r = add_dir(cg, l->v1_mount[c], l->v1_self[c], cg->leaf, CG_V1, true, NULL);
			if (r >= 0)
				cg->ctl[c] = r;
		}
	}
	if (cg->ctl[CG_FREEZER] < 0 && cg->v2 >= 0 && cg->v2_freeze)
		cg->ctl[CG_FREEZER] = cg->v2;
	/* the nested ones, when the sandbox was made with them */
	if (cg->ctl[CG_MEMORY] >= 0) {
		int m = cg->ctl[CG_MEMORY];
		if (cg->dir[m].version == CG_V2) {
			int r = add_child(cg, m, "init", true, NULL);
			cg->init_leaf = r >= 0 ? r : -1;
		}
		int r = add_child(cg, m, "cmds", true, NULL);
		cg->cmds = r >= 0 ? r : -1;
	}
	cg->finished = true;
	*out = TAKE_PTR(cg);
	return 0;
}

int cgroup_create_begin(const struct cg_layout *l, const char *name, const struct cg_limits *lim,
			struct cg_sandbox **out, abox_error *err)
{
	static const struct cg_limits no_limits = { 0 };
	_cleanup_(sandbox_removep) struct cg_sandbox *cg = NULL;
	int r;

	if (!l || !out)
		return abox_error_setx(err, EINVAL, "cgroup: create: missing argument");
	if (!name_ok(name))
		return abox_error_setx(err, EINVAL,
				       "cgroup: invalid sandbox name '%.*s' (1-128 of A-Z a-z 0-9 . _ -)",
				       NAME_LEN_MAX, name ? name : "");
	if (!lim)
		lim = &no_limits;
	r = check_request(l, lim, err);
	if (r < 0)
		return r;
	cg = calloc(1, sizeof(*cg));
	if (!cg)
		return abox_error_set(err, ENOMEM, "cgroup: create");
	snprintf(cg->leaf, sizeof(cg->leaf), "abox-%s", name);
	cg->lim = *lim;
	cg->v2 = -1;
	cg->oom_fd = -1;
	cg->cmds = cg->init_leaf = cg->oom_cmds_fd = -1;
	for (int c = 0; c < CG_CONTROLLER_MAX; c++)
		cg->ctl[c] = -1;

	if (l->use[CG_MEMORY] == CG_V2 || l->use[CG_PIDS] == CG_V2 || l->use[CG_CPU] == CG_V2) {
		r = enable_v2(l, err);
		if (r < 0)
			return r;
	}
	if (l->v2_mount && l->v2_self) {
		r = add_dir(cg, l->v2_mount, l->v2_self, cg->leaf, CG_V2, false, err);
		if (r < 0)
			return r;
		cg->v2 = r;
		/* cgroup.kill (5.14) implies cgroup.freeze (5.2): one probe
		 * in the common case */
		cg->v2_kill = faccessat(cg->dir[r].fd, "cgroup.kill", F_OK, 0) == 0;
		cg->v2_freeze = cg->v2_kill || faccessat(cg->dir[r].fd, "cgroup.freeze", F_OK, 0) == 0;
		/* v2 lets no process sit in a cgroup that hands a controller to
		 * children: init gets a leaf of its own next to the commands' */
		if (l->use[CG_MEMORY] == CG_V2 && lim->memory_bytes) {
			if ((r = add_child(cg, cg->v2, "init", false, err)) < 0)
				return r;
			cg->init_leaf = r;
			if ((r = add_child(cg, cg->v2, "cmds", false, err)) < 0)
				return r;
			cg->cmds = r;
		}
	}
	*out = TAKE_PTR(cg);
	return 0;
}

int cgroup_create_finish(const struct cg_layout *l, struct cg_sandbox *cg, bool defer_cpu, abox_error *err)
{
	int r;
	if (!l || !cg || cg->finished)
		return abox_error_setx(err, EINVAL, "cgroup: finish: invalid argument");
	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		enum cg_version v = l->use[c];
		/* the layout only predicts cgroup.freeze at the v2 root; the
		 * sandbox's own directory decides */
		if (c == CG_FREEZER && v == CG_V2 && !cg->v2_freeze)
			v = l->v1_mount[c] && l->v1_self[c] ? CG_V1 : CG_NONE;
		if (v == CG_V2) {
			cg->ctl[c] = cg->v2;
		} else if (v == CG_V1) {
			r = add_dir(cg, l->v1_mount[c], l->v1_self[c], cg->leaf, CG_V1, false, err);
			if (r < 0)
				return r;
			cg->ctl[c] = r;
			if (c == CG_MEMORY && cg->lim.memory_bytes) {
				if ((r = add_child(cg, r, "cmds", false, err)) < 0)
					return r;
				cg->cmds = r;
			}
		}
	}
	struct cg_limits lim = cg->lim;
	if (defer_cpu)
		lim.cpu_millis = 0;
	r = cgroup_write_limits(cg, &lim, err);
	if (r < 0)
		return r;
	cg->cpu_pending = defer_cpu && cg->lim.cpu_millis;
	cg->finished = true;
	return 0;
}

int cgroup_create_cpu(struct cg_sandbox *cg, abox_error *err)
{
	if (!cg || !cg->cpu_pending)
		return 0;
	struct cg_limits lim = { .cpu_millis = cg->lim.cpu_millis,
				 .cpu_period_us = cg->lim.cpu_period_us,
				 .cpu_quota_us = cg->lim.cpu_quota_us };
	int r = cgroup_write_limits(cg, &lim, err);
	if (r >= 0)
		cg->cpu_pending = false;
	return r;
}

int cgroup_create(const struct cg_layout *l, const char *name, const struct cg_limits *lim,
		  struct cg_sandbox **out, abox_error *err)
{
	_cleanup_(sandbox_removep) struct cg_sandbox *cg = NULL;
	if (!out)
		return abox_error_setx(err, EINVAL, "cgroup: create: missing argument");
	int r = cgroup_create_begin(l, name, lim, &cg, err);
	if (r < 0)
		return r;
	r = cgroup_create_finish(l, cg, false, err);
	if (r < 0)
		return r;
	*out = TAKE_PTR(cg);
	return 0;
}
