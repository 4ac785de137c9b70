/* caps/caps.c — see caps.h. */
#include <fcntl.h>
#include <linux/capability.h>
#include <stdlib.h>

#include "caps/caps.h"

static const char *const names[] = {
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW",
	"CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
	"CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
	"CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
};

const char *caps_name(int cap)
{
	return cap >= 0 && (size_t)cap < ELEMENTSOF(names) ? names[cap] : NULL;
}

uint64_t caps_default(void)
{
	static const int keep[] = {
		CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_SETGID,
		CAP_SETUID, CAP_SETPCAP, CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT, CAP_SETFCAP,
	};
	uint64_t m = 0;
	for (size_t i = 0; i < ELEMENTSOF(keep); i++)
		m |= 1ULL << keep[i];
	return m;
}

int caps_last_cap(void)
{
	_cleanup_free_ char *s = NULL;
	if (read_file_at(AT_FDCWD, "/proc/sys/kernel/cap_last_cap", 64, &s, NULL) < 0)
		return CAP_LAST_CAP;
	int v = atoi(s);
	return v > 0 && v < 64 ? v : CAP_LAST_CAP;
}
