/* control_snapshots.c — snapshots and forks through the control plane:
 * POST /sandboxes/{id}/snapshots, /fork, GET /snapshots, and snapshot
 * references owned by the caller's key. Runs in aboxd. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "tlist.h"
#include "ttags.h"
#include "base/json.h"
#include "base/clock.h"
#include "auth.h"
#include "admission.h"
#include "daemon.h"
#include "lifecycle.h"
#include "listing.h"
#include "wire.h"
#include "base/sha256.h"
#include "control.h"

/* Snapshots belong to the API key that made them, like sandboxes: one
 * key must not list, start from (and so read the files of) or delete
 * another key's snapshot. The daemon notes the owner of each snapshot it
 * makes (notes.c); snapshots made otherwise (the CLI on the host) belong
 * to no key. */
bool control_owned_by(const char *id, const char *owner)
{
	char *got = note_read("snapshots", id);
	bool ok = got && owner[0] && strcmp(got, owner) == 0;
	free(got);
	return ok;
}

/* The id of the caller's snapshot named ref (id or name): 1 and *id set,
 * 0 when there is none (another key's counts as none), < 0 on error. */
int control_snapshot_of(abox_ctx *ctx, struct request *rq, const char *ref, char id[ABOX_ID_LEN + 1])
{
	abox_snapshot_info *v = NULL;
	size_t n = 0;
	int found = 0;
	if (abox_snapshot_list(ctx, &v, &n, NULL) < 0)
		return -EIO;
	for (size_t i = 0; i < n && !found; i++)
		if (!v[i].automatic && (strcmp(v[i].id, ref) == 0 || strcmp(v[i].name, ref) == 0) &&
		    control_owned_by(v[i].id, rq->owner)) {
			snprintf(id, 21, "%s", v[i].id);
			found = 1;
		}
	free(v);
	return found;
}

json_object *control_snap_json(const abox_snapshot_info *s)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "snapshotID", json_object_new_string(s->id));
	json_object *names = json_object_new_array();
	if (s->name[0])
		json_object_array_add(names, json_object_new_string(s->name));
	json_object_object_add(o, "names", names);
	return o;
}

enum MHD_Result control_snapshot(struct request *rq, abox_ctx *ctx, const char *id)
{
	enum MHD_Result sent;
	const char *name = NULL;
	json_object *b = rq->len ? body_json(rq, &sent) : json_object_new_object();
	if (!b)
		return sent;
	char why[128];
	if (json_get_string(b, "name", &name, why, sizeof(why)) < 0 || (name && strlen(name) > 127)) {
		json_object_put(b);
		return reply_error(rq, 400, "%s", name ? "name: at most 127 bytes" : why);
	}
	abox_sandbox_info in;
	abox_sandbox *sb = control_open_visible(rq, ctx, id, &in, &sent);
	if (!sb) {
		json_object_put(b);
		return sent;
	}
	abox_sandbox_info_clear(&in);
	/* a key with no room left makes no snapshot at all */
	unsigned st = admission_snapshot(ctx, rq->owner, 1, why, sizeof(why));
	if (st) {
		abox_sandbox_free(sb);
		json_object_put(b);
		return reply_error(rq, st, "%s", why);
	}
	abox_snapshot_info s = { .version = ABOX_SNAPSHOT_INFO_VERSION };
	abox_error err = ABOX_ERROR_INIT;
	/* E2B's names: a name in use moves to the newest snapshot */
	uint32_t flags = (control_checkpointer_works(ctx) ? ABOX_SNAPSHOT_MEMORY : 0) | ABOX_SNAPSHOT_TAKE_NAME;
	int r = abox_sandbox_snapshot_flags(sb, name, flags, &s, &err);
	/* files only for a sandbox whose memory cannot be checkpointed (one
	 * with networking), as on a host without a checkpointer */
	if (r == -EOPNOTSUPP && (flags & ABOX_SNAPSHOT_MEMORY)) {
		err = (abox_error)ABOX_ERROR_INIT;
		r = abox_sandbox_snapshot_flags(sb, name, ABOX_SNAPSHOT_TAKE_NAME, &s, &err);
	}
	abox_sandbox_free(sb);
	json_object_put(b);
	/* the sandbox it was made from: listSnapshots({sandboxId}) */
	if (r >= 0)
		(void)note_write("snapshot-source", s.id, id);
	if (r >= 0 && note_write("snapshots", s.id, rq->owner) < 0) {
		/* a snapshot nobody may use is worse than none */
		(void)abox_snapshot_remove(ctx, s.id, NULL);
		return reply_error(rq, 500, "snapshot %s: cannot record its owner", s.id);
	}
	/* its size is known once it exists: one that took the key over
	 * its storage is undone */
	if (r >= 0 && (st = admission_snapshot(ctx, rq->owner, 0, why, sizeof(why))) != 0) {
		(void)abox_snapshot_remove(ctx, s.id, NULL);
		note_remove("snapshots", s.id);
		note_remove("snapshot-source", s.id);
		return reply_error(rq, st, "%s", why);
	}
	return r < 0 ? reply_abox_error(rq, &err, r) : reply_json(rq, 201, control_snap_json(&s));
}

