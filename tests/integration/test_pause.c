/* Pause and resume: a frozen sandbox does no work and its timeout clock
 * stops; commands and file requests are refused clearly; kill of a
 * paused sandbox leaves nothing behind. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(pause, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 120);

static char *create(const char *timeout)
{
	struct run_result r;
	ABOX(&r, "create", "--timeout", timeout);
	cr_assert_eq(r.status, 0, "create failed: %s", r.err);
	cr_assert_eq(strlen(r.out), 21, "create prints the id: '%s'", r.out);
	r.out[20] = '\0';
	free(r.err);
	return r.out;
}

static void ok(const char *what, const char *const *args)
{
	struct run_result r;
	run_abox(&r, NULL, 0, args);
	cr_assert_eq(r.status, 0, "%s failed: %s", what, r.err);
	run_result_free(&r);
}

static long counter(const char *id)
{
	struct run_result r;
	ABOX(&r, "exec", id, "--", "cat", "/tmp/n");
	cr_assert_eq(r.status, 0, "reading the counter: %s", r.err);
	long n = atol(r.out);
	run_result_free(&r);
	return n;
}

static char *state(const char *id)
{
	struct run_result r;
	ABOX(&r, "info", "--json", id);
	cr_assert_eq(r.status, 0, "info: %s", r.err);
	json_object *o = json_tokener_parse(r.out), *v;
	cr_assert(o && json_object_object_get_ex(o, "state", &v), "info --json: %s", r.out);
	char *s = strdup(json_object_get_string(v));
	json_object_put(o);
	run_result_free(&r);
	return s;
}

Test(pause, counter_stops_while_paused_and_goes_on_after_resume)
{
	char *id = create("120");
	ok("exec -d", (const char *const[]){ "exec", "-d", id, "--", "sh", "-c",
					     "i=0; while :; do i=$((i+1)); echo $i > /tmp/n; sleep 0.02; done",
					     NULL });
	usleep(300 * 1000);
	long before = counter(id);
	ok("pause", (const char *const[]){ "pause", id, NULL });
	char *s = state(id);
	cr_assert_str_eq(s, "paused");
	free(s);
	usleep(600 * 1000);
	ok("resume", (const char *const[]){ "resume", id, NULL });
	long after_pause = counter(id);
	/* running, those 600 ms would add ~25 ticks; frozen, only the few
	 * milliseconds around pause and resume count */
	cr_assert_lt(after_pause - before, 10, "the counter ran while paused (%ld then %ld)", before,
		     after_pause);
	usleep(300 * 1000);
	long later = counter(id);
	cr_assert_gt(later, after_pause, "the counter goes on after resume (%ld then %ld)", after_pause, later);
	s = state(id);
	cr_assert_str_eq(s, "running");
	free(s);
	ok("kill", (const char *const[]){ "kill", id, NULL });
	free(id);
}

Test(pause, requests_on_a_paused_sandbox_fail_clearly)
{
	char *id = create("120");
	ok("pause", (const char *const[]){ "pause", id, NULL });
	struct run_result r;
	ABOX(&r, "exec", id, "--", "true");
	cr_assert_eq(r.status, 125, "exec on a paused sandbox: %s", r.err);
	cr_assert(strstr(r.err, "is paused"), "%s", r.err);
	run_result_free(&r);
	ABOX(&r, "files", "cat", id, "/etc/hostname");
	cr_assert_neq(r.status, 0);
	cr_assert(strstr(r.err, "is paused"), "%s", r.err);
	run_result_free(&r);
	/* pausing twice, resuming twice: said so, not failures */
	ABOX(&r, "pause", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "already paused"), "%s", r.err);
	run_result_free(&r);
	ABOX(&r, "ls", "--state", "paused");
	cr_assert(strstr(r.out, id), "ls --state paused lists it: %s", r.out);
	run_result_free(&r);
	ok("resume", (const char *const[]){ "resume", id, NULL });
	ABOX(&r, "resume", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "not paused"), "%s", r.err);
	run_result_free(&r);
	ABOX(&r, "exec", id, "--", "echo", "back");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "back\n");
	run_result_free(&r);
	ok("kill", (const char *const[]){ "kill", id, NULL });
	free(id);
}

/* A frozen tree holds back signals on a v1 freezer: kill must still end
 * every process and remove every cgroup (the suite's leak check). */
