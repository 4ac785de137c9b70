/* Pause and resume: a frozen sandbox does no work and its timeout clock
 * stops; commands and file requests are refused clearly; kill of a
 * paused sandbox leaves nothing behind. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(pause, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 120);

Test(pause, counter_stops_while_paused_and_goes_on_after_resume)
{
	char *id = CREATE("--timeout", "120");
	/* the counter file is replaced whole: a read between a truncate and
	 * its write would see 0 */
	ABOX_OK("exec", "-d", id, "--", "sh", "-c",
		"i=0; while :; do i=$((i+1)); echo $i > /tmp/n.t; mv /tmp/n.t /tmp/n; sleep 0.02; done");
	usleep(300 * 1000);
	long before = read_counter(id);
	ABOX_OK("pause", id);
	char *s = sandbox_state(id);
	cr_assert_str_eq(s, "paused");
	free(s);
	usleep(1500 * 1000);
	ABOX_OK("resume", id);
	long after_pause = read_counter(id);
	/* running, those 1.5 s would add ~70 ticks; frozen, only the moments
	 * around pause and resume count (a few ticks, more on a loaded
	 * machine, where the pause itself takes longer) */
	cr_assert_lt(after_pause - before, 30, "the counter ran while paused (%ld then %ld)", before,
		     after_pause);
	usleep(300 * 1000);
	long later = read_counter(id);
	cr_assert_gt(later, after_pause, "the counter goes on after resume (%ld then %ld)", after_pause, later);
	s = sandbox_state(id);
	cr_assert_str_eq(s, "running");
	free(s);
	kill_and_free(id);
}

Test(pause, requests_on_a_paused_sandbox_fail_clearly)
{
	char *id = CREATE("--timeout", "120");
	ABOX_OK("pause", id);
	ABOX_EXPECT(125, NULL, "is paused", "exec", id, "--", "true");
	ABOX_EXPECT(NONZERO, NULL, "is paused", "files", "cat", id, "/etc/hostname");
	/* pausing twice, resuming twice: said so, not failures */
	ABOX_EXPECT(0, NULL, "already paused", "pause", id);
	struct run_result r;
	ABOX(&r, "ls", "--state", "paused");
	cr_assert(strstr(r.out, id), "ls --state paused lists it: %s", r.out);
	run_result_free(&r);
	ABOX_OK("resume", id);
	ABOX_EXPECT(0, NULL, "not paused", "resume", id);
	ABOX_EXPECT(0, "back\n", NULL, "exec", id, "--", "echo", "back");
	kill_and_free(id);
}

/* A frozen tree holds back signals on a v1 freezer: kill must still end
 * every process and remove every cgroup (the suite's leak check). */
Test(pause, kill_of_a_paused_sandbox_leaves_nothing)
{
	char *id = CREATE("--timeout", "120");
	ABOX_OK("exec", "-d", id, "--", "sleep", "1000");
	ABOX_OK("pause", id);
	ABOX_OK("kill", id);
	struct run_result r;
	ABOX(&r, "ls");
	cr_assert_null(strstr(r.out, id), "killed sandbox still listed: %s", r.out);
	run_result_free(&r);
	free(id);
}

/* The deadline is not spent while paused: a 2 s sandbox paused for 3 s is
 * alive after resume, and still ends by itself afterwards. */
Test(pause, timeout_clock_stops_while_paused)
{
	char *id = CREATE("--timeout", "2");
	ABOX_OK("pause", id);
	sleep(3);
	char *s = sandbox_state(id);
	cr_assert_str_eq(s, "paused", "a paused sandbox outlives its deadline");
	free(s);
	ABOX_OK("resume", id);
	ABOX_OK("exec", id, "--", "true");
	sleep(3);
	s = sandbox_state(id);
	cr_assert_str_eq(s, "dead", "the rest of the deadline still ends it");
	free(s);
	ABOX_ANY("gc");
	free(id);
}

/* A command's own timeout counts running time only, as the sandbox's
 * deadline does: time frozen does not use it up. */
Test(pause, command_timeout_stops_while_paused)
{
	char *id = CREATE("--timeout", "120");
	ABOX_OK("exec", "-d", "--tag", "waiter", "--timeout", "1.5", id, "--", "sleep", "1000");
	ABOX_OK("pause", id);
	sleep(3);
	ABOX_OK("resume", id);
	cr_assert(proc_running(id, "waiter"), "the command's timeout ran on while the sandbox was paused");
	bool ended = false;
	for (int i = 0; i < 60 && !ended; i++) {
		usleep(100 * 1000);
		ended = !proc_running(id, "waiter");
	}
	cr_assert(ended, "the rest of the command's timeout still ends it");
	kill_and_free(id);
}

/* E2B's keepMemory=false: files stay, processes and their memory go; resume
 * starts the same sandbox (id, env, metadata, limits) on those files. */
