/* snapshot — immutable layers made from a sandbox's writable layer.
 *
 * On disk: STATE/snapshots/ID/snapshot.json (the record) and
 * STATE/snapshots/ID/layer/ (the copied writable layer: root/ for the
 * sandbox's root overlay, one folder per host tree it overlays). A
 * snapshot made from a sandbox that itself came from a snapshot names
 * that one as its parent; a sandbox created from a snapshot stacks the
 * chain, newest first, on top of its template. A snapshot is removed only
 * when no sandbox and no other snapshot stands on it.
 * Runs in the CLI/daemon. */
#ifndef ABOX_LAYER_SNAPSHOT_H
#define ABOX_LAYER_SNAPSHOT_H

#include <stdint.h>

#include "abox/abox.h"
#include "base/base.h"

/* Layers one sandbox may stack on its template. */
#define SNAPSHOT_MAX_CHAIN 16

struct snap_record {
	char id[ABOX_ID_LEN + 1];
	char *name;          /* optional */
	char *parent;        /* id, or NULL */
	char *template_name;
	int64_t created_ms;
	uint64_t bytes;      /* file data in this layer */
	unsigned depth;      /* layers in the chain, this one included */
	bool auto_remove;    /* made by fork: gc removes it once nothing uses it */
	/* with a memory checkpoint (memory/ beside layer/): the processes
	 * come back in sandboxes made from it */
	bool memory;
	char *memory_token;  /* what the checkpointed init waits to be re-armed with */
	char *template_root; /* the template version its files stand on (NULL in older records:
			      * the template's current one) */
};

void snap_record_free(struct snap_record *s);
/* By id or by name; -ENOENT with a message naming what was asked for. */
int snap_read(const char *state_dir, const char *ref, struct snap_record *out, abox_error *err);
/* The layer folders of ref's chain, newest first (NULL-terminated,
 * freed with strv_free). */
int snap_chain(const char *state_dir, const char *ref, char ***layers, struct snap_record *top, abox_error *err);
/* Copies the writable layer open at layer_fd (its "upper" folder) into a
 * new snapshot; the caller has frozen the sandbox. rec: name, parent,
 * template_name and depth set by the caller; id, created_ms and bytes
 * are filled in. flatten (layer folders the sandbox stands on, newest
 * first, or NULL): merge them and the writable layer into one layer with
 * no parent, for a chain at SNAPSHOT_MAX_CHAIN. id_base: the sandbox's
 * first host id when it has a user namespace (owners stored relative to
 * it), else 0. */
int snap_create(const char *state_dir, int layer_fd, uint32_t id_base, char *const *flatten,
		struct snap_record *rec, abox_error *err);
/* Adds a memory checkpoint (already in STATE/snapshots/ID/memory) to
 * snapshot id's record (temp file + fsync + rename). */
int snap_set_memory(const char *state_dir, const char *id, const char *token, const char *template_root,
		    abox_error *err);
/* Ids of every snapshot (NULL-terminated, sorted). */
int snap_list(const char *state_dir, char ***ids, abox_error *err);
/* flock on the snapshot store: shared while a create stacks a chain (until
 * its sandbox is recorded), exclusive while one is removed. The fd, or
 * -errno. */
int snap_lock(const char *state_dir, bool exclusive, abox_error *err);
/* -EBUSY naming the user when a recorded sandbox or another snapshot
 * stands on it. */
int snap_remove(const char *state_dir, const char *ref, abox_error *err);
/* snap_remove; with forget_in_use, a snapshot something stands on is not
 * refused but forgotten: its name dropped, hidden from the user's lists,
 * removed by gc once unused. */
int snap_remove_ex(const char *state_dir, const char *ref, bool forget_in_use, abox_error *err);
/* The snapshot keeps its id and layers but no longer its name (a newer
 * snapshot takes it). */
int snap_drop_name(const char *state_dir, const char *id, abox_error *err);

/* Removes what interrupted snapshot creations and removals left (gc);
 * skips when a snapshot is being made or removed. */
void snap_sweep(const char *state_dir);

/* Marks a fork's snapshot as done being created from: gc may remove it
 * as soon as no sandbox uses it. */
void snap_settle(const char *state_dir, const char *id);

#endif
