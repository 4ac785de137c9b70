/* Privileged tests of the cgroup module on the real hierarchies of this
 * host (hybrid here: v1 memory/pids/cpu/freezer, v2 with cgroup.freeze and
 * cgroup.kill). They skip when not root.
 *
 * Cleanup: each test names its sandbox; .fini kills the test's children,
 * destroys the sandbox and then, independently of the module under test,
 * removes any "abox-ptest-*" directory of that name left in any hierarchy.
 * A crashed or timed-out worker runs no .fini, so a guardian process
 * (outside the sandbox) waits for the test process to exit and sweeps
 * again; the sweep also runs before each test. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "cgroup/cgroup.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

static struct cg_layout full; /* as detected */
static struct cg_layout L;    /* what the test uses (full or v1-only) */
static struct cg_sandbox *cg;
static char leaf[64];
static pid_t kids[8];
static int nkids;

static void layout_copy(struct cg_layout *dst, const struct cg_layout *src)
{
	*dst = *src;
	dst->v2_mount = src->v2_mount ? strdup(src->v2_mount) : NULL;
	dst->v2_self = src->v2_self ? strdup(src->v2_self) : NULL;
	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		dst->v1_mount[c] = src->v1_mount[c] ? strdup(src->v1_mount[c]) : NULL;
		dst->v1_self[c] = src->v1_self[c] ? strdup(src->v1_self[c]) : NULL;
	}
}

/* "<mount><self>/<leaf>" */
static const char *path_in(const char *mount, const char *self)
{
	static char buf[8][4096];
	static int i;
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s%s/%s", mount, strcmp(self, "/") ? self : "", leaf);
	return buf[i];
}

static const char *v1_path(enum cg_controller c)
{
	return path_in(full.v1_mount[c], full.v1_self[c]);
}

static const char *v2_path(void)
{
	return path_in(full.v2_mount, full.v2_self);
}

static char *slurp(const char *dir, const char *file)
{
	char p[4200];
	char *text = NULL;
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	if (read_file_at(AT_FDCWD, p, 1 << 20, &text, NULL) < 0)
		return NULL;
	return text;
}

static bool exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static void thaw(const char *dir)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/freezer.state", dir);
	(void)write_file_at(AT_FDCWD, p, "THAWED");
	snprintf(p, sizeof(p), "%s/cgroup.freeze", dir);
	(void)write_file_at(AT_FDCWD, p, "0");
}

/* Independent of the module: kill what is listed, rmdir. */
static void force_remove(const char *dir)
{
	for (int i = 0; i < 2000 && exists(dir); i++) {
		char *procs = slurp(dir, "cgroup.procs");
		for (char *s = procs, *end; s && *s; s = end) {
			long pid = strtol(s, &end, 10);
			if (end == s)
				break;
			if (pid > 0 && pid != getpid())
				kill((pid_t)pid, SIGKILL);
			while (*end == '\n')
				end++;
		}
		free(procs);
		if (rmdir(dir) == 0)
			break;
		usleep(1000);
	}
}

/* Thaw everywhere first: a task frozen by the v1 freezer ignores SIGKILL,
 * so it would keep the other hierarchies' directories busy. */
static void sweep_leftovers(void)
{
	if (!leaf[0])
		return;
	for (int pass = 0; pass < 2; pass++) {
		void (*step)(const char *) = pass == 0 ? thaw : force_remove;
		if (full.v2_mount)
			step(v2_path());
		for (int c = 0; c < CG_CONTROLLER_MAX; c++)
			if (full.v1_mount[c])
				step(v1_path(c));
	}
}

static void reap_all(void)
{
	while (waitpid(-1, NULL, __WALL | WNOHANG) > 0)
		;
}

static void setup(void)
{
	abox_error err = ABOX_ERROR_INIT;
	if (geteuid() != 0)
		cr_skip_test("needs root: creates cgroups on the real hierarchies");
	cr_assert_eq(cgroup_layout_detect(&full, &err), 0, "%s", err.msg);
	layout_copy(&L, &full);
}

static void teardown(void)
{
	for (int i = 0; i < nkids; i++)
		kill(kids[i], SIGKILL);
	if (cg) {
		abox_error err = ABOX_ERROR_INIT;
		if (cgroup_destroy(TAKE_PTR(cg), &err) < 0)
			cr_log_error("teardown destroy: %s", err.msg);
	}
	sweep_leftovers();
	reap_all();
	cgroup_layout_free(&L);
	cgroup_layout_free(&full);
}

