/* Unit tests for the seccomp policy module: strict parsing, every action,
 * the args-rule-wins construction, the default policy (simulated for
 * x86_64, i386 and x32, then installed for real in forked children), and
 * the on-disk cache. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <seccomp.h>

#include "seccomp/policy.h"
#include "seccomp/policy_internal.h"

#define RULE(body) "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[" body "]}"
#define ALLOW SCMP_ACT_ALLOW
#define ERRNO(x) SCMP_ACT_ERRNO(x)
#define X32_BIT 0x40000000u

static const struct policy_env env0 = { .caps = 0, .kernel = 6001 };

/* ---- helpers --------------------------------------------------------- */

static char *default_policy_path(void)
{
	static char buf[4096];
	const char *src = getenv("ABOX_SOURCE_DIR");
	if (src && *src) {
		snprintf(buf, sizeof(buf), "%s/policies/default.json", src);
		if (access(buf, R_OK) == 0)
			return buf;
	}
	const char *rel[] = { "policies/default.json", "../policies/default.json",
			      "../../policies/default.json" };
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
		if (access(rel[i], R_OK) == 0)
			return strcpy(buf, rel[i]);
	cr_assert_fail("policies/default.json not found: set ABOX_SOURCE_DIR");
	return NULL;
}

static int compile(const char *json, struct policy_bpf *b, abox_error *err)
{
	return policy_compile(json, strlen(json), "t.json", &env0, b, err);
}

/* Compiles json into *b and asserts it compiled. */
static void compile_ok(const char *json, struct policy_bpf *b)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(compile(json, b, &err), 0, "%s for: %.200s", err.msg, json);
}

/* compile_ok into a new program */
static struct policy_bpf compiled(const char *json)
{
	struct policy_bpf b = { 0 };
	compile_ok(json, &b);
	return b;
}

/* Compiles and expects failure with `code` and a message containing each
 * of the needles (NULL-terminated). policy_check must agree unless the
 * error only shows up at compile time. */
static void expect_fail_v(const char *json, size_t len, int code, bool check_too,
			  const char **needles)
{
	abox_error err = ABOX_ERROR_INIT;
	struct policy_bpf b = { 0 };
	int r = policy_compile(json, len, "t.json", &env0, &b, &err);
	cr_assert_eq(r, -code, "expected -%d, got %d (%s) for: %.200s", code, r, err.msg, json);
	cr_assert_eq(err.code, code);
	cr_assert_null(b.insns, "output written on failure");
	cr_assert(strncmp(err.msg, "t.json: ", 8) == 0, "message does not name the source: %s",
		  err.msg);
	for (const char **n = needles; *n; n++)
		cr_assert(strstr(err.msg, *n), "message '%s' lacks '%s'", err.msg, *n);
	if (check_too) {
		abox_error err2 = ABOX_ERROR_INIT;
		cr_assert_eq(policy_check(json, len, "t.json", &err2), -code);
		cr_assert_str_eq(err2.msg, err.msg);
	}
}
#define expect_fail(json, code, ...)                                                               \
	expect_fail_v(json, strlen(json), code, true, (const char *[]){ __VA_ARGS__, NULL })

/* The compiled program run on one system call by the library's own
 * classic-BPF interpreter (the one its self-check uses), so it can be
 * checked for other architectures than ours. */
static uint32_t sim(const struct policy_bpf *b, uint32_t arch, int nr, const uint64_t args[6])
{
	struct seccomp_data d = { .nr = nr, .arch = arch };
	if (args)
		memcpy(d.args, args, sizeof(d.args));
	uint32_t ret = 0;
	cr_assert_eq(policy_bpf_run(b, &d, &ret), 0,
		     "the program did not reach a return (a bad load, an opcode not simulated, or its end)");
	return ret;
}

struct sys_case {
	uint32_t scmp_arch; /* SCMP_ARCH_* */
	const char *name;
	uint64_t args[6];
	uint32_t expect;
};

static uint32_t sim_named(const struct policy_bpf *b, uint32_t scmp_arch, const char *name,
			  const uint64_t args[6])
{
	int nr = seccomp_syscall_resolve_name_arch(scmp_arch, name);
	/* i386 has direct socket calls (kernel 4.3+) besides socketcall;
	 * libseccomp names them by a multiplexer pseudo number. */
	if (scmp_arch == SCMP_ARCH_X86 && strcmp(name, "socket") == 0)
		nr = 359;
	cr_assert(nr >= 0, "%s has no number on arch 0x%x", name, scmp_arch);
	/* x32 calls arrive with the x86_64 audit arch and bit 30 set in nr,
	 * which libseccomp's x32 numbers already carry. */
	uint32_t audit = scmp_arch == SCMP_ARCH_X32 ? AUDIT_ARCH_X86_64 : scmp_arch;
	return sim(b, audit, nr, args);
}

static void load_default(struct policy_bpf *b)
{
	abox_error err = ABOX_ERROR_INIT;
	int r = policy_load(default_policy_path(), NULL, &env0, b, &err);
	cr_assert_eq(r, 0, "default.json: %s", err.msg);
	cr_assert_gt(b->len, 0);
}

/* The default policy gives each of names (n of them) action on x86_64;
 * what says that action in a failure. */
static void default_policy_gives(const char *const *names, size_t n, uint32_t action, const char *what)
{
	struct policy_bpf b = { 0 };
	load_default(&b);
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, names[i], NULL), action, "%s is not %s",
			     names[i], what);
	policy_bpf_free(&b);
}

/* Runs fn in a forked child after installing b; the child's exit status
 * (0 = pass) is the result. */
static void in_child(const struct policy_bpf *b, int (*fn)(void))
{
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(90);
		int r = policy_bpf_install(b);
		if (r < 0) {
			fprintf(stderr, "install: %s\n", strerror(-r));
			_exit(91);
		}
		_exit(fn());
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child died: status 0x%x", st);
	cr_assert_eq(WEXITSTATUS(st), 0, "child failed at check %d", WEXITSTATUS(st));
}

/* ---- default policy ----------------------------------------------------- */

