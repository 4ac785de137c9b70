/* After a pause to disk (checkpoint and restore) commands still run in
 * their own memory cgroup: the restored init gets the commands' cgroup
 * back with its re-arm, so an OOM afterwards still ends the command only. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void init(void)
{
	sandbox_suite_init();
	unsetenv("ABOX_CHECKPOINTER");
	struct run_result r;
	ABOX(&r, "doctor");
	cr_assert(strstr(r.out, "ok    checkpointer"),
		  "no working checkpointer (CI runs scripts/criu-setup.sh first):\n%s", r.out);
	run_result_free(&r);
}

TestSuite(oom_resume, .init = init, .fini = sandbox_suite_fini, .timeout = 240);

Test(oom_resume, commands_keep_their_cgroup_after_a_pause_to_disk)
{
	struct run_result r;
	ABOX(&r, "create", "--memory", "64M", "--timeout", "200");
	cr_assert_eq(r.status, 0, "create: %s", r.err);
	char *id = strndup(r.out, 20);
	run_result_free(&r);

	ABOX(&r, "pause", "--to-disk", id);
	cr_assert_eq(r.status, 0, "pause: %s", r.err);
	run_result_free(&r);
	ABOX(&r, "resume", id);
	cr_assert_eq(r.status, 0, "resume: %s", r.err);
	run_result_free(&r);

	ABOX(&r, "exec", id, "--", "sh", "-c", "grep -E '^[0-9]+:memory:|^0::' /proc/self/cgroup");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "/cmds\n"), "not in the commands' cgroup after resume:\n%s", r.out);
	run_result_free(&r);
	ABOX(&r, "exec", id, "--", "python3", "-c", "a = bytearray(400 << 20)");
	cr_assert_eq(r.status, 137, "stderr: %s", r.err);
	cr_assert(strstr(r.err, "killed: out of memory (limit 64M)"), "stderr: %s", r.err);
	run_result_free(&r);
	ABOX(&r, "exec", id, "--", "cat", "/proc/1/comm");
	cr_assert_eq(r.status, 0, "init did not survive: %s", r.err);
	cr_assert_str_eq(r.out, "abox-init\n");
	run_result_free(&r);

	ABOX(&r, "kill", id);
	run_result_free(&r);
	free(id);
}
