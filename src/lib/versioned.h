/* versioned — the public structs that only ever grow (a version field
 * first), copied between a caller and the library by their caller's
 * version, never by the size this library was built with: a caller built
 * against an older header has a shorter struct, and reading or clearing
 * sizeof(ours) of it runs past its end (an over-read of its stack on the
 * way in, a stack overflow on the way out).
 *
 * The size of each version is the offset of the first field the next
 * version added; a caller newer than this library gets the fields it
 * knows. Runs wherever the public API does. */
#ifndef ABOX_VERSIONED_H
#define ABOX_VERSIONED_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <abox/abox.h>

struct versioned {
	const char *name;    /* for the error: "abox_ctx_opts" */
	const size_t *sizes; /* sizes[v - 1]: the struct at version v */
	size_t nsizes;
};

#define VERSIONED(type, ...)                                                                                    \
	((struct versioned){ #type, (const size_t[]){ __VA_ARGS__ }, sizeof((size_t[]){ __VA_ARGS__ }) / sizeof(size_t) })

#define VERSIONED_CTX_OPTS                                                                                   \
	VERSIONED(abox_ctx_opts, offsetof(abox_ctx_opts, remote_url), offsetof(abox_ctx_opts, log_max),      \
		  offsetof(abox_ctx_opts, cgroup_parent), offsetof(abox_ctx_opts, cgroup_parent_flags),      \
		  sizeof(abox_ctx_opts))
#define VERSIONED_SANDBOX_OPTS                                                                               \
	VERSIONED(abox_sandbox_opts, offsetof(abox_sandbox_opts, snapshot),                                  \
		  offsetof(abox_sandbox_opts, net), offsetof(abox_sandbox_opts, oci_bundle),                 \
		  offsetof(abox_sandbox_opts, oci_preserve_fds), sizeof(abox_sandbox_opts))
#define VERSIONED_NET_OPTS VERSIONED(abox_net_opts, sizeof(abox_net_opts))
#define VERSIONED_LIMITS VERSIONED(abox_limits, offsetof(abox_limits, cpu_quota_us), sizeof(abox_limits))
#define VERSIONED_NET_INFO VERSIONED(abox_net_info, sizeof(abox_net_info))
#define VERSIONED_NET_TOTALS VERSIONED(abox_net_totals, sizeof(abox_net_totals))
#define VERSIONED_SNAPSHOT_INFO \
	VERSIONED(abox_snapshot_info, offsetof(abox_snapshot_info, memory), sizeof(abox_snapshot_info))

/* The bytes a struct of version v has (0 for version 0). */
static inline size_t versioned_size(struct versioned t, uint32_t v)
{
	if (v == 0)
		return 0;
	return t.sizes[v <= t.nsizes ? v - 1 : t.nsizes - 1];
}

/* dst (ours, holding the defaults) takes the caller's fields, as many as
 * its version has; dst's version becomes ours. -EINVAL for version 0. */
static inline int versioned_copy_in(struct versioned t, void *dst, const void *src)
{
	uint32_t v;
	memcpy(&v, src, sizeof(v));
	if (v == 0)
		return -EINVAL;
	uint32_t ours;
	memcpy(&ours, dst, sizeof(ours));
	memcpy(dst, src, versioned_size(t, v));
	memcpy(dst, &ours, sizeof(ours));
	return 0;
}

/* The caller's dst gets src's fields, as many as dst's version has; its
 * version field stays the caller's. */
static inline void versioned_copy_out(struct versioned t, void *dst, const void *src)
{
	uint32_t v;
	memcpy(&v, dst, sizeof(v));
	memcpy(dst, src, versioned_size(t, v));
	memcpy(dst, &v, sizeof(v));
}

/* The caller's dst cleared, as many bytes as its version has; its
 * version field kept. */
static inline void versioned_clear(struct versioned t, void *dst)
{
	uint32_t v;
	memcpy(&v, dst, sizeof(v));
	memset(dst, 0, versioned_size(t, v));
	memcpy(dst, &v, sizeof(v));
}

#endif
