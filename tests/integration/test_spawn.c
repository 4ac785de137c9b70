/* How abox-init starts commands: the child shares init's memory until its
 * exec and init waits for it, so a child held before its exec must not
 * freeze PID 1. The test holds one there for real: it traces init's main
 * thread from the host (root may), and the vfork child that init makes is
 * attached by the kernel and kept in its first ptrace stop. The watchdog
 * must kill it, the exec must fail with a message saying so, and init must
 * serve the next command. */
#include <abox/abox.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TestSuite(spawn, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 120);

static pid_t init_pid(const char *id)
{
	struct run_result r;
	ABOX(&r, "info", "--json", id);
	cr_assert_eq(r.status, 0, "info failed: %s", r.err);
	json_object *o = json_tokener_parse(r.out), *v;
	cr_assert_not_null(o, "info --json is JSON: %s", r.out);
	cr_assert(json_object_object_get_ex(o, "pid", &v));
	pid_t pid = (pid_t)json_object_get_int(v);
	json_object_put(o);
	run_result_free(&r);
	cr_assert_gt(pid, 1);
	return pid;
}

/* Waits (up to 20 s) for a ptrace stop of init that is a vfork event and
 * returns the child's pid; other stops are passed on. */
static pid_t wait_vfork_event(pid_t init)
{
	double until = now_s() + 20;
	while (now_s() < until) {
		int st;
		pid_t w = waitpid(init, &st, __WALL | WNOHANG);
		cr_assert_geq(w, 0, "waitpid init: %s", strerror(errno));
		if (w == 0) {
			usleep(1000);
			continue;
		}
		cr_assert(WIFSTOPPED(st), "init ended while traced (status %#x)", st);
		if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_VFORK << 8))) {
			unsigned long child = 0;
			cr_assert_eq(ptrace(PTRACE_GETEVENTMSG, init, NULL, &child), 0);
			cr_assert_eq(ptrace(PTRACE_CONT, init, NULL, NULL), 0);
			return (pid_t)child;
		}
		/* a signal for init (or a group stop): let it through */
		int sig = st >> 16 == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(st);
		cr_assert_eq(ptrace(PTRACE_CONT, init, NULL, (void *)(long)sig), 0);
	}
	cr_assert_fail("init made no vfork child within 20 s");
	return -1;
}

Test(spawn, a_child_held_before_its_exec_is_killed_and_init_serves_on)
{
	char *id = CREATE("--timeout", "120");
	/* another process in the sandbox (an attacker would be one; with init
	 * alone nothing could hold the child and no watchdog is armed), and a
	 * first command: the watchdog thread exists from here on, and only
	 * init's main thread is traced below */
	ABOX_OK("exec", "-d", id, "--", "sleep", "600");
	ABOX_OK("exec", id, "--", "true");
	pid_t init = init_pid(id);
	cr_assert_eq(ptrace(PTRACE_SEIZE, init, NULL, (void *)(long)PTRACE_O_TRACEVFORK), 0,
		     "trace init: %s", strerror(errno));

	int out, err;
	double t0 = now_s();
	pid_t cli = start_abox(&out, &err, (const char *const[]){ "exec", id, "--", "echo", "never", NULL });
	pid_t child = wait_vfork_event(init);
	cr_assert_gt(child, 1);
	/* the child stays in its first ptrace stop: it never gets to exec */
	int cst;
	cr_assert_eq(waitpid(child, &cst, __WALL), child);
	cr_assert(WIFSTOPPED(cst), "the child is held (status %#x)", cst);
	int status = wait_exit(cli);
	double took = now_s() - t0;
	char *o = slurp(out), *e = slurp(err);
	cr_assert_eq(status, 126, "the exec fails (status %d, out '%s', err '%s')", status, o, e);
	cr_assert_str_empty(o);
	cr_assert(strstr(e, "stopped before its exec"), "the reason is named: %s", e);
	cr_assert_geq(took, 1.9, "killed at the limit, not before (%.2f s)", took);
	cr_assert_lt(took, 10.0, "init was frozen (%.2f s)", took);
	free(o);
	free(e);
	/* the tracer sees the held child end by SIGKILL */
	cr_assert_eq(waitpid(child, &cst, __WALL), child);
	cr_assert(WIFSIGNALED(cst) && WTERMSIG(cst) == SIGKILL, "status %#x", cst);

	/* stop tracing init, then it serves as before */
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, init, NULL, NULL), 0);
	for (;;) {
		int st;
		cr_assert_eq(waitpid(init, &st, __WALL), init);
		if (WIFSTOPPED(st) && st >> 16 == PTRACE_EVENT_STOP)
			break;
		cr_assert_eq(ptrace(PTRACE_CONT, init, NULL, (void *)(long)(WIFSTOPPED(st) ? WSTOPSIG(st) : 0)), 0);
	}
	cr_assert_eq(ptrace(PTRACE_DETACH, init, NULL, NULL), 0);
	ABOX_EXPECT(0, "served\n", NULL, "exec", id, "--", "echo", "served");
	kill_and_free(id);
}

