/* base/clock — the clocks abox reads, one copy each. Monotonic for
 * timeouts and waits (never jumps with the wall clock), boot time where a
 * suspended host must count (init's deadline), the wall clock only for
 * what is recorded or shown (created, deadline, paused).
 * Async-signal-safe (the vDSO): used between clone and exec. */
#ifndef ABOX_BASE_CLOCK_H
#define ABOX_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t clock_mono_ns(void)
{
	return clock_ns_of(CLOCK_MONOTONIC);
}

static inline int64_t clock_mono_ms(void)
{
	return (int64_t)(clock_ns_of(CLOCK_MONOTONIC) / 1000000u);
}

static inline int64_t clock_boot_ms(void)
{
	return (int64_t)(clock_ns_of(CLOCK_BOOTTIME) / 1000000u);
}

static inline int64_t clock_wall_ms(void)
{
	return (int64_t)(clock_ns_of(CLOCK_REALTIME) / 1000000u);
}

#endif
