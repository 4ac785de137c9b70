/* local/oci_process.c — an OCI process (a container's, or one exec'd
 * into it): whether it can be started as its config asks (its ambient
 * capabilities raisable, its AppArmor profile there to enter: said before
 * anything is made, naming the field), its request to init, and its
 * terminal made in the container's own devpts. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "local/create_oci.h"
#include "caps/caps.h"
#include "proto/messages.h"
#include "proto/proto.h"

static int apparmor_check(const struct oci_process *p, abox_error *err)
{
	const char *prof = p->apparmor_profile;
	if (!prof || !*prof)
		return 0;
	if (strlen(prof) > 255 || strpbrk(prof, "\n "))
		return abox_error_setx(err, EINVAL, "process.apparmorProfile: not a profile name");
	/* as runc: a profile asked for on a host without AppArmor is an
	 * error, never a container run unconfined by it */
	char on[4] = "";
	FILE *f = fopen("/sys/module/apparmor/parameters/enabled", "re");
	if (f) {
		if (!fgets(on, sizeof(on), f))
			on[0] = '\0';
		fclose(f);
	}
	if (on[0] != 'Y')
		return abox_error_setx(err, EOPNOTSUPP,
				       "process.apparmorProfile: '%s': AppArmor is not enabled on this host",
				       prof);
	return 0;
}

int oci_process_check(const struct oci_process *p, uint64_t within, abox_error *err)
{
	/* the kernel raises an ambient capability only when it is
	 * inheritable (and within the bounding set): said now, by name, not
	 * as EPERM from the process's start */
	uint64_t amb = p->cap_ambient & within, missing = amb & ~(p->cap_inheritable & p->cap_bounding);
	for (int c = 0; c < 64 && p->has_capabilities && missing; c++)
		if (missing & (1ull << c))
			return abox_error_setx(
				err, EINVAL,
				"process.capabilities.ambient: %s is not in the inheritable and "
				"bounding sets too (the kernel raises no other)",
				caps_name(c) ? caps_name(c) : "a capability");
	return apparmor_check(p, err);
}

uint64_t oci_init_caps(pid_t init_pid)
{
	char path[64], line[128];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)init_pid);
	FILE *f = fopen(path, "re");
	uint64_t caps = caps_default();
	unsigned long long v;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapBnd: %llx", &v) == 1) {
			caps = v;
			break;
		}
	if (f)
		fclose(f);
	return caps;
}

void oci_process_put(struct proto_msg *m, const struct oci_process *p, uint64_t within)
{
	for (size_t i = 0; p->args[i]; i++)
		proto_put_str(m, F_ARG, p->args[i]);
	for (size_t i = 0; p->env && p->env[i]; i++)
		proto_put_str(m, F_ENV, p->env[i]);
	proto_put_str(m, F_CWD, p->cwd && *p->cwd ? p->cwd : "/");
	proto_put_u64(m, F_UID, p->uid);
	proto_put_u64(m, F_GID, p->gid);
	/* its gid first: setgroups replaces the whole list */
	proto_put_u64(m, F_GROUP, p->gid);
	for (size_t i = 0; i < p->nadditional_gids; i++)
		proto_put_u64(m, F_GROUP, p->additional_gids[i]);
	if (p->has_umask)
		proto_put_u64(m, F_UMASK, p->umask);
	if (p->has_oom_score_adj)
		proto_put_u64(m, F_OOM_ADJ, (uint64_t)(p->oom_score_adj + 1000));
	if (p->apparmor_profile && *p->apparmor_profile)
		proto_put_str(m, F_APPARMOR, p->apparmor_profile);
	/* its bounding set, at most the container's (more was refused, or
	 * dropped under abox's confinement): for root its permitted set too */
	if (p->has_capabilities) {
		uint64_t bounding = p->cap_bounding & within;
		proto_put_u64(m, F_CAPS, bounding);
		/* for a process that is not root, the ambient set is what it
		 * keeps (an inheritable one is needed to raise it); the kernel
		 * refuses an ambient capability outside the inheritable set,
		 * so the process fails as it would with runc */
		if (p->cap_inheritable & bounding)
			proto_put_u64(m, F_CAPS_INH, p->cap_inheritable & bounding);
		if (p->cap_ambient & within)
			proto_put_u64(m, F_CAPS_AMB, p->cap_ambient & within);
	}
	/* asked for here; init without it (a container engine's default)
	 * sets it for the processes that ask, and for any under a seccomp
	 * profile, which the kernel takes only with it from a process
	 * without CAP_SYS_ADMIN */
	if (p->no_new_privileges)
		proto_put_u64(m, F_NNP, 1);
	for (size_t i = 0; i < p->nrlimits; i++) {
		char rl[80];
		snprintf(rl, sizeof(rl), "%d %llu %llu", p->rlimits[i].resource,
			 (unsigned long long)p->rlimits[i].soft, (unsigned long long)p->rlimits[i].hard);
		proto_put_str(m, F_RLIMIT, rl);
	}
}

int oci_pty(pid_t init_pid, const struct oci_process *p, int *master, int *slave, abox_error *err)
{
	/* the container's own devpts, reached through its init's root: a
	 * lookup that stays inside it (no symlink, no magic link) and must
	 * end on a devpts ptmx, whatever its processes did to /dev */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/root", (int)init_pid);
	int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return abox_error_set(err, errno, "terminal: the container's root");
	struct {
		uint64_t flags, mode, resolve;
	} how = { .flags = O_RDWR | O_NOCTTY | O_CLOEXEC, .resolve = 0x10 | 0x04 | 0x02 };
	/* RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS */
	*master = (int)syscall(SYS_openat2, root, "dev/pts/ptmx", &how, sizeof(how));
	int e = errno;
	close(root);
	struct stat st;
	struct statfs sf;
	if (*master < 0)
		return abox_error_set(err, e, "terminal: open the container's /dev/pts/ptmx");
	if (fstat(*master, &st) < 0 || !S_ISCHR(st.st_mode) || fstatfs(*master, &sf) < 0 ||
	    sf.f_type != 0x1cd1 /* DEVPTS_SUPER_MAGIC */) {
		close(*master);
		return abox_error_setx(err, EPERM,
				       "terminal: the container's /dev/pts/ptmx is not its devpts");
	}
	int unlock = 0;
	struct winsize ws = { .ws_row = (unsigned short)(p->console_height ? p->console_height : 24),
			      .ws_col = (unsigned short)(p->console_width ? p->console_width : 80) };
	if (ioctl(*master, TIOCSPTLCK, &unlock) < 0 ||
	    (*slave = ioctl(*master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		e = errno;
		close(*master);
		return abox_error_set(err, e, "terminal: its other end");
	}
	(void)ioctl(*master, TIOCSWINSZ, &ws);
	return 0;
}
