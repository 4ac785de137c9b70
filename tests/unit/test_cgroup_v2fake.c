/* Unit tests of cgroup_create & co. against FAKE trees in a temp dir.
 *
 * How the fake works: the layout is parsed with fs_prefix = the temp dir,
 * so every path the module touches is inside it. The test makes the files
 * the kernel shows in the caller's cgroup (cgroup.controllers,
 * cgroup.subtree_control, ...). For the sandbox's own directory mkdir gives
 * an empty directory on a normal filesystem; the module notices it is not on
 * cgroupfs and creates required knobs on first write (optional knobs such
 * as memory.swap.max are skipped), never signals a pid listed there, and
 * empties the directory before rmdir. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "scratch.h"

static char root[64];
static struct cg_layout L;
static struct cg_sandbox *cg;

static void setup(void)
{
	strcpy(root, "/tmp/cgf-XXXXXX");
	scratch_make(root);
	memset(&L, 0, sizeof(L));
	cg = NULL;
}

static void teardown(void)
{
	cgroup_sandbox_free(cg);
	cgroup_layout_free(&L);
	scratch_remove(root);
}

TestSuite(cgroup_v2fake, .init = setup, .fini = teardown);

static const char *P(const char *rel)
{
	return scratch_path(root, rel);
}

static void put(const char *rel, const char *content)
{
	scratch_put(root, rel, content);
}

/* Contents of a file in the tree, "<absent>" when it does not exist. */
static const char *get(const char *rel)
{
	static char buf[4][256];
	static int i;
	i = (i + 1) % 4;
	FILE *f = fopen(P(rel), "r");
	if (!f)
		return "<absent>";
	size_t n = fread(buf[i], 1, sizeof(buf[i]) - 1, f);
	buf[i][n] = '\0';
	fclose(f);
	return buf[i];
}

static bool exists(const char *rel)
{
	struct stat st;
	return stat(P(rel), &st) == 0;
}

static const char v2_mi[] = "25 22 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 "
			    "- cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n";
#define SELF "sys/fs/cgroup/deleg.slice/svc.scope"

/* A pure v2 host, the caller delegated at /deleg.slice/svc.scope. */
static void v2_host(const char *controllers, const char *subtree)
{
	abox_error err = ABOX_ERROR_INIT;
	put("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids\n");
	put("sys/fs/cgroup/cgroup.subtree_control", "cpuset cpu io memory pids\n");
	put(SELF "/cgroup.controllers", controllers);
	put(SELF "/cgroup.subtree_control", subtree);
	put(SELF "/cgroup.freeze", "0\n");
	put(SELF "/cgroup.kill", "");
	cr_assert_eq(cgroup_layout_parse(v2_mi, "0::/deleg.slice/svc.scope\n", root, &L, &err), 0,
		     "%s", err.msg);
}

static void create_ok(const char *name, struct cg_limits lim)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(cgroup_create(&L, name, &lim, &cg, &err), 0, "%s", err.msg);
	cr_assert_not_null(cg);
}

static void destroy_ok(void)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(cgroup_destroy(TAKE_PTR(cg), &err), 0, "%s", err.msg);
}