TestSuite(cgroup_real, .init = setup, .fini = teardown, .timeout = 60);

/* Double-forked so it is not our child (waitpid(-1) below reaps only the
 * sandbox's tasks); closes every inherited fd so the runner sees EOF. */
static void start_guardian(void)
{
	pid_t parent = getpid(), p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		if (fork() != 0)
			_exit(0);
		int pfd = (int)syscall(SYS_pidfd_open, parent, 0);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		for (int fd = 0; fd < 3; fd++)
			dup2(null, fd);
		for (int fd = 3; fd < 1024; fd++)
			if (fd != pfd)
				close(fd);
		struct pollfd x = { .fd = pfd, .events = POLLIN };
		while (pfd >= 0 && poll(&x, 1, -1) < 0 && errno == EINTR)
			;
		sweep_leftovers();
		_exit(0);
	}
	waitpid(p, NULL, 0);
}

static void start(const char *name)
{
	snprintf(leaf, sizeof(leaf), "abox-ptest-%s", name);
	sweep_leftovers();
	start_guardian();
	/* orphaned grandchildren come back to us, so we can check how they
	 * died (set after the guardian left, so it does not come back) */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}

/* Creates the sandbox named by start(). */
static void create(struct cg_limits lim)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(cgroup_create(&L, leaf + strlen("abox-"), &lim, &cg, &err), 0, "%s", err.msg);
}

/* Nothing of this test's sandbox is left in any hierarchy. */
static void assert_gone(void)
{
	if (full.v2_mount)
		cr_assert_not(exists(v2_path()), "%s left behind", v2_path());
	for (int c = 0; c < CG_CONTROLLER_MAX; c++)
		if (full.v1_mount[c])
			cr_assert_not(exists(v1_path(c)), "%s left behind", v1_path(c));
}

static void destroy(void)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(cgroup_destroy(TAKE_PTR(cg), &err), 0, "%s", err.msg);
	assert_gone();
}

/* Drops the v2 side so the sandbox runs on v1 only (freezer included). */
static void use_v1_only(void)
{
	if (!full.v1_mount[CG_FREEZER])
		cr_skip_test("no v1 freezer hierarchy on this host");
	free(L.v2_mount);
	free(L.v2_self);
	L.v2_mount = L.v2_self = NULL;
	L.v2_kill = false;
	for (int c = 0; c < CG_CONTROLLER_MAX; c++)
		L.use[c] = full.v1_mount[c] ? CG_V1 : CG_NONE;
	for (int c = CG_MEMORY; c <= CG_CPU; c++)
		if (L.use[c] == CG_NONE)
			cr_skip_test("no v1 %s hierarchy on this host", cgroup_controller_name(c));
}

enum kid_kind { KID_SLEEP, KID_SPIN, KID_TREE, KID_HOG };

/* Runs in the forked child, after the parent has attached it. */
_Noreturn static void kid_main(enum kid_kind kind)
{
	switch (kind) {
	case KID_SLEEP:
		for (;;)
			pause();
	case KID_SPIN:
		for (volatile unsigned long n = 0;; n++)
			;
	case KID_TREE:
		for (int i = 0; i < 3; i++)
			if (fork() == 0)
				for (volatile unsigned long n = 0;; n++)
					;
		for (;;)
			pause();
	case KID_HOG:
		for (;;) {
			char *p = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				_exit(3);
			for (size_t i = 0; i < (64u << 20); i += 4096)
				p[i] = 1;
		}
	}
	_exit(2);
}

