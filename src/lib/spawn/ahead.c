/* spawn/ahead.c — spawn_ns_ahead and spawn_ns_back (see spawn.h). A
 * pid or time namespace set with setns or unshare applies to the caller's
 * next children only: set just before the sandbox's clone, given back
 * right after it. Runs in the creator's process. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "spawn/spawn.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* A new time namespace for this process's next children, its clocks'
 * offsets written before one is in it (clone3's CLONE_NEWTIME would leave
 * no moment for them). */
/* The number of threads of this process, or 0 when unknown. */
static unsigned threads(void)
{
	char line[128];
	unsigned n = 0;
	FILE *f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f) && sscanf(line, "Threads: %u", &n) != 1)
		;
	if (f)
		fclose(f);
	return n;
}

static int time_ahead(const struct spawn_config *cfg, int *own, abox_error *err)
{
	/* the kernel gives a process its own time namespace back only when
	 * it is single-threaded: a multi-threaded creator would make every
	 * later child in the container's clocks */
	if (threads() != 1)
		return abox_error_setx(err, EUSERS,
				       "linux.namespaces: a time namespace needs a creator with one thread "
				       "(abox oci is one; this process has more)");
	char text[128];
	int n = snprintf(text, sizeof(text), "%d %lld %u\n%d %lld %u\n", CLOCK_MONOTONIC,
			 (long long)cfg->time_offset_s[0], cfg->time_offset_ns[0], CLOCK_BOOTTIME,
			 (long long)cfg->time_offset_s[1], cfg->time_offset_ns[1]);
	*own = open("/proc/self/ns/time", O_RDONLY | O_CLOEXEC);
	if (*own < 0)
		return abox_error_set(err, errno,
				      "linux.namespaces: time namespaces (this kernel has none?)");
	if (unshare(CLONE_NEWTIME) < 0) {
		int e = errno;
		close(*own);
		*own = -1;
		return abox_error_set(err, e, "linux.namespaces: a time namespace");
	}
	int fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0 && write(fd, text, (size_t)n) == n;
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (!ok) {
		(void)setns(*own, CLONE_NEWTIME);
		close(*own);
		*own = -1;
		return abox_error_set(err, e, "linux.timeOffsets: write them");
	}
	return 0;
}

int spawn_ns_ahead(const struct spawn_config *cfg, struct ns_ahead *a, abox_error *err)
{
	*a = (struct ns_ahead){ .pidns = -1, .timens = -1 };
	if (cfg->pidns_join) {
		a->pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
		if (a->pidns < 0 || setns(cfg->pidns_fd, CLONE_NEWPID) < 0) {
			int e = errno;
			spawn_ns_back(a);
			return abox_error_set(err, e, "join the pid namespace given");
		}
	}
	int r = cfg->timens ? time_ahead(cfg, &a->timens, err) : 0;
	if (r < 0)
		spawn_ns_back(a);
	return r;
}

void spawn_ns_back(struct ns_ahead *a)
{
	/* back to ours: setns cannot refuse a namespace we are in */
	if (a->pidns >= 0) {
		(void)setns(a->pidns, CLONE_NEWPID);
		close(a->pidns);
	}
	if (a->timens >= 0) {
		(void)setns(a->timens, CLONE_NEWTIME);
		close(a->timens);
	}
	*a = (struct ns_ahead){ .pidns = -1, .timens = -1 };
}
