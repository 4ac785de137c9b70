/* seccomp-probe — runs inside a sandbox and tries each operation the
 * default seccomp policy blocks, printing one line per item:
 *
 *     NAME errno=N (ENAME)        N = 0 when the call succeeded
 *
 * Usage: seccomp-probe NAME...   or   seccomp-probe all   or   --list
 *
 * Every call uses arguments that make it fail fast and harmlessly when
 * the filter lets it through (invalid pointers, fd -1, flags the kernel
 * rejects, a reboot magic that does not match): a probe that got through
 * must not mount, load or reboot anything. The few that would succeed
 * (clone with CLONE_NEW*, socket) clean up: the child exits at once and is
 * reaped, the fd is closed. Integration tests run it under a policy whose
 * deny rules use a distinctive errno, so that errno proves the filter
 * fired. Calls go through syscall(2), never libc wrappers, so the probe
 * tests exactly the syscall and arguments it names.
 *
 * Standalone on purpose (no abox headers, static): it runs in any rootfs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <sched.h>
#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#define TIOCSTI_ 0x5412UL
#define TIOCLINUX_ 0x541CUL
#define TCGETS_ 0x5401UL
#define HI32 (1UL << 32)

/* A pointer the kernel faults on: the call fails with EFAULT if allowed. */
#define BAD ((void *)1)
#define BADFLAGS 0xffffffffUL

static int result(long r)
{
	return r < 0 ? errno : 0;
}

/* Calls a syscall that this build's headers may not define. */
#define SC(nr, ...) result(syscall(nr, ##__VA_ARGS__))
#ifdef SYS_move_mount
#define SC_NEW(nr, ...) SC(nr, ##__VA_ARGS__)
#else
#define SC_NEW(nr, ...) ENOSYS
#endif

/* clone with flags, fork-like (no new stack): if the filter lets it
 * through, the child exits at once and is reaped. */
static int clone_flags(unsigned long flags)
{
	long r = syscall(SYS_clone, flags | SIGCHLD, 0, NULL, NULL, 0);
	if (r < 0)
		return errno;
	if (r == 0)
		_exit(0);
	int st;
	while (waitpid((pid_t)r, &st, 0) < 0 && errno == EINTR)
		;
	return 0;
}

static int socket_family(unsigned long family, int type)
{
	long fd = syscall(SYS_socket, family, (unsigned long)type, 0UL);
	if (fd < 0)
		return errno;
	close((int)fd);
	return 0;
}

/* personality() with a flag the policy refuses; restored if it worked. */
static int personality_flag(void)
{
	long old = syscall(SYS_personality, 0xffffffffUL);
	long r = syscall(SYS_personality, (unsigned long)READ_IMPLIES_EXEC);
	if (r < 0)
		return errno;
	syscall(SYS_personality, (unsigned long)old);
	return 0;
}

/* A child asks to be traced by us: strace/gdb in the sandbox need it. */
static int p_ptrace_traceme_child(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0)
		_exit(syscall(SYS_ptrace, PTRACE_TRACEME, 0, NULL, NULL) < 0 ? errno : 0);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
}

