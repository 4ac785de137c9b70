/* netd/take — the slot of a sandbox being created, taken by abox-netd
 * when the creator asks for it ("take", control.c): the creator sends
 * its id and policy and reads the slot in the answer, so neither the
 * network config nor the slot file is on its critical path.
 * Runs in abox-netd's control threads. */
#ifndef ABOX_NETD_TAKE_H
#define ABOX_NETD_TAKE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"

/* A take under way: the slot picked for a sandbox, recorded only after
 * the answer is sent (a file made on ext4 waited up to a millisecond
 * here, on the creator's critical path), and before anything is made
 * for the sandbox: a creator that dies from then on leaves a slot gc
 * finds; one that dies before gets nothing made. */
struct take {
	char id[ABOX_ID_LEN + 1];
	uint32_t slot;
	bool record; /* picked, not recorded yet (no other take gets it) */
	char *policy; /* canonical JSON, to record */
};

/* The slot for the sandbox req names ("id"), with the policy req
 * carries (inline, or in the file fd when too big for a message):
 * picked, or for a cold resume ("prefer": the slot it held) taken and
 * recorded at once. 0 or -errno. */
int take_slot(json_object *req, int fd, struct take *t, abox_error *err);
/* Records the picked slot once the answer is sent (answered false: the
 * creator never got it; the slot goes back unrecorded). */
int take_record(struct take *t, bool answered, abox_error *err);
/* Keeps a few files made ahead for the records (net_slot_premake), so
 * a record is a write and a rename, not a new inode; called by the
 * thread that makes spares, at a low priority. */
void take_premake(void);
/* What a take holds, let go (a picked slot unrecorded goes back). */
void take_done(struct take *t);

#endif
