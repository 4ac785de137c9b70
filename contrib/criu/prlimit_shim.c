/* prlimit_shim — preloaded into CRIU by the wrapper scripts/criu-setup.sh
 * writes, on hosts where abox runs without CAP_SYS_RESOURCE in its
 * bounding set (some container hosts do that).
 *
 * CRIU reads each dumped task's resource limits with
 * syscall(__NR_prlimit64, pid, res, NULL, &old). For a task of another user (a sandbox's `user`) the kernel
 * wants CAP_SYS_RESOURCE even for reading, so without it every dump of a
 * sandbox running commands as `user` fails. The same values are in
 * /proc/PID/limits, which anyone may read: when the kernel says EPERM to
 * a read-only call, this answers from there. Calls that set limits go to
 * the kernel unchanged. */
#ifndef _GNU_SOURCE /* the meson build passes it; scripts/criu-setup.sh does not */
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* the rows of /proc/PID/limits, in RLIMIT_* order */
static const char *const rows[] = {
	"Max cpu time", "Max file size", "Max data size", "Max stack size", "Max core file size",
	"Max resident set", "Max processes", "Max open files", "Max locked memory", "Max address space",
	"Max file locks", "Max pending signals", "Max msgqueue size", "Max nice priority",
	"Max realtime priority", "Max realtime timeout",
};

static rlim_t value(const char *s)
{
	while (*s == ' ')
		s++;
	return strncmp(s, "unlimited", 9) == 0 ? RLIM_INFINITY : (rlim_t)strtoull(s, NULL, 10);
}

static int from_proc(pid_t pid, int res, struct rlimit *old)
{
	if (res < 0 || (size_t)res >= sizeof(rows) / sizeof(rows[0]))
		return -1;
	char p[64], line[256];
	snprintf(p, sizeof(p), "/proc/%d/limits", (int)pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return -1;
	int r = -1;
	size_t n = strlen(rows[res]);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, rows[res], n) == 0 && line[n] == ' ') {
			/* fixed columns: name (26), soft (21), hard (21), units */
			if (strlen(line) > 47) {
				old->rlim_cur = value(line + 26);
				old->rlim_max = value(line + 47);
				r = 0;
			}
			break;
		}
	fclose(f);
	return r;
}

static long (*real_syscall)(long, ...);

/* CRIU calls prlimit64 through syscall(): that is the one to catch. */
long syscall(long n, ...)
{
	va_list ap;
	va_start(ap, n);
	long a[6];
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real_syscall)
		real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	long r = real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (n == SYS_prlimit64 && r < 0 && errno == EPERM && a[2] == 0 && a[3] != 0 && a[0] != 0 &&
	    from_proc((pid_t)a[0], (int)a[1], (struct rlimit *)a[3]) == 0)
		return 0;
	return r;
}
