/* `abox run`: exit codes, streams, stdin, env, cwd, user, timeout, signals,
 * bad input. Every test checks that nothing was left behind. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TestSuite(run, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 120);

Test(run, hello_python)
{
	ABOX_EXPECT(0, "hello from a sandbox\n", NULL, "run", "--", "python3", "-c",
		    "print('hello from a sandbox')");
}

Test(run, exit_code_passes_through)
{
	ABOX_EXPECT(3, NULL, NULL, "run", "--", "sh", "-c", "exit 3");
}

Test(run, signal_gives_128_plus_n)
{
	ABOX_EXPECT(143, NULL, NULL, "run", "--", "sh", "-c", "kill -TERM $$");
	ABOX_EXPECT(137, NULL, NULL, "run", "--", "sh", "-c", "kill -KILL $$");
}

Test(run, stdout_and_stderr_are_separate)
{
	struct run_result r;
	ABOX(&r, "run", "--", "sh", "-c", "echo out; echo err >&2");
	cr_assert_eq(r.status, 0);
	cr_assert_str_eq(r.out, "out\n");
	cr_assert_str_eq(r.err, "err\n");
	run_result_free(&r);
}

Test(run, large_output_is_complete)
{
	struct run_result r;
	ABOX(&r, "run", "--", "sh", "-c", "head -c 5000000 /dev/zero | tr '\\0' x");
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.out_len, 5000000);
	run_result_free(&r);
}

Test(run, stdin_with_i)
{
	struct run_result r;
	const char in[] = "line one\nline two\n";
	run_abox(&r, in, sizeof(in) - 1, (const char *const[]){ "run", "-i", "--", "sh", "-c", "cat; echo done", NULL });
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert_str_eq(r.out, "line one\nline two\ndone\n");
	run_result_free(&r);
}

Test(run, stdin_without_i_is_empty)
{
	struct run_result r;
	run_abox(&r, "data", 4, (const char *const[]){ "run", "--", "sh", "-c", "cat; echo end", NULL });
	cr_assert_eq(r.status, 0);
	cr_assert_str_eq(r.out, "end\n");
	run_result_free(&r);
}

Test(run, big_stdin_round_trip)
{
	size_t n = 3 << 20;
	char *in = malloc(n);
	for (size_t i = 0; i < n; i++)
		in[i] = (char)('a' + i % 26);
	struct run_result r;
	run_abox(&r, in, n, (const char *const[]){ "run", "-i", "--", "cat", NULL });
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert_eq(r.out_len, n);
	cr_assert_eq(memcmp(r.out, in, n), 0);
	run_result_free(&r);
	free(in);
}

Test(run, env_and_defaults)
{
	ABOX_EXPECT(0,
		    "bar baz||/home/user|user|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n",
		    NULL, "run", "-e", "FOO=bar baz", "-e", "EMPTY=", "--", "sh", "-c",
		    "echo \"$FOO|$EMPTY|$HOME|$USER|$PATH\"");
}

Test(run, cwd_default_and_option)
{
	ABOX_EXPECT(ANY_STATUS, "/home/user\n", NULL, "run", "--", "pwd");
	ABOX_EXPECT(ANY_STATUS, "/tmp\n", NULL, "run", "--cwd", "/tmp", "--", "pwd");
	/* a bad cwd is 'cannot run', not 'command not found' */
	ABOX_EXPECT(126, NULL, "cwd '/nonexistent': No such file or directory", "run", "--cwd",
		    "/nonexistent", "--", "pwd");
}

Test(run, user_and_root)
{
	ABOX_EXPECT(ANY_STATUS, "uid=1000(user) gid=1000(user) groups=1000(user)\n", NULL, "run", "--", "id");
	ABOX_EXPECT(ANY_STATUS, "0\n", NULL, "run", "--user", "root", "--", "id", "-u");
	ABOX_EXPECT(125, NULL, "unknown user 'bob'", "run", "--user", "bob", "--", "id");
}

Test(run, command_not_found_is_127)
{
	ABOX_EXPECT(127, NULL, "exec 'no-such-command-abox': No such file or directory", "run", "--",
		    "no-such-command-abox");
	ABOX_EXPECT(126, NULL, NULL, "run", "--", "/etc/passwd");
}

Test(run, missing_command_is_125)
{
	ABOX_EXPECT(125, NULL, "missing command", "run");
	ABOX_EXPECT(125, NULL, NULL, "run", "--");
}

Test(run, timeout_kills_the_sandbox)
{
	struct run_result r;
	ABOX(&r, "run", "--timeout", "1", "--", "sh", "-c", "sleep 30 & sleep 30");
	cr_assert_eq(r.status, 124, "stderr: %s", r.err);
	cr_assert(strstr(r.err, "killed: timeout"), "stderr: %s", r.err);
	cr_assert_lt(r.seconds, 10.0);
	run_result_free(&r);
}