enum MHD_Result control_fork(struct request *rq, abox_ctx *ctx, const char *id)
{
	enum MHD_Result sent;
	json_object *b = rq->len ? body_json(rq, &sent) : json_object_new_object();
	if (!b)
		return sent;
	int64_t count = 1, t = 0;
	char why[128];
	int bad = json_get_int(b, "count", 1, 64, &count, why, sizeof(why)) < 0 ||
		  json_get_int(b, "timeout", 0, 86400 * 30, &t, why, sizeof(why)) < 0;
	json_object_put(b);
	if (bad)
		return reply_error(rq, 400, "%s", why);
	abox_sandbox_info in;
	abox_sandbox *sb = control_open_visible(rq, ctx, id, &in, &sent);
	if (!sb)
		return sent;
	/* forks are sandboxes of their source's size: admitted as creates */
	struct admission_ask ask = { .owner = rq->owner, .memory_bytes = in.memory_bytes, .disk_bytes = in.disk_bytes,
				     .cpu_millis = in.cpu_millis, .timeout_s = (uint32_t)t, .count = (unsigned)count };
	abox_sandbox_info_clear(&in);
	struct admission_ticket ticket;
	unsigned st = admission_admit(ctx, &ask, &ticket, why, sizeof(why));
	if (st) {
		abox_sandbox_free(sb);
		return reply_error(rq, st, "%s", why);
	}
	abox_sandbox *forks[64] = { 0 };
	abox_error errs[64], err = ABOX_ERROR_INIT;
	uint32_t flags = control_checkpointer_works(ctx) ? ABOX_FORK_MEMORY : 0;
	int made = abox_sandbox_fork_flags(sb, (unsigned)count, (uint32_t)(t > 0 ? t : 0) * 1000, flags, forks, errs,
					   &err);
	if (made == -EOPNOTSUPP && flags) {
		err = (abox_error)ABOX_ERROR_INIT;
		made = abox_sandbox_fork_flags(sb, (unsigned)count, (uint32_t)(t > 0 ? t : 0) * 1000, 0,
					       forks, errs, &err);
	}
	admission_release(&ticket);
	abox_sandbox_free(sb);
	if (made < 0)
		return reply_abox_error(rq, &err, made);
	json_object *a = json_object_new_array();
	for (int i = 0; i < count; i++) {
		json_object *o = json_object_new_object();
		abox_sandbox_info fi;
		if (forks[i] && sandbox_visible(rq, ctx, abox_sandbox_id(forks[i]), &fi) == 0) {
			json_object_object_add(o, "sandbox", control_sandbox_json(&fi));
			abox_sandbox_info_clear(&fi);
		} else {
			json_object *e = json_object_new_object();
			json_object_object_add(e, "code", json_object_new_int(500));
			json_object_object_add(e, "message",
					       json_object_new_string(forks[i] ? "the fork vanished" : errs[i].msg));
			json_object_object_add(o, "error", e);
		}
		abox_sandbox_free(forks[i]);
		json_object_array_add(a, o);
	}
	return reply_json(rq, 201, a);
}