Test(pause, kill_of_a_paused_sandbox_leaves_nothing)
{
	char *id = create("120");
	ok("exec -d", (const char *const[]){ "exec", "-d", id, "--", "sleep", "1000", NULL });
	ok("pause", (const char *const[]){ "pause", id, NULL });
	ok("kill", (const char *const[]){ "kill", id, NULL });
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
	char *id = create("2");
	ok("pause", (const char *const[]){ "pause", id, NULL });
	sleep(3);
	char *s = state(id);
	cr_assert_str_eq(s, "paused", "a paused sandbox outlives its deadline");
	free(s);
	ok("resume", (const char *const[]){ "resume", id, NULL });
	ok("exec after resume", (const char *const[]){ "exec", id, "--", "true", NULL });
	sleep(3);
	s = state(id);
	cr_assert_str_eq(s, "dead", "the rest of the deadline still ends it");
	free(s);
	struct run_result r;
	ABOX(&r, "gc");
	run_result_free(&r);
	free(id);
}

/* A command's own timeout counts running time only, as the sandbox's
 * deadline does: time frozen does not use it up. */
static bool proc_running(const char *id, const char *tag)
{
	struct run_result r;
	ABOX(&r, "ps", id);
	cr_assert_eq(r.status, 0, "ps: %s", r.err);
	bool running = false;
	for (char *l = strtok(r.out, "\n"); l; l = strtok(NULL, "\n"))
		if (strstr(l, tag))
			running = strstr(l, "running") != NULL;
	run_result_free(&r);
	return running;
}

Test(pause, command_timeout_stops_while_paused)
{
	char *id = create("120");
	ok("exec -d --timeout", (const char *const[]){ "exec", "-d", "--tag", "waiter", "--timeout", "1.5", id, "--",
						       "sleep", "1000", NULL });
	ok("pause", (const char *const[]){ "pause", id, NULL });
	sleep(3);
	ok("resume", (const char *const[]){ "resume", id, NULL });
	cr_assert(proc_running(id, "waiter"), "the command's timeout ran on while the sandbox was paused");
	bool ended = false;
	for (int i = 0; i < 60 && !ended; i++) {
		usleep(100 * 1000);
		ended = !proc_running(id, "waiter");
	}
	cr_assert(ended, "the rest of the command's timeout still ends it");
	ok("kill", (const char *const[]){ "kill", id, NULL });
	free(id);
}

static char *out_of(const char *const *args)
{
	struct run_result r;
	run_abox(&r, NULL, 0, args);
	cr_assert_eq(r.status, 0, "abox %s failed: %s", args[0], r.err);
	free(r.err);
	return r.out;
}

/* E2B's keepMemory=false: files stay, processes and their memory go; resume
 * starts the same sandbox (id, env, metadata, limits) on those files. */
