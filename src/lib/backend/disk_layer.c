/* backend/disk_layer.c — which writable layer a sandbox gets, and its
 * disk (disk/). Runs in the CLI/daemon. */
#include "backend/backend.h"
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
	return disk_new(ctx->state_dir, bytes, err);
}