/* clang-format off */
static int p_mount(void) { return SC(SYS_mount, BAD, BAD, BAD, 0UL, NULL); }
static int p_umount2(void) { return SC(SYS_umount2, BAD, 0); }
static int p_pivot_root(void) { return SC(SYS_pivot_root, BAD, BAD); }
static int p_move_mount(void) { return SC_NEW(SYS_move_mount, -1, BAD, -1, BAD, BADFLAGS); }
static int p_open_tree(void) { return SC_NEW(SYS_open_tree, -1, BAD, BADFLAGS); }
static int p_fsopen(void) { return SC_NEW(SYS_fsopen, BAD, BADFLAGS); }
static int p_fsconfig(void) { return SC_NEW(SYS_fsconfig, -1, BADFLAGS, NULL, NULL, 0); }
static int p_fsmount(void) { return SC_NEW(SYS_fsmount, -1, BADFLAGS, 0); }
static int p_fspick(void) { return SC_NEW(SYS_fspick, -1, BAD, BADFLAGS); }
static int p_mount_setattr(void) { return SC_NEW(SYS_mount_setattr, -1, BAD, BADFLAGS, NULL, 0); }
/* unshare(0) is a no-op when allowed. */
static int p_unshare(void) { return SC(SYS_unshare, 0UL); }
static int p_setns(void) { return SC(SYS_setns, -1, 0); }
static int p_clone_newuser(void) { return clone_flags(CLONE_NEWUSER); }
static int p_clone_newns(void) { return clone_flags(CLONE_NEWNS); }
static int p_clone_newnet(void) { return clone_flags(CLONE_NEWNET); }
static int p_clone_newpid(void) { return clone_flags(CLONE_NEWPID); }
static int p_clone_newuts(void) { return clone_flags(CLONE_NEWUTS); }
static int p_clone_newipc(void) { return clone_flags(CLONE_NEWIPC); }
static int p_clone_newcgroup(void) { return clone_flags(CLONE_NEWCGROUP); }
/* size 0 is below CLONE_ARGS_SIZE_VER0: EINVAL when allowed. */
static int p_clone3(void) { return SC_NEW(SYS_clone3, NULL, 0UL); }
static int p_keyctl(void) { return SC(SYS_keyctl, 0xffffUL, 0UL, 0UL, 0UL, 0UL); }
static int p_add_key(void) { return SC(SYS_add_key, BAD, BAD, NULL, 0UL, 0UL); }
static int p_request_key(void) { return SC(SYS_request_key, BAD, BAD, NULL, 0UL); }
static int p_bpf(void) { return SC(SYS_bpf, 0xffffUL, NULL, 0UL); }
static int p_perf_event_open(void) { return SC(SYS_perf_event_open, BAD, 0, -1, -1, 0UL); }
static int p_userfaultfd(void) { return SC(SYS_userfaultfd, BADFLAGS); }
static int p_io_uring_setup(void) { return SC_NEW(SYS_io_uring_setup, 0U, BAD); }
static int p_io_uring_enter(void) { return SC_NEW(SYS_io_uring_enter, -1, 0U, 0U, 0U, NULL, 0UL); }
static int p_io_uring_register(void) { return SC_NEW(SYS_io_uring_register, -1, 0U, NULL, 0U); }
static int p_kexec_load(void) { return SC(SYS_kexec_load, 0UL, 0UL, NULL, BADFLAGS); }
#ifdef SYS_kexec_file_load
static int p_kexec_file_load(void) { return SC(SYS_kexec_file_load, -1, -1, 0UL, NULL, BADFLAGS); }
#else
static int p_kexec_file_load(void) { return ENOSYS; }
#endif
static int p_init_module(void) { return SC(SYS_init_module, BAD, 0UL, BAD); }
static int p_finit_module(void) { return SC(SYS_finit_module, -1, BAD, BADFLAGS); }
static int p_delete_module(void) { return SC(SYS_delete_module, BAD, 0U); }
static int p_open_by_handle_at(void) { return SC(SYS_open_by_handle_at, -1, BAD, 0); }
static int p_name_to_handle_at(void) { return SC(SYS_name_to_handle_at, -1, BAD, BAD, BAD, BADFLAGS); }
static int p_ioctl_tiocsti(void) { return SC(SYS_ioctl, -1, TIOCSTI_, BAD); }
/* The kernel ignores the upper half of the command: still TIOCSTI. */
static int p_ioctl_tiocsti_hi(void) { return SC(SYS_ioctl, -1, TIOCSTI_ | HI32, BAD); }
static int p_ioctl_tioclinux(void) { return SC(SYS_ioctl, -1, TIOCLINUX_, BAD); }
static int p_socket_alg(void) { return socket_family(AF_ALG, SOCK_SEQPACKET); }
static int p_socket_alg_hi(void) { return socket_family(AF_ALG | HI32, SOCK_SEQPACKET); }
static int p_socket_vsock(void) { return socket_family(AF_VSOCK, SOCK_STREAM); }
static int p_acct(void) { return SC(SYS_acct, BAD); }
static int p_swapon(void) { return SC(SYS_swapon, BAD, 0); }
static int p_swapoff(void) { return SC(SYS_swapoff, BAD); }
/* Wrong magic numbers: EINVAL (or EPERM without CAP_SYS_BOOT) if allowed. */
static int p_reboot(void) { return SC(SYS_reboot, 0UL, 0UL, 0UL, NULL); }
static int p_syslog(void) { return SC(SYS_syslog, 9999, NULL, 0); }
/* Both NULL: changes nothing when allowed. */
static int p_settimeofday(void) { return SC(SYS_settimeofday, NULL, NULL); }
static int p_clock_settime(void) { return SC(SYS_clock_settime, 0x7fffffff, BAD); }
static int p_clock_adjtime(void) { return SC(SYS_clock_adjtime, 0x7fffffff, BAD); }
#ifdef SYS_iopl
static int p_iopl(void) { return SC(SYS_iopl, 4); }
static int p_ioperm(void) { return SC(SYS_ioperm, 0UL, 0UL, 0); }
#else
static int p_iopl(void) { return ENOSYS; }
static int p_ioperm(void) { return ENOSYS; }
#endif
static int p_quotactl(void) { return SC(SYS_quotactl, BADFLAGS, BAD, 0, NULL); }
#ifdef SYS_quotactl_fd
static int p_quotactl_fd(void) { return SC(SYS_quotactl_fd, -1, 0U, 0, NULL); }
#else
static int p_quotactl_fd(void) { return ENOSYS; }
#endif
static int p_lookup_dcookie(void) { return SC(SYS_lookup_dcookie, 0ULL, NULL, 0UL); }
#ifdef SYS_uselib
static int p_uselib(void) { return SC(SYS_uselib, BAD); }
static int p_ustat(void) { return SC(SYS_ustat, 0U, BAD); }
static int p_sysfs(void) { return SC(SYS_sysfs, 9999); }
#else
static int p_uselib(void) { return ENOSYS; }
static int p_ustat(void) { return ENOSYS; }
static int p_sysfs(void) { return ENOSYS; }
#endif
static int p_fanotify_init(void) { return SC(SYS_fanotify_init, BADFLAGS, 0U); }
static int p_personality(void) { return personality_flag(); }

