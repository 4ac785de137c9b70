/* cgroup/cgroup.c — one sandbox's cgroups: creates them under the caller's
 * cgroup, writes the limits, moves processes in, counts OOM kills,
 * freezes/thaws, kills every task and removes the directories.
 *
 * Does not find the hierarchies (layout.c) or choose the limits
 * (local/link.c). Runs in the CLI/daemon, never between clone and exec.
 * Kernel: v1 memory/pids/cpu/freezer; v2 controllers, cgroup.freeze (5.2)
 * and cgroup.kill (5.14), both checked on the sandbox's own v2 directory.
 * Cost: one O_PATH fd per directory, knobs written with openat() on it,
 * nothing read back on the hot path.
 *
 * Fake trees (tests point the layout at a temp dir): mkdir there gives an
 * empty directory where cgroupfs would show knob files. Only in a sandbox
 * directory that is not on cgroupfs are required knobs created on first
 * write (O_CREAT|O_TRUNC); optional ones (memsw, memory.swap.max) are
 * skipped, no listed pid is ever signalled, and destroy empties the
 * directory before rmdir. On cgroupfs O_CREAT is never passed, so a missing
 * knob fails with ENOENT instead of being masked. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>

#include "cgroup/cgroup.h"
#include "base/clock.h"

/* the v2 dir + one per v1 controller + the commands' and init's own
 * memory cgroups below the sandbox's (see cgroup_cmds_fd) */
#define DIRS_MAX (CG_CONTROLLER_MAX + 3)
#define NAME_LEN_MAX 128
#define CPU_PERIOD_US 100000u
#define CPU_MILLIS_MIN 10u /* the kernel's minimum quota: 1 ms per period */
#define NSEC 1000000000ull
#define WAIT_NS (2 * NSEC)       /* bound for freeze, kill and destroy */
#define SPIN_MIN_NS 10000ull     /* 10 µs, doubled up to */
#define SPIN_MAX_NS 1000000ull   /* 1 ms */
#define RESWEEP_NS (50 * 1000000ull)
#define PROCS_MAX (16u << 20)

struct cg_dir {
	char *path;
	int fd; /* O_PATH|O_DIRECTORY, also the clone3 cgroup fd on v2 */
	enum cg_version version;
	bool fake; /* not on cgroupfs: a test tree */
};

struct cg_sandbox {
	struct cg_dir dir[DIRS_MAX];
	size_t n;
	int ctl[CG_CONTROLLER_MAX]; /* index in dir[] serving each controller, -1: none */
	int v2;                     /* index of the v2 directory, -1: none */
	bool v2_kill;
	bool v2_freeze;
	bool finished; /* cgroup_create_finish ran */
	bool cpu_pending; /* the CPU limit is still to be written (cgroup_create_cpu) */
	int oom_fd;    /* the OOM kill counter's file, kept open (read after each command), or -1 */
	int oom_cmds_fd; /* the same for the commands' cgroup (v1), or -1 */
	int cmds;      /* index of "<memory dir>/cmds" (the commands' memory limit), or -1 */
	int init_leaf; /* v2 memory only: index of "<v2 dir>/init" (init's own), or -1 */
	struct cg_limits lim;
	char leaf[sizeof("abox-") + NAME_LEN_MAX];
};

static void backoff(uint64_t *delay)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)*delay };
	nanosleep(&ts, NULL);
	*delay = *delay * 2 > SPIN_MAX_NS ? SPIN_MAX_NS : *delay * 2;
}

static int knob_write(const struct cg_dir *d, const char *file, const char *val, bool optional,
		      abox_error *err)
{
	int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY;
	if (d->fake && !optional)
		flags |= O_CREAT | O_TRUNC;
	_cleanup_close_ int fd = openat(d->fd, file, flags, 0644);
	if (fd < 0) {
		if (errno == ENOENT && optional)
			return 0;
		return abox_error_set(err, errno, "cgroup: open '%s/%s'", d->path, file);
	}
	int r = write_full(fd, val, strlen(val));
	if (r < 0)
		return abox_error_set(err, -r, "cgroup: write '%s' to '%s/%s'", val, d->path, file);
	return 0;
}

