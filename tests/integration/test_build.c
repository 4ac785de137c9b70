/* Templates built from a recipe with debootstrap (slow: downloads and
 * installs a minimal Debian from the machine's mirror, about a minute):
 * the result runs Python in a sandbox, says where it came from, and the
 * build leaves no mounts or scratch folders; broken recipes and failing
 * builds are refused with the cause and leave nothing. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static void fini(void)
{
	struct run_result r;
	ABOX(&r, "template", "rm", "abox-t-deb");
	run_result_free(&r);
	ABOX(&r, "gc");
	run_result_free(&r);
	sandbox_suite_fini();
}

static void init(void)
{
	/* debootstrap takes about a minute on a quiet host, several on a busy one */
	run_timeout_s = 600;
	sandbox_suite_init();
}

TestSuite(build, .init = init, .fini = fini, .timeout = 900);

static void no_scratch_left(void)
{
	char tdir[4200];
	snprintf(tdir, sizeof(tdir), "%s/templates", state_root());
	DIR *d = opendir(tdir);
	cr_assert_not_null(d);
	struct dirent *de;
	while ((de = readdir(d)))
		cr_assert(strncmp(de->d_name, ".build.", 7) != 0, "left behind: %s", de->d_name);
	closedir(d);
	char *mi = read_whole("/proc/self/mountinfo", NULL);
	cr_assert_null(strstr(mi, "debootstrap"), "a build mount is visible on the host:\n%s", mi);
	free(mi);
}

Test(build, debian_recipe_makes_a_template_that_runs_python)
{
	char recipe[512];
	snprintf(recipe, sizeof(recipe), "%s/rootfs/debian-bookworm.recipe", getenv("ABOX_SOURCE_DIR"));
	struct run_result r;
	ABOX(&r, "template", "build", "-e", "BUILT=yes", "abox-t-deb", recipe);
	cr_assert_eq(r.status, 0, "build failed: %s", r.err);
	/* debootstrap's own progress lines were shown */
	cr_assert(strstr(r.err, "I: Retrieving") && strstr(r.err, "Base system installed"), "%s", r.err);
	run_result_free(&r);
	no_scratch_left();

	ABOX(&r, "run", "--template", "abox-t-deb", "--", "python3", "-c",
	     "import os, ssl; print(os.environ['BUILT'], os.environ['LANG'], os.getuid(), bool(ssl.get_default_verify_paths().cafile or 1))");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "yes C.UTF-8 1000 True\n");
	run_result_free(&r);

	ABOX(&r, "template", "inspect", "--json", "abox-t-deb");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "debootstrap bookworm") && strstr(r.out, "debian-bookworm.recipe"), "%s", r.out);
	run_result_free(&r);
}

Test(build, broken_recipes_and_failing_builds_leave_nothing)
{
	char dir[] = "/var/tmp/abox-recipe.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/bad.recipe", dir);
	FILE *f = fopen(path, "w");
	fputs("suite = bookworm\nsuit = typo\n", f);
	fclose(f);
	struct run_result r;
	ABOX(&r, "template", "build", "abox-t-deb2", path);
	cr_assert_eq(r.status, 125);
	cr_assert(strstr(r.err, "bad.recipe:2: unknown key 'suit'"), "%s", r.err);
	run_result_free(&r);

	/* a suite the mirror does not have: debootstrap fails, its last
	 * lines are in the message */
	f = fopen(path, "w");
	fputs("suite = abox-no-such-suite\n", f);
	fclose(f);
	ABOX(&r, "template", "build", "abox-t-deb2", path);
	cr_assert_eq(r.status, 125);
	cr_assert(strstr(r.err, "debootstrap abox-no-such-suite") && strstr(r.err, "failed"), "%s", r.err);
	run_result_free(&r);
	no_scratch_left();
	ABOX(&r, "template", "ls");
	cr_assert_null(strstr(r.out, "abox-t-deb2"), "%s", r.out);
	run_result_free(&r);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}