/* Forks a child, puts it in the sandbox, then lets it run. */
static pid_t spawn_into(enum kid_kind kind, bool include_v2)
{
	abox_error err = ABOX_ERROR_INIT;
	int go[2];
	char c = 0;
	cr_assert_eq(pipe2(go, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		kid_main(kind);
	}
	kids[nkids++] = pid;
	close(go[0]);
	cr_assert_eq(cgroup_attach(cg, pid, include_v2, &err), 0, "%s", err.msg);
	cr_assert_eq(write(go[1], &c, 1), 1);
	close(go[1]);
	return pid;
}

static pid_t spawn(enum kid_kind kind)
{
	return spawn_into(kind, true);
}

static bool procs_has(const char *dir, pid_t pid)
{
	char *procs = slurp(dir, "cgroup.procs");
	bool found = false;
	for (char *s = procs, *end; s && *s && !found; s = end) {
		found = strtol(s, &end, 10) == pid;
		if (end == s)
			break;
		while (*end == '\n')
			end++;
	}
	free(procs);
	return found;
}

static int procs_count(const char *dir)
{
	char *procs = slurp(dir, "cgroup.procs");
	int n = 0;
	for (char *s = procs; s && *s; s++)
		n += *s == '\n';
	free(procs);
	return n;
}

/* Reaps the child and every orphaned grandchild; all must die of SIGKILL. */
static void expect_all_killed(int want)
{
	int got = 0, status;
	pid_t p;
	while ((p = waitpid(-1, &status, __WALL)) > 0) {
		cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			  "pid %d: status 0x%x", (int)p, status);
		got++;
	}
	nkids = 0;
	cr_assert_eq(got, want);
}

static void wait_for_procs(const char *dir, int n)
{
	for (int i = 0; i < 2000 && procs_count(dir) < n; i++)
		usleep(1000);
	cr_assert_eq(procs_count(dir), n);
}

static void expect_line(const char *dir, const char *file, const char *want)
{
	char *text = slurp(dir, file);
	cr_assert_not_null(text, "%s/%s unreadable", dir, file);
	cr_assert_str_eq(text, want, "%s/%s", dir, file);
	free(text);
}

Test(cgroup_real, limits_read_back)
{
	start("limits");
	create((struct cg_limits){ .memory_bytes = 64 << 20, .pids = 50,
						   .cpu_millis = 500 });
	bool any_v1 = false;
	for (int c = CG_MEMORY; c <= CG_CPU; c++)
		any_v1 |= L.use[c] == CG_V1;
	if (L.use[CG_MEMORY] == CG_V1) {
		/* the sandbox: the limit plus init's headroom; its commands'
		 * cgroup: the limit */
		const char *d = v1_path(CG_MEMORY);
		expect_line(d, "memory.limit_in_bytes", "134217728\n");
		char p[4200], c[4200];
		snprintf(c, sizeof(c), "%s/cmds", d);
		expect_line(c, "memory.limit_in_bytes", "67108864\n");
		snprintf(p, sizeof(p), "%s/memory.memsw.limit_in_bytes", d);
		if (exists(p))
			expect_line(c, "memory.memsw.limit_in_bytes", "67108864\n");
	} else if (L.use[CG_MEMORY] == CG_V2) {
		expect_line(v2_path(), "memory.max", "134217728\n");
	}
	if (L.use[CG_PIDS] != CG_NONE)
		expect_line(L.use[CG_PIDS] == CG_V1 ? v1_path(CG_PIDS) : v2_path(), "pids.max",
			    "50\n");
	if (L.use[CG_CPU] == CG_V1) {
		expect_line(v1_path(CG_CPU), "cpu.cfs_period_us", "100000\n");
		expect_line(v1_path(CG_CPU), "cpu.cfs_quota_us", "50000\n");
	} else if (L.use[CG_CPU] == CG_V2) {
		expect_line(v2_path(), "cpu.max", "50000 100000\n");
	}
	if (full.v2_mount)
		cr_assert(exists(v2_path()));
	destroy();
	if (!any_v1)
		cr_log_warn("no v1 controller on this host: only v2 limits were checked");
}

Test(cgroup_real, attach_forked_child)
{
	start("attach");
	create((struct cg_limits){ .pids = 20 });
	pid_t pid = spawn(KID_SLEEP);
	/* the v1 freezer has a directory only when the freezer is v1 */
	for (int c = CG_MEMORY; c < CG_CONTROLLER_MAX; c++)
		if (L.use[c] == CG_V1)
			cr_assert(procs_has(v1_path(c), pid), "%d not in %s", pid, v1_path(c));
	if (full.v2_mount)
		cr_assert(procs_has(v2_path(), pid), "%d not in %s", pid, v2_path());
	/* destroy kills what runs inside */
	destroy();
	expect_all_killed(1);
}

/* How the integrator places a child: clone3(CLONE_INTO_CGROUP) with
 * cgroup_v2_fd(), then cgroup_attach(include_v2 = false) for v1. */
