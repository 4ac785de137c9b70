/* What a sandbox sees of the host in its own mount table: overlay shows
 * its lowerdir/upperdir/workdir options as given, so they must name no
 * host state or runtime folder (nor the template's version, nor the
 * snapshots a sandbox stands on). */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TestSuite(mount_view, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 120);

/* the folder as given and as resolved: either spelling would leak */
static void expect_absent(const char *mi, const char *dir, const char *what)
{
	char real[PATH_MAX];
	cr_assert_null(strstr(mi, dir), "the sandbox's mountinfo shows the %s '%s':\n%s", what, dir, mi);
	if (realpath(dir, real))
		cr_assert_null(strstr(mi, real), "the sandbox's mountinfo shows the %s '%s':\n%s", what, real, mi);
}

static void check(const char *mi)
{
	cr_assert_not_null(strstr(mi, " - overlay "), "the root is an overlay:\n%s", mi);
	expect_absent(mi, state_root(), "state folder");
	expect_absent(mi, runtime_root(), "runtime folder");
	cr_assert_null(strstr(mi, "templates/"), "a template path shows:\n%s", mi);
	cr_assert_null(strstr(mi, "snapshots/"), "a snapshot path shows:\n%s", mi);
}

/* the mount table of a command in a long-lived sandbox, checked */
static void check_exec(const char *id)
{
	char *mi = ABOX_OUT("exec", id, "--", "cat", "/proc/self/mountinfo");
	check(mi);
	free(mi);
}

Test(mount_view, ephemeral_sandbox)
{
	char *mi = ABOX_OUT("run", "--", "cat", "/proc/self/mountinfo");
	check(mi);
	free(mi);
}

/* a sandbox from a snapshot stands on several lower layers (the root's
 * and /usr's): each is named neutrally, and each still works */
Test(mount_view, long_lived_and_from_snapshot)
{
	char *src = ABOX_LINE("create", "--timeout", "120");
	ABOX_OK("exec", "--user", "root", src, "--", "sh", "-c",
		"echo kept > /etc/mv-marker && echo kept > /usr/mv-marker");
	check_exec(src);
	char *snap = ABOX_LINE("snapshot", src);
	char *top = ABOX_LINE("create", "--from", snap, "--timeout", "120");
	check_exec(top);
	ABOX_EXPECT(0, "kept\nkept\n", NULL, "exec", top, "--", "cat", "/etc/mv-marker", "/usr/mv-marker");
	kill_and_free(top);
	kill_and_free(src);
	ABOX_OK("snapshots", "rm", snap);
	free(snap);
}
