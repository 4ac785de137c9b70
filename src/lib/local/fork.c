/* Fork: one snapshot of a sandbox's files, then N sandboxes from it with
 * the source's settings. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "local/local.h"
#include "store/state.h"

#define FORK_MAX 64

int backend_opts_from_record(const struct sb_state *st, abox_sandbox_opts *o, char ***meta, abox_error *err)
{
	char **m = calloc(st->nmeta + 1, sizeof(char *));
	for (unsigned k = 0; m && k < st->nmeta; k++) {
		size_t n = strlen(st->meta_keys[k]) + strlen(st->meta_values[k]) + 2;
		if (!(m[k] = malloc(n))) {
			strv_free(m);
			m = NULL;
			break;
		}
		safe_snprintf(m[k], n, "%s=%s", st->meta_keys[k], st->meta_values[k]);
	}
	if (!m)
		return abox_error_set(err, ENOMEM, "options from the record of %s", st->id);
	*o = (abox_sandbox_opts)ABOX_SANDBOX_OPTS_INIT;
	o->memory_bytes = st->memory_bytes;
	o->disk_bytes = st->disk_bytes;
	o->pids = st->pids;
	o->cpu_millis = st->cpu_millis;
	o->seccomp_policy = st->seccomp_policy;
	o->env = (const char *const *)st->env;
	o->metadata = (const char *const *)m;
	if (st->auto_pause)
		o->flags |= ABOX_SANDBOX_AUTO_PAUSE;
	o->flags |= st->tmpfs_layer ? ABOX_SANDBOX_LAYER_TMPFS : ABOX_SANDBOX_LAYER_DISK;
	/* a fork or a resume is who its source was: with a user namespace (a
	 * range of its own) or without */
	o->flags |= st->id_base ? ABOX_SANDBOX_USERNS : ABOX_SANDBOX_NO_USERNS;
	if (st->no_sudo)
		o->flags |= ABOX_SANDBOX_NO_SUDO;
	if (st->auto_pause && st->auto_no_memory)
		o->flags |= ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY;
	if (st->deadline_ms) {
		/* what is left; the clock stood still while it was paused */
		int64_t left = st->deadline_ms - (st->paused_ms ? st->paused_ms : clock_wall_ms());
		o->timeout_ms = left < 1 ? 1 : left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
	}
	*meta = m;
	return 0;
}

int local_fork(abox_sandbox *sb, unsigned count, uint32_t timeout_ms, uint32_t flags,
			    abox_sandbox **forks, abox_error *errs, abox_error *err)
{
	if (flags & ~ABOX_FORK_MEMORY)
		return abox_error_setx(err, EINVAL, "fork: unknown flags 0x%x", flags);
	if ((flags & ABOX_FORK_MEMORY) && sb->net_policy)
		return local_net_no_checkpoint("fork --memory", sb, err);
	if ((flags & ABOX_FORK_MEMORY) && sb->id_base)
		return local_userns_no_checkpoint("fork --memory", sb, err);
	if (count < 1 || count > FORK_MAX)
		return abox_error_setx(err, EINVAL, "fork: count %u is not between 1 and %d", count, FORK_MAX);
	for (unsigned i = 0; i < count; i++)
		forks[i] = NULL;
	struct sb_state st = { 0 };
	int r = state_read(sb->ctx->state_dir, sb->id, &st, err);
	if (r < 0)
		return abox_error_prefix(err, "fork");
	abox_snapshot_info snap = { .version = ABOX_SNAPSHOT_INFO_VERSION };
	r = flags & ABOX_FORK_MEMORY ? backend_snapshot_memory(sb, NULL, SNAP_AUTO_REMOVE, &snap, err)
				     : backend_snapshot(sb, NULL, SNAP_AUTO_REMOVE, false, &snap, err);
	if (r < 0) {
		sb_state_free(&st);
		return abox_error_prefix(err, "fork");
	}
	abox_sandbox_opts o;
	char **meta;
	if ((r = backend_opts_from_record(&st, &o, &meta, err)) < 0) {
		sb_state_free(&st);
		return abox_error_prefix(err, "fork");
	}
	o.snapshot = snap.id;
	if (timeout_ms)
		o.timeout_ms = timeout_ms;
	else if (o.timeout_ms && o.timeout_ms < 1000)
		o.timeout_ms = 1000; /* a moment to use the fork at all */
	int made = 0;
	for (unsigned i = 0; i < count; i++) {
		abox_error e = ABOX_ERROR_INIT;
		/* the source's egress policy, each fork in a slot of its own */
		if (backend_create_net(sb->ctx, &o, NULL, st.net_policy, &forks[i], &e) < 0) {
			forks[i] = NULL;
			if (errs)
				errs[i] = e;
			continue;
		}
		if (errs)
			errs[i] = (abox_error)ABOX_ERROR_INIT;
		made++;
	}
	snap_settle(sb->ctx->state_dir, snap.id);
	strv_free(meta);
	sb_state_free(&st);
	backend_log(sb->ctx, ABOX_LOG_DEBUG, "fork %s: %d of %u made from snapshot %s", sb->id, made, count,
		    snap.id);
	return made;
}
