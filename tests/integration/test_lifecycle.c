/* Long-lived sandboxes: create, exec, ls, info, kill; they outlive the
 * CLI; timeouts fire with no abox process alive; dead inits are reported
 * as dead and cleaned by gc; a SIGKILLed create leaves nothing alive. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TestSuite(lifecycle, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 120);

static json_object *info(const char *id)
{
	struct run_result r;
	ABOX(&r, "info", "--json", id);
	cr_assert_eq(r.status, 0, "info failed: %s", r.err);
	json_object *o = json_tokener_parse(r.out);
	cr_assert_not_null(o, "info --json is JSON: %s", r.out);
	run_result_free(&r);
	return o;
}

static const char *field(json_object *o, const char *k)
{
	json_object *v;
	cr_assert(json_object_object_get_ex(o, k, &v), "no field %s", k);
	return json_object_get_string(v);
}

/* No process named sleep is left in the sandbox. */
static void no_sleep_left(const char *id)
{
	ABOX_EXPECT(ANY_STATUS, "0\n", NULL, "exec", id, "--", "sh", "-c",
		    "cat /proc/[0-9]*/comm | grep -c '^sleep$' || true");
}

Test(lifecycle, create_exec_ls_info_kill)
{
	char *id = CREATE("--metadata", "owner=alice", "--metadata", "job=42", "--memory", "256M");
	char hostname[ABOX_ID_LEN + 2];
	snprintf(hostname, sizeof(hostname), "%s\n", id);
	ABOX_EXPECT(0, hostname, NULL, "exec", id, "--", "sh", "-c", "echo kept > /tmp/state; hostname");
	/* files and the sandbox persist between commands */
	ABOX_EXPECT(ANY_STATUS, "kept\n", NULL, "exec", "--user", "root", id, "--", "cat", "/tmp/state");
	/* exit codes pass through exec as through run */
	ABOX_EXPECT(9, NULL, NULL, "exec", id, "--", "sh", "-c", "exit 9");

	struct run_result r;
	ABOX(&r, "ls");
	cr_assert(strstr(r.out, id), "ls lists it: %s", r.out);
	cr_assert(strstr(r.out, "running"));
	run_result_free(&r);

	json_object *o = info(id);
	cr_assert_str_eq(field(o, "state"), "running");
	cr_assert_str_eq(field(o, "template"), "host");
	cr_assert_str_eq(field(o, "memoryBytes"), "268435456");
	json_object *m;
	cr_assert(json_object_object_get_ex(o, "metadata", &m));
	cr_assert_str_eq(field(m, "owner"), "alice");
	cr_assert_str_eq(field(m, "job"), "42");
	json_object_put(o);

	ABOX_OK("kill", id);
	ABOX_EXPECT(125, NULL, "not found", "exec", id, "--", "true");
	free(id);
}

Test(lifecycle, timeout_fires_without_any_abox_process)
{
	char *id = CREATE("--timeout", "1");
	sleep(2);
	json_object *o = info(id);
	cr_assert_str_eq(field(o, "state"), "dead", "init must have ended itself at its deadline");
	json_object_put(o);
	ABOX_EXPECT(125, NULL, "is not running", "exec", id, "--", "true");
	/* gc removes it (and whatever an earlier test's sandbox may still
	 * have left, hence no count): afterwards abox knows it no more */
	ABOX_ANY("gc");
	char msg[96];
	snprintf(msg, sizeof(msg), "sandbox %s not found", id);
	ABOX_EXPECT(125, NULL, msg, "info", id);
	free(id);
}

Test(lifecycle, dead_init_is_reported_and_kill_cleans_it)
{
	char *id = create_sandbox(NULL);
	json_object *o = info(id);
	int pid = atoi(field(o, "pid"));
	json_object_put(o);
	cr_assert_gt(pid, 1);
	cr_assert_eq(kill(pid, SIGKILL), 0);
	for (int i = 0; i < 50; i++) {
		o = info(id);
		bool dead = strcmp(field(o, "state"), "dead") == 0;
		json_object_put(o);
		if (dead)
			break;
		usleep(20000);
	}
	o = info(id);
	cr_assert_str_eq(field(o, "state"), "dead");
	json_object_put(o);
	kill_and_free(id);
}