Test(default_policy, loads_and_checks)
{
	struct policy_bpf b = { 0 };
	load_default(&b);
	cr_assert_leq(b.len, BPF_MAXINSNS);
	policy_bpf_free(&b);
	cr_assert_null(b.insns);

	_cleanup_free_ char *text = NULL;
	size_t len;
	cr_assert_eq(read_file_at(AT_FDCWD, default_policy_path(), POLICY_MAX_BYTES, &text, &len),
		     0);
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(policy_check(text, len, "default.json", &err), 0, "%s", err.msg);
}

#define TIOCSTI_ 0x5412
#define TIOCLINUX_ 0x541C
#define HI (UINT64_C(1) << 32)
#define EP ERRNO(EPERM)
#define NS ERRNO(ENOSYS)

static const struct sys_case default_cases[] = {
	/* x86_64 */
	{ SCMP_ARCH_X86_64, "getpid", { 0 }, ALLOW },
	{ SCMP_ARCH_X86_64, "clone", { SIGCHLD }, ALLOW },
	{ SCMP_ARCH_X86_64, "clone", { 0x3d0f00 /* pthread_create's flags */ }, ALLOW },
	{ SCMP_ARCH_X86_64, "clone", { CLONE_NEWUSER | SIGCHLD }, EP },
	{ SCMP_ARCH_X86_64, "clone", { CLONE_NEWNS }, EP },
	{ SCMP_ARCH_X86_64, "clone", { CLONE_NEWCGROUP }, EP },
	{ SCMP_ARCH_X86_64, "clone", { CLONE_NEWUTS }, EP },
	{ SCMP_ARCH_X86_64, "clone", { CLONE_NEWIPC }, EP },
	{ SCMP_ARCH_X86_64, "clone", { CLONE_NEWPID | CLONE_NEWNET }, EP },
	{ SCMP_ARCH_X86_64, "clone", { CLONE_NEWNET | HI }, EP },
	{ SCMP_ARCH_X86_64, "clone3", { 0 }, NS },
	{ SCMP_ARCH_X86_64, "ioctl", { 1, TIOCSTI_ }, EP },
	{ SCMP_ARCH_X86_64, "ioctl", { 1, TIOCSTI_ | HI }, EP },
	{ SCMP_ARCH_X86_64, "ioctl", { 1, TIOCSTI_ | (UINT64_C(0xffffffff) << 32) }, EP },
	{ SCMP_ARCH_X86_64, "ioctl", { 1, TIOCLINUX_ }, EP },
	{ SCMP_ARCH_X86_64, "ioctl", { 1, TIOCLINUX_ | HI }, EP },
	{ SCMP_ARCH_X86_64, "ioctl", { 1, 0x5401 /* TCGETS */ }, ALLOW },
	{ SCMP_ARCH_X86_64, "ioctl", { 1, 0x5413 /* TIOCGWINSZ */ }, ALLOW },
	{ SCMP_ARCH_X86_64, "socket", { 38 /* AF_ALG */ }, EP },
	{ SCMP_ARCH_X86_64, "socket", { 38 | HI }, EP },
	{ SCMP_ARCH_X86_64, "socket", { 40 /* AF_VSOCK */, 1 }, EP },
	{ SCMP_ARCH_X86_64, "socket", { 40 | HI }, EP },
	{ SCMP_ARCH_X86_64, "socket", { AF_UNIX, SOCK_STREAM }, ALLOW },
	{ SCMP_ARCH_X86_64, "socket", { AF_INET6, SOCK_DGRAM }, ALLOW },
	{ SCMP_ARCH_X86_64, "socket", { AF_NETLINK }, ALLOW },
	{ SCMP_ARCH_X86_64, "personality", { 0xffffffff }, ALLOW },
	{ SCMP_ARCH_X86_64, "personality", { 0 }, ALLOW },
	{ SCMP_ARCH_X86_64, "personality", { ADDR_NO_RANDOMIZE }, ALLOW },
	{ SCMP_ARCH_X86_64, "personality", { READ_IMPLIES_EXEC }, EP },
	{ SCMP_ARCH_X86_64, "personality", { MMAP_PAGE_ZERO }, EP },
	{ SCMP_ARCH_X86_64, "mount", { 0 }, EP },
	{ SCMP_ARCH_X86_64, "unshare", { 0 }, EP },
	{ SCMP_ARCH_X86_64, "io_uring_setup", { 0 }, EP },
	{ SCMP_ARCH_X86_64, "ptrace", { 0 }, ALLOW },
	{ SCMP_ARCH_X86_64, "process_vm_readv", { 0 }, ALLOW },
	{ SCMP_ARCH_X86_64, "seccomp", { 0 }, ALLOW },
	{ SCMP_ARCH_X86_64, "modify_ldt", { 0 }, NS },
	{ SCMP_ARCH_X86_64, "vhangup", { 0 }, NS },
	{ SCMP_ARCH_X86_64, "futex_requeue", { 0 }, ALLOW },
	/* i386 and x32 are not in the default policy: any call from them is a
	 * call from a foreign architecture and kills the process */
	{ SCMP_ARCH_X86, "getpid", { 0 }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "mmap2", { 0 }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "clone", { CLONE_NEWUSER }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "clone", { SIGCHLD }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "ioctl", { 1, TIOCSTI_ }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "ioctl", { 1, 0x5401 }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "socket", { 38 }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "socket", { AF_UNIX }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "socketcall", { 1 /* SYS_SOCKET */ }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "socketcall", { 3 /* SYS_CONNECT */ }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "socketcall", { 2 /* SYS_BIND */ }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "ipc", { 23 /* SHMGET */ }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "vm86", { 0 }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "stime", { 0 }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "clone3", { 0 }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X86, "personality", { 8 }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X32, "getpid", { 0 }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X32, "ioctl", { 1, TIOCSTI_ }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X32, "ioctl", { 1, 0x5401 }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X32, "clone", { CLONE_NEWNS }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X32, "socket", { 40 }, SCMP_ACT_KILL_PROCESS },
	{ SCMP_ARCH_X32, "execve", { 0 }, SCMP_ACT_KILL_PROCESS },
};