Test(cgroup_v2fake, limits_written_and_removed)
{
	v2_host("cpu io memory pids\n", "");
	create_ok("fake1", (struct cg_limits){ .memory_bytes = 512ull << 20, .pids = 100,
					       .cpu_millis = 1000 });
	cr_assert_str_eq(get(SELF "/cgroup.subtree_control"), "+memory +pids +cpu");
	/* the sandbox's own bound: the limit plus init's headroom; the
	 * commands' cgroup gets the limit once init is in its own leaf */
	cr_assert_str_eq(get(SELF "/abox-fake1/memory.max"), "603979776");
	cr_assert(exists(SELF "/abox-fake1/init"));
	cr_assert(exists(SELF "/abox-fake1/cmds"));
	cr_assert_str_eq(get(SELF "/abox-fake1/cmds/memory.max"), "<absent>");
	abox_error err = ABOX_ERROR_INIT;
	int leaf = cgroup_init_leaf_fd(cg, &err);
	cr_assert_geq(leaf, 0, "%s", err.msg);
	close(leaf);
	cr_assert_eq(cgroup_nest_finish(cg, &err), 0, "%s", err.msg);
	cr_assert_str_eq(get(SELF "/abox-fake1/cgroup.subtree_control"), "+memory");
	char plan[8192];
	cr_assert_eq(cgroup_planned_dirs(&L, "fake1", plan, sizeof(plan), &err), 0, "%s", err.msg);
	char *pc = strstr(plan, "/abox-fake1/cmds\n"), *pi = strstr(plan, "/abox-fake1/init\n"),
	     *pp = strstr(plan, "/abox-fake1\n");
	cr_assert(pc && pi && pp && pc < pp && pi < pp, "%s", plan);
	cr_assert_str_eq(get(SELF "/abox-fake1/cmds/memory.max"), "536870912");
	/* init starts commands there with clone3(CLONE_INTO_CGROUP) */
	int cfd = cgroup_cmds_fd(cg, &err);
	struct stat cs, cd;
	cr_assert_geq(cfd, 0, "%s", err.msg);
	cr_assert_eq(fstat(cfd, &cs), 0);
	cr_assert_eq(stat(P(SELF "/abox-fake1/cmds"), &cd), 0);
	cr_assert(cs.st_ino == cd.st_ino);
	close(cfd);
	cr_assert_str_eq(get(SELF "/abox-fake1/pids.max"), "100");
	cr_assert_str_eq(get(SELF "/abox-fake1/cpu.max"), "100000 100000");
	/* optional knob: absent on a fake tree, so not created */
	cr_assert_str_eq(get(SELF "/abox-fake1/memory.swap.max"), "<absent>");

	const struct cg_limits *lim = cgroup_limits(cg);
	cr_assert_eq(lim->memory_bytes, 512ull << 20);
	cr_assert_eq(lim->pids, 100);
	cr_assert_eq(lim->cpu_millis, 1000);

	struct stat a, b;
	int fd = cgroup_v2_fd(cg);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &a), 0);
	cr_assert_eq(stat(P(SELF "/abox-fake1"), &b), 0);
	cr_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);

	destroy_ok();
	cr_assert_not(exists(SELF "/abox-fake1"));
	/* controllers stay enabled for the siblings */
	cr_assert_str_eq(get(SELF "/cgroup.subtree_control"), "+memory +pids +cpu");
	cr_assert(exists(SELF "/cgroup.controllers"));
}

/* the creator writes the CPU limit after handing the cgroups to the
 * child (spawn.c): finish leaves it, cgroup_create_cpu writes it once */
Test(cgroup_v2fake, cpu_limit_deferred)
{
	v2_host("cpu io memory pids\n", "");
	abox_error err = ABOX_ERROR_INIT;
	struct cg_limits want = { .memory_bytes = 64ull << 20, .pids = 10, .cpu_millis = 500 };
	cr_assert_eq(cgroup_create_begin(&L, "late", &want, &cg, &err), 0, "%s", err.msg);
	cr_assert_eq(cgroup_create_finish(&L, cg, true, &err), 0, "%s", err.msg);
	cr_assert_str_eq(get(SELF "/abox-late/memory.max"), "134217728");
	cr_assert_str_eq(get(SELF "/abox-late/pids.max"), "10");
	cr_assert_str_eq(get(SELF "/abox-late/cpu.max"), "<absent>");
	cr_assert_eq(cgroup_limits(cg)->cpu_millis, 500);
	cr_assert_eq(cgroup_limits(cg)->memory_bytes, 64ull << 20);
	cr_assert_eq(cgroup_create_cpu(cg, &err), 0, "%s", err.msg);
	cr_assert_str_eq(get(SELF "/abox-late/cpu.max"), "50000 100000");
	cr_assert_str_eq(get(SELF "/abox-late/memory.max"), "134217728");
	/* once only: a second call writes nothing */
	cr_assert_eq(unlink(P(SELF "/abox-late/cpu.max")), 0);
	cr_assert_eq(cgroup_create_cpu(cg, &err), 0, "%s", err.msg);
	cr_assert_str_eq(get(SELF "/abox-late/cpu.max"), "<absent>");
	cr_assert_eq(cgroup_limits(cg)->pids, 10);
	destroy_ok();
}

