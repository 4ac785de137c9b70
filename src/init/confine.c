/* confine.c — init takes on its own confinement when the sandbox has a
 * user namespace (see INIT_CONFINE_FD in proto/messages.h).
 *
 * The sandbox child exec'd this program as the host's first id of the
 * sandbox's range, outside the namespace: the kernel ties init's memory
 * to the user namespace it was exec'd in, and for a process that is not
 * dumpable that namespace decides who owns its /proc files and who may
 * ptrace it. Exec'd inside, init's /proc/1 would belong to sandbox root,
 * who could raise its oom_score_adj (the OOM killer would then end init,
 * and with it the sandbox, first) and list its fds. Exec'd outside, they
 * stay host root's. The namespace's owner is this uid, which is what
 * lets setns in without any capability in the host's namespace. */
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"
#include "caps/caps.h"
#include "init.h"
#include "proto/messages.h"

/* The kernel's struct sock_filter and sock_fprog, SET_MODE_FILTER
 * and BPF_MAXINSNS (linux/filter.h, linux/seccomp.h: the musl build of
 * init has no kernel headers). */
struct bpf_insn8 {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};
_Static_assert(sizeof(struct bpf_insn8) == 8, "struct sock_filter is 8 bytes");
struct bpf_prog {
	unsigned short len;
	struct bpf_insn8 *filter;
};
#define SET_MODE_FILTER 1
#define CONFINE_MAX_INSNS 4096

static int confine(abox_error *e)
{
	struct init_confine c;
	if (pread(INIT_CONFINE_FD, &c, sizeof(c), 0) != (ssize_t)sizeof(c) || c.magic != INIT_CONFINE_MAGIC ||
	    c.bpf_len > CONFINE_MAX_INSNS || c.last_cap > 63)
		return abox_error_setx(e, EINVAL, "init: unreadable confinement");
	_cleanup_free_ struct bpf_insn8 *insns = NULL;
	size_t size = (size_t)c.bpf_len * sizeof(*insns);
	if (size) {
		insns = malloc(size);
		if (!insns)
			return abox_error_set(e, ENOMEM, "init: seccomp program");
		if (pread(INIT_CONFINE_FD, insns, size, sizeof(c)) != (ssize_t)size)
			return abox_error_setx(e, EINVAL, "init: short seccomp program");
	}
	close(INIT_CONFINE_FD);
	/* the kernel refuses setns into a user namespace from a process
	 * with threads or a shared fs_struct: init has neither yet */
	if (setns(INIT_USERNS_FD, CLONE_NEWUSER) < 0)
		return abox_error_set(e, errno, "init: join the sandbox's user namespace");
	close(INIT_USERNS_FD);
	/* the namespace came with every capability within it: down to the
	 * sandbox's set, as the child does without a user namespace. Without
	 * no_new_privs (exec'd without it) the kernel takes a filter only from
	 * a holder of CAP_SYS_ADMIN: installed first then (the policy allows
	 * the capset that follows). */
	bool nnp = !(c.flags & INIT_CONFINE_NO_NNP);
	struct bpf_prog prog = { .len = (unsigned short)c.bpf_len, .filter = insns };
	if (size && !nnp && syscall(SYS_seccomp, SET_MODE_FILTER, 0, &prog) < 0)
		return abox_error_set(e, errno, "init: install seccomp filter");
	uint64_t admin = (c.flags & INIT_CONFINE_KEEP_ADMIN) ? 1ULL << 21 /* CAP_SYS_ADMIN */ : 0;
	if (caps_apply_held(c.caps_keep, admin, (int)c.last_cap, e) < 0)
		return -1;
	if (size && nnp && syscall(SYS_seccomp, SET_MODE_FILTER, 0, &prog) < 0)
		return abox_error_set(e, errno, "init: install seccomp filter");
	return 0;
}

void init_confine(void)
{
	if (fcntl(INIT_CONFINE_FD, F_GETFD) < 0)
		return; /* no user namespace: the sandbox child confined init */
	abox_error e = ABOX_ERROR_INIT;
	if (confine(&e) < 0) {
		(void)write_full(INIT_ERR_FD, &e, sizeof(e));
		_exit(125);
	}
	/* EOF on the creator's error pipe: confined, up */
	close(INIT_ERR_FD);
}
