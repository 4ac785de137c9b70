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

static char *ok(const char *const *args)
{
	struct run_result r;
	run_abox(&r, NULL, 0, args);
	cr_assert_eq(r.status, 0, "abox %s failed: %s", args[0], r.err);
	free(r.err);
	return r.out;
}

#define OK(...) ok((const char *const[]){ __VA_ARGS__, NULL })

Test(template, imported_folder_runs_without_privileged_leftovers)
{
	make_rootfs();
	free(OK("template", "import", "abox-test-tiny", root));
	char esc[128];
	snprintf(esc, sizeof(esc), "%s.escape/user", root);
	cr_assert_neq(access(esc, F_OK), 0, "the import created a folder through a planted symlink: %s", esc);
	char *ls = OK("template", "ls");
	cr_assert(strstr(ls, "host\n") && strstr(ls, "abox-test-tiny\n"), "%s", ls);
	free(ls);

	struct run_result r;
	ABOX(&r, "run", "--template", "abox-test-tiny", "--", "/bin/sh", "-c",
	     "cat /hello; test -e /kmem-dev || echo no-dev; case $(ls -l /bin/suid-cat) in -rwxr-xr-x*) echo no-suid;; *) echo suid;; esac;"
	     "cat /shadow-link 2>/dev/null || echo no-host-shadow; echo $HOME; test -d /tmp && echo tmp;"
	     "test -d /home/user && echo home-dir");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "hello\nno-dev\nno-suid\nno-host-shadow\n/home/user\ntmp\nhome-dir\n");
	run_result_free(&r);

	/* removed while a sandbox uses it: that sandbox goes on */
	char *id = OK("create", "--template", "abox-test-tiny", "--timeout", "60");
	id[20] = '\0';
	free(OK("template", "rm", "abox-test-tiny"));
	ABOX(&r, "exec", id, "--", "/bin/cat", "/hello");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "hello\n");
	run_result_free(&r);
	free(OK("kill", id));
	free(id);
	ABOX(&r, "create", "--template", "abox-test-tiny");
	cr_assert_eq(r.status, 125);
	cr_assert(strstr(r.err, "abox-test-tiny") && strstr(r.err, "not found"), "%s", r.err);
	run_result_free(&r);
	free(OK("gc"));
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
	ABOX(&r, "template", "rm", "host");
	cr_assert_eq(r.status, 125);
	cr_assert(strstr(r.err, "built in"), "%s", r.err);
	run_result_free(&r);
	ABOX(&r, "template", "import", "abox-test-missing", "/nonexistent/dir");
	cr_assert_eq(r.status, 125);
	cr_assert(strstr(r.err, "/nonexistent/dir"), "%s", r.err);
	run_result_free(&r);
}

static void write_ver(const char *v)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "echo %s > '%s/ver'", v, root);
	cr_assert_eq(system(cmd), 0);
}

static void ver_is(const char *id, const char *want)
{
	struct run_result r;
	ABOX(&r, "exec", id, "--", "/bin/cat", "/ver");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, want);
	run_result_free(&r);
}

Test(template, snapshots_and_paused_sandboxes_keep_their_template_version)
{
	make_rootfs();
	write_ver("1");
	free(OK("template", "import", "abox-test-pin", root));
	char *id = OK("create", "--template", "abox-test-pin", "--timeout", "120");
	id[20] = '\0';
	char *snap = OK("snapshot", id);
	snap[20] = '\0';
	/* paused without memory across a re-import: resumes on version 1 */
	free(OK("pause", "--no-memory", id));
	write_ver("2");
	free(OK("template", "import", "abox-test-pin", root));
	free(OK("resume", id));
	ver_is(id, "1\n");
	free(OK("kill", id));
	free(id);

	/* a snapshot made on version 1 stands on version 1, even after the
	 * template is re-imported or removed */
	id = OK("create", "--from", snap);
	id[20] = '\0';
	ver_is(id, "1\n");
	free(OK("kill", id));
	free(id);
	free(OK("template", "rm", "abox-test-pin"));
	free(OK("gc"));
	id = OK("create", "--from", snap);
	id[20] = '\0';
	ver_is(id, "1\n");
	free(OK("kill", id));
	free(id);
	/* once the snapshot goes, so does the version */
	free(OK("snapshots", "rm", snap));
	free(OK("gc"));
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
