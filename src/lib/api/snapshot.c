/* api/snapshot.c — the public snapshot store calls: checks, then the
 * context's backend. Runs in the caller's process. */
#include "api/api.h"

int abox_snapshot_list(abox_ctx *ctx, abox_snapshot_info **out, size_t *n, abox_error *err)
{
	API_NEED(ctx, "snapshots");
	return API_CALL(ctx, snapshot_list, "snapshots", ctx, out, n, err);
}

int abox_snapshot_remove(abox_ctx *ctx, const char *ref, abox_error *err)
{
	API_NEED(ctx, "snapshot remove");
	API_NEED(ref, "snapshot remove");
	return API_CALL(ctx, snapshot_remove, "snapshot remove", ctx, ref, false, err);
}

int abox_snapshot_forget(abox_ctx *ctx, const char *ref, abox_error *err)
{
	API_NEED(ctx, "snapshot remove");
	API_NEED(ref, "snapshot remove");
	return API_CALL(ctx, snapshot_remove, "snapshot remove", ctx, ref, true, err);
}