/* Controls: must stay allowed. */
static int p_getpid(void) { return SC(SYS_getpid); }
static int p_clone_plain(void) { return clone_flags(0); }
static int p_socket_unix(void) { return socket_family(AF_UNIX, SOCK_STREAM); }
static int p_personality_query(void) { return SC(SYS_personality, 0xffffffffUL); }
/* EBADF (not the filter's errno) means the ioctl reached the kernel. */
static int p_ioctl_tcgets(void) { return SC(SYS_ioctl, -1, TCGETS_, BAD); }
/* Numbers the policy cannot know: a syscall newer than libseccomp 2.5.4
 * (mseal, 462) and one no kernel has. The policy's default gives ENOSYS. */
static int p_unknown_mseal(void) { return SC(462, 0, 0, 0); }
static int p_unknown_1000(void) { return SC(1000); }
/* clang-format on */

struct item {
	const char *name;
	int (*fn)(void);
};

/* clang-format off */
#define ITEM(n) { #n, p_##n }
static const struct item items[] = {
	ITEM(mount), ITEM(umount2), ITEM(pivot_root), ITEM(move_mount), ITEM(open_tree),
	ITEM(fsopen), ITEM(fsconfig), ITEM(fsmount), ITEM(fspick), ITEM(mount_setattr),
	ITEM(unshare), ITEM(setns), ITEM(clone_newuser), ITEM(clone_newns), ITEM(clone_newnet),
	ITEM(clone_newpid), ITEM(clone_newuts), ITEM(clone_newipc), ITEM(clone_newcgroup),
	ITEM(clone3), ITEM(keyctl), ITEM(add_key), ITEM(request_key), ITEM(bpf),
	ITEM(perf_event_open), ITEM(userfaultfd), ITEM(io_uring_setup), ITEM(io_uring_enter),
	ITEM(io_uring_register), ITEM(kexec_load), ITEM(kexec_file_load), ITEM(init_module),
	ITEM(finit_module), ITEM(delete_module), ITEM(open_by_handle_at), ITEM(name_to_handle_at),
	ITEM(ioctl_tiocsti), ITEM(ioctl_tiocsti_hi), ITEM(ioctl_tioclinux), ITEM(socket_alg),
	ITEM(socket_alg_hi), ITEM(socket_vsock), ITEM(acct), ITEM(swapon), ITEM(swapoff),
	ITEM(reboot), ITEM(syslog), ITEM(settimeofday), ITEM(clock_settime), ITEM(clock_adjtime),
	ITEM(iopl), ITEM(ioperm), ITEM(quotactl), ITEM(quotactl_fd), ITEM(lookup_dcookie),
	ITEM(uselib), ITEM(ustat), ITEM(sysfs), ITEM(fanotify_init), ITEM(personality),
	/* controls */
	ITEM(getpid), ITEM(clone_plain), ITEM(ptrace_traceme_child), ITEM(socket_unix),
	ITEM(personality_query), ITEM(ioctl_tcgets),
	/* unknown to the policy */
	ITEM(unknown_mseal), ITEM(unknown_1000),
};
/* clang-format on */

