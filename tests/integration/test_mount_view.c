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

static char *ok(const char *const *args)
{
	struct run_result r;
	run_abox(&r, NULL, 0, args);
	cr_assert_eq(r.status, 0, "abox %s failed: %s", args[0], r.err);
	free(r.err);
	return r.out;
}
#define OK(...) ok((const char *const[]){ __VA_ARGS__, NULL })

static char *first_line(char *s)
{
	s[strcspn(s, "\n")] = '\0';
	return s;
}

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

Test(mount_view, ephemeral_sandbox)
{
	char *mi = OK("run", "--", "cat", "/proc/self/mountinfo");
	check(mi);
	free(mi);
}

/* a sandbox from a snapshot stands on several lower layers (the root's
 * and /usr's): each is named neutrally, and each still works */
Test(mount_view, long_lived_and_from_snapshot)
{
	char *src = first_line(OK("create", "--timeout", "120"));
	free(OK("exec", "--user", "root", src, "--", "sh", "-c", "echo kept > /etc/mv-marker && echo kept > /usr/mv-marker"));
	char *mi = OK("exec", src, "--", "cat", "/proc/self/mountinfo");
	check(mi);
	free(mi);
	char *snap = first_line(OK("snapshot", src));
	char *top = first_line(OK("create", "--from", snap, "--timeout", "120"));
	mi = OK("exec", top, "--", "cat", "/proc/self/mountinfo");
	check(mi);
	free(mi);
	char *got = OK("exec", top, "--", "cat", "/etc/mv-marker", "/usr/mv-marker");
	cr_assert_str_eq(got, "kept\nkept\n");
	free(got);
	free(OK("kill", top));
	free(OK("kill", src));
	free(OK("snapshots", "rm", snap));
	free(top);
	free(snap);
	free(src);
}