/* "key value" lookup in flat-keyed files (cgroup.events, memory.events,
 * memory.oom_control). */
static int kv_get(const char *text, const char *key, uint64_t *v)
{
	size_t n = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, n) != 0 || p[n] != ' ')
			continue;
		const char *s = p + n + 1;
		char *end;
		if (*s < '0' || *s > '9')
			return -EPROTO;
		errno = 0;
		unsigned long long x = strtoull(s, &end, 10);
		if (errno || (*end && *end != '\n'))
			return -EPROTO;
		*v = x;
		return 0;
	}
	return -ENOENT;
}

static bool list_has(const char *list, const char *tok)
{
	size_t n = strlen(tok);
	for (const char *p = list; (p = strstr(p, tok)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return true;
	return false;
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

static char *self_dir(const char *mount, const char *self)
{
	char *p = NULL;
	return asprintf(&p, "%s%s", mount, strcmp(self, "/") == 0 ? "" : self) < 0 ? NULL : p;
}

void cgroup_sandbox_free(struct cg_sandbox *cg)
{
	if (!cg)
		return;
	for (size_t i = 0; i < cg->n; i++) {
		closep(&cg->dir[i].fd);
		free(cg->dir[i].path);
	}
	closep(&cg->oom_fd);
	closep(&cg->oom_cmds_fd);
	free(cg);
}

/* Fake trees only: rmdir needs the knob files we created gone. */
static void clear_fake_dir(const struct cg_dir *d)
{
	int fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	for (struct dirent *de; (de = readdir(dir));)
		if (de->d_type != DT_DIR)
			(void)unlinkat(dirfd(dir), de->d_name, 0);
	closedir(dir);
}

/* Undoes a half-done create: nothing runs inside yet, so plain rmdir. */
static void sandbox_removep(struct cg_sandbox **p)
{
	struct cg_sandbox *cg = *p;
	if (!cg)
		return;
	for (size_t i = cg->n; i-- > 0;) {
		if (cg->dir[i].fake)
			clear_fake_dir(&cg->dir[i]);
		(void)rmdir(cg->dir[i].path);
	}
	cgroup_sandbox_free(cg);
}

/* mkdir <mount><self>/<leaf> and keep an fd on it. Hierarchies that
 * co-mount several controllers share one directory. Returns its index. */
static int add_dir(struct cg_sandbox *cg, const char *mount, const char *self, const char *leaf,
		   enum cg_version v, bool existing, abox_error *err)
{
	_cleanup_free_ char *parent = self_dir(mount, self);
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
	_cleanup_free_ char *dir = self_dir(l->v2_mount, l->v2_self), *cur = NULL;
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

/* The user's memory limit on the commands' cgroup, without swap past it. */
static int cmds_limit(struct cg_sandbox *cg, uint64_t bytes, abox_error *err)
{
	const struct cg_dir *d = &cg->dir[cg->cmds];
	bool v1 = d->version == CG_V1;
	char mem[24];
	snprintf(mem, sizeof(mem), "%" PRIu64, bytes);
	int r = knob_write(d, v1 ? "memory.limit_in_bytes" : "memory.max", mem, false, err);
	if (r >= 0)
		r = knob_write(d, v1 ? "memory.memsw.limit_in_bytes" : "memory.swap.max", v1 ? mem : "0", true, err);
	return r;
}

/* Writes the limits in lim that are set. Any failure fails the whole
 * create, so on success cg->lim (the request, from _begin) holds. */
static int write_limits(struct cg_sandbox *cg, const struct cg_limits *lim, abox_error *err)
{
	const struct cg_dir *m = lim->memory_bytes ? &cg->dir[cg->ctl[CG_MEMORY]] : NULL;
	const struct cg_dir *p = lim->pids ? &cg->dir[cg->ctl[CG_PIDS]] : NULL;
	const struct cg_dir *c = lim->cpu_millis ? &cg->dir[cg->ctl[CG_CPU]] : NULL;
	bool m1 = m && m->version == CG_V1, c1 = c && c->version == CG_V1;
	uint64_t quota = (uint64_t)lim->cpu_millis * CPU_PERIOD_US / 1000;
	char mem[24], pids[24], cpu[48];

	/* with a commands' cgroup below, the sandbox's own bound is the
	 * commands' limit plus init's headroom (see CG_INIT_HEADROOM) */
	uint64_t total = lim->memory_bytes + (cg->cmds >= 0 ? CG_INIT_HEADROOM : 0);
	snprintf(mem, sizeof(mem), "%" PRIu64, total);
	snprintf(pids, sizeof(pids), "%" PRIu64, lim->pids);
	if (c1)
		snprintf(cpu, sizeof(cpu), "%" PRIu64, quota);
	else
		snprintf(cpu, sizeof(cpu), "%" PRIu64 " %u", quota, CPU_PERIOD_US);
	const struct {
		const struct cg_dir *d;
		const char *file, *val;
		bool optional;
	} knobs[] = {
		{ m, m1 ? "memory.limit_in_bytes" : "memory.max", mem, false },
		/* no swap past the limit: v1 memsw counts memory + swap, so
		 * the same value leaves none; v2 limits swap separately */
		{ m, m1 ? "memory.memsw.limit_in_bytes" : "memory.swap.max", m1 ? mem : "0", true },
		{ p, "pids.max", pids, false },
		/* v1 cpu.cfs_period_us is not written: a new cgroup always
		 * starts at the kernel's default of 100 ms (not inherited) */
		{ c, c1 ? "cpu.cfs_quota_us" : "cpu.max", cpu, false },
	};
	for (size_t i = 0; i < ELEMENTSOF(knobs); i++) {
		if (!knobs[i].d)
			continue;
		int r = knob_write(knobs[i].d, knobs[i].file, knobs[i].val, knobs[i].optional, err);
		if (r < 0)
			return r;
	}
	/* v1: the commands' limit now; v2 needs the controller handed down
	 * first, once init has left the sandbox's directory (cgroup_nest_finish) */
	if (m1 && cg->cmds >= 0)
		return cmds_limit(cg, lim->memory_bytes, err);
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
	r = write_limits(cg, &lim, err);
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
	struct cg_limits lim = { .cpu_millis = cg->lim.cpu_millis };
	int r = write_limits(cg, &lim, err);
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

int cgroup_v2_fd(const struct cg_sandbox *cg)
{
	return cg && cg->v2 >= 0 ? cg->dir[cg->v2].fd : -1;
}

int cgroup_cmds_fd(const struct cg_sandbox *cg, abox_error *err)
{
	if (!cg || cg->cmds < 0)
		return -ENOENT;
	const struct cg_dir *d = &cg->dir[cg->cmds];
	int fd = d->version == CG_V1 ? openat(d->fd, "tasks", O_WRONLY | O_CLOEXEC | O_NOCTTY)
				     : openat(d->fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return abox_error_set(err, errno, "cgroup: open '%s'", d->path);
	return fd;
}

int cgroup_init_leaf_fd(const struct cg_sandbox *cg, abox_error *err)
{
	if (!cg || cg->init_leaf < 0)
		return -ENOENT;
	const struct cg_dir *d = &cg->dir[cg->init_leaf];
	int fd = openat(d->fd, "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOCTTY | (d->fake ? O_CREAT : 0), 0644);
	if (fd < 0)
		return abox_error_set(err, errno, "cgroup: open '%s/cgroup.procs'", d->path);
	return fd;
}

int cgroup_nest_finish(struct cg_sandbox *cg, abox_error *err)
{
	if (!cg || cg->init_leaf < 0 || cg->cmds < 0)
		return 0;
	/* init is in its leaf now: the sandbox's directory is empty of
	 * processes, so it may hand the memory controller down */
	int r = knob_write(&cg->dir[cg->v2], "cgroup.subtree_control", "+memory", false, err);
	if (r < 0)
		return r;
	return cmds_limit(cg, cg->lim.memory_bytes, err);
}

const struct cg_limits *cgroup_limits(const struct cg_sandbox *cg)
{
	return cg ? &cg->lim : NULL;
}

int cgroup_attach(struct cg_sandbox *cg, pid_t pid, bool include_v2, abox_error *err)
{
	char v[24];

	if (!cg || pid <= 0)
		return abox_error_setx(err, EINVAL, "cgroup: attach: invalid argument");
	snprintf(v, sizeof(v), "%d", (int)pid);
	for (size_t i = 0; i < cg->n; i++) {
		if (cg->dir[i].version == CG_V2 && !include_v2)
			continue;
		/* init's place: the sandbox's own directories, or its v2 leaf */
		if ((int)i == cg->cmds || (int)i == cg->init_leaf)
			continue;
		const struct cg_dir *d = (int)i == cg->v2 && cg->init_leaf >= 0 ? &cg->dir[cg->init_leaf] : &cg->dir[i];
		int r = knob_write(d, "cgroup.procs", v, false, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int cgroup_attach_v2(struct cg_sandbox *cg, pid_t pid, abox_error *err)
{
	char v[24];
	if (!cg || cg->v2 < 0)
		return 0;
	snprintf(v, sizeof(v), "%d", (int)pid);
	return knob_write(&cg->dir[cg->v2], "cgroup.procs", v, false, err);
}

int cgroup_open_self_attach(struct cg_sandbox *cg, int *fds, size_t max, size_t *n, abox_error *err)
{
	size_t k = 0;
	for (size_t i = 0; i < cg->n; i++) {
		if (cg->dir[i].version != CG_V1 || (int)i == cg->cmds)
			continue;
		if (k == max) {
			for (size_t j = 0; j < k; j++)
				close(fds[j]);
			return abox_error_setx(err, E2BIG, "cgroup: too many v1 hierarchies");
		}
		int fd = openat(cg->dir[i].fd, "tasks", O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			int e = errno;
			for (size_t j = 0; j < k; j++)
				close(fds[j]);
			return abox_error_set(err, e, "cgroup: open '%s/tasks'", cg->dir[i].path);
		}
		fds[k++] = fd;
	}
	*n = k;
	return 0;
}

/* The "oom_kill N" count of one memory cgroup, through a kept fd: read
 * after every command that ends, one pread instead of open, read, close. */
static int oom_read(const struct cg_dir *d, int *fd, uint64_t *n, abox_error *err)
{
	const char *file = d->version == CG_V1 ? "memory.oom_control" : "memory.events";
	if (*fd < 0)
		*fd = openat(d->fd, file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (*fd < 0)
		return abox_error_set(err, errno, "cgroup: open '%s/%s'", d->path, file);
	char text[1024];
	ssize_t got = pread(*fd, text, sizeof(text) - 1, 0);
	if (got < 0)
		return abox_error_set(err, errno, "cgroup: read '%s/%s'", d->path, file);
	text[got] = '\0';
	if (kv_get(text, "oom_kill", n) < 0)
		return abox_error_setx(err, EPROTO, "cgroup: no 'oom_kill N' line in '%s/%s'",
				       d->path, file);
	return 0;
}

int cgroup_oom_kills(struct cg_sandbox *cg, uint64_t *out, abox_error *err)
{
	uint64_t n;

	if (!cg || !out)
		return abox_error_setx(err, EINVAL, "cgroup: oom count: invalid argument");
	if (cg->ctl[CG_MEMORY] < 0)
		return abox_error_setx(err, EOPNOTSUPP,
				       "cgroup: no memory controller, OOM kills are not counted");
	const struct cg_dir *d = &cg->dir[cg->ctl[CG_MEMORY]];
	int r = oom_read(d, &cg->oom_fd, &n, err);
	/* v1 counts kills in the cgroup itself only, v2 in its whole
	 * subtree: on v1 the commands' own count is added */
	if (r >= 0 && cg->cmds >= 0 && d->version == CG_V1) {
		uint64_t k;
		r = oom_read(&cg->dir[cg->cmds], &cg->oom_cmds_fd, &k, err);
		n += k;
	}
	if (r < 0)
		return r;
	*out = n;
	return 0;
}

static bool state_is(const struct cg_dir *d, const char *buf, bool frozen)
{
	uint64_t v;
	if (d->version == CG_V2)
		return kv_get(buf, "frozen", &v) == 0 && v == (frozen ? 1 : 0);
	/* v1 reads FREEZING until every task has stopped */
	return strncmp(buf, frozen ? "FROZEN" : "THAWED", 6) == 0;
}

/* Writes the new state and re-reads the state file until the kernel reports
 * it. We do not wait on cgroup.events notifications: they are rate-limited
 * to one per 10 ms, far slower than an idle freeze (a few µs on v2). */
static int set_frozen(const struct cg_dir *d, bool frozen, uint64_t deadline, abox_error *err)
{
	bool v2 = d->version == CG_V2;
	const char *knob = v2 ? "cgroup.freeze" : "freezer.state";
	const char *state = v2 ? "cgroup.events" : "freezer.state";
	const char *val = v2 ? (frozen ? "1" : "0") : (frozen ? "FROZEN" : "THAWED");
	uint64_t delay = SPIN_MIN_NS;
	char buf[256];

	int r = knob_write(d, knob, val, false, err);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = openat(d->fd, state, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return abox_error_set(err, errno, "cgroup: open '%s/%s'", d->path, state);
	for (;;) {
		/* pread at offset 0 makes kernfs render the file afresh */
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return abox_error_set(err, errno, "cgroup: read '%s/%s'", d->path, state);
		}
		buf[n] = '\0';
		if (state_is(d, buf, frozen))
			return 0;
		if (clock_mono_ns() >= deadline)
			break;
		backoff(&delay);
		/* v1 can miss tasks forked while FREEZING; writing FROZEN again
		 * makes the kernel retry them (runc does the same) */
		if (!v2 && frozen && delay == SPIN_MAX_NS) {
			r = knob_write(d, knob, val, false, err);
			if (r < 0)
				return r;
		}
	}
	/* do not leave a half-frozen sandbox behind */
	if (frozen)
		(void)knob_write(d, knob, v2 ? "0" : "THAWED", false, NULL);
	return abox_error_setx(err, ETIMEDOUT, "cgroup: '%s' did not become %s in time", d->path,
			       frozen ? "frozen" : "thawed");
}

const char *cgroup_freezer_dir(const struct cg_sandbox *cg)
{
	return cg && cg->ctl[CG_FREEZER] >= 0 ? cg->dir[cg->ctl[CG_FREEZER]].path : NULL;
}

int cgroup_freeze(struct cg_sandbox *cg, bool frozen, abox_error *err)
{
	if (!cg)
		return abox_error_setx(err, EINVAL, "cgroup: freeze: invalid argument");
	if (cg->ctl[CG_FREEZER] < 0)
		return abox_error_setx(err, EOPNOTSUPP,
				       "cgroup: no freezer (no v2 cgroup.freeze, no v1 freezer "
				       "hierarchy)");
	return set_frozen(&cg->dir[cg->ctl[CG_FREEZER]], frozen, clock_mono_ns() + WAIT_NS, err);
}

/* SIGKILLs every task listed in the selected directories. Returns how many
 * were listed. */
static int signal_tasks(struct cg_sandbox *cg, const bool *only, abox_error *err)
{
	int found = 0;
	pid_t self = getpid();

	for (size_t i = 0; i < cg->n; i++) {
		const struct cg_dir *d = &cg->dir[i];
		_cleanup_free_ char *procs = NULL;
		if (d->fake || (only && !only[i]))
			continue;
		int r = read_file_at(d->fd, "cgroup.procs", PROCS_MAX, &procs, NULL);
		if (r == -ENOENT)
			continue; /* already removed: nothing inside */
		if (r < 0)
			return abox_error_set(err, -r, "cgroup: read '%s/cgroup.procs'", d->path);
		for (char *p = procs, *end; *p; p = end) {
			long pid = strtol(p, &end, 10);
			if (end == p || pid <= 0)
				return abox_error_setx(err, EPROTO, "cgroup: bad pid in '%s/cgroup.procs'",
						       d->path);
			while (*end == '\n')
				end++;
			if (pid == self)
				return abox_error_setx(err, EDEADLK,
						       "cgroup: the caller itself is in '%s'", d->path);
			if (kill((pid_t)pid, SIGKILL) < 0 && errno != ESRCH)
				return abox_error_set(err, errno, "cgroup: kill %ld in '%s'", pid,
						      d->path);
			found++;
		}
	}
	return found;
}

/* The kill procedure without cgroup.kill: freeze, so nothing forks and no
 * listed pid can exit and be reused by an unrelated process before we
 * signal it; SIGKILL every listed task; thaw, because tasks frozen by the
 * v1 freezer act on SIGKILL only once thawed; repeat until empty. */
static int sweep(struct cg_sandbox *cg, const bool *only, uint64_t deadline, abox_error *err)
{
	uint64_t delay = SPIN_MIN_NS;
	int fz = cg->ctl[CG_FREEZER];
	const struct cg_dir *fdir = fz >= 0 && !cg->dir[fz].fake ? &cg->dir[fz] : NULL;

	for (;;) {
		if (fdir) {
			/* best effort: a task in D state can hold v1 in
			 * FREEZING; then kill without the guarantee */
			uint64_t t = clock_mono_ns() + RESWEEP_NS;
			(void)set_frozen(fdir, true, t < deadline ? t : deadline, NULL);
		}
		int found = signal_tasks(cg, only, err);
		if (fdir)
			(void)set_frozen(fdir, false, deadline, NULL);
		if (found <= 0)
			return found;
		if (clock_mono_ns() >= deadline)
			return abox_error_setx(err, ETIMEDOUT, "cgroup: tasks of '%s' survived SIGKILL",
					       cg->dir[0].path);
		backoff(&delay);
	}
}

int cgroup_kill(struct cg_sandbox *cg, abox_error *err)
{
	if (!cg)
		return abox_error_setx(err, EINVAL, "cgroup: kill: invalid argument");
	if (cg->v2_kill) {
		/* race-free: the kernel signals every task and fails forks meanwhile */
		int r = knob_write(&cg->dir[cg->v2], "cgroup.kill", "1", false, err);
		if (r >= 0) {
			int fz = cg->ctl[CG_FREEZER];
			if (fz >= 0 && cg->dir[fz].version == CG_V1)
				r = set_frozen(&cg->dir[fz], false, clock_mono_ns() + WAIT_NS, err);
			return r;
		}
	}
	int r = sweep(cg, NULL, clock_mono_ns() + WAIT_NS, err);
	return r < 0 ? r : 0;
}

int cgroup_destroy(struct cg_sandbox *cg, abox_error *err)
{
	bool left[DIRS_MAX];
	uint64_t delay = SPIN_MIN_NS, last_sweep, deadline;
	const char *busy;
	int r = 0;

	if (!cg)
		return 0;
	/* Errors of the kill show up below as directories that stay busy. */
	(void)cgroup_kill(cg, NULL);
	last_sweep = clock_mono_ns();
	deadline = last_sweep + WAIT_NS;
	for (size_t i = 0; i < DIRS_MAX; i++)
		left[i] = i < cg->n;
	for (;; backoff(&delay)) {
		busy = NULL;
		/* backwards: nested directories come after their parents */
		for (size_t i = cg->n; i-- > 0;) {
			if (!left[i])
				continue;
			if (cg->dir[i].fake)
				clear_fake_dir(&cg->dir[i]);
			int e = rmdir(cg->dir[i].path) < 0 ? errno : 0;
			if (e == EBUSY) {
				busy = busy ? busy : cg->dir[i].path;
				continue;
			}
			left[i] = false;
			if (e && e != ENOENT && r == 0)
				r = abox_error_set(err, e, "cgroup: rmdir '%s'", cg->dir[i].path);
		}
		if (!busy)
			break;
		uint64_t now = clock_mono_ns();
		if (now >= deadline) {
			if (r == 0)
				r = abox_error_setx(err, EBUSY,
						    "cgroup: '%s' still has tasks 2 s after SIGKILL", busy);
			break;
		}
		/* Killed tasks leave within a millisecond or so. Anything still
		 * there escaped cgroup.kill (attached to v1 only): sweep it. */
		if (now - last_sweep >= RESWEEP_NS) {
			(void)sweep(cg, left, deadline, NULL);
			last_sweep = clock_mono_ns();
		}
	}
	cgroup_sandbox_free(cg);
	return r;
}

static int read_u64(const struct cg_dir *d, const char *file, uint64_t *v)
{
	char buf[64];
	_cleanup_close_ int fd = openat(d->fd, file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EPROTO;
	buf[n] = '\0';
	if (strncmp(buf, "max", 3) == 0) {
		*v = UINT64_MAX;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long x = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EPROTO;
	*v = x;
	return 0;
}

int cgroup_stats(struct cg_sandbox *cg, struct cg_stats *out, abox_error *err)
{
	struct cg_stats st = { .cpu_usec = UINT64_MAX, .mem_current = UINT64_MAX, .mem_limit = UINT64_MAX,
			       .pids_current = UINT64_MAX };
	if (!cg || !out)
		return abox_error_setx(err, EINVAL, "cgroup: stats: invalid argument");
	/* CPU time: v2 keeps cpu.stat in every cgroup, with or without the
	 * cpu controller; on v1 only cpuacct counts it */
	_cleanup_free_ char *text = NULL;
	if (cg->v2 >= 0 && read_file_at(cg->dir[cg->v2].fd, "cpu.stat", 4096, &text, NULL) == 0)
		(void)kv_get(text, "usage_usec", &st.cpu_usec);
	if (st.cpu_usec == UINT64_MAX && cg->ctl[CG_CPU] >= 0 && cg->dir[cg->ctl[CG_CPU]].version == CG_V1) {
		uint64_t ns;
		if (read_u64(&cg->dir[cg->ctl[CG_CPU]], "cpuacct.usage", &ns) == 0)
			st.cpu_usec = ns / 1000;
	}
	if (cg->ctl[CG_MEMORY] >= 0) {
		const struct cg_dir *d = &cg->dir[cg->ctl[CG_MEMORY]];
		bool v1 = d->version == CG_V1;
		(void)read_u64(d, v1 ? "memory.usage_in_bytes" : "memory.current", &st.mem_current);
		/* the user's limit is the commands' (the sandbox's own adds
		 * init's headroom) */
		const struct cg_dir *ld = cg->cmds >= 0 ? &cg->dir[cg->cmds] : d;
		(void)read_u64(ld, v1 ? "memory.limit_in_bytes" : "memory.max", &st.mem_limit);
		/* "file" (v2) and "total_cache" (v1) count tmpfs and shared
		 * memory too: those are "shmem", and stay memory use */
		_cleanup_free_ char *ms = NULL;
		uint64_t file = 0, shmem = 0;
		if (read_file_at(d->fd, "memory.stat", 16384, &ms, NULL) == 0 &&
		    kv_get(ms, v1 ? "total_cache" : "file", &file) == 0 &&
		    kv_get(ms, v1 ? "total_shmem" : "shmem", &shmem) == 0 && file > shmem)
			st.mem_file = file - shmem;
	}
	if (cg->ctl[CG_PIDS] >= 0)
		(void)read_u64(&cg->dir[cg->ctl[CG_PIDS]], "pids.current", &st.pids_current);
	*out = st;
	return 0;
}
