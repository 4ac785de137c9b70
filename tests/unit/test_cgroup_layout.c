/* Unit tests of the cgroup layout parser on literal mountinfo and
 * /proc/self/cgroup texts. The v2 side is probed through fs_prefix, so each
 * test builds the few files it needs in a temp dir. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cgroup/cgroup.h"
#include "scratch.h"

static char root[64];
static struct cg_layout L;

static void setup(void)
{
	strcpy(root, "/tmp/cgl-XXXXXX");
	scratch_make(root);
	memset(&L, 0, sizeof(L));
}

static void teardown(void)
{
	cgroup_layout_free(&L);
	scratch_remove(root);
}

/* Creates root/rel (and its parents) holding content. */
static void put(const char *rel, const char *content)
{
	scratch_put(root, rel, content);
}

static const char *P(const char *rel)
{
	return scratch_path(root, rel);
}

static int parse(const char *mi, const char *self, abox_error *err)
{
	return cgroup_layout_parse(mi, self, root, &L, err);
}

/* parse, which must succeed */
static void parse_ok(const char *mi, const char *self)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(parse(mi, self, &err), 0, "%s", err.msg);
}

/* This machine: v1 controllers each on their own mount, a name=systemd
 * hierarchy and a cgroup2 mount at /sys/fs/cgroup/unified. */
static const char hybrid_mi[] =
	"22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
	"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
	"34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
	"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
	"37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
	"38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"
	"39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static const char hybrid_self[] = "9:name=systemd:/\n"
				  "8:pids:/\n"
				  "7:blkio:/\n"
				  "6:freezer:/\n"
				  "5:devices:/\n"
				  "4:memory:/process_api/18b35d327aa6f66704272e1e02535335\n"
				  "3:cpuset:/\n"
				  "2:cpuacct:/\n"
				  "1:cpu:/\n"
				  "0::/\n";

TestSuite(cgroup_layout, .init = setup, .fini = teardown);

Test(cgroup_layout, hybrid_this_machine)
{
	put("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
	put("proc/sys/kernel/osrelease", "6.18.44-fc-v669\n");

	parse_ok(hybrid_mi, hybrid_self);
	cr_assert_str_eq(L.v2_mount, P("/sys/fs/cgroup/unified"));
	cr_assert_str_eq(L.v2_self, "/");
	cr_assert(L.v2_kill);
	cr_assert_str_eq(L.v1_mount[CG_MEMORY], P("/sys/fs/cgroup/memory"));
	cr_assert_str_eq(L.v1_self[CG_MEMORY], "/process_api/18b35d327aa6f66704272e1e02535335");
	cr_assert_str_eq(L.v1_mount[CG_PIDS], P("/sys/fs/cgroup/pids"));
	cr_assert_str_eq(L.v1_self[CG_PIDS], "/");
	cr_assert_str_eq(L.v1_mount[CG_CPU], P("/sys/fs/cgroup/cpu"));
	cr_assert_str_eq(L.v1_mount[CG_FREEZER], P("/sys/fs/cgroup/freezer"));
	cr_assert_eq(L.use[CG_MEMORY], CG_V1);
	cr_assert_eq(L.use[CG_PIDS], CG_V1);
	cr_assert_eq(L.use[CG_CPU], CG_V1);
	cr_assert_eq(L.use[CG_FREEZER], CG_V2);
}

/* At the v2 root cgroup.freeze/cgroup.kill never exist; the kernel release
 * predicts them (5.2 / 5.14), unknown means no. */
Test(cgroup_layout, hybrid_root_release_decides_freezer)
{
	static const struct {
		const char *release;
		enum cg_version freezer;
		bool kill;
	} cases[] = {
		{ "5.10.0-28-amd64\n", CG_V2, false },
		{ "5.14.0\n", CG_V2, true },
		{ "5.1.21\n", CG_V1, false },
		{ "4.19.0\n", CG_V1, false },
		{ "garbage\n", CG_V1, false },
		{ NULL, CG_V1, false },
	};
	put("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/proc/sys/kernel/osrelease", root);
		unlink(path);
		if (cases[i].release)
			put("proc/sys/kernel/osrelease", cases[i].release);
		cgroup_layout_free(&L);
		parse_ok(hybrid_mi, hybrid_self);
		cr_assert_eq(L.use[CG_FREEZER], cases[i].freezer, "case %zu", i);
		cr_assert_eq(L.v2_kill, cases[i].kill, "case %zu", i);
	}
}

static const char v2_mi[] = "22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs "
			    "sysfs rw\n"
			    "25 22 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - "
			    "cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n";
#define V2_SELF "/user.slice/user-1000.slice/user@1000.service/app.slice/abox.scope"