Test(lifecycle, parallel_sandboxes)
{
	enum { N = 20 };
	char *ids[N];
	for (int i = 0; i < N; i++)
		ids[i] = create_sandbox(NULL);
	pid_t p[N];
	int o[N], e[N];
	for (int i = 0; i < N; i++)
		p[i] = start_abox(&o[i], &e[i], (const char *const[]){ "exec", ids[i], "--", "sh", "-c",
			"for i in 1 2 3 4 5; do echo $i; done | wc -l", NULL });
	for (int i = 0; i < N; i++) {
		char *out = slurp(o[i]);
		free(slurp(e[i]));
		cr_expect_eq(wait_exit(p[i]), 0);
		cr_expect_str_eq(out, "5\n");
		free(out);
	}
	for (int i = 0; i < N; i++)
		kill_and_free(ids[i]);
}

Test(lifecycle, sigkilled_create_leaves_nothing_alive)
{
	/* kill `abox create` at different moments; whatever it left must
	 * never be listed as running and gc must remove it all */
	for (int i = 0; i < 12; i++) {
		int o, e;
		pid_t p = start_abox(&o, &e, (const char *const[]){ "create", NULL });
		usleep((useconds_t)(i * 700));
		kill(p, SIGKILL);
		char *out = slurp(o);
		free(slurp(e));
		int st = wait_exit(p);
		if (st == 0 && strlen(out) == 21) {
			/* it finished before the kill: a real sandbox */
			out[20] = '\0';
			ABOX_OK("kill", out);
		}
		free(out);
	}
	ABOX_OK("gc", "-q");
	/* a sandbox listed as running must be whole (usable), never half
	 * made; it can only be one whose create finished just as it was
	 * killed */
	struct run_result r;
	ABOX(&r, "ls", "--json");
	json_object *arr = json_tokener_parse(r.out);
	cr_assert_not_null(arr);
	run_result_free(&r);
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *o = json_object_array_get_idx(arr, i);
		if (strcmp(field(o, "state"), "running") != 0)
			continue;
		struct run_result x;
		ABOX(&x, "exec", field(o, "id"), "--", "true");
		cr_expect_eq(x.status, 0, "listed as running but not usable: %s", x.err);
		run_result_free(&x);
		ABOX_OK("kill", field(o, "id"));
	}
	json_object_put(arr);
	ABOX_ANY("gc", "-q");
}

Test(lifecycle, bad_ids)
{
	ABOX_EXPECT(125, NULL, "is not a sandbox id", "exec", "../../etc", "--", "true");
	ABOX_EXPECT(125, NULL, "sandbox aaaaaaaaaaaaaaaaaaaa not found", "kill", "aaaaaaaaaaaaaaaaaaaa");
	ABOX_EXPECT(125, NULL, NULL, "info", "aaaaaaaaaaaaaaaaaaaa");
	ABOX_EXPECT(125, NULL, "--metadata 'novalue'", "create", "--metadata", "novalue");
}

Test(lifecycle, set_timeout_moves_the_deadline_both_ways)
{
	char *id = CREATE("--timeout", "1");
	ABOX_OK("set-timeout", id, "30");
	sleep(2);
	json_object *o = info(id);
	cr_assert_str_eq(field(o, "state"), "running", "the later deadline must hold");
	json_object_put(o);
	ABOX_OK("set-timeout", id, "0.5");
	usleep(1500000);
	o = info(id);
	cr_assert_str_eq(field(o, "state"), "dead", "the earlier deadline must hold");
	json_object_put(o);
	ABOX_EXPECT(125, NULL, "not running", "set-timeout", id, "10");
	ABOX_ANY("gc", "-q");
	free(id);
}

Test(lifecycle, metrics_report_cpu_memory_disk_pids)
{
	/* a tmpfs layer: its files are memory (test_disk: a disk's are not) */
	char *id = CREATE("--cpus", "0.5", "--memory", "256M", "--disk", "64M", "--layer", "tmpfs");
	ABOX_EXPECT(ANY_STATUS, "started\n", NULL, "exec", id, "--", "sh", "-c",
		    "head -c 8M /dev/zero > /tmp/f; (while :; do :; done) > /dev/null 2>&1 & echo started");
	struct run_result r;
	ABOX(&r, "metrics", "--json", "--interval", "0.5", id);
	cr_assert_eq(r.status, 0, "%s", r.err);
	json_object *o = json_tokener_parse(r.out);
	cr_assert_not_null(o, "%s", r.out);
	double pct = atof(field(o, "cpuUsedPct"));
	cr_assert_gt(pct, 20.0, "a busy loop under --cpus 0.5: %f", pct);
	cr_assert_lt(pct, 75.0, "%f", pct);
	cr_assert_eq(strtoull(field(o, "memTotal"), NULL, 10), 256ULL << 20);
	cr_assert_gt(strtoull(field(o, "memUsed"), NULL, 10), 4ULL << 20, "the 8M file lives in memory");
	cr_assert_eq(strtoull(field(o, "diskTotal"), NULL, 10), 64ULL << 20);
	unsigned long long used = strtoull(field(o, "diskUsed"), NULL, 10);
	cr_assert(used >= (8ULL << 20) && used < (12ULL << 20), "disk used %llu", used);
	cr_assert_geq(atoi(field(o, "pids")), 2);
	json_object_put(o);
	run_result_free(&r);
	kill_and_free(id);
}

