/* local/disk_layer.c — which writable layer a sandbox gets, and its
 * disk (disk/). Runs in the CLI/daemon. */
#include "local/local.h"
#include "disk/disk.h"

bool backend_layer_on_disk(uint32_t flags)
{
	if (flags & ABOX_SANDBOX_LAYER_DISK)
		return true;
	if (flags & ABOX_SANDBOX_LAYER_TMPFS)
		return false;
	/* an ephemeral sandbox lives as long as its one command and its
	 * creator: the tmpfs is quicker to make; long-lived ones keep files
	 * for hours, and those must not take their memory */
	return !(flags & ABOX_SANDBOX_EPHEMERAL);
}

int backend_disk_new(abox_ctx *ctx, uint64_t bytes, abox_error *err)
{
	uint64_t t0 = backend_debug(ctx) ? clock_mono_ns() : 0;
	int fd = disk_spare_take(ctx->state_dir, bytes);
	if (fd >= 0) {
		backend_log(ctx, ABOX_LOG_DEBUG, "disk: a spare taken (%.1f us)",
			    backend_debug(ctx) ? (double)(clock_mono_ns() - t0) / 1e3 : 0.0);
		return fd;
	}
	if (fd != -ENOENT)
		backend_log(ctx, ABOX_LOG_DEBUG, "disk: no spare ready (%s), making one", abox_strerror(-fd));
	fd = disk_new(ctx->state_dir, bytes, err);
	if (fd >= 0)
		backend_log(ctx, ABOX_LOG_DEBUG, "disk: made (%.1f us)",
			    backend_debug(ctx) ? (double)(clock_mono_ns() - t0) / 1e3 : 0.0);
	return fd;
}

int local_spare_disks(abox_ctx *ctx, uint64_t disk_bytes, unsigned count, abox_error *err)
{
	return disk_spares_start(ctx->state_dir, disk_bytes ? disk_bytes : DEFAULT_DISK, count, err);
}
