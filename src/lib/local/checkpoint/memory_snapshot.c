/* local/checkpoint/memory_snapshot.c — snapshots with memory, and sandboxes restored
 * from them (snapshot --memory, fork --memory, create --from such a
 * snapshot).
 *
 * A memory snapshot is a files snapshot plus a checkpoint of the processes
 * taken with the tree frozen at the same moment (a checkpoint session,
 * session.c), kept beside the layer (STATE/snapshots/ID/memory). The
 * source runs on (the dump leaves it
 * running; init is re-armed). A sandbox made from it gets its own id,
 * cgroups, writable layer, namespaces and limits, and the processes of
 * the snapshot, restored by the checkpoint hook: a counter running in the
 * source goes on counting in every copy, each on its own. The restored
 * kernel state is the source's: the hostname (UTS namespace) and the
 * seccomp policy stay those of the source. */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "local/checkpoint/checkpoint.h"
#include "layer/snapshot.h"
#include "store/store.h"
#include "versioned.h"

int backend_snapshot_memory(abox_sandbox *sb, const char *name, uint32_t how, abox_snapshot_info *out,
			    abox_error *err)
{
	abox_ctx *ctx = sb->ctx;
	if (sb->flags & ABOX_SANDBOX_EPHEMERAL)
		return abox_error_setx(err, EINVAL, "snapshot: sandbox %s is ephemeral", sb->id);
	if (sb->cold)
		return abox_error_setx(err, EAGAIN, "snapshot --memory: sandbox %s has no processes (paused to disk or "
				       "without memory): resume it first", sb->id);
	_cleanup_free_ char *hook = checkpointer_find(ctx);
	if (!hook)
		return abox_error_setx(err, EOPNOTSUPP,
				       "snapshot --memory %s: no checkpointer on this machine (scripts/criu-setup.sh "
				       "installs CRIU; `abox doctor` tells)", sb->id);
	struct checkpoint_session cs;
	int r = checkpoint_session_open(&cs, sb, "snapshot", err);
	if (r < 0)
		return r;
	if (cs.st.cold || sb->dead || state_status(&cs.st) == SB_DEAD) {
		r = abox_error_setx(err, ESRCH, "snapshot --memory: sandbox %s has no running processes", sb->id);
		goto out;
	}
	abox_snapshot_info snap = { .version = ABOX_SNAPSHOT_INFO_VERSION };
	if ((r = checkpoint_session_start(&cs, name, how, &snap, err)) < 0)
		goto back;
	char dir[4200];
	safe_snprintf(dir, sizeof(dir), "%s/snapshots/%s/memory", ctx->state_dir, snap.id);
	if ((r = checkpoint_dump(sb, hook, dir, &cs.tmpl, cs.token, DUMP_RUNNING, err)) < 0 ||
	    (r = snap_set_memory(ctx->state_dir, snap.id, cs.token, cs.st.template_root, err)) < 0) {
		/* a files-only snapshot was not asked for: take it back */
		(void)rm_rf_at(AT_FDCWD, dir, 0);
		abox_error e2 = ABOX_ERROR_INIT;
		(void)snap_remove(ctx->state_dir, snap.id, &e2);
		goto back;
	}
	if (out) {
		snap.memory = true;
		versioned_copy_out(VERSIONED_SNAPSHOT_INFO, out, &snap);
	}
	backend_log(ctx, ABOX_LOG_DEBUG, "snapshot %s of %s with memory", snap.id, sb->id);
back:
	/* the source runs on, as it was */
	checkpoint_session_restore(&cs);
out:
	checkpoint_session_close(&cs);
	return r < 0 ? abox_error_prefix(err, "snapshot") : 0;
}

