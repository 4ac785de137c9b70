/* Memory pressure inside a sandbox ends commands only: init (PID 1) and
 * with it the sandbox and its files survive, and the command that the OOM
 * killer ended says so, naming the limit. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(oom, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 240);

static char *create(const char *memory)
{
	return CREATE("--memory", memory);
}

static void kill_sandbox(char *id)
{
	ABOX_ANY("kill", id);
	free(id);
}

/* init answers, is still the same PID 1, and the file made before the
 * pressure is still there */
static void expect_alive(const char *id)
{
	ABOX_EXPECT(0, "kept\nabox-init\n", NULL, "exec", id, "--", "sh", "-c",
		    "cat /home/user/keep; cat /proc/1/comm");
}

static void keep_a_file(const char *id)
{
	ABOX_OK("exec", id, "--", "sh", "-c", "echo kept > /home/user/keep");
}

/* Commands run in a memory cgroup of their own below the sandbox's, init
 * stays in the sandbox's: the OOM killer, confined to the commands'
 * cgroup, never sees init as a candidate. */
Test(oom, commands_run_in_their_own_memory_cgroup_and_init_does_not)
{
	char *id = create("64M");
	struct run_result r;
	ABOX(&r, "exec", id, "--", "sh", "-c",
	     "grep -E '^[0-9]+:memory:|^0::' /proc/self/cgroup | sed 's/^[0-9]*://'; "
	     "echo --; grep -E '^[0-9]+:memory:|^0::' /proc/1/cgroup | sed 's/^[0-9]*://'");
	cr_assert_eq(r.status, 0, "%s", r.err);
	/* v1 memory (this host's kind): commands in /cmds, init at the root;
	 * v2 memory: commands in /cmds, init in /init */
	bool v1 = strstr(r.out, "memory:/cmds\n") != NULL;
	bool v2 = strstr(r.out, ":/cmds\n--") != NULL && strstr(r.out, ":/init\n") != NULL;
	cr_assert(v1 || v2, "commands are not in their own cgroup:\n%s", r.out);
	if (v1)
		cr_assert(strstr(r.out, "--\nmemory:/\n") != NULL, "init is not in the sandbox's cgroup:\n%s",
			  r.out);
	run_result_free(&r);
	kill_sandbox(id);
}

/* A command over the limit is killed, reported with the limit, and the
 * sandbox goes on with its files. */
Test(oom, a_memory_hog_dies_alone)
{
	char *id = create("64M");
	keep_a_file(id);
	struct run_result r;
	ABOX(&r, "exec", id, "--", "python3", "-c", "a = bytearray(400 << 20)\nprint('survived')");
	cr_assert_eq(r.status, 137, "stderr: %s", r.err);
	cr_assert(strstr(r.err, "killed: out of memory (limit 64M)"), "stderr: %s", r.err);
	cr_assert_eq(strstr(r.err, "sandbox ended unexpectedly"), NULL, "init died: %s", r.err);
	run_result_free(&r);
	expect_alive(id);
	kill_sandbox(id);
}

/* Files a command writes into a writable layer that lives in memory count
 * against the commands' limit: the writer is stopped (OOM or ENOSPC), init
 * is not. */
Test(oom, a_command_filling_memory_with_files_spares_init)
{
	char *id = create("64M");
	keep_a_file(id);
	struct run_result r;
	ABOX(&r, "exec", id, "--", "sh", "-c",
	     "dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>/dev/null; echo dd=$?");
	cr_assert_eq(strstr(r.err, "sandbox ended unexpectedly"), NULL, "init died: %s", r.err);
	run_result_free(&r);
	/* the sandbox still runs commands, and one can free the memory */
	ABOX_OK("exec", id, "--", "rm", "-f", "/tmp/fill");
	expect_alive(id);
	kill_sandbox(id);
}

/* An upload larger than the sandbox's memory (init writes it, into a layer
 * in memory): the upload fails with a full-disk error, init and the
 * sandbox live on, and a smaller upload afterwards works. */
Test(oom, an_upload_past_the_memory_limit_fails_and_init_lives)
{
	/* abox stops reading its stdin when the sandbox dies under it */
	signal(SIGPIPE, SIG_IGN);
	char *id = create("64M");
	keep_a_file(id);
	size_t n = 200u << 20;
	char *big = calloc(1, n);
	cr_assert_not_null(big);
	struct run_result r;
	run_abox(&r, big, n, (const char *const[]){ "files", "write", id, "/tmp/big", NULL });
	free(big);
	/* on a disk-backed layer the upload may simply succeed: either way
	 * init must be there afterwards */
	if (r.status != 0)
		cr_assert(strstr(r.err, "No space left on device"), "stderr: %s", r.err);
	run_result_free(&r);
	expect_alive(id);
	ABOX_OK("exec", id, "--", "rm", "-f", "/tmp/big");
	run_abox(&r, "small\n", 6, (const char *const[]){ "files", "write", id, "/tmp/small", NULL });
	cr_assert_eq(r.status, 0, "a small upload after the big one: %s", r.err);
	run_result_free(&r);
	ABOX_EXPECT(ANY_STATUS, "small\n", NULL, "exec", id, "--", "cat", "/tmp/small");
	kill_sandbox(id);
}

