/* abox/snapshot.h — snapshots of a sandbox's files (and memory) and forks.
 * Part of the public API; abox/abox.h includes every part. */
#ifndef ABOX_SNAPSHOT_H
#define ABOX_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <abox/common.h>
#include <abox/error.h>
#include <abox/version.h>
#include <abox/sandbox.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ABOX_SNAPSHOT_INFO_VERSION 2
typedef struct abox_snapshot_info {
	uint32_t version;        /* set by the caller to ABOX_SNAPSHOT_INFO_VERSION */
	char id[ABOX_ID_LEN + 1];
	char name[128];          /* "" when unnamed */
	char parent[ABOX_ID_LEN + 1];         /* the snapshot it was made on top of; "" = none */
	char template_name[128];
	int64_t created_ms;      /* Unix time in ms */
	uint64_t bytes;          /* file data in this layer alone */
	uint32_t depth;          /* layers in its chain, itself included */
	/* version 2: */
	bool memory;             /* holds a checkpoint of the processes too */
	bool automatic;          /* made by a fork or a pause (not asked for): gc removes it once unused */
} abox_snapshot_info;

/* Copies a long-lived sandbox's files (its writable layer) into a new
 * immutable snapshot: the sandbox is frozen for the copy and thawed after
 * (a paused one stays paused). The cost grows with the bytes the sandbox
 * changed, not with its template. name may be NULL; names are unique. */
ABOX_EXPORT int abox_sandbox_snapshot(abox_sandbox *sb, const char *name, abox_snapshot_info *out,
				      abox_error *err);
/* Forks a long-lived sandbox count times (1-64): one snapshot of its files
 * (a brief freeze; the source keeps running), then count sandboxes from
 * it, each with its own id, writable layer and cgroups, and the source's
 * limits, seccomp policy, environment and metadata. timeout_ms 0: what is
 * left of the source's timeout. forks[i] is a new sandbox or NULL, with
 * the reason in errs[i] (errs may be NULL). Returns how many were made, or
 * a negative errno when the snapshot itself failed. The snapshot is
 * removed by abox_gc once no fork uses it. */
ABOX_EXPORT int abox_sandbox_fork(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, abox_sandbox **forks,
				  abox_error *errs, abox_error *err);
/* abox_sandbox_snapshot, plus a checkpoint of the processes
 * (ABOX_SNAPSHOT_MEMORY, needs the checkpoint hook; the source runs on):
 * sandboxes created from such a snapshot get those processes back,
 * running from where they were, each on its own. */
#define ABOX_SNAPSHOT_MEMORY (1u << 0)
/* A name another snapshot has moves to the new one (E2B's names: the name
 * then means the newest); the older keeps its id. Without it such a
 * name is refused (EEXIST). */
#define ABOX_SNAPSHOT_TAKE_NAME (1u << 1)
ABOX_EXPORT int abox_sandbox_snapshot_flags(abox_sandbox *sb, const char *name, uint32_t flags,
					    abox_snapshot_info *out, abox_error *err);
/* abox_sandbox_fork; with ABOX_FORK_MEMORY every fork also gets the
 * source's processes (one checkpoint, restored count times). */
#define ABOX_FORK_MEMORY (1u << 0)
ABOX_EXPORT int abox_sandbox_fork_flags(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, uint32_t flags,
					abox_sandbox **forks, abox_error *errs, abox_error *err);
/* Every snapshot; *out is freed with free(). */
ABOX_EXPORT int abox_snapshot_list(abox_ctx *ctx, abox_snapshot_info **out, size_t *n, abox_error *err);
/* Removes a snapshot by id or name; -EBUSY (naming it) while a recorded
 * sandbox or another snapshot stands on it. */
ABOX_EXPORT int abox_snapshot_remove(abox_ctx *ctx, const char *ref, abox_error *err);
/* Removes a snapshot as E2B deletes a template: one that sandboxes or
 * other snapshots stand on is not refused but forgotten (no name, listed
 * as automatic) and its layers are removed by abox_gc once nothing uses
 * them; what runs on it is not disturbed. */
ABOX_EXPORT int abox_snapshot_forget(abox_ctx *ctx, const char *ref, abox_error *err);

#ifdef __cplusplus
}
#endif
#endif