Test(default_policy, simulated_per_arch)
{
	struct policy_bpf b = { 0 };
	load_default(&b);
	for (size_t i = 0; i < sizeof(default_cases) / sizeof(default_cases[0]); i++) {
		const struct sys_case *c = &default_cases[i];
		uint32_t got = sim_named(&b, c->scmp_arch, c->name, c->args);
		cr_expect_eq(got, c->expect,
			     "case %zu: %s(0x%llx, 0x%llx) on 0x%x: got 0x%x, want 0x%x", i,
			     c->name, (unsigned long long)c->args[0],
			     (unsigned long long)c->args[1], c->scmp_arch, got, c->expect);
	}
	/* Numbers no policy knows (syscalls newer than it) get ENOSYS. */
	cr_expect_eq(sim(&b, AUDIT_ARCH_X86_64, 462 /* mseal, unknown to libseccomp 2.5.4 */, NULL),
		     NS);
	cr_expect_eq(sim(&b, AUDIT_ARCH_X86_64, 1000, NULL), NS);
	/* An architecture the policy does not list. */
	cr_expect_eq(sim(&b, AUDIT_ARCH_AARCH64, 172, NULL), SCMP_ACT_KILL_PROCESS);
	policy_bpf_free(&b);
}

/* What abox-init and the sandbox child do under the filter. */
Test(default_policy, allows_what_init_needs)
{
	/* clang-format off */
	static const char *const needed[] = {
		"fork", "vfork", "clone", "execve", "execveat", "wait4", "waitid", "poll", "ppoll",
		"epoll_wait", "epoll_pwait", "signalfd4", "rt_sigprocmask", "rt_sigaction", "read",
		"write", "readv", "writev", "sendmsg", "recvmsg", "accept4", "setsid", "setpgid",
		"setgroups", "setresgid", "setresuid", "chdir", "fchdir", "prctl", "openat", "open",
		"close", "close_range", "dup2", "dup3", "pipe2", "kill", "exit_group", "exit",
		"ioctl", "fcntl", "newfstatat", "statx", "getdents64", "mkdirat", "unlinkat",
		"renameat2", "fchownat", "fchmodat", "utimensat", "inotify_init1",
		"inotify_add_watch", "socket", "connect", "getrandom", "mmap", "munmap", "mprotect",
		"brk", "futex", "set_robust_list", "rseq", "arch_prctl", "getuid", "getpid",
		"prlimit64", "setrlimit", "umask", "memfd_create", "ptrace", "seccomp",
		"landlock_create_ruleset", "chroot", "setuid", "setgid", "capset", "capget",
		"uname", "clock_gettime", "nanosleep", "clock_nanosleep", "timerfd_create",
		"eventfd2", "sched_yield", "getcwd", "lseek", "pread64", "sendfile",
		"copy_file_range", "tgkill", "pidfd_open", "pidfd_send_signal",
	};
	/* clang-format on */
	default_policy_gives(needed, sizeof(needed) / sizeof(needed[0]), ALLOW, "allowed");
}

/* Every explicit deny of the default policy returns EPERM (not the ENOSYS
 * of unknown calls), so callers can tell "blocked" from "absent". */
Test(default_policy, denies_with_eperm)
{
	/* clang-format off */
	static const char *const denied[] = {
		"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
		"fsmount", "fspick", "mount_setattr", "unshare", "setns", "keyctl", "add_key",
		"request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
		"io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load",
		"init_module", "finit_module", "delete_module", "open_by_handle_at",
		"name_to_handle_at", "acct", "swapon", "swapoff", "reboot", "syslog",
		"settimeofday", "clock_settime", "clock_adjtime", "iopl", "ioperm", "quotactl",
		"quotactl_fd", "lookup_dcookie", "uselib", "ustat", "sysfs", "_sysctl",
		"nfsservctl", "fanotify_init",
	};
	/* clang-format on */
	default_policy_gives(denied, sizeof(denied) / sizeof(denied[0]), EP, "EPERM");
}

static int errno_of(long r)
{
	return r < 0 ? errno : 0;
}

static int default_policy_for_real(void)
{
	if (syscall(SYS_getpid) <= 0)
		return 1;
	if (errno_of(syscall(SYS_unshare, 0)) != EPERM)
		return 2;
	if (errno_of(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)) != EPERM)
		return 3;
	if (errno_of(syscall(SYS_clone3, NULL, 0)) != ENOSYS)
		return 4;
	if (errno_of(syscall(SYS_ioctl, -1, (unsigned long)TIOCSTI_ | (1UL << 32), 0)) != EPERM)
		return 5;
	if (errno_of(syscall(SYS_ioctl, -1, TCGETS, 0)) != EBADF)
		return 6;
	if (errno_of(syscall(SYS_socket, 38, SOCK_SEQPACKET, 0)) != EPERM)
		return 7;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 8;
	close(fd);
	if (errno_of(syscall(SYS_mount, NULL, NULL, NULL, 0, NULL)) != EPERM)
		return 9;
	if (errno_of(syscall(SYS_personality, READ_IMPLIES_EXEC)) != EPERM)
		return 10;
	if (syscall(SYS_personality, 0xffffffffUL) < 0)
		return 11;
	if (errno_of(syscall(1000)) != ENOSYS)
		return 12;
	/* fork and ptrace must keep working (debuggers in the sandbox). */
	pid_t pid = fork();
	if (pid < 0)
		return 13;
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
			_exit(1);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 14;
	return 0;
}

Test(default_policy, installed_in_a_child)
{
	struct policy_bpf b = { 0 };
	load_default(&b);
	in_child(&b, default_policy_for_real);
	policy_bpf_free(&b);
}

/* ---- the filter fires: distinctive errno -------------------------------- */

static int getppid_gives_1337(void)
{
	long r = syscall(SYS_getppid);
	return r == -1 && errno == 1337 ? 0 : 1;
}

Test(kernel, distinctive_errno)
{
	struct policy_bpf b =
		compiled("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"getppid\"],"
			 "\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1337}]}");
	in_child(&b, getppid_gives_1337);
	policy_bpf_free(&b);
}

/* Both directions of "a rule with args wins over one without", for real. */
static int args_rule_wins(void)
{
	if (errno_of(syscall(SYS_getpriority, 7, 0)) != 1337)
		return 1; /* allowed without args, denied with args: deny wins */
	if (syscall(SYS_getpriority, PRIO_PROCESS, 0) == -1 && errno == 1337)
		return 2;
	if (syscall(SYS_getpgid, 0) < 0)
		return 3; /* denied without args, allowed with args: allow wins */
	if (errno_of(syscall(SYS_getpgid, 1)) != 1338)
		return 4;
	return 0;
}

