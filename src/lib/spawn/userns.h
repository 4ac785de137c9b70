/* userns — a user namespace whose ids 0-65535 are host ids base..
 * base+65535, made for one sandbox before its clone: the sandbox child
 * mounts its layers idmapped through it and joins it last, just before it
 * execs init (spawn.c).
 * Runs in the CLI/daemon (any thread). */
#ifndef ABOX_SPAWN_USERNS_H
#define ABOX_SPAWN_USERNS_H

#include <stdint.h>

#include "base/base.h"
#include "store/uidpool.h"

/* Making one, in two steps: begin starts helpers that share our memory
 * and make it on another CPU while the caller goes on; finish waits for
 * their answer. The job must stay in place between the two (they use it).
 * A begun job ends with finish or abort, never neither, and a thread has
 * one begun job at a time (the helpers' stacks are the thread's). */
struct userns_job {
	pid_t pid; /* the maker */
	int ready_fd; /* ours: its answer */
	int h_ready; /* its end */
	int m_ready; /* the member's end of the maker's pipe */
	uint32_t base; /* the owner: the host id the namespace's root is */
	bool custom; /* maps given by the caller (an OCI config's), not base's range */
	char map[1280], gmap[1280]; /* uid_map's and gid_map's text */
	size_t map_len, gmap_len;
	char *m_stack_top; /* the member's stack */
	/* limits the member writes into the namespace (uidpool.h) */
	unsigned nlimits;
	char limit_path[UIDPOOL_LIMITS][48];
	char limit_value[UIDPOOL_LIMITS][12];
	int limit_failed; /* the one the kernel refused, or -1 */
	long limit_errno;
};
/* limits: UIDPOOL_LIMITS values (-1: the kernel's), or NULL for none */
int userns_begin(uint32_t base, const int64_t *limits, struct userns_job *j, abox_error *err);
/* The same with maps of the caller's (lines "inside host count"), at most
 * 32 lines each, made and owned by host id owner, which must be the id
 * the namespace's uid 0 maps to (init joins it as that id, without any
 * capability of the host's). No limits. */
int userns_begin_maps(uint32_t owner, const char *uid_map, const char *gid_map, struct userns_job *j,
		      abox_error *err);
/* An fd on the namespace (close-on-exec), or -errno; the helper is gone
 * either way. */
int userns_finish(struct userns_job *j, abox_error *err);
/* Ends a begun job without a namespace (nothing to do when not begun:
 * pid <= 0, ready_fd -1). */
void userns_abort(struct userns_job *j);

/* Both steps at once: an fd on the new namespace, or -errno. */
int userns_new(uint32_t base, abox_error *err);

/* Whether this kernel lets us make one (cached). */
bool userns_supported(void);
/* Whether the filesystem at path can be mounted idmapped (what a sandbox
 * with a user namespace needs of its template, snapshots and host trees):
 * 0 or -errno with err saying why. Leaves nothing mounted. */
int userns_idmap_probe(const char *path, abox_error *err);

#endif