/* What the child sets up before its exec, seen from the command: uid
 * 1000; fds 0-2 plus the one ls reads through; nothing blocked or
 * ignored; OOM-killable; its own session. */
static void check_command_setup(const char *id)
{
	ABOX_EXPECT(0, "1000\n4\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n0\nleader\n", NULL,
		    "exec", id, "--", "sh", "-c",
		    "id -u; ls /proc/self/fd | wc -l; grep -E '^(SigBlk|SigIgn)' /proc/self/status; "
		    "cat /proc/self/oom_score_adj; test \"$(cut -d' ' -f6 /proc/self/stat)\" = \"$$\" && "
		    "echo leader");
}

Test(spawn, commands_get_their_own_user_fds_and_signals)
{
	char *id = CREATE("--timeout", "120");
	check_command_setup(id);
	ABOX_ANY("kill", id);
	free(id);
}

static int init_threads(pid_t init)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)init);
	char *st = read_whole(path, NULL);
	cr_assert_not_null(st);
	char *t = strstr(st, "\nThreads:");
	cr_assert_not_null(t);
	int n = atoi(t + 9);
	free(st);
	return n;
}

Test(spawn, the_watchdog_thread_is_there_only_while_commands_start)
{
	/* an idle sandbox is init alone; the watchdog comes with a command
	 * started while another process runs, and leaves after a few idle
	 * seconds */
	char *id = CREATE("--timeout", "120");
	pid_t init = init_pid(id);
	cr_assert_eq(init_threads(init), 1, "a new sandbox: init alone");
	ABOX_OK("exec", id, "--", "true");
	cr_assert_eq(init_threads(init), 1, "init alone in the sandbox: nothing to guard against");
	ABOX_OK("exec", "-d", id, "--", "sleep", "600");
	ABOX_OK("exec", id, "--", "true");
	cr_assert_eq(init_threads(init), 2, "the watchdog runs after a start beside another process");
	int n = 2;
	for (int i = 0; i < 100 && n == 2; i++) {
		usleep(100 * 1000);
		n = init_threads(init);
	}
	cr_assert_eq(n, 1, "the watchdog left an idle sandbox");
	ABOX_EXPECT(0, "again\n", NULL, "exec", id, "--", "echo", "again");
	cr_assert_eq(init_threads(init), 2, "and comes back with the next start");
	ABOX_ANY("kill", id);
	free(id);
}

