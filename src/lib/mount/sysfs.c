/* mount/sysfs.c — rootfs_sysfs_new (see rootfs.h): a sysfs made by the
 * creator while it stands in the sandbox's network namespace. */
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/mountapi.h"
#include "mount/rootfs.h"

#ifndef FSCONFIG_SET_STRING
#define FSCONFIG_SET_STRING 1
#endif
#ifndef FSCONFIG_CMD_CREATE
#define FSCONFIG_CMD_CREATE 6
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 1
#endif

int rootfs_sysfs_new(abox_error *err)
{
	int fs = (int)syscall(SYS_fsopen, "sysfs", 1 /* FSOPEN_CLOEXEC */);
	if (fs < 0)
		return abox_error_set(err, errno, "fsopen sysfs");
	int m = -1;
	/* named as mount(8) names it ("sysfs", not "none"): tools and OCI
	 * checks read /proc/self/mountinfo's source field */
	(void)syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", "sysfs", 0);
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
				 MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					 MOUNT_ATTR_NOEXEC);
	int e = errno;
	close(fs);
	if (m < 0)
		return abox_error_set(err, e, "make a sysfs");
	return m;
}