Test(pause, no_memory_keeps_files_and_drops_processes)
{
	struct run_result r;
	ABOX(&r, "create", "--timeout", "120", "--memory", "300M", "-e", "K=V", "--metadata", "m=1");
	cr_assert_eq(r.status, 0, "%s", r.err);
	r.out[20] = '\0';
	char *id = strdup(r.out);
	run_result_free(&r);
	/* what earlier tests left for gc goes first, so the list below is
	 * this test's alone */
	ok("gc", (const char *const[]){ "gc", "-q", NULL });
	ABOX(&r, "snapshots", "ls", "--json");
	char *snaps_before = r.out;
	free(r.err);

	ok("write", (const char *const[]){ "exec", "--user", "root", id, "--", "sh", "-c",
					   "echo keep > /home/user/f; rm /etc/debian_version", NULL });
	ok("exec -d", (const char *const[]){ "exec", "-d", id, "--", "sleep", "1000", NULL });
	ok("pause --no-memory", (const char *const[]){ "pause", "--no-memory", id, NULL });
	char *s = state(id);
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
	ABOX(&r, "exec", id, "--", "true");
	cr_assert_eq(r.status, 125);
	cr_assert(strstr(r.err, "is paused"), "%s", r.err);
	run_result_free(&r);

	ok("resume", (const char *const[]){ "resume", id, NULL });
	char *out = out_of((const char *const[]){ "exec", id, "--", "sh", "-c",
						  "cat /home/user/f; echo $K; hostname;"
						  "pgrep -x sleep || echo no-sleep; test -e /etc/debian_version || echo gone",
						  NULL });
	char want[128];
	snprintf(want, sizeof(want), "keep\nV\n%s\nno-sleep\ngone\n", id);
	cr_assert_str_eq(out, want);
	free(out);
	out = out_of((const char *const[]){ "info", "--json", id, NULL });
	cr_assert(strstr(out, "\"memoryBytes\":314572800") && strstr(out, "\"m\":\"1\""), "%s", out);
	free(out);

	/* twice, then kill while paused: nothing is left, its snapshots go
	 * with it */
	ok("pause --no-memory", (const char *const[]){ "pause", "--no-memory", id, NULL });
	ok("kill", (const char *const[]){ "kill", id, NULL });
	ok("gc", (const char *const[]){ "gc", NULL });
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
	struct run_result r;
	ABOX(&r, "create", "--timeout", "2", "--auto-pause");
	cr_assert_eq(r.status, 0, "%s", r.err);
	r.out[20] = '\0';
	char id[ABOX_ID_LEN + 1];
	memcpy(id, r.out, 21);
	run_result_free(&r);
	ok("exec -d", (const char *const[]){ "exec", "-d", id, "--", "sh", "-c",
					     "i=0; while :; do i=$((i+1)); echo $i > /tmp/n; sleep 0.1; done", NULL });
	sleep(3);
	/* past the deadline: nothing killed it, and gc (or aboxd) pauses it */
	char *s = state(id);
	cr_assert_str_eq(s, "running", "an auto-pause sandbox was ended at its deadline");
	free(s);
	ok("gc", (const char *const[]){ "gc", "-q", NULL });
	s = state(id);
	cr_assert_str_eq(s, "paused");
	free(s);
	ok("resume", (const char *const[]){ "resume", id, NULL });
	ok("set-timeout", (const char *const[]){ "set-timeout", id, "60", NULL });
	long a = counter(id);
	usleep(500000);
	cr_assert_gt(counter(id), a, "the counter does not run on after the resume");
	ok("kill", (const char *const[]){ "kill", id, NULL });
	/* the layer its pause kept goes once unused */
	ok("gc", (const char *const[]){ "gc", "-q", NULL });
	ABOX(&r, "create", "--auto-pause", "--timeout", "5", "--memory", "4M");
	cr_assert_eq(r.status, 125, "bad options are still refused");
	run_result_free(&r);
}

/* A sandbox has its own boot id, not the host's: a pause that keeps
 * memory keeps it (nothing rebooted), a pause without memory gives a new
 * one on resume (everything started again, as after a reboot). */
Test(pause, boot_id_is_the_sandbox_own_and_changes_only_on_a_restart)
{
	static const char *const cat_id[] = { "cat", "/proc/sys/kernel/random/boot_id", NULL };
	char *id = create("120");
	char host[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	cr_assert(f && fgets(host, sizeof(host), f));
	fclose(f);
	const char *args[8] = { "exec", id, "--", cat_id[0], cat_id[1], NULL };
	char *first = out_of(args);
	cr_assert_eq(strlen(first), 37, "a UUID and a newline: '%s'", first);
	cr_assert_str_neq(first, host, "the host's boot id is shown inside");
	char *other_id = create("120");
	const char *oargs[8] = { "exec", other_id, "--", cat_id[0], cat_id[1], NULL };
	char *other = out_of(oargs);
	cr_assert_str_neq(first, other, "two sandboxes share a boot id");

	ok("pause", (const char *const[]){ "pause", id, NULL });
	ok("resume", (const char *const[]){ "resume", id, NULL });
	char *kept = out_of(args);
	cr_assert_str_eq(kept, first, "a pause with memory changed the boot id");

	ok("pause --no-memory", (const char *const[]){ "pause", "--no-memory", id, NULL });
	ok("resume", (const char *const[]){ "resume", id, NULL });
	char *rebooted = out_of(args);
	cr_assert_eq(strlen(rebooted), 37, "'%s'", rebooted);
	cr_assert_str_neq(rebooted, first, "a restart without memory kept the boot id");

	struct run_result r;
	ABOX(&r, "exec", "--user", "root", id, "--", "sh", "-c", "echo x > /proc/sys/kernel/random/boot_id");
	cr_assert_neq(r.status, 0, "the boot id is writable inside");
	run_result_free(&r);
	ok("kill", (const char *const[]){ "kill", id, other_id, NULL });
	free(first);
	free(other);
	free(kept);
	free(rebooted);
	free(id);
	free(other_id);
}