Test(cgroup_v2fake, cpu_quota_scaling)
{
	static const struct {
		uint32_t millis;
		const char *want;
	} cases[] = { { 2500, "250000 100000" }, { 10, "1000 100000" }, { 333, "33300 100000" } };
	v2_host("cpu\n", "");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		create_ok("cpu", (struct cg_limits){ .cpu_millis = cases[i].millis });
		cr_assert_str_eq(get(SELF "/abox-cpu/cpu.max"), cases[i].want);
		cr_assert_str_eq(get(SELF "/abox-cpu/memory.max"), "<absent>");
		destroy_ok();
	}
	cr_assert_str_eq(get(SELF "/cgroup.subtree_control"), "+cpu");
}

Test(cgroup_v2fake, cpu_below_kernel_minimum)
{
	abox_error err = ABOX_ERROR_INIT;
	v2_host("cpu\n", "");
	cr_assert_eq(cgroup_create(&L, "c", &(struct cg_limits){ .cpu_millis = 5 }, &cg, &err),
		     -EINVAL);
	cr_assert_null(cg);
	cr_assert_not(exists(SELF "/abox-c"));
	cr_assert_str_eq(get(SELF "/cgroup.subtree_control"), "");
}

/* Already enabled: nothing is written (a write would make the kernel walk
 * every existing sandbox). */
Test(cgroup_v2fake, enabled_controllers_are_not_rewritten)
{
	v2_host("cpu memory pids\n", "memory pids cpu\n");
	create_ok("x", (struct cg_limits){ .memory_bytes = 1 << 30 });
	cr_assert_str_eq(get(SELF "/cgroup.subtree_control"), "memory pids cpu\n");
	destroy_ok();
}

Test(cgroup_v2fake, only_missing_controllers_enabled)
{
	v2_host("cpu memory pids\n", "memory\n");
	create_ok("x", (struct cg_limits){ 0 });
	cr_assert_str_eq(get(SELF "/cgroup.subtree_control"), "+pids +cpu");
	destroy_ok();
}

Test(cgroup_v2fake, no_limits_writes_no_knobs)
{
	v2_host("cpu memory pids\n", "");
	cr_assert_eq(cgroup_create(&L, "nolim", NULL, &cg, NULL), 0);
	cr_assert(exists(SELF "/abox-nolim"));
	cr_assert_str_eq(get(SELF "/abox-nolim/memory.max"), "<absent>");
	cr_assert_str_eq(get(SELF "/abox-nolim/pids.max"), "<absent>");
	const struct cg_limits *lim = cgroup_limits(cg);
	cr_assert(lim->memory_bytes == 0 && lim->pids == 0 && lim->cpu_millis == 0);
	destroy_ok();
}

Test(cgroup_v2fake, limit_without_controller_names_it)
{
	abox_error err = ABOX_ERROR_INIT;
	v2_host("memory pids\n", "");
	int r = cgroup_create(&L, "x", &(struct cg_limits){ .pids = 5, .cpu_millis = 500 }, &cg,
			      &err);
	cr_assert_eq(r, -EOPNOTSUPP);
	cr_assert_not_null(strstr(err.msg, "cpu"), "%s", err.msg);
	cr_assert_null(cg);
	cr_assert_not(exists(SELF "/abox-x"));
}

/* The hierarchy root is never written: missing controllers there are an
 * error; present ones are used as they are. */
