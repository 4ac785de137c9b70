/* Memory checkpoints through the checkpoint hook (CRIU, set up by
 * scripts/criu-setup.sh): pause to disk frees the sandbox's memory and
 * resume continues its processes where they were; memory snapshots and
 * forks give independent copies of running processes; without a working
 * checkpointer, or when a dump fails, the sandbox runs on untouched. */
#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static void fini(void)
{
	unsetenv("ABOX_CHECKPOINTER");
	ABOX_ANY("gc");
	sandbox_suite_fini();
}

TestSuite(checkpoint, .init = checkpoint_suite_init, .fini = fini, .timeout = 300);

static char *create(void)
{
	return CREATE("--timeout", "240");
}

/* A counter as `user` (the default), one step per 100 ms. */
static void start_counter(const char *id)
{
	ABOX_OK("exec", "-d", id, "--", "sh", "-c",
		"echo $$ > /tmp/pid; i=0; while :; do i=$((i+1)); echo $i > /tmp/n.t; mv /tmp/n.t /tmp/n; "
		"sleep 0.1; done");
}

static long wait_counter(const char *id, long at_least)
{
	for (int i = 0; i < 100; i++) {
		struct run_result r;
		ABOX(&r, "exec", id, "--", "cat", "/tmp/n");
		long n = r.status == 0 ? atol(r.out) : 0;
		run_result_free(&r);
		if (n >= at_least)
			return n;
		usleep(100000);
	}
	cr_assert_fail("the counter of %s never reached %ld", id, at_least);
	return 0;
}

static uint64_t mem_used(const char *id)
{
	char *out = ABOX_OUT("metrics", "--json", id);
	json_object *o = json_tokener_parse(out), *v;
	cr_assert(o && json_object_object_get_ex(o, "memUsed", &v), "metrics --json: %s", out);
	uint64_t m = (uint64_t)json_object_get_int64(v);
	json_object_put(o);
	free(out);
	return m;
}

static bool cgroups_exist(const char *id)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "find /sys/fs/cgroup -maxdepth 6 -name 'abox-%s' | grep -q .", id);
	return system(cmd) == 0;
}

Test(checkpoint, pause_to_disk_frees_memory_and_resume_continues_the_counter)
{
	CHECKPOINT_NEEDED();
	char *id = create();
	start_counter(id);
	ABOX_OK("exec", "-d", id, "--", "python3", "-c",
		"import time; x = bytearray(64 << 20); x[::4096] = b'1' * len(x[::4096]); time.sleep(1000)");
	wait_counter(id, 3);
	for (int i = 0; i < 50 && mem_used(id) < (64u << 20); i++)
		usleep(100000);
	uint64_t before = mem_used(id);
	cr_assert_geq(before, 64u << 20, "the sandbox holds %llu bytes, not 64 MiB", (unsigned long long)before);
	long c0 = read_counter(id);

	/* the checkpointer's trial made by this pause, not by doctor: the
	 * caller then holds a pidfd of the sandbox's init, which the trial's
	 * process must not inherit (CRIU refused it, and the verdict kept
	 * said this kernel cannot checkpoint) */
	char trial[4300];
	snprintf(trial, sizeof(trial), "%s/checkpointer-trial", state_root());
	cr_assert(unlink(trial) == 0 || errno == ENOENT);
	ABOX_OK("pause", "--to-disk", id);
	char *s = sandbox_state(id);
	cr_assert_str_eq(s, "paused");
	free(s);
	/* the memory left with the cgroups: nothing is charged any more */
	cr_assert(!cgroups_exist(id), "the cgroups of a sandbox paused to disk are still there");
	/* ... and went to disk: the page images hold the 64 MiB */
	char cmd[4400];
	snprintf(cmd, sizeof(cmd), "test $(du -sm '%s/sandboxes/%s/checkpoint' | cut -f1) -ge 64", state_root(), id);
	cr_assert_eq(system(cmd), 0, "the checkpoint is smaller than the memory it holds");
	ABOX_EXPECT(125, NULL, "paused", "exec", id, "--", "true");

	sleep(1); /* the counter must not move while on disk */
	ABOX_OK("resume", id);
	long c1 = read_counter(id);
	cr_assert(c1 >= c0 && c1 < c0 + 8, "after 1 s on disk the counter went from %ld to %ld", c0, c1);
	long c2 = wait_counter(id, c1 + 3);
	cr_assert_gt(c2, c1);
	cr_assert_geq(mem_used(id), 64u << 20, "the 64 MiB did not come back");
	char *ps = ABOX_OUT("ps", id);
	cr_assert(strstr(ps, "python3"), "the python process is gone after resume:\n%s", ps);
	free(ps);
	/* the resumed sandbox is a full one: files, pause, and a second trip */
	ABOX_OK("exec", id, "--", "sh", "-c", "echo kept > /tmp/file");
	ABOX_OK("pause", "--to-disk", id);
	ABOX_OK("resume", id);
	char *f = ABOX_OUT("exec", id, "--", "cat", "/tmp/file");
	cr_assert_str_eq(f, "kept\n");
	free(f);
	wait_counter(id, c2 + 2);
	ABOX_OK("kill", id);
	cr_assert(!cgroups_exist(id));
	free(id);
}