Test(kernel, args_rule_wins_over_plain_rule)
{
	const char *json =
	    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
	    "{\"names\":[\"getpriority\"],\"action\":\"SCMP_ACT_LOG\"},"
	    "{\"names\":[\"getpriority\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1337,"
	    "\"args\":[{\"index\":0,\"value\":7,\"op\":\"SCMP_CMP_EQ\"}]},"
	    "{\"names\":[\"getpgid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1338},"
	    "{\"names\":[\"getpgid\"],\"action\":\"SCMP_ACT_ALLOW\","
	    "\"args\":[{\"index\":0,\"value\":0,\"op\":\"SCMP_CMP_EQ\"}]}]}";
	struct policy_bpf b = compiled(json);
	in_child(&b, args_rule_wins);
	policy_bpf_free(&b);
}

/* Regression: libseccomp 2.5.4 dropped the syscall-number load of the
 * x86_64/x32 branch when a rule named a syscall x86_64 lacks (socketcall),
 * so every args rule compared the architecture word and never matched:
 * clone(CLONE_NEWUSER) and ioctl(TIOCSTI) were allowed. */
Test(regression, pseudo_syscall_rule_with_x32)
{
	const char *json =
	    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\","
	    "\"SCMP_ARCH_X32\"],\"syscalls\":["
	    "{\"names\":[\"clone\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,\"value\":268435456,"
	    "\"valueTwo\":268435456,\"op\":\"SCMP_CMP_MASKED_EQ\"}]},"
	    "{\"names\":[\"socket\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,\"value\":38,"
	    "\"op\":\"SCMP_CMP_EQ\"}]},"
	    "{\"names\":[\"socketcall\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,\"value\":1,"
	    "\"op\":\"SCMP_CMP_EQ\"}]}]}";
	struct policy_bpf b = compiled(json);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "clone", (uint64_t[6]){ CLONE_NEWUSER }), EP);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X32, "clone", (uint64_t[6]){ CLONE_NEWUSER }), EP);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86, "clone", (uint64_t[6]){ CLONE_NEWUSER }), EP);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "socket", (uint64_t[6]){ 38 }), EP);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86, "socketcall", (uint64_t[6]){ 1 }), EP);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "clone", (uint64_t[6]){ SIGCHLD }), ALLOW);
	policy_bpf_free(&b);
}

/* The self-check refuses a program that disagrees with its policy. */
Test(regression, verify_catches_a_wrong_program)
{
	const char *json =
	    RULE("{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":7}");
	struct policy_doc d;
	struct policy_bpf b = { 0 };
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(policy_parse(json, strlen(json), "t.json", &d, &err), 0, "%s", err.msg);
	compile_ok(json, &b);
	uint32_t arches[] = { SCMP_ARCH_X86_64 };
	cr_assert_eq(policy_verify(&d, &env0, arches, 1, &b, &err), 0, "%s", err.msg);
	size_t patched = 0;
	for (size_t i = 0; i < b.len; i++)
		if (b.insns[i].code == (BPF_RET | BPF_K) && b.insns[i].k == ERRNO(7)) {
			b.insns[i].k = ALLOW;
			patched++;
		}
	cr_assert_gt(patched, 0);
	cr_assert_eq(policy_verify(&d, &env0, arches, 1, &b, &err), -EPROTO);
	cr_assert(strstr(err.msg, "'getppid'") && strstr(err.msg, "wrong program"), "%s", err.msg);
	/* A jump past the end is not a program at all. */
	b.insns[b.len - 1] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, 5, 0, 0);
	b.insns[0] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, (uint32_t)b.len - 2, 0, 0);
	cr_assert_eq(policy_verify(&d, &env0, arches, 1, &b, &err), -EPROTO);
	policy_bpf_free(&b);
	policy_doc_free(&d);
}

Test(regression, foreign_architecture_listed)
{
	struct policy_bpf b =
		compiled("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_AARCH64\"],"
			 "\"syscalls\":[{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\"}]}");
	cr_expect_eq(sim_named(&b, SCMP_ARCH_AARCH64, "getpid", NULL), ALLOW);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getpid", NULL), ALLOW,
		     "native arch is always in");
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86, "getpid", NULL), SCMP_ACT_KILL_PROCESS);
	policy_bpf_free(&b);
}

/* ---- actions --------------------------------------------------------------- */

static uint32_t action_of(const char *action_json)
{
	char json[512];
	snprintf(
	    json, sizeof(json),
	    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"getppid\"],%s}]}",
	    action_json);
	struct policy_bpf b = compiled(json);
	uint32_t r = sim_named(&b, SCMP_ARCH_X86_64, "getppid", NULL);
	cr_assert_eq(sim_named(&b, SCMP_ARCH_X86_64, "getpid", NULL), ALLOW);
	policy_bpf_free(&b);
	return r;
}

Test(actions, every_action)
{
	cr_expect_eq(action_of("\"action\":\"SCMP_ACT_KILL\""), SCMP_ACT_KILL_THREAD);
	cr_expect_eq(action_of("\"action\":\"SCMP_ACT_KILL_THREAD\""), SCMP_ACT_KILL_THREAD);
	cr_expect_eq(action_of("\"action\":\"SCMP_ACT_KILL_PROCESS\""), SCMP_ACT_KILL_PROCESS);
	cr_expect_eq(action_of("\"action\":\"SCMP_ACT_TRAP\""), SCMP_ACT_TRAP);
	cr_expect_eq(action_of("\"action\":\"SCMP_ACT_ERRNO\""), ERRNO(EPERM));
	cr_expect_eq(action_of("\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":4094"), ERRNO(4094));
	cr_expect_eq(action_of("\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":0"), ERRNO(0));
	cr_expect_eq(action_of("\"action\":\"SCMP_ACT_TRACE\""), SCMP_ACT_TRACE(EPERM));
	cr_expect_eq(action_of("\"action\":\"SCMP_ACT_TRACE\",\"errnoRet\":65535"),
		     SCMP_ACT_TRACE(65535));
	cr_expect_eq(action_of("\"action\":\"SCMP_ACT_LOG\""), SCMP_ACT_LOG);
	cr_expect_eq(action_of("\"action\":\"SCMP_ACT_ALLOW\""), ALLOW);
}

Test(actions, default_actions)
{
	struct policy_bpf b =
		compiled("{\"defaultAction\":\"SCMP_ACT_KILL_PROCESS\","
			 "\"syscalls\":[{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\"}]}");
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getppid", NULL), SCMP_ACT_KILL_PROCESS);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getpid", NULL), ALLOW);
	policy_bpf_free(&b);
	compile_ok("{\"defaultAction\":\"SCMP_ACT_ERRNO\"}", &b);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getppid", NULL), ERRNO(EPERM));
	policy_bpf_free(&b);
}

Test(actions, notify_not_supported)
{
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"mount\"],"
		    "\"action\":\"SCMP_ACT_NOTIFY\"}]}",
		    ENOTSUP, "syscalls[0].action", "SCMP_ACT_NOTIFY is not supported");
	expect_fail("{\"defaultAction\":\"SCMP_ACT_NOTIFY\"}", ENOTSUP, "defaultAction",
		    "not supported");
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"listenerPath\":\"/run/x.sock\"}",
		    ENOTSUP, "listenerPath", "not supported");
}