Test(pause, no_memory_keeps_files_and_drops_processes)
{
	char *id = CREATE("--timeout", "120", "--memory", "300M", "-e", "K=V", "--metadata", "m=1");
	/* what earlier tests left for gc goes first, so the list below is
	 * this test's alone */
	ABOX_OK("gc", "-q");
	struct run_result r;
	ABOX(&r, "snapshots", "ls", "--json");
	char *snaps_before = r.out;
	free(r.err);

	ABOX_OK("exec", "--user", "root", id, "--", "sh", "-c",
		"echo keep > /home/user/f; rm /etc/debian_version");
	ABOX_OK("exec", "-d", id, "--", "sleep", "1000");
	ABOX_OK("pause", "--no-memory", id);
	char *s = sandbox_state(id);
	cr_assert_str_eq(s, "paused");
	free(s);
	/* no process and no cgroup is left while paused this way */
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "find /sys/fs/cgroup -name '*%s*' | wc -l", id);
	FILE *f = popen(cmd, "r");
	int n = -1;
	cr_assert_eq(fscanf(f, "%d", &n), 1);
	pclose(f);
	cr_assert_eq(n, 0, "cgroups of a sandbox paused without memory remain");
	ABOX_EXPECT(125, NULL, "is paused", "exec", id, "--", "true");

	ABOX_OK("resume", id);
	char *out = ABOX_OUT("exec", id, "--", "sh", "-c",
			     "cat /home/user/f; echo $K; hostname;"
			     "pgrep -x sleep || echo no-sleep; test -e /etc/debian_version || echo gone");
	char want[128];
	snprintf(want, sizeof(want), "keep\nV\n%s\nno-sleep\ngone\n", id);
	cr_assert_str_eq(out, want);
	free(out);
	out = ABOX_OUT("info", "--json", id);
	cr_assert(strstr(out, "\"memoryBytes\":314572800") && strstr(out, "\"m\":\"1\""), "%s", out);
	free(out);

	/* twice, then kill while paused: nothing is left, its snapshots go
	 * with it */
	ABOX_OK("pause", "--no-memory", id);
	ABOX_OK("kill", id);
	ABOX_OK("gc");
	ABOX(&r, "ls");
	cr_assert_null(strstr(r.out, id), "%s", r.out);
	run_result_free(&r);
	ABOX(&r, "snapshots", "ls", "--json");
	cr_assert_str_eq(r.out, snaps_before, "the files of a killed sandbox were kept: %s -> %s", snaps_before, r.out);
	run_result_free(&r);
	free(snaps_before);
	free(id);
}

Test(pause, auto_pause_at_the_deadline_keeps_the_sandbox)
{
	char *id = CREATE("--timeout", "2", "--auto-pause");
	ABOX_OK("exec", "-d", id, "--", "sh", "-c",
		"i=0; while :; do i=$((i+1)); echo $i > /tmp/n.t; mv /tmp/n.t /tmp/n; sleep 0.1; done");
	sleep(3);
	/* past the deadline: nothing killed it, and gc (or aboxd) pauses it */
	char *s = sandbox_state(id);
	cr_assert_str_eq(s, "running", "an auto-pause sandbox was ended at its deadline");
	free(s);
	ABOX_OK("gc", "-q");
	s = sandbox_state(id);
	cr_assert_str_eq(s, "paused");
	free(s);
	ABOX_OK("resume", id);
	ABOX_OK("set-timeout", id, "60");
	long a = read_counter(id);
	usleep(500000);
	cr_assert_gt(read_counter(id), a, "the counter does not run on after the resume");
	kill_and_free(id);
	/* the layer its pause kept goes once unused */
	ABOX_OK("gc", "-q");
	/* bad options are still refused */
	ABOX_EXPECT(125, NULL, NULL, "create", "--auto-pause", "--timeout", "5", "--memory", "4M");
}

/* A sandbox has its own boot id, not the host's: a pause that keeps
 * memory keeps it (nothing rebooted), a pause without memory gives a new
 * one on resume (everything started again, as after a reboot). */
Test(pause, boot_id_is_the_sandbox_own_and_changes_only_on_a_restart)
{
	static const char *const cat_id[] = { "cat", "/proc/sys/kernel/random/boot_id", NULL };
	char *id = CREATE("--timeout", "120");
	char host[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	cr_assert(f && fgets(host, sizeof(host), f));
	fclose(f);
	const char *args[8] = { "exec", id, "--", cat_id[0], cat_id[1], NULL };
	char *first = run_abox_out(args);
	cr_assert_eq(strlen(first), 37, "a UUID and a newline: '%s'", first);
	cr_assert_str_neq(first, host, "the host's boot id is shown inside");
	char *other_id = CREATE("--timeout", "120");
	const char *oargs[8] = { "exec", other_id, "--", cat_id[0], cat_id[1], NULL };
	char *other = run_abox_out(oargs);
	cr_assert_str_neq(first, other, "two sandboxes share a boot id");

	ABOX_OK("pause", id);
	ABOX_OK("resume", id);
	char *kept = run_abox_out(args);
	cr_assert_str_eq(kept, first, "a pause with memory changed the boot id");

	ABOX_OK("pause", "--no-memory", id);
	ABOX_OK("resume", id);
	char *rebooted = run_abox_out(args);
	cr_assert_eq(strlen(rebooted), 37, "'%s'", rebooted);
	cr_assert_str_neq(rebooted, first, "a restart without memory kept the boot id");

	/* the boot id is not writable inside */
	ABOX_EXPECT(NONZERO, NULL, NULL, "exec", "--user", "root", id, "--", "sh", "-c",
		    "echo x > /proc/sys/kernel/random/boot_id");
	ABOX_OK("kill", id, other_id);
	free(first);
	free(other);
	free(kept);
	free(rebooted);
	free(id);
	free(other_id);
}
