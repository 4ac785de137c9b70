/* net/slots — which sandbox holds which /30 of the pool, on disk so that
 * it survives crashes: <state>/net/slots/<n> holds the sandbox's id and
 * its egress policy ({"id":"…","policy":{…}}), written without fsync (a
 * slot means something only while the host runs). abox-netd takes a
 * slot for each creator: picked, then its file made whole where none
 * was (O_EXCL, or a file made ahead renamed without replacing: no two
 * creators get one slot); a policy change replaces it by rename
 * (readers see old or new); netd frees it by unlink. netd reads the
 * same files to know whose packet it is answering. The search starts
 * at a random slot, so a slot freed a moment ago (whose old veth the
 * kernel may still be tearing down) is rarely the next one given.
 * Runs in abox-netd, and in the library for policy changes and gc. */
#ifndef ABOX_NET_SLOTS_H
#define ABOX_NET_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "net/config.h"

/* A slot that is free now (no file, and not busy(slot): netd's own
 * picks not recorded yet), for net_slot_record; -ENOSPC when none. */
int net_slot_pick(const char *state_dir, const struct net_config *c, bool (*busy)(uint32_t slot),
		  uint32_t *slot, abox_error *err);
/* Records a picked slot as id's (O_EXCL): -EEXIST when someone took it
 * meanwhile. */
int net_slot_record(const char *state_dir, uint32_t slot, const char *id, const char *policy_json,
		    abox_error *err);
/* Files made ahead for net_slot_record_premade, beside the slots: a new
 * file is what a record costs most where the filesystem makes inodes
 * slowly (ext4 without a journal scans past every inode freed in the
 * last seconds: up to a millisecond here with sandboxes coming and
 * going). Only abox-netd makes them, and removes any left at its start. */
#define NET_SLOT_PREMADE_PREFIX ".pre-"
#define NET_SLOT_PREMADE_NAME 32
int net_slot_premake(const char *state_dir, char name[NET_SLOT_PREMADE_NAME], abox_error *err);
/* net_slot_record with a file made ahead (premade, used up either way):
 * the record written into it, then renamed to the slot's name unless
 * that exists (-EEXIST). */
int net_slot_record_premade(const char *state_dir, const char *premade, uint32_t slot, const char *id,
			    const char *policy_json, abox_error *err);
/* Every file made ahead, removed. */
void net_slot_premade_clear(const char *state_dir);
/* Replaces the policy of id's slot (atomic: readers see old or new). */
int net_slot_update(const char *state_dir, uint32_t slot, const char *id, const char *policy_json,
		    abox_error *err);
/* The id and policy (malloc'd) in a slot; -ENOENT when free. */
int net_slot_read(const char *state_dir, uint32_t slot, char id[ABOX_ID_LEN + 1], char **policy_json,
		  abox_error *err);
/* Frees id's slot (a slot someone else holds now is left alone). */
void net_slot_release(const char *state_dir, uint32_t slot, const char *id);
/* Seconds since a slot's record was written (-1: free or unreadable). */
int64_t net_slot_age_s(const char *state_dir, uint32_t slot);
/* Every taken slot, ascending (malloc'd array). */
int net_slots_list(const char *state_dir, uint32_t **slots, size_t *n, abox_error *err);
/* The host end of id's veth: NET_IF_PREFIX and 12 characters of the id. */
void net_host_ifname(const char *id, char name[IFNAMSIZ]);

#endif