/* A command's own timeout is kept as what is left while the sandbox is on
 * disk (the restore may even be on another boot): it runs out after the
 * resume, not while away. */
Test(checkpoint, command_timeout_waits_while_on_disk)
{
	CHECKPOINT_NEEDED();
	char *id = create();
	ABOX_OK("exec", "-d", "--tag", "waiter", "--timeout", "2", id, "--", "sleep", "1000");
	ABOX_OK("pause", "--to-disk", id);
	sleep(3);
	ABOX_OK("resume", id);
	cr_assert(proc_running(id, "waiter"), "the command's timeout ran out while the sandbox was on disk");
	bool ended = false;
	for (int i = 0; i < 80 && !ended; i++) {
		usleep(100000);
		ended = !proc_running(id, "waiter");
	}
	cr_assert(ended, "the rest of the command's timeout still ends it after the restore");
	kill_and_free(id);
}

Test(checkpoint, kill_of_a_sandbox_on_disk_leaves_nothing)
{
	CHECKPOINT_NEEDED();
	char *id = create();
	start_counter(id);
	wait_counter(id, 2);
	ABOX_OK("pause", "--to-disk", id);
	/* pausing a paused sandbox is said, not failed */
	ABOX_EXPECT(0, NULL, "already paused", "pause", "--to-disk", id);
	ABOX_OK("kill", id);
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/sandboxes/%s", state_root(), id);
	struct stat st;
	cr_assert_neq(stat(dir, &st), 0, "%s (and its checkpoint) is still there", dir);
	ABOX_EXPECT(125, NULL, NULL, "info", id);
	free(id);
}

Test(checkpoint, memory_fork_gives_independent_counters)
{
	CHECKPOINT_NEEDED();
	char *src = create();
	start_counter(src);
	long at = wait_counter(src, 5);
	char *out = ABOX_OUT("fork", "--memory", "--count", "3", src);
	char ids[3][ABOX_ID_LEN + 1];
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(strlen(out) >= (size_t)(i + 1) * 21, 1, "fork output: %s", out);
		/* one line per fork: its id, or "error: ..." */
		cr_assert_neq(strncmp(out + 21 * i, "error", 5), 0, "a fork failed: %s", out);
		memcpy(ids[i], out + 21 * i, 20);
		ids[i][20] = '\0';
	}
	free(out);
	/* every fork runs the counter on from where the source was */
	for (int i = 0; i < 3; i++) {
		long c = read_counter(ids[i]);
		cr_assert_geq(c, at, "fork %s starts at %ld, the source was at %ld", ids[i], c, at);
	}
	/* independent: one fork's files and processes are its own */
	ABOX_OK("exec", ids[0], "--", "sh", "-c", "echo mine > /tmp/mark; kill $(cat /tmp/pid)");
	usleep(300000);
	long stopped = read_counter(ids[0]);
	usleep(500000);
	cr_assert_eq(read_counter(ids[0]), stopped, "the counter of fork 0 was stopped but moves");
	for (int i = 1; i < 3; i++) {
		/* fork i must not see fork 0's file */
		ABOX_EXPECT(NONZERO, NULL, NULL, "exec", ids[i], "--", "cat", "/tmp/mark");
		long c = read_counter(ids[i]);
		wait_counter(ids[i], c + 2);
	}
	long s = read_counter(src);
	wait_counter(src, s + 2); /* the source runs on */
	ABOX_OK("kill", src, ids[0], ids[1], ids[2]);
	free(src);
}

Test(checkpoint, memory_snapshot_restores_into_new_sandboxes)
{
	CHECKPOINT_NEEDED();
	char *src = create();
	start_counter(src);
	ABOX_OK("exec", src, "--", "sh", "-c", "echo from-source > /tmp/f");
	long at = wait_counter(src, 4);
	char *snap = ABOX_LINE("snapshot", "--memory", "--name", "abox-test-mem", src);
	char *ls = ABOX_OUT("snapshots", "ls", "--json");
	cr_assert(strstr(ls, "\"memory\":true"), "%s", ls);
	free(ls);
	ABOX_OK("kill", src);
	/* the source is gone; the snapshot brings its processes back */
	char *id = ABOX_LINE("create", "--from", "abox-test-mem");
	long c = read_counter(id);
	cr_assert_geq(c, at);
	wait_counter(id, c + 3);
	char *f = ABOX_OUT("exec", id, "--", "cat", "/tmp/f");
	cr_assert_str_eq(f, "from-source\n");
	free(f);
	/* a snapshot in use is not removed */
	ABOX_EXPECT(125, NULL, NULL, "snapshots", "rm", "abox-test-mem");
	ABOX_OK("kill", id);
	ABOX_OK("snapshots", "rm", "abox-test-mem");
	free(id);
	free(snap);
}

