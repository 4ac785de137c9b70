/* tlist — E2B's template listing for the templates a key built:
 *
 *   GET /templates          this key's templates (names it built that
 *                           still have a template or tag)
 *   GET /templates/{name}   one of them with its newest builds (limit,
 *                           1-100, default 100)
 *
 * Who built a name: STATE/daemon-builds/owners/NAME (tb_owns).
 * Each build is indexed when its record is written, in
 * STATE/daemon-builds/index/NAME.json: BUILD_ID -> status, times, size.
 * Runs in aboxd. */
#ifndef ABOX_DAEMON_TLIST_H
#define ABOX_DAEMON_TLIST_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"

struct tl_build {
	char bid[40];
	const char *status; /* "waiting", "building", "ready", "error" */
	int64_t created_ms, updated_ms, memory_mb, cpus;
};

/* Adds or updates build b of template name in its index (called with
 * the build's record; createdAt kept from the first time). */
void tl_index(const char *name, const struct tl_build *b);
/* May owner build template name? A new name, or one this owner built
 * (pending: a build of it is under way); recorded as owner's if so. */
bool tl_may_build(const char *owner, const char *name, bool pending);
/* Forgets name's builds (its template was deleted). */
void tl_forget(const char *name);
enum MHD_Result tl_list(struct request *rq);
enum MHD_Result tl_get(struct request *rq, const char *name);

#endif
