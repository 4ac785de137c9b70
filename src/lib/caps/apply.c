/* caps/apply.c — caps_apply (see caps.h), on its own: abox-init links it
 * too (init/confine.c), built against musl without the kernel's headers. */
#include <errno.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caps/caps.h"

/* capset(2)'s version 3 ABI, as linux/capability.h declares it */
struct cap_header {
	uint32_t version;
	int pid;
};
struct cap_data {
	uint32_t effective, permitted, inheritable;
};
#define CAP_ABI_V3 0x20080522

static int bound(uint64_t keep, int last_cap, abox_error *err)
{
	for (int c = 0; c <= last_cap; c++) {
		if (keep & (1ULL << c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return abox_error_set(err, errno, "drop capability %d from the bounding set", c);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return abox_error_set(err, errno, "clear ambient capabilities");
	return 0;
}

int caps_apply_held(uint64_t keep, uint64_t held, int last_cap, abox_error *err)
{
	struct cap_header hdr = { .version = CAP_ABI_V3 };
	int r = bound(keep, last_cap, err);
	if (r < 0)
		return r;
	struct cap_data data[2] = { { .effective = (uint32_t)keep, .permitted = (uint32_t)(keep | held) },
				    { .effective = (uint32_t)(keep >> 32),
				      .permitted = (uint32_t)((keep | held) >> 32) } };
	if (syscall(SYS_capset, &hdr, data) < 0)
		return abox_error_set(err, errno, "capset");
	return 0;
}

int caps_apply(uint64_t keep, uint64_t inherit, int last_cap, abox_error *err)
{
	struct cap_header hdr = { .version = CAP_ABI_V3 };
	struct cap_data data[2] = { 0 };
	/* an inheritable capability outside keep is set while the bounding
	 * set still has it (the kernel takes a new inheritable one only
	 * from there or from the old inheritable set) */
	if (inherit) {
		if (syscall(SYS_capget, &hdr, data) < 0)
			return abox_error_set(err, errno, "capget");
		data[0].inheritable = (uint32_t)inherit;
		data[1].inheritable = (uint32_t)(inherit >> 32);
		if (syscall(SYS_capset, &hdr, data) < 0)
			return abox_error_set(err, errno, "capset (inheritable)");
	}
	int r = bound(keep, last_cap, err);
	if (r < 0)
		return r;

	/* Inheritable is empty but for inherit: for root, exec adds the
	 * inheritable set to the new permitted set regardless of the
	 * bounding set. Permitted and effective are trimmed to keep. */
	data[0].permitted = data[0].effective = (uint32_t)keep;
	data[1].permitted = data[1].effective = (uint32_t)(keep >> 32);
	data[0].inheritable = (uint32_t)inherit;
	data[1].inheritable = (uint32_t)(inherit >> 32);
	/* keep CAP_SETPCAP... not needed past this point; the bounding set is
	 * already final */
	if (syscall(SYS_capset, &hdr, data) < 0)
		return abox_error_set(err, errno, "capset");
	return 0;
}