Test(lifecycle, a_fifo_planted_in_dev_cannot_stall_init)
{
	/* the sandbox owns /dev: a FIFO named /dev/null must not block PID 1
	 * when it starts the next command */
	char *id = create_sandbox(NULL);
	ABOX_EXPECT(ANY_STATUS, "planted\n", NULL, "exec", "--user", "root", id, "--", "sh", "-c",
		    "rm /dev/null && mkfifo -m 666 /dev/null && echo planted");
	double t0 = now_s();
	ABOX_EXPECT(0, "still served\n", NULL, "exec", id, "--", "echo", "still served");
	cr_assert_lt(now_s() - t0, 10.0);
	kill_and_free(id);
}

Test(lifecycle, background_process_detach_attach_replay)
{
	char *id = create_sandbox(NULL);
	char *pid = ABOX_OUT("exec", "-d", "--tag", "job", id, "--", "sh", "-c",
			     "echo one; echo two >&2; sleep 0.6; echo three; exit 4");
	cr_assert_gt(atoi(pid), 1, "prints the pid: %s", pid);
	free(pid);
	usleep(200000);
	/* attach by tag: what was written while nobody listened comes first */
	struct run_result r;
	ABOX(&r, "attach", id, "job");
	cr_assert_eq(r.status, 4, "%s", r.err);
	cr_assert_str_eq(r.out, "one\nthree\n");
	cr_assert(strstr(r.err, "two\n"), "%s", r.err);
	run_result_free(&r);
	/* the ended process stays listed with its exit status */
	ABOX(&r, "ps", "--json", id);
	json_object *arr = json_tokener_parse(r.out);
	cr_assert_not_null(arr, "%s", r.out);
	json_object *o = json_object_array_get_idx(arr, 0);
	cr_assert_str_eq(field(o, "tag"), "job");
	cr_assert_str_eq(field(o, "running"), "false");
	cr_assert_str_eq(field(o, "exitCode"), "4");
	json_object_put(arr);
	run_result_free(&r);
	kill_and_free(id);
}

Test(lifecycle, several_clients_attach_at_once)
{
	char *id = create_sandbox(NULL);
	ABOX_OK("exec", "-d", "--tag", "shared", id, "--", "sh", "-c", "sleep 1; echo hello");
	int o[3], e[3];
	pid_t p[3];
	for (int i = 0; i < 3; i++)
		p[i] = start_abox(&o[i], &e[i], (const char *const[]){ "attach", id, "shared", NULL });
	for (int i = 0; i < 3; i++) {
		char *out = slurp(o[i]);
		free(slurp(e[i]));
		cr_expect_eq(wait_exit(p[i]), 0);
		cr_expect_str_eq(out, "hello\n");
		free(out);
	}
	kill_and_free(id);
}

Test(lifecycle, signal_reaches_the_whole_process_group)
{
	char *id = create_sandbox(NULL);
	ABOX_OK("exec", "-d", "--tag", "tree", id, "--", "sh", "-c", "sleep 1000 & sleep 1000");
	usleep(200000);
	ABOX_OK("signal", id, "tree", "KILL");
	usleep(300000);
	no_sleep_left(id);
	ABOX_EXPECT(125, NULL, "has ended", "signal", id, "tree", "TERM");
	ABOX_EXPECT(125, NULL, "no such process", "signal", id, "nosuchtag");
	kill_and_free(id);
}

/* A command's own timeout: init kills its whole group, attached or not,
 * and the sandbox and init serve on. */