Test(actions, errno_ret_rules)
{
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"mount\"],"
		    "\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":4096}]}",
		    ERANGE, "syscalls[0].errnoRet", "4096");
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"mount\"],"
		    "\"action\":\"SCMP_ACT_KILL\",\"errnoRet\":1}]}",
		    EINVAL, "syscalls[0].errnoRet", "only meaningful");
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"defaultErrnoRet\":1}", EINVAL,
		    "defaultErrnoRet", "only meaningful");
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":-1}", EINVAL,
		    "defaultErrnoRet", "negative");
}

/* ---- strictness --------------------------------------------------------- */

Test(strict, unknown_fields)
{
	expect_fail("{\"defaultActon\":\"SCMP_ACT_ALLOW\"}", EINVAL,
		    "unknown top-level field 'defaultActon'");
	expect_fail(RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoret\":1}"),
		    EINVAL, "syscalls[0]", "unknown field 'errnoret'");
	expect_fail(RULE("{\"names\":[\"x\"],\"action\":\"SCMP_ACT_ALLOW\"},{\"names\":[\"mount\"],"
			 "\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,\"value\":1,\"op\":"
			 "\"SCMP_CMP_EQ\",\"vaule2\":3}]}"),
		    EINVAL, "syscalls[1].args[0]", "unknown field 'vaule2'");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"includes\":{\"cap\":[]}}"),
	    EINVAL, "syscalls[0].includes", "unknown field 'cap'");
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"archMap\":[{\"architecture\":"
		    "\"SCMP_ARCH_X86_64\",\"subArches\":[]}]}",
		    EINVAL, "archMap[0]", "unknown field 'subArches'");
}

Test(strict, unknown_action_op_index)
{
	expect_fail(RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_DENY\"}"), EINVAL,
		    "syscalls[0].action", "unknown action 'SCMP_ACT_DENY'");
	expect_fail("{\"defaultAction\":\"ALLOW\"}", EINVAL, "defaultAction",
		    "unknown action 'ALLOW'");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,"
		 "\"value\":1,\"op\":\"SCMP_CMP_EQUAL\"}]}"),
	    EINVAL, "syscalls[0].args[0].op", "unknown op 'SCMP_CMP_EQUAL'");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":6,"
		 "\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}"),
	    ERANGE, "syscalls[0].args[0].index", "6 is above the maximum 5");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":-1,"
		 "\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}"),
	    EINVAL, "syscalls[0].args[0].index", "negative");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,"
		 "\"op\":\"SCMP_CMP_EQ\"}]}"),
	    EINVAL, "syscalls[0].args[0]", "missing field 'value'");
}

Test(strict, unknown_syscall_in_deny_rule)
{
	expect_fail(RULE("{\"names\":[\"getpid\",\"mount\",\"umount2\",\"mountt\"],\"action\":"
			 "\"SCMP_ACT_ERRNO\"}"),
		    EINVAL, "syscalls[0].names[3]",
		    "unknown syscall 'mountt' in a rule that denies");
	expect_fail(RULE("{\"name\":\"kexec_lod\",\"action\":\"SCMP_ACT_KILL\"}"), EINVAL,
		    "syscalls[0].name:", "'kexec_lod'");
	/* KILL, TRAP and TRACE deny too. */
	expect_fail(RULE("{\"names\":[\"nope\"],\"action\":\"SCMP_ACT_TRACE\"}"), EINVAL,
		    "names[0]", "'nope'");
}

Test(strict, unknown_syscall_in_allow_rule_is_skipped)
{
	struct policy_bpf b =
		compiled("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":38,\"syscalls\":["
			 "{\"names\":[\"getpid\",\"some_future_call\",\"lsm_get_self_attr\"],"
			 "\"action\":\"SCMP_ACT_ALLOW\"},"
			 "{\"names\":[\"another_one\"],\"action\":\"SCMP_ACT_LOG\"}]}");
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getpid", NULL), ALLOW);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getppid", NULL), ERRNO(ENOSYS));
	policy_bpf_free(&b);
}

Test(strict, malformed_json)
{
	expect_fail("", EINVAL, "empty");
	expect_fail("{", EINVAL, "unexpected end");
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\",}", EINVAL, "malformed JSON");
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\"} {}", EINVAL, "malformed JSON");
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\"}\n\n x", EINVAL, "line 3",
		    "malformed JSON");
	expect_fail("[]", EINVAL, "top level must be an object");
	expect_fail("null", EINVAL, "unexpected end of input");
	expect_fail("\"x\"", EINVAL, "top level must be an object");
	expect_fail("{'defaultAction':\"SCMP_ACT_ALLOW\"}", EINVAL, "single-quoted");
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\" /* c */}", EINVAL, "malformed JSON");
	expect_fail("{\"defaultAction\":\"SCMP_\xff\"}", EINVAL, "malformed JSON");
	expect_fail_v("{\"defaultAction\":\"SCMP_ACT_ALLOW\"}\0", 35, EINVAL, true,
		      (const char *[]){ "NUL byte", NULL });
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\n\"defaultAction\":\"SCMP_ACT_ERRNO\"}",
		    EINVAL, "line 2", "duplicate field 'defaultAction'");
	expect_fail(
	    RULE(
		"{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"action\":\"SCMP_ACT_ALLOW\"}"),
	    EINVAL, "duplicate field 'action'");
	expect_fail(
	    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"default\\u0041ction\":\"SCMP_ACT_ERRNO\"}",
	    EINVAL, "escape sequence in field name");
}