static void v2_tree(const char *controllers, bool freeze)
{
	put("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	put("sys/fs/cgroup" V2_SELF "/cgroup.controllers", controllers);
	if (freeze) {
		put("sys/fs/cgroup" V2_SELF "/cgroup.freeze", "0\n");
		put("sys/fs/cgroup" V2_SELF "/cgroup.kill", "");
	}
}

Test(cgroup_layout, pure_v2_systemd)
{
	v2_tree("cpu io memory pids\n", true);
	parse_ok(v2_mi, "0::" V2_SELF "\n");
	cr_assert_str_eq(L.v2_mount, P("/sys/fs/cgroup"));
	cr_assert_str_eq(L.v2_self, V2_SELF);
	cr_assert(L.v2_kill);
	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		cr_assert_eq(L.use[c], CG_V2, "%s", cgroup_controller_name(c));
		cr_assert_null(L.v1_mount[c]);
		cr_assert_null(L.v1_self[c]);
	}
}

Test(cgroup_layout, pure_v2_missing_controllers_and_freezer)
{
	/* "cpuset" must not be mistaken for "cpu" */
	v2_tree("cpuset memory\n", false);
	parse_ok(v2_mi, "0::" V2_SELF "\n");
	cr_assert_eq(L.use[CG_MEMORY], CG_V2);
	cr_assert_eq(L.use[CG_PIDS], CG_NONE);
	cr_assert_eq(L.use[CG_CPU], CG_NONE);
	cr_assert_eq(L.use[CG_FREEZER], CG_NONE);
	cr_assert_not(L.v2_kill);
}

Test(cgroup_layout, pure_v2_empty_controllers_file)
{
	v2_tree("", true);
	parse_ok(v2_mi, "0::" V2_SELF "\n");
	cr_assert_eq(L.use[CG_MEMORY], CG_NONE);
	cr_assert_eq(L.use[CG_FREEZER], CG_V2);
}

/* The caller's cgroup is not reachable through the mount (a foreign cgroup
 * namespace mounted it): v2 is unusable rather than a trap at create. */
