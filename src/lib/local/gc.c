/* local/gc.c — what dead sandboxes left: their runtime folders, cgroups,
 * records, unused template versions and snapshots; at most every few
 * seconds when asked for "maybe" (each CLI command asks).
 * Runs in the CLI/daemon. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "local/local.h"
#include "disk/disk.h"
#include "layer/layer.h"
#include "layer/snapshot.h"
#include "proto/messages.h"
#include "store/state.h"
#include "store/store.h"
#include "store/uidpool.h"

static bool net_owned(abox_ctx *ctx, const char *id)
{
	return store_has_owner(ctx->runtime_dir, ctx->state_dir, id);
}

static int gc_now(abox_ctx *ctx, unsigned *removed, abox_error *err)
{
	(void)local_reap(ctx, ABOX_REAP_FREEZE | ABOX_REAP_MEMORY, NULL, NULL, NULL);
	/* without a layout gc still removes every recorded cgroup (their
	 * filesystem vouches for them); only the search for unrecorded ones
	 * needs it */
	abox_error lerr = ABOX_ERROR_INIT;
	bool have_layout = backend_layout(ctx, &lerr) >= 0;
	if (!have_layout)
		backend_log(ctx, ABOX_LOG_DEBUG, "gc without a cgroup layout: %s", lerr.msg);
	template_sweep(ctx->state_dir, NULL);
	snap_sweep(ctx->state_dir);
	int r = store_gc(ctx->runtime_dir, ctx->state_dir, have_layout ? &ctx->cg : NULL, removed, err);
	/* after the records: a dead sandbox's record goes first, its slot of
	 * the address pool (and its elements, flows) then — also when the
	 * records' sweep met an error on the way (a cgroup still busy): a
	 * slot is freed only when no live sandbox holds it, so one failure
	 * there must not keep every dead sandbox's slot */
	(void)local_net_gc(ctx, net_owned, removed);
	/* and the host ids they held (a creator killed mid-create, a kill
	 * that stopped before giving them back) */
	(void)uidpool_sweep(ctx->runtime_dir, ctx->state_dir, removed);
	return r;
}

#define GC_INTERVAL_S 10

int local_gc(abox_ctx *ctx, bool maybe, unsigned *removed, abox_error *err)
{
	if (!maybe)
		return gc_now(ctx, removed, err);
	char stamp[4200];
	safe_snprintf(stamp, sizeof(stamp), "%s/.gc-stamp", ctx->runtime_dir);
	struct stat st;
	int64_t now_s = clock_wall_ms() / 1000;
	if (removed)
		*removed = 0;
	if (stat(stamp, &st) == 0 && now_s - st.st_mtime < GC_INTERVAL_S && st.st_mtime <= now_s)
		return 0;
	int fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		(void)futimens(fd, NULL);
		close(fd);
	}
	return gc_now(ctx, removed, err);
}
