/* uidpool — host uid/gid ranges for sandboxes' user namespaces.
 *
 * Each sandbox with a user namespace gets a range of UIDPOOL_RANGE host
 * ids of its own (its uid/gid 0-65535 map onto base..base+65535), taken
 * from a pool that lies above every system and login id and apart from the
 * ranges /etc/subuid and /etc/subgid hand to users: no host account and no
 * other live sandbox ever holds one of its ids.
 *
 * A range taken is a file <runtime>/uids/<base> made with O_EXCL, holding
 * the sandbox's id: two creators racing for one range cannot both get it,
 * and a creator killed after taking one leaves a file gc can match with
 * the sandbox it names. Files a sandbox writes are stored with
 * sandbox-relative owners (its layers are mounted idmapped), so nothing on
 * disk carries a range's host ids once its sandbox is gone: a range is
 * free again as soon as its file is removed. Hence the runtime folder
 * (a tmpfs, emptied by a reboot, which ends every sandbox) rather than
 * the state folder: no disk inode made and freed per sandbox, and one
 * pool for every state folder that shares the runtime folder.
 *
 * Configured by <state>/userns.json: {"default": "on"|"off", "poolStart":
 * N, "poolRanges": M, "limits": {NAME: N or null, ...}}. Runs in the
 * CLI/daemon. */
#ifndef ABOX_STORE_UIDPOOL_H
#define ABOX_STORE_UIDPOOL_H

#include <stdint.h>

#include "base/base.h"

#define UIDPOOL_RANGE 65536u
#define UIDPOOL_DEFAULT_START                                                                                \
	2147483648u /* 2^31: far above login ids (and systemd's container ids end below it) */
#define UIDPOOL_DEFAULT_RANGES 16384u /* up to 3 * 2^30 */

/* Kernel limits within a sandbox's user namespace, written into it as it
 * is made (/proc/sys/user/max_NAME): each of the sandbox's users may hold
 * at most that many; the sandbox as a whole is held to the host's per-user
 * value as well (its range's first id is charged for all it makes). -1
 * leaves the kernel's (no limit of the namespace's own). Default: no
 * user namespaces inside (without one, sandbox root can make no other
 * namespace either), whatever the seccomp policy lets through. */
enum {
	UIDPOOL_LIMITS = 12
};
extern const char *const uidpool_limit_names[UIDPOOL_LIMITS];

struct uidpool_cfg {
	bool default_on; /* sandboxes get a user namespace unless told otherwise */
	uint32_t start;
	uint32_t ranges;
	int64_t limits[UIDPOOL_LIMITS];
	char path[4096]; /* the file read, or "" (defaults) */
	/* the users' own ranges, skipped (tests point these elsewhere) */
	const char *subuid, *subgid;
};

/* Reads <state>/userns.json (missing: the defaults). Refuses a pool that
 * reaches below 65536, wraps past the last id, or is empty. */
int uidpool_config(const char *state_dir, struct uidpool_cfg *out, abox_error *err);

/* Takes a free range for sandbox id: *base is its first host id. -ENOSPC
 * (the message says how many ranges are in use) when none is free. */
int uidpool_take(const char *runtime_dir, const struct uidpool_cfg *cfg, const char *id, uint32_t *base,
		 abox_error *err);

/* Whether host ids [start, start+count) meet a range the pool may hand a
 * sandbox (one /etc/subuid or /etc/subgid covers is skipped): *slot_base
 * the first such range's. */
bool uidpool_overlaps(const struct uidpool_cfg *cfg, uint64_t start, uint64_t count, uint32_t *slot_base);

/* Gives the range back when it is still id's (a missing file is fine). */
void uidpool_give(const char *runtime_dir, uint32_t base, const char *id);

/* Removes the files of ranges over a minute old whose sandbox nothing
 * speaks for any more (store_has_owner), or that name none (a creator
 * killed between making the file and writing the id). *removed counts
 * them. */
int uidpool_sweep(const char *runtime_dir, const char *state_dir, unsigned *removed);

/* Ranges in use now (files in <runtime>/uids). */
unsigned uidpool_used(const char *runtime_dir);

#endif
