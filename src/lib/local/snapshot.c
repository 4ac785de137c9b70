/* Snapshots through the library: made from a frozen sandbox, listed,
 * removed. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "local/local.h"
#include "proto/messages.h"
#include "store/state.h"
#include "versioned.h"

static void to_info(const struct snap_record *s, abox_snapshot_info *out)
{
	versioned_clear(VERSIONED_SNAPSHOT_INFO, out);
	uint32_t v = out->version;
	memcpy(out->id, s->id, sizeof(out->id));
	safe_snprintf(out->name, sizeof(out->name), "%s", s->name ? s->name : "");
	safe_snprintf(out->parent, sizeof(out->parent), "%s", s->parent ? s->parent : "");
	safe_snprintf(out->template_name, sizeof(out->template_name), "%s", s->template_name);
	out->created_ms = s->created_ms;
	out->bytes = s->bytes;
	out->depth = s->depth;
	if (v >= 2) {
		out->memory = s->memory;
		out->automatic = s->auto_remove;
	}
}

/* The writable layer, reached through the fd init keeps on it: nothing in
 * the sandbox can reach that tmpfs by path, and opening it through init's
 * fd table needs no path inside the sandbox. The pidfd check after the
 * open proves the pid still named our init (not a reused pid). */
static int open_layer(abox_sandbox *sb, abox_error *err)
{
	if (sb->has_layer_fd) {
		int fd = fcntl(sb->layer_fd, F_DUPFD_CLOEXEC, 3);
		return fd >= 0 ? fd : abox_error_set(err, errno, "snapshot: the writable layer of %s", sb->id);
	}
	char p[64];
	safe_snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)sb->pid, INIT_LAYER_FD);
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return abox_error_set(err, errno, "snapshot: open the writable layer of %s", sb->id);
	if (sb->pidfd < 0 || syscall(SYS_pidfd_send_signal, sb->pidfd, 0, NULL, 0) < 0) {
		close(fd);
		return abox_error_setx(err, ESRCH, "snapshot: sandbox %s is not running", sb->id);
	}
	return fd;
}

/* Whether a snapshot is called name (or has it as id): its id in id. */
static bool name_holder(const char *state_dir, const char *name, char id[ABOX_ID_LEN + 1])
{
	struct snap_record s;
	if (snap_read(state_dir, name, &s, NULL) < 0)
		return false;
	/* an id is no name to move */
	if (s.name && !strcmp(s.name, name))
		memcpy(id, s.id, ABOX_ID_LEN + 1);
	else
		id[0] = '\0';
	bool held = true;
	snap_record_free(&s);
	return held;
}