Test(run, bad_limits_are_125)
{
	const char *bad[][2] = {
		{ "--memory", "abc" }, { "--memory", "1k" }, { "--cpus", "0" }, { "--cpus", "-1" },
		{ "--pids", "0" }, { "--disk", "12Q" }, { "--timeout", "soon" }, { "--timeout", "0" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct run_result r;
		ABOX(&r, "run", bad[i][0], bad[i][1], "--", "true");
		cr_assert_eq(r.status, 125, "%s %s", bad[i][0], bad[i][1]);
		cr_assert(strstr(r.err, bad[i][0]) || strstr(r.err, "limit"), "%s %s: %s", bad[i][0], bad[i][1], r.err);
		run_result_free(&r);
	}
}

Test(run, unknown_template_is_125)
{
	ABOX_EXPECT(125, NULL, "template 'nope' not found", "run", "--template", "nope", "--", "true");
}

Test(run, output_streams_before_exit)
{
	int o, e;
	pid_t p = start_abox(&o, &e, (const char *const[]){ "run", "--", "sh", "-c", "echo first; sleep 2; echo second", NULL });
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char buf[64];
	ssize_t n = read(o, buf, sizeof(buf));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_gt(n, 0);
	double dt = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	cr_assert_lt(dt, 1.5, "first line must arrive before the command ends");
	cr_assert_eq(strncmp(buf, "first\n", 6), 0);
	free(slurp(o));
	free(slurp(e));
	cr_assert_eq(wait_exit(p), 0);
}

/* `abox run -- sh -c SCRIPT`, sent sig once SCRIPT printed its first
 * output; returns abox's exit status, *out the rest of its stdout. */
static int signal_when_ready(const char *script, int sig, char **out)
{
	int o, e;
	pid_t p = start_abox(&o, &e, (const char *const[]){ "run", "--", "sh", "-c", script, NULL });
	char buf[16];
	cr_assert_gt(read(o, buf, sizeof(buf)), 0);
	kill(p, sig);
	*out = slurp(o);
	free(slurp(e));
	return wait_exit(p);
}

Test(run, sigint_reaches_the_command)
{
	char *out;
	int st = signal_when_ready("trap 'echo got-int; exit 7' INT; echo ready; while :; do sleep 0.1; done",
				   SIGINT, &out);
	cr_assert_eq(st, 7);
	cr_assert(strstr(out, "got-int"), "out: %s", out);
	free(out);
}

Test(run, sigterm_of_abox_cleans_up)
{
	char *out;
	cr_assert_eq(signal_when_ready("trap '' TERM; echo ready; sleep 60", SIGTERM, &out), 143);
	free(out);
}

Test(run, background_children_do_not_outlive)
{
	struct run_result r;
	ABOX(&r, "run", "--", "sh", "-c", "sleep 100 & echo started");
	cr_assert_eq(r.status, 0);
	cr_assert_str_eq(r.out, "started\n");
	cr_assert_lt(r.seconds, 10.0);
	run_result_free(&r);
}

Test(run, bad_policy_is_125)
{
	char path[] = "/tmp/abox-bad-policy-XXXXXX";
	int fd = mkstemp(path);
	const char *bad = "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": [\"mountt\"], \"action\": \"SCMP_ACT_ERRNO\"}]}";
	cr_assert_eq(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
	close(fd);
	/* the error names the culprit */
	ABOX_EXPECT(125, NULL, "mountt", "run", "--seccomp", path, "--", "true");

	fd = open(path, O_WRONLY | O_TRUNC);
	cr_assert_eq(write(fd, "{ not json", 10), 10);
	close(fd);
	ABOX_EXPECT(125, NULL, "seccomp", "run", "--seccomp", path, "--", "true");
	unlink(path);

	ABOX_EXPECT(125, NULL, "/nonexistent/policy.json", "run", "--seccomp", "/nonexistent/policy.json",
		    "--", "true");
}

Test(run, failed_create_in_the_child_leaves_nothing)
{
	/* A non-ELF "abox-init": the sandbox child gets through every mount,
	 * then its exec fails. The error names the step; the fini check proves
	 * no mount, cgroup or folder survived. */
	setenv("ABOX_INIT", "/etc/passwd", 1);
	ABOX_EXPECT(125, NULL, "abox: create: exec abox-init: Exec format error", "run", "--", "true");
	unsetenv("ABOX_INIT");
}

Test(run, failed_create_before_the_clone_leaves_nothing)
{
	setenv("ABOX_INIT", "/nonexistent/abox-init", 1);
	ABOX_EXPECT(125, NULL, "abox-init", "run", "--", "true");
	unsetenv("ABOX_INIT");
}

Test(run, init_reaps_orphans)
{
	/* The inner sh exits at once; its background child is orphaned to
	 * PID 1 and exits 0.2 s later: init must reap it, no zombie stays. */
	ABOX_EXPECT(0, "0\n", NULL, "run", "--", "sh", "-c",
		    "sh -c 'sleep 0.2 &'; sleep 0.8; "
		    "for f in /proc/[0-9]*/stat; do cut -d' ' -f3 $f; done | grep -c Z || true");
}

Test(run, doctor_reports_every_facility)
{
	struct run_result r;
	ABOX(&r, "doctor");
	cr_assert_eq(r.status, 0, "doctor failed here:\n%s", r.out);
	const char *facilities[] = { "cgroup memory", "cgroup pids", "cgroup cpu", "cgroup freezer",
				     "overlayfs", "user namespaces", "idmapped mounts", "seccomp",
				     "landlock", "pidfd", "clone3", "criu", "OOM shield of init", "command start", "abox can run sandboxes here" };
	for (size_t i = 0; i < sizeof(facilities) / sizeof(facilities[0]); i++)
		cr_expect(strstr(r.out, facilities[i]), "no line for %s:\n%s", facilities[i], r.out);
	run_result_free(&r);
}

/* Runs a shell line with $ABOX set to the abox binary; returns its status. */
static int shell(const char *line, char **out)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "ABOX='%s'; %s", abox_bin(), line);
	struct run_result r;
	run_abox_argv(&r, (const char *const[]){ "/bin/sh", "-c", cmd, NULL });
	if (out)
		*out = r.out;
	else
		free(r.out);
	free(r.err);
	return r.status;
}

Test(run, unread_stdin_cannot_stall_the_timeout)
{
	/* 100 MB of stdin for a command that never reads it: host and init
	 * must keep serving each other, so the deadline still fires. */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int st = shell("head -c 100M /dev/zero | $ABOX run -i --timeout 2 -- sleep 30", NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_eq(st, 124);
	cr_assert_lt(t1.tv_sec - t0.tv_sec, 10);
}

/* Runs a shell line as shell() does and asserts it exits 0 and prints want. */
static void shell_prints(const char *line, const char *want)
{
	char *out = NULL;
	int st = shell(line, &out);
	cr_assert_eq(st, 0, "%s", line);
	cr_assert_str_eq(out, want, "%s", line);
	free(out);
}

Test(run, output_and_input_flood_at_once)
{
	shell_prints("head -c 30M /dev/zero | $ABOX run -i -- sh -c 'yes | head -c 20M; cat >/dev/null; echo "
		     "done' | tail -c 5",
		     "done\n");
}

Test(run, closed_reader_ends_the_run)
{
	shell_prints("$ABOX run -- yes | head -n 1", "y\n");
}

Test(run, ignored_signals_do_not_reach_the_sandbox)
{
	shell_prints("trap '' INT QUIT HUP TERM USR1; $ABOX run -- grep SigIgn /proc/self/status",
		     "SigIgn:\t0000000000000000\n");
}

Test(run, closed_stdio_of_the_caller)
{
	shell_prints("$ABOX run -- true <&- >&- 2>&-; echo rc=$?", "rc=0\n");
}

Test(run, template_rebuild_spares_running_sandboxes)
{
	/* A running sandbox's template version must survive a rebuild of the
	 * template (the host's files changed): it is its overlay's lower
	 * layer. Here the rebuild is forced by spoiling the stamp. */
	char root[] = "/tmp/abox-state-XXXXXX";
	cr_assert_not_null(mkdtemp(root));
	const char *was = getenv("ABOX_ROOT");
	char *saved = was ? strdup(was) : NULL;
	setenv("ABOX_ROOT", root, 1);
	ABOX_OK("run", "--", "true");

	int o, e;
	pid_t a = start_abox(&o, &e, (const char *const[]){ "run", "--", "sh", "-c",
		"echo ready; sleep 1.5; ls /etc | wc -l", NULL });
	char buf[16];
	cr_assert_gt(read(o, buf, sizeof(buf)), 0);

	char stamp[256];
	snprintf(stamp, sizeof(stamp), "%s/templates/host/.abox-template", root);
	int fd = open(stamp, O_WRONLY | O_TRUNC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "spoiled\n", 8), 8);
	close(fd);
	ABOX_OK("run", "--", "true");

	char *out = slurp(o);
	free(slurp(e));
	cr_assert_eq(wait_exit(a), 0);
	cr_assert_gt(atoi(out), 10, "the running sandbox lost its /etc: %s", out);
	free(out);

	/* the next rebuild removes the version nobody uses any more */
	snprintf(stamp, sizeof(stamp), "%s/templates/host/.abox-template", root);
	fd = open(stamp, O_WRONLY | O_TRUNC);
	cr_assert_eq(write(fd, "spoiled\n", 8), 8);
	close(fd);
	ABOX_ANY("run", "--", "true");
	char cmd[512];
	struct run_result r;
	snprintf(cmd, sizeof(cmd), "ls %s/templates | grep -c '^host\\.'", root);
	run_abox_argv(&r, (const char *const[]){ "/bin/sh", "-c", cmd, NULL });
	cr_assert_str_eq(r.out, "1\n", "old versions left: %s", r.out);
	run_result_free(&r);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
	if (saved)
		setenv("ABOX_ROOT", saved, 1);
	else
		unsetenv("ABOX_ROOT");
	free(saved);
}

Test(run, gc_cleans_after_a_sigkilled_abox_and_spares_live_ones)
{
	int o, e;
	pid_t live = start_abox(&o, &e, (const char *const[]){ "run", "--", "sh", "-c", "echo up; sleep 2; echo still-here", NULL });
	int o2, e2;
	pid_t doomed = start_abox(&o2, &e2, (const char *const[]){ "run", "--", "sh", "-c", "echo up; sleep 30", NULL });
	char buf[8];
	cr_assert_gt(read(o, buf, sizeof(buf)), 0);
	cr_assert_gt(read(o2, buf, sizeof(buf)), 0);
	/* nothing runs on the way out of a SIGKILLed abox: its sandbox dies
	 * (parent-death signal), its folder and cgroups stay */
	kill(doomed, SIGKILL);
	cr_assert_eq(wait_exit(doomed), 128 + SIGKILL);
	free(slurp(o2));
	free(slurp(e2));

	ABOX_EXPECT(0, "removed 1 leftover sandbox\n", NULL, "gc");

	char *out = slurp(o);
	free(slurp(e));
	cr_assert_eq(wait_exit(live), 0, "the live sandbox was hurt by gc");
	cr_assert(strstr(out, "still-here"), "%s", out);
	free(out);
}

/* `abox run` keeps one locked record file (<id>.run) in the runtime
 * folder, no folder of its own. One whose creator died before naming it
 * (".new-<id>.run") goes after a grace period; a young one stays, for its
 * creator may still be at work. */
Test(run, gc_removes_stale_unnamed_run_records_only)
{
	const char *rt = getenv("ABOX_RUNTIME_DIR");
	char dir[256], old[512], young[512];
	snprintf(dir, sizeof(dir), "%s", rt && *rt ? rt : "/run/abox");
	ABOX_ANY("run", "--", "true"); /* makes the runtime folder */
	snprintf(old, sizeof(old), "%s/.new-0123456789abcdefghij.run", dir);
	snprintf(young, sizeof(young), "%s/.new-abcdefghij0123456789.run", dir);
	unlink(old);
	unlink(young);
	int fd = open(old, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	struct timespec t[2] = { { .tv_sec = time(NULL) - 60 }, { .tv_sec = time(NULL) - 60 } };
	cr_assert_eq(futimens(fd, t), 0);
	close(fd);
	fd = open(young, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	ABOX_OK("gc");
	cr_assert_neq(access(old, F_OK), 0, "a stale record stayed");
	cr_assert_eq(access(young, F_OK), 0, "a young record was removed");
	unlink(young);
}

Test(run, sigint_is_not_held_back_by_unread_stdin)
{
	/* stdin the command never reads fills every buffer on the way; the
	 * signal must still get through (stdin is credit-based) */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char script[256];
	snprintf(script, sizeof(script),
		 "yes | $ABOX run -i -- sleep 20 & P=$!; sleep 1; kill -INT $P; wait $P; echo rc=$?");
	char *out = NULL;
	int st = shell(script, &out);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_eq(st, 0);
	cr_assert_str_eq(out, "rc=130\n");
	cr_assert_lt(t1.tv_sec - t0.tv_sec, 10, "SIGINT waited behind stdin");
	free(out);
}

Test(run, sigterm_ends_a_run_whose_reader_never_reads)
{
	shell_prints(
		"mkfifo /tmp/abox-fifo-$$ && (exec 3<>/tmp/abox-fifo-$$; "
		"$ABOX run -- sh -c 'yes | head -c 50M' >/tmp/abox-fifo-$$ & P=$!; sleep 1; kill -TERM $P; "
		"wait $P; echo rc=$?); rm -f /tmp/abox-fifo-$$",
		"rc=143\n");
}