int backend_create_restored(abox_ctx *ctx, const abox_sandbox_opts *o, const struct snap_record *snap,
			    const char *fixed_id, abox_sandbox **out, abox_error *err)
{
	_cleanup_free_ char *hook = checkpointer_find(ctx);
	if (!hook)
		return abox_error_setx(err, EOPNOTSUPP,
				       "create: snapshot %s holds processes, and there is no checkpointer on this "
				       "machine to restore them (scripts/criu-setup.sh)", snap->id);
	if (o->template_name && strcmp(o->template_name, snap->template_name) != 0)
		return abox_error_setx(err, EINVAL, "create: snapshot %s stands on template '%s', not '%s'", snap->id,
				       snap->template_name, o->template_name);
	char id[ABOX_ID_LEN + 1];
	int r;
	if (fixed_id)
		safe_snprintf(id, sizeof(id), "%s", fixed_id);
	else if ((r = random_id(id, 20)) < 0)
		return abox_error_set(err, -r, "create: random id");

	/* the chain the new sandbox stands on, as a create --from records it */
	struct stack stk = { .lock = -1 };
	if ((r = stack_open(ctx, snap->id, &stk, err)) < 0) {
		stack_free(&stk);
		return abox_error_prefix(err, "create");
	}
	char images[4200], work[4200];
	safe_snprintf(images, sizeof(images), "%s/snapshots/%s/memory", ctx->state_dir, snap->id);
	safe_snprintf(work, sizeof(work), "%s/sandboxes", ctx->state_dir);
	(void)mkdir(work, 0700);
	safe_snprintf(work, sizeof(work), "%s/sandboxes/%s", ctx->state_dir, id);
	if (mkdir(work, 0700) < 0 && errno != EEXIST) {
		r = abox_error_set(err, errno, "create: mkdir '%s'", work);
		stack_free(&stk);
		return r;
	}
	char *first[2] = { (char *)snap->id, NULL };
	struct sb_state st = {
		.template_name = snap->template_name,
		.template_root = snap->template_root,
		.snapshots = first,
		.memory_bytes = o->memory_bytes ? o->memory_bytes : DEFAULT_MEMORY,
		.disk_bytes = o->disk_bytes ? o->disk_bytes : DEFAULT_DISK,
		.pids = o->pids ? o->pids : DEFAULT_PIDS,
		.cpu_millis = o->cpu_millis ? o->cpu_millis : DEFAULT_CPU,
		.tmpfs_layer = !backend_layer_on_disk(o->flags),
	};
	memcpy(st.id, id, sizeof(st.id));
	struct restored rs = { 0 };
	/* held while the restore stacks the chain and until the record names it */
	r = checkpoint_restore(ctx, &st, hook, images, work, id, snap->memory_token ? snap->memory_token : "", &rs,
			       err);
	if (r < 0) {
		(void)rm_rf_at(AT_FDCWD, work, 0);
		stack_free(&stk);
		return abox_error_prefix(err, "create from %s", snap->id);
	}
	st.pid = rs.pid;
	st.pid_start = rs.pid_start;
	st.created_ms = clock_wall_ms();
	st.deadline_ms = o->timeout_ms ? st.created_ms + o->timeout_ms : 0;
	st.snapshots = stk.ids;
	st.cgroups = rs.cgroups;
	st.env = (char **)o->env;
	_cleanup_free_ char *policy_abs = o->seccomp_policy ? realpath(o->seccomp_policy, NULL) : NULL;
	st.seccomp_policy = policy_abs ? policy_abs : (char *)o->seccomp_policy;
	for (size_t i = 0; o->metadata && o->metadata[i] && st.nmeta < STATE_MAX_META; i++) {
		const char *eq = strchr(o->metadata[i], '=');
		if (!eq || eq == o->metadata[i])
			continue;
		st.meta_keys[st.nmeta] = strndup(o->metadata[i], (size_t)(eq - o->metadata[i]));
		st.meta_values[st.nmeta] = strdup(eq + 1);
		st.nmeta++;
	}
	r = state_write(ctx->state_dir, &st, err);
	for (unsigned i = 0; i < st.nmeta; i++) {
		free(st.meta_keys[i]);
		free(st.meta_values[i]);
	}
	stack_free(&stk);
	free(rs.cgroups);
	abox_sandbox *sb = NULL;
	if (r >= 0 && (r = local_connect(ctx, id, &sb, err)) >= 0 && o->timeout_ms)
		r = backend_init_timeout(sb, o->timeout_ms, "create", err);
	if (r < 0) {
		if (sb) {
			(void)local_kill(sb, NULL);
		} else {
			/* not reachable through a record: its cgroups end it */
			struct cg_sandbox *cg = NULL;
			if (cgroup_open_existing(&ctx->cg, id, &cg, NULL) == 0) {
				(void)cgroup_kill(cg, NULL);
				(void)cgroup_destroy(cg, NULL);
			}
			char rd[4200];
			safe_snprintf(rd, sizeof(rd), "%s/%s", ctx->runtime_dir, id);
			(void)store_rundir_remove(rd, NULL);
		}
		local_free(sb);
		(void)state_remove(ctx->state_dir, id);
		return abox_error_prefix(err, "create from %s", snap->id);
	}
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: restored from snapshot %s (init pid %d)", id, snap->id,
		    (int)rs.pid);
	*out = sb;
	return 0;
}