Test(cgroup_real, clone_into_cgroup_then_attach_v1)
{
	abox_error err = ABOX_ERROR_INIT;
	struct {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
			set_tid, set_tid_size, cgroup;
	} args = { 0 };
	int go[2];
	char c = 0;

	start("clone");
	create((struct cg_limits){ 0 });
	int fd = cgroup_v2_fd(cg);
	if (fd < 0)
		cr_skip_test("no v2 hierarchy");
	cr_assert_eq(pipe2(go, O_CLOEXEC), 0);
	args.flags = CLONE_INTO_CGROUP;
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)fd;
	long pid = syscall(SYS_clone3, &args, sizeof(args));
	cr_assert_geq(pid, 0, "clone3: %s", strerror(errno));
	if (pid == 0) {
		/* child of a raw clone3: async-signal-safe calls only */
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	kids[nkids++] = (pid_t)pid;
	close(go[0]);
	cr_assert(procs_has(v2_path(), (pid_t)pid), "not born in %s", v2_path());
	cr_assert_eq(cgroup_attach(cg, (pid_t)pid, false, &err), 0, "%s", err.msg);
	for (int k = CG_MEMORY; k <= CG_CPU; k++)
		if (L.use[k] == CG_V1)
			cr_assert(procs_has(v1_path(k), (pid_t)pid));
	cr_assert_eq(write(go[1], &c, 1), 1);
	close(go[1]);
	destroy();
	expect_all_killed(1);
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* A sandbox cgroup holding a spinning and a sleeping process, frozen;
 * returns how long the freeze took (microseconds). */
static uint64_t freeze_two_kids(void)
{
	abox_error err = ABOX_ERROR_INIT;
	create((struct cg_limits){ 0 });
	spawn(KID_SPIN);
	spawn(KID_SLEEP);
	uint64_t t0 = now_us();
	cr_assert_eq(cgroup_freeze(cg, true, &err), 0, "%s", err.msg);
	return now_us() - t0;
}

Test(cgroup_real, freeze_thaw_v2)
{
	abox_error err = ABOX_ERROR_INIT;
	start("freeze2");
	if (L.use[CG_FREEZER] != CG_V2)
		cr_skip_test("the freezer is not v2 on this host");
	uint64_t froze = freeze_two_kids();
	char *ev = slurp(v2_path(), "cgroup.events");
	cr_assert_not_null(strstr(ev, "frozen 1"), "%s", ev);
	free(ev);
	/* idempotent */
	cr_assert_eq(cgroup_freeze(cg, true, &err), 0, "%s", err.msg);
	uint64_t t2 = now_us();
	cr_assert_eq(cgroup_freeze(cg, false, &err), 0, "%s", err.msg);
	uint64_t t3 = now_us();
	ev = slurp(v2_path(), "cgroup.events");
	cr_assert_not_null(strstr(ev, "frozen 0"), "%s", ev);
	free(ev);
	cr_log_info("v2 freeze %llu us, thaw %llu us", (unsigned long long)froze,
		    (unsigned long long)(t3 - t2));
	destroy();
	expect_all_killed(2);
}

Test(cgroup_real, freeze_thaw_v1)
{
	abox_error err = ABOX_ERROR_INIT;
	start("freeze1");
	use_v1_only();
	uint64_t froze = freeze_two_kids();
	expect_line(v1_path(CG_FREEZER), "freezer.state", "FROZEN\n");
	cr_assert_eq(cgroup_freeze(cg, false, &err), 0, "%s", err.msg);
	expect_line(v1_path(CG_FREEZER), "freezer.state", "THAWED\n");
	cr_log_info("v1 freeze %llu us", (unsigned long long)froze);
	destroy();
	expect_all_killed(2);
}

static void kill_frozen_tree(void)
{
	abox_error err = ABOX_ERROR_INIT;
	const char *dir = L.v2_mount ? v2_path() : v1_path(CG_FREEZER);
	spawn(KID_TREE);
	wait_for_procs(dir, 4);
	cr_assert_eq(cgroup_freeze(cg, true, &err), 0, "%s", err.msg);
	cr_assert_eq(cgroup_kill(cg, &err), 0, "%s", err.msg);
	expect_all_killed(4);
	wait_for_procs(dir, 0);
	destroy();
}

Test(cgroup_real, kill_frozen_tree_v2)
{
	start("kill2");
	if (L.use[CG_FREEZER] != CG_V2 || !L.v2_kill)
		cr_skip_test("no v2 freezer with cgroup.kill on this host");
	create((struct cg_limits){ 0 });
	kill_frozen_tree();
}

Test(cgroup_real, kill_frozen_tree_v1)
{
	start("kill1");
	use_v1_only();
	create((struct cg_limits){ 0 });
	kill_frozen_tree();
}

/* destroy on v1 only, tasks running (not frozen): the signal sweep. */
Test(cgroup_real, destroy_running_tree_v1)
{
	start("dest1");
	use_v1_only();
	create((struct cg_limits){ .pids = 64 });
	spawn(KID_TREE);
	wait_for_procs(v1_path(CG_PIDS), 4);
	destroy();
	expect_all_killed(4);
}

/* A task attached to v1 only escapes cgroup.kill on v2; destroy must still
 * find it (its v1 directory stays busy) and kill it. */
Test(cgroup_real, destroy_kills_tasks_outside_v2)
{
	start("escape");
	if (!L.v2_kill || L.use[CG_PIDS] != CG_V1)
		cr_skip_test("needs v2 cgroup.kill and a v1 pids hierarchy");
	create((struct cg_limits){ 0 });
	pid_t pid = spawn_into(KID_SLEEP, false);
	cr_assert(procs_has(v1_path(CG_PIDS), pid));
	cr_assert_not(procs_has(v2_path(), pid));
	destroy();
	expect_all_killed(1);
}

Test(cgroup_real, oom_kills_counted)
{
	abox_error err = ABOX_ERROR_INIT;
	uint64_t n = 99;
	int status;
	start("oom");
	if (L.use[CG_MEMORY] == CG_NONE)
		cr_skip_test("no memory controller on this host");
	create((struct cg_limits){ .memory_bytes = 16 << 20 });
	cr_assert_eq(cgroup_oom_kills(cg, &n, &err), 0, "%s", err.msg);
	cr_assert_eq(n, 0);
	pid_t pid = spawn(KID_HOG);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	nkids = 0;
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status 0x%x", status);
	cr_assert_eq(cgroup_oom_kills(cg, &n, &err), 0, "%s", err.msg);
	cr_assert_geq(n, 1);
	destroy();
}

/* The pids limit holds: forks past it fail inside the sandbox. */
Test(cgroup_real, pids_limit_enforced)
{
	int status;
	start("pids");
	if (L.use[CG_PIDS] == CG_NONE)
		cr_skip_test("no pids controller on this host");
	create((struct cg_limits){ .pids = 1 });
	int go[2];
	char c = 0;
	cr_assert_eq(pipe2(go, O_CLOEXEC), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		pid_t g = fork();
		_exit(g < 0 && errno == EAGAIN ? 0 : 1);
	}
	kids[nkids++] = pid;
	close(go[0]);
	cr_assert_eq(cgroup_attach(cg, pid, true, NULL), 0);
	cr_assert_eq(write(go[1], &c, 1), 1);
	close(go[1]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	nkids = 0;
	reap_all();
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork was not refused");
	destroy();
}

Test(cgroup_real, create_destroy_cost)
{
	enum { N = 40 };
	uint64_t c[N], d[N];
	start("cost");
	for (int i = 0; i < N; i++) {
		abox_error err = ABOX_ERROR_INIT;
		uint64_t t0 = now_us();
		cr_assert_eq(cgroup_create(&L, leaf + strlen("abox-"),
					   &(struct cg_limits){ .memory_bytes = 256 << 20, .pids = 100,
								.cpu_millis = 1000 },
					   &cg, &err),
			     0, "%s", err.msg);
		uint64_t t1 = now_us();
		cr_assert_eq(cgroup_destroy(TAKE_PTR(cg), &err), 0, "%s", err.msg);
		c[i] = t1 - t0;
		d[i] = now_us() - t1;
	}
	assert_gone();
	for (int i = 1; i < N; i++)
		for (int j = i; j > 0 && c[j] < c[j - 1]; j--) {
			uint64_t t = c[j];
			c[j] = c[j - 1];
			c[j - 1] = t;
		}
	for (int i = 1; i < N; i++)
		for (int j = i; j > 0 && d[j] < d[j - 1]; j--) {
			uint64_t t = d[j];
			d[j] = d[j - 1];
			d[j - 1] = t;
		}
	cr_log_info("create median %llu us, destroy median %llu us", (unsigned long long)c[N / 2],
		    (unsigned long long)d[N / 2]);
	/* generous bound against a regression to reads or waits on the hot path */
	cr_assert_lt(c[N / 2], 2000);
}