Test(lifecycle, command_timeout_kills_the_group)
{
	char *id = create_sandbox(NULL);
	double t0 = now_s();
	ABOX_EXPECT(124, "", "timeout", "exec", "--timeout", "0.5", id, "--", "sh", "-c",
		    "sleep 1000 & sleep 1000; echo never");
	double took = now_s() - t0;
	cr_assert(took < 10, "took %.1f s", took);
	/* detached: nobody listens when it fires; the history says SIGKILL
	 * and an attach reports the timeout */
	ABOX_OK("exec", "-d", "--tag", "slow", "--timeout", "0.3", id, "--", "sh", "-c",
		"echo up; sleep 1000 & sleep 1000");
	for (int i = 0; i < 50; i++) {
		struct run_result r;
		ABOX(&r, "ps", id);
		bool done = strstr(r.out, "137") != NULL;
		run_result_free(&r);
		if (done)
			break;
		usleep(100000);
	}
	ABOX_EXPECT(124, "up\n", NULL, "attach", id, "slow");
	no_sleep_left(id);
	/* one that ends in time is not touched */
	ABOX_EXPECT(3, NULL, NULL, "exec", "--timeout", "30", id, "--", "sh", "-c", "exit 3");
	ABOX_EXPECT(125, NULL, "expected seconds", "exec", "--timeout", "soon", id, "--", "true");
	kill_and_free(id);
}

Test(lifecycle, kept_output_is_bounded_with_a_marker)
{
	char *id = create_sandbox(NULL);
	ABOX_OK("exec", "-d", "--tag", "big", id, "--", "sh", "-c",
		"head -c 3000000 /dev/zero | tr '\\0' a; echo; echo END");
	usleep(800000);
	struct run_result r;
	ABOX(&r, "attach", id, "big");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(r.out_len, 1u << 20, "only the last 1 MiB is kept: %zu", r.out_len);
	cr_assert(strstr(r.out, "END\n"), "the newest output is the one kept");
	cr_assert(strstr(r.err, "bytes of output were not kept"), "%s", r.err);
	run_result_free(&r);
	kill_and_free(id);
}

Test(lifecycle, hundred_concurrent_execs_in_one_sandbox)
{
	enum { N = 100 };
	char *id = create_sandbox(NULL);
	pid_t p[N];
	int o[N], e[N];
	for (int i = 0; i < N; i++) {
		char arg[32];
		snprintf(arg, sizeof(arg), "echo %d", i);
		p[i] = start_abox(&o[i], &e[i], (const char *const[]){ "exec", id, "--", "sh", "-c", arg, NULL });
	}
	int ok = 0;
	for (int i = 0; i < N; i++) {
		char *out = slurp(o[i]);
		char *err = slurp(e[i]);
		int st = wait_exit(p[i]);
		char want[16];
		snprintf(want, sizeof(want), "%d\n", i);
		cr_expect_eq(st, 0, "exec %d: %s", i, err);
		cr_expect_str_eq(out, want);
		ok += st == 0 && strcmp(out, want) == 0;
		free(out);
		free(err);
	}
	cr_assert_eq(ok, N);
	kill_and_free(id);
}