/* Pressure from both sides at once: a command holding most of the limit
 * while an upload fills the layer. Whatever the kernel kills, it is not
 * init. */
Test(oom, a_hog_and_an_upload_together_spare_init)
{
	signal(SIGPIPE, SIG_IGN);
	char *id = create("64M");
	keep_a_file(id);
	int out, err;
	pid_t hog = start_abox(&out, &err, (const char *const[]){ "exec", id, "--", "python3", "-c",
		"import time\na = bytearray(56 << 20)\nfor i in range(0, len(a), 4096): a[i] = 1\n"
		"print('holding', flush=True)\ntime.sleep(5)", NULL });
	/* wait until it holds its memory */
	char buf[64] = "";
	ssize_t k = read(out, buf, sizeof(buf) - 1);
	cr_assert_gt(k, 0);
	size_t n = 100u << 20;
	char *big = calloc(1, n);
	struct run_result r;
	run_abox(&r, big, n, (const char *const[]){ "files", "write", id, "/tmp/big", NULL });
	free(big);
	run_result_free(&r);
	(void)wait_exit(hog);
	free(slurp(out));
	char *e = slurp(err);
	cr_assert_eq(strstr(e, "sandbox ended unexpectedly"), NULL, "init died: %s", e);
	free(e);
	expect_alive(id);
	kill_sandbox(id);
}

/* init keeps the output of processes for clients that attach later; all of
 * that together is bounded, or 32 chatty commands (1 MiB kept per stream
 * each) would grow init past its headroom and make it the OOM killer's
 * choice. */
Test(oom, kept_output_of_many_commands_stays_within_init_headroom)
{
	char *id = create("64M");
	keep_a_file(id);
	for (int i = 0; i < 40; i++)
		ABOX_OK("exec", "-d", id, "--", "sh", "-c",
			"head -c 1200000 /dev/zero | tr '\\0' o; head -c 1200000 /dev/zero | tr '\\0' e >&2");
	/* all of them have ended (each writes 2.4 MB) */
	ABOX_ANY("exec", id, "--", "sh", "-c", "sleep 2");
	expect_alive(id);
	kill_sandbox(id);
}

struct end_seen {
	bool ended;
	uint32_t flags;
	int signal;
	char error[256];
};

static void on_end(const abox_event *ev, void *ud)
{
	struct end_seen *e = ud;
	if (ev->type != ABOX_EVENT_END)
		return;
	e->ended = true;
	e->flags = ev->end_flags;
	e->signal = ev->signal;
	snprintf(e->error, sizeof(e->error), "%s", ev->error ? ev->error : "");
}

static struct end_seen run_api(abox_sandbox *sb, const char *script)
{
	abox_error err = ABOX_ERROR_INIT;
	const char *argv[] = { "sh", "-c", script, NULL };
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	po.argv = argv;
	abox_proc *p = NULL;
	cr_assert_eq(abox_proc_start(sb, &po, &p, &err), 0, "%s", err.msg);
	struct end_seen e = { 0 };
	cr_assert_eq(abox_proc_wait(p, 60000, on_end, &e, &err), 1, "%s", err.msg);
	abox_proc_free(p);
	return e;
}

/* The C API: the END of a command the OOM killer ended carries
 * ABOX_END_OOM and an error naming the kill and the limit; a command that
 * went on after one of its processes was killed says that; a clean one
 * afterwards says nothing of it. */
Test(oom, the_c_api_end_names_the_oom_kill_and_the_limit)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_ctx *ctx = NULL;
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	so.memory_bytes = 64ull << 20;
	so.timeout_ms = 120000;
	abox_sandbox *sb = NULL;
	api_create(&ctx, &so, &sb);

	struct end_seen e = run_api(sb, "exec python3 -c 'a = bytearray(400 << 20)'");
	cr_assert(e.flags & ABOX_END_OOM, "flags 0x%x", e.flags);
	cr_assert_eq(e.signal, 9);
	cr_assert_str_eq(e.error, "killed: out of memory (limit 64M)");

	e = run_api(sb, "python3 -c 'a = bytearray(400 << 20)'; echo went on");
	cr_assert(e.flags & ABOX_END_OOM, "flags 0x%x", e.flags);
	cr_assert_eq(e.signal, 0);
	cr_assert_str_eq(e.error, "a process of the sandbox was killed: out of memory (limit 64M)");

	e = run_api(sb, "true");
	cr_assert_not(e.flags & ABOX_END_OOM, "flags 0x%x", e.flags);
	cr_assert_str_eq(e.error, "");

	cr_assert_eq(abox_sandbox_kill(sb, &err), 0, "%s", err.msg);
	abox_sandbox_free(sb);
	abox_ctx_free(ctx);
}
