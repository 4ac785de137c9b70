/* After a pause to disk (checkpoint and restore) commands still run in
 * their own memory cgroup: the restored init gets the commands' cgroup
 * back with its re-arm, so an OOM afterwards still ends the command only. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TestSuite(oom_resume, .init = checkpoint_suite_init, .fini = sandbox_suite_fini, .timeout = 240);

Test(oom_resume, commands_keep_their_cgroup_after_a_pause_to_disk)
{
	CHECKPOINT_NEEDED();
	char *id = CREATE("--memory", "64M", "--timeout", "200");
	ABOX_OK("pause", "--to-disk", id);
	ABOX_OK("resume", id);

	char *out =
		ABOX_OUT("exec", id, "--", "sh", "-c", "grep -E '^[0-9]+:memory:|^0::' /proc/self/cgroup");
	cr_assert(strstr(out, "/cmds\n"), "not in the commands' cgroup after resume:\n%s", out);
	free(out);
	ABOX_EXPECT(137, NULL, "killed: out of memory (limit 64M)", "exec", id, "--", "python3", "-c",
		    "a = bytearray(400 << 20)");
	/* init survived */
	ABOX_EXPECT(0, "abox-init\n", NULL, "exec", id, "--", "cat", "/proc/1/comm");

	ABOX_ANY("kill", id);
	free(id);
}