Test(cgroup_layout, pure_v2_self_not_visible)
{
	put("sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
	parse_ok(v2_mi, "0::/elsewhere.slice\n");
	cr_assert_null(L.v2_mount);
	cr_assert_null(L.v2_self);
	for (int c = 0; c < CG_CONTROLLER_MAX; c++)
		cr_assert_eq(L.use[c], CG_NONE);
}

static const char v1_mi[] =
	"30 22 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:5 - tmpfs tmpfs ro,mode=755\n"
	"31 30 0:27 / /sys/fs/cgroup/systemd rw,nosuid shared:6 - cgroup cgroup "
	"rw,xattr,release_agent=/lib/systemd/systemd-cgroups-agent,name=systemd\n"
	"34 30 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:9 - cgroup cgroup "
	"rw,cpu,cpuacct\n"
	"35 30 0:31 / /sys/fs/cgroup/memory rw,nosuid shared:10 - cgroup cgroup rw,memory\n"
	"36 30 0:32 / /sys/fs/cgroup/pids rw,nosuid shared:11 - cgroup cgroup rw,pids\n"
	"37 30 0:33 / /sys/fs/cgroup/freezer rw,nosuid shared:12 - cgroup cgroup rw,freezer\n";

static const char v1_self[] = "12:freezer:/\n"
			      "11:pids:/user.slice/user-1000.slice/session-2.scope\n"
			      "10:memory:/user.slice/user-1000.slice/session-2.scope\n"
			      "9:cpu,cpuacct:/user.slice\n"
			      "1:name=systemd:/user.slice/user-1000.slice/session-2.scope\n";

Test(cgroup_layout, pure_v1_comounted_cpu)
{
	parse_ok(v1_mi, v1_self);
	cr_assert_null(L.v2_mount);
	cr_assert_null(L.v2_self);
	cr_assert_not(L.v2_kill);
	cr_assert_str_eq(L.v1_mount[CG_CPU], P("/sys/fs/cgroup/cpu,cpuacct"));
	cr_assert_str_eq(L.v1_self[CG_CPU], "/user.slice");
	cr_assert_str_eq(L.v1_self[CG_PIDS], "/user.slice/user-1000.slice/session-2.scope");
	cr_assert_str_eq(L.v1_self[CG_FREEZER], "/");
	for (int c = 0; c < CG_CONTROLLER_MAX; c++)
		cr_assert_eq(L.use[c], CG_V1, "%s", cgroup_controller_name(c));
}

/* A "0::/" line without a cgroup2 mount (v1-only hosts on new kernels). */
Test(cgroup_layout, pure_v1_with_unmounted_v2_line)
{
	char self[1024];
	snprintf(self, sizeof(self), "%s0::/\n", v1_self);
	parse_ok(v1_mi, self);
	cr_assert_null(L.v2_mount);
	cr_assert_eq(L.use[CG_FREEZER], CG_V1);
}

Test(cgroup_layout, missing_v1_controllers)
{
	/* pids: no mount at all; freezer: mounted but no line in
	 * /proc/self/cgroup, so the caller's cgroup there is unknown */
	static const char mi[] =
		"35 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
		"37 30 0:33 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n";
	parse_ok(mi, "4:memory:/a\n");
	cr_assert_eq(L.use[CG_MEMORY], CG_V1);
	cr_assert_eq(L.use[CG_PIDS], CG_NONE);
	cr_assert_eq(L.use[CG_CPU], CG_NONE);
	cr_assert_eq(L.use[CG_FREEZER], CG_NONE);
	cr_assert_null(L.v1_mount[CG_FREEZER]);
}

/* A mount showing a subtree (docker without a cgroup namespace): the self
 * path is made relative to the mount's root; another subtree is unusable. */
Test(cgroup_layout, mount_root_is_subtree)
{
	static const char mi[] =
		"35 30 0:31 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
		"36 30 0:32 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
		"37 30 0:33 /docker/abc /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n";
	static const char self[] = "4:memory:/docker/abc/inner\n"
				   "5:pids:/docker/abc\n"
				   "6:freezer:/docker/abcdef\n";
	parse_ok(mi, self);
	cr_assert_str_eq(L.v1_self[CG_MEMORY], "/inner");
	cr_assert_str_eq(L.v1_self[CG_PIDS], "/");
	cr_assert_eq(L.use[CG_FREEZER], CG_NONE);
}

/* A later mount over /sys/fs/cgroup hides the v1 mounts below it. */
Test(cgroup_layout, shadowed_mounts_are_ignored)
{
	static const char mi[] =
		"35 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
		"50 22 0:40 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
	put("sys/fs/cgroup/cgroup.controllers", "pids\n");
	parse_ok(mi, "4:memory:/\n0::/\n");
	cr_assert_null(L.v1_mount[CG_MEMORY]);
	cr_assert_eq(L.use[CG_MEMORY], CG_NONE);
	cr_assert_eq(L.use[CG_PIDS], CG_V2);
}

Test(cgroup_layout, octal_escapes_in_mount_point)
{
	static const char mi[] =
		"35 30 0:31 / /sys/fs/cgroup/my\\040mem rw - cgroup cgroup rw,memory\n";
	parse_ok(mi, "4:memory:/\n");
	cr_assert_str_eq(L.v1_mount[CG_MEMORY], P("/sys/fs/cgroup/my mem"));
}

Test(cgroup_layout, empty_prefix_and_null_prefix_mean_real_root)
{
	abox_error err = ABOX_ERROR_INIT;
	static const char mi[] = "35 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
	cr_assert_eq(cgroup_layout_parse(mi, "4:memory:/\n", NULL, &L, &err), 0, "%s", err.msg);
	cr_assert_str_eq(L.v1_mount[CG_MEMORY], "/sys/fs/cgroup/memory");
}

static void expect_bad(const char *mi, const char *self, const char *needle, int code)
{
	abox_error err = ABOX_ERROR_INIT;
	struct cg_layout sentinel;
	memset(&L, 0x5a, sizeof(L));
	memcpy(&sentinel, &L, sizeof(L));
	int r = cgroup_layout_parse(mi, self, root, &L, &err);
	cr_assert_eq(r, -code, "r=%d for %s", r, needle);
	cr_assert_eq(err.code, code);
	cr_assert_not_null(strstr(err.msg, needle), "msg '%s' lacks '%s'", err.msg, needle);
	/* outputs are written only on success */
	cr_assert_eq(memcmp(&sentinel, &L, sizeof(L)), 0);
	memset(&L, 0, sizeof(L));
}

/* /proc/self/cgroup lines the layout cannot use: the caller's own input */
static void expect_malformed(const char *mi, const char *self, const char *needle)
{
	expect_bad(mi, self, needle, EINVAL);
}

/* a mount table not in the kernel's format: the host's data is broken */
static void expect_bad_table(const char *mi, const char *self, const char *needle)
{
	expect_bad(mi, self, needle, EPROTO);
}

Test(cgroup_layout, malformed_mountinfo)
{
	expect_bad_table("31 23 0:28 / /sys/fs/cgroup rw,relatime tmpfs tmpfs rw\n", "0::/\n",
			 "mountinfo line 1");
	expect_bad_table("1 2 0:3 / /a rw - sysfs sysfs rw\n31 23 0:28 /\n", "0::/\n",
			 "mountinfo line 2");
	expect_bad_table("31 23 0:28 / /sys/fs/cgroup rw - cgroup2 cgroup2\n", "0::/\n",
			 "mountinfo line 1");
	expect_bad_table("31 23 0:28 / relative rw - cgroup2 cgroup2 rw\n", "0::/\n",
			 "mountinfo line 1");
}

Test(cgroup_layout, malformed_self_cgroup)
{
	static const char mi[] = "35 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
	expect_malformed(mi, "garbage\n", "/proc/self/cgroup line 1");
	expect_malformed(mi, "0::/\n4:memory\n", "/proc/self/cgroup line 2");
	expect_malformed(mi, "4:memory:relative\n", "line 1");
	expect_malformed(mi, "x:memory:/\n", "line 1");
	expect_malformed(mi, ":memory:/\n", "line 1");
	expect_malformed(mi, "0::\n", "line 1");
}

Test(cgroup_layout, missing_arguments)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(cgroup_layout_parse(NULL, "0::/\n", root, &L, &err), -EINVAL);
	cr_assert_eq(cgroup_layout_parse("", NULL, root, &L, &err), -EINVAL);
	cr_assert_eq(cgroup_layout_parse("", "", root, NULL, NULL), -EINVAL);
}