Test(lifecycle, truncation_keeps_head_tail_marker_and_full_files)
{
	char *id = create_sandbox(NULL);
	struct run_result r;
	ABOX(&r, "exec", "--truncate", "100:20:20", id, "--", "sh", "-c", "seq 1 200; echo oops >&2");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(strncmp(r.out, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", 21), 0, "head: %s", r.out);
	cr_assert(strstr(r.out, "10\n... [652 characters omitted] ...\n(Full output: /tmp/abox/cmd/"), "%s", r.out);
	size_t n = strlen(r.out);
	cr_assert_str_eq(r.out + n - 20, "196\n197\n198\n199\n200\n", "tail: %s", r.out);
	cr_assert_str_eq(r.err, "oops\n", "a short stream stays whole");
	char *path = strstr(r.out, "(Full output: ") + 14;
	*strchr(path, ')') = '\0';
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "wc -l < %s; cat $(dirname %s)/command.txt; stat -c %%U %s", path, path, path);
	struct run_result f;
	ABOX(&f, "exec", id, "--", "sh", "-c", cmd);
	cr_assert_str_eq(f.out, "200\nsh -c seq 1 200; echo oops >&2\nuser\n", "%s", f.err);
	run_result_free(&f);
	run_result_free(&r);

	/* under the threshold nothing is cut; root and user share /tmp/abox */
	ABOX_EXPECT(ANY_STATUS, "short\n", NULL, "exec", "--user", "root", "--truncate", "1000", id, "--",
		    "echo", "short");
	kill_and_free(id);
}

Test(lifecycle, truncation_files_cannot_be_redirected_by_a_symlink)
{
	/* a sandboxed user plants /tmp/abox -> /etc: init makes the folders
	 * with that user's identity, so it cannot write into /etc for it */
	char *id = create_sandbox(NULL);
	ABOX_OK("exec", id, "--", "ln", "-s", "/etc", "/tmp/abox");
	struct run_result r;
	ABOX(&r, "exec", "--truncate", "100", id, "--", "echo", "x");
	cr_expect_eq(r.status, 125, "%s", r.err);
	cr_expect(strstr(r.err, "Not a directory") || strstr(r.err, "Permission denied"), "%s", r.err);
	run_result_free(&r);
	ABOX(&r, "exec", "--user", "root", id, "--", "sh", "-c", "test -e /etc/cmd && echo written || echo clean");
	cr_expect_str_eq(r.out, "clean\n");
	run_result_free(&r);
	kill_and_free(id);
}

Test(lifecycle, list_filters_and_pages)
{
	char *a = CREATE("--metadata", "team=red");
	char *b = CREATE("--metadata", "team=blue");
	char *c = CREATE("--metadata", "team=red", "--metadata", "env=ci");
	struct run_result r;
	ABOX(&r, "ls", "--metadata", "team=red");
	cr_assert(strstr(r.out, a) && strstr(r.out, c) && !strstr(r.out, b), "%s", r.out);
	run_result_free(&r);
	ABOX(&r, "ls", "--metadata", "team=red", "--metadata", "env=ci");
	cr_assert(!strstr(r.out, a) && strstr(r.out, c), "%s", r.out);
	run_result_free(&r);
	ABOX(&r, "ls", "--state", "dead");
	cr_assert(!strstr(r.out, a) && !strstr(r.out, b) && !strstr(r.out, c), "%s", r.out);
	run_result_free(&r);
	/* pages of 2 cover everything exactly once */
	char seen[4096] = "";
	char token[64] = "";
	for (int page = 0; page < 10; page++) {
		if (page && !token[0])
			break;
		if (token[0])
			ABOX(&r, "ls", "--limit", "2", "--next-token", token);
		else
			ABOX(&r, "ls", "--limit", "2");
		cr_assert_eq(r.status, 0, "%s", r.err);
		strncat(seen, r.out, sizeof(seen) - strlen(seen) - 1);
		token[0] = '\0';
		char *t = strstr(r.err, "next-token: ");
		if (t)
			sscanf(t + 12, "%63s", token);
		run_result_free(&r);
	}
	cr_assert(strstr(seen, a) && strstr(seen, b) && strstr(seen, c), "%s", seen);
	cr_assert_eq(strstr(strstr(seen, a) + 1, a), NULL, "listed twice: %s", seen);
	kill_and_free(a);
	kill_and_free(b);
	kill_and_free(c);
}

Test(lifecycle, another_root_is_a_separate_world)
{
	char root[] = "/tmp/abox-root-XXXXXX", rt[] = "/tmp/abox-rt-XXXXXX";
	cr_assert_not_null(mkdtemp(root));
	cr_assert_not_null(mkdtemp(rt));
	struct run_result r;
	ABOX(&r, "--root", root, "--runtime-dir", rt, "create");
	cr_assert_eq(r.status, 0, "%s", r.err);
	r.out[20] = '\0';
	char id[ABOX_ID_LEN + 1];
	memcpy(id, r.out, 21);
	run_result_free(&r);
	/* not listed in the default root; gc there must not touch it, nor
	 * the empty cgroup of its commands once it is old enough to look
	 * like an orphan's (the two worlds share the caller's cgroup) */
	ABOX(&r, "ls");
	cr_assert_null(strstr(r.out, id));
	run_result_free(&r);
	sleep(6);
	ABOX_ANY("gc");
	ABOX_EXPECT(ANY_STATUS, "alive\n", NULL, "--root", root, "--runtime-dir", rt, "exec", id, "--",
		    "echo", "alive");
	ABOX_OK("--root", root, "--runtime-dir", rt, "kill", id);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", root, rt);
	cr_assert_eq(system(cmd), 0);
}

Test(lifecycle, pty_size_term_and_resize)
{
	char *id = create_sandbox(NULL);
	struct run_result r;
	ABOX(&r, "exec", "-t", "--size", "40x100", id, "--", "sh", "-c", "stty size; tty; echo $TERM");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "40 100"), "%s", r.out);
	cr_assert(strstr(r.out, "/dev/pts/"), "%s", r.out);
	cr_assert(strstr(r.out, "xterm-256color"), "%s", r.out);
	run_result_free(&r);
	ABOX_OK("exec", "-d", "-t", "--size", "24x80", "--tag", "term", id, "--", "sh", "-c",
		"sleep 1; stty size");
	ABOX_OK("resize", id, "term", "50x120");
	ABOX(&r, "attach", id, "term");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "50 120"), "the new size must be seen: %s", r.out);
	run_result_free(&r);
	kill_and_free(id);
}

