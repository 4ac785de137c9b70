/* procsys — writes to a namespace's own sysctls through a procfs of
 * their own, in raw system calls (rawsys.h: usable by the CLONE_VM
 * helpers of spawn/userns.c as by anyone).
 *
 * Why not the host's /proc: /proc/sys shows the entries of the caller's
 * namespaces, but one procfs keeps a dentry per namespace for each name,
 * all in that name's hash chain, and a lookup compares its way through
 * one per live namespace (proc_sys_compare). With 1,000 sandboxes,
 * opening /proc/sys/user/max_user_namespaces or
 * /proc/sys/net/ipv4/ip_unprivileged_port_start took 3–4.5 ms here, on
 * every create, and more with each sandbox. A procfs made for the write
 * (≈ 20 µs) holds only the entries its own lookup makes and is gone
 * with its fd. */
#ifndef ABOX_BASE_PROCSYS_H
#define ABOX_BASE_PROCSYS_H

#include <fcntl.h>
#include <sys/mount.h>

#include "base/mountapi.h"
#include "base/rawsys.h"

#ifndef FSCONFIG_CMD_CREATE
#define FSCONFIG_CMD_CREATE 6
#endif
#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 1
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 1
#endif
#ifndef MOUNT_ATTR_NOSUID
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif

/* A detached procfs of the caller's pid namespace (it needs
 * CAP_SYS_ADMIN there: make it before leaving host root), or, where the
 * kernel or the caller's capabilities refuse one, the host's /proc.
 * An fd to close, or -errno. */
static inline long procsys_open(void)
{
	long fs = rsys(SYS_fsopen, (long)"proc", FSOPEN_CLOEXEC, 0, 0, 0, 0);
	long m = -1;
	if (fs >= 0) {
		if (rsys(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, 0, 0, 0, 0) == 0)
			m = RS3(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
				MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
		RS1(SYS_close, fs);
	}
	if (m < 0)
		m = RS4(SYS_openat, AT_FDCWD, "/proc", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	return m;
}

/* value written to rel ("sys/user/max_user_namespaces") below a procfs
 * from procsys_open, as the caller's namespaces see it: 0 or -errno. */
static inline long procsys_write(long proc, const char *rel, const char *value)
{
	long fd = RS4(SYS_openat, proc, rel, O_WRONLY | O_CLOEXEC | O_NOCTTY, 0);
	if (fd < 0)
		return fd;
	size_t len = 0;
	while (value[len])
		len++;
	long w;
	do
		w = RS3(SYS_write, fd, value, len);
	while (w == -EINTR);
	RS1(SYS_close, fd);
	return w == (long)len ? 0 : w < 0 ? w : -EIO;
}

/* Both in one, for a single write. */
static inline long procsys_write_once(const char *rel, const char *value)
{
	long proc = procsys_open();
	if (proc < 0)
		return proc;
	long r = procsys_write(proc, rel, value);
	RS1(SYS_close, proc);
	return r;
}

#endif