Test(cgroup_v2fake, root_subtree_control_is_never_written)
{
	abox_error err = ABOX_ERROR_INIT;
	put("sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
	put("sys/fs/cgroup/cgroup.subtree_control", "memory\n");
	cr_assert_eq(cgroup_layout_parse(v2_mi, "0::/\n", root, &L, &err), 0, "%s", err.msg);
	cr_assert_eq(cgroup_create(&L, "r", NULL, &cg, &err), -EPERM);
	cr_assert_not_null(strstr(err.msg, "hierarchy root"), "%s", err.msg);
	cr_assert_not_null(strstr(err.msg, "+pids +cpu"), "%s", err.msg);
	cr_assert_str_eq(get("sys/fs/cgroup/cgroup.subtree_control"), "memory\n");
	cr_assert_not(exists("sys/fs/cgroup/abox-r"));

	put("sys/fs/cgroup/cgroup.subtree_control", "cpuset cpu io memory pids\n");
	create_ok("r", (struct cg_limits){ .pids = 7 });
	cr_assert_str_eq(get("sys/fs/cgroup/abox-r/pids.max"), "7");
	cr_assert_str_eq(get("sys/fs/cgroup/cgroup.subtree_control"), "cpuset cpu io memory pids\n");
	destroy_ok();
	cr_assert_not(exists("sys/fs/cgroup/abox-r"));
}

Test(cgroup_v2fake, bad_names_rejected)
{
	static const char *bad[] = { "", "../evil", "a/b", "a\nb", "a:b", "a b", NULL };
	char longname[200];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	v2_host("memory\n", "");
	for (size_t i = 0; bad[i]; i++) {
		abox_error err = ABOX_ERROR_INIT;
		cr_assert_eq(cgroup_create(&L, bad[i], NULL, &cg, &err), -EINVAL, "'%s'", bad[i]);
		cr_assert_null(cg);
	}
	cr_assert_eq(cgroup_create(&L, longname, NULL, &cg, NULL), -EINVAL);
	cr_assert_eq(cgroup_create(&L, NULL, NULL, &cg, NULL), -EINVAL);
	cr_assert_eq(cgroup_create(NULL, "x", NULL, &cg, NULL), -EINVAL);
	cr_assert_eq(cgroup_create(&L, "x", NULL, NULL, NULL), -EINVAL);
}

Test(cgroup_v2fake, same_name_twice_is_eexist)
{
	abox_error err = ABOX_ERROR_INIT;
	struct cg_sandbox *second = NULL;
	v2_host("memory\n", "");
	create_ok("dup", (struct cg_limits){ .memory_bytes = 4096 });
	cr_assert_eq(cgroup_create(&L, "dup", NULL, &second, &err), -EEXIST);
	cr_assert_null(second);
	cr_assert_not_null(strstr(err.msg, "abox-dup"), "%s", err.msg);
	/* the failed create must not remove the first sandbox's directory */
	cr_assert_str_eq(get(SELF "/abox-dup/memory.max"), "67112960");
	destroy_ok();
}

/* Fake directories are never signalled: our own pid written to the fake
 * cgroup.procs must survive destroy. */
Test(cgroup_v2fake, attach_writes_procs_and_destroy_signals_nothing)
{
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	v2_host("memory\n", "");
	create_ok("att", (struct cg_limits){ 0 });
	cr_assert_eq(cgroup_attach(cg, getpid(), false, NULL), 0);
	cr_assert_str_eq(get(SELF "/abox-att/cgroup.procs"), "<absent>");
	cr_assert_eq(cgroup_attach(cg, getpid(), true, NULL), 0);
	cr_assert_str_eq(get(SELF "/abox-att/cgroup.procs"), pid);
	cr_assert_eq(cgroup_attach(cg, 0, true, NULL), -EINVAL);
	cr_assert_eq(cgroup_kill(cg, NULL), 0);
	destroy_ok();
	cr_assert_not(exists(SELF "/abox-att"));
}

Test(cgroup_v2fake, oom_kills_from_memory_events)
{
	abox_error err = ABOX_ERROR_INIT;
	uint64_t n = 99;
	v2_host("memory\n", "");
	create_ok("oom", (struct cg_limits){ .memory_bytes = 1 << 20 });
	cr_assert_eq(cgroup_oom_kills(cg, &n, &err), -ENOENT);
	cr_assert_eq(n, 99, "output written on failure");
	put(SELF "/abox-oom/memory.events", "low 0\nhigh 0\nmax 7\noom 3\noom_kill 2\n"
					    "oom_group_kill 0\n");
	cr_assert_eq(cgroup_oom_kills(cg, &n, &err), 0, "%s", err.msg);
	cr_assert_eq(n, 2);
	put(SELF "/abox-oom/memory.events", "low 0\noom 3\n");
	cr_assert_eq(cgroup_oom_kills(cg, &n, &err), -EPROTO);
	destroy_ok();
}

/* cgroup.freeze is checked on the sandbox's own directory; a fake one has
 * none, and with no v1 freezer there is no freezer at all. */
Test(cgroup_v2fake, no_freezer_is_reported)
{
	abox_error err = ABOX_ERROR_INIT;
	v2_host("memory\n", "");
	cr_assert_eq(L.use[CG_FREEZER], CG_V2);
	create_ok("fz", (struct cg_limits){ 0 });
	cr_assert_eq(cgroup_freeze(cg, true, &err), -EOPNOTSUPP);
	cr_assert_not_null(strstr(err.msg, "freezer"), "%s", err.msg);
	uint64_t n;
	cgroup_layout_free(&L);
	destroy_ok();
	/* a sandbox without a memory controller has no OOM count */
	v2_host("pids\n", "");
	create_ok("nomem", (struct cg_limits){ 0 });
	cr_assert_eq(cgroup_oom_kills(cg, &n, &err), -EOPNOTSUPP);
	destroy_ok();
}

/* A hand-made layout that names a hierarchy without its paths. */
Test(cgroup_v2fake, inconsistent_layout_rejected)
{
	abox_error err = ABOX_ERROR_INIT;
	struct cg_layout bad = { .use = { [CG_MEMORY] = CG_V2 } };
	cr_assert_eq(cgroup_create(&bad, "x", NULL, &cg, &err), -EINVAL);
	cr_assert_not_null(strstr(err.msg, "memory"), "%s", err.msg);
	bad.use[CG_MEMORY] = CG_V1;
	cr_assert_eq(cgroup_create(&bad, "x", NULL, &cg, &err), -EINVAL);
	cr_assert_null(cg);
}

Test(cgroup_v2fake, null_handles)
{
	cr_assert_eq(cgroup_v2_fd(NULL), -1);
	cr_assert_null(cgroup_limits(NULL));
	cr_assert_eq(cgroup_destroy(NULL, NULL), 0);
	cgroup_sandbox_free(NULL);
	cr_assert_eq(cgroup_freeze(NULL, true, NULL), -EINVAL);
	cr_assert_eq(cgroup_kill(NULL, NULL), -EINVAL);
	cr_assert_eq(cgroup_attach(NULL, 1, true, NULL), -EINVAL);
}

/* Hybrid fake (this machine's shape): v1 memory/pids/cpu/freezer, a cgroup2
 * mount with no controllers. */
static const char hybrid_mi[] =
	"32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
	"35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	"37 31 0:34 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n"
	"39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
static const char hybrid_self[] = "8:pids:/\n4:memory:/api/18b\n1:cpu:/\n6:freezer:/\n0::/\n";

static void hybrid_host(bool memory_parent)
{
	abox_error err = ABOX_ERROR_INIT;
	put("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
	put("sys/fs/cgroup/unified/cgroup.subtree_control", "");
	put("sys/fs/cgroup/cpu/tasks", "");
	put("sys/fs/cgroup/freezer/tasks", "");
	put("sys/fs/cgroup/pids/tasks", "");
	if (memory_parent)
		put("sys/fs/cgroup/memory/api/18b/tasks", "");
	put("proc/sys/kernel/osrelease", "6.18.0\n");
	cr_assert_eq(cgroup_layout_parse(hybrid_mi, hybrid_self, root, &L, &err), 0, "%s",
		     err.msg);
}

Test(cgroup_v2fake, hybrid_v1_limits_and_freezer_fallback)
{
	abox_error err = ABOX_ERROR_INIT;
	uint64_t n;
	hybrid_host(true);
	create_ok("hy", (struct cg_limits){ .memory_bytes = 64 << 20, .pids = 32,
					    .cpu_millis = 1500 });
	/* v1: init stays in the sandbox's directory (limit + headroom), the
	 * commands' cgroup below it has the limit; no init leaf */
	cr_assert_str_eq(get("sys/fs/cgroup/memory/api/18b/abox-hy/memory.limit_in_bytes"),
			 "134217728");
	cr_assert_str_eq(get("sys/fs/cgroup/memory/api/18b/abox-hy/cmds/memory.limit_in_bytes"),
			 "67108864");
	cr_assert_not(exists("sys/fs/cgroup/memory/api/18b/abox-hy/init"));
	cr_assert_not(exists("sys/fs/cgroup/pids/abox-hy/cmds"));
	cr_assert_eq(cgroup_init_leaf_fd(cg, NULL), -ENOENT);
	cr_assert_eq(cgroup_nest_finish(cg, &err), 0, "%s", err.msg);
	/* the plan gc removes from lists the commands' cgroup before its
	 * parent (rmdir of a parent with a child fails) */
	char plan[8192];
	cr_assert_eq(cgroup_planned_dirs(&L, "hy", plan, sizeof(plan), &err), 0, "%s", err.msg);
	char *c = strstr(plan, "/memory/api/18b/abox-hy/cmds\n"), *m = strstr(plan, "/memory/api/18b/abox-hy\n");
	cr_assert(c && m && c < m, "%s", plan);
	cr_assert_null(strstr(plan, "/init\n"), "%s", plan);
	cr_assert_null(strstr(plan, "pids/abox-hy/cmds"), "%s", plan);
	cr_assert_str_eq(get("sys/fs/cgroup/memory/api/18b/abox-hy/memory.memsw.limit_in_bytes"),
			 "<absent>");
	cr_assert_str_eq(get("sys/fs/cgroup/pids/abox-hy/pids.max"), "32");
	/* the period is the kernel's default for a new cgroup: not written */
	cr_assert_str_eq(get("sys/fs/cgroup/cpu/abox-hy/cpu.cfs_period_us"), "<absent>");
	cr_assert_str_eq(get("sys/fs/cgroup/cpu/abox-hy/cpu.cfs_quota_us"), "150000");
	cr_assert(exists("sys/fs/cgroup/unified/abox-hy"));
	/* no v2 controller needed: the unified root is left alone */
	cr_assert_str_eq(get("sys/fs/cgroup/unified/cgroup.subtree_control"), "");
	/* the fake v2 dir has no cgroup.freeze: the v1 freezer takes over */
	cr_assert(exists("sys/fs/cgroup/freezer/abox-hy"));
	cr_assert_eq(cgroup_freeze(cg, true, &err), 0, "%s", err.msg);
	cr_assert_str_eq(get("sys/fs/cgroup/freezer/abox-hy/freezer.state"), "FROZEN");
	cr_assert_eq(cgroup_freeze(cg, false, &err), 0, "%s", err.msg);
	cr_assert_str_eq(get("sys/fs/cgroup/freezer/abox-hy/freezer.state"), "THAWED");

	put("sys/fs/cgroup/memory/api/18b/abox-hy/memory.oom_control",
	    "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n");
	put("sys/fs/cgroup/memory/api/18b/abox-hy/cmds/memory.oom_control",
	    "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
	/* v1 counts per cgroup: the commands' kills are added */
	cr_assert_eq(cgroup_oom_kills(cg, &n, &err), 0, "%s", err.msg);
	cr_assert_eq(n, 7);

	destroy_ok();
	cr_assert_not(exists("sys/fs/cgroup/memory/api/18b/abox-hy"));
	cr_assert_not(exists("sys/fs/cgroup/pids/abox-hy"));
	cr_assert_not(exists("sys/fs/cgroup/cpu/abox-hy"));
	cr_assert_not(exists("sys/fs/cgroup/freezer/abox-hy"));
	cr_assert_not(exists("sys/fs/cgroup/unified/abox-hy"));
}

/* A failure half-way (the memory parent is missing) removes what was made. */
Test(cgroup_v2fake, failed_create_leaves_nothing)
{
	abox_error err = ABOX_ERROR_INIT;
	hybrid_host(false);
	cr_assert_eq(cgroup_create(&L, "half", NULL, &cg, &err), -ENOENT);
	cr_assert_not_null(strstr(err.msg, "memory/api/18b/abox-half"), "%s", err.msg);
	cr_assert_null(cg);
	cr_assert_not(exists("sys/fs/cgroup/unified/abox-half"));
	cr_assert_not(exists("sys/fs/cgroup/pids/abox-half"));
	cr_assert_not(exists("sys/fs/cgroup/cpu/abox-half"));
}

/* Controllers co-mounted in one v1 hierarchy share one directory. */
Test(cgroup_v2fake, comounted_v1_controllers_share_a_directory)
{
	abox_error err = ABOX_ERROR_INIT;
	put("sys/fs/cgroup/cpu,memory/tasks", "");
	cr_assert_eq(cgroup_layout_parse("1 2 0:9 / /sys/fs/cgroup/cpu,memory rw - cgroup cgroup "
					 "rw,cpu,cpuacct,memory\n",
					 "3:cpu,cpuacct,memory:/\n", root, &L, &err),
		     0, "%s", err.msg);
	create_ok("co", (struct cg_limits){ .memory_bytes = 8192, .cpu_millis = 100 });
	cr_assert_str_eq(get("sys/fs/cgroup/cpu,memory/abox-co/memory.limit_in_bytes"), "67117056");
	cr_assert_str_eq(get("sys/fs/cgroup/cpu,memory/abox-co/cmds/memory.limit_in_bytes"), "8192");
	cr_assert_str_eq(get("sys/fs/cgroup/cpu,memory/abox-co/cpu.cfs_quota_us"), "10000");
	destroy_ok();
	cr_assert_not(exists("sys/fs/cgroup/cpu,memory/abox-co"));
}