Test(strict, wrong_types)
{
	expect_fail("{\"defaultAction\":1}", EINVAL, "defaultAction",
		    "expected a string, got an integer");
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":{}}", EINVAL, "syscalls",
		    "expected an array, got an object");
	expect_fail(RULE("{\"names\":\"mount\",\"action\":\"SCMP_ACT_ERRNO\"}"), EINVAL,
		    "syscalls[0].names", "expected an array, got a string");
	expect_fail(RULE("{\"names\":[1],\"action\":\"SCMP_ACT_ERRNO\"}"), EINVAL,
		    "syscalls[0].names[0]", "expected a string");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":\"1\"}"),
	    EINVAL, "errnoRet", "expected an integer, got a string");
	expect_fail(RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1.0}"),
		    EINVAL, "errnoRet", "expected an integer, got a non-integer number");
	expect_fail(RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":true}"),
		    EINVAL, "errnoRet", "got a boolean");
	expect_fail(RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":NaN}"),
		    EINVAL, "errnoRet", "non-integer");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,"
		 "\"value\":\"0x10\",\"op\":\"SCMP_CMP_EQ\"}]}"),
	    EINVAL, "args[0].value", "expected an integer");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,"
		 "\"value\":18446744073709551616,\"op\":\"SCMP_CMP_EQ\"}]}"),
	    ERANGE, "does not fit in 64 bits");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,"
		 "\"value\":-5,\"op\":\"SCMP_CMP_EQ\"}]}"),
	    EINVAL, "args[0].value", "negative");
	expect_fail(RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"comment\":7}"),
		    EINVAL, "syscalls[0].comment", "expected a string");
	expect_fail(RULE("{\"names\":[\"mo\\u0000unt\"],\"action\":\"SCMP_ACT_ALLOW\"}"), EINVAL,
		    "names[0]", "NUL character");
}

Test(strict, empty_and_missing)
{
	expect_fail(RULE("{\"names\":[],\"action\":\"SCMP_ACT_ERRNO\"}"), EINVAL,
		    "syscalls[0].names", "empty list");
	expect_fail(RULE("{\"names\":[\"\"],\"action\":\"SCMP_ACT_ALLOW\"}"), EINVAL,
		    "syscalls[0].names[0]", "empty string");
	expect_fail(RULE("{\"action\":\"SCMP_ACT_ERRNO\"}"), EINVAL, "syscalls[0]",
		    "missing field 'names'");
	expect_fail(RULE("{\"names\":[\"mount\"]}"), EINVAL, "syscalls[0]",
		    "missing field 'action'");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"name\":\"mount\",\"action\":\"SCMP_ACT_ERRNO\"}"),
	    EINVAL, "both 'name' and 'names'");
	expect_fail("{}", EINVAL, "missing field 'defaultAction'");
	expect_fail("{\"defaultAction\":\"\"}", EINVAL, "defaultAction", "empty string");
}

Test(strict, args_rules)
{
	/* libseccomp 2.5 cannot compare one argument twice in one rule. */
	expect_fail(RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":["
			 "{\"index\":1,\"value\":1,\"op\":\"SCMP_CMP_GE\"},"
			 "{\"index\":1,\"value\":9,\"op\":\"SCMP_CMP_LE\"}]}"),
		    EINVAL, "syscalls[0].args[1]", "argument 1 is already compared in args[0]");
	/* value is the mask; a swapped pair can never match. */
	expect_fail(
	    RULE("{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":1,"
		 "\"value\":21522,\"valueTwo\":4294967295,\"op\":\"SCMP_CMP_MASKED_EQ\"}]}"),
	    EINVAL, "syscalls[0].args[0]", "outside the mask");
	expect_fail(
	    RULE("{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":1,"
		 "\"value\":1,\"valueTwo\":2,\"op\":\"SCMP_CMP_EQ\"}]}"),
	    EINVAL, "valueTwo is only used by SCMP_CMP_MASKED_EQ");
	expect_fail(
	    RULE(
		"{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{},{},{},{},{},{},{}]}"),
	    E2BIG, "syscalls[0].args", "7 entries");
	/* Two plain rules for one syscall with different actions. */
	abox_error err = ABOX_ERROR_INIT;
	struct policy_bpf b = { 0 };
	const char *conflict =
	    RULE("{\"names\":[\"getpid\",\"mount\"],\"action\":\"SCMP_ACT_ERRNO\"},"
		 "{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_KILL\"}");
	cr_assert_eq(policy_check(conflict, strlen(conflict), "t.json", &err), 0);
	cr_assert_eq(compile(conflict, &b, &err), -EINVAL);
	cr_assert(strstr(err.msg, "t.json: syscalls[1]: 'mount' also appears in syscalls[0]"), "%s",
		  err.msg);
}

Test(strict, values_above_int64_max)
{
	struct policy_bpf b =
		compiled(RULE("{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,"
			      "\"value\":18446744073709551615,\"op\":\"SCMP_CMP_EQ\"}]}"));
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getppid", (uint64_t[6]){ UINT64_MAX }),
		     ERRNO(EPERM));
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getppid", (uint64_t[6]){ 0xffffffff }),
		     ALLOW);
	policy_bpf_free(&b);
}

Test(strict, architectures)
{
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_Z80\"]}",
		    EINVAL, "architectures[0]", "unknown architecture 'SCMP_ARCH_Z80'");
	expect_fail(
	    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_X86\",\"SCMP_ARCH_S390X\"]}",
	    EINVAL, "architectures[1]", "byte order");
	expect_fail("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[],\"archMap\":[]}",
		    EINVAL, "both 'architectures' and 'archMap'");
	expect_fail(
	    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"flags\":[\"SECCOMP_FILTER_FLAG_FAST\"]}",
	    EINVAL, "flags[0]", "unknown flag");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"includes\":{\"caps\":"
		 "[\"CAP_SYS_GOD\"]}}"),
	    EINVAL, "syscalls[0].includes.caps[0]", "unknown capability 'CAP_SYS_GOD'");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"excludes\":{\"arches\":"
		 "[\"x86_64\"]}}"),
	    EINVAL, "syscalls[0].excludes.arches[0]", "unknown architecture 'x86_64'");
	expect_fail(
	    RULE("{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\",\"includes\":{\"minKernel\":"
		 "\"5\"}}"),
	    EINVAL, "includes.minKernel", "MAJOR.MINOR");
}