/* A snapshot name filter as E2B's ("name", "team/name", "name:tag"):
 * abox has no teams or tags, so those parts must not hide a match. */
static bool name_matches(const abox_snapshot_info *s, const char *want)
{
	const char *slash = strrchr(want, '/');
	const char *w = slash ? slash + 1 : want;
	size_t k = strcspn(w, ":");
	return (strlen(s->name) == k && !strncmp(s->name, w, k)) || (strlen(s->id) == k && !strncmp(s->id, w, k));
}

static int snap_newest_first(const void *a, const void *b)
{
	const abox_snapshot_info *x = a, *y = b;
	if (x->created_ms != y->created_ms)
		return x->created_ms > y->created_ms ? -1 : 1;
	return -strcmp(x->id, y->id);
}

enum MHD_Result control_snapshots(struct request *rq, abox_ctx *ctx)
{
	const char *from = query(rq, "sandboxID"), *name = query(rq, "name");
	const char *lim = query(rq, "limit");
	unsigned long limit = 0;
	if (lim) {
		char *end = NULL;
		limit = strtoul(lim, &end, 10);
		if (!isdigit((unsigned char)*lim) || *end || limit < 1 || limit > 100)
			return reply_error(rq, 400, "limit must be 1-100");
	}
	abox_snapshot_info *v = NULL;
	size_t n = 0;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_snapshot_list(ctx, &v, &n, &err);
	if (r < 0)
		return reply_abox_error(rq, &err, r);
	qsort(v, n, sizeof(*v), snap_newest_first);
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n && (!limit || json_object_array_length(a) < limit); i++) {
		/* forks' and pauses' own layers are not the user's; other keys'
		 * snapshots are not this key's */
		if (v[i].automatic || !control_owned_by(v[i].id, rq->owner) || (name && !name_matches(&v[i], name)))
			continue;
		if (from) {
			char *src = note_read("snapshot-source", v[i].id);
			bool same = src && !strcmp(src, from);
			free(src);
			if (!same)
				continue;
		}
		json_object_array_add(a, control_snap_json(&v[i]));
	}
	free(v);
	return reply_json(rq, 200, a);
}

/* DELETE /templates/{name}: a template made from a snapshot of the
 * caller's is that snapshot, forgotten with its notes; one the caller
 * built goes with all its tags. */
enum MHD_Result control_template_forget(struct request *rq, abox_ctx *ctx, const char *name)
{
	enum MHD_Result q;
	abox_error err = ABOX_ERROR_INIT;
	char sid[ABOX_ID_LEN + 1];
	int r = control_snapshot_of(ctx, rq, name, sid);
	if (r < 0) {
		q = reply_error(rq, 500, "cannot read the snapshots");
	} else if (r == 0) {
		/* a template this key built, with all its tags */
		r = tt_forget(ctx, rq->owner, name, &err);
		if (r >= 0)
			tl_forget(name);
		q = r == -ENOENT ? reply_error(rq, 404, "template '%s' not found", name)
		    : r < 0      ? reply_abox_error(rq, &err, r)
				 : reply_empty(rq, 204);
	} else if ((r = abox_snapshot_forget(ctx, sid, &err)) < 0) {
		q = reply_abox_error(rq, &err, r);
	} else {
		note_remove("snapshots", sid);
		note_remove("snapshot-source", sid);
		q = reply_empty(rq, 204);
	}
	return q;
}
