/* capraw.h — capget/capset's version 3 ABI in abox-init, which is built
 * against musl without the kernel's headers: one spelling for init and
 * the children it makes. Raw system calls (async-signal-safe); -errno. */
#ifndef ABOX_INIT_CAPRAW_H
#define ABOX_INIT_CAPRAW_H

#include <stdint.h>
#include <sys/syscall.h>

#include "base/rawsys.h"

#define INIT_CAP_SYS_ADMIN 21

struct init_caps {
	uint32_t effective, permitted, inheritable;
};

struct init_caps_header {
	uint32_t version;
	int pid;
};

/* The calling thread's sets, [0] for capabilities 0-31, [1] for 32-63. */
static inline long init_caps_get(struct init_caps d[2])
{
	struct init_caps_header h = { 0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0 };
	return RS2(SYS_capget, &h, d);
}

static inline long init_caps_set(const struct init_caps d[2])
{
	struct init_caps_header h = { 0x20080522, 0 };
	return RS2(SYS_capset, &h, d);
}

#endif