/* Control characters from the policy never reach the message. */
Test(strict, messages_are_sanitized)
{
	expect_fail("{\"defaultAction\":\"SCMP_ACT_\\n\\u001b[31mX\"}", EINVAL,
		    "unknown action 'SCMP_ACT_??[31mX'");
	abox_error err = ABOX_ERROR_INIT;
	char json[400];
	snprintf(json, sizeof(json), "{\"defaultAction\":\"%0200d\"}", 0);
	cr_assert_eq(policy_check(json, strlen(json), "t.json", &err), -EINVAL);
	cr_assert(strstr(err.msg, "...'"), "%s", err.msg);
	cr_assert_lt(strlen(err.msg), 200);
}

/* ---- limits ------------------------------------------------------------- */

Test(limits, depth)
{
	char json[256] = "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"comment\":";
	for (int i = 0; i < 20; i++)
		strcat(json, "[");
	for (int i = 0; i < 20; i++)
		strcat(json, "]");
	strcat(json, "}");
	expect_fail(json, E2BIG, "nesting too deep");
}

Test(limits, size)
{
	size_t n = POLICY_MAX_BYTES + 1;
	char *big = malloc(n);
	cr_assert_not_null(big);
	memset(big, ' ', n);
	memcpy(big, "{\"defaultAction\":\"SCMP_ACT_ALLOW\"}", 34);
	expect_fail_v(big, n, EFBIG, true, (const char *[]){ "above the limit", NULL });
	free(big);
}

static char *many_rules(size_t rules, size_t names_per_rule)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	if (!f)
		abort();
	fputs("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[", f);
	for (size_t i = 0; i < rules; i++) {
		fprintf(f, "%s{\"action\":\"SCMP_ACT_ERRNO\",\"names\":[", i ? "," : "");
		for (size_t j = 0; j < names_per_rule; j++)
			fprintf(f, "%s\"getpid\"", j ? "," : "");
		fputs("]}", f);
	}
	fputs("]}", f);
	fclose(f);
	return s;
}

Test(limits, counts)
{
	char *s = many_rules(POLICY_MAX_RULES + 1, 1);
	expect_fail(s, E2BIG, "syscalls", "4097 entries, above the limit of 4096");
	free(s);
	s = many_rules(3, 1500);
	expect_fail(s, E2BIG, "syscalls[2].names", "more than 4096 syscall names");
	free(s);
	s = many_rules(100, 40);
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(policy_check(s, strlen(s), "t.json", &err), 0, "%s", err.msg);
	free(s);
}

Test(limits, too_many_fields)
{
	char json[2048];
	char *p = json + sprintf(json, "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"comment\":{");
	for (int i = 0; i < 40; i++)
		p += sprintf(p, "%s\"k%d\":1", i ? "," : "", i);
	strcpy(p, "}}");
	expect_fail(json, E2BIG, "more than 32 fields");
}

/* ---- Docker profile features ---------------------------------------------- */

Test(docker, compat_fields)
{
	const char *json =
	    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":1,"
	    "\"flags\":[\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\"],"
	    "\"archMap\":[{\"architecture\":\"SCMP_ARCH_X86_64\",\"subArchitectures\":[\"SCMP_ARCH_X86\","
	    "\"SCMP_ARCH_X32\"]},{\"architecture\":\"SCMP_ARCH_RISCV64\",\"subArchitectures\":null}],"
	    "\"syscalls\":["
	    "{\"name\":\"getpid\",\"action\":\"SCMP_ACT_ALLOW\",\"args\":null,\"comment\":\"legacy\"},"
	    "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"caps\":[\"CAP_SYS_ADMIN\"]}},"
	    "{\"names\":[\"gettid\"],\"action\":\"SCMP_ACT_ALLOW\",\"excludes\":{\"caps\":[\"CAP_SYS_ADMIN\"]}},"
	    "{\"names\":[\"getuid\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"arches\":[\"amd64\",\"x32\"]}},"
	    "{\"names\":[\"getgid\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"arches\":[\"s390x\"]}},"
	    "{\"names\":[\"geteuid\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":\"6.0\"}},"
	    "{\"names\":[\"getegid\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":\"99.1\"}},"
	    "{\"names\":[\"getsid\"],\"action\":\"SCMP_ACT_ALLOW\",\"excludes\":{\"minKernel\":\"4.8\"}}"
	    "]}";
	struct policy_bpf b = { 0 };
	abox_error err = ABOX_ERROR_INIT;
	struct policy_env admin = { .caps = UINT64_C(1) << 21, .kernel = 6001 };
	cr_assert_eq(policy_compile(json, strlen(json), "d.json", &admin, &b, &err), 0, "%s",
		     err.msg);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getpid", NULL), ALLOW);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86, "getpid", NULL), ALLOW,
		     "archMap subArchitectures");
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getppid", NULL), ALLOW);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "gettid", NULL), EP);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getuid", NULL), ALLOW);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getgid", NULL), EP);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "geteuid", NULL), ALLOW);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getegid", NULL), EP);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getsid", NULL), EP);
	policy_bpf_free(&b);

	cr_assert_eq(policy_compile(json, strlen(json), "d.json", &env0, &b, &err), 0, "%s",
		     err.msg);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "getppid", NULL), EP);
	cr_expect_eq(sim_named(&b, SCMP_ARCH_X86_64, "gettid", NULL), ALLOW);
	policy_bpf_free(&b);
}

/* ---- cache ---------------------------------------------------------------- */

struct cache_fixture {
	char dir[64], cache[96], policy[96];
};