int backend_snapshot(abox_sandbox *sb, const char *name, uint32_t how, bool stay_frozen, abox_snapshot_info *out,
		     abox_error *err)
{
	if (out && out->version < 1)
		return abox_error_setx(err, EINVAL, "snapshot: abox_snapshot_info needs its version set");
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		return abox_error_setx(err, EINVAL, "snapshot: sandbox %s is ephemeral", sb->id);
	if (name && (!name[0] || strlen(name) >= sizeof(out->name) || strchr(name, '/') || strchr(name, '\n')))
		return abox_error_setx(err, EINVAL, "snapshot: name '%s' must be 1-127 characters, no '/'", name);
	abox_ctx *ctx = sb->ctx;
	_cleanup_close_ int slock = snap_lock(ctx->state_dir, true, err);
	if (slock < 0)
		return slock;
	/* a name in use: refused, or (SNAP_TAKE_NAME, E2B's way) it moves to
	 * the new snapshot once that exists, the older keeping its id */
	char named[ABOX_ID_LEN + 1] = "";
	if (name && name_holder(ctx->state_dir, name, named) && !(how & SNAP_TAKE_NAME))
		return abox_error_setx(err, EEXIST, "snapshot: the name '%s' is taken", name);
	_cleanup_close_ int lock = -EBADF;
	struct sb_state st = { 0 };
	int r = backend_lock_read(sb, &lock, &st, err);
	if (r < 0)
		return r;
	struct snap_record rec = { .name = (char *)name, .template_name = st.template_name, .depth = 1,
				   .auto_remove = how & SNAP_AUTO_REMOVE, .template_root = st.template_root };
	if (st.snapshots && st.snapshots[0]) {
		rec.parent = st.snapshots[0];
		rec.depth = (unsigned)strv_length(st.snapshots) + 1;
	}
	_cleanup_close_ int layer = -EBADF;
	bool froze = false;
	_cleanup_(strv_freep) char **flatten = NULL;
	if (rec.depth > SNAPSHOT_MAX_CHAIN) {
		/* one layer instead of a 17th: the chain is merged */
		size_t n = strv_length(st.snapshots);
		flatten = calloc(n + 1, sizeof(char *));
		for (size_t i = 0; flatten && i < n; i++) {
			char p[4200];
			safe_snprintf(p, sizeof(p), "%s/snapshots/%s/layer", ctx->state_dir, st.snapshots[i]);
			flatten[i] = strdup(p);
		}
		bool all = flatten != NULL;
		for (size_t i = 0; all && i < n; i++)
			all = flatten[i] != NULL;
		if (!all) {
			r = abox_error_set(err, ENOMEM, "snapshot");
			goto out;
		}
	}
	if (sb->dead || state_status(&st) == SB_DEAD) {
		r = abox_error_setx(err, ESRCH, "snapshot: sandbox %s is not running", sb->id);
		goto out;
	}
	if ((r = backend_cgroups(sb, err)) < 0)
		goto out;
	if ((layer = open_layer(sb, err)) < 0) {
		r = layer;
		goto out;
	}
	/* frozen, nothing in the sandbox writes while we copy: the copy is
	 * consistent and no entry can be swapped for a symlink under us */
	if (!st.paused_ms) {
		froze = true; /* a freeze that failed midway is undone below */
		if ((r = backend_freeze(sb, true, "snapshot", err)) < 0)
			goto out;
	}
	r = snap_create(ctx->state_dir, layer, sb->id_base, flatten, &rec, err);
	if (r >= 0 && named[0])
		(void)snap_drop_name(ctx->state_dir, named, NULL);
	if (froze && !(stay_frozen && r >= 0)) {
		abox_error thaw_err = ABOX_ERROR_INIT;
		int t = cgroup_freeze(sb->cg, false, &thaw_err);
		if (t < 0 && r >= 0) {
			*err = thaw_err;
			r = t;
		}
		if (t >= 0)
			backend_freeze_settled(sb);
	}
	if (r >= 0 && out)
		to_info(&rec, out);
	if (r >= 0)
		backend_log(ctx, ABOX_LOG_DEBUG, "snapshot %s of %s: %llu bytes", rec.id, sb->id,
			    (unsigned long long)rec.bytes);
out:
	if (froze && r < 0) {
		/* failed anywhere: nothing frozen stays behind */
		if (cgroup_freeze(sb->cg, false, NULL) >= 0)
			backend_freeze_settled(sb);
	}
	sb_state_free(&st);
	return r;
}

int local_snapshot(abox_sandbox *sb, const char *name, uint32_t flags, abox_snapshot_info *out, abox_error *err)
{
	uint32_t how = flags & ABOX_SNAPSHOT_TAKE_NAME ? SNAP_TAKE_NAME : 0;
	if ((flags & ABOX_SNAPSHOT_MEMORY) && sb->net_policy)
		return local_net_no_checkpoint("snapshot --memory", sb, err);
	if ((flags & ABOX_SNAPSHOT_MEMORY) && sb->id_base)
		return local_userns_no_checkpoint("snapshot --memory", sb, err);
	return flags & ABOX_SNAPSHOT_MEMORY ? backend_snapshot_memory(sb, name, how, out, err)
					    : backend_snapshot(sb, name, how, false, out, err);
}

int local_snapshot_list(abox_ctx *ctx, abox_snapshot_info **out, size_t *n, abox_error *err)
{
	_cleanup_(strv_freep) char **ids = NULL;
	int r = snap_list(ctx->state_dir, &ids, err);
	if (r < 0)
		return r;
	size_t k = 0, cap = strv_length(ids);
	abox_snapshot_info *v = calloc(cap ? cap : 1, sizeof(*v));
	if (!v)
		return abox_error_set(err, ENOMEM, "snapshots");
	for (size_t i = 0; ids[i]; i++) {
		struct snap_record s;
		if (snap_read(ctx->state_dir, ids[i], &s, NULL) < 0)
			continue; /* being removed, or damaged: gc's business */
		v[k].version = ABOX_SNAPSHOT_INFO_VERSION;
		to_info(&s, &v[k++]);
		snap_record_free(&s);
	}
	*out = v;
	*n = k;
	return 0;
}

int local_snapshot_remove(abox_ctx *ctx, const char *ref, bool forget, abox_error *err)
{
	return snap_remove_ex(ctx->state_dir, ref, forget, err);
}