Test(lifecycle, sandbox_env_applies_to_every_command)
{
	char *id = CREATE("-e", "A=1", "-e", "B=two words");
	ABOX_EXPECT(ANY_STATUS, "1|two words\n", NULL, "exec", id, "--", "sh", "-c", "echo \"$A|$B\"");
	/* a command's own env wins, once */
	ABOX_EXPECT(ANY_STATUS, "1|mine\n1\n", NULL, "exec", "-e", "B=mine", id, "--", "sh", "-c",
		    "echo \"$A|$B\"; env | grep -c '^B='");
	kill_and_free(id);
}

Test(lifecycle, exec_json_result_for_agents)
{
	char *id = create_sandbox(NULL);
	struct run_result r;
	ABOX(&r, "exec", "--json", "--truncate", "50:10:10", id, "--", "sh", "-c", "seq 1 100; echo e >&2; exit 3");
	cr_assert_eq(r.status, 3, "%s", r.err);
	json_object *o = json_tokener_parse(r.out);
	cr_assert_not_null(o, "%s", r.out);
	cr_assert_str_eq(field(o, "exitCode"), "3");
	cr_assert_str_eq(field(o, "truncated"), "true");
	cr_assert_str_eq(field(o, "stdoutLength"), "292");
	cr_assert_str_eq(field(o, "stderr"), "e\n");
	cr_assert(strstr(field(o, "stdout"), "[272 characters omitted]"), "%s", field(o, "stdout"));
	cr_assert(strstr(field(o, "stdoutPath"), "/tmp/abox/cmd/"), "%s", r.out);
	json_object_put(o);
	run_result_free(&r);
	/* options typed after the id, closed by '--', are options too */
	ABOX(&r, "exec", id, "--json", "-e", "V=7", "--", "sh", "-c", "echo $V");
	cr_assert_eq(r.status, 0, "%s", r.err);
	o = json_tokener_parse(r.out);
	cr_assert_not_null(o, "%s", r.out);
	cr_assert_str_eq(field(o, "stdout"), "7\n");
	json_object_put(o);
	run_result_free(&r);
	/* without the '--' they are the command: not found, with a hint */
	ABOX_EXPECT(127, NULL, "options go before the sandbox id", "exec", id, "--json", "sh");
	kill_and_free(id);
}

/* The record has room for 64 metadata entries and 256 KiB: more was cut
 * (the last entries silently dropped) or written as a record nobody could
 * read back, list or kill. Either is refused now, and nothing is left. */
Test(lifecycle, oversized_metadata_is_refused_and_leaves_nothing)
{
	struct run_result r;
	ABOX(&r, "ls", "--json");
	char *before = r.out;
	free(r.err);
	const char *args[2 + 2 * 65 + 1] = { "create" };
	char kv[65][16];
	size_t n = 1;
	for (int i = 0; i < 65; i++) {
		snprintf(kv[i], sizeof(kv[i]), "k%d=v", i);
		args[n++] = "--metadata";
		args[n++] = kv[i];
	}
	args[n] = NULL;
	run_abox(&r, NULL, 0, args);
	cr_assert_neq(r.status, 0, "65 metadata entries were accepted: %s", r.out);
	cr_assert(strstr(r.err, "65 metadata entries, at most 64"), "%s", r.err);
	run_result_free(&r);

	/* three values of 100 KiB (one argument may not pass 128 KiB) */
	static char big[3][100 << 10];
	for (int i = 0; i < 3; i++) {
		memset(big[i], 'v', sizeof(big[i]) - 1);
		snprintf(big[i], 4, "k%d", i);
		big[i][2] = '=';
	}
	ABOX(&r, "create", "--metadata", big[0], "--metadata", big[1], "--metadata", big[2]);
	cr_assert_neq(r.status, 0, "300 KiB of metadata were accepted: %s", r.out);
	cr_assert(strstr(r.err, "over the limit"), "%s", r.err);
	run_result_free(&r);

	ABOX(&r, "ls", "--json");
	cr_assert_str_eq(r.out, before, "a refused create left a sandbox");
	run_result_free(&r);
	free(before);
}