Test(cgroup_layout, empty_texts_give_nothing)
{
	parse_ok("", "");
	cr_assert_null(L.v2_mount);
	for (int c = 0; c < CG_CONTROLLER_MAX; c++)
		cr_assert_eq(L.use[c], CG_NONE);
}

Test(cgroup_layout, controller_names)
{
	static const struct {
		enum cg_controller c;
		const char *name;
	} cases[] = {
		{ CG_MEMORY, "memory" },
		{ CG_PIDS, "pids" },
		{ CG_CPU, "cpu" },
		{ CG_FREEZER, "freezer" },
		{ CG_CONTROLLER_MAX, "unknown" },
		{ (enum cg_controller)(-1), "unknown" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_str_eq(cgroup_controller_name(cases[i].c), cases[i].name, "controller %d",
				 (int)cases[i].c);
}

Test(cgroup_layout, free_is_idempotent)
{
	cgroup_layout_free(NULL);
	cgroup_layout_free(&L);
	cgroup_layout_free(&L);
}

/* The real host: detection must succeed and every path it names exist. */
Test(cgroup_layout, detect_real_host)
{
	abox_error err = ABOX_ERROR_INIT;
	struct stat st;
	char path[PATH_MAX];
	cr_assert_eq(cgroup_layout_detect(&L, &err), 0, "%s", err.msg);
	if (L.v2_mount) {
		snprintf(path, sizeof(path), "%s%s", L.v2_mount, L.v2_self);
		cr_assert_eq(stat(path, &st), 0, "%s", path);
	}
	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		if (L.use[c] == CG_V1) {
			snprintf(path, sizeof(path), "%s%s", L.v1_mount[c], L.v1_self[c]);
			cr_assert_eq(stat(path, &st), 0, "%s", path);
		}
	}
}

/* What `ip netns add` and bind-mounted namespace files add to the host's
 * table: an nsfs root that is no path, mount points with escaped spaces.
 * None of it is a cgroup mount, and none of it may fail the layout. */
Test(cgroup_layout, nsfs_and_escaped_lines_do_not_break_it)
{
	char mi[8192];
	snprintf(mi, sizeof(mi),
		 "%s"
		 "1089 28 0:4 net:[4026532281] /run/netns/foo rw shared:608 - nsfs nsfs rw\n"
		 "1090 28 0:4 mnt:[4026531841] /tmp/ns\\040file rw - nsfs nsfs rw\n"
		 "1091 28 0:61 / /tmp/a\\011b\\012c\\134d rw,relatime shared:9 master:2 - tmpfs  rw\n",
		 hybrid_mi);
	put("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
	put("proc/sys/kernel/osrelease", "6.18.44-fc-v669\n");
	parse_ok(mi, hybrid_self);
	cr_assert_str_eq(L.v2_mount, P("/sys/fs/cgroup/unified"));
	cr_assert_str_eq(L.v1_mount[CG_MEMORY], P("/sys/fs/cgroup/memory"));
	cr_assert_eq(L.use[CG_MEMORY], CG_V1);
	cr_assert_eq(L.use[CG_FREEZER], CG_V2);
}

/* A cgroup hierarchy mounted where the name needs escaping is found under
 * its real (unescaped) name. */
Test(cgroup_layout, escaped_cgroup_mount_point)
{
	static const char mi[] = "41 31 0:38 / /sys/fs/cgroup/my\\040unified rw,relatime shared:3 - cgroup2 cgroup2 rw\n";
	put("sys/fs/cgroup/my unified/cgroup.controllers", "memory pids cpu\n");
	put("proc/sys/kernel/osrelease", "6.18.44\n");
	parse_ok(mi, "0::/\n");
	cr_assert_str_eq(L.v2_mount, P("/sys/fs/cgroup/my unified"));
	cr_assert_eq(L.use[CG_MEMORY], CG_V2);
}
