/* Imported templates: a folder with a small root filesystem becomes a
 * template sandboxes start from; what could raise privileges or reach the
 * host (device nodes, setuid bits, symlinks to host files) does not come
 * along; removal never breaks a sandbox using it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static char root[64];

static void fini(void)
{
	if (root[0]) {
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s.escape'", root, root);
		cr_expect_eq(system(cmd), 0);
		root[0] = '\0';
	}
	sandbox_suite_fini();
}

TestSuite(template, .init = sandbox_suite_init, .fini = fini, .timeout = 120);

/* dash, cat and ls with their libraries, plus planted hostile entries */
static void make_rootfs(void)
{
	snprintf(root, sizeof(root), "/var/tmp/abox-tpl.XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "set -e; R='%s'; mkdir -p $R/bin; cp /usr/bin/dash $R/bin/sh; cp /usr/bin/cat /usr/bin/ls $R/bin/;"
		 "for f in $(ldd /usr/bin/dash /usr/bin/cat /usr/bin/ls | grep -o '/lib[^ ]*' | sort -u); do"
		 "  mkdir -p $R$(dirname $f); cp -L $f $R$f; done;"
		 "echo hello > $R/hello; cp /usr/bin/cat $R/bin/suid-cat; chmod 4755 $R/bin/suid-cat;"
		 "mknod $R/kmem-dev c 1 2; ln -s /etc/shadow $R/shadow-link;"
		 /* a planted home pointing at a host folder: the import must
		  * not create user/ through it */
		 "mkdir $R.escape; ln -s $R.escape $R/home",
		 root);
	cr_assert_eq(system(cmd), 0, "building the test root filesystem");
}

Test(template, imported_folder_runs_without_privileged_leftovers)
{
	make_rootfs();
	ABOX_OK("template", "import", "abox-test-tiny", root);
	char esc[128];
	snprintf(esc, sizeof(esc), "%s.escape/user", root);
	cr_assert_neq(access(esc, F_OK), 0, "the import created a folder through a planted symlink: %s", esc);
	char *ls = ABOX_OUT("template", "ls");
	cr_assert(strstr(ls, "host\n") && strstr(ls, "abox-test-tiny\n"), "%s", ls);
	free(ls);

	ABOX_EXPECT(
		0, "hello\nno-dev\nno-suid\nno-host-shadow\n/home/user\ntmp\nhome-dir\n", NULL, "run",
		"--template", "abox-test-tiny", "--", "/bin/sh", "-c",
		"cat /hello; test -e /kmem-dev || echo no-dev; case $(ls -l /bin/suid-cat) in -rwxr-xr-x*) "
		"echo no-suid;; *) echo suid;; esac;"
		"cat /shadow-link 2>/dev/null || echo no-host-shadow; echo $HOME; test -d /tmp && echo tmp;"
		"test -d /home/user && echo home-dir");

	/* removed while a sandbox uses it: that sandbox goes on */
	char *id = ABOX_LINE("create", "--template", "abox-test-tiny", "--timeout", "60");
	ABOX_OK("template", "rm", "abox-test-tiny");
	ABOX_EXPECT(0, "hello\n", NULL, "exec", id, "--", "/bin/cat", "/hello");
	kill_and_free(id);
	struct run_result r;
	ABOX(&r, "create", "--template", "abox-test-tiny");
	cr_assert_eq(r.status, 125);
	cr_assert(strstr(r.err, "abox-test-tiny") && strstr(r.err, "not found"), "%s", r.err);
	run_result_free(&r);
	ABOX_OK("gc");
}

Test(template, bad_names_and_the_builtin_are_refused)
{
	struct run_result r;
	const char *bad[] = { "../x", "Upper", "-dash", "host", "a/b", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ABOX(&r, "template", "import", bad[i], "/var/empty");
		cr_assert_eq(r.status, 125, "name '%s' accepted", bad[i]);
		run_result_free(&r);
	}
	ABOX_EXPECT(125, NULL, "built in", "template", "rm", "host");
	ABOX_EXPECT(125, NULL, "/nonexistent/dir", "template", "import", "abox-test-missing",
		    "/nonexistent/dir");
}

static void write_ver(const char *v)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "echo %s > '%s/ver'", v, root);
	cr_assert_eq(system(cmd), 0);
}

/* a sandbox from the template runs on version want; kill it */
static void ver_is_then_kill(char *id, const char *want)
{
	ABOX_EXPECT(0, want, NULL, "exec", id, "--", "/bin/cat", "/ver");
	kill_and_free(id);
}

Test(template, snapshots_and_paused_sandboxes_keep_their_template_version)
{
	make_rootfs();
	write_ver("1");
	ABOX_OK("template", "import", "abox-test-pin", root);
	char *id = ABOX_LINE("create", "--template", "abox-test-pin", "--timeout", "120");
	char *snap = ABOX_LINE("snapshot", id);
	/* paused without memory across a re-import: resumes on version 1 */
	ABOX_OK("pause", "--no-memory", id);
	write_ver("2");
	ABOX_OK("template", "import", "abox-test-pin", root);
	ABOX_OK("resume", id);
	ver_is_then_kill(id, "1\n");

	/* a snapshot made on version 1 stands on version 1, even after the
	 * template is re-imported or removed */
	id = ABOX_LINE("create", "--from", snap);
	ver_is_then_kill(id, "1\n");
	ABOX_OK("template", "rm", "abox-test-pin");
	ABOX_OK("gc");
	id = ABOX_LINE("create", "--from", snap);
	ver_is_then_kill(id, "1\n");
	/* once the snapshot goes, so does the version */
	ABOX_OK("snapshots", "rm", snap);
	ABOX_OK("gc");
	char *left = NULL;
	struct run_result r;
	char ls[4300];
	snprintf(ls, sizeof(ls), "ls '%s/templates' | grep abox-test-pin || true", state_root());
	run_abox_argv(&r, (const char *const[]){ "sh", "-c", ls, NULL });
	left = r.out;
	cr_assert_str_eq(left, "", "versions left behind:\n%s", left);
	free(r.err);
	free(left);
	free(snap);
}

/* `template cp`: a template of its own, with the source's defaults;
 * re-importing or removing the source leaves the copy as it was */
Test(template, copies_live_apart)
{
	make_rootfs();
	write_ver("1");
	ABOX_OK("template", "import", "--workdir", "/bin", "abox-test-cpa", root);
	ABOX_OK("template", "cp", "abox-test-cpa", "abox-test-cpb");
	write_ver("2");
	ABOX_OK("template", "import", "abox-test-cpa", root);
	ABOX_EXPECT(0, "2\n", NULL, "run", "--template", "abox-test-cpa", "--", "/bin/cat", "/ver");
	ABOX_OK("template", "rm", "abox-test-cpa");
	ABOX_EXPECT(0, "1\n", NULL, "run", "--template", "abox-test-cpb", "--", "/bin/cat", "/ver");
	/* the source's working folder came along */
	ABOX_EXPECT(0, "cat\n", NULL, "run", "--template", "abox-test-cpb", "--", "/bin/ls", "cat");
	ABOX_EXPECT(125, NULL, "built in", "template", "cp", "host", "abox-test-cpc");
	ABOX_EXPECT(125, NULL, "not found", "template", "cp", "abox-test-cpa", "abox-test-cpc");
	ABOX_EXPECT(125, NULL, "must be", "template", "cp", "abox-test-cpb", "Bad/Name");
	ABOX_OK("template", "rm", "abox-test-cpb");
	ABOX_OK("gc");
}
