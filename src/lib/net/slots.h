/* net/slots — which sandbox holds which /30 of the pool, on disk so that
 * it survives crashes: <state>/net/slots/<n> holds the sandbox's id and
 * its egress policy ({"id":"…","policy":{…}}), written without fsync (a
 * slot means something only while the host runs). A slot is taken by
 * making its file with O_EXCL (no two creators get one slot; a reader
 * that meets it before its record is written treats it as nobody's it
 * can serve yet), changed by rename (readers see old or new), freed by
 * unlink. abox-netd reads the same files to know whose packet it is
 * answering. The search starts at a random slot, so a slot freed a
 * moment ago (whose old veth the kernel may still be tearing down) is
 * rarely the next one given.
 * Runs in the creator, gc and abox-netd. */
#ifndef ABOX_NET_SLOTS_H
#define ABOX_NET_SLOTS_H

#include <stdint.h>

#include "base/base.h"
#include "net/config.h"

/* Takes a free slot for id with its policy (JSON). -ENOSPC when the pool
 * is full. prefer (-1: none) is the slot id held before (a cold resume):
 * taken again, its policy refreshed, when id still holds it. */
int net_slot_take(const char *state_dir, const struct net_config *c, const char *id, const char *policy_json,
		  int64_t prefer, uint32_t *slot, abox_error *err);
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