Test(spawn, forked_commands_where_asked)
{
	/* ABOX_INIT_SPAWN=fork: the way init also takes where
	 * fs.suid_dumpable is 1; the same contract, and no watchdog */
	setenv("ABOX_INIT_SPAWN", "fork", 1);
	char *id = CREATE("--timeout", "120");
	unsetenv("ABOX_INIT_SPAWN");
	pid_t init = init_pid(id);
	ABOX_OK("exec", "-d", id, "--", "sleep", "600");
	check_command_setup(id);
	cr_assert_eq(init_threads(init), 1, "forked: no watchdog thread");
	ABOX_EXPECT(127, NULL, "no-such-command-here", "exec", id, "--", "no-such-command-here");
	ABOX_EXPECT(126, NULL, "/nonexistent", "exec", "--cwd", "/nonexistent", id, "--", "true");
	ABOX_ANY("kill", id);
	free(id);
}

/* The creating thread makes the sandbox's network namespace itself
 * (net_namespace_new) and must come back to its own: a daemon thread left
 * in a sandbox's namespace would open its later sockets there. */
static void net_ns_of(const char *proc_path, char *out, size_t n)
{
	ssize_t k = readlink(proc_path, out, n - 1);
	cr_assert_gt(k, 0, "readlink %s: %s", proc_path, strerror(errno));
	out[k] = '\0';
}

struct thread_create {
	abox_ctx *ctx;
	char before[64], after[64], sandbox[64];
	int r;
	char msg[512];
};

static void *create_in_thread(void *p)
{
	struct thread_create *t = p;
	abox_error err = ABOX_ERROR_INIT;
	net_ns_of("/proc/thread-self/ns/net", t->before, sizeof(t->before));
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	so.timeout_ms = 60000;
	abox_sandbox *sb = NULL;
	t->r = abox_sandbox_create(t->ctx, &so, &sb, &err);
	snprintf(t->msg, sizeof(t->msg), "%s", err.msg);
	net_ns_of("/proc/thread-self/ns/net", t->after, sizeof(t->after));
	if (t->r == 0) {
		abox_sandbox_info info = { .version = ABOX_SANDBOX_INFO_VERSION };
		if (abox_sandbox_info_get(t->ctx, abox_sandbox_id(sb), &info, NULL) == 0) {
			char p2[64];
			snprintf(p2, sizeof(p2), "/proc/%d/ns/net", info.pid);
			ssize_t k = readlink(p2, t->sandbox, sizeof(t->sandbox) - 1);
			t->sandbox[k > 0 ? k : 0] = '\0';
			abox_sandbox_info_clear(&info);
		}
		(void)abox_sandbox_kill(sb, NULL);
		abox_sandbox_free(sb);
	}
	return NULL;
}

Test(spawn, the_creating_thread_stays_in_its_own_network_namespace)
{
	abox_error err = ABOX_ERROR_INIT;
	struct thread_create t = { 0 };
	cr_assert_eq(abox_ctx_new(NULL, &t.ctx, &err), 0, "%s", err.msg);
	char main_before[64], main_after[64];
	net_ns_of("/proc/thread-self/ns/net", main_before, sizeof(main_before));
	/* once from this thread, once from another one */
	for (int round = 0; round < 2; round++) {
		memset(t.before, 0, sizeof(t.before));
		memset(t.sandbox, 0, sizeof(t.sandbox));
		if (round == 0) {
			create_in_thread(&t);
		} else {
			pthread_t th;
			cr_assert_eq(pthread_create(&th, NULL, create_in_thread, &t), 0);
			cr_assert_eq(pthread_join(th, NULL), 0);
		}
		cr_assert_eq(t.r, 0, "create: %s", t.msg);
		cr_assert_str_eq(t.after, t.before, "round %d: the thread came back to %s", round, t.before);
		cr_assert_neq(t.sandbox[0], '\0', "round %d: the sandbox's namespace was read", round);
		cr_assert_str_neq(t.sandbox, t.before, "round %d: the sandbox has a namespace of its own", round);
	}
	net_ns_of("/proc/thread-self/ns/net", main_after, sizeof(main_after));
	cr_assert_str_eq(main_after, main_before);
	abox_ctx_free(t.ctx);
}