Test(checkpoint, without_a_working_checkpointer_the_sandbox_runs_on)
{
	char *id = create();
	start_counter(id);
	long c = wait_counter(id, 2);
	/* none at all */
	setenv("ABOX_CHECKPOINTER", "/nonexistent/criu", 1);
	ABOX_EXPECT(125, NULL, "/nonexistent/criu", "pause", "--to-disk", id);
	/* one that fails its dump: the tree was frozen and init let go of its
	 * sockets; both must come back */
	setenv("ABOX_CHECKPOINTER", "/bin/false", 1);
	ABOX_EXPECT(125, NULL, "checkpointer failed", "pause", "--to-disk", id);
	ABOX_EXPECT(NONZERO, NULL, NULL, "fork", "--memory", id);
	unsetenv("ABOX_CHECKPOINTER");
	char *s = sandbox_state(id);
	cr_assert_str_eq(s, "running");
	free(s);
	wait_counter(id, c + 3);
	ABOX_OK("exec", id, "--", "true");
	if (checkpoint_unusable()) {
		/* the recorded checkpointer failed its trial here: refused
		 * at once, naming where the reason is, the sandbox untouched;
		 * the pause that keeps memory freezes it in place */
		ABOX_EXPECT(125, NULL, "abox doctor", "pause", "--to-disk", id);
		ABOX_EXPECT(NONZERO, NULL, "doctor", "fork", "--memory", id);
		ABOX_OK("pause", id);
		s = sandbox_state(id);
		cr_assert_str_eq(s, "paused");
		free(s);
		ABOX_OK("resume", id);
		wait_counter(id, c + 5);
		kill_and_free(id);
		return;
	}
	/* and a real checkpoint still works after that */
	ABOX_OK("pause", "--to-disk", id);
	ABOX_OK("resume", id);
	wait_counter(id, c + 5);
	kill_and_free(id);
}

/* A checkpointer that passes `criu check` but never finishes a dump (as
 * CRIU on a paravirtualised kernel): its trial fails once, in bounded
 * time, and it is then never used — not even tried again — so a pause
 * to disk is refused at once instead of hanging. */
Test(checkpoint, a_checkpointer_whose_dump_hangs_is_never_used)
{
	char rec[4200], keep[4300], hook[] = "/tmp/abox-hanging-criu.XXXXXX";
	snprintf(rec, sizeof(rec), "%s/checkpointer", state_root());
	snprintf(keep, sizeof(keep), "%s.kept", rec);
	int fd = mkstemp(hook);
	cr_assert(fd >= 0);
	const char script[] = "#!/bin/sh\n"
			      "case \"$1\" in check|--version) echo 'Version: 0.0-hangs'; exit 0 ;; esac\n"
			      "exec sleep 600\n";
	cr_assert(write(fd, script, sizeof(script) - 1) == (ssize_t)(sizeof(script) - 1));
	fchmod(fd, 0755);
	close(fd);
	cr_assert(rename(rec, keep) == 0 || errno == ENOENT);
	FILE *f = fopen(rec, "w");
	fprintf(f, "%s\n", hook);
	fclose(f);
	setenv("ABOX_CHECKPOINT_TRIAL_S", "2", 1);
	struct run_result r;
	ABOX(&r, "doctor");
	cr_expect(strstr(r.out, "cannot checkpoint on this kernel") && strstr(r.out, "did not finish in 2 s"),
		  "doctor does not say the hanging checkpointer cannot checkpoint:\n%s", r.out);
	run_result_free(&r);
	char *id = create();
	/* no second trial: the verdict is kept for this checkpointer */
	ABOX(&r, "pause", "--to-disk", id);
	cr_expect(r.status == 125 && r.seconds < 1.5, "pause --to-disk: status %d after %.1f s: %s", r.status,
		  r.seconds, r.err);
	run_result_free(&r);
	/* a verdict of "too slow" is kept for a while only (a busy machine
	 * must not end checkpoints for good): once that while is over, the
	 * next caller tries again */
	char trial[4300], *kept = NULL;
	snprintf(trial, sizeof(trial), "%s/checkpointer-trial", state_root());
	size_t klen = 0;
	f = fopen(trial, "r");
	cr_assert(f, "no verdict kept in %s", trial);
	cr_assert(getdelim(&kept, &klen, '\0', f) > 0);
	fclose(f);
	char *until = strstr(kept, "\nuntil ");
	cr_assert(until, "a timed-out trial is kept for a while, not for good: %s", kept);
	strcpy(until, "\nuntil 1\n");
	f = fopen(trial, "w");
	fputs(kept, f);
	fclose(f);
	free(kept);
	ABOX(&r, "pause", "--to-disk", id);
	cr_expect(r.status == 125 && r.seconds >= 1.9,
		  "pause --to-disk after the verdict expired: status %d after %.1f s: %s", r.status,
		  r.seconds, r.err);
	run_result_free(&r);
	unsetenv("ABOX_CHECKPOINT_TRIAL_S");
	unlink(rec);
	(void)rename(keep, rec);
	unlink(hook);
	kill_and_free(id);
}