static void fixture(struct cache_fixture *f, const char *json)
{
	strcpy(f->dir, "/tmp/abox-policy-test-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->cache, sizeof(f->cache), "%s/cache", f->dir);
	snprintf(f->policy, sizeof(f->policy), "%s/p.json", f->dir);
	FILE *fp = fopen(f->policy, "w");
	cr_assert_not_null(fp);
	fputs(json, fp);
	fclose(fp);
}

static void fixture_done(struct cache_fixture *f)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	cr_assert_eq(system(cmd), 0);
}

/* The one entry in the cache dir (asserts there are exactly `want`). */
static void only_entry(const char *cache, size_t want, char *path, size_t n)
{
	DIR *d = opendir(cache);
	cr_assert_not_null(d);
	size_t count = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			count++;
			snprintf(path, n, "%s/%s", cache, e->d_name);
		}
	closedir(d);
	cr_assert_eq(count, want, "%zu cache entries, want %zu", count, want);
}

static void load_ok(struct cache_fixture *f, const struct policy_env *env, struct policy_bpf *b)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(policy_load(f->policy, f->cache, env, b, &err), 0, "%s", err.msg);
}

static void same_program(const struct policy_bpf *a, const struct policy_bpf *b)
{
	cr_assert_eq(a->len, b->len);
	cr_assert_eq(memcmp(a->insns, b->insns, a->len * sizeof(*a->insns)), 0);
}

#define SMALL_POLICY                                                                               \
	RULE("{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1337}")

Test(cache, hit_miss_and_repair)
{
	struct cache_fixture f;
	fixture(&f, SMALL_POLICY);
	struct policy_bpf b1 = { 0 }, b2 = { 0 }, b3 = { 0 }, ref = { 0 };
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(policy_load(f.policy, NULL, &env0, &ref, &err), 0, "%s", err.msg);

	/* First load: the directory is created 0700 and one entry written. */
	load_ok(&f, &env0, &b1);
	same_program(&b1, &ref);
	struct stat st;
	cr_assert_eq(stat(f.cache, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0700);
	char entry[512];
	only_entry(f.cache, 1, entry, sizeof(entry));
	struct stat e1;
	cr_assert_eq(stat(entry, &e1), 0);
	cr_assert_eq(e1.st_mode & 07777, 0600);

	/* Second load hits: the entry is not rewritten (a rewrite is a rename
	 * of a new file, so a new inode). */
	load_ok(&f, &env0, &b2);
	same_program(&b2, &ref);
	struct stat e2;
	cr_assert_eq(stat(entry, &e2), 0);
	cr_assert_eq(e1.st_ino, e2.st_ino, "second load rewrote the entry");
	cr_assert_eq(e1.st_mtim.tv_nsec, e2.st_mtim.tv_nsec);

	/* Corrupt the stored program: ignored, recompiled, rewritten. */
	int fd = open(entry, O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, "\xff\xff\xff\xff", 4, e1.st_size - 4), 4);
	close(fd);
	load_ok(&f, &env0, &b3);
	same_program(&b3, &ref);
	struct stat e3;
	cr_assert_eq(stat(entry, &e3), 0);
	cr_assert_neq(e3.st_ino, e1.st_ino, "corrupted entry was not rewritten");
	policy_bpf_free(&b3);

	/* Truncated entry: same. */
	cr_assert_eq(truncate(entry, 10), 0);
	load_ok(&f, &env0, &b3);
	same_program(&b3, &ref);
	cr_assert_eq(stat(entry, &e3), 0);
	cr_assert_gt(e3.st_size, 10);

	/* Another env is another entry. */
	struct policy_env other = { .caps = 1, .kernel = 6001 };
	policy_bpf_free(&b3);
	load_ok(&f, &other, &b3);
	only_entry(f.cache, 2, entry, sizeof(entry));

	policy_bpf_free(&b1);
	policy_bpf_free(&b2);
	policy_bpf_free(&b3);
	policy_bpf_free(&ref);
	fixture_done(&f);
}

Test(cache, changed_policy_misses)
{
	struct cache_fixture f;
	fixture(&f, SMALL_POLICY);
	struct policy_bpf b1 = { 0 }, b2 = { 0 };
	load_ok(&f, &env0, &b1);
	FILE *fp = fopen(f.policy, "w");
	fputs(RULE("{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1338}"),
	      fp);
	fclose(fp);
	load_ok(&f, &env0, &b2);
	char entry[512];
	only_entry(f.cache, 2, entry, sizeof(entry));
	cr_expect_eq(sim_named(&b1, SCMP_ARCH_X86_64, "getppid", NULL), ERRNO(1337));
	cr_expect_eq(sim_named(&b2, SCMP_ARCH_X86_64, "getppid", NULL), ERRNO(1338));
	policy_bpf_free(&b1);
	policy_bpf_free(&b2);
	fixture_done(&f);
}

Test(cache, refuses_untrusted_dir)
{
	struct cache_fixture f;
	fixture(&f, SMALL_POLICY);
	cr_assert_eq(mkdir(f.cache, 0700), 0);
	cr_assert_eq(chmod(f.cache, 0777), 0);
	struct policy_bpf b = { 0 };
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(policy_load(f.policy, f.cache, &env0, &b, &err), -EPERM);
	cr_assert(strstr(err.msg, "writable by others"), "%s", err.msg);
	cr_assert_null(b.insns);
	fixture_done(&f);
}

Test(cache, errors_name_the_file)
{
	struct cache_fixture f;
	fixture(&f, RULE("{\"names\":[\"mountt\"],\"action\":\"SCMP_ACT_ERRNO\"}"));
	struct policy_bpf b = { 0 };
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(policy_load(f.policy, f.cache, &env0, &b, &err), -EINVAL);
	cr_assert(strstr(err.msg, "p.json: syscalls[0].names[0]: unknown syscall 'mountt'"), "%s",
		  err.msg);
	cr_assert_eq(policy_load("/nonexistent/x.json", NULL, &env0, &b, &err), -ENOENT);
	cr_assert(strstr(err.msg, "/nonexistent/x.json"), "%s", err.msg);
	fixture_done(&f);
}

Test(install, rejects_empty)
{
	struct policy_bpf b = { 0 };
	cr_assert_eq(policy_bpf_install(&b), -EINVAL);
	cr_assert_eq(policy_bpf_install(NULL), -EINVAL);
	policy_bpf_free(NULL);
}
