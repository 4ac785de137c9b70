/* Sandboxes on a host whose mount table is unusual: the suite runs in a
 * private mount namespace holding what `ip netns add` makes (a namespace
 * file bound onto a file: an nsfs mount whose root is "net:[...]") and a
 * mount point whose name the kernel escapes (space, tab, backslash).
 * Creates and kills must work there and leave no cgroup folder; kill and
 * gc remove a sandbox's cgroups whatever else fails. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static char dir[256], nsfile[300], odd[300];

/* Makes the odd mounts in a mount namespace of this test process only
 * (every abox it runs inherits it); they go with the namespace. */
static void odd_mounts(void)
{
	if (!is_root())
		cr_skip_test("needs root (sandboxes are created for real)");
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare: %m");
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0, "make / private: %m");
	snprintf(dir, sizeof(dir), "/tmp/abox-hostmounts-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(nsfile, sizeof(nsfile), "%s/netns", dir);
	int fd = open(nsfile, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(mount("/proc/self/ns/net", nsfile, NULL, MS_BIND, NULL), 0, "bind the netns: %m");
	snprintf(odd, sizeof(odd), "%s/a b\tc\\d", dir);
	cr_assert_eq(mkdir(odd, 0700), 0);
	cr_assert_eq(mount("", odd, "tmpfs", 0, "size=64k"), 0, "tmpfs with an empty source: %m");
	char *mi = read_whole("/proc/self/mountinfo", NULL);
	cr_assert_not_null(strstr(mi, " - nsfs "), "the nsfs mount shows: %s", mi);
	free(mi);
	/* the leftover check sees the odd mount under its real name */
	char *snap = leak_snapshot(), want[400];
	snprintf(want, sizeof(want), "mount %s\n", odd);
	cr_assert_not_null(strstr(snap, want), "the leftover check lists '%s':\n%s", odd, snap);
	free(snap);
	leak_check_begin();
}

static void done(void)
{
	if (!is_root())
		return;
	leak_check_end();
	(void)umount2(nsfile, MNT_DETACH);
	(void)umount2(odd, MNT_DETACH);
	(void)unlink(nsfile);
	(void)rmdir(odd);
	(void)rmdir(dir);
}

TestSuite(host_mounts, .init = odd_mounts, .fini = done, .timeout = 120);

static bool has_ctrl(const char *list, const char *c)
{
	char l[256], w[64];
	snprintf(l, sizeof(l), ",%s,", list);
	snprintf(w, sizeof(w), ",%s,", c);
	return strstr(l, w) != NULL;
}

/* The folder of each hierarchy abox uses where this process's cgroup
 * is (as scripts/in-cgroup.sh finds them); n set to how many. */
static void own_cgroup_dirs(char out[][4096], int *n)
{
	char *self = read_whole("/proc/self/cgroup", NULL);
	cr_assert_not_null(self);
	*n = 0;
	for (char *save = NULL, *l = strtok_r(self, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctrls = c1 + 1, *path = c2 + 1;
		char cand[2][4096];
		if (!*ctrls) {
			snprintf(cand[0], sizeof(cand[0]), "/sys/fs/cgroup/unified%s", path);
			snprintf(cand[1], sizeof(cand[1]), "/sys/fs/cgroup%s", path);
		} else if (has_ctrl(ctrls, "memory") || has_ctrl(ctrls, "pids") || has_ctrl(ctrls, "freezer") ||
			   has_ctrl(ctrls, "cpu")) {
			char first[64];
			snprintf(first, sizeof(first), "%.*s", (int)strcspn(ctrls, ","), ctrls);
			snprintf(cand[0], sizeof(cand[0]), "/sys/fs/cgroup/%s%s", ctrls, path);
			snprintf(cand[1], sizeof(cand[1]), "/sys/fs/cgroup/%s%s", first, path);
		} else {
			continue;
		}
		for (int i = 0; i < 2; i++) {
			struct stat st;
			if (stat(cand[i], &st) == 0 && S_ISDIR(st.st_mode)) {
				snprintf(out[(*n)++], 4096, "%.4000s", cand[i]);
				break;
			}
		}
	}
	free(self);
}

Test(host_mounts, create_exec_kill_and_run)
{
	for (int i = 0; i < 3; i++) {
		char *id = create_sandbox(NULL);
		ABOX_OK("exec", id, "--", "true");
		ABOX_OK("kill", id);
		free(id);
	}
	ABOX_OK("run", "--", "true");
}

/* `abox kill` from another cgroup than the creator's sees the sandbox's
 * cgroups at other paths than where they are: the recorded ones go. */
Test(host_mounts, kill_from_another_cgroup)
{
	char *id = create_sandbox(NULL);
	const char *src = getenv("ABOX_SOURCE_DIR");
	cr_assert_not_null(src);
	char script[4096];
	snprintf(script, sizeof(script), "%s/scripts/in-cgroup.sh", src);
	struct run_result r;
	run_abox_argv(&r, (const char *const[]){ "bash", script, "killer", "--", abox_bin(), "kill", id, NULL });
	cr_assert_eq(r.status, 0, "kill from a child cgroup failed: %s", r.err);
	run_result_free(&r);
	free(id);
}

/* cgroup folders of a sandbox that has no record any more (a kill that
 * removed the records but could not remove the cgroups) are found by
 * gc once they are a few seconds old. */
Test(host_mounts, gc_finds_unrecorded_cgroups)
{
	char dirs[8][4096];
	int n;
	own_cgroup_dirs(dirs, &n);
	cr_assert_gt(n, 0);
	const char *leaf = "abox-zzzzzzzzzzzzzzzzzzz0";
	char p[8][4200], child[4300];
	for (int i = 0; i < n; i++) {
		snprintf(p[i], sizeof(p[i]), "%.4000s/%s", dirs[i], leaf);
		cr_assert_eq(mkdir(p[i], 0755), 0, "mkdir %s: %m", p[i]);
	}
	/* a child cgroup (commands may run in one) does not keep it */
	snprintf(child, sizeof(child), "%.4100s/cmd", p[0]);
	cr_assert_eq(mkdir(child, 0755), 0, "mkdir %s: %m", child);
	/* young ones are left alone: a create elsewhere may be under way */
	ABOX_OK("gc");
	for (int i = 0; i < n; i++)
		cr_assert_eq(access(p[i], F_OK), 0, "gc removed the young %s", p[i]);
	sleep(6);
	ABOX_OK("gc");
	for (int i = 0; i < n; i++) {
		bool gone = access(p[i], F_OK) != 0;
		if (!gone) {
			(void)rmdir(child);
			(void)rmdir(p[i]);
		}
		cr_assert(gone, "gc left %s", p[i]);
	}
}
