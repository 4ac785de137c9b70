/* openat2 — the openat2 system call with the retry its manual asks for.
 * With RESOLVE_BENEATH or RESOLVE_IN_ROOT the kernel answers EAGAIN when
 * a rename or a mount anywhere on the host raced a ".." step of the
 * lookup; on a busy host (a package install, other containers starting)
 * that happens, and a file the caller has every right to was reported
 * unavailable. Header-only: used by abox-init, abox-unpack and the CLI. */
#ifndef ABOX_BASE_OPENAT2_H
#define ABOX_BASE_OPENAT2_H

#include <errno.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* An fd, or -1 with errno, as syscall() gives it. */
static inline long openat2_retry(int dfd, const char *path, const void *how, size_t size)
{
	long fd = -1;
	for (int i = 0; i < 128; i++) {
		fd = syscall(SYS_openat2, dfd, path, how, size);
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return fd;
}

#endif