static const char *errno_symbol(int e)
{
	static const struct {
		int e;
		const char *s;
		/* clang-format off */
	} t[] = {
		{ 0, "OK" }, { EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { ESRCH, "ESRCH" },
		{ EINTR, "EINTR" }, { EIO, "EIO" }, { E2BIG, "E2BIG" }, { ENOEXEC, "ENOEXEC" },
		{ EBADF, "EBADF" }, { ECHILD, "ECHILD" }, { EAGAIN, "EAGAIN" }, { ENOMEM, "ENOMEM" },
		{ EACCES, "EACCES" }, { EFAULT, "EFAULT" }, { EBUSY, "EBUSY" }, { EEXIST, "EEXIST" },
		{ ENODEV, "ENODEV" }, { ENOTDIR, "ENOTDIR" }, { EINVAL, "EINVAL" }, { ENFILE, "ENFILE" },
		{ EMFILE, "EMFILE" }, { ENOTTY, "ENOTTY" }, { ENOSPC, "ENOSPC" }, { ERANGE, "ERANGE" },
		{ ENOSYS, "ENOSYS" }, { ENOPKG, "ENOPKG" }, { EOPNOTSUPP, "EOPNOTSUPP" },
		{ EAFNOSUPPORT, "EAFNOSUPPORT" }, { EPROTONOSUPPORT, "EPROTONOSUPPORT" },
		{ ESOCKTNOSUPPORT, "ESOCKTNOSUPPORT" }, { ENOKEY, "ENOKEY" },
	};
	/* clang-format on */
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].e == e)
			return t[i].s;
	return "?";
}

static void run(const struct item *it)
{
	errno = 0;
	int e = it->fn();
	/* dprintf: unbuffered, so nothing is printed twice by a clone child. */
	dprintf(STDOUT_FILENO, "%s errno=%d (%s)\n", it->name, e, errno_symbol(e));
}

int main(int argc, char **argv)
{
	size_t n = sizeof(items) / sizeof(items[0]);
	if (argc < 2) {
		fprintf(stderr, "usage: %s NAME... | all | --list\n", argv[0]);
		return 2;
	}
	/* --listen PORT DELAY_MS: a TCP server on 127.0.0.1:PORT after a
	 * delay (for readiness checks of templates' start commands) */
	if (strcmp(argv[1], "--listen") == 0 && argc == 4) {
		usleep((useconds_t)atoi(argv[3]) * 1000);
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])) };
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s, 16) < 0) {
			perror("listen");
			return 1;
		}
		for (;;) {
			int c = accept(s, NULL, NULL);
			if (c >= 0)
				close(c);
		}
	}
	if (strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", items[i].name);
		return 0;
	}
	/* Check every name first: a typo must not pass as a silent skip. */
	for (int a = 1; a < argc; a++) {
		bool found = strcmp(argv[a], "all") == 0;
		for (size_t i = 0; i < n && !found; i++)
			found = strcmp(argv[a], items[i].name) == 0;
		if (!found) {
			fprintf(stderr, "seccomp-probe: unknown item '%s' (see --list)\n", argv[a]);
			return 2;
		}
	}
	for (int a = 1; a < argc; a++)
		for (size_t i = 0; i < n; i++)
			if (strcmp(argv[a], "all") == 0 || strcmp(argv[a], items[i].name) == 0)
				run(&items[i]);
	return 0;
}
